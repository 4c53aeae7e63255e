"""SavedModel exports of Estimators: receivers, export outputs, the canned heads' signatures,
export_saved_model (loaded back and run against Estimator.predict) and the exporters of
train_and_evaluate."""

import os

import numpy as np
import pytest

import zps as tf

RNG = np.random.RandomState(1)
X = RNG.randn(8, 2).astype(np.float32)
Y_REG = (X @ np.float32([[1.0], [-2.0]]) + 0.5).astype(np.float32)
Y_3 = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.int64)
SERVING = [tf.saved_model.tag_constants.SERVING]


@pytest.fixture(autouse=True)
def _no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def data(labels, repeat=True):
    def input_fn():
        ds = tf.data.Dataset.from_tensor_slices(({"x": X}, labels)).batch(4)
        return ds.repeat() if repeat else ds
    return input_fn


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": X}).batch(8)


def linear_model_fn(features, labels, mode):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    y = tf.matmul(features["x"], w) + b
    predictions = {"y": y, "double": 2.0 * y}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions)
    loss = tf.reduce_mean(tf.square(y - labels))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, predictions, loss, train_op)


def raw_receiver_fn():
    return tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.constant(np.zeros([1, 2], np.float32))})


def parsing_receiver_fn():
    return tf.estimator.export.build_parsing_serving_input_receiver_fn(
        {"x": tf.FixedLenFeature([2], tf.float32)})


def serialized_examples(x):
    return [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString()
        for row in x.tolist()]


def run_signature(export_dir, key, feeds, outputs=None):
    """Load ``export_dir`` in a fresh graph and run signature ``key``'s outputs, feeding its
    inputs by name; returns (the signature, {output name: value})."""
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, SERVING, export_dir)
        sig = meta.signature_def[key]
        names = sorted(outputs or sig.outputs)
        values = sess.run([sig.outputs[n].name for n in names],
                          {sig.inputs[k].name: v for k, v in feeds.items()})
        return sig, dict(zip(names, values)), meta


def trained(est, labels, steps=3):
    return est.train(data(labels), steps=steps)


# -- receivers ------------------------------------------------------------------------------------
def test_serving_input_receiver_wraps_single_tensors_and_validates():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        f = tf.placeholder(tf.float32, [None, 2])
        r = tf.estimator.export.ServingInputReceiver(f, s, {"raw": f})
        assert r.features == {"feature": f} and r.receiver_tensors == {"input": s}
        assert r.receiver_tensors_alternatives == {"raw": {"input": f}}
        t = tf.estimator.export.TensorServingInputReceiver(f, {"examples": s})
        assert t.features is f and t.receiver_tensors == {"examples": s}
        with pytest.raises(ValueError, match="^features must be defined.$"):
            tf.estimator.export.ServingInputReceiver(None, s)
        with pytest.raises(ValueError, match="^feature x must be a Tensor or SparseTensor.$"):
            tf.estimator.export.ServingInputReceiver({"x": [1.0]}, s)
        with pytest.raises(ValueError, match="^receiver_tensor keys must be strings: 1.$"):
            tf.estimator.export.ServingInputReceiver(f, {1: s})
        with pytest.raises(ValueError, match="^receiver_tensors_alternatives must be a dict"):
            tf.estimator.export.ServingInputReceiver(f, s, [f])
        assert tf.estimator.export.ServingInputReceiver({3: f}, s).features == {3: f}


def test_raw_and_parsing_receiver_fns_make_placeholders():
    with tf.Graph().as_default():
        r = tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.constant(np.zeros([1, 2], np.float32), name="xs")}, default_batch_size=5)()
        x = r.receiver_tensors["x"]
        assert r.features["x"] is x and x.op.type == "Placeholder" and x.op.name == "xs_1"
        assert x.dtype == tf.float32 and x.shape.as_list() == [5, 2]
        p = parsing_receiver_fn()()
        examples = p.receiver_tensors["examples"]
        assert examples.op.name == "input_example_tensor" and examples.dtype == tf.string
        assert examples.shape.as_list() == [None]
        with tf.Session() as sess:
            np.testing.assert_array_equal(
                sess.run(p.features["x"], {examples: serialized_examples(X[:3])}), X[:3])


# -- export outputs -------------------------------------------------------------------------------
def test_export_outputs_validate_as_tf1():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        f = tf.placeholder(tf.float32, [None, 2])
        i = tf.placeholder(tf.int64, [None])
        with pytest.raises(ValueError, match="^Classification scores must be a float32 Tensor"):
            tf.estimator.export.ClassificationOutput(scores=i)
        with pytest.raises(ValueError, match="^Classification classes must be a string Tensor"):
            tf.estimator.export.ClassificationOutput(classes=f)
        with pytest.raises(ValueError, match="^At least one of scores and classes must be set."):
            tf.estimator.export.ClassificationOutput()
        with pytest.raises(ValueError, match="^Regression output value must be a float32"):
            tf.estimator.export.RegressionOutput(i)
        with pytest.raises(ValueError, match="^Prediction output key must be a string; got 1."):
            tf.estimator.export.PredictOutput({1: f})
        with pytest.raises(ValueError, match="^Prediction output value must be a Tensor"):
            tf.estimator.export.PredictOutput({"a": 1.0})
        assert tf.estimator.export.PredictOutput(f).outputs == {"output": f}
        with pytest.raises(ValueError, match="^Classification input must be a single string "
                                             "Tensor; got"):
            tf.estimator.export.ClassificationOutput(scores=f).as_signature_def({"x": f})
        with pytest.raises(ValueError, match="^Regression input must be a single string"):
            tf.estimator.export.RegressionOutput(f).as_signature_def({"a": s, "b": s})
        sig = tf.estimator.export.RegressionOutput(f).as_signature_def({"examples": s})
        assert (sig.method_name, sig.inputs["inputs"].name, sig.outputs["outputs"].name) == (
            "tensorflow/serving/regress", s.name, f.name)


def test_estimator_spec_checks_export_outputs_and_names_the_default():
    with tf.Graph().as_default():
        y = tf.constant([1.0])
        mode = tf.estimator.ModeKeys.PREDICT
        with pytest.raises(TypeError, match="^export_outputs must be dict, given"):
            tf.estimator.EstimatorSpec(mode, {"y": y},
                                       export_outputs=tf.estimator.export.PredictOutput(y))
        with pytest.raises(TypeError, match="^Values in export_outputs must be ExportOutput "
                                            "objects. Given: {'head': "):
            tf.estimator.EstimatorSpec(mode, {"y": y}, export_outputs={"head": {"y": y}})
        reg = tf.estimator.export.RegressionOutput(y)
        spec = tf.estimator.EstimatorSpec(mode, {"y": y}, export_outputs={"head-1": reg})
        assert spec.export_outputs == {"head-1": reg, "serving_default": reg}
        with pytest.raises(ValueError, match="^Multiple export_outputs were provided, but none "
                                             "of them is specified as the default."):
            tf.estimator.EstimatorSpec(mode, {"y": y}, export_outputs={"a": reg, "b": reg})


# -- export_saved_model ---------------------------------------------------------------------------
def test_custom_estimator_export_loads_and_serves_predict(tmp_path):
    est = trained(tf.estimator.Estimator(linear_model_fn, str(tmp_path / "model")), Y_REG)
    asset = tmp_path / "vocab.txt"
    asset.write_text("a\nb\n")
    base = str(tmp_path / "export")
    path = est.export_saved_model(base, raw_receiver_fn(),
                                  assets_extra={"sub/vocab.txt": str(asset)})
    assert isinstance(path, bytes) and os.path.dirname(path) == os.fsencode(base)
    name = os.path.basename(path).decode()
    assert len(name) == 10 and name.isdigit() and os.listdir(base) == [name]
    assert (tmp_path / "export" / name / "assets.extra" / "sub" / "vocab.txt").read_text() \
        == "a\nb\n"
    sig, out, meta = run_signature(path, "serving_default", {"x": X})
    assert sig.method_name == "tensorflow/serving/predict"
    assert sorted(meta.signature_def) == ["serving_default"]
    expected = next(est.predict(predict_input_fn, yield_single_examples=False))
    np.testing.assert_array_equal(out["y"], expected["y"])
    np.testing.assert_array_equal(out["double"], expected["double"])
    assert np.abs(expected["y"]).max() > 0            # trained: not the zero initial values


def test_export_savedmodel_older_name_and_checkpoint_path(tmp_path):
    est = trained(tf.estimator.Estimator(linear_model_fn, str(tmp_path / "model")), Y_REG, 1)
    first = est.latest_checkpoint()
    trained(est, Y_REG, 2)
    path = est.export_savedmodel(str(tmp_path / "export"), raw_receiver_fn(),
                                 checkpoint_path=first, strip_default_attrs=True)
    _, out, _ = run_signature(path, "serving_default", {"x": X})
    expected = next(est.predict(predict_input_fn, checkpoint_path=first,
                                yield_single_examples=False))
    np.testing.assert_array_equal(out["y"], expected["y"])


def test_export_errors(tmp_path):
    est = tf.estimator.Estimator(linear_model_fn, str(tmp_path / "model"))
    with pytest.raises(ValueError, match="^Couldn't find trained model at %s.$"
                       % (tmp_path / "model")):
        est.export_saved_model(str(tmp_path / "export"), raw_receiver_fn())
    with pytest.raises(ValueError, match="^An input_receiver_fn must be defined.$"):
        est.export_saved_model(str(tmp_path / "export"), None)
    trained(est, Y_REG, 1)
    with pytest.raises(TypeError, match="^serving_input_receiver_fn must return a "
                                        "tf.estimator.export.ServingInputReceiver"):
        est.export_saved_model(str(tmp_path / "export"),
                               lambda: {"x": tf.placeholder(tf.float32, [None, 2])})

    def bad_outputs_fn(features, mode):
        y = tf.matmul(features["x"], tf.get_variable("w", [2, 1]))
        return tf.estimator.EstimatorSpec(mode, {"y": y}, export_outputs={"y": y})
    with pytest.raises(TypeError, match="^Values in export_outputs must be ExportOutput"):
        tf.estimator.Estimator(bad_outputs_fn, est.model_dir).export_saved_model(
            str(tmp_path / "export"), raw_receiver_fn())
    assert not (tmp_path / "export").exists() or os.listdir(tmp_path / "export") == []


def test_receiver_alternatives_and_tensor_receiver_signatures(tmp_path):
    def model_fn(features, mode):
        w = tf.get_variable("w", [2, 1], initializer=tf.ones_initializer())
        y = tf.matmul(features, w)
        return tf.estimator.EstimatorSpec(mode, {"y": y}, export_outputs={
            "serving_default": tf.estimator.export.PredictOutput({"y": y}),
            "regression": tf.estimator.export.RegressionOutput(y)})

    def receiver_fn():
        examples = tf.placeholder(tf.string, [None], name="examples")
        x = tf.parse_example(examples, {"x": tf.FixedLenFeature([2], tf.float32)})["x"]
        return tf.estimator.export.TensorServingInputReceiver(
            x, examples, receiver_tensors_alternatives={"raw": x})

    est = tf.estimator.Estimator(model_fn, str(tmp_path / "model"))
    (tmp_path / "model").mkdir()
    with tf.Graph().as_default():        # a checkpoint of the initial values
        tf.train.create_global_step()
        tf.get_variable("w", [2, 1], initializer=tf.ones_initializer())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, str(tmp_path / "model" / "model.ckpt"), global_step=0)
    path = est.export_saved_model(str(tmp_path / "export"), receiver_fn)
    want = X @ np.ones([2, 1], np.float32)
    sig, out, meta = run_signature(path, "regression", {"inputs": serialized_examples(X)})
    assert sorted(meta.signature_def) == ["raw:serving_default", "regression", "serving_default"]
    np.testing.assert_allclose(out["outputs"], want, rtol=1e-6)
    _, out, _ = run_signature(path, "raw:serving_default", {"input": X})
    np.testing.assert_allclose(out["y"], want, rtol=1e-6)
    _, out, _ = run_signature(path, "serving_default", {"input": serialized_examples(X)})
    np.testing.assert_allclose(out["y"], want, rtol=1e-6)


# -- canned estimators ----------------------------------------------------------------------------
def test_linear_regressor_exports_tf1_signatures(tmp_path):
    est = trained(tf.estimator.LinearRegressor(
        [tf.feature_column.numeric_column("x", shape=[2])], str(tmp_path / "model"),
        optimizer="SGD"), Y_REG)
    expected = next(est.predict(predict_input_fn, yield_single_examples=False))["predictions"]
    path = est.export_saved_model(str(tmp_path / "export"), parsing_receiver_fn())
    sig, out, meta = run_signature(path, "serving_default",
                                   {"inputs": serialized_examples(X)})
    assert sorted(meta.signature_def) == ["predict", "regression", "serving_default"]
    assert sig.method_name == meta.signature_def["regression"].method_name \
        == "tensorflow/serving/regress"
    np.testing.assert_allclose(out["outputs"], expected, rtol=1e-6)
    sig, out, _ = run_signature(path, "predict", {"examples": serialized_examples(X)})
    assert sig.method_name == "tensorflow/serving/predict" and sorted(out) == ["predictions"]
    np.testing.assert_allclose(out["predictions"], expected, rtol=1e-6)


def test_dnn_classifier_exports_classification_and_predict(tmp_path):
    est = trained(tf.estimator.DNNClassifier(
        [4], [tf.feature_column.numeric_column("x", shape=[2])], str(tmp_path / "model"),
        n_classes=3), Y_3)
    expected = next(est.predict(predict_input_fn, yield_single_examples=False))
    path = est.export_saved_model(str(tmp_path / "export"), parsing_receiver_fn())
    sig, out, meta = run_signature(path, "classification", {"inputs": serialized_examples(X)})
    assert sorted(meta.signature_def) == ["classification", "predict", "serving_default"]
    assert sig.method_name == "tensorflow/serving/classify"
    assert meta.signature_def["serving_default"].method_name == "tensorflow/serving/classify"
    np.testing.assert_array_equal(out["classes"], np.array([[b"0", b"1", b"2"]] * 8))
    np.testing.assert_allclose(out["scores"], expected["probabilities"], rtol=1e-6)
    _, out, _ = run_signature(path, "predict", {"examples": serialized_examples(X)})
    assert sorted(out) == sorted(expected)
    for key in expected:
        np.testing.assert_allclose(out[key], expected[key], rtol=1e-6) \
            if out[key].dtype.kind == "f" else np.testing.assert_array_equal(out[key],
                                                                             expected[key])
    # From raw float features only the predict signature can be served (as in TF1).
    raw = est.export_saved_model(str(tmp_path / "raw"), raw_receiver_fn())
    _, out, meta = run_signature(raw, "predict", {"x": X}, ["probabilities"])
    assert sorted(meta.signature_def) == ["predict"]
    np.testing.assert_allclose(out["probabilities"], expected["probabilities"], rtol=1e-6)


def test_binary_linear_classifier_exports_the_logistic_as_regression(tmp_path):
    est = trained(tf.estimator.LinearClassifier(
        [tf.feature_column.numeric_column("x", shape=[2])], str(tmp_path / "model")),
        (X[:, 0] > 0).astype(np.int64))
    expected = next(est.predict(predict_input_fn, yield_single_examples=False))
    path = est.export_saved_model(str(tmp_path / "export"), parsing_receiver_fn())
    _, out, meta = run_signature(path, "regression", {"inputs": serialized_examples(X)})
    assert sorted(meta.signature_def) == ["classification", "predict", "regression",
                                          "serving_default"]
    np.testing.assert_allclose(out["outputs"], expected["logistic"], rtol=1e-6)
    _, out, _ = run_signature(path, "serving_default", {"inputs": serialized_examples(X)})
    np.testing.assert_array_equal(out["classes"], np.array([[b"0", b"1"]] * 8))
    np.testing.assert_allclose(out["scores"], expected["probabilities"], rtol=1e-6)


# -- exporters ------------------------------------------------------------------------------------
def test_train_and_evaluate_runs_the_exporters(tmp_path):
    model_dir = tmp_path / "model"
    est = tf.estimator.Estimator(linear_model_fn, str(model_dir),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=1))
    latest = tf.estimator.LatestExporter("latest", raw_receiver_fn(), exports_to_keep=2)
    final = tf.estimator.FinalExporter("final", raw_receiver_fn())
    metrics, export_results = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(data(Y_REG), max_steps=3),
        tf.estimator.EvalSpec(data(Y_REG, repeat=False), steps=None, exporters=[latest, final],
                              throttle_secs=0))
    assert metrics["global_step"] == 3
    latest_dirs = sorted(os.listdir(model_dir / "export" / "latest"))
    final_dirs = os.listdir(model_dir / "export" / "final")
    assert len(latest_dirs) == 2 and len(final_dirs) == 1      # 3 evaluations, 2 kept
    assert export_results == [os.path.join(os.fsencode(model_dir / "export" / "latest"),
                                           os.fsencode(latest_dirs[-1])),
                              os.path.join(os.fsencode(model_dir / "export" / "final"),
                                           os.fsencode(final_dirs[0]))]
    _, out, _ = run_signature(export_results[1], "serving_default", {"x": X})
    expected = next(est.predict(predict_input_fn, yield_single_examples=False))
    np.testing.assert_array_equal(out["y"], expected["y"])


def test_best_exporter_exports_only_improvements(tmp_path):
    est = trained(tf.estimator.Estimator(linear_model_fn, str(tmp_path / "model")), Y_REG, 1)
    best = tf.estimator.BestExporter(serving_input_receiver_fn=raw_receiver_fn(),
                                     event_file_pattern=None, exports_to_keep=1)
    assert best.name == "best_exporter"
    base = str(tmp_path / "best")
    ckpt = est.latest_checkpoint()
    first = best.export(est, base, ckpt, {"loss": 2.0, "global_step": 1}, False)
    assert first is not None
    assert best.export(est, base, ckpt, {"loss": 3.0, "global_step": 2}, False) is None
    second = best.export(est, base, ckpt, {"loss": 1.0, "global_step": 3}, False)
    assert second is not None and second != first
    assert os.listdir(base) == [os.path.basename(second).decode()]       # exports_to_keep=1
    with pytest.raises(ValueError, match="must include current_eval_result argument"):
        tf.estimator.BestExporter(compare_fn=lambda best_eval_result: True)


def test_best_exporter_reads_the_best_loss_from_the_event_files(tmp_path):
    est = trained(tf.estimator.Estimator(linear_model_fn, str(tmp_path / "model")), Y_REG, 1)
    result = est.evaluate(data(Y_REG, repeat=False))       # writes model/eval/*.tfevents.*
    best = tf.estimator.BestExporter(serving_input_receiver_fn=raw_receiver_fn())
    base = str(tmp_path / "best")
    worse = dict(result, loss=result["loss"] + 1.0)
    assert best.export(est, base, est.latest_checkpoint(), worse, False) is None
    assert best.export(est, base, est.latest_checkpoint(), result, False) is not None


def test_eval_spec_validates_exporters():
    fn = data(Y_REG)
    latest = tf.estimator.LatestExporter("a", raw_receiver_fn())
    assert tf.estimator.EvalSpec(fn, exporters=latest).exporters == (latest,)
    with pytest.raises(TypeError, match="^`exporters` must be an Exporter, an iterable of "
                                        "Exporter, or `None`"):
        tf.estimator.EvalSpec(fn, exporters=[latest, "b"])
    with pytest.raises(ValueError, match="^`exporters` must have unique names"):
        tf.estimator.EvalSpec(fn, exporters=[latest, tf.estimator.FinalExporter(
            "a", raw_receiver_fn())])
    with pytest.raises(ValueError, match="^`exports_to_keep`, if provided, must be positive"):
        tf.estimator.LatestExporter("a", raw_receiver_fn(), exports_to_keep=0)
