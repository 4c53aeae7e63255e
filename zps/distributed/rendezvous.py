"""The rendezvous of a task: a per-step mailbox where Send ops deliver and Recv ops wait.

A tensor may arrive before or after its Recv asks for it; either way the Recv's callback fires
exactly once, with the value or with the error that aborted the step.

Tensors that arrive early, for a step not (yet) running here (a worker's Send may precede the ps's
RunGraph of that step), are kept in bounded space: at most ``max_early_steps`` such steps and
``max_early_bytes`` bytes (env ``ZPS_MAX_EARLY_STEPS`` / ``ZPS_MAX_EARLY_BYTES``). Past either
limit the oldest early mailbox is dropped and its step is failed here with ResourceExhaustedError
(so its Recvs fail at once instead of waiting), and the drop is counted (``dropped_steps``,
``dropped_tensors``, ``dropped_bytes``): a peer sending to step ids that never run cannot grow
the server's memory.

>>> r = Rendezvous()
>>> got = []
>>> r.recv(7, "a->b:x", got.append)
>>> r.put(7, "a->b:x", 42)
>>> got
[42]
"""

import collections
import os
import threading
import time

from zps.framework import errors

ABORTED_MEMORY = 4096          # how many aborted step ids are remembered (late tensors dropped)
STALE_MAILBOX_S = 600.0        # a mailbox nobody has claimed for this long is garbage-collected
MAX_EARLY_STEPS = 1024         # steps not running here that may hold early tensors at once
MAX_EARLY_BYTES = 1 << 30      # and the bytes those tensors may hold together


def _env_int(name, default):
    value = os.environ.get(name)
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        raise ValueError("%s must be an integer, got %r" % (name, value)) from None
    if n < 1:
        raise ValueError("%s must be positive, got %d" % (name, n))
    return n


def _deliver(value, callback, stream_ok):
    if type(value) is tuple:   # a group (_RecvN): whole once each of its tensors is
        streaming = [v for v in value if getattr(v, "zps_streamed", False)]
        if streaming:
            _deliver_group(value, streaming, callback)
        else:
            callback(value)
    elif stream_ok or not getattr(value, "zps_streamed", False):
        callback(value)
    else:   # the whole tensor, once its last chunk is in (or the stream's error)
        value.when_complete(lambda result: callback(_whole(result)))


def _whole(result):
    return result if not isinstance(result, BaseException) else errors.AbortedError(
        None, None, "a tensor streaming in stopped arriving: %s; retry the step" % result)


def _deliver_group(values, streaming, callback):
    """``callback`` of the group ``values`` once its ``streaming`` tensors are whole (or of the
    first stream's error)."""
    lock = threading.Lock()
    left, failed = len(streaming), False

    def one_done(result):
        nonlocal left, failed
        with lock:
            if failed:
                return
            failed = isinstance(result, BaseException)
            left -= 1
            if left and not failed:
                return
        callback(_whole(result) if failed else tuple(
            v.array if getattr(v, "zps_streamed", False) else v for v in values))

    for v in streaming:
        v.when_complete(one_done)


def _nbytes(value):
    if type(value) is tuple:
        return sum(_nbytes(v) for v in value)
    n = getattr(value, "nbytes", None)
    return n if isinstance(n, int) else 64


class _Mailbox:
    __slots__ = ("values", "waiters", "created", "claimed", "nbytes")

    def __init__(self, claimed=False):
        self.values = {}
        self.waiters = {}
        self.created = time.monotonic()
        self.claimed = claimed   # a partition of the step runs (or ran) here: not an early box
        self.nbytes = 0          # bytes of ``values`` while the box is early


class Rendezvous:
    def __init__(self, max_early_steps=None, max_early_bytes=None):
        self._lock = threading.Lock()
        self._steps = {}
        self._aborted = collections.OrderedDict()
        self._puts_since_gc = 0
        self.max_early_steps = max_early_steps or _env_int("ZPS_MAX_EARLY_STEPS", MAX_EARLY_STEPS)
        self.max_early_bytes = max_early_bytes or _env_int("ZPS_MAX_EARLY_BYTES", MAX_EARLY_BYTES)
        self._early = collections.OrderedDict()   # step id -> its early mailbox, oldest first
        self._early_bytes = 0
        self.dropped_steps = 0
        self.dropped_tensors = 0
        self.dropped_bytes = 0

    def begin(self, step_id):
        """A partition of ``step_id`` starts here: its mailbox (and early tensors) are its own."""
        with self._lock:
            box = self._steps.get(step_id)
            if box is None:
                if step_id not in self._aborted:
                    self._steps[step_id] = _Mailbox(claimed=True)
            elif not box.claimed:
                self._claim(step_id, box)

    def is_running(self, step_id):
        """Whether a partition of ``step_id`` has begun here and the step is not finished."""
        with self._lock:
            box = self._steps.get(step_id)
            return box is not None and box.claimed

    def early_stats(self):
        """Counters of early tensors: what is held now and what was dropped."""
        with self._lock:
            return {"early_steps": len(self._early), "early_bytes": self._early_bytes,
                    "early_steps_dropped": self.dropped_steps,
                    "early_tensors_dropped": self.dropped_tensors,
                    "early_bytes_dropped": self.dropped_bytes}

    def _claim(self, step_id, box):
        # Lock held.
        box.claimed = True
        if self._early.pop(step_id, None) is not None:
            self._early_bytes -= box.nbytes
        box.nbytes = 0

    def _forget(self, step_id):
        # Lock held: remove the step's mailbox (and its early accounting); returns it or None.
        box = self._steps.pop(step_id, None)
        if box is not None and self._early.pop(step_id, None) is not None:
            self._early_bytes -= box.nbytes
        return box

    def _bound_early(self, newest):
        # Lock held: drop the oldest early mailboxes (never ``newest`` itself) past the limits.
        while len(self._early) > 1 and (len(self._early) > self.max_early_steps
                                        or self._early_bytes > self.max_early_bytes):
            step_id = next(iter(self._early))
            if step_id == newest:
                self._early.move_to_end(step_id)
                continue
            box = self._forget(step_id)
            self.dropped_steps += 1
            self.dropped_tensors += len(box.values)
            self.dropped_bytes += box.nbytes
            self._remember_aborted(step_id, errors.ResourceExhaustedError(
                None, None, "tensors sent to step %d before it started here were dropped: more "
                "than %d early steps or %d bytes were pending (ZPS_MAX_EARLY_STEPS / "
                "ZPS_MAX_EARLY_BYTES); retry the step" % (step_id, self.max_early_steps,
                                                          self.max_early_bytes)))

    def _remember_aborted(self, step_id, error):
        self._aborted[step_id] = error
        while len(self._aborted) > ABORTED_MEMORY:
            self._aborted.popitem(last=False)

    def put(self, step_id, key, value):
        """Deliver ``value`` for ``key`` of step ``step_id`` (dropped if the step was aborted).
        Raises ValueError if ``key`` was already sent in that step."""
        refused = self.put_many(step_id, (key,), (value,))
        if refused:
            raise ValueError(refused[0])

    def put_many(self, step_id, keys, values):
        """``put`` of each key and value of one message under one lock; returns the messages of
        the keys refused (sent twice in the step) instead of raising, the others delivered."""
        refused = []
        ready = []
        with self._lock:
            if step_id in self._aborted:
                return refused
            box = self._steps.get(step_id)
            if box is None:
                box = self._steps[step_id] = _Mailbox()
                self._early[step_id] = box
                self._maybe_gc()
            waiters, held = box.waiters, box.values
            for key, value in zip(keys, values):
                waiter = waiters.pop(key, None)
                if waiter is not None:
                    ready.append((value, waiter))
                elif key in held:
                    refused.append("tensor %r was sent twice in step %d" % (key, step_id))
                else:
                    held[key] = value
                    if not box.claimed:
                        n = _nbytes(value)
                        box.nbytes += n
                        self._early_bytes += n
            if not box.claimed:
                self._bound_early(step_id)
        for value, (callback, stream_ok) in ready:
            _deliver(value, callback, stream_ok)
        return refused

    def recv(self, step_id, key, callback, stream_ok=False):
        """Call ``callback(value)`` once ``key`` arrives (or ``callback(error)`` on abort).

        A tensor still streaming in (a ``codec.Incoming``) is handed over at once when
        ``stream_ok``, else once all of it has arrived (or its stream failed)."""
        with self._lock:
            error = self._aborted.get(step_id)
            if error is None:
                box = self._steps.get(step_id)
                if box is None:
                    box = self._steps[step_id] = _Mailbox(claimed=True)
                elif not box.claimed:
                    self._claim(step_id, box)
                if key in box.values:
                    value = box.values.pop(key)
                else:
                    if key in box.waiters:
                        raise ValueError("two receivers for %r in step %d" % (key, step_id))
                    box.waiters[key] = (callback, stream_ok)
                    return
        if error is not None:
            callback(error)
        else:
            _deliver(value, callback, stream_ok)

    def abort(self, step_id, error):
        """Fail every waiter of the step with ``error`` and drop anything sent to it later."""
        with self._lock:
            self._remember_aborted(step_id, error)
            box = self._forget(step_id)
        if box is not None:
            for callback, _ in box.waiters.values():
                callback(error)

    def cleanup(self, step_id):
        """Forget a finished step's mailbox."""
        with self._lock:
            self._forget(step_id)

    def abort_all(self, error):
        with self._lock:
            steps = list(self._steps)
        for step_id in steps:
            self.abort(step_id, error)

    def pending_steps(self):
        with self._lock:
            return len(self._steps)

    def _maybe_gc(self):
        # Called with the lock held: mailboxes of steps that never ran here (e.g. aborted before
        # their RunGraph arrived) would otherwise live forever.
        self._puts_since_gc += 1
        if self._puts_since_gc < 1024:
            return
        self._puts_since_gc = 0
        horizon = time.monotonic() - STALE_MAILBOX_S
        for step_id in [s for s, b in self._steps.items() if b.created < horizon and not b.waiters]:
            self._forget(step_id)
