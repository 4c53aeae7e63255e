"""BLAS thread limits for tasks that share a machine.

numpy's BLAS (OpenBLAS, MKL) starts one thread per core in every process. When several tasks of a
cluster run on one machine (a local cluster, or a ps beside a worker), their matmuls then fight
over the cores and a step can become ten times slower (measured: 539 vs 7,871 examples/s for two
ps + two workers on 2 cores). ``zps-launch`` sets ``OPENBLAS_NUM_THREADS`` & co for the tasks it
starts; :func:`limit_for_server` does the same for a ``tf.train.Server`` created any other way,
through threadpoolctl (BLAS has been loaded by numpy by then, so environment variables no longer
act). The user's choice always wins: ``ConfigProto(intra_op_parallelism_threads=N)`` sets N, and
any of the environment variables below being set leaves BLAS alone.
"""

import logging
import os

log = logging.getLogger("zps.threads")

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def available_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def blas_threads_per_task(num_local_tasks, cores=None):
    """BLAS threads for each of ``num_local_tasks`` tasks sharing this machine's cores, so that
    matmul-heavy tasks do not oversubscribe them (at least 1)."""
    cores = available_cores() if cores is None else cores
    return max(1, cores // max(1, num_local_tasks))


def tasks_on_host(cluster, host):
    """How many tasks of ``cluster`` (a ClusterSpec) have ``host`` as their address's host."""
    return sum(1 for job in cluster.jobs for addr in cluster.job_tasks(job)
               if addr and addr.rpartition(":")[0] == host)


def shares_cpu(cluster, address):
    """Whether the task at ``address`` has at most one core's worth of this machine: as many
    tasks of ``cluster`` on its host as there are cores, or more."""
    return tasks_on_host(cluster, address.rpartition(":")[0]) >= available_cores()


def limit_for_server(cluster, address, config=None):
    """Limit this process's BLAS threads for the server of ``address`` in ``cluster``; returns the
    limit set, or None when BLAS was left alone (the user chose, or the task is alone on its host)."""
    wanted = int(getattr(config, "intra_op_parallelism_threads", 0) or 0)
    if not wanted:
        if any(os.environ.get(name) for name in BLAS_THREAD_VARS):
            return None
        local = tasks_on_host(cluster, address.rpartition(":")[0])
        if local <= 1:
            return None
        wanted = blas_threads_per_task(local)
    try:
        import threadpoolctl
    except ImportError:   # a dependency, but never fail a server over a tuning step
        return None
    threadpoolctl.threadpool_limits(limits=wanted, user_api="blas")
    log.debug("BLAS limited to %d thread(s) per process", wanted)
    return wanted
