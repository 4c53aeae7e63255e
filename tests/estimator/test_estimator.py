"""Estimator: training matches a hand-written MonitoredTrainingSession program, checkpoints resume,
evaluate and predict agree with numpy, and mistakes fail with TF1's errors."""

import os

import numpy as np
import pytest

import zps as tf

X = np.arange(24, dtype=np.float32).reshape(12, 2) / 10.0
Y = X @ np.array([[1.5], [-0.5]], np.float32) + 0.25
BATCH = 4
LEARNING_RATE = 0.05


@pytest.fixture(autouse=True)
def _no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def linear(features):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    return tf.matmul(features["x"], w) + b


def model_fn(features, labels, mode):
    predictions = linear(features)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions,
                                                             "double": 2 * predictions})
    loss = tf.reduce_mean(tf.square(predictions - labels))
    train_op = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode, predictions={"y": predictions}, loss=loss, train_op=train_op,
        eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, predictions)})


def input_fn(repeat=True):
    ds = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(BATCH)
    return ds.repeat() if repeat else ds


def make_estimator(tmp_path, **kwargs):
    config = tf.estimator.RunConfig(log_step_count_steps=1000, **kwargs)
    return tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "model"), config=config)


def test_training_matches_the_same_program_in_a_monitored_training_session(tmp_path):
    est = make_estimator(tmp_path).train(input_fn, steps=7)

    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        features, labels = tf.data.make_one_shot_iterator(input_fn()).get_next()
        predictions = linear(features)
        loss = tf.reduce_mean(tf.square(predictions - labels))
        train_op = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss, step)
        with tf.variable_scope("", reuse=True):
            final = tf.train.FinalOpsHook({"w": tf.get_variable("w"), "b": tf.get_variable("b")})
        with tf.train.MonitoredTrainingSession(
                hooks=[tf.train.StopAtStepHook(last_step=7), final]) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    np.testing.assert_array_equal(est.get_variable_value("w"), final.final_ops_values["w"])
    np.testing.assert_array_equal(est.get_variable_value("b"), final.final_ops_values["b"])
    assert est.get_variable_value("global_step") == 7
    assert set(est.get_variable_names()) >= {"w", "b", "global_step"}


def test_training_resumes_from_the_latest_checkpoint(tmp_path):
    est = make_estimator(tmp_path)
    est.train(input_fn, steps=10)
    assert est.latest_checkpoint().endswith("model.ckpt-10")
    est.train(input_fn, steps=10)
    assert est.get_variable_value("global_step") == 20
    est.train(input_fn, max_steps=15)         # already past: skipped
    assert est.get_variable_value("global_step") == 20
    est.train(input_fn, max_steps=23)
    assert est.get_variable_value("global_step") == 23


def test_training_stops_at_the_end_of_the_input(tmp_path):
    est = make_estimator(tmp_path).train(lambda: input_fn(repeat=False))
    assert est.get_variable_value("global_step") == len(X) // BATCH


def test_input_fn_may_return_feature_and_label_tensors(tmp_path):
    est = make_estimator(tmp_path)
    est.train(lambda: ({"x": tf.constant(X)}, tf.constant(Y)), steps=3)
    assert est.get_variable_value("global_step") == 3


def _numpy_predictions(est, x=X):
    return x @ est.get_variable_value("w") + est.get_variable_value("b")


def test_evaluate_matches_numpy(tmp_path):
    est = make_estimator(tmp_path).train(input_fn, steps=5)
    results = est.evaluate(lambda: input_fn(repeat=False), name="holdout")
    errors = _numpy_predictions(est) - Y
    batch_losses = [np.mean(np.square(errors[i:i + BATCH])) for i in range(0, len(X), BATCH)]
    assert sorted(results) == ["global_step", "loss", "mae"]
    assert results["global_step"] == 5
    np.testing.assert_allclose(results["loss"], np.mean(batch_losses), rtol=1e-5)
    np.testing.assert_allclose(results["mae"], np.mean(np.abs(errors)), rtol=1e-5)
    assert est.eval_dir("holdout").endswith("eval_holdout")
    tf.summary.FileWriterCache.clear()             # closed: all written
    events = [e for name in sorted(os.listdir(est.eval_dir("holdout")))
              for e in tf.train.summary_iterator(os.path.join(est.eval_dir("holdout"), name))]
    written = {v.tag: (e.step, v.simple_value) for e in events for v in e.summary.value}
    assert written == {"loss": (5, pytest.approx(results["loss"], rel=1e-6)),
                       "mae": (5, pytest.approx(results["mae"], rel=1e-6))}

    first = est.evaluate(input_fn, steps=1)        # a repeating input: stop after one batch
    np.testing.assert_allclose(first["loss"], batch_losses[0], rtol=1e-5)


def test_evaluate_and_predict_an_untrained_model_initialize_it(tmp_path):
    est = make_estimator(tmp_path)
    results = est.evaluate(lambda: input_fn(repeat=False))
    np.testing.assert_allclose(results["mae"], np.mean(np.abs(Y)), rtol=1e-5)
    assert results["global_step"] == 0


def test_predict_yields_examples_or_batches(tmp_path):
    est = make_estimator(tmp_path).train(input_fn, steps=3)
    expected = _numpy_predictions(est)
    features_only = lambda: tf.data.Dataset.from_tensor_slices({"x": X}).batch(5)
    examples = list(est.predict(features_only))
    assert len(examples) == len(X) and sorted(examples[0]) == ["double", "y"]
    np.testing.assert_allclose(np.stack([e["y"] for e in examples]), expected, rtol=1e-6)
    only_y = list(est.predict(features_only, predict_keys=["y"]))
    assert sorted(only_y[0]) == ["y"]
    batches = list(est.predict(features_only, yield_single_examples=False))
    assert [len(b["y"]) for b in batches] == [5, 5, 2]
    # Labels of the input are ignored.
    assert len(list(est.predict(lambda: input_fn(repeat=False)))) == len(X)
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        list(est.predict(features_only, predict_keys=["nope"]))


def test_predict_non_dict_predictions(tmp_path):
    def fn(features, mode):
        return tf.estimator.EstimatorSpec(mode, predictions=features * 2.0)
    est = tf.estimator.Estimator(fn, str(tmp_path))
    values = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(X[:, 0]).batch(5)))
    np.testing.assert_allclose(values, X[:, 0] * 2.0)


def test_model_fn_receives_the_arguments_it_names(tmp_path):
    seen = {}

    def fn(features, labels, mode, params, config):
        seen.update(mode=mode, params=params, config=config)
        return model_fn(features, labels, mode)

    est = tf.estimator.Estimator(fn, str(tmp_path), params={"units": 3})
    est.train(input_fn, steps=1)
    assert seen["mode"] == "train" and seen["params"] == {"units": 3}
    assert seen["config"].model_dir == str(tmp_path)
    est.params["units"] = 4        # a copy
    assert est.params == {"units": 3}

    class Model:
        def fn(self, features, labels, mode):
            return model_fn(features, labels, mode)
    tf.estimator.Estimator(Model().fn, str(tmp_path)).train(input_fn, steps=1)


def test_saving_listeners_see_each_checkpoint(tmp_path):
    class Listener(tf.train.CheckpointSaverListener):
        steps = []

        def after_save(self, session, global_step_value):
            self.steps.append(int(global_step_value))
    est = make_estimator(tmp_path, save_checkpoints_steps=5)
    est.train(input_fn, steps=10, saving_listeners=[Listener()])
    assert Listener.steps == [0, 5, 10]


def test_warm_start_from_another_model(tmp_path):
    source = make_estimator(tmp_path / "a").train(input_fn, steps=5)
    est = tf.estimator.Estimator(model_fn, str(tmp_path / "b"),
                                 warm_start_from=source.model_dir)
    cold = make_estimator(tmp_path / "c")
    data = lambda: input_fn(repeat=False)
    assert est.evaluate(data)["loss"] == pytest.approx(source.evaluate(data)["loss"])
    assert est.evaluate(data)["loss"] != pytest.approx(cold.evaluate(data)["loss"])
    est.train(input_fn, steps=1)
    assert est.get_variable_value("global_step") == 1   # only the trainable variables


def test_a_temporary_model_dir_is_made_when_none_is_given():
    est = tf.estimator.Estimator(model_fn)
    assert os.path.isdir(est.model_dir) and est.config.model_dir == est.model_dir


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, params, message", [
    (lambda labels, mode: None, None, "must include features argument"),
    (lambda features, labels, mode, extra: None, None, "not expected args: \\['extra'\\]"),
    (lambda features, labels: None, {"a": 1}, "does not include params argument"),
])
def test_bad_model_fn_signatures(fn, params, message):
    with pytest.raises(ValueError, match=message):
        tf.estimator.Estimator(fn, params=params)


def test_constructor_errors(tmp_path):
    with pytest.raises(ValueError, match="model_fn must be provided"):
        tf.estimator.Estimator(None)
    with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
        tf.estimator.Estimator(model_fn, config={"model_dir": "x"})
    with pytest.raises(ValueError, match="set both in constructor and `RunConfig`"):
        tf.estimator.Estimator(model_fn, str(tmp_path / "a"),
                               config=tf.estimator.RunConfig(model_dir=str(tmp_path / "b")))


def test_train_argument_errors(tmp_path):
    est = make_estimator(tmp_path)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(input_fn, steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        est.train(input_fn, steps=0)
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        est.train(input_fn, steps=1, hooks=["not a hook"])
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook"):
        tf.estimator.Estimator(model_fn, str(tmp_path / "n"), config=tf.estimator.RunConfig(
            save_checkpoints_secs=0)).train(
                input_fn, steps=1, saving_listeners=[tf.train.CheckpointSaverListener()])
    with pytest.raises(ValueError, match="Could not find trained model"):
        est.get_variable_names()
    with pytest.raises(ValueError, match="Couldn't find trained model at"):
        est.export_savedmodel(str(tmp_path / "export"), lambda: None)


def test_model_fn_errors(tmp_path):
    def no_labels(features, mode):
        return model_fn(features, None, mode)
    with pytest.raises(ValueError, match="model_fn does not take labels"):
        tf.estimator.Estimator(no_labels, str(tmp_path)).train(input_fn, steps=1)

    def not_a_spec(features, labels):
        return linear(features)
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        tf.estimator.Estimator(not_a_spec, str(tmp_path)).train(input_fn, steps=1)

    def loss_metric(features, labels, mode):
        spec = model_fn(features, labels, mode)
        return spec._replace(eval_metric_ops={"loss": tf.metrics.mean(spec.loss)})
    with pytest.raises(ValueError, match='Metric with name "loss" is not allowed'):
        tf.estimator.Estimator(loss_metric, str(tmp_path)).evaluate(input_fn, steps=1)


def test_estimator_spec_validation():
    train, evaluate, predict = "train", "eval", "infer"
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        op = tf.no_op()
        with pytest.raises(ValueError, match="Missing train_op"):
            tf.estimator.EstimatorSpec(train, loss=loss)
        with pytest.raises(ValueError, match="Missing loss"):
            tf.estimator.EstimatorSpec(train, train_op=op)
        with pytest.raises(ValueError, match="Missing loss"):
            tf.estimator.EstimatorSpec(evaluate)
        with pytest.raises(ValueError, match="Missing predictions"):
            tf.estimator.EstimatorSpec(predict)
        with pytest.raises(TypeError, match="loss must be Tensor"):
            tf.estimator.EstimatorSpec(evaluate, loss=1.0)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            tf.estimator.EstimatorSpec(evaluate, loss=tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="train_op must be Operation or Tensor"):
            tf.estimator.EstimatorSpec(train, loss=loss, train_op="op")
        with pytest.raises(TypeError, match="predictions\\[y\\] must be Tensor"):
            tf.estimator.EstimatorSpec(predict, predictions={"y": [1.0]})
        with pytest.raises(TypeError, match="Values of eval_metric_ops must be"):
            tf.estimator.EstimatorSpec(evaluate, loss=loss, eval_metric_ops={"m": loss})
        with pytest.raises(TypeError, match="All hooks must be SessionRunHook"):
            tf.estimator.EstimatorSpec(train, loss=loss, train_op=op, training_hooks=[1])
        with pytest.raises(TypeError, match="scaffold must be tf.train.Scaffold"):
            tf.estimator.EstimatorSpec(evaluate, loss=loss, scaffold="s")
        spec = tf.estimator.EstimatorSpec(evaluate, loss=tf.reshape(loss, [1]))
        assert spec.loss.shape.ndims == 0 and spec.predictions == {}
        with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed"):
            spec._replace(mode=train)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be from the default graph"):
            tf.estimator.EstimatorSpec(evaluate, loss=loss)
    assert (tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL,
            tf.estimator.ModeKeys.PREDICT) == (train, evaluate, predict)
