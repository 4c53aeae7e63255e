"""How zps's costs grow with the work: model size, number of variables, number of workers.

    python tools/bench_scaling.py             # table (a few minutes on 2 cores)
    python tools/bench_scaling.py --json      # machine-readable
    python tools/bench_scaling.py --quick     # small sizes: a smoke test (seconds)

- size: one float32 variable of 1 MB ... 256 MB on one ps (a separate process); a step pulls it
  to the worker and pushes an update of the same size back (``assign_add(v, identity(v))`` with
  the identity on the worker: the worker's copy goes back to the ps). Its time is set against raw
  pyzmq in the same run: a pull plus a push of the same bytes as 1 MB frames between two
  processes (the machine's limit for this traffic). Target: large models move at >= 80% of raw.
- variables: the same step over 16 MB split into 1 ... 1,000 variables; per-step time relative
  to one variable. Target: <= 2x at 1,000 (per-variable costs are batched away).
- workers: 1 ... 8 worker processes against one ps, each training a scalar (loss (w-3)^2,
  GradientDescent, async, MonitoredTrainingSession); the ps's aggregate update rate (steps/s of
  all workers in a 3-second window that starts after every worker's first step and ends
  before any stops) relative to the best, medians of five rounds in which the counts take
  turns. Target: >= 90% of the best.

Steps are timed after a warm-up step; medians of ``--repeats``. The points of a table take turns
(raw and zps for each size; every variable count, all clusters up at once), so that load drifting
on a shared machine moves them alike. Every cluster is fresh and torn down.
"""

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from bench_transfer import MB, raw_ops, raw_server, raw_stop, seconds_of, take_turns  # noqa: E402 - after the path is set

RESULT_MARK = "SCALING_RESULT "
WORKER_TIMEOUT_S = 600
SETTLE_S = 0.1   # between the last worker's first step and the timed window

FULL = {"sizes_mb": [1, 4, 16, 64, 256], "vars_mb": 16, "var_counts": [1, 10, 100, 1000],
        "workers": [1, 2, 4, 8], "worker_seconds": 3.0, "worker_rounds": 5, "repeats": 7}
QUICK = {"sizes_mb": [1, 4], "vars_mb": 1, "var_counts": [1, 10, 100], "workers": [1, 2],
         "worker_seconds": 0.2, "worker_rounds": 1, "repeats": 3}


# -- raw pyzmq: the limit ---------------------------------------------------------------------------

@contextlib.contextmanager
def raw_transfers(nbytes):
    """A raw pyzmq server process and a DEALER in this process; yields ``{"pull", "push"}``, each
    moving ``nbytes`` once (1 MB frames, one multipart message, zero-copy)."""
    import zmq
    spawn = mp.get_context("spawn")
    q = spawn.Queue()
    proc = spawn.Process(target=raw_server, args=(q, nbytes), daemon=True)
    proc.start()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect("tcp://127.0.0.1:%d" % q.get(timeout=60))
        yield raw_ops(sock, nbytes)
        raw_stop(sock)
    finally:
        sock.close()
        ctx.term()
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()


def raw_zmq(nbytes, repeats=5):
    """Median seconds of a raw pull and a raw push of ``nbytes``: ``{"pull_s", "push_s"}``."""
    with raw_transfers(nbytes) as ops:
        return take_turns({"pull_s": lambda: seconds_of(ops["pull"]),
                           "push_s": lambda: seconds_of(ops["push"])}, repeats)


# -- size and variable count: one ps process each, the client in this process --------------------

@contextlib.contextmanager
def pull_push_step(total_bytes, num_vars):
    """A ps process holding ``num_vars`` float32 variables (``total_bytes`` in all) and a worker
    server in this process; yields a function running one step that pulls every variable to the
    worker and pushes an update of each back."""
    import zps as tf
    from zps.testing.cluster import LocalCluster

    n = total_bytes // 4 // num_vars
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            graph = tf.Graph()
            with graph.as_default():
                updates = []
                for i in range(num_vars):
                    with tf.device("/job:ps/task:0"):
                        v = tf.Variable(tf.zeros([n]), name="v%d" % i)
                    with tf.device("/job:worker/task:0"):
                        pulled = tf.identity(v)
                    with tf.device("/job:ps/task:0"):
                        updates.append(tf.assign_add(v, pulled).op)
                step = tf.group(*updates)
                init = tf.global_variables_initializer()
            with tf.Session(server.target, graph=graph) as sess:
                sess.run(init)
                yield lambda: sess.run(step)
        finally:
            server.stop()


def bench_size(sizes_mb, repeats, log):
    rows = []
    for mb in sizes_mb:
        nbytes = mb * MB
        with raw_transfers(nbytes) as raw, pull_push_step(nbytes, 1) as step:
            t = take_turns({"raw": lambda: seconds_of(raw["pull"]) + seconds_of(raw["push"]),
                            "zps": lambda: seconds_of(step)}, repeats)
        row = {"mb": mb, "step_ms": t["zps"] * 1e3, "raw_ms": t["raw"] * 1e3,
               "gbs": 2 * nbytes / t["zps"] / 1e9, "raw_gbs": 2 * nbytes / t["raw"] / 1e9,
               "vs_raw": t["raw"] / t["zps"], "ms_per_mb": t["zps"] * 1e3 / mb}
        log("size %s" % json.dumps(row))
        rows.append(row)
    return rows


def bench_vars(total_mb, counts, repeats, log):
    """Every count's cluster is up at once and their steps take turns (``take_turns``)."""
    with contextlib.ExitStack() as stack:
        steps = {k: stack.enter_context(pull_push_step(total_mb * MB, k)) for k in counts}
        t = take_turns({k: (lambda step=step: seconds_of(step)) for k, step in steps.items()},
                       repeats)
    rows = [{"variables": k, "mb": total_mb, "step_ms": t[k] * 1e3,
             "vs_one": t[k] / t[counts[0]]} for k in counts]
    for row in rows:
        log("vars %s" % json.dumps(row))
    return rows


# -- workers: separate worker processes against one ps ---------------------------------------------

def run_worker(spec, index, ready_file):
    """One worker of the workers table: after its first step it creates ``ready_file``, then
    trains until the time (seconds since the epoch) the bench writes on its stdin, and prints
    the end time of every step after the first."""
    import zps as tf
    stop = [time.time() + WORKER_TIMEOUT_S]

    def read_stop():
        line = sys.stdin.readline()
        stop[0] = float(line) if line.strip() else time.time()   # the bench went away: stop

    threading.Thread(target=read_stop, name="stop-reader", daemon=True).start()
    cluster = tf.train.ClusterSpec(spec)
    server = tf.train.Server(cluster, job_name="worker", task_index=index)
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(
                    worker_device="/job:worker/task:%d" % index, cluster=cluster)):
                w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
                gs = tf.train.get_or_create_global_step()
                train_op = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w - 3.0),
                                                                           global_step=gs)
            config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % index])
            ends = []
            with tf.train.MonitoredTrainingSession(master=server.target, is_chief=index == 0,
                                                   config=config, log_step_count_steps=None) as sess:
                sess.run(train_op)
                open(ready_file, "w").close()
                while True:
                    sess.run(train_op)
                    ends.append(time.time())
                    if ends[-1] >= stop[0]:
                        break
    finally:
        server.stop()
    print(RESULT_MARK + json.dumps({"ends": ends}), flush=True)


def _counts_between(all_ends, t0, t1):
    return [sum(1 for e in ends if t0 < e <= t1) for ends in all_ends]


def _rate_between(all_ends, t0, t1):
    """Steps of all workers that ended in (t0, t1], per second."""
    return sum(_counts_between(all_ends, t0, t1)) / (t1 - t0)


def _evenness(all_ends, t0, t1):
    """How evenly the workers shared the window (t0, t1]: the fewest steps a worker made in it
    over the most (1.0: all alike; 0.0: one made none)."""
    counts = _counts_between(all_ends, t0, t1)
    return min(counts) / max(counts) if max(counts) else 0.0


def _workers_rate(num_workers, seconds):
    """(Updates per second, ``_evenness``) while all ``num_workers`` train: every worker has
    made its first step before the timed window starts, and each trains until it has ended."""
    from zps.testing.cluster import LocalCluster
    workers = [("worker", i) for i in range(num_workers)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get(
        "PYTHONPATH")])))
    with tempfile.TemporaryDirectory(prefix="zps-scaling-") as tmp, \
            LocalCluster({"ps": 1, "worker": num_workers}, in_process=workers, env=env) as c:
        ready = [os.path.join(tmp, "ready.%d" % i) for i in range(num_workers)]
        procs = [subprocess.Popen([sys.executable, HERE, "--role", "worker", "--cluster",
                                   json.dumps(c.spec), "--task_index", str(i), "--ready_file",
                                   ready[i]],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for i in range(num_workers)]
        try:
            deadline = time.monotonic() + WORKER_TIMEOUT_S
            while not all(os.path.exists(f) for f in ready):
                exited = [p for p in procs if p.poll() is not None]
                if exited or time.monotonic() > deadline:
                    p = exited[0] if exited else procs[0]
                    p.kill()
                    raise RuntimeError("a worker %s before its first step:\n%s" % (
                        "exited with %s" % p.returncode if exited else "took too long",
                        p.communicate(timeout=30)[1][-3000:]))
                time.sleep(0.01)
            t0 = time.time() + SETTLE_S
            t1 = t0 + seconds
            for p in procs:
                p.stdin.write("%r\n" % t1)
                p.stdin.flush()
            ends = []
            for p in procs:
                out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
                lines = [ln for ln in out.splitlines() if ln.startswith(RESULT_MARK)]
                if p.returncode != 0 or not lines:
                    raise RuntimeError("worker exited with %s:\n%s" % (p.returncode, err[-3000:]))
                ends.append(json.loads(lines[-1][len(RESULT_MARK):])["ends"])
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=30)
    return _rate_between(ends, t0, t1), _evenness(ends, t0, t1)


def bench_workers(counts, seconds, rounds, log):
    """Each worker count ``rounds`` times, the counts taking turns (forward, then backward, ...);
    the median rate of each (a cluster's rate moves by 10% and more from one start to the
    next on a small shared machine)."""
    samples = {k: [] for k in counts}
    evenness = {k: [] for k in counts}
    for r in range(rounds):
        for k in (counts if r % 2 == 0 else counts[::-1]):
            rate, even = _workers_rate(k, seconds)
            samples[k].append(rate)
            evenness[k].append(even)
            log("workers %s" % json.dumps({"workers": k, "round": r + 1, "updates_per_s": rate,
                                            "evenness": even}))
    rows = [{"workers": k, "updates_per_s": statistics.median(samples[k]),
             "samples": samples[k], "evenness": statistics.median(evenness[k]),
             "evenness_samples": evenness[k]} for k in counts]
    best = max(r["updates_per_s"] for r in rows)
    for r in rows:
        r["vs_best"] = r["updates_per_s"] / best
    return rows


# -- report ----------------------------------------------------------------------------------------

def print_table(report):
    print("bench_scaling%s, %d CPUs, %s" % (" (quick)" if report["quick"] else "", report["cpus"],
                                             report["date"]))
    if report["size"]:
        print("\nmodel size on one ps (step = pull + push of every byte)")
        print("%8s %10s %10s %9s %9s %8s %9s" % ("MB", "step ms", "raw ms", "GB/s", "raw GB/s",
                                                  "vs raw", "ms/MB"))
    for r in report["size"]:
        print("%8d %10.2f %10.2f %9.2f %9.2f %7.0f%% %9.3f" % (
            r["mb"], r["step_ms"], r["raw_ms"], r["gbs"], r["raw_gbs"], 100 * r["vs_raw"],
            r["ms_per_mb"]))
    if report["vars"]:
        print("\nnumber of variables at %d MB in all" % report["vars"][0]["mb"])
        print("%10s %10s %8s" % ("variables", "step ms", "vs 1"))
    for r in report["vars"]:
        print("%10d %10.2f %7.2fx" % (r["variables"], r["step_ms"], r["vs_one"]))
    if report["workers"]:
        print("\nworkers against one ps (scalar model, async)")
        print("%8s %12s %8s %12s" % ("workers", "updates/s", "vs best", "fewest/most"))
    for r in report["workers"]:
        print("%8d %12.0f %7.0f%% %12.2f" % (r["workers"], r["updates_per_s"], 100 * r["vs_best"],
                                             r["evenness"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--only", default="size,vars,workers",
                        help="comma-separated subset of size,vars,workers")
    parser.add_argument("--repeats", type=int, default=None, help="timed steps per point")
    parser.add_argument("--role", choices=["bench", "worker"], default="bench",
                        help=argparse.SUPPRESS)
    parser.add_argument("--cluster", help=argparse.SUPPRESS)
    parser.add_argument("--task_index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--ready_file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)   # run as `python tools/bench_scaling.py` from a checkout
    if args.role == "worker":
        run_worker(json.loads(args.cluster), args.task_index, args.ready_file)
        return 0
    cfg = dict(QUICK if args.quick else FULL)
    if args.repeats is not None:
        if args.repeats < 1:
            parser.error("--repeats must be at least 1")
        cfg["repeats"] = args.repeats
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    if not only or only - {"size", "vars", "workers"}:
        parser.error("--only takes a subset of size,vars,workers")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    report = {"quick": args.quick, "cpus": os.cpu_count(), "config": cfg,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "size": bench_size(cfg["sizes_mb"], cfg["repeats"], log) if "size" in only else [],
              "vars": bench_vars(cfg["vars_mb"], cfg["var_counts"], cfg["repeats"], log)
              if "vars" in only else [],
              "workers": bench_workers(cfg["workers"], cfg["worker_seconds"], cfg["worker_rounds"],
                                       log)
              if "workers" in only else []}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
