"""``tf.train``: optimizers, global step, ClusterSpec and Server (savers and monitored sessions later)."""

from zps.distributed.cluster_spec import ClusterSpec  # noqa: F401
from zps.distributed.server import Server  # noqa: F401
from zps.train.adagrad import *  # noqa: F403
from zps.train.adam import *  # noqa: F403
from zps.train.gradient_descent import *  # noqa: F403
from zps.train.learning_rate_decay import *  # noqa: F403
from zps.train.momentum import *  # noqa: F403
from zps.train.optimizer import *  # noqa: F403
from zps.train.rmsprop import *  # noqa: F403
from zps.train.training_util import *  # noqa: F403
