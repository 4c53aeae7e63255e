"""``tf.train``: optimizers, global step, and (later) servers, savers and monitored sessions."""

from zps.train.adagrad import *  # noqa: F403
from zps.train.adam import *  # noqa: F403
from zps.train.gradient_descent import *  # noqa: F403
from zps.train.learning_rate_decay import *  # noqa: F403
from zps.train.momentum import *  # noqa: F403
from zps.train.optimizer import *  # noqa: F403
from zps.train.rmsprop import *  # noqa: F403
from zps.train.training_util import *  # noqa: F403
