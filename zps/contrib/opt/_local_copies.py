"""Local copies of the trainable variables, for the parameter-server optimizers of ``tf.contrib.opt``.

``AGNOptimizer``, ``ElasticAverageOptimizer`` and ``ModelAverageOptimizer`` (as TF1's) train each
worker's own copy of every trainable variable: their custom getters make it, in LOCAL_VARIABLES
on the worker, next to its global centre ``global_center_variable/<name>`` (placed by the
enclosing device setter, normally on a ps). The wrapped optimizer updates the copies; every
``period`` local steps the worker communicates with the centres (one ``tf.cond`` per task, see
_device_cond.py). What the three share is here: the getter, the local step and its predicate,
and the hook starting a worker from the centres.
"""

from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import math_ops, state_ops, variable_scope
from zps.train import session_run_hook
from zps.train.optimizer import Optimizer

GLOBAL_VARIABLE_NAME = "global_center_variable"


def parts(var):
    """The variables of ``var``: its partitions, or itself."""
    return list(var) if hasattr(var, "_get_variable_list") else [var]


class CustomGetter:
    """A custom getter making each trainable variable a local one on ``worker_device`` (with
    ``reuse=True``, only that), its global centre (``_global_map``: local variable or partition
    -> its centre) and, where the subclass names a ``COMPANION`` (TF1's ``grad_variable``,
    ``local_center_variable``), a second local variable ``<COMPANION>/<name>`` on the worker
    (``_companion_map``). Non-trainable variables pass through."""

    COMPANION = None

    def __init__(self, worker_device):
        self._worker_device = worker_device
        self._global_map = {}
        self._companion_map = {}

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
        self._global_map.update(zip(parts(local_var), parts(global_center)))
        if self.COMPANION is not None:
            with graph.device(self._worker_device):
                companion = getter("%s/%s" % (self.COMPANION, name), *args, trainable=False,
                                   collections=[GraphKeys.LOCAL_VARIABLES], **kwargs)
            self._companion_map.update(zip(parts(local_var), parts(companion)))
        return local_var


class LocalCopyOptimizer(Optimizer):
    """The base of the three: ``opt`` updates the local copies made by ``custom_getter``; a
    ``local_step`` (a local variable) counts its steps; every ``period``-th communicates."""

    def __init__(self, opt, num_worker, custom_getter, period, use_locking, name):
        super().__init__(use_locking, name)
        self._opt = opt
        self._num_worker = num_worker
        self._getter = custom_getter
        self._global_map = custom_getter._global_map
        self._period = period
        self._local_step = variable_scope.get_variable(
            "local_step", initializer=0, trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES])
        self._opt._prepare()

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def _check_local(self, local_vars):
        """Raise unless every one of ``local_vars`` was made by this optimizer's getter."""
        missing = [v.name for v in local_vars if v not in self._global_map]
        if missing:
            raise ValueError("%s: no global centre for %s: create the trainable variables with "
                             "tf.get_variable under the %s given to this optimizer"
                             % (type(self).__name__, ", ".join(missing),
                                type(self._getter).__name__))

    def _apply_locally(self, grads_and_vars):
        """The wrapped optimizer's update of the local variables; the variables it makes (slots,
        Adam's beta powers) are this worker's too: moved from GLOBAL_VARIABLES to
        LOCAL_VARIABLES, as TF1 does."""
        graph = get_default_graph()
        global_ref = graph.get_collection_ref(GraphKeys.GLOBAL_VARIABLES)
        global_old = {v.op.name for v in global_ref}
        update = self._opt.apply_gradients(grads_and_vars)
        created = [v for v in global_ref if v.op.name not in global_old]
        global_ref[:] = [v for v in global_ref if v.op.name in global_old]
        graph.get_collection_ref(GraphKeys.LOCAL_VARIABLES).extend(created)
        return update

    def _count_step(self, after=()):
        """The op adding one to the local step (after the ops ``after``), and whether this step
        communicates: the local step, then, a multiple of the period."""
        graph = get_default_graph()
        with graph.control_dependencies(list(after)):
            local_update = state_ops.assign_add(self._local_step, 1,
                                                name="local_step_update").op
        with graph.control_dependencies([local_update]):
            due = math_ops.equal(math_ops.floormod(self._local_step, self._period), 0)
        return local_update, due


class InitHook(session_run_hook.SessionRunHook):
    """Runs ``optimizer.get_init_op(task_index)`` once the session is created."""

    def __init__(self, optimizer, task_index):
        self._optimizer = optimizer
        self._task_index = task_index

    def begin(self):
        self._variable_init_op = self._optimizer.get_init_op(self._task_index)

    def after_create_session(self, session, coord):
        session.run(self._variable_init_op)
