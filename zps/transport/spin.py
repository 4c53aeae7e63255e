"""Adaptive busy-polling: a thread whose recent waits for messages were short polls without
blocking for a while before it sleeps (the transport's I/O loop, a caller's wait).

>>> import zmq
>>> Spin(max_s=0.0).poll(zmq.Poller(), 0)
[]
"""

import os
import time

# How long a thread whose recent waits were short polls without blocking
# before it sleeps (env ZPS_SPIN_US; 0: never). Never on one CPU, where it would only delay the
# peer it waits for.
SPIN_S = int(os.environ.get("ZPS_SPIN_US", "200")) / 1e6 \
    if len(os.sched_getaffinity(0)) > 1 else 0.0


class Spin:
    """Adaptive busy-polling before a blocking wait.

    A message to a thread asleep in poll costs the sender a wake-up of another vCPU and the
    receiver the time to get scheduled (~25-40 us each way on a small VM: docs/performance.md),
    which is most of a small message's trip. A thread whose recent waits were short (their
    moving average under SPIN_S: a step's messages coming back and forth) therefore polls without
    blocking for up to about twice that average before it sleeps; one whose waits are long (a
    worker computing between messages, an idle server) never spins, and a wait that ends without
    events (a poll timeout) counts as long.
    """

    __slots__ = ("max_s", "average")

    def __init__(self, max_s=None):
        self.max_s = SPIN_S if max_s is None else max_s
        self.average = 1.0   # seconds: no spinning until short waits were seen

    def poll(self, poller, timeout_ms):
        """``poller.poll(timeout_ms)``, spinning first if recent waits were short."""
        start = time.monotonic()
        if self.average < self.max_s:
            deadline = start + min(self.max_s, 2 * self.average + 20e-6)
            while True:
                events = poller.poll(0)
                now = time.monotonic()
                if events:
                    self.average += (now - start - self.average) * 0.25
                    return events
                if now >= deadline:
                    break
        events = poller.poll(timeout_ms)
        waited = time.monotonic() - start if events else max(timeout_ms / 1000.0, self.max_s)
        self.average += (waited - self.average) * 0.25
        return events
