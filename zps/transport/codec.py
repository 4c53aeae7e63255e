"""Encoding messages to frames and back: msgpack header + raw tensor frames, validated on receipt.

Nothing here unpickles: the header is msgpack of plain data, tensors are raw bytes described by
(dtype, shape) from a fixed set of numeric dtypes; string tensors travel in the header as bytes.

>>> import numpy as np
>>> frames = encode(protocol.REQUEST, 7, {"x": 1}, [np.arange(3.0)], method="run")
>>> msg = decode(frames)
>>> msg.kind, msg.id, msg.method, msg.body, msg.tensors[0].tolist()
(1, 7, 'run', {'x': 1}, [0.0, 1.0, 2.0])

Tensors larger than one frame can stream: :func:`encode_parts` gives the message's head and then
one CHUNK message per frame of each large tensor; a :class:`StreamAssembler` (one per socket)
copies the chunks into place as they arrive and returns the message with the last one.

>>> parts = encode_parts(protocol.ONEWAY, 8, None, [np.arange(1.2e6)], method="put")
>>> len(parts)                                        # head + 3 chunks of at most 4 MB
4
>>> assembler = StreamAssembler()
>>> [assembler.feed(p) for p in parts[:3]]
[None, None, None]
>>> float(assembler.feed(parts[3]).tensors[0][-1])
1199999.0
"""

import collections
import sys
import threading
import time

import msgpack
import numpy as np

from zps.transport import protocol


class ProtocolError(Exception):
    """A received message is malformed, truncated, oversized or of an unknown kind.

    When a chunk makes a :class:`StreamAssembler` drop a partial message, ``message_kind`` and
    ``message_id`` name that message (so a request can still be answered), else they are None.
    """

    message_kind = None
    message_id = None


class Limits:
    """Receive limits (bytes); a message past any of them is rejected before allocation."""

    __slots__ = ("max_header_bytes", "max_tensor_bytes", "max_message_bytes")

    def __init__(self, max_header_bytes=protocol.MAX_HEADER_BYTES,
                 max_tensor_bytes=protocol.MAX_TENSOR_BYTES,
                 max_message_bytes=protocol.MAX_MESSAGE_BYTES):
        self.max_header_bytes = int(max_header_bytes)
        self.max_tensor_bytes = int(max_tensor_bytes)
        self.max_message_bytes = int(max_message_bytes)


DEFAULT_LIMITS = Limits()


class Message:
    """A decoded message: kind, request id, method, plain-data body, tensors (numpy arrays)."""

    __slots__ = ("kind", "id", "method", "body", "tensors", "nbytes")

    def __init__(self, kind, msg_id, method, body, tensors, nbytes=0):
        self.kind = kind
        self.id = msg_id
        self.method = method
        self.body = body
        self.tensors = tensors
        self.nbytes = nbytes

    def __repr__(self):
        return "Message(kind=%s, id=%s, method=%r, %d tensors)" % (
            self.kind, self.id, self.method, len(self.tensors))


def encode(kind, msg_id, body=None, tensors=(), method=None):
    """Frames of one message: ``[header, *tensor frames]``.

    Buffers of C-contiguous native-endian arrays are not copied: the frames are views of the
    arrays, so an array must not be modified until the message has been sent. Body maps must
    have string keys (the receiver refuses others: see :func:`decode`). Raises TypeError for a
    tensor that cannot travel (object array of non-strings, datetime, structured...) and
    ValueError for a header larger than ``protocol.MAX_HEADER_BYTES``.
    """
    return _encode(kind, msg_id, body, tensors, method, None)


def encode_parts(kind, msg_id, body=None, tensors=(), method=None, gather=False):
    """The ZeroMQ messages (lists of frames) carrying one message, to send in order on one socket.

    As :func:`encode`, except that tensors larger than ``protocol.STREAM_CHUNK_BYTES`` stream:
    the first message is the head, then come CHUNK messages of one zero-copy frame each, to be
    reassembled by a :class:`StreamAssembler`. A message without large tensors is one message.
    ``gather``: a frame of packed small tensors is left as its :class:`Pieces` (not copied: a
    direct connection sends them with one ``sendmsg``; ``joined`` makes them one for ZeroMQ).
    """
    streamed = []
    parts = [_encode(kind, msg_id, body, tensors, method, streamed, gather)]
    chunk, frame = protocol.STREAM_CHUNK_BYTES, protocol.FRAME_BYTES
    for i, raw in streamed:
        for offset in range(0, raw.nbytes, chunk):
            head = msgpack.packb({"z": protocol.MAGIC, "v": protocol.VERSION, "k": protocol.CHUNK,
                                  "id": msg_id, "i": i, "o": offset})
            end = min(offset + chunk, raw.nbytes)
            parts.append([head] + [raw[k:min(k + frame, end)] for k in range(offset, end, frame)])
    return parts


# Native wire dtypes by dtype object: `dtype.name` costs ~2 µs, this lookup ~0.05 µs (per tensor).
_WIRE_NAMES = {np.dtype(name): name for name in protocol.WIRE_DTYPES}
_WIRE_DTYPES = {name: np.dtype(name) for name in protocol.WIRE_DTYPES}   # and back


def _encode(kind, msg_id, body, tensors, method, streamed, gather=False):
    # ``streamed``: None, or a list to which (index, byte view) of each tensor to stream is added.
    metas, frames = [], []
    strings = []
    pack, pack_end = None, 0   # the small tensors of the pack frame being filled, its length
    zero_copy, frame_max, align = protocol.ZERO_COPY_BYTES, protocol.FRAME_BYTES, \
        protocol.PACK_ALIGN
    for i, t in enumerate(tensors):
        arr = t if isinstance(t, np.ndarray) else np.asarray(t)
        name = _WIRE_NAMES.get(arr.dtype)
        if name is None:
            if arr.dtype == object or arr.dtype.kind in ("S", "U"):
                metas.append([protocol.STRING_DTYPE, list(arr.shape), 0])
                strings.append([_as_bytes(i, s) for s in arr.reshape(-1).tolist()])
                continue
            if arr.dtype.name not in protocol.WIRE_DTYPES:
                raise TypeError("Cannot send tensor %d of dtype %s (allowed: %s)"
                                % (i, arr.dtype, ", ".join(sorted(protocol.WIRE_DTYPES))))
            # The wire carries native (little-endian) bytes; '>f4' is also named "float32".
            arr = arr.astype(arr.dtype.newbyteorder("="))
            name = arr.dtype.name
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        raw = arr.data.cast("B") if arr.size else memoryview(b"")
        nbytes = raw.nbytes
        if streamed is not None and nbytes > protocol.STREAM_MIN_BYTES:
            metas.append([name, list(arr.shape), 0])
            streamed.append((i, raw))
            continue
        if nbytes < zero_copy:
            # Packed with the message's other small tensors: one frame costs ~10 us to send and
            # receive whatever its size, and ZeroMQ would copy a frame this small anyway.
            start = -(-pack_end // align) * align
            end = start + nbytes
            if pack is None or end > frame_max:
                pack, end = [], nbytes
                frames.append(pack)
            elif start > pack_end:
                pack.append(_PADS[start - pack_end])   # zeros up to the aligned start
            pack.append(raw)
            pack_end = end
            metas.append([name, list(arr.shape), -len(frames)])
            continue
        if nbytes <= protocol.SINGLE_FRAME_BYTES:
            n = 1
            frames.append(raw)
        else:
            n = -(-nbytes // frame_max)
            for k in range(n):
                frames.append(raw[k * frame_max:(k + 1) * frame_max])
        metas.append([name, list(arr.shape), n])
        pack = None
    header = {"z": protocol.MAGIC, "v": protocol.VERSION, "k": kind, "id": msg_id}
    if method is not None:
        header["m"] = method
    if body is not None:
        header["b"] = body
    if metas:
        header["t"] = metas
    if strings:
        header["s"] = strings
    head = msgpack.packb(header, use_bin_type=True)
    if len(head) > protocol.MAX_HEADER_BYTES:
        # A receiver would drop the connection (its socket refuses frames this large).
        raise ValueError("message header of %d bytes exceeds the limit of %d: send large string "
                         "tensors as uint8 tensors" % (len(head), protocol.MAX_HEADER_BYTES))
    finish = _gathered if gather else _pack_frame
    return [head] + [finish(f) if type(f) is list else f for f in frames]


_PADS = [b"\0" * k for k in range(protocol.PACK_ALIGN)]   # zero padding before a packed tensor


def _pack_frame(pieces):
    """One frame of the byte buffers ``pieces`` (packed tensors and the padding between them).

    One ``bytes.join`` copies them in C: for 64 tensors of 16 KB 69 -> 44 us, of 4 bytes
    15 -> 1 us, against a slice assignment per tensor into a preallocated frame."""
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _gathered(pieces):
    return pieces[0] if len(pieces) == 1 else Pieces(pieces)


class Pieces(list):
    """One frame given as the byte buffers it is made of (packed tensors and the padding
    between them): sent as they are where the transport gathers (``direct.Conn.write``), joined
    where it needs one buffer (``joined``)."""

    __slots__ = ()

    @property
    def nbytes(self):
        return sum(len(p) for p in self)


def joined(f):
    """A frame to send as one buffer: ``f`` itself, or its :class:`Pieces` joined."""
    return b"".join(f) if type(f) is Pieces else f


def frame_nbytes(f):
    return f.nbytes if type(f) is Pieces else memoryview(f).nbytes


def _as_bytes(i, s):
    if isinstance(s, str):
        return s.encode()
    if isinstance(s, (bytes, bytearray, memoryview)):
        return bytes(s)
    raise TypeError("Cannot send tensor %d: a string tensor holds %s %r, not str or bytes"
                    % (i, type(s).__name__, s))


def _frame_bytes(f):
    return f.buffer if hasattr(f, "buffer") else f


def decode(frames, limits=DEFAULT_LIMITS):
    """Parse and validate received frames (bytes or zmq.Frame); raises ProtocolError.

    Nothing is allocated for tensors before their declared sizes pass ``limits``. A tensor that
    arrived in one frame is a read-only view of that frame (no copy); header maps must have
    string keys (int keys would let a peer build hash-colliding dicts). Streamed messages (heads
    and chunks) need a :class:`StreamAssembler` and are refused here.
    """
    header = _parse_header(frames, limits)
    if header["k"] == protocol.CHUNK:
        raise ProtocolError("a chunk of a streamed message needs a StreamAssembler")
    return _decode_message(header, frames, limits, None)


def _parse_header(frames, limits):
    if not frames:
        raise ProtocolError("empty message")
    head = _frame_bytes(frames[0])
    if len(head) > limits.max_header_bytes:
        raise ProtocolError("header of %d bytes exceeds the limit of %d"
                            % (len(head), limits.max_header_bytes))
    try:
        header = msgpack.unpackb(head, raw=False, strict_map_key=True)
    except Exception as e:  # noqa: BLE001 - any msgpack failure is a malformed message
        raise ProtocolError("header is not valid msgpack: %s" % e) from None
    if not isinstance(header, dict):
        raise ProtocolError("header is a %s, not a map" % type(header).__name__)
    if header.get("z") != protocol.MAGIC:
        raise ProtocolError("bad magic %r (not a zps message)" % (header.get("z"),))
    version = header.get("v")
    if not _is_int(version) or version != protocol.VERSION:
        raise ProtocolError("unsupported protocol version %r (this side speaks %d)"
                            % (version, protocol.VERSION))
    kind = header.get("k")
    if not _is_int(kind) or kind not in protocol.KINDS:
        raise ProtocolError("unknown message kind %r" % (kind,))
    msg_id = header.get("id")
    if not _is_int(msg_id):
        raise ProtocolError("message id must be an integer, got %r" % (msg_id,))
    return header


def _decode_message(header, frames, limits, streams):
    method = header.get("m")
    if method is not None and not isinstance(method, str):
        raise ProtocolError("method must be a string, got %r" % (method,))
    tensors, nbytes = _decode_tensors(header, frames, limits, streams)
    return Message(header["k"], header["id"], method, header.get("b"), tensors, nbytes)


def _is_int(x):
    return type(x) is int   # msgpack decodes integers to int exactly (never bool, a subclass)


def _decode_tensors(header, frames, limits, streams):
    # ``streams``: None (streamed tensors refused), or a list to which (index, array) of each
    # streamed tensor is added; the array is allocated, to be filled by its chunks.
    metas = header.get("t", [])
    strings = header.get("s", [])
    if not isinstance(metas, list) or not isinstance(strings, list):
        raise ProtocolError("tensor metadata must be lists")
    if len(metas) > protocol.MAX_TENSORS_PER_MESSAGE:
        raise ProtocolError("too many tensors (%d)" % len(metas))
    tensors = []
    pos = 1
    total = 0
    string_iter = iter(strings)
    pack, pack_end = None, 0   # the pack frame being read (see _encode), bytes of it used
    max_tensor_bytes, max_message_bytes = limits.max_tensor_bytes, limits.max_message_bytes
    align = protocol.PACK_ALIGN
    for i, meta in enumerate(metas):
        if type(meta) is not list or len(meta) != 3:
            raise ProtocolError("tensor %d: metadata must be [dtype, shape, n_frames]" % i)
        dtype, shape, n = meta
        shape = _check_shape(i, shape)
        if dtype == protocol.STRING_DTYPE:
            if not _is_int(n) or n != 0:
                raise ProtocolError("tensor %d: a string tensor travels in the header, "
                                    "not in %r frames" % (i, n))
            tensors.append(_decode_strings(i, next(string_iter, None), shape))
            continue
        np_dtype = _WIRE_DTYPES.get(dtype) if type(dtype) is str else None
        if np_dtype is None:
            raise ProtocolError("tensor %d: dtype %r is not allowed" % (i, dtype))
        if type(n) is not int:
            raise ProtocolError("tensor %d: frame count %r is not an integer" % (i, n))
        stream = n == 0
        if stream and streams is None:
            raise ProtocolError("tensor %d is streamed: the message needs a StreamAssembler" % i)
        if n < 0:
            # Packed: -n is the index of its pack frame, the current one or the next one.
            if -n == pos:
                if pos >= len(frames):
                    raise ProtocolError("tensor %d: packed in frame %d of a message of %d frames"
                                        % (i, pos, len(frames)))
                _check_pack_end(pack, pack_end)
                pack, pack_end = memoryview(_frame_bytes(frames[pos])).cast("B"), 0
                pos += 1
            elif pack is None or -n != pos - 1:
                raise ProtocolError("tensor %d: packed in frame %d, but only frame %d can come "
                                    "next" % (i, -n, pos))
        elif not stream and pos + n > len(frames):
            raise ProtocolError("tensor %d: declares %r frames but the message has %d left"
                                % (i, n, len(frames) - pos))
        count = 1
        for d in shape:
            count *= d
        size = count * np_dtype.itemsize
        if size > max_tensor_bytes:
            raise ProtocolError("tensor %d: %d bytes exceeds the limit of %d"
                                % (i, size, max_tensor_bytes))
        total += size
        if total > max_message_bytes:
            raise ProtocolError("message exceeds the limit of %d bytes" % max_message_bytes)
        if n < 0:
            offset = -(-pack_end // align) * align
            if offset + size > pack.nbytes:
                raise ProtocolError("tensor %d: %s%s needs %d bytes at offset %d of its pack "
                                    "frame of %d" % (i, dtype, list(shape), size, offset,
                                                     pack.nbytes))
            # (The constructor: half the cost of np.frombuffer(...).reshape(shape).)
            tensors.append(np.ndarray(shape, np_dtype, pack, offset))
            pack_end = offset + size
            continue
        if stream:
            if size == 0:
                raise ProtocolError("tensor %d: an empty tensor cannot be streamed" % i)
            arr = _buffers.empty(shape, np_dtype)   # filled by the chunks that follow
            streams.append((i, arr))
            tensors.append(arr)
            continue
        _check_pack_end(pack, pack_end)
        pack = None   # a later small tensor starts a new pack frame
        parts = [_frame_bytes(f) for f in frames[pos:pos + n]]
        pos += n
        got = sum(memoryview(p).nbytes for p in parts)
        if got != size:
            raise ProtocolError("tensor %d: %s%s needs %d bytes, frames hold %d"
                                % (i, dtype, list(shape), size, got))
        if n == 1:
            tensors.append(np.frombuffer(parts[0], dtype=np_dtype, count=count).reshape(shape))
            continue
        # Assembled in an array of the final shape, so it owns its data (no view to detach).
        # memoryview slice assignment is a plain memcpy (numpy slicing costs more per frame).
        arr = _buffers.empty(shape, np_dtype)
        view = byte_view(arr)
        offset = 0
        for p in parts:
            m = memoryview(p).cast("B")
            view[offset:offset + m.nbytes] = m
            offset += m.nbytes
        tensors.append(arr)
    _check_pack_end(pack, pack_end)
    extra = sum(1 for _ in string_iter)
    if extra:
        raise ProtocolError("header carries %d more string lists than it has string tensors" % extra)
    if pos != len(frames):
        raise ProtocolError("message has %d frames, header describes %d" % (len(frames), pos))
    return tensors, total


class BufferPool:
    """Hands out the arrays of large received tensors again once nothing references them.

    glibc serves an allocation this large with a fresh mapping on the transport's I/O thread (its
    arena cannot hold it) and unmaps it when freed, so every received 64 MB tensor page-faulted
    its memory in again, a third or more of a 64 MB transfer's time on the 2-core reference
    machine. The pool keeps the arrays it made (up to ``max_bytes``, least recently used first
    out) and gives one out again, for a tensor of the same shape and dtype, when the pool's is
    the only reference left to it: no view, memoryview or user holds it any more. The arrays
    own their memory, so sessions hand them out without a defensive copy.
    """

    def __init__(self, min_bytes=1 << 20, max_bytes=256 << 20):
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self._arrays = collections.OrderedDict()   # (shape, dtype) -> [arrays], oldest key first
        self._bytes = 0
        self._lock = threading.Lock()

    def empty(self, shape, dtype):
        """An uninitialized C-contiguous writable array, like ``np.empty``."""
        shape = tuple(shape)
        nbytes = dtype.itemsize
        for d in shape:
            nbytes *= d
        if nbytes < self.min_bytes:
            return np.empty(shape, dtype)
        key = (shape, dtype.str)
        with self._lock:
            arrays = self._arrays.get(key)
            if arrays is not None:
                self._arrays.move_to_end(key)
                for arr in arrays:
                    # References: the list, ``arr`` and getrefcount's argument; nobody else's.
                    if sys.getrefcount(arr) == 3:
                        arr.flags.writeable = True
                        return arr
            arr = np.empty(shape, dtype)
            if self._make_room(nbytes):
                self._arrays.setdefault(key, []).append(arr)
                self._bytes += nbytes
            return arr

    def _make_room(self, nbytes):
        # Called with the lock held: drop unused arrays, least recently used first.
        if nbytes > self.max_bytes:
            return False
        for key in list(self._arrays):
            if self._bytes + nbytes <= self.max_bytes:
                break
            arrays = self._arrays[key]
            for arr in list(arrays):
                # References: the list, its copy, ``arr`` and getrefcount's argument.
                if sys.getrefcount(arr) == 4 and self._bytes + nbytes > self.max_bytes:
                    arrays.remove(arr)
                    self._bytes -= arr.nbytes
            if not arrays:
                del self._arrays[key]
        return self._bytes + nbytes <= self.max_bytes

    def pooled_bytes(self):
        """Bytes of the arrays the pool holds (in use or not)."""
        return self._bytes


_buffers = BufferPool()


def byte_view(arr):
    """A flat byte memoryview of a C-contiguous array (slice assignment into it is a memcpy)."""
    return memoryview(arr.reshape(-1).view(np.uint8))


class Incoming:
    """A streamed tensor still arriving, in order, chunk by chunk.

    Given to consumers that can work on the part that has arrived (an in-place add applying a
    large push while it streams in); the others wait for all of it (``when_complete``, ``wait``).
    A consumer that ``claim``s it takes the chunks that arrive from then on straight from the
    received frames, which are not copied into ``array`` (``ranges``). If the stream stops
    (malformed chunk, stalled sender) or a consumer gives up (``fail``), waiters get the error.
    """

    zps_streamed = True

    def __init__(self, array):
        self.array = array
        self.shape, self.dtype, self.size, self.nbytes = array.shape, array.dtype, array.size, \
            array.nbytes
        self._received = 0      # bytes arrived
        self._copied = 0        # bytes of them copied into ``array`` (all, unless claimed)
        self._claimed = False
        self._parts = collections.deque()   # (first element, frame data) arrived since the claim
        self._error = None
        self._cond = threading.Condition()
        self._callbacks = []

    def _take(self, offset, datas, view):
        """The assembler: byte buffers ``datas`` continue the tensor at byte ``offset``."""
        with self._cond:
            if self._claimed:
                itemsize = self.dtype.itemsize
                for d in datas:
                    self._parts.append((offset // itemsize, np.frombuffer(d, self.dtype)))
                    offset += d.nbytes
            else:
                for d in datas:
                    if d.obj is not view.obj:   # else received in place (placement)
                        view[offset:offset + d.nbytes] = d
                    offset += d.nbytes
                self._copied = offset
            self._received = offset
            self._cond.notify_all()
            callbacks = []
            if offset >= self.nbytes:
                callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self.array)

    def fail(self, error):
        """End the stream with ``error`` (no-op once complete or failed)."""
        with self._cond:
            if self._error is not None or self._received >= self.nbytes:
                return
            self._error = error
            self._cond.notify_all()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(error)

    def when_complete(self, callback):
        """Call ``callback(array)`` once all of it arrived, or ``callback(error)``; at once if
        that already happened. Not for a claimed tensor (its array is not filled)."""
        with self._cond:
            if self._claimed:
                raise RuntimeError("a claimed Incoming is read through ranges()")
            if self._error is None and self._received < self.nbytes:
                self._callbacks.append(callback)
                return
            result = self._error if self._error is not None else self.array
        callback(result)

    def wait(self):
        """Block until all of it has arrived; returns the array (raises the stream's error)."""
        done = threading.Event()
        result = []
        self.when_complete(lambda r: (result.append(r), done.set()))
        done.wait()
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0]

    def claim(self):
        """Read it through ``ranges`` only: chunks from now on are not copied into ``array``."""
        with self._cond:
            self._claimed = True

    def ranges(self):
        """Yield ``(start, stop, values)`` for consecutive element ranges of the flattened tensor
        as they arrive, until all of it has (``values``: a flat read-only array of those
        elements); raises the stream's error if it stops first."""
        itemsize = self.dtype.itemsize
        flat = self.array.reshape(-1)
        done = 0
        while done < self.size:
            with self._cond:
                while self._error is None and self._copied // itemsize <= done \
                        and not self._parts:
                    self._cond.wait()
                if self._error is not None:
                    raise self._error
                if self._copied // itemsize > done:
                    start, stop, values = done, self._copied // itemsize, None
                else:
                    start, values = self._parts.popleft()
                    stop = start + values.size
            yield start, stop, flat[start:stop] if values is None else values
            done = stop


class _Partial:
    """A streamed message whose chunks are still arriving."""

    __slots__ = ("msg", "pending", "nbytes", "last", "incoming")

    def __init__(self, msg, streams):
        self.msg = msg
        # tensor index -> [byte view of its destination, bytes received]
        self.pending = {i: [byte_view(arr), 0] for i, arr in streams}
        self.nbytes = sum(v[0].nbytes for v in self.pending.values())
        self.last = time.monotonic()
        self.incoming = None   # tensor index -> Incoming, when the message was delivered early


class StreamAssembler:
    """Reassembles the streamed messages arriving on one socket (use from one thread).

    ``feed(frames, source)`` takes every received message (``source``: the sender's identity on
    a ROUTER) and returns a complete :class:`Message`, or None while a streamed one is still
    arriving. Chunks must come in order and fit their tensor exactly; a chunk that does not drops
    its message (ProtocolError naming it). At most ``limits.max_message_bytes`` of partial
    messages are held per socket, and :meth:`expire` drops those silent for ``stall_timeout``,
    so a peer that starts messages and never finishes them cannot make this side hoard memory.
    Late chunks of a dropped message are ignored.
    """

    def __init__(self, limits=DEFAULT_LIMITS, stall_timeout=protocol.STREAM_STALL_S, early=None):
        """``early(message)``: whether a streamed message is returned at once, its streamed
        tensors as :class:`Incoming` that fill as their chunks arrive (its last chunk then
        returns None), instead of with its last chunk."""
        self.limits = limits
        self.stall_timeout = float(stall_timeout)
        self.early = early
        self._partials = {}   # (source, message id) -> _Partial
        self._bytes = 0
        self.dropped = 0      # partial messages dropped (malformed chunk, stalled, replaced)

    def feed(self, frames, source=b""):
        header = _parse_header(frames, self.limits)
        if header["k"] == protocol.CHUNK:
            return self._chunk(header, frames, source)
        streams = []
        msg = _decode_message(header, frames, self.limits, streams)
        if not streams:
            return msg
        key = (source, msg.id)
        if key in self._partials:
            self._drop(key)
            raise ProtocolError("message %d started again while its tensors were still streaming"
                                % msg.id)
        partial = _Partial(msg, streams)
        if self._bytes + partial.nbytes > self.limits.max_message_bytes:
            self.dropped += 1
            raise _dropped(msg.kind, msg.id, "streamed message %d of %d bytes would exceed the %d "
                           "bytes allowed in flight" % (msg.id, partial.nbytes,
                                                        self.limits.max_message_bytes))
        self._partials[key] = partial
        self._bytes += partial.nbytes
        if self.early is None or not self.early(msg):
            return None
        partial.incoming = {}
        for i, arr in streams:
            partial.incoming[i] = msg.tensors[i] = Incoming(arr)
        return msg

    def _chunk(self, header, frames, source):
        key = (source, header["id"])
        partial = self._partials.get(key)
        if partial is None:
            return None   # its message was dropped (malformed, stalled): the rest is dropped too
        index, offset = header.get("i"), header.get("o")
        entry = partial.pending.get(index) if _is_int(index) else None
        if entry is None or len(frames) < 2 or not _is_int(offset):
            self._drop(key)
            raise _dropped(partial.msg.kind, partial.msg.id, "chunk (tensor %r, offset %r, %d frames) "
                           "of message %d matches no streamed tensor"
                           % (index, offset, len(frames), partial.msg.id))
        view, received = entry
        data = [memoryview(_frame_bytes(f)).cast("B") for f in frames[1:]]
        n = sum(d.nbytes for d in data)
        if offset != received or n == 0 or offset + n > view.nbytes:
            self._drop(key)
            raise _dropped(partial.msg.kind, partial.msg.id, "chunk of %d bytes at offset %d does "
                           "not continue tensor %d of message %d (%d of %d bytes received)"
                           % (n, offset, index, partial.msg.id, received, view.nbytes))
        if partial.incoming is not None:
            partial.incoming[index]._take(offset, data, view)
        else:
            for d in data:
                if d.obj is not view.obj:   # else received in place (placement)
                    view[offset:offset + d.nbytes] = d
                offset += d.nbytes
        partial.last = time.monotonic()
        entry[1] = received = received + n
        if received < view.nbytes:
            return None
        del partial.pending[index]
        if partial.pending:
            return None
        del self._partials[key]
        self._bytes -= partial.nbytes
        return partial.msg if partial.incoming is None else None   # else delivered at its head

    def placement(self, head, sizes, source=b""):
        """Where to receive the data frames of a chunk whose header frame ``head`` has arrived
        and whose data frames will hold ``sizes`` bytes: writable byte views of its tensor's
        destination, one per frame, when the chunk continues a streamed tensor in flight exactly
        (as ``feed`` will check); else None (the frames go to buffers of their own). A
        transport that reads frames itself (zps.transport.direct) receives them in place, and
        ``feed`` then copies nothing: one copy of every streamed byte fewer."""
        try:
            header = _parse_header([head], self.limits)
        except ProtocolError:
            return None
        if header["k"] != protocol.CHUNK:
            return None
        partial = self._partials.get((source, header["id"]))
        index, offset = header.get("i"), header.get("o")
        entry = partial.pending.get(index) if partial is not None and _is_int(index) else None
        if entry is None or not sizes or not _is_int(offset) or offset != entry[1]:
            return None
        view = entry[0]
        if not all(type(n) is int and n > 0 for n in sizes) or offset + sum(sizes) > view.nbytes:
            return None
        views = []
        for n in sizes:
            views.append(view[offset:offset + n])
            offset += n
        return views

    def expire(self, now=None):
        """Drop the partial messages silent for ``stall_timeout``; returns their Messages."""
        if not self._partials:
            return []
        now = time.monotonic() if now is None else now
        stalled = [k for k, p in self._partials.items() if now - p.last > self.stall_timeout]
        return [self._drop(k, "dropped: it stalled for %.0f s" % self.stall_timeout)
                for k in stalled]

    def in_flight(self):
        """``(messages, bytes)`` still streaming."""
        return len(self._partials), self._bytes

    def _drop(self, key, reason="dropped"):
        partial = self._partials.pop(key)
        self._bytes -= partial.nbytes
        self.dropped += 1
        for incoming in (partial.incoming or {}).values():
            incoming.fail(ProtocolError("streamed message %d was %s before all its tensors "
                                        "arrived" % (partial.msg.id, reason)))
        return partial.msg


def _dropped(kind, msg_id, text):
    err = ProtocolError(text)
    err.message_kind, err.message_id = kind, msg_id
    return err


def _check_pack_end(pack, used):
    if pack is not None and used != pack.nbytes:
        raise ProtocolError("a pack frame of %d bytes holds %d bytes of tensors" % (pack.nbytes, used))


def _check_shape(i, shape):
    if type(shape) is not list:
        raise ProtocolError("tensor %d: shape must be a list, got %r" % (i, shape))
    if len(shape) > protocol.MAX_RANK:
        raise ProtocolError("tensor %d: rank %d exceeds the maximum of %d"
                            % (i, len(shape), protocol.MAX_RANK))
    for d in shape:
        if type(d) is not int or d < 0 or d > (1 << 40):
            raise ProtocolError("tensor %d: invalid dimension %r in shape %r" % (i, d, shape))
    return tuple(shape)


def _decode_strings(i, values, shape):
    count = 1
    for d in shape:
        count *= d
    if not isinstance(values, list) or len(values) != count:
        raise ProtocolError("tensor %d: string tensor of shape %s needs %d values"
                            % (i, list(shape), count))
    if not all(isinstance(v, bytes) for v in values):
        raise ProtocolError("tensor %d: string values must be bytes" % i)
    arr = np.empty(count, dtype=object)
    arr[:] = values
    return arr.reshape(shape)
