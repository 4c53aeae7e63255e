"""replica_device_setter: round-robin and greedy placement, TF1's merge rules, colocation of
optimizer state with its variable, and training on an in-process 2 ps + 1 worker cluster."""

import logging

import numpy as np
import pytest

import zps as tf
from zps.contrib import training as contrib_training
from zps.testing.cluster import InProcessCluster
from zps.train.device_setter import (
    STANDARD_PS_OPS,
    GreedyLoadBalancingStrategy,
    RandomStrategy,
    byte_size_load_fn,
    replica_device_setter,
)

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"],
           "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]}


def _devices(ops):
    return {op.name: op.device for op in ops}


# -- round-robin placement ---------------------------------------------------------------------
def test_variables_round_robin_in_creation_order_and_compute_on_worker():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER)):
            vs = [tf.Variable(np.float32(i), name="v%d" % i) for i in range(5)]
            total = tf.add_n([v.value() for v in vs])
        assert [v.device for v in vs] == ["/job:ps/task:%d" % t for t in (0, 1, 0, 1, 0)]
        for v in vs:  # the initializer and the read snapshot follow the variable
            assert v.initializer.device == v.device
            assert v.value().device == v.device
        assert total.device == "/job:worker"


def test_worker_device_with_task():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:2")):
            w = tf.Variable([1.0, 2.0], name="w")
            y = tf.reduce_sum(w * 3.0)
        assert w.device == "/job:ps/task:0"
        assert y.device == "/job:worker/task:2"
        assert y.op.inputs[0].op.device == "/job:worker/task:2"


def _model():
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w1 = tf.get_variable("w1", [4, 8])
    b1 = tf.Variable(tf.zeros([8]), name="b1")
    w2 = tf.get_variable("w2", [8, 2])
    b2 = tf.Variable(tf.zeros([2]), name="b2")
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2))
    tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=step)


def test_same_mapping_in_separately_built_graphs():
    # Between-graph replication: each worker builds the graph with its own worker_device, and
    # every variable and all optimizer state land on the same ps task in both graphs.
    mappings = []
    for task in (0, 1):
        with tf.Graph().as_default() as g:
            with tf.device(replica_device_setter(cluster=CLUSTER,
                                                 worker_device="/job:worker/task:%d" % task)):
                _model()
            mappings.append(_devices(g.get_operations()))
    assert mappings[0].keys() == mappings[1].keys()
    on_ps = {n for n, d in mappings[0].items() if d.startswith("/job:ps")}
    assert {"w1", "b1", "w2", "b2", "global_step", "w1/Momentum", "b2/Momentum"} <= on_ps
    assert all(mappings[1][n] == mappings[0][n] for n in on_ps)
    # Everything else runs on the worker (gradient gates are built under device(None), as in TF1).
    elsewhere = {mappings[1][n] for n in set(mappings[1]) - on_ps if "/tuple" not in n}
    assert elsewhere == {"/job:worker/task:1"}
    expected = dict(zip(["global_step", "w1", "b1", "w2", "b2"], [0, 1, 0, 1, 0]))
    assert {n: mappings[0][n] for n in expected} == {
        n: "/job:ps/task:%d" % t for n, t in expected.items()}
    assert mappings[0]["w1/Momentum"] == "/job:ps/task:1"


def test_one_setter_reused_for_two_graphs_places_both_alike():
    # TF1 would continue counting in the second graph; zps keeps the count per graph.
    setter = replica_device_setter(ps_tasks=2)
    devices = []
    for _ in range(2):
        with tf.Graph().as_default():
            with tf.device(setter):
                devices.append([tf.Variable(1.0).device for _ in range(3)])
    assert devices[0] == devices[1] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def test_count_continues_across_blocks_of_one_graph():
    setter = replica_device_setter(ps_tasks=3)
    with tf.Graph().as_default():
        with tf.device(setter):
            a = tf.Variable(1.0)
        with tf.device(setter):
            b = tf.Variable(1.0)
    assert (a.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1")


# -- optimizer state follows its variable ---------------------------------------------------------
def test_momentum_slots_and_updates_on_their_variables_ps_task():
    with tf.Graph().as_default() as g:
        with tf.device(replica_device_setter(cluster=CLUSTER)):
            w = tf.Variable(tf.ones([3, 2]), name="w")
            b = tf.Variable(tf.zeros([2]), name="b")
            x = tf.constant(np.ones((4, 3), np.float32))
            loss = tf.reduce_sum(tf.matmul(x, w) + b)
            opt = tf.train.MomentumOptimizer(0.1, 0.9)
            train_op = opt.minimize(loss)
            after = tf.Variable(1.0, name="after")
        assert (w.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1")
        for var in (w, b):
            slot = opt.get_slot(var, "momentum")
            assert slot.op.name == var.op.name + "/Momentum"
            assert slot.device == var.device
            assert slot.initializer.device == var.device
            updates = [op for op in g.get_operations()
                       if op.name.startswith("Momentum/update_%s/" % var.op.name)]
            assert updates and all(op.device == var.device for op in updates), _devices(updates)
        assert train_op.device == "/job:worker"  # the final group runs where the step runs
        # Slots are colocated, not placed by the setter: they do not advance the round-robin.
        assert after.device == "/job:ps/task:0"


def test_adam_beta_powers_with_first_variable_by_name():
    with tf.Graph().as_default() as g:
        with tf.device(replica_device_setter(ps_tasks=2)):
            zeta = tf.Variable([1.0, 2.0], name="zeta")   # task 0
            alpha = tf.Variable([3.0], name="alpha")      # task 1, first by name
            loss = tf.reduce_sum(zeta * zeta) + tf.reduce_sum(alpha * alpha)
            opt = tf.train.AdamOptimizer(0.01)
            opt.minimize(loss)
        beta1, beta2 = opt._get_beta_accumulators()
        assert beta1.op.name == "beta1_power" and beta2.op.name == "beta2_power"
        assert beta1.device == beta2.device == alpha.device == "/job:ps/task:1"
        for var in (zeta, alpha):
            assert opt.get_slot(var, "m").device == opt.get_slot(var, "v").device == var.device
        beta_updates = [op for op in g.get_operations()
                        if op.type == "Assign" and op.inputs[0].op is beta1.op
                        and op.name.startswith("Adam/")]
        assert beta_updates and beta_updates[0].device == "/job:ps/task:1"


def test_global_step_goes_to_a_ps_task_and_its_increment_with_it():
    with tf.Graph().as_default() as g:
        with tf.device(replica_device_setter(ps_tasks=2)):
            step = tf.train.get_or_create_global_step()
            w = tf.Variable(2.0, name="w")
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(w * w, global_step=step)
        assert step.device == "/job:ps/task:0" and w.device == "/job:ps/task:1"
        assert step.initializer.device == step.device
        assert train_op.type == "AssignAdd" and train_op.device == step.device
        init_ops = [op for op in g.get_operations() if op.name.startswith("global_step/")]
        assert init_ops and all(op.device == step.device for op in init_ops), _devices(init_ops)


# -- merging with inner device scopes (TF1's device_setter_test) ----------------------------------
def test_inner_worker_task_wins_and_does_not_consume_a_ps_task():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER)):
            with tf.device("/job:worker/task:3"):
                local = tf.Variable(1.0, name="local")
                y = local * 2.0
            v = tf.Variable(1.0, name="v")
        assert local.device == "/job:worker/task:3"
        assert y.device == "/job:worker/task:3"
        assert v.device == "/job:ps/task:0"


def test_inner_gpu_merges():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER)):
            with tf.device("/gpu:0"):
                v = tf.Variable([1.0, 2.0])
                y = v * 2.0
            w = tf.Variable([2.0, 1.0])
        assert v.device == "/job:ps/task:0/device:GPU:0"
        assert v.initializer.device == v.device
        assert y.device == "/job:worker/device:GPU:0"
        assert w.device == "/job:ps/task:1"


def test_cpu_override():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER)):
            with tf.device("/cpu:0"):
                v = tf.Variable([1, 2])
            w = tf.Variable([2, 1])
            with tf.device("/cpu:0"):
                a = v + w
        assert v.device == "/job:ps/task:0/device:CPU:0"
        assert w.device == "/job:ps/task:1"
        assert a.device == "/job:worker/device:CPU:0"


def test_pin_variable_to_another_job_and_explicit_ps_job_gets_a_task():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER)):
            v = tf.Variable([1, 2])
            with tf.device("/job:moon"):
                w = tf.Variable([2, 1])
                with tf.device("/job:ps"):
                    x = tf.Variable([0, 1])
            a = v + w + x
        assert (v.device, w.device, x.device) == ("/job:ps/task:0", "/job:moon", "/job:ps/task:1")
        assert w.initializer.device == "/job:moon"
        assert a.device == "/job:worker"


def test_ps_device_without_job():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=1, ps_device="/cpu:0")):
            v = tf.Variable([1, 2])
            with tf.device("/job:moon"):
                w = tf.Variable([2, 1])
            a = v + w
        assert v.device == "/device:CPU:0"
        assert w.device == "/job:moon/device:CPU:0"
        assert a.device == "/job:worker"


def test_no_merging_keeps_inner_device(caplog):
    with caplog.at_level(logging.WARNING, logger="zps.train.device_setter"):
        setter = replica_device_setter(cluster=CLUSTER, merge_devices=False)
    assert "merge_devices=true" in caplog.text
    with tf.Graph().as_default():
        with tf.device(setter):
            v = tf.Variable([1, 2])
            with tf.device("/job:ps"):  # no task is chosen without merging
                w = tf.Variable([2, 1])
            a = v + w
        assert (v.device, w.device, a.device) == ("/job:ps/task:0", "/job:ps", "/job:worker")


def test_other_job_names_and_ps_device_fields():
    cluster = tf.train.ClusterSpec({"sun": ["sun0:2222", "sun1:2222", "sun2:2222"],
                                    "moon": ["moon0:2222", "moon1:2222"]})
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_device="/job:moon/cpu:0", worker_device="/job:sun",
                                             cluster=cluster)):
            v = tf.Variable([1, 2])
            w = tf.Variable([2, 1])
            a = v + w
        assert v.device == "/job:moon/task:0/device:CPU:0"
        assert w.device == "/job:moon/task:1/device:CPU:0"
        assert a.device == "/job:sun"


def test_custom_ps_ops():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2, ps_ops=["Placeholder"])):
            p = tf.placeholder(tf.float32, [2], name="p")
            v = tf.Variable([1.0, 2.0], name="v")
        assert p.device == "/job:ps/task:0"
        assert v.device == "/job:worker"


def test_standard_ps_ops_are_tf1s():
    assert "VariableV2" in STANDARD_PS_OPS and "VarHandleOp" in STANDARD_PS_OPS
    assert STANDARD_PS_OPS[:3] == ("Variable", "VariableV2", "AutoReloadVariable")


# -- when there is a ps, and how many tasks ---------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    {},
    {"ps_tasks": 0},
    {"cluster": {"worker": ["w0:2222", "w1:2222"]}},
    {"cluster": tf.train.ClusterSpec({"worker": ["w0:2222"]}), "ps_tasks": 3},
    {"cluster": {"ps": [], "worker": ["w0:2222"]}},
    {"cluster": CLUSTER, "ps_device": "/job:moon"},
])
def test_returns_none_without_ps(kwargs):
    assert replica_device_setter(**kwargs) is None


@pytest.mark.parametrize("kwargs", [
    {"cluster": CLUSTER},
    {"cluster": tf.train.ClusterSpec(CLUSTER)},
    {"ps_tasks": 2},
    {"ps_tasks": 5, "cluster": CLUSTER},  # the cluster's ps job decides
])
def test_number_of_ps_tasks_from_cluster_or_ps_tasks(kwargs):
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(**kwargs)):
            devices = [tf.Variable(1.0).device for _ in range(4)]
    assert devices == ["/job:ps/task:%d" % t for t in (0, 1, 0, 1)]


def test_empty_ps_device_puts_everything_on_the_worker():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2, ps_device="")):
            v = tf.Variable(1.0)
        assert v.device == "/job:worker"


def test_bad_arguments():
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        replica_device_setter(ps_tasks=2, ps_strategy=3)
    with pytest.raises(TypeError, match="ClusterSpec needs a dict"):
        replica_device_setter(cluster=["ps0:2222"])


# -- load-balancing strategies --------------------------------------------------------------------
def _four_variables(strategy):
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER, ps_strategy=strategy)):
            u = tf.Variable(tf.zeros([2, 2]))
            v = tf.Variable(tf.zeros([2, 1]))
            w = tf.Variable(tf.zeros([2, 2]))
            x = tf.Variable(tf.zeros([1, 3]))
            a = v + w
        assert all(var.initializer.device == var.device for var in (u, v, w, x))
        assert a.device == "/job:worker"
        return [int(var.device[-1]) for var in (u, v, w, x)]


def test_greedy_with_uniform_load_is_round_robin():
    assert _four_variables(GreedyLoadBalancingStrategy(2, lambda op: 1)) == [0, 1, 0, 1]


def test_greedy_by_byte_size():
    # u 16 B -> 0; v 8 B -> 1; w 16 B -> 1 (8 < 16); x 12 B -> 0 (16 < 24).
    assert _four_variables(contrib_training.GreedyLoadBalancingStrategy(
        2, contrib_training.byte_size_load_fn)) == [0, 1, 1, 0]


def test_greedy_two_big_two_small_balances():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
            big1 = tf.Variable(tf.zeros([100, 100]), name="big1")
            small1 = tf.Variable(tf.zeros([10]), name="small1")
            big2 = tf.Variable(tf.zeros([100, 100]), name="big2")
            small2 = tf.Variable(tf.zeros([10]), name="small2")
    # Round-robin would put both big variables on task 0; greedy splits them.
    assert [v.device for v in (big1, small1, big2, small2)] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1", "/job:ps/task:0"]


def test_greedy_with_scalar_variable():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=CLUSTER, ps_strategy=strategy)):
            u = tf.Variable(0)
        assert u.device == u.initializer.device == "/job:ps/task:0"


def test_random_strategy_is_deterministic_by_name():
    def place():
        with tf.Graph().as_default():
            with tf.device(replica_device_setter(ps_tasks=3, ps_strategy=RandomStrategy(3))):
                return [tf.Variable(1.0, name="v%d" % i).device for i in range(12)]
    first = place()
    assert first == place()
    assert set(first) == {"/job:ps/task:%d" % t for t in range(3)}
    assert contrib_training.RandomStrategy is RandomStrategy


def test_byte_size_load_fn_values():
    with tf.Graph().as_default():
        assert byte_size_load_fn(tf.Variable(tf.zeros([3, 4])).op) == 48
        assert byte_size_load_fn(tf.Variable(np.zeros(5, np.float64)).op) == 40
        assert byte_size_load_fn(tf.train.get_or_create_global_step().op) == 8
        assert byte_size_load_fn(tf.constant(np.zeros((2, 3), np.int32)).op) == 24


def test_byte_size_load_fn_errors():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3], name="p")
        with pytest.raises(ValueError, match=r"shape \(\?, 3\) of op p \(Placeholder\) is not "
                                             r"fully defined"):
            byte_size_load_fn(p.op)
        unknown = tf.Variable(p, validate_shape=False, name="unknown")
        with pytest.raises(ValueError, match="op unknown .VariableV2. is not fully defined"):
            byte_size_load_fn(unknown.op)
        with pytest.raises(ValueError, match="must have a single output, it has 0"):
            byte_size_load_fn(tf.no_op(name="noop"))
        parts = tf.split(tf.zeros([4]), 2, name="parts")
        with pytest.raises(ValueError, match="op parts .Split. must have a single output, it has 2"):
            byte_size_load_fn(parts[0].op)


def test_greedy_with_unknown_shape_variable_raises_at_build_time():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, None)
        with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
            with pytest.raises(ValueError, match="not fully defined"):
                tf.Variable(p, validate_shape=False)


# -- end to end on an in-process cluster ----------------------------------------------------------
@pytest.fixture
def cluster():
    with InProcessCluster({"ps": 2, "worker": 1}) as c:
        yield c


def test_adagrad_trains_with_variables_on_the_ps_servers(cluster):
    spec, servers = cluster.spec, cluster.servers
    rng = np.random.default_rng(3)
    x_val = rng.standard_normal((32, 4)).astype(np.float32)
    y_val = (x_val @ rng.standard_normal((4, 1)) + 0.5).astype(np.float32)
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(cluster=tf.train.ClusterSpec(spec),
                                             worker_device="/job:worker/task:0")):
            step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, [None, 4])
            y = tf.placeholder(tf.float32, [None, 1])
            w = tf.Variable(tf.zeros([4, 1]), name="w")
            b = tf.Variable(tf.zeros([1]), name="b")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            train_op = tf.train.AdagradOptimizer(0.5).minimize(loss, global_step=step)
        assert (step.device, w.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1",
                                                     "/job:ps/task:0")
        feed = {x: x_val, y: y_val}
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train_op], feed)[0] for _ in range(20)]
            final_step = sess.run(step)
    assert final_step == 20
    assert losses[-1] < 0.5 * losses[0], losses
    ps0 = servers[("ps", 0)].resources.variables()
    ps1 = servers[("ps", 1)].resources.variables()
    worker = servers[("worker", 0)].resources.variables()
    assert {"global_step", "b", "b/Adagrad"} <= set(ps0)
    assert {"w", "w/Adagrad"} <= set(ps1)
    assert not {"global_step", "w", "b", "w/Adagrad", "b/Adagrad"} & set(worker)
    assert "w" not in ps0 and "b" not in ps1
