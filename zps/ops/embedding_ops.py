"""Embedding lookups: ``tf.nn.embedding_lookup``.

A lookup is a ``Gather`` of rows of one table, so its gradient with respect to the table is an
``IndexedSlices`` (only the looked-up rows), which optimizers apply as row updates.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     table = tf.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
...     rows = tf.nn.embedding_lookup(table, [2, 0])
...     print(tf.Session().run(rows).tolist())
[[2.0, 2.0], [0.0, 0.0]]
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import array_ops, clip_ops


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows ``params[ids]`` of an embedding table (a Variable or tensor, or a list of one).

    The result has shape ``ids.shape + params.shape[1:]``. With ``max_norm``, each looked-up
    embedding whose L2 norm exceeds it is scaled down to norm ``max_norm`` (as TF1's
    ``clip_by_norm``). Ids outside ``[0, len(params))`` fail when run (InvalidArgumentError).
    """
    if params is None or isinstance(params, list | tuple) and not params:
        raise ValueError("Need at least one param")
    if isinstance(params, list | tuple):
        if len(params) > 1:
            raise NotImplementedError(
                "embedding_lookup over a list of %d partitioned tables (partition_strategy=%r) is "
                "not supported yet: pass a single table (a Variable or tensor, or a list of one)"
                % (len(params), partition_strategy))
        params = params[0]
    table = convert_to_tensor(params)  # a Variable yields its read snapshot
    ids = convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise TypeError("embedding_lookup: ids must be int32 or int64, got %s (%s)"
                        % (ids.dtype.name, ids.name))
    graph = table.graph
    with graph.name_scope(name or "embedding_lookup") as scope:
        # As TF1: the gather runs where the table lives (no copy of the table crosses tasks).
        with graph.colocate_with(table.op):
            result = _clip(array_ops.gather(table, ids, name=scope), ids, max_norm)
        # The returned tensor carries no colocation constraint of its own.
        return array_ops.identity(result)


def _clip(embeddings, ids, max_norm):
    """Each embedding (the trailing dims after ``ids``'s) clipped to L2 norm ``max_norm``."""
    if max_norm is None:
        return embeddings
    ids_rank, rank = ids.get_shape().ndims, embeddings.get_shape().ndims
    if ids_rank is None or rank is None:
        raise ValueError("embedding_lookup with max_norm needs ids and params of known rank "
                         "(ids %s, params rows %s)" % (ids.get_shape(), embeddings.get_shape()))
    return clip_ops.clip_by_norm(embeddings, max_norm, axes=list(range(ids_rank, rank)))


__all__ = [
    "embedding_lookup",
]
