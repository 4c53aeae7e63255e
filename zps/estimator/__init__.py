"""``tf.estimator``: TF1's Estimator, its specs and run configuration, and train_and_evaluate
(locally, or as any task of a TF_CONFIG cluster)."""

from zps.estimator import inputs  # noqa: F401 - the tf.estimator.inputs namespace
from zps.estimator.canned.dnn import DNNClassifier, DNNRegressor
from zps.estimator.canned.dnn_linear_combined import DNNLinearCombinedClassifier, DNNLinearCombinedRegressor
from zps.estimator.canned.linear import LinearClassifier, LinearRegressor
from zps.estimator.estimator import Estimator, WarmStartSettings
from zps.estimator.model_fn import EstimatorSpec, ModeKeys
from zps.estimator.run_config import RunConfig
from zps.estimator.training import EvalSpec, TrainSpec, train_and_evaluate

__all__ = ["DNNClassifier", "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
           "DNNRegressor", "Estimator", "EstimatorSpec", "EvalSpec", "LinearClassifier",
           "LinearRegressor", "ModeKeys", "RunConfig", "TrainSpec", "WarmStartSettings",
           "train_and_evaluate"]
