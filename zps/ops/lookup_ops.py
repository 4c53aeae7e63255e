"""Static lookup tables (TF's ``tf.lookup``): a key -> value map filled once by an initializer.

A table op is a resource op like a queue's: it outputs a reference to a table held by the
ResourceManager of the task it is placed on (found by ``shared_name``, else its op name), so
every session stepping against that task shares it. It starts uninitialized: its initializer
(``tf.tables_initializer()`` runs them all; MonitoredTrainingSession does) fills it from
tensors (``KeyValueTensorInitializer``) or a text file read where the table lives
(``TextFileInitializer``). Looking up in an uninitialized table is a FailedPreconditionError,
as in TF; so is initializing it again with other data (again with the same data is a no-op).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     table = tf.lookup.StaticHashTable(
...         tf.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2], value_dtype=tf.int64), -1)
...     ids = table.lookup(tf.constant(["b", "z", "a"]))
...     with tf.Session() as sess:
...         sess.run(tf.tables_initializer())
...         print(sess.run(ids).tolist(), sess.run(table.size()))
[2, -1, 1] 2
"""

import threading

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops.fingerprint import fingerprint64
from zps.ops.op_util import make_op
from zps.ops.resources import TABLE_INITIALIZERS
from zps.ops.sparse_ops import SparseTensor

_RESOURCE_KIND = "lookup_table"


class TextFileIndex:
    """Where a ``TextFileInitializer`` takes keys and values from: a column index, or one of
    these."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


# -- the table resource and its ops --------------------------------------------------------------
class _Table:
    """A dict from keys to values, filled once (TF's HashTable)."""

    def __init__(self, name, key_dtype, value_dtype):
        self.name = name
        self.key_dtype, self.value_dtype = key_dtype, value_dtype
        self.lock = threading.Lock()
        self.map = None   # None: not initialized

    def read(self):
        return np.array(self.name.encode(), dtype=object)

    def fill(self, keys, values):
        keys, values = np.asarray(keys).reshape(-1), np.asarray(values).reshape(-1)
        if keys.size != values.size:
            raise errors.InvalidArgumentError(
                None, None, "Table %s: %d keys but %d values to initialize it with"
                % (self.name, keys.size, values.size))
        new = dict(zip(keys.tolist(), values.tolist()))
        with self.lock:
            if self.map is not None and self.map != new:
                raise errors.FailedPreconditionError(
                    None, None, "Table %s was already initialized with different data." % self.name)
            self.map = new

    def items(self):
        with self.lock:
            if self.map is None:
                raise errors.FailedPreconditionError(
                    None, None, "Table %s not initialized: run its initializer "
                    "(tf.tables_initializer(); MonitoredTrainingSession runs it)." % self.name)
            return self.map


def _table_kernel(ctx, key_dtype, value_dtype, shared_name, op_name):
    name = shared_name or op_name
    table = ctx.resources.lookup_or_create(_RESOURCE_KIND, name,
                                           lambda: _Table(name, key_dtype, value_dtype))
    if (table.key_dtype, table.value_dtype) != (key_dtype, value_dtype):
        raise errors.InvalidArgumentError(
            None, None, "Shared table %s maps %s to %s; a table of %s to %s was asked for"
            % (name, table.key_dtype.name, table.value_dtype.name, key_dtype.name,
               value_dtype.name))
    return table


register_op("HashTable", dtype=lambda op: _dtypes.string, shape=lambda op: TensorShape([]),
            kernel=_table_kernel, stateful=True, light_ok=True, ref_output=True,
            needs_op_name=True, grad=None)

register_op("LookupTableImport", kernel=lambda ctx, table, keys, values: table.fill(keys, values),
            num_outputs=0, stateful=True, light_ok=True, ref_inputs=(0,), grad=None)


def _column(line, index, delimiter, number, what, path):
    if index == TextFileIndex.WHOLE_LINE:
        return line
    if index == TextFileIndex.LINE_NUMBER:
        return number
    fields = line.split(delimiter)
    if index >= len(fields):
        raise errors.InvalidArgumentError(
            None, None, "Invalid number of columns in %s line %d (%r) for the %s index %d"
            % (path, number, line, what, index))
    return fields[index]


def _typed(values, dtype, path):
    try:
        if dtype == _dtypes.string:
            return np.array([v if isinstance(v, bytes) else str(v).encode() for v in values],
                            dtype=object)
        return np.array([int(v) if dtype.is_integer else float(v) for v in values],
                        dtype=dtype.as_numpy_dtype)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, "Table initializer: a field of %s is not "
                                          "a %s: %s" % (path, dtype.name, e)) from None


def _text_file_kernel(ctx, table, filename, key_index, value_index, vocab_size, delimiter,
                      value_index_offset):
    path = filename.item()
    path = path.decode() if isinstance(path, bytes) else str(path)
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8").splitlines()
    except OSError as e:
        raise errors.NotFoundError(None, None, "Table initializer: %s: %s"
                                   % (path, e.strerror)) from None
    if vocab_size is not None:
        if len(lines) < vocab_size:
            raise errors.InvalidArgumentError(
                None, None, "Invalid vocab_size in %s: expected %d lines, the file has %d"
                % (path, vocab_size, len(lines)))
        lines = lines[:vocab_size]
    keys, values = [], []
    for number, line in enumerate(lines):
        keys.append(_column(line, key_index, delimiter, number, "key", path))
        value = _column(line, value_index, delimiter, number, "value", path)
        values.append(value + value_index_offset if value_index == TextFileIndex.LINE_NUMBER
                      else value)
    table.fill(_typed(keys, table.key_dtype, path), _typed(values, table.value_dtype, path))


register_op("InitializeTableFromTextFile", kernel=_text_file_kernel, num_outputs=0,
            stateful=True, light_ok=False, ref_inputs=(0,), grad=None)


def _find_kernel(ctx, table, keys, default_value, num_oov_buckets):
    found, default = table.items(), default_value.item()
    flat = keys.reshape(-1).tolist()
    if num_oov_buckets:   # StaticVocabularyTable: a missing key's id is one of the buckets after
        size = len(found)  # the vocabulary, by Fingerprint64 (of an int key's decimal string)
        out = [found[k] if k in found else size + fingerprint64(
            k if isinstance(k, bytes) else str(k).encode()) % num_oov_buckets for k in flat]
    else:
        out = [found.get(k, default) for k in flat]
    dtype = table.value_dtype
    return (_typed(out, dtype, table.name) if dtype == _dtypes.string
            else np.array(out, dtype=dtype.as_numpy_dtype)).reshape(keys.shape)


register_op("LookupTableFind", dtype=lambda op: op._attrs["value_dtype"],
            shape=lambda op: op.inputs[1].get_shape(),
            kernel=lambda ctx, table, keys, default_value, num_oov_buckets, value_dtype:
            _find_kernel(ctx, table, keys, default_value, num_oov_buckets),
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)

register_op("LookupTableSize", dtype=lambda op: _dtypes.int64, shape=lambda op: TensorShape([]),
            kernel=lambda ctx, table: np.array(len(table.items()), dtype=np.int64),
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)


def _on_table(handle, op_type, inputs, name, **attrs):
    """An op on the table ``handle``, where the table lives."""
    with handle.graph.colocate_with(handle.op):
        return make_op(op_type, [handle] + list(inputs), name=name, **attrs)


# -- initializers ----------------------------------------------------------------------------------
class _Initializer:
    """What fills a table: ``key_dtype``, ``value_dtype`` and ``initialize(table)`` (its op)."""

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)


class KeyValueTensorInitializer(_Initializer):
    """Fills a table with ``keys[i] -> values[i]`` (tensors, or lists; TF's name)."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with get_default_graph().name_scope(name or "key_value_init"):
            self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
        self._key_dtype = self._keys.dtype.base_dtype
        self._value_dtype = self._values.dtype.base_dtype
        self._name = name or "key_value_init"

    def initialize(self, table):
        """The op that fills ``table`` (a StaticHashTable)."""
        _check_dtypes(table, self)
        return _on_table(table.resource_handle, "LookupTableImport", [self._keys, self._values],
                         "%s/table_init" % self._name)


class TextFileInitializer(_Initializer):
    """Fills a table from a text file, read where the table lives when the initializer runs:
    each line (split at ``delimiter``) gives a key and a value, each a column index or
    ``TextFileIndex.WHOLE_LINE`` / ``LINE_NUMBER``; ``vocab_size`` takes only the first lines."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None,
                 delimiter="\t", name=None, value_index_offset=0):
        self._key_dtype, self._value_dtype = (_dtypes.as_dtype(key_dtype).base_dtype,
                                              _dtypes.as_dtype(value_dtype).base_dtype)
        for what, index, dtype in (("key", key_index, self._key_dtype),
                                   ("value", value_index, self._value_dtype)):
            if index < TextFileIndex.WHOLE_LINE:
                raise ValueError("Invalid %s index %s." % (what, index))
            if index == TextFileIndex.LINE_NUMBER and dtype != _dtypes.int64:
                raise ValueError("Signature mismatch. %s must be dtype %s, got %s."
                                 % (what.capitalize(), _dtypes.int64.name, dtype.name))
            if index == TextFileIndex.WHOLE_LINE and not (
                    dtype == _dtypes.string or dtype.is_integer):
                raise ValueError("Signature mismatch. %s must be dtype string or integer, got %s."
                                 % (what.capitalize(), dtype.name))
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError("Invalid vocab_size %s." % vocab_size)
        self._filename = convert_to_tensor(filename, dtype=_dtypes.string, name="asset_filepath")
        self._attrs = dict(key_index=int(key_index), value_index=int(value_index),
                           vocab_size=None if vocab_size is None else int(vocab_size),
                           delimiter=str(delimiter), value_index_offset=int(value_index_offset))
        self._name = name or "text_file_init"

    def initialize(self, table):
        """The op that fills ``table`` (a StaticHashTable) from the file."""
        _check_dtypes(table, self)
        return _on_table(table.resource_handle, "InitializeTableFromTextFile", [self._filename],
                         "%s/table_init" % self._name, **self._attrs)


def _check_dtypes(table, initializer):
    if (table.key_dtype, table.value_dtype) != (initializer.key_dtype, initializer.value_dtype):
        raise TypeError("Signature mismatch. Keys must be dtype %s, got %s. Values must be dtype "
                        "%s, got %s." % (table.key_dtype.name, initializer.key_dtype.name,
                                         table.value_dtype.name, initializer.value_dtype.name))


# -- tables ----------------------------------------------------------------------------------------
class StaticHashTable:
    """A table of the keys and values ``initializer`` gives; ``lookup(keys)`` maps each key
    (a Tensor or SparseTensor of them) to its value, or ``default_value``. Its initializer op
    is in ``GraphKeys.TABLE_INITIALIZERS`` (``tf.tables_initializer()``)."""

    _num_oov_buckets = 0

    def __init__(self, initializer, default_value, name=None, shared_name=None):
        graph = get_default_graph()
        self._key_dtype, self._value_dtype = initializer.key_dtype, initializer.value_dtype
        with graph.name_scope(name or "hash_table") as scope:
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype,
                                                    name="default_value")
            self._handle = make_op("HashTable", [], name="hash_table", key_dtype=self._key_dtype,
                                   value_dtype=self._value_dtype, shared_name=shared_name or "")
            self._name = scope.rstrip("/")
            self._init_op = initializer.initialize(self)
        graph.add_to_collection(TABLE_INITIALIZERS, self._init_op)

    name = property(lambda self: self._name)
    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)
    default_value = property(lambda self: self._default_value)
    resource_handle = property(lambda self: self._handle)
    initializer = property(lambda self: self._init_op)

    def size(self, name=None):
        """An int64 scalar: the number of keys."""
        return _on_table(self._handle, "LookupTableSize", [], name or "%s_Size" % self._name)

    def lookup(self, keys, name=None):
        """The value of each key (``default_value`` for a missing one), in the keys' shape; a
        SparseTensor of keys gives the SparseTensor of their values."""
        sparse = isinstance(keys, SparseTensor)
        values = keys.values if sparse else keys if isinstance(keys, Tensor) else \
            convert_to_tensor(keys, dtype=self._key_dtype)
        if values.dtype.base_dtype != self._key_dtype:
            raise TypeError("Signature mismatch. Keys must be dtype %s, got %s."
                            % (self._key_dtype.name, values.dtype.name))
        found = _on_table(self._handle, "LookupTableFind", [values, self._default_value],
                          name or "%s_Lookup" % self._name, value_dtype=self._lookup_dtype(),
                          num_oov_buckets=self._num_oov_buckets)
        return SparseTensor(keys.indices, found, keys.dense_shape) if sparse else found

    def _lookup_dtype(self):
        return self._value_dtype


class StaticVocabularyTable(StaticHashTable):
    """A table of ids (int64): a key's value from ``initializer`` (its vocabulary), and a key
    not in it one of ``num_oov_buckets`` ids after the vocabulary, ``vocabulary size +
    Fingerprint64(key) % num_oov_buckets`` (an integer key hashed as its decimal string), as
    TF's."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None):
        # lookup_key_dtype (TF's int32 keys for an int64 vocabulary) is accepted: keys are
        # looked up as the initializer's key dtype.
        if num_oov_buckets <= 0:
            raise ValueError("oov_buckets must be > 0; use StaticHashTable (with a default "
                             "value) for a table without out-of-vocabulary buckets.")
        if initializer.value_dtype != _dtypes.int64:
            raise TypeError("Invalid value dtype %s for a StaticVocabularyTable: its initializer "
                            "must give int64 ids." % initializer.value_dtype.name)
        self._num_oov_buckets = int(num_oov_buckets)
        super().__init__(initializer, -1, name=name or "hash_table")

    def size(self, name=None):
        """An int64 scalar: the vocabulary's size plus the buckets."""
        return super().size(name) + self._num_oov_buckets


__all__ = ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable",
           "TextFileIndex", "TextFileInitializer"]
