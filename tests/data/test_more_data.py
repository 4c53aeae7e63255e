"""tf.data additions: FixedLengthRecordDataset, Options, cardinality, NumpyIterator, lookup
tables and tf.queue (values checked against TensorFlow 2.21's, written in)."""

import gzip
import zlib

import numpy as np
import pytest

import zps as tf


def _read_all(ds):
    x = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as sess:
        try:
            while True:
                out.append(sess.run(x))
        except tf.errors.OutOfRangeError:
            return out


@pytest.mark.parametrize("compression,write", [
    (None, lambda b: b), ("GZIP", gzip.compress), ("ZLIB", zlib.compress)])
def test_fixed_length_records_between_header_and_footer(tmp_path, compression, write):
    path = tmp_path / "a.bin"
    path.write_bytes(write(b"HH" + b"abcdefghijkl" + b"FFF"))
    with tf.Graph().as_default():
        ds = tf.data.FixedLengthRecordDataset(str(path), 4, header_bytes=2, footer_bytes=3,
                                              compression_type=compression)
        assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
        assert _read_all(ds) == [b"abcd", b"efgh", b"ijkl"]
        files = tf.data.FixedLengthRecordDataset([str(path)] * 2, 4, 2, 3,
                                                 compression_type=compression)
        assert _read_all(files) == [b"abcd", b"efgh", b"ijkl"] * 2


def test_fixed_length_partial_record_errors_as_tf(tmp_path):
    body = b"HH" + b"abcdefghijklm" + b"FFF"
    (tmp_path / "bad.bin").write_bytes(body)
    (tmp_path / "bad.gz").write_bytes(gzip.compress(body))
    message = "has body length 13 bytes, which is not an exact multiple of the record length"
    with tf.Graph().as_default():
        x = tf.data.FixedLengthRecordDataset(str(tmp_path / "bad.bin"), 4, 2, 3) \
            .make_one_shot_iterator().get_next()
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(x)   # before any record, as TF
        ds = tf.data.FixedLengthRecordDataset(str(tmp_path / "bad.gz"), 4, 2, 3,
                                              compression_type="GZIP")
        x = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert [sess.run(x) for _ in range(3)] == [b"abcd", b"efgh", b"ijkl"]
            with pytest.raises(tf.errors.DataLossError, match=message):
                sess.run(x)
        with pytest.raises(ValueError, match="compression_type"):
            tf.data.FixedLengthRecordDataset("x", 4, compression_type="BZ2")


def test_constants_and_cardinality():
    assert (tf.data.AUTOTUNE, tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY) == \
        (-1, -1, -2)
    assert tf.data.experimental.INFINITE_CARDINALITY == -1
    with tf.Graph().as_default():
        r = tf.data.Dataset.range(10)
        cases = {
            r: 10, r.batch(3): 4, r.batch(3, drop_remainder=True): 3, r.repeat(): -1,
            r.repeat(3): 30, r.take(4): 4, r.skip(7): 3, r.skip(20): 0, r.repeat().take(5): 5,
            r.filter(lambda x: x > 2): -2, r.map(lambda x: x + 1).shuffle(4).prefetch(1): 10,
            tf.data.Dataset.zip((r, r.take(3))): 3, r.concatenate(r.take(2)): 12,
            tf.data.Dataset.from_tensors([1, 2]): 1,
            tf.data.Dataset.from_tensor_slices(np.zeros([7, 2])): 7,
            tf.data.Dataset.range(tf.placeholder(tf.int64, [])): -2,
        }
        counts = [tf.data.experimental.cardinality(d) for d in cases]
        assert all(c.dtype == tf.int64 for c in counts)
        with tf.Session() as sess:
            assert [int(v) for v in sess.run(counts)] == list(cases.values())


def test_options_are_kept_merged_and_checked_as_tf():
    o = tf.data.Options()
    assert o.experimental_deterministic is None and o.deterministic is None
    assert o.experimental_threading is o.threading
    o.experimental_deterministic = False
    assert o.deterministic is False
    o.experimental_optimization.map_parallelization = True
    o.experimental_optimization.apply_default_optimizations = False
    o.threading.max_intra_op_parallelism = 1
    o.autotune.enabled = False
    o.experimental_distribute.num_devices = 2
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options"):
        o.foo = 1
    with pytest.raises(TypeError, match='"deterministic" must be of type bool'):
        o.deterministic = 3
    with pytest.raises(TypeError, match="private_threadpool_size"):
        o.threading.private_threadpool_size = True
    o2 = tf.data.Options()
    o2.deterministic = True
    o2.threading.private_threadpool_size = 4
    assert o != o2 and tf.data.Options() == tf.data.Options()
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(3).with_options(o).with_options(o2).map(lambda x: x * 2)
        got = ds.options()
        assert got.deterministic is True   # the later options win, as in TF 2
        assert got.threading.private_threadpool_size == 4
        assert got.threading.max_intra_op_parallelism == 1
        assert got.experimental_optimization.map_parallelization is True
        assert got.experimental_optimization.apply_default_optimizations is False
        assert got.autotune.enabled is False and got.experimental_distribute.num_devices == 2
        assert tf.data.Dataset.range(2).options() == tf.data.Options()
        zipped = tf.data.Dataset.zip((ds, tf.data.Dataset.range(3)))
        assert zipped.options().deterministic is True
        assert [int(v) for v in _read_all(ds)] == [0, 2, 4]   # options change no element
        with pytest.raises(TypeError, match="tf.data.Options"):
            ds.with_options({"deterministic": True})


def test_as_numpy_iterator_and_numpy_iterator():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3], [[1.5], [2.5], [3.5]])).batch(2)
        it = ds.as_numpy_iterator()
        assert isinstance(it, tf.data.NumpyIterator) and iter(it) is it
        got = list(it)
        assert [(a.tolist(), b.tolist()) for a, b in got] == [([1, 2], [[1.5], [2.5]]),
                                                              ([3], [[3.5]])]
        assert list(it) == []   # exhausted: its session is closed
        sparse = tf.data.Dataset.from_tensors(tf.SparseTensor([[0, 1]], [7], [2, 2]))
        (value,) = list(sparse.as_numpy_iterator())
        assert value.indices.tolist() == [[0, 1]] and value.values.tolist() == [7]


def test_static_hash_table_and_vocabulary_table_as_tf(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("emerson\nlake\npalmer\n")
    kv = tmp_path / "kv.tsv"
    kv.write_text("a\t5\nb\t7\n")
    with tf.Graph().as_default():
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2], value_dtype=tf.int64), -1)
        ids = table.lookup(tf.constant(["b", "z", "a"]))
        voc = tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
            ["a", "b"], tf.constant([0, 1], tf.int64)), 3)
        int_voc = tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([10, 20], tf.int64), tf.constant([0, 1], tf.int64)), 5)
        lines = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
            str(vocab), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER), -1)
        columns = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(kv), tf.string, 0, tf.int64, 1), -1)
        sp = lines.lookup(tf.SparseTensor([[0, 0], [1, 2]], ["palmer", "x"], [2, 3]))
        assert table.key_dtype == tf.string and table.value_dtype == tf.int64
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="not initialized"):
                sess.run(ids)
            sess.run(tf.initializers.tables_initializer())
            sess.run(tf.tables_initializer())   # again, same data: a no-op
            assert sess.run(ids).tolist() == [2, -1, 1] and sess.run(table.size()) == 2
            # TF 2.21's ids (Fingerprint64 buckets after the vocabulary).
            assert sess.run(voc.lookup(tf.constant([["b", "z"], ["a", "q"]]))).tolist() == \
                [[1, 3], [0, 4]]
            assert sess.run(voc.size()) == 5
            assert sess.run(int_voc.lookup(tf.constant([20, 7, 99], tf.int64))).tolist() == \
                [1, 5, 4]
            assert sess.run(lines.lookup(tf.constant(["lake", "emerson", "zz"]))).tolist() == \
                [1, 0, -1]
            assert sess.run(columns.lookup(tf.constant(["b", "a", "c"]))).tolist() == [7, 5, -1]
            value = sess.run(sp)
            assert value.values.tolist() == [2, -1] and value.dense_shape.tolist() == [2, 3]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be > 0"):
            tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
                ["a"], tf.constant([0], tf.int64)), 0)
        with pytest.raises(TypeError, match="Signature mismatch"):
            tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(["a"], [1], value_dtype=tf.int64), -1
            ).lookup(tf.constant([1]))
        with pytest.raises(ValueError, match="Signature mismatch"):
            tf.lookup.TextFileInitializer(str(vocab), tf.string, 0, tf.string,
                                          tf.lookup.TextFileIndex.LINE_NUMBER)


def test_queue_namespace_is_the_queues():
    assert tf.queue.FIFOQueue is tf.FIFOQueue and tf.queue.QueueBase is tf.QueueBase
    assert tf.queue.PaddingFIFOQueue is tf.PaddingFIFOQueue
    assert tf.queue.RandomShuffleQueue is tf.RandomShuffleQueue
    with tf.Graph().as_default():
        q = tf.queue.PaddingFIFOQueue(4, [tf.int32], shapes=[[None]])
        with tf.Session() as sess:
            sess.run(q.enqueue([[1, 2]]))
            sess.run(q.enqueue([[3]]))
            assert sess.run(q.dequeue_many(2)).tolist() == [[1, 2], [3, 0]]
