"""tf.keras.layers in graph mode: names and shapes as TF 2.21's tf.compat.v1 Keras
(tf_keras, graph mode) gives them, values against numpy and TF's numbers written in."""

import numpy as np
import pytest

import zps as tf

K = tf.keras


@pytest.fixture(autouse=True)
def graph(request):
    if request.function.__name__ == "test_clear_session_starts_a_new_graph":
        yield None   # reset_default_graph refuses to run inside graph.as_default()
        return
    with tf.Graph().as_default() as g:
        yield g


def run(*fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed)


def test_names_and_variables_as_tf_keras():
    x = tf.placeholder(tf.float32, [None, 3])
    dense = K.layers.Dense(4)
    assert dense.name == "dense"   # named when made, before any call
    y = dense(x)
    assert [v.name for v in dense.weights] == ["dense/kernel:0", "dense/bias:0"]
    assert y.op.name == "dense/BiasAdd"
    relu = K.layers.Dense(4, activation="relu")
    assert relu.name == "dense_1" and relu(x).op.name == "dense_1/Relu"
    made = {
        "conv2d": (K.layers.Conv2D(3, 2), [1, 5, 5, 2],
                   {"conv2d/kernel:0": [2, 2, 2, 3], "conv2d/bias:0": [3]}),
        "batch_normalization": (K.layers.BatchNormalization(), [2, 3], {
            "batch_normalization/gamma:0": [3], "batch_normalization/beta:0": [3],
            "batch_normalization/moving_mean:0": [3],
            "batch_normalization/moving_variance:0": [3]}),
        "layer_normalization": (K.layers.LayerNormalization(), [2, 3], {
            "layer_normalization/gamma:0": [3], "layer_normalization/beta:0": [3]}),
        "depthwise_conv2d": (K.layers.DepthwiseConv2D(3, depth_multiplier=2), [1, 5, 5, 2], {
            "depthwise_conv2d/depthwise_kernel:0": [3, 3, 2, 2], "depthwise_conv2d/bias:0": [4]}),
        "separable_conv2d": (K.layers.SeparableConv2D(5, 3), [1, 5, 5, 2], {
            "separable_conv2d/depthwise_kernel:0": [3, 3, 2, 1],
            "separable_conv2d/pointwise_kernel:0": [1, 1, 2, 5], "separable_conv2d/bias:0": [5]}),
        "conv2d_transpose": (K.layers.Conv2DTranspose(4, 3), [1, 5, 5, 2], {
            "conv2d_transpose/kernel:0": [3, 3, 4, 2], "conv2d_transpose/bias:0": [4]}),
    }
    for name, (layer, shape, weights) in made.items():
        assert layer.name == name
        layer(tf.zeros(shape))
        assert {v.name: v.get_shape().as_list() for v in layer.weights} == weights
    embedding = K.layers.Embedding(10, 4)
    assert embedding(tf.zeros([2, 3], tf.int32)).get_shape().as_list() == [2, 3, 4]
    assert [v.name for v in embedding.weights] == ["embedding/embeddings:0"]
    assert K.layers.LeakyReLU().name == "leaky_re_lu"
    assert K.layers.GlobalAveragePooling2D().name == "global_average_pooling2d"


def test_dense_values_initializer_strings_and_regularizer_losses():
    x = tf.constant([[1.0, 2.0, 3.0]])
    dense = K.layers.Dense(2, activation="sigmoid", kernel_initializer="ones",
                           bias_initializer=K.initializers.Constant(-6.0),
                           kernel_regularizer=K.regularizers.l2(0.1))
    y = dense(x)
    np.testing.assert_allclose(run(y), [[0.5, 0.5]])
    # As TF's Keras: the loss is on the layer, not in the REGULARIZATION_LOSSES collection.
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == []
    np.testing.assert_allclose(run(dense.losses[0]), 0.1 * 6, rtol=1e-6)
    assert dense.count_params() == 8 and dense.output_shape == (1, 2)
    assert dense.compute_output_shape([None, 5]).as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        dense.set_weights([np.full([3, 2], 2.0), np.zeros(2)])
        kernel, bias = dense.get_weights()
        np.testing.assert_array_equal(kernel, np.full([3, 2], 2.0))
        np.testing.assert_allclose(sess.run(y), 1 / (1 + np.exp(-12.0)) * np.ones([1, 2]))


def test_keras_initializer_defaults():
    assert K.initializers.RandomNormal().stddev == 0.05
    assert (K.initializers.RandomUniform().minval, K.initializers.RandomUniform().maxval) == \
        (-0.05, 0.05)
    assert K.initializers.get("he_normal").get_config()["scale"] == 2.0
    for name in ("glorot_uniform", "glorot_normal", "lecun_normal", "lecun_uniform", "zeros",
                 "ones", "orthogonal", "random_normal", "truncated_normal", "he_uniform"):
        assert callable(K.initializers.get(name))
    with pytest.raises(ValueError, match="Unknown initializer: 'glorot'"):
        K.layers.Dense(2, kernel_initializer="glorot")


def test_pooling_and_shape_layers_against_tf():
    img = tf.constant(np.arange(2 * 4 * 4 * 2, dtype=np.float32).reshape(2, 4, 4, 2) / 10)
    pooled = K.layers.MaxPooling2D()(img)   # pool_size (2, 2), strides = pool_size
    assert pooled.get_shape().as_list() == [2, 2, 2, 2]
    assert K.layers.MaxPooling2D().compute_output_shape([None, 5, 5, 3]).as_list() == \
        [None, 2, 2, 3]
    up = K.layers.UpSampling2D()(tf.constant(np.arange(4.0, dtype=np.float32).reshape(1, 2, 2, 1)))
    crop = K.layers.Cropping2D(((1, 0), (0, 1)))(img)
    pad = K.layers.ZeroPadding2D(((1, 0), (0, 2)))(img)
    gap = K.layers.GlobalAveragePooling2D()(img)
    gmp = K.layers.GlobalMaxPooling1D()(tf.constant([[[1.0, 5.0], [3.0, 2.0]]]))
    flat = K.layers.Flatten()(img)
    reshaped = K.layers.Reshape((-1, 4))(img)
    permuted = K.layers.Permute((2, 1))(tf.zeros([2, 3, 5]))
    repeated = K.layers.RepeatVector(3)(tf.constant([[1.0, 2.0]]))
    values = run(pooled, up, crop, pad, gap, gmp, flat, reshaped, repeated)
    x = np.arange(64, dtype=np.float32).reshape(2, 4, 4, 2) / 10
    np.testing.assert_allclose(values[0], x.reshape(2, 2, 2, 2, 2, 2).max(axis=(2, 4)))
    np.testing.assert_array_equal(values[1][0, :, :, 0], [[0, 0, 1, 1], [0, 0, 1, 1],
                                                          [2, 2, 3, 3], [2, 2, 3, 3]])
    np.testing.assert_allclose(values[2], x[:, 1:, :3])
    np.testing.assert_allclose(values[3], np.pad(x, [[0, 0], [1, 0], [0, 2], [0, 0]]))
    np.testing.assert_allclose(values[4], x.mean(axis=(1, 2)), rtol=1e-6)
    np.testing.assert_array_equal(values[5], [[3.0, 5.0]])
    np.testing.assert_allclose(values[6], x.reshape(2, 32))
    assert reshaped.get_shape().as_list() == [2, 8, 4]
    np.testing.assert_allclose(values[7], x.reshape(2, 8, 4))
    assert permuted.get_shape().as_list() == [2, 5, 3]
    np.testing.assert_array_equal(values[8], [[[1, 2]] * 3])


def test_depthwise_layer_norm_and_activation_layers_match_tf():
    img = tf.constant(np.arange(2 * 4 * 4 * 2, dtype=np.float32).reshape(2, 4, 4, 2) / 10)
    dw = K.layers.DepthwiseConv2D(2, depth_multiplier=2, depthwise_initializer="ones",
                                  padding="same")(img)
    ln = K.layers.LayerNormalization()(tf.constant(
        np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10))
    relu = K.layers.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.5)(
        tf.constant([-1.0, 0.2, 0.7, 3.0]))
    leaky = K.layers.LeakyReLU()(tf.constant([-1.0, 2.0]))
    softmax = K.layers.Softmax()(tf.constant([[0.0, np.log(3.0)]]))
    act = K.layers.Activation("tanh")(tf.constant([0.5]))
    dw, ln, relu, leaky, softmax, act = run(dw, ln, relu, leaky, softmax, act)
    # TF 2.21 (tf_keras, graph mode), the first pixels of the first image:
    np.testing.assert_allclose(dw[0, 0, :2], [[2.0, 2.0, 2.4, 2.4], [2.8, 2.8, 3.2, 3.2]],
                               rtol=1e-6)
    np.testing.assert_allclose(dw[1, 3, 3], [6.2, 6.2, 6.3, 6.3], rtol=1e-6)
    np.testing.assert_allclose(ln[0, 0], [-1.290994, -0.430332, 0.430331, 1.290994], atol=2e-6)
    np.testing.assert_allclose(relu, [-0.15, -0.03, 0.7, 1.0], rtol=1e-6)
    np.testing.assert_allclose(leaky, [-0.3, 2.0], rtol=1e-6)
    np.testing.assert_allclose(softmax, [[0.25, 0.75]], rtol=1e-6)
    np.testing.assert_allclose(act, np.tanh([0.5]), rtol=1e-6)


def test_merge_layers_and_lambda():
    a, b = tf.constant([[1.0, 2.0]]), tf.constant([[3.0, 5.0]])
    got = run(K.layers.add([a, b]), K.layers.Subtract()([a, b]), K.layers.multiply([a, b]),
              K.layers.Average()([a, b]), K.layers.Maximum()([a, b]),
              K.layers.concatenate([a, b]), K.layers.Concatenate(axis=0)([a, b]),
              K.layers.Lambda(lambda t, k: t * k, arguments={"k": 3.0})(a))
    np.testing.assert_array_equal(got[0], [[4, 7]])
    np.testing.assert_array_equal(got[1], [[-2, -3]])
    np.testing.assert_array_equal(got[2], [[3, 10]])
    np.testing.assert_array_equal(got[3], [[2, 3.5]])
    np.testing.assert_array_equal(got[4], [[3, 5]])
    np.testing.assert_array_equal(got[5], [[1, 2, 3, 5]])
    np.testing.assert_array_equal(got[6], [[1, 2], [3, 5]])
    np.testing.assert_array_equal(got[7], [[3, 6]])
    with pytest.raises(ValueError, match="at least 2 inputs"):
        K.layers.Add()([a])


def test_dropout_and_batch_norm_follow_the_learning_phase():
    x = tf.ones([1000])
    dropped = K.layers.Dropout(0.5)(x)   # no `training`: the learning phase (False by default)
    phase = K.backend.learning_phase()
    assert phase.op.name == "keras_learning_phase"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(dropped), np.ones(1000))
        kept = sess.run(dropped, {phase: True})
        assert set(kept.tolist()) == {0.0, 2.0} and 400 < np.count_nonzero(kept) < 600
    explicit = K.layers.Dropout(0.5)(x, training=True)
    assert 400 < np.count_nonzero(run(explicit)) < 600

    bn = K.layers.BatchNormalization(epsilon=0.0)
    y = bn(tf.constant([[1.0], [3.0]]))
    assert len(bn.updates) == 2
    # As TF's Keras: the updates stay on the layer, not in UPDATE_OPS.
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [[1.0], [3.0]])   # inference: moving stats
        np.testing.assert_allclose(sess.run(y, {phase: True}), [[-1.0], [1.0]])
        sess.run(bn.updates, {phase: True})
        np.testing.assert_allclose(sess.run(bn.moving_mean), [0.02], rtol=1e-6)


def test_set_learning_phase_fixes_the_phase():
    K.backend.set_learning_phase(1)
    assert K.backend.learning_phase() == 1
    kept = run(K.layers.Dropout(0.5)(tf.ones([1000])))
    assert 400 < np.count_nonzero(kept) < 600
    with pytest.raises(ValueError, match="0 or 1"):
        K.backend.set_learning_phase(2)


def test_errors_are_clear():
    with pytest.raises(ValueError, match="Unknown activation function: 'relux'"):
        K.layers.Dense(2, activation="relux")
    with pytest.raises(ValueError, match="Unknown activation function: 'foo'"):
        K.activations.get("foo")
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=2"):
        K.layers.Conv2D(2, 3)(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        K.layers.MaxPooling2D()(tf.zeros([1, 4, 4]))
    dense = K.layers.Dense(2)
    dense(tf.zeros([1, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        dense(tf.zeros([1, 4]))
    with pytest.raises(AttributeError, match="has never been called"):
        _ = K.layers.Dense(2).output_shape
    with pytest.raises(ValueError, match="Could not interpret regularizer"):
        K.layers.Dense(2, kernel_regularizer="l3")


def test_backend_basics():
    x = tf.placeholder(tf.float32, [None, 3])
    assert K.backend.int_shape(x) == (None, 3)
    assert K.backend.floatx() == "float32" and K.backend.epsilon() == 1e-7
    assert K.backend.image_data_format() == "channels_last"
    session = K.backend.get_session()   # made once for the default graph
    assert session.graph is tf.get_default_graph() and K.backend.get_session() is session
    with tf.Session() as default:
        assert K.backend.get_session() is default
    np.testing.assert_allclose(run(K.backend.mean(tf.constant([[1.0, 3.0]]), axis=1)), [2.0])


def test_clear_session_starts_a_new_graph():
    K.layers.Dense(1)
    old = tf.get_default_graph()
    K.backend.clear_session()   # a new default graph: the names start again
    assert tf.get_default_graph() is not old
    assert K.layers.Dense(1).name == "dense"
    K.backend.clear_session()
