"""``tf.sparse``: TF 1.15's sparse namespace (the ops of zps.ops.sparse_ops under their
tf.sparse names)."""

from zps.ops.data_flow_ops import SparseConditionalAccumulator
from zps.ops.sparse_more import bincount, cross, cross_hashed, expand_dims, eye, reset_shape
from zps.ops.sparse_more import sparse_mask as mask
from zps.ops.sparse_ops import SparseTensor, from_dense
from zps.ops.sparse_ops import sparse_add as add
from zps.ops.sparse_ops import sparse_concat as concat
from zps.ops.sparse_ops import sparse_fill_empty_rows as fill_empty_rows
from zps.ops.sparse_ops import sparse_maximum as maximum
from zps.ops.sparse_ops import sparse_merge as merge
from zps.ops.sparse_ops import sparse_minimum as minimum
from zps.ops.sparse_ops import sparse_placeholder as placeholder
from zps.ops.sparse_ops import sparse_reduce_max as reduce_max
from zps.ops.sparse_ops import sparse_reduce_max_sparse as reduce_max_sparse
from zps.ops.sparse_ops import sparse_reduce_sum as reduce_sum
from zps.ops.sparse_ops import sparse_reduce_sum_sparse as reduce_sum_sparse
from zps.ops.sparse_ops import sparse_reorder as reorder
from zps.ops.sparse_ops import sparse_reshape as reshape
from zps.ops.sparse_ops import sparse_retain as retain
from zps.ops.sparse_ops import sparse_segment_mean as segment_mean
from zps.ops.sparse_ops import sparse_segment_sqrt_n as segment_sqrt_n
from zps.ops.sparse_ops import sparse_segment_sum as segment_sum
from zps.ops.sparse_ops import sparse_slice as slice  # noqa: A004 - TF's name
from zps.ops.sparse_ops import sparse_softmax as softmax
from zps.ops.sparse_ops import sparse_split as split
from zps.ops.sparse_ops import sparse_tensor_dense_matmul as matmul
from zps.ops.sparse_ops import sparse_tensor_dense_matmul as sparse_dense_matmul
from zps.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from zps.ops.sparse_ops import sparse_to_indicator as to_indicator
from zps.ops.sparse_ops import sparse_transpose as transpose

__all__ = ["SparseConditionalAccumulator", "SparseTensor", "add", "bincount", "concat", "cross",
           "cross_hashed", "expand_dims", "eye", "fill_empty_rows", "from_dense", "mask",
           "matmul", "maximum", "merge", "minimum", "placeholder", "reduce_max",
           "reduce_max_sparse", "reduce_sum", "reduce_sum_sparse", "reorder", "reset_shape",
           "reshape", "retain", "segment_mean", "segment_sqrt_n", "segment_sum", "slice",
           "softmax", "sparse_dense_matmul", "split", "to_dense", "to_indicator", "transpose"]
