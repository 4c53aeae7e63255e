"""More of TF 1.15's assertions (``tf.assert_*``, ``tf.debugging.assert_*``): scalar and rank
checks, closeness, float dtypes and proper iterables. Static facts are checked when the graph
is built (ValueError/TypeError); the rest becomes an Assert op, as in TF1.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.assert_scalar(tf.constant(3))
...     print(tf.Session().run(x))
3
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph
from zps.ops import array_ops, control_flow_ops, math_ops
from zps.ops.logging_ops import Assert, _message_prefix


def assert_scalar(tensor, name=None, message=None):
    """``tensor`` itself when its static shape is a scalar; ValueError otherwise (also for an
    unknown rank, as TF1)."""
    with get_default_graph().name_scope(name or "assert_scalar"):
        tensor = convert_to_tensor(tensor, name="tensor")
        shape = tensor.get_shape()
        if shape.ndims != 0:
            raise ValueError("%sExpected scalar shape for %s, saw shape: %s."
                             % (_message_prefix(message), tensor.name, shape))
        return tensor


def _rank_check(x, ranks, ok, what, data, summarize, message, name):
    """A no-op when x's static rank satisfies ``ok``, ValueError when it does not, else an
    Assert op on ``ok(rank(x))``."""
    message = _message_prefix(message)
    with get_default_graph().name_scope(name):
        x = convert_to_tensor(x, name="x")
        ndims = x.get_shape().ndims
        if ndims is not None:
            if not ok(ndims):
                raise ValueError("%sTensor %s must have rank %s.  Received rank %d, shape %s"
                                 % (message, x.name, what, ndims, x.get_shape()))
            return control_flow_ops.no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [message, "Tensor %s must have rank %s" % (x.name, what), "Received shape: ",
                    array_ops.shape(x)]
        return Assert(ok(array_ops.rank(x)), data, summarize=summarize)


def _static_ints(value, what):
    value = constant_value(value)
    if value is None:
        raise ValueError("%s must be known when the graph is built (Python ints or a constant)"
                         % what)
    return np.asarray(value).astype(np.int64)


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """Assert ``x`` has rank ``rank`` or more (ValueError now when the rank is known)."""
    r = int(_static_ints(rank, "assert_rank_at_least's rank"))
    return _rank_check(x, r, lambda n: n >= r if isinstance(n, int)
                       else math_ops.greater_equal(n, r), "at least %d" % r, data, summarize,
                       message, name or "assert_rank_at_least")


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """Assert the rank of ``x`` is one of ``ranks`` (ValueError now when the rank is known)."""
    rs = [int(_static_ints(r, "assert_rank_in's ranks")) for r in ranks]

    def ok(n):
        if isinstance(n, int):
            return n in rs
        return math_ops.reduce_any(math_ops.equal(n, rs))
    return _rank_check(x, rs, ok, "in %s" % (tuple(rs),), data, summarize, message,
                       name or "assert_rank_in")


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """Assert ``|x - y| <= atol + rtol * |y|`` elementwise (defaults: 10 * eps of the dtype);
    an Assert op."""
    message = _message_prefix(message)
    with get_default_graph().name_scope(name or "assert_near"):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        eps = np.finfo(x.dtype.as_numpy_dtype).eps
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, dtype=x.dtype, name="rtol")
        atol = convert_to_tensor(10 * eps if atol is None else atol, dtype=x.dtype, name="atol")
        if data is None:
            data = [message, "x and y not equal to tolerance rtol = %s, atol = %s"
                    % (rtol.name, atol.name), "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
        close = math_ops.less_equal(math_ops.abs(x - y), atol + rtol * math_ops.abs(y))
        return Assert(math_ops.reduce_all(close), data, summarize=summarize)


def assert_same_float_dtype(tensors=None, dtype=None):
    """The one float dtype of ``tensors`` (and ``dtype``), float32 when neither gives one;
    ValueError when they differ or are not floats."""
    if tensors:
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        first = None
        for t in tensors:
            t_dtype = t.dtype.base_dtype
            if dtype is None:
                dtype, first = t_dtype, t
            elif t_dtype != dtype:
                raise ValueError("%s, type=%s, must be of the same type (%s)%s."
                                 % (t.name, t_dtype, dtype,
                                    " as %s" % first.name if first is not None else ""))
    if dtype is None:
        return _dtypes.float32
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError("Expected floating point type, got %s." % dtype)
    return dtype


def assert_proper_iterable(values):
    """TypeError unless ``values`` is an iterable of values (not a string, bytes, ndarray or
    tensor, whose iteration is rarely what was meant)."""
    unintentional = (Tensor, np.ndarray, bytes, str)
    if isinstance(values, unintentional) or type(values).__name__ == "SparseTensor":
        raise TypeError('Expected argument "values" to be a "proper" iterable.  Found: %s'
                        % type(values))
    if not hasattr(values, "__iter__"):
        raise TypeError('Expected argument "values" to be iterable.  Found: %s' % type(values))


__all__ = ["assert_near", "assert_proper_iterable", "assert_rank_at_least", "assert_rank_in",
           "assert_same_float_dtype", "assert_scalar"]
