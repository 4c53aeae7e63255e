"""A ps task holding only hash embedding shards is killed -9 and restarted: its shards come back
uninitialized, the ready op reports them, and the chief restores them from the checkpoint (the
table is not silently empty). Real processes; every wait has a timeout; all are stopped."""

import os
import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.contrib import embedding
from zps.testing.cluster import LocalCluster

pytestmark = [pytest.mark.slow]

ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(
           os.path.dirname(os.path.abspath(__file__)))), os.environ.get("PYTHONPATH")]))}
IDS = np.array([[1, 2**40, 7], [7, 3, 2**33 + 5]], np.int64)
CHECK = np.unique(IDS)


def _model(task):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones(3, np.float32), name="w")
        step = tf.train.get_or_create_global_step()
    with tf.device("/job:ps/task:1"):    # ps 1 holds the table's shards and nothing else
        table = embedding.get_hash_embedding("emb", 3, num_shards=2,
                                             initializer=tf.random_uniform_initializer(seed=1))
    with tf.device("/job:worker/task:%d" % task):
        rows = embedding.embedding_lookup(table, IDS)
        loss = tf.reduce_sum(tf.square(rows * w - 1.0))
        train = tf.train.AdagradOptimizer(0.3).minimize(loss, global_step=step)
        peek = embedding.embedding_lookup(table, CHECK, insert_missing=False)
        sizes = table.size()
    return w, step, table, train, peek, sizes


@pytest.mark.timeout(120)
def test_a_restarted_table_only_ps_is_restored_from_the_checkpoint(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    os.makedirs(ckpt)
    config = tf.ConfigProto(operation_timeout_in_ms=10000)
    quiet = dict(save_checkpoint_steps=None, save_checkpoint_secs=None, save_summaries_steps=None,
                 log_step_count_steps=0, config=config)
    with LocalCluster({"ps": 2, "worker": 2}, in_process=[("worker", 0), ("worker", 1)],
                      env=ENV) as cluster:
        servers = [tf.train.Server(cluster.spec, job_name="worker", task_index=i) for i in (0, 1)]
        chief_graph, worker_graph = tf.Graph(), tf.Graph()
        chief = worker = None
        try:
            with chief_graph.as_default():
                w, step, table, train, peek, sizes = _model(0)
                saver = tf.train.Saver(sharded=True)
                scaffold = tf.train.Scaffold(saver=saver)
                chief = tf.train.MonitoredTrainingSession(
                    master=servers[0].target, is_chief=True, checkpoint_dir=ckpt, scaffold=scaffold,
                    **quiet)
            with worker_graph.as_default():
                _, _, _, _, worker_peek, _ = _model(1)
                worker = tf.train.MonitoredTrainingSession(master=servers[1].target, is_chief=False,
                                                           **quiet)
            with chief_graph.as_default():
                for _ in range(4):
                    chief.run(train)
                saved = chief.run_step_fn(lambda step_context: (
                    saver.save(step_context.session, ckpt + "/model", global_step=4),
                    step_context.session.run([peek, sizes, w])))[1]
                chief.run(train)
                after_5 = chief.run([peek, w])
                for _ in range(2):
                    chief.run(train)
                after_7 = chief.run(peek)
                assert not np.allclose(after_7, saved[0])
                np.testing.assert_array_equal(worker.run(worker_peek), after_7)

                cluster.kill("ps", 1)
                cluster.restart("ps", 1)        # a fresh process: its shards uninitialized
                with tf.Session(servers[0].target, config=config) as plain:
                    # The ready op reports the restarted shards; using them fails loudly.
                    assert [n.decode() for n in plain.run(scaffold.ready_op)] == [
                        "emb/part_0:0", "emb/part_1:0"]
                    with pytest.raises(tf.errors.FailedPreconditionError,
                                       match="uninitialized hash table shard emb/part_0"):
                        plain.run(peek)

                # The non-chief's next step reaches the new incarnation of ps 1 and is aborted;
                # its new session waits: the shards are not ready until the chief restores them.
                result = {}

                def worker_step():
                    with worker_graph.as_default():
                        result["rows"] = worker.run(worker_peek)
                        result["at"] = time.monotonic()

                thread = threading.Thread(target=worker_step, daemon=True)
                thread.start()
                thread.join(1.5)
                assert thread.is_alive(), "the non-chief went on with an uninitialized table"
                # The chief's next step is aborted too; its new session restores the checkpoint.
                restored_at = time.monotonic()
                got = chief.run(peek)
                thread.join(30)
                assert not thread.is_alive()
                chief.run(train)                   # training goes on from the checkpoint
                got_5 = chief.run([peek, w, sizes, step])
                for _ in range(2):
                    chief.run(train)
                again_7 = chief.run([peek, step])
        finally:
            for g, sess in ((worker_graph, worker), (chief_graph, chief)):
                if sess is not None:
                    with g.as_default():
                        sess.close()
            for server in servers:
                server.stop()
    np.testing.assert_array_equal(got, saved[0])          # the checkpoint's rows, not empty ones
    np.testing.assert_array_equal(result["rows"], saved[0])
    assert result["at"] > restored_at
    np.testing.assert_allclose(got_5[0], after_5[0], rtol=1e-6)  # checkpoint + the same step
    np.testing.assert_allclose(got_5[1], after_5[1], rtol=1e-6)
    assert list(got_5[2]) == list(saved[1]) and sum(got_5[2]) == len(CHECK) and got_5[3] == 5
    np.testing.assert_allclose(again_7[0], after_7, rtol=1e-5)
    assert again_7[1] == 7
