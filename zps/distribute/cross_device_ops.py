"""How a strategy combines the replicas' values (TF's cross_device_ops.py).

In zps every implementation reduces the same way: the components are summed (``add_n``; the
rows of IndexedSlices concatenated) on one device, divided by their number for MEAN, and
copied to each destination device. ``HierarchicalCopyAllReduce`` and ``NcclAllReduce`` are
accepted for TF programs and do exactly what ``ReductionToOneDevice`` does (zps has no NCCL).
"""

from zps.distribute import values as values_lib
from zps.distribute.reduce_util import ReduceOp, as_reduce_op
from zps.framework.device import canonical_name
from zps.framework.graph import IndexedSlices, Tensor, get_default_graph
from zps.ops import array_ops, math_ops
from zps.ops.variables import Variable


def get_devices_from(destinations):
    """The devices of ``destinations``: a device string, a list of them, a distributed value
    or variable (its components' devices), a variable or a tensor (its device)."""
    if isinstance(destinations, values_lib.DistributedValues | values_lib.AggregatingVariable):
        return destinations.devices
    if isinstance(destinations, Variable | Tensor):
        return (canonical_name(destinations.device or ""),)
    if isinstance(destinations, str):
        return (canonical_name(destinations),)
    if isinstance(destinations, list | tuple):
        return tuple(canonical_name(d) for d in destinations)
    raise ValueError("destinations can not be %r: give a device string, a list of them, a "
                     "variable or a distributed value" % (destinations,))


def _validate_destinations(destinations):
    """TF's checks (its messages), and zps also takes a list or tuple of device strings."""
    if not isinstance(destinations, values_lib.DistributedValues | Variable | Tensor | str |
                      list | tuple):
        raise ValueError("destinations must be one of a `DistributedValues` object, a tf.Variable "
                         "object, or a device string (or, in zps, a list of device strings); got "
                         "%r" % (destinations,))
    if isinstance(destinations, list | tuple | str) and not destinations:
        raise ValueError("destinations can not be empty")


def aggregate(components, reduce_op, device):
    """The components combined on ``device`` (sum or mean; IndexedSlices: rows concatenated)."""
    graph = get_default_graph()
    n = len(components)
    with graph.colocate_with(None, ignore_existing=True), graph.device(device or None):
        if any(isinstance(c, IndexedSlices) for c in components):
            slices = [c if isinstance(c, IndexedSlices) else _dense_as_slices(c)
                      for c in components]
            vals = array_ops.concat([s.values for s in slices], axis=0)
            idx = array_ops.concat([s.indices for s in slices], axis=0)
            if reduce_op == ReduceOp.MEAN:
                vals = vals / math_ops.cast(n, vals.dtype)
            return IndexedSlices(vals, idx, slices[0].dense_shape)
        total = components[0] if n == 1 else math_ops.add_n(list(components))
        if reduce_op == ReduceOp.MEAN:
            total = total / math_ops.cast(n, total.dtype)
        elif n == 1:
            total = array_ops.identity(total)
        return total


def _dense_as_slices(t):
    shape = array_ops.shape(t)
    return IndexedSlices(t, array_ops.range(shape[0]), shape)


def simple_broadcast(value, destinations):
    """``value`` copied to each device of ``destinations``: a Mirrored value."""
    graph = get_default_graph()
    copies = []
    for d in get_devices_from(destinations):
        with graph.colocate_with(None, ignore_existing=True), graph.device(d or None):
            if isinstance(value, IndexedSlices):
                copies.append(IndexedSlices(array_ops.identity(value.values),
                                            array_ops.identity(value.indices), value.dense_shape))
            else:
                copies.append(array_ops.identity(value))
    return values_lib.Mirrored(copies)


def reduce_non_distributed_value(reduce_op, value, destinations, num_replicas):
    """A value that is not per-replica (the same on every replica): MEAN is the value, SUM
    is allowed only with one replica (TF's rule), 0 stays 0."""
    if isinstance(value, values_lib.DistributedValues):
        raise ValueError("You are passing a `DistributedValue` to "
                         "`reduce_non_distributed_value`, which is not allowed.")
    if not isinstance(value, Tensor | IndexedSlices) and value == 0:
        return 0
    if reduce_op == ReduceOp.MEAN:
        return value
    _validate_destinations(destinations)
    if num_replicas != 1:
        raise ValueError("A non-DistributedValues value %s cannot be reduced with the given "
                         "reduce op %s." % (value, reduce_op))
    return simple_broadcast(value, destinations)


class CrossDeviceOps:
    """The base class of how values are reduced across devices and broadcast to them."""

    def reduce(self, reduce_op, per_replica_value, destinations):
        """``per_replica_value`` combined and copied to ``destinations``: a Mirrored value."""
        reduce_op = as_reduce_op(reduce_op)
        if not isinstance(per_replica_value, values_lib.DistributedValues):
            per_replica_value = values_lib.PerReplica((per_replica_value,))
        _validate_destinations(destinations)
        return self.reduce_implementation(reduce_op, per_replica_value, destinations)

    def batch_reduce(self, reduce_op, value_destination_pairs):
        """``reduce`` of each ``(value, destinations)`` pair: a list of Mirrored values. Every
        destination is checked before anything is added to the graph (as TF)."""
        reduce_op = as_reduce_op(reduce_op)
        pairs = list(value_destination_pairs)
        for _, d in pairs:
            _validate_destinations(d)
        return [self.reduce(reduce_op, v, d) for v, d in pairs]

    def broadcast(self, tensor, destinations):
        """``tensor`` copied to each of ``destinations``: a Mirrored value."""
        _validate_destinations(destinations)
        return simple_broadcast(tensor, destinations)

    def reduce_implementation(self, reduce_op, per_replica_value, destinations):
        raise NotImplementedError("must be implemented in descendants")


class ReductionToOneDevice(CrossDeviceOps):
    """Reduce on one device (``reduce_to_device``, default: the first destination), then copy
    the result to every destination."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn
        super().__init__()

    def reduce_implementation(self, reduce_op, per_replica_value, destinations):
        devices = get_devices_from(destinations)
        device = self.reduce_to_device or devices[0]
        components = values_lib.value_components(per_replica_value)
        if self.accumulation_fn is not None and not any(
                isinstance(c, IndexedSlices) for c in components):
            graph = get_default_graph()
            with graph.colocate_with(None, ignore_existing=True), graph.device(device or None):
                reduced = self.accumulation_fn(list(components))
                if reduce_op == ReduceOp.MEAN:
                    reduced = reduced / math_ops.cast(len(components), reduced.dtype)
        else:
            reduced = aggregate(components, reduce_op, device)
        return simple_broadcast(reduced, destinations)


class HierarchicalCopyAllReduce(ReductionToOneDevice):
    """TF's hierarchical-copy all-reduce; in zps the same as ReductionToOneDevice."""

    def __init__(self, num_packs=1):
        self._num_packs = num_packs
        super().__init__()


class NcclAllReduce(ReductionToOneDevice):
    """TF's NCCL all-reduce; in zps (no NCCL) the same as ReductionToOneDevice."""

    def __init__(self, num_packs=1):
        if num_packs < 0:
            raise ValueError(f"NCCL all-reduce requires num_packs >= 0, but {num_packs} is specified"
                             )
        self._num_packs = num_packs
        super().__init__()


__all__ = ["CrossDeviceOps", "ReductionToOneDevice", "HierarchicalCopyAllReduce",
           "NcclAllReduce"]
