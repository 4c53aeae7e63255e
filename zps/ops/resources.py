"""Resources with an explicit initialized state (TF1's ``tensorflow/python/ops/resources.py``).

A resource is a stateful object that is not a Variable (a hash embedding shard, for instance)
registered as ``(handle, create, is_initialized)``: its handle tensor, the op that initializes it
and a bool op that says whether it is. Shared resources (``tf.GraphKeys.RESOURCES``) are what the
chief initializes or restores; ``MonitoredTrainingSession``'s default ``init_op`` initializes them
and its ``ready_op`` / ``ready_for_local_init_op`` report those that are not, exactly like
uninitialized variables. So a ps task that restarts (its resources come back uninitialized) makes
the model "not ready", and the chief restores it from the checkpoint.

>>> import zps as tf
>>> from zps.ops import resources
>>> from zps.contrib import embedding
>>> with tf.Graph().as_default():
...     table = embedding.get_hash_embedding("emb", 2)
...     with tf.Session() as sess:
...         print(sess.run(resources.report_uninitialized_resources()).tolist())
...         sess.run(resources.initialize_resources(resources.shared_resources()))
...         print(sess.run(resources.report_uninitialized_resources()).tolist())
[b'emb/part_0:0']
[]
"""

import collections

from zps.framework import dtypes as _dtypes
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import array_ops, control_flow_ops, variables  # noqa: F401 - variables: ReportUninitialized
from zps.ops.op_util import make_op

RESOURCES = getattr(GraphKeys, "RESOURCES", "resources")
LOCAL_RESOURCES = getattr(GraphKeys, "LOCAL_RESOURCES", "local_resources")
TABLE_INITIALIZERS = getattr(GraphKeys, "TABLE_INITIALIZERS", "table_initializer")

_Resource = collections.namedtuple("_Resource", ["handle", "create", "is_initialized"])


def register_resource(handle, create_op, is_initialized_op, is_shared=True):
    """Register a resource: ``handle`` its tensor, ``create_op`` the op that initializes it,
    ``is_initialized_op`` a bool scalar. Shared resources go in ``RESOURCES`` (initialized by the
    chief's init_op, or restored), the others in ``LOCAL_RESOURCES`` (every session's
    local_init_op)."""
    get_default_graph().add_to_collection(RESOURCES if is_shared else LOCAL_RESOURCES,
                                          _Resource(handle, create_op, is_initialized_op))


def shared_resources():
    """The resources shared by all sessions of a cluster (``GraphKeys.RESOURCES``)."""
    return get_default_graph().get_collection(RESOURCES)


def local_resources():
    """The resources of each session (``GraphKeys.LOCAL_RESOURCES``)."""
    return get_default_graph().get_collection(LOCAL_RESOURCES)


def report_uninitialized_resources(resource_list=None, name="report_uninitialized_resources"):
    """A 1-D string tensor with the handle names of the uninitialized resources of
    ``resource_list`` (default: shared and local); empty when all are initialized."""
    if resource_list is None:
        resource_list = shared_resources() + local_resources()
    graph = get_default_graph()
    with graph.name_scope(name):
        if not resource_list:
            return array_ops.constant([], dtype=_dtypes.string)
        names = array_ops.constant([r.handle.name for r in resource_list], dtype=_dtypes.string)
        return make_op("ReportUninitialized", [names] + [r.is_initialized for r in resource_list],
                       name="report")


def initialize_resources(resource_list, name="init"):
    """One op that runs the ``create`` op of every resource of ``resource_list``."""
    if resource_list:
        return control_flow_ops.group(*[r.create for r in resource_list], name=name)
    return control_flow_ops.no_op(name=name)


def tables_initializer(name="init_all_tables"):
    """The op that initializes every table of the graph (``GraphKeys.TABLE_INITIALIZERS``; hash
    embedding shards are there too). It is a no-op for tables already initialized or restored.

    >>> import zps as tf
    >>> from zps.contrib import embedding
    >>> from zps.ops.resources import tables_initializer
    >>> with tf.Graph().as_default():
    ...     table = embedding.get_hash_embedding("emb", 2, initializer=0.5)
    ...     rows = embedding.embedding_lookup(table, tf.constant([1, 2], tf.int64))
    ...     with tf.Session() as sess:
    ...         sess.run(tables_initializer())
    ...         print(sess.run(rows).tolist())
    [[0.5, 0.5], [0.5, 0.5]]
    """
    initializers = get_default_graph().get_collection(TABLE_INITIALIZERS)
    if initializers:
        return control_flow_ops.group(*initializers, name=name)
    return control_flow_ops.no_op(name=name)


__all__ = ["tables_initializer"]
