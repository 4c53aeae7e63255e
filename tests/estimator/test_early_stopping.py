"""tf.estimator.experimental's hooks: the early-stopping hooks (train_and_evaluate stops at the
step the evaluations say; in a cluster the chief's decision stops the other workers),
InMemoryEvaluatorHook and make_stop_at_checkpoint_step_hook."""

import json
import threading

import numpy as np
import pytest

import zps as tf
from zps.estimator import early_stopping
from zps.testing.cluster import InProcessCluster
from zps.train.basic_session_run_hooks import _get_or_create_global_step_read

JOIN_TIMEOUT_S = 60


def model_fn(features, labels, mode):
    """w_k = 1 - 0.5**k after k steps of SGD on (w - 1)**2: the eval loss at step k is 0.25**k.
    Metrics: w itself, and a plateau (3 - step, at least 1) and a peak (step, at most 2)."""
    w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
    loss = tf.square(w - 1.0)
    step = tf.cast(tf.train.get_global_step(), tf.float32)
    train_op = None
    if mode == tf.estimator.ModeKeys.TRAIN:
        train_op = tf.train.GradientDescentOptimizer(0.25).minimize(
            loss, tf.train.get_global_step())
    metrics = {"w": tf.metrics.mean(w),
               "plateau": tf.metrics.mean(tf.maximum(3.0 - step, 1.0)),
               "peak": tf.metrics.mean(tf.minimum(step, 2.0))}
    return tf.estimator.EstimatorSpec(mode, {"w": w}, loss, train_op, metrics)


def input_fn():
    return tf.data.Dataset.from_tensors(({"x": [0.0]}, [0.0])).repeat()


def _estimator(tmp_path):
    return tf.estimator.Estimator(model_fn, str(tmp_path / "model"),
                                  tf.estimator.RunConfig(save_checkpoints_steps=1))


def _train_and_evaluate(est, hook, max_steps=20):
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(input_fn, max_steps=max_steps, hooks=[hook]),
        tf.estimator.EvalSpec(input_fn, steps=1, throttle_secs=0))
    return int(est.get_variable_value("global_step"))


@pytest.fixture(autouse=True)
def _local(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def test_stop_if_lower_hook_stops_at_the_first_evaluation_below_the_threshold(tmp_path):
    est = _estimator(tmp_path)
    hook = tf.estimator.experimental.stop_if_lower_hook(est, "loss", 0.01, run_every_secs=0)
    assert _train_and_evaluate(est, hook) == 4           # losses 0.25, 0.0625, 0.0156, 0.0039
    metrics = early_stopping.read_eval_metrics(est.eval_dir())
    assert list(metrics) == [1, 2, 3, 4]
    np.testing.assert_allclose([m["loss"] for m in metrics.values()],
                               [0.25, 0.0625, 0.015625, 0.00390625], rtol=1e-6)


def test_stop_if_higher_hook_and_min_steps(tmp_path):
    est = _estimator(tmp_path)
    hook = tf.estimator.experimental.stop_if_higher_hook(est, "w", 0.9, run_every_secs=None,
                                                         run_every_steps=1)
    assert _train_and_evaluate(est, hook) == 4           # w = 0.5, 0.75, 0.875, 0.9375
    est = tf.estimator.Estimator(model_fn, str(tmp_path / "other"),
                                 tf.estimator.RunConfig(save_checkpoints_steps=1))
    hook = tf.estimator.experimental.stop_if_higher_hook(est, "w", 0.4, min_steps=3,
                                                         run_every_secs=0)
    assert _train_and_evaluate(est, hook) == 3           # step 1 (0.5) is before min_steps


def test_stop_if_no_decrease_and_no_increase_hooks(tmp_path):
    est = _estimator(tmp_path)
    hook = tf.estimator.experimental.stop_if_no_decrease_hook(est, "plateau", 2,
                                                              run_every_secs=0)
    assert _train_and_evaluate(est, hook) == 4           # 2, 1 (best at 2), 1, 1: 4 - 2 >= 2
    est = tf.estimator.Estimator(model_fn, str(tmp_path / "other"),
                                 tf.estimator.RunConfig(save_checkpoints_steps=1))
    hook = tf.estimator.experimental.stop_if_no_increase_hook(est, "peak", 3, run_every_secs=0)
    assert _train_and_evaluate(est, hook) == 5           # 1, 2 (best at 2), 2, 2, 2: 5 - 2 >= 3


def test_no_stop_trains_to_max_steps_and_an_unknown_metric_is_an_error(tmp_path):
    est = _estimator(tmp_path)
    hook = tf.estimator.experimental.stop_if_lower_hook(est, "loss", 0.0, run_every_secs=0)
    assert _train_and_evaluate(est, hook, max_steps=3) == 3
    assert not bool(est.get_variable_value("signal_early_stopping/STOP"))
    hook = tf.estimator.experimental.stop_if_lower_hook(est, "accuracy", 0.5, run_every_secs=0)
    with pytest.raises(KeyError, match="has no metric .*accuracy"):
        _train_and_evaluate(est, hook, max_steps=5)


def test_make_early_stopping_hook_asks_every_run_every_steps(tmp_path):
    est = _estimator(tmp_path)
    asked = []

    def should_stop_fn():
        asked.append(int(est.get_variable_value("global_step")))   # the last checkpoint's step
        return len(asked) == 3

    hook = tf.estimator.experimental.make_early_stopping_hook(est, should_stop_fn,
                                                              run_every_secs=None,
                                                              run_every_steps=3)
    est.train(input_fn, hooks=[hook], max_steps=100)
    assert asked == [1, 4, 7]                             # global steps 1, 4, 7
    assert int(est.get_variable_value("global_step")) == 7


def test_argument_errors(tmp_path):
    est = _estimator(tmp_path)
    with pytest.raises(TypeError, match="must have type `tf.estimator.Estimator`"):
        tf.estimator.experimental.make_early_stopping_hook(object(), lambda: True)
    with pytest.raises(ValueError, match="Only one of `run_every_secs` and `run_every_steps`"):
        tf.estimator.experimental.make_early_stopping_hook(est, lambda: True, run_every_steps=2)
    with pytest.raises(TypeError, match="`should_stop_fn` must be callable"):
        tf.estimator.experimental.make_early_stopping_hook(est, "stop")


def _cluster_estimator(cluster, task_type, model_dir, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster.spec,
                                                "task": {"type": task_type, "index": 0}}))
    config = tf.estimator.RunConfig(save_checkpoints_steps=1, log_step_count_steps=None)
    return tf.estimator.Estimator(model_fn, model_dir, config)


def test_in_a_cluster_the_chief_decides_and_the_worker_stops(tmp_path, monkeypatch):
    model_dir = str(tmp_path / "model")
    worker_steps = []
    worker_running = threading.Event()

    class WorkerProbe(tf.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            worker_steps.append(1)
            worker_running.set()

    def should_stop_fn():          # stop once the worker has trained too
        return worker_running.is_set()

    with InProcessCluster({"ps": 1, "chief": 1, "worker": 1}) as cluster:
        chief = _cluster_estimator(cluster, "chief", model_dir, monkeypatch)
        worker = _cluster_estimator(cluster, "worker", model_dir, monkeypatch)
        chief_hook = tf.estimator.experimental.make_early_stopping_hook(
            chief, should_stop_fn, run_every_secs=None, run_every_steps=1)
        worker_hook = tf.estimator.experimental.make_early_stopping_hook(
            worker, should_stop_fn, run_every_secs=None, run_every_steps=1)
        assert type(chief_hook).__name__ == "_StopOnPredicateHook"
        assert type(worker_hook).__name__ == "_CheckForStoppingHook"
        errors = []

        def train(est, hooks):
            try:
                est.train(input_fn, hooks=hooks)          # no max_steps: only STOP ends it
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)

        threads = [threading.Thread(target=train, args=(chief, [chief_hook]), daemon=True),
                   threading.Thread(target=train, args=(worker, [worker_hook, WorkerProbe()]),
                                    daemon=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(JOIN_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "a trainer did not stop"
        assert not errors, errors
    assert worker_steps


def _no_checkpoints(tmp_path):
    return tf.estimator.Estimator(model_fn, str(tmp_path / "model"), tf.estimator.RunConfig(
        save_checkpoints_steps=None, save_checkpoints_secs=None))


def test_in_memory_evaluator_hook_evaluates_the_session_values(tmp_path):
    est = _no_checkpoints(tmp_path)
    evaluator = tf.estimator.experimental.InMemoryEvaluatorHook(
        est, input_fn, steps=1, name="mem", every_n_iter=2)
    est.train(input_fn, hooks=[evaluator], steps=5)
    assert est.latest_checkpoint() is None               # evaluated without a checkpoint
    metrics = early_stopping.read_eval_metrics(est.eval_dir("mem"))
    assert list(metrics) == [0, 2, 4, 5]                 # at the start, every 2, at the end
    np.testing.assert_allclose([m["loss"] for m in metrics.values()],
                               [1.0, 0.0625, 0.00390625, 0.0009765625], rtol=1e-6)
    np.testing.assert_allclose(metrics[4]["w"], 0.9375, rtol=1e-6)


def test_in_memory_evaluator_hook_drives_early_stopping(tmp_path):
    est = _no_checkpoints(tmp_path)
    hooks = [tf.estimator.experimental.InMemoryEvaluatorHook(est, input_fn, steps=1,
                                                             every_n_iter=1),
             tf.estimator.experimental.stop_if_lower_hook(est, "loss", 0.01, run_every_secs=0)]
    est.train(input_fn, hooks=hooks, steps=100)
    metrics = early_stopping.read_eval_metrics(est.eval_dir())
    assert list(metrics) == [0, 1, 2, 3, 4]              # stopped at step 4 (loss 0.0039)


def test_in_memory_evaluator_hook_errors(tmp_path, monkeypatch):
    est = _no_checkpoints(tmp_path)
    with pytest.raises(ValueError, match="invalid every_n_iter=0"):
        tf.estimator.experimental.InMemoryEvaluatorHook(est, input_fn, every_n_iter=0)

    def saver_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode)
        return spec._replace(scaffold=tf.train.Scaffold(saver=tf.train.Saver()))
    hook = tf.estimator.experimental.InMemoryEvaluatorHook(
        tf.estimator.Estimator(saver_model_fn, str(tmp_path / "s")), input_fn)
    with pytest.raises(ValueError, match="does not support custom saver"):
        hook.begin()
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]},
        "task": {"type": "chief", "index": 0}}))
    with pytest.raises(ValueError, match="supports only single machine"):
        tf.estimator.experimental.InMemoryEvaluatorHook(
            tf.estimator.Estimator(model_fn, str(tmp_path / "c")), input_fn)


def test_make_stop_at_checkpoint_step_hook(tmp_path, monkeypatch):
    est = _estimator(tmp_path)
    est.train(input_fn, steps=5)
    assert isinstance(tf.estimator.experimental.make_stop_at_checkpoint_step_hook(est, 3),
                      tf.train.StopAtStepHook)
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0}}))
    worker_est = tf.estimator.Estimator(model_fn, est.model_dir)

    def runs_until_stop(last_step, max_runs=12):
        hook = tf.estimator.experimental.make_stop_at_checkpoint_step_hook(
            worker_est, last_step, wait_after_file_check_secs=0)
        with tf.Graph().as_default():
            step = tf.train.create_global_step()
            read = _get_or_create_global_step_read()
            with tf.control_dependencies([read]):          # as the Estimator's train op
                increment = tf.assign_add(step, 1)
            runs = 0
            with tf.train.MonitoredSession(hooks=[hook]) as sess:
                while not sess.should_stop() and runs < max_runs:
                    sess.run(increment)
                    runs += 1
        return runs

    assert runs_until_stop(3) == 3       # the checkpoint (step 5) is past step 3
    assert runs_until_stop(8) == 12      # it is not at step 8: never stops
