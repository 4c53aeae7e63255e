"""Training ops: in-place updates against numpy references of TF1's formulas, sparse rows,
blocked dense updates, locking, and the errors of bad inputs."""

import threading

import numpy as np
import pytest

import zps as tf
from zps.ops import training_ops as ops

R = np.random.default_rng(7)


# -- numpy references (TF1's kernels, in float64) ------------------------------------------------
def ref_gradient_descent(w, g, lr):
    return [w - lr * g]


def ref_momentum(w, accum, g, lr, momentum, use_nesterov=False):
    accum = accum * momentum + g
    step = g * lr + accum * momentum * lr if use_nesterov else accum * lr
    return [w - step, accum]


def ref_adagrad(w, accum, g, lr):
    accum = accum + g * g
    return [w - lr * g / np.sqrt(accum), accum]


def _adam_alpha(lr, beta1, beta2, t):
    return lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)


def ref_adam(w, m, v, g, lr, beta1, beta2, epsilon, t, use_nesterov=False):
    """Adam step number ``t`` (1-based: beta powers beta^t)."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    num = m * beta1 + (1 - beta1) * g if use_nesterov else m
    return [w - _adam_alpha(lr, beta1, beta2, t) * num / (np.sqrt(v) + epsilon), m, v]


def ref_rms_prop(w, ms, mom, g, lr, rho, momentum, epsilon):
    ms = rho * ms + (1 - rho) * g * g
    mom = momentum * mom + lr * g / np.sqrt(ms + epsilon)
    return [w - mom, ms, mom]


def ref_centered_rms_prop(w, mg, ms, mom, g, lr, rho, momentum, epsilon):
    ms = rho * ms + (1 - rho) * g * g
    mg = rho * mg + (1 - rho) * g
    mom = momentum * mom + lr * g / np.sqrt(ms - mg * mg + epsilon)
    return [w - mom, mg, ms, mom]


def ref_ftrl(w, accum, linear, g, lr, l1, l2, lr_power, l2_shrinkage=0.0):
    """TF1's ApplyFtrl(V2) in float64, written as its kernel is (a select, not a clip)."""
    new_accum = accum + g * g
    linear = linear + g + 2 * l2_shrinkage * w - (
        new_accum ** -lr_power - accum ** -lr_power) / lr * w
    quadratic = new_accum ** -lr_power / lr + 2 * l2
    w = np.where(np.abs(linear) > l1, (l1 * np.sign(linear) - linear) / quadratic, 0.0)
    return [w, new_accum, linear]


def ref_adadelta(w, accum, accum_update, g, lr, rho, epsilon):
    accum = rho * accum + (1 - rho) * g * g
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * g
    return [w - lr * update, accum, rho * accum_update + (1 - rho) * update * update]


def _proximal(prox, step, l1, l2):
    return np.sign(prox) * np.maximum(np.abs(prox) - step * l1, 0) / (1 + step * l2)


def ref_proximal_gradient_descent(w, g, lr, l1, l2):
    return [_proximal(w - lr * g, lr, l1, l2)]


def ref_proximal_adagrad(w, accum, g, lr, l1, l2):
    accum = accum + g * g
    step = lr / np.sqrt(accum)
    return [_proximal(w - step * g, step, l1, l2), accum]


def ref_adagrad_da(w, g_acc, gg_acc, g, lr, l1, l2, step):
    g_acc, gg_acc = g_acc + g, gg_acc + g * g
    w = -lr * np.sign(g_acc) * np.maximum(np.abs(g_acc) - step * l1, 0) / (
        l2 * step * lr + np.sqrt(gg_acc))
    return [w, g_acc, gg_acc]


def dedup(indices, rows):
    """TF1's _deduplicate_indexed_slices: unique indices, rows of duplicates summed."""
    unique, inverse = np.unique(indices, return_inverse=True)
    summed = np.zeros((len(unique),) + rows.shape[1:])
    np.add.at(summed, inverse, rows)
    return unique, summed


def ref_sparse(ref, arrays, indices, rows, **hyper):
    """A dense reference applied to the touched rows only (duplicates summed first)."""
    unique, summed = dedup(indices, rows)
    out = [np.array(a, dtype=np.float64) for a in arrays]
    new = ref(*[a[unique] for a in out], summed, **hyper)
    for a, n in zip(out, new):
        a[unique] = n
    return out


def ref_sparse_adam(w, m, v, indices, rows, lr, beta1, beta2, epsilon, t):
    """TF1's AdamOptimizer._apply_sparse: m, v decay on every row, every row of var moves."""
    unique, summed = dedup(indices, rows)
    m = m * beta1
    m[unique] += (1 - beta1) * summed
    v = v * beta2
    v[unique] += (1 - beta2) * summed * summed
    return [w - _adam_alpha(lr, beta1, beta2, t) * m / (np.sqrt(v) + epsilon), m, v]


# -- a runner: variables + fed gradients, several steps ------------------------------------------
def run_steps(arrays, build, feeds):
    """Make variables from ``arrays``, build the update with ``build(vars, ph)`` where ``ph`` maps
    each feed name to a placeholder, run it once per dict of ``feeds``; returns the values of
    the variables after each step and the fetched op outputs."""
    with tf.Graph().as_default():
        variables = [tf.Variable(a, name="v%d" % i) for i, a in enumerate(arrays)]
        ph = {k: tf.placeholder(tf.as_dtype(np.asarray(v).dtype), name=k)
              for k, v in feeds[0].items()}
        update = build(variables, ph)
        history, outputs = [], []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for feed in feeds:
                outputs.append(sess.run(update, {ph[k]: v for k, v in feed.items()}))
                history.append(sess.run(variables))
    return history, outputs


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


TOL = dict(rtol=2e-5, atol=2e-6)


# FTRL's linear slot sums terms of the variable's size that mostly cancel: float32 rounding
# leaves a few ulps of those terms (~3e-6 absolute over 200,001 coordinates) against float64.
FTRL_TOL = dict(rtol=2e-5, atol=1e-5)


def _assert_all_close(actual, expected, case=""):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, **(FTRL_TOL if "Ftrl" in case else TOL))


# -- dense updates, two steps each -----------------------------------------------------------------
DENSE_CASES = {
    "ApplyGradientDescent": (
        0, lambda v, p: ops.apply_gradient_descent(v[0], 0.1, p["g"]),
        lambda a, g, t: ref_gradient_descent(*a, g, lr=0.1)),
    "ApplyMomentum": (
        1, lambda v, p: ops.apply_momentum(v[0], v[1], 0.1, p["g"], 0.9),
        lambda a, g, t: ref_momentum(*a, g, lr=0.1, momentum=0.9)),
    "ApplyMomentum_nesterov": (
        1, lambda v, p: ops.apply_momentum(v[0], v[1], 0.1, p["g"], 0.9, use_nesterov=True),
        lambda a, g, t: ref_momentum(*a, g, lr=0.1, momentum=0.9, use_nesterov=True)),
    "ApplyAdagrad": (
        1, lambda v, p: ops.apply_adagrad(v[0], v[1], 0.1, p["g"]),
        lambda a, g, t: ref_adagrad(*a, g, lr=0.1)),
    "ApplyAdam": (
        2, lambda v, p: ops.apply_adam(v[0], v[1], v[2], p["b1p"], p["b2p"], 0.01, 0.9, 0.999, 1e-8,
                                     p["g"]),
        lambda a, g, t: ref_adam(*a, g, lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, t=t)),
    "ApplyAdam_nesterov": (
        2, lambda v, p: ops.apply_adam(v[0], v[1], v[2], p["b1p"], p["b2p"], 0.01, 0.9, 0.999, 1e-8,
                                     p["g"], use_nesterov=True),
        lambda a, g, t: ref_adam(*a, g, lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, t=t,
                                 use_nesterov=True)),
    "ApplyRMSProp": (
        2, lambda v, p: ops.apply_rms_prop(v[0], v[1], v[2], 0.01, 0.9, 0.5, 1e-10, p["g"]),
        lambda a, g, t: ref_rms_prop(*a, g, lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-10)),
    "ApplyFtrl": (
        2, lambda v, p: ops.apply_ftrl(v[0], v[1], v[2], p["g"], 0.1, 0.05, 0.2, -0.5),
        lambda a, g, t: ref_ftrl(*a, g, lr=0.1, l1=0.05, l2=0.2, lr_power=-0.5)),
    "ApplyFtrlV2": (
        2, lambda v, p: ops.apply_ftrl(v[0], v[1], v[2], p["g"], 0.1, 0.05, 0.2, -0.7,
                                     l2_shrinkage=0.3),
        lambda a, g, t: ref_ftrl(*a, g, lr=0.1, l1=0.05, l2=0.2, lr_power=-0.7, l2_shrinkage=0.3)),
    "ApplyCenteredRMSProp": (
        3, lambda v, p: ops.apply_centered_rms_prop(v[0], v[1], v[2], v[3], 0.01, 0.9, 0.5, 1e-3,
                                                  p["g"]),
        lambda a, g, t: ref_centered_rms_prop(*a, g, lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-3)),
    "ApplyAdadelta": (
        2, lambda v, p: ops.apply_adadelta(v[0], v[1], v[2], 1.0, 0.9, 1e-6, p["g"]),
        lambda a, g, t: ref_adadelta(*a, g, lr=1.0, rho=0.9, epsilon=1e-6)),
    "ApplyProximalGradientDescent": (
        0, lambda v, p: ops.apply_proximal_gradient_descent(v[0], 0.1, 0.3, 0.2, p["g"]),
        lambda a, g, t: ref_proximal_gradient_descent(*a, g, lr=0.1, l1=0.3, l2=0.2)),
    "ApplyProximalAdagrad": (
        1, lambda v, p: ops.apply_proximal_adagrad(v[0], v[1], 0.1, 0.3, 0.2, p["g"]),
        lambda a, g, t: ref_proximal_adagrad(*a, g, lr=0.1, l1=0.3, l2=0.2)),
    "ApplyAdagradDA": (
        2, lambda v, p: ops.apply_adagrad_da(v[0], v[1], v[2], p["g"], 0.1, 0.3, 0.2, 3),
        lambda a, g, t: ref_adagrad_da(*a, g, lr=0.1, l1=0.3, l2=0.2, step=3)),
}


# Slots that hold second moments start positive (as their optimizers start them).
_POSITIVE_SLOT = {"ApplyAdagrad": (0,), "ApplyAdam": (1,), "ApplyRMSProp": (0,),
                  "ApplyCenteredRMSProp": (1,), "ApplyFtrl": (0,), "ApplyFtrlV2": (0,),
                  "ApplyAdadelta": (0, 1), "ApplyProximalAdagrad": (0,), "ApplyAdagradDA": (1,)}


def _initial_arrays(op_type, num_slots, shape):
    positive = _POSITIVE_SLOT.get(op_type.split("_")[0], ())
    return [f32(*shape)] + [np.full(shape, 0.5, np.float32) if i in positive else 0.1 * f32(*shape)
                            for i in range(num_slots)]


def _adam_feeds(grads):
    return [{"g": g, "b1p": np.float32(0.9 ** t), "b2p": np.float32(0.999 ** t)}
            for t, g in enumerate(grads, 1)]


@pytest.mark.parametrize("shape", [(3, 4), (200_001,)], ids=["small", "blocked"])
@pytest.mark.parametrize("case", sorted(DENSE_CASES))
def test_dense_update_matches_tf1_formula(case, shape):
    num_slots, build, ref = DENSE_CASES[case]
    arrays = _initial_arrays(case, num_slots, shape)
    grads = [f32(*shape), f32(*shape)]
    feeds = _adam_feeds(grads) if "Adam" in case else [{"g": g} for g in grads]
    history, outputs = run_steps(arrays, build, feeds)
    expected = [a.astype(np.float64) for a in arrays]
    for t, g in enumerate(grads, 1):
        expected = ref(expected, g.astype(np.float64), t)
        _assert_all_close(history[t - 1], expected, case)
        _assert_all_close([outputs[t - 1]], expected[:1], case)   # the op outputs var


# -- sparse updates (duplicate indices summed first) ----------------------------------------------
SPARSE_CASES = {
    "SparseApplyGradientDescent": (
        0, lambda v, p: ops.sparse_apply_gradient_descent(v[0], 0.1, p["g"], p["i"]),
        lambda a, i, g, t: ref_sparse(ref_gradient_descent, a, i, g, lr=0.1)),
    "SparseApplyMomentum": (
        1, lambda v, p: ops.sparse_apply_momentum(v[0], v[1], 0.1, p["g"], p["i"], 0.9),
        lambda a, i, g, t: ref_sparse(ref_momentum, a, i, g, lr=0.1, momentum=0.9)),
    "SparseApplyMomentum_nesterov": (
        1, lambda v, p: ops.sparse_apply_momentum(v[0], v[1], 0.1, p["g"], p["i"], 0.9,
                                                use_nesterov=True),
        lambda a, i, g, t: ref_sparse(ref_momentum, a, i, g, lr=0.1, momentum=0.9,
                                      use_nesterov=True)),
    "SparseApplyAdagrad": (
        1, lambda v, p: ops.sparse_apply_adagrad(v[0], v[1], 0.1, p["g"], p["i"]),
        lambda a, i, g, t: ref_sparse(ref_adagrad, a, i, g, lr=0.1)),
    "SparseApplyAdam": (
        2, lambda v, p: ops.sparse_apply_adam(v[0], v[1], v[2], p["b1p"], p["b2p"], 0.01, 0.9, 0.999,
                                            1e-8, p["g"], p["i"]),
        lambda a, i, g, t: ref_sparse_adam(*a, i, g, lr=0.01, beta1=0.9, beta2=0.999,
                                           epsilon=1e-8, t=t)),
    "SparseApplyRMSProp": (
        2, lambda v, p: ops.sparse_apply_rms_prop(v[0], v[1], v[2], 0.01, 0.9, 0.5, 1e-10, p["g"],
                                                p["i"]),
        lambda a, i, g, t: ref_sparse(ref_rms_prop, a, i, g, lr=0.01, rho=0.9, momentum=0.5,
                                      epsilon=1e-10)),
    "SparseApplyFtrl": (
        2, lambda v, p: ops.sparse_apply_ftrl(v[0], v[1], v[2], p["g"], p["i"], 0.1, 0.05, 0.2,
                                            -0.5),
        lambda a, i, g, t: ref_sparse(ref_ftrl, a, i, g, lr=0.1, l1=0.05, l2=0.2, lr_power=-0.5)),
    "SparseApplyFtrlV2": (
        2, lambda v, p: ops.sparse_apply_ftrl(v[0], v[1], v[2], p["g"], p["i"], 0.1, 0.05, 0.2,
                                            -0.7, l2_shrinkage=0.3),
        lambda a, i, g, t: ref_sparse(ref_ftrl, a, i, g, lr=0.1, l1=0.05, l2=0.2, lr_power=-0.7,
                                      l2_shrinkage=0.3)),
    "SparseApplyCenteredRMSProp": (
        3, lambda v, p: ops.sparse_apply_centered_rms_prop(v[0], v[1], v[2], v[3], 0.01, 0.9, 0.5,
                                                         1e-3, p["g"], p["i"]),
        lambda a, i, g, t: ref_sparse(ref_centered_rms_prop, a, i, g, lr=0.01, rho=0.9,
                                      momentum=0.5, epsilon=1e-3)),
    "SparseApplyAdadelta": (
        2, lambda v, p: ops.sparse_apply_adadelta(v[0], v[1], v[2], 1.0, 0.9, 1e-6, p["g"], p["i"]),
        lambda a, i, g, t: ref_sparse(ref_adadelta, a, i, g, lr=1.0, rho=0.9, epsilon=1e-6)),
    "SparseApplyProximalGradientDescent": (
        0, lambda v, p: ops.sparse_apply_proximal_gradient_descent(v[0], 0.1, 0.3, 0.2, p["g"],
                                                                   p["i"]),
        lambda a, i, g, t: ref_sparse(ref_proximal_gradient_descent, a, i, g, lr=0.1, l1=0.3,
                                      l2=0.2)),
    "SparseApplyProximalAdagrad": (
        1, lambda v, p: ops.sparse_apply_proximal_adagrad(v[0], v[1], 0.1, 0.3, 0.2, p["g"],
                                                          p["i"]),
        lambda a, i, g, t: ref_sparse(ref_proximal_adagrad, a, i, g, lr=0.1, l1=0.3, l2=0.2)),
    "SparseApplyAdagradDA": (
        2, lambda v, p: ops.sparse_apply_adagrad_da(v[0], v[1], v[2], p["g"], p["i"], 0.1, 0.3,
                                                    0.2, 3),
        lambda a, i, g, t: ref_sparse(ref_adagrad_da, a, i, g, lr=0.1, l1=0.3, l2=0.2, step=3)),
}


def _check_sparse_steps(case, shape, indices, grads):
    """Run ``case``'s sparse update over the steps (indices, grads) from fresh arrays of
    ``shape``, checking each step against TF1's formula; returns (initial, final) arrays."""
    num_slots, build, ref = SPARSE_CASES[case]
    arrays = _initial_arrays(case.replace("Sparse", ""), num_slots, shape)
    feeds = _adam_feeds(grads) if "Adam" in case else [{"g": g} for g in grads]
    for feed, i in zip(feeds, indices):
        feed["i"] = i
    history, _ = run_steps(arrays, build, feeds)
    expected = [a.astype(np.float64) for a in arrays]
    for t, (i, g) in enumerate(zip(indices, grads), 1):
        expected = ref(expected, i, g.astype(np.float64), t)
        _assert_all_close(history[t - 1], expected, case)
    return arrays, history[-1]


@pytest.mark.parametrize("case", sorted(SPARSE_CASES))
def test_sparse_update_matches_tf1_formula(case):
    # Step 1 repeats index 4 (its rows are summed); step 2 touches other rows.
    arrays, final = _check_sparse_steps(
        case, (6, 3), [np.array([4, 1, 4], np.int32), np.array([0, 5], np.int32)],
        [f32(3, 3), f32(2, 3)])
    if "Adam" not in case:  # rows never touched keep their values (Adam is not lazy in TF1)
        for a, h in zip(arrays, final):
            np.testing.assert_array_equal(h[[2, 3]], a[[2, 3]])


@pytest.mark.parametrize("case", sorted(SPARSE_CASES))
def test_sparse_update_of_many_rows_in_several_blocks_matches_tf1_formula(case):
    """Enough rows of a rank-3 variable that the update runs in several blocks of rows (each
    gathered into scratch, updated, scattered back): unsorted distinct ids, then repeats."""
    rng = np.random.default_rng(5)
    indices = [rng.permutation(5000)[:4500].astype(np.int64), rng.integers(0, 5000, 300)]
    grads = [rng.standard_normal((i.size, 2, 4)).astype(np.float32) for i in indices]
    _check_sparse_steps(case, (5000, 2, 4), indices, grads)


def test_sparse_update_of_a_vector_and_empty_indices():
    w0 = f32(5)
    history, _ = run_steps([w0], lambda v, p: ops.sparse_apply_gradient_descent(v[0], 2.0, p["g"],
                                                                              p["i"]),
                           [{"g": np.array([1.0, 1.0], np.float32), "i": np.array([3, 3])},
                            {"g": np.zeros([0], np.float32), "i": np.zeros([0], np.int64)}])
    expected = w0.copy()
    expected[3] -= 4.0
    np.testing.assert_allclose(history[0][0], expected)
    np.testing.assert_allclose(history[1][0], expected)


def test_float64_and_fortran_ordered_variables():
    w0 = np.asfortranarray(R.standard_normal((300, 400)))  # stored non-C-contiguous
    g = R.standard_normal((300, 400))
    history, _ = run_steps([w0, np.zeros_like(w0)],
                           lambda v, p: ops.apply_momentum(v[0], v[1], 0.5, p["g"], 0.9),
                           [{"g": g}, {"g": g}])
    expected = ref_momentum(*ref_momentum(w0, np.zeros_like(w0), g, 0.5, 0.9), g, 0.5, 0.9)
    np.testing.assert_allclose(history[1][0], expected[0], rtol=1e-12)
    assert history[1][0].dtype == np.float64


def test_hyperparameters_may_be_tensors():
    w0 = f32(4)
    g = f32(4)
    history, _ = run_steps([w0], lambda v, p: ops.apply_gradient_descent(v[0], p["lr"], p["g"]),
                           [{"lr": np.float32(0.5), "g": g}, {"lr": np.float32(0.25), "g": g}])
    np.testing.assert_allclose(history[1][0], w0 - 0.75 * g, **TOL)


def test_update_is_in_place_and_fetch_is_a_copy():
    with tf.Graph().as_default():
        w = tf.Variable(np.ones(4, np.float32))
        step = ops.apply_gradient_descent(w, 1.0, tf.constant(np.ones(4, np.float32)))
        with tf.Session() as sess:
            sess.run(w.initializer)
            out = sess.run(step)
            out[:] = 100.0
            np.testing.assert_array_equal(sess.run(w), np.zeros(4))
            assert step.op.get_attr("use_locking") is False
            assert step.op.op_def.ref_inputs == (0,)


def test_use_locking_makes_concurrent_updates_exact():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros(50_000, np.float32))
        accum = tf.Variable(np.zeros(50_000, np.float32))
        step = ops.apply_momentum(w, accum, 1.0, tf.constant(np.ones(50_000, np.float32)), 0.0,
                                use_locking=True)
        assert step.op.get_attr("use_locking") is True
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())

            def work():
                for _ in range(25):
                    sess.run(step.op)
            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            np.testing.assert_array_equal(sess.run(w), np.full(50_000, -100.0, np.float32))


# -- errors ----------------------------------------------------------------------------------------
def test_build_time_errors_name_the_problem():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((2, 3), np.float32), name="w")
        acc = tf.Variable(np.zeros((3,), np.float32), name="acc")
        with pytest.raises(ValueError, match="grad of shape .* does not fit variable w"):
            ops.apply_gradient_descent(w, 0.1, tf.zeros([3, 2]))
        with pytest.raises(ValueError, match="var w and accum acc must have the same shape"):
            ops.apply_momentum(w, acc, 0.1, tf.zeros([2, 3]), 0.9)
        with pytest.raises(TypeError, match="delta has dtype float64 but the variable w has dtype"):
            ops.apply_gradient_descent(w, 0.1, tf.zeros([2, 3], dtype=tf.float64))
        with pytest.raises(ValueError, match="alpha must be a scalar"):
            ops.apply_gradient_descent(w, [0.1, 0.2], tf.zeros([2, 3]))
        with pytest.raises(TypeError, match="indices must be int32 or int64"):
            ops.sparse_apply_gradient_descent(w, 0.1, tf.zeros([1, 3]), tf.constant([0.5]))
        with pytest.raises(ValueError, match="indices must be one-dimensional"):
            ops.sparse_apply_gradient_descent(w, 0.1, tf.zeros([1, 3]), tf.constant([[0]]))
        with pytest.raises(ValueError, match="grad of shape .* does not fit variable w"):
            ops.sparse_apply_gradient_descent(w, 0.1, tf.zeros([1, 2]), tf.constant([0]))
        with pytest.raises(TypeError, match="needs a Variable"):
            ops.apply_gradient_descent(tf.zeros([2, 3]), 0.1, tf.zeros([2, 3]))


@pytest.mark.parametrize("feed, message", [
    ({"g": np.zeros((3, 2), np.float32)}, r"var and grad do not have the same shape: \[2, 3\] vs"),
    ({"lr": np.zeros(2, np.float32)}, "lr is not a scalar: shape \\[2\\]"),
], ids=["grad_shape", "lr_not_scalar"])
def test_run_time_shape_errors(feed, message):
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((2, 3), np.float32), name="w")
        acc = tf.Variable(np.zeros((2, 3), np.float32), name="acc")
        lr = tf.placeholder(tf.float32)
        g = tf.placeholder(tf.float32)
        step = ops.apply_adagrad(w, acc, lr, g)
        full = {lr: 0.1, g: np.zeros((2, 3), np.float32)}
        full.update({lr if k == "lr" else g: v for k, v in feed.items()})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
                sess.run(step, full)
            assert info.value.op.name == step.op.name


def test_sparse_run_time_errors():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((4, 2), np.float32), name="w")
        g = tf.placeholder(tf.float32)
        i = tf.placeholder(tf.int32)
        step = ops.sparse_apply_gradient_descent(w, 0.1, g, i)
        with tf.Session() as sess:
            sess.run(w.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"Index 7 at offset 1 in indices is out of range \[0, 4\)"):
                sess.run(step, {g: np.zeros((2, 2), np.float32), i: [0, 7]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"grad has shape \[2, 3\] but indices \[2\] and var \[4, 2\] "
                                     r"need shape \[2, 2\]"):
                sess.run(step, {g: np.zeros((2, 3), np.float32), i: [0, 1]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="indices must be one-dim"):
                sess.run(step, {g: np.zeros((1, 1, 2), np.float32), i: [[0]]})


def test_sparse_rows_of_sorted_unsorted_and_repeated_ids():
    # Strictly increasing ids skip the sort; ids that only look sorted (repeats) do not; any
    # out-of-range id fails whatever the order, naming the first bad offset.
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((6, 2), np.float32), name="w")
        g = tf.placeholder(tf.float32, [None, 2])
        i = tf.placeholder(tf.int64, [None])
        step = ops.sparse_apply_gradient_descent(w, 1.0, g, i)
        rows = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
        with tf.Session() as sess:
            for ids in ([0, 2, 3, 5], [5, 0, 3, 2], [0, 2, 2, 5], [5, 5, 5, 5]):
                sess.run(w.initializer)
                got = sess.run(step, {g: rows, i: ids})
                want = np.zeros((6, 2), np.float32)
                np.subtract.at(want, ids, rows)
                np.testing.assert_array_equal(got, want, err_msg=str(ids))
            for ids, bad, offset in (([-1, 2], -1, 0), ([1, 6], 6, 1), ([0, 1, 9, 2], 9, 2)):
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match=r"Index %d at offset %d in indices is out of range "
                                         r"\[0, 6\) for variable w" % (bad, offset)):
                    sess.run(step, {g: rows[:len(ids)], i: ids})


def test_uninitialized_slot_is_a_failed_precondition():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros(3, np.float32), name="w")
        acc = tf.Variable(np.zeros(3, np.float32), name="acc")
        step = ops.apply_momentum(w, acc, 0.1, tf.zeros([3]), 0.9)
        with tf.Session() as sess:
            sess.run(w.initializer)
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value acc"):
                sess.run(step)


def test_adam_step_size_is_computed_in_the_variables_dtype():
    # TF1 computes lr * sqrt(1 - beta2^t) / (1 - beta1^t) in the variable's dtype; numpy 1 would
    # compute 1 - (a float32 0-d array) in float64 (and a GPU's fused update then refuses it).
    f32 = [np.asarray(np.float32(x)) for x in (0.05, 0.9, 0.999)]
    alpha = ops._adam_alpha(np, *f32)
    assert alpha.dtype == np.float32
    one = np.float32(1)
    assert alpha == f32[0] * np.sqrt(one - f32[2]) / (one - f32[1])
