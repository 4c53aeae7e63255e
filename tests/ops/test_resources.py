"""zps.ops.resources (TF1's resources.py) and the Scaffold / SessionManager ready and init ops
with resources (hash embedding shards) in them."""

import numpy as np
import pytest

import zps as tf
from zps.contrib import embedding
from zps.ops import resources
from zps.ops.resources import tables_initializer


def _names(values):
    return [v.decode() if isinstance(v, bytes) else v for v in values.tolist()]


def test_report_and_initialize_resources():
    with tf.Graph().as_default():
        assert resources.shared_resources() == [] and resources.local_resources() == []
        empty = resources.report_uninitialized_resources()
        assert empty.dtype == tf.string
        table = embedding.get_hash_embedding("emb", 2, num_shards=2)
        shared = resources.shared_resources()
        assert [r.handle for r in shared] == [s._ref() for s in table.shards]
        assert [r.create for r in shared] == [s.initializer for s in table.shards]
        # a local resource (here: one more shard) is reported with the others by default
        local = embedding.get_hash_embedding("local", 2, trainable=False)
        graph = tf.get_default_graph()
        graph.get_collection_ref(resources.RESOURCES).remove(resources.shared_resources()[-1])
        resources.register_resource(local.shards[0]._ref(), local.shards[0].initializer,
                                    local.shards[0].is_initialized(), is_shared=False)
        report_all = resources.report_uninitialized_resources()
        report_shared = resources.report_uninitialized_resources(resources.shared_resources())
        init_shared = resources.initialize_resources(resources.shared_resources())
        init_local = resources.initialize_resources(resources.local_resources())
        assert resources.initialize_resources([]).type == "NoOp"
        with tf.Session() as sess:
            assert sess.run(empty).shape == (0,)
            assert _names(sess.run(report_all)) == ["emb/part_0:0", "emb/part_1:0", "local/part_0:0"]
            sess.run(init_shared)
            assert _names(sess.run(report_all)) == ["local/part_0:0"]
            assert _names(sess.run(report_shared)) == []
            sess.run(init_local)
            assert _names(sess.run(report_all)) == []


def test_tables_initializer_initializes_hash_embeddings_and_keeps_their_rows():
    with tf.Graph().as_default():
        assert tables_initializer().type == "NoOp"
        table = embedding.get_hash_embedding("emb", 2, initializer=1.0)
        rows = embedding.embedding_lookup(table, tf.constant([5], tf.int64))
        train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(rows))
        init = tables_initializer()
        assert table.shards[0].initializer in init.control_inputs
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="uninitialized hash table shard emb/part_0"):
                sess.run(train)
            sess.run(init)
            sess.run(train)
            sess.run(init)        # a no-op now: it never drops rows
            sess.run(table.initializer)
            np.testing.assert_array_equal(sess.run(rows), [[0.0, 0.0]])


def _model():
    w = tf.Variable(1.0, name="w")
    table = embedding.get_hash_embedding("emb", 2, num_shards=2, initializer=1.0)
    rows = embedding.embedding_lookup(table, tf.constant([3, 2**40], tf.int64))
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(rows) + tf.square(w),
                                                            global_step=step)
    return w, table, rows, train


def test_scaffold_default_ops_include_shared_resources():
    with tf.Graph().as_default():
        w, table, rows, train = _model()
        scaffold = tf.train.Scaffold().finalize()
        with tf.Session() as sess:
            assert _names(sess.run(scaffold.ready_op)) == [
                "w", "global_step", "emb/part_0:0", "emb/part_1:0"]
            assert _names(sess.run(scaffold.ready_for_local_init_op)) == [
                "w", "global_step", "emb/part_0:0", "emb/part_1:0"]
            sess.run(w.initializer)
            assert _names(sess.run(scaffold.ready_op)) == [
                "global_step", "emb/part_0:0", "emb/part_1:0"]
            sess.run(scaffold.init_op)
            assert _names(sess.run(scaffold.ready_op)) == []
            sess.run(scaffold.local_init_op)
            sess.run(train)
            np.testing.assert_array_equal(sess.run(rows), [[0.5, 0.5], [0.5, 0.5]])


def test_session_manager_waits_for_uninitialized_tables_and_restores_them(tmp_path):
    with tf.Graph().as_default():
        w, table, rows, train = _model()
        scaffold = tf.train.Scaffold().finalize()
        sm = tf.train.SessionManager(ready_op=scaffold.ready_op,
                                     ready_for_local_init_op=scaffold.ready_for_local_init_op,
                                     local_init_op=scaffold.local_init_op, recovery_wait_secs=0.1)
        sess = sm.prepare_session("", init_op=scaffold.init_op)
        sess.run(train)
        scaffold.saver.save(sess, str(tmp_path / "model"), global_step=1)
        sess.run(train)
        sess.close()
        # A new local session is a fresh "ps": every table shard is uninitialized again.
        with pytest.raises(tf.errors.DeadlineExceededError, match="emb/part_0:0, emb/part_1:0"):
            sm.wait_for_session("", max_wait_secs=0.3)
        sess = sm.prepare_session("", init_op=scaffold.init_op, saver=scaffold.saver,
                                  checkpoint_dir=str(tmp_path))
        np.testing.assert_array_equal(sess.run(rows), [[0.5, 0.5], [0.5, 0.5]])   # the checkpoint's
        assert sess.run(tf.train.get_global_step()) == 1
        sess.close()


def test_monitored_training_session_initializes_and_restores_tables(tmp_path):
    with tf.Graph().as_default():
        w, table, rows, train = _model()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_checkpoint_steps=2,
                                               log_step_count_steps=0) as sess:
            for _ in range(2):
                sess.run(train)
            saved = sess.run(rows)
    np.testing.assert_array_equal(saved, [[0.0, 0.0], [0.0, 0.0]])
    with tf.Graph().as_default():
        w, table, rows, train = _model()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_checkpoint_steps=None,
                                               save_checkpoint_secs=None,
                                               log_step_count_steps=0) as sess:
            np.testing.assert_array_equal(sess.run(rows), saved)
            sess.run(train)
            np.testing.assert_array_equal(sess.run(rows), [[-0.5, -0.5], [-0.5, -0.5]])
