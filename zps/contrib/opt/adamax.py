"""``AdaMaxOptimizer``: Adam with the infinity norm (Kingma & Ba, section 7.1), TF1's contrib.

``m = beta1 * m + (1 - beta1) * g``, ``v = max(beta2 * v, |g|)``,
``var -= lr / (1 - beta1^t) * m / (v + epsilon)``. Slots "m" and "v" (``w/AdaMax``,
``w/AdaMax_1``) and one variable, ``beta1_power``. A sparse gradient updates only its rows
(and their m and v), after summing the rows of repeated indices.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.contrib.opt.AdaMaxOptimizer()
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print([v.op.name for v in opt.variables()])
['beta1_power', 'w/AdaMax', 'w/AdaMax_1']
"""

from zps.framework.graph import get_default_graph
from zps.ops import array_ops, control_flow_ops, math_ops, state_ops
from zps.train.adam import AdamOptimizer
from zps.train.optimizer import cast_to


class AdaMaxOptimizer(AdamOptimizer):
    """AdaMax: Adam's step scaled by an exponentially weighted infinity norm."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="AdaMax"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _get_beta_accumulators(self):
        return self._get_non_slot_variable("beta1_power", graph=get_default_graph())

    def _create_slots(self, var_list):
        # With the first variable by name: the same ps on every worker (as Adam's powers).
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _hyper(self, var):
        return [cast_to(t, var) for t in (self._get_beta_accumulators(), self._lr_t,
                                          self._beta1_t, self._beta2_t, self._epsilon_t)]

    def _apply_dense(self, grad, var):
        # TF1's ApplyAdaMax kernel, in its order of operations.
        beta1_power, lr, beta1, beta2, epsilon = self._hyper(var)
        lock = self._use_locking
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = state_ops.assign_add(m, (grad - m) * (1 - beta1), use_locking=lock)
        v_t = state_ops.assign(v, math_ops.maximum(beta2 * v, math_ops.abs(grad)),
                               use_locking=lock)
        return state_ops.assign_sub(var, lr / (1 - beta1_power) * (m_t / (v_t + epsilon)),
                                    use_locking=lock).op

    def _apply_sparse(self, grad, var):
        beta1_power, lr, beta1, beta2, epsilon = self._hyper(var)
        indices, values, lock = grad.indices, grad.values, self._use_locking
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t_slice = array_ops.gather(m, indices) * beta1 + values * (1 - beta1)
        m_t = state_ops.scatter_update(m, indices, m_t_slice, use_locking=lock)
        v_t_slice = math_ops.maximum(array_ops.gather(v, indices) * beta2, math_ops.abs(values))
        v_t = state_ops.scatter_update(v, indices, v_t_slice, use_locking=lock)
        var_slice = -lr / (1 - beta1_power) * (m_t_slice / (v_t_slice + epsilon))
        var_update = state_ops.scatter_add(var, indices, var_slice, use_locking=lock)
        return control_flow_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops, name_scope):
        # After every update: beta1_power *= beta1, where it lives.
        graph = get_default_graph()
        with graph.control_dependencies(update_ops):
            beta1_power = self._get_beta_accumulators()
            with graph.colocate_with(beta1_power):
                update_beta1 = beta1_power.assign(beta1_power * self._beta1_t,
                                                  use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops + [update_beta1], name=name_scope)


__all__ = ["AdaMaxOptimizer"]
