"""``replica_device_setter``: a device function that puts variables on ps tasks, the rest on a worker.

Variables (the ops of ``ps_ops``) go to the tasks of the ps job in round-robin order of creation
(or as ``ps_strategy`` says); every other op goes to ``worker_device``. Fields an inner
``tf.device`` already set win over the setter's (TF1's merge rule). Optimizer slots, update ops and
variable initializers are colocated with their variable, so they follow it to its ps task.

>>> import zps as tf
>>> cluster = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["worker0:2222"]}
>>> with tf.Graph().as_default():
...     with tf.device(tf.train.replica_device_setter(cluster=cluster)):
...         v1 = tf.Variable([1.0], name="v1")
...         v2 = tf.Variable([2.0], name="v2")
...         v3 = tf.Variable([3.0], name="v3")
...         total = v1 + v2 + v3
...     print(v1.device, v2.device, v3.device, total.device)
/job:ps/task:0 /job:ps/task:1 /job:ps/task:0 /job:worker
"""

import hashlib
import logging
import weakref

import numpy as np

from zps.distributed.cluster_spec import ClusterSpec
from zps.framework.device import DeviceSpec
from zps.framework.tensor_shape import as_shape

_logger = logging.getLogger(__name__)

# The op types placed on ps tasks by default: TF1's list (ops zps does not have are harmless).
STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
    "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
    "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp", "ResourceConditionalAccumulator",
    "DecisionTreeResource",
)


class _PerGraph:
    """Strategy state kept per graph: a device function reused to build a second graph places
    that graph's variables exactly as the first (TF1 would continue the first graph's count)."""

    def __init__(self, make):
        self._make = make
        self._by_graph = weakref.WeakKeyDictionary()
        self._other = None  # ops without a graph (NodeDefs)

    def __call__(self, op):
        graph = getattr(op, "graph", None)
        if graph is None:
            if self._other is None:
                self._other = self._make()
            return self._other
        state = self._by_graph.get(graph)
        if state is None:
            state = self._by_graph[graph] = self._make()
        return state


class _RoundRobinStrategy:
    """The next ps task index, cycling over ``num_tasks`` in order of creation (TF1's default)."""

    def __init__(self, num_tasks):
        self._num_tasks = int(num_tasks)
        self._next_task = _PerGraph(lambda: [0])

    def __call__(self, op):
        counter = self._next_task(op)
        task = counter[0]
        counter[0] = (task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Places each ps op on the least-loaded ps task so far, the load of an op given by ``load_fn``.

    Greedy in creation order (ties go to the lowest task index), so every client building the same
    graph gets the same placement. ``byte_size_load_fn`` balances the bytes stored on each task.

    >>> import zps as tf
    >>> greedy = tf.train.GreedyLoadBalancingStrategy(2, tf.train.byte_size_load_fn)
    >>> with tf.Graph().as_default():
    ...     with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=greedy)):
    ...         big = tf.Variable(tf.zeros([100, 100]))
    ...         small = [tf.Variable(tf.zeros([10])) for _ in range(3)]
    ...     print(big.device, [v.device for v in small])
    /job:ps/task:0 ['/job:ps/task:1', '/job:ps/task:1', '/job:ps/task:1']
    """

    def __init__(self, num_tasks, load_fn):
        self._num_tasks = int(num_tasks)
        self._load_fn = load_fn
        self._loads = _PerGraph(lambda: np.zeros(self._num_tasks))

    def __call__(self, op):
        loads = self._loads(op)
        task = int(np.argmin(loads))
        loads[task] += self._load_fn(op)
        return task


class RandomStrategy:
    """A ps task chosen by a hash (MD5) of the op's name and ``seed``: deterministic across runs."""

    def __init__(self, num_ps_tasks, seed=0):
        self._num_tasks = int(num_ps_tasks)
        self._seed = seed

    def __call__(self, op):
        key = ("%s_%d" % (op.name, self._seed)).encode("utf-8")
        return int(int(hashlib.md5(key).hexdigest(), 16) % self._num_tasks)


def byte_size_load_fn(op):
    """The bytes of the single output of ``op`` (e.g. a variable): elements x dtype size.

    Raises ValueError if ``op`` has not exactly one output or its shape is not fully defined.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.train.byte_size_load_fn(tf.Variable(tf.zeros([3, 4])).op))
    48
    """
    if len(op.outputs) != 1:
        raise ValueError("byte_size_load_fn: op %s (%s) must have a single output, it has %d"
                         % (op.name, op.type, len(op.outputs)))
    output = op.outputs[0]
    shape = output.get_shape()
    if not shape.is_fully_defined():
        try:  # a variable's declared shape (TF1: scalar Variables had no output shape yet)
            shape = as_shape(op.get_attr("shape"))
        except ValueError:
            pass
    if not shape.is_fully_defined():
        raise ValueError("byte_size_load_fn: the shape %s of op %s (%s) is not fully defined, so "
                         "its size is unknown; give the variable a full shape or use another "
                         "load_fn" % (shape, op.name, op.type))
    return shape.num_elements() * output.dtype.size


def _op_type(op):
    # Device functions also receive NodeDefs (TF1's node_def.op); zps's NodeDef reads as attributes.
    return op.type if hasattr(op, "type") else op.op


class _ReplicaDeviceChooser:
    """The device function of ``replica_device_setter`` (not for direct use)."""

    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy

    def device_function(self, op):
        """The device of ``op``: its own fields, completed from the ps or the worker device."""
        # Without merging, a device set by an inner scope is kept as it is.
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and _op_type(op) in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            # A task is chosen only when the op stays in the ps job (an inner scope may have put
            # it in another job, whose tasks the strategy knows nothing about).
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.merge_from(current).to_string()
        return DeviceSpec.from_string(self._worker_device or "").merge_from(current).to_string()


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for ``tf.device`` that places variables on ps tasks and the rest on a
    worker; None when there is no ps (``ps_tasks`` is 0 and ``cluster`` has no ps job).

    ``cluster`` (a ClusterSpec or a dict) gives the number of ps tasks (``ps_tasks`` is then
    ignored). ``ps_ops``: the op types to put on ps tasks (default ``STANDARD_PS_OPS``).
    ``ps_strategy(op) -> task index``: default round-robin in creation order, so every worker
    building the same graph maps each variable to the same task.

    >>> import zps as tf
    >>> print(tf.train.replica_device_setter(cluster={"worker": ["localhost:2222"]}))
    None
    >>> with tf.Graph().as_default():
    ...     with tf.device(tf.train.replica_device_setter(ps_tasks=2,
    ...                                                   worker_device="/job:worker/task:1")):
    ...         w = tf.Variable(1.0, name="w")
    ...         y = w * 2.0
    ...     print(w.device, y.device)
    /job:ps/task:0 /job:worker/task:1
    """
    if cluster is not None:
        jobs = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)).as_dict()
        ps_job_name = DeviceSpec.from_string(ps_device or "").job
        if ps_job_name not in jobs or jobs[ps_job_name] is None:
            return None
        ps_tasks = len(jobs[ps_job_name])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = STANDARD_PS_OPS
    if not merge_devices:
        _logger.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                        "replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable (op -> ps task index), got %r"
                        % (ps_strategy,))
    return _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops,
                                 ps_strategy).device_function


__all__ = ["replica_device_setter", "GreedyLoadBalancingStrategy", "byte_size_load_fn"]
