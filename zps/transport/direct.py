"""Direct connections: the same messages as the ZeroMQ sockets carry, over plain TCP sockets read
by the thread that handles them.

Why: a ZeroMQ message passes two I/O threads of libzmq (the sender's and the receiver's) before
the receiving thread sees it, and on a small VM each of those wake-ups costs ~25-30 us (an idle
vCPU's exit to the hypervisor and back: docs/performance.md, sessions 11-12). A round trip of a
small message took 119-134 us through pyzmq and 7-19 us through a plain socket whose two ends
shared a vCPU (85-100 us across vCPUs, where the wake-up of the other one dominates: see
zps.transport.spin). A latency-bound step (a scalar model's four messages) is mostly those
wake-ups. A direct connection is read by
the transport's I/O thread (a server's requests, the replies of its peers) or by the caller thread
waiting for its replies (``zps.transport.caller``), so a message wakes one thread.

How: each server's ROUTER gets a TCP listener beside it (same host, a port of the OS's choosing)
unless CURVE is on (direct connections are neither authenticated nor encrypted, so with CURVE
everything stays on ZeroMQ) or ``ZPS_DIRECT=0``. A client asks the ROUTER once, over ZeroMQ, for
that port (the ``zps.Direct`` request: ``{"port", "token"}``), connects, and sends a preamble
``b"ZPSD" + version + token``; the server checks the token (the port reached the server that
answered, not a later process reusing the port) and answers ``b"ZPSD" + version``. From then on
the client's requests and one-way messages to that address go over the direct connection and
their answers come back on it; the ZeroMQ socket stays as it was (requests sent on it are still
answered on it). When the listener is not reachable (a firewall passing only the cluster's
ports), the client stays on ZeroMQ.

Between processes of one machine each side also offers a shared-memory ring in its preamble /
answer (version 2; ``zps.transport.shm``): a frame of at least 64 KB that fits the ring is copied
into it and only its position travels on the socket. On Linux a listener also listens on an
abstract Unix socket named after its token, and a client tries that first: it exists only for a
client in the server's network namespace (the same machine), where it costs a message about a
third less CPU than loopback TCP, which runs the whole TCP stack for both ends on the sender's
CPU (7.7 -> 5.4 us a message each side between two processes on one vCPU, 30 -> 17-26 across
two; a ps and one worker: 3,716 -> 4,096 steps/s). The same preamble, token check, rings and
framing follow; ``ZPS_DIRECT_UNIX=0``: TCP only.

Framing: a message ``[frame, ...]`` is ``u32 n``, ``n`` × ``u64 length`` (little-endian), then the
frames' bytes (8 bytes, the ring position, for a frame whose length has ``shm.IN_RING`` set).
The receiver refuses (and closes the connection on) a message of more than ``max_frames``
frames, a frame longer than ``max_frame_bytes`` or a message longer than ``max_message_bytes``
before it allocates anything for it, as ZeroMQ's MAXMSGSIZE does; what the frames hold is
checked by the codec as for ZeroMQ messages.
"""

import collections
import errno
import os
import select
import socket
import struct
import sys
import time

from zps.transport import codec, protocol, shm

# Version 2 adds the shared-memory rings (zps.transport.shm): its preamble and answer end with
# the ring each side offers; a server still takes version 1's (no rings) and answers it in kind.
VERSION = 2
MAGIC = b"ZPSD"
TOKEN_BYTES = 16
PREAMBLES = {1: len(MAGIC) + 1 + TOKEN_BYTES, 2: len(MAGIC) + 1 + TOKEN_BYTES + shm.OFFER.size}
PREAMBLE_BYTES = min(PREAMBLES.values())   # enough to know the version
ACK = MAGIC + bytes([VERSION])              # then the server's ring offer
METHOD = "zps.Direct"     # the request (over ZeroMQ) that asks a server for its direct port
ENABLED = os.environ.get("ZPS_DIRECT", "1") != "0"
# Abstract Unix sockets beside the TCP listeners (Linux; ZPS_DIRECT_UNIX=0: TCP only).
UNIX = os.environ.get("ZPS_DIRECT_UNIX", "1") != "0" and sys.platform.startswith("linux")
CONNECT_TIMEOUT_S = 2.0   # connecting and the preamble's answer


def _port_range(value):
    """``ZPS_DIRECT_PORTS``: ``"N"`` or ``"N-M"``, the ports listeners may take (a firewall that
    passes only some); unset or empty: any port the OS chooses."""
    if not value:
        return None
    try:
        first, _, last = value.partition("-")
        first, last = int(first), int(last or first)
    except ValueError:
        first = last = -1
    if not 0 < first <= last < 65536:
        raise ValueError("ZPS_DIRECT_PORTS must be a port or a range like 41000-41099, got %r"
                         % value)
    return range(first, last + 1)


PORTS = _port_range(os.environ.get("ZPS_DIRECT_PORTS"))
PREAMBLE_TIMEOUT_S = 30.0   # an accepted connection that sends no preamble is closed after this

READ_BYTES = 256 << 10    # bytes asked of one recv
BIG_FRAME = 64 << 10      # a frame at least this long is received straight into its own buffer
MAX_IOV = 512             # buffers per sendmsg (IOV_MAX is 1024 on Linux)
# Bytes a non-blocking connection may hold unsent (most of them views of tensors, not copies): a
# peer that reads none of its answers is dropped past this, as ZeroMQ's ROUTER drops answers
# past its queue limit (endpoint.SEND_HWM).
MAX_QUEUED_BYTES = 4 << 30

_U32 = struct.Struct("<I")


class ConnectionLostError(Exception):
    """The peer closed the connection or it broke."""


class FramingError(ConnectionLostError):
    """The peer sent bytes that are not a message within the limits (the connection is closed)."""


def new_token():
    return os.urandom(TOKEN_BYTES)


def _host(address):
    host = address.split("://", 1)[-1].rpartition(":")[0]
    return host[1:-1] if host.startswith("[") else host


def unix_name(token):
    """The abstract Unix socket of the listener whose clients present ``token``."""
    return "\0zps-direct-" + token.hex()


def listen_unix(token):
    """The abstract Unix socket beside a TCP listener whose token is ``token`` (non-blocking,
    listening), or None: not Linux, ``ZPS_DIRECT_UNIX=0``, or refused (then clients use TCP)."""
    if not UNIX:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(unix_name(token))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        return None
    return sock


def _connect_unix(token, timeout):
    # None where the server's Unix socket is not there: another machine or network namespace.
    if not UNIX:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(unix_name(token))
    except OSError:
        sock.close()
        return None
    return sock


def unix_peer(sock):
    """A name for the process at the other end of an accepted Unix socket, for logs."""
    try:
        pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    except (OSError, AttributeError, struct.error):
        return "localhost:unix"
    return "localhost (pid %d):unix" % pid


def connect(address, port, token, timeout=CONNECT_TIMEOUT_S):
    """A direct connection (blocking) to the server at ``address`` (``host:port`` of its ROUTER)
    whose listener is at ``port`` and answered ``token``: over its Unix socket where this process
    reaches it, else TCP; OSError if it cannot be made."""
    sock = _connect_unix(token, timeout) or socket.create_connection((_host(address), port),
                                                                     timeout=timeout)
    ring = shm.Ring.make()
    try:
        sock.sendall(MAGIC + bytes([VERSION]) + token + (ring.offer() if ring else shm.NO_OFFER))
        ack = b""
        while len(ack) < len(ACK) + shm.OFFER.size:
            more = sock.recv(len(ACK) + shm.OFFER.size - len(ack))
            if not more:
                raise ConnectionRefusedError("the direct listener closed the connection (a "
                                             "different server, or a version mismatch)")
            ack += more
        if ack[:len(ACK)] != ACK:
            raise ConnectionRefusedError("the direct listener answered %r, not %r"
                                         % (ack[:len(ACK)], ACK))
        conn = Conn(sock, peer="%s:%d" % (_host(address), port))
    except BaseException:
        sock.close()
        if ring is not None:
            ring.close()
        raise
    conn.rings(ring, shm.Reader.open(ack[len(ACK):]))
    return conn


def listen(host, ports=None):
    """A listening socket on ``host`` (as bound for the ROUTER, e.g. ``127.0.0.1``, ``[::1]``,
    ``0.0.0.0`` or ``*``), on the first free port of ``ports`` (default ``PORTS``; None: one the
    OS chooses); OSError if it cannot be made."""
    host = host[1:-1] if host.startswith("[") else host
    if host in ("", "*"):
        host = "0.0.0.0"
    family, _, _, _, addr = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM,
                                               flags=socket.AI_PASSIVE)[0]
    ports = PORTS if ports is None else ports
    for port in ports or (0,):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            # as ZeroMQ's listeners: a port whose old connections are in TIME_WAIT can be taken
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((addr[0], port) + tuple(addr[2:]))
            sock.listen(128)
            sock.setblocking(False)
            return sock
        except OSError as e:
            sock.close()
            if e.errno != errno.EADDRINUSE or port == ports[-1]:
                raise OSError(e.errno, "%s%s" % (e.strerror, "" if not ports else
                              " (no free port in ZPS_DIRECT_PORTS %d-%d)"
                              % (ports[0], ports[-1]))) from None
        except BaseException:
            sock.close()
            raise


class Conn:
    """One direct connection: framed messages over a non-blocking TCP or Unix socket, both ways.

    ``read(deliver)`` hands over the messages that have arrived whole (lists of frames: bytes,
    bytearrays for large frames, or views of where ``place`` put them) without waiting.
    ``write(frames)`` sends one message: what the socket does not take at once is queued
    (``wants_write``) and sent by ``flush()`` when the socket is writable again, or, with
    ``blocking`` set, waited for (at most ``send_timeout`` seconds: then ConnectionLostError).
    One thread uses a connection at a time.
    """

    def __init__(self, sock, peer="?", max_frame_bytes=None, max_frames=None,
                 max_message_bytes=None, accepted_token=None):
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.sock = sock
        self.peer = peer
        self._fd = sock.fileno()
        self.max_frame_bytes = max_frame_bytes or protocol.MAX_MESSAGE_BYTES
        self.max_frames = max_frames or protocol.MAX_TENSORS_PER_MESSAGE + 2
        self.max_message_bytes = max_message_bytes or protocol.MAX_MESSAGE_BYTES
        self.blocking = False
        self.on_blocked = None   # called with the connection when a write had to be queued
        self.out_watched = False   # the owner polls it for POLLOUT
        self.send_timeout = protocol.DEFAULT_PEER_TIMEOUT_S
        self.closed = False
        self._token = accepted_token   # server side: the preamble must carry it
        self.created = time.monotonic()
        self._deliver = None     # read()'s
        self._buf = bytearray()
        self._lens = None        # frame lengths of the message being read
        self._frames = []
        self._big = None         # (buffer, bytes received) of a large frame being read
        # place(header frame, data frame sizes): where the data frames of a message go (writable
        # byte views, e.g. codec.StreamAssembler.placement), or None: buffers of their own.
        self.place = None
        self._views = None       # the places of the message being read (False: none)
        self._out = collections.deque()   # memoryviews not yet sent
        self._queued = 0                    # their bytes
        self.messages_in = 0
        self.ring_out = None   # the shm.Ring this side writes, once the peer marked it ready
        self.ring_in = None    # the peer's (shm.Reader), where it offered one that opened
        self._in_ring = None   # which frames of the message being read are in ring_in

    def rings(self, ring_out, ring_in):
        """Use these shared-memory rings (zps.transport.shm; either may be None)."""
        self.ring_out, self.ring_in = ring_out, ring_in

    def fileno(self):
        return self._fd

    def stale(self, now):
        """Accepted, and still no preamble after PREAMBLE_TIMEOUT_S."""
        return self._token is not None and now - self.created > PREAMBLE_TIMEOUT_S

    def close(self):
        if not self.closed:
            self.closed = True
            self._out.clear()
            try:
                self.sock.close()
            except OSError:
                pass
            for ring in (self.ring_out, self.ring_in):
                if ring is not None:
                    ring.close()

    # -- reading ---------------------------------------------------------------------------------
    def read(self, deliver):
        """Receive what has arrived, without waiting: ``deliver(frames)`` for each message as it
        completes, in order (before the next one's frames are placed: see ``place``); then
        ConnectionLostError at the end of the stream, FramingError on bytes that are not a message
        within the limits."""
        self._deliver = deliver
        while not self.closed:
            big = self._big
            if big is not None:
                buf, got = big
                try:
                    n = self.sock.recv_into(memoryview(buf)[got:])
                except (BlockingIOError, InterruptedError):
                    return
                except OSError as e:
                    raise ConnectionLostError(str(e)) from None
                if n == 0:
                    raise ConnectionLostError("the peer closed the connection")
                got += n
                if got < len(buf):
                    self._big = (buf, got)
                    continue
                self._big = None
                self._frames.append(buf)
                self._parse()
                continue
            try:
                data = self.sock.recv(READ_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                raise ConnectionLostError(str(e)) from None
            if not data:
                raise ConnectionLostError("the peer closed the connection")
            self._buf += data
            self._parse()
            if len(data) < READ_BYTES and self._big is None:
                return   # the socket is most likely drained: spare the EAGAIN round

    def _parse(self):
        buf = self._buf
        pos = 0
        end = len(buf)
        while True:
            if self._token is not None:
                if end - pos < PREAMBLE_BYTES:
                    break
                pre = bytes(buf[pos:pos + PREAMBLE_BYTES])
                version = pre[len(MAGIC)]
                if pre[:len(MAGIC)] != MAGIC or version not in PREAMBLES:
                    raise FramingError("not a zps direct connection (preamble %r)" % pre[:5])
                if pre[len(MAGIC) + 1:] != self._token:
                    raise FramingError("the preamble names another server (a stale port)")
                if end - pos < PREAMBLES[version]:
                    break
                offer = bytes(buf[pos + PREAMBLE_BYTES:pos + PREAMBLES[version]])
                pos += PREAMBLES[version]
                self._token = None
                if version == 1:
                    self._send_now([MAGIC + bytes([1])])
                    continue
                ring = shm.Ring.make()
                self.rings(ring, shm.Reader.open(offer))
                self._send_now([ACK + (ring.offer() if ring else shm.NO_OFFER)])
                continue
            lens = self._lens
            if lens is None:
                if end - pos < 4:
                    break
                n, = _U32.unpack_from(buf, pos)
                if n == 0 or n > self.max_frames:
                    raise FramingError("a message of %d frames (at most %d allowed)"
                                       % (n, self.max_frames))
                if end - pos < 4 + 8 * n:
                    break
                lens = struct.unpack_from("<%dQ" % n, buf, pos + 4)
                self._in_ring = None
                if self.ring_in is not None and max(lens) >= shm.IN_RING:
                    self._in_ring = [n >= shm.IN_RING for n in lens]
                    lens = tuple(n & ~shm.IN_RING for n in lens)
                if max(lens) > self.max_frame_bytes or sum(lens) > self.max_message_bytes:
                    raise FramingError("a message of %d bytes with a frame of %d (limits: %d a "
                                       "frame, %d a message)" % (sum(lens), max(lens),
                                                                 self.max_frame_bytes,
                                                                 self.max_message_bytes))
                pos += 4 + 8 * n
                self._lens = lens
            frames = self._frames
            while len(frames) < len(lens):
                k = len(frames)
                size = lens[k]
                if k == 1 and self._views is None:
                    self._views = (self.place is not None and max(lens[1:]) >= BIG_FRAME
                                   and self.place(frames[0], lens[1:])) or False
                views = self._views
                if self._in_ring is not None and self._in_ring[k]:
                    if end - pos < shm.POSITION.size:
                        break
                    start, = shm.POSITION.unpack_from(buf, pos)
                    try:
                        frames.append(self.ring_in.take(start, size, views[k - 1] if views
                                                        else None))
                    except shm.RingError as e:
                        raise FramingError(str(e)) from None
                    pos += shm.POSITION.size
                elif end - pos >= size:
                    if views:
                        views[k - 1][:] = buf[pos:pos + size]
                        frames.append(views[k - 1])
                    else:
                        frames.append(bytes(buf[pos:pos + size]))
                    pos += size
                elif size >= BIG_FRAME or views:
                    big = views[k - 1] if views else bytearray(size)
                    have = end - pos
                    big[:have] = buf[pos:end]
                    pos = end
                    self._big = (big, have)
                    del buf[:pos]
                    return
                else:
                    break
            if len(frames) < len(lens):
                break
            self.messages_in += 1
            self._frames = []
            self._lens = None
            self._views = None
            self._in_ring = None
            del buf[:pos]   # consumed before it is handled (which may close the connection)
            pos, end = 0, len(buf)
            self._deliver(frames)
            if self.closed:
                return
        if pos:
            del buf[:pos]

    # -- writing ---------------------------------------------------------------------------------
    @property
    def wants_write(self):
        return bool(self._out)

    def write(self, frames):
        """Send one message of ``frames`` (buffers, not copied: leave them alone until sent);
        returns the bytes of its frames."""
        if self.closed:
            raise ConnectionLostError("the connection is closed")
        views = []
        lens = []
        ring = self.ring_out
        nbytes = 0   # the frames'
        stream = 0   # the frames' bytes on the socket
        for f in frames:
            pieces = type(f) is codec.Pieces   # one frame, gathered from its pieces by sendmsg
            if pieces:
                n = f.nbytes
            else:
                f = f if type(f) is bytes else memoryview(f).cast("B")
                n = len(f)
            nbytes += n
            if ring is not None and n >= shm.MIN_FRAME_BYTES:
                start = ring.put(f, n)
                if start is not None:
                    lens.append(n | shm.IN_RING)
                    views.append(shm.POSITION.pack(start))
                    stream += shm.POSITION.size
                    continue
            lens.append(n)
            stream += n
            if not n:   # (an empty buffer left queued would never be sent: flush stops at 0)
                continue
            if pieces:
                views.extend(p for p in f if len(p))
            else:
                views.append(f)
        head = struct.pack("<I%dQ" % len(lens), len(lens), *lens)
        views.insert(0, head)
        self._send_now(views, len(head) + stream)
        return nbytes

    def _send_now(self, views, nbytes=None):
        self._out.extend(views)
        self._queued += sum(len(v) for v in views) if nbytes is None else nbytes
        if self.flush():
            return
        if self._queued > MAX_QUEUED_BYTES and not self.blocking:
            raise ConnectionLostError("the peer reads nothing: %d bytes are waiting for it"
                                      % self._queued)
        if self.blocking:
            self._wait_sent()
        elif self.on_blocked is not None:
            self.on_blocked(self)   # the owner flushes when the socket is writable again

    def flush(self):
        """Send what is queued, as far as the socket takes it; True when all is sent."""
        out = self._out
        while out:
            batch = [out[i] for i in range(min(len(out), MAX_IOV))]
            try:
                sent = self.sock.sendmsg(batch)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as e:
                raise ConnectionLostError(str(e)) from None
            self._queued -= sent
            while sent:
                first = out[0]
                n = len(first)
                if sent >= n:
                    out.popleft()
                    sent -= n
                else:
                    out[0] = memoryview(first)[sent:]
                    sent = 0
        return True

    def _wait_sent(self):
        deadline = time.monotonic() + self.send_timeout
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while not self.flush():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionLostError("the peer took no data for %.1f s" % self.send_timeout)
            poller.poll(max(1, int(left * 1000)))
