"""Core ops the gradient machinery itself relies on: shapes, broadcasting, reductions, matmul."""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(42)


def _r(*shape):
    return R.standard_normal(shape)


GRAD_CASES = [
    GradCase("Add", lambda x, y: x + y, [_r(3, 4), _r(4)]),
    GradCase("Sub", lambda x, y: x - y, [_r(3, 1), _r(1, 4)]),
    GradCase("Mul", lambda x, y: x * y, [_r(2, 3), _r(2, 3)]),
    GradCase("RealDiv", lambda x, y: x / y, [_r(2, 3), R.uniform(1, 2, (3,))]),
    GradCase("Neg", lambda x: -x, [_r(3)]),
    GradCase("Square", tf.square, [_r(3)]),
    GradCase("AddN", lambda a, b, c: tf.add_n([a, b, c]), [_r(2, 2), _r(2, 2), _r(2, 2)]),
    GradCase("MatMul", tf.matmul, [_r(2, 3), _r(3, 4)], name="MatMul"),
    GradCase("MatMul", lambda a, b: tf.matmul(a, b, transpose_a=True), [_r(3, 2), _r(3, 4)],
             name="MatMul_ta"),
    GradCase("MatMul", lambda a, b: tf.matmul(a, b, transpose_b=True), [_r(2, 3), _r(4, 3)],
             name="MatMul_tb"),
    GradCase("MatMul", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
             [_r(3, 2), _r(4, 3)], name="MatMul_tab"),
    GradCase("Sum", lambda x: tf.reduce_sum(x, axis=1), [_r(2, 3)], name="Sum_axis"),
    GradCase("Sum", lambda x: tf.reduce_sum(x, axis=[0, 2], keepdims=True), [_r(2, 3, 2)],
             name="Sum_keepdims"),
    GradCase("Sum", tf.reduce_sum, [_r(2, 3)], name="Sum_all"),
    GradCase("Mean", lambda x: tf.reduce_mean(x, axis=0), [_r(4, 3)], name="Mean_axis"),
    GradCase("Mean", tf.reduce_mean, [_r(4, 3)], name="Mean_all"),
    GradCase("Cast", lambda x: tf.cast(x, tf.float32), [_r(3)], delta=1e-2, rtol=1e-2, atol=1e-3),
    GradCase("Identity", tf.identity, [_r(3)]),
    GradCase("PlaceholderWithDefault", lambda x: tf.placeholder_with_default(x, [3]), [_r(3)]),
    GradCase("Reshape", lambda x: tf.reshape(x, [3, 2]), [_r(2, 3)]),
    GradCase("Fill", lambda v: tf.fill([2, 3], v), [np.array(1.5)]),
    GradCase("SumToShape", lambda x, y: tf.gradients(tf.reduce_sum(tf.square(x + y)), [y])[0],
             [_r(4, 3), _r(3)]),
    GradCase("BroadcastTo", lambda x: tf.broadcast_to(x, [2, 3]), [_r(3)]),
    GradCase("ConcatV2", lambda a, b: tf.concat([a, b], 1), [_r(2, 3), _r(2, 2)]),
    GradCase("SplitBySizes", lambda a, b: tf.gradients(tf.reduce_sum(tf.square(tf.concat([a, b], 0))),
                                                       [a])[0], [_r(2), _r(3)]),
    GradCase("Gather", lambda p, i: tf.gather(p, i), [_r(5, 2), np.array([4, 0, 4])]),
    GradCase("UnsortedSegmentSum", lambda d, i: tf.unsorted_segment_sum(d, i, 3),
             [_r(4, 2), np.array([0, 2, 0, 1])]),
    GradCase("ReduceGradShape",
             lambda x: tf.gradients(tf.reduce_sum(tf.square(tf.reduce_sum(x, axis=1))), [x])[0],
             [_r(2, 3)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_broadcasting_gradients_are_summed_back():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3, 4])
        b = tf.placeholder(tf.float32, [4])
        gb, = tf.gradients(tf.reduce_sum(x + b), [b])
        assert gb.get_shape().as_list() == [4]
        with tf.Session() as sess:
            out = sess.run(gb, {x: np.ones((3, 4)), b: np.zeros(4)})
        np.testing.assert_array_equal(out, [3, 3, 3, 3])


def test_second_derivative():
    with tf.Graph().as_default():
        x = tf.constant(3.0)
        y = x * x * x
        d1, = tf.gradients(y, [x])
        d2, = tf.gradients(d1, [x])
        with tf.Session() as sess:
            assert sess.run([d1, d2]) == [27.0, 18.0]


def test_gather_gradient_is_indexed_slices():
    with tf.Graph().as_default():
        params = tf.Variable(np.arange(10.0, dtype=np.float32).reshape(5, 2))
        g, = tf.gradients(tf.reduce_sum(tf.gather(params, [1, 3, 1])), [params])
        assert isinstance(g, tf.IndexedSlices)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            v = sess.run(g)
        assert v.indices.tolist() == [1, 3, 1]
        np.testing.assert_array_equal(v.values, np.ones((3, 2)))


def test_missing_gradient_rule_names_the_op():
    from zps.framework.registry import register_op
    if "TestNoGrad" not in tf.framework.registry.REGISTRY:
        register_op("TestNoGrad", kernel=lambda ctx, x: x)
    from zps.ops.op_util import make_op
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        y = make_op("TestNoGrad", [x], name="mystery")
        with pytest.raises(LookupError, match="No gradient defined for operation 'mystery'"):
            tf.gradients(y, [x])


def test_unconnected_gradient_is_none():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        z = tf.constant(2.0)
        assert tf.gradients(x * 2.0, [z]) == [None]


def test_stop_gradient_blocks():
    with tf.Graph().as_default():
        x = tf.constant(2.0)
        y = x * tf.stop_gradient(x)
        g, = tf.gradients(y, [x])
        with tf.Session() as sess:
            assert sess.run(g) == 2.0


def test_matmul_shape_error_names_op_and_shapes():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [2, 3])
        b = tf.placeholder(tf.float32, [4, 5])
        with pytest.raises(ValueError, match=r"3 and 4 for MatMul 'mm'.*\(2, 3\), \(4, 5\)"):
            tf.matmul(a, b, name="mm")


def test_gated_gradients_do_not_compute_gradients_of_unneeded_inputs():
    """d loss / d x (a placeholder) is not needed for d loss / d w: it must not be computed."""
    from zps.runtime.executor import prune
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 3])
        w = tf.Variable(np.ones((3, 2), np.float32))
        loss = tf.reduce_sum(tf.matmul(x, w))
        gw, = tf.gradients(loss, [w], gate_gradients=True)
        needed = prune([gw], [], {x})
        # The only matmuls left: the forward one (its shape feeds Sum's gradient) and x^T @ g.
        # g @ w^T (the gradient of x) would read w: no needed matmul may do that.
        assert sum(op.type == "MatMul" for op in needed) == 2
        assert not any(op.type == "MatMul" and op.name.startswith("gradients")
                       and op.get_attr("transpose_b") for op in needed)
        with tf.Session() as sess:
            sess.run(w.initializer)
            np.testing.assert_array_equal(sess.run(gw, {x: np.ones((4, 3))}), np.full((3, 2), 4.0))
