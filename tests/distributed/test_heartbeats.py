"""Heartbeats between the tasks of a cluster: each server sees its peers up or down (and restarted)
while idle, reports them in its Status, and makes the next step register with a failed peer again."""

import logging
import threading
import time

import pytest

import zps as tf
from zps.cli import status
from zps.distributed import server as server_mod
from zps.distributed.partition import Task
from zps.testing.cluster import InProcessCluster, LocalCluster
from zps.transport import endpoint
from zps.transport.ports import free_ports

INTERVAL = 0.3


def _status(address):
    return endpoint.default_transport().request(address, "Status", {}, timeout=5).result(6).body


def _wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(0.05)


def _peer(address, peer_address):
    return _status(address)["peers"][peer_address]


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
def test_a_bad_interval_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", value)
    with pytest.raises(ValueError, match="ZPS_HEARTBEAT_SECS must be a number of seconds >= 0.*%s"
                       % value):
        server_mod.heartbeat_interval_from_env()
    with pytest.raises(ValueError, match="ZPS_HEARTBEAT_SECS"):
        tf.train.Server({"ps": ["127.0.0.1:0"]}, job_name="ps", task_index=0)


def test_interval_default_and_zero(monkeypatch):
    monkeypatch.delenv("ZPS_HEARTBEAT_SECS", raising=False)
    assert server_mod.heartbeat_interval_from_env() == server_mod.DEFAULT_HEARTBEAT_S == 2.0
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", "0")
    assert server_mod.heartbeat_interval_from_env() == 0.0


def test_in_process_peers_down_and_restarted_bump_task_epochs(monkeypatch):
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", str(INTERVAL))
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        worker, ps = cluster[("worker", 0)], cluster[("ps", 0)]
        ps_address, ps_task = cluster.spec["ps"][0], Task("ps", 0)
        seen = _wait_for(lambda: worker.heartbeats.snapshot()[ps_address]["up"] and
                         worker.heartbeats.snapshot()[ps_address], 5, "the ps seen up")
        assert seen["incarnation"] == ps.incarnation and seen["task"] == "/job:ps/task:0"
        assert 0 <= seen["last_seen_s_ago"] < 5
        assert worker.task_epochs[ps_task] == 0
        assert set(_status(cluster.spec["worker"][0])["peers"]) == {ps_address}
        assert _peer(ps_address, cluster.spec["worker"][0])["incarnation"] == worker.incarnation

        old = ps.incarnation
        ps.stop()
        started = time.monotonic()
        _wait_for(lambda: not worker.heartbeats.snapshot()[ps_address]["up"], 10, "the ps seen down")
        assert time.monotonic() - started < 3 * INTERVAL + 2.0
        assert worker.task_epochs[ps_task] == 1   # the next step registers with it again
        down = worker.heartbeats.snapshot()[ps_address]
        assert down["incarnation"] == old and down["last_seen_s_ago"] > 0

        again = tf.train.Server(cluster.spec, job_name="ps", task_index=0)
        cluster.servers[("ps", 0)] = again    # stopped by the cluster on exit
        snap = _wait_for(lambda: worker.heartbeats.snapshot()[ps_address]["up"] and
                         worker.heartbeats.snapshot()[ps_address], 10, "the ps seen up again")
        assert snap["incarnation"] == again.incarnation != old
        assert worker.task_epochs[ps_task] == 2


def test_status_lists_every_peer_as_soon_as_the_server_answers(monkeypatch):
    """The peer table exists before the socket is bound: a Status answered while the server is
    still starting lists the peers (not yet seen up) instead of none (a CI flake: the worker's
    table had no entry for the ps yet)."""
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", str(INTERVAL))
    hold, held = threading.Event(), threading.Event()
    real = server_mod.threads.limit_for_server

    def slow_limit(*args):   # runs after the bind, before start() returns
        held.set()
        assert hold.wait(10)
        return real(*args)

    monkeypatch.setattr(server_mod.threads, "limit_for_server", slow_limit)
    ps_port, worker_port = free_ports(2)
    spec = {"ps": ["127.0.0.1:%d" % ps_port], "worker": ["127.0.0.1:%d" % worker_port]}
    server = tf.train.Server(spec, job_name="worker", task_index=0, start=False)
    starting = threading.Thread(target=server.start)
    starting.start()
    try:
        assert held.wait(10)
        peers = _status(spec["worker"][0])["peers"]
        assert peers == {spec["ps"][0]: {"task": "/job:ps/task:0", "up": False,
                                         "incarnation": None, "last_seen_s_ago": None}}
        assert not server.heartbeats._thread.is_alive()   # beating starts with the server
    finally:
        hold.set()
        starting.join(10)
        server.stop()


def test_stopping_a_server_stops_its_heartbeats(monkeypatch):
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", str(INTERVAL))
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        beats = cluster[("worker", 0)].heartbeats
        assert beats._thread.is_alive()
        cluster[("worker", 0)].stop()
        assert cluster[("worker", 0)].heartbeats is None
        beats._thread.join(timeout=5)
        assert not beats._thread.is_alive()


def test_a_single_task_server_has_no_peers_and_no_heartbeat_thread():
    server = tf.train.Server.create_local_server()
    try:
        assert server.heartbeats is None
        assert _status(server.target[len("zps://"):])["peers"] == {}
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_worker_sees_a_killed_ps_down_and_its_restart_up_with_the_new_incarnation():
    with LocalCluster({"ps": 1, "worker": 1}, env={"ZPS_HEARTBEAT_SECS": str(INTERVAL)}) as cluster:
        ps, worker = cluster.address("ps", 0), cluster.address("worker", 0)
        first = _status(ps)["incarnation"]
        seen = _wait_for(lambda: _peer(worker, ps)["up"] and _peer(worker, ps), 10, "the ps seen up")
        assert seen["incarnation"] == first and seen["task"] == "/job:ps/task:0"
        assert _wait_for(lambda: _peer(ps, worker)["up"], 10, "the worker seen up by the ps")

        cluster.kill("ps", 0)   # SIGKILL while idle: no request in flight anywhere
        started = time.monotonic()
        _wait_for(lambda: not _peer(worker, ps)["up"], 10, "the killed ps seen down")
        elapsed = time.monotonic() - started
        assert elapsed < 3 * INTERVAL + 1.5, elapsed   # within about three intervals
        rows = {r["task"]: r for r in status.cluster_status(cluster.spec, timeout=1.0)}
        assert rows["/job:worker/task:0"]["peers_down"] == (1, 1)
        assert rows["/job:worker/task:0"]["peers"][ps]["up"] is False
        table = status.format_table(list(rows.values()))
        assert "PEERS DOWN" in table and "/job:worker/task:0 sees down: /job:ps/task:0 (%s)" % ps in table

        cluster.restart("ps", 0)
        second = _status(ps)["incarnation"]
        assert second != first
        back = _wait_for(lambda: _peer(worker, ps)["up"] and _peer(worker, ps), 10, "the ps up again")
        assert back["incarnation"] == second and back["last_seen_s_ago"] < 3 * INTERVAL + 1.0


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_heartbeats_off_with_zero_send_nothing():
    with LocalCluster({"ps": 1, "worker": 1}, env={"ZPS_HEARTBEAT_SECS": "0"}) as cluster:
        ps, worker = cluster.address("ps", 0), cluster.address("worker", 0)
        before = _status(ps)
        assert before["peers"] == {} and _status(worker)["peers"] == {}
        time.sleep(4 * INTERVAL)
        after = _status(ps)
        # Only the Status requests themselves reached the ps: no heartbeats from the worker.
        assert after["messages_in"] - before["messages_in"] == 1


@pytest.mark.parametrize("stopping", ["worker", "ps"])
def test_a_task_that_stops_cleanly_is_seen_left_at_once_not_down(monkeypatch, caplog, stopping):
    # Heartbeats between servers of this process go over the wire here, as between processes.
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", "5")
    monkeypatch.setattr(server_mod, "local_server", lambda address: None)
    caplog.set_level(logging.INFO, logger="zps.server")
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        gone, stays = cluster[(stopping, 0)], cluster[("ps" if stopping == "worker" else "worker", 0)]
        gone_address = cluster.spec[stopping][0]
        _wait_for(lambda: stays.heartbeats.snapshot()[gone_address]["up"], 10, "the peer seen up")
        epochs = dict(stays.task_epochs)
        t0 = time.monotonic()
        gone.stop()
        assert time.monotonic() - t0 < server_mod.LEAVE_TIMEOUT_S + 1
        # Seen at once (a heartbeat would take up to three 5 s intervals), and as no failure.
        assert stays.heartbeats.snapshot()[gone_address]["up"] is False
        assert dict(stays.task_epochs) == epochs
        messages = [r.getMessage() for r in caplog.records]
        assert any("task /job:%s/replica:0/task:0 at %s left (it stopped)" % (stopping, gone_address)
                   in m for m in messages), messages
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], messages


def test_a_heartbeat_answer_that_crossed_a_leaving_does_not_bring_the_peer_back(monkeypatch):
    # The answer to a heartbeat sent before the peer said it leaves may arrive after that (on
    # another connection): it must not mark the peer up again. One sent afterwards does.
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", "5")
    monkeypatch.setattr(server_mod, "local_server", lambda address: None)
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        heartbeats = cluster[("worker", 0)].heartbeats
        ps = cluster.spec["ps"][0]
        _wait_for(lambda: heartbeats.snapshot()[ps]["up"], 10, "the ps seen up")
        incarnation = heartbeats.snapshot()[ps]["incarnation"]
        heartbeats.left("/job:ps/replica:0/task:0")
        assert heartbeats.snapshot()[ps]["up"] is False
        heartbeats._seen(ps, incarnation, 0)   # sent before it left
        assert heartbeats.snapshot()[ps]["up"] is False
        heartbeats._seen(ps, incarnation, 1)   # sent after
        assert heartbeats.snapshot()[ps]["up"] is True


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_program_that_ends_without_stopping_its_server_is_seen_left(monkeypatch, caplog):
    # A worker's program ends when its training is done; it never calls server.stop(). Its ps
    # hears it leave at exit (not a failure, and at once: the next heartbeat is 5 s away).
    import json
    import subprocess
    import sys

    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", "5")
    caplog.set_level(logging.INFO, logger="zps.server")
    ps_port, worker_port = free_ports(2, "127.0.0.1")
    spec = {"ps": ["127.0.0.1:%d" % ps_port], "worker": ["127.0.0.1:%d" % worker_port]}
    ps = tf.train.Server(spec, job_name="ps", task_index=0)
    try:
        program = ("import json, sys, time, zps as tf; "
                   "tf.train.Server(json.loads(sys.argv[1]), job_name='worker', task_index=0); "
                   "time.sleep(1.0)")
        worker = subprocess.Popen([sys.executable, "-c", program, json.dumps(spec)])
        try:
            _wait_for(lambda: ps.heartbeats.snapshot()[spec["worker"][0]]["up"], 20,
                      "the worker seen up")
            assert worker.wait(30) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(10)
        _wait_for(lambda: not ps.heartbeats.snapshot()[spec["worker"][0]]["up"], 2,
                  "the worker seen gone")
        messages = [r.getMessage() for r in caplog.records]
        assert any("left (it stopped)" in m for m in messages), messages
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], messages
    finally:
        ps.stop()
