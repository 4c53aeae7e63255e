"""The master service: prunes, partitions and runs the steps of client sessions.

A step plan is made once per (feeds, fetches, targets): the pruned graph is partitioned by task,
each partition registered once on its task (in-process tasks get the graph object itself; remote
ones a serialized copy), and then every step starts all partitions concurrently. A failure on any
task aborts the step everywhere and reaches the client as the right OpError.
"""

import concurrent.futures
import random
import threading

from zps.distributed.partition import partition
from zps.framework import errors
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


class _TaskPart:
    __slots__ = ("task", "address", "partition", "feed_indices", "fetch_indices", "handle",
                 "worker")

    def __init__(self, task, address, part):
        self.task = task
        self.address = address
        self.partition = part
        self.feed_indices = list(part.feeds.values())
        self.fetch_indices = [i for i, _ in part.fetches]
        self.handle = None
        self.worker = None   # the WorkerService when the task is in this process


class StepPlan:
    """The partitioned, registered form of one (feeds, fetches, targets) of a session."""

    def __init__(self, server, feeds, fetches, targets, peer_timeout):
        self._server = server
        self._peer_timeout = peer_timeout
        self._n_fetches = len(fetches)
        fed = {t: i for i, t in enumerate(feeds)}
        self._fed_fetches = [(i, fed[t]) for i, t in enumerate(fetches) if t in fed]
        parts = partition(feeds, fetches, targets, server.task, server.cluster_tasks())
        self._parts = [_TaskPart(task, server.address_of(task), p) for task, p in parts.items()]
        self._lock = threading.Lock()

    def run(self, feed_values):
        self._register()
        step_id = random.getrandbits(62)
        futures = {}
        inline = None
        for tp in self._parts:
            values = [feed_values[i] for i in tp.feed_indices]
            if tp.worker is not None:
                if inline is None:
                    inline = (tp, values)   # run in this thread, after starting the others
                    continue
                futures[self._server.pool.submit(tp.worker.run_graph, tp.handle, step_id,
                                                 values)] = tp
            else:
                futures[self._server.transport.request(
                    tp.address, "RunGraph", {"handle": tp.handle, "step": step_id}, values,
                    peer_timeout=self._peer_timeout)] = tp
        results = {}
        failure = None
        if inline is not None:
            tp, values = inline
            try:
                results[id(tp)] = tp.worker.run_graph(tp.handle, step_id, values)
            except Exception as e:  # noqa: BLE001 - becomes the step's error below
                failure = (e, tp)
        if failure is None and futures:
            done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
            failure = self._first_failure(done, futures)
        if failure is not None:
            self._abort(step_id, failure, futures)
        for f, tp in futures.items():
            r = f.result()
            results[id(tp)] = r if tp.worker is not None else r.tensors
        out = [None] * self._n_fetches
        for tp in self._parts:
            for i, v in zip(tp.fetch_indices, results[id(tp)]):
                out[i] = v
        for i, j in self._fed_fetches:
            out[i] = feed_values[j]
        return out

    @staticmethod
    def _first_failure(done, futures):
        for f in done:
            if f.exception() is not None:
                return f.exception(), futures[f]
        return None

    def _abort(self, step_id, failure, futures):
        exc, tp = failure
        error = to_op_error(exc, tp.task, tp.address)
        if isinstance(error, errors.AbortedError | errors.UnavailableError):
            self._invalidate(tp)
        cancel = errors.CancelledError(None, None, "Step %d cancelled: %s failed" % (step_id, tp.task))
        for other in self._parts:
            if other.worker is not None:
                other.worker.abort_step(step_id, cancel)
            else:
                self._server.transport.send_oneway(
                    other.address, "AbortStep", {"step": step_id, "message": str(cancel.message)})
        concurrent.futures.wait(futures, timeout=ABORT_WAIT_S)
        for f, other in futures.items():
            if f.done() and f.exception() is not None:
                e = to_op_error(f.exception(), other.task, other.address)
                if isinstance(e, errors.AbortedError | errors.UnavailableError):
                    self._invalidate(other)
        raise error from (exc if exc is not error else None)

    def _invalidate(self, tp):
        with self._lock:
            tp.handle = None

    def _register(self):
        with self._lock:
            todo = [tp for tp in self._parts if tp.handle is None]
            for tp in todo:
                local = self._server.local_peer(tp.address)
                p = tp.partition
                names = ([n for n in p.feeds], [n for _, n in p.fetches], list(p.targets))
                if local is not None:
                    tp.worker = local.worker
                    tp.handle = local.worker.register_graph(p.graph, *names)
                    continue
                tp.worker = None
                body = {"graph": p.graph.as_graph_def(), "feeds": names[0], "fetches": names[1],
                        "targets": names[2]}
                future = self._server.transport.request(tp.address, "RegisterGraph", body,
                                                        peer_timeout=self._peer_timeout)
                try:
                    tp.handle = future.result().body["handle"]
                except Exception as e:  # noqa: BLE001 - mapped to the OpError naming the task
                    raise to_op_error(e, tp.task, tp.address) from e

    def tasks(self):
        return [tp.task for tp in self._parts]


class MasterSession:
    """What a client Session talks to: plans of its graph, cached per (feeds, fetches, targets)."""

    def __init__(self, server, graph, config):
        self._server = server
        self._graph = graph
        self._config = config
        ms = getattr(config, "operation_timeout_in_ms", 0) or 0
        self._peer_timeout = ms / 1000.0 if ms > 0 else None
        self._plans = PlanCache(graph, lambda feeds, fetches, targets: StepPlan(
            server, feeds, fetches, targets, self._peer_timeout))
        self.resources = server.resources

    def run(self, feeds, feed_values, fetches, targets, options=None, run_metadata=None):
        return self._plans.get(feeds, fetches, targets).run(feed_values)

    def list_devices(self):
        return [str(t) + "/device:CPU:0" for t in self._server.cluster_tasks()]

    def close(self):
        self._plans.clear()
