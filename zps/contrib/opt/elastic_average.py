"""``ElasticAverageOptimizer``: Elastic Averaging SGD (EASGD, Zhang, Choromanska & LeCun 2015).

As TF1's ``tf.contrib.opt.ElasticAverageOptimizer``: each worker trains local copies of the
trainable variables (``ElasticAverageCustomGetter`` makes them, in LOCAL_VARIABLES on the worker,
with a ``global_center_variable/<name>`` on the ps and a ``local_center_variable/<name>`` on the
worker). The loss gets ``rho * sum(l2_loss(v - local_center))``; every ``communication_period``
local steps the worker reads the centre into its local centre and moves both toward each other:

    diff = v - center;   v -= moving_rate * diff;   center += moving_rate * diff

and increments the global step (so the global step counts communications, as TF1's does).
``moving_rate`` defaults to ``BETA / communication_period / num_worker``, ``rho`` to
``moving_rate / learning_rate``. The session hook ``make_session_run_hook(is_chief,
task_index)`` starts every worker from the centre; ``swapping_saver()`` saves the centre under the
model's own names (for evaluation and serving).

The exchange is one ``tf.cond`` per task involved (see _device_cond.py): on a step that does not
communicate, no variable travels between the worker and the ps.

>>> import zps as tf
>>> getter = tf.contrib.opt.ElasticAverageCustomGetter("/job:worker/task:0")
"""

from zps.contrib.opt import _device_cond, _local_copies
from zps.contrib.opt._local_copies import GLOBAL_VARIABLE_NAME
from zps.framework import constant as constant_op
from zps.framework import dtypes
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import (
    array_ops,
    control_flow_ops,
    data_flow_ops,
    math_ops,
    nn_ops,
    state_ops,
    variables,
)
from zps.train import saver
from zps.train.optimizer import Optimizer

LOCAL_VARIABLE_NAME = "local_center_variable"
GLOBAL_STEP = "global_step"


class ElasticAverageCustomGetter(_local_copies.CustomGetter):
    """A custom getter making each trainable variable a local one on ``worker_device``, with its
    global centre (placed by the enclosing device setter, normally on a ps) and local centre.

    Use it with ``tf.get_variable`` under ``tf.variable_scope("", custom_getter=...)`` and
    ``tf.train.replica_device_setter``; non-trainable variables pass through (local ones are put
    on the worker).
    """

    COMPANION = LOCAL_VARIABLE_NAME

    def __init__(self, worker_device):
        super().__init__(worker_device)
        self._local_map = self._companion_map   # local variable -> its local centre

    def __call__(self, getter, name, trainable, collections, *args, **kwargs):
        if not trainable and collections is not None and GraphKeys.LOCAL_VARIABLES in collections:
            with get_default_graph().device(self._worker_device):
                return super().__call__(getter, name, trainable, collections, *args, **kwargs)
        return super().__call__(getter, name, trainable, collections, *args, **kwargs)


class ElasticAverageOptimizer(_local_copies.LocalCopyOptimizer):
    """Wrap ``opt`` (which updates the local variables) with EASGD's elastic exchange."""

    BETA = 0.9   # the paper's default

    def __init__(self, opt, num_worker, ea_custom_getter, communication_period=10,
                 moving_rate=None, rho=None, use_locking=True, synchronous=False,
                 name="ElasticAverageOptimizer"):
        if rho is None and not isinstance(getattr(opt, "_learning_rate", None), int | float):
            raise ValueError("ElasticAverageOptimizer's default rho is moving_rate / the wrapped "
                             "optimizer's learning rate, but %s has no plain number for one: "
                             "pass rho" % type(opt).__name__)
        super().__init__(opt, num_worker, ea_custom_getter, communication_period, use_locking,
                         name)
        self._local_map = ea_custom_getter._local_map
        self._synchronous = synchronous
        if moving_rate is None:
            moving_rate = self.BETA / communication_period / num_worker
        self._moving_rate = moving_rate
        self._rho = self._moving_rate / self._opt._learning_rate if rho is None else rho

    def compute_gradients(self, loss, var_list=None, gate_gradients=Optimizer.GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """The wrapped optimizer's gradients of ``loss + rho * sum(l2_loss(v - local_center))``."""
        if not var_list:
            var_list = variables.trainable_variables()
        self._check_local(var_list)
        distance_loss = self._rho * math_ops.add_n(
            [nn_ops.l2_loss(math_ops.subtract(v, self._local_map[v])) for v in var_list])
        return self._opt.compute_gradients(loss + distance_loss, var_list, gate_gradients,
                                           aggregation_method, colocate_gradients_with_ops,
                                           grad_loss)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Update the local variables; every ``communication_period`` local steps, exchange
        with the centre (and increment ``global_step``). Returns the op doing both."""
        grads_and_vars = list(grads_and_vars)
        apply_updates = self._apply_locally(grads_and_vars)
        local_update, communicate = self._count_step(after=[apply_updates])
        local_vars = [v for g, v in grads_and_vars if g is not None]
        return control_flow_ops.group(
            self._exchange(communicate, local_vars, global_step), local_update)

    def _exchange(self, communicate, local_vars, global_step):
        """EASGD's elastic exchange of ``local_vars`` with their centres when ``communicate``:
        read the centres (their tasks), move the local variables (the worker), move the centres
        and the global step (their tasks)."""
        graph = get_default_graph()
        centers = [self._global_map[v] for v in local_vars]
        rate = self._moving_rate
        indices = range(len(local_vars))
        read, _ = _device_cond.per_task(
            indices, lambda i: centers[i].device, communicate,
            lambda idx: [centers[i].read_value() for i in idx], "read_center")

        def move_local(idx):
            diffs = []
            for i in idx:
                v, lc = local_vars[i], self._local_map[local_vars[i]]
                with graph.control_dependencies([state_ops.assign(lc, read[i])]):
                    diff = math_ops.subtract(v, lc)
                with graph.control_dependencies([state_ops.assign_sub(v, rate * diff)]):
                    diffs.append(array_ops.identity(diff))
            return diffs
        diffs, local_ops = _device_cond.per_task(
            indices, lambda i: local_vars[i].device, communicate, move_local, "move_local")
        # The global step goes with the centres of its task, or gets a cond of its own.
        items = list(indices) + ([None] if global_step is not None else [])
        _, center_ops = _device_cond.per_task(
            items, lambda i: global_step.device if i is None else centers[i].device,
            communicate,
            lambda idx: [state_ops.assign_add(global_step, 1).op if i is None else
                         state_ops.assign_add(centers[i], rate * diffs[i]).op for i in idx],
            "move_center")
        return control_flow_ops.group(*(local_ops + center_ops))

    def get_init_op(self, task_index):
        """The op setting every local variable and local centre to the global centre (with
        ``synchronous``, then waiting until all ``num_worker`` workers did)."""
        local_vars = variables.trainable_variables()
        if not local_vars or any(v not in self._global_map for v in local_vars):
            raise ValueError("The lists of local_variables, global_center_variables, "
                             "local_center_variables should not be empty: create the model's "
                             "variables with tf.get_variable under the ElasticAverageCustomGetter")
        init_ops = []
        for v in local_vars:
            init_ops.append(state_ops.assign(v, self._global_map[v]))
            init_ops.append(state_ops.assign(self._local_map[v], self._global_map[v]))
        init_op = control_flow_ops.group(*init_ops)
        if not self._synchronous:
            return init_op
        return _barrier(self._num_worker, task_index, [init_op],
                        self._global_map[local_vars[0]])

    def make_session_run_hook(self, is_chief, task_index):
        """The hook that starts this worker from the centre once its session is created."""
        return _local_copies.InitHook(self, task_index)   # the same on the chief

    def swapping_saver(self, var_list=None, name="swapping_saver", **kwargs):
        """A ``tf.train.Saver`` saving each trainable variable's global centre under the
        variable's own name (the model to evaluate or serve)."""
        if not self._global_map:
            raise RuntimeError("global_center_variable is empty, please make sure this is called "
                               "after model created and ElasticAverageCustomGetter is used when "
                               "declaring you model")
        if var_list is None:
            var_list = variables.trainable_variables()
        if not isinstance(var_list, dict):
            var_list = {v.op.name if hasattr(v, "op") else v.name: v for v in var_list}
        swapped = {}
        for key, var in var_list.items():
            parts = _local_copies.parts(var)
            if len(parts) == 1 and parts[0] is var:
                swapped[key] = self._global_map.get(var, var)
            else:
                swapped[key] = [self._global_map.get(p, p) for p in parts]
        return saver.Saver(swapped, name=name, **kwargs)


def _barrier(num_worker, task_index, after, center):
    """TF1's init barrier: after ``after``, put a token in every other worker's queue, then take
    one from each other worker from this worker's queue. The queues are next to ``center`` (a
    global centre, on a ps), where every worker finds them."""
    with get_default_graph().colocate_with(center):
        queues = [data_flow_ops.FIFOQueue(num_worker, [dtypes.bool], shapes=[[]],
                                          shared_name="variable_init_sync_queue%d" % i)
                  for i in range(num_worker)]
    token = constant_op.constant(False)
    ops = []
    with get_default_graph().control_dependencies(after):
        for i, q in enumerate(queues):
            ops.append(control_flow_ops.no_op() if i == task_index else q.enqueue(token))
    ops.append(queues[task_index].dequeue_many(num_worker - 1))
    return control_flow_ops.group(*ops)


__all__ = ["ElasticAverageCustomGetter", "ElasticAverageOptimizer", "GLOBAL_VARIABLE_NAME",
           "LOCAL_VARIABLE_NAME"]
