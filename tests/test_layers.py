"""tf.layers: outputs against TensorFlow's for the same program, variable names, reuse,
regularizers, dropout and batch normalization.

tests/fixtures/tf_layers.npz holds what TensorFlow 2.21's tf.compat.v1.layers (with tf_keras)
computed for the program in _program() below; tests/fixtures/tf_batch_norm/expected.npz what it
computed for the batch-normalized network of tests/fixtures/tf_batch_norm/make.py (trained for three
steps).
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import zps as tf

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
TF_OUTPUTS = np.load(FIXTURES / "tf_layers.npz")


def _program():
    x = np.random.default_rng(3).standard_normal((2, 5, 5, 3)).astype(np.float32)
    xi = tf.constant(x)
    c = tf.layers.conv2d(xi, 4, 3, strides=(1, 2), padding="same", activation=tf.nn.relu,
                         kernel_initializer=tf.constant_initializer(
                             np.linspace(-1, 1, 108).reshape(3, 3, 3, 4)),
                         bias_initializer=tf.constant_initializer(0.1))
    p = tf.layers.max_pooling2d(c, 2, 2, padding="same")
    a = tf.layers.average_pooling2d(c, (2, 1), (1, 1))
    f = tf.layers.flatten(p)
    d = tf.layers.dense(f, 3, kernel_initializer=tf.constant_initializer(
        np.linspace(-0.5, 0.5, f.get_shape().as_list()[1] * 3).reshape(-1, 3)))
    d3 = tf.layers.dense(tf.constant(x[:, :, :, :2].reshape(2, 25, 2)), 2, use_bias=False,
                         kernel_initializer=tf.constant_initializer([[1.0, 2.0], [3.0, -1.0]]),
                         name="seq")
    return [c, p, a, f, d, d3]


def test_layers_compute_what_tensorflow_computes():
    with tf.Graph().as_default():
        outputs = _program()
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "conv2d/bias", "conv2d/kernel", "dense/bias", "dense/kernel", "seq/kernel"]
        assert [o.get_shape().as_list() for o in outputs] == [
            [2, 5, 3, 4], [2, 3, 2, 4], [2, 4, 3, 4], [2, 24], [2, 3], [2, 25, 2]]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(outputs)
    for got, name in zip(values, TF_OUTPUTS.files):
        np.testing.assert_allclose(got, TF_OUTPUTS[name], rtol=1e-6, atol=1e-6)


def test_names_are_unique_and_reuse_shares_variables():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        h = tf.layers.dense(x, 4, activation=tf.nn.relu)
        tf.layers.dense(h, 2)
        with tf.variable_scope("tower"):
            shared = tf.layers.dense(x, 4, name="fc")
        with tf.variable_scope("tower", reuse=True):
            again = tf.layers.dense(x, 4, name="fc")
        names = [v.op.name for v in tf.trainable_variables()]
        assert names == ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                         "tower/fc/kernel", "tower/fc/bias"]
        assert h.op.type == "Relu" and h.op.name.startswith("dense/")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b = sess.run([shared, again], {x: np.ones((2, 3), np.float32)})
        np.testing.assert_array_equal(a, b)


def test_regularizers_land_in_the_regularization_losses():
    with tf.Graph().as_default():
        tf.layers.dense(tf.ones([2, 3]), 2, kernel_initializer=tf.ones_initializer(),
                        kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w),
                        activity_regularizer=lambda y: tf.reduce_mean(y))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(tf.losses.get_regularization_losses())
    # 0.5 * 6 ones; the outputs' mean (3) per example (TF1's Layer divides by the batch, 2),
    # as TensorFlow 2.21 (tf_keras) computes
    assert sorted(values) == [1.5, 3.0]


def test_dropout_only_while_training():
    x = np.ones((200, 50), np.float32)
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        fixed = tf.layers.dropout(x, rate=0.4, training=False)
        switched = tf.layers.dropout(x, rate=0.4, training=training)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(fixed), x)
            np.testing.assert_array_equal(sess.run(switched, {training: False}), x)
            out = sess.run(switched, {training: True})
    kept = out != 0
    assert 0.55 < kept.mean() < 0.65
    np.testing.assert_allclose(out[kept], 1 / 0.6, rtol=1e-6)


def test_bad_inputs_say_what_is_wrong():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
            tf.layers.dense(tf.ones([3]), 2)
        with pytest.raises(ValueError, match="last dimension of the inputs to `Dense` should be "
                                             "defined"):
            tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)
        with pytest.raises(TypeError, match="floating-point inputs, got int32"):
            tf.layers.dense(tf.ones([2, 2], tf.int32), 2)
        with pytest.raises(ValueError, match="expected ndim=4"):
            tf.layers.conv2d(tf.ones([2, 3, 3]), 2, 1)
        with pytest.raises(ValueError, match="channels_last"):
            tf.layers.conv2d(tf.ones([1, 3, 3, 2]), 2, 1, data_format="channels_first")
        with pytest.raises(ValueError, match="padding must be 'valid' or 'same'"):
            tf.layers.max_pooling2d(tf.ones([1, 4, 4, 1]), 2, 2, padding="full")
        with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
            tf.layers.dropout(tf.ones([2]), rate=1.0)


@pytest.mark.parametrize("shape, static", [([None, 2, 3], [None, 6]), ([4, 2, 3], [4, 6]),
                                           ([None, None, 3], [None, None]), (None, None)])
def test_flatten_keeps_the_batch_whatever_is_known_statically(shape, static):
    x = np.arange(24.0, dtype=np.float32).reshape(4, 2, 3)
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, shape)
        flat = tf.layers.flatten(ph)
        assert flat.get_shape().as_list() == static if static else flat.get_shape().ndims == 2
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(flat, {ph: x}), x.reshape(4, 6))


# -- batch normalization -------------------------------------------------------------------------
def _batch_norm_program():
    spec = importlib.util.spec_from_file_location("tf_batch_norm_make",
                                                  FIXTURES / "tf_batch_norm" / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


TF_BATCH_NORM = np.load(FIXTURES / "tf_batch_norm" / "expected.npz")
_BN_VARIABLES = [
    "batch_normalization/gamma", "batch_normalization/beta", "batch_normalization/moving_mean",
    "batch_normalization/moving_variance", "bn_nchw/gamma", "bn_nchw/beta", "bn_nchw/moving_mean",
    "bn_nchw/moving_variance", "dense/kernel", "dense/bias", "batch_normalization_1/gamma",
    "batch_normalization_1/beta", "batch_normalization_1/moving_mean",
    "batch_normalization_1/moving_variance", "dense_1/kernel", "dense_1/bias"]


@pytest.mark.parametrize("python_bool", [False, True], ids=["bool_tensor", "python_bool"])
def test_batch_norm_trains_as_tensorflow_does(python_bool):
    # Fused NHWC, fused NCHW (axis=1) and 2-D layers, three steps of gradient descent with the
    # update ops as control dependencies: losses, every variable, and the inference outputs.
    with tf.Graph().as_default():
        got = _batch_norm_program().run_program(tf, tf.Session, python_bool=python_bool)
    assert got["names"] == _BN_VARIABLES
    np.testing.assert_allclose(got["losses"], TF_BATCH_NORM["losses"], rtol=1e-5)
    for name, value in zip(got["names"], got["variables"]):
        np.testing.assert_allclose(value, TF_BATCH_NORM["var:" + name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    for i, value in enumerate(got["outputs"] or []):
        np.testing.assert_allclose(value, TF_BATCH_NORM["output_%d" % i], rtol=1e-5, atol=1e-5)


def test_batch_norm_variables_collections_and_update_ops():
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        _batch_norm_program().program(tf, training)
        assert [v.op.name for v in tf.global_variables()] == _BN_VARIABLES
        assert [v.op.name for v in tf.trainable_variables()] == [
            n for n in _BN_VARIABLES if not n.split("/")[1].startswith("moving")]
        assert tf.moving_average_variables() == [] and tf.model_variables() == []
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        # TensorFlow 2.21's names (with a Python bool; a bool tensor gives its cond's Merge ops).
        assert [op.name for op in updates] == [
            "batch_normalization/AssignMovingAvg", "batch_normalization/AssignMovingAvg_1",
            "bn_nchw/AssignMovingAvg", "bn_nchw/AssignMovingAvg_1",
            "batch_normalization_1/AssignMovingAvg", "batch_normalization_1/AssignMovingAvg_1"]
        assert all(isinstance(op, tf.Operation) and op.type == "AssignSub" for op in updates)
        fused = tf.get_default_graph().get_operation_by_name("batch_normalization/FusedBatchNormV3")
        assert fused.type == "FusedBatchNormV3"


def test_batch_norm_inference_uses_and_keeps_the_moving_statistics():
    x = np.random.default_rng(5).standard_normal((6, 3)).astype(np.float32) * 3 + 2
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        inp = tf.placeholder(tf.float32, [None, 3])
        y = tf.layers.batch_normalization(inp, training=training, momentum=0.5,
                                          moving_mean_initializer=tf.constant_initializer(1.0))
        fixed = tf.layers.batch_normalization(inp, training=False)
        tf.layers.batch_normalization(tf.reshape(inp, [-1, 1, 2, 3]), training=training)
        assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 4   # none from `fixed`
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        stats = [v for v in tf.global_variables() if "moving" in v.op.name]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(stats)
            out, fixed_out, _ = sess.run([y, fixed, updates], {inp: x, training: False})
            np.testing.assert_allclose(out, (x - 1.0) / np.sqrt(1.0 + 1e-3), rtol=1e-6)
            np.testing.assert_allclose(fixed_out, x / np.sqrt(1.0 + 1e-3), rtol=1e-6)
            for a, b in zip(before, sess.run(stats)):
                np.testing.assert_array_equal(a, b)
            out, _ = sess.run([y, updates], {inp: x, training: True})
            after = sess.run(stats)
    np.testing.assert_allclose(out, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(after[0], 0.5 * 1.0 + 0.5 * x.mean(0), rtol=1e-6)
    np.testing.assert_allclose(after[1], 0.5 * 1.0 + 0.5 * x.var(0), rtol=1e-5)   # biased
    np.testing.assert_array_equal(after[3], [1.0, 1.0, 1.0])   # `fixed` has no update ops
    # The fused (4-D) layer's moving variance follows the Bessel-corrected batch variance.
    np.testing.assert_allclose(after[5], 0.99 + 0.01 * x.var(0, ddof=1), rtol=1e-5)


def test_batch_norm_layer_object_shares_its_variables():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        layer = tf.layers.BatchNormalization(name="bn")
        a = layer(x, training=True)
        b = layer.apply(x * 2.0, training=True)
        again = tf.layers.batch_normalization(x, name="bn", reuse=True)
        # TensorFlow 2.21's names: later calls re-enter the layer's name scope.
        assert [v.op.name for v in tf.global_variables()] == [
            "bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"]
        assert [op.name for op in tf.get_collection(tf.GraphKeys.UPDATE_OPS)] == [
            "bn/AssignMovingAvg", "bn/AssignMovingAvg_1", "bn/AssignMovingAvg_2",
            "bn/AssignMovingAvg_3"]
        assert (a.op.name, b.op.name, again.op.name) == (
            "bn/batchnorm/add_1", "bn/batchnorm_1/add_1", "bn_1/batchnorm/add_1")
        assert layer.name == "bn" and len(layer.updates) == 4
        assert layer.variables == tf.global_variables()
        assert layer.trainable_variables == [layer.gamma, layer.beta]
        with pytest.raises(ValueError, match="Variable bn/gamma already exists"):
            tf.layers.batch_normalization(x, name="bn")


def test_batch_norm_options_and_dtypes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        tf.layers.batch_normalization(x, trainable=False, scale=False)
        assert tf.trainable_variables() == []
        assert [v.op.name for v in tf.global_variables()] == [
            "batch_normalization/beta", "batch_normalization/moving_mean",
            "batch_normalization/moving_variance"]
        half_in = tf.placeholder(tf.float16, [None, 2, 2, 3])
        half = tf.layers.batch_normalization(half_in, training=True)
        assert half.dtype == tf.float16 and half.op.type == "FusedBatchNormV3"
        assert {v.dtype.base_dtype for v in tf.global_variables()[-4:]} == {tf.float32}
        double_in = tf.placeholder(tf.float64, [None, 2, 2, 3])
        double = tf.layers.batch_normalization(double_in, training=True)
        assert double.dtype == tf.float64 and double.op.type != "FusedBatchNormV3"
        unfused = tf.layers.batch_normalization(tf.placeholder(tf.float32, [None, 2, 2, 3]),
                                                fused=False, training=True)
        assert unfused.op.type != "FusedBatchNormV3"
        tf.layers.batch_normalization(tf.placeholder(tf.float32, [None, 2, 3]), axis=[1, 2])
        assert [v.get_shape().as_list() for v in tf.global_variables()[-4:]] == [[1, 2, 3]] * 4
        tf.layers.batch_normalization(x, gamma_regularizer=lambda g: tf.reduce_sum(g))
        assert len(tf.losses.get_regularization_losses()) == 1
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            images = np.arange(12.0).reshape(1, 2, 2, 3)
            values = sess.run([half, double], {half_in: images, double_in: images})
    np.testing.assert_allclose(values[0].astype(np.float64), values[1], rtol=1e-3, atol=1e-3)


def test_batch_norm_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        with pytest.raises(ValueError, match=r"Invalid value for `axis` argument.*Received: axis=2"):
            tf.layers.batch_normalization(x, axis=2)
        with pytest.raises(ValueError, match="Input has undefined `axis` dimension"):
            tf.layers.batch_normalization(tf.placeholder(tf.float32, [None, None]))
        with pytest.raises(ValueError, match="Input has undefined rank"):
            tf.layers.batch_normalization(tf.placeholder(tf.float32))
        with pytest.raises(TypeError, match="floating-point inputs, got int32"):
            tf.layers.batch_normalization(tf.placeholder(tf.int32, [2, 3]))
        with pytest.raises(TypeError, match="training must be a Python bool or a bool tensor"):
            tf.layers.batch_normalization(x, training=tf.placeholder(tf.float32, []))
        with pytest.raises(NotImplementedError, match="renorm"):
            tf.layers.batch_normalization(x, renorm=True)


# -- conv1d, conv3d, conv2d_transpose, separable_conv2d, 1-D and 3-D pooling ---------------------
# tests/fixtures/tf_conv/expected.npz: what TensorFlow 2.21's tf.compat.v1.layers computed for
# layer_programs() of tests/fixtures/tf_conv/make.py, and the variables it created.
def _tf_conv_fixture():
    path = FIXTURES / "tf_conv" / "make.py"
    spec = importlib.util.spec_from_file_location("make_tf_conv", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, np.load(path.parent / "expected.npz")


def test_convolution_and_pooling_layers_compute_what_tensorflow_computes():
    make, expected = _tf_conv_fixture()
    with tf.Graph().as_default():
        outputs = make.layer_programs(tf)
        names = ["%s %s" % (v.op.name, v.get_shape().as_list()) for v in tf.global_variables()]
        assert names == expected["layers/variables"].tolist()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(outputs)
    for i, (out, got) in enumerate(zip(outputs, values)):
        want = expected["layers/%d" % i]
        assert out.get_shape().as_list() == list(want.shape), i
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg="output %d" % i)


def test_conv_layers_with_unknown_sizes_and_bad_arguments():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, 5, 3])
        y = tf.layers.conv2d_transpose(x, 2, 3, strides=2)
        assert y.get_shape().as_list() == [None, None, 11, 2]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(y, {x: np.ones((2, 4, 5, 3))}).shape == (2, 9, 11, 2)
        with pytest.raises(ValueError, match="layer conv1d .* expected ndim=3, found ndim=4"):
            tf.layers.conv1d(x, 2, 3)
        with pytest.raises(ValueError, match="`kernel_size` argument must be a tuple of 3"):
            tf.layers.conv3d(tf.zeros([1, 4, 4, 4, 1]), 2, (3, 3))
        with pytest.raises(ValueError, match="only data_format='channels_last'"):
            tf.layers.max_pooling3d(tf.zeros([1, 4, 4, 4, 1]), 2, 2,
                                    data_format="channels_first")


def test_conv_layer_objects_share_their_variables_across_calls():
    x = np.random.default_rng(5).standard_normal((2, 4, 4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        layer = tf.layers.Conv2DTranspose(2, 3, strides=2, padding="same",
                                          bias_initializer=tf.constant_initializer(0.5))
        first = layer(x)
        with tf.name_scope("again"):
            second = layer.apply(x)
        separable = tf.layers.SeparableConv2D(4, 3, depth_multiplier=2, name="sep")
        separable(x)
        tf.layers.Conv1D(2, 3)(x[:, 0])
        tf.layers.Conv3D(2, 1)(x[:, None])
        tf.layers.Conv2D(2, 1)(x)
        assert [v.op.name for v in layer.variables] == ["conv2d_transpose/kernel",
                                                        "conv2d_transpose/bias"]
        assert layer.trainable_variables == layer.variables and layer.name == "conv2d_transpose"
        assert [v.op.name for v in separable.variables] == [
            "sep/depthwise_kernel", "sep/pointwise_kernel", "sep/bias"]
        assert sorted(v.op.name for v in tf.trainable_variables())[:6] == [
            "conv1d/bias", "conv1d/kernel", "conv2d/bias", "conv2d/kernel",
            "conv2d_transpose/bias", "conv2d_transpose/kernel"]
        assert len(tf.trainable_variables()) == 11
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b = sess.run([first, second])
    assert a.shape == (2, 8, 8, 2)
    np.testing.assert_array_equal(a, b)


# -- layer objects: tf.layers.Layer, Dense, Dropout, Flatten, pooling ----------------------------
class CountedLayer(tf.layers.Layer):
    """A user layer: a trainable kernel (``add_variable``), a non-trainable counter moved by an
    update, the variable scope handed to ``call``."""

    def build(self, input_shape):
        self.kernel = self.add_variable("kernel", [input_shape[-1].value, 2],
                                        initializer=tf.constant_initializer([[1.0, 2.0]] * 3))
        self.count = self.add_weight("count", [], trainable=False,
                                     initializer=tf.zeros_initializer())
        super().build(input_shape)

    def call(self, inputs, scope=None):
        self.seen_scope = scope.name
        self.add_update(tf.assign_add(self.count, 1.0))
        return tf.matmul(inputs, self.kernel)


def test_layer_subclass_builds_once_and_shares_its_variables():
    with tf.Graph().as_default():
        layer = CountedLayer()
        assert (layer.name, layer.built, layer.dtype, layer.variables) == (
            "counted_layer", False, None, [])
        with pytest.raises(ValueError, match="has not been used yet"):
            print(layer.scope_name)
        x = tf.placeholder(tf.float32, [None, 3])
        a, b = layer(x), layer.apply(x * 2)
        assert (layer.scope_name, layer.seen_scope, layer.dtype) == (
            "counted_layer", "counted_layer", "float32")
        assert [v.name for v in layer.weights] == ["counted_layer/kernel:0", "counted_layer/count:0"]
        assert [v.name for v in layer.trainable_variables] == ["counted_layer/kernel:0"]
        assert [v.name for v in layer.non_trainable_weights] == ["counted_layer/count:0"]
        assert [v.name for v in tf.trainable_variables()] == ["counted_layer/kernel:0"]
        assert (a.op.name, b.op.name) == ("counted_layer/MatMul", "counted_layer/MatMul_1")
        assert layer.updates == tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert [u.type for u in layer.updates] == ["AssignAdd", "AssignAdd"]
        assert layer.count_params() == 7
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([a, b] + layer.updates, {x: np.ones((1, 3), np.float32)})
    np.testing.assert_array_equal(got[0], [[3.0, 6.0]])
    np.testing.assert_array_equal(got[1], [[6.0, 12.0]])


def test_layer_names_scopes_dtypes_and_trainability():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        first, second = tf.layers.Dense(2, name="fc"), tf.layers.Dense(2, name="fc")
        first(x), second(x)
        assert (first.scope_name, second.scope_name) == ("fc", "fc_1")   # made unique
        with tf.variable_scope("outer"):
            inner = tf.layers.Dense(2)
            inner(x)
        with tf.variable_scope("elsewhere"):
            again = inner(x)   # the captured scope, not a new one
        assert (inner.scope_name, inner.name, again.op.name) == ("outer/dense", "dense",
                                                                 "outer/dense/BiasAdd_1")
        frozen = tf.layers.Dense(3, trainable=False)
        frozen(x)
        assert frozen.trainable_weights == [] and frozen.count_params() == 12
        assert [v.name for v in frozen.non_trainable_variables] == ["dense/kernel:0",
                                                                   "dense/bias:0"]
        assert "dense/kernel:0" not in [v.name for v in tf.trainable_variables()]
        wide = tf.layers.Dense(3, dtype=tf.float64)
        assert wide(tf.zeros([2, 2], tf.float64)).dtype == tf.float64
        assert (wide.dtype, wide.kernel.dtype.base_dtype) == ("float64", tf.float64)
        inferred = tf.layers.Dense(3)
        inferred(tf.zeros([2, 2], tf.float64))
        assert inferred.bias.dtype.base_dtype == tf.float64
        raw = tf.layers.Layer(name="raw")
        assert raw(x) is x and raw.scope_name == "raw" and raw.weights == []


def test_dense_layer_object_computes_and_checks_its_inputs():
    kernel = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    x = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]], np.float32)
    with tf.Graph().as_default():
        layer = tf.layers.Dense(2, activation=tf.nn.relu, kernel_initializer=tf.constant_initializer(
            kernel), bias_initializer=tf.constant_initializer([0.5, -20.0]))
        y, y3 = layer(x), layer(np.stack([x, 2 * x]))
        assert y3.get_shape().as_list() == [2, 2, 2]
        assert len(tf.global_variables()) == 2
        with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
            layer(tf.zeros([2, 5]))
        with pytest.raises(ValueError, match='layer "dense_1" is incompatible with the layer: '
                                             'expected min_ndim=2, found ndim=1'):
            tf.layers.Dense(2)(tf.zeros([3]))
        with pytest.raises(TypeError, match="floating-point inputs, got int32"):
            tf.layers.Dense(2)(tf.zeros([2, 2], tf.int32))
        with pytest.raises(ValueError, match="expected a positive integer"):
            tf.layers.Dense(0)
        with pytest.raises(TypeError, match="Keyword argument not understood: 'kernel_size'"):
            tf.layers.Dense(2, kernel_size=3)
        with pytest.raises(ValueError, match="isn't built"):
            tf.layers.Dense(2).count_params()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, got3 = sess.run([y, y3])
    np.testing.assert_allclose(got, np.maximum(x @ kernel + [0.5, -20.0], 0), rtol=1e-6)
    np.testing.assert_allclose(got3[1], np.maximum(2 * x @ kernel + [0.5, -20.0], 0), rtol=1e-6)


def test_layer_losses_are_per_layer_and_in_the_collection():
    with tf.Graph().as_default():
        layer = tf.layers.Dense(2, kernel_initializer=tf.ones_initializer(),
                                kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w),
                                activity_regularizer=lambda y: tf.reduce_sum(y))
        layer(tf.ones([2, 3])), layer(tf.ones([4, 3]))
        assert [t.op.name for t in layer.losses] == [
            "dense/kernel/Regularizer/mul", "dense/ActivityRegularizer/truediv",
            "dense/ActivityRegularizer_1/truediv"]
        assert tf.losses.get_regularization_losses() == layer.losses
        layer.add_loss(lambda: tf.constant(7.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(layer.losses)
    assert values == [3.0, 6.0, 6.0, 7.0]   # activity: the sum (12 or 24) over the batch


def test_dropout_flatten_and_pooling_layer_objects():
    x = np.arange(32.0, dtype=np.float32).reshape(1, 4, 4, 2)
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        drop = tf.layers.Dropout(0.5, seed=1)
        off, switched = drop(x), drop(x, training=training)
        assert (drop.rate, drop.noise_shape, drop.seed, off.op.name) == (0.5, None, 1,
                                                                         "dropout/Identity")
        flat = tf.layers.Flatten()(x)
        pools = [tf.layers.MaxPooling2D(2, 2), tf.layers.AveragePooling2D((2, 1), 1, "same"),
                 tf.layers.MaxPooling1D(3, 1), tf.layers.AveragePooling1D(2, 2),
                 tf.layers.MaxPooling3D(2, 1), tf.layers.AveragePooling3D(2, (1, 1, 2))]
        inputs = [x, x, x[:, 0], x[:, 0], x[..., None], x[..., None]]
        outs = [p(i) for p, i in zip(pools, inputs)]
        assert [p.name for p in pools] == ["max_pooling2d", "average_pooling2d", "max_pooling1d",
                                           "average_pooling1d", "max_pooling3d",
                                           "average_pooling3d"]
        assert (pools[1].pool_size, pools[1].strides, pools[1].padding) == ((2, 1), (1, 1),
                                                                            "same")
        functional = tf.layers.max_pooling2d(x, 2, 2)
        with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
            tf.layers.MaxPooling2D(2, 2)(x[0])
        with pytest.raises(ValueError, match="`strides` must not be None"):
            tf.layers.AveragePooling1D(2, None)
        with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
            tf.layers.Dropout(1.5)
        with pytest.raises(ValueError, match="channels_last"):
            tf.layers.Flatten(data_format="channels_first")
        with tf.Session() as sess:
            got = sess.run([off, flat, functional] + outs)
            kept = sess.run(switched, {training: True})
            np.testing.assert_array_equal(sess.run(switched, {training: False}), x)
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[1], x.reshape(1, 32))
    np.testing.assert_array_equal(got[2], got[3])
    np.testing.assert_array_equal(got[3], x.reshape(1, 2, 2, 2, 2, 2).max(axis=(2, 4)))
    np.testing.assert_array_equal(got[4][:, :3], (x[:, :3] + x[:, 1:]) / 2)   # "same" edge: x
    np.testing.assert_array_equal(got[4][:, 3], x[:, 3])
    np.testing.assert_array_equal(got[5], np.stack([x[:, 0, i:i + 3].max(1) for i in range(2)],
                                                   1))
    np.testing.assert_array_equal(got[6], x[:, 0].reshape(1, 2, 2, 2).mean(2))
    assert got[7].shape == (1, 3, 3, 1, 1) and got[8].shape == (1, 3, 3, 1, 1)
    np.testing.assert_array_equal(got[7][0, :, :, 0, 0], x[0, 1:, 1:, 1])
    assert set(np.unique(kept[kept != 0] / x[kept != 0])) == {2.0}


# -- the remaining layer objects on Layer: convolutions, batch normalization; weights, configs ---
def _tf_layer_objects_fixture():
    path = FIXTURES / "tf_layer_objects" / "make.py"
    spec = importlib.util.spec_from_file_location("make_tf_layer_objects", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, np.load(path.parent / "expected.npz")


def test_layer_objects_with_set_weights_compute_what_tensorflow_computes():
    # SeparableConv1D, Conv3DTranspose, separable_conv1d, every string activation and a
    # BatchNormalization, loaded with the same weights by set_weights in TensorFlow and here.
    make, expected = _tf_layer_objects_fixture()
    with tf.Graph().as_default():
        names, shapes, values = make.program(tf)
    assert names == expected["names"].tolist()
    for i, (shape, got) in enumerate(zip(shapes, values)):
        want = expected["output_%d" % i]
        assert shape == list(want.shape), i
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg="output %d" % i)


def test_conv_and_batch_norm_layers_are_layers():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 3])
        conv = tf.layers.Conv2D(4, 3, kernel_regularizer=lambda w: tf.reduce_sum(w),
                                activity_regularizer=lambda y: tf.reduce_sum(y))
        assert isinstance(conv, tf.layers.Layer) and conv.input_spec is None
        y = conv(x)
        assert (conv.scope_name, y.op.name, repr(conv.input_spec)) == (
            "conv2d", "conv2d/BiasAdd", "InputSpec(ndim=4, axes={-1: 3})")
        assert [v.name for v in conv.trainable_weights] == ["conv2d/kernel:0", "conv2d/bias:0"]
        assert [t.op.name for t in conv.losses] == ["conv2d/kernel/Regularizer/Sum",
                                                    "conv2d/ActivityRegularizer/truediv"]
        assert conv.count_params() == 3 * 3 * 3 * 4 + 4 and conv.updates == []
        with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
            conv(tf.zeros([1, 5, 5, 2]))
        bn = tf.layers.BatchNormalization(trainable=False)
        bn(x, training=False)
        assert bn.updates == [] and bn.trainable_weights == []
        assert [v.name for v in bn.non_trainable_weights] == [
            "batch_normalization/gamma:0", "batch_normalization/beta:0",
            "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
        assert repr(bn.input_spec) == "InputSpec(ndim=4, axes={3: 3})"
        training = tf.placeholder(tf.bool, [])
        bn(x, training=training)
        assert [u.name for u in bn.updates] == ["batch_normalization/AssignMovingAvg",
                                                "batch_normalization/AssignMovingAvg_1"]
        assert bn.updates == tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with pytest.raises(ValueError, match="Invalid value for argument `filters`"):
            tf.layers.Conv2D(0, 3)
        with pytest.raises(ValueError, match="only data_format='channels_last'"):
            tf.layers.Conv3DTranspose(2, 3, data_format="channels_first")


def test_get_weights_and_set_weights_go_through_the_default_session():
    with tf.Graph().as_default():
        layer = tf.layers.Dense(2, kernel_initializer=tf.ones_initializer())
        assert layer.get_weights() == []   # nothing built, nothing to read
        y = layer(tf.ones([1, 3]))
        init = tf.global_variables_initializer()
        ops = len(tf.get_default_graph().get_operations())
        with pytest.raises(ValueError, match="default session"):
            layer.get_weights()
        with tf.Session() as sess:
            sess.run(init)
            kernel, bias = layer.get_weights()
            np.testing.assert_array_equal(kernel, np.ones((3, 2)))
            np.testing.assert_array_equal(bias, [0.0, 0.0])
            layer.set_weights([np.arange(6.0).reshape(3, 2), [1, -1]])
            np.testing.assert_array_equal(sess.run(y), [[7.0, 8.0]])
            assert [w.dtype for w in layer.get_weights()] == [np.float32, np.float32]
            with pytest.raises(ValueError, match='on layer "dense" with a weight list of length '
                                                 '1, but the layer was expecting 2 weights'):
                layer.set_weights([kernel])
            with pytest.raises(ValueError, match=r"Layer weight shape \(3, 2\) not compatible "
                                                 r"with provided weight shape \(2, 3\)"):
                layer.set_weights([kernel.T, bias])
        assert len(tf.get_default_graph().get_operations()) == ops   # no op added


def test_get_config_and_from_config_round_trip():
    x = np.random.default_rng(2).standard_normal((2, 6, 6, 3)).astype(np.float32)
    with tf.Graph().as_default():
        conv = tf.layers.Conv2D(4, 3, strides=2, padding="same", activation=tf.nn.relu,
                                kernel_initializer=tf.constant_initializer(0.5), name="c")
        # TensorFlow 2.21's keys and values (it adds "groups": 1, which zps does not take).
        assert conv.get_config() == {
            "name": "c", "trainable": True, "dtype": None, "filters": 4, "kernel_size": (3, 3),
            "strides": (2, 2), "padding": "same", "data_format": "channels_last",
            "dilation_rate": (1, 1), "activation": "relu", "use_bias": True,
            "kernel_initializer": {"class_name": "Constant",
                                   "config": {"value": 0.5, "dtype": "float32"}},
            "bias_initializer": {"class_name": "Zeros", "config": {"dtype": "float32"}},
            "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
            "kernel_constraint": None, "bias_constraint": None}
        assert tf.layers.Dense(3).get_config()["activation"] == "linear"
        assert tf.layers.MaxPooling2D(2, 2).get_config() == {
            "name": "max_pooling2d", "trainable": True, "dtype": None, "pool_size": (2, 2),
            "padding": "valid", "strides": (2, 2), "data_format": "channels_last"}
        assert tf.layers.Dropout(0.3).get_config() == {
            "name": "dropout", "trainable": True, "dtype": None, "rate": 0.3,
            "noise_shape": None, "seed": None}
        assert tf.layers.BatchNormalization(axis=[1, 2], fused=False).get_config()["axis"] == \
            [1, 2]
        layers = [conv, tf.layers.SeparableConv1D(2, 2, depth_multiplier=2, name="s1"),
                  tf.layers.Conv2DTranspose(2, 3, strides=2, name="t2"),
                  tf.layers.BatchNormalization(momentum=0.5, fused=False, name="bn"),
                  tf.layers.Dense(2, activation="softmax", name="d"), tf.layers.Flatten()]
        inputs = [x, x[:, 0], x, x, x, x]
        copies = [type(layer).from_config(layer.get_config()) for layer in layers]
        outs = [layer(i) for layer, i in zip(layers + copies, inputs + inputs)]
        assert [c.get_config() for c in copies] == [
            dict(layer.get_config(), name=c.name) for layer, c in zip(layers, copies)]
        assert copies[0].activation is tf.nn.relu and copies[3].fused is False
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for layer, copy in zip(layers, copies):
                copy.set_weights(layer.get_weights())
            got = sess.run(outs)
    for a, b in zip(got[:6], got[6:]):
        np.testing.assert_array_equal(a, b)

    class Scaled(tf.layers.Layer):
        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

    with pytest.raises(NotImplementedError, match="must override `get_config`"):
        Scaled(2.0).get_config()
    assert tf.layers.Layer(name="plain").get_config() == {"name": "plain", "trainable": True,
                                                         "dtype": None}
    with pytest.raises(ValueError, match="Unknown initializer: 'Nope'"):
        tf.layers.Dense.from_config({"units": 2, "kernel_initializer": {"class_name": "Nope",
                                                                        "config": {}}})


def test_compute_output_shape():
    # The shapes TensorFlow 2.21 gives.
    cases = [(tf.layers.SeparableConv1D(3, 3, strides=2), [None, 7, 2], [None, 3, 3]),
             (tf.layers.Conv3DTranspose(3, 3, strides=(2, 1, 3)), [None, 5, None, 3, 2],
              [None, 11, None, 9, 3]),
             (tf.layers.SeparableConv2D(3, 3, padding="same", strides=2), [4, 9, 9, 2],
              [4, 5, 5, 3]),
             (tf.layers.Conv2D(3, 3, dilation_rate=2), [None, 7, 9, 2], [None, 3, 5, 3]),
             (tf.layers.Conv1D(3, 3, strides=2, padding="same"), [None, 7, 2], [None, 4, 3]),
             (tf.layers.Conv2DTranspose(3, 3, strides=2), [None, 5, None, 2],
              [None, 11, None, 3]),
             (tf.layers.BatchNormalization(), [2, 5, 2], [2, 5, 2]),
             (tf.layers.MaxPooling2D(2, 2, padding="same"), [None, 5, 5, 3], [None, 3, 3, 3]),
             (tf.layers.AveragePooling3D(3, 2), [None, 6, 5, 5, 3], [None, 2, 2, 2, 3]),
             (tf.layers.AveragePooling1D(3, 2), [None, 8, 2], [None, 3, 2]),
             (tf.layers.Flatten(), [None, 3, 4], [None, 12]),
             (tf.layers.Flatten(), [None, 5, None], [None, None]),
             (tf.layers.Dropout(), [None, 3], [None, 3]),
             (tf.layers.Dense(3), [None, 5, 3], [None, 5, 3])]
    for layer, shape, want in cases:
        got = layer.compute_output_shape(tf.TensorShape(shape))
        assert isinstance(got, tf.TensorShape) and got.as_list() == want, type(layer).__name__
    with pytest.raises(ValueError, match="last dimension of the input shape of a Dense layer"):
        tf.layers.Dense(3).compute_output_shape(tf.TensorShape([2, None]))
    with pytest.raises(NotImplementedError, match="compute_output_shape"):
        tf.layers.Layer().compute_output_shape(tf.TensorShape([2, 3]))


def test_string_activations_and_bad_ones():
    with tf.Graph().as_default():
        assert tf.layers.Dense(2, activation="relu").activation is tf.nn.relu
        assert tf.layers.Dense(2, activation="linear").activation is None
        y = tf.layers.conv1d(tf.ones([1, 4, 2]), 2, 3, activation="tanh")
        assert y.op.type == "Tanh" and y.op.name == "conv1d/Tanh"
        with pytest.raises(ValueError, match="Unknown activation function: 'nope'"):
            tf.layers.Dense(2, activation="nope")
        with pytest.raises(TypeError, match="Could not interpret activation function "
                                            "identifier: 3"):
            tf.layers.Conv2D(2, 1, activation=3)
