"""``tf.train``: optimizers, servers, device placement, savers, hooks and monitored sessions."""

from zps.distributed.cluster_spec import ClusterSpec  # noqa: F401
from zps.distributed.server import Server  # noqa: F401
from zps.framework.example_pb import *  # noqa: F403 - tf.train.Example and its protos
from zps.graph_util import write_graph  # noqa: F401 - zps's graph_def format
from zps.summary import FileWriterCache as SummaryWriterCache  # noqa: F401 - TF1's tf.train name
from zps.summary import summary_iterator  # noqa: F401 - TF1's tf.train name
from zps.train.adadelta import *  # noqa: F403
from zps.train.adagrad import *  # noqa: F403
from zps.train.adagrad_da import *  # noqa: F403
from zps.train.adam import *  # noqa: F403
from zps.train.basic_loops import *  # noqa: F403
from zps.train.basic_session_run_hooks import *  # noqa: F403
from zps.train.checkpoint_management import *  # noqa: F403
from zps.train.coordinator import *  # noqa: F403
from zps.train.device_setter import *  # noqa: F403
from zps.train.ftrl import *  # noqa: F403
from zps.train.gradient_descent import *  # noqa: F403
from zps.train.input import *  # noqa: F403
from zps.train.learning_rate_decay import *  # noqa: F403
from zps.train.learning_rate_decay import piecewise_constant as piecewise_constant_decay  # noqa: F401
from zps.train.momentum import *  # noqa: F403
from zps.train.monitored_session import *  # noqa: F403
from zps.train.moving_averages import *  # noqa: F403
from zps.train.optimizer import *  # noqa: F403
from zps.train.profiler_hook import *  # noqa: F403
from zps.train.proximal import *  # noqa: F403
from zps.train.queue_runner import *  # noqa: F403
from zps.train.rmsprop import *  # noqa: F403
from zps.train.saver import *  # noqa: F403
from zps.train.session_manager import *  # noqa: F403
from zps.train.session_run_hook import *  # noqa: F403
from zps.train.summary_hook import *  # noqa: F403
from zps.train.supervisor import *  # noqa: F403
from zps.train.sync_replicas_optimizer import *  # noqa: F403
from zps.train.training_util import *  # noqa: F403
from zps.train.warm_starting_util import *  # noqa: F403
