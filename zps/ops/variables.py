"""``Variable``: state that persists across ``Session.run`` calls, and its collections.

A ``Variable`` is TF1's ref variable: its reads share its storage, so a read that runs before an
in-place update may still see the update. A ``ResourceVariable`` (``use_resource=True``, a
``variable_scope(use_resource=True)`` or ``tf.enable_resource_variables()``) reads snapshots:

>>> import zps as tf
>>> with tf.Graph().as_default():
...     v = tf.Variable([1.0, 2.0], use_resource=True)
...     r = v.read_value()
...     with tf.control_dependencies([r]):
...         a = v.assign_add([5.0, 5.0])
...     with tf.Session() as sess:
...         sess.run(v.initializer)
...         print(type(v).__name__, sess.run([r, a]))
ResourceVariable [array([1., 2.], dtype=float32), array([6., 7.], dtype=float32)]

>>> import zps as tf
>>> with tf.Graph().as_default():
...     v = tf.Variable([1.0, 2.0], name="v")
...     inc = v.assign_add([10.0, 10.0])
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         _ = sess.run(inc)
...         print(v.name, sess.run(v))
v:0 [11. 12.]
"""

import enum
import inspect

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.graph import (
    GraphKeys,
    IndexedSlices,
    Tensor,
    convert_to_tensor,
    get_default_graph,
    register_tensor_conversion_function,
)
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, state_ops
from zps.ops.op_util import make_op


class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies are synchronized (``tf.VariableSynchronization``):
    AUTO (the strategy chooses: ON_WRITE), NONE, ON_WRITE (every update updates every copy),
    ON_READ (each replica updates its own copy; reading across replicas aggregates them)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How the replicas' updates of a distributed variable, or its ON_READ copies, are combined
    (``tf.VariableAggregation``): NONE, SUM, MEAN, ONLY_FIRST_REPLICA (alias ONLY_FIRST_TOWER)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3  # noqa: PIE796 - TF1's deprecated alias of ONLY_FIRST_REPLICA


def validate_synchronization_aggregation_trainable(synchronization, aggregation, trainable, name):
    """``(synchronization, aggregation, trainable)`` with TF's defaults (AUTO, NONE, and
    trainable unless ON_READ); a value that is not one of the enums' is TF's ValueError."""
    if aggregation is None:
        aggregation = VariableAggregation.NONE
    elif not isinstance(aggregation, VariableAggregation):
        try:
            aggregation = VariableAggregation(aggregation)
        except ValueError:
            raise ValueError(f"Invalid variable aggregation mode: {aggregation} for variable: "
                             f"{name}") from None
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    else:
        try:
            synchronization = VariableSynchronization(synchronization)
        except ValueError:
            raise ValueError(f"Invalid variable synchronization mode: {synchronization} for "
                             f"variable: {name}") from None
    if trainable is None:
        trainable = synchronization != VariableSynchronization.ON_READ
    return synchronization, aggregation, trainable


# -- variable creators (tf.variable_creator_scope) -------------------------------------------------
def _creator_stack(graph=None):
    """The variable creators in force in this thread for ``graph``, outermost first."""
    return (graph or get_default_graph())._tl("variable_creator_stack")


class _VariableMeta(type):
    # TF1's VariableMetaclass: ``tf.Variable(...)`` goes through the creators of the thread's
    # variable_creator_scope blocks, innermost first; each may call the next (the last one is
    # the plain constructor). Subclasses (ResourceVariable(...)) are constructed directly.
    def __call__(cls, *args, **kwargs):
        if cls is not Variable or not (args or kwargs):
            return super().__call__(*args, **kwargs)
        bound = _INIT_SIGNATURE.bind(None, *args, **kwargs)
        bound.apply_defaults()   # creators get every argument, as TF's
        kwargs = bound.arguments
        kwargs.pop("self")
        getter = _default_creator
        for creator in _creator_stack():
            getter = _make_getter(creator, getter)
        return getter(**kwargs)


def _default_creator(**kwargs):
    return type.__call__(Variable, **kwargs)


def _make_getter(creator, previous):
    return lambda **kwargs: creator(previous, **kwargs)


class Variable(metaclass=_VariableMeta):
    """A variable: a VariableV2 op holding state, its initializer, and a ``read`` snapshot.

    ``tf.Variable(..., use_resource=True)`` makes a ResourceVariable, as does ``use_resource=None``
    inside ``variable_scope(use_resource=True)`` or after ``tf.enable_resource_variables()``.
    ``synchronization``/``aggregation`` (VariableSynchronization / VariableAggregation) tell a
    ``tf.distribute`` strategy how to keep its copies; ``tf.variable_creator_scope`` creators
    see every argument.
    """

    _resource = False   # a ResourceVariable's reads are snapshots

    def __new__(cls, *args, **kwargs):
        # TF1's default variable creator: use_resource, else the variable scope's, else the
        # default. (Without arguments: an object filled in by its caller, as the Saver's import.)
        if cls is Variable and (args or kwargs) and _use_resource(kwargs.get("use_resource")):
            cls = ResourceVariable
        return super().__new__(cls)

    def __init__(self, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = get_default_graph()
        self._synchronization, self._aggregation, trainable = \
            validate_synchronization_aggregation_trainable(synchronization, aggregation,
                                                           trainable, name)
        collections = [GraphKeys.GLOBAL_VARIABLES] if collections is None else list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None
        # Like TF1's init_scope: a variable never depends on the control context it is made in.
        with graph.control_dependencies(None), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                first = len(graph._ops_list)
                with graph.name_scope("Initializer"), graph.device(None):
                    self._initial_value = convert_to_tensor(initial_value(), dtype=dtype,
                                                            name="initial_value")
                init_ops = graph._ops_list[first:]
            else:
                self._initial_value = convert_to_tensor(initial_value, dtype=dtype,
                                                        name="initial_value")
                init_ops = []
            init_shape = self._initial_value.get_shape()
            if validate_shape and shape is None and not init_shape.is_fully_defined():
                raise ValueError("initial_value must have a shape specified: %s (or pass "
                                 "validate_shape=False)" % self._initial_value)
            if shape is not None:
                init_shape = init_shape.merge_with(shape) if validate_shape else unknown_shape()
            elif not validate_shape:
                init_shape = unknown_shape()
            self._variable = state_ops.variable_op_v2(init_shape, self._initial_value.dtype,
                                                      name=scope, use_resource=self._resource)
            var_op = self._variable.op
            # Initializer ops built by a callable run where the variable lives (TF1 colocation).
            for op in init_ops:
                op._colocation = [var_op.name]
                op._device = var_op.device
            with graph.colocate_with(var_op):
                self._initializer_op = state_ops.assign(
                    self._variable, self._initial_value, validate_shape=validate_shape).op
            self._snapshot = self._build_snapshot(graph, caching_device)
        graph.add_to_collections(collections, self)

    def _build_snapshot(self, graph, caching_device):
        # TF1: the snapshot lives on the caching device if given, else with the variable
        # (a device function such as replica_device_setter(worker_device=".../gpu:0") must
        # not move a ps variable's read onto the ps's GPU).
        with (graph.device(caching_device) if caching_device
              else graph.colocate_with(self._variable.op)):
            return array_ops.identity(self._variable, name="read")

    # -- identity ------------------------------------------------------------------------------
    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    graph = property(lambda self: self._variable.graph)
    device = property(lambda self: self._variable.device)
    dtype = property(lambda self: self._variable.dtype)
    shape = property(lambda self: self._variable.get_shape())
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)
    # (A Variable filled in by the Saver's import has neither: TF's defaults.)
    synchronization = property(lambda self: getattr(self, "_synchronization",
                                                    VariableSynchronization.AUTO))
    aggregation = property(lambda self: getattr(self, "_aggregation", VariableAggregation.NONE))

    def get_shape(self):
        return self._variable.get_shape()

    def _ref(self):
        return self._variable

    def _as_graph_element(self):
        return self._variable

    def value(self):
        """The snapshot tensor that reads this variable (``<name>/read:0``)."""
        return self._snapshot

    def read_value(self):
        """A fresh read of the variable's value."""
        return array_ops.identity(self._variable, name="read")

    def initialized_value(self):
        """The variable's value, initializing it first if needed (for initializers of others)."""
        from zps.ops.control_flow_ops import cond_initialized
        return cond_initialized(self)

    def is_initialized(self):
        return state_ops.is_variable_initialized(self)

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None):
        """Assign a numpy value to the variable through ``session`` (without a new graph op)."""
        from zps.framework import default_session
        session = session or default_session.get()
        if session is None:
            raise ValueError("Variable.load needs a session: pass session= or use a default one")
        session.run(self._initializer_op, {self._initial_value: value})

    # -- updates -------------------------------------------------------------------------------
    def assign(self, value, use_locking=False, name=None, read_value=True):
        op = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return op if read_value else op.op

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        op = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return op if read_value else op.op

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        op = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return op if read_value else op.op

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return state_ops.indexed_slices_update("ScatterUpdate", self, sparse_delta, use_locking, name)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        return state_ops.indexed_slices_update("ScatterAdd", self, sparse_delta, use_locking, name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return state_ops.indexed_slices_update("ScatterSub", self, sparse_delta, use_locking, name)

    def count_up_to(self, limit):
        return state_ops.count_up_to(self._variable, limit)

    def __repr__(self):
        return "<zps.Variable '%s' shape=%s dtype=%s>" % (self.name, self.get_shape(),
                                                         self.dtype.name)

    def __hash__(self):
        return id(self)

    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    def __bool__(self):
        raise TypeError("Using a zps.Variable as a Python bool is not allowed.")

    # -- partitioned variables: where this variable sits in the full one -----------------------
    def _set_save_slice_info(self, save_slice_info):
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self):
        return self._save_slice_info


_INIT_SIGNATURE = inspect.signature(Variable.__init__)


class ResourceVariable(Variable):
    """A variable with TF1's resource semantics (``use_resource=True``): every read is a snapshot.

    A read that runs before an update keeps the value it read, in its step and after; a read
    made inside ``control_dependencies`` (``v.value()``, ``v * 2``, ``v.read_value()``) is a new
    read that waits for them, so it sees their updates. Updates change the variable's array in
    place unless a read still holds it (then they update a copy: zps.runtime.resources), so a
    training step, whose forward reads are done before its optimizer applies, copies nothing.
    """

    _resource = True

    def _build_snapshot(self, graph, caching_device):
        # TF1: <name>/Read/ReadVariableOp, with the variable; an Identity of it on the caching
        # device, if any, is the value every use reads.
        with graph.name_scope("Read"), graph.colocate_with(self._variable.op):
            self._graph_element = state_ops.read_variable_op(self._variable)
        self._cached_value = None
        if caching_device:
            with graph.colocate_with(None, ignore_existing=True), graph.device(caching_device):
                self._cached_value = array_ops.identity(self._graph_element)
        return self._graph_element

    @property
    def handle(self):
        """The variable's reference tensor (``<name>:0``): in zps, what TF's resource handle is
        (the ops that update the variable take it)."""
        return self._variable

    def value(self):
        """The variable's value: a new read under the current control dependencies, if any,
        else the variable's shared read (``<name>/Read/ReadVariableOp:0``, or its copy on the
        caching device)."""
        if self._cached_value is not None:
            return self._cached_value
        if self.graph._current_control_inputs():
            return self._read()
        return self._graph_element

    def read_value(self):
        """A new read of the variable (``Read/ReadVariableOp``): its value when the read runs."""
        with self.graph.name_scope("Read"):
            return self._read()

    def sparse_read(self, indices, name=None):
        """The rows ``indices`` of the variable, gathered where it lives (its gradient is an
        IndexedSlices: a sparse update)."""
        graph = self.graph
        with graph.name_scope("Gather" if name is None else name) as scope, \
                graph.colocate_with(self._variable.op, ignore_existing=True):
            return array_ops.gather(self._variable, indices, name=scope)

    def _read(self):
        with self.graph.colocate_with(self._variable.op, ignore_existing=True):
            return state_ops.read_variable_op(self._variable)


def _use_resource(use_resource):
    if use_resource is None:
        from zps.ops import variable_scope  # it builds on this module
        return variable_scope.default_use_resource()
    return bool(use_resource)


def checkpoint_name(var):
    """The name a checkpoint knows ``var`` by: a partition's whole variable's name (its
    SaveSliceInfo's), a PartitionedVariable's name, else the variable's op name."""
    get_info = getattr(var, "_get_save_slice_info", None)
    if get_info is None:   # a PartitionedVariable: named as the whole variable
        return var.name
    info = get_info()
    return info.full_name if info is not None else var.op.name


class SaveSliceInfo:
    """Where a shard of a partitioned variable sits: the full variable's name and shape, and the
    shard's offset and shape in it (TF1's ``Variable.SaveSliceInfo``). The Saver stores it."""

    def __init__(self, full_name=None, full_shape=None, var_offset=None, var_shape=None,
                 save_slice_info_def=None, import_scope=None):
        if save_slice_info_def is not None:
            full_name = save_slice_info_def["full_name"]
            full_shape = save_slice_info_def["full_shape"]
            var_offset = save_slice_info_def["var_offset"]
            var_shape = save_slice_info_def["var_shape"]
            if import_scope:
                full_name = import_scope + "/" + full_name
        self.full_name = full_name
        self.full_shape = [int(d) for d in full_shape]
        self.var_offset = [int(d) for d in var_offset]
        self.var_shape = [int(d) for d in var_shape]
        if not len(self.full_shape) == len(self.var_offset) == len(self.var_shape):
            raise ValueError("SaveSliceInfo of %s: full_shape %s, var_offset %s and var_shape %s "
                             "must have one rank" % (full_name, self.full_shape, self.var_offset,
                                                     self.var_shape))

    @property
    def spec(self):
        """TF1's slice spec string, e.g. ``"10 4 0,5:0,4"`` (full shape, then offset,length)."""
        full_shape_str = " ".join("%d" % d for d in self.full_shape) + " "
        sl_spec = ":".join("%d,%d" % (o, s) for o, s in zip(self.var_offset, self.var_shape))
        return full_shape_str + sl_spec

    def to_proto(self, export_scope=None):
        """The slice info as a plain dict (TF1's SaveSliceInfoDef)."""
        name = self.full_name
        if export_scope and name.startswith(export_scope + "/"):
            name = name[len(export_scope) + 1:]
        return {"full_name": name, "full_shape": list(self.full_shape),
                "var_offset": list(self.var_offset), "var_shape": list(self.var_shape)}

    def __repr__(self):
        return "SaveSliceInfo(%r, %r)" % (self.full_name, self.spec)


Variable.SaveSliceInfo = SaveSliceInfo


def _install_variable_operators():
    # Arithmetic on a Variable reads its value (the snapshot) and applies the Tensor operator.
    names = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
             "xor"]
    ops = ["__%s__" % n for n in names] + ["__r%s__" % n for n in names]
    ops += ["__neg__", "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__",
            "__getitem__"]
    for name in ops:
        def method(self, *args, _name=name):
            return getattr(Tensor, _name)(self.value(), *args)
        setattr(Variable, name, method)


_install_variable_operators()


def _variable_to_tensor(v, dtype=None, name=None):
    t = v.value()
    if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(t.dtype):
        raise ValueError("Incompatible type conversion requested to type '%s' for variable of type "
                         "'%s' (%s)" % (_dtypes.as_dtype(dtype).name, t.dtype.name, v.name))
    return t


register_tensor_conversion_function(Variable, _variable_to_tensor)
register_tensor_conversion_function(IndexedSlices,
                                    lambda v, dtype=None, name=None: array_ops.densify(v))


# -- collections and initializers ----------------------------------------------------------------
def global_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def local_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """One op that runs the initializers of ``var_list``."""
    from zps.ops.control_flow_ops import group, no_op
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer():
    """An op that initializes every global variable."""
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    """An op that initializes every local variable."""
    return variables_initializer(local_variables(), name="init")


def is_variable_initialized(variable):
    return state_ops.is_variable_initialized(variable)


def assert_variables_initialized(var_list=None):
    raise NotImplementedError("Use report_uninitialized_variables instead.")


def _report_kernel(ctx, names, *flags):
    return names[~np.array([bool(f) for f in flags], dtype=bool)]


register_op("ReportUninitialized", dtype=lambda op: _dtypes.string,
            shape=lambda op: TensorShape([None]), kernel=_report_kernel, grad=None)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor with the names of the uninitialized variables in ``var_list``."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    graph = get_default_graph()
    with graph.name_scope(name):
        if not var_list:
            return array_ops.constant([], dtype=_dtypes.string)
        refs = [v._ref() for v in var_list]
        names = array_ops.constant([v.op.name for v in var_list], dtype=_dtypes.string)
        flags = [state_ops.is_variable_initialized(r) for r in refs]
        return make_op("ReportUninitialized", [names] + flags, name="report")

__all__ = [
    "Variable",
    "VariableSynchronization",
    "VariableAggregation",
    "global_variables",
    "all_variables",
    "local_variables",
    "trainable_variables",
    "model_variables",
    "moving_average_variables",
    "variables_initializer",
    "global_variables_initializer",
    "initialize_all_variables",
    "local_variables_initializer",
    "report_uninitialized_variables",
]
