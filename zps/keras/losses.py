"""``tf.keras.losses``: Keras's loss functions, each ``fn(y_true, y_pred)`` -> one loss per
example (the mean or sum over the last axis), as in TF's Keras; average them yourself
(``tf.reduce_mean``) for a training loss.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     loss = tf.keras.losses.mse(tf.constant([[0.0, 1.0]]), tf.constant([[1.0, 3.0]]))
...     print(tf.Session().run(loss))
[2.5]
"""

from zps.framework.graph import convert_to_tensor as _to_tensor
from zps.keras import backend
from zps.ops import array_ops, clip_ops, math_ops, nn_ops


def _pair(y_true, y_pred):
    y_pred = _to_tensor(y_pred)
    return math_ops.cast(y_true, y_pred.dtype), y_pred


def _clipped(x, low=None):
    eps = backend.epsilon()
    return clip_ops.clip_by_value(x, eps if low is None else low, 1.0 - eps)


def _logits_of(y_pred, op_type, from_logits):
    # TF 1.15's Keras takes the logits back from a softmax/sigmoid output (exact and stable).
    op = getattr(y_pred, "op", None)
    if not from_logits and op is not None and op.type == op_type and op.inputs:
        return op.inputs[0], True
    return y_pred, from_logits


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
    y_pred, from_logits = _logits_of(y_pred, "Softmax", from_logits)
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=y_pred)
    y_pred = y_pred / math_ops.reduce_sum(y_pred, axis=-1, keepdims=True)
    return -math_ops.reduce_sum(y_true * math_ops.log(_clipped(y_pred)), axis=-1)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """``-log(y_pred[y_true])`` per example, ``y_true`` integer class ids (with or without a
    trailing axis of 1), ``y_pred`` probabilities (clipped) or logits."""
    y_pred, from_logits = _logits_of(_to_tensor(y_pred), "Softmax", from_logits)
    logits = y_pred if from_logits else math_ops.log(_clipped(y_pred))
    labels = math_ops.cast(_to_tensor(y_true), "int64")
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
    y_pred, from_logits = _logits_of(y_pred, "Sigmoid", from_logits)
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
    error = y_pred - y_true
    abs_error, delta = math_ops.abs(error), math_ops.cast(delta, error.dtype)
    half = math_ops.cast(0.5, error.dtype)
    return math_ops.reduce_mean(array_ops.where(
        abs_error <= delta, half * math_ops.square(error),
        delta * abs_error - half * math_ops.square(delta)), axis=-1)


def logcosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, as ``x + softplus(-2x) - log(2)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    x = y_pred - y_true
    return math_ops.reduce_mean(x + nn_ops.softplus(-2.0 * x) -
                                math_ops.cast(math_ops.log(2.0), x.dtype), axis=-1)


def categorical_hinge(y_true, y_pred):
    """``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` per example."""
    y_true, y_pred = _pair(y_true, y_pred)
    pos = math_ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = math_ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, math_ops.cast(0.0, y_pred.dtype))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence
cosine = cosine_proximity = cosine_similarity
huber_loss = huber


class Reduction:
    """How a ``Loss`` object reduces the per-example losses: ``AUTO`` (= ``SUM_OVER_BATCH_SIZE``
    here), ``NONE`` (kept per example), ``SUM``, ``SUM_OVER_BATCH_SIZE`` (sum / number of
    elements)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        """The four reductions."""
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        """Raise ValueError when ``key`` is not a reduction."""
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %r: give one of %s" % (key, cls.all()))


def _squeeze_last(x, other):
    # Keras drops a trailing axis of 1 that makes x one rank above other (static ranks only).
    rank, other_rank = x.get_shape().ndims, other.get_shape().ndims
    if rank is not None and other_rank is not None and rank == other_rank + 1 and \
            x.get_shape().as_list()[-1] == 1:
        return array_ops.squeeze(x, [-1])
    return x


def _compute_weighted_loss(losses, sample_weight=None, reduction=Reduction.SUM_OVER_BATCH_SIZE):
    """``losses * sample_weight`` reduced as ``reduction`` says (Keras's losses_utils)."""
    Reduction.validate(reduction)
    losses = _to_tensor(losses)
    if reduction == Reduction.AUTO:
        reduction = Reduction.SUM_OVER_BATCH_SIZE
    if sample_weight is not None:
        sample_weight = math_ops.cast(sample_weight, losses.dtype)
        sample_weight = _squeeze_last(sample_weight, losses)
        if sample_weight.get_shape().ndims is not None and losses.get_shape().ndims is not None \
                and sample_weight.get_shape().ndims == losses.get_shape().ndims - 1:
            sample_weight = array_ops.expand_dims(sample_weight, -1)
        losses = math_ops.multiply(losses, sample_weight)
    if reduction == Reduction.NONE:
        return losses
    loss = math_ops.reduce_sum(losses)
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        loss = math_ops.div_no_nan(loss, math_ops.cast(array_ops.size(losses), losses.dtype))
    return loss


class Loss:
    """The base of Keras's loss objects: ``loss(y_true, y_pred, sample_weight=None)`` -> the
    reduced loss of ``call(y_true, y_pred)``'s per-example losses."""

    def __init__(self, reduction=Reduction.AUTO, name=None):
        Reduction.validate(reduction)
        self.reduction, self.name = reduction, name

    def __call__(self, y_true, y_pred, sample_weight=None):
        return _compute_weighted_loss(self.call(y_true, y_pred), sample_weight, self.reduction)

    def call(self, y_true, y_pred):
        """The per-example losses."""
        raise NotImplementedError("%s must define call(y_true, y_pred)" % type(self).__name__)

    def get_config(self):
        """``{"reduction", "name"}`` (and the loss function's own arguments)."""
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        """The loss object ``get_config`` describes."""
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A ``Loss`` object of a loss function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction, name)
        self.fn, self._fn_kwargs = fn, kwargs

    def call(self, y_true, y_pred):
        """``fn(y_true, y_pred, **kwargs)``, a trailing axis of 1 of either dropped first."""
        y_pred = _to_tensor(y_pred)
        y_true = _to_tensor(y_true)
        y_pred, y_true = _squeeze_last(y_pred, y_true), _squeeze_last(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        """``{"reduction", "name"}`` and the loss function's arguments."""
        return dict(self._fn_kwargs, **super().get_config())


def _fn_options(defaults, args, kwargs):
    """The keyword arguments a wrapper class gives its function: ``defaults``, overridden by
    the class's positional ``args`` (in the order of ``defaults``), then by ``kwargs``."""
    options = dict(defaults)
    options.update(zip(defaults, args))
    options.update(kwargs)
    return options


def _loss_class(class_name, fn, default_name, doc, **defaults):
    def __init__(self, *args, reduction=Reduction.AUTO, name=default_name, **kwargs):
        LossFunctionWrapper.__init__(self, fn, reduction, name,
                                     **_fn_options(defaults, args, kwargs))
    cls = type(class_name, (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc,
                                                    "__module__": __name__})
    cls.from_config = classmethod(lambda c, config: c(**config))
    return cls


MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error, "mean_squared_error",
                               "The mean of the squares of ``y_pred - y_true``.")
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                                "The mean of ``|y_pred - y_true|``.")
MeanAbsolutePercentageError = _loss_class(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "``100 * mean(|(y_true - y_pred) / y_true|)``.")
MeanSquaredLogarithmicError = _loss_class(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "The mean of ``(log(1 + y_pred) - log(1 + y_true))**2``.")
BinaryCrossentropy = _loss_class(
    "BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
    "Cross-entropy of 0/1 labels and probabilities (or logits: ``from_logits``).",
    from_logits=False, label_smoothing=0)
CategoricalCrossentropy = _loss_class(
    "CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
    "Cross-entropy of one-hot labels and class probabilities (or logits: ``from_logits``).",
    from_logits=False, label_smoothing=0)
SparseCategoricalCrossentropy = _loss_class(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    "Cross-entropy of integer labels and class probabilities (or logits: ``from_logits``).",
    from_logits=False)
Hinge = _loss_class("Hinge", hinge, "hinge", "``mean(max(1 - y_true * y_pred, 0))``.")
SquaredHinge = _loss_class("SquaredHinge", squared_hinge, "squared_hinge",
                           "``mean(max(1 - y_true * y_pred, 0)**2)``.")
CategoricalHinge = _loss_class("CategoricalHinge", categorical_hinge, "categorical_hinge",
                               "``max(neg - pos + 1, 0)`` of one-hot labels.")
Poisson = _loss_class("Poisson", poisson, "poisson", "``mean(y_pred - y_true * log(y_pred))``.")
LogCosh = _loss_class("LogCosh", logcosh, "logcosh", "``mean(log(cosh(y_pred - y_true)))``.")
KLDivergence = _loss_class("KLDivergence", kullback_leibler_divergence,
                           "kullback_leibler_divergence",
                           "``sum(y_true * log(y_true / y_pred))``.")
Huber = _loss_class("Huber", huber, "huber_loss",
                    "Squared error below ``delta``, linear above it.", delta=1.0)
CosineSimilarity = _loss_class("CosineSimilarity", cosine_similarity, "cosine_similarity",
                               "``-sum(l2_normalize(y_true) * l2_normalize(y_pred))``.",
                               axis=-1)

_CLASSES = ("BinaryCrossentropy", "CategoricalCrossentropy", "CategoricalHinge",
            "CosineSimilarity", "Hinge", "Huber", "KLDivergence", "LogCosh", "MeanAbsoluteError",
            "MeanAbsolutePercentageError", "MeanSquaredError", "MeanSquaredLogarithmicError",
            "Poisson", "SparseCategoricalCrossentropy", "SquaredHinge")
_FUNCTIONS = ("KLD", "MAE", "MAPE", "MSE", "MSLE", "binary_crossentropy",
              "categorical_crossentropy", "categorical_hinge", "cosine", "cosine_proximity",
              "cosine_similarity", "hinge", "huber", "huber_loss", "kld",
              "kullback_leibler_divergence", "logcosh", "mae", "mape", "mean_absolute_error",
              "mean_absolute_percentage_error", "mean_squared_error",
              "mean_squared_logarithmic_error", "mse", "msle", "poisson",
              "sparse_categorical_crossentropy", "squared_hinge")


def _deserialize(config, known, kind, base):
    """The object of ``known`` that ``config`` names (a class: an instance) or describes (a
    ``serialize`` dict); ``kind`` ("loss", "metric") and ``base`` (its class's name) tell what
    it should have been when it is neither."""
    name, options = ((config.get("class_name"), config.get("config", {}))
                     if isinstance(config, dict) else (config, {}))
    if name not in known:
        raise ValueError("Unknown %s function: %r (give a callable, a %s or one of %s)"
                         % (kind, name, base, ", ".join(sorted(known))))
    obj = known[name]
    return obj.from_config(options) if isinstance(obj, type) else obj


def deserialize(name, custom_objects=None):
    """The loss a name (a function's, or a class's: an instance) or a ``serialize`` dict of a
    loss object describes."""
    known = {n: globals()[n] for n in _CLASSES + _FUNCTIONS}
    known.update(custom_objects or {})
    return _deserialize(name, known, "loss", "Loss")


def get(identifier):
    """The loss ``identifier`` names (``"mse"``, ``"categorical_crossentropy"``,
    ``"MeanSquaredError"``...) or describes (a ``serialize`` dict), or ``identifier`` itself when
    it is a callable (a loss function or a ``Loss``)."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str | dict):
        return deserialize(identifier)
    raise ValueError("Could not interpret loss function identifier: %r" % (identifier,))


def serialize(loss):
    """The name of a loss function, or ``{"class_name", "config"}`` of a ``Loss`` object."""
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return loss.__name__


__all__ = list(_CLASSES + _FUNCTIONS) + ["Loss", "LossFunctionWrapper", "Reduction",
                                         "deserialize", "get", "serialize"]
