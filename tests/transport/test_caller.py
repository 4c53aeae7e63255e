"""A caller thread's own connections (zps.transport.caller): requests sent and answered without
the I/O thread, with the transport's liveness, failure and shutdown behaviour."""

import concurrent.futures
import signal
import threading
import time

import numpy as np
import pytest

from tests.transport.conftest import WAIT, _wait_stopped, free_port
from zps.transport import endpoint
from zps.transport.endpoint import PeerUnavailableError, RemoteError, TransportError


@pytest.fixture
def caller(client):
    c = client.caller()
    assert c.enter()
    yield c
    c.leave()


def answer(caller, future, timeout=WAIT):
    caller.wait([future], timeout=timeout)
    assert future.done(), "no answer within %d s" % timeout
    return future.result()


def failure(caller, future, timeout=WAIT):
    start = time.monotonic()
    caller.wait([future], timeout=timeout)
    assert future.done(), "no failure within %d s" % timeout
    exc = future.exception()
    assert exc is not None, "expected a failure, got %r" % future.result()
    return exc, time.monotonic() - start


def test_request_reply_with_small_and_streamed_tensors(caller, server):
    big = np.random.default_rng(0).standard_normal(3 << 20).astype(np.float32)   # 12 MB: streamed
    reply = answer(caller, caller.request(server.address, "echo", {"x": [1, 2]},
                                          [np.arange(6).reshape(2, 3), big]))
    assert reply.body == {"x": [1, 2]}
    np.testing.assert_array_equal(reply.tensors[0], np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(reply.tensors[1], big)


def test_remote_error_and_many_requests_in_flight(caller, server):
    failing = caller.request(server.address, "fail", "v")
    echoes = [caller.request(server.address, "echo", i) for i in range(50)]
    exc, _ = failure(caller, failing)
    assert isinstance(exc, RemoteError) and exc.code == 5 and exc.op == "save/restore"
    caller.wait(echoes, timeout=WAIT)
    assert [f.result().body for f in echoes] == list(range(50))


def test_get_returns_what_other_threads_put_and_serves_replies_meanwhile(caller, server):
    future = caller.request(server.address, "echo", "meanwhile")
    future.add_done_callback(lambda f: caller.put("reply seen"))
    assert caller.get() == "reply seen"   # the reply arrived while get waited, on this thread
    n = 300
    threading.Thread(target=lambda: [caller.put(i) for i in range(n)], daemon=True).start()
    got = [caller.get() for _ in range(n)]   # a wake-up lost anywhere would hang here
    assert got == list(range(n))


def test_wait_wakes_for_a_future_completed_by_another_thread(caller, monkeypatch):
    # Without the wake-up, the wait would see it only at its next poll timeout (10 s here).
    monkeypatch.setattr(endpoint, "POLL_INTERVAL_MS", 10_000)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(time.sleep, 0.2)
        start = time.monotonic()
        caller.wait([future])
        assert future.done() and time.monotonic() - start < 5


def test_peer_killed_mid_request_then_restarted(caller, processes):
    proc, address = processes()
    assert answer(caller, caller.request(address, "pid")).body == proc.pid
    pending = caller.request(address, "hang", peer_timeout=30)
    time.sleep(0.2)   # the request is in the peer's hands
    proc.send_signal(signal.SIGKILL)
    exc, took = failure(caller, pending)
    # Detected from the broken connection, long before the 30 s of silence.
    assert isinstance(exc, PeerUnavailableError) and exc.address == address
    assert "connection lost" in str(exc) and took < 5
    proc2, _ = processes(address)
    assert answer(caller, caller.request(address, "pid")).body == proc2.pid


def test_peer_restarted_between_requests_answers_the_next_one(caller, processes):
    # The old connection's end is reported while nothing is in flight: it must not fail the
    # request sent to the new process.
    proc, address = processes()
    assert answer(caller, caller.request(address, "pid")).body == proc.pid
    proc.kill()
    proc.wait(timeout=WAIT)
    proc2, _ = processes(address)
    time.sleep(0.3)   # the disconnect event is queued by now
    assert answer(caller, caller.request(address, "pid")).body == proc2.pid


def test_frozen_peer_is_unavailable_after_peer_timeout(caller, processes):
    proc, address = processes()
    assert answer(caller, caller.request(address, "pid")).body == proc.pid
    proc.send_signal(signal.SIGSTOP)   # the connection stays up, nothing answers pings
    _wait_stopped(proc.pid)
    exc, took = failure(caller, caller.request(address, "echo", peer_timeout=1.0))
    assert isinstance(exc, PeerUnavailableError) and "no answer" in str(exc)
    assert 0.9 < took < 4.0


def test_a_peer_that_said_it_left_fails_its_requests_once_silent(caller, processes, server,
                                                                  monkeypatch):
    # zps.distributed.server's heartbeats call peer_left when a task says it is stopping: a
    # request in flight to it fails after two unanswered heartbeat intervals, not at its peer
    # timeout; a peer that still answers pings (or was seen back) is waited for.
    monkeypatch.setattr(endpoint, "_LEFT", {})
    monkeypatch.setattr(endpoint.protocol, "HEARTBEAT_INTERVAL_S", 0.2)
    monkeypatch.setattr(endpoint, "POLL_INTERVAL_MS", 20)
    proc, address = processes()
    assert answer(caller, caller.request(address, "pid")).body == proc.pid
    proc.send_signal(signal.SIGSTOP)   # its connection stays up, nothing answers
    _wait_stopped(proc.pid)
    pending = caller.request(address, "echo", peer_timeout=30.0)
    endpoint.peer_left(address)   # after the request went out, as a stopping ps says it
    exc, took = failure(caller, pending)
    assert isinstance(exc, PeerUnavailableError) and "said it was leaving" in str(exc)
    assert 0.35 < took < 3.0
    # Sent after it said so (a restarted task at that address), or answering pings: waited for.
    late = caller.request(address, "echo", peer_timeout=30.0)
    pending = caller.request(server.address, "hang", peer_timeout=30.0)
    endpoint.peer_left(server.address)
    caller.wait([pending, late], timeout=1.0)
    assert not pending.done() and not late.done()
    endpoint.peer_back(address)
    assert address not in endpoint._LEFT


def test_a_host_name_that_does_not_resolve_is_said_so(caller):
    exc, took = failure(caller, caller.request("nosuch.invalid:2222", "echo", peer_timeout=0.5))
    assert isinstance(exc, PeerUnavailableError)
    assert "no answer for" in str(exc) and "host name 'nosuch.invalid' does not resolve" in str(exc)
    for address in ("127.0.0.1:5", "localhost:5", "[::1]:5"):
        assert endpoint.unresolved_host(address) == ""


def test_a_busy_peer_that_answers_pings_is_waited_for(caller, server, monkeypatch):
    monkeypatch.setattr(endpoint.protocol, "HEARTBEAT_INTERVAL_S", 0.1)
    monkeypatch.setattr(endpoint, "POLL_INTERVAL_MS", 20)
    pending = caller.request(server.address, "hang", peer_timeout=0.5)
    caller.wait([pending], timeout=1.5)   # three peer timeouts: pongs keep it alive
    assert not pending.done()


def test_peer_not_listening(caller):
    address = "127.0.0.1:%d" % free_port()
    exc, took = failure(caller, caller.request(address, "echo", peer_timeout=0.5))
    assert isinstance(exc, PeerUnavailableError) and "no answer" in str(exc)
    assert 0.4 < took < 3.0


def test_unusable_address_fails_the_request(caller):
    exc, _ = failure(caller, caller.request("no-port-here", "echo"))
    assert isinstance(exc, PeerUnavailableError) and "cannot connect" in str(exc)


def test_a_late_reply_to_an_abandoned_request_is_dropped(client, server):
    c = client.caller()
    assert c.enter()
    slow = c.request(server.address, "hang")
    c.leave()   # abandoned: failed (cancelling would run its callbacks with CancelledError)
    assert isinstance(slow.exception(timeout=0), TransportError)
    assert c.enter()
    try:
        assert answer(c, c.request(server.address, "echo", 7)).body == 7
    finally:
        c.leave()


def test_one_caller_per_thread_and_none_where_it_cannot_be_used(client):
    c = client.caller()
    assert client.caller() is c and c.enter()
    assert client.caller() is None   # in use: a nested call goes through the I/O thread
    c.leave()
    assert client.caller() is c
    assert client.run_in_io_thread(client.caller) is None
    other = []
    t = threading.Thread(target=lambda: other.append(client.caller()))
    t.start()
    t.join(WAIT)
    assert other[0] is not None and other[0] is not c
    assert other[0].thread is t


def test_callers_of_ended_threads_are_closed(client, server):
    used = []

    def use():
        c = client.caller()
        assert c.enter()
        used.append(answer(c, c.request(server.address, "echo", 1)).body)
        c.leave()
        used.append(c)

    t = threading.Thread(target=use)
    t.start()
    t.join(WAIT)
    assert used[0] == 1 and not used[1].closed
    client.caller()   # a new caller sweeps the callers of threads that ended
    assert used[1].closed


def test_close_fails_a_waiting_callers_request_and_does_not_hang(transports, server):
    t = transports()
    box = {}
    entered = threading.Event()

    def wait_forever():
        c = t.caller()
        assert c.enter()
        future = c.request(server.address, "hang", peer_timeout=60)
        entered.set()
        c.wait([future], timeout=30)
        box["error"] = future.exception(timeout=0)
        c.leave()
        box["closed"] = c.closed

    thread = threading.Thread(target=wait_forever, daemon=True)
    thread.start()
    assert entered.wait(WAIT)
    start = time.monotonic()
    t.close()   # the ZeroMQ context ends only once the waiting caller closed its sockets
    assert time.monotonic() - start < 5
    thread.join(WAIT)
    assert isinstance(box["error"], TransportError) and "closed" in str(box["error"])
    assert box["closed"]


def test_close_closes_an_idle_caller(transports, server):
    t = transports()
    c = t.caller()
    assert c.enter()
    assert answer(c, c.request(server.address, "echo", 1)).body == 1
    c.leave()
    t.close()
    assert c.closed and not c.enter()
    assert t.caller() is None


def test_callers_are_bounded(client, monkeypatch):
    monkeypatch.setattr(endpoint, "MAX_CALLERS", 2)
    release = threading.Event()
    got = []

    def hold():
        got.append(client.caller())
        release.wait(WAIT)

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for i, t in enumerate(threads):
        t.start()
        deadline = time.monotonic() + WAIT
        while len(got) <= i and time.monotonic() < deadline:   # in order: the third is refused
            time.sleep(0.01)
        assert len(got) == i + 1, "thread %d got no answer from caller()" % i
    release.set()
    for t in threads:
        t.join(WAIT)
    assert got[0] is not None and got[1] is not None
    assert got[2] is None   # the third thread uses the I/O thread's connections
    assert client.caller() is not None   # the holders ended: their slots are free again


def test_a_caller_out_of_sockets_says_so_instead_of_failing(server):
    import zmq
    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, 12)
    t = endpoint.Transport(context=ctx)
    try:
        c = t.caller()
        assert c.enter()
        assert c.reaches(server.address)
        assert answer(c, c.request(server.address, "echo", 1)).body == 1
        addresses = ["127.0.0.1:%d" % free_port() for _ in range(12)]
        reached = [c.reaches(a) for a in addresses]
        assert reached[0] and not reached[-1]   # two sockets a peer: the limit is met, no error
        exc, _ = failure(c, c.request(addresses[-1], "echo"))
        assert isinstance(exc, PeerUnavailableError) and "cannot connect" in str(exc)
        c.leave()
    finally:
        t.close()
        ctx.term()


def test_time_spent_away_from_the_sockets_is_not_silence(caller, server, monkeypatch):
    # The caller's thread runs its own partition between waits (a long kernel): the peer could
    # not be pinged or heard meanwhile, so it must not be declared dead for that.
    monkeypatch.setattr(endpoint.protocol, "HEARTBEAT_INTERVAL_S", 0.1)
    monkeypatch.setattr(endpoint, "POLL_INTERVAL_MS", 20)
    pending = caller.request(server.address, "hang", peer_timeout=0.5)
    caller.wait([pending], timeout=0.2)
    time.sleep(1.5)   # busy elsewhere: three peer timeouts
    caller.wait([pending], timeout=0.3)
    assert not pending.done()
    caller.wait([pending], timeout=1.0)   # listening again: pongs keep it alive
    assert not pending.done()


def test_one_way_messages_of_a_thread_in_a_call_go_on_its_own_sockets_in_order(client, transports):
    # A master computing its partition sends the step's tensors on the sockets its RunGraph
    # requests went on: no I/O-thread hand-off, and a request sent after them arrives after them.
    seen = []

    def handler(msg, responder):
        seen.append((msg.method, msg.body, [t.copy() for t in msg.tensors]))
        if responder is not None:
            responder.reply(len(seen))

    server = transports().bind("127.0.0.1:0", handler)
    big = np.arange(3 << 20, dtype=np.float32)   # 12 MB: streamed in chunks
    caller = client.caller()
    assert caller.enter()
    try:
        client.send_oneway(server.address, "Tensors", {"n": 1}, [np.arange(3), big])
        client.send_oneway(server.address, "Tensors", {"n": 2})
        assert answer(caller, caller.request(server.address, "count")).body == 3
    finally:
        caller.leave()
    assert [(m, b) for m, b, _ in seen] == [("Tensors", {"n": 1}), ("Tensors", {"n": 2}),
                                           ("count", None)]
    np.testing.assert_array_equal(seen[0][2][0], np.arange(3))
    np.testing.assert_array_equal(seen[0][2][1], big)
    assert server.address not in client.run_in_io_thread(lambda: set(client._peers))
    # Outside a call (or on a thread without a caller) they go through the I/O thread.
    client.send_oneway(server.address, "Tensors", {"n": 3})
    deadline = time.monotonic() + WAIT
    while len(seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen[3][1] == {"n": 3}
    assert server.address in client.run_in_io_thread(lambda: set(client._peers))
