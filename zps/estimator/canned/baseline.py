"""``BaselineClassifier`` / ``BaselineRegressor`` / ``BaselineEstimator`` (any head): a bias per
output and nothing else, so they learn the labels' log-odds (or class distribution) and mean,
ignoring the features.

>>> import tempfile, numpy as np, zps as tf
>>> est = tf.estimator.BaselineRegressor(
...     tempfile.mkdtemp(), optimizer=tf.train.GradientDescentOptimizer(0.1))
>>> data = lambda: tf.data.Dataset.from_tensor_slices(
...     ({"x": np.zeros(4, np.float32)}, np.float32([1, 2, 3, 6]))).batch(4).repeat()
>>> est = est.train(data, steps=50)
>>> est.get_variable_value("baseline/bias").round(4)          # the mean of the labels
array([3.], dtype=float32)
"""

from zps.estimator.canned import head as head_lib
from zps.estimator.canned.optimizers import get_optimizer_instance
from zps.estimator.estimator import Estimator
from zps.framework import dtypes
from zps.framework.graph import get_default_graph
from zps.ops import array_ops, init_ops, logging_ops, math_ops, variable_scope
from zps.ops.losses_impl import Reduction
from zps.train import training_util

__all__ = ["BaselineClassifier", "BaselineEstimator", "BaselineRegressor"]

_LEARNING_RATE = 0.3     # TF1's default for the Ftrl of the baseline estimators


def _weight_column_key(weight_column):
    return getattr(weight_column, "key", weight_column)


def _batch_size_and_size_checks(features, weight_column_key):
    """The batch size is the first dimension of every feature but the weights (which serving
    need not feed); the features are asserted to agree on it."""
    if not isinstance(features, dict):
        features = {"": features}
    batch_size, size_checks = None, []
    for key, feature in sorted(features.items()):
        if key == weight_column_key:
            continue
        first_dim = array_ops.shape(feature)[0]
        if batch_size is None:
            batch_size = first_dim
        else:
            size_checks.append(logging_ops.assert_equal(batch_size, first_dim))
    if batch_size is None:
        raise ValueError("The baseline estimators take the batch size from the features, but "
                         "input_fn gave no feature (other than the weight column): give one, "
                         "e.g. {'x': tf.zeros([batch_size])}.")
    return batch_size, size_checks


def _baseline_model_fn(features, labels, mode, head, optimizer, weight_column):
    batch_size, size_checks = _batch_size_and_size_checks(features,
                                                          _weight_column_key(weight_column))
    with get_default_graph().control_dependencies(size_checks), \
            variable_scope.variable_scope("baseline"):
        bias = variable_scope.get_variable("bias", shape=[head.logits_dimension],
                                           initializer=init_ops.zeros_initializer())
        logits = math_ops.multiply(bias, array_ops.ones(
            array_ops.stack([batch_size, head.logits_dimension]), dtype=dtypes.float32))

    def train_op_fn(loss):
        opt = get_optimizer_instance(optimizer, learning_rate=_LEARNING_RATE)
        return opt.minimize(loss, global_step=training_util.get_global_step())
    return head.create_estimator_spec(features, mode, logits, labels, train_op_fn)


class _BaselineEstimator(Estimator):
    def __init__(self, head, model_dir, optimizer, config, weight_column):
        def model_fn(features, labels, mode):
            return _baseline_model_fn(features, labels, mode, head, optimizer, weight_column)
        super().__init__(model_fn, model_dir=model_dir, config=config)


class BaselineClassifier(_BaselineEstimator):
    """Learns the class distribution of the labels (a bias per logit), FTRL by default."""

    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, loss_reduction=Reduction.SUM):
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
        super().__init__(head, model_dir, optimizer, config, weight_column)


class BaselineEstimator(_BaselineEstimator):
    """Learns a bias per logit of ``head`` (e.g. ``tf.contrib.estimator.regression_head()``),
    FTRL by default."""

    def __init__(self, head, model_dir=None, optimizer="Ftrl", config=None):
        head = head_lib.check_head(head)
        super().__init__(head, model_dir, optimizer, config, getattr(head, "_weight_column", None))


class BaselineRegressor(_BaselineEstimator):
    """Learns the mean of each of ``label_dimension`` labels, FTRL by default."""

    def __init__(self, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                 config=None, loss_reduction=Reduction.SUM):
        head = head_lib.regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(head, model_dir, optimizer, config, weight_column)
