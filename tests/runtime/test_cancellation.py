"""Blocking ops end when their step is cancelled: session close, server stop, a failed partition."""

import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.framework.registry import REGISTRY, register_op
from zps.ops.op_util import make_op
from zps.testing.cluster import free_ports

WAIT_S = 10


def _wait_forever_kernel(ctx, done, x):
    # Never completes on its own: only cancellation ends it, as for an empty queue's dequeue.
    ctx.on_cancel(done)


if "TestWaitForever" not in REGISTRY:
    register_op("TestWaitForever", kernel=_wait_forever_kernel, is_async=True, stateful=True,
                grad=None)


def _blocked_run(sess, fetch):
    """Run ``fetch`` in a thread; returns (thread, box) where box gets the raised error."""
    box = {}

    def run():
        try:
            sess.run(fetch)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(0.3)
    assert t.is_alive(), "the op should still be waiting"
    return t, box


def test_local_session_close_cancels_a_waiting_op():
    with tf.Graph().as_default():
        op = make_op("TestWaitForever", [tf.constant(1.0)])
        sess = tf.Session()
        t, box = _blocked_run(sess, op)
        start = time.monotonic()
        sess.close()
        t.join(WAIT_S)
        assert not t.is_alive() and time.monotonic() - start < 2
        assert isinstance(box["error"], tf.errors.CancelledError)
        assert "closed" in str(box["error"])


@pytest.fixture
def ps_and_worker():
    ports = free_ports(2)
    spec = {"ps": ["127.0.0.1:%d" % ports[0]], "worker": ["127.0.0.1:%d" % ports[1]]}
    servers = [tf.train.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")]
    yield servers
    for s in servers:
        s.stop()


def test_distributed_session_close_cancels_the_step_on_every_task(ps_and_worker):
    ps, worker = ps_and_worker
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            op = make_op("TestWaitForever", [tf.constant(1.0)])
        sess = tf.Session(worker.target)
        t, box = _blocked_run(sess, op)
        sess.close()
        t.join(WAIT_S)
        assert not t.is_alive()
        assert isinstance(box["error"], tf.errors.CancelledError)


def test_a_failing_partition_cancels_a_waiting_one(ps_and_worker):
    ps, worker = ps_and_worker
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            wait = make_op("TestWaitForever", [tf.constant(1.0)])
        with tf.device("/job:worker/task:0"):
            a = tf.placeholder(tf.float32, [None])
            bad = tf.add(a, tf.constant(np.ones(3, np.float32)), name="bad_add")
        with tf.Session(worker.target) as sess:
            start = time.monotonic()
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run([wait, bad], {a: [1.0, 2.0]})
            assert info.value.op_name == "bad_add"
            assert time.monotonic() - start < WAIT_S


def test_server_stop_cancels_waiting_steps():
    port, = free_ports(1)
    server = tf.train.Server({"local": ["127.0.0.1:%d" % port]})
    with tf.Graph().as_default():
        op = make_op("TestWaitForever", [tf.constant(1.0)])
        sess = tf.Session(server.target)
        t, box = _blocked_run(sess, op)
        server.stop()
        t.join(WAIT_S)
        assert not t.is_alive()
        assert isinstance(box["error"], tf.errors.CancelledError)
        sess.close()
