"""Parsing ops: ``tf.parse_example`` / ``tf.parse_single_example`` read serialized
``tf.train.Example`` protos into tensors; ``tf.decode_raw`` reads the bytes of strings as numbers;
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

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.example_pb import Example
from zps.framework.graph import Tensor, convert_to_tensor
from zps.framework.protobuf import DecodeError
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import array_ops
from zps.ops.op_util import make_op, scalar_shape
from zps.ops.sparse_ops import _sparse_out
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


# TF's names of the value types, in its error messages; and the Feature list holding each.
_TYPE_NAMES = {_dtypes.int64: "int64", _dtypes.float32: "float", _dtypes.string: "string"}
_LISTS = {"int64_list": _dtypes.int64, "float_list": _dtypes.float32,
          "bytes_list": _dtypes.string}


def _feature_dtype(key, spec):
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


def _features_config(features):
    """The op's attrs and default inputs for the ``features`` dict, sorted by key (as TF)."""
    if not features:
        raise ValueError("Argument `features` cannot be None or falsy. Got %s" % (features,))
    for key in features:
        if not isinstance(key, str):
            raise TypeError("Feature keys must be strings, got %r (%s)" % (key,
                                                                          type(key).__name__))
    sparse, dense = [], []
    for key in sorted(features):
        spec = features[key]
        if isinstance(spec, VarLenFeature):
            sparse.append((key, _feature_dtype(key, spec)))
        elif isinstance(spec, FixedLenFeature):
            dtype, dims = _feature_dtype(key, spec), _known_dims(key, spec, "fixed")
            n = int(np.prod(dims))
            default = (convert_to_tensor(np.zeros([0], dtype=dtype.as_numpy_dtype), dtype=dtype)
                       if spec.default_value is None else
                       _default_tensor(key, spec.default_value, dtype, n, "its shape %s has"
                                       % list(dims)))
            dense.append((key, dtype, dims, False, default))
        elif isinstance(spec, FixedLenSequenceFeature):
            if not spec.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to "
                                 "be True.")
            dtype, dims = _feature_dtype(key, spec), _known_dims(key, spec, "sequence")
            pad = (b"" if dtype == _dtypes.string else 0) if spec.default_value is None \
                else spec.default_value
            dense.append((key, dtype, dims, True,
                          _default_tensor(key, pad, dtype, 1, "a sequence's padding value needs")))
        else:
            raise ValueError("Unsupported %s %s for key '%s': use FixedLenFeature, VarLenFeature "
                             "or FixedLenSequenceFeature" % (type(spec).__name__, spec, key))
    return sparse, dense


# -- ParseExampleV2 --------------------------------------------------------------------------------
class _Where:
    """Where in a batch a value came from, as TF's error messages say it."""

    def __init__(self, single, names):
        self.single = single
        self.names = [n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n)
                      for n in names]

    def name(self, i):
        return self.names[i] if self.names else "<unknown>"

    def key(self, i, key):
        if self.single:
            return "%sKey: %s.  " % ("Name: %s, " % self.names[0] if self.names else "", key)
        return "Name: %s, Key: %s, Index: %d.  " % (self.name(i), key, i)

    def feature(self, i):
        return "" if self.single and not self.names else "Name: %s, " % self.name(i)


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
    sparse, dense = _features_config(features)
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
    shape = serialized.get_shape()
    static = None if shape.ndims is None else TensorShape(shape.as_list() + [None])
    result = {key: _sparse_out(outputs[j], outputs[n + j], outputs[2 * n + j], static)
              for j, (key, _) in enumerate(sparse)}
    result.update((d[0], outputs[3 * n + j]) for j, d in enumerate(dense))
    return result


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
    serialized = _string_input(serialized, "serialized")
    if serialized.get_shape().ndims not in (None, 0):
        raise ValueError("Input serialized must be a scalar, got shape %s"
                         % serialized.get_shape())
    if serialized.get_shape().ndims is None:
        serialized = array_ops.reshape(serialized, [])
    if example_names is not None:
        example_names = _string_input(example_names, "example_names")
        if example_names.get_shape().ndims not in (None, 0):
            raise ValueError("Input names must be a scalar, got shape %s"
                             % example_names.get_shape())
    return _parse(serialized, features, example_names, name or "ParseSingleExample")


# -- DecodeRaw -------------------------------------------------------------------------------------
_RAW_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.uint8,
              _dtypes.int16, _dtypes.int8, _dtypes.int64, _dtypes.bool)


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


__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "decode_raw",
           "parse_example", "parse_single_example", "read_file"]
