"""Distributed values (TF 1.15's values.py): one component per device or replica.

- ``PerReplica``: each replica's own value (results of a replica function, input batches).
- ``Mirrored``: the same value on each device (results of a reduction, ``reduce_to``).
- ``DistributedVariable`` (a ``zps.Variable``, so collections, the Saver, initializers and
  optimizers take it): ``MirroredVariable`` (ON_WRITE: every update updates every copy) and
  ``SyncOnReadVariable`` (ON_READ: each replica updates its own copy; a cross-replica read
  aggregates them), one plain variable per device, the primary first. ``AggregatingVariable``
  (ParameterServerStrategy) wraps one variable whose replica-context updates are aggregated.

Which component a distributed value stands for depends on where it is used: in a replica
function, the replica's; inside ``extended.update``, the copy being updated; elsewhere the
primary (a SyncOnReadVariable in cross-replica context: the aggregate of its copies).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
...     with s.scope():
...         v = tf.Variable(1.0, name="v")
...     print(type(v).__name__, [c.name for c in v.values])
MirroredVariable ['v:0', 'v/replica_1:0']
"""

import contextlib
import weakref

from zps import nest
from zps.distribute import distribute_lib
from zps.distribute.reduce_util import ReduceOp
from zps.framework.device import canonical_name
from zps.framework.graph import (
    GraphKeys,
    convert_to_tensor,
    get_default_graph,
    register_tensor_conversion_function,
)
from zps.ops import array_ops, control_flow_ops, math_ops
from zps.ops.variables import Variable, VariableAggregation, VariableSynchronization


class DistributedValues:
    """Values of the replicas (or devices) of a strategy, one component each."""

    def __init__(self, values):
        self._values = tuple(values)

    @property
    def values(self):
        """The components, in replica (device) order."""
        return self._values

    @property
    def devices(self):
        """The components' devices."""
        return tuple(canonical_name(getattr(v, "device", "") or "") for v in self._values)

    @property
    def primary(self):
        """The first component."""
        return self._values[0]

    def get(self, device=None):
        """The component on ``device``, else the one for the current context."""
        if device is not None:
            return self._on_device(device)
        return self._get()

    def _get(self):
        ctx = distribute_lib.get_replica_context()
        if ctx is not None:
            return self._values[ctx.replica_id_in_sync_group] if len(self._values) > 1 \
                else self._values[0]
        device = distribute_lib.get_update_device()
        if device is not None and isinstance(device, str):
            found = self._find_device(device)
            if found is not None:
                return found
        return self._get_cross_replica()

    def _get_cross_replica(self):
        return self.primary

    def _find_device(self, device):
        device = canonical_name(device)
        for d, v in zip(self.devices, self._values):
            if d == device:
                return v
        return None

    def _on_device(self, device):
        found = self._find_device(device)
        if found is None:
            raise ValueError("Device %s not found in %s" % (device, list(self.devices)))
        return found

    def __repr__(self):
        return "%s:{\n%s\n}" % (type(self).__name__, "\n".join(
            "  %d: %r" % (i, v) for i, v in enumerate(self._values)))


class PerReplica(DistributedValues):
    """Each replica's own value."""


def _per_replica_to_tensor(v, dtype=None, name=None):
    # TF 1.15 has no conversion (its TypeError); in a replica function (TF 2.x) the replica's.
    ctx = distribute_lib.get_replica_context()
    if ctx is None or not distribute_lib.has_strategy():
        raise TypeError(
            "A PerReplica value (one value per replica) is not one Tensor: combine it with "
            "strategy.reduce(tf.distribute.ReduceOp.SUM or MEAN, value), take its components "
            "with strategy.experimental_local_results(value), or use it in a replica function "
            "(strategy.experimental_run_v2(fn, args=(value,))). Got %r" % (v,))
    return convert_to_tensor(v._get(), dtype=dtype, name=name)


register_tensor_conversion_function(PerReplica, _per_replica_to_tensor)


class Mirrored(DistributedValues):
    """The same value on each device; converts to (and is fetched as) the component of the
    current context."""

    def _as_graph_element(self):
        obj = self._get()
        conv = getattr(obj, "_as_graph_element", None)
        return conv() if conv is not None else obj


register_tensor_conversion_function(
    Mirrored, lambda v, dtype=None, name=None: convert_to_tensor(v._get(), dtype=dtype, name=name))


# -- variables -------------------------------------------------------------------------------
class DistributedVariable(DistributedValues, Variable):
    """A variable with one component variable per device (the primary first), made by a
    strategy's scope. It is a ``zps.Variable``: reads, updates and graph uses go to the
    component of the current context (see the module docstring)."""

    def __init__(self, strategy, values, aggregation):
        DistributedValues.__init__(self, values)
        self._distribute_strategy = strategy
        self._aggregation = aggregation
        primary = self._values[0]
        self._trainable = primary.trainable
        self._constraint = primary.constraint
        self._save_slice_info = None
        self._name = primary.name
        with primary.graph.as_default(), primary.graph.control_dependencies(None):
            self._initializer_op = control_flow_ops.group(*[v.initializer for v in values],
                                                          name=primary.op.name + "/initializer")
        container = weakref.ref(self)
        for v in self._values:
            v._distributed_container = container

    # The component of the current context stands for the variable in graph uses.
    _variable = property(lambda self: self._get()._variable)
    # (one string object: equal names from every replica regroup to it, as TF's cached name)
    name = property(lambda self: self._name)
    graph = property(lambda self: self.primary.graph)
    dtype = property(lambda self: self.primary.dtype)
    shape = property(lambda self: self.primary.get_shape())
    initial_value = property(lambda self: self.primary.initial_value)
    distribute_strategy = property(lambda self: self._distribute_strategy)

    def _set_initial_value(self, value):
        # tf.train.init_from_checkpoint gives the variable a new initial value (TF 1.15: its
        # initializer restores every copy): every copy is initialized from it.
        graph = self.primary.graph
        with graph.control_dependencies(None):
            self._initializer_op = control_flow_ops.group(*[
                _on_device_assign(_assign_fn("assign"), c, self._zps_restore_value(value),
                                  read_value=False) for c in self._values],
                name=self.primary.op.name + "/initializer")
        for c in self._values:
            c._initial_value = value

    _initial_value = property(lambda self: self.primary.initial_value, _set_initial_value)

    def _zps_restore_value(self, tensor):
        # What a copy is set to from a saved (checkpoint) value of the variable.
        return tensor

    @property
    def op(self):
        """The primary's op in cross-replica context, else the current component's."""
        if distribute_lib.in_cross_replica_context():
            return self.primary.op
        return self._get().op

    @property
    def device(self):
        return self._get().device

    def get_shape(self):
        return self.primary.get_shape()

    def _ref(self):
        return self._get()._ref()

    def _as_graph_element(self):
        if distribute_lib.in_cross_replica_context():
            return self._cross_replica_graph_element()
        return self._get()._as_graph_element()

    def _cross_replica_graph_element(self):
        return self.primary._as_graph_element()

    def value(self):
        return self._get().value()

    def read_value(self):
        if distribute_lib.in_cross_replica_context():
            return self._distribute_strategy.extended.read_var(self)
        return self._get().read_value()

    @property
    def handle(self):
        """The current copy's reference tensor: the replica's in a replica function, the one
        being updated in ``extended.update`` (TF 1.15: none in cross-replica context)."""
        if distribute_lib.get_replica_context() is None and \
                distribute_lib.get_update_device() is None:
            raise ValueError("`handle` is not available outside the replica context or a "
                             "`tf.distribute.Strategy.update()` call.")
        return self._get()._variable

    def is_initialized(self, name=None):
        flags = [v.is_initialized() for v in self._values]
        result = flags[0]
        for f in flags[1:]:
            result = math_ops.logical_and(result, f)
        return result

    def _zps_restore_refs(self):
        # The Saver restores a checkpoint value into every copy (see zps.train.saver).
        return [v._ref() for v in self._values]

    def __repr__(self):
        return "<zps.distribute.%s '%s' shape=%s dtype=%s devices=%s>" % (
            type(self).__name__, self.name, self.get_shape(), self.dtype.name,
            list(self.devices))

    def __hash__(self):
        return id(self)


def _enter_or_assert_strategy(strategy):
    # TF 1.15: an update outside any strategy scope runs in its variable's (cross-replica
    # context); inside another strategy's scope it is an error.
    if not distribute_lib.has_strategy():
        return strategy.scope()
    if distribute_lib.get_strategy() is not strategy:
        raise RuntimeError("Mixing different tf.distribute.Strategy objects: %s is not %s"
                           % (distribute_lib.get_strategy(), strategy))
    return contextlib.nullcontext()


def _strategy_assign(var, method, *args, **kwargs):
    # A Mirrored or Aggregating variable's assign/assign_add/assign_sub (``method``).
    with _enter_or_assert_strategy(var._distribute_strategy):
        return var._assign_in_scope(_assign_fn(method), *args, **kwargs)


def _on_device_assign(f, var, *args, **kwargs):
    with var.graph.colocate_with(var._ref().op):
        return f(var, *args, **kwargs)


def _assign_fn(name):
    return lambda var, *args, **kwargs: getattr(var, name)(*args, **kwargs)


def _apply_aggregation(strategy, value, aggregation, destinations):
    if aggregation == VariableAggregation.ONLY_FIRST_REPLICA:
        return strategy.extended.broadcast_to(strategy.experimental_local_results(value)[0],
                                              destinations=destinations)
    reduce_op = ReduceOp.from_variable_aggregation(aggregation)
    return strategy.extended.reduce_to(reduce_op, value, destinations)


AGGREGATION_ERROR = (
    "You must specify an aggregation method to update a {variable_type} in Replica Context. "
    "You can do so by passing an explicit value for argument `aggregation` to tf.Variable(..)."
    "e.g. `tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`"
    "`tf.VariableAggregation` lists the possible aggregation methods."
    "This is required because {variable_type} should always be kept in sync. When updating "
    "them or assigning to them in a replica context, we automatically try to aggregate the "
    "values before updating the variable. For this aggregation, we need to know the "
    "aggregation method. Another alternative is to not try to update such {variable_type} in "
    "replica context, but in cross replica context. You can enter cross replica context by "
    "calling `tf.distribute.get_replica_context().merge_call(merge_fn, ..)`.Inside `merge_fn`, "
    "you can then update the {variable_type} using `tf.distribute.StrategyExtended.update()`.")


class _StrategyAssigned:
    """``assign`` / ``assign_add`` / ``assign_sub`` of a Mirrored or Aggregating variable: in its
    strategy's scope, through the class's ``_assign_in_scope``; in a replica context the
    replicas' values are first aggregated by ``aggregation`` (which must then be set)."""

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return _strategy_assign(self, "assign", value, use_locking=use_locking, name=name,
                                read_value=read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return _strategy_assign(self, "assign_add", delta, use_locking=use_locking, name=name,
                                read_value=read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return _strategy_assign(self, "assign_sub", delta, use_locking=use_locking, name=name,
                                read_value=read_value)

    def _aggregated_update(self, replica_context, f, args, kwargs):
        if self._aggregation == VariableAggregation.NONE:
            raise ValueError(AGGREGATION_ERROR.format(variable_type=type(self).__name__))

        def merge_fn(strategy, value, *other_args, **other_kwargs):
            v = _apply_aggregation(strategy, value, self._aggregation, self)
            return strategy.extended.update(self, f, args=(v,) + other_args, kwargs=other_kwargs)

        return replica_context.merge_call(merge_fn, args=args, kwargs=kwargs)


class MirroredVariable(_StrategyAssigned, DistributedVariable):
    """A variable kept identical on each device (ON_WRITE): an update in cross-replica context
    updates every copy; in a replica context the replicas' updates are first aggregated (by
    ``aggregation``, which must then be set) and applied to every copy once."""

    _synchronization = VariableSynchronization.ON_WRITE

    def _assign_in_scope(self, f, *args, **kwargs):
        if distribute_lib.in_cross_replica_context():
            device = distribute_lib.get_update_device()
            if device is not None and isinstance(device, str):
                v = self._find_device(device)
                if v is not None:
                    return f(v, *args, **kwargs)
            return self._distribute_strategy.extended.update(self, f, args=args, kwargs=kwargs)
        return self._aggregated_update(distribute_lib.get_replica_context(), f, args, kwargs)


class SyncOnReadVariable(DistributedVariable):
    """A variable with a copy per replica that each replica updates alone (ON_READ, e.g. a
    metric's total); read in cross-replica context it is the copies' SUM, MEAN or first one
    (``aggregation``). The Saver saves that aggregate and restores it into the copies (a SUM
    divided among them)."""

    _synchronization = VariableSynchronization.ON_READ

    def __init__(self, strategy, values, aggregation):
        super().__init__(strategy, values, aggregation)
        # The cross-replica read is built now, outside any control context, and reused: the
        # graph may be finalized (MonitoredSession) before the first fetch or meta-graph export.
        self._cross_replica_cache = None
        if aggregation in (VariableAggregation.SUM, VariableAggregation.MEAN):
            graph = self.primary.graph
            with graph.as_default(), graph.control_dependencies(None), \
                    graph.name_scope(self.primary.op.name + "/"):
                self._cross_replica_cache = self._build_aggregate()

    def _cross_replica_value(self):
        if self._aggregation == VariableAggregation.ONLY_FIRST_REPLICA:
            return self.primary
        return self._aggregate()

    def _aggregate(self):
        # A read under control dependencies is a new one that waits for them.
        if self._cross_replica_cache is None or self.primary.graph._current_control_inputs():
            return self._build_aggregate()
        return self._cross_replica_cache

    def _build_aggregate(self):
        reduce_op = ReduceOp.from_variable_aggregation(self._aggregation)
        graph = self.primary.graph
        with graph.colocate_with(None, ignore_existing=True), graph.device(self.primary.device):
            total = math_ops.add_n([v.value() for v in self._values], name="aggregate")
            if reduce_op == ReduceOp.MEAN:
                total = total / float(len(self._values))
        return total

    def _cross_replica_graph_element(self):
        out = self._cross_replica_value()
        return out._as_graph_element() if isinstance(out, Variable) else out

    def value(self):
        if distribute_lib.in_cross_replica_context() and \
                distribute_lib.get_update_device() is None:
            out = self._cross_replica_value()
            return out.value() if isinstance(out, Variable) else out
        return self._get().value()

    def read_value(self):
        return array_ops.identity(self.value())

    def assign(self, value, use_locking=False, name=None, read_value=True):
        if distribute_lib.in_cross_replica_context():
            tensor = convert_to_tensor(value, dtype=self.dtype)
            if self._aggregation == VariableAggregation.SUM:
                tensor = math_ops.cast(tensor / float(len(self._values)), self.dtype)
            return control_flow_ops.group(*[
                _on_device_assign(_assign_fn("assign"), v, tensor, use_locking=use_locking,
                                  read_value=False) for v in self._values])
        return self._get().assign(value, use_locking=use_locking, name=name,
                                  read_value=read_value)

    def _add_sub(self, method, delta, use_locking, name, read_value):
        if distribute_lib.in_cross_replica_context():
            if self._aggregation == VariableAggregation.SUM:
                raise ValueError("SyncOnReadVariable does not support `%s` in cross-replica "
                                 "context when aggregation is set to "
                                 "`tf.VariableAggregation.SUM`." % method)
            return control_flow_ops.group(*[
                _on_device_assign(_assign_fn(method), v, delta, use_locking=use_locking,
                                  read_value=False) for v in self._values])
        return getattr(self._get(), method)(delta, use_locking=use_locking, name=name,
                                            read_value=read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._add_sub("assign_add", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._add_sub("assign_sub", delta, use_locking, name, read_value)

    def _zps_save_tensor(self):
        # What the Saver writes: the cross-replica value, on the primary's device.
        with distribute_lib._thread_mode(distribute_lib._cross_replica_mode(
                self._distribute_strategy)):
            return convert_to_tensor(self._cross_replica_value())

    def _zps_restore_value(self, tensor):
        if self._aggregation == VariableAggregation.SUM:
            return math_ops.cast(tensor / float(len(self._values)), self.dtype)
        return tensor


class AggregatingVariable(_StrategyAssigned, Variable):
    """A ParameterServerStrategy variable (with several replicas per worker): one variable,
    whose updates in a replica context are aggregated across the replicas first (by
    ``aggregation``, which must then be set) and applied once."""

    def __init__(self, strategy, v, aggregation):
        self._distribute_strategy = strategy
        self._v = v
        self._aggregation = aggregation
        v._aggregating_container = weakref.ref(self)

    def get(self, device=None):
        """The wrapped variable."""
        return self._v

    primary = property(lambda self: self._v)
    values = property(lambda self: (self._v,))
    devices = property(lambda self: (canonical_name(self._v.device),))
    distribute_strategy = property(lambda self: self._distribute_strategy)

    def __getattr__(self, name):
        # Everything else (the graph-facing internals, properties) is the wrapped variable's.
        if name in ("_v", "__setstate__") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._v, name)

    _variable = property(lambda self: self._v._variable)
    name = property(lambda self: self._v.name)
    op = property(lambda self: self._v.op)
    graph = property(lambda self: self._v.graph)
    device = property(lambda self: self._v.device)
    dtype = property(lambda self: self._v.dtype)
    shape = property(lambda self: self._v.get_shape())
    initializer = property(lambda self: self._v.initializer)
    initial_value = property(lambda self: self._v.initial_value)
    # (tf.train.init_from_checkpoint replaces these: on the wrapped variable)
    _initializer_op = property(lambda self: self._v._initializer_op,
                               lambda self, op: setattr(self._v, "_initializer_op", op))
    _initial_value = property(lambda self: self._v._initial_value,
                              lambda self, value: setattr(self._v, "_initial_value", value))
    trainable = property(lambda self: self._v.trainable)
    constraint = property(lambda self: self._v.constraint)
    synchronization = property(lambda self: self._v.synchronization)
    aggregation = property(lambda self: self._aggregation)

    def get_shape(self):
        return self._v.get_shape()

    def _ref(self):
        return self._v._ref()

    def _as_graph_element(self):
        return self._v._as_graph_element()

    def value(self):
        return self._v.value()

    def read_value(self):
        return self._v.read_value()

    def _assign_in_scope(self, f, *args, **kwargs):
        if distribute_lib.in_cross_replica_context():
            if distribute_lib.get_update_device() is not None:
                return f(self._v, *args, **kwargs)
            return self._distribute_strategy.extended.update(self, f, args=args, kwargs=kwargs)
        ctx = distribute_lib.get_replica_context()
        if ctx.num_replicas_in_sync == 1:
            return f(self._v, *args, **kwargs)
        return self._aggregated_update(ctx, f, args, kwargs)

    def __repr__(self):
        return "<zps.distribute.AggregatingVariable %r>" % (self._v,)

    def __hash__(self):
        return id(self)


def is_distributed_variable(v):
    """Whether ``v`` is a strategy's variable (Mirrored, SyncOnRead or Aggregating)."""
    return isinstance(v, DistributedVariable | AggregatingVariable)


def create_mirrored_variable(strategy, devices, next_creator, kwargs):
    """A MirroredVariable or SyncOnReadVariable (``synchronization``) with a copy on each of
    ``devices`` made by ``next_creator``: the primary named as asked, the others
    ``<name>/replica_<i>``, initialized from the primary's initial value (TF 1.15's)."""
    name = kwargs.get("name")
    var_collections = kwargs.pop("collections", None)
    if var_collections is None:
        var_collections = [GraphKeys.GLOBAL_VARIABLES]
    var_collections = list(var_collections)
    kwargs["collections"] = []
    synchronization = kwargs.get("synchronization") or VariableSynchronization.AUTO
    synchronization = VariableSynchronization(synchronization)
    if synchronization == VariableSynchronization.NONE:
        raise ValueError("`NONE` variable synchronization mode is not supported with `Mirrored` "
                         "distribution strategy. Please change the `synchronization` for "
                         "variable: %s" % name)
    is_sync_on_read = synchronization == VariableSynchronization.ON_READ
    aggregation = kwargs.pop("aggregation", None) or VariableAggregation.NONE
    try:
        aggregation = VariableAggregation(aggregation)
    except ValueError:
        raise ValueError("Invalid variable aggregation mode: %s for variable: %s"
                         % (aggregation, name)) from None
    kwargs.pop("caching_device", None)
    trainable = kwargs.get("trainable")
    if trainable is None:
        trainable = not is_sync_on_read
    graph = get_default_graph()
    components = []
    for i, d in enumerate(devices):
        kw = dict(kwargs, aggregation=aggregation)
        if i > 0:
            primary = components[0]
            # A trailing / makes the name absolute: <primary name>/replica_<i>.
            kw["name"] = "%s/replica_%d/" % (primary.op.name, i)
            kw["initial_value"] = lambda p=primary: array_ops.identity(p.initial_value)
        with graph.colocate_with(None, ignore_existing=True), graph.device(d):
            components.append(next_creator(**kw))
    cls = SyncOnReadVariable if is_sync_on_read else MirroredVariable
    result = cls(strategy, components, aggregation)
    _replace_in_collections(graph, components, result, var_collections, trainable)
    return result


def _replace_in_collections(graph, components, result, var_collections, trainable):
    # The components went to TRAINABLE_VARIABLES (if trainable): the container stands there
    # instead, as in the collections asked for.
    trainables = graph.get_collection_ref(GraphKeys.TRAINABLE_VARIABLES)
    for c in components:
        for i, t in enumerate(trainables):
            if t is c:
                del trainables[i]
                break
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in var_collections:
        var_collections.append(GraphKeys.TRAINABLE_VARIABLES)
    graph.add_to_collections(var_collections, result)


# -- regrouping across replicas --------------------------------------------------------------
def regroup(values, wrap_class=PerReplica):
    """One structure from the replicas' structures ``values``: leaves that are the same object
    stay as they are, components of one distributed variable become it, others are wrapped."""
    v0 = values[0]
    if isinstance(v0, list):
        return [regroup(tuple(v[i] for v in values), wrap_class) for i in range(len(v0))]
    if isinstance(v0, tuple):
        items = [regroup(tuple(v[i] for v in values), wrap_class) for i in range(len(v0))]
        return type(v0)(*items) if hasattr(v0, "_fields") else tuple(items)
    if isinstance(v0, dict):
        return type(v0)((k, regroup(tuple(v[k] for v in values), wrap_class)) for k in v0)
    same = all(v is v0 for v in values[1:])
    if same and isinstance(v0, DistributedVariable | AggregatingVariable):
        return v0
    container = getattr(v0, "_distributed_container", None)
    if container is not None and all(getattr(v, "_distributed_container", None) is container
                                     for v in values):
        return container()
    if same:
        return v0
    return wrap_class(values)


def select_replica(replica_id, structured):
    """``structured`` with each PerReplica/Mirrored leaf replaced by replica ``replica_id``'s
    component (distributed variables stay: a replica uses them directly)."""
    def pick(x):
        if isinstance(x, DistributedValues) and not isinstance(x, DistributedVariable):
            return x.values[replica_id]
        return x
    return nest.map_structure(pick, structured)


def select_device_mirrored(device, structured):
    """``structured`` with each Mirrored leaf replaced by its component on ``device``."""
    def pick(x):
        if isinstance(x, Mirrored):
            return x._on_device(device)
        if isinstance(x, DistributedValues) and not isinstance(x, DistributedVariable):
            raise TypeError("Expected value to be mirrored across replicas: %r." % (x,))
        return x
    return nest.map_structure(pick, structured)


def value_components(value):
    """The per-replica tensors of a distributed value (a variable's reads), or ``(value,)``."""
    if isinstance(value, DistributedVariable):
        return tuple(v.value() for v in value.values)
    if isinstance(value, DistributedValues):
        return value.values
    return (value,)


__all__ = []
