"""``LazyAdamOptimizer``: Adam whose sparse updates touch only the rows in the gradient.

Dense gradients get ``tf.train.AdamOptimizer``'s update. For an IndexedSlices gradient (from
``tf.gather`` or an embedding lookup) only the rows it names move: their "m" and "v" decay and
take the gradient, and only they are updated, so an embedding row's moments stand still while
the row is not looked up (TF1's AdamOptimizer decays every row of m and v at every step). The
rows of repeated indices are summed first, as in TF1.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     emb = tf.Variable([[1.0], [2.0], [3.0]], name="emb")
...     loss = tf.reduce_sum(tf.gather(emb, [2]))
...     step = tf.contrib.opt.LazyAdamOptimizer(0.1).minimize(loss)
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(emb).ravel())
[1.  2.  2.9]
"""

from zps.ops import array_ops, control_flow_ops, math_ops, state_ops
from zps.train.adam import AdamOptimizer


class LazyAdamOptimizer(AdamOptimizer):
    """Adam with lazy sparse updates: the moments of rows absent from a gradient stay put."""

    def _apply_sparse(self, grad, var):
        beta1_power, beta2_power, lr_t, beta1_t, beta2_t, epsilon_t = self._hyper(var)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        indices, lock = grad.indices, self._use_locking
        m = self.get_slot(var, "m")
        m_t = state_ops.scatter_update(
            m, indices, beta1_t * array_ops.gather(m, indices) + (1 - beta1_t) * grad.values,
            use_locking=lock)
        v = self.get_slot(var, "v")
        v_t = state_ops.scatter_update(
            v, indices,
            beta2_t * array_ops.gather(v, indices) + (1 - beta2_t) * math_ops.square(grad.values),
            use_locking=lock)
        denominator = math_ops.sqrt(array_ops.gather(v_t, indices)) + epsilon_t
        var_update = state_ops.scatter_sub(
            var, indices, lr * array_ops.gather(m_t, indices) / denominator, use_locking=lock)
        return control_flow_ops.group(var_update, m_t, v_t)


__all__ = ["LazyAdamOptimizer"]
