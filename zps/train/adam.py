"""``AdamOptimizer`` (Kingma & Ba), with TF1's update and state layout.

``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``, ``m = beta1 * m + (1 - beta1) * g``,
``v = beta2 * v + (1 - beta2) * g^2``, ``var -= lr_t * m / (sqrt(v) + epsilon)``. The slots are
"m" and "v" (variables ``w/Adam`` and ``w/Adam_1``); ``beta1^t`` and ``beta2^t`` are the
variables ``beta1_power``/``beta2_power``, placed with the first variable by name so that every
worker finds them on the same ps. Sparse gradients follow TF1: m and v decay on every row.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.train.AdamOptimizer()
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print([v.op.name for v in opt.variables()])
['beta1_power', 'beta2_power', 'w/Adam', 'w/Adam_1']
"""

from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import control_flow_ops, training_ops
from zps.train.optimizer import Optimizer, cast_to


class AdamOptimizer(Optimizer):
    """Adam: adaptive moment estimation."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._lr_t = self._beta1_t = self._beta2_t = self._epsilon_t = None

    def _get_beta_accumulators(self):
        graph = get_default_graph()
        return (self._get_non_slot_variable("beta1_power", graph=graph),
                self._get_non_slot_variable("beta2_power", graph=graph))

    def _create_slots(self, var_list):
        # The beta powers live with the first variable by name: the same ps on every worker
        # (otherwise some workers would advance a different copy).
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        self._lr_t = convert_to_tensor(self._call_if_callable(self._lr), name="learning_rate")
        self._beta1_t = convert_to_tensor(self._call_if_callable(self._beta1), name="beta1")
        self._beta2_t = convert_to_tensor(self._call_if_callable(self._beta2), name="beta2")
        self._epsilon_t = convert_to_tensor(self._call_if_callable(self._epsilon), name="epsilon")

    def _hyper(self, var):
        beta1_power, beta2_power = self._get_beta_accumulators()
        return [cast_to(t, var) for t in (beta1_power, beta2_power, self._lr_t, self._beta1_t,
                                          self._beta2_t, self._epsilon_t)]

    def _apply_dense(self, grad, var):
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), *self._hyper(var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), *self._hyper(var),
            grad.values, grad.indices, use_locking=self._use_locking).op

    def _finish(self, update_ops, name_scope):
        # After every update: beta1_power *= beta1, beta2_power *= beta2, where they live.
        graph = get_default_graph()
        with graph.control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with graph.colocate_with(beta1_power):
                update_beta1 = beta1_power.assign(beta1_power * self._beta1_t,
                                                  use_locking=self._use_locking)
                update_beta2 = beta2_power.assign(beta2_power * self._beta2_t,
                                                  use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops + [update_beta1, update_beta2], name=name_scope)


__all__ = ["AdamOptimizer"]
