"""``tf.confusion_matrix``: counts (or summed weights) of (label, prediction) pairs, built as TF1
builds it (int64 class ids checked non-negative and in range, then a ScatterNd).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     cm = tf.confusion_matrix([0, 1, 2, 2], [0, 2, 2, 1], num_classes=3)
...     print(tf.Session().run(cm))
[[1 0 0]
 [0 0 1]
 [0 1 1]]
"""

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import array_ops, control_flow_ops, logging_ops, math_ops
from zps.ops.metrics_impl import _squeezed


def _checked(ids, checks):
    return control_flow_ops.with_dependencies(checks, ids)


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None,
                     weights=None):
    """The ``[num_classes, num_classes]`` matrix whose ``[i, j]`` entry counts the examples of
    label ``i`` predicted ``j`` (or sums their ``weights``), as ``dtype``.

    ``labels`` and ``predictions`` are 1-D class ids (a trailing dimension of 1 on either is
    squeezed; they are cast to int64); ``num_classes`` defaults to one more than the largest id
    seen. Negative ids, or ids not below ``num_classes``, fail with InvalidArgumentError when
    run.
    """
    with get_default_graph().name_scope(name or "confusion_matrix"):
        predictions, labels, _ = _squeezed(convert_to_tensor(predictions, name="predictions"),
                                           convert_to_tensor(labels, name="labels"))
        predictions = math_ops.cast(predictions, dtypes.int64)
        labels = math_ops.cast(labels, dtypes.int64)
        labels = _checked(labels, [logging_ops.assert_non_negative(
            labels, message="`labels` contains negative values")])
        predictions = _checked(predictions, [logging_ops.assert_non_negative(
            predictions, message="`predictions` contains negative values")])
        if num_classes is None:
            num_classes = math_ops.maximum(math_ops.reduce_max(predictions),
                                           math_ops.reduce_max(labels)) + 1
        else:
            bound = math_ops.cast(num_classes, dtypes.int64)
            labels = _checked(labels, [logging_ops.assert_less(
                labels, bound, message="`labels` out of bound")])
            predictions = _checked(predictions, [logging_ops.assert_less(
                predictions, bound, message="`predictions` out of bound")])
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            if not predictions.get_shape().is_compatible_with(weights.get_shape()):
                raise ValueError("Shapes %s (predictions) and %s (weights) are incompatible"
                                 % (predictions.get_shape(), weights.get_shape()))
            values = math_ops.cast(weights, dtype)
        else:
            values = array_ops.ones_like(predictions, dtype)
        shape = math_ops.cast(array_ops.stack([num_classes, num_classes]), dtypes.int64)
        indices = array_ops.stack([labels, predictions], axis=1)
        return array_ops.scatter_nd(indices, values, shape)


__all__ = ["confusion_matrix"]
