"""TF1's feature columns (``tf.feature_column``): how raw features become model inputs.

A column names a feature of the ``features`` dict (or another column) and says how to turn it
into a dense tensor (``numeric_column``, ``bucketized_column``, ``embedding_column``,
``indicator_column``) or into ids (``categorical_column_with_*``, ``crossed_column``,
``weighted_categorical_column``). ``input_layer`` concatenates the dense tensors of its columns
(sorted by name); ``linear_model`` sums a weight per id (categorical) or per value (dense).

Exactly as TF1: column names, ordering and variable names (``input_layer/<col>_embedding/
embedding_weights``, ``linear_model/<col>/weights``, ``linear_model/bias_weights``); a dense
string (int) input treats ``''`` (``-1``) as missing; hash buckets and crosses are TF's
FarmHash values; embeddings combine with "mean", "sqrtn" or "sum" and skip negative ids (and,
except for "sum", non-positive weights), a row without ids giving zeros. Embedding variables
take the enclosing variable scope's partitioner (TF's "div" strategy), and their gradients are
IndexedSlices, so a ps applies only the looked-up rows.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     price = tf.feature_column.numeric_column("price")
...     color = tf.feature_column.categorical_column_with_vocabulary_list("color", ["R", "G"])
...     net = tf.feature_column.input_layer(
...         {"price": [[2.0], [5.0]], "color": [["G"], ["B"]]},
...         [price, tf.feature_column.indicator_column(color)])
...     print(tf.Session().run(net).tolist())
[[0.0, 1.0, 2.0], [0.0, 0.0, 5.0]]
"""

import collections

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import (
    array_ops,
    embedding_ops,
    init_ops,
    math_ops,
    nn_ops,
    parsing_ops,
    sparse_ops,
    string_ops,
    variable_scope,
)
from zps.ops.feature_column_ops import bucketize, sparse_cross_hashed, vocabulary_lookup
from zps.ops.partitioned_variables import PartitionedVariable
from zps.ops.sparse_ops import SparseTensor, SparseTensorValue

IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])


# -- the column protocol --------------------------------------------------------------------------
class _FeatureColumn:
    """A column: ``name``, and ``_transform_feature(builder)`` (its tensor, built once)."""

    @property
    def _var_scope_name(self):
        return self.name


class _DenseColumn(_FeatureColumn):
    """A column with a dense tensor of ``_variable_shape`` per example (``_get_dense_tensor``)."""


class _CategoricalColumn(_FeatureColumn):
    """A column of ids in ``[0, _num_buckets)`` (``_get_sparse_tensors``: an IdWeightPair)."""

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return IdWeightPair(inputs.get(self), None)


class _LazyBuilder:
    """Builds each column's (and each raw feature's) tensor once per input_layer/linear_model
    call: a bucketized column used alone and in a cross is bucketized once."""

    def __init__(self, features):
        self._features = dict(features)
        self._feature_tensors = {}

    def get(self, key):
        if key in self._feature_tensors:
            return self._feature_tensors[key]
        if key in self._features:   # a raw feature (or a column's tensor made beforehand)
            tensor = _raw_feature(key, self._features[key])
        elif isinstance(key, str):
            raise ValueError("Feature %s is not in features dictionary." % key)
        elif isinstance(key, _FeatureColumn):
            tensor = key._transform_feature(self)
        else:
            raise TypeError('"key" must be either a "str" or "_FeatureColumn". Provided: %r'
                            % (key,))
        self._feature_tensors[key] = tensor
        return tensor


def _tensor_or_sparse(value):
    if isinstance(value, SparseTensor):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    return convert_to_tensor(value)


def _raw_feature(key, value):
    """A feature as a Tensor or SparseTensor of rank >= 2 (a vector becomes ``[batch, 1]``)."""
    tensor = _tensor_or_sparse(value)
    rank = tensor.get_shape().ndims
    if rank is None:
        raise ValueError("Feature (key: %s) needs a known rank; set its shape (e.g. with "
                         "set_shape) before building feature columns. Given: %s" % (key, tensor))
    if rank == 0:
        raise ValueError("Feature (key: %s) cannot have rank 0. Given: %s" % (key, tensor))
    if rank != 1:
        return tensor
    if isinstance(tensor, SparseTensor):
        indices = array_ops.concat([tensor.indices, array_ops.zeros_like(tensor.indices)], 1)
        return SparseTensor(indices, tensor.values,
                            array_ops.stack([tensor.dense_shape[0], np.int64(1)]))
    return array_ops.expand_dims(tensor, -1)


def _to_sparse_input_and_drop_ignore_values(input_tensor, ignore_value=None):
    """A dense tensor as a SparseTensor without its ``ignore_value`` cells ('' for strings, -1
    for ints by default); a SparseTensor as it is."""
    if isinstance(input_tensor, SparseTensor):
        return input_tensor
    with get_default_graph().name_scope("to_sparse_input"):
        if ignore_value is None:
            ignore_value = "" if input_tensor.dtype == _dtypes.string else (
                -1 if input_tensor.dtype.is_integer else 0)
        ignore = array_ops.constant(ignore_value, dtype=input_tensor.dtype, name="ignore_value")
        indices = array_ops.where(math_ops.not_equal(input_tensor, ignore), name="indices")
        return SparseTensor(indices, array_ops.gather_nd(input_tensor, indices, name="values"),
                            array_ops.shape(input_tensor, out_type=_dtypes.int64,
                                            name="dense_shape"))


def _check_ids_dtype(key, column_dtype, tensor):
    if not (tensor.dtype == _dtypes.string or tensor.dtype.is_integer):
        raise ValueError("column_name: %s input_tensor dtype must be string or integer. dtype: %s."
                         % (key, tensor.dtype.name))
    if column_dtype.is_integer != tensor.dtype.is_integer:
        raise ValueError("Column dtype and SparseTensors dtype must be compatible. key: %s, column "
                         "dtype: %s, tensor dtype: %s" % (key, column_dtype.name,
                                                          tensor.dtype.name))


def _with_values(sp, values):
    return SparseTensor(sp.indices, values, sp.dense_shape)


# -- the lookup every embedding and linear weighted sum goes through -------------------------------
def _safe_embedding_lookup_sparse(params, sp_ids, sp_weights, combiner, max_norm=None, name=None):
    """Per example (the first index of ``sp_ids``), its embeddings combined by ``combiner``
    ("sum", "mean", "sqrtn"; weighted by ``sp_weights``): ``[batch, dim]``. As TF1's
    ``safe_embedding_lookup_sparse`` (strategy "div"): negative ids are skipped, and so are
    non-positive weights unless summing; an example without ids gives zeros."""
    with get_default_graph().name_scope(name or "embedding_lookup"):
        ids, rows = sp_ids.values, sp_ids.indices[:, 0]
        keep = math_ops.greater_equal(ids, array_ops.constant(0, dtype=ids.dtype))
        weights = None if sp_weights is None else sp_weights.values
        if weights is not None and combiner != "sum":
            keep = math_ops.logical_and(keep, math_ops.greater(weights, 0.0))
        ids, rows = array_ops.boolean_mask(ids, keep), array_ops.boolean_mask(rows, keep)
        embeddings = embedding_ops.embedding_lookup(params, ids, partition_strategy="div",
                                                    max_norm=max_norm)
        if weights is None:
            weights = array_ops.ones_like(rows, dtype=embeddings.dtype)
        else:
            weights = math_ops.cast(array_ops.boolean_mask(weights, keep), embeddings.dtype)
        num_rows = sp_ids.dense_shape[0]
        total = array_ops.unsorted_segment_sum(
            embeddings * array_ops.expand_dims(weights, 1), rows, num_rows)
        if combiner == "sum":
            return total
        if combiner == "mean":
            norm = array_ops.unsorted_segment_sum(weights, rows, num_rows)
        else:
            norm = math_ops.sqrt(array_ops.unsorted_segment_sum(weights * weights, rows, num_rows))
        # An example without ids has a zero total: dividing it by 1 keeps it (and its gradient) 0.
        norm = array_ops.where(math_ops.greater(norm, 0.0), norm, array_ops.ones_like(norm))
        return total / array_ops.expand_dims(norm, 1)


# -- numeric and bucketized ------------------------------------------------------------------------
class _NumericColumn(_DenseColumn, collections.namedtuple(
        "_NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """See ``numeric_column``."""

    name = property(lambda self: self.key)
    _variable_shape = property(lambda self: TensorShape(self.shape))
    _parse_example_spec = property(lambda self: {self.key: parsing_ops.FixedLenFeature(
        self.shape, self.dtype, self.default_value)})

    def _transform_feature(self, inputs):
        tensor = inputs.get(self.key)
        if isinstance(tensor, SparseTensor):
            raise ValueError("The corresponding Tensor of numerical column must be a Tensor. "
                             "SparseTensor is not supported. key: %s" % self.key)
        if self.normalizer_fn is not None:
            tensor = self.normalizer_fn(tensor)
        return math_ops.cast(tensor, _dtypes.float32)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


def _check_shape(shape, key):
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    for d in shape:
        if not isinstance(d, int | np.integer) or d < 1:
            raise ValueError("shape dimensions must be integers greater than zero. shape: %s, "
                             "key: %s" % (shape, key))
    return tuple(int(d) for d in shape)


def numeric_column(key, shape=(1,), default_value=None, dtype=_dtypes.float32,
                   normalizer_fn=None):
    """A dense column of the numbers of feature ``key`` (``shape`` per example; cast to float32,
    after ``normalizer_fn`` when given).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.numeric_column("x", normalizer_fn=lambda t: t * 2)
    ...     print(tf.Session().run(tf.feature_column.input_layer({"x": [1, 3]}, [col])).tolist())
    [[2.0], [6.0]]
    """
    shape = _check_shape(shape, key)
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError("dtype must be convertible to float. dtype: %s, key: %s"
                         % (dtype.name, key))
    if default_value is not None:
        default = np.broadcast_to(np.asarray(default_value, dtype=dtype.as_numpy_dtype), shape)
        default_value = tuple(default.ravel().tolist())
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError("normalizer_fn must be a callable. Given: %r" % (normalizer_fn,))
    return _NumericColumn(key, shape, default_value, dtype, normalizer_fn)


class _BucketizedColumn(_DenseColumn, _CategoricalColumn, collections.namedtuple(
        "_BucketizedColumn", ["source_column", "boundaries"])):
    """See ``bucketized_column``."""

    name = property(lambda self: "%s_bucketized" % self.source_column.name)
    _parse_example_spec = property(lambda self: self.source_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape(
        tuple(self.source_column.shape) + (len(self.boundaries) + 1,)))
    _num_buckets = property(lambda self: (len(self.boundaries) + 1) * self.source_column.shape[0])

    def _transform_feature(self, inputs):
        return bucketize(inputs.get(self.source_column), self.boundaries)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return array_ops.one_hot(math_ops.cast(inputs.get(self), _dtypes.int64),
                                 depth=len(self.boundaries) + 1, on_value=1.0, off_value=0.0)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        # Ids of the i-th value of an example are offset by i * buckets, so they do not collide.
        buckets = inputs.get(self)
        width = self.source_column.shape[0]
        offsets = array_ops.constant(np.arange(width, dtype=np.int32) * (len(self.boundaries) + 1))
        indices = array_ops.where(array_ops.ones_like(buckets, dtype=_dtypes.bool))
        return IdWeightPair(SparseTensor(indices, array_ops.reshape(buckets + offsets, [-1]),
                                         array_ops.shape(buckets, out_type=_dtypes.int64)), None)


def bucketized_column(source_column, boundaries):
    """A column of the bucket of each value of a 1-D ``numeric_column`` (bucket ``i`` holds
    ``boundaries[i-1] <= x < boundaries[i]``): one-hot as a dense column, ids as a categorical one.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.bucketized_column(tf.feature_column.numeric_column("x"), [0, 1])
    ...     print(tf.Session().run(tf.feature_column.input_layer({"x": [0.5]}, [col])).tolist())
    [[0.0, 1.0, 0.0]]
    """
    if not isinstance(source_column, _NumericColumn):
        raise ValueError("source_column must be a column generated with numeric_column(). "
                         "Given: %s" % (source_column,))
    if len(source_column.shape) > 1:
        raise ValueError("source_column must be one-dimensional column. Given: %s"
                         % (source_column,))
    if not boundaries or not isinstance(boundaries, list | tuple):
        raise ValueError("boundaries must be a sorted list.")
    boundaries = tuple(float(b) for b in boundaries)
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("boundaries must be a sorted list.")
    return _BucketizedColumn(source_column, boundaries)


# -- categorical columns ---------------------------------------------------------------------------
class _HashedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    """See ``categorical_column_with_hash_bucket``."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: parsing_ops.VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: self.hash_bucket_size)

    def _transform_feature(self, inputs):
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        _check_ids_dtype(self.key, self.dtype, sp.values)
        values = sp.values if self.dtype == _dtypes.string else string_ops.as_string(sp.values)
        return _with_values(sp, string_ops.string_to_hash_bucket_fast(
            values, self.hash_bucket_size, name="lookup"))


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=_dtypes.string):
    """Ids ``Fingerprint64(value) % hash_bucket_size`` of the strings (or ints, hashed as their
    decimal strings) of feature ``key``: TF's buckets exactly.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.categorical_column_with_hash_bucket("w", 5)
    ...     net = tf.feature_column.input_layer({"w": [["a"]]},
    ...                                         [tf.feature_column.indicator_column(col)])
    ...     print(tf.Session().run(net).tolist())
    [[0.0, 0.0, 0.0, 0.0, 1.0]]
    """
    if hash_bucket_size is None or hash_bucket_size < 1:
        raise ValueError("hash_bucket_size must be at least 1. hash_bucket_size: %s, key: %s"
                         % (hash_bucket_size, key))
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype == _dtypes.string or dtype.is_integer):
        raise ValueError("dtype must be string or integer. dtype: %s, column_name: %s"
                         % (dtype.name, key))
    return _HashedCategoricalColumn(key, int(hash_bucket_size), dtype)


class _VocabularyListCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_VocabularyListCategoricalColumn",
        ["key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"])):
    """See ``categorical_column_with_vocabulary_list`` (and ``_vocabulary_file``)."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {self.key: parsing_ops.VarLenFeature(self.dtype)})
    _num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)

    def _transform_feature(self, inputs):
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        _check_ids_dtype(self.key, self.dtype, sp.values)
        keys = sp.values if self.dtype == _dtypes.string else math_ops.cast(sp.values,
                                                                            _dtypes.int64)
        return _with_values(sp, vocabulary_lookup(
            keys, self.vocabulary_list, self.default_value, self.num_oov_buckets,
            name="%s_lookup" % self.key))


def _vocabulary_column(key, vocabulary, dtype, default_value, num_oov_buckets):
    if num_oov_buckets < 0:
        raise ValueError("Invalid num_oov_buckets %s in %s." % (num_oov_buckets, key))
    if default_value != -1 and num_oov_buckets > 0:
        raise ValueError("Can't specify both default_value %s and num_oov_buckets %s in %s."
                         % (default_value, num_oov_buckets, key))
    if not (dtype == _dtypes.string or dtype.is_integer):
        raise ValueError("dtype must be string or integer. dtype: %s, column_name: %s"
                         % (dtype.name, key))
    if dtype == _dtypes.string:
        vocabulary = tuple(v if isinstance(v, bytes) else str(v).encode() for v in vocabulary)
    else:
        vocabulary = tuple(int(v) for v in vocabulary)
    duplicates = sorted({v for v in vocabulary if vocabulary.count(v) > 1})
    if duplicates:
        raise ValueError("Duplicate keys in vocabulary_list %s, column_name: %s"
                         % (duplicates, key))
    return _VocabularyListCategoricalColumn(key, vocabulary, dtype, int(default_value),
                                            int(num_oov_buckets))


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """Ids: each value's index in ``vocabulary_list``; a value not in it gets ``default_value``
    (-1: no id) or, with ``num_oov_buckets``, one of the buckets after the vocabulary (hashed).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.categorical_column_with_vocabulary_list("c", ["x", "y"])
    ...     net = tf.feature_column.input_layer({"c": [["y"], ["q"]]},
    ...                                         [tf.feature_column.indicator_column(col)])
    ...     print(tf.Session().run(net).tolist())
    [[0.0, 1.0], [0.0, 0.0]]
    """
    vocabulary_list = list(vocabulary_list)
    if not vocabulary_list:
        raise ValueError("vocabulary_list %s must be non-empty, column_name: %s"
                         % (vocabulary_list, key))
    if dtype is None:
        dtype = _dtypes.string if isinstance(vocabulary_list[0], str | bytes) else _dtypes.int64
    return _vocabulary_column(key, vocabulary_list, _dtypes.as_dtype(dtype), default_value,
                              num_oov_buckets)


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=_dtypes.string):
    """As ``categorical_column_with_vocabulary_list``, the vocabulary being the lines of
    ``vocabulary_file`` (its first ``vocabulary_size``). zps reads the file when the column is
    made, so the file need not exist where the graph runs."""
    if not vocabulary_file:
        raise ValueError("Missing vocabulary_file in %s." % key)
    try:
        with open(vocabulary_file, "rb") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise ValueError("vocabulary_file in %s does not exist: %s" % (key, vocabulary_file)) \
            from None
    if vocabulary_size is None:
        vocabulary_size = len(lines)
    if vocabulary_size < 1 or vocabulary_size > len(lines):
        raise ValueError("Invalid vocabulary_size %s in %s: the file %s has %d lines."
                         % (vocabulary_size, key, vocabulary_file, len(lines)))
    dtype = _dtypes.as_dtype(dtype)
    return _vocabulary_column(key, lines[:vocabulary_size], dtype,
                              -1 if default_value is None else default_value, num_oov_buckets)


class _IdentityCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_IdentityCategoricalColumn", ["key", "num_buckets", "default_value"])):
    """See ``categorical_column_with_identity``."""

    name = property(lambda self: self.key)
    _parse_example_spec = property(lambda self: {
        self.key: parsing_ops.VarLenFeature(_dtypes.int64)})
    _num_buckets = property(lambda self: self.num_buckets)

    def _transform_feature(self, inputs):
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not sp.dtype.is_integer:
            raise ValueError("Invalid input, not integer. key: %s dtype: %s"
                             % (self.key, sp.dtype.name))
        values = math_ops.cast(sp.values, _dtypes.int64)
        if self.default_value is not None:
            out_of_range = math_ops.logical_or(values < 0, values >= self.num_buckets)
            values = array_ops.where(out_of_range,
                                     array_ops.fill(array_ops.shape(values),
                                                    np.int64(self.default_value)), values)
        return _with_values(sp, values)


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Ids that are the integer values of feature ``key`` themselves, in ``[0, num_buckets)``;
    values outside become ``default_value`` when given.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.categorical_column_with_identity("i", 3, default_value=0)
    ...     net = tf.feature_column.input_layer({"i": [[2], [7]]},
    ...                                         [tf.feature_column.indicator_column(col)])
    ...     print(tf.Session().run(net).tolist())
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    if num_buckets < 1:
        raise ValueError("num_buckets %s < 1, column_name %s" % (num_buckets, key))
    if default_value is not None and not 0 <= default_value < num_buckets:
        raise ValueError("default_value %s not in range [0, %s), column_name %s"
                         % (default_value, num_buckets, key))
    return _IdentityCategoricalColumn(key, int(num_buckets), default_value)


class _WeightedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_WeightedCategoricalColumn", ["categorical_column", "weight_feature_key", "dtype"])):
    """See ``weighted_categorical_column``."""

    name = property(lambda self: "%s_weighted_by_%s" % (self.categorical_column.name,
                                                          self.weight_feature_key))
    _num_buckets = property(lambda self: self.categorical_column._num_buckets)
    _parse_example_spec = property(lambda self: dict(
        self.categorical_column._parse_example_spec,
        **{self.weight_feature_key: parsing_ops.VarLenFeature(self.dtype)}))

    def _transform_feature(self, inputs):
        weights = inputs.get(self.weight_feature_key)
        if self.dtype != weights.dtype.base_dtype:
            raise ValueError("Bad dtype, expected %s, but got %s."
                             % (self.dtype.name, weights.dtype.name))
        weights = _to_sparse_input_and_drop_ignore_values(weights, ignore_value=0.0)
        if not weights.dtype.is_floating:
            weights = _with_values(weights, math_ops.cast(weights.values, _dtypes.float32))
        return inputs.get(self.categorical_column), weights

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        return IdWeightPair(*inputs.get(self))


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=_dtypes.float32):
    """``categorical_column`` with a weight per id, from feature ``weight_feature_key`` (same
    indices as the ids; a dense weight of 0 means no id)."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError("categorical_column must be a _CategoricalColumn, given %r"
                         % (categorical_column,))
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError("dtype %s is not convertible to float." % dtype.name)
    return _WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


class _CrossedColumn(_CategoricalColumn, collections.namedtuple(
        "_CrossedColumn", ["keys", "hash_bucket_size", "hash_key"])):
    """See ``crossed_column``."""

    _num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def _parse_example_spec(self):
        spec = {}
        for key in self.keys:   # a raw key is a string feature, as in TF
            spec.update(key._parse_example_spec if isinstance(key, _FeatureColumn)
                        else {key: parsing_ops.VarLenFeature(_dtypes.string)})
        return spec

    @property
    def name(self):
        return "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self._leaf_keys()))

    def _leaf_keys(self):
        return [leaf for k in self.keys
                for leaf in (k._leaf_keys() if isinstance(k, _CrossedColumn) else [k])]

    def _transform_feature(self, inputs):
        tensors = []
        for key in self._leaf_keys():
            if isinstance(key, str):
                tensors.append(inputs.get(key))
                continue
            ids = key._get_sparse_tensors(inputs)
            if ids.weight_tensor is not None:
                raise ValueError("crossed_column does not support weight_tensor, but the given "
                                 "column populates weight_tensor. Given column: %s" % key.name)
            tensors.append(ids.id_tensor)
        return sparse_cross_hashed(tensors, num_buckets=self.hash_bucket_size,
                                   hash_key=self.hash_key)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """Ids of feature combinations: per example, one id per combination of one value from each of
    ``keys`` (feature names or categorical columns), TF's ``FingerprintCat64`` hash of them
    modulo ``hash_bucket_size``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.crossed_column(["a", "b"], 7)
    ...     net = tf.feature_column.input_layer({"a": [["x"]], "b": [["y"]]},
    ...                                         [tf.feature_column.indicator_column(col)])
    ...     print(tf.Session().run(net).tolist())
    [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
    """
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError("hash_bucket_size must be > 1. hash_bucket_size: %s" % hash_bucket_size)
    keys = tuple(keys) if isinstance(keys, list | tuple) else None
    if not keys or len(keys) < 2:
        raise ValueError("keys must be a list with length > 1. Given: %s" % (keys,))
    for key in keys:
        if not isinstance(key, str | _CategoricalColumn):
            raise ValueError("Unsupported key type. All keys must be either string, or "
                             "categorical column except _HashedCategoricalColumn. Given: %s"
                             % (key,))
        if isinstance(key, _HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for crossing. "
                             "Hashing before crossing will increase probability of collision. "
                             "Instead, use the feature name as a string. Given: %s" % (key,))
    return _CrossedColumn(keys, int(hash_bucket_size), hash_key)


# -- dense columns over categorical ones -----------------------------------------------------------
class _IndicatorColumn(_DenseColumn, collections.namedtuple(
        "_IndicatorColumn", ["categorical_column"])):
    """See ``indicator_column``."""

    name = property(lambda self: "%s_indicator" % self.categorical_column.name)
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)
    _variable_shape = property(lambda self: TensorShape([1, self.categorical_column._num_buckets]))

    def _transform_feature(self, inputs):
        ids, weights = self.categorical_column._get_sparse_tensors(inputs)
        depth = self.categorical_column._num_buckets
        if weights is None:
            dense_ids = sparse_ops.sparse_tensor_to_dense(ids, default_value=-1)
            one_hot = array_ops.one_hot(dense_ids, depth=depth, on_value=1.0, off_value=0.0)
            return math_ops.reduce_sum(one_hot, axis=[-2])
        # Weighted: the weights of an example's ids, summed per id (ids < 0 are no id).
        valid = math_ops.greater_equal(ids.values, array_ops.constant(0, dtype=ids.dtype))
        rows = array_ops.boolean_mask(ids.indices[:, 0], valid)
        cells = array_ops.stack([rows, array_ops.boolean_mask(
            math_ops.cast(ids.values, _dtypes.int64), valid)], axis=1)
        return array_ops.scatter_nd(cells, array_ops.boolean_mask(weights.values, valid),
                                    array_ops.stack([ids.dense_shape[0], np.int64(depth)]))

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        return inputs.get(self)


def indicator_column(categorical_column):
    """A dense multi-hot column of a categorical one: per example, how often each id occurs (or
    the sum of its weights).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     col = tf.feature_column.categorical_column_with_identity("i", 3)
    ...     net = tf.feature_column.input_layer({"i": [[0, 2, 2]]},
    ...                                         [tf.feature_column.indicator_column(col)])
    ...     print(tf.Session().run(net).tolist())
    [[1.0, 0.0, 2.0]]
    """
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError("Unsupported input type. Input must be a _CategoricalColumn. Given: %r"
                         % (categorical_column,))
    return _IndicatorColumn(categorical_column)


class _EmbeddingBase(_DenseColumn):
    """An embedding of ``categorical_column``: the lookup of ``_embedding_weights``."""

    _variable_shape = property(lambda self: TensorShape([self.dimension]))
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    def _embedding_weights(self, weight_collections, trainable):
        return variable_scope.get_variable(
            "embedding_weights", shape=(self.categorical_column._num_buckets, self.dimension),
            dtype=_dtypes.float32, initializer=self.initializer,
            trainable=self.trainable and trainable, collections=weight_collections)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        ids, weights = self.categorical_column._get_sparse_tensors(
            inputs, weight_collections=weight_collections, trainable=trainable)
        params = self._embedding_weights(weight_collections, trainable)
        return _safe_embedding_lookup_sparse(params, ids, weights, self.combiner, self.max_norm,
                                             name="%s_weights" % self.name)


class _EmbeddingColumn(_EmbeddingBase, collections.namedtuple(
        "_EmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer",
                             "max_norm", "trainable"])):
    """See ``embedding_column``."""

    name = property(lambda self: "%s_embedding" % self.categorical_column.name)


def _embedding_args(categorical_column, dimension, combiner, initializer, max_norm):
    if dimension is None or dimension < 1:
        raise ValueError("Invalid dimension %s." % (dimension,))
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum', got %r" % (combiner,))
    if initializer is not None and not callable(initializer):
        raise ValueError("initializer must be callable if specified. Embedding of column_name: %s"
                         % categorical_column.name)
    if initializer is None:
        initializer = init_ops.truncated_normal_initializer(mean=0.0,
                                                            stddev=1.0 / np.sqrt(dimension))
    return int(dimension), initializer


def _no_checkpoint(ckpt_to_load_from, tensor_name_in_ckpt):
    if ckpt_to_load_from is not None or tensor_name_in_ckpt is not None:
        raise NotImplementedError(
            "embedding columns in zps do not load checkpoints themselves: build the model, then "
            "call tf.train.init_from_checkpoint(ckpt, {tensor_name: <embedding variable>})")


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A dense column of ``dimension`` floats per example: the embeddings (rows of the variable
    ``<scope>/<col>_embedding/embedding_weights``) of its ids, combined by ``combiner``.

    The default ``initializer`` is ``truncated_normal(stddev=1/sqrt(dimension))``; the variable
    is partitioned by the enclosing variable scope's partitioner.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     ids = tf.feature_column.categorical_column_with_identity("i", 4)
    ...     col = tf.feature_column.embedding_column(ids, 2, initializer=tf.ones_initializer())
    ...     net = tf.feature_column.input_layer({"i": [[1, 3]]}, [col])
    ...     with tf.Session() as sess:
    ...         sess.run(tf.global_variables_initializer())
    ...         print(sess.run(net).tolist())
    [[1.0, 1.0]]
    """
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError("categorical_column must be a _CategoricalColumn, given %r"
                         % (categorical_column,))
    _no_checkpoint(ckpt_to_load_from, tensor_name_in_ckpt)
    dimension, initializer = _embedding_args(categorical_column, dimension, combiner,
                                             initializer, max_norm)
    return _EmbeddingColumn(categorical_column, dimension, combiner, initializer, max_norm,
                            bool(trainable))


class _SharedEmbeddingColumn(_EmbeddingBase, collections.namedtuple(
        "_SharedEmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer",
                                   "max_norm", "trainable", "shared_embedding_collection_name"])):
    """See ``shared_embedding_columns``: one variable, kept in a graph collection of its own."""

    name = property(lambda self: "%s_shared_embedding" % self.categorical_column.name)
    _var_scope_name = property(lambda self: self.shared_embedding_collection_name)

    def _embedding_weights(self, weight_collections, trainable):
        shared = get_default_graph().get_collection(self.shared_embedding_collection_name)
        if shared:
            return shared[0]
        weights = super()._embedding_weights(weight_collections, trainable)
        get_default_graph().add_to_collection(self.shared_embedding_collection_name, weights)
        return weights


def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None,
                             tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """Embedding columns of several categorical columns (with one bucket count) sharing one
    variable, ``<scope>/<names joined by _>_shared_embedding/embedding_weights``."""
    categorical_columns = list(categorical_columns)
    if not categorical_columns:
        raise ValueError("categorical_columns must not be empty.")
    for c in categorical_columns:
        if not isinstance(c, _CategoricalColumn):
            raise ValueError("All categorical_columns must be _CategoricalColumn. Given: %r" % (c,))
        if c._num_buckets != categorical_columns[0]._num_buckets:
            raise ValueError("To use shared_embedding_column, all categorical_columns must have "
                             "the same number of buckets. Given column: %s with buckets: %s does "
                             "not match column: %s with buckets: %s"
                             % (categorical_columns[0].name, categorical_columns[0]._num_buckets,
                                c.name, c._num_buckets))
    _no_checkpoint(ckpt_to_load_from, tensor_name_in_ckpt)
    dimension, initializer = _embedding_args(categorical_columns[0], dimension, combiner,
                                             initializer, max_norm)
    name = shared_embedding_collection_name or "_".join(
        sorted(c.name for c in categorical_columns)) + "_shared_embedding"
    return [_SharedEmbeddingColumn(c, dimension, combiner, initializer, max_norm, bool(trainable),
                                   name) for c in categorical_columns]


# -- input_layer and linear_model ------------------------------------------------------------------
def make_parse_example_spec(feature_columns):
    """The ``features`` argument of ``tf.parse_example`` that parses what ``feature_columns``
    need: ``{key: FixedLenFeature or VarLenFeature}``. Two columns asking for one key
    differently is a ValueError.

    >>> import zps as tf
    >>> age = tf.feature_column.numeric_column("age")
    >>> city = tf.feature_column.categorical_column_with_hash_bucket("city", 10)
    >>> spec = tf.feature_column.make_parse_example_spec(
    ...     [age, tf.feature_column.embedding_column(city, 4)])
    >>> sorted(spec.items())
    [('age', FixedLenFeature(shape=(1,), dtype=tf.float32, default_value=None)), \
('city', VarLenFeature(dtype=tf.string))]
    """
    result = {}
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError("All feature_columns must be _FeatureColumn instances. Given: %r"
                             % (column,))
        for key, value in column._parse_example_spec.items():
            if key in result and value != result[key]:
                raise ValueError("feature_columns contain different parse_spec for key %s. Given "
                                 "%s and %s" % (key, value, result[key]))
            result[key] = value
    return result


def _normalize_feature_columns(feature_columns, kinds, what):
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    feature_columns = list(feature_columns)
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    names = {}
    for column in feature_columns:
        if not isinstance(column, kinds):
            raise ValueError("Items of feature_columns must be %s. Given (type %s): %s."
                             % (what, type(column).__name__, column))
        if column.name in names:
            raise ValueError("Duplicate feature column name found for columns: %s and %s. This "
                             "usually means that these columns refer to same base feature. "
                             "Either one must be discarded or a duplicated but renamed item must "
                             "be inserted in features dict." % (column, names[column.name]))
        names[column.name] = column
    return sorted(feature_columns, key=lambda c: c.name)


def _model_collections(weight_collections):
    collections_ = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in collections_:
            collections_.append(key)
    return collections_


def _flat(tensor, column):
    """``tensor`` as ``[batch, num_elements]``."""
    num = column._variable_shape.num_elements()
    return array_ops.reshape(tensor, array_ops.stack([array_ops.shape(tensor)[0], num]))


def _verify_static_batch_size_equality(tensors, columns):
    batch, first = None, None
    for tensor, column in zip(tensors, columns):
        size = tensor.get_shape()[0].value if tensor.get_shape().ndims else None
        if size is None:
            continue
        if batch is not None and size != batch:
            raise ValueError("Batch size (first dimension) of each feature must be same. Batch "
                             "size of columns (%s, %s): (%s, %s)"
                             % (first.name, column.name, batch, size))
        batch, first = size, column


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None):
    """The dense tensor ``[batch, sum of column widths]`` of ``feature_columns`` (dense columns:
    numeric, bucketized, embedding, indicator), concatenated in the order of their names.

    ``features`` maps feature names to Tensors or SparseTensors. ``cols_to_vars`` (a dict) gets
    each column's variables. See the module doc for an example.
    """
    columns = _normalize_feature_columns(
        feature_columns, _DenseColumn, "a _DenseColumn. You can wrap a categorical column with "
        "an embedding_column or indicator_column")
    collections_ = _model_collections(weight_collections)
    graph = get_default_graph()
    with variable_scope.variable_scope(None, default_name="input_layer"):
        builder = _LazyBuilder(features)
        outputs = []
        for column in columns:
            with variable_scope.variable_scope(None, default_name=column._var_scope_name):
                outputs.append(_flat(column._get_dense_tensor(
                    builder, weight_collections=collections_, trainable=trainable), column))
                if cols_to_vars is not None:
                    cols_to_vars[column] = graph.get_collection(
                        GraphKeys.GLOBAL_VARIABLES,
                        scope=variable_scope.get_variable_scope().name)
        _verify_static_batch_size_equality(outputs, columns)
        return array_ops.concat(outputs, 1)


def _weighted_sum(column, builder, units, sparse_combiner, collections_, trainable):
    """One column's ``[batch, units]`` term of a linear model, and its ``weights`` variable."""
    categorical = isinstance(column, _CategoricalColumn)
    rows = column._num_buckets if categorical else column._variable_shape.num_elements()
    weight = variable_scope.get_variable("weights", shape=[rows, units], dtype=_dtypes.float32,
                                         initializer=init_ops.zeros_initializer(),
                                         trainable=trainable, collections=collections_)
    if categorical:
        ids, weights = column._get_sparse_tensors(builder, weight_collections=collections_,
                                                  trainable=trainable)
        return _safe_embedding_lookup_sparse(weight, ids, weights, sparse_combiner,
                                             name="weighted_sum")
    tensor = column._get_dense_tensor(builder, weight_collections=collections_,
                                      trainable=trainable)
    return math_ops.matmul(_flat(tensor, column), weight, name="weighted_sum")


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear prediction ``[batch, units]``: per column, its values times a weight variable
    (``linear_model/<col>/weights``; a categorical column picks one weight row per id, combined
    by ``sparse_combiner``), summed, plus ``linear_model/bias_weights``. Weights start at zero.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.feature_column.numeric_column("x")
    ...     y = tf.feature_column.linear_model({"x": [[1.0], [2.0]]}, [x])
    ...     with tf.Session() as sess:
    ...         sess.run(tf.global_variables_initializer())
    ...         print(sess.run(y).tolist())
    [[0.0], [0.0]]
    """
    if sparse_combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError("sparse_combiner must be one of 'mean', 'sqrtn' or 'sum', got %r"
                         % (sparse_combiner,))
    columns = _normalize_feature_columns(
        feature_columns, (_DenseColumn, _CategoricalColumn),
        "either a _DenseColumn or _CategoricalColumn")
    collections_ = _model_collections(weight_collections)
    graph = get_default_graph()
    # As TF1's _LinearModel: each column's scope name is made unique in the caller's scope (not
    # the model's), so a second model's weights are linear_model_1/price_1/weights.
    scope_names = []
    for column in columns:
        with variable_scope.variable_scope(None, default_name=column._var_scope_name) as vs:
            scope_names.append(vs.name.rsplit("/", 1)[-1])
    with variable_scope.variable_scope(None, default_name="linear_model"):
        builder = _LazyBuilder(features)
        sums = []
        for column, scope_name in zip(columns, scope_names):
            with variable_scope.variable_scope(scope_name):
                sums.append(_weighted_sum(column, builder, units, sparse_combiner, collections_,
                                          trainable))
                if cols_to_vars is not None:
                    cols_to_vars[column] = graph.get_collection(
                        GraphKeys.GLOBAL_VARIABLES,
                        scope=variable_scope.get_variable_scope().name)
        _verify_static_batch_size_equality(sums, columns)
        bias = variable_scope.get_variable("bias_weights", shape=[units], dtype=_dtypes.float32,
                                           initializer=init_ops.zeros_initializer(),
                                           trainable=trainable, collections=collections_)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = list(bias) if isinstance(bias, PartitionedVariable) \
                else [bias]
        return nn_ops.bias_add(math_ops.add_n(sums, name="weighted_sum_no_bias"), bias,
                               name="weighted_sum")


__all__ = [
    "bucketized_column", "categorical_column_with_hash_bucket",
    "categorical_column_with_identity", "categorical_column_with_vocabulary_file",
    "categorical_column_with_vocabulary_list", "crossed_column", "embedding_column",
    "indicator_column", "input_layer", "linear_model", "make_parse_example_spec", "numeric_column",
    "shared_embedding_columns", "weighted_categorical_column",
]
