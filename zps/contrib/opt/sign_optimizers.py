"""``AddSignOptimizer`` and ``PowerSignOptimizer`` (Bello et al., ICML 2017), TF1's contrib.

Both keep a moving average ``m = beta * m + (1 - beta) * g`` (slot "m") and scale the gradient
by how ``sign(g)`` agrees with ``sign(m)``: AddSign by ``alpha + sign_decay * sign(g) sign(m)``,
PowerSign by ``base ** (sign_decay * sign(g) sign(m))``; then ``var -= lr * scale * g``.
``sign_decay_fn(global_step)`` (see ``sign_decay``) anneals the sign term; it needs the
``global_step`` passed to ``minimize``/``apply_gradients``. A sparse gradient decays m on every
row, as a dense one would, and moves only its own rows.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, -1.0], name="w")
...     step = tf.contrib.opt.AddSignOptimizer(0.1).minimize(tf.reduce_sum(w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w))
[ 0.8 -1.2]
"""

import math

from zps.framework.graph import convert_to_tensor
from zps.ops import array_ops, control_flow_ops, math_ops, state_ops
from zps.train.optimizer import Optimizer, cast_to


class _SignOptimizer(Optimizer):
    """The shared part: slot "m", the sign decay, and the update given ``_scale``."""

    def __init__(self, learning_rate, beta, sign_decay_fn, use_locking, name):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta = beta
        self._sign_decay_fn = sign_decay_fn
        self._lr_t = self._beta_t = self._sign_decay_t = None

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """``Optimizer.apply_gradients``, with ``sign_decay_fn(global_step)`` as the decay."""
        if self._sign_decay_fn is not None:
            self._sign_decay_t = convert_to_tensor(self._sign_decay_fn(global_step),
                                                   name="sign_decay")
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)

    def _prepare(self):
        self._lr_t = convert_to_tensor(self._lr, name="learning_rate")
        self._beta_t = convert_to_tensor(self._beta, name="beta")
        if self._sign_decay_fn is None:
            self._sign_decay_t = convert_to_tensor(1.0, name="sign_decay")

    def _scale(self, sign_gm, var, sparse=False):
        """The factor of the gradient, given ``sign(g) * sign(m)``."""
        raise NotImplementedError

    def _apply_dense(self, grad, var):
        lr, beta = cast_to(self._lr_t, var), cast_to(self._beta_t, var)
        m = self.get_slot(var, "m")
        m_t = state_ops.assign(m, m * beta + grad * (1 - beta), use_locking=self._use_locking)
        sign_gm = math_ops.sign(grad) * math_ops.sign(m_t)
        return state_ops.assign_sub(var, lr * self._scale(sign_gm, var) * grad,
                                    use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        lr, beta = cast_to(self._lr_t, var), cast_to(self._beta_t, var)
        m = self.get_slot(var, "m")
        # TF1 adds the gradient as a dense tensor: every row of m decays.
        dense_grad = array_ops.unsorted_segment_sum(grad.values, grad.indices,
                                                    array_ops.shape(var)[0])
        m_t = state_ops.assign(m, (m * beta) + (dense_grad * (1 - beta)),
                               use_locking=self._use_locking)
        sign_gm = array_ops.gather(math_ops.sign(m_t), grad.indices) * math_ops.sign(grad.values)
        var_update = state_ops.scatter_sub(
            var, grad.indices, lr * self._scale(sign_gm, var, sparse=True) * grad.values,
            use_locking=self._use_locking)
        return control_flow_ops.group(var_update, m_t)


class AddSignOptimizer(_SignOptimizer):
    """AddSign: ``var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g``."""

    def __init__(self, learning_rate=0.1, alpha=1.0, beta=0.9, sign_decay_fn=None,
                 use_locking=False, name="AddSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._alpha = alpha
        self._alpha_t = None

    def _prepare(self):
        super()._prepare()
        self._alpha_t = convert_to_tensor(self._alpha, name="alpha")

    def _scale(self, sign_gm, var, sparse=False):
        return cast_to(self._alpha_t, var) + cast_to(self._sign_decay_t, var) * sign_gm


class PowerSignOptimizer(_SignOptimizer):
    """PowerSign: ``var -= lr * base ** (sign_decay * sign(g) * sign(m)) * g``."""

    def __init__(self, learning_rate=0.1, base=math.e, beta=0.9, sign_decay_fn=None,
                 use_locking=False, name="PowerSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._logbase = math.log(base)
        self._logbase_t = None

    def _prepare(self):
        super()._prepare()
        self._logbase_t = convert_to_tensor(self._logbase, name="logbase")

    def _scale(self, sign_gm, var, sparse=False):
        exponent = cast_to(self._logbase_t, var) * cast_to(self._sign_decay_t, var) * sign_gm
        if sparse:  # TF1's sparse update: e ** x (its dense kernel: exp(x))
            return math_ops.pow(cast_to(convert_to_tensor(math.e), var), exponent)
        return math_ops.exp(exponent)


__all__ = ["AddSignOptimizer", "PowerSignOptimizer"]
