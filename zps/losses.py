"""``tf.losses``: TF1's loss functions, their weighting and reductions (zps/ops/losses_impl.py)."""

from zps.ops.losses_impl import *  # noqa: F403
