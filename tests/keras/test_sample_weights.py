"""``sample_weight``, ``class_weight``, ``sample_weight_mode="temporal"`` and ``weighted_metrics``
in tf.keras's fit / evaluate / train_on_batch / test_on_batch / fit_generator / evaluate_generator
(zps/keras/training.py), against tf_keras.

``TF`` holds tf_keras's numbers (TF 2.21, ``TF_USE_LEGACY_KERAS=1``, ``disable_v2_behavior()``:
the graph-mode Keras of TF 1.15) for the scenarios below, run there with the same data, the same
initial weights (``set_weights``) and ``keras.optimizers.legacy.SGD``. For the masked outputs
(``masked``) tf_keras ran with TF 1.15's rule, ``sample_weight *= mask`` and the loss a mean over
all steps: its ``losses_utils.apply_valid_mask`` (Keras 2's rescaling to the valid steps) was
replaced by ``losses_utils.apply_mask``.
"""

import numpy as np
import pytest

import zps as tf

K = tf.keras


# The scenarios: the same code ran on tf_keras (``keras`` is tf_keras there, zps's tf.keras here).

def data():
    r = np.random.RandomState(0)
    x = r.randn(10, 3).astype(np.float32)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1, 0, 1])
    y = np.eye(3, dtype=np.float32)[labels]
    sw = r.uniform(0.0, 2.0, 10).astype(np.float32)
    sw[3] = 0.0
    xs = r.randn(6, 4, 2).astype(np.float32)
    ys = r.randn(6, 4, 1).astype(np.float32)
    tw = r.uniform(0.0, 1.0, (6, 4)).astype(np.float32)
    tw[:, 3] = 0.0
    return x, labels, y, sw, xs, ys, tw


def init(model, seed=1):
    r = np.random.RandomState(seed)
    model.set_weights([r.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                       for w in model.get_weights()])


def dense(keras):
    model = keras.Sequential([keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
                              keras.layers.Dense(3, activation="softmax")])
    init(model)
    return model


def sgd(keras, lr):
    return keras.optimizers.SGD(lr)


def r(v):
    if isinstance(v, list):
        return [r(a) for a in v]
    if isinstance(v, dict):
        return {k: r(a) for k, a in sorted(v.items())}
    return np.asarray(v).tolist()


def fit_weights(keras):
    x, labels, y, sw, *_ = data()
    model = dense(keras)
    model.compile(sgd(keras, 0.1), "categorical_crossentropy", metrics=["acc"],
                  weighted_metrics=["acc", "mae"])
    h = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0, sample_weight=sw,
                  class_weight={0: 1.0, 1: 3.0, 2: 0.5}, validation_data=(x[:6], y[:6], sw[:6]))
    ev = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0)
    tr = model.train_on_batch(x[:5], y[:5], sample_weight=sw[:5], class_weight={0: 2.0, 1: 1.0, 2: 1.0})
    te = model.test_on_batch(x[5:], y[5:], sample_weight=sw[5:])
    return {"names": model.metrics_names, "history": r(h.history), "evaluate": r(ev),
            "train_on_batch": r(tr), "test_on_batch": r(te), "weights": r(model.get_weights())}


def sparse_class_weight(keras):
    x, labels, y, sw, *_ = data()
    model = dense(keras)
    model.compile(sgd(keras, 0.2), "sparse_categorical_crossentropy",
                  metrics=["acc"])
    h = model.fit(x, labels, batch_size=3, epochs=2, shuffle=False, verbose=0,
                  class_weight={0: 0.25, 1: 2.0, 2: 1.0}, validation_split=0.3)
    return {"history": r(h.history), "weights": r(model.get_weights())}


def temporal(keras):
    *_, xs, ys, tw = data()
    model = keras.Sequential([keras.layers.Dense(3, activation="tanh", input_shape=(4, 2)),
                              keras.layers.Dense(1)])
    init(model, 2)
    model.compile(sgd(keras, 0.05), "mse", sample_weight_mode="temporal",
                  weighted_metrics=["mae"])
    h = model.fit(xs, ys, batch_size=4, epochs=3, shuffle=False, verbose=0, sample_weight=tw)
    ev = model.evaluate(xs, ys, sample_weight=tw, verbose=0)
    ev_plain = model.evaluate(xs, ys, verbose=0)
    return {"history": r(h.history), "evaluate": r(ev), "evaluate_unweighted": r(ev_plain),
            "weights": r(model.get_weights())}


def two_outputs(keras):
    x, labels, y, sw, *_ = data()
    inp = keras.Input((3,))
    h1 = keras.layers.Dense(4, activation="tanh", name="hidden")(inp)
    a = keras.layers.Dense(3, activation="softmax", name="cls")(h1)
    b = keras.layers.Dense(1, name="reg")(h1)
    model = keras.Model(inp, [a, b])
    init(model, 3)
    model.compile(sgd(keras, 0.1), {"cls": "categorical_crossentropy", "reg": "mse"},
                  loss_weights={"cls": 1.0, "reg": 0.5}, weighted_metrics={"reg": ["mae"]})
    yr = x[:, :1] * 2.0
    h = model.fit(x, {"cls": y, "reg": yr}, batch_size=5, epochs=2, shuffle=False, verbose=0,
                  sample_weight={"reg": sw}, class_weight={"cls": {0: 2.0, 1: 1.0, 2: 0.5}})
    ev = model.evaluate(x, [y, yr], sample_weight=[sw, None], verbose=0)
    return {"names": model.metrics_names, "history": r(h.history), "evaluate": r(ev),
            "weights": r(model.get_weights())}


def generators(keras):
    x, labels, y, sw, *_ = data()
    model = dense(keras)
    model.compile(sgd(keras, 0.1), "categorical_crossentropy",
                  weighted_metrics=["acc"])

    def gen():
        while True:
            for s in (slice(0, 4), slice(4, 8), slice(8, 10)):
                yield x[s], y[s], sw[s]
    h = model.fit_generator(gen(), steps_per_epoch=3, epochs=2, verbose=0,
                            class_weight={0: 1.0, 1: 2.0, 2: 1.0},
                            validation_data=gen(), validation_steps=3)
    ev = model.evaluate_generator(gen(), steps=3)
    return {"history": r(h.history), "evaluate": r(ev), "weights": r(model.get_weights())}



def masked(keras):
    *_, xs, ys, tw = data()
    xs = xs.copy()
    xs[0, 2:] = 0.0
    xs[3, 1:] = 0.0
    sw = np.array([1.0, 0.5, 2.0, 1.5, 0.0, 1.0], np.float32)
    out = {}
    for mode, w in (("temporal", tw), (None, sw), ("none", None)):
        model = keras.Sequential([keras.layers.Masking(0.0, input_shape=(4, 2)),
                                  keras.layers.SimpleRNN(3, return_sequences=True),
                                  keras.layers.Dense(1)])
        init(model, 4)
        model.compile(sgd(keras, 0.1), "mse", sample_weight_mode=None if mode == "none" else mode,
                      metrics=["mae"], weighted_metrics=["mae"])
        h = model.fit(xs, ys, batch_size=4, epochs=2, shuffle=False, verbose=0,
                      sample_weight=w)
        ev = model.evaluate(xs, ys, sample_weight=w, verbose=0)
        out[str(mode)] = {"history": r(h.history), "evaluate": r(ev),
                          "weights": r(model.get_weights())}
    return out



TF = {'fit_weights': {'names': ['loss', 'acc', 'weighted_acc', 'weighted_mean_absolute_error'],
                      'history': {'acc': [0.400000006, 0.400000006, 0.400000006],
                                  'loss': [1.27556424, 1.15133202, 1.0558243],
                                  'val_acc': [0.333333343, 0.333333343, 0.333333343],
                                  'val_loss': [1.04432595, 0.998049915, 0.954898298],
                                  'val_weighted_acc': [0.248573452, 0.248573452, 0.248573452],
                                  'val_weighted_mean_absolute_error': [0.439409941,
                                                                       0.423675627,
                                                                       0.408388436],
                                  'weighted_acc': [0.649809301, 0.649809301, 0.649809301],
                                  'weighted_mean_absolute_error': [0.391495287,
                                                                   0.362692237,
                                                                   0.339175373]},
                      'evaluate': [0.891627491, 0.400000006, 0.335181653, 0.398887962],
                      'train_on_batch': [1.83080542, 0.400000006, 0.247400597, 0.409823656],
                      'test_on_batch': [0.690340281, 0.400000006, 0.507225931, 0.39958176],
                      'weights': [[[-0.0425968245, 0.135207459, -0.531786919, 0.0679439828],
                                   [-0.303142697, -0.344913512, -0.318164438, -0.325985879],
                                   [-0.0916694328, -0.0722047165, -0.13550891, 0.39399609]],
                                  [-0.272210121, 0.345053852, -0.479515642, 0.280520648],
                                  [[-0.0855973214, -0.0664714873, -0.23154965],
                                   [-0.157156378, 0.173134267, 0.451129794],
                                   [-0.278388888, 0.11469315, 0.54583168],
                                   [0.510041654, -0.563676536, -0.427659541]],
                                  [-0.230092317, 0.436825097, -0.560413003]]},
      'sparse_class_weight': {'history': {'acc': [0.285714298, 0.285714298],
                                          'loss': [1.11125806, 1.00709779],
                                          'val_acc': [0.666666687, 0.666666687],
                                          'val_loss': [1.22224736, 1.24184954]},
                              'weights': [[[-0.101360813, 0.266346633, -0.465476632, -0.256322205],
                                           [-0.274997234, -0.373407453, -0.36070326, -0.178135499],
                                           [0.129726142, -0.0870276242, -0.270913839, 0.282402933]],
                                          [-0.388284385, 0.495667249, -0.377736926, 0.0374737233],
                                          [[-0.00825860538, -0.02473679, -0.350623041],
                                           [-0.358907878, 0.188840613, 0.637174845],
                                           [-0.0859232992, 0.0837941468, 0.384265155],
                                           [0.425815761, -0.370093077, -0.537017047]],
                                          [-0.507301092, 0.269234151, -0.115613379]]},
      'temporal': {'history': {'loss': [0.775791844, 0.726815939, 0.686705589],
                               'weighted_mean_absolute_error': [1.134166, 1.10790467, 1.08364999]},
                   'evaluate': [0.657340229, 1.062554],
                   'evaluate_unweighted': [1.42207038, 1.03028429],
                   'weights': [[[-0.0748730227, -0.469733715, 0.0499418527],
                                [-0.082967788, -0.0747370869, -0.169115186]],
                               [-0.339109749, 0.139519274, -0.198560014],
                               [[-0.300775349], [0.115732305], [-0.0202229433]],
                               [-0.170587301]]},
      'two_outputs': {'names': ['loss', 'cls_loss', 'reg_loss', 'reg_weighted_mean_absolute_error'],
                      'history': {'cls_loss': [1.34823608, 1.33787024],
                                  'loss': [5.3047955, 3.71978694],
                                  'reg_loss': [7.91311836, 4.76383352],
                                  'reg_weighted_mean_absolute_error': [2.51474214, 1.81812906]},
                      'evaluate': [2.58676386, 1.00540233, 3.16272283, 1.31120491],
                      'weights': [[[0.164106488, 0.56526053, 0.0507617407, -0.0230986252],
                                   [0.432099283, 0.409852415, -0.286177814, -0.361050546],
                                   [-0.41335085, -0.0341794193, -0.465371341, -0.000415594317]],
                                  [0.229913458, -0.0032677725, 0.325615346, 0.0681671202],
                                  [[-0.492947519, 0.0802502558, -0.245214283],
                                   [-0.0469048806, -0.201363519, 0.140032575],
                                   [-0.0640942305, -0.36728394, 0.0733486414],
                                   [0.308818072, -0.228307784, -0.27187407]],
                                  [0.0268134661, 0.420825481, 0.35271138],
                                  [[0.410898536], [0.739027023], [0.207353577], [-0.187834054]],
                                  [0.338334203]]},
      'generators': {'history': {'loss': [1.22339203, 1.14414555],
                                 'val_loss': [0.860867321, 0.803956568],
                                 'val_weighted_acc': [0.306010485, 0.306010485],
                                 'weighted_acc': [0.458380312, 0.458380312]},
                     'evaluate': [0.803956568, 0.306010485],
                     'weights': [[[-0.073433131, 0.18140839, -0.515522778, -0.0702103823],
                                  [-0.312621206, -0.377948791, -0.31621474, -0.240179181],
                                  [-0.0743038878, -0.0326461568, -0.129296154, 0.293235302]],
                                 [-0.299344718, 0.371320844, -0.466008604, 0.211946651],
                                 [[-0.081665881, -0.0107927267, -0.291159868],
                                  [-0.229465529, 0.215194389, 0.481378824],
                                  [-0.224757642, 0.15421541, 0.452678204],
                                  [0.434055895, -0.459834635, -0.455515593]],
                                 [-0.294996083, 0.385241181, -0.443925351]]},
      'masked': {'temporal': {'history': {'loss': [0.466619035, 0.418913007],
                                          'mean_absolute_error': [0.894212544, 0.876965582],
                                          'weighted_mean_absolute_error': [0.968349993, 0.943803906]},
                              'evaluate': [0.389397383, 0.862648427, 0.924035966],
                              'weights': [[[0.442272484, 0.0838944539, 0.472460717],
                                           [0.221238241, 0.237370685, -0.30433929]],
                                          [[0.480018616, -0.4988271, -0.24729988],
                                           [-0.044769112, 0.245909333, -0.298128545],
                                           [0.35890159, 0.508497179, -0.343348533]],
                                          [0.0152731668, -0.423837423, -0.115518086],
                                          [[-0.372289658], [0.436295837], [-0.0609629899]],
                                          [0.599867582]]},
                 'None': {'history': {'loss': [0.79359738, 0.646065573],
                                      'mean_absolute_error': [0.889206111, 0.870949805],
                                      'weighted_mean_absolute_error': [0.811489224, 0.794742584]},
                          'evaluate': [0.593807578, 0.873846948, 0.785115361],
                          'weights': [[[0.474118292, 0.0831210092, 0.4742001],
                                       [0.19910787, 0.26921466, -0.297854125]],
                                      [[0.481278777, -0.498115927, -0.250618339],
                                       [-0.0424860865, 0.253415287, -0.30224216],
                                       [0.382065594, 0.495465726, -0.338460594]],
                                      [-0.049272716, -0.386998415, -0.122986078],
                                      [[-0.383111537], [0.370051056], [-0.0571787357]],
                                      [0.741832256]]},
                 'none': {'history': {'loss': [0.930754542, 0.828547796],
                                      'mean_absolute_error': [0.891402602, 0.863824725],
                                      'weighted_mean_absolute_error': [0.891402602, 0.863824725]},
                          'evaluate': [0.78642863, 0.844370604, 0.844370604],
                          'weights': [[[0.445091426, 0.0922899991, 0.479278982],
                                       [0.18395412, 0.282300115, -0.30798611]],
                                      [[0.493113399, -0.49631384, -0.249988794],
                                       [-0.063230291, 0.250090778, -0.30632785],
                                       [0.371455342, 0.516912818, -0.339254379]],
                                      [0.00298042968, -0.396938324, -0.108954549],
                                      [[-0.337397099], [0.432805985], [-0.0719482154]],
                                      [0.66620338]]}}}


def _assert_close(got, want, path=""):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), path
        for k in want:
            _assert_close(got[k], want[k], path + "/" + k)
    elif want and isinstance(want, list) and isinstance(want[0], str):
        assert got == want, path
    elif want and isinstance(want, list) and isinstance(want[0], list) and path.endswith("weights"):
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_close(g, w, "%s/%d" % (path, i))
    else:
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=0, atol=1e-6, err_msg=path)


@pytest.mark.parametrize("scenario", [fit_weights, sparse_class_weight, temporal, two_outputs,
                                      generators, masked], ids=lambda f: f.__name__)
def test_same_numbers_as_tf_keras(scenario):
    with tf.Graph().as_default():
        _assert_close(scenario(K), TF[scenario.__name__], scenario.__name__)


def test_weights_of_one_change_nothing_and_reset_metrics():
    x, labels, y, sw, *_ = data()
    with tf.Graph().as_default():
        model = dense(K)
        model.compile(sgd(K, 0.1), "categorical_crossentropy", weighted_metrics=["acc"])
        plain = model.test_on_batch(x, y)
        assert model.test_on_batch(x, y, sample_weight=np.ones(10)) == plain
        first = model.test_on_batch(x[:4], y[:4], sample_weight=sw[:4])
        assert model.test_on_batch(x[:4], y[:4], sample_weight=sw[:4]) == first
        model.test_on_batch(x[4:], y[4:], sample_weight=sw[4:], reset_metrics=False)
        both = model.test_on_batch(x[:4], y[:4], sample_weight=sw[:4], reset_metrics=False)
        # the weighted accuracy of all ten examples: the state ran on over the two calls
        correct = np.argmax(model.predict(x), -1) == labels
        np.testing.assert_allclose(both[1], np.sum(correct * sw) / np.sum(sw), rtol=1e-6)


def test_weight_errors_say_what_was_wrong():
    x, labels, y, sw, xs, ys, tw = data()
    with tf.Graph().as_default():
        model = dense(K)
        model.compile(sgd(K, 0.1), "categorical_crossentropy")
        with pytest.raises(ValueError, match='sample_weight_mode="temporal"'):
            model.fit(x, y, sample_weight=np.ones((10, 2)), verbose=0)
        with pytest.raises(ValueError, match="sample_weight cannot be broadcast"):
            model.evaluate(x, y, sample_weight=np.ones(9), verbose=0)
        with pytest.raises(ValueError, match=r"classes \{2\} exist in the data but not in"):
            model.fit(x, y, class_weight={0: 1.0, 1: 2.0}, verbose=0)
        with pytest.raises(ValueError, match="either 2 items"):
            model.fit(x, y, validation_data=(x, y, sw, sw), verbose=0)
        with pytest.raises(ValueError, match=r"tuple \(x, y\) or \(x, y, sample_weight\)"):
            model.fit_generator(iter([(x, y, sw, sw)]), steps_per_epoch=1, verbose=0)
    with tf.Graph().as_default():
        model = K.Sequential([K.layers.Dense(1, input_shape=(4, 2))])
        model.compile(sgd(K, 0.1), "mse", sample_weight_mode="temporal")
        with pytest.raises(ValueError, match="pass a 2D sample_weight"):
            model.fit(xs, ys, sample_weight=np.ones(6), verbose=0)
        with pytest.raises(ValueError, match="3\\+ dimensional targets"):
            model.fit(xs, ys, class_weight={0: 1.0}, verbose=0)
    with tf.Graph().as_default():
        model = dense(K)
        model.compile(sgd(K, 0.1), "categorical_crossentropy", sample_weight_mode="temporal")
        with pytest.raises(ValueError, match="at least 3D"):
            model.fit(x, y, sample_weight=np.ones((10, 3)), verbose=0)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="should be None or \"temporal\". Found: 'steps'"):
            dense(K).compile(sgd(K, 0.1), "mse", sample_weight_mode={"dense_1": "steps"})
    with tf.Graph().as_default():
        inp = K.Input((3,))
        model = K.Model(inp, [K.layers.Dense(3, name="a")(inp), K.layers.Dense(1, name="b")(inp)])
        model.compile(sgd(K, 0.1), "mse")
        with pytest.raises(ValueError, match=r"Unknown entries in class_weight dictionary: \[0, 1, 2\]"):
            model.fit(x, [y, x[:, :1]], class_weight={0: 1.0, 1: 2.0, 2: 1.0}, verbose=0)
        with pytest.raises(ValueError, match="`sample_weight` was a list of 3 elements, but the model has 2"):
            model.fit(x, [y, x[:, :1]], sample_weight=[sw, sw, sw], verbose=0)
