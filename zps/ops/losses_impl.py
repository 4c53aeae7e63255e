"""TF1's loss functions (``tf.losses``, see zps/losses.py): weighting, reductions, the LOSSES collection.

Each loss computes per-element losses, multiplies them by ``weights`` (a scalar or a tensor
broadcastable to them), reduces them as ``reduction`` says and adds the result to
``loss_collection`` (``GraphKeys.LOSSES``), so ``get_total_loss()`` sums every loss of the model
with the variables' regularization losses. The default reduction, ``SUM_BY_NONZERO_WEIGHTS``,
is the weighted sum divided by the number of elements whose weight is not zero (0 when all are).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     loss = tf.losses.mean_squared_error([1.0, 2.0, 3.0], [1.0, 2.0, 5.0], weights=[1, 1, 0])
...     print(float(tf.Session().run(loss)))
0.0
"""

from zps.framework import dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.ops import array_ops, math_ops, nn_ops


class Reduction:
    """How a weighted loss is reduced (TF1's ``tf.losses.Reduction``)."""

    NONE = "none"                                   # the weighted per-element losses
    SUM = "weighted_sum"                            # their sum
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"   # sum / number of elements
    MEAN = "weighted_mean"                          # sum / sum of the weights
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"   # sum / non-zero weights
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %s." % key)


def _scope(scope, default):
    return get_default_graph().name_scope(scope or default)


def _broadcast_weights(weights, losses):
    return weights * array_ops.ones_like(losses)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``losses * weights``, reduced by ``reduction`` and added to ``loss_collection``."""
    Reduction.validate(reduction)
    with _scope(scope, "weighted_loss"):
        # As TF: the graph remembers the last reduction, for tf.distribute.get_loss_reduction()
        # (an Estimator's optimizer under a strategy scales only non-SUM losses by replicas).
        get_default_graph()._last_loss_reduction = reduction
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = math_ops.cast(losses, dtypes.float32)
        weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
        _check_weights(weights, losses)
        weighted = losses * weights
        loss = weighted if reduction == Reduction.NONE else math_ops.reduce_sum(weighted)
        if reduction == Reduction.MEAN:
            count = math_ops.reduce_sum(_broadcast_weights(weights, losses))
        elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
            present = math_ops.cast(math_ops.not_equal(weights, 0.0), dtypes.float32)
            count = math_ops.reduce_sum(_broadcast_weights(present, losses))
        elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
            count = math_ops.cast(array_ops.size(losses), dtypes.float32)
        else:   # NONE, SUM
            count = None
        if count is not None:
            loss = math_ops.div_no_nan(loss, count)
        loss = math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _check_weights(weights, losses):
    w, s = weights.get_shape(), losses.get_shape()
    if w.ndims is None or s.ndims is None or w.ndims == 0:
        return
    if w.ndims > s.ndims or any(
            a is not None and b is not None and a not in (1, b)
            for a, b in zip(reversed(w.as_list()), reversed(s.as_list()))):
        raise ValueError("weights can not be broadcast to values. values.shape=%s. "
                         "weights.shape=%s." % (s, w))


def _labels_and(predictions, labels, what):
    predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.float32)
    if not predictions.get_shape().is_compatible_with(labels.get_shape()):
        raise ValueError("%s: shapes %s (predictions) and %s (labels) are incompatible"
                         % (what, predictions.get_shape(), labels.get_shape()))
    return predictions, labels


def _loss(name, scope, weights, loss_collection, reduction, compute):
    with _scope(scope, name):
        return compute_weighted_loss(compute(), weights, None, loss_collection, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``|predictions - labels|``, weighted and reduced."""
    def compute():
        p, y = _labels_and(predictions, labels, "absolute_difference")
        return math_ops.abs(p - y)
    return _loss("absolute_difference", scope, weights, loss_collection, reduction, compute)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``(predictions - labels) ** 2``, weighted and reduced."""
    def compute():
        p, y = _labels_and(predictions, labels, "mean_squared_error")
        return math_ops.squared_difference(p, y)
    return _loss("mean_squared_error", scope, weights, loss_collection, reduction, compute)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``0.5 * e ** 2`` where ``|e| <= delta``, ``delta * (|e| - 0.5 * delta)`` beyond
    (``e = predictions - labels``), weighted and reduced."""
    def compute():
        p, y = _labels_and(predictions, labels, "huber_loss")
        error = math_ops.abs(p - y)
        quadratic = math_ops.minimum(error, delta)
        linear = error - quadratic
        return 0.5 * quadratic * quadratic + delta * linear
    return _loss("huber_loss", scope, weights, loss_collection, reduction, compute)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``-labels * log(p + epsilon) - (1 - labels) * log(1 - p + epsilon)``, weighted and
    reduced (``predictions`` are probabilities)."""
    def compute():
        p, y = _labels_and(predictions, labels, "log_loss")
        return -y * math_ops.log(p + epsilon) - (1.0 - y) * math_ops.log(1.0 - p + epsilon)
    return _loss("log_loss", scope, weights, loss_collection, reduction, compute)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``max(0, 1 - (2 * labels - 1) * logits)`` for labels in {0, 1}, weighted and reduced."""
    def compute():
        z, y = _labels_and(logits, labels, "hinge_loss")
        return nn_ops.relu(1.0 - (2.0 * y - 1.0) * z)
    return _loss("hinge_loss", scope, weights, loss_collection, reduction, compute)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """``1 - sum(predictions * labels, axis)`` of unit-normalized inputs, weighted and reduced."""
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify 'axis'.")

    def compute():
        p, y = _labels_and(predictions, labels, "cosine_distance")
        return 1.0 - math_ops.reduce_sum(p * y, axis=(axis,), keepdims=True)
    return _loss("cosine_distance_loss", scope, weights, loss_collection, reduction, compute)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross-entropy of independent labels in [0, 1] (smoothed toward 0.5 by
    ``label_smoothing``), weighted and reduced."""
    def compute():
        z, y = _labels_and(logits, multi_class_labels, "sigmoid_cross_entropy")
        if label_smoothing:
            y = y * (1.0 - label_smoothing) + 0.5 * label_smoothing
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=y, logits=z)
    return _loss("sigmoid_cross_entropy_loss", scope, weights, loss_collection, reduction,
                 compute)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy of one-hot (or probability) labels, smoothed toward uniform by
    ``label_smoothing``; ``weights`` are per example. No gradient flows into the labels."""
    def compute():
        z, y = _labels_and(logits, onehot_labels, "softmax_cross_entropy")
        if label_smoothing:
            classes = math_ops.cast(array_ops.shape(y)[-1], dtypes.float32)
            y = y * (1.0 - label_smoothing) + label_smoothing / classes
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=array_ops.stop_gradient(y),
                                                           logits=z)
    return _loss("softmax_cross_entropy_loss", scope, weights, loss_collection, reduction,
                 compute)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy of integer class ``labels``; ``weights`` are per example. Labels of
    shape ``[N, 1]`` against logits ``[N, C]`` are squeezed to ``[N]``, and so are weights of
    shape ``[N, 1]``, as in TF1."""
    with _scope(scope, "sparse_softmax_cross_entropy_loss"):
        ids, scores = _squeeze_class_ids(convert_to_tensor(labels), convert_to_tensor(logits))
        weights = convert_to_tensor(weights)
        if None not in (weights.get_shape().ndims, ids.get_shape().ndims) and \
                weights.get_shape().ndims == ids.get_shape().ndims + 1:
            weights = array_ops.squeeze(weights, [-1])
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(
            labels=ids, logits=math_ops.cast(scores, dtypes.float32))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def _squeeze_class_ids(labels, logits):
    """TF1's remove_squeezable_dimensions(expected_rank_diff=1), on static ranks: labels one
    rank too many with a last dimension of 1 are squeezed (so are logits one too many)."""
    labels_rank, logits_rank = labels.get_shape().ndims, logits.get_shape().ndims
    if labels_rank is not None and logits_rank is not None:
        if logits_rank == labels_rank >= 1 and labels.get_shape()[-1].is_compatible_with(1):
            labels = array_ops.squeeze(labels, [-1])
        elif logits_rank == labels_rank + 2 and logits.get_shape()[-1].is_compatible_with(1):
            logits = array_ops.squeeze(logits, [-1])
    return labels, logits


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Add ``loss`` to ``loss_collection`` (nothing when it is None)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    """The losses added to ``loss_collection`` (under ``scope``, a name prefix)."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The variables' regularization losses (``GraphKeys.REGULARIZATION_LOSSES``)."""
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses, or 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return convert_to_tensor(0.0, name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the losses (and, by default, the regularization losses); ValueError if there
    are none."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses to sum: build a loss with tf.losses (or add_loss) first.")
    return math_ops.add_n(losses, name=name)


# -- mean_pairwise_squared_error ---------------------------------------------------------------
# Per example (the first dimension), the mean over every pair of its elements i, j of
# ((p_i - p_j) - (l_i - l_j)) ** 2: a loss that ignores a shift common to all of an example's
# predictions. As TF1 computes it, in closed form from d = predictions - labels: with n the number
# of elements of the example whose weight is not zero, 2 * sum(d**2) / (n - 1) - 2 * sum(d)**2 /
# (n * (n - 1)); the examples' losses, times weights, are summed (not averaged) into the scalar.
def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=GraphKeys.LOSSES):
    """The pairwise squared error of ``predictions`` against ``labels`` (same shape, the first
    dimension the batch), summed over the examples, each weighted by ``weights`` (a scalar, or
    ``[batch]`` / ``[batch, 1, ...]``: broadcast against the examples' losses as TF1 does); an
    element whose weight is 0 is left out of its example's pair count. Float32; added to
    ``loss_collection``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     loss = tf.losses.mean_pairwise_squared_error([[0.0, 1.0, 3.0]], [[1.0, 1.0, 1.0]])
    ...     print(round(float(tf.Session().run(loss)), 4))   # (1-0)², (3-0)², (3-1)²: 14/3
    4.6667
    """
    if labels is None:
        raise ValueError("Argument `labels` must not be None.")
    if predictions is None:
        raise ValueError("Argument `predictions` must not be None.")
    with get_default_graph().name_scope(scope or "mean_pairwise_squared_error"):
        weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
        labels = math_ops.cast(convert_to_tensor(labels), dtypes.float32)
        predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
        if not predictions.get_shape().is_compatible_with(labels.get_shape()):
            raise ValueError("mean_pairwise_squared_error: shapes %s (predictions) and %s "
                             "(labels) are incompatible"
                             % (predictions.get_shape(), labels.get_shape()))
        _check_weights(weights, labels)
        diffs = predictions - labels
        rank = diffs.get_shape().ndims
        if rank is None:
            raise ValueError("mean_pairwise_squared_error needs labels of a known rank (each "
                             "example's elements are summed over dimensions 1..rank-1)")
        axis = list(range(1, rank))
        sum_squares = math_ops.reduce_sum(math_ops.square(diffs), axis=axis, keepdims=True)
        present = array_ops.where(math_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
                                  array_ops.ones_like(weights)) * array_ops.ones_like(diffs)
        num_present = math_ops.reduce_sum(present, axis=axis, keepdims=True)
        term1 = 2.0 * math_ops.div_no_nan(sum_squares, math_ops.maximum(num_present - 1, 0.0),
                                          name="value")
        sum_diff = math_ops.reduce_sum(diffs, axis=axis, keepdims=True)
        term2 = 2.0 * math_ops.div_no_nan(
            math_ops.square(sum_diff), math_ops.maximum(num_present * (num_present - 1), 0.0),
            name="value")
        loss = math_ops.reduce_sum((term1 - term2) * weights)
        mean_loss = array_ops.where(math_ops.reduce_sum(num_present) > 0, loss,
                                    array_ops.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "mean_squared_error",
           "huber_loss", "log_loss", "hinge_loss", "cosine_distance", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy", "add_loss", "get_losses",
           "get_regularization_losses", "get_regularization_loss", "get_total_loss",
           "mean_pairwise_squared_error"]
