"""BLAS thread limits for tasks sharing a machine (zps.runtime.threads)."""

import numpy as np
import pytest
import threadpoolctl

import zps as tf
from zps.runtime import threads


@pytest.fixture
def blas_env(monkeypatch):
    for name in threads.BLAS_THREAD_VARS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    before = threadpoolctl.threadpool_info()
    yield monkeypatch
    threadpoolctl.threadpool_limits(limits={m["prefix"]: m["num_threads"] for m in before})


def _blas_threads():
    info = [m for m in threadpoolctl.threadpool_info() if m["user_api"] == "blas"]
    if not info:
        pytest.skip("numpy's BLAS is not visible to threadpoolctl here")
    return info[0]["num_threads"]


def test_tasks_on_host_counts_only_that_host():
    spec = tf.train.ClusterSpec({"ps": ["a:1", "b:1"], "worker": {0: "a:2", 3: "a:3"}})
    assert threads.tasks_on_host(spec, "a") == 3
    assert threads.tasks_on_host(spec, "b") == 1
    assert threads.blas_threads_per_task(3, cores=8) == 2
    assert threads.blas_threads_per_task(5, cores=2) == 1


def test_several_local_tasks_limit_blas(blas_env):
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]})
    wanted = threads.blas_threads_per_task(3)
    assert threads.limit_for_server(spec, "127.0.0.1:1") == wanted
    assert _blas_threads() == wanted
    np.ones((64, 64)) @ np.ones((64, 64))   # still computes


def test_the_users_choice_wins(blas_env):
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})
    assert threads.limit_for_server(spec, "127.0.0.1:1", tf.ConfigProto(intra_op_parallelism_threads=1)) == 1
    blas_env.setenv("OPENBLAS_NUM_THREADS", "4")
    assert threads.limit_for_server(spec, "127.0.0.1:1") is None
    alone = tf.train.ClusterSpec({"ps": ["hostA:1"], "worker": ["hostB:2"]})
    blas_env.delenv("OPENBLAS_NUM_THREADS")
    assert threads.limit_for_server(alone, "hostA:1") is None


def test_a_server_of_a_local_cluster_limits_blas(blas_env):
    threadpoolctl.threadpool_limits(limits=7, user_api="blas")
    before = _blas_threads()
    server = tf.train.Server({"ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0"]}, job_name="ps",
                             task_index=0)
    try:
        assert _blas_threads() == min(before, threads.blas_threads_per_task(2))
    finally:
        server.stop()
