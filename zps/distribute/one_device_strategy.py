"""``tf.distribute.OneDeviceStrategy``: everything on one device, one replica (TF 1.15's)."""

from zps import nest
from zps.distribute import distribute_lib, input_lib
from zps.framework.device import canonical_name
from zps.framework.graph import get_default_graph
from zps.ops import array_ops


class OneDeviceStrategy(distribute_lib.Strategy):
    """Variables and computation on ``device`` (e.g. "/cpu:0", "/gpu:0"): one replica."""

    def __init__(self, device):
        super().__init__(OneDeviceExtended(self, device))


class OneDeviceExtended(distribute_lib.StrategyExtended):
    """``OneDeviceStrategy.extended``."""

    _num_replicas_in_sync = 1

    def __init__(self, container_strategy, device):
        super().__init__(container_strategy)
        self._device = canonical_name(device)
        self._input_device = canonical_name("/device:CPU:0")

    def _create_variable(self, next_creator, **kwargs):
        graph = get_default_graph()
        colocate_with = kwargs.pop("colocate_with", None)
        if colocate_with is None:
            with graph.device(self._device):
                return next_creator(**kwargs)
        with graph.colocate_with(colocate_with):
            return next_creator(**kwargs)

    def _iterator_over(self, dataset):
        return input_lib.DistributedIterator(dataset, self, (self._device,),
                                             input_device=self._input_device)

    def _make_dataset_iterator(self, dataset):
        return self._iterator_over(dataset)

    def _make_input_fn_iterator(self, input_fn, replication_mode):
        return self._iterator_over(input_fn(distribute_lib.InputContext()))

    def _call_for_each_replica(self, fn, args, kwargs):
        strategy = self._container_strategy()
        with get_default_graph().device(self._device), _OneDeviceReplicaContext(strategy):
            return fn(*args, **kwargs)

    def _reduce_to(self, reduce_op, value, destinations):
        return value

    def _update(self, var, fn, args, kwargs, group):
        graph = get_default_graph()
        with graph.device(self._device), distribute_lib.UpdateContext(self._device):
            result = fn(var, *args, **kwargs)
        return result if group else nest.map_structure(self._local_results, result)

    def _update_non_slot(self, colocate_with, fn, args, kwargs, group):
        graph = get_default_graph()
        with graph.device(self._device), distribute_lib.UpdateContext(self._device):
            result = fn(*args, **kwargs)
        return result if group else nest.map_structure(self._local_results, result)

    def read_var(self, v):
        return array_ops.identity(v)

    def non_slot_devices(self, var_list):
        return self._device

    @property
    def worker_devices(self):
        return (self._device,)

    @property
    def parameter_devices(self):
        return (self._device,)


class _OneDeviceReplicaContext(distribute_lib.ReplicaContext):
    def __init__(self, strategy):
        super().__init__(strategy, replica_id_in_sync_group=0)

    @property
    def devices(self):
        return self._strategy.extended.worker_devices


__all__ = ["OneDeviceStrategy"]
