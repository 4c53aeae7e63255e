"""zps/cli/guard.py: the groups it follows from zps-launch's lines, and how it stops them."""

import subprocess
import sys
import time

import pytest

from tests.cli import alive
from zps.cli import guard


def test_follows_started_and_stopped_groups_and_ignores_junk():
    assert guard.watch(["+11\n", "+12\n", "-11\n", "+x\n", "12\n", "\n", "+13"], 1.0) == {12, 13}
    assert guard.watch(["+11\n", "exit\n", "+12\n"], 1.0) == set()   # a normal end
    assert guard.watch([], 1.0) == set()


def _group(code):
    """A Python process leading a new process group, running ``code``; ready once it printed."""
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.timeout(30)
def test_stops_each_group_with_sigterm_then_sigkill_after_the_grace_period():
    polite = _group("import time; print('ready', flush=True); time.sleep(60)")
    stubborn = _group("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                      "print('ready', flush=True); time.sleep(60)")
    try:
        start = time.monotonic()
        guard.stop_groups([polite.pid, stubborn.pid, 2 ** 22 + 7], grace_secs=0.5)  # + no group
        took = time.monotonic() - start
        assert polite.wait(timeout=10) == -15 and stubborn.wait(timeout=10) == -9
        assert 0.4 < took < 5, took
        assert not alive(polite.pid) and not alive(stubborn.pid)
    finally:
        for p in (polite, stubborn):
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
