"""The worker service of a server: registers graph partitions once and runs them per step.

Partitions exchange tensors task-to-task through the rendezvous: a ``_Send`` to a task in this
process is a direct put into its rendezvous (nothing serialized); to another process, the sends of
one partition to one task made before the partition next waits are batched into one message.
"""

import collections
import itertools
import threading

from zps.distributed.partition import task_of_device
from zps.distributed.rendezvous import ABORTED_MEMORY
from zps.framework import errors
from zps.runtime.executor import Plan, StepContext

_handles = itertools.count(1)


class _Registered:
    __slots__ = ("plan", "feed_names", "fetch_names")

    def __init__(self, plan, feed_names, fetch_names):
        self.plan = plan
        self.feed_names = feed_names
        self.fetch_names = fetch_names


class WorkerService:
    def __init__(self, server):
        self._server = server
        self._graphs = {}
        self._lock = threading.Lock()
        self._running = {}   # step id -> StepContexts of the partitions running it here
        # Steps aborted here, remembered so a partition of one that starts late is cancelled.
        self._aborted = collections.OrderedDict()
        self.steps_run = 0

    # -- registration ----------------------------------------------------------------------------
    def register_graph(self, graph, feed_names, fetch_names, target_names):
        """Compile a partition; returns its handle (valid until this server stops)."""
        feeds = [graph.get_tensor_by_name(n + ":0") for n in feed_names]
        fetches = [graph.get_tensor_by_name(n) for n in fetch_names]
        targets = [graph.get_operation_by_name(n) for n in target_names]
        plan = Plan(feeds, fetches, targets, placement_check=self._check_device)
        handle = "%s/%d" % (self._server.incarnation, next(_handles))
        with self._lock:
            self._graphs[handle] = _Registered(plan, list(feed_names), list(fetch_names))
        return handle

    def may_block(self, handle):
        """Whether a step of the partition can wait (on a Recv or a queue); unknown -> False."""
        reg = self._graphs.get(handle) if isinstance(handle, str) else None
        return reg is not None and reg.plan.may_block

    def deregister_graph(self, handle):
        with self._lock:
            self._graphs.pop(handle, None)

    def _check_device(self, op):
        task = task_of_device(op.device, self._server.task)
        if task != self._server.task:
            raise errors.InternalError(op.name, op, "op %s placed on %s reached task %s"
                                       % (op.name, op.device, self._server.task))

    # -- running ---------------------------------------------------------------------------------
    def run_graph(self, handle, step_id, feed_values):
        """Run one step of a registered partition; returns the fetched values."""
        reg = self._graphs.get(handle)
        if reg is None:
            raise errors.AbortedError(
                None, None, "Graph handle %s is not registered on %s (incarnation %s): the task "
                "restarted since the graph was registered; retry the step."
                % (handle, self._server.task, self._server.incarnation))
        outbox = _Outbox(self._server, step_id)
        rendezvous = self._server.rendezvous
        ctx = StepContext(self._server.resources, step_id=step_id, extras={
            "send": outbox.send,
            "recv": lambda src, key, done: rendezvous.recv(step_id, key, done),
            "flush": outbox.flush,
        })
        with self._lock:
            self._running.setdefault(step_id, []).append(ctx)
            aborted = self._aborted.get(step_id)
        if aborted is not None:
            ctx.cancel(aborted)
        try:
            values = reg.plan.run(ctx, feed_values)
        finally:
            with self._lock:
                contexts = self._running.get(step_id, [])
                contexts.remove(ctx)
                if not contexts:
                    self._running.pop(step_id, None)
            outbox.flush()
            rendezvous.cleanup(step_id)
        self.steps_run += 1
        return values

    def abort_step(self, step_id, error):
        """End the step here: its Recvs and blocking ops (dequeue, take_grad) fail with ``error``."""
        self._server.rendezvous.abort(step_id, error)
        with self._lock:
            self._aborted[step_id] = error
            while len(self._aborted) > ABORTED_MEMORY:
                self._aborted.popitem(last=False)
            contexts = list(self._running.get(step_id, []))
        for ctx in contexts:
            ctx.cancel(error)

    def abort_all(self, error):
        with self._lock:
            steps = list(self._running)
        for step_id in steps:
            self.abort_step(step_id, error)


class _Outbox:
    """Sends of one partition step, batched per destination until the partition waits."""

    def __init__(self, server, step_id):
        self._server = server
        self._step_id = step_id
        self._pending = {}
        self._lock = threading.Lock()

    def send(self, dst, key, value):
        address = self._server.address_of(dst)
        local = self._server.local_peer(address)
        if local is not None:
            local.rendezvous.put(self._step_id, key, value)
            return
        with self._lock:
            keys, values = self._pending.setdefault(address, ([], []))
            keys.append(key)
            values.append(value)

    def flush(self):
        with self._lock:
            pending, self._pending = self._pending, {}
        for address, (keys, values) in pending.items():
            self._server.transport.send_oneway(address, "Tensors",
                                               {"step": self._step_id, "keys": keys}, values)
