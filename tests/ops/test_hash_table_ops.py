"""Hash table ops (zps.ops.hash_table_ops): gradient coverage and the routing/initializer kernels.

The behaviour of tables (lookups, updates, eviction, checkpoints, clusters) is tested through the
public API in tests/contrib/test_hash_embedding.py.
"""

import numpy as np
import pytest

import zps as tf
from zps.ops import hash_table_ops as h
from zps.testing.gradient_checker import GradCase, check_gradients


def _rows_times_x(x):
    # HashTableFind's gradient with respect to the table is an IndexedSlices keyed by id (checked
    # exactly in tests/contrib/test_hash_embedding.py); here its rows feed a differentiable product.
    table = h.hash_table_shard(3, dtype=tf.float64, initializer=("uniform", -1.0, 1.0), seed=5)
    with tf.control_dependencies([h.hash_table_init(table)]):
        rows = h.hash_table_find(table, tf.constant([11, 2**41, 3], tf.int64))
    return rows * x


_POSITIONS = np.array([[2, 0, 2], [1, 3, 2]], np.int64)  # into concat(shard rows): 1 + 3 rows


def _stitch_second_order(a, b):
    # d/d(a, b) of (d/d rows of sum(stitch(rows) * c)) . w: differentiates HashTableStitchGrad.
    c = tf.constant(np.arange(2 * 3 * 2, dtype=np.float64).reshape(2, 3, 2))
    out = h.hash_table_stitch(_POSITIONS, [a, b])
    ga, gb = tf.gradients(tf.reduce_sum(out * out * c), [a, b])
    return tf.concat([ga, gb], 0)


R = np.random.default_rng(0)
GRAD_CASES = [
    GradCase("HashTableFind", _rows_times_x, [R.standard_normal((3, 3))],
             name="hash_table_find_rows"),
    GradCase("HashTableStitch", lambda a, b: h.hash_table_stitch(_POSITIONS, [a, b]),
             [R.standard_normal((1, 2)), R.standard_normal((3, 2))]),
    GradCase("HashTableStitchGrad", _stitch_second_order,
             [R.standard_normal((1, 2)), R.standard_normal((3, 2))]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_route_deduplicates_and_splits_by_shard():
    ids = np.array([[5, 2**40 + 1, 5], [-7, 0, 2**40 + 1]], np.int64)
    with tf.Graph().as_default():
        parts, positions = h.hash_table_route(tf.constant(ids), 3)
        assert positions.get_shape().as_list() == [2, 3]
        with tf.Session() as sess:
            parts_v, pos_v = sess.run([parts, positions])
    uniq = np.unique(ids)
    shard = h.shard_of(uniq, 3)
    for p in range(3):
        np.testing.assert_array_equal(parts_v[p], np.sort(uniq[shard == p]))
    np.testing.assert_array_equal(np.concatenate(parts_v)[pos_v], ids)


def test_shard_of_is_balanced_and_stable():
    ids = np.arange(100000, dtype=np.int64) * 4096  # strided ids must still spread evenly
    counts = np.bincount(h.shard_of(ids, 4), minlength=4)
    assert counts.min() > 0.95 * len(ids) / 4
    assert h.shard_of(np.array([12345], np.int64), 7)[0] == h.shard_of(np.array([12345]), 7)[0]


def test_initial_rows_are_a_function_of_the_id():
    ids = np.array([1, 2, 2**62, -3], np.int64)
    a = h.initial_rows(ids, 16, np.float32, ("uniform", -0.5, 0.5), seed=9)
    b = h.initial_rows(ids[::-1], 16, np.float32, ("uniform", -0.5, 0.5), seed=9)
    np.testing.assert_array_equal(a, b[::-1])
    assert a.dtype == np.float32 and np.all(np.abs(a) < 0.5)
    c = h.initial_rows(ids, 16, np.float32, ("uniform", -0.5, 0.5), seed=10)
    assert not np.allclose(a, c)
    big = h.initial_rows(np.arange(20000), 8, np.float64, ("truncated_normal", 1.0, 0.5), seed=0)
    assert np.all(np.abs(big - 1.0) <= 1.0) and abs(big.mean() - 1.0) < 0.01
    assert 0.4 < big.std() < 0.5  # a normal truncated at 2 sigma has std 0.88 sigma
    normal = h.initial_rows(np.arange(20000), 8, np.float64, ("normal", 0.0, 2.0), seed=0)
    assert abs(normal.std() - 2.0) < 0.05
    np.testing.assert_array_equal(h.initial_rows(ids, 2, np.float32, ("constant", 0.25), 0),
                                  np.full((4, 2), 0.25, np.float32))


def test_find_needs_a_table_and_a_vector_of_ids():
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([3, 2]))
        with pytest.raises(TypeError, match="needs a hash table shard"):
            h.hash_table_find(v, tf.constant([1], tf.int64))
        table = h.hash_table_shard(2)
        with pytest.raises(ValueError, match="must be a vector of unique ids"):
            h.hash_table_find(table, tf.constant([[1]], tf.int64))
        with pytest.raises(TypeError, match="ids must be int64 or int32, got float32"):
            h.hash_table_find(table, tf.constant([1.0]))
        with pytest.raises(ValueError, match="eviction must be one of"):
            h.hash_table_shard(2, eviction="fifo")
        with pytest.raises(TypeError, match="dtype must be a float type"):
            h.hash_table_shard(2, dtype=tf.int32)


def test_duplicate_ids_given_to_find_share_one_row():
    with tf.Graph().as_default():
        table = h.hash_table_shard(2, initializer=("uniform", 0.0, 1.0))
        rows = h.hash_table_find(table, tf.constant([4, 4, 9], tf.int64))
        with tf.Session() as sess:
            sess.run(h.hash_table_init(table))
            r = sess.run(rows)
            assert sess.run(h.hash_table_size(table)) == 2
    np.testing.assert_array_equal(r[0], r[1])


def test_stitch_puts_rows_back_and_its_gradient_sums_repeated_ids():
    a = np.array([[1.0, 2.0]])
    b = np.array([[3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    g = np.arange(12, dtype=np.float64).reshape(2, 3, 2)
    with tf.Graph().as_default():
        ta, tb = tf.constant(a), tf.constant(b)
        out = h.hash_table_stitch(_POSITIONS, [ta, tb])
        assert out.get_shape().as_list() == [2, 3, 2]
        grads = tf.gradients(out, [ta, tb], grad_ys=[tf.constant(g)])
        with tf.Session() as sess:
            out_v, (ga, gb) = sess.run(out), sess.run(grads)
    rows = np.concatenate([a, b])
    np.testing.assert_array_equal(out_v, rows[_POSITIONS])
    dense = np.zeros((4, 2))
    np.add.at(dense, _POSITIONS.ravel(), g.reshape(-1, 2))
    np.testing.assert_array_equal(ga, dense[:1])
    np.testing.assert_array_equal(gb, dense[1:])


def test_eviction_compaction_keeps_keys_rows_and_slots_together():
    t = h.HashTableResource("t", 2, np.float64, ("zeros",), 0, 128, "lru", 0, 0, 1)
    t.slot("s", 0.0)
    rng = np.random.default_rng(0)
    sizes = []
    for _ in range(60):
        ids = np.unique(rng.integers(0, 400, size=40))
        rows = t.rows_of(ids)
        np.testing.assert_array_equal(t.keys[rows], ids)
        t.values[rows, 0] = ids          # each row and its slot carry their id
        t.slot("s", 0.0)[rows, 1] = -ids
        t.touch(rows)
        assert t.size <= 128 and len(t.index) == t.size
        sizes.append(t.size)
    n = t.size
    # each full step evicts 128 // 64 rows more than it needs (and compacts the shard)
    assert t.evictions > 0 and max(sizes) == 126
    np.testing.assert_array_equal(t.index.get(t.keys[:n]), np.arange(n))
    np.testing.assert_array_equal(t.values[:n, 0], t.keys[:n])
    np.testing.assert_array_equal(t.slots["s"][:n, 1], -t.keys[:n])


def test_id_index_matches_a_dict_under_inserts_removals_and_moves():
    index = h.IdIndex(16)
    model = {}
    rng = np.random.default_rng(1)
    for step in range(200):
        ids = np.unique(rng.integers(-2**62, 2**62, size=rng.integers(1, 50)))
        ids = np.concatenate([ids, rng.integers(0, 64, size=8)])  # small ids collide often
        ids = np.unique(ids)
        present = index.get(ids)
        np.testing.assert_array_equal(present, [model.get(k, -1) for k in ids.tolist()])
        new = ids[present < 0]
        index.insert(new, np.arange(len(new)) + 1000 * step)
        model.update(zip(new.tolist(), (np.arange(len(new)) + 1000 * step).tolist()))
        gone = np.array([k for k in list(model)[:: 3]][:20], np.int64)
        index.remove(gone)
        for k in gone.tolist():
            del model[k]
        moved = np.array(list(model)[:5], np.int64)
        index.set_rows(moved, np.arange(len(moved)) + 7)
        model.update(zip(moved.tolist(), range(7, 7 + len(moved))))
        assert len(index) == len(model)
    keys = np.array(list(model), np.int64)
    np.testing.assert_array_equal(index.get(keys), [model[k] for k in keys.tolist()])
    big = h.IdIndex()
    big.insert(np.arange(100000) * 7919, np.arange(100000))
    assert big.nbytes <= 80 * 100000
    np.testing.assert_array_equal(big.get(np.array([7919 * 5, 3])), [5, -1])


def test_a_shard_starts_uninitialized_and_every_use_fails_until_init_or_restore():
    with tf.Graph().as_default():
        table = h.hash_table_shard(2, initializer=("constant", 0.5), name="t")
        ids = tf.constant([4, 9], tf.int64)
        uses = [h.hash_table_find(table, ids), h.hash_table_size(table), h.hash_table_stats(table),
                h.hash_table_export(table)[0],
                h.hash_table_sparse_apply_gradient_descent(table, 1.0, np.ones((2, 2)), ids)]
        is_init = h.hash_table_is_initialized(table)
        init = h.hash_table_init(table)
        with tf.Session() as sess:
            assert not sess.run(is_init)
            for use in uses:
                with pytest.raises(tf.errors.FailedPreconditionError,
                                   match="uninitialized hash table shard t: run its initializer "
                                   r"\(tf.tables_initializer\(\).*or restore it from a checkpoint"):
                    sess.run(use)
            sess.run(init)
            assert sess.run(is_init)
            sess.run(uses[-1])
            np.testing.assert_array_equal(sess.run(uses[0]), [[-0.5, -0.5], [-0.5, -0.5]])
            sess.run(init)   # idempotent: an initialized shard keeps its rows
            assert sess.run(uses[1]) == 2
    with tf.Graph().as_default():  # an import (a restore) initializes a fresh shard
        table = h.hash_table_shard(2, name="t")
        load = h.hash_table_import(table, np.array([3], np.int64), np.ones((1, 2), np.float32),
                                   np.zeros(1, np.int64), np.zeros(1, np.int64))
        with tf.Session() as sess:
            sess.run(load)
            assert sess.run(h.hash_table_is_initialized(table))
            np.testing.assert_array_equal(sess.run(h.hash_table_find(table, [3])), [[1.0, 1.0]])
