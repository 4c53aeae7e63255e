"""``tf.distribute.MirroredStrategy``: synchronous training on the devices of one machine
(TF 1.15's, graph mode, in-graph).

Each variable made in ``scope()`` is a MirroredVariable with a copy on every device; a replica
function runs once per device; the optimizer sums the replicas' gradients (CrossDeviceOps,
``ReductionToOneDevice`` by default) and applies the sum to every copy. Default devices: every
GPU zps can use (cupy), else the CPU.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
...     with s.scope():
...         w = tf.Variable([1.0, 1.0], name="w")
...         x = s.experimental_run_v2(lambda: w * tf.cast(
...             tf.distribute.get_replica_context().replica_id_in_sync_group + 1, tf.float32))
...         total = s.reduce(tf.distribute.ReduceOp.SUM, x)
...     with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
...         sess.run(tf.global_variables_initializer())
...         print(s.num_replicas_in_sync, sess.run(total))
2 [3. 3.]
"""

from zps.distribute import cross_device_ops as cdo
from zps.distribute import distribute_lib, input_lib, mirrored_run, values
from zps.framework.device import canonical_name, visible_gpu_count
from zps.framework.graph import get_default_graph
from zps.ops import array_ops


def default_devices():
    """Every GPU zps can use (cupy), else the CPU."""
    n = visible_gpu_count()
    return tuple("/device:GPU:%d" % i for i in range(n)) if n else ("/device:CPU:0",)


class MirroredStrategy(distribute_lib.Strategy):
    """Synchronous replicas on the devices of this machine, variables mirrored on each.

    ``devices``: device strings (default: every GPU zps can use, else the CPU);
    ``cross_device_ops``: how gradients are combined (default ReductionToOneDevice).
    """

    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__(MirroredExtended(self, devices, cross_device_ops))


class MirroredExtended(distribute_lib.StrategyExtended):
    """``MirroredStrategy.extended``."""

    def __init__(self, container_strategy, devices=None, cross_device_ops=None):
        super().__init__(container_strategy)
        devices = default_devices() if devices is None else devices
        if isinstance(devices, str):
            devices = (devices,)
        if not devices:
            raise ValueError("Got an empty `devices` list. Please make sure the `devices` you "
                             "pass in is not empty.")
        canonical = tuple(canonical_name(d) for d in devices)
        if len(set(canonical)) != len(canonical):
            raise ValueError("No duplicates allowed in `devices` argument: %s" % (devices,))
        if any(d.startswith("/job:") for d in canonical):
            raise ValueError("zps's MirroredStrategy runs on the devices of one machine; for "
                             "several machines use tf.distribute.experimental."
                             "ParameterServerStrategy")
        self._devices = canonical
        self._cross_device_ops = cross_device_ops
        self._inferred_cross_device_ops = cdo.ReductionToOneDevice()

    _num_replicas_in_sync = property(lambda self: len(self._devices))

    def _get_cross_device_ops(self):
        return self._cross_device_ops or self._inferred_cross_device_ops

    # -- variables ------------------------------------------------------------------------------
    def _create_variable(self, next_creator, **kwargs):
        colocate_with = kwargs.pop("colocate_with", None)
        if colocate_with is None:
            devices = self._devices
        else:
            devices = cdo.get_devices_from(colocate_with)
        return values.create_mirrored_variable(self._container_strategy(), devices,
                                               next_creator, kwargs)

    # -- input ------------------------------------------------------------------------------------
    def _iterator_over(self, dataset):
        return input_lib.DistributedIterator(dataset, self, self._devices)

    def _make_dataset_iterator(self, dataset):
        n = len(self._devices)
        return self._iterator_over(input_lib.split_dataset_batch(dataset, n) if n > 1
                                   else dataset)

    def _make_input_fn_iterator(self, input_fn, replication_mode):
        ctx = distribute_lib.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                          num_replicas_in_sync=self._num_replicas_in_sync)
        return self._iterator_over(input_fn(ctx))

    # -- replicas, reductions, updates ------------------------------------------------------------
    def _call_for_each_replica(self, fn, args, kwargs):
        return mirrored_run.call_for_each_replica(self._container_strategy(), fn, args, kwargs)

    def _reduce_to(self, reduce_op, value, destinations):
        if isinstance(value, values.Mirrored) and reduce_op == distribute_lib.ReduceOp.MEAN:
            return value
        if not isinstance(value, values.DistributedValues):
            return cdo.reduce_non_distributed_value(reduce_op, value, destinations,
                                                    self._num_replicas_in_sync)
        return self._get_cross_device_ops().reduce(reduce_op, value, destinations=destinations)

    def _broadcast_to(self, tensor, destinations):
        if isinstance(tensor, float | int):
            return tensor
        return self._get_cross_device_ops().broadcast(tensor, destinations)

    def _update(self, var, fn, args, kwargs, group):
        if not isinstance(var, values.DistributedVariable):
            return _update_plain(self, var, fn, args, kwargs, group)
        graph = get_default_graph()
        updates = []
        for i, (d, v) in enumerate(zip(var.devices, var.values)):
            with graph.device(d), distribute_lib.UpdateContext(d), \
                    graph.name_scope("update_%d" % i):
                updates.append(fn(v, *values.select_device_mirrored(d, args),
                                  **values.select_device_mirrored(d, kwargs)))
        return self._regroup_update(updates, group)

    def _update_non_slot(self, colocate_with, fn, args, kwargs, group):
        graph = get_default_graph()
        updates = []
        for i, d in enumerate(colocate_with):
            with graph.device(d), distribute_lib.UpdateContext(d), \
                    graph.name_scope("update_%d" % i):
                updates.append(fn(*values.select_device_mirrored(d, args),
                                  **values.select_device_mirrored(d, kwargs)))
        return self._regroup_update(updates, group)

    def read_var(self, v):
        """A read of ``v``: its primary (a SyncOnReadVariable: the aggregate of its copies)."""
        if isinstance(v, values.SyncOnReadVariable):
            return array_ops.identity(v._cross_replica_value())
        if isinstance(v, values.DistributedVariable):
            return array_ops.identity(v.primary)
        return array_ops.identity(v)

    def non_slot_devices(self, var_list):
        return self._devices

    @property
    def worker_devices(self):
        return self._devices

    @property
    def parameter_devices(self):
        return self._devices


def _update_plain(extended, var, fn, args, kwargs, group):
    """An update of a variable that is not distributed (made outside the scope)."""
    from zps import nest
    graph = get_default_graph()
    with graph.colocate_with(var), distribute_lib.UpdateContext(var.device):
        result = fn(var, *values.select_device_mirrored(canonical_name(var.device), args),
                    **values.select_device_mirrored(canonical_name(var.device), kwargs))
    return result if group else nest.map_structure(extended._local_results, result)


__all__ = ["MirroredStrategy"]
