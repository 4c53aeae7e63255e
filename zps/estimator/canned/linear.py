"""``LinearRegressor``, ``LinearClassifier`` and ``LinearEstimator`` (any head):
``tf.feature_column.linear_model`` under a head.

>>> import tempfile, numpy as np, zps as tf
>>> x = tf.feature_column.numeric_column("x")
>>> est = tf.estimator.LinearRegressor([x], tempfile.mkdtemp(), optimizer="SGD")
>>> data = lambda: tf.data.Dataset.from_tensor_slices(
...     ({"x": np.float32([1, 2, 3])}, np.float32([2, 4, 6]))).batch(3).repeat()
>>> est = est.train(data, steps=1)
>>> sorted(est.evaluate(data, steps=1))
['average_loss', 'global_step', 'label/mean', 'loss', 'prediction/mean']
"""

import math

from zps.estimator.canned import head as head_lib
from zps.estimator.canned.optimizers import get_optimizer_instance
from zps.estimator.estimator import Estimator
from zps.ops import feature_column_impl, partitioned_variables, variable_scope
from zps.ops.losses_impl import Reduction
from zps.train import training_util

__all__ = ["LinearClassifier", "LinearEstimator", "LinearRegressor"]

_LEARNING_RATE = 0.2


def default_partitioner(config):
    """TF1's: variables split across the ps tasks in slices of at least 64 MB (none locally)."""
    if not config or config.num_ps_replicas == 0:
        return None
    return partitioned_variables.min_max_variable_partitioner(
        max_partitions=config.num_ps_replicas, min_slice_size=64 << 20)


def linear_logits(features, feature_columns, units, sparse_combiner):
    return feature_column_impl.linear_model(features, feature_columns, units=units,
                                            sparse_combiner=sparse_combiner)


def linear_logit_fn_builder(units, feature_columns, sparse_combiner="sum"):
    """``tf.estimator.experimental.linear_logit_fn_builder``: a ``logit_fn(features)`` giving
    ``units`` logits of ``tf.feature_column.linear_model``."""
    def linear_logit_fn(features):
        return linear_logits(features, feature_columns, units, sparse_combiner)
    return linear_logit_fn


def _linear_model_fn(features, labels, mode, head, feature_columns, optimizer, partitioner,
                     config, sparse_combiner):
    if not feature_columns:
        raise ValueError("feature_columns must be defined.")
    optimizer = get_optimizer_instance(optimizer, learning_rate=_LEARNING_RATE)
    with variable_scope.variable_scope("linear", partitioner=partitioner
                                       or default_partitioner(config)):
        logits = linear_logits(features, feature_columns, head.logits_dimension, sparse_combiner)
    return head.create_estimator_spec(
        features, mode, logits, labels,
        lambda loss: optimizer.minimize(loss, global_step=training_util.get_global_step()))


class _LinearEstimator(Estimator):
    def __init__(self, head, feature_columns, model_dir, optimizer, config, partitioner,
                 warm_start_from, sparse_combiner):
        feature_columns = tuple(feature_columns or ())

        def model_fn(features, labels, mode, config):
            return _linear_model_fn(features, labels, mode, head, feature_columns, optimizer,
                                    partitioner, config, sparse_combiner)
        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class LinearRegressor(_LinearEstimator):
    """A linear regression of ``label_dimension`` outputs (squared error, FTRL by default)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM, sparse_combiner="sum"):
        head = head_lib.regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(head, feature_columns, model_dir, optimizer, config, partitioner,
                         warm_start_from, sparse_combiner)


class LinearClassifier(_LinearEstimator):
    """A logistic (2 classes) or softmax (more) linear classifier, FTRL by default."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, sparse_combiner="sum"):
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
        super().__init__(head, feature_columns, model_dir, optimizer, config, partitioner,
                         warm_start_from, sparse_combiner)


class LinearEstimator(_LinearEstimator):
    """A linear model under ``head`` (e.g. ``tf.contrib.estimator.multi_class_head(3)``), FTRL
    by default."""

    def __init__(self, head, feature_columns, model_dir=None, optimizer="Ftrl", config=None,
                 partitioner=None, sparse_combiner="sum", warm_start_from=None):
        super().__init__(head_lib.check_head(head), feature_columns, model_dir, optimizer,
                         config, partitioner, warm_start_from, sparse_combiner)


def linear_learning_rate(num_linear_feature_columns):
    """The combined model's linear learning rate: min(0.005, 1/sqrt(#columns))."""
    return min(0.005, 1.0 / math.sqrt(num_linear_feature_columns))
