"""``tf.distribute.experimental.CentralStorageStrategy``: the replicas of one machine compute
on its devices and the variables live in one place (the CPU, or the one device), updated once
with the replicas' combined gradients (TF 1.15's: ParameterServerStrategy, locally)."""

from zps.distribute import distribute_lib
from zps.distribute.parameter_server_strategy import ParameterServerExtended


class CentralStorageStrategy(distribute_lib.Strategy):
    """Replicas on ``compute_devices`` (default: every GPU zps can use, else the CPU),
    variables on ``parameter_device`` (default: the CPU, or the one compute device)."""

    def __init__(self, compute_devices=None, parameter_device=None):
        super().__init__(ParameterServerExtended(self, compute_devices=compute_devices,
                                                 parameter_device=parameter_device))


__all__ = ["CentralStorageStrategy"]
