"""``tf.keras.optimizers`` as TF's graph-mode Keras has them (the ``OptimizerV2`` family):
``SGD``, ``Adam``, ``Adamax``, ``Nadam``, ``RMSprop``, ``Adagrad``, ``Adadelta`` and ``Ftrl``,
with Keras's update rules, defaults and slot initial values, which differ from ``tf.train``'s:

* SGD with momentum: ``m = momentum * m - lr * g; var += m`` (Nesterov:
  ``var += momentum * m - lr * g``);
* Adam: ``epsilon=1e-7``, the step ``t`` is ``iterations + 1`` (no ``beta1_power`` variables);
  ``amsgrad`` divides by the root of the largest ``v`` so far;
* RMSprop: ``rms`` starts at zero and, without momentum, ``var -= lr * g / (sqrt(rms) + eps)``
  (epsilon outside the root); with momentum Keras runs tf.train's kernel (epsilon inside);
* Adagrad: ``var -= lr * g / (sqrt(accum) + eps)``, ``accum`` starting at 0.1;
* Nadam: Keras's momentum schedule (``schedule_decay`` 0.004).

Every optimizer takes ``clipvalue``/``clipnorm`` (each gradient clipped when it is computed:
``get_gradients``, ``compute_gradients``, ``minimize``), ``decay`` (``lr / (1 + decay *
iterations)``) and a ``learning_rate`` that may be a ``tf.keras.optimizers.schedules`` schedule.
Sparse gradients (IndexedSlices) get Keras's sparse updates (Adam, Nadam and RMSprop decay every
row's slots, the gradient goes to its rows).

They are ``tf.train.Optimizer`` subclasses: ``minimize(loss, var_list)``,
``apply_gradients`` and Keras's ``get_updates(loss, params)`` all work, and each applied step
adds one to ``iterations``.

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
from zps.framework import graph as framework
from zps.keras import backend
from zps.keras import optimizer_schedules as schedules
from zps.ops import (
    array_ops,
    clip_ops,
    control_flow_ops,
    gradients_impl,
    math_ops,
    state_ops,
    training_ops,
    variables,
)
from zps.train.optimizer import Optimizer as _TrainOptimizer
from zps.train.optimizer import cast_to as _cast_to


class Optimizer(_TrainOptimizer):
    """The base of Keras's optimizers: hyperparameters by name, the ``iterations`` counter,
    gradient clipping, ``decay`` and ``get_updates``; a subclass sets ``_apply_dense(grad,
    var)`` and ``_apply_sparse(grad, var)`` with ``self._coef(name, var)``."""

    def __init__(self, name, learning_rate, kwargs, **hyper):
        lr = kwargs.pop("lr", None)
        if lr is not None:
            learning_rate = lr
        self.clipnorm, self.clipvalue = kwargs.pop("clipnorm", None), kwargs.pop("clipvalue", None)
        self._initial_decay = float(kwargs.pop("decay", 0.0))
        for key in kwargs:
            raise TypeError("%s got an unexpected keyword argument %r (Keras's optimizers take "
                            "lr, decay, clipnorm and clipvalue)" % (type(self).__name__, key))
        for key, value in (("clipnorm", self.clipnorm), ("clipvalue", self.clipvalue),
                           ("decay", self._initial_decay)):
            if value is not None and value < 0:
                raise ValueError("Expected %s >= 0, received: %s" % (key, value))
        super().__init__(False, name)
        self._hyper = dict(learning_rate=learning_rate, **hyper)
        self._hyper_t = {}
        self._iterations = {}   # graph -> the int64 step counter

    def __getattr__(self, name):   # opt.learning_rate, opt.lr, opt.beta_1...: the values given
        hyper = self.__dict__.get("_hyper", {})
        name = "learning_rate" if name == "lr" else name
        if name in hyper:
            return hyper[name]
        if name == "decay" and "_initial_decay" in self.__dict__:
            return self._initial_decay
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def get_config(self):
        """The optimizer's name and hyperparameters (a schedule as its ``serialize`` dict, a
        variable learning rate as its value)."""
        config = dict(name=self._name, **self._hyper)
        lr = config["learning_rate"]
        if isinstance(lr, schedules.LearningRateSchedule):
            config["learning_rate"] = schedules.serialize(lr)
        elif hasattr(lr, "op"):   # a variable (compile makes one): its value in Keras's session
            config["learning_rate"] = float(backend.get_value(lr))
        config["decay"] = self._initial_decay
        for key in ("clipnorm", "clipvalue"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The optimizer ``get_config`` describes."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"],
                                                            custom_objects)
        return cls(**config)

    @property
    def iterations(self):
        """The number of steps applied (an int64 variable of the default graph)."""
        graph = framework.get_default_graph()
        if graph not in self._iterations:
            with graph.control_dependencies(None), graph.name_scope(None):
                self._iterations[graph] = variables.Variable(0, dtype=dtypes.int64, trainable=False,
                                                   name=self._name + "_iter")
        return self._iterations[graph]

    def get_gradients(self, loss, params):
        """The gradients of ``loss`` for ``params``, clipped (``clipvalue``, then
        ``clipnorm``); an error names the first parameter without one."""
        grads = gradients_impl.gradients(loss, params)
        for g, p in zip(grads, params):
            if g is None:
                raise ValueError("Variable %s has `None` for gradient: the loss does not depend "
                                 "on it. Leave it out of the list of parameters." % p.name)
        return self._clip(grads)

    def compute_gradients(self, loss, var_list=None, *args, **kwargs):
        """``tf.train.Optimizer.compute_gradients``, the gradients clipped as
        ``get_gradients``'s (as TF 1.15's OptimizerV2 clips them when it computes them;
        ``apply_gradients`` applies what it is given, each step adding one to
        ``iterations``)."""
        grads_and_vars = super().compute_gradients(loss, var_list, *args, **kwargs)
        grads = self._clip([g for g, _ in grads_and_vars])
        return [(g, v) for g, (_, v) in zip(grads, grads_and_vars)]

    def get_updates(self, loss, params):
        """Keras's graph-mode training step: ``[apply_gradients(get_gradients(loss, params))]``."""
        return [self.apply_gradients(list(zip(self.get_gradients(loss, params), params)))]

    def _clip(self, grads):
        if self.clipvalue is not None:
            grads = [None if g is None else clip_ops.clip_by_value(g, -self.clipvalue,
                                                                   self.clipvalue)
                     for g in grads]
        if self.clipnorm is not None:
            grads = [None if g is None else clip_ops.clip_by_norm(g, self.clipnorm)
                     for g in grads]
        return grads

    def _create_slots(self, var_list):
        _ = self.iterations

    def _prepare(self):
        self._hyper_t = {k: framework.convert_to_tensor(self._call_if_callable(v), name=k)
                         for k, v in self._hyper.items()
                         if not isinstance(v, bool | schedules.LearningRateSchedule)}

    def _coef(self, name, var):
        if name == "learning_rate":
            return self._decayed_lr(var.dtype.base_dtype)
        return _cast_to(self._hyper_t[name], var)

    def _decayed_lr(self, dtype):
        """The learning rate of this step: the schedule's value at ``iterations`` and/or
        ``lr / (1 + decay * iterations)``."""
        lr = self._hyper["learning_rate"]
        if isinstance(lr, schedules.LearningRateSchedule):
            lr_t = math_ops.cast(lr(math_ops.cast(self.iterations, dtype)), dtype)
        else:
            lr_t = math_ops.cast(self._hyper_t["learning_rate"], dtype)
        if self._initial_decay > 0.0:
            local_step = math_ops.cast(self.iterations, dtype)
            lr_t = lr_t / (1.0 + math_ops.cast(self._initial_decay, dtype) * local_step)
        return lr_t

    def _step(self, dtype, offset=1):
        return math_ops.cast(self.iterations + offset, dtype)

    def _finish(self, update_ops, name_scope):
        graph = framework.get_default_graph()
        with graph.control_dependencies(update_ops):
            step = state_ops.assign_add(self.iterations, 1).op
        return control_flow_ops.group(*update_ops + [step], name=name_scope)


_power = schedules._pow   # beta ** step rounded once, as TF's float32 pow


def _decay_then_add(slot, factor, indices, values):
    """Keras's sparse slot update: ``slot *= factor`` on every row, then ``values`` added to the
    rows ``indices``; the slot's new value."""
    decayed = state_ops.assign(slot, slot * factor)
    with framework.get_default_graph().control_dependencies([decayed]):
        return state_ops.scatter_add(slot, indices, values)


def _rows(slot, indices, values):
    """Write ``values`` to the rows ``indices`` of ``slot`` (a slot's new rows)."""
    return state_ops.scatter_update(slot, indices, values)


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

    def _momentum_step(self, slot, grad, var):
        lr, momentum = self._coef("learning_rate", var), self._coef("momentum", var)
        m = slot * momentum - grad * lr
        return m, (m * momentum - grad * lr if self._hyper["nesterov"] else m)

    def _apply_dense(self, grad, var):
        if not self._hyper["momentum"]:
            return training_ops.apply_gradient_descent(var, self._coef("learning_rate", var),
                                                       grad).op
        slot = self.get_slot(var, "momentum")
        m, step = self._momentum_step(slot, grad, var)
        with framework.get_default_graph().control_dependencies([state_ops.assign(slot, m)]):
            return state_ops.assign_add(var, step).op

    def _apply_sparse_duplicate_indices(self, grad, var):
        if self._hyper["momentum"]:
            return super()._apply_sparse_duplicate_indices(grad, var)
        # Keras adds each row's -lr * g without summing repeated rows first.
        return state_ops.scatter_add(var, grad.indices,
                                     -grad.values * self._coef("learning_rate", var)).op

    def _apply_sparse(self, grad, var):   # unique indices, with momentum
        slot = self.get_slot(var, "momentum")
        m, step = self._momentum_step(array_ops.gather(slot, grad.indices), grad.values, var)
        with framework.get_default_graph().control_dependencies([_rows(slot, grad.indices, m)]):
            return state_ops.scatter_add(var, grad.indices, step).op


class Adam(Optimizer):
    """Keras's Adam: tf.train's update with ``beta^t`` from ``iterations``; ``amsgrad`` divides
    by ``sqrt(vhat)``, ``vhat`` the largest ``v`` so far."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        super().__init__(name, learning_rate, kwargs, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)
            if self._hyper["amsgrad"]:
                self._zeros_slot(v, "vhat", self._name)

    def _powers(self, var):
        step = self._step(dtypes.float64)
        return (_power(self._coef("beta_1", var), step),
                _power(self._coef("beta_2", var), step))

    def _denominator(self, v_t, var):
        if self._hyper["amsgrad"]:
            vhat = self.get_slot(var, "vhat")
            v_t = state_ops.assign(vhat, math_ops.maximum(vhat, v_t))
        return math_ops.sqrt(v_t) + self._coef("epsilon", var)

    def _apply_dense(self, grad, var):
        # TF's ApplyAdam (ApplyAdamWithAmsgrad) kernel, op by op.
        beta_1, beta_2 = self._coef("beta_1", var), self._coef("beta_2", var)
        beta_1_power, beta_2_power = self._powers(var)
        alpha = self._coef("learning_rate", var) * math_ops.sqrt(1.0 - beta_2_power) / (
            1.0 - beta_1_power)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign_add(m, (grad - m) * (1.0 - beta_1))
        v_t = state_ops.assign_add(v, (math_ops.square(grad) - v) * (1.0 - beta_2))
        return state_ops.assign_sub(var, (m_t * alpha) / self._denominator(v_t, var)).op

    def _apply_sparse(self, grad, var):
        beta_1, beta_2 = self._coef("beta_1", var), self._coef("beta_2", var)
        beta_1_power, beta_2_power = self._powers(var)
        lr = self._coef("learning_rate", var) * (math_ops.sqrt(1 - beta_2_power) /
                                                 (1 - beta_1_power))
        g, indices = grad.values, grad.indices
        m_t = _decay_then_add(self.get_slot(var, "m"), beta_1, indices, g * (1 - beta_1))
        v_t = _decay_then_add(self.get_slot(var, "v"), beta_2, indices, (g * g) * (1 - beta_2))
        return state_ops.assign_sub(var, lr * m_t / self._denominator(v_t, var)).op


class Adamax(Optimizer):
    """Keras's Adamax: ``m = b1 m + (1 - b1) g; v = max(b2 v, |g|);
    var -= lr / (1 - b1^t) * m / (v + eps)``."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        super().__init__(name, learning_rate, kwargs, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _apply_dense(self, grad, var):
        # TF's ApplyAdaMax kernel, op by op.
        beta_1, beta_2 = self._coef("beta_1", var), self._coef("beta_2", var)
        beta_1_power = _power(beta_1, self._step(dtypes.float64))
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign_add(m, (grad - m) * (1.0 - beta_1))
        v_t = state_ops.assign(v, math_ops.maximum(beta_2 * v, math_ops.abs(grad)))
        lr = self._coef("learning_rate", var) / (1.0 - beta_1_power)
        return state_ops.assign_sub(var, lr * (m_t / (v_t + self._coef("epsilon", var)))).op

    def _apply_sparse(self, grad, var):
        beta_1, beta_2 = self._coef("beta_1", var), self._coef("beta_2", var)
        beta_1_power = _power(beta_1, self._step(dtypes.float64))
        neg_scaled_lr = -self._coef("learning_rate", var) / (1 - beta_1_power)
        g, indices = grad.values, grad.indices
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_slice = array_ops.gather(m, indices) * beta_1 + g * (1 - beta_1)
        v_slice = math_ops.maximum(array_ops.gather(v, indices) * beta_2, math_ops.abs(g))
        step = neg_scaled_lr * (m_slice / (v_slice + self._coef("epsilon", var)))
        with framework.get_default_graph().control_dependencies([_rows(m, indices, m_slice),
                                                        _rows(v, indices, v_slice)]):
            return state_ops.scatter_add(var, indices, step).op


class Nadam(Optimizer):
    """Keras's Nadam (Adam with Nesterov momentum and Keras's momentum schedule
    ``beta_1 * (1 - 0.5 * 0.96 ** (schedule_decay * t))``); ``decay`` is that schedule's decay
    (0.004 by default), not the learning rate's."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", **kwargs):
        kwargs["decay"] = kwargs.pop("schedule_decay", kwargs.get("decay", 0.004))
        if isinstance(kwargs.get("lr", learning_rate), schedules.LearningRateSchedule):
            raise ValueError("The Nadam optimizer does not support "
                             "tf.keras.optimizers.LearningRateSchedules as the learning rate.")
        super().__init__(name, learning_rate, kwargs, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon)
        self._coefs = {}

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        self._create_non_slot_variable(1.0, "momentum_cache", var_list[0])
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        super()._prepare()
        self._coefs = {}

    def _coefficients(self, var):
        # Once per step and dtype (Keras's apply_state): the cache is multiplied once.
        dtype = var.dtype.base_dtype
        if dtype not in self._coefs:
            beta_1, beta_2 = self._coef("beta_1", var), self._coef("beta_2", var)
            decay_base = math_ops.cast(0.96, dtype)
            m_t = beta_1 * (1.0 - 0.5 * _power(decay_base, self._initial_decay *
                                                self._step(dtype)))
            m_t_1 = beta_1 * (1.0 - 0.5 * _power(decay_base, self._initial_decay *
                                                  self._step(dtype, 2)))
            cache = self._get_non_slot_variable("momentum_cache", var.graph)
            m_schedule_new = math_ops.cast(cache, dtype) * m_t
            if dtype == cache.dtype.base_dtype:
                m_schedule_new = array_ops.identity(state_ops.assign(cache, m_schedule_new))
            self._coefs[dtype] = dict(
                lr_t=math_ops.cast(self._hyper_t["learning_rate"], dtype), m_t_1=m_t_1,
                one_minus_m_t=1.0 - m_t, beta_1=beta_1, beta_2=beta_2,
                one_minus_m_schedule_new=1.0 - m_schedule_new,
                one_minus_m_schedule_next=1.0 - m_schedule_new * m_t_1,
                v_t_prime_denominator=1.0 - _power(beta_2, self._step(dtype)))
        return self._coefs[dtype]

    def _apply_dense(self, grad, var):
        c, epsilon = self._coefficients(var), self._coef("epsilon", var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / c["one_minus_m_schedule_new"]
        m_t = state_ops.assign(m, c["beta_1"] * m + (1 - c["beta_1"]) * grad)
        m_t_prime = m_t / c["one_minus_m_schedule_next"]
        v_t = state_ops.assign(v, c["beta_2"] * v + (1 - c["beta_2"]) * math_ops.square(grad))
        v_t_prime = v_t / c["v_t_prime_denominator"]
        m_t_bar = c["one_minus_m_t"] * g_prime + c["m_t_1"] * m_t_prime
        return state_ops.assign(var, var - c["lr_t"] * m_t_bar /
                                (math_ops.sqrt(v_t_prime) + epsilon)).op

    def _apply_sparse(self, grad, var):
        c, epsilon = self._coefficients(var), self._coef("epsilon", var)
        g, indices = grad.values, grad.indices
        g_prime = g / c["one_minus_m_schedule_new"]
        m_t = _decay_then_add(self.get_slot(var, "m"), c["beta_1"], indices,
                              g * (1 - c["beta_1"]))
        m_t_prime = array_ops.gather(m_t, indices) / c["one_minus_m_schedule_next"]
        m_t_bar = c["one_minus_m_t"] * g_prime + c["m_t_1"] * m_t_prime
        v_t = _decay_then_add(self.get_slot(var, "v"), c["beta_2"], indices,
                              (g * g) * (1 - c["beta_2"]))
        v_t_prime = array_ops.gather(v_t, indices) / c["v_t_prime_denominator"]
        return state_ops.scatter_add(var, indices, -c["lr_t"] * m_t_bar /
                                     (math_ops.sqrt(v_t_prime) + epsilon)).op


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

    def _kernel(self, grad, var, *indices):   # with momentum Keras runs tf.train's kernel
        slots = [self.get_slot(var, "rms"), self.get_slot(var, "momentum")]
        name = "rms_prop"
        if self._hyper["centered"]:
            slots.insert(0, self.get_slot(var, "mg"))
            name = "centered_rms_prop"
        apply = getattr(training_ops, ("sparse_apply_" if indices else "apply_") + name)
        return apply(var, *slots, self._coef("learning_rate", var), self._coef("rho", var),
                     self._coef("momentum", var), self._coef("epsilon", var), grad, *indices).op

    def _apply_dense(self, grad, var):
        if self._hyper["momentum"]:
            return self._kernel(grad, var)
        lr, rho = self._coef("learning_rate", var), self._coef("rho", var)
        epsilon, rms = self._coef("epsilon", var), self.get_slot(var, "rms")
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
        g, indices = grad.values, grad.indices
        if self._hyper["momentum"]:
            return self._kernel(g, var, indices)
        rho = self._coef("rho", var)
        rms_t = _decay_then_add(self.get_slot(var, "rms"), rho, indices, (g * g) * (1 - rho))
        denominator = array_ops.gather(rms_t, indices)
        if self._hyper["centered"]:
            mg_t = _decay_then_add(self.get_slot(var, "mg"), rho, indices, g * (1 - rho))
            denominator = denominator - math_ops.square(array_ops.gather(mg_t, indices))
        return state_ops.scatter_add(var, indices, -self._coef("learning_rate", var) * g / (
            math_ops.sqrt(denominator) + self._coef("epsilon", var))).op


class _AccumulatorOptimizer(Optimizer):
    """Adagrad's and Ftrl's base: an "accumulator" slot per variable starting at
    ``initial_accumulator_value``, a constructor argument (in ``get_config``) rather than a
    hyperparameter."""

    def __init__(self, name, learning_rate, kwargs, initial_accumulator_value, **hyper):
        super().__init__(name, learning_rate, kwargs, **hyper)
        self._initial_accumulator_value = initial_accumulator_value

    def get_config(self):
        """The optimizer's name and hyperparameters."""
        return dict(super().get_config(),
                    initial_accumulator_value=self._initial_accumulator_value)

    def _accumulator_slot(self, var):
        self._constant_slot(var, self._initial_accumulator_value, "accumulator", self._name)


class Adagrad(_AccumulatorOptimizer):
    """Keras's Adagrad: ``accum += g^2; var -= lr * g / (sqrt(accum) + epsilon)``."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        if initial_accumulator_value < 0.0:
            raise ValueError("initial_accumulator_value must be non-negative: %s"
                             % initial_accumulator_value)
        super().__init__(name, learning_rate, kwargs, initial_accumulator_value, epsilon=epsilon)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._accumulator_slot(v)

    def _update(self, accum_t, grad, var):
        return grad * self._coef("learning_rate", var) / (
            math_ops.sqrt(accum_t) + self._coef("epsilon", var))

    def _apply_dense(self, grad, var):
        accum = state_ops.assign_add(self.get_slot(var, "accumulator"), math_ops.square(grad))
        return state_ops.assign_sub(var, self._update(accum, grad, var)).op

    def _apply_sparse(self, grad, var):
        g, indices = grad.values, grad.indices
        accum = self.get_slot(var, "accumulator")
        accum_t = array_ops.gather(accum, indices) + math_ops.square(g)
        with framework.get_default_graph().control_dependencies([_rows(accum, indices, accum_t)]):
            return state_ops.scatter_sub(var, indices, self._update(accum_t, g, var)).op


class Adadelta(Optimizer):
    """Keras's Adadelta (TF's kernel): ``accum = rho accum + (1 - rho) g^2;
    update = sqrt(accum_update + eps) / sqrt(accum + eps) * g; var -= lr * update;
    accum_update = rho accum_update + (1 - rho) update^2``."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(name, learning_rate, kwargs, rho=rho, epsilon=epsilon)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._zeros_slot(v, "accum_grad", self._name)
            self._zeros_slot(v, "accum_var", self._name)

    def _rows(self, accum, accum_update, grad, var):
        """The new ``(accum, update, accum_update)`` of rows (TF's ApplyAdadelta, op by op)."""
        rho, epsilon = self._coef("rho", var), self._coef("epsilon", var)
        accum = accum * rho + math_ops.square(grad) * (1 - rho)
        update = math_ops.sqrt(accum_update + epsilon) * math_ops.rsqrt(accum + epsilon) * grad
        accum_update = accum_update * rho + math_ops.square(update) * (1 - rho)
        return accum, update * self._coef("learning_rate", var), accum_update

    def _apply_dense(self, grad, var):
        accum, accum_update = self.get_slot(var, "accum_grad"), self.get_slot(var, "accum_var")
        new_accum, step, new_update = self._rows(accum, accum_update, grad, var)
        with framework.get_default_graph().control_dependencies([step, new_update]):
            return control_flow_ops.group(state_ops.assign(accum, new_accum),
                                          state_ops.assign(accum_update, new_update),
                                          state_ops.assign_sub(var, step))

    def _apply_sparse(self, grad, var):
        g, indices = grad.values, grad.indices
        accum, accum_update = self.get_slot(var, "accum_grad"), self.get_slot(var, "accum_var")
        new_accum, step, new_update = self._rows(array_ops.gather(accum, indices),
                                                 array_ops.gather(accum_update, indices), g, var)
        with framework.get_default_graph().control_dependencies([step, new_update]):
            return control_flow_ops.group(_rows(accum, indices, new_accum),
                                          _rows(accum_update, indices, new_update),
                                          state_ops.scatter_sub(var, indices, step))


class Ftrl(_AccumulatorOptimizer):
    """Keras's FTRL-Proximal (TF's ApplyFtrl/ApplyFtrlV2 kernels), ``l2`` raised by
    ``beta / (2 * lr)``."""

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, name="Ftrl",
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, **kwargs):
        for key, value in (("initial_accumulator_value", initial_accumulator_value),
                           ("learning_rate_power", -learning_rate_power),
                           ("l1_regularization_strength", l1_regularization_strength),
                           ("l2_regularization_strength", l2_regularization_strength),
                           ("l2_shrinkage_regularization_strength",
                            l2_shrinkage_regularization_strength)):
            if value < 0.0:
                raise ValueError("%s must be %s, got %s" % (
                    key, "non-positive" if key == "learning_rate_power" else "non-negative",
                    -value if key == "learning_rate_power" else value))
        super().__init__(name, learning_rate, kwargs, initial_accumulator_value,
                         learning_rate_power=learning_rate_power,
                         l1_regularization_strength=l1_regularization_strength,
                         l2_regularization_strength=l2_regularization_strength, beta=beta,
                         l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength)

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        for v in var_list:
            self._accumulator_slot(v)
            self._zeros_slot(v, "linear", self._name)

    def _rows(self, accum, linear, grad, w, var):
        """The new ``(accum, linear, w)`` of rows (TF's ApplyFtrl(V2), op by op)."""
        lr = self._coef("learning_rate", var)
        l1 = self._coef("l1_regularization_strength", var)
        l2 = self._coef("l2_regularization_strength", var) + self._coef("beta", var) / (2.0 * lr)
        power = -self._coef("learning_rate_power", var)
        new_accum = accum + math_ops.square(grad)   # of the gradient without shrinkage
        if self._hyper["l2_shrinkage_regularization_strength"] > 0:
            grad = grad + 2.0 * self._coef("l2_shrinkage_regularization_strength", var) * w
        if self._hyper["learning_rate_power"] == -0.5:
            root, new_root = math_ops.sqrt(accum), math_ops.sqrt(new_accum)
        else:
            root, new_root = _power(accum, power), _power(new_accum, power)
        linear = linear + (grad - (new_root - root) / lr * w)
        x = math_ops.maximum(math_ops.minimum(linear, l1), -l1) - linear
        return new_accum, linear, x / (new_root / lr + 2.0 * l2)

    def _apply_dense(self, grad, var):
        accum, linear = self.get_slot(var, "accumulator"), self.get_slot(var, "linear")
        new = self._rows(accum, linear, grad, var, var)
        with framework.get_default_graph().control_dependencies(list(new)):
            return control_flow_ops.group(*[state_ops.assign(ref, value) for ref, value in
                                            zip((accum, linear, var), new)])

    def _apply_sparse(self, grad, var):
        g, indices = grad.values, grad.indices
        refs = self.get_slot(var, "accumulator"), self.get_slot(var, "linear"), var
        accum, linear, w = [array_ops.gather(ref, indices) for ref in refs]
        new = self._rows(accum, linear, g, w, var)
        with framework.get_default_graph().control_dependencies(list(new)):
            return control_flow_ops.group(*[_rows(ref, indices, value) for ref, value in
                                            zip(refs, new)])


_CLASSES = {cls.__name__: cls for cls in (SGD, Adam, Adamax, Nadam, RMSprop, Adagrad, Adadelta,
                                          Ftrl)}
_BY_NAME = {name.lower(): cls for name, cls in _CLASSES.items()}


def serialize(optimizer):
    """``{"class_name", "config"}`` of a Keras optimizer."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """The optimizer a ``serialize`` dict describes (class names in any case: ``"adam"``)."""
    classes = dict(_BY_NAME, **{k.lower(): v for k, v in (custom_objects or {}).items()})
    name = str(config.get("class_name", "")).lower()
    if name not in classes:
        raise ValueError("Unknown optimizer: %r (known: %s)"
                         % (config.get("class_name"), ", ".join(sorted(_CLASSES))))
    return classes[name].from_config(config.get("config", {}))


def get(identifier):
    """The optimizer ``identifier`` names (``"adam"``, ``"sgd"``, ``"nadam"``... with Keras's
    defaults) or describes (a ``serialize`` dict), or ``identifier`` itself when it is an
    optimizer (Keras's or tf.train's)."""
    if isinstance(identifier, _TrainOptimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError("Could not interpret optimizer identifier: %r (give an optimizer, a "
                     "serialize() dict or one of %s)" % (identifier, ", ".join(sorted(_BY_NAME))))


__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "Optimizer",
           "RMSprop", "deserialize", "get", "schedules", "serialize"]
