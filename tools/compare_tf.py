"""zps against TensorFlow's own gRPC runtime: the same TF1 programs, side by side in one run.

    /work/tfvenv/bin/python tools/compare_tf.py                      # tf and zps, 3 rounds, all workloads
    python tools/compare_tf.py --impl zps --rounds 1                 # zps only (no TensorFlow needed)
    python tools/compare_tf.py --impl tf,zps --workloads tiny,transfer --json
    python tools/compare_tf.py --tf-python /work/tfvenv/bin/python   # TensorFlow from another venv

TensorFlow is never a dependency of zps and this tool installs nothing. Get it into a separate
virtual environment, outside the repository:

    python -m venv /work/tfvenv && /work/tfvenv/bin/pip install tensorflow-cpu
    /work/tfvenv/bin/pip install -e .          # optional: both impls from one interpreter

Each workload is a whole cluster of separate processes on 127.0.0.1 (this file with ``--role``),
started fresh for every measurement; ``--impl tf,zps`` interleaves the two round by round (the
order alternates between rounds so that machine noise hits both alike) and the table shows
per-workload medians and the zps/TF ratio (a speed-up: > 1 means zps is better; for ``startup``
it is TF's seconds over zps's). The program is the same TF1 code for both (``tf`` is
``tensorflow.compat.v1`` or ``zps``): synthetic data pre-generated from a fixed seed and fed
through ``feed_dict``, ``MonitoredTrainingSession`` + ``StopAtStepHook``, variables placed by
``replica_device_setter``, sessions with ``device_filters`` (ps + own worker task). All workers
start their timed steps together (a file barrier once each has its session: TF1's non-chief
workers otherwise sleep 30 s in SessionManager while the chief trains alone). zps tasks get the
BLAS thread limit zps-launch gives them (cores / tasks); TensorFlow keeps its own defaults.
Rows "<workload> cpu" are the user + system CPU time of all the cluster's processes (sampled from
/proc) per step in the same window: less sensitive to other load on the machine than the rates.

Workloads (metric):
- mlp-async: MLP 784-512-512-10, batch 128, Adagrad(0.01), 2 ps + 2 workers, async, 300 steps
  per worker (examples/s while both workers train: step completions of all workers between the
  later worker's first step and the earlier worker's last, per second).
- mlp-sync: the same with SyncReplicasOptimizer(2 of 2), 300 global steps (examples/s: the
  chief's global steps/s x 2 replicas x batch).
- tiny: 1 ps + 1 worker, scalar w, loss (w-3)^2, GradientDescent(0.1) (steps/s).
- transfer: 1 ps + 1 worker, a 64 MB float32 variable on the ps; pull = reduce_sum(v) on the
  worker, push = assign_add(v, delta) with delta a worker-side local variable (GB/s each way,
  median of the repetitions; raw zmq, 64 x 1 MB frames between two processes, measured in the
  same round for reference).
- embedding: 2 ps + 1 worker, a 1M x 64 table with fixed_size_partitioner(2), 4096 ids per step,
  Adagrad (sparse updates) (rows/s).
- startup: launch 2 ps + 2 workers (mlp-async) until the chief's first training step completes
  (seconds; the JSON also has the time until every worker completed one).

TensorFlow's gRPC server listens on all interfaces whatever the cluster spec says, so its clusters
run inside a private network namespace with only loopback (``unshare -n`` + ``ip link set lo up``);
where that is not allowed the tool says so and runs them normally. zps binds 127.0.0.1 only.
"""

import argparse
import compileall
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULT_MARK = "COMPARE_RESULT "
WORKLOADS = ("mlp-async", "mlp-sync", "tiny", "transfer", "embedding", "startup")
LAYERS = (784, 512, 512, 10)
BATCH = 128
MB = 1 << 20
TASK_TIMEOUT_S = 900
SYNC_GRACE_S = 15.0
TF_VENV_HINT = ("TensorFlow is not importable by %s.\nzps never depends on it; create a separate "
                "virtual environment outside the repository:\n"
                "    python -m venv /work/tfvenv && /work/tfvenv/bin/pip install tensorflow-cpu\n"
                "then run this tool with /work/tfvenv/bin/python (after `/work/tfvenv/bin/pip "
                "install -e %s`), or pass --tf-python /work/tfvenv/bin/python.")

# Per-workload sizes: the issue's, and a --quick set for smoke tests.
FULL = {"mlp_steps": 300, "tiny_steps": 1000, "transfer_mb": 64, "transfer_reps": 10,
        "emb_rows": 1_000_000, "emb_dim": 64, "emb_ids": 4096, "emb_steps": 100}
QUICK = {"mlp_steps": 12, "tiny_steps": 30, "transfer_mb": 4, "transfer_reps": 3,
         "emb_rows": 20_000, "emb_dim": 16, "emb_ids": 256, "emb_steps": 8}


def import_framework(impl):
    if impl == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        tf.logging.set_verbosity(tf.logging.ERROR)
        return tf
    import zps as tf
    return tf


def fixed_size_partitioner(tf, n):
    fn = getattr(tf, "fixed_size_partitioner", None)
    if fn is None:   # zps before the public name is wired
        from zps.ops.partitioned_variables import fixed_size_partitioner as fn
    return fn(n)


# -- the TF1 programs (one worker task) ------------------------------------------------------------

def build_mlp(tf):
    x = tf.placeholder(tf.float32, [None, LAYERS[0]], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = x
    for i, units in enumerate(LAYERS[1:]):
        with tf.variable_scope("layer%d" % i):
            w = tf.get_variable("weights", [LAYERS[i], units])
            b = tf.get_variable("biases", [units], initializer=tf.zeros_initializer())
            h = tf.matmul(h, w) + b
            if i < len(LAYERS) - 2:
                h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
    return (x, labels), loss


def mlp_batches(seed, n=8):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, LAYERS[0])).astype(np.float32),
             rng.integers(0, LAYERS[-1], BATCH).astype(np.int64)) for _ in range(n)]


def _emit(result):
    """Print a worker's result and end the process at once (TensorFlow's gRPC server threads
    would otherwise keep it alive)."""
    print(RESULT_MARK + json.dumps(result), flush=True)
    sys.stderr.flush()
    os._exit(0)


def _barrier(directory, index, num_workers, timeout=TASK_TIMEOUT_S):
    """Wait until every worker of the cluster has its session (so that the timed steps of all
    workers overlap: TF's non-chief workers may wait up to 30 s for the chief's initialization,
    and a sync chief can otherwise aggregate its own gradients alone)."""
    if not directory:
        return
    open(os.path.join(directory, "ready-%d" % index), "w").close()
    deadline = time.monotonic() + timeout
    while len(os.listdir(directory)) < num_workers:
        if time.monotonic() > deadline:
            raise RuntimeError("workers did not all start within %d s" % timeout)
        time.sleep(0.01)


def run_worker(impl, workload, spec, index, sizes, barrier=None):
    """One worker task: builds the workload's program, trains, returns its timings (a dict)."""
    tf = import_framework(impl)
    cluster = tf.train.ClusterSpec(spec)
    num_workers = len(spec["worker"])
    server = tf.train.Server(cluster, job_name="worker", task_index=index)
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % index])
    is_chief = index == 0
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:%d" % index,
                                            cluster=cluster)
    out = {"task": index}
    try:
        graph = tf.Graph()
        with graph.as_default():
            if workload in ("mlp-async", "mlp-sync", "startup"):
                sync = workload == "mlp-sync"
                with tf.device(setter):
                    feeds, loss = build_mlp(tf)
                    step = tf.train.get_or_create_global_step()
                    opt = tf.train.AdagradOptimizer(0.01)
                    if sync:
                        opt = tf.train.SyncReplicasOptimizer(
                            opt, replicas_to_aggregate=num_workers, total_num_replicas=num_workers)
                    train_op = opt.minimize(loss, global_step=step)
                steps = 2 if workload == "startup" else sizes["mlp_steps"]
                last = steps if sync else steps * num_workers
                if workload == "startup":
                    last = 10 ** 9   # each worker leaves after its own first step
                hooks = [tf.train.StopAtStepHook(last_step=last)]
                if sync:
                    hooks.append(opt.make_session_run_hook(is_chief))
                data = [dict(zip(feeds, b)) for b in mlp_batches(1000 + index)]
                fetch = [train_op, loss]
                max_steps = 1 if workload == "startup" else None
            elif workload == "tiny":
                with tf.device(setter):
                    w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
                    loss = tf.square(w - 3.0)
                    step = tf.train.get_or_create_global_step()
                    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
                hooks = [tf.train.StopAtStepHook(last_step=sizes["tiny_steps"])]
                data, fetch, max_steps = [None], train_op, None
            elif workload == "embedding":
                with tf.device(setter):
                    table = tf.get_variable(
                        "table", [sizes["emb_rows"], sizes["emb_dim"]],
                        initializer=tf.random_uniform_initializer(-0.05, 0.05),
                        partitioner=fixed_size_partitioner(tf, 2))
                    ids = tf.placeholder(tf.int64, [None], name="ids")
                    emb = tf.nn.embedding_lookup(table, ids)
                    loss = tf.reduce_mean(tf.square(emb))
                    step = tf.train.get_or_create_global_step()
                    train_op = tf.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
                out["ids"] = sizes["emb_ids"]
                rng = np.random.default_rng(2000)
                data = [{ids: rng.integers(0, sizes["emb_rows"], sizes["emb_ids"]).astype(np.int64)}
                        for _ in range(8)]
                hooks = [tf.train.StopAtStepHook(last_step=sizes["emb_steps"])]
                fetch, max_steps = train_op, None
            elif workload == "transfer":
                return _transfer_worker(tf, server, setter, config, index, sizes, out)
            else:
                raise ValueError("unknown workload %r" % workload)
            with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                                   hooks=hooks, config=config,
                                                   log_step_count_steps=None,
                                                   save_checkpoint_secs=None,
                                                   save_summaries_steps=None,
                                                   save_summaries_secs=None) as sess:
                if workload != "startup":
                    _barrier(barrier, index, num_workers)
                ends = []
                while not sess.should_stop():
                    sess.run(fetch, data[len(ends) % len(data)])
                    ends.append(time.time())
                    if max_steps is not None and len(ends) >= max_steps:
                        break
                out["ends"] = ends
                # Report before closing: a TF1 sync chief's close can hang on its token queue
                # runner once the other workers are gone (and the result is known by now).
                _emit(out)
    finally:
        if impl == "zps":
            server.stop()
    return out


def _transfer_worker(tf, server, setter, config, index, sizes, out):
    n = sizes["transfer_mb"] * MB // 4
    with tf.device(setter):
        v = tf.get_variable("v", [n], initializer=tf.zeros_initializer())
        step = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:%d" % index):
        delta = tf.Variable(tf.fill([n], 1e-6), trainable=False, name="delta",
                            collections=[tf.GraphKeys.LOCAL_VARIABLES])
        pull = tf.reduce_sum(v)
    with tf.device(v.device):
        push = tf.assign_add(v, delta).op
    hooks = [tf.train.StopAtStepHook(last_step=10 ** 9)]
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=True, hooks=hooks,
                                           config=config, log_step_count_steps=None,
                                           save_checkpoint_secs=None, save_summaries_steps=None,
                                           save_summaries_secs=None) as sess:
        del step
        for name, op in (("pull", pull), ("push", push)):
            sess.run(op)   # warm-up: registers the step's partitions
            times = []
            for _ in range(sizes["transfer_reps"]):
                t0 = time.perf_counter()
                sess.run(op)
                times.append(time.perf_counter() - t0)
            out[name + "_s"] = times
    out["bytes"] = n * 4
    return out


def run_ps(impl, spec, index):
    tf = import_framework(impl)
    server = tf.train.Server(tf.train.ClusterSpec(spec), job_name="ps", task_index=index)
    print("PS_READY", flush=True)
    server.join()


# -- one cluster (a child process; TensorFlow's inside `unshare -n`) ------------------------------

CLUSTERS = {"mlp-async": (2, 2), "mlp-sync": (2, 2), "tiny": (1, 1), "transfer": (1, 1),
            "embedding": (2, 1), "startup": (2, 2)}


def _free_ports(n):
    """zps's port picker (below the ephemeral range, where no outgoing connection takes a port
    before its task binds it), loaded from its file: TensorFlow's interpreter runs this too, and
    need not have zps's dependencies."""
    spec = importlib.util.spec_from_file_location(
        "_zps_ports", os.path.join(ROOT, "zps", "transport", "ports.py"))
    ports = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ports)
    return ports.free_ports(n)


def run_cluster(impl, workload, quick):
    import tempfile
    with tempfile.TemporaryDirectory(prefix="compare_tf_") as barrier:
        return _run_cluster(impl, workload, quick, barrier)


def _run_cluster(impl, workload, quick, barrier):
    num_ps, num_workers = CLUSTERS[workload]
    ports = _free_ports(num_ps + num_workers)
    spec = {"ps": ["127.0.0.1:%d" % p for p in ports[:num_ps]],
            "worker": ["127.0.0.1:%d" % p for p in ports[num_ps:]]}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get(
        "PYTHONPATH")])), TF_CPP_MIN_LOG_LEVEL="2")
    if impl == "zps":
        # As zps-launch starts a machine's tasks: BLAS thread pools sized so the tasks do not
        # oversubscribe the cores (the caller's own OPENBLAS/OMP/MKL settings win).
        from zps.cli.common import BLAS_THREAD_VARS, blas_threads_per_task
        for name in BLAS_THREAD_VARS:
            env.setdefault(name, str(blas_threads_per_task(num_ps + num_workers)))
    common = [sys.executable, HERE, "--impl", impl, "--workload", workload, "--cluster",
              json.dumps(spec)] + (["--quick"] if quick else [])
    procs = []
    cpu = _CpuSampler()
    t_launch = time.time()
    try:
        for i in range(num_ps):
            procs.append(subprocess.Popen(common + ["--role", "ps", "--task_index", str(i)], env=env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        workers = [subprocess.Popen(common + ["--role", "worker", "--task_index", str(i),
                                             "--barrier", barrier], env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for i in range(num_workers)]
        procs += workers
        cpu.start({p.pid: "ps" if k < num_ps else "worker" for k, p in enumerate(procs)})
        deadline = time.monotonic() + TASK_TIMEOUT_S
        results = []
        for k, p in enumerate(workers):
            timeout = max(1.0, deadline - time.monotonic())
            if workload == "mlp-sync" and k > 0:
                timeout = min(timeout, SYNC_GRACE_S)   # the chief (waited for first) is done
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                if workload == "mlp-sync" and k > 0:
                    # Once the chief is done, a sync non-chief may wait forever for a token
                    # (TF1 semantics); the sync rate is measured on the chief alone.
                    continue
                raise RuntimeError("%s %s: a worker did not finish within %d s"
                                   % (impl, workload, TASK_TIMEOUT_S)) from None
            lines = [ln for ln in out.splitlines() if ln.startswith(RESULT_MARK)]
            if p.returncode != 0 or not lines:
                raise RuntimeError("%s %s: worker exited with %s:\n%s"
                                   % (impl, workload, p.returncode, (err or out)[-3000:]))
            results.append(json.loads(lines[-1][len(RESULT_MARK):]))
    finally:
        cpu.stop()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
    out = summarize(workload, results, t_launch)
    ends = [r["ends"] for r in results if r.get("ends")]
    if ends and workload not in ("startup", "transfer"):
        t0, t1 = _window(ends)
        steps = sum(1 for es in ends for e in es if t0 < e <= t1)
        used = cpu.used(t0, t1)
        if steps and used and sum(used.values()) >= MIN_CPU_S:
            # CPU time of all the cluster's processes per step: less sensitive to other load on
            # the machine than the rates (which need the cores to themselves). Not reported when
            # the window is too short for /proc's 10 ms clock ticks to measure it.
            out["cpu_ms_per_step"] = 1e3 * sum(used.values()) / steps
            out["cpu_ms_per_step_by_role"] = {r: 1e3 * v / steps for r, v in used.items()}
    return out


MIN_CPU_S = 0.1   # CPU seconds a window must use for its CPU per step to be reported


class _CpuSampler:
    """Samples the CPU seconds (user + system) of a cluster's processes from /proc, 20 per s,
    summed per role (ps, worker)."""

    def __init__(self):
        self._samples = []   # (time, {role: CPU seconds of its processes})
        self._stop = None
        self._thread = None

    def start(self, roles):
        """``roles``: {pid: role}."""
        import threading
        if not os.path.exists("/proc/self/stat"):
            return
        self._stop = threading.Event()
        tick = os.sysconf("SC_CLK_TCK")
        last = {}

        def run():
            while not self._stop.is_set():
                for pid in roles:
                    try:
                        with open("/proc/%d/stat" % pid) as f:
                            fields = f.read().rsplit(")", 1)[1].split()
                        last[pid] = (int(fields[11]) + int(fields[12])) / tick
                    except (OSError, ValueError, IndexError):
                        pass   # exited: keep its last reading
                by_role = {}
                for pid, cpu in last.items():
                    by_role[roles[pid]] = by_role.get(roles[pid], 0.0) + cpu
                self._samples.append((time.time(), by_role))
                self._stop.wait(0.05)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)

    def used(self, t0, t1):
        """{role: CPU seconds used between ``t0`` and ``t1``} (interpolated), or None."""
        samples = self._samples
        if len(samples) < 2 or t0 < samples[0][0] or t1 - samples[-1][0] > 1.0:
            return None

        def at(t, role):
            for (ta, ca), (tb, cb) in zip(samples, samples[1:]):
                if ta <= t <= tb:
                    a, b = ca.get(role, 0.0), cb.get(role, 0.0)
                    return a + (b - a) * (t - ta) / (tb - ta) if tb > ta else a
            return samples[-1][1].get(role, 0.0)   # after the last sample: the processes ended
        return {role: at(t1, role) - at(t0, role) for role in samples[-1][1]}


def _window(all_ends):
    """The time window in which every worker trains: (later first step, earlier last step);
    with one worker (or no overlap), from the first step to the last."""
    t0 = max(ends[0] for ends in all_ends)
    t1 = min(ends[-1] for ends in all_ends)
    if len(all_ends) == 1 or t1 <= t0:
        ends = sorted(e for es in all_ends for e in es)
        return ends[0], ends[-1]
    return t0, t1


def _steady_rate(all_ends):
    """Step completions per second while every worker trains (see the module doc)."""
    t0, t1 = _window(all_ends)
    return sum(1 for es in all_ends for e in es if t0 < e <= t1) / (t1 - t0)


def summarize(workload, results, t_launch):
    ends = [r["ends"] for r in results if r.get("ends")]
    if workload == "mlp-async":
        return {"examples_per_s": _steady_rate(ends) * BATCH, "steps": [len(e) for e in ends]}
    if workload == "mlp-sync":
        # Global steps/s (one chief step per aggregated update) x replicas x batch: every update
        # aggregates one batch of each worker.
        replicas = CLUSTERS["mlp-sync"][1]
        return {"examples_per_s": _steady_rate(ends[:1]) * replicas * BATCH,
                "steps": [len(e) for e in ends]}
    if workload == "tiny":
        return {"steps_per_s": _steady_rate(ends), "steps": len(ends[0])}
    if workload == "embedding":
        return {"rows_per_s": _steady_rate(ends) * results[0].get("ids", 0), "steps": len(ends[0])}
    if workload == "startup":
        return {"seconds": ends[0][0] - t_launch, "all_workers_s": max(e[0] for e in ends) - t_launch}
    r = results[0]
    return {"pull_gbs": r["bytes"] / statistics.median(r["pull_s"]) / 1e9,
            "push_gbs": r["bytes"] / statistics.median(r["push_s"]) / 1e9}


# -- the comparison (the parent) ------------------------------------------------------------------

METRICS = [  # (row, workload, result key, unit, higher is better)
    ("mlp-async", "mlp-async", "examples_per_s", "examples/s", True),
    ("mlp-sync", "mlp-sync", "examples_per_s", "examples/s", True),
    ("tiny", "tiny", "steps_per_s", "steps/s", True),
    ("transfer pull", "transfer", "pull_gbs", "GB/s", True),
    ("transfer push", "transfer", "push_gbs", "GB/s", True),
    ("embedding", "embedding", "rows_per_s", "rows/s", True),
    ("startup", "startup", "seconds", "s", False),
    # CPU time of all the cluster's processes per training step (lower is better).
    ("mlp-async cpu", "mlp-async", "cpu_ms_per_step", "CPU ms/step", False),
    ("mlp-sync cpu", "mlp-sync", "cpu_ms_per_step", "CPU ms/step", False),
    ("tiny cpu", "tiny", "cpu_ms_per_step", "CPU ms/step", False),
    ("embedding cpu", "embedding", "cpu_ms_per_step", "CPU ms/step", False),
]


def _has_tensorflow(python):
    r = subprocess.run([python, "-c", "import tensorflow"], capture_output=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    return r.returncode == 0


def _netns_prefix():
    """``unshare -n`` + loopback for TensorFlow's clusters, or None (with the reason)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return None, "unshare or ip not found"
    r = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        r = subprocess.run(["unshare", "-rn", "sh", "-c", "ip link set lo up"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None, (r.stderr.strip() or "unshare failed")
        return ["unshare", "-rn"], None
    return ["unshare", "-n"], None


def measure(impl, workload, python, netns, quick):
    cmd = [python, HERE, "--role", "cluster", "--impl", impl, "--workload", workload] + (
        ["--quick"] if quick else [])
    if impl == "tf" and netns is not None:
        cmd = netns + ["sh", "-c", 'ip link set lo up && exec "$@"', "sh"] + cmd
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get(
        "PYTHONPATH")])))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TASK_TIMEOUT_S + 60)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if r.returncode != 0 or not lines:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": tail[0][:300]}
    return json.loads(lines[-1][len(RESULT_MARK):])


def raw_zmq(nbytes):
    """Raw pyzmq pull/push of ``nbytes`` as 1 MB frames between two processes (GB/s)."""
    sys.path.insert(0, os.path.dirname(HERE))
    from bench_scaling import raw_zmq as measure_raw
    r = measure_raw(nbytes, repeats=5)
    return {"pull_gbs": nbytes / r["pull_s"] / 1e9, "push_gbs": nbytes / r["push_s"] / 1e9}


def compare(impls, workloads, rounds, quick, tf_python, log):
    netns, why = (None, None)
    if "tf" in impls:
        netns, why = _netns_prefix()
        if netns is None:
            log("note: cannot make a private network namespace (%s); TensorFlow's clusters run "
                "on the host network (its servers listen on all interfaces)" % why)
    sizes = QUICK if quick else FULL
    raw = []
    samples = {(impl, w): [] for impl in impls for w in workloads}
    for rnd in range(rounds):
        order = impls if rnd % 2 == 0 else impls[::-1]
        for w in workloads:
            if w == "transfer":
                try:
                    raw.append(raw_zmq(sizes["transfer_mb"] * MB))
                except Exception as e:  # noqa: BLE001 - the reference is optional
                    log("raw zmq measurement failed: %s" % e)
            for impl in order:
                python = tf_python if impl == "tf" else sys.executable
                r = measure(impl, w, python, netns, quick)
                log("round %d %-4s %-10s %s" % (rnd + 1, impl, w, json.dumps(r)))
                samples[(impl, w)].append(r)
    rows = []
    for row, w, key, unit, higher in METRICS:
        if w not in workloads:
            continue
        entry = {"workload": row, "unit": unit, "higher_is_better": higher}
        for impl in impls:
            vals = [s[key] for s in samples[(impl, w)] if key in s]
            errs = [s["error"] for s in samples[(impl, w)] if "error" in s]
            entry[impl] = statistics.median(vals) if vals else None
            entry[impl + "_samples"] = vals
            if errs:
                entry[impl + "_error"] = errs[0]
        if entry.get("tf") and entry.get("zps"):
            entry["ratio_zps_over_tf"] = entry["zps"] / entry["tf"]
            entry["speedup"] = entry["ratio_zps_over_tf"] if higher else 1 / entry[
                "ratio_zps_over_tf"]
        if w == "transfer" and raw:
            entry["raw_zmq"] = statistics.median(r[key] for r in raw)
            if entry.get("zps"):
                entry["zps_vs_raw"] = entry["zps"] / entry["raw_zmq"]
        rows.append(entry)
    return {"impls": impls, "rounds": rounds, "quick": quick, "netns": netns is not None,
            "sizes": sizes, "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                           time.gmtime()),
            "results": rows}


def print_table(report):
    impls = report["impls"]
    print("compare_tf: %d round(s)%s, %d CPUs, %s; TF clusters in a private netns: %s"
          % (report["rounds"], " (quick sizes)" if report["quick"] else "", report["cpus"],
             report["date"], "yes" if report["netns"] else "no"))
    head = "%-14s %-11s" % ("workload", "unit") + "".join("%13s" % i for i in impls)
    if len(impls) == 2:
        head += "%11s" % "zps vs TF"
    head += "%10s" % "raw zmq"
    print(head)
    for e in report["results"]:
        line = "%-14s %-11s" % (e["workload"], e["unit"])
        for impl in impls:
            v = e.get(impl)
            line += "%13s" % ("n/a" if v is None else ("%.3g" % v if v < 100 else "%.0f" % v))
        if len(impls) == 2:
            line += "%10s" % ("%.2fx" % e["speedup"] if "speedup" in e else "-")
        line += "%10s" % ("%.2f" % e["raw_zmq"] if "raw_zmq" in e else "")
        print(line)
        for impl in impls:
            if impl + "_error" in e:
                print("    %s %s: %s" % (impl, e["workload"], e[impl + "_error"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impl", default="tf,zps", help="tf, zps or tf,zps (default)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated subset of %s" % ",".join(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--tf-python", default=None,
                        help="the interpreter with TensorFlow (default: this one)")
    parser.add_argument("--role", choices=["compare", "cluster", "ps", "worker"],
                        default="compare", help=argparse.SUPPRESS)
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--cluster", help=argparse.SUPPRESS)
    parser.add_argument("--task_index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--barrier", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    impls = [i.strip() for i in args.impl.split(",") if i.strip()]
    if args.role == "ps":
        run_ps(impls[0], json.loads(args.cluster), args.task_index)
        return 0
    if args.role == "worker":
        out = run_worker(impls[0], args.workload, json.loads(args.cluster), args.task_index,
                         QUICK if args.quick else FULL, args.barrier)
        print(RESULT_MARK + json.dumps(out), flush=True)
        sys.stderr.flush()
        os._exit(0)   # TensorFlow's gRPC server threads would otherwise keep the process alive
    if args.role == "cluster":
        print(RESULT_MARK + json.dumps(run_cluster(impls[0], args.workload, args.quick)), flush=True)
        return 0
    if not impls or any(i not in ("tf", "zps") for i in impls):
        parser.error("--impl must be tf, zps or tf,zps")
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad:
        parser.error("unknown workload(s) %s; choose from %s" % (bad, ", ".join(WORKLOADS)))
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    tf_python = args.tf_python or sys.executable
    if "tf" in impls and not _has_tensorflow(tf_python):
        print(TF_VENV_HINT % (tf_python, ROOT), file=sys.stderr)
        return 2

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if "zps" in impls and "startup" in workloads:
        # As pip does when it installs a package (TensorFlow's modules are compiled in its
        # site-packages): a checkout run with PYTHONDONTWRITEBYTECODE=1 would otherwise compile
        # zps in every process of every round (0.5 -> 1.5 s to the first step on the 2-CPU VM).
        compileall.compile_dir(os.path.join(ROOT, "zps"), quiet=1)
    report = compare(impls, workloads, args.rounds, args.quick, tf_python, log)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
