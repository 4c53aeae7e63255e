"""Training hooks of ``tf.estimator.experimental``: ``InMemoryEvaluatorHook`` evaluates during
training with the training session's variable values (no checkpoint), and
``make_stop_at_checkpoint_step_hook`` stops the non-chief workers once the chief's checkpoint
reached a step.

>>> import tempfile, numpy as np, zps as tf
>>> def model_fn(features, labels, mode):
...     w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
...     loss = tf.square(w - 1.0)
...     train_op = tf.train.GradientDescentOptimizer(0.25).minimize(
...         loss, tf.train.get_global_step())
...     return tf.estimator.EstimatorSpec(mode, {"w": w}, loss, train_op)
>>> input_fn = lambda: tf.data.Dataset.from_tensors(({"x": [0.0]}, [0.0])).repeat()
>>> est = tf.estimator.Estimator(model_fn, tempfile.mkdtemp())
>>> evaluator = tf.estimator.experimental.InMemoryEvaluatorHook(
...     est, input_fn, steps=1, every_n_iter=2)
>>> est = est.train(input_fn, hooks=[evaluator], steps=4)
>>> from zps.estimator.early_stopping import read_eval_metrics
>>> {step: m["loss"] for step, m in read_eval_metrics(est.eval_dir()).items()}
{0: 1.0, 2: 0.0625, 4: 0.00390625}
"""

import os
import time

from zps.estimator import estimator as estimator_lib
from zps.framework.graph import Graph, GraphKeys, get_default_graph
from zps.ops import array_ops, control_flow_ops, state_ops
from zps.train import basic_session_run_hooks as hooks_lib
from zps.train import checkpoint_management
from zps.train.monitored_session import Scaffold
from zps.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["InMemoryEvaluatorHook", "make_stop_at_checkpoint_step_hook"]


class InMemoryEvaluatorHook(SessionRunHook):
    """Evaluates ``estimator`` on ``input_fn`` (``steps`` batches, or all) with the values the
    training session's variables have: when the session is created, every ``every_n_iter``
    training steps, and at the end. Results go to ``eval_dir(name)`` as ``evaluate``'s do.

    As TF1's, local training only, and the model's variables only (no custom saver or
    init_fn in the EVAL spec's scaffold).
    """

    def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
                 every_n_iter=100):
        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
            raise ValueError("InMemoryEvaluator supports only single machine (aka Local) "
                             "setting.")
        self._estimator = estimator
        self._input_fn = input_fn
        self._eval_dir = estimator.eval_dir(name)
        self._graph = None
        self._hooks = estimator_lib._check_hooks_type(hooks)
        self._hooks.extend(estimator._convert_eval_steps_to_hooks(steps))
        self._timer = hooks_lib.SecondOrStepTimer(every_steps=every_n_iter)

    def begin(self):
        """Build the EVAL graph, with a placeholder to feed each global variable."""
        self._timer.reset()
        self._iter_count = 0
        self._graph = Graph()
        with self._graph.as_default():
            (self._scaffold, self._update_op, self._eval_dict,
             self._all_hooks) = self._estimator._evaluate_build_graph(
                 self._input_fn, self._hooks, checkpoint_path=None)
            if self._scaffold.saver is not None:
                raise ValueError("InMemoryEvaluator does not support custom saver")
            if self._scaffold.init_fn is not None:
                raise ValueError("InMemoryEvaluator does not support custom init_fn")
            eval_vars = self._graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            self._var_name_to_eval_var = {v.name: v for v in eval_vars}
            self._var_name_to_placeholder = {v.name: array_ops.placeholder(v.dtype.base_dtype)
                                             for v in eval_vars}

    def after_create_session(self, session, coord):
        """The first evaluation: the model before training (or as restored)."""
        train_vars = {v.name: v for v in get_default_graph().get_collection(
            GraphKeys.GLOBAL_VARIABLES)}
        names = sorted(set(self._var_name_to_placeholder) & set(train_vars))
        self._var_name_to_train_var = {name: train_vars[name] for name in names}
        with self._graph.as_default():
            self._var_feed_op = control_flow_ops.group(*[
                state_ops.assign(self._var_name_to_eval_var[name],
                                 self._var_name_to_placeholder[name]) for name in names])
        self._evaluate(session)

    def _evaluate(self, train_session):
        values = train_session.run(self._var_name_to_train_var)
        scaffold = Scaffold(init_op=self._var_feed_op, init_feed_dict={
            self._var_name_to_placeholder[name]: value for name, value in values.items()},
            copy_from_scaffold=self._scaffold)
        with self._graph.as_default():
            self._estimator._evaluate_run(None, scaffold, self._update_op, self._eval_dict,
                                          self._all_hooks, self._eval_dir)
        self._timer.update_last_triggered_step(self._iter_count)

    def after_run(self, run_context, run_values):
        self._iter_count += 1
        if self._timer.should_trigger_for_step(self._iter_count):
            self._evaluate(run_context.session)

    def end(self, session):
        """The last evaluation: the final model."""
        self._evaluate(session)


class _StopAtCheckpointStepHook(SessionRunHook):
    """Stops once the latest checkpoint of ``model_dir`` is at ``last_step`` or later (read
    when this worker's steps say it may be, then at most every
    ``wait_after_file_check_secs``)."""

    def __init__(self, model_dir, last_step, wait_after_file_check_secs=30):
        if last_step is None:
            raise ValueError("last_step must be specified.")
        if model_dir is None:
            raise ValueError("model_dir must be specified.")
        self._model_dir = model_dir
        self._last_step = last_step
        self._wait_after_file_check_secs = wait_after_file_check_secs

    def begin(self):
        self._global_step_tensor = hooks_lib._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StopAtCheckpointStepHook.")

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 < self._last_step:
            return
        if _checkpoint_global_step(self._model_dir) >= self._last_step:
            run_context.request_stop()
        else:
            time.sleep(self._wait_after_file_check_secs)


def _checkpoint_global_step(model_dir):
    path = checkpoint_management.latest_checkpoint(model_dir)
    if not path:
        return 0
    return int(checkpoint_management.load_variable(path, GraphKeys.GLOBAL_STEP))


def make_stop_at_checkpoint_step_hook(estimator, last_step, wait_after_file_check_secs=30):
    """On the chief a ``StopAtStepHook(last_step=last_step)``; on the other workers a hook
    that stops once the chief's latest checkpoint in ``model_dir`` is at ``last_step``."""
    if estimator.config.is_chief:
        return hooks_lib.StopAtStepHook(last_step=last_step)
    return _StopAtCheckpointStepHook(os.fspath(estimator.model_dir), last_step,
                                     wait_after_file_check_secs)
