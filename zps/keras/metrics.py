"""``tf.keras.metrics`` as TF 1.15's graph-mode Keras has them: stateful ``Metric`` objects
(``update_state(...)`` -> the update op, ``result()`` -> the value tensor, ``reset_states()``
zeroes the state in Keras's session, ``metric(...)`` = update then result) over metric
variables (in ``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``: ``tf.local_variables_initializer()``
starts them), and Keras's metric functions (``binary_accuracy``, ``categorical_accuracy``...),
each ``fn(y_true, y_pred)`` -> one value per example.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     acc = tf.keras.metrics.BinaryAccuracy()
...     update = acc.update_state([[1.0], [0.0]], [[0.9], [0.8]])
...     with tf.Session() as sess:
...         sess.run(tf.local_variables_initializer())
...         sess.run(update)
...         print(sess.run(acc.result()))
0.5
"""

import re

import numpy as np

from zps.framework import dtypes
from zps.framework import graph as framework
from zps.keras import backend
from zps.keras import losses as _losses
from zps.ops import array_ops, confusion_matrix, control_flow_ops, math_ops, nn_ops, state_ops, variables

# Keras's loss functions are metric functions too (one value per example).
KLD, MAE, MAPE, MSE, MSLE = _losses.KLD, _losses.MAE, _losses.MAPE, _losses.MSE, _losses.MSLE
kld, mae, mape, mse, msle = _losses.kld, _losses.mae, _losses.mape, _losses.mse, _losses.msle
binary_crossentropy = _losses.binary_crossentropy
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy
hinge, squared_hinge = _losses.hinge, _losses.squared_hinge
kullback_leibler_divergence, poisson = _losses.kullback_leibler_divergence, _losses.poisson
mean_squared_error, mean_absolute_error = _losses.mean_squared_error, _losses.mean_absolute_error
mean_absolute_percentage_error = _losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = _losses.mean_squared_logarithmic_error

def _floatx(x):
    return math_ops.cast(x, backend.floatx())


def _accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` (``y_pred`` cast to ``y_true``'s type), else 0.0."""
    y_true, y_pred = framework.convert_to_tensor(y_true), framework.convert_to_tensor(y_pred)
    if y_true.dtype != y_pred.dtype:
        y_pred = math_ops.cast(y_pred, y_true.dtype)
    return _floatx(math_ops.equal(y_true, y_pred))


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """The fraction of ``(y_pred > threshold) == y_true`` over the last axis."""
    y_pred = framework.convert_to_tensor(y_pred)
    y_true = math_ops.cast(y_true, y_pred.dtype)
    y_pred = math_ops.cast(y_pred > math_ops.cast(threshold, y_pred.dtype), y_pred.dtype)
    return math_ops.reduce_mean(_floatx(math_ops.equal(y_true, y_pred)), axis=-1)


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_true) == argmax(y_pred)`` (one-hot labels), else 0.0."""
    return _floatx(math_ops.equal(math_ops.argmax(y_true, -1), math_ops.argmax(y_pred, -1)))


def _sparse_labels(y_true, y_pred):
    y_true, y_pred = framework.convert_to_tensor(y_true), framework.convert_to_tensor(y_pred)
    if y_true.get_shape().ndims is not None and \
            y_true.get_shape().ndims == y_pred.get_shape().ndims:
        y_true = array_ops.squeeze(y_true, [-1])
    return y_true, y_pred


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label ``y_true`` is ``argmax(y_pred)``, else 0.0."""
    y_true, y_pred = _sparse_labels(y_true, y_pred)
    predicted = math_ops.argmax(y_pred, -1)
    if predicted.dtype != y_true.dtype:
        predicted = math_ops.cast(predicted, y_true.dtype)
    return _floatx(math_ops.equal(y_true, predicted))


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where ``argmax(y_true)`` is among the ``k`` largest ``y_pred``, else 0.0."""
    return _floatx(nn_ops.in_top_k(y_pred, math_ops.argmax(y_true, -1), k))


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the integer label ``y_true`` is among the ``k`` largest ``y_pred``, else 0.0."""
    y_true, y_pred = _sparse_labels(y_true, y_pred)
    return _floatx(nn_ops.in_top_k(y_pred, math_ops.cast(y_true, dtypes.int32), k))




class Metric:
    """The base of Keras's metrics: state variables made with ``add_weight``,
    ``update_state(...)`` -> an op, ``result()`` -> a tensor, ``reset_states()``."""

    def __init__(self, name=None, dtype=None):
        self.name = name or backend.unique_object_name(_snake(type(self).__name__))
        self.dtype = dtypes.as_dtype(dtype or backend.floatx())
        self._weights = {}   # graph -> {name: variable}, made by build()

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)``, then ``result()`` after it."""
        update = self.update_state(*args, **kwargs)
        with framework.get_default_graph().control_dependencies([update]):
            return array_ops.identity(self.result())

    def add_weight(self, name, shape=(), dtype=None, initializer="zeros"):
        """A zero-initialized (or ``initializer``) metric variable of the default graph."""
        graph = framework.get_default_graph()
        dtype = dtypes.as_dtype(dtype or self.dtype)
        value = np.zeros(shape, dtype.as_numpy_dtype)
        if initializer not in ("zeros", None):
            value = np.asarray(initializer, dtype.as_numpy_dtype) + value
        with graph.control_dependencies(None), graph.name_scope(self.name + "/"):
            v = variables.Variable(value, trainable=False, dtype=dtype, name=name,
                                   collections=[framework.GraphKeys.LOCAL_VARIABLES,
                                                framework.GraphKeys.METRIC_VARIABLES])
        self._weights.setdefault(graph, {})[name] = v
        return v

    def _state(self):
        graph = framework.get_default_graph()
        if graph not in self._weights:
            self.build()
        return self._weights[graph]

    def build(self):
        """Make the state variables (``add_weight``) in the default graph."""

    @property
    def variables(self):
        """The metric's variables in the default graph."""
        return list(self._state().values())

    weights = variables

    def reset_states(self):
        """Set every state variable back to 0 (in Keras's session, ``backend.get_session()``)."""
        backend.batch_set_value([(v, np.zeros(v.get_shape().as_list(),
                                              v.dtype.base_dtype.as_numpy_dtype))
                                 for v in self.variables])

    def update_state(self, *args, **kwargs):
        """The op that adds a batch to the state."""
        raise NotImplementedError("%s must define update_state" % type(self).__name__)

    def result(self):
        """The metric's value from its state."""
        raise NotImplementedError("%s must define result" % type(self).__name__)

    def get_config(self):
        """``{"name", "dtype"}``."""
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config):
        """The metric ``get_config`` describes."""
        return cls(**config)


def _snake(name):
    """Keras's to_snake_case: "AUC" -> "auc", "TruePositives" -> "true_positives"."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake if snake[0] != "_" else "private" + snake


def _weighted(values, sample_weight):
    """``(values * weight, weight broadcast to values)``, a trailing axis of 1 of the weight
    dropped or one added to fit (Keras's squeeze_or_expand_dimensions)."""
    sample_weight = math_ops.cast(sample_weight, values.dtype)
    sample_weight = _losses._squeeze_last(sample_weight, values)
    rank, weight_rank = values.get_shape().ndims, sample_weight.get_shape().ndims
    if rank is not None and weight_rank is not None and weight_rank < rank:
        for _ in range(rank - weight_rank):
            sample_weight = array_ops.expand_dims(sample_weight, -1)
    sample_weight = sample_weight * array_ops.ones_like(values)
    return math_ops.multiply(values, sample_weight), sample_weight


class _Reduce(Metric):
    def __init__(self, reduction, name=None, dtype=None):
        super().__init__(name, dtype)
        self._reduction = reduction

    def build(self):
        self.add_weight("total")
        if self._reduction != "sum":
            self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        """Add the sum of ``values`` (times ``sample_weight``) to ``total`` (and their number
        or total weight to ``count``)."""
        state = self._state()
        values = math_ops.cast(values, self.dtype)
        weights = None
        if sample_weight is not None:
            values, weights = _weighted(values, sample_weight)
        update_total = state_ops.assign_add(state["total"], math_ops.reduce_sum(values))
        if self._reduction == "sum":
            return update_total.op
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), self.dtype)
        else:
            num_values = math_ops.reduce_sum(weights)
        with framework.get_default_graph().control_dependencies([update_total]):
            return state_ops.assign_add(state["count"], num_values).op

    def result(self):
        """``total`` (Sum) or ``total / count`` (Mean; 0 before any value)."""
        state = self._state()
        if self._reduction == "sum":
            return array_ops.identity(state["total"])
        return math_ops.div_no_nan(state["total"], state["count"])


class Sum(_Reduce):
    """The (weighted) sum of every value given."""

    def __init__(self, name="sum", dtype=None):
        super().__init__("sum", name, dtype)


class Mean(_Reduce):
    """The (weighted) mean of every value given."""

    def __init__(self, name="mean", dtype=None):
        super().__init__("weighted_mean", name, dtype)


class _MeanMetricWrapper(Mean):
    """The mean of a metric function's per-example values: ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add ``fn(y_true, y_pred)``'s values (times ``sample_weight``) to the mean."""
        y_true = math_ops.cast(y_true, self.dtype)
        y_pred = math_ops.cast(y_pred, self.dtype)
        y_pred, y_true = _losses._squeeze_last(y_pred, y_true), _losses._squeeze_last(y_true,
                                                                                    y_pred)
        return super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)

    def get_config(self):
        """``{"name", "dtype"}`` and the function's arguments."""
        return dict(self._fn_kwargs, **super().get_config())


def _wrapper(class_name, fn, default_name, doc, **defaults):
    def __init__(self, *args, name=default_name, dtype=None, **kwargs):
        _MeanMetricWrapper.__init__(self, fn, name, dtype,
                                    **_losses._fn_options(defaults, args, kwargs))
    return type(class_name, (_MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc,
                                                   "__module__": __name__})


Accuracy = _wrapper("Accuracy", _accuracy, "accuracy",
                    "How often ``y_pred`` equals ``y_true``.")
BinaryAccuracy = _wrapper("BinaryAccuracy", binary_accuracy, "binary_accuracy",
                          "How often ``y_pred > threshold`` equals the 0/1 ``y_true``.",
                          threshold=0.5)
CategoricalAccuracy = _wrapper("CategoricalAccuracy", categorical_accuracy,
                               "categorical_accuracy",
                               "How often ``argmax(y_pred)`` is the one-hot label's class.")
SparseCategoricalAccuracy = _wrapper("SparseCategoricalAccuracy", sparse_categorical_accuracy,
                                     "sparse_categorical_accuracy",
                                     "How often ``argmax(y_pred)`` is the integer label.")
TopKCategoricalAccuracy = _wrapper("TopKCategoricalAccuracy", top_k_categorical_accuracy,
                                   "top_k_categorical_accuracy",
                                   "How often the one-hot label is in the top ``k``.", k=5)
SparseTopKCategoricalAccuracy = _wrapper(
    "SparseTopKCategoricalAccuracy", sparse_top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy", "How often the integer label is in the top ``k``.",
    k=5)
MeanSquaredError = _wrapper("MeanSquaredError", mean_squared_error, "mean_squared_error",
                            "The mean of the per-example mean squared errors.")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                             "The mean of the per-example mean absolute errors.")
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "The mean of the per-example mean absolute % errors.")
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "The mean of the per-example squared log errors.")
BinaryCrossentropy = _wrapper("BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
                              "The mean binary cross-entropy.", from_logits=False,
                              label_smoothing=0)
CategoricalCrossentropy = _wrapper("CategoricalCrossentropy", categorical_crossentropy,
                                   "categorical_crossentropy",
                                   "The mean categorical cross-entropy.", from_logits=False,
                                   label_smoothing=0)
SparseCategoricalCrossentropy = _wrapper(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy", "The mean sparse categorical cross-entropy.",
    from_logits=False, axis=-1)
Hinge = _wrapper("Hinge", hinge, "hinge", "The mean hinge loss.")
SquaredHinge = _wrapper("SquaredHinge", squared_hinge, "squared_hinge",
                        "The mean squared hinge loss.")
CategoricalHinge = _wrapper("CategoricalHinge", _losses.categorical_hinge, "categorical_hinge",
                            "The mean categorical hinge loss.")
KLDivergence = _wrapper("KLDivergence", kullback_leibler_divergence,
                        "kullback_leibler_divergence", "The mean KL divergence.")
Poisson = _wrapper("Poisson", poisson, "poisson", "The mean Poisson loss.")
LogCoshError = _wrapper("LogCoshError", _losses.logcosh, "logcosh", "The mean log-cosh error.")


def _cosine(y_true, y_pred, axis=-1):
    # The metric is the similarity itself (the loss is its negative).
    y_true, y_pred = nn_ops.l2_normalize(y_true, axis), nn_ops.l2_normalize(y_pred, axis)
    return math_ops.reduce_sum(y_true * y_pred, axis=axis)


CosineSimilarity = _wrapper("CosineSimilarity", _cosine, "cosine_similarity",
                            "The mean cosine similarity of ``y_true`` and ``y_pred``.", axis=-1)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the (weighted) mean of the squared errors."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add the squared errors (times ``sample_weight``) to the mean."""
        y_true = math_ops.cast(y_true, self.dtype)
        y_pred = math_ops.cast(y_pred, self.dtype)
        y_pred, y_true = _losses._squeeze_last(y_pred, y_true), _losses._squeeze_last(y_true,
                                                                                    y_pred)
        return super().update_state(math_ops.squared_difference(y_pred, y_true), sample_weight)

    def result(self):
        """``sqrt(total / count)``."""
        return math_ops.sqrt(super().result())



class MeanRelativeError(Mean):
    """The (weighted) mean of ``|y_true - y_pred| / normalizer``."""

    def __init__(self, normalizer, name=None, dtype=None):
        super().__init__(name or "mean_relative_error", dtype)
        self.normalizer = normalizer

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add the relative errors (times ``sample_weight``) to the mean."""
        y_true = math_ops.cast(y_true, self.dtype)
        y_pred = math_ops.cast(y_pred, self.dtype)
        y_pred, y_true = _losses._squeeze_last(y_pred, y_true), _losses._squeeze_last(y_true,
                                                                                    y_pred)
        normalizer = math_ops.cast(self.normalizer, self.dtype)
        return super().update_state(math_ops.div_no_nan(math_ops.abs(y_true - y_pred),
                                                        normalizer), sample_weight)

    def get_config(self):
        """``{"normalizer", "name", "dtype"}``."""
        normalizer = self.normalizer
        return dict(super().get_config(), normalizer=normalizer.tolist()
                    if isinstance(normalizer, np.ndarray) else normalizer)


class MeanTensor(Metric):
    """The elementwise (weighted) mean of every tensor given (all of one shape)."""

    def __init__(self, name="mean_tensor", dtype=None):
        super().__init__(name, dtype)

    def update_state(self, values, sample_weight=None):
        """Add ``values`` (times ``sample_weight``) to ``total`` and the weights to ``count``."""
        values = math_ops.cast(values, self.dtype)
        graph = framework.get_default_graph()
        if graph not in self._weights:
            shape = values.get_shape()
            if not shape.is_fully_defined():
                raise ValueError("MeanTensor needs values of a known shape, got %s" % (shape,))
            self.add_weight("total", shape.as_list())
            self.add_weight("count", shape.as_list())
        state = self._weights[graph]
        if sample_weight is None:
            num_values = array_ops.ones_like(values)
        else:
            values, num_values = _weighted(values, sample_weight)
        update_total = state_ops.assign_add(state["total"], values)
        with graph.control_dependencies([update_total]):
            return state_ops.assign_add(state["count"], num_values).op

    def _state(self):
        graph = framework.get_default_graph()
        if graph not in self._weights:
            raise ValueError("MeanTensor has no state yet: call update_state first (its shape "
                             "comes from the first values)")
        return self._weights[graph]

    def result(self):
        """``total / count`` elementwise."""
        state = self._state()
        return math_ops.div_no_nan(state["total"], state["count"])


class MeanIoU(Metric):
    """The mean over classes of intersection over union, ``tp / (tp + fp + fn)``, from a
    ``num_classes`` x ``num_classes`` confusion matrix (classes never seen left out)."""

    def __init__(self, num_classes, name=None, dtype=None):
        super().__init__(name or "mean_io_u", dtype)
        self.num_classes = num_classes

    def build(self):
        self.add_weight("total_confusion_matrix", (self.num_classes, self.num_classes),
                        dtype=dtypes.float64)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add the batch's (weighted) confusion matrix of integer labels and predictions."""
        state = self._state()
        y_true = array_ops.reshape(math_ops.cast(y_true, self.dtype), [-1])
        y_pred = array_ops.reshape(math_ops.cast(y_pred, self.dtype), [-1])
        if sample_weight is not None:
            sample_weight = array_ops.reshape(math_ops.cast(sample_weight, self.dtype), [-1])
        matrix = confusion_matrix.confusion_matrix(y_true, y_pred, self.num_classes,
                                                   weights=sample_weight, dtype=dtypes.float64)
        return state_ops.assign_add(state["total_confusion_matrix"], matrix).op

    def result(self):
        """The mean IoU of the classes seen."""
        total = self._state()["total_confusion_matrix"]
        sum_over_row = math_ops.cast(math_ops.reduce_sum(total, axis=0), self.dtype)
        sum_over_col = math_ops.cast(math_ops.reduce_sum(total, axis=1), self.dtype)
        true_positives = math_ops.cast(array_ops.diag_part(total), self.dtype)
        denominator = sum_over_row + sum_over_col - true_positives
        num_valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0),
                                                      self.dtype))
        iou = math_ops.div_no_nan(true_positives, denominator)
        return math_ops.div_no_nan(math_ops.reduce_sum(iou), num_valid)

    def get_config(self):
        """``{"num_classes", "name", "dtype"}``."""
        return dict(super().get_config(), num_classes=self.num_classes)

_EPSILON = 1e-7   # AUC's end thresholds: 0 - eps and 1 + eps


class _ConfusionMatrix(Metric):
    """Counts of (label, prediction > threshold) outcomes per threshold (Keras's
    metrics_utils.update_confusion_matrix_variables)."""

    _COUNTS = ()

    def __init__(self, thresholds, name=None, dtype=None):
        super().__init__(name, dtype)
        single = thresholds is None or np.ndim(thresholds) == 0
        self._single = single
        self.thresholds = [0.5 if thresholds is None else float(thresholds)] if single else \
            [float(t) for t in thresholds]
        for t in self.thresholds:
            if not 0 <= t <= 1 and not self._allow_outside:
                raise ValueError("Threshold values must be in [0, 1]. Invalid values: %s"
                                 % (t,))

    _allow_outside = False

    def build(self):
        for name in self._COUNTS:
            self.add_weight(name, shape=(len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add this batch's counts (predictions as probabilities, labels 0/1 or bool)."""
        state = self._state()
        y_true = math_ops.cast(y_true, dtypes.float32)
        y_pred = math_ops.cast(y_pred, dtypes.float32)
        y_pred, y_true = _losses._squeeze_last(y_pred, y_true), _losses._squeeze_last(y_true,
                                                                                    y_pred)
        preds = array_ops.reshape(y_pred, [1, -1])
        labels = array_ops.reshape(math_ops.cast(y_true, dtypes.bool), [1, -1])
        thresholds = array_ops.reshape(framework.convert_to_tensor(self.thresholds, dtypes.float32),
                                       [-1, 1])
        pred_is_pos = math_ops.greater(preds, thresholds)
        outcome = {"true_positives": (labels, pred_is_pos),
                   "false_positives": (math_ops.logical_not(labels), pred_is_pos),
                   "true_negatives": (math_ops.logical_not(labels),
                                      math_ops.logical_not(pred_is_pos)),
                   "false_negatives": (labels, math_ops.logical_not(pred_is_pos))}
        weights = None
        if sample_weight is not None:
            _, weights = _weighted(y_pred, sample_weight)
            weights = array_ops.reshape(weights, [1, -1])
        updates = []
        for name in self._COUNTS:
            label, pred = outcome[name]
            hits = math_ops.cast(math_ops.logical_and(label, pred), dtypes.float32)
            if weights is not None:
                hits = hits * weights
            updates.append(state_ops.assign_add(state[name], math_ops.reduce_sum(hits, 1)).op)
        return control_flow_ops.group(*updates)

    def _value(self, tensor):
        return tensor[0] if self._single else tensor

    def get_config(self):
        """``{"thresholds", "name", "dtype"}``."""
        return dict(super().get_config(), thresholds=self.thresholds[0] if self._single
                    else list(self.thresholds))


def _count_class(class_name, count):
    def result(self):
        return array_ops.identity(self._value(self._state()[count]))

    def __init__(self, thresholds=None, name=None, dtype=None):
        _ConfusionMatrix.__init__(self, thresholds, name, dtype)
    return type(class_name, (_ConfusionMatrix,), {
        "__init__": __init__, "result": result, "_COUNTS": (count,), "__module__": __name__,
        "__doc__": "The (weighted) number of %s at each threshold (0.5 by default)."
                   % count.replace("_", " ")})


TruePositives = _count_class("TruePositives", "true_positives")
FalsePositives = _count_class("FalsePositives", "false_positives")
TrueNegatives = _count_class("TrueNegatives", "true_negatives")
FalseNegatives = _count_class("FalseNegatives", "false_negatives")


class Precision(_ConfusionMatrix):
    """``tp / (tp + fp)`` at each threshold (0.5 by default)."""

    _COUNTS = ("true_positives", "false_positives")

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if top_k is not None or class_id is not None:
            raise NotImplementedError("zps's tf.keras.metrics.%s does not take top_k or class_id:"
                                      " slice y_true/y_pred yourself" % type(self).__name__)
        super().__init__(thresholds, name, dtype)

    def result(self):
        """``tp / (tp + fp)`` (0 when there are no positive predictions)."""
        state = self._state()
        tp, other = state[self._COUNTS[0]], state[self._COUNTS[1]]
        return self._value(math_ops.div_no_nan(tp, tp + other))


class Recall(Precision):
    """``tp / (tp + fn)`` at each threshold (0.5 by default)."""

    _COUNTS = ("true_positives", "false_negatives")


class _SensitivitySpecificity(_ConfusionMatrix):
    """A rate at the threshold where another rate is closest to ``value`` (TF 1.15's rule: the
    first of ``num_thresholds`` thresholds evenly in [0, 1] minimizing the distance)."""

    _COUNTS = ("true_positives", "true_negatives", "false_positives", "false_negatives")
    _GIVEN = ""

    def __init__(self, value, num_thresholds=200, name=None, dtype=None):
        if not 0 <= value <= 1:
            raise ValueError("`%s` must be in the range [0, 1]." % self._GIVEN)
        self.value, self.num_thresholds = value, num_thresholds
        if num_thresholds == 1:
            thresholds = [0.5]
        else:
            thresholds = [0.0] + [(i + 1) * 1.0 / (num_thresholds - 1)
                                  for i in range(num_thresholds - 2)] + [1.0]
        super().__init__(thresholds, name, dtype)

    def _rate_at_closest(self, given_hits, given_misses, hits, misses):
        s = self._state()
        given = math_ops.div_no_nan(s[given_hits], s[given_hits] + s[given_misses])
        index = math_ops.cast(math_ops.argmin(math_ops.abs(given - self.value), axis=0),
                              dtypes.int32)
        return math_ops.div_no_nan(s[hits][index], s[hits][index] + s[misses][index])

    def get_config(self):
        """``{"num_thresholds", the given rate, "name", "dtype"}``."""
        return {"num_thresholds": self.num_thresholds, self._GIVEN: self.value,
                "name": self.name, "dtype": self.dtype.name}


class SensitivityAtSpecificity(_SensitivitySpecificity):
    """Sensitivity ``tp / (tp + fn)`` at the threshold whose specificity ``tn / (tn + fp)`` is
    closest to ``specificity``."""

    _GIVEN = "specificity"

    def __init__(self, specificity, num_thresholds=200, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, name, dtype)

    def result(self):
        """The sensitivity there."""
        return self._rate_at_closest("true_negatives", "false_positives", "true_positives",
                                     "false_negatives")


class SpecificityAtSensitivity(_SensitivitySpecificity):
    """Specificity ``tn / (tn + fp)`` at the threshold whose sensitivity ``tp / (tp + fn)`` is
    closest to ``sensitivity``."""

    _GIVEN = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, name, dtype)

    def result(self):
        """The specificity there."""
        return self._rate_at_closest("true_positives", "false_negatives", "true_negatives",
                                     "false_positives")

class AUC(_ConfusionMatrix):
    """The area under the ROC (or PR) curve, by Riemann sums over ``num_thresholds``
    thresholds (Keras's approximation: ``trapezoidal`` ROC, ``interpolation`` PR)."""

    _COUNTS = ("true_positives", "true_negatives", "false_positives", "false_negatives")
    _allow_outside = True

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, thresholds=None, dtype=None):
        if curve not in ("ROC", "PR"):
            raise ValueError('Invalid AUC curve value "%s": give "ROC" or "PR"' % (curve,))
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError('Invalid AUC summation method value "%s": give "interpolation", '
                             '"minoring" or "majoring"' % (summation_method,))
        if thresholds is None:
            if num_thresholds <= 1:
                raise ValueError("`num_thresholds` must be > 1.")
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            thresholds = list(thresholds)
        self.num_thresholds = len(thresholds) + 2
        self.curve, self.summation_method = curve, summation_method
        super().__init__([0.0 - _EPSILON] + thresholds + [1.0 + _EPSILON], name, dtype)

    def result(self):
        """The area, by the curve's Riemann sum."""
        s = self._state()
        tp, tn = s["true_positives"], s["true_negatives"]
        fp, fn = s["false_positives"], s["false_negatives"]
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc(tp, fp, fn)
        recall = math_ops.div_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = math_ops.div_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, math_ops.div_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = math_ops.minimum(y[:n - 1], y[1:])
        else:
            heights = math_ops.maximum(y[:n - 1], y[1:])
        return math_ops.reduce_sum(math_ops.multiply(x[:n - 1] - x[1:], heights))

    def _interpolate_pr_auc(self, tp, fp, fn):
        n = self.num_thresholds
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        prec_slope = math_ops.div_no_nan(dtp, math_ops.maximum(dp, 0.0))
        intercept = tp[1:] - math_ops.multiply(prec_slope, p[1:])
        safe_p_ratio = array_ops.where(
            math_ops.logical_and(p[:n - 1] > 0, p[1:] > 0),
            math_ops.div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0.0)),
            array_ops.ones_like(p[1:]))
        increment = math_ops.div_no_nan(
            prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
            math_ops.maximum(tp[1:] + fn[1:], 0.0))
        return math_ops.reduce_sum(increment)

    def get_config(self):
        """``{"num_thresholds", "curve", "summation_method", "thresholds", "name", "dtype"}``."""
        return {"num_thresholds": self.num_thresholds, "curve": self.curve,
                "summation_method": self.summation_method,
                "thresholds": list(self.thresholds[1:-1]), "name": self.name,
                "dtype": self.dtype.name}


_CLASSES = ("AUC", "Accuracy", "BinaryAccuracy", "BinaryCrossentropy", "CategoricalAccuracy",
            "CategoricalCrossentropy", "CategoricalHinge", "CosineSimilarity", "FalseNegatives",
            "FalsePositives", "Hinge", "KLDivergence", "LogCoshError", "Mean",
            "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanIoU", "MeanRelativeError",
            "MeanSquaredError", "MeanSquaredLogarithmicError", "MeanTensor", "Metric",
            "Poisson", "Precision", "Recall", "RootMeanSquaredError",
            "SensitivityAtSpecificity", "SparseCategoricalAccuracy",
            "SparseCategoricalCrossentropy", "SparseTopKCategoricalAccuracy",
            "SpecificityAtSensitivity", "SquaredHinge", "Sum", "TopKCategoricalAccuracy",
            "TrueNegatives", "TruePositives")
_FUNCTIONS = ("KLD", "MAE", "MAPE", "MSE", "MSLE", "binary_accuracy", "binary_crossentropy",
              "categorical_accuracy", "categorical_crossentropy", "hinge", "kld",
              "kullback_leibler_divergence", "mae", "mape", "mean_absolute_error",
              "mean_absolute_percentage_error", "mean_squared_error",
              "mean_squared_logarithmic_error", "mse", "msle", "poisson",
              "sparse_categorical_accuracy", "sparse_categorical_crossentropy",
              "sparse_top_k_categorical_accuracy", "squared_hinge", "top_k_categorical_accuracy")
_ALIASES = {"acc": _accuracy, "accuracy": _accuracy, "ACC": _accuracy,
            "bce": binary_crossentropy, "BCE": binary_crossentropy,
            "cosine_proximity": _losses.cosine_similarity,
            "cosine_similarity": _losses.cosine_similarity}


def serialize(metric):
    """The name of a metric function, or ``{"class_name", "config"}`` of a ``Metric``."""
    if isinstance(metric, Metric):
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    return metric.__name__


def deserialize(config, custom_objects=None):
    """The metric a name (a function's, or a class's: an instance) or a ``serialize`` dict
    describes."""
    known = {n: globals()[n] for n in _CLASSES + _FUNCTIONS}
    known.update(_ALIASES)
    known.update(custom_objects or {})
    return _losses._deserialize(config, known, "metric", "Metric")


def get(identifier):
    """The metric ``identifier`` names or describes, or ``identifier`` itself when callable."""
    if callable(identifier):
        return identifier
    if isinstance(identifier, str | dict):
        return deserialize(identifier)
    raise ValueError("Could not interpret metric function identifier: %r" % (identifier,))


__all__ = list(_CLASSES + _FUNCTIONS) + ["deserialize", "get", "serialize"]
