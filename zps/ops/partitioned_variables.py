"""Partitioned variables (TF1's partitioned_variables.py): one logical variable stored as shards.

A partitioner ``fn(shape=TensorShape, dtype=DType) -> [partitions per axis]`` given to
``get_variable`` (or a ``variable_scope``) splits a variable along one axis into shards
``<name>/part_0``, ``<name>/part_1`` ... . As TF1, when the axis does not divide evenly the first
shards are one row larger. Each shard is an ordinary Variable placed by the device function in
force, so ``replica_device_setter`` spreads the shards round-robin over the ps tasks. Each shard
carries ``_save_slice_info`` (the full variable's name and shape, and its offset), which the Saver
writes to the checkpoint, so a checkpoint can be restored into any other partitioning.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     v = tf.get_variable("emb", [5, 2], initializer=tf.ones_initializer(),
...                         partitioner=tf.fixed_size_partitioner(2))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         full = sess.run(v.as_tensor())
>>> [s.name for s in v], [s.get_shape().as_list() for s in v], full.shape
(['emb/part_0:0', 'emb/part_1:0'], [[3, 2], [2, 2]], (5, 2))
"""

import math

import numpy as np

from zps.framework import checkpoint_format, errors
from zps.framework import dtypes as _dtypes
from zps.framework.graph import convert_to_tensor, register_tensor_conversion_function
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape
from zps.ops import array_ops, control_flow_ops
from zps.ops.op_util import make_op


# -- partitioners (TF1's exact rules) -------------------------------------------------------------
def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """A partitioner keeping each shard under ``max_shard_bytes`` by splitting along ``axis``
    (each slice of ``axis`` is kept whole; at most ``max_shards`` shards)."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive. "
                         "Currently, max_shard_bytes is %d and bytes_per_string_element is %d"
                         % (max_shard_bytes, bytes_per_string_element))
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, TensorShape):
            raise ValueError("shape is not a TensorShape: %s" % shape)
        if not shape.is_fully_defined():
            raise ValueError("shape is not fully defined: %s" % shape)
        if not isinstance(dtype, _dtypes.DType):
            raise ValueError("dtype is not a DType: %s" % dtype)
        if dtype.base_dtype == _dtypes.string:
            element_size = bytes_per_string_element
        else:
            element_size = dtype.size
        partitions = [1] * shape.ndims
        bytes_per_slice = 1.0 * (shape.num_elements() / shape[axis].value) * element_size
        # How many slices fit on one shard of at most max_shard_bytes (at least one)?
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * shape[axis].value / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions

    return _partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """A partitioner giving each shard at least ``min_slice_size`` bytes, with at most
    ``max_partitions`` shards (along ``axis``)."""
    def _partitioner(shape, dtype):
        if axis >= len(shape):
            raise ValueError("Can not partition variable along axis %d when shape is only %s"
                             % (axis, shape))
        if dtype.base_dtype == _dtypes.string:
            bytes_per_element = bytes_per_string_element
        else:
            bytes_per_element = dtype.size
        total_size_bytes = shape.num_elements() * bytes_per_element
        partitions = total_size_bytes / min_slice_size
        partitions_list = [1] * len(shape)
        # Never more partitions than the shape or max_partitions allows.
        partitions_list[axis] = max(1, min(shape[axis].value, max_partitions,
                                           int(math.ceil(partitions))))
        return partitions_list

    return _partitioner


def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner splitting ``axis`` into ``num_shards`` shards (fewer if the axis is shorter)."""
    def _partitioner(shape, **unused_args):
        partitions_list = [1] * len(shape)
        partitions_list[axis] = min(num_shards, shape[axis].value)
        return partitions_list

    return _partitioner


# -- slicing rules ------------------------------------------------------------------------------
class _PartitionInfo:
    """What an initializer learns about the shard it initializes (TF1's ``_PartitionInfo``)."""

    def __init__(self, full_shape, var_offset):
        if not isinstance(full_shape, list | tuple) or not isinstance(var_offset, list | tuple):
            raise TypeError("full_shape and var_offset must be lists, got %r and %r"
                            % (full_shape, var_offset))
        if len(var_offset) != len(full_shape):
            raise ValueError("Expected equal length, but var_offset is of length %d while "
                             "full_shape is of length %d." % (len(var_offset), len(full_shape)))
        for offset, dim in zip(var_offset, full_shape):
            if offset < 0 or offset >= dim:
                raise ValueError("Expected 0 <= offset < shape but found offset=%s, shape=%s "
                                 "for var_offset=%s, full_shape=%s"
                                 % (offset, dim, var_offset, full_shape))
        self._full_shape = list(full_shape)
        self._var_offset = list(var_offset)

    full_shape = property(lambda self: self._full_shape)
    var_offset = property(lambda self: self._var_offset)

    def single_offset(self, shape):
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self._var_offset[dim]

    def single_slice_dim(self, shape):
        """The one axis along which ``shape`` is a proper slice of the full shape (or None)."""
        if len(shape) != len(self._full_shape):
            raise ValueError("Expected equal length, but received shape=%s of length %d while "
                             "self.full_shape=%s is of length %d."
                             % (shape, len(shape), self._full_shape, len(self._full_shape)))
        dims = [i for i, (s, f) in enumerate(zip(shape, self._full_shape)) if s != f]
        if len(dims) > 1:
            raise ValueError("Cannot use single_slice_dim() with shape=%s and full_shape=%s since "
                             "slice dim could be one of %s" % (shape, self._full_shape, dims))
        return dims[0] if dims else None


def iter_slices(full_shape, num_slices, slice_dim):
    """``(offset, shape)`` of each of ``num_slices`` slices along ``slice_dim``; the first
    ``full_shape[slice_dim] % num_slices`` slices are one larger (TF1's ``_iter_slices``)."""
    num_slices_with_excess = full_shape[slice_dim] % num_slices
    offset = [0] * len(full_shape)
    min_slice_len = full_shape[slice_dim] // num_slices
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = min_slice_len + bool(i < num_slices_with_excess)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


def call_partitioner(partitioner, shape, dtype):
    """The partitions ``partitioner`` chooses for a variable, checked as TF1 checks them."""
    if not shape.is_fully_defined():
        raise ValueError("Shape of a new partitioned variable must be fully defined, but instead "
                         "was %s." % (shape,))
    if shape.ndims < 1:
        raise ValueError("A partitioned Variable must have rank at least 1, shape: %s" % shape)
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, list | tuple):
        raise ValueError("Partitioner must return a sequence, but saw: %s" % (slicing,))
    if len(slicing) != shape.ndims:
        raise ValueError("Partitioner returned a partition list that does not match the "
                         "Variable's rank: %s vs. %s" % (slicing, shape))
    if any(p < 1 for p in slicing):
        raise ValueError("Partitioner returned zero partitions for some axes: %s" % (slicing,))
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError("Can only slice a variable along one dimension: shape: %s, "
                         "partitioning: %s" % (shape, slicing))
    return [int(p) for p in slicing]


def slice_dim_and_num_slices(slicing):
    """``(axis, count)`` of the one partitioned axis (``(0, 1)`` when none is)."""
    for i, num in enumerate(slicing):
        if num > 1:
            return i, num
    return 0, 1


# -- PartitionedVariable -------------------------------------------------------------------------
class PartitionedVariable:
    """A variable stored as shards (TF1's ``PartitionedVariable``): iterate it for the shard
    Variables; ``as_tensor()`` concatenates them. Returned by ``get_variable(partitioner=...)``."""

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, list | tuple) or not variable_list:
            raise ValueError("variable_list is not a list or tuple, or is empty: %r"
                             % (variable_list,))
        if not isinstance(partitions, list | tuple):
            raise TypeError("partitions is not a list or tuple: %s" % (partitions,))
        if not all(p >= 1 for p in partitions):
            raise ValueError("partition values must be positive: %s" % (partitions,))
        if int(np.prod(partitions)) != len(variable_list):
            raise ValueError("%s partitions of %s do not match the %d variables"
                             % (partitions, name, len(variable_list)))
        for v in variable_list:
            if v._get_save_slice_info() is None:
                raise ValueError("All variables must have a save_slice_info available: %s"
                                 % v.name)
        self._name = name
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        # Shards in the order of their offsets along the partitioned axis.
        self._variable_list = sorted(
            variable_list, key=lambda v: v._get_save_slice_info().var_offset)
        self._partitions = list(partitions)
        self._as_tensor = None

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self):
        num_partition_axes = len(self._partition_axes())
        if num_partition_axes > 1:
            raise ValueError("Cannot get a length for %d > 1 partition axes" % num_partition_axes)
        return len(self._variable_list)

    def _partition_axes(self):
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def _concat(self):
        graph = self._variable_list[0].graph
        if len(self._variable_list) == 1:
            with graph.name_scope(None):
                return array_ops.identity(self._variable_list[0], name=self._name)
        axis = self._partition_axes()[0]
        with graph.name_scope(self._name + "/ConcatPartitions/"):
            concat = array_ops.concat([v.value() for v in self._variable_list], axis)
        with graph.name_scope(None):
            return array_ops.identity(concat, name=self._name)

    def as_tensor(self):
        """The full value: the shards concatenated (along the partitioned axis)."""
        with self._variable_list[0].graph.control_dependencies(None):
            return self._concat()

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self.get_shape())
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self):
        return self._shape

    def _get_variable_list(self):
        return self._variable_list

    def get_variable_list(self):
        """The shard Variables, in order along the partitioned axis."""
        return list(self._variable_list)

    def _get_partitions(self):
        return self._partitions

    def _apply_assign_fn(self, assign_fn, value):
        partition_axes = self._partition_axes()
        if len(partition_axes) > 1:
            raise NotImplementedError("Cannot do assign action along more than one dimension: %s. "
                                      "Multi-axis partition assign action is not supported "
                                      % str(partition_axes))
        axis = partition_axes[0]
        size_splits = [v.get_shape()[axis].value for v in self._variable_list]
        parts = array_ops.split(value, size_splits, axis=axis)
        return [assign_fn(v, p) for v, p in zip(self._variable_list, parts)]

    def assign(self, value, use_locking=False, name=None, read_value=True):
        """Assign the full ``value`` (split over the shards); returns an op grouping the assigns."""
        ops = self._apply_assign_fn(
            lambda var, r_value: var.assign(r_value, use_locking=use_locking), value)
        return control_flow_ops.group(*ops, name=name or "assign")

    def __repr__(self):
        return "<zps.PartitionedVariable '%s' shape=%s partitions=%s>" % (
            self._name, self._shape, self._partitions)


def _partitioned_to_tensor(v, dtype=None, name=None):
    if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(v.dtype):
        raise ValueError("Incompatible type conversion requested to type '%s' for variable of type "
                         "'%s' (%s)" % (_dtypes.as_dtype(dtype).name, v.dtype.name, v.name))
    return v.as_tensor()


register_tensor_conversion_function(PartitionedVariable, _partitioned_to_tensor)


# -- RestoreSlice: one region of a (possibly sliced) checkpointed tensor ---------------------------
def _restore_slice_kernel(ctx, prefix, tensor_name, start, shape, dt):
    path = prefix.item() if isinstance(prefix, np.ndarray) else prefix
    path = path.decode("utf-8") if isinstance(path, bytes) else str(path)
    try:
        reader = checkpoint_format.CheckpointReader(path)
        saved = reader.saved_dtype(tensor_name)
        if saved is not None and saved != dt.name:
            raise errors.InvalidArgumentError(
                None, None, "tensor_name = %s; expected dtype %s does not equal original dtype %s "
                "in checkpoint %s" % (tensor_name, dt.name, saved.removeprefix("tf:"), path))
        value = reader.get_slice(tensor_name, list(start), list(shape))
    except FileNotFoundError as e:
        raise errors.NotFoundError(None, None, "Reading checkpoint %s failed: %s" % (path, e)) \
            from e
    return value if ctx.backend == "numpy" else ctx.xp.asarray(value)


register_op("RestoreSlice", dtype=lambda op: op._attrs["dt"],
            shape=lambda op: TensorShape(list(op._attrs["shape"])),
            kernel=_restore_slice_kernel, stateful=True, grad=None)


def restore_slice(prefix, tensor_name, start, shape, dt, name=None):
    """Read the region ``[start, start + shape)`` of ``tensor_name`` from checkpoint ``prefix``,
    whether the checkpoint holds it whole or as slices of a partitioned variable (any slicing)."""
    prefix = convert_to_tensor(prefix, dtype=_dtypes.string)
    start, shape = tuple(int(s) for s in start), tuple(int(s) for s in shape)
    if len(start) != len(shape):
        raise ValueError("restore_slice: start %s and shape %s differ in rank" % (start, shape))
    return make_op("RestoreSlice", [prefix], name=name or "RestoreSlice",
                   tensor_name=str(tensor_name), start=start, shape=shape,
                   dt=_dtypes.as_dtype(dt))


__all__ = [
    "PartitionedVariable",
    "fixed_size_partitioner",
    "min_max_variable_partitioner",
    "variable_axis_size_partitioner",
]
