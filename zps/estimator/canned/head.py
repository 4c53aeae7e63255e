"""Heads: how logits become predictions, a loss, metrics and a train op (TF1's canned heads).

The loss of a batch is the per-example loss weighted and reduced by ``loss_reduction`` (TF1's v1
canned estimators default to ``Reduction.SUM``: summed over the batch); ``average_loss`` is the
weighted mean per-example loss over the whole evaluation. ``regression_head``,
``binary_classification_head`` and ``multi_class_head`` make heads as TF1's
``tf.contrib.estimator`` does (``Reduction.SUM_OVER_BATCH_SIZE`` by default) for the
``*Estimator(head, ...)`` classes.

In PREDICT mode a head gives TF1's ``export_outputs`` too: a classification head serves a
``ClassificationOutput`` (every class id as a string, with its probability) under
``"serving_default"`` and ``"classification"`` (a binary head also a ``RegressionOutput`` of the
logistic under ``"regression"``); a regression head serves a ``RegressionOutput`` under
``"serving_default"`` and ``"regression"``; both serve all predictions under ``"predict"``.
"""

from zps.estimator.export import export_output
from zps.estimator.model_fn import EstimatorSpec, ModeKeys
from zps.framework import dtypes
from zps.ops import array_ops, losses_impl, math_ops, metrics_impl, nn_ops, string_ops
from zps.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY

LOSS_MEAN = "average_loss"
ACCURACY = "accuracy"
ACCURACY_BASELINE = "accuracy_baseline"
AUC = "auc"
AUC_PR = "auc_precision_recall"
PRECISION = "precision"
RECALL = "recall"
LABEL_MEAN = "label/mean"
PREDICTION_MEAN = "prediction/mean"

CLASSIFY_SERVING_KEY = "classification"   # TF1's signature names of the canned heads' outputs
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"


class _Head:
    """What the heads share: labels and weights in, an EstimatorSpec out."""

    def __init__(self, logits_dimension, weight_column, loss_reduction):
        losses_impl.Reduction.validate(loss_reduction)
        if loss_reduction == losses_impl.Reduction.NONE:
            raise ValueError("Invalid loss_reduction: none. A head needs a scalar loss.")
        self.logits_dimension = logits_dimension
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction

    def create_estimator_spec(self, features, mode, logits, labels=None, train_op_fn=None):
        predictions = self._predictions(logits)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions,
                                 export_outputs=self._export_outputs(predictions))
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None. Suggested "
                             "troubleshooting steps: check that your data contain your label "
                             "feature, and that input_fn returns (features, labels).")
        labels = self._labels(labels)
        unreduced = self._unreduced_loss(labels, logits)
        weights = self._weights(features, unreduced)
        loss = losses_impl.compute_weighted_loss(
            unreduced, weights=1.0 if weights is None else weights,
            reduction=self._loss_reduction)
        if mode == ModeKeys.EVAL:
            metrics = {LOSS_MEAN: metrics_impl.mean(unreduced, weights=weights)}
            metrics.update(self._metrics(labels, predictions, weights))
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=metrics)
        if train_op_fn is None:
            raise ValueError("train_op_fn cannot be None in TRAIN mode.")
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op_fn(loss))

    def _weights(self, features, like):
        if self._weight_column is None:
            return None
        key = getattr(self._weight_column, "key", self._weight_column)
        if key not in features:
            raise ValueError("weight_column %r is not a feature: the features are %s."
                             % (key, sorted(features)))
        weights = math_ops.cast(array_ops.reshape(features[key], [-1, 1]), dtypes.float32)
        return weights * array_ops.ones_like(like)

    def _labels(self, labels):
        return array_ops.reshape(labels, [-1, self.logits_dimension])


class RegressionHead(_Head):
    """Mean squared error over ``label_dimension`` outputs: ``{"predictions": logits}``."""

    def _labels(self, labels):
        return math_ops.cast(super()._labels(labels), dtypes.float32)

    def _predictions(self, logits):
        return {"predictions": logits}

    def _export_outputs(self, predictions):
        regression = export_output.RegressionOutput(predictions["predictions"])
        return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: regression, REGRESS_SERVING_KEY: regression,
                PREDICT_SERVING_KEY: export_output.PredictOutput(predictions)}

    def _unreduced_loss(self, labels, logits):
        return math_ops.squared_difference(logits, labels)

    def _metrics(self, labels, predictions, weights):
        return {PREDICTION_MEAN: metrics_impl.mean(predictions["predictions"], weights=weights),
                LABEL_MEAN: metrics_impl.mean(labels, weights=weights)}


class BinaryClassHead(_Head):
    """Sigmoid cross entropy on one logit per example; labels are 0 or 1."""

    def __init__(self, weight_column, loss_reduction):
        super().__init__(1, weight_column, loss_reduction)

    def _labels(self, labels):
        return math_ops.cast(array_ops.reshape(labels, [-1, 1]), dtypes.float32)

    def _predictions(self, logits):
        two_class_logits = array_ops.concat([array_ops.zeros_like(logits), logits], axis=-1)
        class_ids = array_ops.expand_dims(math_ops.argmax(two_class_logits, axis=-1), -1)
        return {"logits": logits, "logistic": math_ops.sigmoid(logits),
                "probabilities": nn_ops.softmax(two_class_logits), "class_ids": class_ids,
                "classes": string_ops.as_string(class_ids)}

    def _export_outputs(self, predictions):
        outputs = _classification_export_outputs(predictions, 2)
        outputs[REGRESS_SERVING_KEY] = export_output.RegressionOutput(predictions["logistic"])
        return outputs

    def _unreduced_loss(self, labels, logits):
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def _metrics(self, labels, predictions, weights):
        class_ids = math_ops.cast(predictions["class_ids"], dtypes.float32)
        logistic = predictions["logistic"]
        label_mean, label_mean_update = metrics_impl.mean(labels, weights=weights)
        baseline = math_ops.maximum(label_mean, 1.0 - label_mean)
        return {
            ACCURACY: metrics_impl.accuracy(labels, class_ids, weights=weights),
            PRECISION: metrics_impl.precision(labels, class_ids, weights=weights),
            RECALL: metrics_impl.recall(labels, class_ids, weights=weights),
            PREDICTION_MEAN: metrics_impl.mean(logistic, weights=weights),
            LABEL_MEAN: (label_mean, label_mean_update),
            ACCURACY_BASELINE: (baseline, label_mean_update),
            AUC: metrics_impl.auc(labels, logistic, weights=weights, curve="ROC"),
            AUC_PR: metrics_impl.auc(labels, logistic, weights=weights, curve="PR"),
        }


class MultiClassHead(_Head):
    """Softmax cross entropy over ``n_classes`` logits; labels are class ids in [0, n_classes)."""

    def _labels(self, labels):
        return math_ops.cast(array_ops.reshape(labels, [-1, 1]), dtypes.int64)

    def _predictions(self, logits):
        class_ids = array_ops.expand_dims(math_ops.argmax(logits, axis=-1), -1)
        return {"logits": logits, "probabilities": nn_ops.softmax(logits),
                "class_ids": class_ids, "classes": string_ops.as_string(class_ids)}

    def _export_outputs(self, predictions):
        return _classification_export_outputs(predictions, self.logits_dimension)

    def _unreduced_loss(self, labels, logits):
        return array_ops.expand_dims(nn_ops.sparse_softmax_cross_entropy_with_logits(
            labels=array_ops.squeeze(labels, [-1]), logits=logits), -1)

    def _metrics(self, labels, predictions, weights):
        return {ACCURACY: metrics_impl.accuracy(labels, predictions["class_ids"], weights=weights)}


class MultiLabelHead(_Head):
    """Sigmoid cross entropy per class, averaged over the ``n_classes`` classes; labels are
    multi-hot ``[batch, n_classes]`` (0 or 1 per class)."""

    def _labels(self, labels):
        return math_ops.cast(super()._labels(labels), dtypes.float32)

    def _predictions(self, logits):
        return {"logits": logits, "probabilities": math_ops.sigmoid(logits)}

    def _export_outputs(self, predictions):
        return _classification_export_outputs(predictions, self.logits_dimension)

    def _unreduced_loss(self, labels, logits):
        return math_ops.reduce_mean(nn_ops.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits), axis=-1, keepdims=True)

    def _metrics(self, labels, predictions, weights):
        probabilities = predictions["probabilities"]
        if weights is not None:         # one weight per example: the same for each class
            weights = weights * array_ops.ones_like(probabilities)
        return {AUC: metrics_impl.auc(labels, probabilities, weights=weights, curve="ROC"),
                AUC_PR: metrics_impl.auc(labels, probabilities, weights=weights, curve="PR")}


def _classification_export_outputs(predictions, n_classes):
    """TF1's: the probabilities of every class, the classes being the class ids as strings
    (``[["0", "1", ...]] * batch``); and all predictions."""
    probabilities = predictions["probabilities"]
    class_list = string_ops.as_string(array_ops.range(n_classes))
    classes = array_ops.tile(array_ops.expand_dims(class_list, 0),
                             [array_ops.shape(probabilities)[0], 1])
    classification = export_output.ClassificationOutput(scores=probabilities, classes=classes)
    return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: classification,
            CLASSIFY_SERVING_KEY: classification,
            PREDICT_SERVING_KEY: export_output.PredictOutput(predictions)}


def classification_head(n_classes, weight_column, label_vocabulary, loss_reduction):
    """The binary head for 2 classes, else the multi-class one."""
    _check_unsupported(label_vocabulary=label_vocabulary)
    if n_classes is None or n_classes < 2:
        raise ValueError("n_classes must be > 1 for classification: %s" % (n_classes,))
    if n_classes == 2:
        return BinaryClassHead(weight_column, loss_reduction)
    return MultiClassHead(n_classes, weight_column, loss_reduction)


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=losses_impl.Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                    inverse_link_fn=None, name=None):
    """TF1's ``tf.contrib.estimator.regression_head``: squared error over ``label_dimension``
    outputs, for ``LinearEstimator``, ``DNNEstimator``, ``DNNLinearCombinedEstimator`` and
    ``BaselineEstimator``."""
    _check_unsupported(loss_fn=loss_fn, inverse_link_fn=inverse_link_fn, name=name)
    if label_dimension < 1:
        raise ValueError("Invalid label_dimension %s." % (label_dimension,))
    return RegressionHead(label_dimension, weight_column, loss_reduction)


def binary_classification_head(weight_column=None, thresholds=None, label_vocabulary=None,
                               loss_reduction=losses_impl.Reduction.SUM_OVER_BATCH_SIZE,
                               loss_fn=None, name=None):
    """TF1's ``tf.contrib.estimator.binary_classification_head``: sigmoid cross entropy on one
    logit; labels 0 or 1."""
    _check_unsupported(thresholds=thresholds, label_vocabulary=label_vocabulary,
                       loss_fn=loss_fn, name=name)
    return BinaryClassHead(weight_column, loss_reduction)


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=losses_impl.Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                     name=None):
    """TF1's ``tf.contrib.estimator.multi_class_head``: softmax cross entropy over
    ``n_classes`` (> 2) logits; labels are class ids."""
    _check_unsupported(label_vocabulary=label_vocabulary, loss_fn=loss_fn, name=name)
    if n_classes is None or n_classes <= 2:
        raise ValueError("n_classes must be > 2: %s." % (n_classes,))
    return MultiClassHead(n_classes, weight_column, loss_reduction)


def check_head(head):
    """``head`` as the ``*Estimator(head, ...)`` classes take it, checked."""
    if not (hasattr(head, "logits_dimension") and callable(
            getattr(head, "create_estimator_spec", None))):
        raise TypeError("head must be a head such as tf.contrib.estimator.regression_head() "
                        "makes (with logits_dimension and create_estimator_spec), given: %r"
                        % (head,))
    return head


def multi_label_head(n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                     loss_reduction=losses_impl.Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                     classes_for_class_based_metrics=None, name=None):
    """TF1's ``tf.contrib.estimator.multi_label_head``: each of ``n_classes`` (> 1) classes
    present or not (sigmoid cross entropy, averaged over the classes); labels are multi-hot."""
    _check_unsupported(thresholds=thresholds, label_vocabulary=label_vocabulary,
                       loss_fn=loss_fn, classes_for_class_based_metrics=(
                           classes_for_class_based_metrics), name=name)
    if n_classes is None or n_classes < 2:
        raise ValueError("n_classes must be > 1 for multi-label classification. Given: %s"
                         % (n_classes,))
    return MultiLabelHead(n_classes, weight_column, loss_reduction)


def _check_unsupported(**kwargs):
    given = sorted(key for key, value in kwargs.items() if value is not None)
    if given:
        raise NotImplementedError(
            "zps's canned heads do not support %s: leave %s None (map string labels to class "
            "ids in input_fn; write a model_fn for a custom loss)."
            % (", ".join(given), "it" if len(given) == 1 else "them"))
