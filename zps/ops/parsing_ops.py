"""Parsing ops: ``tf.parse_example`` / ``tf.parse_single_example`` read serialized
``tf.train.Example`` protos into tensors, ``tf.io.parse_sequence_example`` /
``tf.parse_single_sequence_example`` serialized ``tf.train.SequenceExample`` protos (context
features and feature lists); ``tf.decode_raw`` reads the bytes of strings as numbers;
``tf.read_file`` reads a whole file.

What to read from each Example is a dict ``{key: feature spec}`` (TF1's rules):

- ``FixedLenFeature(shape, dtype, default_value=None)``: a dense tensor of ``shape`` (batched:
  ``[batch] + shape``); the feature must hold exactly that many values. A missing feature takes
  ``default_value`` (which must have that many elements), or fails the op when there is none.
- ``VarLenFeature(dtype)``: a SparseTensor of the values: indices ``[example, i]`` (just ``[i]``
  for one example), dense shape ``[batch, longest]`` (``[length]``); missing features are empty.
- ``FixedLenSequenceFeature(shape, dtype, allow_missing=True, default_value=None)``: a dense
  tensor ``[batch, longest] + shape``: each example's values in rows of ``shape``, shorter ones
  padded with ``default_value`` (0, or b"" for strings).
- ``SparseFeature(index_key, value_key, dtype, size, already_sorted=False)`` (Examples only): a
  SparseTensor of dense shape ``[batch] + size`` holding the values of feature ``value_key`` at the
  positions held by the int64 features ``index_key`` (one key per dimension), sorted by position.

For a SequenceExample, ``context_features`` take FixedLenFeature and VarLenFeature, and
``sequence_features`` (the feature lists) FixedLenSequenceFeature (every step holds ``shape``'s
number of values; ``allow_missing``: a missing feature list has no steps) and VarLenFeature
(indices ``[step, i]``, batched ``[example, step, i]``).

dtypes are those an Example holds: ``tf.int64`` (Int64List), ``tf.float32`` (FloatList) and
``tf.string`` (BytesList). A feature of another kind, or of the wrong length, fails the op with
InvalidArgumentError naming the example and the key, as TF's messages do; so do bytes that are not
an Example. A Feature with no list set counts as missing.

>>> import zps as tf
>>> ex = tf.train.Example(features=tf.train.Features(feature={
...     "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[7])),
...     "words": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a", b"b"]))}))
>>> with tf.Graph().as_default():
...     parsed = tf.parse_example([ex.SerializeToString()], {
...         "label": tf.FixedLenFeature([], tf.int64),
...         "words": tf.VarLenFeature(tf.string),
...         "weight": tf.FixedLenFeature([], tf.float32, default_value=1.0)})
...     out = tf.Session().run(parsed)
>>> out["label"].tolist(), out["weight"].tolist(), out["words"].values.tolist()
([7], [1.0], [b'a', b'b'])
>>> out["words"].indices.tolist(), out["words"].dense_shape.tolist()
([[0, 0], [0, 1]], [1, 2])
"""

import collections
import numbers

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.example_pb import Example, SequenceExample
from zps.framework.graph import Tensor, convert_to_tensor
from zps.framework.protobuf import DecodeError
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import array_ops, math_ops
from zps.ops.op_util import make_op, scalar_shape
from zps.ops.sparse_ops import SparseTensor, _sparse_out
from zps.ops.string_ops import _string_tensor, _strings


def _string_input(value, what):
    """``value`` as a string tensor; Python and numpy values must hold str or bytes (a number is
    not silently made a string)."""
    if not isinstance(value, Tensor):
        for v in np.asarray(value, dtype=object).ravel():
            if not isinstance(v, str | bytes):
                raise TypeError("%s must be strings, got %r of type '%s'"
                                % (what, v, type(v).__name__))
    return _string_tensor(value, what)


# -- feature specs ---------------------------------------------------------------------------------
class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """Parse a feature's values, however many, into a SparseTensor of ``dtype``."""

    __slots__ = ()


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """Parse a feature of exactly ``shape``'s number of values into a dense tensor of ``shape``;
    a missing feature takes ``default_value`` (required when None)."""

    __slots__ = ()

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """Parse a feature of any number of rows of ``shape`` into a dense ``[rows] + shape`` tensor,
    padding shorter examples of a batch with ``default_value``. ``parse_example`` needs
    ``allow_missing=True`` (a missing feature has no rows), as in TF1."""

    __slots__ = ()

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """Parse a SparseTensor of dense shape ``size`` from two kinds of features of an Example:
    ``value_key``'s values, at the positions the features ``index_key`` hold (one key and an int
    ``size``, or a list of keys and one size per key). Values are sorted by position unless
    ``already_sorted``."""

    __slots__ = ()

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


# TF's names of the value types, in its error messages; and the Feature list holding each.
_TYPE_NAMES = {_dtypes.int64: "int64", _dtypes.float32: "float", _dtypes.string: "string"}
_LISTS = {"int64_list": _dtypes.int64, "float_list": _dtypes.float32,
          "bytes_list": _dtypes.string}
_LIST_NAMES = {dtype: kind for kind, dtype in _LISTS.items()}


def _feature_dtype(key, spec):
    if not spec.dtype:
        raise ValueError("Missing type for feature %s. Received feature=%s." % (key, spec))
    dtype = _dtypes.as_dtype(spec.dtype).base_dtype
    if dtype not in _TYPE_NAMES:
        raise TypeError("Feature '%s' has dtype %s, but an Example holds only int64 (Int64List), "
                        "float32 (FloatList) or string (BytesList) values: use one of those and "
                        "tf.cast the result" % (key, dtype.name))
    return dtype


def _known_dims(key, spec, what):
    if spec.shape is None:
        raise ValueError("Missing shape for feature %s. Received feature=%s." % (key, spec))
    shape = as_shape(spec.shape)
    if shape.ndims is None:
        raise ValueError("Missing shape for feature %s. Received feature=%s." % (key, spec))
    dims = shape.as_list()
    if None in dims:
        if what == "fixed" and dims[0] is None:
            raise ValueError("First dimension of shape for feature %s unknown. Consider using "
                             "FixedLenSequenceFeature. Received feature=%s." % (key, spec))
        raise ValueError("All dimensions of shape for feature %s need to be known but received "
                         "%s." % (key, shape))
    return tuple(dims)


def _default_tensor(key, value, dtype, elements, what):
    """``value`` as a tensor of ``dtype``, checked to have ``elements`` elements."""
    if isinstance(value, Tensor):
        if value.dtype.base_dtype != dtype:
            raise TypeError("The default_value of feature '%s' is a %s tensor, but the feature is "
                            "%s" % (key, value.dtype.name, dtype.name))
        t = value
    else:
        if dtype == _dtypes.string:
            for v in np.asarray(value, dtype=object).ravel():
                if not isinstance(v, str | bytes):
                    raise TypeError("Expected string, but got %r of type '%s' in the "
                                    "default_value of feature '%s'." % (v, type(v).__name__, key))
        t = convert_to_tensor(value, dtype=dtype, name="default_" + key)
    n = t.get_shape().num_elements()
    if n is not None and n != elements:
        raise ValueError("The default_value of feature '%s' has %d elements, but %s %d "
                         "(a feature's default is reshaped to its shape)" % (key, n, what,
                                                                            elements))
    return t


def _add_sparse(sparse, key, dtype):
    if sparse.setdefault(key, dtype) != dtype:
        raise ValueError("Conflicting type %s vs %s for feature %s." % (sparse[key], dtype, key))


def _index_keys(spec):
    return [spec.index_key] if isinstance(spec.index_key, str) else list(spec.index_key)


def _features_config(features, allowed, sequence=False):
    """The parse op's sparse features ``[(key, dtype)]`` and dense features ``[(key, dtype, dims,
    flag, default)]`` for the ``features`` dict, sorted by key (as TF). ``flag`` is whether a
    FixedLenSequenceFeature is read (``parse_example``), or whether the feature list may be
    missing (``sequence``: the feature lists of a SequenceExample)."""
    for key in features:
        if not isinstance(key, str):
            raise TypeError("Feature keys must be strings, got %r (%s)" % (key,
                                                                          type(key).__name__))
    sparse, dense = {}, []
    for key in sorted(features):
        spec = features[key]
        if not isinstance(spec, allowed):
            raise ValueError("Unsupported %s %s for key '%s': use %s" % (
                type(spec).__name__, spec, key, ", ".join(t.__name__ for t in allowed)))
        if isinstance(spec, VarLenFeature):
            _add_sparse(sparse, key, _feature_dtype(key, spec))
        elif isinstance(spec, SparseFeature):
            if not spec.index_key:
                raise ValueError("Missing index_key for SparseFeature %s." % (spec,))
            if not spec.value_key:
                raise ValueError("Missing value_key for SparseFeature %s." % (spec,))
            dtype = _feature_dtype(key, spec)
            for index_key in sorted(_index_keys(spec)):
                _add_sparse(sparse, index_key, _dtypes.int64)
            _add_sparse(sparse, spec.value_key, dtype)
        elif isinstance(spec, FixedLenFeature):
            dtype, dims = _feature_dtype(key, spec), _known_dims(key, spec, "fixed")
            n = int(np.prod(dims))
            default = (convert_to_tensor(np.zeros([0], dtype=dtype.as_numpy_dtype), dtype=dtype)
                       if spec.default_value is None else
                       _default_tensor(key, spec.default_value, dtype, n, "its shape %s has"
                                       % list(dims)))
            dense.append((key, dtype, dims, False, default))
        elif sequence:
            if spec.default_value is not None:
                raise ValueError("Value feature_list.dense_defaults[%s] must be None" % key)
            dtype, dims = _feature_dtype(key, spec), _known_dims(key, spec, "sequence")
            dense.append((key, dtype, dims, bool(spec.allow_missing), None))
        else:
            if not spec.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to "
                                 "be True.")
            dtype, dims = _feature_dtype(key, spec), _known_dims(key, spec, "sequence")
            pad = (b"" if dtype == _dtypes.string else 0) if spec.default_value is None \
                else spec.default_value
            dense.append((key, dtype, dims, True,
                          _default_tensor(key, pad, dtype, 1, "a sequence's padding value needs")))
    both = set(sparse) & {d[0] for d in dense}
    if both:
        raise ValueError("Dense and sparse keys must not intersect; dense_keys: %s, sparse_keys: "
                         "%s, intersection: %s" % ([d[0] for d in dense], list(sparse), both))
    return list(sparse.items()), dense


# -- ParseExampleV2 --------------------------------------------------------------------------------
class _Where:
    """Where in a batch a value came from, as TF's error messages say it."""

    def __init__(self, single, names):
        self.single = single
        self.names = [n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n)
                      for n in names]

    def name(self, i):
        return self.names[i] if self.names else "<unknown>"

    # One example's messages (TF's FastParseSingleExample) never name it.
    def key(self, i, key):
        if self.single:
            return "Key: %s.  " % key
        return "Name: %s, Key: %s, Index: %d.  " % (self.name(i), key, i)

    def feature(self, i):
        return "" if self.single else "Name: %s, " % self.name(i)


def _show(record):
    text = repr(record[:64])
    return text + ("... (%d bytes)" % len(record) if len(record) > 64 else "")


def _example_features(record, where, i):
    """The ``feature`` map of the Example ``record`` (bytes)."""
    try:
        return Example.FromString(record).features.feature
    except (DecodeError, TypeError) as e:
        raise errors.InvalidArgumentError(
            None, None, "%sCould not parse example input, value: %s (%s)"
            % (where.feature(i), _show(record) if isinstance(record, bytes) else repr(record), e)
        ) from None


def _values(feature, key, dtype, where, i, dense):
    """The values (a list) of ``feature`` for ``dtype``; None when it is missing."""
    kind = feature.WhichOneof("kind") if feature is not None else None
    if kind is None:
        return None
    if _LISTS[kind] != dtype:
        actual, expected = _TYPE_NAMES[_LISTS[kind]], _TYPE_NAMES[dtype]
        raise errors.InvalidArgumentError(None, None, where.key(i, key) + (
            "Data types don't match. Data type: %s but expected type: %s" % (actual, expected)
            if dense else
            "Data types don't match. Expected type: %s, Actual type: %s" % (expected, actual)))
    return getattr(feature, kind).value._items


def _array(values, dtype, shape=None):
    if dtype == _dtypes.string:
        return _strings(len(values), values) if shape is None else _strings(shape, values)
    out = np.array(values, dtype=dtype.as_numpy_dtype)
    return out if shape is None else out.reshape(shape)


def _sparse_feature(examples, key, dtype, where):
    lists = [_values(f.get(key), key, dtype, where, i, False) or [] for i, f in
             enumerate(examples)]
    lengths = [len(v) for v in lists]
    values = _array([x for v in lists for x in v], dtype)
    cols = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths] or
                          [np.zeros([0], np.int64)])
    longest = max(lengths, default=0)
    if where.single:
        return cols.reshape(-1, 1), values, np.array([longest], dtype=np.int64)
    rows = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
    return (np.stack([rows, cols], axis=1), values,
            np.array([len(lists), longest], dtype=np.int64))


def _fixed_feature(examples, key, dtype, dims, default, where):
    n = int(np.prod(dims))
    if default.size not in (0, n):
        raise errors.InvalidArgumentError(
            None, None, "The default_value of feature %s has %d elements, but its shape %s has %d"
            % (key, default.size, list(dims), n))
    rows = []
    for i, f in enumerate(examples):
        v = _values(f.get(key), key, dtype, where, i, True)
        if v is None:
            if default.size == 0:
                raise errors.InvalidArgumentError(
                    None, None, "%sFeature: %s (data type: %s) is required but could not be "
                    "found." % (where.feature(i), key, _TYPE_NAMES[dtype]))
            v = default.ravel().tolist()
        elif len(v) != n and where.single:   # TF's message for one Example
            raise errors.InvalidArgumentError(
                None, None, "%sCan't parse serialized Example: Some %s slice was not parsed."
                % (where.key(i, key), _LIST_NAMES[dtype]))
        elif len(v) != n:
            raise errors.InvalidArgumentError(
                None, None, "%sNumber of %s values != expected.  Values size: %d but output "
                "shape: [%s]" % (where.key(i, key), _TYPE_NAMES[dtype], len(v),
                                 ",".join(map(str, dims))))
        rows.append(v)
    return _array([x for v in rows for x in v], dtype, (len(examples),) + dims)


def _sequence_feature(examples, key, dtype, dims, pad, where):
    stride = int(np.prod(dims))
    lists = []
    for i, f in enumerate(examples):
        v = _values(f.get(key), key, dtype, where, i, True) or []
        if stride and len(v) % stride and where.single:   # TF's message for one Example
            raise errors.InvalidArgumentError(
                None, None, "Error while parsing feature with key %s: number of elements should "
                "be divisible by %d, found %d instead" % (key, stride, len(v)))
        if stride and len(v) % stride:
            raise errors.InvalidArgumentError(
                None, None, "%sNumber of %s values is not a multiple of stride length. Saw %d "
                "values but output shape is: [?%s]" % (where.key(i, key), _TYPE_NAMES[dtype],
                                                       len(v), "".join(",%d" % d for d in dims)))
        lists.append(v)
    longest = max((len(v) // stride for v in lists), default=0) if stride else 0
    out = np.full((len(lists), longest * stride), pad.ravel()[0],
                  dtype=object if dtype == _dtypes.string else dtype.as_numpy_dtype)
    for row, v in zip(out, lists):
        row[:len(v)] = v
    return out.reshape((len(lists), longest) + dims)


def _parse_example_kernel(ctx, serialized, names, *defaults, sparse_keys, sparse_types,
                          dense_keys, dense_types, dense_shapes, dense_is_seq):
    if serialized.ndim > 1:
        raise errors.InvalidArgumentError(None, None, "Expected serialized to be a scalar or "
                                          "vector, got shape %s" % list(serialized.shape))
    records = serialized.reshape(-1)
    if names.size and names.size != records.size:
        raise errors.InvalidArgumentError(
            None, None, "Expected len(names) == len(serialized), but got: %d vs. %d"
            % (names.size, records.size))
    where = _Where(serialized.ndim == 0, names.reshape(-1).tolist())
    examples = [_example_features(r, where, i) for i, r in enumerate(records)]
    sparse = [_sparse_feature(examples, k, t, where) for k, t in zip(sparse_keys, sparse_types)]
    host = ctx.backend != "numpy"
    dense = []
    for key, dtype, dims, seq, default in zip(dense_keys, dense_types, dense_shapes,
                                              dense_is_seq, defaults):
        default = default.get() if host and dtype != _dtypes.string else default
        parse = _sequence_feature if seq else _fixed_feature
        value = parse(examples, key, dtype, tuple(dims), default, where)
        dense.append(value.reshape(value.shape[1:]) if where.single else value)
    outputs = ([s[0] for s in sparse] + [s[1] for s in sparse] + [s[2] for s in sparse] + dense)
    if host:
        outputs = [v if v.dtype == object else ctx.xp.asarray(v) for v in outputs]
    return outputs if len(outputs) != 1 else outputs[0]   # one output: its value, not a list


def _parse_example_shapes(op):
    a = op._attrs
    shape = op.inputs[0].get_shape()
    batch = None if shape.ndims is None else shape.as_list()
    rank = None if batch is None else len(batch) + 1
    n = len(a["sparse_keys"])
    out = ([TensorShape([None, rank])] * n + [TensorShape([None])] * n
           + [TensorShape([rank])] * n)
    for dims, seq in zip(a["dense_shapes"], a["dense_is_seq"]):
        out.append(unknown_shape() if batch is None else
                   TensorShape(batch + ([None] if seq else []) + list(dims)))
    return out


register_op("ParseExampleV2",
            dtype=lambda op: ([_dtypes.int64] * len(op._attrs["sparse_keys"])
                              + list(op._attrs["sparse_types"])
                              + [_dtypes.int64] * len(op._attrs["sparse_keys"])
                              + list(op._attrs["dense_types"])),
            shape=_parse_example_shapes, kernel=_parse_example_kernel, grad=None)


def _parse(serialized, features, example_names, scope):
    if not features:
        raise ValueError("Argument `features` cannot be None or falsy. Got %s" % (features,))
    sparse, dense = _features_config(features, (VarLenFeature, SparseFeature, FixedLenFeature,
                                                FixedLenSequenceFeature))
    names = (convert_to_tensor([], dtype=_dtypes.string) if example_names is None
             else _string_input(example_names, "example_names"))
    with serialized.graph.name_scope(scope):
        outputs = make_op(
            "ParseExampleV2", [serialized, names] + [d[4] for d in dense], name="ParseExampleV2",
            num_outputs=3 * len(sparse) + len(dense),
            sparse_keys=tuple(k for k, _ in sparse), sparse_types=tuple(t for _, t in sparse),
            dense_keys=tuple(d[0] for d in dense), dense_types=tuple(d[1] for d in dense),
            dense_shapes=tuple(list(d[2]) for d in dense),
            dense_is_seq=tuple(d[3] for d in dense))
    n = len(sparse)
    result = {key: SparseTensor(outputs[j], outputs[n + j], outputs[2 * n + j])
              for j, (key, _) in enumerate(sparse)}
    result.update((d[0], outputs[3 * n + j]) for j, d in enumerate(dense))
    return _sparse_features(features, result, serialized.get_shape().ndims)


def parse_example(serialized, features, name=None, example_names=None):
    """Parse the serialized Examples ``serialized`` (a string vector) as ``features`` say.

    Returns a dict with a Tensor (FixedLenFeature, FixedLenSequenceFeature) or a SparseTensor
    (VarLenFeature) per key of ``features``, each with the batch as its first dimension.
    ``example_names`` (strings, one per example) name the examples in error messages.
    """
    serialized = _string_input(serialized, "serialized")
    if serialized.get_shape().ndims not in (None, 0, 1):
        raise ValueError("parse_example: serialized must be a string vector (or a scalar), got "
                         "shape %s" % serialized.get_shape())
    return _parse(serialized, features, example_names, name or "ParseExample")


def parse_single_example(serialized, features, name=None, example_names=None):
    """Parse one serialized Example (a string scalar) as ``features`` say: like
    ``parse_example`` without the batch dimension (a VarLenFeature's indices are ``[i]``).

    >>> import zps as tf
    >>> ex = tf.train.Example(features=tf.train.Features(feature={
    ...     "x": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, 1.5]))}))
    >>> with tf.Graph().as_default():
    ...     x = tf.parse_single_example(ex.SerializeToString(),
    ...                                 {"x": tf.FixedLenFeature([2], tf.float32)})["x"]
    ...     print(tf.Session().run(x))
    [0.5 1.5]
    """
    serialized = _scalar_string(serialized, "serialized", "serialized")
    if example_names is not None:
        example_names = _scalar_string(example_names, "example_names", "names")
    return _parse(serialized, features, example_names, name or "ParseSingleExample")


def _scalar_string(value, name, what):
    """``value`` as a scalar string tensor (one of unknown rank reshaped to one), else
    ValueError naming it ``what`` (TF1's wording)."""
    t = _string_input(value, name)
    if t.get_shape().ndims not in (None, 0):
        raise ValueError("Input %s must be a scalar, got shape %s" % (what, t.get_shape()))
    return array_ops.reshape(t, []) if t.get_shape().ndims is None else t


# -- SparseFeature --------------------------------------------------------------------------------
# TF builds a SparseFeature's SparseTensor with sparse_merge (a ConcatV2 of the index columns, then
# a SparseReorder); one op does both here, with the errors of those two ops for features of
# mismatched lengths (the index features of different lengths; indices and values of different
# lengths, which TF lets through when already_sorted and which is reported here too).
def _sparse_feature_kernel(ctx, indices, dense_shape, *rest, num_ids, already_sorted):
    xp = ctx.xp
    ids, values, sizes = rest[:num_ids], rest[num_ids], rest[num_ids + 1:]
    kept = indices[:, :-1]
    for k, column in enumerate(ids):
        if column.shape[0] != kept.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = "
                "[%d,%d] vs. shape[%d] = [%d,1]" % (kept.shape[0], kept.shape[1], k + 1,
                                                    column.shape[0]))
    merged = xp.concatenate([kept] + [c.astype(np.int64).reshape(-1, 1) for c in ids], axis=1)
    if merged.shape[0] != values.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "Number of elements in indices (%d) and values (%d) do not match"
            % (merged.shape[0], values.shape[0]))
    shape = xp.concatenate([dense_shape[:-1], xp.asarray([int(s) for s in sizes], np.int64)])
    if not already_sorted and merged.shape[0] > 1:
        order = xp.lexsort(merged.T[::-1])     # row-major order, stable as SparseReorder
        merged, values = merged[order], values[order]
    return [merged, values, shape]


def _sparse_feature_shapes(op):
    rank = op.inputs[0].get_shape()[1].value
    rank = None if rank is None else rank - 1 + op._attrs["num_ids"]
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


register_op("SparseFeatureMerge",
            dtype=lambda op: [_dtypes.int64, op.inputs[2 + op._attrs["num_ids"]].dtype,
                              _dtypes.int64],
            shape=_sparse_feature_shapes, kernel=_sparse_feature_kernel, num_outputs=3, grad=None)


def _sizes(key, spec):
    """The dense sizes of a SparseFeature, one per index key (sparse_merge's checks)."""
    size = spec.size
    if isinstance(spec.index_key, str):
        if not isinstance(size, Tensor | numbers.Integral):
            raise TypeError("The size of SparseFeature '%s' (one index_key) has to be a Tensor or "
                            "Python int. Found %s" % (key, type(size)))
        return [size]
    if not isinstance(size, list | tuple) or not all(isinstance(s, Tensor | numbers.Integral)
                                                     for s in size):
        raise TypeError("The size of SparseFeature '%s' (a list of index_keys) has to be a list "
                        "of Tensors or Python ints. Found %s" % (key, type(size)))
    if len(size) != len(spec.index_key):
        raise ValueError("SparseFeature '%s' needs one size per index_key: sp_ids and vocab_size "
                         "have to have equal lengths." % key)
    return list(size)


def _sparse_features(features, parsed, rank):
    """TF's last step of parse_example: each SparseFeature's SparseTensor, made from the parsed
    index and value features; features parsed only for a SparseFeature are dropped."""
    out = dict(parsed)
    for key in sorted(features):
        spec = features[key]
        if not isinstance(spec, SparseFeature):
            continue
        sizes = [convert_to_tensor(s, dtype=_dtypes.int64) if isinstance(s, numbers.Integral)
                 else math_ops.cast(s, _dtypes.int64) for s in _sizes(key, spec)]
        ids = [parsed[k] for k in _index_keys(spec)]
        values = parsed[spec.value_key]
        with values.graph.name_scope("SparseMerge"):
            indices, merged, shape = make_op(
                "SparseFeatureMerge",
                [ids[0].indices, ids[0].dense_shape] + [i.values for i in ids]
                + [values.values] + sizes, name="SparseFeatureMerge",
                num_ids=len(ids), already_sorted=bool(spec.already_sorted))
        static = None
        if rank is not None:
            dims = [constant_value(s) for s in sizes]
            static = TensorShape([None] * rank + [None if d is None else int(d) for d in dims])
        out[key] = _sparse_out(indices, merged, shape, static)
    return {k: v for k, v in out.items() if k in features}


# -- ParseSequenceExampleV2 ------------------------------------------------------------------------
def _sequence_example(record, where, i):
    try:
        return SequenceExample.FromString(record)
    except (DecodeError, TypeError):
        raise errors.InvalidArgumentError(
            None, None, "Invalid protocol message input, example id: %s" % where.name(i)
        ) from None


def _list_values(feature, dtype):
    """The values of ``feature`` (``[]`` for a Feature with no list); None for another type."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    return getattr(feature, kind).value._items if _LISTS[kind] == dtype else None


def _check_types(contexts, lists, keys, where):
    """TF's first pass: every requested feature holds its dtype (any example, any step)."""
    context, sequence = keys
    for key, dtype in context:
        for e, features in enumerate(contexts):
            f = features.get(key)
            if f is not None and _list_values(f, dtype) is None:
                raise errors.InvalidArgumentError(
                    None, None, "Name: %s, Context feature: %s.  Data types don't match. Expected "
                    "type: %s" % (where.name(e), key, _TYPE_NAMES[dtype]))
    for key, dtype in sequence:
        for e, feature_lists in enumerate(lists):
            fl = feature_lists.get(key)
            for r, f in enumerate(fl.feature if fl is not None else ()):
                if _list_values(f, dtype) is None:
                    raise errors.InvalidArgumentError(
                        None, None, "Name: %s, Feature list: %s, Index: %d.  Data types don't "
                        "match. Expected type: %s" % (where.name(e), key, r, _TYPE_NAMES[dtype]))


def _context_dense(contexts, key, dtype, dims, default, where):
    n = int(np.prod(dims))
    default = default.ravel().tolist()
    found = [f.get(key) for f in contexts]
    found = [None if f is None else _list_values(f, dtype) for f in found]
    most = max([len(default)] + [len(v) for v in found if v is not None])
    if most != n:
        raise errors.InvalidArgumentError(
            None, None, "Inconsistent max number of elements for feature %s: expected %d, but "
            "found %d" % (key, n, most))
    for e, v in enumerate(found):
        if v is None and not default:
            raise errors.InvalidArgumentError(
                None, None, "Feature: %s (data type: %s) is required but could not be found."
                % (key, _TYPE_NAMES[dtype]))
        if v is not None and len(v) != n:
            raise errors.InvalidArgumentError(
                None, None, "Unexpected number of elements in example %s" % where.name(e))
    values = [x for v in found for x in (default if v is None else v)]
    return _array(values, dtype, (len(found),) + dims)


def _sequence_dense(lists, key, dtype, dims, allow_missing, where):
    n = int(np.prod(dims))
    found = [f.get(key) for f in lists]
    rows = [None if fl is None else [_list_values(f, dtype) for f in fl.feature] for fl in found]
    most = max((sum(len(v) for v in r) for r in rows if r is not None), default=0)
    if n and most % n:
        raise errors.InvalidArgumentError(
            None, None, "Feature list '%s' has an unexpected number of values.  Total values size: "
            "%d is not consistent with output shape: [?%s]"
            % (key, most, "".join(",%d" % d for d in dims)))
    for e, r in enumerate(rows):
        if r is None and not allow_missing:
            raise errors.InvalidArgumentError(
                None, None, "Name: %s, Feature list '%s' is required but could not be found.  Did "
                "you mean to include it in feature_list_dense_missing_assumed_empty or "
                "feature_list_dense_defaults?" % (where.name(e), key))
        for i, v in enumerate(r or ()):
            if len(v) != n:
                raise errors.InvalidArgumentError(
                    None, None, "Name: %s, Key: %s, Index: %d.  Number of values != expected.  "
                    "values size: %d but output shape: [%s]"
                    % (where.name(e), key, i, len(v), ",".join(map(str, dims))))
    lengths = np.array([len(r or ()) for r in rows], dtype=np.int64)
    longest = most // n if n else int(lengths.max(initial=0))
    out = np.full((len(rows), longest * n), b"" if dtype == _dtypes.string else 0,
                  dtype=object if dtype == _dtypes.string else dtype.as_numpy_dtype)
    for row, r in zip(out, rows):
        flat = [x for v in r or () for x in v]
        row[:len(flat)] = flat
    return out.reshape((len(rows), longest) + dims), lengths


def _sequence_sparse(lists, key, dtype, where):
    indices, values, longest, widest = [], [], 0, 0
    for e, feature_lists in enumerate(lists):
        fl = feature_lists.get(key)
        rows = [] if fl is None else [_list_values(f, dtype) for f in fl.feature]
        for r, v in enumerate(rows):
            indices.extend(([e] if not where.single else []) + [r, i] for i in range(len(v)))
            values.extend(v)
            widest = max(widest, len(v))
        longest = max(longest, len(rows))
    rank = 2 if where.single else 3
    shape = [longest, widest] if where.single else [len(lists), longest, widest]
    return (np.array(indices, dtype=np.int64).reshape(-1, rank), _array(values, dtype),
            np.array(shape, dtype=np.int64))


def _parse_sequence_example_kernel(ctx, serialized, names, *defaults, context_sparse_keys,
                                   context_sparse_types, context_dense_keys, context_dense_types,
                                   context_dense_shapes, feature_list_sparse_keys,
                                   feature_list_sparse_types, feature_list_dense_keys,
                                   feature_list_dense_types, feature_list_dense_shapes,
                                   feature_list_dense_missing_assumed_empty):
    if serialized.ndim > 1:
        raise errors.InvalidArgumentError(None, None, "Expected serialized to be a scalar or "
                                          "vector, got shape %s" % list(serialized.shape))
    records = serialized.reshape(-1)
    names = names.reshape(-1).tolist()
    if names and len(names) != records.size:
        raise errors.InvalidArgumentError(None, None, "example_names must be empty or have the "
                                          "correct number of elements")
    where = _Where(serialized.ndim == 0, names)
    parsed = [_sequence_example(r, where, i) for i, r in enumerate(records)]
    contexts = [p.context.feature for p in parsed]
    lists = [p.feature_lists.feature_list for p in parsed]
    _check_types(contexts, lists, (
        list(zip(context_sparse_keys, context_sparse_types))
        + list(zip(context_dense_keys, context_dense_types)),
        list(zip(feature_list_sparse_keys, feature_list_sparse_types))
        + list(zip(feature_list_dense_keys, feature_list_dense_types))), where)
    host = ctx.backend != "numpy"
    context_dense = [
        _context_dense(contexts, key, dtype, tuple(dims),
                       default.get() if host and dtype != _dtypes.string else default, where)
        for key, dtype, dims, default in zip(context_dense_keys, context_dense_types,
                                             context_dense_shapes, defaults)]
    context_sparse = [_sparse_feature(contexts, key, dtype, where)
                      for key, dtype in zip(context_sparse_keys, context_sparse_types)]
    sequence_dense = [
        _sequence_dense(lists, key, dtype, tuple(dims), allow_missing, where)
        for key, dtype, dims, allow_missing in zip(
            feature_list_dense_keys, feature_list_dense_types, feature_list_dense_shapes,
            feature_list_dense_missing_assumed_empty)]
    sequence_sparse = [_sequence_sparse(lists, key, dtype, where)
                       for key, dtype in zip(feature_list_sparse_keys, feature_list_sparse_types)]
    if where.single:
        context_dense = [v.reshape(v.shape[1:]) for v in context_dense]
        sequence_dense = [(v.reshape(v.shape[1:]), n.reshape(())) for v, n in sequence_dense]
    outputs = ([s[j] for j in range(3) for s in context_sparse] + context_dense
               + [s[j] for j in range(3) for s in sequence_sparse]
               + [d[0] for d in sequence_dense] + [d[1] for d in sequence_dense])
    if host:
        outputs = [v if v.dtype == object else ctx.xp.asarray(v) for v in outputs]
    return outputs if len(outputs) != 1 else outputs[0]   # one output: its value, not a list


def _parse_sequence_example_shapes(op):
    a = op._attrs
    shape = op.inputs[0].get_shape()
    batch = None if shape.ndims is None else shape.as_list()

    def sparse(n, extra):
        rank = None if batch is None else len(batch) + extra
        return [TensorShape([None, rank])] * n + [TensorShape([None])] * n \
            + [TensorShape([rank])] * n

    def dense(dims):
        return unknown_shape() if batch is None else TensorShape(batch + list(dims))

    return (sparse(len(a["context_sparse_keys"]), 1)
            + [dense(dims) for dims in a["context_dense_shapes"]]
            + sparse(len(a["feature_list_sparse_keys"]), 2)
            + [dense([None] + list(dims)) for dims in a["feature_list_dense_shapes"]]
            + [dense([]) for _ in a["feature_list_dense_shapes"]])


def _parse_sequence_example_dtypes(op):
    a = op._attrs
    cs, fs = len(a["context_sparse_keys"]), len(a["feature_list_sparse_keys"])
    return ([_dtypes.int64] * cs + list(a["context_sparse_types"]) + [_dtypes.int64] * cs
            + list(a["context_dense_types"])
            + [_dtypes.int64] * fs + list(a["feature_list_sparse_types"]) + [_dtypes.int64] * fs
            + list(a["feature_list_dense_types"])
            + [_dtypes.int64] * len(a["feature_list_dense_keys"]))


register_op("ParseSequenceExampleV2", dtype=_parse_sequence_example_dtypes,
            shape=_parse_sequence_example_shapes, kernel=_parse_sequence_example_kernel, grad=None)


def _parse_sequence(serialized, context_features, sequence_features, names, scope):
    """(context, feature_lists, lengths) dicts of the parsed SequenceExample(s)."""
    csparse, cdense = _features_config(context_features or {}, (VarLenFeature, FixedLenFeature))
    fsparse, fdense = _features_config(sequence_features or {},
                                       (VarLenFeature, FixedLenSequenceFeature), sequence=True)
    names = (convert_to_tensor([], dtype=_dtypes.string) if names is None
             else _string_input(names, "example_names"))
    with serialized.graph.name_scope(scope):
        outputs = make_op(
            "ParseSequenceExampleV2", [serialized, names] + [d[4] for d in cdense],
            name="ParseSequenceExampleV2",
            num_outputs=3 * len(csparse) + len(cdense) + 3 * len(fsparse) + 2 * len(fdense),
            context_sparse_keys=tuple(k for k, _ in csparse),
            context_sparse_types=tuple(t for _, t in csparse),
            context_dense_keys=tuple(d[0] for d in cdense),
            context_dense_types=tuple(d[1] for d in cdense),
            context_dense_shapes=tuple(list(d[2]) for d in cdense),
            feature_list_sparse_keys=tuple(k for k, _ in fsparse),
            feature_list_sparse_types=tuple(t for _, t in fsparse),
            feature_list_dense_keys=tuple(d[0] for d in fdense),
            feature_list_dense_types=tuple(d[1] for d in fdense),
            feature_list_dense_shapes=tuple(list(d[2]) for d in fdense),
            feature_list_dense_missing_assumed_empty=tuple(d[3] for d in fdense))
    outputs = iter([outputs] if isinstance(outputs, Tensor) else outputs)

    def take(n):
        return [next(outputs) for _ in range(n)]

    def sparse_tensors(keys):
        parts = take(len(keys)), take(len(keys)), take(len(keys))
        return {k: SparseTensor(*p) for k, p in zip(keys, zip(*parts))}

    context = sparse_tensors([k for k, _ in csparse])
    context.update(zip([d[0] for d in cdense], take(len(cdense))))
    feature_lists = sparse_tensors([k for k, _ in fsparse])
    feature_lists.update(zip([d[0] for d in fdense], take(len(fdense))))
    lengths = dict(zip([d[0] for d in fdense], take(len(fdense))))
    return context, feature_lists, lengths


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """Parse one serialized ``tf.train.SequenceExample`` (a string scalar): its ``context``
    features as ``context_features`` say (FixedLenFeature, VarLenFeature) and its
    ``feature_lists`` as ``sequence_features`` say (FixedLenSequenceFeature, VarLenFeature).

    Returns ``(context, feature_lists)``, dicts of Tensors and SparseTensors. A
    FixedLenSequenceFeature gives a ``[steps] + shape`` tensor (every step must hold ``shape``'s
    number of values; a missing feature list fails the op unless ``allow_missing``); a
    VarLenFeature over a feature list gives a SparseTensor with indices ``[step, i]``.
    ``example_name`` names the example in error messages.

    >>> import zps as tf
    >>> T = tf.train
    >>> se = T.SequenceExample(
    ...     context=T.Features(feature={"id": T.Feature(int64_list=T.Int64List(value=[7]))}),
    ...     feature_lists=T.FeatureLists(feature_list={"tokens": T.FeatureList(feature=[
    ...         T.Feature(int64_list=T.Int64List(value=[3])),
    ...         T.Feature(int64_list=T.Int64List(value=[5]))])}))
    >>> with tf.Graph().as_default():
    ...     context, steps = tf.parse_single_sequence_example(
    ...         se.SerializeToString(), {"id": tf.FixedLenFeature([], tf.int64)},
    ...         {"tokens": tf.FixedLenSequenceFeature([], tf.int64)})
    ...     out = tf.Session().run([context["id"], steps["tokens"]])
    >>> out[0].tolist(), out[1].tolist()
    (7, [3, 5])
    """
    if not (context_features or sequence_features):
        raise ValueError("Both context_features and sequence_features are None, but at least one "
                         "should have values.")
    serialized = _scalar_string(serialized, "serialized", "serialized")
    if example_name is not None:
        example_name = _scalar_string(example_name, "example_name", "example_name")
    return _parse_sequence(serialized, context_features, sequence_features, example_name,
                           name or "ParseSingleSequenceExample")[:2]


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """Parse a batch of serialized SequenceExamples (a string vector): as
    ``parse_single_sequence_example``, with the batch as the first dimension of every result.

    Returns ``(context, feature_lists, lengths)``: ``lengths`` holds, for each
    FixedLenSequenceFeature, the number of steps of each example (int64 ``[batch]``); its
    ``[batch, steps] + shape`` tensor is padded with 0 (b"" for strings) to the longest. A
    VarLenFeature over a feature list gives indices ``[example, step, i]``.
    """
    if not (context_features or sequence_features):
        raise ValueError("Both `context_features` and `sequence_features` argument are None, but "
                         "at least one should have values.")
    serialized = _string_input(serialized, "serialized")
    if serialized.get_shape().ndims not in (None, 0, 1):
        raise ValueError("Shape must be at most rank 1 but is rank %d: parse_sequence_example "
                         "takes a vector of serialized SequenceExamples"
                         % serialized.get_shape().ndims)
    return _parse_sequence(serialized, context_features, sequence_features, example_names,
                           name or "ParseSequenceExample")


# -- DecodeRaw -------------------------------------------------------------------------------------
_RAW_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.uint8,
              _dtypes.int16, _dtypes.int8, _dtypes.int64, _dtypes.bool, _dtypes.uint16,
              _dtypes.complex64, _dtypes.complex128)


def _decode_raw_kernel(ctx, data, out_type, little_endian):
    native = np.dtype(out_type.as_numpy_dtype)
    wire = np.dtype(np.uint8 if native == np.bool_ else native).newbyteorder(
        "<" if little_endian else ">")
    flat = data.reshape(-1)
    size = len(flat[0]) if flat.size else 0
    if size % wire.itemsize:
        raise errors.InvalidArgumentError(
            None, None, "Input to DecodeRaw has length %d that is not a multiple of %d, the size "
            "of %s" % (size, wire.itemsize, out_type.name))
    for i, s in enumerate(flat):
        if len(s) != size:
            raise errors.InvalidArgumentError(
                None, None, "DecodeRaw requires input strings to all be the same size, but "
                "element %d has size %d != %d (the size of element 0)" % (i, len(s), size))
    values = np.frombuffer(b"".join(flat.tolist()), dtype=wire)
    values = values != 0 if native == np.bool_ else values.astype(native)
    return ctx.xp.asarray(values.reshape(data.shape + (size // wire.itemsize,)))


register_op("DecodeRaw", dtype=lambda op: op._attrs["out_type"],
            shape=lambda op: op.inputs[0].get_shape().concatenate([None]),
            kernel=_decode_raw_kernel, grad=None)


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None,
               bytes=None):  # noqa: A002 - TF1's deprecated name of input_bytes
    """Reinterpret the bytes of each string of ``input_bytes`` as a vector of ``out_type``
    numbers (all strings must have the same length); the result has one more dimension.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.decode_raw([b"\\x01\\x00\\x02\\x00"], tf.int16)))
    [[1 2]]
    """
    if input_bytes is not None and bytes is not None:
        raise ValueError("Cannot specify both 'input_bytes' and 'bytes'")
    data = input_bytes if input_bytes is not None else bytes
    if data is None or out_type is None:
        raise TypeError("decode_raw needs input_bytes and out_type")
    out_type = _dtypes.as_dtype(out_type).base_dtype
    if out_type not in _RAW_TYPES:
        raise TypeError("decode_raw: out_type %s is not supported; use one of %s"
                        % (out_type.name, ", ".join(t.name for t in _RAW_TYPES)))
    return make_op("DecodeRaw", [_string_input(data, "input_bytes")], name=name or "DecodeRaw",
                   out_type=out_type, little_endian=bool(little_endian))


# -- ReadFile --------------------------------------------------------------------------------------
def _read_file_kernel(ctx, filename):
    name = filename.item() if isinstance(filename, np.ndarray) else filename
    path = name.decode("utf-8") if isinstance(name, bytes) else str(name)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise errors.from_os_error(e, path) from e
    return _strings((), [data])


# Stateful: it reads the file each time it runs (never folded, never run on an I/O thread).
register_op("ReadFile", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_read_file_kernel, stateful=True, grad=None)


def read_file(filename, name=None):
    """The contents of the file ``filename`` (a string scalar) as a string scalar."""
    filename = _string_input(filename, "filename")
    if filename.get_shape().ndims not in (None, 0):
        raise ValueError("read_file: filename must be a string scalar, got shape %s"
                         % filename.get_shape())
    return make_op("ReadFile", [filename], name=name or "ReadFile")


__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "SparseFeature", "VarLenFeature",
           "decode_raw", "parse_example", "parse_single_example", "parse_single_sequence_example",
           "read_file"]
