"""``tf.lookup``: static lookup tables and their initializers (zps/ops/lookup_ops.py)."""

from zps.ops.lookup_ops import *  # noqa: F403
