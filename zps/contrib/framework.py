"""``tf.contrib.framework``: ``arg_scope`` (zps/contrib/arg_scope.py), the variable helpers of
TF1's contrib (zps/contrib/variables.py) and the global-step functions, and the initializers
loading vocabulary-remapped checkpoint tensors (zps/ops/checkpoint_ops.py)."""

from zps.contrib.arg_scope import *  # noqa: F403
from zps.contrib.arg_scope import __all__ as _arg_scope_all
from zps.contrib.variables import *  # noqa: F403
from zps.contrib.variables import __all__ as _variables_all
from zps.ops.checkpoint_ops import *  # noqa: F403
from zps.ops.checkpoint_ops import __all__ as _checkpoint_ops_all

__all__ = sorted(set(_arg_scope_all) | set(_variables_all) | set(_checkpoint_ops_all))
