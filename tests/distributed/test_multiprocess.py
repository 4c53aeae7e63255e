"""End-to-end: real server processes on 127.0.0.1, clients with and without servers of their own."""

import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import LocalCluster
from zps.transport import direct, shm
from zps.transport.endpoint import default_transport

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _status(address):
    return default_transport().request(address, "Status", {}, peer_timeout=10).result(30).body


def test_seed_two_task_local_cluster():
    """The seed's two-task cluster: each task its own process; a graph spans both."""
    with LocalCluster({"local": 2}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:local/task:1"):
                v = tf.Variable([1.0, 2.0], name="v")
                doubled = v * 2.0
            with tf.device("/job:local/task:0"):
                total = tf.reduce_sum(doubled) + 1.0
            with tf.Session(cluster.target("local", 0)) as sess:
                sess.run(v.initializer)
                assert sess.run(total) == 7.0
        assert _status(cluster.address("local", 1))["steps_served"] >= 1


def test_placement_from_a_client_without_a_server():
    from tests.distributed.test_distributed_session import _train
    local_losses, local_vars = _train("", [None, None, None])
    with LocalCluster({"ps": 2, "worker": 1}) as cluster:
        devices = ["/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"]
        losses, dist_vars = _train(cluster.target("worker", 0), devices)
    np.testing.assert_allclose(losses, local_losses, rtol=1e-6)
    for a, b in zip(dist_vars, local_vars):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this host has no IPv6 loopback (::1)")
def test_an_ipv6_cluster_trains_like_a_local_run():
    """A cluster spec of IPv6 addresses ('[::1]:2222', as TF1 takes them): the servers bind them,
    peers and a client without a server connect to them."""
    from tests.distributed.test_distributed_session import _train
    local_losses, local_vars = _train("", [None, None, None])
    with LocalCluster({"ps": 2, "worker": 1}, host="[::1]") as cluster:
        assert cluster.target("worker", 0).startswith("zps://[::1]:")
        devices = ["/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"]
        losses, dist_vars = _train(cluster.target("worker", 0), devices)
        assert _status(cluster.address("ps", 1))["steps_served"] >= 1
    np.testing.assert_allclose(losses, local_losses, rtol=1e-6)
    for a, b in zip(dist_vars, local_vars):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_in_graph_replication_runs_each_tower_on_its_worker():
    rng = np.random.default_rng(1)
    x_val = rng.standard_normal((16, 4)).astype(np.float32)
    y_val = (x_val @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
    with LocalCluster({"ps": 2, "worker": 2}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(np.zeros((4, 1), np.float32), name="w")
            with tf.device("/job:ps/task:1"):
                b = tf.Variable(np.zeros(1, np.float32), name="b")
            opt = tf.train.GradientDescentOptimizer(0.1)
            x = tf.placeholder(tf.float32, [None, 4])
            y = tf.placeholder(tf.float32, [None, 1])
            tower_grads, losses = [], []
            for i in range(2):
                with tf.device("/job:worker/task:%d" % i):
                    xs, ys = x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
                    loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) + b - ys))
                    losses.append(loss)
                    tower_grads.append(opt.compute_gradients(loss, [w, b]))
            avg = [(tf.add_n([g0, g1]) * 0.5, v) for (g0, v), (g1, _) in zip(*tower_grads)]
            train_op = opt.apply_gradients(avg)
            mean_loss = tf.add_n(losses) * 0.5
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                first = sess.run(mean_loss, {x: x_val, y: y_val})
                for _ in range(50):
                    sess.run(train_op, {x: x_val, y: y_val})
                last = sess.run(mean_loss, {x: x_val, y: y_val})
        assert last < first * 0.2
        for i in range(2):
            assert _status(cluster.address("worker", i))["steps_served"] >= 50


_ASSIGN_ADD_CLIENT = textwrap.dedent("""
    import sys
    import zps as tf
    target, n = sys.argv[1], int(sys.argv[2])
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(0.0, name="counter")
    with tf.device("/job:worker/task:%s" % sys.argv[3]):
        one = tf.constant(1.0) * 1.0
    inc = tf.assign_add(counter, one).op
    with tf.Session(target) as sess:
        for _ in range(n):
            sess.run(inc)
""")


def test_two_worker_processes_assign_add_exactly():
    with LocalCluster({"ps": 1, "worker": 2}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                counter = tf.Variable(0.0, name="counter")
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(counter.initializer)
                clients = [subprocess.Popen([sys.executable, "-c", _ASSIGN_ADD_CLIENT,
                                             cluster.target("worker", i), "1000", str(i)])
                           for i in range(2)]
                for c in clients:
                    assert c.wait(timeout=150) == 0
                assert sess.run(counter) == 2000.0


def _ps_variable_graph():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:0"):
        y = v * 3.0
    return v, y


def test_killed_ps_gives_unavailable_within_the_timeout():
    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        config = tf.ConfigProto(operation_timeout_in_ms=2000)
        with tf.Graph().as_default():
            v, y = _ps_variable_graph()
            with tf.Session(cluster.target("worker", 0), config=config) as sess:
                sess.run(v.initializer)
                assert sess.run(y) == 3.0
                cluster.kill("ps", 0)
                start = time.monotonic()
                with pytest.raises(tf.errors.UnavailableError, match="/job:ps/replica:0/task:0"):
                    sess.run(y)
                assert time.monotonic() - start < 10
                # Once it is back, the session registers again; the new ps lost the value. The
                # worker's connection comes back within its reconnect interval (<= 1 s), and a
                # freshly started ps on a loaded machine may take longer than the 2-s timeout to
                # answer its first step: Unavailable until then, as the error says ("the step
                # can be retried once it is back").
                cluster.restart("ps", 0)
                deadline = time.monotonic() + 30
                while True:
                    try:
                        sess.run(y)
                    except tf.errors.FailedPreconditionError as e:
                        assert "uninitialized value v" in str(e)
                        break
                    except tf.errors.UnavailableError:
                        assert time.monotonic() < deadline, "the restarted ps never answered"
                        continue
                    raise AssertionError("a step on the restarted ps read the lost value")
                sess.run(v.initializer)
                assert sess.run(y) == 3.0


def test_ps_restarted_between_steps_gives_aborted():
    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            v, y = _ps_variable_graph()
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                assert sess.run(y) == 3.0
                cluster.restart("ps", 0)   # a new incarnation nobody has seen fail
                with pytest.raises(tf.errors.AbortedError, match="restarted"):
                    sess.run(y)
                with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
                    sess.run(y)


@pytest.mark.parametrize("in_process_master", [True, False])
def test_a_plan_first_registered_after_a_ps_restart_is_aborted_too(in_process_master):
    # The new ps has lost the session's state: running any step on it (even one whose plan the
    # session never registered before) without an AbortedError would read an empty ps.
    in_process = [("worker", 0)] if in_process_master else []
    with LocalCluster({"ps": 1, "worker": 1}, in_process=in_process) as cluster:
        server = tf.train.Server(cluster.spec, "worker", 0) if in_process_master else None
        try:
            with tf.Graph().as_default():
                v, y = _ps_variable_graph()
                z = v * 5.0
                target = server.target if server is not None else cluster.target("worker", 0)
                with tf.Session(target) as sess:
                    sess.run(v.initializer)
                    assert sess.run(y) == 3.0
                    cluster.restart("ps", 0)
                    with pytest.raises(tf.errors.AbortedError, match="restarted"):
                        sess.run(z)   # a plan registered only now
                    # Told once: the session's other plans run on the new ps without a second
                    # abort (and find its state gone).
                    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
                        sess.run(y)
                    sess.run(v.initializer)
                    assert sess.run(z) == 5.0
        finally:
            if server is not None:
                server.stop()


def test_garbage_bytes_do_not_crash_a_server():
    with LocalCluster({"ps": 1}) as cluster:
        host, port = cluster.address("ps", 0).rsplit(":", 1)
        rng = np.random.default_rng(3)
        for _ in range(20):
            with socket.create_connection((host, int(port)), timeout=5) as s:
                s.sendall(rng.bytes(int(rng.integers(1, 4096))))
        with tf.Graph().as_default():
            c = tf.constant(5.0) + 1.0
            with tf.Session(cluster.target("ps", 0)) as sess:
                assert sess.run(c) == 6.0


def test_large_initial_values_reach_a_ps_process():
    """A variable initialized from a 20 MB numpy array (more than a message header may hold)
    on a ps process, from a client without a server: the constant travels as raw frames."""
    init = np.random.default_rng(5).standard_normal(5 << 20).astype(np.float32)
    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(init, name="pretrained")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(v)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                np.testing.assert_allclose(sess.run(total), init.sum(dtype=np.float64), rtol=1e-4)
                np.testing.assert_array_equal(sess.run(v), init)


def test_closing_a_remote_session_cancels_its_blocked_step():
    """A client without a server closes its session while a step waits on an empty queue on a
    ps process: the step is cancelled there and the blocked thread returns at once."""
    import threading
    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                q = tf.FIFOQueue(1, tf.float32, shapes=[], shared_name="never_filled")
                item = q.dequeue()
            sess = tf.Session(cluster.target("worker", 0))
            box = {}

            def run():
                try:
                    sess.run(item)
                except Exception as e:  # noqa: BLE001 - inspected below
                    box["error"] = e

            t = threading.Thread(target=run, daemon=True)
            t.start()
            time.sleep(1.0)
            assert t.is_alive(), box
            start = time.monotonic()
            sess.close()
            t.join(10)
            assert not t.is_alive() and time.monotonic() - start < 5
            assert isinstance(box.get("error"), tf.errors.CancelledError), box


@pytest.mark.parametrize("direct", [True, False])
def test_run_graph_from_the_calling_thread_or_the_io_thread(direct, monkeypatch):
    """The master sends RunGraph on its calling thread's own socket (zps.transport.caller) or,
    switched off, through the I/O thread: same results, errors and large replies either way."""
    from zps.transport import caller, endpoint
    monkeypatch.setattr(endpoint, "CALLER_SOCKETS", direct)
    sent = {"caller": [], "io": []}
    for cls, key in ((caller.Caller, "caller"), (endpoint.Transport, "io")):
        def spy(self, address, method, *args, _orig=cls.request, _key=key, **kwargs):
            sent[_key].append(method)
            return _orig(self, address, method, *args, **kwargs)
        monkeypatch.setattr(cls, "request", spy)
    init = np.arange(5 << 20, dtype=np.float32)   # 20 MB: its fetch streams back
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, "worker", 0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(init, name="v")
                    shape = tf.placeholder(tf.int32, [2])
                    reshaped = tf.reshape(v, shape)
                with tf.device("/job:worker/task:0"):
                    total = tf.reduce_sum(v * 2.0)
                    step = tf.assign_add(v, tf.ones_like(v))
                with tf.Session(server.target) as sess:
                    sess.run(v.initializer)
                    for _ in range(3):
                        sess.run(step)
                    assert sess.run(total) == pytest.approx(2.0 * (init + 3.0).sum(dtype=np.float64))
                    np.testing.assert_array_equal(sess.run(v), init + 3.0)
                    assert sess.run(reshaped, {shape: [4, -1]}).shape == (4, 5 << 18)
                    with pytest.raises(tf.errors.InvalidArgumentError,
                                       match=r"shape \[3, -1\] requires a multiple of 3") as info:
                        sess.run(reshaped, {shape: [3, -1]})   # 5 << 20 is no multiple of 3
                    assert info.value.op_name == "Reshape"
        finally:
            server.stop()
    assert sent["caller" if direct else "io"].count("RunGraph") >= 6
    assert "RunGraph" not in sent["io" if direct else "caller"]


@pytest.mark.parametrize("direct", [True, False])
def test_an_interrupted_step_is_cancelled_on_the_ps(direct, monkeypatch):
    """Ctrl-C (a KeyboardInterrupt in the master's thread, here from its own partition) during a
    step: the interrupt reaches the caller, and the ps's partition waiting for this task's tensor
    is cancelled rather than left waiting for ever (RunGraph sent either way)."""
    from zps.transport import endpoint
    monkeypatch.setattr(endpoint, "CALLER_SOCKETS", direct)

    def interrupt(x):
        raise KeyboardInterrupt

    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, "worker", 0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:worker/task:0"):
                    x = tf.py_func(interrupt, [tf.constant(1.0)], tf.float32)
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(0.0, name="v")
                    update = tf.assign_add(v, x)
                with tf.Session(server.target) as sess:
                    sess.run(v.initializer)
                    with pytest.raises(KeyboardInterrupt):
                        sess.run(update)
                    deadline = time.monotonic() + 10
                    while _status(cluster.address("ps", 0))["steps_running"] and \
                            time.monotonic() < deadline:
                        time.sleep(0.05)
                    assert _status(cluster.address("ps", 0))["steps_running"] == 0
                    assert sess.run(v) == 0.0
        finally:
            server.stop()


@pytest.mark.parametrize("direct", [True, False])
def test_a_client_without_a_server_waits_on_its_own_socket(direct, monkeypatch):
    """A session on another process's master sends RegisterPlan and RunStep from its own thread's
    socket (zps.transport.caller) or, switched off, through the I/O thread: same results."""
    from zps.transport import caller, endpoint
    monkeypatch.setattr(endpoint, "CALLER_SOCKETS", direct)
    sent = []
    real = caller.Caller.request

    def spy(self, address, method, *args, **kwargs):
        sent.append(method)
        return real(self, address, method, *args, **kwargs)

    monkeypatch.setattr(caller.Caller, "request", spy)
    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.arange(4.0), name="v")
            with tf.device("/job:worker/task:0"):
                bump = tf.assign_add(v, tf.ones([4], tf.float64) * 2.0)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                for _ in range(5):
                    sess.run(bump)
                np.testing.assert_array_equal(sess.run(v), np.arange(4.0) + 10.0)
    if direct:
        assert sent.count("RunStep") == 7 and "RegisterPlan" in sent
    else:
        assert sent == []


def test_a_forked_child_makes_its_own_transport():
    """A process that used zps and then forks (a multiprocessing pool, say): a session in the
    child works instead of waiting for ever on the parent's transport, whose I/O thread the
    child does not have."""
    import os
    import signal
    import warnings

    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(1.0, name="v")
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                assert sess.run(v) == 1.0
            with warnings.catch_warnings():   # Python 3.12 warns about forking with threads
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:   # the child: never returns into pytest
                code = 1
                try:
                    signal.alarm(20)
                    with tf.Session(cluster.target("worker", 0)) as sess:
                        code = 0 if sess.run(tf.assign_add(v, 1.0)) == 2.0 else 2
                finally:
                    os._exit(code)
            deadline = time.monotonic() + 30
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if not done:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            assert done and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            with tf.Session(cluster.target("worker", 0)) as sess:
                assert sess.run(v) == 2.0   # the child's step reached the ps


@pytest.mark.parametrize("transport", ["direct", "zeromq"])
def test_tensors_for_the_masters_partition_come_back_on_its_run_graph_connection(
        transport, monkeypatch):
    """The ps sends what the master's own partition receives back on the RunGraph request's
    connection, which the master's thread reads itself: none of it reaches the worker's server
    (its I/O thread); over direct connections (zps.transport.direct) or ZeroMQ alike."""
    from zps.distributed.server import Server
    if transport == "zeromq":
        monkeypatch.setenv("ZPS_DIRECT", "0")            # the ps process
        monkeypatch.setattr(default_transport(), "direct_ok", False)   # this one
    returned, handled = [], []
    monkeypatch.setattr(Server, "deliver_returned", lambda self, msg, _orig=Server.deliver_returned:
                        (returned.append(msg.method), _orig(self, msg)))
    monkeypatch.setattr(Server, "_handle", lambda self, msg, responder, _orig=Server._handle:
                        (handled.append(msg.method), _orig(self, msg, responder)))
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, "worker", 0)
        ps = tf.train.ClusterSpec(cluster.spec).task_address("ps", 0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    w = tf.Variable(np.zeros(8, np.float32), name="w")
                with tf.device("/job:worker/task:0"):
                    err = tf.reduce_sum(tf.constant(x) * w, axis=1) - tf.constant(y)
                    loss = tf.reduce_mean(tf.square(err))
                train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
                with tf.Session(server.target) as sess:
                    sess.run(w.initializer)
                    for _ in range(12):
                        sess.run(train)
                    got = sess.run(w)
            # What `zps status` shows: the ps serves this process's direct connections, or none.
            status = _status(ps)
            direct_now = status["direct_connections"]
            assert (direct_now >= 1) if transport == "direct" else direct_now == 0
            # This process and the ps share the machine: Unix sockets, and rings where made.
            assert status["direct_unix"] == (direct_now if direct.UNIX else 0)
            assert status["direct_rings"] == (direct_now if shm.SEALS and shm.RING_BYTES else 0)
        finally:
            server.stop()
    expect = np.zeros(8, np.float64)
    for _ in range(12):
        expect -= 0.1 * 2.0 / 16 * x.T.astype(np.float64) @ (x @ expect - y)
    np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-6)
    assert returned.count("Tensors") == 12 and "Tensors" not in handled   # w, once a step
    channels = [c._channels[ps] for c in default_transport()._callers if ps in c._channels]
    assert channels and any(ch.direct is not None for ch in channels) == (transport == "direct")
