"""The master service: prunes, partitions and runs the steps of client sessions.

A step plan is made once per (feeds, fetches, targets): the pruned graph is partitioned by task,
each partition registered once on its task (in-process tasks get the graph object itself; remote
ones a serialized copy), and then every step starts all partitions concurrently. A failure on any
task aborts the step everywhere and reaches the client as the right OpError.
"""

import concurrent.futures
import random
import threading
import time

from zps.distributed.partition import partition
from zps.framework import errors
from zps.framework.device import DeviceSpec
from zps.runtime.plan_cache import PlanCache
from zps.transport import endpoint

ABORT_WAIT_S = 10.0   # after a failure, how long to wait for the other partitions to stop


def to_op_error(exc, task=None, address=None):
    """A transport or remote failure as the OpError a client should see."""
    if isinstance(exc, errors.OpError):
        return exc
    where = "task %s (%s)" % (task, address) if task is not None else "peer %s" % address
    if isinstance(exc, endpoint.RemoteError):
        return errors.from_code(exc.code, exc.message, exc.op)
    if isinstance(exc, endpoint.RequestTimeoutError):
        return errors.DeadlineExceededError(None, None, "%s did not answer in time: %s" % (where, exc))
    if isinstance(exc, endpoint.PeerUnavailableError):
        return errors.UnavailableError(
            None, None, "%s is unavailable: %s. Check that the task is running and reachable; the "
            "step can be retried once it is back." % (where, exc.reason))
    if isinstance(exc, endpoint.TransportError):
        return errors.UnavailableError(None, None, "cannot reach %s: %s" % (where, exc))
    return errors.InternalError(None, None, "%s: %s: %s" % (where, type(exc).__name__, exc))


def device_filters(config):
    """``config.device_filters`` parsed as DeviceSpecs (``[]``: no filtering).

    TF1's semantics: a session sees only the devices matching some filter (a partial device name
    such as ``"/job:ps"`` or ``"/job:worker/task:1"``; a field matches when either side leaves it
    unset), plus its master's own task, which is always included. zps filters whole tasks, so a
    filter's device type and index are not compared.
    """
    filters = []
    for f in getattr(config, "device_filters", None) or ():
        try:
            filters.append(DeviceSpec.from_string(f))
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, "Invalid device filter %r in ConfigProto.device_filters: %s. A filter "
                "is a (partial) device name such as '/job:ps' or '/job:worker/task:1'." % (f, e)) from None
    return filters


def task_matches_filters(task, filters):
    """Whether ``task`` (a partition Task) is seen by a session with ``filters`` (parsed)."""
    if not filters:
        return True
    return any((f.job is None or f.job == task.job) and (f.replica is None or f.replica == 0)
               and (f.task is None or f.task == task.index) for f in filters)


def _check_device_filters(parts, filters, own_task, config, fetches, targets):
    """Refuse a step that places an op on a task the session's device filters exclude (before
    any task is contacted), naming the op (a fetched one when there is one), its device and the
    filters."""
    if not filters:
        return
    wanted = {t.op for t in fetches} | set(targets)
    for task, part in parts.items():
        if task == own_task or task_matches_filters(task, filters):
            continue
        ops = list(part.mapped_ops)
        op = next((o for o in ops if o in wanted), None) or \
            next((o for o in ops if o.type != "Const"), None) or (ops[0] if ops else None)
        name = op.name if op is not None else "?"
        device = op.device if op is not None and op.device else str(task)
        others = " (and %d other op(s) of the step)" % (len(ops) - 1) if len(ops) > 1 else ""
        raise errors.InvalidArgumentError(
            name, op, "Cannot run op '%s'%s on device '%s' (task %s): the session's "
            "ConfigProto.device_filters %s exclude that task, so the session does not see it. "
            "Place the op on a task matching the filters, or add a filter for %s."
            % (name, others, device, task, list(config.device_filters),
               "/job:%s/task:%d" % task))


def task_device(task):
    """The full name of ``task``'s CPU device, as step stats name it."""
    return "/job:%s/replica:0/task:%d/device:CPU:0" % (task.job, task.index)


class _TaskPart:
    __slots__ = ("task", "address", "partition", "feed_indices", "fetch_indices", "handle",
                 "epoch", "worker")

    def __init__(self, task, address, part):
        self.task = task
        self.address = address
        self.partition = part
        self.feed_indices = list(part.feeds.values())
        self.fetch_indices = [i for i, _ in part.fetches]
        self.handle = None
        self.epoch = None    # the server's failure epoch of the task when it was registered
        self.worker = None   # the WorkerService when the task is in this process


class _Step:
    """One running step: its id and its first failure (which cancels every partition once)."""

    def __init__(self, plan, step_id):
        self._plan = plan
        self.id = step_id
        self.failure = None
        self.thread = threading.get_ident()   # the thread running it (cancel_running's threads)
        self._lock = threading.Lock()

    def fail(self, exc, tp):
        """Record the step's first failure (``tp`` None: cancelled by the client) and cancel it
        on every task."""
        with self._lock:
            if self.failure is not None:
                return
            self.failure = (exc, tp)
        self._plan._cancel_everywhere(self.id, "the session" if tp is None else tp.task)


class StepPlan:
    """The partitioned, registered form of one (feeds, fetches, targets) of a session."""

    def __init__(self, server, feeds, fetches, targets, peer_timeout, config=None,
                 incarnations=None):
        """``config``: the session's ConfigProto (its ``device_filters`` and
        ``allow_soft_placement`` are honoured) or None. ``incarnations``: task -> the incarnation
        the session first registered with, shared by the session's plans (a task that restarted
        since then fails a step with AbortedError, even for a plan registered only now)."""
        self._server = server
        self._peer_timeout = peer_timeout
        self._incarnations = {} if incarnations is None else incarnations
        self._n_fetches = len(fetches)
        fed = {t: i for i, t in enumerate(feeds)}
        self._fed_fetches = [(i, fed[t]) for i, t in enumerate(fetches) if t in fed]
        parts = partition(feeds, fetches, targets, server.task, server.cluster_tasks(),
                          soft_placement=bool(getattr(config, "allow_soft_placement", False)))
        _check_device_filters(parts, device_filters(config), server.task, config, fetches,
                              targets)
        self._parts = [_TaskPart(task, server.address_of(task), p) for task, p in parts.items()]
        # When this task has a partition (run in this process, which waits on the RunGraph
        # connections while it runs), the other tasks may send what it receives back on those
        # connections (Responder.send_oneway).
        own = server.address_of(server.task)
        self._home = own if any(tp.address == own for tp in self._parts) else None
        self._lock = threading.Lock()
        self._running = set()

    def run(self, feed_values, trace=None):
        """Run one step; returns the fetched values.

        ``trace``: None, or a list to extend with ``(device, records)`` per partition (the
        partition's per-op records, ``Plan.run_traced``) plus the master's own device, whose
        records span each remote partition's RunGraph request (start to reply).
        """
        self._register()
        step = _Step(self, random.getrandbits(62))
        self._running.add(step)
        # RunGraph requests leave from this thread's own sockets and their replies wake it
        # directly (zps.transport.caller): two thread hand-offs fewer than via the I/O thread.
        caller = self._server.transport.caller()
        if caller is not None and not caller.enter():
            caller = None   # the transport is closing: the step fails as it would without
        if caller is not None:
            # Tensors for this task's partition come back on the RunGraph connections (see
            # ``_run``): this thread, which runs that partition, reads them itself.
            caller.on_oneway = self._server.deliver_returned
        try:
            return self._run(step, feed_values, trace, caller)
        except BaseException:
            # Interrupted here (a KeyboardInterrupt in this thread): the other tasks stop waiting
            # for this one. A failure of the step itself was recorded and cancelled already.
            if step.failure is None:
                step.fail(errors.CancelledError(None, None, "the step was interrupted in the "
                                                "process running its master"), None)
            raise
        finally:
            self._running.discard(step)
            if caller is not None:
                caller.leave()

    def cancel_running(self, error, threads=None):
        """Cancel the steps in flight (e.g. the session is closing), or only those run by the
        threads (idents) of ``threads``: they fail with ``error``."""
        for step in list(self._running):
            if threads is None or step.thread in threads:
                step.fail(error, None)

    def _run(self, step, feed_values, trace, caller):
        # ``trace``: None, or a list for (device, records) of every partition (see ``run``).
        # ``caller``: this thread's transport.caller.Caller to send RunGraph on, or None.
        futures = {}
        wait = concurrent.futures.wait if caller is None else caller.wait
        per_part = {id(tp): [] if trace is not None else None for tp in self._parts}
        rpc_records = []
        inline = None
        for tp in self._parts:
            values = [feed_values[i] for i in tp.feed_indices]
            if tp.worker is not None and inline is None:
                inline = (tp, values)   # run in this thread, after starting the others
                continue
            if tp.worker is not None:
                f = self._server.pool.submit(tp.worker.run_graph, tp.handle, step.id, values,
                                             per_part[id(tp)])
            else:
                body = {"handle": tp.handle, "step": step.id}
                if trace is not None:
                    body["trace"] = True
                t0 = time.time()
                own = caller is not None and caller.reaches(tp.address)
                if own and self._home is not None:
                    # This thread reads that connection while it waits: what the task sends
                    # back for this task's partition needs no hand-off from the I/O thread.
                    body["home"] = self._home
                f = (caller if own else self._server.transport).request(
                    tp.address, "RunGraph", body, values, peer_timeout=self._peer_timeout)
                if trace is not None:   # the master's record spans the request
                    f.add_done_callback(lambda f, tp=tp, t0=t0: rpc_records.append((
                        "RunGraph/%s/%d" % tp.task, int(t0 * 1e6), int(time.time() * 1e6),
                        "RunGraph/%s/%d = _RunGraph()" % tp.task, 0)))
            futures[f] = tp
            # A failure anywhere aborts the step everywhere at once, so partitions waiting on
            # the failed one (including the inline one below) stop instead of hanging.
            f.add_done_callback(lambda f, tp=tp: f.exception() is not None and step.fail(
                f.exception(), tp))
        results = {}
        if inline is not None:
            tp, values = inline
            try:   # and wait for the other partitions in the same call: one wake-up for all
                results[id(tp)] = tp.worker.run_graph(tp.handle, step.id, values, per_part[id(tp)],
                                                      join=list(futures), waiter=caller)
            except Exception as e:  # noqa: BLE001 - becomes the step's error below
                step.fail(e, tp)
        wait(futures, timeout=None if step.failure is None else ABORT_WAIT_S)
        if step.failure is not None:
            self._raise(step, futures, wait)
        for f, tp in futures.items():
            r = f.result()
            if tp.worker is not None:
                results[id(tp)] = r
                continue
            results[id(tp)] = r.tensors
            if trace is not None:   # a remote partition's records come in its reply
                body = r.body if isinstance(r.body, dict) else {}
                per_part[id(tp)].extend(trace_records(body.get("step_stats")))
        if trace is not None:
            trace.extend((task_device(tp.task), per_part[id(tp)]) for tp in self._parts)
            if rpc_records:
                trace.append((task_device(self._server.task) + " (master)", sorted(rpc_records)))
        out = [None] * self._n_fetches
        for tp in self._parts:
            for i, v in zip(tp.fetch_indices, results[id(tp)]):
                out[i] = v
        for i, j in self._fed_fetches:
            out[i] = feed_values[j]
        return out

    def _cancel_everywhere(self, step_id, failed_task):
        cancel = "step %d cancelled: %s failed" % (step_id, failed_task)
        for other in self._parts:
            if other.worker is not None:
                other.worker.abort_step(step_id, errors.CancelledError(None, None, cancel))
            else:
                self._server.transport.send_oneway(other.address, "AbortStep",
                                                   {"step": step_id, "message": cancel})

    def _raise(self, step, futures, wait):
        """Raise the step's first failure; tasks that restarted or vanished register again."""
        wait(futures, timeout=ABORT_WAIT_S)
        exc, tp = step.failure
        if tp is None:   # cancelled by the client, not failed on a task
            raise exc
        for f, other in list(futures.items()) + [(None, tp)]:
            e = exc if f is None else (f.exception() if f.done() else None)
            if e is not None and isinstance(to_op_error(e, other.task, other.address),
                                            errors.AbortedError | errors.UnavailableError):
                self._invalidate(other)
        error = to_op_error(exc, tp.task, tp.address)
        if isinstance(error, errors.AbortedError | errors.UnavailableError):
            # The session is told that a task failed (which one may be a partition waiting on
            # it): new incarnations are accepted from now on (see _check_incarnation).
            self._incarnations.clear()
        raise error from (exc if exc is not error else None)

    def _invalidate(self, tp):
        # Every plan of this server registers again with the task, not only this one.
        self._server.task_failed(tp.task)

    def _register(self):
        with self._lock:
            epochs = self._server.task_epochs
            todo = [tp for tp in self._parts if tp.handle is None or tp.epoch != epochs[tp.task]]
            for tp in todo:
                tp.epoch = epochs[tp.task]
                local = self._server.local_peer(tp.address)
                p = tp.partition
                names = ([n for n in p.feeds], [n for _, n in p.fetches], list(p.targets))
                if local is not None:
                    tp.worker = local.worker
                    tp.handle = local.worker.register_graph(p.graph, *names)
                    self._check_incarnation(tp, local.incarnation)
                    continue
                tp.worker = None
                buffers = []   # large constants travel as raw frames, not in the header
                body = {"graph": p.graph.as_graph_def(buffers=buffers), "feeds": names[0],
                        "fetches": names[1], "targets": names[2]}
                future = self._server.transport.request(tp.address, "RegisterGraph", body,
                                                        buffers, peer_timeout=self._peer_timeout)
                try:
                    tp.handle = future.result().body["handle"]
                except Exception as e:  # noqa: BLE001 - mapped to the OpError naming the task
                    error = to_op_error(e, tp.task, tp.address)
                    if isinstance(error, errors.AbortedError | errors.UnavailableError):
                        self._incarnations.clear()   # the session is told: see _raise
                    raise error from e
                self._check_incarnation(tp, str(tp.handle).partition("/")[0])

    def _check_incarnation(self, tp, incarnation):
        """A task that restarted since this session first used it lost its state (variables,
        tables, queues): the step fails with AbortedError, so that MonitoredTrainingSession
        recovers (a new session checks readiness and restores) instead of running on a fresh,
        empty task. TF1 does the same: a restarted worker has lost the session's handle."""
        known = self._incarnations.setdefault(tp.task, incarnation)
        if known == incarnation:
            return
        self._incarnations[tp.task] = incarnation
        tp.handle = None
        self._server.task_failed(tp.task)
        raise errors.AbortedError(None, None, "Task %s at %s restarted (incarnation %s, was %s) "
                                  "since this session first used it: its state is gone; create a "
                                  "new session (MonitoredTrainingSession does this and restores "
                                  "from the last checkpoint)" % (tp.task, tp.address, incarnation,
                                                                 known))

    def tasks(self):
        return [tp.task for tp in self._parts]


def trace_records(raw):
    """The well-formed ``(name, start us, end us, label, lane)`` records of a traced reply from
    another process (anything else in it is dropped: a reply never makes a trace fail)."""
    if not isinstance(raw, list | tuple):
        return []
    return [tuple(rec) for rec in raw if isinstance(rec, list | tuple) and len(rec) == 5
            and isinstance(rec[0], str) and isinstance(rec[3], str)
            and all(isinstance(x, int) for x in (rec[1], rec[2], rec[4]))]


class MasterSession:
    """What a client Session talks to: plans of its graph, cached per (feeds, fetches, targets)."""

    def __init__(self, server, graph, config):
        self._server = server
        self._graph = graph
        self._config = config
        self._filters = device_filters(config)   # an invalid filter fails at session creation
        ms = getattr(config, "operation_timeout_in_ms", 0) or 0
        self._peer_timeout = ms / 1000.0 if ms > 0 else None
        self._incarnations = {}   # task -> incarnation at this session's first registration
        self._plans = PlanCache(graph, lambda feeds, fetches, targets: StepPlan(
            server, feeds, fetches, targets, self._peer_timeout, config, self._incarnations))
        self.resources = server.resources

    def run(self, feeds, feed_values, fetches, targets, options=None, run_metadata=None):
        plan = self._plans.get(feeds, fetches, targets)
        if options is None or not options.trace_level or run_metadata is None:
            return plan.run(feed_values)
        trace = []
        values = plan.run(feed_values, trace)
        for device, records in trace:
            run_metadata.step_stats.add_device(device, records)
        return values

    def list_devices(self):
        return [str(t) + "/device:CPU:0" for t in self._server.cluster_tasks()
                if t == self._server.task or task_matches_filters(t, self._filters)]

    def cancel_threads(self, threads, error):
        """Cancel the steps that the threads (idents) of ``threads`` are running."""
        for plan in list(self._plans.values()):
            plan.cancel_running(error, threads)

    def close(self):
        closed = errors.CancelledError(None, None, "Session closed while the step was running")
        for plan in self._plans.values():
            plan.cancel_running(closed)
        self._plans.clear()
