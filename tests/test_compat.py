"""tf.compat and the TF1/TF2 switches. Expected values are TensorFlow 2.21's tf.compat's on the same
inputs (printed with /work/tfvenv; TF is not needed here)."""

import pathlib

import numpy as np
import pytest

import zps as tf


@pytest.mark.parametrize("fn, arg, expected", [
    ("as_bytes", "héllo", b"h\xc3\xa9llo"),
    ("as_bytes", b"x", b"x"),
    ("as_bytes", bytearray(b"ab"), b"ab"),
    ("as_text", b"h\xc3\xa9", "hé"),
    ("as_text", "s", "s"),
    ("as_str", b"q", "q"),
    ("as_str_any", 3, "3"),
    ("as_str_any", b"b", "b"),
    ("as_str_any", [1], "[1]"),
    ("path_to_str", pathlib.Path("./a/../b"), "a/../b"),
    ("path_to_str", 5, 5),
    ("path_to_str", "x/./y", "x/./y"),
])
def test_conversions(fn, arg, expected):
    out = getattr(tf.compat, fn)(arg)
    assert out == expected and type(out) is type(expected)


def test_encodings_and_errors():
    assert tf.compat.as_bytes("é", "latin-1") == b"\xe9"
    assert tf.compat.as_text(b"\xe9", "latin-1") == "é"
    with pytest.raises(LookupError, match="unknown encoding: nope"):
        tf.compat.as_bytes("x", "nope")
    for fn in (tf.compat.as_bytes, tf.compat.as_text):
        with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
            fn(3)


@pytest.mark.parametrize("value, kinds", [
    (3, [True, True, True, False]),
    (np.int8(1), [True, True, True, False]),
    (True, [True, True, True, False]),
    (2.5, [False, True, True, False]),
    (np.float32(1), [False, True, True, False]),
    (1j, [False, False, True, False]),
    (np.complex64(1), [False, False, True, False]),
    ("s", [False, False, False, True]),
    (b"b", [False, False, False, True]),
])
def test_type_tuples(value, kinds):
    c = tf.compat
    assert [isinstance(value, t) for t in (c.integral_types, c.real_types, c.complex_types,
                                           c.bytes_or_text_types)] == kinds


def test_dimensions():
    assert tf.compat.dimension_value(tf.Dimension(3)) == 3
    assert tf.compat.dimension_value(4) == 4 and tf.compat.dimension_value(None) is None
    assert tf.compat.dimension_at_index(tf.TensorShape([2, None]), 0).value == 2
    assert tf.compat.dimension_at_index(tf.TensorShape([2, None]), 1).value is None
    assert tf.compat.dimension_at_index(tf.TensorShape(None), 3).value is None
    x = tf.placeholder(tf.float32, [None, 5])
    assert tf.compat.dimension_value(x.shape[1]) == 5


def test_v1_is_zps():
    assert tf.compat.v1 is tf
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.compat.v1.float32, [2])
        with tf.compat.v1.Session() as sess:
            assert sess.run(x * 2, {x: [1, 2]}).tolist() == [2, 4]


def test_v2_switches():
    assert tf.disable_v2_behavior() is None
    assert tf.disable_eager_execution() is None
    assert tf.executing_eagerly() is False
    assert tf.compat.v1.executing_eagerly() is False
    with pytest.raises(NotImplementedError, match="zps implements TensorFlow 1.x graph mode only"):
        tf.enable_v2_behavior()
    with pytest.raises(NotImplementedError, match="run it in a tf.Session"):
        tf.enable_eager_execution()
