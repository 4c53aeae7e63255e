"""Wire protocol constants: one place a reader can take in at once.

A message is a ZeroMQ multipart message ``[header, *buffers]``. The header is a msgpack map::

    {"z": MAGIC, "v": VERSION, "k": kind, "id": request id, "m": method (requests),
     "b": body (plain data), "t": [[dtype, shape, n_frames], ...] (tensor metadata)}

followed by the tensors' raw bytes: a tensor of at most ``SINGLE_FRAME_BYTES`` in one frame, a
larger one in ``n_frames`` frames of at most ``FRAME_BYTES``.
Tensors smaller than ``ZERO_COPY_BYTES`` are *packed* several to a frame (up to ``FRAME_BYTES``):
their metadata says ``n_frames = -f``, ``f`` the index of that frame in the message (the frame
after the previous tensor's, or the same pack frame as the previous tensor), and each starts at
the first ``PACK_ALIGN`` multiple past the end of the one before it in that frame (the first at 0;
the frame ends with the last one's bytes).

A tensor larger than ``STREAM_MIN_BYTES`` is *streamed*: its metadata says ``n_frames = 0`` and
its bytes follow the message as CHUNK messages ``[{"z", "v", "k": CHUNK, "id": the message's id,
"i": tensor index, "o": byte offset}, *frames]`` of ``STREAM_CHUNK_BYTES`` each, in order, on the
same connection. The receiver copies each chunk into place as it arrives and delivers the message
when the last one has (zps.transport.codec.StreamAssembler).
"""

MAGIC = "zps"
VERSION = 2   # 2: small tensors packed several to a frame (a version 1 peer would refuse them)

# Message kinds.
REQUEST = 1      # expects a REPLY or an ERROR with the same id
REPLY = 2
ERROR = 3        # body: {"code": OpError code, "message": str, "op": op name or None}
ONEWAY = 4       # no reply expected
PING = 5         # liveness probe; answered with PONG
PONG = 6
CHUNK = 7        # part of a streamed tensor of the message with the same id (see above)

KINDS = frozenset((REQUEST, REPLY, ERROR, ONEWAY, PING, PONG, CHUNK))

# Large tensors travel as several frames: the receiver reuses no buffer, so many 1 MB frames move
# 2.4-4x faster than one 64 MB frame (shared/tools/zmq_limits.py).
FRAME_BYTES = 1 << 20
# A tensor up to this size travels as one frame all the same: the receiver's array is then a view
# of the frame, where frames of a split tensor are copied together. Worth ~10% of the mlp-async
# workload's CPU (weights of 1-2 MB each way every step). Larger tensors stream (see below); a
# buffer this small comes from glibc's heap once its mmap threshold has adapted (up to 32 MB), so
# it is not a fresh mapping to page-fault every time.
SINGLE_FRAME_BYTES = 4 << 20
# pyzmq copies a frame below this size into the message (its copy_threshold) and sends a larger
# one zero-copy. Tensors smaller than this are packed several to a frame: a frame costs ~10 us to
# send and receive whatever its size, so a message of 1,000 16 KB tensors took ~20 ms in frames
# and ~4 ms packed.
ZERO_COPY_BYTES = 64 << 10
PACK_ALIGN = 16   # packed tensors start at multiples of this (numpy's widest element: complex128)

# Tensors larger than STREAM_MIN_BYTES stream (see above): ZeroMQ delivers a multipart message only
# once all of it has arrived, so a receiver of one big message idles during the transfer and then
# copies the frames together; streamed chunks are copied into place while the next ones are in
# flight. A chunk is STREAM_CHUNK_BYTES in frames of FRAME_BYTES: 4 MB chunks cost the receiver
# less CPU per byte than 1 MB ones (a quarter of the wake-ups) and delay the end by one 4 MB copy.
STREAM_CHUNK_BYTES = 4 * FRAME_BYTES
STREAM_MIN_BYTES = STREAM_CHUNK_BYTES
# A partial message that receives nothing for this long is dropped (its sender died or stalled).
STREAM_STALL_S = 60.0

# Default limits: a peer cannot make a server allocate without bound.
MAX_HEADER_BYTES = 16 << 20
MAX_TENSOR_BYTES = 4 << 30
MAX_MESSAGE_BYTES = 8 << 30
MAX_TENSORS_PER_MESSAGE = 1 << 16
MAX_RANK = 32

# numpy dtypes allowed on the wire (never object arrays: strings travel in the header).
WIRE_DTYPES = frozenset(("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                         "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128"))
STRING_DTYPE = "string"

# Liveness.
HEARTBEAT_INTERVAL_S = 1.0      # ping a peer with requests in flight after this much silence
DEFAULT_PEER_TIMEOUT_S = 10.0   # a peer silent this long with requests in flight is unavailable
