"""``tf.metrics``: TF1's streaming metrics (zps/ops/metrics_impl.py)."""

from zps.ops.metrics_impl import *  # noqa: F403
