"""SyncReplicasOptimizer end to end on an in-process cluster: equivalence with averaged SGD,
stale gradients, backup replicas, and the chief's report when a replica is missing."""

import logging
import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster
from zps.train import sync_replicas_optimizer as sro

pytestmark = pytest.mark.timeout(60)

LR = 0.1
W0 = np.array([[0.5, -0.25], [0.1, 0.2], [-0.3, 0.4]], np.float32)
B0 = np.array([0.05, -0.1], np.float32)


def _batches(replica, steps, seed=0):
    rng = np.random.default_rng(seed + 100 * replica)
    return [(rng.standard_normal((4, 3)).astype(np.float32),
             rng.standard_normal((4, 2)).astype(np.float32)) for _ in range(steps)]


def _model(x, y):
    w = tf.get_variable("w", initializer=tf.constant(W0))
    b = tf.get_variable("b", initializer=tf.constant(B0))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    return w, b, loss


class _Replica:
    """One replica's graph: the model under replica_device_setter for its worker task."""

    def __init__(self, spec, task, to_aggregate, total):
        self.task = task
        self.graph = tf.Graph()
        with self.graph.as_default():
            with tf.device(tf.train.replica_device_setter(
                    worker_device="/job:worker/task:%d" % task, cluster=spec)):
                self.x = tf.placeholder(tf.float32, [None, 3], name="x")
                self.y = tf.placeholder(tf.float32, [None, 2], name="y")
                self.w, self.b, self.loss = _model(self.x, self.y)
                self.global_step = tf.train.get_or_create_global_step()
                self.opt = tf.train.SyncReplicasOptimizer(
                    tf.train.GradientDescentOptimizer(LR), replicas_to_aggregate=to_aggregate,
                    total_num_replicas=total)
                self.train_op = self.opt.minimize(self.loss, global_step=self.global_step)


def _run_replicas(cluster, replicas, body):
    """Run ``body(replica, mon_sess)`` in one thread per replica, each in a
    MonitoredTrainingSession on its own worker; re-raise the first error."""
    errors, results = [], {}

    def target(rep):
        try:
            with rep.graph.as_default():
                hook = rep.opt.make_session_run_hook(rep.task == 0, num_tokens=rep.num_tokens)
                with tf.train.MonitoredTrainingSession(
                        master=cluster.target("worker", rep.task), is_chief=rep.task == 0,
                        hooks=[hook], log_step_count_steps=0) as sess:
                    results[rep.task] = body(rep, sess)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    threads = [threading.Thread(target=target, args=(rep,), daemon=True) for rep in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(45)
        assert not t.is_alive(), "a replica is still running after 45 s"
    if errors:
        raise errors[0]
    return results


def _averaged_sgd_reference(batches_per_replica, steps):
    """One local process applying the average of the replicas' gradients of the same batches."""
    with tf.Graph().as_default():
        xs = [tf.placeholder(tf.float32, [None, 3]) for _ in batches_per_replica]
        ys = [tf.placeholder(tf.float32, [None, 2]) for _ in batches_per_replica]
        w = tf.Variable(W0)
        b = tf.Variable(B0)
        grads = []
        for x, y in zip(xs, ys):
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            grads.append(tf.gradients(loss, [w, b]))
        avg = [tf.add_n([g[i] for g in grads]) / float(len(grads)) for i in range(2)]
        train_op = tf.train.GradientDescentOptimizer(LR).apply_gradients(list(zip(avg, [w, b])))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for k in range(steps):
                feed = {}
                for r, batches in enumerate(batches_per_replica):
                    feed[xs[r]], feed[ys[r]] = batches[k]
                sess.run(train_op, feed)
            return sess.run([w, b])


def test_two_replicas_equal_a_single_process_applying_averaged_gradients():
    steps = 6
    batches = [_batches(0, steps), _batches(1, steps)]
    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        replicas = [_Replica(cluster.spec, i, 2, 2) for i in range(2)]
        for rep in replicas:
            # No initial tokens: each step's tokens come from the chief's update, so every
            # gradient is computed from the variables of the current global step.
            rep.num_tokens = 0
        # Lockstep, so that each replica takes exactly one of a step's two tokens.
        barrier = threading.Barrier(2, timeout=30)

        def body(rep, sess):
            for k in range(steps):
                x, y = batches[rep.task][k]
                sess.run(rep.train_op, {rep.x: x, rep.y: y})
                barrier.wait()
            return sess.run([rep.w, rep.b, rep.global_step])

        results = _run_replicas(cluster, replicas, body)
        # The variables live on the ps (replica_device_setter), not on the workers.
        ps_vars = cluster[("ps", 0)].resources.variables()
        assert "w" in ps_vars and "global_step" in ps_vars
        assert "w" not in cluster[("worker", 0)].resources.variables()
    w_ref, b_ref = _averaged_sgd_reference(batches, steps)
    for task in (0, 1):
        w, b, step = results[task]
        assert int(step) == steps
        np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, b_ref, rtol=1e-5, atol=1e-6)
    # ...and the replicas really trained (not just kept the initial values).
    assert not np.allclose(w_ref, W0)


def test_stale_gradients_are_dropped():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None, 2])
        w, b, loss = _model(x, y)
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR), 2, 2)
        opt.minimize(loss, global_step=global_step)
        graph = tf.get_default_graph()
        push = [op for op in graph.get_operations() if op.type == "AccumulatorApplyGradient"]
        assert len(push) == 2   # one accumulator per variable
        counts = [accum.num_accumulated() for accum, _ in opt._accumulator_list]
        set_local = tf.assign(opt._local_step, tf.placeholder(tf.int64, [], name="local"))
        local = graph.get_tensor_by_name("local:0")
        xv, yv = _batches(0, 1)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(global_step, 5))
            sess.run(opt.chief_init_op)   # accumulators' global step := 5, local step := 5
            assert sess.run(opt._local_step) == 5
            sess.run(set_local, {local: 3})    # a replica still at step 3: stale
            sess.run(push, {x: xv, y: yv})
            assert sess.run(counts) == [0, 0]
            sess.run(set_local, {local: 5})    # up to date: accumulated
            sess.run(push, {x: xv, y: yv})
            sess.run(set_local, {local: 7})    # newer than the accumulator: accumulated too
            sess.run(push, {x: xv, y: yv})
            assert sess.run(counts) == [2, 2]


def test_backup_replica_lets_training_continue_without_one_replica():
    steps = 8
    with InProcessCluster({"ps": 1, "worker": 3}) as cluster:
        # total_num_replicas=3, replicas_to_aggregate=2: worker 2 never runs (never pushes).
        replicas = [_Replica(cluster.spec, i, 2, 3) for i in range(2)]
        for rep in replicas:
            rep.num_tokens = -1

        def body(rep, sess):
            batches = _batches(rep.task, 1)
            local_steps = 0
            while sess.run(rep.global_step) < steps:
                x, y = batches[0]
                sess.run(rep.train_op, {rep.x: x, rep.y: y})
                local_steps += 1
                assert local_steps < 200, "no progress"
            return sess.run(rep.global_step)

        started = time.monotonic()
        results = _run_replicas(cluster, replicas, body)
        assert time.monotonic() - started < 30
    assert all(int(s) >= steps for s in results.values())


def test_chief_reports_the_gradients_it_waits_for(monkeypatch, caplog):
    monkeypatch.setattr(sro, "_WAIT_LOG_SECS", 0.3)
    caplog.set_level(logging.WARNING, logger="zps.train")
    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        # Two replicas needed, no backup, and worker 1 never comes: the chief cannot make a step.
        rep = _Replica(cluster.spec, 0, 2, 2)
        rep.num_tokens = -1

        def body(rep, sess):
            x, y = _batches(0, 1)[0]
            sess.run(rep.train_op, {rep.x: x, rep.y: y})   # takes one of the initial tokens
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and "has not advanced" not in caplog.text:
                time.sleep(0.05)
            return True

        started = time.monotonic()
        _run_replicas(cluster, [rep], body)
        assert time.monotonic() - started < 8, "the chief closed slowly"
    messages = [r.getMessage() for r in caplog.records if "has not advanced" in r.getMessage()]
    assert messages, caplog.text
    text = messages[-1]
    assert "received 1 of 2 gradients" in text and "waiting for 1 more" in text, text
    assert "w:0" in text and "b:0" in text, text
    assert "global step 0" in text, text
    assert "replicas_to_aggregate=2" in text and "total_num_replicas=2" in text, text
    # The replica that never came is named; the one that pushed is not.
    assert "waiting for replicas /job:worker/task:1 (never pushed)" in text, text
    assert "/job:worker/task:0" not in text, text
