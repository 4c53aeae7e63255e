"""More of TF 1.15's array ops: moving blocks between space, depth and batch (depth_to_space,
space_to_batch_nd ...), roll, repeat, searchsorted, unravel_index, sparse_to_dense, the
tensor_scatter_nd_* family, identity_n, ensure_shape, where_v2, broadcast shapes, products over
segments, batch_gather, histogram bins and bitcast.

Each op is one block: registration (shape rule, kernel, gradient rule) next to its wrapper.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.reshape(tf.range(8), [1, 1, 2, 4])
...     print(tf.Session().run(tf.depth_to_space(x, 2))[0, :, :, 0].tolist())
[[0, 1, 4, 5], [2, 3, 6, 7]]
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant, constant_value
from zps.framework.graph import Tensor, convert_to_tensor, is_symbolic
from zps.framework.registry import GENERIC, register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import array_ops, math_ops, sparse_ops
from zps.ops.array_ops import (  # the segment and index helpers these ops share
    _gather_drop_negatives,
    _nd_offsets,
    _sorted_segment_op,
    _sorted_segment_shape,
    _sorted_segments,
    _unsorted_segment_op,
    _unsorted_segment_shape,
    _unsorted_segments,
)
from zps.ops.custom_gradient import identity_n  # noqa: F401 - tf.identity_n, exported here
from zps.ops.op_util import broadcast_static, make_op, same_shape, to_tensors


def _bad_input(msg, *args):
    return errors.InvalidArgumentError(None, None, msg % args)


def _const_ints(t):
    """The value of an integer tensor as a list (or int) when known statically, else None."""
    value = constant_value(t)
    return None if value is None else np.asarray(value).astype(np.int64).tolist()


# -- DepthToSpace, SpaceToDepth ------------------------------------------------------------------
def _nhwc(data_format, x):
    """x as NHWC (a transposed view for NCHW) and the function taking a NHWC result back."""
    if data_format == "NHWC":
        return x, lambda y: y
    return x.transpose(0, 2, 3, 1), lambda y: y.transpose(0, 3, 1, 2)


def _depth_to_space_kernel(ctx, x, block_size, data_format):
    x, back = _nhwc(data_format, x)
    b, h, w, c = x.shape
    bs = block_size
    if c % (bs * bs):
        raise _bad_input("Input depth dimension %d should be divisible by: %d", c, bs * bs)
    y = x.reshape(b, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return back(y.reshape(b, h * bs, w * bs, c // (bs * bs))).copy()


def _space_to_depth_kernel(ctx, x, block_size, data_format):
    x, back = _nhwc(data_format, x)
    b, h, w, c = x.shape
    bs = block_size
    if h % bs or w % bs:
        raise _bad_input("Image width %d and height %d should be divisible by block_size: %d",
                         w, h, bs)
    y = x.reshape(b, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return back(y.reshape(b, h // bs, w // bs, bs * bs * c)).copy()


def _block_shape_rule(to_space):
    def rule(op):
        s = op.inputs[0].get_shape()
        if s.ndims is None:
            return unknown_shape(4)
        if s.ndims != 4:
            raise ValueError("Shape must be rank 4 but is rank %d for '%s' (op: '%s') with input "
                             "shapes: %s." % (s.ndims, op.name, op.type, s))
        dims = s.as_list()
        nchw = op._attrs["data_format"] == "NCHW"
        c_at, hw = (1, (2, 3)) if nchw else (3, (1, 2))
        bs, area = op._attrs["block_size"], op._attrs["block_size"] ** 2
        c = dims[c_at]
        if to_space:
            if c is not None and c % area:
                raise ValueError("Dimension size must be evenly divisible by %d but is %d for "
                                 "'%s' (op: 'DepthToSpace')" % (area, c, op.name))
            dims[c_at] = None if c is None else c // area
            for i in hw:
                dims[i] = None if dims[i] is None else dims[i] * bs
        else:
            for i in hw:
                if dims[i] is not None and dims[i] % bs:
                    raise ValueError("Dimension size must be evenly divisible by %d but is %d for "
                                     "'%s' (op: 'SpaceToDepth')" % (bs, dims[i], op.name))
                dims[i] = None if dims[i] is None else dims[i] // bs
            dims[c_at] = None if c is None else c * area
        return TensorShape(dims)
    return rule


register_op("DepthToSpace", shape=_block_shape_rule(True), kernel=_depth_to_space_kernel,
            grad=lambda op, g: [space_to_depth(g, op._attrs["block_size"],
                                               data_format=op._attrs["data_format"])])
register_op("SpaceToDepth", shape=_block_shape_rule(False), kernel=_space_to_depth_kernel,
            grad=lambda op, g: [depth_to_space(g, op._attrs["block_size"],
                                               data_format=op._attrs["data_format"])])


def _block_op(op_type, x, block_size, name, data_format):
    x = convert_to_tensor(x)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("%s supports data_format NHWC and NCHW, got %r" % (op_type, data_format))
    block_size = int(block_size)
    if block_size < 2:
        raise ValueError("Value for attr 'block_size' of %d must be at least minimum 2"
                         % block_size)
    return make_op(op_type, [x], name=name or op_type, block_size=block_size,
                   data_format=data_format)


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves depth into ``block_size x block_size`` spatial blocks: [b, h, w, c] becomes
    [b, h*bs, w*bs, c/bs^2] (NHWC; NCHW also).

    Example: ``tf.depth_to_space(tf.reshape(tf.range(4), [1, 1, 1, 4]), 2)`` has shape
    ``[1, 2, 2, 1]`` and values ``[[0, 1], [2, 3]]``.
    """
    return _block_op("DepthToSpace", input, block_size, name, data_format)


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """The inverse of ``depth_to_space``: [b, h, w, c] becomes [b, h/bs, w/bs, c*bs^2]."""
    return _block_op("SpaceToDepth", input, block_size, name, data_format)


# -- SpaceToBatchND, BatchToSpaceND ---------------------------------------------------------------
def _space_to_batch_kernel(ctx, x, block_shape, paddings):
    bs, pads = [int(b) for b in block_shape], np.asarray(paddings, np.int64).reshape(-1, 2)
    m = len(bs)
    if x.ndim < m + 1 or pads.shape[0] != m or min(bs, default=1) < 1 or (pads < 0).any():
        raise _bad_input("space_to_batch_nd needs input rank > len(block_shape) = %d, block_shape "
                         ">= 1 and paddings [%d, 2] >= 0: input shape %s, block_shape %s, "
                         "paddings %s", m, m, list(x.shape), bs, pads.tolist())
    widths = [(0, 0)] + [tuple(p) for p in pads.tolist()] + [(0, 0)] * (x.ndim - m - 1)
    padded = ctx.xp.pad(x, widths)
    spatial = padded.shape[1:m + 1]
    for i, (d, b) in enumerate(zip(spatial, bs)):
        if d % b:
            raise _bad_input("padded_shape[%d]=%d is not divisible by block_shape[%d]=%d",
                             i, d, i, b)
    rest = padded.shape[m + 1:]
    shape = [padded.shape[0]]
    for d, b in zip(spatial, bs):
        shape += [d // b, b]
    y = padded.reshape(shape + list(rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, y.ndim))
    out_shape = [padded.shape[0] * int(np.prod(bs))] + [d // b for d, b in zip(spatial, bs)]
    return y.transpose(perm).reshape(out_shape + list(rest))


def _batch_to_space_kernel(ctx, x, block_shape, crops):
    bs, crops = [int(b) for b in block_shape], np.asarray(crops, np.int64).reshape(-1, 2)
    m = len(bs)
    n = int(np.prod(bs))
    if x.ndim < m + 1 or crops.shape[0] != m or min(bs, default=1) < 1 or (crops < 0).any() \
            or x.shape[0] % n:
        raise _bad_input("batch_to_space_nd needs input rank > len(block_shape) = %d, the batch "
                         "divisible by prod(block_shape), crops [%d, 2] >= 0: input shape %s, "
                         "block_shape %s, crops %s", m, m, list(x.shape), bs, crops.tolist())
    spatial, rest = x.shape[1:m + 1], x.shape[m + 1:]
    y = x.reshape(bs + [x.shape[0] // n] + list(spatial) + list(rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, y.ndim))
    full = [d * b for d, b in zip(spatial, bs)]
    y = y.transpose(perm).reshape([x.shape[0] // n] + full + list(rest))
    for i, (lo, hi) in enumerate(crops.tolist()):
        if lo + hi > full[i]:
            raise _bad_input("crops must be less than the block-expanded size: crops[%d] = "
                             "[%d, %d], size %d", i, lo, hi, full[i])
    index = (slice(None),) + tuple(slice(lo, d - hi) for (lo, hi), d in zip(crops.tolist(), full))
    return y[index].copy()


def _space_batch_shape(to_batch):
    def rule(op):
        s = op.inputs[0].get_shape()
        bs, pads = _const_ints(op.inputs[1]), _const_ints(op.inputs[2])
        if s.ndims is None or bs is None or pads is None:
            return unknown_shape() if s.ndims is None else unknown_shape(s.ndims)
        dims, m, n = s.as_list(), len(bs), int(np.prod(bs))
        if to_batch:
            dims[0] = None if dims[0] is None else dims[0] * n
            for i in range(m):
                d = dims[1 + i]
                padded = None if d is None else d + pads[i][0] + pads[i][1]
                if padded is not None and padded % bs[i]:
                    raise ValueError("padded_shape[%d]=%d is not divisible by block_shape[%d]=%d "
                                     "(op '%s')" % (i, padded, i, bs[i], op.name))
                dims[1 + i] = None if padded is None else padded // bs[i]
        else:
            if dims[0] is not None and dims[0] % n:
                raise ValueError("The batch %d of batch_to_space_nd is not divisible by "
                                 "prod(block_shape) = %d (op '%s')" % (dims[0], n, op.name))
            dims[0] = None if dims[0] is None else dims[0] // n
            for i in range(m):
                d = dims[1 + i]
                dims[1 + i] = None if d is None else d * bs[i] - pads[i][0] - pads[i][1]
        return TensorShape(dims)
    return rule


register_op("SpaceToBatchND", shape=_space_batch_shape(True), kernel=_space_to_batch_kernel,
            grad=lambda op, g: [batch_to_space_nd(g, op.inputs[1], op.inputs[2]), None, None])
register_op("BatchToSpaceND", shape=_space_batch_shape(False),
            kernel=_batch_to_space_kernel,
            grad=lambda op, g: [space_to_batch_nd(g, op.inputs[1], op.inputs[2]), None, None])


def _space_batch_op(op_type, x, block_shape, pads, name):
    x = convert_to_tensor(x)
    block_shape = array_ops._int_tensor(block_shape, "%s's block_shape" % op_type)
    pads = array_ops._int_tensor(pads, "%s's paddings/crops" % op_type)
    return make_op(op_type, [x, block_shape, pads], name=name or op_type)


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Zero-pads the M spatial dimensions after the batch by ``paddings`` ([M, 2]), cuts them
    into ``block_shape`` blocks and moves the block offsets into the batch: [b, h, w, c] with
    block [2, 2] becomes [4b, h/2, w/2, c]."""
    return _space_batch_op("SpaceToBatchND", input, block_shape, paddings, name)


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of ``space_to_batch_nd``: batch blocks back into space, then ``crops``
    ([M, 2]) cut off."""
    return _space_batch_op("BatchToSpaceND", input, block_shape, crops, name)


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """TF1's 2-D ``space_to_batch``: ``space_to_batch_nd`` with ``block_shape=[bs, bs]`` on a
    4-D NHWC input."""
    bs = block_size if block_size is not None else block_shape
    return space_to_batch_nd(input, [int(bs), int(bs)], paddings, name=name or "SpaceToBatchND")


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002
    """TF1's 2-D ``batch_to_space``: ``batch_to_space_nd`` with ``block_shape=[bs, bs]``."""
    bs = block_size if block_size is not None else block_shape
    return batch_to_space_nd(input, [int(bs), int(bs)], crops, name=name or "BatchToSpaceND")


# -- Roll ----------------------------------------------------------------------------------------
def _roll_kernel(ctx, x, shift, axis):
    shift, axis = np.asarray(shift).reshape(-1), np.asarray(axis).reshape(-1)
    if shift.shape != axis.shape:
        raise _bad_input("shift and axis must have the same size, got %d and %d",
                         shift.size, axis.size)
    for a in axis.tolist():
        if not -x.ndim <= a < x.ndim:
            raise _bad_input("axis %d is out of range for a rank-%d input", a, x.ndim)
    return ctx.xp.roll(x, tuple(shift.tolist()), tuple(axis.tolist()))


register_op("Roll", shape=same_shape, kernel=_roll_kernel,
            grad=lambda op, g: [roll(g, -op.inputs[1], op.inputs[2]), None, None])


def roll(input, shift, axis, name=None):  # noqa: A002
    """The elements of ``input`` shifted by ``shift`` along ``axis`` (scalars or equal-length
    vectors), wrapping around: ``tf.roll([0, 1, 2, 3, 4], 2, 0)`` is ``[3, 4, 0, 1, 2]``."""
    x = convert_to_tensor(input)
    shift, axis = (array_ops._int_tensor(v, "roll's %s" % w) for v, w in ((shift, "shift"),
                                                                            (axis, "axis")))
    return make_op("Roll", [x, shift, axis], name=name or "Roll")


# -- repeat (gather of repeated indices) ---------------------------------------------------------
def _repeat_indices_kernel(ctx, repeats, n):
    repeats = np.broadcast_to(repeats, (int(n),)) if repeats.ndim == 0 or repeats.size == 1 \
        else repeats
    if repeats.shape != (int(n),):
        raise _bad_input("repeats must be a scalar or have the length %d of the axis, got shape %s",
                         int(n), list(repeats.shape))
    if (repeats < 0).any():
        raise _bad_input("repeats must be >= 0, got %s", repeats.tolist())
    return np.repeat(np.arange(int(n), dtype=np.int64), repeats.astype(np.int64))


register_op("RepeatIndices", dtype=lambda op: _dtypes.int64, shape=lambda op: unknown_shape(1),
            kernels={"numpy": _repeat_indices_kernel}, grad=None)


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """The elements of ``input`` repeated along ``axis`` (flattened first when None), each
    ``repeats`` times (a scalar, or one count per element): ``tf.repeat([1, 2], [2, 3], 0)``
    is ``[1, 1, 2, 2, 2]``."""
    x = convert_to_tensor(input)
    with x.graph.name_scope(name or "Repeat") as scope:
        if axis is None:
            x, axis = array_ops.reshape(x, [-1]), 0
        axis = int(axis)
        ndims = x.get_shape().ndims
        if ndims is not None and not -ndims <= axis < ndims:
            raise ValueError("axis %d is out of range for repeat of a rank-%d tensor"
                             % (axis, ndims))
        n = array_ops.shape(x, out_type=_dtypes.int64)[axis]
        repeats = math_ops.cast(convert_to_tensor(repeats), _dtypes.int64)
        index = make_op("RepeatIndices", [repeats, n], name="RepeatIndices")
        out = array_ops.gather(x, index, axis=axis, name=scope)
        counts, size = constant_value(repeats), x.get_shape()[axis].value if ndims else None
        if counts is not None and np.size(counts) == 1 and size is not None:
            # One count for all: the length is known (TF's tile path; per-element counts: None).
            dims = out.get_shape().as_list()
            dims[axis] = int(np.asarray(counts).reshape(-1)[0]) * size
            out.set_shape(dims)
        return out


# -- searchsorted (LowerBound, UpperBound) -------------------------------------------------------
def _bound_kernel(side):
    def kernel(ctx, sorted_inputs, values, out_type):
        if sorted_inputs.shape[:-1] != values.shape[:-1]:
            raise _bad_input("Leading dim_size of both tensors must match: sorted_sequence %s, "
                             "values %s", list(sorted_inputs.shape), list(values.shape))
        rows = sorted_inputs.reshape(-1, sorted_inputs.shape[-1])
        vals = values.reshape(-1, values.shape[-1])
        out = np.empty(vals.shape, out_type.as_numpy_dtype)
        for i in range(rows.shape[0]):
            out[i] = np.searchsorted(rows[i], vals[i], side=side)
        return out.reshape(values.shape)
    return {"numpy": kernel}


for _op_type, _side in (("LowerBound", "left"), ("UpperBound", "right")):
    register_op(_op_type, dtype=lambda op: op._attrs["out_type"],
                shape=lambda op: op.inputs[1].get_shape(), kernels=_bound_kernel(_side), grad=None)


def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    """Where ``values`` would be inserted into each innermost row of ``sorted_sequence`` to keep
    it sorted (``side`` "left": before equal entries, "right": after); leading dimensions match:
    ``tf.searchsorted([[1, 3, 5]], [[3, 6]])`` is ``[[1, 3]]``."""
    seq, values = to_tensors(sorted_sequence, values)
    if side not in ("left", "right"):
        raise ValueError("Argument `side` must be either 'right' or 'left'. Received: `side` = "
                         "'%s'." % side)
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("searchsorted's out_type must be int32 or int64, got %s" % out_type.name)
    if seq.dtype != values.dtype:
        raise TypeError("sorted_sequence and values of searchsorted must have the same dtype, "
                        "got %s and %s" % (seq.dtype.name, values.dtype.name))
    for t in (seq, values):
        if t.get_shape().ndims == 0:
            raise ValueError("searchsorted needs tensors of rank >= 1, got the scalar %s" % t.name)
    return make_op("LowerBound" if side == "left" else "UpperBound", [seq, values],
                   name=name or "SearchSorted", out_type=out_type)


# -- UnravelIndex --------------------------------------------------------------------------------
def _unravel_index_kernel(ctx, indices, dims):
    if (dims <= 0).any() if dims.size else False:
        raise _bad_input("All dimensions must be positive, got dims %s", dims.tolist())
    total = int(np.prod(dims))
    bad = (indices < 0) | (indices >= total)
    if bad.any():
        raise _bad_input("index %d is out of bound as with dims %s",
                         int(indices[bad].reshape(-1)[0]), dims.tolist())
    coords = np.unravel_index(indices.astype(np.int64), tuple(int(d) for d in dims))
    return np.stack(coords).astype(indices.dtype)


def _unravel_index_shape(op):
    i, d = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if i.ndims is None:
        return unknown_shape()
    if i.ndims > 1:
        raise ValueError("Shape must be at most rank 1 but is rank %d for '%s' (op: "
                         "'UnravelIndex')" % (i.ndims, op.name))
    n = d[0].value if d.ndims == 1 else None
    return TensorShape([n] + i.as_list())


register_op("UnravelIndex", shape=_unravel_index_shape, kernels={"numpy": _unravel_index_kernel},
            grad=None)


def unravel_index(indices, dims, name=None):
    """The coordinates in an array of shape ``dims`` of the flat ``indices`` (a scalar or a
    vector): shape ``[len(dims)]`` or ``[len(dims), n]``:
    ``tf.unravel_index([2, 5], [2, 3])`` is ``[[0, 1], [2, 2]]``."""
    indices, dims = to_tensors(indices, dims)
    for arg, t in (("indices", indices), ("dims", dims)):
        if t.dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError("Value passed to parameter '%s' of UnravelIndex has DataType %s not "
                            "in list of allowed values: int32, int64" % (arg, t.dtype.name))
    if indices.dtype != dims.dtype:
        raise TypeError("Input 'dims' of 'UnravelIndex' Op has type %s that does not match type "
                        "%s of argument 'indices'." % (dims.dtype.name, indices.dtype.name))
    return make_op("UnravelIndex", [indices, dims], name=name or "UnravelIndex")


# -- sparse_to_dense (sparse_ops' SparseToDense, after its check of the indices' order) ---------
def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """A dense tensor of ``output_shape`` filled with ``default_value``, with ``sparse_values``
    (one per index, or a scalar for all) at ``sparse_indices`` ([N, rank], [N] or a scalar);
    ``validate_indices`` requires the indices sorted and unique (TF1's deprecated op):
    ``tf.sparse_to_dense([1, 3], [5], 7)`` is ``[0, 7, 0, 7, 0]``."""
    indices = convert_to_tensor(sparse_indices)
    if indices.dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("sparse_indices of sparse_to_dense must be int32 or int64, got %s"
                        % indices.dtype.name)
    with indices.graph.name_scope(name or "SparseToDense") as scope:
        # As int64 [N, rank]: the form sparse_ops' SparseToDense (and its gradient) works on.
        indices = math_ops.cast(indices, _dtypes.int64)
        if indices.get_shape().ndims in (0, 1):
            indices = array_ops.reshape(indices, [-1, 1])
        if validate_indices:
            indices = sparse_ops.check_sorted_indices(indices)
        shape = (convert_to_tensor(output_shape, dtype=indices.dtype)
                 if is_symbolic(output_shape) or array_ops._contains_symbolic(output_shape)
                 else constant(array_ops._int_array(output_shape, "output_shape"),
                               dtype=indices.dtype))
        values = convert_to_tensor(sparse_values)
        default = convert_to_tensor(default_value, dtype=values.dtype)
        return make_op("SparseToDense", [indices, shape, values, default], name=scope)


# -- TensorScatterUpdate, TensorScatterAdd, TensorScatterSub, TensorScatterMax, TensorScatterMin --
def _tensor_scatter_kernel(combine):
    def kernel(ctx, tensor, indices, updates):
        depth = indices.shape[-1] if indices.ndim else 0
        dims = tensor.shape
        want = indices.shape[:-1] + dims[depth:]
        if indices.ndim == 0 or depth > len(dims) or updates.shape != want:
            raise _bad_input("Dimensions [0,%d) of indices[shape=%s] = %s must match dimensions "
                             "[0,%d) of updates[shape=%s] and updates.shape must be "
                             "indices.shape[:-1] + tensor.shape[indices.shape[-1]:] = %s",
                             max(indices.ndim - 1, 0), list(indices.shape),
                             list(indices.shape[:-1]), max(indices.ndim - 1, 0),
                             list(updates.shape), list(want))
        offsets = _nd_offsets(ctx, indices, dims, "shape")
        out = tensor.copy().reshape((int(np.prod(dims[:depth])),) + dims[depth:])
        rows = updates.reshape(offsets.shape + dims[depth:])
        combine(ctx.xp, out, offsets, rows)
        return out.reshape(dims)
    return kernel


def _assign_rows(xp, out, at, rows):
    out[at] = rows   # repeated indices: the last update wins, as on TF's CPU kernel (a GPU: any)


def _tensor_scatter_shape(op):
    t, i, u = (x.get_shape() for x in op.inputs)
    if i.ndims is not None and t.ndims is not None and u.ndims is not None \
            and i.ndims and i[-1].value is not None:
        depth = i[-1].value
        want = TensorShape(i.as_list()[:-1] + t.as_list()[depth:]) if depth <= t.ndims else None
        if want is None or not want.is_compatible_with(u):
            raise ValueError("Dimensions of updates must be indices.shape[:-1] + "
                             "tensor.shape[indices.shape[-1]:]: tensor %s, indices %s, updates %s "
                             "(op '%s')" % (t, i, u, op.name))
    return t


def _extreme_scatter_grad(op, g):
    # TF's rule: the gradient goes to where the output equals the input and to the updates that
    # equal their output entries (ties share it: both get it, as TF's _TensorScatterMinOrMaxGrad
    # splits it by the count of equal values).
    tensor, indices, updates = op.inputs
    out = op.outputs[0]
    x_hit = math_ops.cast(math_ops.equal(tensor, out), g.dtype)
    gathered = array_ops.gather_nd(out, indices)
    u_hit = math_ops.cast(math_ops.equal(updates, gathered), g.dtype)
    count = tensor_scatter_nd_add(x_hit, indices, u_hit)
    share = g / count
    return [share * x_hit, None, array_ops.gather_nd(share, indices) * u_hit]


_TENSOR_SCATTER = {
    "TensorScatterUpdate": (_assign_rows, lambda op, g: [
        tensor_scatter_nd_update(g, op.inputs[1], array_ops.zeros_like(op.inputs[2])), None,
        array_ops.gather_nd(g, op.inputs[1])]),
    "TensorScatterAdd": (lambda xp, out, at, rows: xp.add.at(out, at, rows), lambda op, g: [
        g, None, array_ops.gather_nd(g, op.inputs[1])]),
    # out + -rows is out - rows to the bit; cupy has add.at only (cupy_kernels._ArrayModule)
    "TensorScatterSub": (lambda xp, out, at, rows: xp.add.at(out, at, -rows), lambda op, g: [
        g, None, -array_ops.gather_nd(g, op.inputs[1])]),
    # numpy kernels (cupy has no maximum.at): on a GPU they run on the host (cupy_kernels)
    "TensorScatterMax": (lambda xp, out, at, rows: np.maximum.at(out, at, rows),
                         _extreme_scatter_grad),
    "TensorScatterMin": (lambda xp, out, at, rows: np.minimum.at(out, at, rows),
                         _extreme_scatter_grad),
}
for _op_type, (_combine, _grad) in _TENSOR_SCATTER.items():
    register_op(_op_type, shape=_tensor_scatter_shape, grad=_grad, kernels={
        "numpy" if _op_type in ("TensorScatterMax", "TensorScatterMin") else GENERIC:
        _tensor_scatter_kernel(_combine)})


def _tensor_scatter(op_type, tensor, indices, updates, name):
    tensor = convert_to_tensor(tensor)
    indices = convert_to_tensor(indices)
    if indices.dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("Value passed to parameter 'indices' of %s has DataType %s not in list "
                        "of allowed values: int32, int64" % (op_type, indices.dtype.name))
    updates = convert_to_tensor(updates, dtype=tensor.dtype)
    return make_op(op_type, [tensor, indices, updates], name=name or op_type)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with ``updates`` written at the index tuples along the last dimension
    of ``indices``: ``tf.tensor_scatter_nd_update([1, 2, 3], [[1]], [9])`` is ``[1, 9, 3]``."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with ``updates`` added at ``indices`` (duplicates add up)."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with ``updates`` subtracted at ``indices``."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with the elementwise max of its entries and ``updates`` at ``indices``."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with the elementwise min of its entries and ``updates`` at ``indices``."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


# -- EnsureShape, is_tensor, get_static_value ---------------------------------------------------
def _ensure_shape_kernel(ctx, x, shape):
    if not as_shape(shape).is_compatible_with(x.shape):
        raise _bad_input("Shape of tensor %s %s is not compatible with expected shape %s.",
                         "input", list(x.shape), as_shape(shape))
    return x


register_op("EnsureShape", shape=lambda op: op.inputs[0].get_shape().merge_with(
    as_shape(op._attrs["shape"])), kernel=_ensure_shape_kernel, grad=lambda op, g: [g])


def ensure_shape(x, shape, name=None):
    """``x``, checked when it runs to have a shape compatible with ``shape`` (None entries match
    anything); its static shape becomes the merge of both: ``tf.ensure_shape(p, [None, 3])``."""
    x = convert_to_tensor(x)
    shape = as_shape(shape)
    if not x.get_shape().is_compatible_with(shape):
        raise ValueError("Shape %s must be compatible with the expected shape %s of ensure_shape "
                         "(%s)" % (x.get_shape(), shape, x.name))
    attr = None if shape.ndims is None else tuple(d.value for d in shape)
    return make_op("EnsureShape", [x], name=name or "EnsureShape", shape=attr)


def is_tensor(x):
    """True for a graph tensor, SparseTensor, IndexedSlices or Variable (TF1's tf.is_tensor)."""
    return isinstance(x, Tensor) or hasattr(x, "_as_graph_element") or \
        type(x).__name__ in ("SparseTensor", "IndexedSlices")


def get_static_value(tensor, partial=False):
    """The numpy value of ``tensor`` if it is known without running the graph (constants and
    what folds from them), else None: ``tf.get_static_value(tf.constant([1]) + 1)`` is
    ``array([2])``."""
    if not is_tensor(tensor):
        return np.asarray(tensor)
    value = constant_value(tensor)
    return None if value is None else np.asarray(value)


# -- SelectV2 (where_v2), BroadcastArgs ----------------------------------------------------------
def _select_v2_shape(op):
    c, x, y = (t.get_shape() for t in op.inputs)
    try:
        return broadcast_static(broadcast_static(c, x), y)
    except ValueError as e:
        raise ValueError("%s (where_v2, op '%s')" % (e, op.name)) from None


def _select_v2_grad(op, g):
    c = op.inputs[0]
    zeros = array_ops.zeros_like(g)
    return [None, where_v2(c, g, zeros), where_v2(c, zeros, g)]


# broadcast=True: gradients() sums the broadcast-shaped gradients back to x's and y's shapes.
register_op("SelectV2", dtype=lambda op: op.inputs[1].dtype, shape=_select_v2_shape, broadcast=True,
            kernel=lambda ctx, c, x, y: ctx.xp.where(c, x, y), grad=_select_v2_grad)


def where_v2(condition, x=None, y=None, name=None):
    """TF2's where: with one argument the coordinates of the true entries (as ``tf.where``);
    with three the entries of ``x`` where ``condition`` else of ``y``, all three broadcast
    together: ``tf.where_v2([True, False], 1, [5, 6])`` is ``[1, 6]``."""
    if x is None and y is None:
        return array_ops.where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    c = convert_to_tensor(condition)
    if not c.dtype.is_bool:
        raise TypeError("The condition of where_v2 must be bool, got %s (%s)"
                        % (c.dtype.name, c.name))
    x, y = to_tensors(x, y)
    if x.dtype != y.dtype:
        raise TypeError("x and y of where_v2 must have the same dtype, got %s and %s"
                        % (x.dtype.name, y.dtype.name))
    return make_op("SelectV2", [c, x, y], name=name or "SelectV2")


def broadcast_static_shape(shape_x, shape_y):
    """The TensorShape two static shapes broadcast to (ValueError when incompatible)."""
    try:
        return broadcast_static(as_shape(shape_x), as_shape(shape_y))
    except ValueError:
        raise ValueError("Incompatible shapes for broadcasting. Two shapes are compatible if for "
                         "each dimension pair they are either equal or one of them is 1. "
                         "Received: %s and %s." % (as_shape(shape_x), as_shape(shape_y))) from None


def _broadcast_args_kernel(ctx, s0, s1):
    try:
        return np.asarray(np.broadcast_shapes(tuple(s0.tolist()), tuple(s1.tolist())),
                          dtype=s0.dtype)
    except ValueError:
        raise _bad_input("Incompatible shapes: %s vs. %s", s0.tolist(), s1.tolist()) from None


def _broadcast_args_shape(op):
    a, b = (t.get_shape() for t in op.inputs)
    n = [d.value if s.ndims == 1 else None for s in (a, b) for d in (s[:1] or [None])]
    known = [v for v in n if v is not None]
    return TensorShape([max(known) if len(known) == 2 else None])


register_op("BroadcastArgs", shape=_broadcast_args_shape, kernels={"numpy": _broadcast_args_kernel},
            grad=None)


def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape (an int tensor) that two shape tensors broadcast to, computed when it runs."""
    x, y = to_tensors(shape_x, shape_y)
    return make_op("BroadcastArgs", [x, y], name="BroadcastArgs")


# -- SegmentProd, UnsortedSegmentProd ------------------------------------------------------------
def _segment_prod_kernel(ctx, data, ids, num_segments):
    out = np.ones((int(num_segments),) + data.shape[ids.ndim:], dtype=data.dtype)
    keep = ids >= 0
    np.multiply.at(out, ids[keep], data[keep])
    return out


def _segment_prod_grad(op, g):
    # TF's rule (_UnsortedSegmentProdGrad): prod / x where x is not 0; where x is the only zero
    # of its segment, the product of the others; 0 where its segment has more zeros.
    data, ids = op.inputs[0], op.inputs[1]
    n = array_ops.shape(g)[0]
    is_zero = math_ops.equal(data, 0.0 if data.dtype.is_floating else 0)
    zeros = array_ops.unsorted_segment_sum(math_ops.cast(is_zero, _dtypes.int32), ids, n)
    non_zero = array_ops.where(is_zero, array_ops.ones_like(data), data)
    prod_non_zero = unsorted_segment_prod(non_zero, ids, n)
    gathered_prod = _gather_drop_negatives(op.outputs[0], ids)[0]
    gathered_non_zero = _gather_drop_negatives(prod_non_zero, ids)[0]
    gathered_zeros = _gather_drop_negatives(zeros, ids)[0]
    safe = array_ops.where(is_zero, array_ops.ones_like(data), data)
    by_element = array_ops.where(is_zero, gathered_non_zero, gathered_prod / safe)
    by_element = array_ops.where(math_ops.greater(gathered_zeros, 1),
                                 array_ops.zeros_like(by_element), by_element)
    return [_gather_drop_negatives(g, ids)[0] * by_element] + [None] * (len(op.inputs) - 1)


register_op("UnsortedSegmentProd", shape=_unsorted_segment_shape,
            kernels={"numpy": _unsorted_segments(_segment_prod_kernel)}, grad=_segment_prod_grad)
register_op("SegmentProd", shape=_sorted_segment_shape,
            kernels={"numpy": _sorted_segments(_segment_prod_kernel)}, grad=_segment_prod_grad)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """As ``unsorted_segment_sum``, the product instead of the sum (1 for a segment without
    rows): ``tf.unsorted_segment_prod([2, 3, 4], [1, 1, 0], 3)`` is ``[4, 6, 1]``."""
    return _unsorted_segment_op("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def segment_prod(data, segment_ids, name=None):
    """As ``segment_sum``, the product of each segment's rows (1 for a segment without rows)."""
    return _sorted_segment_op("SegmentProd", data, segment_ids, name)


# -- batch_gather, histogram_fixed_width_bins, Bitcast -------------------------------------------
def batch_gather(params, indices, name=None):
    """``gather`` in each batch entry: ``out[b..., i] = params[b..., indices[b..., i]]`` where
    the batch dimensions are all of indices' but its last (TF1's deprecated batch_gather)."""
    params, indices = convert_to_tensor(params), convert_to_tensor(indices)
    with params.graph.name_scope(name or "BatchGather") as scope:
        k = indices.get_shape().ndims
        if k is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        if k == 0:
            raise ValueError("batch_gather needs indices of rank >= 1, got a scalar")
        idx_shape = array_ops.shape(indices, out_type=indices.dtype)
        p_shape = array_ops.shape(params, out_type=indices.dtype)
        batch = math_ops.reduce_prod(idx_shape[:k - 1])
        rows = p_shape[k - 1]
        offsets = array_ops.reshape(array_ops.range(0, batch) * rows,
                                    array_ops.concat([idx_shape[:k - 1],
                                                      array_ops.ones_like(idx_shape[k - 1:])], 0))
        flat = array_ops.reshape(params, array_ops.concat([[-1], p_shape[k:]], 0))
        out = array_ops.gather(flat, indices + offsets)
        return array_ops.identity(out, name=scope)


def _bins_kernel(ctx, values, value_range, nbins, dtype):
    lo, hi = (float(v) for v in value_range)
    n = int(nbins)
    if n <= 0:
        raise _bad_input("nbins should be a positive number, but got '%d'", n)
    if hi <= lo:
        raise _bad_input("value_range should satisfy value_range[0] < value_range[1], but got "
                         "'[%s, %s]'", value_range[0], value_range[1])
    scaled = (values.astype(np.float64) - lo) / (hi - lo)
    return np.clip(np.floor(scaled * n), 0, n - 1).astype(dtype.as_numpy_dtype)


register_op("HistogramFixedWidthBins", dtype=lambda op: op._attrs["dtype"], shape=same_shape,
            kernels={"numpy": _bins_kernel}, grad=None)


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """The bin (in ``[0, nbins)``) of each of ``values`` in ``nbins`` equal bins spanning
    ``value_range`` = [lo, hi]; values below lo fall in bin 0, at or above hi in the last:
    ``tf.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 5.0], [0.0, 5.0], nbins=5)`` is
    ``[0, 0, 1, 4]``."""
    values, value_range = to_tensors(values, value_range)
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("histogram_fixed_width_bins's dtype must be int32 or int64, got %s"
                        % dtype.name)
    if not value_range.get_shape().is_compatible_with([2]):
        raise ValueError("value_range must be a vector of 2 elements [lo, hi], got shape %s (%s)"
                         % (value_range.get_shape(), value_range.name))
    nbins = convert_to_tensor(nbins, dtype=_dtypes.int32)
    return make_op("HistogramFixedWidthBins", [values, value_range, nbins],
                   name=name or "histogram_fixed_width_bins", dtype=dtype)


def _bitcast_shape(op):
    s = op.inputs[0].get_shape()
    src, dst = op.inputs[0].dtype.size, op._attrs["type"].size
    if s.ndims is None or src == dst:
        return s
    if src > dst:
        return TensorShape(s.as_list() + [src // dst])
    if s.ndims == 0 or s[-1].value not in (None, dst // src):
        raise ValueError("Cannot bitcast from %s to %s: the last dimension of shape %s must be %d "
                         "(op '%s')" % (op.inputs[0].dtype.name, op._attrs["type"].name, s,
                                        dst // src, op.name))
    return TensorShape(s.as_list()[:-1])


def _bitcast_kernel(ctx, x, type):  # noqa: A002 - TF1's attr name
    dst = np.dtype(type.as_numpy_dtype)
    y = np.ascontiguousarray(x).view(dst)
    if dst.itemsize < x.dtype.itemsize:
        return y.reshape(x.shape + (x.dtype.itemsize // dst.itemsize,))
    if dst.itemsize > x.dtype.itemsize:
        return y.reshape(x.shape[:-1])
    return y


register_op("Bitcast", dtype=lambda op: op._attrs["type"], shape=_bitcast_shape,
            kernels={"numpy": _bitcast_kernel}, grad=None)


def bitcast(input, type, name=None):  # noqa: A002
    """The bytes of ``input`` read as ``type`` (no copy of the data): a larger source type adds
    a last dimension, a smaller one needs a last dimension of the size ratio, which goes:
    ``tf.bitcast(tf.constant(1.0), tf.int32)`` is ``1065353216``."""
    x = convert_to_tensor(input)
    dtype = _dtypes.as_dtype(type)
    for t in (x.dtype, dtype):
        if t == _dtypes.string or t.is_bool:
            raise TypeError("bitcast takes numeric types, got %s" % t.name)
    return make_op("Bitcast", [x], name=name or "Bitcast", type=dtype)


__all__ = [
    "batch_gather", "batch_to_space", "batch_to_space_nd", "bitcast", "broadcast_dynamic_shape",
    "broadcast_static_shape", "depth_to_space", "ensure_shape", "get_static_value",
    "histogram_fixed_width_bins", "identity_n", "is_tensor", "repeat", "roll", "searchsorted",
    "segment_prod", "space_to_batch", "space_to_batch_nd", "space_to_depth", "sparse_to_dense",
    "tensor_scatter_add", "tensor_scatter_nd_add", "tensor_scatter_nd_max",
    "tensor_scatter_nd_min", "tensor_scatter_nd_sub", "tensor_scatter_nd_update",
    "tensor_scatter_sub", "tensor_scatter_update", "unravel_index", "unsorted_segment_prod",
    "where_v2",
]
