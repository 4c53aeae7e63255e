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
    the increasing indices of the columns to read (one default each); ``compression_type``:
    "", "GZIP" or "ZLIB". Fields are parsed as ``tf.decode_csv`` parses them (RFC 4180 quotes
    with ``use_quote_delim``); a line that does not parse is an InvalidArgumentError naming the
    file and line.

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
            raise NotImplementedError("CsvDataset(exclude_cols=...) is not supported; give the "
                                      "columns to read with select_cols")
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
                         select_cols=select_cols)


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
           "enumerate_dataset", "get_single_element", "ignore_errors", "map_and_batch",
           "parallel_interleave", "scan", "shuffle_and_repeat", "unbatch"]
