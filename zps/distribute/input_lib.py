"""Input for the replicas of a strategy (TF 1.15's input_lib.py, graph mode).

An iterator's ``get_next()`` reads one element of the underlying dataset per replica, on the
worker's input device, one after the other: replica ``i`` takes element ``i`` of each group of
``num_replicas`` consecutive elements (deterministic; elements may differ in shape), and a
last group smaller than the number of replicas ends the input (OutOfRangeError), as TF's
multi-device iterator does when a replica gets no element.

``make_dataset_iterator`` / ``experimental_distribute_dataset`` first re-batch the dataset for
the replicas as TF 1.15's rebatching rewrite does: its ``batch(size)`` (which may be followed by
repeat, shuffle, cache, prefetch or elementwise maps) becomes ``batch(ceil(size /
replicas))``; a size that does not divide is kept only where the batch comes last. An
``input_fn`` dataset (``make_input_fn_iterator``) is read as it is: its batches are
per-replica batches.
"""

import contextlib

from zps import nest
from zps.data.dataset import Dataset
from zps.distribute import values
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, get_default_graph
from zps.ops import array_ops, control_flow_ops

# What may follow the batch of a dataset split among replicas: TF 1.15's rebatch rewrite goes
# through these (repeat/cache/shuffle of whole batches, then split, is what it gives).
_AFTER_BATCH = ("prefetch", "options", "repeat", "cache", "shuffle")


def _batch_of(dataset):
    """The ``batch`` dataset at the end of ``dataset`` (only prefetch, repeat, cache, shuffle
    and elementwise maps may follow it)."""
    d = dataset
    # (zps applies an elementwise map that follows a batch to the batches: look through it)
    while d._kind in _AFTER_BATCH or (d._kind == "map" and d._elementwise):
        d = d._parents[0]
    if d._kind != "batch":
        raise ValueError("Unable to get batched dataset from the input dataset. `batch` "
                         "`map_and_batch` need to be the last operations on the dataset. The "
                         "batch operations can be followed by a prefetch.")
    return d


def split_dataset_batch(dataset, split_batch_by):
    """``dataset`` re-batched for ``split_batch_by`` replicas as TF 1.15's rebatching rewrite
    does: its ``batch(size)`` becomes ``batch(ceil(size / split_batch_by))``."""
    batched = _batch_of(dataset)
    batch_size = constant_value(batched._tensors[0])
    drop_remainder = bool(batched._attrs.get("drop_remainder"))
    if batch_size is None:
        raise ValueError("The batch size of a dataset split among replicas must be a constant")
    batch_size = int(batch_size)
    size = -(-batch_size // split_batch_by)
    if batch_size % split_batch_by:
        # The rewrite changes the steps' batches (ceil(size / n) from the stream of examples):
        # zps does it where the batch is last, and refuses a fixed batch shape it can't keep.
        if drop_remainder or _batch_of_last(dataset) is None:
            raise ValueError(
                "Batch size %s cannot be sharded evenly across replicas %s (with "
                "drop_remainder=True, or followed by repeat/shuffle/cache/map): use a batch "
                "size that divides by the number of replicas" % (batch_size, split_batch_by))
        return batched._parents[0].batch(size)
    # Each batch is split on its own (a short last batch stays whole batches): what the
    # rewrite gives, before what follows the batch.
    is_tuple = isinstance(dataset.output_types, tuple)

    def split(*batch):
        return Dataset.from_tensors(batch if is_tuple else batch[0]).unbatch().batch(
            size, drop_remainder=drop_remainder)

    return dataset.flat_map(split)


def _batch_of_last(dataset):
    # the batch dataset at the end of ``dataset`` when only prefetch/options follow it
    d = dataset
    while d._kind in ("prefetch", "options"):
        d = d._parents[0]
    return d if d._kind == "batch" else None


def _op_of(leaf):
    # the read op of an element's leaf (a SparseTensor's parts come from the same read)
    return leaf.op if isinstance(leaf, Tensor) else leaf.indices.op


def _on_device(leaf):
    return array_ops.identity(leaf) if isinstance(leaf, Tensor) else leaf


class DistributedIterator:
    """An iterator giving each replica its element: ``get_next()`` is a PerReplica structure
    (the plain element with one replica); run ``initialize()`` (or ``initializer``) first."""

    def __init__(self, dataset, extended, devices, input_device="/device:CPU:0"):
        self._devices = tuple(devices)
        self._input_device = input_device
        graph = get_default_graph()
        with graph.device(input_device) if input_device else contextlib.nullcontext():
            self._iterator = dataset.make_initializable_iterator()

    def get_next(self, name=None):
        """Each replica's next element (PerReplica leaves in the element's structure)."""
        graph = get_default_graph()
        if len(self._devices) == 1:
            with graph.device(self._input_device) if self._input_device \
                    else contextlib.nullcontext():
                return self._iterator.get_next(name=name)
        # One read per replica, in replica order (each waits for the one before), so replica i
        # gets element i of each group; elements may differ in shape (a short last batch).
        per_replica = []
        previous = []
        for d in self._devices:
            with graph.device(self._input_device) if self._input_device \
                    else contextlib.nullcontext(), graph.control_dependencies(previous):
                element = self._iterator.get_next(name=name)
            previous = [_op_of(leaf) for leaf in nest.flatten(element)[:1]]
            with graph.device(d):
                per_replica.append(nest.map_structure(_on_device, element))
        return values.regroup(tuple(per_replica))

    def initialize(self):
        """The ops that (re)start the iterator, as a list."""
        return [self._iterator.initializer]

    @property
    def initializer(self):
        """One op that (re)starts the iterator."""
        return control_flow_ops.group(*self.initialize())

    output_types = property(lambda self: self._iterator.output_types)
    output_classes = property(lambda self: self._iterator.output_classes)
    output_shapes = property(lambda self: self._iterator.output_shapes,
                             doc="The shapes of one replica's element.")


class DistributedDataset:
    """A dataset distributed over a strategy's replicas (``experimental_distribute_dataset``):
    its iterators give each replica its part of each batch."""

    def __init__(self, dataset, strategy):
        self._strategy = strategy
        extended = strategy.extended
        n = extended._num_replicas_in_sync
        self._dataset = split_dataset_batch(dataset, n) if n > 1 else dataset

    def make_initializable_iterator(self):
        """A DistributedIterator (run its ``initialize()`` ops first)."""
        return self._strategy.extended._iterator_over(self._dataset)

    def make_one_shot_iterator(self):
        """TF 1.15's ValueError in graph mode: use make_initializable_iterator and run its
        initializer."""
        raise ValueError("Cannot create a one shot iterator. Please use "
                         "`make_initializable_iterator()` instead.")

    def __iter__(self):
        raise RuntimeError("__iter__() is only supported inside of tf.function or when eager "
                           "execution is enabled. In graph mode use make_initializable_iterator()"
                           " and run its initializer.")


__all__ = []
