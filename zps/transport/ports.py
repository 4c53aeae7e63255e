"""Local port helpers: pick free ports, wait until a port accepts connections."""

import errno
import random
import socket
import time

LOWEST_PORT = 10000   # free_ports picks from here up to the start of the ephemeral range


def _ephemeral_start(path="/proc/sys/net/ipv4/ip_local_port_range"):
    """The first port the OS hands out for port 0 and outgoing connections (Linux's default
    32768), or None where unknown."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _plain(host):
    """``host`` without the brackets of an IPv6 address (``[::1]`` -> ``::1``), and its family."""
    if host.startswith("[") and host.endswith("]"):
        return socket.AF_INET6, host[1:-1]
    return (socket.AF_INET6 if ":" in host else socket.AF_INET), host


def free_ports(n, host="127.0.0.1"):
    """``n`` distinct ports free right now (``host``: an address, IPv6 ones with or without
    brackets), taken below the OS's ephemeral range where it is known: a port from that range
    could be handed to an outgoing connection, or to a socket bound to port 0 (a server's direct
    listener), before whoever asked binds it. OSError saying why when ``host`` cannot be bound
    at all (it does not resolve, or is not an address of this machine)."""
    family, host = _plain(host)
    top = _ephemeral_start()
    socks, ports = [], []
    try:
        candidates = random.sample(range(LOWEST_PORT, top), min(top - LOWEST_PORT, 64 * n)) \
            if top is not None and top - LOWEST_PORT >= 16 * n else []
        for port in candidates + [0] * n:   # then the OS's choice, if too few were free
            if len(ports) == n:
                break
            s = socket.socket(family)
            try:
                s.bind((host, port))
            except OSError as e:
                s.close()
                if e.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                raise _bind_error(host, e) from None
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    if len(ports) < n:
        raise OSError("could not find %d free ports on %s" % (n, host))
    return ports


def _bind_error(host, error):
    """An OSError saying why ``host`` cannot be bound, in zps-ps's words."""
    if isinstance(error, socket.gaierror):
        why = "it does not resolve (%s)" % error.strerror
    elif error.errno == errno.EADDRNOTAVAIL:
        why = "it is not an address of this host"
    else:
        why = error.strerror or str(error)
    return OSError(error.errno, "cannot bind %s: %s" % (host, why))


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
