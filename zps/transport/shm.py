"""Shared-memory rings beside direct connections whose two ends are processes of one machine.

Why: on a loopback TCP connection the sender's ``sendmsg`` does the whole network stack's work
for the receiver too (the copy into socket buffers, the receive side's TCP processing, the
receiver's wake-up), all on the sender's CPU: a 512 KB gradient cost a worker 90 us on a quiet
2-vCPU machine and ~600 us while its two ps processes competed for the CPUs (py-spy: 26-29% of
an embedding worker's time went to ``sendmsg``). Through a ring the sender copies the frame once
(a memcpy) and the socket carries 8 bytes; the receiver copies it out into its own buffer (or
straight into place).

How: each side of a direct connection may offer the ring it will write: a ``memfd`` of
``RING_BYTES`` (named in the connection's preamble / answer by pid, fd, size and a random token;
never a file in /dev/shm, so nothing outlives the processes), its size sealed. The reader opens
it through ``/proc/<pid>/fd/<fd>``: a peer on another machine, in another pid namespace or of
another user cannot, and the reader opens nothing but a sealed ring memfd holding the offer's
token; only then does it mark the ring *ready* in the ring itself. A writer uses its ring only
once it is ready, and only for frames of at least ``MIN_FRAME_BYTES`` that fit its free space;
anything else goes on the socket as before, in the same stream order. A frame in the ring is
sent as its length with ``IN_RING`` set and 8 bytes on the stream: its position (a byte count
that only grows; modulo the ring's capacity, where it starts). The reader copies it out and
publishes the position after it (``consumed``), which the writer reads to know what it may
overwrite; a frame never wraps, and once all is read the next one starts at the ring's start
again. Positions are checked (never behind what was read, never across the ring's end): a bad
one is a FramingError like any malformed frame.

Memory order: the writer's copy comes before the socket write that names the frame (a system
call); the reader's store of ``consumed`` comes after its copy's loads, an order x86 keeps for
the writer to see and weakly ordered CPUs (ARM) need not, where a writer could overwrite a frame
still being copied out. Python has no fence to put there, so rings are made on x86 only.

``ZPS_SHM_MB`` sets the ring size (default 16; 0: no rings).
"""

import fcntl
import mmap
import os
import platform
import stat
import struct

from zps.transport import codec


def ring_bytes_from_env(text=None):
    """Bytes of each ring from ``ZPS_SHM_MB`` (megabytes, default 16; 0: no rings)."""
    text = (os.environ.get("ZPS_SHM_MB", "") if text is None else text).strip()
    try:
        mb = float(text) if text else 16.0
    except ValueError:
        mb = -1.0
    if not 0 <= mb < 1 << 20:
        raise ValueError("ZPS_SHM_MB must be the megabytes of each shared-memory ring (0: no "
                         "rings), got %r" % text)
    return int(mb * (1 << 20))


RING_BYTES = ring_bytes_from_env()
MIN_FRAME_BYTES = 64 << 10   # smaller frames stay on the socket (the ring saves nothing there)
IN_RING = 1 << 63            # set in a frame's length: its bytes are in the ring
HEADER_BYTES = 4096          # token, then u64 consumed, u64 ready; the data start a page in
TOKEN_BYTES = 16
_CONSUMED, _READY = 0, 1     # the u64 words after the token
NAME = "zps-direct"
LINK = "/memfd:%s " % NAME   # what /proc/<pid>/fd/<fd> of such a ring links to
# A ring's size is sealed: no peer can shrink it under a reader's mapping (SIGBUS on a copy).
# None where there are no rings: not Linux, or not x86 (see the module doc's memory order).
SEALS = (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
         if hasattr(fcntl, "F_SEAL_SEAL") and hasattr(os, "memfd_create")
         and platform.machine().lower() in ("x86_64", "amd64", "i386", "i686") else None)
OFFER = struct.Struct("<IIQ16s")   # pid, fd, size, token: pid 0 offers no ring
NO_OFFER = OFFER.pack(0, 0, 0, bytes(TOKEN_BYTES))
POSITION = struct.Struct("<Q")


class RingError(Exception):
    """A ring position the writer could not have sent (the connection is closed)."""


class _Mapped:
    """A ring as this process maps it: its header words and its data."""

    def __init__(self, mapping, size):
        self._map = mapping
        self.size = size
        self.capacity = size - HEADER_BYTES
        self._words = memoryview(mapping)[TOKEN_BYTES:TOKEN_BYTES + 16].cast("Q")
        self._data = memoryview(mapping)[HEADER_BYTES:]
        self.frames = 0   # frames through the ring
        self.closed = False

    def close(self):
        if not self.closed:
            self.closed = True
            self._data.release()
            self._words.release()
            self._map.close()


class Ring(_Mapped):
    """The writing end: ``put(frame)`` copies a frame in and returns its position, or None
    (not ready, too small, no room: send it on the socket)."""

    def __init__(self, size=None):
        size = RING_BYTES if size is None else size
        if size <= HEADER_BYTES:
            raise ValueError("a ring needs more than %d bytes, got %d" % (HEADER_BYTES, size))
        self.fd = os.memfd_create(NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, SEALS)
            mapping = mmap.mmap(self.fd, size)
        except BaseException:
            os.close(self.fd)
            raise
        super().__init__(mapping, size)
        self.token = os.urandom(TOKEN_BYTES)
        mapping[:TOKEN_BYTES] = self.token
        self.produced = 0   # position after the last frame written
        self._floor = 0     # where the writer last started over: unread data lies after it

    @classmethod
    def make(cls):
        """A ring to offer (None where rings are off or cannot be made here)."""
        if RING_BYTES <= HEADER_BYTES or SEALS is None:
            return None
        try:
            return cls()
        except OSError:
            return None

    def offer(self):
        return OFFER.pack(os.getpid(), self.fd, self.size, self.token)

    @property
    def ready(self):
        return not self.closed and self._words[_READY] == 1

    def put(self, frame, n):
        """Copy ``frame`` (``n`` bytes: a byte buffer, or a codec.Pieces) in; its position, or
        None."""
        if n < MIN_FRAME_BYTES or n > self.capacity or self.closed or self._words[_READY] != 1:
            return None
        cap = self.capacity
        start = self.produced
        consumed = self._words[_CONSUMED]
        if consumed == start:
            # All read: start over at the ring's start, whose pages are mapped and in cache
            # (cycling through all of it page-faulted every 4 KB of it the first time round).
            start += -start % cap
            self._floor = start   # nothing unread lies before it
            off = 0
        else:
            off = start % cap
            if off + n > cap:   # frames never wrap: skip to the ring's start
                start += cap - off
                off = 0
            if start + n - max(consumed, self._floor) > cap:
                return None     # the reader is behind: the socket takes this one
        data = self._data
        if type(frame) is codec.Pieces:
            for p in frame:
                k = len(p)
                data[off:off + k] = p
                off += k
        else:
            data[off:off + n] = frame
        self.produced = start + n
        self.frames += 1
        return start

    def close(self):
        if not self.closed:
            super().close()
            os.close(self.fd)


class Reader(_Mapped):
    """The reading end of a peer's ring: ``take(position, n, into)``."""

    def __init__(self, mapping, size):
        super().__init__(mapping, size)
        self.consumed = 0
        self._words[_READY] = 1

    @classmethod
    def open(cls, offer):
        """The ring ``offer`` (OFFER bytes) names, opened and marked ready; None where it cannot
        be (no offer, another machine or pid namespace, another user, another token).

        The offer comes from the network: only a sealed memfd named as a ring is opened (never a
        file, a device or a pipe another process holds: the reader writes into what it maps)."""
        pid, fd, size, token = OFFER.unpack(offer)
        if pid == 0 or size <= HEADER_BYTES or RING_BYTES <= 0 or SEALS is None:
            return None
        path = "/proc/%d/fd/%d" % (pid, fd)
        try:
            if not os.readlink(path).startswith(LINK):
                return None
            f = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size \
                    or fcntl.fcntl(f, fcntl.F_GET_SEALS) != SEALS:
                return None
            mapping = mmap.mmap(f, size)
        except (OSError, ValueError):
            return None
        finally:
            os.close(f)
        if mapping[:TOKEN_BYTES] != token:
            mapping.close()
            return None
        return cls(mapping, size)

    def take(self, start, n, into=None):
        """The ``n`` bytes at ``start``, copied into ``into`` (a writable view of n bytes) or a
        new bytearray; RingError for a position the writer could not have sent."""
        cap = self.capacity
        off = start % cap
        if self.closed or start < self.consumed or off + n > cap:
            raise RingError("a frame of %d bytes at ring position %d (read up to %d of %d)"
                            % (n, start, self.consumed, cap))
        src = self._data[off:off + n]
        if into is None:
            into = bytearray(src)
        else:
            into[:] = src
        src.release()
        self.consumed = start + n
        self._words[_CONSUMED] = self.consumed
        self.frames += 1
        return into
