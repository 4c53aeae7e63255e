"""Distributed execution with every task in this process: placement, transfers, errors, concurrency."""

import threading

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster, free_ports


@pytest.fixture
def cluster():
    with InProcessCluster({"ps": 2, "worker": 1}) as c:
        yield c


def _placement_model(devices):
    """The seed's placement program: two layers on two ps tasks, compute on a worker."""
    rng = np.random.default_rng(0)
    x_val = rng.standard_normal((8, 5)).astype(np.float32)
    y_val = rng.standard_normal((8, 3)).astype(np.float32)
    with tf.device(devices[0]):
        weights_1 = tf.Variable(rng.standard_normal((5, 4)).astype(np.float32), name="weights_1")
        biases_1 = tf.Variable(np.zeros(4, np.float32), name="biases_1")
    with tf.device(devices[1]):
        weights_2 = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="weights_2")
        biases_2 = tf.Variable(np.zeros(3, np.float32), name="biases_2")
    with tf.device(devices[2]):
        inputs = tf.placeholder(tf.float32, [None, 5])
        labels = tf.placeholder(tf.float32, [None, 3])
        layer_1 = tf.nn.relu(tf.matmul(inputs, weights_1) + biases_1)
        logits = tf.nn.relu(tf.matmul(layer_1, weights_2) + biases_2)
        loss = tf.reduce_mean(tf.square(logits - labels))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {inputs: x_val, labels: y_val}
    return loss, train_op, feed, [weights_1, biases_1, weights_2, biases_2]


def _train(target, devices, steps=5):
    with tf.Graph().as_default():
        loss, train_op, feed, variables = _placement_model(devices)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train_op], feed)[0] for _ in range(steps)]
            return losses, sess.run(variables)


def test_placement_matches_local_run(cluster):
    local_losses, local_vars = _train("", [None, None, None])
    devices = ["/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"]
    losses, dist_vars = _train(cluster[("worker", 0)].target, devices)
    np.testing.assert_allclose(losses, local_losses, rtol=1e-6)
    for a, b in zip(dist_vars, local_vars):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # The variables really live on the ps tasks.
    assert "weights_1" in cluster[("ps", 0)].resources.variables()
    assert "weights_2" in cluster[("ps", 1)].resources.variables()
    assert "weights_1" not in cluster[("worker", 0)].resources.variables()


def test_op_error_on_ps_arrives_with_op_name(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:1"):
            a = tf.placeholder(tf.float32, [None])
            b = tf.placeholder(tf.float32, [None])
            bad = tf.add(a, b, name="bad_add")
        with tf.Session(cluster[("worker", 0)].target) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(bad, {a: [1.0, 2.0], b: [1.0, 2.0, 3.0]})
            assert info.value.op_name == "bad_add"


def test_uninitialized_variable_on_ps_is_failed_precondition(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="never_initialized")
        with tf.Session(cluster[("worker", 0)].target) as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
                sess.run(v + 1.0)


def test_concurrent_assign_add_from_many_sessions_is_exact(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(0.0, name="counter")
            inc = counter.assign_add(1.0)
        sessions = [tf.Session(cluster[("worker", 0)].target) for _ in range(4)]
        sessions[0].run(counter.initializer)

        def work(sess):
            for _ in range(250):
                sess.run(inc.op)

        threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert sessions[0].run(counter) == 1000.0
        for s in sessions:
            s.close()


def test_step_touches_only_the_tasks_it_needs():
    ports = free_ports(2)
    spec = {"ps": ["127.0.0.1:%d" % ports[0]], "worker": ["127.0.0.1:%d" % ports[1]]}
    worker = tf.train.Server(spec, job_name="worker", task_index=0)   # the ps never starts
    try:
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:0"):
                x = tf.constant(2.0) * 3.0
            with tf.Session(worker.target) as sess:
                assert sess.run(x) == 6.0
    finally:
        worker.stop()


def test_unknown_task_in_device_is_a_clear_error(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:7"):
            x = tf.constant(1.0) + 1.0
        with tf.Session(cluster[("worker", 0)].target) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="no such task"):
                sess.run(x)


def test_ops_with_several_outputs_cross_tasks(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            parts = tf.split(tf.constant(np.arange(6.0, dtype=np.float32)), 3)
        with tf.device("/job:worker/task:0"):
            total = parts[0] + parts[2] * 10.0
        with tf.Session(cluster[("worker", 0)].target) as sess:
            np.testing.assert_array_equal(sess.run(total), [40.0, 51.0])


def test_update_of_a_ps_variable_built_in_a_worker_scope_runs_on_the_ps(cluster):
    """TF1's placer puts ops that update a variable with the variable, whatever the scope says."""
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(1.0, name="w")
        with tf.device("/job:worker/task:0"):
            inc = tf.assign_add(w, 1.0)
        with tf.Session(cluster[("worker", 0)].target) as sess:
            sess.run(w.initializer)
            assert sess.run(inc) == 2.0
            assert sess.run(w) == 2.0
