"""SparseTensor components of tf.data elements: sources, transformations, iterators and the
static element description, against values and messages checked with TF 2.21 (compat.v1)."""

import numpy as np
import pytest

import zps as tf

D = tf.data.Dataset


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def _sp():
    return tf.SparseTensor(indices=[[0, 0], [0, 2], [2, 1]], values=[1, 2, 3], dense_shape=[3, 4])


def _value(v):
    """A fetched element as plain lists (SparseTensorValues as (indices, values, dense_shape))."""
    if isinstance(v, tf.SparseTensorValue):
        return (v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist())
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return tuple(_value(x) for x in v)
    return np.asarray(v).tolist()


def _drain(x, init=None, feed=None, limit=50):
    out = []
    with tf.Session() as sess:
        if init is not None:
            sess.run(init, feed)
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            while True:
                out.append(_value(sess.run(x)))
                assert len(out) <= limit, "the iterator does not end"
    return out


def _first_error(x):
    with tf.Session() as sess:
        sess.run(x)


ROWS = [([[0], [2]], [1, 2], [4]), ([], [], [4]), ([[1]], [3], [4])]   # _sp() sliced


# -- sources -------------------------------------------------------------------------------------
def test_from_tensor_slices_slices_a_sparse_tensor():
    ds = D.from_tensor_slices(_sp())
    assert ds.output_types == tf.int32 and ds.output_shapes.as_list() == [4]
    assert ds.output_classes is tf.SparseTensor
    assert tf.data.get_output_classes(ds) is tf.SparseTensor
    it = ds.make_one_shot_iterator()
    x = it.get_next()
    assert it.output_classes is tf.SparseTensor and isinstance(x, tf.SparseTensor)
    assert x.get_shape().as_list() == [4] and x.dtype == tf.int32
    assert x.indices.get_shape().as_list() == [None, 1]
    assert x.values.get_shape().as_list() == [None]
    assert x.dense_shape.get_shape().as_list() == [1]
    with tf.Session() as sess:
        first = sess.run(x)
        assert isinstance(first, tf.SparseTensorValue)
        assert first.indices.dtype == np.int64 and first.values.dtype == np.int32
        assert first.dense_shape.dtype == np.int64
        assert _value(first) == ROWS[0]
        empty = sess.run(x)
        assert empty.indices.shape == (0, 1) and empty.values.shape == (0,)
        assert _value(sess.run(x)) == ROWS[2]


def test_from_tensor_slices_mixes_sparse_and_dense_components():
    ds = D.from_tensor_slices((_sp(), [10, 20, 30]))
    assert ds.output_classes == (tf.SparseTensor, tf.Tensor)
    assert [s.as_list() for s in ds.output_shapes] == [[4], []]
    assert _drain(ds.make_one_shot_iterator().get_next()) == [(r, v) for r, v in
                                                              zip(ROWS, [10, 20, 30])]


def test_from_tensor_slices_checks_the_sparse_tensor_as_tf():
    def error(sp, other=None):
        ds = D.from_tensor_slices(sp if other is None else (sp, other))
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            _first_error(ds.make_one_shot_iterator().get_next())
        return e.value.message

    assert error(tf.SparseTensor([[2, 1], [0, 2]], [1, 2], [3, 4])) == (
        "indices[1] = [0,2] is out of order. Many sparse ops require sorted indices.\n    Use "
        "`tf.sparse.reorder` to create a correctly ordered copy.\n\n")
    assert error(tf.SparseTensor([[5, 1]], [1], [3, 4])) == \
        "indices[0] = [5,1] is out of bounds: need 0 <= index < [3,4]"
    assert error(tf.SparseTensor([[0, -1]], [1], [3, 4])) == \
        "indices[0] = [0,-1] is out of bounds: need 0 <= index < [3,4]"
    assert error(tf.SparseTensor([[0, 1], [0, 1]], [1, 2], [3, 4])) == \
        "indices[1] = [0,1] is repeated"
    assert error(tf.SparseTensor([[1]], [1], [3])).startswith(
        "Rank of input SparseTensor should be > 1, but saw rank: 1")
    # As TF, a sparse component's size is compared when the iterator starts, not when built.
    assert "same size in dimension 0, got sizes [3, 2]" in error(_sp(), [1, 2])


def test_from_tensor_slices_refuses_a_scalar_sparse_tensor():
    scalar = tf.SparseTensor(tf.zeros([0, 0], tf.int64), tf.zeros([0]), tf.zeros([0], tf.int64))
    with pytest.raises(ValueError, match="Unbatching a sparse tensor is only supported for "
                                         "rank >= 1"):
        D.from_tensor_slices(scalar)


def test_from_tensors_takes_sparse_tensors_values_and_placeholders():
    ds = D.from_tensors(tf.SparseTensorValue([[0, 1]], [2.5], [2, 3]))
    assert ds.output_classes is tf.SparseTensor and ds.output_types == tf.float32
    assert ds.output_shapes.as_list() == [2, 3]
    assert _drain(ds.make_one_shot_iterator().get_next()) == [([[0, 1]], [2.5], [2, 3])]
    p = tf.sparse_placeholder(tf.float32)
    ds = D.from_tensors(p)
    assert ds.output_shapes.ndims is None
    it = ds.make_initializable_iterator()
    x = it.get_next()
    assert x.indices.get_shape().as_list() == [None, None]
    assert x.dense_shape.get_shape().as_list() == [None]
    fed = {p: tf.SparseTensorValue([[0, 1]], [2.5], [2, 3])}
    assert _drain(x, it.initializer, fed) == [([[0, 1]], [2.5], [2, 3])]


def test_from_generator_refuses_a_sparse_tensor_value():
    ds = D.from_generator(lambda: iter([tf.SparseTensorValue([[0]], [1], [2])]), tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="`generator` yielded an element that did not match the expected "
                             "structure"):
        _first_error(ds.make_one_shot_iterator().get_next())


# -- batch, unbatch, padded_batch ----------------------------------------------------------------
def test_batch_of_sparse_tensors_as_tf1():
    ds = D.from_tensor_slices(_sp()).batch(2)
    assert ds.output_classes is tf.SparseTensor and ds.output_shapes.as_list() == [None, 4]
    assert D.from_tensor_slices(_sp()).batch(2, drop_remainder=True).output_shapes.as_list() == \
        [2, 4]
    assert _drain(ds.make_one_shot_iterator().get_next()) == [
        ([[0, 0], [0, 2]], [1, 2], [2, 4]), ([[0, 1]], [3], [1, 4])]


def test_batch_takes_each_dimensions_largest_and_keeps_each_elements_order():
    ds = D.range(3).map(lambda i: tf.SparseTensor(tf.zeros([0, 2], tf.int64),
                                                  tf.zeros([0], tf.int64), tf.stack([i + 1, 5 - i])))
    assert ds.output_shapes.as_list() == [None, None]
    assert ds.batch(3).output_shapes.as_list() == [None, None, None]
    assert _drain(ds.batch(3).make_one_shot_iterator().get_next()) == [([], [], [3, 3, 5])]
    # An element's indices are taken as they are (TF1 does not reorder them).
    ds = D.range(2).map(lambda i: tf.SparseTensor([[2], [0]], [i, i + 10], [3]))
    assert _drain(ds.batch(2).make_one_shot_iterator().get_next()) == [
        ([[0, 2], [0, 0], [1, 2], [1, 0]], [0, 10, 1, 11], [2, 3])]


def test_batch_of_string_split_results():
    ds = D.from_tensor_slices(["a b", "c", "d e f"]).map(lambda s: tf.string_split([s]))
    assert ds.output_shapes.as_list() == [None, None]
    assert _drain(ds.batch(2).make_one_shot_iterator().get_next()) == [
        ([[0, 0, 0], [0, 0, 1], [1, 0, 0]], [b"a", b"b", b"c"], [2, 1, 2]),
        ([[0, 0, 0], [0, 0, 1], [0, 0, 2]], [b"d", b"e", b"f"], [1, 1, 3])]


def test_batch_refuses_sparse_tensors_of_different_ranks():
    def sparse(i):
        shape = tf.cond(tf.equal(i, 0), lambda: tf.constant([3], tf.int64),
                        lambda: tf.constant([3, 2], tf.int64))
        return tf.SparseTensor(tf.zeros([0, tf.size(shape)], tf.int64), tf.zeros([0], tf.int32),
                               shape)
    x = D.range(2).map(sparse).batch(2).make_one_shot_iterator().get_next()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Inconsistent shape across SparseTensors: rank prior to "
                             r"SparseTensor\[1\] was: 1 but rank of SparseTensor\[1\] is: 2"):
        _first_error(x)


def test_a_map_on_sparse_elements_is_not_moved_past_batch():
    # dense_shape + 1 is elementwise on the plain tensors, not on the batched SparseTensor.
    ds = D.from_tensor_slices(_sp()).map(lambda st: st.dense_shape + 1).batch(2)
    assert _drain(ds.make_one_shot_iterator().get_next()) == [[[5], [5]], [[5]]]


def test_unbatch_splits_sparse_tensors():
    ds = D.from_tensor_slices((_sp(), [1, 2, 3])).batch(2).unbatch()
    assert ds.output_classes == (tf.SparseTensor, tf.Tensor)
    assert [s.as_list() for s in ds.output_shapes] == [[4], []]
    assert _drain(ds.make_one_shot_iterator().get_next()) == [(r, v) for r, v in
                                                              zip(ROWS, [1, 2, 3])]
    ds = D.from_tensors((_sp(), [1, 2])).unbatch()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Component 0 had size 3 but component 1 had size, 2"):
        _first_error(ds.make_one_shot_iterator().get_next())


def test_unbatch_refuses_sparse_tensors_of_rank_below_two_as_tf():
    ds = D.from_tensors(tf.SparseTensor([[1], [3]], [7, 8], [4])).unbatch()
    assert ds.output_shapes.as_list() == []
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Rank of input SparseTensor should be > 1, but saw rank: 1"):
        _first_error(ds.make_one_shot_iterator().get_next())
    scalar = tf.SparseTensor(tf.zeros([1, 0], tf.int64), [1.0], tf.zeros([0], tf.int64))
    with pytest.raises(ValueError, match="Unbatching a sparse tensor is only supported for "
                                         "rank >= 1"):
        D.from_tensors(scalar).unbatch()


def test_padded_batch_refuses_sparse_components():
    with pytest.raises(TypeError, match="`padded_batch` is only supported for datasets that "
                                        "produce tensor elements"):
        D.from_tensor_slices(_sp()).padded_batch(2, [None])


# -- functions -----------------------------------------------------------------------------------
def test_map_returns_sparse_tensors_and_sparse_tensor_values():
    ds = D.range(3).map(lambda i: tf.SparseTensor([[0]], [i], [5]))
    assert ds.output_classes is tf.SparseTensor and ds.output_types == tf.int64
    assert ds.output_shapes.as_list() == [5]
    assert _drain(ds.make_one_shot_iterator().get_next()) == [([[0]], [i], [5]) for i in range(3)]
    ds = D.range(2).map(lambda i: tf.SparseTensorValue([[0]], [1.0], [2]))
    assert ds.output_classes is tf.SparseTensor and ds.output_shapes.as_list() == [2]
    assert _drain(ds.make_one_shot_iterator().get_next()) == [([[0]], [1.0], [2])] * 2


def test_map_and_filter_receive_sparse_tensors():
    ds = D.from_tensor_slices(_sp())
    mapped = ds.map(lambda st: {"a": st, "b": (tf.sparse_reduce_sum(st), st)})
    assert mapped.output_classes == {"a": tf.SparseTensor, "b": (tf.Tensor, tf.SparseTensor)}
    assert mapped.output_shapes["a"].as_list() == [4]
    got = _drain(mapped.make_one_shot_iterator().get_next())
    assert got == [{"a": r, "b": (s, r)} for r, s in zip(ROWS, [3, 0, 3])]
    kept = ds.filter(lambda st: tf.greater(tf.size(st.values), 0))
    assert _drain(kept.make_one_shot_iterator().get_next()) == [ROWS[0], ROWS[2]]
    with pytest.raises(ValueError, match="`predicate` return type must be convertible to a "
                                         "scalar boolean tensor"):
        ds.filter(lambda st: st)


def test_flat_map_and_interleave_carry_sparse_tensors():
    fm = D.from_tensor_slices(_sp()).batch(2).flat_map(lambda st: D.from_tensors(st).unbatch())
    assert fm.output_classes is tf.SparseTensor
    assert _drain(fm.make_one_shot_iterator().get_next()) == ROWS
    il = D.range(2).interleave(lambda i: D.from_tensors(tf.SparseTensor([[i]], [i], [3]))
                               .repeat(2), cycle_length=2)
    assert il.output_classes is tf.SparseTensor and il.output_shapes.as_list() == [3]
    assert _drain(il.make_one_shot_iterator().get_next()) == [
        ([[0]], [0], [3]), ([[1]], [1], [3])] * 2


# -- other transformations -----------------------------------------------------------------------
def test_element_order_transformations_carry_sparse_tensors():
    ds = D.from_tensor_slices(_sp())
    got = _drain(ds.cache().repeat(2).skip(2).take(3).make_one_shot_iterator().get_next())
    assert got == [ROWS[2], ROWS[0], ROWS[1]]
    shuffled = _drain(ds.shuffle(3, seed=1).make_one_shot_iterator().get_next())
    assert sorted(shuffled) == sorted(ROWS)
    both = ds.concatenate(ds.map(lambda st: tf.SparseTensor(st.indices, st.values * 10,
                                                            st.dense_shape)))
    assert both.output_classes is tf.SparseTensor
    assert _drain(both.make_one_shot_iterator().get_next())[3:] == [
        (i, [v * 10 for v in vs], s) for i, vs, s in ROWS]
    zipped = D.zip((ds, D.range(3))).enumerate()
    assert zipped.output_classes == (tf.Tensor, (tf.SparseTensor, tf.Tensor))
    assert _drain(zipped.make_one_shot_iterator().get_next()) == [
        (k, (r, k)) for k, r in enumerate(ROWS)]


def test_concatenate_refuses_sparse_with_dense():
    dense = D.from_tensor_slices(tf.constant([[1, 2, 3, 4]] * 3))
    with pytest.raises(TypeError, match="same component classes"):
        D.from_tensor_slices(_sp()).concatenate(dense)


# -- iterators -----------------------------------------------------------------------------------
def test_reinitializable_iterator_with_output_classes():
    ds = D.from_tensor_slices(_sp())
    it = tf.data.Iterator.from_structure(tf.int32, tf.TensorShape([4]),
                                         output_classes=tf.SparseTensor)
    assert it.output_classes is tf.SparseTensor
    x = it.get_next()
    assert isinstance(x, tf.SparseTensor) and x.get_shape().as_list() == [4]
    assert x.indices.get_shape().as_list() == [None, 1]
    assert _drain(x, it.make_initializer(ds)) == ROWS
    dense = D.from_tensor_slices(tf.constant([[1, 2, 3, 4]] * 3))
    with pytest.raises(TypeError, match="Expected output classes .*SparseTensor.* but got dataset "
                                        "with output classes .*Tensor"):
        it.make_initializer(dense)
    plain = tf.data.Iterator.from_structure(tf.int32, tf.TensorShape([4]))
    assert plain.output_classes is tf.Tensor
    with pytest.raises(TypeError, match="Expected output classes .*Tensor'> but got dataset with "
                                        "output classes .*SparseTensor"):
        plain.make_initializer(ds)


def test_from_structure_checks_output_classes():
    with pytest.raises(TypeError, match="Could not build a structure for output class int"):
        tf.data.Iterator.from_structure(tf.int32, output_classes=int)
    with pytest.raises(TypeError, match="output_classes .* must have the structure of "
                                        r"output_types \(\., \.\)"):
        tf.data.Iterator.from_structure((tf.int32, tf.int32), output_classes=tf.SparseTensor)


def test_initializable_iterator_of_nested_sparse_elements():
    ds = D.from_tensor_slices(_sp()).map(lambda st: {"a": st, "b": (st.values, st)})
    it = ds.make_initializable_iterator()
    assert it.output_classes == {"a": tf.SparseTensor, "b": (tf.Tensor, tf.SparseTensor)}
    again = tf.data.Iterator.from_structure(ds.output_types, ds.output_shapes,
                                            output_classes=ds.output_classes)
    assert again.output_classes == it.output_classes
    assert _drain(it.get_next(), it.initializer)[2] == {"a": ROWS[2], "b": ([3], ROWS[2])}


def test_feedable_iterator_with_output_classes():
    ds = D.from_tensor_slices(_sp())
    handle = tf.placeholder(tf.string, [])
    feedable = tf.data.Iterator.from_string_handle(handle, ds.output_types, ds.output_shapes,
                                                   ds.output_classes)
    assert feedable.output_classes is tf.SparseTensor
    x = feedable.get_next()
    dense_view = tf.data.Iterator.from_string_handle(handle, ds.output_types, ds.output_shapes)
    y = dense_view.get_next()
    source = ds.make_one_shot_iterator()
    with tf.Session() as sess:
        h = sess.run(source.string_handle())
        assert _value(sess.run(x, {handle: h})) == ROWS[0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="do not match the types"):
            sess.run(y, {handle: h})


# -- end to end: TFRecords of Examples, parsed with a VarLenFeature ------------------------------
def test_tfrecords_parsed_with_var_len_feature_and_batched(tmp_path):
    path = str(tmp_path / "examples.tfrecord")
    with tf.python_io.TFRecordWriter(path) as writer:
        for tags, label in [([b"a", b"b"], 1), ([], 2), ([b"c", b"d", b"e"], 3)]:
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "tags": tf.train.Feature(bytes_list=tf.train.BytesList(value=tags)),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}))
                .SerializeToString())
    spec = {"tags": tf.VarLenFeature(tf.string), "label": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(path).map(lambda r: tf.parse_single_example(r, spec))
    assert ds.output_classes == {"tags": tf.SparseTensor, "label": tf.Tensor}
    assert ds.output_types == {"tags": tf.string, "label": tf.int64}
    ds = ds.batch(2)
    assert {k: s.as_list() for k, s in ds.output_shapes.items()} == \
        {"tags": [None, None], "label": [None]}
    it = ds.make_initializable_iterator()
    x = it.get_next()
    assert x["tags"].indices.get_shape().as_list() == [None, 2]
    dense = tf.sparse_tensor_to_dense(x["tags"], default_value="")
    with tf.Session() as sess:
        sess.run(it.initializer)
        first = sess.run(x)
        assert first["tags"].values.dtype == object
        assert _value(first) == {"tags": ([[0, 0], [0, 1]], [b"a", b"b"], [2, 2]),
                                 "label": [1, 2]}
        assert _value(sess.run(x)) == {
            "tags": ([[0, 0], [0, 1], [0, 2]], [b"c", b"d", b"e"], [1, 3]), "label": [3]}
        sess.run(it.initializer)
        assert sess.run(dense).tolist() == [[b"a", b"b"], [b"", b""]]
