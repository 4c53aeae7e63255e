"""SummarySaverHook: cadence by steps and seconds, the global step it writes with, event files."""

import sys
import types

import pytest

import zps as tf
from tests.ops.test_summary_ops import read_events, summary_values
from zps import summary
from zps.ops.summary_ops import decode_summary
from zps.train import basic_session_run_hooks
from zps.train.monitored_session import ChiefSessionCreator, MonitoredSession, Scaffold
from zps.train.summary_hook import SummarySaverHook


class FakeWriter:
    """Stands in for tf.summary.FileWriter: records (step, tags) of each summary."""

    def __init__(self):
        self.summaries, self.session_logs, self.flushes = [], [], 0

    def add_summary(self, summary_value, global_step):
        self.summaries.append((global_step, [v["tag"] for v in decode_summary(summary_value)]))

    def add_session_log(self, status, global_step):
        self.session_logs.append((status, global_step))

    def flush(self):
        self.flushes += 1


def _train(hook, steps, scaffold=None):
    """Run ``steps`` increments of the global step under MonitoredSession with ``hook`` (and the
    session creator's ``scaffold``, as MonitoredTrainingSession shares it with its hooks)."""
    train_op = tf.assign_add(tf.train.get_global_step(), 1)
    creator = ChiefSessionCreator(scaffold=scaffold)
    with MonitoredSession(session_creator=creator, hooks=[hook]) as sess:
        for _ in range(steps):
            sess.run(train_op)


def test_save_steps_cadence_and_global_step():
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        loss = summary.scalar("loss", tf.constant(1.0))
        writer = FakeWriter()
        hook = SummarySaverHook(save_steps=2, summary_writer=writer, summary_op=loss)
        _train(hook, 6)
    # TF1: the first run always saves; then every 2 steps of the global step after the run. (The
    # hook's step read is not ordered with the train op, as in TF1; these cadences hold either way.)
    assert writer.summaries == [(1, ["loss"]), (3, ["loss"]), (5, ["loss"])]
    assert writer.session_logs == [("START", 1)]
    assert writer.flushes == 1  # at end


def test_save_secs_cadence(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(basic_session_run_hooks, "time", types.SimpleNamespace(time=lambda: clock[0]))
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        ops = [summary.scalar("a", tf.constant(1.0)), summary.scalar("b", tf.constant(2.0))]
        writer = FakeWriter()
        hook = SummarySaverHook(save_secs=10, summary_writer=writer, summary_op=ops)
        train_op = tf.assign_add(tf.train.get_global_step(), 1)
        with MonitoredSession(hooks=[hook]) as sess:
            for advance in (0, 5, 4, 2, 1, 10):
                clock[0] += advance
                sess.run(train_op)
    # a list of summary ops is written op by op; times: 1000 (first), 1011 (>= 1010), 1022
    assert writer.summaries == [(1, ["a"]), (1, ["b"]), (4, ["a"]), (4, ["b"]),
                                (6, ["a"]), (6, ["b"])]


def test_scaffold_summary_op_and_none():
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        merged = summary.merge([summary.scalar("x", tf.constant(3.0)),
                                summary.histogram("h", tf.constant([1.0, 2.0]))])
        writer = FakeWriter()
        _train(SummarySaverHook(save_steps=1, summary_writer=writer,
                                scaffold=Scaffold(summary_op=merged)), 2)
        assert writer.summaries == [(1, ["x", "h"]), (2, ["x", "h"])]
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        writer = FakeWriter()
        # a graph without summaries: the scaffold has no summary op, nothing is written
        scaffold = Scaffold()
        _train(SummarySaverHook(save_steps=1, summary_writer=writer, scaffold=scaffold), 2, scaffold)
        assert writer.summaries == [] and writer.session_logs == [("START", 1)]


def test_scaffold_default_summary_op_is_merge_all(monkeypatch):
    # The wiring the lead adds to monitored_session (Scaffold's default summary op = merge_all).
    from zps.train import monitored_session
    monkeypatch.setattr(monitored_session, "_merge_all_summaries", summary.merge_all)
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        summary.scalar("a", tf.constant(1.0))
        summary.histogram("b", tf.constant([1.0]))
        writer = FakeWriter()
        scaffold = Scaffold()
        _train(SummarySaverHook(save_steps=2, summary_writer=writer, scaffold=scaffold), 3, scaffold)
        assert writer.summaries == [(1, ["a", "b"]), (3, ["a", "b"])]


def test_constructor_and_begin_errors():
    with tf.Graph().as_default():
        s = summary.scalar("x", tf.constant(1.0))
        with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
            SummarySaverHook(save_steps=1, output_dir="/tmp", scaffold=Scaffold(), summary_op=s)
        with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
            SummarySaverHook(save_steps=1, output_dir="/tmp")
        with pytest.raises(ValueError, match="either every_secs or every_steps|Either every_secs"):
            SummarySaverHook(summary_writer=FakeWriter(), summary_op=s)
        with pytest.raises(ValueError, match="output_dir or summary_writer"):
            SummarySaverHook(save_steps=1, summary_op=s)
        hook = SummarySaverHook(save_steps=1, summary_writer=FakeWriter(), summary_op=s)
        with pytest.raises(RuntimeError, match="Global step should be created to use SummarySaverHook"):
            hook.begin()


def test_output_dir_writes_readable_event_files(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)   # not needed: `import` would fail
    logdir = str(tmp_path)
    try:
        with tf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            summary.scalar("step_value", tf.cast(step, tf.float32) * 10)
            scaffold = Scaffold(summary_op=summary.merge_all())
            _train(SummarySaverHook(save_steps=2, output_dir=logdir, scaffold=scaffold), 4, scaffold)
    finally:
        summary.FileWriterCache.clear()  # closes the cached writer
    events = read_events(logdir)
    got = summary_values(events)
    assert [(s, tag) for s, tag, _ in got] == [(1, "step_value"), (3, "step_value")]
    assert all(value in (10.0 * (s - 1), 10.0 * s) for s, _, value in got)
    assert [(e.step, e.session_log.status) for e in events if e.HasField("session_log")] == [(1, 1)]
    assert sum(e.HasField("graph_def") for e in events) == 1  # FileWriterCache adds the graph
