"""A caller thread's own connections: requests sent and answered without the I/O thread.

The transport's I/O thread owns the sockets it creates, so a request from another thread costs
two thread hand-offs: the caller wakes the I/O thread to send it, and the I/O thread wakes the
caller with the reply (each a context switch plus a GIL hand-over, ~60 us on a 2-core VM; a tiny
distributed step is ~0.8 ms). A :class:`Caller` is one thread's own DEALER per peer address: the
thread sends on it and, while it waits, polls it itself, so a reply wakes it directly. Other
threads hand it work through ``put``; its ``get`` returns that work, waiting on its sockets and a
wake-up pipe together. The master sends a step's RunGraph requests this way, and the tensors
the servers send back for its own partition (``on_oneway``) arrive on the same connections. A
channel moves onto a direct connection (zps.transport.direct) as the I/O thread's do.

Liveness is the I/O thread's (``endpoint.check_peer``): a peer silent with calls in flight is
pinged every ``protocol.HEARTBEAT_INTERVAL_S``; one silent past its peer timeout, or whose
connection breaks, fails them with PeerUnavailableError; a failed CURVE handshake fails them with
HandshakeError.

Only the owning thread uses a caller's sockets, and only between ``enter`` and ``leave`` (one
step): the transport closes an idle caller's sockets when it shuts down, and asks a busy one to
close its own (they must all be closed before the ZeroMQ context can end).

>>> from zps.transport.endpoint import Transport
>>> t = Transport()
>>> server = t.bind("127.0.0.1:0", lambda msg, responder: responder.reply({"echo": msg.body}))
>>> caller = t.caller()
>>> caller.enter()
True
>>> f = caller.request(server.address, "echo", {"x": 1})
>>> caller.wait([f], timeout=5)
>>> f.result().body
{'echo': {'x': 1}}
>>> caller.leave()
>>> t.close()
"""

import collections
import concurrent.futures
import os
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from zps.transport import codec, direct, endpoint, protocol, spin

_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)


class _Channel:
    """A caller's DEALER to one peer address (the fields ``endpoint.check_peer`` and
    ``endpoint.deliver_reply`` use, as a transport's peer has them)."""

    __slots__ = ("address", "socket", "monitor", "pending", "last_heard", "last_ping", "timeout",
                 "assembler", "direct", "direct_asked", "asking")

    def __init__(self, address, socket, monitor):
        self.address = address
        self.socket = socket
        self.monitor = monitor
        self.pending = {}   # request id -> (future, method, None, None)
        self.last_heard = time.monotonic()
        self.last_ping = 0.0
        self.timeout = protocol.DEFAULT_PEER_TIMEOUT_S
        self.assembler = codec.StreamAssembler()
        self.direct = None         # its direct connection (zps.transport.direct), if any
        self.direct_asked = False
        self.asking = None


_DIRECT = "direct"   # _owners' tag of a channel's direct connection


class Caller:
    """One thread's connections to its peers (see the module doc); made by
    ``Transport.caller()``."""

    def __init__(self, ctx, curve, ids, transport):
        self.thread = threading.current_thread()   # made by the thread that owns it
        spin.run_in_batch()
        self._ctx, self._curve, self._ids = ctx, curve, ids
        self._transport = transport   # its direct_ok and direct_ports
        self._channels = {}    # address -> _Channel
        self._owners = {}      # socket -> (channel, is its monitor, or _DIRECT)
        self._poller = zmq.Poller()
        self._spin = spin.Spin()   # spares no thread waiting for a CPU (see Spin)
        self._items = collections.deque()
        self._lock = threading.Lock()   # orders put/shutdown against the owner's waits and close
        self._blocked = False   # the owner waits in poll: a put must wake it
        self._busy = False      # between enter and leave
        self._closing = False   # the transport shuts down
        self.closed = False
        # (channel, direct.Conn) made by connecting threads, attached by the owner (_attach)
        self._connected = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._poller.register(self._wake_r, zmq.POLLIN)
        self._next_check = 0.0
        self._polled = time.monotonic()   # when this thread last listened to its sockets
        # What one-way messages servers send back on this thread's connections go to while it
        # is in use (``Responder.send_oneway``: a step's tensors for this thread's partition);
        # set by the user after ``enter``, cleared by ``leave``. Dropped when None.
        self.on_oneway = None

    # -- any thread ------------------------------------------------------------------------------
    @property
    def busy(self):
        return self._busy

    def put(self, item):
        """Queue ``item`` for the owner's ``get`` (waking it if it waits)."""
        with self._lock:
            self._items.append(item)
            if self._blocked and not self.closed:
                self._blocked = False   # one byte per wait
                self._wake()

    def _nudge(self, _future=None):
        """Wake the owner if it waits (nothing queued)."""
        with self._lock:
            if self._blocked and not self.closed:
                self._blocked = False
                self._wake()

    def shutdown(self):
        """The transport is closing: close the sockets now if the caller is idle, else have its
        owner close them (its calls in flight fail with TransportError)."""
        with self._lock:
            self._closing = True
            if self._busy:
                if not self.closed:
                    self._wake()
                return
        self._close()

    # -- the owning thread -----------------------------------------------------------------------
    def enter(self):
        """Start using the caller (one step); False if the transport is closing."""
        with self._lock:
            if self._closing or self.closed:
                return False
            self._busy = True
            return True

    def leave(self):
        """Stop using it; calls still in flight are abandoned (their late replies dropped)."""
        self.on_oneway = None
        with self._lock:
            self._busy = False
            closing = self._closing
        abandoned = endpoint.TransportError("the step ended before this reply came")
        for ch in self._channels.values():
            endpoint.fail_pending(ch, abandoned)   # its late reply is dropped
        if closing:
            self._close()

    def reaches(self, address):
        """Whether this caller can send to ``address``, opening its connection now; False where it
        cannot (a socket limit, an unusable address): use the I/O thread's connections then."""
        if address in self._channels:
            return True
        try:
            self._channel(address)
        except endpoint.PeerUnavailableError:
            return False
        return True

    def request(self, address, method, body=None, tensors=(), peer_timeout=None):
        """Send a request on this thread's own DEALER to ``address``; returns a Future of the reply
        Message, completed while this thread waits in ``get`` or ``wait`` (as
        ``Transport.request``; large tensors are sent without a copy)."""
        future = concurrent.futures.Future()
        msg_id = next(self._ids)
        parts = codec.encode_parts(protocol.REQUEST, msg_id, body, tensors, method=method,
                                   gather=True)
        if self._closing:
            future.set_exception(endpoint.TransportError("transport is closed"))
            return future
        try:
            if self._connected:
                self._attach()
            ch = self._channels.get(address)
            if ch is not None and endpoint.idle(ch):
                if ch.direct is not None:
                    # An idle direct connection may have ended (its peer restarted between
                    # steps): the request then goes on ZeroMQ while a new one is asked for.
                    self._drain(ch.direct.fileno())
                if ch.direct is None and ch.monitor.get(_EVENTS) & _POLLIN:
                    # Events of an idle channel (its peer restarted between steps) are about
                    # connections gone before this request: they must not fail it (a failed
                    # handshake closes the channel, and the request opens a new one). Those of
                    # a channel opened for this request are about its connection: they count.
                    self._drain(ch.monitor)
            ch = self._channel(address)
            endpoint.send_request(ch, msg_id, (future, method, None, None), parts, peer_timeout)
            self._maybe_direct(ch)
        except direct.ConnectionLostError as e:
            self._lose_direct(ch, e)   # fails the request with the others in flight
        except endpoint.PeerUnavailableError as e:
            future.set_exception(e)
        except zmq.Again:
            self._drop(ch, endpoint.unqueued(address))
        except zmq.ZMQError as e:   # ETERM: the transport closed meanwhile
            ch = self._channels.get(address)
            if ch is not None:
                ch.pending.pop(msg_id, None)
            future.set_exception(endpoint.TransportError("cannot send to %s: %s" % (address, e)))
        return future

    def send_oneway(self, address, method, body=None, tensors=()):
        """``Transport.send_oneway`` on this thread's own DEALER to ``address`` (a step's tensors
        for another task, sent by the thread that computed them without waking the I/O thread).
        Raises TransportError once the transport is closed."""
        parts = codec.encode_parts(protocol.ONEWAY, next(self._ids), body, tensors, method=method,
                                   gather=True)
        try:
            if self._closing:
                raise zmq.ZMQError(zmq.ETERM)
            ch = self._channel(address)
            endpoint.send_parts(ch, parts, lambda e: self._lose_direct(ch, e))
            self._maybe_direct(ch)
        except zmq.Again:
            self._drop(ch, endpoint.unqueued(address))
            raise endpoint.unqueued(address) from None
        except zmq.ZMQError as e:   # ETERM: the transport closed meanwhile
            raise endpoint.TransportError("cannot send to %s: %s" % (address, e)) from None

    def get(self):
        """The next item ``put`` for this thread, serving its requests' replies while it waits."""
        while True:
            with self._lock:
                if self._items:
                    return self._items.popleft()
                self._blocked = True
            self._poll(endpoint.POLL_INTERVAL_MS)

    def wait(self, futures, timeout=None):
        """Serve replies until every one of ``futures`` is done or ``timeout`` seconds passed
        (items ``put`` meanwhile stay queued for ``get``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for f in futures:   # others' futures (a pool's) complete elsewhere: they wake this wait
            if not f.done():
                f.add_done_callback(self._nudge)
        while not all(f.done() for f in futures):
            ms = endpoint.POLL_INTERVAL_MS
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                ms = min(ms, max(1, int(left * 1000)))
            with self._lock:
                if all(f.done() for f in futures):
                    return
                self._blocked = True
            self._poll(ms)

    def _poll(self, ms):
        gap = time.monotonic() - self._polled
        if gap > protocol.HEARTBEAT_INTERVAL_S:
            # The owner was busy elsewhere (a long kernel of its own partition): nobody listened
            # or pinged meanwhile, so that silence says nothing about the peers.
            for ch in self._channels.values():
                if ch.last_heard < self._polled:
                    ch.last_heard += gap
        try:
            events = self._spin.poll(self._poller, ms)
        except zmq.ZMQError as e:
            if e.errno != zmq.ETERM:
                raise
            events = []
            self._closing = True   # the context is ending (the transport closed)
        finally:
            self._polled = time.monotonic()
            with self._lock:
                self._blocked = False
        if self._connected:
            self._attach()
        for sock, _ in events:
            if sock == self._wake_r:
                try:
                    while os.read(self._wake_r, 4096):
                        pass
                except BlockingIOError:
                    pass
            else:
                self._drain(sock)
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + endpoint.POLL_INTERVAL_MS / 1000.0
            for ch in list(self._channels.values()):
                why = endpoint.check_peer(ch, now)
                if why is not None:
                    self._drop(ch, endpoint.PeerUnavailableError(
                        ch.address, why + endpoint.unresolved_host(ch.address)))
        if self._closing:
            closed = endpoint.TransportError("transport is closed")
            for ch in list(self._channels.values()):
                endpoint.fail_pending(ch, closed)

    def _drain(self, sock):
        owner = self._owners.get(sock)
        if owner is None:
            return   # its channel was dropped by an earlier message of this poll
        ch, is_monitor = owner
        if is_monitor is _DIRECT:
            try:
                ch.direct.read(lambda frames: endpoint.deliver_reply(ch, frames, self.on_oneway))
            except direct.ConnectionLostError as e:
                self._lose_direct(ch, e)
            return
        try:
            self._drain_zmq(sock, ch, is_monitor)
        except zmq.ZMQError as e:
            if e.errno != zmq.ETERM:
                raise
            self._closing = True   # the context is ending (the transport closed meanwhile)

    def _drain_zmq(self, sock, ch, is_monitor):
        for _ in range(256):   # bounded, like the I/O thread's loop
            try:
                if is_monitor:
                    event = recv_monitor_message(sock, zmq.NOBLOCK)
                else:
                    frames = endpoint.recv_frames(sock)
            except zmq.Again:
                return
            if not is_monitor:
                endpoint.deliver_reply(ch, frames, self.on_oneway)
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                if ch.pending:
                    self._drop(ch, endpoint.connection_lost(ch))
                    return
            else:
                self._drop(ch, endpoint.handshake_error(ch, event, self._curve))
                return
            if sock.closed or not sock.get(_EVENTS) & _POLLIN:
                return

    def _channel(self, address):
        ch = self._channels.get(address)
        if ch is None:
            sock, monitor = endpoint.connect_dealer(self._ctx, self._curve, address, self)
            ch = self._channels[address] = _Channel(address, sock, monitor)
            self._owners[sock] = (ch, False)
            self._owners[monitor] = (ch, True)
            self._poller.register(sock, zmq.POLLIN)
            self._poller.register(monitor, zmq.POLLIN)
        return ch

    def _drop(self, ch, error):
        """Close ``ch`` (a new one connects on the next request) and fail its calls."""
        if self._channels.get(ch.address) is not ch:
            return
        del self._channels[ch.address]
        for sock in (ch.socket, ch.monitor):
            self._poller.unregister(sock)
            del self._owners[sock]
        endpoint.close_dealer(ch.socket, ch.monitor)
        if ch.direct is not None:
            self._poller.unregister(ch.direct.fileno())
            del self._owners[ch.direct.fileno()]
            ch.direct.close()
            ch.direct = None
        endpoint.fail_pending(ch, error)

    # -- direct connections (zps.transport.direct) -----------------------------------------------
    def _maybe_direct(self, ch):
        endpoint.maybe_direct(self._transport, ch, self._ids, lambda conn: self._attach_soon(ch, conn))

    def _attach_soon(self, ch, conn):
        # A connecting thread's (endpoint.maybe_direct): the owner attaches it (``_attach``).
        with self._lock:
            if self.closed:
                conn.close()
                return
            self._connected.append((ch, conn))
        self._nudge()

    def _attach(self):
        """Put the connections made meanwhile to use (owner thread)."""
        with self._lock:
            made, self._connected = self._connected, []
        for ch, conn in made:
            if self._channels.get(ch.address) is not ch or ch.direct is not None:
                conn.close()   # the channel was dropped meanwhile
                continue
            conn.blocking = True
            conn.send_timeout = ch.timeout
            conn.place = ch.assembler.placement
            ch.direct = conn
            self._owners[conn.fileno()] = (ch, _DIRECT)   # zmq.Poller reports it by descriptor
            self._poller.register(conn.fileno(), zmq.POLLIN)

    def _lose_direct(self, ch, error):
        if ch.direct is not None:
            self._poller.unregister(ch.direct.fileno())
            del self._owners[ch.direct.fileno()]
        endpoint.lose_direct(ch, error, self._transport.direct_ports)

    def _close(self):
        with self._lock:
            if self.closed:
                return
            self.closed = True
            os.close(self._wake_r)
            os.close(self._wake_w)
            made, self._connected = self._connected, []
        for _, conn in made:
            conn.close()
        closed = endpoint.TransportError("transport is closed")
        for ch in list(self._channels.values()):
            self._drop(ch, closed)

    def _wake(self):
        # With _lock held and the pipe open.
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass  # the pipe is full: the owner is awake already
