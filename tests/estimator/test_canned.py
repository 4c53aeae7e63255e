"""Canned estimators: losses (v1: summed over the batch), metrics and predictions against numpy,
TF1's variable names, and training that learns."""

import numpy as np
import pytest

import zps as tf

RNG = np.random.RandomState(0)
X = RNG.randn(16, 2).astype(np.float32)
Y_REG = (X @ np.float32([[1.0], [-2.0]]) + 0.5).astype(np.float32)
Y_BIN = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
Y_3 = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.int64)
WEIGHTS = np.linspace(0.5, 2.0, 16).astype(np.float32)


@pytest.fixture(autouse=True)
def _no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def columns():
    return [tf.feature_column.numeric_column("x", shape=[2])]


def data(labels, batch=16, repeat=True, weights=False):
    features = {"x": X, "w": WEIGHTS} if weights else {"x": X}

    def input_fn():   # the dataset must be made in the Estimator's graph
        ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch)
        return ds.repeat() if repeat else ds
    return input_fn


def test_linear_regressor_one_sgd_step_and_metrics(tmp_path):
    est = tf.estimator.LinearRegressor(columns(), str(tmp_path), optimizer="SGD",
                                       weight_column="w")
    # One step of SGD (learning rate 0.2) on the weighted *sum* of squared errors, from zeros.
    est.train(data(Y_REG, weights=True), steps=1)
    w = est.get_variable_value("linear/linear_model/x/weights")
    b = est.get_variable_value("linear/linear_model/bias_weights")
    wy = WEIGHTS[:, None] * Y_REG
    np.testing.assert_allclose(w, 0.2 * 2 * X.T @ wy, rtol=1e-5)
    np.testing.assert_allclose(b, 0.2 * 2 * wy.sum(0), rtol=1e-5)

    results = est.evaluate(data(Y_REG, batch=8, repeat=False, weights=True))
    pred = X @ w + b
    per_example = WEIGHTS[:, None] * (pred - Y_REG) ** 2
    np.testing.assert_allclose(results["loss"], per_example.sum() / 2, rtol=1e-5)  # 2 batches
    np.testing.assert_allclose(results["average_loss"], per_example.sum() / WEIGHTS.sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(results["label/mean"], (wy.sum()) / WEIGHTS.sum(), rtol=1e-5)
    np.testing.assert_allclose(results["prediction/mean"],
                               (WEIGHTS[:, None] * pred).sum() / WEIGHTS.sum(), rtol=1e-5)
    preds = list(est.predict(data(Y_REG, repeat=False)))
    np.testing.assert_allclose(np.stack([p["predictions"] for p in preds]), pred, rtol=1e-5)


def test_linear_classifier_binary_learns_and_reports_tf_metrics(tmp_path):
    est = tf.estimator.LinearClassifier(columns(), str(tmp_path))
    est.train(data(Y_BIN), steps=30)
    results = est.evaluate(data(Y_BIN, repeat=False))
    assert sorted(results) == ["accuracy", "accuracy_baseline", "auc", "auc_precision_recall",
                               "average_loss", "global_step", "label/mean", "loss", "precision",
                               "prediction/mean", "recall"]
    preds = list(est.predict(data(Y_BIN, repeat=False)))
    classes = np.array([int(p["class_ids"][0]) for p in preds])
    true_pos = np.sum((classes == 1) & (Y_BIN == 1))
    np.testing.assert_allclose(results["accuracy"], np.mean(classes == Y_BIN), rtol=1e-6)
    np.testing.assert_allclose(results["precision"], true_pos / np.sum(classes == 1), rtol=1e-6)
    np.testing.assert_allclose(results["recall"], true_pos / np.sum(Y_BIN == 1), rtol=1e-6)
    assert results["accuracy"] >= 0.8 and results["auc"] > 0.9
    np.testing.assert_allclose(results["label/mean"], Y_BIN.mean(), rtol=1e-6)
    np.testing.assert_allclose(results["accuracy_baseline"],
                               max(Y_BIN.mean(), 1 - Y_BIN.mean()), rtol=1e-6)
    first = next(est.predict(data(Y_BIN, repeat=False)))
    assert sorted(first) == ["class_ids", "classes", "logistic", "logits", "probabilities"]
    p = 1 / (1 + np.exp(-first["logits"][0]))
    np.testing.assert_allclose(first["probabilities"], [1 - p, p], rtol=1e-5)
    assert first["class_ids"][0] == Y_BIN[0]
    assert first["classes"][0] in (b"0", b"1", "0", "1")
    # The loss is the per-batch sum of the per-example cross entropies (one batch here).
    np.testing.assert_allclose(results["loss"], results["average_loss"] * len(X), rtol=1e-5)


def test_multi_class_classifiers(tmp_path):
    est = tf.estimator.LinearClassifier(columns(), str(tmp_path / "lin"), n_classes=3)
    est.train(data(Y_3), steps=50)
    results = est.evaluate(data(Y_3, repeat=False))
    assert sorted(results) == ["accuracy", "average_loss", "global_step", "loss"]
    assert results["accuracy"] >= 0.8
    preds = list(est.predict(data(Y_3, repeat=False)))
    np.testing.assert_allclose([p["probabilities"].sum() for p in preds], 1.0, rtol=1e-5)
    assert [int(p["class_ids"][0]) for p in preds] == [int(np.argmax(p["logits"])) for p in preds]


def test_dnn_estimators_use_tf_variable_names_and_learn(tmp_path):
    seeded = tf.estimator.RunConfig(tf_random_seed=7)   # the initial weights: not a coin toss
    est = tf.estimator.DNNClassifier([8, 4], columns(), str(tmp_path / "c"), optimizer="Adam",
                                     config=seeded)
    est.train(data(Y_BIN), steps=60)
    names = set(est.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_1/kernel",
            "dnn/logits/kernel", "dnn/logits/bias"} <= names
    assert est.evaluate(data(Y_BIN, repeat=False))["accuracy"] >= 0.9

    reg = tf.estimator.DNNRegressor([8], columns(), str(tmp_path / "r"), optimizer="Adam",
                                    config=seeded)
    before = reg.evaluate(data(Y_REG, repeat=False))["average_loss"]
    reg.train(data(Y_REG), steps=60)
    assert reg.evaluate(data(Y_REG, repeat=False))["average_loss"] < before / 2


def test_dnn_linear_combined_trains_both_parts_one_step_at_a_time(tmp_path):
    est = tf.estimator.DNNLinearCombinedClassifier(
        str(tmp_path), linear_feature_columns=columns(), dnn_feature_columns=columns(),
        dnn_hidden_units=[4], linear_optimizer="SGD", dnn_optimizer="Adam")
    est.train(data(Y_BIN), steps=5)
    assert est.get_variable_value("global_step") == 5
    names = est.get_variable_names()
    assert any(n.startswith("dnn/hiddenlayer_0") for n in names)
    assert np.any(est.get_variable_value("linear/linear_model/x/weights") != 0)
    reg = tf.estimator.DNNLinearCombinedRegressor(str(tmp_path / "r"),
                                                  linear_feature_columns=columns())
    reg.train(data(Y_REG), steps=2)
    assert reg.get_variable_value("global_step") == 2


def test_canned_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.LinearClassifier(columns(), n_classes=1)
    with pytest.raises(ValueError, match="Unsupported optimizer name: Nope"):
        tf.estimator.LinearRegressor(columns(), str(tmp_path), optimizer="Nope").train(
            data(Y_REG), steps=1)
    with pytest.raises(ValueError, match="hidden_units must be a non-empty list"):
        tf.estimator.DNNRegressor([], columns())
    with pytest.raises(ValueError, match="Either linear_feature_columns or dnn_feature_columns"):
        tf.estimator.DNNLinearCombinedClassifier()
