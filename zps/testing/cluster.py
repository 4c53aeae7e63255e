"""Real multi-process clusters on 127.0.0.1 for tests and tools, torn down even on failure.

>>> with LocalCluster({"ps": 1}) as cluster:        # doctest: +SKIP
...     target = cluster.target("ps", 0)             # 'zps://127.0.0.1:<port>'
...     cluster.kill("ps", 0); cluster.restart("ps", 0)

Each task is a ``python -m zps.testing.cluster`` child process serving one ``tf.train.Server``;
ports are chosen by the OS (reserved, released and bound again by the child); every wait has a
timeout.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from zps.transport.ports import free_ports, wait_for_port  # noqa: F401 - re-exported

START_TIMEOUT_S = 30.0


class LocalCluster:
    """``LocalCluster({"ps": 2, "worker": 2})``: one server process per task.

    ``in_process`` lists tasks the caller will serve itself (e.g. ``[("worker", 0)]``): they get a
    port in the spec but no process.
    """

    def __init__(self, jobs, host="127.0.0.1", in_process=(), env=None, start=True):
        ports = iter(free_ports(sum(jobs.values()), host))
        self.spec = {job: ["%s:%d" % (host, next(ports)) for _ in range(n)]
                     for job, n in jobs.items()}
        self.host = host
        self._in_process = set(in_process)
        self._env = dict(os.environ, **(env or {}))
        self._procs = {}
        if start:
            try:
                self.start()
            except BaseException:
                self.stop()
                raise

    def address(self, job, index):
        return self.spec[job][index]

    def target(self, job, index):
        return "zps://" + self.address(job, index)

    def start(self):
        """Start every task (except the in-process ones)."""
        self.start_tasks([(job, i) for job, addrs in self.spec.items() for i in range(len(addrs))
                          if (job, i) not in self._in_process])

    def start_tasks(self, tasks):
        """Start the given ``(job, index)`` tasks and wait until each serves."""
        for job, i in tasks:
            self._spawn(job, i)
        for job, i in tasks:
            self._wait(job, i)

    def _spawn(self, job, index):
        cmd = [sys.executable, "-m", "zps.testing.cluster", "--cluster", json.dumps(self.spec),
               "--job", job, "--index", str(index)]
        self._procs[(job, index)] = subprocess.Popen(
            cmd, env=self._env, stdin=subprocess.DEVNULL, start_new_session=True)

    def _wait(self, job, index):
        port = int(self.address(job, index).rsplit(":", 1)[1])
        wait_for_port(self.host, port, START_TIMEOUT_S, self._procs[(job, index)])

    def kill(self, job, index):
        """SIGKILL the task's process (as a crash would) and reap it."""
        proc = self._procs.pop((job, index))
        proc.kill()
        proc.wait(timeout=10)

    def restart(self, job, index):
        """Start the task again at the same address (a new incarnation)."""
        if (job, index) in self._procs:
            self.kill(job, index)
        self._spawn(job, index)
        self._wait(job, index)

    def pid(self, job, index):
        return self._procs[(job, index)].pid

    def stop(self):
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self._procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._procs.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _serve(argv=None):
    parser = argparse.ArgumentParser(description="serve one task of a test cluster")
    parser.add_argument("--cluster", required=True, help="cluster spec as JSON")
    parser.add_argument("--job", required=True)
    parser.add_argument("--index", type=int, required=True)
    args = parser.parse_args(argv)
    import zps as tf
    server = tf.train.Server(json.loads(args.cluster), job_name=args.job, task_index=args.index)
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    server.join()


if __name__ == "__main__":
    _serve()


class InProcessCluster:
    """Every task of a cluster as a ``tf.train.Server`` in this process (fast distributed tests).

    ``cluster[("ps", 0)]`` is a task's Server; ``cluster.spec`` the cluster spec. All servers are
    stopped on exit.
    """

    def __init__(self, jobs, host="127.0.0.1"):
        import zps as tf
        ports = iter(free_ports(sum(jobs.values()), host))
        self.spec = {job: ["%s:%d" % (host, next(ports)) for _ in range(n)]
                     for job, n in jobs.items()}
        self.servers = {}
        try:
            for job, addresses in self.spec.items():
                for i in range(len(addresses)):
                    self.servers[(job, i)] = tf.train.Server(self.spec, job_name=job, task_index=i)
        except BaseException:
            self.stop()
            raise

    def __getitem__(self, task):
        return self.servers[task]

    def target(self, job, index):
        return self.servers[(job, index)].target

    def stop(self):
        for server in self.servers.values():
            server.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

