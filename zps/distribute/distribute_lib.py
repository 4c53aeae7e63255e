"""The base of ``tf.distribute`` (TF 1.15's distribute_lib.py, graph mode): contexts, Strategy,
StrategyExtended, ReplicaContext, InputContext, and the default strategy.

Where code runs decides what it sees (as TF):

- outside every strategy scope: the *default* strategy (one replica); ``get_replica_context()``
  is its ReplicaContext (``merge_call`` works), ``in_cross_replica_context()`` is False;
- in ``with strategy.scope():``: cross-replica context, ``get_replica_context()`` is None;
- in ``strategy.extended.call_for_each_replica(fn)`` (``experimental_run_v2``): ``fn`` runs once
  per replica in a replica context; ``merge_call`` gathers the replicas back into cross-replica
  context for one function (e.g. an optimizer's update).

The current context is per graph and per thread (kept with the graph's other scopes).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     s = tf.distribute.OneDeviceStrategy("/cpu:0")
...     print(tf.distribute.has_strategy(), tf.distribute.in_cross_replica_context())
...     with s.scope():
...         print(tf.distribute.get_strategy() is s, tf.distribute.in_cross_replica_context())
...         ids = s.experimental_run_v2(
...             lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
...     print(ids)
False False
True True
0
"""

import contextlib
import enum
import logging
import threading
import weakref

from zps import nest
from zps.distribute import reduce_util
from zps.distribute.reduce_util import ReduceOp
from zps.framework.graph import get_default_graph
from zps.ops import array_ops, control_flow_ops
from zps.ops import variable_scope as vs
from zps.ops.variable_scope import variable_creator_scope

_logger = logging.getLogger(__name__)


# -- the per-thread mode: which strategy, and replica or cross-replica context -------------------
class _ThreadMode:
    def __init__(self, strategy, cross_replica_context, replica_context):
        self.strategy = strategy
        self.cross_replica_context = cross_replica_context
        self.replica_context = replica_context


def _mode_stack():
    return get_default_graph()._tl("distribution_strategy_stack")


def _get_per_thread_mode():
    stack = _mode_stack()
    return stack[-1] if stack else _default_replica_mode()


@contextlib.contextmanager
def _thread_mode(mode):
    stack = _mode_stack()
    stack.append(mode)
    try:
        yield
    finally:
        stack.pop()


def _cross_replica_mode(strategy):
    return _ThreadMode(strategy, strategy, None)


def get_replica_context():
    """The current ReplicaContext: the default one outside any strategy, None in cross-replica
    context (in a ``strategy.scope()``), the replica's inside ``call_for_each_replica``."""
    return _get_per_thread_mode().replica_context


def get_cross_replica_context():
    """The current strategy in cross-replica context, else None."""
    return _get_per_thread_mode().cross_replica_context


def in_cross_replica_context():
    """Whether the code runs in cross-replica context (in a strategy's scope, outside its
    replica functions, or in a ``merge_call``)."""
    return _get_per_thread_mode().cross_replica_context is not None


def get_strategy():
    """The current Strategy: the one whose scope or replica function this is, else the default
    strategy (one replica, no distribution)."""
    return _get_per_thread_mode().strategy


def has_strategy():
    """Whether a (non-default) strategy is in force here."""
    return get_strategy() is not _get_default_strategy()


def get_loss_reduction():
    """The ReduceOp the optimizer scales the loss for (TF 1.15): SUM, unless the strategy was
    told to scale losses as the Estimator does (``_scale_loss_for_estimator``); then MEAN unless
    the last ``tf.losses`` reduction was SUM."""
    if not get_strategy()._scale_loss_for_estimator:
        return ReduceOp.SUM
    # (tf.losses' Reduction.SUM is "weighted_sum"; Keras' is "sum")
    last = getattr(get_default_graph(), "_last_loss_reduction", None)
    if last in ("weighted_sum", "sum"):
        return ReduceOp.SUM
    return ReduceOp.MEAN


def aggregate_across_replicas(metrics_collections, metric_value_fn, *args):
    """TF 1.15's ``metrics_impl._aggregate_across_replicas``: a metric's value computed once,
    by ``metric_value_fn(strategy, *args)`` in cross-replica context (where its ON_READ
    variables read as their aggregate), and added to ``metrics_collections``; every replica
    gets that one tensor. Outside any strategy it is simply computed."""
    def fn(strategy, *a):
        value = metric_value_fn(strategy, *a)
        if metrics_collections:
            get_default_graph().add_to_collections(metrics_collections, value)
        return value
    ctx = get_replica_context()
    if ctx is None:
        return fn(get_strategy(), *args)
    return ctx.merge_call(fn, args=args)


# -- updates: which copy of a distributed variable an update touches ------------------------------
_update_local = threading.local()


class UpdateContext:
    """While a strategy updates the copy of a variable on ``device`` (``extended.update``),
    reads of distributed variables select their copy on that device."""

    def __init__(self, device):
        self._device = device

    def __enter__(self):
        self._old = getattr(_update_local, "device", None)
        _update_local.device = self._device

    def __exit__(self, *exc):
        _update_local.device = self._old


def get_update_device():
    """The device being updated (inside ``extended.update``), else None."""
    return getattr(_update_local, "device", None)


# -- errors ---------------------------------------------------------------------------------------
def _wrong_strategy_scope(strategy, context):
    if not has_strategy():
        raise RuntimeError('Need to be inside "with strategy.scope()" for %s' % (strategy,))
    raise RuntimeError("Mixing different tf.distribute.Strategy objects: %s is not %s"
                       % (context.strategy, strategy))


def require_replica_context(replica_ctx):
    """Raise TF's RuntimeError unless ``replica_ctx`` is the current replica context."""
    context = _get_per_thread_mode()
    if context.replica_context is replica_ctx:
        return
    if context.replica_context is None:
        raise RuntimeError("Need to be inside `call_for_each_replica()`")
    if context.strategy is replica_ctx.strategy:
        raise RuntimeError("Mismatching ReplicaContext.")
    raise RuntimeError("Mismatching tf.distribute.Strategy objects: %s is not %s."
                       % (context.strategy, replica_ctx.strategy))


def _require_cross_replica_or_default_context_extended(extended):
    context = _get_per_thread_mode()
    cross_replica = context.cross_replica_context
    if cross_replica is not None and cross_replica.extended is extended:
        return
    if context is _default_replica_mode():
        return
    strategy = extended._container_strategy()
    if context.strategy is not strategy:
        _wrong_strategy_scope(strategy, context)
    raise RuntimeError("Method requires being in cross-replica context, use "
                       "get_replica_context().merge_call()")


# -- scope -------------------------------------------------------------------------------------
class _CurrentDistributionContext:
    """``strategy.scope()``: cross-replica context, the strategy's variable creator and its
    default device. Re-entering the same strategy's scope is allowed; another's is not."""

    def __init__(self, strategy, var_creator, default_device=None):
        self._strategy = strategy
        self._var_creator = var_creator
        self._default_device = default_device
        self._entered = []

    def _drop_partitioner(self, getter, *args, **kwargs):
        # TF 1.15: only strategies that place variables on parameter devices keep partitioners.
        if kwargs.get("partitioner") is not None and \
                not self._strategy.extended._allow_variable_partition():
            kwargs["partitioner"] = None
            _logger.warning("Partitioned variables are disabled when using current "
                            "tf.distribute.Strategy.")
        return getter(*args, **kwargs)

    def __enter__(self):
        if has_strategy():
            _require_cross_replica_or_default_context_extended(self._strategy.extended)
            self._entered.append(None)
            return self._strategy
        graph = get_default_graph()
        stack = contextlib.ExitStack()
        stack.enter_context(graph.as_default())
        stack.enter_context(_thread_mode(_cross_replica_mode(self._strategy)))
        stack.enter_context(variable_creator_scope(self._var_creator))
        stack.enter_context(vs._pure_variable_scope(vs.get_variable_scope(),
                                                    custom_getter=self._drop_partitioner))
        if self._default_device:
            stack.enter_context(graph.device(self._default_device))
        self._entered.append(stack)
        return self._strategy

    def __exit__(self, *exc):
        stack = self._entered.pop()
        if stack is not None:
            stack.__exit__(*exc)


# -- input -------------------------------------------------------------------------------------
class InputReplicationMode(enum.Enum):
    """How ``make_input_fn_iterator`` replicates input: PER_WORKER (input_fn once per worker)."""

    PER_WORKER = "PER_WORKER"


class InputContext:
    """What an ``input_fn`` of ``make_input_fn_iterator`` is told: how many input pipelines
    there are, which one this is, and how many replicas train in sync.

    >>> import zps as tf
    >>> ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
    ...                                  num_replicas_in_sync=4)
    >>> ctx.get_per_replica_batch_size(32), ctx.input_pipeline_id
    (8, 1)
    """

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    num_replicas_in_sync = property(lambda self: self._num_replicas_in_sync)
    input_pipeline_id = property(lambda self: self._input_pipeline_id)
    num_input_pipelines = property(lambda self: self._num_input_pipelines)

    def get_per_replica_batch_size(self, global_batch_size):
        """``global_batch_size // num_replicas_in_sync`` (which must divide it)."""
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError("The `global_batch_size` %r is not divisible by "
                             "`num_replicas_in_sync` %r " % (global_batch_size,
                                                             self._num_replicas_in_sync))
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return (f"tf.distribute.InputContext(input pipeline id {self.input_pipeline_id}, "
                f"total: {self.num_input_pipelines})")


# -- Strategy ----------------------------------------------------------------------------------
class Strategy:
    """A way to run a computation on several devices or machines (TF 1.15's ``tf.distribute.
    Strategy``, graph mode): variables made in ``scope()`` are distributed, ``experimental_run_v2``
    runs a function once per replica, ``reduce`` combines per-replica results."""

    def __init__(self, extended):
        self._extended = extended
        # The Estimator sets this for train_distribute: the optimizer then scales MEAN losses.
        self._scale_loss_for_estimator = False

    @property
    def extended(self):
        """The StrategyExtended: the lower-level API (call_for_each_replica, update ...)."""
        return self._extended

    @property
    def num_replicas_in_sync(self):
        """How many replicas compute in lock step (whose gradients are combined)."""
        return self._extended._num_replicas_in_sync

    def scope(self):
        """A context manager: variables created in it are distributed by this strategy, and
        the code in it runs in cross-replica context."""
        return self._extended._scope(self)

    def colocate_vars_with(self, colocate_with_variable):
        """Variables created in the block are placed as ``colocate_with_variable``."""
        return self._extended.colocate_vars_with(colocate_with_variable)

    def make_dataset_iterator(self, dataset):
        """An iterator whose ``get_next()`` gives each replica its part of each batch of
        ``dataset``: TF 1.15's rebatching, ``batch(size)`` read as ``batch(ceil(size /
        num_replicas_in_sync))`` (see zps/distribute/input_lib.py)."""
        return self._extended._make_dataset_iterator(dataset)

    def make_input_fn_iterator(self, input_fn, replication_mode=InputReplicationMode.PER_WORKER):
        """An iterator over the dataset ``input_fn(InputContext)`` returns, called once per
        worker; each replica reads its own elements (so input_fn batches per replica)."""
        if replication_mode != InputReplicationMode.PER_WORKER:
            raise ValueError("Input replication mode not supported: %r" % replication_mode)
        with self.scope():
            return self._extended._make_input_fn_iterator(input_fn, replication_mode)

    def experimental_distribute_dataset(self, dataset):
        """``dataset`` distributed over the replicas (each batch split as make_dataset_iterator
        does): call ``make_initializable_iterator()`` or ``make_one_shot_iterator()`` on it."""
        from zps.distribute import input_lib
        return input_lib.DistributedDataset(dataset, self)

    def experimental_make_numpy_dataset(self, numpy_input, session=None):
        """A Dataset of the slices of ``numpy_input`` (arrays or nested structures of them)."""
        from zps.data import Dataset
        return Dataset.from_tensor_slices(numpy_input)

    def experimental_make_numpy_iterator(self, numpy_input, batch_size, num_epochs=1,
                                         shuffle=1024, session=None):
        """make_dataset_iterator over ``numpy_input`` shuffled, repeated and batched (TF 1.15)."""
        ds = self.experimental_make_numpy_dataset(numpy_input, session=session)
        if shuffle:
            ds = ds.shuffle(shuffle)
        if num_epochs != 1:
            ds = ds.repeat(num_epochs)
        return self.make_dataset_iterator(ds.batch(batch_size))

    def experimental_run(self, fn, input_iterator=None):
        """``experimental_run_v2(fn, args=(input_iterator.get_next(),))`` (no args without an
        iterator)."""
        with self.scope():
            args = (input_iterator.get_next(),) if input_iterator is not None else ()
        return self.experimental_run_v2(fn, args=args)

    def experimental_run_v2(self, fn, args=(), kwargs=None):
        """Run ``fn(*args, **kwargs)`` once per replica (per-replica arguments give each
        replica its value); returns the results regrouped (PerReplica / Mirrored values)."""
        with self.scope():
            return self._extended.call_for_each_replica(fn, args=args, kwargs=kwargs)

    def reduce(self, reduce_op, value, axis=None):
        """Combine a per-replica ``value`` across replicas (in cross-replica context) into one
        Tensor; with ``axis`` each replica's value is first reduced along that axis (a MEAN is
        then the mean over all the replicas' elements)."""
        _require_cross_replica_or_default_context_extended(self._extended)
        reduce_op = reduce_util.as_reduce_op(reduce_op)
        if axis is None:
            return self._extended._reduce(reduce_op, value)
        from zps.ops import math_ops
        if reduce_op == ReduceOp.SUM:
            value = self.experimental_run_v2(lambda v: math_ops.reduce_sum(v, axis=axis),
                                             args=(value,))
            return self._extended._reduce(reduce_op, value)
        if reduce_op != ReduceOp.MEAN:
            raise TypeError("Expected `reduce_op` to be a `tf.distribute.ReduceOp`, not: %r"
                            % reduce_op)
        if not isinstance(axis, int):
            raise TypeError("Expected `axis` to be an integer not: %r" % axis)

        def mean_reduce_helper(v, axis=axis):
            numer = math_ops.reduce_sum(v, axis=axis)
            rank = v.get_shape().ndims
            if rank is not None:
                if axis < 0:
                    if axis + rank < 0:
                        raise ValueError("`axis` = %r out of range for `value` with rank %d"
                                         % (axis, rank))
                    axis += rank
                elif axis >= rank:
                    raise ValueError("`axis` = %r out of range for `value` with rank %d"
                                     % (axis, rank))
                if v.get_shape()[axis].value is not None:
                    return numer, array_ops.constant(v.get_shape()[axis].value, numer.dtype)
            elif axis < 0:
                axis = axis + array_ops.rank(v)
            return numer, math_ops.cast(array_ops.shape(v)[axis], numer.dtype)

        numer, denom = self.experimental_run_v2(mean_reduce_helper, args=(value,))
        numer = self._extended._reduce(ReduceOp.SUM, numer)
        denom = self._extended._reduce(ReduceOp.SUM, denom)
        return math_ops.truediv(numer, denom)

    def unwrap(self, value):
        """The per-device components of ``value`` as a tuple (``(value,)`` for a plain one)."""
        return self._extended._local_results(value)

    def experimental_local_results(self, value):
        """The per-device components of ``value`` as a tuple (``(value,)`` for a plain one)."""
        return self._extended._local_results(value)

    def group(self, value, name=None):
        """One op that runs every component of ``value`` (a nested structure)."""
        return self._extended._group(value, name)

    def configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        """Set up the strategy for a cluster (ParameterServerStrategy) and update
        ``session_config`` in place (update_config_proto)."""
        return self._extended._configure(session_config, cluster_spec, task_type, task_id)

    def update_config_proto(self, config_proto):
        """A copy of ``config_proto`` with what this strategy needs (e.g. device filters)."""
        return self._extended._update_config_proto(config_proto)

    def __deepcopy__(self, memo):
        # As TF: a copy (e.g. of a RunConfig holding it) whose extended belongs to the copy.
        import copy
        result = type(self).__new__(type(self))
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            setattr(result, k, copy.deepcopy(v, memo))
        result._extended._container_strategy_weakref = weakref.ref(result)
        return result

    def __repr__(self):
        return "<%s.%s object>" % (type(self).__module__, type(self).__name__)


class StrategyExtended:
    """The lower-level API of a Strategy (``strategy.extended``): replicas, reductions to
    devices, updates of distributed variables, and what the strategy asks of its caller."""

    def __init__(self, container_strategy):
        self._container_strategy_weakref = weakref.ref(container_strategy)
        self._default_device = None

    def _container_strategy(self):
        return self._container_strategy_weakref()

    # -- scope and variables --------------------------------------------------------------------
    def _scope(self, strategy):
        def creator(next_creator, **kwargs):
            # TF 1.15: a strategy's variables are resource variables.
            kwargs["use_resource"] = True
            return self._create_variable(next_creator, **kwargs)
        return _CurrentDistributionContext(strategy, creator, self._default_device)

    def _create_variable(self, next_creator, **kwargs):
        raise NotImplementedError("must be implemented in descendants")

    def _allow_variable_partition(self):
        return False

    @contextlib.contextmanager
    def colocate_vars_with(self, colocate_with_variable):
        """Variables created in the block go where ``colocate_with_variable`` is (its devices,
        for a distributed variable)."""
        def creator(next_creator, **kwargs):
            kwargs["colocate_with"] = colocate_with_variable
            return next_creator(**kwargs)
        _require_cross_replica_or_default_context_extended(self)
        with variable_creator_scope(creator):
            yield

    def variable_created_in_scope(self, v):
        """Whether ``v`` was created in this strategy's scope."""
        return getattr(v, "_distribute_strategy", None) is self._container_strategy()

    def value_container(self, value):
        """The distributed variable that ``value`` (one of its components) belongs to, else
        ``value``."""
        container = getattr(value, "_distributed_container", None)
        return container() if container is not None else value

    def read_var(self, v):
        """A read of ``v`` in cross-replica context (a SyncOnReadVariable: its aggregate)."""
        raise NotImplementedError("must be implemented in descendants")

    def experimental_make_numpy_dataset(self, numpy_input, session=None):
        """A Dataset of the slices of ``numpy_input`` (see Strategy's)."""
        return self._container_strategy().experimental_make_numpy_dataset(numpy_input, session)

    # -- replicas -----------------------------------------------------------------------------
    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """Run ``fn(*args, **kwargs)`` once per replica (in its device scope, and name scope
        ``replica_<i>/`` for i > 0); returns the results regrouped."""
        with self._container_strategy().scope():
            return self._call_for_each_replica(fn, tuple(args), dict(kwargs or {}))

    # -- reductions -----------------------------------------------------------------------------
    def reduce_to(self, reduce_op, value, destinations):
        """``value`` (per-replica) combined and placed on ``destinations`` (a device, a list of
        them, or a variable/value whose devices): a Mirrored value."""
        _require_cross_replica_or_default_context_extended(self)
        return self._reduce_to(reduce_util.as_reduce_op(reduce_op), value, destinations)

    def batch_reduce_to(self, reduce_op, value_destination_pairs):
        """``reduce_to`` of each ``(value, destinations)`` pair: a list."""
        _require_cross_replica_or_default_context_extended(self)
        return self._batch_reduce_to(reduce_util.as_reduce_op(reduce_op),
                                     list(value_destination_pairs))

    def _batch_reduce_to(self, reduce_op, value_destination_pairs):
        return [self._reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def _reduce(self, reduce_op, value):
        # To one device: the current device scope's, else the CPU.
        device = _current_device() or "/device:CPU:0"
        return self._local_results(self._reduce_to(reduce_op, value, device))[0]

    def broadcast_to(self, tensor, destinations):
        """``tensor`` copied to each of ``destinations``."""
        _require_cross_replica_or_default_context_extended(self)
        return self._broadcast_to(tensor, destinations)

    def _broadcast_to(self, tensor, destinations):
        return tensor

    # -- updates ------------------------------------------------------------------------------
    def update(self, var, fn, args=(), kwargs=None, group=True):
        """Run ``fn(copy, *args, **kwargs)`` for each copy of ``var`` on its device (Mirrored
        arguments give each copy its value); grouped into one op unless ``group=False``."""
        _require_cross_replica_or_default_context_extended(self)
        with self._container_strategy().scope():
            return self._update(var, fn, tuple(args), dict(kwargs or {}), group)

    def update_non_slot(self, colocate_with, fn, args=(), kwargs=None, group=True):
        """Run ``fn(*args, **kwargs)`` on each device of ``colocate_with`` (non_slot_devices)."""
        _require_cross_replica_or_default_context_extended(self)
        with self._container_strategy().scope():
            return self._update_non_slot(colocate_with, fn, tuple(args), dict(kwargs or {}),
                                         group)

    def non_slot_devices(self, var_list):
        """Where variables that belong to no one variable (an optimizer's) are kept."""
        raise NotImplementedError("must be implemented in descendants")

    def _local_results(self, value):
        from zps.distribute import values as values_lib
        if isinstance(value, values_lib.DistributedValues):
            return value.values
        return (value,)

    def _group(self, value, name=None):
        flat = [c for v in nest.flatten(value) for c in self._local_results(v)]
        if len(flat) != 1 or name is not None:
            return control_flow_ops.group(*flat, name=name)
        v = flat[0]
        return getattr(v, "op", v)

    def _regroup_update(self, updates, group):
        # TF 1.15's values.update_regroup: with ``group``, the copies' update ops become one
        # group op; their tensors (an assign's new value) a Mirrored of reads that wait for
        # every copy's update (fetching it gives the primary's, as TF).
        from zps.distribute import values as values_lib
        if not group:
            regrouped = values_lib.regroup(tuple(updates), values_lib.Mirrored)
            return nest.map_structure(self._local_results, regrouped)
        return values_lib.regroup(tuple(updates), _grouped_mirrored)

    # -- configuration ------------------------------------------------------------------------
    def _configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        del session_config, cluster_spec, task_type, task_id

    def _update_config_proto(self, config_proto):
        import copy
        return copy.deepcopy(config_proto)

    @property
    def experimental_require_static_shapes(self):
        return False

    @property
    def worker_devices(self):
        """The devices the replicas compute on (of this worker)."""
        raise NotImplementedError("must be implemented in descendants")

    @property
    def parameter_devices(self):
        """The devices variables are kept on."""
        raise NotImplementedError("must be implemented in descendants")

    @property
    def experimental_between_graph(self):
        """Whether each worker builds its own graph (ParameterServerStrategy)."""
        return False

    @property
    def experimental_should_init(self):
        """Whether this task initializes the variables."""
        return True

    @property
    def should_checkpoint(self):
        """Whether this task writes checkpoints."""
        return True

    @property
    def should_save_summary(self):
        """Whether this task writes summaries."""
        return True


def _grouped_mirrored(components):
    """The copies' results of one update (TF 1.15's _make_grouped_mirrored): one group op, or
    for tensors a Mirrored of identities that depend on it."""
    from zps.distribute import values as values_lib
    from zps.framework.graph import Tensor
    g = control_flow_ops.group(*components)
    if not all(isinstance(c, Tensor) for c in components):
        return g
    graph = components[0].graph
    with_dep = []
    for c in components:
        with graph.device(c.device), graph.control_dependencies([g]):
            with_dep.append(array_ops.identity(c))
    return values_lib.Mirrored(with_dep)


def _current_device():
    """The device of the innermost device-string scope in force (None without one)."""
    for spec in reversed(get_default_graph()._device_stack):
        if spec is None:
            return None
        if not callable(spec):
            return spec.to_string() if hasattr(spec, "to_string") else str(spec)
    return None


class ReplicaContext:
    """What a replica function sees (``tf.distribute.get_replica_context()``): its replica id,
    the number of replicas, and ``merge_call``/``all_reduce`` to work across replicas."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._thread_context = _ThreadMode(strategy, None, self)
        self._entered = []

    def __enter__(self):
        cm = _thread_mode(self._thread_context)
        cm.__enter__()
        self._entered.append(cm)

    def __exit__(self, *exc):
        self._entered.pop().__exit__(*exc)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Run ``merge_fn(strategy, *args, **kwargs)`` once, in cross-replica context, when
        every replica has called merge_call: each argument is the replicas' values regrouped
        (PerReplica / Mirrored); each replica gets its part of the result."""
        require_replica_context(self)
        return self._merge_call(merge_fn, tuple(args), dict(kwargs or {}))

    def _merge_call(self, merge_fn, args, kwargs):
        with _thread_mode(_cross_replica_mode(self._strategy)):
            return merge_fn(self._strategy, *args, **kwargs)

    @property
    def num_replicas_in_sync(self):
        """How many replicas compute in lock step."""
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's index, 0 .. num_replicas_in_sync - 1 (a Python int in zps)."""
        require_replica_context(self)
        return self._replica_id_in_sync_group

    @property
    def strategy(self):
        """The Strategy this replica belongs to."""
        return self._strategy

    @property
    def devices(self):
        """The devices this replica runs on (a tuple of one)."""
        require_replica_context(self)
        worker_devices = self._strategy.extended.worker_devices
        return (worker_devices[self._replica_id_in_sync_group],)

    def all_reduce(self, reduce_op, value):
        """``value`` (a nested structure of tensors) combined across the replicas with
        ``reduce_op``; every replica gets the result."""
        reduce_op = reduce_util.as_reduce_op(reduce_op)
        flat = nest.flatten(value)

        def batch_all_reduce(strategy, *value_flat):
            return strategy.extended.batch_reduce_to(reduce_op, [(v, v) for v in value_flat])

        reduced = self.merge_call(batch_all_reduce, args=flat)
        return nest.pack_sequence_as(value, list(reduced))


# -- the default strategy --------------------------------------------------------------------------
class _DefaultDistributionStrategy(Strategy):
    """What ``get_strategy()`` returns outside any scope: one replica, no distribution."""

    def __init__(self):
        super().__init__(_DefaultDistributionExtended(self))

    def scope(self):
        if has_strategy():
            raise RuntimeError("Must not nest tf.distribute.Strategy scopes.")
        return contextlib.nullcontext(self)


class _DefaultDistributionExtended(StrategyExtended):
    _num_replicas_in_sync = 1

    def _create_variable(self, next_creator, **kwargs):
        colocate_with = kwargs.pop("colocate_with", None)
        if colocate_with is None:
            return next_creator(**kwargs)
        with get_default_graph().colocate_with(colocate_with):
            return next_creator(**kwargs)

    @contextlib.contextmanager
    def colocate_vars_with(self, colocate_with_variable):
        with get_default_graph().colocate_with(colocate_with_variable):
            yield

    def _make_dataset_iterator(self, dataset):
        from zps.distribute import input_lib
        return input_lib.DistributedIterator(dataset, self, ("/device:CPU:0",),
                                             input_device=None)

    def _make_input_fn_iterator(self, input_fn, replication_mode):
        return self._make_dataset_iterator(input_fn(InputContext()))

    def _call_for_each_replica(self, fn, args, kwargs):
        with ReplicaContext(self._container_strategy(), replica_id_in_sync_group=0):
            return fn(*args, **kwargs)

    def _reduce_to(self, reduce_op, value, destinations):
        return value

    def _update(self, var, fn, args, kwargs, group):
        graph = get_default_graph()
        with UpdateContext(var.device), graph.colocate_with(var):
            result = fn(var, *args, **kwargs)
        return result if group else nest.map_structure(self._local_results, result)

    def _update_non_slot(self, colocate_with, fn, args, kwargs, group):
        with UpdateContext(colocate_with):
            result = fn(*args, **kwargs)
        return result if group else nest.map_structure(self._local_results, result)

    def read_var(self, v):
        return array_ops.identity(v)

    def non_slot_devices(self, var_list):
        return min(var_list, key=lambda x: x.name)

    @property
    def worker_devices(self):
        raise RuntimeError("worker_devices() method unsupported by default tf.distribute.Strategy.")

    @property
    def parameter_devices(self):
        raise RuntimeError("parameter_devices() method unsupported by default "
                           "tf.distribute.Strategy.")


_default_lock = threading.Lock()
_default_strategy = None
_default_mode = None


def _get_default_strategy():
    global _default_strategy
    if _default_strategy is None:
        with _default_lock:
            if _default_strategy is None:
                _default_strategy = _DefaultDistributionStrategy()
    return _default_strategy


def _default_replica_mode():
    global _default_mode
    if _default_mode is None:
        strategy = _get_default_strategy()
        _default_mode = _ThreadMode(strategy, None, _DefaultReplicaContext(strategy, 0))
    return _default_mode


class _DefaultReplicaContext(ReplicaContext):
    @property
    def replica_id_in_sync_group(self):
        return 0

    @property
    def devices(self):
        return (_current_device() or "",)


__all__ = [
    "Strategy", "StrategyExtended", "ReplicaContext", "InputContext", "InputReplicationMode",
    "get_strategy", "has_strategy", "in_cross_replica_context", "get_replica_context",
    "get_loss_reduction",
]
