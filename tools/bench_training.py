"""Training throughput: async and sync between-graph training on a local cluster vs one process.

    python tools/bench_training.py                 # table (about 1-2 minutes on 2 cores)
    python tools/bench_training.py --json          # machine-readable
    python tools/bench_training.py --steps 50      # steps per worker (default 200)

The model is an MLP 784-512-512-10 (relu, sparse softmax cross-entropy) at batch 128, trained with
AdagradOptimizer(0.01) on synthetic data made from a fixed seed and fed through ``feed_dict``.

- ``local``: the model in this process (MonitoredTrainingSession without a master).
- ``async``: 2 ps (zps.testing.cluster.LocalCluster) + 2 worker processes (this file with
  ``--role worker``), variables placed by ``replica_device_setter``, ``MonitoredTrainingSession``
  + ``StopAtStepHook``; each worker runs about ``--steps`` steps.
- ``sync``: the same with ``SyncReplicasOptimizer(replicas_to_aggregate=2, total_num_replicas=2)``.

Each worker times its own steps from the end of its first step (start-up, the chief's
initialization, waiting for the model and the first step's registration of the graph are excluded)
to the end of its last; the aggregate examples/s is all examples the workers processed in that
window divided by (last worker's end - first worker's start). Every cluster is fresh and torn down
after its run.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

LAYERS = (784, 512, 512, 10)
BATCH = 128
LEARNING_RATE = 0.01
N_BATCHES = 8          # distinct synthetic batches per process, cycled
RESULT_MARK = "BENCH_RESULT "
RUN_TIMEOUT_S = 600


def synthetic_batches(seed, n=N_BATCHES, batch=BATCH):
    """``n`` (x, labels) batches of the synthetic data set drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, LAYERS[0])).astype(np.float32),
             rng.integers(0, LAYERS[-1], batch).astype(np.int64)) for _ in range(n)]


def build_model(tf):
    x = tf.placeholder(tf.float32, [None, LAYERS[0]], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = x
    for i, units in enumerate(LAYERS[1:]):
        with tf.variable_scope("layer%d" % i):
            w = tf.get_variable("weights", [h.get_shape()[1].value, units])
            b = tf.get_variable("biases", [units], initializer=tf.zeros_initializer())
            h = tf.matmul(h, w) + b
            if i < len(LAYERS) - 2:
                h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
    return x, labels, loss


def _train_loop(tf, mon_sess, train_op, loss, x, labels, batches):
    """Steps until the session stops; returns (local steps, t_first_done, t_last_done)."""
    steps, t_first, t_last = 0, None, None
    while not mon_sess.should_stop():
        bx, by = batches[steps % len(batches)]
        mon_sess.run([train_op, loss], {x: bx, labels: by})
        steps += 1
        t_last = time.time()
        if t_first is None:
            t_first = t_last
    return steps, t_first, t_last


# -- one worker task (a subprocess) ----------------------------------------------------------------

def run_worker(cluster_spec, task_index, steps, sync):
    import zps as tf
    cluster = tf.train.ClusterSpec(cluster_spec)
    num_workers = cluster.num_tasks("worker")
    server = tf.train.Server(cluster, job_name="worker", task_index=task_index)
    is_chief = task_index == 0
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(
                    worker_device="/job:worker/task:%d" % task_index, cluster=cluster)):
                x, labels, loss = build_model(tf)
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.AdagradOptimizer(LEARNING_RATE)
                if sync:
                    opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers,
                                                         total_num_replicas=num_workers)
                train_op = opt.minimize(loss, global_step=global_step)
            # Async: the global step counts every worker's steps; sync: one per aggregated update.
            last_step = steps if sync else steps * num_workers
            hooks = [tf.train.StopAtStepHook(last_step=last_step)]
            if sync:
                hooks.append(opt.make_session_run_hook(is_chief))
            batches = synthetic_batches(1000 + task_index)
            with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                                   hooks=hooks, log_step_count_steps=0) as sess:
                n, t0, t1 = _train_loop(tf, sess, train_op, loss, x, labels, batches)
    finally:
        server.stop()
    print(RESULT_MARK + json.dumps({"task": task_index, "steps": n, "t_first": t0, "t_last": t1}),
          flush=True)


# -- the benchmarks --------------------------------------------------------------------------------

def bench_local(steps):
    import zps as tf
    with tf.Graph().as_default():
        x, labels, loss = build_model(tf)
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(LEARNING_RATE).minimize(loss, global_step=global_step)
        hooks = [tf.train.StopAtStepHook(last_step=steps)]
        batches = synthetic_batches(1000)
        with tf.train.MonitoredTrainingSession(hooks=hooks, log_step_count_steps=0) as sess:
            n, t0, t1 = _train_loop(tf, sess, train_op, loss, x, labels, batches)
    timed = n - 1   # the first step is excluded, as for the workers
    return {"mode": "local", "processes": 1, "steps": n,
            "examples_per_s": timed * BATCH / (t1 - t0), "seconds": t1 - t0}


def bench_cluster(steps, sync, num_ps=2, num_workers=2):
    from zps.testing.cluster import LocalCluster
    workers = [("worker", i) for i in range(num_workers)]
    here = os.path.abspath(__file__)
    root = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get(
        "PYTHONPATH")])))
    with LocalCluster({"ps": num_ps, "worker": num_workers}, in_process=workers, env=env) as c:
        procs = []
        try:
            for _, i in workers:
                cmd = [sys.executable, here, "--role", "worker", "--cluster", json.dumps(c.spec),
                       "--task_index", str(i), "--steps", str(steps)] + (["--sync"] if sync else [])
                procs.append(subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True))
            deadline = time.monotonic() + RUN_TIMEOUT_S
            outputs = []
            for p in procs:
                try:
                    out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise RuntimeError("a %s worker did not finish within %d s"
                                       % ("sync" if sync else "async", RUN_TIMEOUT_S)) from None
                if p.returncode != 0:
                    raise RuntimeError("worker exited with %d:\n%s" % (p.returncode, err[-4000:]))
                outputs.append(out)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=10)
    results = []
    for out in outputs:
        lines = [ln for ln in out.splitlines() if ln.startswith(RESULT_MARK)]
        if not lines:
            raise RuntimeError("worker printed no result:\n%s" % out[-2000:])
        results.append(json.loads(lines[-1][len(RESULT_MARK):]))
    t0 = min(r["t_first"] for r in results)
    t1 = max(r["t_last"] for r in results)
    timed = sum(r["steps"] - 1 for r in results)
    return {"mode": "sync" if sync else "async", "processes": num_ps + num_workers,
            "steps": sum(r["steps"] for r in results),
            "steps_per_worker": [r["steps"] for r in results],
            "examples_per_s": timed * BATCH / (t1 - t0), "seconds": t1 - t0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200,
                        help="training steps per worker (and of the local run)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--role", choices=["bench", "worker"], default="bench",
                        help=argparse.SUPPRESS)
    parser.add_argument("--cluster", help=argparse.SUPPRESS)
    parser.add_argument("--task_index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--sync", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the first step is not timed)")
    if args.role == "worker":
        run_worker(json.loads(args.cluster), args.task_index, args.steps, args.sync)
        return 0

    rows = [bench_local(args.steps), bench_cluster(args.steps, sync=False),
            bench_cluster(args.steps, sync=True)]
    base = rows[0]["examples_per_s"]
    for r in rows:
        r["vs_local"] = r["examples_per_s"] / base
    meta = {"model": "MLP %s" % "-".join(map(str, LAYERS)), "batch": BATCH,
            "optimizer": "AdagradOptimizer(%g)" % LEARNING_RATE, "steps_per_worker": args.steps,
            "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps({"config": meta, "results": rows}, indent=2))
        return 0
    print("%s, batch %d, %s, %d steps per worker, %d CPUs"
          % (meta["model"], BATCH, meta["optimizer"], args.steps, meta["cpus"]))
    print("%-7s %-16s %7s %12s %9s" % ("mode", "tasks", "steps", "examples/s", "vs local"))
    for r in rows:
        tasks = "1 process" if r["mode"] == "local" else "2 ps + 2 workers"
        print("%-7s %-16s %7d %12.0f %8.2fx" % (r["mode"], tasks, r["steps"], r["examples_per_s"],
                                              r["vs_local"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
