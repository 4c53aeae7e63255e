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

import collections
import concurrent.futures
import logging
import random
import threading
import types

from zps.distributed.cluster_spec import ClusterSpec
from zps.distributed.master import MasterSession, StepPlan
from zps.distributed.partition import Task, task_of_device
from zps.distributed.rendezvous import Rendezvous
from zps.distributed.worker_service import WorkerService
from zps.framework import errors
from zps.framework.graph import Graph
from zps.ops import array_ops
from zps.runtime.resources import ResourceManager
from zps.transport import endpoint

log = logging.getLogger("zps.server")

_PROTOCOLS = (None, "grpc", "zps")
_local_servers = {}            # advertised address -> running Server in this process
_local_lock = threading.Lock()


def local_server(address):
    """The running Server of this process at ``address``, or None."""
    return _local_servers.get(address)


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
        self._task = Task(job_name, int(task_index))
        self._address = cluster.task_address(job_name, task_index)
        self._bind_address = bind_address
        self._config = config
        self.incarnation = "%016x" % random.getrandbits(64)
        self.resources = ResourceManager()
        self.rendezvous = Rendezvous()
        self.worker = WorkerService(self)
        self.transport = None
        self.pool = None
        self._bound = None
        self._plans = {}
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
        if isinstance(task, str):
            task = task_of_device(task, self._task)
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
        self.transport = endpoint.default_transport()
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=64, thread_name_prefix="zps-%s-%d" % (self._task.job, self._task.index))
        try:
            self._bound = self.transport.bind(self._address, self._handle,
                                              bind_address=self._bind_address)
        except endpoint.BindError as e:
            self.pool.shutdown(wait=False)
            raise errors.UnavailableError(
                None, None, "Cannot start the server of %s at %s: %s"
                % (self._task, self._address, e)) from None
        if self._bound.address != self._address:   # port 0: the OS chose one
            self._rebind_cluster(self._bound.address)
        with _local_lock:
            _local_servers[self._address] = self
        self._stopped.clear()
        log.info("server %s serving at %s (incarnation %s)", self._task, self._address,
                 self.incarnation)

    def _rebind_cluster(self, address):
        spec = self._cluster.as_dict()
        tasks = spec[self._task.job]
        if isinstance(tasks, list):
            tasks[self._task.index] = address
        else:
            tasks[self._task.index] = address
        self._cluster = ClusterSpec(spec)
        self._address = address

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
        if msg.method == "RunGraph" and not self.worker.may_block(body.get("handle")):
            # A partition that cannot wait (a ps reading or updating variables) runs right here:
            # two thread hops cost more than most such steps.
            self._serve(handler, body, msg.tensors, responder)
            return
        self.pool.submit(self._serve, handler, body, msg.tensors, responder)

    def _put_tensors(self, body, tensors):
        step, keys = body.get("step"), body.get("keys")
        if not isinstance(step, int) or not isinstance(keys, list) or len(keys) != len(tensors) \
                or not all(isinstance(k, str) for k in keys):
            log.warning("%s: malformed Tensors message dropped", self._task)
            if self._bound is not None:
                self._bound.stats.malformed += 1
            return
        for key, value in zip(keys, tensors):
            try:
                self.rendezvous.put(step, key, value)
            except ValueError as e:
                log.warning("%s: %s", self._task, e)

    def _serve(self, handler, body, tensors, responder):
        try:
            out_body, out_tensors = handler(self, body, tensors)
        except errors.OpError as e:
            responder.error(e.error_code, e.message, e.op_name)
        except Exception as e:  # noqa: BLE001 - reported to the caller, never crashes the server
            log.exception("%s: request failed", self._task)
            responder.error(errors.INTERNAL, "%s: %s" % (type(e).__name__, e))
        else:
            responder.reply(out_body, out_tensors)

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

    def _rpc_run_graph(self, body, tensors):
        values = self.worker.run_graph(_field(body, "handle", str), _field(body, "step", int),
                                       list(tensors))
        return None, values

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
        plan = StepPlan(self, feeds, fetches, targets,
                        timeout if isinstance(timeout, int | float) else None,
                        config=types.SimpleNamespace(device_filters=filters))
        handle = next(self._plan_ids)
        self._plans[handle] = plan
        return {"handle": handle}, ()

    def _rpc_run_step(self, body, tensors):
        plan = self._plans.get(_field(body, "handle", int))
        if plan is None:
            raise errors.AbortedError(None, None, "step plan %r is unknown on %s (the server "
                                      "restarted?); retry" % (body.get("handle"), self._task))
        return None, plan.run(list(tensors))

    def _rpc_status(self, body, tensors):
        stats = self._bound.stats.as_dict() if self._bound is not None else {}
        stats.update({"task": str(self._task), "incarnation": self.incarnation,
                      "steps_served": self.worker.steps_run})
        return stats, ()

    _RPC = {
        "RegisterGraph": _rpc_register_graph,
        "RunGraph": _rpc_run_graph,
        "RegisterPlan": _rpc_register_plan,
        "RunStep": _rpc_run_step,
        "Status": _rpc_status,
    }


def _field(body, name, kind):
    value = body.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise errors.InvalidArgumentError(None, None, "request field %r must be a %s, got %r"
                                          % (name, kind.__name__, type(value).__name__))
    return value
