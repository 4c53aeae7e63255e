"""SessionRunHook protocol and the basic hooks, run through MonitoredSession on local graphs."""

import logging
import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.train import basic_session_run_hooks as hooks
from zps.train.monitored_session import MonitoredSession, Scaffold
from zps.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)


class FakeSaver:
    """Stands in for tf.train.Saver in CheckpointSaverHook: records the saves."""

    def __init__(self):
        self.saves = []

    def save(self, sess, save_path, global_step=None):
        self.saves.append((save_path, int(global_step)))
        return "%s-%d" % (save_path, global_step)


class RecordingHook(SessionRunHook):
    """Records every call; ``fetches``/``feeds`` are requested in before_run."""

    def __init__(self, calls, name="hook", fetches=None, feeds=None):
        self.calls, self.name, self.fetches, self.feeds = calls, name, fetches, feeds
        self.results = []

    def begin(self):
        self.calls.append((self.name, "begin"))

    def after_create_session(self, session, coord):
        self.calls.append((self.name, "after_create_session"))

    def before_run(self, run_context):
        self.calls.append((self.name, "before_run"))
        if self.fetches is None and self.feeds is None:
            return None
        return SessionRunArgs(self.fetches, feed_dict=self.feeds)

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, "after_run"))
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append((self.name, "end"))


def _session(hooks_):
    return MonitoredSession(hooks=hooks_, session_creator=None)


def test_hook_call_order():
    calls = []
    with tf.Graph().as_default():
        x = tf.constant(2.0)
        a, b = RecordingHook(calls, "a"), RecordingHook(calls, "b")
        with _session([a, b]) as sess:
            assert calls == [("a", "begin"), ("b", "begin"),
                             ("a", "after_create_session"), ("b", "after_create_session")]
            del calls[:]
            assert sess.run(x) == 2.0
            sess.run(x)
            assert calls == [("a", "before_run"), ("b", "before_run"),
                             ("a", "after_run"), ("b", "after_run")] * 2
            del calls[:]
    assert calls == [("a", "end"), ("b", "end")]


def test_end_is_skipped_when_closed_by_an_error():
    calls = []
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with pytest.raises(ValueError, match="boom"):
            with _session([RecordingHook(calls)]) as sess:
                sess.run(x)
                raise ValueError("boom")
    assert ("hook", "end") not in calls


def test_hook_fetches_and_feeds_are_merged():
    calls = []
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        q = tf.placeholder(tf.float32, [])
        y = p * 10.0
        z = q + 1.0
        fetcher = RecordingHook(calls, "fetcher", fetches={"y": y, "both": [y, z]})
        feeder = RecordingHook(calls, "feeder", feeds={q: 5.0})
        plain = RecordingHook(calls, "plain")
        with _session([fetcher, feeder, plain]) as sess:
            out = sess.run(z, feed_dict={p: 2.0})
    assert out == 6.0
    assert fetcher.results == [{"y": 20.0, "both": [20.0, 6.0]}]
    assert feeder.results == [None] and plain.results == [None]


def test_two_hooks_feeding_the_same_tensor_is_an_error():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        y = p * 2.0
        h1 = hooks.FeedFnHook(lambda: {p: 1.0})
        h2 = hooks.FeedFnHook(lambda: {p: 2.0})
        with _session([h1, h2]) as sess:
            with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks"):
                sess.run(y)
        with _session([h1]) as sess:
            with pytest.raises(RuntimeError, match="SessionRunHook and user"):
                sess.run(y, feed_dict={p: 3.0})


def test_feed_fn_hook():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        y = p * 2.0
        values = iter([1.0, 2.0, 3.0])
        with _session([hooks.FeedFnHook(lambda: {p: next(values)})]) as sess:
            assert [sess.run(y) for _ in range(3)] == [2.0, 4.0, 6.0]


def test_run_context_sees_original_args_and_can_request_stop():
    seen = []

    class StopAfterTwo(SessionRunHook):
        def begin(self):
            self.n = 0

        def before_run(self, run_context):
            seen.append(run_context.original_args)
            assert isinstance(run_context, SessionRunContext)

        def after_run(self, run_context, run_values):
            assert isinstance(run_values, SessionRunValues) and run_values.results is None
            self.n += 1
            if self.n == 2:
                assert not run_context.stop_requested
                run_context.request_stop()
                assert run_context.stop_requested

    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        with _session([StopAfterTwo()]) as sess:
            sess.run(p, feed_dict={p: 1.0})
            assert not sess.should_stop()
            sess.run(p, feed_dict={p: 1.0})
            assert sess.should_stop()
            with pytest.raises(RuntimeError, match="should_stop.*end\\(session\\)"):
                sess.run(p, feed_dict={p: 1.0})
    assert seen[0].fetches is p and seen[0].feed_dict == {p: 1.0}


def _counting_graph():
    step = tf.train.get_or_create_global_step()
    return step, tf.assign_add(step, 1)


def _train_until_stop(hooks_, train_op, limit=100):
    runs = 0
    with _session(hooks_) as sess:
        while not sess.should_stop() and runs < limit:
            sess.run(train_op)
            runs += 1
    return runs


def test_stop_at_step_hook_last_step():
    with tf.Graph().as_default():
        _, train_op = _counting_graph()
        assert _train_until_stop([hooks.StopAtStepHook(last_step=7)], train_op) == 7


def test_stop_at_step_hook_num_steps_counts_from_the_restored_step():
    with tf.Graph().as_default():
        step, train_op = _counting_graph()
        init = Scaffold(init_fn=lambda scaffold, sess: step.load(10, sess), saver=FakeSaver())
        from zps.train.monitored_session import ChiefSessionCreator
        with MonitoredSession(ChiefSessionCreator(scaffold=init),
                              hooks=[hooks.StopAtStepHook(num_steps=4)]) as sess:
            while not sess.should_stop():
                last = sess.run(train_op)
    assert last == 14


def test_stop_at_step_hook_when_a_run_does_not_increase_the_step():
    with tf.Graph().as_default():
        step, train_op = _counting_graph()
        noop = tf.constant(0)
        with _session([hooks.StopAtStepHook(last_step=2)]) as sess:
            sess.run(noop)
            sess.run(noop)
            assert not sess.should_stop()
            sess.run(train_op)
            sess.run(train_op)
            assert sess.should_stop()


def test_stop_at_step_hook_arguments():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        hooks.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of"):
        hooks.StopAtStepHook(num_steps=1, last_step=2)
    with tf.Graph().as_default():
        with pytest.raises(RuntimeError, match="Global step should be created"):
            hooks.StopAtStepHook(last_step=1).begin()


def test_nan_tensor_hook_raises():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        loss = p * 1.0
        with _session([hooks.NanTensorHook(loss)]) as sess:
            assert sess.run(loss, {p: 1.0}) == 1.0
            with pytest.raises(hooks.NanLossDuringTrainingError, match="NaN loss during training"):
                sess.run(loss, {p: np.nan})


def test_nan_tensor_hook_can_only_stop():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        loss = p * 1.0
        with _session([hooks.NanTensorHook(loss, fail_on_nan_loss=False)]) as sess:
            sess.run(loss, {p: np.nan})
            assert sess.should_stop()


def test_logging_tensor_hook_every_n_iter(caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        p = tf.placeholder(tf.int32, [], name="p")
        tf.identity(p * 2, name="double")
        hook = hooks.LoggingTensorHook({"c": p, "d": "double"}, every_n_iter=2)
        with _session([hook]) as sess:
            for i in range(5):
                sess.run(p, feed_dict={p: i})
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("c = ")]
    assert len(lines) == 3                       # iterations 0, 2, 4
    assert lines[0] == "c = 0, d = 0"            # tags sorted; the first line has no time
    assert lines[1].startswith("c = 2, d = 4 (") and lines[1].endswith(" sec)")
    assert lines[2].startswith("c = 4, d = 8 (")


def test_logging_tensor_hook_list_formatter_and_at_end(caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        a = tf.constant([1.5, 2.0], name="a")
        b = tf.constant(3, name="b")
        hook = hooks.LoggingTensorHook(
            ["b", a], at_end=True,
            formatter=lambda values: "B=%d A=%s" % (values["b"], values[a].tolist()))
        with _session([hook]) as sess:
            sess.run(b)
            sess.run(b)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("B=")]
    assert lines == ["B=3 A=[1.5, 2.0]"]          # only at the end


def test_logging_tensor_hook_arguments():
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        hooks.LoggingTensorHook(["x"])
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        hooks.LoggingTensorHook(["x"], every_n_iter=1, every_n_secs=1)
    with pytest.raises(ValueError, match="invalid every_n_iter=0"):
        hooks.LoggingTensorHook(["x"], every_n_iter=0)
    with tf.Graph().as_default():
        tf.split(tf.constant([1.0, 2.0]), 2, name="two")
        with pytest.raises(ValueError, match="ambiguous"):
            hooks.LoggingTensorHook(["two"], every_n_iter=1).begin()


def test_final_ops_hook():
    with tf.Graph().as_default():
        step, train_op = _counting_graph()
        p = tf.placeholder(tf.int64, [])
        final = hooks.FinalOpsHook({"step": step, "plus": step + p}, final_ops_feed_dict={p: 100})
        assert final.final_ops_values is None
        _train_until_stop([final, hooks.StopAtStepHook(last_step=3)], train_op)
    assert final.final_ops_values == {"step": 3, "plus": 103}


def test_step_counter_hook_logs_steps_per_sec(caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        _, train_op = _counting_graph()
        _train_until_stop([hooks.StepCounterHook(every_n_steps=2),
                           hooks.StopAtStepHook(last_step=6)], train_op)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("global_step/sec")]
    assert len(lines) >= 2
    assert float(lines[0].split(": ")[1]) > 0


def test_step_counter_hook_writes_steps_per_sec_summaries(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        _, train_op = _counting_graph()
        _train_until_stop([hooks.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path)),
                           hooks.StopAtStepHook(last_step=12)], train_op)
    tf.summary.FileWriterCache.clear()   # closed: all written
    values = [(event.step, value.tag, value.simple_value)
              for path in tmp_path.iterdir() for event in tf.train.summary_iterator(str(path))
              for value in event.summary.value]
    logged = [float(r.getMessage().split(": ")[1]) for r in caplog.records
              if r.getMessage().startswith("global_step/sec")]
    assert len(values) >= 3 and [v[2] for v in values] == pytest.approx(logged, rel=1e-5)  # %g
    assert all(tag == "global_step/sec" and rate > 0 for _, tag, rate in values)
    steps = [step for step, _, _ in values]
    assert steps == sorted(set(steps)) and steps[-1] <= 12


def test_step_counter_hook_warns_when_the_step_does_not_move(caplog):
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        x = tf.constant(1.0)
        with _session([hooks.StepCounterHook(every_n_steps=1000)]) as sess:
            for _ in range(21):
                sess.run(x)
    assert any("has not been increased" in r.getMessage() for r in caplog.records)


def test_global_step_waiter_hook():
    with tf.Graph().as_default():
        step, train_op = _counting_graph()
        with _session([hooks.GlobalStepWaiterHook(wait_until_step=0)]) as sess:
            assert sess.run(train_op) == 1
        threads = []

        class OtherWorker(SessionRunHook):   # moves the global step while this worker waits
            def after_create_session(self, session, coord):
                def bump():
                    time.sleep(0.2)
                    session.run(train_op)
                    session.run(train_op)
                threads.append(threading.Thread(target=bump))
                threads[0].start()

        start = time.monotonic()
        with _session([OtherWorker(), hooks.GlobalStepWaiterHook(wait_until_step=2)]) as sess:
            assert sess.run(train_op) == 3
        threads[0].join()
        assert time.monotonic() - start >= 0.2


def test_second_or_step_timer():
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        hooks.SecondOrStepTimer()
    with pytest.raises(ValueError, match="Can not provide both"):
        hooks.SecondOrStepTimer(every_secs=1, every_steps=1)
    timer = hooks.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0) and timer.last_triggered_step() is None
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(0) and not timer.should_trigger_for_step(2)
    assert timer.should_trigger_for_step(3)
    secs, steps = timer.update_last_triggered_step(4)
    assert steps == 4 and secs >= 0 and timer.last_triggered_step() == 4
    timer = hooks.SecondOrStepTimer(every_secs=0.0)
    timer.update_last_triggered_step(1)
    assert timer.should_trigger_for_step(2) and not timer.should_trigger_for_step(1)


def test_checkpoint_saver_hook_saves_at_start_every_n_steps_and_at_end():
    with tf.Graph().as_default():
        _, train_op = _counting_graph()
        saver = FakeSaver()
        listener_calls = []

        class Listener(hooks.CheckpointSaverListener):
            def begin(self):
                listener_calls.append("begin")

            def before_save(self, session, global_step_value):
                listener_calls.append(("before", int(global_step_value)))

            def after_save(self, session, global_step_value):
                listener_calls.append(("after", int(global_step_value)))

            def end(self, session, global_step_value):
                listener_calls.append(("end", int(global_step_value)))

        saver_hook = hooks.CheckpointSaverHook("/ckpt", save_steps=3, saver=saver,
                                               listeners=[Listener()])
        _train_until_stop([saver_hook, hooks.StopAtStepHook(last_step=7)], train_op)
    assert saver.saves == [("/ckpt/model.ckpt", s) for s in (0, 3, 6, 7)]
    assert listener_calls[0] == "begin" and listener_calls[-1] == ("end", 7)
    assert listener_calls[1:3] == [("before", 0), ("after", 0)]


def test_checkpoint_saver_listener_can_stop_training():
    with tf.Graph().as_default():
        _, train_op = _counting_graph()

        class StopAt2(hooks.CheckpointSaverListener):
            def after_save(self, session, global_step_value):
                return global_step_value >= 2

        saver_hook = hooks.CheckpointSaverHook("/ckpt", save_steps=2, saver=FakeSaver(),
                                               listeners=[StopAt2()])
        assert _train_until_stop([saver_hook], train_op) == 2


def test_checkpoint_saver_hook_arguments():
    with pytest.raises(ValueError, match="both saver and scaffold"):
        hooks.CheckpointSaverHook("/d", save_steps=1, saver=FakeSaver(), scaffold=Scaffold())
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        hooks.CheckpointSaverHook("/d")
    with tf.Graph().as_default():
        hook = hooks.CheckpointSaverHook("/d", save_steps=1)
        with pytest.raises(RuntimeError, match="No items in collection savers"):
            hook._get_saver()
