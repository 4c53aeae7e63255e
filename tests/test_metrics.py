"""tf.metrics: running values over batches against the numbers TensorFlow 2.21's tf.compat.v1
gives for the same program, variables and collections, and bad arguments."""

import numpy as np
import pytest

import zps as tf

# TensorFlow 2.21 printed these for _program(): the values before any update, the update ops
# of three batches, then the values again (accuracy, weighted accuracy, weighted MSE, MAE,
# RMSE, weighted mean).
TF_VALUES = [
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.2, 0.145838, 1.792991, 1.167547, 1.283896, 0.713625],
    [0.3, 0.164357, 2.03153, 1.146463, 1.33451, 0.179927],
    [0.4, 0.30773, 1.703027, 1.062785, 1.233505, 0.160738],
    [0.4, 0.30773, 1.703027, 1.062785, 1.233505, 0.160738],
]


def _program():
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.int64, [None])
    w = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None, 2])
    p = tf.placeholder(tf.float32, [None, 2])
    metrics = [tf.metrics.accuracy(labels, preds),
               tf.metrics.accuracy(labels, preds, weights=w),
               tf.metrics.mean_squared_error(y, p, weights=[[1.0, 0.5]]),
               tf.metrics.mean_absolute_error(y, p),
               tf.metrics.root_mean_squared_error(y, p),
               tf.metrics.mean(p, weights=tf.constant([[0.0, 1.0]]))]
    values, updates = [m[0] for m in metrics], [m[1] for m in metrics]
    feeds = []
    for b in range(3):
        rng = np.random.default_rng(b)
        feeds.append({labels: rng.integers(0, 3, 5), preds: rng.integers(0, 3, 5),
                      w: rng.uniform(0, 1, 5).astype(np.float32),
                      y: rng.standard_normal((4, 2)).astype(np.float32),
                      p: rng.standard_normal((4, 2)).astype(np.float32)})
    return values, updates, feeds


def test_metrics_accumulate_over_batches_as_tensorflows_do():
    with tf.Graph().as_default():
        values, updates, feeds = _program()
        assert sorted(v.op.name for v in tf.local_variables()) == sorted(
            "%s/%s" % (scope, v) for scope in ("accuracy", "accuracy_1", "mean_squared_error",
                                               "mean_absolute_error", "root_mean_squared_error",
                                               "mean") for v in ("count", "total"))
        assert tf.get_collection(tf.GraphKeys.METRIC_VARIABLES) == tf.local_variables()
        assert not tf.trainable_variables() and not tf.global_variables()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            out = [sess.run(values)] + [sess.run(updates, f) for f in feeds] + [sess.run(values)]
            sess.run(tf.local_variables_initializer())   # a new evaluation starts from zero
            assert sess.run(values) == [0.0] * 6
    np.testing.assert_allclose(out, TF_VALUES, rtol=2e-6, atol=1e-6)


def test_collections_and_bad_arguments():
    with tf.Graph().as_default():
        value, update = tf.metrics.mean([1.0, 2.0], metrics_collections=["m"],
                                        updates_collections=[tf.GraphKeys.UPDATE_OPS])
        assert tf.get_collection("m") == [value]
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == [update]
        with pytest.raises(ValueError, match="incompatible"):
            tf.metrics.accuracy([1, 2, 3], [1, 2])
        with pytest.raises(ValueError):
            tf.metrics.mean([1.0, 2.0], weights=[1.0, 2.0, 3.0])


# -- classification metrics ------------------------------------------------------------------------
# TensorFlow 2.21's tf.compat.v1.metrics printed these for _classification_program() over
# CLASSIFICATION_BATCHES: each metric's update op per batch, then its value.
TF_CLASSIFICATION = {
    "tp": ([2.0, 4.0, 7.0], 7.0), "fp": ([1.0, 3.0, 3.0], 3.0),
    "tn": ([5.0, 5.5, 7.5], 7.5), "fn": ([0.5, 1.5, 3.5], 3.5),
    "precision": ([0.6666666865348816, 0.5714285969734192, 0.699999988079071], 0.699999988079071),
    "recall": ([0.800000011920929, 0.7272727489471436, 0.6666666865348816], 0.6666666865348816),
    "tp_t": ([[2.5, 2.0, 1.0], [4.5, 4.0, 1.0], [8.5, 7.0, 2.0]], [8.5, 7.0, 2.0]),
    "fp_t": ([[3.0, 1.0, 1.0], [5.0, 3.0, 3.0], [6.0, 3.0, 3.0]], [6.0, 3.0, 3.0]),
    "tn_t": ([[3.0, 5.0, 5.0], [3.5, 5.5, 5.5], [4.5, 7.5, 7.5]], [4.5, 7.5, 7.5]),
    "fn_t": ([[0.0, 0.5, 1.5], [1.0, 1.5, 4.5], [2.0, 3.5, 8.5]], [2.0, 3.5, 8.5]),
    "prec_t": ([[0.4545454680919647, 0.6666666865348816, 0.5],
                [0.4736842215061188, 0.5714285969734192, 0.25],
                [0.5862069129943848, 0.699999988079071, 0.4000000059604645]],
               [0.5862069129943848, 0.699999988079071, 0.4000000059604645]),
    "rec_t": ([[1.0, 0.800000011920929, 0.4000000059604645],
               [0.8181818127632141, 0.7272727489471436, 0.1818181872367859],
               [0.8095238208770752, 0.6666666865348816, 0.190476194024086]],
              [0.8095238208770752, 0.6666666865348816, 0.190476194024086]),
    "auc": ([0.8999998569488525, 0.5935828685760498, 0.6190475225448608], 0.6190475225448608),
    "auc_pr": ([0.7714283466339111, 0.5405594110488892, 0.6515306234359741], 0.6515306234359741),
    "auc_pr_ci": ([0.7761536836624146, 0.5425919890403748, 0.6531760692596436],
                  0.6531760692596436),
    "auc_10": ([0.7777776718139648, 0.4722222089767456, 0.48749998211860657],
               0.48749998211860657),
    "mpca": ([[1.0, 0.8333333134651184, 0.0, 1.0], [0.5, 0.8333333134651184, 0.25, 1.0],
              [0.5, 0.75, 0.5, 1.0]], 0.6875),
    "miou": ([[[1.0, 0.0, 0.0, 0.0], [0.0, 5.0, 1.0, 0.0], [0.0, 0.5, 0.0, 0.0],
               [0.0, 0.0, 0.0, 1.0]],
              [[2.0, 2.0, 0.0, 0.0], [0.0, 5.0, 1.0, 0.0], [1.0, 0.5, 0.5, 0.0],
               [0.0, 0.0, 0.0, 2.0]],
              [[4.0, 4.0, 0.0, 0.0], [0.0, 6.0, 2.0, 0.0], [1.0, 0.5, 1.5, 0.0],
               [0.0, 0.0, 0.0, 2.0]]], 0.5561110973358154),
}
TF_CLASSIFICATION_VARIABLES = [
    "auc/false_negatives", "auc/false_positives", "auc/true_negatives", "auc/true_positives",
    "auc_1/false_negatives", "auc_1/false_positives", "auc_1/true_negatives",
    "auc_1/true_positives", "auc_2/false_negatives", "auc_2/false_positives",
    "auc_2/true_negatives", "auc_2/true_positives", "auc_3/false_negatives",
    "auc_3/false_positives", "auc_3/true_negatives", "auc_3/true_positives",
    "false_negatives/count", "false_negatives_1/false_negatives", "false_positives/count",
    "false_positives_1/false_positives", "mean_accuracy/count", "mean_accuracy/total",
    "mean_iou/total_confusion_matrix", "precision/false_positives/count",
    "precision/true_positives/count", "precision_at_thresholds/false_positives",
    "precision_at_thresholds/true_positives", "recall/false_negatives/count",
    "recall/true_positives/count", "recall_at_thresholds/false_negatives",
    "recall_at_thresholds/true_positives", "true_negatives/count",
    "true_negatives_1/true_negatives", "true_positives/count", "true_positives_1/true_positives",
]
# (binary labels, predictions in [0, 1], weights, class labels, class predictions)
CLASSIFICATION_BATCHES = [
    ([1, 0, 1, 1, 0, 0], [0.9, 0.3, 0.45, 0.6, 0.8, 0.1], [1., 2., 0.5, 1., 1., 3.],
     [0, 1, 2, 3, 1, 1], [0, 1, 1, 3, 2, 1]),
    ([0, 1, 1, 0, 1, 0], [0.2, 0.55, 0.75, 0.76, 0.0, 1.0], [0.5, 1., 1., 2., 1., 0.],
     [2, 2, 0, 0, 3, 1], [2, 0, 0, 1, 3, 3]),
    ([1, 1, 0, 0, 1, 1], [0.33, 0.95, 0.25, 0.5, 0.7, 0.05], [1., 1., 1., 1., 2., 1.],
     [1, 1, 2, 0, 0, 0], [1, 2, 2, 0, 1, 0]),
]


def _classification_program():
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.float32, [None])
    w = tf.placeholder(tf.float32, [None])
    cls_l = tf.placeholder(tf.int64, [None])
    cls_p = tf.placeholder(tf.int64, [None])
    t = [0.25, 0.5, 0.75]
    m = {
        "tp": tf.metrics.true_positives(labels, preds > 0.5, weights=w),
        "fp": tf.metrics.false_positives(labels, preds > 0.5, weights=w),
        "tn": tf.metrics.true_negatives(labels, preds > 0.5, weights=w),
        "fn": tf.metrics.false_negatives(labels, preds > 0.5, weights=w),
        "precision": tf.metrics.precision(labels, preds > 0.5, weights=w),
        "recall": tf.metrics.recall(labels, preds > 0.5, weights=w),
        "tp_t": tf.metrics.true_positives_at_thresholds(labels, preds, t, weights=w),
        "fp_t": tf.metrics.false_positives_at_thresholds(labels, preds, t, weights=w),
        "tn_t": tf.metrics.true_negatives_at_thresholds(labels, preds, t, weights=w),
        "fn_t": tf.metrics.false_negatives_at_thresholds(labels, preds, t, weights=w),
        "prec_t": tf.metrics.precision_at_thresholds(labels, preds, t, weights=w),
        "rec_t": tf.metrics.recall_at_thresholds(labels, preds, t, weights=w),
        "auc": tf.metrics.auc(labels, preds, weights=w),
        "auc_pr": tf.metrics.auc(labels, preds, weights=w, curve="PR"),
        "auc_pr_ci": tf.metrics.auc(labels, preds, weights=w, curve="PR",
                                    summation_method="careful_interpolation"),
        "auc_10": tf.metrics.auc(labels, preds, num_thresholds=10, summation_method="minoring"),
        "mpca": tf.metrics.mean_per_class_accuracy(cls_l, cls_p, 4, weights=w),
        "miou": tf.metrics.mean_iou(cls_l, cls_p, 4, weights=w),
    }
    feeds = [dict(zip([labels, preds, w, cls_l, cls_p], b)) for b in CLASSIFICATION_BATCHES]
    return m, feeds


def test_classification_metrics_match_tensorflow():
    with tf.Graph().as_default():
        m, feeds = _classification_program()
        assert sorted(v.op.name for v in tf.local_variables()) == TF_CLASSIFICATION_VARIABLES
        assert tf.get_collection(tf.GraphKeys.METRIC_VARIABLES) == tf.local_variables()
        assert not tf.global_variables()
        keys = sorted(m)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            updates = [sess.run([m[k][1] for k in keys], f) for f in feeds]
            values = sess.run([m[k][0] for k in keys])
    for i, k in enumerate(keys):
        expected_updates, expected_value = TF_CLASSIFICATION[k]
        # AUCs sum 199 float32 terms: the order of the sum may move the last bit
        np.testing.assert_allclose([u[i] for u in updates], expected_updates, rtol=3e-7,
                                   err_msg=k)
        np.testing.assert_allclose(values[i], expected_value, rtol=3e-7, err_msg=k)


def test_auc_rejects_predictions_outside_0_1_and_bad_arguments():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None])
        _, update = tf.metrics.auc([1, 0], p)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="predictions must be in"):
                sess.run(update, {p: [0.5, 1.5]})
        with pytest.raises(ValueError, match="Curve must be either ROC or PR"):
            tf.metrics.auc([1, 0], [0.5, 0.5], curve="XY")
        with pytest.raises(ValueError, match="Invalid summation_method"):
            tf.metrics.auc([1, 0], [0.5, 0.5], summation_method="simpson")


# TF 2.21's recall_at_k, precision_at_k, and both with class_id=1, after each batch (float64).
TF_AT_K = [[0.3, 0.21428571428571427, 1.0, 0.5],
           [0.4230769230769231, 0.36666666666666664, 0.4, 0.5]]


def test_precision_and_recall_at_k_match_tensorflow():
    # labels as sets: a repeated label counts once, labels outside the classes are never found
    batches = [([[0, 1], [2, 2], [3, 5]], [[.1, .5, .3, .2], [.4, .3, .2, .1], [.1, .2, .3, .4]],
                [1., 2., .5]),
               ([[1, -1], [0, 3], [2, 1]], [[.9, .05, .03, .02], [.3, .4, .2, .1],
                                            [.2, .2, .5, .1]], [1., 0., 3.])]
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int64, [None, None])
        preds = tf.placeholder(tf.float32, [None, 4])
        w = tf.placeholder(tf.float32, [None])
        metrics = [tf.metrics.recall_at_k(labels, preds, 2, weights=w),
                   tf.metrics.precision_at_k(labels, preds, 2, weights=w),
                   tf.metrics.recall_at_k(labels, preds, 2, class_id=1, weights=w),
                   tf.metrics.precision_at_k(labels, preds, 2, class_id=1)]
        assert [v.op.name for v in tf.local_variables()] == [
            "recall_at_2/true_positive_at_2", "recall_at_2/false_negative_at_2",
            "precision_at_2/true_positive_at_2", "precision_at_2/false_positive_at_2",
            "recall_at_2_class1/true_positive_at_2_class1",
            "recall_at_2_class1/false_negative_at_2_class1",
            "precision_at_2_class1/true_positive_at_2_class1",
            "precision_at_2_class1/false_positive_at_2_class1"]
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            out = [sess.run([u for _, u in metrics], dict(zip([labels, preds, w], b)))
                   for b in batches]
            final = sess.run([v for v, _ in metrics])
    np.testing.assert_allclose(out, TF_AT_K, rtol=1e-15)
    np.testing.assert_allclose(final, TF_AT_K[-1], rtol=1e-15)


def test_recall_at_k_takes_a_label_per_row():
    with tf.Graph().as_default():
        value, update = tf.metrics.recall_at_k(tf.constant([1, 1, 2], tf.int64),
                                               [[.1, .9, 0.], [.2, .1, .7], [.5, .2, .3]], k=2)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(update) == pytest.approx(2 / 3)


# TensorFlow 2.21 printed these for the same labels, predictions and weights.
_LABELS = np.array([0, 0, 1, 1, 1, 0, 1, 0, 1, 1], np.int64)
_PREDICTIONS = np.array([0.1, 0.4, 0.35, 0.8, 0.9, 0.6, 0.2, 0.05, 0.7, 0.55], np.float32)
_WEIGHTS = np.array([1, 2, 1, 1, 0.5, 1, 3, 1, 1, 2], np.float32)


@pytest.mark.parametrize("metric, target, kwargs, expected", [
    ("sensitivity_at_specificity", 0.5, {}, 1.0),
    ("sensitivity_at_specificity", 0.8, {}, 0.6666667),
    ("sensitivity_at_specificity", 0.0, {}, 1.0),
    ("sensitivity_at_specificity", 1.0, {}, 0.5),
    ("sensitivity_at_specificity", 0.7, {"weights": _WEIGHTS, "num_thresholds": 50}, 0.5294118),
    ("specificity_at_sensitivity", 0.5, {}, 1.0),
    ("specificity_at_sensitivity", 0.8, {}, 0.5),
    ("specificity_at_sensitivity", 0.0, {}, 1.0),
    ("specificity_at_sensitivity", 1.0, {}, 0.5),
    ("specificity_at_sensitivity", 0.7, {"weights": _WEIGHTS, "num_thresholds": 50}, 0.4),
])
def test_sensitivity_and_specificity_at_a_target_match_tensorflow(metric, target, kwargs,
                                                                   expected):
    with tf.Graph().as_default():
        value, update = getattr(tf.metrics, metric)(_LABELS, _PREDICTIONS, target, **kwargs)
        assert (value.name, update.name) == (metric + "/value:0", metric + "/update_op:0")
        assert sorted(v.op.name for v in tf.local_variables()) == [
            metric + "/" + c for c in ("false_negatives", "false_positives", "true_negatives",
                                       "true_positives")]
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(update) == pytest.approx(expected, rel=1e-6)
            assert sess.run(value) == pytest.approx(expected, rel=1e-6)


def test_sensitivity_and_specificity_targets_must_be_in_0_1():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"`specificity` must be in the range \[0, 1\]"):
            tf.metrics.sensitivity_at_specificity(_LABELS, _PREDICTIONS, 1.5)
        with pytest.raises(ValueError, match=r"`sensitivity` must be in the range \[0, 1\]"):
            tf.metrics.specificity_at_sensitivity(_LABELS, _PREDICTIONS, -0.1)


def test_mean_tensor_and_percentage_below_match_tensorflow():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 2])
        mean, mean_update = tf.metrics.mean_tensor(x)
        weighted, weighted_update = tf.metrics.mean_tensor(x, weights=[[1.0, 0.0], [2.0, 1.0]])
        below, below_update = tf.metrics.percentage_below([1.0, 5.0, 3.0, 7.0], 4.0)
        below_w, below_w_update = tf.metrics.percentage_below([1.0, 5.0, 3.0, 7.0], 4.0,
                                                              weights=[1.0, 2.0, 3.0, 0.0])
        assert (mean.name, mean_update.name, below.name) == (
            "mean/value:0", "mean/update_op:0", "percentage_below_threshold/value:0")
        assert sorted(v.op.name for v in tf.local_variables()) == [
            "mean/count_tensor", "mean/total_tensor", "mean_1/count_tensor",
            "mean_1/total_tensor", "percentage_below_threshold/count",
            "percentage_below_threshold/total", "percentage_below_threshold_1/count",
            "percentage_below_threshold_1/total"]
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for batch in ([[1.0, 2.0], [3.0, 4.0]], [[3.0, 6.0], [5.0, 0.0]]):
                got = sess.run([mean_update, weighted_update], {x: batch})
            assert [g.tolist() for g in got] == [[[2.0, 4.0], [4.0, 2.0]],
                                                 [[2.0, 0.0], [4.0, 2.0]]]
            assert sess.run(mean).tolist() == [[2.0, 4.0], [4.0, 2.0]]
            assert sess.run([below_update, below_w_update]) == pytest.approx([0.5, 2 / 3])
            assert sess.run(below_w) == pytest.approx(2 / 3)


def test_mean_tensor_needs_a_known_shape():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="fully known shape"):
            tf.metrics.mean_tensor(tf.placeholder(tf.float32, [None, 2]))
        with pytest.raises(ValueError, match="do not broadcast"):
            tf.metrics.mean_tensor(tf.zeros([2]), weights=tf.ones([3, 2]))
