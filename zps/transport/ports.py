"""Local port helpers: pick free ports, wait until a port accepts connections."""

import socket
import time


def _plain(host):
    """``host`` without the brackets of an IPv6 address (``[::1]`` -> ``::1``), and its family."""
    if host.startswith("[") and host.endswith("]"):
        return socket.AF_INET6, host[1:-1]
    return (socket.AF_INET6 if ":" in host else socket.AF_INET), host


def free_ports(n, host="127.0.0.1"):
    """``n`` distinct ports the OS considers free right now (``host``: an address, IPv6 ones
    with or without brackets)."""
    family, host = _plain(host)
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(family)
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def wait_for_port(host, port, timeout, proc=None):
    host = _plain(host)[1]
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
