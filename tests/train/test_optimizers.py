"""Optimizers: exact numbers against numpy (dense and sparse, two steps), slots and their names
and placement, the global step, gating, errors, and a small MLP that every optimizer trains."""

import importlib.util
import pathlib
import threading

import numpy as np
import pytest

import zps as tf
from tests.ops.test_training_ops import (
    ref_adagrad,
    ref_adam,
    ref_centered_rms_prop,
    ref_ftrl,
    ref_gradient_descent,
    ref_momentum,
    ref_rms_prop,
    ref_sparse,
    ref_sparse_adam,
)

R = np.random.default_rng(11)
TOL = dict(rtol=2e-5, atol=2e-6)


# Each optimizer: a factory, its slot names in kernel order with initial values, and one numpy
# step ``ref(w, slots, g, t, sparse_indices)`` -> [w, *slots].
def _dense_or_sparse(ref, **hyper):
    def step(arrays, g, t, indices):
        if indices is None:
            return ref(*arrays, g, **hyper)
        return ref_sparse(ref, arrays, indices, g, **hyper)
    return step


def _adam_step(arrays, g, t, indices):
    hyper = dict(lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, t=t)
    if indices is None:
        return ref_adam(*arrays, g, **hyper)
    return ref_sparse_adam(*arrays, indices, g, **hyper)


OPTIMIZERS = {
    "GradientDescent": (lambda: tf.train.GradientDescentOptimizer(0.1), [],
                        _dense_or_sparse(ref_gradient_descent, lr=0.1)),
    "Momentum": (lambda: tf.train.MomentumOptimizer(0.1, 0.9), [("momentum", 0.0)],
                 _dense_or_sparse(ref_momentum, lr=0.1, momentum=0.9)),
    "MomentumNesterov": (lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                         [("momentum", 0.0)],
                         _dense_or_sparse(ref_momentum, lr=0.1, momentum=0.9, use_nesterov=True)),
    "Adagrad": (lambda: tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.2),
                [("accumulator", 0.2)], _dense_or_sparse(ref_adagrad, lr=0.1)),
    "Adam": (lambda: tf.train.AdamOptimizer(0.01), [("m", 0.0), ("v", 0.0)], _adam_step),
    "RMSProp": (lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5),
                [("rms", 1.0), ("momentum", 0.0)],
                _dense_or_sparse(ref_rms_prop, lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-10)),
    "Ftrl": (lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                            l2_regularization_strength=0.05),
             [("accum", 0.1), ("linear", 0.0)],
             _dense_or_sparse(ref_ftrl, lr=0.1, l1=0.01, l2=0.05, lr_power=-0.5)),
    "FtrlShrinkage": (lambda: tf.train.FtrlOptimizer(0.1, learning_rate_power=-0.6,
                                                     initial_accumulator_value=0.3,
                                                     l1_regularization_strength=0.02,
                                                     l2_shrinkage_regularization_strength=0.1),
                      [("accum", 0.3), ("linear", 0.0)],
                      _dense_or_sparse(ref_ftrl, lr=0.1, l1=0.02, l2=0.0, lr_power=-0.6,
                                       l2_shrinkage=0.1)),
    "RMSPropCentered": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                          epsilon=1e-3, centered=True),
                        [("mg", 0.0), ("rms", 1.0), ("momentum", 0.0)],
                        _dense_or_sparse(ref_centered_rms_prop, lr=0.01, rho=0.8, momentum=0.5,
                                         epsilon=1e-3)),
}


def _run_minimize(name, sparse, steps=2):
    """Minimize a loss whose gradient depends on w; returns per-step values and the optimizer."""
    make, slots, _ = OPTIMIZERS[name]
    w0 = R.standard_normal((5, 3)).astype(np.float32)
    c = R.standard_normal((5, 3)).astype(np.float32)
    indices = np.array([3, 0, 3], np.int32)
    rows = R.standard_normal((3, 3)).astype(np.float32)
    with tf.Graph().as_default():
        w = tf.Variable(w0, name="w")
        if sparse:   # d/dw = IndexedSlices(rows, indices): row 3 twice
            loss = tf.reduce_sum(tf.gather(w, indices) * rows)
        else:        # d/dw = c * w
            loss = 0.5 * tf.reduce_sum(w * w * c)
        opt = make()
        global_step = tf.train.get_or_create_global_step()
        train_op = opt.minimize(loss, global_step=global_step)
        slot_vars = [opt.get_slot(w, s) for s, _ in slots]
        values = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op)
                values.append(sess.run([w] + slot_vars))
            final_step = sess.run(global_step)
        apply_types = {op.type for op in w.graph.get_operations() if "Apply" in op.type}
    return dict(w0=w0, c=c, indices=indices, rows=rows, values=values, opt=opt,
                final_step=final_step, apply_types=apply_types)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_two_steps_match_tf1_formulas(name, sparse):
    _, slots, ref = OPTIMIZERS[name]
    run = _run_minimize(name, sparse)
    expected = [run["w0"].astype(np.float64)] + [np.full((5, 3), v) for _, v in slots]
    for t, actual in enumerate(run["values"], 1):
        if sparse:
            expected = ref(expected, run["rows"].astype(np.float64), t, run["indices"])
        else:
            expected = ref(expected, run["c"] * expected[0], t, None)
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, **TOL)
    assert run["final_step"] == 2
    assert all(t.startswith("Sparse") == sparse for t in run["apply_types"]), run["apply_types"]


# -- slots: names, placement ------------------------------------------------------------------------
@pytest.mark.parametrize("name, slot_var_names", [
    ("Momentum", {"momentum": "w/Momentum"}),
    ("Adagrad", {"accumulator": "w/Adagrad"}),
    ("Adam", {"m": "w/Adam", "v": "w/Adam_1"}),
    ("RMSProp", {"rms": "w/RMSProp", "momentum": "w/RMSProp_1"}),
    ("RMSPropCentered", {"rms": "w/RMSProp", "mg": "w/RMSProp_1", "momentum": "w/RMSProp_2"}),
    ("Ftrl", {"accum": "w/Ftrl", "linear": "w/Ftrl_1"}),
])
def test_slot_names_collections_and_colocation(name, slot_var_names):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:1"):
            w = tf.Variable(np.ones((2, 2), np.float32), name="w")
        with tf.device("/job:worker/task:0"), tf.name_scope("train"):
            opt = OPTIMIZERS[name][0]()
            train_op = opt.minimize(tf.reduce_sum(w * w))
        assert opt.get_slot_names() == sorted(slot_var_names)
        for slot_name, var_name in slot_var_names.items():
            slot = opt.get_slot(w, slot_name)
            assert slot.op.name == var_name
            assert slot.op.colocation_groups() == [b"loc:@w"]
            assert slot.device == w.device and "/job:ps/task:1" in w.device
            assert slot.initializer.device == w.device
            assert slot in tf.global_variables() and slot not in tf.trainable_variables()
        updates = [op for op in w.graph.get_operations() if op.type.startswith("Apply")]
        assert len(updates) == 1
        assert updates[0].colocation_groups() == [b"loc:@w"] and updates[0].device == w.device
        assert updates[0].name.startswith("train/%s/update_w/" % opt.get_name())
        assert train_op.name == "train/" + opt.get_name()
        assert opt.get_slot(w, "no_such_slot") is None


def _device(name, placed):
    # Local sessions cannot run remote devices: placement is checked on graphs that are not run.
    return tf.device(name if placed else None)


@pytest.mark.parametrize("placed", [True, False], ids=["placement", "values"])
def test_adam_beta_powers_live_with_the_first_variable_by_name(placed):
    with tf.Graph().as_default():
        with _device("/job:ps/task:1", placed):
            b = tf.Variable(np.ones(2, np.float32), name="b")
        with _device("/job:ps/task:0", placed):
            a = tf.Variable(np.ones(2, np.float32), name="a")
        opt = tf.train.AdamOptimizer(0.1, beta1=0.8, beta2=0.7)
        train_op = opt.minimize(tf.reduce_sum(a * b))
        beta1_power, beta2_power = opt._get_beta_accumulators()
        for power in (beta1_power, beta2_power):
            assert power.op.colocation_groups() == [b"loc:@a"]
            assert power.device == a.device
            assert not power.trainable
        assert [v.op.name for v in opt.variables()] == [
            "a/Adam", "a/Adam_1", "b/Adam", "b/Adam_1", "beta1_power", "beta2_power"]
        if placed:
            assert a.device == "/job:ps/task:0"
            return
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([beta1_power, beta2_power]) == pytest.approx([0.8, 0.7])
            sess.run(train_op)
            sess.run(train_op)
            assert sess.run([beta1_power, beta2_power]) == pytest.approx([0.8 ** 3, 0.7 ** 3])


# -- global step, None gradients, gating -------------------------------------------------------------
@pytest.mark.parametrize("placed", [True, False], ids=["placement", "values"])
def test_global_step_increments_once_per_apply_and_lives_with_itself(placed):
    with tf.Graph().as_default():
        with _device("/job:ps/task:0", placed):
            global_step = tf.train.get_or_create_global_step()
        ws = [tf.Variable(np.ones(3, np.float32), name="w%d" % i) for i in range(3)]
        loss = tf.add_n([tf.reduce_sum(w * w) for w in ws])
        train_op = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=global_step)
        assert train_op.type == "AssignAdd" and train_op.name == "Momentum"
        assert train_op.colocation_groups() == [b"loc:@global_step"]
        assert train_op.device == global_step.device
        assert train_op in tf.get_collection(tf.GraphKeys.TRAIN_OP)
        if placed:
            assert global_step.device == "/job:ps/task:0"
            return
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for expected in (1, 2, 3):
                sess.run(train_op)
                assert tf.train.global_step(sess, global_step) == expected


def test_none_gradients_are_skipped():
    with tf.Graph().as_default():
        used = tf.Variable([1.0, 2.0], name="used")
        unused = tf.Variable([5.0], name="unused")
        opt = tf.train.MomentumOptimizer(0.5, 0.0)
        grads_and_vars = opt.compute_gradients(tf.reduce_sum(used * used))
        assert [v for _, v in grads_and_vars] == [used, unused]
        assert grads_and_vars[1][0] is None
        train_op = opt.apply_gradients(grads_and_vars)
        assert opt.get_slot(unused, "momentum") is None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            np.testing.assert_allclose(sess.run(used), [0.0, 0.0])
            np.testing.assert_allclose(sess.run(unused), [5.0])


@pytest.mark.parametrize("gate", [tf.train.Optimizer.GATE_NONE, tf.train.Optimizer.GATE_OP,
                                  tf.train.Optimizer.GATE_GRAPH])
def test_updates_use_the_gradients_of_the_old_weights(gate):
    # var_list lists the top layer first: its in-place update must not leak into the gradient
    # of the bottom layer, which reads w2.
    x = R.standard_normal((4, 3)).astype(np.float32)
    w1_0 = R.standard_normal((3, 2)).astype(np.float32)
    w2_0 = R.standard_normal((2, 1)).astype(np.float32)
    with tf.Graph().as_default():
        w1 = tf.Variable(w1_0)
        w2 = tf.Variable(w2_0)
        y = tf.matmul(tf.matmul(tf.constant(x), w1), w2)
        opt = tf.train.GradientDescentOptimizer(0.1)
        train_op = opt.minimize(tf.reduce_sum(y), var_list=[w2, w1], gate_gradients=gate)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            got = sess.run([w1, w2])
    g1 = x.sum(0)[:, None] * w2_0.T
    g2 = (x @ w1_0).sum(0)[:, None]
    if gate != tf.train.Optimizer.GATE_NONE:  # GATE_NONE may race, as in TF1
        np.testing.assert_allclose(got[0], w1_0 - 0.1 * g1, **TOL)
    np.testing.assert_allclose(got[1], w2_0 - 0.1 * g2, **TOL)


def test_apply_gradients_with_explicit_indexed_slices_and_tensor_hyperparameters():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((4, 2), np.float32), name="w")
        lr = tf.placeholder(tf.float32, [], name="lr")
        grad = tf.IndexedSlices(tf.constant([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]),
                                tf.constant([1, 3, 1]), tf.constant([4, 2]))
        train_op = tf.train.GradientDescentOptimizer(lambda: lr).apply_gradients([(grad, w)])
        with tf.Session() as sess:
            sess.run(w.initializer)
            sess.run(train_op, {lr: 0.5})
            sess.run(train_op, {lr: 0.25})
            np.testing.assert_allclose(sess.run(w), [[0, 0], [-3, -3], [0, 0], [-1.5, -1.5]])


def test_float64_variables_get_cast_hyperparameters():
    with tf.Graph().as_default():
        w = tf.Variable(np.array([1.0, -1.0]), name="w")   # float64
        train_op = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w * w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            np.testing.assert_allclose(sess.run(w), [0.9, -0.9], rtol=1e-6)
            assert sess.run(w).dtype == np.float64


def test_use_locking_updates_are_exact_under_concurrency():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros(20_000, np.float32), name="w")
        opt = tf.train.MomentumOptimizer(1.0, 0.0, use_locking=True)
        train_op = opt.apply_gradients([(tf.ones([20_000]), w)])
        update = [op for op in w.graph.get_operations() if op.type == "ApplyMomentum"][0]
        assert update.get_attr("use_locking") is True
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())

            def work():
                for _ in range(20):
                    sess.run(train_op)
            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            np.testing.assert_array_equal(sess.run(w), np.full(20_000, -80.0, np.float32))


# -- errors ---------------------------------------------------------------------------------------------
def test_errors_say_what_is_wrong():
    with tf.Graph().as_default():
        w = tf.Variable([1.0], name="w")
        opt = tf.train.GradientDescentOptimizer(0.1)
        with pytest.raises(ValueError, match="No gradients provided for any variable, check your "
                                             "graph"):
            opt.minimize(tf.constant(3.0) * 2.0)
        with pytest.raises(ValueError, match="No variables provided"):
            opt.apply_gradients([])
        with pytest.raises(ValueError, match=r"No gradients provided for any variable: \["):
            opt.apply_gradients([(None, w)])
        with pytest.raises(ValueError, match="Invalid type int32 for"):
            opt.compute_gradients(tf.constant(3))
        with pytest.raises(ValueError, match="gate_gradients must be one of"):
            opt.compute_gradients(tf.reduce_sum(w * w), gate_gradients=7)
        with pytest.raises(NotImplementedError, match="Trying to optimize unsupported type"):
            opt.minimize(tf.reduce_sum(w * w), var_list=[w.value()])  # a tensor: not applied
        with pytest.raises(TypeError, match="Gradient must be convertible to a Tensor"):
            opt.apply_gradients([(object(), w)])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to optimize"):
            tf.train.AdamOptimizer().minimize(tf.constant(1.0) * 2.0)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")
    for kwargs, message in ((dict(learning_rate_power=0.5), "learning_rate_power 0.5"),
                            (dict(initial_accumulator_value=-1.0), "initial_accumulator_value"),
                            (dict(l1_regularization_strength=-0.1), "l1_regularization_strength"),
                            (dict(l2_shrinkage_regularization_strength=-1.0), "l2_shrinkage")):
        with pytest.raises(ValueError, match=message):
            tf.train.FtrlOptimizer(0.1, **kwargs)
    with tf.Graph().as_default():
        w = tf.Variable([1.0], name="w")
        lr = tf.placeholder(tf.float32, [])
        train = tf.train.FtrlOptimizer(lr).minimize(tf.reduce_sum(w * w))
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="lr must be positive, got -0.1"):
            sess.run(tf.global_variables_initializer())
            sess.run(train, {lr: -0.1})


def test_ftrl_matches_tensorflow_step_for_step():
    # 50 steps of FtrlOptimizer(0.1, ...) on a dense variable and, through a gather with a
    # repeated id, the rows of another; the numbers TensorFlow 2.21's tf.compat.v1 printed for
    # the same program.
    tf_values = {
        "l1_l2": ([2.0192437, -0.727383, 1.1669793, 3.5803535],
                  [0.859282, 0.90114385, 0.2, 0.3, 0.4, 0.5, 0.9986074, 0.99960804, 0.8, 0.9,
                   0.854686, 0.90796775]),
        "beta": ([1.9417293, -0.6877884, 1.1475811, 3.3923004],
                 [0.8322793, 0.8711329, 0.2, 0.3, 0.4, 0.5, 0.992085, 0.99412084, 0.8, 0.9,
                  0.8273206, 0.86120915]),
    }
    kwargs = {"l1_l2": dict(l1_regularization_strength=0.01, l2_regularization_strength=0.1),
              "beta": dict(beta=0.3, l2_regularization_strength=0.05)}
    for case, (w_tf, emb_tf) in tf_values.items():
        with tf.Graph().as_default():
            w = tf.Variable([1.0, -2.0, 0.01, 5.0], name="w")
            emb = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2) / 10, name="emb")
            rows = tf.gather(emb, [0, 3, 3, 5])
            loss = tf.reduce_sum(tf.square(w - 3.0)) + tf.reduce_sum(tf.square(rows - 1.0))
            step = tf.train.FtrlOptimizer(0.1, **kwargs[case]).minimize(loss)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(50):
                    sess.run(step)
                np.testing.assert_allclose(sess.run(w), w_tf, rtol=2e-6, err_msg=case)
                np.testing.assert_allclose(sess.run(emb).ravel(), emb_tf, rtol=2e-6,
                                           err_msg=case)


def test_optimizer_is_reusable_and_slots_are_created_once():
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        opt.minimize(tf.reduce_sum(w * w))
        slot = opt.get_slot(w, "momentum")
        opt.minimize(tf.reduce_sum(w))
        assert opt.get_slot(w, "momentum") is slot
        assert [v.op.name for v in opt.variables()] == ["w/Momentum"]


# -- a small MLP trains with every optimizer --------------------------------------------------------
def _xor_blobs(n=400):
    rng = np.random.default_rng(5)
    centers = np.array([[-1, -1], [1, 1], [-1, 1], [1, -1]], np.float32)
    labels = np.array([0, 0, 1, 1])
    which = rng.integers(0, 4, n)
    x = centers[which] + 0.25 * rng.standard_normal((n, 2)).astype(np.float32)
    return x.astype(np.float32), labels[which].astype(np.int32)


MLP_OPTIMIZERS = {
    "GradientDescent": lambda: tf.train.GradientDescentOptimizer(0.5),
    "Momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    "MomentumNesterov": lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "Adagrad": lambda: tf.train.AdagradOptimizer(0.3),
    "Adam": lambda: tf.train.AdamOptimizer(0.05),
    "RMSProp": lambda: tf.train.RMSPropOptimizer(0.01),
    "RMSPropCentered": lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
    "Ftrl": lambda: tf.train.FtrlOptimizer(0.5, l2_regularization_strength=0.001),
}


@pytest.mark.parametrize("name", sorted(MLP_OPTIMIZERS))
def test_mlp_reaches_97_percent_on_xor_blobs(name):
    x, y = _xor_blobs()
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        xs = tf.placeholder(tf.float32, [None, 2])
        ys = tf.placeholder(tf.int32, [None])
        w1 = tf.Variable(rng.standard_normal((2, 16)).astype(np.float32) * 0.5, name="w1")
        b1 = tf.Variable(np.zeros(16, np.float32), name="b1")
        w2 = tf.Variable(rng.standard_normal((16, 2)).astype(np.float32) * 0.5, name="w2")
        b2 = tf.Variable(np.zeros(2, np.float32), name="b2")
        logits = tf.matmul(tf.tanh(tf.matmul(xs, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys,
                                                                             logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = MLP_OPTIMIZERS[name]().minimize(loss, global_step=global_step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {xs: x, ys: y})
            for _ in range(300):
                sess.run(train_op, {xs: x, ys: y})
            last, out = sess.run([loss, logits], {xs: x, ys: y})
            assert sess.run(global_step) == 300
    accuracy = np.mean(out.argmax(1) == y)
    assert last < first
    assert accuracy >= 0.97, (name, accuracy, first, last)


# -- Adadelta, AdagradDA and the proximal optimizers against TensorFlow --------------------------
def _load_fixture(name):
    spec = importlib.util.spec_from_file_location(
        "make_" + name, pathlib.Path(__file__).resolve().parents[1] / "fixtures" / name / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, np.load(pathlib.Path(module.HERE) / "expected.npz")


TF_OPTIMIZERS, TF_OPTIMIZER_VALUES = _load_fixture("tf_optimizers")


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", sorted(TF_OPTIMIZERS.CASES))
def test_three_steps_match_tensorflow(name, sparse):
    # The variable and its slots after each of three steps of tests/fixtures/tf_optimizers's
    # program, against what TensorFlow computed for it (sparse: the update ops are Sparse*).
    got = TF_OPTIMIZERS.train(tf, TF_OPTIMIZERS.CASES[name], sparse)
    expected = TF_OPTIMIZER_VALUES["%s_%s" % (name, "sparse" if sparse else "dense")]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make, slots, apply_type", [
    (lambda: tf.train.AdadeltaOptimizer(), {"accum": "w/Adadelta", "accum_update": "w/Adadelta_1"},
     "ApplyAdadelta"),
    (lambda: tf.train.ProximalAdagradOptimizer(0.1), {"accumulator": "w/ProximalAdagrad"},
     "ApplyProximalAdagrad"),
    (lambda: tf.train.ProximalGradientDescentOptimizer(0.1), {}, "ApplyProximalGradientDescent"),
    (lambda: tf.train.AdagradDAOptimizer(0.1, tf.train.get_or_create_global_step()),
     {"gradient_accumulator": "w/AdagradDA", "gradient_squared_accumulator": "w/AdagradDA_1"},
     "ApplyAdagradDA"),
], ids=["Adadelta", "ProximalAdagrad", "ProximalGradientDescent", "AdagradDA"])
def test_new_optimizers_slot_names_and_update_ops(make, slots, apply_type):
    with tf.Graph().as_default():
        w = tf.Variable(np.ones((2, 2), np.float32), name="w")
        emb = tf.Variable(np.ones((4, 2), np.float32), name="emb")
        opt = make()
        opt.minimize(tf.reduce_sum(w * w) + tf.reduce_sum(tf.gather(emb, [1, 1])))
        assert opt.get_slot_names() == sorted(slots)
        assert {s: opt.get_slot(w, s).op.name for s in slots} == slots
        types = sorted(op.type for op in w.graph.get_operations() if "Apply" in op.type)
        assert types == [apply_type, "Sparse" + apply_type]
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="initial_gradient_squared_accumulator_value must be "
                                         "positive: -1"):
        tf.train.AdagradDAOptimizer(0.1, 0, initial_gradient_squared_accumulator_value=-1)
