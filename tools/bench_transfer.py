"""zps transfers against raw pyzmq, measured side by side in one run (two processes, tcp loopback).

    python tools/bench_transfer.py            # table
    python tools/bench_transfer.py --json     # machine-readable
    python tools/bench_transfer.py --mb 16    # smaller payload

Raw: a DEALER/ROUTER pair in two processes of their own; the payload travels as 1 MB zero-copy
frames in one multipart message (the fastest raw form on this machine); pull = small request,
payload reply; push = payload request, small reply; tiny = 8-byte round trip. The raw processes
keep glibc's default allocator settings (plain pyzmq) unless ``--raw-tuned`` gives them the
tuning zps applies to itself at import (zps/runtime/allocator.py), a stricter baseline.
zps: a ps task in another process holds a float32 variable of the same size; the client runs in
a worker server of this process. pull = ``sess.run`` of the variable read onto the worker; push =
``assign_add(v, delta)`` with delta fed on the worker; tiny = ``assign_add`` of a scalar ps
variable. Targets: pull and push >= 80% of raw; tiny step <= 4 raw round trips. The table also
gives the push's apply by itself (the variable added to in 1 MB ranges, no transfer): memory work
raw zmq does not do, which on a machine whose memory bus the transfer already saturates cannot
hide behind it (docs/performance.md, "Session 6").

Raw and zps samples alternate (raw, zps, zps, raw, ...), so that both see the same machine: on a
shared machine the load changes within seconds, and measuring one after the other compared two
different machines. Figures are medians.
"""

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import sys
import time

import numpy as np
import zmq

if __name__ == "__main__":   # run as a script from a checkout: import zps from it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MB = 1 << 20


def _tune_allocator():
    # What zps does at import (zps/runtime/allocator.py), for the --raw-tuned baseline.
    import ctypes
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(-3, 1 << 30)   # M_MMAP_THRESHOLD
    libc.mallopt(-1, 1 << 31)   # M_TRIM_THRESHOLD


def raw_server(port_queue, nbytes, tuned=False, server_keys=None):
    """The raw ROUTER (run in a process of its own; the other bench tools use it too): puts its
    port on ``port_queue``, answers pull with ``nbytes`` as 1 MB zero-copy frames, acknowledges
    anything else, stops on "stop". ``server_keys``: (public, secret) to serve CURVE (no ZAP
    handler: any client key passes, only the cipher costs)."""
    if tuned:
        _tune_allocator()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    if server_keys is not None:
        sock.curve_publickey, sock.curve_secretkey = server_keys
        sock.curve_server = True
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    frames = _frames(nbytes)
    port_queue.put(port)
    while True:
        msg = sock.recv_multipart(copy=False)
        ident, kind = msg[0], bytes(msg[1].buffer)
        if kind == b"stop":
            sock.send_multipart([ident, b"ok"])
            break
        if kind == b"pull":
            sock.send_multipart([ident] + frames, copy=False)
        else:  # push or tiny: acknowledge
            sock.send_multipart([ident, b"ok"])
    sock.close()
    ctx.term()


def _frames(nbytes):
    payload = np.ones(nbytes, dtype=np.uint8)
    return [memoryview(payload)[i:i + MB] for i in range(0, nbytes, MB)]


def raw_ops(sock, nbytes):
    """The raw transfers of a DEALER connected to ``raw_server``: {"pull", "push", "tiny"}."""
    frames = _frames(nbytes)

    def pull():
        sock.send(b"pull")
        sock.recv_multipart(copy=False)

    def push():
        sock.send_multipart([b"push"] + frames, copy=False)
        sock.recv()

    def tiny():
        sock.send_multipart([b"tiny", b"12345678"])
        sock.recv()

    return {"pull": pull, "push": push, "tiny": tiny}


def raw_stop(sock):
    sock.send(b"stop")
    sock.recv()


def _raw_client(conn, port, nbytes, tuned):
    """Times raw transfers on request: ``conn.recv()`` -> (name, inner), answers seconds each."""
    if tuned:
        _tune_allocator()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("tcp://127.0.0.1:%d" % port)
    fns = raw_ops(sock, nbytes)
    while True:
        request = conn.recv()
        if request is None:
            break
        name, inner = request
        conn.send(seconds_of(fns[name], inner))
    raw_stop(sock)
    sock.close()
    ctx.term()


class RawClient:
    """Plain pyzmq in two processes of its own (so that zps's allocator tuning, done at import in
    this process, does not reach it unless asked): a DEALER client and a ROUTER server; the
    payload travels as 1 MB zero-copy frames in one multipart message, its fastest raw form."""

    def __init__(self, nbytes, tuned=False):
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        self._server = ctx.Process(target=raw_server, args=(q, nbytes, tuned), daemon=True)
        self._server.start()
        port = q.get(timeout=30)
        self._conn, child = ctx.Pipe()
        self._client = ctx.Process(target=_raw_client, args=(child, port, nbytes, tuned), daemon=True)
        self._client.start()

    def timer(self, name, inner=1):
        """A function returning the seconds of one sample (``inner`` transfers, averaged)."""
        def sample():
            self._conn.send((name, inner))
            if not self._conn.poll(60):
                raise RuntimeError("raw client did not answer within 60 s")
            return self._conn.recv()
        return sample

    def close(self):
        self._conn.send(None)
        self._client.join(timeout=10)
        self._server.join(timeout=10)
        for proc in (self._client, self._server):
            if proc.is_alive():
                proc.kill()


def seconds_of(fn, inner=1):
    """Seconds per call of ``fn``, over ``inner`` calls (a sampler for ``take_turns``)."""
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def take_turns(samplers, repeats):
    """Median seconds of each of ``samplers`` (name -> function returning the seconds of one
    sample) after one warm-up each, the samplers taking turns (each round starting with the next
    one): on a shared machine the load drifts within seconds, and timing one after the other
    compares samples taken on different machines."""
    names = list(samplers)
    for name in names:
        samplers[name]()
    times = {name: [] for name in names}
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(samplers[name]())
    return {name: statistics.median(t) for name, t in times.items()}


def interleaved(pairs, repeats):
    """Median seconds of each of ``pairs`` = {name: (raw sampler, zps sampler)}, all samplers
    taking turns (``take_turns``): ``{name: (raw s, zps s)}``."""
    t = take_turns({(name, k): fns[k] for name, fns in pairs.items() for k in (0, 1)}, repeats)
    return {name: (t[name, 0], t[name, 1]) for name in pairs}


@contextlib.contextmanager
def zps_transfers(nbytes, env=None, check=None):
    """A ps task in another process holding a float32 variable of ``nbytes`` and a worker server
    in this process (the other bench tools use it too); yields ``{"pull", "push", "tiny"}``, each
    doing one transfer, and checks on exit that no push was lost. ``env``: the ps process's extra
    environment; ``check(worker)``: called once the worker server is up."""
    import zps as tf
    from zps.testing.cluster import LocalCluster

    n = nbytes // 4
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)], env=env) as cluster:
        worker = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            if check is not None:
                check(worker)
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(tf.zeros([n]), name="big")
                    counter = tf.Variable(0.0, name="counter")
                with tf.device("/job:worker/task:0"):
                    pulled = tf.identity(v)
                    delta = tf.placeholder(tf.float32, [n])
                push_op = tf.assign_add(v, delta).op
                tiny_op = tf.assign_add(counter, 1.0).op
                delta_val = np.ones(n, np.float32)
                pushes = [0]
                with tf.Session(worker.target) as sess:
                    sess.run(tf.global_variables_initializer())

                    def push():
                        sess.run(push_op, {delta: delta_val})
                        pushes[0] += 1

                    yield {"pull": lambda: sess.run(pulled), "push": push,
                           "tiny": lambda: sess.run(tiny_op)}
                    got = sess.run(v[:1])[0]
                    if got != pushes[0]:
                        raise AssertionError("push lost updates: %s != %s" % (got, pushes[0]))
        finally:
            worker.stop()


def apply_alone(nbytes, repeats):
    """Median seconds of the ps's share of a push by itself: adding ``nbytes`` of float32 into a
    variable of that size in 1 MB ranges (as a streamed ``assign_add`` does), no transfer. It
    reads and writes the variable and reads the delta, 3x the payload in memory traffic, which a
    transfer of the same bytes competes with for the memory bus; raw zmq pays none of it."""
    var = np.zeros(nbytes // 4, np.float32)
    delta = np.ones_like(var)
    step = MB // 4

    def once():
        start = time.perf_counter()
        for k in range(0, var.size, step):
            np.add(var[k:k + step], delta[k:k + step], out=var[k:k + step])
        return time.perf_counter() - start

    once()   # the first touch page-faults the arrays in
    return statistics.median(once() for _ in range(repeats))


def bench(nbytes, repeats, tiny_n, raw_tuned=False):
    """``{"pull": (raw_s, zps_s), "push": ..., "tiny": ...}``."""
    raw = RawClient(nbytes, tuned=raw_tuned)
    try:
        with zps_transfers(nbytes) as fns:
            out = interleaved({
                "pull": (raw.timer("pull"), lambda: seconds_of(fns["pull"])),
                "push": (raw.timer("push"), lambda: seconds_of(fns["push"]))}, repeats)
            out.update(interleaved({"tiny": (
                raw.timer("tiny", tiny_n), lambda: seconds_of(fns["tiny"], tiny_n))}, 5))
    finally:
        raw.close()
    out["apply"] = apply_alone(nbytes, repeats)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="zps transfer benchmark")
    parser.add_argument("--mb", type=int, default=64, help="payload size in MB (default 64)")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--tiny", type=int, default=300, help="tiny round trips per sample")
    parser.add_argument("--raw-tuned", action="store_true",
                        help="give the raw processes zps's allocator tuning too (a stricter baseline)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    nbytes = args.mb * MB
    t = bench(nbytes, args.repeats, args.tiny, args.raw_tuned)
    result = {
        "payload_mb": args.mb,
        "raw_allocator_tuned": args.raw_tuned,
        "raw_pull_gbs": nbytes / t["pull"][0] / 1e9,
        "raw_push_gbs": nbytes / t["push"][0] / 1e9,
        "raw_tiny_us": t["tiny"][0] * 1e6,
        "zps_pull_gbs": nbytes / t["pull"][1] / 1e9,
        "zps_push_gbs": nbytes / t["push"][1] / 1e9,
        "zps_tiny_us": t["tiny"][1] * 1e6,
    }
    result["pull_ratio"] = result["zps_pull_gbs"] / result["raw_pull_gbs"]
    result["push_ratio"] = result["zps_push_gbs"] / result["raw_push_gbs"]
    result["tiny_in_round_trips"] = result["zps_tiny_us"] / result["raw_tiny_us"]
    # What a push must do at least, done one after the other: move the bytes (raw) and add them.
    result["push_apply_alone_ms"] = t["apply"] * 1e3
    result["push_ratio_vs_raw_plus_apply"] = (t["push"][0] + t["apply"]) / t["push"][1]
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return result
    print("%-34s %12s %12s %10s" % ("transfer (%d MB payload)" % args.mb, "raw zmq", "zps",
                                     "zps/raw"))
    print("-" * 71)
    print("%-34s %9.2f GB/s %7.2f GB/s %9.2f  (target >= 0.80)"
          % ("pull: ps variable -> worker", result["raw_pull_gbs"], result["zps_pull_gbs"],
             result["pull_ratio"]))
    print("%-34s %9.2f GB/s %7.2f GB/s %9.2f  (target >= 0.80)"
          % ("push: assign_add from worker", result["raw_push_gbs"], result["zps_push_gbs"],
             result["push_ratio"]))
    print("%-34s %9.1f ms %17s %9.2f  of raw push + apply, done serially"
          % ("push's apply alone (no transfer)", result["push_apply_alone_ms"], "",
             result["push_ratio_vs_raw_plus_apply"]))
    print("%-34s %10.0f us %10.0f us %9.2f  round trips (target <= 4)"
          % ("tiny step (scalar assign_add)", result["raw_tiny_us"], result["zps_tiny_us"],
             result["tiny_in_round_trips"]))
    return result


if __name__ == "__main__":
    main()
