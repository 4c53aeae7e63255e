"""Wire protocol constants: one place a reader can take in at once.

A message is a ZeroMQ multipart message ``[header, *buffers]``. The header is a msgpack map::

    {"z": MAGIC, "v": VERSION, "k": kind, "id": request id, "m": method (requests),
     "b": body (plain data), "t": [[dtype, shape, n_frames], ...] (tensor metadata)}

followed by the tensors' raw bytes, each split into ``n_frames`` frames of at most ``FRAME_BYTES``.
"""

MAGIC = "zps"
VERSION = 1

# Message kinds.
REQUEST = 1      # expects a REPLY or an ERROR with the same id
REPLY = 2
ERROR = 3        # body: {"code": OpError code, "message": str, "op": op name or None}
ONEWAY = 4       # no reply expected
PING = 5         # liveness probe; answered with PONG
PONG = 6

KINDS = frozenset((REQUEST, REPLY, ERROR, ONEWAY, PING, PONG))

# Large tensors travel as several frames: the receiver reuses no buffer, so many 1 MB frames move
# 2.4-4x faster than one 64 MB frame (shared/tools/zmq_limits.py).
FRAME_BYTES = 1 << 20
# Below this size a frame is copied into the message; above it it is sent zero-copy.
ZERO_COPY_BYTES = 64 << 10

# Default limits: a peer cannot make a server allocate without bound.
MAX_HEADER_BYTES = 16 << 20
MAX_TENSOR_BYTES = 4 << 30
MAX_MESSAGE_BYTES = 8 << 30
MAX_TENSORS_PER_MESSAGE = 1 << 16
MAX_RANK = 32

# numpy dtypes allowed on the wire (never object arrays: strings travel in the header).
WIRE_DTYPES = frozenset(("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                         "uint8", "uint16", "uint32", "uint64", "bool"))
STRING_DTYPE = "string"

# Liveness.
HEARTBEAT_INTERVAL_S = 1.0      # ping a peer with requests in flight after this much silence
DEFAULT_PEER_TIMEOUT_S = 10.0   # a peer silent this long with requests in flight is unavailable
