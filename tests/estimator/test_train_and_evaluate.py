"""train_and_evaluate locally and as a real cluster: a ps, a chief, a worker and an evaluator
process running the same program (tests/estimator/linear_program.py) with their TF_CONFIG."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import zps as tf
from tests.estimator import linear_program
from zps.testing.cluster import free_ports

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASK_TIMEOUT_S = 60


def test_local_train_and_evaluate_evaluates_after_checkpoints(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    linear_program.main(str(tmp_path / "model"), str(tmp_path / "result.json"))
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["task"] == "worker"
    assert result["metrics"]["global_step"] == linear_program.MAX_STEPS
    assert result["metrics"]["loss"] < 1e-3
    assert tf.train.latest_checkpoint(str(tmp_path / "model")).endswith("model.ckpt-40")
    assert os.listdir(tmp_path / "model" / "eval")   # the evaluation's event file


def _start(task_type, index, cluster, tmp_path):
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index}}),
        PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with open(tmp_path / ("%s%d.log" % (task_type, index)), "w") as log:   # the child keeps it
        return subprocess.Popen(
            [sys.executable, "-m", "tests.estimator.linear_program", str(tmp_path / "model"),
             str(tmp_path / ("%s.json" % task_type))],
            env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_distributed_train_and_evaluate_with_real_processes(tmp_path):
    ports = free_ports(3, "127.0.0.1")
    cluster = {"ps": ["127.0.0.1:%d" % ports[0]], "chief": ["127.0.0.1:%d" % ports[1]],
               "worker": ["127.0.0.1:%d" % ports[2]]}
    procs = {}
    try:
        for task in ("ps", "chief", "worker", "evaluator"):
            procs[task] = _start(task, 0, cluster, tmp_path)
        for task in ("chief", "worker", "evaluator"):
            try:
                code = procs[task].wait(timeout=TASK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = "timeout"
            log = (tmp_path / ("%s0.log" % task)).read_text()
            assert code == 0, "%s %s:\n%s" % (task, code, log[-4000:])
        assert procs["ps"].poll() is None, "the ps task must serve until it is stopped"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
    model_dir = str(tmp_path / "model")
    step = int(tf.train.load_variable(model_dir, "global_step"))
    assert step >= linear_program.MAX_STEPS
    w = tf.train.load_variable(model_dir, "w")
    np.testing.assert_allclose(w, linear_program.TRUE_W, atol=0.05)
    evaluator = json.loads((tmp_path / "evaluator.json").read_text())
    assert evaluator["metrics"]["global_step"] == step
    assert evaluator["metrics"]["loss"] < 1e-2
    # Both trainers stepped the one global step held by the ps (each run adds 1 to it).
    chief, worker = (json.loads((tmp_path / ("%s.json" % t)).read_text())["steps"]
                     for t in ("chief", "worker"))
    assert chief > 0 and worker > 0 and chief + worker >= step, (chief, worker, step)


def test_spec_and_argument_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    est = tf.estimator.Estimator(linear_program.model_fn, str(tmp_path), params={
        "learning_rate": 0.1})
    train = tf.estimator.TrainSpec(linear_program.train_input_fn, max_steps=1)
    evaluate = tf.estimator.EvalSpec(linear_program.eval_input_fn)
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        tf.estimator.TrainSpec("data")
    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        tf.estimator.TrainSpec(linear_program.train_input_fn, max_steps=0)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0"):
        tf.estimator.EvalSpec(linear_program.eval_input_fn, throttle_secs=-1)
    with pytest.raises(TypeError, match="`name` must be string"):
        tf.estimator.EvalSpec(linear_program.eval_input_fn, name=1)
    with pytest.raises(TypeError, match="`estimator` must have type"):
        tf.estimator.train_and_evaluate(object(), train, evaluate)
    with pytest.raises(TypeError, match="`train_spec` must have type"):
        tf.estimator.train_and_evaluate(est, evaluate, evaluate)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["c:1"]},
                                                "task": {"type": "evaluator", "index": 1}}))
    est = tf.estimator.Estimator(linear_program.model_fn, str(tmp_path), params={
        "learning_rate": 0.1})
    with pytest.raises(ValueError, match="there can only be one `evaluator` task"):
        tf.estimator.train_and_evaluate(est, train, evaluate)
    with pytest.raises(ValueError, match="Please use tf.estimator.train_and_evaluate"):
        est.train(linear_program.train_input_fn, steps=1)
