"""TF1's streaming metrics (``tf.metrics``, see zps/metrics.py).

Each metric keeps running totals in local variables (collections ``LOCAL_VARIABLES`` and
``METRIC_VARIABLES``, zeros until ``tf.local_variables_initializer()`` runs) and returns
``(value, update_op)``: running ``update_op`` once per batch folds the batch in and evaluates
to the metric so far; ``value`` reads it without updating. ``weights`` (broadcastable to the
values) weight each value; a metric with no weight yet is 0.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     acc, update = tf.metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0])
...     sess = tf.Session()
...     sess.run(tf.local_variables_initializer())
...     print(float(sess.run(update)), float(sess.run(acc)))
0.5 0.5
"""

from zps.framework import dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.ops import array_ops, math_ops, state_ops, variables


def _metric_variable(name):
    # TF1's metric_variable: a plain Variable, named in the metric's (unique) name scope.
    return variables.Variable(lambda: array_ops.zeros([], dtypes.float32), trainable=False,
                              collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                              name=name)


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
        value = math_ops.div_no_nan(total, count, name="value")
        update_op = math_ops.div_no_nan(update_total, update_count, name="update_op")
        _collect(metrics_collections, value)
        _collect(updates_collections, update_op)
        return value, update_op


def _collect(collections, value):
    if collections:
        get_default_graph().add_to_collections(collections, value)


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
    value, update = math_ops.sqrt(value), math_ops.sqrt(update)
    _collect(metrics_collections, value)
    _collect(updates_collections, update)
    return value, update


__all__ = ["mean", "accuracy", "mean_absolute_error", "mean_squared_error",
           "root_mean_squared_error"]
