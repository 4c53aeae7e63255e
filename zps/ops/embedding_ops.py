"""Embedding lookups: ``tf.nn.embedding_lookup`` and ``tf.nn.embedding_lookup_sparse``.

A table is one tensor or Variable, or a list of shards (a ``PartitionedVariable`` or a list of
Variables), with TF1's partition strategies: with ``"mod"`` id ``i`` lives in shard ``i % P`` at
row ``i // P``; with ``"div"`` the ids are split into contiguous ranges, the first shards one id
larger when the count does not divide (exactly how partitioners cut a variable, so ``div`` over a
partitioned variable reads it like the unpartitioned one).

How a lookup moves data (zps goes beyond TF1 here): the ids of a call are deduplicated where
they are (``unique``) before anything crosses a task; each shard's ``Gather`` is colocated with
its shard, so a ps receives only the distinct ids it holds and sends back only those rows; the
rows are stitched back in id order and expanded to the ids' shape on the caller's side. The
gradient with respect to each shard is one ``IndexedSlices`` over that shard's distinct looked-up
rows (duplicates already summed), which the optimizers apply as in-place row updates on the ps.
Updates come out as TF1's, but a norm of that gradient (``tf.global_norm``,
``clip_by_global_norm``) is the true gradient's, where TF1's IndexedSlices repeat a row per
occurrence of its id (README: where zps differs from TF1).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     table = tf.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
...     rows = tf.nn.embedding_lookup(table, [2, 0, 2])
...     print(tf.Session().run(rows).tolist())
[[2.0, 2.0], [0.0, 0.0], [2.0, 2.0]]
"""

from zps.framework import dtypes as _dtypes
from zps.framework.graph import convert_to_tensor
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, clip_ops, math_ops, partition_ops, sparse_ops
from zps.ops.partitioned_variables import PartitionedVariable
from zps.ops.variables import Variable


def _shards(params):
    if params is None or isinstance(params, list | tuple) and not params:
        raise ValueError("Need at least one param")
    if isinstance(params, PartitionedVariable):
        return list(params)
    if isinstance(params, list | tuple):
        return [list(p) if isinstance(p, PartitionedVariable) else p for p in params]
    return [params]


def _colocation_op(param):
    """The op a shard's gather is colocated with: the variable itself, else the tensor's op."""
    return param.op if isinstance(param, Variable) else convert_to_tensor(param).op


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows ``params[ids]`` of an embedding table: a tensor or Variable, a list of shards, or a
    PartitionedVariable.

    The result has shape ``ids.shape + params[0].shape[1:]``. ``partition_strategy`` ("mod" or
    "div") says which shard holds which id when there are several (see the module doc). With
    ``max_norm``, each looked-up embedding whose L2 norm exceeds it is scaled down to norm
    ``max_norm`` (TF1's ``clip_by_norm``). Ids outside the table fail when run
    (InvalidArgumentError). A growable hash table (``tf.contrib.embedding.get_hash_embedding``)
    is accepted too: its ids may be any int64.
    """
    hook = getattr(params, "_zps_embedding_lookup", None)
    if hook is not None:
        return hook(ids, max_norm=max_norm, name=name)
    shards = _shards(params)
    if any(isinstance(s, list) for s in shards):
        raise TypeError("embedding_lookup: params must be a table, a list of tables or one "
                        "PartitionedVariable, not a list holding a PartitionedVariable")
    if partition_strategy not in ("mod", "div"):
        raise ValueError("Unrecognized partition strategy: %r (use 'mod' or 'div')"
                         % (partition_strategy,))
    shards = [s if isinstance(s, Variable) else convert_to_tensor(s) for s in shards]
    ids = convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise TypeError("embedding_lookup: ids must be int32 or int64, got %s (%s)"
                        % (ids.dtype.name, ids.name))
    graph = ids.graph
    with graph.name_scope(name or "embedding_lookup") as scope:
        flat_ids = array_ops.reshape(ids, [-1])
        # Deduplicate on the caller's side: each distinct id crosses the wire once, each way.
        unique_ids, idx = partition_ops.unique(flat_ids)
        if len(shards) == 1:
            # As TF1: the gather runs where the table lives (no copy of the table crosses tasks).
            with graph.colocate_with(_colocation_op(shards[0])):
                rows = _clip(array_ops.gather(shards[0], unique_ids), max_norm)
        else:
            rows = _partitioned_gather(shards, unique_ids, partition_strategy, max_norm)
        # The returned tensor carries no colocation constraint: it is made where ids are.
        result = array_ops.gather(rows, idx)
        return _reshape_like_ids(result, rows, ids, shards, scope)


def _partitioned_gather(shards, ids, partition_strategy, max_norm):
    """Rows for the distinct 1-D ``ids`` from ``shards``: partition, gather on each shard's task,
    stitch back in ``ids`` order (TF1's embedding_lookup body)."""
    graph = ids.graph
    num = len(shards)
    if partition_strategy == "mod":
        assignments = ids % num
        new_ids = ids // num
    else:
        sizes = [s.get_shape()[0].value if s.get_shape().ndims else None for s in shards]
        if all(n is not None for n in sizes):
            total = array_ops.constant(sum(sizes), dtype=ids.dtype)
        else:
            total = math_ops.cast(math_ops.add_n([array_ops.shape(s)[0] for s in shards]),
                                  ids.dtype)
        ids_per_partition = total // num
        extras = total % num
        # Ids below extras * (ids_per_partition + 1) are in the first, one-larger shards.
        assignments = math_ops.maximum(ids // (ids_per_partition + 1),
                                       (ids - extras) // ids_per_partition)
        new_ids = array_ops.where(assignments < extras, ids % (ids_per_partition + 1),
                                  (ids - extras) % ids_per_partition)
    assignments = math_ops.cast(assignments, _dtypes.int32)
    gather_ids = partition_ops.dynamic_partition(new_ids, assignments, num)
    positions = partition_ops.dynamic_partition(
        array_ops.range(array_ops.size(ids)), assignments, num)
    partial = []
    for shard, shard_ids in zip(shards, gather_ids):
        with graph.colocate_with(_colocation_op(shard)):
            partial.append(_clip(array_ops.gather(shard, shard_ids), max_norm))
    return partition_ops.dynamic_stitch(positions, partial)


def _reshape_like_ids(result, rows, ids, shards, name):
    """``result`` ([n] + row shape) reshaped to ``ids.shape + row shape``, with static shapes."""
    row_shape = TensorShape(None)
    for s in shards:
        shape = s.get_shape()
        if shape.ndims is not None:
            row_shape = row_shape.merge_with(shape[1:]) if row_shape.ndims is not None \
                else shape[1:]
    ids_shape = ids.get_shape()
    if ids_shape.ndims == 1:
        out = array_ops.identity(result, name=name)
    else:
        dims = array_ops.concat([array_ops.shape(ids), array_ops.shape(rows)[1:]], 0)
        out = array_ops.reshape(result, dims, name=name)
    if ids_shape.ndims is not None and row_shape.ndims is not None:
        out.set_shape(ids_shape.concatenate(row_shape))
    return out


def _clip(embeddings, max_norm):
    """Each row of ``embeddings`` ([n, ...]) clipped to L2 norm ``max_norm``."""
    if max_norm is None:
        return embeddings
    rank = embeddings.get_shape().ndims
    if rank is None:
        raise ValueError("embedding_lookup with max_norm needs params of known rank (rows %s)"
                         % embeddings.get_shape())
    return clip_ops.clip_by_norm(embeddings, max_norm, axes=list(range(1, rank)))


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None):
    """Per row of the SparseTensor ``sp_ids`` ([batch, k] ids), the embeddings of its ids combined
    by ``combiner`` ("mean", the default, "sum" or "sqrtn"), weighted by ``sp_weights`` (a
    SparseTensor with the same indices, or None for weight 1). Returns ``[rows, dim]`` where rows
    is the last row index of ``sp_ids`` plus one (rows without ids are zeros), as TF1.
    """
    if combiner is None:
        combiner = "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum', got %r" % (combiner,))
    if not isinstance(sp_ids, sparse_ops.SparseTensor):
        raise TypeError("sp_ids must be SparseTensor, got %r" % type(sp_ids).__name__)
    if sp_weights is not None and not isinstance(sp_weights, sparse_ops.SparseTensor):
        raise TypeError("sp_weights must be either None or SparseTensor, got %r"
                        % type(sp_weights).__name__)
    graph = sp_ids.graph
    with graph.name_scope(name or "embedding_lookup_sparse"):
        segment_ids = math_ops.cast(sp_ids.indices[:, 0], _dtypes.int32)
        ids, idx = partition_ops.unique(sp_ids.values)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                      max_norm=max_norm)
        if sp_weights is None:
            reduce = {"sum": sparse_ops.sparse_segment_sum, "mean": sparse_ops.sparse_segment_mean,
                      "sqrtn": sparse_ops.sparse_segment_sqrt_n}[combiner]
            return reduce(embeddings, idx, segment_ids, name="embedding_lookup_sparse")
        weights = sp_weights.values
        if weights.dtype != embeddings.dtype:
            weights = math_ops.cast(weights, embeddings.dtype)
        embeddings = array_ops.gather(embeddings, idx)
        rank = embeddings.get_shape().ndims
        if rank is None:
            raise ValueError("embedding_lookup_sparse with weights needs params of known rank")
        weights_b = array_ops.reshape(weights, [-1] + [1] * (rank - 1))
        num_rows = segment_ids[-1] + 1
        total = array_ops.unsorted_segment_sum(embeddings * weights_b, segment_ids, num_rows)
        if combiner == "sum":
            return array_ops.identity(total, name="embedding_lookup_sparse")
        if combiner == "mean":
            norm = array_ops.unsorted_segment_sum(weights, segment_ids, num_rows)
        else:
            norm = math_ops.sqrt(array_ops.unsorted_segment_sum(weights * weights, segment_ids,
                                                                num_rows))
        return math_ops.truediv(total, array_ops.reshape(norm, [-1] + [1] * (rank - 1)),
                                name="embedding_lookup_sparse")


__all__ = [
    "embedding_lookup",
    "embedding_lookup_sparse",
]
