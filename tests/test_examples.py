"""Every example in examples/ runs to completion and reaches what its docstring promises."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _run(name, *args):
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_train_digits_reaches_95_percent():
    out = _run("train_digits.py")
    accuracy = float(re.search(r"final test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy >= 0.95


def test_hello_distributed():
    assert "b'Hello, distributed TensorFlow!'" in _run("hello_distributed.py")


def test_placement_learns():
    out = _run("placement.py", "--steps", "150")
    last = out.strip().splitlines()[-1]
    assert float(re.search(r"accuracy ([0-9.]+)", last).group(1)) >= 0.95


def test_in_graph_replication_recovers_the_weights():
    out = _run("in_graph_replication.py", "--steps", "100")
    err = float(re.search(r"max \|w - true_w\| = ([0-9.]+)", out).group(1))
    assert err < 1e-2


def _launch(tmp_path, *args):
    cmd = [sys.executable, "-m", "zps.cli.launch", "--ps", "2", "--workers", "2",
           str(EXAMPLES / "trainer.py"), "--checkpoint_dir", str(tmp_path / "ckpt"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    accuracies = [float(a) for a in re.findall(r"held-out accuracy ([0-9.]+)", proc.stdout)]
    assert len(accuracies) == 2, proc.stdout[-2000:]
    return accuracies, tmp_path / "ckpt"


def test_seed_trainer_async_on_a_launched_cluster(tmp_path):
    accuracies, ckpt = _launch(tmp_path, "--train_steps", "800")
    assert min(accuracies) >= 0.93
    assert (ckpt / "checkpoint").exists()


def test_seed_trainer_sync_on_a_launched_cluster(tmp_path):
    accuracies, _ = _launch(tmp_path, "--train_steps", "400", "--sync")
    assert min(accuracies) >= 0.90
