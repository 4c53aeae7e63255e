"""``_Send`` / ``_Recv``: the ops the partitioner inserts at every edge that crosses tasks, and
``_SendN`` / ``_RecvN`` for a group of such edges whose values are ready together (one key, one
entry in a Tensors message: see ``partition._transfer_groups``).

They are registered here, in the distributed layer, because only this layer knows about tasks:
the kernels call the step's transfer functions (``ctx.extras["send"]``, ``["send_n"]`` /
``["recv"]``) that the worker service installs for each step. Receives are asynchronous: the
executor keeps running other ready ops while it waits, so partitions exchanging tensors in both
directions never deadlock.
"""

from zps.framework import dtypes as _dtypes
from zps.framework import errors as _errors
from zps.framework.registry import register_op
from zps.framework.tensor_shape import as_shape


def _send_kernel(ctx, value, key, dst):
    ctx.extras["send"](dst, key, value)


def _recv_kernel(ctx, done, key, src, dtype, shape, stream_ok=False):
    # stream_ok: the reader takes a large tensor while it streams in (partition._mark_streamable)
    ctx.extras["recv"](src, key, done, stream_ok)


def _send_n_kernel(ctx, *values, key, dst):
    ctx.extras["send_n"](dst, key, values)


def _recv_n_kernel(ctx, done, key, src, dtypes, shapes):
    def received(value):   # a tuple of the group's tensors (rendezvous._deliver), or an error
        if (type(value) is tuple and len(value) == len(dtypes)) or isinstance(value, BaseException):
            done(value)
        else:
            done(_errors.InvalidArgumentError(None, None, "%s sent %s for %r, a group of %d "
                                              "tensors: is it running another version of zps?"
                                              % (src, _describe(value), key, len(dtypes))))

    ctx.extras["recv"](src, key, received, False)


def _describe(value):
    if type(value) is tuple:
        return "a group of %d tensors" % len(value)
    return "one tensor of shape %s" % (getattr(value, "shape", "?"),)


register_op("_Send", kernel=_send_kernel, num_outputs=0, stateful=True, light_ok=True, grad=None)
register_op("_Recv", dtype=lambda op: _dtypes.as_dtype(op._attrs["dtype"]),
            shape=lambda op: as_shape(op._attrs["shape"]), kernel=_recv_kernel,
            stateful=True, light_ok=True, is_async=True, grad=None)
# A group of small transfers between two tasks that become ready together (partition.py): one
# _SendN of all the values, one _RecvN with an output per value, one rendezvous key.
register_op("_SendN", kernel=_send_n_kernel, num_outputs=0, stateful=True, light_ok=True,
            grad=None)
register_op("_RecvN", dtype=lambda op: [_dtypes.as_dtype(d) for d in op._attrs["dtypes"]],
            shape=lambda op: [as_shape(s) for s in op._attrs["shapes"]], kernel=_recv_n_kernel,
            stateful=True, light_ok=True, is_async=True, grad=None)
