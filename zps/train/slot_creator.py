"""Slot variables: per-variable optimizer state (momentum accumulators, Adam moments ...).

A slot of variable ``w`` made by optimizer ``Momentum`` is the non-trainable variable
``w/Momentum`` (then ``w/Momentum_1`` ...), with the shape and dtype of ``w`` and placed with
``w`` (``colocate_with``): on a ps the update op, the variable and its slots share one task.

>>> import zps as tf
>>> from zps.train import slot_creator
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, 2.0], name="w")
...     m = slot_creator.create_zeros_slot(w, "Momentum")
...     print(m.op.name, m.op.colocation_groups())
w/Momentum [b'loc:@w']
"""

import contextlib

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.ops import array_ops
from zps.ops.variables import ResourceVariable, SaveSliceInfo, Variable


def constant_fill(value, name):
    """An initializer ``(shape, dtype) -> tensor`` filling ``shape`` with ``value``.

    It builds a Fill op (a scalar and a shape), not a full-size constant, so graphs that carry
    the initializers of large slots stay small when sent to a ps.
    """
    def initializer(shape, dtype=_dtypes.float32, partition_info=None):
        dtype = _dtypes.as_dtype(dtype)
        scalar = np.asarray(value, dtype=dtype.as_numpy_dtype)
        return array_ops.fill([int(d) for d in shape], scalar, name=name)
    return initializer


def _placement(primary, colocate_with_primary):
    if not colocate_with_primary:
        return contextlib.nullcontext()
    return primary.graph.colocate_with(primary)


def _create_slot_var(primary, initial_value, name, validate_shape, dtype=None):
    graph = primary.graph
    # Slot names do not depend on the caller's name scope (TF1 names them from variable scopes);
    # a resource variable's slots are resource variables, a ref variable's ref variables (TF1).
    with graph.name_scope(None):
        slot = Variable(initial_value, name=primary.op.name + "/" + name, trainable=False,
                        validate_shape=validate_shape, dtype=dtype,
                        use_resource=isinstance(primary, ResourceVariable))
    _set_slot_slice_info(primary, slot)
    return slot


def _set_slot_slice_info(primary, slot):
    """A slot of a shard of a partitioned variable is a shard too (TF1's ``_create_slot_var``):
    the slot ``emb/part_1/Adagrad`` is the slice of ``emb/Adagrad`` at ``emb/part_1``'s offset,
    so the Saver saves (and re-shards) optimizer state with its variable. A slot of lower rank
    than its primary takes the leading dimensions; a scalar slot is not sliced."""
    info = primary._get_save_slice_info() if isinstance(primary, Variable) else None
    if info is None:
        return
    # The slot's own name after the primary's, as created (uniquified: "Momentum_1").
    real_slot_name = slot.op.name[len(primary.op.name) + 1:]
    n = slot.get_shape().ndims
    if n is None or n > 0:
        slot._set_save_slice_info(SaveSliceInfo(
            info.full_name + "/" + real_slot_name, list(info.full_shape)[:n],
            list(info.var_offset)[:n], list(info.var_shape)[:n]))


def create_slot(primary, val, name, colocate_with_primary=True):
    """A slot variable for ``primary`` initialized to the tensor ``val``."""
    with _placement(primary, colocate_with_primary):
        return _create_slot_var(primary, val, name, val.get_shape().is_fully_defined())


def create_slot_with_initializer(primary, initializer, shape, dtype, name,
                                 colocate_with_primary=True):
    """A slot variable for ``primary`` of ``shape``/``dtype``, initialized by ``initializer``."""
    dtype = _dtypes.as_dtype(dtype)
    with _placement(primary, colocate_with_primary):
        return _create_slot_var(primary, lambda: initializer(shape, dtype=dtype), name,
                                shape.is_fully_defined(), dtype=dtype)


def create_zeros_slot(primary, name, dtype=None, colocate_with_primary=True):
    """A slot variable for ``primary`` initialized to zeros of its shape (and dtype)."""
    return create_constant_slot(primary, 0, name, dtype, colocate_with_primary, init_name="zeros")


def create_constant_slot(primary, value, name, dtype=None, colocate_with_primary=True,
                         init_name="Const"):
    """A slot variable for ``primary`` filled with the scalar ``value`` (``init_name``: its op)."""
    dtype = primary.dtype.base_dtype if dtype is None else _dtypes.as_dtype(dtype)
    shape = primary.get_shape()
    if shape.is_fully_defined():
        return create_slot_with_initializer(primary, constant_fill(value, init_name), shape, dtype,
                                            name, colocate_with_primary)
    # The shape is only known at run time: fill the shape of the primary's (initialized) value.
    with _placement(primary, colocate_with_primary):
        val = array_ops.fill(array_ops.shape(primary.initialized_value()),
                             np.asarray(value, dtype=dtype.as_numpy_dtype), name=init_name)
    return create_slot(primary, val, name, colocate_with_primary)


__all__ = []
