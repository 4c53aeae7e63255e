"""``zps status``: every task's up/down, incarnation, uptime, steps and traffic; down within the
timeout, never a hang."""

import json
import sys
import time

import numpy as np
import pytest

import zps as tf
from tests.cli import run
from zps.cli import status
from zps.cli.main import main as zps_main
from zps.testing.cluster import InProcessCluster, LocalCluster
from zps.transport.ports import free_ports


def _with_dead_worker(spec):
    spec = {job: list(addrs) for job, addrs in spec.items()}
    spec["worker"].append("127.0.0.1:%d" % free_ports(1)[0])   # nothing listens there
    return spec


def test_parse_cluster_accepts_json_tf_config_and_job_lists():
    as_dict = {"ps": ["h:1", "h:2"], "worker": ["h:3"]}
    assert status.parse_cluster(json.dumps(as_dict)) == as_dict
    tf_config = {"cluster": as_dict, "task": {"type": "worker", "index": 0}}
    assert status.parse_cluster(json.dumps(tf_config)) == as_dict
    assert status.parse_cluster("ps=h:1,h:2; worker=h:3") == as_dict


@pytest.mark.parametrize("text, message", [
    ("", "empty cluster"),
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a map"),
    ("ps", "must look like job=host:port"),
    ("ps=nohostport", "nohostport"),
])
def test_parse_cluster_errors_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        status.parse_cluster(text)


def test_status_of_live_and_dead_tasks_within_the_timeout():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.zeros(4, np.float32))
            inc = tf.assign_add(v, np.ones(4, np.float32))
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                for _ in range(5):
                    sess.run(inc)
        spec = _with_dead_worker(cluster.spec)
        started = time.monotonic()
        rows = status.cluster_status(spec, timeout=0.5)
        assert time.monotonic() - started < 3.0
        by_task = {r["task"]: r for r in rows}
        ps = by_task["/job:ps/task:0"]
        assert ps["state"] == "up" and ps["incarnation"] == cluster[("ps", 0)].incarnation
        assert ps["steps_served"] >= 6 and ps["uptime_s"] >= 0 and ps["steps_running"] == 0
        # In-process tasks talk without the wire: the Status request itself is the traffic.
        assert ps["messages"][0] >= 1 and ps["bytes"][0] > 0
        assert ps["malformed"] == 0 and ps["errors"] == 0
        dead = by_task["/job:worker/task:1"]
        assert dead["state"] == "down" and "no answer within 0.5 s" in dead["reason"]
        table = status.format_table(rows)
        assert "2 of 3 task(s) up" in table
        assert "/job:worker/task:1 at %s is down" % spec["worker"][1] in table
        for title in ("TASK", "STATE", "INCARNATION", "UPTIME", "STEPS", "BYTES IN/OUT", "MALFORMED",
                      "ERRORS"):
            assert title in table


def test_main_prints_json_and_exits_1_when_a_task_is_down(capsys):
    with InProcessCluster({"ps": 1}) as cluster:
        assert zps_main(["status", "--cluster", json.dumps(cluster.spec), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["up"] == out["total"] == 1
        assert out["tasks"][0]["incarnation"] == cluster[("ps", 0)].incarnation
        spec = dict(cluster.spec, worker=["127.0.0.1:%d" % free_ports(1)[0]])
        code = status.main(["--cluster", "ps=%s;worker=%s" % (spec["ps"][0], spec["worker"][0]),
                            "--timeout", "0.3", "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == status.EXIT_SOME_DOWN and out["up"] == 1 and out["total"] == 2
        down = [t for t in out["tasks"] if t["state"] == "down"]
        assert down[0]["task"] == "/job:worker/task:0" and down[0]["messages_in"] is None
        assert down[0]["direct_connections"] is None and down[0]["direct_unix"] is None
        up = [t for t in out["tasks"] if t["state"] == "up"]
        assert all(isinstance(up[0][k], int)
                   for k in ("direct_connections", "direct_unix", "direct_rings"))


def test_main_takes_the_cluster_from_tf_config(capsys, monkeypatch):
    with InProcessCluster({"ps": 1}) as cluster:
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster.spec,
                                                    "task": {"type": "ps", "index": 0}}))
        assert status.main([]) == 0
        assert "1 of 1 task(s) up" in capsys.readouterr().out
        monkeypatch.delenv("TF_CONFIG")
        assert status.main(["--tf_config", json.dumps({"cluster": cluster.spec})]) == 0
        assert cluster[("ps", 0)].incarnation in capsys.readouterr().out


def test_main_usage_errors(capsys, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert status.main([]) == status.EXIT_USAGE
    assert "no cluster given" in capsys.readouterr().err
    assert status.main(["--cluster", "ps"]) == status.EXIT_USAGE
    assert "job=host:port" in capsys.readouterr().err
    assert status.main(["--cluster", "ps=h:1", "--timeout", "0"]) == status.EXIT_USAGE
    assert "--timeout must be positive" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_status_command_sees_a_killed_task_down_and_its_restart_as_a_new_incarnation():
    with LocalCluster({"ps": 2}) as cluster:
        spec = json.dumps(cluster.spec)
        code, out, err = run([sys.executable, "-m", "zps.cli.main", "status",
                              "--cluster", spec, "--json"], timeout=30)
        assert code == 0, err
        first = {t["task"]: t for t in json.loads(out)["tasks"]}
        cluster.kill("ps", 1)
        started = time.monotonic()
        code, out, err = run([sys.executable, "-m", "zps.cli.main", "status",
                              "--cluster", spec, "--timeout", "1"], timeout=30)
        assert code == status.EXIT_SOME_DOWN, (out, err)
        assert time.monotonic() - started < 20
        assert "1 of 2 task(s) up" in out and "/job:ps/task:1 at" in out and "is down" in out
        cluster.restart("ps", 1)
        code, out, err = run([sys.executable, "-m", "zps.cli.main", "status",
                              "--cluster", spec, "--json"], timeout=30)
        assert code == 0, err
        again = {t["task"]: t for t in json.loads(out)["tasks"]}
    assert again["/job:ps/task:0"]["incarnation"] == first["/job:ps/task:0"]["incarnation"]
    assert again["/job:ps/task:1"]["incarnation"] != first["/job:ps/task:1"]["incarnation"]
    assert again["/job:ps/task:1"]["pid"] != first["/job:ps/task:1"]["pid"]


def test_status_shows_how_many_peers_each_task_sees_down(capsys, monkeypatch):
    monkeypatch.setenv("ZPS_HEARTBEAT_SECS", "0.2")
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        ps, worker = cluster.spec["ps"][0], cluster.spec["worker"][0]
        deadline = time.monotonic() + 10
        while not cluster[("worker", 0)].heartbeats.snapshot()[ps]["up"]:
            assert time.monotonic() < deadline, "the worker never saw the ps up"
            time.sleep(0.05)
        rows = {r["task"]: r for r in status.cluster_status(cluster.spec, timeout=2)}
        assert rows["/job:worker/task:0"]["peers_down"] == (0, 1)
        assert rows["/job:worker/task:0"]["peers"][ps]["incarnation"] == cluster[("ps", 0)].incarnation
        assert "PEERS DOWN" in status.format_table(list(rows.values()))
        cluster[("ps", 0)].stop()
        deadline = time.monotonic() + 10
        while cluster[("worker", 0)].heartbeats.snapshot()[ps]["up"]:
            assert time.monotonic() < deadline, "the worker never saw the stopped ps down"
            time.sleep(0.05)
        assert status.main(["--cluster", json.dumps({"worker": [worker]}), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)["tasks"][0]
        assert out["peers_down"] == 1 and out["peers"][ps]["up"] is False
        assert out["peers"][ps]["task"] == "/job:ps/task:0" and out["peers"][ps]["last_seen_s_ago"] > 0
        assert status.main(["--cluster", json.dumps({"worker": [worker]})]) == 0
        table = capsys.readouterr().out
        assert "1/1" in table and "/job:worker/task:0 sees down: /job:ps/task:0 (%s)" % ps in table
