"""SessionManager: prepare (restore or initialize), recover, and wait for a model made ready elsewhere."""

import logging
import os
import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import free_ports
from zps.train.saver import Saver
from zps.train.session_manager import SessionManager


@pytest.fixture
def server():
    (port,) = free_ports(1)
    s = tf.train.Server({"worker": ["127.0.0.1:%d" % port]}, job_name="worker", task_index=0)
    yield s
    s.stop()


def _manager(**kwargs):
    return SessionManager(ready_op=tf.report_uninitialized_variables(), **kwargs)


def test_prepare_session_runs_init_op_and_init_fn():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        v = tf.Variable(np.zeros(2, np.float32), name="v")
        w = tf.Variable(0.0, name="w")
        init = tf.group(v.initializer, tf.assign(w, p))
        seen = []
        sess = _manager().prepare_session("", init_op=init, init_feed_dict={p: 5.0},
                                          init_fn=lambda s: seen.append(s.run(w)))
        assert seen == [5.0]
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0])
        sess.close()


def test_prepare_session_errors_name_what_is_missing():
    with tf.Graph().as_default():
        tf.Variable(1.0, name="forgotten")
        tf.Variable(2.0, name="done")
        with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
            _manager().prepare_session("")
        partial = tf.global_variables()[1].initializer
        with pytest.raises(RuntimeError, match="not make model ready.*Variables not initialized: "
                                               "forgotten"):
            _manager().prepare_session("", init_op=partial)
    with pytest.raises(ValueError, match="must also pass a local_init_op"):
        SessionManager(ready_for_local_init_op=tf.constant([], dtype=tf.string))


def test_local_init_op_runs_once_globals_are_ready():
    with tf.Graph().as_default():
        g = tf.Variable(3.0, name="g")
        loc = tf.Variable(0.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        local_init = tf.assign(loc, g * 2.0)
        sm = SessionManager(local_init_op=local_init,
                            ready_op=tf.report_uninitialized_variables(),
                            ready_for_local_init_op=tf.report_uninitialized_variables(
                                tf.global_variables()))
        sess = sm.prepare_session("", init_op=g.initializer)
        assert sess.run(loc) == 6.0
        sess.close()


def _save_checkpoint(directory, value, step):
    with tf.Graph().as_default():
        v = tf.Variable(value, name="v")
        saver = Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            return saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=step)


def test_prepare_session_restores_the_latest_checkpoint(tmp_path):
    first_path = _save_checkpoint(str(tmp_path), 1.0, 1)
    path = _save_checkpoint(str(tmp_path), 7.0, 2)
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        saver = Saver()
        init_fn_calls = []
        sess = _manager().prepare_session("", init_op=v.initializer, saver=saver,
                                          checkpoint_dir=str(tmp_path),
                                          init_fn=init_fn_calls.append)
        assert sess.run(v) == 7.0 and init_fn_calls == []   # restored: not initialized
        sess.close()
        first = _manager().prepare_session(
            "", saver=saver, checkpoint_filename_with_path=first_path)
        assert first.run(v) == 1.0
        first.close()
        with pytest.raises(ValueError, match="both checkpoint_dir and checkpoint_filename"):
            _manager().prepare_session("", saver=saver, checkpoint_dir=str(tmp_path),
                                       checkpoint_filename_with_path=path)


def test_recover_session(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        saver = Saver()
        sess, ok = _manager().recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
        assert not ok
        sess.close()
    _save_checkpoint(str(tmp_path), 4.0, 3)
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        saver = Saver()
        sess, ok = _manager().recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
        assert ok and sess.run(v) == 4.0
        sess.close()


def test_wait_for_session_returns_once_another_session_initialized(server, caplog):
    caplog.set_level(logging.INFO, logger="zps.train")
    with tf.Graph().as_default():
        v = tf.Variable(5.0, name="slow_var")
        sm = _manager()
        initialized_at = []

        def chief():
            time.sleep(0.3)
            with tf.Session(server.target, graph=v.graph) as sess:   # graphs are per thread
                sess.run(v.initializer)
            initialized_at.append(time.monotonic())

        t = threading.Thread(target=chief)
        t.start()
        try:
            sess = sm.wait_for_session(server.target, max_wait_secs=30)
        finally:
            t.join()
        ready_at = time.monotonic()
        assert sess.run(v) == 5.0
        sess.close()
    assert ready_at - initialized_at[0] < 1.5      # polled promptly (TF1: every 30 s)
    waiting = [r.getMessage() for r in caplog.records if "Waiting for the model" in r.getMessage()]
    assert waiting and "Variables not initialized: slow_var" in waiting[0]


def test_wait_for_session_deadline_names_what_is_missing(server):
    with tf.Graph().as_default():
        tf.Variable(1.0, name="never_initialized")
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError,
                           match="after waiting 0.3 secs.*never_initialized.*chief"):
            _manager().wait_for_session(server.target, max_wait_secs=0.3)
        assert time.monotonic() - start < 2.0


def test_prepare_session_can_wait_for_a_checkpoint(tmp_path):
    writer = threading.Thread(target=lambda: (time.sleep(0.3), _save_checkpoint(str(tmp_path), 9.0, 1)))
    writer.start()
    try:
        with tf.Graph().as_default():
            v = tf.Variable(0.0, name="v")
            start = time.monotonic()
            sess = _manager().prepare_session("", init_op=v.initializer, saver=Saver(),
                                              checkpoint_dir=str(tmp_path),
                                              wait_for_checkpoint=True, max_wait_secs=10)
            assert sess.run(v) == 9.0 and time.monotonic() - start < 2.0
            sess.close()
    finally:
        writer.join()
