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

from zps.contrib.opt import _device_cond
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import array_ops, control_flow_ops, math_ops, state_ops, variable_scope, variables
from zps.train import session_run_hook
from zps.train.optimizer import Optimizer

GLOBAL_VARIABLE_NAME = "global_center_variable"
GRAD_VARIABLE_NAME = "grad_variable"


class AGNCustomGetter:
    """A custom getter making each trainable variable a local one on ``worker_device``, with its
    global centre (placed by the enclosing device setter, normally on a ps) and its gradient
    accumulator on the worker."""

    def __init__(self, worker_device):
        self._worker_device = worker_device
        self._global_map = {}   # local variable -> its global centre
        self._grad_map = {}     # local variable -> its accumulated gradient

    def __call__(self, getter, name, trainable, collections, *args, **kwargs):
        if not trainable:
            return getter(name, *args, trainable=trainable, collections=collections, **kwargs)
        graph = get_default_graph()
        with graph.device(self._worker_device):
            local_var = getter(name, *args, trainable=True,
                               collections=[GraphKeys.LOCAL_VARIABLES], **kwargs)
        if kwargs.get("reuse") is True:
            return local_var
        global_center = getter("%s/%s" % (GLOBAL_VARIABLE_NAME, name), *args, trainable=False,
                               collections=[GraphKeys.GLOBAL_VARIABLES], **kwargs)
        with graph.device(self._worker_device):
            grad_var = getter("%s/%s" % (GRAD_VARIABLE_NAME, name), *args, trainable=False,
                              collections=[GraphKeys.LOCAL_VARIABLES], **kwargs)
        parts = (lambda v: list(v) if hasattr(v, "_get_variable_list") else [v])
        for lv, gv, gc in zip(parts(local_var), parts(grad_var), parts(global_center)):
            self._grad_map[lv] = gv
            self._global_map[lv] = gc
        return local_var


class AGNOptimizer(Optimizer):
    """Wrap ``optimizer`` with AGN: local steps, and every ``communication_period`` steps the
    mean accumulated gradient applied to the global variables."""

    def __init__(self, optimizer, num_worker, custom_getter, communication_period=10,
                 use_locking=True, name="AGNOptimizer"):
        super().__init__(use_locking, name)
        self._opt = optimizer
        self._num_worker = num_worker
        self._period = communication_period
        self._global_map = custom_getter._global_map
        self._grad_map = custom_getter._grad_map
        self._global_state = {}   # the optimizer's own variables for the global update
        self._local_step = variable_scope.get_variable(
            "local_step", initializer=0, trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES])
        self._opt._prepare()

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

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
        graph = get_default_graph()
        local_vars = [v for g, v in grads_and_vars if g is not None]
        grads = [g for g, v in grads_and_vars if g is not None]
        missing = [v.name for v in local_vars if v not in self._global_map]
        if missing:
            raise ValueError("AGNOptimizer: no global variable for %s: create the trainable "
                             "variables with tf.get_variable under the AGNCustomGetter given to "
                             "this optimizer" % ", ".join(missing))
        # theta -= lr * grad, with the optimizer's variables (slots, beta powers) local ones.
        global_old = {v.op.name for v in variables.global_variables()}
        local_update_op = self._opt.apply_gradients(grads_and_vars)
        global_ref = graph.get_collection_ref(GraphKeys.GLOBAL_VARIABLES)
        created = [v for v in global_ref if v.op.name not in global_old]
        global_ref[:] = [v for v in global_ref if v.op.name in global_old]
        graph.get_collection_ref(GraphKeys.LOCAL_VARIABLES).extend(created)
        # a += grad
        grad_vars = [self._grad_map[v] for v in local_vars]
        update_ops = [local_update_op] + [state_ops.assign_add(a, g).op
                                          for g, a in zip(grads, grad_vars)]
        local_update = state_ops.assign_add(self._local_step, 1, name="local_step_update").op
        with graph.control_dependencies([local_update]):
            communicate = math_ops.equal(math_ops.floormod(self._local_step, self._period), 0)
        with graph.control_dependencies(update_ops):
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
        return _AGNOptimizerHook(self, is_chief, task_index)


class _AGNOptimizerHook(session_run_hook.SessionRunHook):
    """Runs ``get_init_op(task_index)`` once the session is created."""

    def __init__(self, agn_optimizer, is_chief, task_index):
        self._agn_optimizer = agn_optimizer
        self._is_chief = is_chief
        self._task_index = task_index

    def begin(self):
        self._variable_init_op = self._agn_optimizer.get_init_op(self._task_index)

    def after_create_session(self, session, coord):
        session.run(self._variable_init_op)


__all__ = ["AGNCustomGetter", "AGNOptimizer", "GLOBAL_VARIABLE_NAME", "GRAD_VARIABLE_NAME"]
