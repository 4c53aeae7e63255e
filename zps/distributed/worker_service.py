"""The worker service of a server: registers graph partitions once and runs them per step.

Partitions exchange tensors task-to-task through the rendezvous: a ``_Send`` to a task in this
process is a direct put into its rendezvous (nothing serialized); to another process, the sends of
one partition to one task made before the partition next waits are batched into one ``Tensors``
message (whose large tensors the transport streams in chunks, see ``zps.transport.codec``).

Large tensors are sent as zero-copy views, after the partition has moved on: a variable read and
sent while another step updates it in place may arrive partly updated, as any unlocked (Hogwild)
read of a variable being updated can in TF1.
"""

import collections
import itertools
import os
import threading

from zps.distributed.partition import streams_into_update, task_of_device
from zps.distributed.rendezvous import ABORTED_MEMORY
from zps.framework import errors
from zps.runtime.executor import Plan, StepContext

_handles = itertools.count(1)

# Registered partitions kept per server (env ZPS_MAX_REGISTERED_GRAPHS): any peer may register,
# so the least recently used graph is evicted past this; its master registers it again (a
# RunGraph of an evicted handle fails with AbortedError, which makes the master re-register).
MAX_REGISTERED_GRAPHS = 4096


class _Registered:
    __slots__ = ("plan", "feed_names", "fetch_names", "stream_feeds")

    def __init__(self, plan, feed_names, fetch_names, stream_feeds):
        self.plan = plan
        self.feed_names = feed_names
        self.fetch_names = fetch_names
        # Feeds whose only reader applies them in place: taken while they still stream in.
        self.stream_feeds = stream_feeds


class WorkerService:
    def __init__(self, server):
        self._server = server
        self._graphs = collections.OrderedDict()   # handle -> _Registered, least recent first
        self.max_graphs = int(os.environ.get("ZPS_MAX_REGISTERED_GRAPHS") or MAX_REGISTERED_GRAPHS)
        self.graphs_evicted = 0
        self._lock = threading.Lock()
        self._running = {}   # step id -> StepContexts of the partitions running it here
        # Steps aborted here, remembered so a partition of one that starts late is cancelled.
        self._aborted = collections.OrderedDict()
        self.steps_run = 0

    # -- registration ----------------------------------------------------------------------------
    def register_graph(self, graph, feed_names, fetch_names, target_names):
        """Compile a partition; returns its handle (valid until this server stops, or until
        ``max_graphs`` other graphs were used since this one last was)."""
        feeds = [graph.get_tensor_by_name(n + ":0") for n in feed_names]
        fetches = [graph.get_tensor_by_name(n) for n in fetch_names]
        targets = [graph.get_operation_by_name(n) for n in target_names]
        plan = Plan(feeds, fetches, targets, placement_check=self._check_device,
                    inline_bytes=self._server.inline_bytes)
        fetched = {t.name for t in fetches}
        stream_feeds = frozenset(i for i, t in enumerate(feeds) if streams_into_update(t, fetched))
        handle = "%s/%d" % (self._server.incarnation, next(_handles))
        with self._lock:
            self._graphs[handle] = _Registered(plan, list(feed_names), list(fetch_names),
                                               stream_feeds)
            while len(self._graphs) > self.max_graphs:
                self._graphs.popitem(last=False)
                self.graphs_evicted += 1
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
    def run_graph(self, handle, step_id, feed_values, trace=None, join=(), waiter=None,
                  reverse=None):
        """Run one step of a registered partition in this thread; returns the fetched values.

        ``trace``: a list to extend with the step's per-op records (``Plan.run_traced``), or None.
        ``join``: futures to wait for as well (the step's other partitions: see ``Plan.run``),
        through ``waiter`` when they are this thread's own requests (``Plan.run``).
        ``reverse``: (address, responder) when the step's RunGraph came from the task at that
        address, whose tensors then go back on that request's connection (``_Outbox``).
        """
        reg, ctx, finish = self._begin(handle, step_id, reverse)
        try:
            feed_values = _whole_feeds(feed_values, reg.stream_feeds)
            values = reg.plan.run(ctx, feed_values, join, trace, waiter)
        finally:
            finish()
        self.steps_run += 1
        return values

    def start_graph(self, handle, step_id, feed_values, done, trace=None, reverse=None):
        """Run one step of a registered partition asynchronously (``Plan.start``): on the
        transport's I/O thread, cheap ops run right there and expensive ones on the pool.
        ``done(values, error)`` is called once. The feeds must have arrived whole (a step with
        feeds still streaming in goes through ``run_graph`` on the pool, which may wait)."""
        try:
            reg, ctx, finish = self._begin(handle, step_id, reverse)
        except Exception as e:  # noqa: BLE001 - reported through done
            done(None, e)
            return

        def finished(values, error):
            try:
                finish()
            except Exception as e:  # noqa: BLE001 - e.g. the flush found the transport closed
                if error is None:
                    values, error = None, e
            self.steps_run += error is None
            done(values, error)

        reg.plan.start(ctx, feed_values, finished, self._server.pool.submit, trace)

    def _begin(self, handle, step_id, reverse=None):
        """The registered partition, its step context and the function that ends the step."""
        with self._lock:
            reg = self._graphs.get(handle)
            if reg is not None:
                self._graphs.move_to_end(handle)
        if reg is None:
            ours = isinstance(handle, str) and handle.startswith(self._server.incarnation + "/")
            raise errors.AbortedError(
                None, None, "Graph handle %s is not registered on %s (incarnation %s): %s; retry "
                "the step (its master registers the graph again)."
                % (handle, self._server.task, self._server.incarnation,
                   "it was evicted (more than %d graphs registered since it was last used)"
                   % self.max_graphs if ours else "the task restarted since it was registered"))
        outbox = _Outbox(self._server, step_id, reverse)
        rendezvous = self._server.rendezvous
        ctx = StepContext(self._server.resources, step_id=step_id, extras={
            "send": outbox.send,
            "send_n": outbox.send_n,
            "recv": lambda src, key, done, stream_ok=False: rendezvous.recv(step_id, key, done,
                                                                            stream_ok),
            "flush": outbox.flush,
        })
        rendezvous.begin(step_id)   # tensors that arrived early are this step's, not bounded
        with self._lock:
            self._running.setdefault(step_id, []).append(ctx)
            aborted = self._aborted.get(step_id)
        if aborted is not None:
            ctx.cancel(aborted)

        def finish():
            with self._lock:
                contexts = self._running.get(step_id, [])
                contexts.remove(ctx)
                if not contexts:
                    self._running.pop(step_id, None)
            try:
                outbox.flush()
            finally:
                rendezvous.cleanup(step_id)

        return reg, ctx, finish

    def steps_running(self):
        """How many steps have a partition running here now."""
        with self._lock:
            return len(self._running)

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


def _whole_feeds(values, stream_feeds):
    """Feeds still streaming in (codec.Incoming), waited for unless their reader takes them as
    they arrive (this thread blocks: run_graph of such a step runs on the pool)."""
    out = list(values)
    for i, v in enumerate(out):
        if getattr(v, "zps_streamed", False) and i not in stream_feeds:
            try:
                out[i] = v.wait()
            except Exception as e:  # noqa: BLE001 - the stream's failure
                raise errors.AbortedError(None, None, "feed %d of the step stopped streaming in: "
                                          "%s; retry the step" % (i, e)) from e
    return out


# A send at least this large goes out at once (with what is batched for its destination), so
# that the receiver works on it (e.g. a ps applying one layer's gradient) while this partition
# computes on (the next layer's gradient); smaller sends are batched until the partition waits, or
# until a batch holds EAGER_BATCH_BYTES or EAGER_BATCH_COUNT tensors: a step sending many small
# tensors (a model of many variables) then streams them in batches the receiver works on while
# the rest are made (1,000 variables of 16 KB pulled and pushed back: 58 -> 37 ms per step; of
# 1 KB: 32 -> 21 ms). A batch amortizes a message's fixed cost (~50-100 us of both sides' time):
# batches of 2 MB / 128 tensors against 1 MB / 64 took those steps from 31-32 to 28.5-29 ms (and
# 100 variables of 160 KB from 18.2-19.2 to 17.5-18.4 ms); 4 MB / 256 streamed too little (32 ms).
EAGER_SEND_BYTES = 256 << 10
EAGER_BATCH_BYTES = 2 << 20
EAGER_BATCH_COUNT = 128


class _Outbox:
    """Sends of one partition step, batched per destination until the partition waits (or until
    a large one comes, or the batch is large: see EAGER_SEND_BYTES)."""

    def __init__(self, server, step_id, reverse=None):
        self._server = server
        self._step_id = step_id
        self._reverse = reverse   # (address, responder): see WorkerService.run_graph
        self._pending = {}
        self._routes = {}   # dst -> (address, the server there if in this process)
        self._lock = threading.Lock()

    def send(self, dst, key, value):
        self._add(dst, key, (value,), getattr(value, "nbytes", 0), False)

    def send_n(self, dst, key, values):
        """The values of a _SendN, under one key (``[key, n]`` in the message's keys)."""
        self._add(dst, key, values, sum(getattr(v, "nbytes", 0) for v in values), True)

    def _add(self, dst, key, values, nbytes, group):
        route = self._routes.get(dst)
        if route is None:
            address = self._server.address_of(dst)
            route = self._routes[dst] = (address, self._server.local_peer(address))
        address, local = route
        if local is not None:
            local.rendezvous.put(self._step_id, key, tuple(values) if group else values[0])
            return
        with self._lock:
            batch = self._pending.get(address)
            if batch is None:
                batch = self._pending[address] = _Batch()
            batch.keys.append([key, len(values)] if group else key)
            batch.values.extend(values)
            batch.nbytes += nbytes
            if nbytes < EAGER_SEND_BYTES and batch.nbytes < EAGER_BATCH_BYTES \
                    and len(batch.values) < EAGER_BATCH_COUNT:
                return
            del self._pending[address]
        self._send(address, batch)

    def flush(self):
        with self._lock:
            pending, self._pending = self._pending, {}
        for address, batch in pending.items():
            self._send(address, batch)

    def _send(self, address, batch):
        body = {"step": self._step_id, "keys": batch.keys, "from": str(self._server.task)}
        if self._reverse is not None and address == self._reverse[0]:
            self._reverse[1].send_oneway("Tensors", body, batch.values)
        else:
            self._server.transport.send_oneway(address, "Tensors", body, batch.values)


class _Batch:
    """The sends waiting for one destination."""

    __slots__ = ("keys", "values", "nbytes")

    def __init__(self):
        self.keys, self.values, self.nbytes = [], [], 0
