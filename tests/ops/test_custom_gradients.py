"""Gradient customization: RegisterGradient, gradient_override_map, custom_gradient, hessians,
unconnected gradients, aggregation methods and integer ys (values checked against TF 2.21's
compat.v1)."""

import itertools
import threading

import numpy as np
import pytest

import zps as tf
from zps.ops.custom_gradient import identity_n
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(7)
_names = itertools.count()


def _unique(prefix):
    # The gradient registry is global: each test registers names of its own.
    return "%s_%d" % (prefix, next(_names))


@tf.custom_gradient
def log1pexp(x):
    """log(1 + e^x), with a gradient that stays finite where e^x overflows."""
    e = tf.exp(x)
    return tf.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))


GRAD_CASES = [
    GradCase("IdentityN", lambda a, b: (lambda o: o[0] * o[1])(identity_n([a, b])),
             [R.standard_normal(3), R.standard_normal(3)]),
    GradCase("IdentityN", log1pexp, [np.array([-3.0, 0.0, 0.5, 4.0])], name="log1pexp"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# -- RegisterGradient / NotDifferentiable -------------------------------------------------------
def test_register_gradient_returns_the_function_and_refuses_a_second_registration():
    name = _unique("Twice")

    def grad(op, g):
        return [g]

    assert tf.RegisterGradient(name)(grad) is grad
    with pytest.raises(KeyError, match="Registering two gradient with name '%s'! \\(Previous "
                                       "registration was in .*test_custom_gradients.py" % name):
        tf.RegisterGradient(name)(grad)
    with pytest.raises(KeyError, match="Registering two gradient with name 'Identity'!"):
        tf.RegisterGradient("Identity")(grad)
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.RegisterGradient(3)


def test_not_differentiable_stops_gradients_of_ops_mapped_to_it():
    name = _unique("NoGrad")
    assert tf.NoGradient is tf.NotDifferentiable
    tf.NotDifferentiable(name)
    with pytest.raises(KeyError, match="Registering two gradient with name '%s'!" % name):
        tf.NotDifferentiable(name)
    with pytest.raises(KeyError, match="Registering two gradient with name 'Square'!"):
        tf.NotDifferentiable("Square")
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.NotDifferentiable(None)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.5, -2.0])
        with g.gradient_override_map({"Square": name}):
            y = tf.square(x)
        assert tf.gradients(y, x) == [None]
        assert _run(tf.gradients(tf.square(x), x)[0]).tolist() == [3.0, -4.0]


# -- gradient_override_map ----------------------------------------------------------------------
def test_straight_through_estimators():
    ste = _unique("ClippedStraightThrough")

    @tf.RegisterGradient(ste)
    def _clipped(op, grad):
        # The gradient of identity where |x| <= 1, zero outside (binarized networks).
        return [grad * tf.cast(tf.abs(op.inputs[0]) <= 1.0, grad.dtype)]

    g = tf.Graph()
    with g.as_default():
        x = tf.constant([-1.7, -0.4, 0.0, 0.6, 2.5])
        with g.gradient_override_map({"Sign": "Identity", "Round": ste}):
            s = tf.sign(x)
            r = tf.round(x)
        up = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        ds, = tf.gradients(s, x, grad_ys=up)
        dr, = tf.gradients(r, x, grad_ys=up)
        plain, = tf.gradients(tf.round(x) + tf.sign(x), x)
        vs, vds, vdr, vplain = _run([s, ds, dr, plain])
    assert vs.tolist() == [-1.0, -1.0, 0.0, 1.0, 1.0]     # the forward value is unchanged
    assert vds.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert vdr.tolist() == [0.0, 2.0, 3.0, 4.0, 0.0]
    assert vplain.tolist() == [0.0] * 5                  # outside the block: the true zeros


def test_override_applies_by_type_inside_the_block_only_and_nests():
    name = _unique("Times5")
    tf.RegisterGradient(name)(lambda op, grad: [grad * 5.0])
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.5, -2.0])
        with g.gradient_override_map({"Identity": name}):
            a = tf.identity(x)
            b = tf.negative(x)                            # another type: its own rule
            with g.gradient_override_map({"Identity": "Identity"}):
                c = tf.identity(x)
            d = tf.identity(x)                            # the outer mapping is back
        e = tf.identity(x)
        assert a.op.get_attr("_gradient_op_type") == name.encode()
        assert c.op.get_attr("_gradient_op_type") == b"Identity"
        for t in (b, e):
            with pytest.raises(ValueError, match="has no attr '_gradient_op_type'"):
                t.op.get_attr("_gradient_op_type")
        grads = [tf.gradients(t, x)[0] for t in (a, b, c, d, e)]
        assert [v.tolist() for v in _run(grads)] == [[5.0, 5.0], [-1.0, -1.0], [1.0, 1.0],
                                                     [5.0, 5.0], [1.0, 1.0]]
        assert _run(tf.gradients([a, b, d, e], x)[0]).tolist() == [10.0, 10.0]


def test_override_is_per_thread():
    name = _unique("PerThread")
    tf.RegisterGradient(name)(lambda op, grad: [grad])
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0)
    made = []
    with g.gradient_override_map({"Identity": name}):
        worker = threading.Thread(target=lambda: made.append(tf.identity(x)))
        with g.as_default():
            worker.start()
            worker.join(timeout=10)
    assert "_gradient_op_type" not in made[0].op.attrs


def test_override_map_must_map_strings_to_strings():
    g = tf.Graph()
    for bad in ([("Identity", "X")], {"Identity": 3}, {b"Identity": "X"}):
        with pytest.raises(TypeError, match="op_type_map must be a dictionary mapping strings to "
                                            "strings"):
            with g.gradient_override_map(bad):
                pass


def test_override_to_an_unregistered_name_raises_lookup_error_naming_it():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0, 2.0])
        with g.gradient_override_map({"Square": "NoSuchGradientAnywhere"}):
            y = tf.square(x, name="sq")
        with pytest.raises(LookupError, match="No gradient defined for operation 'sq' \\(op type: "
                                              "Square\\): gradient_override_map maps it to "
                                              "'NoSuchGradientAnywhere'"):
            tf.gradients(y, x)


def test_override_travels_with_the_graph_def():
    name = _unique("Times3")
    tf.RegisterGradient(name)(lambda op, grad: [grad * 3.0])
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with g.gradient_override_map({"Identity": name}):
            tf.identity(x, name="y")
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(g.as_graph_def(), name="")
        x2, y2 = g2.get_tensor_by_name("x:0"), g2.get_tensor_by_name("y:0")
        dx, = tf.gradients(y2, x2)
        assert _run(dx, {x2: [1.0, 2.0]}).tolist() == [3.0, 3.0]


# -- custom_gradient ----------------------------------------------------------------------------
def test_custom_gradient_log1pexp_is_finite_where_the_naive_gradient_is_not():
    with tf.Graph().as_default():
        x = tf.constant([-5.0, 0.0, 100.0])
        y = log1pexp(x)
        assert y.op.type == "IdentityN" and log1pexp.__name__ == "log1pexp"
        dx, = tf.gradients(y, x)
        naive, = tf.gradients(tf.log(1 + tf.exp(x)), x)
        vdx, vnaive = _run([dx, naive])
    np.testing.assert_allclose(vdx, [1.0 / (1.0 + np.exp(5.0)), 0.5, 1.0], rtol=1e-5)
    assert np.isnan(vnaive[2])


def test_custom_gradient_with_a_variable_inside():
    with tf.Graph().as_default():
        w = tf.Variable(2.0, name="w")
        seen = []

        @tf.custom_gradient
        def scale(x):
            def grad(dy, variables=None):
                seen.append(variables)
                return dy * w * 10.0, [tf.reduce_sum(dy * x) * 100.0]
            return x * w, grad

        x = tf.constant([3.0, 4.0])
        y = scale(x)
        dx, dw = tf.gradients(tf.reduce_sum(y), [x, w])
        assert seen == [[w]]
        vy, vdx, vdw = _run([y, dx, dw])
        assert vy.tolist() == [6.0, 8.0] and vdx.tolist() == [20.0, 20.0] and vdw == 700.0

        # The custom gradient drives an optimizer: w -= 0.01 * 700.
        step = tf.train.GradientDescentOptimizer(0.01).minimize(tf.reduce_sum(y), var_list=[w])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            assert sess.run(w) == pytest.approx(2.0 - 7.0)


def test_custom_gradient_with_variables_checks_the_grad_fn():
    with tf.Graph().as_default():
        w = tf.Variable(2.0, name="w")

        @tf.custom_gradient
        def no_variables_kwarg(x):
            return x * w, lambda dy: dy

        with pytest.raises(TypeError, match="grad_fn must accept keyword argument 'variables', "
                                            "since function uses variables: \\[w:0\\]"):
            no_variables_kwarg(tf.constant(1.0))

        @tf.custom_gradient
        def too_many(x):
            return x * w, lambda dy, variables: (dy, [dy, dy])

        y = too_many(tf.constant(1.0))
        with pytest.raises(ValueError, match="Must return gradient for each variable"):
            tf.gradients(y, w)

        # A variable passed as an argument is an input, not a captured variable.
        @tf.custom_gradient
        def twice(x):
            return x * 2.0, lambda dy: dy * 9.0

        assert _run(tf.gradients(twice(w), w)[0]) == 9.0


def test_custom_gradient_structures_and_errors():
    with tf.Graph().as_default():
        @tf.custom_gradient
        def f(pair):
            a, b = pair

            def grad(dsum, dprod):
                return [dsum + 2.0 * dprod, dsum * 3.0]
            return (a + b, {"prod": a * b}), grad

        a, b = tf.constant(1.0), tf.constant(2.0)
        total, parts = f([a, b])
        assert sorted(parts) == ["prod"]
        both = tf.gradients([total, parts["prod"]], [a, b])
        only_prod = tf.gradients(parts["prod"], [a, b])   # the other output's gradient is zero
        assert _run([total, parts["prod"]]) == [3.0, 2.0]
        assert _run(both) == [3.0, 3.0] and _run(only_prod) == [2.0, 0.0]

        with pytest.raises(ValueError, match="supports keywords arguments only when eager"):
            f(pair=[a, b])

        @tf.custom_gradient
        def short(x, y):
            return x + y, lambda dz: dz

        with pytest.raises(ValueError, match="grad_fn of short returned 1 gradients for its 2 "
                                             "input tensors"):
            tf.gradients(short(a, b), [a, b])

        @tf.custom_gradient
        def no_grad_fn(x):
            return x

        with pytest.raises(TypeError, match="must return \\(result, grad_fn\\)"):
            no_grad_fn(a)


# -- hessians -----------------------------------------------------------------------------------
def test_hessians_of_a_quadratic_form_match_the_analytic_matrix():
    a = np.array([[2.0, 1.0, 0.0], [3.0, 3.0, 1.0], [0.0, -1.0, 4.0]])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        xu = tf.placeholder(tf.float64)                   # size known only at run time
        m = tf.Variable(np.ones((2, 2)))

        def quadratic(v):
            col = tf.reshape(v, [-1, 1])
            return 0.5 * tf.reduce_sum(col * tf.matmul(tf.constant(a), col)) + tf.reduce_sum(v)

        h, = tf.hessians(quadratic(x), x)
        hu, = tf.hessians(quadratic(xu), xu)
        hm, hx = tf.hessians(tf.reduce_sum(m ** 3) + quadratic(x), [m, x])
        assert h.get_shape().as_list() == [3, 3] and hm.get_shape().as_list() == [2, 2, 2, 2]
        feed = {x: [1.0, -2.0, 0.5], xu: [1.0, -2.0, 0.5]}
        vh, vhu, vhm, vhx = _run([h, hu, hm, hx], feed)
    np.testing.assert_allclose(vh, (a + a.T) / 2)
    np.testing.assert_allclose(vhu, (a + a.T) / 2)
    np.testing.assert_allclose(vhx, (a + a.T) / 2)
    np.testing.assert_allclose(vhm, np.diag(6.0 * np.ones(4)).reshape(2, 2, 2, 2))


def test_hessians_of_linear_and_unconnected_functions_are_zeros():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        z = tf.constant(3.0)
        linear, unconnected = tf.hessians(tf.reduce_sum(3.0 * x) + z * z, [x, tf.constant(1.0)])
        assert _run(linear).tolist() == [[0.0, 0.0], [0.0, 0.0]] and _run(unconnected) == 0.0


# -- unconnected_gradients, aggregation_method --------------------------------------------------
def test_unconnected_gradients_zero_gives_zeros_like_x():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        k = tf.placeholder(tf.int32, [3])
        w = tf.constant(2.0)
        y = w * 3.0
        assert tf.gradients(y, [x, k]) == [None, None]
        gx, gk, gw = tf.gradients(y, [x, k, w], unconnected_gradients=tf.UnconnectedGradients.ZERO)
        assert (gx.dtype, gk.dtype) == (tf.float32, tf.int32)
        assert tf.gradients(y, x, unconnected_gradients="zero")[0].dtype == tf.float32
        vx, vk, vw = _run([gx, gk, gw], {x: np.ones((4, 2)), k: [1, 2, 3]})
    assert vx.shape == (4, 2) and not vx.any() and vk.tolist() == [0, 0, 0] and vw == 3.0
    assert [u.value for u in tf.UnconnectedGradients] == ["none", "zero"]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'zeros'"):
            tf.gradients(tf.constant(1.0), tf.constant(2.0), unconnected_gradients="zeros")


def test_every_aggregation_method_sums_the_contributions():
    assert (tf.AggregationMethod.ADD_N, tf.AggregationMethod.DEFAULT,
            tf.AggregationMethod.EXPERIMENTAL_TREE,
            tf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N) == (0, 0, 1, 2)
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        y = x * 2.0 + x * 3.0 + x * x
        grads = [tf.gradients(y, x, aggregation_method=m)[0] for m in (None, 0, 1, 2)]
        assert [v.tolist() for v in _run(grads)] == [[7.0, 9.0]] * 4
        for bad in (7, "add_n"):
            with pytest.raises(ValueError, match="Invalid `aggregation_method` specified %s. "
                                                 "Accepted values are \\[0, 1, 2\\]." % bad):
                tf.gradients(y, x, aggregation_method=bad)


# -- integer ys -------------------------------------------------------------------------------
def test_gradients_of_integer_ys_are_none_as_in_tf1():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        k = tf.placeholder(tf.int32, [3])
        as_int = tf.cast(x, tf.int32)
        assert tf.gradients(as_int, x) == [None]
        assert tf.gradients(as_int * 2, x) == [None]
        assert tf.gradients(tf.reduce_sum(tf.square(as_int)), x) == [None]
        assert tf.gradients(k * 2, k) == [None]
        assert tf.gradients(x > 0.0, x) == [None]
        assert tf.gradients(tf.argmax(x), x) == [None]
        assert tf.gradients(tf.cast(tf.cast(x, tf.int32), tf.float32), x) == [None]
        assert tf.gradients(as_int, x, grad_ys=[[1, 2, 3]]) == [None]
        # An integer y that is itself an x: its default gradient, ones.
        own, = tf.gradients(k, k)
        # Through an op with a float output too (top_k's values): zeros for the float path.
        top, = tf.gradients(tf.nn.top_k(x, 2).indices, x)
        # Float ys next to integer ones: only the float path contributes.
        mixed, = tf.gradients([as_int, x * 2.0], x)
        vown, vtop, vmixed = _run([own, top, mixed], {x: [1.0, 3.0, 2.0], k: [4, 5, 6]})
        assert own.dtype == tf.int32 and vown.tolist() == [1, 1, 1]
        assert vtop.tolist() == [0.0, 0.0, 0.0] and vmixed.tolist() == [2.0, 2.0, 2.0]
        with pytest.raises(TypeError, match="with type string must be numeric to obtain a "
                                            "default gradient"):
            tf.gradients(tf.as_string(x), x)


def test_overridden_and_custom_gradients_run_across_tasks():
    """Gradients are built by the client; the ops they create (and the override attrs) ship to
    the tasks that run them."""
    from zps.testing.cluster import free_ports

    name = _unique("Times4")
    tf.RegisterGradient(name)(lambda op, grad: [grad * 4.0])
    spec = {"local": ["127.0.0.1:%d" % p for p in free_ports(2)]}
    servers = [tf.train.Server(spec, job_name="local", task_index=i) for i in range(2)]
    try:
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:local/task:1"):
                w = tf.Variable([1.0, -1.0], name="w")
                with g.gradient_override_map({"Identity": name}):
                    y = tf.identity(w * 2.0)
            with tf.device("/job:local/task:0"):
                loss = tf.reduce_sum(log1pexp(y))
            step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            with tf.Session(servers[0].target) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(step)
                sigmoid = 1 / (1 + np.exp(-np.array([2.0, -2.0])))
                np.testing.assert_allclose(sess.run(w), [1.0, -1.0] - 0.5 * 8.0 * sigmoid,
                                           rtol=1e-5)
    finally:
        for s in servers:
            s.stop()
