"""``tf.distribute.experimental``: ParameterServerStrategy and CentralStorageStrategy.

TF 1.15's other experimental strategies are not in zps; asking for one says what to use instead:

>>> import zps as tf
>>> try:
...     tf.distribute.experimental.MultiWorkerMirroredStrategy
... except AttributeError as e:
...     print(str(e).split(": ")[0])
zps has no tf.distribute.experimental.MultiWorkerMirroredStrategy (synchronous all-reduce between workers)
"""

from zps.distribute.central_storage_strategy import CentralStorageStrategy
from zps.distribute.parameter_server_strategy import ParameterServerStrategy

_SYNC_OR_ASYNC = ("train synchronously across workers with tf.train.SyncReplicasOptimizer, or "
                  "asynchronously with ParameterServerStrategy")
_NOT_IN_ZPS = {
    "MultiWorkerMirroredStrategy": ("synchronous all-reduce between workers", _SYNC_OR_ASYNC),
    "CollectiveCommunication": ("the collective ops of MultiWorkerMirroredStrategy",
                                _SYNC_OR_ASYNC),
    "TPUStrategy": ("TPUs", "zps runs on CPUs and, through cupy, NVIDIA GPUs: MirroredStrategy"),
}


def __getattr__(name):
    if name not in _NOT_IN_ZPS:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    what, instead = _NOT_IN_ZPS[name]
    raise AttributeError("zps has no tf.distribute.experimental.%s (%s): %s"
                         % (name, what, instead))


__all__ = ["CentralStorageStrategy", "ParameterServerStrategy"]
