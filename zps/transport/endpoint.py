"""The transport: one I/O thread owning every ZeroMQ socket of the process.

A server ``bind``s a ROUTER at its address with a handler; clients ``request`` peers through one
DEALER per peer address and get a ``concurrent.futures.Future`` back. Requests are matched to
replies by id. Peers with requests in flight are pinged after a silence; a peer silent past its
timeout fails those requests with :class:`PeerUnavailableError` instead of leaving them hanging.

Without CURVE, each bound socket also has a direct listener (zps.transport.direct): a peer asks
for it once over ZeroMQ, then sends its messages on a plain TCP connection (a Unix socket from the
same machine) the I/O thread reads itself (one thread woken per message instead of three).
Everything else is the same: framing aside, the same messages, handler, limits, answers,
heartbeats and failures.

The loop has the Majordomo shape: poll -> dispatch on header -> expire dead peers -> heartbeat.

>>> t = Transport()
>>> server = t.bind("127.0.0.1:0", lambda msg, responder: responder.reply({"echo": msg.body}))
>>> t.request(server.address, "echo", {"x": 1}).result(timeout=5).body
{'echo': {'x': 1}}
>>> t.close()
"""

import collections
import concurrent.futures
import errno
import ipaddress
import itertools
import logging
import os
import socket
import threading
import time

import msgpack
import zmq
from zmq.utils.monitor import recv_monitor_message

from zps.transport import codec, direct, protocol, security, spin

log = logging.getLogger("zps.transport")

POLL_INTERVAL_MS = 100    # the loop wakes at least this often to check deadlines and liveness
RELEASE_WAIT_S = 2.0      # how long bind() waits for a port this transport just unbound
# Messages a server queues to one connection (ZMQ_SNDHWM) before it drops answers to it: a peer
# that never reads its replies cannot grow the queue past this. Room for the largest legitimate
# answer streamed at once: a protocol.MAX_MESSAGE_BYTES (8 GB) reply is 2048 chunk messages of
# protocol.STREAM_CHUNK_BYTES (a 256 MB tensor: 64), twice over.
SEND_HWM = 4096
# Threads with connections of their own (Transport.caller): each holds two sockets per peer, and a
# ZeroMQ context allows 1,023 by default; threads beyond these use the I/O thread's connections.
MAX_CALLERS = 16
# ZPS_CALLER_SOCKETS=0: no thread gets connections of its own; every request goes through the I/O
# thread (one connection per peer and process).
CALLER_SOCKETS = os.environ.get("ZPS_CALLER_SOCKETS", "1") != "0"

_monitor_ids = itertools.count(1)
# pyzmq's multipart helpers check every frame's type and combine flags as Python enums: ~9 us per
# 3-frame message each way on this machine, against ~2-3 us for these loops over the base socket
# methods (same semantics: copy=False still copies frames under the socket's copy_threshold).
_base_send = zmq.backend.Socket.send
_base_recv = zmq.backend.Socket.recv
_SNDMORE = int(zmq.SNDMORE)
_NOBLOCK = int(zmq.NOBLOCK)
_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)
_POLLOUT = int(zmq.POLLOUT)


def send_frames(sock, frames):
    """Send ``frames`` (buffers, or codec.Pieces) as one multipart message, without copying
    large ones."""
    last = len(frames) - 1
    for i, f in enumerate(frames):
        _base_send(sock, codec.joined(f), _SNDMORE if i < last else 0, False, False)


def peer_send(peer, frames):
    """Send one message on ``peer`` (a _Peer or a caller's channel): over its direct connection
    if it has one (direct.ConnectionLostError if that broke), else on its DEALER."""
    conn = peer.direct
    if conn is not None:
        conn.write(frames)
    else:
        send_frames(peer.socket, frames)


def send_parts(peer, parts, lose):
    """Send the messages ``parts`` (of a one-way message) to ``peer``: on its direct connection
    if it has one; if that broke, ``lose(error)``, then all of them again on ZeroMQ."""
    try:
        for frames in parts:
            peer_send(peer, frames)
    except direct.ConnectionLostError as e:
        lose(e)
        for frames in parts:
            send_frames(peer.socket, frames)


def recv_frames(sock):
    """Receive one multipart message without waiting (zmq.Again if none): a list of Frames."""
    frame = _base_recv(sock, _NOBLOCK, False, False)
    frames = [frame]
    while frame.more:
        frame = _base_recv(sock, _NOBLOCK, False, False)
        frames.append(frame)
    return frames


_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_answer_lock = threading.Lock()   # makes Responder's exactly-once check atomic across threads


def _set_result(future, result):
    try:
        future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass  # cancelled by its owner meanwhile: nobody is waiting for it


def _set_exception(future, exc):
    try:
        future.set_exception(exc)
    except concurrent.futures.InvalidStateError:
        pass


def _readable_request_id(frame, kinds, max_bytes):
    """The id of a message whose full decode failed, if its header still names one of ``kinds``."""
    head = codec._frame_bytes(frame)
    if len(head) > max_bytes:
        return None
    try:
        header = msgpack.unpackb(head, raw=False)
    except Exception:  # noqa: BLE001 - unparseable: no id to answer
        return None
    if isinstance(header, dict) and header.get("k") in kinds and codec._is_int(header.get("id")):
        return header["id"]
    return None


class LogLimiter:
    """Warnings about bad input, rate-limited per peer: the first ``burst`` in each ``interval``
    seconds are logged, then one line says how many more were suppressed (``suppressed`` counts
    them all). At most ``max_peers`` peers are tracked (least recently seen forgotten first)."""

    _all = []   # flushed by every transport's I/O loop

    def __init__(self, logger, burst=5, interval=10.0, max_peers=1024):
        self._log = logger
        self.burst = burst
        self.interval = interval
        self._max_peers = max_peers
        self._peers = collections.OrderedDict()   # peer -> [window start, logged, suppressed]
        self._lock = threading.Lock()
        self._next_flush = 0.0
        self.suppressed = 0
        LogLimiter._all.append(self)

    def warning(self, peer, fmt, *args):
        now = time.monotonic()
        summaries = []
        with self._lock:
            entry = self._peers.get(peer)
            if entry is None:
                entry = self._peers[peer] = [now, 0, 0]
                if len(self._peers) > self._max_peers:
                    old, (start, _, n) = self._peers.popitem(last=False)
                    if n:
                        summaries.append((old, n, now - start))
            else:
                self._peers.move_to_end(peer)
                if now - entry[0] >= self.interval:
                    if entry[2]:
                        summaries.append((peer, entry[2], now - entry[0]))
                    entry[:] = [now, 0, 0]
            emit = entry[1] < self.burst
            entry[1 if emit else 2] += 1
            self.suppressed += not emit
        self._summarize(summaries)
        if emit:
            self._log.warning(fmt, *args)

    def flush(self, now):
        """Log the summaries of peers whose interval has passed (cheap: once per interval/2)."""
        if now < self._next_flush:
            return
        self._next_flush = now + self.interval / 2
        with self._lock:
            due = [(p, e) for p, e in self._peers.items() if e[2] and now - e[0] >= self.interval]
            summaries = [(p, e[2], now - e[0]) for p, e in due]
            for _, e in due:
                e[:] = [now, e[1], 0]
        self._summarize(summaries)

    def _summarize(self, summaries):
        for peer, n, span in summaries:
            self._log.warning("%s: %d more such warnings suppressed in the last %.0f s", peer, n, span)


class _DirectAddress:
    """Stands in for a ZeroMQ frame's metadata in ``peer_name`` (a direct connection's peer)."""

    __slots__ = ("address",)

    def __init__(self, address):
        self.address = address

    def get(self, _key):
        return self.address


def peer_name(identity, frames):
    """A peer's IP address and connection id, for logs (from a received message's frames)."""
    ip = "?"
    for f in frames:
        try:
            ip = f.get("Peer-Address")
            break
        except (zmq.ZMQError, AttributeError, TypeError):
            continue
    ident = bytes(identity.buffer if hasattr(identity, "buffer") else identity)
    # A peer chooses its own identity (up to 255 bytes): log a bounded prefix of it.
    return "peer %s (connection %s%s)" % (ip, ident[:8].hex(), "..." if len(ident) > 8 else "")


_malformed_log = LogLimiter(log)


class TransportError(Exception):
    """Base class of transport failures."""


class PeerUnavailableError(TransportError):
    """A peer could not be reached, or went silent with requests in flight."""

    def __init__(self, address, reason):
        super().__init__("peer %s is unavailable: %s" % (address, reason))
        self.address = address
        self.reason = reason


class HandshakeError(PeerUnavailableError):
    """The security handshake with a peer failed (CURVE keys missing, wrong or not allowed);
    ``certain`` is false when the peer may just have gone away during the handshake."""

    def __init__(self, address, reason, certain=True):
        super().__init__(address, reason)
        self.certain = certain


class RequestTimeoutError(TransportError):
    """A request's own deadline passed before its reply arrived."""

    def __init__(self, address, method, timeout):
        super().__init__("request %r to %s got no reply within %.1f s" % (method, address, timeout))
        self.address = address
        self.method = method


class RemoteError(TransportError):
    """The peer answered a request with an error: ``code``, ``message`` and ``op`` (plain data)."""

    def __init__(self, code, message, op=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.op = op


class BindError(TransportError):
    """An address cannot be bound (in use, not local, malformed)."""


class _AddressInUseError(BindError):
    """The port is taken (perhaps by this transport's own socket, still closing)."""


def _bind_host(host):
    """``host`` as ZeroMQ binds it: a host name becomes its first IPv4 address (its first IPv6
    one, in brackets, if it has no IPv4 address); a bare IPv6 address gets its brackets.

    libzmq before 4.3.5 (bundled by pyzmq before 26, and still some systems' own) binds only IP
    addresses and interface names: ``localhost:2222``, the address of TF1's examples, failed with
    ENODEV. Newer libzmq resolves a name the same way (IPv4, the first address). Interface names
    (``lo``, ``eth0``), ``*`` and bracketed IPv6 addresses are left to ZeroMQ; so is a name that
    does not resolve, which then fails to bind with the usual error."""
    if not host or host == "*" or host.startswith("["):
        return host
    try:
        return "[%s]" % host if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        pass
    try:
        if host in {name for _, name in socket.if_nameindex()}:
            return host
    except OSError:
        pass
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            infos = socket.getaddrinfo(host, None, family, socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            continue
        if infos:
            ip = infos[0][4][0]
            return ip if family == socket.AF_INET else "[%s]" % ip
    return host


def _is_ipv6(url):
    """Whether a ``tcp://host:port`` URL names a bracketed IPv6 address: ZeroMQ binds and connects
    those only on sockets with ZMQ_IPV6 set (TF1's cluster specs may say ``[::1]:2222``)."""
    return url.split("://", 1)[-1].startswith("[")


def tcp_url(address):
    """``host:port`` (or a URL) as a ZeroMQ tcp URL."""
    if "://" in address:
        scheme, rest = address.split("://", 1)
        if scheme in ("zps", "grpc"):
            return "tcp://" + rest
        return address
    return "tcp://" + address


class Stats:
    """Counters of one bound socket (read by status tools)."""

    def __init__(self):
        self.started = time.time()
        self.messages_in = 0
        self.messages_out = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.malformed = 0
        self.errors_sent = 0
        self.replies_dropped = 0   # answers dropped: the peer left, or let SEND_HWM of them pile up

    def as_dict(self):
        return dict(self.__dict__)


def direct_summary(bound):
    """The direct connections ``bound`` (a BoundSocket, or None: none) serves now, for status
    (any thread): how many, how many over a Unix socket (a peer on this machine), how many with
    the peer's shared-memory ring open."""
    conns = [owner.conn for owner in list(bound.direct_conns)] if bound is not None else []
    return {"direct_connections": len(conns),
            "direct_unix": sum(c.sock.family == socket.AF_UNIX for c in conns),
            "direct_rings": sum(c.ring_in is not None for c in conns)}


class Responder:
    """Answers one received request (from any thread, exactly once)."""

    __slots__ = ("_transport", "_bound", "_identity", "_id", "_done", "method")

    def __init__(self, transport, bound, identity, msg_id, method):
        self._transport = transport
        self._bound = bound
        self._identity = identity
        self._id = msg_id
        self._done = False
        self.method = method

    def reply(self, body=None, tensors=()):
        """Answer with plain-data ``body`` and ``tensors`` (not copied: do not modify them after)."""
        self._send(codec.encode_parts(protocol.REPLY, self._id, body, tensors, gather=True),
                   error=False)

    def send_oneway(self, method, body=None, tensors=()):
        """Send the requester a one-way message on the connection the request came on, before
        the answer (after it the requester may have stopped listening): a caller thread waiting
        for the answer reads it itself (``Caller.on_oneway``). TransportError once the transport
        is closed."""
        parts = codec.encode_parts(protocol.ONEWAY, next(self._transport._ids), body, tensors,
                                   method=method, gather=True)
        parts = [[self._identity] + frames for frames in parts]
        self._transport._submit(lambda: all(self._bound.send(frames) for frames in parts))

    def error(self, code, message, op=None):
        """Answer with an error: an OpError ``code``, a message and the failing op's name."""
        self._send([codec.encode(protocol.ERROR, self._id,
                                 {"code": int(code), "message": str(message),
                                  "op": None if op is None else str(op)})], error=True)

    def _send(self, parts, error):
        # ``parts``: the messages of the answer (a head, then the chunks of streamed tensors).
        with _answer_lock:
            if self._done:
                raise RuntimeError("request %d was already answered" % self._id)
            self._done = True
        parts = [[self._identity] + frames for frames in parts]
        # all(): once one part is dropped the rest of a streamed answer would be useless.
        self._transport._submit(lambda: all(self._bound.send(frames, error) for frames in parts))


class BoundSocket:
    """A ROUTER bound at ``address`` whose requests go to ``handler(message, responder)``."""

    def __init__(self, transport, socket, address, handler, limits, port=None, early=None):
        self.transport = transport
        self.socket = socket
        self.address = address
        self.port = port          # the local port bound (a string), which may differ from address's
        self.handler = handler
        self.limits = limits
        self.stats = Stats()
        # requests whose tensors still stream in (``early``: see codec.StreamAssembler)
        self.assembler = codec.StreamAssembler(limits, early=early)
        self.current = (b"", ())   # (identity, frames) of the message being handled: peer()
        # Its direct listener (zps.transport.direct), the port and token clients connect with,
        # the Unix socket beside it (or None), and the connections accepted (_DirectServer).
        self.listener = None
        self.unix_listener = None
        self.direct_port = None
        self.direct_token = None
        self.direct_conns = set()

    def peer(self):
        """Who sent the message being handled (I/O thread, inside the handler): for logs."""
        return peer_name(*self.current)

    def send(self, frames, error=False, count=True):
        """Send ``[identity, *frames]`` (I/O thread only); False if it was dropped. ``count``:
        whether ``stats`` count it (not the transport's own connection set-up)."""
        try:
            send_frames(self.socket, frames)
        except zmq.ZMQError as e:  # peer gone (ROUTER_MANDATORY), its queue full (SEND_HWM: the
            # send does not wait, SNDTIMEO=0) or socket closed: nobody to answer
            log.debug("dropping reply on %s: %s", self.address, e)
            self.stats.replies_dropped += 1
            return False
        if not count:
            return True
        self.stats.messages_out += 1
        self.stats.errors_sent += bool(error)
        self.stats.bytes_out += sum(codec.frame_nbytes(f) for f in frames[1:])
        return True

    def close(self):
        self.transport.unbind(self)


class _Peer:
    """The DEALER to one peer address, its requests in flight and when we last heard from it."""

    def __init__(self, address, socket, monitor):
        self.address = address
        self.socket = socket
        self.monitor = monitor    # PAIR receiving the DEALER's disconnect events
        self.pending = {}         # request id -> (future, method, deadline or None, timeout)
        self.last_heard = time.monotonic()
        self.last_ping = 0.0
        self.timeout = protocol.DEFAULT_PEER_TIMEOUT_S
        self.assembler = codec.StreamAssembler()   # replies whose tensors still stream in
        self.direct = None         # its direct connection (zps.transport.direct.Conn), if any
        self.direct_asked = False  # a direct connection was asked for (or is not to be had)
        self.asking = None         # the id of that question while it is in flight


class _Monitor:
    """Poller owner of a peer's monitor socket."""

    __slots__ = ("peer",)

    def __init__(self, peer):
        self.peer = peer


class _DirectPeer:
    """Poller owner of a peer's direct connection (its replies arrive there)."""

    __slots__ = ("peer",)

    def __init__(self, peer):
        self.peer = peer


class _DirectListener:
    """Poller owner of one of a bound socket's direct listeners (TCP, Unix)."""

    __slots__ = ("bound", "sock")

    def __init__(self, bound, sock):
        self.bound = bound
        self.sock = sock


class _DirectServer:
    """Poller owner of a direct connection accepted by a bound socket: the requests read from it
    go to the bound socket's handler, and ``send`` answers on it (the same call as
    ``BoundSocket.send``, whose first frame, the ROUTER's identity, it leaves out)."""

    __slots__ = ("bound", "conn", "identity", "address", "transport")

    _ids = itertools.count(1)

    def __init__(self, transport, bound, conn):
        self.transport = transport
        self.bound = bound
        self.conn = conn
        # Tells its streamed messages apart from the ROUTER's (whose identities start with 0).
        self.identity = b"\xffdirect" + next(self._ids).to_bytes(8, "little")
        self.address = _DirectAddress(conn.peer.rpartition(":")[0])

    def send(self, frames, error=False, count=True):
        stats = self.bound.stats
        try:
            if self.conn.closed:
                raise direct.ConnectionLostError("closed")
            nbytes = self.conn.write(frames[1:])
        except direct.ConnectionLostError as e:
            log.debug("dropping reply on %s (direct, %s): %s", self.bound.address, self.conn.peer, e)
            stats.replies_dropped += 1
            self.transport._close_direct_server(self)
            return False
        if not count:
            return True
        stats.messages_out += 1
        stats.errors_sent += bool(error)
        stats.bytes_out += nbytes
        return True


def deliver_reply(peer, frames, on_oneway=None):
    """A message received on ``peer``'s DEALER (a _Peer or a caller's channel): completes the
    request it answers (``peer.pending``: id -> (future, method, ...)); a one-way message the
    server sent back (``Responder.send_oneway``) goes to ``on_oneway(message)``, if given."""
    peer.last_heard = time.monotonic()
    try:
        msg = peer.assembler.feed(frames)
    except codec.ProtocolError as e:
        # Fail the request it answers (if its id is readable) rather than let it wait for
        # its deadline: that reply will never come in a readable form.
        msg_id = e.message_id if e.message_id is not None else \
            _readable_request_id(frames[0], (protocol.REPLY, protocol.ERROR),
                                 protocol.MAX_HEADER_BYTES)
        entry = peer.pending.pop(msg_id, None) if msg_id is not None else None
        log.warning("malformed reply from %s%s: %s", peer.address,
                    "" if entry is None else " fails request %d" % msg_id, e)
        if entry is not None:
            _set_exception(entry[0], TransportError(
                "malformed reply to %r from %s: %s" % (entry[1], peer.address, e)))
        return
    if msg is None:
        return  # a streamed reply: its tensors are still arriving
    if msg.kind not in (protocol.REPLY, protocol.ERROR):
        if msg.kind == protocol.ONEWAY and on_oneway is not None and msg.method is not None:
            try:
                on_oneway(msg)
            except Exception:  # noqa: BLE001 - a handler bug must not stop the waiting thread
                log.exception("handling %r sent back by %s failed", msg.method, peer.address)
        return  # PONG (liveness is noted above); a peer has no business sending others
    entry = peer.pending.pop(msg.id, None)
    if entry is None:
        return  # a reply to a request that already timed out or was cancelled
    future = entry[0]
    if msg.kind == protocol.ERROR:
        body = msg.body if isinstance(msg.body, dict) else {}
        code = body.get("code")
        message = body.get("message")
        op = body.get("op")
        _set_exception(future, RemoteError(
            code if codec._is_int(code) else 2,
            message if isinstance(message, str) else "remote error (no message)",
            op if isinstance(op, str) else None))
    else:
        _set_result(future, msg)


def fail_pending(peer, err):
    """Fail every request in flight to ``peer`` with ``err``."""
    pending = list(peer.pending.values())
    peer.pending.clear()
    for entry in pending:
        _set_exception(entry[0], err)


def send_request(peer, msg_id, entry, parts, peer_timeout=None):
    """Send request ``msg_id`` (the ``parts`` of encode_parts) to ``peer`` (a _Peer or a caller's
    channel: on its direct connection if it has one, else on its DEALER), its ``entry`` (future,
    method, deadline, timeout) in ``peer.pending``; zmq.Again if ZeroMQ cannot queue it (the
    caller closes the connection: see ``unqueued``), direct.ConnectionLostError if the direct
    connection broke (the caller fails the peer's requests: ``lose_direct``)."""
    if peer_timeout is not None:
        peer.timeout = peer_timeout
        if peer.direct is not None:
            peer.direct.send_timeout = peer_timeout
    if not peer.pending:
        peer.last_heard = time.monotonic()   # the peer's silence counts from now
    peer.pending[msg_id] = entry
    for frames in parts:
        peer_send(peer, frames)


def ask_direct(peer, ids, on_answer):
    """Ask ``peer``'s server (over ZeroMQ) for its direct listener; ``on_answer(port, token)``
    is called (by the thread that delivers ``peer``'s replies) if it answers with one. If the
    question fails, the next message asks again; a server without one is not asked again."""
    peer.direct_asked = True
    future = concurrent.futures.Future()
    msg_id = peer.asking = next(ids)
    parts = codec.encode_parts(protocol.REQUEST, msg_id, None, (), method=direct.METHOD)

    def answered(f):
        if peer.asking == msg_id:
            peer.asking = None
        if f.cancelled() or f.exception() is not None:
            # Asked again with the next message, unless the server answered: an error (a zps
            # without direct connections) means it has none.
            peer.direct_asked = not f.cancelled() and isinstance(f.exception(), RemoteError)
            return
        body = f.result().body
        port = body.get("port") if isinstance(body, dict) else None
        token = body.get("token") if isinstance(body, dict) else None
        if codec._is_int(port) and 0 < port < 65536 and isinstance(token, bytes) \
                and len(token) == direct.TOKEN_BYTES:
            on_answer(port, token)

    future.add_done_callback(answered)
    peer.pending[msg_id] = (future, direct.METHOD, None, None)
    for frames in parts:
        send_frames(peer.socket, frames)


def maybe_direct(transport, peer, ids, attach):
    """After a message to ``peer`` (a _Peer or a caller's channel) on ZeroMQ: move it onto a
    direct connection if ``transport`` makes them and it has not asked yet (asked after the
    message, so that a plain ZeroMQ peer sees that first). A thread of its own connects
    (connecting may wait for direct.CONNECT_TIMEOUT_S: a port a firewall blackholes) and gives
    the connection to ``attach(conn)``; the peer's messages go on ZeroMQ meanwhile, and for good
    if it cannot be made."""
    if peer.direct_asked or not transport.direct_ok:
        return
    address = peer.address

    def connect(port, token):
        def run():
            try:
                conn = direct.connect(address, port, token)
            except OSError as e:
                log.info("no direct connection to %s (port %d): %s; staying on ZeroMQ",
                         address, port, e)
                if transport.direct_ports.get(address) == (port, token):
                    del transport.direct_ports[address]
                return
            attach(conn)

        threading.Thread(target=run, name="zps-direct-connect", daemon=True).start()

    known = transport.direct_ports.get(address)
    if known is not None:
        peer.direct_asked = True
        connect(*known)
        return

    def answered(port, token):
        transport.direct_ports[address] = (port, token)
        connect(port, token)

    ask_direct(peer, ids, answered)


def idle(peer):
    """Whether ``peer`` has no request in flight but its own question for a direct connection."""
    pending = peer.pending
    return not pending or (len(pending) == 1 and peer.asking in pending)


def lose_direct(peer, error, directory):
    """``peer``'s direct connection broke (``error``): its requests in flight fail (their
    replies cannot come any more), its port is forgotten from ``directory`` (a transport's
    direct_ports) and the next message asks again (the server may have been restarted, with
    another port). The caller unregisters ``peer.direct`` first."""
    conn, peer.direct = peer.direct, None
    peer.direct_asked = False
    if conn is not None:
        directory.pop(peer.address, None)
        conn.close()
    if peer.pending:
        log.info("direct connection to %s lost: %s", peer.address, error)
        fail_pending(peer, PeerUnavailableError(
            peer.address, "connection lost with %d request(s) in flight (%s)"
            % (len(peer.pending), error)))


def connection_lost(peer):
    """The error of ``peer``'s requests in flight when its connection broke: their replies can
    never arrive (a ROUTER answers a connection, and the DEALER reconnects as a new one)."""
    return PeerUnavailableError(
        peer.address, "connection lost with %d request(s) in flight" % len(peer.pending))


def on_disconnect(peer):
    """``peer``'s connection broke: its requests in flight fail now instead of after a timeout
    (``connection_lost``); or never, if the peer restarted and answers pings."""
    if peer.pending:
        fail_pending(peer, connection_lost(peer))


def handshake_error(peer, event, curve):
    """The error a failed handshake with ``peer`` (a monitor event) gives its requests, which
    fail now, saying why, instead of at their timeout. The connection is not usable any more
    (after a protocol or authentication failure ZeroMQ drops it and does not reconnect, so a
    blocking send would wait for ever): the caller closes it, and the next request opens a new
    one."""
    reason, certain = security.describe_handshake_failure(event["event"], event["value"],
                                                          curve is not None)
    if reason is None:
        reason, certain = "the connection's handshake failed (event %#x)" % event["event"], False
    if peer.pending:
        log.warning("handshake with %s failed: %s", peer.address, reason)
    return HandshakeError(peer.address, reason, certain)


def unqueued(address):
    """The error of a message ZeroMQ could not queue to ``address``: the connection is gone
    (a failed handshake ZeroMQ does not retry); the caller closes it."""
    return PeerUnavailableError(address, "no connection to queue the message on (its handshake "
                                "failed and ZeroMQ gave up on it); the next request reconnects")


_PING, = codec.encode(protocol.PING, 0)   # one frame


# Peers that said they were stopping (zps.distributed.server's heartbeats: ``peer_left``): when,
# by address, until they are seen again (``peer_back``). A request in flight to one that has
# not been heard from since fails once it has been silent for two heartbeat intervals (a PING
# unanswered), not at its peer timeout.
_LEFT = {}


def peer_left(address):
    """The task at ``address`` said it is stopping."""
    _LEFT[address] = time.monotonic()


def peer_back(address):
    """The task at ``address`` answered again (restarted, or never gone)."""
    _LEFT.pop(address, None)


def unresolved_host(address):
    """``" (host name 'x' does not resolve: ...)"`` when the host of ``address`` is a name that
    does not resolve now, else ``""``: said when a peer does not answer (a mistyped host looks
    like a dead task otherwise). Blocks for a name lookup: not for the I/O thread."""
    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        ipaddress.ip_address(host)
        return ""
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None)
    except socket.gaierror as e:
        return " (host name %r does not resolve: %s)" % (host, e.strerror or e)
    except OSError:
        pass
    return ""


def check_peer(peer, now):
    """Liveness of ``peer`` (a _Peer or a caller's channel) with requests in flight: drops
    stalled streamed replies and expired or cancelled requests, pings a peer silent for
    ``protocol.HEARTBEAT_INTERVAL_S``; returns why its requests should fail (silent past its
    timeout, or past two heartbeat intervals after it said it was stopping), else None."""
    for msg in peer.assembler.expire(now):   # its request fails at its peer timeout
        log.warning("dropped reply %d from %s: its tensors stopped streaming in",
                    msg.id, peer.address)
    if not peer.pending:
        return None
    for msg_id, (future, method, deadline, timeout) in list(peer.pending.items()):
        if future.cancelled():
            del peer.pending[msg_id]
        elif deadline is not None and now > deadline:
            del peer.pending[msg_id]
            _set_exception(future, RequestTimeoutError(peer.address, method, timeout))
    if not peer.pending:
        return None
    silent = now - peer.last_heard
    if silent > peer.timeout:
        return "no answer for %.1f s" % silent
    left = _LEFT.get(peer.address)
    if left is not None and silent > 2 * protocol.HEARTBEAT_INTERVAL_S and peer.last_heard < left:
        return "it stopped (it said it was leaving) and has not answered for %.1f s" % silent
    if silent > protocol.HEARTBEAT_INTERVAL_S and \
            now - peer.last_ping > protocol.HEARTBEAT_INTERVAL_S:
        peer.last_ping = now
        try:
            if peer.direct is not None:
                peer.direct.write([_PING])
            else:
                _base_send(peer.socket, _PING, _NOBLOCK, True, False)
        except (zmq.Again, direct.ConnectionLostError):
            pass   # no connection to queue it on (a broken one is noticed on reading)
    return None


def connect_dealer(ctx, curve, address, tag):
    """A DEALER connected to ``address`` (CURVE client when ``curve``) and the PAIR receiving its
    disconnect and handshake-failure events; PeerUnavailableError if it cannot connect."""
    try:
        sock = ctx.socket(zmq.DEALER)
    except zmq.ZMQError as e:   # e.g. the context's socket limit (ZMQ_MAX_SOCKETS)
        raise PeerUnavailableError(address, "cannot connect: %s" % e) from None
    monitor = None
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.RECONNECT_IVL, 50)
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        # A send that cannot be queued (no connection left: see handshake_error) raises
        # zmq.Again instead of blocking the thread for ever.
        sock.setsockopt(zmq.SNDTIMEO, 0)
        if curve is not None:
            curve.apply_client(sock)
        monitor = sock.get_monitor_socket(
            zmq.EVENT_DISCONNECTED | _HANDSHAKE_FAILED,
            "inproc://zps-monitor-%x-%d" % (id(tag), next(_monitor_ids)))
        url = tcp_url(address)
        if _is_ipv6(url):
            sock.setsockopt(zmq.IPV6, 1)
        sock.connect(url)
    except zmq.ZMQError as e:
        if monitor is not None:
            sock.disable_monitor()
            monitor.close(linger=0)
        sock.close(linger=0)   # an open socket would block the context's term() forever
        raise PeerUnavailableError(address, "cannot connect: %s" % e) from None
    return sock, monitor


def close_dealer(sock, monitor):
    """Close what ``connect_dealer`` made (also while the context is ending)."""
    try:
        sock.disable_monitor()
    except zmq.ZMQError:
        pass   # ETERM: the context is ending; closing is all that is left to do
    monitor.close(linger=0)
    sock.close(linger=0)


class Transport:
    """Owns a ZeroMQ context and the I/O thread; thread-safe API."""

    def __init__(self, context=None, name="zps-io", curve=None):
        """``curve``: a security.CurveConfig to authenticate and encrypt every socket with (None:
        plain TCP, no cost at all)."""
        self._ctx = context or zmq.Context()
        self._own_ctx = context is None
        self._ids = itertools.count(1)
        # _lock orders submissions against close(): nothing enters the inbox or writes the wake
        # pipe once _closed is set, so the loop's final drain sees every action and the pipe
        # can be closed without another thread writing to a reused descriptor.
        self._lock = threading.Lock()
        self._inbox = collections.deque()
        self._wake_pending = False   # a wake-up byte is in the pipe and not yet consumed
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._peers = {}
        self._bound = {}
        self._released = set()      # ports unbound by this transport (their close is asynchronous)
        self._sockets = {}          # zmq socket -> _Peer | BoundSocket | _Monitor
        self._poller = zmq.Poller()
        self._poller.register(self._wake_r, zmq.POLLIN)
        self.curve = curve
        # Direct connections (zps.transport.direct): not with CURVE, which they would bypass.
        self.direct_ok = direct.ENABLED and curve is None
        self.direct_ports = {}      # peer address -> (port, token) of its direct listener
        self._zap = None
        if curve is not None:   # before any CURVE server socket: unchecked clients get no chance
            self._zap = security.ZapHandler(self._ctx, curve)
            self._sockets[self._zap.socket] = self._zap
            self._poller.register(self._zap.socket, zmq.POLLIN)
        self._callers = []          # every thread's Caller (see caller())
        self._local = threading.local()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- public API (any thread) -----------------------------------------------------------------
    def bind(self, address, handler, limits=None, bind_address=None, early=None):
        """Bind a ROUTER at ``address`` (``host:port``; port 0 picks a free one).

        ``bind_address`` binds another local address than the advertised one (e.g. 0.0.0.0 in a
        container whose service name is not a local interface). Returns a BoundSocket whose
        ``address`` is the actual ``host:port``. ``handler(message, responder)`` runs on the I/O
        thread, so it must not block: long work goes to a pool that answers through
        ``responder`` (None for one-way messages). ``early(message)``: whether a streamed
        message goes to the handler at its head, its large tensors still arriving
        (codec.StreamAssembler). Raises BindError naming the address.
        """
        local_host, _, local_port = (bind_address or address).rpartition(":")
        # Resolved here, not on the I/O thread: a name server may take a while to answer.
        bind_host = _bind_host(local_host)
        deadline = time.monotonic() + RELEASE_WAIT_S
        while True:
            try:
                return self._call(lambda: self._bind(address, handler, limits or codec.DEFAULT_LIMITS,
                                                     bind_address, early, bind_host))
            except _AddressInUseError:
                # ZeroMQ closes a listener asynchronously: a port this transport just released
                # may still be held for a moment. Any other port in use is an error at once.
                if local_port not in self._released or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def unbind(self, bound):
        """Close a bound socket; its address can be bound again at once. No-op once closed."""
        try:
            self._call(lambda: self._unbind(bound))
        except TransportError:
            if not self._closed:
                raise

    def request(self, address, method, body=None, tensors=(), timeout=None, peer_timeout=None):
        """Send a request; returns a Future of the reply Message.

        ``timeout`` bounds this request (RequestTimeoutError); ``peer_timeout`` is how long the peer may
        stay silent while requests are in flight (PeerUnavailableError), default
        protocol.DEFAULT_PEER_TIMEOUT_S. A connection that breaks fails the requests sent over it
        with PeerUnavailableError at once (their replies cannot arrive any more). Large tensors
        are sent without a copy: do not modify them before the future is done.
        """
        future = concurrent.futures.Future()
        msg_id = next(self._ids)
        parts = codec.encode_parts(protocol.REQUEST, msg_id, body, tensors, method=method,
                                   gather=True)
        deadline = None if timeout is None else time.monotonic() + timeout

        def send():
            if future.done():
                return  # cancelled before it was sent
            peer = self._peer(address)
            if peer.direct is not None and idle(peer):
                # Its end may be waiting to be read (the peer's process exited since): then the
                # request goes on ZeroMQ, which reaches a successor at the address, instead of
                # into a dead connection.
                self._read_direct(peer, _POLLIN)
            try:
                send_request(peer, msg_id, (future, method, deadline, timeout), parts,
                             peer_timeout)
                self._maybe_direct(peer)
            except direct.ConnectionLostError as e:
                self._lose_direct(peer, e)
            except zmq.Again:
                self._drop_peer(address, None, fail=True, error=unqueued(address))

        self._submit(send, future)
        return future

    def caller(self):
        """The calling thread's own connections (zps.transport.caller.Caller), to send requests
        and wait for their replies without the I/O thread; None on the I/O thread, while this
        thread's caller is in use (a nested call), beyond MAX_CALLERS threads, with
        ``ZPS_CALLER_SOCKETS=0``, or once the transport is closed."""
        if not CALLER_SOCKETS:
            return None
        caller = getattr(self._local, "caller", None)
        if caller is None or caller.closed:
            if threading.current_thread() is self._thread or self._closed:
                return None
            with self._lock:
                if self._closed:
                    return None
                # Threads that ended left their callers idle: their sockets are closed here.
                for old in self._callers:
                    if not old.thread.is_alive():
                        old.shutdown()
                self._callers = [c for c in self._callers if not c.closed]
                if len(self._callers) >= MAX_CALLERS:
                    return None   # sockets are bounded: more threads share the I/O thread's
                from zps.transport.caller import Caller
                caller = Caller(self._ctx, self.curve, self._ids, self)
                self._callers.append(caller)
            self._local.caller = caller
        return None if caller.busy else caller

    def call(self, address, method, body=None, tensors=(), peer_timeout=None):
        """``request`` and wait for the reply Message (raising what its future would): sent from
        this thread's own socket where it can be (``caller``: no thread hand-off either way),
        else through the I/O thread."""
        caller = self.caller()
        if caller is not None and caller.enter():
            try:
                if caller.reaches(address):
                    future = caller.request(address, method, body, tensors, peer_timeout)
                    caller.wait([future])
                    return future.result()
            finally:
                caller.leave()
        return self.request(address, method, body, tensors, peer_timeout=peer_timeout).result()

    def send_oneway(self, address, method, body=None, tensors=()):
        """Send a message that gets no reply. From a thread in the middle of a call on its own
        sockets (``caller``: a master running its step's partition), on those; else through the
        I/O thread. Large tensors are sent without a copy: do not modify them afterwards."""
        caller = getattr(self._local, "caller", None)
        if caller is not None and caller.busy and not caller.closed and caller.reaches(address):
            caller.send_oneway(address, method, body, tensors)
            return
        parts = codec.encode_parts(protocol.ONEWAY, next(self._ids), body, tensors, method=method,
                                   gather=True)

        def send():
            peer = self._peer(address)
            try:
                send_parts(peer, parts, lambda e: self._lose_direct(peer, e))
                self._maybe_direct(peer)
            except zmq.Again:
                self._drop_peer(address, None, fail=True, error=unqueued(address))
                raise unqueued(address) from None

        self._submit(send)

    def forget_peer(self, address):
        """Close the connection to ``address`` (queued messages are dropped)."""
        self._submit(lambda: self._drop_peer(address, "connection closed", fail=True))

    def close(self):
        """Stop the I/O thread and close every socket; pending requests fail with TransportError.

        Safe to call twice, and from a handler (then it does not wait for the I/O thread).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                log.warning("transport I/O thread did not stop within 10 s (a handler is blocking it)")

    @property
    def closed(self):
        return self._closed

    # -- plumbing --------------------------------------------------------------------------------
    def _submit(self, fn, future=None):
        if threading.current_thread() is self._thread:
            if not self._closed:
                self._run_safely(fn, future)
                return
        else:
            with self._lock:
                if not self._closed:
                    self._inbox.append((fn, future))
                    # One wake-up per burst: a write to the pipe hands the GIL to the I/O thread,
                    # which costs far more than the syscall.
                    if not self._wake_pending:
                        self._wake_pending = True
                        self._wake()
                    return
        err = TransportError("transport is closed")
        if future is None:
            raise err
        _set_exception(future, err)

    def _wake(self):
        # Called with _lock held and _closed false, so the pipe is open.
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass  # the pipe is full: the loop is already awake

    def run_in_io_thread(self, fn):
        """Call ``fn()`` on the I/O thread and return its result (e.g. to set thread state)."""
        return self._call(fn)

    def _call(self, fn):
        """Run ``fn`` on the I/O thread and return its result (or raise its exception)."""
        future = concurrent.futures.Future()

        def run():
            future.set_result(fn())

        self._submit(run, future)
        return future.result(timeout=30)

    @staticmethod
    def _run_safely(fn, future):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - failures belong to the caller's future
            if future is not None and not future.done():
                _set_exception(future, e)
            else:
                log.warning("transport action failed: %s", e)

    # -- I/O thread ------------------------------------------------------------------------------
    def _loop(self):
        spin.run_in_batch()
        next_check = time.monotonic()
        spinner = spin.Spin(spare=1)   # every peer waits on this loop
        try:
            while not self._closed:
                events = dict(spinner.poll(self._poller, POLL_INTERVAL_MS))
                try:
                    next_check = self._step(events, next_check)
                except Exception:  # noqa: BLE001 - keep serving; the failure is logged
                    log.exception("transport I/O loop error (continuing)")
        except Exception:  # noqa: BLE001 - poll failed: the transport cannot go on
            log.exception("transport I/O loop failed; closing the transport")
        finally:
            with self._lock:
                self._closed = True   # later calls fail at once instead of queueing forever
            self._shutdown()

    def _step(self, events, next_check):
        if self._wake_r in events:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        # Cleared before the inbox is drained: anything submitted from now on wakes us again.
        self._wake_pending = False
        while self._inbox:
            fn, future = self._inbox.popleft()
            self._run_safely(fn, future)
        for sock, flags in events.items():
            owner = self._sockets.get(sock)
            if owner is None:
                continue
            if isinstance(owner, _DirectServer):
                self._serve_direct(owner, flags)
            elif isinstance(owner, _DirectPeer):
                self._read_direct(owner.peer, flags)
            elif isinstance(owner, _DirectListener):
                self._accept_direct(owner.bound, owner.sock)
            else:
                self._drain(sock, owner)
        now = time.monotonic()
        if now >= next_check:
            self._check_peers(now)
            next_check = now + POLL_INTERVAL_MS / 1000.0
        return next_check

    def _drain(self, sock, owner):
        for _ in range(256):  # bounded, so one busy socket cannot starve the others
            if sock.closed:
                return  # closed by a handler or callback of the previous message
            try:
                if isinstance(owner, _Monitor):
                    event = recv_monitor_message(sock, zmq.NOBLOCK)
                else:
                    frames = recv_frames(sock)
            except zmq.Again:
                return
            if isinstance(owner, BoundSocket):
                self._on_server_message(owner, frames[0], frames[1:], owner)
            elif isinstance(owner, _Peer):
                deliver_reply(owner, frames)
            elif isinstance(owner, security.ZapHandler):
                owner.handle(frames)
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                on_disconnect(owner.peer)
            else:
                peer = owner.peer
                self._drop_peer(peer.address, None, fail=True,
                                error=handshake_error(peer, event, self.curve))
                return
            # Stop when nothing more is queued rather than at zmq.Again: pyzmq builds that
            # exception with two imports and a strerror call (~5 us per drained socket).
            if sock.closed or not sock.get(_EVENTS) & _POLLIN:
                return

    def _on_server_message(self, bound, identity, frames, route):
        """A message for ``bound``'s handler, from ``identity`` (a ROUTER's identity frame, or a
        direct connection's), answered through ``route`` (``bound``, or a _DirectServer)."""
        stats = bound.stats
        stats.messages_in += 1
        nbytes = sum(len(f) for f in frames)
        stats.bytes_in += nbytes
        meta = frames[:1] if route is bound else (route.address,)   # for peer_name
        try:
            msg = bound.assembler.feed(frames, identity if type(identity) is bytes
                                       else identity.bytes)
        except codec.ProtocolError as e:
            stats.malformed += 1
            peer = peer_name(identity, meta)
            _malformed_log.warning(peer, "%s: malformed message from %s dropped or refused: %s",
                                   bound.address, peer, e)
            self._refuse(bound, identity, frames, e, route)
            return
        if msg is None:
            return   # a streamed request: its tensors are still arriving
        if msg.kind == protocol.PING:
            route.send([identity] + codec.encode(protocol.PONG, msg.id))
            return
        if msg.kind not in (protocol.REQUEST, protocol.ONEWAY) or msg.method is None:
            stats.malformed += 1
            if msg.kind == protocol.REQUEST:
                Responder(self, route, identity, msg.id, None).error(
                    3, "request without a method")
            return
        if msg.method == direct.METHOD and msg.kind == protocol.REQUEST:
            # Connection set-up, not traffic: not in the stats.
            stats.messages_in -= 1
            stats.bytes_in -= nbytes
            route.send([identity] + codec.encode(protocol.REPLY, msg.id, {
                "port": bound.direct_port, "token": bound.direct_token}), count=False)
            return
        responder = Responder(self, route, identity, msg.id, msg.method) \
            if msg.kind == protocol.REQUEST else None
        bound.current = (identity, meta)
        try:
            bound.handler(msg, responder)
        except Exception as e:  # noqa: BLE001 - a handler bug must not kill the I/O thread
            log.exception("%s: handler failed on %r", bound.address, msg.method)
            if responder is not None and not responder._done:
                try:
                    responder.error(13, "internal error handling %r: %s" % (msg.method, e))
                except RuntimeError:
                    pass  # another thread answered it meanwhile

    def _refuse(self, bound, identity, frames, exc, route):
        # Answer with an error if the header at least names a request id we can reply to.
        if not frames:
            return
        msg_id = exc.message_id if exc.message_kind == protocol.REQUEST else \
            _readable_request_id(frames[0], (protocol.REQUEST,), bound.limits.max_header_bytes)
        if msg_id is not None:
            Responder(self, route, identity, msg_id, None).error(3, "malformed message: %s" % exc)

    # -- direct connections (zps.transport.direct; I/O thread) -----------------------------------
    def _accept_direct(self, bound, listener):
        limits = bound.limits
        for _ in range(64):
            try:
                sock, addr = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:   # e.g. out of file descriptors: the client stays on ZeroMQ
                log.warning("%s: cannot accept a direct connection: %s", bound.address, e)
                return
            peer = "%s:%s" % addr[:2] if sock.family != socket.AF_UNIX else direct.unix_peer(sock)
            conn = direct.Conn(sock, peer=peer,
                               max_frame_bytes=max(limits.max_header_bytes, protocol.FRAME_BYTES),
                               max_message_bytes=limits.max_message_bytes,
                               accepted_token=bound.direct_token)
            conn.on_blocked = self._watch_out
            owner = _DirectServer(self, bound, conn)
            # Streamed tensors are received straight into place (StreamAssembler.placement).
            conn.place = lambda head, sizes, source=owner.identity: bound.assembler.placement(
                head, sizes, source)
            bound.direct_conns.add(owner)
            self._sockets[conn.fileno()] = owner
            self._poller.register(conn.fileno(), zmq.POLLIN)

    def _serve_direct(self, owner, flags):
        conn, bound = owner.conn, owner.bound
        # (flags is a zmq.PollEvent: its & costs ~3 us, so it is looked at only when needed)
        if conn.out_watched and int(flags) & _POLLOUT and not self._flush_direct(conn):
            self._close_direct_server(owner)
            return
        try:
            conn.read(lambda frames: self._on_server_message(bound, owner.identity, frames, owner))
        except direct.ConnectionLostError as e:
            if isinstance(e, direct.FramingError):
                bound.stats.malformed += 1
                peer = peer_name(owner.identity, (owner.address,))
                _malformed_log.warning(peer, "%s: closed the direct connection of %s: %s",
                                       bound.address, peer, e)
            self._close_direct_server(owner)

    def _close_direct_server(self, owner):
        if owner not in owner.bound.direct_conns:
            return
        owner.bound.direct_conns.discard(owner)
        self._forget_conn(owner.conn)

    def _forget_conn(self, conn):
        """Stop polling ``conn`` (a direct.Conn or a listening socket: zmq.Poller reports plain
        sockets by descriptor, so they are registered and owned by it) and close it."""
        fd = conn.fileno()
        if self._sockets.pop(fd, None) is not None:
            self._poller.unregister(fd)
        conn.close()

    def _watch_out(self, conn):
        """``conn`` has bytes queued: poll it for POLLOUT until they are sent."""
        if not conn.out_watched and not conn.closed and conn.fileno() in self._sockets:
            conn.out_watched = True
            self._poller.modify(conn.fileno(), zmq.POLLIN | zmq.POLLOUT)

    def _flush_direct(self, conn):
        """Send what ``conn`` has queued; False if it broke."""
        try:
            if not conn.flush():
                return True
        except direct.ConnectionLostError:
            return False
        conn.out_watched = False
        self._poller.modify(conn.fileno(), zmq.POLLIN)
        return True

    def _maybe_direct(self, peer):
        maybe_direct(self, peer, self._ids, lambda conn: self._attach_soon(peer, conn))

    def _attach_soon(self, peer, conn):
        # A connecting thread's (maybe_direct): the I/O thread attaches it; if the transport
        # closes first, the future fails (also while queued: _shutdown) and the connection closes.
        future = concurrent.futures.Future()
        future.add_done_callback(lambda f: f.exception() is not None and conn.close())

        def attach():
            self._attach_direct(peer, conn)
            future.set_result(None)

        self._submit(attach, future)

    def _attach_direct(self, peer, conn):
        if self._peers.get(peer.address) is not peer or peer.direct is not None:
            conn.close()
            return
        peer.direct = conn
        conn.on_blocked = self._watch_out
        conn.place = peer.assembler.placement
        self._sockets[conn.fileno()] = _DirectPeer(peer)
        self._poller.register(conn.fileno(), zmq.POLLIN)

    def _read_direct(self, peer, flags):
        conn = peer.direct
        try:
            if conn.out_watched and int(flags) & _POLLOUT and not self._flush_direct(conn):
                raise direct.ConnectionLostError("sending failed")
            conn.read(lambda frames: deliver_reply(peer, frames))
        except direct.ConnectionLostError as e:
            self._lose_direct(peer, e)

    def _lose_direct(self, peer, error):
        if peer.direct is not None and self._sockets.pop(peer.direct.fileno(), None) is not None:
            self._poller.unregister(peer.direct.fileno())
        lose_direct(peer, error, self.direct_ports)

    def _check_peers(self, now):
        for limiter in LogLimiter._all:
            limiter.flush(now)
        for bound in self._bound.values():
            for msg in bound.assembler.expire(now):
                _malformed_log.warning("stalled", "%s: dropped message %d: its tensors stopped "
                                       "streaming in", bound.address, msg.id)
        for peer in list(self._peers.values()):
            why = check_peer(peer, now)
            if why is not None:
                self._drop_peer(peer.address, why, fail=True)
        for bound in self._bound.values():
            for owner in [o for o in bound.direct_conns if o.conn.stale(now)]:
                log.info("%s: closed a direct connection from %s that sent no preamble",
                         bound.address, owner.conn.peer)
                self._close_direct_server(owner)

    def _peer(self, address):
        peer = self._peers.get(address)
        if peer is None:
            sock, monitor = connect_dealer(self._ctx, self.curve, address, self)
            peer = self._peers[address] = _Peer(address, sock, monitor)
            self._sockets[sock] = peer
            self._sockets[monitor] = _Monitor(peer)
            self._poller.register(sock, zmq.POLLIN)
            self._poller.register(monitor, zmq.POLLIN)
        return peer

    def _drop_peer(self, address, reason, fail, error=None):
        peer = self._peers.pop(address, None)
        if peer is None:
            return
        for sock in (peer.socket, peer.monitor):
            self._poller.unregister(sock)
            del self._sockets[sock]
        close_dealer(peer.socket, peer.monitor)
        if peer.direct is not None:
            self._forget_conn(peer.direct)
            peer.direct = None
        if fail:
            fail_pending(peer, error or PeerUnavailableError(address, reason))
        else:
            peer.pending.clear()

    def _bind(self, address, handler, limits, bind_address, early, bind_host):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise BindError("address %r must look like host:port" % address)
        sock = self._ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, SEND_HWM)
        sock.setsockopt(zmq.SNDTIMEO, 0)   # a full queue drops the answer, never blocks the loop
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.MAXMSGSIZE, max(limits.max_header_bytes, protocol.FRAME_BYTES))
        if self.curve is not None:
            self.curve.apply_server(sock)
        local = bind_address or address
        lport = local.rpartition(":")[2]
        url = "tcp://%s:%s" % (bind_host, "*" if lport == "0" else lport)
        if _is_ipv6(url):
            sock.setsockopt(zmq.IPV6, 1)
        try:
            sock.bind(url)
        except zmq.ZMQError as e:
            sock.close(linger=0)
            if e.errno == errno.EADDRINUSE:
                raise _AddressInUseError("address %s is already in use: another process (or server) is "
                                "listening there; choose another port or stop it" % local) from None
            if e.errno in (errno.EADDRNOTAVAIL, errno.ENODEV):
                raise BindError("cannot bind %s: it is not an address of this host; pass a local "
                                "bind address (e.g. 0.0.0.0:%s) if the cluster spec names a "
                                "service" % (local, lport)) from None
            raise BindError("cannot bind %s: %s" % (local, e)) from None
        endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        actual_port = endpoint.rsplit(":", 1)[1]
        advertised = "%s:%s" % (host, actual_port if port == "0" else port)
        bound = BoundSocket(self, sock, advertised, handler, limits, port=actual_port, early=early)
        self._bound[advertised] = bound
        self._sockets[sock] = bound
        self._poller.register(sock, zmq.POLLIN)
        if self.direct_ok:
            try:
                bound.listener = direct.listen(bind_host)
            except OSError as e:
                log.warning("%s: no direct listener (%s): clients use ZeroMQ only", advertised, e)
            else:
                bound.direct_port = bound.listener.getsockname()[1]
                bound.direct_token = direct.new_token()
                bound.unix_listener = direct.listen_unix(bound.direct_token)
                for listener in (bound.listener, bound.unix_listener):
                    if listener is not None:
                        self._sockets[listener.fileno()] = _DirectListener(bound, listener)
                        self._poller.register(listener.fileno(), zmq.POLLIN)
        return bound

    def _unbind(self, bound):
        if self._bound.pop(bound.address, None) is None:
            return
        self._poller.unregister(bound.socket)
        del self._sockets[bound.socket]
        bound.socket.close(linger=0)
        self._released.add(bound.port)
        if bound.listener is not None:
            self._forget_conn(bound.listener)
            if bound.unix_listener is not None:
                self._forget_conn(bound.unix_listener)
            for owner in list(bound.direct_conns):
                self._close_direct_server(owner)

    def _shutdown(self):
        # I/O thread, after _closed was set under _lock: nothing can be queued any more.
        closed = TransportError("transport is closed")
        while self._inbox:
            _fn, future = self._inbox.popleft()
            if future is not None:
                _set_exception(future, closed)
        for address in list(self._peers):
            self._drop_peer(address, "transport closed", fail=True, error=closed)
        for bound in list(self._bound.values()):
            self._unbind(bound)
        with self._lock:
            callers, self._callers = self._callers, []
        for caller in callers:   # a busy one closes its own sockets, which term() waits for
            caller.shutdown()
        if self._zap is not None:
            self._zap.close()   # before term(), which waits for every socket
        os.close(self._wake_r)
        os.close(self._wake_w)
        if self._own_ctx:
            self._ctx.term()


_default = None
_default_lock = threading.Lock()


def default_transport():
    """The process-wide transport (one I/O thread per process), created on first use."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            # CURVE keys come from the environment (see zps.transport.security).
            _default = Transport(curve=security.curve_from_env())
        return _default


def _after_fork_in_child():
    # A forked child has none of its parent's threads: the inherited transport's I/O thread is
    # gone, so a request through it would wait for ever, and its ZeroMQ context must not be used
    # in the child (nor closed: the sockets are the parent's). The child makes its own on first
    # use; a lock another thread held at the fork would stay locked.
    global _default, _default_lock
    _default = None
    _default_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
