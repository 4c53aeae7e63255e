"""zps transfers against raw pyzmq, measured side by side in one run (two processes, tcp loopback).

    python tools/bench_transfer.py            # table
    python tools/bench_transfer.py --json     # machine-readable
    python tools/bench_transfer.py --mb 16    # smaller payload

Raw: a DEALER/ROUTER pair; the payload travels as 1 MB zero-copy frames in one multipart message
(the fastest raw form on this machine); pull = small request, payload reply; push = payload
request, small reply; tiny = 8-byte round trip.
zps: a ps task in another process holds a float32 variable of the same size; the client runs in
a worker server of this process. pull = ``sess.run`` of the variable read onto the worker; push =
``assign_add(v, delta)`` with delta fed on the worker; tiny = ``assign_add`` of a scalar ps
variable. Targets: pull and push >= 80% of raw; tiny step <= 4 raw round trips.
"""

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time

import numpy as np
import zmq

MB = 1 << 20


def _raw_server(port_queue, nbytes):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    payload = np.ones(nbytes, dtype=np.uint8)
    frames = [memoryview(payload)[i:i + MB] for i in range(0, nbytes, MB)]
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


def bench_raw(nbytes, repeats, tiny_n):
    q = mp.get_context("spawn").Queue()
    proc = mp.get_context("spawn").Process(target=_raw_server, args=(q, nbytes), daemon=True)
    proc.start()
    port = q.get(timeout=30)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("tcp://127.0.0.1:%d" % port)
    payload = np.ones(nbytes, dtype=np.uint8)
    frames = [memoryview(payload)[i:i + MB] for i in range(0, nbytes, MB)]

    def pull():
        sock.send(b"pull")
        sock.recv_multipart(copy=False)

    def push():
        sock.send_multipart([b"push"] + frames, copy=False)
        sock.recv()

    def tiny():
        sock.send_multipart([b"tiny", b"12345678"])
        sock.recv()

    out = {"pull_s": _median_time(pull, repeats), "push_s": _median_time(push, repeats),
           "tiny_s": _median_time(tiny, 5, inner=tiny_n)}
    sock.send(b"stop")
    sock.recv()
    sock.close()
    ctx.term()
    proc.join(timeout=10)
    return out


def _median_time(fn, repeats, inner=1):
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def bench_zps(nbytes, repeats, tiny_n):
    import zps as tf
    from zps.testing.cluster import LocalCluster

    n = nbytes // 4
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        worker = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
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
                with tf.Session(worker.target) as sess:
                    sess.run(tf.global_variables_initializer())
                    out = {
                        "pull_s": _median_time(lambda: sess.run(pulled), repeats),
                        "push_s": _median_time(lambda: sess.run(push_op, {delta: delta_val}),
                                               repeats),
                        "tiny_s": _median_time(lambda: sess.run(tiny_op), 5, inner=tiny_n),
                    }
                    expected = float(repeats + 1)
                    if sess.run(v[:1])[0] != expected:
                        raise AssertionError("push lost updates: %s != %s"
                                             % (sess.run(v[:1])[0], expected))
        finally:
            worker.stop()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="zps transfer benchmark")
    parser.add_argument("--mb", type=int, default=64, help="payload size in MB (default 64)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--tiny", type=int, default=300, help="tiny round trips per sample")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    nbytes = args.mb * MB
    raw = bench_raw(nbytes, args.repeats, args.tiny)
    zps_ = bench_zps(nbytes, args.repeats, args.tiny)
    result = {
        "payload_mb": args.mb,
        "raw_pull_gbs": nbytes / raw["pull_s"] / 1e9,
        "raw_push_gbs": nbytes / raw["push_s"] / 1e9,
        "raw_tiny_us": raw["tiny_s"] * 1e6,
        "zps_pull_gbs": nbytes / zps_["pull_s"] / 1e9,
        "zps_push_gbs": nbytes / zps_["push_s"] / 1e9,
        "zps_tiny_us": zps_["tiny_s"] * 1e6,
    }
    result["pull_ratio"] = result["zps_pull_gbs"] / result["raw_pull_gbs"]
    result["push_ratio"] = result["zps_push_gbs"] / result["raw_push_gbs"]
    result["tiny_in_round_trips"] = result["zps_tiny_us"] / result["raw_tiny_us"]
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
    print("%-34s %10.0f us %10.0f us %9.2f  round trips (target <= 4)"
          % ("tiny step (scalar assign_add)", result["raw_tiny_us"], result["zps_tiny_us"],
             result["tiny_in_round_trips"]))
    return result


if __name__ == "__main__":
    main()
