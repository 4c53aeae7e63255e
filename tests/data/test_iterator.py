"""tf.data iterators: initialization, re-initialization, feeds at initializer time, errors, and
training loops that end at the end of the data (local and on a ps/worker cluster)."""

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster

D = tf.data.Dataset


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def _drain(sess, x, limit=100):
    out = []
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        while True:
            out.append(np.asarray(sess.run(x)).tolist())
            assert len(out) <= limit, "the iterator does not end"
    return out


def test_initializable_iterator_takes_feeds_when_initialized_and_restarts():
    data = tf.placeholder(tf.float32, [None])
    scale = tf.placeholder(tf.float32, [])
    it = D.from_tensor_slices(data).map(lambda v: v * scale).batch(2) \
        .make_initializable_iterator()
    x = it.get_next()
    assert x.get_shape().as_list() == [None] and x.dtype == tf.float32
    with tf.Session() as sess:
        sess.run(it.initializer, {data: [1.0, 2.0, 3.0], scale: 10.0})
        assert _drain(sess, x) == [[10.0, 20.0], [30.0]]
        with pytest.raises(tf.errors.OutOfRangeError):   # the end stays the end
            sess.run(x)
        sess.run(it.initializer, {data: [5.0], scale: -1.0})
        assert _drain(sess, x) == [[-5.0]]


def test_get_next_before_initialization_names_the_iterator():
    it = D.range(3).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="iterator Iterator has not been initialized.*initializer"):
            sess.run(x)


def test_reinitializable_iterator_switches_datasets():
    train = D.range(3)
    valid = D.range(100, 102)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x = it.get_next()
    init_train, init_valid = it.make_initializer(train), it.make_initializer(valid)
    with tf.Session() as sess:
        sess.run(init_train)
        assert sess.run(x) == 0
        sess.run(init_valid)
        assert _drain(sess, x) == [100, 101]
        sess.run(init_train)
        assert _drain(sess, x) == [0, 1, 2]


def test_from_structure_shapes_are_the_static_shapes_of_get_next():
    it = tf.data.Iterator.from_structure((tf.int64, {"a": tf.float32}),
                                         (tf.TensorShape([None]), {"a": tf.TensorShape([2])}))
    n, d = it.get_next()
    assert n.get_shape().as_list() == [None] and d["a"].get_shape().as_list() == [2]
    assert it.output_classes == (tf.Tensor, {"a": tf.Tensor})
    ds = D.zip((D.range(4).batch(2), D.from_tensors({"a": [1.0, 2.0]}).repeat()))
    with tf.Session() as sess:
        sess.run(it.make_initializer(ds))
        value = sess.run((n, d))
        assert value[0].tolist() == [0, 1] and value[1]["a"].tolist() == [1.0, 2.0]


def test_make_initializer_rejects_another_structure_or_type_or_shape():
    it = tf.data.Iterator.from_structure((tf.int64, tf.int64), (tf.TensorShape([]),) * 2)
    with pytest.raises(ValueError, match="same nested structure"):
        it.make_initializer(D.range(3))
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(D.zip((D.range(3), D.from_tensor_slices([1.0]))))
    with pytest.raises(TypeError, match="Expected output shapes compatible"):
        it.make_initializer(D.zip((D.range(3), D.range(3).batch(2))))


def test_one_shot_iterator_has_no_initializer_and_stays_at_the_end():
    it = tf.data.make_one_shot_iterator(D.range(2))
    x = it.get_next()
    with pytest.raises(ValueError, match="does not have an initializer"):
        _ = it.initializer
    with tf.Session() as sess:
        assert _drain(sess, x) == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(x)
    with tf.Session() as sess:   # a new session has its own iterator
        assert sess.run(x) == 0


def test_public_helpers():
    ds = D.range(2)
    assert tf.data.get_output_types(ds) == tf.int64
    assert tf.data.get_output_shapes(ds).as_list() == []
    assert tf.data.get_output_classes(ds) is tf.Tensor
    it = tf.data.make_initializable_iterator(ds, shared_name="shared_it")
    with tf.Session() as sess:
        sess.run(it.initializer)
        assert sess.run(it.get_next()) == 0


def _linear_model(features, labels):
    w = tf.Variable(tf.zeros([2, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return w, step, train_op


def _data(n=40):
    rng = np.random.RandomState(0)
    x = rng.randn(n, 2).astype(np.float32)
    return x, x @ np.array([[2.0], [-1.0]], np.float32)


def test_monitored_training_session_stops_cleanly_at_the_end_of_the_data(tmp_path):
    x, y = _data()
    features, labels = D.from_tensor_slices((x, y)).repeat(3).batch(8) \
        .make_one_shot_iterator().get_next()
    w, step, train_op = _linear_model(features, labels)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           hooks=[tf.train.StopAtStepHook(last_step=1000)],
                                           save_checkpoint_secs=None) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(train_op)
            runs += 1
            assert runs <= 15
    assert runs == 15   # 3 epochs of 40 in batches of 8, then End of sequence


def test_stop_at_step_hook_stops_before_the_end_of_the_data():
    x, y = _data()
    features, labels = D.from_tensor_slices((x, y)).repeat().batch(8) \
        .make_one_shot_iterator().get_next()
    _, step, train_op = _linear_model(features, labels)
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=7)]) as sess:
        while not sess.should_stop():
            _, last = sess.run([train_op, step])
    assert last == 7


def test_distributed_training_reads_the_dataset_on_the_worker():
    x, y = _data()
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.device(tf.train.replica_device_setter(cluster=cluster.spec)):
            it = D.from_tensor_slices((x, y)).shuffle(16, seed=3).batch(10) \
                .make_initializable_iterator()
            features, labels = it.get_next()
            w, step, train_op = _linear_model(features, labels)
        assert "/job:worker" in it._iterator_resource.op.device
        assert "/job:ps" in w.op.device
        scaffold = tf.train.Scaffold(local_init_op=it.initializer)
        with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 0), is_chief=True,
                                               scaffold=scaffold) as sess:
            runs = 0
            while not sess.should_stop():
                sess.run(train_op)
                runs += 1
                assert runs <= 4
        assert runs == 4
        with tf.Session(cluster.target("worker", 0)) as sess:
            assert sess.run(step) == 4
            assert np.abs(sess.run(w)).sum() > 0


def test_map_fn_captures_a_placeholder_fed_at_initialization():
    offset = tf.placeholder(tf.int64, [])
    it = D.range(3).map(lambda v: v + offset).filter(lambda v: v > offset) \
        .make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {offset: 10})
        assert _drain(sess, x) == [11, 12]
        sess.run(it.initializer, {offset: 0})
        assert _drain(sess, x) == [1, 2]


def test_the_pipeline_is_plain_data_that_survives_a_graph_def_round_trip():
    scale = tf.constant(2.0)
    ds = D.from_tensor_slices({"a": [1.0, 2.0, 3.0]}).map(lambda e: e["a"] * scale) \
        .flat_map(lambda v: D.from_tensors(v).repeat(2)).batch(4)
    x = ds.make_one_shot_iterator().get_next()
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default() as copy:
        tf.import_graph_def(graph_def, name="")
        y = copy.get_tensor_by_name(x.name)
        with tf.Session() as sess:
            assert _drain(sess, y) == [[2.0, 2.0, 4.0, 4.0], [6.0, 6.0]]


def test_feedable_iterator_reads_from_the_iterator_whose_handle_is_fed():
    train = D.range(100).repeat().make_one_shot_iterator()
    valid = D.range(10, 12).make_initializable_iterator()
    handle = tf.placeholder(tf.string, [])
    it = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
    x = it.get_next()
    assert x.dtype == tf.int64 and x.get_shape().as_list() == []
    with tf.Session() as sess:
        h_train, h_valid = sess.run([train.string_handle(), valid.string_handle()])
        assert [sess.run(x, {handle: h_train}) for _ in range(2)] == [0, 1]
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(x, {handle: h_valid})
        sess.run(valid.initializer)
        assert [sess.run(x, {handle: h}) for h in (h_valid, h_train, h_valid)] == [10, 2, 11]
        with pytest.raises(tf.errors.NotFoundError, match="No iterator 'nope'"):
            sess.run(x, {handle: b"nope"})
        wrong = tf.data.Iterator.from_string_handle(handle, tf.float32).get_next()
        with pytest.raises(tf.errors.InvalidArgumentError, match="do not match"):
            sess.run(wrong, {handle: h_train})


def test_iterator_ops_run_on_the_host_and_never_on_an_io_thread():
    from zps.framework.registry import REGISTRY
    from zps.ops.cupy_kernels import CPU_ONLY
    ops = {"Iterator", "OneShotIterator", "MakeIterator", "IteratorGetNext",
           "IteratorToStringHandle", "IteratorFromStringHandle"}
    assert ops <= CPU_ONLY
    assert not any(REGISTRY[t].light_ok for t in ops)


def test_a_model_on_a_gpu_reads_a_dataset_built_under_the_gpu_scope(monkeypatch):
    from zps.testing import fake_cupy

    def run(device):
        with tf.Graph().as_default():
            with tf.device(device):
                ds = D.from_tensor_slices(np.arange(6, dtype=np.float32).reshape(3, 2))
                x = ds.map(lambda v: tf.exp(v) * 2.0).batch(2).make_one_shot_iterator().get_next()
                y = tf.reduce_sum(x * 3.0)
            with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
                return [sess.run(y) for _ in range(2)]
    expected = run("/cpu:0")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=1):
        np.testing.assert_allclose(run("/gpu:0"), expected, rtol=1e-6)


# -- elements of unknown rank (a py_func's outputs) ----------------------------------------------
def _pairs_of_unknown_rank():
    return D.range(3).map(lambda x: tf.py_func(lambda v: np.array([v, v]), [x], tf.int64))


def test_iterators_read_elements_of_unknown_rank():
    ds = _pairs_of_unknown_rank()
    assert ds.output_shapes.ndims is None
    with tf.Session() as sess:
        assert sess.run(ds.make_one_shot_iterator().get_next()).tolist() == [0, 0]   # as TF
        it = ds.make_initializable_iterator()
        assert it.output_shapes.ndims is None
        sess.run(it.initializer)
        assert _drain(sess, it.get_next()) == [[0, 0], [1, 1], [2, 2]]


def test_batches_and_reinitializable_iterators_of_unknown_rank_elements():
    ds = _pairs_of_unknown_rank()
    assert ds.batch(2).output_shapes.ndims is None
    assert ds.padded_batch(2, [None]).output_shapes.as_list() == [None, None]
    it = tf.data.Iterator.from_structure(tf.int64)   # shapes unknown
    x = it.get_next()
    with tf.Session() as sess:
        sess.run(it.make_initializer(ds.batch(2)))
        assert _drain(sess, x) == [[[0, 0], [1, 1]], [[2, 2]]]
        minus_one = tf.constant(-1, tf.int64)
        sess.run(it.make_initializer(ds.padded_batch(2, [3], padding_values=minus_one)))
        assert _drain(sess, x) == [[[0, 0, -1], [1, 1, -1]], [[2, 2, -1]]]
        handle = sess.run(it.string_handle())
        feedable = tf.data.Iterator.from_string_handle(tf.constant(handle), tf.int64, [None, 3])
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(feedable.get_next())


def test_a_from_generator_iterator_outside_the_process_that_built_it_is_not_found(monkeypatch):
    import zps.ops.dataset_ops as dataset_ops
    x = D.from_generator(lambda: iter([1]), tf.int64).make_one_shot_iterator().get_next()
    monkeypatch.setattr(dataset_ops, "_generators", {})   # as in another process
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError,
                                             match="runs in the process that built it"):
        sess.run(x)
