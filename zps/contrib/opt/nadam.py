"""``NadamOptimizer``: Adam with Nesterov momentum (Dozat 2015), TF1's contrib version.

The dense update is ``tf.train.AdamOptimizer``'s with ``use_nesterov``:
``var -= lr_t * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + epsilon)``. A sparse gradient
decays m and v on every row and adds the gradient's rows (as Adam's sparse update), then moves
only the gradient's rows. Slots "m" and "v", variables ``beta1_power`` and ``beta2_power``; the
default name is "Adam", as in TF1.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.contrib.opt.NadamOptimizer()
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print(opt.get_slot_names())
['m', 'v']
"""

from zps.ops import array_ops, control_flow_ops, math_ops, state_ops, training_ops
from zps.train.adam import AdamOptimizer


class NadamOptimizer(AdamOptimizer):
    """Nadam: Adam whose step uses the Nesterov look-ahead of the first moment."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon,
                         use_locking=use_locking, name=name)

    def _apply_dense(self, grad, var):
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), *self._hyper(var), grad,
            use_locking=self._use_locking, use_nesterov=True).op

    def _apply_sparse(self, grad, var):
        beta1_power, beta2_power, lr_t, beta1_t, beta2_t, epsilon_t = self._hyper(var)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        indices, values, graph = grad.indices, grad.values, var.graph
        m = self.get_slot(var, "m")
        m_scaled_g_values = values * (1 - beta1_t)
        m_t = state_ops.assign(m, m * beta1_t, use_locking=self._use_locking)
        with graph.control_dependencies([m_t]):
            m_t = state_ops.scatter_add(m, indices, m_scaled_g_values)
            m_bar = m_scaled_g_values + beta1_t * array_ops.gather(m_t, indices)
        v = self.get_slot(var, "v")
        v_scaled_g_values = (values * values) * (1 - beta2_t)
        v_t = state_ops.assign(v, v * beta2_t, use_locking=self._use_locking)
        with graph.control_dependencies([v_t]):
            v_t = state_ops.scatter_add(v, indices, v_scaled_g_values)
        v_sqrt = math_ops.sqrt(array_ops.gather(v_t, indices))
        var_update = state_ops.scatter_add(var, indices, -lr * m_bar / (v_sqrt + epsilon_t))
        return control_flow_ops.group(var_update, m_bar, v_t)


__all__ = ["NadamOptimizer"]
