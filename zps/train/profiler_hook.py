"""ProfilerHook: traces a step every N steps or seconds and writes it as a Chrome trace.

TF1's ``tf.train.ProfilerHook``: the traced steps run with ``RunOptions(trace_level=FULL_TRACE)``
and their step stats are written to ``<output_dir>/timeline-<global step>.json`` (open them at
chrome://tracing or https://ui.perfetto.dev). In a cluster, the trace holds every task the step ran
on: the worker's ops, each ps partition's ops (reads, applies, sends) and the ``_Recv`` waits.

>>> import os, tempfile
>>> import zps as tf
>>> from zps.train.profiler_hook import ProfilerHook
>>> out = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     train_op = tf.assign_add(step, 1)
...     hooks = [ProfilerHook(save_steps=2, output_dir=out),
...              tf.train.StopAtStepHook(last_step=5)]
...     with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
...         while not sess.should_stop():
...             _ = sess.run(train_op)
>>> sorted(os.listdir(out))
['timeline-2.json', 'timeline-4.json']
"""

import logging
import os

from zps.client import config
from zps.client.timeline import Timeline
from zps.train.basic_session_run_hooks import SecondOrStepTimer, _require_global_step
from zps.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["ProfilerHook"]

_logger = logging.getLogger("zps.train")


class ProfilerHook(SessionRunHook):
    """Captures a traced step every ``save_steps`` steps or ``save_secs`` seconds (exactly one
    of them) and saves it to ``output_dir/timeline-<global step>.json``."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._output_dir = output_dir
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        self._next_step = None
        self._global_step_tensor = _require_global_step("ProfilerHook")

    def before_run(self, run_context):
        self._request_summary = (self._next_step is not None
                                 and self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step_tensor}
        opts = (config.RunOptions(trace_level=config.RunOptions.FULL_TRACE)
                if self._request_summary else None)
        return SessionRunArgs(requests, options=opts)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results["global_step"]
        if self._next_step is None:
            # The timer starts now: the first traced step comes N steps or seconds later.
            self._timer.update_last_triggered_step(stale_global_step)
        global_step = stale_global_step + 1
        if self._request_summary:
            global_step = run_context.session.run(self._global_step_tensor)
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, self._output_file.format(global_step),
                       run_values.run_metadata.step_stats)
        self._next_step = global_step + 1

    def _save(self, step, save_path, step_stats):
        _logger.info("Saving timeline for %d into '%s'.", step, save_path)
        if self._output_dir:
            os.makedirs(self._output_dir, exist_ok=True)
        trace = Timeline(step_stats).generate_chrome_trace_format(
            show_dataflow=self._show_dataflow, show_memory=self._show_memory)
        tmp = save_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(trace)
        os.replace(tmp, save_path)
