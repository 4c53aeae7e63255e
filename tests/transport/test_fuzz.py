"""Fuzzing: any input to the decoder gives a Message within the limits or a ProtocolError
(property-based), and a running ps fed thousands of hostile messages keeps training right."""

import random
import threading
import time
from unittest import mock

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zps.transport import codec, protocol
from zps.transport.codec import Limits, Message, ProtocolError

LIMITS = Limits(max_header_bytes=8192, max_tensor_bytes=4096, max_message_bytes=6144)
FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check_decode(frames):
    """decode() either refuses with ProtocolError or returns a Message that respects LIMITS."""
    try:
        msg = codec.decode(frames, LIMITS)
    except ProtocolError as e:
        assert str(e)
        return None
    assert isinstance(msg, Message)
    assert msg.kind in protocol.KINDS and isinstance(msg.id, int)
    assert msg.method is None or isinstance(msg.method, str)
    total = 0
    for t in msg.tensors:
        assert isinstance(t, np.ndarray) and t.ndim <= protocol.MAX_RANK
        if t.dtype == object:
            assert all(isinstance(v, bytes) for v in t.reshape(-1).tolist())
        else:
            assert t.dtype.name in protocol.WIRE_DTYPES
            assert t.nbytes <= LIMITS.max_tensor_bytes
            total += t.nbytes
    assert total == msg.nbytes <= LIMITS.max_message_bytes
    return msg


plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | st.floats()
    | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=5)
dtypes = st.sampled_from(sorted(protocol.WIRE_DTYPES) + ["string", "object", "complex256", "V8", "<f4", ""]) \
    | plain
dims = st.integers(0, 6) | st.sampled_from([-1, 1 << 20, 1 << 40, (1 << 40) + 1, 1 << 63]) | plain
metas = st.lists(dtypes, min_size=3, max_size=3).flatmap(
    lambda m: st.tuples(st.just(m[0]), st.lists(dims, max_size=5) | plain,
                        st.integers(-1, 4) | plain).map(list)) | plain
frames_st = st.lists(st.binary(max_size=64), max_size=6)


@FUZZ
@given(st.lists(st.binary(max_size=256), max_size=6))
def test_random_byte_frames(frames):
    check_decode(frames)


@FUZZ
@given(header=st.dictionaries(st.text(max_size=3), plain, max_size=6),
       valid_envelope=st.booleans(),
       kind=st.sampled_from(sorted(protocol.KINDS)) | plain,
       t=st.none() | st.lists(metas, max_size=4) | plain,
       s=st.none() | st.lists(st.lists(st.binary(max_size=4) | plain, max_size=6), max_size=3) | plain,
       frames=frames_st)
def test_random_headers(header, valid_envelope, kind, t, s, frames):
    if valid_envelope:
        header.update({"z": protocol.MAGIC, "v": protocol.VERSION, "k": kind, "id": 5})
    for key, value in (("t", t), ("s", s)):
        if value is not None:
            header[key] = value
    check_decode([msgpack.packb(header, use_bin_type=True)] + frames)


def arrays():
    numeric = st.tuples(st.sampled_from(sorted(protocol.WIRE_DTYPES)),
                        st.lists(st.integers(0, 5), max_size=3)).map(
        lambda ds: (np.arange(int(np.prod(ds[1])), dtype=np.int64) % 7).astype(ds[0]).reshape(ds[1]))
    strings = st.lists(st.binary(max_size=5), max_size=4).map(
        lambda vs: np.array(vs, dtype=object) if vs else np.empty((0,), dtype=object))
    return numeric | strings


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(0, 1 << 16), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 16), st.integers(0, 1 << 16)),
    st.tuples(st.just("drop"), st.integers(0, 1 << 16)),
    st.tuples(st.just("duplicate"), st.integers(0, 1 << 16)),
    st.tuples(st.just("swap"), st.integers(0, 1 << 16), st.integers(0, 1 << 16)),
    st.tuples(st.just("append"), st.binary(max_size=16)),
)


def mutate(frames, op):
    frames = [bytearray(f) for f in frames]
    kind, args = op[0], op[1:]
    if kind == "flip":
        f = frames[args[0] % len(frames)]
        if f:
            f[args[1] % len(f)] ^= 1 << args[2]
    elif kind == "truncate":
        i = args[0] % len(frames)
        frames[i] = frames[i][:args[1] % (len(frames[i]) + 1)]
    elif kind == "drop" and len(frames) > 1:
        del frames[args[0] % len(frames)]
    elif kind == "duplicate":
        i = args[0] % len(frames)
        frames.insert(i, bytearray(frames[i]))
    elif kind == "swap":
        i, j = args[0] % len(frames), args[1] % len(frames)
        frames[i], frames[j] = frames[j], frames[i]
    elif kind == "append":
        frames.append(bytearray(args[0]))
    return [bytes(f) for f in frames]


@FUZZ
@given(tensors=st.lists(arrays(), max_size=4), body=plain,
       mutations=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_valid_messages(tensors, body, mutations):
    with mock.patch.object(protocol, "FRAME_BYTES", 16):   # multi-frame tensors, cheaply
        frames = [bytes(f) for f in codec.encode(protocol.REQUEST, 3, body, tensors, method="m")]
    if sum(t.nbytes for t in tensors if t.dtype != object) <= LIMITS.max_message_bytes:
        msg = check_decode(frames)   # unmutated: decodes exactly
        assert msg is not None and len(msg.tensors) == len(tensors)
        for sent, got in zip(tensors, msg.tensors):
            assert got.shape == sent.shape and got.tolist() == sent.tolist()
    for op in mutations:
        frames = mutate(frames, op)
        check_decode(frames)


# -- a running ps under a stream of malformed messages, while a worker trains against it -----------

def _header(**fields):
    header = {"z": protocol.MAGIC, "v": protocol.VERSION, "k": protocol.REQUEST, "id": 1, "m": "Status"}
    header.update(fields)
    return msgpack.packb({k: v for k, v in header.items() if v is not _DROP}, use_bin_type=True)


_DROP = object()


def _hostile_messages(rng, n):
    """``n`` hostile multipart messages (lists of bytes), each from one of the issue's families."""
    families = [
        lambda: [rng.randbytes(rng.randrange(0, 200)) for _ in range(rng.randrange(1, 4))],
        lambda: [_header(b={"x": rng.randbytes(64)})[:rng.randrange(0, 40)]],          # truncated
        lambda: [msgpack.packb({"z": protocol.MAGIC, "pad": rng.randbytes(200_000)})],  # big, no version
        lambda: [_header(z=rng.choice(["ZPS", "", 7, None, b"zps"]))],                  # wrong magic
        lambda: [_header(v=rng.choice([0, 2, 99, -1, "1", None, 1.0]))],                 # wrong version
        lambda: [_header(k=rng.choice([0, 7, 99, -3, "request", None]))],                # unknown kind
        lambda: [_header(k=rng.choice([protocol.REPLY, protocol.ERROR, protocol.PONG]))],  # not for a server
        lambda: [_header(m=_DROP)],                                                       # no method
        lambda: [_header(m=rng.choice([7, b"Status", ["RunGraph"]]))],                    # bad method
        lambda: [_header(id=rng.choice([None, "1", 1.5, [1]]))],                          # bad id
        lambda: [_header(t=[["float32", [2], 1]])],                                       # frame missing
        lambda: [_header(t=[["float32", [2], 1]]), b"\0" * 8, b"\0" * 8],                 # extra frame
        lambda: [_header(t=[["float32", [3], 1]]), b"\0" * 8],                            # wrong size
        lambda: [_header(t=[[rng.choice(["complex256", "object", "V8", "<f4", 3, None]), [1], 1]]),
                 b"\0" * 8],                                                               # bad dtype
        lambda: [_header(t=[["float32", [rng.choice([-1, -(1 << 40), 1 << 41, 1.5, "2"])], 1]]),
                 b"\0" * 4],                                                               # bad shape
        lambda: [_header(t=[["float64", [1 << 20, 1 << 20], 1]]), b"\0" * 8],             # huge shape
        lambda: [_header(t=[["int8", [1] * 40, 1]]), b"\0"],                              # rank too high
        lambda: [_header(t=[["string", [2], 0]], s=[[b"a", 5]])],                         # bad strings
        lambda: [_header(t="tensors")],
        # Well-formed messages naming what does not exist: answered with errors, no harm done.
        lambda: [_header(m="RunGraph", id=rng.randrange(1 << 30),
                         b={"handle": "%016x/%d" % (rng.getrandbits(64), rng.randrange(9)), "step": 3})],
        lambda: [_header(m="RunStep", b={"handle": rng.randrange(1 << 40, 1 << 50)})],
        lambda: [_header(m="RunGraph", b={"handle": 5, "step": "x"})],
        lambda: [_header(m="NoSuchMethod", b=None)],
        lambda: [_header(m="RegisterGraph", b={"graph": {"node": [{"name": "a", "op": "NoSuchOp"}]},
                                                 "feeds": [], "fetches": ["a:0"], "targets": []})],
        lambda: [_header(k=protocol.ONEWAY, m="Tensors", b={"step": "s", "keys": [1]})],    # counted
        lambda: [_header(k=protocol.ONEWAY, m="Tensors",
                         b={"step": rng.getrandbits(62), "keys": ["fuzz"]},
                         t=[["int32", [1], 1]]), b"\0\0\0\0"],                             # unknown step
        lambda: [_header(k=protocol.ONEWAY, m="AbortStep", b={"step": rng.getrandbits(62)})],
        lambda: [_header(k=protocol.ONEWAY, m="CancelSteps", b={"handles": ["x", None]})],
    ]
    return [rng.choice(families)() for _ in range(n)]


def _counted_as_malformed(frames):
    """What the server's stats must count: the codec refuses it, or it is no request/one-way
    message with a method, or a Tensors message with a malformed body (the server's own rules)."""
    try:
        msg = codec.StreamAssembler().feed(frames)
    except ProtocolError:
        return True
    if msg is None:
        return False   # a chunk of no message in flight is dropped quietly (a late chunk)
    if msg.kind == protocol.PING:
        return False
    if msg.kind not in (protocol.REQUEST, protocol.ONEWAY) or msg.method is None:
        return True
    if msg.method == "Tensors":
        body = msg.body if isinstance(msg.body, dict) else {}
        keys = body.get("keys")
        return not (isinstance(body.get("step"), int) and isinstance(keys, list)
                    and len(keys) == len(msg.tensors) and all(isinstance(k, str) for k in keys))
    return False


def _rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


def _linear_regression(target, steps_wanted, keep_going):
    """Train w on the ps, gradients on the worker; returns (losses, final w, steps run)."""
    import zps as tf
    rng = np.random.default_rng(3)
    x_val = rng.standard_normal((32, 8)).astype(np.float32)
    y_val = (x_val @ rng.standard_normal((8, 1)).astype(np.float32))
    on_ps = target is not None
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0" if on_ps else None):
            w = tf.Variable(np.zeros((8, 1), np.float32), name="w")
        with tf.device("/job:worker/task:0" if on_ps else None):
            loss = tf.reduce_mean(tf.square(tf.matmul(x_val, w) - y_val))
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        with tf.Session(target or "") as sess:
            sess.run(w.initializer)
            losses = []
            while len(losses) < steps_wanted or (keep_going() and len(losses) < 20 * steps_wanted):
                losses.append(float(sess.run([loss, train])[0]))
            return losses, sess.run(w), len(losses)


def _send_all(address, messages, stop, linger_ms=0):
    """Send ``messages`` on a raw DEALER, draining replies; returns the replies counted. With
    ``linger_ms``, messages still queued when the replies stop are delivered before it closes
    (a busy ps may not have read them all yet)."""
    import zmq
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, linger_ms)
    sock.connect("tcp://" + address)
    replies = 0
    try:
        for i, frames in enumerate(messages):
            if stop.is_set():
                break
            sock.send_multipart(frames)
            while sock.poll(0 if i % 64 else 5):
                sock.recv_multipart()
                replies += 1
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and sock.poll(200):
            sock.recv_multipart()
            replies += 1
    finally:
        sock.close()
        ctx.term()
    return replies


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_ps_survives_thousands_of_malformed_messages_while_a_worker_trains():
    import zps as tf  # noqa: F401 - registers the ops the servers need
    from zps.testing.cluster import LocalCluster
    from zps.transport.endpoint import default_transport

    rng = random.Random(20261129)
    messages = _hostile_messages(rng, 10000)
    malformed = sum(_counted_as_malformed(m) for m in messages)
    assert malformed > len(messages) // 2   # mostly garbage, with well-formed decoys

    def status(address):
        return default_transport().request(address, "Status", {}, timeout=10).result(15).body

    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        ps = cluster.address("ps", 0)
        pid = cluster.pid("ps", 0)
        # Warm up (registrations, allocator) before the memory baseline.
        _linear_regression(cluster.target("worker", 0), 20, lambda: False)
        rss_before = _rss_kib(pid)
        before = status(ps)
        stop, result = threading.Event(), {}
        sender = threading.Thread(target=lambda: result.update(
            replies=_send_all(ps, messages, stop, linger_ms=20000)), daemon=True)
        sender.start()
        try:
            losses, w, steps = _linear_regression(cluster.target("worker", 0), 100, sender.is_alive)
        finally:
            sender.join(timeout=60)
        assert not sender.is_alive(), "the fuzzer did not finish within 60 s"
        deadline = time.monotonic() + 30   # a busy ps may still be reading the last ones
        while True:
            after = status(ps)
            if after["malformed"] - before["malformed"] >= malformed or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        rss_after = _rss_kib(pid)
        assert cluster._procs[("ps", 0)].poll() is None, "the ps died"
        # An oversized frame (past the socket's limit) only costs the sender its connection.
        _send_all(ps, [[b"\0" * (protocol.MAX_HEADER_BYTES + 1)]], stop)
        assert status(ps)["incarnation"] == before["incarnation"]
    # Training was untouched: the same losses and weights as the same steps run locally.
    ref_losses, ref_w, _ = _linear_regression(None, steps, lambda: False)
    np.testing.assert_allclose(losses, ref_losses[:steps], rtol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-6)
    # Every malformed message was counted, and nothing else was.
    assert after["malformed"] - before["malformed"] == malformed, (after, before, malformed)
    assert after["messages_in"] - before["messages_in"] >= len(messages)
    assert after["errors"] > before["errors"] and result["replies"] > 0
    assert rss_after - rss_before < 64 * 1024, (rss_before, rss_after)
    print("fuzz: %d messages (%d malformed), %d training steps, %d replies, ps RSS %d -> %d KiB"
          % (len(messages), malformed, steps, result["replies"], rss_before, rss_after))
