"""``AGNOptimizer``: Accumulated Gradient Normalization (Hermans, ACML 2017).

As TF1's ``tf.contrib.opt.AGNOptimizer``: each worker trains local copies of the trainable
variables (``AGNCustomGetter`` makes them, in LOCAL_VARIABLES on the worker, with a
``global_center_variable/<name>`` on the ps and a ``grad_variable/<name>`` on the worker). Each
step applies the wrapped optimizer to the local variables and adds the gradient to the grad
variable; every ``communication_period`` local steps the worker divides the accumulated gradient
by the period, applies it with the same optimizer to the global variables, increments the global
step, copies the global variables into the local ones and zeroes the accumulated gradient.

The session hook ``make_session_run_hook(is_chief, task_index)`` starts every worker from the
global variables. The communication is one ``tf.cond`` per task involved (see _device_cond.py).
One difference: the optimizer's own state (Adam's beta powers) for the global update lives with
the global variables and is advanced once per global update; TF1 shares the local update's, on
the worker, which a cond on the ps cannot update.

>>> import zps as tf
>>> getter = tf.contrib.opt.AGNCustomGetter("/job:worker/task:0")
"""

import contextlib

from zps.contrib.opt import _device_cond, _local_copies
from zps.contrib.opt._local_copies import GLOBAL_VARIABLE_NAME
from zps.framework.graph import get_default_graph
from zps.ops import array_ops, control_flow_ops, state_ops, variables

GRAD_VARIABLE_NAME = "grad_variable"


class AGNCustomGetter(_local_copies.CustomGetter):
    """A custom getter making each trainable variable a local one on ``worker_device``, with its
    global centre (placed by the enclosing device setter, normally on a ps) and its gradient
    accumulator on the worker."""

    COMPANION = GRAD_VARIABLE_NAME

    def __init__(self, worker_device):
        super().__init__(worker_device)
        self._grad_map = self._companion_map   # local variable -> its accumulated gradient


class AGNOptimizer(_local_copies.LocalCopyOptimizer):
    """Wrap ``optimizer`` with AGN: local steps, and every ``communication_period`` steps the
    mean accumulated gradient applied to the global variables."""

    def __init__(self, optimizer, num_worker, custom_getter, communication_period=10,
                 use_locking=True, name="AGNOptimizer"):
        super().__init__(optimizer, num_worker, custom_getter, communication_period, use_locking,
                         name)
        self._grad_map = custom_getter._grad_map
        self._global_state = {}   # the optimizer's own variables for the global update

    @contextlib.contextmanager
    def _global_update_state(self):
        """The wrapped optimizer's per-step state (``_create_non_slot_variable``) for the global
        update, apart from the local update's."""
        local_state, self._opt._non_slot_dict = self._opt._non_slot_dict, self._global_state
        try:
            yield
        finally:
            self._opt._non_slot_dict = local_state

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Update the local variables and accumulate the gradients; every
        ``communication_period`` local steps, apply their mean to the global variables and pull
        those. Returns the op doing it all."""
        grads_and_vars = list(grads_and_vars)
        local_vars = [v for g, v in grads_and_vars if g is not None]
        grads = [g for g, v in grads_and_vars if g is not None]
        self._check_local(local_vars)
        # theta -= lr * grad, with the optimizer's variables (slots, beta powers) local ones.
        local_update_op = self._apply_locally(grads_and_vars)
        # a += grad
        grad_vars = [self._grad_map[v] for v in local_vars]
        update_ops = [local_update_op] + [state_ops.assign_add(a, g).op
                                          for g, a in zip(grads, grad_vars)]
        local_update, communicate = self._count_step()
        with get_default_graph().control_dependencies(update_ops):
            pulled = self._communicate(communicate, local_vars, global_step, name)
        return control_flow_ops.group(pulled, local_update)

    def _communicate(self, communicate, local_vars, global_step, name):
        """When ``communicate``: a /= period (worker), apply a to the centres and increment the
        global step (their tasks), pull the centres and zero a (worker)."""
        grad_vars = [self._grad_map[v] for v in local_vars]
        centers = [self._global_map[v] for v in local_vars]
        indices = range(len(local_vars))
        normalized, _ = _device_cond.per_task(
            indices, lambda i: grad_vars[i].device, communicate,
            lambda idx: [state_ops.assign(grad_vars[i], grad_vars[i] / self._period)
                         for i in idx], "normalize")
        with self._global_update_state():
            applied = _device_cond.apply_when(
                self._opt, communicate, [(normalized[i], centers[i]) for i in indices],
                global_step, (name or self._name) + "_global")
        pulled_values, _ = _device_cond.per_task(
            indices, lambda i: centers[i].device, communicate,
            lambda idx: [centers[i].read_value() for i in idx], "read_center", applied)

        _, pulled = _device_cond.per_task(
            indices, lambda i: local_vars[i].device, communicate,
            lambda idx: [control_flow_ops.group(
                state_ops.assign(local_vars[i], pulled_values[i]),
                state_ops.assign(grad_vars[i], array_ops.zeros_like(grad_vars[i])))
                for i in idx], "pull")
        return control_flow_ops.group(*pulled)

    def get_init_op(self, task_index):
        """The op setting every local variable to its global centre and zeroing the
        accumulated gradients (run before training)."""
        local_vars = variables.trainable_variables()
        if not local_vars or any(v not in self._global_map for v in local_vars):
            raise ValueError("The lists of local_variables, global_center_variables, "
                             "grad_center_variables should not be empty: create the model's "
                             "variables with tf.get_variable under the AGNCustomGetter")
        init_ops = [state_ops.assign(v, self._global_map[v]) for v in local_vars]
        init_ops += [state_ops.assign(self._grad_map[v], array_ops.zeros_like(self._grad_map[v]))
                     for v in local_vars]
        return control_flow_ops.group(*init_ops)

    def make_session_run_hook(self, is_chief, task_index):
        """The hook that starts this worker from the global variables."""
        return _local_copies.InitHook(self, task_index)   # the same on the chief


__all__ = ["AGNCustomGetter", "AGNOptimizer", "GLOBAL_VARIABLE_NAME", "GRAD_VARIABLE_NAME"]
