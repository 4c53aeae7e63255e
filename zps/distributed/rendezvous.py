"""The rendezvous of a task: a per-step mailbox where Send ops deliver and Recv ops wait.

A tensor may arrive before or after its Recv asks for it; either way the Recv's callback fires
exactly once, with the value or with the error that aborted the step.

>>> r = Rendezvous()
>>> got = []
>>> r.recv(7, "a->b:x", got.append)
>>> r.put(7, "a->b:x", 42)
>>> got
[42]
"""

import collections
import threading
import time

ABORTED_MEMORY = 4096          # how many aborted step ids are remembered (late tensors dropped)
STALE_MAILBOX_S = 600.0        # a mailbox nobody has claimed for this long is garbage-collected


class _Mailbox:
    __slots__ = ("values", "waiters", "created")

    def __init__(self):
        self.values = {}
        self.waiters = {}
        self.created = time.monotonic()


class Rendezvous:
    def __init__(self):
        self._lock = threading.Lock()
        self._steps = {}
        self._aborted = collections.OrderedDict()
        self._puts_since_gc = 0

    def put(self, step_id, key, value):
        """Deliver ``value`` for ``key`` of step ``step_id`` (dropped if the step was aborted)."""
        with self._lock:
            if step_id in self._aborted:
                return
            box = self._steps.get(step_id)
            if box is None:
                box = self._steps[step_id] = _Mailbox()
                self._maybe_gc()
            waiter = box.waiters.pop(key, None)
            if waiter is None:
                if key in box.values:
                    raise ValueError("tensor %r was sent twice in step %d" % (key, step_id))
                box.values[key] = value
                return
        waiter(value)

    def recv(self, step_id, key, callback):
        """Call ``callback(value)`` once ``key`` arrives (or ``callback(error)`` on abort)."""
        with self._lock:
            error = self._aborted.get(step_id)
            if error is None:
                box = self._steps.get(step_id)
                if box is None:
                    box = self._steps[step_id] = _Mailbox()
                if key in box.values:
                    value = box.values.pop(key)
                else:
                    if key in box.waiters:
                        raise ValueError("two receivers for %r in step %d" % (key, step_id))
                    box.waiters[key] = callback
                    return
        callback(error if error is not None else value)

    def abort(self, step_id, error):
        """Fail every waiter of the step with ``error`` and drop anything sent to it later."""
        with self._lock:
            self._aborted[step_id] = error
            while len(self._aborted) > ABORTED_MEMORY:
                self._aborted.popitem(last=False)
            box = self._steps.pop(step_id, None)
        if box is not None:
            for waiter in box.waiters.values():
                waiter(error)

    def cleanup(self, step_id):
        """Forget a finished step's mailbox."""
        with self._lock:
            self._steps.pop(step_id, None)

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
            del self._steps[step_id]
