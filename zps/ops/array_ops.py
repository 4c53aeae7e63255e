"""Array ops: placeholders, shapes, reshaping, filling, slicing and indexing, joining and
splitting, padding and tiling, gathering and scattering, selecting, segment reductions, masks,
matrix bands and diagonals, grids and evenly spaced values.

Each op is one block: its registration (dtype/shape rule, kernel, gradient rule) followed by the
public wrapper that builds it. Shape rules use what is known statically, down to single entries
of shape vectors, so that the usual TF1 idioms keep good static shapes:

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 3, 4])
...     y = tf.reshape(x, [tf.shape(x)[0], -1])
...     print(y.get_shape().as_list(), x[:, 1:, ::-2].get_shape().as_list())
[None, 12] [None, 2, 2]

``tf.range`` and ``tf.slice`` shadow Python builtins in this module, so the builtins are spelled
``builtins.range`` and ``builtins.slice`` here.
"""

import builtins
import collections

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant, constant_value, register_constant_folder
from zps.framework.graph import (
    IndexedSlices,
    Tensor,
    convert_to_tensor,
    is_symbolic,
    register_tensor_conversion_function,
)
from zps.framework.registry import register_op
from zps.framework.tensor_shape import Dimension, TensorShape, as_shape, unknown_shape
from zps.ops.op_util import const_axis, make_op, normalize_axis, same_shape, to_tensors

newaxis = None  # tf.newaxis: ``x[:, tf.newaxis]`` inserts a dimension of size 1


def _bad_input(msg, *args):
    """A kernel failure the executor reports with the op's name."""
    return errors.InvalidArgumentError(None, None, msg % args)


def _outputs(parts):
    # A kernel of a one-output op returns the array itself, of a multi-output op a sequence.
    return parts[0] if len(parts) == 1 else tuple(parts)


def _axis_of(axis, ndims, op):
    """One axis normalized against ``ndims`` (kept as given when the rank is unknown)."""
    return normalize_axis(axis, ndims, "%s '%s'" % (op.type, op.name))[0]


# -- static values (partial constant folding) ----------------------------------------------------
# Shape rules need the values of small integer tensors (shape vectors, begins, sizes) even when
# only some of their entries are known: ``tf.stack([tf.shape(x)[0], 5])`` is "?, 5". A partial
# value is an object ndarray whose entries are numbers, None (unknown) or a _DimOf (an unknown
# dimension of some tensor's shape, which lets reshape infer a -1 against its own input).
_MAX_FOLD_ELEMENTS = 10000  # larger tensors are never folded at graph-building time
_partial_rules = {}  # op type -> fn(op) -> object ndarray (value of output 0) or None


class _DimOf:
    """The statically unknown dimension ``index`` of ``tensor``'s shape."""

    __slots__ = ("tensor", "index")

    def __init__(self, tensor, index):
        self.tensor, self.index = tensor, index

    def __eq__(self, other):
        return isinstance(other, _DimOf) and other.tensor is self.tensor and other.index == self.index

    def __hash__(self):
        return hash((id(self.tensor), self.index))


def _is_int(v):
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _is_number(v):
    return v is not None and not isinstance(v, _DimOf)


def _object_array(value):
    """``value`` (an ndarray, or a single entry) as an object ndarray."""
    if isinstance(value, np.ndarray):
        return value.astype(object)
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _object_vector(items):
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def partial_value(tensor):
    """What is statically known of ``tensor``'s value: an object ndarray of numbers, None
    (unknown) and symbolic dimensions, or None if the value's shape is unknown or too large."""
    n = tensor.get_shape().num_elements()
    if n is None or n > _MAX_FOLD_ELEMENTS:
        return None
    rule = _partial_rules.get(tensor.op.type)
    if rule is not None and tensor.value_index == 0:
        try:
            value = rule(tensor.op)
        except (ValueError, IndexError, TypeError):
            value = None
        if value is not None:
            return value
    known = constant_value(tensor)
    if known is not None:
        return _object_array(np.asarray(known))
    return np.full(tensor.get_shape().as_list(), None, dtype=object)


def _fold_known(op):
    """Constant folder of an op with a partial-value rule: its value when every entry is known."""
    n = op.outputs[0].get_shape().num_elements()
    if n is None or n > _MAX_FOLD_ELEMENTS:
        return None
    value = _partial_rules[op.type](op)
    if value is None or not all(_is_number(v) for v in value.flat):
        return None
    return np.array(value.tolist(), dtype=op.outputs[0].dtype.as_numpy_dtype).reshape(value.shape)


def _register_partial(op_type, rule, fold=True):
    _partial_rules[op_type] = rule
    if fold:
        register_constant_folder(op_type, _fold_known)


def shape_from_value(t):
    """The static shape described by the 1-D shape tensor ``t`` (unknown entries are None)."""
    dims = partial_value(t)
    if dims is not None and dims.ndim == 1:
        return TensorShape([int(d) if _is_int(d) and d >= 0 else None for d in dims])
    n = t.get_shape()
    return unknown_shape(n[0].value if n.ndims == 1 else None)


# A cast between integer types or an identity keeps the (partial) value.
_register_partial("Identity", lambda op: partial_value(op.inputs[0]), fold=False)
_register_partial("Cast", lambda op: partial_value(op.inputs[0])
                  if op.inputs[0].dtype.is_integer and op.outputs[0].dtype.is_integer else None,
                  fold=False)


# -- tensor conversion: lists holding tensors are packed (TF1's autopacking) ---------------------
def _contains_symbolic(value):
    if isinstance(value, list | tuple):
        return any(_contains_symbolic(v) for v in value)
    return is_symbolic(value)


def _autopack(value, dtype, name):
    elems = [_autopack(v, dtype, None) if isinstance(v, list | tuple) and _contains_symbolic(v)
             else convert_to_tensor(v, dtype=dtype) for v in value]
    return stack(elems, name=name or "packed")


def _first_symbolic_dtype(value):
    if isinstance(value, list | tuple):
        for v in value:
            dt = _first_symbolic_dtype(v)
            if dt is not None:
                return dt
        return None
    return value.dtype.base_dtype if is_symbolic(value) and hasattr(value, "dtype") else None


def _list_to_tensor(value, dtype=None, name=None):
    if not _contains_symbolic(value):
        return constant(value, dtype=dtype, name=name or "Const")
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else _first_symbolic_dtype(value)
    return _autopack(value, dtype, name)


register_tensor_conversion_function((list, tuple), _list_to_tensor)


def _int_array(value, what):
    """A shape-like Python value (list, array, TensorShape) as an int32 (or int64) ndarray."""
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError("%s must be fully defined, got the partially known shape %s"
                             % (what, value))
        value = value.as_list()
    arr = np.asarray(value)
    if arr.dtype == object:  # e.g. a list holding Dimensions
        arr = np.asarray([int(d) for d in arr.reshape(-1)]).reshape(arr.shape)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError("%s must hold integers, got %r" % (what, value))
    big = arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min)
    return arr.astype(np.int64 if big else np.int32)


def _int_tensor(value, what):
    """A shape-like argument (a Python value, a list holding scalar tensors, or a tensor) as an
    integer tensor."""
    if not (is_symbolic(value) or _contains_symbolic(value)):
        return constant(_int_array(value, what))
    t = convert_to_tensor(value)
    if not t.dtype.is_integer:
        raise TypeError("%s must be an int32 or int64 tensor, got %s (%s)" % (what, t.dtype.name, t.name))
    return t


# -- Placeholder ---------------------------------------------------------------------------------
def _placeholder_kernel(ctx, dtype, shape, op_name):
    raise errors.InvalidArgumentError(
        op_name, None, "You must feed a value for placeholder tensor '%s' with dtype %s and shape %s"
        % (op_name, dtype.name, as_shape(shape)))


register_op("Placeholder", dtype=lambda op: op._attrs["dtype"],
            shape=lambda op: as_shape(op._attrs["shape"]), kernel=_placeholder_kernel,
            needs_op_name=True, grad=None)


def placeholder(dtype, shape=None, name=None):
    """A tensor whose value must be fed: ``sess.run(y, feed_dict={x: value})``."""
    return make_op("Placeholder", [], name=name or "Placeholder",
                   dtype=_dtypes.as_dtype(dtype), shape=_shape_attr(shape))


register_op("PlaceholderWithDefault", shape=lambda op: as_shape(op._attrs["shape"]),
            kernel=lambda ctx, x, shape: x, grad=lambda op, g: [g])


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF1's argument name
    """A placeholder that yields ``input`` when not fed."""
    x = convert_to_tensor(input)
    return make_op("PlaceholderWithDefault", [x], name=name or "PlaceholderWithDefault",
                   shape=_shape_attr(shape))


def _shape_attr(shape):
    s = as_shape(shape) if shape is not None else unknown_shape()
    return None if s.ndims is None else tuple(s.as_list())


# -- Identity, StopGradient ----------------------------------------------------------------------
register_op("Identity", shape=same_shape, kernel=lambda ctx, x: x, grad=lambda op, g: [g],
            aliases_input=True, sparse_grad_ok=True)


def identity(input, name=None):  # noqa: A002
    """The same value as ``input`` (a new tensor; for a variable, a read of its value)."""
    return make_op("Identity", [convert_to_tensor(input)], name=name or "Identity")


register_op("StopGradient", shape=same_shape, kernel=lambda ctx, x: x, grad=None, aliases_input=True)


def stop_gradient(input, name=None):  # noqa: A002
    """Identity in the forward pass; blocks gradients from flowing into ``input``."""
    return make_op("StopGradient", [convert_to_tensor(input)], name=name or "StopGradient")


# -- Shape, Size, Rank ---------------------------------------------------------------------------
def _shape_shape(op):
    s = op.inputs[0].get_shape()
    return TensorShape([s.ndims])


def _shape_partial(op):
    x = op.inputs[0]
    s = x.get_shape()
    if s.ndims is None:
        return None
    return _object_vector([d if d is not None else _DimOf(x, i) for i, d in enumerate(s.as_list())])


register_op("Shape", dtype=lambda op: op._attrs["out_type"], shape=_shape_shape,
            kernel=lambda ctx, x, out_type: np.array(x.shape, dtype=out_type.as_numpy_dtype),
            grad=None)
_register_partial("Shape", _shape_partial)


def _dense_shape_of_sparse(input, name, out_type):  # noqa: A002
    """A SparseTensor's ``dense_shape`` as ``out_type`` (TF1's shape/size/rank of one), else
    None."""
    from zps.ops import math_ops, sparse_ops
    if not isinstance(input, sparse_ops.SparseTensor | sparse_ops.SparseTensorValue):
        return None
    return math_ops.cast(input.dense_shape, _dtypes.as_dtype(out_type), name=name)


def shape(input, name=None, out_type=_dtypes.int32):  # noqa: A002
    """The runtime shape of ``input`` as a 1-D int tensor (a SparseTensor's ``dense_shape``)."""
    sparse = _dense_shape_of_sparse(input, name, out_type)
    if sparse is not None:
        return sparse
    return make_op("Shape", [convert_to_tensor(input)], name=name or "Shape",
                   out_type=_dtypes.as_dtype(out_type))


def shape_n(input, out_type=_dtypes.int32, name=None):  # noqa: A002
    """``[tf.shape(t) for t in input]``."""
    return [shape(t, out_type=out_type) for t in input]


register_op("Size", dtype=lambda op: op._attrs["out_type"], shape=lambda op: TensorShape([]),
            kernel=lambda ctx, x, out_type: np.array(x.size, dtype=out_type.as_numpy_dtype),
            grad=None)
register_constant_folder("Size", lambda op: None if op.inputs[0].get_shape().num_elements() is None
                         else np.array(op.inputs[0].get_shape().num_elements(),
                                       op._attrs["out_type"].as_numpy_dtype))


def size(input, name=None, out_type=_dtypes.int32):  # noqa: A002
    """The number of elements of ``input`` as a scalar int tensor (of a SparseTensor: of its
    dense shape)."""
    sparse = _dense_shape_of_sparse(input, None, out_type)
    if sparse is not None:
        from zps.ops import math_ops
        return math_ops.reduce_prod(sparse, name=name or "Size")
    return make_op("Size", [convert_to_tensor(input)], name=name or "Size",
                   out_type=_dtypes.as_dtype(out_type))


register_op("Rank", dtype=lambda op: _dtypes.int32, shape=lambda op: TensorShape([]),
            kernel=lambda ctx, x: np.array(x.ndim, dtype=np.int32), grad=None)
register_constant_folder("Rank", lambda op: None if op.inputs[0].get_shape().ndims is None
                         else np.array(op.inputs[0].get_shape().ndims, np.int32))


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of ``input`` as a scalar int32 tensor (of a SparseTensor: the
    length of its dense shape)."""
    sparse = _dense_shape_of_sparse(input, None, _dtypes.int32)
    if sparse is not None:
        return size(sparse, name=name or "Rank")
    return make_op("Rank", [convert_to_tensor(input)], name=name or "Rank")


# -- Reshape -------------------------------------------------------------------------------------
def _reshape_shape(op):
    x = op.inputs[0]
    target = partial_value(op.inputs[1])
    if target is None or target.ndim != 1:
        n = op.inputs[1].get_shape()
        return unknown_shape(n[0].value if n.ndims == 1 else None)
    target = list(target)
    where = "(reshape of %s to %s, op '%s')" % (x.get_shape(), _shape_str(target), op.name)
    ints = [int(d) for d in target if _is_int(d)]
    if ints.count(-1) > 1 or any(d < -1 for d in ints):
        raise ValueError("Only one dimension of the target shape can be -1, and no other may be "
                         "negative %s" % where)
    dims = [int(d) if _is_int(d) else None for d in target]
    known = x.get_shape().num_elements()
    if -1 not in dims:
        if known is not None and None not in dims and known != int(np.prod(dims)):
            raise ValueError("Cannot reshape a tensor with %d elements to shape %s (%d elements) %s"
                             % (known, dims, int(np.prod(dims)), where))
        return TensorShape(dims)
    rest = int(np.prod([d for d in dims if d is not None and d != -1]))
    unknown_target = [d for d in target if not _is_int(d)]
    if 0 in dims:
        dims[dims.index(-1)] = None  # inferred at run time from x's non-zero dimensions
    elif not unknown_target and known is not None:
        if known % rest:
            raise ValueError("Cannot reshape a tensor with %d elements to shape %s %s"
                             % (known, dims, where))
        dims[dims.index(-1)] = known // rest
    else:
        # Entries read from x's own runtime shape cancel x's unknown dimensions: the -1 then is
        # the product of x's known dimensions over the rest (tf.reshape(x, [tf.shape(x)[0], -1])).
        s = x.get_shape()
        refs = sorted(d.index for d in unknown_target if isinstance(d, _DimOf) and d.tensor is x)
        x_unknown = [] if s.ndims is None else [i for i, d in enumerate(s.as_list()) if d is None]
        known_in = int(np.prod([d for d in s.as_list() if d is not None])) if s.ndims else 1
        cancels = s.ndims is not None and len(refs) == len(unknown_target) and refs == x_unknown
        dims[dims.index(-1)] = (known_in // rest if cancels and rest and known_in % rest == 0
                                else None)
    return TensorShape(dims)


def _shape_str(entries):
    return "[%s]" % ", ".join(str(int(d)) if _is_int(d) else "?" for d in entries)


def _reshape_kernel(ctx, x, shape):
    if 0 in shape and -1 in shape:
        # TF1 infers the -1 of a shape with a 0 from x's non-zero dimensions ([0, -1] of a
        # [0, 3] tensor is [0, 3]), where numpy refuses.
        shape = [int(d) for d in shape]
        shape[shape.index(-1)] = (int(np.prod([d for d in x.shape if d > 0]))
                                  // int(np.prod([d for d in shape if d > 0])))
    try:
        return x.reshape(shape)
    except ValueError:
        dims = [int(d) for d in np.asarray(shape).ravel()]
        known = int(np.prod([d for d in dims if d != -1]))
        need = ("requires a multiple of %d" % known) if -1 in dims else ("has %d" % known)
        raise _bad_input("Input to reshape is a tensor with %d values (shape %s), but the requested "
                         "shape %s %s", x.size, tuple(x.shape), dims, need) from None


register_op("Reshape", shape=_reshape_shape, kernel=_reshape_kernel,
            grad=lambda op, g: [reshape(g, shape(op.inputs[0])), None],
            aliases_input=True)


def reshape(tensor, shape, name=None):  # noqa: F811 - `shape` shadows the op wrapper as in TF1
    """``tensor`` with the same values in a new shape (one dimension may be -1)."""
    return make_op("Reshape", [convert_to_tensor(tensor), _int_tensor(shape, "reshape's shape")],
                   name=name or "Reshape")


# -- Fill, zeros, ones, ZerosLike, OnesLike ------------------------------------------------------
def _fill_shape(op):
    dims = partial_value(op.inputs[0])
    if dims is not None and any(_is_int(d) and d < 0 for d in dims.reshape(-1)):
        raise ValueError("Fill dimensions must be >= 0, got %s (op '%s')" % (dims.tolist(), op.name))
    return shape_from_value(op.inputs[0])


register_op("Fill", dtype=lambda op: op.inputs[1].dtype, shape=_fill_shape,
            kernel=lambda ctx, dims, value: ctx.xp.full(tuple(dims), value, dtype=value.dtype),
            grad=lambda op, g: [None, _reduce_sum_all(g)])


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with the scalar ``value``: ``tf.fill([2, 3], 9)``."""
    return make_op("Fill", [_int_tensor(dims, "fill's dims"), convert_to_tensor(value)],
                   name=name or "Fill")


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros of ``shape`` (a list or tuple, a TensorShape, or a 1-D int tensor);
    of a string dtype, empty strings (as TF1's)."""
    zero = b"" if _dtypes.as_dtype(dtype).base_dtype == _dtypes.string else 0
    return _filled(shape, zero, dtype, name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones of ``shape`` (a list or tuple, a TensorShape, or a 1-D int tensor)."""
    return _filled(shape, 1, dtype, name or "ones")


_MAX_CONSTANT_FILL = 1000  # TF1: small filled tensors are constants, larger ones Fill ops


def _filled(shape, value, dtype, name):
    dtype = _dtypes.as_dtype(dtype)
    if not (is_symbolic(shape) or _contains_symbolic(shape)):
        dims = _int_array(shape, "the shape of %s" % name)
        if int(np.prod(dims)) < _MAX_CONSTANT_FILL:
            return constant(np.full(dims.reshape(-1), value, dtype=dtype.as_numpy_dtype), name=name)
    return fill(shape, constant(value, dtype=dtype), name=name)


def _zeros_like_kernel(ctx, x):
    if x.dtype == object:  # strings: TF1's zero is the empty string
        return np.full(x.shape, b"", dtype=object)
    return ctx.xp.zeros_like(x)


register_op("ZerosLike", shape=same_shape, kernel=_zeros_like_kernel, grad=None)
register_op("OnesLike", shape=same_shape, kernel=lambda ctx, x: ctx.xp.ones_like(x), grad=None)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros with the shape (and dtype, unless given) of ``tensor``."""
    t = convert_to_tensor(tensor)
    out = make_op("ZerosLike", [t], name=name or "zeros_like")
    return out if dtype is None or _dtypes.as_dtype(dtype) == t.dtype else _cast(out, dtype)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones with the shape (and dtype, unless given) of ``tensor``."""
    t = convert_to_tensor(tensor)
    out = make_op("OnesLike", [t], name=name or "ones_like")
    return out if dtype is None or _dtypes.as_dtype(dtype) == t.dtype else _cast(out, dtype)


def _cast(x, dtype):
    from zps.ops.math_ops import cast  # math_ops imports this module
    return cast(x, dtype)


def _reduce_sum_all(x):
    from zps.ops.math_ops import reduce_sum
    return reduce_sum(x)


# -- SumToShape, BroadcastTo (central undoing of broadcasting) ------------------------------------
def _sum_to_shape_kernel(ctx, g, target):
    target = tuple(int(d) for d in target)
    if g.shape == target:
        return g
    lead = g.ndim - len(target)
    axes = tuple(builtins.range(lead)) + tuple(i + lead for i, d in enumerate(target)
                                               if d == 1 and g.shape[i + lead] != 1)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    return out.reshape(target)


register_op("SumToShape", shape=lambda op: shape_from_value(op.inputs[1]),
            kernel=_sum_to_shape_kernel,
            grad=lambda op, g: [broadcast_to(g, shape(op.inputs[0])), None])


def sum_to_shape_of(grad, x):
    """``grad`` summed over the axes along which ``x`` was broadcast, to ``x``'s shape."""
    gs, xs = grad.get_shape(), x.get_shape()
    if gs.is_fully_defined() and xs.is_fully_defined() and gs == xs:
        return grad
    return make_op("SumToShape", [grad, shape(x)], name="SumToShape")


def _broadcast_to_shape(op):
    target, s = shape_from_value(op.inputs[1]), op.inputs[0].get_shape()
    if target.ndims is None or s.ndims is None:
        return target
    dims = target.as_list()
    if s.ndims > len(dims) or any(d is not None and t is not None and d not in (1, t)
                                  for d, t in zip(s.as_list()[::-1], dims[::-1])):
        raise ValueError("Cannot broadcast a tensor of shape %s to shape %s (op '%s'): each "
                         "dimension must be 1 or the target's" % (s, target, op.name))
    return target


register_op("BroadcastTo", shape=_broadcast_to_shape,
            kernel=lambda ctx, x, s: ctx.xp.broadcast_to(x, tuple(int(d) for d in s)),
            grad=lambda op, g: [make_op("SumToShape", [g, shape(op.inputs[0])]), None])


def broadcast_to(input, shape, name=None):  # noqa: A002, F811
    """``input`` broadcast (numpy rules) to ``shape``."""
    return make_op("BroadcastTo", [convert_to_tensor(input), _int_tensor(shape, "broadcast_to's shape")],
                   name=name or "BroadcastTo")


# -- Transpose -----------------------------------------------------------------------------------
def _transpose_shape(op):
    s, perm = op.inputs[0].get_shape(), op._attrs["perm"]
    if s.ndims is None:
        return unknown_shape(None if perm is None else len(perm))
    dims = s.as_list()
    if perm is None:
        return TensorShape(dims[::-1])
    if sorted(perm) != list(builtins.range(len(dims))):
        raise ValueError("perm %s is not a permutation of the dimensions of shape %s (transpose, op "
                         "'%s')" % ([int(p) for p in perm], s, op.name))
    return TensorShape([dims[p] for p in perm])


def _transpose_kernel(ctx, x, perm):
    if perm is not None and len(perm) != x.ndim:
        raise _bad_input("transpose expects a perm of size %d for input shape %s, got %s",
                         x.ndim, x.shape, list(perm))
    return ctx.xp.transpose(x, perm)


def _transpose_grad(op, g):
    perm = op._attrs["perm"]
    return [transpose(g, None if perm is None else [int(i) for i in np.argsort(perm)])]


register_op("Transpose", shape=_transpose_shape, kernel=_transpose_kernel, grad=_transpose_grad)


def transpose(a, perm=None, name="transpose", conjugate=False):
    """``a`` with its dimensions permuted: output dim i is input dim ``perm[i]`` (default:
    reversed). ``tf.transpose(x, [1, 0])`` of a [2, 3] matrix is [3, 2]."""
    perm = const_axis(perm, "transpose's perm")
    perm = None if perm is None else tuple(int(p) for p in np.asarray(perm).reshape(-1))
    a = convert_to_tensor(a)
    ndims = a.get_shape().ndims
    if perm is not None and ndims is not None and all(-ndims <= p < 0 or 0 <= p < ndims
                                                      for p in perm):
        perm = tuple(p % ndims for p in perm)  # negative entries count from the end, as TF's
    return make_op("Transpose", [a], name=name or "transpose", perm=perm)


# -- ExpandDims, Squeeze -------------------------------------------------------------------------
def _expand_dims_shape(op):
    s, axis = op.inputs[0].get_shape(), op._attrs["axis"]
    if s.ndims is None:
        return unknown_shape()
    dims = s.as_list()
    if not -len(dims) - 1 <= axis <= len(dims):
        raise ValueError("expand_dims axis %d is out of range [%d, %d] for shape %s (op '%s')"
                         % (axis, -len(dims) - 1, len(dims), s, op.name))
    dims.insert(axis % (len(dims) + 1), 1)
    return TensorShape(dims)


register_op("ExpandDims", shape=_expand_dims_shape,
            kernel=lambda ctx, x, axis: ctx.xp.expand_dims(x, axis),
            grad=lambda op, g: [reshape(g, shape(op.inputs[0]))], aliases_input=True)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """``input`` with a dimension of size 1 inserted at ``axis`` (``dim`` is the legacy name)."""
    if (axis is None) == (dim is None):
        raise ValueError("expand_dims needs exactly one of axis and dim, got axis=%r, dim=%r"
                         % (axis, dim))
    axis = const_axis(axis if dim is None else dim, "expand_dims's axis")
    return make_op("ExpandDims", [convert_to_tensor(input)], name=name or "ExpandDims",
                   axis=int(np.asarray(axis).reshape(-1)[0]))


def _squeeze_shape(op):
    s, axis = op.inputs[0].get_shape(), op._attrs["axis"]
    if s.ndims is None:
        return unknown_shape()
    dims = s.as_list()
    if not axis:
        return unknown_shape() if None in dims else TensorShape([d for d in dims if d != 1])
    axes = normalize_axis(list(axis), len(dims), "squeeze '%s'" % op.name)
    for a in axes:
        if dims[a] is not None and dims[a] != 1:
            raise ValueError("Can not squeeze dim[%d], expected a dimension of 1, got %d (squeeze of "
                             "shape %s, op '%s')" % (a, dims[a], s, op.name))
    return TensorShape([d for i, d in enumerate(dims) if i not in axes])


def _squeeze_kernel(ctx, x, axis):
    if not axis:
        return x.reshape([d for d in x.shape if d != 1])
    for a in axis:
        if not -x.ndim <= a < x.ndim or x.shape[a] != 1:
            raise _bad_input("Can not squeeze dim[%d], expected a dimension of 1, got shape %s",
                             a, x.shape)
    return ctx.xp.squeeze(x, axis=tuple(axis))


register_op("Squeeze", shape=_squeeze_shape, kernel=_squeeze_kernel,
            grad=lambda op, g: [reshape(g, shape(op.inputs[0]))], aliases_input=True)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """``input`` without its dimensions of size 1 (only those in ``axis`` when given; naming a
    dimension that is not 1 is an error). ``squeeze_dims`` is the legacy name of ``axis``."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'squeeze_dims' in squeeze")
        axis = squeeze_dims
    axis = const_axis(axis, "squeeze's axis")
    axis = () if axis is None else tuple(int(a) for a in np.asarray(axis).reshape(-1))
    return make_op("Squeeze", [convert_to_tensor(input)], name=name or "Squeeze", axis=axis)


# -- Tile, TileGrad ------------------------------------------------------------------------------
def _tile_shape(op):
    s, mult = op.inputs[0].get_shape(), partial_value(op.inputs[1])
    if mult is None or mult.ndim != 1:
        return unknown_shape(s.ndims)
    if s.ndims is not None and s.ndims != len(mult):
        raise ValueError("tile needs one multiple per dimension of its input: shape %s, multiples "
                         "%s (op '%s')" % (s, _shape_str(mult), op.name))
    if any(_is_int(m) and m < 0 for m in mult):
        raise ValueError("tile multiples must be non-negative, got %s (op '%s')"
                         % (_shape_str(mult), op.name))
    dims = s.as_list() if s.ndims is not None else [None] * len(mult)
    return TensorShape([d * int(m) if d is not None and _is_int(m) else None
                        for d, m in zip(dims, mult)])


def _tile_kernel(ctx, x, multiples):
    reps = tuple(int(m) for m in multiples)
    if len(reps) != x.ndim or any(m < 0 for m in reps):
        raise _bad_input("tile expects %d non-negative multiples for input shape %s, got %s",
                         x.ndim, x.shape, list(reps))
    return ctx.xp.tile(x, reps)


def _tile_grad_kernel(ctx, g, multiples, input_shape):
    # The output is the input repeated m_i times along each axis i: viewed as
    # [m_0, d_0, m_1, d_1, ...], the gradient sums over the m axes.
    split = [int(v) for pair in zip(multiples, input_shape) for v in pair]
    return ctx.xp.asarray(g.reshape(split).sum(axis=tuple(builtins.range(0, len(split), 2))))


register_op("Tile", shape=_tile_shape, kernel=_tile_kernel,
            grad=lambda op, g: [make_op("TileGrad", [g, op.inputs[1], shape(op.inputs[0])]), None])
register_op("TileGrad", shape=lambda op: shape_from_value(op.inputs[2]), kernel=_tile_grad_kernel,
            grad=lambda op, g: [tile(g, op.inputs[1]), None, None])


def tile(input, multiples, name=None):  # noqa: A002
    """``input`` repeated ``multiples[i]`` times along each axis i:
    ``tf.tile([[1, 2]], [2, 1])`` is ``[[1, 2], [1, 2]]``."""
    return make_op("Tile", [convert_to_tensor(input), _int_tensor(multiples, "tile's multiples")],
                   name=name or "Tile")


# -- Pad (PadV2, MirrorPad, MirrorPadGrad) -------------------------------------------------------
def _pad_shape(op):
    s, ps = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    mode = op._attrs.get("mode", "CONSTANT")
    where = "(pad of shape %s, op '%s')" % (s, op.name)
    if ps.ndims is not None and (ps.ndims != 2 or ps[1].value not in (2, None)):
        raise ValueError("paddings must be a matrix of shape [rank, 2], got shape %s %s" % (ps, where))
    rank = s.ndims if s.ndims is not None else ps[0].value
    if s.ndims is not None and ps.ndims is not None and ps[0].value not in (None, s.ndims):
        raise ValueError("paddings must have one row per input dimension: shape %s, paddings %s %s"
                         % (s, ps, where))
    pads = partial_value(op.inputs[1])
    if rank is None or pads is None:
        return unknown_shape(rank)
    dims = s.as_list() if s.ndims is not None else [None] * rank
    out = []
    for i, (d, (a, b)) in enumerate(zip(dims, pads)):
        if (_is_int(a) and a < 0) or (_is_int(b) and b < 0):
            raise ValueError("paddings must be non-negative, got %s for dimension %d %s" % ([a, b], i, where))
        limit = {"REFLECT": d - 1 if d is not None else None, "SYMMETRIC": d}.get(mode)
        if limit is not None and any(_is_int(p) and p > limit for p in (a, b)):
            raise ValueError("%s paddings must be at most %d for dimension %d of size %d, got %s %s"
                             % (mode, limit, i, d, [a, b], where))
        out.append(d + a + b if d is not None and _is_int(a) and _is_int(b) else None)
    return TensorShape(out)


def _pad_widths(x, paddings, mode):
    if paddings.shape != (x.ndim, 2) or (paddings.size and paddings.min() < 0):
        raise _bad_input("paddings must be a non-negative [%d, 2] matrix for input shape %s, got %s",
                         x.ndim, x.shape, paddings.tolist())
    widths = [(int(a), int(b)) for a, b in paddings]
    limit = {"REFLECT": 1, "SYMMETRIC": 0}.get(mode)
    if limit is not None:
        for i, (d, (a, b)) in enumerate(zip(x.shape, widths)):
            if max(a, b) > d - limit:
                raise _bad_input("%s paddings must be at most %d for dimension %d of input shape %s,"
                                 " got %s", mode, d - limit, i, x.shape, [a, b])
    return widths


def _pad_kernel(ctx, x, paddings, constant_values):
    return ctx.xp.pad(x, _pad_widths(x, paddings, "CONSTANT"), mode="constant",
                      constant_values=constant_values)


def _pad_grad(op, g):
    x, paddings = op.inputs[0], op.inputs[1]
    return [slice(g, paddings[:, 0], shape(x, out_type=paddings.dtype)), None, None]


register_op("PadV2", shape=_pad_shape, kernel=_pad_kernel, grad=_pad_grad)


def _mirror_pad_kernel(ctx, x, paddings, mode):
    return ctx.xp.pad(x, _pad_widths(x, paddings, mode), mode=mode.lower())


def _along(axis, index):
    return (builtins.slice(None),) * axis + (index,)


def _mirror_pad_grad_kernel(ctx, g, paddings, mode):
    # Fold each axis' padding back onto the entries it mirrors (REFLECT skips the edge entry).
    offset = 1 if mode == "REFLECT" else 0
    for axis, (before, after) in enumerate(paddings):
        before, after = int(before), int(after)
        if not before and not after:
            continue
        n = g.shape[axis] - before - after
        core = g[_along(axis, builtins.slice(before, before + n))].copy()
        core[_along(axis, builtins.slice(offset, offset + before))] += \
            g[_along(axis, builtins.slice(before - 1, None, -1) if before else builtins.slice(0, 0))]
        core[_along(axis, builtins.slice(n - offset - after, n - offset))] += \
            g[_along(axis, builtins.slice(g.shape[axis] - 1, before + n - 1, -1))]
        g = core
    return g


def _mirror_pad_grad_shape(op):
    s, pads = op.inputs[0].get_shape(), partial_value(op.inputs[1])
    if s.ndims is None or pads is None:
        return unknown_shape(s.ndims)
    return TensorShape([d - a - b if d is not None and _is_int(a) and _is_int(b) else None
                        for d, (a, b) in zip(s.as_list(), pads)])


register_op("MirrorPad", shape=_pad_shape, kernel=_mirror_pad_kernel,
            grad=lambda op, g: [make_op("MirrorPadGrad", [g, op.inputs[1]], mode=op._attrs["mode"]),
                                None])
register_op("MirrorPadGrad", shape=_mirror_pad_grad_shape, kernel=_mirror_pad_grad_kernel,
            grad=lambda op, g: [make_op("MirrorPad", [g, op.inputs[1]], mode=op._attrs["mode"]),
                                None])


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """``tensor`` padded by ``paddings[i] = [before, after]`` entries along each axis i, with
    ``constant_values`` (CONSTANT) or by mirroring without (REFLECT) or with (SYMMETRIC) the edge."""
    x = convert_to_tensor(tensor)
    p = _int_tensor(paddings, "pad's paddings")
    mode = str(mode).upper()
    if mode == "CONSTANT":
        return make_op("PadV2", [x, p, convert_to_tensor(constant_values, dtype=x.dtype)],
                       name=name or "Pad")
    if mode in ("REFLECT", "SYMMETRIC"):
        return make_op("MirrorPad", [x, p], name=name or "MirrorPad", mode=mode)
    raise ValueError("Unknown padding mode %r: expected 'CONSTANT', 'REFLECT' or 'SYMMETRIC'" % mode)


# -- Slice ---------------------------------------------------------------------------------------
def _slice_shape(op):
    s = op.inputs[0].get_shape()
    begin, size_ = partial_value(op.inputs[1]), partial_value(op.inputs[2])
    n = s.ndims
    for v in (begin, size_):
        if v is not None and n is not None and v.shape != (n,):
            raise ValueError("slice of a rank-%d tensor (shape %s) needs %d begin and size entries, "
                             "got begin %s and size %s (op '%s')"
                             % (n, s, n, op.inputs[1].get_shape(), op.inputs[2].get_shape(), op.name))
        n = len(v) if v is not None else n
    if n is None:
        return unknown_shape()
    dims = s.as_list() if s.ndims is not None else [None] * n
    begin = begin if begin is not None else [None] * n
    size_ = size_ if size_ is not None else [None] * n
    out = []
    for i, (d, b, k) in enumerate(zip(dims, begin, size_)):
        end = (d if k == -1 else b + k) if _is_int(b) and _is_int(k) and (k != -1 or d is not None) else None
        if end is not None and not (0 <= b <= end and (d is None or end <= d)):
            raise ValueError("slice out of range in dimension %d: begin %d, size %d for shape %s "
                             "(op '%s')" % (i, b, k, s, op.name))
        out.append(end - b if end is not None else (int(k) if _is_int(k) and k >= 0 else None))
    return TensorShape(out)


def _slice_kernel(ctx, x, begin, size):
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise _bad_input("slice needs %d begin and size entries for input shape %s, got %s and %s",
                         x.ndim, x.shape, begin.tolist(), size.tolist())
    index = []
    for i, (b, k, d) in enumerate(zip(begin.tolist(), size.tolist(), x.shape)):
        e = d if k == -1 else b + k
        if not 0 <= b <= e <= d:
            raise _bad_input("Expected begin[%d] in [0, %d] and begin + size in [begin, %d], but got "
                             "begin %s and size %s for input shape %s", i, d, d, begin.tolist(),
                             size.tolist(), x.shape)
        index.append(builtins.slice(b, e))
    return x[tuple(index)]


def _slice_grad(op, g):
    x, begin = op.inputs[0], op.inputs[1]
    after = shape(x, out_type=begin.dtype) - begin - shape(g, out_type=begin.dtype)
    dx = pad(g, stack([begin, after], axis=1))
    dx.set_shape(x.get_shape())  # the paddings are computed: say what is known statically
    return [dx, None, None]


register_op("Slice", shape=_slice_shape, kernel=_slice_kernel, grad=_slice_grad)


def slice(input_, begin, size, name=None):  # noqa: A001 - TF1's public name
    """The block of ``input_`` starting at ``begin`` with extent ``size`` (-1: to the end):
    ``tf.slice(x, [1, 0], [1, -1])`` is ``x[1:2, :]``."""
    return make_op("Slice", [convert_to_tensor(input_), _int_tensor(begin, "slice's begin"),
                             _int_tensor(size, "slice's size")], name=name or "Slice")


# -- StridedSlice, StridedSliceGrad, Tensor.__getitem__ ------------------------------------------
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _strided_index(begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                   shrink_axis_mask):
    """The numpy index tuple a StridedSlice spec describes."""
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            index.append(Ellipsis)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_axis_mask & bit:
            index.append(int(b))
        else:
            if s == 0:
                raise ValueError("strides[%d] must be non-zero" % i)
            index.append(builtins.slice(None if begin_mask & bit else int(b),
                                        None if end_mask & bit else int(e), int(s)))
    return tuple(index)


def _masks(op):
    return {k: op._attrs[k] for k in _MASKS}


def _strided_slice_shape(op):
    s = op.inputs[0].get_shape()
    spec = [partial_value(t) for t in op.inputs[1:]]
    if any(v is None or v.ndim != 1 or len(v) != len(spec[0]) for v in spec):
        return unknown_shape()
    begin, end, strides = spec
    m = _masks(op)
    specs = builtins.range(len(begin))
    consumes = [i for i in specs if not (m["ellipsis_mask"] | m["new_axis_mask"]) & (1 << i)]
    if s.ndims is None:
        return unknown_shape()
    dims = s.as_list()
    if len(consumes) > len(dims):
        raise ValueError("Index has %d entries for a tensor of rank %d (shape %s, op '%s')"
                         % (len(consumes), len(dims), s, op.name))
    out, d = [], 0
    for i in specs:
        bit = 1 << i
        if m["ellipsis_mask"] & bit:
            k = len(dims) - len(consumes)
            out.extend(dims[d:d + k])
            d += k
        elif m["new_axis_mask"] & bit:
            out.append(1)
        elif m["shrink_axis_mask"] & bit:
            n, b = dims[d], begin[i]
            if n is not None and _is_int(b) and not -n <= b < n:
                raise ValueError("slice index %d of dimension %d out of bounds for shape %s (op '%s')"
                                 % (b, d, s, op.name))
            d += 1
        else:
            if _is_int(strides[i]) and strides[i] == 0:
                raise ValueError("strides[%d] must be non-zero (op '%s')" % (i, op.name))
            out.append(_slice_length(dims[d], begin[i], end[i], strides[i],
                                     m["begin_mask"] & bit, m["end_mask"] & bit))
            d += 1
    return TensorShape(out + dims[d:])


def _slice_length(n, b, e, s, begin_masked, end_masked):
    if n is None or not _is_int(s) or not (begin_masked or _is_int(b)) or not (end_masked or _is_int(e)):
        return None
    return len(builtins.range(*builtins.slice(None if begin_masked else b, None if end_masked else e,
                                              s).indices(n)))


def _strided_slice_kernel(ctx, x, begin, end, strides, **masks):
    try:
        return ctx.xp.asarray(x[_strided_index(begin, end, strides, **masks)])
    except IndexError as e:
        raise _bad_input("Index out of range for a tensor of shape %s: %s", x.shape, e) from None


def _strided_slice_partial(op):
    x = partial_value(op.inputs[0])
    spec = [constant_value(t) for t in op.inputs[1:]]
    if x is None or any(v is None for v in spec):
        return None
    return _object_array(x[_strided_index(*spec, **_masks(op))])


def _strided_slice_grad_kernel(ctx, shape, begin, end, strides, dy, **masks):
    out = ctx.xp.zeros(tuple(int(d) for d in shape), dtype=dy.dtype)
    out[_strided_index(begin, end, strides, **masks)] = dy
    return out


register_op("StridedSlice", shape=_strided_slice_shape, kernel=_strided_slice_kernel,
            grad=lambda op, g: [make_op("StridedSliceGrad", [shape(op.inputs[0], out_type=op.inputs[1].dtype)]
                                        + list(op.inputs[1:]) + [g], **_masks(op)), None, None, None])
_register_partial("StridedSlice", _strided_slice_partial)
register_op("StridedSliceGrad", dtype=lambda op: op.inputs[4].dtype,
            shape=lambda op: shape_from_value(op.inputs[0]), kernel=_strided_slice_grad_kernel,
            grad=lambda op, g: [None] * 4 + [make_op("StridedSlice", [g] + list(op.inputs[1:4]),
                                                     **_masks(op))])


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """The strided slice ``input_[begin[0]:end[0]:strides[0], ...]`` with TF1's masks (bit i of
    a mask applies to index entry i); ``x[...]`` builds one of these."""
    begin = _int_tensor(begin, "strided_slice's begin")
    end = _int_tensor(end, "strided_slice's end")
    if strides is None:
        n = begin.get_shape()
        strides = (constant(np.ones(n[0].value, begin.dtype.as_numpy_dtype))
                   if n.ndims == 1 and n[0].value is not None else ones_like(begin))
    strides = _int_tensor(strides, "strided_slice's strides")
    return make_op("StridedSlice", [convert_to_tensor(input_), begin, end, strides],
                   name=name or "strided_slice", begin_mask=int(begin_mask), end_mask=int(end_mask),
                   ellipsis_mask=int(ellipsis_mask), new_axis_mask=int(new_axis_mask),
                   shrink_axis_mask=int(shrink_axis_mask))


_INDEX_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                     "tf.int32/tf.int64 tensors are valid indices")


def _index_value(v, tensor):
    if v is None or _is_int(v):
        return v
    if isinstance(v, Dimension):
        return int(v)
    if is_symbolic(v):
        t = convert_to_tensor(v)
        if t.dtype.is_integer and t.get_shape().ndims in (0, None):
            return t
    raise TypeError("%s, got %r (indexing %s)" % (_INDEX_TYPE_ERROR, v, tensor.name))


def _pack_index(values):
    if not any(isinstance(v, Tensor) for v in values):
        return constant(np.array(values, dtype=np.int64 if any(abs(v) >= 2 ** 31 for v in values)
                                 else np.int32).reshape(-1))
    dtype = _dtypes.int64 if any(isinstance(v, Tensor) and v.dtype == _dtypes.int64
                                 for v in values) else _dtypes.int32
    return stack([_cast(v, dtype) if isinstance(v, Tensor) else constant(v, dtype=dtype)
                  for v in values], name="stack")


def _slice_helper(tensor, slice_spec):
    """``tensor[slice_spec]`` with numpy's basic indexing: ints (negative ok) and scalar int
    tensors drop a dimension, slices with any step, ``tf.newaxis``/None and one Ellipsis."""
    if not isinstance(slice_spec, tuple):
        slice_spec = (slice_spec,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        bit = 1 << i
        if isinstance(s, builtins.slice):
            b, e, st = (_index_value(v, tensor) for v in (s.start, s.stop, s.step))
            if st is None:
                st = 1
            elif _is_int(st) and st == 0:
                raise ValueError("slice step cannot be zero (indexing %s)" % tensor.name)
            if b is None:
                masks["begin_mask"] |= bit
            if e is None:
                masks["end_mask"] |= bit
            begin.append(0 if b is None else b)
            end.append(0 if e is None else e)
            strides.append(st)
        elif s is None or s is Ellipsis:
            if s is Ellipsis and masks["ellipsis_mask"]:
                raise ValueError("An index can only have a single ellipsis (indexing %s)" % tensor.name)
            masks["new_axis_mask" if s is None else "ellipsis_mask"] |= bit
            begin.append(0)
            end.append(0)
            strides.append(1)
        else:
            idx = _index_value(s, tensor)
            masks["shrink_axis_mask"] |= bit
            begin.append(idx)
            end.append(idx + 1 if _is_int(idx) else idx)  # a shrunk entry's end is not read
            strides.append(1)
    return make_op("StridedSlice", [convert_to_tensor(tensor), _pack_index(begin), _pack_index(end),
                                    _pack_index(strides)], name="strided_slice", **masks)


Tensor.__getitem__ = _slice_helper


# -- ReverseV2 -----------------------------------------------------------------------------------
def _reverse_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims is not None:
        normalize_axis(list(op._attrs["axis"]), s.ndims, "reverse '%s'" % op.name)
    return s


register_op("ReverseV2", shape=_reverse_shape,
            kernel=lambda ctx, x, axis: ctx.xp.flip(x, axis),
            grad=lambda op, g: [reverse(g, list(op._attrs["axis"]))])


def reverse(tensor, axis, name=None):
    """``tensor`` with the order of entries reversed along each axis in ``axis``."""
    axis = const_axis(axis, "reverse's axis")
    axis = tuple(int(a) for a in np.asarray(axis).reshape(-1))
    if len(set(axis)) != len(axis):
        raise ValueError("reverse axis %s names a dimension twice" % (list(axis),))
    return make_op("ReverseV2", [convert_to_tensor(tensor)], name=name or "ReverseV2", axis=axis)


reverse_v2 = reverse


def _same_dtype_list(values, op_type):
    """``values`` (tensors), or TF1's TypeError when their dtypes differ."""
    dtypes = [t.dtype.base_dtype for t in values]
    if len(set(dtypes)) > 1:
        raise TypeError("Tensors in list passed to 'values' of '%s' Op have types [%s] that don't "
                        "all match; cast them to one dtype with tf.cast"
                        % (op_type, ", ".join(d.name for d in dtypes)))
    return values


# -- ConcatV2, SplitBySizes ----------------------------------------------------------------------
def _concat_shape(op):
    axis = int(op._attrs["axis"])
    shapes = [t.get_shape() for t in op.inputs]
    known = [s for s in shapes if s.ndims is not None]
    if not known:
        return unknown_shape()
    rank = known[0].ndims
    if rank == 0:
        raise ValueError("Can't concatenate scalars (use tf.stack instead) (op '%s')" % op.name)
    a = _axis_of(axis, rank, op)
    out = [None] * rank
    total = 0
    for s in known:
        if s.ndims != rank:
            raise ValueError("Shapes %s and %s must have the same rank to concat (op '%s')"
                             % (known[0], s, op.name))
        for i, d in enumerate(s.as_list()):
            if i == a:
                total = None if total is None or d is None else total + d
            elif out[i] is None:
                out[i] = d
            elif d is not None and d != out[i]:
                raise ValueError("Dimension %d in both shapes must be equal, but are %d and %d "
                                 "(concat of %s and %s, op '%s')" % (i, out[i], d, known[0], s,
                                                                   op.name))
    out[a] = total if len(known) == len(shapes) else None
    return TensorShape(out)


def _concat_grad(op, g):
    axis = op._attrs["axis"]
    sizes = [shape(t) for t in op.inputs]
    return make_op("SplitBySizes", [g] + sizes, num_outputs=len(sizes), axis=axis)


def _concat_kernel(ctx, *values, axis):
    return ctx.xp.concatenate(values, axis=axis)


def _concat_partial(op):
    parts = [partial_value(t) for t in op.inputs]
    if any(p is None for p in parts):
        return None
    return np.concatenate(parts, axis=op._attrs["axis"])


register_op("ConcatV2", shape=_concat_shape, kernel=_concat_kernel, grad=_concat_grad)
_register_partial("ConcatV2", _concat_partial)


def _split_by_sizes_kernel(ctx, g, *shapes, axis):
    sizes = [int(s[axis]) for s in shapes]
    return _outputs(ctx.xp.split(g, np.cumsum(sizes)[:-1], axis=axis))


register_op("SplitBySizes", dtype=lambda op: [op.inputs[0].dtype] * (len(op.inputs) - 1),
            shape=lambda op: [shape_from_value(t) for t in op.inputs[1:]],
            kernel=_split_by_sizes_kernel,
            grad=lambda op, *gs: [concat(list(gs), op._attrs["axis"])] + [None] * len(gs))


def concat(values, axis, name="concat"):
    """Join tensors along ``axis``: ``tf.concat([a, b], 0)``."""
    values = _same_dtype_list(to_tensors(*values), "ConcatV2")
    if not values:
        raise ValueError("concat needs at least one value (TF1: List argument 'values' to "
                         "'ConcatV2' Op with length 0 shorter than minimum length 2)")
    if len(values) == 1:
        return identity(values[0], name=name)
    return make_op("ConcatV2", values, name=name, axis=int(const_axis(axis, "concat's axis")))


# -- Split, SplitV -------------------------------------------------------------------------------
def _split_shape(op):
    s, n = op.inputs[0].get_shape(), op._attrs["num_split"]
    if s.ndims is None:
        return [unknown_shape()] * n
    a = _axis_of(op._attrs["axis"], s.ndims, op)
    dims = s.as_list()
    if dims[a] is not None and dims[a] % n:
        raise ValueError("Dimension %d in shape %s must be evenly divisible by %d to split it %d ways "
                         "(op '%s')" % (a, s, n, n, op.name))
    dims[a] = None if dims[a] is None else dims[a] // n
    return [TensorShape(dims)] * n


def _split_kernel(ctx, x, num_split, axis):
    if x.shape[axis] % num_split:
        raise _bad_input("Number of ways to split should evenly divide the split dimension, but got "
                         "split dimension %d of size %d (input shape %s) and num_split %d",
                         axis, x.shape[axis], x.shape, num_split)
    return _outputs(ctx.xp.split(x, num_split, axis=axis))


def _split_grad(op, *gs):
    return [concat(list(gs), op._attrs["axis"])]


register_op("Split", shape=_split_shape, kernel=_split_kernel, grad=_split_grad)


def _resolve_split_sizes(sizes, d, where):
    """``sizes`` with its -1 resolved against the split dimension ``d`` (None where unknown)."""
    sizes = [int(k) if _is_int(k) else None for k in sizes]
    if sizes.count(-1) > 1 or any(k is not None and k < -1 for k in sizes):
        raise ValueError("Split sizes %s must be non-negative, with at most one -1 %s"
                         % (_shape_str(sizes), where))
    if None in sizes or d is None:
        return [None if k == -1 else k for k in sizes]
    known = sum(k for k in sizes if k != -1)
    if -1 in sizes:
        if known > d:
            raise ValueError("Split sizes %s add up to more than the dimension of size %d %s"
                             % (sizes, d, where))
        sizes[sizes.index(-1)] = d - known
    elif known != d:
        raise ValueError("Split sizes %s must add up to the dimension of size %d %s" % (sizes, d, where))
    return sizes


def _split_v_shape(op):
    s, n = op.inputs[0].get_shape(), op._attrs["num_split"]
    sizes = partial_value(op.inputs[1])
    if s.ndims is None:
        return [unknown_shape()] * n
    a = _axis_of(op._attrs["axis"], s.ndims, op)
    where = "(split of shape %s along axis %d, op '%s')" % (s, a, op.name)
    if sizes is not None and sizes.shape != (n,):
        raise ValueError("%d split sizes expected, got shape %s %s" % (n, sizes.shape, where))
    dims = s.as_list()
    sizes = [None] * n if sizes is None else _resolve_split_sizes(sizes, dims[a], where)
    return [TensorShape(dims[:a] + [k] + dims[a + 1:]) for k in sizes]


def _split_v_kernel(ctx, x, size_splits, axis, num_split):
    try:
        if len(size_splits) != num_split:
            raise ValueError("%d split sizes expected, got %s" % (num_split, size_splits.tolist()))
        sizes = _resolve_split_sizes(size_splits.tolist(), x.shape[axis],
                                     "(input shape %s)" % (x.shape,))
    except ValueError as e:
        raise _bad_input("%s", e) from None
    return _outputs(ctx.xp.split(x, np.cumsum(sizes)[:-1], axis=axis))


register_op("SplitV", shape=_split_v_shape, kernel=_split_v_kernel,
            grad=lambda op, *gs: _split_grad(op, *gs) + [None])


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """``value`` cut along ``axis`` into ``num_or_size_splits`` equal pieces, or into pieces of
    the listed sizes (one may be -1: the rest); returns a list of tensors."""
    x = convert_to_tensor(value)
    axis = int(const_axis(axis, "split's axis"))
    count = num_or_size_splits
    if isinstance(count, Tensor) and count.get_shape().ndims == 0:
        count = const_axis(count, "split's num_or_size_splits")
    if _is_int(count):
        if count <= 0:
            raise ValueError("split needs a positive number of pieces, got %d (split of %s)"
                             % (count, x.name))
        return make_op("Split", [x], name=name, num_outputs=int(count), num_split=int(count), axis=axis)
    sizes = _int_tensor(num_or_size_splits, "split's size_splits")
    n = sizes.get_shape()
    if n.ndims != 1 or (n[0].value is None and num is None):
        raise ValueError("split sizes must be a vector of known length (or pass num), got shape %s "
                         "(split of %s)" % (n, x.name))
    if num is not None and n[0].value not in (None, num):
        raise ValueError("split got num=%d but %d sizes (split of %s)" % (num, n[0].value, x.name))
    num = n[0].value if n[0].value is not None else int(num)
    return make_op("SplitV", [x, sizes], name=name, num_outputs=num, num_split=num, axis=axis)


# -- Pack (stack), Unpack (unstack) --------------------------------------------------------------
def _pack_shape(op):
    merged = unknown_shape()
    for t in op.inputs:
        try:
            merged = merged.merge_with(t.get_shape())
        except ValueError:
            raise ValueError("Shapes of all inputs must match to stack them, got %s (op '%s')"
                             % (", ".join(str(u.get_shape()) for u in op.inputs), op.name)) from None
    if merged.ndims is None:
        return unknown_shape()
    dims = merged.as_list()
    dims.insert(normalize_axis(op._attrs["axis"], len(dims) + 1, "stack '%s'" % op.name)[0],
                len(op.inputs))
    return TensorShape(dims)


def _pack_partial(op):
    parts = [partial_value(t) for t in op.inputs]
    if any(p is None for p in parts):
        return None
    return np.stack(parts, axis=op._attrs["axis"])


register_op("Pack", shape=_pack_shape,
            kernel=lambda ctx, *values, axis: ctx.xp.stack(values, axis=axis),
            grad=lambda op, g: unstack(g, num=len(op.inputs), axis=op._attrs["axis"]))
_register_partial("Pack", _pack_partial)


def stack(values, axis=0, name="stack"):
    """The rank-(R+1) tensor of the rank-R ``values`` stacked along a new ``axis``."""
    values = _same_dtype_list(to_tensors(*values), "Pack")
    if not values:
        raise ValueError("stack needs at least one value")
    return make_op("Pack", values, name=name or "stack", axis=int(const_axis(axis, "stack's axis")))


def _unpack_shape(op):
    s, num = op.inputs[0].get_shape(), op._attrs["num"]
    if s.ndims is None:
        return [unknown_shape()] * num
    a = _axis_of(op._attrs["axis"], s.ndims, op)
    dims = s.as_list()
    if dims[a] is not None and dims[a] != num:
        raise ValueError("Cannot unstack dimension %d of shape %s into %d tensors (op '%s')"
                         % (a, s, num, op.name))
    return [TensorShape(dims[:a] + dims[a + 1:])] * num


def _unpack_kernel(ctx, x, num, axis):
    if x.shape[axis] != num:
        raise _bad_input("Cannot unstack dimension %d of shape %s into %d tensors", axis, x.shape, num)
    return _outputs(tuple(ctx.xp.moveaxis(x, axis, 0)))


register_op("Unpack", shape=_unpack_shape, kernel=_unpack_kernel,
            grad=lambda op, *gs: [stack(list(gs), axis=op._attrs["axis"])])


def unstack(value, num=None, axis=0, name="unstack"):
    """The list of rank-(R-1) tensors along ``axis`` of ``value`` (that dimension must be known,
    or given as ``num``)."""
    x = convert_to_tensor(value)
    s = x.get_shape()
    axis = int(const_axis(axis, "unstack's axis"))
    if s.ndims is not None:
        axis = normalize_axis(axis, s.ndims, "unstack of %s" % x.name)[0]
    if num is None:
        num = s[axis].value if s.ndims is not None else None
        if num is None:
            raise ValueError("Cannot infer num from shape %s (unstack of %s along axis %d): pass num"
                             % (s, x.name, axis))
    if num == 0:
        return []
    return make_op("Unpack", [x], name=name or "unstack", num_outputs=int(num), num=int(num), axis=axis)


# -- OneHot --------------------------------------------------------------------------------------
def _one_hot_shape(op):
    s, axis = op.inputs[0].get_shape(), op._attrs["axis"]
    depth = constant_value(op.inputs[1])
    if s.ndims is None:
        return unknown_shape()
    dims = s.as_list()
    if not -1 <= axis <= len(dims):
        raise ValueError("one_hot axis must be -1 or in [0, %d] for indices of shape %s, got %d "
                         "(op '%s')" % (len(dims), s, axis, op.name))
    if depth is not None and int(depth) < 0:
        raise ValueError("one_hot depth must be non-negative, got %d (op '%s')" % (int(depth), op.name))
    dims.insert(len(dims) if axis == -1 else axis, None if depth is None else int(depth))
    return TensorShape(dims)


def _one_hot_kernel(ctx, indices, depth, on_value, off_value, axis):
    xp = ctx.xp
    if int(depth) < 0:
        raise _bad_input("one_hot depth must be non-negative, got %d", int(depth))
    hot = indices[..., None] == xp.arange(int(depth), dtype=indices.dtype)
    out = xp.where(hot, on_value, off_value).astype(on_value.dtype, copy=False)
    return out if axis in (-1, indices.ndim) else xp.moveaxis(out, -1, axis)


register_op("OneHot", dtype=lambda op: op.inputs[2].dtype, shape=_one_hot_shape,
            kernel=_one_hot_kernel, grad=None)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """``on_value`` where the new ``axis`` (default last) equals ``indices``, ``off_value``
    elsewhere (out-of-range indices give all ``off_value``); dtype float32 unless set."""
    idx = convert_to_tensor(indices)
    if not idx.dtype.is_integer:
        raise TypeError("one_hot indices must be integers, got %s (%s)" % (idx.dtype.name, idx.name))
    given = [convert_to_tensor(v) for v in (on_value, off_value) if v is not None]
    if len(given) == 2 and given[0].dtype != given[1].dtype:
        raise TypeError("one_hot on_value (%s) and off_value (%s) must have the same dtype"
                        % (given[0].dtype.name, given[1].dtype.name))
    if given and dtype is not None and given[0].dtype != _dtypes.as_dtype(dtype):
        raise TypeError("one_hot dtype %s does not match the dtype %s of on_value/off_value"
                        % (_dtypes.as_dtype(dtype).name, given[0].dtype.name))
    dtype = given[0].dtype if given else _dtypes.as_dtype(dtype or _dtypes.float32)
    on = convert_to_tensor(1 if on_value is None else on_value, dtype=dtype)
    off = convert_to_tensor(0 if off_value is None else off_value, dtype=dtype)
    depth = _cast(depth, _dtypes.int32) if is_symbolic(depth) else constant(int(depth), _dtypes.int32)
    return make_op("OneHot", [idx, depth, on, off],
                   name=name or "one_hot", axis=-1 if axis is None else int(axis))


# -- Where (coordinates), Select -----------------------------------------------------------------
register_op("Where", dtype=lambda op: _dtypes.int64,
            shape=lambda op: TensorShape([None, op.inputs[0].get_shape().ndims]),
            kernel=lambda ctx, c: ctx.xp.argwhere(c).astype(np.int64, copy=False), grad=None)


def _select_shape(op):
    c, x, y = (t.get_shape() for t in op.inputs)
    try:
        out = x.merge_with(y)
    except ValueError:
        raise ValueError("x and y of where must have the same shape, got %s and %s (op '%s')"
                         % (x, y, op.name)) from None
    if c.ndims in (None, 0) or out.ndims is None:
        return out
    if c.ndims == 1 and out.ndims > 1:
        if not c[0].is_compatible_with(out[0]):
            raise ValueError("A vector condition of where must match the first dimension of x: "
                             "condition %s, x %s (op '%s')" % (c, out, op.name))
        return TensorShape([c[0].merge_with(out[0]).value] + out.as_list()[1:])
    if not c.is_compatible_with(out):
        raise ValueError("The condition of where must have the shape of x and y or be a vector of "
                         "their first dimension: condition %s, x %s (op '%s')" % (c, out, op.name))
    return out.merge_with(c)


def _select_kernel(ctx, c, x, y):
    if x.shape != y.shape:
        raise _bad_input("x and y of where must have the same shape, got %s and %s", x.shape, y.shape)
    if c.ndim == 1 and x.ndim > 1 and c.shape[0] == x.shape[0]:
        c = c.reshape((-1,) + (1,) * (x.ndim - 1))
    elif c.ndim and c.shape != x.shape:
        raise _bad_input("The condition of where must have the shape of x and y or be a vector of "
                         "their first dimension: condition %s, x %s", c.shape, x.shape)
    return ctx.xp.where(c, x, y)


def _select_grad(op, g):
    c = op.inputs[0]
    zeros = zeros_like(g)
    return [None, where(c, g, zeros), where(c, zeros, g)]


register_op("Select", dtype=lambda op: op.inputs[1].dtype, shape=_select_shape,
            kernel=_select_kernel, grad=_select_grad)


def where(condition, x=None, y=None, name=None):
    """With one argument: the int64 coordinates [N, rank] of the true entries of ``condition``.
    With three: the entries of ``x`` where ``condition`` is true, else of ``y`` (``condition``
    has x's shape, or is a vector of x's first dimension selecting whole rows)."""
    c = convert_to_tensor(condition)
    if x is None and y is None:
        return make_op("Where", [c], name=name or "Where")
    if x is None or y is None:
        raise ValueError("where needs both x and y, or neither")
    if not c.dtype.is_bool:
        raise TypeError("The condition of where must be bool, got %s (%s)" % (c.dtype.name, c.name))
    x, y = to_tensors(x, y)
    if x.dtype != y.dtype:
        raise TypeError("x and y of where must have the same dtype, got %s and %s"
                        % (x.dtype.name, y.dtype.name))
    return make_op("Select", [c, x, y], name=name or "Select")


# -- Range ---------------------------------------------------------------------------------------
def _range_length(start, limit, delta):
    if delta == 0:
        raise ValueError("Requires delta != 0: %s" % delta)
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise ValueError("Requires start %s limit when delta %s 0: %s/%s"
                         % ((("<=", ">") if delta > 0 else (">=", "<")) + (start, limit)))
    if all(_is_int(v) for v in (start, limit, delta)):
        return int(-((start - limit) // delta))
    return int(np.ceil((float(limit) - float(start)) / float(delta)))


def _range_shape(op):
    vals = [constant_value(t) for t in op.inputs]
    if any(v is None for v in vals):
        return unknown_shape(1)
    try:
        return TensorShape([_range_length(*(v.item() for v in map(np.asarray, vals)))])
    except ValueError as e:
        raise ValueError("%s (range, op '%s')" % (e, op.name)) from None


def _range_kernel(ctx, start, limit, delta):
    try:
        _range_length(start.item(), limit.item(), delta.item())
    except ValueError as e:
        raise _bad_input("%s", e) from None
    return ctx.xp.arange(start, limit, delta, dtype=start.dtype)


def _range_fold(op):
    vals = [constant_value(t) for t in op.inputs]
    if any(v is None for v in vals) or op.outputs[0].get_shape()[0].value > _MAX_FOLD_ELEMENTS:
        return None
    return np.arange(*vals, dtype=op.outputs[0].dtype.as_numpy_dtype)


register_op("Range", shape=_range_shape, kernel=_range_kernel, grad=None)
register_constant_folder("Range", _range_fold)

_RANGE_DTYPES = (_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF1's name
    """``[start, start + delta, ...]`` up to but excluding ``limit`` (``tf.range(n)``: 0..n-1);
    the dtype is the widest of the arguments' unless given."""
    if limit is None:
        start, limit = 0, start
    args = [start, limit, delta]
    if dtype is None:
        kinds = [convert_to_tensor(a).dtype.base_dtype if is_symbolic(a) else _dtypes.dtype_of_value(a)
                 for a in args]
        bad = [k.name for k in kinds if k not in _RANGE_DTYPES]
        if bad:
            raise TypeError("range arguments must be int32, int64, float32 or float64, got %s" % bad)
        dtype = max(kinds, key=_RANGE_DTYPES.index)
    dtype = _dtypes.as_dtype(dtype)
    tensors = [_cast(convert_to_tensor(a), dtype) if is_symbolic(a)
               else constant(np.asarray(a).astype(dtype.as_numpy_dtype)) for a in args]
    return make_op("Range", tensors, name=name or "range")


# -- LinSpace ------------------------------------------------------------------------------------
def _lin_space_num(num):
    if num <= 0:
        raise ValueError("Requires num > 0: %d" % num)
    return num


def _lin_space_shape(op):
    num = constant_value(op.inputs[2])
    if num is None:
        return unknown_shape(1)
    try:
        return TensorShape([_lin_space_num(int(num))])
    except ValueError as e:
        raise ValueError("%s (lin_space, op '%s')" % (e, op.name)) from None


def _lin_space_kernel(ctx, start, stop, num):
    try:
        n = _lin_space_num(int(num))
    except ValueError as e:
        raise _bad_input("%s", e) from None
    # TF's kernel, in the dtype of start: start + i * step, the last entry exactly stop.
    step = (stop - start) / start.dtype.type(max(n - 1, 1))
    out = ctx.xp.arange(n, dtype=start.dtype) * step.item() + start.item()
    if n > 1:
        out[-1] = stop.item()
    return out


register_op("LinSpace", dtype=lambda op: op.inputs[0].dtype, shape=_lin_space_shape,
            kernel=_lin_space_kernel, grad=None)


def lin_space(start, stop, num, name=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (both included; float32 or
    float64 scalars): ``tf.lin_space(0.0, 1.0, 5)`` is ``[0, 0.25, 0.5, 0.75, 1]``."""
    start, stop = to_tensors(start, stop)
    for what, t in (("start", start), ("stop", stop)):
        if t.dtype.base_dtype not in (_dtypes.float32, _dtypes.float64):
            raise TypeError("lin_space's %s must be float32 or float64, got %s (%s)"
                            % (what, t.dtype.name, t.name))
        if t.get_shape().ndims not in (None, 0):
            raise ValueError("lin_space's %s must be a scalar, got shape %s (%s)"
                             % (what, t.get_shape(), t.name))
    if start.dtype != stop.dtype:
        raise TypeError("Input 'stop' of 'LinSpace' Op has type %s that does not match type %s of "
                        "argument 'start'." % (stop.dtype.name, start.dtype.name))
    n = convert_to_tensor(num)
    if n.dtype.base_dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("lin_space's num must be int32 or int64, got %s (%s)" % (n.dtype.name, n.name))
    return make_op("LinSpace", [start, stop, n], name=name or "LinSpace")


linspace = lin_space


# -- segment reductions ------------------------------------------------------------------------
def _segment_sum_kernel(ctx, values, ids, num_segments):
    xp = ctx.xp
    out = xp.zeros((int(num_segments),) + values.shape[ids.ndim:], dtype=values.dtype)
    row = values.shape[ids.ndim:]
    if xp is np and ids.size > 1 and row and int(np.prod(row)) >= 8:
        # Summing rows (sparse gradients): numpy's add.at is ~10x slower than sorting the ids
        # and adding each run of equal ids with reduceat.
        flat = ids.reshape(-1)
        if out.shape[0] <= 8 * flat.size and flat.min() >= 0:
            # Few segments for the rows: count each id's rows without sorting. Mostly distinct
            # ids (the gradient of a deduplicated embedding lookup) are placed with one scatter
            # and the repeated ones summed in input order, as TF1 sums them: 4096 rows of 64
            # in 0.14 ms (a stable sort: 0.34 ms).
            repeated = np.bincount(flat, minlength=out.shape[0])[flat] > 1
            n_repeated = int(np.count_nonzero(repeated))
            if 2 * n_repeated < flat.size:
                values = values.reshape((flat.size,) + row)
                out[flat] = values
                if n_repeated:
                    at = flat[repeated]
                    out[at] = 0
                    np.add.at(out, at, values[repeated])
                return out
        order = np.argsort(flat, kind="stable")
        sorted_ids = flat[order]
        if sorted_ids[0] < 0:  # as TF1: rows of negative segment ids are dropped
            keep = int(np.searchsorted(sorted_ids, 0))
            order, sorted_ids = order[keep:], sorted_ids[keep:]
            if not sorted_ids.size:
                return out
        first = np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1]))
        values = values.reshape((flat.size,) + row)
        starts = np.flatnonzero(first)
        repeats = flat.size - starts.size
        if repeats < starts.size:
            # Mostly distinct ids (the gradient of a deduplicated embedding lookup): reduceat
            # costs ~0.45 us per segment, so place each id's first row and add the few repeats
            # (add.at costs about as much per row): 2.1 -> 0.5 ms for 4096 rows of 64.
            out[sorted_ids[starts]] = values[order[starts]]
            if repeats:
                rest = ~first
                np.add.at(out, sorted_ids[rest], values[order[rest]])
            return out
        out[sorted_ids[starts]] = np.add.reduceat(values.take(order, axis=0), starts, axis=0)
        return out
    keep = ids >= 0   # as TF1: rows of negative segment ids are dropped
    xp.add.at(out, ids[keep], values[keep])
    return out


def _segment_mean_kernel(ctx, data, ids, num_segments):
    """Segment sums over the rows each segment got (ids checked and non-negative); integer means
    are truncated toward zero, as TF's C++ division."""
    xp = ctx.xp
    total = _segment_sum_kernel(ctx, data, ids, num_segments)
    counts = xp.maximum(xp.bincount(ids, minlength=num_segments), 1).astype(data.dtype)
    counts = counts.reshape((num_segments,) + (1,) * (data.ndim - 1))
    if data.dtype.kind in "iu":
        return xp.sign(total) * (xp.abs(total) // counts)
    return total / counts


def _segment_extreme_kernel(pick_max, empty):
    """A kernel ``(ctx, data, ids, num_segments)`` taking each segment's largest (``pick_max``)
    or smallest rows of ``data``, column by column; ``empty(dtype)`` fills segments without rows,
    and rows of negative ids are dropped. Sorting each column by value and then, stably, by
    segment id lines up each segment's rows in order of value: its last row holds its max, its
    first its min (no scatter-max, which numpy and cupy do not share)."""
    def kernel(ctx, data, ids, num_segments):
        xp = ctx.xp
        flat = ids.reshape(-1)
        row = data.shape[ids.ndim:]
        out = xp.full((num_segments, int(np.prod(row))), empty(data.dtype), dtype=data.dtype)
        if flat.size:
            cols = data.reshape((flat.size, out.shape[1]))
            by_value = xp.argsort(cols, axis=0, kind="stable")
            by_segment = xp.argsort(flat[by_value], axis=0, kind="stable")
            order = xp.take_along_axis(by_value, by_segment, axis=0)
            sorted_ids = xp.sort(flat)
            run_edge = [sorted_ids[1:] != sorted_ids[:-1], xp.ones(1, dtype=bool)]
            edges = xp.concatenate(run_edge if pick_max else run_edge[::-1])
            at = xp.flatnonzero(edges & (sorted_ids >= 0))
            out[sorted_ids[at]] = xp.take_along_axis(cols, order[at], axis=0)
        return out.reshape((num_segments,) + row)
    return kernel


def _lowest(dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


def _index_str(flat_index, shape):
    """Entry ``flat_index`` of an array of ``shape`` as TF writes it in errors: ``1,0``."""
    return ",".join(str(int(i)) for i in np.unravel_index(flat_index, shape))


def _segment_rows_mask(mask, data):
    """``mask`` (of segment_ids' shape) reshaped to broadcast against ``data``'s rows."""
    ones = ones_like(shape(data))[rank(mask):]
    return reshape(mask, concat([shape(mask), ones], 0))


def _gather_drop_negatives(params, ids):
    """``(rows, kept)``: ``gather(params, ids)`` with rows of zeros for negative ids (the rows a
    segment reduction dropped), and where the rows were kept (TF's _GatherDropNegatives)."""
    from zps.ops import math_ops  # math_ops imports this module
    rows = gather(params, math_ops.maximum(ids, 0))
    kept = broadcast_to(_segment_rows_mask(ids >= 0, rows), shape(rows))
    return where(kept, rows, zeros_like(rows)), kept


def _segment_extreme_grad(op, g):
    """TF's rule for segment max and min: each segment's gradient goes to the entries equal to
    its max (min), split evenly among ties; rows of negative (dropped) ids get none."""
    from zps.ops import math_ops  # math_ops imports this module
    data, ids = op.inputs[0], op.inputs[1]
    extremes, kept = _gather_drop_negatives(op.outputs[0], ids)
    selected = math_ops.logical_and(math_ops.equal(data, extremes), kept)
    ties = unsorted_segment_sum(math_ops.cast(selected, g.dtype), ids, shape(g)[0])
    grads = _gather_drop_negatives(g / ties, ids)[0]
    return [where(selected, grads, zeros_like(grads))] + [None] * (len(op.inputs) - 1)


# -- UnsortedSegmentSum, UnsortedSegmentMax, UnsortedSegmentMin -----------------------------------
def _unsorted_segments(reduce):
    """The kernel of an unsorted segment reduction: ``reduce(ctx, data, ids, num_segments)`` once
    the ids are checked to be below num_segments (negative ids are dropped, as in TF)."""
    def kernel(ctx, data, ids, num_segments):
        num = int(num_segments)
        if data.shape[:ids.ndim] != ids.shape:
            raise _bad_input("segment_ids shape %s must be a prefix of data shape %s",
                             list(ids.shape), list(data.shape))
        flat = ids.reshape(-1)
        if flat.size and int(flat.max()) >= num:
            at = int(ctx.xp.argmax(flat >= num))
            raise _bad_input("segment_ids[%s] = %d is out of range [0, %d)",
                             _index_str(at, ids.shape), int(flat[at]), num)
        return reduce(ctx, data, ids, num)
    return kernel


def _unsorted_segment_shape(op):
    data, ids = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    n = constant_value(op.inputs[2])
    if data.ndims is None or ids.ndims is None:
        return unknown_shape()
    if ids.ndims > data.ndims or not data[:ids.ndims].is_compatible_with(ids):
        raise ValueError("segment_ids of shape %s must match the first dimensions of data of shape "
                         "%s (op '%s')" % (ids, data, op.name))
    return TensorShape([None if n is None else int(n)] + data.as_list()[ids.ndims:])


register_op("UnsortedSegmentSum", shape=_unsorted_segment_shape,
            kernel=_unsorted_segments(_segment_sum_kernel),
            grad=lambda op, g: [_gather_drop_negatives(g, op.inputs[1])[0], None, None])
register_op("UnsortedSegmentMax", shape=_unsorted_segment_shape,
            kernel=_unsorted_segments(_segment_extreme_kernel(True, _lowest)),
            grad=_segment_extreme_grad)
register_op("UnsortedSegmentMin", shape=_unsorted_segment_shape,
            kernel=_unsorted_segments(_segment_extreme_kernel(False, _highest)),
            grad=_segment_extreme_grad)


def _unsorted_segment_op(op_type, data, segment_ids, num_segments, name):
    ids = convert_to_tensor(segment_ids)
    if not ids.dtype.is_integer:
        raise TypeError("%s segment_ids must be int32 or int64, got %s (%s)"
                        % (op_type, ids.dtype.name, ids.name))
    return make_op(op_type, [convert_to_tensor(data), ids,
                             convert_to_tensor(num_segments, preferred_dtype=_dtypes.int32)],
                   name=name or op_type)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """``out[i] = sum(data[j] for j where segment_ids[j] == i)``; segment_ids has the shape of
    data's first dimensions, in any order (negative ids are dropped)."""
    return _unsorted_segment_op("UnsortedSegmentSum", data, segment_ids, num_segments, name)


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """As ``unsorted_segment_sum``, the max instead of the sum; a segment without rows is the
    dtype's lowest value: ``tf.unsorted_segment_max([1, 5, 2], [1, 1, 0], 3)`` is
    ``[2, 5, lowest]``."""
    return _unsorted_segment_op("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """As ``unsorted_segment_sum``, the min instead of the sum; a segment without rows is the
    dtype's highest value."""
    return _unsorted_segment_op("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def _unsorted_segment_counts(data, segment_ids, num_segments):
    """How many rows each segment got (at least 1), shaped to broadcast against its sums."""
    from zps.ops import math_ops  # math_ops imports this module
    data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    n = unsorted_segment_sum(ones_like(ids, dtype=data.dtype), ids, num_segments)
    n = reshape(n, concat([[-1], ones_like(shape(data))[rank(ids):]], 0))
    return math_ops.maximum(n, constant(1, dtype=data.dtype))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """As ``unsorted_segment_sum``, divided by each segment's row count (0 for empty segments)."""
    return (unsorted_segment_sum(data, segment_ids, num_segments, name=name)
            / _unsorted_segment_counts(data, segment_ids, num_segments))


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """As ``unsorted_segment_sum``, divided by the square root of each segment's row count."""
    from zps.ops import math_ops  # math_ops imports this module
    return (unsorted_segment_sum(data, segment_ids, num_segments, name=name)
            / math_ops.sqrt(_unsorted_segment_counts(data, segment_ids, num_segments)))


# -- SegmentSum, SegmentMean, SegmentMax, SegmentMin (sorted segment ids) ------------------------
def _sorted_segments(reduce):
    """The kernel of a sorted segment reduction: ``reduce(ctx, data, ids, num_segments)`` with
    ``segment_ids[-1] + 1`` segments, once the ids are checked (as long as data's first
    dimension, non-decreasing, from 0)."""
    def kernel(ctx, data, ids):
        if ids.ndim != 1 or data.ndim == 0 or ids.shape[0] != data.shape[0]:
            raise _bad_input("segment_ids should be the same size as dimension 0 of input: "
                             "segment_ids shape %s, data shape %s", list(ids.shape),
                             list(data.shape))
        if not ids.size:
            return reduce(ctx, data, ids, 0)
        num = int(ids[-1]) + 1
        if bool((ids[1:] < ids[:-1]).any()):
            raise _bad_input("segment ids are not increasing")
        if int(ids[0]) < 0:
            raise _bad_input("Segment id %d out of range [0, %d), possibly because 'segment_ids' "
                             "input is not sorted.", int(ids[0]), num)
        return reduce(ctx, data, ids, num)
    return kernel


def _sorted_segment_shape(op):
    data, ids = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if ids.ndims not in (None, 1):
        raise ValueError("segment_ids must be a vector, got shape %s (op '%s')" % (ids, op.name))
    if data.ndims == 0:
        raise ValueError("Segment reductions need data of rank at least 1, got a scalar (op '%s')"
                         % op.name)
    return unknown_shape() if data.ndims is None else TensorShape([None] + data.as_list()[1:])


def _segment_mean_grad(op, g):
    # TF's rule: each row gets its segment's gradient over the segment's row count.
    data, ids = op.inputs
    ones = ones_like(shape(data))[1:]
    counts = segment_sum(ones_like(ids, dtype=g.dtype), ids)
    return [gather(g / reshape(counts, concat([[-1], ones], 0)), ids), None]


register_op("SegmentSum", shape=_sorted_segment_shape,
            kernel=_sorted_segments(_segment_sum_kernel),
            grad=lambda op, g: [gather(g, op.inputs[1]), None])
register_op("SegmentMean", shape=_sorted_segment_shape,
            kernel=_sorted_segments(_segment_mean_kernel), grad=_segment_mean_grad)
register_op("SegmentMax", shape=_sorted_segment_shape,
            kernel=_sorted_segments(_segment_extreme_kernel(True, lambda dtype: 0)),
            grad=_segment_extreme_grad)
register_op("SegmentMin", shape=_sorted_segment_shape,
            kernel=_sorted_segments(_segment_extreme_kernel(False, lambda dtype: 0)),
            grad=_segment_extreme_grad)


def _sorted_segment_op(op_type, data, segment_ids, name):
    ids = convert_to_tensor(segment_ids)
    if not ids.dtype.is_integer:
        raise TypeError("%s segment_ids must be int32 or int64, got %s (%s)"
                        % (op_type, ids.dtype.name, ids.name))
    return make_op(op_type, [convert_to_tensor(data), ids], name=name or op_type)


def segment_sum(data, segment_ids, name=None):
    """``out[i] = sum(data[j] for j where segment_ids[j] == i)`` for sorted ``segment_ids`` (one
    per row of data); there are ``segment_ids[-1] + 1`` segments, those without rows are 0:
    ``tf.segment_sum([1, 2, 3], [0, 0, 2])`` is ``[3, 0, 3]``."""
    return _sorted_segment_op("SegmentSum", data, segment_ids, name)


def segment_mean(data, segment_ids, name=None):
    """As ``segment_sum``, the mean of each segment's rows (integer means truncated)."""
    return _sorted_segment_op("SegmentMean", data, segment_ids, name)


def segment_max(data, segment_ids, name=None):
    """As ``segment_sum``, the max of each segment's rows (0 for a segment without rows)."""
    return _sorted_segment_op("SegmentMax", data, segment_ids, name)


def segment_min(data, segment_ids, name=None):
    """As ``segment_sum``, the min of each segment's rows (0 for a segment without rows)."""
    return _sorted_segment_op("SegmentMin", data, segment_ids, name)


def densify(value):
    """An IndexedSlices as a dense tensor (other values pass through)."""
    if not isinstance(value, IndexedSlices):
        return value
    if value.dense_shape is None:
        raise ValueError("Cannot densify IndexedSlices %s with unknown dense_shape" % value.name)
    rows = value.dense_shape[0] if value.dense_shape.get_shape().ndims == 1 else value.dense_shape
    return unsorted_segment_sum(value.values, value.indices, rows)


# -- Gather --------------------------------------------------------------------------------------
def _gather_shape(op):
    p, i = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if p.ndims is None or i.ndims is None:
        return unknown_shape()
    if p.ndims == 0:
        raise ValueError("gather params must have rank at least 1, got a scalar (op '%s')" % op.name)
    return TensorShape(i.as_list() + p.as_list()[1:])


def _gather_kernel(ctx, params, indices):
    if indices.size and (indices.min() < 0 or indices.max() >= params.shape[0]):
        bad = indices[(indices < 0) | (indices >= params.shape[0])].ravel()[0]
        raise _bad_input("indices contains %d, which is not in [0, %d) (params shape %s)",
                         bad, params.shape[0], params.shape)
    return params.take(indices, axis=0)


def _gather_grad(op, g):
    params, indices = op.inputs
    out_type = _dtypes.int64 if indices.dtype == _dtypes.int64 else _dtypes.int32
    # As TF1: the shape is read where params live, so a ps table never travels to a worker
    # just to have its shape taken (only the small shape vector crosses).
    with params.graph.colocate_with(params.op):
        dense_shape = shape(params, out_type=out_type)
    row_shape = make_op("ShapeSuffix", [dense_shape], begin=1)
    values = reshape(g, concat([constant([-1], dtype=out_type), row_shape], 0))
    return [IndexedSlices(values, reshape(indices, [-1]), dense_shape), None]


def _gather_cost(params, indices):
    """The bytes a gather moves: the rows it takes (not the table they are taken from)."""
    rows = params.shape[0] if params.ndim else 1
    return indices.nbytes + indices.size * (params.nbytes // max(rows, 1))


register_op("Gather", shape=_gather_shape, kernel=_gather_kernel, grad=_gather_grad,
            inline_cost=_gather_cost)
register_op("ShapeSuffix", shape=lambda op: TensorShape([_suffix_len(op)]),
            kernel=lambda ctx, s, begin: s[begin:], grad=None)
# Its known entries keep the gradient's static shape (reshape infers the -1 row count).
_register_partial("ShapeSuffix", lambda op: _suffix(partial_value(op.inputs[0]), op._attrs["begin"]))


def _suffix(value, begin):
    return None if value is None else value[begin:]


def _suffix_len(op):
    n = op.inputs[0].get_shape()
    return None if n.ndims != 1 or n[0].value is None else max(n[0].value - op._attrs["begin"], 0)


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices ``params[indices]`` along ``axis``; along axis 0 its gradient is an IndexedSlices
    (other axes transpose around an axis-0 gather and need known ranks). With ``batch_dims`` = b,
    the first b dimensions of both are batch dimensions: ``out[i] = gather(params[i],
    indices[i], axis - b)`` for each batch position i (``axis`` defaults to b)."""
    p = convert_to_tensor(params)
    i = convert_to_tensor(indices)
    if not i.dtype.is_integer:
        raise TypeError("gather indices must be int32 or int64, got %s (%s)" % (i.dtype.name, i.name))
    batch_dims = int(const_axis(batch_dims, "gather's batch_dims"))
    if batch_dims != 0:
        return _batch_gather(p, i, axis, batch_dims, name)
    axis = const_axis(0 if axis is None else axis, "gather's axis")
    if axis == 0:
        return make_op("Gather", [p, i], name=name or "Gather")
    rp, ri = p.get_shape().ndims, i.get_shape().ndims
    if rp is None or ri is None:
        raise ValueError("gather along axis %d needs params and indices of known rank, got shapes %s "
                         "and %s" % (axis, p.get_shape(), i.get_shape()))
    axis = normalize_axis(axis, rp, "gather of %s" % p.name)[0]
    others = [d for d in builtins.range(rp) if d != axis]
    rows = make_op("Gather", [transpose(p, [axis] + others), i], name="Gather")
    # rows has dims indices + others; move the index dims back to where `axis` was.
    back = ([ri + k for k in builtins.range(axis)] + list(builtins.range(ri))
            + [ri + k for k in builtins.range(axis, rp - 1)])
    return transpose(rows, back, name=name or "GatherV2")


def _batch_gather(p, i, axis, batch_dims, name):
    """gather with ``batch_dims``: a ``gather_nd`` of each index with its batch position (whose
    bounds checks and gradient it reuses), around a transpose that brings ``axis`` next to the
    batch dimensions."""
    rp, ri = p.get_shape().ndims, i.get_shape().ndims
    if rp is None or ri is None:
        raise ValueError("gather with batch_dims needs params and indices of known rank, got "
                         "shapes %s and %s" % (p.get_shape(), i.get_shape()))
    bd = batch_dims + ri if batch_dims < 0 else batch_dims
    axis = normalize_axis(bd if axis is None else const_axis(axis, "gather's axis"), rp,
                          "gather of %s" % p.name)[0]
    if not 0 <= bd <= ri or bd >= rp:
        raise ValueError("batch_dims must be in [-%d, %d] and less than rank(params) = %d, got %d"
                         % (ri, ri, rp, batch_dims))
    if bd > axis:
        raise ValueError("batch_dims (%d) must be less than or equal to axis (%d)" % (bd, axis))
    if not p.get_shape()[:bd].is_compatible_with(i.get_shape()[:bd]):
        raise ValueError("params.shape[:batch_dims] must equal indices.shape[:batch_dims], got "
                         "%s and %s" % (p.get_shape(), i.get_shape()))
    with p.graph.name_scope(name or "GatherV2"):
        if axis != bd:
            p = transpose(p, list(builtins.range(bd)) + [axis]
                          + [d for d in builtins.range(bd, rp) if d != axis])
        out = gather_nd(p, expand_dims(i, -1), batch_dims=bd)
        if axis == bd:
            return out
        # out is [batch, index dims, dims bd..axis-1, dims after axis]; the index dims go back
        # to where `axis` was.
        pre = axis - bd
        return transpose(out, list(builtins.range(bd)) + [ri + k for k in builtins.range(pre)]
                         + list(builtins.range(bd, ri))
                         + list(builtins.range(ri + pre, ri + rp - bd - 1)))


def _batch_coordinates(indices, batch_dims):
    """``[*indices.shape[:-1], batch_dims]``: the batch position of each index tuple."""
    lead = indices.get_shape().ndims - 1
    dims = shape(indices, out_type=indices.dtype)[:-1]
    grids = [broadcast_to(reshape(range(dims[j], dtype=indices.dtype),
                                  [1] * j + [-1] + [1] * (lead - j - 1)), dims)
             for j in builtins.range(batch_dims)]
    return stack(grids, axis=-1)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The entries of ``tensor`` where the k-D bool ``mask`` (matching dims ``axis..axis+k-1``)
    is true, those k dims flattened into one: ``tf.boolean_mask([1, 2, 3], [True, False, True])``
    is ``[1, 3]``."""
    t, m = convert_to_tensor(tensor), convert_to_tensor(mask)
    k = m.get_shape().ndims
    if k is None or k == 0:
        raise ValueError("boolean_mask needs a mask of known rank >= 1, got shape %s" % m.get_shape())
    axis = 0 if axis is None else int(const_axis(axis, "boolean_mask's axis"))
    ts = t.get_shape()
    if ts.ndims is not None:
        if ts.ndims < axis + k:
            raise ValueError("boolean_mask: mask of shape %s does not fit tensor of shape %s at axis %d"
                             % (m.get_shape(), ts, axis))
        if not ts[axis:axis + k].is_compatible_with(m.get_shape()):
            raise ValueError("boolean_mask: shapes %s (tensor, dims %d..%d) and %s (mask) are "
                             "incompatible" % (ts, axis, axis + k - 1, m.get_shape()))
    dims = shape(t)
    flat = reshape(t, concat([dims[:axis], [-1], dims[axis + k:]], 0))
    if ts.ndims is not None:
        n = ts[axis:axis + k].num_elements()
        flat.set_shape(ts.as_list()[:axis] + [n] + ts.as_list()[axis + k:])
    indices = squeeze(where(reshape(m, [-1])), axis=[1])
    return gather(flat, indices, axis=axis, name=name)


# -- GatherNd, ScatterNd -------------------------------------------------------------------------
def _nd_offsets(ctx, indices, dims, what):
    """The row-major offsets into ``dims[:depth]`` of the index tuples in ``indices`` (shape
    [..., depth]), each checked to lie inside; ``what`` names ``dims`` in the error."""
    xp = ctx.xp
    depth = indices.shape[-1]
    tuples = indices.reshape((int(np.prod(indices.shape[:-1])), depth)).astype(np.int64, copy=False)
    outside = ((tuples < 0) | (tuples >= xp.asarray(dims[:depth], dtype=np.int64))).any(axis=1)
    if bool(outside.any()):
        k = int(xp.argmax(outside))
        at = "[%s]" % _index_str(k, indices.shape[:-1]) if indices.ndim > 1 else ""
        raise _bad_input("indices%s = [%s] does not index into %s [%s]", at,
                         ", ".join(str(v) for v in tuples[k].tolist()), what,
                         ",".join(str(d) for d in dims))
    strides = [int(np.prod(dims[k + 1:depth])) for k in builtins.range(depth)]
    return (tuples * xp.asarray(strides, dtype=np.int64)).sum(axis=1)


def _gather_nd_shape(op):
    p, i = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if i.ndims == 0:
        raise ValueError("gather_nd indices must have rank at least 1, got a scalar (op '%s')"
                         % op.name)
    if p.ndims is None or i.ndims is None or i[-1].value is None:
        return unknown_shape()
    depth = i[-1].value
    if depth > p.ndims:
        raise ValueError("indices.shape[-1] must be <= params.rank, but saw indices shape %s and "
                         "params shape %s (gather_nd, op '%s')" % (i, p, op.name))
    return TensorShape(i.as_list()[:-1] + p.as_list()[depth:])


def _gather_nd_kernel(ctx, params, indices):
    depth = indices.shape[-1]
    offsets = _nd_offsets(ctx, indices, params.shape, "param shape")
    rows = params.reshape((int(np.prod(params.shape[:depth])),) + params.shape[depth:])
    return rows.take(offsets, axis=0).reshape(indices.shape[:-1] + params.shape[depth:])


register_op("GatherNd", dtype=lambda op: op.inputs[0].dtype, shape=_gather_nd_shape,
            kernel=_gather_nd_kernel,
            grad=lambda op, g: [scatter_nd(op.inputs[1], g,
                                           shape(op.inputs[0], out_type=op.inputs[1].dtype)), None])


def gather_nd(params, indices, name=None, batch_dims=0):
    """Slices of ``params`` at the index tuples along the last dimension of ``indices``: the
    output has shape ``indices.shape[:-1] + params.shape[indices.shape[-1]:]``:
    ``tf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])`` is ``[3, 2]``. With ``batch_dims`` = b,
    the first b dimensions of both are batch dimensions, the tuples index ``params[i]`` for each
    batch position i."""
    p, i = convert_to_tensor(params), convert_to_tensor(indices)
    if not i.dtype.is_integer:
        raise TypeError("gather_nd indices must be int32 or int64, got %s (%s)" % (i.dtype.name, i.name))
    batch_dims = int(const_axis(batch_dims, "gather_nd's batch_dims"))
    if batch_dims == 0:
        return make_op("GatherNd", [p, i], name=name or "GatherNd")
    ri = i.get_shape().ndims
    if ri is None or not 0 < batch_dims < ri:
        raise ValueError("gather_nd with batch_dims %d needs indices of known rank greater than "
                         "it, got shape %s" % (batch_dims, i.get_shape()))
    if not p.get_shape()[:batch_dims].is_compatible_with(i.get_shape()[:batch_dims]):
        raise ValueError("params.shape[:batch_dims] must equal indices.shape[:batch_dims], got "
                         "%s and %s" % (p.get_shape(), i.get_shape()))
    with p.graph.name_scope(name or "GatherNd") as scope:
        # Each tuple prefixed with its batch position: a plain gather_nd (bounds checked).
        full = concat([_batch_coordinates(i, batch_dims), i], -1)
        out = make_op("GatherNd", [p, full], name=scope)
        out.set_shape(i.get_shape()[:-1].concatenate(
            p.get_shape()[batch_dims + i.get_shape()[-1].value:]
            if i.get_shape()[-1].value is not None and p.get_shape().ndims is not None
            else unknown_shape()))
        return out


def _scatter_nd_shape(op):
    i, u = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    out = shape_from_value(op.inputs[2])
    if i.ndims == 0:
        raise ValueError("scatter_nd indices must have rank at least 1, got a scalar (op '%s')"
                         % op.name)
    if out.ndims is None or i.ndims is None or i[-1].value is None or u.ndims is None:
        return out
    depth = i[-1].value
    want = (unknown_shape() if depth > out.ndims
            else TensorShape(i.as_list()[:-1] + out.as_list()[depth:]))
    if not want.is_compatible_with(u):
        raise ValueError("updates of scatter_nd must have shape indices.shape[:-1] + "
                         "shape[indices.shape[-1]:]: indices %s, updates %s, shape %s (op '%s')"
                         % (i, u, out, op.name))
    return out


def _scatter_nd_kernel(ctx, indices, updates, shape):
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise _bad_input("Dimension %d must be >= 0 (scatter_nd shape %s)", min(dims), list(dims))
    depth = indices.shape[-1]
    if depth > len(dims) or updates.shape != indices.shape[:-1] + dims[depth:]:
        raise _bad_input("updates of scatter_nd must have shape indices.shape[:-1] + "
                         "shape[indices.shape[-1]:]: indices %s, updates %s, shape %s",
                         list(indices.shape), list(updates.shape), list(dims))
    if not int(np.prod(dims)) and (indices.size or updates.size):
        raise _bad_input("Indices and updates specified for empty output shape")
    offsets = _nd_offsets(ctx, indices, dims, "shape")
    rows = updates.reshape(offsets.shape + dims[depth:])
    # Duplicate index tuples add up: the offsets are the segment ids of a segment sum.
    return _segment_sum_kernel(ctx, rows, offsets, int(np.prod(dims[:depth]))).reshape(dims)


register_op("ScatterNd", dtype=lambda op: op.inputs[1].dtype, shape=_scatter_nd_shape,
            kernel=_scatter_nd_kernel,
            grad=lambda op, g: [None, gather_nd(g, op.inputs[0]), None])


def scatter_nd(indices, updates, shape, name=None):  # noqa: F811 - TF1's argument name
    """Zeros of ``shape`` with ``updates`` added at the index tuples along the last dimension of
    ``indices`` (duplicates add up): ``tf.scatter_nd([[1], [3]], [9, 10], [4])`` is
    ``[0, 9, 0, 10]``."""
    i = convert_to_tensor(indices)
    if not i.dtype.is_integer:
        raise TypeError("scatter_nd indices must be int32 or int64, got %s (%s)" % (i.dtype.name, i.name))
    if is_symbolic(shape) or _contains_symbolic(shape):
        s = _int_tensor(shape, "scatter_nd's shape")
        if s.dtype != i.dtype:
            raise TypeError("Input 'shape' of 'ScatterNd' Op has type %s that does not match type "
                            "%s of argument 'indices'." % (s.dtype.name, i.dtype.name))
    else:   # a Python shape takes the indices' dtype, as TF's op converts it
        s = constant(_int_array(shape, "scatter_nd's shape"), dtype=i.dtype)
    return make_op("ScatterNd", [i, convert_to_tensor(updates), s], name=name or "ScatterNd")


# -- sequence_mask -------------------------------------------------------------------------------
def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name=None):
    """``mask[..., j] = j < lengths[...]`` for j in [0, maxlen) (default: the largest length):
    ``tf.sequence_mask([1, 3], 4)`` is ``[[True, False, False, False], [True, True, True,
    False]]``."""
    from zps.ops import math_ops  # math_ops imports this module
    lengths = convert_to_tensor(lengths)
    if maxlen is None:
        maxlen = math_ops.maximum(constant(0, dtype=lengths.dtype), math_ops.reduce_max(lengths))
    else:
        maxlen = convert_to_tensor(maxlen)
    if maxlen.get_shape().ndims not in (None, 0):
        raise ValueError("Argument `maxlen` must be scalar for sequence_mask, got shape %s (%s)"
                         % (maxlen.get_shape(), maxlen.name))
    columns = range(0, maxlen, dtype=maxlen.dtype)
    mask = math_ops.less(columns, _cast(expand_dims(lengths, -1), maxlen.dtype), name=name)
    dtype = _dtypes.as_dtype(dtype)
    return mask if dtype == _dtypes.bool else _cast(mask, dtype)


# -- MatrixBandPart, MatrixDiag, MatrixDiagPart (and diag, diag_part built from them) ------------
def _band_part_kernel(ctx, x, num_lower, num_upper):
    if x.ndim < 2:
        raise _bad_input("input must be at least 2-dim, received shape: %s", list(x.shape))
    for what, v in (("num_lower", num_lower), ("num_upper", num_upper)):
        if v.ndim:
            raise _bad_input("%s must be scalar, got shape %s", what, list(v.shape))
    m, n = x.shape[-2:]
    lower, upper = int(num_lower), int(num_upper)
    if lower > m:
        raise _bad_input("num_lower must be negative or less or equal to number of rows (%d) got: "
                         "%d", m, lower)
    if upper > n:
        raise _bad_input("num_upper must be negative or less or equal to number of columns (%d) "
                         "got: %d", n, upper)
    xp = ctx.xp
    above = xp.arange(n)[None, :] - xp.arange(m)[:, None]   # column - row: > 0 above the diagonal
    keep = xp.ones((m, n), dtype=bool)
    if lower >= 0:
        keep &= above >= -lower
    if upper >= 0:
        keep &= above <= upper
    return xp.where(keep, x, xp.zeros_like(x))


register_op("MatrixBandPart", shape=same_shape, kernel=_band_part_kernel,
            grad=lambda op, g: [matrix_band_part(g, op.inputs[1], op.inputs[2]), None, None])


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """The band of each innermost matrix of ``input``: ``num_lower`` diagonals below the main one
    and ``num_upper`` above it are kept (a negative count keeps the whole triangle), the rest is
    zero. ``tf.matrix_band_part(x, 0, -1)`` is the upper triangle, ``(x, 0, 0)`` the diagonal."""
    return make_op("MatrixBandPart", [convert_to_tensor(input),
                                      _int_tensor(num_lower, "matrix_band_part's num_lower"),
                                      _int_tensor(num_upper, "matrix_band_part's num_upper")],
                   name=name or "MatrixBandPart")


def _matrix_diag_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims == 0:
        raise ValueError("matrix_diag needs a diagonal of rank at least 1, got a scalar (op '%s')"
                         % op.name)
    return unknown_shape() if s.ndims is None else TensorShape(s.as_list() + s.as_list()[-1:])


def _matrix_diag_kernel(ctx, diagonal):
    n = diagonal.shape[-1]
    out = ctx.xp.zeros(diagonal.shape + (n,), dtype=diagonal.dtype)
    i = ctx.xp.arange(n)
    out[..., i, i] = diagonal
    return out


register_op("MatrixDiag", shape=_matrix_diag_shape, kernel=_matrix_diag_kernel,
            grad=lambda op, g: [matrix_diag_part(g)])


def matrix_diag(diagonal, name=None):
    """Square matrices with ``diagonal``'s innermost vectors on their diagonals, zeros elsewhere:
    shape ``[..., N]`` gives ``[..., N, N]``."""
    return make_op("MatrixDiag", [convert_to_tensor(diagonal)], name=name or "MatrixDiag")


def _matrix_diag_part_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims is None:
        return unknown_shape()
    if s.ndims < 2:
        raise ValueError("matrix_diag_part needs an input of rank at least 2, got shape %s (op "
                         "'%s')" % (s, op.name))
    m, n = s.as_list()[-2:]
    k = 0 if 0 in (m, n) else None if None in (m, n) else min(m, n)
    return TensorShape(s.as_list()[:-2] + [k])


def _matrix_diag_part_grad(op, g):
    # The diagonal's gradient on a [..., k, k] diagonal, padded with zeros to [..., M, N].
    dims = shape(op.inputs[0])
    k = shape(g)[-1]
    lead = zeros(stack([rank(op.inputs[0]) - 2, 2]), dtype=_dtypes.int32)
    paddings = concat([lead, [[0, dims[-2] - k], [0, dims[-1] - k]]], 0)
    grad = pad(matrix_diag(g), paddings)
    grad.set_shape(op.inputs[0].get_shape())
    return [grad]


register_op("MatrixDiagPart", shape=_matrix_diag_part_shape,
            kernel=lambda ctx, x: ctx.xp.diagonal(x, axis1=-2, axis2=-1).copy(),
            grad=_matrix_diag_part_grad)


def matrix_diag_part(input, name=None):  # noqa: A002
    """The main diagonals of ``input``'s innermost matrices: shape ``[..., M, N]`` gives
    ``[..., min(M, N)]``."""
    return make_op("MatrixDiagPart", [convert_to_tensor(input)], name=name or "MatrixDiagPart")


def diag(diagonal, name=None):
    """The rank-2k tensor with ``diagonal`` (rank k) on its diagonal:
    ``out[i1..ik, i1..ik] = diagonal[i1..ik]``, zeros elsewhere."""
    d = convert_to_tensor(diagonal)
    if d.get_shape().ndims == 0:
        raise ValueError("diag needs a diagonal of rank at least 1, got a scalar (%s)" % d.name)
    dims = shape(d)
    return reshape(matrix_diag(reshape(d, [-1])), concat([dims, dims], 0), name=name or "Diag")


def diag_part(input, name=None):  # noqa: A002
    """The diagonal of a rank-2k tensor of shape ``s + s``, as ``diag`` builds it (shape ``s``)."""
    x = convert_to_tensor(input)
    s = x.get_shape()
    if s.ndims is None or s.ndims % 2 or not s.ndims:
        raise ValueError("diag_part needs an input of even and non-zero rank known when the graph "
                         "is built, got shape %s (%s)" % (s, x.name))
    k = s.ndims // 2
    try:
        half = s[:k].merge_with(s[k:])
    except ValueError:
        raise ValueError("diag_part needs an input of shape s + s, got %s (%s)" % (s, x.name)) from None
    from zps.ops import math_ops  # math_ops imports this module
    dims = shape(x)[:k]
    n = math_ops.reduce_prod(dims)
    out = reshape(matrix_diag_part(reshape(x, stack([n, n]))), dims, name=name or "DiagPart")
    out.set_shape(half)
    return out


# -- meshgrid ------------------------------------------------------------------------------------
def meshgrid(*args, indexing="xy", name="meshgrid"):
    """N-D coordinate grids from N vectors, each broadcast along the others' dimensions;
    ``indexing='xy'`` (Cartesian, the default) swaps the first two dimensions of the output
    against ``'ij'`` (matrix): ``tf.meshgrid([1, 2, 3], [4, 5])`` gives two [2, 3] grids."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Argument `indexing` parameter must be either 'xy' or 'ij', got '%s'"
                         % (indexing,))
    xs = [convert_to_tensor(x) for x in args]
    if len({x.dtype.base_dtype for x in xs}) > 1:
        raise TypeError("meshgrid arguments must have one dtype, got %s"
                        % ", ".join(x.dtype.name for x in xs))
    ndim = len(xs)
    axes = list(builtins.range(ndim))
    if indexing == "xy" and ndim > 1:
        axes[0], axes[1] = 1, 0
    vectors = [reshape(x, [-1 if d == a else 1 for d in builtins.range(ndim)])
               for x, a in zip(xs, axes)]
    dims = [None] * ndim
    for x, a in zip(xs, axes):
        dims[a] = size(x)
    return [broadcast_to(v, dims, name=name) for v in vectors]


# -- ReverseSequence -----------------------------------------------------------------------------
def _reverse_sequence_shape(op):
    x, lengths = op.inputs[0].get_shape(), op.inputs[1].get_shape().with_rank(1)
    seq, batch = op._attrs["seq_dim"], op._attrs["batch_dim"]
    if x.ndims is None:
        return x
    if seq == batch or not (0 <= seq < x.ndims and 0 <= batch < x.ndims):
        raise ValueError("reverse_sequence needs distinct seq_axis and batch_axis in [0, %d), got "
                         "%d and %d (op '%s', input shape %s)" % (x.ndims, seq, batch, op.name, x))
    if not x[batch].is_compatible_with(lengths[0]):
        raise ValueError("Length of seq_lengths != input.dims(%d), (%s vs. %s) (op '%s')"
                         % (batch, lengths[0], x[batch], op.name))
    return x


def _reverse_sequence_kernel(ctx, x, lengths, seq_dim, batch_dim):
    xp = ctx.xp
    if lengths.shape != (x.shape[batch_dim],):
        raise _bad_input("Length of seq_lengths != input.dims(%d), (%d vs. %d)", batch_dim,
                         lengths.shape[0] if lengths.ndim else 1, x.shape[batch_dim])
    n = x.shape[seq_dim]
    bad = (lengths < 0) | (lengths > n)
    if bad.any():
        i = int(xp.argmax(bad))
        raise _bad_input("seq_lens(%d) > input.dims(%d) or < 0: seq_lens(%d) = %d, input.dims(%d) "
                         "= %d", i, seq_dim, i, int(lengths[i]), seq_dim, n)
    # Source position along the sequence axis of each (batch, step): reversed within the length.
    steps = xp.arange(n)
    per_batch = lengths.reshape(-1, 1).astype(np.int64)
    source = xp.where(steps < per_batch, per_batch - 1 - steps, steps)    # [batch, n]
    if batch_dim > seq_dim:
        source = source.T
    shape = [1] * x.ndim
    shape[batch_dim], shape[seq_dim] = x.shape[batch_dim], n
    return xp.take_along_axis(x, source.reshape(shape), axis=seq_dim)


register_op("ReverseSequence", shape=_reverse_sequence_shape, kernel=_reverse_sequence_kernel,
            grad=lambda op, g: [reverse_sequence(g, op.inputs[1], op._attrs["seq_dim"],
                                                 op._attrs["batch_dim"]), None])


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """Reverses the first ``seq_lengths[b]`` steps along ``seq_axis`` of each slice ``b`` along
    ``batch_axis`` (default 0); the steps past each length are kept as they are.

    Example: ``tf.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], seq_axis=1)`` is
    ``[[2, 1, 3], [6, 5, 4]]``.
    """
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq_axis is None:
        raise ValueError("reverse_sequence needs seq_axis")
    x = convert_to_tensor(input)
    lengths = _int_tensor(seq_lengths, "reverse_sequence's seq_lengths")
    rank = x.get_shape().ndims
    seq_axis, batch_axis = int(seq_axis), int(batch_axis)
    if rank is not None:
        seq_axis, batch_axis = (a % rank if -rank <= a < rank else a for a in (seq_axis, batch_axis))
    return make_op("ReverseSequence", [x, lengths], name=name or "ReverseSequence",
                   seq_dim=seq_axis, batch_dim=batch_axis)


# -- ListDiff (setdiff1d), unique_with_counts ----------------------------------------------------
def _list_diff_kernel(ctx, x, y, out_idx):
    xp = ctx.xp
    for what, v in (("x", x), ("y", y)):
        if v.ndim != 1:
            raise _bad_input("%s should be a 1D vector, got shape %s", what, list(v.shape))
    keep = ~xp.isin(x, y)
    return [x[keep], xp.nonzero(keep)[0].astype(out_idx.as_numpy_dtype)]


register_op("ListDiff", shape=lambda op: [unknown_shape(1), unknown_shape(1)],
            dtype=lambda op: [op.inputs[0].dtype, op._attrs["out_idx"]], kernel=_list_diff_kernel,
            num_outputs=2)   # no gradient rule, as in TF1


ListDiff = collections.namedtuple("ListDiff", ["out", "idx"])


def setdiff1d(x, y, index_dtype=_dtypes.int32, name=None):
    """``(out, idx)``, a ListDiff named tuple: the entries of the vector ``x`` that are not in
    ``y``, in their order in ``x``, and their positions in ``x``: ``x[idx] = out``.

    Example: ``tf.setdiff1d([1, 2, 3, 4], [2, 4]).out`` evaluates to ``[1, 3]``, ``.idx`` to
    ``[0, 2]``.
    """
    x, y = to_tensors(x, y)
    if x.dtype != y.dtype:
        raise TypeError("setdiff1d: x and y must have one dtype, got %s and %s"
                        % (x.dtype.name, y.dtype.name))
    index_dtype = _dtypes.as_dtype(index_dtype)
    if index_dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("setdiff1d's index_dtype must be int32 or int64, got %s" % index_dtype.name)
    return ListDiff(*make_op("ListDiff", [x, y], name=name or "ListDiff", out_idx=index_dtype))


# -- InvertPermutation ---------------------------------------------------------------------------
def _invert_permutation_kernel(ctx, x):
    xp, n = ctx.xp, x.shape[0]
    valid = bool(((x >= 0) & (x < n)).all()) and bool((xp.bincount(x, minlength=n) == 1).all())
    if not valid:   # name the first bad entry, as TF's scan does
        seen = set()
        for d in x.tolist():
            if not 0 <= d < n:
                raise _bad_input("%d is not between 0 and %d", d, n)
            if d in seen:
                raise _bad_input("%d is duplicated in the input.", d)
            seen.add(d)
    out = xp.empty(n, dtype=x.dtype)
    out[x] = xp.arange(n, dtype=x.dtype)
    return out


def _invert_permutation_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims not in (None, 1):
        raise ValueError("Shape must be rank 1 but is rank %d for '%s' (op: InvertPermutation) "
                         "with input shape %s." % (s.ndims, op.name, s))
    return s if s.ndims is not None else unknown_shape(1)


register_op("InvertPermutation", shape=_invert_permutation_shape,
            kernel=_invert_permutation_kernel, grad=None)


def invert_permutation(x, name=None):
    """The inverse of the permutation ``x`` (int32 or int64 vector): ``y[x[i]] = i``; a value
    repeated or outside ``[0, len(x))`` fails when the op runs (InvalidArgumentError).

    Example: ``tf.invert_permutation([3, 4, 0, 2, 1])`` evaluates to ``[2, 4, 3, 0, 1]``.
    """
    x = convert_to_tensor(x, name="x")
    if x.dtype.base_dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("Value passed to parameter 'x' of InvertPermutation has DataType %s not "
                        "in list of allowed values: int32, int64 (%s)" % (x.dtype.name, x.name))
    return make_op("InvertPermutation", [x], name=name or "InvertPermutation")


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    """``(y, idx, count)``: ``tf.unique``'s values in order of first occurrence and indices
    (``x = y[idx]``), and how often each value of ``y`` occurs in ``x``."""
    from zps.ops import partition_ops  # partition_ops imports this module
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "UniqueWithCounts"):
        y, idx = partition_ops.unique(x, out_idx=out_idx)
        count = unsorted_segment_sum(ones_like(idx), idx, size(y, out_type=idx.dtype))
    return y, idx, count


__all__ = [
    "placeholder",
    "placeholder_with_default",
    "identity",
    "stop_gradient",
    "shape",
    "shape_n",
    "size",
    "rank",
    "reshape",
    "fill",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "broadcast_to",
    "transpose",
    "expand_dims",
    "squeeze",
    "tile",
    "pad",
    "slice",
    "strided_slice",
    "newaxis",
    "reverse",
    "reverse_v2",
    "concat",
    "split",
    "stack",
    "unstack",
    "one_hot",
    "where",
    "range",
    "gather",
    "gather_nd",
    "scatter_nd",
    "boolean_mask",
    "unsorted_segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_min",
    "unsorted_segment_mean",
    "unsorted_segment_sqrt_n",
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "sequence_mask",
    "matrix_band_part",
    "matrix_diag",
    "matrix_diag_part",
    "diag",
    "diag_part",
    "meshgrid",
    "lin_space",
    "linspace",
    "constant",
    "reverse_sequence",
    "setdiff1d",
    "invert_permutation",
    "unique_with_counts",
]
