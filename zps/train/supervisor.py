"""``tf.train.Supervisor``: TF1's training helper from before MonitoredTrainingSession.

A Supervisor wraps a Coordinator, a Saver and a SessionManager. ``managed_session()`` gives a
session whose model is ready (the chief restores the latest checkpoint of ``logdir`` or
initializes the model; other tasks wait until the chief has), and on the chief starts the
standard services: threads that save a checkpoint every ``save_model_secs``, write the summary
op's value every ``save_summaries_secs`` and record the steps per second. Leaving the block stops
those threads and closes the session; ``tf.errors.OutOfRangeError`` (input exhausted) ends it
cleanly, any other error is raised again once the threads have stopped.

>>> import tempfile, zps as tf
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     train_op = tf.assign_add(step, 1)
...     sv = tf.train.Supervisor(logdir=tempfile.mkdtemp(), save_model_secs=60)
...     with sv.managed_session("") as sess:
...         while not sv.should_stop():
...             if sess.run(train_op) == 100:
...                 sv.request_stop()
...         print(sess.run(step))
100
"""

import contextlib
import logging
import os
import time

from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import summary_ops, variables
from zps.ops.summary_proto import Summary
from zps.summary import FileWriter
from zps.train import coordinator, training_util
from zps.train.monitored_session import Scaffold
from zps.train.saver import Saver
from zps.train.session_manager import SessionManager

_logger = logging.getLogger("zps.train")

__all__ = ["Supervisor"]


class Supervisor:
    """A training helper that checkpoints the model and computes summaries (TF1 semantics).

    Pass ``Supervisor.USE_DEFAULT`` (the default) for ``ready_op``, ``ready_for_local_init_op``,
    ``init_op``, ``local_init_op``, ``summary_op``, ``saver``, ``global_step`` or
    ``summary_writer`` to take the first element of the graph's collection of that name, else
    TF1's default (``report_uninitialized_variables()``, none, ``global_variables_initializer()``,
    local variables and tables, ``tf.summary.merge_all()``, a Saver of all global variables, the
    graph's global step, a FileWriter on ``logdir``); pass None to go without it. Only the chief
    (``is_chief=True``) initializes or restores the model and writes checkpoints and summaries.
    The graph is finalized by the constructor.
    """

    # Value of the ops, saver, global_step and summary_writer arguments meaning "TF1's default".
    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT, saver=USE_DEFAULT,
                 global_step=USE_DEFAULT, save_summaries_secs=120, save_model_secs=600,
                 recovery_wait_secs=30, stop_grace_secs=120, checkpoint_basename="model.ckpt",
                 session_manager=None, summary_writer=USE_DEFAULT, init_fn=None,
                 local_init_run_options=None):
        graph = graph if graph is not None else get_default_graph()
        with graph.as_default():
            self._ready_op = _first_or_default(
                graph, GraphKeys.READY_OP, ready_op, Scaffold.default_ready_op)
            # None by default (TF1, for backward compatibility): local_init_op runs at once.
            self._ready_for_local_init_op = _first_or_default(
                graph, GraphKeys.READY_FOR_LOCAL_INIT_OP, ready_for_local_init_op, lambda: None)
            self._init_op = _first_or_default(
                graph, GraphKeys.INIT_OP, init_op, Scaffold.default_init_op)
            self._local_init_op = _first_or_default(
                graph, GraphKeys.LOCAL_INIT_OP, local_init_op, Scaffold.default_local_init_op)
            self._saver = _first_or_default(graph, GraphKeys.SAVERS, saver, _default_saver)
            self._summary_op = _first_or_default(
                graph, GraphKeys.SUMMARY_OP, summary_op, summary_ops.merge_all)
            self._global_step = (training_util.get_global_step(graph)
                                 if global_step is Supervisor.USE_DEFAULT else global_step)
        self._graph = graph
        self._init_feed_dict = init_feed_dict
        self._is_chief = is_chief
        self._coord = coordinator.Coordinator()
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn

        # Only a chief writes checkpoints and events.
        self._logdir = None
        self._save_summaries_secs = None
        self._save_model_secs = None
        self._save_path = None
        self._summary_writer = None
        self._writer_closed = False   # by stop(), until a session is made again
        self._graph_added_to_summary = False
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                os.makedirs(logdir, exist_ok=True)
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = _default_summary_writer(logdir)
            else:
                self._summary_writer = summary_writer

        if session_manager is None:
            session_manager = SessionManager(
                local_init_op=self._local_init_op, ready_op=self._ready_op,
                ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
                recovery_wait_secs=recovery_wait_secs,
                local_init_run_options=local_init_run_options)
        self._session_manager = session_manager
        self._verify_setup()
        graph.finalize()

    def _verify_setup(self):
        # A non-chief shares the chief's variables: each must be placed on a (ps) task.
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type == "VariableV2" and not op.device:
                raise ValueError(
                    "When using replicas, all Variables must have their device set: variable %r "
                    "has none. Build the model under tf.device(tf.train.replica_device_setter("
                    "...)) (or another device on the ps job), or pass is_chief=True for a single "
                    "process." % op.name)

    # -- properties ---------------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief, doc="Whether this is the chief supervisor.")
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord, doc="The Coordinator of the service threads.")
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path,
                         doc="The checkpoint prefix, ``<logdir>/<checkpoint_basename>``.")

    # -- sessions -----------------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        """A session on ``master`` whose model is ready.

        The chief restores the latest checkpoint of ``logdir`` or initializes the model (and,
        with ``start_standard_services``, starts the checkpoint and summary threads); other
        tasks wait up to ``max_wait_secs`` for the chief to do so. With
        ``start_standard_services`` the graph's queue runners are started too.
        """
        # A session made again after stop(): let the coordinator's threads run again.
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
            self._writer_closed = False
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                _logger.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            _logger.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """A context manager yielding a ready session (see ``prepare_or_wait_for_session``).

        On exit it stops the supervisor (joining its threads) and closes the session. An error
        raised in the block or by a service thread is raised again after that, except
        ``tf.errors.OutOfRangeError``, which ends the block as a normal termination.
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator; stop() re-raises it
            self.request_stop(e)
        finally:
            try:
                # Raises the first error reported to the coordinator.
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception as e:  # noqa: BLE001 - as TF1: the real error is above
                        _logger.debug("Ignored error closing the session: %s", e)

    # -- services -----------------------------------------------------------------------------
    def _write_graph(self):
        # TF1 also writes <logdir>/graph.pbtxt; zps's graph is in every checkpoint's .meta file.
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True

    def start_standard_services(self, sess):
        """Start the chief's service threads for ``sess`` and return them: a summary thread and
        a step-counter thread every ``save_summaries_secs`` (with a summary writer), a
        checkpoint thread every ``save_model_secs`` (with a saver). Needs a ``logdir``."""
        if not self._is_chief:
            raise RuntimeError("Only the chief supervisor can start the standard services, "
                               "because only the chief writes checkpoints and events: this "
                               "Supervisor has is_chief=False. Call prepare_or_wait_for_session("
                               "start_standard_services=...) only on the chief.")
        if not self._logdir:
            _logger.warning("The standard services (checkpoints, summaries) need a 'logdir' "
                            "passed to the Supervisor; none started.")
            return []
        if self._global_step is not None and self._summary_writer:
            # TensorBoard purges events after a restart by the step of the START message.
            self._summary_writer.add_session_log(
                "START", training_util.global_step(sess, self._global_step))
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(SVStepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(SVTimerCheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def start_queue_runners(self, sess, queue_runners=None):
        """Start the threads of ``queue_runners`` (default: the graph's QUEUE_RUNNERS
        collection) under the supervisor's coordinator; returns them."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """Start a thread calling ``target(*args, **kwargs)`` every ``timer_interval_secs``
        (back to back if None) until a stop is requested; ``stop()`` joins it."""
        return coordinator.LooperThread.loop(self._coord, timer_interval_secs, target,
                                             args=args, kwargs=kwargs)

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Stop the service, queue-runner and ``loop`` threads (and ``threads``), giving them
        ``stop_grace_secs`` to end; re-raise the first error reported to the coordinator.
        Does not close the session."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            # Last, as the threads may have been writing to it. Once: a second stop() (slim's
            # training loop stops inside managed_session, which stops again) does not write to
            # the closed writer (TF1 warns "Attempting to use a closed FileWriter" there).
            if close_summary_writer and self._summary_writer and not self._writer_closed:
                # Without a step: the session may be gone.
                self._summary_writer.add_session_log("STOP")
                self._summary_writer.close()
                self._writer_closed = True
                self._graph_added_to_summary = False

    def request_stop(self, ex=None):
        """Ask the threads to stop; ``ex`` (an exception or ``sys.exc_info()``) is re-raised by
        ``stop()``, unless it is an OutOfRangeError."""
        self._coord.request_stop(ex=ex)

    def should_stop(self):
        """Whether a stop was requested (by the program, a service thread, or an error)."""
        return self._coord.should_stop()

    def stop_on_exception(self):
        """A context in which any exception requests a stop (see Coordinator)."""
        return self._coord.stop_on_exception()

    def wait_for_stop(self, timeout=None):
        """Block until a stop is requested (or ``timeout`` seconds); returns whether it was."""
        return self._coord.wait_for_stop(timeout)

    def summary_computed(self, sess, summary, global_step=None):
        """Write ``summary`` (a summary op's value) at ``global_step`` (default: the current
        value of the supervisor's global step)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer: only a chief "
                               "Supervisor with a logdir (or a summary_writer) has one.")
        if global_step is None and self._global_step is not None:
            global_step = training_util.global_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)


def _first_or_default(graph, key, value, make_default):
    """``value``, unless it is USE_DEFAULT: then the first element of the collection ``key``, else
    ``make_default()`` (added to the collection when not None)."""
    if value is not Supervisor.USE_DEFAULT:
        return value
    found = graph.get_collection(key)
    if found:
        if len(found) > 1:
            _logger.info("Found %d %s operations. Using the first one.", len(found), key)
        return found[0]
    value = make_default()
    if value is not None:
        graph.add_to_collection(key, value)
    return value


def _default_saver():
    """A Saver of all global variables, one shard per device (on a cluster, each ps task writes
    its own variables); None when there is nothing to save."""
    return Saver(sharded=True) if variables.global_variables() else None


def _default_summary_writer(logdir):
    if not logdir:
        return None
    return FileWriter(logdir)


class SVSummaryThread(coordinator.LooperThread):
    """Writes the supervisor's summary op every ``save_summaries_secs``."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary, global_step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, global_step = self._sess.run(self._sv.summary_op), None
        _logger.info("Recording summary at step %s.", global_step)
        self._sv.summary_writer.add_summary(summary, global_step)


class SVStepCounterThread(coordinator.LooperThread):
    """Records the global steps per second ("global_step/sec") every ``save_summaries_secs``."""

    def __init__(self, sv, sess, step_counter=None):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._step_counter = sv.global_step if step_counter is None else step_counter
        self._summary_tag = "%s/sec" % self._step_counter.op.name
        self._last_time = 0.0
        self._last_step = 0
        self._logged = 0

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._step_counter)

    def run_loop(self):
        current_step = training_util.global_step(self._sess, self._step_counter)
        added_steps, self._last_step = current_step - self._last_step, current_step
        current_time = time.time()
        elapsed_time, self._last_time = current_time - self._last_time, current_time
        steps_per_sec = added_steps / elapsed_time if elapsed_time > 0 else float("inf")
        self._sv.summary_writer.add_summary(Summary(value=[Summary.Value(
            tag=self._summary_tag, simple_value=steps_per_sec)]), current_step)
        if self._logged < 10:   # TF1 logs the first 10
            self._logged += 1
            _logger.info("%s: %g", self._summary_tag, steps_per_sec)


class SVTimerCheckpointThread(coordinator.LooperThread):
    """Saves a checkpoint to ``sv.save_path`` every ``save_model_secs`` (first at once)."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        _logger.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            self._sv.summary_writer.add_session_log(
                "CHECKPOINT", training_util.global_step(self._sess, self._sv.global_step))
