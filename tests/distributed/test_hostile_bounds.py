"""An unauthenticated peer cannot grow a server's memory or logs without bound.

Each test runs a real server in this process (OS-chosen port) and attacks it from a raw ZeroMQ
DEALER: early tensors for steps that never run, requests whose replies are never read, floods of
malformed messages, graph registrations; and a malformed message for a running step fails that
step at once instead of leaving its Recv waiting.
"""

import logging
import threading
import time

import numpy as np
import pytest
import zmq

import zps as tf
from zps.distributed import rendezvous as rdv
from zps.framework import errors
from zps.ops.op_util import make_op
from zps.transport import codec, endpoint, protocol

# -- helpers -----------------------------------------------------------------------------------

class Attacker:
    """A raw DEALER connected to ``address`` (closed by ``close``)."""

    def __init__(self, address, **opts):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SNDHWM, 0)
        for name, value in opts.items():
            self.sock.setsockopt(getattr(zmq, name), value)
        self.sock.connect("tcp://" + address)

    def send(self, frames):
        self.sock.send_multipart(frames, copy=True)

    def tensors(self, step, keys, tensors=()):
        for frames in codec.encode_parts(protocol.ONEWAY, 1, {"step": step, "keys": keys},
                                         list(tensors), method="Tensors"):
            self.send(frames)

    def close(self):
        self.sock.close(0)
        self.ctx.term()


@pytest.fixture
def server():
    s = tf.train.Server.create_local_server()
    attackers = []
    s.attack = lambda **opts: attackers.append(Attacker(s.target[len("zps://"):], **opts)) or attackers[-1]
    try:
        yield s
    finally:
        for a in attackers:
            a.close()
        s.stop()


def status(server):
    return endpoint.default_transport().request(server.target[len("zps://"):], "Status", {},
                                                timeout=10).result(15).body


def wait_for(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.01)


# -- 1. early tensors for steps that are not running ----------------------------------------------

def test_early_mailboxes_are_capped_by_count_oldest_first():
    r = rdv.Rendezvous(max_early_steps=3, max_early_bytes=1 << 20)
    for step in range(10):
        r.put(step, "k", np.zeros(4, np.float32))
    assert r.pending_steps() == 3
    assert r.early_stats() == {"early_steps": 3, "early_bytes": 48, "early_steps_dropped": 7,
                               "early_tensors_dropped": 7, "early_bytes_dropped": 112}
    got = []
    r.recv(9, "k", got.append)      # the newest ones are kept...
    np.testing.assert_array_equal(got[0], np.zeros(4, np.float32))
    r.recv(0, "k", got.append)      # ...the oldest failed at once, saying why
    assert isinstance(got[1], errors.ResourceExhaustedError)
    assert "step 0 before it started here were dropped" in got[1].message
    assert "ZPS_MAX_EARLY_STEPS" in got[1].message
    r.put(0, "k", 1.0)              # and late tensors of a dropped step are not kept
    assert r.early_stats()["early_steps"] == 2   # 7 and 8 (9 was claimed by its Recv)
    assert r.pending_steps() == 3


def test_early_mailboxes_are_capped_by_bytes():
    r = rdv.Rendezvous(max_early_steps=100, max_early_bytes=1000)
    for step in range(5):
        r.put(step, "a", np.zeros(100, np.float32))   # 400 bytes each
    stats = r.early_stats()
    assert stats["early_bytes"] == 800 and stats["early_steps"] == 2
    assert stats["early_steps_dropped"] == 3 and stats["early_bytes_dropped"] == 1200
    # One tensor larger than the whole budget is still held (alone), so a step can receive it.
    r.put(7, "big", np.zeros(1000, np.float32))
    assert r.early_stats()["early_steps"] == 1
    got = []
    r.recv(7, "big", got.append)
    assert got[0].shape == (1000,)


def test_running_steps_are_not_bounded_and_early_arrivals_still_work():
    r = rdv.Rendezvous(max_early_steps=2, max_early_bytes=100)
    r.put(41, "x", np.arange(3.0))            # arrives before the step starts here
    r.begin(41)                               # RunGraph of step 41 starts: its tensors are its own
    assert r.is_running(41) and r.early_stats()["early_steps"] == 0
    for step in range(100, 110):              # a flood of early tensors for other steps
        r.put(step, "y", np.zeros(10))
    r.put(41, "z", np.zeros(1000))            # a running step may receive any amount
    got = []
    r.recv(41, "x", got.append)
    r.recv(41, "z", got.append)
    np.testing.assert_array_equal(got[0], np.arange(3.0))
    assert got[1].shape == (1000,)
    assert r.early_stats()["early_steps"] == 1 and r.early_stats()["early_steps_dropped"] == 9
    r.cleanup(41)
    assert not r.is_running(41)


def test_a_message_of_tensors_is_put_at_once_and_a_repeated_key_refused_alone():
    r = rdv.Rendezvous(max_early_steps=2, max_early_bytes=100)
    got = []
    r.recv(5, "b", got.append)                    # a Recv already waiting
    refused = r.put_many(5, ["a", "b", "a", "c"], [1, 2, 3, 4])
    assert refused == ["tensor 'a' was sent twice in step 5"]
    assert got == [2]                             # delivered to its waiter
    r.recv(5, "a", got.append)
    r.recv(5, "c", got.append)
    assert got == [2, 1, 4]                       # the first 'a' kept, the rest still put
    r.put(5, "d", 5)
    with pytest.raises(ValueError, match="'d' was sent twice"):
        r.put(5, "d", 6)                          # put alone raises, as before
    # An early message is bounded as a whole: it stays (the newest), older early steps go.
    r.put_many(6, ["x"], [np.zeros(20, np.float32)])
    r.put_many(7, ["y", "z"], [np.zeros(20, np.float32), np.zeros(20, np.float32)])
    assert r.early_stats()["early_steps"] == 1 and r.early_stats()["early_bytes"] == 160
    r.abort(8, errors.CancelledError(None, None, "stopped"))
    assert r.put_many(8, ["k"], [1]) == [] and r.pending_steps() == 2   # dropped: aborted


def test_server_bounds_tensors_sent_to_steps_that_never_run(server):
    server.rendezvous.max_early_steps = 50
    server.rendezvous.max_early_bytes = 64 << 10
    attacker = server.attack()
    n = 2000
    for step in range(n):
        attacker.tensors(step + 1, ["a->b:x"], [np.full(256, step, np.float32)])   # 1 KB each
    wait_for(lambda: status(server)["early_steps_dropped"] >= n - 50, what="the flood to arrive")
    st = status(server)
    assert st["early_steps"] <= 50 and st["early_bytes"] <= 64 << 10
    assert st["early_steps"] + st["early_steps_dropped"] == n
    assert st["early_tensors_dropped"] == st["early_steps_dropped"]
    assert server.rendezvous.pending_steps() == st["early_steps"]
    # The server still runs steps, and sessions on it still work.
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(v.assign_add(2.0)) == 3.0


# -- 2. a peer that never reads its replies ----------------------------------------------------------

def test_peer_that_never_reads_replies_cannot_grow_the_send_queue(monkeypatch):
    monkeypatch.setattr(endpoint, "SEND_HWM", 32)
    s = tf.train.Server.create_local_server()
    try:
        a = Attacker(s.target[len("zps://"):], RCVHWM=1, RCVBUF=4096)
        try:
            n = 3000
            # A request whose reply carries a 64 KB tensor: the replies cannot hide in TCP buffers.
            big = np.zeros(16 << 10, np.float32)
            from zps.framework.graph import Graph
            g = Graph()
            with g.as_default():
                tf.constant(big, name="c")
            buffers = []
            body = {"graph": g.as_graph_def(buffers=buffers), "feeds": [], "fetches": ["c:0"],
                    "targets": []}
            handle = endpoint.default_transport().request(
                s.target[len("zps://"):], "RegisterGraph", body, buffers).result(10).body["handle"]
            for i in range(n):
                a.send(codec.encode(protocol.REQUEST, i + 1, {"handle": handle, "step": i + 1},
                                    method="RunGraph"))
            wait_for(lambda: s._bound.stats.messages_out + s._bound.stats.replies_dropped >= n,
                     what="the server to answer every request")
            st = status(s)
            # Bounded: at most SEND_HWM queued + what the kernel's small TCP buffers hold.
            assert st["messages_out"] <= 32 + 200, st
            assert st["replies_dropped"] >= n - 200
            assert s.worker.steps_run == n     # the I/O thread never blocked on the full queue
        finally:
            a.close()
    finally:
        s.stop()


def test_send_hwm_leaves_room_for_the_largest_streamed_answer():
    chunks_256mb = (256 << 20) // protocol.STREAM_CHUNK_BYTES
    assert chunks_256mb == 64
    assert endpoint.SEND_HWM >= 2 * (protocol.MAX_MESSAGE_BYTES // protocol.STREAM_CHUNK_BYTES)


# -- 3. malformed messages: counted exactly, logged at a bounded rate ---------------------------------

def test_malformed_messages_are_counted_exactly_and_logged_rate_limited(server, caplog, monkeypatch):
    monkeypatch.setattr(endpoint._malformed_log, "interval", 0.5)
    caplog.set_level(logging.WARNING, logger="zps")
    before = status(server)["malformed"]
    attacker = server.attack()
    n = 400
    for i in range(n):
        attacker.send([b"garbage %d" % i])
    wait_for(lambda: status(server)["malformed"] - before >= n, what="the garbage to be counted")
    assert status(server)["malformed"] - before == n
    lines = [r.getMessage() for r in caplog.records if r.name == "zps.transport"]
    assert 1 <= len([m for m in lines if "malformed message from peer 127.0.0.1" in m]) \
        <= endpoint._malformed_log.burst + 1
    # After the interval, one line says how many were suppressed.
    time.sleep(0.6)
    attacker.send([b"one more"])
    wait_for(lambda: any("more such warnings suppressed" in r.getMessage() for r in caplog.records),
             what="the summary line")
    summary = [r.getMessage() for r in caplog.records if "suppressed" in r.getMessage()]
    assert "peer 127.0.0.1" in summary[0]
    assert int(summary[0].split(": ")[1].split()[0]) >= n - endpoint._malformed_log.burst - 1


def test_malformed_tensors_messages_are_counted_exactly_and_logged_rate_limited(server, caplog):
    caplog.set_level(logging.WARNING, logger="zps")
    before = status(server)["malformed"]
    attacker = server.attack()
    n = 300
    for i in range(n):
        attacker.tensors(1000 + i, ["k1", "k2"], [np.zeros(2)])   # 2 keys, 1 tensor
    wait_for(lambda: status(server)["malformed"] - before >= n, what="the messages to be counted")
    assert status(server)["malformed"] - before == n
    lines = [r.getMessage() for r in caplog.records if "malformed Tensors message" in r.getMessage()]
    assert 1 <= len(lines) <= 5
    assert "peer 127.0.0.1" in lines[0] and "a list naming the 1 tensors" in lines[0]
    assert server.rendezvous.pending_steps() == 0


def test_a_group_in_a_tensors_message_reaches_its_receiver_as_one_tuple(server):
    attacker = server.attack()
    a, b, c = np.arange(3.0), np.ones((2, 2), np.int32), np.float32(7)
    attacker.tensors(555, [["g", 2], "k"], [a, b, c])
    wait_for(lambda: server.rendezvous.pending_steps() == 1, what="the message")
    got = []
    server.rendezvous.recv(555, "g", got.append)
    server.rendezvous.recv(555, "k", got.append)
    assert type(got[0]) is tuple and len(got[0]) == 2
    np.testing.assert_array_equal(got[0][0], a)
    np.testing.assert_array_equal(got[0][1], b)
    assert got[1] == 7


@pytest.mark.parametrize("keys", [[["g", 3]], [["g", 0], "k", "j"], [["g", True], "k"], [["g"]],
                                  [[7, 2]], [["g", 1], "k", "j"]])
def test_malformed_groups_in_tensors_messages_are_counted_and_deliver_nothing(server, keys):
    before = status(server)["malformed"]
    attacker = server.attack()
    attacker.tensors(777, keys, [np.zeros(2), np.zeros(2)])
    wait_for(lambda: status(server)["malformed"] - before >= 1, what="the message to be counted")
    assert status(server)["malformed"] - before == 1
    assert server.rendezvous.pending_steps() == 0


# -- 4. graph registrations ---------------------------------------------------------------------------

def _register(attacker, msg_id, value):
    from zps.framework.graph import Graph
    g = Graph()
    with g.as_default():
        tf.constant(value, name="c")
    body = {"graph": g.as_graph_def(), "feeds": [], "fetches": ["c:0"], "targets": []}
    attacker.send(codec.encode(protocol.REQUEST, msg_id, body, method="RegisterGraph"))


def test_registered_graphs_are_bounded_and_evicted_ones_reregister(server):
    server.worker.max_graphs = 8
    with tf.Graph().as_default():
        v = tf.Variable(5.0)
        inc = v.assign_add(1.0)
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(inc) == 6.0
            attacker = server.attack()
            n = 100
            for i in range(n):
                _register(attacker, i + 1, float(i))
            replies = 0
            while replies < n and attacker.sock.poll(10000):
                msg = codec.decode(attacker.sock.recv_multipart())
                assert msg.kind == protocol.REPLY
                replies += 1
            assert replies == n
            st = status(server)
            assert st["graphs_registered"] == 8 and st["graphs_evicted"] >= n - 8
            # The session's partition was evicted: the step fails saying so, the master
            # registers it again, and the next step runs (the update applied exactly once).
            with pytest.raises(errors.AbortedError, match="evicted .more than 8 graphs"):
                sess.run(inc)
            assert sess.run(inc) == 7.0
            assert sess.run(v) == 7.0


# -- 5. a malformed Tensors message for a running step fails that step --------------------------------

def test_malformed_tensors_for_a_running_step_abort_it_at_once(server):
    from zps.framework.graph import Graph
    g = Graph()
    with g.as_default():
        r = make_op("_Recv", [], name="r", key="w->ps:x", src="/job:worker/replica:0/task:0",
                    dtype=tf.float32, shape=[2])
    handle = server.worker.register_graph(g, [], [r.name], [])
    step = 123456789
    result = {}

    def run():
        try:
            result["value"] = server.worker.run_graph(handle, step, [])
        except errors.OpError as e:
            result["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    wait_for(lambda: server.rendezvous.is_running(step), what="the step to start")
    attacker = server.attack()
    attacker.tensors(step, [7], [np.zeros(2, np.float32)])   # a key that is not a string
    t0 = time.monotonic()
    t.join(timeout=10)
    assert not t.is_alive() and time.monotonic() - t0 < 5
    e = result["error"]
    assert isinstance(e, errors.DataLossError)
    assert "step 123456789 aborted" in e.message and "malformed Tensors message" in e.message
    assert "peer 127.0.0.1" in e.message and "a list naming the 1 tensors" in e.message
    # A malformed message for a step not running here aborts nothing.
    attacker.tensors(99, [7], [np.zeros(2, np.float32)])
    attacker.tensors(step + 1, ["w->ps:x"], [np.ones(2, np.float32)])
    wait_for(lambda: server.rendezvous.pending_steps() == 1, what="the good message")
    got = []
    server.rendezvous.recv(step + 1, "w->ps:x", got.append)
    np.testing.assert_array_equal(got[0], np.ones(2, np.float32))


# -- 6. the allocator: large blocks are reused on every thread ---------------------------------------

_PAGE_FAULTS = r'''
import resource, threading
import numpy as np
import zps
if not zps._allocator_tuned:   # not glibc
    print("None")
    raise SystemExit
faults = []
def work():
    for _ in range(4):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        a = np.empty(64 << 20, np.uint8)
        a.fill(1)
        del a
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
t = threading.Thread(target=work)   # like the transport's I/O thread receiving a tensor
t.start()
t.join()
print(faults)
'''


def test_a_freed_64mb_block_is_reused_on_a_non_main_thread():
    import ast
    import os
    import subprocess
    import sys
    if sys.platform != "linux":
        pytest.skip("glibc-only tuning")
    env = dict(os.environ, ZPS_MALLOC_TUNING="1")
    out = subprocess.run([sys.executable, "-c", _PAGE_FAULTS], capture_output=True, text=True,
                         timeout=60, env=env, cwd=os.path.dirname(os.path.dirname(
                             os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    faults = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    if faults is None:
        pytest.skip("the C library's allocator cannot be tuned here (not glibc)")
    # The first allocation faults its pages in; later ones reuse them (without M_ARENA_MAX=1 each
    # is a fresh mmap: 33 faults with transparent huge pages, ~16k without).
    assert max(faults[1:]) <= 4, faults
