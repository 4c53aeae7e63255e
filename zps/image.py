"""``tf.image``: TF1's image ops, resizing to color adjustments (zps/ops/image_ops.py)."""

from zps.ops.image_ops import *  # noqa: F403
