"""RunConfig reads TF_CONFIG as TF1's tf.estimator.RunConfig does.

The expected values are those of tensorflow_estimator's run_config.py (TF 1.15 to 2.15; its
docstrings' examples and global-id table): TF itself is not installed where these tests run.
"""

import json

import pytest

import zps as tf

CLUSTER = {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
           "worker": ["host3:2222", "host4:2222", "host5:2222"]}


def config_for(monkeypatch, tf_config, **kwargs):
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    return tf.estimator.RunConfig(**kwargs)


def summary(config):
    return (config.task_type, config.task_id, config.is_chief, config.master,
            config.evaluation_master, config.num_ps_replicas, config.num_worker_replicas,
            config.global_id_in_cluster)


def test_defaults_without_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    config = tf.estimator.RunConfig()
    assert summary(config) == ("worker", 0, True, "", "", 0, 1, 0)
    assert not config.cluster_spec and config.session_config is None
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (600, None)
    assert (config.save_summary_steps, config.keep_checkpoint_max, config.log_step_count_steps,
            config.keep_checkpoint_every_n_hours, config.tf_random_seed, config.model_dir,
            config.session_creation_timeout_secs) == (100, 5, 100, 10000, None, None, 7200)


@pytest.mark.parametrize("task_type, index, expected, device_filters", [
    ("chief", 0, ("chief", 0, True, "grpc://host0:2222", "", 2, 4, 0), ["/job:ps", "/job:chief"]),
    ("worker", 0, ("worker", 0, False, "grpc://host3:2222", "", 2, 4, 1),
     ["/job:ps", "/job:worker/task:0"]),
    ("worker", 2, ("worker", 2, False, "grpc://host5:2222", "", 2, 4, 3),
     ["/job:ps", "/job:worker/task:2"]),
    ("ps", 1, ("ps", 1, False, "grpc://host2:2222", "", 2, 4, 5),
     ["/job:ps", "/job:worker", "/job:chief", "/job:master"]),
])
def test_training_tasks(monkeypatch, task_type, index, expected, device_filters):
    config = config_for(monkeypatch, {"cluster": CLUSTER,
                                      "task": {"type": task_type, "index": index}})
    assert summary(config) == expected
    assert config.cluster_spec.as_dict() == CLUSTER
    assert list(config.session_config.device_filters) == device_filters
    assert config.session_config.allow_soft_placement


def test_evaluator_is_not_part_of_the_training_cluster(monkeypatch):
    config = config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator",
                                                                  "index": 0},
                                      "eval_session_master": "grpc://eval:1"})
    assert summary(config) == ("evaluator", 0, False, "", "grpc://eval:1", 0, 0, None)
    assert not config.cluster_spec and config.session_config is None


def test_legacy_master_cluster(monkeypatch):
    cluster = {"master": ["m:1"], "ps": ["p:1"], "worker": ["w:1", "w:2"]}
    config = config_for(monkeypatch, {"cluster": cluster, "task": {"type": "master", "index": 0}})
    assert summary(config) == ("master", 0, True, "grpc://m:1", "", 1, 3, 0)
    assert list(config.session_config.device_filters) == ["/job:ps", "/job:master"]
    config = config_for(monkeypatch, {"cluster": cluster, "task": {"type": "worker", "index": 1}})
    assert summary(config) == ("worker", 1, False, "grpc://w:2", "", 1, 3, 2)
    with pytest.raises(ValueError, match="task_type `evaluator` is not supported"):
        config_for(monkeypatch, {"cluster": cluster, "task": {"type": "evaluator", "index": 0}})
    with pytest.raises(ValueError, match="job `chief` is not supported"):
        config_for(monkeypatch, {"cluster": dict(cluster, chief=["c:1"]),
                                 "task": {"type": "master", "index": 0}})


def test_overrides_from_tf_config(monkeypatch):
    config = config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1},
                                      "session_master": "grpc://elsewhere:1",
                                      "model_dir": "/tmp/m"})
    assert config.master == "grpc://elsewhere:1" and config.model_dir == "/tmp/m"
    with pytest.raises(ValueError, match="must have the same value as the model_dir"):
        config_for(monkeypatch, {"model_dir": "/tmp/m"}, model_dir="/tmp/other")
    local = config_for(monkeypatch, {"session_master": "grpc://s:1",
                                     "eval_session_master": "grpc://e:1"})
    assert (local.master, local.evaluation_master, local.is_chief) == ("grpc://s:1", "grpc://e:1",
                                                                       True)


def test_single_node_cluster_runs_in_process(monkeypatch):
    config = config_for(monkeypatch, {"cluster": {"chief": ["c:1"]},
                                      "task": {"type": "chief", "index": 0}})
    assert summary(config) == ("chief", 0, True, "", "", 0, 1, 0)


@pytest.mark.parametrize("tf_config, message", [
    ({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}},
     'must have one "chief" node'),
    ({"cluster": {"chief": ["c:1", "c:2"]}, "task": {"type": "chief", "index": 0}},
     'must have only one "chief" node'),
    ({"cluster": CLUSTER, "task": {"index": 0}}, "task type must be set"),
    ({"cluster": CLUSTER, "task": {"type": "worker"}}, "task index must be set"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": -1}}, "must be non-negative"),
    ({"cluster": CLUSTER, "task": {"type": "trainer", "index": 0}}, "not a valid task_type"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 3}}, "not a valid task_id"),
    ({"task": {"type": "ps", "index": 0}}, "task type must be WORKER"),
    ({"task": {"type": "worker", "index": 1}}, "task index must be 0"),
])
def test_bad_tf_config(monkeypatch, tf_config, message):
    with pytest.raises(ValueError, match=message):
        config_for(monkeypatch, tf_config)


def test_arguments_and_replace(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    config = tf.estimator.RunConfig(save_checkpoints_steps=10)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (10, None)
    with pytest.raises(ValueError, match="cannot be both set"):
        tf.estimator.RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=5)
    with pytest.raises(ValueError, match="log_step_count_steps should be > 0"):
        tf.estimator.RunConfig(log_step_count_steps=0)
    with pytest.raises(ValueError, match="tf_random_seed must be integer"):
        tf.estimator.RunConfig(tf_random_seed=1.5)
    with pytest.raises(ValueError, match='device_fn must be callable with exactly one argument'):
        tf.estimator.RunConfig(device_fn=lambda a, b: "")
    replaced = config.replace(save_checkpoints_secs=30, model_dir="/tmp/x")
    assert (replaced.save_checkpoints_steps, replaced.save_checkpoints_secs,
            replaced.model_dir) == (None, 30, "/tmp/x")
    assert config.model_dir is None
    with pytest.raises(ValueError, match="Replacing task_type is not supported"):
        config.replace(task_type="ps")
