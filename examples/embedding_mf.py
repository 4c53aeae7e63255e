"""Matrix factorization on generated click data, with a 1M-row user table split over 2 ps tasks.

Run a whole local cluster (2 ps + 2 workers) with the launcher:

    zps-launch --ps 2 --workers 2 examples/embedding_mf.py --train_steps 300

or start each task by hand with the seed's flags (--ps_hosts, --worker_hosts, --job_name,
--task_index), as examples/trainer.py shows.

The model predicts a click from a user and an item: ``sigmoid(<user_emb, item_emb> + item_bias
+ bias)``. The user table has ``--users`` rows (default 1,000,000) and is partitioned in two
with ``fixed_size_partitioner(2)``; ``replica_device_setter`` puts one shard on each ps task.
Each step looks up a batch's users and items with ``tf.nn.embedding_lookup``: the ids are
deduplicated on the worker, each shard's rows are gathered on its ps, and the Adagrad update
comes back as ``IndexedSlices`` applied in place to the touched rows only, so a step moves a few
hundred rows, not the 64 MB table. Users are drawn from a heavy-tailed (Zipf) distribution, as
real traffic is; the clicks come from hidden user groups and item factors, so the held-out loss
each worker prints before and after training goes down.
"""

import argparse
import sys
import time

import numpy as np

import zps as tf

FLAGS = None
GROUPS = 8      # hidden user taste groups
TRUE_DIM = 4    # dimension of the hidden factors


def _partitioner(num_shards):
    fixed = getattr(tf, "fixed_size_partitioner", None)
    if fixed is None:  # until the public namespace exports it as tf.fixed_size_partitioner
        from zps.ops.partitioned_variables import fixed_size_partitioner as fixed
    return fixed(num_shards)


class ClickData:
    """Generated clicks: P(click | u, i) = sigmoid(<group_factor[u % GROUPS], item_factor[i]> +
    item_bias[i]); users Zipf-distributed over ``num_users``, items uniform."""

    def __init__(self, num_users, num_items, seed=1234):
        rng = np.random.default_rng(seed)  # the same hidden truth on every worker
        self.num_users, self.num_items = num_users, num_items
        self.group_factors = rng.standard_normal((GROUPS, TRUE_DIM)) * 1.5
        self.item_factors = rng.standard_normal((num_items, TRUE_DIM))
        self.item_bias = rng.standard_normal(num_items)

    def batch(self, rng, size):
        users = (rng.zipf(1.2, size) - 1) % self.num_users
        items = rng.integers(0, self.num_items, size)
        score = np.einsum("bd,bd->b", self.group_factors[users % GROUPS],
                          self.item_factors[items]) + self.item_bias[items]
        clicks = (rng.random(size) < 1.0 / (1.0 + np.exp(-score))).astype(np.float32)
        return users.astype(np.int64), items.astype(np.int64), clicks


def build_model(users, items, clicks):
    with tf.variable_scope("mf"):
        user_emb = tf.get_variable("user_embedding", [FLAGS.users, FLAGS.dim],
                                   initializer=tf.random_normal_initializer(stddev=0.05),
                                   partitioner=_partitioner(2))
        item_emb = tf.get_variable("item_embedding", [FLAGS.items, FLAGS.dim],
                                   initializer=tf.random_normal_initializer(stddev=0.05),
                                   partitioner=_partitioner(2))
        item_bias = tf.get_variable("item_bias", [FLAGS.items, 1],
                                    initializer=tf.zeros_initializer())
        bias = tf.get_variable("bias", [], initializer=tf.zeros_initializer())
    u = tf.nn.embedding_lookup(user_emb, users)
    v = tf.nn.embedding_lookup(item_emb, items)
    b = tf.reshape(tf.nn.embedding_lookup(item_bias, items), [-1])
    logits = tf.reduce_sum(u * v, axis=1) + b + bias
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=clicks, logits=logits))
    return loss, user_emb


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return 0
    data = ClickData(FLAGS.users, FLAGS.items)
    is_chief = FLAGS.task_index == 0
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        users = tf.placeholder(tf.int64, [None], name="users")
        items = tf.placeholder(tf.int64, [None], name="items")
        clicks = tf.placeholder(tf.float32, [None], name="clicks")
        loss, user_emb = build_model(users, items, clicks)
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=global_step)
    shards = ", ".join("%s %s on %s" % (s.op.name, s.get_shape().as_list(), s.device)
                       for s in user_emb)
    print("worker %d: user table %s in shards: %s" % (FLAGS.task_index, user_emb.get_shape(),
                                                      shards), flush=True)
    eval_users, eval_items, eval_clicks = data.batch(np.random.default_rng(99), 8192)
    eval_feed = {users: eval_users, items: eval_items, clicks: eval_clicks}
    rng = np.random.default_rng(FLAGS.task_index)
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           checkpoint_dir=FLAGS.checkpoint_dir,
                                           hooks=hooks) as sess:
        before = sess.run(loss, eval_feed)
        start, step = time.time(), 0
        while not sess.should_stop():
            u, i, c = data.batch(rng, FLAGS.batch_size)
            _, loss_value = sess.run([train_op, loss], {users: u, items: i, clicks: c})
            step += 1
            if step % 100 == 0:
                print("worker %d: local step %d, loss %.4f" % (FLAGS.task_index, step, loss_value),
                      flush=True)
        elapsed = time.time() - start
    with tf.Session(server.target) as plain:
        after = plain.run(loss, eval_feed)
    print("worker %d: %d local steps in %.1f s (%.1f steps/s); held-out loss before %.4f after %.4f"
          % (FLAGS.task_index, step, elapsed, step / max(elapsed, 1e-9), before, after), flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", type=str, default="")
    parser.add_argument("--worker_hosts", type=str, default="")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--train_steps", type=int, default=1000, help="last global step")
    parser.add_argument("--users", type=int, default=1_000_000, help="rows of the user table")
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--batch_size", type=int, default=512)
    parser.add_argument("--learning_rate", type=float, default=0.5)
    parser.add_argument("--checkpoint_dir", type=str, default=None,
                        help="checkpoint here (the partitioned tables are saved as slices)")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
