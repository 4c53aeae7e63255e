"""``tf.train.Server``: one task of a cluster, serving a master and a worker service on one address.

>>> import zps as tf
>>> server = tf.train.Server.create_local_server()
>>> with tf.Graph().as_default():
...     c = tf.constant("Hello, distributed TensorFlow!")
...     with tf.Session(server.target) as sess:
...         print(sess.run(c))
b'Hello, distributed TensorFlow!'
>>> server.stop()
"""

import atexit
import collections
import concurrent.futures
import functools
import logging
import os
import random
import threading
import time
import types

from zps.distributed.cluster_spec import ClusterSpec
from zps.distributed.master import MasterSession, StepPlan
from zps.distributed.partition import Task, task_of_device
from zps.distributed.rendezvous import Rendezvous
from zps.distributed.worker_service import WorkerService
from zps.framework import errors
from zps.framework.graph import Graph
from zps.ops import array_ops
from zps.runtime import threads
from zps.runtime.executor import INLINE_BYTES, SHARED_CPU_INLINE_BYTES, batched, light_thread
from zps.runtime.resources import ResourceManager
from zps.transport import endpoint, protocol, security

log = logging.getLogger("zps.server")
_bad_tensors_log = endpoint.LogLimiter(log)   # one peer's bad Tensors cannot flood the log

_PROTOCOLS = (None, "grpc", "zps")
# Bounds on what remote client sessions can make a server keep (least recently used go first;
# a client whose plan was dropped gets AbortedError and registers it again on its next run).
MAX_REGISTERED_PLANS = int(os.environ.get("ZPS_MAX_REGISTERED_PLANS", 4096))
MAX_CLIENT_SESSIONS = 1024
DEFAULT_HEARTBEAT_S = 2.0      # seconds between heartbeats to the other tasks (ZPS_HEARTBEAT_SECS)
LEAVE_TIMEOUT_S = 0.5          # how long a stopping server waits for its peers to hear it leave
_local_servers = {}            # advertised address -> running Server in this process
_local_lock = threading.Lock()


def _after_fork_in_child():
    # The parent's servers do not run in a forked child (their threads are gone): a session
    # there reaches them over the network, as any other process would.
    global _local_lock
    _local_servers.clear()
    _local_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _leave_at_exit():
    # A program that ends without stopping its server (a worker whose training is done) still
    # tells its peers it left: they log that, not a failure (PeerHeartbeats.stop).
    with _local_lock:
        servers = list(_local_servers.values())
    for server in servers:
        heartbeats = server.heartbeats
        if heartbeats is not None:
            heartbeats.stop()


atexit.register(_leave_at_exit)


def local_server(address):
    """The running Server of this process at ``address``, or None."""
    return _local_servers.get(address)


def heartbeat_interval_from_env():
    """Seconds between heartbeats to the other tasks (``ZPS_HEARTBEAT_SECS``, default 2; 0: off)."""
    text = os.environ.get("ZPS_HEARTBEAT_SECS", "").strip()
    try:
        value = float(text) if text else DEFAULT_HEARTBEAT_S
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError("ZPS_HEARTBEAT_SECS must be a number of seconds >= 0 (0 disables "
                         "heartbeats), got %r" % text)
    return value


class _PeerState:
    """What a task's heartbeats know of one peer (PeerHeartbeats, under its lock)."""

    __slots__ = ("task", "up", "seen", "incarnation", "in_flight", "leaves")

    def __init__(self, task):
        self.task = task
        self.up = False
        self.seen = None          # when it last answered (monotonic)
        self.incarnation = None   # its last answer's
        self.in_flight = False    # a heartbeat to it is unanswered
        self.leaves = 0           # times it said it left: older heartbeats' answers are stale


class PeerHeartbeats:
    """Heartbeats from one server to every other task of its cluster spec, and what they tell.

    Every ``interval`` seconds a thread of its own sends each peer a tiny ``Heartbeat`` request
    (answered on the peer's I/O thread with its incarnation), at most one in flight per peer. A
    peer is *down* once a heartbeat fails: its connection broke (at once, on kill -9) or it went
    unanswered for two intervals, so a dead peer is seen within about three. A peer seen down or
    with a new incarnation bumps ``server.task_failed``, so the next step registers with it again
    instead of first failing on a stale handle. Peers in this process are read directly.

    Every task beats every other (not only those it has talked to): a few hundred bytes per peer
    and interval, and a task can report peers it has not needed yet (a chief its ps before the
    first step). The per-peer endpoint PING is not used: its PONG carries no incarnation.
    """

    def __init__(self, server, peers, interval):
        self._server = server
        self.interval = interval
        self._lock = threading.Lock()
        self._peers = {address: _PeerState(task) for task, address in peers}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="zps-heartbeat-%s-%d" % (server.task.job,
                                                                      server.task.index))

    def start(self):
        self._thread.start()

    def stop(self):
        """Stop beating, and tell the peers seen up or being reached (a heartbeat on its way:
        a peer that started just before may see this task up before it hears the answer) that
        this task is stopping (``Leaving``), so that they log it as left instead of down: a
        worker ending its training is no failure. Waits for their answers, LEAVE_TIMEOUT_S at
        most in all; a peer that does not answer sees the task down at its next heartbeat, as it
        would have. Once only."""
        if self._stop.is_set():
            return
        self._stop.set()
        with self._lock:
            up = [address for address, peer in self._peers.items()
                  if (peer.up or peer.in_flight) and local_server(address) is None]
        futures = []
        for address in up:
            try:
                futures.append(self._server.transport.request(
                    address, "Leaving", {"from": str(self._server.task)}, timeout=LEAVE_TIMEOUT_S))
            except Exception:  # noqa: BLE001 - the transport is closing: nobody to tell
                break
        concurrent.futures.wait(futures, timeout=LEAVE_TIMEOUT_S)

    def left(self, task):
        """Peer ``task`` (its device prefix) said it is stopping: down from now on, without the
        warning of a failure (nor a task epoch bump: a restart shows a new incarnation)."""
        with self._lock:
            gone = [(address, peer) for address, peer in self._peers.items()
                    if str(peer.task) == task and peer.up]
            for _, peer in gone:
                peer.up = False
                peer.leaves += 1
        for address, _ in gone:
            endpoint.peer_left(address)   # steps waiting on it fail now, not at their timeout
            log.info("%s: task %s at %s left (it stopped)", self._server.task, task, address)

    def snapshot(self):
        """``{address: {"task", "up", "last_seen_s_ago", "incarnation"}}`` (plain data)."""
        now = time.monotonic()
        with self._lock:
            return {address: {"task": "/job:%s/task:%d" % (p.task.job, p.task.index), "up": p.up,
                              "incarnation": p.incarnation,
                              "last_seen_s_ago": None if p.seen is None else round(now - p.seen, 3)}
                    for address, p in self._peers.items()}

    def _run(self):
        while not self._stop.is_set():
            for address in self._peers:
                try:
                    self._beat(address)
                except Exception:  # noqa: BLE001 - heartbeats must never stop, nor stop a server
                    log.exception("%s: heartbeat to %s failed", self._server.task, address)
            self._stop.wait(self.interval)

    def _beat(self, address):
        local = local_server(address)
        if local is not None:
            self._seen(address, local.incarnation)
            return
        with self._lock:
            peer = self._peers[address]
            if peer.in_flight:
                return   # the last one is still unanswered: it fails at its own timeout
            peer.in_flight = True
            leaves = peer.leaves
        try:
            future = self._server.transport.request(
                address, "Heartbeat", {"from": str(self._server.task)}, timeout=2 * self.interval)
        except Exception:  # noqa: BLE001 - the transport is closing: the server is stopping
            with self._lock:
                peer.in_flight = False
            return
        future.add_done_callback(lambda f: self._answered(address, f, leaves))

    def _answered(self, address, future, leaves):
        # Runs on the transport's I/O thread: only bookkeeping here.
        with self._lock:
            self._peers[address].in_flight = False
        if future.cancelled() or self._stop.is_set():
            return
        exc = future.exception()
        if exc is None:
            body = future.result().body
            incarnation = body.get("incarnation") if isinstance(body, dict) else None
            self._seen(address, incarnation if isinstance(incarnation, str) else None, leaves)
        elif isinstance(exc, endpoint.RemoteError):
            self._seen(address, None, leaves)   # it answered (an older server without Heartbeat)
        elif isinstance(exc, endpoint.TransportError) and "transport is closed" not in str(exc):
            self._lost(address, exc)

    def _seen(self, address, incarnation, leaves=None):
        """Peer ``address`` answered (``leaves``: how often it had left when the heartbeat went
        out; an answer that crossed its Leaving does not make it up again)."""
        with self._lock:
            peer = self._peers[address]
            if leaves is not None and leaves != peer.leaves:
                return
            task, was_up, seen_before, known = peer.task, peer.up, peer.seen, peer.incarnation
            peer.up, peer.seen = True, time.monotonic()
            endpoint.peer_back(address)
            if incarnation is not None:
                peer.incarnation = incarnation
            restarted = incarnation is not None and known is not None and incarnation != known
            if restarted:   # with the state change: whoever sees it up sees the epoch bumped
                self._server.task_failed(task)
        if restarted:
            log.warning("%s: task %s at %s restarted (incarnation %s, was %s)", self._server.task,
                        task, address, incarnation, known)
        elif not was_up and seen_before is not None:
            log.info("%s: task %s at %s is up again", self._server.task, task, address)

    def _lost(self, address, exc):
        with self._lock:
            peer = self._peers[address]
            task, was_up = peer.task, peer.up
            peer.up = False
            if was_up:   # with the state change: whoever sees it down sees the epoch bumped
                self._server.task_failed(task)
        if was_up:
            log.warning("%s: task %s at %s is down: %s", self._server.task, task, address, exc)


class Server:
    """An in-process server: ``Server(cluster, job_name=None, task_index=None, ...)``.

    ``bind_address`` (zps only) binds another local address than the cluster spec's (e.g.
    ``0.0.0.0:2222`` when the spec names a Kubernetes service); by default the server listens
    only on the address the spec gives it.
    """

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True, bind_address=None):
        cluster = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`: the cluster has jobs %s"
                                 % cluster.jobs)
            job_name = cluster.jobs[0]
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError("Must specify an explicit `task_index`: job %r has tasks %s"
                                 % (job_name, indices))
            task_index = indices[0]
        if protocol not in _PROTOCOLS:
            raise ValueError("Unsupported protocol %r: use 'grpc' (served by zps over ZeroMQ) or "
                             "'zps'" % (protocol,))
        self._cluster = cluster
        self._device_addresses = {}   # device string -> address (address_of)
        self._task = Task(job_name, int(task_index))
        self._address = cluster.task_address(job_name, task_index)
        shared = ["/job:%s/task:%d" % (job, i) for job, i, address in cluster.tasks()
                  if address == self._address and (job, i) != (job_name, int(task_index))]
        if shared and not self._address.endswith(":0"):   # port 0: each its own, chosen later
            raise ValueError("The cluster spec gives %s to both %s and %s: each task needs an "
                             "address of its own (a mistyped host list?)"
                             % (self._address, "/job:%s/task:%d" % (job_name, int(task_index)), shared[0]))
        self._bind_address = bind_address
        self._config = config
        self.incarnation = "%016x" % random.getrandbits(64)
        self.resources = ResourceManager()
        self.rendezvous = Rendezvous()
        self.worker = WorkerService(self)
        self.transport = None
        self.pool = None
        self._bound = None
        self.heartbeats = None   # PeerHeartbeats while serving (None: no peers, or disabled)
        self.inline_bytes = INLINE_BYTES   # the partitions' light-thread op limit (see start)
        self._plans = collections.OrderedDict()   # handle -> StepPlan of remote client sessions
        self._plans_lock = threading.Lock()
        self._client_sessions = collections.OrderedDict()   # session id -> task incarnations seen
        self._plan_ids = iter(range(1, 1 << 62))
        self.task_epochs = collections.Counter()   # bumped when a task fails or restarts
        self._stopped = threading.Event()
        if start:
            self.start()

    # -- identity --------------------------------------------------------------------------------
    @property
    def target(self):
        """The session target of this server: ``zps://host:port``."""
        return "zps://" + self._address

    @property
    def server_def(self):
        return {"cluster": self._cluster.as_dict(), "job_name": self._task.job,
                "task_index": self._task.index, "protocol": "zps"}

    @property
    def task(self):
        return self._task

    @property
    def cluster(self):
        return self._cluster

    def cluster_tasks(self):
        return {Task(job, i) for job, i, _ in self._cluster.tasks()}

    def address_of(self, task):
        """The address of a Task, or of the task of a device string (cached: every _Send asks)."""
        if isinstance(task, str):
            address = self._device_addresses.get(task)
            if address is None:
                address = self.address_of(task_of_device(task, self._task))
                if len(self._device_addresses) < 4096:
                    self._device_addresses[task] = address
            return address
        return self._cluster.task_address(task.job, task.index)

    def local_peer(self, address):
        return _local_servers.get(address)

    def task_failed(self, task):
        """A task was found down or restarted: every plan registers with it again."""
        self.task_epochs[task] += 1

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self):
        """Bind the server's address and serve (idempotent)."""
        if self._bound is not None:
            return
        interval = heartbeat_interval_from_env()   # a bad value fails before anything is bound
        self.transport = endpoint.default_transport()
        # Steps run their cheap ops on the I/O thread as tensors arrive (executor.light_thread).
        self.transport.run_in_io_thread(light_thread)
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=64, thread_name_prefix="zps-%s-%d" % (self._task.job, self._task.index))
        # The peer table exists before the first request can come in: a Status answered at once
        # lists every peer (not yet seen up) rather than none.
        peers = [(Task(job, i), address) for job, i, address in self._cluster.tasks()
                 if address != self._address]
        if interval > 0 and peers:
            self.heartbeats = PeerHeartbeats(self, peers, interval)
        try:
            # Receive limits: ZPS_MAX_{HEADER,TENSOR,MESSAGE}_BYTES (zps.transport.security).
            self._bound = self.transport.bind(self._address, self._handle,
                                              limits=security.receive_limits_from_env(),
                                              bind_address=self._bind_address,
                                              early=_tensors_early)
        except endpoint.BindError as e:
            self.pool.shutdown(wait=False)
            self.heartbeats = None
            raise errors.UnavailableError(
                None, None, "Cannot start the server of %s at %s: %s"
                % (self._task, self._address, e)) from None
        if self._bound.address != self._address:   # port 0: the OS chose one
            self._rebind_cluster(self._bound.address)
        with _local_lock:
            _local_servers[self._address] = self
        self._stopped.clear()
        # Tasks sharing this machine must not each start one BLAS thread per core, and with at
        # most a core each, a hand-off to the pool buys no parallelism: larger ops run inline.
        threads.limit_for_server(self._cluster, self._address, self._config)
        self.inline_bytes = SHARED_CPU_INLINE_BYTES if threads.shares_cpu(
            self._cluster, self._address) else INLINE_BYTES
        if self.heartbeats is not None:
            self.heartbeats.start()
        listening = "" if not self._bind_address else ", listening on %s:%s" % (
            self._bind_address.rsplit(":", 1)[0], self._bound.port)
        log.info("server %s serving at %s%s (incarnation %s, %s)", self._task, self._address,
                 listening, self.incarnation, "CURVE: only holders of allowed keys get in"
                 if self.transport.curve is not None else "no authentication")

    def _rebind_cluster(self, address):
        spec = self._cluster.as_dict()
        tasks = spec[self._task.job]
        if isinstance(tasks, list):
            tasks[self._task.index] = address
        else:
            tasks[self._task.index] = address
        self._cluster = ClusterSpec(spec)
        self._address = address
        self._device_addresses = {}

    def join(self):
        """Block until the server is stopped (TF1's ps tasks call this and never return)."""
        while not self._stopped.wait(0.5):
            pass

    def stop(self):
        """Stop serving: close the socket (the port is free again), abort running steps."""
        if self._bound is None:
            return
        with _local_lock:
            if _local_servers.get(self._address) is self:
                del _local_servers[self._address]
        if self.heartbeats is not None:
            self.heartbeats.stop()
            self.heartbeats = None
        self.transport.unbind(self._bound)
        self._bound = None
        stopped = errors.CancelledError(None, None, "server %s stopped" % (self._task,))
        self.rendezvous.abort_all(stopped)
        self.worker.abort_all(stopped)
        self.resources.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._stopped.set()

    @staticmethod
    def create_local_server(config=None, start=True):
        """A single-task cluster on localhost with a port the OS chooses."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)

    def __repr__(self):
        return "<zps.train.Server %s at %s>" % (self._task, self._address)

    # -- masters for sessions --------------------------------------------------------------------
    def master_session(self, graph, config):
        return MasterSession(self, graph, config)

    # -- RPC -------------------------------------------------------------------------------------
    def _handle(self, msg, responder):
        """Runs on the I/O thread: cheap messages inline, the rest on the pool."""
        body = msg.body if isinstance(msg.body, dict) else {}
        if msg.method == "Tensors":
            self._put_tensors(body, msg.tensors)
            return
        if msg.method == "CancelSteps":   # a remote client closed its session
            handles = body.get("handles")
            if isinstance(handles, list):
                closed = errors.CancelledError(None, None, "Session closed while the step was "
                                               "running")
                for h in handles:
                    plan = self._plans.get(h) if isinstance(h, int) else None
                    if plan is not None:
                        plan.cancel_running(closed)
            return
        if msg.method == "Heartbeat":   # answered right here: a peer's liveness probe
            if responder is not None:
                responder.reply({"incarnation": self.incarnation, "task": str(self._task)})
            return
        if msg.method == "Leaving":   # a peer stopping cleanly (PeerHeartbeats.stop)
            heartbeats, task = self.heartbeats, body.get("from")
            if heartbeats is not None and isinstance(task, str):
                heartbeats.left(task)
            if responder is not None:
                responder.reply(None)
            return
        if msg.method == "AbortStep":
            step = body.get("step")
            if isinstance(step, int):
                self.worker.abort_step(step, errors.CancelledError(
                    None, None, "step cancelled: %s" % body.get("message", "")))
            return
        handler = self._RPC.get(msg.method)
        if handler is None:
            if responder is not None:
                responder.error(errors.UNIMPLEMENTED, "unknown method %r" % msg.method)
            return
        if responder is None:
            return
        if msg.method == "RunGraph":
            home = body.get("home")
            # Tensors for the requester's own task go back on the request's connection.
            reverse = (home, responder) if isinstance(home, str) else None
            handler = functools.partial(handler, reverse=reverse)
        if msg.method == "RunGraph" and any(getattr(t, "zps_streamed", False)
                                            for t in msg.tensors):
            # Feeds still streaming in (_tensors_early): the step waits for them on the pool.
            self.pool.submit(self._serve, handler, body, msg.tensors, responder)
            return
        if msg.method == "RunGraph":
            # Partitions start right here, on the I/O thread: one that cannot wait (a ps reading
            # or updating variables) runs whole; one that waits for tensors runs its cheap ops
            # here as they become ready and its expensive ones on the pool (Plan.start): each
            # thread hop costs more than most ps-side ops.
            if self.worker.may_block(body.get("handle")):
                self._start_graph(body, msg.tensors, responder, reverse)
            else:
                self._serve(handler, body, msg.tensors, responder)
            return
        self.pool.submit(self._serve, handler, body, msg.tensors, responder)

    def _put_tensors(self, body, tensors):
        step, keys = body.get("step"), body.get("keys")
        values = _keyed_values(keys, tensors) if isinstance(step, int) else None
        if values is None:
            peer = self._bound.peer() if self._bound is not None else "a peer"
            reason = "'step' must be an int and 'keys' a list naming the %d tensors (a string " \
                "per tensor, or [string, n] for a group of n), got step %.40r and keys %.80r" \
                % (len(tensors), step, keys)
            _bad_tensors_log.warning(peer, "%s: malformed Tensors message from %s dropped: %s",
                                     self._task, peer, reason)
            if self._bound is not None:
                self._bound.stats.malformed += 1
            if isinstance(step, int) and self.rendezvous.is_running(step):
                # Its Recvs would wait for tensors that will never come: fail the step now.
                self.worker.abort_step(step, errors.DataLossError(
                    None, None, "step %d aborted on %s: a malformed Tensors message for it from %s "
                    "(task %.80s) was dropped: %s" % (step, self._task, peer, body.get("from"),
                                                      reason)))
            return
        def put_all():
            for refused in self.rendezvous.put_many(step, *values):
                peer = self._bound.peer() if self._bound is not None else "a peer"
                _bad_tensors_log.warning(peer, "%s: %s (from %s)", self._task, refused, peer)

        batched(put_all)   # the step waiting for these tensors continues once, after all are in

    def _serve(self, handler, body, tensors, responder):
        try:
            out_body, out_tensors = handler(self, body, tensors)
        except Exception as e:  # noqa: BLE001 - reported to the caller, never crashes the server
            self._answer_error(responder, e)
        else:
            responder.reply(out_body, out_tensors)

    def _answer_error(self, responder, e):
        if isinstance(e, errors.OpError):
            responder.error(e.error_code, e.message, e.op_name)
            return
        log.error("%s: request failed", self._task, exc_info=e)
        responder.error(errors.INTERNAL, "%s: %s" % (type(e).__name__, e))

    def deliver_returned(self, msg):
        """A message a task sent back on a RunGraph request's connection (``Caller.on_oneway``,
        on the thread that sent the request): tensors for this task's partition of the step."""
        if msg.method == "Tensors":
            self._put_tensors(msg.body if isinstance(msg.body, dict) else {}, msg.tensors)

    def _start_graph(self, body, tensors, responder, reverse=None):
        """RunGraph of a partition that waits for tensors, answered when it finishes
        (``Plan.start``: see ``_handle``)."""
        trace = [] if body.get("trace") else None

        def done(values, error):
            if error is None:
                responder.reply(_graph_reply(trace), values)
            else:
                self._answer_error(responder, error)

        try:
            handle, step = _field(body, "handle", str), _field(body, "step", int)
        except errors.OpError as e:
            done(None, e)
            return
        self.worker.start_graph(handle, step, list(tensors), done, trace, reverse)

    def _rpc_register_graph(self, body, tensors):
        from zps.framework.serialization import import_graph_def
        graph_def = _field(body, "graph", dict)
        names = [_field(body, k, list) for k in ("feeds", "fetches", "targets")]
        graph = Graph()
        try:
            with graph.as_default():
                import_graph_def(graph_def, name="", buffers=list(tensors))
            handle = self.worker.register_graph(graph, *names)
        except (KeyError, ValueError) as e:
            raise errors.InvalidArgumentError(None, None, "bad RegisterGraph request: %s" % e) from None
        return {"handle": handle}, ()

    def _rpc_run_graph(self, body, tensors, reverse=None):
        trace = [] if body.get("trace") else None   # RunOptions.FULL_TRACE: per-op records
        values = self.worker.run_graph(_field(body, "handle", str), _field(body, "step", int),
                                       list(tensors), trace, reverse=reverse)
        return _graph_reply(trace), values

    def _rpc_register_plan(self, body, tensors):
        from zps.framework.serialization import import_graph_def
        graph_def = _field(body, "graph", dict)
        shipped = {n.get("name") for n in graph_def.get("node", []) if isinstance(n, dict)}
        graph = Graph()
        input_map = {}
        with graph.as_default():
            for i, spec in enumerate(_field(body, "feeds", list)):
                # A fed tensor whose producer was not shipped (pruned away) arrives as a placeholder.
                if not (isinstance(spec, list) and len(spec) == 3 and isinstance(spec[0], str)):
                    raise errors.InvalidArgumentError(None, None, "bad feed spec %r" % (spec,))
                name, dtype, shape = spec
                if name.rsplit(":", 1)[0] not in shipped:
                    input_map[name] = array_ops.placeholder(dtype, shape, name="_feed_%d" % i)
            try:
                import_graph_def(graph_def, input_map=input_map, name="", buffers=list(tensors))
            except (TypeError, ValueError) as e:
                raise errors.InvalidArgumentError(None, None, "bad RegisterPlan graph: %s" % e) from None
        try:
            feeds = [input_map[spec[0]] if spec[0] in input_map else graph.get_tensor_by_name(spec[0])
                     for spec in body["feeds"]]
            fetches = [graph.get_tensor_by_name(n) for n in _field(body, "fetches", list)]
            targets = [graph.get_operation_by_name(n) for n in _field(body, "targets", list)]
        except (KeyError, ValueError, TypeError) as e:
            raise errors.InvalidArgumentError(None, None, "bad RegisterPlan request: %s" % e) from None
        timeout = body.get("peer_timeout")
        filters = body.get("device_filters") or []
        if not (isinstance(filters, list) and all(isinstance(f, str) for f in filters)):
            raise errors.InvalidArgumentError(None, None, "device_filters must be a list of strings")
        session = str(body.get("session", ""))[:64]
        with self._plans_lock:
            # The task incarnations a client session has seen are shared by all its plans.
            incarnations = self._client_sessions.pop(session, None)
            self._client_sessions[session] = {} if incarnations is None else incarnations
            while len(self._client_sessions) > MAX_CLIENT_SESSIONS:
                self._client_sessions.popitem(last=False)
        plan = StepPlan(self, feeds, fetches, targets,
                        timeout if isinstance(timeout, int | float) else None,
                        config=types.SimpleNamespace(
                            device_filters=filters,
                            allow_soft_placement=bool(body.get("soft_placement", False))),
                        incarnations=self._client_sessions[session])
        handle = next(self._plan_ids)
        with self._plans_lock:
            self._plans[handle] = plan
            while len(self._plans) > MAX_REGISTERED_PLANS:   # the client registers again
                self._plans.popitem(last=False)
        return {"handle": handle}, ()

    def _rpc_run_step(self, body, tensors):
        handle = _field(body, "handle", int)
        with self._plans_lock:
            plan = self._plans.get(handle)
            if plan is not None:
                self._plans.move_to_end(handle)
        if plan is None:
            raise errors.AbortedError(None, None, "step plan %r is unknown on %s (the server "
                                      "restarted?); retry" % (body.get("handle"), self._task))
        if body.get("trace") is not True:
            return None, plan.run(list(tensors))
        trace = []   # a client in another process asked for the step's trace (RunOptions)
        values = plan.run(list(tensors), trace)
        return {"step_stats": [[device, [list(r) for r in records]]
                               for device, records in trace]}, values

    def _rpc_status(self, body, tensors):
        stats = self._bound.stats.as_dict() if self._bound is not None else {}
        stats.update({"task": str(self._task), "incarnation": self.incarnation,
                      "steps_served": self.worker.steps_run, "pid": os.getpid(),
                      "steps_running": self.worker.steps_running(),
                      # Read by `zps status`: how long this incarnation has served, and how many
                      # requests it answered with an error (malformed input is counted apart).
                      "uptime_s": time.time() - stats["started"] if "started" in stats else 0.0,
                      "errors": stats.get("errors_sent", 0),
                      "graphs_registered": len(self.worker._graphs),
                      "graphs_evicted": self.worker.graphs_evicted,
                      "log_lines_suppressed": _bad_tensors_log.suppressed
                      + endpoint._malformed_log.suppressed})
        # Peers' direct connections (zps.transport.direct) open now: how many, over Unix sockets,
        # with shared-memory rings.
        stats.update(endpoint.direct_summary(self._bound))
        stats.update(self.rendezvous.early_stats())
        # What this task's heartbeats see of the others ({} when heartbeats are off).
        heartbeats = self.heartbeats
        stats["peers"] = heartbeats.snapshot() if heartbeats is not None else {}
        return stats, ()

    _RPC = {
        "RegisterGraph": _rpc_register_graph,
        "RunGraph": _rpc_run_graph,
        "RegisterPlan": _rpc_register_plan,
        "RunStep": _rpc_run_step,
        "Status": _rpc_status,
    }


def _keyed_values(keys, tensors):
    """The (keys, values) of a Tensors message: a key per tensor, or ``[key, n]`` for a group of
    the next n tensors (a _SendN's, delivered as one tuple); None if malformed."""
    if not isinstance(keys, list):
        return None
    if len(keys) == len(tensors) and all(type(k) is str for k in keys):
        return keys, tensors   # no group: the common message
    names, values, i = [], [], 0
    for k in keys:
        if type(k) is str and i < len(tensors):
            names.append(k)
            values.append(tensors[i])
            i += 1
        elif type(k) is list and len(k) == 2 and type(k[0]) is str and type(k[1]) is int \
                and 1 <= k[1] <= len(tensors) - i:
            names.append(k[0])
            values.append(tuple(tensors[i:i + k[1]]))
            i += k[1]
        else:
            return None
    return (names, values) if i == len(tensors) else None


def _graph_reply(trace):
    """A RunGraph reply's body: the partition's per-op records when it was traced, else None."""
    return {"step_stats": [list(r) for r in trace]} if trace is not None else None


def _tensors_early(msg):
    """Tensors messages and RunGraph requests are handled at their head: a large tensor whose
    reader applies it in place (a push) is applied chunk by chunk as it arrives (codec.Incoming);
    other readers wait for all of it."""
    return msg.method == "Tensors" and msg.kind == protocol.ONEWAY or \
        msg.method == "RunGraph" and msg.kind == protocol.REQUEST


def _field(body, name, kind):
    value = body.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise errors.InvalidArgumentError(None, None, "request field %r must be a %s, got %r"
                                          % (name, kind.__name__, type(value).__name__))
    return value
