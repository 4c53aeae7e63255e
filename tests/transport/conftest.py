"""Fixtures of the transport tests: transports closed at teardown, an echo server, peer processes."""

import os
import selectors
import subprocess
import sys
import time

import pytest

from zps.transport.endpoint import Transport
from zps.transport.ports import free_ports

WAIT = 10   # seconds any single wait may take before the test fails instead of hanging
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A peer in another process: echoes "echo", answers "pid", never answers "hang"; exits on stdin EOF
# so it cannot outlive the test process.
SERVER_SCRIPT = r"""
import os, sys
from zps.transport.endpoint import Transport
def handle(msg, responder):
    if msg.method == "echo":
        responder.reply(msg.body, msg.tensors)
    elif msg.method == "pid":
        responder.reply(os.getpid())
t = Transport()
bound = t.bind(sys.argv[1], handle)
print(bound.address, flush=True)
sys.stdin.read()
t.close()
"""


def echo_handler(msg, responder):
    if responder is None:
        return
    if msg.method == "echo":
        responder.reply(msg.body, msg.tensors)
    elif msg.method == "fail":
        responder.error(5, "no variable named %r" % msg.body, op="save/restore")
    elif msg.method == "crash":
        raise ValueError("handler bug on purpose")
    elif msg.method == "hang":
        pass   # never answered
    else:
        responder.error(12, "unknown method %r" % msg.method)


@pytest.fixture
def transports():
    """A factory of Transports, all closed (and their I/O threads checked gone) at teardown."""
    made = []

    def make():
        t = Transport(name="zps-io-test-%d" % len(made))
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()
    for t in made:
        assert not t._thread.is_alive()


@pytest.fixture
def client(transports):
    return transports()


@pytest.fixture
def server(transports):
    return transports().bind("127.0.0.1:0", echo_handler)


@pytest.fixture
def processes():
    """Start SERVER_SCRIPT processes; every one is killed and reaped at teardown."""
    started = []

    def start(address="127.0.0.1:0"):
        proc = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, address], cwd=REPO,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=dict(os.environ, PYTHONPATH=REPO))
        started.append(proc)
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=WAIT):
                raise AssertionError("server process did not start within %d s" % WAIT)
        line = proc.stdout.readline().decode().strip()
        assert line, "server process exited: rc=%s" % proc.poll()
        return proc, line

    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=WAIT)
        proc.stdin.close()
        proc.stdout.close()


def free_port():
    return free_ports(1)[0]   # below the ephemeral range: no outgoing connection takes it first


def _wait_stopped(pid):
    """Signals are delivered asynchronously: wait until the kernel shows the process stopped."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                return
        time.sleep(0.01)
    raise AssertionError("process %d did not stop" % pid)
