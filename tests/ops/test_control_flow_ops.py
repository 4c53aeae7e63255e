"""tf.cond, tf.case, tf.while_loop: only what is chosen runs; gradients, nesting, serialization,
clusters.

Expected values are TF1's (checked against TensorFlow 2.21's tf.compat.v1 where noted).
"""

import collections

import msgpack
import numpy as np
import pytest

import zps as tf
from zps.framework.serialization import import_graph_def
from zps.testing.cluster import InProcessCluster, LocalCluster
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(7)

GRAD_CASES = [
    # The predicate stays true (false) under finite-difference nudges of the inputs.
    GradCase("If", lambda x, y: tf.cond(tf.reduce_sum(x) > -100.0, lambda: tf.sin(x) * y,
                                         lambda: x - y), [R.standard_normal(3), R.standard_normal(3)],
             name="If_then"),
    GradCase("If", lambda x, y: tf.cond(tf.reduce_sum(x) > 100.0, lambda: x * y,
                                         lambda: tf.square(x) / (y * y + 1.0)),
             [R.standard_normal((2, 2)), R.standard_normal((2, 2))], name="If_else"),
    GradCase("While", lambda x, w: tf.while_loop(
        lambda k, y: k < 3, lambda k, y: (k + 1, tf.tanh(y * w) + x), [0, x])[1],
        [R.standard_normal(3), R.standard_normal(3)], name="While"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_gradient(case):
    check_gradients(case)


def _run(fetches, feeds=None, init=True):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feeds)


def test_only_the_chosen_branch_runs_and_its_side_effects_happen_once():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        v = tf.Variable(0.0)
        y = tf.cond(x > 0, lambda: tf.assign_add(v, 1.0), lambda: tf.assign_add(v, -10.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(y, {x: 1.0}) for _ in range(3)] == [1.0, 2.0, 3.0]
            assert sess.run(y, {x: -1.0}) == -7.0
            assert sess.run(v) == -7.0


def test_branches_read_outer_tensors_and_variables():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        w = tf.Variable([1.0, 2.0, 3.0])
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * w, lambda: x - w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(y, {x: [1, 1, 1]}), [1, 2, 3])
            np.testing.assert_allclose(sess.run(y, {x: [-1, -1, -1]}), [-2, -3, -4])


def test_structures_dtypes_and_merged_static_shapes():
    Pair = collections.namedtuple("Pair", ["a", "b"])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        out = tf.cond(x > 0, lambda: (x, {"b": x * 2, "a": [tf.cast(x, tf.int32)]}, Pair(x, 1.0)),
                      lambda: (-x, {"b": x, "a": [tf.constant(7)]}, Pair(x + 1, 2.0)))
        assert list(out[1]) == ["b", "a"]   # the caller's key order, as TF1's nest
        assert out[1]["a"][0].dtype == tf.int32 and isinstance(out[2], Pair)
        s = tf.cond(x > 0, lambda: tf.ones([2, 3]), lambda: tf.zeros([2, 4]))
        assert s.get_shape().as_list() == [2, None]   # TF1: (2, ?)
        got = _run([out, s], {x: 2.0}, init=False)
        assert got[0] == (2.0, {"b": 4.0, "a": [2]}, Pair(2.0, 1.0))
        np.testing.assert_array_equal(got[1], np.ones([2, 3]))
        got = _run(out, {x: -2.0}, init=False)
        assert got == (2.0, {"b": -2.0, "a": [7]}, Pair(-1.0, 2.0))


def test_single_element_results_are_unpacked_unless_strict():
    # TF1: cond(strict=False), the default, returns the element of a one-element list or tuple.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        listed = tf.cond(x > 0, lambda: [x * 2], lambda: [-x])
        tupled = tf.cond(x > 0, lambda: (x * 2,), lambda: (-x,))
        kept = tf.cond(x > 0, lambda: [x * 2], lambda: [-x], strict=True)
        case = tf.case([(x > 5, lambda: [x]), (x > 2, lambda: [x * 10])], default=lambda: [-x])
        strict_case = tf.case([(x > 5, lambda: [x])], default=lambda: [-x], strict=True)
        assert isinstance(listed, tf.Tensor) and isinstance(tupled, tf.Tensor)
        assert isinstance(case, tf.Tensor)
        assert isinstance(kept, list) and len(kept) == 1
        assert isinstance(strict_case, list) and len(strict_case) == 1
        assert _run([listed, tupled, kept, case, strict_case], {x: 3.0}, init=False) == \
            [6.0, 6.0, [6.0], 30.0, [-3.0]]
        assert _run(listed + 1, {x: -1.0}, init=False) == 2.0


def test_an_operation_result_is_a_bool_telling_which_branch_ran():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        v = tf.Variable(0.0)
        r = tf.cond(x > 0, lambda: tf.assign_add(v, 1.0).op, lambda: tf.assign_add(v, -1.0).op)
        assert r.dtype == tf.bool   # TF1: Tensor("cond/Merge:0", dtype=bool)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(r, {x: 1.0}) and not sess.run(r, {x: -1.0})
            assert sess.run(v) == 0.0


def test_build_errors_say_what_is_wrong():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        with pytest.raises(TypeError, match="must not be a Python bool"):
            tf.cond(True, lambda: x, lambda: x)
        with pytest.raises(TypeError, match="true_fn must be callable"):
            tf.cond(x > 0, x, lambda: x)
        with pytest.raises(TypeError, match="bool tensor"):
            tf.cond(x, lambda: x, lambda: x)
        with pytest.raises(ValueError, match="scalar"):
            tf.cond(tf.constant([True, False]), lambda: x, lambda: x)
        with pytest.raises(ValueError, match="same type"):
            tf.cond(x > 0, lambda: x, lambda: tf.cast(x, tf.int32))
        with pytest.raises(ValueError, match="same structure"):
            tf.cond(x > 0, lambda: [x, x], lambda: [x])
        with pytest.raises(ValueError, match="return value"):
            tf.cond(x > 0, lambda: None, lambda: x)
        with pytest.raises(ValueError, match="create variables outside tf.cond"):
            tf.cond(x > 0, lambda: tf.Variable(1.0) * x, lambda: x)


def test_a_non_scalar_predicate_fails_the_step():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool)
        y = tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
        with pytest.raises(tf.errors.InvalidArgumentError, match="scalar bool"):
            _run(y, {p: [True, False]}, init=False)


def test_branch_ops_cannot_be_fetched():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        inner = []
        tf.cond(x > 0, lambda: inner.append(x * 3.0) or inner[0], lambda: x)
        with pytest.raises(ValueError, match="not fetchable"):
            _run(inner[0], {x: 1.0}, init=False)


def test_nested_conds_and_their_gradients():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [])
        y = tf.cond(x > 0, lambda: tf.cond(x > 2, lambda: x * x * x, lambda: x * x),
                    lambda: -x)
        g = tf.gradients(y, x)[0]
        gg = tf.gradients(g, x)[0]   # second derivative through both conds
        with tf.Session() as sess:
            for v, want in ((3.0, (27.0, 27.0, 18.0)), (1.0, (1.0, 2.0, 2.0)),
                            (-1.0, (1.0, -1.0, 0.0))):
                assert sess.run([y, g, gg], {x: v}) == list(want)


def test_the_gradient_sees_the_values_the_forward_branch_drew():
    # A dropout mask drawn in a branch: d(sum(dropout(ones * x)))/dx = sum / x only if the
    # gradient uses the forward pass's mask (TF1 behaves so).
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [])
        y = tf.cond(x > 0, lambda: tf.nn.dropout(tf.ones([1000]) * x, keep_prob=0.5),
                    lambda: tf.ones([1000]) * x)
        loss = tf.reduce_sum(y)
        g = tf.gradients(loss, x)[0]
        with tf.Session() as sess:
            for _ in range(3):
                value, grad = sess.run([loss, g], {x: 2.0})
                assert value / 2.0 == grad and 0 < grad < 2000 and grad % 2 == 0
            assert sess.run([loss, g], {x: -2.0}) == [-2000.0, 1000.0]


def test_training_through_a_cond_matches_numpy():
    # is_training switches between two losses of the same weights, as TF1 models do.
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))
    w0 = rng.standard_normal((3, 1))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None, 3])
        y = tf.placeholder(tf.float64, [None, 1])
        training = tf.placeholder_with_default(True, [])
        w = tf.Variable(w0)
        pred = tf.matmul(x, w)
        loss = tf.cond(training, lambda: tf.reduce_mean(tf.square(pred - y)),
                       lambda: tf.reduce_mean(tf.abs(pred - y)))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        lr = float(np.float32(0.1))   # TF1 makes the rate a float32 tensor, cast to the var's
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            want = w0.copy()
            for _ in range(5):
                sess.run(step, {x: xs, y: ys})
                want -= lr * 2 * xs.T @ (xs @ want - ys) / len(xs)
            np.testing.assert_allclose(sess.run(w), want, rtol=1e-12)
            sess.run(step, {x: xs, y: ys, training: False})
            want -= lr * xs.T @ np.sign(xs @ want - ys) / len(xs)
            np.testing.assert_allclose(sess.run(w), want, rtol=1e-12)


def test_control_dependencies_around_and_inside_a_cond():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        v = tf.Variable(1.0)
        bump = tf.assign_add(v, 1.0)
        with tf.control_dependencies([bump]):   # the whole cond runs after bump
            y = tf.cond(x > 0, lambda: v * 10.0, lambda: x)

        def inner():
            with tf.control_dependencies([bump]):
                return tf.identity(x)
        z = tf.cond(x > 0, inner, lambda: x)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(y, {x: 1.0}) == 20.0
            sess.run(z, {x: 1.0})
            assert sess.run(v) == 3.0


def test_a_graph_with_conds_survives_serialization():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [], name="x")
        y = tf.cond(x > 0, lambda: tf.cond(x > 5, lambda: x * 100.0, lambda: x * 2.0),
                    lambda: -x, name="outer")
        tf.identity(tf.gradients(y, x)[0], name="dy")
        blob = msgpack.packb(g.as_graph_def())
    with tf.Graph().as_default():
        y2, dy = import_graph_def(msgpack.unpackb(blob), return_elements=[y.name, "dy:0"],
                                  name="copy")
        with tf.Session() as sess:
            assert sess.run([y2, dy], {"copy/x:0": 6.0}) == [600.0, 100.0]
            assert sess.run([y2, dy], {"copy/x:0": 1.0}) == [2.0, 2.0]
            assert sess.run([y2, dy], {"copy/x:0": -3.0}) == [3.0, -1.0]


def test_case_picks_the_first_true_predicate():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        c = tf.case([(x > 5, lambda: tf.constant(5.0)), (x > 2, lambda: tf.constant(2.0))])
        d = tf.case({x > 5: lambda: x, x > 2: lambda: x * 10}, default=lambda: -x,
                    exclusive=True)
        with tf.Session() as sess:
            # TF 2.21's tf.compat.v1.case: 5.0, 2.0, and an InvalidArgumentError for 0.0.
            assert [sess.run(c, {x: v}) for v in (6.0, 3.0)] == [5.0, 2.0]
            with pytest.raises(tf.errors.InvalidArgumentError, match="none of the conditions"):
                sess.run(c, {x: 0.0})
            assert [sess.run(d, {x: v}) for v in (3.0, 1.0)] == [30.0, -1.0]
            with pytest.raises(tf.errors.InvalidArgumentError, match="2 conditions are true"):
                sess.run(d, {x: 6.0})


@pytest.fixture
def cluster():
    with InProcessCluster({"ps": 1, "worker": 1}) as c:
        yield c


def test_a_cond_on_a_worker_reads_and_trains_ps_variables(cluster):
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                cluster=cluster.spec)
        with tf.device(setter):
            x = tf.placeholder(tf.float32, [])
            w = tf.Variable(2.0)
            loss = tf.cond(x > 0, lambda: tf.square(w * x), lambda: w)
            step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        assert loss.op.device == "/job:worker/task:0" and w.device == "/job:ps/task:0"
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step, {x: 1.0})   # d(w^2)/dw = 4: w = 2 - 0.4
            np.testing.assert_allclose(sess.run(w), 1.6, rtol=1e-6)
            sess.run(step, {x: -1.0})   # d(w)/dw = 1: w = 1.6 - 0.1
            np.testing.assert_allclose(sess.run(w), 1.5, rtol=1e-6)


def test_a_cond_updating_a_variable_of_another_task_is_refused_when_built(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(0.0)
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [])
            with pytest.raises(ValueError, match="runs where its op runs"):
                tf.cond(x > 0, lambda: tf.assign_add(v, 1.0), lambda: x)
        with tf.device("/job:ps/task:0"):   # placed with the variable, it runs there
            y = tf.cond(x > 0, lambda: tf.assign_add(v, 1.0), lambda: x)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            assert [sess.run(y, {x: 1.0}) for _ in range(2)] == [1.0, 2.0]


@pytest.fixture
def ps_process():
    """A ps task in a process of its own; yields this process's worker server."""
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            yield server
        finally:
            server.stop()


def test_a_cond_and_its_gradient_ship_to_a_ps_process(ps_process):
    # The If ops are placed on a ps in another process: their branches travel as plain data.
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [])
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(3.0)
            y = tf.cond(x > 0, lambda: tf.cond(x > 5, lambda: v * x * x, lambda: v * x),
                        lambda: tf.assign_add(v, 1.0))
            g = tf.gradients(y, x)[0]
        with tf.Session(ps_process.target) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([y, g], {x: 6.0}) == [108.0, 36.0]
            assert sess.run([y, g], {x: 2.0}) == [6.0, 3.0]
            assert sess.run(y, {x: -1.0}) == 4.0 and sess.run(v) == 4.0


# -- tf.while_loop -----------------------------------------------------------------------------
def test_while_loop_values_structures_and_maximum_iterations():
    with tf.Graph().as_default():
        i, total = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + i), [0, 0])
        single = tf.while_loop(lambda v: tf.reduce_sum(v) < 100.0, lambda v: v * 2.0,
                               [tf.ones([3])])
        capped = tf.while_loop(lambda v: v < 100, lambda v: v + 1, [0], maximum_iterations=7)
        nested = tf.while_loop(lambda s: s["n"] < 3,
                               lambda s: [{"n": s["n"] + 1, "x": (s["x"][0] * 2.0,)}],
                               [{"n": 0, "x": (tf.constant(1.5),)}])
        grown = tf.while_loop(
            lambda k, a: k < 3, lambda k, a: (k + 1, tf.concat([a, [tf.cast(k, tf.float32)]], 0)),
            [0, tf.zeros([0])], shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
        assert single.get_shape().as_list() == [3] and grown[1].get_shape().as_list() == [None]
        got = _run([i, total, single, capped, nested, grown], init=False)
        assert got[:2] == [5, 10] and got[3] == 7
        np.testing.assert_array_equal(got[2], [64.0, 64.0, 64.0])
        assert got[4] == [{"n": 3, "x": (12.0,)}]
        np.testing.assert_array_equal(got[5][1], [0.0, 1.0, 2.0])


def test_while_loop_gradients_match_the_unrolled_derivative():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [])
        w = tf.constant(1.5, tf.float64)
        _, y = tf.while_loop(lambda n, y: n < 4, lambda n, y: (n + 1, y * x + w),
                             [tf.constant(0), x])
        g = tf.gradients(y, [x, w])
        with tf.Session() as sess:
            got = sess.run([y, g], {x: 2.0})
        # y = (((x*x + w)*x + w)*x + w)*x + w = x^5 + w (x^3 + x^2 + x + 1)
        assert got[0] == 54.5
        np.testing.assert_allclose(got[1], [5 * 2.0 ** 4 + 1.5 * (3 * 2.0 ** 2 + 2 * 2.0 + 1),
                                            2.0 ** 3 + 2.0 ** 2 + 2.0 + 1], rtol=1e-12)


def test_nested_loops_and_conds_in_loops_have_their_own_iterations_gradients():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [])

        def outer_body(k, y):
            _, y2 = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * x), [0, y])
            return k + 1, y2
        _, y = tf.while_loop(lambda k, y: k < 3, outer_body, [0, tf.constant(1.0, tf.float64)])

        def body2(k, y):
            return k + 1, tf.cond(y > 10.0, lambda: y + x, lambda: y * x)
        _, y2 = tf.while_loop(lambda k, y: k < 4, body2, [0, tf.constant(1.0, tf.float64)])
        y3 = tf.cond(x > 0, lambda: tf.while_loop(lambda k, z: k < 3,
                                                  lambda k, z: (k + 1, z * x), [0, x])[1],
                     lambda: x)
        grads = [tf.gradients(v, x)[0] for v in (y, y2, y3)]
        with tf.Session() as sess:
            assert sess.run([y, grads[0]], {x: 2.0}) == [64.0, 192.0]      # x^6
            assert sess.run([y2, grads[1]], {x: 3.0}) == [30.0, 28.0]     # x^3 + x after 4 steps
            assert sess.run([y3, grads[2]], {x: 2.0}) == [16.0, 32.0]     # x^4


def test_an_rnn_trained_through_a_loop_matches_numpy():
    rng = np.random.default_rng(3)
    xs, w0, u0 = rng.standard_normal((5, 4, 3)), rng.standard_normal((3, 2)), \
        rng.standard_normal((2, 2)) * 0.5
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [5, 4, 3])
        w, u = tf.Variable(w0), tf.Variable(u0)
        _, h = tf.while_loop(lambda t, h: t < 5,
                             lambda t, h: (t + 1, tf.tanh(tf.matmul(x[t], w) + tf.matmul(h, u))),
                             [0, tf.zeros([4, 2], tf.float64)])
        loss = tf.reduce_sum(tf.square(h))
        gw, gu = tf.gradients(loss, [w, u])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([loss, gw, gu], {x: xs})
    hs = [np.zeros((4, 2))]
    for t in range(5):
        hs.append(np.tanh(xs[t] @ w0 + hs[-1] @ u0))
    dh, want_w, want_u = 2 * hs[-1], np.zeros_like(w0), np.zeros_like(u0)
    for t in reversed(range(5)):   # backpropagation through time
        da = dh * (1 - hs[t + 1] ** 2)
        want_w += xs[t].T @ da
        want_u += hs[t].T @ da
        dh = da @ u0.T
    np.testing.assert_allclose(got[0], (hs[-1] ** 2).sum(), rtol=1e-12)
    np.testing.assert_allclose(got[1], want_w, rtol=1e-10)
    np.testing.assert_allclose(got[2], want_u, rtol=1e-10)


def test_while_loop_build_errors_say_what_is_wrong():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="shape_invariants"):
            tf.while_loop(lambda v: tf.size(v) < 4, lambda v: tf.concat([v, v], 0),
                          [tf.ones([1])])
        with pytest.raises(TypeError, match="enters the loop as int32"):
            tf.while_loop(lambda v: v < 4, lambda v: tf.cast(v, tf.float32), [0])
        with pytest.raises(TypeError, match="scalar bool"):
            tf.while_loop(lambda v: v, lambda v: v + 1, [0])
        with pytest.raises(ValueError, match="structure of loop_vars"):
            tf.while_loop(lambda a, b: a < 3, lambda a, b: (a + 1, (b, b)), [0, 1])
        with pytest.raises(ValueError, match="No loop variables"):
            tf.while_loop(lambda: True, lambda: (), [])
        with pytest.raises(TypeError, match="body must be callable"):
            tf.while_loop(lambda v: v < 1, 3, [0])


def test_a_while_loop_ships_to_a_ps_process_and_trains_there(ps_process):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [])
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(0.5)
            _, y = tf.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y * w), [0, x])
            step = tf.train.GradientDescentOptimizer(0.1).minimize(y)
        with tf.Session(ps_process.target) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(y, {x: 2.0}) == 0.25          # x * w^3
            sess.run(step, {x: 2.0})                      # dy/dw = 3 x w^2 = 1.5
            np.testing.assert_allclose(sess.run(w), 0.35, rtol=1e-6)


def test_gradients_of_functions_reading_tensors_that_depend_on_each_other():
    # A branch (loop body, map_fn function) reading y = 3x and x: d/dx counts y's share once.
    # TensorFlow 2.21's tf.compat.v1 gave these values for the same program.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = x * 3
        out = tf.cond(x > 0, lambda: y * 2 + x, lambda: y - x)
        _, acc = tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a * x + y),
                               [0, tf.constant(1.0)])
        mapped = tf.map_fn(lambda e: e * y + x, tf.stack([x, x]))
        grads = [tf.gradients(out, x)[0], tf.gradients(acc, x)[0],
                 tf.gradients(tf.reduce_sum(mapped), x)[0]]
        assert _run(grads, {x: 1.0}, init=False) == [7.0, 11.0, 14.0]
        assert _run(grads, {x: -1.0}, init=False) == [2.0, -5.0, -10.0]
