"""``tf.estimator``: TF1's Estimator, its specs and run configuration, train_and_evaluate
(locally, or as any task of a TF_CONFIG cluster), and SavedModel exports (``tf.estimator.export``
and the exporters)."""

from zps.estimator import export, inputs  # noqa: F401 - the tf.estimator.{export,inputs} namespaces
from zps.estimator.canned.dnn import DNNClassifier, DNNRegressor
from zps.estimator.canned.dnn_linear_combined import DNNLinearCombinedClassifier, DNNLinearCombinedRegressor
from zps.estimator.canned.linear import LinearClassifier, LinearRegressor
from zps.estimator.estimator import Estimator, WarmStartSettings
from zps.estimator.exporter import BestExporter, Exporter, FinalExporter, LatestExporter
from zps.estimator.model_fn import EstimatorSpec, ModeKeys
from zps.estimator.run_config import RunConfig
from zps.estimator.training import EvalSpec, TrainSpec, train_and_evaluate

__all__ = ["BestExporter", "DNNClassifier", "DNNLinearCombinedClassifier",
           "DNNLinearCombinedRegressor", "DNNRegressor", "Estimator", "EstimatorSpec", "EvalSpec",
           "Exporter", "FinalExporter", "LatestExporter", "LinearClassifier", "LinearRegressor",
           "ModeKeys", "RunConfig", "TrainSpec", "WarmStartSettings", "train_and_evaluate"]
