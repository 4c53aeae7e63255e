"""codec: every wire dtype round-trips exactly; every malformed message is a ProtocolError."""

import msgpack
import numpy as np
import pytest

from zps.transport import codec, protocol
from zps.transport.codec import Limits, ProtocolError, decode, encode

WIRE_DTYPES = sorted(protocol.WIRE_DTYPES)


def roundtrip(tensors, body=None, kind=protocol.REQUEST, method="m", limits=codec.DEFAULT_LIMITS):
    # bytes(), as the network delivers: no frame may alias the sender's arrays.
    frames = [bytes(f) for f in encode(kind, 42, body, tensors, method=method)]
    return decode(frames, limits)


def header(**fields):
    h = {"z": protocol.MAGIC, "v": protocol.VERSION, "k": protocol.REQUEST, "id": 1}
    h.update(fields)
    return {k: v for k, v in h.items() if v is not None}


def raw(h, *frames):
    return [msgpack.packb(h, use_bin_type=True)] + list(frames)


def rejected(frames, match, limits=codec.DEFAULT_LIMITS):
    with pytest.raises(ProtocolError, match=match):
        decode(frames, limits)


# -- round trips ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIRE_DTYPES)
def test_roundtrip_every_wire_dtype(dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        x = rng.random((3, 4)) > 0.5
    elif dtype.startswith("float"):
        x = rng.standard_normal((3, 4)).astype(dtype)
        x[0, 0], x[0, 1] = np.inf, np.nan
    elif dtype.startswith("complex"):
        x = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
        x[0, 0], x[0, 1] = complex(np.inf, -1.5), complex(2.5, np.nan)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(3, 4), dtype=dtype, endpoint=True)
        x[0, 0], x[0, 1] = info.min, info.max
    msg = roundtrip([x, x[0, 2], x[:0]])
    y, scalar, empty = msg.tensors
    assert y.dtype == x.dtype and y.shape == (3, 4)
    np.testing.assert_array_equal(y, x)   # nan == nan here, bit exact for ints and bools
    assert y.tobytes() == x.tobytes()
    assert scalar.shape == () and scalar.dtype == x.dtype and scalar.tobytes() == x[0, 2].tobytes()
    assert empty.shape == (0, 4) and empty.dtype == x.dtype
    assert msg.nbytes == x.nbytes + x.itemsize


def test_message_fields_and_nested_body():
    body = {"a": [1, 2.5, None, True, "s", b"b"], "nested": {"deep": [{"x": -1}, []], "e": {}}}
    msg = roundtrip([], body=body, kind=protocol.ONEWAY, method="run")
    assert (msg.kind, msg.id, msg.method, msg.body, msg.tensors) == (protocol.ONEWAY, 42, "run", body, [])
    msg = decode(encode(protocol.REPLY, 0))
    assert (msg.kind, msg.id, msg.method, msg.body, msg.tensors) == (protocol.REPLY, 0, None, None, [])


@pytest.mark.parametrize("shape", [(), (0,), (5, 0, 3), (1,), (2, 1, 1, 3)])
def test_roundtrip_shapes(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    (y,) = roundtrip([x]).tensors
    assert y.shape == shape
    np.testing.assert_array_equal(y, x)


def test_non_contiguous_and_non_native_input():
    base = np.arange(60, dtype=np.float64).reshape(6, 10)
    cases = [base[::2, 1::3], base.T, np.asfortranarray(base), base[:, ::-1],
             base.astype(">f8"), base.astype(">i4").T, np.float64(3.5), [[1, 2], [3, 4]], 7]
    msg = roundtrip(cases)
    for sent, got in zip(cases, msg.tensors):
        sent = np.asarray(sent)
        assert got.shape == sent.shape and got.dtype == sent.dtype.newbyteorder("=")
        np.testing.assert_array_equal(got, sent)


@pytest.mark.parametrize("values, shape", [
    ([b"a", b"", b"\x00\xff"], (3,)),
    (["h\u00e9llo", "w"], (2, 1)),
    ([], (0, 2)),
    ([b"only"], ()),
    ([b"x%d" % i for i in range(24)], (2, 3, 4)),
])
def test_string_tensors(values, shape):
    as_object = np.empty(len(values), dtype=object)
    as_object[:] = values
    sent = [as_object.reshape(shape), np.array(values).reshape(shape) if values else as_object.reshape(shape)]
    msg = roundtrip(sent + [np.arange(3)])
    expected = [v.encode() if isinstance(v, str) else v for v in values]
    for got in msg.tensors[:2]:
        assert got.dtype == object and got.shape == shape
        assert got.reshape(-1).tolist() == expected
    np.testing.assert_array_equal(msg.tensors[2], np.arange(3))


def test_string_tensor_of_non_strings_is_refused_at_encode():
    with pytest.raises(TypeError, match="tensor 1.*int 3"):
        encode(protocol.REQUEST, 1, None, [np.zeros(2), np.array([b"a", 3], dtype=object)])


@pytest.mark.parametrize("dtype", ["complex256", "datetime64[s]", "V8"])
def test_encode_refuses_non_wire_dtypes(dtype):
    with pytest.raises(TypeError, match="dtype"):
        encode(protocol.REQUEST, 1, None, [np.zeros(2, dtype=dtype)])


def test_encode_refuses_header_past_the_limit(monkeypatch):
    monkeypatch.setattr(protocol, "MAX_HEADER_BYTES", 1000)
    encode(protocol.REQUEST, 1, {"s": "x" * 900})
    with pytest.raises(ValueError, match="header of .* exceeds"):
        encode(protocol.REQUEST, 1, None, [np.array([b"x" * 2000], dtype=object)])


def test_tensor_up_to_single_frame_bytes_is_one_frame_and_a_view_at_both_ends():
    x = np.arange(protocol.SINGLE_FRAME_BYTES // 8, dtype=np.float64)
    frames = encode(protocol.REQUEST, 1, None, [x], method="m")
    assert len(frames) == 2 and np.shares_memory(np.frombuffer(frames[1], np.uint8), x)
    received = [bytes(f) for f in frames]
    (y,) = decode(received).tensors
    np.testing.assert_array_equal(y, x)
    assert np.shares_memory(y, np.frombuffer(received[1], np.uint8))   # no copy on receipt


def test_multi_frame_tensor_is_split_and_not_copied():
    x = np.arange((protocol.SINGLE_FRAME_BYTES + 3 * protocol.FRAME_BYTES + 1000) // 8,
                  dtype=np.float64)
    frames = encode(protocol.REQUEST, 1, None, [x, np.ones(3, np.int8)], method="m")
    tensor_frames = frames[1:-1]
    assert len(tensor_frames) == protocol.SINGLE_FRAME_BYTES // protocol.FRAME_BYTES + 4
    assert all(f.nbytes <= protocol.FRAME_BYTES for f in tensor_frames)
    assert sum(f.nbytes for f in tensor_frames) == x.nbytes
    for f in tensor_frames:   # views of x, not copies
        assert f.obj is x or f.obj.base is x
        assert np.shares_memory(np.frombuffer(f, np.uint8), x)
    msg = decode([bytes(f) for f in frames])
    assert msg.tensors[0].shape == x.shape
    np.testing.assert_array_equal(msg.tensors[0], x)
    np.testing.assert_array_equal(msg.tensors[1], np.ones(3, np.int8))
    # A frame boundary that cuts an element is fine: the frames are concatenated bytes.
    y = np.arange(protocol.FRAME_BYTES // 4 + 3, dtype=np.float32)
    odd = encode(protocol.REQUEST, 1, None, [y])   # one frame, cut in three below
    head = msgpack.unpackb(odd[0])
    b = y.tobytes()
    cuts = [b[:7], b[7:protocol.FRAME_BYTES + 5], b[protocol.FRAME_BYTES + 5:]]
    head["t"][0][2] = 3
    (z,) = decode([msgpack.packb(head)] + cuts).tensors
    np.testing.assert_array_equal(z, y)


def test_single_frame_tensor_is_a_view_of_the_frame():
    frames = [bytes(f) for f in encode(protocol.REQUEST, 1, None, [np.arange(4.0)])]
    (t,) = decode(frames).tensors
    assert np.shares_memory(t, np.frombuffer(frames[1], np.uint8))


def test_several_tensors_per_message():
    xs = [np.arange(10, dtype=np.int32), np.ones((2, 2), bool), np.array(2.5, np.float16),
          np.array([b"s"], dtype=object), np.zeros((0,), np.uint64),
          np.arange(protocol.FRAME_BYTES // 2 + 1, dtype=np.int16)]
    msg = roundtrip(xs)
    assert len(msg.tensors) == len(xs)
    for x, y in zip(xs, msg.tensors):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert x.tolist() == y.tolist()


def test_gathered_pack_frames_are_the_pieces_of_the_joined_frames():
    # What a direct connection sends (a pack frame's pieces, gathered by sendmsg) is byte for
    # byte what ZeroMQ sends (the joined frame); no small tensor is copied at encode.
    xs = [np.arange(5, dtype=np.float32), np.array(3, np.int8), np.ones((3, 7)),
          np.zeros(protocol.ZERO_COPY_BYTES, np.uint8), np.array([1], np.int64),
          np.arange(3, dtype=np.int16)]
    joined, = codec.encode_parts(protocol.ONEWAY, 3, {"k": 1}, xs, method="m")
    gathered, = codec.encode_parts(protocol.ONEWAY, 3, {"k": 1}, xs, method="m", gather=True)
    assert len(joined) == len(gathered)
    pieces = [f for f in gathered if type(f) is codec.Pieces]
    assert len(pieces) == 2 and np.shares_memory(np.frombuffer(pieces[0][0], np.uint8), xs[0])
    for j, g in zip(joined, gathered):
        assert bytes(codec.joined(g)) == bytes(j)
        assert codec.frame_nbytes(g) == memoryview(j).nbytes
    msg = decode([bytes(codec.joined(f)) for f in gathered])
    for x, y in zip(xs, msg.tensors):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype


# -- rejections -----------------------------------------------------------------------------------
def test_empty_and_unparseable_messages():
    rejected([], "empty message")
    rejected([b""], "not valid msgpack")
    rejected([b"\xc1"], "not valid msgpack")
    rejected([msgpack.packb(header()) + b"\x00"], "not valid msgpack")   # trailing bytes


@pytest.mark.parametrize("value", [[1, 2], 3, "zps", None, b"\x00"])
def test_header_that_is_not_a_map(value):
    rejected([msgpack.packb(value)], "not a map")


@pytest.mark.parametrize("fields, match", [
    ({"z": "zpt"}, "bad magic 'zpt'"),
    ({"z": None}, "bad magic None"),
    ({"z": b"zps"}, "bad magic"),
    ({"v": 1}, "unsupported protocol version 1"),
    ({"v": None}, "unsupported protocol version None"),
    ({"v": True}, "unsupported protocol version True"),
    ({"v": 1.0}, "unsupported protocol version 1.0"),
    ({"k": 9}, "unknown message kind 9"),
    ({"k": [1]}, r"unknown message kind \[1\]"),
    ({"k": True}, "unknown message kind True"),
    ({"k": None}, "unknown message kind None"),
    ({"id": "7"}, "message id must be an integer, got '7'"),
    ({"id": 1.5}, "message id must be an integer"),
    ({"id": None}, "message id must be an integer"),
    ({"id": False}, "message id must be an integer"),
    ({"m": 5}, "method must be a string"),
    ({"t": {"a": 1}}, "tensor metadata must be lists"),
    ({"s": "x"}, "tensor metadata must be lists"),
    ({"t": [["float32", [2]]]}, "tensor 0: metadata must be"),
    ({"t": ["float32"]}, "tensor 0: metadata must be"),
    ({"t": [{"d": 1}]}, "tensor 0: metadata must be"),
])
def test_bad_header_fields(fields, match):
    rejected(raw(header(**fields)), match)


def test_non_string_map_keys_are_refused():
    rejected([msgpack.packb({**header(), "b": {1: "x"}})], "not valid msgpack.*key")


@pytest.mark.parametrize("dtype", ["object", "complex256", "V8", "O", "<f4", "float128", "str",
                                   ["float32"], None, 5])
def test_disallowed_dtypes(dtype):
    rejected(raw(header(t=[[dtype, [1], 1]]), b"\x00" * 8), "tensor 0: dtype .* is not allowed")


@pytest.mark.parametrize("shape, match", [
    ([-1], "invalid dimension -1"),
    ([2, 1 << 41], "invalid dimension"),
    ([1.0], "invalid dimension 1.0"),
    (["2"], "invalid dimension '2'"),
    ([True], "invalid dimension True"),
    ([None], "invalid dimension None"),
    ("2", "shape must be a list"),
    (2, "shape must be a list"),
    ([1] * (protocol.MAX_RANK + 1), "rank %d exceeds the maximum of %d"
     % (protocol.MAX_RANK + 1, protocol.MAX_RANK)),
])
def test_bad_shapes(shape, match):
    rejected(raw(header(t=[["uint8", shape, 1]]), b"\x00"), "tensor 0: " + match)


def test_max_rank_itself_is_fine():
    (t,) = decode(raw(header(t=[["uint8", [1] * protocol.MAX_RANK, 1]]), b"\x07")).tensors
    assert t.ndim == protocol.MAX_RANK and t.sum() == 7


def test_frame_count_mismatch():
    nbytes = protocol.SINGLE_FRAME_BYTES + protocol.FRAME_BYTES + 8
    good = encode(protocol.REQUEST, 1, None, [np.arange(nbytes // 8, dtype=np.float64)])
    n = len(good) - 1
    assert n == -(-nbytes // protocol.FRAME_BYTES)
    rejected(good[:-1], "tensor 0: declares %d frames but the message has %d left" % (n, n - 1))
    rejected(good + [b""], "message has %d frames, header describes %d" % (n + 2, n + 1))
    rejected(good[:1], "declares %d frames but the message has 0 left" % n)
    for n in ("3", None, 2.0, True):
        rejected(raw(header(t=[["uint8", [0], n]]), b""), "tensor 0: frame count .* is not an integer")
    # 0 frames: a streamed tensor, which only a StreamAssembler takes (tests/transport/test_streaming.py)
    rejected(raw(header(t=[["uint8", [4], 0]])), "tensor 0 is streamed: the message needs a StreamAssembler")
    rejected(raw(header(), b"stray"), "message has 2 frames, header describes 1")


def test_small_tensors_share_aligned_pack_frames():
    small = [np.arange(3, dtype=np.int8), np.float64(2.5), np.zeros((0, 4), np.float32),
             np.arange(6, dtype=np.int16).reshape(2, 3)]
    big = np.arange(protocol.ZERO_COPY_BYTES // 8, dtype=np.float64)
    frames = encode(protocol.REQUEST, 1, None, small[:2] + [big] + small[2:])
    metas = msgpack.unpackb(frames[0])["t"]
    # The two before the big tensor share frame 1, the two after it frame 3.
    assert [m[2] for m in metas] == [-1, -1, 1, -3, -3]
    assert len(frames) == 4 and bytes(frames[1])[:3] == b"\x00\x01\x02"
    assert bytes(frames[1])[16:] == np.float64(2.5).tobytes()   # at the next 16-byte boundary
    assert bytes(frames[1])[3:16] == bytes(13)   # the padding is zeros, never stale memory
    assert len(frames[3]) == 12                                   # the empty one takes no bytes
    msg = decode([bytes(f) for f in frames])
    for x, y in zip(small[:2] + [big] + small[2:], msg.tensors):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
        assert not y.flags.writeable and y.ctypes.data % y.dtype.itemsize == 0


def test_packs_hold_at_most_one_frame_of_tensors():
    xs = [np.full(protocol.ZERO_COPY_BYTES // 8 - 1, i, np.float64) for i in range(40)]
    frames = encode(protocol.ONEWAY, 1, None, xs)
    assert all(memoryview(f).nbytes <= protocol.FRAME_BYTES for f in frames[1:])
    assert len(frames) == 1 + 3   # 40 x 64 KB (aligned): 16, 16 and 8 to a 1 MB frame
    for i, t in enumerate(decode([bytes(f) for f in frames]).tensors):
        assert t.shape == xs[i].shape and (t == i).all()


def test_malformed_packs():
    two = [["float32", [3], -1], ["int8", [2], -1]]
    z = b"\x00"
    rejected(raw(header(t=two), z * 16), r"int8\[2\] needs 2 bytes at offset 16 of its pack frame of 16")
    rejected(raw(header(t=two), z * 19), "a pack frame of 19 bytes holds 18 bytes of tensors")
    rejected(raw(header(t=two), z * 12), "needs 2 bytes at offset 16")   # alignment is not optional
    rejected(raw(header(t=[["int8", [2], -2]]), z * 2), "packed in frame 2, but only frame 1 can come next")
    rejected(raw(header(t=[["int8", [2], -1]])), "packed in frame 1 of a message of 1 frames")
    rejected(raw(header(t=[["int8", [2], -1], ["int8", [2], 1], ["int8", [2], -1]]), z * 2, z * 2),
             "tensor 2: packed in frame 1, but only frame 3 can come next")
    rejected(raw(header(t=[["int8", [2], -1], ["int8", [1], -2]]), z * 3, z),
             "a pack frame of 3 bytes holds 2")
    small = Limits(max_tensor_bytes=100)
    rejected(raw(header(t=[["uint8", [101], -1]]), z * 101), "101 bytes exceeds the limit of 100", small)


def test_byte_size_mismatch():
    rejected(raw(header(t=[["float32", [3], 1]]), b"\x00" * 11),
             r"float32\[3\] needs 12 bytes, frames hold 11")
    rejected(raw(header(t=[["float32", [3], 1]]), b"\x00" * 13), "needs 12 bytes, frames hold 13")
    rejected(raw(header(t=[["int64", [2], 2]]), b"\x00" * 8, b"\x00" * 9), "needs 16 bytes, frames hold 17")
    rejected(raw(header(t=[["int64", [], 1]]), b""), "needs 8 bytes, frames hold 0")


def test_limits():
    small = Limits(max_header_bytes=64, max_tensor_bytes=100, max_message_bytes=150)
    rejected(raw(header(b="x" * 100)), "header of .* bytes exceeds the limit of 64", small)
    h = header(t=[["uint8", [101], 1]])
    rejected(raw(h, b"\x00" * 101), "tensor 0: 101 bytes exceeds the limit of 100", small)
    # Checked from the declared shape, before the frames are even looked at.
    rejected(raw({**h, "t": [["float64", [1 << 40], 1]]}, b""), "exceeds the limit", small)
    rejected(raw({**h, "t": [["uint8", [1 << 40] * 32, 1]]}, b""), "exceeds the limit", small)
    h2 = {**h, "t": [["uint8", [100], 1], ["uint8", [51], 1]]}
    rejected(raw(h2, b"\x00" * 100, b"\x00" * 51), "message exceeds the limit of 150", small)
    ok = decode(raw({**h2, "t": [["uint8", [100], 1], ["uint8", [50], 1]]}, b"\x00" * 100, b"\x00" * 50),
                small)
    assert ok.nbytes == 150
    many = {**h, "t": [["uint8", [0], 1]] * (protocol.MAX_TENSORS_PER_MESSAGE + 1)}
    rejected(raw(many), "too many tensors")


def test_string_tensor_mismatches():
    rejected(raw(header(t=[["string", [2], 0]], s=[[b"a"]])), r"string tensor of shape \[2\] needs 2 values")
    rejected(raw(header(t=[["string", [2], 0]])), "needs 2 values")
    rejected(raw(header(t=[["string", [1], 0]], s=[[b"a"], [b"b"]])), "1 more string lists")
    rejected(raw(header(s=[[b"a"]])), "1 more string lists")
    rejected(raw(header(t=[["string", [2], 0]], s=[b"ab"])), "needs 2 values")
    rejected(raw(header(t=[["string", [2], 0]], s=[["a", "b"]])), "string values must be bytes")
    rejected(raw(header(t=[["string", [1], 0]], s=[[1]])), "string values must be bytes")
    rejected(raw(header(t=[["string", [1], 0]], s=[[None]])), "string values must be bytes")
    rejected(raw(header(t=[["string", [1], 1]], s=[[b"a"]]), b"a"), "travels in the header")
    rejected(raw(header(t=[["string", [-1], 0]], s=[[]])), "invalid dimension -1")
