"""MonitoredSession, MonitoredTrainingSession, Scaffold and session creators: training loops,
recovery after AbortedError, checkpoints, chief / non-chief on an in-process cluster, closing."""

import logging
import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.ops.data_flow_ops import FIFOQueue
from zps.testing.cluster import InProcessCluster
from zps.train import basic_session_run_hooks as hooks
from zps.train import monitored_session as ms
from zps.train.queue_runner import QueueRunner, add_queue_runner
from zps.train.session_manager import SessionManager
from zps.train.session_run_hook import SessionRunHook
from zps.train.summary_hook import SummarySaverHook


class CountingHook(SessionRunHook):
    def __init__(self):
        self.created = self.runs = self.ended = 0

    def after_create_session(self, session, coord):
        self.created += 1

    def after_run(self, run_context, run_values):
        self.runs += 1

    def end(self, session):
        self.ended += 1


def _model():
    """A global step and a variable that counts the train steps."""
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(0.0, name="w")
    train_op = tf.group(tf.assign_add(w, 1.0), tf.assign_add(step, 1))
    return step, w, train_op


def _train(sess, train_op, step):
    while not sess.should_stop():
        sess.run(train_op)
    return sess


# -- MonitoredTrainingSession locally ------------------------------------------------------------
def test_monitored_training_session_trains_until_the_stop_step(tmp_path):
    with tf.Graph().as_default() as g:
        step, w, train_op = _model()
        counter = CountingHook()
        with ms.MonitoredTrainingSession(
                hooks=[hooks.StopAtStepHook(last_step=10), counter]) as sess:
            assert g.finalized
            runs = 0
            while not sess.should_stop():
                sess.run(train_op)
                runs += 1
        assert runs == 10 and counter.runs == 10 and counter.ended == 1
        assert not g.finalized                 # unfinalized again on close, as in TF1


def test_monitored_training_session_hook_order_and_defaults(tmp_path):
    class Mine(SessionRunHook):
        pass

    with tf.Graph().as_default():
        _model()
        chief_only, mine = Mine(), Mine()
        sess = ms.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[mine],
                                                 chief_only_hooks=[chief_only])
        kinds = [type(h) for h in sess._hooks]
        sess.close()
        # TF1's order
        assert kinds == [Mine, hooks.StepCounterHook, SummarySaverHook, hooks.CheckpointSaverHook,
                         Mine]
        assert sess._hooks[0] is chief_only and sess._hooks[-1] is mine
        saver_hook = sess._hooks[-2]
        assert saver_hook._timer._every_secs == 600 and saver_hook._timer._every_steps is None
        assert sess._hooks[1]._timer._every_steps == 100

        sess = ms.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                                 save_checkpoint_steps=5, log_step_count_steps=None)
        assert [type(h) for h in sess._hooks] == [SummarySaverHook, hooks.CheckpointSaverHook]
        assert sess._hooks[-1]._timer._every_steps == 5 and sess._hooks[-1]._timer._every_secs is None
        sess.close()
        sess = ms.MonitoredTrainingSession(hooks=[mine], chief_only_hooks=[chief_only])
        assert sess._hooks == [chief_only, mine]      # no checkpoint_dir: no saver/counter hooks
        sess.close()


def test_run_after_stop_explains_where_evaluation_goes():
    with tf.Graph().as_default():
        step, _, train_op = _model()
        sess = ms.MonitoredTrainingSession(hooks=[hooks.StopAtStepHook(last_step=2)])
        _train(sess, train_op, step)
        with pytest.raises(RuntimeError, match="should_stop requested.*end\\(session\\).*new "
                                               "session"):
            sess.run(step)
        sess.close()
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="closed MonitoredSession.*end\\(session\\)"):
            sess.run(step)
        with pytest.raises(RuntimeError, match="already closed"):
            sess.close()


def test_context_manager_swallows_out_of_range_and_skips_end_on_errors():
    with tf.Graph().as_default():
        _model()
        counter = CountingHook()
        with ms.MonitoredSession(hooks=[counter]):
            raise tf.errors.OutOfRangeError(None, None, "input exhausted")
        assert counter.ended == 1
        counter = CountingHook()
        with pytest.raises(ValueError):
            with ms.MonitoredSession(hooks=[counter]):
                raise ValueError("user error")
        assert counter.ended == 0


def test_run_step_fn():
    with tf.Graph().as_default():
        c = tf.placeholder(tf.float32)
        v = tf.add(c, 4.0)
        w = tf.add(c, 0.5)
        counter = CountingHook()

        def step_fn(step_context):
            a = step_context.session.run(v, feed_dict={c: 0.5})   # without hooks
            if a <= 4.5:
                step_context.request_stop()
            return step_context.run_with_hooks(w, feed_dict={c: 0.1})

        with ms.MonitoredSession(hooks=[counter]) as sess:
            with pytest.raises(StopIteration):
                sess.run_step_fn(step_fn)
            with pytest.raises(ValueError, match="step_context"):
                sess.run_step_fn(lambda ctx: None)
        assert counter.runs == 0


def test_singular_monitored_session_gives_the_raw_session():
    with tf.Graph().as_default():
        step, w, train_op = _model()
        with ms.SingularMonitoredSession(hooks=[hooks.StopAtStepHook(last_step=3)]) as sess:
            _train(sess, train_op, step)
            assert sess.raw_session().run(w) == 3.0   # usable after should_stop
            assert isinstance(sess.raw_session(), tf.Session)


# -- Scaffold ------------------------------------------------------------------------------------
def test_scaffold_defaults_come_from_collections():
    with tf.Graph().as_default() as g:
        _model()
        loc = tf.Variable(1.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        mine = tf.no_op(name="my_init")
        tf.add_to_collection(tf.GraphKeys.INIT_OP, mine)
        scaffold = ms.Scaffold().finalize()
        assert g.finalized
        assert scaffold.init_op is mine
        assert g.get_collection(tf.GraphKeys.READY_OP) == [scaffold.ready_op]
        assert g.get_collection(tf.GraphKeys.LOCAL_INIT_OP) == [scaffold.local_init_op]
        assert g.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
        assert scaffold.summary_op is None
        g._unsafe_unfinalize()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(scaffold.ready_for_local_init_op).size == 0
            assert [n.decode() for n in sess.run(scaffold.ready_op)] == ["loc"]
            sess.run(scaffold.local_init_op)
            assert sess.run(scaffold.ready_op).size == 0 and sess.run(loc) == 1.0
        copy = ms.Scaffold(init_fn=lambda scaffold, sess: None, copy_from_scaffold=scaffold)
        assert copy.init_op is mine and copy.saver is scaffold.saver and copy.init_fn is not None
        with pytest.raises(TypeError, match="copy_from_scaffold"):
            ms.Scaffold(copy_from_scaffold=object())
        tf.add_to_collection(tf.GraphKeys.INIT_OP, tf.no_op())
        with pytest.raises(RuntimeError, match="More than one item.*init_op"):
            ms.Scaffold().finalize()


# -- recovery ------------------------------------------------------------------------------------
class _AbortOnceSession:
    """A session whose run raises AbortedError once, at its ``fail_at``-th call."""

    def __init__(self, sess, fail_at):
        self._sess, self._fail_at, self._calls = sess, fail_at, 0
        self.graph = sess.graph

    def run(self, *args, **kwargs):
        self._calls += 1
        if self._calls == self._fail_at:
            raise tf.errors.AbortedError(None, None, "ps task 0 restarted (fake)")
        return self._sess.run(*args, **kwargs)

    def close(self):
        self._sess.close()


class _FlakyCreator(ms.SessionCreator):
    """A chief creator whose first session fails once; the first creation fails with
    UnavailableError (a ps not up yet)."""

    def __init__(self, fail_at):
        self._inner = ms.ChiefSessionCreator()
        self.attempts = 0
        self._fail_at = fail_at

    def create_session(self):
        self.attempts += 1
        if self.attempts == 1:
            raise tf.errors.UnavailableError(None, None, "ps not up yet (fake)")
        sess = self._inner.create_session()
        return _AbortOnceSession(sess, self._fail_at) if self.attempts == 2 else sess


def test_aborted_run_recreates_the_session_transparently(caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        step, w, train_op = _model()
        counter = CountingHook()
        creator = _FlakyCreator(fail_at=3)
        with ms.MonitoredSession(creator, hooks=[counter]) as sess:
            results = [sess.run(w) for _ in range(4)]
        assert results == [0.0] * 4
        assert creator.attempts == 3                  # unavailable, then aborted once
        assert counter.created == 2 and counter.runs == 4
    recoveries = [r.getMessage() for r in caplog.records if "Recovering" in r.getMessage()]
    assert len(recoveries) == 1 and "AbortedError" in recoveries[0] and "#1" in recoveries[0]


def test_singular_monitored_session_does_not_recover():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)

        class AbortOnce(SessionRunHook):
            def before_run(self, run_context):
                raise tf.errors.AbortedError(None, None, "fake")

        with pytest.raises(tf.errors.AbortedError):
            with ms.SingularMonitoredSession(hooks=[AbortOnce()]) as sess:
                sess.run(w)


def test_chief_restores_from_checkpoint_dir_after_restart(tmp_path):
    ckpt = str(tmp_path)
    with tf.Graph().as_default():
        step, w, train_op = _model()
        with ms.MonitoredTrainingSession(
                checkpoint_dir=ckpt, hooks=[hooks.StopAtStepHook(last_step=3)]) as sess:
            _train(sess, train_op, step)
    with tf.Graph().as_default():                       # a restarted chief
        step, w, train_op = _model()
        with ms.MonitoredTrainingSession(
                checkpoint_dir=ckpt, hooks=[hooks.StopAtStepHook(num_steps=2)]) as sess:
            assert sess.run([step, w]) == [3, 3.0]
            _train(sess, train_op, step)
            assert sess._tf_sess().run([step, w]) == [5, 5.0]


def test_chief_recovery_restores_the_latest_checkpoint(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        step, w, train_op = _model()

        class AbortAtStep5(SessionRunHook):
            def begin(self):
                self.done = False

            def after_run(self, run_context, run_values):
                if not self.done and run_context.session.run(step) == 5:
                    self.done = True
                    raise tf.errors.AbortedError(None, None, "ps restarted (fake)")

        saver_hook = hooks.CheckpointSaverHook(str(tmp_path), save_steps=2,
                                               saver=None, scaffold=None)
        scaffold = ms.Scaffold()
        creator = ms.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=str(tmp_path))
        steps = []
        with ms.MonitoredSession(creator, hooks=[saver_hook, AbortAtStep5()]) as sess:
            for _ in range(6):
                sess.run(train_op)   # the 5th run aborts after its step; it is run again
                steps.append(sess._tf_sess().run(step))
            final_w = sess._tf_sess().run(w)
        # The new session restored step 4 (the last save; a fresh local session would restart
        # from 0), then the 5th run ran again.
        assert steps == [1, 2, 3, 4, 5, 6] and final_w == 6.0
    assert any("Restoring the model from" in r.getMessage() and "model.ckpt-4" in r.getMessage()
               for r in caplog.records)


# -- closing -------------------------------------------------------------------------------------
def test_close_is_prompt_with_a_thread_blocked_in_a_step():
    # Like a sync chief's queue runner waiting for gradients: the runner's thread is blocked in
    # a step that closing its own queue does not end. TF1 waits stop_grace_period_secs here.
    with tf.Graph().as_default():
        never_fed = FIFOQueue(1, [tf.float32], shapes=[[]])
        q = FIFOQueue(1, [tf.float32], shapes=[[]])
        add_queue_runner(QueueRunner(q, [q.enqueue([never_fed.dequeue()])]))
        x = tf.constant(1.0)
        sess = ms.MonitoredSession(stop_grace_period_secs=120)
        sess.run(x)
        time.sleep(0.1)                                  # the runner's thread is now blocked
        start = time.monotonic()
        sess.close()
        assert time.monotonic() - start < 5.0


# -- chief and non-chief on an in-process cluster ------------------------------------------------
@pytest.fixture
def cluster():
    with InProcessCluster({"ps": 1, "worker": 2}) as c:
        yield c


def _ps_model(initial):
    with tf.device("/job:ps/task:0"):
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(initial, name="w")
    train_op = tf.group(tf.assign_add(w, 1.0), tf.assign_add(step, 1))
    return step, w, train_op


def test_non_chief_waits_for_the_chief_and_never_initializes(cluster, monkeypatch):
    prepared_by = []
    real_prepare = SessionManager.prepare_session

    def prepare_session(self, *args, **kwargs):
        prepared_by.append(threading.current_thread().name)
        return real_prepare(self, *args, **kwargs)
    monkeypatch.setattr(SessionManager, "prepare_session", prepare_session)

    chief_ready = []
    errors = []

    def chief():
        try:
            time.sleep(0.3)                                    # the worker starts first
            with tf.Graph().as_default():
                step, w, train_op = _ps_model(np.float32(10.0))
                with ms.MonitoredTrainingSession(
                        master=cluster[("worker", 0)].target, is_chief=True,
                        hooks=[hooks.StopAtStepHook(last_step=30)]) as sess:
                    chief_ready.append(time.monotonic())
                    while not sess.should_stop():
                        sess.run(train_op)
                        time.sleep(0.005)
        except Exception as e:  # noqa: BLE001 - reported by the test below
            errors.append(e)

    t = threading.Thread(target=chief, name="chief")
    t.start()
    try:
        with tf.Graph().as_default():
            # A different initial value: if this worker initialized w, we would see 1000.
            step, w, train_op = _ps_model(np.float32(1000.0))
            with ms.MonitoredTrainingSession(
                    master=cluster[("worker", 1)].target, is_chief=False, max_wait_secs=30,
                    hooks=[hooks.StopAtStepHook(last_step=20)]) as sess:
                started = time.monotonic()
                first_w = sess.run(w)
                while not sess.should_stop():
                    sess.run(train_op)
    finally:
        t.join(timeout=60)
    assert not errors, errors
    assert 10.0 <= first_w < 1000.0
    assert started - chief_ready[0] < 1.5                    # TF1 would idle up to 30 s here
    assert prepared_by == ["chief"]                          # only the chief prepared a session
