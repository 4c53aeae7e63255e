"""Debugging ops: Assert, Print, check_numerics and the assert_* checks, with the messages
TensorFlow 2.21's tf.compat.v1 gives for the same graphs (op names aside)."""

import sys

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

GRAD_CASES = [
    GradCase("CheckNumerics", lambda x: tf.check_numerics(x * x, "x"),
             [np.array([[1.0, -2.0], [0.5, 3.0]])]),
    GradCase("Print", lambda x, y: tf.Print(x * y, [x, "text"], "p: "),
             [np.array([1.0, 2.0, -3.0]), np.array([0.5, -1.0, 2.0])]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _failure(fetch, feed=None):
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(fetch, feed)
    return info.value.message


# -- Assert ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, message", [
    ([1.0, -2.0, 3.0, 4.0], "[1 -2 3...]"),
    ([[1.0, -2.0], [3.0, 4.0]], "[[1 -2][3...]...]"),
    (-1.0, "[-1]"),
    ([-1.5, 2.0, 3.0], "[-1.5 2 3]"),
])
def test_assert_message_summarizes_data_as_tensorflow(value, message):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive", x])
        assert check.type == "Assert" and check.name == "Assert/Assert"
        with tf.Session() as sess:
            sess.run(check, {x: [1.0, 2.0]})      # holds: nothing happens
        assert _failure(check, {x: value}) == "assertion failed: [x must be positive] " + message


def test_assert_formats_strings_bools_doubles_and_nested_dimensions():
    with tf.Graph().as_default():
        check = tf.Assert(False, [tf.constant(["a", "b", "c", "d"]), tf.constant(True),
                                  tf.constant(1.5, tf.float64),
                                  tf.constant(np.arange(8).reshape(2, 2, 2))], summarize=10)
        assert _failure(check) == \
            "assertion failed: [a b c d] [1] [1.5] [[[0 1][2 3]][[4 5][6 7]]]"
        with pytest.raises(TypeError, match="condition must be a bool"):
            tf.Assert(1.0, ["x"])


def test_an_assert_guards_what_depends_on_it():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        with tf.control_dependencies([tf.assert_positive(x)]):
            y = tf.log(x)
        with tf.Session() as sess:
            assert sess.run(y, {x: 1.0}) == 0.0
        assert _failure(y, {x: -1.0}) == "assertion failed: [] [Condition x > 0 did not hold " \
            "element-wise:] [x (Placeholder:0) = ] [-1]"


# -- Print -------------------------------------------------------------------------------------------
def test_print_passes_its_input_and_writes_to_stderr(capfd):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        y = tf.Print(x, [x, "s", tf.constant([[1, 2], [3, 4]])], "msg: ", summarize=2)
        once = tf.Print(x, [x], "once ", first_n=1)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: np.arange(5.0)}), np.arange(5.0))
            sess.run([once, once], {x: [1.0]})
            sess.run(once, {x: [2.0]})
    err = capfd.readouterr().err
    assert "msg: [0 1...][s][[1 2]...]\n" in err     # TF 2.21's text for the same Print
    assert err.count("once ") == 1


# -- check_numerics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value, what", [([np.nan, 1.0], "NaN"), ([np.inf, 1.0], "Inf"),
                                         ([np.inf, np.nan], "Inf and NaN")])
def test_check_numerics_names_what_it_found(value, what):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        checked = tf.check_numerics(x, "boom")
        assert checked.op.type == "CheckNumerics"
        assert _failure(checked, {x: value}) == "boom : Tensor had %s values" % what
        with pytest.raises(TypeError, match="float16, float32 or float64"):
            tf.check_numerics(tf.constant([1]), "ints")


def test_check_numerics_checks_the_gradient_too():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        g, = tf.gradients(tf.sqrt(tf.check_numerics(x, "x")), [x])
        assert _failure(g, {x: 0.0}) == "Not a number (NaN) or infinity (Inf) values detected " \
            "in gradient. x : Tensor had Inf values"


def test_verify_tensor_all_finite_and_add_check_numerics_ops():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        y = tf.verify_tensor_all_finite(x * 2.0, "y is broken")
        assert y.op.name == "VerifyFinite/control_dependency"
        assert _failure(y, {x: np.inf}) == "y is broken : Tensor had Inf values"
        z = tf.log(x, name="z")
        check = tf.add_check_numerics_ops()
        with tf.Session() as sess:
            sess.run([z, check], {x: 2.0})
        assert _failure([z, check], {x: -1.0}) == "z:0 : Tensor had NaN values"


# -- assert_* ----------------------------------------------------------------------------------------
def test_binary_asserts_fail_at_run_time_with_tensorflows_message():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        i = tf.placeholder(tf.int32)
        less = tf.assert_less(x, 2.0, message="msg")
        equal = tf.assert_equal(i, [1, 2], summarize=5)
        assert less.name == "assert_less/Assert/Assert"
        assert _failure(less, {x: [1.0, 3.0]}) == (
            "assertion failed: [msg] [Condition x < y did not hold element-wise:] "
            "[x (Placeholder:0) = ] [1 3] [y (assert_less/y:0) = ] [2]")
        assert _failure(equal, {i: [1, 3]}) == (
            "assertion failed: [Condition x == y did not hold element-wise:] "
            "[x (Placeholder_1:0) = ] [1 3] [y (assert_equal/y:0) = ] [1 2]")
        with tf.Session() as sess:
            sess.run([less, equal], {x: [1.0, 1.5], i: [1, 2]})


@pytest.mark.parametrize("check, holds, fails", [
    (tf.assert_none_equal, ([1, 2], [2, 1]), ([1, 2], [1, 3])),
    (tf.assert_less_equal, ([1, 2], [1, 3]), ([2, 2], [1, 3])),
    (tf.assert_greater, ([2, 3], 1), ([2, 1], 1)),
    (tf.assert_greater_equal, ([2, 1], 1), ([2, 0], 1)),
])
def test_binary_asserts_on_constants_are_decided_when_built(check, holds, fails):
    with tf.Graph().as_default():
        assert check(*holds).type == "Assert"
        with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold element-wise"):
            check(*fails)


def test_static_failure_message_lists_the_data():
    with tf.Graph().as_default():
        a, b = tf.constant([1, 2], name="a"), tf.constant([1, 3], name="b")
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            tf.assert_equal(a, b, message="static")
    assert info.value.message == ("static\nCondition x == y did not hold element-wise:\n"
                                  "x (a:0) = \n[1 2]\ny (b:0) = \n[1 3]")


@pytest.mark.parametrize("check, good, bad, sym", [
    (tf.assert_positive, [1.0], [0.0, 1.0], "x > 0"),
    (tf.assert_negative, [-1.0], [0.0, -1.0], "x < 0"),
    (tf.assert_non_negative, [0.0], [-1.0], "x >= 0"),
    (tf.assert_non_positive, [0.0], [1.0], "x <= 0"),
])
def test_sign_asserts(check, good, bad, sym):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        op = check(x, message="m")
        with tf.Session() as sess:
            sess.run(op, {x: good})
        assert _failure(op, {x: bad}).startswith(
            "assertion failed: [m.  ] [Condition %s did not hold element-wise:] [x (x:0) = ]" % sym)


def test_assert_rank_static_and_dynamic():
    with tf.Graph().as_default():
        assert tf.assert_rank(tf.constant([1, 2]), 1).name == "assert_rank/static_checks_determined_all_ok"
        with pytest.raises(ValueError, match=r"^Tensor c:0 must have rank 2\.  Received rank 1"):
            tf.assert_rank(tf.constant([1, 2], name="c"), 2)
        with pytest.raises(ValueError, match=r"^m\.  Tensor"):
            tf.assert_rank(tf.constant([1, 2]), 2, message="m")
        x = tf.placeholder(tf.float32, name="p")
        op = tf.assert_rank(x, 2)
        with tf.Session() as sess:
            sess.run(op, {x: np.ones((2, 2))})
        assert _failure(op, {x: np.ones(3)}) == \
            "assertion failed: [] [Tensor p:0 must have rank] [2] [Received shape: ] [3]"


def test_type_checks_are_static():
    with tf.Graph().as_default():
        c = tf.constant([1, 2], name="c")
        assert tf.assert_type(c, tf.int32).name == "assert_type/statically_determined_correct_type"
        assert tf.assert_integer(c).type == "NoOp"
        with pytest.raises(TypeError, match=r"^m\.  c:0 must be of type tf\.float32; got tf\.int32$"):
            tf.assert_type(c, tf.float32, message="m")
        with pytest.raises(TypeError, match=r"Expected \"x\" to be integer type\.  Found: f:0 of "
                                            r"dtype <dtype: 'float32'>"):
            tf.assert_integer(tf.constant([1.0], name="f"))
        assert tf.is_numeric_tensor(c) and tf.is_numeric_tensor(tf.constant(1.5))
        assert not tf.is_numeric_tensor(tf.constant(["s"])) and not tf.is_numeric_tensor(c > 0)
        assert not tf.is_numeric_tensor(np.ones(2))


# -- tf.print ----------------------------------------------------------------------------------------
# TF 2.21's tf.compat.v1.print wrote these lines for the same calls.
TF_PRINTED = """hello [1 2 3 ... 5 6 7] 3
[[[0 1 2 3]
  [4 5 6 7]
  [8 9 10 11]]

 [[12 13 14 15]
  [16 17 18 19]
  [20 21 22 23]]]
[1.5 2.25]|1|["a" "b"]|"s"!
{'a': 1, 'b': [2, 'x']}
[0 1 2 3 4 5 6 7 8 9]
[] 0.1 1e-08 123456792
[[[0 ... 4]
  ...
  [15 ... 19]]

 ...

 [[40 ... 44]
  ...
  [55 ... 59]]]
"""


def test_print_v2_formats_as_tensorflow(capsys):
    out = sys.stdout
    with tf.Graph().as_default():
        ops = [
            tf.print("hello", tf.constant([1, 2, 3, 4, 5, 6, 7]), 3, output_stream=out),
            tf.print(tf.constant(np.arange(24).reshape(2, 3, 4)), output_stream=out, summarize=2),
            tf.print(tf.constant([1.5, 2.25]), tf.constant(True), tf.constant(["a", "b"]),
                     tf.constant("s"), sep="|", end="!\n", output_stream=out),
            tf.print({"a": tf.constant(1), "b": [tf.constant(2.0), "x"]}, output_stream=out),
            tf.print(tf.constant(np.arange(10.0)), summarize=-1, output_stream=out),
            tf.print(tf.constant(np.zeros((0, 3))), tf.constant(np.float32(0.1)),
                     tf.constant(1e-8), tf.constant(123456789.0), output_stream=out),
            tf.print(tf.constant(np.arange(60).reshape(3, 4, 5)), output_stream=out, summarize=1),
        ]
        assert [op.type for op in ops] == ["PrintV2"] * 7 and ops[0].name == "PrintV2"
        with tf.Session() as sess:
            for op in ops:
                sess.run(op)
    assert capsys.readouterr().out == TF_PRINTED


def test_print_v2_writes_to_stderr_by_default(capsys):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32)
        with tf.control_dependencies([tf.print("x =", x)]):
            y = x + 1
        with tf.Session() as sess:
            assert sess.run(y, {x: 4}) == 5
        with pytest.raises(ValueError, match="output_stream must be"):
            tf.print(x, output_stream="log(info)")
    assert capsys.readouterr().err == "x = 4\n"
