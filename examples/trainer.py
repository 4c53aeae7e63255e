"""The seed's example trainer (between-graph replication), filled in with a real model and data.

Run a whole local cluster (2 ps + 2 workers) with the launcher:

    zps-launch --ps 2 --workers 2 examples/trainer.py --train_steps 2000

or start each task by hand, exactly as the seed does (one command per task):

    python examples/trainer.py --ps_hosts=localhost:2222,localhost:2223 \\
        --worker_hosts=localhost:2224,localhost:2225 --job_name=ps --task_index=0
    ... --job_name=ps --task_index=1
    ... --job_name=worker --task_index=0
    ... --job_name=worker --task_index=1

The model is an MLP on scikit-learn's bundled handwritten digits; each worker trains on its own
shuffled mini-batches (asynchronously, or with --sync through SyncReplicasOptimizer), the chief
(worker 0) checkpoints to --checkpoint_dir and prints the held-out accuracy at the end.
Apart from the import and the model, this is the seed's program line for line.
"""

import argparse
import logging
import sys
import time

import numpy as np

import zps as tf

FLAGS = None


def load_digits_split(seed=0):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


def build_model(x, labels):
    hidden = _dense(x, 128, "hidden", tf.nn.relu)
    logits = _dense(hidden, 10, "logits", None)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    return loss, accuracy


def _dense(x, units, name, activation):
    with tf.variable_scope(name):
        w = tf.get_variable("weights", [x.get_shape()[1].value, units])
        b = tf.get_variable("biases", [units], initializer=tf.zeros_initializer())
        y = tf.matmul(x, w) + b
        return activation(y) if activation is not None else y


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    # Create a cluster from the parameter server and worker hosts.
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    # Create and start a server for the local task.
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
    elif FLAGS.job_name == "worker":
        x_train, x_test, y_train, y_test = load_digits_split()
        is_chief = FLAGS.task_index == 0
        # Assigns ops to the local worker by default.
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % FLAGS.task_index,
                cluster=cluster)):
            # Build model...
            x = tf.placeholder(tf.float32, [None, 64], name="x")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            loss, accuracy = build_model(x, labels)
            global_step = tf.contrib.framework.get_or_create_global_step()
            opt = tf.train.AdagradOptimizer(FLAGS.learning_rate)
            if FLAGS.sync:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=len(worker_hosts),
                                                     total_num_replicas=len(worker_hosts))
            train_op = opt.minimize(loss, global_step=global_step)
        # The StopAtStepHook handles stopping after running given steps.
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
        if FLAGS.sync:
            hooks.append(opt.make_session_run_hook(is_chief))
        rng = np.random.default_rng(FLAGS.task_index)
        # zps addition: checkpoint every N steps instead of every 600 s.
        checkpoint_every = ({} if FLAGS.save_checkpoint_steps is None
                            else {"save_checkpoint_steps": FLAGS.save_checkpoint_steps})
        # The MonitoredTrainingSession takes care of session initialization,
        # restoring from a checkpoint, saving to a checkpoint, and closing when done
        # or an error occurs.
        with tf.train.MonitoredTrainingSession(master=server.target,
                                               is_chief=is_chief,
                                               checkpoint_dir=FLAGS.checkpoint_dir,
                                               hooks=hooks, **checkpoint_every) as mon_sess:
            print("worker %d: session ready at %.3f" % (FLAGS.task_index, time.time()), flush=True)
            step = 0
            while not mon_sess.should_stop():
                # Run a training step asynchronously.
                # See tf.train.SyncReplicasOptimizer for additional details on how to
                # perform *synchronous* training.
                # mon_sess.run handles AbortedError in case of preempted PS.
                idx = rng.integers(0, len(x_train), FLAGS.batch_size)
                _, loss_value = mon_sess.run([train_op, loss],
                                             {x: x_train[idx], labels: y_train[idx]})
                step += 1
                if step % 200 == 0:
                    print("worker %d: local step %d, loss %.4f"
                          % (FLAGS.task_index, step, loss_value), flush=True)
        # Evaluate on held-out data in a plain session on the same cluster.
        with tf.Session(server.target) as sess:
            test_accuracy = sess.run(accuracy, {x: x_test, labels: y_test})
        print("worker %d: done after %d local steps; held-out accuracy %.4f"
              % (FLAGS.task_index, step, test_accuracy), flush=True)
        if is_chief and test_accuracy < FLAGS.min_accuracy:
            print("chief: accuracy %.4f below --min_accuracy %.2f" % (test_accuracy,
                                                                     FLAGS.min_accuracy))
            return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    # Flags for defining the tf.train.ClusterSpec
    parser.add_argument("--ps_hosts", type=str, default="",
                        help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--worker_hosts", type=str, default="",
                        help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    # Flags for defining the tf.train.Server
    parser.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    # zps additions: the training run itself
    parser.add_argument("--sync", action="store_true", help="SyncReplicasOptimizer over workers")
    parser.add_argument("--train_steps", type=int, default=2000, help="last global step")
    parser.add_argument("--checkpoint_dir", type=str, default=None,
                        help="default /tmp/train_logs, or /tmp/train_logs_sync with --sync (a "
                        "sync run cannot resume from an async run's checkpoint: it has more "
                        "variables)")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    parser.add_argument("--save_checkpoint_steps", type=int, default=None,
                        help="the chief checkpoints every N global steps (default: every 600 s)")
    parser.add_argument("--min_accuracy", type=float, default=0.0,
                        help="exit 1 if the chief's held-out accuracy is below this")
    FLAGS, unparsed = parser.parse_known_args()
    if FLAGS.checkpoint_dir is None:
        FLAGS.checkpoint_dir = "/tmp/train_logs_sync" if FLAGS.sync else "/tmp/train_logs"
    # Show what the sessions do (waiting for the chief, restoring, recovering), with times.
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
