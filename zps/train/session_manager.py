"""SessionManager: creates sessions whose model is ready — restored, initialized, or waited for.

The chief calls ``prepare_session`` (restore the latest checkpoint of ``checkpoint_dir``, else run
``init_op`` / ``init_fn``); other workers call ``wait_for_session``, which returns as soon as the
chief has made the model ready. Unlike TF1, which checks readiness every ``recovery_wait_secs``
(30 s), the wait polls promptly (from 0.1 s, backing off to 0.5 s) and logs which variables it is
waiting for.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     v = tf.Variable(3.0, name="v")
...     sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
...     sess = sm.prepare_session("", init_op=tf.global_variables_initializer())
...     print(sess.run(v))
...     sess.close()
3.0
"""

import logging
import time

from zps.framework import errors
from zps.framework.graph import get_default_graph

_logger = logging.getLogger("zps.train")

_FIRST_POLL_SECS = 0.1   # first readiness re-check of wait_for_session
_MAX_POLL_SECS = 0.5     # the back-off stops here (and at recovery_wait_secs)
_LOG_EVERY_SECS = 10.0   # while waiting, repeat the "waiting for ..." line this often
_RETRYABLE = (errors.AbortedError, errors.UnavailableError)


def _maybe_name(obj):
    if obj is None:
        return "None"
    return getattr(obj, "name", "<no name for %s>" % type(obj))


def _new_session(master, graph, config):
    from zps.client.session import Session
    return Session(master, graph=graph, config=config)


class SessionManager:
    """Creates sessions, restoring or initializing the model, or waiting until it is ready.

    ``ready_op`` returns the names of the uninitialized variables (empty when the model is
    ready); ``local_init_op`` runs in every new session once ``ready_for_local_init_op`` is empty.
    """

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs=30, local_init_run_options=None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a "
                             "local_init_op , ready_for_local_init_op [%s]"
                             % _maybe_name(ready_for_local_init_op))
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._target = None

    # -- restore -----------------------------------------------------------------------------
    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None,
                            checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                            max_wait_secs=7200, config=None):
        """A new session, and whether a checkpoint was restored into it."""
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        self._target = master
        sess = _new_session(master, self._graph, config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        try:
            if checkpoint_filename_with_path:
                saver.restore(sess, checkpoint_filename_with_path)
                return sess, True
            from zps.train.checkpoint_management import get_checkpoint_state
            ckpt = get_checkpoint_state(checkpoint_dir)
            deadline = time.monotonic() + max_wait_secs
            delays = self._poll_delays()
            while not ckpt or not ckpt.model_checkpoint_path:
                if not wait_for_checkpoint or time.monotonic() >= deadline:
                    return sess, False
                _logger.info("Waiting for a checkpoint in %s.", checkpoint_dir)
                time.sleep(min(next(delays), max(0.0, deadline - time.monotonic())))
                ckpt = get_checkpoint_state(checkpoint_dir)
            _logger.info("Restoring the model from %s.", ckpt.model_checkpoint_path)
            saver.restore(sess, ckpt.model_checkpoint_path)
            # The saver's max_to_keep then also counts the checkpoints of earlier runs.
            recover = getattr(saver, "recover_last_checkpoints", None)
            if recover is not None:
                recover(list(ckpt.all_model_checkpoint_paths))
        except BaseException:
            _safe_close(sess)
            raise
        return sess, True

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        """A session whose model is ready: restored from the latest checkpoint of
        ``checkpoint_dir`` (or ``checkpoint_filename_with_path``) if there is one, else
        initialized by ``init_op`` (with ``init_feed_dict``) and ``init_fn(sess)``."""
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config)
        try:
            if not restored:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                       "local_init_op was given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            ok, msg = self._try_run_local_init_op(sess)
            if not ok:
                raise RuntimeError("Init operations did not make model ready for local_init.  "
                                   "Init op: %s, init fn: %s, error: %s"
                                   % (_maybe_name(init_op), init_fn, msg))
            ok, msg = self._model_ready(sess)
            if not ok:
                raise RuntimeError("Init operations did not make model ready.  Init op: %s, init "
                                   "fn: %s, local_init_op: %s, error: %s"
                                   % (_maybe_name(init_op), init_fn,
                                      _maybe_name(self._local_init_op), msg))
        except BaseException:
            _safe_close(sess)
            raise
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None):
        """``(sess, initialized)``: a session restored from a checkpoint if possible (then
        ``initialized`` is True once the model is ready), else an uninitialized one."""
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config)
        local_ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not local_ok:
            _logger.info("Restoring model from %s did not make model ready for local init: %s",
                         source, msg)
            return sess, False
        ready, msg = self._model_ready(sess)
        if not ready:
            _logger.info("Restoring model from %s did not make model ready: %s", source, msg)
            return sess, False
        _logger.info("Restored model from %s", source)
        return sess, True

    # -- wait --------------------------------------------------------------------------------
    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """A session on ``master`` once another task (the chief) has made the model ready.

        Never initializes the model itself (it only runs ``local_init_op``). Raises
        DeadlineExceededError naming what is still not ready after ``max_wait_secs``.
        """
        self._target = master
        if max_wait_secs is None:
            max_wait_secs = float("Inf")
        start = time.monotonic()
        delays = self._poll_delays()
        last_logged = None   # (time, message) of the last "waiting for" line
        sess = None
        while True:
            if sess is None:
                sess = _new_session(master, self._graph, config)
            try:
                local_ok, msg = self._try_run_local_init_op(sess)
                if local_ok:
                    ready, msg = self._model_ready(sess)
                    if ready:
                        _logger.info("Model is ready after %.1f secs; starting.",
                                     time.monotonic() - start)
                        return sess
                msg = "ready_for_local_init_op: %s" % msg if not local_ok else msg
            except _RETRYABLE as e:
                # A task of the cluster is not up (yet) or restarted: try again with a new session.
                msg = "cluster not reachable: %s" % (str(e).splitlines()[0],)
                _safe_close(sess)
                sess = None
            except BaseException:
                _safe_close(sess)
                raise
            waited = time.monotonic() - start
            delay = next(delays)
            if waited + delay > max_wait_secs:
                _safe_close(sess)
                raise errors.DeadlineExceededError(
                    None, None, "Session was not ready after waiting %s secs (max_wait_secs). Still "
                    "waiting for: %s. The chief (is_chief=True) initializes or restores the model; "
                    "check that it is running and reaches this cluster, or raise max_wait_secs."
                    % (_secs(max_wait_secs), msg))
            now = time.monotonic()
            if last_logged is None or last_logged[1] != msg or now - last_logged[0] >= _LOG_EVERY_SECS:
                _logger.info("Waiting for the model to be ready (%.1f secs so far). %s", waited, msg)
                last_logged = (now, msg)
            time.sleep(delay)

    def _poll_delays(self):
        """Seconds between readiness checks: 0.1 s doubling to 0.5 s (never above
        recovery_wait_secs), where TF1 sleeps recovery_wait_secs (30 s) every time."""
        delay = _FIRST_POLL_SECS
        while True:
            yield min(delay, self._recovery_wait_secs)
            delay = min(2 * delay, _MAX_POLL_SECS)

    # -- readiness ---------------------------------------------------------------------------
    def _model_ready(self, sess):
        return _ready(self._ready_op, sess)

    def _model_ready_for_local_init(self, sess):
        return _ready(self._ready_for_local_init_op, sess)

    def _try_run_local_init_op(self, sess):
        """``(True, None)`` once local_init_op ran (or there is none), else ``(False, why)``."""
        if self._local_init_op is None:
            return True, None
        ready, msg = self._model_ready_for_local_init(sess)
        if not ready:
            return False, msg
        _logger.info("Running local_init_op.")
        sess.run(self._local_init_op, options=self._local_init_run_options)
        _logger.info("Done running local_init_op.")
        return True, msg


def _ready(op, sess):
    """``(True, None)`` if ``op`` reports nothing uninitialized, else ``(False, why)``."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _logger.warning("Model not ready raised: %s", e)
            raise
        return False, str(e)
    if value is None or value.dtype.kind in "iu" or value.size == 0:
        return True, None
    names = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.ravel()]
    return False, "Variables not initialized: " + ", ".join(names)


def _secs(x):
    return "%g" % x


def _safe_close(sess):
    if sess is None:
        return
    try:
        sess.close()
    except Exception:  # noqa: BLE001 - closing a broken session must not hide the real error
        pass


__all__ = ["SessionManager"]
