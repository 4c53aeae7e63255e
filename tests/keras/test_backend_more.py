"""tf.keras.backend's common functions (values against numpy) and the serialize/deserialize of
tf.keras.initializers, regularizers and activations."""

import numpy as np
import pytest

import zps as tf

K = tf.keras.backend
X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)


def test_variables_values_and_session():
    with tf.Graph().as_default():
        v = K.variable([[1.0, 2.0]], name="v")
        assert K.dtype(v) == "float32" and K.int_shape(v) == (1, 2) and K.count_params(v) == 2
        with tf.Session() as sess:
            K.set_session(sess)
            try:
                np.testing.assert_array_equal(K.get_value(v), [[1.0, 2.0]])
                K.set_value(v, [[3.0, 4.0]])
                K.batch_set_value([(v, np.array([[5.0, 6.0]]))])
                assert [a.tolist() for a in K.batch_get_value([v])] == [[[5.0, 6.0]]]
                assert K.eval(K.sum(v)) == 11.0
                assert K.get_session() is sess
            finally:
                K.set_session(None)
        assert K.cast_to_floatx([1, 2]).dtype == np.float32
        p = K.placeholder(ndim=2)
        assert K.int_shape(p) == (None, None) and K.is_placeholder(p)
        assert not K.is_placeholder(K.constant(1.0))
        assert K.constant([1, 2]).dtype == tf.float32


def test_math_against_numpy():
    with tf.Graph().as_default():
        x = K.constant(X)
        y = K.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
        cube = K.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        with tf.Session() as sess:
            got = sess.run({
                "dot": K.dot(x, y), "dot3": K.dot(cube, K.transpose(y)),
                "mean": K.mean(x, axis=1), "sum": K.sum(x, axis=0, keepdims=True),
                "std": K.std(x, axis=1), "var": K.var(x), "prod": K.prod(x),
                "clip": K.clip(x, -1.0, 2.0), "argmax": K.argmax(x),
                "any": K.any(x > 3.5, axis=1), "all": K.all(x > -3.0),
                "flat": K.batch_flatten(cube), "rep": K.repeat_elements(x, 2, axis=0),
                "perm": K.permute_dimensions(cube, (2, 0, 1)), "one_hot": K.one_hot([0, 2], 3),
                "switch": K.switch(x > 0, x, -x), "bce": K.binary_crossentropy(
                    K.constant([[1.0, 0.0]]), K.constant([[0.9, 0.2]])),
                "batch_dot": K.batch_dot(x, x, axes=1)})
    c = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    yy = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(got["dot"], X @ yy)
    np.testing.assert_allclose(got["dot3"], c @ yy.T)
    np.testing.assert_allclose(got["mean"], X.mean(1), rtol=1e-6)
    np.testing.assert_allclose(got["sum"], X.sum(0, keepdims=True))
    np.testing.assert_allclose(got["std"], X.std(1), rtol=1e-6)
    np.testing.assert_allclose(got["var"], X.var(), rtol=1e-6)
    np.testing.assert_allclose(got["prod"], X.prod())
    np.testing.assert_array_equal(got["clip"], np.clip(X, -1, 2))
    np.testing.assert_array_equal(got["argmax"], [2, 1])
    np.testing.assert_array_equal(got["any"], [False, True])
    assert got["all"]
    np.testing.assert_array_equal(got["flat"], c.reshape(2, 12))
    np.testing.assert_array_equal(got["rep"], np.repeat(X, 2, axis=0))
    np.testing.assert_array_equal(got["perm"], c.transpose(2, 0, 1))
    np.testing.assert_array_equal(got["one_hot"], [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(got["switch"], np.abs(X))
    eps = 1e-7
    np.testing.assert_allclose(got["bce"], [[-np.log(0.9 + eps), -np.log(0.8 + eps)]],
                               rtol=1e-6)
    np.testing.assert_allclose(got["batch_dot"], (X * X).sum(1, keepdims=True))


def test_function_and_learning_phase():
    with tf.Graph().as_default():
        a = K.placeholder((None, 2))
        counter = K.variable(0.0)
        f = K.function([a], [K.sum(a), a * 2.0], updates=[K.update_add(counter, 1.0)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            K.set_session(sess)
            try:
                total, doubled = f([np.ones((3, 2), np.float32)])
                assert total == 6.0 and doubled.shape == (3, 2)
                f([np.ones((1, 2), np.float32)])
                assert K.get_value(counter) == 2.0
                phase = K.in_train_phase(K.constant(1.0), K.constant(0.0))
                assert sess.run(phase) == 0.0
                assert sess.run(phase, {K.learning_phase(): True}) == 1.0
            finally:
                K.set_session(None)
        K.set_learning_phase(1)
        assert K.in_train_phase(lambda: "train", lambda: "test") == "train"


def test_serialize_initializers_regularizers_activations():
    init = tf.keras.initializers.deserialize(
        tf.keras.initializers.serialize(tf.keras.initializers.RandomNormal(stddev=0.3)))
    assert isinstance(init, tf.keras.initializers.RandomNormal) and init.stddev == 0.3
    assert isinstance(tf.keras.initializers.deserialize("zeros"), tf.keras.initializers.Zeros)
    reg = tf.keras.regularizers.deserialize(
        tf.keras.regularizers.serialize(tf.keras.regularizers.l1_l2(0.5, 0.25)))
    assert (reg.l1, reg.l2) == (0.5, 0.25)
    for name in ("elu", "selu", "softplus", "softsign", "exponential", "hard_sigmoid",
                 "linear", "relu", "sigmoid", "softmax", "tanh"):
        fn = tf.keras.activations.get(name)
        assert tf.keras.activations.serialize(fn) == name
        assert tf.keras.activations.deserialize(name) is fn
    with pytest.raises(ValueError, match="Could not interpret regularizer"):
        tf.keras.regularizers.deserialize("l3")


def test_get_session_initializes_metric_variables():
    with tf.Graph().as_default():
        auc = tf.keras.metrics.AUC(num_thresholds=3)
        value = auc([0.0, 1.0, 1.0], [0.2, 0.9, 0.4])
        session = K.get_session()
        try:
            assert session.run(value) == 0.75
            auc.reset_states()
            assert session.run(auc.variables[0]).tolist() == [0.0, 0.0, 0.0]
        finally:
            session.close()
            K.set_session(None)
