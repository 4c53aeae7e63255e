"""zps-ps: the cluster from flags or TF_CONFIG; serving sessions; a clean stop on SIGTERM/SIGINT."""

import argparse
import json
import re
import signal
import socket

import pytest

import zps as tf
from tests.cli import cli, running
from zps.cli.common import resolve_task
from zps.testing.cluster import free_ports, wait_for_port


def _args(**flags):
    args = dict(ps_hosts=None, worker_hosts=None, job_name=None, task_index=None)
    args.update(flags)
    return argparse.Namespace(**args)


def test_resolve_task_from_flags(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    cluster, job, index = resolve_task(_args(ps_hosts="p0:1,p1:2", worker_hosts="w0:3", task_index=1),
                                       default_job="ps")
    assert (cluster, job, index) == ({"ps": ["p0:1", "p1:2"], "worker": ["w0:3"]}, "ps", 1)
    # A ps needs no worker list.
    assert resolve_task(_args(ps_hosts="p0:1"), "ps") == ({"ps": ["p0:1"]}, "ps", 0)


def test_resolve_task_from_tf_config_and_flags_win(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"ps": ["p0:1", "p1:2"], "worker": ["w0:3"]},
                                                "task": {"type": "ps", "index": 1}}))
    assert resolve_task(_args(), "worker") == ({"ps": ["p0:1", "p1:2"], "worker": ["w0:3"]}, "ps", 1)
    assert resolve_task(_args(task_index=0), "ps")[1:] == ("ps", 0)
    # Host flags replace TF_CONFIG's cluster; the task index still comes from TF_CONFIG.
    assert resolve_task(_args(ps_hosts="q:9", worker_hosts="v:8,u:7", job_name="worker"), "ps") == (
        {"ps": ["q:9"], "worker": ["v:8", "u:7"]}, "worker", 1)


@pytest.mark.parametrize("tf_config, flags, message", [
    (None, {}, "No cluster given: pass --ps_hosts and --worker_hosts"),
    (None, dict(ps_hosts="p0:1", task_index=2), "job 'ps' has no task 2"),
    (None, dict(ps_hosts="p0:1", job_name="worker"), "the cluster has no job 'worker'"),
    (None, dict(ps_hosts="p0", worker_hosts="w:1"), "'p0' is not of the form 'host:port'"),
    (None, dict(ps_hosts="127.0.0.1"),
     "--ps_hosts (host 1) '127.0.0.1' is not of the form 'host:port' (e.g. 'localhost:2222'"),
    (None, dict(ps_hosts="p:1", worker_hosts="w:2,w:3,w"), "--worker_hosts (host 3) 'w' is not of"),
    (None, dict(ps_hosts="127.0.0.1:99999"),
     "--ps_hosts (host 1) '127.0.0.1:99999' is not a valid 'host:port': port 99999 is out of "
     "range (0-65535)"),
    (None, dict(ps_hosts="p:1,p:1234567"),
     "--ps_hosts (host 2) 'p:1234567' is not a valid 'host:port': port 1234567 is out of range"),
    (None, dict(ps_hosts=" , "), "names no host:port"),
    ("{bad", {}, "TF_CONFIG is not valid JSON"),
])
def test_resolve_task_errors(monkeypatch, tf_config, flags, message):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    if tf_config is not None:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ValueError, match=re.escape(message)):
        resolve_task(_args(**flags), "ps")


def _session_on_ps(address):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([1.0, 2.0, 3.0], name="v")
            total = tf.reduce_sum(v * 2.0)
        with tf.Session("grpc://" + address) as sess:
            sess.run(v.initializer)
            return sess.run(total)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("how, sig", [("flags", signal.SIGTERM), ("tf_config", signal.SIGINT)])
def test_zps_ps_serves_a_session_and_stops_cleanly(how, sig):
    ps_port, worker_port = free_ports(2)
    address = "127.0.0.1:%d" % ps_port
    cluster = {"ps": [address], "worker": ["127.0.0.1:%d" % worker_port]}
    if how == "flags":
        cmd, env = cli("ps", "--ps_hosts", address, "--worker_hosts", cluster["worker"][0],
                       "--task_index", 0), None
    else:
        cmd, env = cli("ps"), {"TF_CONFIG": json.dumps({"cluster": cluster,
                                                        "task": {"type": "ps", "index": 0}})}
    serving = "serving /job:ps/task:0 at %s" % address
    with running(cmd, env=env) as proc:
        wait_for_port("127.0.0.1", ps_port, 30, proc)
        assert _session_on_ps(address) == 12.0
        # The port serves before zps-ps's main thread logs that it does: wait for the line (a
        # signal while the server starts stops it without that line, which is right too).
        logged = []
        while not logged or serving not in logged[-1]:
            logged.append(proc.stderr.readline())
            assert logged[-1], "zps-ps ended without saying it serves"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "%s: stopping /job:ps/task:0" % sig.name in err


def test_resolve_task_error_names_the_flag_not_a_made_up_job(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError) as info:
        resolve_task(_args(ps_hosts="127.0.0.1"), "ps")
    assert "/job:" not in str(info.value)


def test_resolve_task_evaluator_only_where_allowed(monkeypatch):
    # zps-worker runs TF's evaluator, which is not in the cluster; zps-ps cannot serve one.
    cluster = {"chief": ["c:1"], "ps": ["p:2"], "worker": ["w:3"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster,
                                                "task": {"type": "evaluator", "index": 0}}))
    assert resolve_task(_args(), "worker", evaluator_ok=True) == (cluster, "evaluator", 0)
    with pytest.raises(ValueError, match="the cluster has no job 'evaluator'"):
        resolve_task(_args(), "ps")
    with pytest.raises(ValueError, match="a task index must be >= 0"):
        resolve_task(_args(task_index=-1), "worker", evaluator_ok=True)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_zps_ps_logs_the_address_it_listens_on():
    # The cluster names localhost:<a>, the task listens on 127.0.0.1:<b>: both are logged.
    advertised, listen = free_ports(2)
    with running(cli("ps", "--ps_hosts", "localhost:%d" % advertised,
                     "--bind_address", "127.0.0.1:%d" % listen)) as proc:
        wait_for_port("127.0.0.1", listen, 30, proc)
        logged = ""   # the server's line that it serves, and where it listens
        while "serving at" not in logged:
            logged = proc.stderr.readline()
            assert logged, "zps-ps ended without saying where it serves"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "serving at localhost:%d, listening on 127.0.0.1:%d" % (advertised, listen) in logged


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_zps_ps_reports_bad_flags_and_a_busy_port():
    with running(cli("ps", "--ps_hosts", "nohost")) as proc:
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "'nohost' is not of the form 'host:port'" in err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        address = "127.0.0.1:%d" % busy.getsockname()[1]
        with running(cli("ps", "--ps_hosts", address)) as proc:
            _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "Cannot start the server of /job:ps" in err and address in err
    for hosts, index in ((address + "," + address, "1"), (address, "0")):
        flags = ["--ps_hosts", hosts, "--task_index", index]
        if index == "0":
            flags += ["--worker_hosts", address]   # a worker at the ps's address
        with running(cli("ps", *flags)) as proc:
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and "gives %s to both" % address in err, err


def test_a_stop_signal_while_the_server_starts_ends_it_cleanly(monkeypatch):
    # The handlers are installed before the port is bound: a SIGTERM that comes while the server
    # starts stops it (exit 0, the port free again) instead of killing the process (-15).
    import os

    from zps.cli import ps as ps_cli
    from zps.distributed.server import Server
    started = []
    real_start = Server.start

    def start(self):
        os.kill(os.getpid(), signal.SIGTERM)   # handled at the next bytecode, in this thread
        real_start(self)
        started.append(self)

    monkeypatch.setattr(Server, "start", start)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert ps_cli.main(["--ps_hosts", "127.0.0.1:0"]) == 0
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])
    assert started and started[0]._bound is None   # stopped: its port is free again
