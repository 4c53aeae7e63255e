"""TF1's streaming metrics (``tf.metrics``, see zps/metrics.py).

Each metric keeps running totals in local variables (collections ``LOCAL_VARIABLES`` and
``METRIC_VARIABLES``, zeros until ``tf.local_variables_initializer()`` runs) and returns
``(value, update_op)``: running ``update_op`` once per batch folds the batch in and evaluates
to the metric so far; ``value`` reads it without updating. ``weights`` (broadcastable to the
values) weight each value; a metric with no weight yet is 0.

Under a ``tf.distribute`` strategy (a metric made in a replica function), as in TF 1.15, the
variables are ON_READ: each replica's ``update_op`` counts into its own copy, and ``value`` is
one tensor computed once, in a merge_call, from the copies' sums (the metric over every
replica's data).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     acc, update = tf.metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0])
...     sess = tf.Session()
...     sess.run(tf.local_variables_initializer())
...     print(float(sess.run(update)), float(sess.run(acc)))
0.5 0.5

The classification metrics (precision, recall, auc, the ``*_at_thresholds`` counts ...) take
labels and predictions of the same shape (a last dimension of 1 on either side is squeezed, as
TF1 does); the ``*_at_k`` metrics take class-id labels (``[batch]`` or ``[batch, num_labels]``)
and ``[batch, num_classes]`` predictions. Local variables carry TF1's names
(``auc/true_positives``, ``precision/true_positives/count``, ``mean_iou/total_confusion_matrix``
...), so checkpoints and ``tf.get_collection`` lookups agree with TF1.
"""

import numpy as np

from zps.distribute import distribute_lib
from zps.framework import dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.ops import array_ops, logging_ops, math_ops, nn_ops, sparse_ops, state_ops, variables


def _metric_variable(name, shape=(), dtype=dtypes.float32):
    # TF 1.15's metric_variable: named in the metric's (unique) name scope, ON_READ with SUM
    # aggregation, so under a tf.distribute strategy each replica counts into its own copy and
    # a cross-replica read sums them.
    return variables.Variable(lambda: array_ops.zeros(list(shape), dtype), trainable=False,
                              collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                              name=name,
                              synchronization=variables.VariableSynchronization.ON_READ,
                              aggregation=variables.VariableAggregation.SUM)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value seen: ``(mean, update_op)``."""
    with get_default_graph().name_scope(name or "mean"):
        values = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        total = _metric_variable("total")
        count = _metric_variable("count")
        if weights is None:
            num = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
            weights = weights * array_ops.ones_like(values)   # broadcast (or refused) here
            values = values * weights
            num = math_ops.reduce_sum(weights)
        update_total = state_ops.assign_add(total, math_ops.reduce_sum(values))
        update_count = state_ops.assign_add(count, num)
        value = _aggregate(metrics_collections,
                           lambda t, c: math_ops.div_no_nan(t, c, name="value"), total, count)
        update_op = math_ops.div_no_nan(update_total, update_count, name="update_op")
        _collect(updates_collections, update_op)
        return value, update_op


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The elementwise (weighted) mean of every ``values`` tensor seen: ``(mean, update_op)``,
    each shaped as ``values`` (local variables ``mean/total_tensor``, ``mean/count_tensor``).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [2])
    ...     value, update = tf.metrics.mean_tensor(x)
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     _ = sess.run(update, {x: [1.0, 2.0]})
    ...     print(sess.run(update, {x: [3.0, 6.0]}).tolist())
    [2.0, 4.0]
    """
    with get_default_graph().name_scope(name or "mean"):
        values = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        shape = values.get_shape()
        if not shape.is_fully_defined():
            raise ValueError("mean_tensor needs values of a fully known shape (its running "
                             "totals are variables of that shape); %s has shape %s"
                             % (values.name, shape))
        total = _metric_variable("total_tensor", shape.as_list())
        count = _metric_variable("count_tensor", shape.as_list())
        num_values = array_ops.ones_like(values)
        if weights is not None:
            weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
            w_shape = weights.get_shape()
            if w_shape.ndims is not None and w_shape.ndims == shape.ndims + 1 and \
                    w_shape[-1].is_compatible_with(1):
                weights = array_ops.squeeze(weights, [-1])   # TF1's squeezable dimension
            weights = weights * num_values
            if not weights.get_shape().is_compatible_with(shape):
                raise ValueError("mean_tensor: weights of shape %s do not broadcast to the "
                                 "values' shape %s" % (w_shape, shape))
            values = values * weights
            num_values = num_values * weights
        update_total = state_ops.assign_add(total, values)
        update_count = state_ops.assign_add(count, num_values)
        value = _aggregate(metrics_collections, lambda t, c: math_ops.div_no_nan(
            t, math_ops.maximum(c, 0.0), name="value"), total, count)
        update_op = math_ops.div_no_nan(update_total, math_ops.maximum(update_count, 0.0),
                                        name="update_op")
        _collect(updates_collections, update_op)
        return value, update_op


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The (weighted) fraction of all values seen that are below ``threshold``:
    ``(fraction, update_op)``."""
    below = math_ops.cast(math_ops.less(values, threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


def _collect(collections, value):
    if collections:
        get_default_graph().add_to_collections(collections, value)


def _aggregate(metrics_collections, value_fn, *args):
    """A metric's value, ``value_fn(*args)``, computed once and added to
    ``metrics_collections`` (TF 1.15's _aggregate_across_replicas): under a tf.distribute
    strategy it runs in a merge_call, where the metric's ON_READ variables read as their sums
    across replicas, and every replica gets that one tensor. Update ops stay per replica."""
    return distribute_lib.aggregate_across_replicas(
        metrics_collections, lambda _, *a: value_fn(*a), *args)


def _pair(labels, predictions, what):
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels)
    if not predictions.get_shape().is_compatible_with(labels.get_shape()):
        raise ValueError("%s: shapes %s (predictions) and %s (labels) are incompatible"
                         % (what, predictions.get_shape(), labels.get_shape()))
    return labels, predictions


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The fraction of ``predictions`` equal to ``labels``: ``(accuracy, update_op)``."""
    labels, predictions = _pair(labels, predictions, "accuracy")
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of ``|predictions - labels|``: ``(value, update_op)``."""
    labels, predictions = _pair(labels, predictions, "mean_absolute_error")
    error = math_ops.abs(math_ops.cast(predictions, dtypes.float32) -
                         math_ops.cast(labels, dtypes.float32))
    return mean(error, weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The mean of ``(predictions - labels) ** 2``: ``(value, update_op)``."""
    labels, predictions = _pair(labels, predictions, "mean_squared_error")
    error = math_ops.squared_difference(math_ops.cast(predictions, dtypes.float32),
                                        math_ops.cast(labels, dtypes.float32))
    return mean(error, weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of the mean squared error: ``(value, update_op)``."""
    value, update = mean_squared_error(labels, predictions, weights, None, None,
                                       name=name or "root_mean_squared_error")
    value = _aggregate(metrics_collections, math_ops.sqrt, value)
    update = math_ops.sqrt(update)
    _collect(updates_collections, update)
    return value, update


def _squeezed(predictions, labels, weights=None):
    """TF1's _remove_squeezable_dimensions, on static ranks: a trailing dimension of 1 that makes
    labels and predictions (then weights and predictions) differ in rank by one is squeezed (a
    weight missing it is given it); scalar weights stay scalar."""
    p_rank, l_rank = predictions.get_shape().ndims, labels.get_shape().ndims
    if p_rank is not None and l_rank is not None:
        if p_rank - l_rank == 1 and predictions.get_shape()[-1].is_compatible_with(1):
            predictions = array_ops.squeeze(predictions, [-1])
        elif l_rank - p_rank == 1 and labels.get_shape()[-1].is_compatible_with(1):
            labels = array_ops.squeeze(labels, [-1])
    if not predictions.get_shape().is_compatible_with(labels.get_shape()):
        raise ValueError("Shapes %s (predictions) and %s (labels) are incompatible"
                         % (predictions.get_shape(), labels.get_shape()))
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    w_rank, p_rank = weights.get_shape().ndims, predictions.get_shape().ndims
    if w_rank and p_rank is not None:
        if w_rank - p_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif p_rank - w_rank == 1:
            weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


def _read(variable, collections):
    # TF 1.15's _aggregate_variable: a read of the variable (its sum across replicas).
    return distribute_lib.aggregate_across_replicas(
        collections, lambda strategy, v: strategy.extended.read_var(v), variable)


# -- counts of one condition -----------------------------------------------------------------------
def _count_condition(values, weights, metrics_collections, updates_collections):
    count = _metric_variable("count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        values = values * math_ops.cast(weights, dtypes.float32)
    value = _read(count, metrics_collections)
    update_op = state_ops.assign_add(count, math_ops.reduce_sum(values))
    _collect(updates_collections, update_op)
    return value, update_op


def _counter(default_name, label_is, prediction_is, doc):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with get_default_graph().name_scope(name or default_name):
            predictions, labels, weights = _squeezed(
                math_ops.cast(convert_to_tensor(predictions), dtypes.bool),
                math_ops.cast(convert_to_tensor(labels), dtypes.bool), weights)
            condition = math_ops.logical_and(math_ops.equal(labels, label_is),
                                             math_ops.equal(predictions, prediction_is))
            return _count_condition(condition, weights, metrics_collections,
                                    updates_collections)
    metric.__name__ = default_name
    metric.__doc__ = ("The (weighted) number of %s (labels and predictions read as bools): "
                      "``(count, update_op)`` in local variable ``%s/count``." % (doc, default_name))
    return metric


true_positives = _counter("true_positives", True, True, "true positives")
false_positives = _counter("false_positives", False, True, "false positives")
true_negatives = _counter("true_negatives", False, False, "true negatives")
false_negatives = _counter("false_negatives", True, False, "false negatives")


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """``tp / (tp + fp)`` over every batch seen (0 before any positive prediction).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     p, update = tf.metrics.precision([1, 0, 1, 1], [1, 1, 0, 1])
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     print(round(float(sess.run(update)), 4))
    0.6667
    """
    return _ratio("precision", true_positives, false_positives, labels, predictions, weights,
                  metrics_collections, updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
           name=None):
    """``tp / (tp + fn)`` over every batch seen (0 before any positive label)."""
    return _ratio("recall", true_positives, false_negatives, labels, predictions, weights,
                  metrics_collections, updates_collections, name)


def _ratio(default_name, hits, misses, labels, predictions, weights, metrics_collections,
           updates_collections, name):
    with get_default_graph().name_scope(name or default_name):
        predictions, labels, weights = _squeezed(
            math_ops.cast(convert_to_tensor(predictions), dtypes.bool),
            math_ops.cast(convert_to_tensor(labels), dtypes.bool), weights)
        hit, hit_update = hits(labels, predictions, weights)
        miss, miss_update = misses(labels, predictions, weights)

        def compute(h, m, op_name):
            return array_ops.where(math_ops.greater(h + m, 0), math_ops.divide(h, h + m), 0.0,
                                   name=op_name)

        value = _aggregate(metrics_collections, lambda h, m: compute(h, m, "value"), hit, miss)
        update_op = compute(hit_update, miss_update, "update_op")
        _collect(updates_collections, update_op)
        return value, update_op


# -- counts at thresholds ----------------------------------------------------------------------
_COUNTS = {"tp": ("true_positives", True, True), "fn": ("false_negatives", True, False),
           "tn": ("true_negatives", False, False), "fp": ("false_positives", False, True)}


def _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights=None,
                                    includes=("tp", "fn", "tn", "fp")):
    """``(values, update_ops)``: dicts of the [len(thresholds)] weighted counts (local variables
    named as TF1's) of predictions above each threshold against bool labels."""
    predictions = convert_to_tensor(predictions)
    in_range = [logging_ops.assert_greater_equal(predictions, math_ops.cast(0.0, predictions.dtype),
                                                 message="predictions must be in [0, 1]"),
                logging_ops.assert_less_equal(predictions, math_ops.cast(1.0, predictions.dtype),
                                              message="predictions must be in [0, 1]")]
    with get_default_graph().control_dependencies(in_range):
        predictions, labels, weights = _squeezed(
            math_ops.cast(predictions, dtypes.float32),
            math_ops.cast(convert_to_tensor(labels), dtypes.bool), weights)
    # [thresholds, predictions] comparisons, by broadcasting
    thresholds_col = array_ops.reshape(array_ops.constant(list(thresholds), dtypes.float32),
                                       [-1, 1])
    pred_is_pos = math_ops.greater(array_ops.reshape(predictions, [1, -1]), thresholds_col)
    label_is_pos = array_ops.reshape(labels, [1, -1])
    if weights is not None:
        weights = math_ops.cast(weights, dtypes.float32) * array_ops.ones_like(predictions)
        weights = array_ops.reshape(weights, [1, -1])
    values, update_ops = {}, {}
    for key in includes:
        var_name, label_is, prediction_is = _COUNTS[key]
        var = _metric_variable(var_name, [len(thresholds)])
        hit = math_ops.cast(math_ops.logical_and(
            math_ops.equal(label_is_pos, label_is), math_ops.equal(pred_is_pos, prediction_is)),
            dtypes.float32)
        if weights is not None:
            hit = hit * weights
        update_ops[key] = state_ops.assign_add(var, math_ops.reduce_sum(hit, 1))
        values[key] = var
    return values, update_ops


def _counter_at_thresholds(key):
    var_name = _COUNTS[key][0]

    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with get_default_graph().name_scope(name or var_name):
            values, update_ops = _confusion_matrix_at_thresholds(
                labels, predictions, thresholds, weights, includes=(key,))
            _collect(updates_collections, update_ops[key])
            return _read(values[key], metrics_collections), update_ops[key]
    metric.__name__ = var_name + "_at_thresholds"
    metric.__doc__ = ("The (weighted) number of %s for predictions above each of ``thresholds``: "
                      "``(counts, update_op)`` in local variable ``%s/%s``."
                      % (var_name.replace("_", " "), var_name, var_name))
    return metric


true_positives_at_thresholds = _counter_at_thresholds("tp")
false_positives_at_thresholds = _counter_at_thresholds("fp")
true_negatives_at_thresholds = _counter_at_thresholds("tn")
false_negatives_at_thresholds = _counter_at_thresholds("fn")


def precision_at_thresholds(labels, predictions, thresholds, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """Precision of the predictions above each of ``thresholds``: ``(values, update_op)``."""
    return _ratio_at_thresholds("precision", "fp", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections, name)


def recall_at_thresholds(labels, predictions, thresholds, weights=None,
                         metrics_collections=None, updates_collections=None, name=None):
    """Recall of the predictions above each of ``thresholds``: ``(values, update_op)``."""
    return _ratio_at_thresholds("recall", "fn", labels, predictions, thresholds, weights,
                                metrics_collections, updates_collections, name)


def _ratio_at_thresholds(what, miss, labels, predictions, thresholds, weights,
                         metrics_collections, updates_collections, name):
    with get_default_graph().name_scope(name or what + "_at_thresholds"):
        values, update_ops = _confusion_matrix_at_thresholds(
            labels, predictions, thresholds, weights, includes=("tp", miss))
        epsilon = 1e-7

        def compute(tp, missed, op_name):
            return math_ops.divide(tp, epsilon + tp + missed, name="%s_%s" % (what, op_name))

        value = _aggregate(metrics_collections, lambda c: compute(c["tp"], c[miss], "value"),
                           values)
        update_op = compute(update_ops["tp"], update_ops[miss], "update_op")
        _collect(updates_collections, update_op)
        return value, update_op


# -- auc -----------------------------------------------------------------------------------------
def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC or PR curve, from counts at ``num_thresholds`` thresholds spaced
    evenly in [0, 1] (plus one just below 0 and one just above 1), as TF1 computes it.

    ``summation_method``: "trapezoidal", "careful_interpolation" (for PR: interpolates precision
    along the recall axis, as TF1), "minoring" or "majoring". ``predictions`` must be in [0, 1].

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     value, update = tf.metrics.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     print(round(float(sess.run(update)), 3))
    0.75
    """
    if curve not in ("ROC", "PR"):
        raise ValueError("Curve must be either ROC or PR. Curve %s is unknown." % curve)
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError("Invalid summation_method: %s summation_method should be 'trapezoidal', "
                         "'careful_interpolation', 'minoring', or 'majoring'."
                         % summation_method)
    kepsilon = 1e-7   # so that predictions of exactly 0 and 1 fall inside the end thresholds
    if thresholds is not None:
        thresholds = sorted(thresholds)
        num_thresholds = len(thresholds) + 2
    else:
        thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    thresholds = [0.0 - kepsilon] + thresholds + [1.0 + kepsilon]
    with get_default_graph().name_scope(name or "auc"):
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights)

        def compute(c, op_name):
            if curve == "PR" and summation_method == "careful_interpolation":
                # TF1 names both tensors so (auc/interpolate_pr_auc, .../interpolate_pr_auc_1)
                return _interpolated_pr_auc(c["tp"], c["fp"], c["fn"], num_thresholds,
                                            "interpolate_pr_auc")
            epsilon = 1.0e-6
            rec = math_ops.divide(c["tp"] + epsilon, c["tp"] + c["fn"] + epsilon)
            if curve == "ROC":
                x, y = math_ops.divide(c["fp"], c["fp"] + c["tn"] + epsilon), rec
            else:
                x, y = rec, math_ops.divide(c["tp"] + epsilon, c["tp"] + c["fp"] + epsilon)
            y0, y1 = y[:num_thresholds - 1], y[1:]
            height = {"minoring": lambda: math_ops.minimum(y0, y1),
                      "majoring": lambda: math_ops.maximum(y0, y1)}.get(
                summation_method, lambda: (y0 + y1) / 2.0)()
            return math_ops.reduce_sum((x[:num_thresholds - 1] - x[1:]) * height, name=op_name)

        value = _aggregate(metrics_collections, lambda c: compute(c, "value"), values)
        update_op = compute(update_ops, "update_op")
        _collect(updates_collections, update_op)
        return value, update_op


def _interpolated_pr_auc(tp, fp, fn, num_thresholds, name):
    """TF1's PR-AUC by careful interpolation (Davis & Goadrich 2006): between two thresholds
    precision is interpolated along the true positives, and the area integrated in closed form."""
    dtp = tp[:num_thresholds - 1] - tp[1:]
    p = tp + fp
    prec_slope = math_ops.div_no_nan(dtp, math_ops.maximum(p[:num_thresholds - 1] - p[1:], 0.0),
                                     name="prec_slope")
    intercept = tp[1:] - prec_slope * p[1:]
    safe_p_ratio = array_ops.where(
        math_ops.logical_and(p[:num_thresholds - 1] > 0, p[1:] > 0),
        math_ops.div_no_nan(p[:num_thresholds - 1], math_ops.maximum(p[1:], 0.0),
                            name="recall_relative_ratio"),
        array_ops.ones_like(p[1:]))
    return math_ops.reduce_sum(
        math_ops.div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                            math_ops.maximum(tp[1:] + fn[1:], 0.0), name="pr_auc_increment"),
        name=name)


# -- sensitivity / specificity at a target ------------------------------------------------------
_KEPSILON = 1e-7   # TF1's: thresholds just outside [0, 1] count predictions of exactly 0 and 1


def _at_target(default_name, target, what, last_threshold, labels, predictions, weights,
               num_thresholds, metrics_collections, updates_collections, name, pick):
    # TF1's metric: counts at num_thresholds thresholds evenly in [0, 1] (the first just below
    # 0, the last at ``last_threshold``), then the ratio at the threshold ``pick`` chooses.
    if not 0 <= target <= 1:
        raise ValueError("`%s` must be in the range [0, 1]. Currently, `%s` is %s."
                         % (what, what, target))
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    thresholds = [0.0 - _KEPSILON] + inner + [last_threshold]
    with get_default_graph().name_scope(name or default_name):
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights)
        value = _aggregate(metrics_collections,
                           lambda c: pick(c, target, _KEPSILON, "value"), values)
        update_op = pick(update_ops, target, _KEPSILON, "update_op")
        _collect(updates_collections, update_op)
        return value, update_op


def _sensitivity_where_specificity_nearest(c, target, kepsilon, name):
    specificities = math_ops.divide(c["tn"], c["tn"] + c["fp"] + kepsilon)
    index = math_ops.argmin(math_ops.abs(specificities - target), 0, output_type=dtypes.int32)
    tp, fn = array_ops.gather(c["tp"], index), array_ops.gather(c["fn"], index)
    return math_ops.divide(tp, tp + fn + kepsilon, name=name)


def _specificity_where_sensitivity_nearest(c, target, kepsilon, name):
    # The last of the thresholds nearest the target (TF1: argmax of the cumulative count).
    distance = math_ops.abs(math_ops.divide(c["tp"], c["tp"] + c["fn"] + kepsilon) - target)
    nearest = math_ops.cast(math_ops.equal(distance, math_ops.reduce_min(distance)),
                            dtypes.int64)
    index = math_ops.argmax(math_ops.cumsum(nearest), 0, output_type=dtypes.int32)
    tn, fp = array_ops.gather(c["tn"], index), array_ops.gather(c["fp"], index)
    return math_ops.divide(tn, tn + fp + kepsilon, name=name)


def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The sensitivity (recall) at the threshold whose specificity is nearest ``specificity``:
    ``(sensitivity, update_op)``; ``predictions`` in [0, 1], ``num_thresholds`` thresholds."""
    return _at_target("sensitivity_at_specificity", specificity, "specificity", 1.0 + _KEPSILON,
                      labels, predictions, weights, num_thresholds, metrics_collections,
                      updates_collections, name, _sensitivity_where_specificity_nearest)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity at the (last) threshold whose sensitivity is nearest ``sensitivity``:
    ``(specificity, update_op)``; ``predictions`` in [0, 1], ``num_thresholds`` thresholds."""
    # TF1 puts this metric's last threshold just below 1 (the other's just above).
    return _at_target("specificity_at_sensitivity", sensitivity, "sensitivity", 1.0 - _KEPSILON,
                      labels, predictions, weights, num_thresholds, metrics_collections,
                      updates_collections, name, _specificity_where_sensitivity_nearest)


# -- per class -----------------------------------------------------------------------------------
def _flat_class_ids(labels, predictions):
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
    predictions = convert_to_tensor(predictions)
    if (labels.get_shape().ndims or 0) > 1:
        labels = array_ops.reshape(labels, [-1])
    if (predictions.get_shape().ndims or 0) > 1:
        predictions = array_ops.reshape(predictions, [-1])
    if not predictions.get_shape().is_compatible_with(labels.get_shape()):
        raise ValueError("Shapes %s (predictions) and %s (labels) are incompatible"
                         % (predictions.get_shape(), labels.get_shape()))
    return labels, math_ops.cast(predictions, dtypes.int64)


def _flat_weights(weights):
    weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
    return array_ops.reshape(weights, [-1]) if (weights.get_shape().ndims or 0) > 1 else weights


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over classes of each class's accuracy: ``(mean, update_op)``; as in TF1,
    ``update_op`` evaluates to the [num_classes] per-class accuracies."""
    with get_default_graph().name_scope(name or "mean_accuracy"):
        labels, predictions = _flat_class_ids(labels, predictions)
        total = _metric_variable("total", [num_classes])
        count = _metric_variable("count", [num_classes])
        ones = array_ops.ones_like(labels, dtype=dtypes.float32)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = _flat_weights(weights)
            is_correct *= weights
            ones *= weights
        update_total = state_ops.scatter_add(total, labels, ones)
        update_count = state_ops.scatter_add(count, labels, is_correct)
        value = _aggregate(metrics_collections, lambda c, t: math_ops.reduce_mean(
            math_ops.div_no_nan(c, math_ops.maximum(t, 0.0)), name="mean_accuracy"),
            count, total)
        update_op = math_ops.div_no_nan(update_count, math_ops.maximum(update_total, 0.0),
                                        name="update_op")
        _collect(updates_collections, update_op)
        return value, update_op


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean over classes (those seen) of intersection over union: ``(mean_iou, update_op)``;
    as in TF1, ``update_op`` evaluates to the [num_classes, num_classes] confusion matrix."""
    with get_default_graph().name_scope(name or "mean_iou"):
        labels, predictions = _flat_class_ids(labels, predictions)
        total_cm = _metric_variable("total_confusion_matrix", [num_classes, num_classes],
                                    dtypes.float64)
        # rows: labels, columns: predictions (TF1's confusion_matrix)
        cells = labels * num_classes + predictions
        counts = array_ops.ones_like(cells, dtype=dtypes.float64) if weights is None \
            else math_ops.cast(_flat_weights(weights), dtypes.float64) \
            * array_ops.ones_like(cells, dtype=dtypes.float64)
        current = array_ops.reshape(
            array_ops.unsorted_segment_sum(counts, cells, num_classes * num_classes),
            [num_classes, num_classes])
        update_op = state_ops.assign_add(total_cm, current)
        value = _aggregate(metrics_collections, _mean_iou, total_cm)
        _collect(updates_collections, update_op)
        return value, update_op


def _mean_iou(total_cm):
    sum_over_row = math_ops.cast(math_ops.reduce_sum(total_cm, 0), dtypes.float32)
    sum_over_col = math_ops.cast(math_ops.reduce_sum(total_cm, 1), dtypes.float32)
    cm_diag = math_ops.cast(array_ops.diag_part(total_cm), dtypes.float32)
    denominator = sum_over_row + sum_over_col - cm_diag
    num_valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0.0),
                                                  dtypes.float32))
    denominator = array_ops.where(math_ops.greater(denominator, 0.0), denominator,
                                  array_ops.ones_like(denominator))
    iou = math_ops.divide(cm_diag, denominator)
    return array_ops.where(math_ops.greater(num_valid, 0.0),
                           math_ops.reduce_sum(iou, name="mean_iou") / num_valid, 0.0)


# -- at k ----------------------------------------------------------------------------------------
def _at_k_name(name, k=None, class_id=None):
    name = "%s_at_k" % name if k is None else "%s_at_%d" % (name, k)
    return name if class_id is None else "%s_class%d" % (name, class_id)


def _class_id_labels(labels, top):
    """``(labels, present)``: class-id labels as int64 of ``top``'s rank (``[...]`` labels get a
    last dimension of 1), and which of them are labels at all. A SparseTensor's rows are sets (its
    missing entries are no label); a dense tensor's every entry is one, out-of-range or negative
    ids included (they count as false negatives, as in TF1)."""
    present, is_set = None, isinstance(labels, sparse_ops.SparseTensor)
    if is_set:
        ids = sparse_ops.SparseTensor(labels.indices, math_ops.cast(labels.values, dtypes.int64),
                                      labels.dense_shape)
        present = sparse_ops.sparse_tensor_to_dense(
            sparse_ops.SparseTensor(labels.indices, array_ops.ones_like(ids.values, dtypes.bool),
                                    labels.dense_shape), default_value=False)
        labels = sparse_ops.sparse_tensor_to_dense(ids, default_value=-1)
        # TF1's _maybe_expand_labels: a SparseTensor's static rank is that of its dense_shape.
        l_rank = labels.get_shape().ndims
        if l_rank is None:
            l_rank = ids.dense_shape.get_shape()[0].value
    else:
        labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
        l_rank = labels.get_shape().ndims
    p_rank = top.get_shape().ndims
    if p_rank is None or l_rank is None or p_rank not in (l_rank, l_rank + 1):
        raise ValueError("Unexpected labels shape %s for predictions shape %s. Predictions rank "
                         "should be the same rank as labels rank or labels rank plus one ."
                         % (labels.get_shape(), top.get_shape()))
    if p_rank == l_rank + 1:
        labels = array_ops.expand_dims(labels, -1)
        present = None if present is None else array_ops.expand_dims(present, -1)
    if present is None:
        present = array_ops.ones_like(labels, dtype=dtypes.bool)
    return labels, present, is_set


def _first_occurrences(labels, present):
    """Which labels are the first of their value in their row (a row's labels are a set)."""
    repeats = math_ops.logical_and(
        math_ops.equal(array_ops.expand_dims(labels, -1), array_ops.expand_dims(labels, -2)),
        array_ops.expand_dims(present, -2))
    repeats = math_ops.cast(repeats, dtypes.int32)
    earlier = array_ops.matrix_band_part(repeats, -1, 0) - array_ops.matrix_band_part(repeats, 0, 0)
    return math_ops.logical_and(present, math_ops.equal(math_ops.reduce_sum(earlier, -1), 0))


def _top_k_counts(labels, top, class_id):
    """Per row of ``top`` ([..., k]: the ids of a row's top classes), with ``labels`` the class
    ids of the row ([...] or [..., num_labels], or a SparseTensor): the true positives, false
    positives and false negatives of the top classes against the set of the row's labels (float64,
    as TF1's set operations count)."""
    top = math_ops.cast(convert_to_tensor(top), dtypes.int64)
    labels, present, _ = _class_id_labels(labels, top)
    # [..., k, num_labels]: which top class equals which label
    same = math_ops.logical_and(
        math_ops.equal(array_ops.expand_dims(top, -1), array_ops.expand_dims(labels, -2)),
        array_ops.expand_dims(present, -2))
    predicted_hit = math_ops.reduce_any(same, -1)     # [..., k]  (top classes are distinct)
    label_found = math_ops.reduce_any(same, -2)       # [..., num_labels]
    # a label repeated in a row counts once (a set)
    label_missed = math_ops.logical_and(_first_occurrences(labels, present),
                                        math_ops.logical_not(label_found))
    predicted_miss = math_ops.logical_not(predicted_hit)
    if class_id is not None:
        predicted_hit = math_ops.logical_and(predicted_hit, math_ops.equal(top, class_id))
        predicted_miss = math_ops.logical_and(predicted_miss, math_ops.equal(top, class_id))
        label_missed = math_ops.logical_and(label_missed, math_ops.equal(labels, class_id))

    def count(flags):
        return math_ops.reduce_sum(math_ops.cast(flags, dtypes.float64), -1)
    return count(predicted_hit), count(predicted_miss), count(label_missed)


def _streaming_count(counts, weights, var_name):
    with get_default_graph().name_scope(var_name) as scope:
        if weights is not None:
            counts = counts * math_ops.cast(convert_to_tensor(weights), dtypes.float64)
        var = _metric_variable(scope, dtype=dtypes.float64)
        return var, state_ops.assign_add(var, math_ops.reduce_sum(counts), name="update")


def _at_k(what, miss_index, labels, top_of, k, class_id, weights, metrics_collections,
          updates_collections, name):
    # ``top_of()`` makes the [..., k] top class ids inside the metric's name scope.
    miss_name = ("false_positive", "false_negative")[miss_index - 1]
    with get_default_graph().name_scope(name or _at_k_name(what, k, class_id)) as scope:
        counts = _top_k_counts(labels, top_of(), class_id)
        tp, tp_update = _streaming_count(counts[0], weights, _at_k_name("true_positive", k,
                                                                        class_id))
        miss, miss_update = _streaming_count(counts[miss_index], weights,
                                             _at_k_name(miss_name, k, class_id))
        value = _aggregate(metrics_collections,
                           lambda t, m: math_ops.divide(t, t + m, name=scope), tp, miss)
        update_op = math_ops.divide(tp_update, tp_update + miss_update, name="update")
        _collect(updates_collections, update_op)
        return value, update_op


def _top_k_of(predictions, k):
    return lambda: nn_ops.top_k(convert_to_tensor(predictions), k)[1]


def precision_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """How often a class among each row's top ``k`` predictions is one of its labels (class ids,
    ``[batch]`` or ``[batch, num_labels]``, or a SparseTensor of them); with ``class_id``, only
    that class counts. ``weights`` weight each row. ``(precision, update_op)``, float64, NaN
    before any count."""
    return _at_k("precision", 1, labels, _top_k_of(predictions, k), k, class_id, weights,
                 metrics_collections, updates_collections, name)


def recall_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                updates_collections=None, name=None):
    """How often each row's labels (class ids, ``[batch]`` or ``[batch, num_labels]``, or a
    SparseTensor of them) are among its top ``k`` predictions; with ``class_id``, only that class
    counts. ``weights`` weight each row. ``(recall, update_op)``, float64, NaN before any count.
    A dense label outside ``[0, num_classes)`` is a false negative, as in TF1."""
    return _at_k("recall", 2, labels, _top_k_of(predictions, k), k, class_id, weights,
                 metrics_collections, updates_collections, name)


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    """``precision_at_k`` of given top class ids: ``predictions_idx`` is ``[..., k]`` (the
    classes predicted for each row, best first); ``k`` only names the metric.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     _, update = tf.metrics.precision_at_top_k([[2, 3], [0, 1]], tf.constant([[3, 1], [0, 1]]))
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     print(sess.run(update))
    0.75
    """
    return _at_k("precision", 1, labels, lambda: predictions_idx, k, class_id, weights,
                 metrics_collections, updates_collections, name)


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                    metrics_collections=None, updates_collections=None, name=None):
    """``recall_at_k`` of given top class ids: ``predictions_idx`` is ``[..., k]`` (the classes
    predicted for each row, best first); ``k`` only names the metric."""
    return _at_k("recall", 2, labels, lambda: predictions_idx, k, class_id, weights,
                 metrics_collections, updates_collections, name)


sparse_precision_at_k = precision_at_k   # TF1's deprecated name


def _average_precision(labels, top, k):
    """Each row's average precision of its top ``k`` classes ``top`` against its labels: the sum,
    over the top classes that are labels, of the precision at their rank, divided by
    ``min(k, number of labels)`` (TF1's count: a SparseTensor's distinct labels, a dense row's
    non-negative entries). A row without labels is NaN."""
    labels, present, is_set = _class_id_labels(labels, top)
    relevant = math_ops.cast(math_ops.reduce_any(math_ops.logical_and(
        math_ops.equal(array_ops.expand_dims(top, -1), array_ops.expand_dims(labels, -2)),
        array_ops.expand_dims(present, -2)), -1), dtypes.float64)        # [..., k]
    rank = array_ops.constant(np.arange(1, k + 1, dtype=np.float64))
    precision_sum = math_ops.reduce_sum(math_ops.cumsum(relevant, -1) / rank * relevant, -1)
    counted = _first_occurrences(labels, present) if is_set else math_ops.greater_equal(labels, 0)
    num_relevant = math_ops.minimum(
        math_ops.reduce_sum(math_ops.cast(counted, dtypes.float64), -1), float(k))
    return math_ops.divide(precision_sum, num_relevant, name="average_precision")


def _out_of_range_as_minus_one(labels, num_classes):
    # TF1's _clean_out_of_range_indices: a label id >= num_classes becomes -1.
    def clean(ids):
        ids = math_ops.cast(ids, dtypes.int64)
        return array_ops.where(math_ops.greater_equal(ids, num_classes),
                               -array_ops.ones_like(ids), ids)
    if isinstance(labels, sparse_ops.SparseTensor):
        return sparse_ops.SparseTensor(labels.indices, clean(labels.values), labels.dense_shape)
    return clean(convert_to_tensor(labels))


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """The mean over rows of the average precision of each row's top ``k`` predictions against
    its labels (class ids, ``[batch]`` or ``[batch, num_labels]``, or a SparseTensor of them):
    ``(mean, update_op)``, float64, 0 before any row. ``weights`` weight each row (the mean is
    divided by their sum). As TF1, local variables ``average_precision_at_<k>/total`` and
    ``.../max_1`` hold the weighted sum of the rows' average precisions and of their weights.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     _, update = tf.metrics.average_precision_at_k([[1], [2]], [[0.1, 0.7, 0.2],
    ...                                                              [0.5, 0.1, 0.4]], k=2)
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     print(sess.run(update))   # (1 + 1/2) / 2
    0.75
    """
    if k < 1:
        raise ValueError("Invalid k=%s. `k` should be >= 1." % k)
    with get_default_graph().name_scope(name or _at_k_name("average_precision", k)) as scope:
        predictions = convert_to_tensor(predictions)
        top = math_ops.cast(nn_ops.top_k(predictions, k)[1], dtypes.int64)
        num_classes = math_ops.cast(array_ops.shape(predictions)[-1], dtypes.int64)
        average_precision = _average_precision(
            _out_of_range_as_minus_one(labels, num_classes), top, k)
        if weights is None:
            batch_max = math_ops.cast(array_ops.size(average_precision), dtypes.float64)
        else:
            weights = math_ops.cast(convert_to_tensor(weights), dtypes.float64)
            if not weights.get_shape().is_compatible_with(average_precision.get_shape()) and \
                    weights.get_shape().ndims != 0:
                raise ValueError("average_precision_at_k: weights of shape %s do not broadcast "
                                 "to the rows' shape %s" % (weights.get_shape(),
                                                            average_precision.get_shape()))
            weights = weights * array_ops.ones_like(average_precision)
            average_precision = average_precision * weights
            batch_max = math_ops.reduce_sum(weights)
        # "max_1": TF1's name (its scope "max" is taken by an op made before it)
        max_var = _metric_variable("max_1", dtype=dtypes.float64)
        total_var = _metric_variable("total", dtype=dtypes.float64)
        max_update = state_ops.assign_add(max_var, batch_max)
        total_update = state_ops.assign_add(total_var, math_ops.reduce_sum(average_precision))
        value = _aggregate(metrics_collections,
                           lambda t, m: math_ops.div_no_nan(t, m, name="mean"), total_var, max_var)
        update_op = math_ops.div_no_nan(total_update, max_update, name=scope)
        _collect(updates_collections, update_op)
        return value, update_op


sparse_average_precision_at_k = average_precision_at_k   # TF1's deprecated name


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """One minus the mean over every vector seen of ``sum(labels * predictions, dim)`` (the
    cosine distance of unit-normalized vectors): ``(distance, update_op)``, float32; ``weights``
    weight each vector (broadcastable to the products summed over ``dim``, kept as size 1).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     _, update = tf.metrics.mean_cosine_distance([[1.0, 0.0], [0.0, 1.0]],
    ...                                                 [[0.6, 0.8], [0.0, 1.0]], dim=1)
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     print(round(float(sess.run(update)), 4))   # 1 - (0.6 + 1) / 2
    0.2
    """
    predictions, labels, weights = _squeezed(convert_to_tensor(predictions),
                                             convert_to_tensor(labels), weights)
    radial = math_ops.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim],
                                 keepdims=True)
    value, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    # (as TF 1.15, ``1 - mean`` is taken in each replica: a PerReplica value in a replica fn)
    value, update_op = math_ops.subtract(1.0, value), math_ops.subtract(1.0, update_op)
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def mean_relative_error(labels, predictions, normalizer, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of ``|labels - predictions| / normalizer`` over every value seen (0 where the
    normalizer is 0): ``(value, update_op)``, float32.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     _, update = tf.metrics.mean_relative_error([1.0, 2.0], [1.5, 1.0], normalizer=[1.0, 2.0])
    ...     sess = tf.Session()
    ...     sess.run(tf.local_variables_initializer())
    ...     print(sess.run(update))   # (0.5 / 1 + 1 / 2) / 2
    0.5
    """
    predictions, labels, weights = _squeezed(
        math_ops.cast(convert_to_tensor(predictions), dtypes.float32),
        math_ops.cast(convert_to_tensor(labels), dtypes.float32), weights)
    predictions, normalizer, _ = _squeezed(
        predictions, math_ops.cast(convert_to_tensor(normalizer), dtypes.float32))
    relative = array_ops.where(math_ops.equal(normalizer, 0.0), array_ops.zeros_like(labels),
                               math_ops.divide(math_ops.abs(labels - predictions), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


__all__ = ["mean", "accuracy", "mean_absolute_error", "mean_squared_error",
           "root_mean_squared_error", "true_positives", "false_positives", "true_negatives",
           "false_negatives", "precision", "recall", "true_positives_at_thresholds",
           "false_positives_at_thresholds", "true_negatives_at_thresholds",
           "false_negatives_at_thresholds", "precision_at_thresholds", "recall_at_thresholds",
           "auc", "mean_per_class_accuracy", "mean_iou", "precision_at_k", "recall_at_k",
           "mean_tensor", "percentage_below", "sensitivity_at_specificity",
           "specificity_at_sensitivity", "precision_at_top_k", "recall_at_top_k",
           "sparse_precision_at_k", "average_precision_at_k", "sparse_average_precision_at_k",
           "mean_cosine_distance", "mean_relative_error"]
