"""tf.nn.embedding_lookup / embedding_lookup_sparse over one table or partitioned shards."""

import numpy as np
import pytest

import zps as tf
from zps.ops import partition_ops, sparse_ops
from zps.ops.embedding_ops import embedding_lookup, embedding_lookup_sparse
from zps.ops.partitioned_variables import fixed_size_partitioner
from zps.ops.variable_scope import get_variable
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(11)

GRAD_CASES = [
    GradCase("Gather", lambda p, i: embedding_lookup(p, i), [R.standard_normal((5, 3)),
                                                             np.array([[4, 0], [4, 2]])],
             name="embedding_lookup"),
    GradCase("Gather", lambda p, i: embedding_lookup([p], i, max_norm=1.0),
             [R.standard_normal((4, 3)) * 2, np.array([1, 3, 1])], name="embedding_lookup_max_norm"),
    GradCase("DynamicStitch", lambda a, b, c: embedding_lookup([a, b, c], [[7, 0], [3, 7]],
                                                               partition_strategy="div"),
             [R.standard_normal((3, 2)), R.standard_normal((3, 2)), R.standard_normal((2, 2))],
             name="embedding_lookup_div"),
    GradCase("DynamicStitch", lambda a, b: embedding_lookup([a, b], [5, 0, 3, 5], max_norm=0.5),
             [R.standard_normal((3, 2)), R.standard_normal((3, 2))], name="embedding_lookup_mod"),
    GradCase("SparseSegmentMean", lambda a, b: embedding_lookup_sparse(
        [a, b], sparse_ops.SparseTensor([[0, 0], [0, 1], [2, 0]], [3, 1, 3], [3, 2]), None),
        [R.standard_normal((2, 2)), R.standard_normal((2, 2))], name="embedding_lookup_sparse"),
    GradCase("UnsortedSegmentSum", lambda a, w: embedding_lookup_sparse(
        a, sparse_ops.SparseTensor([[0, 0], [0, 1], [1, 0]], [2, 2, 0], [2, 2]),
        sparse_ops.SparseTensor([[0, 0], [0, 1], [1, 0]], w, [2, 2]), combiner="sqrtn"),
        [R.standard_normal((3, 2)), np.array([0.5, 2.0, 1.5])],
        name="embedding_lookup_sparse_weighted"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _table():
    return np.arange(15, dtype=np.float32).reshape(5, 3)


def _mod_order(n, shards):
    """Row of the concatenated shards that holds id i under "mod" (TF1's layout)."""
    sizes = [n // shards + (k < n % shards) for k in range(shards)]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.array([offsets[i % shards] + i // shards for i in range(n)])


def test_lookup_values_and_static_shape():
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int64, [None, 2])
        rows = embedding_lookup(_table(), ids, name="look")
        assert rows.get_shape().as_list() == [None, 2, 3]
        assert rows.op.name == "look"
        with tf.Session() as sess:
            out = sess.run(rows, {ids: [[4, 0], [1, 1]]})
    np.testing.assert_array_equal(out, _table()[[[4, 0], [1, 1]]])


def test_lookup_runs_where_the_table_lives():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            table = tf.Variable(_table(), name="table")
        with tf.device("/job:worker/task:0"):
            rows = embedding_lookup(table, [3, 0, 3], name="lookup")
        gathers = [op for op in tf.get_default_graph().get_operations() if op.type == "Gather"]
        on_table = [op for op in gathers if op.inputs[0].op.name == "table/read"]
        assert len(on_table) == 1 and on_table[0].device == table.device
        assert {op.device for op in gathers if op not in on_table} == {"/job:worker/task:0"}
        assert rows.op.device == "/job:worker/task:0"


def test_single_table_gradient_is_deduplicated_indexed_slices():
    with tf.Graph().as_default():
        table = tf.Variable(_table(), name="table")
        rows = embedding_lookup([table], [3, 0, 3], name="lookup")
        loss = tf.reduce_sum(rows * tf.constant([[1.0], [2.0], [3.0]]))
        grad, = tf.gradients(loss, [table])
        assert isinstance(grad, tf.IndexedSlices)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values, indices, dense_shape = sess.run([grad.values, grad.indices, grad.dense_shape])
    # Duplicates are summed on the caller's side: one row per distinct id.
    np.testing.assert_array_equal(indices, [3, 0])
    np.testing.assert_array_equal(values, [[4.0] * 3, [2.0] * 3])
    np.testing.assert_array_equal(dense_shape, [5, 3])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_partitioned_lookup_matches_tf1_layout(strategy):
    full = R.standard_normal((11, 3)).astype(np.float32)
    ids = np.array([[10, 0, 4], [4, 4, 7]])
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=full, partitioner=fixed_size_partitioner(3))
        shards = list(v)
        rows = embedding_lookup(v, ids, partition_strategy=strategy)
        rows_list = embedding_lookup(shards, tf.constant(ids, tf.int64), partition_strategy=strategy)
        assert rows.get_shape().as_list() == [2, 3, 3]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, got_list = sess.run([rows, rows_list])
    # The shards hold rows 0-3, 4-7, 8-10 of `full` (first shards one row larger).
    if strategy == "div":
        want = full[ids]  # div over partitions reads like the unpartitioned variable
    else:
        want = full[_mod_order(11, 3)[ids]]  # mod: id i is row i // 3 of shard i % 3
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_list, want)


def test_div_over_unknown_shard_sizes_and_max_norm():
    a = np.array([[3.0, 4.0], [0.3, 0.4]], np.float32)
    b = np.array([[6.0, 8.0]], np.float32)
    with tf.Graph().as_default():
        pa, pb = tf.placeholder(tf.float32, [None, 2]), tf.placeholder(tf.float32, [None, 2])
        rows = embedding_lookup([pa, pb], [2, 1, 0], partition_strategy="div", max_norm=1.0)
        out = tf.Session().run(rows, {pa: a, pb: b})
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4], [0.6, 0.8]], rtol=1e-6)


def test_only_distinct_ids_reach_each_shard_and_gradients_are_per_shard_slices():
    with tf.Graph().as_default():
        v = get_variable("emb", [8, 2], partitioner=fixed_size_partitioner(2),
                         initializer=tf.ones_initializer())
        ids = tf.constant([5, 1, 5, 5, 2, 1], tf.int64)
        rows = embedding_lookup(v, ids, partition_strategy="div")
        weights = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2))
        grads = tf.gradients(tf.reduce_sum(rows * weights), list(v))
        assert all(isinstance(g, tf.IndexedSlices) for g in grads)
        shard_gathers = [op for op in tf.get_default_graph().get_operations()
                         if op.type == "Gather" and op.inputs[0].op.name.startswith("emb/part_")]
        assert len(shard_gathers) == 2
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sent = sess.run([op.inputs[1] for op in shard_gathers])
            g = sess.run(grads)
    by_shard = dict(zip([op.inputs[0].op.name for op in shard_gathers], sent))
    np.testing.assert_array_equal(sorted(by_shard["emb/part_0/read"]), [1, 2])  # ids 1, 2
    np.testing.assert_array_equal(by_shard["emb/part_1/read"], [1])  # id 5 once, as row 1
    w = np.arange(12, dtype=np.float32).reshape(6, 2)
    np.testing.assert_array_equal(g[1].indices, [1])
    np.testing.assert_array_equal(g[1].values, [w[0] + w[2] + w[3]])
    np.testing.assert_array_equal(g[1].dense_shape, [4, 2])
    order = np.argsort(g[0].indices)
    np.testing.assert_array_equal(g[0].indices[order], [1, 2])
    np.testing.assert_array_equal(g[0].values[order], [w[1] + w[5], w[4]])


def _train(make_opt, strategy, steps_ids, full, coeffs):
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=full, partitioner=fixed_size_partitioner(3))
        ids = tf.placeholder(tf.int64, [None])
        c = tf.placeholder(tf.float32, [None, full.shape[1]])
        loss = tf.reduce_sum(embedding_lookup(v, ids, partition_strategy=strategy) * c)
        opt = make_opt()
        grads_and_vars = opt.compute_gradients(loss, var_list=list(v))
        assert all(isinstance(g, tf.IndexedSlices) for g, _ in grads_and_vars)
        train = opt.apply_gradients(grads_and_vars)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step_ids, coeff in zip(steps_ids, coeffs):
                sess.run(train, {ids: step_ids, c: coeff})
            value = sess.run(v.as_tensor())
            slots = {name: np.concatenate(sess.run([opt.get_slot(s, name) for s in v]))
                     for name in opt.get_slot_names()}
    return value, slots


def _reference(kind, order, steps_ids, full, coeffs, lr):
    """numpy reference on the concatenated shards (rows `order[id]`); duplicates summed."""
    w = full.copy()
    slots = {"momentum": np.zeros_like(w), "accumulator": np.full_like(w, 0.1),
             "m": np.zeros_like(w), "v": np.zeros_like(w)}
    for t, (step_ids, coeff) in enumerate(zip(steps_ids, coeffs), 1):
        g = np.zeros_like(w)
        np.add.at(g, order[step_ids], coeff)
        rows = np.unique(order[step_ids])
        if kind == "sgd":
            w[rows] -= lr * g[rows]
        elif kind == "momentum":
            acc = slots["momentum"]
            acc[rows] = acc[rows] * 0.9 + g[rows]
            w[rows] -= lr * acc[rows]
        elif kind == "adagrad":
            acc = slots["accumulator"]
            acc[rows] += g[rows] ** 2
            w[rows] -= lr * g[rows] / np.sqrt(acc[rows])
        else:  # TF1's sparse Adam is not lazy: m and v decay on every row
            m, v = slots["m"], slots["v"]
            m *= 0.9
            m[rows] += 0.1 * g[rows]
            v *= 0.999
            v[rows] += 0.001 * g[rows] ** 2
            alpha = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            w -= alpha * m / (np.sqrt(v) + 1e-8)
    return w, slots


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adagrad", "adam"])
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sparse_updates_touch_only_looked_up_rows(kind, strategy):
    full = R.standard_normal((11, 2)).astype(np.float32)
    steps_ids = [np.array([9, 2, 9, 9, 4]), np.array([2, 0, 10])]
    coeffs = [R.standard_normal((5, 2)).astype(np.float32),
              R.standard_normal((3, 2)).astype(np.float32)]
    lr = 0.1
    make = {"sgd": lambda: tf.train.GradientDescentOptimizer(lr),
            "momentum": lambda: tf.train.MomentumOptimizer(lr, 0.9),
            "adagrad": lambda: tf.train.AdagradOptimizer(lr),
            "adam": lambda: tf.train.AdamOptimizer(lr)}[kind]
    value, slots = _train(make, strategy, steps_ids, full, coeffs)
    order = np.arange(11) if strategy == "div" else _mod_order(11, 3)
    want, want_slots = _reference(kind, order, steps_ids, full, coeffs, lr)
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    for name, got in slots.items():
        np.testing.assert_allclose(got, want_slots[name], rtol=1e-5, atol=1e-7)
    touched = np.unique(order[np.concatenate(steps_ids)])
    untouched = np.setdiff1d(np.arange(11), touched)
    if kind != "adam":  # only the looked-up rows of the variable and its slots changed
        np.testing.assert_array_equal(value[untouched], full[untouched])
        for name, got in slots.items():
            init = np.float32(0.1 if name == "accumulator" else 0.0)
            np.testing.assert_array_equal(got[untouched], init)


def _sparse_ids():
    # batch of 4: row 0 ids [1, 3, 1], row 1 no ids, row 2 [0], row 3 [3, 2]
    indices = np.array([[0, 0], [0, 1], [0, 2], [2, 0], [3, 0], [3, 1]])
    values = np.array([1, 3, 1, 0, 3, 2])
    weights = np.array([0.5, 2.0, 1.0, 3.0, 1.0, 0.25], np.float32)
    return indices, values, weights


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse_matches_numpy(combiner, weighted):
    table = R.standard_normal((5, 3)).astype(np.float32)
    indices, values, weights = _sparse_ids()
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=table, partitioner=fixed_size_partitioner(2))
        sp_ids = sparse_ops.sparse_placeholder(tf.int64)
        sp_w = sparse_ops.sparse_placeholder(tf.float32) if weighted else None
        out = embedding_lookup_sparse(v, sp_ids, sp_w, partition_strategy="div",
                                      combiner=combiner)
        feed = {sp_ids: sparse_ops.SparseTensorValue(indices, values, [4, 3])}
        if weighted:
            feed[sp_w] = sparse_ops.SparseTensorValue(indices, weights, [4, 3])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(out, feed)
    w = weights if weighted else np.ones(6, np.float32)
    want = np.zeros((4, 3), np.float32)
    for row in range(4):
        sel = indices[:, 0] == row
        if not sel.any():
            continue
        total = (table[values[sel]] * w[sel, None]).sum(0)
        norm = {"sum": 1.0, "mean": w[sel].sum(), "sqrtn": np.sqrt((w[sel] ** 2).sum())}[combiner]
        want[row] = total / norm
    if weighted and combiner != "sum":
        assert np.isnan(got[1]).all()  # TF1: an empty row divides 0 by a zero weight sum
        got, want = got[[0, 2, 3]], want[[0, 2, 3]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_out_of_range_ids_fail_when_run():
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int32, [None])
        rows = embedding_lookup(_table(), ids)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices contains 5, which is "
                                                                      r"not in \[0, 5\)"):
                sess.run(rows, {ids: [0, 5]})


def test_errors():
    with tf.Graph().as_default():
        a = tf.zeros([2, 3])
        with pytest.raises(ValueError, match="Need at least one param"):
            embedding_lookup([], [0])
        with pytest.raises(TypeError, match="ids must be int32 or int64, got float32"):
            embedding_lookup(a, [0.0])
        with pytest.raises(ValueError, match="Unrecognized partition strategy: 'blah'"):
            embedding_lookup([a, a], [0], partition_strategy="blah")
        st = sparse_ops.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 1])
        with pytest.raises(ValueError, match="combiner must be one of"):
            embedding_lookup_sparse(a, st, None, combiner="max")
        with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
            embedding_lookup_sparse(a, [1], None)
        with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
            embedding_lookup_sparse(a, st, [1.0])
        assert partition_ops.unique  # the plumbing is public through its module


def test_scalar_id_over_shards():
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=_table(), partitioner=fixed_size_partitioner(2))
        row = embedding_lookup(v, tf.constant(3, tf.int64), partition_strategy="div")
        assert row.get_shape().as_list() == [3]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(row), _table()[3])
