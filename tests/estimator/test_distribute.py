"""tf.estimator with tf.distribute strategies (RunConfig train_distribute / eval_distribute).

The numbers are TF 1.15's: TF's Estimator path (make_input_fn_iterator, call_for_each_replica
of the model_fn under ``_scale_loss_for_estimator``, the reported loss reduced with
``get_loss_reduction()``) run with TF 2.21's ``tf.compat.v1.distribute.MirroredStrategy`` on two
CPUs, and derived by hand below.
"""

import json
import logging

import numpy as np
import pytest

import zps as tf

# 8 examples, y = x @ [1, -2] + 0.5; input_fn batches by 2, so each step of 2 replicas reads 4.
X = np.arange(16, dtype=np.float32).reshape(8, 2) / 10.0
Y = (X @ np.array([[1.0], [-2.0]], np.float32) + 0.5).astype(np.float32)
TWO_CPUS = ["/cpu:0", "/cpu:1"]

# Training (GradientDescent 0.1, mean squared error): the optimizer scales each replica's MEAN
# loss by 1/2 and the gradients are summed, i.e. each step is a step on the mean loss of the
# replicas' 4 rows (rows 0-3, then 4-7):
#   e = x @ w + b - y;  w -= 0.1 * 2 * x.T @ e / 4;  b -= 0.1 * 2 * sum(e) / 4
# The reported loss is the MEAN of the replicas' losses. TF's numbers:
TF_W = [-0.19074, -0.20628]
TF_B = [-0.1554]
TF_LOSSES = [0.049999993, 0.65174896]
# Evaluating these weights with eval_distribute: "loss" is the mean of the 4 batch losses
# (each replica's tf.metrics.mean, aggregated over the replicas), "mae" the metric over 8 rows.
TF_EVAL = {"loss": 0.07926256, "mae": 0.241192}


def _numpy_training(x, y, steps, rows_per_step):
    w, b, losses = np.zeros((2, 1)), np.zeros(1), []
    for s in range(steps):
        xs, ys = x[s * rows_per_step:(s + 1) * rows_per_step], y[s * rows_per_step:][:rows_per_step]
        e = xs @ w + b - ys
        losses.append(np.mean(e ** 2))
        w, b = w - 0.1 * 2 * xs.T @ e / len(xs), b - 0.1 * 2 * e.sum(0) / len(xs)
    return w.ravel(), b, losses


def test_the_hand_derivation_gives_tfs_numbers():
    w, b, losses = _numpy_training(X.astype(np.float64), Y.astype(np.float64), 2, 4)
    np.testing.assert_allclose(w, TF_W, rtol=1e-6)
    np.testing.assert_allclose(b, TF_B, rtol=1e-6)
    np.testing.assert_allclose(losses, TF_LOSSES, rtol=1e-6)


def input_fn(input_context=None):
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(2)


def model_fn(features, labels, mode):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, {"y": pred})
    loss = tf.losses.mean_squared_error(labels, pred)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode, {"y": pred}, loss, train_op,
        eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


def _config(tmp_path, **kwargs):
    return tf.estimator.RunConfig(
        model_dir=str(tmp_path), session_config=tf.ConfigProto(device_count={"CPU": 2}),
        **kwargs)


@pytest.fixture(autouse=True)
def _no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def _final_loss(caplog):
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Loss for")]
    return float(lines[-1].split(":")[1].strip(" ."))


@pytest.mark.parametrize("make_strategy", [
    lambda: tf.distribute.MirroredStrategy(TWO_CPUS),
    lambda: tf.distribute.experimental.CentralStorageStrategy(TWO_CPUS),
], ids=["mirrored", "central_storage"])
def test_train_with_two_replicas_matches_tf(tmp_path, caplog, make_strategy):
    est = tf.estimator.Estimator(model_fn, config=_config(tmp_path,
                                                          train_distribute=make_strategy()))
    with caplog.at_level(logging.INFO, logger="zps.estimator"):
        est.train(input_fn)      # 4 batches of 2 -> 2 steps of the 2 replicas
    # Each variable is saved once, under its own name.
    assert est.get_variable_names() == ["b", "global_step", "w"]
    assert est.get_variable_value("global_step") == 2
    np.testing.assert_allclose(est.get_variable_value("w").ravel(), TF_W, rtol=1e-5)
    np.testing.assert_allclose(est.get_variable_value("b"), TF_B, rtol=1e-5)
    assert _final_loss(caplog) == pytest.approx(TF_LOSSES[1], rel=1e-5)


def test_training_resumes_from_the_checkpoint_in_every_replica(tmp_path, caplog):
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    est = tf.estimator.Estimator(model_fn, config=_config(tmp_path, train_distribute=strategy))
    est.train(input_fn, steps=1)
    with caplog.at_level(logging.INFO, logger="zps.estimator"):
        est.train(lambda: input_fn().skip(2), steps=1)   # the second step's rows 4-7
    # Both replicas started the second step from the restored weights: TF's two steps.
    assert est.get_variable_value("global_step") == 2
    np.testing.assert_allclose(est.get_variable_value("w").ravel(), TF_W, rtol=1e-5)
    np.testing.assert_allclose(est.get_variable_value("b"), TF_B, rtol=1e-5)
    assert _final_loss(caplog) == pytest.approx(TF_LOSSES[1], rel=1e-5)


def test_local_train_and_evaluate_with_strategies(tmp_path):
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    est = tf.estimator.Estimator(model_fn, config=_config(
        tmp_path, train_distribute=strategy, eval_distribute=strategy))
    metrics, _ = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(input_fn, max_steps=2),
        tf.estimator.EvalSpec(input_fn, steps=None, start_delay_secs=0, throttle_secs=0))
    assert metrics["global_step"] == 2
    assert metrics["loss"] == pytest.approx(TF_EVAL["loss"], rel=1e-5)
    assert metrics["mae"] == pytest.approx(TF_EVAL["mae"], rel=1e-5)


def test_evaluate_with_eval_distribute_matches_tf_and_predict_runs_on_one_device(tmp_path):
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    est = tf.estimator.Estimator(model_fn, config=_config(
        tmp_path, train_distribute=strategy, eval_distribute=strategy))
    est.train(input_fn)
    metrics = est.evaluate(input_fn)
    assert metrics["global_step"] == 2
    assert metrics["loss"] == pytest.approx(TF_EVAL["loss"], rel=1e-5)
    assert metrics["mae"] == pytest.approx(TF_EVAL["mae"], rel=1e-5)
    # TF 1.15's predict ignores the strategies: one device, every example once.
    predictions = [p["y"] for p in est.predict(input_fn)]
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    np.testing.assert_allclose(np.concatenate(predictions), (X @ w + b).ravel(), rtol=1e-6)


def test_input_fn_gets_the_input_context_and_must_return_a_dataset(tmp_path):
    contexts = []

    def recording_input_fn(input_context):
        contexts.append(input_context)
        return input_fn()
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    est = tf.estimator.Estimator(model_fn, config=_config(tmp_path, train_distribute=strategy))
    est.train(recording_input_fn, steps=1)
    [ctx] = contexts
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 2)
    assert est.get_variable_value("global_step") == 1

    def tensors_input_fn():
        return {"x": tf.constant(X)}, tf.constant(Y)
    with pytest.raises(ValueError, match="input_fn must return a tf.data.Dataset"):
        est.train(tensors_input_fn, steps=1)


@pytest.mark.parametrize("make_strategy", [
    lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
    tf.distribute.experimental.ParameterServerStrategy,     # no cluster: local, one replica
], ids=["one_device", "local_parameter_server"])
def test_one_replica_strategies_train_as_without_a_strategy(tmp_path, make_strategy):
    def batch4_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(4)
    trained = []
    for name, strategy in (("plain", None), ("one", make_strategy())):
        est = tf.estimator.Estimator(model_fn, config=_config(tmp_path / name,
                                                              train_distribute=strategy))
        est.train(batch4_input_fn)
        trained.append([est.get_variable_value(v) for v in ("w", "b", "global_step")])
    for plain, one in zip(*trained):
        np.testing.assert_allclose(one, plain, rtol=1e-6)
    np.testing.assert_allclose(trained[1][0].ravel(), TF_W, rtol=1e-5)


def test_hooks_and_scaffolds_of_the_replicas_are_combined(tmp_path):
    made, ran, init_fn_calls = [], [], []

    class Hook(tf.train.SessionRunHook):
        def __init__(self):
            made.append(self)

        def begin(self):
            ran.append(self)

    def hooked_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode)
        return spec._replace(training_hooks=[Hook()], scaffold=tf.train.Scaffold(
            init_fn=lambda scaffold, sess: init_fn_calls.append(1)))
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    est = tf.estimator.Estimator(hooked_model_fn, config=_config(tmp_path,
                                                                 train_distribute=strategy))
    est.train(input_fn, steps=1)
    # Each replica made its hook; TF runs the first replica's, and the first init_fn once.
    assert len(made) == 2 and ran == made[:1]
    assert init_fn_calls == [1]


def test_canned_linear_regressor_with_train_distribute_sums_the_replicas_gradients(tmp_path):
    # The v1 canned estimators' loss is a SUM over the batch: the optimizer does not scale it
    # (get_loss_reduction() is SUM), so two replicas of 2 rows step as one device on 4 rows.
    columns = [tf.feature_column.numeric_column("x", shape=[2])]

    def batch_input_fn(batch):
        return lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(batch)
    weights, losses = [], []
    for name, strategy, batch in (("plain", None, 4),
                                  ("mirrored", tf.distribute.MirroredStrategy(TWO_CPUS), 2)):
        est = tf.estimator.LinearRegressor(columns, config=_config(tmp_path / name,
                                                                   train_distribute=strategy))
        est.train(batch_input_fn(batch))
        weights.append({v: est.get_variable_value(v) for v in est.get_variable_names()})
        losses.append(est.evaluate(batch_input_fn(4))["average_loss"])
    plain, mirrored = weights
    assert sorted(plain) == sorted(mirrored)
    assert plain["global_step"] == mirrored["global_step"] == 2
    for name in plain:
        np.testing.assert_allclose(mirrored[name], plain[name], rtol=1e-5, err_msg=name)
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)


def test_canned_dnn_classifier_trains_and_evaluates_per_replica(tmp_path):
    labels = (X[:, :1] > 0.7).astype(np.int64)

    def clf_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, labels)).repeat(20).batch(2)

    def classifier(**strategies):
        return tf.estimator.DNNClassifier(
            [4], [tf.feature_column.numeric_column("x", shape=[2])], n_classes=2,
            config=_config(tmp_path, tf_random_seed=1, **strategies))
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    est = classifier(train_distribute=strategy, eval_distribute=strategy)
    est.train(clf_input_fn, steps=30)
    names = est.get_variable_names()
    assert "dnn/hiddenlayer_0/kernel" in names
    assert not [n for n in names if "replica" in n]
    # The replicas' metrics aggregate to the metrics of one device over the same 8 batches
    # (accuracy_baseline is derived per replica from the aggregated label mean).
    metrics = est.evaluate(clf_input_fn, steps=4)
    one_device = classifier().evaluate(clf_input_fn, steps=8)
    assert metrics["global_step"] == one_device["global_step"] == 30
    assert {"accuracy", "accuracy_baseline", "auc", "average_loss", "loss"} <= set(metrics)
    for key in sorted(one_device):
        assert metrics[key] == pytest.approx(one_device[key], rel=1e-5), key
    predictions = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X}).batch(4)))
    assert len(predictions) == 8 and set(predictions[0]) >= {"class_ids", "probabilities"}


# -- RunConfig --------------------------------------------------------------------------------
def test_run_config_takes_the_strategies_of_a_distribute_config():
    train, evaluate = tf.distribute.OneDeviceStrategy("/cpu:0"), tf.distribute.MirroredStrategy()
    config = tf.estimator.RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig(
        train_distribute=train, eval_distribute=evaluate))
    assert config.train_distribute is train and config.eval_distribute is evaluate
    with pytest.raises(ValueError, match="Either `train_distribute` or"):
        tf.estimator.RunConfig(
            train_distribute=train,
            experimental_distribute=tf.contrib.distribute.DistributeConfig(train_distribute=train))
    with pytest.raises(ValueError, match="Either `eval_distribute` or"):
        tf.estimator.RunConfig(
            eval_distribute=train,
            experimental_distribute=tf.contrib.distribute.DistributeConfig(eval_distribute=train))
    with pytest.raises(NotImplementedError, match="standalone-client"):
        tf.estimator.RunConfig(experimental_distribute=tf.contrib.distribute.DistributeConfig(
            train_distribute=train, remote_cluster={"worker": ["w:1"]}))
    with pytest.raises(ValueError, match="train_distribute must be a tf.distribute.Strategy"):
        tf.estimator.RunConfig(train_distribute="mirrored")
    with pytest.raises(ValueError, match="must be a tf.contrib.distribute.DistributeConfig"):
        tf.estimator.RunConfig(experimental_distribute={"train_distribute": train})


CLUSTER = {"chief": ["c:1"], "ps": ["p:1"], "worker": ["w:1"]}


def test_run_config_with_a_cluster_leaves_the_task_to_the_distribute_coordinator(
        monkeypatch, tmp_path):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER,
                                                "task": {"type": "worker", "index": 0}}))
    strategy = tf.distribute.experimental.ParameterServerStrategy()
    config = tf.estimator.RunConfig(train_distribute=strategy)
    # As TF1's init_run_config (INDEPENDENT_WORKER): the cluster, and a local task for now.
    assert config.cluster_spec.as_dict() == CLUSTER
    assert (config.task_type, config.task_id, config.is_chief, config.master) == (
        "worker", 0, True, "")
    assert (config.num_ps_replicas, config.num_worker_replicas) == (0, 1)
    worker = config._for_coordinator_task("worker", 0)
    assert (worker.task_type, worker.is_chief, worker.master) == ("worker", False, "grpc://w:1")
    assert (worker.num_ps_replicas, worker.num_worker_replicas,
            worker.global_id_in_cluster) == (1, 2, 1)
    # Without train_distribute (or with a master job) the task is read as usual.
    assert tf.estimator.RunConfig(eval_distribute=strategy).master == "grpc://w:1"
    # Estimator.train/evaluate cannot run a cluster's task with a strategy: TF1 needs its
    # standalone client there; train_and_evaluate runs the task.
    est = tf.estimator.Estimator(model_fn, str(tmp_path), config=tf.estimator.RunConfig(
        train_distribute=strategy, eval_distribute=strategy))
    with pytest.raises(ValueError, match="call tf.estimator.train_and_evaluate in every task"):
        est.train(input_fn, steps=1)
    with pytest.raises(ValueError, match="Estimator.evaluate"):
        est.evaluate(input_fn, steps=1)


def test_train_and_evaluate_refuses_an_in_graph_strategy_on_a_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER,
                                                "task": {"type": "chief", "index": 0}}))
    est = tf.estimator.Estimator(model_fn, str(tmp_path), config=tf.estimator.RunConfig(
        train_distribute=tf.distribute.MirroredStrategy(TWO_CPUS)))
    with pytest.raises(NotImplementedError, match="in-graph multi-worker"):
        tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=1),
                                        tf.estimator.EvalSpec(input_fn))
