"""TF1's standard hooks: stop at a step, save checkpoints, count steps, log and check tensors.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     train_op = tf.assign_add(step, 1)
...     hooks = [tf.train.StopAtStepHook(last_step=5)]
...     with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
...         while not sess.should_stop():
...             last = sess.run(train_op)
>>> int(last)
5
"""

import logging
import os
import time

import numpy as np

from zps.framework import errors
from zps.framework.graph import get_default_graph
from zps.train import training_util
from zps.train.session_run_hook import SessionRunArgs, SessionRunHook

_logger = logging.getLogger("zps.train")

# The collection caching the global step's read tensor (TF1's GLOBAL_STEP_READ_KEY).
_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"
_WAITER_POLL_SECS = 0.1   # GlobalStepWaiterHook's polling interval (TF1: 0.5 s)


def _get_or_create_global_step_read(graph=None):
    """A tensor reading the global step (``global_step + 0``), created once per graph.

    Hooks fetch it next to the caller's fetches; it is only ordered after the train op when the
    hooks read the step again with ``run_context.session`` (as TF1's hooks do).
    """
    graph = graph or get_default_graph()
    cached = graph.get_collection(_GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step = training_util.get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        value = step.initialized_value() if hasattr(step, "initialized_value") else step
        read = value + 0
    graph.add_to_collection(_GLOBAL_STEP_READ_KEY, read)
    return read


def _require_global_step(hook_name):
    step = _get_or_create_global_step_read()
    if step is None:
        raise RuntimeError("Global step should be created to use %s: call "
                           "tf.train.get_or_create_global_step() before building the train op."
                           % hook_name)
    return step


# -- timers --------------------------------------------------------------------------------------
class SecondOrStepTimer:
    """Triggers at most once every ``every_secs`` seconds or once every ``every_steps`` steps."""

    def __init__(self, every_secs=None, every_steps=None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step):
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step):
        """Record a trigger at ``step``; returns (elapsed secs, elapsed steps), None at first."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class NeverTriggerTimer:
    """A timer that never triggers (LoggingTensorHook with only ``at_end``)."""

    def reset(self):
        pass

    def should_trigger_for_step(self, step):
        return False

    def update_last_triggered_step(self, step):
        return (None, None)

    def last_triggered_step(self):
        return None


# -- hooks ---------------------------------------------------------------------------------------
class LoggingTensorHook(SessionRunHook):
    """Logs ``tensors`` (a dict tag -> tensor/name, or a list) every N local steps or seconds,
    and/or at the end; ``formatter(dict tag -> value)`` makes the line instead of "tag = value"."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors.keys())
        self._tensors = tensors
        self._formatter = formatter
        self._timer = (NeverTriggerTimer() if only_log_at_end else
                       SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter))
        self._log_at_end = at_end

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, tensor_values):
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter:
                _logger.info(self._formatter(tensor_values))
                return
            stats = ", ".join("%s = %s" % (tag, tensor_values[tag]) for tag in self._tag_order)
            if elapsed_secs is not None:
                _logger.info("%s (%.3f sec)", stats, elapsed_secs)
            else:
                _logger.info("%s", stats)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class StopAtStepHook(SessionRunHook):
    """Requests stop after ``num_steps`` more global steps, or once the global step reaches
    ``last_step`` (exactly one of the two)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step_tensor = _require_global_step("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = session.run(self._global_step_tensor) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        # The fetched value may have been read before this run's train op: read it again.
        if run_values.results + 1 >= self._last_step:
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Callbacks around CheckpointSaverHook's saves; ``after_save`` returning True stops training."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint when the session starts, every ``save_secs`` or ``save_steps``, and at
    the end, as ``<checkpoint_dir>/<checkpoint_basename>-<global step>``."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        _logger.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._steps_per_run = 1

    def _set_steps_per_run(self, steps_per_run):
        self._steps_per_run = steps_per_run

    def begin(self):
        # TF1 creates the directory here (through its summary writer); saving needs it.
        os.makedirs(self._checkpoint_dir, exist_ok=True)
        self._global_step_tensor = _require_global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        # The checkpoint saved here is the state at step "global_step".
        global_step = session.run(self._global_step_tensor)
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session):
        last_step = session.run(self._global_step_tensor)
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step):
        """Save a checkpoint for ``step``; returns True if a listener asked to stop."""
        _logger.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=int(step))
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _logger.info("A CheckpointSaverListener requested that training be stopped. "
                             "listener: %s", listener)
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        from zps.framework.graph import GraphKeys
        savers = get_default_graph().get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection %s. Please add a saver to the collection "
                               "or provide a saver or scaffold." % GraphKeys.SAVERS)
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection %s. Please indicate which one "
                               "to use by passing it to the constructor." % GraphKeys.SAVERS)
        self._saver = savers[0]
        return self._saver


class StepCounterHook(SessionRunHook):
    """Logs the global steps per second ("global_step/sec") every N steps or seconds, and writes
    it as a summary to ``summary_writer``, else to ``output_dir`` (``tf.summary.FileWriterCache``)."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._global_step_check_count = 0
        self._steps_per_run = 1

    def _set_steps_per_run(self, steps_per_run):
        self._steps_per_run = steps_per_run

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            from zps.summary import FileWriterCache
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _require_global_step("StepCounterHook")
        self._summary_tag = training_util.get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        steps_per_sec = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            from zps.ops.summary_proto import Summary
            self._summary_writer.add_summary(Summary(value=[Summary.Value(
                tag=self._summary_tag, simple_value=steps_per_sec)]), global_step)
        _logger.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        # Some optimizers (SyncReplicasOptimizer on a worker) do not increase the global step
        # every run; warn only when it stays put for a while.
        if stale_global_step == self._last_global_step:
            self._global_step_check_count += 1
            if self._global_step_check_count % 20 == 0:
                self._global_step_check_count = 0
                _logger.warning(
                    "It seems that global step (tf.train.get_global_step) has not been increased. "
                    "Current value (could be stable): %s vs previous value: %s. You could "
                    "increase the global step by passing tf.train.get_global_step() to "
                    "Optimizer.apply_gradients or Optimizer.minimize.",
                    stale_global_step, self._last_global_step)
        else:
            self._global_step_check_count = 0
        self._last_global_step = stale_global_step


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Checks ``loss_tensor`` after every run: NaN raises NanLossDuringTrainingError (or only
    requests stop when ``fail_on_nan_loss=False``)."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            failure_message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _logger.error(failure_message)
                raise NanLossDuringTrainingError
            _logger.warning(failure_message)
            run_context.request_stop()


class GlobalStepWaiterHook(SessionRunHook):
    """Delays this worker's first run until the global step reaches ``wait_until_step``."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _require_global_step("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _logger.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = run_context.session.run(self._global_step_tensor)
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                _logger.info("Waiting for global step %d before starting training. Current step "
                             "is %d.", self._wait_until_step, current_step)
                last_logged_step = current_step
            time.sleep(_WAITER_POLL_SECS)


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` (a tensor, list or dict) in ``end``; see ``final_ops_values``."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
        except (errors.OutOfRangeError, StopIteration):
            _logger.warning(
                "An OutOfRangeError or StopIteration was raised by the ops of a FinalOpsHook: they "
                "depend on an input source (e.g. a queue), which they should not; final ops "
                "should only read variables (e.g. a metric's value_op, not its update_op).")
            raise


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` (a dict tensor -> value) into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


def _as_graph_element(obj):
    """``obj`` (a tensor or a tensor/op name) as an element of the default graph."""
    graph = get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", None) is not graph:
            raise ValueError("Passed %s should have graph attribute that is equal to current "
                             "graph %s." % (obj, graph))
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        return element
    raise ValueError("Name %s is ambiguous, as this `Operation` has multiple outputs (at least 2)."
                     % obj)


__all__ = [
    "SecondOrStepTimer",
    "LoggingTensorHook",
    "StopAtStepHook",
    "CheckpointSaverListener",
    "CheckpointSaverHook",
    "StepCounterHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "GlobalStepWaiterHook",
    "FinalOpsHook",
    "FeedFnHook",
]
