"""tf.contrib.opt's parameter-server optimizers on real clusters on 127.0.0.1 (in-process servers,
one Session per worker): DropStaleGradientOptimizer, ElasticAverageOptimizer (EASGD),
ModelAverageOptimizer and AGNOptimizer, their values checked against TF1's tests and numpy re-runs
of TF1's update formulas."""

import threading

import numpy as np
import pytest

import zps as tf
from zps.contrib.opt import elastic_average, model_average
from zps.testing.cluster import InProcessCluster

pytestmark = pytest.mark.timeout(60)

JOIN_TIMEOUT_S = 30


def _run_in_threads(*calls):
    """Run each ``(fn, args)`` in a thread; re-raise the first error; every join times out."""
    errors = []

    def target(fn, args):
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    threads = [threading.Thread(target=target, args=call, daemon=True) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT_S)
        assert not t.is_alive(), "a worker is still running after %d s" % JOIN_TIMEOUT_S
    if errors:
        raise errors[0]


def _worker_device(i):
    return "/job:worker/task:%d" % i


# -- DropStaleGradientOptimizer ----------------------------------------------------------------
def _drop_stale_workers(cluster, num_workers, staleness, num_ps=1):
    """TF1's drop_stale_gradient_optimizer_test setup: the other workers compute their
    gradients first, the chief computes and applies its own, then the others apply theirs one
    by one, so worker k's gradients are k steps stale. Returns (sessions, graphs, train_ops)."""
    sessions, graphs, train_ops = [], [], []
    for worker_id in range(num_workers):
        graph = tf.Graph()
        with graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device=_worker_device(worker_id), ps_tasks=num_ps)):
            global_step = tf.train.create_global_step()
            var_0 = tf.Variable(0.0, name="v0")
            var_1 = tf.Variable(1.0, name="v1")
            with tf.device("/job:ps/task:0"):   # shared by the workers
                compute_q = tf.FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(),
                                         name="compute_gradients_queue",
                                         shared_name="compute_gradients_queue")
                apply_q = tf.FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(),
                                       name="apply_gradients_queue",
                                       shared_name="apply_gradients_queue")
            loss = 0 - var_0 - var_1    # the gradient of each variable is -1
            opt = tf.contrib.opt.DropStaleGradientOptimizer(
                tf.train.GradientDescentOptimizer(1.0), staleness)
            if worker_id == 0:
                with tf.control_dependencies([compute_q.dequeue_many(num_workers - 1)]):
                    grads_and_vars = opt.compute_gradients(loss)
                with tf.control_dependencies([opt.apply_gradients(grads_and_vars,
                                                                  global_step)]):
                    train_op = apply_q.enqueue(global_step)
            else:
                grads_and_vars = opt.compute_gradients(loss)
                with tf.control_dependencies([g for g, _ in grads_and_vars]):
                    computed = compute_q.enqueue(global_step)
                with tf.control_dependencies([computed]):
                    with tf.control_dependencies([apply_q.dequeue()]):
                        with tf.control_dependencies([opt.apply_gradients(grads_and_vars,
                                                                          global_step)]):
                            train_op = apply_q.enqueue(global_step)
            sessions.append(tf.Session(cluster.target("worker", worker_id)))
        graphs.append(graph)
        train_ops.append(train_op)
    return sessions, graphs, train_ops


@pytest.mark.parametrize("num_workers, staleness, step, stale, update", [
    (1, 0, 1, 0.0, 1.0),     # TF1's test1Worker
    (1, -1, 0, 1.0, 0.0),    # test1WorkerNegativeStaleness: nothing is ever fresh enough
    (2, 0, 1, 1.0, 1.0),     # test2WorkersStaleness0: only the chief's gradients are applied
    (2, 1, 2, 0.0, 2.0),     # test2WorkersStaleness1
    (3, 0, 1, 2.0, 1.0),     # test3WorkersStaleness0
    (3, 1, 2, 1.0, 2.0),     # test3WorkersStaleness1
])
def test_drop_stale_gradients_as_tf1(num_workers, staleness, step, stale, update):
    with InProcessCluster({"ps": 1, "worker": num_workers}) as cluster:
        sessions, graphs, train_ops = _drop_stale_workers(cluster, num_workers, staleness)
        try:
            with graphs[0].as_default():
                sessions[0].run(tf.global_variables_initializer())
            fetch = ["global_step:0", "stale_counter:0", "v0:0", "v1:0"]
            assert sessions[0].run(fetch) == [0, 0.0, 0.0, 1.0]
            _run_in_threads(*[(s.run, (op,)) for s, op in zip(sessions, train_ops)])
            assert sessions[0].run(fetch) == [step, stale, 0.0 + update, 1.0 + update]
            # The variables live on the ps, and the other workers see the same values.
            assert "v0" in cluster[("ps", 0)].resources.variables()
            assert sessions[-1].run(fetch) == [step, stale, 0.0 + update, 1.0 + update]
        finally:
            for s in sessions:
                s.close()


def test_drop_stale_with_variables_on_two_ps_tasks():
    # global_step on ps 0, v0 on ps 1, v1 on ps 0: one cond per task, and the step's own.
    with InProcessCluster({"ps": 2, "worker": 2}) as cluster:
        sessions, graphs, train_ops = _drop_stale_workers(cluster, 2, 0, num_ps=2)
        try:
            with graphs[0].as_default():
                sessions[0].run(tf.global_variables_initializer())
            _run_in_threads(*[(s.run, (op,)) for s, op in zip(sessions, train_ops)])
            fetch = ["global_step:0", "stale_counter:0", "v0:0", "v1:0"]
            assert sessions[1].run(fetch) == [1, 1.0, 1.0, 2.0]
            assert "v0" in cluster[("ps", 1)].resources.variables()
        finally:
            for s in sessions:
                s.close()


def _adam_steps(steps, device_fn=None, target=None, wrap=False):
    """a, b after ``steps`` Adam steps on (a * b - 1)^2, plain or DropStale-wrapped."""
    with tf.Graph().as_default(), tf.device(device_fn):
        global_step = tf.train.create_global_step()
        a, b = tf.Variable(1.0, name="a"), tf.Variable(-2.0, name="b")
        opt = tf.train.AdamOptimizer(0.1)
        if wrap:
            opt = tf.contrib.opt.DropStaleGradientOptimizer(opt, staleness=0)
        train_op = opt.minimize(tf.square(a * b - 1.0), global_step=global_step)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op)
            return sess.run([a, b, global_step])


def test_drop_stale_adam_with_variables_and_its_state_on_different_ps_tasks():
    # a and b on different ps tasks, Adam's beta powers with one of them: fresh steps equal Adam.
    with InProcessCluster({"ps": 2, "worker": 1}) as cluster:
        got = _adam_steps(4, tf.train.replica_device_setter(
            worker_device="/job:worker/task:0", cluster=cluster.spec),
            cluster.target("worker", 0), wrap=True)
        assert "a" in cluster[("ps", 1)].resources.variables()
        assert "b" in cluster[("ps", 0)].resources.variables()
    assert got == _adam_steps(4)
    assert got[2] == 4


def test_drop_stale_counts_staleness_in_a_summary():
    with tf.Graph().as_default():
        global_step = tf.train.create_global_step()
        v = tf.Variable(2.0, name="v")
        opt = tf.contrib.opt.DropStaleGradientOptimizer(tf.train.GradientDescentOptimizer(0.5),
                                                        staleness=0)
        train_op = opt.minimize(v * v, global_step=global_step)
        summary = tf.get_collection(tf.GraphKeys.SUMMARIES)[-1]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(train_op) == 0.0          # fresh: applied, nothing dropped
            assert sess.run([v, global_step]) == [0.0, 1]
        assert "Gradient_staleness_percentage" in summary.name


def test_drop_stale_needs_its_own_compute_gradients():
    with tf.Graph().as_default():
        global_step = tf.train.create_global_step()
        v = tf.Variable(1.0)
        opt = tf.contrib.opt.DropStaleGradientOptimizer(tf.train.GradientDescentOptimizer(0.1), 0)
        with pytest.raises(ValueError, match="compute_gradients"):
            opt.apply_gradients([(tf.constant(1.0), v)], global_step)


# -- ElasticAverageOptimizer -------------------------------------------------------------------
class _EasgdWorker:
    """One worker's graph and MonitoredTrainingSession (TF1's elastic_average_optimizer_test):
    v0, v1 local under ElasticAverageCustomGetter, their centres on the ps. With ``loss``, the
    loss is ``0.5 * sum(a * (v - target)^2)`` (a quadratic) and its gradients are used;
    else the constant gradients -1."""

    def __init__(self, cluster, worker_id, num_workers, period, moving_rate, num_ps=1,
                 loss=None, rho=None, lr=1.0, synchronous=False):
        self.graph = tf.Graph()
        worker_device = _worker_device(worker_id) + "/cpu:0"
        with self.graph.as_default():
            self.getter = tf.contrib.opt.ElasticAverageCustomGetter(worker_device=worker_device)
            with tf.variable_scope("", custom_getter=self.getter), tf.device(
                    tf.train.replica_device_setter(worker_device=worker_device,
                                                   ps_device="/job:ps", ps_tasks=num_ps)):
                self.global_step = tf.Variable(0, name="global_step", trainable=False)
                self.v = [tf.get_variable(initializer=0.0, name="v0"),
                          tf.get_variable(initializer=1.0, name="v1")]
            with tf.device(_worker_device(worker_id)):
                self.opt = tf.contrib.opt.ElasticAverageOptimizer(
                    opt=tf.train.GradientDescentOptimizer(lr), num_worker=num_workers,
                    moving_rate=moving_rate, communication_period=period, rho=rho,
                    ea_custom_getter=self.getter, synchronous=synchronous)
                if loss is None:
                    grads_and_vars = [(tf.constant(-1.0), v) for v in self.v]
                else:
                    a, target = loss
                    grads_and_vars = self.opt.compute_gradients(tf.add_n(
                        [0.5 * a[i] * tf.square(v - target[i]) for i, v in enumerate(self.v)]))
                self.train_op = self.opt.apply_gradients(grads_and_vars, self.global_step)
                hook = self.opt.make_session_run_hook(worker_id == 0, worker_id)
            self.center = [self.getter._global_map[v] for v in self.v]
            self.swapping_saver = self.opt.swapping_saver()
            self.sess = tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", worker_id), is_chief=worker_id == 0,
                hooks=[hook], log_step_count_steps=0)

    def values(self):
        """[local v0, v1], [centre v0, v1], global step."""
        local, center, step = self.sess.run([self.v, self.center, self.global_step])
        return [float(x) for x in local], [float(x) for x in center], int(step)


def _easgd_workers(cluster, num_workers, *args, **kwargs):
    workers = []
    try:
        for i in range(num_workers):
            workers.append(_EasgdWorker(cluster, i, num_workers, *args, **kwargs))
    except BaseException:
        for w in workers:
            w.sess.close()
        raise
    return workers


def test_easgd_one_worker_period_2_as_tf1():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        (w,) = _easgd_workers(cluster, 1, period=2, moving_rate=1.0)
        try:
            assert w.values() == ([0.0, 1.0], [0.0, 1.0], 0)
            # What the ps sends the worker: nothing on a local step, the centres on an exchange.
            sent = [op.outputs[0] for op in w.graph.get_operations()
                    if op.type == "If" and "read_center" in op.name]
            _, values = w.sess.run([w.train_op, sent])      # a local step only
            assert [np.shape(v) for v in values] == [(0,)]
            assert w.values() == ([1.0, 2.0], [0.0, 1.0], 0)
            _, values = w.sess.run([w.train_op, sent])      # ... then the exchange (a swap)
            assert [np.shape(v) for v in values] == [()]
            assert w.values() == ([0.0, 1.0], [2.0, 3.0], 1)
            w.sess.run(w.train_op)
            assert w.values() == ([1.0, 2.0], [2.0, 3.0], 1)
            # The centres live on the ps, the local variables on the worker.
            assert "global_center_variable/v0" in cluster[("ps", 0)].resources.variables()
            worker_vars = cluster[("worker", 0)].resources.variables()
            assert {"v0", "local_center_variable/v0", "local_step"} <= set(worker_vars)
            assert "v0" not in cluster[("ps", 0)].resources.variables()
        finally:
            w.sess.close()


def test_easgd_two_workers_two_ps_as_tf1():
    with InProcessCluster({"ps": 2, "worker": 2}) as cluster:
        w0, w1 = _easgd_workers(cluster, 2, period=1, moving_rate=0.5, num_ps=2)
        try:
            assert w0.values() == ([0.0, 1.0], [0.0, 1.0], 0)
            w0.sess.run(w0.train_op)
            w1.sess.run(w1.train_op)
            assert w0.values() == ([0.5, 1.5], [0.75, 1.75], 2)
            assert w1.values()[0] == [0.75, 1.75]
            # round robin: v0's centre on ps 1 (the global step took ps 0), v1's on ps 0
            assert "global_center_variable/v0" in cluster[("ps", 1)].resources.variables()
            assert "global_center_variable/v1" in cluster[("ps", 0)].resources.variables()
        finally:
            w0.sess.close()
            w1.sess.close()


def _easgd_numpy(a, target, lr, rate, rho, period, order, x0):
    """TF1's EASGD formulas re-run in numpy (float32) for workers stepping in ``order``."""
    f32 = np.float32
    a, target, lr, rate, rho = f32(a), f32(target), f32(lr), f32(rate), f32(rho)
    local = {w: np.array(x0, f32) for w in set(order)}
    local_center = {w: np.array(x0, f32) for w in set(order)}
    steps = {w: 0 for w in set(order)}
    center, global_step = np.array(x0, f32), 0
    for w in order:
        grad = a * (local[w] - target) + rho * (local[w] - local_center[w])
        local[w] = local[w] - lr * grad
        steps[w] += 1
        if steps[w] % period == 0:
            local_center[w] = center.copy()
            diff = local[w] - local_center[w]
            local[w] = local[w] - rate * diff
            center = center + rate * diff
            global_step += 1
    return local, center, global_step


@pytest.mark.parametrize("period", [1, 2])
def test_easgd_on_a_quadratic_equals_numpy(period):
    a, target = [1.5, 0.5], [2.0, -3.0]
    lr, rate, order = 0.25, 0.3, [0, 1, 1, 0, 0, 1, 0, 1, 1, 0]
    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        workers = _easgd_workers(cluster, 2, period=period, moving_rate=rate,
                                 loss=(a, target), lr=lr)
        try:
            for w in order:
                workers[w].sess.run(workers[w].train_op)
            got = [w.values() for w in workers]
        finally:
            for w in workers:
                w.sess.close()
    rho = rate / lr   # TF1's default
    local, center, step = _easgd_numpy(a, target, lr, rate, rho, period, order, [0.0, 1.0])
    for w in (0, 1):
        np.testing.assert_allclose(got[w][0], local[w], rtol=1e-6)
        np.testing.assert_allclose(got[w][1], center, rtol=1e-6)
        assert got[w][2] == step
    assert step == sum(1 for k in range(len(order))
                       if order[:k + 1].count(order[k]) % period == 0)


def test_easgd_synchronous_start_waits_for_every_worker():
    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        workers = {}

        def start(i):
            workers[i] = _EasgdWorker(cluster, i, 2, 1, 0.5, synchronous=True)
        try:
            # Each worker's session start waits for the other's token: they start together.
            _run_in_threads((start, (0,)), (start, (1,)))
            workers[0].sess.run(workers[0].train_op)
            assert workers[0].values() == ([0.5, 1.5], [0.5, 1.5], 1)
        finally:
            for w in workers.values():
                w.sess.close()


def test_easgd_default_rates_and_swapping_saver(tmp_path):
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        (w,) = _easgd_workers(cluster, 1, period=2, moving_rate=None, lr=0.5)
        try:
            assert w.opt._moving_rate == pytest.approx(0.9 / 2 / 1)
            assert w.opt._rho == pytest.approx(0.45 / 0.5)
            for _ in range(2):
                w.sess.run(w.train_op)
            local, center, _ = w.values()
            assert center != [0.0, 1.0]
            path = w.swapping_saver.save(w.sess._tf_sess(), str(tmp_path / "model"))
        finally:
            w.sess.close()
    reader = tf.train.load_checkpoint(path)
    # The centres, under the model's own names.
    assert sorted(reader.get_variable_to_shape_map()) == ["v0", "v1"]
    assert [float(reader.get_tensor("v0")), float(reader.get_tensor("v1"))] == center


def test_easgd_getter_places_local_variables_on_the_worker_and_centres_round_robin():
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"],
                                 "worker": ["w0:2222", "w1:2222", "w2:2222"]})
    with tf.Graph().as_default():
        getter = tf.contrib.opt.ElasticAverageCustomGetter(worker_device="/job:worker/task:0")
        with tf.device(tf.train.replica_device_setter(cluster=spec,
                                                      worker_device="/job:worker/task:0",
                                                      ps_device="/job:ps")), \
                tf.variable_scope("", custom_getter=getter):
            v = tf.get_variable(initializer=[1, 2], name="v")
            w = tf.get_variable(initializer=[2, 1], name="w")
        assert v.device == w.device == "/job:worker/task:0"
        assert getter._global_map[v].device == "/job:ps/task:0"
        assert getter._global_map[w].device == "/job:ps/task:1"
        assert getter._local_map[v].device == "/job:worker/task:0"
        assert getter._global_map[v].op.name == elastic_average.GLOBAL_VARIABLE_NAME + "/v"
        assert getter._local_map[v].op.name == elastic_average.LOCAL_VARIABLE_NAME + "/v"
        assert tf.local_variables() == [v, getter._local_map[v], w, getter._local_map[w]]
        assert tf.global_variables() == [getter._global_map[v], getter._global_map[w]]


# -- ModelAverageOptimizer ---------------------------------------------------------------------
class _MaWorker:
    """One worker's graph and MonitoredTrainingSession (TF1's model_average_optimizer_test): v0,
    v1 local under ModelAverageCustomGetter, the global ones on the ps; worker k's gradients
    are the constants ``grads[k]``."""

    def __init__(self, cluster, worker_id, num_workers, interval_steps, grads):
        self.graph = tf.Graph()
        worker_device = _worker_device(worker_id) + "/cpu:0"
        with self.graph.as_default():
            getter = tf.contrib.opt.ModelAverageCustomGetter(worker_device=worker_device)
            with tf.variable_scope("", custom_getter=getter), tf.device(
                    tf.train.replica_device_setter(worker_device=worker_device,
                                                   ps_device="/job:ps/task:0/cpu:0",
                                                   ps_tasks=1)):
                self.global_step = tf.Variable(0, name="global_step", trainable=False)
                self.v = [tf.get_variable(initializer=0.0, name="v0"),
                          tf.get_variable(initializer=1.0, name="v1")]
            with tf.device(_worker_device(worker_id)):
                opt = tf.contrib.opt.ModelAverageOptimizer(
                    opt=tf.train.GradientDescentOptimizer(1.0), num_worker=num_workers,
                    ma_custom_getter=getter, is_chief=worker_id == 0,
                    interval_steps=interval_steps)
                self.train_op = opt.apply_gradients(
                    [(tf.constant(g), v) for g, v in zip(grads[worker_id], self.v)],
                    self.global_step)
            self.globals = [getter._local_2_global[v] for v in self.v]
            self.sess = tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", worker_id), is_chief=worker_id == 0,
                hooks=[opt.make_session_run_hook()], log_step_count_steps=0)

    def values(self):
        """[local v0, v1], [global v0, v1], global step."""
        local, glob, step = self.sess.run([self.v, self.globals, self.global_step])
        return [float(x) for x in local], [float(x) for x in glob], int(step)


def _ma_workers(cluster, num_workers, interval_steps, grads):
    workers = []
    try:
        for i in range(num_workers):
            workers.append(_MaWorker(cluster, i, num_workers, interval_steps, grads))
    except BaseException:
        for w in workers:
            w.sess.close()
        raise
    return workers


def test_model_average_two_workers_as_tf1():
    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        w0, w1 = _ma_workers(cluster, 2, 2, [[-1.0, -1.0], [-2.0, -2.0]])
        try:
            assert w0.values() == ([0.0, 1.0], [0.0, 1.0], 0)
            w0.sess.run(w0.train_op)
            w1.sess.run(w1.train_op)
            assert w0.values() == ([1.0, 2.0], [0.0, 1.0], 0)
            assert w1.values() == ([2.0, 3.0], [0.0, 1.0], 0)
            # The averaging step: both workers wait for each other through the ps.
            _run_in_threads((w0.sess.run, (w0.train_op,)), (w1.sess.run, (w1.train_op,)))
            assert w0.values() == ([3.0, 4.0], [3.0, 4.0], 1)   # mean of (2, 3) and (4, 5)
            assert w1.values() == ([3.0, 4.0], [3.0, 4.0], 1)
            w0.sess.run(w0.train_op)
            assert w0.values() == ([4.0, 5.0], [3.0, 4.0], 1)
            assert "global_center_variable/v0" in cluster[("ps", 0)].resources.variables()
            assert "v0" in cluster[("worker", 1)].resources.variables()
        finally:
            w0.sess.close()
            w1.sess.close()


def test_model_average_three_workers_several_intervals_equal_the_mean():
    grads = [[-1.0, 0.5], [-2.0, 0.25], [0.5, -4.0]]
    interval = 3
    with InProcessCluster({"ps": 1, "worker": 3}) as cluster:
        workers = _ma_workers(cluster, 3, interval, grads)
        try:
            expected_local = [np.array([0.0, 1.0], np.float32) for _ in workers]
            for k in range(1, 2 * interval + 1):
                _run_in_threads(*[(w.sess.run, (w.train_op,)) for w in workers])
                expected_local = [x - np.float32(g) for x, g in
                                  zip(expected_local, np.array(grads, np.float32))]
                if k % interval == 0:
                    mean = np.mean(np.stack(expected_local), axis=0, dtype=np.float32)
                    expected_local = [mean.copy() for _ in workers]
                    for w in workers:
                        local, glob, step = w.values()
                        np.testing.assert_allclose(glob, mean, rtol=1e-6)
                        np.testing.assert_allclose(local, mean, rtol=1e-6)
                        assert step == k // interval
            for w, x in zip(workers, expected_local):
                np.testing.assert_allclose(w.values()[0], x, rtol=1e-6)
        finally:
            for w in workers:
                w.sess.close()


def test_model_average_getter_places_variables():
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"],
                                 "worker": ["w0:2222", "w1:2222", "w2:2222"]})
    with tf.Graph().as_default():
        getter = tf.contrib.opt.ModelAverageCustomGetter(worker_device="/job:worker/task:0")
        with tf.device(tf.train.replica_device_setter(cluster=spec,
                                                      worker_device="/job:worker/task:0",
                                                      ps_device="/job:ps")), \
                tf.variable_scope("", custom_getter=getter):
            v = tf.get_variable(initializer=[1, 2], name="v")
            w = tf.get_variable(initializer=[2, 1], name="w")
        assert v.device == w.device == "/job:worker/task:0"
        assert getter._local_2_global[v].device == "/job:ps/task:0"
        assert getter._local_2_global[w].device == "/job:ps/task:1"
        assert getter._local_2_global[v].op.name == model_average.GLOBAL_VARIABLE_NAME + "/v"
        assert tf.local_variables() == [v, w]


# -- AGNOptimizer ------------------------------------------------------------------------------
class _AgnWorker:
    """One worker's graph and MonitoredTrainingSession (TF1's agn_optimizer_test): v0, v1 local
    under AGNCustomGetter (with a [2, 4] variable partitioned over the ps tasks when there are
    two), Adam(0.1, beta1=0, beta2=0), constant gradients -1."""

    def __init__(self, cluster, worker_id, num_workers, period, num_ps=1):
        self.graph = tf.Graph()
        worker_device = _worker_device(worker_id) + "/cpu:0"
        with self.graph.as_default():
            getter = tf.contrib.opt.AGNCustomGetter(worker_device=worker_device)
            ps_device = tf.train.replica_device_setter(worker_device=worker_device,
                                                       ps_device="/job:ps", ps_tasks=num_ps)
            with tf.variable_scope("", custom_getter=getter), tf.device(ps_device):
                self.global_step = tf.train.get_or_create_global_step()
                self.v = [tf.get_variable(initializer=0.0, name="v0"),
                          tf.get_variable(initializer=0.5, name="v1")]
            grads = [tf.constant(-1.0), tf.constant(-1.0)]
            if num_ps > 1:
                with tf.variable_scope("", custom_getter=getter,
                                       partitioner=tf.fixed_size_partitioner(num_ps, axis=0)), \
                        tf.device(ps_device):
                    parts = list(tf.get_variable("partition_var", shape=[2, 4],
                                                 initializer=tf.zeros_initializer()))
                self.v += parts
                grads += [tf.constant([[-1.0] * 4]) for _ in parts]
            with tf.device(_worker_device(worker_id)):
                opt = tf.contrib.opt.AGNOptimizer(
                    tf.train.AdamOptimizer(learning_rate=0.1, beta1=0.0, beta2=0.0),
                    num_worker=num_workers, communication_period=period, custom_getter=getter)
                self.train_op = opt.apply_gradients(list(zip(grads, self.v)), self.global_step)
                hook = opt.make_session_run_hook(worker_id == 0, worker_id)
            self.globals = [getter._global_map[v] for v in self.v]
            self.global_variable_names = [v.op.name for v in tf.global_variables()]
            self.sess = tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", worker_id), is_chief=worker_id == 0,
                hooks=[hook], log_step_count_steps=0)

    def run(self, n=1):
        for _ in range(n):
            self.sess.run(self.train_op)

    def values(self):
        """[local v0, v1], [global v0, v1 (, parts)], global step."""
        local, glob, step = self.sess.run([self.v[:2], self.globals, self.global_step])
        return [float(x) for x in local], glob, int(step)


def test_agn_one_worker_period_4_as_tf1():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        w = _AgnWorker(cluster, 0, 1, period=4)
        try:
            # Adam's local slots and beta powers are local variables (the global update's own
            # state is on the ps, with the centres).
            assert not [n for n in w.global_variable_names
                        if "Adam" in n and not n.startswith("global_center_variable/")]
            assert w.values()[0] == [0.0, 0.5]
            w.run()
            local, glob, step = w.values()
            np.testing.assert_allclose(local, [0.1, 0.6], atol=1e-6)
            assert [float(x) for x in glob] == [0.0, 0.5] and step == 0
            w.run(2)
            np.testing.assert_allclose(w.values()[0], [0.3, 0.8], atol=1e-6)
            w.run()   # the 4th: the mean gradient is applied to the centres, which are pulled
            local, glob, step = w.values()
            assert local == [float(x) for x in glob] and step == 1
            np.testing.assert_allclose(local, [0.1, 0.6], atol=1e-6)
            w.run(4)
            local, glob, step = w.values()
            assert local == [float(x) for x in glob] and step == 2
            np.testing.assert_allclose(local, [0.2, 0.7], atol=1e-6)
            assert "global_center_variable/v0" in cluster[("ps", 0)].resources.variables()
            assert "grad_variable/v0" in cluster[("worker", 0)].resources.variables()
        finally:
            w.sess.close()


def test_agn_two_workers_partitioned_over_two_ps_as_tf1():
    with InProcessCluster({"ps": 2, "worker": 2}) as cluster:
        w0 = _AgnWorker(cluster, 0, 2, period=1, num_ps=2)
        try:
            w1 = _AgnWorker(cluster, 1, 2, period=1, num_ps=2)
        except BaseException:
            w0.sess.close()
            raise
        try:
            for k, w in enumerate([w0, w1, w0, w1, w0, w1]):
                w.run()
                glob = w0.values()[1]
                expected = 0.1 * (k + 1)   # each global update: Adam(beta 0) moves by lr
                np.testing.assert_allclose(glob[0], expected, atol=1e-6)
                np.testing.assert_allclose(glob[2], [[expected] * 4], atol=1e-6)
                np.testing.assert_allclose(glob[3], [[expected] * 4], atol=1e-6)
            assert w1.values()[2] == 6
            ps_vars = [set(cluster[("ps", i)].resources.variables()) for i in (0, 1)]
            assert {"global_center_variable/partition_var/part_0",
                    "global_center_variable/partition_var/part_1"} <= ps_vars[0] | ps_vars[1]
        finally:
            w0.sess.close()
            w1.sess.close()


def test_agn_getter_places_variables():
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"],
                                 "worker": ["w0:2222", "w1:2222", "w2:2222"]})
    with tf.Graph().as_default():
        getter = tf.contrib.opt.AGNCustomGetter(worker_device="/job:worker/task:0")
        with tf.device(tf.train.replica_device_setter(cluster=spec,
                                                      worker_device="/job:worker/task:0",
                                                      ps_device="/job:ps")), \
                tf.variable_scope("", custom_getter=getter):
            v = tf.get_variable(initializer=[1, 2], name="v")
            w = tf.get_variable(initializer=[2, 1], name="w")
        assert v.device == w.device == getter._grad_map[v].device == "/job:worker/task:0"
        assert getter._global_map[v].device == "/job:ps/task:0"
        assert getter._global_map[w].device == "/job:ps/task:1"
        assert getter._grad_map[w].op.name == "grad_variable/w"


def test_elastic_average_default_rho_needs_a_plain_learning_rate():
    # TF1 divides by opt._learning_rate, which Adam lacks (an AttributeError there): say what to do.
    with tf.Graph().as_default():
        getter = tf.contrib.opt.ElasticAverageCustomGetter("/job:worker/task:0")
        with pytest.raises(ValueError, match="AdamOptimizer has no plain number for one: pass rho"):
            tf.contrib.opt.ElasticAverageOptimizer(tf.train.AdamOptimizer(0.1), num_worker=1,
                                                   ea_custom_getter=getter)
        opt = tf.contrib.opt.ElasticAverageOptimizer(tf.train.AdamOptimizer(0.1), num_worker=1,
                                                     ea_custom_getter=getter, rho=0.5)
        assert opt._rho == 0.5
