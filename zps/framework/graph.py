"""Graph, Operation and Tensor: the dataflow graph a Session runs.

>>> import zps as tf
>>> g = tf.Graph()
>>> with g.as_default(), tf.name_scope("layer"):
...     x = tf.placeholder(tf.float32, [None, 3], name="x")
>>> x.name, x.get_shape().as_list(), g.get_tensor_by_name("layer/x:0") is x
('layer/x:0', [None, 3], True)
"""

import contextlib
import re
import threading

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import registry
from zps.framework.device import DeviceSpec, canonical_name, merge_device
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape


class GraphKeys:
    """Standard collection names."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    GLOBAL_STEP = "global_step"
    SUMMARIES = "summaries"
    UPDATE_OPS = "update_ops"
    QUEUE_RUNNERS = "queue_runners"
    SAVERS = "savers"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    TRAIN_OP = "train_op"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    CONCATENATED_VARIABLES = "concatenated_variables"
    ASSET_FILEPATHS = "asset_filepaths"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


class Tensor:
    """A symbolic handle to one output of an Operation."""

    # numpy defers binary operators to us (np.float32(2) * t -> Tensor.__rmul__).
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype, shape=None):
        self._op = op
        self._value_index = value_index
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._consumers = []

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op.graph)
    device = property(lambda self: self._op.device)
    shape = property(lambda self: self._shape)

    @property
    def name(self):
        return "%s:%d" % (self._op.name, self._value_index)

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        """Refine this tensor's static shape; raises ValueError if incompatible."""
        try:
            self._shape = self._shape.merge_with(shape)
        except ValueError:
            raise ValueError("Tensor %s has shape %s, which is incompatible with %s"
                             % (self.name, self._shape, as_shape(shape))) from None

    def consumers(self):
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        """Run the default (or given) session to compute this tensor's value."""
        return _run_in_session(self, feed_dict, session)

    @property
    def is_ref(self):
        return self._op._opdef.ref_output and self._value_index == 0

    def __repr__(self):
        return "<zps.Tensor '%s' shape=%s dtype=%s>" % (self.name, self._shape, self._dtype.name)

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise TypeError("Using a zps.Tensor as a Python bool is not allowed: its value is only known "
                        "when a Session runs it. Use zps.cond/where, or fetch it with sess.run first.")

    def __iter__(self):
        raise TypeError("zps.Tensor %s is not iterable in graph mode; use zps.unstack or index it "
                        "with t[i]." % self.name)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Cannot convert symbolic zps.Tensor %s to a numpy array: fetch its value with "
                        "sess.run(%s) first." % (self.name, self.name))

    # Operators (+, *, [], ...) are installed by zps.ops.math_ops / array_ops.


class IndexedSlices:
    """A sparse slice representation ``dense[indices] = values`` (gradients of gather)."""

    def __init__(self, values, indices, dense_shape=None):
        self.values = values
        self.indices = indices
        self.dense_shape = dense_shape

    dtype = property(lambda self: self.values.dtype)
    name = property(lambda self: self.values.name)
    op = property(lambda self: self.values.op)
    graph = property(lambda self: self.values.graph)
    device = property(lambda self: self.values.device)

    def get_shape(self):
        from zps.framework.constant import constant_value
        if self.dense_shape is not None:
            v = constant_value(self.dense_shape)
            if v is not None:
                return TensorShape(list(v))
        return unknown_shape()

    def __repr__(self):
        return "IndexedSlices(indices=%s, values=%s)" % (self.indices, self.values)


class Operation:
    """A node of the graph: a type, input tensors, attrs, a device and control inputs."""

    def __init__(self, graph, op_type, name, inputs, attrs, control_inputs, output_specs):
        self._graph = graph
        self._type = op_type
        self._name = name
        self._opdef = registry.get_op_def(op_type)
        self._inputs = list(inputs)
        self._attrs = dict(attrs)
        self._control_inputs = list(control_inputs)
        self._device = ""
        self._colocation = []
        self._id = graph._next_id()
        self._outputs = [Tensor(self, i, dt, sh) for i, (dt, sh) in enumerate(output_specs)]

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    inputs = property(lambda self: tuple(self._inputs))
    outputs = property(lambda self: list(self._outputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device)
    attrs = property(lambda self: dict(self._attrs))
    op_def = property(lambda self: self._opdef)

    def values(self):
        return tuple(self._outputs)

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError("Operation %s (%s) has no attr %r; it has %s"
                             % (self._name, self._type, name, sorted(self._attrs))) from None

    def _set_device(self, device):
        self._device = canonical_name(device)

    def _add_control_input(self, op):
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self._graph._structure_version += 1

    def colocation_groups(self):
        names = self._colocation or [self._name]
        return [("loc:@" + n).encode() for n in names]

    def run(self, feed_dict=None, session=None):
        """Run this op in the default (or given) session."""
        _run_in_session(self, feed_dict, session)

    @property
    def node_def(self):
        return {"name": self._name, "op": self._type, "device": self._device,
                "input": [t.name for t in self._inputs] + ["^" + c.name for c in self._control_inputs],
                "attr": dict(self._attrs)}

    def __repr__(self):
        return "<zps.Operation '%s' type=%s>" % (self._name, self._type)


def _run_in_session(fetch, feed_dict, session):
    from zps.framework import default_session
    session = session or default_session.get()
    if session is None:
        raise ValueError("Cannot evaluate %s: no default session is registered. Use "
                         "`with sess.as_default():` or pass session=sess." % fetch.name)
    if session.graph is not fetch.graph:
        raise ValueError("Cannot use the given session to evaluate %s: its graph is not the "
                         "session's graph." % fetch.name)
    return session.run(fetch, feed_dict)


_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


class Graph:
    """A TensorFlow-style computation graph: Operations connected by Tensors."""

    def __init__(self):
        self._lock = threading.RLock()
        self._ops = {}
        self._ops_list = []
        self._names_in_use = {}
        self._id_counter = 0
        self._structure_version = 0
        self._collections = {}
        self._finalized = False
        self.seed = None
        self._local = threading.local()
        self._container = ""

    # -- thread-local scope stacks ---------------------------------------------------------
    def _tl(self, attr, default):
        val = getattr(self._local, attr, None)
        if val is None:
            val = default()
            setattr(self._local, attr, val)
        return val

    @property
    def _name_stack(self):
        return getattr(self._local, "name_stack", "")

    @_name_stack.setter
    def _name_stack(self, value):
        self._local.name_stack = value

    _device_stack = property(lambda self: self._tl("device_stack", list))
    _control_stack = property(lambda self: self._tl("control_stack", list))
    _colocation_stack = property(lambda self: self._tl("colocation_stack", list))

    # -- basic properties ------------------------------------------------------------------
    @property
    def version(self):
        return self._id_counter

    @property
    def finalized(self):
        return self._finalized

    def finalize(self):
        """Make this graph read-only: creating an op afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self):
        self._finalized = False

    def _next_id(self):
        self._id_counter += 1
        return self._id_counter

    @contextlib.contextmanager
    def as_default(self):
        """Make this graph the default graph inside the ``with`` block (per thread)."""
        _default_graph_stack().append(self)
        try:
            yield self
        finally:
            _default_graph_stack().pop()

    # -- names -----------------------------------------------------------------------------
    def get_name_scope(self):
        return self._name_stack

    def unique_name(self, name, mark_as_used=True):
        """``name`` under the current name scope, suffixed with _1, _2 ... to make it unique."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while True:
                candidate = "%s_%d" % (base, i)
                if candidate not in self._names_in_use:
                    break
                i += 1
            if mark_as_used:
                self._names_in_use[candidate] = 1
            name = "%s_%d" % (name, i)
        return name

    @contextlib.contextmanager
    def name_scope(self, name):
        """Open a name scope; yields the scope string ending with '/' ('' for the root scope)."""
        old = self._name_stack
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            new = name[:-1]  # re-entering an existing scope string
        else:
            if not _VALID_NAME.match(name):
                raise ValueError("'%s' is not a valid scope name" % name)
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    # -- devices, control dependencies, colocation ----------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Place ops created in the block: a device string, DeviceSpec, function(op) or None."""
        spec = device_name_or_function
        if spec is not None and not callable(spec):
            spec = merge_device(spec if isinstance(spec, DeviceSpec) else canonical_name(spec))
        self._device_stack.append(spec)
        try:
            yield
        finally:
            self._device_stack.pop()

    def _apply_device_functions(self, op):
        # Innermost first; outer scopes only fill fields left unset (TF1's merge rule).
        for fn in reversed(self._device_stack):
            if fn is None:
                break
            dev = fn(op)
            op._set_device(dev.to_string() if isinstance(dev, DeviceSpec) else (dev or ""))

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created in the block run only after ``control_inputs`` (None clears them)."""
        if control_inputs is None:
            saved = list(self._control_stack)
            self._control_stack.clear()
            self._control_stack.append(None)
            try:
                yield
            finally:
                self._control_stack.clear()
                self._control_stack.extend(saved)
            return
        ops = []
        for c in control_inputs:
            c = self.as_graph_element(c)
            ops.append(c if isinstance(c, Operation) else c.op)
        self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    def _current_control_inputs(self):
        out = []
        for frame in self._control_stack:
            if frame is None:
                out.clear()
                continue
            for op in frame:
                if op not in out:
                    out.append(op)
        return out

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops created in the block are placed on ``op``'s device, ignoring device scopes."""
        if op is None:
            if not ignore_existing:
                raise ValueError("colocate_with(None) requires ignore_existing=True")
            target = None
        else:
            target = _as_op(self.as_graph_element(_unwrap(op)))
        saved_devices = list(self._device_stack)
        saved_coloc = list(self._colocation_stack)
        if ignore_existing:
            self._colocation_stack.clear()
        if target is not None:
            self._colocation_stack.append(target)
            self._device_stack.clear()
        try:
            yield
        finally:
            self._device_stack[:] = saved_devices
            self._colocation_stack[:] = saved_coloc

    # -- op creation -----------------------------------------------------------------------
    def create_op(self, op_type, inputs, attrs=None, name=None, num_outputs=None):
        """Create an Operation of a registered type; returns it (outputs in ``op.outputs``)."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified (creating op %r). Build "
                               "every op before the session starts (MonitoredSession finalizes "
                               "the graph)." % (name or op_type))
        opdef = registry.get_op_def(op_type)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError("Input to %s must be a Tensor, got %r" % (op_type, t))
            if t.graph is not self:
                raise ValueError("Tensor %s must be from the same graph as the op being created "
                                 "(%s)." % (t.name, name or op_type))
        with self._lock:
            # A name ending in '/' is a name scope opened for this op: use it exactly (TF1 rule).
            name = name[:-1] if name and name.endswith("/") else self.unique_name(name or op_type)
            control = [c for c in self._current_control_inputs()
                       if all(t.op is not c for t in inputs)]
            op = Operation(self, op_type, name, inputs, attrs or {}, control, [])
            n = opdef.num_outputs if num_outputs is None else num_outputs
            op._outputs = [Tensor(op, i, dt, sh)
                           for i, (dt, sh) in enumerate(_infer_outputs(opdef, op, n))]
            if self._colocation_stack:
                target = self._colocation_stack[-1]
                op._colocation = list(target._colocation or [target.name])
                op._device = target.device
            else:
                self._apply_device_functions(op)
            for t in inputs:
                t._consumers.append(op)
            self._ops[name] = op
            self._ops_list.append(op)
        return op

    # -- lookup ----------------------------------------------------------------------------
    def get_operations(self):
        return list(self._ops_list)

    def get_operation_by_name(self, name):
        try:
            return self._ops[name]
        except KeyError:
            raise KeyError("The name %r refers to an Operation not in the graph." % name) from None

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name %r looks like an Operation name; Tensor names look like "
                             "'<op name>:<output index>'." % name)
        op_name, idx = name.rsplit(":", 1)
        op = self.get_operation_by_name(op_name)
        try:
            return op.outputs[int(idx)]
        except (IndexError, ValueError):
            raise KeyError("The name %r refers to a Tensor which does not exist: operation %r has "
                           "%d outputs." % (name, op_name, len(op.outputs))) from None

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        obj = _unwrap(obj)
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
        if isinstance(obj, Tensor | Operation):
            if obj.graph is not self:
                raise ValueError("%s is not an element of this graph." % obj)
            if isinstance(obj, Tensor) and not allow_tensor:
                raise TypeError("Expected an Operation, got Tensor %s" % obj.name)
            if isinstance(obj, Operation) and not allow_operation:
                raise TypeError("Expected a Tensor, got Operation %s" % obj.name)
            return obj
        raise TypeError("Can not convert a %s into a Tensor or Operation." % type(obj).__name__)

    def is_fetchable(self, tensor_or_op):
        return True

    # -- collections -----------------------------------------------------------------------
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        names = (names,) if isinstance(names, str) else set(names)
        for n in names:
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_all_collection_keys(self):
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    @property
    def collections(self):
        return self.get_all_collection_keys()


def _infer_outputs(opdef, op, n):
    if n == 0:
        return []
    if opdef.dtype_fn is not None:
        dts = opdef.dtype_fn(op)
    else:
        dts = op._inputs[0].dtype if op._inputs else _dtypes.float32
    dts = list(dts) if isinstance(dts, list | tuple) else [dts] * n
    shapes = opdef.shape_fn(op) if opdef.shape_fn is not None else None
    if shapes is None:
        shapes = [unknown_shape()] * n
    elif isinstance(shapes, TensorShape):
        shapes = [shapes]
    else:
        shapes = [as_shape(s) for s in shapes]
    if len(dts) != n or len(shapes) != n:
        raise ValueError("Op %s (%s): shape/dtype rules gave %d/%d outputs, expected %d"
                         % (op.name, op.type, len(shapes), len(dts), n))
    return list(zip(dts, shapes))


def _as_op(element):
    return element if isinstance(element, Operation) else element.op


def _unwrap(obj):
    """Graph-element view of objects that stand for one (Variables -> their ref tensor's op)."""
    conv = getattr(obj, "_as_graph_element", None)
    return conv() if conv is not None else obj


# -- the default graph (a per-thread stack over one global default) --------------------------
_global_default = None
_stack_local = threading.local()


def _default_graph_stack():
    s = getattr(_stack_local, "stack", None)
    if s is None:
        s = _stack_local.stack = []
    return s


def get_default_graph():
    """The graph new ops go into: the innermost ``as_default()`` graph, else a global one."""
    global _global_default
    s = _default_graph_stack()
    if s:
        return s[-1]
    if _global_default is None:
        _global_default = Graph()
    return _global_default


def reset_default_graph():
    """Replace the global default graph with a new, empty one."""
    global _global_default
    if _default_graph_stack():
        raise AssertionError("Do not use reset_default_graph() inside a graph.as_default() block.")
    _global_default = Graph()


# -- tensor conversion -------------------------------------------------------------------------
_conversion_functions = []   # (type, fn(value, dtype, name) -> Tensor)
_constant_fn = None          # set by zps.framework.constant


def register_tensor_conversion_function(base_type, conversion_func):
    """Teach convert_to_tensor to convert instances of ``base_type`` (e.g. Variable)."""
    _conversion_functions.append((base_type, conversion_func))


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """Return ``value`` as a Tensor: Tensors pass through, Python/numpy values become constants."""
    if isinstance(value, Tensor):
        if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (_dtypes.as_dtype(dtype).name, value.dtype.name, value))
        return value
    for base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            return fn(value, dtype=dtype, name=name)
    if isinstance(value, Operation):
        raise TypeError("Can't convert Operation %r to Tensor (did you mean its output, "
                        "op.outputs[0]?)" % value.name)
    if dtype is None and preferred_dtype is not None:
        try:
            return _constant_fn(value, dtype=preferred_dtype, name=name)
        except (TypeError, ValueError):
            pass
    return _constant_fn(value, dtype=dtype, name=name)


def convert_n_to_tensor(values, dtype=None, name=None):
    return [convert_to_tensor(v, dtype=dtype, name=name) for v in values]


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    if isinstance(value, IndexedSlices):
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def is_symbolic(value):
    return isinstance(value, Tensor | IndexedSlices | Operation) or hasattr(value, "_as_graph_element")


def numpy_value(value, dtype=None):
    """A Python/numpy value as an ndarray of the given DType (strings become object arrays of bytes)."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.dtype_of_value(value)
    if dt is _dtypes.string:
        arr = np.asarray(value, dtype=object)
        return np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s),
                            otypes=[object])(arr) if arr.size else arr
    return np.asarray(value, dtype=dt.as_numpy_dtype)
