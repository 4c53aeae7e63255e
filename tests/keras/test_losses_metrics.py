"""tf.keras.losses (Loss objects, reductions, sample weights) and tf.keras.metrics (stateful
Metric objects): values on fixed arrays equal to TF 2.21's tf_keras (TF_USE_LEGACY_KERAS=1,
graph mode), the numbers below; to 1e-6 (numpy's log and sums round otherwise)."""
# ruff: noqa: E501 - tables of cases and TF's numbers

import numpy as np
import pytest

import zps as tf

K = tf.keras

def arr(x):
    if isinstance(x, str):
        return DATA[x]
    return np.asarray(x, np.int64 if isinstance(x, list) and x and isinstance(np.asarray(x).flat[0], np.integer) else np.float32)
DATA = {
    "YT": np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32),
    "YP": np.array([[0.2, 0.7, 0.1], [0.5, 0.3, 0.2]], np.float32),
    "LG": np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 2.0]], np.float32),
    "YR": np.array([[0.5, 1.5, -0.3], [2.0, 0.25, 1.0]], np.float32),
    "SP": np.array([1, 0], np.int64),
    "SP2": np.array([[1], [2]], np.int64),
    "BT": np.array([[0.0], [1.0], [1.0], [0.0], [1.0], [0.0]], np.float32),
    "BP": np.array([[0.1], [0.8], [0.4], [0.6], [0.95], [0.3]], np.float32),
    "BT2": np.array([[1.0], [1.0], [0.0], [0.0]], np.float32),
    "BP2": np.array([[0.55], [0.2], [0.7], [0.05]], np.float32),
    "W2": np.array([0.3, 0.7], np.float32),
    "W6": np.array([1.0, 2.0, 0.5, 1.0, 0.0, 3.0], np.float32),
    "P4": np.array([[0.1, 0.5, 0.3, 0.1], [0.6, 0.1, 0.2, 0.1], [0.25, 0.25, 0.3, 0.2]], np.float32),
    "T4": np.array([[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]], np.float32),
    "S4": np.array([2, 1, 0], np.int64),
    "C1": np.array([0, 1, 2, 2, 1, 0], np.int64),
    "C2": np.array([0, 2, 2, 1, 1, 1], np.int64),
    "NZ": np.array([[1.0, 2.0, 4.0], [2.0, 0.5, 1.0]], np.float32),
}
ALL = ["MeanSquaredError", "MeanAbsoluteError", "MeanSquaredLogarithmicError",
       "BinaryCrossentropy", "CategoricalCrossentropy", "Hinge", "SquaredHinge",
       "CategoricalHinge", "LogCosh", "KLDivergence", "Poisson", "CosineSimilarity", "Huber"]
LOSS_CASES = []
for c in ALL:
    LOSS_CASES.append((c, {}, ["YT", "YP"], {}))
    LOSS_CASES.append((c, {}, ["YT", "YP"], {"sample_weight": "W2"}))
LOSS_CASES += [
    ("MeanAbsolutePercentageError", {}, ["YR", "YP"], {}),
    ("MeanSquaredError", {"reduction": "none"}, ["YT", "YR"], {}),
    ("MeanSquaredError", {"reduction": "sum"}, ["YT", "YR"], {"sample_weight": "W2"}),
    ("LogCosh", {}, ["YT", "YR"], {}),
    ("Huber", {"delta": 0.3}, ["YT", "YR"], {}),
    ("Hinge", {}, ["YT", "LG"], {}),
    ("CategoricalHinge", {}, ["YT", "LG"], {}),
    ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1}, ["YT", "LG"], {}),
    ("BinaryCrossentropy", {"label_smoothing": 0.2}, ["YT", "YP"], {}),
    ("BinaryCrossentropy", {}, ["YT", "LG"], {"wrap": "sigmoid"}),
    ("CategoricalCrossentropy", {"from_logits": True}, ["YT", "LG"], {}),
    ("CategoricalCrossentropy", {"label_smoothing": 0.2}, ["YT", "YP"], {}),
    ("CategoricalCrossentropy", {}, ["YT", "LG"], {"wrap": "softmax"}),
    ("SparseCategoricalCrossentropy", {}, ["SP", "YP"], {}),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, ["SP2", "LG"], {"sample_weight": "W2"}),
    ("SparseCategoricalCrossentropy", {}, ["SP", "LG"], {"wrap": "softmax"}),
    ("CosineSimilarity", {"axis": 0}, ["YT", "YR"], {}),
    ("KLDivergence", {"reduction": "sum_over_batch_size"}, ["YP", "YT"], {}),
    ("Poisson", {}, ["YP", "YT"], {"sample_weight": "W2"}),
]
LOSS_FN_CASES = [
    ("logcosh", {}, ["YT", "YR"]), ("categorical_hinge", {}, ["YT", "LG"]),
    ("huber", {"delta": 0.3}, ["YT", "YR"]), ("mean_absolute_percentage_error", {}, ["YR", "YP"]),
    ("cosine_similarity", {}, ["YT", "YR"]), ("kld", {}, ["YT", "YP"]),
    ("binary_crossentropy", {}, ["YT", "YP"]), ("msle", {}, ["YT", "YR"]),
]
METRIC_CASES = [
    ("Mean", {}, [[["YR"]], [["YP"], "W2"]]),
    ("Sum", {}, [[["YR"]], [["YP"], "W2"]]),
    ("Accuracy", {}, [[["SP", "SP"]], [[[1, 2], [1, 1]]]]),
    ("BinaryAccuracy", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("BinaryAccuracy", {"threshold": 0.7}, [[["BT", "BP"], "W6"]]),
    ("CategoricalAccuracy", {}, [[["YT", "YP"]], [["T4", "P4"]]]),
    ("SparseCategoricalAccuracy", {}, [[["SP", "YP"]], [["S4", "P4"]]]),
    ("TopKCategoricalAccuracy", {"k": 2}, [[["T4", "P4"]], [["YT", "LG"]]]),
    ("SparseTopKCategoricalAccuracy", {"k": 2}, [[["S4", "P4"]]]),
    ("MeanSquaredError", {}, [[["YT", "YR"]], [["YT", "YP"], "W2"]]),
    ("RootMeanSquaredError", {}, [[["YT", "YR"]], [["YT", "YP"], "W2"]]),
    ("MeanAbsoluteError", {}, [[["YT", "YR"]]]),
    ("MeanAbsolutePercentageError", {}, [[["YR", "YP"]]]),
    ("MeanSquaredLogarithmicError", {}, [[["YT", "YR"]]]),
    ("BinaryCrossentropy", {}, [[["BT", "BP"]]]),
    ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1}, [[["YT", "LG"]]]),
    ("CategoricalCrossentropy", {}, [[["YT", "YP"]], [["T4", "P4"]]]),
    ("SparseCategoricalCrossentropy", {}, [[["SP", "YP"]], [["S4", "P4"]]]),
    ("Hinge", {}, [[["YT", "LG"]]]), ("SquaredHinge", {}, [[["YT", "LG"]]]),
    ("CategoricalHinge", {}, [[["YT", "LG"]]]), ("KLDivergence", {}, [[["YT", "YP"]]]),
    ("Poisson", {}, [[["YT", "YP"]], [["YP", "YT"], "W2"]]), ("LogCoshError", {}, [[["YT", "YR"]]]),
    ("CosineSimilarity", {}, [[["YT", "YR"]]]),
    ("TruePositives", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("FalsePositives", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("TrueNegatives", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("FalseNegatives", {"thresholds": [0.3, 0.7]}, [[["BT", "BP"], "W6"], [["BT2", "BP2"]]]),
    ("Precision", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("Precision", {"thresholds": [0.2, 0.5, 0.9]}, [[["BT", "BP"], "W6"]]),
    ("Recall", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("Recall", {"thresholds": [0.2, 0.5, 0.9]}, [[["BT", "BP"], "W6"]]),
    ("AUC", {}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("AUC", {"num_thresholds": 5}, [[["BT", "BP"], "W6"]]),
    ("AUC", {"curve": "PR"}, [[["BT", "BP"]], [["BT2", "BP2"]]]),
    ("AUC", {"curve": "PR", "num_thresholds": 7}, [[["BT", "BP"], "W6"]]),
    ("AUC", {"summation_method": "minoring", "num_thresholds": 10}, [[["BT", "BP"]]]),
    ("AUC", {"curve": "PR", "summation_method": "majoring", "num_thresholds": 10}, [[["BT", "BP"]]]),
    ("MeanIoU", {"num_classes": 3}, [[["C1", "C2"]], [["C2", "C1"], "W6"]]),
    ("MeanIoU", {"num_classes": 4}, [[["C1", "C2"]]]),
    ("MeanRelativeError", {"normalizer": "NZ"}, [[["YT", "YR"]], [["YT", "YP"], "W2"]]),
    ("MeanTensor", {}, [[["YR"]], [["YP"], "W2"], [["LG"]]]),
]

# TF's values, in the order of the cases above.
TF_LOSSES = [0.08666666597127914, 0.05133333057165146, 0.2666666805744171, 0.14666667580604553, 0.04226243123412132,
 0.025001198053359985, 0.32635727524757385, 0.18277151882648468, 0.5249110460281372, 0.29610276222229004,
 0.9333332777023315, 0.47999998927116394, 1.0199999809265137, 0.531333327293396, 0.6499999761581421,
 0.35500001907348633, 0.042253971099853516, 0.024964407086372375, 0.524908185005188, 0.29610130190849304,
 0.5083036422729492, 0.2653675377368927, -0.8818432688713074, -0.42677441239356995, 0.04333333298563957,
 0.02566666528582573, 70.27777862548828, [0.1966666728258133, 0.6875], 0.5402500033378601,
 0.19717685878276825, 0.1327083259820938, 1.0333333015441895, 1.25, 0.8248019218444824,
 0.437430739402771, 0.8181352615356445, 1.0646040439605713, 0.6791040897369385, 1.0646040439605713,
 0.5249110460281372, 0.1504203975200653, 1.0646040439605713, -0.6521788239479065, 5.531502723693848,
 1.3486603498458862]
TF_LOSS_FNS = [[0.09485659748315811, 0.299497127532959], [0.0, 2.5], [0.08500000089406967, 0.18041665852069855],
 [82.22222137451172, 58.33333206176758], [-0.9320546388626099, -0.8888888955116272],
 [0.35667213797569275, 0.6931442618370056], [0.2283928543329239, 0.4243216812610626],
 [0.0713982954621315, 0.23154926300048828]]
TF_METRICS = [0.6611111164093018, 5.949999809265137, 0.75, 0.6000000238418579, 0.9333333373069763, 0.4000000059604645,
 0.4000000059604645, 0.800000011920929, 0.6666666865348816, 0.32894444465637207, 0.5735368132591248,
 0.5916666388511658, 70.27777862548828, 0.1514737755060196, 0.4281754493713379, 0.8248019218444824,
 1.1885349750518799, 1.1885349750518799, 1.0333333015441895, 2.2899999618530273, 1.25, 0.524908185005188,
 1.2379759550094604, 0.19717685878276825, 0.9104717969894409, 3.0, 2.0, 3.0, [1.0, 2.5],
 0.6000000238418579, [0.38461539149284363, 0.6666666865348816, 0.0], 0.6000000238418579,
 [1.0, 0.800000011920929, 0.0], 0.7199999690055847, 0.9000000357627869, 0.7576950788497925,
 0.9383397102355957, 0.8888888359069824, 0.9166666269302368, 0.22136752307415009, 0.3611111342906952,
 0.4080555737018585,
 [[0.678260862827301, 1.6130435466766357, -0.552173912525177],
  [1.0555554628372192, 0.05925925821065903, 1.1629629135131836]]]


def _run(fetch):
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        return sess.run(fetch)


def _close(got, expected):
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(expected, np.float32),
                               rtol=1e-6, atol=0)


@pytest.mark.parametrize("index", range(len(LOSS_CASES)),
                         ids=["%d-%s" % (i, c[0]) for i, c in enumerate(LOSS_CASES)])
def test_loss_objects_equal_tf_keras(index):
    cls, kwargs, args, call = LOSS_CASES[index]
    with tf.Graph().as_default():
        inputs = [tf.constant(arr(x)) for x in args]
        if call.get("wrap"):   # a softmax/sigmoid output: Keras takes its logits back
            inputs[1] = getattr(tf.nn, call["wrap"])(inputs[1])
        weight = call.get("sample_weight")
        loss = getattr(K.losses, cls)(**kwargs)(
            *inputs, sample_weight=None if weight is None else arr(weight))
        _close(_run(loss), TF_LOSSES[index])


@pytest.mark.parametrize("index", range(len(LOSS_FN_CASES)),
                         ids=[c[0] for c in LOSS_FN_CASES])
def test_loss_functions_equal_tf_keras(index):
    fn, kwargs, args = LOSS_FN_CASES[index]
    with tf.Graph().as_default():
        _close(_run(getattr(K.losses, fn)(*[tf.constant(arr(x)) for x in args], **kwargs)),
               TF_LOSS_FNS[index])


@pytest.mark.parametrize("index", range(len(METRIC_CASES)),
                         ids=["%d-%s" % (i, c[0]) for i, c in enumerate(METRIC_CASES)])
def test_metrics_equal_tf_keras(index):
    cls, kwargs, batches = METRIC_CASES[index]
    with tf.Graph().as_default():
        metric = getattr(K.metrics, cls)(**{k: arr(v) if k == "normalizer" else v
                                            for k, v in kwargs.items()})
        updates = [metric.update_state(*[tf.constant(arr(x)) for x in batch[0]],
                                       **({"sample_weight": arr(batch[1])} if len(batch) > 1
                                          else {}))
                   for batch in batches]
        result = metric.result()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for update in updates:
                sess.run(update)
            _close(sess.run(result), TF_METRICS[index])


def test_loss_get_serialize_deserialize():
    assert K.losses.get("mse") is K.losses.mean_squared_error
    assert K.losses.get("logcosh") is K.losses.logcosh
    obj = K.losses.get("MeanSquaredError")
    assert isinstance(obj, K.losses.MeanSquaredError) and obj.name == "mean_squared_error"
    bce = K.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1,
                                      reduction=K.losses.Reduction.SUM)
    config = K.losses.serialize(bce)
    assert config == {"class_name": "BinaryCrossentropy", "config": {
        "from_logits": True, "label_smoothing": 0.1, "reduction": "sum",
        "name": "binary_crossentropy"}}
    again = K.losses.deserialize(config)
    assert again.get_config() == bce.get_config()
    assert K.losses.serialize(K.losses.categorical_hinge) == "categorical_hinge"
    assert K.losses.Huber(0.5).get_config()["delta"] == 0.5
    with pytest.raises(ValueError, match="Unknown loss function: 'nope'"):
        K.losses.get("nope")
    with pytest.raises(ValueError, match="Invalid Reduction Key 'mean'"):
        K.losses.MeanSquaredError(reduction="mean")
    assert set(K.losses.Reduction.all()) == {"auto", "none", "sum", "sum_over_batch_size"}


def test_metric_call_reset_and_config():
    with tf.Graph().as_default():
        mean = K.metrics.Mean()
        value = mean([1.0, 2.0, 3.0])
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            tf.keras.backend.set_session(sess)
            assert sess.run(value) == 2.0
            assert sess.run(value) == 2.0   # a second batch of the same values
            assert sess.run(mean.variables[1]) == 6.0
            mean.reset_states()
            assert sess.run(mean.result()) == 0.0
            tf.keras.backend.set_session(None)
        assert [v.op.name for v in mean.variables] == ["mean/total", "mean/count"]
        assert set(mean.variables) <= set(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES))
        assert not tf.global_variables()
    auc = K.metrics.AUC(num_thresholds=3, curve="PR")
    assert auc.thresholds == [-1e-7, 0.5, 1.0 + 1e-7]
    assert K.metrics.deserialize(K.metrics.serialize(auc)).get_config() == auc.get_config()
    acc = K.metrics.get("TopKCategoricalAccuracy")
    assert isinstance(acc, K.metrics.TopKCategoricalAccuracy) and acc.get_config()["k"] == 5
    assert K.metrics.get("acc") is K.metrics.get("accuracy")   # compile's "acc" / "accuracy"
    assert K.metrics.get("categorical_accuracy") is K.metrics.categorical_accuracy
    with pytest.raises(ValueError, match="Threshold values must be in"):
        K.metrics.Precision(thresholds=[0.5, 1.5])
    with pytest.raises(NotImplementedError, match="top_k or class_id"):
        K.metrics.Recall(top_k=2)
    with pytest.raises(ValueError, match="Unknown metric function: 'f1'"):
        K.metrics.get("f1")


def test_metric_functions_per_example():
    with tf.Graph().as_default():
        got = _run([K.metrics.binary_accuracy(arr("BT2"), arr("BP2")),
                    K.metrics.categorical_accuracy(arr("T4"), arr("P4")),
                    K.metrics.sparse_categorical_accuracy(arr("SP2"), arr("YP")),
                    K.metrics.top_k_categorical_accuracy(arr("T4"), arr("P4"), k=2),
                    K.metrics.sparse_top_k_categorical_accuracy(arr("S4"), arr("P4"), k=1)])
    assert [g.tolist() for g in got] == [[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0],
                                         [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]


def test_sensitivity_specificity_as_tf_1_15():
    # TF 1.15's rule: the rate at the first threshold whose other rate is closest to the value.
    # thresholds [0, .25, .5, .75, 1]: tp [3 3 2 1 0], tn [1 1 2 3 3], fp [2 2 1 0 0],
    # fn [0 0 1 2 3]; specificities [1/3 1/3 2/3 1 1] -> index 0 for 0.5 -> sensitivity 1.
    y, p = [0.0, 0.0, 1.0, 1.0, 0.0, 1.0], [0.0, 0.5, 0.3, 0.9, 0.7, 0.6]
    with tf.Graph().as_default():
        metrics = [K.metrics.SensitivityAtSpecificity(0.4, num_thresholds=1),
                   K.metrics.SpecificityAtSensitivity(0.8, num_thresholds=1),
                   K.metrics.SensitivityAtSpecificity(0.5, num_thresholds=5),
                   K.metrics.SpecificityAtSensitivity(0.6, num_thresholds=5)]
        got = _run([m(y, p) for m in metrics])
    np.testing.assert_allclose(got, [2 / 3, 2 / 3, 1.0, 2 / 3], rtol=1e-6)
    assert metrics[2].get_config() == {"num_thresholds": 5, "specificity": 0.5,
                                       "name": "sensitivity_at_specificity_1", "dtype": "float32"}
    with pytest.raises(ValueError, match="`sensitivity` must be in the range"):
        K.metrics.SpecificityAtSensitivity(1.5)
