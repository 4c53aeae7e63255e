"""Train a DNNClassifier on scikit-learn's digits through a ``tf.distribute`` strategy, the way
TF 1.14/1.15 programs hand one to an Estimator (``RunConfig(train_distribute=...)``).

    python examples/estimator_strategy.py --strategy mirrored
        # one process, the model replicated on two CPU devices; each global batch split between them
    zps-launch --ps 1 --workers 2 --chief examples/estimator_strategy.py --strategy ps
        # ParameterServerStrategy from TF_CONFIG: the chief and a worker train asynchronously,
        # the variables live on the ps; the chief evaluates the final checkpoint

The program uses only TF 1.15's API (``import zps as tf`` in place of ``import tensorflow as tf``).
"""

import argparse
import json
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import zps as tf


def load_data(seed):
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


def input_fn(x, y, batch_size, shuffle, seed):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices(({"pixels": x}, y))
        if shuffle:
            ds = ds.shuffle(len(x), seed=seed).repeat()
        return ds.batch(batch_size, drop_remainder=shuffle)
    return fn


def default_model_dir():
    # The tasks of one launched cluster share a directory (named after the chief's address);
    # a run in one process gets a fresh one.
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    if "chief" in cluster:
        port = cluster["chief"][0].rsplit(":", 1)[1]
        return os.path.join(tempfile.gettempdir(), "zps_estimator_strategy_%s" % port)
    return tempfile.mkdtemp(prefix="zps_estimator_strategy_")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strategy", choices=["mirrored", "ps"], default="mirrored")
    parser.add_argument("--train_steps", type=int, default=600)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--model_dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args, _ = parser.parse_known_args()   # zps-launch also passes the seed's --job_name & co.

    x_train, x_test, y_train, y_test = load_data(args.seed)
    if args.strategy == "mirrored":
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        session_config = tf.ConfigProto(device_count={"CPU": 2})
    else:
        strategy = tf.distribute.experimental.ParameterServerStrategy()
        session_config = None
    config = tf.estimator.RunConfig(
        model_dir=args.model_dir or default_model_dir(), train_distribute=strategy,
        session_config=session_config, tf_random_seed=args.seed, save_checkpoints_steps=200,
        log_step_count_steps=None)
    classifier = tf.estimator.DNNClassifier(
        hidden_units=[64], feature_columns=[tf.feature_column.numeric_column("pixels", [64])],
        n_classes=10, optimizer=tf.train.AdamOptimizer(0.01), config=config)
    train_spec = tf.estimator.TrainSpec(
        input_fn(x_train, y_train, args.batch_size, True, args.seed), max_steps=args.train_steps)
    eval_spec = tf.estimator.EvalSpec(
        input_fn(x_test, y_test, len(x_test), False, args.seed), steps=None)
    tf.estimator.train_and_evaluate(classifier, train_spec, eval_spec)
    # (With a strategy, TF 1.15's RunConfig leaves the task to its distribute coordinator:
    # config.is_chief is True on every task, so the task is read from TF_CONFIG.)
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    if task.get("type", "chief") == "chief":
        result = classifier.evaluate(input_fn(x_test, y_test, len(x_test), False, args.seed))
        print("%s strategy: %d replica(s) in sync; global step %d; held-out accuracy %.3f"
              % (args.strategy, strategy.num_replicas_in_sync, result["global_step"],
                 result["accuracy"]))


if __name__ == "__main__":
    main()
