"""``tf.layers``: TF1's functional layers (zps/ops/layers_impl.py)."""

from zps.ops.layers_impl import *  # noqa: F403
