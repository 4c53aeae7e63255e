"""``AdagradDAOptimizer``: Adagrad dual averaging (Duchi, Hazan and Singer, 2011), for sparse
linear models: the weights are computed afresh each step from the sums of the gradients and of
their squares, so L1 regularization gives exact zeros::

    gradient_accumulator         += g
    gradient_squared_accumulator += g^2
    var = -lr * sign(g_acc) * max(|g_acc| - T * l1, 0) / (l2 * T * lr + sqrt(gg_acc))

with ``T`` the global step plus one (pass the global step to ``minimize`` so that it counts).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     step = tf.train.get_or_create_global_step()
...     opt = tf.train.AdagradDAOptimizer(0.1, step)
...     train = opt.minimize(tf.reduce_sum(w * w), global_step=step)
...     print(sorted(opt.get_slot(w, s).op.name for s in opt.get_slot_names()))
['w/AdagradDA', 'w/AdagradDA_1']
"""

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import array_ops, math_ops, training_ops
from zps.train.optimizer import Optimizer, cast_to


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging with L1 and L2 regularization (TF1's ``AdagradDAOptimizer``)."""

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: %s"
                             % initial_gradient_squared_accumulator_value)
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_gradient_squared_accumulator_value = \
            initial_gradient_squared_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._global_step = global_step
        self._learning_rate_tensor = None
        self._global_step_on_worker = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            self._constant_slot(v, self._initial_gradient_squared_accumulator_value,
                                "gradient_squared_accumulator", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        # Read once per step next to the learning rate (TF1: a copy of the global step on the
        # worker, so the ps holding it is not read once per variable).
        with get_default_graph().colocate_with(self._learning_rate_tensor):
            self._global_step_on_worker = math_ops.cast(
                array_ops.identity(self._global_step), dtypes.int64) + 1

    def _args(self, var):
        with get_default_graph().device(var.device):
            step = array_ops.identity(self._global_step_on_worker)
        return dict(lr=cast_to(self._learning_rate_tensor, var),
                    l1=cast_to(convert_to_tensor(self._l1_regularization_strength), var),
                    l2=cast_to(convert_to_tensor(self._l2_regularization_strength), var),
                    global_step=step, use_locking=self._use_locking)

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad_da(
            var, self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"), grad, **self._args(var)).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad_da(
            var, self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"), grad.values, grad.indices,
            **self._args(var)).op


__all__ = ["AdagradDAOptimizer"]
