"""Loading a 2-D checkpoint tensor with its rows or columns remapped from an old vocabulary to a
new one (TF's checkpoint_ops): the ops ``GenerateVocabRemapping`` and ``LoadAndRemapMatrix``,
and the initializers built on them, ``tf.contrib.framework.load_and_remap_matrix_initializer``,
``load_embedding_initializer``, ``load_linear_multiclass_bias_initializer`` and
``load_variable_slot_initializer``. ``tf.train.warm_start`` with a ``VocabInfo`` uses them.

Both kernels read their files when they run, where they run: the initializer ops of a variable
are colocated with it, so a ps reads the vocabulary files, and only the checkpoint rows it
needs, from its own file system (however the tensor was sliced when saved). The graph holds
file names, never the table: a warm-started 1M x 64 embedding adds a few small ops to it.

Row ``i`` of the result is row ``line_of(old_vocab, new_vocab[i])`` of the checkpoint's
matrix; an entry missing from the old vocabulary (and each OOV bucket) takes the
``initializer``'s values, in row-major order.

>>> import os, tempfile, numpy as np, zps as tf
>>> d = tempfile.mkdtemp()
>>> for name, text in [("old.txt", "a\\nb\\nc\\n"), ("new.txt", "c\\nz\\na\\n")]:
...     with open(os.path.join(d, name), "w") as f:
...         _ = f.write(text)
>>> with tf.Graph().as_default():
...     _ = tf.get_variable("emb", initializer=np.arange(6.0, dtype=np.float32).reshape(3, 2))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         path = tf.train.Saver().save(sess, os.path.join(d, "model"))
>>> with tf.Graph().as_default():
...     init = tf.contrib.framework.load_embedding_initializer(
...         path, "emb", new_vocab_size=3, embedding_dim=2,
...         old_vocab_file=os.path.join(d, "old.txt"), new_vocab_file=os.path.join(d, "new.txt"),
...         num_oov_buckets=1, initializer=tf.constant_initializer(-1.0))
...     emb = tf.get_variable("emb", shape=[4, 2], initializer=init)
...     with tf.Session() as sess:
...         sess.run(emb.initializer)
...         print(sess.run(emb).tolist())
[[4.0, 5.0], [-1.0, -1.0], [0.0, 1.0], [-1.0, -1.0]]
"""

import math

import numpy as np

from zps.framework import checkpoint_format, errors
from zps.framework import dtypes as _dtypes
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, init_ops
from zps.ops.op_util import make_op


def _path(value):
    path = value.item() if isinstance(value, np.ndarray) else value
    return path.decode("utf-8") if isinstance(path, bytes) else str(path)


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


# -- GenerateVocabRemapping: for each new vocabulary entry, its line in the old vocabulary -------
def _read_vocab(path, size=-1):
    """The entries (bytes) of vocabulary file ``path``, one a line; its first ``size`` if
    ``size >= 0``. TF's errors: a missing file, a short file, an empty line."""
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as e:
        raise errors.from_os_error(e, path) from None
    if lines[-1] == b"":
        lines.pop()
    if size >= 0:
        if len(lines) < size:
            raise _invalid("Invalid vocab_size in %s: expected %d but got %d"
                           % (path, size, len(lines)))
        lines = lines[:size]
    lines = [line.removesuffix(b"\r") for line in lines]
    for i, line in enumerate(lines):
        if not line:
            raise _invalid("Invalid content in %s: empty line found at position %d."
                           % (path, i + 1))
    return lines


def _generate_vocab_remapping_kernel(ctx, new_vocab_file, old_vocab_file, new_vocab_offset,
                                     num_new_vocab, old_vocab_size):
    new_path, old_path = _path(new_vocab_file), _path(old_vocab_file)
    new = _read_vocab(new_path)
    if len(new) < new_vocab_offset + num_new_vocab:
        raise _invalid("New vocabulary %s has %d entries, fewer than new_vocab_offset %d + "
                       "num_new_vocab %d" % (new_path, len(new), new_vocab_offset, num_new_vocab))
    index = {}
    for i, entry in enumerate(_read_vocab(old_path, old_vocab_size)):
        first = index.setdefault(entry, i)
        if first != i:
            raise errors.FailedPreconditionError(
                None, None, "HashTable has different value for same key. Key %s has %d and "
                "trying to add value %d (old vocabulary %s lists it twice)"
                % (entry.decode("utf-8", "replace"), first, i, old_path))
    remapping = np.array([index.get(entry, -1)
                          for entry in new[new_vocab_offset:new_vocab_offset + num_new_vocab]],
                         dtype=np.int64)
    return [remapping, np.int32(np.count_nonzero(remapping >= 0))]


register_op("GenerateVocabRemapping", num_outputs=2,
            dtype=lambda op: [_dtypes.int64, _dtypes.int32],
            shape=lambda op: [TensorShape([op._attrs["num_new_vocab"]]), TensorShape([])],
            kernels={"numpy": _generate_vocab_remapping_kernel}, stateful=True, grad=None)


def generate_vocab_remapping(new_vocab_file, old_vocab_file, new_vocab_offset, num_new_vocab,
                             old_vocab_size=-1, name=None):
    """``(remapping, num_present)``: for the entries ``[new_vocab_offset, new_vocab_offset +
    num_new_vocab)`` of vocabulary file ``new_vocab_file``, each one's line in
    ``old_vocab_file`` (its first ``old_vocab_size`` lines; -1: all) or -1 (int64), and how many
    were found (int32). The files are read when the op runs (TF's ``GenerateVocabRemapping``)."""
    if new_vocab_offset < 0 or num_new_vocab < 0:
        raise ValueError("generate_vocab_remapping: new_vocab_offset (%d) and num_new_vocab (%d) "
                         "must be >= 0" % (new_vocab_offset, num_new_vocab))
    return tuple(make_op(
        "GenerateVocabRemapping", [convert_to_tensor(new_vocab_file, dtype=_dtypes.string),
                                   convert_to_tensor(old_vocab_file, dtype=_dtypes.string)],
        name=name or "GenerateVocabRemapping", new_vocab_offset=int(new_vocab_offset),
        num_new_vocab=int(num_new_vocab), old_vocab_size=int(old_vocab_size)))


# -- LoadAndRemapMatrix: the remapped rows and columns of a checkpointed matrix ------------------
def _check_remapping(ids, size, what, tensor_name):
    """Old ids in range, and no old id taken twice (TF's kernel does not support that)."""
    taken = ids[ids >= 0]
    if taken.size and taken.max() >= size:
        raise _invalid("%s_remapping holds old id %d, past the %d %ss of %s in the checkpoint"
                       % (what, taken.max(), size, what, tensor_name))
    unique, counts = np.unique(taken, return_counts=True)
    if taken.size != unique.size:
        old = unique[counts > 1][0]
        new = np.flatnonzero(ids == old)
        raise errors.UnimplementedError(None, None, "Old ID %d is mapped to both new ID %d and %d, "
                                        "which is not supported." % (old, new[0], new[1]))


def _load_and_remap_matrix_kernel(ctx, ckpt_path, old_tensor_name, row_remapping, col_remapping,
                                  initializing_values, num_rows, num_cols, max_rows_in_memory):
    path, name = _path(ckpt_path), _path(old_tensor_name)
    rows = np.asarray(row_remapping, dtype=np.int64).reshape(-1)
    cols = np.asarray(col_remapping, dtype=np.int64).reshape(-1)
    if rows.size != num_rows:
        raise _invalid("Size of row_remapping is %d instead of being equal to num_rows=%d"
                       % (rows.size, num_rows))
    if cols.size and cols.size != num_cols:
        raise _invalid("Provided col_remapping, but its size is %d instead of being equal to "
                       "num_cols=%d" % (cols.size, num_cols))
    reader = checkpoint_format.CheckpointReader(path)
    shape = reader.get_variable_to_shape_map().get(name)
    if shape is None:
        raise errors.NotFoundError(None, None, "Key %s not found in checkpoint %s" % (name, path))
    if len(shape) != 2:
        raise _invalid("Tensor %s has shape %s of invalid rank %d instead of expected shape of "
                       "rank 2." % (name, shape, len(shape)))
    if not cols.size:
        if shape[1] != num_cols:
            raise _invalid("Tensor %s has shape %s, where the size of its 2nd dimension is %d "
                           "instead of being equal to num_cols=%d"
                           % (name, shape, shape[1], num_cols))
        cols = np.arange(num_cols)
    _check_remapping(rows, shape[0], "row", name)
    _check_remapping(cols, shape[1], "col", name)
    present = (rows >= 0)[:, None] & (cols >= 0)[None, :]
    values = np.asarray(initializing_values).reshape(-1)
    missing = present.size - int(np.count_nonzero(present))
    if values.size != missing:
        raise _invalid("initializing_values contained %d elements, but %d elements were missing "
                       "values to fill in" % (values.size, missing))
    out = np.empty((num_rows, num_cols), dtype=values.dtype)
    out[~present] = values   # row-major, as TF fills them
    if missing < present.size:
        _fill_from_checkpoint(out, reader, name, shape, rows, cols, max_rows_in_memory)
    return out


def _fill_from_checkpoint(out, reader, name, shape, rows, cols, max_rows_in_memory):
    """Copy the present cells into ``out``, reading the needed old rows in blocks of at most
    ``max_rows_in_memory`` rows (<= 0: one block from the first needed row to the last)."""
    new_rows = np.flatnonzero(rows >= 0)
    order = np.argsort(rows[new_rows], kind="stable")
    old_sorted, new_sorted = rows[new_rows][order], new_rows[order]
    new_cols = np.flatnonzero(cols >= 0)
    old_cols = cols[new_cols]
    i = 0
    while i < old_sorted.size:
        lo = int(old_sorted[i])
        hi = int(old_sorted[-1]) + 1 if max_rows_in_memory <= 0 \
            else min(lo + max_rows_in_memory, shape[0])
        j = int(np.searchsorted(old_sorted, hi))
        block = reader.get_slice(name, [lo, 0], [hi - lo, shape[1]])
        out[np.ix_(new_sorted[i:j], new_cols)] = \
            block[np.ix_(old_sorted[i:j] - lo, old_cols)].astype(out.dtype, copy=False)
        i = j


register_op("LoadAndRemapMatrix", dtype=lambda op: op.inputs[4].dtype.base_dtype,
            shape=lambda op: TensorShape([op._attrs["num_rows"], op._attrs["num_cols"]]),
            kernels={"numpy": _load_and_remap_matrix_kernel}, stateful=True, grad=None)


def load_and_remap_matrix(ckpt_path, old_tensor_name, row_remapping, col_remapping,
                          initializing_values, num_rows, num_cols, max_rows_in_memory=-1,
                          name=None):
    """A ``[num_rows, num_cols]`` matrix: cell ``(i, j)`` is cell ``(row_remapping[i],
    col_remapping[j])`` of the 2-D tensor ``old_tensor_name`` of checkpoint ``ckpt_path`` (an
    empty ``col_remapping``: column ``j``), and the cells with a -1 take ``initializing_values``
    in row-major order (exactly as many as there are). The checkpoint is read when the op runs,
    only its needed rows, at most ``max_rows_in_memory`` at a time (TF's ``LoadAndRemapMatrix``;
    the dtype is ``initializing_values``'s)."""
    values = convert_to_tensor(initializing_values)
    if not values.dtype.base_dtype.is_floating:
        raise TypeError("load_and_remap_matrix: initializing_values must be float32 (or another "
                        "floating dtype), not %s" % values.dtype.base_dtype.name)
    return make_op("LoadAndRemapMatrix", [
        convert_to_tensor(ckpt_path, dtype=_dtypes.string),
        convert_to_tensor(old_tensor_name, dtype=_dtypes.string),
        convert_to_tensor(row_remapping, dtype=_dtypes.int64),
        convert_to_tensor(col_remapping, dtype=_dtypes.int64), values],
        name=name or "LoadAndRemapMatrix", num_rows=int(num_rows), num_cols=int(num_cols),
        max_rows_in_memory=int(max_rows_in_memory))


# -- the initializers (TF's training/checkpoint_ops.py and contrib.framework) --------------------
def _load_and_remap_matrix(ckpt_path, old_tensor_name, new_row_vocab_offset, num_rows_to_load,
                           new_col_vocab_size, initializer, dtype, old_row_vocab_size=-1,
                           old_row_vocab_file=None, new_row_vocab_file=None,
                           old_col_vocab_file=None, new_col_vocab_file=None,
                           num_row_oov_buckets=0, num_col_oov_buckets=0, max_rows_in_memory=-1):
    """The ``[num_rows_to_load + num_row_oov_buckets, new_col_vocab_size + num_col_oov_buckets]``
    block of rows from ``new_row_vocab_offset`` on: remapped checkpoint cells, the missing ones
    and the OOV rows and columns from ``initializer`` (TF's ``_load_and_remap_matrix``)."""
    if num_row_oov_buckets < 0:
        raise ValueError("num_row_oov_buckets must be >= 0, but received %d" % num_row_oov_buckets)
    if num_col_oov_buckets < 0:
        raise ValueError("num_col_oov_buckets must be >= 0, but received %d" % num_col_oov_buckets)
    if bool(old_row_vocab_file) != bool(new_row_vocab_file):
        raise ValueError("old_row_vocab_file and new_row_vocab_file must both be specified or left "
                         "unspecified. old_row_vocab_file='%s', new_row_vocab_file='%s'"
                         % (old_row_vocab_file, new_row_vocab_file))
    if bool(old_col_vocab_file) != bool(new_col_vocab_file):
        raise ValueError("old_col_vocab_file and new_col_vocab_file must both be specified or left "
                         "unspecified. old_col_vocab_file='%s', new_col_vocab_file='%s'"
                         % (old_col_vocab_file, new_col_vocab_file))
    remap_rows, remap_cols = bool(new_row_vocab_file), bool(new_col_vocab_file)
    if not (remap_rows or remap_cols):
        raise ValueError("Must provide either row or column vocab files. If no remapping is "
                         "necessary, consider using `tf.contrib.framework.init_from_checkpoint` "
                         "instead.")
    rows_present = num_rows_to_load
    if remap_rows:
        row_remapping, rows_present = generate_vocab_remapping(
            new_row_vocab_file, old_row_vocab_file, new_row_vocab_offset, num_rows_to_load,
            old_vocab_size=old_row_vocab_size)
    else:
        row_remapping = np.arange(new_row_vocab_offset, new_row_vocab_offset + num_rows_to_load,
                                  dtype=np.int64)
    col_remapping, cols_present = np.zeros([0], np.int64), new_col_vocab_size
    if remap_cols:
        col_remapping, cols_present = generate_vocab_remapping(
            new_col_vocab_file, old_col_vocab_file, 0, new_col_vocab_size)
    # TF asks the initializer for exactly the missing cells, a count known only when the
    # vocabularies are read; zps's initializers need a static shape, so it is asked for as many
    # as there could be and the first ones are used (the same values, in TF's order).
    cells = num_rows_to_load * new_col_vocab_size
    missing = cells - rows_present * cols_present
    init_vals = initializer([cells, 1], dtype) if cells else np.zeros([0, 1], dtype.as_numpy_dtype)
    init_vals = array_ops.slice(convert_to_tensor(init_vals, dtype=dtype), [0, 0],
                                array_ops.stack([missing, 1]))
    value = load_and_remap_matrix(ckpt_path, old_tensor_name, row_remapping, col_remapping,
                                  init_vals, num_rows_to_load, new_col_vocab_size,
                                  max_rows_in_memory=max_rows_in_memory)
    if num_row_oov_buckets > 0:
        oov = initializer([num_row_oov_buckets, new_col_vocab_size], dtype)
        value = array_ops.concat([value, convert_to_tensor(oov, dtype=dtype)], 0)
    if num_col_oov_buckets > 0:
        oov = initializer([num_rows_to_load + num_row_oov_buckets, num_col_oov_buckets], dtype)
        value = array_ops.concat([value, convert_to_tensor(oov, dtype=dtype)], 1)
    return value


def load_and_remap_matrix_initializer(ckpt_path, old_tensor_name, new_row_vocab_size,
                                      new_col_vocab_size, old_row_vocab_size=-1,
                                      old_row_vocab_file=None, new_row_vocab_file=None,
                                      old_col_vocab_file=None, new_col_vocab_file=None,
                                      num_row_oov_buckets=0, num_col_oov_buckets=0,
                                      initializer=None, max_rows_in_memory=-1):
    """An initializer of a (possibly row-partitioned) ``[new_row_vocab_size +
    num_row_oov_buckets, new_col_vocab_size + num_col_oov_buckets]`` variable from the 2-D
    tensor ``old_tensor_name`` of checkpoint ``ckpt_path``, its rows remapped from
    ``old_row_vocab_file`` (its first ``old_row_vocab_size`` lines; -1: all) to
    ``new_row_vocab_file`` and its columns from ``old_col_vocab_file`` to ``new_col_vocab_file``
    (either pair may be None: not remapped). Entries missing from the old vocabulary and the OOV
    rows and columns take ``initializer``'s values (None: zeros). TF1's
    ``tf.contrib.framework.load_and_remap_matrix_initializer``; the files are read when the
    variable's initializer runs, where the variable lives."""
    if initializer is None:
        initializer = init_ops.zeros_initializer()
    if not callable(initializer):
        raise TypeError("initializer must be callable, instead of being %r of type %s."
                        % (initializer, type(initializer)))

    def _initializer(shape, dtype=_dtypes.float32, partition_info=None):
        dtype = _dtypes.as_dtype(dtype).base_dtype
        if not dtype.is_floating:   # TF: float32 only
            raise TypeError("Currently, only float32 is supported. Received dtype: %s" % dtype)
        shape = list(TensorShape(shape).as_list())
        if len(shape) != 2:
            raise ValueError("Expected 2-dim shape, but received: %s" % shape)
        if shape[0] <= 0:
            raise ValueError("Expected 1st dim of shape to be > 0, but received shape: %s" % shape)
        if shape[1] != new_col_vocab_size + num_col_oov_buckets:
            raise ValueError("Expected 2nd dim of shape to be new_col_vocab_size (%d) + "
                             "num_col_oov_buckets (%d) = %d, but received shape: %s"
                             % (new_col_vocab_size, num_col_oov_buckets,
                                new_col_vocab_size + num_col_oov_buckets, shape))
        offset = 0 if partition_info is None else partition_info.single_offset(shape)
        if offset + shape[0] > new_row_vocab_size + num_row_oov_buckets:
            raise ValueError("Trying to initialize %d additional rows after %d rows have already "
                             "been initialized, which would exceed expected total row count of "
                             "new_row_vocab_size (%d) + num_row_oov_buckets (%d) = %d."
                             % (shape[0], offset, new_row_vocab_size, num_row_oov_buckets,
                                new_row_vocab_size + num_row_oov_buckets))
        row_oov = min(shape[0], max(0, offset + shape[0] - new_row_vocab_size))
        if offset > new_row_vocab_size:   # a partition of OOV rows only
            return initializer(shape, dtype)
        return _load_and_remap_matrix(
            ckpt_path, old_tensor_name, offset, shape[0] - row_oov, new_col_vocab_size,
            initializer, dtype, old_row_vocab_size=old_row_vocab_size,
            old_row_vocab_file=old_row_vocab_file, new_row_vocab_file=new_row_vocab_file,
            old_col_vocab_file=old_col_vocab_file, new_col_vocab_file=new_col_vocab_file,
            num_row_oov_buckets=row_oov, num_col_oov_buckets=num_col_oov_buckets,
            max_rows_in_memory=max_rows_in_memory)

    return _initializer


def load_embedding_initializer(ckpt_path, embedding_tensor_name, new_vocab_size, embedding_dim,
                               old_vocab_file, new_vocab_file, old_vocab_size=-1,
                               num_oov_buckets=0, initializer=None, max_rows_in_memory=-1):
    """An initializer of a ``[new_vocab_size + num_oov_buckets, embedding_dim]`` embedding from
    checkpoint tensor ``embedding_tensor_name``, its rows remapped from ``old_vocab_file`` to
    ``new_vocab_file``; new entries and OOV rows from ``initializer`` (None: a truncated normal
    of stddev ``1 / sqrt(embedding_dim)``). TF1's
    ``tf.contrib.framework.load_embedding_initializer``."""
    if initializer is None:
        initializer = init_ops.truncated_normal_initializer(stddev=1.0 / math.sqrt(embedding_dim))
    return load_and_remap_matrix_initializer(
        ckpt_path=ckpt_path, old_tensor_name=embedding_tensor_name,
        new_row_vocab_size=new_vocab_size, new_col_vocab_size=embedding_dim,
        old_row_vocab_size=old_vocab_size, old_row_vocab_file=old_vocab_file,
        new_row_vocab_file=new_vocab_file, num_row_oov_buckets=num_oov_buckets,
        initializer=initializer, max_rows_in_memory=max_rows_in_memory)


def load_linear_multiclass_bias_initializer(ckpt_path, bias_tensor_name, new_class_vocab_size,
                                            old_class_vocab_file, new_class_vocab_file,
                                            num_class_oov_buckets=0, initializer=None,
                                            max_rows_in_memory=-1):
    """An initializer of a ``[new_class_vocab_size + num_class_oov_buckets, 1]`` multi-class
    bias from checkpoint tensor ``bias_tensor_name`` (2-D, one column), its rows remapped from
    the old class vocabulary to the new one; new classes from ``initializer`` (None: zeros).
    TF1's ``tf.contrib.framework.load_linear_multiclass_bias_initializer``."""
    return load_and_remap_matrix_initializer(
        ckpt_path=ckpt_path, old_tensor_name=bias_tensor_name,
        new_row_vocab_size=new_class_vocab_size, new_col_vocab_size=1,
        old_row_vocab_file=old_class_vocab_file, new_row_vocab_file=new_class_vocab_file,
        num_row_oov_buckets=num_class_oov_buckets,
        initializer=initializer or init_ops.zeros_initializer(),
        max_rows_in_memory=max_rows_in_memory)


def load_variable_slot_initializer(ckpt_path, old_tensor_name, primary_partition_info,
                                   new_row_vocab_size, new_col_vocab_size,
                                   old_row_vocab_file=None, new_row_vocab_file=None,
                                   old_col_vocab_file=None, new_col_vocab_file=None,
                                   num_row_oov_buckets=0, num_col_oov_buckets=0,
                                   initializer=None, max_rows_in_memory=-1):
    """``load_and_remap_matrix_initializer`` for a slot (an optimizer accumulator) of a
    partitioned variable: the rows are those of the primary variable's part that
    ``primary_partition_info`` describes (slots are created without it). TF1's
    ``tf.contrib.framework.load_variable_slot_initializer``."""
    initializer_fn = load_and_remap_matrix_initializer(
        ckpt_path=ckpt_path, old_tensor_name=old_tensor_name,
        new_row_vocab_size=new_row_vocab_size, new_col_vocab_size=new_col_vocab_size,
        old_row_vocab_file=old_row_vocab_file, new_row_vocab_file=new_row_vocab_file,
        old_col_vocab_file=old_col_vocab_file, new_col_vocab_file=new_col_vocab_file,
        num_row_oov_buckets=num_row_oov_buckets, num_col_oov_buckets=num_col_oov_buckets,
        initializer=initializer, max_rows_in_memory=max_rows_in_memory)

    def _initializer(shape, dtype=_dtypes.float32, partition_info=None):
        return initializer_fn(shape, dtype, partition_info=primary_partition_info)

    return _initializer


__all__ = [
    "load_and_remap_matrix_initializer",
    "load_embedding_initializer",
    "load_linear_multiclass_bias_initializer",
    "load_variable_slot_initializer",
]
