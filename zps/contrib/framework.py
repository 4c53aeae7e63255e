"""``tf.contrib.framework``: aliases used by TF1 programs (e.g. the seed's example trainer)."""

from zps.train.training_util import get_global_step, get_or_create_global_step

__all__ = ["get_global_step", "get_or_create_global_step"]
