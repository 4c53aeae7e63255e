"""zps-launch's process lifecycle: its output closing, hang-up and kill -9 of the launcher, the
children a task leaves behind, and what it says when a ps or a --chief task dies.

The tasks here are tiny scripts (no zps import, a fake ps that only accepts connections on its
port, which is all zps-launch waits for), so each run takes a second or two.
"""

import os
import signal
import subprocess
import textwrap
import time

import pytest

from tests.cli import alive, cli, kill_pids, running, wait_for_files

TASK = textwrap.dedent("""
    import argparse, os, socket, subprocess, sys, time

    p = argparse.ArgumentParser()
    for flag in ("--ps_hosts", "--worker_hosts", "--job_name", "--mode", "--dir"):
        p.add_argument(flag)
    p.add_argument("--task_index", type=int)
    FLAGS, _ = p.parse_known_args()
    name = os.path.join(FLAGS.dir, "%s%d" % (FLAGS.job_name, FLAGS.task_index))

    def note(path, text):   # renamed into place: a reader never sees half a file
        with open(path + ".tmp", "w") as f:
            f.write(str(text))
        os.rename(path + ".tmp", path)

    if FLAGS.job_name == "ps":   # serves its port, as a ps does, until it is stopped
        host, port = FLAGS.ps_hosts.split(",")[FLAGS.task_index].rsplit(":", 1)
        server = socket.create_server((host, int(port)))
        note(name + ".pid", os.getpid())
        while True:
            server.accept()[0].close()
    if FLAGS.mode == "crash_once" and not os.path.exists(name + ".crashed"):
        note(name + ".crashed", os.getpid())
        sys.exit(1)
    note(name + ".pid", os.getpid())
    if FLAGS.mode == "chatty":     # far more than a pipe holds, then wait to be stopped
        for i in range(5000):
            print("line %d %s" % (i, "x" * 60), flush=True)
        time.sleep(120)
    elif FLAGS.mode == "leak":     # a helper the script forgets to reap
        note(name + ".child.pid", subprocess.Popen(["sleep", "97"]).pid)
        print("worker done", flush=True)
    elif FLAGS.mode == "parent":   # a child of its own (a data loader's, say), then trains on
        note(name + ".child.pid", subprocess.Popen(["sleep", "97"]).pid)
        time.sleep(120)
    elif FLAGS.mode in ("sleep", "crash_once"):
        time.sleep(120)
    elif FLAGS.mode == "seed_style":   # builds its cluster from the seed's flags only
        from zps.distributed.cluster_spec import ClusterSpec
        cluster = ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                               "worker": FLAGS.worker_hosts.split(",")})
        print("my address", cluster.task_address(FLAGS.job_name, FLAGS.task_index))
""")


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "task.py"
    path.write_text(TASK)
    yield str(path)
    kill_pids(str(tmp_path))


def _launch(task, tmp_path, mode, *flags, ps=1, workers=1):
    return cli("launch", "--ps", ps, "--workers", workers, "--progress_secs", 0, *flags,
               task, "--mode", mode, "--dir", tmp_path)


def _pids(tmp_path):
    return {p.name[:-len(".pid")]: int(p.read_text()) for p in tmp_path.glob("*.pid")}


def _wait_gone(pids, timeout=10):
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_closed_output_stops_the_job_instead_of_hanging(task, tmp_path):
    # zps-launch ... | head -2: once head has gone, the tasks are stopped (exit 141, as a
    # process killed by SIGPIPE); before, the copying thread died and the task blocked forever.
    with running(_launch(task, tmp_path, "chatty", ps=0)) as proc:
        assert proc.stdout.readline().startswith("[worker:0] line 0 ")
        assert proc.stdout.readline().startswith("[worker:0] line 1 ")
        proc.stdout.close()
        proc.wait(timeout=20)
        err = proc.stderr.read()
    assert proc.returncode == 128 + signal.SIGPIPE, err
    assert "interrupted (SIGPIPE: the output was closed)" in err and "stopped every task" in err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert not _wait_gone(_pids(tmp_path).values())


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_hang_up_stops_everything_like_sigterm(task, tmp_path):
    with running(_launch(task, tmp_path, "sleep")) as proc:
        wait_for_files([str(tmp_path / n) for n in ("ps0.pid", "worker0.pid")])
        proc.send_signal(signal.SIGHUP)    # the terminal was closed
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGHUP, err
    assert "interrupted (SIGHUP)" in err and "stopped every task" in err
    assert not _wait_gone(_pids(tmp_path).values())


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_tasks_die_with_a_killed_launcher_restarted_ones_too(task, tmp_path):
    # worker:0 fails once and is restarted (by the same thread as the first start: a task's
    # parent-death signal fires when the thread that started it ends); then kill -9 zps-launch.
    with running(_launch(task, tmp_path, "crash_once", "--restart", "--restart_backoff_secs", 0)) \
            as proc:
        wait_for_files([str(tmp_path / n) for n in ("ps0.pid", "worker0.pid")])
        proc.kill()
        proc.wait(timeout=10)
    assert (tmp_path / "worker0.crashed").exists()
    pids = _pids(tmp_path)
    assert set(pids) == {"ps0", "worker0"}
    assert not _wait_gone(pids.values()), "tasks outlived their launcher"


def _guards_of(launcher_pid):
    """Pids of zps/cli/guard.py processes started by zps-launch ``launcher_pid``."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"guard.py") for a in argv) and str(launcher_pid).encode() in argv:
            found.append(int(name))
    return found


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_what_tasks_started_dies_with_a_killed_launcher_and_the_guard_ends(task, tmp_path):
    # kill -9 zps-launch: the tasks die by their parent-death signal; the sleep a worker started
    # is stopped by the guard, which then exits.
    with running(_launch(task, tmp_path, "parent", workers=2)) as proc:
        wait_for_files([str(tmp_path / n) for n in ("ps0.pid", "worker0.child.pid",
                                                     "worker1.child.pid")])
        assert len(_guards_of(proc.pid)) == 1
        proc.kill()
        proc.wait(timeout=10)
    pids = _pids(tmp_path)
    assert set(pids) == {"ps0", "worker0", "worker1", "worker0.child", "worker1.child"}
    assert not _wait_gone(pids.values()), "processes outlived their launcher"
    deadline = time.monotonic() + 10
    while _guards_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _guards_of(proc.pid), "the guard outlived its job"


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_children_a_task_left_behind_are_stopped_at_once(task, tmp_path):
    with running(_launch(task, tmp_path, "leak", ps=0)) as proc:
        assert proc.stdout.readline() == "[worker:0] worker done\n"
        done = time.monotonic()
        proc.wait(timeout=30)
        took = time.monotonic() - done
        err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert not _wait_gone([_pids(tmp_path)["worker0.child"]], timeout=2), "sleep 97 left running"
    # The child holds the task's output pipe open: zps-launch must not wait on it (it did, 5 s).
    assert took < 3, "zps-launch took %.1f s to end after its only worker" % took
    assert not _guards_of(proc.pid), "a normal end leaves no guard running"


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_ps_killed_by_a_signal_suggests_restart_not_server_join(task, tmp_path):
    with running(_launch(task, tmp_path, "sleep")) as proc:
        wait_for_files([str(tmp_path / n) for n in ("ps0.pid", "worker0.pid")])
        signal_ps = _pids(tmp_path)["ps0"]
        subprocess.run(["kill", "-KILL", str(signal_ps)], check=True, timeout=10)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1, err
    last = err.splitlines()[-1]
    assert "ps:0 was killed by signal SIGKILL while workers were running" in last, err
    assert "--restart" in last and "server.join()" not in last, last


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_chief_with_a_seed_style_script_says_it_needs_tf_config(task, tmp_path):
    with running(_launch(task, tmp_path, "seed_style", "--chief", workers=2)) as proc:
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "[chief:0] ValueError: No such job in cluster: 'chief'" in out, out
    last = err.splitlines()[-1]
    assert "chief:0 exited with code 1" in last
    assert "--chief" in last and "TF_CONFIG" in last and "no chief" in last, last
