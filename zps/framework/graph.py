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
    METRIC_VARIABLES = "metric_variables"
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
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TABLE_INITIALIZERS = "table_initializer"
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

    # Tensors are dict keys everywhere (feeds, plans): identity hashing, in C for speed.
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("Using a zps.Tensor as a Python bool is not allowed: its value is only known "
                        "when a Session runs it. Use zps.cond/where, or fetch it with sess.run first.")

    def __iter__(self):
        raise TypeError("zps.Tensor %s is not iterable in graph mode; use zps.unstack or index it "
                        "with t[i]." % self.name)

    def __len__(self):
        raise TypeError("len is not well defined for symbolic Tensor %s; use t.get_shape() for "
                        "its static shape or zps.shape(t) for its runtime shape." % self.name)

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


class NodeDef(dict):
    """An op as plain data (``name``, ``op``, ``input``, ``device``, ``attr``), as in a GraphDef.

    A dict (msgpack-able) whose keys also read as attributes, like TF1's NodeDef proto
    (``op.node_def.op``).
    """

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


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
        # Names of the ops this one is colocated with (TF1's "loc:@name" groups); [] = its own.
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

    def _set_attr(self, name, value):
        self._attrs[name] = value

    def _set_device(self, device):
        self._device = canonical_name(device)

    def _add_control_input(self, op):
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self._graph._structure_version += 1

    def _add_control_inputs(self, ops):
        for op in ops:
            self._add_control_input(op)

    def colocation_groups(self):
        """The sorted colocation groups of this op, e.g. ``[b'loc:@w']``."""
        names = self._colocation or [self._name]
        return sorted({("loc:@" + n).encode() for n in names})

    def run(self, feed_dict=None, session=None):
        """Run this op in the default (or given) session."""
        _run_in_session(self, feed_dict, session)

    @property
    def node_def(self):
        """This op as plain data (see zps.framework.serialization)."""
        from zps.framework import serialization
        return serialization.node_to_def(self)

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


# TF1's rules: op names and root scopes start with [A-Za-z0-9.]; a scope nested in another may
# also start with '_', '-', '/' or '>'. Op names may also start with '_' and contain '^' (after
# the first character): the names internal machinery gives its ops (the partitioner's _send/^x).
# ':' never appears in a name: it separates the output index in tensor names.
_VALID_ROOT_SCOPE = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9_.\-/>^]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")


class _ControlFrame:
    """One ``control_dependencies`` block: its control ops and the ops created inside it."""

    __slots__ = ("ops", "created")

    def __init__(self, ops):
        self.ops = ops
        self.created = set()


class Graph:
    """A TensorFlow-style computation graph: Operations connected by Tensors.

    Scopes (name, device, control dependencies, colocation) are per thread, as in TF1; the ops,
    names and collections are shared and guarded by a lock.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._ops = {}
        self._ops_list = []
        self._names_in_use = {}
        self._id_counter = 0
        self._structure_version = 0
        self._collections = {}
        self._finalized = False
        self._unfeedable = set()
        self._unfetchable = set()
        self.seed = None
        self._local = threading.local()
        self._container = ""

    # -- thread-local scope stacks ---------------------------------------------------------
    def _tl(self, attr):
        val = getattr(self._local, attr, None)
        if val is None:
            val = []
            setattr(self._local, attr, val)
        return val

    @property
    def _name_stack(self):
        return getattr(self._local, "name_stack", "")

    @_name_stack.setter
    def _name_stack(self, value):
        self._local.name_stack = value

    _device_stack = property(lambda self: self._tl("device_stack"))
    _control_stack = property(lambda self: self._tl("control_stack"))
    _colocation_stack = property(lambda self: self._tl("colocation_stack"))
    _gradient_override_stack = property(lambda self: self._tl("gradient_override_stack"))

    @contextlib.contextmanager
    def _swapped(self, attr, value):
        """Replace one thread-local scope stack for the duration of a block."""
        saved = self._tl(attr)
        setattr(self._local, attr, value)
        try:
            yield
        finally:
            setattr(self._local, attr, saved)

    # -- basic properties ------------------------------------------------------------------
    @property
    def version(self):
        return self._id_counter

    @property
    def graph_def_versions(self):
        from zps.framework import serialization
        return dict(serialization.VERSIONS)

    @property
    def finalized(self):
        return self._finalized

    @property
    def building_function(self):
        return False

    def finalize(self):
        """Make this graph read-only: creating an op afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self):
        self._finalized = False

    def _check_not_finalized(self, what):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified (%s). Build every op "
                               "before the session starts (MonitoredSession finalizes the graph)."
                               % what)

    def _next_id(self):
        self._id_counter += 1
        return self._id_counter

    @contextlib.contextmanager
    def as_default(self):
        """Make this graph the default graph inside the ``with`` block (per thread)."""
        stack = _default_graph_stack()
        stack.append(self)
        try:
            yield self
        finally:
            # Remove this entry even if blocks were exited out of order (InteractiveSession).
            if stack and stack[-1] is self:
                stack.pop()
            else:
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i] is self:
                        del stack[i]
                        break

    def as_graph_def(self, from_version=None, add_shapes=False, ops=None, buffers=None):
        """This graph (or just ``ops`` of it) as plain data (dicts, lists, str, bytes, numbers).

        See ``zps.framework.serialization`` (``buffers``: large arrays out of band);
        ``import_graph_def`` rebuilds it.
        """
        from zps.framework import serialization
        return serialization.graph_to_def(self, ops=ops, add_shapes=add_shapes, buffers=buffers)

    # -- names -----------------------------------------------------------------------------
    def get_name_scope(self):
        return self._name_stack

    def unique_name(self, name, mark_as_used=True):
        """``name`` under the current name scope, suffixed with _1, _2 ... to make it unique.

        Names are compared case-insensitively (``foo`` and ``Foo`` collide), as in TF1.
        """
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        with self._lock:
            i = self._names_in_use.get(key, 0)
            if mark_as_used:
                self._names_in_use[key] = i + 1
            if i > 0:
                while "%s_%d" % (key, i) in self._names_in_use:
                    i += 1
                if mark_as_used:
                    self._names_in_use["%s_%d" % (key, i)] = 1
                name = "%s_%d" % (name, i)
        return name

    @contextlib.contextmanager
    def name_scope(self, name):
        """Open a name scope; yields the scope string ending with '/' ('' for the root scope).

        ``name`` is made unique ('layer', 'layer_1' ...); a name ending in '/' re-enters that exact
        (absolute) scope; None or '' returns to the root scope.
        """
        if isinstance(name, bytes):
            name = name.decode()
        if name:
            regex = _VALID_SCOPE_NAME if self._name_stack else _VALID_ROOT_SCOPE
            if not regex.match(name):
                raise ValueError("'%s' is not a valid scope name: names may contain letters, "
                                 "digits and _ . - / > (and may not start with _ - / at the root)"
                                 % name)
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]  # re-entering an existing scope string
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    # -- devices, control dependencies, colocation ----------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Place ops created in the block: a device string, DeviceSpec, function(op) or None.

        Scopes nest: an inner string sets its fields and outer ones fill the fields it leaves
        unset; a function receives the op and returns its device; None ignores outer scopes.
        """
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
            with self._swapped("control_stack", []):
                yield
            return
        ops = []
        for c in control_inputs:
            if isinstance(c, IndexedSlices):
                c = c.op
            c = self.as_graph_element(c)
            c = c if isinstance(c, Operation) else c.op
            if c not in ops:
                ops.append(c)
        self._control_stack.append(_ControlFrame(ops))
        try:
            yield
        finally:
            self._control_stack.pop()

    def _control_inputs_for(self, input_ops):
        """The control inputs a new op with data inputs ``input_ops`` gets from the scopes.

        As in TF1, a block's controls are skipped when an input was itself created inside that
        block (it already waits for them), and an op that is already a data input is not added.
        """
        out = []
        for frame in self._control_stack:
            if any(op in frame.created for op in input_ops):
                continue
            for c in frame.ops:
                if c not in out and c not in input_ops:
                    out.append(c)
        return out

    def _current_control_inputs(self):
        return self._control_inputs_for(())

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops created in the block are placed with ``op``: in its colocation group, on its device.

        Device scopes opened outside the block are ignored (colocation is stronger); a device
        scope opened inside applies unless ``op`` has a device. ``ignore_existing`` drops the
        colocations of enclosing blocks; ``colocate_with(None, ignore_existing=True)`` clears them.
        """
        if op is None and not ignore_existing:
            raise ValueError("colocate_with(None) requires ignore_existing=True")
        target = None if op is None else _as_op(self.as_graph_element(_unwrap(op)))
        coloc = [] if ignore_existing else list(self._colocation_stack)
        if target is not None:
            coloc.append(target)
        with self._swapped("device_stack", []), self._swapped("colocation_stack", coloc):
            yield

    def _apply_colocation(self, op):
        stack = self._colocation_stack
        if not stack:
            return
        groups = set()
        for target in stack:
            groups.update(target._colocation or [target.name])
            if target.device:
                op._device = target.device
        op._colocation = sorted(groups)

    # -- gradient overrides ----------------------------------------------------------------
    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        """Differentiate the ops of the given types created in the block with the gradient
        registered (``tf.RegisterGradient``) under another name: ``{op type: name}``.

        The name is recorded on each op as its ``_gradient_op_type`` attr, so it travels with
        the graph. Inner blocks extend outer ones; the map is per thread, as the other scopes.

        >>> import zps as tf
        >>> g = tf.Graph()
        >>> with g.as_default(), g.gradient_override_map({"Sign": "Identity"}):
        ...     y = tf.sign(tf.constant(-2.0))  # straight through: d sign(x)/dx = 1
        >>> y.op.get_attr("_gradient_op_type")
        b'Identity'
        """
        if not isinstance(op_type_map, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        stack = self._gradient_override_stack
        stack.append({**(stack[-1] if stack else {}), **op_type_map})
        try:
            yield
        finally:
            stack.pop()

    # -- feeding and fetching ----------------------------------------------------------------
    def prevent_feeding(self, tensor):
        """Mark ``tensor`` as not feedable (Session.run raises ValueError if it is fed)."""
        self._unfeedable.add(tensor)

    def is_feedable(self, tensor):
        return tensor not in self._unfeedable

    def prevent_fetching(self, op):
        """Mark ``op`` as not fetchable (Session.run raises ValueError if it or its outputs are)."""
        self._unfetchable.add(op)

    def is_fetchable(self, tensor_or_op):
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    # -- op creation -----------------------------------------------------------------------
    def create_op(self, op_type, inputs, attrs=None, name=None, num_outputs=None):
        """Create an Operation of a registered type; returns it (outputs in ``op.outputs``).

        ``name`` is made unique under the current name scope; a name ending in '/' (a scope
        opened for this op) is used exactly. Device, control-dependency and colocation scopes
        apply.
        """
        self._check_not_finalized("creating op %r" % (name or op_type))
        opdef = registry.get_op_def(op_type)
        self._check_inputs(inputs, name or op_type)
        with self._lock:
            if name and name.endswith("/"):
                name = self._claim_exact_name(name[:-1])
            else:
                name = self.unique_name(_checked_op_name(name or op_type))
            control = self._control_inputs_for({t.op for t in inputs})
            op = self._new_op(opdef, op_type, name, inputs, attrs, control, num_outputs)
            self._apply_device_functions(op)
            self._apply_colocation(op)
            self._add_op(op)
        return op

    def _import_op(self, op_type, name, inputs, attrs, num_outputs, control_inputs, device):
        """Create an op with an exact name, given control inputs and an original device (on which
        the device scopes are merged, as TF1's import_graph_def does)."""
        self._check_not_finalized("importing op %r" % name)
        opdef = registry.get_op_def(op_type)
        self._check_inputs(inputs, name)
        with self._lock:
            name = self._claim_exact_name(name)
            op = self._new_op(opdef, op_type, name, inputs, attrs, control_inputs, num_outputs)
            op._set_device(device)
            self._apply_device_functions(op)
            self._add_op(op)
        return op

    def _check_inputs(self, inputs, what):
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError("Input to %s must be a Tensor, got %r" % (what, t))
            if t.graph is not self:
                raise ValueError("Tensor %s must be from the same graph as the op being created "
                                 "(%s)." % (t.name, what))

    def _claim_exact_name(self, name):
        _checked_op_name(name)
        if name in self._ops:
            raise ValueError("Duplicate node name in graph: '%s'" % name)
        key = name.lower()
        self._names_in_use[key] = max(self._names_in_use.get(key, 0), 1)
        return name

    def _new_op(self, opdef, op_type, name, inputs, attrs, control, num_outputs):
        overrides = self._gradient_override_stack
        if overrides and op_type in overrides[-1]:
            attrs = dict(attrs or {}, _gradient_op_type=overrides[-1][op_type].encode())
        op = Operation(self, op_type, name, inputs, attrs or {}, control, [])
        n = opdef.num_outputs if num_outputs is None else num_outputs
        op._outputs = [Tensor(op, i, dt, sh)
                       for i, (dt, sh) in enumerate(_infer_outputs(opdef, op, n))]
        return op

    def _add_op(self, op):
        for t in op._inputs:
            t._consumers.append(op)
        for frame in self._control_stack:
            frame.created.add(op)
        self._ops[op._name] = op
        self._ops_list.append(op)

    def _discard_ops(self, ops):
        """Remove ``ops`` (created last, consumed by nothing else): undoes a failed import."""
        doomed = set(ops)
        with self._lock:
            for op in ops:
                for t in op._inputs:
                    t._consumers[:] = [c for c in t._consumers if c not in doomed]
                self._ops.pop(op._name, None)
            self._ops_list[:] = [op for op in self._ops_list if op not in doomed]
            self._structure_version += 1

    # -- lookup ----------------------------------------------------------------------------
    def get_operations(self):
        return list(self._ops_list)

    def get_operation_by_name(self, name):
        """The Operation called ``name``; KeyError if there is none."""
        if not isinstance(name, str | bytes):
            raise TypeError("Operation names are strings, not %s." % type(name).__name__)
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name):
        """The Tensor called ``name`` ('<op name>:<output index>'); KeyError if there is none."""
        if not isinstance(name, str | bytes):
            raise TypeError("Tensor names are strings, not %s." % type(name).__name__)
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """The Tensor or Operation ``obj`` stands for: itself, a name, or a Variable."""
        cls = obj.__class__
        if (cls is Tensor and allow_tensor) or (cls is Operation and allow_operation):
            if obj.graph is not self:  # the common case, first
                raise ValueError("%s is not an element of this graph." % obj)
            return obj
        obj = _unwrap(obj)
        if isinstance(obj, bytes):
            obj = obj.decode()
        if isinstance(obj, str):
            return self._element_by_name(obj, allow_tensor, allow_operation)
        if isinstance(obj, Tensor) and allow_tensor or isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError("%s is not an element of this graph." % obj)
            return obj
        raise TypeError("Can not convert a %s into a %s."
                        % (type(obj).__name__, _kinds(allow_tensor, allow_operation)))

    def _element_by_name(self, name, allow_tensor, allow_operation):
        kinds = _kinds(allow_tensor, allow_operation)
        if ":" in name:
            if not allow_tensor:
                raise ValueError("Name %r appears to refer to a Tensor, not a %s." % (name, kinds))
            op_name, _, index = name.rpartition(":")
            try:
                index = int(index)
            except ValueError:
                raise ValueError("The name %r looks like a Tensor name, but is not a valid one. "
                                 "Tensor names must be of the form '<op_name>:<output_index>'."
                                 % name) from None
            op = self._ops.get(op_name)
            if op is None:
                raise KeyError("The name %r refers to a Tensor which does not exist. The "
                               "operation, %r, does not exist in the graph." % (name, op_name))
            if not 0 <= index < len(op._outputs):
                raise KeyError("The name %r refers to a Tensor which does not exist. The "
                               "operation, %r, exists but only has %d outputs."
                               % (name, op_name, len(op._outputs)))
            return op._outputs[index]
        if not allow_operation:
            what = "refers to an Operation" if name in self._ops else \
                "looks like an (invalid) Operation name"
            raise ValueError("The name %r %s, not a %s. Tensor names must be of the form "
                             "'<op_name>:<output_index>'." % (name, what, kinds))
        op = self._ops.get(name)
        if op is None:
            raise KeyError("The name %r refers to an Operation not in the graph." % name)
        return op

    # -- collections -----------------------------------------------------------------------
    def add_to_collection(self, name, value):
        """Append ``value`` to the collection ``name``."""
        self._check_not_finalized("adding to collection %r" % name)
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        names = (names,) if isinstance(names, str) else set(names)
        for n in names:
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        """The collection's list itself (mutations are seen by the graph)."""
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        """A copy of the collection; with ``scope``, only items whose name matches it (re.match)."""
        with self._lock:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [i for i in items if isinstance(getattr(i, "name", None), str) and pattern.match(i.name)]

    def get_all_collection_keys(self):
        with self._lock:
            return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name):
        with self._lock:
            self._collections.pop(name, None)

    @property
    def collections(self):
        return self.get_all_collection_keys()


def _kinds(allow_tensor, allow_operation):
    return " or ".join(k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok)


def _checked_op_name(name):
    if not _VALID_OP_NAME.match(name):
        raise ValueError("'%s' is not a valid node name: names start with a letter, digit, '.' or "
                         "'_', followed by letters, digits and _ . - / > ^" % name)
    return name


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


def _as_bytes(s):
    """An element of a string tensor: str (as UTF-8) or bytes; a number is refused, as TF1
    refuses it (``bytes(3)`` would be three zero bytes)."""
    if isinstance(s, str):
        return s.encode()
    if isinstance(s, bytes | bytearray | memoryview):
        return bytes(s)
    raise TypeError("Expected string, but got %r of type %r." % (s, type(s).__name__))


def numpy_value(value, dtype=None):
    """A Python/numpy value as an ndarray of the given DType (strings become object arrays of bytes)."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.dtype_of_value(value)
    if dt is _dtypes.string:
        arr = np.asarray(value, dtype=object)
        return np.vectorize(_as_bytes, otypes=[object])(arr) if arr.size else arr
    np_dtype = dt.as_numpy_dtype
    if isinstance(value, np.ndarray | np.generic):
        if value.dtype.kind == "c" and not dt.is_complex:
            value = value.real   # TF keeps a numpy complex value's real part for a real dtype
    elif dt.is_integer:
        _check_int_range(value, np_dtype)
    try:
        return np.asarray(value, dtype=np_dtype)
    except TypeError:
        number = None if isinstance(value, np.ndarray | np.generic) else _first_complex(value)
        if number is None:
            raise
        # numpy refuses a Python complex number for a real dtype, as TF does: TF's words
        raise TypeError("Expected %s, but got %r of type 'complex'." % (dt.name, number)) from None


def _first_complex(value):
    if isinstance(value, list | tuple):
        return next((c for c in map(_first_complex, value) if c is not None), None)
    return value if isinstance(value, complex) else None


def _check_int_range(value, np_dtype):
    # numpy 2 refuses a Python integer its dtype cannot hold; numpy 1 wraps it around (with a
    # DeprecationWarning): the same OverflowError with either.
    arr = np.asarray(value)
    if arr.size == 0 or arr.dtype.kind not in "iuO":
        return
    info = np.iinfo(np_dtype)
    try:
        low, high = arr.min(), arr.max()
    except TypeError:
        return   # not all numbers: the conversion itself says what is wrong
    for v in (low, high):
        if isinstance(v, int | np.integer) and not info.min <= v <= info.max:
            raise OverflowError("Python integer %d out of bounds for %s" % (v, np.dtype(np_dtype).name))
