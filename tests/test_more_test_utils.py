"""tf.test additions: create_local_cluster (a between-graph training run on it), Benchmark,
is_built_with_*, test_src_dir_path."""

import json
import os
import threading

import numpy as np
import pytest

import zps as tf


def test_create_local_cluster_runs_between_graph_training():
    workers, ps = tf.test.create_local_cluster(num_workers=2, num_ps=2)
    try:
        assert len(workers) == 2 and len(ps) == 2
        cluster = workers[0].server_def["cluster"]
        assert len(cluster["worker"]) == 2 and len(cluster["ps"]) == 2
        assert all(a.startswith("127.0.0.1:") for a in cluster["worker"] + cluster["ps"])
        assert [s.task.job for s in workers + ps] == ["worker", "worker", "ps", "ps"]
        results, errors = {}, []
        init_done = threading.Event()

        def train(index):
            try:
                with tf.Graph().as_default():
                    with tf.device(tf.train.replica_device_setter(
                            cluster=cluster, worker_device="/job:worker/task:%d" % index)):
                        w = tf.get_variable("w", initializer=[0.0, 0.0])
                        b = tf.get_variable("b", initializer=0.0)
                        step = tf.train.get_or_create_global_step()
                        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
                        y = tf.constant([5.0, 11.0])   # y = x @ [1, 2]
                        pred = tf.reshape(tf.matmul(x, tf.reshape(w, [2, 1])), [2]) + b
                        loss = tf.reduce_mean(tf.square(pred - y))
                        train_op = tf.train.GradientDescentOptimizer(0.02).minimize(
                            loss, global_step=step)
                    assert w.device == "/job:ps/task:0" and b.device == "/job:ps/task:1"
                    with tf.Session(workers[index].target) as sess:
                        if index == 0:
                            sess.run(tf.global_variables_initializer())
                            init_done.set()
                        elif not init_done.wait(30):
                            raise TimeoutError("worker 0 did not initialize in 30 s")
                        for _ in range(200):
                            sess.run(train_op)
                        results[index] = sess.run([loss, step])
            except Exception as e:  # noqa: BLE001 - reported by the test thread
                errors.append(e)
                init_done.set()
        threads = [threading.Thread(target=train, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        assert not any(t.is_alive() for t in threads)
        with tf.Graph().as_default():   # the shared variables, read by a new client
            with tf.device(tf.train.replica_device_setter(cluster=cluster)):
                tf.get_variable("w", shape=[2])
                tf.get_variable("b", shape=[])
                step = tf.train.get_or_create_global_step()
            with tf.Session(ps[1].target) as sess:
                assert sess.run(step) == 400   # both workers' steps, on one global step
        assert all(results[i][0] < 0.1 for i in range(2)), results
    finally:
        for server in workers + ps:
            server.stop()


def test_create_local_cluster_without_ps():
    workers, ps = tf.test.create_local_cluster(1, 0)
    try:
        assert ps == [] and list(workers[0].server_def["cluster"]) == ["worker"]
        with tf.Graph().as_default(), tf.Session(workers[0].target) as sess:
            assert sess.run(tf.constant(2) * 3) == 6
    finally:
        workers[0].stop()


class _Bench(tf.test.Benchmark):
    def benchmark_add(self):
        self.report_benchmark(iters=3, wall_time=0.5, extras={"n": 1, "kind": "x"})

    def benchmark_graph(self):
        with tf.Graph().as_default(), tf.Session() as sess:
            return self.run_op_benchmark(sess, tf.constant(np.ones(3)) + 1.0, burn_iters=1,
                                         min_iters=5, mbs=2, name="graph_add")


def test_benchmark_report_and_run_op(capsys, tmp_path, monkeypatch):
    bench = _Bench()
    bench.benchmark_add()
    entry = json.loads(capsys.readouterr().out)
    assert entry == {"name": "_Bench.benchmark_add", "iters": 3, "wall_time": 0.5,
                     "extras": {"n": 1, "kind": "x"}}
    values = bench.benchmark_graph()
    assert values["iters"] == 5 and values["name"] == "graph_add" and values["wall_time"] > 0
    assert values["throughput"] == pytest.approx(2 / values["wall_time"])
    assert {"wall_time_mean", "wall_time_stdev"} <= set(values["extras"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["name"] == "_Bench.graph_add" and "wall_time_mean" not in printed["extras"]
    monkeypatch.setenv("TEST_REPORT_FILE_PREFIX", str(tmp_path) + "/")
    bench.benchmark_add()
    with open(tmp_path / "_Bench.benchmark_add") as f:
        assert json.load(f)["iters"] == 3
    with pytest.raises(OSError, match="already exists"):
        bench.benchmark_add()
    with pytest.raises(TypeError, match="extras must be a dict"):
        _Bench().report_benchmark(extras=[1], name="x")


def test_built_with_and_src_dir():
    try:
        import cupy  # noqa: F401
        has_cupy = True
    except ImportError:
        has_cupy = False
    assert tf.test.is_built_with_gpu_support() is has_cupy
    assert tf.test.is_built_with_cuda() or tf.test.is_built_with_rocm() or not has_cupy
    assert not (tf.test.is_built_with_cuda() and tf.test.is_built_with_rocm())
    assert tf.test.is_built_with_xla() is False
    path = tf.test.test_src_dir_path("zps/test.py")
    assert os.path.isabs(path) and os.path.samefile(path, tf.test.__file__)
