"""Soak: a training cluster (1-2 ps + 2 workers, real processes) run for a bounded time while its ps
tasks are killed (-9) and restarted periodically; reports steps, recoveries, RSS over time (growth
flagged) and any lost or doubled update, as a table (``--json`` for machines).

    python tools/soak.py                       # ~3 minutes, 2 ps, a kill every 20 s
    python tools/soak.py --seconds 60 --ps 1 --kill_every 15 --json

Update accounting: every training step of worker k also does ``assign_add(updates_k, 1)`` and
fetches the result. Within one session the values a worker sees must go up by exactly one per
step: a smaller value means an acknowledged update was lost, a larger one that an update was
applied twice. A new session (after a recovery) may start lower, because the chief restored the
last checkpoint: those updates are counted as rolled back (expected), not lost. At the end each
worker reads its counter once more; it must equal the last value it saw. The model's variables are
spread over every ps, so a restarted ps fails every worker's next step (each then recovers).

Exit status: 0 when no update was lost or doubled, every worker finished and no RSS growth was
flagged; 1 otherwise.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from zps.testing.cluster import LocalCluster  # noqa: E402 - after the path setup

RSS_SAMPLE_SECS = 2.0
QUIET_END_SECS = 12.0      # no kill in the last seconds, so the workers end on a settled cluster
GROWTH_FLAG_FRACTION = 0.25
GROWTH_FLAG_MIB = 32.0

WORKER = r'''
import argparse, json, logging, os, sys, time
import numpy as np
import zps as tf
p = argparse.ArgumentParser()
p.add_argument("--ps_hosts"); p.add_argument("--worker_hosts"); p.add_argument("--task_index", type=int)
p.add_argument("--checkpoint_dir"); p.add_argument("--stop_file")
p.add_argument("--save_checkpoint_steps", type=int, default=50)
p.add_argument("--timeout_ms", type=int, default=3000)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
ps_hosts, worker_hosts = a.ps_hosts.split(","), a.worker_hosts.split(",")
cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
server = tf.train.Server(cluster, job_name="worker", task_index=a.task_index)
rng = np.random.default_rng(0)
x_val = rng.standard_normal((128, 16)).astype(np.float32)
y_val = x_val @ rng.standard_normal((16, 1)).astype(np.float32)
with tf.device("/job:worker/task:%d" % a.task_index):
    pieces, counters = [], []
    for i in range(len(ps_hosts)):          # a slice of the model on every ps
        with tf.device("/job:ps/task:%d" % i):
            pieces.append(tf.Variable(np.zeros((16 // len(ps_hosts), 1), np.float32), name="w%d" % i))
    for k in range(len(worker_hosts)):
        with tf.device("/job:ps/task:%d" % (k % len(ps_hosts))):
            counters.append(tf.Variable(0, dtype=tf.int64, name="updates_%d" % k))
    with tf.device("/job:ps/task:0"):
        global_step = tf.train.get_or_create_global_step()
    w = tf.concat(pieces, 0)
    loss = tf.reduce_mean(tf.square(tf.matmul(x_val, w) - y_val))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
    with tf.control_dependencies([train]):
        bump = tf.assign_add(counters[a.task_index], 1)

class Sessions(tf.train.SessionRunHook):
    created = 0
    def after_create_session(self, session, coord):
        Sessions.created += 1

stats = dict(worker=a.task_index, steps=0, checked=0, lost=0, doubled=0, rolled_back=0,
             applied_unacknowledged=0, sessions=0, final_ok=None, global_step=None, loss=None)
last, seen = None, 0
config = tf.ConfigProto(operation_timeout_in_ms=a.timeout_ms)
with tf.train.MonitoredTrainingSession(
        master=server.target, is_chief=a.task_index == 0, checkpoint_dir=a.checkpoint_dir,
        save_checkpoint_steps=a.save_checkpoint_steps, log_step_count_steps=0,
        hooks=[Sessions()], config=config) as sess:
    while not os.path.exists(a.stop_file):
        value, step, l = sess.run([bump, global_step, loss])
        value = int(value)
        stats["steps"] += 1
        if Sessions.created != seen:          # a new session: the count may restart lower
            seen = Sessions.created
            if last is not None:
                if value - 1 < last:
                    stats["rolled_back"] += last - (value - 1)
                elif value - 1 > last:
                    stats["applied_unacknowledged"] += value - 1 - last
        elif last is not None:
            if value == last + 1:
                stats["checked"] += 1
            elif value <= last:
                stats["lost"] += last + 1 - value
            else:
                stats["doubled"] += value - last - 1
        last = value
        stats["global_step"], stats["loss"] = int(step), float(l)
    final = int(sess.run(counters[a.task_index]))
    stats["final_ok"] = final == last
    stats["checked"] += 1 if final == last else 0
    stats["sessions"] = Sessions.created
print("SOAK_RESULT " + json.dumps(stats), flush=True)
'''


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def growth(samples):
    """``(first, last, flagged)`` over the samples after warm-up: the mean of the last third
    against the mean of the first third."""
    values = [v for _, v in samples if v is not None]
    if len(values) < 6:
        return (values[0] if values else None, values[-1] if values else None, False)
    third = len(values) // 3
    first = sum(values[:third]) / third
    last = sum(values[-third:]) / third
    flagged = last - first > max(GROWTH_FLAG_MIB, GROWTH_FLAG_FRACTION * first)
    return first, last, flagged


def run(seconds=180.0, num_ps=2, num_workers=2, kill_every=20.0, down_secs=1.0, out=sys.stderr):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    workdir = Path(tempfile.mkdtemp(prefix="zps-soak-"))
    script = workdir / "soak_worker.py"
    script.write_text(WORKER)
    stop_file = workdir / "stop"
    kills, events, rss = [], [], {}
    started = time.monotonic()

    def say(msg):
        out.write("soak %6.1fs: %s\n" % (time.monotonic() - started, msg))
        out.flush()

    # The ps tasks are served by LocalCluster (which kills and restarts them); the workers are
    # this tool's own processes at the addresses LocalCluster reserved for them in the spec.
    with LocalCluster({"ps": num_ps, "worker": num_workers}, env=env,
                      in_process=[("worker", k) for k in range(num_workers)]) as cluster:
        worker_hosts = cluster.spec["worker"]
        workers = []
        for k in range(num_workers):
            log = open(workdir / ("worker%d.log" % k), "wb")
            cmd = [sys.executable, str(script), "--ps_hosts=" + ",".join(cluster.spec["ps"]),
                   "--worker_hosts=" + ",".join(worker_hosts), "--task_index=%d" % k,
                   "--checkpoint_dir", str(workdir / "ckpt"), "--stop_file", str(stop_file)]
            workers.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True), log))
        try:
            next_kill = started + kill_every
            next_sample = started
            victim = 0
            while time.monotonic() - started < seconds:
                now = time.monotonic()
                for k, (proc, _) in enumerate(workers):
                    if proc.poll() is not None:
                        raise RuntimeError("worker %d exited early (%s); see %s"
                                           % (k, proc.returncode, workdir / ("worker%d.log" % k)))
                if now >= next_sample:
                    next_sample += RSS_SAMPLE_SECS
                    t = round(now - started, 1)
                    for i in range(num_ps):
                        rss.setdefault("ps:%d#%d" % (i, sum(1 for v in kills if v == i)), []).append(
                            (t, rss_mib(cluster.pid("ps", i))))
                    for k, (proc, _) in enumerate(workers):
                        rss.setdefault("worker:%d" % k, []).append((t, rss_mib(proc.pid)))
                if now >= next_kill and seconds - (now - started) > QUIET_END_SECS:
                    cluster.kill("ps", victim)
                    kills.append(victim)
                    say("killed ps:%d (kill #%d)" % (victim, len(kills)))
                    time.sleep(down_secs)
                    cluster.restart("ps", victim)
                    events.append((round(time.monotonic() - started, 1), "ps:%d restarted" % victim))
                    say("restarted ps:%d" % victim)
                    victim = (victim + 1) % num_ps
                    next_kill = time.monotonic() + kill_every
                time.sleep(0.1)
            stop_file.touch()
            results = []
            for k, (proc, log) in enumerate(workers):
                try:
                    proc.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
                log.close()
                text = (workdir / ("worker%d.log" % k)).read_text(errors="replace")
                found = [line for line in text.splitlines() if line.startswith("SOAK_RESULT ")]
                result = json.loads(found[-1].split(" ", 1)[1]) if found else {"worker": k, "error": (
                    "no result (exit %s); see %s" % (proc.returncode, workdir / ("worker%d.log" % k)))}
                result["recoveries"] = text.count("Recovering the monitored session")
                result["exit"] = proc.returncode
                results.append(result)
        finally:
            for proc, log in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=10)
                log.close()
    elapsed = time.monotonic() - started
    memory = {}
    for name, samples in sorted(rss.items()):
        first, last, flagged = growth(samples)
        memory[name] = {"samples": samples, "first_mib": first, "last_mib": last,
                        "max_mib": max((v for _, v in samples if v is not None), default=None),
                        "growth_flagged": flagged}
    report = {
        "seconds": round(elapsed, 1), "ps": num_ps, "workers": num_workers,
        "ps_kills": len(kills), "events": events, "workers_results": results,
        "global_step": max((r.get("global_step") or 0) for r in results),
        "steps": sum(r.get("steps", 0) for r in results),
        "recoveries": sum(r.get("recoveries", 0) for r in results),
        "updates_checked": sum(r.get("checked", 0) for r in results),
        "lost_updates": sum(r.get("lost", 0) for r in results),
        "doubled_updates": sum(r.get("doubled", 0) for r in results),
        "rolled_back_by_restore": sum(r.get("rolled_back", 0) for r in results),
        "memory": memory, "workdir": str(workdir),
    }
    report["ok"] = (report["lost_updates"] == 0 and report["doubled_updates"] == 0
                    and all(r.get("exit") == 0 and r.get("final_ok") for r in results)
                    and not any(m["growth_flagged"] for m in memory.values()))
    return report


def format_report(report):
    lines = ["soak: %.0f s, %d ps + %d workers, %d ps kills (-9) and restarts"
             % (report["seconds"], report["ps"], report["workers"], report["ps_kills"])]
    rows = [("worker", "exit", "steps", "sessions", "recoveries", "checked", "lost", "doubled",
             "rolled back", "final ok")]
    for r in report["workers_results"]:
        rows.append(tuple(str(r.get(k, "-")) for k in ("worker", "exit", "steps", "sessions",
                                                        "recoveries", "checked", "lost", "doubled",
                                                        "rolled_back", "final_ok")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    lines.append("global step %d; %d steps; %d recoveries; %d updates checked; %d lost; %d doubled; "
                 "%d rolled back by checkpoint restores (expected)"
                 % (report["global_step"], report["steps"], report["recoveries"],
                    report["updates_checked"], report["lost_updates"], report["doubled_updates"],
                    report["rolled_back_by_restore"]))
    lines.append("RSS (MiB, mean of first/last third of the samples; ps:i#n = n-th incarnation):")
    for name, m in report["memory"].items():
        if m["first_mib"] is None:
            continue
        lines.append("  %-12s %7.1f -> %7.1f  max %7.1f  %s" % (
            name, m["first_mib"], m["last_mib"], m["max_mib"],
            "GROWTH FLAGGED" if m["growth_flagged"] else "ok"))
    lines.append("result: %s%s" % ("OK" if report["ok"] else "PROBLEMS",
                                   " (logs in %s)" % report["workdir"] if report["workdir"] else ""))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0, help="how long to run (default 180)")
    parser.add_argument("--ps", type=int, default=2, choices=(1, 2), help="ps tasks (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="worker tasks (default 2)")
    parser.add_argument("--kill_every", type=float, default=20.0,
                        help="seconds between ps kills (default 20); the ps tasks take turns")
    parser.add_argument("--down_secs", type=float, default=1.0,
                        help="how long a killed ps stays down before its restart (default 1)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--keep", action="store_true",
                        help="keep the logs and checkpoints (kept anyway when there are problems)")
    args = parser.parse_args(argv)
    if args.seconds < 2 * QUIET_END_SECS:
        parser.error("--seconds must be at least %d" % (2 * QUIET_END_SECS))
    report = run(args.seconds, args.ps, args.workers, args.kill_every, args.down_secs)
    if report["ok"] and not args.keep:
        shutil.rmtree(report["workdir"], ignore_errors=True)
        report["workdir"] = None
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
