"""zps-launch --gpus-per-worker: each worker task gets its own CUDA_VISIBLE_DEVICES slice."""

import textwrap

import pytest

from zps.cli import launch
from zps.cli.launch import Launcher
from zps.testing import fake_cupy

SCRIPT = textwrap.dedent("""
    import os, sys
    job = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--job_name=")][0]
    print("visible", job, repr(os.environ.get("CUDA_VISIBLE_DEVICES")))
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "show_gpus.py"
    path.write_text(SCRIPT)
    return str(path)


def test_each_worker_gets_its_own_slice(script):
    launcher = Launcher(script, num_ps=1, num_workers=2)
    assert launcher.assign_gpus(2, ["0", "1", "2", "3", "4"]) == {"worker:0": "0,1", "worker:1": "2,3"}
    assert launcher.gpu_env(launcher.workers[1]) == {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert launcher.gpu_env(launcher.ps[0]) == {"CUDA_VISIBLE_DEVICES": ""}   # ps: CPU only
    assert Launcher(script, num_workers=2).assign_gpus(0) == {}   # off: environment untouched


def test_default_gpus_come_from_cuda_visible_devices(script, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert Launcher(script, num_workers=2).assign_gpus(1) == {"worker:0": "4", "worker:1": "6"}


def test_default_gpus_are_the_ones_cupy_sees(script, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=2):
        assert Launcher(script, num_workers=2).assign_gpus(1) == {"worker:0": "0", "worker:1": "1"}


def test_not_enough_gpus_is_a_clear_error(script, monkeypatch):
    launcher = Launcher(script, num_workers=3)
    with pytest.raises(ValueError, match=r"--gpus-per-worker 2 for 3 worker\(s\) needs 6 GPU\(s\), "
                       r"but only 4 are available \(0,1,2,3 from --gpus\)"):
        launcher.assign_gpus(2, "0,1,2,3".split(","))
    with pytest.raises(ValueError, match="lists a GPU twice"):
        launcher.assign_gpus(1, ["0", "1", "1"])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.hidden(), pytest.raises(ValueError, match="no GPU is visible"):
        launcher.assign_gpus(1)


def test_cli_error_exits_2(script, capsys):
    assert launch.main(["--workers", "2", "--gpus-per-worker", "1", "--gpus", "0", script]) == 2
    assert "needs 2 GPU(s), but only 1 is available" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_tasks_see_their_slices(script, capfd):
    code = launch.main(["--ps", "1", "--ps_script", "--workers", "2", "--gpus-per-worker", "1",
                        "--gpus", "3,5", "--progress_secs", "0", script])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "[worker:0] visible worker '3'" in out and "[worker:1] visible worker '5'" in out
    assert "GPUs (CUDA_VISIBLE_DEVICES): worker:0=3, worker:1=5; ps tasks: none" in err
