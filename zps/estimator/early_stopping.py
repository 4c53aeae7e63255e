"""Early stopping (``tf.estimator.experimental.stop_if_*_hook``): training hooks that stop when
the metrics ``train_and_evaluate`` wrote to ``estimator.eval_dir()`` say so.

>>> import tempfile, numpy as np, zps as tf
>>> def model_fn(features, labels, mode):
...     w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
...     loss = tf.square(w - 1.0)
...     train_op = tf.train.GradientDescentOptimizer(0.25).minimize(
...         loss, tf.train.get_global_step())
...     return tf.estimator.EstimatorSpec(mode, {"w": w}, loss, train_op)
>>> input_fn = lambda: tf.data.Dataset.from_tensors(({"x": [0.0]}, [0.0])).repeat()
>>> est = tf.estimator.Estimator(model_fn, tempfile.mkdtemp(),
...                              tf.estimator.RunConfig(save_checkpoints_steps=1))
>>> hook = tf.estimator.experimental.stop_if_lower_hook(est, "loss", 0.01, run_every_secs=0)
>>> _ = tf.estimator.train_and_evaluate(
...     est, tf.estimator.TrainSpec(input_fn, max_steps=100, hooks=[hook]),
...     tf.estimator.EvalSpec(input_fn, steps=1, throttle_secs=0))
>>> int(est.get_variable_value("global_step"))    # loss 1, 0.25, 0.0625, 0.0156, 0.0039
4

As TF1's: the chief runs ``should_stop_fn`` (every ``run_every_secs`` or ``run_every_steps``)
and, when it says stop, sets the variable ``signal_early_stopping/STOP`` (on the ps tasks in a
cluster) and stops; the other workers read that variable after each step and stop when it is
set. The evaluator of a cluster is not stopped (TF1 neither): it waits for checkpoints until
the training's ``max_steps``.
"""

import collections
import logging
import operator
import os

from zps import gfile
from zps.estimator.estimator import Estimator
from zps.framework import dtypes, errors
from zps.framework.graph import GraphKeys
from zps.ops import init_ops, state_ops, variable_scope
from zps.summary import summary_iterator
from zps.train import training_util
from zps.train.basic_session_run_hooks import SecondOrStepTimer
from zps.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["make_early_stopping_hook", "read_eval_metrics", "stop_if_higher_hook",
           "stop_if_lower_hook", "stop_if_no_decrease_hook", "stop_if_no_increase_hook"]

_logger = logging.getLogger("zps.estimator")

_EVENT_FILE_GLOB_PATTERN = "events.out.tfevents.*"


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60, run_every_steps=None):
    """A hook that stops training when ``should_stop_fn()`` (no arguments) returns True, asked
    every ``run_every_secs`` seconds or every ``run_every_steps`` steps on the chief; on the
    other workers, a hook that stops when the chief has."""
    if not isinstance(estimator, Estimator):
        raise TypeError("`estimator` must have type `tf.estimator.Estimator`. Got: "
                        f"{type(estimator)}")
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of `run_every_secs` and `run_every_steps` must be set.")
    if estimator.config.is_chief:
        return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)
    return _CheckForStoppingHook()


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                        run_every_secs=60, run_every_steps=None):
    """A hook that stops training once an evaluation (at global step >= ``min_steps``) found
    ``metric_name`` higher than ``threshold``."""
    return _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, True, eval_dir,
                                           min_steps, run_every_secs, run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                       run_every_secs=60, run_every_steps=None):
    """A hook that stops training once an evaluation (at global step >= ``min_steps``) found
    ``metric_name`` lower than ``threshold``."""
    return _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, False, eval_dir,
                                           min_steps, run_every_secs, run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase, eval_dir=None,
                             min_steps=0, run_every_secs=60, run_every_steps=None):
    """A hook that stops training when the evaluations of the last
    ``max_steps_without_increase`` global steps (or more) found no higher ``metric_name``
    than the best one before them."""
    return _stop_if_no_metric_improvement_hook(estimator, metric_name, max_steps_without_increase,
                                               True, eval_dir, min_steps, run_every_secs,
                                               run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease, eval_dir=None,
                             min_steps=0, run_every_secs=60, run_every_steps=None):
    """A hook that stops training when the evaluations of the last
    ``max_steps_without_decrease`` global steps (or more) found no lower ``metric_name``
    than the best one before them."""
    return _stop_if_no_metric_improvement_hook(estimator, metric_name, max_steps_without_decrease,
                                               False, eval_dir, min_steps, run_every_secs,
                                               run_every_steps)


def read_eval_metrics(eval_dir):
    """``{global step: {metric name: value}}`` of the scalar summaries of the event files of
    ``eval_dir``, in the order of the steps."""
    metrics_by_step = collections.defaultdict(dict)
    for event in _summaries(eval_dir):
        if not event.HasField("summary"):
            continue
        metrics = {value.tag: value.simple_value for value in event.summary.value
                   if value.HasField("simple_value")}
        if metrics:
            metrics_by_step[event.step].update(metrics)
    return collections.OrderedDict(sorted(metrics_by_step.items()))


def _metric(metrics, metric_name, step, eval_dir):
    if metric_name not in metrics:
        raise KeyError("The evaluation at step %s in %s has no metric %r (it has %s): give "
                       "the early-stopping hook a metric the model_fn's eval_metric_ops (or "
                       "\"loss\") define." % (step, eval_dir, metric_name, sorted(metrics)))
    return metrics[metric_name]


def _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, higher_is_better,
                                    eval_dir, min_steps, run_every_secs, run_every_steps):
    eval_dir = estimator.eval_dir() if eval_dir is None else eval_dir
    is_lhs_better = operator.gt if higher_is_better else operator.lt
    greater_or_lesser = "greater than" if higher_is_better else "less than"

    def stop_if_threshold_crossed_fn():
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step, eval_dir)
            if is_lhs_better(value, threshold):
                _logger.info("At step %s, metric \"%s\" has value %s which is %s the configured "
                             "threshold (%s) for early stopping.", step, metric_name, value,
                             greater_or_lesser, threshold)
                return True
        return False

    return make_early_stopping_hook(estimator, stop_if_threshold_crossed_fn, run_every_secs,
                                    run_every_steps)


def _stop_if_no_metric_improvement_hook(estimator, metric_name, max_steps_without_improvement,
                                        higher_is_better, eval_dir, min_steps, run_every_secs,
                                        run_every_steps):
    eval_dir = estimator.eval_dir() if eval_dir is None else eval_dir
    is_lhs_better = operator.gt if higher_is_better else operator.lt
    increase_or_decrease = "increase" if higher_is_better else "decrease"

    def stop_if_no_metric_improvement_fn():
        best_value, best_step = None, None
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step < min_steps:
                continue
            value = _metric(metrics, metric_name, step, eval_dir)
            if best_value is None or is_lhs_better(value, best_value):
                best_value, best_step = value, step
            if step - best_step >= max_steps_without_improvement:
                _logger.info("No %s in metric \"%s\" for %s steps, which is greater than or "
                             "equal to max steps (%s) configured for early stopping.",
                             increase_or_decrease, metric_name, step - best_step,
                             max_steps_without_improvement)
                return True
        return False

    return make_early_stopping_hook(estimator, stop_if_no_metric_improvement_fn, run_every_secs,
                                    run_every_steps)


def _summaries(eval_dir):
    """The events of ``eval_dir``'s event files (the rest of a corrupt file skipped)."""
    if not gfile.Exists(eval_dir):
        return
    for event_file in gfile.Glob(os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN)):
        try:
            yield from summary_iterator(event_file)
        except errors.DataLossError as e:
            _logger.warning("Skipping rest of the file due to encountering data corruption "
                            "error; file path: %s; original error raised by "
                            "`tf.train.summary_iterator`: %s", event_file, e)


def _get_or_create_stop_var():
    """The boolean variable the chief sets to stop every worker (a global variable, so it lives
    on a ps task of a cluster and is checkpointed)."""
    with variable_scope.variable_scope("signal_early_stopping", values=[],
                                       reuse=variable_scope.AUTO_REUSE):
        return variable_scope.get_variable(
            "STOP", shape=[], dtype=dtypes.bool,
            initializer=init_ops.constant_initializer(False),
            collections=[GraphKeys.GLOBAL_VARIABLES], trainable=False)


class _StopOnPredicateHook(SessionRunHook):
    """The chief's: asks ``should_stop_fn`` every so often; when it says stop, sets the stop
    variable and stops."""

    def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None):
        if not callable(should_stop_fn):
            raise TypeError("`should_stop_fn` must be callable.")
        self._should_stop_fn = should_stop_fn
        self._timer = SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)

    def begin(self):
        self._global_step_tensor = training_util.get_global_step()
        self._stop_var = _get_or_create_stop_var()
        self._stop_op = state_ops.assign(self._stop_var, True)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        global_step = run_values.results
        if self._timer.should_trigger_for_step(global_step):
            self._timer.update_last_triggered_step(global_step)
            if self._should_stop_fn():
                _logger.info("Requesting early stopping at global step %d", global_step)
                run_context.session.run(self._stop_op)
                run_context.request_stop()


class _CheckForStoppingHook(SessionRunHook):
    """A non-chief worker's: stops once the chief has set the stop variable."""

    def begin(self):
        self._stop_var = _get_or_create_stop_var()

    def before_run(self, run_context):
        return SessionRunArgs(self._stop_var)

    def after_run(self, run_context, run_values):
        if run_values.results:
            _logger.info("Early stopping requested, suspending run.")
            run_context.request_stop()
