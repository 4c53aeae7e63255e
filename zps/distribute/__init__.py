"""``tf.distribute`` (TF 1.15, graph mode): strategies that run a model on several devices or
machines, their contexts and distributed values; and the cluster resolvers (TF_CONFIG as
Kubernetes operators set it, Slurm).

Modules: distribute_lib (contexts, Strategy, StrategyExtended, ReplicaContext), values
(PerReplica, Mirrored, MirroredVariable, SyncOnReadVariable, AggregatingVariable),
reduce_util (ReduceOp), cross_device_ops, mirrored_run (the replica threads), input_lib,
and one module per strategy. MultiWorkerMirroredStrategy and TPUStrategy are not in zps.
"""

from zps.distribute import experimental
from zps.distribute.cross_device_ops import (
    CrossDeviceOps,
    HierarchicalCopyAllReduce,
    NcclAllReduce,
    ReductionToOneDevice,
)
from zps.distribute.distribute_lib import (
    InputContext,
    InputReplicationMode,
    ReplicaContext,
    Strategy,
    StrategyExtended,
    get_loss_reduction,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
)
from zps.distribute.mirrored_strategy import MirroredStrategy
from zps.distribute.one_device_strategy import OneDeviceStrategy
from zps.distribute.reduce_util import ReduceOp
from zps.distributed import resolvers as cluster_resolver

__all__ = [
    "cluster_resolver", "experimental",
    "CrossDeviceOps", "HierarchicalCopyAllReduce", "NcclAllReduce", "ReductionToOneDevice",
    "InputContext", "InputReplicationMode", "ReplicaContext", "Strategy", "StrategyExtended",
    "get_loss_reduction", "get_replica_context", "get_strategy", "has_strategy",
    "in_cross_replica_context", "MirroredStrategy", "OneDeviceStrategy", "ReduceOp",
]
