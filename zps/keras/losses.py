"""``tf.keras.losses``: Keras's loss functions, each ``fn(y_true, y_pred)`` -> one loss per
example (the mean or sum over the last axis), as in TF's Keras; average them yourself
(``tf.reduce_mean``) for a training loss.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     loss = tf.keras.losses.mse(tf.constant([[0.0, 1.0]]), tf.constant([[1.0, 3.0]]))
...     print(tf.Session().run(loss))
[2.5]
"""

from zps.framework.graph import convert_to_tensor
from zps.keras import backend
from zps.ops import array_ops, clip_ops, math_ops, nn_ops


def _pair(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    return math_ops.cast(y_true, y_pred.dtype), y_pred


def _clipped(x, low=None):
    eps = backend.epsilon()
    return clip_ops.clip_by_value(x, eps if low is None else low, 1.0 - eps)


def mean_squared_error(y_true, y_pred):
    """``mean((y_pred - y_true)**2, axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(|y_pred - y_true|, axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|(y_true - y_pred) / max(|y_true|, epsilon)|, axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    diff = math_ops.abs((y_true - y_pred) / math_ops.maximum(math_ops.abs(y_true),
                                                              backend.epsilon()))
    return 100.0 * math_ops.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2, axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()
    first = math_ops.log(math_ops.maximum(y_pred, eps) + 1.0)
    second = math_ops.log(math_ops.maximum(y_true, eps) + 1.0)
    return math_ops.reduce_mean(math_ops.square(first - second), axis=-1)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    """``-sum(y_true * log(y_pred), axis=-1)``, ``y_pred`` scaled to sum to 1 and clipped to
    ``[eps, 1 - eps]`` (or softmax cross-entropy of logits when ``from_logits``);
    ``label_smoothing`` mixes ``y_true`` with the uniform distribution."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        classes = math_ops.cast(array_ops.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=y_pred)
    y_pred = y_pred / math_ops.reduce_sum(y_pred, axis=-1, keepdims=True)
    return -math_ops.reduce_sum(y_true * math_ops.log(_clipped(y_pred)), axis=-1)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """``-log(y_pred[y_true])`` per example, ``y_true`` integer class ids (with or without a
    trailing axis of 1), ``y_pred`` probabilities (clipped) or logits."""
    y_pred = convert_to_tensor(y_pred)
    logits = y_pred if from_logits else math_ops.log(_clipped(y_pred))
    labels = math_ops.cast(convert_to_tensor(y_true), "int64")
    if labels.get_shape().ndims is not None and logits.get_shape().ndims is not None and \
            labels.get_shape().ndims == logits.get_shape().ndims:
        labels = array_ops.squeeze(labels, [-1])
    return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    """``mean(-(y log p + (1 - y) log(1 - p)), axis=-1)``, ``p`` clipped to ``[eps, 1 - eps]``
    (or sigmoid cross-entropy of logits when ``from_logits``)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        eps = backend.epsilon()
        p = _clipped(y_pred)
        losses = -(y_true * math_ops.log(p + eps) + (1.0 - y_true) * math_ops.log(1.0 - p + eps))
    return math_ops.reduce_mean(losses, axis=-1)


def hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0), axis=-1)``, labels 0/1 made -1/1 first."""
    y_true, y_pred = _pair(y_true, y_pred)
    binary = math_ops.reduce_all(math_ops.logical_or(math_ops.equal(y_true, 0.0),
                                                     math_ops.equal(y_true, 1.0)))
    y_true = array_ops.where(binary, 2.0 * y_true - 1.0, y_true)
    return math_ops.reduce_mean(math_ops.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0)**2, axis=-1)``, labels 0/1 made -1/1 first."""
    y_true, y_pred = _pair(y_true, y_pred)
    binary = math_ops.reduce_all(math_ops.logical_or(math_ops.equal(y_true, 0.0),
                                                     math_ops.equal(y_true, 1.0)))
    y_true = array_ops.where(binary, 2.0 * y_true - 1.0, y_true)
    return math_ops.reduce_mean(math_ops.square(math_ops.maximum(1.0 - y_true * y_pred, 0.0)),
                                axis=-1)


def kullback_leibler_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[eps, 1]``."""
    y_true, y_pred = _pair(y_true, y_pred)
    eps = backend.epsilon()
    y_true = clip_ops.clip_by_value(y_true, eps, 1.0)
    y_pred = clip_ops.clip_by_value(y_pred, eps, 1.0)
    return math_ops.reduce_sum(y_true * math_ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(y_pred - y_true * math_ops.log(y_pred + backend.epsilon()),
                                axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``: -1 for the same direction."""
    y_true, y_pred = _pair(y_true, y_pred)
    return -math_ops.reduce_sum(nn_ops.l2_normalize(y_true, axis) *
                                nn_ops.l2_normalize(y_pred, axis), axis=axis)


def huber(y_true, y_pred, delta=1.0):
    """``mean(0.5 e**2 if |e| <= delta else delta * |e| - 0.5 delta**2, axis=-1)``,
    ``e = y_pred - y_true``."""
    y_true, y_pred = _pair(y_true, y_pred)
    error = math_ops.abs(y_pred - y_true)
    return math_ops.reduce_mean(array_ops.where(error <= delta, 0.5 * math_ops.square(error),
                                                delta * error - 0.5 * delta ** 2), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence
cosine = cosine_proximity = cosine_similarity
huber_loss = huber


def get(identifier):
    """The loss function ``identifier`` names (``"mse"``, ``"categorical_crossentropy"``...),
    or ``identifier`` itself when it is a callable."""
    if callable(identifier):
        return identifier
    fn = globals().get(identifier) if isinstance(identifier, str) else None
    if identifier in __all__ and callable(fn) and identifier not in ("get", "serialize"):
        return fn
    raise ValueError("Unknown loss function: %r (give a callable or one of %s)"
                     % (identifier, ", ".join(n for n in __all__ if n not in ("get",
                                                                               "serialize"))))


def serialize(loss):
    """The name of the loss function ``loss``."""
    return loss.__name__


__all__ = ["KLD", "MAE", "MAPE", "MSE", "MSLE", "binary_crossentropy", "categorical_crossentropy",
           "cosine", "cosine_proximity", "cosine_similarity", "get", "hinge", "huber",
           "huber_loss", "kld", "kullback_leibler_divergence", "mae", "mape",
           "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
           "mean_squared_logarithmic_error", "mse", "msle", "poisson", "serialize",
           "sparse_categorical_crossentropy", "squared_hinge"]
