"""tf.keras.Sequential and functional tf.keras.Model in graph mode: names as TF 2.21's
tf_keras in graph mode gives them, weight sharing, summary, weights in checkpoints, training
with a tf.train optimizer."""

import numpy as np
import pytest

import zps as tf

K = tf.keras



def test_sequential_names_as_tf_keras():
    K.layers.Dense(4)
    K.layers.Dense(4)   # dense, dense_1 taken
    built = K.Sequential([K.layers.Dense(5, input_shape=(3,)), K.layers.Dense(2)])
    assert built.name == "sequential"
    assert [v.name for v in built.weights] == [
        "dense_2/kernel:0", "dense_2/bias:0", "dense_3/kernel:0", "dense_3/bias:0"]
    assert built.input.op.name == "dense_2_input" and built.output_shape == (None, 2)
    lazy = K.Sequential([K.layers.Dense(5), K.layers.Dense(2)])
    x = tf.placeholder(tf.float32, [None, 3])
    y = lazy(x)
    assert lazy.name == "sequential_1" and y.op.name == "sequential_1/dense_5/BiasAdd"
    assert [v.name for v in lazy.weights] == [
        "sequential_1/dense_4/kernel:0", "sequential_1/dense_4/bias:0",
        "sequential_1/dense_5/kernel:0", "sequential_1/dense_5/bias:0"]
    lazy(x)
    assert len(lazy.weights) == 4 and len(tf.trainable_variables()) == 8   # shared
    inp = K.Input((3,))
    assert inp.op.name == "input_1" and inp.get_shape().as_list() == [None, 3]
    hidden = K.layers.Dense(4)(inp)
    out = K.layers.Dense(1)(hidden)
    model = K.Model(inp, out)
    assert model.name == "model"
    assert [v.name for v in model.weights] == [
        "dense_6/kernel:0", "dense_6/bias:0", "dense_7/kernel:0", "dense_7/bias:0"]
    assert [layer.name for layer in model.layers] == ["input_1", "dense_6", "dense_7"]


def test_functional_model_shares_weights_and_computes_the_same_function():
    inp = K.Input((2,))
    hidden = K.layers.Dense(3, activation="relu", kernel_initializer="ones")(inp)
    a = K.layers.Dense(1, kernel_initializer="ones", name="a")(hidden)
    b = K.layers.Dense(1, kernel_initializer="ones", name="b")(hidden)
    model = K.Model(inputs=inp, outputs=K.layers.add([a, b]))
    x1, x2 = tf.constant([[1.0, 2.0]]), tf.constant([[-1.0, -2.0], [0.5, 0.5]])
    y1, y2 = model(x1), model(x2)
    assert len(tf.trainable_variables()) == 6 and len(model.trainable_weights) == 6
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y1), [[18.0]])    # 2 * 3 * (1 + 2)
        np.testing.assert_allclose(sess.run(y2), [[0.0], [6.0]])
        model.layers[1].set_weights([np.full([2, 3], 2.0), np.zeros(3)])
        np.testing.assert_allclose(sess.run(y1), [[36.0]])    # both calls see the new kernel


def test_nested_models_and_training_argument():
    inner = K.Sequential([K.layers.Dense(2, input_shape=(2,), kernel_initializer="ones"),
                          K.layers.Dropout(0.5)])
    inp = K.Input((2,))
    outer = K.Model(inp, K.layers.Dense(1, kernel_initializer="ones")(inner(inp)))
    assert len(outer.weights) == 4 and outer.count_params() == 9
    x = tf.ones([1000, 2])
    inference, training = outer(x), outer(x, training=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(inference), np.full([1000, 1], 4.0))
        dropped = sess.run(training)
        assert set(np.unique(dropped)) <= {0.0, 4.0, 8.0} and dropped.std() > 0


def test_summary_is_tf_1x_kerass_table():
    model = K.Sequential([K.layers.Dense(5, input_shape=(3,)), K.layers.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    assert lines == [
        'Model: "sequential"',
        "_" * 65,
        "Layer (type)                 Output Shape              Param #   ",
        "=" * 65,
        "dense (Dense)                (None, 5)                 20        ",
        "_" * 65,
        "dense_1 (Dense)              (None, 2)                 12        ",
        "=" * 65,
        "Total params: 32",
        "Trainable params: 32",
        "Non-trainable params: 0",
        "_" * 65]


def test_weights_round_trip_and_checkpoints(tmp_path):
    model = K.Sequential([K.layers.Dense(2, input_shape=(3,)),
                          K.layers.BatchNormalization()])
    assert [v.name for v in model.weights][-2:] == [
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    assert len(model.trainable_weights) == 4 and len(model.non_trainable_weights) == 2
    values = [np.arange(6.0).reshape(3, 2), np.ones(2), np.full(2, 2.0), np.full(2, 3.0),
              np.full(2, 4.0), np.full(2, 5.0)]
    path = str(tmp_path / "weights")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        model.set_weights(values)
        model.save_weights(path)
        sess.run(tf.global_variables_initializer())
        model.load_weights(path)
        for got, want in zip(model.get_weights(), values):
            np.testing.assert_array_equal(got, want)
        with pytest.raises(ValueError, match="TF checkpoints only"):
            model.save_weights(str(tmp_path / "weights.h5"))
    # without a default session: Keras's own (backend.get_session()), as TF 1.15's Keras
    model.save_weights(str(tmp_path / "keras_session"))
    assert len(tf.train.list_variables(str(tmp_path / "keras_session"))) == 6


def test_graph_disconnected_and_bad_inputs():
    inp, other = K.Input((2,)), K.Input((2,))
    out = K.layers.add([K.layers.Dense(2)(inp), K.layers.Dense(2)(other)])
    with pytest.raises(ValueError, match="Graph disconnected"):
        K.Model(inp, out)
    with pytest.raises(ValueError, match="must come from `tf.keras.Input`"):
        K.Model(tf.placeholder(tf.float32, [None, 2]), out)
    model = K.Model([inp, other], out)
    with pytest.raises(ValueError, match="expects 2 input"):
        model(tf.zeros([1, 2]))


def test_a_small_model_trains_with_a_tf_train_optimizer():
    rng = np.random.RandomState(0)
    features = rng.randn(64, 3).astype(np.float32)
    labels = (features @ np.array([[1.0], [-2.0], [0.5]], np.float32) > 0).astype(np.float32)
    tf.set_random_seed(1)
    model = K.Sequential([K.layers.Dense(8, activation="tanh", input_shape=(3,),
                                         kernel_regularizer=K.regularizers.l2(1e-4)),
                          K.layers.Dense(1, activation="sigmoid")])
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    loss = tf.reduce_mean(K.losses.binary_crossentropy(y, model(x))) + tf.add_n(model.losses)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, var_list=model.trainable_weights)
    feed = {x: features, y: labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(100):
            sess.run(train, feed)
        last = sess.run(loss, feed)
    assert last < 0.5 * first, (first, last)


def test_subclassed_model_names_as_tf_keras():
    class MyModel(K.Model):
        def __init__(self):
            super().__init__()
            self.d1 = K.layers.Dense(3, activation="relu")
            self.drop = K.layers.Dropout(0.5)
            self.d2 = K.layers.Dense(1)

        def call(self, x, training=None):
            return self.d2(self.drop(self.d1(x), training=training))

    model = MyModel()
    x = tf.ones([4, 2])
    y = model(x, training=True)
    model(x)
    assert model.name == "my_model" and y.op.name == "my_model/dense_1/BiasAdd"
    assert [v.name for v in model.weights] == [
        "my_model/dense/kernel:0", "my_model/dense/bias:0", "my_model/dense_1/kernel:0",
        "my_model/dense_1/bias:0"]
    assert [layer.name for layer in model.layers] == ["dense", "dropout", "dense_1"]
    assert K.layers.Dense(2)(x, training=True).op.name == "dense_2/BiasAdd"   # not taken
    with tf.variable_scope("tower"):
        dense = K.layers.Dense(2)
        dense(x)
    assert [v.name for v in dense.weights] == ["tower/dense_3/kernel:0", "tower/dense_3/bias:0"]
    lines = []
    model.summary(print_fn=lines.append)
    assert lines[4] == "dense (Dense)                multiple                  9         "


def test_in_a_monitored_training_session_with_the_models_updates():
    model = K.Sequential([K.layers.Dense(2, input_shape=(2,), kernel_initializer="ones"),
                          K.layers.BatchNormalization(momentum=0.5)])
    x = tf.constant([[1.0, 1.0], [3.0, 3.0]])   # Dense gives [[2, 2], [6, 6]]: mean 4
    loss = tf.reduce_mean(tf.square(model(x, training=True)))
    # model.updates also has the updates of the call on the Input placeholder (as TF's Keras):
    # run those of this call.
    assert len(model.updates) == 4 and len(model.get_updates_for(x)) == 2
    step = tf.train.get_or_create_global_step()
    with tf.control_dependencies(model.get_updates_for(x)):
        train = tf.train.GradientDescentOptimizer(0.0).minimize(loss, global_step=step)
    with tf.train.MonitoredTrainingSession() as sess:
        for _ in range(2):
            sess.run(train)
        moving_mean = sess.run(model.layers[1].moving_mean)
    np.testing.assert_allclose(moving_mean, [3.0, 3.0], rtol=1e-6)   # 0 -> 2 -> 3
