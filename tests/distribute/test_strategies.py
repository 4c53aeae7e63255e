"""OneDevice, CentralStorage and ParameterServer strategies, contexts and errors, against TF's
numbers and messages (TF 2.21's tf.compat.v1 classes ran the same programs; TF 1.15 is followed
where they differ)."""

import numpy as np
import pytest

import zps as tf
from zps.framework.device import visible_gpu_count

CONFIG = tf.ConfigProto(device_count={"CPU": 2})
PS = tf.distribute.experimental.ParameterServerStrategy


def _train(strategy_fn):
    """Two steps of GD over batches of 4 rows split among the replicas: TF gives losses 76.0
    and 1015.52 and w [10.92, -37.84] for every strategy."""
    with tf.Graph().as_default():
        s = strategy_fn()
        with s.scope():
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, -2.0]))
            opt = tf.train.GradientDescentOptimizer(0.1)
            ds = tf.data.Dataset.from_tensor_slices(
                np.arange(16, dtype=np.float32).reshape(8, 2)).batch(4)
            it = s.make_dataset_iterator(ds)

            def step(x):
                loss = tf.reduce_sum(w * w * x)
                with tf.control_dependencies([opt.minimize(loss)]):
                    return tf.identity(loss)
            pr = s.experimental_run(step, it)
            with tf.device("/cpu:0"):
                m = s.reduce("SUM", pr)
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            losses = [sess.run(m), sess.run(m)]
            return s, w, losses, sess.run(w)


@pytest.mark.parametrize("make, replicas, kind, device", [
    (lambda: tf.distribute.OneDeviceStrategy("/cpu:1"), 1, "ResourceVariable", "/device:CPU:1"),
    (lambda: tf.distribute.experimental.CentralStorageStrategy(["/cpu:0", "/cpu:1"]), 2,
     "AggregatingVariable", "/device:CPU:0"),
    pytest.param(lambda: PS(), 1, "ResourceVariable", "/device:CPU:0",
                 marks=pytest.mark.skipif(visible_gpu_count() > 0,
                                          reason="a local PS strategy computes on the GPUs")),
])
def test_each_strategy_trains_as_tf(make, replicas, kind, device):
    s, w, losses, value = _train(make)
    assert s.num_replicas_in_sync == replicas
    assert type(w).__name__ == kind and w.device == device
    assert losses[0] == 76.0 and losses[1] == pytest.approx(1015.52, rel=1e-6)
    np.testing.assert_allclose(value, [10.92, -37.84], rtol=1e-6)


def test_central_storage_devices_as_tf():
    s = tf.distribute.experimental.CentralStorageStrategy(["/cpu:0", "/cpu:1"])
    assert s.extended.worker_devices == ("/device:CPU:0", "/device:CPU:1")
    assert s.extended.parameter_devices == ("/device:CPU:0",)


def test_parameter_server_strategy_configured_for_a_cluster_as_tf():
    with tf.Graph().as_default():
        s = PS()
        config = tf.ConfigProto()
        s.configure(session_config=config, cluster_spec={"ps": ["h:1", "h:2"],
                                                         "worker": ["h:3", "h:4"]},
                    task_type="worker", task_id=1)
        with s.scope():
            a, b, c = (tf.get_variable(n, [1]) for n in "abc")
            y = a + 1
            opt = tf.train.AdamOptimizer(0.1)
            s.experimental_run_v2(lambda: opt.minimize(tf.reduce_sum(a + b + c)))
        # slots (and Adam's powers) next to their variables, as TF's colocate_vars_with
        assert [opt.get_slot(v, "m").device for v in (a, b, c)] == [
            "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
        assert opt._get_non_slot_variable("beta1_power").device == "/job:ps/task:0"
        assert list(config.device_filters) == ["/job:worker/task:1", "/job:ps"]
        assert s.num_replicas_in_sync == 1 and type(a).__name__ == "ResourceVariable"
        assert [a.device, b.device, c.device, y.device] == [
            "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0", "/job:worker/task:1"]
        ext = s.extended
        assert (ext.experimental_between_graph, ext.experimental_should_init,
                ext.should_checkpoint, ext.should_save_summary) == (True, False, False, False)
        assert ext.worker_devices == ("/job:worker/task:1",)
        assert ext.parameter_devices == ("/job:ps/task:0", "/job:ps/task:1")
    chief = PS()
    chief.configure(cluster_spec={"ps": ["h:1"], "worker": ["h:3", "h:4"]}, task_type="worker",
                    task_id=0)
    assert chief.extended.should_checkpoint
    assert list(chief.update_config_proto(tf.ConfigProto()).device_filters) == [
        "/job:worker/task:0", "/job:ps"]


def test_parameter_server_strategy_from_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"ps": ["h:1"], "chief": ["h:0"], '
                                    '"worker": ["h:2"]}, "task": {"type": "worker", "index": 0}}')
    s = PS()
    assert s.extended.parameter_devices == ("/job:ps/task:0",)
    assert not s.extended.should_checkpoint   # the chief task checkpoints
    with tf.Graph().as_default():
        contexts = []
        s.make_input_fn_iterator(lambda ctx: contexts.append(
            (ctx.num_input_pipelines, ctx.input_pipeline_id)) or tf.data.Dataset.range(3))
    assert contexts == [(2, 1)]
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["h:2"]}, '
                                    '"task": {"type": "worker", "index": 0}}')
    with pytest.raises(ValueError, match="The cluster spec needs to have `ps` jobs."):
        PS()


def test_contexts_outside_inside_and_in_replicas():
    with tf.Graph().as_default():
        s = tf.distribute.OneDeviceStrategy("/cpu:0")
        default = tf.distribute.get_strategy()
        assert not tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context().replica_id_in_sync_group == 0
        assert default.num_replicas_in_sync == 1
        with s.scope():
            assert tf.distribute.get_strategy() is s and tf.distribute.has_strategy()
            assert tf.distribute.in_cross_replica_context()
            assert tf.distribute.get_replica_context() is None
            with s.scope():   # re-entering the same scope is fine
                pass
            ctx = s.experimental_run_v2(tf.distribute.get_replica_context)
            assert ctx.strategy is s and ctx.num_replicas_in_sync == 1
            assert ctx.devices == ("/device:CPU:0",)
        assert tf.distribute.get_strategy() is default
    with tf.Graph().as_default():   # the scope belongs to the graph it was entered in
        with s.scope(), tf.Graph().as_default():
            assert not tf.distribute.has_strategy()


def test_local_results_unwrap_group_and_all_reduce():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with s.scope():
            def f():
                ctx = tf.distribute.get_replica_context()
                x = tf.constant([1.0, 2.0]) * (ctx.replica_id_in_sync_group + 1)
                return ctx.all_reduce("sum", {"x": x, "y": [x * 10]})
            out = s.experimental_run_v2(f)
            plain = tf.constant(3.0)
            assert s.experimental_local_results(plain) == (plain,)
            assert s.unwrap(out["x"]) == out["x"].values and len(out["x"].values) == 2
            grouped = s.group(out)
        with tf.Session(config=CONFIG) as sess:
            xs = sess.run(list(out["x"].values) + list(out["y"][0].values))
            assert [v.tolist() for v in xs] == [[3.0, 6.0]] * 2 + [[30.0, 60.0]] * 2
            assert sess.run(grouped) is None


def test_apply_gradients_in_cross_replica_context_is_tfs_error():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with s.scope():
            w = tf.Variable([1.0, 2.0])
            with pytest.raises(RuntimeError, match=r"Use `_distributed_apply\(\)` instead of "
                                                   r"`apply_gradients\(\)` in a cross-replica"):
                tf.train.GradientDescentOptimizer(0.1).apply_gradients(
                    [(tf.constant([1.0, 1.0]), w)])


def test_another_strategys_scope_is_tfs_error():
    with tf.Graph().as_default():
        s, s2 = (tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]) for _ in range(2))
        with s.scope():
            with pytest.raises(RuntimeError, match="Mixing different tf.distribute.Strategy "
                                                   "objects"):
                with s2.scope():
                    pass
            with pytest.raises(RuntimeError, match="Method requires being in cross-replica "
                                                   "context"):
                s.experimental_run_v2(lambda: s.scope().__enter__())


def test_a_batch_that_does_not_split_evenly_is_rounded_up_as_tf_115s_rebatching():
    # TF 1.15's rebatch rewrite (grappler rebatch.cc MutateBatchSize) makes batch(3) over 2
    # replicas batch(2), rounding up: the replicas read [0, 1] [2, 3] | [4, 5] [6, 7] | [8, 9]
    # and nothing: the end. (TF 2.21 splits each batch of 3 into 2 + 1 instead.)
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        it = s.make_dataset_iterator(tf.data.Dataset.range(10).batch(3).prefetch(1))
        x = it.get_next()
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            assert [[c.tolist() for c in sess.run(list(x.values))] for _ in range(2)] == [
                [[0, 1], [2, 3]], [[4, 5], [6, 7]]]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(list(x.values))
        # where zps can't keep the rewrite's result: a clear error
        for dataset in (tf.data.Dataset.range(10).batch(3, drop_remainder=True),
                        tf.data.Dataset.range(10).batch(3).repeat()):
            with pytest.raises(ValueError, match="Batch size 3 cannot be sharded evenly "
                                                 "across replicas 2"):
                s.make_dataset_iterator(dataset)
        with pytest.raises(ValueError, match="Unable to get batched dataset"):
            s.make_dataset_iterator(tf.data.Dataset.range(10).repeat())


def test_updating_a_mirrored_variable_in_a_replica_needs_an_aggregation():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with s.scope():
            w = tf.Variable([1.0, 2.0])
            v = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
            with pytest.raises(ValueError, match="You must specify an aggregation method to "
                                                 "update a MirroredVariable in Replica Context"):
                s.experimental_run_v2(lambda: w.assign_add([1.0, 1.0]))
            upd = s.experimental_run_v2(lambda: v.assign_add(tf.cast(
                tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32) + 1.0))
            grouped = s.group(upd)
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(grouped)
            assert [sess.run(c) for c in v.values] == [1.5, 1.5]   # the mean of 1 and 2


def test_an_optimizer_with_its_own_apply_gradients_is_refused_under_replicas():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with s.scope():
            w = tf.Variable([1.0, 2.0])
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 1)
            with pytest.raises(NotImplementedError, match="SyncReplicasOptimizer overrides "
                                                          "apply_gradients"):
                s.experimental_run_v2(lambda: opt.minimize(tf.reduce_sum(w)))


def test_mirrored_strategy_arguments():
    n = visible_gpu_count()   # every GPU cupy sees, else the CPU
    assert tf.distribute.MirroredStrategy().extended.worker_devices == (
        tuple("/device:GPU:%d" % i for i in range(n)) or ("/device:CPU:0",))
    with pytest.raises(ValueError, match="No duplicates allowed"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/device:CPU:0"])
    for ops in (tf.distribute.ReductionToOneDevice(), tf.distribute.NcclAllReduce(),
                tf.distribute.HierarchicalCopyAllReduce()):
        with tf.Graph().as_default():
            s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"], cross_device_ops=ops)
            with s.scope():
                pr = s.experimental_run_v2(lambda: tf.constant(2.0) * (
                    tf.distribute.get_replica_context().replica_id_in_sync_group + 1))
                total = s.reduce("MEAN", pr)
            with tf.Session(config=CONFIG) as sess:
                assert sess.run(total) == 3.0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_parameter_server_strategy_trains_against_a_ps_process():
    from zps.testing.cluster import LocalCluster
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                s = PS()
                s.configure(cluster_spec=cluster.spec, task_type="worker", task_id=0)
                with s.scope():
                    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, -2.0]))
                    gs = tf.train.get_or_create_global_step()
                    it = s.make_dataset_iterator(tf.data.Dataset.from_tensor_slices(
                        np.arange(16, dtype=np.float32).reshape(8, 2)).batch(4))
                    opt = tf.train.GradientDescentOptimizer(0.1)

                    def step(x):
                        loss = tf.reduce_sum(w * w * x)
                        with tf.control_dependencies([opt.minimize(loss, global_step=gs)]):
                            return tf.identity(loss)
                    loss = s.experimental_run(step, it)
                assert w.device == "/job:ps/task:0" and gs.device == "/job:ps/task:0"
                scaffold = tf.train.Scaffold(local_init_op=tf.group(
                    tf.local_variables_initializer(), *it.initialize()))
                with tf.train.MonitoredTrainingSession(
                        master=server.target, is_chief=s.extended.experimental_should_init,
                        scaffold=scaffold, config=s.update_config_proto(tf.ConfigProto())) as sess:
                    losses = [sess.run(loss), sess.run(loss)]
                    final = sess.run([w, gs])
        finally:
            server.stop()
    assert losses[0] == 76.0 and losses[1] == pytest.approx(1015.52, rel=1e-6)
    np.testing.assert_allclose(final[0], [10.92, -37.84], rtol=1e-6)
    assert final[1] == 2


@pytest.mark.parametrize("last_reduction, expected", [(None, [-2.0, -3.0]),
                                                      ("weighted_sum", [-5.0, -7.0])])
def test_the_estimators_loss_scaling_as_tf(last_reduction, expected):
    # TF: with _scale_loss_for_estimator (what the Estimator sets) a MEAN loss is divided among
    # the 2 replicas before their gradients are summed; a tf.losses SUM reduction is not.
    with tf.Graph().as_default() as g:
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        s._scale_loss_for_estimator = True
        if last_reduction:
            g._last_loss_reduction = last_reduction
        with s.scope():
            assert tf.distribute.get_loss_reduction() == (
                tf.distribute.ReduceOp.SUM if last_reduction else tf.distribute.ReduceOp.MEAN)
            w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
            opt = tf.train.GradientDescentOptimizer(0.5)
            it = s.make_dataset_iterator(tf.data.Dataset.from_tensor_slices(
                np.arange(8, dtype=np.float32).reshape(4, 2)).batch(4))
            train = s.group(s.experimental_run(
                lambda x: opt.minimize(tf.reduce_sum(w * x)), it))
        assert tf.distribute.get_loss_reduction() == tf.distribute.ReduceOp.SUM
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert sess.run(w).tolist() == expected


def test_cross_device_ops_batch_reduce_as_tf():
    """TF 2.21's ReductionToOneDevice.batch_reduce over per-replica [1, 2] and [3, 5] on two CPUs:
    SUM [4, 7] at each destination, MEAN [2, 3.5], a plain tensor's MEAN itself; an empty or
    wrongly typed destination is refused (TF's messages) before any op is added."""
    from zps.distribute import cross_device_ops, values
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0])
        with tf.device("/cpu:1"):
            b = tf.constant([3.0, 5.0])
        pr = values.PerReplica((a, b))
        ops = cross_device_ops.ReductionToOneDevice()
        sums = ops.batch_reduce(tf.distribute.ReduceOp.SUM,
                                [(pr, "/cpu:0"), (pr, ["/cpu:0", "/cpu:1"])])
        means = ops.batch_reduce("MEAN", [(pr, "/cpu:1")])
        plain = ops.batch_reduce("MEAN", [(a, "/cpu:0")])
        assert [len(m.values) for m in sums] == [1, 2]
        assert "CPU:1" in means[0].values[0].device.upper()
        n = len(g.get_operations())
        with pytest.raises(ValueError, match="destinations can not be empty"):
            ops.batch_reduce("SUM", [(pr, "/cpu:0"), (pr, "")])
        with pytest.raises(ValueError, match="must be one of a `DistributedValues` object"):
            ops.batch_reduce("SUM", [(pr, "/cpu:0"), (pr, 3)])
        assert len(g.get_operations()) == n
        with tf.Session(config=CONFIG) as sess:
            got = sess.run([list(m.values) for m in sums + means + plain])
    np.testing.assert_allclose(got[0], [[4.0, 7.0]])
    np.testing.assert_allclose(got[1], [[4.0, 7.0], [4.0, 7.0]])
    np.testing.assert_allclose(got[2], [[2.0, 3.5]])
    np.testing.assert_allclose(got[3], [[1.0, 2.0]])
