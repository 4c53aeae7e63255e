"""``tf.debugging``: TF 1.15's namespace of assertions and numeric checks, the same functions as
their top-level names (``tf.debugging.assert_equal is tf.assert_equal``).

>>> import zps as tf
>>> tf.debugging.Assert is tf.Assert, tf.debugging.check_numerics is tf.check_numerics
(True, True)
"""

from zps.ops.check_ops import (
    assert_near,
    assert_proper_iterable,
    assert_rank_at_least,
    assert_rank_in,
    assert_same_float_dtype,
    assert_scalar,
)
from zps.ops.logging_ops import (
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_type,
    check_numerics,
    is_numeric_tensor,
)
from zps.ops.logging_ops import verify_tensor_all_finite as _verify_tensor_all_finite
from zps.ops.math_ops import is_finite, is_inf, is_nan
from zps.ops.nn_ops import _deprecated_alias
from zps.ops.special_math_ops import is_non_decreasing, is_strictly_increasing


def assert_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """``tf.verify_tensor_all_finite`` that also takes TF2's argument names ``x`` and ``message``.

    >>> import zps as tf
    >>> t = tf.debugging.assert_all_finite(x=[1.0, 2.0], message="bad input")
    >>> tf.Session().run(t).tolist()
    [1.0, 2.0]
    """
    return _verify_tensor_all_finite(_deprecated_alias("t", t, "x", x),
                                     _deprecated_alias("msg", msg, "message", message), name)


__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater",
           "assert_greater_equal", "assert_integer", "assert_less", "assert_less_equal",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal",
           "assert_positive", "assert_rank", "assert_type", "check_numerics", "is_finite", "is_inf",
           "is_nan", "is_numeric_tensor",
           "assert_near", "assert_proper_iterable", "assert_rank_at_least", "assert_rank_in",
           "assert_same_float_dtype", "assert_scalar", "is_non_decreasing",
           "is_strictly_increasing"]
