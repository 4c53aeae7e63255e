"""Tests of the zps command-line launchers; helpers to run them as child processes."""

import contextlib
import os
import signal
import subprocess
import sys
import time


def cli(command, *args):
    """The command line of ``zps-<command>`` (as ``python -m``, so no PATH is needed)."""
    return [sys.executable, "-m", "zps.cli." + command] + [str(a) for a in args]


@contextlib.contextmanager
def running(cmd, env=None):
    """A child process with captured text output; SIGTERM then SIGKILL at exit if still running."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env=None if env is None else dict(os.environ, **env))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        proc.communicate()


def run(cmd, timeout=60, env=None):
    """Run ``cmd`` to the end: ``(returncode, stdout, stderr)``."""
    with running(cmd, env=env) as proc:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err


def alive(pid):
    """Whether process ``pid`` still runs. A zombie does not: an orphan that died waits for an
    init that may never reap it (as in some containers)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")   # gone, unless there is no /proc at all


def wait_for_files(paths, timeout=30):
    deadline = time.monotonic() + timeout
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            raise TimeoutError("not written within %d s: %s" % (timeout, paths))
        time.sleep(0.05)


def kill_pids(directory):
    """SIGKILL every pid written to ``directory/*.pid`` that is still alive (teardown)."""
    for name in os.listdir(directory):
        if name.endswith(".pid"):
            with open(os.path.join(directory, name)) as f:
                text = f.read().strip()
            if text.isdigit() and alive(int(text)):
                os.kill(int(text), signal.SIGKILL)
