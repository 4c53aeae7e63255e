"""tf.train additions: checkpoints_iterator, match_filenames_once, maybe_batch*,
basic_train_loop and warm_start."""

import os
import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.contrib import training


def _save(directory, step, value):
    with tf.Graph().as_default():
        v = tf.Variable(value, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            return tf.train.Saver().save(sess, os.path.join(directory, "model.ckpt"),
                                         global_step=step)


def test_wait_for_new_checkpoint_and_timeout(tmp_path):
    d = str(tmp_path)
    start = time.time()
    assert training.wait_for_new_checkpoint(d, seconds_to_sleep=0.05, timeout=0.2) is None
    assert 0.1 <= time.time() - start < 5
    first = _save(d, 1, 1.0)
    assert training.wait_for_new_checkpoint(d, timeout=0) == first
    assert training.wait_for_new_checkpoint(d, last_checkpoint=first, seconds_to_sleep=0.05,
                                            timeout=0.2) is None


def test_checkpoints_iterator_yields_each_new_checkpoint_then_times_out(tmp_path):
    d = str(tmp_path)
    _save(d, 1, 1.0)

    def writer():
        time.sleep(0.3)
        _save(d, 2, 2.0)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        got = [os.path.basename(p) for p in tf.train.checkpoints_iterator(d, timeout=3)]
    finally:
        thread.join(timeout=10)
    # Ends 3 s after the second one: the evaluator loop of a TF1 job.
    assert got == ["model.ckpt-1", "model.ckpt-2"]
    assert training.checkpoints_iterator is tf.train.checkpoints_iterator


def test_checkpoints_iterator_timeout_fn_decides_when_to_stop(tmp_path):
    d = str(tmp_path)
    calls = []

    def timeout_fn():
        calls.append(time.time())
        if len(calls) == 2:
            _save(d, 5, 5.0)
        return len(calls) >= 4
    got = [os.path.basename(p) for p in tf.train.checkpoints_iterator(
        d, timeout=0, timeout_fn=timeout_fn)]
    # TF asks timeout_fn after each timeout and after each checkpoint.
    assert got == ["model.ckpt-5"] and len(calls) == 4


def test_checkpoints_iterator_min_interval(tmp_path):
    d = str(tmp_path)
    _save(d, 1, 1.0)
    it = tf.train.checkpoints_iterator(d, min_interval_secs=0.4, timeout=0)
    start = time.time()
    assert os.path.basename(next(it)) == "model.ckpt-1"
    _save(d, 2, 2.0)
    assert os.path.basename(next(it)) == "model.ckpt-2"
    assert time.time() - start >= 0.4
    assert list(it) == []


def test_match_filenames_once_is_a_local_variable(tmp_path):
    for name in ("b.csv", "a.csv", "c.txt"):
        (tmp_path / name).write_text("x")
    with tf.Graph().as_default():
        files = tf.train.match_filenames_once(str(tmp_path / "*.csv"))
        both = tf.train.match_filenames_once([str(tmp_path / "c*"), str(tmp_path / "a*")])
        none = tf.train.match_filenames_once(str(tmp_path / "*.none"))
        assert files.op.name == "matching_filenames"
        assert tf.local_variables() == [files, both, none] and tf.global_variables() == []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert [os.path.basename(f) for f in sess.run(files)] == [b"a.csv", b"b.csv"]
            assert [os.path.basename(f) for f in sess.run(both)] == [b"a.csv", b"c.txt"]
            assert sess.run(none).shape == (0,)
            (tmp_path / "d.csv").write_text("x")
            assert len(sess.run(files)) == 2   # matched once, at initialization


def _drain(tensor, n):
    out = []   # OutOfRangeError ends the MonitoredSession's block (it swallows it)
    with tf.train.MonitoredSession() as sess:
        while not sess.should_stop() and len(out) < n:
            out.append(sess.run(tensor))
    return out


def test_maybe_batch_keeps_examples_by_scalar_or_vector():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(8), num_epochs=1)
        b = tf.train.maybe_batch([x], x % 3 > 0, 3, enqueue_many=True,
                                 allow_smaller_final_batch=True)
        got = _drain(b, 10)
        assert [v.tolist() for v in got] == [[1, 2, 4], [5, 7]]
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.constant([0, 1, 2, 3, 4, 5]), num_epochs=1)
        one = tf.train.input_producer(x, shuffle=False).dequeue()
        b = tf.train.maybe_batch({"x": one}, tf.equal(one % 2, 0), 2,
                                 allow_smaller_final_batch=True)
        got = _drain(b, 10)
        assert [v["x"].tolist() for v in got] == [[0, 2], [4]]
    with tf.Graph().as_default():
        x = tf.constant([1, 2])
        with pytest.raises(ValueError, match="cannot be a vector when `enqueue_many=False`"):
            tf.train.maybe_batch([x], [True, False], 2)
        with pytest.raises(ValueError, match="0 or 1 dimensions"):
            tf.train.maybe_batch([x], [[True]], 2, enqueue_many=True)
        never = tf.train.maybe_batch([x], False, 2, enqueue_many=True)   # a constant: no enqueue
        assert never.get_shape().as_list() == [2]


def test_maybe_shuffle_batch_and_joins():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(10), num_epochs=1)
        b = tf.train.maybe_shuffle_batch([x], 2, capacity=10, min_after_dequeue=2,
                                         keep_input=x >= 5, enqueue_many=True, seed=3,
                                         allow_smaller_final_batch=True)
        got = np.concatenate(_drain(b, 10)).tolist()
        assert sorted(got) == [5, 6, 7, 8, 9]
    with tf.Graph().as_default():
        a = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=1)
        c = tf.train.limit_epochs(tf.constant([10, 20, 30]), num_epochs=1)
        # One keep_input for every input, as TF's.
        b = tf.train.maybe_batch_join([[a], [c]], [True, False, True], 10, enqueue_many=True,
                                      allow_smaller_final_batch=True)
        assert sorted(np.concatenate(_drain(b, 10)).tolist()) == [1, 3, 10, 30]
    with tf.Graph().as_default():
        a = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=1)
        c = tf.train.limit_epochs(tf.constant([4, 5, 6]), num_epochs=1)
        keep = tf.placeholder_with_default(True, [])   # not constant: a cond per enqueue
        b = tf.train.maybe_shuffle_batch_join([[a], [c]], 10, 20, 1, keep,
                                              enqueue_many=True, allow_smaller_final_batch=True)
        assert sorted(np.concatenate(_drain(b, 10)).tolist()) == [1, 2, 3, 4, 5, 6]


def test_basic_train_loop_retries_an_aborted_session(tmp_path):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        inc = tf.assign_add(step, 1)
        sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
        seen, sessions = [], []

        def train_step(sess, limit, abort_at):
            if sess not in sessions:
                sessions.append(sess)
            seen.append(int(sess.run(inc)))
            if seen[-1] == abort_at and len(sessions) == 1:
                raise tf.errors.AbortedError(None, None, "a ps restarted")
            if seen[-1] >= limit:
                sv.request_stop()
        tf.train.basic_train_loop(sv, train_step, args=(5,), kwargs={"abort_at": 2})
        assert seen[:2] == [1, 2] and seen[-1] == 5 and len(sessions) == 2
        with pytest.raises(ValueError, match="boom"):
            tf.train.basic_train_loop(sv, lambda sess: (_ for _ in ()).throw(ValueError("boom")))


def _checkpoint(tmp_path):
    with tf.Graph().as_default():
        tf.get_variable("emb", initializer=np.arange(12, dtype=np.float32).reshape(6, 2),
                        partitioner=tf.fixed_size_partitioner(3))
        tf.get_variable("dense/w", initializer=[1.0, 2.0])
        tf.get_variable("dense/b", initializer=[3.0])
        tf.get_variable("counter", initializer=7, trainable=False)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver().save(sess, str(tmp_path / "model"))


def test_warm_start_by_regex_list_and_renames_with_partitions(tmp_path):
    path = _checkpoint(tmp_path)
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", shape=[6, 2], initializer=tf.zeros_initializer(),
                              partitioner=tf.fixed_size_partitioner(2))
        w = tf.get_variable("dense/w", shape=[2], initializer=tf.zeros_initializer())
        b = tf.get_variable("dense/b", shape=[1], initializer=tf.zeros_initializer())
        counter = tf.get_variable("counter", initializer=0, trainable=False)
        tf.train.warm_start(path, vars_to_warm_start="emb|dense/w")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(emb.as_tensor()).tolist() == np.arange(12).reshape(6, 2).tolist()
            assert sess.run(w).tolist() == [1.0, 2.0]
            assert sess.run(b).tolist() == [0.0] and sess.run(counter) == 0
    with tf.Graph().as_default():   # a list of regexes reaches non-trainable variables
        counter = tf.get_variable("counter", initializer=0, trainable=False)
        tf.get_variable("other", initializer=[0.0])
        tf.train.warm_start(str(tmp_path), vars_to_warm_start=["counter"])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(counter) == 7
    with tf.Graph().as_default():   # Variables, renamed; two from one tensor
        a = tf.get_variable("new/a", shape=[2], initializer=tf.zeros_initializer())
        c = tf.get_variable("new/c", shape=[2], initializer=tf.zeros_initializer())
        tf.train.warm_start(path, vars_to_warm_start=[a, c],
                            var_name_to_prev_var_name={"new/a": "dense/w", "new/c": "dense/w"})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(a).tolist() == sess.run(c).tolist() == [1.0, 2.0]


def test_warm_start_errors(tmp_path):
    path = _checkpoint(tmp_path)
    with tf.Graph().as_default():
        tf.get_variable("dense/w", shape=[2], initializer=tf.zeros_initializer())
        tf.get_variable("missing", shape=[2], initializer=tf.zeros_initializer())
        with pytest.raises(ValueError, match="var_name_to_prev_var_name that were not used"):
            tf.train.warm_start(path, "dense", var_name_to_prev_var_name={"dense/q": "x"})
        with pytest.raises(ValueError, match="missing"):
            tf.train.warm_start(path, "missing")
        with pytest.raises(ValueError, match="must be all `Variable` or all `str`"):
            tf.train.warm_start(path, ["dense", 3])
        info = tf.train.VocabInfo("new.txt", 5, 1, "old.txt")
        assert (info.old_vocab_size, info.backup_initializer, info.axis) == (-1, None, 0)
        with pytest.raises(ValueError, match="axis"):
            tf.train.VocabInfo("new.txt", 5, 1, "old.txt", axis=2)
        with pytest.raises(ValueError, match="vocabulary remapping needs a 2-d tensor, but "
                                             "dense/w"):
            tf.train.warm_start(path, None, var_name_to_vocab_info={"dense/w": info})
    with tf.Graph().as_default():
        tf.get_variable("dense/w", shape=[3], initializer=tf.zeros_initializer())
        with pytest.raises(ValueError, match="Shape of variable dense/w"):
            tf.train.warm_start(path)
