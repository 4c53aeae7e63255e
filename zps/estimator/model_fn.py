"""``ModeKeys`` and ``EstimatorSpec``: what a ``model_fn`` returns, validated as TF1 does.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     loss = tf.constant(1.0)
...     spec = tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=loss)
>>> spec.mode, spec.eval_metric_ops
('eval', {})
"""

import collections

from zps.estimator.export import export as export_lib
from zps.estimator.util import fn_args
from zps.framework.graph import Operation, Tensor, get_default_graph
from zps.ops import array_ops
from zps.ops.variables import Variable
from zps.train.monitored_session import Scaffold
from zps.train.session_run_hook import SessionRunHook

__all__ = ["ModeKeys", "EstimatorSpec"]

LOSS_METRIC_KEY = "loss"          # the metric evaluate() adds: the mean of the batch losses


class ModeKeys:
    """The modes a ``model_fn`` is called in."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
           "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
           "prediction_hooks"]


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """The ops and objects a ``model_fn`` returns to the Estimator for one mode.

    TRAIN needs ``loss`` and ``train_op``, EVAL needs ``loss``, PREDICT needs ``predictions``;
    ``eval_metric_ops`` maps names to ``(value, update_op)`` pairs such as ``tf.metrics.*``
    return. ``export_outputs`` maps signature names to ``tf.estimator.export.ExportOutput``s
    (one of them under ``"serving_default"`` when there are several; a single one is that
    default too): the signatures ``Estimator.export_saved_model`` writes.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        return super().__new__(
            cls, mode=mode,
            predictions=_validate_predictions(predictions, mode),
            loss=_validate_loss(loss, mode),
            train_op=_validate_train_op(train_op, mode),
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            export_outputs=(None if export_outputs is None
                            else export_lib.get_export_outputs(export_outputs, predictions)),
            training_chief_hooks=_validate_hooks(training_chief_hooks),
            training_hooks=_validate_hooks(training_hooks),
            scaffold=_validate_scaffold(scaffold),
            evaluation_hooks=_validate_hooks(evaluation_hooks),
            prediction_hooks=_validate_hooks(prediction_hooks))

    def _replace(self, **kwds):
        # As TF1: a replaced spec is validated again (the mode may have changed).
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        fields = self._asdict()
        fields.update(kwds)
        return EstimatorSpec(**fields)


def call_logit_fn(logit_fn, features, mode, params, config):
    """``tf.estimator.experimental.call_logit_fn``: ``logit_fn(features, ...)`` with those of
    ``mode``, ``params`` and ``config`` it takes; its result must be a Tensor or a dict of
    them."""
    args = fn_args(logit_fn)
    kwargs = {name: value for name, value in (("mode", mode), ("params", params),
                                              ("config", config)) if name in args}
    logits = logit_fn(features=features, **kwargs)
    is_dict_of_tensors = isinstance(logits, dict) and all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in logits.items())
    if not (is_dict_of_tensors or isinstance(logits, Tensor)):
        raise ValueError("logit_fn should return a Tensor or a dictionary mapping strings to "
                         "Tensors.  logit_fn returned: %s" % (logits,))
    return logits


def _check_in_default_graph(x, name):
    graph = x.graph if isinstance(x, (Tensor, Operation)) else None
    if graph is not None and graph is not get_default_graph():
        raise ValueError(
            "%s must be from the default graph. Possible causes of this error include: 1) %s was "
            "created outside the context of the default graph; 2) the object passed to "
            "EstimatorSpec was not created in the most recent call to model_fn." % (name, name))


def _check_is_tensor(x, name):
    if isinstance(x, Variable):
        x = x.value()
    if not isinstance(x, Tensor):
        raise TypeError("%s must be Tensor, given: %r" % (name, x))
    _check_in_default_graph(x, name)
    return x


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if isinstance(train_op, Variable):
        train_op = train_op.op
    if not isinstance(train_op, (Operation, Tensor)):
        raise TypeError("train_op must be Operation or Tensor, given: %r" % (train_op,))
    _check_in_default_graph(train_op, "train_op")
    return train_op


def _validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    shape = loss.shape
    if shape.num_elements() not in (None, 1):
        raise ValueError("Loss must be scalar, given: %s of shape %s" % (loss.name, shape))
    if shape.ndims not in (None, 0):
        loss = array_ops.reshape(loss, [])
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        return {k: _check_is_tensor(v, "predictions[%s]" % (k,)) for k, v in predictions.items()}
    return _check_is_tensor(predictions, "predictions")


def _validate_hooks(hooks):
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError("All hooks must be SessionRunHook instances, given: %r" % (hook,))
    return hooks


def _validate_eval_metric_ops(eval_metric_ops):
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError("eval_metric_ops must be a dict, given: %r" % (eval_metric_ops,))
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError("Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                            "given: %r for key: %s" % (value, key))
        for x in value:
            _check_in_default_graph(x, "eval_metric_ops[%s]" % key)
    return dict(eval_metric_ops)


def _validate_scaffold(scaffold):
    scaffold = scaffold or Scaffold()
    if not isinstance(scaffold, Scaffold):
        raise TypeError("scaffold must be tf.train.Scaffold. Given: %r" % (scaffold,))
    return scaffold
