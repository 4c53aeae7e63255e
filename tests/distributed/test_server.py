"""tf.train.Server: TF1's construction rules, targets, binding errors, clean stop."""

import socket

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import free_ports


@pytest.fixture
def local_server():
    server = tf.train.Server.create_local_server()
    yield server
    server.stop()


def test_hello_distributed(local_server):
    with tf.Graph().as_default():
        c = tf.constant("Hello, distributed TensorFlow!")
        sess = tf.Session(local_server.target)
        assert sess.run(c) == b"Hello, distributed TensorFlow!"
        sess.close()


def test_target_and_grpc_alias(local_server):
    assert local_server.target.startswith("zps://localhost:")
    grpc_target = "grpc://" + local_server.target.split("://")[1]
    with tf.Graph().as_default():
        v = tf.Variable(3.0)
        with tf.Session(grpc_target) as sess:
            sess.run(v.initializer)
            assert sess.run(v * 2.0) == 6.0


def test_variables_are_shared_by_sessions_on_one_server(local_server):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="shared")
        inc = v.assign_add(1.0)
        with tf.Session(local_server.target) as s1, tf.Session(local_server.target) as s2:
            s1.run(v.initializer)
            s1.run(inc)
            assert s2.run(v) == 2.0


def test_job_and_task_rules():
    port_a, port_b = free_ports(2)
    two_jobs = {"ps": ["127.0.0.1:%d" % port_a], "worker": ["127.0.0.1:%d" % port_b]}
    with pytest.raises(ValueError, match="explicit `job_name`"):
        tf.train.Server(two_jobs, start=False)
    with pytest.raises(ValueError, match="explicit `task_index`"):
        tf.train.Server({"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, job_name="worker", start=False)
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        tf.train.Server(two_jobs, job_name="chief", task_index=0, start=False)
    with pytest.raises(ValueError, match="Unsupported protocol"):
        tf.train.Server(two_jobs, job_name="ps", task_index=0, protocol="rdma", start=False)
    server = tf.train.Server(two_jobs, job_name="ps", start=False)
    assert server.target == "zps://127.0.0.1:%d" % port_a


def test_port_in_use_names_task_and_address():
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    address = "127.0.0.1:%d" % blocker.getsockname()[1]
    try:
        with pytest.raises(tf.errors.UnavailableError,
                           match=r"/job:ps/replica:0/task:0 at %s.*already in use" % address):
            tf.train.Server({"ps": [address]})
    finally:
        blocker.close()


def test_address_not_of_this_host():
    with pytest.raises(tf.errors.UnavailableError, match="not an address of this host"):
        tf.train.Server({"ps": ["192.0.2.7:2222"]})


def test_stop_frees_the_port_and_binds_only_the_spec_address():
    port, = free_ports(1)
    spec = {"ps": ["127.0.0.1:%d" % port]}
    server = tf.train.Server(spec)
    with pytest.raises(OSError):   # 127.0.0.1:port is taken by the server
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        finally:
            s.close()
    server.stop()
    again = tf.train.Server(spec)
    again.stop()


def test_local_session_on_unknown_target_is_clear():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="not supported"):
            tf.Session("http://localhost:1")


def test_in_process_two_task_cluster_runs_across_tasks():
    ports = free_ports(2)
    spec = {"local": ["127.0.0.1:%d" % p for p in ports]}
    servers = [tf.train.Server(spec, job_name="local", task_index=i) for i in range(2)]
    try:
        with tf.Graph().as_default():
            with tf.device("/job:local/task:1"):
                a = tf.constant(np.arange(4.0, dtype=np.float32))
                b = a * 2.0
            with tf.device("/job:local/task:0"):
                c = b + 1.0
            with tf.Session(servers[0].target) as sess:
                np.testing.assert_array_equal(sess.run(c), [1, 3, 5, 7])
                assert servers[1].worker.steps_run >= 1
    finally:
        for s in servers:
            s.stop()


def test_an_ipv6_address_binds_only_itself_and_serves():
    try:
        port, = free_ports(1, "::1")
    except OSError:
        pytest.skip("this host has no IPv6 loopback (::1)")
    server = tf.train.Server({"local": ["[::1]:%d" % port]})
    try:
        assert server.target == "zps://[::1]:%d" % port
        with socket.socket(socket.AF_INET6) as s, pytest.raises(OSError):
            s.bind(("::1", port))   # taken by the server
        with socket.socket() as s:
            # (SO_REUSEADDR: a closed connection of this machine may still hold the port number
            # in TIME_WAIT; a listener on it would still refuse the bind)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))   # IPv4 is not bound: only the spec's address is
        with tf.Graph().as_default():
            with tf.Session(server.target) as sess:
                assert sess.run(tf.constant(20.0) + 1.0) == 21.0
    finally:
        server.stop()


def test_bind_address_serves_a_spec_naming_a_service(caplog):
    """In Kubernetes the spec names a service (not a local interface): bind another address."""
    caplog.set_level("INFO", logger="zps.server")
    port, = free_ports(1)
    spec = {"worker": ["my-service.invalid:%d" % port]}
    with pytest.raises(tf.errors.UnavailableError, match="my-service.invalid"):
        tf.train.Server(spec)   # by default only the spec's address is bound
    server = tf.train.Server(spec, bind_address="127.0.0.1:%d" % port)
    assert any("serving at my-service.invalid:%d, listening on 127.0.0.1:%d" % (port, port)
               in r.getMessage() for r in caplog.records)
    try:
        with tf.Graph().as_default():
            x = tf.constant(20.0) + 1.0
            with tf.Session("zps://127.0.0.1:%d" % port) as sess:   # reached by its bound address
                assert sess.run(x) == 21.0
    finally:
        server.stop()


@pytest.mark.parametrize("cores, shared", [(1, True), (2, True), (3, False)])
def test_tasks_with_at_most_a_core_each_run_larger_ops_inline(monkeypatch, cores, shared):
    """Two tasks on this host: with at most a core each, a hand-off to the pool buys no
    parallelism, so their partitions run ops up to SHARED_CPU_INLINE_BYTES on the I/O thread."""
    from zps.runtime import executor, threads
    monkeypatch.setattr(threads, "available_cores", lambda: cores)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")   # leave this process's BLAS threads alone
    ps_port, worker_port = free_ports(2)
    spec = {"ps": ["127.0.0.1:%d" % ps_port], "worker": ["127.0.0.1:%d" % worker_port]}
    expected = executor.SHARED_CPU_INLINE_BYTES if shared else executor.INLINE_BYTES
    servers = [tf.train.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        assert [s.inline_bytes for s in servers] == [expected, expected]
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones(4, np.float32), name="v")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(v * 2.0)
            with tf.Session(servers[1].target) as sess:
                sess.run(v.initializer)
                assert sess.run(total) == 8.0
        plans = [r.plan for s in servers for r in s.worker._graphs.values()]
        assert plans and all(p.inline_bytes == expected for p in plans)
    finally:
        for s in servers:
            s.stop()


def test_two_tasks_at_one_address_are_refused_naming_both():
    port, = free_ports(1)
    address = "127.0.0.1:%d" % port
    with pytest.raises(ValueError, match="gives %s to both /job:ps/task:1 and /job:ps/task:0"
                       % address):
        tf.train.Server({"ps": [address, address]}, job_name="ps", task_index=1)
    with pytest.raises(ValueError, match="to both /job:worker/task:0 and /job:ps/task:0"):
        tf.train.Server({"ps": [address], "worker": [address]}, job_name="worker", task_index=0)
    server = tf.train.Server({"ps": ["127.0.0.1:0", "127.0.0.1:0"]}, job_name="ps", task_index=1)
    server.stop()   # port 0: each task gets its own port
