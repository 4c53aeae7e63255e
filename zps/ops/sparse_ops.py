"""Sparse tensors and sparse segment reductions: ``tf.SparseTensor``, ``tf.sparse_segment_sum`` ...

A ``SparseTensor`` is three dense tensors: ``indices`` (int64 ``[N, rank]``, row-major sorted),
``values`` (``[N]``) and ``dense_shape`` (int64 ``[rank]``). It is fed and fetched as a
``SparseTensorValue`` (or any 3-tuple), as in TF1. The sparse segment reductions combine rows
``data[indices[j]]`` into segment ``segment_ids[j]`` (sorted): they are how
``embedding_lookup_sparse`` combines the embeddings of each example's ids.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     sp = tf.sparse_placeholder(tf.int64)
...     data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
...     total = tf.sparse_segment_sum(data, [0, 2, 1], [0, 0, 1])
...     with tf.Session() as sess:
...         fed = sess.run(sp, {sp: tf.SparseTensorValue([[0, 0], [1, 2]], [7, 8], [2, 3])})
...         print(sess.run(total).tolist(), fed.values.tolist(), fed.dense_shape.tolist())
[[6.0, 8.0], [3.0, 4.0]] [7, 8] [2, 3]
"""

import collections

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import _run_in_session, convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, math_ops
from zps.ops.op_util import const_axis, make_op


# -- SparseTensor ----------------------------------------------------------------------------------
class SparseTensorValue(collections.namedtuple("SparseTensorValue",
                                               ["indices", "values", "dense_shape"])):
    """The value of a SparseTensor: numpy ``indices``, ``values`` and ``dense_shape``."""

    __slots__ = ()


class SparseTensor:
    """A sparse tensor of rank ``len(dense_shape)``: ``values[i]`` sits at ``indices[i]``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     st = tf.SparseTensor(indices=[[0, 1], [2, 0]], values=[1.5, 2.5], dense_shape=[3, 2])
    ...     print(st.get_shape(), tf.Session().run(tf.sparse_tensor_to_dense(st)).tolist())
    (3, 2) [[0.0, 1.5], [0.0, 0.0], [2.5, 0.0]]
    """

    def __init__(self, indices, values, dense_shape):
        graph = next((v.graph for v in (indices, values, dense_shape) if is_symbolic(v)),
                     get_default_graph())
        with graph.as_default(), graph.name_scope("SparseTensor"):
            self._indices = convert_to_tensor(indices, dtype=_dtypes.int64, name="indices")
            self._values = convert_to_tensor(values, name="values")
            self._dense_shape = convert_to_tensor(dense_shape, dtype=_dtypes.int64,
                                                  name="dense_shape")
        ishape = self._indices.get_shape().with_rank(2)
        self._values.get_shape().with_rank(1)
        rank = self._dense_shape.get_shape().with_rank(1)[0]
        if not ishape[1].is_compatible_with(rank):
            raise ValueError("SparseTensor: indices of shape %s do not fit dense_shape of shape %s"
                             % (ishape, self._dense_shape.get_shape()))

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(*sparse_tensor_value)

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)

    _static_shape = None   # what the op that made it knows of its dense shape (see _sparse_out)

    def get_shape(self):
        """The static dense shape (dims known when ``dense_shape`` folds to constants, or that
        the op producing this SparseTensor inferred)."""
        value = constant_value(self._dense_shape)
        if value is not None:
            return TensorShape([int(d) for d in np.asarray(value).ravel()])
        rank = self._dense_shape.get_shape()[0].value
        shape = unknown_shape(rank) if rank is not None else unknown_shape()
        return shape if self._static_shape is None else shape.merge_with(self._static_shape)

    shape = property(get_shape)

    def eval(self, feed_dict=None, session=None):
        return _run_in_session(self, feed_dict, session)

    # Session protocol for composite feeds and fetches.
    def _feed_tensors(self, value):
        if isinstance(value, SparseTensor) or not isinstance(value, tuple) or len(value) != 3:
            raise TypeError("A SparseTensor is fed a SparseTensorValue (or an (indices, values, "
                            "dense_shape) tuple), got %r" % type(value).__name__)
        return list(zip((self._indices, self._values, self._dense_shape), value))

    def _fetch_components(self):
        return [self._indices, self._values, self._dense_shape], SparseTensorValue

    def __repr__(self):
        return "SparseTensor(indices=%s, values=%s, dense_shape=%s)" % (
            self._indices, self._values, self._dense_shape)


def sparse_placeholder(dtype, shape=None, name=None):
    """A SparseTensor of placeholders, fed with a SparseTensorValue (TF1's ``sparse_placeholder``).

    With a fully known ``shape`` the dense shape is that constant (feeding it is optional).
    """
    graph = get_default_graph()
    with graph.name_scope(name or "SparseTensor"):
        if shape is None:
            rank = None
            dense_shape = array_ops.placeholder(_dtypes.int64, [None], name="shape")
        else:
            dims = list(shape)
            rank = len(dims)
            if any(d is None for d in dims):
                dense_shape = array_ops.placeholder(_dtypes.int64, [rank], name="shape")
            else:
                # As TF1: a known shape is a constant (still feedable, so feeding a value with
                # its dense_shape works).
                dense_shape = array_ops.constant(np.asarray(dims, dtype=np.int64), name="shape")
        values = array_ops.placeholder(dtype, [None], name="values")
        indices = array_ops.placeholder(_dtypes.int64, [None, rank], name="indices")
    return SparseTensor(indices, values, dense_shape)


def _check_sparse(sp, what):
    if not isinstance(sp, SparseTensor):
        raise TypeError("%s must be a SparseTensor, got %r" % (what, type(sp).__name__))
    return sp


# -- SparseToDense (for sparse_tensor_to_dense) -----------------------------------------------------
def _sparse_to_dense_kernel(ctx, indices, output_shape, values, default_value):
    xp = ctx.xp
    shape = tuple(int(d) for d in output_shape.reshape(-1).tolist())
    out = xp.full(shape, default_value, dtype=values.dtype)
    if indices.size:
        idx = indices.reshape(indices.shape[0], -1) if indices.ndim else indices.reshape(1, 1)
        if idx.shape[1] != len(shape):
            raise errors.InvalidArgumentError(
                None, None, "sparse indices have %d columns but the output has rank %d"
                % (idx.shape[1], len(shape)))
        bad = ((idx < 0) | (idx >= np.asarray(shape, dtype=idx.dtype))).any(axis=1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise errors.InvalidArgumentError(
                None, None, "indices[%d] = [%s] is out of bounds: need 0 <= index < [%s]"
                % (k, ",".join(str(int(v)) for v in idx[k]), ",".join(str(d) for d in shape)))
        out[tuple(idx.T)] = values
    return out


def _sparse_to_dense_shape(op):
    value = constant_value(op.inputs[1])
    if value is not None:
        return TensorShape([int(d) for d in np.asarray(value).ravel()])
    n = op.inputs[1].get_shape()
    return unknown_shape(n[0].value) if n.ndims == 1 and n[0].value is not None else unknown_shape()


def _sparse_to_dense_grad(op, grad):
    # d/dvalues: the dense gradient read at each index; d/ddefault: the sum elsewhere (TF1 has
    # no rule; this is exact and cheap).
    indices = op.inputs[0]
    values_grad = array_ops.reshape(_gather_nd_rows(grad, indices), [-1])
    default_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]


def _gather_nd_rows(x, indices):
    """``x[indices[i]]`` for int64 ``indices`` of shape [N, rank(x)] (a flat gather)."""
    rank = x.get_shape().ndims
    if rank is None:
        raise ValueError("The gradient of SparseToDense needs an output of known rank")
    shape = array_ops.shape(x, out_type=_dtypes.int64)
    flat = indices[:, rank - 1]
    for k in range(rank - 1):  # row-major: index k is worth prod(shape[k+1:])
        flat = flat + indices[:, k] * math_ops.reduce_prod(shape[k + 1:])
    return array_ops.gather(array_ops.reshape(x, [-1]), flat)


register_op("SparseToDense", shape=_sparse_to_dense_shape,
            dtype=lambda op: op.inputs[2].dtype.base_dtype,
            kernel=_sparse_to_dense_kernel, grad=_sparse_to_dense_grad)


def _check_sorted_indices_kernel(ctx, indices):
    """``indices`` ([N, rank]) unchanged if its rows are in strictly increasing row-major order;
    else TF's error for the first row that is not (repeated, or out of order)."""
    flat = np.asarray(indices).reshape(indices.shape[0], -1)
    step = flat[1:] - flat[:-1]
    moved = step != 0
    first = moved.argmax(axis=1)   # the column that decides each pair's order
    bad = ~moved.any(axis=1) | (step[np.arange(len(step)), first] < 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0]) + 1
        raise errors.InvalidArgumentError(
            None, None, "indices[%d] = [%s] is %s. Many sparse ops require sorted indices.\n"
            "    Use `tf.sparse.reorder` to create a correctly ordered copy."
            % (k, ",".join(str(int(v)) for v in flat[k]),
               "out of order" if moved[k - 1].any() else "repeated"))
    return indices


register_op("CheckSortedSparseIndices", shape=lambda op: op.inputs[0].get_shape(),
            kernels={"numpy": _check_sorted_indices_kernel}, grad=None)


def check_sorted_indices(indices):
    """``indices`` (int64 [N, rank]), checked when the graph runs to be sorted and unique (what
    ``validate_indices`` asks of sparse_to_dense and sparse_tensor_to_dense)."""
    return make_op("CheckSortedSparseIndices", [indices], name="CheckSortedSparseIndices")


def sparse_tensor_to_dense(sp_input, default_value=0, validate_indices=True, name=None):
    """The dense tensor of ``sp_input`` (absent entries are ``default_value``);
    ``validate_indices`` requires its indices sorted and unique, as TF1 does (``tf.sparse.reorder``
    sorts them)."""
    sp = _check_sparse(sp_input, "sparse_tensor_to_dense's sp_input")
    default = convert_to_tensor(default_value, dtype=sp.dtype)
    indices = check_sorted_indices(sp.indices) if validate_indices else sp.indices
    dense = make_op("SparseToDense", [indices, sp.dense_shape, sp.values, default],
                    name=name or "SparseToDense")
    dense.set_shape(sp.get_shape())   # what the op that made sp knew (sparse_reshape ...)
    return dense


# -- sparse segment reductions -------------------------------------------------------------------
def _segment_rows(ctx, data, indices, segment_ids, num_segments=None):
    """``(out, counts)``: the row sums of each segment and how many rows each segment got
    (``num_segments`` rows, or ``segment_ids[-1] + 1`` without it)."""
    xp = ctx.xp
    if indices.ndim != 1 or segment_ids.shape != indices.shape:
        raise errors.InvalidArgumentError(
            None, None, "indices and segment_ids must be vectors of one length, got shapes %s and "
            "%s" % (list(indices.shape), list(segment_ids.shape)))
    n = data.shape[0] if data.ndim else 0
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        bad = indices[(indices < 0) | (indices >= n)][0]
        raise errors.InvalidArgumentError(
            None, None, "indices contains %d, which is not in [0, %d)" % (int(bad), n))
    if segment_ids.size and (segment_ids[0] < 0 or (segment_ids[1:] < segment_ids[:-1]).any()):
        raise errors.InvalidArgumentError(
            None, None, "segment_ids must be sorted and non-negative, got %s"
            % segment_ids.tolist()[:20])
    num = int(segment_ids[-1]) + 1 if segment_ids.size else 0
    if num_segments is not None:
        if num > int(num_segments):
            raise errors.InvalidArgumentError(
                None, None, "segment ids must be < num_segments: segment_ids contains %d, "
                "num_segments is %d" % (num - 1, int(num_segments)))
        num = int(num_segments)
    out = xp.zeros((num,) + data.shape[1:], dtype=data.dtype)
    xp.add.at(out, segment_ids, data[indices])
    counts = xp.bincount(segment_ids, minlength=num).astype(data.dtype)
    return out, counts.reshape((num,) + (1,) * (data.ndim - 1))


# The *WithNumSegments ops take num_segments as a fourth input.
def _sparse_segment_sum_kernel(ctx, data, indices, segment_ids, num_segments=None):
    return _segment_rows(ctx, data, indices, segment_ids, num_segments)[0]


def _sparse_segment_mean_kernel(ctx, data, indices, segment_ids, num_segments=None):
    out, counts = _segment_rows(ctx, data, indices, segment_ids, num_segments)
    out /= ctx.xp.maximum(counts, 1)
    return out


def _sparse_segment_sqrt_n_kernel(ctx, data, indices, segment_ids, num_segments=None):
    out, counts = _segment_rows(ctx, data, indices, segment_ids, num_segments)
    out /= ctx.xp.sqrt(ctx.xp.maximum(counts, 1))
    return out


def _segment_shape(op):
    data = op.inputs[0].get_shape()
    if data.ndims is None:
        return unknown_shape()
    if data.ndims == 0:
        raise ValueError("sparse segment reduction needs data of rank >= 1, got a scalar (op '%s')"
                         % op.name)
    num = None
    if len(op.inputs) > 3:
        num = constant_value(op.inputs[3])
        num = None if num is None else int(num)
    return TensorShape([num] + data.as_list()[1:])


def _segment_grad(scale):
    """Gradient of a sparse segment reduction whose segment ``s`` is scaled by ``scale(count_s)``:
    ``d data[indices[j]] += scale(count) * grad[segment_ids[j]]`` (built from graph ops)."""
    def grad_fn(op, grad):
        data, indices, segment_ids = op.inputs[:3]
        rows = array_ops.gather(grad, segment_ids)
        if scale is not None:
            ones = array_ops.ones_like(segment_ids, dtype=grad.dtype)
            counts = array_ops.unsorted_segment_sum(ones, segment_ids, array_ops.shape(grad)[0])
            per_row = array_ops.gather(scale(math_ops.maximum(counts, 1.0)), segment_ids)
            rank = grad.get_shape().ndims
            if rank is None:
                raise ValueError("The gradient of %s needs data of known rank" % op.name)
            rows = rows * array_ops.reshape(per_row, [-1] + [1] * (rank - 1))
        data_grad = array_ops.unsorted_segment_sum(rows, indices, array_ops.shape(data)[0])
        return [data_grad] + [None] * (len(op.inputs) - 1)
    return grad_fn


for _op_type, _kernel, _scale in (("SparseSegmentSum", _sparse_segment_sum_kernel, None),
                                  ("SparseSegmentMean", _sparse_segment_mean_kernel,
                                   math_ops.reciprocal),
                                  ("SparseSegmentSqrtN", _sparse_segment_sqrt_n_kernel,
                                   math_ops.rsqrt)):
    for _suffix in ("", "WithNumSegments"):
        register_op(_op_type + _suffix, shape=_segment_shape, kernel=_kernel,
                    grad=_segment_grad(_scale))


def _segment_op(op_type, data, indices, segment_ids, name, num_segments=None):
    data = convert_to_tensor(data)
    if not data.dtype.is_floating:
        raise TypeError("%s needs floating data, got %s (%s)" % (op_type, data.dtype.name, data.name))
    indices = convert_to_tensor(indices, preferred_dtype=_dtypes.int32)
    segment_ids = convert_to_tensor(segment_ids, preferred_dtype=_dtypes.int32)
    for t, what in ((indices, "indices"), (segment_ids, "segment_ids")):
        if not t.dtype.is_integer:
            raise TypeError("%s: %s must be int32 or int64, got %s" % (op_type, what, t.dtype.name))
    if num_segments is None:
        return make_op(op_type, [data, indices, segment_ids], name=name or op_type)
    num_segments = convert_to_tensor(num_segments, preferred_dtype=_dtypes.int32)
    if not num_segments.dtype.is_integer or num_segments.get_shape().ndims not in (None, 0):
        raise TypeError("%s: num_segments must be an int32 or int64 scalar, got %s of shape %s"
                        % (op_type, num_segments.dtype.name, num_segments.get_shape()))
    op_type += "WithNumSegments"
    return make_op(op_type, [data, indices, segment_ids, num_segments], name=name or op_type)


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None):
    """``out[s] = sum(data[indices[j]] for j where segment_ids[j] == s)`` (segment_ids sorted);
    ``num_segments`` rows (those no id names are 0), or ``segment_ids[-1] + 1`` without it."""
    return _segment_op("SparseSegmentSum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None):
    """As ``sparse_segment_sum``, divided by the number of rows of each segment."""
    return _segment_op("SparseSegmentMean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None):
    """As ``sparse_segment_sum``, divided by the square root of each segment's row count."""
    return _segment_op("SparseSegmentSqrtN", data, indices, segment_ids, name, num_segments)


# -- helpers of the sparse kernels ---------------------------------------------------------------
# The kernels below manipulate indices (sorting, matching, offsetting) on the host, as TF1's do
# (cupy_kernels runs them on host copies when a GPU is asked for).
def _dims(shape):
    return [int(d) for d in shape.reshape(-1).tolist()]


def _keys(xp, indices, dims):
    """Each index's row-major offset in a dense tensor of shape ``dims`` (int64)."""
    strides = np.cumprod([1] + dims[::-1][:-1])[::-1].astype(np.int64) if dims else \
        np.zeros(0, np.int64)
    return indices.astype(np.int64) @ xp.asarray(strides)


def _unkeys(xp, keys, dims):
    """The inverse of ``_keys``: int64 indices ``[N, len(dims)]``."""
    out = xp.empty((keys.shape[0], len(dims)), dtype=np.int64)
    rest = keys.astype(np.int64)
    for k in reversed(range(len(dims))):
        out[:, k] = rest % dims[k]
        rest = rest // dims[k]
    return out


def _check_in_bounds(xp, indices, dims, what="indices"):
    if indices.size and ((indices < 0).any() or (indices >= xp.asarray(dims)).any()):
        row = int(xp.argmax(((indices < 0) | (indices >= xp.asarray(dims))).any(axis=1)))
        raise errors.InvalidArgumentError(
            None, None, "%s[%d] = %s is out of bounds: need 0 <= index < %s"
            % (what, row, indices[row].tolist(), dims))


def _sparse_shapes(rank):
    """The static shapes of the (indices, values, dense_shape) of a SparseTensor of ``rank``."""
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _sparse_parts(sp):
    return [sp.indices, sp.values, sp.dense_shape]


def _sparse_out(indices, values, dense_shape, static_shape=None):
    out = SparseTensor(indices, values, dense_shape)
    if static_shape is not None:
        out._static_shape = static_shape
    return out


def _sorted_outputs(xp, indices, values, dims):
    """``indices``, ``values`` in row-major order of ``indices``."""
    order = xp.argsort(_keys(xp, indices, dims), kind="stable")
    return indices[order], values[order]


# -- SparseReorder -------------------------------------------------------------------------------
def _reorder_kernel(ctx, indices, values, shape):
    return list(_sorted_outputs(ctx.xp, indices, values, _dims(shape)))


def _reorder_grad(op, _, g_values):
    # values[perm[j]] went to output j: the input's gradient scatters the output's back.
    n = array_ops.shape(op.inputs[1])[0]
    perm = make_op("SparseReorder", [op.inputs[0], array_ops.range(n), op.inputs[2]])[1]
    return [None, array_ops.unsorted_segment_sum(g_values, perm, n), None]


register_op("SparseReorder", shape=lambda op: [op.inputs[0].get_shape(), op.inputs[1].get_shape()],
            dtype=lambda op: [_dtypes.int64, op.inputs[1].dtype], kernel=_reorder_kernel,
            grad=_reorder_grad, num_outputs=2)


def sparse_reorder(sp_input, name=None):
    """``sp_input`` with its entries in row-major (canonical) order, as most sparse ops want."""
    sp = _check_sparse(sp_input, "sparse_reorder's sp_input")
    indices, values = make_op("SparseReorder", _sparse_parts(sp), name=name or "SparseReorder")
    return _sparse_out(indices, values, sp.dense_shape, sp.get_shape())


# -- SparseTensorDenseMatMul ---------------------------------------------------------------------
def _sparse_matmul_shape(op):
    a = _static_dense_shape(op.inputs[2], 2)
    b = op.inputs[3].get_shape().with_rank(2).as_list()
    m, k = a[::-1] if op._attrs["adjoint_a"] else a
    kb, n = b[::-1] if op._attrs["adjoint_b"] else b
    if k is not None and kb is not None and k != kb:
        raise ValueError("Cannot multiply A and B because inner dimension does not match: %d vs. "
                         "%d.  Did you forget a transpose?  Dimensions of A: %s.  Dimensions of B: "
                         "%s (op '%s')" % (k, kb, a, b, op.name))
    return TensorShape([m, n])


def _static_dense_shape(shape, rank=None):
    """The dims of a dense_shape tensor known when the graph is built (None where unknown)."""
    value = constant_value(shape)
    if value is not None:
        return [int(d) for d in np.asarray(value).ravel()]
    n = shape.get_shape().with_rank(1)[0].value
    n = rank if n is None else n
    return None if n is None else [None] * n


def _sparse_matmul_kernel(ctx, indices, values, shape, b, adjoint_a, adjoint_b):
    xp = ctx.xp
    dims = _dims(shape)
    if len(dims) != 2 or b.ndim != 2:
        raise errors.InvalidArgumentError(None, None, "Tensor 'a' and 'b' must be matrices, got "
                                          "dense shapes %s and %s" % (dims, list(b.shape)))
    rows, cols = (indices[:, 1], indices[:, 0]) if adjoint_a else (indices[:, 0], indices[:, 1])
    m, k = dims[::-1] if adjoint_a else dims
    b = b.T if adjoint_b else b
    if k != b.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "Cannot multiply A and B because inner dimension does not match: %d vs. "
            "%d.  Did you forget a transpose?  Dimensions of A: %s.  Dimensions of B: %s"
            % (k, b.shape[0], dims, list(b.shape)))
    for j, (what, bound) in enumerate(((rows, m), (cols, k))):
        bad = (what < 0) | (what >= bound)
        if bad.any():
            i = int(xp.argmax(bad))
            col = j if not adjoint_a else 1 - j
            raise errors.InvalidArgumentError(
                None, None, "%s (%d) from index[%d,%d] out of bounds (>=%d)"
                % ("mk"[j], int(what[i]), i, col, bound))
    out = xp.zeros((m, b.shape[1]), dtype=b.dtype)
    xp.add.at(out, rows, values[:, None] * b[cols])
    return out


def _sparse_matmul_grad(op, g):
    indices, values, shape, b = op.inputs
    adj_a, adj_b = op._attrs["adjoint_a"], op._attrs["adjoint_b"]
    sp = SparseTensor(indices, values, shape)
    grad_b = sparse_tensor_dense_matmul(sp, g, adjoint_a=not adj_a)
    if adj_b:
        grad_b = array_ops.transpose(grad_b)
    rows, cols = (indices[:, 1], indices[:, 0]) if adj_a else (indices[:, 0], indices[:, 1])
    b_rows = array_ops.gather(array_ops.transpose(b) if adj_b else b, cols)
    grad_values = math_ops.reduce_sum(array_ops.gather(g, rows) * b_rows, 1)
    return [None, grad_values, None, grad_b]


register_op("SparseTensorDenseMatMul", shape=_sparse_matmul_shape,
            dtype=lambda op: op.inputs[3].dtype, kernel=_sparse_matmul_kernel,
            grad=_sparse_matmul_grad)


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The dense matrix product of the sparse matrix ``sp_a`` and the dense matrix ``b``
    (``adjoint_a`` / ``adjoint_b`` transpose either first); differentiable in ``sp_a.values``
    and ``b``."""
    sp = _check_sparse(sp_a, "sparse_tensor_dense_matmul's sp_a")
    with sp.graph.name_scope(name or "SparseTensorDenseMatMul"):   # TF's mm/SparseTensorDenseMatMul
        b = convert_to_tensor(b, name="b")
        if b.dtype != sp.dtype:
            raise TypeError("Input 'b' of 'SparseTensorDenseMatMul' Op has type %s that does not "
                            "match type %s of argument 'a_values'." % (b.dtype.name, sp.dtype.name))
        return make_op("SparseTensorDenseMatMul", _sparse_parts(sp) + [b],
                       adjoint_a=bool(adjoint_a), adjoint_b=bool(adjoint_b))


# -- SparseReduceSum, SparseReduceMax (dense and sparse outputs) ---------------------------------
def _reduction_axes(axis, rank):
    axes = range(rank) if axis is None else axis
    out = sorted({a % rank if rank else a for a in axes})
    if any(not 0 <= a < rank for a in out):
        raise errors.InvalidArgumentError(None, None, "Invalid reduction dimension %s for a "
                                          "SparseTensor of rank %d" % (list(axis), rank))
    return out


def _grouped(ctx, indices, values, shape, axis):
    """``(kept dims, group of each entry, the groups' output indices)`` of a sparse reduction:
    entries whose indices agree outside ``axis`` form one group (ordered row-major)."""
    xp = ctx.xp
    dims = _dims(shape)
    axes = _reduction_axes(axis, len(dims))
    kept = [d for d in range(len(dims)) if d not in axes]
    kept_dims = [dims[d] for d in kept]
    keys = _keys(xp, indices[:, kept], kept_dims)
    unique_keys, group = xp.unique(keys, return_inverse=True)
    return dims, axes, kept_dims, group.reshape(-1), _unkeys(xp, unique_keys, kept_dims)


def _segment_reduce(xp, reduce, values, group, count):
    if reduce == "sum":
        out = xp.zeros(count, dtype=values.dtype)
        xp.add.at(out, group, values)
        return out
    out = xp.full(count, array_ops._lowest(values.dtype), dtype=values.dtype)
    xp.maximum.at(out, group, values)
    return out


def _sparse_reduce_kernel(reduce):
    def kernel(ctx, indices, values, shape, axis, keep_dims):
        xp = ctx.xp
        dims, axes, kept_dims, group, out_indices = _grouped(ctx, indices, values, shape, axis)
        reduced = _segment_reduce(xp, reduce, values, group, out_indices.shape[0])
        out = xp.zeros(int(np.prod(kept_dims)), dtype=values.dtype)   # empty groups: 0 (TF1)
        out[_keys(xp, out_indices, kept_dims)] = reduced
        out = out.reshape(kept_dims)
        if keep_dims:
            out = out.reshape([1 if d in axes else n for d, n in enumerate(dims)])
        return out
    return kernel


def _sparse_reduce_shape(op):
    dims = _static_dense_shape(op.inputs[2])
    if dims is None:
        return unknown_shape()
    axis, keep = op._attrs["axis"], op._attrs["keep_dims"]
    axes = set(range(len(dims))) if axis is None else {a % len(dims) for a in axis}
    return TensorShape([1 if d in axes else n for d, n in enumerate(dims)] if keep
                       else [n for d, n in enumerate(dims) if d not in axes])


def _sparse_reduce_sum_grad(op, g):
    # Each value's gradient is g at its index with the reduced dims set to 0 (TF1's rule: the
    # index divided by dense_shape // kept_shape, which is 1 on kept dims and the dim on others).
    indices, _, shape = op.inputs
    kept = make_op("ReduceGradShape", [g, shape], axis=op._attrs["axis"])
    scale = shape // array_ops.shape(kept, out_type=_dtypes.int64)
    return [None, array_ops.gather_nd(kept, indices // scale), None]


register_op("SparseReduceSum", shape=_sparse_reduce_shape, dtype=lambda op: op.inputs[1].dtype,
            kernel=_sparse_reduce_kernel("sum"), grad=_sparse_reduce_sum_grad)
register_op("SparseReduceMax", shape=_sparse_reduce_shape, dtype=lambda op: op.inputs[1].dtype,
            kernel=_sparse_reduce_kernel("max"))   # no gradient rule, as in TF1


def _sparse_reduce_sparse_kernel(reduce):
    def kernel(ctx, indices, values, shape, axis, keep_dims):
        xp = ctx.xp
        dims, axes, kept_dims, group, out_indices = _grouped(ctx, indices, values, shape, axis)
        reduced = _segment_reduce(xp, reduce, values, group, out_indices.shape[0])
        out_dims = [1 if d in axes else n for d, n in enumerate(dims)] if keep_dims else kept_dims
        if keep_dims:
            full = xp.zeros((out_indices.shape[0], len(dims)), dtype=np.int64)
            full[:, [d for d in range(len(dims)) if d not in axes]] = out_indices
            out_indices = full
        return [out_indices, reduced, xp.asarray(out_dims, dtype=np.int64)]
    return kernel


for _reduce in ("Sum", "Max"):
    register_op("SparseReduce%sSparse" % _reduce,
                shape=lambda op: _sparse_shapes(_sparse_reduce_shape(op).ndims),
                dtype=lambda op: [_dtypes.int64, op.inputs[1].dtype, _dtypes.int64],
                kernel=_sparse_reduce_sparse_kernel(_reduce.lower()), num_outputs=3)


def _sparse_reduce(op_type, sp_input, axis, keepdims, reduction_axes, keep_dims, name):
    sp = _check_sparse(sp_input, "%s's sp_input" % op_type)
    if axis is not None and reduction_axes is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_axes'")
    axis = const_axis(axis if axis is not None else reduction_axes, "%s's axis" % op_type)
    axis = None if axis is None else tuple(axis if isinstance(axis, list | tuple) else [axis])
    keep = bool(keepdims if keepdims is not None else keep_dims)
    return make_op(op_type, _sparse_parts(sp), name=name or op_type, axis=axis, keep_dims=keep)


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None,
                      name=None):
    """The dense sum of ``sp_input`` over ``axis`` (all axes if None); absent entries are 0."""
    return _sparse_reduce("SparseReduceSum", sp_input, axis, keepdims, reduction_axes, keep_dims,
                          name)


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None,
                      name=None):
    """The dense maximum of the present entries of ``sp_input`` over ``axis``; a group without
    entries is 0 (TF1's kernel)."""
    return _sparse_reduce("SparseReduceMax", sp_input, axis, keepdims, reduction_axes, keep_dims,
                          name)


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None, name=None):
    """As ``sparse_reduce_sum``, as a SparseTensor holding the groups that had entries."""
    return SparseTensor(*_sparse_reduce("SparseReduceSumSparse", sp_input, axis, keepdims,
                                        reduction_axes, keep_dims, name))


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None, name=None):
    """As ``sparse_reduce_max``, as a SparseTensor holding the groups that had entries."""
    return SparseTensor(*_sparse_reduce("SparseReduceMaxSparse", sp_input, axis, keepdims,
                                        reduction_axes, keep_dims, name))


# -- SparseAdd, SparseTensorDenseAdd -------------------------------------------------------------
def _same_dense_shape(a_shape, b_shape, op_type):
    if a_shape.shape != b_shape.shape or (a_shape != b_shape).any():
        raise errors.InvalidArgumentError(None, None, "Operands' shapes do not match: got %s and "
                                          "%s for %s" % (_dims(a_shape), _dims(b_shape), op_type))


def _sparse_add_kernel(ctx, a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    xp = ctx.xp
    _same_dense_shape(a_shape, b_shape, "SparseAdd")
    dims = _dims(a_shape)
    keys = xp.concatenate([_keys(xp, a_indices, dims), _keys(xp, b_indices, dims)])
    unique_keys, where = xp.unique(keys, return_inverse=True)
    sums = xp.zeros(unique_keys.shape[0], dtype=a_values.dtype)
    xp.add.at(sums, where.reshape(-1), xp.concatenate([a_values, b_values]))
    # TF1's kernel tests only the sums of entries both operands hold against thresh; an entry
    # of one operand alone is copied as it is.
    in_both = xp.bincount(where.reshape(-1), minlength=unique_keys.shape[0]) > 1
    keep = ~in_both | (xp.abs(sums) >= thresh)
    return [_unkeys(xp, unique_keys[keep], dims), sums[keep]]


def _sparse_add_grad(op, _, g_values):
    a_indices, _, shape, b_indices = op.inputs[:4]
    a_grad, b_grad = make_op("SparseAddGrad", [g_values, a_indices, b_indices, op.outputs[0],
                                               shape])
    return [None, a_grad, None, None, b_grad, None, None]


register_op("SparseAdd", shape=lambda op: [TensorShape([None, op.inputs[0].get_shape()[1]]),
                                           TensorShape([None])],
            dtype=lambda op: [_dtypes.int64, op.inputs[1].dtype], kernel=_sparse_add_kernel,
            grad=_sparse_add_grad, num_outputs=2)


def _sparse_add_grad_kernel(ctx, g, a_indices, b_indices, sum_indices, shape):
    # Each input entry's gradient is the gradient of the output entry at its index (0 where the
    # threshold dropped it).
    xp = ctx.xp
    dims = _dims(shape)
    sum_keys = _keys(xp, sum_indices, dims)
    out = []
    for indices in (a_indices, b_indices):
        keys = _keys(xp, indices, dims)
        pos = xp.searchsorted(sum_keys, keys)
        pos = xp.minimum(pos, max(sum_keys.shape[0] - 1, 0))
        found = (sum_keys[pos] == keys) if sum_keys.shape[0] else xp.zeros(keys.shape, bool)
        vals = g[pos] if sum_keys.shape[0] else xp.zeros(keys.shape, g.dtype)
        out.append(xp.where(found, vals, xp.zeros_like(vals)))
    return out


register_op("SparseAddGrad", shape=lambda op: [TensorShape([op.inputs[1].get_shape()[0]]),
                                               TensorShape([op.inputs[2].get_shape()[0]])],
            dtype=lambda op: [op.inputs[0].dtype] * 2, kernel=_sparse_add_grad_kernel, grad=None,
            num_outputs=2)


def _sparse_dense_add_kernel(ctx, indices, values, shape, b):
    xp = ctx.xp
    dims = _dims(shape)
    if dims != list(b.shape):
        raise errors.InvalidArgumentError(None, None, "Dimensions a_shape and b.shape do not "
                                          "match: a_shape=%s b.shape=%s" % (dims, list(b.shape)))
    _check_in_bounds(xp, indices, dims)
    out = b.copy()
    if indices.shape[0]:
        xp.add.at(out, tuple(indices.T), values)
    return out


register_op("SparseTensorDenseAdd", shape=lambda op: op.inputs[3].get_shape(),
            dtype=lambda op: op.inputs[3].dtype, kernel=_sparse_dense_add_kernel,
            grad=lambda op, g: [None, array_ops.gather_nd(g, op.inputs[0]), None, g])


def sparse_add(a, b, thresh=0, name=None):
    """``a + b`` where at least one is a SparseTensor: sparse + sparse is a SparseTensor holding
    the union of the entries (where both hold an entry, a sum whose magnitude is below
    ``thresh`` is dropped; an entry of one alone is kept, as in TF1); sparse + dense is dense."""
    sparse = [isinstance(x, SparseTensor) for x in (a, b)]
    if not any(sparse):
        raise TypeError("sparse_add needs at least one SparseTensor, got %r and %r"
                        % (type(a).__name__, type(b).__name__))
    if all(sparse):
        if a.dtype != b.dtype:
            raise TypeError("sparse_add: a and b must have one dtype, got %s and %s"
                            % (a.dtype.name, b.dtype.name))
        thresh = convert_to_tensor(thresh, dtype=a.dtype)
        indices, values = make_op("SparseAdd", _sparse_parts(a) + _sparse_parts(b) + [thresh],
                                  name=name or "SparseAdd")
        return _sparse_out(indices, values, a.dense_shape, _merged_shape(a, b, "sparse_add"))
    sp, dense = (a, b) if sparse[0] else (b, a)
    dense = convert_to_tensor(dense, dtype=sp.dtype)
    return make_op("SparseTensorDenseAdd", _sparse_parts(sp) + [dense],
                   name=name or "SparseTensorDenseAdd")


# -- SparseSparseMaximum, SparseSparseMinimum ----------------------------------------------------
def _sparse_extreme_kernel(pick):
    def kernel(ctx, a_indices, a_values, a_shape, b_indices, b_values, b_shape):
        xp = ctx.xp
        _same_dense_shape(a_shape, b_shape, "sparse_maximum/minimum")
        dims = _dims(a_shape)
        a_keys, b_keys = _keys(xp, a_indices, dims), _keys(xp, b_indices, dims)
        keys = xp.unique(xp.concatenate([a_keys, b_keys]))
        both = []
        for k, v in ((a_keys, a_values), (b_keys, b_values)):
            dense = xp.zeros(keys.shape[0], dtype=v.dtype)   # an absent entry counts as 0
            dense[xp.searchsorted(keys, k)] = v
            both.append(dense)
        return [_unkeys(xp, keys, dims), getattr(xp, pick)(*both)]
    return kernel


for _name, _pick in (("SparseSparseMaximum", "maximum"), ("SparseSparseMinimum", "minimum")):
    register_op(_name, shape=lambda op: [TensorShape([None, op.inputs[0].get_shape()[1]]),
                                         TensorShape([None])],
                dtype=lambda op: [_dtypes.int64, op.inputs[1].dtype],
                kernel=_sparse_extreme_kernel(_pick), num_outputs=2)   # TF1: no gradient


def _sparse_extreme(op_type, sp_a, sp_b, name):
    a = _check_sparse(sp_a, "%s's sp_a" % op_type)
    b = _check_sparse(sp_b, "%s's sp_b" % op_type)
    if a.dtype != b.dtype:
        raise TypeError("%s: sp_a and sp_b must have one dtype, got %s and %s"
                        % (op_type, a.dtype.name, b.dtype.name))
    indices, values = make_op(op_type, _sparse_parts(a) + _sparse_parts(b), name=name or op_type)
    return _sparse_out(indices, values, a.dense_shape, _merged_shape(a, b, op_type))


def _merged_shape(a, b, what):
    try:
        return a.get_shape().merge_with(b.get_shape())
    except ValueError:
        raise ValueError("%s needs SparseTensors of one dense shape, got %s and %s"
                         % (what, a.get_shape(), b.get_shape())) from None


def sparse_maximum(sp_a, sp_b, name=None):
    """The element-wise maximum of two SparseTensors of one shape (an absent entry is 0)."""
    return _sparse_extreme("SparseSparseMaximum", sp_a, sp_b, name)


def sparse_minimum(sp_a, sp_b, name=None):
    """The element-wise minimum of two SparseTensors of one shape (an absent entry is 0)."""
    return _sparse_extreme("SparseSparseMinimum", sp_a, sp_b, name)


# -- SparseConcat --------------------------------------------------------------------------------
def _sparse_concat_kernel(ctx, *inputs, axis, expand_nonconcat_dim):
    xp = ctx.xp
    n = len(inputs) // 3
    indices, values, shapes = inputs[:n], inputs[n:2 * n], [_dims(s) for s in inputs[2 * n:]]
    rank = len(shapes[0])
    axis = axis % rank if rank else 0
    out_dims = list(shapes[0])
    for i, dims in enumerate(shapes[1:], 1):
        if len(dims) != rank:
            raise errors.InvalidArgumentError(None, None, "Ranks of all input tensors must match: "
                                              "expected %d but got %d at position %d"
                                              % (rank, len(dims), i))
        for d in range(rank):
            if d != axis and dims[d] != out_dims[d] and not expand_nonconcat_dim:
                raise errors.InvalidArgumentError(
                    None, None, "Input shapes must match: expected %d for dimension %d but got %d "
                    "at position %d" % (out_dims[d], d, dims[d], i))
            out_dims[d] = out_dims[d] + dims[d] if d == axis else max(out_dims[d], dims[d])
    shifted, offset = [], 0
    for ind, dims in zip(indices, shapes):
        ind = ind.copy()
        ind[:, axis] += offset
        offset += dims[axis]
        shifted.append(ind)
    out_indices, out_values = _sorted_outputs(xp, xp.concatenate(shifted),
                                              xp.concatenate(values), out_dims)
    return [out_indices, out_values, xp.asarray(out_dims, dtype=np.int64)]


register_op("SparseConcat", shape=lambda op: _sparse_shapes(op.inputs[0].get_shape()[1]),
            dtype=lambda op: [_dtypes.int64, op.inputs[len(op.inputs) // 3].dtype, _dtypes.int64],
            kernel=_sparse_concat_kernel, grad=None, num_outputs=3)   # TF1: not differentiable


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None):
    """The SparseTensors ``sp_inputs`` concatenated along ``axis`` (their other dims must agree,
    or with ``expand_nonconcat_dim`` the largest is taken); the result is in canonical order."""
    if concat_dim is not None:
        axis = concat_dim
    axis = const_axis(axis, "sparse_concat's axis")
    sps = [_check_sparse(s, "sparse_concat's sp_inputs[%d]" % i) for i, s in enumerate(sp_inputs)]
    if not sps:
        raise ValueError("sparse_concat needs at least one SparseTensor")
    if len({s.dtype for s in sps}) > 1:
        raise TypeError("sparse_concat's inputs must have one dtype, got %s"
                        % ", ".join(s.dtype.name for s in sps))
    parts = [s.indices for s in sps] + [s.values for s in sps] + [s.dense_shape for s in sps]
    indices, values, shape = make_op("SparseConcat", parts, name=name or "SparseConcat",
                                     axis=int(axis), expand_nonconcat_dim=bool(expand_nonconcat_dim))
    return _sparse_out(indices, values, shape, _concat_static_shape(sps, int(axis),
                                                                    expand_nonconcat_dim))


def _concat_static_shape(sps, axis, expand):
    shapes = [s.get_shape() for s in sps]
    if any(s.ndims is None for s in shapes):
        return None
    rank = shapes[0].ndims
    axis %= rank
    out = []
    for d in range(rank):
        dims = [s[d].value for s in shapes]
        if None in dims:
            out.append(None)
        elif d == axis:
            out.append(sum(dims))
        elif expand:
            out.append(max(dims))
        elif len(set(dims)) > 1:
            raise ValueError("sparse_concat: input shapes %s differ in dimension %d (not the "
                             "concatenation axis %d); pass expand_nonconcat_dim=True to take the "
                             "largest" % ([str(s) for s in shapes], d, axis))
        else:
            out.append(dims[0])
    return TensorShape(out)


# -- SparseReshape -------------------------------------------------------------------------------
def _sparse_reshape_kernel(ctx, indices, shape, new_shape):
    xp = ctx.xp
    dims, wanted = _dims(shape), _dims(new_shape)
    total = int(np.prod(dims))
    unknown = [i for i, d in enumerate(wanted) if d == -1]
    if len(unknown) > 1:
        raise errors.InvalidArgumentError(None, None, "only one output dimension may be -1, not "
                                          "both %d and %d" % tuple(unknown[:2]))
    known = int(np.prod([d for d in wanted if d != -1]))
    if unknown:
        if known == 0 or total % known:
            raise errors.InvalidArgumentError(
                None, None, "Input to reshape is a SparseTensor with %d dense values, but the "
                "requested shape requires a multiple of %d. input_shape=%s output_shape=%s"
                % (total, known, _shape_str(dims), _shape_str(wanted)))
        wanted[unknown[0]] = total // known
    elif known != total:
        raise errors.InvalidArgumentError(
            None, None, "Input to reshape is a tensor with %d dense values, but the requested "
            "shape has %d. input_shape=%s output_shape=%s" % (total, known, _shape_str(dims),
                                                              _shape_str(wanted)))
    return [_unkeys(xp, _keys(xp, indices, dims), wanted), xp.asarray(wanted, dtype=np.int64)]


def _shape_str(dims):
    return "[%s]" % ",".join(str(d) for d in dims)


def _sparse_reshape_shape(op):
    n = op.inputs[2].get_shape().with_rank(1)[0]
    return [TensorShape([op.inputs[0].get_shape()[0], n]), TensorShape([n])]


register_op("SparseReshape", shape=_sparse_reshape_shape,
            dtype=lambda op: [_dtypes.int64, _dtypes.int64], kernel=_sparse_reshape_kernel,
            grad=None, num_outputs=2)


def sparse_reshape(sp_input, shape, name=None):
    """``sp_input`` seen with dense shape ``shape`` (row-major, as ``tf.reshape``; one dim may be
    -1). The values are unchanged, so gradients flow through them."""
    sp = _check_sparse(sp_input, "sparse_reshape's sp_input")
    new_shape = convert_to_tensor(shape, dtype=_dtypes.int64)
    static = _static_dense_shape(new_shape)
    with sp.graph.name_scope(name or "SparseReshape") as scope:   # TF's rs, rs/Identity, rs/Const
        indices, out_shape = make_op("SparseReshape", [sp.indices, sp.dense_shape, new_shape],
                                     name=scope)
        known = _reshaped_dims(static, sp.get_shape())
        if known is not None:   # as TF: the output dense_shape is a constant when it is known
            out_shape = convert_to_tensor(np.array(known, dtype=np.int64))
        static_shape = None if static is None else TensorShape(
            known or [None if d is None or d < 0 else d for d in static])
        return _sparse_out(indices, array_ops.identity(sp.values), out_shape, static_shape)


def _reshaped_dims(static, old):
    """The dims sparse_reshape's output has when the graph is built (TF's rule), else None."""
    if static is None or not old.is_fully_defined():
        return None
    if static.count(-1) > 1:
        raise ValueError("At most one dimension can be inferred (-1). Found: %s" % static)
    asked = [None if d is None or d < 0 else d for d in static]
    dims, total = list(asked), old.num_elements()
    if dims.count(None) == 1 and 0 not in dims:
        dims[dims.index(None)] = total // int(np.prod([d for d in dims if d is not None]))
    if None in dims:
        return None
    if int(np.prod(dims)) != total:
        raise ValueError("Cannot reshape a tensor with %d elements to shape %s (%d elements)."
                         % (total, asked, int(np.prod(dims))))
    return dims


# -- sparse_retain, sparse_transpose, sparse_merge, sparse_to_indicator (built from other ops) ---
def sparse_retain(sp_input, to_retain):
    """``sp_input`` with only the entries ``i`` where the bool vector ``to_retain[i]`` is true."""
    sp = _check_sparse(sp_input, "sparse_retain's sp_input")
    keep = convert_to_tensor(to_retain)
    if keep.get_shape().ndims not in (None, 1):
        raise ValueError("to_retain must be a vector, got shape %s" % keep.get_shape())
    n, m = sp.values.get_shape()[0], keep.get_shape()[0] if keep.get_shape().ndims else None
    if not n.is_compatible_with(m if m is not None else n):
        raise ValueError("Dimensions %s and %s are not compatible: to_retain needs one entry per "
                         "value of sp_input" % (n, m))
    where = array_ops.reshape(array_ops.where(keep), [-1])
    return _sparse_out(array_ops.gather(sp.indices, where, name="GatherV2"),   # TF's op names
                       array_ops.gather(sp.values, where, name="GatherV2"),
                       array_ops.identity(sp.dense_shape), sp.get_shape())


def sparse_transpose(sp_input, perm=None, name=None):
    """``sp_input`` with its dimensions permuted by ``perm`` (reversed if None), reordered."""
    sp = _check_sparse(sp_input, "sparse_transpose's sp_input")
    with sp.graph.name_scope(name or "SparseTranspose"):
        rank = sp.get_shape().ndims
        if perm is None:
            perm = list(range(rank))[::-1] if rank is not None else \
                array_ops.range(array_ops.shape(sp.dense_shape)[0] - 1, -1, -1)
        perm = convert_to_tensor(perm, dtype=_dtypes.int32)
        indices = array_ops.transpose(array_ops.gather(array_ops.transpose(sp.indices), perm))
        dense_shape = array_ops.gather(sp.dense_shape, perm)
        p = constant_value(perm)
        static = None if rank is None or p is None else TensorShape(
            [sp.get_shape()[int(i)].value for i in np.asarray(p).ravel()])
        return sparse_reorder(_sparse_out(indices, sp.values, dense_shape, static))


def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """The SparseTensor with ``sp_values``'s values at ``[index of sp_ids without its last
    column..., id]``: a batch of id lists with weights becomes a ``[..., vocab_size]`` sparse
    matrix (ids must be < vocab_size)."""
    ids = _check_sparse(sp_ids, "sparse_merge's sp_ids")
    vals = _check_sparse(sp_values, "sparse_merge's sp_values")
    if not ids.dtype.is_integer:
        raise TypeError("sp_ids.values must be int32 or int64, got %s" % ids.dtype.name)
    with ids.graph.name_scope(name or "SparseMerge"):
        vocab = convert_to_tensor(vocab_size, dtype=_dtypes.int64)
        new_ids = array_ops.expand_dims(math_ops.cast(ids.values, _dtypes.int64), 1)
        indices = array_ops.concat([ids.indices[:, :-1], new_ids], 1)
        shape = array_ops.concat([ids.dense_shape[:-1], array_ops.reshape(vocab, [1])], 0)
        merged = SparseTensor(indices, vals.values, shape)
        return merged if already_sorted else sparse_reorder(merged)


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """The dense bool ``[..., vocab_size]`` tensor that is True at ``[row..., id]`` for each id
    in the last dimension of the int SparseTensor ``sp_input``."""
    sp = _check_sparse(sp_input, "sparse_to_indicator's sp_input")
    with sp.graph.name_scope(name or "SparseToIndicator"):
        ones = array_ops.fill(array_ops.shape(sp.values), True)
        merged = sparse_merge(sp, SparseTensor(sp.indices, ones, sp.dense_shape), vocab_size)
        return sparse_tensor_to_dense(merged, default_value=False, validate_indices=False)


def from_dense(tensor, name=None):
    """The SparseTensor of the non-zero entries of the dense ``tensor`` (``tf.sparse.from_dense``)."""
    x = convert_to_tensor(tensor)
    with x.graph.name_scope(name or "dense_to_sparse"):
        indices = array_ops.where(math_ops.not_equal(x, array_ops.zeros_like(x)))
        return _sparse_out(indices, array_ops.gather_nd(x, indices),
                           array_ops.shape(x, out_type=_dtypes.int64), x.get_shape())


# -- SparseFillEmptyRows -------------------------------------------------------------------------
def _fill_empty_rows_kernel(ctx, indices, values, shape, default_value):
    xp = ctx.xp
    dims = _dims(shape)
    if not dims:
        raise errors.InvalidArgumentError(None, None, "sparse_fill_empty_rows needs a "
                                          "SparseTensor of rank >= 1, got dense_shape []")
    _check_in_bounds(xp, indices, dims)
    counts = xp.bincount(indices[:, 0], minlength=dims[0]) if indices.shape[0] else \
        xp.zeros(dims[0], dtype=np.int64)
    empty = counts == 0
    rows = xp.nonzero(empty)[0]
    filler = xp.zeros((rows.shape[0], len(dims)), dtype=np.int64)
    filler[:, 0] = rows
    all_indices = xp.concatenate([indices, filler])
    all_values = xp.concatenate([values, xp.full(rows.shape[0], default_value,
                                                 dtype=values.dtype)])
    order = xp.argsort(_keys(xp, all_indices, dims), kind="stable")
    # Where each input value went: its position among the sorted outputs.
    where = xp.empty(order.shape[0], dtype=np.int64)
    where[order] = xp.arange(order.shape[0])
    return [all_indices[order], all_values[order], empty, where[:indices.shape[0]]]


def _rows_shape(dense_shape):
    # [dense_shape[0]] when it folds to a constant (TF1's static empty_row_indicator shape)
    value = constant_value(dense_shape)
    return TensorShape([None if value is None else int(np.asarray(value).ravel()[0])])


def _fill_empty_rows_grad(op, _, g_values, *unused):
    d_values = array_ops.gather(g_values, op.outputs[3])
    return [None, d_values, None, math_ops.reduce_sum(g_values) - math_ops.reduce_sum(d_values)]


register_op("SparseFillEmptyRows",
            shape=lambda op: [TensorShape([None, op.inputs[0].get_shape()[1]]),
                              TensorShape([None]), _rows_shape(op.inputs[2]),
                              TensorShape([op.inputs[1].get_shape()[0]])],
            dtype=lambda op: [_dtypes.int64, op.inputs[1].dtype, _dtypes.bool, _dtypes.int64],
            kernel=_fill_empty_rows_kernel, grad=_fill_empty_rows_grad, num_outputs=4)


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """``(sp, empty_row_indicator)``: ``sp_input`` with ``default_value`` at ``[row, 0, ...]`` of
    each row that had no entry, and the bool vector of those rows."""
    sp = _check_sparse(sp_input, "sparse_fill_empty_rows's sp_input")
    with sp.graph.name_scope(name or "SparseFillEmptyRows"):   # TF's fe/SparseFillEmptyRows
        default = convert_to_tensor(default_value, dtype=sp.dtype)
        indices, values, empty, _ = make_op("SparseFillEmptyRows", _sparse_parts(sp) + [default])
    return _sparse_out(indices, values, sp.dense_shape, sp.get_shape()), empty


# -- SparseSlice, SparseSplit --------------------------------------------------------------------
def _slice_entries(xp, indices, values, dims, start, size):
    start = [min(max(s, 0), d) for s, d in zip(start, dims)]
    end = [min(s + z, d) for s, z, d in zip(start, size, dims)]
    keep = xp.ones(indices.shape[0], dtype=bool)
    for k, (s, e) in enumerate(zip(start, end)):
        keep &= (indices[:, k] >= s) & (indices[:, k] < e)
    out_dims = [e - s for s, e in zip(start, end)]
    return [indices[keep] - xp.asarray(start, dtype=np.int64), values[keep],
            xp.asarray(out_dims, dtype=np.int64)]


def _sparse_slice_kernel(ctx, indices, values, shape, start, size):
    dims = _dims(shape)
    start, size = _dims(start), _dims(size)
    if not len(start) == len(size) == len(dims):
        raise errors.InvalidArgumentError(None, None, "Expected start and size of length %d (the "
                                          "rank of the SparseTensor), got %s and %s"
                                          % (len(dims), start, size))
    return _slice_entries(ctx.xp, indices, values, dims, start, size)


def _sparse_slice_grad(op, _, g_values, *unused):
    return [None, make_op("SparseSliceGrad", [g_values, op.inputs[0], op.inputs[3],
                                              op.outputs[0]]), None, None, None]


register_op("SparseSlice", shape=lambda op: _sparse_shapes(op.inputs[0].get_shape()[1]),
            dtype=lambda op: [_dtypes.int64, op.inputs[1].dtype, _dtypes.int64],
            kernel=_sparse_slice_kernel, grad=_sparse_slice_grad, num_outputs=3)


def _sparse_slice_grad_kernel(ctx, g, indices, start, out_indices):
    # A slice keeps the entries inside its box in their order: each kept input entry gets the
    # gradient of its output entry, the others 0.
    xp = ctx.xp
    shifted = out_indices + start.reshape(1, -1)
    bound = [int(d) + 1 for d in xp.concatenate([indices, shifted]).max(axis=0).tolist()] \
        if indices.shape[0] else []
    kept = xp.isin(_keys(xp, indices, bound), _keys(xp, shifted, bound))
    out = xp.zeros(indices.shape[0], dtype=g.dtype)
    out[kept] = g
    return out


register_op("SparseSliceGrad", shape=lambda op: TensorShape([op.inputs[1].get_shape()[0]]),
            dtype=lambda op: op.inputs[0].dtype, kernel=_sparse_slice_grad_kernel, grad=None)


def sparse_slice(sp_input, start, size, name=None):
    """The entries of ``sp_input`` in the box ``[start, start + size)`` (clipped to its dense
    shape), their indices relative to ``start``."""
    sp = _check_sparse(sp_input, "sparse_slice's sp_input")
    start = convert_to_tensor(start, dtype=_dtypes.int64)
    size = convert_to_tensor(size, dtype=_dtypes.int64)
    return SparseTensor(*make_op("SparseSlice", _sparse_parts(sp) + [start, size],
                                 name=name or "SparseSlice"))


def _sparse_split_kernel(ctx, axis, indices, values, shape, num_split):
    xp = ctx.xp
    dims = _dims(shape)
    axis = int(axis)
    if not -len(dims) <= axis < len(dims):
        raise errors.InvalidArgumentError(None, None, "Input split_dim should be between %d and "
                                          "%d, got %d" % (-len(dims), len(dims), axis))
    axis %= len(dims)
    if num_split > dims[axis]:
        raise errors.InvalidArgumentError(None, None, "Input num_split should be between 1 and "
                                          "%d, got %d" % (dims[axis], num_split))
    # TF1's split: every piece gets dims // num_split, the first dims % num_split one more.
    base, extra = divmod(dims[axis], num_split)
    outs, begin = [], 0
    for i in range(num_split):
        width = base + (i < extra)
        start = [begin if k == axis else 0 for k in range(len(dims))]
        size = [width if k == axis else dims[k] for k in range(len(dims))]
        outs.append(_slice_entries(xp, indices, values, dims, start, size))
        begin += width
    return [part for k in range(3) for part in (o[k] for o in outs)]


def _sparse_split_shape(op):
    one = _sparse_shapes(op.inputs[1].get_shape()[1])
    return [one[k] for k in range(3) for _ in range(op._attrs["num_split"])]


register_op("SparseSplit", shape=_sparse_split_shape,
            dtype=lambda op: [t for t in (_dtypes.int64, op.inputs[2].dtype, _dtypes.int64)
                              for _ in range(op._attrs["num_split"])],
            kernel=_sparse_split_kernel)


def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None,
                 split_dim=None):
    """``sp_input`` split along ``axis`` into ``num_split`` SparseTensors (the first
    ``dim % num_split`` one wider), called with keywords as TF1 requires:
    ``tf.sparse_split(sp_input=sp, num_split=2, axis=1)``."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function: sparse_split("
                         "sp_input=..., num_split=..., axis=...)")
    if axis is None:
        axis = split_dim
    if sp_input is None or num_split is None or axis is None:
        raise ValueError("sparse_split needs sp_input, num_split and axis")
    sp = _check_sparse(sp_input, "sparse_split's sp_input")
    if not isinstance(num_split, int | np.integer) or num_split < 1:
        raise ValueError("num_split must be a positive int, got %r" % (num_split,))
    axis = convert_to_tensor(axis, dtype=_dtypes.int64)
    outs = make_op("SparseSplit", [axis] + _sparse_parts(sp), name=name or "SparseSplit",
                   num_split=int(num_split), num_outputs=3 * int(num_split))
    n = int(num_split)
    return [SparseTensor(outs[i], outs[n + i], outs[2 * n + i]) for i in range(n)]


# -- SparseSoftmax -------------------------------------------------------------------------------
def _sparse_softmax_kernel(ctx, indices, values, shape):
    xp = ctx.xp
    dims = _dims(shape)
    if len(dims) < 2:
        raise errors.InvalidArgumentError(None, None, "Input should have rank >= 2, but received "
                                          "shape: %s" % dims)
    # The softmax of each group of entries that agree on all but the last index.
    lead = _keys(xp, indices[:, :-1], dims[:-1])
    _, group = xp.unique(lead, return_inverse=True)
    group = group.reshape(-1)
    count = int(group.max()) + 1 if group.size else 0
    top = xp.full(count, -np.inf, dtype=values.dtype)
    xp.maximum.at(top, group, values)
    e = xp.exp(values - top[group])
    total = xp.zeros(count, dtype=values.dtype)
    xp.add.at(total, group, e)
    return e / total[group]


def _sparse_softmax_grad(op, g):
    # TF1's rule: d values = (g - sum over the group of (g * softmax)) * softmax.
    indices, _, shape = op.inputs
    out = op.outputs[0]
    sums = sparse_reduce_sum(SparseTensor(indices, g * out, shape), [-1], keepdims=True)
    first = array_ops.concat([indices[:, :-1], array_ops.zeros_like(indices[:, -1:])], 1)
    return [None, (g - array_ops.gather_nd(sums, first)) * out, None]


register_op("SparseSoftmax", shape=lambda op: op.inputs[1].get_shape(),
            dtype=lambda op: op.inputs[1].dtype, kernel=_sparse_softmax_kernel,
            grad=_sparse_softmax_grad)


def sparse_softmax(sp_input, name=None):
    """The softmax over the last dimension of ``sp_input``, of its present entries only (absent
    ones stay absent, rather than counting as -inf's zeros): a SparseTensor with the same indices.
    """
    sp = _check_sparse(sp_input, "sparse_softmax's sp_input")
    if not sp.dtype.is_floating:
        raise TypeError("sparse_softmax needs floating values, got %s" % sp.dtype.name)
    with sp.graph.name_scope(name or "SparseSoftmax"):   # TF's sm/SparseSoftmax
        values = make_op("SparseSoftmax", _sparse_parts(sp))
    return _sparse_out(sp.indices, values, sp.dense_shape, sp.get_shape())


__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "sparse_placeholder",
    "sparse_tensor_to_dense",
    "sparse_segment_sum",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "sparse_tensor_dense_matmul",
    "sparse_reduce_sum",
    "sparse_reduce_sum_sparse",
    "sparse_reduce_max",
    "sparse_reduce_max_sparse",
    "sparse_add",
    "sparse_maximum",
    "sparse_minimum",
    "sparse_concat",
    "sparse_reshape",
    "sparse_retain",
    "sparse_fill_empty_rows",
    "sparse_split",
    "sparse_slice",
    "sparse_transpose",
    "sparse_reorder",
    "sparse_merge",
    "sparse_to_indicator",
    "sparse_softmax",
]
