"""How threads wait for messages. Adaptive busy-polling: a thread whose recent waits for messages
were short polls without blocking for a while before it sleeps (the transport's I/O loop, a
caller's wait). Batch scheduling: the I/O loop and a thread running steps on its own connections,
woken by a message, do not preempt the thread running on their CPU (``run_in_batch``).

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
CROWDED_CHECK_S = 0.005   # how often a spinning process looks at the machine's run queue


def batch_from_env(text=None):
    """Whether the transport's threads take Linux's SCHED_BATCH (``ZPS_SCHED_BATCH``: 1, the
    default, or 0): its I/O thread and each thread with connections of its own
    (``run_in_batch``)."""
    text = (os.environ.get("ZPS_SCHED_BATCH", "") if text is None else text).strip()
    if text not in ("", "0", "1"):
        raise ValueError("ZPS_SCHED_BATCH must be 1 (the transport's I/O thread and the threads "
                         "that run steps are scheduled as batch threads, the default) or 0 (they "
                         "keep their policy), got %r" % text)
    return text != "0"


BATCH = batch_from_env()


def run_in_batch():
    """Put the calling thread under Linux's SCHED_BATCH; True if it now is. Called by the
    transport's I/O thread as it starts, and by each thread as it gets connections of its own
    (``zps.transport.caller.Caller``: the thread running a session's distributed steps).

    A thread woken by a message normally preempts the thread running on its CPU when the machine
    has no idle CPU for it, and on a crowded machine that is the worst moment. For a ps serving
    workers: the worker that just sent a request is preempted right after its send, only to be
    switched back in a moment later to block anyway. For workers sharing a CPU: a worker whose
    reply came preempts the one computing there, which would have sent its own request and
    blocked a moment later. Every switch between Python processes costs far more than its
    kernel work (their caches go cold). A batch thread does not preempt on waking; it runs when
    a CPU is idle or the running thread's turn ends. 8 workers and a ps on 2 vCPUs (the scalar
    model of tools/bench_scaling.py's workers, 3,000 steps each, 3 alternations), the ps's I/O
    thread batch: workers preempted 1.05 times a step -> 0.12, the ps's CPU per update 285 ->
    230 us, 2,615-2,716 -> 2,895-3,258 updates/s (docs/performance.md, session 15); the
    workers' step threads batch too: 2 workers 3,536 -> 3,938 updates/s, 4 3,892 -> 4,160, one
    unchanged (session 16). On an idle CPU it starts as any thread does. A policy other than the
    default (the process was started under ``chrt``) is kept, and so is the nice value; where
    the call is refused (not Linux, a sandbox) nothing changes. Threads and processes this one
    starts inherit the policy.
    """
    if not BATCH or not hasattr(os, "SCHED_BATCH"):
        return False
    try:
        policy = os.sched_getscheduler(0)
        if policy == os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
            policy = os.SCHED_BATCH
    except OSError:
        return False
    return policy == os.SCHED_BATCH


class _Crowding:
    """How many more threads the machine has runnable than CPUs (the running count of
    ``/proc/loadavg``, read at most every CROWDED_CHECK_S: ~2 us; the smaller of the last two
    counts, so that a thread passing by does not stop everyone's spinning for a while: one
    worker and a ps on 2 vCPUs, 4,277 against 4,039 updates/s, 5 alternations);
    ``crowded(now, spare)``: more than ``spare`` of them. A thread spinning on a crowded machine
    holds a CPU that another needs, perhaps the very peer it waits for: 8 worker processes and a
    ps on 2 vCPUs (tools/bench_scaling.py, 5 alternated runs of each) made a median 2,280
    updates/s spinning whatever the machine did, 2,643 not spinning while crowded, 2,362 never
    spinning. Never crowded where the count cannot be read."""

    def __init__(self, path="/proc/loadavg", cpus=None):
        self.cpus = cpus or os.cpu_count() or 1
        self.next_check = 0.0
        self.excess = self._seen = 0
        try:
            self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = None

    def __call__(self, now, spare=0):
        if now >= self.next_check and self._fd is not None:
            self.next_check = now + CROWDED_CHECK_S
            try:   # "0.52 0.58 0.59 3/250 1234": 3 runnable now, this thread included
                seen = int(os.pread(self._fd, 128, 0).split()[3].split(b"/")[0]) - self.cpus
                self.excess, self._seen = min(seen, self._seen), seen
            except (OSError, ValueError, IndexError):   # not Linux's format: never crowded
                os.close(self._fd)
                self._fd = None
                self.excess = 0
        return self.excess > spare


crowded = _Crowding()


class Spin:
    """Adaptive busy-polling before a blocking wait.

    A message to a thread asleep in poll costs the sender a wake-up of another vCPU and the
    receiver the time to get scheduled (~25-40 us each way on a small VM: docs/performance.md),
    which is most of a small message's trip. A thread whose recent waits were short (their
    moving average under SPIN_S: a step's messages coming back and forth) therefore polls without
    blocking for up to about twice that average before it sleeps; one whose waits are long (a
    worker computing between messages, an idle server) never spins, and a wait that ends without
    events (a poll timeout) counts as long.

    Nobody spins while more threads wait for the machine's CPUs than ``spare`` (``_Crowding``).
    The transport's I/O loop, which every peer's requests wait on, spares one: a ps serving two
    workers on 2 vCPUs goes on spinning. A thread waiting for its own replies (``caller.Caller``:
    a worker's step) spares none: there, a worker spinning would hold its CPU until the
    scheduler's tick while the other worker's reply waits (batch threads do not preempt:
    ``run_in_batch``), and one worker made 1.3 to 4 times the other's steps over 3 seconds;
    sparing none, they make the same number at the same total rate (4 alternations: medians
    3,786 and 3,761 updates/s, the fewer steps 0.99-1.0 of the more against 0.24-0.77).
    """

    __slots__ = ("max_s", "average", "spare")

    def __init__(self, max_s=None, spare=0):
        self.max_s = SPIN_S if max_s is None else max_s
        self.spare = spare
        self.average = 1.0   # seconds: no spinning until short waits were seen

    def poll(self, poller, timeout_ms):
        """``poller.poll(timeout_ms)``, spinning first if recent waits were short."""
        start = time.monotonic()
        if self.average < self.max_s and not crowded(start, self.spare):
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
