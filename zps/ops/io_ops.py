"""Checkpoint I/O ops: each runs on the task it is placed on and touches that task's filesystem.

``SaveShard`` writes the values of some variables as one shard of a checkpoint and outputs a JSON
description of it; ``WriteCheckpointIndex`` takes those descriptions and commits the checkpoint by
writing its index (so the index is always written after every shard); ``RestoreShard`` reads named
tensors of a checkpoint. ``tf.train.Saver`` places one SaveShard/RestoreShard per device, so on a
cluster each ps task writes and reads its own variables locally. The format is described in
``zps/framework/checkpoint_format.py``.

>>> import os, tempfile, zps as tf
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> with tf.Graph().as_default():
...     meta = save_shard(prefix, [tf.constant([1.0, 2.0])], ["w"])
...     done = write_checkpoint_index(prefix, [meta])
...     w, = restore_shard(prefix, ["w"], [tf.float32], [[2]])
...     with tf.Session() as sess:
...         _ = sess.run(done)
...         print(sess.run(w))
[1. 2.]
"""

import contextlib
import json

import numpy as np

from zps.framework import checkpoint_format, errors
from zps.framework import dtypes as _dtypes
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import as_shape, unknown_shape
from zps.ops.op_util import make_op, scalar_shape


@contextlib.contextmanager
def _file_errors(what, prefix):
    """OS errors of a kernel as OpErrors naming the checkpoint (TF1's error codes)."""
    try:
        yield
    except OSError as e:
        cls = {FileNotFoundError: errors.NotFoundError,
               PermissionError: errors.PermissionDeniedError}.get(type(e), errors.UnknownError)
        raise cls(None, None, "%s checkpoint %s failed: %s" % (what, prefix, e)) from e


def _text(value):
    """A string scalar kernel input as a Python str."""
    v = value.item() if isinstance(value, np.ndarray) else value
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _string_scalar(text):
    out = np.empty((), dtype=object)
    out[()] = text.encode("utf-8")
    return out


def _string_input(value, what):
    t = convert_to_tensor(value, dtype=_dtypes.string)
    if t.get_shape().ndims not in (None, 0):
        raise ValueError("%s must be a string scalar (a checkpoint prefix), got shape %s"
                         % (what, t.get_shape()))
    return t


# -- SaveShard -----------------------------------------------------------------------------------
def _save_shard_kernel(ctx, prefix, *values, names, shard, num_shards):
    host = ctx.backend != "numpy"  # cupy arrays are copied to host memory to be written
    tensors = {name: value.get() if host else value for name, value in zip(names, values)}
    with _file_errors("Writing a shard of", _text(prefix)):
        entries = checkpoint_format.write_shard(_text(prefix), shard, num_shards, tensors)
    return _string_scalar(json.dumps(entries))


register_op("SaveShard", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_save_shard_kernel, stateful=True, grad=None)


def save_shard(prefix, tensors, names, shard=0, num_shards=1, name=None):
    """Write ``tensors`` (saved as ``names``) as shard ``shard`` of ``num_shards`` of checkpoint
    ``prefix``; returns a string scalar describing the shard, for ``write_checkpoint_index``."""
    names = tuple(str(n) for n in names)
    if len(names) != len(tensors) or len(set(names)) != len(names):
        raise ValueError("save_shard needs one distinct name per tensor, got %d tensors and names "
                         "%s" % (len(tensors), list(names)))
    if not 0 <= shard < num_shards:
        raise ValueError("save_shard: shard %d is not in [0, %d)" % (shard, num_shards))
    inputs = [_string_input(prefix, "save_shard prefix")]
    inputs += [t if getattr(t, "is_ref", False) else convert_to_tensor(t) for t in tensors]
    return make_op("SaveShard", inputs, name=name or "SaveShard", names=names, shard=int(shard),
                   num_shards=int(num_shards))


# -- WriteCheckpointIndex ------------------------------------------------------------------------
def _write_index_kernel(ctx, prefix, *shard_metas):
    text = _text(prefix)
    with _file_errors("Writing the index of", text):
        checkpoint_format.write_index(text, [json.loads(_text(m)) for m in shard_metas])
    return _string_scalar(text)


register_op("WriteCheckpointIndex", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_write_index_kernel, stateful=True, grad=None)


def write_checkpoint_index(prefix, shard_metas, name=None):
    """Commit checkpoint ``prefix``: write its index over the shards ``shard_metas`` (outputs of
    ``save_shard``); outputs the prefix."""
    if not shard_metas:
        raise ValueError("write_checkpoint_index needs at least one shard")
    inputs = [_string_input(prefix, "write_checkpoint_index prefix")] + list(shard_metas)
    return make_op("WriteCheckpointIndex", inputs, name=name or "WriteCheckpointIndex")


# -- RestoreShard --------------------------------------------------------------------------------
def _restore_kernel(ctx, prefix, names, dtypes, shapes):
    path = _text(prefix)
    with _file_errors("Reading", path):
        reader = checkpoint_format.CheckpointReader(path)
        values = [reader.get_tensor(name) for name in names]
    for name, dtype, shape, value in zip(names, dtypes, shapes, values):
        saved = _dtypes.as_dtype(value.dtype)
        if saved != dtype:
            raise errors.InvalidArgumentError(
                None, None, "tensor_name = %s; expected dtype %s does not equal original dtype %s "
                "in checkpoint %s" % (name, dtype.name, saved.name, path))
        if shape is not None and (len(shape) != value.ndim or any(
                d is not None and d != s for d, s in zip(shape, value.shape))):
            raise errors.InvalidArgumentError(
                None, None, "Shape mismatch restoring %s from checkpoint %s: the variable has "
                "shape %s but the checkpoint holds shape %s (build the variable with the saved "
                "shape, or use Saver(reshape=True))" % (name, path, list(shape), list(value.shape)))
    if ctx.backend != "numpy":
        values = [v if v.dtype == object else ctx.xp.asarray(v) for v in values]
    return values if len(values) != 1 else values[0]


register_op("RestoreShard", dtype=lambda op: list(op._attrs["dtypes"]),
            shape=lambda op: [unknown_shape() if s is None else as_shape(list(s))
                              for s in op._attrs["shapes"]],
            kernel=_restore_kernel, stateful=True, grad=None)


def restore_shard(prefix, names, dtypes, shapes=None, name=None):
    """Read ``names`` from checkpoint ``prefix``; returns one tensor per name.

    ``dtypes`` must match the saved dtypes; a shape in ``shapes`` (None: unchecked) must match
    the saved shape, else the op fails with InvalidArgumentError naming the tensor.
    """
    names = tuple(str(n) for n in names)
    dtypes = tuple(_dtypes.as_dtype(d) for d in dtypes)
    shapes = (None,) * len(names) if shapes is None else tuple(
        None if s is None or as_shape(s).ndims is None else tuple(as_shape(s).as_list())
        for s in shapes)
    if not names or len(dtypes) != len(names) or len(shapes) != len(names):
        raise ValueError("restore_shard needs one dtype and shape per name (at least one name), "
                         "got %d names, %d dtypes, %d shapes" % (len(names), len(dtypes),
                                                                 len(shapes)))
    return make_op("RestoreShard", [_string_input(prefix, "restore_shard prefix")],
                   name=name or "RestoreShard", num_outputs=len(names), names=names,
                   dtypes=dtypes, shapes=shapes)


__all__ = []
