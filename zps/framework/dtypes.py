"""TF1-style data types: ``zps.float32``, ``zps.int64``, ``zps.string`` ...

Each DType maps to one numpy dtype; strings are numpy object arrays of ``bytes``.

>>> import zps as tf
>>> tf.as_dtype("float32") is tf.float32
True
>>> tf.float32.as_numpy_dtype
<class 'numpy.float32'>
"""

import numpy as np


class DType:
    """A tensor element type; compare with ``is`` or ``==`` (also against strings and numpy types)."""

    __slots__ = ("name", "_np")

    def __init__(self, name, np_type):
        self.name = name
        self._np = np_type

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self.name in ("float16", "float32", "float64")

    @property
    def is_integer(self):
        return self.name in _INTEGER_NAMES

    @property
    def is_unsigned(self):
        return self.name == "uint8"

    @property
    def is_bool(self):
        return self.name == "bool"

    @property
    def is_numpy_compatible(self):
        return True

    @property
    def size(self):
        return 0 if self.name == "string" else np.dtype(self._np).itemsize

    @property
    def min(self):
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "tf.%s" % self.name

    def __reduce__(self):
        return as_dtype, (self.name,)


_INTEGER_NAMES = frozenset(("int8", "int16", "int32", "int64", "uint8"))

float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool = DType("bool", np.bool_)  # noqa: A001 - TF1's public name
string = DType("string", np.object_)
half = float16
double = float64

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, string)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32})
_BY_NP = {np.dtype(d._np): d for d in ALL if d is not string}


def as_dtype(value):
    """Return the DType for a DType, name, numpy dtype or Python type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        try:
            return _BY_NAME[value]
        except KeyError:
            raise TypeError("Unknown dtype name %r; use one of %s" % (value, sorted(_BY_NAME))) from None
    if value in (bytes, str):
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError("Cannot convert %r to a zps dtype" % (value,)) from None
    if npd.kind in ("O", "S", "U"):
        return string
    try:
        return _BY_NP[npd]
    except KeyError:
        raise TypeError("numpy dtype %s has no zps equivalent; supported: %s"
                        % (npd, ", ".join(d.name for d in ALL))) from None


def dtype_of_value(value):
    """The DType numpy would give ``value`` under TF1's rules (Python floats -> float32, ints -> int32)."""
    if isinstance(value, np.ndarray | np.generic):
        return as_dtype(value.dtype)
    arr = np.asarray(value)
    if arr.dtype.kind in ("O", "S", "U"):
        return string
    if arr.dtype == np.float64:
        return float32
    if arr.dtype == np.int64:
        return int32
    return as_dtype(arr.dtype)

__all__ = [
    "DType",
    "as_dtype",
    "float16",
    "float32",
    "float64",
    "half",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "string",
]
