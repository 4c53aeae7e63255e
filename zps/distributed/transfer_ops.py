"""``_Send`` / ``_Recv``: the ops the partitioner inserts at every edge that crosses tasks.

They are registered here, in the distributed layer, because only this layer knows about tasks:
the kernels call the step's transfer functions (``ctx.extras["send"]`` / ``["recv"]``) that the
worker service installs for each step. ``_Recv`` is asynchronous: the executor keeps running other
ready ops while it waits, so partitions exchanging tensors in both directions never deadlock.
"""

from zps.framework import dtypes as _dtypes
from zps.framework.registry import register_op
from zps.framework.tensor_shape import as_shape


def _send_kernel(ctx, value, key, dst):
    ctx.extras["send"](dst, key, value)


def _recv_kernel(ctx, done, key, src, dtype, shape, stream_ok=False):
    # stream_ok: the reader takes a large tensor while it streams in (partition._mark_streamable)
    ctx.extras["recv"](src, key, done, stream_ok)


register_op("_Send", kernel=_send_kernel, num_outputs=0, stateful=True, light_ok=True, grad=None)
register_op("_Recv", dtype=lambda op: _dtypes.as_dtype(op._attrs["dtype"]),
            shape=lambda op: as_shape(op._attrs["shape"]), kernel=_recv_kernel,
            stateful=True, light_ok=True, is_async=True, grad=None)
