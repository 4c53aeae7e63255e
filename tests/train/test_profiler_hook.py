"""ProfilerHook: traced steps every N steps / seconds, written as timeline-<step>.json Chrome traces."""

import json
import os

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster
from zps.train.profiler_hook import ProfilerHook


class OptionsSpy(tf.train.SessionRunHook):
    """Records the trace level each run was made with (hooks after ProfilerHook see the merge)."""

    def __init__(self):
        self.levels = []

    def after_run(self, run_context, run_values):
        self.levels.append(run_values.options.trace_level)


def _train(hooks, last_step=6):
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [4], name="x")
    w = tf.Variable(np.zeros(4, np.float32), name="w")
    loss = tf.reduce_sum(tf.square(x - w), name="loss")
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    with tf.train.MonitoredTrainingSession(
            hooks=hooks + [tf.train.StopAtStepHook(last_step=last_step)]) as sess:
        while not sess.should_stop():
            sess.run(train_op, {x: np.ones(4, np.float32)})


def test_every_n_steps_writes_chrome_traces_named_by_global_step(tmp_path):
    spy = OptionsSpy()
    with tf.Graph().as_default():
        _train([ProfilerHook(save_steps=2, output_dir=str(tmp_path)), spy])
    assert sorted(os.listdir(tmp_path)) == ["timeline-2.json", "timeline-4.json", "timeline-6.json"]
    # Only the saved steps were traced: the first step never is (the timer starts there).
    assert spy.levels == [0, 3, 0, 3, 0, 3]
    events = json.loads((tmp_path / "timeline-4.json").read_text())["traceEvents"]
    ops = {e["args"]["name"]: e["name"] for e in events if e["ph"] == "X"}
    assert ops["Square"] == "Square"
    assert "loss" not in ops   # as in TF1: a step that does not fetch the scalar loss skips it
    assert any(t == "ApplyGradientDescent" for t in ops.values())


def test_show_dataflow_false_writes_no_flow_events(tmp_path):
    with tf.Graph().as_default():
        _train([ProfilerHook(save_steps=3, output_dir=str(tmp_path), show_dataflow=False)],
               last_step=4)
    assert os.listdir(tmp_path) == ["timeline-3.json"]
    events = json.loads((tmp_path / "timeline-3.json").read_text())["traceEvents"]
    assert [e for e in events if e.get("ph") == "X"]
    assert not [e for e in events if e.get("cat") == "DataFlow"]


def test_every_n_secs(tmp_path):
    with tf.Graph().as_default():
        _train([ProfilerHook(save_secs=3600, output_dir=str(tmp_path))], last_step=5)
    assert os.listdir(tmp_path) == []   # an hour never passes within 5 steps


def test_needs_exactly_one_trigger_and_a_global_step(tmp_path):
    with pytest.raises(ValueError, match="every_secs or every_steps"):
        ProfilerHook(output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="both"):
        ProfilerHook(save_steps=1, save_secs=1, output_dir=str(tmp_path))
    with tf.Graph().as_default():
        hook = ProfilerHook(save_steps=1, output_dir=str(tmp_path))
        with pytest.raises(RuntimeError, match="Global step should be created to use ProfilerHook"):
            hook.begin()


def test_trace_of_a_cluster_step_holds_every_task(tmp_path):
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(
                    worker_device="/job:worker/task:0",
                    cluster=tf.train.ClusterSpec(cluster.spec))):
                step = tf.train.get_or_create_global_step()
                w = tf.Variable(np.zeros(4, np.float32), name="w")
                loss = tf.reduce_sum(tf.square(w - 1.0), name="loss")
                train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
            hooks = [ProfilerHook(save_steps=2, output_dir=str(tmp_path)),
                     tf.train.StopAtStepHook(last_step=3)]
            with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 0),
                                                   hooks=hooks) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
    assert os.listdir(tmp_path) == ["timeline-2.json"]
    events = json.loads((tmp_path / "timeline-2.json").read_text())["traceEvents"]
    procs = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert "/job:ps/replica:0/task:0/device:CPU:0 Compute" in procs
    assert "/job:worker/replica:0/task:0/device:CPU:0 Compute" in procs
    ops = [e["name"] for e in events if e["ph"] == "X"]
    assert "ApplyGradientDescent" in ops and "_Recv" in ops and "_Send" in ops
