"""Regressions from a side-by-side audit of tf.data and decode_csv against TensorFlow.

Every expected value here is what TensorFlow 2.21 (``tensorflow.compat.v1`` with v2 behavior
disabled) gave for the same program.
"""

import numpy as np
import pytest

import zps as tf

D = tf.data.Dataset


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def _all(ds, feed=None):
    """Every element of ``ds`` (an initializable iterator read to its end), as Python values."""
    it = tf.data.make_initializable_iterator(ds)
    x = it.get_next()
    out = []
    with tf.Session() as sess:
        sess.run(it.initializer, feed)
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            while True:
                v = sess.run(x)
                out.append(tuple(np.asarray(c).tolist() for c in v) if isinstance(v, tuple)
                           else np.asarray(v).tolist())
                assert len(out) < 100, "the dataset does not end"
    return out


def _first_error(ds):
    x = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        sess.run(x)


# -- Dataset.shard ---------------------------------------------------------------------------
@pytest.mark.parametrize("num_shards, index, expected", [
    (2, 0, [0, 2, 4, 6]), (2, 1, [1, 3, 5]), (3, 2, [2, 5]), (1, 0, [0, 1, 2, 3, 4, 5, 6])])
def test_shard_takes_every_nth_element_from_index(num_shards, index, expected):
    ds = D.range(7).shard(num_shards, index)
    assert ds.output_types == tf.int64 and ds.output_shapes.as_list() == []
    assert _all(ds) == expected


def test_shard_index_may_be_fed():
    p = tf.placeholder(tf.int64, [])
    assert _all(D.range(7).shard(3, p), {p: 1}) == [1, 4]


def test_shard_keeps_the_element_structure():
    ds = D.from_tensor_slices(([1, 2, 3], ["a", "b", "c"])).shard(2, 1)
    assert _all(ds) == [(2, b"b")]


@pytest.mark.parametrize("num_shards, index, message", [
    (0, 0, "Number of shards must be greater than zero"),
    (3, 3, "Index must be between 0 and 2"),
    (2, -1, "Index must be between 0 and 1")])
def test_shard_rejects_bad_arguments_when_the_iterator_starts(num_shards, index, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _first_error(D.range(7).shard(num_shards, index))


def test_cardinality_of_shard():
    card = tf.data.experimental.cardinality
    counts = [card(D.range(5).shard(2, 1)), card(D.range(7).shard(3, 0)),
              card(D.range(5).repeat().shard(2, 0)), card(D.range(5).filter(lambda x: x > 1)
                                                          .shard(2, 0))]
    assert tf.Session().run(counts) == [2, 3, -1, -2]


# -- flat_map / interleave over tuple elements -------------------------------------------------
def test_flat_map_of_tuple_elements_returns_the_inner_structure():
    ds = D.from_tensor_slices(([1, 2], [3, 4]))
    ds = ds.flat_map(lambda a, b: D.from_tensors(a + b).repeat(2))
    assert ds.output_types == tf.int32 and ds.output_shapes.as_list() == []
    assert _all(ds) == [4, 4, 6, 6]


def test_interleave_of_tuple_elements_returns_the_inner_structure():
    ds = D.from_tensor_slices(([1, 2], [10, 20]))
    ds = ds.interleave(lambda a, b: D.from_tensors(a * b).repeat(2), cycle_length=2)
    assert _all(ds) == [10, 40, 10, 40]


# -- padded_batch ------------------------------------------------------------------------------
def test_padded_batch_pads_a_known_dimension_to_a_larger_one():
    ds = D.from_tensor_slices(np.ones((3, 2), np.float32)).padded_batch(2, padded_shapes=[4])
    assert ds.output_shapes.as_list() == [None, 4]
    assert _all(ds) == [[[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]], [[1.0, 1.0, 0.0, 0.0]]]


def test_padded_batch_refuses_a_known_dimension_larger_than_its_padded_shape():
    ds = D.from_tensor_slices(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="not compatible"):
        ds.padded_batch(2, padded_shapes=[2])


def test_padded_shapes_as_a_constant_tensor():
    ds = D.range(1, 3).map(lambda x: tf.fill([x], x))
    ds = ds.padded_batch(2, padded_shapes=tf.constant([4], tf.int64))
    assert ds.output_shapes.as_list() == [None, 4]
    assert _all(ds) == [[[1, 0, 0, 0], [2, 2, 0, 0]]]


def test_padded_shapes_default_to_the_element_shapes():
    ds = D.range(1, 3).map(lambda x: tf.fill([x], x)).padded_batch(2)
    assert ds.output_shapes.as_list() == [None, None]
    assert _all(ds) == [[[1, 0], [2, 2]]]


def test_padded_shapes_are_needed_for_elements_of_unknown_rank():
    ds = D.range(1, 3).map(lambda x: tf.py_func(lambda v: v, [x], tf.int64))
    with pytest.raises(ValueError, match="padded_shapes"):
        ds.padded_batch(2)


def test_padding_values_must_be_scalars_of_the_component_type():
    ds = D.range(1, 3).map(lambda x: tf.fill([x], x))
    with pytest.raises(ValueError, match="should be scalars"):
        ds.padded_batch(2, [None], padding_values=tf.constant([1, 2], tf.int64))
    with pytest.raises(TypeError, match="does not match type"):
        ds.padded_batch(2, [None], padding_values=tf.constant(-1, tf.int32))


# -- unbatch -----------------------------------------------------------------------------------
def test_unbatch_refuses_components_of_different_static_batch_sizes():
    with pytest.raises(ValueError, match="Encountered both 2 and 3"):
        D.from_tensors(([1, 2], [1, 2, 3])).unbatch()


# -- decode_csv --------------------------------------------------------------------------------
def test_decode_csv_of_one_column_has_the_records_shape():
    (a,) = tf.io.decode_csv(["+5", "7"], [[0]])
    (b,) = tf.io.decode_csv(["7", "2.5"], [[1.5]])
    (c,) = tf.io.decode_csv(["a,b"], [["z"]], select_cols=[1])
    assert a.shape.as_list() == [2]
    va, vb, vc = tf.Session().run([a, b, c])
    assert va.shape == (2,) and va.tolist() == [5, 7]
    assert vb.dtype == np.float32 and vb.tolist() == [7.0, 2.5]
    assert vc.tolist() == [b"b"]
    (empty,) = tf.io.decode_csv([""], [[0]])   # an empty record has no field, as in TF
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 1 fields but have 0"):
        tf.Session().run(empty)


@pytest.mark.parametrize("record", ["1,2\r", "1,2\n3"])
def test_decode_csv_refuses_line_breaks_in_unquoted_fields(record):
    a, b = tf.io.decode_csv([record], [[0], [0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unquoted fields cannot have"):
        tf.Session().run([a, b])


def test_decode_csv_keeps_line_breaks_in_quoted_fields():
    a, b = tf.io.decode_csv(['"a\r\n",1'], [[""], [0]])
    va, vb = tf.Session().run([a, b])
    assert va.tolist() == [b"a\r\n"] and vb.tolist() == [1]
