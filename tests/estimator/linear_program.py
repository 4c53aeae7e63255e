"""A train_and_evaluate program run by every task of a test cluster (TF_CONFIG says which).

    TF_CONFIG=... python -m tests.estimator.linear_program MODEL_DIR RESULT_FILE

Each task writes its outcome (task, and for the evaluator its last metrics) as JSON to
RESULT_FILE; a ps task serves until it is killed.
"""

import json
import logging
import os
import sys
import time

import numpy as np

import zps as tf

MAX_STEPS = 40
TRAINERS = ("chief", "worker")
BARRIER_TIMEOUT_S = 30


class TrainerHook(tf.train.SessionRunHook):
    """Counts this task's steps; in a cluster, waits until every trainer has a session (so that
    both train, whichever started first) and paces the steps so that they interleave."""

    def __init__(self, task, barrier_dir):
        self.task, self.barrier_dir, self.steps = task, barrier_dir, 0

    def after_create_session(self, session, coord):
        if self.task not in TRAINERS:
            return
        open(os.path.join(self.barrier_dir, self.task + ".ready"), "w").close()
        deadline = time.monotonic() + BARRIER_TIMEOUT_S
        while not all(os.path.exists(os.path.join(self.barrier_dir, t + ".ready"))
                      for t in TRAINERS):
            if time.monotonic() > deadline:
                raise RuntimeError("the other trainer did not start within %d s"
                                   % BARRIER_TIMEOUT_S)
            time.sleep(0.01)

    def after_run(self, run_context, run_values):
        self.steps += 1
        if self.task in TRAINERS:
            time.sleep(0.005)
TRUE_W = np.array([[2.0], [-1.0]], np.float32)


def data(n=64, seed=0):
    x = np.random.RandomState(seed).randn(n, 2).astype(np.float32)
    return x, x @ TRUE_W + 0.5


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    predictions = tf.matmul(features["x"], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
    loss = tf.reduce_mean(tf.square(predictions - labels))
    train_op = tf.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.train.get_global_step())
    metrics = {"mae": tf.metrics.mean_absolute_error(labels, predictions)}
    return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions}, loss=loss,
                                      train_op=train_op, eval_metric_ops=metrics)


def train_input_fn():
    x, y = data()
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)


def eval_input_fn():
    x, y = data(32, seed=1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(16)


def main(model_dir, result_file):
    logging.basicConfig(level=logging.INFO)
    config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=10,
                                    experimental_max_worker_delay_secs=0,
                                    session_creation_timeout_secs=30)
    estimator = tf.estimator.Estimator(model_fn, config=config, params={"learning_rate": 0.1})
    hook = TrainerHook(config.task_type if config.cluster_spec else None,
                       os.path.dirname(result_file))
    result = tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(train_input_fn, max_steps=MAX_STEPS, hooks=[hook]),
        tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0.2))
    outcome = {"task": config.task_type, "steps": hook.steps}
    if config.task_type == "evaluator":
        outcome["metrics"] = {k: float(v) for k, v in estimator.evaluate(eval_input_fn).items()}
    elif result is not None:
        outcome["metrics"] = {k: float(v) for k, v in result[0].items()}
    with open(result_file, "w") as f:
        json.dump(outcome, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
