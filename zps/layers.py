"""``tf.layers``: TF1's layers, dense to batch normalization, and the ``Layer`` base class
(zps/ops/layers_impl.py)."""

from zps.ops.layers_impl import *  # noqa: F403
