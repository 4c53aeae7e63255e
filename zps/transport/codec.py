"""Encoding messages to frames and back: msgpack header + raw tensor frames, validated on receipt.

Nothing here unpickles: the header is msgpack of plain data, tensors are raw bytes described by
(dtype, shape) from a fixed set of numeric dtypes; string tensors travel in the header as bytes.

>>> import numpy as np
>>> frames = encode(protocol.REQUEST, 7, {"x": 1}, [np.arange(3.0)], method="run")
>>> msg = decode(frames)
>>> msg.kind, msg.id, msg.method, msg.body, msg.tensors[0].tolist()
(1, 7, 'run', {'x': 1}, [0.0, 1.0, 2.0])
"""

import msgpack
import numpy as np

from zps.transport import protocol


class ProtocolError(Exception):
    """A received message is malformed, truncated, oversized or of an unknown kind."""


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
    tensor that cannot travel (object array of non-strings, complex, structured...) and
    ValueError for a header larger than ``protocol.MAX_HEADER_BYTES``.
    """
    metas, frames = [], []
    strings = []
    for i, t in enumerate(tensors):
        arr = t if isinstance(t, np.ndarray) else np.asarray(t)
        if arr.dtype == object or arr.dtype.kind in ("S", "U"):
            metas.append([protocol.STRING_DTYPE, list(arr.shape), 0])
            strings.append([_as_bytes(i, s) for s in arr.reshape(-1).tolist()])
            continue
        if arr.dtype.name not in protocol.WIRE_DTYPES:
            raise TypeError("Cannot send tensor %d of dtype %s (allowed: %s)"
                            % (i, arr.dtype, ", ".join(sorted(protocol.WIRE_DTYPES))))
        if not arr.dtype.isnative:
            # The wire carries native (little-endian) bytes; '>f4' is also named "float32".
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        raw = memoryview(arr.reshape(-1)).cast("B") if arr.size else memoryview(b"")
        n = max(1, -(-raw.nbytes // protocol.FRAME_BYTES))
        for k in range(n):
            frames.append(raw[k * protocol.FRAME_BYTES:(k + 1) * protocol.FRAME_BYTES])
        metas.append([arr.dtype.name, list(arr.shape), n])
    header = {"z": protocol.MAGIC, "v": protocol.VERSION, "k": kind, "id": msg_id}
    if method is not None:
        header["m"] = method
    if body is not None:
        header["b"] = body
    if metas:
        header["t"] = metas
    if strings:
        header["s"] = strings
    packed = msgpack.packb(header, use_bin_type=True)
    if len(packed) > protocol.MAX_HEADER_BYTES:
        # A receiver would drop the connection (its socket refuses frames this large).
        raise ValueError("message header of %d bytes exceeds the limit of %d: send large string "
                         "tensors as uint8 tensors" % (len(packed), protocol.MAX_HEADER_BYTES))
    return [packed] + frames


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
    string keys (int keys would let a peer build hash-colliding dicts).
    """
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
    method = header.get("m")
    if method is not None and not isinstance(method, str):
        raise ProtocolError("method must be a string, got %r" % (method,))
    tensors, nbytes = _decode_tensors(header, frames, limits)
    return Message(kind, msg_id, method, header.get("b"), tensors, nbytes)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _decode_tensors(header, frames, limits):
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
    for i, meta in enumerate(metas):
        if not (isinstance(meta, list) and len(meta) == 3):
            raise ProtocolError("tensor %d: metadata must be [dtype, shape, n_frames]" % i)
        dtype, shape, n = meta
        shape = _check_shape(i, shape)
        if dtype == protocol.STRING_DTYPE:
            if not _is_int(n) or n != 0:
                raise ProtocolError("tensor %d: a string tensor travels in the header, "
                                    "not in %r frames" % (i, n))
            tensors.append(_decode_strings(i, next(string_iter, None), shape))
            continue
        if not isinstance(dtype, str) or dtype not in protocol.WIRE_DTYPES:
            raise ProtocolError("tensor %d: dtype %r is not allowed" % (i, dtype))
        if not _is_int(n) or n < 1 or pos + n > len(frames):
            raise ProtocolError("tensor %d: declares %r frames but the message has %d left"
                                % (i, n, len(frames) - pos))
        np_dtype = np.dtype(dtype)
        count = 1
        for d in shape:
            count *= d
        size = count * np_dtype.itemsize
        if size > limits.max_tensor_bytes:
            raise ProtocolError("tensor %d: %d bytes exceeds the limit of %d"
                                % (i, size, limits.max_tensor_bytes))
        total += size
        if total > limits.max_message_bytes:
            raise ProtocolError("message exceeds the limit of %d bytes" % limits.max_message_bytes)
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
        arr = np.empty(shape, dtype=np_dtype)
        view = arr.reshape(-1).view(np.uint8)
        offset = 0
        for p in parts:
            m = memoryview(p).cast("B")
            view[offset:offset + m.nbytes] = np.frombuffer(m, dtype=np.uint8)
            offset += m.nbytes
        tensors.append(arr)
    extra = sum(1 for _ in string_iter)
    if extra:
        raise ProtocolError("header carries %d more string lists than it has string tensors" % extra)
    if pos != len(frames):
        raise ProtocolError("message has %d frames, header describes %d" % (len(frames), pos))
    return tensors, total


def _check_shape(i, shape):
    if not isinstance(shape, list):
        raise ProtocolError("tensor %d: shape must be a list, got %r" % (i, shape))
    if len(shape) > protocol.MAX_RANK:
        raise ProtocolError("tensor %d: rank %d exceeds the maximum of %d"
                            % (i, len(shape), protocol.MAX_RANK))
    for d in shape:
        if not _is_int(d) or d < 0 or d > (1 << 40):
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
