"""Coordinator: lets a group of threads stop together, and reports the error that stopped them.

TF1's ``tf.train.Coordinator``. Threads loop ``while not coord.should_stop()``; any of them calls
``coord.request_stop(ex)`` (or wraps its body in ``coord.stop_on_exception()``) to stop all;
the main thread calls ``coord.join(threads)``, which waits for the threads and re-raises the first
reported exception.

>>> import threading
>>> from zps.train.coordinator import Coordinator
>>> coord = Coordinator()
>>> def work():
...     with coord.stop_on_exception():
...         raise ValueError("bad input")
>>> t = threading.Thread(target=work)
>>> coord.register_thread(t)
>>> t.start()
>>> try:
...     coord.join(stop_grace_period_secs=5)
... except ValueError as e:
...     print("joined:", e)
joined: bad input
"""

import contextlib
import logging
import sys
import threading
import time

from zps.framework import errors

_logger = logging.getLogger(__name__)

# How often join() checks whether its threads have all ended while no stop was requested.
_JOIN_POLL_SECS = 0.05


class Coordinator:
    """A coordinator for threads (TF1 semantics).

    ``clean_stop_exception_types``: exceptions that stop the threads without being reported by
    ``join`` (default ``(tf.errors.OutOfRangeError,)``: input exhausted is a clean stop).
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        instance = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(instance, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex=None):
        """Ask every thread to stop; ``ex`` (an exception or an ``exc_info`` tuple) is the reason,
        and the first one reported is re-raised by ``join``."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                # Nobody will join again to report it: raise it where it happened.
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    _logger.info("Error reported to Coordinator: %s", ex[1], exc_info=ex)
                    self._exc_info_to_raise = ex
                else:
                    _logger.info("Error reported to Coordinator: %s, %s", type(ex), ex)
                    # TF1 insists that ``ex`` is the exception being handled; any exception
                    # instance is accepted here, with its own traceback.
                    self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                if not (len(self._exc_info_to_raise) == 3 and self._exc_info_to_raise[0]
                        and self._exc_info_to_raise[1] is not None):
                    try:
                        raise ValueError("ex must be an exception or a (type, value, traceback) "
                                         "tuple: %r" % (self._exc_info_to_raise,))
                    except ValueError:
                        self._exc_info_to_raise = sys.exc_info()
            self._stop_event.set()

    def clear_stop(self):
        """Forget the stop request and its exception, so the coordinator can be used again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def should_stop(self):
        """Whether a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context in which any exception requests a stop (and is reported by ``join``)."""
        try:
            yield
        except:  # noqa: E722 - TF1 reports every exception, including SystemExit
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """Wait until a stop is requested (or ``timeout`` seconds); returns whether it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        """Have ``join()`` (without arguments) wait for ``thread`` too."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Wait for ``threads`` (and the registered ones) to end.

        Waits until they all end or a stop is requested; then gives those still running
        ``stop_grace_period_secs`` to end. Re-raises the first exception passed to
        ``request_stop``; otherwise raises RuntimeError naming threads still alive (unless
        ``ignore_live_threads``).
        """
        with self._lock:
            if threads is None:
                threads = self._registered_threads
            else:
                threads = self._registered_threads.union(set(threads))
            threads = list(threads)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(_JOIN_POLL_SECS):
            pass
        stop_wait_secs = 0.001
        while any(t.is_alive() for t in threads) and stop_grace_period_secs >= 0.0:
            time.sleep(stop_wait_secs)
            stop_grace_period_secs -= stop_wait_secs
            stop_wait_secs = max(min(2 * stop_wait_secs, stop_grace_period_secs), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)
            if stragglers:
                if ignore_live_threads:
                    _logger.info("Coordinator stopped with threads still running: %s",
                                 " ".join(stragglers))
                else:
                    raise RuntimeError("Coordinator stopped with threads still running: %s"
                                       % " ".join(stragglers))

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Raise the exception passed to ``request_stop``, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)


class LooperThread(threading.Thread):
    """A daemon thread that calls ``target`` (or ``run_loop``) repeatedly until the coordinator
    stops: back to back, or every ``timer_interval_secs``."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError("'coord' argument must be a Coordinator: %s" % coord)
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Start a LooperThread calling ``target(*args, **kwargs)``; returns it."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(max(next_timer_time - time.time(), 0)):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once when the thread starts."""

    def stop_loop(self):
        """Called once before the thread ends."""

    def run_loop(self):
        """Called repeatedly; the default calls ``target``."""
        if self._target:
            self._target(*self._args, **self._kwargs)


__all__ = ["Coordinator", "LooperThread"]
