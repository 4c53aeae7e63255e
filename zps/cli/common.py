"""What the launchers share: the seed's cluster flags, TF_CONFIG, and per-task environments."""

import json
import logging
import os

from zps.distributed.cluster_spec import ClusterSpec, check_address
from zps.distributed.resolvers import TFConfigClusterResolver
from zps.runtime.threads import BLAS_THREAD_VARS, blas_threads_per_task  # noqa: F401 - re-exported
from zps.transport import security

# TF's task type that is not part of the training cluster: it evaluates checkpoints on its own.
EVALUATOR = "evaluator"


def add_cluster_flags(parser, default_job):
    """The seed trainer's flags: ``--ps_hosts --worker_hosts --job_name --task_index``."""
    parser.add_argument("--ps_hosts", default=None,
                        help="comma-separated host:port of the ps tasks (default: from TF_CONFIG)")
    parser.add_argument("--worker_hosts", default=None,
                        help="comma-separated host:port of the worker tasks (default: from TF_CONFIG)")
    parser.add_argument("--job_name", default=None,
                        help="job of this task (default: TF_CONFIG's task type, else %r)" % default_job)
    parser.add_argument("--task_index", type=int, default=None,
                        help="index of this task in its job (default: TF_CONFIG's, else 0)")


def _hosts(flag, value):
    hosts = [h.strip() for h in value.split(",") if h.strip()]
    for i, h in enumerate(hosts):
        check_address(h, "--%s (host %d)" % (flag, i + 1))  # ValueError naming the bad address
    if not hosts and value.strip():
        raise ValueError("--%s %r names no host:port" % (flag, value))
    return hosts


def resolve_task(args, default_job, evaluator_ok=False):
    """``(cluster dict, job, index)`` from the flags, falling back on ``TF_CONFIG``.

    Host flags replace TF_CONFIG's cluster; ``--job_name``/``--task_index`` replace its task.
    With ``evaluator_ok``, an ``evaluator`` task need not be in the cluster (by TF's convention
    it is not). ValueError says what is missing or malformed.
    """
    cluster, env_type, env_id = {}, None, None
    if os.environ.get("TF_CONFIG", "").strip():
        resolver = TFConfigClusterResolver()
        try:
            cluster = resolver.cluster_spec().as_dict()
            env_type, env_id = resolver.task_type, resolver.task_id
        except ValueError as e:
            raise ValueError("%s (or give the cluster with --ps_hosts/--worker_hosts)" % e) from None
    if args.ps_hosts is not None or args.worker_hosts is not None:
        cluster = {}
        if args.ps_hosts:
            cluster["ps"] = _hosts("ps_hosts", args.ps_hosts)
        if args.worker_hosts:
            cluster["worker"] = _hosts("worker_hosts", args.worker_hosts)
    job = args.job_name or env_type or default_job
    index = args.task_index if args.task_index is not None else (env_id if env_id is not None else 0)
    if not cluster:
        raise ValueError("No cluster given: pass --ps_hosts and --worker_hosts (comma-separated "
                         "host:port lists) or set TF_CONFIG")
    if job == EVALUATOR and evaluator_ok and job not in cluster:
        if index < 0:
            raise ValueError("This task is /job:%s/task:%d: a task index must be >= 0"
                             % (job, index))
        return cluster, job, index
    if job not in cluster:
        raise ValueError("This task is /job:%s/task:%d but the cluster has no job %r (jobs: %s)"
                         % (job, index, job, ", ".join(sorted(cluster))))
    tasks = ClusterSpec(cluster).job_tasks(job)
    if not 0 <= index < len(tasks) or tasks[index] is None:
        raise ValueError("This task is /job:%s/task:%d but job %r has no task %d (tasks: %s)"
                         % (job, index, job, index, ClusterSpec(cluster).task_indices(job)))
    return cluster, job, index


def tf_config(cluster, job, index):
    """The ``TF_CONFIG`` JSON of task ``/job:<job>/task:<index>`` of ``cluster``."""
    return json.dumps({"cluster": cluster, "task": {"type": job, "index": index},
                       "environment": "cloud"})


def seed_flags(cluster, job, index):
    """The seed trainer's flags for a task: ``--ps_hosts --worker_hosts --job_name --task_index``.

    TF1 had no flag for a ``chief`` job: a chief (or an evaluator) is described to scripts by
    TF_CONFIG only, so ``--job_name=chief`` suits scripts that read TF_CONFIG."""
    def hosts(job):
        tasks = cluster.get(job, [])
        return ",".join(tasks.values() if isinstance(tasks, dict) else tasks)
    return ["--ps_hosts=" + hosts("ps"), "--worker_hosts=" + hosts("worker"),
            "--job_name=" + job, "--task_index=%d" % index]


def task_env(cluster, job, index, base=None, blas_threads=None):
    """A task's environment: ``base`` + TF_CONFIG, unbuffered Python output and, when
    ``blas_threads`` is given, BLAS/OpenMP thread limits (the user's own settings win)."""
    env = dict(os.environ if base is None else base)
    env["TF_CONFIG"] = tf_config(cluster, job, index)
    env["PYTHONUNBUFFERED"] = "1"
    if blas_threads is not None:
        for name in BLAS_THREAD_VARS:
            env.setdefault(name, str(blas_threads))
    return env


def add_security_flags(parser):
    """The CURVE/pickle flags. They only set the environment variables of
    zps.transport.security (flags win over the environment), so a task's keys are given one way
    whether it was started by hand, by zps-launch or from TF_CONFIG."""
    group = parser.add_argument_group("security", "CURVE authentication and encryption (keys "
                                      "from `zps keygen`); default: the ZPS_CURVE_* variables")
    group.add_argument("--curve_secret_key_file", default=None, metavar="FILE",
                       help="this task's keypair, a *.key_secret file (%s); turns CURVE on"
                       % security.SECRET_KEY_ENV)
    group.add_argument("--curve_server_key_file", default=None, metavar="FILE",
                       help="the cluster's public key, a *.key file (%s; default: the public half "
                       "of the secret key file)" % security.SERVER_KEY_ENV)
    group.add_argument("--curve_allowed_keys_dir", default=None, metavar="DIR",
                       help="public *.key files of other clients to accept (%s)"
                       % security.ALLOWED_KEYS_ENV)
    group.add_argument("--allow_pickle", action="store_true",
                       help="accept and send pickled Python callables (tf.py_func) without CURVE "
                       "(%s=1); only on a network you trust" % security.ALLOW_PICKLE_ENV)


def apply_security_flags(args, environ=None):
    """Put the security flags into ``environ`` (default os.environ) and check the keys they name;
    returns the CurveConfig in force (None: plain). Raises KeyConfigError (a ValueError) saying
    which key is missing or malformed, before anything is started."""
    env = os.environ if environ is None else environ
    for flag, var in (("curve_secret_key_file", security.SECRET_KEY_ENV),
                      ("curve_server_key_file", security.SERVER_KEY_ENV),
                      ("curve_allowed_keys_dir", security.ALLOWED_KEYS_ENV)):
        value = getattr(args, flag, None)
        if value:
            env[var] = os.path.abspath(value)
    if getattr(args, "allow_pickle", False):
        env[security.ALLOW_PICKLE_ENV] = "1"
    return security.curve_from_env(env)


def setup_logging(prog):
    logging.basicConfig(level=logging.INFO, format="%s: %%(message)s" % prog)
    return logging.getLogger("zps.cli")
