"""``tf.sort`` and ``tf.argsort``, built as TF builds them: ``top_k`` over the sorted axis
(moved last by a transpose), on negated values for an ascending sort.

``top_k`` puts equal values in index order, so both sorts are stable in either direction (TF's
``argsort(stable=True)`` is the same sort). The values' gradient flows through ``top_k``.
NaNs have no defined place (TF's top_k leaves them anywhere).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant([3, 1, 2, 1])
...     s, i = tf.sort(x, direction="DESCENDING"), tf.argsort(x)
...     print([v.tolist() for v in tf.Session().run([s, i])])
[[3, 2, 1, 1], [1, 3, 2, 0]]
"""

import numpy as np

from zps.framework.constant import constant, constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import array_ops, nn_ops

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _descending(values, axis, return_argsort):
    rank = values.get_shape().ndims
    transposition = None
    if axis != rank - 1:   # swap the axis with the last one (a swap is its own inverse)
        perm = np.r_[np.arange(axis), [rank - 1], np.arange(axis + 1, rank - 1), [axis]]
        transposition = constant(perm.astype(np.int32), name="transposition")
        values = array_ops.transpose(values, transposition)
    k = array_ops.shape(values)[-1]
    top_values, indices = nn_ops.top_k(values, k)
    out = indices if return_argsort else top_values
    return out if transposition is None else array_ops.transpose(out, transposition)


def _ascending(values, axis, return_argsort):
    dtype = values.dtype
    if dtype.is_unsigned:      # max - x reverses the order without overflow
        flip, unflip = (lambda v: dtype.max - v), (lambda v: dtype.max - v)
    elif dtype.is_integer:     # -x - 1 maps min to max: no overflow, order reversed, ties kept
        flip, unflip = (lambda v: -v - 1), (lambda v: -v - 1)
    else:
        flip, unflip = (lambda v: -v), (lambda v: -v)
    out = _descending(flip(values), axis, return_argsort)
    return out if return_argsort else unflip(out)


def _sort_or_argsort(values, axis, direction, return_argsort, default_name, name):
    if direction not in _DIRECTIONS:
        raise ValueError("Argument `direction` should be one of %s. Received: direction=%s"
                         % (", ".join(_DIRECTIONS), direction))
    axis_value = constant_value(axis) if not isinstance(axis, int | np.integer) else axis
    if axis_value is None or np.ndim(axis_value) != 0:
        raise ValueError("Argument `axis` must be a constant scalar. Received: axis=%r" % (axis,))
    axis = int(axis_value)
    with get_default_graph().name_scope(name or default_name):
        values = convert_to_tensor(values, name="values")
        if not (values.dtype.is_integer or values.dtype.is_floating):
            raise TypeError("%s takes numbers, but %s has dtype %s"
                            % (default_name, values.name, values.dtype.name))
        rank = values.get_shape().ndims
        if rank is None:
            raise ValueError("%s needs a tensor of known rank; %s has an unknown shape (give it "
                             "one with set_shape)" % (default_name, values.name))
        if not -rank <= axis < rank:
            raise ValueError("%s: axis %d is out of range for %s of rank %d (shape %s)"
                             % (default_name, axis, values.name, rank, values.get_shape()))
        sort = _ascending if direction == "ASCENDING" else _descending
        return sort(values, axis % rank, return_argsort)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` ("ASCENDING" or "DESCENDING"); differentiable.

    Example: ``tf.sort([[3, 1, 2], [0, 5, 4]], direction="DESCENDING")`` evaluates to
    ``[[3, 2, 1], [5, 4, 0]]``.
    """
    return _sort_or_argsort(values, axis, direction, False, "sort", name)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis``; equal values keep their order
    (``stable`` is accepted for TF's signature: the sort is always stable).

    Example: ``tf.argsort([3, 1, 2, 1], direction="DESCENDING")`` evaluates to ``[0, 2, 1, 3]``.
    """
    return _sort_or_argsort(values, axis, direction, True, "argsort", name)


__all__ = ["argsort", "sort"]
