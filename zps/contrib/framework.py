"""``tf.contrib.framework``: ``arg_scope`` (zps/contrib/arg_scope.py), the variable helpers of
TF1's contrib (zps/contrib/variables.py) and the global-step functions."""

from zps.contrib.arg_scope import *  # noqa: F403
from zps.contrib.arg_scope import __all__ as _arg_scope_all
from zps.contrib.variables import *  # noqa: F403
from zps.contrib.variables import __all__ as _variables_all

__all__ = sorted(set(_arg_scope_all) | set(_variables_all))
