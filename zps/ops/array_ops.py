"""Array ops: placeholders, identity, shapes, reshaping, filling, joining, gathering.

Each op is one block: its registration (dtype/shape rule, kernel, gradient rule) followed by the
public wrapper that builds it.
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant, constant_value, register_constant_folder
from zps.framework.graph import IndexedSlices, Tensor, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops.op_util import make_op, normalize_axis, same_shape


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


register_op("Shape", dtype=lambda op: op._attrs["out_type"], shape=_shape_shape,
            kernel=lambda ctx, x, out_type: np.array(x.shape, dtype=out_type.as_numpy_dtype),
            grad=None)
register_constant_folder("Shape", lambda op: np.array(op.inputs[0].get_shape().as_list(),
                                                      op._attrs["out_type"].as_numpy_dtype)
                         if op.inputs[0].get_shape().is_fully_defined() else None)


def shape(input, name=None, out_type=_dtypes.int32):  # noqa: A002
    """The runtime shape of ``input`` as a 1-D int tensor."""
    return make_op("Shape", [convert_to_tensor(input)], name=name or "Shape",
                   out_type=_dtypes.as_dtype(out_type))


# -- Reshape -------------------------------------------------------------------------------------
def _reshape_shape(op):
    target = constant_value(op.inputs[1])
    if target is None:
        n = op.inputs[1].get_shape()
        return unknown_shape(n.as_list()[0] if n.is_fully_defined() else None)
    target = [int(d) for d in np.asarray(target).reshape(-1)]
    known = op.inputs[0].get_shape().num_elements()
    if -1 in target:
        rest = int(np.prod([d for d in target if d != -1]))
        if known is not None:
            if rest == 0 or known % rest:
                raise ValueError("Cannot reshape a tensor with %d elements to shape %s (op '%s')"
                                 % (known, target, op.name))
            target = [known // rest if d == -1 else d for d in target]
        else:
            target = [None if d == -1 else d for d in target]
    elif known is not None and known != int(np.prod(target)):
        raise ValueError("Cannot reshape a tensor with %d elements to shape %s (%d elements) "
                         "(op '%s')" % (known, target, int(np.prod(target)), op.name))
    return TensorShape(target)


register_op("Reshape", shape=_reshape_shape,
            kernel=lambda ctx, x, shape: x.reshape(shape),
            grad=lambda op, g: [reshape(g, shape(op.inputs[0])), None],
            aliases_input=True)


def reshape(tensor, shape, name=None):  # noqa: F811 - `shape` shadows the op wrapper as in TF1
    """``tensor`` with the same values in a new shape (one dimension may be -1)."""
    t = convert_to_tensor(tensor)
    s = convert_to_tensor(shape, dtype=_dtypes.int32) if not isinstance(shape, Tensor) else shape
    return make_op("Reshape", [t, s], name=name or "Reshape")


# -- Fill, ZerosLike, OnesLike -------------------------------------------------------------------
def shape_from_value(t):
    """The static shape described by the 1-D shape tensor ``t`` (partly unknown if not constant)."""
    dims = constant_value(t)
    if dims is not None:
        return TensorShape([int(d) for d in np.asarray(dims).reshape(-1)])
    n = t.get_shape()
    return unknown_shape(n.as_list()[0] if n.is_fully_defined() and n.ndims == 1 else None)


def _fill_shape(op):
    return shape_from_value(op.inputs[0])


register_op("Fill", dtype=lambda op: op.inputs[1].dtype, shape=_fill_shape,
            kernel=lambda ctx, dims, value: ctx.xp.full(tuple(dims), value, dtype=value.dtype),
            grad=lambda op, g: [None, _reduce_sum_all(g)])


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with the scalar ``value``."""
    return make_op("Fill", [convert_to_tensor(dims, dtype=_dtypes.int32), convert_to_tensor(value)],
                   name=name or "Fill")


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros of the given shape (a list or a 1-D int tensor)."""
    return _filled(shape, 0, dtype, name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones of the given shape (a list or a 1-D int tensor)."""
    return _filled(shape, 1, dtype, name or "ones")


def _filled(shape, value, dtype, name):
    dtype = _dtypes.as_dtype(dtype)
    if not isinstance(shape, Tensor):
        dims = [int(d) for d in (shape.as_list() if isinstance(shape, TensorShape) else
                                 np.asarray(shape).reshape(-1))]
        return constant(np.full(dims, value, dtype=dtype.as_numpy_dtype), name=name)
    return fill(shape, constant(value, dtype=dtype), name=name)


register_op("ZerosLike", shape=same_shape, kernel=lambda ctx, x: ctx.xp.zeros_like(x), grad=None)
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
    from zps.ops.math_ops import cast
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
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(target)
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


register_op("BroadcastTo", shape=lambda op: shape_from_value(op.inputs[1]),
            kernel=lambda ctx, x, s: ctx.xp.broadcast_to(x, tuple(int(d) for d in s)),
            grad=lambda op, g: [make_op("SumToShape", [g, shape(op.inputs[0])]), None])


def broadcast_to(input, shape, name=None):  # noqa: A002, F811
    """``input`` broadcast (numpy rules) to ``shape``."""
    s = shape if isinstance(shape, Tensor) else convert_to_tensor(shape, dtype=_dtypes.int32)
    return make_op("BroadcastTo", [convert_to_tensor(input), s], name=name or "BroadcastTo")


# -- ConcatV2 ------------------------------------------------------------------------------------
def _concat_shape(op):
    axis = int(op._attrs["axis"])
    shapes = [t.get_shape() for t in op.inputs]
    known = [s for s in shapes if s.ndims is not None]
    if not known:
        return unknown_shape()
    rank = known[0].ndims
    a = normalize_axis(axis, rank, "concat")[0]
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


register_op("ConcatV2", shape=_concat_shape, kernel=_concat_kernel, grad=_concat_grad)


def _split_by_sizes_kernel(ctx, g, *shapes, axis):
    sizes = [int(s[axis]) for s in shapes]
    return tuple(ctx.xp.split(g, np.cumsum(sizes)[:-1], axis=axis))


register_op("SplitBySizes", dtype=lambda op: [op.inputs[0].dtype] * (len(op.inputs) - 1),
            shape=lambda op: [unknown_shape()] * (len(op.inputs) - 1),
            kernel=_split_by_sizes_kernel,
            grad=lambda op, *gs: [concat(list(gs), op._attrs["axis"])] + [None] * len(gs))


def concat(values, axis, name="concat"):
    """Join tensors along ``axis``."""
    from zps.ops.op_util import const_axis, to_tensors
    values = to_tensors(*values)
    if len(values) == 1:
        return identity(values[0], name=name)
    return make_op("ConcatV2", values, name=name, axis=int(const_axis(axis)))


# -- densify IndexedSlices (UnsortedSegmentSum) --------------------------------------------------
def _segment_sum_kernel(ctx, values, ids, num_segments):
    xp = ctx.xp
    out = xp.zeros((int(num_segments),) + values.shape[ids.ndim:], dtype=values.dtype)
    xp.add.at(out, ids, values)
    return out


register_op("UnsortedSegmentSum",
            shape=lambda op: unknown_shape(),
            kernel=_segment_sum_kernel,
            grad=lambda op, g: [gather(g, op.inputs[1]), None, None])


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """``out[i] = sum(data[j] for j where segment_ids[j] == i)``."""
    return make_op("UnsortedSegmentSum",
                   [convert_to_tensor(data), convert_to_tensor(segment_ids),
                    convert_to_tensor(num_segments, preferred_dtype=_dtypes.int32)],
                   name=name or "UnsortedSegmentSum")


def densify(value):
    """An IndexedSlices as a dense tensor (other values pass through)."""
    if not isinstance(value, IndexedSlices):
        return value
    if value.dense_shape is None:
        raise ValueError("Cannot densify IndexedSlices %s with unknown dense_shape" % value.name)
    rows = gather(value.dense_shape, 0) if value.dense_shape.get_shape().ndims == 1 else value.dense_shape
    return unsorted_segment_sum(value.values, value.indices, rows)


# -- Gather --------------------------------------------------------------------------------------
def _gather_shape(op):
    p, i = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if p.ndims is None or i.ndims is None:
        return unknown_shape()
    return TensorShape(i.as_list() + p.as_list()[1:])


def _gather_kernel(ctx, params, indices):
    if indices.size and (indices.min() < 0 or indices.max() >= params.shape[0]):
        bad = indices[(indices < 0) | (indices >= params.shape[0])].ravel()[0]
        raise errors.InvalidArgumentError(None, None, "indices contains %d, which is not in "
                                          "[0, %d)" % (bad, params.shape[0]))
    return params.take(indices, axis=0)


def _gather_grad(op, g):
    params, indices = op.inputs
    out_type = _dtypes.int64 if indices.dtype == _dtypes.int64 else _dtypes.int32
    dense_shape = shape(params, out_type=out_type)
    row_shape = make_op("ShapeSuffix", [dense_shape], begin=1)
    values = reshape(g, concat([constant([-1], dtype=out_type), row_shape], 0))
    return [IndexedSlices(values, reshape(indices, [-1]), dense_shape), None]


register_op("Gather", shape=_gather_shape, kernel=_gather_kernel, grad=_gather_grad)
register_op("ShapeSuffix", shape=lambda op: unknown_shape(1),
            kernel=lambda ctx, s, begin: s[begin:], grad=None)


def gather(params, indices, validate_indices=None, name=None, axis=0):
    """Rows ``params[indices]`` (axis 0); its gradient is an IndexedSlices."""
    p = convert_to_tensor(params)
    i = convert_to_tensor(indices)
    if axis not in (0, None):
        raise NotImplementedError("gather supports axis=0 only (got axis=%r); transpose first"
                                  % (axis,))
    if not i.dtype.is_integer:
        raise TypeError("gather indices must be int32 or int64, got %s (%s)" % (i.dtype.name, i.name))
    return make_op("Gather", [p, i], name=name or "Gather")

__all__ = [
    "placeholder",
    "placeholder_with_default",
    "identity",
    "stop_gradient",
    "shape",
    "reshape",
    "fill",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "broadcast_to",
    "concat",
    "gather",
    "unsorted_segment_sum",
    "constant",
]
