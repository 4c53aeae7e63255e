"""Streamed tensors: large tensors travel as a head message plus one CHUNK message per frame, copied
into place as they arrive (codec.encode_parts / codec.StreamAssembler), end to end on 127.0.0.1."""

import time

import msgpack
import numpy as np
import pytest
import zmq

from zps.transport import codec, protocol
from zps.transport.codec import ProtocolError, StreamAssembler, encode_parts
from zps.transport.endpoint import RemoteError

MB = 1 << 20
CHUNK = protocol.STREAM_CHUNK_BYTES     # bytes per chunk message (in frames of FRAME_BYTES)
WAIT = 10


def chunk(msg_id, index, offset, data):
    head = msgpack.packb({"z": protocol.MAGIC, "v": protocol.VERSION, "k": protocol.CHUNK,
                          "id": msg_id, "i": index, "o": offset})
    return [head, data]


def head(msg_id, metas, kind=protocol.REQUEST, method="m"):
    return [msgpack.packb({"z": protocol.MAGIC, "v": protocol.VERSION, "k": kind, "id": msg_id,
                           "m": method, "t": metas})]


def feed_all(assembler, parts, source=b""):
    out = [assembler.feed([bytes(memoryview(f)) for f in p], source) for p in parts]
    assert all(m is None for m in out[:-1])
    return out[-1]


# -- encoding ---------------------------------------------------------------------------------------
def test_small_messages_are_one_message():
    parts = encode_parts(protocol.REQUEST, 1, {"a": 1}, [np.zeros(MB // 8), np.array([b"s"], object)],
                         method="m")
    assert len(parts) == 1
    assert [bytes(memoryview(f)) for f in parts[0]] == \
        [bytes(memoryview(f)) for f in codec.encode(protocol.REQUEST, 1, {"a": 1},
                                                     [np.zeros(MB // 8), np.array([b"s"], object)],
                                                     method="m")]


def test_large_tensors_stream_as_zero_copy_chunks():
    big = np.arange(2 * CHUNK // 4 + 3, dtype=np.float32)        # 2 chunks + 12 bytes: 3 chunks
    frames_per_chunk = CHUNK // protocol.FRAME_BYTES
    parts = encode_parts(protocol.ONEWAY, 9, None, [np.int32(1), big], method="put")
    header = msgpack.unpackb(parts[0][0])
    assert header["t"] == [["int32", [], -1], ["float32", [big.size], 0]]
    assert len(parts[0]) == 2 and len(parts) == 1 + 3
    offsets = []
    for p in parts[1:]:
        h = msgpack.unpackb(p[0])
        assert (h["k"], h["id"], h["i"]) == (protocol.CHUNK, 9, 1)
        offsets.append(h["o"])
        for f in p[1:]:
            # Frames of at most FRAME_BYTES, views of the array's own memory (not copies).
            assert memoryview(f).nbytes <= protocol.FRAME_BYTES
            assert np.shares_memory(np.frombuffer(f, np.uint8), big.view(np.uint8))
    assert offsets == [0, CHUNK, 2 * CHUNK]
    assert [len(p) - 1 for p in parts[1:]] == [frames_per_chunk, frames_per_chunk, 1]
    assert memoryview(parts[-1][1]).nbytes == 12


# -- reassembly ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", sorted(protocol.WIRE_DTYPES))
def test_round_trip_of_every_dtype(dtype):
    big = (np.arange(CHUNK + 4) % 251).astype(dtype).reshape(-1, 2)   # over one chunk: streams
    small = np.arange(6).astype(dtype)
    words = np.array([b"x", b"yz"], dtype=object)
    msg = feed_all(StreamAssembler(), encode_parts(protocol.REQUEST, 3, {"b": [1]}, [big, small, words],
                                                   method="run"))
    assert (msg.kind, msg.id, msg.method, msg.body) == (protocol.REQUEST, 3, "run", {"b": [1]})
    got_big, got_small, got_words = msg.tensors
    assert got_big.dtype == big.dtype and got_big.shape == big.shape
    assert got_big.tobytes() == big.tobytes() and got_big.flags.writeable
    np.testing.assert_array_equal(got_small, small)
    assert got_words.tolist() == [b"x", b"yz"]
    assert msg.nbytes == big.nbytes + small.nbytes


def test_non_contiguous_and_big_endian_tensors_stream():
    base = np.arange(2 * CHUNK // 8 * 2, dtype=">f8").reshape(-1, 2)
    strided = base[:, 0]                       # non-contiguous, big-endian
    msg = feed_all(StreamAssembler(), encode_parts(protocol.REPLY, 4, None, [strided, base]))
    np.testing.assert_array_equal(msg.tensors[0], strided)
    np.testing.assert_array_equal(msg.tensors[1], base)
    assert msg.tensors[1].dtype == np.float64 and msg.tensors[1].dtype.isnative


def test_interleaved_messages_from_several_sources():
    a = np.full(2 * CHUNK + 1, 1, np.uint8)
    b = np.full(3 * CHUNK, 2, np.uint8)
    pa = encode_parts(protocol.REQUEST, 1, None, [a], method="m")
    pb = encode_parts(protocol.REQUEST, 1, None, [b], method="m")   # same id, other peer
    asm = StreamAssembler()
    got = []
    for i in range(max(len(pa), len(pb))):
        for src, parts in ((b"A", pa), (b"B", pb)):
            if i < len(parts):
                m = asm.feed(parts[i], src)
                if m is not None:
                    got.append((src, m))
        if i == 0:
            assert asm.in_flight() == (2, a.nbytes + b.nbytes)
        small = asm.feed(codec.encode(protocol.ONEWAY, 99, "between", method="n"), b"A")
        assert small.body == "between"   # other messages are not held up by a stream
    assert [(s, m.tensors[0].sum()) for s, m in got] == [(b"A", 2 * CHUNK + 1), (b"B", 6 * CHUNK)]
    assert asm.in_flight() == (0, 0)


def test_decode_refuses_streams():
    parts = encode_parts(protocol.REQUEST, 1, None, [np.zeros(2 * CHUNK, np.uint8)], method="m")
    with pytest.raises(ProtocolError, match="tensor 0 is streamed: the message needs a StreamAssembler"):
        codec.decode(parts[0])
    with pytest.raises(ProtocolError, match="a chunk of a streamed message needs a StreamAssembler"):
        codec.decode(parts[1])


# -- validation -----------------------------------------------------------------------------------
def started(msg_id=5, nbytes=3 * MB, source=b""):
    asm = StreamAssembler()
    assert asm.feed(head(msg_id, [["uint8", [nbytes], 0]]), source) is None
    return asm


def test_stray_chunks_are_ignored():
    asm = StreamAssembler()
    assert asm.feed(chunk(1, 0, 0, b"x")) is None
    asm = started()
    assert asm.feed(chunk(5, 0, 0, b"x"), b"other peer") is None
    assert asm.feed(chunk(6, 0, 0, b"x")) is None
    assert asm.in_flight() == (1, 3 * MB)


@pytest.mark.parametrize("bad, match", [
    (chunk(5, 0, 1, b"x"), "chunk of 1 bytes at offset 1 does not continue tensor 0 of message 5 "
                           r"\(0 of 3145728 bytes received\)"),
    (chunk(5, 0, 0, b""), "chunk of 0 bytes at offset 0"),
    (chunk(5, 0, 0, b"x" * (3 * MB + 1)), "chunk of 3145729 bytes at offset 0"),
    (chunk(5, 1, 0, b"x"), "chunk \\(tensor 1, offset 0, 2 frames\\) of message 5 matches no streamed"),
    (chunk(5, "0", 0, b"x"), "matches no streamed tensor"),
    (chunk(5, 0, None, b"x"), "matches no streamed tensor"),
    (chunk(5, 0, 0, b"x")[:1], "1 frames"),
])
def test_a_bad_chunk_drops_its_message(bad, match):
    asm = started()
    with pytest.raises(ProtocolError, match=match) as info:
        asm.feed(bad)
    # The error names the dropped message, so that a request can still be answered.
    assert (info.value.message_kind, info.value.message_id) == (protocol.REQUEST, 5)
    assert asm.in_flight() == (0, 0) and asm.dropped == 1
    assert asm.feed(chunk(5, 0, 0, b"x" * MB)) is None   # the rest of it is ignored


def test_chunks_past_the_end_and_duplicates_are_refused():
    asm = started(nbytes=MB + 10)
    assert asm.feed(chunk(5, 0, 0, b"a" * MB)) is None
    with pytest.raises(ProtocolError, match="chunk of 1048576 bytes at offset 0 does not continue"):
        asm.feed(chunk(5, 0, 0, b"a" * MB))            # the same chunk again
    asm = started(nbytes=MB + 10)
    assert asm.feed(chunk(5, 0, 0, b"a" * MB)) is None
    with pytest.raises(ProtocolError, match="chunk of 11 bytes at offset 1048576"):
        asm.feed(chunk(5, 0, MB, b"a" * 11))


def test_a_message_restarted_while_streaming_is_dropped():
    asm = started()
    with pytest.raises(ProtocolError, match="message 5 started again while its tensors were still streaming"):
        asm.feed(head(5, [["uint8", [MB], 0]]))
    assert asm.in_flight() == (0, 0)


@pytest.mark.parametrize("metas, match", [
    ([["float32", [0], 0]], "tensor 0: an empty tensor cannot be streamed"),
    ([["object", [4], 0]], "tensor 0: dtype 'object' is not allowed"),
    ([["string", [1], 0]], "string tensor of shape \\[1\\] needs 1 values"),
    ([["float64", [1 << 40], 0]], "tensor 0: 8796093022208 bytes exceeds the limit"),
    ([["float32", [-4], 0]], "invalid dimension -4"),
])
def test_bad_heads_are_refused_before_allocating(metas, match):
    with pytest.raises(ProtocolError, match=match):
        StreamAssembler().feed(head(1, metas))


def test_bytes_in_flight_are_bounded():
    asm = StreamAssembler(codec.Limits(max_message_bytes=5 * MB))
    assert asm.feed(head(1, [["uint8", [3 * MB], 0]])) is None
    with pytest.raises(ProtocolError, match="streamed message 2 of 3145728 bytes would exceed the "
                                            "5242880 bytes allowed in flight") as info:
        asm.feed(head(2, [["uint8", [3 * MB], 0]]))
    assert info.value.message_id == 2
    assert asm.in_flight() == (1, 3 * MB)
    # Once the first one completes, there is room again.
    for offset in range(0, 3 * MB, MB):
        done = asm.feed(chunk(1, 0, offset, b"\x07" * MB))
    assert done.tensors[0].shape == (3 * MB,) and asm.in_flight() == (0, 0)
    assert asm.feed(head(2, [["uint8", [3 * MB], 0]])) is None


def test_stalled_messages_expire():
    asm = StreamAssembler(stall_timeout=5.0)
    assert asm.feed(head(1, [["uint8", [2 * MB], 0]])) is None
    assert asm.feed(chunk(1, 0, 0, b"a" * MB)) is None
    assert asm.expire(time.monotonic() + 1.0) == []
    dropped = asm.expire(time.monotonic() + 6.0)
    assert [m.id for m in dropped] == [1] and asm.in_flight() == (0, 0) and asm.dropped == 1
    assert asm.feed(chunk(1, 0, MB, b"a" * MB)) is None   # a late chunk changes nothing


# -- early delivery: a message given out at its head, its streamed tensors still arriving ----------
def test_early_messages_come_at_their_head_and_fill_as_chunks_arrive():
    asm = StreamAssembler(early=lambda msg: msg.method == "put")
    msg = asm.feed(head(1, [["float32", [MB // 2], 0], ["int32", [2], 1]], method="put")
                   + [np.array([4, 5], np.int32).tobytes()])
    incoming, small = msg.tensors
    assert isinstance(incoming, codec.Incoming) and incoming.shape == (MB // 2,)
    assert small.tolist() == [4, 5]
    done = []
    incoming.when_complete(done.append)
    ranges = incoming.ranges()
    data = np.arange(MB // 2, dtype=np.float32)
    raw = data.tobytes()
    assert asm.feed(chunk(1, 0, 0, raw[:MB])) is None
    assert next(ranges)[:2] == (0, MB // 4) and not done
    assert asm.feed(chunk(1, 0, MB, raw[MB:])) is None    # the last chunk: delivered already
    assert next(ranges)[:2] == (MB // 4, MB // 2) and next(ranges, "end") == "end"
    assert len(done) == 1 and done[0] is incoming.array
    np.testing.assert_array_equal(incoming.array, data)
    assert asm.in_flight() == (0, 0)
    late = []
    incoming.when_complete(late.append)   # after the fact: at once
    assert late == [incoming.array]
    # Messages the predicate does not pick come whole, as before.
    assert asm.feed(head(2, [["uint8", [MB], 0]], method="other")) is None
    assert asm.feed(chunk(2, 0, 0, b"x" * MB)).tensors[0].shape == (MB,)


def test_a_claimed_incoming_is_read_from_the_received_frames_without_a_copy():
    asm = StreamAssembler(early=lambda msg: True)
    incoming = asm.feed(head(1, [["float32", [MB // 2], 0]])).tensors[0]
    data = np.arange(MB // 2, dtype=np.float32)
    raw = data.tobytes()
    incoming.array[:] = -1.0
    assert asm.feed(chunk(1, 0, 0, raw[:MB])) is None    # before the claim: copied
    incoming.claim()
    assert asm.feed(chunk(1, 0, MB, raw[MB:])) is None   # after: kept as received
    got = list(incoming.ranges())
    assert [(a, b) for a, b, _ in got] == [(0, MB // 4), (MB // 4, MB // 2)]
    np.testing.assert_array_equal(np.concatenate([v for _, _, v in got]), data)
    assert (incoming.array[MB // 4:] == -1.0).all()        # never copied into the array
    with pytest.raises(RuntimeError, match="claimed"):
        incoming.when_complete(print)


@pytest.mark.parametrize("how", ["bad chunk", "stall"])
def test_an_early_message_whose_stream_stops_fails_its_tensors(how):
    asm = StreamAssembler(stall_timeout=5.0, early=lambda msg: True)
    incoming = asm.feed(head(1, [["uint8", [2 * MB], 0]])).tensors[0]
    assert asm.feed(chunk(1, 0, 0, b"a" * MB)) is None
    done = []
    incoming.when_complete(done.append)
    if how == "bad chunk":
        with pytest.raises(ProtocolError):
            asm.feed(chunk(1, 0, 5, b"a"))
    else:
        assert [m.id for m in asm.expire(time.monotonic() + 6.0)] == [1]
    assert len(done) == 1 and isinstance(done[0], ProtocolError)
    with pytest.raises(ProtocolError, match="before all its tensors arrived"):
        next(incoming.ranges())
    incoming.fail(RuntimeError("later"))   # the first error stays
    with pytest.raises(ProtocolError):
        next(incoming.ranges())


# -- received buffers are recycled ------------------------------------------------------------------
def test_buffer_pool_gives_an_array_again_only_when_nothing_references_it():
    pool = codec.BufferPool(min_bytes=64, max_bytes=1200)
    small = pool.empty((4,), np.dtype("float32"))
    assert small.shape == (4,) and pool.pooled_bytes() == 0          # small: plain np.empty
    a = pool.empty((8, 16), np.dtype("float32"))
    assert a.shape == (8, 16) and a.dtype == np.float32 and a.flags.c_contiguous
    assert a.flags.owndata and a.flags.writeable                     # sessions need not copy it
    address = a.ctypes.data
    holders = [a[::2], a[::2].T, np.frombuffer(a, np.uint8), memoryview(a[1]), a]
    del a
    while holders:
        other = pool.empty((8, 16), np.dtype("float32"))               # still in use: another one
        assert other.ctypes.data != address
        del other
        holders.pop()
    again = pool.empty((8, 16), np.dtype("float32"))
    assert again.ctypes.data == address
    again.flags.writeable = False
    del again
    assert pool.empty((8, 16), np.dtype("float32")).flags.writeable
    assert pool.empty((2, 64), np.dtype("float32")).ctypes.data != address   # another shape
    # Never more than max_bytes: unused arrays go, least recently used first; used ones stay.
    in_use = [pool.empty((8, 16), np.dtype("float32")), pool.empty((2, 64), np.dtype("float32"))]
    assert pool.pooled_bytes() <= 1200
    big = pool.empty((700,), np.dtype("uint8"))
    assert pool.pooled_bytes() <= 1200 and big.nbytes == 700
    assert len({a.ctypes.data for a in in_use + [big]}) == 3
    assert pool.empty((2000,), np.dtype("uint8")).nbytes == 2000 and pool.pooled_bytes() <= 1200


def test_streamed_tensors_reuse_their_memory():
    asm = StreamAssembler()
    parts = encode_parts(protocol.ONEWAY, 1, None, [np.ones(CHUNK + 4, np.uint8)], method="m")
    first = feed_all(asm, parts).tensors[0]
    address = first.ctypes.data
    second = feed_all(asm, parts).tensors[0]
    assert second.ctypes.data != address        # the first one is still in use
    del first
    third = feed_all(asm, parts).tensors[0]
    assert third.ctypes.data == address and third.sum() == CHUNK + 4


# -- end to end (the ``transports`` fixture: conftest.py) -----------------------------------------
def echo(msg, responder):
    if responder is not None:
        responder.reply(msg.body, msg.tensors)


def test_requests_and_replies_stream_both_ways(transports):
    server = transports().bind("127.0.0.1:0", echo)
    client = transports()
    big = np.random.default_rng(2).standard_normal((5, CHUNK // 8 // 4 + 1))   # 5/4 chunk + 40 bytes
    n_chunks = -(-big.nbytes // CHUNK)
    assert n_chunks == 2
    futures = [client.request(server.address, "echo", i, [big * i, np.arange(i)]) for i in range(4)]
    for i, f in enumerate(futures):
        msg = f.result(timeout=WAIT)
        assert msg.body == i
        np.testing.assert_array_equal(msg.tensors[0], big * i)
        np.testing.assert_array_equal(msg.tensors[1], np.arange(i))
    assert server.assembler.in_flight() == (0, 0)
    # Each way: per request, a head and its chunks.
    assert server.stats.messages_in == server.stats.messages_out == 4 * (1 + n_chunks)
    assert server.stats.malformed == 0


def test_a_bad_chunk_gets_its_request_an_error_and_the_server_keeps_serving(transports):
    server = transports().bind("127.0.0.1:0", echo)
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    try:
        dealer.connect("tcp://" + server.address)
        dealer.send_multipart(head(41, [["uint8", [2 * MB], 0]], method="echo"))
        dealer.send_multipart(chunk(41, 0, 7, b"x" * 10))        # wrong offset
        assert dealer.poll(WAIT * 1000), "no answer to the request whose chunk was bad"
        msg = codec.decode(dealer.recv_multipart())
        assert msg.kind == protocol.ERROR and msg.id == 41 and msg.body["code"] == 3
        assert "chunk of 10 bytes at offset 7 does not continue tensor 0" in msg.body["message"]
        assert server.stats.malformed == 1
        # A stream that stops half way holds its memory only until it stalls.
        dealer.send_multipart(head(42, [["uint8", [2 * MB], 0]], method="echo"))
        dealer.send_multipart(chunk(42, 0, 0, b"x" * MB))
        deadline = time.monotonic() + WAIT
        while server.assembler.in_flight() != (1, 2 * MB) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.assembler.in_flight() == (1, 2 * MB)
        server.assembler.stall_timeout = 0.2       # read by the I/O loop's periodic check
        while server.assembler.in_flight() != (0, 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.assembler.in_flight() == (0, 0) and server.assembler.dropped == 2
        client = transports()
        assert client.request(server.address, "echo", "alive").result(timeout=WAIT).body == "alive"
    finally:
        dealer.close(linger=0)
        ctx.term()


def test_a_bad_chunk_in_a_reply_fails_the_request_at_once(transports):
    # A raw ROUTER answers with a streamed reply whose chunk does not fit.
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    try:
        client = transports()
        future = client.request("127.0.0.1:%d" % port, "get", timeout=30)
        assert router.poll(WAIT * 1000)
        identity, header, *_ = router.recv_multipart()
        msg_id = msgpack.unpackb(header)["id"]
        router.send_multipart([identity] + head(msg_id, [["float32", [MB], 0]], kind=protocol.REPLY))
        router.send_multipart([identity] + chunk(msg_id, 0, 0, b"x" * (4 * MB + 4)))
        start = time.monotonic()
        exc = future.exception(timeout=WAIT)
        assert "malformed reply to 'get'" in str(exc) and "does not continue tensor 0" in str(exc)
        assert time.monotonic() - start < 5 and not isinstance(exc, RemoteError)
    finally:
        router.close(linger=0)
        ctx.term()
