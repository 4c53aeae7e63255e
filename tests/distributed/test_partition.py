"""Partitioning decisions that save round trips (zps.distributed.partition)."""

import numpy as np

import zps as tf
from zps.distributed.partition import Task, partition, streams_into_update
from zps.framework.device import DeviceSpec
from zps.testing.cluster import InProcessCluster

WORKER, PS = Task("worker", 0), Task("ps", 0)


def _transfers(parts):
    return {t: sorted(o.type for o in p.graph.get_operations() if o.type in ("_Send", "_Recv"))
            for t, p in parts.items()}


def _tiny_training_graph():
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(0.0, name="w")
        loss = tf.square(w - 3.0)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return gs, w, loss, train


def test_the_optimizers_update_noop_runs_with_the_ps_ops_it_orders():
    # TF1 makes the optimizer's `update` NoOp under the worker's device scope, between the ps's
    # apply op and the ps's global-step increment: placed on the worker it would cost a control
    # token ps -> worker -> ps. Only w goes out, only the gradient comes back (the learning rate
    # is a constant: the ps has its own copy).
    with tf.Graph().as_default():
        _, _, loss, train = _tiny_training_graph()
        parts = partition([], [loss], [train], WORKER, [WORKER, PS])
    ps_ops = {op.name.rstrip("/"): op.type for op in parts[PS].graph.get_operations()}
    assert ps_ops["GradientDescent/update"] == "NoOp"
    assert _transfers(parts) == {PS: ["_Recv", "_Send"], WORKER: ["_Recv", "_Send"]}


def test_a_constant_read_on_several_tasks_is_copied_into_each_not_sent():
    ps1 = Task("ps", 1)
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            lr = tf.constant(0.5, name="lr")
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(1.0, name="a")
        with tf.device("/job:ps/task:1"):
            b = tf.Variable(1.0, name="b")
        with tf.device("/job:worker/task:0"):
            with tf.control_dependencies([a.initializer]):
                ordered = tf.constant(2.0, name="ordered")   # a constant that waits: it travels
        with tf.device("/job:ps/task:1"):
            scaled = lr * ordered
        step = tf.group(a.assign_add(lr), b.assign_add(scaled))
        parts = partition([], [], [step], WORKER, [WORKER, PS, ps1])
    consts = {t: [op.name.rstrip("/") for op in p.graph.get_operations() if op.type == "Const"
                  and not op.name.startswith("_token")] for t, p in parts.items()}
    assert "lr" in consts[PS] and "lr" in consts[ps1]
    recvs = {t: [op.name for op in p.graph.get_operations() if op.type == "_Recv"]
             for t, p in parts.items()}
    assert not any("lr" in n for n in recvs[PS] + recvs[ps1])
    assert any("ordered" in n for n in recvs[ps1])


def test_a_noop_ordering_ops_of_two_tasks_stays_put():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(1.0, name="a")
        with tf.device("/job:worker/task:0"):
            b = tf.Variable(1.0, name="b")
            group = tf.group(a.assign_add(1.0), b.assign_add(1.0), name="both")
        parts = partition([], [], [group], WORKER, [WORKER, PS])
    assert "both" in [op.name.rstrip("/") for op in parts[WORKER].graph.get_operations()]


def _two_ps_training_graph():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        gs = tf.train.get_or_create_global_step()    # ps 0
        w = tf.Variable(0.0, name="w")               # ps 1
        u = tf.Variable(1.0, name="u")               # ps 0
        loss = tf.square(w - 3.0) + tf.square(u + 1.0)
        train = tf.train.AdagradOptimizer(0.5).minimize(loss, global_step=gs)
    return gs, w, u, loss, train


def test_the_update_noop_of_variables_on_two_ps_tasks_moves_to_the_global_steps_ps():
    # On the worker it would wait for tokens from ps 0 and ps 1 and send one to ps 0 (three
    # messages, two hops on the critical path); on ps 0 only ps 1 sends it one.
    ps1 = Task("ps", 1)
    with tf.Graph().as_default():
        *_, train = _two_ps_training_graph()
        parts = partition([], [], [train], WORKER, [WORKER, PS, ps1])
    names = {t: [op.name.rstrip("/") for op in p.graph.get_operations()] for t, p in parts.items()}
    assert "Adagrad/update" in names[PS]
    tokens = {t: [n for n in names[t] if "update" in n and n.startswith(("_send", "_recv"))]
              for t in names}
    assert len(tokens[ps1]) == 1 and tokens[ps1][0].startswith("_send")
    assert not tokens[WORKER]


def test_training_on_two_ps_tasks_with_the_moved_noop_gives_the_same_numbers():
    with InProcessCluster({"ps": 2, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            gs, w, u, _, train = _two_ps_training_graph()
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(4):
                    sess.run(train)
                got = sess.run([w, u, gs])
    x = np.array([0.0, 1.0])
    acc = np.full(2, 0.1)
    for _ in range(4):
        g = 2 * (x - np.array([3.0, -1.0]))
        acc += g * g
        x -= 0.5 * g / np.sqrt(acc)
    np.testing.assert_allclose(got[:2], x, rtol=1e-6)
    assert got[2] == 4


def test_training_with_the_moved_noop_gives_the_same_numbers():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            gs, w, loss, train = _tiny_training_graph()
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                expected = 0.0
                for _ in range(3):
                    expected -= 0.1 * 2 * (expected - 3.0)
                assert np.isclose(sess.run(w), expected) and sess.run(gs) == 3


def _stream_ok(parts, task):
    return {op.name: bool(op.get_attr("stream_ok") if "stream_ok" in op._attrs else False)
            for op in parts[task].graph.get_operations() if op.type == "_Recv"}


def test_recvs_read_only_by_an_in_place_update_may_take_a_tensor_while_it_streams():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.zeros([8]), name="v")
            u = tf.Variable(tf.zeros([8]), name="u")
        with tf.device("/job:worker/task:0"):
            delta = tf.placeholder(tf.float32, [8])
            twice = delta * 2.0
        push = tf.assign_add(v, delta)                       # the Recv's only reader: streams
        sgd = tf.train.GradientDescentOptimizer(0.5).apply_gradients([(twice, u)])
        parts = partition([delta], [], [push.op, sgd], WORKER, [WORKER, PS])
        with tf.device("/job:ps/task:0"):
            also_read = tf.reduce_sum(twice)                 # a second reader: takes it whole
        shared = partition([delta], [also_read], [sgd], WORKER, [WORKER, PS])
    # The fed delta goes to the ps as a feed (checked by the worker service), `twice` by a Recv.
    assert list(_stream_ok(parts, PS).values()) == [True]
    assert list(_stream_ok(shared, PS).values()) == [False]
    placeholders = [op.outputs[0] for op in parts[PS].graph.get_operations()
                    if op.type == "Placeholder"]
    assert [streams_into_update(t) for t in placeholders] == [True]


def _sparse_training_graph():
    with tf.device("/job:ps/task:0"):
        table = tf.Variable(np.arange(40, dtype=np.float32).reshape(10, 4), name="table")
    with tf.device("/job:worker/task:0"):
        ids = tf.placeholder(tf.int64, [None], name="ids")
        loss = tf.reduce_sum(tf.square(tf.gather(table, ids)))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return table, ids, train


def test_a_shape_known_when_the_graph_is_built_is_a_constant_where_it_is_read():
    # The gradient of a lookup takes the table's shape where the table lives (as TF1 does); the
    # worker reading it gets a constant of the static shape instead of a message every step.
    with tf.Graph().as_default():
        _, ids, train = _sparse_training_graph()
        parts = partition([ids], [], [train], WORKER, [WORKER, PS])
    names = {t: [op.name for op in p.graph.get_operations() if op.type in ("_Send", "_Recv")]
             for t, p in parts.items()}
    assert not [n for n in names[WORKER] + names[PS] if "Shape" in n], names
    # The rows' shape the gradient's values are reshaped to is known when the graph is built:
    # a constant on the worker (folded from the table's static shape), not a Shape of the table.
    worker_ops = parts[WORKER].graph.get_operations()
    assert not [op.name for op in worker_ops if "Gather_grad/Shape" in op.name]
    copies = [op for op in worker_ops if op.type == "Const" and "Gather_grad/" in op.name
              and op.get_attr("value").tolist() == [-1, 4]]
    assert len(copies) == 1, [(op.name, op.type) for op in worker_ops]
    # On the worker, not colocated with the ps table.
    device = DeviceSpec.from_string(copies[0].device)
    assert (device.job, device.task) == ("worker", 0)
    assert not copies[0]._colocation


def test_sparse_training_with_the_folded_shape_gives_the_same_numbers():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            table, ids, train = _sparse_training_graph()
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(train, {ids: [1, 7, 1]})
                got = sess.run(table)
    expected = np.arange(40, dtype=np.float32).reshape(10, 4)
    expected[1] -= 0.1 * 2 * 2 * expected[1]   # looked up twice: both gradients summed
    expected[7] -= 0.1 * 2 * expected[7]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_a_step_that_needs_only_a_ps_variables_static_shape_does_not_touch_that_ps():
    # TF1 folds tf.shape of a fully defined shape when the graph is built; zps when it
    # partitions: the shape neither pulls the table to the worker nor waits for its ps.
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(tf.zeros([10, 4]), name="v")
                on_ps = tf.shape(v)
            with tf.device("/job:worker/task:0"):
                on_worker = tf.shape(v) * 2
                rows = on_ps[0] + 1
            parts = partition([], [on_worker, rows, on_ps], [], WORKER, [WORKER, PS])
            assert list(parts) == [WORKER] and not _transfers(parts)[WORKER]
            cluster.servers[("ps", 0)].stop()
            config = tf.ConfigProto(operation_timeout_in_ms=5000)
            with tf.Session(cluster.target("worker", 0), config=config) as sess:
                got = sess.run([on_worker, rows, on_ps])
    assert [np.asarray(x).tolist() for x in got] == [[20, 8], 11, [10, 4]]


def test_the_shape_of_a_variable_that_may_change_shape_is_read_at_run_time():
    # An assign with validate_shape=False (run in another step) may change the variable's shape:
    # the shape is then taken on the ps at run time, as a local run does, not folded.
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(tf.zeros([2]), name="v")
                grow = tf.assign(v, tf.zeros([3]), validate_shape=False)
            with tf.device("/job:worker/task:0"):
                shape = tf.shape(v) + 0
            parts = partition([], [shape], [], WORKER, [WORKER, PS])
            assert [op.type for op in parts[PS].graph.get_operations()].count("_Send") == 1
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                assert sess.run(shape).tolist() == [2]
                sess.run(grow)
                assert sess.run(shape).tolist() == [3]
