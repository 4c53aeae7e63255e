"""Direct connections (zps.transport.direct): plain TCP (or Unix) sockets beside the ZeroMQ ones,
read by the thread that handles their messages; their framing, limits, failures and fallbacks."""

import os
import signal
import socket
import struct
import threading
import time

import msgpack
import numpy as np
import pytest

from tests.transport.conftest import WAIT, _wait_stopped, echo_handler
from zps.transport import codec, direct, endpoint, protocol, spin
from zps.transport.endpoint import PeerUnavailableError
from zps.transport.ports import free_ports


def wait_for(condition, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("%s within %d s" % (what, timeout))
        time.sleep(0.01)


def direct_peer(transport, address):
    """Make requests until ``transport``'s connection to ``address`` is direct; its _Peer."""
    transport.request(address, "echo", "first").result(WAIT)   # on ZeroMQ; asks for the port
    wait_for(lambda: transport._peers[address].direct is not None, "no direct connection")
    return transport._peers[address]


def bound_of(transport):
    (bound,) = transport._bound.values()
    return bound


# -- the transport moves onto direct connections ---------------------------------------------------
def test_requests_move_onto_the_direct_connection_with_small_and_streamed_tensors(
        transports, server):
    client = transports()
    peer = direct_peer(client, server.address)
    big = np.random.default_rng(0).standard_normal(3 << 20).astype(np.float32)  # 12 MB: streamed
    small = np.arange(6, dtype=np.int64).reshape(2, 3)
    futures = [client.request(server.address, "echo", {"i": i}, [small * i, big]) for i in range(3)]
    for i, f in enumerate(futures):
        reply = f.result(WAIT)
        assert reply.body == {"i": i}
        np.testing.assert_array_equal(reply.tensors[0], small * i)
        np.testing.assert_array_equal(reply.tensors[1], big)
    # They went both ways on the direct connection: 3 requests of 1 head + 3 chunks each (and a
    # ping, answered, if the machine was slow enough for the client to ask after a second).
    (conn,) = [o.conn for o in server.direct_conns]
    assert conn.messages_in >= 3 * (1 + big.nbytes // protocol.STREAM_CHUNK_BYTES)
    assert peer.direct.messages_in == conn.messages_in
    # The question for the port is not traffic: the stats count the first echo and these three.
    assert server.stats.messages_out == 1 + conn.messages_in
    assert client.direct_ports[server.address][0] == server.direct_port


def test_one_way_messages_and_errors_go_direct(transports):
    got = []
    done = threading.Event()

    def handler(msg, responder):
        if responder is None:
            got.append((msg.method, msg.body, [t.tolist() for t in msg.tensors]))
            if len(got) == 5:
                done.set()
        else:
            echo_handler(msg, responder)

    server = transports().bind("127.0.0.1:0", handler)
    client = transports()
    direct_peer(client, server.address)
    for i in range(5):
        client.send_oneway(server.address, "note", i, [np.arange(i)])
    assert done.wait(WAIT)
    assert got == [("note", i, [list(range(i))]) for i in range(5)]
    exc = client.request(server.address, "fail", "v").exception(WAIT)
    assert isinstance(exc, endpoint.RemoteError) and exc.code == 5 and exc.op == "save/restore"
    assert all(o.conn.messages_in >= 6 for o in server.direct_conns)   # (pings, if slow)


def test_a_caller_moves_onto_a_direct_connection(transports, server):
    caller = transports().caller()
    assert caller.enter()
    try:
        first = caller.request(server.address, "echo", 1)
        caller.wait([first], timeout=WAIT)
        ch = caller._channels[server.address]

        def moved():   # the connection is attached while the caller waits or sends
            f = caller.request(server.address, "echo", 0)
            caller.wait([f], timeout=WAIT)
            return ch.direct is not None

        wait_for(moved, "no direct connection")
        before = ch.direct.messages_in
        futures = [caller.request(server.address, "echo", i, [np.full(3, i)]) for i in range(20)]
        caller.wait(futures, timeout=WAIT)
        assert [f.result().body for f in futures] == list(range(20))
        assert ch.direct.messages_in >= before + 20   # (and pongs, on a slow machine)
    finally:
        caller.leave()


def test_without_direct_connections_everything_stays_on_zeromq(monkeypatch, transports):
    monkeypatch.setattr(direct, "ENABLED", False)
    server_t, client = transports(), transports()
    assert not server_t.direct_ok
    bound = server_t.bind("127.0.0.1:0", echo_handler)
    assert bound.listener is None and bound.direct_port is None
    for i in range(3):
        assert client.request(bound.address, "echo", i).result(WAIT).body == i
    assert client._peers[bound.address].direct is None and not client.direct_ports


def test_a_server_without_a_listener_answers_the_question_with_no_port(transports):
    server_t = transports()
    server_t.direct_ok = False   # as with CURVE: no listener
    bound = server_t.bind("127.0.0.1:0", echo_handler)
    client = transports()
    for i in range(3):
        assert client.request(bound.address, "echo", i).result(WAIT).body == i
    peer = client._peers[bound.address]
    wait_for(lambda: peer.asking is None, "the question unanswered")
    assert peer.direct is None and peer.direct_asked and not client.direct_ports


def test_an_unreachable_listener_leaves_the_peer_on_zeromq(monkeypatch, transports, server):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("blocked by a firewall, say")

    monkeypatch.setattr(direct, "connect", refuse)
    client = transports()
    for i in range(3):
        assert client.request(server.address, "echo", i).result(WAIT).body == i
    time.sleep(0.2)   # the connecting thread has given up
    for i in range(3):
        assert client.request(server.address, "echo", i).result(WAIT).body == i
    assert client._peers[server.address].direct is None
    assert server.address not in client.direct_ports


@pytest.mark.skipif(not direct.UNIX, reason="abstract Unix sockets: Linux, ZPS_DIRECT_UNIX")
def test_a_server_on_this_machine_is_reached_over_its_unix_socket(transports, server):
    client = transports()
    peer = direct_peer(client, server.address)
    assert peer.direct.sock.family == socket.AF_UNIX
    (conn,) = [o.conn for o in server.direct_conns]
    assert conn.sock.family == socket.AF_UNIX
    assert conn.peer == "localhost (pid %d):unix" % os.getpid()   # who, for the logs
    big = np.arange(1 << 20, dtype=np.float32)   # 4 MB: through the shared-memory ring
    reply = client.request(server.address, "echo", "x", [big]).result(WAIT)
    np.testing.assert_array_equal(reply.tensors[0], big)
    assert peer.direct.messages_in == conn.messages_in >= 1   # (and pings, on a slow machine)


def test_without_a_unix_socket_the_client_connects_over_tcp(monkeypatch, transports):
    monkeypatch.setattr(direct, "UNIX", False)   # the server's side: ZPS_DIRECT_UNIX=0
    server = transports().bind("127.0.0.1:0", echo_handler)
    assert server.unix_listener is None
    monkeypatch.undo()   # the client would use one if it were there
    peer = direct_peer(transports(), server.address)
    assert peer.direct.sock.family == socket.AF_INET
    (conn,) = [o.conn for o in server.direct_conns]
    assert conn.peer.startswith("127.0.0.1:")


@pytest.mark.skipif(not direct.UNIX, reason="abstract Unix sockets: Linux, ZPS_DIRECT_UNIX")
def test_unbinding_closes_the_unix_socket(transports):
    bound = transports().bind("127.0.0.1:0", echo_handler)
    name = direct.unix_name(bound.direct_token)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(name)   # it listens
    bound.close()
    wait_for(lambda: bound.unix_listener.fileno() == -1, "the Unix socket still open")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, \
            pytest.raises(ConnectionRefusedError):
        sock.connect(name)


# -- failures ---------------------------------------------------------------------------------------
def test_a_restarted_peer_is_reached_again(transports, processes):
    client = transports()
    proc, address = processes()
    direct_peer(client, address)
    assert client.request(address, "pid").result(WAIT).body == proc.pid
    old_port = client.direct_ports[address][0]
    proc.kill()
    proc.wait(timeout=WAIT)
    wait_for(lambda: client._peers[address].direct is None, "the lost connection unnoticed")
    proc2, _ = processes(address)
    assert client.request(address, "pid").result(WAIT).body == proc2.pid   # on ZeroMQ
    wait_for(lambda: client._peers[address].direct is not None, "no new direct connection")
    assert client.direct_ports[address][0] != old_port
    assert client.request(address, "pid").result(WAIT).body == proc2.pid


def test_a_peer_dying_with_requests_in_flight_fails_them_at_once(transports, processes):
    client = transports()
    proc, address = processes()
    direct_peer(client, address)
    pending = client.request(address, "hang")
    time.sleep(0.1)
    start = time.monotonic()
    proc.kill()
    exc = pending.exception(WAIT)
    assert isinstance(exc, PeerUnavailableError) and "connection lost" in str(exc)
    assert time.monotonic() - start < 3


def test_a_frozen_peer_is_unavailable_after_its_timeout(transports, processes):
    client = transports()
    proc, address = processes()
    direct_peer(client, address)
    proc.send_signal(signal.SIGSTOP)   # its direct connection stays up; nothing answers pings
    try:
        _wait_stopped(proc.pid)
        start = time.monotonic()
        exc = client.request(address, "echo", peer_timeout=1.0).exception(WAIT)
        assert isinstance(exc, PeerUnavailableError) and "no answer" in str(exc)
        assert 0.9 < time.monotonic() - start < 4.0
    finally:
        proc.send_signal(signal.SIGCONT)


def test_a_busy_peer_answering_pings_on_the_direct_connection_is_waited_for(
        monkeypatch, transports, server):
    monkeypatch.setattr(endpoint.protocol, "HEARTBEAT_INTERVAL_S", 0.1)
    monkeypatch.setattr(endpoint, "POLL_INTERVAL_MS", 20)
    client = transports()
    direct_peer(client, server.address)
    pending = client.request(server.address, "hang", peer_timeout=0.5)
    time.sleep(1.5)   # three peer timeouts: pongs on the direct connection keep it alive
    assert not pending.done()


# -- what the server accepts on its listener -------------------------------------------------------
def raw_connection(bound, preamble=None):
    sock = socket.create_connection(("127.0.0.1", bound.direct_port), timeout=WAIT)
    sock.sendall(direct.MAGIC + bytes([1]) + bound.direct_token   # version 1: no rings
                 if preamble is None else preamble)
    if preamble is None:
        assert sock.recv(len(direct.ACK)) == direct.MAGIC + bytes([1])
    return sock


def frame(*frames):
    return struct.pack("<I%dQ" % len(frames), len(frames), *map(len, frames)) + b"".join(frames)


def closed_by_peer(sock):
    sock.settimeout(WAIT)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def request_frames(msg_id, method, body):
    return codec.encode(protocol.REQUEST, msg_id, body, method=method)


def read_message(sock):
    sock.settimeout(WAIT)
    buf = b""
    while True:
        if len(buf) >= 4:
            n, = struct.unpack_from("<I", buf)
            if len(buf) >= 4 + 8 * n:
                lens = struct.unpack_from("<%dQ" % n, buf, 4)
                if len(buf) >= 4 + 8 * n + sum(lens):
                    break
        more = sock.recv(65536)
        assert more, "connection closed"
        buf += more
    pos, frames = 4 + 8 * n, []
    for size in lens:
        frames.append(buf[pos:pos + size])
        pos += size
    return codec.decode(frames)


@pytest.mark.parametrize("preamble, why", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "not a zps direct connection"),
    (direct.MAGIC + bytes([direct.VERSION + 1]) + b"\0" * direct.TOKEN_BYTES,
     "not a zps direct connection"),
    (direct.MAGIC + bytes([direct.VERSION]) + b"\0" * direct.TOKEN_BYTES, "another server"),
    (direct.MAGIC + bytes([1]) + b"\0" * direct.TOKEN_BYTES, "another server"),
])
def test_a_connection_with_a_bad_preamble_is_closed(transports, server, preamble, why, caplog):
    sock = raw_connection(server, preamble)
    assert closed_by_peer(sock)
    sock.close()
    assert server.stats.malformed == 1
    assert any(why in r.getMessage() for r in caplog.records)
    assert transports().request(server.address, "echo", "still up").result(WAIT).body == "still up"


@pytest.mark.parametrize("data, why", [
    (struct.pack("<I", 0), "a message of 0 frames"),
    (struct.pack("<I", 1 << 30), "a message of 1073741824 frames"),
    (struct.pack("<IQ", 1, 1 << 40), "limits"),    # refused before anything is allocated
    (struct.pack("<IQQ", 2, 1 << 23, 1 << 23) + b"\0" * 64, "limits"),
])
def test_bad_framing_closes_the_connection_and_nothing_else(transports, data, why, caplog):
    limits = codec.Limits(max_header_bytes=1 << 20, max_message_bytes=1 << 23)
    server = transports().bind("127.0.0.1:0", echo_handler, limits=limits)
    other = raw_connection(server)
    sock = raw_connection(server)
    sock.sendall(data)
    assert closed_by_peer(sock)
    sock.close()
    assert server.stats.malformed == 1
    assert any(why in r.getMessage() for r in caplog.records)
    other.sendall(frame(*request_frames(7, "echo", "other")))   # another connection is untouched
    reply = read_message(other)
    assert (reply.kind, reply.id, reply.body) == (protocol.REPLY, 7, "other")
    other.close()


def test_a_malformed_message_in_good_framing_is_refused_and_the_connection_serves_on(
        transports, server):
    sock = raw_connection(server)
    bad_header = msgpack.packb({"z": "zps", "v": protocol.VERSION, "k": protocol.REQUEST, "id": 3,
                                "m": "echo", "t": [["object", [1], 1]]})
    sock.sendall(frame(bad_header, b"x" * 8) + frame(b"\xc1 not msgpack"))
    reply = read_message(sock)
    assert (reply.kind, reply.id) == (protocol.ERROR, 3) and "not allowed" in reply.body["message"]
    wait_for(lambda: server.stats.malformed == 2, "the unparseable header not counted")
    sock.sendall(frame(*request_frames(4, "echo", {"after": True})))
    reply = read_message(sock)
    assert (reply.kind, reply.id, reply.body) == (protocol.REPLY, 4, {"after": True})
    sock.close()


def test_a_connection_that_never_sends_its_preamble_is_closed(monkeypatch, transports, server):
    monkeypatch.setattr(direct, "PREAMBLE_TIMEOUT_S", 0.2)
    sock = socket.create_connection(("127.0.0.1", server.direct_port), timeout=WAIT)
    assert closed_by_peer(sock)
    sock.close()
    wait_for(lambda: not server.direct_conns, "the connection still held")


def test_unbinding_closes_the_listener_and_its_connections(transports):
    server_t = transports()
    bound = server_t.bind("127.0.0.1:0", echo_handler)
    sock = raw_connection(bound)
    port = bound.direct_port
    bound.close()
    assert closed_by_peer(sock)
    sock.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()


# -- answers and one-way messages sent back on the request's connection ----------------------------
def test_one_way_messages_sent_back_reach_the_waiting_caller_before_the_answer(transports):
    def handler(msg, responder):
        for i in range(3):
            responder.send_oneway("back", {"n": i, "of": msg.body}, [np.arange(i + 1)])
        responder.reply("done")

    server = transports().bind("127.0.0.1:0", handler)
    caller = transports().caller()
    assert caller.enter()
    got = []
    caller.on_oneway = lambda msg: got.append((msg.method, msg.body, msg.tensors[0].tolist()))
    try:
        req, on_direct = 0, 0
        while on_direct < 3:   # the first requests on ZeroMQ, the later ones direct
            assert req < 1000, "no direct connection"
            f = caller.request(server.address, "go", req)
            on_direct += caller._channels[server.address].direct is not None
            caller.wait([f], timeout=WAIT)
            assert f.result().body == "done"
            assert got == [("back", {"n": i, "of": req}, list(range(i + 1))) for i in range(3)]
            got.clear()
            req += 1
    finally:
        caller.leave()
    assert caller.on_oneway is None


# -- the connection itself --------------------------------------------------------------------------
@pytest.fixture
def pair():
    a, b = socket.socketpair()
    conns = [direct.Conn(a, peer="a"), direct.Conn(b, peer="b")]
    yield conns
    for c in conns:
        c.close()


def read_all(conn, n, timeout=WAIT):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, "got %d of %d messages" % (len(out), n)
        conn.read(out.append)
        time.sleep(0.001)
    return out


def test_messages_split_anywhere_are_reassembled(pair):
    a, b = pair
    big = np.arange(200_000, dtype=np.float32)   # 800 KB: received into its own buffer
    messages = [[b"h1", b"", memoryview(big)], [b"x" * 70_000], [b"h3", b"t"]]
    wire = b"".join(frame(*[bytes(f) for f in m]) for m in messages)
    got = []
    for i in range(0, len(wire), 977):   # 977-byte pieces: headers and frames cut anywhere
        a.sock.sendall(wire[i:i + 977])
        b.read(got.append)
    assert [[bytes(f) for f in m] for m in got] == [[bytes(f) for f in m] for m in messages]


def test_a_frame_given_as_pieces_is_sent_as_one_frame(pair):
    a, b = pair
    xs = [np.arange(3, dtype=np.float32), np.int8(5), np.ones(4)]
    gathered, = codec.encode_parts(protocol.ONEWAY, 1, None, xs, method="m", gather=True)
    assert any(type(f) is codec.Pieces for f in gathered)
    a.write(gathered + [codec.Pieces([b"", b"ab", b"", b"c"])])
    got, = read_all(b, 1)
    assert [bytes(f) for f in got] == [bytes(codec.joined(f)) for f in gathered] + [b"abc"]
    for x, y in zip(xs, codec.decode(got[:-1]).tensors):
        np.testing.assert_array_equal(x, y)


def test_a_write_the_socket_cannot_take_is_queued_and_flushed(pair):
    a, b = pair
    a.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    blocked = []
    a.on_blocked = blocked.append
    payload = os.urandom(4 << 20)
    a.write([b"head", memoryview(payload)])
    assert blocked == [a] and a.wants_write
    got = []
    deadline = time.monotonic() + WAIT
    while not got:
        assert time.monotonic() < deadline
        a.flush()
        b.read(got.append)
    assert not a.wants_write and [bytes(f) for f in got[0]] == [b"head", payload]


def test_a_blocking_write_to_a_peer_that_reads_nothing_times_out(pair):
    a, _b = pair
    a.blocking = True
    a.send_timeout = 0.3
    a.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    start = time.monotonic()
    with pytest.raises(direct.ConnectionLostError, match="took no data"):
        a.write([b"x" * (8 << 20)])
    assert 0.25 < time.monotonic() - start < 3


def test_messages_before_the_end_of_the_stream_are_delivered_first(pair):
    a, b = pair
    a.write([b"one"])
    a.write([b"two", b"2"])
    a.close()
    time.sleep(0.05)
    got = []
    with pytest.raises(direct.ConnectionLostError, match="closed"):
        for _ in range(2):   # (a read that got less than it asked for does not ask again)
            b.read(got.append)
    assert [[bytes(f) for f in m] for m in got] == [[b"one"], [b"two", b"2"]]


def test_streamed_tensors_are_received_straight_into_place(pair):
    a, b = pair
    assembler = codec.StreamAssembler()
    b.place = assembler.placement
    big = np.random.default_rng(1).standard_normal(3 << 20)   # 24 MB of float64: 6 chunks
    parts = codec.encode_parts(protocol.REPLY, 9, {"x": 1}, [np.arange(3), big])
    assert len(parts) == 1 + big.nbytes // protocol.STREAM_CHUNK_BYTES
    got = []

    def pump():
        deadline = time.monotonic() + WAIT
        while len(got) < len(parts):
            assert time.monotonic() < deadline
            b.read(lambda frames: got.append((frames, assembler.feed(frames))))

    reader = threading.Thread(target=pump)
    reader.start()
    a.blocking = True
    for frames in parts:
        a.write(frames)
    reader.join(WAIT)
    msg = got[-1][1]
    assert [m is None for _, m in got] == [True] * (len(parts) - 1) + [False]
    assert msg.body == {"x": 1} and msg.tensors[0].tolist() == [0, 1, 2]
    np.testing.assert_array_equal(msg.tensors[1], big)
    # Every data frame of every chunk was a view of the tensor's own memory.
    base = msg.tensors[1]
    for frames, _ in got[1:]:
        assert all(np.shares_memory(np.frombuffer(f, np.uint8), base) for f in frames[1:])


def test_a_chunk_that_does_not_continue_its_tensor_is_not_placed(pair):
    assembler = codec.StreamAssembler()
    big = np.ones(1 << 20)   # 8 MB: 2 chunks
    head, first, second = codec.encode_parts(protocol.REPLY, 4, None, [big])
    assert assembler.feed(head) is None
    sizes = [len(f) for f in second[1:]]
    assert assembler.placement(second[0], sizes) is None            # offset 4 MB, expected 0
    assert assembler.placement(first[0], sizes + [5 << 20]) is None   # past the tensor's end
    assert assembler.placement(b"\x00not msgpack", sizes) is None
    assert len(assembler.placement(first[0], sizes)) == len(sizes)


# -- busy-polling -----------------------------------------------------------------------------------
class FakePoller:
    """Answers poll(0) with nothing ``misses`` times, then with an event; records the timeouts."""

    def __init__(self, misses=0, blocking_events=True):
        self.misses, self.blocking_events, self.timeouts = misses, blocking_events, []

    def poll(self, timeout):
        self.timeouts.append(timeout)
        if timeout == 0:
            if self.misses:
                self.misses -= 1
                return []
            return [(3, 1)]
        return [(3, 1)] if self.blocking_events else []


@pytest.fixture
def uncrowded(monkeypatch):
    """Spin tests decide for themselves whether the machine is crowded (the suite's own
    processes may crowd it)."""
    monkeypatch.setattr(spin, "crowded", lambda now, spare=0: False)


def test_spin_polls_without_blocking_once_waits_are_short(uncrowded):
    spinner = spin.Spin(max_s=0.001)
    poller = FakePoller()
    for _ in range(40):   # quick answers to blocking polls: the average wait falls
        assert spinner.poll(poller, 100) == [(3, 1)]
    assert spinner.average < 0.001
    poller.timeouts.clear()
    poller.misses = 3
    assert spinner.poll(poller, 100) == [(3, 1)]
    assert poller.timeouts == [0, 0, 0, 0]   # found while spinning: no blocking poll


def test_spin_gives_up_and_stops_spinning_when_waits_are_long(uncrowded):
    spinner = spin.Spin(max_s=0.001)
    spinner.average = 0.0002
    poller = FakePoller(misses=10 ** 9, blocking_events=False)   # nothing comes
    start = time.monotonic()
    assert spinner.poll(poller, 5) == []
    assert time.monotonic() - start < 0.5
    assert poller.timeouts[0] == 0 and poller.timeouts[-1] == 5   # spun, then blocked
    for _ in range(3):
        spinner.poll(poller, 5)
    poller.timeouts.clear()
    spinner.poll(poller, 5)
    assert poller.timeouts == [5]   # waits were long: straight to the blocking poll


def test_spin_off_never_polls_without_blocking():
    spinner = spin.Spin(max_s=0.0)
    poller = FakePoller()
    for _ in range(20):
        spinner.poll(poller, 100)
    assert 0 not in poller.timeouts


def test_nobody_spins_while_the_machine_has_more_runnable_threads_than_cpus(monkeypatch):
    monkeypatch.setattr(spin, "crowded", lambda now, spare=0: True)
    spinner = spin.Spin(max_s=0.001)
    spinner.average = 0.0001   # waits were short: it would spin
    poller = FakePoller()
    for _ in range(20):
        spinner.poll(poller, 100)
    assert 0 not in poller.timeouts


def test_the_io_loop_spins_sparing_one_thread_waiting_for_a_cpu_and_a_caller_none(monkeypatch):
    spared = {}

    def crowded(now, spare=0):
        spared.setdefault(threading.current_thread().name, set()).add(spare)
        return False

    monkeypatch.setattr(spin, "crowded", crowded)
    monkeypatch.setattr(spin, "SPIN_S", 0.001)   # as on any machine of more than one CPU
    t = endpoint.Transport()
    try:
        address = t.bind("127.0.0.1:0", lambda msg, r: r.reply(None)).address
        for _ in range(200):   # quick replies: both the loop and the caller come to spin
            t.call(address, "x", {})
        assert spared.get(threading.current_thread().name) == {0}
        assert spared.get(t._thread.name) == {1}
    finally:
        t.close()


def _loadavg(path, running):
    path.write_bytes(b"0.52 0.58 0.59 %d/250 1234\n" % running)


@pytest.mark.parametrize("running, cpus, spare, crowded", [
    (4, 2, 1, True), (4, 2, 0, True),    # two threads wait for a CPU
    (3, 2, 1, False), (3, 2, 0, True),   # one: the I/O loop (spare=1) still spins, a caller not
    (9, 16, 0, False)])
def test_the_machine_is_crowded_when_more_threads_than_spared_wait_for_its_cpus(
        tmp_path, running, cpus, spare, crowded):
    path = tmp_path / "loadavg"
    _loadavg(path, running)
    check = spin._Crowding(str(path), cpus=cpus)
    try:
        assert check(0.0, spare) is False   # one reading is not enough: threads pass by
        assert check(check.next_check, spare) is crowded
        assert check(check.next_check, spare) is crowded
        _loadavg(path, 1)   # read again only CROWDED_CHECK_S after the last reading ...
        assert check(check.next_check - 1e-6, spare) is crowded
        assert check(check.next_check, spare) is False   # ... and then no longer crowded
    finally:
        os.close(check._fd)


def test_a_thread_passing_by_does_not_make_the_machine_crowded(tmp_path):
    path = tmp_path / "loadavg"
    _loadavg(path, 2)
    check = spin._Crowding(str(path), cpus=2)
    try:
        for running in (2, 5, 2, 5, 2):   # one reading in two sees threads waiting
            _loadavg(path, running)
            assert check(check.next_check, 0) is False
    finally:
        os.close(check._fd)


@pytest.mark.parametrize("content", [b"garbage\n", None])
def test_the_machine_is_never_crowded_where_its_run_queue_cannot_be_read(tmp_path, content):
    path = tmp_path / "loadavg"
    if content is not None:
        path.write_bytes(content)
    check = spin._Crowding(str(path), cpus=1)
    for _ in range(3):
        assert check(check.next_check, 0) is False
    assert check._fd is None   # and it stops trying


def _policy_of(thread):
    return os.sched_getscheduler(thread.native_id)


def _in_thread_of_its_own(fn):
    """``fn()``'s result, run in a new thread that starts under SCHED_OTHER (this one may not:
    the policy goes with the thread, and a thread that ran steps is batch)."""
    seen = {}

    def run():
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        try:
            seen["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            seen["error"] = e

    th = threading.Thread(target=run)
    th.start()
    th.join(timeout=20)
    assert not th.is_alive()
    if "error" in seen:
        raise seen["error"]
    return seen["result"]


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies")
@pytest.mark.parametrize("setting", [True, False])
def test_the_io_thread_and_a_thread_calling_on_its_own_sockets_are_batch_threads(
        monkeypatch, setting):
    monkeypatch.setattr(spin, "BATCH", setting)   # False: ZPS_SCHED_BATCH=0
    # made by a thread of the default policy (its threads inherit its policy)
    t = _in_thread_of_its_own(endpoint.Transport)
    try:
        address = t.bind("127.0.0.1:0", lambda msg, r: r.reply(None)).address

        def call(use_caller):
            # a request through the I/O thread leaves the calling thread's policy alone; a call
            # on the thread's own sockets (a Caller, as a session's step makes) makes it batch
            if use_caller:
                assert t.call(address, "x", {}).kind == protocol.REPLY
                assert t._local.caller is not None
            else:
                t.request(address, "x", {}).result(5)
            return os.sched_getscheduler(0)

        batch = os.SCHED_BATCH if setting else os.SCHED_OTHER
        assert _in_thread_of_its_own(lambda: call(False)) == os.SCHED_OTHER
        assert _policy_of(t._thread) == batch
        assert _in_thread_of_its_own(lambda: call(True)) == batch
    finally:
        t.close()


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies")
@pytest.mark.parametrize("setting, before, after, result", [
    (True, "SCHED_OTHER", "SCHED_BATCH", True),
    (False, "SCHED_OTHER", "SCHED_OTHER", False),   # ZPS_SCHED_BATCH=0
    (True, "SCHED_IDLE", "SCHED_IDLE", False)])      # a policy someone chose is kept
def test_run_in_batch_takes_batch_scheduling_only_from_the_default_policy(
        monkeypatch, setting, before, after, result):
    monkeypatch.setattr(spin, "BATCH", setting)

    def thread():
        os.sched_setscheduler(0, getattr(os, before), os.sched_param(0))
        return spin.run_in_batch(), os.sched_getscheduler(0)

    assert _in_thread_of_its_own(thread) == (result, getattr(os, after))


def test_batch_scheduling_from_the_environment():
    assert spin.batch_from_env("") is True and spin.batch_from_env("1") is True
    assert spin.batch_from_env(" 0 ") is False
    for bad in ("yes", "2", "off"):
        with pytest.raises(ValueError, match="ZPS_SCHED_BATCH must be 1 .* or 0"):
            spin.batch_from_env(bad)


def test_a_peer_that_reads_nothing_is_dropped_past_the_queue_limit(monkeypatch, pair):
    a, _b = pair
    monkeypatch.setattr(direct, "MAX_QUEUED_BYTES", 1 << 20)
    a.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    a.on_blocked = lambda conn: None
    a.write([b"x" * (512 << 10)])   # queued: under the limit
    assert a.wants_write
    with pytest.raises(direct.ConnectionLostError, match="reads nothing"):
        a.write([b"y" * (1 << 20)])


def test_a_server_that_does_not_know_the_question_is_asked_once(transports):
    # A zps from before direct connections: a plain ROUTER answering "echo" and refusing the rest.
    import zmq
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    methods = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            if not router.poll(50):
                continue
            identity, *frames = router.recv_multipart()
            msg = codec.decode(frames)
            methods.append(msg.method)
            answer = codec.encode(protocol.REPLY, msg.id, msg.body) if msg.method == "echo" else \
                codec.encode(protocol.ERROR, msg.id, {"code": 12, "op": None,
                                                      "message": "unknown method %r" % msg.method})
            router.send_multipart([identity] + answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        client = transports()
        address = "127.0.0.1:%d" % port
        for i in range(10):
            assert client.request(address, "echo", i).result(WAIT).body == i
        assert methods.count(direct.METHOD) == 1 and methods.count("echo") == 10
        assert client._peers[address].direct is None
    finally:
        stop.set()
        thread.join(WAIT)
        router.close(linger=0)
        ctx.term()


def test_a_connection_made_as_the_transport_closes_is_closed(transports, server):
    client = transports()
    peer = direct_peer(client, server.address)
    a, b = socket.socketpair()
    late = direct.Conn(a)
    client.close()
    client._attach_soon(peer, late)   # the connecting thread finishing after the close
    assert late.closed
    b.close()


def _two_free_ports_in_a_row():
    """Ports N and N + 1, both free, below the ephemeral range (where no outgoing connection or
    port-0 listener takes one before the test binds it: CI once saw N taken from that range)."""
    for _ in range(100):
        base, = free_ports(1)
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind(("127.0.0.1", base))
                b.bind(("127.0.0.1", base + 1))
            except OSError:
                continue
        return base
    pytest.skip("no two free ports in a row on 127.0.0.1")


def test_listeners_take_ports_from_zps_direct_ports(monkeypatch, transports, caplog):
    base = _two_free_ports_in_a_row()
    ports = direct._port_range("%d-%d" % (base, base + 1))
    monkeypatch.setattr(direct, "PORTS", ports)
    server_t = transports()
    bounds = [server_t.bind("127.0.0.1:0", echo_handler) for _ in range(3)]
    taken = [b.direct_port for b in bounds]
    assert set(taken[:2]) <= set(ports) and taken[2] is None   # the range is used up
    assert any("no free port in ZPS_DIRECT_PORTS" in r.getMessage() for r in caplog.records)
    client = transports()
    for b in bounds:   # with a listener or not, every server answers
        assert client.request(b.address, "echo", "x").result(WAIT).body == "x"
    assert direct._port_range("") is None and list(direct._port_range("7")) == [7]
    for bad in ("x", "5-3", "0-10", "70000"):
        with pytest.raises(ValueError, match="ZPS_DIRECT_PORTS"):
            direct._port_range(bad)
