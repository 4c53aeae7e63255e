"""DTypes: conversion from names, numpy and Python types; properties; TF1's value rules."""

import pickle

import numpy as np
import pytest

import zps as tf
from zps.framework import dtypes


@pytest.mark.parametrize("value, expected", [
    ("float32", tf.float32), ("float", tf.float32), ("half", tf.float16), ("double", tf.float64),
    ("int64", tf.int64), ("bool", tf.bool), ("string", tf.string),
    (np.float32, tf.float32), (np.dtype("float64"), tf.float64), (np.int8, tf.int8),
    (np.uint8, tf.uint8), (np.int16, tf.int16), (np.bool_, tf.bool), (np.object_, tf.string),
    (np.dtype("S5"), tf.string), (np.dtype("U3"), tf.string),
    (float, tf.float32), (bool, tf.bool), (int, tf.int64), (str, tf.string), (bytes, tf.string),
    (object, tf.string),
    (1, tf.float32), (3, tf.int32), (9, tf.int64), (7, tf.string), (19, tf.float16),
    (tf.int32, tf.int32),
])
def test_as_dtype(value, expected):
    assert tf.as_dtype(value) is expected


@pytest.mark.parametrize("value", ["float33", np.clongdouble, 99, [1], None.__class__])
def test_as_dtype_rejects_unknown_types(value):
    with pytest.raises(TypeError):
        tf.as_dtype(value)


def test_properties():
    assert tf.float32.as_numpy_dtype is np.float32 and tf.string.as_numpy_dtype is np.object_
    assert tf.float32.is_floating and not tf.float32.is_integer
    assert tf.int8.is_integer and tf.uint8.is_unsigned and not tf.int8.is_unsigned
    assert tf.bool.is_bool and not tf.bool.is_integer and not tf.bool.is_floating
    assert not tf.float64.is_complex and not tf.int32.is_quantized
    assert tf.float16.size == 2 and tf.int64.size == 8 and tf.bool.size == 1
    assert tf.float32.base_dtype is tf.float32 and tf.float32.real_dtype is tf.float32
    assert tf.float32.as_datatype_enum == 1 and tf.int32.as_datatype_enum == 3
    assert tf.int8.min == -128 and tf.uint8.max == 255
    assert tf.float32.max == np.finfo(np.float32).max
    assert tf.int16.limits == (-32768, 32767)
    for dt in (tf.bool, tf.string):
        with pytest.raises(TypeError, match="Cannot find minimum value of %s" % dt.name):
            _ = dt.min
        with pytest.raises(TypeError, match="maximum"):
            _ = dt.max


def test_equality_hashing_and_strings():
    assert tf.float32 == "float32" and tf.float32 == np.float32 and tf.float32 == tf.as_dtype(float)
    assert tf.float32 != tf.float64 and tf.float32 != "nonsense" and tf.float32 != None  # noqa: E711
    assert tf.float32.is_compatible_with(np.float32) and not tf.float32.is_compatible_with(tf.int32)
    assert len({tf.float32, tf.as_dtype("float32"), tf.float64}) == 2
    assert repr(tf.float32) == "tf.float32" and str(tf.float32) == "<dtype: 'float32'>"
    assert pickle.loads(pickle.dumps(tf.int64)) is tf.int64
    assert tf.half is tf.float16 and tf.double is tf.float64


@pytest.mark.parametrize("value, expected", [
    (1.5, tf.float32), ([1.0, 2.0], tf.float32), (3, tf.int32), ([1, 2], tf.int32),
    (2 ** 40, tf.int64), ([1, -2 ** 31 - 1], tf.int64), (True, tf.bool), ("a", tf.string),
    (b"a", tf.string), (["a", "b"], tf.string), (np.float64(1.0), tf.float64),
    (np.arange(3, dtype=np.int64), tf.int64), (np.zeros(2, np.float16), tf.float16), ([], tf.float32),
])
def test_dtype_of_value_follows_tf1(value, expected):
    assert dtypes.dtype_of_value(value) is expected


def test_constants_use_those_rules():
    with tf.Graph().as_default():
        assert tf.constant(2 ** 40).dtype is tf.int64
        assert tf.constant(7).dtype is tf.int32
        assert tf.constant(1.5).dtype is tf.float32
        with tf.Session() as sess:
            assert sess.run(tf.constant(2 ** 40)) == 2 ** 40
