"""A step touching k rows of a partitioned N-row table moves O(k) rows between tasks, not O(N).

Measured with the servers' own transport counters (bytes in and out of every task, as the
Status RPC reports them), on a cluster of 2 ps processes and a worker in this process.
"""

import numpy as np
import pytest

import zps as tf
from zps.ops.embedding_ops import embedding_lookup
from zps.ops.partitioned_variables import fixed_size_partitioner
from zps.ops.variable_scope import get_variable
from zps.testing.cluster import LocalCluster
from zps.train.device_setter import replica_device_setter
from zps.transport import endpoint

ROWS, DIM = 200_000, 16
ROW_BYTES = DIM * 4


@pytest.fixture
def cluster():
    with LocalCluster({"ps": 2, "worker": 1}, in_process=[("worker", 0)]) as c:
        server = tf.train.Server(c.spec, job_name="worker", task_index=0)
        try:
            yield c, server
        finally:
            server.stop()


def _bytes_moved(spec):
    """Bytes received plus bytes sent by every task so far (their Status RPC counters)."""
    transport = endpoint.default_transport()
    total = 0
    for addresses in spec.values():
        for address in addresses:
            body = transport.request(address, "Status", {}, timeout=5.0).result(timeout=10.0).body
            total += body["bytes_in"] + body["bytes_out"]
    return total


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_step_traffic_is_proportional_to_touched_rows(cluster):
    cluster, server = cluster
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2)):
            table = get_variable("emb", [ROWS, DIM], partitioner=fixed_size_partitioner(2),
                                 initializer=tf.random_uniform_initializer(-0.1, 0.1))
            ids = tf.placeholder(tf.int64, [None])
            coeff = tf.placeholder(tf.float32, [None, DIM])
            loss = tf.reduce_sum(embedding_lookup(table, ids) * coeff)
            train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        assert sorted(s.device for s in table) == ["/job:ps/task:0", "/job:ps/task:1"]

        def feed(k):
            unique = rng.choice(ROWS, size=k, replace=False)
            step_ids = np.concatenate([unique, unique, unique[: k // 2]])  # with duplicates
            return {ids: step_ids, coeff: np.ones((len(step_ids), DIM), np.float32)}

        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
            for k in (100, 2000):  # warm up: graphs registered, plans cached
                sess.run(train, feed(k))
            moved = {}
            for k in (100, 2000):
                before = _bytes_moved(cluster.spec)
                sess.run(train, feed(k))
                moved[k] = _bytes_moved(cluster.spec) - before
    table_bytes = ROWS * DIM * 4
    print("bytes moved per step by distinct rows touched:", moved, "table bytes:", table_bytes)
    # Each distinct row crosses at most a few times (rows to the worker, gradients back), plus
    # a fixed per-step cost; never a table-sized transfer.
    assert moved[100] < table_bytes / 100, moved
    assert moved[100] < 10 * 100 * ROW_BYTES + 64 * 1024, moved
    growth = moved[2000] - moved[100]
    # 1900 more distinct rows: each goes to the worker and its gradient comes back (2 x rows),
    # the ids themselves are 8 bytes each way.
    assert 2 * 1900 * ROW_BYTES <= growth <= 4 * 1900 * (ROW_BYTES + 16), moved
