"""``tf.io.serialize_tensor`` and ``tf.io.parse_tensor``: a tensor as the bytes of TensorFlow's
TensorProto, and back.

``serialize_tensor`` writes the bytes TF writes (numbers as raw little-endian ``tensor_content``,
strings as ``string_val``: the encoder tensor summaries use), so either side can read the other's.
``parse_tensor`` reads ``tensor_content`` or the ``*_val`` field of the type (TF's
Tensor::FromProto: too few values repeat the last one, none give zeros, extra ones are dropped).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     data = tf.io.serialize_tensor(tf.constant([[1.5, 2.0]]))
...     back = tf.io.parse_tensor(data, tf.float32)
...     sess = tf.Session()
...     print(sess.run(data).hex(), sess.run(back).tolist())
08011208120208011202080222080000c03f00000040 [[1.5, 2.0]]
"""

import base64

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor
from zps.framework.protobuf import DecodeError
from zps.framework.registry import register_op
from zps.framework.tensor_shape import unknown_shape
from zps.ops.op_util import make_op, scalar_shape
from zps.ops.summary_ops import _host, _string_scalar, _tensor_proto
from zps.ops.summary_proto import _DATA_TYPES, TensorProto

__all__ = ["parse_tensor", "serialize_tensor"]

# The *_val field that holds each dtype's values when a TensorProto has no tensor_content.
_VAL_FIELDS = {"float16": "half_val", "float32": "float_val", "float64": "double_val",
               "int8": "int_val", "int16": "int_val", "int32": "int_val", "uint8": "int_val",
               "int64": "int64_val", "bool": "bool_val", "string": "string_val",
               "complex64": "scomplex_val", "complex128": "dcomplex_val", "uint16": "int_val",
               "uint32": "uint32_val", "uint64": "uint64_val"}
_BY_ENUM = {d.as_datatype_enum: d for d in _dtypes.ALL}


def _tf_type_name(enum):
    # TF's DataTypeString: DT_FLOAT -> "float", DT_HALF -> "half" ...
    return _DATA_TYPES.get(enum, "DT_INVALID")[3:].lower() if enum else "invalid"


# -- SerializeTensor -----------------------------------------------------------------------------
def _serialize_kernel(ctx, tensor):
    return _string_scalar(_tensor_proto(np.asarray(_host(ctx, tensor))))


register_op("SerializeTensor", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_serialize_kernel, grad=None)


def serialize_tensor(tensor, name=None):
    """A scalar string: ``tensor`` as the serialized TensorProto TF writes (see module doc)."""
    return make_op("SerializeTensor", [convert_to_tensor(tensor)], name=name or "SerializeTensor")


# -- ParseTensor ---------------------------------------------------------------------------------
def _values(proto, dtype, shape):
    """The flat values of ``proto`` (already known to be of ``dtype``), or None if malformed."""
    n = int(np.prod(shape, dtype=np.int64))
    if proto.tensor_content:
        wire = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
        if dtype is _dtypes.string or len(proto.tensor_content) != n * wire.itemsize:
            return None
        return np.frombuffer(proto.tensor_content, dtype=wire).astype(dtype.as_numpy_dtype)
    given = list(getattr(proto, _VAL_FIELDS[dtype.name]))
    if dtype.is_complex:   # (real, imag) pairs
        pairs = np.asarray(given[:min(len(given), 2 * n) // 2 * 2], np.float64)
        given = (pairs[0::2] + 1j * pairs[1::2]).tolist()
    given = given[:n]
    if dtype is _dtypes.float16:   # half_val holds the bit patterns
        given = np.array(given, np.uint16).view(np.float16).tolist()
    flat = np.empty(n, dtype.as_numpy_dtype)
    flat[:] = b"" if dtype is _dtypes.string else 0
    if given:
        flat[:len(given)] = given
        flat[len(given):] = given[-1]
    return flat


def _parse_kernel(ctx, serialized, out_type):
    serialized = np.asarray(_host(ctx, serialized))
    if serialized.shape:
        raise errors.InvalidArgumentError(
            None, None, "Expected `serialized` to be a scalar, got shape: [%s]"
            % ",".join(str(d) for d in serialized.shape))
    data = serialized.item()
    try:
        proto = TensorProto.FromString(data)
    except (DecodeError, ValueError, TypeError):
        raise errors.InvalidArgumentError(
            None, None, "Could not parse `serialized` as TensorProto, base64: %s"
            % base64.b64encode(data).decode("ascii")) from None
    shape = [d.size for d in proto.tensor_shape.dim]
    dtype = _BY_ENUM.get(proto.dtype)
    flat = None if dtype is None or min(shape, default=0) < 0 else _values(proto, dtype, shape)
    if dtype is not None and flat is None:
        raise errors.InvalidArgumentError(None, None, "Cannot parse tensor from proto: %s" % proto)
    if dtype is not out_type:
        raise errors.InvalidArgumentError(
            None, None, "Type mismatch between parsed tensor (%s) and dtype (%s); pass the "
            "out_type the tensor was serialized with" % (_tf_type_name(proto.dtype),
                                                         _tf_type_name(out_type.as_datatype_enum)))
    out = flat.reshape(shape)
    return out if dtype is _dtypes.string else ctx.xp.asarray(out)


register_op("ParseTensor", dtype=lambda op: op._attrs["out_type"],
            shape=lambda op: unknown_shape(), kernel=_parse_kernel, grad=None)


def parse_tensor(serialized, out_type, name=None):
    """The tensor of ``out_type`` held by ``serialized``, a scalar string holding a serialized
    TensorProto (as ``serialize_tensor`` writes); InvalidArgumentError when the bytes are not a
    TensorProto or hold another dtype."""
    serialized = convert_to_tensor(serialized, dtype=_dtypes.string)
    return make_op("ParseTensor", [serialized], name=name or "ParseTensor",
                   out_type=_dtypes.as_dtype(out_type).base_dtype)
