"""``tf.estimator.export``: serving input receivers and the export outputs of a SavedModel export
(``Estimator.export_saved_model``)."""

from zps.estimator.export.export import (
    ServingInputReceiver,
    TensorServingInputReceiver,
    build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn,
)
from zps.estimator.export.export_output import (
    ClassificationOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
)

__all__ = ["ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
           "ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]
