#!/usr/bin/env bash
# The GPU proof of issue 8 in one short script, for a machine with an NVIDIA GPU and cupy:
#   1. the op test suite's GPU cases (tests/ops/test_gpu_ops.py) against real cupy, vs numpy;
#   2. a 2-ps + 1-GPU-worker training run (zps-launch --gpus-per-worker 1): it must converge;
#   3. tools/bench_local.py --device gpu: the MLP step on /gpu:0 vs cupy by hand and vs the CPU.
# Each part prints its figures; the last line says which parts passed.
#
#   bash tools/gpu_check.sh --prepare   # on the dev machine: wheels the device lacks, into .whl/
#   bash tools/gpu_check.sh             # on the GPU machine (device run with carry [".whl"])
#   bash tools/gpu_check.sh --fake      # anywhere: the same path on zps.testing.fake_cupy
#
# The device machine has no network: cupy (cupy-cuda13x) is there, pyzmq is not, so --prepare
# downloads pyzmq for its Python 3.12; this script installs .whl/*.whl into /tmp/site first.
set -u
cd "$(dirname "$0")/.."
MODE=${1:-gpu}
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || PY=python

if [ "$MODE" = "--prepare" ]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    mkdir -p .whl
    exec "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "pyzmq==27.*"
fi

export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
# On the device machine $OUT comes back: keep the whole log and the op cases' report there.
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    exec > >(tee "$OUT/gpu_check.log") 2>&1
fi
FAKE=()
[ "$MODE" = "--fake" ] && FAKE=(--fake-cupy)
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
PASSED=(); FAILED=()
record() { if [ "$1" -eq 0 ]; then PASSED+=("$2"); else FAILED+=("$2"); fi; }

step "environment"
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: none"
if [ ${#FAKE[@]} -eq 0 ] && ! "$PY" -c "import cupy" 2>/dev/null; then
    "$PY" -m pip install -q --retries 0 --timeout 10 cupy-cuda12x || echo "cupy is missing and could not be installed"
fi
"$PY" - "${FAKE[@]}" <<'EOF'
import sys
import numpy
if "--fake-cupy" in sys.argv:
    from zps.testing import fake_cupy
    fake_cupy.install(num_gpus=1)
import cupy
from zps.framework.device import gpu_unavailable_reason, visible_gpu_count
print("python", sys.version.split()[0], "numpy", numpy.__version__, "cupy", cupy.__version__,
      "(STAND-IN)" if getattr(cupy, "IS_FAKE", False) else "", "GPUs", visible_gpu_count())
try:
    import zmq
    print("pyzmq", zmq.__version__)
except ImportError:
    print("pyzmq MISSING: run `bash tools/gpu_check.sh --prepare` here and carry .whl")
why = gpu_unavailable_reason(0)
print("GPU:0", "usable" if why is None else "NOT usable: " + why)
EOF

step "1. op cases on the GPU vs numpy (tests/ops/test_gpu_ops.py)"
if [ ${#FAKE[@]} -eq 0 ]; then export ZPS_GPU_TESTS=real; fi
# -W default: a warning from cupy itself (e.g. about its CUDA paths) is shown in the summary, not
# turned into a failure by setup.cfg's filterwarnings = error; the results are still compared.
timeout 420 "$PY" -m pytest tests/ops/test_gpu_ops.py -q -p no:cacheprovider --maxfail=20 \
    -W default --durations=5 ${OUT:+--junitxml=$OUT/gpu_ops.xml} 2>&1 | tail -40
record "${PIPESTATUS[0]}" "gpu-op-cases"
unset ZPS_GPU_TESTS

step "2. 2 ps + 1 GPU worker training run (zps-launch --gpus-per-worker 1)"
TRAINER=$(mktemp /tmp/zps_gpu_trainer_XXXX.py)
cat > "$TRAINER" <<'EOF'
"""Between-graph training, variables on 2 ps tasks, the model on the worker's /gpu:0."""
import argparse
import sys
import time

import numpy as np

p = argparse.ArgumentParser()
for flag in ("--ps_hosts", "--worker_hosts", "--job_name"):
    p.add_argument(flag)
p.add_argument("--task_index", type=int)
p.add_argument("--steps", type=int, default=400)
p.add_argument("--fake-cupy", action="store_true")
FLAGS, _ = p.parse_known_args()
if FLAGS.fake_cupy and FLAGS.job_name == "worker":
    from zps.testing import fake_cupy
    fake_cupy.install(num_gpus=1)
import zps as tf  # noqa: E402

cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                "worker": FLAGS.worker_hosts.split(",")})
server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
if FLAGS.job_name == "ps":
    server.join()
rng = np.random.default_rng(0)
centers = rng.standard_normal((10, 64)).astype(np.float32) * 1.5
y_all = rng.integers(0, 10, 8192)
x_all = (centers[y_all] + rng.standard_normal((8192, 64)).astype(np.float32)).astype(np.float32)
worker = "/job:worker/task:%d" % FLAGS.task_index
# Variables on the ps tasks (replica_device_setter), the model and its gradients on the worker's
# GPU, as TF1's multi-GPU trainers do.
with tf.device(tf.train.replica_device_setter(worker_device=worker, cluster=cluster)):
    params = []
    for i, (fan_in, units) in enumerate(((64, 256), (256, 256), (256, 10))):
        with tf.variable_scope("layer%d" % i):
            params.append((tf.get_variable("w", [fan_in, units]),
                           tf.get_variable("b", [units], initializer=tf.zeros_initializer())))
    global_step = tf.train.get_or_create_global_step()
with tf.device(worker + "/device:GPU:0"):
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = x
    for i, (w, b) in enumerate(params):
        h = tf.matmul(h, w) + b
        h = tf.nn.relu(h) if i < 2 else h
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(h, 1), labels), tf.float32))
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)
print("placement: loss on %s, w on %s" % (loss.device, w.device), flush=True)
hooks = [tf.train.StopAtStepHook(last_step=FLAGS.steps)]
losses, times = [], []
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=True, hooks=hooks) as sess:
    while not sess.should_stop():
        idx = rng.integers(0, len(x_all), 256)
        start = time.perf_counter()
        _, value = sess.run([train_op, loss], {x: x_all[idx], labels: y_all[idx]})
        times.append(time.perf_counter() - start)
        losses.append(float(value))
with tf.Session(server.target) as sess:
    acc = sess.run(accuracy, {x: x_all[:2048], labels: y_all[:2048]})
import cupy  # noqa: E402
used = "stand-in, %d kernels run" % sys.modules["zps.testing.fake_cupy"].stats["kernels"] \
    if getattr(cupy, "IS_FAKE", False) else \
    "%d MiB in cupy's pool" % (cupy.get_default_memory_pool().total_bytes() >> 20)
steady = sorted(times[10:])[len(times[10:]) // 2] if len(times) > 20 else float("nan")
print("GPU_TRAIN steps=%d first_loss=%.4f last_loss=%.4f accuracy=%.4f median_step_ms=%.2f "
      "gpu_memory=%s" % (len(losses), losses[0], np.mean(losses[-20:]), acc, steady * 1e3, used))
if not (np.mean(losses[-20:]) < 0.5 * losses[0] and acc > 0.9):
    raise SystemExit("GPU_TRAIN did not converge")
EOF
timeout 300 "$PY" -m zps.cli.launch --ps 2 --workers 1 --gpus-per-worker 1 \
    ${FAKE[@]:+--gpus 0} --progress_secs 0 "$TRAINER" "${FAKE[@]}" 2>&1 | tail -12
record "${PIPESTATUS[0]}" "train-2ps-1gpu-worker"
rm -f "$TRAINER"

step "3. tools/bench_local.py --device gpu"
timeout 300 "$PY" tools/bench_local.py --device gpu "${FAKE[@]}"
record $? "bench-local-gpu"

echo
echo "GPU_CHECK passed: ${PASSED[*]:-none}; failed: ${FAILED[*]:-none}"
[ ${#FAILED[@]} -eq 0 ]
