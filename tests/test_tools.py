"""Smoke tests of the measurement tools: tools/compare_tf.py, tools/bench_scaling.py,
tools/bench_transfer.py and tools/bench_local.py."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "tools")
sys.path.insert(0, TOOLS)

import bench_scaling  # noqa: E402
import bench_transfer  # noqa: E402
import compare_tf  # noqa: E402


def _run(args, timeout):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get(
        "PYTHONPATH")])))
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def _has_tensorflow():
    return subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")).returncode == 0


def test_steady_rate_counts_steps_while_every_worker_trains():
    # Worker A trains from t=0 to 10, B from 5 to 20: the window is (5, 10].
    a = [float(t) for t in range(0, 11)]          # 11 steps, 5 of them in (5, 10]
    b = [5.0 + 0.5 * k for k in range(31)]        # 31 steps, 10 of them in (5, 10]
    assert compare_tf._steady_rate([a, b]) == pytest.approx(15 / 5.0)
    # One worker: its own rate after its first step.
    assert compare_tf._steady_rate([a]) == pytest.approx(10 / 10.0)
    # bench_scaling's window is set in advance: steps that ended in (t0, t1] only.
    assert bench_scaling._rate_between([a, b], 5.0, 10.0) == pytest.approx(15 / 5.0)
    assert bench_scaling._rate_between([a, b], 9.5, 10.0) == pytest.approx(2 / 0.5)
    # how evenly the workers shared that window: the fewest steps over the most
    assert bench_scaling._evenness([a, b], 5.0, 10.0) == pytest.approx(5 / 10)
    assert bench_scaling._evenness([a], 5.0, 10.0) == 1.0
    assert bench_scaling._evenness([a, b], 15.0, 20.0) == 0.0   # A had stopped
    assert bench_scaling._evenness([a], 30.0, 40.0) == 0.0      # nobody trained


def test_summarize_transfer_and_startup():
    r = compare_tf.summarize("transfer", [{"bytes": 2e9, "pull_s": [1.0, 2.0, 4.0],
                                           "push_s": [4.0, 4.0, 1.0]}], 0.0)
    assert r == {"pull_gbs": 1.0, "push_gbs": 0.5}
    r = compare_tf.summarize("startup", [{"ends": [3.5]}, {"ends": [4.0]}], 1.0)
    assert r == {"seconds": 2.5, "all_workers_s": 3.0}


def test_compare_tf_rejects_bad_arguments():
    r = _run([os.path.join(TOOLS, "compare_tf.py"), "--impl", "torch"], 60)
    assert r.returncode == 2 and "--impl must be tf, zps or tf,zps" in r.stderr
    r = _run([os.path.join(TOOLS, "compare_tf.py"), "--impl", "zps", "--workloads", "mnist"], 60)
    assert r.returncode == 2 and "unknown workload(s) ['mnist']" in r.stderr


@pytest.mark.skipif(_has_tensorflow(), reason="this interpreter has TensorFlow")
def test_compare_tf_says_how_to_get_tensorflow_when_missing():
    r = _run([os.path.join(TOOLS, "compare_tf.py"), "--impl", "tf,zps"], 60)
    assert r.returncode == 2
    assert "TensorFlow is not importable" in r.stderr
    assert "python -m venv /work/tfvenv && /work/tfvenv/bin/pip install tensorflow-cpu" in r.stderr


def test_bench_local_gpu_rows_on_the_stand_in():
    r = _run([os.path.join(TOOLS, "bench_local.py"), "--device", "gpu", "--fake-cupy", "--rounds",
              "1", "--steps", "1", "--gpu-batches", "8,16", "--json"], 120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    rows = report["mlp_gpu"]
    assert [row["batch"] for row in rows] == [8, 16] and all(row["stand_in"] for row in rows)
    for row in rows:   # the same start and batch: zps on /gpu:0 agrees with cupy by hand
        assert row["first_loss_zps_gpu"] == pytest.approx(row["first_loss_cupy"], rel=1e-5)
        assert row["adam_fused_ms"] > 0 and row["adam_generic_ms"] > 0
    r = _run([os.path.join(TOOLS, "bench_local.py"), "--device", "gpu", "--fake-cupy",
              "--gpu-batches", "128,x"], 60)
    assert r.returncode == 2 and "--gpu-batches takes positive integers" in r.stderr


def test_bench_scaling_rejects_bad_arguments():
    r = _run([os.path.join(TOOLS, "bench_scaling.py"), "--only", "size,gpu"], 60)
    assert r.returncode == 2 and "--only takes a subset of size,vars,workers" in r.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_compare_tf_quick_zps_runs_whole_clusters():
    r = _run([os.path.join(TOOLS, "compare_tf.py"), "--impl", "zps", "--quick", "--rounds", "1",
              "--workloads", "tiny,transfer", "--json"], 280)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    rows = {e["workload"]: e for e in report["results"]}
    assert set(rows) == {"tiny", "transfer pull", "transfer push", "tiny cpu"}
    for e in rows.values():
        assert "zps_error" not in e, e
        # CPU per step needs a window of >= MIN_CPU_S of CPU: --quick runs may be shorter.
        assert (e["workload"] == "tiny cpu" and e["zps"] is None) or e["zps"] > 0, e
    assert rows["tiny"]["unit"] == "steps/s"
    assert rows["tiny cpu"]["unit"] == "CPU ms/step" and rows["tiny cpu"]["higher_is_better"] is False
    assert rows["transfer pull"]["raw_zmq"] > 0
    assert report["impls"] == ["zps"] and report["quick"] is True


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_bench_scaling_quick_prints_all_three_tables():
    r = _run([os.path.join(TOOLS, "bench_scaling.py"), "--quick", "--json"], 380)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert [row["mb"] for row in report["size"]] == bench_scaling.QUICK["sizes_mb"]
    assert all(row["step_ms"] > 0 and row["raw_ms"] > 0 for row in report["size"])
    assert [row["variables"] for row in report["vars"]] == bench_scaling.QUICK["var_counts"]
    assert report["vars"][0]["vs_one"] == 1.0
    assert [row["workers"] for row in report["workers"]] == bench_scaling.QUICK["workers"]
    assert max(row["vs_best"] for row in report["workers"]) == 1.0
    assert all(0.0 <= row["evenness"] <= 1.0 for row in report["workers"])
    assert report["workers"][0]["evenness"] == 1.0   # one worker


def test_cpu_sampler_interpolates_per_role_and_refuses_windows_it_did_not_see():
    s = compare_tf._CpuSampler()
    s._samples = [(10.0, {"ps": 0.0, "worker": 1.0}), (11.0, {"ps": 0.5, "worker": 2.0}),
                  (12.0, {"ps": 1.5, "worker": 2.0})]
    assert s.used(10.5, 11.5) == pytest.approx({"ps": 0.75, "worker": 0.5})
    assert s.used(11.0, 12.3) == pytest.approx({"ps": 1.0, "worker": 0.0})   # ended after 12
    assert s.used(9.0, 11.0) is None       # before the first sample
    assert compare_tf._CpuSampler().used(0.0, 1.0) is None


def test_bench_transfer_apply_alone_times_the_add_of_the_payload():
    assert 0 < bench_transfer.apply_alone(4 << 20, 3) < 1.0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bench_transfer_small_payload_reports_ratios_and_the_apply():
    r = _run([os.path.join(TOOLS, "bench_transfer.py"), "--mb", "4", "--repeats", "3", "--tiny",
              "20", "--json"], 280)
    assert r.returncode == 0, r.stderr[-3000:]   # it also checks that no push was lost
    report = json.loads(r.stdout)
    for key in ("pull_ratio", "push_ratio", "tiny_in_round_trips", "push_apply_alone_ms",
                "push_ratio_vs_raw_plus_apply"):
        assert report[key] > 0, (key, report)
    assert report["payload_mb"] == 4 and report["raw_allocator_tuned"] is False
