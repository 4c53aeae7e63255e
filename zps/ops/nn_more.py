"""More of ``tf.nn``: ``safe_embedding_lookup_sparse`` (wide & deep models' lookup),
``log_poisson_loss``, ``compute_average_loss``, ``scale_regularization_loss``,
``collapse_repeated`` and ``max_pool_with_argmax``.

``max_pool_with_argmax``'s argmax is TF's flattened index of each maximum,
``((b * height + y) * width + x) * channels + c`` (``b`` only with ``include_batch_in_index``),
the first maximum of a window in row-major order winning ties; its gradient routes each output
gradient to that input position.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.reshape(tf.range(16.0), [1, 4, 4, 1])
...     out, argmax = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
...     o, a = tf.Session().run([out, argmax])
>>> o.ravel().tolist(), a.ravel().tolist()
([5.0, 7.0, 13.0, 15.0], [5, 7, 13, 15])
"""

import math

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, embedding_ops, math_ops, sparse_ops
from zps.ops.op_util import make_op


# -- safe_embedding_lookup_sparse ------------------------------------------------------------------
def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None):
    """``embedding_lookup_sparse`` made safe for real inputs, as TF1: ids < 0 are pruned (and,
    unless ``combiner`` is "sum", ids whose weight is <= 0); an example left without ids gets
    the embedding of ``default_id``, or zeros when it is None. ``sparse_ids`` may have rank > 2
    (``[d0, ..., dn, max_ids]``): the result is ``[d0, ..., dn, dim]``. ``embedding_weights``: a
    variable, a list of shards, or a PartitionedVariable (``partition_strategy`` "div" default).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     table = tf.constant([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    ...     ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([0, 2, -1], tf.int64),
    ...                           [3, 2])
    ...     print(tf.Session().run(tf.nn.safe_embedding_lookup_sparse(table, ids)).tolist())
    [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    """
    if embedding_weights is None:
        raise ValueError("Missing embedding_weights %s." % embedding_weights)
    if not isinstance(embedding_weights, list | tuple):
        embedding_weights = list(embedding_weights) \
            if type(embedding_weights).__name__ == "PartitionedVariable" else [embedding_weights]
    if len(embedding_weights) < 1:
        raise ValueError("Missing embedding_weights %s." % embedding_weights)
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum', got %r" % combiner)
    with get_default_graph().name_scope(name or "embedding_lookup") as scope:
        # Ids of any rank as [prod(leading dims), last dim]: one segment per example.
        original_shape = sparse_ids.dense_shape
        rank = sparse_ids.dense_shape.get_shape()[0].value
        if rank is None:
            raise ValueError("safe_embedding_lookup_sparse needs sparse_ids of a known rank")
        sparse_ids = sparse_ops.sparse_reshape(sparse_ids, array_ops.stack([
            math_ops.reduce_prod(original_shape[:rank - 1]), original_shape[rank - 1]]))
        if sparse_weights is not None:
            sparse_weights = sparse_ops.SparseTensor(sparse_ids.indices, sparse_weights.values,
                                                     sparse_ids.dense_shape)
        keep = math_ops.greater_equal(sparse_ids.values,
                                      array_ops.zeros_like(sparse_ids.values))
        if sparse_weights is not None and combiner != "sum":
            keep = math_ops.logical_and(keep, math_ops.greater(
                sparse_weights.values, array_ops.zeros_like(sparse_weights.values)))
        sparse_ids = sparse_ops.sparse_retain(sparse_ids, keep)
        if sparse_weights is not None:
            sparse_weights = sparse_ops.sparse_retain(sparse_weights, keep)
        sparse_ids, is_row_empty = sparse_ops.sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_ops.sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_ops.embedding_lookup_sparse(
            embedding_weights, sparse_ids, sparse_weights, combiner=combiner,
            partition_strategy=partition_strategy, max_norm=max_norm)
        if default_id is None:
            empty = math_ops.logical_and(array_ops.reshape(is_row_empty, [-1, 1]),
                                         array_ops.ones_like(result, dtype=_dtypes.bool))
            result = array_ops.where(empty, array_ops.zeros_like(result), result)
        final = array_ops.reshape(result, array_ops.concat(
            [math_ops.cast(original_shape[:rank - 1], _dtypes.int32),
             array_ops.shape(result)[1:]], 0), name=scope)
        final.set_shape(TensorShape([None] * (rank - 1)).concatenate(result.get_shape()[1:]))
        return final


# -- losses --------------------------------------------------------------------------------------
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """The negative log-likelihood of ``targets`` under a Poisson of rate ``exp(log_input)``,
    without its constant ``log(targets!)`` unless ``compute_full_loss`` (then Stirling's
    approximation of it, for targets > 1): ``exp(log_input) - log_input * targets``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     loss = tf.nn.log_poisson_loss([2.0], [0.0], compute_full_loss=True)
    ...     print(round(float(tf.Session().run(loss)[0]), 4))   # 1 + (2 log 2 - 2 + log(4 pi) / 2)
    1.6518
    """
    with get_default_graph().name_scope(name or "log_poisson_loss"):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        if not targets.get_shape().is_compatible_with(log_input.get_shape()):
            raise ValueError("`log_input` and `targets` must have the same shape, received "
                             "(%s vs %s)." % (log_input.get_shape(), targets.get_shape()))
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            stirling = targets * math_ops.log(targets) - targets + 0.5 * math_ops.log(
                2 * math.pi * targets)
            zeros = array_ops.zeros_like(targets)
            small = math_ops.logical_and(targets >= zeros, targets <= array_ops.ones_like(targets))
            result += array_ops.where(small, zeros, stirling)
        return result


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The sum of the (weighted) per-example losses divided by ``global_batch_size`` (default:
    the batch's size, zps running one replica per graph); 0 for an empty batch.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     loss = tf.nn.compute_average_loss([1.0, 2.0, 6.0], global_batch_size=6)
    ...     print(float(tf.Session().run(loss)))
    1.5
    """
    per_example_loss = convert_to_tensor(per_example_loss)
    dtype = per_example_loss.dtype
    rank = per_example_loss.get_shape().ndims
    if rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at "
                         "least rank 1. Received per_example_loss=%s with rank 0"
                         % per_example_loss)
    if sample_weight is not None:
        weight = math_ops.cast(convert_to_tensor(sample_weight), dtype)
        w_rank = weight.get_shape().ndims
        if rank is not None and w_rank is not None and w_rank:
            if w_rank == rank + 1:
                weight = array_ops.squeeze(weight, [-1])
            elif w_rank == rank - 1:
                weight = array_ops.expand_dims(weight, -1)
        per_example_loss = per_example_loss * weight
    if global_batch_size is None:
        global_batch_size = array_ops.shape(per_example_loss)[0]
    else:
        size = convert_to_tensor(global_batch_size)
        if size.get_shape().ndims not in (None, 0):
            raise ValueError("global_batch_size must be scalar.")
        if not size.dtype.is_integer:
            raise TypeError("global_batch_size must be an integer.")
        value = constant_value(size)
        if value is not None and np.asarray(value) < 0:
            raise ValueError("global_batch_size must be non-negative.")
    return math_ops.div_no_nan(math_ops.reduce_sum(per_example_loss),
                               math_ops.cast(global_batch_size, dtype))


def scale_regularization_loss(regularization_loss):
    """The summed ``regularization_loss`` scaled by one over the number of replicas in sync (1:
    zps runs one replica per graph)."""
    return math_ops.reduce_sum(convert_to_tensor(regularization_loss))


# -- collapse_repeated -------------------------------------------------------------------------
def _collapse_repeated_kernel(ctx, labels, seq_length):
    batch, maxlen = labels.shape
    lengths = np.minimum(np.asarray(seq_length, np.int64), maxlen)
    keep = np.ones(labels.shape, bool)
    keep[:, 1:] = labels[:, 1:] != labels[:, :-1]
    keep &= np.arange(maxlen)[None, :] < lengths[:, None]
    new_len = keep.sum(axis=1)
    out = np.zeros((batch, int(new_len.max()) if batch else 0), labels.dtype)
    for row in range(batch):
        out[row, :new_len[row]] = labels[row][keep[row]]
    return [out, new_len.astype(seq_length.dtype)]


register_op("CollapseRepeated", num_outputs=2,
            dtype=lambda op: [op.inputs[0].dtype, op.inputs[1].dtype],
            shape=lambda op: [TensorShape([op.inputs[0].get_shape().with_rank(2)[0], None]),
                              op.inputs[1].get_shape()],
            kernels={"numpy": _collapse_repeated_kernel}, grad=None)


def collapse_repeated(labels, seq_length, name=None):
    """Each row of ``labels`` ([batch, max_len], its first ``seq_length`` entries valid) with
    runs of a repeated label merged into one, left-aligned and zero-padded to the longest new
    row: ``(collapsed labels, new lengths)``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     out, lengths = tf.nn.collapse_repeated([[1, 1, 2, 2, 3], [4, 4, 4, 5, 5]], [5, 3])
    ...     o, n = tf.Session().run([out, lengths])
    >>> o.tolist(), n.tolist()
    ([[1, 2, 3], [4, 0, 0]], [3, 1])
    """
    with get_default_graph().name_scope(name or "collapse_repeated_labels"):
        labels = convert_to_tensor(labels, name="labels")
        seq_length = convert_to_tensor(seq_length, name="seq_length")
        out, lengths = make_op("CollapseRepeated", [labels, seq_length])
        return out, lengths


# -- MaxPoolWithArgmax -----------------------------------------------------------------------------
def _pool_geometry(size, k, s, padding):
    if padding == "VALID":
        out = (size - k) // s + 1
        return max(out, 0), 0
    out = -(-size // s)
    pad = max((out - 1) * s + k - size, 0)
    return out, pad // 2


def _max_pool_with_argmax_kernel(ctx, x, ksize, strides, padding, targmax,
                                 include_batch_in_index):
    batch, height, width, channels = x.shape
    oh, pad_top = _pool_geometry(height, ksize[1], strides[1], padding)
    ow, pad_left = _pool_geometry(width, ksize[2], strides[2], padding)
    best = np.full((batch, oh, ow, channels), -np.inf, dtype=np.float64)
    where = np.full(best.shape, -1, dtype=np.int64)
    ys = np.arange(oh) * strides[1] - pad_top
    xs = np.arange(ow) * strides[2] - pad_left
    chans = np.arange(channels)
    for dy in range(ksize[1]):          # row-major over the window: the first maximum wins
        for dx in range(ksize[2]):
            y, xx = ys + dy, xs + dx
            ok = ((y >= 0) & (y < height))[:, None] & ((xx >= 0) & (xx < width))[None, :]
            yc, xc = np.clip(y, 0, height - 1), np.clip(xx, 0, width - 1)
            cand = x[:, yc][:, :, xc].astype(np.float64)
            better = ok[None, :, :, None] & ((cand > best) | (where < 0))
            best = np.where(better, cand, best)
            index = ((yc[:, None] * width + xc[None, :])[None, :, :, None] * channels
                     + chans[None, None, None, :])
            where = np.where(better, index, where)
    if include_batch_in_index:
        where = where + (np.arange(batch) * height * width * channels)[:, None, None, None]
    return [best.astype(x.dtype), where.astype(targmax.as_numpy_dtype)]


def _max_pool_with_argmax_shape(op):
    shape = op.inputs[0].get_shape().with_rank(4)
    ksize, strides, padding = op._attrs["ksize"], op._attrs["strides"], op._attrs["padding"]
    dims = [shape[0].value]
    for i in (1, 2):
        size = shape[i].value
        dims.append(None if size is None else _pool_geometry(size, ksize[i], strides[i],
                                                             padding)[0])
    out = TensorShape(dims + [shape[3].value])
    return [out, out]


def _max_pool_grad_with_argmax_kernel(ctx, x, grad, argmax, include_batch_in_index):
    batch = x.shape[0]
    per_image = x.size // batch if batch else 0
    flat = np.zeros(x.size, dtype=grad.dtype)
    index = argmax.reshape(batch, -1).astype(np.int64)
    if not include_batch_in_index:
        index = index + (np.arange(batch) * per_image)[:, None]
    np.add.at(flat, index.ravel(), grad.reshape(-1))
    return flat.reshape(x.shape)


def _max_pool_with_argmax_grad(op, grad, _):
    return [make_op("MaxPoolGradWithArgmax", [op.inputs[0], grad, op.outputs[1]],
                    include_batch_in_index=op._attrs["include_batch_in_index"])]


register_op("MaxPoolWithArgmax", num_outputs=2,
            dtype=lambda op: [op.inputs[0].dtype, op._attrs["targmax"]],
            shape=_max_pool_with_argmax_shape, kernels={"numpy": _max_pool_with_argmax_kernel},
            grad=_max_pool_with_argmax_grad)
register_op("MaxPoolGradWithArgmax", shape=lambda op: op.inputs[0].get_shape(),
            kernels={"numpy": _max_pool_grad_with_argmax_kernel})


def _four(value, what):
    value = [int(v) for v in (value if isinstance(value, list | tuple) else [value])]
    if len(value) == 1:
        value = [1, value[0], value[0], 1]
    elif len(value) == 2:
        value = [1] + value + [1]
    if len(value) != 4 or value[0] != 1 or value[3] != 1:
        raise ValueError("max_pool_with_argmax: %s must be 1, 2 or 4 ints (with 1 for the batch "
                         "and channels), got %s" % (what, value))
    return tuple(value)


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", Targmax=None,  # noqa: A002,N803 - TF1's names
                         name=None, output_dtype=None, include_batch_in_index=False):
    """Max pooling of the NHWC ``input`` and the flattened index of each maximum:
    ``(output, argmax)`` (``argmax`` int64 unless ``Targmax``/``output_dtype`` says int32)."""
    if data_format != "NHWC":
        raise ValueError("max_pool_with_argmax supports only data_format 'NHWC', got %r"
                         % data_format)
    if padding not in ("SAME", "VALID"):
        raise ValueError("padding must be 'SAME' or 'VALID', got %r" % (padding,))
    if Targmax is not None and output_dtype is not None and \
            _dtypes.as_dtype(Targmax) != _dtypes.as_dtype(output_dtype):
        raise ValueError("Targmax and output_dtype differ (%s, %s): give one of them"
                         % (Targmax, output_dtype))
    targmax = _dtypes.as_dtype(Targmax or output_dtype or _dtypes.int64)
    if targmax not in (_dtypes.int32, _dtypes.int64):
        raise ValueError("max_pool_with_argmax: the argmax dtype must be int32 or int64, got %s"
                         % targmax.name)
    x = convert_to_tensor(input, name="input")
    out, argmax = make_op("MaxPoolWithArgmax", [x], name=name or "MaxPoolWithArgmax",
                          ksize=_four(ksize, "ksize"), strides=_four(strides, "strides"),
                          padding=padding, targmax=targmax,
                          include_batch_in_index=bool(include_batch_in_index))
    return out, argmax


__all__ = ["safe_embedding_lookup_sparse", "log_poisson_loss", "compute_average_loss",
           "scale_regularization_loss", "collapse_repeated", "max_pool_with_argmax"]
