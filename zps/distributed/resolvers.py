"""Cluster resolvers: the cluster and this process's task, read from the environment.

Names and behaviour follow TF1's ``tf.distribute.cluster_resolver``:

>>> import json, os
>>> os.environ["TF_CONFIG"] = json.dumps({"cluster": {"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]},
...                                       "task": {"type": "worker", "index": 1}})
>>> resolver = TFConfigClusterResolver()
>>> resolver.task_type, resolver.task_id, resolver.master(rpc_layer="grpc")
('worker', 1, 'grpc://w1:2222')
>>> resolver.cluster_spec().as_dict()["ps"]
['ps0:2222']
>>> del os.environ["TF_CONFIG"]

``SlurmClusterResolver`` reads ``SLURM_*`` variables instead (see its docstring).

CURVE keys are deliberately not part of TF_CONFIG: TF_CONFIG describes the cluster and is often
kept in plain config (a Kubernetes ConfigMap, a job script), while keys are secrets. They are
given next to it, in the task's environment, as files: ``ZPS_CURVE_SECRET_KEY_FILE`` (the
cluster keypair every task holds, e.g. a mounted Kubernetes Secret), plus, for clients that are
not tasks, ``ZPS_CURVE_SERVER_KEY_FILE``; ``ZPS_CURVE_ALLOWED_KEYS_DIR`` lists extra client keys a
server accepts. ``zps-launch --curve`` sets them for a local cluster. See zps.transport.security.
"""

import json
import os
import re

from zps.distributed.cluster_spec import ClusterSpec

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
           "SlurmClusterResolver", "expand_hostlist", "expand_tasks_per_node"]

_TF_CONFIG_ENV = "TF_CONFIG"


def format_master_url(master, rpc_layer=None):
    """``rpc_layer://master`` (or ``master`` as it is when there is no rpc layer)."""
    return "%s://%s" % (rpc_layer, master) if rpc_layer else master


class ClusterResolver:
    """Base class: ``cluster_spec()``, ``master()``, ``task_type``, ``task_id``, ``rpc_layer``."""

    task_type = None
    task_id = None
    rpc_layer = None

    def cluster_spec(self):
        raise NotImplementedError

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The session target of a task (default: this process's task); '' when unknown."""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, task_id)
        return format_master_url(address, rpc_layer or self.rpc_layer)

    @property
    def environment(self):
        return ""

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}


class SimpleClusterResolver(ClusterResolver):
    """A resolver over a given ``ClusterSpec`` (or dict) and task."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        self._cluster_spec = ClusterSpec(cluster_spec)
        self._master = master
        self.task_type = task_type
        self.task_id = None if task_id is None else int(task_id)
        self._environment = environment
        self._num_accelerators = num_accelerators or {}
        self.rpc_layer = rpc_layer

    def cluster_spec(self):
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is not None and task_id is not None:
            return super().master(task_type, task_id, rpc_layer)
        return format_master_url(self._master, rpc_layer or self.rpc_layer) if self._master else ""

    @property
    def environment(self):
        return self._environment

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return dict(self._num_accelerators)


# -- TF_CONFIG ------------------------------------------------------------------------------------

def _load_tf_config():
    text = os.environ.get(_TF_CONFIG_ENV, "").strip()
    if not text:
        return {}
    try:
        config = json.loads(text)
    except ValueError as e:
        raise ValueError("TF_CONFIG is not valid JSON (%s): %r" % (e, text[:200])) from None
    if not isinstance(config, dict):
        raise ValueError("TF_CONFIG must be a JSON object such as {\"cluster\": {...}, \"task\": "
                         "{\"type\": \"worker\", \"index\": 0}}, got %r" % text[:200])
    return config


def _tf_config_task():
    task = _load_tf_config().get("task", {})
    if not isinstance(task, dict):
        raise ValueError("TF_CONFIG's \"task\" must be an object like {\"type\": \"worker\", "
                         "\"index\": 0}, got %r" % (task,))
    return task


def _task_index(index):
    """TF_CONFIG's task index as an int: a JSON integer, or a string of digits as some operators
    write it (TF reads both). Nothing is rounded or coerced: ``0.5`` or ``true`` would silently
    name another task."""
    if isinstance(index, str) and re.fullmatch(r"\s*[0-9]+\s*", index):
        return int(index)
    if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
        return index
    if isinstance(index, float) and index.is_integer() and index >= 0:
        return int(index)   # 1.0: a JSON writer's integer
    raise ValueError("TF_CONFIG's task index must be a non-negative integer (e.g. \"index\": 0), "
                     "got %s" % json.dumps(index))


class TFConfigClusterResolver(ClusterResolver):
    """The cluster in the ``TF_CONFIG`` environment variable, as Kubernetes TFJob operators set it.

    ``TF_CONFIG={"cluster": {"ps": [...], "worker": [...], "chief": [...]},
    "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}``. The variable is read on every
    call (as TF1 does); arguments given here take precedence over it.
    """

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @property
    def task_type(self):
        if self._task_type is not None:
            return str(self._task_type)
        task = _tf_config_task()
        return str(task["type"]) if "type" in task else None

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        if self._task_id is not None:
            return int(self._task_id)
        task = _tf_config_task()
        if "index" not in task:
            return None
        return _task_index(task["index"])

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def rpc_layer(self):
        if self._rpc_layer is not None:
            return self._rpc_layer
        return _load_tf_config().get("rpc_layer")

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer

    @property
    def environment(self):
        if self._environment is not None:
            return self._environment
        return _load_tf_config().get("environment", "")

    def cluster_spec(self):
        """The ``ClusterSpec`` of TF_CONFIG's ``cluster`` (empty when there is none)."""
        cluster = _load_tf_config().get("cluster", {})
        try:
            return ClusterSpec(cluster)
        except (TypeError, ValueError) as e:
            raise ValueError("TF_CONFIG's \"cluster\" is malformed: %s" % e) from None


# -- Slurm ----------------------------------------------------------------------------------------

_HOST_PART = re.compile(r"([^,\[\]]*)(?:\[([^\[\]]*)\])?")
_TASKS_PART = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def _expand_range(prefix, ranges, hostlist):
    hosts = []
    for item in ranges.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item.strip())
        if m is None:
            raise ValueError("Invalid Slurm hostlist %r: %r in [%s] is not a number or a range "
                             "like 01-03" % (hostlist, item, ranges))
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo):
            raise ValueError("Invalid Slurm hostlist %r: range %s-%s is descending"
                             % (hostlist, lo, hi))
        width = len(lo)  # zero padding of the lower bound, as Slurm writes it (node[01-10])
        hosts.extend("%s%0*d" % (prefix, width, i) for i in range(int(lo), int(hi) + 1))
    return hosts


def expand_hostlist(hostlist):
    """Slurm's compressed hostlist as a list of hosts, in order, e.g. ``"n[1-2],m5,o[3-4,6]"`` ->
    ``['n1', 'n2', 'm5', 'o3', 'o4', 'o6']`` (zero padding kept: ``node[08-10]`` -> node08..node10).
    """
    if not isinstance(hostlist, str) or not hostlist.strip():
        raise ValueError("Invalid Slurm hostlist %r: expected e.g. 'node[01-03,07],gpu5'" % (hostlist,))
    text = hostlist.strip()
    hosts, pos = [], 0
    while pos < len(text):
        # One host: a name made of literal text and bracketed range sets (e.g. rack[1-2]n[1-4]).
        names = [""]
        while pos < len(text) and text[pos] != ",":
            m = _HOST_PART.match(text, pos)
            literal, ranges = m.group(1), m.group(2)
            if m.end() == pos:
                raise ValueError("Invalid Slurm hostlist %r: unbalanced '[' or ']' at position %d"
                                 % (hostlist, pos))
            names = [n + literal for n in names]
            if ranges is not None:
                names = [h for n in names for h in _expand_range(n, ranges, hostlist)]
            pos = m.end()
        if names == [""]:
            raise ValueError("Invalid Slurm hostlist %r: empty host name at position %d"
                             % (hostlist, pos))
        hosts.extend(names)
        pos += 1  # the comma
        if pos == len(text) and text.endswith(","):
            raise ValueError("Invalid Slurm hostlist %r: trailing ','" % (hostlist,))
    return hosts


def expand_tasks_per_node(tasks_per_node):
    """Slurm's tasks-per-node list, e.g. ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    result = []
    for part in str(tasks_per_node).split(","):
        m = _TASKS_PART.match(part.strip())
        if m is None:
            raise ValueError("Invalid Slurm tasks-per-node list %r: %r is not 'N' or 'N(xR)' "
                             "(e.g. '2(x3),1')" % (tasks_per_node, part))
        result.extend([int(m.group(1))] * int(m.group(2) or 1))
    return result


def _slurm_var(names):
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    raise RuntimeError("%s not found in the environment: not running inside a Slurm job step? "
                       "(start the tasks with srun)" % " / ".join(names))


def _slurm_int(names):
    value = _slurm_var(names)
    try:
        return int(value)
    except ValueError:
        raise ValueError("%s=%r is not an integer" % (names[0], value)) from None


class SlurmClusterResolver(ClusterResolver):
    """The cluster of a Slurm job step, from ``SLURM_*`` environment variables.

    Tasks are numbered as Slurm's default (block) distribution numbers them: the nodes in
    ``SLURM_STEP_NODELIST`` (or ``SLURM_JOB_NODELIST``) order, ``tasks_per_node`` tasks each
    (``SLURM_STEP_TASKS_PER_NODE`` / ``SLURM_TASKS_PER_NODE``, e.g. ``"2(x3),1"``). The k-th task on
    a node listens on ``port_base + k``. ``jobs`` (default ``{"worker": SLURM_NTASKS}``) hands out
    the tasks in that order, jobs sorted by name as TF1 does (``chief``, ``ps``, ``worker``):
    ``jobs={"ps": 2, "worker": 4}`` makes ranks 0-1 the ps tasks and ranks 2-5 the workers. This
    process's task is the one of ``SLURM_PROCID``.

    With ``gpus_per_task`` > 0 (or ``gpus_per_node`` given) and ``auto_set_gpu``, ``cluster_spec()``
    sets ``CUDA_VISIBLE_DEVICES`` to this task's GPUs.
    """

    def __init__(self, jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None,
                 tasks_per_node=None, auto_set_gpu=True, rpc_layer="grpc"):
        self._rank = _slurm_int(["SLURM_PROCID"])
        hosts = expand_hostlist(_slurm_var(["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                                            "SLURM_NODELIST"]))
        if tasks_per_node is None:
            counts = expand_tasks_per_node(_slurm_var(["SLURM_STEP_TASKS_PER_NODE",
                                                       "SLURM_TASKS_PER_NODE"]))
        elif isinstance(tasks_per_node, dict):
            unknown = sorted(set(tasks_per_node) - set(hosts))
            if unknown:
                raise ValueError("tasks_per_node names hosts %s that are not in the Slurm "
                                 "nodelist %s" % (unknown, hosts))
            counts = [int(tasks_per_node.get(h, 0)) for h in hosts]
        else:
            counts = [int(tasks_per_node)] * len(hosts)
        if len(counts) != len(hosts):
            raise ValueError("The Slurm nodelist has %d nodes (%s) but tasks-per-node gives %d "
                             "counts (%s)" % (len(hosts), ",".join(hosts), len(counts), counts))
        self._nodes = list(zip(hosts, counts))
        num_tasks = sum(counts)
        if jobs is None:
            ntasks = os.environ.get("SLURM_STEP_NUM_TASKS") or os.environ.get("SLURM_NTASKS")
            jobs = {"worker": int(ntasks) if ntasks else num_tasks}
        for job, n in jobs.items():
            if not isinstance(n, int) or n < 0:
                raise ValueError("jobs[%r] must be a number of tasks >= 0, got %r" % (job, n))
        self._jobs = dict(sorted(jobs.items()))
        if sum(self._jobs.values()) != num_tasks:
            raise ValueError("jobs %s ask for %d tasks but the Slurm step has %d (%s)"
                             % (dict(jobs), sum(self._jobs.values()), num_tasks,
                                ", ".join("%s: %d" % node for node in self._nodes)))
        if not 0 <= self._rank < num_tasks:
            raise ValueError("SLURM_PROCID=%d is outside the step's %d tasks"
                             % (self._rank, num_tasks))
        self._port_base = int(port_base)
        self._gpus_per_task = int(gpus_per_task if gpus_per_task is not None
                                  else (gpus_per_node or 0) // max(counts or [1]))
        self._gpus_per_node = int(gpus_per_node if gpus_per_node is not None
                                  else self._gpus_per_task * max(counts or [1]))
        if self._gpus_per_task * max(counts or [0]) > self._gpus_per_node:
            raise ValueError("%d tasks per node with %d GPUs each need more than the %d GPUs per "
                             "node" % (max(counts), self._gpus_per_task, self._gpus_per_node))
        self._auto_set_gpu = auto_set_gpu
        self.rpc_layer = rpc_layer
        self._addresses, self._local_ids = [], []
        for host, count in self._nodes:
            for k in range(count):
                self._addresses.append("%s:%d" % (host, self._port_base + k))
                self._local_ids.append(k)
        self._check_local_id()
        self.task_type, self.task_id = self._task_of_rank(self._rank)

    def _check_local_id(self):
        local_id = os.environ.get("SLURM_LOCALID")
        if local_id is None or not local_id.strip().isdigit():
            return
        if int(local_id) != self._local_ids[self._rank]:
            raise ValueError(
                "SLURM_PROCID=%d with SLURM_LOCALID=%s does not match Slurm's block distribution "
                "(expected local id %d): start the step with --distribution=block"
                % (self._rank, local_id, self._local_ids[self._rank]))

    def _task_of_rank(self, rank):
        start = 0
        for job, n in self._jobs.items():
            if start <= rank < start + n:
                return job, rank - start
            start += n
        raise ValueError("rank %d is not in any job of %s" % (rank, self._jobs))

    def cluster_spec(self):
        """Job -> addresses of its tasks; sets ``CUDA_VISIBLE_DEVICES`` when GPUs are assigned."""
        spec, start = {}, 0
        for job, n in self._jobs.items():
            spec[job] = self._addresses[start:start + n]
            start += n
        if self._auto_set_gpu and self._gpus_per_task > 0:
            first = self._local_ids[self._rank] * self._gpus_per_task
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(
                str(g) for g in range(first, first + self._gpus_per_task))
        return ClusterSpec(spec)

    def get_task_info(self):
        """``(task_type, task_id)`` of this process."""
        return self.task_type, self.task_id

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {"GPU": self._gpus_per_task} if self._gpus_per_task else {}
