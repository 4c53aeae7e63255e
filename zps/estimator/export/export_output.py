"""``ExportOutput``s: what a SavedModel signature serves, one per key of
``EstimatorSpec.export_outputs`` (TF1's ``tf.estimator.export.*Output``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     examples = tf.placeholder(tf.string, [None])
...     scores = tf.placeholder(tf.float32, [None, 2])
...     sig = tf.estimator.export.ClassificationOutput(scores=scores).as_signature_def(
...         {"examples": examples})
>>> sig.method_name, sorted(sig.inputs), sorted(sig.outputs)
('tensorflow/serving/classify', ['inputs'], ['scores'])
"""

from zps.framework import dtypes
from zps.framework.graph import Tensor
from zps.saved_model import signature_def_utils

__all__ = ["ExportOutput", "ClassificationOutput", "RegressionOutput", "PredictOutput"]


class ExportOutput:
    """An output of a model that can be served: it gives the SignatureDef for given receiver
    tensors (``as_signature_def``)."""

    _SEPARATOR_CHAR = "/"

    def as_signature_def(self, receiver_tensors):
        """The SignatureDef serving this output from ``receiver_tensors`` (a dict of string to
        Tensor)."""
        raise NotImplementedError("%s must implement as_signature_def(receiver_tensors)."
                                  % type(self).__name__)

    def _check_output_key(self, key, error_label):
        if isinstance(key, tuple):      # multi-head models name outputs by tuples
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key}.")
        return key

    def _wrap_and_check_outputs(self, outputs, single_output_default_name, error_label=None):
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        error_name = error_label or single_output_default_name
        checked = {}
        for key, value in outputs.items():
            key = self._check_output_key(key, error_name)
            if not isinstance(value, Tensor):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


def _single_string_input(receiver_tensors, what):
    """The one string Tensor of ``receiver_tensors`` (classify and regress take serialized
    tf.Examples only)."""
    if len(receiver_tensors) == 1:
        (_, examples), = receiver_tensors.items()
        if dtypes.as_dtype(examples.dtype) == dtypes.string:
            return examples
    raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")


class ClassificationOutput(ExportOutput):
    """The output of a classification head: ``scores`` (float, one per class) and/or
    ``classes`` (string labels); served by the Classify API from serialized tf.Examples."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, Tensor) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (isinstance(classes, Tensor)
                                        and dtypes.as_dtype(classes.dtype) == dtypes.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self._scores, self._classes = scores, classes

    scores = property(lambda self: self._scores)
    classes = property(lambda self: self._classes)

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Classification")
        return signature_def_utils.classification_signature_def(
            examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """The output of a regression head: ``value`` (float); served by the Regress API from
    serialized tf.Examples."""

    def __init__(self, value):
        if not (isinstance(value, Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    value = property(lambda self: self._value)

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Regression")
        return signature_def_utils.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """Any named outputs (a Tensor, named ``"output"``, or a dict of string to Tensor), served by
    the Predict API from any receiver tensors."""

    _SINGLE_OUTPUT_DEFAULT_NAME = "output"

    def __init__(self, outputs):
        self._outputs = self._wrap_and_check_outputs(
            outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction")

    outputs = property(lambda self: self._outputs)

    def as_signature_def(self, receiver_tensors):
        return signature_def_utils.predict_signature_def(receiver_tensors, self.outputs)
