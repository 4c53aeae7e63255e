"""tf.contrib.opt's single-process optimizers: their updates step by step against numpy
re-implementations of TF 1.15's formulas (contrib/opt/python/training/*.py and the kernels of
training_ops.cc), in TF's order of operations, dense and sparse (IndexedSlices with a repeated
index); slot names; a checkpoint of slots; TF1's errors; LazyAdam on a ps.

The references are TF's to the last bit: checked against TensorFlow 2.21 running contrib's
LazyAdam and Nadam sparse code under tf.compat.v1, and its ApplyAdaMax and ApplyAddSign kernels
(ApplyPowerSign's Eigen exp differs from numpy's by up to 1 ulp)."""

import math

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import LocalCluster

copt = tf.contrib.opt
f32 = np.float32
ONE = f32(1)
INIT = np.array([[1.0, -2.0], [0.5, 0.25], [-1.5, 3.0], [2.0, -0.75]], f32)
# Three steps of gradients: dense ones, and sparse ones whose index 0 repeats (summed first).
DENSE_GRADS = [np.array([[0.1, -0.2], [0.3, 0.0], [-0.4, 0.5], [0.2, 0.1]], f32),
               np.array([[-0.3, 0.1], [0.2, -0.6], [0.1, 0.1], [0.0, -0.2]], f32),
               np.array([[0.5, 0.5], [-0.1, 0.3], [0.2, -0.4], [-0.3, 0.6]], f32)]
SPARSE_GRADS = [([0, 2, 0], np.array([[0.1, -0.2], [-0.4, 0.5], [0.3, 0.1]], f32)),
                ([3, 0, 3], np.array([[0.2, 0.1], [-0.3, 0.1], [0.1, -0.4]], f32)),
                ([2, 2, 1], np.array([[0.5, 0.5], [0.2, -0.4], [-0.1, 0.3]], f32))]


def _dedup(indices, values):
    """TF1's _deduplicate_indexed_slices: unique indices in first-seen order, rows summed."""
    unique = list(dict.fromkeys(indices))
    summed = np.zeros((len(unique),) + values.shape[1:], f32)
    for i, row in zip(indices, values):
        summed[unique.index(i)] += row
    return np.array(unique), summed


def _run(make_opt, sparse, slot_names=(), steps=3, use_resource=False, global_step=False):
    """Apply the gradients of up to 3 steps to a variable initialized to INIT; returns per step
    ``[var, *slots]`` (and the optimizer)."""
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=INIT, use_resource=use_resource)
        gs = tf.train.get_or_create_global_step() if global_step else None
        if sparse:
            idx = tf.placeholder(tf.int32, [None])
            vals = tf.placeholder(tf.float32, [None, 2])
            grad = tf.IndexedSlices(vals, idx, tf.constant([4, 2]))
        else:
            grad = tf.placeholder(tf.float32, [4, 2])
        opt = make_opt()
        step = opt.apply_gradients([(grad, w)], global_step=gs)
        fetch = [w] + [opt.get_slot(w, n) for n in slot_names]
        out = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for t in range(steps):
                feed = ({idx: SPARSE_GRADS[t][0], vals: SPARSE_GRADS[t][1]} if sparse
                        else {grad: DENSE_GRADS[t]})
                sess.run(step, feed)
                out.append(sess.run(fetch))
        return out, opt


def _check(got, want):
    """Equal to the last bit: the references compute in TF's order of operations."""
    for t, (g, w) in enumerate(zip(got, want)):
        for k, (a, b) in enumerate(zip(g, w)):
            np.testing.assert_array_equal(a, b, err_msg="step %d, output %d" % (t + 1, k))


def _grads(sparse):
    """Per step: (rows, summed gradient rows) for sparse; (all rows, gradient) for dense."""
    if sparse:
        return [_dedup(*g) for g in SPARSE_GRADS]
    return [(np.arange(4), g) for g in DENSE_GRADS]


# -- numpy references (TF 1.15's order of operations) ---------------------------------------------
def _adam_alpha(lr, b1p, b2p):
    return f32(lr) * np.sqrt(ONE - b2p) / (ONE - b1p)


def ref_adam_dense(w, m, v, g, lr, b1, b2, eps, b1p, b2p, nesterov=False):
    """training_ops.cc ApplyAdam (zps's kernel: TF's order)."""
    b1, b2 = f32(b1), f32(b2)
    alpha = _adam_alpha(lr, b1p, b2p)
    m += (g - m) * (ONE - b1)
    v += (g * g - v) * (ONE - b2)
    if nesterov:
        w -= (m * b1 + g * (ONE - b1)) * alpha / (np.sqrt(v) + f32(eps))
    else:
        w -= m * alpha / (np.sqrt(v) + f32(eps))


def ref_lazy_adam_sparse(w, m, v, idx, g, lr, b1, b2, eps, b1p, b2p):
    b1, b2 = f32(b1), f32(b2)
    lr_t = _adam_alpha(lr, b1p, b2p)
    m[idx] = b1 * m[idx] + (ONE - b1) * g
    v[idx] = b2 * v[idx] + (ONE - b2) * np.square(g)
    w[idx] -= lr_t * m[idx] / (np.sqrt(v[idx]) + f32(eps))


def ref_adam_sparse(w, m, v, idx, g, lr, b1, b2, eps, b1p, b2p):
    """TF1's AdamOptimizer._apply_sparse: m, v decay everywhere, every row moves."""
    b1, b2 = f32(b1), f32(b2)
    m *= b1
    m[idx] += g * (ONE - b1)
    v *= b2
    v[idx] += (g * g) * (ONE - b2)
    w -= m * _adam_alpha(lr, b1p, b2p) / (np.sqrt(v) + f32(eps))


def ref_nadam_sparse(w, m, v, idx, g, lr, b1, b2, eps, b1p, b2p):
    b1, b2 = f32(b1), f32(b2)
    lr_t = _adam_alpha(lr, b1p, b2p)
    scaled = g * (ONE - b1)
    m *= b1
    m[idx] += scaled
    m_bar = scaled + b1 * m[idx]
    v *= b2
    v[idx] += (g * g) * (ONE - b2)
    w[idx] += -lr_t * m_bar / (np.sqrt(v[idx]) + f32(eps))


def _adam_family(ref, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, wd=None, sparse_idx=False):
    """Expected [w, m, v] per step of an Adam-like update (``wd``: decoupled decay first)."""
    def run(sparse, **kw):
        w, m, v = INIT.copy(), np.zeros_like(INIT), np.zeros_like(INIT)
        b1p, b2p, out = f32(b1), f32(b2), []
        for idx, g in _grads(sparse):
            if wd is not None:
                w[idx] = w[idx] - f32(wd) * w[idx]
            if sparse_idx or sparse:
                ref(w, m, v, idx, g, lr, b1, b2, eps, b1p, b2p)
            else:
                ref(w, m, v, g, lr, b1, b2, eps, b1p, b2p, **kw)
            out.append([w.copy(), m.copy(), v.copy()])
            b1p, b2p = b1p * f32(b1), b2p * f32(b2)
        return out
    return run


# -- LazyAdam --------------------------------------------------------------------------------------
@pytest.mark.parametrize("use_resource", [False, True])
def test_lazy_adam_sparse_moves_only_the_gradient_rows(use_resource):
    got, _ = _run(lambda: copt.LazyAdamOptimizer(0.1), True, ["m", "v"], use_resource=use_resource)
    _check(got, _adam_family(ref_lazy_adam_sparse)(True))
    # after step 1 (rows 0, 2): rows 1 and 3 and their moments untouched
    w1, m1, v1 = got[0]
    np.testing.assert_array_equal(w1[[1, 3]], INIT[[1, 3]])
    assert not m1[[1, 3]].any() and not v1[[1, 3]].any()


def test_lazy_adam_dense_is_adam():
    got, _ = _run(lambda: copt.LazyAdamOptimizer(0.1), False, ["m", "v"])
    _check(got, _adam_family(ref_adam_dense)(False))
    want, _ = _run(lambda: tf.train.AdamOptimizer(0.1), False, ["m", "v"])
    for a, b in zip(got, want):
        for x, y in zip(a, b):
            assert x.tobytes() == y.tobytes()


def test_lazy_adam_through_embedding_lookup():
    ids = [2, 0, 2]
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", initializer=INIT)
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) * tf.constant([[1.0, 2.0]]))
        step = copt.LazyAdamOptimizer(0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(2):
                sess.run(step)
            got = sess.run(emb)
    w, m, v = INIT.copy(), np.zeros_like(INIT), np.zeros_like(INIT)
    idx, g = _dedup(ids, np.tile(np.array([[1.0, 2.0]], f32), (3, 1)))
    b1p, b2p = f32(0.9), f32(0.999)
    for _ in range(2):
        ref_lazy_adam_sparse(w, m, v, idx, g, 0.01, 0.9, 0.999, 1e-8, b1p, b2p)
        b1p, b2p = b1p * f32(0.9), b2p * f32(0.999)
    np.testing.assert_allclose(got, w, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(got[[1, 3]], INIT[[1, 3]])


def test_lazy_adam_slots_names_and_checkpoint(tmp_path):
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=INIT)
        opt = copt.LazyAdamOptimizer(0.1)
        step = opt.minimize(tf.reduce_sum(tf.gather(w, [1, 1, 3])))
        assert opt.get_slot_names() == ["m", "v"]
        assert [v.op.name for v in opt.variables()] == ["beta1_power", "beta2_power", "w/Adam",
                                                        "w/Adam_1"]
        assert opt.get_slot(w, "m").get_shape().as_list() == [4, 2]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            saved = sess.run([opt.get_slot(w, "m"), opt.get_slot(w, "v"), w])
            path = saver.save(sess, str(tmp_path / "model"))
            sess.run(step)
            saver.restore(sess, path)
            back = sess.run([opt.get_slot(w, "m"), opt.get_slot(w, "v"), w])
    for a, b in zip(saved, back):
        np.testing.assert_array_equal(a, b)
    reader = tf.train.load_checkpoint(path)
    np.testing.assert_array_equal(reader.get_tensor("w/Adam"), saved[0])
    np.testing.assert_array_equal(reader.get_tensor("w/Adam_1"), saved[1])


# -- Nadam, AdaMax ---------------------------------------------------------------------------------
def test_nadam_dense_and_sparse():
    got, _ = _run(lambda: copt.NadamOptimizer(0.1), False, ["m", "v"])
    _check(got, _adam_family(ref_adam_dense)(False, nesterov=True))
    got, _ = _run(lambda: copt.NadamOptimizer(0.1), True, ["m", "v"])
    _check(got, _adam_family(ref_nadam_sparse)(True))


def _ref_adamax(sparse, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    w, m, v = INIT.copy(), np.zeros_like(INIT), np.zeros_like(INIT)
    b1, b2, b1p, out = f32(b1), f32(b2), f32(b1), []
    for idx, g in _grads(sparse):
        if sparse:   # contrib's _apply_sparse_shared
            m[idx] = m[idx] * b1 + g * (ONE - b1)
            v[idx] = np.maximum(v[idx] * b2, np.abs(g))
            w[idx] += -f32(lr) / (ONE - b1p) * (m[idx] / (v[idx] + f32(eps)))
        else:        # ApplyAdaMax kernel
            m += (g - m) * (ONE - b1)
            v[:] = np.maximum(b2 * v, np.abs(g))
            w -= f32(lr) / (ONE - b1p) * (m / (v + f32(eps)))
        out.append([w.copy(), m.copy(), v.copy()])
        b1p = b1p * b1
    return out


@pytest.mark.parametrize("sparse", [False, True])
def test_adamax(sparse):
    got, opt = _run(lambda: copt.AdaMaxOptimizer(0.1), sparse, ["m", "v"])
    _check(got, _ref_adamax(sparse))


def test_adamax_variables():
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=INIT)
        opt = copt.AdaMaxOptimizer()
        opt.minimize(tf.reduce_sum(w))
        assert [v.op.name for v in opt.variables()] == ["beta1_power", "w/AdaMax", "w/AdaMax_1"]


# -- decoupled weight decay ------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
def test_adamw(sparse):
    got, opt = _run(lambda: copt.AdamWOptimizer(0.01, learning_rate=0.1), sparse, ["m", "v"])
    want = _adam_family(ref_adam_sparse if sparse else ref_adam_dense, wd=0.01)(sparse)
    _check(got, want)
    assert opt.get_name() == "AdamW"


def _ref_momentum_w(sparse, wd, lr=0.1, momentum=0.9):
    w, acc, out = INIT.copy(), np.zeros_like(INIT), []
    for idx, g in _grads(sparse):
        w[idx] = w[idx] - f32(wd) * w[idx]
        acc[idx] = acc[idx] * f32(momentum) + g
        w[idx] -= acc[idx] * f32(lr)
        out.append([w.copy(), acc.copy()])
    return out


@pytest.mark.parametrize("sparse", [False, True])
def test_momentum_w_and_a_callable_or_tensor_weight_decay(sparse):
    got, _ = _run(lambda: copt.MomentumWOptimizer(0.05, 0.1, 0.9), sparse, ["momentum"])
    _check(got, _ref_momentum_w(sparse, 0.05))
    got, _ = _run(lambda: copt.MomentumWOptimizer(lambda: tf.constant(0.05), 0.1, 0.9), sparse,
                  ["momentum"])
    _check(got, _ref_momentum_w(sparse, 0.05))


def test_extend_with_decoupled_weight_decay_and_decay_var_list():
    SGDW = copt.extend_with_decoupled_weight_decay(tf.train.GradientDescentOptimizer)
    assert issubclass(SGDW, copt.DecoupledWeightDecayExtension)
    assert issubclass(SGDW, tf.train.GradientDescentOptimizer)
    with tf.Graph().as_default():
        a = tf.get_variable("a", initializer=[1.0, 2.0])
        b = tf.get_variable("b", initializer=[4.0])
        loss = tf.reduce_sum(a) + tf.reduce_sum(b)
        step_all = SGDW(0.5, 0.1).minimize(loss)
        step_a = SGDW(0.5, learning_rate=0.1).minimize(loss, decay_var_list=[a])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step_all)
            np.testing.assert_allclose(sess.run(a), [0.4, 0.9], rtol=1e-6)
            np.testing.assert_allclose(sess.run(b), [1.9], rtol=1e-6)
            sess.run(step_a)   # b is not decayed: 1.9 - 0.1
            np.testing.assert_allclose(sess.run(a), [0.1, 0.35], rtol=1e-6)
            np.testing.assert_allclose(sess.run(b), [1.8], rtol=1e-6)
    with pytest.raises(TypeError, match="optimizer class"):
        copt.extend_with_decoupled_weight_decay(tf.train.AdamOptimizer())


# -- AddSign, PowerSign and the sign decays --------------------------------------------------------
def _ref_sign(sparse, scale, lr=0.1, beta=0.9):
    w, m, out = INIT.copy(), np.zeros_like(INIT), []
    beta = f32(beta)
    for t, (idx, g) in enumerate(_grads(sparse)):
        dense = np.zeros_like(INIT)
        dense[idx] = g
        m[:] = m * beta + dense * (ONE - beta)
        sign_gm = np.sign(m[idx]) * np.sign(g)
        w[idx] -= f32(lr) * scale(sign_gm, t, sparse) * g
        out.append([w.copy(), m.copy()])
    return out


def _linear_decay(t, steps=4):
    # get_linear_decay_fn(4) at global_step t (before its increment)
    return f32(max(0, steps - min(t, steps))) / f32(steps)


@pytest.mark.parametrize("sparse", [False, True])
def test_add_sign(sparse):
    got, _ = _run(lambda: copt.AddSignOptimizer(0.1, alpha=1.5), sparse, ["m"])
    _check(got, _ref_sign(sparse, lambda s, t, sp: f32(1.5) + ONE * s))
    got, _ = _run(lambda: copt.AddSignOptimizer(0.1, sign_decay_fn=copt.get_linear_decay_fn(4)),
                  sparse, ["m"], global_step=True)
    _check(got, _ref_sign(sparse, lambda s, t, sp: ONE + _linear_decay(t) * s))


@pytest.mark.parametrize("sparse", [False, True])
def test_power_sign(sparse):
    logbase = f32(math.log(2.0))

    def scale(s, t, sp, decay=ONE):
        x = logbase * decay * s
        return np.power(f32(math.e), x) if sp else np.exp(x)
    got, _ = _run(lambda: copt.PowerSignOptimizer(0.1, base=2.0), sparse, ["m"])
    _check(got, _ref_sign(sparse, scale))
    got, _ = _run(lambda: copt.PowerSignOptimizer(0.1, base=2.0,
                                               sign_decay_fn=copt.get_linear_decay_fn(4)),
                  sparse, ["m"], global_step=True)
    _check(got, _ref_sign(sparse, lambda s, t, sp: scale(s, t, sp, _linear_decay(t))))


def test_sign_decay_functions():
    steps = [0, 1, 5, 10, 12]
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        fns = [copt.get_linear_decay_fn(10), copt.get_cosine_decay_fn(10),
               copt.get_cosine_decay_fn(10, num_periods=2, zero_after=1),
               copt.get_restart_decay_fn(10, num_periods=2), copt.get_restart_decay_fn(10, zero_after=0.5)]
        outs = [fn(step) for fn in fns]
        with tf.Session() as sess:
            got = np.array([sess.run(outs, {step: s}) for s in steps]).T
    for fn in fns:
        with pytest.raises(ValueError, match="global_step is required"):
            fn(None)
    clamp = np.minimum(steps, 10) / 10.0
    cos = 0.5 * (1 + np.cos(np.pi * 2 * 0.5 * clamp))
    cos2 = np.where(4 * clamp >= 2, 0.0, 0.5 * (1 + np.cos(np.pi * 4 * clamp)))
    restart = 0.5 * (1 + np.cos(np.pi * np.mod(2 * np.minimum(steps, 10), 10) / 10.0))
    restart_z = np.where(clamp >= 0.5, 0.0, 0.5 * (1 + np.cos(np.pi * np.mod(
        np.minimum(steps, 10), 10) / 10.0)))
    np.testing.assert_allclose(got, [1 - clamp, cos, cos2, restart, restart_z], atol=1e-6)


# -- LARS ------------------------------------------------------------------------------------------
def _ref_lars(sparse, lr=0.1, momentum=0.9, wd=0.01, eeta=0.5, eps=0.0):
    w, acc, out = INIT.copy(), np.zeros_like(INIT), []
    for idx, g in _grads(sparse):
        if sparse:
            scaled = f32(lr)
        else:
            w_norm, g_norm = np.sqrt(np.sum(w * w)), np.sqrt(np.sum(g * g))
            scaled = f32(lr) * (f32(eeta) * w_norm / (g_norm + f32(wd) * w_norm + f32(eps)))
        acc[idx] = acc[idx] * f32(momentum) + g
        w[idx] -= acc[idx] * scaled
        out.append([w.copy(), acc.copy()])
    return out


@pytest.mark.parametrize("sparse", [False, True])
def test_lars(sparse):
    got, _ = _run(lambda: copt.LARSOptimizer(0.1, momentum=0.9, weight_decay=0.01, eeta=0.5),
                  sparse, ["momentum"])
    _check(got, _ref_lars(sparse))


def test_lars_skip_list_and_zero_norms_keep_the_base_rate():
    with tf.Graph().as_default():
        bias = tf.get_variable("bias", initializer=[1.0, 2.0])
        zero = tf.get_variable("zero", initializer=[0.0, 0.0])
        opt = copt.LARSOptimizer(0.1, momentum=0.0, eeta=0.5, skip_list=["bias"])
        step = opt.apply_gradients([(tf.constant([1.0, 1.0]), bias),
                                    (tf.constant([1.0, -1.0]), zero)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_allclose(sess.run([bias, zero]), [[0.9, 1.9], [-0.1, 0.1]],
                                       rtol=1e-6)


# -- RegAdagrad ------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
def test_reg_adagrad_avoid_updating_slots(sparse):
    def make():
        opt = copt.RegAdagradOptimizer(0.1)
        return opt
    got, _ = _run(make, sparse, ["accumulator"])
    want, _ = _run(lambda: tf.train.AdagradOptimizer(0.1), sparse, ["accumulator"])
    _check(got, want)

    class Frozen(copt.RegAdagradOptimizer):
        def apply_gradients(self, *args, **kwargs):
            with self.avoid_updating_slots():
                return super().apply_gradients(*args, **kwargs)
    got, _ = _run(lambda: Frozen(0.1), sparse, ["accumulator"])
    w, acc, want = INIT.copy(), np.full_like(INIT, 0.1), []
    for idx, g in _grads(sparse):
        w[idx] -= g / np.sqrt(acc[idx]) * f32(0.1)
        want.append([w.copy(), acc.copy()])
    _check(got, want)


# -- VariableClipping ------------------------------------------------------------------------------
def _clip_rows(x, max_norm):
    norms = np.sqrt(np.sum(x * x, axis=1, keepdims=True))
    return x * f32(max_norm) / np.maximum(norms, f32(max_norm))


@pytest.mark.parametrize("sparse", [False, True])
def test_variable_clipping(sparse):
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=INIT)
        sgd = tf.train.GradientDescentOptimizer(0.5)
        opt = copt.VariableClippingOptimizer(sgd, {w: [1]}, max_norm=1.5)
        if sparse:
            grad = tf.IndexedSlices(tf.constant(SPARSE_GRADS[0][1]),
                                    tf.constant(SPARSE_GRADS[0][0]), tf.constant([4, 2]))
        else:
            grad = tf.constant(DENSE_GRADS[0])
        step = opt.apply_gradients([(grad, w)])
        assert opt.get_slot_names() == []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            got = sess.run(w)
    want = INIT.copy()
    idx, g = _grads(sparse)[0]
    want[idx] -= f32(0.5) * g
    want[idx] = _clip_rows(want[idx], 1.5)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.all(np.linalg.norm(got[idx], axis=1) <= 1.5 + 1e-6)


# -- MultitaskOptimizerWrapper ---------------------------------------------------------------------
def test_multitask_wrapper_skips_all_zero_gradients():
    with tf.Graph().as_default():
        a = tf.get_variable("a", initializer=[1.0, 2.0])
        b = tf.get_variable("b", initializer=INIT)
        opt = copt.MultitaskOptimizerWrapper(tf.train.MomentumOptimizer(0.1, momentum=0.9))
        ga = tf.placeholder(tf.float32, [2])
        gb = tf.IndexedSlices(tf.placeholder(tf.float32, [None, 2]),
                              tf.placeholder(tf.int32, [None]), tf.constant([4, 2]))
        step = opt.apply_gradients([(ga, a), (gb, b)])
        assert opt.get_slot_names() == ["momentum"]
        feed = {ga: [0.0, 0.0], gb.values: np.zeros((1, 2), f32), gb.indices: [1]}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step, feed)
            np.testing.assert_array_equal(sess.run(a), [1.0, 2.0])
            np.testing.assert_array_equal(sess.run(b), INIT)
            feed = {ga: [1.0, 0.0], gb.values: [[1.0, 1.0]], gb.indices: [1]}
            sess.run(step, feed)
            sess.run(step, feed)
            np.testing.assert_allclose(sess.run(a), [1.0 - 0.1 - 0.19, 2.0], rtol=1e-6)
            np.testing.assert_allclose(sess.run(b)[1], INIT[1] - 0.29, rtol=1e-6)
    with pytest.raises(TypeError, match="instance of tf.train.Optimizer"):
        copt.MultitaskOptimizerWrapper(object())


def test_clip_gradients_by_global_norm_ignores_all_zero_gradients():
    with tf.Graph().as_default():
        a, b = tf.get_variable("a", [2]), tf.get_variable("b", [1])
        pairs = [(tf.constant([3.0, 0.0]), a), (tf.constant([0.0]), b), (None, b)]
        clipped, norm = copt.clip_gradients_by_global_norm(pairs, clip_norm=1.5)
        assert [v for _, v in clipped] == [a, b, b] and clipped[2][0] is None
        with tf.Session() as sess:
            got_a, got_b, got_norm = sess.run([clipped[0][0], clipped[1][0], norm])
    np.testing.assert_allclose(got_a, [1.5, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(got_b, [0.0])
    assert got_norm == pytest.approx(3.0)


# -- MovingAverageOptimizer ------------------------------------------------------------------------
def test_moving_average_optimizer_and_its_swapping_saver(tmp_path):
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=[1.0, 2.0])
        opt = copt.MovingAverageOptimizer(tf.train.GradientDescentOptimizer(0.5),
                                       average_decay=0.5)
        with pytest.raises(RuntimeError, match="Must call apply_gradients or minimize"):
            opt.swapping_saver()
        step = opt.minimize(tf.reduce_sum(w * w))
        avg = opt._ema.average(w)
        saver = opt.swapping_saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)   # w: [0, 0]; average: 0.5 * [1, 2] + 0.5 * [0, 0]
            sess.run(step)   # w stays 0; average halves again
            np.testing.assert_allclose(sess.run([w, avg]), [[0.0, 0.0], [0.25, 0.5]])
            path = saver.save(sess, str(tmp_path / "model"))
    reader = tf.train.load_checkpoint(path)
    np.testing.assert_allclose(reader.get_tensor("w"), [0.25, 0.5])
    np.testing.assert_allclose(reader.get_tensor(avg.op.name), [0.0, 0.0])
    with tf.Graph().as_default():   # evaluation: a plain Saver loads the averages into w
        w = tf.get_variable("w", [2])
        with tf.Session() as sess:
            tf.train.Saver([w]).restore(sess, path)
            np.testing.assert_allclose(sess.run(w), [0.25, 0.5])


# -- resource variables: the same updates -------------------------------------------------------
ALL = {
    "LazyAdam": (lambda: copt.LazyAdamOptimizer(0.1), ["m", "v"]),
    "Nadam": (lambda: copt.NadamOptimizer(0.1), ["m", "v"]),
    "AdaMax": (lambda: copt.AdaMaxOptimizer(0.1), ["m", "v"]),
    "AdamW": (lambda: copt.AdamWOptimizer(0.01, 0.1), ["m", "v"]),
    "MomentumW": (lambda: copt.MomentumWOptimizer(0.01, 0.1, 0.9), ["momentum"]),
    "AddSign": (lambda: copt.AddSignOptimizer(0.1), ["m"]),
    "PowerSign": (lambda: copt.PowerSignOptimizer(0.1), ["m"]),
    "LARS": (lambda: copt.LARSOptimizer(0.1, eeta=0.5), ["momentum"]),
    "RegAdagrad": (lambda: copt.RegAdagradOptimizer(0.1), ["accumulator"]),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", sorted(ALL))
def test_resource_variables_update_as_ref_variables(name, sparse):
    make, slots = ALL[name]
    ref, _ = _run(make, sparse, slots, steps=2)
    res, _ = _run(make, sparse, slots, steps=2, use_resource=True)
    _check(res, ref)
    moved = ref[-1][0] != INIT
    assert moved.any() and (sparse or moved.all())


# -- TF1's errors ----------------------------------------------------------------------------------
def test_lars_errors():
    with pytest.raises(ValueError, match="momentum should be positive: -0.1"):
        copt.LARSOptimizer(0.1, momentum=-0.1)
    with pytest.raises(ValueError, match="weight_decay should be positive: -1"):
        copt.LARSOptimizer(0.1, weight_decay=-1)


def test_reg_adagrad_error():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        copt.RegAdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_sign_decay_needs_the_global_step():
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=[1.0])
        opt = copt.AddSignOptimizer(sign_decay_fn=copt.get_cosine_decay_fn(10))
        with pytest.raises(ValueError, match="global_step is required for cosine_decay"):
            opt.minimize(tf.reduce_sum(w))


# -- on a ps ---------------------------------------------------------------------------------------
def test_lazy_adam_sparse_on_a_ps_matches_the_local_run():
    local, _ = _run(lambda: copt.LazyAdamOptimizer(0.1), True, ["m", "v"])
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        worker = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    w = tf.get_variable("w", initializer=INIT)
                with tf.device("/job:worker/task:0"):
                    idx = tf.placeholder(tf.int32, [None])
                    vals = tf.placeholder(tf.float32, [None, 2])
                    opt = copt.LazyAdamOptimizer(0.1)
                    step = opt.apply_gradients(
                        [(tf.IndexedSlices(vals, idx, tf.constant([4, 2])), w)])
                m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
                assert m.op.device == v.op.device == "/job:ps/task:0"
                with tf.Session(worker.target) as sess:
                    sess.run(tf.global_variables_initializer())
                    for t in range(3):
                        sess.run(step, {idx: SPARSE_GRADS[t][0], vals: SPARSE_GRADS[t][1]})
                        got = sess.run([w, m, v])
                        for a, b in zip(got, local[t]):
                            assert a.tobytes() == b.tobytes(), "step %d" % (t + 1)
        finally:
            worker.stop()
