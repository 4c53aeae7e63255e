"""tf.distribute used as TF 1.15 programs used it: custom training loops with
``strategy.scope()``, dataset iterators, ``experimental_run_v2`` and ``strategy.reduce``;
tf.layers models, sparse embedding gradients through the all-reduce with every optimizer,
clipping, learning-rate decay, ExponentialMovingAverage, summaries and MonitoredTrainingSession,
Saver round trips with and without a strategy, the other strategies, and the default GPUs.
Expected numbers are what TF 2.21's tf.compat.v1 gave for the same programs (TF 1.15's rules
where the two differ, as noted)."""

import os

import numpy as np
import pytest

import zps as tf
from zps.distribute import values
from zps.testing import fake_cupy
from zps.train.moving_averages import assign_moving_average

CONFIG = tf.ConfigProto(device_count={"CPU": 2})
DEVICES = ["/cpu:0", "/cpu:1"]
IDS = np.array([0, 2, 2, 4, 1, 2, 3, 3], np.int64)
TARGETS = np.linspace(-1, 1, 8).astype(np.float32)


def _locals(sess, s, v):
    return sess.run(list(s.experimental_local_results(v)))


def test_custom_loop_with_layers_embedding_clipping_decay_and_adam_matches_tf():
    x = np.arange(32, dtype=np.float32).reshape(8, 4) / 10.0
    y = TARGETS.reshape(8, 1)
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            gs = tf.train.get_or_create_global_step()
            ds = tf.data.Dataset.from_tensor_slices((x, np.arange(8) % 5, y)).repeat().batch(4)
            it = s.make_dataset_iterator(ds)
            emb = tf.get_variable("emb", [5, 3], initializer=tf.constant_initializer(
                np.arange(15).reshape(5, 3) / 20.0))
            opt = tf.train.AdamOptimizer(tf.train.exponential_decay(0.1, gs, 2, 0.5,
                                                                    staircase=True))

            def step(inputs):
                xb, ids, yb = inputs
                h = tf.concat([xb, tf.nn.embedding_lookup(emb, ids)], 1)
                h = tf.layers.dense(h, 5, activation=tf.nn.relu, name="d1",
                                    kernel_initializer=tf.constant_initializer(0.1))
                h = tf.layers.dropout(h, 0.5, training=False)
                out = tf.layers.dense(h, 1, name="d2",
                                      kernel_initializer=tf.constant_initializer(-0.2))
                loss = tf.losses.mean_squared_error(yb, out)
                grads, variables = zip(*opt.compute_gradients(loss))
                grads, norm = tf.clip_by_global_norm(grads, 1.0)
                train = opt.apply_gradients(zip(grads, variables), global_step=gs)
                with tf.control_dependencies([train]):
                    return tf.identity(loss), norm

            loss, norm = s.experimental_run_v2(step, args=(it.get_next(),))
            fetches = [s.reduce("MEAN", loss), s.reduce("SUM", norm)]
        assert [v.name for v in tf.trainable_variables()] == [
            "emb:0", "d1/kernel:0", "d1/bias:0", "d2/kernel:0", "d2/bias:0"]
        assert len(tf.global_variables()) == 18
        kernel = tf.trainable_variables()[1]
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            steps = [sess.run(fetches) for _ in range(4)]
            np.testing.assert_allclose(steps, [[0.33669, 2.9554], [0.6225, 4.49455],
                                               [0.37605, 2.09384], [0.49748, 2.51537]],
                                       atol=2e-5)
            assert sess.run(gs) == 4
            e0, e1 = _locals(sess, s, emb)
            np.testing.assert_array_equal(e0, e1)
            np.testing.assert_allclose(e0[4], [0.56424, 0.61049, 0.65611], atol=2e-5)
            np.testing.assert_allclose(sess.run(kernel)[:, 0], [
                -0.15269, -0.1499, -0.14712, -0.14439, -0.1705, -0.16895, -0.16418], atol=2e-5)


# optimizer -> (losses of 3 steps, emb row 4, w, the moving average of w) from TF
OPTIMIZERS = {
    "sgd_decay": (lambda gs: tf.train.GradientDescentOptimizer(
        tf.train.exponential_decay(0.5, gs, 1, 0.5)),
        [0.91426, 2.2753, 0.79401], [0.69992, 0.94815], [[0.54365, -0.2802], [0.4823, -0.32182]]),
    "nesterov": (lambda gs: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                 [0.91426, 1.17892, 0.87439], [0.72208, 0.93828],
                 [[0.5268, -0.36853], [0.4979, -0.31484]]),
    "adagrad": (lambda gs: tf.train.AdagradOptimizer(0.2), [0.91426, 1.29585, 0.68845],
                [0.66587, 0.98776], [[0.45455, -0.39473], [0.47991, -0.32605]]),
    "rmsprop": (lambda gs: tf.train.RMSPropOptimizer(0.05, momentum=0.5, centered=True),
                [0.91426, 0.80657, 0.86412], [0.78176, 0.91099],
                [[0.49244, -0.32947], [0.49663, -0.30731]]),
    "ftrl": (lambda gs: tf.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01,
                                               l2_regularization_strength=0.01),
             [0.91426, 1.65905, 0.67456], [-0.07045, 0.1147],
             [[0.32911, -0.27781], [0.42443, -0.30555]]),
    "adam": (lambda gs: tf.train.AdamOptimizer(0.1), [0.91426, 0.99246, 0.57158],
             [0.5769, 1.12484], [[0.45209, -0.37331], [0.48101, -0.32171]]),
    "adadelta": (lambda gs: tf.train.AdadeltaOptimizer(1.0), [0.91426, 0.69061, 0.91368],
                 [0.7991, 0.9009], [[0.49968, -0.30036], [0.49994, -0.30007]]),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_sparse_embedding_gradients_and_ema_in_cross_replica_context_match_tf(name):
    make_opt, losses, emb_row, w_and_avg = OPTIMIZERS[name]
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            gs = tf.train.get_or_create_global_step()
            it = s.make_dataset_iterator(
                tf.data.Dataset.from_tensor_slices((IDS, TARGETS)).repeat().batch(4))
            emb = tf.get_variable("emb", [5, 2], initializer=tf.constant_initializer(
                np.arange(10).reshape(5, 2) / 10.0))
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer([0.5, -0.3]))
            opt = make_opt(gs)
            ema = tf.train.ExponentialMovingAverage(0.9)

            def step(inputs):
                ids, y = inputs
                pred = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) * w, 1)
                loss = tf.reduce_mean(tf.square(pred - y))
                return opt.minimize(loss, global_step=gs), loss

            train, loss = s.experimental_run_v2(step, args=(it.get_next(),))
            with tf.control_dependencies(s.experimental_local_results(train)):
                ema_op = ema.apply([w])       # in cross-replica context: each copy on its own
            total = s.reduce("SUM", loss)
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            got = [sess.run([total, ema_op])[0] for _ in range(3)]
            np.testing.assert_allclose(got, losses, atol=2e-5)
            np.testing.assert_allclose(sess.run(emb)[4], emb_row, atol=2e-5)
            np.testing.assert_allclose(sess.run([w, ema.average(w)]), w_and_avg, atol=2e-5)
            a0, a1 = _locals(sess, s, ema.average(w))
            np.testing.assert_array_equal(a0, a1)


def test_assign_in_cross_replica_context_gives_a_mirrored_and_ema_applies_in_replica_fn():
    # TF 1.15's update_regroup: the copies' new values as a Mirrored that waits for every
    # copy's update; fetched, the primary's. EMA.apply in a replica function: the replicas'
    # values are averaged (merge_call) and every copy of the average moves towards the mean.
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            w = tf.Variable([1.0, 2.0], name="w")
            assign = w.assign([3.0, 4.0])
            add = w.assign_add([1.0, 1.0])
            ema = tf.train.ExponentialMovingAverage(0.5)

            def fn():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                return ema.apply([w]), w * (tf.cast(rid, tf.float32) + 1.0)

            ema_op, scaled = s.experimental_run_v2(fn)
        assert type(assign).__name__ == "Mirrored" and type(ema_op).__name__ == "PerReplica"
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(assign).tolist() == [3.0, 4.0]
            assert sess.run(add).tolist() == [4.0, 5.0]
            assert np.asarray(_locals(sess, s, w)).tolist() == [[4.0, 5.0], [4.0, 5.0]]
            sess.run(s.group(ema_op))
            assert np.asarray(_locals(sess, s, ema.average(w))).tolist() == [[2.5, 3.5]] * 2
            with pytest.raises(TypeError, match="PerReplica"):
                sess.run(scaled)
            assert np.asarray(_locals(sess, s, scaled)).tolist() == [[4.0, 5.0], [8.0, 10.0]]


def test_assign_moving_average_with_zero_debias_in_replica_fn_and_cross_replica_as_tf():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            avg = tf.Variable([0.0, 0.0], name="avg", trainable=False)
            avg2 = tf.Variable([0.0, 0.0], name="avg2", trainable=False)

            def fn():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                value = tf.constant([1.0, 2.0]) * (tf.cast(rid, tf.float32) + 1.0)
                return (assign_moving_average(avg, value, 0.9),
                        assign_moving_average(avg2, value, 0.5, zero_debias=False))

            debiased, plain = s.experimental_run_v2(fn)
            cross = assign_moving_average(avg, tf.constant([4.0, 4.0]), 0.5)
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "avg", "avg/biased", "avg/biased_1", "avg/local_step", "avg/local_step_1", "avg2"]
        fetch = list(s.experimental_local_results(debiased)) + \
            list(s.experimental_local_results(plain))
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(fetch), [[1.5, 3.0]] * 2 + [[0.75, 1.5]] * 2,
                                       rtol=1e-6)
            np.testing.assert_allclose(sess.run(fetch), [[1.5, 3.0]] * 2 + [[1.125, 2.25]] * 2,
                                       rtol=1e-6)
            assert sess.run(cross).tolist() == [4.0, 4.0]
            assert np.asarray(_locals(sess, s, avg)).tolist() == [[4.0, 4.0]] * 2


def test_summaries_in_replica_fn_come_from_the_first_replica_under_monitored_session(tmp_path):
    # TF 1.15 (distribute summary_op_util.skip_summary): replicas after the first make none.
    x = np.arange(16, dtype=np.float32).reshape(8, 2) / 8.0
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            gs = tf.train.get_or_create_global_step()
            it = s.make_dataset_iterator(tf.data.Dataset.from_tensor_slices(x).repeat().batch(4))
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, -1.0]))
            opt = tf.train.RMSPropOptimizer(0.1)

            def step(xb):
                y = tf.reduce_sum(xb * w, 1)
                y = tf.cond(tf.reduce_mean(y) > 0, lambda: y * 2.0, lambda: y - 1.0)
                _, acc = tf.while_loop(lambda i, a: i < 3,
                                       lambda i, a: (i + 1, a + tf.reduce_sum(y)),
                                       [tf.constant(0), tf.constant(0.0)])
                loss = tf.reduce_mean(tf.square(y)) + 0.01 * acc
                tf.summary.scalar("loss", loss)
                tf.summary.histogram("w", w)
                with tf.control_dependencies([opt.minimize(loss, global_step=gs)]):
                    return tf.identity(loss), tf.identity(acc)

            loss, acc = s.experimental_run_v2(step, args=(it.get_next(),))
            total = s.reduce("MEAN", loss)
        assert sorted(t.op.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)) == \
            ["loss", "w_1"]
        merged = tf.summary.merge_all()
        scaffold = tf.train.Scaffold(local_init_op=tf.group(tf.local_variables_initializer(),
                                                            it.initialize()))
        got = []
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), scaffold=scaffold, config=CONFIG,
                save_summaries_steps=None, save_checkpoint_secs=None, save_checkpoint_steps=2,
                hooks=[tf.train.StopAtStepHook(last_step=4)]) as sess:
            while not sess.should_stop():
                got.append(sess.run([total, list(s.experimental_local_results(acc)), merged]))
        np.testing.assert_allclose([g[0] for g in got], [1.19813, 0.60789, 1.45443, 1.56147],
                                   atol=2e-5)
        np.testing.assert_allclose([g[1] for g in got], [
            [-6.75, -6.75], [3.34693, 5.37682], [-7.02357, -7.78766], [-7.51303, -7.84186]],
                                   atol=2e-5)
        assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path))) == "model.ckpt-4"


def _saver_model(strategy):
    with strategy.scope():
        gs = tf.train.get_or_create_global_step()
        w = tf.get_variable("dense/kernel", [2, 2],
                            initializer=tf.constant_initializer([[1., 2.], [3., 4.]]))
        emb = tf.get_variable("emb", [3, 2], initializer=tf.constant_initializer(0.5))
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        x = tf.constant([[1., 1.], [2., 0.]])

        def step():
            loss = tf.reduce_sum(tf.matmul(x, w)) + \
                tf.reduce_sum(tf.nn.embedding_lookup(emb, [0, 2, 2]))
            return opt.minimize(loss, global_step=gs)

        train = strategy.group(strategy.experimental_run_v2(step))
    return train, tf.train.Saver(), w, emb, gs


def test_saver_round_trip_between_mirrored_and_plain_models_as_tf(tmp_path):
    with tf.Graph().as_default():
        train, saver, w, emb, gs = _saver_model(tf.distribute.MirroredStrategy(DEVICES))
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            sess.run(train)
            path = saver.save(sess, str(tmp_path / "m"), global_step=gs)
    assert sorted(tf.train.list_variables(path)) == [
        ("dense/kernel", [2, 2]), ("dense/kernel/Momentum", [2, 2]), ("emb", [3, 2]),
        ("emb/Momentum", [3, 2]), ("global_step", [])]
    with tf.Graph().as_default():
        train, saver, w, emb, gs = _saver_model(tf.distribute.get_strategy())   # no strategy
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_allclose(sess.run(w), [[-0.74, 0.26], [2.42, 3.42]], atol=1e-6)
            sess.run(train)
            plain = saver.save(sess, str(tmp_path / "plain"))
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        train, saver, w, emb, gs = _saver_model(s)
        with tf.Session(config=CONFIG) as sess:
            saver.restore(sess, plain)
            np.testing.assert_allclose(_locals(sess, s, w), [[[-2.066, -1.066], [1.978, 2.978]]]
                                       * 2, atol=1e-6)
            sess.run(train)
            np.testing.assert_allclose(sess.run(w), [[-3.8594, -2.8594], [1.3802, 2.3802]],
                                       atol=1e-5)
            np.testing.assert_allclose(sess.run(emb)[:, 0], [-1.1198, 0.5, -2.7396], atol=1e-5)
            assert sess.run(gs) == 4


@pytest.mark.parametrize("make, kind, losses, w", [
    (lambda: tf.distribute.OneDeviceStrategy("/cpu:0"), "ResourceVariable",
     [0.67899, 0.70835, 0.62296], [[0.1373, -0.83993, 0.26434, 1.00705],
                                   [0.17139, -0.81151, 0.25873, 0.99715]]),
    (lambda: tf.distribute.experimental.CentralStorageStrategy(DEVICES), "AggregatingVariable",
     [1.35798, 1.4185, 1.20778], [[-0.0243, -1.00771, 0.24974, 0.98336],
                                  [0.005, -0.98282, 0.24309, 0.96339]]),
], ids=["one_device", "central_storage"])
def test_one_device_and_central_storage_train_with_ema_in_replica_fn_as_tf(make, kind, losses,
                                                                            w):
    x = np.linspace(-1, 1, 16).astype(np.float32).reshape(8, 2)
    ids = np.array([0, 1, 1, 3, 2, 0, 3, 3], np.int64)
    y = np.array([1., 0., 1., 1., 0., 0., 1., 0.], np.float32)
    with tf.Graph().as_default():
        s = make()
        with s.scope():
            gs = tf.train.get_or_create_global_step()
            dataset = s.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices((x, ids, y)).repeat().batch(4))
            it = dataset.make_initializable_iterator()
            emb = tf.get_variable("emb", [4, 2], initializer=tf.constant_initializer(0.1))
            kernel = tf.get_variable("w", [4, 1], initializer=tf.constant_initializer(
                [[0.5], [-0.5], [0.25], [1.0]]))
            opt = tf.train.AdagradOptimizer(0.5)
            ema = tf.train.ExponentialMovingAverage(0.9, num_updates=gs)

            def step(inputs):
                xb, idb, yb = inputs
                h = tf.concat([xb, tf.nn.embedding_lookup(emb, idb)], 1)
                logits = tf.squeeze(tf.matmul(h, kernel), 1)
                loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=yb,
                                                                              logits=logits))
                with tf.control_dependencies([opt.minimize(loss, global_step=gs)]):
                    ema_op = ema.apply([kernel, emb])
                with tf.control_dependencies([ema_op]):
                    return tf.identity(loss)

            total = s.reduce("SUM", s.experimental_run_v2(step, args=(it.get_next(),)))
        assert {type(v).__name__ for v in tf.global_variables()} == {kind}
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initializer)
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose([sess.run(total) for _ in range(3)], losses, atol=2e-5)
            got = sess.run([kernel, ema.average(kernel)])
            np.testing.assert_allclose(np.reshape(got, (2, 4)), w, atol=2e-5)
            assert sess.run(gs) == 3


@pytest.mark.parametrize("make, variable_devices", [
    (lambda: tf.distribute.MirroredStrategy(), ["/device:GPU:0", "/device:GPU:1"]),
    (lambda: tf.distribute.experimental.CentralStorageStrategy(), ["/device:CPU:0"]),
], ids=["mirrored", "central_storage"])
def test_strategies_without_devices_train_on_every_gpu(monkeypatch, make, variable_devices):
    # Two (fake) GPUs: the default devices are both; the numbers are TF's (the adam case above,
    # which TF computed on two CPU devices).
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=2), tf.Graph().as_default():
        s = make()
        assert s.extended.worker_devices == ("/device:GPU:0", "/device:GPU:1")
        with s.scope():
            it = s.make_dataset_iterator(
                tf.data.Dataset.from_tensor_slices((IDS, TARGETS)).repeat().batch(4))
            emb = tf.get_variable("emb", [5, 2], initializer=tf.constant_initializer(
                np.arange(10).reshape(5, 2) / 10.0))
            w = tf.get_variable("w", [2], initializer=tf.constant_initializer([0.5, -0.3]))
            opt = tf.train.AdamOptimizer(0.1)

            def step(inputs):
                ids, y = inputs
                pred = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) * w, 1)
                loss = tf.reduce_mean(tf.square(pred - y))
                return opt.minimize(loss), loss

            train, loss = s.experimental_run_v2(step, args=(it.get_next(),))
            total = s.reduce("SUM", loss)
        assert [v.device for v in emb.values] == variable_devices
        fake_cupy.reset_stats()
        with tf.Session() as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            got = [sess.run([total, s.group(train)])[0] for _ in range(3)]
            np.testing.assert_allclose(got, [0.91426, 0.99246, 0.57158], atol=2e-5)
            for copy in _locals(sess, s, emb):
                np.testing.assert_allclose(copy[4], [0.5769, 1.12484], atol=2e-5)
            np.testing.assert_allclose(sess.run(w), [0.45209, -0.37331], atol=2e-5)
        assert fake_cupy.stats["kernels"] > 0, "nothing ran on the (fake) GPUs"


def _steps(s, dataset, n):
    with tf.Graph().as_default():
        it = s.make_dataset_iterator(dataset())
        x = it.get_next()
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            out = []
            try:
                for _ in range(n):
                    out.append([np.asarray(c).tolist() for c in _locals(sess, s, x)])
            except tf.errors.OutOfRangeError:
                out.append("END")
            return out


def test_a_batch_followed_by_repeat_is_split_among_replicas_as_tf_115s_rebatching():
    # TF 1.15 rebatches by rewriting batch(4) into batch(2) wherever it sits, so what follows
    # (repeat) sees the smaller batches: a short last batch [8, 9] stays one replica's batch
    # and the next replica starts the next epoch (TF 2.21 splits it [8] | [9] instead).
    s = tf.distribute.MirroredStrategy(DEVICES)
    assert _steps(s, lambda: tf.data.Dataset.range(10).batch(4).repeat(2), 6) == [
        [[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [0, 1]], [[2, 3], [4, 5]],
        [[6, 7], [8, 9]], "END"]
    assert _steps(s, lambda: tf.data.Dataset.range(10).batch(4, drop_remainder=True)
                  .repeat(2).prefetch(1), 5) == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]] * 2 + ["END"]
    assert _steps(s, lambda: tf.data.Dataset.range(11).batch(4).repeat(2), 5)[2:] == [
        [[8, 9], [10]], [[0, 1], [2, 3]], [[4, 5], [6, 7]]]


def test_keras_fit_on_a_repeated_dataset_under_mirrored_strategy_matches_tf():
    x = np.linspace(-1, 1, 32).astype(np.float32).reshape(16, 2)
    y = (x[:, :1] * 2.0 - x[:, 1:] * 0.5 + 0.1).astype(np.float32)
    keras = tf.keras
    keras.backend.clear_session()   # Keras's own default graph, as its tests
    try:
        keras.backend.set_session(tf.Session(config=CONFIG))
        with tf.distribute.MirroredStrategy(DEVICES).scope():
            model = keras.Sequential([
                keras.layers.Dense(4, activation="relu", input_shape=(2,),
                                   kernel_initializer=keras.initializers.Constant(0.3)),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(-0.2))])
            model.compile(optimizer=tf.train.MomentumOptimizer(0.05, 0.9), loss="mse",
                          metrics=["mae"])
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat()
        history = model.fit(ds, epochs=3, steps_per_epoch=2, verbose=0)
        np.testing.assert_allclose(history.history["loss"], [1.31466, 0.86879, 0.87312],
                                   atol=2e-5)
        np.testing.assert_allclose(model.evaluate(tf.data.Dataset.from_tensor_slices((x, y))
                                                  .batch(8), steps=2, verbose=0),
                                   [0.57921, 0.65223], atol=2e-5)
        np.testing.assert_allclose(model.predict(x[:4]).ravel(),
                                   [-0.01579, -0.01579, -0.0232, -0.0232], atol=2e-5)
    finally:
        keras.backend.clear_session()


def test_what_a_user_gets_wrong_is_a_clear_error():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            dataset = s.experimental_distribute_dataset(tf.data.Dataset.range(8).batch(4))
            with pytest.raises(ValueError, match="Cannot create a one shot iterator"):
                dataset.make_one_shot_iterator()              # TF 1.15's, in graph mode
            with pytest.raises(RuntimeError, match="only supported inside of tf.function"):
                iter(dataset)
            per_replica = s.experimental_run_v2(lambda: tf.cast(
                tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32))
            with pytest.raises(TypeError, match="A PerReplica value .* strategy.reduce"):
                tf.convert_to_tensor(per_replica)
            with pytest.raises(ValueError, match="Expected a tf.distribute.ReduceOp"):
                s.reduce(None, per_replica)
            # used in a replica function, it is that replica's value
            doubled = s.experimental_run_v2(lambda v: tf.convert_to_tensor(v) * 2.0,
                                            args=(per_replica,))
            with pytest.raises(RuntimeError, match="requires being in cross-replica context"):
                s.experimental_run_v2(lambda: s.experimental_run_v2(lambda: tf.constant(1.0)))
        with tf.Session(config=CONFIG) as sess:
            assert _locals(sess, s, doubled) == [0.0, 2.0]


def test_equal_python_values_of_the_replicas_regroup_to_one_as_tf():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            tf.get_variable("table", [6, 2])
            names = s.experimental_run_v2(lambda: [v.name for v in tf.trainable_variables()])
        assert names == ["table:0"]


@pytest.mark.parametrize("make", [
    lambda: tf.distribute.MirroredStrategy(DEVICES),
    lambda: tf.distribute.OneDeviceStrategy("/cpu:1"),
    # TF's AggregatingVariable keeps its old initializer here (the checkpoint is silently not
    # used); zps initializes it from the checkpoint as it does every other variable.
    lambda: tf.distribute.experimental.CentralStorageStrategy(DEVICES),
], ids=["mirrored", "one_device", "central_storage"])
def test_init_from_checkpoint_initializes_every_copy_as_tf(tmp_path, make):
    table = [[1., 2.], [3., 4.], [5., 6.]]
    with tf.Graph().as_default():
        tf.get_variable("pre/emb", [3, 2], initializer=tf.constant_initializer(table))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "pre"))
    with tf.Graph().as_default():
        s = make()
        with s.scope():
            emb = tf.get_variable("model/emb", [3, 2], initializer=tf.zeros_initializer())
            total = tf.get_variable("model/total", [3, 2], initializer=tf.zeros_initializer(),
                                    synchronization=tf.VariableSynchronization.ON_READ,
                                    aggregation=tf.VariableAggregation.SUM, trainable=False)
            tf.train.init_from_checkpoint(path, {"pre/emb": "model/emb"})
            tf.train.init_from_checkpoint(path, {"pre/emb": total})
        n = s.num_replicas_in_sync if isinstance(total, values.SyncOnReadVariable) else 1
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            for copy in _locals(sess, s, emb):
                assert copy.tolist() == table
            for copy in _locals(sess, s, total):       # a SUM's copies add up to the value
                np.testing.assert_allclose(copy, np.array(table) / n)


def _embedding_model(keras):
    return keras.Sequential([
        keras.layers.Embedding(7, 3, input_length=2,
                               embeddings_initializer=keras.initializers.Constant(0.1)),
        keras.layers.Flatten(),
        keras.layers.Dense(1, activation="sigmoid",
                           kernel_initializer=keras.initializers.Constant(0.2))])


def test_keras_embedding_model_trains_saves_and_loads_without_the_strategy(tmp_path):
    ids = (np.arange(32) % 7).reshape(16, 2)
    y = (np.arange(16) % 2).astype(np.float32).reshape(16, 1)
    keras = tf.keras
    keras.backend.clear_session()
    try:
        keras.backend.set_session(tf.Session(config=CONFIG))
        with tf.distribute.MirroredStrategy(DEVICES).scope():
            model = _embedding_model(keras)
            model.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy",
                          metrics=["accuracy"])
        history = model.fit(ids, y, batch_size=8, epochs=3, verbose=0, shuffle=False)
        np.testing.assert_allclose(history.history["loss"], [0.69833, 0.69285, 0.69064],
                                   atol=2e-5)                 # TF's numbers
        np.testing.assert_allclose(model.get_weights()[0][:3, 0], [0.09333, -0.11213, 0.1967],
                                   atol=2e-5)
        predictions = model.predict(ids[:3])
        model.save_weights(str(tmp_path / "w"))          # in Keras's session, as TF 1.15
        keras.backend.clear_session()
        plain = _embedding_model(keras)
        plain.load_weights(str(tmp_path / "w"))
        np.testing.assert_allclose(plain.predict(ids[:3]), predictions, rtol=1e-6)
    finally:
        keras.backend.clear_session()


def test_keras_batches_that_do_not_split_evenly_are_rounded_up_as_tf_115s_rebatching():
    # TF 1.15's rebatch rewrite (grappler rebatch.cc) turns a global batch of 3 over 2
    # replicas into 2 a replica read from the stream of examples, so steps take 4 examples:
    # a dataset's batch(3) trains as batch(4) (TF's numbers for 4: tests/keras/
    # test_distribute.py); numpy input (2 epochs of 8, ceil(8 / 3) = 3 steps an epoch)
    # runs 3 steps, then 1 and out of data: TF's numbers for those 4 steps of 4 examples
    # on one device. 3 samples to predict are 2 + 1. (TF 2.21 splits a 3 into 2 + 1.)
    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
    y = np.arange(8, dtype=np.float32).reshape(8, 1) / 4
    keras = tf.keras
    for make_data, losses in (
            (lambda: (x, y), [3.8252615928649902, 2.854856014251709]),
            (lambda: (tf.data.Dataset.from_tensor_slices((x, y)).batch(3),),
             [4.659961223602295, 2.5053588151931763])):
        keras.backend.clear_session()
        try:
            data = make_data()
            with tf.distribute.MirroredStrategy(DEVICES).scope():
                model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,),
                                                             kernel_initializer="ones")])
                model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
            evaluated = model.evaluate(*data, verbose=0)   # numpy: one batch of 8
            np.testing.assert_allclose(evaluated, [8.84875, 2.575], rtol=1e-6)
            history = model.fit(*data, **({"batch_size": 3} if len(data) == 2 else {}),
                                epochs=2, verbose=0, shuffle=False)
            np.testing.assert_allclose(history.history["loss"], losses, rtol=1e-6)
            np.testing.assert_allclose(
                keras.backend.get_session().run(model.weights[0]).ravel(),
                [0.657971978187561, 0.6415901780128479, 0.6252084970474243], rtol=1e-6)
            np.testing.assert_allclose(model.predict(x[:3]).ravel(),
                                       model.predict(x, batch_size=8).ravel()[:3], rtol=1e-6)
        finally:
            keras.backend.clear_session()
