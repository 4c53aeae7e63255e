"""Vocabulary-remapped loading from checkpoints: the GenerateVocabRemapping and
LoadAndRemapMatrix ops, tf.contrib.framework's load_*_initializer functions and warm_start with
a VocabInfo built on them (the files are read when the initializer runs, where the variable
lives; the graph stays small).

The expected values are TensorFlow 2.21's (``gen_checkpoint_ops`` and
``training/checkpoint_ops.py``, which TF 1.15's ``tf.contrib.framework`` exported) on the same
checkpoint: w = arange(24).reshape(6, 4), rows a..f, columns good,better,best,fine, the new
rows f,x,b,a,y and the new columns best,good,bad; the backup initializer gave 100, 101, ...
"""

import os
import pathlib

import msgpack
import numpy as np
import pytest

import zps as tf
from zps.framework import checkpoint_format
from zps.ops import checkpoint_ops
from zps.ops.partitioned_variables import _PartitionInfo
from zps.testing.cluster import LocalCluster

W = np.arange(24, dtype=np.float32).reshape(6, 4)
TF_CKPT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tf_checkpoint"


def counting(shape, dtype=None, partition_info=None):
    """100, 101, ... in row-major order: shows which missing cell got which value."""
    return tf.constant(np.arange(np.prod(shape)).reshape(shape) + 100.0, dtype=dtype)


class Files:
    def __init__(self, d):
        self.dir = d
        self.old_rows = self.write("old_rows.txt", "a\nb\nc\nd\ne\nf\n")
        self.new_rows = self.write("new_rows.txt", "f\nx\nb\na\ny\n")
        self.old_cols = self.write("old_cols.txt", "good\nbetter\nbest\nfine\n")
        self.new_cols = self.write("new_cols.txt", "best\ngood\nbad\n")

    def write(self, name, text):
        (self.dir / name).write_text(text)
        return str(self.dir / name)


@pytest.fixture
def ckpt(tmp_path):
    files = Files(tmp_path)
    with tf.Graph().as_default():
        tf.get_variable("w", initializer=W)
        tf.get_variable("b", initializer=np.arange(6, dtype=np.float32) * 10)
        tf.get_variable("b2", initializer=(np.arange(6, dtype=np.float32) * 10).reshape(6, 1))
        tf.get_variable("wp", initializer=W, partitioner=tf.fixed_size_partitioner(4))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            files.path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    return files


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


def _initialized(shape, init, parts=None):
    with tf.Graph().as_default():
        v = tf.get_variable("v", shape=shape, initializer=init,
                            partitioner=tf.fixed_size_partitioner(parts) if parts else None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return (np.concatenate([sess.run(p) for p in v]) if parts else sess.run(v)).tolist()


# -- the ops ------------------------------------------------------------------------------------
def test_generate_vocab_remapping_matches_tensorflow(ckpt):
    def remap(new, old, offset, num, **kw):
        with tf.Graph().as_default():
            ids, present = checkpoint_ops.generate_vocab_remapping(new, old, offset, num, **kw)
            assert ids.dtype == tf.int64 and present.dtype == tf.int32
            assert ids.get_shape().as_list() == [num]
            got = _run([ids, present])
            return got[0].tolist(), int(got[1])

    new, old = ckpt.new_rows, ckpt.old_rows
    assert remap(new, old, 0, 5) == ([5, -1, 1, 0, -1], 3)
    assert remap(new, old, 1, 3) == ([-1, 1, 0], 2)
    assert remap(new, old, 0, 5, old_vocab_size=2) == ([-1, -1, 1, 0, -1], 2)
    assert remap(new, old, 0, 2) == ([5, -1], 1)
    assert remap(new, old, 0, 0) == ([], 0)
    no_eol = ckpt.write("no_eol.txt", "b\r\nb\r\na")   # CRLF, no final newline, repeated entries
    assert remap(no_eol, old, 0, 3) == ([1, 1, 0], 3)


def test_generate_vocab_remapping_errors_are_tensorflows_when_it_runs(ckpt):
    def run(new, old, num, **kw):
        with tf.Graph().as_default():
            out = checkpoint_ops.generate_vocab_remapping(new, old, 0, num, **kw)
            _run(out)

    new, old = ckpt.new_rows, ckpt.old_rows
    with pytest.raises(tf.errors.InvalidArgumentError, match="has 5 entries, fewer than "
                                                             "new_vocab_offset 0 . num_new_vocab 9"):
        run(new, old, 9)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Invalid vocab_size in .*old_rows.txt: expected 9 but got 6"):
        run(new, old, 5, old_vocab_size=9)
    with pytest.raises(tf.errors.FailedPreconditionError,
                       match="Key a has 0 and trying to add value 2"):
        run(new, ckpt.write("dup.txt", "a\nb\na\n"), 5)
    blank = ckpt.write("blank.txt", "e\n\na\n")
    for args in [(blank, old, 3), (new, blank, 3)]:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="blank.txt: empty line found at position 2"):
            run(*args)
    with pytest.raises(tf.errors.NotFoundError, match=r"nope.txt; No such file or directory"):
        run(str(ckpt.dir / "nope.txt"), old, 3)
    with pytest.raises(ValueError, match="must be >= 0"):
        run(new, old, -1)


def _lrm(path, rows, cols, init, num_rows, num_cols, name="w", **kw):
    with tf.Graph().as_default():
        out = checkpoint_ops.load_and_remap_matrix(
            path, name, np.array(rows, np.int64), np.array(cols, np.int64),
            np.array(init, np.float32), num_rows, num_cols, **kw)
        assert out.get_shape().as_list() == [num_rows, num_cols] and out.dtype == tf.float32
        return _run(out).tolist()


@pytest.mark.parametrize("name", ["w", "wp"])   # saved whole, and in 4 slices
@pytest.mark.parametrize("max_rows", [-1, 1, 2, 4])
def test_load_and_remap_matrix_matches_tensorflow(ckpt, name, max_rows):
    def lrm(*args):
        return _lrm(ckpt.path, *args, name=name, max_rows_in_memory=max_rows)

    assert lrm([5, -1, 0, 3], [], [[-1], [-2], [-3], [-4]], 4, 4) == \
        [[20, 21, 22, 23], [-1, -2, -3, -4], [0, 1, 2, 3], [12, 13, 14, 15]]
    assert lrm([5, -1, 0], [2, -1, 0], 100 + np.arange(5.0), 3, 3) == \
        [[22, 100, 20], [101, 102, 103], [2, 104, 0]]
    assert lrm([4, -1, 0, 2, 3], [], [-1] * 4, 5, 4) == \
        [[16, 17, 18, 19], [-1, -1, -1, -1], [0, 1, 2, 3], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert lrm([-1, -1], [1, 0], [1, 2, 3, 4], 2, 2) == [[1, 2], [3, 4]]   # nothing read


def test_load_and_remap_matrix_errors_are_tensorflows_when_it_runs(ckpt):
    path, empty = ckpt.path, np.zeros([0, 1], np.float32)
    cases = [
        ((path, [5, -1, 0, 3], [], [[-1]] * 5, 4, 4), tf.errors.InvalidArgumentError,
         "initializing_values contained 5 elements, but 4 elements were missing"),
        ((path, [5, -1, 0, 3], [], [[-1]] * 3, 4, 4), tf.errors.InvalidArgumentError,
         "initializing_values contained 3 elements, but 4"),
        ((path, [0], [], empty, 1, 3), tf.errors.InvalidArgumentError,
         r"Tensor w has shape \[6, 4\], where the size of its 2nd dimension is 4 instead of "
         "being equal to num_cols=3"),
        ((path, [0, 1], [], empty, 3, 4), tf.errors.InvalidArgumentError,
         "Size of row_remapping is 2 instead of being equal to num_rows=3"),
        ((path, [0], [0, 1], empty, 1, 3), tf.errors.InvalidArgumentError,
         "Provided col_remapping, but its size is 2 instead of being equal to num_cols=3"),
        ((path, [1, 1, 3], [], empty, 3, 4), tf.errors.UnimplementedError,
         "Old ID 1 is mapped to both new ID 0 and 1, which is not supported."),
        ((path, [6, 0], [], empty, 2, 4), tf.errors.InvalidArgumentError,
         "row_remapping holds old id 6, past the 6 rows of w"),
        ((path, [0], [4, 0], empty, 1, 2), tf.errors.InvalidArgumentError,
         "col_remapping holds old id 4, past the 4 cols of w"),
        ((str(ckpt.dir / "nockpt"), [0], [], empty, 1, 4), tf.errors.NotFoundError,
         "nockpt"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            _lrm(*args)
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found in checkpoint"):
        _lrm(path, [0], [], empty, 1, 4, name="nope")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Tensor b has shape \[6\] of invalid rank 1 instead of expected "
                             "shape of rank 2"):
        _lrm(path, [0], [], empty, 1, 1, name="b")


# -- the initializers ---------------------------------------------------------------------------
def _full(ckpt, **kw):
    args = dict(ckpt_path=ckpt.path, old_tensor_name="w", new_row_vocab_size=5,
                new_col_vocab_size=3, old_row_vocab_file=ckpt.old_rows,
                new_row_vocab_file=ckpt.new_rows, old_col_vocab_file=ckpt.old_cols,
                new_col_vocab_file=ckpt.new_cols, num_row_oov_buckets=2, num_col_oov_buckets=1,
                initializer=counting)
    args.update(kw)
    return args


FULL = [[22, 20, 100, 100], [101, 102, 103, 101], [6, 4, 104, 102], [2, 0, 105, 103],
        [106, 107, 108, 104], [100, 101, 102, 105], [103, 104, 105, 106]]


@pytest.mark.parametrize("parts,kw,expected", [
    (None, {}, FULL),
    (None, {"max_rows_in_memory": 2}, FULL),
    (3, {}, [[22, 20, 100, 100], [101, 102, 103, 101], [6, 4, 104, 102], [2, 0, 100, 100],
             [101, 102, 103, 101], [100, 101, 102, 100], [103, 104, 105, 101]]),
    (2, {}, [[22, 20, 100, 100], [101, 102, 103, 101], [6, 4, 104, 102], [2, 0, 105, 103],
             [100, 101, 102, 100], [100, 101, 102, 101], [103, 104, 105, 102]]),
    (None, {"initializer": None}, [[22, 20, 0, 0], [0, 0, 0, 0], [6, 4, 0, 0], [2, 0, 0, 0],
                                   [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]),
    (None, {"old_tensor_name": "wp"}, FULL),   # saved in 4 slices
])
def test_load_and_remap_matrix_initializer_matches_tensorflow(ckpt, parts, kw, expected):
    init = tf.contrib.framework.load_and_remap_matrix_initializer(**_full(ckpt, **kw))
    assert _initialized([7, 4], init, parts) == expected


def test_rows_or_columns_alone_and_old_vocab_size_match_tensorflow(ckpt):
    init = tf.contrib.framework.load_and_remap_matrix_initializer
    rows = init(ckpt.path, "w", 5, 4, old_row_vocab_size=4, old_row_vocab_file=ckpt.old_rows,
                new_row_vocab_file=ckpt.new_rows, initializer=counting)
    assert _initialized([5, 4], rows) == \
        [[100, 101, 102, 103], [104, 105, 106, 107], [4, 5, 6, 7], [0, 1, 2, 3],
         [108, 109, 110, 111]]
    cols = init(ckpt.path, "w", 6, 3, old_col_vocab_file=ckpt.old_cols,
                new_col_vocab_file=ckpt.new_cols, num_col_oov_buckets=1, initializer=counting)
    assert _initialized([6, 4], cols) == \
        [[2, 0, 100, 100], [6, 4, 101, 101], [10, 8, 102, 102], [14, 12, 103, 103],
         [18, 16, 104, 104], [22, 20, 105, 105]]
    assert _initialized([6, 4], cols, parts=2) == \
        [[2, 0, 100, 100], [6, 4, 101, 101], [10, 8, 102, 102], [14, 12, 100, 100],
         [18, 16, 101, 101], [22, 20, 102, 102]]
    fewer = init(ckpt.path, "w", 4, 3, old_col_vocab_file=ckpt.old_cols,
                 new_col_vocab_file=ckpt.new_cols, initializer=counting)
    assert _initialized([4, 3], fewer) == [[2, 0, 100], [6, 4, 101], [10, 8, 102], [14, 12, 103]]


def test_embedding_bias_and_slot_initializers_match_tensorflow(ckpt):
    fw = tf.contrib.framework
    emb = fw.load_embedding_initializer(ckpt.path, "w", 5, 4, ckpt.old_rows, ckpt.new_rows,
                                        num_oov_buckets=1, initializer=counting)
    assert _initialized([6, 4], emb) == \
        [[20, 21, 22, 23], [100, 101, 102, 103], [4, 5, 6, 7], [0, 1, 2, 3],
         [104, 105, 106, 107], [100, 101, 102, 103]]
    emb = fw.load_embedding_initializer(ckpt.path, "w", 5, 4, ckpt.old_rows, ckpt.new_rows,
                                        old_vocab_size=2, initializer=counting)
    assert _initialized([5, 4], emb) == \
        [[100, 101, 102, 103], [104, 105, 106, 107], [4, 5, 6, 7], [0, 1, 2, 3],
         [108, 109, 110, 111]]
    bias = fw.load_linear_multiclass_bias_initializer(ckpt.path, "b2", 5, ckpt.old_rows,
                                                      ckpt.new_rows, num_class_oov_buckets=1)
    assert _initialized([6, 1], bias) == [[50], [0], [10], [0], [0], [0]]
    bias = fw.load_linear_multiclass_bias_initializer(ckpt.path, "b2", 5, ckpt.old_rows,
                                                      ckpt.new_rows, initializer=counting)
    assert _initialized([5, 1], bias) == [[50], [100], [10], [0], [101]]
    slot_args = {k: v for k, v in _full(ckpt).items() if k not in ("ckpt_path", "old_tensor_name")}
    slot = fw.load_variable_slot_initializer(
        ckpt.path, "w", _PartitionInfo(full_shape=[7, 4], var_offset=[3, 0]), **slot_args)
    assert _initialized([4, 4], slot) == \
        [[2, 0, 100, 100], [101, 102, 103, 101], [100, 101, 102, 102], [103, 104, 105, 103]]
    slot = fw.load_variable_slot_initializer(
        ckpt.path, "w", _PartitionInfo(full_shape=[7, 4], var_offset=[0, 0]), **slot_args)
    assert _initialized([3, 4], slot) == \
        [[22, 20, 100, 100], [101, 102, 103, 101], [6, 4, 104, 102]]


def test_an_embedding_from_a_checkpoint_tensorflow_saved_in_slices(tmp_path):
    emb = np.load(TF_CKPT / "expected.npz")["emb"]   # [10, 4], saved by TF in 3 slices
    files = Files(tmp_path)
    old = files.write("old.txt", "".join("e%d\n" % i for i in range(10)))
    new = files.write("new.txt", "e9\nz\ne0\ne4\n")
    init = tf.contrib.framework.load_embedding_initializer(
        str(TF_CKPT / "model.ckpt-7"), "emb", 4, 4, old, new, initializer=tf.zeros_initializer())
    got = _initialized([4, 4], init, parts=2)
    np.testing.assert_array_equal(got, [emb[9], [0] * 4, emb[0], emb[4]])


def test_initializer_argument_errors_are_tensorflows_when_it_is_called(ckpt):
    init = tf.contrib.framework.load_and_remap_matrix_initializer
    cases = [
        (lambda: init(**_full(ckpt))([7, 4], tf.int32), TypeError,
         "Currently, only float32 is supported. Received dtype: <dtype: 'int32'>"),
        (lambda: init(**_full(ckpt))([7]), ValueError, r"Expected 2-dim shape, but received: \[7\]"),
        (lambda: init(**_full(ckpt))([7, 3]), ValueError,
         r"Expected 2nd dim of shape to be new_col_vocab_size \(3\) \+ num_col_oov_buckets \(1\) "
         r"= 4, but received shape: \[7, 3\]"),
        (lambda: init(**_full(ckpt))([0, 4]), ValueError,
         r"Expected 1st dim of shape to be > 0, but received shape: \[0, 4\]"),
        (lambda: init(**_full(ckpt))([8, 4]), ValueError,
         r"Trying to initialize 8 additional rows after 0 rows have already been initialized, "
         r"which would exceed expected total row count of new_row_vocab_size \(5\) \+ "
         r"num_row_oov_buckets \(2\) = 7."),
        (lambda: init(**_full(ckpt, num_col_oov_buckets=-1))([7, 2]), ValueError,
         "num_col_oov_buckets must be >= 0, but received -1"),
        (lambda: init(**_full(ckpt, old_row_vocab_file=None))([7, 4]), ValueError,
         "old_row_vocab_file and new_row_vocab_file must both be specified or left unspecified"),
        (lambda: init(ckpt.path, "w", 5, 4)([5, 4]), ValueError,
         "Must provide either row or column vocab files"),
        (lambda: init(**_full(ckpt, initializer=3)), TypeError,
         "initializer must be callable, instead of being 3 of type <class 'int'>."),
    ]
    with tf.Graph().as_default():
        for build, error, message in cases:
            with pytest.raises(error, match=message):
                build()
        init(**_full(ckpt, num_row_oov_buckets=-1))([4, 4])   # as TF: only OOV rows used count
        assert init(**_full(ckpt))([7, 4], tf.float64).dtype == tf.float64   # zps: any float


def test_file_errors_show_when_the_initializer_runs_as_in_tensorflow(ckpt):
    fw = tf.contrib.framework
    cases = [
        (3, ckpt.write("dup.txt", "a\nb\na\n"), ckpt.new_rows, "w",
         tf.errors.FailedPreconditionError, "Key a has 0 and trying to add value 2"),
        (3, ckpt.old_rows, ckpt.write("new_dup.txt", "b\nb\na\n"), "w",
         tf.errors.UnimplementedError, "Old ID 1 is mapped to both new ID 0 and 1"),
        (5, ckpt.old_rows, ckpt.new_rows, "nope",
         tf.errors.NotFoundError, "Key nope not found in checkpoint"),
        (5, str(ckpt.dir / "gone.txt"), ckpt.new_rows, "w",
         tf.errors.NotFoundError, "gone.txt; No such file or directory"),
    ]
    for size, old, new, name, error, message in cases:
        init = fw.load_embedding_initializer(ckpt.path, name, size, 4, old, new,
                                             initializer=counting)
        with tf.Graph().as_default():
            tf.get_variable("v", shape=[size, 4], initializer=init)   # builds
        with pytest.raises(error, match=message):
            _initialized([size, 4], init)


# -- warm_start -----------------------------------------------------------------------------------
def test_warm_start_reads_vocabularies_only_when_the_initializer_runs(tmp_path):
    with tf.Graph().as_default():
        tf.get_variable("emb", initializer=np.arange(6, dtype=np.float32).reshape(3, 2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "ckpt"))
    with tf.Graph().as_default():
        emb = tf.get_variable("emb", shape=[3, 2], initializer=tf.zeros_initializer())
        info = tf.train.VocabInfo(str(tmp_path / "new.txt"), 3, 0, str(tmp_path / "old.txt"))
        tf.train.warm_start(path, None, var_name_to_vocab_info={"emb": info})   # as TF: no error
        ops = [op for op in emb.graph.get_operations()
               if op.type in ("GenerateVocabRemapping", "LoadAndRemapMatrix")]
        assert len(ops) == 2 and all(op._colocation == [emb.op.name] for op in ops)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match=r"new.txt; No such file"):
                sess.run(tf.global_variables_initializer())
            (tmp_path / "new.txt").write_text("c\nz\na\n")
            (tmp_path / "old.txt").write_text("a\nb\nc\n")
            sess.run(tf.global_variables_initializer())
            assert sess.run(emb).tolist() == [[4, 5], [0, 0], [0, 1]]


def test_warm_start_remaps_into_a_float64_variable_of_a_sliced_checkpoint_tensor(ckpt):
    with tf.Graph().as_default():   # zps goes past TF here (float32 only): values are cast
        v = tf.get_variable("v", shape=[6, 4], dtype=tf.float64, initializer=tf.ones_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
        info = tf.train.VocabInfo(ckpt.new_rows, 5, 1, ckpt.old_rows,
                                  backup_initializer=tf.constant_initializer(-1.0))
        tf.train.warm_start(ckpt.path, None, var_name_to_vocab_info={"v": info},
                            var_name_to_prev_var_name={"v": "wp"})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(v.as_tensor())
    assert got.dtype == np.float64
    assert got.tolist() == [W[5].tolist(), [-1] * 4, W[1].tolist(), W[0].tolist(), [-1] * 4,
                            [-1] * 4]


ROWS, DIM = 100_000, 16


def _big_checkpoint(tmp_path):
    """A 100,000 x 16 embedding (6.4 MB) and a new vocabulary: entries in reverse order, every
    tenth one new."""
    table = np.arange(ROWS * DIM, dtype=np.float32).reshape(ROWS, DIM)
    with tf.Graph().as_default():
        tf.get_variable("emb", initializer=table)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "big.ckpt"))
    (tmp_path / "old.txt").write_text("".join("w%d\n" % i for i in range(ROWS)))
    (tmp_path / "new.txt").write_text("".join(
        ("new%d\n" if i % 10 == 0 else "w%d\n") % (ROWS - 1 - i) for i in range(ROWS)))
    expected_rows = np.where(np.arange(ROWS) % 10 == 0, -1, ROWS - 1 - np.arange(ROWS))
    return path, table, expected_rows


def _warm_start_big(path, tmp_path, device=None):
    with tf.device(device):
        emb = tf.get_variable("emb", shape=[ROWS + 1, DIM], initializer=tf.zeros_initializer(),
                              partitioner=tf.fixed_size_partitioner(2))
    info = tf.train.VocabInfo(str(tmp_path / "new.txt"), ROWS, 1, str(tmp_path / "old.txt"),
                              backup_initializer=tf.constant_initializer(-1.0))
    tf.train.warm_start(path, None, var_name_to_vocab_info={"emb": info})
    return emb


def _check_big(got, table, expected_rows):
    assert got.shape == (ROWS + 1, DIM)
    known = expected_rows >= 0
    np.testing.assert_array_equal(got[:ROWS][known], table[expected_rows[known]])
    assert (got[:ROWS][~known] == -1).all() and (got[ROWS] == -1).all()


def test_warm_starting_a_large_remapped_embedding_leaves_the_graph_small(tmp_path):
    path, table, expected_rows = _big_checkpoint(tmp_path)
    with tf.Graph().as_default() as graph:
        emb = _warm_start_big(path, tmp_path)
        size = len(msgpack.packb(graph.as_graph_def()))
        assert size < 64 << 10, "the graph holds %d bytes (the table is %d)" % (size, table.nbytes)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(emb.as_tensor())
    _check_big(got, table, expected_rows)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_ps_reads_the_checkpoint_and_vocabularies_of_a_warm_started_embedding(tmp_path,
                                                                               monkeypatch):
    path, table, expected_rows = _big_checkpoint(tmp_path)
    vocab = {str(tmp_path / "new.txt"), str(tmp_path / "old.txt")}
    real_open = open

    def no_vocab_open(file, *args, **kwargs):   # the client must not read the vocabularies
        assert os.fspath(file) not in vocab, "the client read %s" % file
        return real_open(file, *args, **kwargs)

    def no_tensor_read(self, key):   # ... nor tensor data (an index is fine)
        raise AssertionError("the client read tensor %s from %s" % (key, self.path))

    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                monkeypatch.setattr("builtins.open", no_vocab_open)
                monkeypatch.setattr(checkpoint_format.SafetensorsFile, "read", no_tensor_read)
                emb = _warm_start_big(path, tmp_path, device="/job:ps/task:0")
                with tf.device("/job:ps/task:0"):
                    total = tf.reduce_sum(emb.as_tensor())
                    rows = tf.gather(emb.as_tensor(), [0, 1, 2, ROWS])
                with tf.Session(server.target) as sess:
                    sess.run(tf.global_variables_initializer())
                    got_total, got_rows = sess.run([total, rows])
                monkeypatch.undo()
        finally:
            server.stop()
    known = expected_rows >= 0
    expected_total = table[expected_rows[known]].sum(dtype=np.float64) - DIM * (1 + (~known).sum())
    np.testing.assert_allclose(got_total, expected_total, rtol=1e-6)
    np.testing.assert_array_equal(got_rows, [[-1] * DIM, table[ROWS - 2], table[ROWS - 3],
                                             [-1] * DIM])


def test_contrib_framework_exports_the_initializers():
    names = ["load_and_remap_matrix_initializer", "load_embedding_initializer",
             "load_linear_multiclass_bias_initializer", "load_variable_slot_initializer"]
    for name in names:
        assert getattr(tf.contrib.framework, name) is getattr(checkpoint_ops, name)
        assert name in tf.contrib.framework.__all__
