"""``tf.compat``: string conversions, numeric type tuples, and ``v1`` (zps itself).

    import zps as tf
    tf.compat.as_bytes("ps:0")            # b"ps:0"
    tf.compat.as_text(b"worker")          # "worker"
    tf.compat.v1.placeholder(tf.float32)  # tf.compat.v1 is the zps module
    isinstance(3, tf.compat.integral_types)
"""

import codecs as _codecs
import numbers as _numbers

import numpy as _np

import zps as v1  # noqa: F401 - tf.compat.v1 is the TF1 namespace, zps itself
from zps.framework.tensor_shape import Dimension as _Dimension
from zps.framework.tensor_shape import TensorShape as _TensorShape

integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)
complex_types = (_numbers.Complex, _np.number)
bytes_or_text_types = (bytes, str)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """``bytes`` of a ``bytes``, ``bytearray`` or ``str`` (encoded): ``as_bytes("a") == b"a"``."""
    encoding = _codecs.lookup(encoding).name   # an unknown encoding raises LookupError
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError("Expected binary or unicode string, got %r" % (bytes_or_text,))


def as_text(bytes_or_text, encoding="utf-8"):
    """``str`` of a ``str`` or ``bytes`` (decoded): ``as_text(b"a") == "a"``."""
    encoding = _codecs.lookup(encoding).name
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError("Expected binary or unicode string, got %r" % (bytes_or_text,))


as_str = as_text


def as_str_any(value, encoding="utf-8"):
    """``str(value)``, decoding ``bytes``: ``as_str_any(3) == "3"``, ``as_str_any(b"a") == "a"``."""
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path):
    """The ``str`` of an ``os.PathLike``; anything else as is: ``path_to_str(Path("a/b"))``."""
    if hasattr(path, "__fspath__"):
        path = as_str_any(path.__fspath__())
    return path


def dimension_value(dimension):
    """The int (or None) of a Dimension, or the value itself:
    ``dimension_value(x.shape[1])``."""
    return dimension.value if isinstance(dimension, _Dimension) else dimension


def dimension_at_index(shape, index):
    """The Dimension of ``shape`` at ``index`` (unknown if the rank is):
    ``dimension_at_index(x.shape, 0)``."""
    shape = _TensorShape(shape)
    return _Dimension(None) if shape.ndims is None else shape.dims[index]
