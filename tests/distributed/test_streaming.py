"""Large tensors between processes travel as streams of chunks (zps.transport.codec.encode_parts):
pulls, pushes, fetches and feeds of tensors over one chunk give exact values, a step that fails
while a tensor streams to it fails cleanly, and the server keeps serving."""

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import LocalCluster
from zps.transport import protocol
from zps.transport.endpoint import default_transport

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

N = 3 * protocol.STREAM_CHUNK_BYTES // 4 + 5      # float32 elements: 3 chunks + 20 bytes


def _status(address):
    return default_transport().request(address, "Status", {}, peer_timeout=10).result(30).body


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as c:
        worker = tf.train.Server(c.spec, job_name="worker", task_index=0)
        try:
            yield c, worker
        finally:
            worker.stop()


def test_pull_and_push_of_a_large_variable(cluster):
    c, worker = cluster
    init = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    delta_val = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(init, name="big")
            small = tf.Variable([1.0, 2.0], name="small")
        with tf.device("/job:worker/task:0"):
            pulled = tf.identity(v)                          # ps -> worker: Send/Recv, streamed
            both = [tf.reduce_sum(v), tf.identity(small)]    # a small tensor with the big one
            delta = tf.placeholder(tf.float32, [N])
        push = tf.assign_add(v, delta)                       # worker feed -> ps: RunGraph, streamed
        with tf.Session(worker.target) as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(pulled)
            assert got.dtype == np.float32 and got.tobytes() == init.tobytes()
            total, s = sess.run(both)
            np.testing.assert_allclose(total, init.astype(np.float64).sum(), rtol=1e-4)
            np.testing.assert_array_equal(s, [1.0, 2.0])
            sess.run(push.op, {delta: delta_val})
            sess.run(push.op, {delta: delta_val})
            np.testing.assert_array_equal(sess.run(pulled), init + delta_val + delta_val)


def test_fetch_and_feed_through_a_remote_master(cluster):
    c, _ = cluster
    big = np.arange(2_600_000, dtype=np.int64).reshape(-1, 5)[::2]   # 10.4 MB, non-contiguous
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            x = tf.placeholder(tf.int64, [None, 5])
            y = x * 3
        with tf.Session(c.target("ps", 0)) as sess:             # RunStep request and reply stream
            np.testing.assert_array_equal(sess.run(y, {x: big}), big * 3)


def test_a_step_failing_on_the_receiver_of_a_stream_fails_cleanly(cluster):
    c, worker = cluster
    before = _status(c.address("ps", 0))
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.zeros(N, np.float32), name="v")
        with tf.device("/job:worker/task:0"):
            delta = tf.placeholder(tf.float32, [None])
        bad = tf.assign_add(v, delta, name="bad_add")
        with tf.Session(worker.target) as sess:
            sess.run(v.initializer)
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad_add") as info:
                sess.run(bad.op, {delta: np.ones(N + 1, np.float32)})
            assert "shapes of both tensors to match" in info.value.message
            sess.run(bad.op, {delta: np.ones(N, np.float32)})
            np.testing.assert_array_equal(sess.run(v)[[0, -1]], [1.0, 1.0])
    after = _status(c.address("ps", 0))
    assert after["incarnation"] == before["incarnation"] and after["malformed"] == before["malformed"]


def test_pushes_applied_while_they_stream_in_are_exact(cluster):
    """Large gradients and deltas computed on the worker reach the ps by Send/Recv and are applied
    as their chunks arrive (codec.Incoming); fed ones arrive in the RunGraph request, likewise."""
    c, worker = cluster
    rng = np.random.default_rng(2)
    init = rng.standard_normal(N).astype(np.float32)
    x = rng.standard_normal(N).astype(np.float32)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(init, name="pushed")
            w = tf.Variable(init, name="trained")
        with tf.device("/job:worker/task:0"):
            feed = tf.placeholder(tf.float32, [N])
            delta = feed * 2.0                               # made on the worker: Send/Recv
        push = tf.assign_add(v, delta).op
        sub = tf.assign_sub(v, feed).op                      # fed straight to the ps
        train = tf.train.GradientDescentOptimizer(0.5).apply_gradients([(delta, w)])
        with tf.Session(worker.target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run([push, train], {feed: x})
            sess.run(sub, {feed: x})
            got_v, got_w = sess.run([tf.identity(v), tf.identity(w)])
    expected_v = init
    for _ in range(3):
        expected_v = expected_v + x * np.float32(2.0)
    np.testing.assert_array_equal(got_v, expected_v - x)
    expected_w = init
    for _ in range(3):
        expected_w = expected_w - (x * np.float32(2.0)) * np.float32(0.5)
    np.testing.assert_array_equal(got_w, expected_w)
