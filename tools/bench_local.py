"""Local (single-process) performance of zps against hand-written numpy, in the same run.

    python tools/bench_local.py                 # table
    python tools/bench_local.py --json          # machine-readable
    python tools/bench_local.py --device gpu    # (b) on /gpu:0 vs cupy by hand, and vs the CPU

(a) executor overhead: microseconds per op over a long chain of tiny (scalar) adds;
(b) one training step of an MLP 784-512-512-10 at batch 128 (relu, softmax cross-entropy, SGD):
    zps vs the same forward/backward/update written by hand in numpy. Rounds alternate between
    the two so that machine noise hits both alike; medians are reported. Target: ratio <= 1.15.
    With ``--device gpu`` the MLP also runs with the model under ``tf.device('/gpu:0')`` (cupy)
    against the same step written by hand in cupy, fed from host arrays alike, at the batch sizes
    of ``--gpu-batches`` (default 128 and 4096), and with Adam, its updates fused (one kernel
    each) and not; ``--fake-cupy`` runs that path on zps.testing.fake_cupy (numpy), which says
    so: its figures are not GPU ones. Each step's loss is taken to the host, as ``sess.run``
    returns a fetch.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import zps as tf

LAYERS = (784, 512, 512, 10)


def bench_op_overhead(chain=1000, repeats=30):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        t = x
        for _ in range(chain):
            t = t + 1.0
        with tf.Session() as sess:
            sess.run(t, {x: 0.0})
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                sess.run(t, {x: 0.0})
                times.append(time.perf_counter() - start)
    return statistics.median(times) / chain * 1e6


def _init_params(rng):
    params = []
    for fan_in, fan_out in zip(LAYERS[:-1], LAYERS[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


class NumpyMLP:
    """The reference: forward, backward and SGD for the MLP, written directly in numpy (or in
    cupy: ``xp=cupy``, the parameters on the GPU, each batch copied there as zps copies a feed)."""

    def __init__(self, params, lr, xp=np):
        self.xp = xp
        self.params = [xp.asarray(p).copy() for p in params]
        self.lr = np.float32(lr)

    def step(self, x, labels):
        xp = self.xp
        x, labels = xp.asarray(x), xp.asarray(labels)
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = xp.maximum(x @ w1 + b1, 0)
        h2 = xp.maximum(h1 @ w2 + b2, 0)
        logits = h2 @ w3 + b3
        z = logits - logits.max(axis=1, keepdims=True)
        e = xp.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        n = x.shape[0]
        rows = xp.arange(n)
        loss = -xp.log(p[rows, labels]).mean()
        d3 = p
        d3[rows, labels] -= 1
        d3 /= n
        g_w3, g_b3 = h2.T @ d3, d3.sum(0)
        d2 = (d3 @ w3.T) * (h2 > 0)
        g_w2, g_b2 = h1.T @ d2, d2.sum(0)
        d1 = (d2 @ w2.T) * (h1 > 0)
        g_w1, g_b1 = x.T @ d1, d1.sum(0)
        for param, grad in zip(self.params, (g_w1, g_b1, g_w2, g_b2, g_w3, g_b3)):
            param -= self.lr * grad
        return loss


class ZpsMLP:
    """The same model as a TF1 graph run by a local zps Session."""

    def __init__(self, params, lr, device=None, optimizer=None):
        self.graph = tf.Graph()
        with self.graph.as_default(), tf.device(device):
            self.x = tf.placeholder(tf.float32, [None, LAYERS[0]])
            self.labels = tf.placeholder(tf.int64, [None])
            variables = [tf.Variable(p) for p in params]
            h = self.x
            for i in range(0, len(variables), 2):
                h = tf.matmul(h, variables[i]) + variables[i + 1]
                if i + 2 < len(variables):
                    h = tf.nn.relu(h)
            self.loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=self.labels, logits=h))
            opt = (optimizer or tf.train.GradientDescentOptimizer)(lr)
            self.train_op = opt.minimize(self.loss)
            self.sess = tf.Session()
            self.sess.run(tf.global_variables_initializer())

    def step(self, x, labels):
        return self.sess.run([self.loss, self.train_op], {self.x: x, self.labels: labels})[0]


def _median_step_times(impls, x, labels, steps, rounds):
    """Median seconds per step of each implementation, rounds alternating between them. Each
    step's loss is taken to the host, as ``sess.run`` returns a fetch (for a GPU implementation
    a device sync per step, as in a training loop that logs its loss)."""
    times = {name: [] for name in impls}
    for _ in range(rounds):
        for name, impl in impls.items():
            start = time.perf_counter()
            for _ in range(steps):
                float(impl.step(x, labels))
            times[name].append((time.perf_counter() - start) / steps)
    return {name: statistics.median(t) for name, t in times.items()}


def bench_mlp(batch=128, steps=20, rounds=7, lr=0.01, seed=0):
    rng = np.random.default_rng(seed)
    params = _init_params(rng)
    x = rng.standard_normal((batch, LAYERS[0])).astype(np.float32)
    labels = rng.integers(0, LAYERS[-1], batch)
    impls = {"numpy": NumpyMLP(params, lr), "zps": ZpsMLP(params, lr)}
    # Same start, same batch: the two implementations must agree on the loss.
    losses = {name: float(impl.step(x, labels)) for name, impl in impls.items()}
    med = _median_step_times(impls, x, labels, steps, rounds)
    return {
        "numpy_ms": med["numpy"] * 1e3,
        "zps_ms": med["zps"] * 1e3,
        "ratio": med["zps"] / med["numpy"],
        "first_loss_numpy": losses["numpy"],
        "first_loss_zps": losses["zps"],
    }


def bench_mlp_gpu(batch=128, steps=20, rounds=7, lr=0.01, seed=0):
    """The MLP step with the model on /gpu:0 vs the same step by hand in cupy (and vs zps on the
    CPU in the same run): the GPU's speed-up and zps's overhead on it."""
    import cupy
    rng = np.random.default_rng(seed)
    params = _init_params(rng)
    x = rng.standard_normal((batch, LAYERS[0])).astype(np.float32)
    labels = rng.integers(0, LAYERS[-1], batch)
    impls = {"cupy": NumpyMLP(params, lr, xp=cupy), "zps_gpu": ZpsMLP(params, lr, "/gpu:0"),
             "zps_cpu": ZpsMLP(params, lr),
             # Adam on /gpu:0 with its updates fused (one kernel each) and done the generic way
             "adam_fused": _FusedUpdates(ZpsMLP(params, 1e-3, "/gpu:0", tf.train.AdamOptimizer),
                                         True),
             "adam_generic": _FusedUpdates(ZpsMLP(params, 1e-3, "/gpu:0",
                                                  tf.train.AdamOptimizer), False)}
    losses = {name: float(impl.step(x, labels)) for name, impl in impls.items()}
    med = _median_step_times(impls, x, labels, steps, rounds)
    return {
        "adam_fused_ms": med["adam_fused"] * 1e3,
        "adam_generic_ms": med["adam_generic"] * 1e3,
        "batch": batch,
        "stand_in": bool(getattr(cupy, "IS_FAKE", False)),
        "cupy_ms": med["cupy"] * 1e3,
        "zps_gpu_ms": med["zps_gpu"] * 1e3,
        "zps_cpu_ms": med["zps_cpu"] * 1e3,
        "ratio_vs_cupy": med["zps_gpu"] / med["cupy"],
        "speedup_vs_cpu": med["zps_cpu"] / med["zps_gpu"],
        "first_loss_cupy": losses["cupy"],
        "first_loss_zps_gpu": losses["zps_gpu"],
    }


class _FusedUpdates:
    """An implementation stepped with the GPU's optimizer updates fused or not
    (``cupy_kernels.FUSED_UPDATES``)."""

    def __init__(self, impl, fused):
        from zps.ops import cupy_kernels
        self.impl, self.fused, self._ck = impl, fused, cupy_kernels

    def step(self, x, labels):
        saved, self._ck.FUSED_UPDATES = self._ck.FUSED_UPDATES, self.fused
        try:
            return self.impl.step(x, labels)
        finally:
            self._ck.FUSED_UPDATES = saved


def _gpu_table(gpu):
    b = "b%d" % gpu["batch"]
    print("%-44s %9.2f ms" % ("MLP %s step, cupy by hand (GPU)" % b, gpu["cupy_ms"]))
    print("%-44s %9.2f ms" % ("MLP %s step, zps on /gpu:0" % b, gpu["zps_gpu_ms"]))
    print("%-44s %9.2f ms" % ("MLP %s step, zps on the CPU" % b, gpu["zps_cpu_ms"]))
    print("%-44s %9.3f x" % ("%s zps on /gpu:0 / cupy by hand" % b, gpu["ratio_vs_cupy"]))
    print("%-44s %9.2f x" % ("%s speed-up of /gpu:0 over the CPU (zps)" % b,
                             gpu["speedup_vs_cpu"]))
    print("%-44s %9.4f / %.4f" % ("%s first-step loss cupy / zps on /gpu:0" % b,
                                  gpu["first_loss_cupy"], gpu["first_loss_zps_gpu"]))
    print("%-44s %9.2f ms" % ("%s Adam step on /gpu:0, fused updates" % b, gpu["adam_fused_ms"]))
    print("%-44s %9.2f ms" % ("%s Adam step on /gpu:0, generic updates" % b,
                              gpu["adam_generic_ms"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description="zps local benchmarks")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="gpu: also run the MLP on /gpu:0 (needs cupy and a GPU)")
    parser.add_argument("--fake-cupy", action="store_true",
                        help="with --device gpu: use zps.testing.fake_cupy (no GPU needed; "
                        "checks the path, measures nothing about GPUs)")
    parser.add_argument("--gpu-batches", default="128,4096", metavar="N,N",
                        help="with --device gpu: the batch sizes of the GPU-vs-CPU MLP rows "
                        "(default 128,4096: a small step is launch-bound, a large one shows "
                        "the GPU's arithmetic)")
    args = parser.parse_args(argv)
    try:
        gpu_batches = [int(b) for b in args.gpu_batches.split(",")]
    except ValueError:
        gpu_batches = []
    if not gpu_batches or min(gpu_batches) < 1:
        parser.error("--gpu-batches takes positive integers separated by commas, got %r"
                     % args.gpu_batches)
    gpu = None
    if args.device == "gpu":
        if args.fake_cupy:
            from zps.testing import fake_cupy
            fake_cupy.install(num_gpus=1)
        from zps.framework.device import gpu_unavailable_reason
        why = gpu_unavailable_reason(0)
        if why is not None:
            parser.error("--device gpu: %s (pass --fake-cupy to try the path on the stand-in)"
                         % why)
        gpu = [bench_mlp_gpu(batch=b, steps=args.steps, rounds=args.rounds)
               for b in gpu_batches]
    overhead = bench_op_overhead()
    mlp = bench_mlp(steps=args.steps, rounds=args.rounds)
    result = {"op_overhead_us": overhead, "mlp": mlp}
    if gpu is not None:
        result["mlp_gpu"] = gpu
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return result
    print("%-44s %12s" % ("benchmark", "value"))
    print("-" * 57)
    print("%-44s %9.2f us" % ("executor overhead per op (chain of 1000)", overhead))
    print("%-44s %9.2f ms" % ("MLP 784-512-512-10 b128 step, numpy by hand", mlp["numpy_ms"]))
    print("%-44s %9.2f ms" % ("MLP 784-512-512-10 b128 step, zps", mlp["zps_ms"]))
    print("%-44s %9.3f x  (target <= 1.15)" % ("zps / numpy", mlp["ratio"]))
    print("%-44s %9.4f / %.4f" % ("first-step loss numpy / zps", mlp["first_loss_numpy"],
                                  mlp["first_loss_zps"]))
    if gpu and gpu[0]["stand_in"]:
        print("NOTE: cupy is zps.testing.fake_cupy, a numpy stand-in: the GPU rows below ran on "
              "the CPU and are no GPU measurement")
    for row in gpu or ():
        _gpu_table(row)
    return result


if __name__ == "__main__":
    main()
