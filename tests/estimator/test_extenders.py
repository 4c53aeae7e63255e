"""tf.estimator.add_metrics (extenders.py), Estimator.model_fn as TF1's public model_fn, the
canned estimators' parse-example specs (parsing_utils.py), and tf.estimator.experimental's
logit-function helpers."""

import numpy as np
import pytest

import zps as tf

X = np.array([[1.0], [2.0], [4.0]], np.float32)
Y = np.array([[3.0], [3.0], [9.0]], np.float32)


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [1, 1], initializer=tf.constant_initializer(params["w"]))
    predictions = tf.matmul(features["x"], w)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, {"y": predictions})
    loss = tf.reduce_sum(tf.square(predictions - labels))
    train_op = tf.assign_add(tf.train.get_global_step(), 1)
    metrics = {"mae": tf.metrics.mean_absolute_error(labels, predictions)}
    return tf.estimator.EstimatorSpec(mode, {"y": predictions}, loss, train_op, metrics)


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X, "k": np.float32([1, 0, 1])}, Y)).batch(3)


@pytest.fixture(autouse=True)
def _local(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def test_add_metrics_adds_and_replaces_metrics(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"w": 2.0})
    est.train(input_fn, steps=1)
    seen = {}

    def metric_fn(labels, predictions, features, config):
        seen["model_dir"] = config.model_dir
        return {"rmse": tf.metrics.root_mean_squared_error(labels, predictions["y"]),
                "mae": tf.metrics.mean(features["k"]),       # replaces the model's "mae"
                "kept": tf.metrics.mean(features["x"] * features["k"][:, None],
                                        weights=features["k"][:, None])}

    extended = tf.estimator.add_metrics(est, metric_fn)
    assert isinstance(extended, tf.estimator.Estimator) and extended is not est
    assert extended.model_dir == est.model_dir
    metrics = extended.evaluate(input_fn)                  # the checkpoint of est's training
    errors = X * 2.0 - Y                                   # -1, 1, -1
    np.testing.assert_allclose(metrics["rmse"], np.sqrt(np.mean(errors ** 2)), rtol=1e-6)
    np.testing.assert_allclose(metrics["mae"], 2 / 3, rtol=1e-6)
    np.testing.assert_allclose(metrics["kept"], 2.5, rtol=1e-6)   # (1 + 4) / 2
    np.testing.assert_allclose(metrics["loss"], 3.0, rtol=1e-6)
    assert metrics["global_step"] == 1
    assert seen["model_dir"] == str(tmp_path)
    assert sorted(est.evaluate(input_fn)) == ["global_step", "loss", "mae"]   # est unchanged
    extended.train(input_fn, steps=1)                      # training is the model's own
    assert int(est.get_variable_value("global_step")) == 2
    prediction = next(extended.predict(input_fn))
    np.testing.assert_allclose(prediction["y"], [2.0])


def test_add_metrics_rejects_unknown_arguments(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"w": 2.0})
    with pytest.raises(ValueError, match=r"has following not expected args: \['mode'\]"):
        tf.estimator.add_metrics(est, lambda labels, mode: {})


def test_model_fn_property_is_the_public_model_fn(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"w": 3.0})
    with tf.Graph().as_default():
        tf.train.create_global_step()
        features = {"x": tf.constant(X)}
        spec = est.model_fn(features, None, tf.estimator.ModeKeys.PREDICT, est.config)
        assert isinstance(spec, tf.estimator.EstimatorSpec)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(spec.predictions["y"]), X * 3.0)


def test_classifier_parse_example_spec():
    x = tf.feature_column.numeric_column("x", shape=[2])
    ids = tf.feature_column.categorical_column_with_hash_bucket("ids", 10)
    spec = tf.estimator.classifier_parse_example_spec(
        [x, ids], label_key="label", label_dtype=tf.string, label_default="neg",
        weight_column=tf.feature_column.numeric_column("w"))
    assert spec == {"x": tf.FixedLenFeature((2,), tf.float32),
                    "ids": tf.VarLenFeature(tf.string),
                    "label": tf.FixedLenFeature((1,), tf.string, "neg"),
                    "w": tf.FixedLenFeature((1,), tf.float32)}
    assert tf.estimator.classifier_parse_example_spec([x], "y")["y"] == tf.FixedLenFeature(
        (1,), tf.int64)


def test_regressor_parse_example_spec_parses_examples():
    x = tf.feature_column.numeric_column("x")
    spec = tf.estimator.regressor_parse_example_spec([x], "y", label_dimension=2,
                                                     weight_column="w")
    assert spec == {"x": tf.FixedLenFeature((1,), tf.float32),
                    "y": tf.FixedLenFeature((2,), tf.float32),
                    "w": tf.FixedLenFeature((1,), tf.float32)}
    feature = tf.train.Feature
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": feature(float_list=tf.train.FloatList(value=[1.5])),
        "y": feature(float_list=tf.train.FloatList(value=[2.0, -1.0])),
        "w": feature(float_list=tf.train.FloatList(value=[0.5]))}))
    with tf.Graph().as_default():
        parsed = tf.parse_example([example.SerializeToString()], spec)
        with tf.Session() as sess:
            values = sess.run(parsed)
    np.testing.assert_allclose(values["y"], [[2.0, -1.0]])
    np.testing.assert_allclose(values["w"], [[0.5]])


def test_parse_example_spec_errors():
    x = tf.feature_column.numeric_column("x")
    with pytest.raises(ValueError, match="label should not be used as feature"):
        tf.estimator.classifier_parse_example_spec([x], label_key="x")
    with pytest.raises(ValueError, match="weight_column should not be used as feature"):
        tf.estimator.regressor_parse_example_spec([x], "y", weight_column="x")
    with pytest.raises(ValueError, match="weight_column should be an instance of "
                                         "tf.feature_column.numeric_column"):
        tf.estimator.regressor_parse_example_spec(
            [x], "y", weight_column=tf.feature_column.categorical_column_with_hash_bucket(
                "w", 3))


def test_logit_fn_builders_build_the_canned_models_logits():
    column = [tf.feature_column.numeric_column("x", shape=[2])]
    linear_fn = tf.estimator.experimental.linear_logit_fn_builder(3, column)
    dnn_fn = tf.estimator.experimental.dnn_logit_fn_builder(
        2, [4], column, tf.nn.relu, None, None, False)
    features = {"x": np.array([[1.0, 2.0]], np.float32)}
    with tf.Graph().as_default():
        linear = tf.estimator.experimental.call_logit_fn(
            linear_fn, {"x": tf.constant(features["x"])}, "train", None, None)
        with tf.variable_scope("dnn"):
            dnn = tf.estimator.experimental.call_logit_fn(
                dnn_fn, {"x": tf.constant(features["x"])}, "train", None, None)
        names = sorted(v.op.name for v in tf.global_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            linear_value, dnn_value = sess.run([linear, dnn])
    np.testing.assert_array_equal(linear_value, np.zeros([1, 3]))   # zero-initialized
    assert dnn_value.shape == (1, 2)
    assert names == ["dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
                     "dnn/logits/kernel", "linear_model/bias_weights", "linear_model/x/weights"]
    with pytest.raises(ValueError, match="logit_fn should return a Tensor or a dictionary"):
        tf.estimator.experimental.call_logit_fn(lambda features: 1.0, {}, "train", None, None)
