"""tf.contrib.layers: TF1 1.15's names, defaults and collections, and a small convnet trained like
its hand-built TensorFlow equivalent.

tests/fixtures/tf_contrib_layers/expected.npz holds what TensorFlow 2.21 computed for
``reference()`` of tests/fixtures/tf_contrib_layers/make.py (TF 2.21 has no tf.contrib: the
reference builds from tf.compat.v1 ops what contrib.layers builds); the names and defaults
checked here are those of TF 1.15's contrib/layers sources and tests.
"""

import importlib.util
import math
import pathlib

import numpy as np
import pytest

import zps as tf

L = tf.contrib.layers
FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tf_contrib_layers"
TF_OUTPUTS = np.load(FIXTURE / "expected.npz")


def _make():
    spec = importlib.util.spec_from_file_location("tf_contrib_layers_make", FIXTURE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


def _names(values):
    return [v.op.name for v in values]


def _init_run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# -- the convnet -----------------------------------------------------------------------------------
def test_convnet_trains_as_its_tensorflow_equivalent():
    make = _make()
    d = make.data()
    bias = tf.constant_initializer(d["bias"])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2])
        labels = tf.placeholder(tf.int32, [None])
        net = L.conv2d(x, 4, [3, 3], weights_initializer=tf.constant_initializer(d["conv"]),
                       biases_initializer=bias,
                       weights_regularizer=L.l2_regularizer(make.WEIGHT_DECAY))
        net = L.flatten(L.max_pool2d(net, [2, 2]))
        net = L.fully_connected(net, 5, weights_initializer=tf.constant_initializer(d["fc"]),
                                normalizer_fn=L.batch_norm)
        net = L.dropout(net, is_training=False)
        logits = L.fully_connected(net, 3, activation_fn=None, scope="logits",
                                   weights_initializer=tf.constant_initializer(d["logits"]),
                                   biases_initializer=bias)
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits) + \
            tf.losses.get_regularization_loss()
        train = L.optimize_loss(loss, tf.train.get_or_create_global_step(), make.LEARNING_RATE,
                                "SGD", summaries=[])
        assert sorted(_names(tf.model_variables())) == sorted(
            k for k in TF_OUTPUTS.files if k != "losses")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run(train, {x: d["x"][i], labels: d["labels"][i]})
                      for i in range(make.STEPS)]
            values = {v.op.name: sess.run(v) for v in tf.model_variables()}
    np.testing.assert_allclose(losses, TF_OUTPUTS["losses"], rtol=1e-5)
    for name, value in values.items():
        np.testing.assert_allclose(value, TF_OUTPUTS[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_hand_built_reference_runs_the_same_on_zps():
    make = _make()
    d = make.data()
    with tf.Graph().as_default():
        x, labels, loss, train = make.reference(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train], {x: d["x"][i], labels: d["labels"][i]})[0]
                      for i in range(make.STEPS)]
    np.testing.assert_allclose(losses, TF_OUTPUTS["losses"], rtol=1e-5)


# -- names, scopes, reuse, collections ---------------------------------------------------------------
def test_fully_connected_names_defaults_and_collections():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = L.fully_connected(x, 4)
        y2 = L.fully_connected(y, 2, activation_fn=None)
        assert y.op.name == "fully_connected/Relu" and y2.op.name == "fully_connected_1/BiasAdd"
        names = ["fully_connected/weights", "fully_connected/biases",
                 "fully_connected_1/weights", "fully_connected_1/biases"]
        assert _names(tf.model_variables()) == names
        assert _names(tf.trainable_variables()) == names
        assert y.get_shape().as_list() == [None, 4]
        w, b = _init_run(tf.model_variables()[:2])
    limit = math.sqrt(6.0 / (3 + 4))   # xavier (uniform, fan_avg); zero biases
    assert np.all(np.abs(w) <= limit) and np.abs(w).max() > limit / 3 and not b.any()


def test_reuse_and_scopes_share_variables():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        a = L.fully_connected(x, 2, scope="fc")
        b = L.fully_connected(x, 2, scope="fc", reuse=True)
        with tf.variable_scope("tower", reuse=tf.AUTO_REUSE):
            L.conv2d(tf.zeros([1, 4, 4, 3]), 2, 3)
            L.conv2d(tf.zeros([1, 4, 4, 3]), 2, 3, scope="Conv")
        assert _names(tf.global_variables()) == ["fc/weights", "fc/biases", "tower/Conv/weights",
                                                 "tower/Conv/biases"]
        va, vb = _init_run([a, b], {x: np.ones((1, 3))})
    np.testing.assert_array_equal(va, vb)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="already exists"):
            L.fully_connected(tf.zeros([1, 3]), 2, scope="fc")
            L.fully_connected(tf.zeros([1, 3]), 2, scope="fc")


def test_regularization_losses_have_tf1_names_and_are_summed():
    with tf.Graph().as_default():
        x = tf.ones([2, 3])
        L.fully_connected(x, 2, weights_initializer=tf.ones_initializer(),
                          weights_regularizer=L.l2_regularizer(0.5),
                          biases_initializer=tf.constant_initializer(2.0),
                          biases_regularizer=L.l1_regularizer(0.25))
        L.conv2d(tf.ones([1, 3, 3, 1]), 1, 1, weights_initializer=tf.constant_initializer(3.0),
                 weights_regularizer=L.l1_l2_regularizer(1.0, 1.0))
        L.fully_connected(x, 2, scope="fully_connected", reuse=True,
                          weights_regularizer=L.l2_regularizer(0.5))   # reused: no new loss
        losses = tf.losses.get_regularization_losses()
        assert _names(losses) == ["fully_connected/kernel/Regularizer/l2_regularizer",
                                  "fully_connected/bias/Regularizer/l1_regularizer",
                                  "Conv/kernel/Regularizer/l1_l2_regularizer"]
        values, total = _init_run([losses, tf.losses.get_regularization_loss()])
    np.testing.assert_allclose(values, [0.5 * 6 / 2, 0.25 * 4, 3 + 9 / 2])
    np.testing.assert_allclose(total, sum(values))


def test_variables_and_outputs_collections():
    with tf.Graph().as_default():
        x = tf.ones([2, 3])
        y = L.fully_connected(x, 2, variables_collections=["mine"], outputs_collections="out")
        L.fully_connected(x, 2, variables_collections={"weights": ["w"], "biases": ["b"]})
        z = L.batch_norm(tf.ones([2, 2, 2, 3]), variables_collections={"moving_mean": ["mm"]},
                         outputs_collections=["out"])
        assert _names(tf.get_collection("mine")) == ["fully_connected/weights",
                                                     "fully_connected/biases"]
        assert _names(tf.get_collection("w")) == ["fully_connected_1/weights"]
        assert _names(tf.get_collection("b")) == ["fully_connected_1/biases"]
        assert _names(tf.get_collection("mm")) == ["BatchNorm/moving_mean"]
        assert tf.get_collection("out") == [y, z]


def test_pooling_flatten_dropout_and_one_hot():
    x = np.arange(2 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 1)
    with tf.Graph().as_default():
        mx, av = L.max_pool2d(x, [2, 2]), L.avg_pool2d(x, 3, stride=1)
        flat = L.flatten(mx)
        dropped, kept = L.dropout(x, 0.5, seed=1), L.dropout(x, 0.5, is_training=False)
        hot = L.one_hot_encoding([0, 2], 3)
        assert [t.op.name.split("/")[0] for t in (mx, av, flat, dropped, kept, hot)] == \
            ["MaxPool2D", "AvgPool2D", "Flatten", "Dropout", "Dropout_1", "OneHotEncoding"]
        values = _init_run([mx, av, flat, dropped, kept, hot])
    np.testing.assert_array_equal(values[0][..., 0], x[:, 1::2, 1::2, 0])
    np.testing.assert_allclose(values[1][0, 0, 0, 0], x[0, :3, :3].mean())
    assert values[2].shape == (2, 4)
    assert set(np.unique(values[3] / np.maximum(x, 1))) <= {0.0, 2.0}
    np.testing.assert_array_equal(values[4], x)
    np.testing.assert_array_equal(values[5], [[1, 0, 0], [0, 0, 1]])


def test_stack_and_repeat_scopes():
    with tf.Graph().as_default():
        x = tf.ones([2, 3])
        s = L.stack(x, L.fully_connected, [10, 20, 30])
        r = L.repeat(tf.ones([1, 5, 5, 3]), 3, L.conv2d, 4, [3, 3])
        c = L.stack(tf.ones([1, 5, 5, 3]), L.conv2d, [(4, [3, 3]), (2, [1, 1])], scope="convs")
        assert (s.op.name, r.op.name, c.op.name) == (
            "Stack/fully_connected_3/Relu", "Repeat/convolution2d_3/Relu", "convs/convs_2/Relu")
        assert s.get_shape().as_list() == [2, 30] and c.get_shape().as_list() == [1, 5, 5, 2]
        with pytest.raises(ValueError, match="stack_args"):
            L.stack(x, L.fully_connected, 10)


def test_embed_sequence():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.Graph().as_default():
        ids = tf.constant([[1, 3], [0, 0]])
        y = L.embed_sequence(ids, 4, 3, initializer=tf.constant_initializer(table),
                             regularizer=L.l2_regularizer(1.0))
        again = L.embed_sequence(ids, scope="EmbedSequence", reuse=True, unique=True)
        assert _names(tf.model_variables()) == ["EmbedSequence/embeddings"]
        assert _names(tf.losses.get_regularization_losses()) == [
            "EmbedSequence/embeddings/Regularizer/l2_regularizer"]
        assert again.get_shape().as_list() == [2, 2, 3]
        grad = tf.gradients(tf.reduce_sum(again), tf.model_variables())[0]
        got, got_again, grad = _init_run([y, again, tf.convert_to_tensor(grad)])
    np.testing.assert_array_equal(got, table[[[1, 3], [0, 0]]])
    np.testing.assert_array_equal(got_again, got)
    np.testing.assert_array_equal(grad[:, 0], [2, 1, 0, 1])
    with pytest.raises(ValueError, match="Must specify vocab size"):
        L.embed_sequence(ids, 4)


# -- batch_norm ------------------------------------------------------------------------------------
def test_batch_norm_defaults_match_tf_layers_with_contrib_settings():
    x = np.random.default_rng(2).standard_normal((4, 3, 3, 2)).astype(np.float32)
    with tf.Graph().as_default():
        y = L.batch_norm(x)
        reference = tf.layers.batch_normalization(x, momentum=0.999, scale=False, training=True)
        assert _names(tf.global_variables()) == [
            "BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance",
            "batch_normalization/beta", "batch_normalization/moving_mean",
            "batch_normalization/moving_variance"]
        assert _names(tf.model_variables()) == _names(tf.global_variables())[:3]
        assert [op.name for op in tf.get_collection(tf.GraphKeys.UPDATE_OPS)][:2] == [
            "BatchNorm/AssignMovingAvg", "BatchNorm/AssignMovingAvg_1"]
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            step = tf.group(y, reference)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            got = sess.run([y] + tf.global_variables()[:3])
            expected = sess.run([reference] + tf.global_variables()[3:])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_batch_norm_updates_in_place_and_in_inference():
    x = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
    with tf.Graph().as_default():
        y = L.batch_norm(x, decay=0.5, scale=True, updates_collections=None)
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
        inference = L.batch_norm(x, scope="BatchNorm", reuse=True, is_training=False)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(y)
            mean, variance = sess.run(tf.global_variables()[2:])
            out = sess.run(inference)
    np.testing.assert_allclose(mean, [1.0, 2.0])   # 0.5 * 0 + 0.5 * [2, 4]
    np.testing.assert_allclose(variance, [1.5, 4.5])   # Bessel-corrected batch variance [2, 8]
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(variance + 0.001), rtol=1e-5)


def test_batch_norm_with_a_training_tensor_and_a_custom_updates_collection():
    x = np.array([[1.0], [3.0]], np.float32)
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        y = L.batch_norm(x, decay=0.0, is_training=training, updates_collections="bn_updates")
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
        updates = tf.get_collection("bn_updates")
        assert len(updates) == 2
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            inference = sess.run([y] + updates, {training: False})[0]
            trained = sess.run([y] + updates, {training: True})[0]
            moving = sess.run(tf.global_variables()[1:])
    np.testing.assert_allclose(inference, x / np.sqrt(1.001), rtol=1e-6)
    np.testing.assert_allclose(trained, [[-1], [1]], rtol=1e-3)
    np.testing.assert_allclose(moving, [[2.0], [2.0]])


# -- initializers ----------------------------------------------------------------------------------
def test_initializers_follow_contrib_formulas():
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        uniform = L.xavier_initializer()([200, 300])
        conv = L.xavier_initializer_conv2d(uniform=False)([3, 3, 20, 30])
        he = L.variance_scaling_initializer()([400, 100])
        fan_out = L.variance_scaling_initializer(1.0, "FAN_OUT", uniform=True)([100, 50])
        u, c, h, f = _init_run([uniform, conv, he, fan_out])
    assert np.abs(u).max() <= math.sqrt(6.0 / 500) and np.abs(u).max() > 0.95 * math.sqrt(6 / 500)
    conv_std = math.sqrt(1.3 / ((9 * 20 + 9 * 30) / 2.0))   # contrib: 1.3, not core's 1/0.88^2
    assert np.abs(c).max() <= 2 * conv_std and abs(c.std() / conv_std - 0.88) < 0.05
    he_std = math.sqrt(1.3 * 2.0 / 400)
    assert np.abs(h).max() <= 2 * he_std and abs(h.std() / he_std - 0.88) < 0.05
    assert np.abs(f).max() <= math.sqrt(3.0 / 50)


def test_initializer_mistakes():
    with pytest.raises(TypeError, match="Unknown mode"):
        L.variance_scaling_initializer(mode="fan_in")
    with pytest.raises(TypeError, match="non-floating"):
        L.xavier_initializer(dtype=tf.int32)


# -- regularizers ----------------------------------------------------------------------------------
def test_regularizers():
    w = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    with tf.Graph().as_default():
        weights = tf.constant(w)
        l1, l2 = L.l1_regularizer(0.1)(weights), L.l2_regularizer(0.2)(weights)
        both = L.l1_l2_regularizer(0.1, 0.2)(weights)
        only_l1 = L.l1_l2_regularizer(0.1, 0.0)(weights)
        summed = L.sum_regularizer([L.l1_regularizer(0.1), None, L.l2_regularizer(0.0)])(weights)
        assert (l1.op.name, l2.op.name, both.op.name, only_l1.op.name, summed.op.name) == (
            "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "l1_l2_regularizer_1",
            "sum_regularizer")
        assert L.l2_regularizer(0.0)(weights) is None
        assert L.sum_regularizer([None]) is None
        penalty = L.apply_regularization(L.l1_regularizer(1.0), [weights, weights * 2])
        assert penalty.op.name == "get_regularization_penalty"
        assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [penalty]
        values = _init_run([l1, l2, both, only_l1, summed, penalty])
    a, s = np.abs(w).sum(), (w ** 2).sum() / 2
    np.testing.assert_allclose(values, [0.1 * a, 0.2 * s, 0.1 * a + 0.2 * s, 0.1 * a, 0.1 * a,
                                        3 * a], rtol=1e-6)


@pytest.mark.parametrize("build, error, message", [
    (lambda: L.l1_regularizer(1), ValueError, "cannot be an integer"),
    (lambda: L.l2_regularizer(-0.1), ValueError, "less than 0"),
    (lambda: L.l1_l2_regularizer(1, 0.5), ValueError, "scale_l1 cannot be an integer"),
    (lambda: L.apply_regularization(L.l1_regularizer(0.1)), ValueError, "No weights"),
    (lambda: L.fully_connected(tf.ones([1, 2]), 2.0), ValueError, "num_outputs should be int"),
    (lambda: L.conv2d(tf.ones([1, 2, 2, 1]), 1, 1, data_format="NCHW"), ValueError, "NHWC"),
    (lambda: L.conv2d(tf.ones([2, 2]), 1, 1), ValueError, "rank 4"),
    (lambda: L.batch_norm(tf.ones([2, 2]), data_format="NCW"), ValueError, "NCHW or NHWC"),
    (lambda: L.batch_norm(tf.ones([2, 2]), zero_debias_moving_mean=True), NotImplementedError,
     "zero_debias_moving_mean"),
])
def test_mistakes_are_reported(build, error, message):
    with tf.Graph().as_default():
        with pytest.raises(error, match=message):
            build()


# -- optimize_loss ---------------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer", [
    "SGD", tf.train.GradientDescentOptimizer, tf.train.GradientDescentOptimizer(0.25),
    lambda lr: tf.train.GradientDescentOptimizer(lr)])
def test_optimize_loss_takes_optimizers_by_name_class_instance_or_function(optimizer):
    with tf.Graph().as_default():
        w = tf.Variable([3.0, -4.0])
        step = tf.train.get_or_create_global_step()
        train = L.optimize_loss(tf.reduce_sum(tf.square(w)), step, 0.25, optimizer)
        assert {s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)} == {
            "OptimizeLoss/learning_rate_1", "OptimizeLoss/global_norm/gradient_norm",
            "OptimizeLoss/loss"}   # (learning_rate is the variable's name)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(train) == 25.0
            np.testing.assert_allclose(sess.run(w), [1.5, -2.0])
            assert sess.run(step) == 1


def test_optimize_loss_clips_gradients_and_runs_update_ops():
    with tf.Graph().as_default():
        w = tf.Variable([3.0, -4.0])
        counter = tf.Variable(0.0)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(counter, 1.0))
        train = L.optimize_loss(tf.reduce_sum(tf.square(w)), None, tf.constant(1.0), "SGD",
                                clip_gradients=5.0, summaries=["gradients", "gradient_norm"])
        assert len(tf.get_collection(tf.GraphKeys.SUMMARIES)) == 4
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            np.testing.assert_allclose(sess.run(w), [0.0, 0.0], atol=1e-6)   # |g| = 10 -> 5
            assert sess.run(counter) == 1.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(optimizer="Nope"), "Optimizer name should be one of"),
    (dict(optimizer="SGD", learning_rate=None), "Learning rate is None"),
    (dict(optimizer="SGD", learning_rate=1), "0d Tensor or float"),
    (dict(optimizer="SGD", learning_rate=-1.0), "Invalid learning_rate"),
    (dict(optimizer=lambda lr: None), "should return subclass of Optimizer"),
    (dict(optimizer="SGD", clip_gradients="big"), "Unknown type"),
])
def test_optimize_loss_mistakes(kwargs, message):
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        args = dict(learning_rate=0.1)
        args.update(kwargs)
        with pytest.raises(ValueError, match=message):
            L.optimize_loss(w * w, None, **args)
