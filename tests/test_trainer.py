"""The seed's trainer (examples/trainer.py) as four hand-started processes: 2 ps + 2 workers,
async and --sync, reaching the stated held-out accuracy; a non-chief started before the chief
waits for it and then trains."""

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zps.transport.ports import free_ports, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parent.parent
TRAINER = REPO / "examples" / "trainer.py"
MIN_ACCURACY = 0.9   # the stated held-out accuracy of the trainer's MLP on the digits


def load_trainer_module():
    """examples/trainer.py as a module (its model and data split), without running it."""
    spec = importlib.util.spec_from_file_location("zps_example_trainer", TRAINER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TrainerCluster:
    """Each task of the trainer started by hand, with the seed's flags, as its own process.

    Every task's stdout and stderr go to ``<log_dir>/<job><index>.log`` (appended on restart).
    ``stop()`` kills whatever is still running.
    """

    def __init__(self, log_dir, num_ps=2, num_workers=2, args=()):
        ports = free_ports(num_ps + num_workers, "127.0.0.1")
        self.hosts = {"ps": ["127.0.0.1:%d" % p for p in ports[:num_ps]],
                      "worker": ["127.0.0.1:%d" % p for p in ports[num_ps:]]}
        self.log_dir = Path(log_dir)
        self.args = list(args)
        self.procs = {}
        self.started_at = {}
        self.env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1",
                        OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")

    def flags(self, job, index):
        return ["--ps_hosts=" + ",".join(self.hosts["ps"]),
                "--worker_hosts=" + ",".join(self.hosts["worker"]),
                "--job_name=" + job, "--task_index=%d" % index] + self.args

    def log_path(self, job, index):
        return self.log_dir / ("%s%d.log" % (job, index))

    def start(self, job, index, wait=True):
        with open(self.log_path(job, index), "ab") as log:
            proc = subprocess.Popen([sys.executable, str(TRAINER)] + self.flags(job, index),
                                    cwd=str(REPO), env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[(job, index)] = proc
        self.started_at[(job, index)] = time.time()
        if wait:
            port = int(self.hosts[job][index].rsplit(":", 1)[1])
            wait_for_port("127.0.0.1", port, 30.0, proc)
        return proc

    def start_ps(self):
        for i in range(len(self.hosts["ps"])):
            self.start("ps", i, wait=False)
        for i in range(len(self.hosts["ps"])):
            port = int(self.hosts["ps"][i].rsplit(":", 1)[1])
            wait_for_port("127.0.0.1", port, 30.0, self.procs[("ps", i)])

    def kill(self, job, index):
        """SIGKILL the task, as a crash would."""
        proc = self.procs.pop((job, index))
        proc.kill()
        proc.wait(timeout=10)

    def wait_workers(self, timeout):
        deadline = time.monotonic() + timeout
        codes = {}
        for i in range(len(self.hosts["worker"])):
            proc = self.procs[("worker", i)]
            try:
                codes[i] = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise AssertionError("worker %d did not finish within %s s:\n%s"
                                     % (i, timeout, self.output("worker", i)[-4000:])) from None
        return codes

    def output(self, job, index):
        path = self.log_path(job, index)
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def held_out_accuracy(output, worker):
    found = re.findall(r"worker %d: done after (\d+) local steps; held-out accuracy ([0-9.]+)"
                       % worker, output)
    assert found, "worker %d did not report its accuracy:\n%s" % (worker, output[-4000:])
    return int(found[-1][0]), float(found[-1][1])


def session_ready_time(output, worker):
    found = re.findall(r"worker %d: session ready at ([0-9.]+)" % worker, output)
    assert found, "worker %d never had a session:\n%s" % (worker, output[-4000:])
    return float(found[0])


def assert_finished(cluster, codes):
    for i, code in codes.items():
        assert code == 0, "worker %d exited with %s:\n%s" % (i, code, cluster.output("worker", i)[-4000:])


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_four_hand_started_processes_reach_the_stated_accuracy(tmp_path, mode):
    args = ["--train_steps", "600", "--checkpoint_dir", str(tmp_path / "ckpt"),
            "--min_accuracy", str(MIN_ACCURACY)] + (["--sync"] if mode == "sync" else [])
    with TrainerCluster(tmp_path, args=args) as cluster:
        cluster.start_ps()
        for i in range(2):
            cluster.start("worker", i, wait=False)
        codes = cluster.wait_workers(timeout=120)
        assert_finished(cluster, codes)
        outputs = [cluster.output("worker", i) for i in range(2)]
        # The ps tasks serve until stopped (TF1's ps never exits).
        assert all(cluster.procs[("ps", i)].poll() is None for i in range(2))
    for i in range(2):
        local_steps, accuracy = held_out_accuracy(outputs[i], i)
        assert accuracy >= MIN_ACCURACY, outputs[i][-4000:]
        assert local_steps > 0
    if mode == "async":
        # Between-graph replication: the two workers share the 600 steps.
        total = sum(held_out_accuracy(outputs[i], i)[0] for i in range(2))
        assert 600 <= total <= 602, total
    import zps as tf
    reader = tf.train.load_checkpoint(str(tmp_path / "ckpt"))
    assert 600 <= int(reader.get_tensor("global_step")) <= 602


def test_non_chief_started_before_the_chief_waits_then_trains(tmp_path):
    args = ["--train_steps", "400", "--checkpoint_dir", str(tmp_path / "ckpt")]
    with TrainerCluster(tmp_path, args=args) as cluster:
        cluster.start_ps()
        cluster.start("worker", 1, wait=False)          # the non-chief, first
        time.sleep(4.0)
        assert cluster.procs[("worker", 1)].poll() is None, cluster.output("worker", 1)
        assert "session ready" not in cluster.output("worker", 1)   # still waiting
        cluster.start("worker", 0, wait=False)          # the chief, 4 s later
        codes = cluster.wait_workers(timeout=120)
        assert_finished(cluster, codes)
        chief, worker = cluster.output("worker", 0), cluster.output("worker", 1)
        worker_started = cluster.started_at[("worker", 1)]
    chief_ready = session_ready_time(chief, 0)
    worker_ready = session_ready_time(worker, 1)
    # The non-chief waited for the chief (and said what it waited for)...
    assert worker_ready - worker_started > 3.5
    assert "Waiting for the model to be ready" in worker, worker[-4000:]
    assert "Variables not initialized" in worker
    # ...and started within ~1 s of the chief's model being ready (TF1: up to 30 s).
    assert worker_ready - chief_ready < 1.0, (worker_ready, chief_ready)
    # Both trained: the non-chief made local steps of its own.
    assert held_out_accuracy(worker, 1)[0] > 0
    assert held_out_accuracy(chief, 0)[0] > 0
    # Only the chief initializes, restores and checkpoints.
    assert "Saving checkpoints" not in worker
