"""String ops: splitting, joining, converting and CSV decoding (TF1's ``tf.string_split`` ...).

Strings are numpy object arrays of ``bytes``. Every op here runs on the host (``CPU_ONLY``) and
is not differentiable. Conversions that fail raise InvalidArgumentError with TF1's messages,
naming the string (and, for CSV, the field and record) that was wrong.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     num, word = tf.decode_csv(["1,a", "2,b"], record_defaults=[[0], [""]])
...     parts = tf.string_split(["x y", "z"])
...     with tf.Session() as sess:
...         n, w, p = sess.run([num, word, parts])
>>> n.tolist(), w.tolist(), p.values.tolist(), p.dense_shape.tolist()
([1, 2], [b'a', b'b'], [b'x', b'y', b'z'], [2, 2])
"""

import re

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops.fingerprint import fingerprint64, siphash
from zps.ops.op_util import broadcast_static, const_axis, make_op, normalize_axis, same_shape
from zps.ops.sparse_ops import SparseTensor


def _strings(shape, items):
    """An object array of ``shape`` holding ``items`` (bytes), never a numpy bytes array."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def _string_tensor(value, name):
    t = convert_to_tensor(value, dtype=_dtypes.string, name=name)
    if t.dtype.base_dtype != _dtypes.string:
        raise TypeError("%s must be a string tensor, got %s (%s)" % (name, t.dtype.name, t.name))
    return t


# -- number parsing shared by StringToNumber and DecodeCSV (TF's safe_strto*: spaces allowed) ----
_INT = re.compile(rb"^\s*[+-]?[0-9]+\s*$")
_FLOAT = re.compile(rb"^\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\s*$",
                    re.IGNORECASE)


def _parse_number(text, np_dtype):
    """``text`` (bytes) as a number of ``np_dtype``, or None when it is not one (or overflows)."""
    if np.issubdtype(np_dtype, np.integer):
        if not _INT.match(text):
            return None
        value = int(text)
        info = np.iinfo(np_dtype)
        return value if info.min <= value <= info.max else None
    if not _FLOAT.match(text):
        return None
    return float(text)


# -- StringSplit ---------------------------------------------------------------------------------
def _split_kernel(ctx, source, delimiter, skip_empty):
    sep = delimiter.item()
    indices, values, width = [], [], 0
    for row, text in enumerate(source.ravel()):
        if sep == b"":
            tokens = [text[i:i + 1] for i in range(len(text))]
        else:
            # TF1: each byte of the delimiter splits.
            tokens = re.split(b"[" + re.escape(sep) + b"]", text) if text else []
        if skip_empty:
            tokens = [t for t in tokens if t]
        indices += [(row, col) for col in range(len(tokens))]
        values += tokens
        width = max(width, len(tokens))
    return (np.array(indices, dtype=np.int64).reshape(-1, 2), _strings(len(values), values),
            np.array([source.size, width], dtype=np.int64))


register_op("StringSplit", dtype=lambda op: [_dtypes.int64, _dtypes.string, _dtypes.int64],
            shape=lambda op: [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])],
            kernel=_split_kernel, num_outputs=3, grad=None)


def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor",
                 name=None):
    """Split each string of the 1-D ``source`` at any byte of ``sep``; a SparseTensor.

    ``sep`` (TF1's older name: ``delimiter``) defaults to " "; ``""`` splits into single bytes;
    ``skip_empty`` drops empty tokens.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     st = tf.string_split(["a b", "c"])
    ...     print(tf.Session().run(st.values).tolist())
    [b'a', b'b', b'c']
    """
    if sep is not None and delimiter is not None:
        raise ValueError("string_split: pass sep or delimiter (its deprecated name), not both")
    if result_type != "SparseTensor":
        raise ValueError("string_split: zps supports result_type='SparseTensor' only, got %r"
                         % (result_type,))
    source = _string_tensor(source, "source")
    source.get_shape().with_rank(1)
    sep = _string_tensor(next((s for s in (sep, delimiter) if s is not None), " "), "delimiter")
    indices, values, shape = make_op("StringSplit", [source, sep], name=name or "StringSplit",
                                     skip_empty=bool(skip_empty))
    return SparseTensor(indices, values, shape)


# -- StringToNumber ------------------------------------------------------------------------------
_NUMBER_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64)


def _to_number_kernel(ctx, strings, out_type):
    np_dtype = _dtypes.as_dtype(out_type).as_numpy_dtype
    out = np.empty(strings.shape, dtype=np_dtype)
    flat = out.reshape(-1)
    for i, text in enumerate(strings.ravel()):
        value = _parse_number(text, np_dtype)
        if value is None:
            raise errors.InvalidArgumentError(
                None, None, "StringToNumberOp could not correctly convert string: %s"
                % text.decode("utf-8", "replace"))
        flat[i] = value
    return out


register_op("StringToNumber", dtype=lambda op: op._attrs["out_type"], shape=same_shape,
            kernel=_to_number_kernel, grad=None)


def string_to_number(string_tensor, out_type=_dtypes.float32, name=None):
    """Parse each string as a number of ``out_type`` (float32/64, int32/64).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_to_number(["1.5", "-2"])).tolist())
    [1.5, -2.0]
    """
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in _NUMBER_TYPES:
        raise TypeError("string_to_number: out_type must be one of %s, got %s"
                        % ([d.name for d in _NUMBER_TYPES], out_type.name))
    return make_op("StringToNumber", [_string_tensor(string_tensor, "string_tensor")],
                   name=name or "StringToNumber", out_type=out_type)


# -- AsString ------------------------------------------------------------------------------------
def _as_string_kernel(ctx, x, fmt):
    if x.dtype == np.bool_:
        items = [b"true" if v else b"false" for v in x.ravel()]
    else:
        items = [(fmt % v).encode() for v in x.ravel().tolist()]
    return _strings(x.shape, items)


register_op("AsString", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_as_string_kernel, grad=None)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Each number (or bool) as a string, formatted as C's printf (``%f``, ``%d`` ...).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.as_string([1.5, 2.0], precision=2)).tolist())
    [b'1.50', b'2.00']
    """
    x = convert_to_tensor(input, name="input")
    dtype = x.dtype.base_dtype
    if len(fill) > 1:
        raise ValueError("as_string: fill string must be one or fewer characters, got %r" % fill)
    if fill and fill not in " +-0#":
        raise ValueError("as_string: fill argument %r is not supported (use one of ' +-0#')" % fill)
    if scientific and shortest:
        raise ValueError("as_string: cannot select both scientific and shortest notation")
    if dtype.is_integer and (precision > -1 or scientific or shortest):
        raise ValueError("as_string: precision, scientific and shortest apply only to floats, "
                         "not to %s" % dtype.name)
    if not (dtype.is_integer or dtype.is_floating or dtype.is_bool):
        raise TypeError("as_string: input must be a number or bool, got %s" % dtype.name)
    fmt = "%" + fill + ("%d" % width if width > -1 else "") + (
        ".%d" % precision if precision > -1 else "")
    fmt += "d" if dtype.is_integer else "g" if shortest else "e" if scientific else "f"
    return make_op("AsString", [x], name=name or "AsString", fmt=fmt)


# -- Substr --------------------------------------------------------------------------------------
def _substr_kernel(ctx, strings, pos, length):
    strings, pos, length = np.broadcast_arrays(strings, pos, length)
    items = []
    for i, (text, p, n) in enumerate(zip(strings.ravel(), pos.ravel().tolist(),
                                         length.ravel().tolist())):
        if not -len(text) <= p <= len(text):
            raise errors.InvalidArgumentError(
                None, None, "pos %d out of range for string b'%s' at index %d"
                % (p, text.decode("utf-8", "replace"), i))
        start = p if p >= 0 else len(text) + p
        items.append(text[start:start + max(n, 0)])
    return _strings(strings.shape, items)


register_op("Substr", dtype=lambda op: _dtypes.string,
            shape=lambda op: broadcast_static(op.inputs[0].get_shape(), op.inputs[1].get_shape()),
            kernel=_substr_kernel, grad=None)


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 - TF1's argument names
    """The substrings ``input[pos:pos + len]`` (bytes; a negative ``pos`` counts from the end).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.substr(["hello"], 1, 3)).tolist())
    [b'ell']
    """
    if unit != "BYTE":
        raise ValueError("substr: only unit='BYTE' is supported by zps, got %r" % (unit,))
    strings = _string_tensor(input, "input")
    pos = convert_to_tensor(pos, dtype=_dtypes.int32, name="pos")
    length = convert_to_tensor(len, dtype=pos.dtype, name="len")
    if not pos.get_shape().is_compatible_with(length.get_shape()):
        raise ValueError("substr: pos %s and len %s must have the same shape"
                         % (pos.get_shape(), length.get_shape()))
    return make_op("Substr", [strings, pos, length], name=name or "Substr")


# -- ReduceJoin ----------------------------------------------------------------------------------
def _reduce_join_kernel(ctx, inputs, axes, keep_dims, separator):
    axes = list(range(inputs.ndim))[::-1] if axes is None else list(axes)
    kept = [a for a in range(inputs.ndim) if a not in axes]
    kept_shape = [inputs.shape[a] for a in kept]
    # One row per output string; TF1 joins with the first listed axis varying fastest.
    rows = inputs.transpose(kept + axes[::-1]).reshape(
        int(np.prod(kept_shape, dtype=np.int64)), int(np.prod([inputs.shape[a] for a in axes],
                                                              dtype=np.int64)))
    sep = separator.encode()
    joined = _strings(kept_shape, [sep.join(row) for row in rows.tolist()])
    if keep_dims:
        joined = joined.reshape([1 if a in axes else inputs.shape[a] for a in range(inputs.ndim)])
    return joined


def _reduce_join_shape(op):
    s = op.inputs[0].get_shape()
    axes = op._attrs["axes"]
    if s.ndims is None:
        return unknown_shape()
    axes = range(s.ndims) if axes is None else {a % s.ndims for a in axes}
    dims = s.as_list()
    if op._attrs["keep_dims"]:
        return TensorShape([1 if a in axes else d for a, d in enumerate(dims)])
    return TensorShape([d for a, d in enumerate(dims) if a not in axes])


register_op("ReduceJoin", dtype=lambda op: _dtypes.string, shape=_reduce_join_shape,
            kernel=_reduce_join_kernel, grad=None)


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """Join the strings of ``inputs`` along ``axis`` (all axes when None) with ``separator``;
    ``keepdims`` (or its older name ``keep_dims``) keeps the reduced axes with length 1.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.reduce_join([["a", "b"], ["c", "d"]], axis=1)).tolist())
    [b'ab', b'cd']
    """
    if axis is not None and reduction_indices is not None:
        raise ValueError("reduce_join: pass axis or reduction_indices, not both")
    if keep_dims is not None and keepdims is not None:
        raise ValueError("reduce_join: pass keepdims or keep_dims (its deprecated name), not both")
    axis = axis if axis is not None else reduction_indices
    inputs = _string_tensor(inputs, "inputs")
    axis = const_axis(axis, "reduce_join axis")
    ndims = inputs.get_shape().ndims
    if axis is not None:
        listed = [int(a) for a in (axis if isinstance(axis, list | tuple) else [axis])]
        if ndims is None:
            raise ValueError("reduce_join over an axis needs inputs of known rank (%s)"
                             % inputs.name)
        normalize_axis(listed, ndims, "reduce_join")   # validates the range
        if len({a % ndims for a in listed}) != len(listed):
            raise ValueError("reduce_join: duplicate axis in %s" % listed)
        axis = tuple(a % ndims for a in listed)
    return make_op("ReduceJoin", [inputs], name=name or "ReduceJoin", axes=axis,
                   keep_dims=bool(keepdims or keep_dims), separator=str(separator))


# -- StringJoin ----------------------------------------------------------------------------------
def _string_join_kernel(ctx, *inputs, separator):
    shape = next((x.shape for x in inputs if x.ndim), ())
    for i, x in enumerate(inputs):
        if x.ndim and x.shape != shape:
            raise errors.InvalidArgumentError(
                None, None, "Input shapes do not match: %s vs. %s (input %d of StringJoin)"
                % (list(shape), list(x.shape), i))
    columns = [np.broadcast_to(x, shape).ravel() for x in inputs]
    sep = separator.encode()
    return _strings(shape, [sep.join(parts) for parts in zip(*columns)])


def _string_join_shape(op):
    out = TensorShape([])
    for t in op.inputs:
        s = t.get_shape()
        if s.ndims == 0:
            continue
        if out.ndims == 0:
            out = s
        elif not out.is_compatible_with(s):
            raise ValueError("string_join: inputs must be scalars or have the same shape; got %s "
                             "and %s (op %s)" % (out, s, op.name))
        else:
            out = out.merge_with(s)
    return out


register_op("StringJoin", dtype=lambda op: _dtypes.string, shape=_string_join_shape,
            kernel=_string_join_kernel, grad=None)


def string_join(inputs, separator="", name=None):
    """Join the strings of a list of tensors elementwise (scalars broadcast).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_join(["a", ["b", "c"]], separator="+")).tolist())
    [b'a+b', b'a+c']
    """
    tensors = [_string_tensor(x, "inputs_%d" % i) for i, x in enumerate(inputs)]
    if not tensors:
        raise ValueError("string_join needs at least one input")
    return make_op("StringJoin", tensors, name=name or "StringJoin", separator=str(separator))


# -- DecodeCSV -----------------------------------------------------------------------------------
def _csv_fields(record, delim, use_quote, record_index):
    """Split one CSV record (bytes) into its fields, RFC 4180 quoting as TF's DecodeCSV."""
    if not record:
        return []
    fields, i, n = [], 0, len(record)
    while True:
        if use_quote and record[i:i + 1] == b'"':
            field, i = bytearray(), i + 1
            while True:
                if i >= n:
                    raise errors.InvalidArgumentError(
                        None, None, "Quoted field has to end with quote followed by delim or end")
                c = record[i:i + 1]
                if c == b'"':
                    if record[i + 1:i + 2] == b'"':
                        field += b'"'
                        i += 2
                        continue
                    i += 1
                    if i < n and record[i:i + 1] != delim:
                        raise errors.InvalidArgumentError(
                            None, None, "Quote inside a string has to be escaped by another quote")
                    break
                field += c
                i += 1
            fields.append(bytes(field))
        else:
            end = record.find(delim, i)
            end = n if end < 0 else end
            field = record[i:end]
            if use_quote and b'"' in field:
                raise errors.InvalidArgumentError(
                    None, None, "Unquoted fields cannot have quotes/CRLFs inside (record %d)"
                    % record_index)
            fields.append(field)
            i = end
        if i >= n:
            return fields
        i += 1                      # the delimiter
        if i == n:                  # a trailing delimiter: one more, empty field
            fields.append(b"")
            return fields


_CSV_TYPE_NAMES = {np.dtype(np.int32): "int32", np.dtype(np.int64): "int64",
                   np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def _decode_csv_kernel(ctx, records, *defaults, field_delim, use_quote_delim, na_value,
                       select_cols):
    delim, na = field_delim.encode(), na_value.encode()
    if len(delim) != 1:
        raise errors.InvalidArgumentError(None, None, "field_delim should be only 1 char")
    cols = list(range(len(defaults))) if select_cols is None else list(select_cols)
    outputs = [np.empty(records.shape, dtype=d.dtype) for d in defaults]
    flats = [o.reshape(-1) for o in outputs]
    for r, record in enumerate(records.ravel()):
        fields = _csv_fields(record, delim, use_quote_delim, r)
        if (select_cols is None and len(fields) != len(defaults)) or (
                select_cols is not None and len(fields) <= cols[-1]):
            raise errors.InvalidArgumentError(
                None, None, "Expect %d fields but have %d in record %d"
                % (len(defaults) if select_cols is None else cols[-1] + 1, len(fields), r))
        for f, (col, default) in enumerate(zip(cols, defaults)):
            text = fields[col]
            if not text or text == na:
                if default.size == 0:
                    raise errors.InvalidArgumentError(
                        None, None, "Field %d is required but missing in record %d!" % (f, r))
                flats[f][r] = default.reshape(-1)[0]
            elif default.dtype == object:
                flats[f][r] = text
            else:
                value = _parse_number(text, default.dtype)
                if value is None:
                    raise errors.InvalidArgumentError(
                        None, None, "Field %d in record %d is not a valid %s: %s"
                        % (f, r, _CSV_TYPE_NAMES[default.dtype], text.decode("utf-8", "replace")))
                flats[f][r] = value
    return outputs


register_op("DecodeCSV", dtype=lambda op: [t.dtype.base_dtype for t in op.inputs[1:]],
            shape=lambda op: [op.inputs[0].get_shape()] * (len(op.inputs) - 1),
            kernel=_decode_csv_kernel, grad=None)

_CSV_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Parse CSV ``records`` into one tensor per column, shaped as ``records``.

    Each of ``record_defaults`` gives its column's type and the value of an empty (or
    ``na_value``) field; an empty default makes the column required.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     a, b = tf.decode_csv(["1,2.5", "3,"], [[0], [-1.0]])
    ...     print(tf.Session().run([a, b]))
    [array([1, 3], dtype=int32), array([ 2.5, -1. ], dtype=float32)]
    """
    if select_cols is not None:
        select_cols = tuple(int(c) for c in select_cols)
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    records = _string_tensor(records, "records")
    defaults = []
    for i, d in enumerate(record_defaults):
        t = convert_to_tensor(d, name="record_defaults_%d" % i)
        if t.dtype.base_dtype not in _CSV_TYPES:
            raise TypeError("decode_csv: record_defaults[%d] has type %s; supported: %s"
                            % (i, t.dtype.name, [d.name for d in _CSV_TYPES]))
        n = t.get_shape().num_elements()
        if n is not None and n > 1:
            raise ValueError("decode_csv: record_defaults[%d] must have at most one element (a "
                             "default value, or none for a required column), got shape %s"
                             % (i, t.get_shape()))
        defaults.append(t)
    return make_op("DecodeCSV", [records] + defaults, name=name or "DecodeCSV",
                   num_outputs=len(defaults), field_delim=str(field_delim),
                   use_quote_delim=bool(use_quote_delim), na_value=str(na_value),
                   select_cols=select_cols)


# -- StringToHashBucketFast / StringToHashBucketStrong -------------------------------------------
def _hash_buckets(strings, num_buckets, hash_fn):
    out = np.fromiter((hash_fn(s) % num_buckets for s in strings.ravel()), dtype=np.int64,
                      count=strings.size)
    return out.reshape(strings.shape)


def _hash_bucket_fast_kernel(ctx, strings, num_buckets):
    return _hash_buckets(strings, num_buckets, fingerprint64)


def _hash_bucket_strong_kernel(ctx, strings, num_buckets, key):
    return _hash_buckets(strings, num_buckets, lambda s: siphash(key, s))


register_op("StringToHashBucketFast", dtype=lambda op: _dtypes.int64, shape=same_shape,
            kernel=_hash_bucket_fast_kernel, grad=None)
register_op("StringToHashBucketStrong", dtype=lambda op: _dtypes.int64, shape=same_shape,
            kernel=_hash_bucket_strong_kernel, grad=None)


def _hash_bucket_op(op_type, what, strings, num_buckets, name, **attrs):
    if int(num_buckets) < 1:
        raise ValueError("%s: num_buckets must be >= 1, got %s" % (what, num_buckets))
    return make_op(op_type, [_string_tensor(strings, "input")], name=name or op_type,
                   num_buckets=int(num_buckets), **attrs)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002 - TF1's name
    """Each string's bucket in ``[0, num_buckets)``: FarmHash ``Fingerprint64(s) % num_buckets``,
    bit for bit TF's (the buckets of hashed feature columns).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_to_hash_bucket_fast(["a", "b", "a"], 10)).tolist())
    [9, 2, 9]
    """
    return _hash_bucket_op("StringToHashBucketFast", "string_to_hash_bucket_fast", input,
                           num_buckets, name)


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002 - TF1's name
    """Each string's bucket in ``[0, num_buckets)`` by SipHash-2-4 under the secret ``key`` (two
    ints), bit for bit TF's: buckets an adversary cannot aim at without the key.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_to_hash_bucket_strong(["a", "b"], 10, [1, 2])).tolist())
    [6, 4]
    """
    key = tuple(int(k) & 0xFFFFFFFFFFFFFFFF for k in key)
    if len(key) != 2:
        raise ValueError("string_to_hash_bucket_strong: key must be two ints, got %d" % len(key))
    return _hash_bucket_op("StringToHashBucketStrong", "string_to_hash_bucket_strong", input,
                           num_buckets, name, key=key)


__all__ = ["as_string", "decode_csv", "reduce_join", "string_join", "string_split",
           "string_to_hash_bucket_fast", "string_to_hash_bucket_strong", "string_to_number",
           "substr"]
