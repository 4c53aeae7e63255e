"""Faults with real processes: a ps killed (or frozen) mid-training, supervision by
``zps-launch --restart``, a sync replica killed with and without backup workers, and a ps killed
in the middle of a checkpoint save. Every wait has a timeout; every process is stopped."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import LocalCluster
from zps.transport.ports import free_ports, wait_for_port

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent.parent
ENV = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")

# A small between-graph trainer with the seed's flags: linear regression on fixed data, async or
# sync (SyncReplicasOptimizer with --replicas_to_aggregate of the workers), checkpoints by steps.
TRAINER = r'''
import argparse, logging, sys, time
import numpy as np
import zps as tf
p = argparse.ArgumentParser()
p.add_argument("--ps_hosts"); p.add_argument("--worker_hosts")
p.add_argument("--job_name"); p.add_argument("--task_index", type=int)
p.add_argument("--train_steps", type=int, default=400)
p.add_argument("--replicas_to_aggregate", type=int, default=0, help="0: async")
p.add_argument("--checkpoint_dir", default=None)
p.add_argument("--save_checkpoint_steps", type=int, default=50)
p.add_argument("--step_sleep", type=float, default=0.0)
p.add_argument("--watch_secs", type=float, default=2.0)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
import zps.train.sync_replicas_optimizer as sro
sro._WAIT_LOG_SECS = a.watch_secs   # how soon the sync chief reports a missing replica
cluster = tf.train.ClusterSpec({"ps": a.ps_hosts.split(","), "worker": a.worker_hosts.split(",")})
server = tf.train.Server(cluster, job_name=a.job_name, task_index=a.task_index)
if a.job_name == "ps":
    server.join()
    sys.exit(0)
rng = np.random.default_rng(0)
x_val = rng.standard_normal((64, 8)).astype(np.float32)
y_val = x_val @ np.arange(1, 9, dtype=np.float32).reshape(8, 1)
with tf.device(tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % a.task_index, cluster=cluster)):
    w = tf.Variable(np.zeros((8, 1), np.float32), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x_val, w) - y_val))
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.GradientDescentOptimizer(0.02)
    n = len(a.worker_hosts.split(","))
    if a.replicas_to_aggregate:
        opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=a.replicas_to_aggregate,
                                             total_num_replicas=n)
    train_op = opt.minimize(loss, global_step=global_step)
is_chief = a.task_index == 0
hooks = [tf.train.StopAtStepHook(last_step=a.train_steps)]
if a.replicas_to_aggregate:
    hooks.append(opt.make_session_run_hook(is_chief))
config = tf.ConfigProto(operation_timeout_in_ms=5000)
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                       checkpoint_dir=a.checkpoint_dir, hooks=hooks, config=config,
                                       save_checkpoint_steps=a.save_checkpoint_steps,
                                       log_step_count_steps=0) as sess:
    print("worker %d: session ready" % a.task_index, flush=True)
    while not sess.should_stop():
        _, step, l = sess.run([train_op, global_step, loss])
        print("worker %d: global step %d loss %.6f" % (a.task_index, step, l), flush=True)
        if a.step_sleep:
            time.sleep(a.step_sleep)
print("worker %d: done" % a.task_index, flush=True)
'''


class Trainer:
    """The TRAINER's tasks started by hand; output of each in ``<dir>/<job><i>.log``."""

    def __init__(self, tmp_path, num_ps, num_workers, args=()):
        ports = iter(free_ports(num_ps + num_workers))
        self.hosts = {"ps": ["127.0.0.1:%d" % next(ports) for _ in range(num_ps)],
                      "worker": ["127.0.0.1:%d" % next(ports) for _ in range(num_workers)]}
        self.dir = Path(tmp_path)
        self.script = self.dir / "fault_trainer.py"
        self.script.write_text(TRAINER)
        self.args = [str(x) for x in args]
        self.procs = {}

    def flags(self, job, index):
        return ["--ps_hosts=" + ",".join(self.hosts["ps"]),
                "--worker_hosts=" + ",".join(self.hosts["worker"]),
                "--job_name=" + job, "--task_index=%d" % index] + self.args

    def start(self, job, index, wait=True):
        with open(self.dir / ("%s%d.log" % (job, index)), "ab") as log:
            proc = subprocess.Popen([sys.executable, str(self.script)] + self.flags(job, index),
                                    env=ENV, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[(job, index)] = proc
        if wait:
            wait_for_port("127.0.0.1", int(self.hosts[job][index].rsplit(":", 1)[1]), 30, proc)
        return proc

    def kill(self, job, index):
        proc = self.procs.pop((job, index))
        proc.kill()
        proc.wait(timeout=10)

    def output(self, job, index):
        path = self.dir / ("%s%d.log" % (job, index))
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_for_output(self, job, index, pattern, timeout):
        """The first match of ``pattern`` in the task's output, waiting at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.output(job, index))
            if found:
                return found
            proc = self.procs.get((job, index))
            if proc is not None and proc.poll() is not None:
                raise AssertionError("%s %d exited (%s) before %r:\n%s" % (
                    job, index, proc.returncode, pattern, self.output(job, index)[-3000:]))
            if time.monotonic() > deadline:
                raise AssertionError("no %r from %s %d within %s s:\n%s" % (
                    pattern, job, index, timeout, self.output(job, index)[-3000:]))
            time.sleep(0.05)

    def wait(self, job, index, timeout):
        try:
            return self.procs[(job, index)].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s %d did not finish within %s s:\n%s" % (
                job, index, timeout, self.output(job, index)[-3000:])) from None

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _steps(output, worker):
    return [int(s) for s in re.findall(r"worker %d: global step (\d+) " % worker, output)]


# -- a dead or frozen ps: UnavailableError within the configured timeout -------------------------

@pytest.mark.timeout(90)
@pytest.mark.parametrize("fault", ["kill", "freeze"])
def test_worker_gets_unavailable_within_the_timeout_when_its_ps_dies(fault):
    timeout_s = 2.0
    with LocalCluster({"ps": 1, "worker": 1}, env=ENV) as cluster:
        pid = cluster.pid("ps", 0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    w = tf.Variable(np.zeros(4, np.float32), name="w")
                with tf.device("/job:worker/task:0"):
                    loss = tf.reduce_sum(tf.square(w - 3.0))
                    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
                config = tf.ConfigProto(operation_timeout_in_ms=int(timeout_s * 1000))
                with tf.Session(cluster.target("worker", 0), config=config) as sess:
                    sess.run(w.initializer)
                    for _ in range(10):
                        sess.run(train)
                    if fault == "kill":
                        cluster.kill("ps", 0)          # kill -9: the connection breaks
                    else:
                        os.kill(pid, signal.SIGSTOP)   # alive but silent: only the timeout helps
                    started = time.monotonic()
                    with pytest.raises(tf.errors.UnavailableError) as info:
                        for _ in range(100):
                            sess.run(train)
                    waited = time.monotonic() - started
        finally:
            if fault == "freeze":
                os.kill(pid, signal.SIGCONT)
    assert "ps" in str(info.value), str(info.value)
    assert waited < timeout_s + 3.0, waited
    print("%s ps: UnavailableError after %.2f s (timeout %.1f s): %s"
          % (fault, waited, timeout_s, str(info.value).splitlines()[0]))


# -- zps-launch --restart: the ps comes back, training resumes from the last checkpoint -----------

def _reader(stream, sink):
    for line in iter(stream.readline, ""):
        sink.append(line)
    stream.close()


@pytest.mark.timeout(180)
def test_launch_restart_brings_a_killed_ps_back_and_training_resumes(tmp_path):
    from zps.cli.status import cluster_status
    ckpt = tmp_path / "ckpt"
    trainer = Trainer(tmp_path, 1, 2)   # only for its script
    cmd = [sys.executable, "-m", "zps.cli.launch", "--ps", "1", "--workers", "2", "--restart",
           "--max_restarts", "2", "--restart_backoff_secs", "0.5", "--progress_secs", "0",
           str(trainer.script), "--train_steps", "600", "--checkpoint_dir", str(ckpt),
           "--save_checkpoint_steps", "50", "--step_sleep", "0.01"]
    out, err = [], []
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    readers = [threading.Thread(target=_reader, args=(s, sink), daemon=True)
               for s, sink in ((proc.stdout, out), (proc.stderr, err))]
    for r in readers:
        r.start()
    try:
        deadline = time.monotonic() + 90
        while tf.train.latest_checkpoint(str(ckpt)) is None or \
                int(tf.train.latest_checkpoint(str(ckpt)).rsplit("-", 1)[1]) < 100:
            assert proc.poll() is None and time.monotonic() < deadline, "".join(out + err)[-4000:]
            time.sleep(0.05)
        saved = int(tf.train.latest_checkpoint(str(ckpt)).rsplit("-", 1)[1])
        ps_address = re.search(r"ps:0=(\S+?)[,\s]", "".join(err)).group(1)
        before = cluster_status({"ps": [ps_address]}, timeout=5)[0]
        assert before["state"] == "up"
        os.kill(before["pid"], signal.SIGKILL)     # as a crash would
        code = proc.wait(timeout=150)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        for r in readers:
            r.join(timeout=5)
    stdout, stderr = "".join(out), "".join(err)
    assert code == 0, (stdout[-3000:], stderr[-3000:])
    assert re.search(r"ps:0 was killed by signal SIGKILL; restarting it in 0\.5 s \(restart 1 of 2\)",
                     stderr), stderr
    assert "restarted ps:0 at %s" % ps_address in stderr, stderr
    # The chief recovered by itself and restored the model from the checkpoint it had written.
    assert "Recovering the monitored session" in stdout, stdout[-4000:]
    restored = [int(s) for s in re.findall(r"\[worker:0\].*Restoring the model from \S+-(\d+)", stdout)]
    assert restored and restored[-1] >= saved, stdout[-4000:]
    # global_step went on from the checkpoint (never back to 0) to the last step.
    step_re = r"\[worker:0\] worker 0: global step (\d+) "
    steps = [int(s) for s in re.findall(step_re, stdout)]
    last_restore = stdout.rindex("Restoring the model from")
    after = [int(s) for s in re.findall(step_re, stdout[last_restore:])]
    assert after and min(after) > restored[-1], (restored, after[:5])
    assert max(steps) >= 600
    final = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(ckpt)))
    assert int(final.get_tensor("global_step")) >= 600
    np.testing.assert_allclose(final.get_tensor("w").ravel(), np.arange(1, 9), atol=0.05)
    print("launch --restart: ps killed after checkpoint %d, restored from %d, finished at %d"
          % (saved, restored[-1], max(steps)))


# -- a sync replica killed: backups keep training going; without, the chief says what it misses ----

@pytest.mark.timeout(150)
def test_sync_training_goes_on_when_a_backup_replica_is_killed(tmp_path):
    args = ["--train_steps", "150", "--replicas_to_aggregate", "2", "--step_sleep", "0.01"]
    with Trainer(tmp_path, 1, 3, args) as t:
        t.start("ps", 0)
        for i in range(3):
            t.start("worker", i, wait=False)
        t.wait_for_output("worker", 0, r"global step 20 ", 60)
        t.kill("worker", 2)
        killed_at = max(_steps(t.output("worker", 0), 0))
        assert t.wait("worker", 0, 90) == 0, t.output("worker", 0)[-3000:]
        assert t.wait("worker", 1, 30) == 0, t.output("worker", 1)[-3000:]
        chief = t.output("worker", 0)
    # A step's printed global step is read in the step, before its own increment: the last one
    # printed may be 149 when the run stopped at 150.
    assert max(_steps(chief, 0)) >= 149 > killed_at, chief[-2000:]
    assert "worker 0: done" in chief


@pytest.mark.timeout(150)
def test_sync_chief_reports_a_missing_replica_and_the_run_resumes_when_it_returns(tmp_path):
    args = ["--train_steps", "120", "--replicas_to_aggregate", "2", "--watch_secs", "2",
            "--step_sleep", "0.01"]
    with Trainer(tmp_path, 1, 2, args) as t:
        t.start("ps", 0)
        for i in range(2):
            t.start("worker", i, wait=False)
        t.wait_for_output("worker", 0, r"global step 20 ", 60)
        t.kill("worker", 1)
        killed = time.monotonic()
        report = t.wait_for_output(
            "worker", 0, r"global step (\d+) has not advanced for [0-9.]+ s: .*waiting for "
            r"replicas /job:worker/task:1 \(last pushed for global step \d+\)", 30)
        reported_after = time.monotonic() - killed
        stuck_at = int(report.group(1))
        assert t.procs[("worker", 0)].poll() is None     # waiting, not crashed
        t.start("worker", 1, wait=False)                 # the run resumes with the replica back
        assert t.wait("worker", 0, 90) == 0, t.output("worker", 0)[-3000:]
        assert t.wait("worker", 1, 30) == 0, t.output("worker", 1)[-3000:]
        chief = t.output("worker", 0)
    assert reported_after < 15, reported_after
    assert "received 1 of 2 gradients" in chief or "waiting for replicas" in chief
    assert max(_steps(chief, 0)) >= 119 > stuck_at   # see the backup-replica test
    print("sync chief reported the missing replica %.1f s after the kill (stuck at step %d)"
          % (reported_after, stuck_at))


# -- kill -9 of a ps during a checkpoint save: the previous checkpoint still restores -------------

@pytest.mark.timeout(120)
def test_ps_killed_during_a_checkpoint_save_leaves_the_previous_one_restorable(tmp_path):
    ckpt_dir = tmp_path / "ckpt"
    ckpt_dir.mkdir()
    kills = mid_write = 0
    with LocalCluster({"ps": 2}, env=ENV) as cluster:
        for round_ in range(3):
            if round_:
                cluster.restart("ps", 0)
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    big = tf.Variable(tf.zeros([4 << 20]), name="big")       # 16 MB: slow to save
                    step = tf.Variable(0, dtype=tf.int64, name="step")
                with tf.device("/job:ps/task:1"):
                    small = tf.Variable(tf.zeros([16]), name="small")
                set_all = tf.group(tf.assign(big, tf.fill([4 << 20], tf.cast(step, tf.float32))),
                                   tf.assign(small, tf.fill([16], tf.cast(step, tf.float32))))
                bump = tf.assign_add(step, 1)
                saver = tf.train.Saver(sharded=True, max_to_keep=3)
                sess = tf.Session(cluster.target("ps", 1))
                try:
                    sess.run(tf.global_variables_initializer())
                    latest = tf.train.latest_checkpoint(str(ckpt_dir))
                    if latest:
                        saver.restore(sess, latest)   # each round resumes from the last good one
                    failure = {}

                    def save_forever():
                        try:
                            while True:
                                n = int(sess.run(bump))
                                sess.run(set_all)
                                saver.save(sess, str(ckpt_dir / "model.ckpt"), global_step=n)
                        except Exception as e:  # noqa: BLE001 - the kill ends the loop
                            failure["error"] = e

                    saving = threading.Thread(target=save_forever, daemon=True)
                    saving.start()
                    deadline = time.monotonic() + 60
                    # Kill ps 0 while it writes its shard (a temp file until it is complete),
                    # once a previous checkpoint exists.
                    left_over = _shard0_temp_files(ckpt_dir)   # from earlier rounds' kills
                    while not (tf.train.latest_checkpoint(str(ckpt_dir))
                               and _shard0_temp_files(ckpt_dir) - left_over):
                        assert saving.is_alive() and time.monotonic() < deadline, failure
                        time.sleep(0.002)
                    os.kill(cluster.pid("ps", 0), signal.SIGKILL)
                    kills += 1
                    mid_write += bool(_shard0_temp_files(ckpt_dir) - left_over)
                    saving.join(timeout=30)
                    assert not saving.is_alive()
                    assert isinstance(failure.get("error"), tf.errors.OpError), failure
                finally:
                    sess.close()
            # The latest checkpoint is complete and consistent: every value is its step.
            latest = tf.train.latest_checkpoint(str(ckpt_dir))
            n = int(latest.rsplit("-", 1)[1])
            reader = tf.train.load_checkpoint(latest)
            assert int(reader.get_tensor("step")) == n
            assert (reader.get_tensor("big") == n).all() and (reader.get_tensor("small") == n).all()
            with tf.Graph().as_default():
                v = tf.Variable(tf.zeros([16]), name="small")
                with tf.Session() as local:
                    tf.train.Saver([v]).restore(local, latest)
                    assert (local.run(v) == n).all()
    # The kills did land in the middle of writing a shard (its temp file is left behind).
    assert kills == 3 and mid_write >= 2, (kills, mid_write)


def _shard0_temp_files(ckpt_dir):
    return {p.name for p in ckpt_dir.iterdir() if ".data-00000-" in p.name and ".tmp-" in p.name}


@pytest.mark.timeout(60)
def test_launch_restart_gives_up_after_max_restarts(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text("import sys\nsys.exit(3)\n")
    cmd = [sys.executable, "-m", "zps.cli.launch", "--ps", "1", "--workers", "1", "--restart",
           "--ps_script",
           "--max_restarts", "2", "--restart_backoff_secs", "0.1", "--progress_secs", "0",
           "--grace_period_secs", "1", str(script)]
    done = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=50,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert "worker:0 exited with code 3; restarting it in 0.1 s (restart 1 of 2)" in err, err
    assert "worker:0 exited with code 3; restarting it in 0.2 s (restart 2 of 2)" in err, err
    assert err.count("restarted worker:0 at") == 2, err
    assert "FAILED after" in err and "worker:0 exited with code 3" in err.rsplit("FAILED", 1)[1]


@pytest.mark.timeout(150)
def test_sync_training_recovers_from_a_ps_killed_and_restarted(tmp_path):
    ckpt = tmp_path / "ckpt"
    args = ["--train_steps", "150", "--replicas_to_aggregate", "2", "--step_sleep", "0.01",
            "--checkpoint_dir", ckpt, "--save_checkpoint_steps", "20"]
    with Trainer(tmp_path, 1, 2, args) as t:
        t.start("ps", 0)
        for i in range(2):
            t.start("worker", i, wait=False)
        t.wait_for_output("worker", 0, r"global step 45 ", 60)
        t.kill("ps", 0)
        time.sleep(0.5)
        t.start("ps", 0)
        assert t.wait("worker", 0, 100) == 0, t.output("worker", 0)[-3000:]
        assert t.wait("worker", 1, 30) == 0, t.output("worker", 1)[-3000:]
        chief, other = t.output("worker", 0), t.output("worker", 1)
    assert "Recovering the monitored session" in chief and "Recovering the monitored session" in other
    restored = [int(s) for s in re.findall(r"Restoring the model from \S+-(\d+)", chief)]
    assert restored and restored[-1] >= 20, chief[-3000:]
    after = _steps(chief[chief.rindex("Restoring the model from"):], 0)
    # In sync mode the global step fetched with train_op may still be the restored one.
    assert after and min(after) >= restored[-1] and max(after) >= 150
