"""Supervisor: defaults, managed_session's training loop and error handling, the checkpoint,
summary and step-counter threads, restore from logdir, and chief / non-chief on a cluster."""

import sys
import threading
import time

import numpy as np
import pytest

import zps as tf
from tests.ops.test_summary_ops import read_events, summary_values
from zps.testing.cluster import InProcessCluster

WAIT_S = 10.0   # upper bound of every wait for a background thread


def _wait_until(predicate, what, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out after %gs waiting for %s" % (timeout, what)
        time.sleep(0.01)


def _counter_model(initial=0.0):
    """A global step and a variable ``w``; each train_op run adds 1 to both."""
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(np.float32(initial), name="w")
    train_op = tf.group(tf.assign_add(w, 1.0), tf.assign_add(step, 1))
    return step, w, train_op


def _train_until(sv, sess, step, train_op, last_step):
    while not sv.should_stop():
        sess.run(train_op)
        if sess.run(step) >= last_step:
            sv.request_stop()


# -- construction --------------------------------------------------------------------------------
def test_use_default_takes_tf1_defaults_and_finalizes_the_graph():
    with tf.Graph().as_default() as g:
        step, w, _ = _counter_model()
        loss = tf.summary.scalar("w", w)
        sv = tf.train.Supervisor()
        assert sv.is_chief and sv.global_step is step
        assert sv.init_op is g.get_collection(tf.GraphKeys.INIT_OP)[0]
        assert sv.ready_op is g.get_collection(tf.GraphKeys.READY_OP)[0]
        assert g.get_collection(tf.GraphKeys.LOCAL_INIT_OP)
        assert sv.ready_for_local_init_op is None
        assert sv.saver is g.get_collection(tf.GraphKeys.SAVERS)[0]
        assert sv.summary_op is not None and sv.summary_op in g.get_collection(
            tf.GraphKeys.SUMMARY_OP)
        assert loss in g.get_collection(tf.GraphKeys.SUMMARIES)
        assert sv.save_path is None and sv.summary_writer is None   # no logdir
        assert isinstance(sv.coord, tf.train.Coordinator)
        assert isinstance(sv.session_manager, tf.train.SessionManager)
        assert g.finalized
        assert tf.train.Supervisor.USE_DEFAULT == 0


def test_none_turns_each_piece_off_and_collections_are_reused():
    with tf.Graph().as_default() as g:
        _counter_model()
        mine = tf.train.Saver()
        g.add_to_collection(tf.GraphKeys.SAVERS, mine)
        sv = tf.train.Supervisor(ready_op=None, init_op=None, summary_op=None, global_step=None)
        assert (sv.ready_op, sv.init_op, sv.summary_op, sv.global_step) == (None,) * 4
        assert sv.saver is mine


def test_non_chief_needs_every_variable_placed_and_writes_nothing(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(1.0, name="unplaced")
        with pytest.raises(ValueError, match="'unplaced' has none.*replica_device_setter"):
            tf.train.Supervisor(is_chief=False)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            tf.Variable(1.0, name="placed")
        sv = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path))
        assert sv.save_path is None and sv.summary_writer is None
        with pytest.raises(RuntimeError, match="Only the chief"):
            sv.start_standard_services(None)
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            sv.summary_computed(None, b"")


def test_summaries_and_checkpoints_need_no_tensorboardx(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)    # `import tensorboardX` fails
    logdir = str(tmp_path / "new")
    with tf.Graph().as_default():
        _, w, _ = _counter_model()
        w_summary = tf.summary.scalar("w_value", w)
        sv = tf.train.Supervisor(logdir=logdir, save_summaries_secs=0, save_model_secs=0)
        assert isinstance(sv.summary_writer, tf.summary.FileWriter)
        with sv.managed_session("") as sess:
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
            sv.summary_computed(sess, sess.run(w_summary), global_step=7)
        assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-0")
    events = read_events(logdir)         # the supervisor closed its writer: all written
    assert (7, "w_value", 0.0) in summary_values(events)


# -- managed_session -----------------------------------------------------------------------------
def test_managed_session_trains_until_a_stop_is_requested():
    with tf.Graph().as_default():
        step, w, train_op = _counter_model(5.0)
        sv = tf.train.Supervisor()
        with sv.managed_session("") as sess:
            assert sess.run(w) == 5.0                       # initialized by init_op
            _train_until(sv, sess, step, train_op, 7)
            assert sess.run(w) == 12.0
        assert sv.should_stop() and sv.coord.joined


def test_out_of_range_error_ends_the_block_cleanly():
    with tf.Graph().as_default():
        _, _, train_op = _counter_model()
        sv = tf.train.Supervisor()
        ran = []
        with sv.managed_session("") as sess:
            sess.run(train_op)
            ran.append(True)
            raise tf.errors.OutOfRangeError(None, None, "input exhausted")
        assert ran and sv.should_stop()


def test_queue_runners_feed_the_loop_until_the_input_is_exhausted():
    with tf.Graph().as_default():
        # num_epochs is a local variable: initialized by the default local_init_op.
        item = tf.train.string_input_producer(["a", "b", "c"], num_epochs=2,
                                              shuffle=False).dequeue()
        sv = tf.train.Supervisor()
        seen = []
        with sv.managed_session("") as sess:
            while not sv.should_stop():
                seen.append(sess.run(item))
        assert seen == [b"a", b"b", b"c"] * 2


def test_other_errors_stop_the_threads_and_are_raised_again(tmp_path):
    before = set(threading.enumerate())
    with tf.Graph().as_default():
        _, _, train_op = _counter_model()
        sv = tf.train.Supervisor(logdir=str(tmp_path), summary_writer=None, save_model_secs=0.05)
        with pytest.raises(ValueError, match="bad batch"):
            with sv.managed_session("") as sess:
                sess.run(train_op)
                looper = sv.loop(0.01, lambda: None)
                raise ValueError("bad batch")
        assert sv.should_stop()
        assert not looper.is_alive()
        assert not [t for t in set(threading.enumerate()) - before
                    if isinstance(t, tf.train.LooperThread)]


def test_a_service_thread_error_stops_training_and_is_raised():
    with tf.Graph().as_default():
        _, _, train_op = _counter_model()
        sv = tf.train.Supervisor()

        def fail():
            raise RuntimeError("service failed")
        with pytest.raises(RuntimeError, match="service failed"):
            with sv.managed_session("") as sess:
                sv.loop(None, fail)
                assert sv.wait_for_stop(timeout=WAIT_S)
                sess.run(train_op)


def test_stop_on_exception_requests_a_stop():
    with tf.Graph().as_default():
        _counter_model()
        sv = tf.train.Supervisor()
        sess = sv.prepare_or_wait_for_session("")
        with sv.stop_on_exception():
            raise KeyError("in a worker thread")
        assert sv.should_stop()
        with pytest.raises(KeyError):
            sv.stop()
        sess.close()


def test_stop_joins_service_threads_within_the_grace_period(tmp_path):
    with tf.Graph().as_default():
        _counter_model()
        sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0.05,
                                 save_summaries_secs=0.05, stop_grace_secs=1)
        sess = sv.prepare_or_wait_for_session("")
        release = threading.Event()
        blocked = sv.loop(None, release.wait)                 # ignores stop until released
        threads = sv.start_standard_services(sess)
        assert len(threads) == 2                              # step counter and checkpoint
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="threads still running"):
            sv.stop()
        assert 1.0 <= time.monotonic() - start < 3.0
        assert not any(t.is_alive() for t in threads)
        release.set()
        blocked.join(WAIT_S)
        sess.close()


# -- checkpoints and summaries -------------------------------------------------------------------
def test_checkpoint_thread_saves_and_a_new_supervisor_restores(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        step, w, train_op = _counter_model()
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0.05, summary_writer=None)
        assert sv.save_path == str(tmp_path / "model.ckpt")
        with sv.managed_session("") as sess:
            for _ in range(10):
                sess.run(train_op)
            _wait_until(lambda: (tf.train.latest_checkpoint(logdir) or "").endswith("-10"),
                        "a checkpoint at step 10")
            sv.request_stop()
    with tf.Graph().as_default():
        # Another initial value: a restored w is 10, an initialized one 100.
        step, w, train_op = _counter_model(100.0)
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0, summary_writer=None)
        with sv.managed_session("") as sess:
            assert (sess.run(step), sess.run(w)) == (10, 10.0)
            _train_until(sv, sess, step, train_op, 13)
            assert sess.run(w) == 13.0


def test_summary_and_step_counter_threads_write_events(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        step, w, train_op = _counter_model()
        w_summary = tf.summary.scalar("w_value", w)
        sv = tf.train.Supervisor(logdir=logdir, save_summaries_secs=0.05, save_model_secs=0.05)
        written = []
        real_add_summary = sv.summary_writer.add_summary
        sv.summary_writer.add_summary = lambda s, step=None: (written.append(step),
                                                              real_add_summary(s, step))
        with sv.managed_session("") as sess:
            for _ in range(3):
                sess.run(train_op)
            _wait_until(lambda: len(written) >= 4, "summaries from both threads")
            sv.summary_computed(sess, sess.run(w_summary), global_step=42)
            sv.summary_computed(sess, sess.run(w_summary))      # at the current step
            assert written[-2:] == [42, 3]
    events = read_events(logdir)
    tags = {tag for _, tag, _ in summary_values(events)}
    assert {"w_value", "global_step/sec"} <= tags
    assert (42, "w_value", 3.0) in summary_values(events)
    logs = [e.session_log.status for e in events if e.HasField("session_log")]
    SessionLog = type(events[0].session_log)
    assert logs[0] == SessionLog.START and logs[-1] == SessionLog.STOP
    assert SessionLog.CHECKPOINT in logs
    assert any(e.HasField("graph_def") for e in events)


# -- chief and non-chief on a cluster ------------------------------------------------------------
def _replica_graph(spec, task, initial):
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % task, cluster=spec)):
        model = _counter_model(initial)
    return graph, model


def test_chief_initializes_and_non_chief_waits_then_both_train(tmp_path):
    steps_each = 5
    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        results, errors, times = {}, [], {}

        def worker(task):
            try:
                # Different initial values: only the chief's (10) may ever be seen.
                graph, (step, w, train_op) = _replica_graph(cluster.spec, task,
                                                            10.0 if task == 0 else 1000.0)
                with graph.as_default():
                    sv = tf.train.Supervisor(is_chief=task == 0, logdir=str(tmp_path),
                                             recovery_wait_secs=0.1, summary_writer=None)
                    if task == 0:
                        time.sleep(0.3)                           # the non-chief waits first
                        times["chief_prepares"] = time.monotonic()
                    sess = sv.prepare_or_wait_for_session(cluster.target("worker", task),
                                                          max_wait_secs=WAIT_S)
                    times[task] = time.monotonic()
                    first = sess.run(w)
                    for _ in range(steps_each):
                        sess.run(train_op)
                    results[task] = (first, sv)
                    sv.stop()
                    sess.close()
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in (1, 0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(3 * WAIT_S)
            assert not t.is_alive(), "a worker is still running"
        assert not errors, errors
        assert times[1] > times["chief_prepares"]                 # the non-chief waited
        for task in (0, 1):
            assert 10.0 <= results[task][0] <= 10.0 + steps_each  # w was never 1000
        assert results[1][1].save_path is None                    # the non-chief writes nothing
        graph, (step, w, _) = _replica_graph(cluster.spec, 0, 0.0)
        with graph.as_default(), tf.Session(cluster.target("worker", 0)) as sess:
            assert sess.run(w) == 10.0 + 2 * steps_each           # both trained the ps's w
            assert sess.run(step) == 2 * steps_each

