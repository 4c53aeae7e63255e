"""More of ``tf.sparse``: ``bincount``, ``expand_dims``, ``eye``, ``reset_shape``, ``cross``,
``cross_hashed`` and ``tf.sparse.mask`` (TF1's ``tf.sparse_mask``, on IndexedSlices).

``bincount`` follows TF 2.x's ``tf.sparse.bincount`` (the one ``tf.compat.v1.sparse`` has): it
counts into a SparseTensor, one entry per value seen (ids sorted, a weighted count of 0 kept),
either over all values (``axis=0``) or per row (``axis=-1``); its kernels run on the host.
``cross`` joins one feature from each input with a separator; ``cross_hashed`` hashes the same
combinations as TF does (FarmHash ``FingerprintCat64``, see zps/ops/feature_column_ops.py), so its
ids index a trained model's rows alike.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     counts = tf.sparse.bincount(tf.constant([[1, 2, 2], [0, 5, 5]]), axis=-1)
...     v = tf.Session().run(counts)
>>> v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()
([[0, 1], [0, 2], [1, 0], [1, 5]], [1, 2, 1, 2], [2, 6])
"""

import itertools

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import IndexedSlices, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, logging_ops, math_ops
from zps.ops.feature_column_ops import _rows_of_features, sparse_cross_hashed
from zps.ops.op_util import make_op
from zps.ops.sparse_ops import SparseTensor, _check_sparse, _sparse_out


# -- bincount --------------------------------------------------------------------------------------
def _count_kernel(batch_ids, values, weights, num_batches, minlength, maxlength, binary_output,
                  output_type, batched):
    # TF's {Dense,Sparse}CountSparseOutput: per batch row, each value's (weighted) count.
    if values.size and values.min() < 0:
        raise errors.InvalidArgumentError(None, None, "Input values must all be non-negative")
    keep = values < maxlength if maxlength >= 0 else np.ones(values.shape, bool)
    values, batch_ids = values[keep].astype(np.int64), batch_ids[keep]
    max_seen = int(values.max()) if values.size else 0
    size = maxlength if maxlength >= 0 else max(max_seen + 1, minlength)
    keys = batch_ids * max(size, 1) + values
    uniq, inverse = np.unique(keys, return_inverse=True)
    out_dtype = output_type.as_numpy_dtype
    if binary_output:
        counts = np.ones(uniq.shape, out_dtype)
    elif weights is None:
        counts = np.bincount(inverse, minlength=uniq.size).astype(out_dtype)
    else:
        counts = np.zeros(uniq.shape, out_dtype)
        np.add.at(counts, inverse, weights[keep].astype(out_dtype))
    cols = uniq % max(size, 1)
    if batched:
        indices = np.stack([uniq // max(size, 1), cols], axis=1)
        shape = [num_batches, size]
    else:
        indices, shape = cols.reshape(-1, 1), [size]
    return [indices.astype(np.int64), counts, np.array(shape, np.int64)]


def _dense_count_kernel(ctx, values, weights, minlength, maxlength, binary_output, output_type):
    if values.ndim not in (1, 2):
        raise errors.InvalidArgumentError(
            None, None, "Input must be a 1 or 2-dimensional tensor. Got: %s" % list(values.shape))
    if weights.size and weights.shape != values.shape:
        raise errors.InvalidArgumentError(
            None, None, "Weights and values must have the same shape. Weight shape: %s; values "
            "shape: %s" % (list(weights.shape), list(values.shape)))
    batched = values.ndim == 2
    rows = np.repeat(np.arange(values.shape[0]), values.shape[1]) if batched \
        else np.zeros(values.size, np.int64)
    return _count_kernel(rows, values.reshape(-1), weights.reshape(-1) if weights.size else None,
                         values.shape[0] if batched else 1, minlength, maxlength, binary_output,
                         output_type, batched)


def _sparse_count_kernel(ctx, indices, values, dense_shape, weights, minlength, maxlength,
                         binary_output, output_type):
    if weights.size and weights.shape != values.shape:
        raise errors.InvalidArgumentError(
            None, None, "Weights and values must have the same shape. Weight shape: %s; values "
            "shape: %s" % (list(weights.shape), list(values.shape)))
    batched = dense_shape.size > 1
    rows = indices[:, 0] if batched else np.zeros(values.size, np.int64)
    return _count_kernel(rows.astype(np.int64), values, weights if weights.size else None,
                         int(dense_shape[0]) if batched else 1, minlength, maxlength,
                         binary_output, output_type, batched)


def _count_outputs(op):
    # rank 2 (rows, ids) for 2-D dense values or a SparseTensor of rank > 1, else 1
    if op.type == "DenseCountSparseOutput":
        rank = op.inputs[0].get_shape().ndims
    else:
        rank = op.inputs[2].get_shape()[0].value
    rank = None if rank is None else min(max(rank, 1), 2)
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


for _op_type, _kernel in (("DenseCountSparseOutput", _dense_count_kernel),
                          ("SparseCountSparseOutput", _sparse_count_kernel)):
    register_op(_op_type, num_outputs=3, shape=_count_outputs,
                dtype=lambda op: [_dtypes.int64, op._attrs["output_type"], _dtypes.int64],
                kernels={"numpy": _kernel}, grad=None)


def bincount(values, weights=None, axis=0, minlength=None, maxlength=None, binary_output=False,
             name=None):
    """How often each non-negative int appears in ``values`` (a Tensor or a SparseTensor), as a
    SparseTensor: over all values (``axis=0``: ``[size]``) or per row of a 2-D ``values``
    (``axis=-1``: ``[rows, size]``, a SparseTensor's rows being its first index). ``weights``
    (shaped as ``values``, a SparseTensor for a SparseTensor) sum instead of counting;
    ``binary_output`` gives 1 for each value present. ``size`` is ``maxlength`` when given (larger
    values are dropped), else ``max(max value + 1, minlength)``. The counts have the weights'
    dtype, else the values'."""
    with get_default_graph().name_scope(name or "count"):
        is_sparse = isinstance(values, SparseTensor)
        if not is_sparse:
            values = convert_to_tensor(values, name="values")
        if weights is not None and binary_output:
            raise ValueError("Arguments `binary_output` and `weights` are mutually exclusive. "
                             "Please specify only one.")
        if axis is None:
            axis = 0
        if axis not in (0, -1):
            raise ValueError("Unsupported value for argument axis=%s. Only 0 and -1 are "
                             "currently supported." % axis)
        dtype = values.dtype.base_dtype
        if dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError("Value passed to parameter 'values' has DataType %s not in list of "
                            "allowed values: int32, int64" % dtype.name)
        if is_sparse:
            if weights is not None and not isinstance(weights, SparseTensor):
                raise ValueError("Argument `weights` must be a SparseTensor if `values` is a "
                                 "SparseTensor. Received weights=%s" % (weights,))
            weights = None if weights is None else weights.values
        elif weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            if not weights.get_shape().is_compatible_with(values.get_shape()):
                raise ValueError("bincount: weights of shape %s must have the values' shape %s"
                                 % (weights.get_shape(), values.get_shape()))
        attrs = dict(minlength=-1 if minlength is None else int(minlength),
                     maxlength=-1 if maxlength is None else int(maxlength),
                     binary_output=bool(binary_output),
                     output_type=dtype if weights is None else weights.dtype.base_dtype)
        if weights is None:
            weights = array_ops.constant(np.zeros(0, dtype.as_numpy_dtype))
        if axis == 0:
            flat = values.values if is_sparse else array_ops.reshape(values, [-1])
            out = make_op("DenseCountSparseOutput", [flat, array_ops.reshape(weights, [-1])],
                          **attrs)
        elif is_sparse:
            out = make_op("SparseCountSparseOutput",
                          [values.indices, values.values, values.dense_shape, weights], **attrs)
        else:
            out = make_op("DenseCountSparseOutput", [values, weights], **attrs)
        return SparseTensor(*out)


# -- expand_dims, eye, reset_shape (built from other ops) -----------------------------------------
def expand_dims(sp_input, axis=None, name=None):
    """``sp_input`` with a dimension of size 1 inserted at ``axis`` (default -1: last); a
    negative ``axis`` counts from the end of the result (``-1`` appends)."""
    sp = _check_sparse(sp_input, "sparse.expand_dims's sp_input")
    axis = -1 if axis is None else axis
    if not isinstance(axis, int | np.integer):
        raise TypeError("axis must be an integer value in range [-rank(sp_input) - 1, "
                        "rank(sp_input)]")
    rank = sp.get_shape().ndims
    if rank is None:
        raise ValueError("sparse.expand_dims needs sp_input of a known rank")
    if not -rank - 1 <= axis <= rank:
        raise ValueError("axis %d is out of range for a rank-%d SparseTensor: it must be in "
                         "[%d, %d]" % (axis, rank, -rank - 1, rank))
    axis = int(axis) % (rank + 1)
    with sp.graph.name_scope(name or "expand_dims"):
        zeros = array_ops.zeros_like(sp.indices[:, :1])
        indices = array_ops.concat([sp.indices[:, :axis], zeros, sp.indices[:, axis:]], 1)
        shape = array_ops.concat([sp.dense_shape[:axis], array_ops.constant([1], _dtypes.int64,
                                                                            name="new_shape"),
                                  sp.dense_shape[axis:]], 0)
        static = sp.get_shape().as_list()
        return _sparse_out(indices, sp.values, shape,
                           TensorShape(static[:axis] + [1] + static[axis:]))


def eye(num_rows, num_columns=None, dtype=_dtypes.float32, name=None):
    """The ``[num_rows, num_columns]`` (default square) identity matrix as a SparseTensor."""
    with get_default_graph().name_scope(name or "eye"):
        rows = math_ops.cast(convert_to_tensor(num_rows, name="num_rows"), _dtypes.int64)
        cols = rows if num_columns is None else math_ops.cast(
            convert_to_tensor(num_columns, name="num_columns"), _dtypes.int64)
        diag = array_ops.range(math_ops.minimum(rows, cols), dtype=_dtypes.int64)
        values = array_ops.ones_like(diag, dtype=dtype)
        static = [constant_value(t) for t in (rows, cols)]
        return _sparse_out(array_ops.stack([diag, diag], axis=1), values,
                           array_ops.stack([rows, cols]),
                           TensorShape([None if v is None else int(v) for v in static]))


def reset_shape(sp_input, new_shape=None):
    """``sp_input`` with dense shape ``new_shape`` (each dimension at least the old one), or,
    when None, the smallest that holds its indices (``max index + 1`` per dimension)."""
    sp = _check_sparse(sp_input, "sparse.reset_shape's sp_input")
    indices, values = array_ops.identity(sp.indices), array_ops.identity(sp.values)
    in_shape = array_ops.identity(sp.dense_shape)
    if new_shape is None:
        # an empty SparseTensor's reduce_max is the int64 minimum: max with 0 gives shape 0
        shape = math_ops.maximum(math_ops.reduce_max(indices, axis=0) + 1,
                                 array_ops.zeros_like(in_shape))
        return SparseTensor(indices, values, shape)
    shape = math_ops.cast(convert_to_tensor(new_shape), _dtypes.int64)
    shape.get_shape().with_rank(1)
    if not shape.get_shape()[0].is_compatible_with(in_shape.get_shape()[0]):
        raise ValueError("reset_shape: new_shape has %s dimensions, sp_input %s"
                         % (shape.get_shape()[0], in_shape.get_shape()[0]))
    wanted, old = constant_value(shape), sp.get_shape()
    if wanted is not None and old.is_fully_defined():
        if not np.all(np.asarray(old.as_list()) <= np.asarray(wanted)):
            raise ValueError("Requested new_shape should have dimension sizes >= "
                             "sp_input.shape.  Found new_shape (%s), sp_input.shape (%s)."
                             % (np.asarray(wanted), np.asarray(old.as_list())))
        return SparseTensor(indices, values, shape)
    check = logging_ops.assert_less_equal(
        in_shape, shape, message="reset_shape: new_shape must be at least sp_input's shape")
    with get_default_graph().control_dependencies([check]):
        shape = array_ops.identity(shape)
    return _sparse_out(indices, values, shape, None if wanted is None else TensorShape(
        [int(d) for d in np.asarray(wanted).ravel()]))


# -- cross, cross_hashed ---------------------------------------------------------------------------
def _feature_strings(values):
    """Each value as TF's string crosser writes it: a string's bytes, an int in decimal."""
    if values.dtype == object:
        return list(values.tolist())
    return [str(int(v)).encode() for v in values.tolist()]


def _sparse_cross_v2_kernel(ctx, *inputs, num_sparse):
    sparse = [inputs[3 * i:3 * i + 3] for i in range(num_sparse)]
    columns, batch = _rows_of_features(sparse, inputs[3 * num_sparse:-1], _feature_strings)
    separator = inputs[-1].item() if hasattr(inputs[-1], "item") else inputs[-1]
    indices, values, width = [], [], 0
    for row in range(batch):
        crosses = [separator.join(f) for f in itertools.product(*(c[row] for c in columns))]
        indices.extend((row, j) for j in range(len(crosses)))
        values.extend(crosses)
        width = max(width, len(crosses))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return (np.array(indices, dtype=np.int64).reshape(-1, 2), out,
            np.array([batch, width], dtype=np.int64))


register_op("SparseCrossV2", dtype=lambda op: [_dtypes.int64, _dtypes.string, _dtypes.int64],
            shape=lambda op: [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])],
            kernels={"numpy": _sparse_cross_v2_kernel}, num_outputs=3, grad=None)


def _cross_inputs(inputs, what):
    if not isinstance(inputs, list | tuple):
        raise TypeError("Inputs must be a list")
    # TF's order (SparseTensors, then dense tensors); numbers are crossed as int64, as TF casts
    def as_feature(t):
        if t.dtype.base_dtype == _dtypes.string:
            return t
        if not (t.dtype.is_integer or t.dtype.is_floating):
            raise TypeError("%s: inputs must be strings or numbers, got %s (%s)"
                            % (what, t.dtype.name, t.name))
        return math_ops.cast(t, _dtypes.int64)
    sparse = [SparseTensor(t.indices, as_feature(t.values), t.dense_shape)
              for t in inputs if isinstance(t, SparseTensor)]
    dense = [as_feature(convert_to_tensor(t)) for t in inputs if not isinstance(t, SparseTensor)]
    for t in dense:
        t.get_shape().with_rank(2)
    return sparse, dense


def cross(inputs, name=None, separator=None):
    """The string cross of ``inputs`` (SparseTensors and dense ``[batch, k]`` tensors of strings
    or ints; the SparseTensors' features come first): row ``r`` holds one string per combination
    of one feature from each input's row ``r`` (the last input varying fastest), the features
    joined by ``separator`` (default ``"_X_"``), numbers written as decimal int64s (as TF casts
    them).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     a = tf.SparseTensor([[0, 0], [0, 1]], tf.constant(["a", "b"]), [1, 2])
    ...     c = tf.sparse.cross([a, tf.constant([[7]])])
    ...     print(tf.Session().run(c.values).tolist())
    [b'a_X_7', b'b_X_7']
    """
    sparse, dense = _cross_inputs(inputs, "sparse.cross")
    sep = convert_to_tensor("_X_" if separator is None else separator, dtype=_dtypes.string)
    flat = [c for s in sparse for c in (s.indices, s.values, s.dense_shape)] + dense
    indices, values, shape = make_op("SparseCrossV2", flat + [sep], name=name or "SparseCrossV2",
                                     num_sparse=len(sparse))
    return SparseTensor(indices, values, shape)


def cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """The hashed cross of ``inputs``: the combinations ``cross`` makes, each the
    ``FingerprintCat64`` chain (from ``hash_key``, default TF's ``0xDECAFCAFFE``) of its
    features' fingerprints (FarmHash ``Fingerprint64`` of a string; an int as itself), modulo
    ``num_buckets`` (2**63 - 1 when 0): int64 ids, equal to TF's."""
    sparse, dense = _cross_inputs(inputs, "sparse.cross_hashed")
    return sparse_cross_hashed(sparse + dense, num_buckets=num_buckets, hash_key=hash_key,
                               name=name)


# -- mask (IndexedSlices) --------------------------------------------------------------------------
def sparse_mask(a, mask_indices, name=None):
    """The IndexedSlices ``a`` without its slices at the indices ``mask_indices`` (TF1's
    ``tf.sparse_mask``).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     a = tf.IndexedSlices(tf.constant([[1.0], [2.0], [3.0]]), tf.constant([4, 7, 9]))
    ...     m = tf.sparse.mask(a, [7])
    ...     indices, values = tf.Session().run([m.indices, m.values])
    >>> indices.tolist(), values.tolist()
    ([4, 9], [[1.0], [3.0]])
    """
    with get_default_graph().name_scope(name or "sparse_mask") as scope:
        indices = convert_to_tensor(a.indices)
        out_indices, to_gather = array_ops.setdiff1d(indices, mask_indices)
        out_values = array_ops.gather(a.values, to_gather, name=scope)
        return IndexedSlices(out_values, out_indices, a.dense_shape)


__all__ = ["bincount", "expand_dims", "eye", "reset_shape", "cross", "cross_hashed",
           "sparse_mask"]
