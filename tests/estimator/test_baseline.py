"""BaselineClassifier / BaselineRegressor: the learned bias against numpy's gradient descent on
the summed loss (TF1's v1 Reduction.SUM), and its limits (log-odds, class frequencies, means);
and the estimators that take a head (Baseline/Linear/DNN/DNNLinearCombinedEstimator)."""

import numpy as np
import pytest

import zps as tf
from zps.estimator.canned import head as head_lib

STEPS = 60


def _input_fn(features, labels, batch=None):
    def input_fn():
        n = len(labels)
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch or n).repeat()
    return input_fn


def _sgd(learning_rate):
    return tf.train.GradientDescentOptimizer(learning_rate)


@pytest.fixture(autouse=True)
def _local(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def test_binary_classifier_learns_the_log_odds(tmp_path):
    labels = np.array([[1], [0], [1], [1], [0], [1], [1], [0]], np.int64)   # p = 5/8
    x = {"x": np.zeros([8, 1], np.float32)}
    est = tf.estimator.BaselineClassifier(str(tmp_path), optimizer=_sgd(0.25))
    est.train(_input_fn(x, labels), steps=STEPS)
    b, p, n = 0.0, labels.mean(), len(labels)
    for _ in range(STEPS):          # d/db sum(sigmoid_xent) = n * (sigmoid(b) - p)
        b -= 0.25 * n * (1 / (1 + np.exp(-b)) - p)
    bias = est.get_variable_value("baseline/bias")
    assert bias.shape == (1,)
    np.testing.assert_allclose(bias, [b], rtol=1e-5)
    np.testing.assert_allclose(bias, [np.log(p / (1 - p))], rtol=1e-4)     # converged
    metrics = est.evaluate(_input_fn(x, labels), steps=1)
    np.testing.assert_allclose(metrics["prediction/mean"], p, rtol=1e-4)
    np.testing.assert_allclose(metrics["label/mean"], p, rtol=1e-6)
    np.testing.assert_allclose(metrics["accuracy"], p, rtol=1e-6)          # always class 1
    np.testing.assert_allclose(metrics["loss"], -n * (p * np.log(p) + (1 - p) * np.log(1 - p)),
                               rtol=1e-4)
    prediction = next(est.predict(lambda: tf.data.Dataset.from_tensor_slices(
        {"x": np.full([2, 1], 7.0, np.float32)}).batch(2)))
    np.testing.assert_allclose(prediction["logistic"], [p], rtol=1e-4)
    assert prediction["class_ids"].tolist() == [1]


def test_multi_class_classifier_learns_the_class_frequencies(tmp_path):
    labels = np.array([0, 2, 2, 1, 2, 0], np.int64)
    x = {"x": np.zeros([6], np.float32)}
    est = tf.estimator.BaselineClassifier(str(tmp_path), n_classes=3, optimizer=_sgd(0.25))
    est.train(_input_fn(x, labels), steps=STEPS)
    b, freq = np.zeros(3), np.bincount(labels) / len(labels)
    for _ in range(STEPS):          # d/db sum(softmax_xent) = n * (softmax(b) - freq)
        b -= 0.25 * len(labels) * (np.exp(b) / np.exp(b).sum() - freq)
    bias = est.get_variable_value("baseline/bias")
    np.testing.assert_allclose(bias, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.exp(bias) / np.exp(bias).sum(), [2 / 6, 1 / 6, 3 / 6],
                               rtol=1e-3)


def test_regressor_learns_the_weighted_mean_of_each_label(tmp_path):
    labels = np.array([[1.0, -2.0], [3.0, 0.0], [8.0, 4.0]], np.float32)
    weights = np.array([1.0, 2.0, 1.0], np.float32)
    features = {"x": np.zeros([3, 5], np.float32), "w": weights}
    est = tf.estimator.BaselineRegressor(str(tmp_path), label_dimension=2, weight_column="w",
                                         optimizer=_sgd(0.1))
    est.train(_input_fn(features, labels), steps=STEPS)
    b = np.zeros(2)
    for _ in range(STEPS):          # d/db sum(w * (b - y)**2) = 2 * sum(w * (b - y))
        b -= 0.1 * 2 * (weights[:, None] * (b - labels)).sum(0)
    bias = est.get_variable_value("baseline/bias")
    np.testing.assert_allclose(bias, b, rtol=1e-5)
    np.testing.assert_allclose(bias, (weights @ labels) / weights.sum(), rtol=1e-4)   # 3.75, 0.5


def test_default_ftrl_first_step(tmp_path):
    """TF1's default: FTRL, learning rate 0.3, initial accumulator 0.1."""
    labels = np.array([[1.0], [2.0], [6.0]], np.float32)
    est = tf.estimator.BaselineRegressor(str(tmp_path))
    est.train(_input_fn({"x": np.zeros([3], np.float32)}, labels), steps=1)
    g = 2 * (0.0 - labels).sum()                        # -18
    np.testing.assert_allclose(est.get_variable_value("baseline/bias"),
                               [-g * 0.3 / np.sqrt(0.1 + g * g)], rtol=1e-5)


def test_batch_sizes_of_the_features_must_agree(tmp_path):
    est = tf.estimator.BaselineRegressor(str(tmp_path), optimizer=_sgd(0.1))

    def input_fn():
        return {"a": tf.zeros([3]), "b": tf.zeros([2])}, tf.zeros([3, 1])
    with pytest.raises(tf.errors.InvalidArgumentError):
        est.train(input_fn, steps=1)
    est = tf.estimator.BaselineRegressor(str(tmp_path / "w"), weight_column="w")
    with pytest.raises(ValueError, match="no feature"):
        est.train(lambda: ({"w": tf.ones([3])}, tf.zeros([3, 1])), steps=1)
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.BaselineClassifier(n_classes=1)


# -- the estimators that take a head (TF1's tf.estimator.*Estimator with a contrib head) --------

def test_baseline_estimator_with_a_mean_reduced_regression_head(tmp_path):
    labels = np.array([[1.0], [2.0], [6.0]], np.float32)
    head = head_lib.regression_head()                   # Reduction.SUM_OVER_BATCH_SIZE
    est = tf.estimator.BaselineEstimator(head, str(tmp_path), optimizer=_sgd(0.25))
    est.train(_input_fn({"x": np.zeros([3], np.float32)}, labels), steps=5)
    b = 0.0
    for _ in range(5):              # d/db mean((b - y)**2) = 2 * (b - mean(y))
        b -= 0.25 * 2 * (b - labels.mean())
    np.testing.assert_allclose(est.get_variable_value("baseline/bias"), [b], rtol=1e-6)


def test_baseline_estimator_with_a_multi_label_head_learns_each_class_frequency(tmp_path):
    labels = np.array([[1, 0, 1], [1, 0, 0], [1, 1, 0], [0, 0, 0]], np.int64)
    x = {"x": np.zeros([4], np.float32)}
    est = tf.estimator.BaselineEstimator(head_lib.multi_label_head(3), str(tmp_path),
                                         optimizer=_sgd(3.0))
    est.train(_input_fn(x, labels), steps=STEPS)
    b, p = np.zeros(3), labels.mean(0)          # 0.75, 0.25, 0.25
    for _ in range(STEPS):          # d/db mean_examples(mean_classes(xent)) = (sigmoid(b) - p) / 3
        b -= 3.0 * (1 / (1 + np.exp(-b)) - p) / 3
    bias = est.get_variable_value("baseline/bias")
    np.testing.assert_allclose(bias, b, rtol=1e-5)
    np.testing.assert_allclose(bias, np.log(p / (1 - p)), rtol=1e-4)
    xent = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean()
    metrics = est.evaluate(_input_fn(x, labels), steps=1)
    np.testing.assert_allclose(metrics["average_loss"], xent, rtol=1e-4)
    np.testing.assert_allclose(metrics["loss"], xent, rtol=1e-4)
    prediction = next(est.predict(lambda: tf.data.Dataset.from_tensor_slices(x).batch(4)))
    np.testing.assert_allclose(prediction["probabilities"], p, rtol=1e-4)


def _same_variables(a, b):
    names = a.get_variable_names()
    assert names == b.get_variable_names()
    for name in names:
        np.testing.assert_array_equal(a.get_variable_value(name), b.get_variable_value(name))


def test_head_estimators_match_the_classifiers_and_regressors(tmp_path):
    rng = np.random.RandomState(0)
    x = {"x": rng.randn(8, 2).astype(np.float32)}
    classes = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.int64)
    binary = (classes > 0).astype(np.int64)
    targets = x["x"].sum(1, keepdims=True)
    column = [tf.feature_column.numeric_column("x", shape=[2])]
    config = tf.estimator.RunConfig(tf_random_seed=7)
    mean = tf.losses.Reduction.SUM_OVER_BATCH_SIZE
    pairs = [
        (tf.estimator.LinearEstimator(head_lib.binary_classification_head(), column,
                                      str(tmp_path / "a"), optimizer="SGD"),
         tf.estimator.LinearClassifier(column, str(tmp_path / "b"), optimizer="SGD",
                                       loss_reduction=mean), binary),
        (tf.estimator.DNNEstimator(head_lib.multi_class_head(3), [4], column,
                                   str(tmp_path / "c"), config=config),
         tf.estimator.DNNClassifier([4], column, str(tmp_path / "d"), n_classes=3,
                                    config=config, loss_reduction=mean), classes),
        (tf.estimator.DNNLinearCombinedEstimator(
            head_lib.regression_head(), str(tmp_path / "e"), linear_feature_columns=column,
            dnn_feature_columns=column, dnn_hidden_units=[3], config=config),
         tf.estimator.DNNLinearCombinedRegressor(
             str(tmp_path / "f"), linear_feature_columns=column, dnn_feature_columns=column,
             dnn_hidden_units=[3], config=config, loss_reduction=mean), targets),
    ]
    for with_head, canned, labels in pairs:
        with_head.train(_input_fn(x, labels), steps=3)
        canned.train(_input_fn(x, labels), steps=3)
        _same_variables(with_head, canned)


def test_head_errors():
    with pytest.raises(TypeError, match="head must be a head"):
        tf.estimator.BaselineEstimator("regression")
    with pytest.raises(NotImplementedError, match="do not support label_vocabulary, name"):
        head_lib.binary_classification_head(label_vocabulary=["a", "b"], name="h")
    with pytest.raises(ValueError, match="n_classes must be > 2"):
        head_lib.multi_class_head(2)
    with pytest.raises(ValueError, match="n_classes must be > 1 for multi-label"):
        head_lib.multi_label_head(1)


def test_contrib_estimator_heads_drive_the_head_taking_estimators():
    # TF 1.15 programs write tf.estimator.LinearEstimator(head=tf.contrib.estimator.*_head(...)).
    assert tf.contrib.estimator.add_metrics is tf.estimator.add_metrics
    assert tf.contrib.estimator.DNNEstimator is tf.estimator.DNNEstimator
    head = tf.contrib.estimator.regression_head()
    est = tf.estimator.LinearEstimator(head=head, feature_columns=[
        tf.feature_column.numeric_column("x")])
    assert isinstance(est, tf.estimator.Estimator)
