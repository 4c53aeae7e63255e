"""SyncReplicasOptimizer with sparse (IndexedSlices) gradients, as TF1 does it: one
SparseConditionalAccumulator per shard of a partitioned embedding table, on the shard's ps.

TF1's SparseConditionalAccumulator averages each row over the gradients that carried that row
(``DivideAccumGradByCounter``, "average element-wise"), not over all accumulated gradients: a row
one replica touched is applied with that replica's gradient alone. The references below follow
that rule.
"""

import threading

import numpy as np
import pytest

import zps as tf
from zps.ops.embedding_ops import embedding_lookup
from zps.ops.partitioned_variables import fixed_size_partitioner
from zps.ops.variable_scope import get_variable
from zps.testing.cluster import InProcessCluster, LocalCluster
from zps.train.device_setter import replica_device_setter
from zps.transport import endpoint

pytestmark = pytest.mark.timeout(60)

ROWS, DIM, LR = 11, 3, 0.5     # 11 rows: uneven shards (6 + 5)


def _step_feeds(replica, steps, seed=0):
    """Each step: ids (with duplicates, and rows the other replica does not touch) and a weight
    per looked-up row, so that d loss / d row = the sum of the weights of that row's lookups."""
    rng = np.random.default_rng(seed + 17 * replica)
    feeds = []
    for _ in range(steps):
        ids = rng.integers(0, ROWS, size=5).astype(np.int64)
        ids = np.concatenate([ids, ids[:2]])      # duplicates within one replica's batch
        feeds.append((ids, rng.standard_normal((len(ids), DIM)).astype(np.float32)))
    return feeds


class _Replica:
    def __init__(self, spec, task, optimizer, to_aggregate=2, total=2):
        self.task = task
        self.graph = tf.Graph()
        with self.graph.as_default():
            with tf.device(replica_device_setter(worker_device="/job:worker/task:%d" % task,
                                                 cluster=spec)):
                self.table = get_variable(
                    "emb", [ROWS, DIM], partitioner=fixed_size_partitioner(2),
                    initializer=tf.random_uniform_initializer(-1.0, 1.0, seed=3))
                self.ids = tf.placeholder(tf.int64, [None], name="ids")
                self.coeff = tf.placeholder(tf.float32, [None, DIM], name="coeff")
                loss = tf.reduce_sum(embedding_lookup(self.table, self.ids) * self.coeff)
                self.global_step = tf.train.get_or_create_global_step()
                self.opt = tf.train.SyncReplicasOptimizer(
                    optimizer(), replicas_to_aggregate=to_aggregate, total_num_replicas=total)
                self.train_op = self.opt.minimize(loss, global_step=self.global_step)
                self.shards = list(self.table)
                self.read_slots = [tf.convert_to_tensor(self.opt.get_slot(s, n))
                                   for s in self.shards for n in self.opt.get_slot_names()]


def _run_replicas(cluster, replicas, body):
    errors, results = [], {}

    def target(rep):
        try:
            with rep.graph.as_default():
                hook = rep.opt.make_session_run_hook(rep.task == 0, num_tokens=0)
                with tf.train.MonitoredTrainingSession(
                        master=cluster.target("worker", rep.task), is_chief=rep.task == 0,
                        hooks=[hook], log_step_count_steps=0) as sess:
                    results[rep.task] = body(rep, sess)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    threads = [threading.Thread(target=target, args=(rep,), daemon=True) for rep in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(45)
        assert not t.is_alive(), "a replica is still running after 45 s"
    if errors:
        raise errors[0]
    return results


def _row_grads(ids, coeff):
    """{id: summed gradient row} of one replica's step (duplicates summed)."""
    out = {}
    for i, c in zip(ids.tolist(), coeff):
        out[i] = out.get(i, 0.0) + c.astype(np.float64)
    return out


def _tf1_sparse_mean(per_replica):
    """TF1's SparseConditionalAccumulator: each row averaged over the replicas that carried it."""
    rows = sorted(set().union(*per_replica))
    return {r: sum(g[r] for g in per_replica if r in g)
            / sum(r in g for g in per_replica) for r in rows}


def _logical(shards):
    """The table in id order under the "mod" strategy: id i is row i // 2 of shard i % 2."""
    table = np.empty((ROWS, DIM), np.float64)
    for p, shard in enumerate(shards):
        table[p::2] = shard
    return table


def _train_in_lockstep(cluster, replicas, feeds, steps):
    barrier = threading.Barrier(len(replicas), timeout=30)
    initial = {}

    def body(rep, sess):
        if rep.task == 0:
            initial["shards"] = sess.run(rep.shards)
        barrier.wait()
        for k in range(steps):
            ids, coeff = feeds[rep.task][k]
            sess.run(rep.train_op, {rep.ids: ids, rep.coeff: coeff})
            barrier.wait()
        return sess.run(rep.shards + [rep.global_step] + [rep.read_slots])

    results = _run_replicas(cluster, replicas, body)
    return initial["shards"], results


def _sgd(table, slots, mean):
    for row, g in mean.items():
        table[row] -= LR * g


def _adagrad(table, slots, mean):
    accum = slots.setdefault("accum", np.full_like(table, 0.1))
    for row, g in mean.items():
        accum[row] += g * g
        table[row] -= LR * g / np.sqrt(accum[row])


def _adam(table, slots, mean, beta1=0.9, beta2=0.999, eps=1e-8):
    """TF1's sparse Adam: not lazy, m and v decay on every row, every row moves."""
    m = slots.setdefault("m", np.zeros_like(table))
    v = slots.setdefault("v", np.zeros_like(table))
    t = slots["t"] = slots.get("t", 0) + 1
    g = np.zeros_like(table)
    for row, grad in mean.items():
        g[row] = grad
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    table -= LR * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (np.sqrt(v) + eps)


@pytest.mark.parametrize("optimizer,reference", [
    (lambda: tf.train.GradientDescentOptimizer(LR), _sgd),
    (lambda: tf.train.AdagradOptimizer(LR), _adagrad),
    (lambda: tf.train.AdamOptimizer(LR), _adam),
], ids=["sgd", "adagrad", "adam"])
def test_sync_training_of_a_partitioned_embedding_matches_tf1_per_row_mean(optimizer, reference):
    steps = 4
    feeds = [_step_feeds(0, steps), _step_feeds(1, steps)]
    with InProcessCluster({"ps": 2, "worker": 2}) as cluster:
        replicas = [_Replica(cluster.spec, i, optimizer) for i in range(2)]
        rep = replicas[0]
        # One shard per ps, and one sparse accumulator per shard next to it.
        assert sorted(s.device for s in rep.shards) == ["/job:ps/task:0", "/job:ps/task:1"]
        accums = [op for op in rep.graph.get_operations()
                  if op.type == "SparseConditionalAccumulator"]
        assert sorted(op.device for op in accums) == ["/job:ps/task:0", "/job:ps/task:1"]
        assert not [op for op in rep.graph.get_operations() if op.type == "ConditionalAccumulator"]
        # Each shard's mean is taken and applied where the shard lives.
        by_type = {}
        for op in rep.graph.get_operations():
            by_type.setdefault(op.type, []).append(op.device)
        assert sorted(by_type["SparseAccumulatorTakeGradient"]) == ["/job:ps/task:0",
                                                                    "/job:ps/task:1"]
        assert all(d.startswith("/job:ps") for d in by_type["SparseAccumulatorApplyGradient"])
        initial, results = _train_in_lockstep(cluster, replicas, feeds, steps)
        # The shards, their slots and accumulators live on the ps tasks, not on the workers.
        for p in (0, 1):
            assert "emb/part_%d" % p in cluster[("ps", p)].resources.variables()
            for name in cluster[("worker", p)].resources.variables():
                assert not name.startswith("emb"), name

    table, ref_slots, single = _logical(initial), {}, 0
    for k in range(steps):
        per_replica = [_row_grads(*feeds[r][k]) for r in (0, 1)]
        single += len(set(per_replica[0]) ^ set(per_replica[1]))
        reference(table, ref_slots, _tf1_sparse_mean(per_replica))
    assert single > 0   # some rows came from one replica only: the per-row mean mattered
    for task in (0, 1):
        *shards, step = results[task][:3]
        assert int(step) == steps
        np.testing.assert_allclose(_logical(shards), table, rtol=1e-5, atol=1e-5)
    if "accum" in ref_slots:
        np.testing.assert_allclose(_logical(results[0][3]), ref_slots["accum"], rtol=1e-5)
    if "m" in ref_slots:   # slot names sort as m, v; shards interleave them
        slots = results[0][3]
        np.testing.assert_allclose(_logical(slots[0::2]), ref_slots["m"], rtol=1e-5, atol=1e-7)
        # (1 - beta2) in float32 is 0.00100005: v differs from the float64 reference by ~1e-5.
        np.testing.assert_allclose(_logical(slots[1::2]), ref_slots["v"], rtol=1e-4, atol=1e-9)
        return   # Adam moves every row
    # Rows nobody looked up kept their initial values; the others moved.
    touched = set(np.concatenate([f[0] for fs in feeds for f in fs]).tolist())
    for row in range(ROWS):
        moved = not np.allclose(table[row], _logical(initial)[row])
        assert moved == (row in touched), row


def test_stale_sparse_gradients_are_dropped():
    with tf.Graph().as_default():
        table = get_variable("emb", [ROWS, DIM], partitioner=fixed_size_partitioner(2))
        ids = tf.placeholder(tf.int64, [None])
        coeff = tf.placeholder(tf.float32, [None, DIM])
        loss = tf.reduce_sum(embedding_lookup(table, ids) * coeff)
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR), 2, 2)
        opt.minimize(loss, global_step=global_step)
        graph = tf.get_default_graph()
        push = [op for op in graph.get_operations() if op.type == "SparseAccumulatorApplyGradient"]
        assert len(push) == 2   # one sparse accumulator per shard
        accums = [accum for accum, _ in opt._accumulator_list]
        counts = [a.num_accumulated() for a in accums]
        takes = [a.take_indexed_slices_grad(1) for a in accums]
        local = tf.placeholder(tf.int64, [])
        set_local = tf.assign(opt._local_step, local)
        batch = {ids: np.array([4, 4, 7]), coeff: np.arange(3 * DIM, dtype=np.float32).reshape(3, DIM)}
        stale_batch = {ids: np.arange(ROWS), coeff: np.ones((ROWS, DIM), np.float32)}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(global_step, 5))
            sess.run(opt.chief_init_op)   # accumulators' global step := 5
            sess.run(set_local, {local: 3})    # a replica still at step 3: dropped
            sess.run(push, stale_batch)
            assert sess.run(counts) == [0, 0]
            sess.run(set_local, {local: 5})
            sess.run(push, batch)
            assert sess.run(counts) == [1, 1]
            got = sess.run([(t.indices, t.values, t.dense_shape) for t in takes])
            # Only the fresh rows: id 4 (twice, summed) in shard 0 at row 2, id 7 in shard 1 at 3.
            c = batch[coeff]
            assert got[0][0].tolist() == [2] and got[1][0].tolist() == [3]
            np.testing.assert_allclose(got[0][1], [c[0] + c[1]])
            np.testing.assert_allclose(got[1][1], [c[2]])
            # Taking advanced each accumulator to step 6: a push computed at step 5 is now stale.
            sess.run(push, batch)
            assert sess.run(counts) == [0, 0]
            sess.run(set_local, {local: 6})
            sess.run(push, batch)
            assert sess.run(counts) == [1, 1]


def test_sync_training_of_a_hash_embedding():
    """The ids of a growable hash table (any int64) go through the sparse accumulators too."""
    from zps.contrib import embedding

    big = np.array([2 ** 40 - 3, 7, 2 ** 40 - 3], np.int64)
    coeff_value = np.arange(9, dtype=np.float32).reshape(3, 3)
    with InProcessCluster({"ps": 2, "worker": 1}) as cluster:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(replica_device_setter(worker_device="/job:worker/task:0",
                                                 cluster=cluster.spec)):
                table = embedding.get_hash_embedding("h", 3, initializer=0.5, num_shards=2)
                ids = tf.placeholder(tf.int64, [None])
                coeff = tf.placeholder(tf.float32, [None, 3])
                loss = tf.reduce_sum(embedding_lookup(table, ids) * coeff)
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR), 1, 1)
                train = opt.minimize(loss, global_step=global_step)
                rows = embedding_lookup(table, ids)
            accums = [op.device for op in graph.get_operations()
                      if op.type == "SparseConditionalAccumulator"]
            assert sorted(accums) == ["/job:ps/task:0", "/job:ps/task:1"]
            hook = opt.make_session_run_hook(True, num_tokens=0)
            with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 0),
                                                   is_chief=True, hooks=[hook],
                                                   log_step_count_steps=0) as sess:
                for _ in range(2):
                    sess.run(train, {ids: big, coeff: coeff_value})
                got = sess.run(rows, {ids: big[:2]})
                assert sess.run(global_step) == 2
    # Two steps of SGD; the duplicate id's two rows are summed.
    want = 0.5 - 2 * LR * np.stack([coeff_value[0] + coeff_value[2], coeff_value[1]])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _bytes_moved(spec):
    """Bytes received plus bytes sent by every task so far (their Status RPC counters: requests
    where they arrive, replies where they leave, so each message once)."""
    transport = endpoint.default_transport()
    total = 0
    for addresses in spec.values():
        for address in addresses:
            body = transport.request(address, "Status", {}, timeout=5.0).result(timeout=10.0).body
            total += body["bytes_in"] + body["bytes_out"]
    return total


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sync_step_moves_only_the_touched_rows():
    """Pushing to the sparse accumulators, taking the mean and applying it move O(k) rows for k
    distinct ids, never the N-row table: the accumulator, the take and the update of a shard all
    run on that shard's ps."""
    rows, dim = 200_000, 16
    row_bytes = dim * 4
    rng = np.random.default_rng(0)
    # The ps tasks in processes of their own: in one process, tasks exchange tensors without
    # the wire, and there would be nothing to count.
    with LocalCluster({"ps": 2, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(replica_device_setter(worker_device="/job:worker/task:0",
                                                 cluster=cluster.spec)):
                table = get_variable("emb", [rows, dim], partitioner=fixed_size_partitioner(2),
                                     initializer=tf.random_uniform_initializer(-0.1, 0.1))
                ids = tf.placeholder(tf.int64, [None])
                coeff = tf.placeholder(tf.float32, [None, dim])
                loss = tf.reduce_sum(embedding_lookup(table, ids) * coeff)
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(tf.train.AdagradOptimizer(0.1), 1, 1)
                train = opt.minimize(loss, global_step=global_step)

            def feed(k):
                unique = rng.choice(rows, size=k, replace=False)
                step_ids = np.concatenate([unique, unique, unique[: k // 2]])  # duplicates
                return {ids: step_ids, coeff: np.ones((len(step_ids), dim), np.float32)}

            hook = opt.make_session_run_hook(True, num_tokens=0)
            try:
                with tf.train.MonitoredTrainingSession(master=server.target, is_chief=True,
                                                       hooks=[hook], log_step_count_steps=0) as sess:
                    for k in (100, 2000):   # warm up: graphs registered, plans cached
                        sess.run(train, feed(k))
                    moved = {}
                    for k in (100, 2000):
                        before = _bytes_moved(cluster.spec)
                        sess.run(train, feed(k))
                        moved[k] = _bytes_moved(cluster.spec) - before
                    assert sess.run(global_step) == 4
            finally:
                server.stop()
    table_bytes = rows * dim * 4
    print("bytes moved per sync step by distinct rows touched:", moved, "table:", table_bytes)
    assert moved[100] < table_bytes / 100, moved
    growth = moved[2000] - moved[100]
    # 1900 more distinct rows: each goes to the worker, and its gradient row (with its index)
    # goes to the shard's accumulator; nothing else grows with k.
    assert 2 * 1900 * row_bytes <= growth <= 3 * 1900 * (row_bytes + 16), moved
