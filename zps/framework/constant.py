"""Constants: the ``Const`` op, ``constant()`` and static constant folding (``constant_value``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     c = tf.constant([[1, 2], [3, 4]], dtype=tf.float32)
...     print(c.get_shape().as_list(), c.dtype.name, constant_value(c).sum())
[2, 2] float32 10.0
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import graph as _graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape


def _const_kernel(ctx, value, dtype):
    # Folded into the plan's value table by the executor; this runs only on other backends.
    return ctx.xp.asarray(value) if value.dtype != object else value


register_op("Const",
            dtype=lambda op: op._attrs["dtype"],
            shape=lambda op: TensorShape(op._attrs["value"].shape),
            kernel=_const_kernel,
            grad=None)


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A constant tensor from a Python or numpy value, optionally cast and broadcast to ``shape``."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else None
    if isinstance(value, np.ndarray | np.generic) and dt is None:
        dt = _dtypes.as_dtype(value.dtype)
    try:
        arr = _graph.numpy_value(value, dt)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError("Cannot make a %s constant from %r: %s"
                        % (dt.name if dt else "zps", value, e)) from None
    if isinstance(value, np.ndarray) and np.may_share_memory(arr, value):
        arr = arr.copy()  # the constant must not see (or freeze) the caller's array
    if dt is not None and dt is not _dtypes.string and not dt.is_bool:
        _check_lossless(value, arr, dt)
    if shape is not None:
        shape = [int(d) for d in (shape if isinstance(shape, list | tuple) else [shape])]
        if verify_shape and list(arr.shape) != shape:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
        if arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        elif arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shape).copy()
        else:
            raise TypeError("Cannot make a constant of shape %s from %d values"
                            % (shape, arr.size))
    g = _graph.get_default_graph()
    dt = _dtypes.as_dtype(arr.dtype) if dt is None else dt
    arr.flags.writeable = False
    return g.create_op("Const", [], {"value": arr, "dtype": dt}, name=name).outputs[0]


def _check_lossless(value, arr, dt):
    if isinstance(value, np.ndarray | np.generic):
        return  # explicit numpy casts are the caller's choice
    if dt.is_integer:
        src = np.asarray(value)
        if src.dtype.kind == "f" and np.any(src != np.floor(src)):
            raise TypeError("Expected %s, got %r of type float instead: a non-integer value "
                            "would be truncated." % (dt.name, value))


def _constant_for_conversion(value, dtype=None, name=None):
    return constant(value, dtype=dtype, name=name or "Const")


_graph._constant_fn = _constant_for_conversion


# -- static evaluation -------------------------------------------------------------------------
_folders = {}


def register_constant_folder(op_type, fn):
    """``fn(op) -> ndarray or None``: the op's value when it is known at graph-building time."""
    _folders[op_type] = fn


def constant_value(tensor):
    """The value of ``tensor`` if it can be computed without running the graph, else None."""
    if not isinstance(tensor, _graph.Tensor):
        try:
            return np.asarray(tensor)
        except Exception:  # noqa: BLE001 - anything unconvertible simply has no constant value
            return None
    op = tensor.op
    if op.type == "Const":
        return op._attrs["value"]
    fn = _folders.get(op.type)
    if fn is None:
        return None
    try:
        out = fn(op)
    except Exception:  # noqa: BLE001 - folding is best effort: unknown means "not constant"
        return None
    if out is None:
        return None
    return out[tensor.value_index] if isinstance(out, list | tuple) else out
