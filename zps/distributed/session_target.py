"""Serve ``Session("zps://host:port")`` (and ``grpc://``, the same thing) through a master.

When the target server runs in this process (between-graph replication:
``MonitoredTrainingSession(master=server.target)``), the session uses its master directly and
nothing of the local part is serialized. Otherwise the session is a remote client: it registers
each pruned step plan once with the master (a serialized subgraph) and then sends only feeds and
receives fetches.

On a CURVE cluster the session's process needs keys too (``ZPS_CURVE_SECRET_KEY_FILE``, and
``ZPS_CURVE_SERVER_KEY_FILE`` when it is not a task holding the cluster key: see
zps.transport.security); without them a step fails with UnauthenticatedError at once.
"""

import random
import threading
import time

from zps.distributed.master import to_op_error, trace_records
from zps.distributed.server import local_server
from zps.framework import errors
from zps.runtime.executor import prune
from zps.runtime.plan_cache import PlanCache
from zps.transport import endpoint


def _address(target):
    address = target.split("://", 1)[1].rstrip("/")
    if ":" not in address:
        raise errors.InvalidArgumentError(None, None, "Session target %r has no port; use "
                                          "'zps://host:port'" % target)
    return address


def runner_for_target(target, graph, config):
    address = _address(target)
    server = local_server(address)
    if server is not None:
        return server.master_session(graph, config)
    return RemoteMasterRunner(address, graph, config)


class RemoteMasterRunner:
    """A session's link to a master in another process."""

    def __init__(self, address, graph, config):
        self._address = address
        self._graph = graph
        ms = getattr(config, "operation_timeout_in_ms", 0) or 0
        self._peer_timeout = ms / 1000.0 if ms > 0 else None
        self._device_filters = [str(f) for f in (getattr(config, "device_filters", None) or [])]
        self._soft_placement = bool(getattr(config, "allow_soft_placement", False))
        self._session_id = "%016x" % random.getrandbits(64)   # groups this session's plans
        self._transport = endpoint.default_transport()
        self._plans = PlanCache(graph, self._register)
        self._in_flight = {}   # thread ident -> the plan handle of the step it runs

    def run(self, feeds, feed_values, fetches, targets, options=None, run_metadata=None):
        handle = self._plans.get(feeds, fetches, targets)
        traced = options is not None and bool(options.trace_level) and run_metadata is not None
        body = {"handle": handle}
        if traced:
            body["trace"] = True   # the master traces every partition and returns the records
        t0 = time.time()
        thread = threading.get_ident()
        self._in_flight[thread] = handle
        try:
            reply = self._request("RunStep", body, feed_values)
        except errors.AbortedError:
            self._plans.discard(feeds, fetches, targets)   # master restarted: register on retry
            raise
        finally:
            self._in_flight.pop(thread, None)
        if traced:
            stats = reply.body.get("step_stats") if isinstance(reply.body, dict) else None
            for entry in stats if isinstance(stats, list) else ():
                if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
                    run_metadata.step_stats.add_device(entry[0], trace_records(entry[1]))
            # This client's own record: the whole request, as a master records its RunGraphs.
            run_metadata.step_stats.add_device("client of the master at %s" % self._address, [
                ("RunStep", int(t0 * 1e6), int(time.time() * 1e6), "RunStep = _RunStep()", 0)])
        return reply.tensors

    def _register(self, feeds, fetches, targets):
        ops = prune(fetches, targets, set(feeds))
        feeds_spec = [[t.name, t.dtype.name, _shape(t)] for t in feeds]
        buffers = []   # large constants travel as raw frames, not in the header
        body = {"graph": self._graph.as_graph_def(ops=ops, buffers=buffers), "feeds": feeds_spec,
                "fetches": [t.name for t in fetches],
                "targets": [op.name for op in targets], "peer_timeout": self._peer_timeout,
                "device_filters": self._device_filters, "soft_placement": self._soft_placement,
                "session": self._session_id}
        return self._request("RegisterPlan", body, buffers).body["handle"]

    def _request(self, method, body, tensors=()):
        try:   # from this thread's own socket where it can: its reply wakes it directly
            return self._transport.call(self._address, method, body, tensors,
                                        peer_timeout=self._peer_timeout)
        except endpoint.HandshakeError as e:
            cls = errors.UnauthenticatedError if e.certain else errors.UnavailableError
            raise cls(
                None, None, "Cannot open a session on %s: %s" % (self._address, e.reason)) from e
        except Exception as e:  # noqa: BLE001 - every failure becomes the right OpError
            raise to_op_error(e, "master", self._address) from e

    def list_devices(self):
        return []

    def cancel_threads(self, threads, error):
        """Cancel on the master the steps of the plans that the threads (idents) ``threads``
        run (other threads' steps of the same plans too: the master knows plans, not threads).
        ``error``: unused (the master cancels with CancelledError)."""
        del error
        handles = list({h for t, h in list(self._in_flight.items()) if t in threads})
        if handles:
            self._transport.send_oneway(self._address, "CancelSteps", {"handles": handles})

    def close(self):
        """Forget the plans and cancel their steps still running on the master (a thread blocked
        in this session's step ends with CancelledError instead of holding up shutdown)."""
        handles = self._plans.values()
        self._plans.clear()
        if handles:
            self._transport.send_oneway(self._address, "CancelSteps", {"handles": handles})


def _shape(t):
    s = t.get_shape()
    return None if s.ndims is None else s.as_list()
