"""Cluster resolvers: TF_CONFIG (Kubernetes TFJob style) and Slurm environment variables."""

import json
import os
import re

import pytest

import zps as tf
from zps.distributed.resolvers import (
    SimpleClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    expand_hostlist,
    expand_tasks_per_node,
)

TFJOB_CONFIG = {"cluster": {"chief": ["job-chief-0:2222"],
                            "ps": ["job-ps-0:2222", "job-ps-1:2222"],
                            "worker": ["job-worker-0:2222", "job-worker-1:2222"]},
                "task": {"type": "worker", "index": 1}}


@pytest.fixture
def tf_config(monkeypatch):
    def set_config(config):
        monkeypatch.setenv("TF_CONFIG", config if isinstance(config, str) else json.dumps(config))
    monkeypatch.delenv("TF_CONFIG", raising=False)
    return set_config


def test_tf_config_resolver_reads_a_tfjob_config(tf_config):
    tf_config(TFJOB_CONFIG)
    r = TFConfigClusterResolver()
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, None)
    spec = r.cluster_spec()
    assert isinstance(spec, tf.train.ClusterSpec)
    assert spec.jobs == ["chief", "ps", "worker"]
    assert spec.job_tasks("ps") == ["job-ps-0:2222", "job-ps-1:2222"]
    assert r.master() == "job-worker-1:2222"
    assert r.master("chief", 0, rpc_layer="grpc") == "grpc://job-chief-0:2222"
    assert r.environment == ""


def test_tf_config_resolver_arguments_win_and_config_is_read_on_each_call(tf_config):
    tf_config(dict(TFJOB_CONFIG, rpc_layer="grpc", environment="cloud"))
    r = TFConfigClusterResolver(task_type="ps", task_id=0)
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("ps", 0, "grpc", "cloud")
    assert r.master() == "grpc://job-ps-0:2222"
    r.task_type, r.task_id, r.rpc_layer = "worker", "1", "zps"
    assert r.master() == "zps://job-worker-1:2222"
    tf_config({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": "0"}})
    assert TFConfigClusterResolver().task_id == 0   # string indices, as some operators write them
    assert TFConfigClusterResolver().cluster_spec().as_dict() == {"worker": ["w:1"]}


def test_tf_config_resolver_without_tf_config_is_empty(tf_config):
    r = TFConfigClusterResolver()
    assert (r.task_type, r.task_id, r.master()) == (None, None, "")
    assert r.cluster_spec().jobs == []
    tf_config({"cluster": {"worker": ["w:1"]}})        # a client: cluster but no task
    assert TFConfigClusterResolver().master() == ""
    assert TFConfigClusterResolver().master("worker", 0) == "w:1"


@pytest.mark.parametrize("config, message", [
    ("{not json", "TF_CONFIG is not valid JSON"),
    ("[1, 2]", "TF_CONFIG must be a JSON object"),
    ({"cluster": {"ps": ["no-port"]}}, "TF_CONFIG's \"cluster\" is malformed"),
    ({"cluster": {"ps": "h:1"}, "task": "ps"}, "TF_CONFIG's \"task\" must be an object"),
    ({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": "zero"}},
     "task index must be a non-negative integer"),
])
def test_tf_config_resolver_malformed_config(tf_config, config, message):
    tf_config(config)
    r = TFConfigClusterResolver()
    with pytest.raises(ValueError, match=message):
        _ = (r.cluster_spec(), r.task_type, r.task_id)


@pytest.mark.parametrize("index, task_id", [(0, 0), (3, 3), ("1", 1), ("01", 1), (" 2", 2), (1.0, 1)])
def test_tf_config_task_index_as_tf_reads_it(tf_config, index, task_id):
    # JSON integers and strings of digits, as TF's TFConfigClusterResolver (int(index)) reads them.
    tf_config({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": index}})
    assert TFConfigClusterResolver().task_id == task_id


@pytest.mark.parametrize("index, shown", [
    (0.5, "0.5"), (True, "true"), (False, "false"), (-1, "-1"), (None, "null"), ("1.5", '"1.5"'),
    ("-1", '"-1"'), ([1], "[1]"),
])
def test_tf_config_task_index_is_never_coerced(tf_config, index, shown):
    # TF would run 0.5 as task 0 and true as task 1: another task's identity, silently.
    tf_config({"cluster": {"worker": ["w:1", "w:2"]}, "task": {"type": "worker", "index": index}})
    with pytest.raises(ValueError, match=re.escape(
            "TF_CONFIG's task index must be a non-negative integer (e.g. \"index\": 0), got "
            + shown)):
        _ = TFConfigClusterResolver().task_id


def test_tf_config_master_of_a_missing_task_names_it(tf_config):
    tf_config({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 3}})
    with pytest.raises(ValueError, match="No task with index 3 in job 'worker'"):
        TFConfigClusterResolver().master()


def test_simple_cluster_resolver():
    r = SimpleClusterResolver({"ps": ["p:1"], "worker": ["w:2"]}, master="w:2", task_type="worker",
                              task_id=0, rpc_layer="grpc")
    assert r.master() == "grpc://w:2"
    assert r.master("ps", 0) == "grpc://p:1"
    assert r.cluster_spec().as_dict() == {"ps": ["p:1"], "worker": ["w:2"]}


# -- Slurm ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("hostlist, hosts", [
    ("n1", ["n1"]),
    ("n1,n2", ["n1", "n2"]),
    ("node[01-03,07],gpu5", ["node01", "node02", "node03", "node07", "gpu5"]),
    ("n[1-2],m5,o[3-4,6,7-9]", ["n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"]),
    ("node[8-10]", ["node8", "node9", "node10"]),
    ("node[008-010]", ["node008", "node009", "node010"]),
    ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ("a-b.example.com,c[3]", ["a-b.example.com", "c3"]),
    ("x[5],x[5]", ["x5", "x5"]),   # order kept, no deduplication
    (" n[1-2] ", ["n1", "n2"]),
])
def test_expand_hostlist(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("hostlist, message", [
    ("", "expected e.g."),
    ("node[01-03", "unbalanced"),
    ("node01-03]", "unbalanced"),
    ("node[3-1]", "descending"),
    ("node[a-b]", "not a number or a range"),
    ("node[]", "not a number or a range"),
    ("n1,,n2", "empty host name"),
    ("n1,", "trailing ','"),
    ("n[1[2]]", "unbalanced"),
])
def test_expand_hostlist_errors(hostlist, message):
    with pytest.raises(ValueError, match=message):
        expand_hostlist(hostlist)


@pytest.mark.parametrize("text, counts", [
    ("1", [1]), ("2(x3),1", [2, 2, 2, 1]), ("3(x2),2,1", [3, 3, 2, 1]), ("4, 2(x1)", [4, 2]),
])
def test_expand_tasks_per_node(text, counts):
    assert expand_tasks_per_node(text) == counts


@pytest.mark.parametrize("text", ["", "2(3)", "x2", "2(x)", "1,,2", "-1"])
def test_expand_tasks_per_node_errors(text):
    with pytest.raises(ValueError, match="Invalid Slurm tasks-per-node list"):
        expand_tasks_per_node(text)


@pytest.fixture
def slurm(monkeypatch):
    for name in ["SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_NODELIST",
                 "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_TASKS_PER_NODE",
                 "SLURM_STEP_TASKS_PER_NODE", "SLURM_LOCALID", "CUDA_VISIBLE_DEVICES"]:
        # setenv first so that monkeypatch restores the original state (often: unset) even
        # when the resolver under test sets the variable itself (CUDA_VISIBLE_DEVICES).
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)

    def set_env(**env):
        for name, value in env.items():
            monkeypatch.setenv(name, str(value))
    return set_env


def test_slurm_resolver_assigns_jobs_in_task_order(slurm):
    # 7 tasks: 2 on each of node01..node03, 1 on gpu5; rank 3 is the 2nd task on node02.
    slurm(SLURM_JOB_NODELIST="node[01-03],gpu5", SLURM_TASKS_PER_NODE="2(x3),1", SLURM_NTASKS=7,
          SLURM_PROCID=3, SLURM_LOCALID=1)
    r = SlurmClusterResolver(jobs={"worker": 5, "ps": 2}, port_base=2222)
    assert r.cluster_spec().as_dict() == {
        "ps": ["node01:2222", "node01:2223"],
        "worker": ["node02:2222", "node02:2223", "node03:2222", "node03:2223", "gpu5:2222"]}
    assert (r.task_type, r.task_id) == ("worker", 1)
    assert r.get_task_info() == ("worker", 1)
    assert r.master() == "grpc://node02:2223"
    assert r.master("ps", 1, rpc_layer="zps") == "zps://node01:2223"


def test_slurm_resolver_defaults_to_workers_and_prefers_step_variables(slurm):
    slurm(SLURM_JOB_NODELIST="big[1-9]", SLURM_TASKS_PER_NODE="4(x9)", SLURM_NTASKS=36,
          SLURM_STEP_NODELIST="n[9-10]", SLURM_STEP_TASKS_PER_NODE="1(x2)", SLURM_STEP_NUM_TASKS=2,
          SLURM_PROCID=1)
    r = SlurmClusterResolver()
    assert r.cluster_spec().as_dict() == {"worker": ["n9:8888", "n10:8888"]}
    assert (r.task_type, r.task_id) == ("worker", 1)
    assert r.environment == ""


def test_slurm_resolver_tasks_per_node_argument_and_gpus(slurm, monkeypatch):
    slurm(SLURM_JOB_NODELIST="a,b", SLURM_TASKS_PER_NODE="1(x2)", SLURM_PROCID=3, SLURM_NTASKS=4)
    r = SlurmClusterResolver(jobs={"ps": 1, "worker": 3}, tasks_per_node=2, gpus_per_node=4)
    assert r.cluster_spec().as_dict() == {"ps": ["a:8888"], "worker": ["a:8889", "b:8888", "b:8889"]}
    assert (r.task_type, r.task_id) == ("worker", 2)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"     # 2nd task of its node: GPUs 2 and 3
    assert r.num_accelerators() == {"GPU": 2}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("SLURM_PROCID", "2")
    r = SlurmClusterResolver(jobs={"worker": 3}, tasks_per_node={"a": 1, "b": 2}, auto_set_gpu=False)
    assert r.cluster_spec().as_dict() == {"worker": ["a:8888", "b:8888", "b:8889"]}
    assert r.master() == "grpc://b:8889" and "CUDA_VISIBLE_DEVICES" not in os.environ


@pytest.mark.parametrize("env, kwargs, error, message", [
    ({}, {}, RuntimeError, "SLURM_PROCID not found in the environment"),
    (dict(SLURM_PROCID=0), {}, RuntimeError, "SLURM_STEP_NODELIST / SLURM_JOB_NODELIST"),
    (dict(SLURM_PROCID="x", SLURM_JOB_NODELIST="n1", SLURM_TASKS_PER_NODE="1"), {}, ValueError,
     "SLURM_PROCID='x' is not an integer"),
    (dict(SLURM_PROCID=0, SLURM_JOB_NODELIST="n[1-", SLURM_TASKS_PER_NODE="1"), {}, ValueError,
     "Invalid Slurm hostlist"),
    (dict(SLURM_PROCID=0, SLURM_JOB_NODELIST="n[1-3]", SLURM_TASKS_PER_NODE="2(x2)"), {}, ValueError,
     "nodelist has 3 nodes"),
    (dict(SLURM_PROCID=0, SLURM_JOB_NODELIST="n[1-2]", SLURM_TASKS_PER_NODE="2(x2)"),
     dict(jobs={"ps": 1, "worker": 2}), ValueError, "ask for 3 tasks but the Slurm step has 4"),
    (dict(SLURM_PROCID=4, SLURM_JOB_NODELIST="n[1-2]", SLURM_TASKS_PER_NODE="2(x2)"), {}, ValueError,
     "SLURM_PROCID=4 is outside the step's 4 tasks"),
    (dict(SLURM_PROCID=1, SLURM_LOCALID=0, SLURM_JOB_NODELIST="n[1-2]", SLURM_TASKS_PER_NODE="2(x2)"),
     {}, ValueError, "--distribution=block"),
    (dict(SLURM_PROCID=0, SLURM_JOB_NODELIST="n1", SLURM_TASKS_PER_NODE="1"),
     dict(tasks_per_node={"n2": 1}), ValueError, "not in the Slurm nodelist"),
    (dict(SLURM_PROCID=0, SLURM_JOB_NODELIST="n1", SLURM_TASKS_PER_NODE="2"),
     dict(gpus_per_node=2, gpus_per_task=2), ValueError, "need more than the 2 GPUs per node"),
    (dict(SLURM_PROCID=0, SLURM_JOB_NODELIST="n1", SLURM_TASKS_PER_NODE="1"),
     dict(jobs={"worker": -1, "ps": 2}), ValueError, "must be a number of tasks >= 0"),
])
def test_slurm_resolver_errors(slurm, env, kwargs, error, message):
    slurm(**env)
    with pytest.raises(error, match=message):
        SlurmClusterResolver(**kwargs)
