"""Queue input pipelines: producers, epochs, batching, shuffling, readers, and a model trained
from a CSV file in a MonitoredTrainingSession. Every blocking test has a timeout."""

import re
import threading

import numpy as np
import pytest

import zps as tf

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


class Runner:
    """A session with local variables initialized and the queue runners started; stops and
    joins the threads on exit."""

    def __enter__(self):
        self.sess = tf.Session()
        self.sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        self.coord = tf.train.Coordinator()
        self.threads = tf.train.start_queue_runners(self.sess, self.coord)
        return self.sess

    def __exit__(self, *exc):
        self.coord.request_stop()
        self.coord.join(self.threads, stop_grace_period_secs=5)
        self.sess.close()


def drain(sess, fetch):
    """Run ``fetch`` until OutOfRangeError; the values."""
    out = []
    while True:
        try:
            out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            return out


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


# -- producers and epochs ------------------------------------------------------------------------
def test_string_input_producer_epochs_in_order():
    q = tf.train.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False)
    epochs = [v for v in tf.local_variables() if v.op.name.endswith("epochs")]
    assert len(epochs) == 1 and epochs[0].dtype.base_dtype == tf.int64
    assert len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)) == 1
    with Runner() as sess:
        assert drain(sess, q.dequeue()) == [b"a", b"b", b"c"] * 2


def test_shuffled_epochs_are_permutations_and_seeded():
    def order(seed):
        with tf.Graph().as_default():
            q = tf.train.string_input_producer([str(i) for i in range(8)], num_epochs=3, seed=seed)
            with Runner() as sess:
                return drain(sess, q.dequeue())
    first = order(3)
    assert len(first) == 24
    for e in range(3):
        assert sorted(first[8 * e:8 * e + 8]) == sorted(str(i).encode() for i in range(8))
    assert first == order(3)
    assert first[:8] != first[8:16] or first[8:16] != first[16:]


def test_range_and_slice_input_producer():
    q = tf.train.range_input_producer(4, num_epochs=1, shuffle=False)
    x, y = tf.train.slice_input_producer([tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                                          tf.constant([10, 20, 30])], num_epochs=1, shuffle=False)
    assert x.get_shape().as_list() == [2] and y.get_shape().as_list() == []
    with Runner() as sess:
        assert drain(sess, q.dequeue()) == [0, 1, 2, 3]
        rows = drain(sess, [x, y])
    assert [(r[0].tolist(), int(r[1])) for r in rows] == [([1.0, 2.0], 10), ([3.0, 4.0], 20),
                                                        ([5.0, 6.0], 30)]


def test_limit_epochs_raises_out_of_range():
    x = tf.train.limit_epochs(tf.constant(7), num_epochs=2)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(x) == 7 and sess.run(x) == 7
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(x)
    assert tf.train.limit_epochs(x, None) is x


def test_count_up_to():
    v = tf.Variable(0, dtype=tf.int64)
    c = v.count_up_to(2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(c), sess.run(c)] == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(c)
        assert sess.run(v) == 2


@pytest.mark.parametrize("build, error, message", [
    (lambda: tf.train.string_input_producer([]), ValueError,
     "string_input_producer requires a non-null input tensor"),
    (lambda: tf.train.limit_epochs(tf.constant(1), 0), ValueError, "num_epochs must be > 0 not 0."),
    (lambda: tf.train.shuffle_batch([tf.constant(1)], 2, capacity=2, min_after_dequeue=2),
     ValueError, "capacity 2 must be bigger than min_after_dequeue 2"),
    (lambda: tf.train.batch_join([[tf.constant(1)], [tf.constant(1.0)]], 2), TypeError,
     "Expected types to be consistent: int32 vs. float32."),
    (lambda: tf.train.input_producer(tf.placeholder(tf.float32, [None, None])), ValueError,
     "Either `input_tensor` must have a fully defined shape or `element_shape` must be specified"),
    (lambda: tf.train.batch([tf.placeholder(tf.float32, [None])], 2), ValueError,
     "All shapes must be fully defined"),
    (lambda: tf.train.batch([tf.placeholder(tf.float32)], 2), ValueError,
     "Cannot infer Tensor's rank"),
])
def test_build_errors(build, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build()


def test_empty_filename_list_fails_at_run_time():
    names = tf.placeholder(tf.string, [None])
    tf.train.string_input_producer(names, shuffle=False)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="string_input_producer requires a non-null input tensor"):
            sess.run(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0].enqueue_ops[0],
                     {names: []})


# -- batching ------------------------------------------------------------------------------------
def test_batch_smaller_final_batch_and_static_shapes():
    x = tf.train.limit_epochs(tf.constant([1, 2, 3, 4, 5]), num_epochs=1)
    b = tf.train.batch([x], batch_size=2, enqueue_many=True, allow_smaller_final_batch=True)
    assert isinstance(b, tf.Tensor) and b.get_shape().as_list() == [None]
    with Runner() as sess:
        assert [v.tolist() for v in drain(sess, b)] == [[1, 2], [3, 4], [5]]


def test_batch_drops_the_remainder_without_smaller_final_batch():
    x = tf.train.limit_epochs(tf.constant([[1.0], [2.0], [3.0]]), num_epochs=1)
    b = tf.train.batch([x], batch_size=2, enqueue_many=True)
    assert b.get_shape().as_list() == [2, 1]
    with Runner() as sess:
        assert [v.tolist() for v in drain(sess, b)] == [[[1.0], [2.0]]]


def test_batch_of_a_dict_and_several_threads():
    i = tf.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
    b = tf.train.batch({"i": i, "sq": i * i}, batch_size=3, num_threads=2,
                       allow_smaller_final_batch=True)
    assert sorted(b) == ["i", "sq"]
    with Runner() as sess:
        got = drain(sess, b)
    ids = np.concatenate([g["i"] for g in got])
    assert sorted(ids.tolist()) == list(range(6))
    np.testing.assert_array_equal(np.concatenate([g["sq"] for g in got]), ids * ids)


def test_batch_join_takes_from_every_input():
    a = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=1)
    b = tf.train.limit_epochs(tf.constant([10, 20]), num_epochs=1)
    out = tf.train.batch_join([[a], [b]], batch_size=2, enqueue_many=True,
                              allow_smaller_final_batch=True)
    assert len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0].enqueue_ops) == 2
    with Runner() as sess:
        got = np.concatenate(drain(sess, out)).tolist()
    assert sorted(got) == [1, 2, 3, 10, 20]


def test_shuffle_batch_is_a_seeded_permutation():
    def run(seed):
        with tf.Graph().as_default():
            x = tf.train.limit_epochs(tf.range(20), num_epochs=1)
            b = tf.train.shuffle_batch([x], 4, capacity=20, min_after_dequeue=5,
                                       enqueue_many=True, seed=seed,
                                       allow_smaller_final_batch=True)
            assert b.get_shape().as_list() == [None]
            with Runner() as sess:
                return np.concatenate(drain(sess, b)).tolist()
    first = run(7)
    assert sorted(first) == list(range(20)) and first != list(range(20))
    assert run(7) == first
    assert run(8) != first


def test_shuffle_batch_join():
    a = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=1)
    b = tf.train.limit_epochs(tf.constant([4, 5, 6]), num_epochs=1)
    out = tf.train.shuffle_batch_join([[a], [b]], 2, capacity=6, min_after_dequeue=1, seed=1,
                                      enqueue_many=True, allow_smaller_final_batch=True)
    with Runner() as sess:
        assert sorted(np.concatenate(drain(sess, out)).tolist()) == [1, 2, 3, 4, 5, 6]


def test_batch_dynamic_pad_matches_tf():
    q = tf.train.input_producer(tf.constant(["a b c", "d", "e f"]), num_epochs=1, shuffle=False)
    words = tf.string_split(tf.reshape(q.dequeue(), [1])).values
    b, n = tf.train.batch([words, tf.size(words)], 2, dynamic_pad=True,
                          allow_smaller_final_batch=True)
    assert b.get_shape().as_list() == [None, None]
    with Runner() as sess:
        got = [(x.tolist(), y.tolist()) for x, y in drain(sess, [b, n])]
    # TF 2.21's batches
    assert got == [([[b"a", b"b", b"c"], [b"d", b"", b""]], [3, 1]), ([[b"e", b"f"]], [2])]


def test_padding_fifo_queue_matches_tf():
    q = tf.PaddingFIFOQueue(5, [tf.int32, tf.float32], shapes=[[None], [None, 2]])
    many = q.dequeue_many(2)
    assert [t.get_shape().as_list() for t in many] == [[2, None], [2, None, 2]]
    with tf.Session() as sess:
        sess.run(q.enqueue([[1, 2, 3], [[1.0, 2.0]]]))
        sess.run(q.enqueue([[4], [[3.0, 4.0], [5.0, 6.0]]]))
        a, b = sess.run(many)
        empty = sess.run(q.dequeue_many(0))
    assert a.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert b.tolist() == [[[1.0, 2.0], [0.0, 0.0]], [[3.0, 4.0], [5.0, 6.0]]]
    assert [e.shape for e in empty] == [(0, 0), (0, 0, 2)]
    with pytest.raises(ValueError, match="known ranks"):
        tf.PaddingFIFOQueue(5, tf.int32, shapes=[tf.TensorShape(None)])


def test_strings_enqueued_many_dequeue_as_arrays():
    q = tf.FIFOQueue(3, tf.string, shapes=[])
    line = q.dequeue()
    with tf.Session() as sess:
        sess.run(q.enqueue_many([["a", "b"]]))
        assert sess.run(tf.reshape(line, [1])).tolist() == [b"a"]


def test_random_shuffle_queue_keeps_min_after_dequeue_until_closed():
    q = tf.RandomShuffleQueue(10, 2, tf.int32, shapes=[], seed=5)
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2, 3]]))
        first = sess.run(deq)             # 3 > min_after_dequeue: one may leave
        result = []
        t = threading.Thread(target=lambda: result.append(sess.run(deq)))
        t.start()
        t.join(0.2)
        assert t.is_alive()               # 2 left: waits for more (or a close)
        sess.run(q.close())
        t.join(5)
        assert not t.is_alive()
        rest = sess.run(deq)
        assert sorted([first, result[0], rest]) == [1, 2, 3]
        with pytest.raises(tf.errors.OutOfRangeError, match="RandomShuffleQueue"):
            sess.run(deq)


def test_shared_queue_kind_mismatch():
    tf.FIFOQueue(5, tf.int32, shared_name="shared")
    q = tf.RandomShuffleQueue(5, 1, tf.int32, shared_name="shared")
    fifo = tf.get_default_graph().get_operations()[0].outputs[0]
    with tf.Session() as sess:
        sess.run(fifo)
        with pytest.raises(tf.errors.InvalidArgumentError, match="already exists as a FIFOQueue"):
            sess.run(q.size())


# -- readers -------------------------------------------------------------------------------------
def test_text_line_reader_keys_and_lines(tmp_path):
    path = write(tmp_path / "t.csv", "h1\nl1\r\nl2\n\nl4")
    q = tf.FIFOQueue(10, tf.string, shapes=[])
    reader = tf.TextLineReader(skip_header_lines=1)
    key, value = reader.read(q)
    with tf.Session() as sess:
        sess.run([q.enqueue_many([[str(path), str(path)]]), q.close()])
        got = [tuple(sess.run([key, value])) for _ in range(8)]
        # TF 2.21: keys count the header line; "\r\n" and "\n" are stripped.
        assert got[:4] == [(b"%s:%d" % (str(path).encode(), n), line) for n, line in
                           [(2, b"l1"), (3, b"l2"), (4, b""), (5, b"l4")]]
        assert got[4:] == got[:4]
        with pytest.raises(tf.errors.OutOfRangeError, match="is closed and has insufficient"):
            sess.run(value)
        assert sess.run([reader.num_records_produced(), reader.num_work_units_completed()]) == [8, 2]
        sess.run(reader.reset())
        assert sess.run(reader.num_records_produced()) == 0


def test_read_up_to_matches_tf(tmp_path):
    a = str(write(tmp_path / "a", "1\n2\n3\n4\n5\n"))
    b = str(write(tmp_path / "b", ""))
    c = str(write(tmp_path / "c", "x\ny\n"))
    q = tf.FIFOQueue(10, tf.string, shapes=[])
    reader = tf.TextLineReader()
    keys, values = reader.read_up_to(q, 3)
    assert keys.get_shape().as_list() == [None]
    counts = [reader.num_records_produced(), reader.num_work_units_completed()]
    with tf.Session() as sess:
        sess.run([q.enqueue_many([[a, b, c]]), q.close()])
        got = [(sess.run([keys, values]), sess.run(counts)) for _ in range(3)]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(values)
    # TF 2.21: a call stops at the end of a file; an empty file is skipped.
    assert [([k.decode().rsplit("/", 1)[1] for k in kv[0]], kv[1].tolist(), n) for kv, n in got] == [
        (["a:1", "a:2", "a:3"], [b"1", b"2", b"3"], [3, 0]),
        (["a:4", "a:5"], [b"4", b"5"], [5, 1]),
        (["c:1", "c:2"], [b"x", b"y"], [7, 3])]


def test_whole_file_reader_and_empty_files(tmp_path):
    a = write(tmp_path / "a", "")
    b = write(tmp_path / "b", "x\ny")
    q = tf.FIFOQueue(10, tf.string, shapes=[])
    key, value = tf.WholeFileReader().read(q)
    lkey, lvalue = tf.TextLineReader().read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[str(a), str(b), str(a), str(b)]]))
        assert sess.run([key, value]) == [str(a).encode(), b""]
        assert sess.run([key, value]) == [str(b).encode(), b"x\ny"]
        assert sess.run(lvalue) == b"x"             # the empty file gives no line
        assert sess.run(lkey) == str(b).encode() + b":2"


def test_reader_missing_file(tmp_path):
    q = tf.FIFOQueue(10, tf.string, shapes=[])
    _, value = tf.TextLineReader().read(q)
    missing = str(tmp_path / "missing")
    with tf.Session() as sess:
        sess.run(q.enqueue(missing))
        with pytest.raises(tf.errors.NotFoundError, match="%s; No such file or directory" % missing):
            sess.run(value)


def test_read_waits_for_a_filename(tmp_path):
    path = write(tmp_path / "f", "only\n")
    q = tf.FIFOQueue(10, tf.string, shapes=[])
    _, value = tf.TextLineReader().read(q)
    with tf.Session() as sess:
        result = []
        t = threading.Thread(target=lambda: result.append(sess.run(value)))
        t.start()
        t.join(0.2)
        assert t.is_alive()
        sess.run(q.enqueue(str(path)))
        t.join(5)
        assert result == [b"only"]


def test_threads_sharing_one_reader_read_every_line_once_per_epoch(tmp_path):
    files = [str(write(tmp_path / ("f%d" % k), "".join("%d-%d\n" % (k, i) for i in range(50))))
             for k in range(3)]
    filenames = tf.train.string_input_producer(files, num_epochs=2, seed=4)
    _, line = tf.TextLineReader().read(filenames)
    batch = tf.train.batch([line], 8, num_threads=4, capacity=16, allow_smaller_final_batch=True)
    with Runner() as sess:
        got = np.concatenate(drain(sess, batch)).tolist()
    expected = ["%d-%d" % (k, i) for k in range(3) for i in range(50)] * 2
    assert sorted(x.decode() for x in got) == sorted(expected)


# -- a model trained from a CSV file -------------------------------------------------------------
def test_train_from_csv_in_monitored_training_session(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, size=(64, 2)).astype(np.float32)
    y = x @ np.array([2.0, -3.0], np.float32) + 0.5
    files = []
    for k in range(2):
        rows = "".join("%r,%r,%r\n" % (float(a), float(b), float(t))
                       for (a, b), t in zip(x[32 * k:32 * k + 32], y[32 * k:32 * k + 32]))
        files.append(str(write(tmp_path / ("part%d.csv" % k), "x1,x2,y\n" + rows)))

    num_epochs, batch_size = 30, 16
    filenames = tf.train.string_input_producer(files, num_epochs=num_epochs, seed=1)
    _, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
    x1, x2, target = tf.decode_csv(line, [[0.0], [0.0], [0.0]])
    features, labels = tf.train.shuffle_batch([tf.stack([x1, x2]), target], batch_size,
                                              capacity=64, min_after_dequeue=16, seed=2)
    w = tf.Variable(tf.zeros([2, 1]))
    b = tf.Variable(0.0)
    pred = tf.squeeze(tf.matmul(features, w), [1]) + b
    loss = tf.reduce_mean(tf.square(pred - labels))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.3).minimize(loss, global_step=global_step)

    losses = []
    with tf.train.MonitoredTrainingSession(save_checkpoint_secs=None,
                                           save_summaries_steps=None) as sess:
        while not sess.should_stop():
            _, value = sess.run([train_op, loss])
            losses.append(value)
    # 64 examples x 30 epochs in full batches of 16, then the input ends cleanly.
    assert len(losses) == 64 * num_epochs // batch_size
    assert losses[-1] < 1e-3 < losses[0]


def test_missing_file_stops_the_monitored_session(tmp_path):
    filenames = tf.train.string_input_producer([str(tmp_path / "nope.csv")], num_epochs=1)
    _, line = tf.TextLineReader().read(filenames)
    batch = tf.train.batch([line], 2)
    with pytest.raises(tf.errors.NotFoundError, match="nope.csv"):
        with tf.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                sess.run(batch)


def test_queue_runner_collection_is_used_by_monitored_session():
    name = tf.train.string_input_producer(["x"], shuffle=False).dequeue()
    with tf.train.MonitoredSession() as sess:
        assert [sess.run(name) for _ in range(3)] == [b"x"] * 3


def test_reader_ops_are_host_only_and_not_differentiable():
    from zps.framework.registry import REGISTRY
    from zps.ops.cupy_kernels import CPU_ONLY
    for op_type in ("TextLineReaderV2", "WholeFileReaderV2", "ReaderReadV2", "ReaderReadUpToV2",
                    "ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2",
                    "RandomShuffleQueue", "PaddingFIFOQueue"):
        assert op_type in CPU_ONLY
        assert REGISTRY[op_type].grad_fn is None
