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
from zps.ops.op_util import make_op


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

    def get_shape(self):
        """The static dense shape (dims known when ``dense_shape`` folds to constants)."""
        value = constant_value(self._dense_shape)
        if value is not None:
            return TensorShape([int(d) for d in np.asarray(value).ravel()])
        rank = self._dense_shape.get_shape()[0].value
        return unknown_shape(rank) if rank is not None else unknown_shape()

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
        if (idx < 0).any() or (idx >= np.asarray(shape, dtype=idx.dtype)).any():
            raise errors.InvalidArgumentError(
                None, None, "sparse index out of bounds for dense shape %s" % [int(d) for d in shape])
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


def sparse_tensor_to_dense(sp_input, default_value=0, validate_indices=True, name=None):
    """The dense tensor of ``sp_input`` (absent entries are ``default_value``)."""
    sp = _check_sparse(sp_input, "sparse_tensor_to_dense's sp_input")
    default = convert_to_tensor(default_value, dtype=sp.dtype)
    return make_op("SparseToDense", [sp.indices, sp.dense_shape, sp.values, default],
                   name=name or "SparseToDense")


# -- sparse segment reductions -------------------------------------------------------------------
def _segment_rows(ctx, data, indices, segment_ids):
    """``(out, counts)``: the row sums of each segment and how many rows each segment got."""
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
    out = xp.zeros((num,) + data.shape[1:], dtype=data.dtype)
    xp.add.at(out, segment_ids, data[indices])
    counts = xp.bincount(segment_ids, minlength=num).astype(data.dtype)
    return out, counts.reshape((num,) + (1,) * (data.ndim - 1))


def _sparse_segment_sum_kernel(ctx, data, indices, segment_ids):
    return _segment_rows(ctx, data, indices, segment_ids)[0]


def _sparse_segment_mean_kernel(ctx, data, indices, segment_ids):
    out, counts = _segment_rows(ctx, data, indices, segment_ids)
    out /= ctx.xp.maximum(counts, 1)
    return out


def _sparse_segment_sqrt_n_kernel(ctx, data, indices, segment_ids):
    out, counts = _segment_rows(ctx, data, indices, segment_ids)
    out /= ctx.xp.sqrt(ctx.xp.maximum(counts, 1))
    return out


def _segment_shape(op):
    data = op.inputs[0].get_shape()
    if data.ndims is None:
        return unknown_shape()
    if data.ndims == 0:
        raise ValueError("sparse segment reduction needs data of rank >= 1, got a scalar (op '%s')"
                         % op.name)
    return TensorShape([None] + data.as_list()[1:])


def _segment_grad(scale):
    """Gradient of a sparse segment reduction whose segment ``s`` is scaled by ``scale(count_s)``:
    ``d data[indices[j]] += scale(count) * grad[segment_ids[j]]`` (built from graph ops)."""
    def grad_fn(op, grad):
        data, indices, segment_ids = op.inputs
        rows = array_ops.gather(grad, segment_ids)
        if scale is not None:
            ones = array_ops.ones_like(segment_ids, dtype=grad.dtype)
            counts = array_ops.unsorted_segment_sum(ones, segment_ids, array_ops.shape(grad)[0])
            per_row = array_ops.gather(scale(math_ops.maximum(counts, 1.0)), segment_ids)
            rank = grad.get_shape().ndims
            if rank is None:
                raise ValueError("The gradient of %s needs data of known rank" % op.name)
            rows = rows * array_ops.reshape(per_row, [-1] + [1] * (rank - 1))
        return [array_ops.unsorted_segment_sum(rows, indices, array_ops.shape(data)[0]), None, None]
    return grad_fn


register_op("SparseSegmentSum", shape=_segment_shape, kernel=_sparse_segment_sum_kernel,
            grad=_segment_grad(None))
register_op("SparseSegmentMean", shape=_segment_shape, kernel=_sparse_segment_mean_kernel,
            grad=_segment_grad(math_ops.reciprocal))
register_op("SparseSegmentSqrtN", shape=_segment_shape, kernel=_sparse_segment_sqrt_n_kernel,
            grad=_segment_grad(math_ops.rsqrt))


def _segment_op(op_type, data, indices, segment_ids, name):
    data = convert_to_tensor(data)
    if not data.dtype.is_floating:
        raise TypeError("%s needs floating data, got %s (%s)" % (op_type, data.dtype.name, data.name))
    indices = convert_to_tensor(indices, preferred_dtype=_dtypes.int32)
    segment_ids = convert_to_tensor(segment_ids, preferred_dtype=_dtypes.int32)
    for t, what in ((indices, "indices"), (segment_ids, "segment_ids")):
        if not t.dtype.is_integer:
            raise TypeError("%s: %s must be int32 or int64, got %s" % (op_type, what, t.dtype.name))
    return make_op(op_type, [data, indices, segment_ids], name=name or op_type)


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None):
    """``out[s] = sum(data[indices[j]] for j where segment_ids[j] == s)`` (segment_ids sorted)."""
    _no_num_segments(num_segments)
    return _segment_op("SparseSegmentSum", data, indices, segment_ids, name)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None):
    """As ``sparse_segment_sum``, divided by the number of rows of each segment."""
    _no_num_segments(num_segments)
    return _segment_op("SparseSegmentMean", data, indices, segment_ids, name)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None):
    """As ``sparse_segment_sum``, divided by the square root of each segment's row count."""
    _no_num_segments(num_segments)
    return _segment_op("SparseSegmentSqrtN", data, indices, segment_ids, name)


def _no_num_segments(num_segments):
    if num_segments is not None:
        raise NotImplementedError("sparse segment reductions with num_segments are not supported: "
                                  "the output has segment_ids[-1] + 1 rows")


__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "sparse_placeholder",
    "sparse_tensor_to_dense",
    "sparse_segment_sum",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
]
