"""``tf.estimator``: TF1's Estimator, its specs and run configuration, train_and_evaluate
(locally, or as any task of a TF_CONFIG cluster), canned estimators, SavedModel exports
(``tf.estimator.export`` and the exporters), and the training hooks TF1 also exports here
(the same classes as ``tf.train``'s)."""

from zps.estimator import experimental, export, inputs  # noqa: F401 - namespaces
from zps.estimator.canned.baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
from zps.estimator.canned.dnn import DNNClassifier, DNNEstimator, DNNRegressor
from zps.estimator.canned.dnn_linear_combined import (
    DNNLinearCombinedClassifier,
    DNNLinearCombinedEstimator,
    DNNLinearCombinedRegressor,
)
from zps.estimator.canned.linear import LinearClassifier, LinearEstimator, LinearRegressor
from zps.estimator.estimator import Estimator, WarmStartSettings
from zps.estimator.exporter import BestExporter, Exporter, FinalExporter, LatestExporter
from zps.estimator.extenders import add_metrics
from zps.estimator.model_fn import EstimatorSpec, ModeKeys
from zps.estimator.parsing_utils import classifier_parse_example_spec, regressor_parse_example_spec
from zps.estimator.run_config import RunConfig
from zps.estimator.training import EvalSpec, TrainSpec, train_and_evaluate
from zps.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StepCounterHook,
    StopAtStepHook,
)
from zps.train.profiler_hook import ProfilerHook
from zps.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from zps.train.summary_hook import SummarySaverHook
from zps.train.warm_starting_util import VocabInfo

__all__ = [
    "BaselineClassifier", "BaselineEstimator", "BaselineRegressor", "BestExporter",
    "CheckpointSaverHook", "CheckpointSaverListener", "DNNClassifier", "DNNEstimator",
    "DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator", "DNNLinearCombinedRegressor",
    "DNNRegressor", "Estimator", "EstimatorSpec", "EvalSpec", "Exporter", "FeedFnHook",
    "FinalExporter", "FinalOpsHook", "GlobalStepWaiterHook", "LatestExporter",
    "LinearClassifier", "LinearEstimator", "LinearRegressor", "LoggingTensorHook", "ModeKeys",
    "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook", "RunConfig",
    "SecondOrStepTimer", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
    "SessionRunValues", "StepCounterHook", "StopAtStepHook", "SummarySaverHook", "TrainSpec",
    "VocabInfo", "WarmStartSettings", "add_metrics", "classifier_parse_example_spec",
    "regressor_parse_example_spec", "train_and_evaluate",
]
