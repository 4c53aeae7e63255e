"""zps-launch's guard: stops the process groups of its tasks if zps-launch itself dies.

A task dies with zps-launch through its parent-death signal (SIGKILL, see launch.py), but the
processes *it* started do not: a data loader's children, a ``subprocess`` it forgot. zps-launch
starts this script (by path, without importing zps: it must start fast and stay small) in a
session of its own, so that a signal to zps-launch's terminal or process group does not reach
it, and tells it on its standard input which process groups to look after:

    +PGID    a task was started as the leader of group PGID
    -PGID    that group is gone (zps-launch stopped and reaped it)
    exit     zps-launch is ending normally: nothing to do

At end of input without ``exit`` (zps-launch was killed: the kernel closed its end of the pipe),
every group still on the list gets SIGTERM, and SIGKILL after the grace period if it still
runs. Usage: ``python guard.py LAUNCHER_PID GRACE_SECS`` (the pid only names it in ``ps``).
"""

import os
import signal
import sys
import time

POLL_INTERVAL_S = 0.05


def _signal(pgids, sig):
    """Signal each group; the ones that no longer exist are dropped from ``pgids``."""
    for pgid in list(pgids):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pgids.discard(pgid)
        except PermissionError:
            pgids.discard(pgid)   # not ours (a pid reused by another user's group)


def stop_groups(pgids, grace_secs):
    """SIGTERM every group of ``pgids``, then SIGKILL those with a process left after
    ``grace_secs``."""
    pgids = set(pgids)
    _signal(pgids, signal.SIGTERM)
    deadline = time.monotonic() + grace_secs
    while pgids and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)
        _signal(pgids, 0)
    _signal(pgids, signal.SIGKILL)


def watch(lines, grace_secs):
    """Follow the ``+PGID`` / ``-PGID`` / ``exit`` lines; return the groups to stop (empty after
    ``exit``)."""
    pgids = set()
    for line in lines:
        line = line.strip()
        if line == "exit":
            return set()
        if line[:1] in ("+", "-") and line[1:].isdigit():
            (pgids.add if line[0] == "+" else pgids.discard)(int(line[1:]))
    return pgids


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    grace_secs = float(argv[1]) if len(argv) > 1 else 5.0
    for name in ("SIGINT", "SIGHUP", "SIGPIPE"):   # only end of input ends the guard
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    stop_groups(watch(sys.stdin, grace_secs), grace_secs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
