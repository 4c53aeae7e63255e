"""``tf.data.experimental``: transformations for ``Dataset.apply`` (TF1's contrib-era tf.data).

Each function returns a transformation: a function from a Dataset to a Dataset, for
``dataset.apply(...)``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     ds = tf.data.Dataset.range(5).apply(tf.data.experimental.map_and_batch(lambda x: x * 2, 2))
...     ds = ds.apply(tf.data.experimental.enumerate_dataset(start=10))
...     x = ds.make_one_shot_iterator().get_next()
...     with tf.Session() as sess:
...         print([(int(i), b.tolist()) for i, b in (sess.run(x) for _ in range(3))])
[(10, [0, 2]), (11, [4, 6]), (12, [8])]
"""

import collections
import csv as _csv
import glob as _glob
import gzip as _gzip
import math as _math

import numpy as _np

from zps.data import structure as _nest
from zps.data.dataset import Dataset as _Dataset
from zps.data.dataset import _compression_type, _filenames
from zps.data.options import DistributeOptions, OptimizationOptions, ThreadingOptions
from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value as _constant_value
from zps.framework.graph import get_default_graph as _get_default_graph
from zps.framework.tensor_shape import TensorShape as _TensorShape
from zps.ops.array_ops import constant as _constant
from zps.ops.dataset_ops import AUTOTUNE
from zps.ops.op_util import make_op as _make_op
from zps.ops.sparse_ops import SparseTensor as _SparseTensor
from zps.ops.string_ops import csv_arguments as _csv_arguments

INFINITE_CARDINALITY = -1   # tf.data.INFINITE_CARDINALITY: a dataset that repeats forever
UNKNOWN_CARDINALITY = -2    # tf.data.UNKNOWN_CARDINALITY: not known before it is read


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """``dataset.map(map_func).batch(batch_size, drop_remainder)`` (TF's fused form; the
    parallelism arguments are accepted, at most one of them)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`map_and_batch` allows only one of `num_parallel_batches` and "
                         "`num_parallel_calls` to be set.")
    return lambda dataset: dataset.map(map_func).batch(batch_size, drop_remainder)


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """``dataset.shuffle(buffer_size, seed).repeat(count)``: each epoch reshuffled, epochs kept
    apart (as TF's fused form)."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def unbatch():
    """``dataset.unbatch()``: each element split along its first dimension."""
    return lambda dataset: dataset.unbatch()


def enumerate_dataset(start=0):
    """``dataset.enumerate(start)``: elements ``(int64 index, element)``."""
    return lambda dataset: dataset.enumerate(start)


def ignore_errors(log_warning=False):
    """The elements whose making did not fail: an element whose function (``map`` ...) or
    source raised an error is skipped (and logged, with ``log_warning``).

    An error drops what the transformations between it and ``ignore_errors`` were assembling
    (a ``batch``'s partial batch), as in TF.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.Dataset.from_tensor_slices([1.0, 0.0, 2.0])
    ...     ds = ds.map(lambda x: tf.check_numerics(1.0 / x, "inf"))
    ...     x = ds.apply(tf.data.experimental.ignore_errors()).make_one_shot_iterator().get_next()
    ...     with tf.Session() as sess:
    ...         print(sess.run(x), sess.run(x))
    1.0 0.5
    """
    return lambda dataset: dataset._ignore_errors(log_warning)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """``dataset.interleave(map_func, cycle_length, block_length)``: the order with
    ``sloppy=False`` (any order is allowed with True); the buffering arguments are accepted."""
    return lambda dataset: dataset.interleave(map_func, cycle_length, block_length)


def scan(initial_state, scan_func):
    """A transformation carrying a state through the elements: ``scan_func(state, element)``
    (tf ops) returns ``(new_state, output_element)``; the new state must keep the initial
    state's structure and dtypes. Each pass over the input starts from ``initial_state``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.Dataset.range(1, 5).apply(tf.data.experimental.scan(
    ...         tf.constant(0, tf.int64), lambda total, x: (total + x, total + x)))
    ...     print([int(v) for v in ds.as_numpy_iterator()])
    [1, 3, 6, 10]
    """
    return lambda dataset: dataset._scan(initial_state, scan_func)


def get_single_element(dataset):
    """The one element of ``dataset`` as tensors (its structure), read anew each time they are
    evaluated: InvalidArgumentError "Dataset was empty." or "Dataset had more than one element."
    otherwise, as TF.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.data.experimental.get_single_element(
    ...         tf.data.Dataset.range(10).filter(lambda x: tf.equal(x, 7)))
    ...     print(tf.Session().run(x))
    7
    """
    if not isinstance(dataset, _Dataset):
        raise TypeError("Invalid `dataset`. Expected a `tf.data.Dataset` object but got %s."
                        % type(dataset))
    plan, tensors, waits = dataset._plan()
    types, shapes = dataset._plain_specs()
    with _get_default_graph().control_dependencies(waits):
        out = _make_op("DatasetToSingleElement", tensors, name="DatasetToSingleElement",
                       num_outputs=len(types), dataset=plan, output_types=tuple(types),
                       output_shapes=tuple(shapes))
    return _nest.pack(dataset._element,
                      _nest.components(out, dataset._shapes, dataset._classes))


class CsvDataset(_Dataset):
    """The records of CSV files, one element per line: a tuple of scalars, one per column.

    Each of ``record_defaults`` gives a column's type and the value of an empty (or
    ``na_value``) field: a one-element list or tensor, or a DType for a required column
    (float32, float64, int32, int64, string). ``filenames``: a string or a list (or 1-D string
    tensor) of paths, read in order; ``header``: skip each file's first line; ``select_cols``:
    the increasing indices of the columns to read (one default each); ``exclude_cols`` (TF2's,
    instead of ``select_cols``): the increasing indices of the columns to skip, the others
    read (one default each); ``compression_type``: "", "GZIP" or "ZLIB". Fields are parsed as
    ``tf.decode_csv`` parses them (RFC 4180 quotes with ``use_quote_delim``: a quoted field
    may span lines, its line breaks read as ``\\n``); a record that does not parse is an
    InvalidArgumentError naming the file and line.

    >>> import os, tempfile, zps as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("id,score,name\\n1,2.5,a\\n2,,b\\n")
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.experimental.CsvDataset(path, [tf.int32, [0.0], [""]], header=True)
    ...     print([(int(i), float(s), n) for i, s, n in ds.as_numpy_iterator()])
    [(1, 2.5, b'a'), (2, 0.0, b'b')]
    """

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None):
        if exclude_cols is not None:
            exclude_cols = tuple(int(c) for c in exclude_cols)
            if select_cols is not None and exclude_cols:
                raise ValueError("Either select_cols or exclude_cols should be empty")
            if any(b <= a for a, b in zip(exclude_cols, exclude_cols[1:])):
                raise ValueError("exclude_cols should be strictly increasing indices")
            if exclude_cols and exclude_cols[0] < 0:
                raise ValueError("exclude_cols should be non-negative indices")
        defaults, select_cols = _csv_arguments(record_defaults, select_cols, "CsvDataset")
        if len(str(field_delim)) != 1:
            raise ValueError("CsvDataset: field_delim must be one character, got %r"
                             % (field_delim,))
        types = [d.dtype.base_dtype for d in defaults]
        super().__init__("csv", "CSVDataset", [], [_filenames(filenames)] + defaults,
                         tuple([None] * len(types)), types, [_TensorShape([])] * len(types),
                         compression_type=_compression_type(compression_type),
                         header=bool(header), field_delim=str(field_delim),
                         use_quote_delim=bool(use_quote_delim), na_value=str(na_value),
                         select_cols=select_cols, exclude_cols=exclude_cols or None)


_INFERRED = (_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64, _dtypes.string)


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",", use_quote_delim=True,
                     na_value="", header=True, num_epochs=None, shuffle=True,
                     shuffle_buffer_size=10000, shuffle_seed=None, prefetch_buffer_size=None,
                     num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """Batches of CSV records as ``{column name: values}`` dicts (``(features, label)`` with
    ``label_name``), as TF's: the files matching ``file_pattern`` (sorted; shuffled with
    ``shuffle``) are read ``num_parallel_reads`` at a time, the records shuffled, repeated
    ``num_epochs`` times (forever when None, then the last partial batch is dropped) and
    batched.

    Column names come from the first file's header row (every file's must be the same) unless
    ``column_names``; each column's type from ``column_defaults`` (as CsvDataset's
    ``record_defaults``) or inferred from the first ``num_rows_for_inference`` rows: the
    narrowest of int32, int64, float32, float64, string that holds every non-empty value, with
    default 0 (or ""). ``select_columns``: names or indices of the columns to keep.

    >>> import os, tempfile, zps as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("x,name,y\\n1,a,0.5\\n2,b,1.5\\n")
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.experimental.make_csv_dataset(path, 2, label_name="y", num_epochs=1,
    ...                                                shuffle=False)
    ...     features, label = next(ds.as_numpy_iterator())
    ...     print(dict(features), label)
    {'x': array([1, 2], dtype=int32), 'name': array([b'a', b'b'], dtype=object)} [0.5 1.5]
    """
    filenames = _matching_files(file_pattern)
    dataset = _Dataset.from_tensor_slices(filenames)
    if shuffle:
        dataset = dataset.shuffle(len(filenames), shuffle_seed)
    if column_names is None or column_defaults is None:
        opener = _csv_opener(compression_type, encoding)
    if column_names is None:
        if not header:
            raise ValueError("Expected `column_names` or `header` arguments. Neither is "
                             "provided.")
        column_names = _csv_header(filenames, field_delim, use_quote_delim, opener)
    column_names = list(column_names)
    if len(column_names) != len(set(column_names)):
        duplicates = sorted({n for n in column_names if column_names.count(n) > 1})
        raise ValueError("Either `column_names` argument or CSV header row contains duplicate "
                         "column names: %s." % duplicates)
    if select_columns is not None:
        select_columns = _column_indices(select_columns, column_names)
    if column_defaults is not None:
        column_defaults = [_constant([], dtype=d) if isinstance(d, _dtypes.DType) else d
                           for d in column_defaults]
    else:
        column_defaults = [_constant([0 if t != _dtypes.string else ""], dtype=t)
                           for t in _infer_types(filenames, len(column_names), field_delim,
                                                 use_quote_delim, na_value, header,
                                                 num_rows_for_inference, select_columns, opener)]
    if select_columns is not None and len(column_defaults) != len(select_columns):
        raise ValueError("If specified, `column_defaults` and `select_columns` must have the same "
                         "length: `column_defaults` has length %d, `select_columns` has length "
                         "%d." % (len(column_defaults), len(select_columns)))
    if select_columns is not None and len(column_names) > len(select_columns):
        column_names = [column_names[i] for i in select_columns]
    if label_name is not None and label_name not in column_names:
        raise ValueError("`label_name` provided must be one of the columns: %s. Received: %s."
                         % (column_names, label_name))

    def file_dataset(filename):
        ds = CsvDataset(filename, column_defaults, compression_type=compression_type,
                        header=header, field_delim=field_delim, use_quote_delim=use_quote_delim,
                        na_value=na_value, select_cols=select_columns)
        return ds._ignore_errors() if ignore_errors else ds

    def features(*columns):
        out = collections.OrderedDict(zip(column_names, columns))
        return (out, out.pop(label_name)) if label_name is not None else out

    dataset = dataset.interleave(file_dataset, block_length=1, cycle_length=(
        1 if num_parallel_reads is None else num_parallel_reads))
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)
    return dataset.map(features).prefetch(AUTOTUNE if prefetch_buffer_size is None
                                          else prefetch_buffer_size)


def _matching_files(file_pattern):
    """The files matching a pattern or list of patterns, sorted (TF's _get_file_names)."""
    patterns = file_pattern if isinstance(file_pattern, list) else [file_pattern]
    if not patterns:
        raise ValueError("Argument `file_pattern` should not be empty.")
    names = sorted(n for p in patterns for n in _glob.glob(p))
    if not names:
        raise ValueError("No files match `file_pattern` %s." % (file_pattern,))
    return names


def _csv_opener(compression_type, encoding):
    if compression_type in (None, ""):
        return lambda name: open(name, encoding=encoding, newline="")
    if compression_type == "GZIP":
        return lambda name: _gzip.open(name, "rt", encoding=encoding, newline="")
    if compression_type == "ZLIB":
        raise ValueError("`compression_type` %s is not supported for probing columns."
                         % compression_type)
    raise ValueError("Received unknown `compression_type` %s. Expected: GZIP, ZLIB or \"\" "
                     "(empty string)." % (compression_type,))


def _csv_reader(f, field_delim, use_quote_delim):
    return _csv.reader(f, delimiter=field_delim,
                       quoting=_csv.QUOTE_MINIMAL if use_quote_delim else _csv.QUOTE_NONE)


def _csv_header(filenames, field_delim, use_quote_delim, opener):
    """The column names of the files' header rows (which must all be the same)."""
    names = None
    for name in filenames:
        with opener(name) as f:
            row = next(_csv_reader(f, field_delim, use_quote_delim), None)
        if row is None:
            raise ValueError("Failed when reading the header line of %s. Is it an empty file?"
                             % name)
        if names is not None and row != names:
            raise ValueError("All input CSV files should have the same column names in the "
                             "header row. File %s has different column names." % name)
        names = row if names is None else names
    return names


def _column_indices(select_columns, column_names):
    """``select_columns`` (names or indices) as sorted column indices (TF's checks)."""
    index = {n: i for i, n in enumerate(column_names)}
    out = []
    for v in select_columns:
        if isinstance(v, int):
            if not 0 <= v < len(column_names):
                raise ValueError("Column index %d specified in `select_columns` should be > 0  "
                                 "and <= %d, which is the number of columns."
                                 % (v, len(column_names)))
            out.append(v)
        elif v not in index:
            raise ValueError("Column %s specified in `select_columns` must be of one of the "
                             "columns: %s." % (v, list(index)))
        else:
            out.append(index[v])
    if len(set(out)) != len(out):
        raise ValueError("The `select_columns` argument contains duplicate columns: %s."
                         % sorted({c for c in out if out.count(c) > 1}))
    return sorted(out)


def _fits(text, dtype):
    """Whether the CSV field ``text`` parses as ``dtype`` (TF's _infer_type checks)."""
    try:
        if dtype == _dtypes.int32:
            return _np.int32(text) == _np.int64(text)
        if dtype == _dtypes.int64:
            return _np.int64(text) is not None
        if dtype in (_dtypes.float32, _dtypes.float64):
            with _np.errstate(over="ignore"):
                return dtype.as_numpy_dtype(text) < _np.inf
    except (ValueError, OverflowError):
        return False
    return True


def _infer_types(filenames, num_cols, field_delim, use_quote_delim, na_value, header, rows,
                 select_columns, opener):
    """Each selected column's type: the narrowest of _INFERRED that every non-empty value of
    the first ``rows`` rows fits, never narrower than one already seen (string if none)."""
    columns = list(range(num_cols)) if select_columns is None else select_columns
    types = [None] * len(columns)
    seen = 0
    for name in filenames:
        with opener(name) as f:
            reader = _csv_reader(f, field_delim, use_quote_delim)
            number = 1
            if header:
                next(reader, None)
                number += 1
            for row in reader:
                if rows is not None and seen >= rows:
                    break
                if len(row) != num_cols:
                    raise ValueError("Problem inferring types: CSV row %d has %d number of "
                                     "fields. Expected: %d." % (number, len(row), num_cols))
                number, seen = number + 1, seen + 1
                for j, c in enumerate(columns):
                    if row[c] not in ("", na_value):
                        start = _INFERRED.index(types[j]) if types[j] is not None else 0
                        types[j] = next(t for t in _INFERRED[start:] if _fits(row[c], t))
    return [t or _dtypes.string for t in types]


def cardinality(dataset):
    """The number of elements of ``dataset`` as an int64 scalar tensor: INFINITE_CARDINALITY
    (-1) for one that repeats forever, UNKNOWN_CARDINALITY (-2) where it depends on the data
    (a ``filter``, a file reader, a generator ...) or on a tensor whose value is not known when
    the graph is built (zps counts statically, where TF counts when the op runs).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.Dataset.range(10).batch(3)
    ...     counts = [ds, ds.repeat(), ds.filter(lambda x: True), ds.take(2).concatenate(ds)]
    ...     print([int(n) for n in tf.Session().run(
    ...         [tf.data.experimental.cardinality(d) for d in counts])])
    [4, -1, -2, 6]
    """
    return _constant(_cardinality(dataset), dtype=_dtypes.int64, name="DatasetCardinality")


def _known(tensor):
    value = _constant_value(tensor)
    return None if value is None else int(_np.asarray(value))


def _cardinality(ds):
    kind, parents = ds._kind, [_cardinality(p) for p in ds._parents]
    if kind in ("map", "prefetch", "cache", "shuffle", "options", "scan"):
        return parents[0]
    if kind == "tensors":
        return 1
    if kind == "slices":
        shape = ds._tensors[0].get_shape() if ds._classes[0] is not _SparseTensor else None
        size = None if shape is None or shape.ndims is None else shape.as_list()[0]
        return UNKNOWN_CARDINALITY if size is None else size
    if kind == "range":
        args = [_known(t) for t in ds._tensors]
        if None in args:
            return UNKNOWN_CARDINALITY
        return len(range(*args)) if args[2] else UNKNOWN_CARDINALITY
    if kind == "zip":
        finite = [n for n in parents if n != INFINITE_CARDINALITY]
        if UNKNOWN_CARDINALITY in parents:
            return UNKNOWN_CARDINALITY
        return min(finite) if finite else INFINITE_CARDINALITY
    if kind == "concatenate":
        if UNKNOWN_CARDINALITY in parents:
            return UNKNOWN_CARDINALITY
        return INFINITE_CARDINALITY if INFINITE_CARDINALITY in parents else sum(parents)
    n = parents[0] if parents else UNKNOWN_CARDINALITY
    if kind == "shard":
        shards, index = (_known(t) for t in ds._tensors)
        if n < 0 or None in (shards, index) or not 0 <= index < shards:
            return n if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY
        return n // shards + (index < n % shards)
    count = _known(ds._tensors[-1]) if kind in ("repeat", "take", "skip") else None
    if kind in ("batch", "padded_batch"):
        size = _known(ds._tensors[0])
        if n == INFINITE_CARDINALITY or n == UNKNOWN_CARDINALITY or not size:
            return n if size else UNKNOWN_CARDINALITY
        return n // size if ds._attrs["drop_remainder"] else _math.ceil(n / size)
    if kind == "window":
        size, shift, stride = (_known(t) for t in ds._tensors)
        if n < 0 or None in (size, shift, stride) or min(size, shift, stride) <= 0:
            return n if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY
        if ds._attrs["drop_remainder"]:
            span = (size - 1) * stride + 1
            return (n - span) // shift + 1 if n >= span else 0
        return _math.ceil(n / shift)
    if count is None:
        return UNKNOWN_CARDINALITY   # filter, flat_map, readers ... (or a count fed later)
    if kind == "repeat":
        if n == 0 or count == 0:
            return 0
        if count < 0 or n == INFINITE_CARDINALITY:
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY if n == UNKNOWN_CARDINALITY else n * count
    if kind == "take":
        if count < 0:
            return n
        return count if n in (INFINITE_CARDINALITY,) else (
            UNKNOWN_CARDINALITY if n == UNKNOWN_CARDINALITY else min(n, count))
    # skip
    if count < 0:
        return 0
    return n if n < 0 else max(0, n - count)


__all__ = ["AUTOTUNE", "CsvDataset", "DistributeOptions", "INFINITE_CARDINALITY",
           "OptimizationOptions", "ThreadingOptions", "UNKNOWN_CARDINALITY", "cardinality",
           "enumerate_dataset", "get_single_element", "ignore_errors", "make_csv_dataset",
           "map_and_batch",
           "parallel_interleave", "scan", "shuffle_and_repeat", "unbatch"]
