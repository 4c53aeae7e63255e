"""ConfigProto(device_filters=[...]) in distributed sessions: TF1's semantics, clear errors."""

import numpy as np
import pytest

import zps as tf
from zps.distributed.master import device_filters, task_matches_filters
from zps.distributed.partition import Task
from zps.testing.cluster import InProcessCluster


@pytest.fixture(scope="module")
def cluster():
    with InProcessCluster({"ps": 2, "worker": 2}) as c:
        yield c


def _config(*filters):
    return tf.ConfigProto(device_filters=list(filters))


def test_filter_matching_follows_tf1():
    filters = device_filters(_config("/job:ps", "/job:worker/task:1"))
    assert task_matches_filters(Task("ps", 0), filters)
    assert task_matches_filters(Task("ps", 1), filters)
    assert task_matches_filters(Task("worker", 1), filters)
    assert not task_matches_filters(Task("worker", 0), filters)
    assert task_matches_filters(Task("worker", 0), [])              # no filters: everything
    # Unset fields match anything; device fields do not restrict a task; replica is 0.
    assert task_matches_filters(Task("worker", 0), device_filters(_config("/task:0")))
    assert task_matches_filters(Task("ps", 1), device_filters(_config("/job:ps/task:1/cpu:0")))
    assert not task_matches_filters(Task("ps", 0), device_filters(_config("/job:ps/replica:1")))


def test_invalid_filter_fails_at_session_creation(cluster):
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid device filter '/jobb:ps'"):
            tf.Session(cluster.target("worker", 1), config=_config("/jobb:ps"))


def test_step_within_filters_runs(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.arange(3, dtype=np.float32), name="v_within")
        with tf.device("/job:worker/task:1"):
            out = v * 2.0 + 1.0
        config = _config("/job:ps", "/job:worker/task:1")
        with tf.Session(cluster.target("worker", 1), config=config) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(out), [1.0, 3.0, 5.0])


def test_op_on_filtered_out_task_fails_naming_op_device_and_filters(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.ones(2, np.float32), name="v_outside")
        with tf.device("/job:worker/task:0"):
            bad = tf.add(v, 1.0, name="outside_op")
        config = _config("/job:ps", "/job:worker/task:1")
        with tf.Session(cluster.target("worker", 1), config=config) as sess:
            sess.run(v.initializer)
            before = cluster[("worker", 0)].worker.steps_run
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(bad)
            msg = str(info.value)
            assert "'outside_op'" in msg
            assert "/job:worker/task:0" in msg
            assert "['/job:ps', '/job:worker/task:1']" in msg
            # The excluded task was never contacted.
            assert cluster[("worker", 0)].worker.steps_run == before
            # Steps within the filters still work in the same session.
            np.testing.assert_array_equal(sess.run(v), [1.0, 1.0])


def test_filtered_out_ps_variable_is_refused(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:1"):
            w = tf.Variable(np.zeros(2, np.float32), name="w_on_ps1")
        with tf.Session(cluster.target("worker", 0), config=_config("/job:ps/task:0")) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"w_on_ps1.*/job:ps/task:1"):
                sess.run(w.initializer)


def test_master_task_is_always_included(cluster):
    # TF1 includes the master's own task even when no filter matches it.
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.full(2, 3.0, np.float32), name="v_master")
        out = v + 1.0   # unplaced: runs on the master's task (worker 0)
        with tf.Session(cluster.target("worker", 0), config=_config("/job:ps")) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(out), [4.0, 4.0])
            devices = sess.list_devices()
            names = sorted(getattr(d, "name", d) for d in devices)
            assert any("/job:worker/replica:0/task:0" in n for n in names)
            assert not any("/job:worker/replica:0/task:1" in n for n in names)
            assert sum("/job:ps/" in n for n in names) == 2


def test_without_filters_every_task_is_usable(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            a = tf.constant(2.0)
        with tf.device("/job:ps/task:1"):
            b = a * 5.0
        with tf.Session(cluster.target("worker", 0)) as sess:
            assert sess.run(b) == 10.0


def test_filters_hold_for_a_client_without_a_server():
    """The remote master applies the client's device_filters too."""
    from zps.testing.cluster import LocalCluster
    with LocalCluster({"ps": 1, "worker": 1}) as procs:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                x = tf.constant(1.0) + 1.0
            config = tf.ConfigProto(device_filters=["/job:worker"])
            with tf.Session(procs.target("worker", 0), config=config) as sess:
                with pytest.raises(tf.errors.InvalidArgumentError, match="device_filters"):
                    sess.run(x)
