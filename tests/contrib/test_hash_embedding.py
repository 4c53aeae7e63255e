"""zps.contrib.embedding: growable hash embedding tables, against numpy references."""

import numpy as np
import pytest

import zps as tf
from zps.contrib import embedding
from zps.ops import hash_table_ops as h
from zps.ops.resources import tables_initializer
from zps.testing.cluster import InProcessCluster

DIM = 3


def _initial(table, ids):
    return h.initial_rows(np.asarray(ids, np.int64), table.embedding_dim,
                          table.dtype.as_numpy_dtype, table.config["initializer"],
                          table.config["seed"])


def _batches(seed=0, steps=4):
    rng = np.random.default_rng(seed)
    pool = np.array([3, 17, 2**40 + 5, -9, 123456789012, 7], np.int64)
    return [rng.choice(pool, size=(2, 4)) for _ in range(steps)]


# -- lookups ---------------------------------------------------------------------------------------
def test_lookup_creates_rows_from_the_initializer_on_first_use():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding(
            "emb", DIM, num_shards=3, initializer=tf.random_uniform_initializer(-1.0, 1.0, seed=4))
        ids = tf.placeholder(tf.int64, [None, 2])
        rows = embedding.embedding_lookup(table, ids)
        assert rows.get_shape().as_list() == [None, 2, DIM]
        batch = np.array([[5, 2**40], [5, -1]], np.int64)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            got = sess.run(rows, {ids: batch})
            sizes = sess.run(table.size())
            again = sess.run(rows, {ids: batch[::-1]})
    np.testing.assert_array_equal(got, _initial(table, batch.ravel()).reshape(2, 2, DIM))
    np.testing.assert_array_equal(again, got[::-1])
    assert sum(sizes) == 3
    expected = np.bincount(h.shard_of(np.unique(batch), 3), minlength=3)
    np.testing.assert_array_equal(sizes, expected)
    assert np.all(np.abs(got) < 1.0)


def test_rows_do_not_depend_on_sharding_or_session_but_on_table_name():
    def rows_of(name, shards):
        with tf.Graph().as_default():
            table = embedding.get_hash_embedding(name, 4, num_shards=shards)
            rows = embedding.embedding_lookup(table, tf.constant([9, 2**50, 1], tf.int64))
            with tf.Session() as sess:
                sess.run(tables_initializer())
                return sess.run(rows)

    a = rows_of("t", 1)
    np.testing.assert_array_equal(a, rows_of("t", 4))
    assert not np.allclose(a, rows_of("other", 1))
    # default: truncated normal with stddev 1/sqrt(dim)
    assert np.all(np.abs(a) <= 2.0 / np.sqrt(4))


def test_lookup_without_inserting_returns_initial_rows_and_keeps_the_table():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 2, num_shards=2,
                                             initializer=tf.random_uniform_initializer(seed=1))
        ids = tf.constant([1, 2**40, 1], tf.int64)
        peek = embedding.embedding_lookup(table, ids, insert_missing=False)
        rows = embedding.embedding_lookup(table, ids)
        train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(rows))
        with tf.Session() as sess:
            sess.run(tables_initializer())
            np.testing.assert_array_equal(sess.run(peek), _initial(table, [1, 2**40, 1]))
            assert sum(sess.run(table.size())) == 0
            sess.run(train)
            got = sess.run(peek)
            assert sum(sess.run(table.size())) == 2
    np.testing.assert_allclose(got, _initial(table, [1, 2**40, 1]) - [[2, 2], [1, 1], [2, 2]])


def test_an_empty_batch_looks_up_and_trains_nothing():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 2, num_shards=2)
        ids = tf.placeholder(tf.int64, [None])
        rows = embedding.embedding_lookup(table, ids)
        train = tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(rows))
        with tf.Session() as sess:
            sess.run(tables_initializer())
            assert sess.run(rows, {ids: np.zeros(0, np.int64)}).shape == (0, 2)
            sess.run(train, {ids: np.zeros(0, np.int64)})
            assert sess.run(table.size()) == [0, 0]


def test_int32_ids_and_max_norm():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 2, initializer=3.0)
        rows = embedding.embedding_lookup(table, tf.constant([1, 2], tf.int32), max_norm=1.0)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            np.testing.assert_allclose(sess.run(rows), np.full((2, 2), 1 / np.sqrt(2)), rtol=1e-6)


# -- gradients ----------------------------------------------------------------------------------------
def test_gradients_are_indexed_slices_of_unique_ids_per_shard():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", DIM, num_shards=2, initializer=0.5)
        ids = tf.constant([[4, 2**40, 4], [8, 4, 2**40]], tf.int64)
        weights = np.arange(6 * DIM, dtype=np.float32).reshape(2, 3, DIM)
        loss = tf.reduce_sum(embedding.embedding_lookup(table, ids) * tf.constant(weights))
        grads_and_vars = tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
        assert [v for _, v in grads_and_vars] == table.shards
        assert all(isinstance(g, tf.IndexedSlices) for g, _ in grads_and_vars)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            got = sess.run([(g.indices, g.values) for g, _ in grads_and_vars])
    flat_ids, flat_w = np.array([4, 2**40, 4, 8, 4, 2**40]), weights.reshape(6, DIM)
    shard = h.shard_of(flat_ids, 2)
    for p, (indices, values) in enumerate(got):
        expected_ids = np.unique(flat_ids[shard == p])
        np.testing.assert_array_equal(indices, expected_ids)  # each id once: only k rows travel
        for i, id_ in enumerate(expected_ids):
            np.testing.assert_allclose(values[i], flat_w[flat_ids == id_].sum(0))


def _reference_train(kind, batches, scales, init_fn, lr, **hyper):
    """numpy: TF1 sparse updates (duplicates summed) of the rows touched, per step.

    Hyperparameters are float32 tensors cast to the table's dtype, as in the graph."""
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    lr, hyper = f32(lr), {k: f32(v) if isinstance(v, float) else v for k, v in hyper.items()}
    rows, slots = {}, {}
    for batch, scale in zip(batches, scales):
        flat = batch.ravel()
        for i in flat:
            if i not in rows:
                rows[i] = init_fn([i])[0].astype(np.float64)
        grads = {}
        for pos, i in enumerate(flat):
            grads[i] = grads.get(i, 0.0) + rows[i] * scale.ravel()[pos]
        for i, g in grads.items():
            if kind == "sgd":
                rows[i] = rows[i] - lr * g
            elif kind == "momentum":
                a = slots.get(i, 0.0) * hyper["momentum"] + g
                slots[i] = a
                if hyper.get("use_nesterov"):
                    rows[i] = rows[i] - lr * g - lr * hyper["momentum"] * a
                else:
                    rows[i] = rows[i] - lr * a
            elif kind == "adagrad":
                a = slots.get(i, 0.1) + g * g
                slots[i] = a
                rows[i] = rows[i] - lr * g / np.sqrt(a)
            elif kind == "adam":
                m, v, t = slots.get(i, (0.0, 0.0, 0))
                b1, b2, eps = f32(0.9), f32(0.999), f32(1e-8)
                t += 1
                m = b1 * m + (1 - b1) * g
                v = b2 * v + (1 - b2) * g * g
                slots[i] = (m, v, t)
                lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                rows[i] = rows[i] - lr_t * m / (np.sqrt(v) + eps)
    return rows


OPTIMIZERS = {
    "sgd": (lambda: tf.train.GradientDescentOptimizer(0.1), {}),
    "momentum": (lambda: tf.train.MomentumOptimizer(0.1, 0.9), {"momentum": 0.9}),
    "nesterov": (lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                 {"momentum": 0.9, "use_nesterov": True}),
    "adagrad": (lambda: tf.train.AdagradOptimizer(0.1), {}),
    "adam": (lambda: tf.train.AdamOptimizer(0.1), {}),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_sparse_updates_match_numpy(name):
    make_opt, hyper = OPTIMIZERS[name]
    batches = _batches()
    rng = np.random.default_rng(1)
    scales = [rng.uniform(0.5, 1.5, size=(2, 4)) for _ in batches]
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", DIM, num_shards=2,
                                             initializer=tf.random_normal_initializer(seed=2),
                                             dtype=tf.float64)
        ids = tf.placeholder(tf.int64, [2, 4])
        scale = tf.placeholder(tf.float64, [2, 4])
        rows = embedding.embedding_lookup(table, ids)
        loss = 0.5 * tf.reduce_sum(tf.square(rows) * tf.expand_dims(scale, -1))
        train = make_opt().minimize(loss)
        all_ids = np.unique(np.concatenate([b.ravel() for b in batches]))
        with tf.Session() as sess:
            sess.run(tables_initializer())
            for b, s in zip(batches, scales):
                sess.run(train, {ids: b, scale: s})
            final = sess.run(embedding.embedding_lookup(table, tf.constant(all_ids)))
            sizes = sess.run(table.size())
    kind = "momentum" if name == "nesterov" else name
    expected = _reference_train(kind, batches, scales, lambda i: _initial(table, i), 0.1, **hyper)
    np.testing.assert_allclose(final, np.stack([expected[i] for i in all_ids]), rtol=1e-10)
    assert sum(sizes) == len(all_ids)  # only the ids ever looked up have rows


def test_adam_is_lazy_untouched_rows_keep_their_value():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 2, initializer=1.0)
        ids = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_sum(embedding.embedding_lookup(table, ids))
        train = tf.train.AdamOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            sess.run(train, {ids: [1, 2]})
            sess.run(train, {ids: [2]})
            got = sess.run(embedding.embedding_lookup(table, tf.constant([1, 2], tf.int64)))
    # Bias-corrected Adam with a constant gradient moves a row by exactly lr per update.
    np.testing.assert_allclose(got, [[0.5, 0.5], [0.0, 0.0]], atol=1e-6)


def test_tables_and_variables_train_together():
    def run(with_table):
        with tf.Graph().as_default():
            w = tf.Variable([1.0, -1.0], name="w")
            loss = tf.reduce_sum(w * w)
            if with_table:
                table = embedding.get_hash_embedding("emb", 2, initializer=1.0)
                loss += tf.reduce_sum(embedding.embedding_lookup(table, tf.constant([7], tf.int64)))
            opt = tf.train.AdamOptimizer(0.1)
            global_step = tf.train.get_or_create_global_step()
            train = opt.minimize(loss, global_step=global_step)
            with tf.Session() as sess:
                sess.run([tf.global_variables_initializer(), tables_initializer()])
                for _ in range(3):
                    sess.run(train)
                return sess.run([w, global_step])

    (w_plain, step_plain), (w_mixed, step_mixed) = run(False), run(True)
    np.testing.assert_allclose(w_mixed, w_plain, rtol=1e-7)
    assert step_plain == step_mixed == 3


def test_var_list_with_a_table_and_global_step():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 2, initializer=0.0, trainable=False)
        loss = tf.reduce_sum(embedding.embedding_lookup(table, tf.constant([1], tf.int64)))
        opt = tf.train.MomentumOptimizer(1.0, 0.5)
        with pytest.raises(ValueError, match="No variables to optimize"):
            opt.minimize(loss)  # not trainable: not in TRAINABLE_TABLES
        step = tf.train.get_or_create_global_step()
        train = opt.minimize(loss, var_list=[table], global_step=step)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tables_initializer()])
            sess.run(train)
            sess.run(train)
            np.testing.assert_allclose(sess.run(embedding.embedding_lookup(table, [1])),
                                       [[-2.5, -2.5]])
            assert sess.run(step) == 2


# -- eviction -----------------------------------------------------------------------------------------
def _capped(eviction="lru", cap=3, min_frequency=0):
    table = embedding.get_hash_embedding("emb", 2, initializer=0.0, max_rows_per_shard=cap,
                                         eviction=eviction, min_frequency=min_frequency)
    ids = tf.placeholder(tf.int64, [None])
    rows = embedding.embedding_lookup(table, ids)
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(rows))
    keys = table._zps_saveable_specs()[0][1]
    return table, ids, rows, train, keys


def test_lru_evicts_the_least_recently_updated_row():
    with tf.Graph().as_default():
        table, ids, rows, train, keys = _capped("lru")
        with tf.Session() as sess:
            sess.run(tables_initializer())
            for i in (1, 2, 3, 1):
                sess.run(train, {ids: [i]})
            sess.run(train, {ids: [4]})           # full: 2 is the least recently updated
            assert sorted(sess.run(keys)) == [1, 3, 4]
            # An evicted id comes back as it started (and evicts 3 now).
            np.testing.assert_array_equal(sess.run(rows, {ids: [2, 1]}), [[0, 0], [-2, -2]])
            assert sorted(sess.run(keys)) == [1, 2, 4]
            stats = sess.run(table.stats()[0])
            assert stats[0] == 3 and stats[1] == 3 and stats[2] == 2


def test_lfu_and_min_frequency():
    with tf.Graph().as_default():
        _, ids, _, train, keys = _capped("lfu")
        with tf.Session() as sess:
            sess.run(tables_initializer())
            for i in (1, 1, 1, 2, 3, 3):
                sess.run(train, {ids: [i]})
            sess.run(train, {ids: [4]})
            assert sorted(sess.run(keys)) == [1, 3, 4]
    with tf.Graph().as_default():
        _, ids, _, train, keys = _capped("lru", min_frequency=2)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            for i in (1, 1, 2, 3):
                sess.run(train, {ids: [i]})
            sess.run(train, {ids: [4]})           # 1 is oldest but frequent: 2 goes
            assert sorted(sess.run(keys)) == [1, 3, 4]


def test_a_step_needing_more_rows_than_the_cap_fails_clearly():
    with tf.Graph().as_default():
        _, ids, rows, _, _ = _capped(cap=2)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            with pytest.raises(tf.errors.ResourceExhaustedError,
                               match="uses 3 distinct ids of this shard but it holds at most 2 rows"):
                sess.run(rows, {ids: [1, 2, 3]})


def test_memory_stays_bounded_over_a_huge_id_space():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 8, num_shards=2, max_rows_per_shard=100)
        ids = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_sum(tf.square(embedding.embedding_lookup(table, ids)))
        train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        rng = np.random.default_rng(0)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            for step in range(40):
                sess.run(train, {ids: rng.integers(0, 2**40, size=64)})
                if step == 5:
                    bytes_early = sum(s[4] for s in sess.run(table.stats()))
            stats = sess.run(table.stats())
    # full (less the 1/64 evicted ahead at once), never above the cap
    assert all(98 <= s[0] <= 100 and s[1] == 100 for s in stats)
    assert sum(s[4] for s in stats) == bytes_early
    assert sum(s[2] for s in stats) > 2000


# -- placement and clusters ---------------------------------------------------------------------------
def test_shards_are_placed_like_variables_and_their_ops_run_there():
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=3, worker_device="/job:worker/task:1")):
            v = tf.Variable(1.0, name="v")
            table = embedding.get_hash_embedding("emb", 4, num_shards=2)
            w = tf.Variable(2.0, name="w")
            rows = embedding.embedding_lookup(table, tf.constant([1, 2], tf.int64))
            tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(rows) * v * w)
        assert [v.device, table.shards[0].device, table.shards[1].device, w.device] == [
            "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:0"]
        graph = tf.get_default_graph()
        for op in graph.get_operations():
            if op.type in ("HashTableFind", "HashTableSparseApplyAdagrad"):
                assert op.device in ("/job:ps/task:1", "/job:ps/task:2"), op
            if op.type == "HashTableRoute":
                assert op.device == "/job:worker/task:1"
        finds = [op for op in graph.get_operations() if op.type == "HashTableFind"]
        assert sorted(op.device for op in finds) == ["/job:ps/task:1", "/job:ps/task:2"]


def _cluster_model(spec, task, batch_size=6):
    setter = spec and tf.train.replica_device_setter(cluster=spec,
                                                     worker_device="/job:worker/task:%d" % task)
    with tf.device(setter):
        table = embedding.get_hash_embedding("emb", DIM, num_shards=2,
                                             initializer=tf.random_uniform_initializer(-1, 1, seed=1))
        ids = tf.placeholder(tf.int64, [batch_size])
        rows = embedding.embedding_lookup(table, ids)
        loss = tf.reduce_sum(tf.square(rows - 1.0))
        train = tf.train.AdagradOptimizer(0.2).minimize(loss)
    return table, ids, loss, train


def test_workers_share_a_table_on_ps_tasks(tmp_path):
    rng = np.random.default_rng(3)
    batches = [rng.integers(0, 2**40, size=6) % 9 * 2**37 for _ in range(6)]
    check = np.unique(np.concatenate(batches))

    def local():
        with tf.Graph().as_default():
            table, ids, loss, train = _cluster_model(None, 0)
            with tf.Session() as sess:
                sess.run(tables_initializer())
                for b in batches:
                    sess.run(train, {ids: b})
                return sess.run(embedding.embedding_lookup(table, check))

    expected = local()
    with InProcessCluster({"ps": 2, "worker": 2}) as cluster:
        graphs, sessions = [], []
        try:
            for task in range(2):
                g = tf.Graph()
                with g.as_default():
                    model = _cluster_model(cluster.spec, task)
                graphs.append((g, model))
                sessions.append(tf.Session(cluster.target("worker", task), graph=g))
                if task == 0:
                    with g.as_default():
                        sessions[0].run(tables_initializer())
            for step, b in enumerate(batches):   # the workers take turns: same order as local()
                g, (table, ids, loss, train) = graphs[step % 2]
                sessions[step % 2].run(train, {ids: b})
            g, (table, ids, _, train) = graphs[1]
            with g.as_default():
                lookup = embedding.embedding_lookup(table, check)
                got = sessions[1].run(lookup)
                sizes = sessions[1].run(table.size())
                # A sharded checkpoint written by each ps task, restored after more training.
                saver = tf.train.Saver(sharded=True)
                path = saver.save(sessions[1], str(tmp_path / "model"))
                sessions[1].run(train, {ids: check[:6]})
                assert not np.allclose(sessions[1].run(lookup), got)
                saver.restore(sessions[1], path)
                np.testing.assert_array_equal(sessions[1].run(lookup), got)
                # Traffic: 600 ids with 5 distinct ones; each ps returns only its distinct rows.
                before = set(g.get_operations())
                many = np.tile(check[:5], 120)
                rows = embedding.embedding_lookup(table, many)
                finds = [op.outputs[0] for op in g.get_operations()
                         if op not in before and op.type == "HashTableFind"]
                fetched = sessions[1].run([rows] + finds)
        finally:
            for s in sessions:
                s.close()
        kinds = {task: cluster[task].resources.resources("hash_embedding") for task in cluster.servers}
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert sum(sizes) == len(check)
    assert fetched[0].shape == (600, DIM)
    per_shard = np.bincount(h.shard_of(check[:5], 2), minlength=2)
    assert [f.shape[0] for f in fetched[1:]] == per_shard.tolist()
    assert [f.device for f in finds] == ["/job:ps/task:0", "/job:ps/task:1"]
    assert set(kinds[("ps", 0)]) == {("hash_embedding", "emb/part_0")}
    assert set(kinds[("ps", 1)]) == {("hash_embedding", "emb/part_1")}
    assert not kinds[("worker", 0)] and not kinds[("worker", 1)]


# -- checkpoints --------------------------------------------------------------------------------------
def _trained_table(num_shards=2, steps=3):
    table = embedding.get_hash_embedding("emb", DIM, num_shards=num_shards,
                                         initializer=tf.random_normal_initializer(seed=3))
    ids = tf.placeholder(tf.int64, [None])
    loss = tf.reduce_sum(tf.square(embedding.embedding_lookup(table, ids)))
    train = tf.train.AdamOptimizer(0.1).minimize(loss)
    return table, ids, train


def test_saveable_contract_round_trips_rows_and_slots():
    batches = [np.array([1, 2, 2**45]), np.array([2, 5])]
    with tf.Graph().as_default():
        table, ids, train = _trained_table()
        assert table in tf.get_collection("saveable_objects")
        specs = table._zps_saveable_specs()
        assert [k for k, _ in specs[:4]] == ["emb/part_0/keys", "emb/part_0/values",
                                             "emb/part_0/clock", "emb/part_0/count"]
        assert "emb/part_1/slot/Adam/m" in dict(specs)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            sess.run(train, {ids: batches[0]})
            saved = dict(zip([k for k, _ in specs], sess.run([t for _, t in specs])))
            sess.run(train, {ids: batches[1]})
            continued = sess.run(embedding.embedding_lookup(table, [1, 2, 5, 2**45]))
    with tf.Graph().as_default():
        table, ids, train = _trained_table()
        restore = table._zps_restore({k: tf.constant(v) for k, v in saved.items()})
        with tf.Session() as sess:
            sess.run(restore)
            assert sum(sess.run(table.size())) == 3
            sess.run(train, {ids: batches[1]})
            np.testing.assert_allclose(
                sess.run(embedding.embedding_lookup(table, [1, 2, 5, 2**45])), continued, rtol=1e-6)


def test_import_reshards_an_export():
    with tf.Graph().as_default():
        table, ids, train = _trained_table(num_shards=3)
        exports = [h.hash_table_export(s._ref()) for s in table.shards]
        with tf.Session() as sess:
            sess.run(tables_initializer())
            sess.run(train, {ids: np.arange(20) * 2**33})
            parts = sess.run(exports)
            rows = sess.run(embedding.embedding_lookup(table, np.arange(20) * 2**33))
    merged = [np.concatenate([p[i] for p in parts]) for i in range(4)]
    with tf.Graph().as_default():
        table, _, _ = _trained_table(num_shards=2)
        loads = [h.hash_table_import(s._ref(), *merged) for s in table.shards]
        with tf.Session() as sess:
            sess.run(loads)
            assert sum(sess.run(table.size())) == 20
            np.testing.assert_allclose(
                sess.run(embedding.embedding_lookup(table, np.arange(20) * 2**33)), rows)


# -- errors -------------------------------------------------------------------------------------------
def test_errors_name_what_is_wrong():
    with tf.Graph().as_default():
        table = embedding.get_hash_embedding("emb", 2)
        with pytest.raises(ValueError, match="emb already exists"):
            embedding.get_hash_embedding("emb", 2)
        assert embedding.get_hash_embedding("emb", 2, reuse=True) is table
        with tf.name_scope("tower"):
            other = embedding.get_hash_embedding("emb", 2)
        assert other.name == "tower/emb" and other.shards[0].op.name == "tower/emb/part_0"
        with pytest.raises(TypeError, match="ids must be int64 or int32, got float32"):
            embedding.embedding_lookup(table, tf.constant([1.0]))
        with pytest.raises(TypeError, match="needs a HashEmbedding"):
            embedding.embedding_lookup(tf.Variable(tf.zeros([2, 2])), [1])
        with pytest.raises(TypeError, match="initializer must be"):
            embedding.get_hash_embedding("e2", 2, initializer=tf.glorot_uniform_initializer())
        with pytest.raises(ValueError, match="embedding_dim must be a positive int"):
            embedding.get_hash_embedding("e3", 0)
        loss = tf.reduce_sum(embedding.embedding_lookup(table, tf.constant([1], tf.int64)))
        with pytest.raises(NotImplementedError, match="cannot be updated by RMSPropOptimizer"):
            tf.train.RMSPropOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="has no dense value"):
                sess.run(table.shards[0]._ref())


def test_saver_saves_and_restores_tables_with_their_slots(tmp_path):
    batches = [np.array([1, 2, 2**45]), np.array([2, 5])]
    check = [1, 2, 5, 2**45]

    def build():
        table, ids, train = _trained_table()
        w = tf.Variable(1.0, name="w")
        return table, ids, train, w, tf.train.Saver(sharded=True)

    with tf.Graph().as_default():
        table, ids, train, w, saver = build()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tables_initializer()])
            sess.run(train, {ids: batches[0]})
            path = saver.save(sess, str(tmp_path / "model"))
            sess.run(train, {ids: batches[1]})
            continued = sess.run(embedding.embedding_lookup(table, check))
    with tf.Graph().as_default():
        table, ids, train, w, saver = build()
        with tf.Session() as sess:
            saver.restore(sess, path)
            assert sess.run(w) == 1.0
            assert sorted(sess.run(table.size())) == sorted(
                np.bincount(h.shard_of(batches[0], 2), minlength=2))
            sess.run(train, {ids: batches[1]})   # Adam's m, v and step counts came back too
            np.testing.assert_allclose(sess.run(embedding.embedding_lookup(table, check)),
                                       continued, rtol=1e-6)


@pytest.mark.parametrize("saved_shards,restored_shards,opt", [(2, 3, "adam"), (3, 1, "adagrad")])
def test_saver_restores_into_another_number_of_shards(tmp_path, saved_shards, restored_shards, opt):
    make_opt = {"adam": lambda: tf.train.AdamOptimizer(0.1),
                "adagrad": lambda: tf.train.AdagradOptimizer(0.1)}[opt]
    first = np.arange(40, dtype=np.int64) * 2**33 + 1
    second = np.concatenate([first[::3], [7, 2**50]])
    check = np.unique(np.concatenate([first, second]))

    def build(num_shards):
        table = embedding.get_hash_embedding("emb", DIM, num_shards=num_shards,
                                             initializer=tf.random_normal_initializer(seed=3))
        ids = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_sum(tf.square(embedding.embedding_lookup(table, ids)))
        train = make_opt().minimize(loss)
        w = tf.Variable(2.0, name="w")
        lookup = embedding.embedding_lookup(table, check, insert_missing=False)
        specs = table._slot_spec_list()
        exports = [h.hash_table_export(s._ref(), specs) for s in table.shards]
        return table, ids, train, w, lookup, exports, tf.train.Saver(sharded=True)

    def by_id(parts):
        """{id: (value row, clock, count, *slot rows)} over all shards' exports."""
        out = {}
        for keys, *cols in parts:
            for j, k in enumerate(keys.tolist()):
                out[k] = [c[j] for c in cols]
        return out

    with tf.Graph().as_default():
        table, ids, train, w, lookup, exports, saver = build(saved_shards)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tables_initializer()])
            sess.run(train, {ids: first})
            sess.run(w.assign(5.0))
            path = saver.save(sess, str(tmp_path / "model"))
            saved = by_id(sess.run(exports))
            saved_rows = sess.run(lookup)
            sess.run(train, {ids: second})
            continued = sess.run(lookup)
    with tf.Graph().as_default():
        table, ids, train, w, lookup, exports, saver = build(restored_shards)
        with tf.Session() as sess:
            saver.restore(sess, path)
            assert sess.run(w) == 5.0
            parts = sess.run(exports)
            # every id went to the shard its hash names now, with its slots and counters
            for p, (keys, *_) in enumerate(parts):
                np.testing.assert_array_equal(h.shard_of(keys, restored_shards), p)
            restored = by_id(parts)
            assert sorted(restored) == sorted(saved) == sorted(first.tolist())
            for k, cols in saved.items():
                for a, b in zip(restored[k], cols):
                    np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(sess.run(lookup), saved_rows)
            sess.run(train, {ids: second})
            np.testing.assert_allclose(sess.run(lookup), continued, rtol=1e-6)


def test_restoring_a_checkpoint_without_the_table_names_it(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(1.0, name="w")
        with tf.Session() as sess:
            sess.run(w.initializer)
            path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default():
        tf.Variable(1.0, name="w")
        embedding.get_hash_embedding("emb", 2)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match="holds no hash table emb"):
                saver.restore(sess, path)


# -- synchronous training ------------------------------------------------------------------------------
def test_sync_replicas_with_two_workers_averages_each_row_over_the_replicas_that_carried_it():
    """SyncReplicasOptimizer (2 of 2 replicas) on a hash table: each shard's IndexedSlices go to
    a SparseConditionalAccumulator on the shard's ps; as TF1's, each row of the taken gradient is
    the mean over the replicas whose gradient carried that row; then sparse Adagrad."""
    import threading

    lr, steps = 0.5, 3
    rng = np.random.default_rng(5)
    pool = np.array([3, 2**40 + 1, -8, 77, 2**62, 12], np.int64)
    feeds = [[(rng.choice(pool, size=5), rng.standard_normal((5, DIM)).astype(np.float32))
              for _ in range(steps)] for _ in range(2)]

    def build(spec, task):
        graph = tf.Graph()
        with graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % task, cluster=spec)):
            table = embedding.get_hash_embedding("emb", DIM, num_shards=2, initializer=0.5)
            ids = tf.placeholder(tf.int64, [None])
            coeff = tf.placeholder(tf.float32, [None, DIM])
            step = tf.train.get_or_create_global_step()
            opt = tf.train.SyncReplicasOptimizer(tf.train.AdagradOptimizer(lr),
                                                 replicas_to_aggregate=2, total_num_replicas=2)
            train = opt.minimize(tf.reduce_sum(embedding.embedding_lookup(table, ids) * coeff),
                                 global_step=step)
            final = embedding.embedding_lookup(table, pool, insert_missing=False)
        return graph, opt, ids, coeff, train, step, final

    results, failures = {}, []
    with InProcessCluster({"ps": 2, "worker": 2}) as cluster:
        replicas = [build(cluster.spec, task) for task in range(2)]
        barrier = threading.Barrier(2, timeout=30)

        def run(task):
            graph, opt, ids, coeff, train, step, final = replicas[task]
            try:
                with graph.as_default():
                    hook = opt.make_session_run_hook(task == 0, num_tokens=0)
                    with tf.train.MonitoredTrainingSession(
                            master=cluster.target("worker", task), is_chief=task == 0,
                            hooks=[hook], log_step_count_steps=0) as sess:
                        barrier.wait()
                        for k in range(steps):
                            sess.run(train, {ids: feeds[task][k][0], coeff: feeds[task][k][1]})
                            barrier.wait()
                        results[task] = sess.run([final, step])
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                failures.append(e)
                barrier.abort()

        threads = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(45)
            assert not t.is_alive(), "a replica is still running after 45 s"
    if failures:
        raise failures[0]
    # numpy: per step, each row's gradient (duplicates summed per replica) averaged over the
    # replicas that carried it, then Adagrad on those rows.
    rows = {int(i): np.full(DIM, 0.5) for i in pool}
    accum = {int(i): np.full(DIM, 0.1) for i in pool}
    for k in range(steps):
        per_replica = []
        for task in range(2):
            g = {}
            for i, c in zip(feeds[task][k][0].tolist(), feeds[task][k][1]):
                g[i] = g.get(i, 0.0) + c.astype(np.float64)
            per_replica.append(g)
        for i in set().union(*per_replica):
            mean = sum(g[i] for g in per_replica if i in g) / sum(i in g for g in per_replica)
            accum[i] += mean * mean
            rows[i] -= lr * mean / np.sqrt(accum[i])
    expected = np.stack([rows[int(i)] for i in pool])
    for task in range(2):
        np.testing.assert_allclose(results[task][0], expected, rtol=1e-5)
        assert results[task][1] == steps
