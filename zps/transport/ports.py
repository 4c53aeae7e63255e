"""Local port helpers: pick free ports, wait until a port accepts connections."""

import socket
import time


def free_ports(n, host="127.0.0.1"):
    """``n`` distinct ports the OS considers free right now."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def wait_for_port(host, port, timeout, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("task process exited with code %s before serving %s:%d"
                               % (proc.returncode, host, port))
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError("nothing listening on %s:%d after %.0f s" % (host, port, timeout))
