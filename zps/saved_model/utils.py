"""TensorInfo from a tensor and back (TF1's ``tf.saved_model.utils``).

>>> import zps as tf
>>> with tf.Graph().as_default() as g:
...     x = tf.placeholder(tf.float32, [None, 3], name="x")
...     info = build_tensor_info(x)
...     print(info.name, info.dtype, [d.size for d in info.tensor_shape.dim])
...     print(get_tensor_from_tensor_info(info) is x)
x:0 1 [-1, 3]
True
"""

from zps.framework import graph as _graph
from zps.ops import sparse_ops
from zps.saved_model import meta_graph_pb

__all__ = ["build_tensor_info", "get_tensor_from_tensor_info"]


def build_tensor_info(tensor):
    """The TensorInfo of a Tensor (its name, dtype and static shape) or of a SparseTensor (the
    names of its indices, values and dense_shape tensors, in ``coo_sparse``)."""
    if not isinstance(tensor, _graph.Tensor | sparse_ops.SparseTensor) and not hasattr(
            tensor, "_ref"):   # a Variable: its tensor, as TF1 does
        raise TypeError("build_tensor_info needs a Tensor, SparseTensor or Variable, got %r"
                        % (tensor,))
    shape = tensor.get_shape()
    if shape.dims is None:
        proto_shape = {"unknown_rank": True}
    else:
        proto_shape = {"dim": [{"size": -1 if d is None else int(d)} for d in shape.as_list()]}
    info = meta_graph_pb.TensorInfo(dtype=tensor.dtype.as_datatype_enum, tensor_shape=proto_shape)
    if isinstance(tensor, sparse_ops.SparseTensor):
        info.coo_sparse.values_tensor_name = tensor.values.name
        info.coo_sparse.indices_tensor_name = tensor.indices.name
        info.coo_sparse.dense_shape_tensor_name = tensor.dense_shape.name
    else:
        info.name = tensor.name
    return info


def build_tensor_info_from_op(op):
    """A TensorInfo naming an Operation (dtype DT_INVALID, unknown shape): how a SavedModel's
    init and train ops are kept in signatures."""
    return meta_graph_pb.TensorInfo(name=op.name, dtype=0, tensor_shape={"unknown_rank": True})


def _prepend(name, import_scope):
    return "%s/%s" % (import_scope, name) if import_scope else name


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The Tensor (or SparseTensor) of ``graph`` (default: the default graph) that
    ``tensor_info`` names, its names prefixed with ``import_scope/`` when given.

    KeyError if there is no such tensor; ValueError if the TensorInfo names none.
    """
    graph = graph or _graph.get_default_graph()
    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return graph.get_tensor_by_name(_prepend(tensor_info.name, import_scope))
    if encoding == "coo_sparse":
        coo = tensor_info.coo_sparse
        return sparse_ops.SparseTensor(
            *(graph.get_tensor_by_name(_prepend(n, import_scope)) for n in (
                coo.indices_tensor_name, coo.values_tensor_name, coo.dense_shape_tensor_name)))
    raise ValueError("Invalid TensorInfo.encoding: %s. Expected `coo_sparse`, `composite_tensor`, "
                     "or `name` for a dense tensor." % encoding)


def get_element_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The Operation or Tensor of ``graph`` that ``tensor_info.name`` names (KeyError if none)."""
    graph = graph or _graph.get_default_graph()
    return graph.as_graph_element(_prepend(tensor_info.name, import_scope))
