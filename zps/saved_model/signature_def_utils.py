"""SignatureDefs: what a served model's inputs and outputs are (TF1's
``tf.saved_model.signature_def_utils``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 2], name="x")
...     y = tf.identity(x, name="y")
...     sig = predict_signature_def({"x": x}, {"y": y})
>>> sig.method_name, sig.inputs["x"].name, sig.outputs["y"].name, is_valid_signature(sig)
('tensorflow/serving/predict', 'x:0', 'y:0', True)
"""

from zps.framework import errors
from zps.framework import graph as _graph
from zps.saved_model import meta_graph_pb, signature_constants, utils

__all__ = ["build_signature_def", "classification_signature_def", "is_valid_signature",
           "predict_signature_def", "regression_signature_def"]

_DT_STRING, _DT_FLOAT = 7, 1   # TF's DataType enum


def build_signature_def(inputs=None, outputs=None, method_name=None):
    """A SignatureDef of ``inputs`` and ``outputs`` (dicts of name -> TensorInfo)."""
    signature_def = meta_graph_pb.SignatureDef()
    for item in inputs or {}:
        signature_def.inputs[item].CopyFrom(inputs[item])
    for item in outputs or {}:
        signature_def.outputs[item].CopyFrom(outputs[item])
    if method_name is not None:
        signature_def.method_name = method_name
    return signature_def


def regression_signature_def(examples, predictions):
    """A signature for TF Serving's Regress API: string ``examples`` -> float ``predictions``."""
    if examples is None:
        raise ValueError("Regression `examples` cannot be None.")
    if not isinstance(examples, _graph.Tensor):
        raise ValueError("Expected regression `examples` to be of type Tensor. Found `examples` of "
                         "type %s." % type(examples))
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    input_info = utils.build_tensor_info(examples)
    if input_info.dtype != _DT_STRING:
        raise ValueError("Regression input tensors must be of type string. Found tensors with "
                         "type %s." % input_info.dtype)
    output_info = utils.build_tensor_info(predictions)
    if output_info.dtype != _DT_FLOAT:
        raise ValueError("Regression output tensors must be of type float. Found tensors with "
                         "type %s." % output_info.dtype)
    return build_signature_def({signature_constants.REGRESS_INPUTS: input_info},
                               {signature_constants.REGRESS_OUTPUTS: output_info},
                               signature_constants.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores):
    """A signature for TF Serving's Classify API: string ``examples`` -> string ``classes``
    and/or float ``scores``."""
    if examples is None:
        raise ValueError("Classification `examples` cannot be None.")
    if not isinstance(examples, _graph.Tensor):
        raise ValueError("Classification `examples` must be a string Tensor. Found `examples` of "
                         "type %s." % type(examples))
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    input_info = utils.build_tensor_info(examples)
    if input_info.dtype != _DT_STRING:
        raise ValueError("Classification input tensors must be of type string. Found tensors of "
                         "type %s" % input_info.dtype)
    outputs = {}
    if classes is not None:
        info = outputs[signature_constants.CLASSIFY_OUTPUT_CLASSES] = utils.build_tensor_info(
            classes)
        if info.dtype != _DT_STRING:
            raise ValueError("Classification classes must be of type string Tensor. Found "
                             "tensors of type %s.`" % info.dtype)
    if scores is not None:
        info = outputs[signature_constants.CLASSIFY_OUTPUT_SCORES] = utils.build_tensor_info(
            scores)
        if info.dtype != _DT_FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
    return build_signature_def({signature_constants.CLASSIFY_INPUTS: input_info}, outputs,
                               signature_constants.CLASSIFY_METHOD_NAME)


def predict_signature_def(inputs, outputs):
    """A signature for TF Serving's Predict API: ``inputs`` and ``outputs`` are dicts of
    name -> Tensor (or SparseTensor), of any dtype."""
    if not inputs:
        raise ValueError("Prediction `inputs` cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction `outputs` cannot be None or empty.")
    return build_signature_def({k: utils.build_tensor_info(t) for k, t in inputs.items()},
                               {k: utils.build_tensor_info(t) for k, t in outputs.items()},
                               signature_constants.PREDICT_METHOD_NAME)


def supervised_train_signature_def(inputs, loss, predictions=None, metrics=None):
    """A signature of a training step: ``inputs`` -> loss, predictions and metrics."""
    return _supervised_signature_def(signature_constants.SUPERVISED_TRAIN_METHOD_NAME, inputs,
                                     loss, predictions, metrics)


def supervised_eval_signature_def(inputs, loss, predictions=None, metrics=None):
    """A signature of an evaluation: ``inputs`` -> loss, predictions and metrics."""
    return _supervised_signature_def(signature_constants.SUPERVISED_EVAL_METHOD_NAME, inputs,
                                     loss, predictions, metrics)


def _supervised_signature_def(method_name, inputs, loss=None, predictions=None, metrics=None):
    if not inputs:
        raise ValueError("%s `inputs` cannot be None or empty." % method_name)
    outputs = {}
    for output_set in (loss, predictions, metrics):
        outputs.update({k: utils.build_tensor_info(t) for k, t in (output_set or {}).items()})
    return build_signature_def({k: utils.build_tensor_info(t) for k, t in inputs.items()},
                               outputs, method_name)


def is_valid_signature(signature_def):
    """Whether TF Serving could serve ``signature_def`` (a classify, regress or predict one)."""
    if signature_def is None:
        return False
    return (_is_valid_classification_signature(signature_def)
            or _is_valid_regression_signature(signature_def)
            or _is_valid_predict_signature(signature_def))


def _is_valid_predict_signature(sig):
    return sig.method_name == signature_constants.PREDICT_METHOD_NAME and bool(
        sig.inputs) and bool(sig.outputs)


def _is_valid_regression_signature(sig):
    c = signature_constants
    return (sig.method_name == c.REGRESS_METHOD_NAME
            and set(sig.inputs) == {c.REGRESS_INPUTS}
            and sig.inputs[c.REGRESS_INPUTS].dtype == _DT_STRING
            and set(sig.outputs) == {c.REGRESS_OUTPUTS}
            and sig.outputs[c.REGRESS_OUTPUTS].dtype == _DT_FLOAT)


def _is_valid_classification_signature(sig):
    c = signature_constants
    if (sig.method_name != c.CLASSIFY_METHOD_NAME or set(sig.inputs) != {c.CLASSIFY_INPUTS}
            or sig.inputs[c.CLASSIFY_INPUTS].dtype != _DT_STRING):
        return False
    outputs = set(sig.outputs)
    if not outputs or outputs - {c.CLASSIFY_OUTPUT_CLASSES, c.CLASSIFY_OUTPUT_SCORES}:
        return False
    return all(sig.outputs[key].dtype == dtype for key, dtype in (
        (c.CLASSIFY_OUTPUT_CLASSES, _DT_STRING), (c.CLASSIFY_OUTPUT_SCORES, _DT_FLOAT))
        if key in outputs)


def op_signature_def(op, key):
    """A signature whose one output ``key`` names ``op`` (how init and train ops are kept)."""
    return build_signature_def(outputs={key: utils.build_tensor_info_from_op(op)})


def load_op_from_signature_def(signature_def, key, import_scope=None):
    """The op (or tensor) that output ``key`` of ``signature_def`` names; NotFoundError if the
    graph has none."""
    try:
        return utils.get_element_from_tensor_info(signature_def.outputs[key],
                                                  import_scope=import_scope)
    except KeyError:
        raise errors.NotFoundError(
            None, None, 'The key "%s" could not be found in the graph. Please make sure the '
            "SavedModel was created by the internal _SavedModelBuilder. If you are using the "
            'public API, please make sure the SignatureDef in the SavedModel does not contain the '
            'key "%s".' % (key, key)) from None
