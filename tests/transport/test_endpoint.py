"""Transport end to end on 127.0.0.1: replies, errors, timeouts, dead and restarted peers, garbage."""

import concurrent.futures
import random
import signal
import socket
import struct
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from tests.transport.conftest import WAIT, _wait_stopped, echo_handler, free_port
from zps.transport import codec, protocol
from zps.transport.endpoint import (
    BindError,
    PeerUnavailableError,
    RemoteError,
    RequestTimeoutError,
    TransportError,
    _bind_host,
)


def result(future, timeout=WAIT):
    return future.result(timeout=timeout)


def failure(future, timeout=WAIT):
    """The exception a future ends with, and how long that took."""
    start = time.monotonic()
    exc = future.exception(timeout=timeout)
    assert exc is not None, "expected a failure, got %r" % future.result()
    return exc, time.monotonic() - start


# -- requests and replies -------------------------------------------------------------------------
def test_request_reply_with_tensors(client, server):
    rng = np.random.default_rng(1)
    big = rng.standard_normal(4 << 20).astype(np.float32)          # 16 MB: 16 frames
    small = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]    # non-contiguous
    words = np.array([b"x", b"", "\u00e9".encode()], dtype=object)
    body = {"k": [1, {"nested": None}], "s": "text"}
    msg = result(client.request(server.address, "echo", body, [big, small, words, np.float64(2.5)]))
    assert msg.kind == protocol.REPLY and msg.body == body
    got_big, got_small, got_words, got_scalar = msg.tensors
    assert got_big.dtype == np.float32 and got_big.tobytes() == big.tobytes()
    np.testing.assert_array_equal(got_small, small)
    assert got_words.tolist() == words.tolist()
    assert got_scalar.shape == () and got_scalar == 2.5
    stats = server.stats
    # ZeroMQ messages: the head, then the chunks of the streamed 16 MB tensor, each way.
    assert stats.messages_in == stats.messages_out == 1 + big.nbytes // protocol.STREAM_CHUNK_BYTES
    assert stats.bytes_in > big.nbytes and stats.bytes_out > big.nbytes and stats.malformed == 0


def test_oneway_reaches_the_handler_without_a_responder(client, transports):
    seen = concurrent.futures.Future()
    bound = transports().bind("127.0.0.1:0", lambda msg, responder: seen.set_result((msg, responder)))
    client.send_oneway(bound.address, "note", {"n": 1}, [np.ones(2)])
    msg, responder = result(seen)
    assert msg.kind == protocol.ONEWAY and msg.method == "note" and msg.body == {"n": 1}
    assert responder is None and msg.tensors[0].tolist() == [1.0, 1.0]


def test_remote_error_carries_code_message_and_op(client, server):
    exc, _ = failure(client.request(server.address, "fail", "w:0"))
    assert isinstance(exc, RemoteError)
    assert (exc.code, exc.message, exc.op) == (5, "no variable named 'w:0'", "save/restore")
    exc, _ = failure(client.request(server.address, "nope"))
    assert isinstance(exc, RemoteError) and exc.code == 12 and exc.op is None


def test_handler_exception_is_an_internal_error_and_the_server_keeps_serving(client, server, caplog):
    exc, _ = failure(client.request(server.address, "crash"))
    assert isinstance(exc, RemoteError) and exc.code == 13
    assert "handler bug on purpose" in exc.message and "'crash'" in exc.message
    assert "handler failed" in caplog.text
    assert result(client.request(server.address, "echo", 7)).body == 7
    assert server.stats.errors_sent == 1


def test_responder_answers_exactly_once(client, transports):
    outcome = concurrent.futures.Future()

    def twice(msg, responder):
        responder.reply(1)
        try:
            responder.reply(2)
        except RuntimeError as e:
            outcome.set_result(str(e))

    bound = transports().bind("127.0.0.1:0", twice)
    assert result(client.request(bound.address, "x")).body == 1
    assert "already answered" in result(outcome)


def test_concurrent_requests_from_threads_are_matched(client, transports):
    # Replies come back out of order from a pool of workers; every caller must get its own.
    pool = concurrent.futures.ThreadPoolExecutor(4)

    def slow_echo(msg, responder):
        def work():
            time.sleep(random.random() * 0.002)
            responder.reply({"echo": msg.body}, [msg.tensors[0] * 2])
        pool.submit(work)

    try:
        bound = transports().bind("127.0.0.1:0", slow_echo)
        errors = []

        def caller(thread):
            try:
                futures = [(i, client.request(bound.address, "echo", [thread, i],
                                              [np.full(3, thread * 1000 + i)], timeout=WAIT))
                           for i in range(60)]
                for i, f in futures:
                    msg = result(f)
                    assert msg.body == {"echo": [thread, i]}
                    assert msg.tensors[0].tolist() == [2 * (thread * 1000 + i)] * 3
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=WAIT)
        assert not any(th.is_alive() for th in threads)
        assert errors == []
        assert bound.stats.messages_out == 8 * 60
    finally:
        pool.shutdown(wait=True)


# -- timeouts and dead peers ----------------------------------------------------------------------
def test_request_timeout(client, server):
    exc, took = failure(client.request(server.address, "hang", timeout=0.3))
    assert isinstance(exc, RequestTimeoutError) and "'hang'" in str(exc) and server.address in str(exc)
    assert 0.25 < took < 2.0
    assert result(client.request(server.address, "echo", 1, timeout=WAIT)).body == 1


def test_peer_not_listening(client):
    address = "127.0.0.1:%d" % free_port()
    exc, took = failure(client.request(address, "echo", peer_timeout=0.5))
    assert isinstance(exc, PeerUnavailableError) and exc.address == address
    assert address in str(exc) and "no answer" in str(exc)
    assert 0.4 < took < 3.0


def test_unusable_address_fails_the_request(client):
    exc, _ = failure(client.request("no-port-here", "echo"))
    assert isinstance(exc, PeerUnavailableError) and "cannot connect" in str(exc)
    # The half-made socket was closed: close() must not hang in the context's term().


def test_peer_killed_mid_request_then_restarted(client, processes):
    proc, address = processes()
    assert result(client.request(address, "pid")).body == proc.pid
    pending = [client.request(address, "hang", peer_timeout=30) for _ in range(3)]
    time.sleep(0.2)   # the requests are in the peer's hands
    proc.send_signal(signal.SIGKILL)
    for f in pending:
        exc, took = failure(f)
        # Detected from the broken connection, long before the 30 s of silence.
        assert isinstance(exc, PeerUnavailableError) and exc.address == address
        assert "connection lost" in str(exc) and took < 5
    proc2, address2 = processes(address)
    assert address2 == address
    assert result(client.request(address, "pid", timeout=WAIT)).body == proc2.pid
    echoed = result(client.request(address, "echo", {"again": True}, [np.arange(5)], timeout=WAIT))
    assert echoed.body == {"again": True} and echoed.tensors[0].tolist() == list(range(5))


def test_peer_restarted_while_a_request_waits_does_not_hang(client, processes):
    # The new process answers pings, so only the broken connection can tell the old request
    # is lost; before that was noticed, such a request (without a timeout) waited forever.
    proc, address = processes()
    pending = client.request(address, "hang", peer_timeout=30)
    assert result(client.request(address, "pid")).body == proc.pid
    proc.kill()
    proc.wait(timeout=WAIT)
    processes(address)
    exc, _ = failure(pending)
    assert isinstance(exc, PeerUnavailableError)


def test_frozen_peer_is_unavailable_after_peer_timeout(client, processes):
    proc, address = processes()
    assert result(client.request(address, "pid")).body == proc.pid
    proc.send_signal(signal.SIGSTOP)   # connection stays up, nothing answers (killed at teardown)
    _wait_stopped(proc.pid)
    exc, took = failure(client.request(address, "echo", peer_timeout=1.0))
    assert isinstance(exc, PeerUnavailableError) and "no answer" in str(exc)
    assert 0.9 < took < 4.0


def test_forget_peer_fails_its_requests(client, server):
    pending = client.request(server.address, "hang")
    assert result(client.request(server.address, "echo", 1)).body == 1   # the hang was sent
    client.forget_peer(server.address)
    exc, _ = failure(pending)
    assert isinstance(exc, PeerUnavailableError) and "connection closed" in str(exc)
    assert result(client.request(server.address, "echo", 2)).body == 2


def test_cancelled_request_is_dropped(client, server):
    pending = client.request(server.address, "hang")
    assert result(client.request(server.address, "echo", 1)).body == 1
    assert pending.cancel()
    deadline = time.monotonic() + WAIT
    while client._peers[server.address].pending and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not client._peers[server.address].pending
    assert result(client.request(server.address, "echo", 2)).body == 2


# -- malformed traffic ----------------------------------------------------------------------------
def zmtp_greeting_and_ready():
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
    ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 6) + b"DEALER"
    return greeting + b"\x04" + bytes([len(ready)]) + ready


def test_raw_tcp_garbage_does_not_disturb_the_server(client, server):
    host, port = server.address.rsplit(":", 1)
    rng = random.Random(3)
    payloads = [rng.randbytes(n) for n in (1, 10, 64, 4096, 100_000)]
    payloads += [b"\xff" + b"\x00" * 8 + b"\x7f" + rng.randbytes(200),                   # half greeting
                 zmtp_greeting_and_ready() + b"\x02" + struct.pack(">Q", 1 << 40) + b"x" * 100,
                 zmtp_greeting_and_ready() + b"\x00\x05hello" + rng.randbytes(50),
                 b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]
    for data in payloads:
        with socket.create_connection((host, int(port)), timeout=WAIT) as s:
            try:
                s.sendall(data)
            except OSError:
                pass  # the server may hang up first
        assert result(client.request(server.address, "echo", len(data))).body == len(data)


def test_raw_dealer_malformed_messages(transports, client):
    # Small header limit: the socket then refuses frames over FRAME_BYTES (see the oversize case).
    server = transports().bind("127.0.0.1:0", echo_handler, limits=codec.Limits(max_header_bytes=4096))
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    try:
        dealer.connect("tcp://" + server.address)

        def send_and_maybe_receive(frames, wait=0.3):
            dealer.send_multipart(frames)
            if dealer.poll(int(wait * 1000)):
                return dealer.recv_multipart()
            return None

        def hdr(**fields):
            h = {"z": protocol.MAGIC, "v": protocol.VERSION, "k": protocol.REQUEST, "id": 77, "m": "echo"}
            h.update(fields)
            return msgpack.packb(h, use_bin_type=True)

        silent = [[b"garbage"], [b""], [b"\xc1", b"x"], [msgpack.packb([1, 2])],
                  [hdr(z="nope", k=protocol.ONEWAY)], [hdr(k=protocol.REPLY)],
                  [hdr(k=protocol.ONEWAY, m=None)], [hdr(k=protocol.ERROR, b={"code": 1})],
                  [hdr(v=99, k=protocol.PONG)], [hdr(id="x")]]
        for frames in silent:
            assert send_and_maybe_receive(frames, wait=0.05) is None
        answered = {
            "declares 1 frames": [hdr(t=[["float32", [2], 1]])],
            "needs 8 bytes": [hdr(t=[["float32", [2], 1]]), b"\x00" * 7],
            "bad magic": [hdr(z="nope")],
            "dtype 'object'": [hdr(t=[["object", [1], 1]]), b"\x00" * 8],
            "rank 40 exceeds": [hdr(t=[["uint8", [1] * 40, 1]]), b"\x00"],
            "request without a method": [hdr(m=None)],
        }
        for problem, frames in answered.items():
            reply = send_and_maybe_receive(frames, wait=WAIT)
            assert reply is not None, problem
            msg = codec.decode(reply)
            assert msg.kind == protocol.ERROR and msg.id == 77
            assert msg.body["code"] == 3 and problem in msg.body["message"]
        # A frame past the socket's size limit: the server drops that connection, nothing more.
        # (A ping sent while the connection is being dropped may be lost with it: ping again.)
        dealer.send_multipart([hdr(), b"\x00" * (protocol.FRAME_BYTES + 1)])
        for attempt in range(20):
            pong = send_and_maybe_receive(codec.encode(protocol.PING, attempt), wait=0.5)
            if pong is not None:
                break
        assert pong is not None, "server stopped answering after an oversized frame"
        pong = codec.decode(pong)
        assert pong.kind == protocol.PONG and pong.id <= attempt
        assert server.stats.malformed == len(silent) + len(answered)
        assert server.stats.errors_sent == len(answered)
        assert result(client.request(server.address, "echo", "still here")).body == "still here"
    finally:
        dealer.close(linger=0)
        ctx.term()


@pytest.fixture
def fake_server():
    """A raw ROUTER answering each request with whatever frames ``answer(header)`` returns."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()
    holder = {}

    def run():
        while not stop.is_set():
            if router.poll(50):
                identity, *frames = router.recv_multipart()
                header = msgpack.unpackb(frames[0])
                if header["k"] == protocol.PING:
                    router.send_multipart([identity] + codec.encode(protocol.PONG, header["id"]))
                else:
                    router.send_multipart([identity] + holder["answer"](header))

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield "127.0.0.1:%d" % port, holder
    finally:
        stop.set()
        thread.join(timeout=WAIT)
        router.close(linger=0)
        ctx.term()


def test_malformed_reply_fails_its_request_at_once(client, fake_server):
    address, holder = fake_server

    def bad_tensor(header):   # readable id, but declares a tensor it does not carry
        return [msgpack.packb({"z": "zps", "v": protocol.VERSION, "k": protocol.REPLY, "id": header["id"],
                               "t": [["float32", [4], 1]]})]

    holder["answer"] = bad_tensor
    exc, took = failure(client.request(address, "x", timeout=30))
    assert type(exc) is TransportError and "malformed reply to 'x'" in str(exc)
    assert "declares 1 frames" in str(exc) and took < 5
    # An unreadable reply cannot be matched: the request ends at its own deadline.
    holder["answer"] = lambda header: [b"\xc1garbage"]
    exc, _ = failure(client.request(address, "y", timeout=0.3))
    assert isinstance(exc, RequestTimeoutError)
    # A strange error body still makes a RemoteError.
    holder["answer"] = lambda header: codec.encode(protocol.ERROR, header["id"], {"code": "x", "message": 5})
    exc, _ = failure(client.request(address, "z"))
    assert isinstance(exc, RemoteError) and exc.code == 2 and isinstance(exc.message, str)
    holder["answer"] = lambda header: codec.encode(protocol.REPLY, header["id"], "fine")
    assert result(client.request(address, "w")).body == "fine"


# -- binding and closing --------------------------------------------------------------------------
def test_bind_errors(transports):
    t = transports()
    bound = t.bind("127.0.0.1:0", echo_handler)
    with pytest.raises(BindError, match="address %s is already in use" % bound.address):
        transports().bind(bound.address, echo_handler)
    with socket.socket() as plain:
        plain.bind(("127.0.0.1", 0))
        plain.listen()
        taken = "127.0.0.1:%d" % plain.getsockname()[1]
        with pytest.raises(BindError, match=taken):
            t.bind(taken, echo_handler)
    with pytest.raises(BindError, match="cannot bind 192.0.2.1:0: it is not an address of this host"):
        t.bind("192.0.2.1:0", echo_handler)
    with pytest.raises(BindError, match="must look like host:port"):
        t.bind("localhost", echo_handler)
    with pytest.raises(BindError, match="must look like host:port"):
        t.bind("127.0.0.1:http", echo_handler)
    bound2 = t.bind("unused.invalid:0", echo_handler, bind_address="127.0.0.1:0")
    assert bound2.address.startswith("unused.invalid:")


def test_a_host_name_binds_its_address_with_any_libzmq(transports, client):
    # libzmq before 4.3.5 (pyzmq 25's) binds only IP addresses and interface names: zps resolves
    # a name first, so "localhost:2222", TF1's usual address, binds with every pyzmq it allows.
    assert _bind_host("localhost") == "127.0.0.1"
    for kept in ("127.0.0.1", "0.0.0.0", "*", "[::1]", "no-such-host.invalid", ""):
        assert _bind_host(kept) == kept
    assert _bind_host("::1") == "[::1]"   # an IPv6 address takes the brackets of a URL
    for _, nic in socket.if_nameindex():   # interface names are ZeroMQ's to resolve
        assert _bind_host(nic) == nic
    bound = transports().bind("localhost:0", echo_handler)
    assert bound.address.startswith("localhost:")
    assert result(client.request(bound.address, "echo", 3)).body == 3
    with pytest.raises(BindError, match="cannot bind no-such-host.invalid:0: it is not an address"):
        transports().bind("no-such-host.invalid:0", echo_handler)


def test_port_can_be_bound_again_after_unbind_and_close(transports, client):
    t = transports()
    bound = t.bind("127.0.0.1:0", echo_handler)
    address = bound.address
    bound.close()
    bound = t.bind(address, echo_handler)
    assert result(client.request(address, "echo", 1)).body == 1
    t.close()
    t.unbind(bound)   # no-op once closed
    again = transports().bind(address, echo_handler)
    assert again.address == address
    assert result(client.request(address, "echo", 2, timeout=WAIT)).body == 2


def test_close_fails_pending_requests_and_joins_the_thread(transports, server):
    t = transports()
    pending = [t.request(server.address, "hang") for _ in range(5)]
    assert result(t.request(server.address, "echo", 1)).body == 1
    t.close()
    for f in pending:
        exc, _ = failure(f, timeout=1)
        assert isinstance(exc, TransportError) and "closed" in str(exc)
    assert t._thread not in threading.enumerate()
    exc, _ = failure(t.request(server.address, "echo"), timeout=1)
    assert isinstance(exc, TransportError) and "closed" in str(exc)
    with pytest.raises(TransportError, match="closed"):
        t.bind("127.0.0.1:0", echo_handler)
    with pytest.raises(TransportError, match="closed"):
        t.send_oneway(server.address, "x")
    t.close()   # twice is fine


def test_close_while_other_threads_submit(transports, server):
    # Every request made around close() ends (with a reply or TransportError), none hangs.
    t = transports()
    futures, stop = [], threading.Event()

    def spam():
        while not stop.is_set():
            futures.append(t.request(server.address, "echo", 1))

    threads = [threading.Thread(target=spam) for _ in range(3)]
    for th in threads:
        th.start()
    time.sleep(0.1)
    t.close()
    stop.set()
    for th in threads:
        th.join(timeout=WAIT)
    assert futures
    for f in futures:
        assert f.exception(timeout=WAIT) is None or isinstance(f.exception(), TransportError)
    assert t._thread not in threading.enumerate()


def test_close_from_a_handler(transports, client):
    t = transports()
    closed = threading.Event()

    def closer(msg, responder):
        responder.reply("bye")
        t.close()
        closed.set()

    bound = t.bind("127.0.0.1:0", closer)
    client.request(bound.address, "x")   # the reply may or may not make it out
    assert closed.wait(WAIT)
    t._thread.join(timeout=WAIT)
    assert not t._thread.is_alive()


def test_free_ports_come_from_below_the_ephemeral_range_and_are_bindable(tmp_path):
    # Ports of the ephemeral range may be handed to outgoing connections or port-0 binds (a
    # direct listener) between the pick and the bind: a port-in-use flake.
    from zps.transport import ports

    start = ports._ephemeral_start()
    picked = ports.free_ports(8)
    assert len(set(picked)) == 8
    if start is not None:
        assert all(ports.LOWEST_PORT <= p < start for p in picked)
    for p in picked:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))
    with socket.socket() as taken:   # a port in use is never picked
        taken.bind(("127.0.0.1", picked[0]))
        taken.listen(1)
        assert all(picked[0] not in ports.free_ports(8) for _ in range(20))
    bad = tmp_path / "range"
    bad.write_text("garbage")
    assert ports._ephemeral_start(str(bad)) is None
    assert ports._ephemeral_start(str(tmp_path / "missing")) is None
