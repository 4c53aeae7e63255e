"""``RunConfig``: where and how an Estimator runs, read from ``TF_CONFIG`` as TF1 reads it.

>>> import json, os
>>> os.environ["TF_CONFIG"] = json.dumps({
...     "cluster": {"chief": ["c:1"], "ps": ["p:1"], "worker": ["w:1", "w:2"]},
...     "task": {"type": "worker", "index": 1}})
>>> config = RunConfig()
>>> config.task_type, config.task_id, config.is_chief, config.master
('worker', 1, False, 'grpc://w:2')
>>> config.num_ps_replicas, config.num_worker_replicas, config.global_id_in_cluster
(1, 3, 2)
>>> del os.environ["TF_CONFIG"]

With ``train_distribute`` (a ``tf.distribute`` strategy, or ``experimental_distribute``'s,
a ``tf.contrib.distribute.DistributeConfig``) and a cluster in ``TF_CONFIG``, TF1 hands the
cluster to the distribute coordinator (its INDEPENDENT_WORKER mode): the config keeps the
cluster but describes a local task until ``tf.estimator.train_and_evaluate`` runs this task's
part (see zps/estimator/training.py); without a cluster, or with a ``master`` job, the
strategy just distributes this process's training.
"""

import collections
import copy
import logging

from zps.client.config import ConfigProto
from zps.distributed.cluster_spec import ClusterSpec
from zps.distributed.resolvers import _load_tf_config
from zps.estimator.util import fn_args

__all__ = ["DistributeConfig", "RunConfig", "TaskType"]

_logger = logging.getLogger("zps.estimator")

_USE_DEFAULT = object()
_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"
_SESSION_MASTER_KEY = "session_master"
_EVAL_SESSION_MASTER_KEY = "eval_session_master"
_MODEL_DIR_KEY = "model_dir"
_DEFAULT_SAVE_CHECKPOINTS_SECS = 600
# The distribute coordinator's mode zps runs (TF1's CoordinatorMode.INDEPENDENT_WORKER).
INDEPENDENT_WORKER = "independent_worker"


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


# The properties replace() may change (TF1's _DEFAULT_REPLACEABLE_LIST); the cluster is TF_CONFIG's.
_REPLACEABLE = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
                "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
                "device_fn", "protocol", "eval_distribute", "experimental_distribute",
                "experimental_max_worker_delay_secs", "session_creation_timeout_secs")


class DistributeConfig(collections.namedtuple(
        "DistributeConfig", ["train_distribute", "eval_distribute", "remote_cluster"])):
    """TF1's ``tf.contrib.distribute.DistributeConfig``: the strategies of
    ``RunConfig(experimental_distribute=...)`` (``train_distribute``, ``eval_distribute``) and
    ``remote_cluster``, the cluster of TF1's standalone-client mode (not supported by zps:
    run every task with ``TF_CONFIG`` and ``tf.estimator.train_and_evaluate`` instead)."""

    def __new__(cls, train_distribute=None, eval_distribute=None, remote_cluster=None):
        return super().__new__(cls, train_distribute, eval_distribute, remote_cluster)


class RunConfig:
    """Checkpoint, summary and cluster settings of an Estimator.

    The cluster and this process's task come from ``TF_CONFIG`` (``cluster``, ``task``, and the
    optional ``session_master``, ``eval_session_master`` and ``model_dir``), exactly as in TF1:
    without a cluster the task is the local chief worker; an ``evaluator`` is not part of the
    training cluster; a cluster with a ``master`` job uses it as the chief.
    """

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT, save_checkpoints_secs=_USE_DEFAULT,
                 session_config=None, keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100, train_distribute=None, device_fn=None, protocol=None,
                 eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None, session_creation_timeout_secs=7200):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_SAVE_CHECKPOINTS_SECS
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("save_checkpoints_steps and save_checkpoints_secs cannot be both "
                             "set in RunConfig: set one of them (or neither, for every 600 s).")
        tf_config = _load_tf_config()
        self._model_dir = _model_dir(tf_config, model_dir)
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._train_distribute = train_distribute
        self._device_fn = device_fn
        self._protocol = protocol
        self._eval_distribute = eval_distribute
        self._experimental_distribute = experimental_distribute
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._validate()
        self._distribute_coordinator_mode = None
        if train_distribute or eval_distribute or experimental_distribute:
            self._init_distribute(tf_config)
        else:
            self._init_distributed_setting(tf_config)
        if self._session_config is None:
            self._session_config = self._default_session_config()

    def _validate(self):
        def check(name, ok, message):
            value = getattr(self, "_" + name)
            if value is not None and not ok(value):
                raise ValueError("%s, given: %r" % (message, value))
        check("model_dir", bool, "model_dir should be non-empty")
        check("save_summary_steps", lambda v: v >= 0, "save_summary_steps should be >= 0")
        check("save_checkpoints_steps", lambda v: v >= 0, "save_checkpoints_steps should be >= 0")
        check("save_checkpoints_secs", lambda v: v >= 0, "save_checkpoints_secs should be >= 0")
        check("session_config", lambda v: isinstance(v, ConfigProto),
              "session_config must be instance of ConfigProto")
        check("keep_checkpoint_max", lambda v: v >= 0, "keep_checkpoint_max should be >= 0")
        check("keep_checkpoint_every_n_hours", lambda v: v > 0,
              "keep_checkpoint_every_n_hours should be > 0")
        check("log_step_count_steps", lambda v: v > 0, "log_step_count_steps should be > 0")
        check("tf_random_seed", lambda v: isinstance(v, int), "tf_random_seed must be integer")
        check("experimental_max_worker_delay_secs", lambda v: isinstance(v, int),
              "experimental_max_worker_delay_secs must be an integer if set")
        check("session_creation_timeout_secs", lambda v: v > 0,
              "session_creation_timeout_secs should be > 0")
        check("device_fn", lambda v: callable(v) and fn_args(v) == ("op",),
              'device_fn must be callable with exactly one argument "op"')
        check("train_distribute", _is_strategy, "train_distribute must be a "
              "tf.distribute.Strategy such as tf.distribute.MirroredStrategy()")
        check("eval_distribute", _is_strategy, "eval_distribute must be a "
              "tf.distribute.Strategy such as tf.distribute.MirroredStrategy()")
        check("experimental_distribute", lambda v: isinstance(v, DistributeConfig),
              "experimental_distribute must be a tf.contrib.distribute.DistributeConfig")
        check("protocol", lambda v: v in ("grpc", "zps"),
              "protocol should be grpc or zps (both are zps's ZeroMQ transport; grpc+verbs is "
              "not supported)")

    def _init_distribute(self, tf_config):
        """TF1's ``distribute_coordinator_training.init_run_config``: take the strategies of
        ``experimental_distribute``, then either read the cluster as usual (no cluster, a
        ``master`` job, or no ``train_distribute``) or keep only the cluster for the distribute
        coordinator of ``train_and_evaluate`` (INDEPENDENT_WORKER mode)."""
        config = self._experimental_distribute
        if config is not None and config.train_distribute:
            if self._train_distribute:
                raise ValueError("Either `train_distribute` or "
                                 "`experimental_distribute.train_distribute` can be set.")
            self._train_distribute = config.train_distribute
        if config is not None and config.eval_distribute:
            if self._eval_distribute:
                raise ValueError("Either `eval_distribute` or "
                                 "`experimental_distribute.eval_distribute` can be set.")
            self._eval_distribute = config.eval_distribute
        if self._train_distribute and config is not None and config.remote_cluster:
            raise NotImplementedError(
                "zps does not run the distribute coordinator's standalone-client mode "
                "(experimental_distribute.remote_cluster=%r): start every task of the cluster "
                "with TF_CONFIG and call tf.estimator.train_and_evaluate in each."
                % (config.remote_cluster,))
        try:
            cluster_spec = ClusterSpec(tf_config.get("cluster", {}))
        except (TypeError, ValueError) as e:
            raise ValueError("TF_CONFIG's \"cluster\" is malformed: %s" % e) from None
        if (not cluster_spec or TaskType.MASTER in cluster_spec.jobs
                or not self._train_distribute):
            self._init_distributed_setting(tf_config)
            return
        # INDEPENDENT_WORKER: a local task for now; train_and_evaluate's coordinator sets the
        # task (from TF_CONFIG) before this task trains or evaluates.
        self._init_distributed_setting({})
        self._cluster_spec = cluster_spec
        self._distribute_coordinator_mode = INDEPENDENT_WORKER

    def _init_distributed_setting(self, tf_config):
        self._service = tf_config.get("service")
        if self._service is not None and not isinstance(self._service, dict):
            raise TypeError('If "service" is set in TF_CONFIG, it must be a dict. Given %s'
                            % type(self._service))
        task_env = tf_config.get("task", {})
        try:
            self._cluster_spec = ClusterSpec(tf_config.get("cluster", {}))
        except (TypeError, ValueError) as e:
            raise ValueError("TF_CONFIG's \"cluster\" is malformed: %s" % e) from None
        if not self._cluster_spec:
            self._init_local(tf_config, task_env)
            return
        jobs = self._cluster_spec.jobs
        chief_type = TaskType.MASTER if TaskType.MASTER in jobs else TaskType.CHIEF
        if chief_type == TaskType.MASTER and TaskType.CHIEF in jobs:
            raise ValueError("If `master` node exists in `cluster`, job `chief` is not supported.")
        self._task_type, self._task_id = _validate_task(self._cluster_spec, task_env, chief_type)
        if chief_type == TaskType.MASTER and self._task_type == TaskType.EVALUATOR:
            raise ValueError("If `master` node exists in `cluster`, task_type `evaluator` is not "
                             "supported.")
        self._is_chief = self._task_type == chief_type
        self._evaluation_master = (tf_config.get(_EVAL_SESSION_MASTER_KEY, _LOCAL_MASTER)
                                   if self._task_type == TaskType.EVALUATOR else _LOCAL_MASTER)
        if self._task_type == TaskType.EVALUATOR:
            # An evaluator is not part of the training cluster: it runs its graphs locally.
            self._cluster_spec = ClusterSpec({})
            self._master = _LOCAL_MASTER
            self._num_ps_replicas = 0
            self._num_worker_replicas = 0
            self._global_id_in_cluster = None
            return
        self._master = _session_master(self._cluster_spec, self._task_type, self._task_id,
                                       tf_config)
        self._num_ps_replicas = len(self._cluster_spec.as_dict().get(TaskType.PS, []))
        self._num_worker_replicas = (len(self._cluster_spec.as_dict().get(TaskType.WORKER, []))
                                     + len(self._cluster_spec.as_dict().get(chief_type, [])))
        self._global_id_in_cluster = _global_id(self._cluster_spec, self._task_type,
                                                self._task_id, chief_type)

    def _init_local(self, tf_config, task_env):
        self._task_type = task_env.get("type", TaskType.WORKER)
        self._task_id = int(task_env.get("index", 0))
        if self._task_type != TaskType.WORKER:
            raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
        if self._task_id != 0:
            raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
        self._master = tf_config.get(_SESSION_MASTER_KEY, _LOCAL_MASTER)
        self._evaluation_master = tf_config.get(_EVAL_SESSION_MASTER_KEY, _LOCAL_MASTER)
        self._is_chief = True
        self._num_ps_replicas = 0
        self._num_worker_replicas = 1
        self._global_id_in_cluster = 0

    def _default_session_config(self):
        """TF1's default for between-graph training: each task sees only the tasks it talks to."""
        if not self._cluster_spec or self._distribute_coordinator_mode:
            return None
        filters = {TaskType.MASTER: ["/job:ps", "/job:master"],
                   TaskType.CHIEF: ["/job:ps", "/job:chief"],
                   TaskType.WORKER: ["/job:ps", "/job:worker/task:%d" % self._task_id],
                   TaskType.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"]}
        if self._task_type not in filters:
            return None
        return ConfigProto(allow_soft_placement=True, device_filters=filters[self._task_type])

    def _for_coordinator_task(self, task_type, task_id):
        """A copy describing ``task_type``/``task_id`` of the coordinator's cluster (TF1's
        ``_init_run_config_from_worker_context``): the master is this task's own server, the
        chief is the ``chief`` task (or worker 0 when there is none); an evaluator runs
        locally, outside the cluster."""
        new = copy.deepcopy(self)
        new._service, new._distribute_coordinator_mode = None, None
        new._task_type, new._task_id = task_type, task_id
        jobs = self._cluster_spec.jobs
        if task_type == TaskType.EVALUATOR:
            new._cluster_spec = ClusterSpec({})
            new._master = new._evaluation_master = _LOCAL_MASTER
            new._is_chief = True
            new._num_ps_replicas, new._num_worker_replicas = 0, 0
            new._global_id_in_cluster = None
            return new
        new._master = new._evaluation_master = (
            _GRPC_SCHEME + self._cluster_spec.task_address(task_type, task_id))
        new._is_chief = task_type == TaskType.CHIEF or (
            TaskType.CHIEF not in jobs and task_type == TaskType.WORKER and task_id == 0)
        counts = self._cluster_spec.as_dict()
        new._num_ps_replicas = len(counts.get(TaskType.PS, []))
        new._num_worker_replicas = (len(counts.get(TaskType.WORKER, []))
                                    + len(counts.get(TaskType.CHIEF, [])))
        new._global_id_in_cluster = _global_id(self._cluster_spec, task_type, task_id,
                                               TaskType.CHIEF)
        return new

    def replace(self, **kwargs):
        """A copy with the given properties changed (the cluster stays TF_CONFIG's)."""
        new = copy.deepcopy(self)
        for name, value in kwargs.items():
            if name not in _REPLACEABLE:
                raise ValueError("Replacing %s is not supported. Allowed properties are %s."
                                 % (name, ", ".join(_REPLACEABLE)))
            setattr(new, "_" + name, value)
        if ("save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs
                and kwargs["save_checkpoints_steps"] is not None
                and kwargs["save_checkpoints_secs"] is not None):
            raise ValueError("save_checkpoints_steps and save_checkpoints_secs cannot be both set.")
        if kwargs.get("save_checkpoints_steps") is not None:
            new._save_checkpoints_secs = None
        if kwargs.get("save_checkpoints_secs") is not None:
            new._save_checkpoints_steps = None
        new._validate()
        return new

    def __repr__(self):
        return "RunConfig(%s)" % ", ".join(
            "%s=%r" % (name, getattr(self, name)) for name in
            ("model_dir", "task_type", "task_id", "is_chief", "master", "cluster_spec",
             "save_checkpoints_steps", "save_checkpoints_secs"))


def _make_property(name):
    return property(lambda self: getattr(self, "_" + name))


for _name in _REPLACEABLE + ("cluster_spec", "evaluation_master", "is_chief", "master",
                             "num_ps_replicas", "num_worker_replicas", "global_id_in_cluster",
                             "task_id", "task_type", "service"):
    setattr(RunConfig, _name, _make_property(_name))


def _is_strategy(value):
    from zps.distribute import Strategy
    return isinstance(value, Strategy)


def _model_dir(tf_config, model_dir):
    from_config = tf_config.get(_MODEL_DIR_KEY)
    if from_config and model_dir and from_config != model_dir:
        raise ValueError("`model_dir` provided in RunConfig construct, if set, must have the same "
                         "value as the model_dir in TF_CONFIG. model_dir: %s, TF_CONFIG"
                         "[\"model_dir\"]: %s." % (model_dir, from_config))
    return model_dir or from_config or None


def _validate_task(cluster_spec, task_env, chief_type):
    if chief_type not in cluster_spec.jobs:
        raise ValueError('If "cluster" is set in TF_CONFIG, it must have one "%s" node (the '
                         "task that initializes and checkpoints the model), given the jobs %s. "
                         "tf.estimator needs a cluster such as {\"chief\": [one address], "
                         "\"ps\": [...], \"worker\": [...]}: make one of the workers the chief."
                         % (chief_type, cluster_spec.jobs))
    if cluster_spec.num_tasks(chief_type) > 1:
        raise ValueError('The "cluster" in TF_CONFIG must have only one "%s" node.' % chief_type)
    task_type, task_id = task_env.get("type"), task_env.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == TaskType.EVALUATOR:
        return task_type, task_id
    if task_type not in cluster_spec.jobs:
        raise ValueError("%s is not a valid task_type in the cluster_spec: %s. Note that these "
                         "values may be coming from the TF_CONFIG environment variable."
                         % (task_type, cluster_spec.as_dict()))
    if not 0 <= task_id < cluster_spec.num_tasks(task_type):
        raise ValueError("%d is not a valid task_id for task_type %s in the cluster_spec: %s. "
                         "Note that these values may be coming from the TF_CONFIG environment "
                         "variable." % (task_id, task_type, cluster_spec.as_dict()))
    return task_type, task_id


def _session_master(cluster_spec, task_type, task_id, tf_config):
    if _SESSION_MASTER_KEY in tf_config:
        return tf_config[_SESSION_MASTER_KEY]
    jobs = cluster_spec.jobs
    # A one-task cluster runs in-process: faster than going through its own server.
    if len(jobs) == 1 and cluster_spec.num_tasks(jobs[0]) == 1:
        return _LOCAL_MASTER
    return _GRPC_SCHEME + cluster_spec.task_address(task_type, task_id)


def _global_id(cluster_spec, task_type, task_id, chief_type):
    """The chief is 0, then the other jobs sorted by name, the ps tasks last (so that the
    workers' ids are contiguous)."""
    jobs = cluster_spec.jobs
    ordered = [chief_type] if chief_type in jobs else []
    ordered += [j for j in sorted(jobs) if j not in (chief_type, TaskType.PS)]
    if TaskType.PS in jobs:
        ordered.append(TaskType.PS)
    next_id = 0
    for job in ordered:
        if job == task_type:
            return next_id + task_id
        next_id += cluster_spec.num_tasks(job)
    raise RuntimeError("Internal error: task_type %r is not in the cluster_spec %s"
                       % (task_type, cluster_spec.as_dict()))
