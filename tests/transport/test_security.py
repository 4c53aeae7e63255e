"""CURVE authentication and encryption, the ZAP handler, key configuration and receive limits."""

import logging
import os
import stat
import textwrap
import time

import numpy as np
import pytest

import zps as tf
from zps.framework import errors
from zps.testing.cluster import LocalCluster
from zps.transport import codec, endpoint, security


@pytest.fixture
def keys(tmp_path):
    d = tmp_path / "keys"
    return {name: security.create_keypair(str(d), name) for name in ("cluster", "alice", "bob")}


def _echo(msg, responder):
    responder.reply({"echo": msg.body}, msg.tensors)


@pytest.fixture
def transports():
    made = []

    def make(curve=None):
        t = endpoint.Transport(curve=curve)
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


def open_text(path):
    with open(path) as f:
        return f.read()


def _config(keys, name, server=None, allowed=None):
    return security.CurveConfig.from_files(keys[name][1], server and keys[server][0], allowed)


# -- key files and configuration -------------------------------------------------------------------
def test_keypair_files_modes_and_no_overwrite(keys, tmp_path):
    public_file, secret_file = keys["cluster"]
    assert public_file.endswith("cluster.key") and secret_file.endswith("cluster.key_secret")
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600
    public, secret = security.load_keypair(secret_file)
    assert security.load_public_key(public_file) == public and len(secret) == 40
    with open(public_file) as f:
        assert "secret-key" not in f.read()
    with pytest.raises(FileExistsError, match="--force"):
        security.create_keypair(str(tmp_path / "keys"), "cluster")
    security.create_keypair(str(tmp_path / "keys"), "cluster", force=True)
    assert security.load_public_key(public_file) != public
    with pytest.raises(security.KeyConfigError, match="holds no secret key"):
        security.load_keypair(public_file)


def test_curve_from_env(keys, tmp_path):
    assert security.curve_from_env({}) is None
    cfg = security.curve_from_env({security.SECRET_KEY_ENV: keys["cluster"][1]})
    assert cfg.server_key == cfg.public_key   # a task holding the cluster key
    cfg = security.curve_from_env({security.SECRET_KEY_ENV: keys["alice"][1],
                                   security.SERVER_KEY_ENV: keys["cluster"][0]})
    assert cfg.server_key == security.load_public_key(keys["cluster"][0])
    with pytest.raises(security.KeyConfigError, match="ZPS_CURVE_SERVER_KEY_FILE is set but "
                       "ZPS_CURVE_SECRET_KEY_FILE is not"):
        security.curve_from_env({security.SERVER_KEY_ENV: keys["cluster"][0]})
    with pytest.raises(security.KeyConfigError, match="ZPS_CURVE_SECRET_KEY_FILE: .*nope"):
        security.curve_from_env({security.SECRET_KEY_ENV: str(tmp_path / "nope")})
    with pytest.raises(security.KeyConfigError, match="ZPS_CURVE_ALLOWED_KEYS_DIR=.* not a directory"):
        security.curve_from_env({security.SECRET_KEY_ENV: keys["cluster"][1],
                                 security.ALLOWED_KEYS_ENV: keys["cluster"][0]})
    assert security.fingerprint(cfg.public_key).startswith("SHA256:")
    assert len(security.fingerprint(cfg.public_key)) == len("SHA256:") + 16


def test_receive_limits_from_env():
    assert security.receive_limits_from_env({}) is codec.DEFAULT_LIMITS
    limits = security.receive_limits_from_env({"ZPS_MAX_TENSOR_BYTES": "64M",
                                               "ZPS_MAX_MESSAGE_BYTES": "1G",
                                               "ZPS_MAX_HEADER_BYTES": "65536"})
    assert (limits.max_tensor_bytes, limits.max_message_bytes, limits.max_header_bytes) == \
        (64 << 20, 1 << 30, 65536)
    with pytest.raises(ValueError, match="ZPS_MAX_TENSOR_BYTES='lots' is not a byte count"):
        security.receive_limits_from_env({"ZPS_MAX_TENSOR_BYTES": "lots"})
    with pytest.raises(ValueError, match="must be positive"):
        security.receive_limits_from_env({"ZPS_MAX_MESSAGE_BYTES": "0"})


def test_configured_limits_refuse_a_large_tensor(transports):
    server = transports()
    bound = server.bind("127.0.0.1:0", _echo,
                        limits=security.receive_limits_from_env({"ZPS_MAX_TENSOR_BYTES": "1K"}))
    client = transports()
    ok = client.request(bound.address, "echo", {}, [np.zeros(128, np.float32)]).result(5)
    assert ok.tensors[0].shape == (128,)
    with pytest.raises(endpoint.RemoteError, match="4096 bytes exceeds the limit of 1024"):
        client.request(bound.address, "echo", {}, [np.zeros(1024, np.float32)]).result(5)
    assert bound.stats.malformed == 1


def test_a_server_takes_its_limits_from_the_environment(monkeypatch, transports):
    monkeypatch.setenv("ZPS_MAX_TENSOR_BYTES", "1K")
    server = tf.train.Server.create_local_server()
    try:
        address = server.target.split("://")[1]
        with pytest.raises(endpoint.RemoteError, match="exceeds the limit of 1024"):
            transports().request(address, "RunStep", {"handle": 1},
                                 [np.zeros(512, np.float32)]).result(5)
        with pytest.raises(endpoint.RemoteError, match="unknown on"):   # small: decoded, then
            transports().request(address, "RunStep", {"handle": 1},   # refused for its handle
                                 [np.zeros(8, np.float32)]).result(5)
    finally:
        server.stop()


# -- the handshake ---------------------------------------------------------------------------------
def test_cluster_key_holders_talk_encrypted(keys, transports):
    cfg = _config(keys, "cluster")
    server = transports(cfg)
    bound = server.bind("127.0.0.1:0", _echo)
    reply = transports(cfg).request(bound.address, "echo", {"x": 1}, [np.arange(5.0)]).result(5)
    assert reply.body == {"echo": {"x": 1}} and reply.tensors[0].tolist() == [0, 1, 2, 3, 4]
    assert server._zap.accepted == 1 and server._zap.refused == 0


def test_curve_clusters_make_no_direct_connections(keys, transports):
    # Direct connections (zps.transport.direct) are neither authenticated nor encrypted: with
    # CURVE every message stays on ZeroMQ.
    cfg = _config(keys, "cluster")
    server = transports(cfg)
    bound = server.bind("127.0.0.1:0", _echo)
    assert not server.direct_ok and bound.listener is None and bound.direct_port is None
    client = transports(cfg)
    for i in range(3):
        assert client.request(bound.address, "echo", i).result(5).body == {"echo": i}
    peer = client._peers[bound.address]
    assert peer.direct is None and not peer.direct_asked and not client.direct_ports


@pytest.mark.parametrize("client", ["plain", "unknown_key", "wrong_server_key"])
def test_a_client_without_the_right_keys_fails_fast_and_clearly(keys, transports, client, caplog):
    server = transports(_config(keys, "cluster"))
    bound = server.bind("127.0.0.1:0", _echo)
    curve = {"plain": None, "unknown_key": _config(keys, "alice", server="cluster"),
             "wrong_server_key": _config(keys, "alice")}[client]
    start = time.monotonic()
    caplog.set_level(logging.WARNING, logger="zps.security")
    with pytest.raises(endpoint.HandshakeError,
                       match="authentication failed or server requires CURVE keys"):
        transports(curve).request(bound.address, "echo", {}, timeout=8).result(10)
    assert time.monotonic() - start < 3.0   # the handshake failure, not a timeout
    if client == "unknown_key":
        alice = security.load_public_key(keys["alice"][0])
        assert server._zap.refused >= 1
        assert "refused CURVE client 127.0.0.1 (key %s, fingerprint %s)" % (
            alice.decode(), security.fingerprint(alice)) in caplog.text


def test_a_curve_client_of_a_plain_server_fails_fast(keys, transports):
    bound = transports().bind("127.0.0.1:0", _echo)
    with pytest.raises(endpoint.HandshakeError, match="server requires CURVE keys"):
        transports(_config(keys, "cluster")).request(bound.address, "echo", timeout=8).result(10)


def test_allowed_keys_dir_admits_clients_and_is_reread(keys, transports, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    server = transports(_config(keys, "cluster", allowed=str(allowed)))
    bound = server.bind("127.0.0.1:0", _echo)
    alice = _config(keys, "alice", server="cluster")
    with pytest.raises(endpoint.HandshakeError, match="refused this process's CURVE key"):
        transports(alice).request(bound.address, "echo", timeout=8).result(10)
    (allowed / "alice.key").write_text(open_text(keys["alice"][0]))
    os.utime(allowed, ns=(time.time_ns(), time.time_ns() + 10 ** 9))   # a visible change
    assert transports(alice).request(bound.address, "echo", {"a": 1}).result(5).body == \
        {"echo": {"a": 1}}
    # bob is still out
    with pytest.raises(endpoint.HandshakeError):
        transports(_config(keys, "bob", server="cluster")).request(
            bound.address, "echo", timeout=8).result(10)


def test_refusals_are_logged_once_a_minute_per_key(keys, caplog):
    cfg = _config(keys, "cluster")
    zap = security.ZapHandler.__new__(security.ZapHandler)
    zap.config, zap.refused, zap._last_logged = cfg, 0, {}
    caplog.set_level(logging.WARNING, logger="zps.security")
    bob = security.load_public_key(keys["bob"][0])
    for _ in range(5):
        zap._log_refusal(bob, "10.0.0.1")
    assert caplog.text.count("refused CURVE client") == 1
    zap._last_logged[security.fingerprint(bob)] = (time.monotonic() - 61, 4)
    zap._log_refusal(bob, "10.0.0.1")
    assert "4 more refusal(s) since the last report" in caplog.text


def test_pickle_policy(monkeypatch, keys):
    monkeypatch.delenv(security.ALLOW_PICKLE_ENV, raising=False)
    plain = type("T", (), {"curve": None})()
    curved = type("T", (), {"curve": _config(keys, "cluster")})()
    assert not security.pickle_allowed(plain)
    assert security.pickle_allowed(curved)
    monkeypatch.setenv(security.ALLOW_PICKLE_ENV, "1")
    assert security.pickle_allowed(plain)


# -- a real cluster --------------------------------------------------------------------------------
@pytest.fixture
def curve_default_transport(monkeypatch):
    """Replace this process's default transport with one using ``cfg`` (restored after)."""
    made = []

    def use(cfg):
        t = endpoint.Transport(curve=cfg)
        made.append(t)
        monkeypatch.setattr(endpoint, "_default", t)
        return t

    yield use
    monkeypatch.undo()
    for t in made:
        t.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_curve_cluster_trains_and_refuses_sessions_without_keys(keys, curve_default_transport):
    env = {security.SECRET_KEY_ENV: keys["cluster"][1]}
    with LocalCluster({"ps": 1, "worker": 1}, env=env) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.arange(4.0), name="v")
            with tf.device("/job:worker/task:0"):
                out = v * 2.0
            # Without keys: refused at once, saying why.
            curve_default_transport(None)
            start = time.monotonic()
            # (Unavailable when the server hung up before the client saw its mechanism.)
            with pytest.raises((errors.UnauthenticatedError, errors.UnavailableError),
                               match="authentication failed or server requires CURVE keys"):
                with tf.Session(cluster.target("worker", 0)) as sess:
                    sess.run(v.initializer)
            assert time.monotonic() - start < 5
            # A client with its own key, not allowed by the servers: refused too.
            curve_default_transport(_config(keys, "alice", server="cluster"))
            with pytest.raises(errors.UnauthenticatedError, match="refused this process's CURVE key"):
                with tf.Session(cluster.target("worker", 0)) as sess:
                    sess.run(v.initializer)
            # With the cluster key: the master on worker:0 reaches ps:0 over CURVE too.
            curve_default_transport(_config(keys, "cluster"))
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                np.testing.assert_allclose(sess.run(out), [0.0, 2.0, 4.0, 6.0])


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_ps_cli_takes_key_flags(keys, tmp_path, curve_default_transport):
    from tests.cli import cli, running
    from zps.transport.ports import free_ports, wait_for_port
    port, = free_ports(1)
    with running(cli("ps", "--ps_hosts", "127.0.0.1:%d" % port, "--worker_hosts", "127.0.0.1:1",
                     "--curve_secret_key_file", keys["cluster"][1])) as proc:
        wait_for_port("127.0.0.1", port, 30, proc)
        target = "zps://127.0.0.1:%d" % port
        with tf.Graph().as_default():
            c = tf.constant(3.0) * 2.0
            curve_default_transport(None)
            with pytest.raises((errors.UnauthenticatedError, errors.UnavailableError),
                               match="server requires CURVE keys"):
                tf.Session(target).run(c)
            curve_default_transport(_config(keys, "cluster"))
            assert tf.Session(target).run(c) == 6.0


def test_launch_curve_gives_every_task_the_throwaway_key(tmp_path):
    from zps.cli.launch import Launcher
    script = tmp_path / "s.py"
    script.write_text("")
    launcher = Launcher(str(script), num_ps=1, num_workers=1)
    try:
        keys_dir = launcher.enable_curve()
        assert stat.S_IMODE(os.stat(keys_dir).st_mode) == 0o700
        env = launcher.extra_env
        assert env[security.SECRET_KEY_ENV].startswith(keys_dir)
        assert env[security.SERVER_KEY_ENV] == "" and env[security.ALLOWED_KEYS_ENV] == ""
        assert security.curve_from_env(env).server_key == launcher._progress_transport.curve.public_key
    finally:
        launcher.close()
    assert not os.path.exists(keys_dir)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_zps_launch_curve_runs_an_encrypted_cluster(tmp_path):
    from tests.cli import cli, run
    script = tmp_path / "trainer.py"
    script.write_text(textwrap.dedent("""
        import argparse, os
        import zps as tf
        from zps.transport import endpoint
        p = argparse.ArgumentParser()
        for flag in ("--ps_hosts", "--worker_hosts", "--job_name"):
            p.add_argument(flag)
        p.add_argument("--task_index", type=int)
        F, _ = p.parse_known_args()
        cluster = tf.train.ClusterSpec({"ps": F.ps_hosts.split(","),
                                        "worker": F.worker_hosts.split(",")})
        server = tf.train.Server(cluster, job_name=F.job_name, task_index=F.task_index)
        if F.job_name == "ps":
            server.join()
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(5.0)
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            print("result", sess.run(v * 2.0), "curve", endpoint.default_transport().curve is not None)
    """))
    code, out, err = run(cli("launch", "--ps", 1, "--workers", 1, "--curve", "--progress_secs", 0,
                             str(script)), timeout=100,
                         env={"PYTHONPATH": os.path.dirname(os.path.dirname(tf.__file__))})
    assert code == 0, out + err
    assert "[worker:0] result 10.0 curve True" in out.splitlines()



@pytest.mark.parametrize("client", ["cluster", "unknown_key"])
def test_a_callers_own_connections_use_curve_too(keys, transports, client):
    """A thread's own sockets (transport.caller, where the master sends RunGraph) are CURVE
    clients like the I/O thread's: the right key talks, an unknown one fails fast, saying why."""
    server = transports(_config(keys, "cluster"))
    bound = server.bind("127.0.0.1:0", _echo)
    curve = _config(keys, "cluster") if client == "cluster" else \
        _config(keys, "alice", server="cluster")
    caller = transports(curve).caller()
    assert caller.enter()
    try:
        start = time.monotonic()
        future = caller.request(bound.address, "echo", {"x": 1}, [np.arange(3.0)])
        caller.wait([future], timeout=8)
        assert future.done() and time.monotonic() - start < 3.0
        if client == "cluster":
            assert future.result().body == {"echo": {"x": 1}}
            assert future.result().tensors[0].tolist() == [0.0, 1.0, 2.0]
        else:
            with pytest.raises(endpoint.HandshakeError, match="authentication failed"):
                future.result()
    finally:
        caller.leave()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", ["io_thread", "caller"])
def test_a_client_without_keys_fails_fast_request_after_request(keys, transports, path):
    # After a failed handshake ZeroMQ drops the connection for good: a send on that socket would
    # block for ever. The socket is closed instead, and each request opens a new one (which fails
    # fast again here; which works once the server admits this client).
    bound = transports(_config(keys, "cluster")).bind("127.0.0.1:0", _echo)
    client = transports(None)
    caller = client.caller() if path == "caller" else None
    for _ in range(3):
        start = time.monotonic()
        if caller is None:
            future = client.request(bound.address, "echo", {}, timeout=20)
            with pytest.raises(endpoint.PeerUnavailableError):
                future.result(25)
        else:
            assert caller.enter()
            try:
                future = caller.request(bound.address, "echo", {})
                caller.wait([future], timeout=20)
                assert future.done()
                assert isinstance(future.exception(), endpoint.PeerUnavailableError)
            finally:
                caller.leave()
        assert time.monotonic() - start < 5.0
        time.sleep(0.2)   # the dropped connection's last events arrive meanwhile
