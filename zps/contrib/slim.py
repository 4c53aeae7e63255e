"""``tf.contrib.slim``: TF1's slim interface — contrib's layers, ``arg_scope``, the variable
helpers and ``slim.learning`` (zps/contrib/learning.py) under one name, as
``slim = tf.contrib.slim`` programs expect.

Not here: ``slim.losses`` and ``slim.metrics`` (contrib's losses and streaming metrics, deprecated
in TF 1.x and taking predictions before labels: a silent swap would train on the wrong loss), and
slim's ``data`` / ``nets`` / ``evaluation``. Use ``tf.losses`` and ``tf.metrics`` (labels first).
"""

from zps.contrib import learning  # noqa: F401 - slim.learning
from zps.contrib.arg_scope import *  # noqa: F403
from zps.contrib.arg_scope import __all__ as _arg_scope_all
from zps.contrib.layers_impl import *  # noqa: F403
from zps.contrib.layers_impl import __all__ as _layers_all
from zps.contrib.variables import *  # noqa: F403
from zps.contrib.variables import __all__ as _variables_all

__all__ = sorted(set(_arg_scope_all) | set(_layers_all) | set(_variables_all) | {"learning"})

_NOT_HERE = {
    "losses": "slim.losses (tf.contrib.losses: deprecated in TF 1.x, predictions before labels) is "
              "not in zps: use tf.losses.*, whose functions take labels first",
    "metrics": "slim.metrics (tf.contrib.metrics' streaming_* functions, predictions before labels) "
               "is not in zps: use tf.metrics.*, whose functions take labels first",
}


def __getattr__(name):
    if name in _NOT_HERE:
        raise AttributeError(_NOT_HERE[name])
    raise AttributeError("module 'tf.contrib.slim' has no attribute %r" % name)
