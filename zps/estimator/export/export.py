"""What a ``serving_input_receiver_fn`` returns, the two ready-made ones, and the helpers
``Estimator.export_saved_model`` builds its export with (TF1's ``estimator/export/export.py``
and ``saved_model/model_utils/export_utils.py``).

>>> import numpy as np, zps as tf
>>> fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
...     {"x": tf.constant(np.zeros([4, 3], np.float32))})
>>> with tf.Graph().as_default():
...     receiver = fn()
>>> receiver.features["x"].shape.as_list(), receiver.receiver_tensors["x"].op.type
([None, 3], 'Placeholder')
"""

import collections
import logging
import os
import time

from zps import gfile
from zps.estimator.export.export_output import ExportOutput, PredictOutput
from zps.framework import dtypes
from zps.framework.graph import Tensor
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, parsing_ops
from zps.ops.sparse_ops import SparseTensor
from zps.saved_model import signature_constants, signature_def_utils

__all__ = ["ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]

_logger = logging.getLogger("zps.estimator")

SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
_SINGLE_TENSOR_DEFAULT_NAMES = {"feature": SINGLE_FEATURE_DEFAULT_NAME,
                                "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
                                "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME}
_MAX_DIRECTORY_CREATION_ATTEMPTS = 10


# -- receivers ------------------------------------------------------------------------------------
def _wrap_and_check_input_tensors(tensors, field_name, allow_int_keys=False):
    """``tensors`` as a dict of names to Tensors or SparseTensors (one tensor is wrapped under
    its default name), checked as TF1 checks it."""
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_SINGLE_TENSOR_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        _check_tensor_key(name, field_name, allow_int_keys)
        _check_tensor(tensor, name, field_name)
    return tensors


def _check_tensor(tensor, name, error_label="feature"):
    if not isinstance(tensor, (Tensor, SparseTensor)):
        fmt_name = f" {name}" if name else ""
        raise ValueError(f"{error_label}{fmt_name} must be a Tensor or SparseTensor.")


def _check_tensor_key(name, error_label="feature", allow_ints=False):
    if not isinstance(name, str):
        if not allow_ints:
            raise ValueError(f"{error_label} keys must be strings: {name}.")
        if not isinstance(name, int):
            raise ValueError(f"{error_label} keys must be strings or ints: {name}.")


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """What a ``serving_input_receiver_fn`` returns: the ``features`` given to ``model_fn`` (a
    single tensor becomes ``{"feature": tensor}``), the ``receiver_tensors`` a request feeds
    (typically one string placeholder of serialized tf.Examples; one tensor becomes
    ``{"input": tensor}``), and optional named ``receiver_tensors_alternatives``, each giving
    more signatures fed at other points of the input graph."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        receiver_tensors = _wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError("receiver_tensors_alternatives must be a dict: "
                                 f"{receiver_tensors_alternatives}.")
            for name, alternative in receiver_tensors_alternatives.items():
                receiver_tensors_alternatives[name] = _wrap_and_check_input_tensors(
                    alternative, "receiver_tensors_alternative")
        return super().__new__(cls, features=features, receiver_tensors=receiver_tensors,
                               receiver_tensors_alternatives=receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """A ``ServingInputReceiver`` whose ``features`` are one Tensor (or SparseTensor) given to
    ``model_fn`` as is, for models that take a single raw feature rather than a dict."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        _check_tensor(features, None)
        receiver = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(
            cls, features=receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
            receiver_tensors=receiver.receiver_tensors,
            receiver_tensors_alternatives=receiver.receiver_tensors_alternatives)


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A ``serving_input_receiver_fn`` that takes serialized tf.Examples (a string placeholder
    ``input_example_tensor``, received as ``"examples"``) and parses them with
    ``tf.parse_example(serialized, feature_spec)`` into the features."""

    def serving_input_receiver_fn():
        serialized = array_ops.placeholder(dtypes.string, [default_batch_size],
                                           name="input_example_tensor")
        features = parsing_ops.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


def _placeholder_from_tensor(t, default_batch_size=None):
    """A placeholder of ``t``'s dtype and shape (batch dimension ``default_batch_size``), named
    as ``t``'s op."""
    shape = TensorShape([default_batch_size]).concatenate(t.get_shape()[1:])
    return array_ops.placeholder(t.dtype, shape, name=t.op.name)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A ``serving_input_receiver_fn`` that takes the features themselves: one placeholder per
    entry of ``features`` (a dict of string to Tensor, whose dtypes and shapes past the batch
    dimension the placeholders take), fed and passed to ``model_fn`` as they are."""

    def serving_input_receiver_fn():
        receiver_tensors = {name: _placeholder_from_tensor(t, default_batch_size)
                            for name, t in features.items()}
        return ServingInputReceiver(receiver_tensors, receiver_tensors)

    return serving_input_receiver_fn


# -- building an export ---------------------------------------------------------------------------
def get_export_outputs(export_outputs, predictions):
    """``export_outputs`` checked, or the default ``{"serving_default": PredictOutput(
    predictions)}`` when None; one output is the default serving output too."""
    if export_outputs is None:
        export_outputs = {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                          PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for value in export_outputs.values():
        if not isinstance(value, ExportOutput):
            raise TypeError("Values in export_outputs must be ExportOutput objects. "
                            f"Given: {export_outputs}")
    if len(export_outputs) == 1:
        (key, value), = export_outputs.items()
        if key != signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
            export_outputs[signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY] = value
    if (len(export_outputs) > 1
            and signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in export_outputs):
        raise ValueError("Multiple export_outputs were provided, but none of them is specified "
                         "as the default.  Do this by naming one of them with "
                         "signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY.")
    return export_outputs


def build_all_signature_defs(receiver_tensors, export_outputs,
                             receiver_tensors_alternatives=None):
    """The SignatureDefs of every export output for the receiver tensors (named by the output's
    key) and for each alternative receiver (``"<alternative>:<key>"``). An output that cannot
    be served from those inputs (a classification from float features, say) is left out and
    logged, as TF1 does."""
    if not isinstance(receiver_tensors, dict):
        receiver_tensors = {SINGLE_RECEIVER_DEFAULT_NAME: receiver_tensors}
    if export_outputs is None or not isinstance(export_outputs, dict):
        raise ValueError(f"export_outputs must be a dict and not{type(export_outputs)}")
    receivers = [(None, receiver_tensors)]
    for name, alternative in (receiver_tensors_alternatives or {}).items():
        if not isinstance(alternative, dict):
            alternative = {SINGLE_RECEIVER_DEFAULT_NAME: alternative}
        receivers.append((name or "None", alternative))
    signature_def_map, excluded = {}, {}
    for receiver_name, tensors in receivers:
        for output_key, export_output in export_outputs.items():
            name = "{}".format(output_key or "None")
            if receiver_name is not None:
                name = f"{receiver_name}:{name}"
            try:
                signature_def_map[name] = export_output.as_signature_def(tensors)
            except ValueError as e:
                excluded[name] = str(e)
    _log_signature_report(signature_def_map, excluded)
    # A check of what as_signature_def gave: only signatures TensorFlow Serving can serve.
    return {name: sig for name, sig in signature_def_map.items()
            if signature_def_utils.is_valid_signature(sig)}


def _log_signature_report(signature_def_map, excluded):
    by_method = collections.defaultdict(list)
    for name, sig in signature_def_map.items():
        by_method[sig.method_name].append(name)
    for method, names in sorted(by_method.items()):
        _logger.info("Signatures INCLUDED in export for %s: %s", method, names)
    for name, message in excluded.items():
        _logger.info("Signature EXCLUDED from export because it cannot be served via "
                     "TensorFlow Serving APIs: '%s': %s", name, message)
    if not signature_def_map:
        _logger.warning("Export includes no signatures!")
    elif signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in signature_def_map:
        _logger.warning("Export includes no default signature!")


def get_timestamped_export_dir(export_dir_base):
    """``export_dir_base/<seconds since the epoch>`` (bytes, as TF1's), a path that does not
    exist yet: waits a second while it does."""
    for attempt in range(1, _MAX_DIRECTORY_CREATION_ATTEMPTS + 1):
        result = os.path.join(os.fsencode(export_dir_base), b"%d" % int(time.time()))
        if not gfile.Exists(result):
            return result
        time.sleep(1)
        _logger.warning("Directory %s already exists; retrying (attempt %d/%d)",
                        os.fsdecode(result), attempt, _MAX_DIRECTORY_CREATION_ATTEMPTS)
    raise RuntimeError("Failed to obtain a unique export directory name after %d attempts."
                       % _MAX_DIRECTORY_CREATION_ATTEMPTS)


def get_temp_export_dir(timestamped_export_dir):
    """The sister directory ``temp-<timestamp>`` an export is written to before it is renamed
    (TensorFlow Serving ignores directories whose names are not integers)."""
    dirname, basename = os.path.split(os.fsencode(timestamped_export_dir))
    return os.path.join(dirname, b"temp-" + basename)
