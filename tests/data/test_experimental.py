"""tf.data.experimental: transformations for Dataset.apply, and ignore_errors' resumption.

Expected values were produced by TensorFlow 2.21 (``tensorflow.compat.v1``) running the same
programs.
"""

import logging

import numpy as np
import pytest

import zps as tf
from tests.data.test_dataset import INTERLEAVED, _all

D = tf.data.Dataset
E = tf.data.experimental


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_autotune_is_tfs_constant():
    assert E.AUTOTUNE == -1


def test_map_and_batch_is_map_then_batch():
    ds = D.range(5).apply(E.map_and_batch(lambda x: x * 2, 2))
    assert ds.output_shapes.as_list() == [None]
    assert _all(ds) == [[0, 2], [4, 6], [8]]
    ds = D.range(5).apply(E.map_and_batch(lambda x: (x, -x), 2, drop_remainder=True,
                                          num_parallel_calls=E.AUTOTUNE))
    assert [s.as_list() for s in ds.output_shapes] == [[2], [2]]
    assert _all(ds) == [([0, 1], [0, -1]), ([2, 3], [-2, -3])]
    with pytest.raises(ValueError, match="only one of `num_parallel_batches` and "
                                         "`num_parallel_calls`"):
        E.map_and_batch(lambda x: x, 2, num_parallel_batches=1, num_parallel_calls=1)


def test_shuffle_and_repeat_reshuffles_each_epoch_apart():
    def order():
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            return _all(D.range(10).apply(E.shuffle_and_repeat(5, count=3, seed=2)))
    out = order()
    assert out == order()
    assert all(sorted(out[i:i + 10]) == list(range(10)) for i in (0, 10, 20))
    assert out[:10] != out[10:20]
    assert len(_all(D.range(3).apply(E.shuffle_and_repeat(2)).take(7))) == 7   # count None: forever


def test_unbatch_and_enumerate_dataset():
    ds = D.from_tensor_slices([[1, 2], [3, 4]]).apply(E.unbatch())
    assert ds.output_shapes.as_list() == [] and _all(ds) == [1, 2, 3, 4]
    ds = D.from_tensor_slices([5, 6]).apply(E.enumerate_dataset(start=3))
    assert [s.as_list() for s in ds.output_shapes] == [[], []]
    assert _all(ds) == [(3, 5), (4, 6)]


@pytest.mark.parametrize("sizes, cycle_length, block_length, expected", INTERLEAVED)
def test_parallel_interleave_order_is_tfs_with_sloppy_false(sizes, cycle_length, block_length,
                                                            expected):
    ds = D.from_tensor_slices(np.array(sizes, np.int64)).apply(E.parallel_interleave(
        lambda x: D.range(x * 10, x * 11), cycle_length, block_length,
        buffer_output_elements=2, prefetch_input_elements=1))
    assert _all(ds) == expected


def _inverses(values):
    return D.from_tensor_slices(values).map(lambda x: tf.check_numerics(1.0 / x, "inf"))


@pytest.mark.parametrize("make, expected", [
    (lambda: _inverses([1.0, 0.0, 2.0]), [1.0, 0.5]),
    (lambda: _inverses([1.0, 0.0, 2.0, 4.0, 8.0]).batch(2), [[0.5, 0.25], [0.125]]),
    (lambda: _inverses([1.0, 0.0, 2.0, 4.0, 8.0]).map(
        lambda x: tf.fill([tf.cast(1 / x, tf.int32)], x)).padded_batch(2, [None]),
     [[[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]], [[0.125] * 8]]),
    (lambda: _inverses([1.0, 0.0, 2.0]).repeat(2), [1.0, 0.5, 1.0, 0.5]),
    (lambda: _inverses([0.0, 2.0, 0.0, 4.0, 8.0]).skip(1), [0.25, 0.125]),
    (lambda: _inverses([1.0, 0.0, 4.0, 8.0]).take(2), [1.0, 0.25]),
    (lambda: D.zip((_inverses([1.0, 0.0, 2.0, 4.0]), _inverses([0.0, 1.0, 2.0, 4.0]))),
     [(0.5, 0.5), (0.25, 0.25)]),
    (lambda: _inverses([1.0, 0.0]).concatenate(_inverses([0.0, 2.0])), [1.0, 0.5]),
    (lambda: _inverses([1.0, 0.0, 2.0, 4.0]).filter(lambda x: x < 1), [0.5, 0.25]),
    (lambda: _inverses([1.0, 0.0, 2.0]).cache().repeat(2), [1.0, 0.5, 1.0, 0.5]),
    (lambda: _inverses([1.0, 0.0, 2.0]).map(lambda x: tf.stack([x, x])).unbatch(),
     [1.0, 1.0, 0.5, 0.5]),
    (lambda: D.range(3).flat_map(lambda n: _inverses([1.0, 0.0, 4.0]).take(n)), [1.0, 1.0, 0.25]),
    (lambda: D.from_tensor_slices([0.0, 2.0]).interleave(
        lambda x: _inverses([x, 4.0]), cycle_length=2), [0.25, 0.5, 0.25]),
    (lambda: _inverses([0.0, 0.0]).repeat(), []),
], ids=["map", "batch-drops-its-partial-batch", "padded_batch", "repeat", "skip", "take", "zip",
        "concatenate", "filter", "cache", "unbatch", "flat_map", "interleave",
        "all-errors-repeated-forever"])
def test_ignore_errors_reads_past_failed_elements_as_tf(make, expected):
    assert _all(make().apply(E.ignore_errors())) == expected


def test_ignore_errors_after_a_shuffle_keeps_its_buffer():
    ds = _inverses([0.0, 2.0, 0.0, 4.0, 8.0]).shuffle(10, seed=1).take(5)
    assert sorted(_all(ds.apply(E.ignore_errors()))) == [0.125, 0.25, 0.5]


def test_ignore_errors_logs_with_log_warning(caplog):
    ds = _inverses([0.0, 2.0]).apply(E.ignore_errors(log_warning=True))
    with caplog.at_level(logging.WARNING, logger="zps.data"):
        assert _all(ds) == [0.5]
    assert "ignoring error" in caplog.text and "inf" in caplog.text


def test_ignore_errors_skips_bad_elements_of_a_generator():
    ds = D.from_generator(lambda: iter([1, "x", 3]), tf.int64, []).apply(E.ignore_errors())
    assert _all(ds) == [1, 3]
