"""Bitwise ops on integers (``tf.bitwise``): and, or, xor, invert and the shifts.

Shift amounts outside ``[0, bits)`` are clamped into it, as TF's kernels do: ``1 << 8`` in int8
is ``1 << 7 = -128``, and a negative shift is no shift.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.Session().run(tf.bitwise.bitwise_xor([5, 12], [3, 10])).tolist())
[6, 6]
"""

import numpy as np

from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.ops.op_util import broadcast_shape, check_same_dtype, make_op, same_shape, to_tensors


def _clamped_shift(shift):
    def kernel(ctx, x, y):
        bits = 8 * x.dtype.itemsize
        return shift(x, ctx.xp.clip(y, 0, bits - 1).astype(x.dtype, copy=False))
    return kernel


for _op_type, _kernel in (("BitwiseAnd", lambda ctx, x, y: ctx.xp.bitwise_and(x, y)),
                          ("BitwiseOr", lambda ctx, x, y: ctx.xp.bitwise_or(x, y)),
                          ("BitwiseXor", lambda ctx, x, y: ctx.xp.bitwise_xor(x, y)),
                          ("LeftShift", _clamped_shift(np.left_shift)),
                          ("RightShift", _clamped_shift(np.right_shift))):
    register_op(_op_type, shape=broadcast_shape, kernel=_kernel, grad=None)
register_op("Invert", shape=same_shape, kernel=lambda ctx, x: ctx.xp.invert(x), grad=None)


def _check_integer(op_type, t):
    if not t.dtype.is_integer:
        raise TypeError("Value passed to parameter 'x' of %s has DataType %s not in list of "
                        "allowed values: int8, int16, int32, int64, uint8, uint16, uint32, uint64 (%s)"
                        % (op_type, t.dtype.name, t.name))


def _bitwise(op_type, x, y, name):
    x, y = to_tensors(x, y)
    check_same_dtype(op_type, x, y)
    _check_integer(op_type, x)
    return make_op(op_type, [x, y], name=name or op_type)


def bitwise_and(x, y, name=None):
    """``x & y`` elementwise on integers (broadcasting)."""
    return _bitwise("BitwiseAnd", x, y, name)


def bitwise_or(x, y, name=None):
    """``x | y`` elementwise on integers (broadcasting)."""
    return _bitwise("BitwiseOr", x, y, name)


def bitwise_xor(x, y, name=None):
    """``x ^ y`` elementwise on integers (broadcasting)."""
    return _bitwise("BitwiseXor", x, y, name)


def left_shift(x, y, name=None):
    """``x << y`` elementwise (``y`` clamped to ``[0, bits - 1]``; signed values wrap)."""
    return _bitwise("LeftShift", x, y, name)


def right_shift(x, y, name=None):
    """``x >> y`` elementwise, arithmetic for signed types (``y`` clamped to ``[0, bits - 1]``)."""
    return _bitwise("RightShift", x, y, name)


def invert(x, name=None):
    """``~x`` elementwise: every bit flipped (``invert(0)`` is -1 in int32, 255 in uint8,
    65535 in uint16)."""
    x = convert_to_tensor(x)
    _check_integer("Invert", x)
    return make_op("Invert", [x], name=name or "Invert")


__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
