"""SummarySaverHook: runs the summary op every N steps or seconds and writes what it returns to a
TensorBoard event file with the global step (TF1's basic_session_run_hooks.SummarySaverHook).

>>> import tempfile, zps as tf
>>> from zps.ops.summary_ops import scalar
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     _ = scalar("step", step)
...     train_op = tf.assign_add(step, 1)
...     hook = SummarySaverHook(save_steps=2, output_dir=tempfile.mkdtemp(),
...                             scaffold=tf.train.Scaffold())
...     with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
...         for _ in range(4):
...             _ = sess.run(train_op)
"""

from zps.summary import FileWriterCache
from zps.train.basic_session_run_hooks import SecondOrStepTimer, _require_global_step
from zps.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["SummarySaverHook"]


class SummarySaverHook(SessionRunHook):
    """Saves summaries every ``save_steps`` steps or ``save_secs`` seconds.

    Exactly one of ``scaffold`` (its ``summary_op``, by default ``tf.summary.merge_all()``) and
    ``summary_op`` (a summary tensor or a list of them) says what to run. Summaries go to
    ``summary_writer``, else to ``tf.summary.FileWriterCache.get(output_dir)``.
    """

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        if output_dir is None and summary_writer is None:
            raise ValueError("SummarySaverHook needs output_dir or summary_writer: it has nowhere "
                             "to write the summaries.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _require_global_step("SummarySaverHook")

    def before_run(self, run_context):
        self._request_summary = (self._next_step is None
                                 or self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary:
            summary_op = self._get_summary_op()
            if summary_op is not None:
                requests["summary"] = summary_op
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            add_session_log = getattr(self._summary_writer, "add_session_log", None)
            if add_session_log is not None:
                add_session_log("START", global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        summary_op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if summary_op is None:
            return None
        return summary_op if isinstance(summary_op, list) else [summary_op]
