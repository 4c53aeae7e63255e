"""``tf.TensorArray``: a per-step array of tensors, written once per index, read in loops.

As in TF1, a TensorArray is a resource of the step: ``TensorArrayV3`` creates it (in
``ctx.extras``, so a ``tf.while_loop`` body or ``tf.cond`` branch, which runs as a private graph
in the same step, sees the same array) and outputs its ``handle`` and a ``flow``, a float32
scalar whose only job is ordering: every op that changes the array (``write``, ``scatter``,
``split``) takes the current flow and returns a new one, wrapped in a new TensorArray object
(the "value semantics" of TF1), and reads take the flow, so they run after the writes it
carries. A TensorArray is a ``tf.while_loop`` loop variable by its flow.

Gradients are TF1's: the gradient of an array is a second array of the step (``grad``, one per
``tf.gradients`` call), into which the gradients of reads are written (adding up when an index
is read twice) and from which the gradients of writes are read (zeros where nothing was
written). Through a ``tf.while_loop`` the flow is a float loop variable, so its gradient loop
visits the iterations in reverse, reading the gradient array at each iteration's index.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant([1.0, 2.0, 3.0])
...     squares = tf.TensorArray(tf.float32, size=3)
...     _, squares = tf.while_loop(lambda i, ta: i < 3,
...                                lambda i, ta: (i + 1, ta.write(i, x[i] * x[i])), [0, squares])
...     y = squares.stack()
...     dx, = tf.gradients(tf.reduce_sum(y), [x])
...     print(tf.Session().run([y, dx]))
[array([1., 4., 9.], dtype=float32), array([2., 4., 6.], dtype=float32)]
"""

import contextlib
import itertools

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import array_ops
from zps.ops.op_util import make_op

_STORE = "tensor_arrays"          # ctx.extras key: array name -> _Array, for the step
_CONTAINER = b"_tensor_arrays"    # first entry of a handle (TF1's handles are [container, name])
_serial = itertools.count()       # makes array names unique, as TF's TensorArray_<n>
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


# -- the array of a step ---------------------------------------------------------------------
def _shape_str(shape):
    """A runtime shape as TF's kernels print it: [2,3], [?,2], <unknown>."""
    if shape is None:
        return "<unknown>"
    return "[%s]" % ",".join("?" if d is None else str(d) for d in shape)


def _compatible(shape, spec):
    if spec is None:
        return True
    return len(shape) == len(spec) and all(b is None or a == b for a, b in zip(shape, spec))


def _fully_defined(spec):
    return spec is not None and all(d is not None for d in spec)


class _Array:
    """One TensorArray of a step: its elements (an ndarray, or None while unwritten and once
    read with ``clear_after_read``) and what TF's kernels check them against."""

    def __init__(self, name, dtype, size, element_shape, dynamic_size, clear_after_read,
                 identical_shapes, aggregate=False):
        self.name, self.dtype = name, dtype
        self.values = [None] * size
        self.written = [False] * size
        self.cleared = [False] * size
        self.shapes = [None] * size             # of what was written (a gradient array: of
                                                # what its forward array had written)
        self.element_shape = element_shape      # tuple (None dims unknown), or None
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.identical_shapes = identical_shapes
        self.aggregate = aggregate              # a gradient array: writes to an index add up
        self.closed = False

    def fail(self, op_name, message, *args):
        raise errors.InvalidArgumentError(op_name, None, "TensorArray %s: %s"
                                          % (self.name, message % args))

    def write(self, xp, index, value, op_name):
        if index < 0 or (not self.dynamic_size and index >= len(self.values)):
            self.fail(op_name, "Tried to write to index %d but array is not resizeable and size "
                      "is: %d", index, len(self.values))
        if index >= len(self.values):
            grow = index + 1 - len(self.values)
            self.values += [None] * grow
            self.written += [False] * grow
            self.cleared += [False] * grow
            self.shapes += [None] * grow
        if value.dtype != self.dtype.as_numpy_dtype:
            raise errors.InvalidArgumentError(
                op_name, None, "TensorArray dtype is %s but Op is trying to write dtype %s."
                % (_tf_name(self.dtype), _tf_name(_dtypes.as_dtype(value.dtype))))
        shape = tuple(value.shape)
        if not _compatible(shape, self.element_shape):
            self.fail(op_name, "Could not write to TensorArray index %d because the value shape "
                      "is %s which is incompatible with the TensorArray's inferred element "
                      "shape: %s (consider setting infer_shape=False).", index,
                      _shape_str(shape), _shape_str(self.element_shape))
        if self.identical_shapes:
            self.element_shape = shape
        if self.cleared[index]:
            self.fail(op_name, "Could not write to TensorArray index %d because it has already "
                      "been read.", index)
        if self.written[index]:
            if not self.aggregate:
                self.fail(op_name, "Could not write to TensorArray index %d because it has "
                          "already been written to.", index)
            old = self.values[index]
            if old.shape != value.shape:
                self.fail(op_name, "Could not aggregate to TensorArray index %d because the "
                          "existing shape is %s but the new input shape is %s.", index,
                          _shape_str(old.shape), _shape_str(shape))
            self.values[index] = old + value
        else:
            # A copy: the array outlives the kernel call, its input buffer may not.
            self.values[index] = xp.array(value, copy=True)
            self.written[index], self.shapes[index] = True, shape

    def read(self, xp, index, op_name):
        if index < 0 or index >= len(self.values):
            raise errors.InvalidArgumentError(
                op_name, None, "Tried to read from index %d but array size is: %d"
                % (index, len(self.values)))
        if self.cleared[index]:
            self.fail(op_name, "Could not read index %d twice because it was cleared after a "
                      "previous read (perhaps try setting clear_after_read = false?).", index)
        zeros_shape = self.shapes[index]
        if zeros_shape is None and _fully_defined(self.element_shape):
            zeros_shape = self.element_shape
        if self.written[index]:
            value = self.values[index]
        elif zeros_shape is not None:   # as TF: an unwritten element of known shape is zeros
            value = xp.zeros(zeros_shape, self.dtype.as_numpy_dtype)
        else:
            self.fail(op_name, "Could not read from TensorArray index %d.  Furthermore, the "
                      "element shape is not fully defined: %s.  It is possible you are working "
                      "with a resizeable TensorArray and stop_gradients is not allowing the "
                      "gradients to be written.  If you set the full element_shape property on "
                      "the forward TensorArray, the proper all-zeros tensor will be returned "
                      "instead of incurring this error.", index, _shape_str(self.element_shape))
        if self.clear_after_read:
            self.values[index], self.cleared[index] = None, True
        return value


def _tf_name(dtype):
    return _TF_NAMES.get(dtype.name, dtype.name)


def _handle_value(name):
    return np.array([_CONTAINER, name.encode()], dtype=object)


def _name_of(handle):
    name = handle[1]
    return name.decode() if isinstance(name, bytes) else str(name)


def _lookup(ctx, handle, op_name):
    name = _name_of(handle)
    array = ctx.extras.get(_STORE, {}).get(name)
    if array is None:
        raise errors.NotFoundError(
            op_name, None, "TensorArray %s does not exist in this step: a TensorArray lives for "
            "one Session.run, on the task of the op that created it" % name)
    if array.closed:
        raise errors.InvalidArgumentError(op_name, None, "TensorArray %s has already been closed."
                                          % name)
    return array


def _flow_value():
    return np.array(0.0, np.float32)


def _runtime_shape(shape):
    shape = as_shape(shape)
    return None if shape.ndims is None else tuple(shape.as_list())


def _stacked(xp, values, op_name):
    for i, v in enumerate(values[1:], 1):
        if v.shape != values[0].shape:
            raise errors.InvalidArgumentError(
                op_name, None, "TensorArray has inconsistent shapes.  Index 0 has shape: %s but "
                "index %d has shape: %s" % (_shape_str(values[0].shape), i, _shape_str(v.shape)))
    return xp.stack(values)


# -- the graph-side object ---------------------------------------------------------------------
class TensorArray:
    """A list of ``size`` tensors of one dtype, written once per index, for ``tf.while_loop``.

    Each ``write``/``scatter``/``unstack``/``split`` returns a new TensorArray (use it: the old
    one does not see the write); ``read``/``gather``/``stack``/``concat`` return tensors. With
    ``dynamic_size`` writes past the end grow it; with ``clear_after_read`` (the default) an
    index may be read once; with ``infer_shape`` (the default) every element has one shape.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     ta = tf.TensorArray(tf.float32, size=2).write(0, [1.0, 2.0]).write(1, [3.0, 4.0])
    ...     print(ta.element_shape, tf.Session().run(ta.stack()).tolist())
    (2,) [[1.0, 2.0], [3.0, 4.0]]
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot provide both `handle` and `tensor_array_name` arguments at "
                             "the same time.")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError("Expected `handle` to be a Tensor, but got `%s` of type `%s` "
                            "instead." % (handle, type(handle)))
        if handle is None and size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        for what, value in (("size", size), ("element_shape", element_shape),
                            ("dynamic_size", dynamic_size),
                            ("clear_after_read", clear_after_read)):
            if handle is not None and value is not None:
                raise ValueError("Cannot provide both `handle` and `%s` arguments at the same "
                                 "time." % what)
        self._dtype = _dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = dynamic_size or False
        self._size = size
        self._infer_shape = infer_shape
        self._colocate_with_first_write_call = colocate_with_first_write_call
        # One list shared by every TensorArray of this array (writes refine it, as in TF1).
        self._element_shape = [as_shape(element_shape)]
        graph = get_default_graph()
        with graph.name_scope(name or "TensorArray") as scope:
            if handle is not None:
                if flow is None:
                    raise ValueError("flow must not be None if handle is not None.")
                self._handle, self._flow = handle, convert_to_tensor(flow)
                return
            size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
            self._handle, self._flow = make_op(
                "TensorArrayV3", [size], name=scope, dtype=self._dtype,
                element_shape=self._element_shape[0], dynamic_size=self._dynamic_size,
                clear_after_read=True if clear_after_read is None else bool(clear_after_read),
                identical_element_shapes=bool(infer_shape),
                tensor_array_name=tensor_array_name or "")

    @property
    def flow(self):
        """The float32 scalar that orders this array's ops (a while_loop carries it)."""
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def handle(self):
        return self._handle

    @property
    def element_shape(self):
        """The static shape of the elements, as far as known (writes refine it)."""
        return self._element_shape[0]

    @property
    def dynamic_size(self):
        return self._dynamic_size

    def _check_element_shape(self, shape):
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError("Inconsistent shapes: saw %s but expected %s "
                             % (shape, self.element_shape))
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    def _placed(self):
        """Ops of this array run where it was created (its state is on that task)."""
        device = self._handle.op.device
        return self._handle.graph.device(device) if device else contextlib.nullcontext()

    def _with_flow(self, flow):
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow,
                         infer_shape=self._infer_shape,
                         colocate_with_first_write_call=self._colocate_with_first_write_call)
        ta._dynamic_size, ta._size = self._dynamic_size, self._size
        ta._element_shape = self._element_shape
        return ta

    def identity(self):
        """A TensorArray whose flow is an identity of this one's (to add control
        dependencies to)."""
        return self._with_flow(array_ops.identity(self._flow))

    def grad(self, source, flow=None, name=None):
        """The gradient array of this array for the ``tf.gradients`` call named ``source``."""
        graph = self._handle.graph
        flow = self._flow if flow is None else flow
        with graph.name_scope(name or "TensorArrayGrad"), self._placed():
            g_handle, _ = make_op("TensorArrayGradV3", [self._handle, flow],
                                  name=name or "TensorArrayGradV3", source=source)
            with graph.control_dependencies([g_handle]):
                flow = array_ops.identity(flow, name="gradient_flow")
            g = TensorArray(self._dtype, handle=g_handle, flow=flow,
                            infer_shape=self._infer_shape, colocate_with_first_write_call=False)
            g._element_shape = self._element_shape
            return g

    def read(self, index, name=None):
        """The element at ``index`` (an int32 scalar)."""
        with self._placed():
            value = make_op("TensorArrayReadV3", [self._handle, _index(index), self._flow],
                            name=name or "TensorArrayReadV3", dtype=self._dtype)
        value.set_shape(self.element_shape)
        return value

    def write(self, index, value, name=None):
        """A TensorArray with ``value`` at ``index`` (each index is written once)."""
        graph = self._handle.graph
        with graph.name_scope(name or "TensorArrayWrite"), self._placed():
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            self._check_element_shape(value.get_shape())
            flow = make_op("TensorArrayWriteV3", [self._handle, _index(index), value,
                                                  self._flow], name=name or "TensorArrayWriteV3")
            return self._with_flow(flow)

    def stack(self, name=None):
        """All elements stacked along a new first dimension (``gather`` of 0 .. size-1)."""
        graph = self._handle.graph
        with graph.name_scope(name or "TensorArrayStack"), self._placed():
            value = self.gather(array_ops.range(0, self.size()), name=name)
            if self.element_shape and not self._dynamic_size and self._size is not None:
                value.set_shape([_static_int(self._size)] + self.element_shape.as_list())
            return value

    def gather(self, indices, name=None):
        """The elements at ``indices`` (a 1-D int32 tensor) stacked."""
        element_shape = self.element_shape
        with self._placed():
            value = make_op("TensorArrayGatherV3", [self._handle, _index(indices), self._flow],
                            name=name or "TensorArrayGatherV3", dtype=self._dtype,
                            element_shape=element_shape)
        if self.element_shape:
            value.set_shape([None] + self.element_shape.as_list())
        return value

    def concat(self, name=None):
        """All elements concatenated along their first dimension."""
        shape = self.element_shape
        with self._placed():
            value, _ = make_op("TensorArrayConcatV3", [self._handle, self._flow],
                               name=name or "TensorArrayConcatV3", dtype=self._dtype,
                               element_shape_except0=shape[1:])
        if shape and shape.ndims > 0:
            dim0 = None
            size = None if self._dynamic_size or self._size is None else _static_int(self._size)
            if self._infer_shape and size is not None and shape.as_list()[0] is not None:
                dim0 = size * shape.as_list()[0]
            value.set_shape([dim0] + shape.as_list()[1:])
        return value

    def unstack(self, value, name=None):
        """A TensorArray whose element i is ``value[i]`` (``scatter`` to 0 .. n-1)."""
        graph = self._handle.graph
        with graph.name_scope(name or "TensorArrayUnstack"):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _at_least_vector(value, "unstack")
            num_elements = array_ops.shape(value)[0]
            return self.scatter(array_ops.range(0, num_elements), value, name=name)

    def scatter(self, indices, value, name=None):
        """A TensorArray with ``value[i]`` at index ``indices[i]``."""
        graph = self._handle.graph
        with graph.name_scope(name or "TensorArrayScatter"), self._placed():
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            _at_least_vector(value, "scatter")
            indices = _index(indices)
            n, rows = indices.get_shape(), value.get_shape()[0].value
            if n.ndims == 1 and n.as_list()[0] is not None and rows is not None \
                    and n.as_list()[0] != rows:
                raise ValueError("Dimensions must be equal, but are %d and %d for the scatter of "
                                 "TensorArray %s: %d indices for the %d rows of value %s"
                                 % (rows, n.as_list()[0], self._handle.op.name, n.as_list()[0],
                                    rows, value.name))
            self._check_element_shape(value.get_shape()[1:])
            flow = make_op("TensorArrayScatterV3", [self._handle, indices, value, self._flow],
                           name=name or "TensorArrayScatterV3")
            return self._with_flow(flow)

    def split(self, value, lengths, name=None):
        """A TensorArray whose element i is the i-th of the pieces of ``value`` (along its first
        dimension) of ``lengths``."""
        from zps.ops import math_ops  # math_ops imports control_flow_ops, which imports us
        graph = self._handle.graph
        with graph.name_scope(name or "TensorArraySplit"), self._placed():
            value = convert_to_tensor(value, dtype=self._dtype, name="value")
            lengths = convert_to_tensor(lengths, preferred_dtype=_dtypes.int64)
            known = constant_value(lengths)
            if value.get_shape().ndims is not None and known is not None \
                    and np.ndim(known) == 1 and len(known) and known.max() == known.min():
                self._check_element_shape(
                    TensorShape([int(known[0])]).concatenate(value.get_shape()[1:]))
            flow = make_op("TensorArraySplitV3", [self._handle, value,
                                                  math_ops.cast(lengths, _dtypes.int64),
                                                  self._flow], name=name or "TensorArraySplitV3")
            return self._with_flow(flow)

    def size(self, name=None):
        """The number of elements (an int32 scalar)."""
        if not self._dynamic_size and self._size is not None:
            return convert_to_tensor(self._size, dtype=_dtypes.int32)
        with self._placed():
            return make_op("TensorArraySizeV3", [self._handle, self._flow],
                           name=name or "TensorArraySizeV3")

    def close(self, name=None):
        """An op that frees the elements; later reads and writes fail."""
        with self._placed():
            return make_op("TensorArrayCloseV3", [self._handle], name=name or "TensorArrayCloseV3")

    def __repr__(self):
        return "<tf.TensorArray %s dtype=%s element_shape=%s>" % (
            self._handle.op.name, self._dtype.name, self.element_shape)


def _index(value):
    t = convert_to_tensor(value, preferred_dtype=_dtypes.int32)
    if not t.dtype.is_integer:
        raise TypeError("TensorArray indices must be integers, got %s (%s)" % (t.dtype.name, t.name))
    return t


def _static_int(value):
    known = constant_value(value) if isinstance(value, Tensor) else value
    return None if known is None else int(known)


def _at_least_vector(value, what):
    if value.get_shape().ndims == 0:
        raise ValueError("TensorArray.%s needs a value of rank at least 1 (its rows are the "
                         "elements); got the scalar %s" % (what, value.name))


def _grad_source(tensor):
    """Which ``tf.gradients`` call is building this gradient: the name scope it opened (TF1's
    _GetGradSource). The first "gradients" scope counts, as zps differentiates a while_loop's
    body with a nested gradients call inside the outer one."""
    for name in (tensor.graph.get_name_scope(), tensor.name):
        tokens = name.split("/")
        hits = [k for k, token in enumerate(tokens) if token.startswith("gradients")]
        if hits:
            return "/".join(tokens[:hits[0] + 1])
    raise ValueError("Expected op/tensor name to start with gradients (excluding scope), got: "
                     "%s. This means that a tf.gradients op with this op in its dependency path "
                     "has a custom name that does not start with 'gradients'. Please make sure "
                     "all calls to tf.gradients that have non-empty `name` arguments use names "
                     "that start with 'gradients'." % tensor.name)


def _gradient_array(op, dtype, flow, source):
    handle = op.inputs[0]
    return TensorArray(dtype, handle=handle, flow=flow,
                       colocate_with_first_write_call=False).grad(source=source, flow=flow)


def _after_forward(op, flow):
    """``flow`` (a write's output gradient), once the forward write ran: the gradient array is
    read only after the forward op wrote (TF1's write_barrier)."""
    flow_out = array_ops.identity(op.outputs[0], name="flow_out")
    with op.graph.control_dependencies([flow_out]):
        return array_ops.identity(flow, name="write_barrier")


# -- ops: kernel, shape and gradient of each ---------------------------------------------------
_FLOW = dict(dtype=lambda op: _dtypes.float32, shape=lambda op: TensorShape([]))


def _create_kernel(ctx, size, dtype, element_shape, dynamic_size, clear_after_read,
                   identical_element_shapes, tensor_array_name, op_name):
    size = int(size)
    if size < 0:
        raise errors.InvalidArgumentError(op_name, None, "Size should be >= 0.")
    name = "%s_%d" % (tensor_array_name or op_name, next(_serial))
    ctx.extras.setdefault(_STORE, {})[name] = _Array(
        name, dtype, size, _runtime_shape(element_shape), dynamic_size, clear_after_read,
        identical_element_shapes)
    return _handle_value(name), _flow_value()


register_op("TensorArrayV3", dtype=lambda op: [_dtypes.string, _dtypes.float32],
            shape=lambda op: [TensorShape([2]), TensorShape([])], num_outputs=2,
            kernel=_create_kernel, stateful=True, needs_op_name=True, grad=None)


def _grad_kernel(ctx, handle, flow, source, op_name):
    forward = _lookup(ctx, handle, op_name)
    name = "%s@%s" % (forward.name, source)
    arrays = ctx.extras[_STORE]
    if name not in arrays:
        grad = _Array(name, forward.dtype, len(forward.values), forward.element_shape, False,
                      True, forward.identical_shapes, aggregate=True)
        grad.shapes = list(forward.shapes)   # unwritten gradients are zeros of these shapes
        arrays[name] = grad
    return _handle_value(name), _flow_value()


register_op("TensorArrayGradV3", dtype=lambda op: [_dtypes.string, _dtypes.float32],
            shape=lambda op: [TensorShape([2]), TensorShape([])], num_outputs=2,
            kernel=_grad_kernel, stateful=True, needs_op_name=True, grad=None)


def _write_kernel(ctx, handle, index, value, flow, op_name):
    _lookup(ctx, handle, op_name).write(ctx.xp, int(index), value, op_name)
    return _flow_value()


def _write_grad(op, flow):
    flow = _after_forward(op, flow)
    g = _gradient_array(op, op.inputs[2].dtype.base_dtype, flow, _grad_source(flow))
    return [None, None, g.read(op.inputs[1]), flow]


register_op("TensorArrayWriteV3", **_FLOW, kernel=_write_kernel, stateful=True,
            needs_op_name=True, grad=_write_grad)


def _read_kernel(ctx, handle, index, flow, dtype, op_name):
    return _lookup(ctx, handle, op_name).read(ctx.xp, int(index), op_name)


def _read_grad(op, grad):
    g = _gradient_array(op, op._attrs["dtype"], op.inputs[2], _grad_source(grad))
    return [None, None, g.write(op.inputs[1], grad).flow]


register_op("TensorArrayReadV3", dtype=lambda op: op._attrs["dtype"],
            shape=lambda op: unknown_shape(), kernel=_read_kernel, stateful=True,
            needs_op_name=True, grad=_read_grad)


def _gather_kernel(ctx, handle, indices, flow, dtype, element_shape, op_name):
    array = _lookup(ctx, handle, op_name)
    if np.ndim(indices) != 1:
        raise errors.InvalidArgumentError(op_name, None, "Expected indices to be a vector, "
                                          "received shape: %s" % _shape_str(np.shape(indices)))
    if len(indices) == 0:
        shape = _runtime_shape(element_shape)
        if not _fully_defined(shape):
            raise errors.UnimplementedError(
                op_name, None, "TensorArray has size zero, but element shape %s is not fully "
                "defined. Currently only static shapes are supported when packing zero-size "
                "TensorArrays." % _shape_str(shape))
        return ctx.xp.zeros((0,) + shape, dtype.as_numpy_dtype)
    return _stacked(ctx.xp, [array.read(ctx.xp, int(i), op_name) for i in indices], op_name)


def _gather_grad(op, grad):
    g = _gradient_array(op, op._attrs["dtype"], op.inputs[2], _grad_source(grad))
    return [None, None, g.scatter(op.inputs[1], grad).flow]


def _gather_shape(op):
    shape = as_shape(op._attrs["element_shape"])
    return unknown_shape() if shape.ndims is None else TensorShape([None] + shape.as_list())


register_op("TensorArrayGatherV3", dtype=lambda op: op._attrs["dtype"], shape=_gather_shape,
            kernel=_gather_kernel, stateful=True, needs_op_name=True, grad=_gather_grad)


def _scatter_kernel(ctx, handle, indices, value, flow, op_name):
    array = _lookup(ctx, handle, op_name)
    if np.ndim(indices) != 1:
        raise errors.InvalidArgumentError(op_name, None, "Expected indices to be a vector, "
                                          "received shape: %s" % _shape_str(np.shape(indices)))
    if np.ndim(value) == 0 or len(indices) != value.shape[0]:
        raise errors.InvalidArgumentError(
            op_name, None, "Expected len(indices) == values.shape[0], but saw: %d vs. %s"
            % (len(indices), value.shape[0] if np.ndim(value) else "a scalar"))
    if len(indices) and not array.dynamic_size and int(np.max(indices)) >= len(array.values):
        raise errors.InvalidArgumentError(
            op_name, None, "Max scatter index must be < array size (%d vs. %d)"
            % (int(np.max(indices)), len(array.values)))
    for row, i in enumerate(indices):
        array.write(ctx.xp, int(i), value[row], op_name)
    return _flow_value()


def _scatter_grad(op, flow):
    flow = _after_forward(op, flow)
    g = _gradient_array(op, op.inputs[2].dtype.base_dtype, flow, _grad_source(flow))
    return [None, None, g.gather(op.inputs[1]), flow]


register_op("TensorArrayScatterV3", **_FLOW, kernel=_scatter_kernel, stateful=True,
            needs_op_name=True, grad=_scatter_grad)


def _concat_kernel(ctx, handle, flow, dtype, element_shape_except0, op_name):
    array = _lookup(ctx, handle, op_name)
    if not array.values:
        shape = _runtime_shape(element_shape_except0)
        if not _fully_defined(shape):
            raise errors.UnimplementedError(
                op_name, None, "TensorArray has size zero, but element_shape_except0 %s is not "
                "fully defined. Currently only static shapes are supported when concatenating "
                "zero-size TensorArrays." % _shape_str(shape))
        return ctx.xp.zeros((0,) + shape, dtype.as_numpy_dtype), np.zeros([0], np.int64)
    values = [array.read(ctx.xp, i, op_name) for i in range(len(array.values))]
    for i, v in enumerate(values):
        if v.ndim == 0:
            raise errors.InvalidArgumentError(
                op_name, None, "Concat saw a scalar shape at index %d but requires at least "
                "vectors.  Did you mean to call pack?" % i)
        if v.shape[1:] != values[0].shape[1:]:
            raise errors.InvalidArgumentError(
                op_name, None, "TensorArray has inconsistent shapes.  Index 0 has (excepting "
                "dimension 0) shape: %s but index %d has (excepting dimension 0) shape: %s"
                % (_shape_str(values[0].shape[1:]), i, _shape_str(v.shape[1:])))
    lengths = np.array([v.shape[0] for v in values], np.int64)
    return ctx.xp.concatenate(values), lengths


def _concat_grad(op, grad, _):
    g = _gradient_array(op, op._attrs["dtype"], op.inputs[1], _grad_source(grad))
    return [None, g.split(grad, lengths=op.outputs[1]).flow]


def _concat_shape(op):
    rest = as_shape(op._attrs["element_shape_except0"])
    value = unknown_shape() if rest.ndims is None else TensorShape([None] + rest.as_list())
    return [value, TensorShape([None])]


register_op("TensorArrayConcatV3", dtype=lambda op: [op._attrs["dtype"], _dtypes.int64],
            shape=_concat_shape, num_outputs=2, kernel=_concat_kernel, stateful=True,
            needs_op_name=True, grad=_concat_grad)


def _split_kernel(ctx, handle, value, lengths, flow, op_name):
    array = _lookup(ctx, handle, op_name)
    if np.ndim(lengths) != 1:
        raise errors.InvalidArgumentError(op_name, None, "Expected lengths to be a vector, "
                                          "received shape: %s" % _shape_str(np.shape(lengths)))
    if value.ndim == 0:
        raise errors.InvalidArgumentError(op_name, None, "Expected value to be at least a "
                                          "vector, but received shape: []")
    total = int(np.sum(lengths))
    if total != value.shape[0]:
        raise errors.InvalidArgumentError(
            op_name, None, "Expected sum of lengths to be equal to values.shape[0], but sum of "
            "lengths is %d and value's shape is: %s" % (total, _shape_str(value.shape)))
    if not array.dynamic_size and len(lengths) != len(array.values):
        raise errors.InvalidArgumentError(
            op_name, None, "TensorArray's size is not equal to the size of lengths (%d vs. %d), "
            "and the TensorArray is not marked as dynamically resizeable"
            % (len(array.values), len(lengths)))
    start = 0
    for i, n in enumerate(lengths):
        array.write(ctx.xp, i, value[start:start + int(n)], op_name)
        start += int(n)
    return _flow_value()


def _split_grad(op, flow):
    flow = _after_forward(op, flow)
    g = _gradient_array(op, op.inputs[1].dtype.base_dtype, flow, _grad_source(flow))
    return [None, g.concat(), None, flow]


register_op("TensorArraySplitV3", **_FLOW, kernel=_split_kernel, stateful=True,
            needs_op_name=True, grad=_split_grad)


register_op("TensorArraySizeV3", dtype=lambda op: _dtypes.int32, shape=lambda op: TensorShape([]),
            kernel=lambda ctx, handle, flow, op_name: np.array(
                len(_lookup(ctx, handle, op_name).values), np.int32),
            stateful=True, needs_op_name=True, grad=None)


def _close_kernel(ctx, handle, op_name):
    array = ctx.extras.get(_STORE, {}).get(_name_of(handle))
    if array is not None:   # closing twice is fine, as in TF
        array.closed = True
        array.values = [None] * len(array.values)


register_op("TensorArrayCloseV3", kernel=_close_kernel, num_outputs=0, stateful=True,
            needs_op_name=True, grad=None)

__all__ = ["TensorArray"]
