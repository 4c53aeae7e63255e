"""``DropStaleGradientOptimizer``: asynchronous training that drops a worker's stale gradients.

As TF1's ``tf.contrib.opt.DropStaleGradientOptimizer``: ``compute_gradients`` records the
global step before the gradients are computed; ``apply_gradients`` compares it with the global
step once they are, and applies them (with the wrapped optimizer, which increments the global
step) only if the global step moved by at most ``staleness`` meanwhile. Otherwise nothing is
updated and the ``stale_counter`` variable (next to the global step) counts one more dropped
step; the summary "Gradient staleness percentage" reports ``stale_counter / (global_step + 1)``.

The update runs as one ``tf.cond`` on each ps task holding variables (see _device_cond.py).

>>> import zps as tf
>>> opt = tf.contrib.opt.DropStaleGradientOptimizer(tf.train.GradientDescentOptimizer(0.1),
...                                                 staleness=1)
"""

from zps.contrib.opt import _device_cond
from zps.framework import dtypes
from zps.framework.graph import Tensor
from zps.ops import array_ops, init_ops, math_ops, summary_ops, variable_scope
from zps.train import training_util
from zps.train.optimizer import Optimizer


class DropStaleGradientOptimizer(Optimizer):
    """Wrap ``opt``: drop a step's gradients when the global step moved more than ``staleness``
    while they were computed."""

    def __init__(self, opt, staleness, use_locking=False, name="DropStaleGradient"):
        super().__init__(use_locking, name)
        self._opt = opt
        self._staleness = staleness
        self._local_step = None

    def compute_gradients(self, loss, *args, **kwargs):
        """The wrapped optimizer's gradients, computed after the global step is read."""
        global_step = training_util.get_global_step()
        if global_step is None:
            raise ValueError("DropStaleGradientOptimizer needs a global step to measure "
                             "staleness: create one (tf.train.get_or_create_global_step()) "
                             "before compute_gradients/minimize")
        graph = loss.graph
        with graph.colocate_with(loss):
            self._local_step = global_step.read_value() + 0
        with graph.control_dependencies([self._local_step]):
            loss = array_ops.identity(loss)
            return self._opt.compute_gradients(loss, *args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Apply the gradients if they are fresh enough; returns the ``stale_counter`` update
        (it adds 1.0 when the gradients were dropped, 0.0 when they were applied)."""
        grads_and_vars = list(grads_and_vars)
        if global_step is None:
            raise ValueError("DropStaleGradientOptimizer.apply_gradients needs global_step "
                             "(the one read by compute_gradients) to measure staleness")
        if self._local_step is None:
            raise ValueError("DropStaleGradientOptimizer.apply_gradients needs the global step "
                             "recorded by its own compute_gradients: call compute_gradients "
                             "(or minimize) of this optimizer first")
        graph = global_step.graph
        with graph.colocate_with(global_step):
            stale_counter = variable_scope.get_variable(
                "stale_counter", [], initializer=init_ops.zeros_initializer(), trainable=False)
        gradients = [g if isinstance(g, Tensor) else g.op
                     for g, _ in grads_and_vars if g is not None]
        with graph.control_dependencies(gradients), graph.colocate_with(global_step):
            staleness = array_ops.reshape(global_step.read_value() - self._local_step, [])
            fresh = math_ops.less_equal(staleness, self._staleness)
        applied = _device_cond.apply_when(self._opt, fresh, grads_and_vars, global_step,
                                          name)
        with graph.control_dependencies(applied):
            dropped = math_ops.cast(math_ops.logical_not(fresh), dtypes.float32)
        conditional_update = stale_counter.assign_add(dropped)
        summary_ops.scalar("Gradient staleness percentage",
                           stale_counter / math_ops.cast(global_step.read_value() + 1,
                                                         dtypes.float32))
        return conditional_update


__all__ = ["DropStaleGradientOptimizer"]
