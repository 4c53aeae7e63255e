"""Helpers shared by the op families: creating ops from wrappers, and common shape rules."""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape, unknown_shape


def make_op(op_type, inputs, name=None, num_outputs=None, **attrs):
    """Create an op in the graph of its inputs (else the default graph) and return its outputs:
    one Tensor, a list of Tensors, or the Operation itself when it has no outputs."""
    graph = inputs[0].graph if inputs else get_default_graph()
    op = graph.create_op(op_type, list(inputs), attrs, name=name, num_outputs=num_outputs)
    if not op._outputs:
        return op
    return op._outputs[0] if len(op._outputs) == 1 and num_outputs is None else list(op._outputs)


def to_tensors(*values, dtype=None, names=None):
    """Values as tensors: Python/numpy values adopt the first tensor's (or ``dtype``'s) dtype,
    and become constants named ``names[i]`` when given (TF1's ``mul/y``).

    Tensors keep their own dtype, so a mismatch between two tensors is left for the op to report
    (``check_same_dtype`` raises a TypeError naming both dtypes).
    """
    symbolic = [isinstance(v, Tensor) or hasattr(v, "_as_graph_element") for v in values]
    tensors = [convert_to_tensor(v) if s else None for v, s in zip(values, symbolic)]
    if dtype is None:
        dtype = next((t.dtype.base_dtype for t in tensors if t is not None), None)
    if dtype is None:
        arrays = [v for v in values if isinstance(v, np.ndarray | np.generic)]
        if arrays:
            dtype = _dtypes.as_dtype(arrays[0].dtype)
    names = names or [None] * len(values)
    return [t if t is not None else convert_to_tensor(v, dtype=dtype, name=n)
            for v, t, n in zip(values, tensors, names)]


def static_shape_or_none(t):
    """The static shape of ``t`` as a list, or None if the rank is unknown."""
    s = t.get_shape()
    return None if s.ndims is None else s.as_list()


def normalize_axis(axis, ndims, op_name="op"):
    """Axis (int or list, negative allowed) as a sorted tuple of non-negative ints, or None (all)."""
    if axis is None:
        return None
    axes = [int(a) for a in (axis if isinstance(axis, list | tuple | np.ndarray) else [axis])]
    if ndims is None:
        return tuple(axes)
    out = []
    for a in axes:
        if not -ndims <= a < max(ndims, 1):
            raise ValueError("Invalid axis %d for %s of a rank-%d tensor: axis must be in [%d, %d)"
                             % (a, op_name, ndims, -ndims, ndims))
        out.append(a % ndims if ndims else 0)
    return tuple(sorted(set(out)))


def const_axis(axis, what="axis"):
    """A Python value for an axis argument given as Python ints or a constant tensor."""
    if axis is None or isinstance(axis, int | list | tuple | np.integer):
        return axis
    value = constant_value(axis)
    if value is None:
        raise TypeError("%s must be known when the graph is built (a Python int/list or a constant "
                        "tensor); got the computed tensor %s" % (what, getattr(axis, "name", axis)))
    value = np.asarray(value)
    return int(value) if value.ndim == 0 else [int(v) for v in value]


# -- shape rules (fn(op) -> TensorShape | list of TensorShape) -----------------------------------
def same_shape(op):
    return op.inputs[0].get_shape()


def scalar_shape(op):
    return TensorShape([])


def unknown(op):
    return unknown_shape()


def broadcast_static(a, b):
    """numpy broadcasting of two TensorShapes; raises ValueError naming both when incompatible."""
    if a.ndims is None or b.ndims is None:
        return unknown_shape()
    da, db = a.as_list(), b.as_list()
    n = max(len(da), len(db))
    da = [1] * (n - len(da)) + da
    db = [1] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ValueError("Dimensions must be equal or 1, but are %d and %d for shapes %s and %s"
                             % (x, y, a, b))
    return TensorShape(out)


def broadcast_shape(op):
    try:
        return broadcast_static(op.inputs[0].get_shape(), op.inputs[1].get_shape())
    except ValueError as e:
        raise ValueError("%s (op '%s' of type %s)" % (e, op.name, op.type)) from None


def bool_dtype(op):
    return _dtypes.bool


def check_same_dtype(op_type, x, y):
    if x.dtype != y.dtype:
        raise TypeError("Input 'y' of '%s' Op has type %s that does not match type %s of argument "
                        "'x' (%s vs %s). Cast one of them with tf.cast."
                        % (op_type, y.dtype.name, x.dtype.name, x.name, y.name))
