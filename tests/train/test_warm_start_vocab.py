"""warm_start with VocabInfo: rows (or columns) remapped from an old vocabulary to a new one.

The expected values are TensorFlow 2.21's ``tf.compat.v1.train.warm_start`` on the same
checkpoint (emb = arange(10).reshape(5, 2), out = arange(15).reshape(3, 5)), the old vocabulary
a,b,c,d,e and the new one e,x,a,c; TF's backup initializer there was ``-tf.ones(shape)``."""

import numpy as np
import pytest

import zps as tf

EMB = np.arange(10, dtype=np.float32).reshape(5, 2)
OUT = np.arange(15, dtype=np.float32).reshape(3, 5)
MINUS_ONE = tf.constant_initializer(-1.0)


@pytest.fixture
def ckpt(tmp_path):
    (tmp_path / "old.txt").write_text("a\nb\nc\nd\ne\n")
    (tmp_path / "new.txt").write_text("e\nx\na\nc\n")
    with tf.Graph().as_default():
        tf.get_variable("emb", initializer=EMB)
        tf.get_variable("out", initializer=OUT)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    return path, str(tmp_path / "new.txt"), str(tmp_path / "old.txt")


def warm_started(path, name, shape, info, partitioner=None, prev=None, vars_to_warm_start=None):
    with tf.Graph().as_default():
        v = tf.get_variable(name, shape=shape, initializer=tf.ones_initializer(),
                            partitioner=partitioner)
        tf.train.warm_start(path, vars_to_warm_start, var_name_to_vocab_info={name: info},
                            var_name_to_prev_var_name={name: prev} if prev else None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if partitioner is None:
                return sess.run(v).tolist()
            return np.concatenate([sess.run(p) for p in v]).tolist()


def counting(shape, dtype=None, partition_info=None):
    """100, 101, ... in row-major order: shows which missing cell got which value."""
    return tf.constant(np.arange(np.prod(shape)).reshape(shape) + 100.0, dtype=dtype)


def test_embedding_rows_follow_their_entries_and_oov_rows_get_the_backup(ckpt):
    path, new, old = ckpt
    info = tf.train.VocabInfo(new, 4, 1, old, backup_initializer=MINUS_ONE)
    assert warm_started(path, "emb", [5, 2], info) == \
        [[8, 9], [-1, -1], [0, 1], [4, 5], [-1, -1]]


def test_without_a_backup_initializer_missing_rows_are_zeros(ckpt):
    path, new, old = ckpt
    info = tf.train.VocabInfo(new, 4, 1, old)
    assert warm_started(path, "emb", [5, 2], info, vars_to_warm_start=".*") == \
        [[8, 9], [0, 0], [0, 1], [4, 5], [0, 0]]


def test_missing_cells_take_the_backup_values_in_row_major_order(ckpt):
    path, new, old = ckpt
    info = tf.train.VocabInfo(new, 4, 1, old, backup_initializer=counting)
    assert warm_started(path, "emb", [5, 2], info) == \
        [[8, 9], [100, 101], [0, 1], [4, 5], [100, 101]]


def test_axis_1_remaps_an_output_layers_columns(ckpt):
    path, new, old = ckpt
    info = tf.train.VocabInfo(new, 4, 2, old, backup_initializer=MINUS_ONE, axis=1)
    assert warm_started(path, "out", [3, 6], info) == \
        [[4, -1, 0, 2, -1, -1], [9, -1, 5, 7, -1, -1], [14, -1, 10, 12, -1, -1]]
    info = info._replace(backup_initializer=counting)
    assert warm_started(path, "out", [3, 6], info) == \
        [[4, 100, 0, 2, 100, 101], [9, 101, 5, 7, 102, 103], [14, 102, 10, 12, 104, 105]]


@pytest.mark.parametrize("rows,oov,parts", [(5, 1, 2), (6, 2, 3)])
def test_a_partitioned_variable_is_remapped_part_by_part(ckpt, rows, oov, parts):
    path, new, old = ckpt
    info = tf.train.VocabInfo(new, 4, oov, old, backup_initializer=MINUS_ONE)
    got = warm_started(path, "emb", [rows, 2], info, tf.fixed_size_partitioner(parts))
    assert got == [[8, 9], [-1, -1], [0, 1], [4, 5]] + [[-1, -1]] * oov


def test_old_vocab_size_truncates_the_old_vocabulary(ckpt):
    path, new, old = ckpt
    info = tf.train.VocabInfo(new, 4, 1, old, old_vocab_size=3, backup_initializer=MINUS_ONE)
    assert warm_started(path, "emb", [5, 2], info) == \
        [[-1, -1], [-1, -1], [0, 1], [4, 5], [-1, -1]]
    info = tf.train.VocabInfo(new, 3, 1, old, old_vocab_size=3, backup_initializer=MINUS_ONE)
    assert warm_started(path, "new_emb", [4, 2], info, prev="emb") == \
        [[-1, -1], [-1, -1], [0, 1], [-1, -1]]


def test_vocab_mistakes_are_errors(ckpt):
    path, new, old = ckpt
    with pytest.raises(ValueError, match="does not fit an axis=0 remapping of emb"):
        warm_started(path, "emb", [6, 2], tf.train.VocabInfo(new, 4, 1, old))
    # A vocabulary shorter than new_vocab_size shows when the initializer reads it (as in TF).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="has 4 entries, fewer than new_vocab_offset 0 . num_new_vocab 9"):
        warm_started(path, "emb", [10, 2], tf.train.VocabInfo(new, 9, 1, old))
    with pytest.raises(ValueError, match="needs 5 columns"):
        warm_started(path, "out", [3, 6], tf.train.VocabInfo(new, 4, 1, old, axis=1))


def test_estimator_warm_start_settings_remap_vocabularies(ckpt, tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    path, new, old = ckpt

    def model_fn(features, labels, mode):
        emb = tf.get_variable("emb", [5, 2], initializer=tf.ones_initializer())
        loss = tf.reduce_sum(emb) * 0.0 + tf.reduce_sum(features["x"]) * 0.0
        step = tf.assign_add(tf.train.get_global_step(), 1)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step,
                                          predictions={"emb": tf.reshape(emb, [1, 10])})

    settings = tf.estimator.WarmStartSettings(
        path, vars_to_warm_start=None, var_name_to_vocab_info={
            "emb": tf.train.VocabInfo(new, 4, 1, old, backup_initializer=MINUS_ONE)})
    est = tf.estimator.Estimator(model_fn, str(tmp_path / "est"), warm_start_from=settings)
    est.train(lambda: {"x": tf.constant([[1.0]])}, steps=1)
    assert est.get_variable_value("emb").tolist() == \
        [[8, 9], [-1, -1], [0, 1], [4, 5], [-1, -1]]


def test_a_missing_vocabulary_file_is_not_found(tmp_path):
    with tf.Graph().as_default():
        tf.get_variable("emb", initializer=np.zeros((3, 2), np.float32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "ckpt"))
    with tf.Graph().as_default():
        tf.get_variable("emb", shape=[3, 2], initializer=tf.zeros_initializer())
        info = tf.train.VocabInfo(str(tmp_path / "new.txt"), 3, 0, str(tmp_path / "old.txt"))
        tf.train.warm_start(path, None, var_name_to_vocab_info={"emb": info})   # reads no file
        with tf.Session() as sess:   # the initializer reads the vocabularies (TF's timing)
            with pytest.raises(tf.errors.NotFoundError, match=r"new.txt; No such file"):
                sess.run(tf.global_variables_initializer())
