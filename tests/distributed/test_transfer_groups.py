"""Small transfers between two tasks that are ready together travel as one group: one _SendN, one
_RecvN, one key (zps.distributed.partition._transfer_groups)."""

import threading

import numpy as np
import pytest

import zps as tf
from zps.distributed import partition as partition_mod
from zps.distributed import rendezvous as rendezvous_mod
from zps.distributed import server as server_mod
from zps.distributed.partition import Task, partition
from zps.distributed.rendezvous import Rendezvous
from zps.framework import errors
from zps.testing.cluster import InProcessCluster
from zps.transport.codec import Incoming

pytestmark = pytest.mark.timeout(60)
WORKER, PS, PS1 = Task("worker", 0), Task("ps", 0), Task("ps", 1)


@pytest.fixture(params=["in process", "over the wire"])
def route(request, monkeypatch):
    """Tasks of one process hand tensors over through the rendezvous, others in Tensors
    messages: run each end-to-end test both ways."""
    if request.param == "over the wire":
        monkeypatch.setattr(server_mod.Server, "local_peer", lambda self, address: None)
    return request.param


def _ops(parts, task, *types):
    return [op for op in parts[task].graph.get_operations() if op.type in types]


def _pull_push_graph(shapes, dtype=tf.float32):
    """Variables on the ps, each read on the worker and its double added back on the ps."""
    variables, updates = [], []
    for i, shape in enumerate(shapes):
        with tf.device("/job:ps/task:0"):
            start = (np.arange(int(np.prod(shape))) + i).astype(dtype.as_numpy_dtype)
            v = tf.Variable(start.reshape(shape), name="v%d" % i)
        with tf.device("/job:worker/task:0"):
            pulled = tf.identity(v) * 2
        with tf.device("/job:ps/task:0"):
            updates.append(tf.assign_add(v, pulled).op)
        variables.append(v)
    return variables, tf.group(*updates)


def test_small_transfers_ready_together_travel_as_one_group_each_way():
    with tf.Graph().as_default():
        _, step = _pull_push_graph([[4], [], [2, 3]] * 3)
        parts = partition([], [], [step], WORKER, [WORKER, PS])
    for task in (PS, WORKER):
        assert not _ops(parts, task, "_Send", "_Recv")
        (send,), (recv,) = _ops(parts, task, "_SendN"), _ops(parts, task, "_RecvN")
        assert len(send.inputs) == 9 and len(recv.outputs) == 9
    # Each group's key and tensors match on both sides.
    (pull_send,), (pull_recv,) = _ops(parts, PS, "_SendN"), _ops(parts, WORKER, "_RecvN")
    assert pull_send.get_attr("key") == pull_recv.get_attr("key")
    assert pull_send.get_attr("dst") == str(WORKER) and pull_recv.get_attr("src") == str(PS)
    assert [t.get_shape().as_list() for t in pull_recv.outputs] == [[4], [], [2, 3]] * 3
    assert [t.dtype for t in pull_recv.outputs] == [tf.float32] * 9


@pytest.mark.parametrize("dtype", [tf.float32, tf.int32, tf.float64])
def test_grouped_pulls_and_pushes_give_the_numbers_of_a_local_run(route, dtype):
    shapes = [[3], [], [2, 2], [5]] * 4
    with tf.Graph().as_default():
        variables, step = _pull_push_graph(shapes, dtype)
        with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(step)
                got = sess.run(variables)
    for i, (shape, value) in enumerate(zip(shapes, got)):
        start = np.arange(int(np.prod(shape))).reshape(shape) + i
        np.testing.assert_array_equal(value, start * 27)   # x -> 3x, three times
        assert value.dtype == dtype.as_numpy_dtype


def test_a_value_that_waits_for_what_its_group_would_send_goes_in_another_group(route):
    # The ps sends `a` (ready at once) and `c`, which needs the worker's `b`, which needs `a`:
    # one group of both would wait for `c` before sending `a`, and never send.
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([1.0, 2.0], name="v")
            u = tf.Variable([10.0], name="u")
            a = tf.identity(v)
        with tf.device("/job:worker/task:0"):
            b = a * 3.0
        with tf.device("/job:ps/task:0"):
            c = b + 1.0
        with tf.device("/job:worker/task:0"):
            out = tf.reduce_sum(a) + tf.reduce_sum(c) + tf.reduce_sum(u)
        parts = partition([], [out], [], WORKER, [WORKER, PS])
        sends = _ops(parts, PS, "_Send", "_SendN")
        # `a` and `u` share a group; `c` goes alone.
        assert sorted((op.type, len(op.inputs)) for op in sends) == [("_Send", 1), ("_SendN", 2)]
        with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
            with tf.Session(cluster.target("worker", 0),
                            config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
                sess.run(tf.global_variables_initializer())
                assert sess.run(out) == pytest.approx(3.0 + (3.0 * 3 + 2) + 10.0)


def test_values_after_different_waits_on_the_source_task_are_not_grouped():
    # Two dequeues on the ps (asynchronous: each may wait for an enqueue from elsewhere): what
    # follows one is not held back for the other.
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            q1 = tf.FIFOQueue(4, tf.float32, shapes=[[]], name="q1")
            q2 = tf.FIFOQueue(4, tf.float32, shapes=[[]], name="q2")
            x, y = q1.dequeue() * 2.0, q2.dequeue() * 3.0
            z = x + 1.0
        with tf.device("/job:worker/task:0"):
            total = x + y + z
        parts = partition([], [total], [], WORKER, [WORKER, PS])
    sends = _ops(parts, PS, "_Send", "_SendN")
    # x and z both wait for q1 only: one group; y waits for q2: alone.
    assert sorted((op.type, len(op.inputs)) for op in sends) == [("_Send", 1), ("_SendN", 2)]


def test_large_and_unknown_size_transfers_go_alone():
    big = partition_mod.GROUP_TENSOR_BYTES // 4 + 1
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            large = tf.Variable(tf.zeros([big]), name="large")
            small = [tf.Variable(tf.zeros([2]), name="s%d" % i) for i in range(2)]
        with tf.device("/job:worker/task:0"):
            fed = tf.placeholder(tf.float32, [None])
            doubled = fed * 2.0   # unknown size
        with tf.device("/job:ps/task:0"):
            grown = tf.reduce_sum(doubled)
        with tf.device("/job:worker/task:0"):
            out = tf.reduce_sum(large) + tf.add_n([tf.reduce_sum(s) for s in small])
        parts = partition([fed], [out, grown], [], WORKER, [WORKER, PS])
    pulls = sorted((op.type, len(op.inputs)) for op in _ops(parts, PS, "_Send", "_SendN"))
    assert pulls == [("_Send", 1), ("_SendN", 2)]
    assert [op.type for op in _ops(parts, WORKER, "_Send", "_SendN")] == ["_Send"]


def test_groups_are_bounded_in_transfers_and_bytes():
    n = 2 * partition_mod.GROUP_SIZE + 3
    per_group = partition_mod.GROUP_BYTES // partition_mod.GROUP_TENSOR_BYTES
    with tf.Graph().as_default():
        _, many = _pull_push_graph([[1]] * n)
        parts = partition([], [], [many], WORKER, [WORKER, PS])
        sizes = sorted(len(op.inputs) for op in _ops(parts, PS, "_SendN"))
        assert sizes == [3, partition_mod.GROUP_SIZE, partition_mod.GROUP_SIZE]
    with tf.Graph().as_default():
        _, heavy = _pull_push_graph([[partition_mod.GROUP_TENSOR_BYTES // 4]] * (per_group + 1))
        parts = partition([], [], [heavy], WORKER, [WORKER, PS])
        sends = _ops(parts, PS, "_Send", "_SendN")
        assert sorted(len(op.inputs) for op in sends) == [1, per_group]


def test_control_edges_between_two_tasks_share_a_group(route):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            counters = [tf.Variable(0, name="c%d" % i) for i in range(3)]
            bumps = [c.assign_add(1) for c in counters]
        with tf.device("/job:worker/task:0"):
            with tf.control_dependencies(bumps):
                after = tf.constant(7, name="after") + 0
        parts = partition([], [after], [], WORKER, [WORKER, PS])
        (recv,) = _ops(parts, WORKER, "_RecvN")
        assert len(recv.outputs) == 3 and not _ops(parts, WORKER, "_Recv")
        with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                assert sess.run(after) == 7
                assert sess.run(counters) == [1, 1, 1]


def test_training_on_two_ps_tasks_with_grouped_transfers_matches_numpy(route):
    # A model of many small variables on two ps tasks (replica_device_setter), trained with
    # Adagrad: the gradients go to each ps in groups and the numbers are those of numpy.
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((8, 6)).astype(np.float32)
    ys = rng.standard_normal((8, 1)).astype(np.float32)
    init = [rng.standard_normal(s).astype(np.float32) for s in ([6, 4], [4], [4, 1], [1])]
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2,
                                                      worker_device="/job:worker/task:0")):
            w1, b1, w2, b2 = [tf.Variable(v, name="p%d" % i) for i, v in enumerate(init)]
            x, y = tf.constant(xs), tf.constant(ys)
            hidden = tf.tanh(tf.matmul(x, w1) + b1)
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) + b2 - y))
            train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        parts = partition([], [], [train], WORKER, [WORKER, PS, PS1])
        for ps in (PS, PS1):   # each ps: its two variables' values out, their gradients in
            assert [len(op.inputs) for op in _ops(parts, ps, "_SendN")
                    if op.get_attr("dst") == str(WORKER)] == [2]
            assert [len(op.outputs) for op in _ops(parts, ps, "_RecvN")
                    if op.get_attr("src") == str(WORKER)] == [2]
        # ps 1's two applies tell the update NoOp on ps 0 they ran: one group of two tokens.
        (tokens,) = [op for op in _ops(parts, PS, "_RecvN") if op.get_attr("src") == str(PS1)]
        assert [t.dtype for t in tokens.outputs] == [tf.int8, tf.int8]
        with InProcessCluster({"ps": 2, "worker": 1}) as cluster:
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                got = sess.run([w1, b1, w2, b2])
    params = [p.astype(np.float64) for p in init]
    acc = [np.full(p.shape, 0.1) for p in params]
    for _ in range(3):
        p1, q1, p2, q2 = params
        h = np.tanh(xs @ p1 + q1)
        err = h @ p2 + q2 - ys
        d_out = 2 * err / len(xs)
        dh = (d_out @ p2.T) * (1 - h * h)
        grads = [xs.T @ dh, dh.sum(0), h.T @ d_out, d_out.sum(0)]
        for p, a, g in zip(params, acc, grads):
            a += g * g
            p -= 0.1 * g / np.sqrt(a)
    for g, want in zip(got, params):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)


# -- the receiving end ------------------------------------------------------------------------------

def test_keyed_values_expand_groups_and_refuse_malformed_keys():
    a, b, c = np.zeros(1), np.ones(1), np.full(1, 2.0)
    keys, values = server_mod._keyed_values([["g", 2], "k"], [a, b, c])
    assert keys == ["g", "k"] and values[0] == (a, b) and values[1] is c
    assert server_mod._keyed_values(["x", "y"], [a, b]) == (["x", "y"], [a, b])
    for bad in ([["g", 3]], [["g", 0], "k", "j"], [["g"]], [[1, 1], "k"], [["g", True], "k"],
                [["g", 1.0], "k"], ["k"], ["k", "j", "i"], "k", [["g", 2, 1]], [("g", 2)]):
        assert server_mod._keyed_values(bad, [a, b]) is None, bad


def test_a_group_waits_for_its_streamed_tensors_and_fails_with_one():
    r = Rendezvous()
    got = []
    whole = np.arange(3.0)
    arriving = Incoming(np.empty(4))
    r.recv(1, "g", got.append)
    r.put(1, "g", (whole, arriving))
    assert got == []
    data = np.arange(4.0)
    arriving._take(0, [memoryview(data.view(np.uint8))], memoryview(arriving.array.view(np.uint8)))
    assert len(got) == 1 and got[0][0] is whole
    np.testing.assert_array_equal(got[0][1], data)
    failing, other = Incoming(np.empty(2)), Incoming(np.empty(2))
    r.recv(2, "g", got.append)
    r.put(2, "g", (failing, other))
    failing.fail(RuntimeError("sender died"))
    other.fail(RuntimeError("sender died too"))
    assert len(got) == 2 and isinstance(got[1], errors.AbortedError)
    assert "sender died" in got[1].message
    assert rendezvous_mod._nbytes((whole, np.zeros(5, np.int8))) == 29


def test_a_receive_of_a_group_refuses_anything_but_a_group_of_its_size():
    from zps.distributed import transfer_ops
    from zps.runtime.executor import StepContext
    from zps.runtime.resources import ResourceManager

    kernel = transfer_ops._recv_n_kernel
    for sent, says in [(np.zeros(2), "one tensor of shape (2,)"),
                       ((np.zeros(1),), "a group of 1 tensors")]:
        results = []
        ctx = StepContext(ResourceManager(), extras={
            "recv": lambda src, key, done, stream_ok, sent=sent: done(sent)})
        kernel(ctx, results.append, key="w->ps:g+2", src="/job:worker/replica:0/task:0",
               dtypes=[tf.float32] * 2, shapes=[[1], [1]])
        assert isinstance(results[0], errors.InvalidArgumentError)
        assert says in results[0].message and "a group of 2" in results[0].message
    done = threading.Event()
    kernel(StepContext(ResourceManager(), extras={
        "recv": lambda src, key, cb, stream_ok: cb((1, 2))}),
        lambda v: done.set() if v == (1, 2) else None, key="k", src="s", dtypes=[0, 0],
        shapes=[[], []])
    assert done.is_set()
