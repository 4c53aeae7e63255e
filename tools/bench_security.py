"""The cost of CURVE encryption: plain vs CURVE, raw pyzmq and zps, side by side in one run.

    python tools/bench_security.py            # table
    python tools/bench_security.py --json     # machine-readable
    python tools/bench_security.py --mb 16    # smaller payload

Four cases, each in processes of its own, their samples alternating in rotating order so that
all four see the same (shared, busy) machine; figures are medians:

- raw plain / raw CURVE: a DEALER/ROUTER pair (tcp loopback), the payload as 1 MB zero-copy frames
  of one multipart message, as in tools/bench_transfer.py; with CURVE both sockets encrypt (no
  ZAP handler: only the cipher is measured);
- zps plain / zps CURVE: a ps task holding a float32 variable and a worker server, as in
  tools/bench_transfer.py; with CURVE every task holds a throwaway cluster key
  (ZPS_CURVE_SECRET_KEY_FILE), so every byte is encrypted and every peer authenticated.

pull = payload from the ps to the worker, push = ``assign_add`` of a fed payload, tiny = a scalar
``assign_add`` step (8-byte round trip for raw). CurveZMQ encrypts on ZeroMQ's I/O thread, one
per connection, so large transfers are bound by one core's crypto_box (XSalsa20-Poly1305) speed.
"""

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_transfer import MB, raw_ops, raw_server, raw_stop, seconds_of, zps_transfers  # noqa: E402 - after the path is set

CASES = ("raw_plain", "raw_curve", "zps_plain", "zps_curve")


# -- raw pyzmq, optionally CURVE -------------------------------------------------------------------
def _raw_client(conn, nbytes, curve):
    spawn = mp.get_context("spawn")
    server_keys = zmq.curve_keypair() if curve else None
    q = spawn.Queue()
    server = spawn.Process(target=raw_server, args=(q, nbytes, False, server_keys), daemon=True)
    server.start()
    port = q.get(timeout=60)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if curve:
        sock.curve_serverkey = server_keys[0]
        sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
    sock.connect("tcp://127.0.0.1:%d" % port)
    _serve_samples(conn, raw_ops(sock, nbytes))
    raw_stop(sock)
    sock.close()
    ctx.term()
    server.join(timeout=10)


# -- zps: a ps task + a worker server, optionally every task holding the cluster key ----------------
def _zps_client(conn, nbytes, keys_dir):
    env = {}
    if keys_dir is not None:
        from zps.transport import security
        env[security.SECRET_KEY_ENV] = os.path.join(keys_dir, "cluster" + security.SECRET_SUFFIX)
    os.environ.update(env)   # before zps creates this process's transport
    from zps.transport import endpoint

    def check(worker):
        if (endpoint.default_transport().curve is not None) != (keys_dir is not None):
            raise AssertionError("the worker's transport did not pick up the CURVE setting")

    with zps_transfers(nbytes, env, check) as fns:
        _serve_samples(conn, fns)


def _serve_samples(conn, fns):
    conn.send("ready")
    while True:
        request = conn.recv()
        if request is None:
            return
        name, inner = request
        conn.send(seconds_of(fns[name], inner))


class _Sampler:
    """One case in a process of its own, timing samples on request (as bench_transfer's
    RawClient), so that the cases can alternate on the same, shared machine."""

    def __init__(self, target, *args):
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        # Not a daemon: it starts processes of its own (the raw server, the ps task).
        self._proc = ctx.Process(target=target, args=(child,) + args)
        self._proc.start()
        self.name = target.__name__
        if self._wait(120) != "ready":
            raise RuntimeError("benchmark process %s did not start" % self.name)

    def _wait(self, timeout):
        for _ in range(int(timeout * 10)):
            if self._conn.poll(0.1):
                return self._conn.recv()
            if not self._proc.is_alive():
                raise RuntimeError("benchmark process %s died (exit code %s)"
                                   % (self.name, self._proc.exitcode))
        raise RuntimeError("benchmark process %s did not answer within %d s" % (self.name, timeout))

    def sample(self, name, inner=1):
        self._conn.send((name, inner))
        return self._wait(120)

    def close(self):
        try:
            self._conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self._proc.join(timeout=30)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5)


def run(mb=64, repeats=7, tiny=300):
    """Median seconds per (case, transfer), the four cases' samples alternating in rotating order."""
    from zps.transport import security
    nbytes = mb * MB
    keys_dir = tempfile.mkdtemp(prefix="zps-bench-keys-")
    security.create_keypair(keys_dir, "cluster")
    samplers = {}
    try:
        samplers["raw_plain"] = _Sampler(_raw_client, nbytes, False)
        samplers["raw_curve"] = _Sampler(_raw_client, nbytes, True)
        samplers["zps_plain"] = _Sampler(_zps_client, nbytes, None)
        samplers["zps_curve"] = _Sampler(_zps_client, nbytes, keys_dir)
        times = {case: {} for case in CASES}
        for name, inner, n in (("pull", 1, repeats), ("push", 1, repeats), ("tiny", tiny, 5)):
            for case in CASES:   # warm up
                samplers[case].sample(name, inner)
            got = {case: [] for case in CASES}
            for r in range(n):
                k = r % len(CASES)
                for case in CASES[k:] + CASES[:k]:
                    got[case].append(samplers[case].sample(name, inner))
            for case in CASES:
                times[case][name] = statistics.median(got[case])
    finally:
        for s in samplers.values():
            s.close()
        for f in os.listdir(keys_dir):
            os.unlink(os.path.join(keys_dir, f))
        os.rmdir(keys_dir)
    results = {"payload_mb": mb}
    for case in CASES:
        t = times[case]
        results[case] = {"pull_gbs": nbytes / t["pull"] / 1e9, "push_gbs": nbytes / t["push"] / 1e9,
                         "tiny_us": t["tiny"] * 1e6}
    for layer in ("raw", "zps"):
        plain, curve = results[layer + "_plain"], results[layer + "_curve"]
        results[layer + "_curve_cost"] = {
            "pull_throughput_ratio": curve["pull_gbs"] / plain["pull_gbs"],
            "push_throughput_ratio": curve["push_gbs"] / plain["push_gbs"],
            "tiny_latency_ratio": curve["tiny_us"] / plain["tiny_us"]}
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description="cost of CURVE encryption, raw zmq and zps")
    parser.add_argument("--mb", type=int, default=64, help="payload size in MB (default 64)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--tiny", type=int, default=300, help="tiny round trips per sample")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = run(args.mb, args.repeats, args.tiny)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return results
    print("%-30s %11s %11s %9s   %11s %11s %9s" % ("%d MB payload" % args.mb, "raw plain",
                                                   "raw CURVE", "CURVE/pl", "zps plain",
                                                   "zps CURVE", "CURVE/pl"))
    print("-" * 102)
    for key, label, unit, scale in (("pull_gbs", "pull: ps variable -> worker", "GB/s", 1),
                                    ("push_gbs", "push: assign_add from worker", "GB/s", 1),
                                    ("tiny_us", "tiny step (scalar assign_add)", "us", 1)):
        row = []
        for layer in ("raw", "zps"):
            p, c = results[layer + "_plain"][key] * scale, results[layer + "_curve"][key] * scale
            fmt = "%6.2f %s" if unit == "GB/s" else "%7.0f %s"
            row += [fmt % (p, unit), fmt % (c, unit), "%9.2f" % (c / p)]
        print("%-30s %11s %11s %9s   %11s %11s %9s" % ((label,) + tuple(row)))
    print("(throughput ratios < 1 and latency ratios > 1 are the cost of encryption)")
    return results


if __name__ == "__main__":
    main()
