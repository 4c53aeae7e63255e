"""``ModelAverageOptimizer``: synchronous model averaging every ``interval_steps`` local steps.

As TF1's ``tf.contrib.opt.ModelAverageOptimizer``: each worker trains local copies of the
trainable variables (``ModelAverageCustomGetter`` makes them, in LOCAL_VARIABLES on the worker,
with a ``global_center_variable/<name>`` on the ps). Every ``interval_steps`` local steps each
worker pushes its local variables into one ``ConditionalAccumulator`` per variable (on the
global variable's ps, shared name ``<global variable>/var_accum``); the chief takes the mean of
``num_worker`` of them into the global variables, increments the global step and puts
``num_worker - 1`` tokens in the ``sync_queue`` (next to the global step), which the other
workers wait for; then every worker copies the global variables into its local ones.

The session hook ``make_session_run_hook()`` starts every worker from the global variables
(and, on the chief, sets the accumulators' global step). The averaging is one ``tf.cond`` per
task involved (see _device_cond.py): between averagings nothing travels to the ps.

>>> import zps as tf
>>> getter = tf.contrib.opt.ModelAverageCustomGetter("/job:worker/task:0")
"""

from zps.contrib.opt import _device_cond, _local_copies
from zps.contrib.opt._local_copies import GLOBAL_VARIABLE_NAME
from zps.framework import constant as constant_op
from zps.framework import dtypes
from zps.framework.graph import get_default_graph
from zps.ops import (
    array_ops,
    control_flow_ops,
    data_flow_ops,
    state_ops,
    variables,
)
from zps.train import session_run_hook


class ModelAverageCustomGetter(_local_copies.CustomGetter):
    """A custom getter making each trainable variable a local one on ``worker_device``, with its
    global variable (placed by the enclosing device setter, normally on a ps).

    Use it with ``tf.get_variable`` under ``tf.variable_scope("", custom_getter=...)`` and
    ``tf.train.replica_device_setter``; non-trainable variables pass through. (TF1 initializes
    the global variable from the local one; both start from the same initializer here, and the
    hook copies the global variables to every worker anyway.)
    """

    def __init__(self, worker_device):
        super().__init__(worker_device)
        self._local_2_global = self._global_map


class ModelAverageOptimizer(_local_copies.LocalCopyOptimizer):
    """Wrap ``opt`` (which updates the local variables) with periodic synchronous averaging."""

    def __init__(self, opt, num_worker, is_chief, ma_custom_getter, interval_steps=100,
                 use_locking=True, name="ModelAverageOptimizer"):
        super().__init__(opt, num_worker, ma_custom_getter, interval_steps, use_locking, name)
        self._is_chief = is_chief
        self._accumulator_list = []
        self._chief_init_op = None

    def _local_vars_update(self, var_list):
        """The op copying each global variable into its local one."""
        if not var_list:
            raise ValueError("The list of local_variables should not be empty")
        graph = get_default_graph()
        update_ops = []
        for lvar in var_list:
            with graph.device(lvar.device):
                update_ops.append(state_ops.assign(lvar, self._global_map[lvar].read_value()))
        return control_flow_ops.group(*update_ops)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Update the local variables; every ``interval_steps`` local steps, average them over
        the workers through the ps. Returns the op doing both."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required")
        graph = get_default_graph()
        # TF1 leaves the wrapped optimizer's variables global here.
        apply_updates = self._opt.apply_gradients(grads_and_vars)
        local_update, average = self._count_step(after=[apply_updates])
        local_vars = [v for g, v in grads_and_vars if g is not None]
        self._check_local(local_vars)
        done = self._average(average, local_vars, global_step)
        chief_init_ops = []
        for accum, device in self._accumulator_list:
            with graph.device(device):
                chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
        self._chief_init_op = control_flow_ops.group(*chief_init_ops)
        return control_flow_ops.group(done, local_update)

    def _average(self, average, local_vars, global_step):
        """When ``average``: push the local variables (worker), take their mean into the global
        ones (the chief, on their ps), hand out tokens or wait for one (the global step's ps),
        copy the global variables back (worker)."""
        graph = get_default_graph()
        global_vars = [self._global_map[v] for v in local_vars]
        with graph.colocate_with(global_step):
            sync_queue = data_flow_ops.FIFOQueue(-1, [dtypes.bool], shapes=[[]],
                                                 shared_name="sync_queue")
            tokens = array_ops.fill([self._num_worker - 1], constant_op.constant(False))
        accums = []
        with graph.name_scope(None), graph.name_scope(self._name + "/global"):
            for var, gvar in zip(local_vars, global_vars):
                with graph.device(gvar.device):
                    accum = data_flow_ops.ConditionalAccumulator(
                        var.dtype.base_dtype, shape=var.get_shape(),
                        shared_name=gvar.name + "/var_accum")
                accums.append(accum)
                self._accumulator_list.append((accum, gvar.device))

        indices = range(len(local_vars))
        values, pushed = _device_cond.per_task(
            indices, lambda i: local_vars[i].device, average,
            lambda idx: [local_vars[i].read_value() for i in idx], "read_local")

        def push(idx):
            out = [accums[i].apply_grad(values[i], local_step=global_step) for i in idx]
            if not self._is_chief:
                return out
            with graph.control_dependencies(out):
                return [state_ops.assign(global_vars[i],
                                         accums[i].take_grad(self._num_worker)).op for i in idx]
        _, averaged = _device_cond.per_task(indices, lambda i: global_vars[i].device, average,
                                            push, "push_local", pushed)

        def sync():
            if not self._is_chief:
                return [sync_queue.dequeue()]
            increment = state_ops.assign_add(global_step, 1)
            with graph.control_dependencies([increment]):
                return [sync_queue.enqueue_many(tokens)]
        with graph.control_dependencies(averaged):
            synced = _device_cond.op_of(_device_cond.cond_on(global_step.device, average, sync,
                                                             "sync_token"))
        new_values, _ = _device_cond.per_task(
            indices, lambda i: global_vars[i].device, average,
            lambda idx: [global_vars[i].read_value() for i in idx], "read_global", [synced])
        _, copied = _device_cond.per_task(
            indices, lambda i: local_vars[i].device, average,
            lambda idx: [state_ops.assign(local_vars[i], new_values[i]).op for i in idx],
            "copy_global")
        return control_flow_ops.group(*copied)

    def get_init_op(self):
        """The op copying every global variable into its local one (run before training)."""
        return self._local_vars_update(variables.trainable_variables())

    def make_session_run_hook(self):
        """The hook that starts this worker from the global variables."""
        return _ModelAverageOptimizerHook(self, self._is_chief)


class _ModelAverageOptimizerHook(session_run_hook.SessionRunHook):
    """Runs the chief's accumulator init (on the chief) and ``get_init_op()`` once the session
    is created."""

    def __init__(self, ma_optimizer, is_chief):
        self._ma_optimizer = ma_optimizer
        self._is_chief = is_chief

    def begin(self):
        self._chief_init_op = self._ma_optimizer._chief_init_op if self._is_chief else None
        self._variable_init_op = self._ma_optimizer.get_init_op()

    def after_create_session(self, session, coord):
        if self._chief_init_op is not None:
            session.run(self._chief_init_op)
        session.run(self._variable_init_op)


__all__ = ["GLOBAL_VARIABLE_NAME", "ModelAverageCustomGetter", "ModelAverageOptimizer"]
