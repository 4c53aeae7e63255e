"""``tf.keras.optimizers`` as TF's graph-mode Keras has them (the ``OptimizerV2`` family):
``SGD``, ``Adam``, ``RMSprop`` and ``Adagrad``, with Keras's update rules, defaults and slot
initial values, which differ from ``tf.train``'s:

* SGD with momentum: ``m = momentum * m - lr * g; var += m`` (Nesterov:
  ``var += momentum * m - lr * g``);
* Adam: ``epsilon=1e-7``, the step ``t`` is ``iterations + 1`` (no ``beta1_power`` variables);
* RMSprop: ``rms`` starts at zero and, without momentum, ``var -= lr * g / (sqrt(rms) + eps)``
  (epsilon outside the root); with momentum Keras runs tf.train's kernel (epsilon inside);
* Adagrad: ``var -= lr * g / (sqrt(accum) + eps)``, ``accum`` starting at 0.1.

They are ``tf.train.Optimizer`` subclasses: ``minimize(loss, var_list)``,
``apply_gradients`` and Keras's ``get_updates(loss, params)`` all work, and each applied step
adds one to ``iterations``. Sparse gradients are applied as dense ones (zeros where there is no
row), which is Keras's update for all but RMSprop with momentum (refused).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     step = tf.keras.optimizers.SGD(0.1, momentum=0.9).minimize(w * w, var_list=[w])
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         print([sess.run([step, w])[1] for _ in range(2)])
[array([0.8], dtype=float32), array([0.46], dtype=float32)]
"""

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import control_flow_ops, math_ops, state_ops, training_ops
from zps.ops.gradients_impl import gradients
from zps.ops.variables import Variable
from zps.train.optimizer import Optimizer as _TrainOptimizer
from zps.train.optimizer import cast_to


class Optimizer(_TrainOptimizer):
    """The base of Keras's optimizers: hyperparameters by name, the ``iterations`` counter and
    ``get_updates``; a subclass sets ``_apply_dense(grad, var)`` with ``self._coef(name, var)``."""

    def __init__(self, name, learning_rate, kwargs, **hyper):
        lr = kwargs.pop("lr", None)
        if lr is not None:
            learning_rate = lr
        for unsupported in ("decay", "clipnorm", "clipvalue", "global_clipnorm"):
            if kwargs.pop(unsupported, None):
                raise NotImplementedError(
                    "zps's tf.keras.optimizers.%s does not support `%s`: clip the gradients "
                    "yourself (compute_gradients, then apply_gradients) or use a "
                    "tf.train.*_decay learning rate" % (type(self).__name__, unsupported))
        for key in kwargs:
            raise TypeError("%s got an unexpected keyword argument %r" % (type(self).__name__, key))
        super().__init__(False, name)
        self._hyper = dict(learning_rate=learning_rate, **hyper)
        self._hyper_t = {}
        self._iterations = {}   # graph -> the int64 step counter

    def __getattr__(self, name):   # opt.learning_rate, opt.lr, opt.beta_1...: the values given
        hyper = self.__dict__.get("_hyper", {})
        name = "learning_rate" if name == "lr" else name
        if name in hyper:
            return hyper[name]
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def get_config(self):
        """The optimizer's name and hyperparameters."""
        return dict(name=self._name, **self._hyper)

    @property
    def iterations(self):
        """The number of steps applied (an int64 variable of the default graph)."""
        graph = get_default_graph()
        if graph not in self._iterations:
            with graph.control_dependencies(None), graph.name_scope(None):
                self._iterations[graph] = Variable(0, dtype=dtypes.int64, trainable=False,
                                                   name=self._name + "_iter")
        return self._iterations[graph]

    def get_gradients(self, loss, params):
        """The gradients of ``loss`` for ``params``; an error names the first without one."""
        grads = gradients(loss, params)
        for g, p in zip(grads, params):
            if g is None:
                raise ValueError("Variable %s has `None` for gradient: the loss does not depend "
                                 "on it. Leave it out of the list of parameters." % p.name)
        return grads

    def get_updates(self, loss, params):
        """Keras's graph-mode training step: ``[apply_gradients(get_gradients(loss, params))]``."""
        return [self.apply_gradients(list(zip(self.get_gradients(loss, params), params)))]

    def _create_slots(self, var_list):
        _ = self.iterations

    def _prepare(self):
        self._hyper_t = {k: convert_to_tensor(self._call_if_callable(v), name=k)
                         for k, v in self._hyper.items() if not isinstance(v, bool)}

    def _coef(self, name, var):
        return cast_to(self._hyper_t[name], var)

    def _apply_sparse(self, grad, var):
        return self._apply_dense(convert_to_tensor(grad), var)

    def _finish(self, update_ops, name_scope):
        graph = get_default_graph()
        with graph.control_dependencies(update_ops):
            step = state_ops.assign_add(self.iterations, 1).op
        return control_flow_ops.group(*update_ops + [step], name=name_scope)


class SGD(Optimizer):
    """Keras's gradient descent, with momentum (``m = momentum * m - lr * g; var += m``) and
    Nesterov's variant (``var += momentum * m - lr * g``)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        if momentum < 0 or momentum > 1:
            raise ValueError("`momentum` must be between [0, 1], got %r" % (momentum,))
        super().__init__(name, learning_rate, kwargs, momentum=momentum, nesterov=nesterov)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        if self._hyper["momentum"]:
            for v in var_list:
                self._zeros_slot(v, "momentum", self._name)

    def _apply_dense(self, grad, var):
        lr = self._coef("learning_rate", var)
        if not self._hyper["momentum"]:
            return training_ops.apply_gradient_descent(var, lr, grad).op
        momentum = self._coef("momentum", var)
        slot = self.get_slot(var, "momentum")
        m = state_ops.assign(slot, slot * momentum - grad * lr)
        step = m * momentum - grad * lr if self._hyper["nesterov"] else m
        return state_ops.assign_add(var, step).op


class Adam(Optimizer):
    """Keras's Adam (``amsgrad=False``): tf.train's update with ``beta^t`` from ``iterations``."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        if amsgrad:
            raise NotImplementedError("zps's tf.keras.optimizers.Adam does not implement "
                                      "amsgrad=True: use amsgrad=False")
        super().__init__(name, learning_rate, kwargs, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _apply_dense(self, grad, var):
        # TF's ApplyAdam kernel, op by op (zps's kernel rounds alpha * m / d another way).
        beta_1, beta_2 = self._coef("beta_1", var), self._coef("beta_2", var)
        step = math_ops.cast(self.iterations + 1, dtypes.float64)

        def power(beta):   # TF's float32 pow rounds correctly; numpy's may not: go by float64
            return math_ops.cast(math_ops.pow(math_ops.cast(beta, dtypes.float64), step),
                                 var.dtype.base_dtype)
        alpha = self._coef("learning_rate", var) * math_ops.sqrt(
            1.0 - power(beta_2)) / (1.0 - power(beta_1))
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign_add(m, (grad - m) * (1.0 - beta_1))
        v_t = state_ops.assign_add(v, (math_ops.square(grad) - v) * (1.0 - beta_2))
        return state_ops.assign_sub(var, (m_t * alpha) / (math_ops.sqrt(v_t) +
                                                          self._coef("epsilon", var))).op


class RMSprop(Optimizer):
    """Keras's RMSprop: ``rms`` from zero, epsilon outside the root (inside with momentum)."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        super().__init__(name, learning_rate, kwargs, rho=rho, momentum=momentum,
                         epsilon=epsilon, centered=centered)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._zeros_slot(v, "rms", self._name)
            if self._hyper["momentum"]:
                self._zeros_slot(v, "momentum", self._name)
            if self._hyper["centered"]:
                self._zeros_slot(v, "mg", self._name)

    def _apply_dense(self, grad, var):
        lr, rho = self._coef("learning_rate", var), self._coef("rho", var)
        epsilon, rms = self._coef("epsilon", var), self.get_slot(var, "rms")
        if self._hyper["momentum"]:   # Keras runs tf.train's kernel here
            slots = [rms, self.get_slot(var, "momentum")]
            apply = training_ops.apply_rms_prop
            if self._hyper["centered"]:
                slots.insert(0, self.get_slot(var, "mg"))
                apply = training_ops.apply_centered_rms_prop
            return apply(var, *slots, lr, rho, self._coef("momentum", var), epsilon, grad).op
        one_minus_rho = 1.0 - rho
        denominator = rms_t = state_ops.assign(rms, rho * rms + one_minus_rho *
                                               math_ops.square(grad))
        if self._hyper["centered"]:
            mg = self.get_slot(var, "mg")
            mg_t = state_ops.assign(mg, rho * mg + one_minus_rho * grad)
            denominator = rms_t - math_ops.square(mg_t)
        return state_ops.assign(var, var - lr * grad /
                                (math_ops.sqrt(denominator) + epsilon)).op

    def _apply_sparse(self, grad, var):
        if self._hyper["momentum"]:
            raise NotImplementedError("zps's tf.keras.optimizers.RMSprop does not apply sparse "
                                      "gradients (of %s) with momentum: use momentum=0"
                                      % var.op.name)
        return super()._apply_sparse(grad, var)


class Adagrad(Optimizer):
    """Keras's Adagrad: ``accum += g^2; var -= lr * g / (sqrt(accum) + epsilon)``."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        if initial_accumulator_value < 0.0:
            raise ValueError("initial_accumulator_value must be non-negative: %s"
                             % initial_accumulator_value)
        super().__init__(name, learning_rate, kwargs, epsilon=epsilon)
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _apply_dense(self, grad, var):
        accum = state_ops.assign_add(self.get_slot(var, "accumulator"), math_ops.square(grad))
        update = grad * self._coef("learning_rate", var) / (
            math_ops.sqrt(accum) + self._coef("epsilon", var))
        return state_ops.assign_sub(var, update).op


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier):
    """The optimizer ``identifier`` names (``"adam"``, ``"sgd"``, ``"rmsprop"``, ``"adagrad"``:
    Keras's defaults), or ``identifier`` itself when it is an optimizer (Keras's or tf.train's)."""
    if isinstance(identifier, _TrainOptimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError("Could not interpret optimizer identifier: %r (give an optimizer or one "
                     "of %s)" % (identifier, ", ".join(sorted(_BY_NAME))))


__all__ = ["SGD", "Adagrad", "Adam", "Optimizer", "RMSprop", "get"]
