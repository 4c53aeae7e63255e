"""``tf.contrib.estimator``: where TF 1.15 programs find the heads of the head-taking estimators
(``tf.estimator.DNNEstimator(head=tf.contrib.estimator.multi_class_head(3), ...)``), and the
estimator extras that later moved to ``tf.estimator`` and ``tf.estimator.experimental``."""

from zps.estimator.canned.dnn import DNNEstimator
from zps.estimator.canned.dnn_linear_combined import DNNLinearCombinedEstimator
from zps.estimator.canned.head import (
    binary_classification_head,
    multi_class_head,
    multi_label_head,
    regression_head,
)
from zps.estimator.canned.linear import LinearEstimator
from zps.estimator.experimental import (
    InMemoryEvaluatorHook,
    make_early_stopping_hook,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from zps.estimator.extenders import add_metrics

__all__ = ["DNNEstimator", "DNNLinearCombinedEstimator", "InMemoryEvaluatorHook",
           "LinearEstimator", "add_metrics", "binary_classification_head",
           "make_early_stopping_hook", "multi_class_head", "multi_label_head", "regression_head",
           "stop_if_higher_hook", "stop_if_lower_hook", "stop_if_no_decrease_hook",
           "stop_if_no_increase_hook"]
