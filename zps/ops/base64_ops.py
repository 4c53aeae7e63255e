"""``tf.encode_base64`` and ``tf.decode_base64``: the web-safe base64 alphabet (``-`` and ``_``
for ``+`` and ``/``), as TF's EncodeBase64 and DecodeBase64.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     e = tf.encode_base64([b"hello", b"\\xff\\xfe"])
...     print(tf.Session().run([e, tf.decode_base64(e)]))
[array([b'aGVsbG8', b'__4'], dtype=object), array([b'hello', b'\\xff\\xfe'], dtype=object)]
"""

import base64
import re

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.registry import register_op
from zps.ops.op_util import make_op, same_shape
from zps.ops.string_ops import _elementwise, _string_tensor

_WEB_SAFE = re.compile(rb"^[A-Za-z0-9_-]*={0,2}$")


def _encode(text, pad):
    out = base64.urlsafe_b64encode(text)
    return out if pad else out.rstrip(b"=")


def _decode(text):
    body = text.rstrip(b"=")
    if not _WEB_SAFE.match(text) or len(body) % 4 == 1:
        raise errors.InvalidArgumentError(None, None, "Invalid character found in base64: %r "
                                          "(expected web-safe base64: A-Z a-z 0-9 - _ and up to "
                                          "two trailing =)" % text[:64])
    return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))


register_op("EncodeBase64", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernels={"numpy": _elementwise(_encode)}, grad=None)
register_op("DecodeBase64", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernels={"numpy": _elementwise(_decode)}, grad=None)


def encode_base64(input, pad=False, name=None):  # noqa: A002 - TF1's argument name
    """Each string in web-safe base64, without ``=`` padding unless ``pad``:
    ``tf.encode_base64([b"ab"])`` is ``[b"YWI"]``."""
    return make_op("EncodeBase64", [_string_tensor(input, "input")], name=name or "EncodeBase64",
                   pad=bool(pad))


def decode_base64(input, name=None):  # noqa: A002 - TF1's argument name
    """Each web-safe base64 string decoded (padding optional); InvalidArgumentError when the op
    runs on any other character."""
    return make_op("DecodeBase64", [_string_tensor(input, "input")], name=name or "DecodeBase64")


__all__ = ["decode_base64", "encode_base64"]
