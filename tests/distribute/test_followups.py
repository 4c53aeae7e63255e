"""tf.distribute outside its package: metrics, tf.assign & co., batch-norm moving statistics,
the global step and the loss reduction, under MirroredStrategy on two CPU devices, against the
numbers TF 2.21's tf.compat.v1 MirroredStrategy gave for the same programs (TF 1.15's rules
where the two differ)."""

import numpy as np
import pytest

import zps as tf

CONFIG = tf.ConfigProto(device_count={"CPU": 2})
DEVICES = ["/cpu:0", "/cpu:1"]
LABELS = [[1, 0, 1, 1], [0, 0, 1, 0]]                          # replica 0's, replica 1's
PREDICTIONS = [[0.9, 0.6, 0.3, 0.8], [0.2, 0.7, 0.9, 0.1]]


def _copies(sess, s, v):
    return [sess.run(c).tolist() for c in s.experimental_local_results(v)]


def test_metric_values_are_computed_once_over_every_replicas_data_as_tf():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def step():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                labels = tf.constant(LABELS[rid], tf.int64)
                preds = tf.constant(PREDICTIONS[rid])
                classes = tf.cast(preds > 0.5, tf.int64)
                flabels = tf.cast(labels, tf.float32)
                m = tf.metrics
                return {
                    "mean": m.mean(preds, metrics_collections=["values"]),
                    "accuracy": m.accuracy(labels, classes),
                    "auc": m.auc(labels, preds, num_thresholds=5),
                    "mse": m.mean_squared_error(flabels, preds),
                    "rmse": m.root_mean_squared_error(flabels, preds),
                    "mae": m.mean_absolute_error(flabels, preds),
                    "precision": m.precision(labels, classes),
                    "recall": m.recall(labels, classes),
                    "tp": m.true_positives(labels, classes),
                    "pat": m.precision_at_thresholds(labels, preds, [0.5, 0.75]),
                    "tpat": m.true_positives_at_thresholds(labels, preds, [0.5, 0.75]),
                    "mpca": m.mean_per_class_accuracy(labels, classes, 2),
                    "miou": m.mean_iou(labels, classes, 2),
                    "mt": m.mean_tensor(preds),
                    "sas": m.sensitivity_at_specificity(labels, preds, 0.5, num_thresholds=5),
                    "pb": m.percentage_below(preds, 0.5),
                    "mcd": m.mean_cosine_distance(tf.reshape(flabels, [2, 2]),
                                                  tf.reshape(preds, [2, 2]), dim=1),
                }
            out = s.experimental_run_v2(step)
        assert [t.name for t in tf.get_collection("values")] == ["mean/value:0"]
        per_replica = {k for k, (v, _) in out.items() if not isinstance(v, tf.Tensor)}
        assert per_replica == {"mcd"}   # TF takes 1 - mean in each replica
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.local_variables_initializer())
            sess.run(s.group([u for _, u in out.values()]))
            got = {k: np.asarray(sess.run(list(s.experimental_local_results(v)) if k == "mcd"
                                          else v)).tolist() for k, (v, _) in out.items()}
    tf_values = {   # TF's
        "mean": 0.5625, "accuracy": 0.625, "auc": 0.8749998211860657, "mse": 0.18125000596046448,
        "rmse": 0.42573466897010803, "mae": 0.33750003576278687, "precision": 0.6000000238418579,
        "recall": 0.75, "tp": 3.0, "pat": [0.6000000238418579, 1.0], "tpat": [3.0, 3.0],
        "mpca": 0.625, "miou": 0.44999998807907104,
        "mt": [0.550000011920929, 0.6499999761581421, 0.6000000238418579, 0.45000001788139343],
        "sas": 1.0, "pb": 0.375, "mcd": [0.2749999761581421, 0.2749999761581421]}
    assert got.keys() == tf_values.keys()
    for k, expected in tf_values.items():
        np.testing.assert_allclose(got[k], expected, rtol=1e-6, err_msg=k)


def test_assign_ops_on_distributed_variables_follow_tfs_rules():
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            a = tf.Variable([1.0, 2.0], name="a")
            mean = tf.Variable(0.0, name="m", aggregation=tf.VariableAggregation.MEAN)
            first = tf.Variable(0.0, name="f",
                                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            total = tf.Variable(0.0, name="su", aggregation=tf.VariableAggregation.SUM)
            r = tf.Variable(10.0, name="r", synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.SUM)
            # cross-replica context: every copy
            x1, x2, x3 = (tf.assign(a, [3.0, 4.0]), tf.assign_add(a, [1.0, 1.0]),
                          tf.assign_sub(a, [0.5, 0.5]))
            x4 = tf.assign(r, 6.0)   # a SUM is divided among the copies
            with pytest.raises(ValueError, match="does not support `assign_add` in "
                                                 "cross-replica context"):
                tf.assign_add(r, 1.0)
            with pytest.raises(ValueError, match="`handle` is not available outside the "
                                                 "replica context"):
                tf.scatter_add(a, [0], [5.0])

            def step():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                v = float(rid + 1)
                with pytest.raises(ValueError, match="You must specify an aggregation method "
                                                     "to update a MirroredVariable"):
                    tf.assign_add(a, [v, v])
                return (tf.assign_add(mean, v), tf.assign_add(first, v), tf.assign_add(total, v),
                        tf.assign_add(r, v), tf.scatter_add(a, [1], [v * 100]))
            replica_updates = s.experimental_run_v2(step)
        x5 = tf.assign(a, [7.0, 8.0])   # outside the scope: in it, as TF
        with pytest.raises(RuntimeError, match="Mixing different tf.distribute.Strategy"):
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                tf.assign(a, [0.0, 0.0])
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            seen = []
            for x in (x1, x2, x3):
                sess.run(x)
                seen.append(_copies(sess, s, a))
            assert seen == [[[3.0, 4.0]] * 2, [[4.0, 5.0]] * 2, [[3.5, 4.5]] * 2]
            sess.run(x4)
            assert _copies(sess, s, r) == [3.0, 3.0]
            sess.run(s.group(replica_updates[:4]))
            assert [_copies(sess, s, v) for v in (mean, first, total, r)] == [
                [1.5, 1.5], [1.0, 1.0], [3.0, 3.0], [4.0, 5.0]]
            sess.run(s.group(replica_updates[4]))   # each replica's own copy, as TF
            assert _copies(sess, s, a) == [[3.5, 104.5], [3.5, 204.5]]
            sess.run(x5)
            assert _copies(sess, s, a) == [[7.0, 8.0]] * 2


def test_batch_norm_moving_statistics_are_on_read_means_as_tf():
    x_per_replica = [[[1.0, 2.0], [3.0, 6.0]], [[5.0, -2.0], [9.0, 0.0]]]
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            def step():
                rid = tf.distribute.get_replica_context().replica_id_in_sync_group
                x = tf.constant(x_per_replica[rid])
                layer = tf.layers.BatchNormalization(momentum=0.5, epsilon=0.0)
                outputs = layer(x, training=True), layer(x, training=False)
                return outputs + (layer.moving_mean, layer.moving_variance)
            y, y_inference, mm, mv = s.experimental_run_v2(step)
            mean = s.extended.read_var(mm)
        assert type(mm).__name__ == "SyncOnReadVariable" and not mm.trainable
        assert (mm.synchronization, mm.aggregation) == (tf.VariableSynchronization.ON_READ,
                                                        tf.VariableAggregation.MEAN)
        assert [v.op.name for v in tf.trainable_variables()] == [
            "batch_normalization/gamma", "batch_normalization/beta"]
        assert [o.name for o in tf.get_collection(tf.GraphKeys.UPDATE_OPS)] == [
            "batch_normalization/AssignMovingAvg/AssignSub",
            "batch_normalization/AssignMovingAvg_1/AssignSub",
            "replica_1/batch_normalization/AssignMovingAvg/AssignSub",
            "replica_1/batch_normalization/AssignMovingAvg_1/AssignSub"]
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            assert _copies(sess, s, y) == [[[-1.0, -1.0], [1.0, 1.0]]] * 2
            sess.run(s.group(tf.get_collection(tf.GraphKeys.UPDATE_OPS)))
            # TF: each replica moved its own copy; a cross-replica read is their mean
            assert _copies(sess, s, mm) == [[1.0, 2.0], [3.5, -0.5]]
            assert _copies(sess, s, mv) == [[1.0, 2.5], [2.5, 1.0]]
            assert sess.run(mean).tolist() == [2.25, 0.75]
            with s.scope():
                assert sess.run(mm).tolist() == [2.25, 0.75]
            # in a replica, inference uses the replica's own copy (TF's numbers)
            np.testing.assert_allclose(_copies(sess, s, y_inference), [
                [[0.0, 0.0], [2.0, 2.5298218727111816]],
                [[0.9486832618713379, -1.5], [3.4785051345825195, 0.5]]], rtol=1e-6)


def test_the_global_step_counts_once_per_step_in_a_replica_function_as_tf():
    with tf.Graph().as_default():
        plain = tf.train.create_global_step()
        assert plain.aggregation == tf.VariableAggregation.ONLY_FIRST_REPLICA
    with tf.Graph().as_default():
        s = tf.distribute.MirroredStrategy(DEVICES)
        with s.scope():
            gs = tf.train.get_or_create_global_step()
            increments = s.experimental_run_v2(lambda: [gs.assign_add(1),
                                                        tf.assign_add(gs, 1)])
        assert type(gs).__name__ == "MirroredVariable"
        assert gs.aggregation == tf.VariableAggregation.ONLY_FIRST_REPLICA
        assert tf.train.get_global_step() is gs
        with tf.Session(config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(s.group(increments[0]))
            sess.run(s.group(increments[1]))
            assert sess.run(gs) == 2 and _copies(sess, s, gs) == [2, 2]


@pytest.mark.parametrize("reduction, expected", [
    ("weighted_sum", [-5.0, -7.0]), ("weighted_mean", [0.25, 0.0]),
    ("weighted_sum_by_nonzero_weights", [0.25, 0.0])])
def test_tf_losses_reduction_decides_the_estimators_loss_scaling_as_tf(reduction, expected):
    # TF: compute_weighted_loss records its reduction on the graph; with the Estimator's
    # _scale_loss_for_estimator only a non-SUM loss is divided among the 2 replicas.
    with tf.Graph().as_default() as g:
        s = tf.distribute.MirroredStrategy(DEVICES)
        s._scale_loss_for_estimator = True
        with s.scope():
            w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
            opt = tf.train.GradientDescentOptimizer(0.5)
            it = s.make_dataset_iterator(tf.data.Dataset.from_tensor_slices(
                np.arange(8, dtype=np.float32).reshape(4, 2)).batch(4))
            train = s.group(s.experimental_run(lambda x: opt.minimize(
                tf.losses.compute_weighted_loss(w * x, reduction=reduction)), it))
            assert g._last_loss_reduction == reduction
            assert tf.distribute.get_loss_reduction() == (
                tf.distribute.ReduceOp.SUM if reduction == "weighted_sum"
                else tf.distribute.ReduceOp.MEAN)
        with tf.Session(config=CONFIG) as sess:
            sess.run(it.initialize())
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert sess.run(w).tolist() == expected
    with tf.Graph().as_default() as g:   # every tf.losses loss records it
        tf.losses.mean_squared_error([1.0], [2.0], reduction=tf.losses.Reduction.SUM)
        assert g._last_loss_reduction == "weighted_sum"
        tf.losses.log_loss([1.0], [0.5])
        assert g._last_loss_reduction == "weighted_sum_by_nonzero_weights"
