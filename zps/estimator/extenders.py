"""``tf.estimator.add_metrics``: an Estimator evaluated with more metrics.

>>> import tempfile, numpy as np, zps as tf
>>> x = tf.feature_column.numeric_column("x")
>>> est = tf.estimator.LinearRegressor([x], tempfile.mkdtemp(), optimizer="SGD")
>>> def rmse(labels, predictions):
...     return {"rmse": tf.metrics.root_mean_squared_error(labels, predictions["predictions"])}
>>> est = tf.estimator.add_metrics(est, rmse)
>>> data = lambda: tf.data.Dataset.from_tensor_slices(
...     ({"x": np.float32([1, 2])}, np.float32([[3], [4]]))).batch(2)
>>> float(est.evaluate(data)["rmse"])           # untrained: predictions 0
3.535533...
"""

from zps.estimator.estimator import Estimator
from zps.estimator.model_fn import ModeKeys
from zps.estimator.util import fn_args

__all__ = ["add_metrics"]

_VALID_METRIC_FN_ARGS = {"features", "labels", "predictions", "config"}


def add_metrics(estimator, metric_fn):
    """A new Estimator (same ``model_dir``, config and warm start) whose evaluations also run
    the metrics ``metric_fn`` returns: a dict of ``(value, update_op)`` pairs, from any of
    ``features``, ``labels``, ``predictions`` and ``config``; a name ``estimator`` already
    has is replaced."""
    _verify_metric_fn_args(metric_fn)

    def new_model_fn(features, labels, mode, config):
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        new_metrics = _call_metric_fn(metric_fn, features, labels, spec.predictions, config)
        all_metrics = dict(spec.eval_metric_ops or {})
        all_metrics.update(new_metrics)
        return spec._replace(eval_metric_ops=all_metrics)

    return Estimator(model_fn=new_model_fn, model_dir=estimator.model_dir,
                     config=estimator.config, warm_start_from=estimator._warm_start_settings)


def _verify_metric_fn_args(metric_fn):
    invalid_args = sorted(set(fn_args(metric_fn)) - _VALID_METRIC_FN_ARGS)
    if invalid_args:
        raise ValueError("metric_fn (%s) has following not expected args: %s (allowed: "
                         "features, labels, predictions, config)" % (metric_fn, invalid_args))


def _call_metric_fn(metric_fn, features, labels, predictions, config):
    args = fn_args(metric_fn)
    candidates = {"features": features, "labels": labels, "predictions": predictions,
                  "config": config}
    return metric_fn(**{name: value for name, value in candidates.items() if name in args})
