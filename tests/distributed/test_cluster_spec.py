import json

import pytest

from zps.distributed.cluster_spec import ClusterSpec

SPEC = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


def test_dense_jobs():
    c = ClusterSpec(SPEC)
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("worker") == 3
    assert c.task_indices("ps") == [0, 1]
    assert c.task_address("worker", 2) == "w2:2222"
    assert c.job_tasks("ps") == ["ps0:2222", "ps1:2222"]
    assert c.as_dict() == SPEC
    assert bool(c) and not bool(ClusterSpec({}))


def test_sparse_indices_and_json_string_keys():
    c = ClusterSpec(json.loads('{"worker": {"1": "localhost:2223", "3": "localhost:2225"}}'))
    assert c.task_indices("worker") == [1, 3]
    assert c.job_tasks("worker") == [None, "localhost:2223", None, "localhost:2225"]
    assert c.as_dict() == {"worker": {1: "localhost:2223", 3: "localhost:2225"}}


def test_copy_equality_and_repr():
    c = ClusterSpec(SPEC)
    d = ClusterSpec(c)
    assert c == d and not (c != d)
    assert c != ClusterSpec({"ps": ["ps0:2222"]})
    assert "ps0:2222" in repr(c)
    assert c.find_task("w1:2222") == ("worker", 1)
    assert c.find_task("nowhere:1") is None


def test_ipv6_and_ip_addresses():
    c = ClusterSpec({"ps": ["[::1]:2222", "10.0.0.5:80"]})
    assert c.task_address("ps", 0) == "[::1]:2222"


@pytest.mark.parametrize("bad, error, match", [
    ({"ps": ["nocolon"]}, ValueError, r"/job:ps/task:0.*'nocolon'.*host:port"),
    ({"ps": ["h:99999"]}, ValueError, "host:port"),
    ({"ps": ["h:"]}, ValueError, "host:port"),
    ({"ps": [5]}, TypeError, "host:port"),
    ({"1ps": ["h:1"]}, ValueError, "Invalid job name"),
    ({"ps": {"x": "h:1"}}, ValueError, "not an integer"),
    ({"ps": {-1: "h:1"}}, ValueError, ">= 0"),
    ({"ps": 7}, TypeError, "list or a dict"),
    (["ps"], TypeError, "dict of job name"),
])
def test_malformed_specs(bad, error, match):
    with pytest.raises(error, match=match):
        ClusterSpec(bad)


def test_unknown_job_and_index():
    c = ClusterSpec(SPEC)
    with pytest.raises(ValueError, match=r"No such job in cluster: 'chief' \(jobs: ps, worker\)"):
        c.num_tasks("chief")
    with pytest.raises(ValueError, match=r"No task with index 5 in job 'ps'"):
        c.task_address("ps", 5)
