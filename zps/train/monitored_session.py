"""MonitoredSession and MonitoredTrainingSession: sessions that initialize or restore the model,
run hooks around every step, and recover from a lost task by recreating the session.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     train_op = tf.assign_add(step, 1)
...     with tf.train.MonitoredTrainingSession(
...             hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
...         while not sess.should_stop():
...             done = sess.run(train_op)
>>> int(done)
3

How a session is wrapped (as in TF1): ``_RecoverableSession`` (recreates the session after
AbortedError / UnavailableError) around ``_CoordinatedSession`` (a Coordinator for queue runner
threads) around ``_HookedSession`` (calls the hooks) around the ``tf.Session``. Unlike TF1,
closing does not wait ``stop_grace_period_secs`` for threads blocked in a step: the session is
closed (cancelling those steps) before the threads are joined.
"""

import inspect
import logging
import time

from zps.framework import errors
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import summary_ops
from zps.train import basic_session_run_hooks as hooks_lib
from zps.train import queue_runner
from zps.train.coordinator import Coordinator
from zps.train.session_manager import SessionManager
from zps.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues
from zps.train.summary_hook import SummarySaverHook

_logger = logging.getLogger("zps.train")

# The errors after which a monitored session recreates its session (a task restarted or is gone).
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
_RECREATE_FIRST_DELAY_SECS = 0.1   # back-off between failed session creations (TF1: none)
_RECREATE_MAX_DELAY_SECS = 2.0

# Value that indicates no value was provided.
USE_DEFAULT = object()

_EVAL_ADVICE = (
    "To evaluate the model after training, do it in a hook's end(session) method (e.g. "
    "tf.train.FinalOpsHook, whose ops run with the raw session when the monitored session "
    "closes), or open a new session afterwards, e.g. tf.train.SingularMonitoredSession("
    "checkpoint_dir=...) or a tf.Session that restores the latest checkpoint.")
_RUN_AFTER_STOP_MESSAGE = (
    "Run called even after should_stop requested: the monitored session has finished (a hook, "
    "e.g. StopAtStepHook, requested stop). " + _EVAL_ADVICE)


# -- Scaffold ------------------------------------------------------------------------------------
class Scaffold:
    """The pieces a training session needs (init, ready and local-init ops, a saver, a summary op),
    taken from the graph's collections or created with TF1's defaults by ``finalize()``."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            other = copy_from_scaffold

            def coalesce(a, b):
                return a if a is not None else b
            init_op = coalesce(init_op, other.init_op)
            init_feed_dict = coalesce(init_feed_dict, other.init_feed_dict)
            init_fn = coalesce(init_fn, other._user_init_fn)
            ready_op = coalesce(ready_op, other.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op, other.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, other.local_init_op)
            summary_op = coalesce(summary_op, other.summary_op)
            saver = coalesce(saver, other.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self):
        """Create the missing pieces (TF1's defaults) and finalize the default graph."""
        from zps.ops import array_ops, resources, variables

        def default_ready_for_local_init_op():
            return array_ops.concat([
                variables.report_uninitialized_variables(variables.global_variables()),
                resources.report_uninitialized_resources(resources.shared_resources())], 0)

        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP,
                                                    Scaffold.default_init_op)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", GraphKeys.READY_OP,
                                                     Scaffold.default_ready_op)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", GraphKeys.READY_FOR_LOCAL_INIT_OP,
                default_ready_for_local_init_op)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default(
                "summary_op", GraphKeys.SUMMARY_OP, _merge_all_summaries)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        build = getattr(self._saver, "build", None)
        if build is not None:
            build()
        get_default_graph().finalize()
        _logger.info("Graph was finalized.")
        return self

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one element of ``collection_key``, else ``default_constructor()`` (added to it)."""
        graph = get_default_graph()
        elements = graph.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError('More than one item in the collection "%s". Please indicate '
                                   "which one to use by passing it to the tf.train.Scaffold "
                                   "constructor as: tf.train.Scaffold(%s=item to use)"
                                   % (collection_key, arg_name))
            return elements[0]
        op = default_constructor()
        if op is not None:
            graph.add_to_collection(collection_key, op)
        return op

    # As TF1's Scaffold: shared resources (e.g. hash embedding shards) are initialized by the init
    # op and reported by the ready ops like variables, so a restarted ps task holding only
    # resources makes the model "not ready" and the chief restores it.
    @staticmethod
    def default_init_op():
        """Initialize the global variables and the shared resources."""
        from zps.ops import control_flow_ops, resources, variables
        return control_flow_ops.group(variables.global_variables_initializer(),
                                      resources.initialize_resources(resources.shared_resources()))

    @staticmethod
    def default_ready_op():
        """The names of the variables and resources not initialized yet."""
        from zps.ops import array_ops, resources, variables
        return array_ops.concat([variables.report_uninitialized_variables(),
                                 resources.report_uninitialized_resources()], 0)

    @staticmethod
    def default_local_init_op():
        """Initialize the local variables, tables and local resources (TF1's default)."""
        from zps.ops import control_flow_ops, resources, variables
        tables = get_default_graph().get_collection(_TABLE_INITIALIZERS)
        return control_flow_ops.group(variables.local_variables_initializer(), *tables,
                                      resources.initialize_resources(resources.local_resources()))


_TABLE_INITIALIZERS = getattr(GraphKeys, "TABLE_INITIALIZERS", "table_initializer")


def _merge_all_summaries():
    return summary_ops.merge_all()


def _get_saver_or_default():
    """The one Saver of the SAVERS collection, else a new ``Saver(sharded=True, allow_empty=True)``."""
    graph = get_default_graph()
    savers = graph.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection %s. Please indicate which one to "
                               "use by passing it to the constructor." % GraphKeys.SAVERS)
        return savers[0]
    from zps.train.saver import Saver
    saver = Saver(sharded=True, allow_empty=True)
    if saver not in graph.get_collection(GraphKeys.SAVERS):   # zps's Saver may add itself
        graph.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


# -- session creators ----------------------------------------------------------------------------
class SessionCreator:
    """A factory of (initialized) sessions."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for %s." % self)


class _ScaffoldSessionCreator(SessionCreator):
    """What the chief's and the workers' creators share: a scaffold, a master, a config, and one
    SessionManager made from the finalized scaffold."""

    def __init__(self, scaffold, master, config):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._session_manager = None

    def _get_session_manager(self):
        if self._session_manager is None:
            self._session_manager = _session_manager_for(self._scaffold)
        return self._session_manager


class ChiefSessionCreator(_ScaffoldSessionCreator):
    """Creates the chief's session: restores the latest checkpoint of ``checkpoint_dir``, or
    initializes the model."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict, init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(_ScaffoldSessionCreator):
    """Creates a non-chief's session: waits (at most ``max_wait_secs``) until the chief has
    initialized or restored the model; never initializes it."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs)


def _session_manager_for(scaffold):
    return SessionManager(local_init_op=scaffold.local_init_op, ready_op=scaffold.ready_op,
                          ready_for_local_init_op=scaffold.ready_for_local_init_op,
                          graph=get_default_graph())


# -- monitored sessions --------------------------------------------------------------------------
class _MonitoredSession:
    """See MonitoredSession and SingularMonitoredSession."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph_was_finalized = get_default_graph().finalized
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._coordinated_creator = self._CoordinatedSessionCreator(
            session_creator=session_creator or ChiefSessionCreator(), hooks=self._hooks,
            stop_grace_period_secs=stop_grace_period_secs)
        try:
            if should_recover:
                self._sess = _RecoverableSession(self._coordinated_creator)
            else:
                self._sess = self._coordinated_creator.create_session()
        except BaseException:
            self._unfinalize()
            raise

    @property
    def graph(self):
        """The graph that was launched in this session."""
        tf_sess = self._tf_sess()
        return None if tf_sess is None else tf_sess.graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """``Session.run`` with the hooks called around it (same arguments and results)."""
        if self._sess is None:
            raise RuntimeError("Attempted to use a closed MonitoredSession. " + _EVAL_ADVICE)
        return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                              run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Run ``step_fn(step_context)``: it may use ``step_context.session`` (no hooks),
        ``step_context.run_with_hooks(...)`` and ``step_context.request_stop()``."""
        params = tuple(inspect.signature(step_fn).parameters)
        if params not in (("step_context",), ("self", "step_context")):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` and "
                             "`step_context` arguments if it's an instance method. Got %s instead."
                             % (params,))
        if self._sess is None:
            raise RuntimeError("Attempted to use a closed MonitoredSession.")
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    class StepContext:
        """What ``run_step_fn`` gives its ``step_fn``: the raw session and a hooked run."""

        def __init__(self, session, run_with_hooks_fn):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            raise StopIteration("step_fn has requested the iterations to stop.")

    def should_stop(self):
        return self._sess is None or self._sess.should_stop()

    def close(self):
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    class _CoordinatedSessionCreator(SessionCreator):
        """Creates the session, starts the queue runners, calls ``after_create_session``."""

        def __init__(self, session_creator, hooks, stop_grace_period_secs):
            self._session_creator = session_creator
            self._hooks = hooks
            self.coord = None
            self.tf_sess = None
            self._stop_grace_period_secs = stop_grace_period_secs

        def create_session(self):
            self.tf_sess = self._session_creator.create_session()
            # The coordinator must not swallow any exception of the threads.
            self.coord = Coordinator(clean_stop_exception_types=[])
            if get_default_graph().get_collection(GraphKeys.QUEUE_RUNNERS):
                queue_runner.start_queue_runners(sess=self.tf_sess, coord=self.coord)
            for hook in self._hooks:
                hook.after_create_session(self.tf_sess, self.coord)
            return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                       self._stop_grace_period_secs)

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type:
                for h in self._hooks:
                    h.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                self._unfinalize()

    def _unfinalize(self):
        if not self._graph_was_finalized:
            get_default_graph()._unsafe_unfinalize()

    def _is_closed(self):
        return self._coordinated_creator.tf_sess is None

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess


class MonitoredSession(_MonitoredSession):
    """A session that initializes or restores the model (through ``session_creator``, by
    default a ChiefSessionCreator), calls ``hooks`` around every run, and recreates its session
    after AbortedError / UnavailableError.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Variable(1.0)
    ...     with tf.train.MonitoredSession() as sess:
    ...         print(sess.run(v))
    1.0
    """

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A chief's MonitoredSession that does not recover from errors and gives access to the
    raw session (``raw_session()``)."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        session_creator = ChiefSessionCreator(
            scaffold=scaffold, master=master, config=config, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(session_creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        """The underlying ``tf.Session``."""
        return self._tf_sess()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None,  # noqa: N802 - TF1 name
                             scaffold=None, hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """A MonitoredSession for training: the chief restores the latest checkpoint of
    ``checkpoint_dir`` or initializes the model, and saves checkpoints (every 600 s by default);
    other workers wait for the chief (at most ``max_wait_secs``).

    The chief's hooks run in TF1's order: ``chief_only_hooks``, StepCounterHook (with
    ``summary_dir`` or ``checkpoint_dir``), CheckpointSaverHook (with ``checkpoint_dir``), then
    ``hooks``. A non-chief runs only ``hooks``.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None

    scaffold = scaffold or Scaffold()
    if not is_chief:
        session_creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                               max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=session_creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)

    all_hooks = list(chief_only_hooks or [])
    session_creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                          master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(output_dir=summary_dir,
                                                       every_n_steps=log_step_count_steps))
        if ((save_summaries_steps and save_summaries_steps > 0)
                or (save_summaries_secs and save_summaries_secs > 0)):
            all_hooks.append(SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(hooks_lib.CheckpointSaverHook(
            checkpoint_dir, save_steps=save_checkpoint_steps, save_secs=save_checkpoint_secs,
            scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=session_creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)


# -- session wrappers ----------------------------------------------------------------------------
class _WrappedSession:
    """Wraps a ``tf.Session`` or another wrapper; adds ``should_stop`` and a close that does not
    raise on preemption errors."""

    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, _WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self):
        return self._sess.sess_str

    def should_stop(self):
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self):
        return False

    def close(self):
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                _logger.warning("An error occurred when attempting to close the session. This may "
                                "be due to a preemption in a connected worker or parameter server. "
                                "Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        run_with_hooks = run_with_hooks or self.run
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks))


class _RecoverableSession(_WrappedSession):
    """Recreates its session (closing the old one) when a call raises AbortedError or
    UnavailableError, then repeats the call; each recovery is logged."""

    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        self._recoveries = 0
        _WrappedSession.__init__(self, self._create_session())

    def _create_session(self):
        delay = _RECREATE_FIRST_DELAY_SECS
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                _logger.warning("Creating a session failed (%s: %s); a task of the cluster may be "
                                "restarting. Trying again in %.1f secs.",
                                type(e).__name__, _first_line(e), delay)
                time.sleep(delay)
                delay = min(2 * delay, _RECREATE_MAX_DELAY_SECS)

    def _recover(self, error):
        self._recoveries += 1
        _logger.warning("Recovering the monitored session (recovery #%d) after %s: %s. The session "
                        "is closed and a new one created (the chief restores the latest checkpoint "
                        "or re-initializes; other workers wait for it).",
                        self._recoveries, type(error).__name__, _first_line(error).rstrip("."))
        self.close()
        self._sess = None

    def _check_stop(self):
        try:
            if self._sess:
                return self._sess._check_stop()
            return True
        except _PREEMPTION_ERRORS as e:
            self._recover(e)
            self._sess = self._create_session()
            return False   # a new session: the computation goes on
        except Exception:  # noqa: BLE001 - should_stop returns True rather than raising
            return True

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
            except _PREEMPTION_ERRORS as e:
                self._recover(e)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run_step_fn(step_fn, raw_session, self._sess.run)
            except _PREEMPTION_ERRORS as e:
                self._recover(e)


class _CoordinatedSession(_WrappedSession):
    """Reports run errors through the coordinator of the queue-runner threads; ``close`` stops
    and joins those threads before closing the session."""

    def __init__(self, sess, coord, stop_grace_period_secs=120):
        _WrappedSession.__init__(self, sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self):
        # An exception a thread stopped the coordinator with surfaces here.
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self):
        # TF1 joins the threads first and closes the session after; a thread blocked in a step
        # (a sync chief's queue runner waiting for gradients) then holds close() for the whole
        # stop_grace_period_secs. Closing the session first cancels such steps, so the threads
        # end at once and join() returns promptly.
        self._coord.request_stop()
        try:
            _WrappedSession.close(self)
        except Exception:  # noqa: BLE001 - join() below reports the useful errors
            _logger.debug("Ignored an error while closing the session.", exc_info=True)
        self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                         ignore_live_threads=True)

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as original:
            # A preemption seen by a thread is the root cause of this error: raise that instead.
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001 - fall through to the original error
                pass
            raise original


class _HookedSession(_WrappedSession):
    """Calls the hooks' ``before_run`` / ``after_run`` around every run, merging their fetches
    and feeds into the caller's; stops once a hook requested it."""

    def __init__(self, sess, hooks):
        _WrappedSession.__init__(self, sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self):
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError(_RUN_AFTER_STOP_MESSAGE)
        actual_fetches = {"caller": fetches}
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict),
                                        session=self._sess)
        options = options or _run_options()
        feed_dict = self._call_hook_before_run(run_context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata or _run_metadata()
        outputs = _WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict,
                                      options=options, run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(results=outputs.get(hook),
                                                         options=options, run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context, fetch_dict, user_feed_dict, options):
        hook_feeds = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                fetch_dict[hook] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(hook_feeds, request.feed_dict,
                                          "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(user_feed_dict, hook_feeds,
                                  "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds


def _raise_if_feeds_intersect(feeds1, feeds2, message):
    intersection = set(feeds1) & set(feeds2)
    if intersection:
        raise RuntimeError(message + " Conflict(s): " + str(list(intersection)))


def _merge_run_options(options, incoming):
    """Merge ``incoming`` RunOptions into ``options``: numbers take the max, flags the OR."""
    for field in ("trace_level", "timeout_in_ms", "inter_op_thread_pool"):
        setattr(options, field, max(getattr(options, field), getattr(incoming, field)))
    for field in ("output_partition_graphs", "report_tensor_allocations_upon_oom"):
        setattr(options, field, getattr(options, field) or getattr(incoming, field))


def _run_options():
    from zps.client.config import RunOptions
    return RunOptions()


def _run_metadata():
    from zps.client.config import RunMetadata
    return RunMetadata()


def _first_line(error):
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


__all__ = [
    "Scaffold",
    "SessionCreator",
    "ChiefSessionCreator",
    "WorkerSessionCreator",
    "MonitoredSession",
    "SingularMonitoredSession",
    "MonitoredTrainingSession",
]
