"""``tf.train``: optimizers, global step, and (later) servers, savers and monitored sessions."""

from zps.train.optimizer import *  # noqa: F403
