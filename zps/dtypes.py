"""``tf.dtypes``: TF 1.15's namespace of the DType objects (zps/framework/dtypes.py), with
``cast``, ``saturate_cast`` and ``as_string``.

>>> import zps as tf
>>> tf.dtypes.float32 is tf.float32, tf.dtypes.as_dtype("int64") is tf.int64
(True, True)
"""

from zps.framework.dtypes import (
    DType,
    as_dtype,
    bool,  # noqa: A004 - TF's name
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
)
from zps.ops.math_ops import cast, saturate_cast
from zps.ops.string_ops import as_string

__all__ = ["DType", "as_dtype", "as_string", "bool", "cast", "complex64", "complex128",
           "double", "float16", "float32", "float64", "half", "int16", "int32", "int64", "int8",
           "saturate_cast", "string", "uint16", "uint32", "uint64", "uint8"]
