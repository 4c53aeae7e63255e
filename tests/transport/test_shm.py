"""Shared-memory rings beside direct connections (zps.transport.shm): the ring alone, then on
connections between transports of this process and of another."""

import os
import socket
import struct

import numpy as np
import pytest

from tests.transport.conftest import WAIT
from tests.transport.test_direct import closed_by_peer, direct_peer, read_message, request_frames
from zps.transport import codec, direct, protocol, shm

pytestmark = pytest.mark.skipif(shm.SEALS is None, reason="no rings on this platform (not "
                                "Linux, or not x86: see zps.transport.shm)")

K64 = shm.MIN_FRAME_BYTES


def ring_pair(frames=4):
    ring = shm.Ring(shm.HEADER_BYTES + frames * K64)
    return ring, shm.Reader.open(ring.offer())


def frame_of(value, n=K64):
    return bytes([value]) * n


# -- the ring alone -------------------------------------------------------------------------------
def test_a_ring_is_used_once_its_reader_marked_it_ready():
    ring = shm.Ring(shm.HEADER_BYTES + 4 * K64)
    assert not ring.ready and ring.put(frame_of(1), K64) is None   # nobody opened it yet
    reader = shm.Reader.open(ring.offer())
    assert ring.ready
    start = ring.put(frame_of(1), K64)
    assert start == 0 and bytes(reader.take(start, K64)) == frame_of(1)
    ring.close()
    reader.close()
    assert not ring.ready and ring.put(frame_of(2), K64) is None
    ring.close()   # twice: nothing happens
    with pytest.raises(shm.RingError):
        reader.take(K64, K64)


def test_frames_fill_the_ring_wrap_at_its_end_and_start_over_once_all_is_read():
    ring, reader = ring_pair(4)
    assert ring.put(frame_of(0, K64 - 1), K64 - 1) is None          # small: the socket's
    assert ring.put(frame_of(0, 5 * K64), 5 * K64) is None          # larger than the ring
    starts = [ring.put(frame_of(i), K64) for i in range(1, 4)]
    assert starts == [0, K64, 2 * K64]
    assert ring.put(frame_of(9, 2 * K64), 2 * K64) is None          # 1 free at the end only
    assert bytes(reader.take(starts[0], K64)) == frame_of(1)       # frees the start
    assert reader.consumed == K64
    wrapped = ring.put(frame_of(4, 2 * K64 - 8), 2 * K64 - 8)
    assert wrapped is None   # the end has 1, the start 1: a frame never wraps
    last = ring.put(frame_of(4), K64)                               # the end's slot
    assert last == 3 * K64
    nxt = ring.put(frame_of(5), K64)                                # wraps to the start
    assert nxt == 4 * K64
    into = bytearray(K64)
    for start, value in zip(starts[1:] + [last, nxt], (2, 3, 4, 5)):
        out = reader.take(start, K64, memoryview(into))
        assert bytes(out) == frame_of(value)
    # All read: the next frame starts at the ring's start again, even where it would fit on.
    restart = ring.put(frame_of(6, 3 * K64), 3 * K64)
    assert restart % ring.capacity == 0 and restart > nxt
    # What it skipped is not unread: the ring holds a whole capacity from there.
    fourth = ring.put(frame_of(7), K64)
    assert fourth == restart + 3 * K64 and ring.put(frame_of(8), K64) is None
    assert bytes(reader.take(restart, 3 * K64)) == frame_of(6, 3 * K64)
    assert bytes(reader.take(fourth, K64)) == frame_of(7)
    assert ring.frames == reader.frames == 7


def test_a_ring_takes_the_pieces_of_a_gathered_frame():
    ring, reader = ring_pair()
    pieces = codec.Pieces([b"a" * 100, memoryview(np.arange(K64, dtype=np.uint8)), b"z" * 7])
    n = 107 + K64
    start = ring.put(pieces, n)
    assert bytes(reader.take(start, n)) == b"".join(bytes(p) for p in pieces)


@pytest.mark.parametrize("start, n", [(0, 2 * K64), (3 * K64, 2 * K64), (-1, K64)])
def test_a_reader_refuses_positions_the_writer_could_not_have_sent(start, n):
    ring, reader = ring_pair(4)
    reader.take(ring.put(frame_of(1, 2 * K64), 2 * K64), 2 * K64)
    with pytest.raises(shm.RingError, match="ring position"):
        reader.take(start % (1 << 64), n)   # behind what was read, or across the ring's end


def test_offers_that_cannot_be_opened_give_no_reader(tmp_path):
    ring = shm.Ring(shm.HEADER_BYTES + K64)
    pid, fd, size, token = shm.OFFER.unpack(ring.offer())
    assert shm.Reader.open(shm.NO_OFFER) is None
    assert shm.Reader.open(shm.OFFER.pack(pid, fd, size, b"x" * 16)) is None   # another token
    assert shm.Reader.open(shm.OFFER.pack(pid, fd, size + 4096, token)) is None  # another size
    assert shm.Reader.open(shm.OFFER.pack(pid, 10 ** 6, size, token)) is None   # no such fd
    # A file whose first bytes an attacker knows (zeros) is never opened, let alone written.
    path = tmp_path / "f"
    path.write_bytes(b"\0" * size)
    with open(path, "r+b") as f:
        assert shm.Reader.open(shm.OFFER.pack(pid, f.fileno(), size, bytes(16))) is None
    assert path.read_bytes() == b"\0" * size
    # Nor a memfd of the right name whose size is not sealed (it could shrink under a reader).
    loose = os.memfd_create(shm.NAME, os.MFD_CLOEXEC)
    try:
        os.ftruncate(loose, size)
        assert shm.Reader.open(shm.OFFER.pack(pid, loose, size, bytes(16))) is None
    finally:
        os.close(loose)
    assert not ring.ready
    with pytest.raises(OSError):   # and a ring's own size cannot change
        os.ftruncate(ring.fd, shm.HEADER_BYTES)


# -- on direct connections ----------------------------------------------------------------------
def conn_rings(client, server):
    peer = direct_peer(client, server.address)
    (owner,) = server.direct_conns
    return peer.direct, owner.conn


def test_large_frames_go_through_the_rings_both_ways(transports, server):
    client = transports()
    mine, theirs = conn_rings(client, server)
    big = np.random.default_rng(0).standard_normal(3 << 20).astype(np.float32)  # streamed
    mid = np.arange(50_000, dtype=np.float32)       # one 200 KB frame
    small = np.arange(6, dtype=np.int64)
    for i in range(3):
        reply = client.request(server.address, "echo", {"i": i}, [small, mid * i, big]).result(WAIT)
        assert reply.body == {"i": i}
        np.testing.assert_array_equal(reply.tensors[0], small)
        np.testing.assert_array_equal(reply.tensors[1], mid * i)
        np.testing.assert_array_equal(reply.tensors[2], big)
    frames = 3 * (1 + big.nbytes // (1 << 20))   # mid, and big's 1 MB frames
    assert mine.ring_out.frames == theirs.ring_in.frames == frames
    assert theirs.ring_out.frames == mine.ring_in.frames == frames


def test_a_full_ring_leaves_frames_on_the_socket_in_order(transports, server, monkeypatch):
    monkeypatch.setattr(shm, "RING_BYTES", shm.HEADER_BYTES + (2 << 20))   # 2 of 12 frames
    client = transports()
    mine, _ = conn_rings(client, server)
    big = np.random.default_rng(1).standard_normal(3 << 20).astype(np.float32)
    pending = [client.request(server.address, "echo", None, [big * i]) for i in range(4)]
    for i, f in enumerate(pending):
        np.testing.assert_array_equal(f.result(WAIT).tensors[0], big * i)
    assert 0 < mine.ring_out.frames < 4 * 12


def test_without_rings_everything_stays_on_the_socket(transports, server, monkeypatch):
    monkeypatch.setattr(shm, "RING_BYTES", 0)
    client = transports()
    mine, theirs = conn_rings(client, server)
    assert (mine.ring_out, mine.ring_in, theirs.ring_out, theirs.ring_in) == (None,) * 4
    big = np.arange(1 << 20, dtype=np.float32)
    np.testing.assert_array_equal(
        client.request(server.address, "echo", None, [big]).result(WAIT).tensors[0], big)


def test_a_peer_in_another_process_reads_and_writes_through_rings(transports, processes):
    client = transports()
    _, address = processes()
    peer = direct_peer(client, address)
    big = np.random.default_rng(2).standard_normal(1 << 20).astype(np.float32)   # 4 MB
    for i in range(3):
        np.testing.assert_array_equal(
            client.request(address, "echo", None, [big + i]).result(WAIT).tensors[0], big + i)
    assert peer.direct.ring_out.frames == peer.direct.ring_in.frames == 3   # 4 MB: one frame


def v2_connection(bound, ring):
    sock = socket.create_connection(("127.0.0.1", bound.direct_port), timeout=WAIT)
    sock.sendall(direct.MAGIC + bytes([direct.VERSION]) + bound.direct_token
                 + (ring.offer() if ring else shm.NO_OFFER))
    ack = b""
    while len(ack) < len(direct.ACK) + shm.OFFER.size:
        ack += sock.recv(64)
    assert ack[:len(direct.ACK)] == direct.ACK
    return sock


def ring_message(frames, in_ring):
    """A direct-connection message whose frames ``in_ring`` are (length, position) pairs."""
    lens = [n | shm.IN_RING if i in in_ring else len(f) for i, (f, n) in enumerate(frames)]
    body = [shm.POSITION.pack(f) if i in in_ring else f for i, (f, n) in enumerate(frames)]
    return struct.pack("<I%dQ" % len(lens), len(lens), *lens) + b"".join(body)


def test_a_raw_client_writing_its_ring_is_answered(transports, server):
    """A ring frame on the wire: the request's tensor is in the client's ring, the socket
    carries its position; the reply comes on the socket (the client never opened the server's
    ring)."""
    ring = shm.Ring(shm.HEADER_BYTES + 4 * K64)
    sock = v2_connection(server, ring)
    assert ring.ready   # the server opened it
    tensor = np.arange(K64 // 4, dtype=np.float32)
    head, data = codec.encode(protocol.REQUEST, 7, "x", [tensor], method="echo")
    start = ring.put(data, K64)
    sock.sendall(ring_message([(head, len(head)), (start, K64)], {1}))
    reply = read_message(sock)
    assert reply.body == "x"
    np.testing.assert_array_equal(reply.tensors[0], tensor)
    sock.close()
    ring.close()


@pytest.mark.parametrize("offer_ring, position, why", [
    (False, 0, "limits"),               # no ring was offered: a flagged length is just too long
    (True, 3 * K64, "ring position"),   # across the ring's end
])
def test_a_frame_claimed_in_a_ring_that_is_not_there_closes_the_connection(
        transports, server, offer_ring, position, why, caplog):
    ring = shm.Ring(shm.HEADER_BYTES + 4 * K64) if offer_ring else None
    sock = v2_connection(server, ring)
    head = request_frames(1, "echo", None)[0]
    sock.sendall(ring_message([(head, len(head)), (position, 2 * K64)], {1}))
    assert closed_by_peer(sock)
    sock.close()
    if ring is not None:
        ring.close()
    assert server.stats.malformed == 1
    assert any(why in r.getMessage() for r in caplog.records)
    assert transports().request(server.address, "echo", "still up").result(WAIT).body == "still up"


def test_ring_size_from_the_environment():
    assert shm.ring_bytes_from_env("") == 16 << 20
    assert shm.ring_bytes_from_env(" 4 ") == 4 << 20 and shm.ring_bytes_from_env("0.5") == 1 << 19
    assert shm.ring_bytes_from_env("0") == 0
    for bad in ("x", "-1", "nan", "1e30"):
        with pytest.raises(ValueError, match="ZPS_SHM_MB must be the megabytes"):
            shm.ring_bytes_from_env(bad)
