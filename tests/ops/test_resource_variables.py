"""Resource variables (``use_resource=True``): every read is a snapshot, as TF1's ResourceVariable.

A read that runs before an update keeps its value, in its step and after; a read made under
``control_dependencies`` of an update sees it. Updates change the variable in place unless a read
still holds its array, so a training step copies nothing. Ref variables keep TF1's ref semantics.
Expected values are TensorFlow 2.21's (``tensorflow.compat.v1`` with v2 behaviour disabled).
"""

import os
import weakref

import numpy as np
import pytest

import zps as tf
from zps.ops.op_util import make_op
from zps.ops.variables import ResourceVariable
from zps.testing.cluster import LocalCluster
from zps.testing.gradient_checker import GradCase, check_gradients

# A read passes its gradient on to the variable (here to a tensor it reads like an Identity).
GRAD_CASES = [GradCase("ReadVariableOp", lambda x: make_op("ReadVariableOp", [x]),
                       [np.random.default_rng(0).standard_normal((2, 3))])]


@pytest.mark.parametrize("case", GRAD_CASES, ids=repr)
def test_gradients(case):
    check_gradients(case)


def _read_then_add(use_resource):
    """``[r, r2, a]``: two reads (read_value, value) the assign_add waits for, and its result."""
    v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=use_resource)
    r = v.read_value()
    r2 = v.value()
    with tf.control_dependencies([r, r2]):
        a = tf.assign_add(v, [5.0, 5.0])
    return v, [r, r2, a]


def test_a_read_before_an_update_keeps_the_old_value():
    with tf.Graph().as_default():
        v, fetches = _read_then_add(True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            r, r2, a = sess.run(fetches)
            np.testing.assert_array_equal(r, [1.0, 2.0])    # TF: [1, 2], [1, 2], [6, 7]
            np.testing.assert_array_equal(r2, [1.0, 2.0])
            np.testing.assert_array_equal(a, [6.0, 7.0])
            np.testing.assert_array_equal(sess.run(v), [6.0, 7.0])


def test_ref_variables_keep_ref_semantics():
    with tf.Graph().as_default():
        v, fetches = _read_then_add(False)
        assert type(v) is tf.Variable and not hasattr(v, "sparse_read")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for got in sess.run(fetches):    # TF: the reads share the storage the add updates
                np.testing.assert_array_equal(got, [6.0, 7.0])


@pytest.mark.parametrize("update", ["assign", "assign_sub", "scatter_update", "scatter_add",
                                    "scatter_sub"])
def test_every_update_leaves_an_earlier_read_as_it_was(update):
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0, 3.0], use_resource=True)
        r = v.read_value()
        slices = tf.IndexedSlices(tf.constant([10.0]), tf.constant([1]))
        with tf.control_dependencies([r]):
            op = {"assign": lambda: v.assign([7.0, 8.0, 9.0]),
                  "assign_sub": lambda: v.assign_sub([1.0, 1.0, 1.0]),
                  "scatter_update": lambda: v.scatter_update(slices),
                  "scatter_add": lambda: v.scatter_add(slices),
                  "scatter_sub": lambda: v.scatter_sub(slices)}[update]()
        expected = {"assign": [7, 8, 9], "assign_sub": [0, 1, 2], "scatter_update": [1, 10, 3],
                    "scatter_add": [1, 12, 3], "scatter_sub": [1, -8, 3]}[update]
        with tf.Session() as sess:
            sess.run(v.initializer)
            got_r, _ = sess.run([r, op])
            np.testing.assert_array_equal(got_r, [1.0, 2.0, 3.0])
            np.testing.assert_array_equal(sess.run(v), expected)


def test_count_up_to_leaves_an_earlier_read_as_it_was():
    with tf.Graph().as_default():
        c = tf.get_variable("c", initializer=np.int64(4), use_resource=True)
        r = c.read_value()
        with tf.control_dependencies([r]):
            up = c.count_up_to(10)
        with tf.Session() as sess:
            sess.run(c.initializer)
            assert sess.run([r, up]) == [4, 4] and sess.run(c) == 5


def test_reads_made_under_control_dependencies_of_an_update_see_it():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True)
        a = tf.assign_add(v, [5.0, 5.0])
        with tf.control_dependencies([a]):
            after = [v * 1.0, v.read_value(), tf.identity(v), v.value(), v[1], v.sparse_read([1])]
        assert v.value() is v.value()   # outside control dependencies: the shared read
        with tf.Session() as sess:
            sess.run(v.initializer)
            got = sess.run(after)   # TF: [6, 7] for each
        for g in got[:4]:
            np.testing.assert_array_equal(g, [6.0, 7.0])
        assert got[4] == 7.0
        np.testing.assert_array_equal(got[5], [7.0])


def test_a_read_held_across_runs_keeps_its_value():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True)
        q = tf.FIFOQueue(5, tf.float32, shapes=[[2]])
        enqueue, enqueue_value = q.enqueue(v.read_value()), q.enqueue(v.value())
        add = v.assign_add([10.0, 10.0])
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(enqueue)
            sess.run(enqueue_value)
            sess.run(add)
            first, second = sess.run(q.dequeue()), sess.run(q.dequeue())   # TF: [1, 2] twice
            np.testing.assert_array_equal(first, [1.0, 2.0])
            np.testing.assert_array_equal(second, [1.0, 2.0])
            np.testing.assert_array_equal(sess.run(v), [11.0, 12.0])


@pytest.mark.parametrize("name,after", [
    ("sgd", [0.8, 1.6]), ("adam", [0.9, 1.9]), ("momentum", [0.8, 1.6]),
    ("adagrad", [0.90122706, 1.900311])])
def test_optimizer_updates_leave_an_earlier_read_as_it_was(name, after):
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True)
        loss = tf.reduce_sum(v * v)
        opt = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
               "adam": lambda: tf.train.AdamOptimizer(0.1),
               "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
               "adagrad": lambda: tf.train.AdagradOptimizer(0.1)}[name]()
        grads = opt.compute_gradients(loss, [v])
        r = v.read_value()
        with tf.control_dependencies([r, grads[0][0]]):
            train = opt.apply_gradients(grads)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run([r, train])[0], [1.0, 2.0])   # TF: [1, 2]
            np.testing.assert_allclose(sess.run(v), after, rtol=1e-6)


def test_sparse_read_and_sparse_updates():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                            use_resource=True)
        emb = tf.gather(v, [0, 2])
        opt = tf.train.GradientDescentOptimizer(0.1)
        grads = opt.compute_gradients(tf.reduce_sum(emb * emb), [v])
        assert isinstance(grads[0][0], tf.IndexedSlices)
        r = v.sparse_read([2, 0])
        assert r.op.type == "Gather" and r.op.device == v.op.device
        with tf.control_dependencies([r, grads[0][0].values]):
            train = opt.apply_gradients(grads)
        with tf.control_dependencies([r]):
            scatter = v.scatter_add(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([1])))
        rows = v.sparse_read([1])
        (dv,) = tf.gradients(tf.reduce_sum(rows * 3.0), [v])
        with tf.Session() as sess:
            sess.run(v.initializer)
            got_r, _ = sess.run([r, train])   # TF: [[5, 6], [1, 2]]; v [[.8, 1.6], [3, 4], [4, 4.8]]
            np.testing.assert_array_equal(got_r, [[5.0, 6.0], [1.0, 2.0]])
            np.testing.assert_allclose(sess.run(v), [[0.8, 1.6], [3.0, 4.0], [4.0, 4.8]], rtol=1e-6)
            sess.run(v.initializer)
            got_r, got_s = sess.run([r, scatter])
            np.testing.assert_array_equal(got_r, [[5.0, 6.0], [1.0, 2.0]])
            np.testing.assert_array_equal(got_s, [[1.0, 2.0], [4.0, 5.0], [5.0, 6.0]])
            g = sess.run(dv)
            np.testing.assert_array_equal(g.indices, [1])
            np.testing.assert_array_equal(g.values, [[3.0, 3.0]])


def _containers(sess, variables):
    return [sess._runner.resources.variable(v.op.name) for v in variables]


@pytest.mark.parametrize("optimizer", [
    lambda: tf.train.GradientDescentOptimizer(0.1), lambda: tf.train.AdamOptimizer(0.01),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9), lambda: tf.train.AdagradOptimizer(0.1),
    lambda: tf.train.RMSPropOptimizer(0.01), lambda: tf.train.FtrlOptimizer(0.1)])
def test_a_training_step_updates_in_place_and_trains_as_ref_variables_do(optimizer):
    rng = np.random.default_rng(0)
    x_val = rng.standard_normal((16, 6)).astype(np.float32)
    y_val = rng.integers(0, 4, 16)
    losses = {}
    for use_resource in (False, True):
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            with tf.variable_scope("m", use_resource=use_resource):
                x = tf.constant(x_val)
                h = tf.layers.dense(x, 8, activation=tf.nn.relu)
                emb = tf.get_variable("emb", [4, 3])
                logits = tf.layers.dense(tf.concat([h, tf.gather(emb, y_val)], 1), 4)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y_val, logits=logits))
                train = optimizer().minimize(loss, global_step=tf.train.create_global_step())
            trained = tf.trainable_variables()
            assert all(isinstance(v, ResourceVariable) == use_resource for v in trained)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                # (weak references: a reference held here would count as a read)
                arrays = [weakref.ref(c.value) for c in _containers(sess, trained)]
                for _ in range(3):
                    sess.run(train)
                losses[use_resource] = sess.run(loss)
                if use_resource:   # no read was held when the optimizer applied: no copies
                    assert all(c.value is a() for c, a in zip(_containers(sess, trained), arrays))
    assert losses[True] == losses[False]


def test_api_of_a_resource_variable():
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True)
        assert type(v).__name__ == "ResourceVariable" and isinstance(v, tf.Variable)
        assert (v.name, v.op.name, v.dtype, v.shape.as_list()) == ("v:0", "v", tf.float32, [2])
        assert v.handle is v._ref() and v.handle.name == "v:0"
        assert v.value().name == "v/Read/ReadVariableOp:0"
        assert v.value().op.type == "ReadVariableOp" and v.initializer.name == "v/Assign"
        with tf.control_dependencies([v.initializer]):
            fresh = v.value()
        assert fresh is not v.value() and fresh.op.device == v.op.device
        assert fresh.op.control_inputs == [v.initializer]
        assert isinstance(v.assign([0.0, 0.0], read_value=False), tf.Operation)
        assert isinstance(v.assign_add([1.0, 1.0], read_value=False), tf.Operation)
        assert isinstance(v.assign_sub([1.0, 1.0], read_value=False), tf.Operation)
        assert repr(v) == "<zps.Variable 'v:0' shape=(2,) dtype=float32>"
        with tf.Session() as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(v.eval(sess), [1.0, 2.0])
            v.load([3.0, 4.0], sess)
            np.testing.assert_array_equal(sess.run(v.assign([5.0, 6.0])), [5.0, 6.0])
            np.testing.assert_array_equal(sess.run(v.sparse_read([1, 1, 0])), [6.0, 6.0, 5.0])


def test_what_makes_a_resource_variable():
    with tf.Graph().as_default():
        assert not tf.resource_variables_enabled()
        assert type(tf.Variable(1.0)) is tf.Variable
        assert type(tf.Variable(1.0, use_resource=True)) is ResourceVariable
        assert type(tf.get_variable("a", [1], use_resource=True)) is ResourceVariable
        with tf.variable_scope("s", use_resource=True):
            with tf.variable_scope("inner"):
                assert type(tf.get_variable("b", [1])) is ResourceVariable
                assert type(tf.Variable(1.0)) is ResourceVariable
                assert type(tf.get_variable("c", [1], use_resource=False)) is tf.Variable
            parts = tf.get_variable("p", [4, 2], partitioner=tf.fixed_size_partitioner(2))
            assert [type(p) for p in parts] == [ResourceVariable] * 2
        tf.enable_resource_variables()
        try:
            assert tf.resource_variables_enabled()
            assert type(tf.Variable(1.0)) is ResourceVariable
            assert type(tf.get_variable("d", [1])) is ResourceVariable
            with tf.variable_scope("ref", use_resource=False):
                assert type(tf.get_variable("e", [1])) is tf.Variable
        finally:
            tf.disable_resource_variables()
        assert not tf.resource_variables_enabled() and type(tf.Variable(1.0)) is tf.Variable


def test_gradients_reach_the_variable_from_every_read():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True)
        with tf.control_dependencies([tf.no_op()]):
            fresh = v * 3.0                       # a read of its own
        loss = tf.reduce_sum(v * v) + tf.reduce_sum(fresh)
        (g,) = tf.gradients(loss, [v])
        with tf.Session() as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(g), [5.0, 7.0])   # 2v + 3


def test_assign_of_a_new_shape_and_reads_in_a_cond_branch():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True, validate_shape=False)
        r = v.read_value()
        with tf.control_dependencies([r]):
            grow = tf.assign(v, [1.0, 2.0, 3.0], validate_shape=False)

        def add_then_read():
            a = tf.assign_add(v, [1.0, 1.0])
            with tf.control_dependencies([a]):
                return v.read_value() * 1.0
        branch = tf.cond(tf.constant(True), add_then_read, lambda: v * 0.0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(branch), [2.0, 3.0])
            got_r, got_grow = sess.run([r, grow])
            np.testing.assert_array_equal(got_r, [2.0, 3.0])
            np.testing.assert_array_equal(got_grow, [1.0, 2.0, 3.0])


def test_saver_restores_resource_variables_that_still_read_snapshots(tmp_path):
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=[1.0, 2.0], use_resource=True)
        parts = tf.get_variable("p", initializer=np.arange(6.0).reshape(3, 2), use_resource=True,
                                partitioner=tf.fixed_size_partitioner(2))
        saver = tf.train.Saver()
        r = v.read_value()
        with tf.control_dependencies([r]):
            add = v.assign_add([1.0, 1.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(v.assign([3.0, 4.0]))
            path = saver.save(sess, str(tmp_path / "model"))
        with tf.Session() as sess:   # fresh storage: the restore's assigns mark it copy-on-write
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(parts)),
                                          np.arange(6.0).reshape(3, 2))
            got_r, got_add = sess.run([r, add])
            np.testing.assert_array_equal(got_r, [3.0, 4.0])
            np.testing.assert_array_equal(got_add, [4.0, 5.0])


# -- a variable on a ps task, read on a worker -----------------------------------------------------
N = 1 << 20   # float32 elements (4 MB: sent zero-copy, in chunks)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_ps_variable_read_by_a_worker_while_the_ps_updates_it(tmp_path):
    """The worker gets the value the ps read: the ps's add waits only for the read, not for its
    send (a send still holding the array makes the add update a copy); a Saver saves and
    restores the ps's variables."""
    init = np.arange(N, dtype=np.float32)
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        worker = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                with tf.device(tf.train.replica_device_setter(
                        ps_tasks=1, worker_device="/job:worker/task:0")):
                    v = tf.get_variable("big", initializer=init, use_resource=True)
                    small = tf.get_variable("small", initializer=[1.0, 2.0], use_resource=True)
                    reads = [v.read_value(), small.read_value()]
                    pulled = [tf.identity(t) for t in reads]
                    with tf.control_dependencies(reads):
                        adds = [v.assign_add(tf.ones([N])), small.assign_add([1.0, 1.0])]
                assert v.op.device == reads[0].op.device == "/job:ps/task:0"
                assert pulled[0].op.device == "/job:worker/task:0"
                saver = tf.train.Saver([v, small])
                with tf.Session(worker.target) as sess:
                    sess.run(tf.global_variables_initializer())
                    for step in range(4):
                        got, got_small = sess.run([pulled, [a.op for a in adds]])[0]
                        assert got.tobytes() == (init + step).tobytes(), "step %d" % step
                        np.testing.assert_array_equal(got_small, [1.0 + step, 2.0 + step])
                    path = saver.save(sess, os.path.join(str(tmp_path), "ps_model"))
                    sess.run([a.op for a in adds])
                    saver.restore(sess, path)
                    np.testing.assert_array_equal(sess.run(small), [5.0, 6.0])
                    assert sess.run(v).tobytes() == (init + 4).tobytes()
        finally:
            worker.stop()


def test_optimizer_state_is_of_its_variables_kind():
    # TF1: a resource variable's slots are resource variables, a ref variable's are ref
    # variables; the optimizer's own variables (Adam's beta powers) follow the variable they sit
    # next to (the first by name: here the resource variable "a").
    with tf.Graph().as_default():
        a = tf.get_variable("a", [2], use_resource=True)
        b = tf.get_variable("b", [2], use_resource=False)
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(tf.reduce_sum(a * a) + tf.reduce_sum(b * b))
        assert type(opt.get_slot(a, "m")).__name__ == "ResourceVariable"
        assert type(opt.get_slot(b, "v")).__name__ == "Variable"
        assert {type(v).__name__ for v in opt._non_slot_variables()} == {"ResourceVariable"}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert sess.run(opt.get_slot(a, "m")).shape == (2,)
