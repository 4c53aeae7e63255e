"""``tf.distribute.experimental``: ParameterServerStrategy and CentralStorageStrategy."""

from zps.distribute.central_storage_strategy import CentralStorageStrategy
from zps.distribute.parameter_server_strategy import ParameterServerStrategy

__all__ = ["CentralStorageStrategy", "ParameterServerStrategy"]
