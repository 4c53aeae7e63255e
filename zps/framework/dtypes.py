"""TF1-style data types: ``zps.float32``, ``zps.int64``, ``zps.string`` ...

Each DType maps to one numpy dtype; strings are numpy object arrays of ``bytes``;
``complex64``/``complex128`` are numpy's complex types (pairs of float32/float64); the
unsigned ``uint8``/``uint16``/``uint32``/``uint64`` are numpy's, with TF1's enum values.

>>> import zps as tf
>>> tf.as_dtype("float32") is tf.float32
True
>>> tf.float32.as_numpy_dtype
<class 'numpy.float32'>
"""

import builtins

import numpy as np


class DType:
    """A tensor element type; compare with ``is`` or ``==`` (also against strings and numpy types)."""

    __slots__ = ("name", "_np", "_enum")

    def __init__(self, name, np_type, enum):
        self.name = name
        self._np = np_type
        self._enum = enum

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def as_datatype_enum(self):
        """TF1's DataType enum value (float32 = 1, ...), for interop with TF1 tooling."""
        return self._enum

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        """The type of the real and imaginary parts of a complex type (float32 for complex64);
        a real type is its own."""
        return _REAL_OF.get(self.name, self)

    @property
    def is_floating(self):
        return self.name in ("float16", "float32", "float64")

    @property
    def is_integer(self):
        return self.name in _INTEGER_NAMES

    @property
    def is_unsigned(self):
        return self.name in _UNSIGNED_NAMES

    @property
    def is_bool(self):
        return self.name == "bool"

    @property
    def is_complex(self):
        return self.name in _REAL_OF

    @property
    def is_quantized(self):
        return False

    @property
    def is_numpy_compatible(self):
        return True

    @property
    def size(self):
        return 0 if self.name == "string" else np.dtype(self._np).itemsize

    @property
    def min(self):
        """The smallest finite value of this type; TypeError for bool and string."""
        return self._info("minimum").min

    @property
    def max(self):
        """The largest finite value of this type; TypeError for bool and string."""
        return self._info("maximum").max

    @property
    def limits(self):
        return self.min, self.max

    def _info(self, what):
        if self.is_floating:   # TF has no min/max for complex types either
            return np.finfo(self._np)
        if self.is_integer:
            return np.iinfo(self._np)
        raise TypeError("Cannot find %s value of %s." % (what, self.name))

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

    def __str__(self):
        return "<dtype: %r>" % self.name

    def __reduce__(self):
        return as_dtype, (self.name,)


_UNSIGNED_NAMES = frozenset(("uint8", "uint16", "uint32", "uint64"))
_INTEGER_NAMES = frozenset(("int8", "int16", "int32", "int64")) | _UNSIGNED_NAMES

float16 = DType("float16", np.float16, 19)
float32 = DType("float32", np.float32, 1)
float64 = DType("float64", np.float64, 2)
int8 = DType("int8", np.int8, 6)
int16 = DType("int16", np.int16, 5)
int32 = DType("int32", np.int32, 3)
int64 = DType("int64", np.int64, 9)
uint8 = DType("uint8", np.uint8, 4)
uint16 = DType("uint16", np.uint16, 17)
uint32 = DType("uint32", np.uint32, 22)
uint64 = DType("uint64", np.uint64, 23)
bool = DType("bool", np.bool_, 10)  # noqa: A001 - TF1's public name
string = DType("string", np.object_, 7)
complex64 = DType("complex64", np.complex64, 8)
complex128 = DType("complex128", np.complex128, 18)
half = float16
double = float64

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, string, complex64,
       complex128, uint16, uint32, uint64)
_REAL_OF = {"complex64": float32, "complex128": float64}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32})
_BY_NP = {np.dtype(d._np): d for d in ALL if d is not string}
_BY_ENUM = {d._enum: d for d in ALL}
# TF1's _PYTHON_TO_TF: Python float means float32 (int falls through to numpy: int64).
_BY_PYTHON = {builtins.float: float32, builtins.bool: bool, builtins.object: string,
              builtins.str: string, builtins.bytes: string}


def as_dtype(value):
    """Return the DType for a DType, name, numpy dtype, Python type or TF1 DataType enum."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        try:
            return _BY_NAME[value]
        except KeyError:
            raise TypeError("Unknown dtype name %r; use one of %s" % (value, sorted(_BY_NAME))) from None
    if isinstance(value, int) and not isinstance(value, builtins.bool):
        try:
            return _BY_ENUM[value]
        except KeyError:
            raise TypeError("Unknown DataType enum value %d" % value) from None
    if isinstance(value, type) and value in _BY_PYTHON:
        return _BY_PYTHON[value]
    if value is None or (isinstance(value, type) and value is not builtins.int
                         and not issubclass(value, np.generic)):
        raise TypeError("Cannot convert %r to a zps dtype" % (value,))
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
        # TF1 prefers int32 for Python ints, unless a value does not fit.
        fits = arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31)
        return int32 if fits else int64
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
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "string",
    "complex64",
    "complex128",
]
