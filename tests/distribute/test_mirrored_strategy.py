"""MirroredStrategy on two CPU devices against TF's numbers (TF 2.21's tf.compat.v1
MirroredStrategyV1 ran the same programs; where TF 1.15 and 2.21 differ, 1.15 is followed)."""

import numpy as np
import pytest

import zps as tf

CONFIG = tf.ConfigProto(device_count={"CPU": 2})
DEVICES = ["/cpu:0", "/cpu:1"]


def _session():
    return tf.Session(config=CONFIG)


def test_the_briefs_example_trains_as_tf():
    # TF prints 28.0 [-5. -7.]: each replica gets 2 of the 4 rows, the gradients are summed.
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
            opt = tf.train.GradientDescentOptimizer(0.5)
            ds = tf.data.Dataset.from_tensor_slices(
                np.arange(8, dtype=np.float32).reshape(4, 2)).batch(4)
            it = s.make_dataset_iterator(ds)

            def step(x):
                loss = tf.reduce_sum(w * x)
                tr = opt.minimize(loss)
                with tf.control_dependencies([tr]):
                    return tf.identity(loss)
            pr = s.experimental_run(step, it)
            m = s.reduce(tf.distribute.ReduceOp.SUM, pr)
        assert type(w).__name__ == "MirroredVariable" and type(pr).__name__ == "PerReplica"
        assert [c.name for c in w.values] == ["w:0", "w/replica_1:0"]
        assert [c.device for c in w.values] == ["/device:CPU:0", "/device:CPU:1"]
        assert tf.trainable_variables() == [w] and tf.global_variables() == [w]
        with _session() as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            assert sess.run(m) == 28.0
            np.testing.assert_array_equal(sess.run(w), [-5.0, -7.0])
            # every copy was updated with the summed gradient
            np.testing.assert_array_equal(sess.run(w.values[1]), [-5.0, -7.0])


def test_two_epochs_of_split_batches_as_tf():
    # TF: losses 76.0 then 1015.52, w [10.92, -37.84] (OneDevice, CentralStorage: the same).
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
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
            m = s.reduce("SUM", s.experimental_run(step, it))
        with _session() as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            assert sess.run(m) == 76.0
            assert sess.run(m) == pytest.approx(1015.52008, rel=1e-6)
            np.testing.assert_allclose(sess.run(w), [10.92, -37.84], rtol=1e-6)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(m)


def _train_two_steps(make_optimizer):
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, -2.0]))
            gs = tf.train.get_or_create_global_step()
            opt = make_optimizer()

            def step():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                x = tf.constant([1.0, 2.0]) * tf.cast(rid + 1, tf.float32)
                return opt.minimize(tf.reduce_sum(w * w * x), global_step=gs)
            train_op = s.group(s.experimental_run_v2(step))
        names = sorted(v.name for v in tf.global_variables())
        slot = opt.get_slot(w, opt.get_slot_names()[0])
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            sess.run(train_op)
            copies = [sess.run(c).tolist() for c in s.experimental_local_results(slot)]
            return sess.run(w).tolist(), int(sess.run(gs)), names, copies, type(slot).__name__


def test_momentum_slots_are_mirrored_as_tf():
    w, step, names, copies, kind = _train_two_steps(lambda: tf.train.MomentumOptimizer(0.1, 0.9))
    np.testing.assert_allclose(w, [-0.37999994, 2.08], rtol=1e-6)
    assert step == 2 and kind == "MirroredVariable"
    assert names == ["global_step:0", "w/Momentum:0", "w:0"]
    np.testing.assert_allclose(copies, [[7.8, -16.8]] * 2, rtol=1e-6)


def test_adam_slots_and_powers_are_mirrored_as_tf():
    w, step, names, copies, kind = _train_two_steps(lambda: tf.train.AdamOptimizer(0.1))
    np.testing.assert_allclose(w, [0.80041254, -1.80016685], rtol=1e-6)
    assert step == 2 and kind == "MirroredVariable"
    assert names == ["beta1_power:0", "beta2_power:0", "global_step:0", "w/Adam:0",
                     "w/Adam_1:0", "w:0"]
    np.testing.assert_allclose(copies, [[1.08, -4.44]] * 2, rtol=1e-6)


def test_a_metric_counts_per_replica_and_sums_across_as_tf():
    # TF: update ops 2.0 and 12.0 (each replica's mean), totals [6, 36], read 42 and count 6.
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def step():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                _, update = tf.metrics.mean(tf.constant([1.0, 2.0, 3.0]) + 10.0 * rid)
                return update
            ups = s.experimental_run_v2(step)
            total, count = sorted(tf.local_variables(), key=lambda v: v.name)[::-1]
            read_total, read_count = s.extended.read_var(total), s.extended.read_var(count)
        assert type(total).__name__ == "SyncOnReadVariable"
        assert sorted(v.name for v in tf.local_variables()) == ["mean/count:0", "mean/total:0"]
        with _session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(list(s.experimental_local_results(ups))) == [2.0, 12.0]
            assert sess.run([read_total, read_count]) == [42.0, 6.0]
            assert [sess.run(c) for c in total.values] == [6.0, 36.0]
            with s.scope():   # fetched in cross-replica context: the aggregate
                assert sess.run(total) == 42.0


def test_reduce_sum_and_mean_with_an_axis_as_tf():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def f():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                return tf.reshape(tf.range(6, dtype=tf.float32), [2, 3]) + 10.0 * rid
            pr = s.experimental_run_v2(f)
            outs = [s.reduce("SUM", pr), s.reduce("MEAN", pr), s.reduce("SUM", pr, axis=0),
                    s.reduce("MEAN", pr, axis=0), s.reduce("MEAN", pr, axis=1),
                    s.reduce("SUM", pr, axis=-1)]
        with _session() as sess:
            got = [sess.run(x).tolist() for x in outs]
    assert got == [[[10.0, 12.0, 14.0], [16.0, 18.0, 20.0]], [[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]],
                   [26.0, 30.0, 34.0], [6.5, 7.5, 8.5], [6.0, 9.0], [36.0, 54.0]]


def test_merge_call_order_replica_ids_and_name_scopes_as_tf():
    log = []
    with tf.Graph().as_default() as g:
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def f():
                ctx = tf.distribute.get_replica_context()
                rid = ctx.replica_id_in_sync_group
                log.append(("before", rid))
                a = tf.constant(1.0, name="a")
                with tf.name_scope("inner"):
                    b = tf.identity(a, name="b")

                def merge_fn(strategy, v):
                    log.append(("merge", type(v).__name__, g.get_name_scope(),
                                tf.distribute.in_cross_replica_context()))
                    tf.constant(2.0, name="c")
                    return strategy.reduce("SUM", v)
                m = ctx.merge_call(merge_fn, args=(b,))
                log.append(("after", rid, m.name))
                v = tf.get_variable("v", [], initializer=tf.zeros_initializer())
                return a, b, v
            a, b, v = s.experimental_run_v2(f)
        assert [t.name for t in a.values] == ["a:0", "replica_1/a:0"]
        assert [t.name for t in b.values] == ["inner/b:0", "replica_1/inner/b:0"]
        assert type(v).__name__ == "MirroredVariable" and tf.global_variables() == [v]
        assert log == [("before", 0), ("before", 1), ("merge", "PerReplica", "", True),
                       ("after", 0, "Identity:0"), ("after", 1, "Identity:0")]
        assert [op.name for op in g.get_operations() if op.name.startswith("c")] == ["c"]
        assert [t.device for t in a.values] == ["/device:CPU:0", "/device:CPU:1"]


def test_assign_in_cross_replica_context_updates_every_copy_as_tf():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(1.0, name="b", synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.MEAN)
            assign = [b.assign(5.0), a.assign(3.0)]
        assert type(b).__name__ == "SyncOnReadVariable"
        assert [v.name for v in tf.global_variables()] == ["a:0", "b:0"]
        # TF 1.15 (and zps) list the container; TF 2.21 lists a's components instead.
        assert tf.trainable_variables() == [a]
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(assign)
            assert [sess.run(c) for c in a.values + b.values] == [3.0, 3.0, 5.0, 5.0]


def test_a_mirrored_variable_is_saved_once_and_restored_into_every_copy(tmp_path):
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, 2.0]))
            m = tf.Variable(0.0, name="m", synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.SUM)
            change = [w.assign([7.0, 8.0]), m.assign(10.0)]
        saver = tf.train.Saver()
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(m.values[1].assign(4.0))   # copies 0 and 4: saved as their sum, 4
            path = saver.save(sess, str(tmp_path / "model"))
            sess.run(change)
            assert [sess.run(c).tolist() for c in w.values] == [[7.0, 8.0]] * 2
            saver.restore(sess, path)
            assert [sess.run(c).tolist() for c in w.values] == [[1.0, 2.0]] * 2
            assert [sess.run(c) for c in m.values] == [2.0, 2.0]   # the SUM divided
        reader = tf.train.NewCheckpointReader(path)
        assert sorted(reader.get_variable_to_shape_map()) == ["m", "w"]
        assert reader.get_tensor("m") == 4.0


def test_input_fn_iterator_gives_each_replica_its_element():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        contexts = []

        def input_fn(ctx):
            contexts.append((ctx.num_input_pipelines, ctx.input_pipeline_id,
                             ctx.num_replicas_in_sync, ctx.get_per_replica_batch_size(4)))
            return tf.data.Dataset.range(6).batch(2)
        it = s.make_input_fn_iterator(input_fn)
        x = it.get_next()
        with _session() as sess:
            sess.run(it.initialize())
            first = [v.tolist() for v in sess.run(list(x.values))]
            # 3 per-replica batches: the second step would leave replica 1 without one
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(list(x.values))
        assert contexts == [(1, 0, 2, 2)]
        assert first == [[0, 1], [2, 3]]


def test_experimental_distribute_dataset_splits_batches():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        dds = s.experimental_distribute_dataset(tf.data.Dataset.range(8).batch(4))
        it = dds.make_initializable_iterator()
        x = it.get_next()
        with _session() as sess:
            sess.run(it.initializer)
            assert [v.tolist() for v in sess.run(list(x.values))] == [[0, 1], [2, 3]]
            assert [v.tolist() for v in sess.run(list(x.values))] == [[4, 5], [6, 7]]


def _model():
    s = tf.distribute.MirroredStrategy(DEVICES)
    with s.scope():
        w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, -2.0]))
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.MomentumOptimizer(0.1, 0.9)

        def step():
            rid = tf.distribute.get_replica_context().replica_id_in_sync_group
            x = tf.constant([1.0, 2.0]) * tf.cast(rid + 1, tf.float32)
            return opt.minimize(tf.reduce_sum(w * w * x), global_step=gs)
        return w, gs, opt, s.group(s.experimental_run_v2(step))


def test_monitored_training_session_checkpoints_and_restores_every_copy(tmp_path):
    with tf.Graph().as_default():
        w, gs, _, train_op = _model()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), config=CONFIG,
                                               save_checkpoint_secs=None,
                                               save_checkpoint_steps=2) as sess:
            sess.run(train_op)
            sess.run(train_op)
            trained = sess.run(w).tolist()
    np.testing.assert_allclose(trained, [-0.37999994, 2.08], rtol=1e-6)   # as TF
    with tf.Graph().as_default():
        w, gs, opt, _ = _model()
        slot = opt.get_slot(w, "momentum")
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               config=CONFIG) as sess:
            assert sess.run(gs) == 2
            assert [sess.run(c).tolist() for c in w.values] == [trained] * 2
            np.testing.assert_allclose([sess.run(c) for c in slot.values], [[7.8, -16.8]] * 2,
                                       rtol=1e-6)


def test_extended_reduce_to_update_and_colocation():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        ext = s.extended
        with s.scope():
            w = tf.Variable([1.0, 2.0], name="w")
            with ext.colocate_vars_with(w):
                slot_like = tf.Variable([0.0, 0.0], name="w_slot")
            pr = s.experimental_run_v2(lambda: tf.constant([1.0, 1.0]) * (
                tf.distribute.get_replica_context().replica_id_in_sync_group + 1))
            summed = ext.reduce_to("SUM", pr, w)
            means = ext.batch_reduce_to("MEAN", [(pr, w), (pr, "/cpu:1")])
            upd = ext.update(w, lambda v, g: v.assign_add(g), args=(summed,))
            seen = []
            ext.update_non_slot(ext.non_slot_devices([w]),
                                lambda: seen.append(tf.distribute.get_replica_context()))
        assert ext.value_container(w.values[1]) is w and ext.value_container(pr) is pr
        assert slot_like.devices == w.devices and type(summed).__name__ == "Mirrored"
        assert summed.devices == ("/device:CPU:0", "/device:CPU:1")
        assert means[1].devices == ("/device:CPU:1",) and seen == [None, None]
        it = s.experimental_make_numpy_iterator(np.arange(8.0).reshape(4, 2), 4, shuffle=None)
        x = it.get_next()
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(it.initializer)
            assert [v.tolist() for v in sess.run(list(summed.values))] == [[3.0, 3.0]] * 2
            assert sess.run(means[0].values[0]).tolist() == [1.5, 1.5]
            sess.run(upd)
            assert [sess.run(c).tolist() for c in w.values] == [[4.0, 5.0]] * 2
            assert [v.tolist() for v in sess.run(list(x.values))] == [[[0.0, 1.0], [2.0, 3.0]],
                                                                     [[4.0, 5.0], [6.0, 7.0]]]


def test_replica_errors_reach_the_caller_and_leave_no_thread():
    import threading
    before = threading.active_count()
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def uneven():
                ctx = tf.distribute.get_replica_context()
                if ctx.replica_id_in_sync_group == 0:
                    ctx.merge_call(lambda strategy: None)
            with pytest.raises(RuntimeError, match="Some replicas made a different number of "
                                                   r"replica_context\(\).merge_call\(\) calls."):
                s.experimental_run_v2(uneven)

            def fails():
                if tf.distribute.get_replica_context().replica_id_in_sync_group == 1:
                    raise KeyError("replica 1 failed")
            with pytest.raises(KeyError, match="replica 1 failed"):
                s.experimental_run_v2(fails)

            def merge_fails():
                tf.distribute.get_replica_context().merge_call(lambda strategy: 1 / 0)
            with pytest.raises(ZeroDivisionError):
                s.experimental_run_v2(merge_fails)
    assert threading.active_count() == before


def test_aggregate_across_replicas_computes_a_metric_value_once():
    # What TF 1.15's metrics do with their value (metrics_impl._aggregate_across_replicas).
    from zps.distribute.distribute_lib import aggregate_across_replicas
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def step():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                _, update = tf.metrics.mean(tf.constant([1.0, 2.0, 3.0]) + 10.0 * rid)
                total, count = sorted(tf.local_variables(), key=lambda v: v.name)[::-1]
                value = aggregate_across_replicas(
                    ["my_metrics"], lambda _, t, c: tf.math.divide_no_nan(t, c), total, count)
                return value, update
            value, update = s.experimental_run_v2(step)
        assert isinstance(value, tf.Tensor) and tf.get_collection("my_metrics") == [value]
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.local_variables_initializer())
            sess.run(s.group(update))
            assert sess.run(value) == 7.0    # (6 + 36) / 6


def test_a_partitioner_is_dropped_and_a_partitioned_checkpoint_restores_every_copy(tmp_path):
    # TF 1.15: "Partitioned variables are disabled when using current tf.distribute.Strategy"
    # (all but ParameterServerStrategy): one mirrored variable, saved whole as a partitioned
    # one is, so checkpoints go both ways.
    with tf.Graph().as_default():
        v = tf.get_variable("v", [4, 2], initializer=tf.ones_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "partitioned"))
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            v = tf.get_variable("v", [4, 2], initializer=tf.zeros_initializer(),
                                partitioner=tf.fixed_size_partitioner(2))
        assert type(v).__name__ == "MirroredVariable" and tf.global_variables() == [v]
        saver = tf.train.Saver()
        with _session() as sess:
            saver.restore(sess, path)
            assert [sess.run(c).tolist() for c in v.values] == [[[1.0, 1.0]] * 4] * 2
            path = saver.save(sess, str(tmp_path / "mirrored"))
        assert tf.train.NewCheckpointReader(path).get_variable_to_shape_map() == {"v": [4, 2]}
