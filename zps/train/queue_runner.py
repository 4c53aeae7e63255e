"""QueueRunner: threads that keep running a queue's enqueue ops (TF1's ``tf.train.QueueRunner``).

A QueueRunner holds a queue and the ops that fill it; ``create_threads(sess, coord)`` starts one
thread per enqueue op, each running its op in a loop until the coordinator stops or the input is
exhausted (an ``OutOfRangeError``: the last thread then closes the queue, so its readers drain
it and then get OutOfRangeError too). With a coordinator, one more thread closes the queue with
``cancel_pending_enqueues=True`` as soon as a stop is requested, so blocked enqueues end at once.

>>> import zps as tf
>>> from zps.ops.data_flow_ops import FIFOQueue
>>> from zps.train.coordinator import Coordinator
>>> from zps.train.queue_runner import QueueRunner
>>> with tf.Graph().as_default():
...     q = FIFOQueue(4, tf.float32, shapes=[])
...     qr = QueueRunner(q, [q.enqueue(1.0)])
...     with tf.Session() as sess:
...         coord = Coordinator()
...         threads = qr.create_threads(sess, coord=coord, start=True)
...         x = sess.run(q.dequeue_many(3))
...         coord.request_stop()
...         coord.join(threads, stop_grace_period_secs=5)
>>> x.tolist()
[1.0, 1.0, 1.0]
"""

import logging
import threading
import weakref

from zps.framework import default_session, errors
from zps.framework.graph import GraphKeys, get_default_graph

_logger = logging.getLogger(__name__)


class QueueRunner:
    """Holds a queue, its enqueue ops, and the ops that close it."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            raise NotImplementedError("QueueRunner(queue_runner_def=...) is not supported by zps: "
                                      "build the QueueRunner from its queue and enqueue ops.")
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (cancel_op if cancel_op is not None
                           else queue.close(cancel_pending_enqueues=True))
        if queue_closed_exception_types is None:
            self._queue_closed_exception_types = (errors.OutOfRangeError,)
        elif (not isinstance(queue_closed_exception_types, list | tuple)
              or not queue_closed_exception_types
              or not all(isinstance(t, type) and issubclass(t, errors.OpError)
                         for t in queue_closed_exception_types)):
            raise TypeError("queue_closed_exception_types, when provided, must be a tuple of "
                            "tf.error types, but saw: %s" % (queue_closed_exception_types,))
        else:
            self._queue_closed_exception_types = tuple(queue_closed_exception_types)
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._run_threads = weakref.WeakKeyDictionary()   # session -> idents of threads in _run
        self._exceptions_raised = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)

    @property
    def exceptions_raised(self):
        """Exceptions raised by the enqueue threads that had no coordinator to report to."""
        return self._exceptions_raised

    @property
    def name(self):
        """The name of the queue."""
        return self._queue.name

    def _run(self, sess, enqueue_op, coord=None):
        decremented = False
        with self._lock:
            self._run_threads.setdefault(sess, set()).add(threading.get_ident())
        try:
            make_callable = getattr(sess, "make_callable", None)
            enqueue = make_callable(enqueue_op) if make_callable else (lambda: sess.run(enqueue_op))
            while True:
                if coord and coord.should_stop():
                    break
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    # The input is exhausted: the last thread of this session closes the queue.
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # noqa: BLE001 - as TF1: logged and ignored
                                _logger.debug("Ignored exception: %s", e)
                        return
        except Exception as e:  # noqa: BLE001 - reported to the coordinator (or re-raised)
            if coord:
                coord.request_stop(e)
            else:
                _logger.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            with self._lock:
                self._run_threads.get(sess, set()).discard(threading.get_ident())
                if not decremented:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord):
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - as TF1: the session may be closed already
            _logger.debug("Ignored exception: %s", e)
        # Closing the queue ends the enqueues blocked on it, not a run blocked on something
        # else (a SyncReplicasOptimizer chief's runner waits for gradients that, once the other
        # workers have stopped, never come): cancel what this runner's threads still run, so
        # that the coordinator's join does not wait out its grace period (TF1 does).
        cancel = getattr(sess, "_cancel_runs_of", None)
        with self._lock:
            threads = set(self._run_threads.get(sess, ()))
        if cancel is not None and threads:
            try:
                cancel(threads, errors.CancelledError(
                    None, None, "the coordinator stopped queue runner '%s'" % self.name))
            except Exception as e:  # noqa: BLE001 - as above: the session may be closed already
                _logger.debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """Threads running the enqueue ops in ``sess`` (and, with ``coord``, one that closes the
        queue when a stop is requested). Returns [] if threads for ``sess`` are still running."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name="QueueRunnerThread-%s-%s" % (self.name, op.name))
                   for op in self._enqueue_ops]
        if coord:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, self._cancel_op, coord),
                                            name="QueueRunnerThread-%s" % self.name))
        for t in threads:
            if coord:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    """Add ``qr`` to the graph's collection of queue runners (started by start_queue_runners)."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=GraphKeys.QUEUE_RUNNERS):
    """Start the threads of every QueueRunner in the graph's ``collection``; returns them."""
    if sess is None:
        sess = default_session.get()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. Use "
                             "`with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
        # TF1: a monitored session starts its graph's queue runners itself.
        return []
    if not hasattr(sess, "run") or not hasattr(sess, "graph"):
        raise TypeError("sess must be a `tf.Session` object. Given class: %s" % type(sess))
    runners = sess.graph.get_collection(collection)
    if not runners:
        _logger.warning("`tf.train.start_queue_runners()` was called when no queue runners were "
                        "defined. You can safely remove the call to this function.")
    with sess.graph.as_default():
        threads = []
        for qr in runners:
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]
