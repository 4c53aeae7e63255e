"""train_and_evaluate with ``RunConfig(train_distribute=ParameterServerStrategy())`` on a real
cluster: TF1's distribute coordinator (INDEPENDENT_WORKER mode) in a ps, a chief, a worker and an
evaluator process, each running this file as its program with its TF_CONFIG.

    TF_CONFIG=... python -m tests.estimator.test_distribute_ps MODEL_DIR RESULT_FILE
"""

import json
import logging
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


class PlacementHook(linear_program.TrainerHook):
    """The trainers' barrier and step count, and where the graph put each variable."""

    def begin(self):
        self.devices = {v.op.name: v.device for v in tf.global_variables()}


def main(model_dir, result_file):
    logging.basicConfig(level=logging.INFO)
    task = json.loads(os.environ["TF_CONFIG"])["task"]["type"]
    config = tf.estimator.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=10, session_creation_timeout_secs=30,
        train_distribute=tf.distribute.experimental.ParameterServerStrategy())
    estimator = tf.estimator.Estimator(linear_program.model_fn, config=config,
                                       params={"learning_rate": 0.1})
    hook = PlacementHook(task, os.path.dirname(result_file))
    tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(linear_program.train_input_fn,
                                          max_steps=linear_program.MAX_STEPS, hooks=[hook]),
        tf.estimator.EvalSpec(linear_program.eval_input_fn, steps=None, start_delay_secs=0,
                              throttle_secs=0.2))
    outcome = {"task": task, "steps": hook.steps, "devices": getattr(hook, "devices", None)}
    if task == "evaluator":
        outcome["metrics"] = {k: float(v) for k, v in
                              estimator.evaluate(linear_program.eval_input_fn).items()}
    with open(result_file, "w") as f:
        json.dump(outcome, f)


def _start(task_type, cluster, tmp_path):
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": 0}}),
        PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with open(tmp_path / ("%s.log" % task_type), "w") as log:   # the child keeps it
        return subprocess.Popen(
            [sys.executable, "-m", "tests.estimator.test_distribute_ps", str(tmp_path / "model"),
             str(tmp_path / ("%s.json" % task_type))],
            env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_parameter_server_strategy_trains_a_real_cluster(tmp_path):
    ports = free_ports(3, "127.0.0.1")
    cluster = {"ps": ["127.0.0.1:%d" % ports[0]], "chief": ["127.0.0.1:%d" % ports[1]],
               "worker": ["127.0.0.1:%d" % ports[2]]}
    procs = {}
    try:
        for task in ("ps", "chief", "worker", "evaluator"):
            procs[task] = _start(task, cluster, tmp_path)
        for task in ("chief", "worker", "evaluator"):
            try:
                code = procs[task].wait(timeout=TASK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = "timeout"
            log = (tmp_path / ("%s.log" % task)).read_text()
            assert code == 0, "%s %s:\n%s" % (task, code, log[-4000:])
        assert procs["ps"].poll() is None, "the ps task must serve until it is stopped"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
    chief, worker, evaluator = (json.loads((tmp_path / ("%s.json" % t)).read_text())
                                for t in ("chief", "worker", "evaluator"))
    # The strategy put the variables on the ps task, in both trainers' graphs.
    for trainer in (chief, worker):
        for name in ("w", "b", "global_step"):
            assert trainer["devices"][name].startswith("/job:ps/task:0"), trainer["devices"]
    # Both trained the one model of the ps; the chief checkpointed it.
    model_dir = str(tmp_path / "model")
    step = int(tf.train.load_variable(model_dir, "global_step"))
    assert step >= linear_program.MAX_STEPS
    assert chief["steps"] > 0 and worker["steps"] > 0
    assert chief["steps"] + worker["steps"] >= step
    np.testing.assert_allclose(tf.train.load_variable(model_dir, "w"), linear_program.TRUE_W,
                               atol=0.05)
    assert evaluator["metrics"]["global_step"] == step
    assert evaluator["metrics"]["loss"] < 1e-2


if __name__ == "__main__":
    main(*sys.argv[1:])
