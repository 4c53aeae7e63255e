"""``ClusterSpec``: the jobs of a cluster and the addresses of their tasks.

>>> import zps as tf
>>> cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"], "worker": {1: "localhost:2224"}})
>>> cluster.jobs, cluster.num_tasks("worker"), cluster.task_address("worker", 1)
(['ps', 'worker'], 1, 'localhost:2224')
>>> cluster.as_dict()["worker"]
{1: 'localhost:2224'}
"""

import re

_JOB_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d+)$")


def check_address(address, where="address"):
    """``address`` if it looks like ``host:port`` (port 0..65535), else ValueError saying why."""
    if not isinstance(address, str):
        raise TypeError("%s must be a 'host:port' string, got %r" % (where, address))
    m = _ADDRESS.match(address)
    if not m:
        raise ValueError("%s %r is not of the form 'host:port' (e.g. 'localhost:2222', "
                         "'10.0.0.5:2222', '[::1]:2222')" % (where, address))
    if int(m.group(2)) > 65535:
        raise ValueError("%s %r is not a valid 'host:port': port %s is out of range (0-65535)"
                         % (where, address, m.group(2)))
    return address


class ClusterSpec:
    """A cluster: job name -> tasks (a list of addresses, or a dict task index -> address)."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._jobs = {job: dict(tasks) for job, tasks in cluster._jobs.items()}
            return
        if hasattr(cluster, "as_cluster_def"):
            cluster = cluster.as_cluster_def()
        if not isinstance(cluster, dict):
            raise TypeError("ClusterSpec needs a dict of job name -> list or dict of 'host:port' "
                            "addresses (or another ClusterSpec), got %s" % type(cluster).__name__)
        self._jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not _JOB_NAME.match(job):
                raise ValueError("Invalid job name %r: job names start with a letter and contain "
                                 "letters, digits and '_'" % (job,))
            if isinstance(tasks, list | tuple):
                tasks = dict(enumerate(tasks))
            elif isinstance(tasks, str):
                tasks = {0: tasks}
            elif not isinstance(tasks, dict):
                raise TypeError("Tasks of job %r must be a list or a dict of index -> address, "
                                "got %s" % (job, type(tasks).__name__))
            parsed = {}
            for index, address in tasks.items():
                try:
                    i = int(index)  # JSON gives string keys: {"1": "host:port"}
                except (TypeError, ValueError):
                    raise ValueError("Task index %r of job %r is not an integer"
                                     % (index, job)) from None
                if i < 0:
                    raise ValueError("Task index %d of job %r must be >= 0" % (i, job))
                if i in parsed:
                    raise ValueError("Task %d of job %r is given twice" % (i, job))
                parsed[i] = check_address(address, "address of /job:%s/task:%d" % (job, i))
            self._jobs[job] = dict(sorted(parsed.items()))

    @property
    def jobs(self):
        """The job names, sorted."""
        return sorted(self._jobs)

    def _job(self, job_name):
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r (jobs: %s)"
                             % (job_name, ", ".join(self.jobs) or "none")) from None

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return list(self._job(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._job(job_name)
        try:
            return tasks[int(task_index)]
        except KeyError:
            raise ValueError("No task with index %r in job %r (tasks: %s)"
                             % (task_index, job_name, list(tasks))) from None

    def job_tasks(self, job_name):
        """Addresses of the job's tasks by index; None for indices missing from a sparse job."""
        tasks = self._job(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def as_dict(self):
        """Job -> list of addresses (dense jobs) or dict index -> address (sparse jobs)."""
        out = {}
        for job, tasks in self._jobs.items():
            dense = list(tasks) == list(range(len(tasks)))
            out[job] = list(tasks.values()) if dense else dict(tasks)
        return out

    def as_cluster_def(self):
        return self.as_dict()

    def tasks(self):
        """All ``(job, index, address)`` triples, sorted."""
        return [(job, i, a) for job in self.jobs for i, a in self._jobs[job].items()]

    def find_task(self, address):
        """``(job, index)`` of the task at ``address``, or None."""
        for job, i, a in self.tasks():
            if a == address:
                return job, i
        return None

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other):
        return not self == other

    def __bool__(self):
        return bool(self._jobs)

    __nonzero__ = __bool__

    def __repr__(self):
        return "ClusterSpec(%r)" % (self.as_dict(),)
