"""Click-through prediction with a growable hash embedding table over a 2^40 id space.

Run a local cluster (2 ps + 2 workers) with the launcher:

    zps-launch --ps 2 --workers 2 examples/hash_embedding.py --train_steps 2000 --max_rows 20000

Each example has ``--fields`` categorical features whose ids are drawn, with a Zipf-like
popularity, from the whole range [0, 2^40): no vocabulary could hold them. The model is a
logistic regression whose per-id weights are the rows of
``zps.contrib.embedding.get_hash_embedding`` (rows created on first sight, sharded over the ps
tasks by a hash of the id, updated sparsely by Adagrad on the ps). With ``--max_rows`` each
shard keeps at most that many rows, evicting the least recently updated ones, so the ps memory
stays bounded however many distinct ids stream by. Every ``--log_every`` steps a worker prints
its loss, the rows held by each shard, the table's bytes and evictions, and its RSS; each ps task
prints its own RSS. The chief ends with the held-out loss before and after training. With
``--checkpoint_dir`` the table is checkpointed with the model (and restored on a restart).

The clicks come from hidden per-id weights (a hash of the id), so frequent ids can be learned;
the long tail cannot (and is what the cap evicts).
"""

import argparse
import sys
import threading
import time

import numpy as np

import zps as tf
from zps.contrib import embedding

FLAGS = None
ID_SPACE = 1 << 40
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    z = np.asarray(z, np.uint64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def click_batch(rng, batch_size, fields, zipf_a):
    """``(ids [batch, fields] int64 in [0, 2^40), labels [batch] float32)``."""
    ranks = rng.zipf(zipf_a, size=(batch_size, fields)).astype(np.uint64)
    field = np.arange(fields, dtype=np.uint64)[None, :]
    ids = (_mix(ranks * _GOLDEN + field) % np.uint64(ID_SPACE)).astype(np.int64)
    true_w = ((_mix(ids.view(np.uint64) ^ _GOLDEN) >> np.uint64(11)).astype(np.float64)
              / (1 << 53) - 0.5) * 3.0
    logits = true_w.sum(1) / np.sqrt(fields)
    labels = (rng.random(batch_size) < 1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
    return ids, labels


def rss_mb():
    """The resident set size of this process now, in MB (Linux; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            import os
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_model(ids, labels, num_shards):
    table = embedding.get_hash_embedding(
        "click_weights", FLAGS.embedding_dim, num_shards=num_shards,
        initializer=tf.zeros_initializer(), max_rows_per_shard=FLAGS.max_rows or None,
        eviction=FLAGS.eviction)
    bias = tf.Variable(0.0, name="bias")

    def mean_loss(insert_missing):
        rows = embedding.embedding_lookup(table, ids, insert_missing=insert_missing)
        logits = tf.reduce_sum(rows, [1, 2]) + bias                 # rows: [batch, fields, dim]
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                                      logits=logits))

    # Evaluation looks rows up without inserting the ids the table does not hold.
    return table, mean_loss(True), mean_loss(False)


def _report_rss_forever(name):
    def loop():
        while True:
            print("%s: rss %.1f MB" % (name, rss_mb()), flush=True)
            time.sleep(FLAGS.ps_report_secs)
    threading.Thread(target=loop, daemon=True).start()


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        _report_rss_forever("ps %d" % FLAGS.task_index)
        server.join()
        return 0
    is_chief = FLAGS.task_index == 0
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        ids = tf.placeholder(tf.int64, [None, FLAGS.fields], name="ids")
        labels = tf.placeholder(tf.float32, [None], name="labels")
        table, loss, eval_loss = build_model(ids, labels, num_shards=len(ps_hosts))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=global_step)
        stats = table.stats()
    eval_ids, eval_labels = click_batch(np.random.default_rng(12345), FLAGS.eval_size,
                                        FLAGS.fields, FLAGS.zipf_a)
    rng = np.random.default_rng(100 + FLAGS.task_index)
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    # With --checkpoint_dir the chief checkpoints the table too (keys, rows, Adagrad slots) and a
    # restarted cluster resumes from it.
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           checkpoint_dir=FLAGS.checkpoint_dir or None,
                                           hooks=hooks) as sess:
        # At the chief's start (the other workers may have begun already); untrained, the
        # zero-initialized rows give ln 2 = 0.6931.
        eval_before = sess.run(eval_loss, {ids: eval_ids, labels: eval_labels}) if is_chief else None
        step, window = 0, []
        while not sess.should_stop():
            batch_ids, batch_labels = click_batch(rng, FLAGS.batch_size, FLAGS.fields, FLAGS.zipf_a)
            _, loss_value = sess.run([train_op, loss], {ids: batch_ids, labels: batch_labels})
            window.append(loss_value)
            step += 1
            if step % FLAGS.log_every == 0:
                mean = float(np.mean(window))
                window = []
                s = np.array(sess.run(stats))
                print("worker %d: step %d, loss %.4f, rows per shard %s, table %.1f MB, "
                      "evictions %d, worker rss %.1f MB"
                      % (FLAGS.task_index, step, mean, s[:, 0].tolist(), s[:, 4].sum() / 2**20,
                         s[:, 2].sum(), rss_mb()), flush=True)
    with tf.Session(server.target) as plain:
        s = np.array(plain.run(stats))
        eval_after = plain.run(eval_loss, {ids: eval_ids, labels: eval_labels}) if is_chief else None
    print("worker %d: done after %d local steps; rows per shard %s (cap %s)"
          % (FLAGS.task_index, step, s[:, 0].tolist(), FLAGS.max_rows or "none"), flush=True)
    if is_chief:
        print("chief: held-out loss before %.4f after %.4f" % (eval_before, eval_after), flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", type=str, default="")
    parser.add_argument("--worker_hosts", type=str, default="")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--train_steps", type=int, default=2000, help="last global step")
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--fields", type=int, default=8)
    parser.add_argument("--embedding_dim", type=int, default=1)
    parser.add_argument("--zipf_a", type=float, default=1.5, help="id popularity skew")
    parser.add_argument("--max_rows", type=int, default=20000, help="rows per shard (0: no cap)")
    parser.add_argument("--eviction", type=str, default="lru", choices=["lru", "lfu"])
    parser.add_argument("--learning_rate", type=float, default=0.5)
    parser.add_argument("--eval_size", type=int, default=4096)
    parser.add_argument("--log_every", type=int, default=100)
    parser.add_argument("--checkpoint_dir", type=str, default="", help="(default: none)")
    parser.add_argument("--ps_report_secs", type=float, default=5.0)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
