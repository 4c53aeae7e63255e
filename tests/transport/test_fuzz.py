"""Property-based fuzz of the decoder: any input gives a Message within the limits or a ProtocolError."""

from unittest import mock

import msgpack
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zps.transport import codec, protocol
from zps.transport.codec import Limits, Message, ProtocolError

LIMITS = Limits(max_header_bytes=8192, max_tensor_bytes=4096, max_message_bytes=6144)
FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check_decode(frames):
    """decode() either refuses with ProtocolError or returns a Message that respects LIMITS."""
    try:
        msg = codec.decode(frames, LIMITS)
    except ProtocolError as e:
        assert str(e)
        return None
    assert isinstance(msg, Message)
    assert msg.kind in protocol.KINDS and isinstance(msg.id, int)
    assert msg.method is None or isinstance(msg.method, str)
    total = 0
    for t in msg.tensors:
        assert isinstance(t, np.ndarray) and t.ndim <= protocol.MAX_RANK
        if t.dtype == object:
            assert all(isinstance(v, bytes) for v in t.reshape(-1).tolist())
        else:
            assert t.dtype.name in protocol.WIRE_DTYPES
            assert t.nbytes <= LIMITS.max_tensor_bytes
            total += t.nbytes
    assert total == msg.nbytes <= LIMITS.max_message_bytes
    return msg


plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | st.floats()
    | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=5)
dtypes = st.sampled_from(sorted(protocol.WIRE_DTYPES) + ["string", "object", "complex64", "V8", "<f4", ""]) \
    | plain
dims = st.integers(0, 6) | st.sampled_from([-1, 1 << 20, 1 << 40, (1 << 40) + 1, 1 << 63]) | plain
metas = st.lists(dtypes, min_size=3, max_size=3).flatmap(
    lambda m: st.tuples(st.just(m[0]), st.lists(dims, max_size=5) | plain,
                        st.integers(-1, 4) | plain).map(list)) | plain
frames_st = st.lists(st.binary(max_size=64), max_size=6)


@FUZZ
@given(st.lists(st.binary(max_size=256), max_size=6))
def test_random_byte_frames(frames):
    check_decode(frames)


@FUZZ
@given(header=st.dictionaries(st.text(max_size=3), plain, max_size=6),
       valid_envelope=st.booleans(),
       kind=st.sampled_from(sorted(protocol.KINDS)) | plain,
       t=st.none() | st.lists(metas, max_size=4) | plain,
       s=st.none() | st.lists(st.lists(st.binary(max_size=4) | plain, max_size=6), max_size=3) | plain,
       frames=frames_st)
def test_random_headers(header, valid_envelope, kind, t, s, frames):
    if valid_envelope:
        header.update({"z": protocol.MAGIC, "v": protocol.VERSION, "k": kind, "id": 5})
    for key, value in (("t", t), ("s", s)):
        if value is not None:
            header[key] = value
    check_decode([msgpack.packb(header, use_bin_type=True)] + frames)


def arrays():
    numeric = st.tuples(st.sampled_from(sorted(protocol.WIRE_DTYPES)),
                        st.lists(st.integers(0, 5), max_size=3)).map(
        lambda ds: (np.arange(int(np.prod(ds[1])), dtype=np.int64) % 7).astype(ds[0]).reshape(ds[1]))
    strings = st.lists(st.binary(max_size=5), max_size=4).map(
        lambda vs: np.array(vs, dtype=object) if vs else np.empty((0,), dtype=object))
    return numeric | strings


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(0, 1 << 16), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 16), st.integers(0, 1 << 16)),
    st.tuples(st.just("drop"), st.integers(0, 1 << 16)),
    st.tuples(st.just("duplicate"), st.integers(0, 1 << 16)),
    st.tuples(st.just("swap"), st.integers(0, 1 << 16), st.integers(0, 1 << 16)),
    st.tuples(st.just("append"), st.binary(max_size=16)),
)


def mutate(frames, op):
    frames = [bytearray(f) for f in frames]
    kind, args = op[0], op[1:]
    if kind == "flip":
        f = frames[args[0] % len(frames)]
        if f:
            f[args[1] % len(f)] ^= 1 << args[2]
    elif kind == "truncate":
        i = args[0] % len(frames)
        frames[i] = frames[i][:args[1] % (len(frames[i]) + 1)]
    elif kind == "drop" and len(frames) > 1:
        del frames[args[0] % len(frames)]
    elif kind == "duplicate":
        i = args[0] % len(frames)
        frames.insert(i, bytearray(frames[i]))
    elif kind == "swap":
        i, j = args[0] % len(frames), args[1] % len(frames)
        frames[i], frames[j] = frames[j], frames[i]
    elif kind == "append":
        frames.append(bytearray(args[0]))
    return [bytes(f) for f in frames]


@FUZZ
@given(tensors=st.lists(arrays(), max_size=4), body=plain,
       mutations=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_valid_messages(tensors, body, mutations):
    with mock.patch.object(protocol, "FRAME_BYTES", 16):   # multi-frame tensors, cheaply
        frames = [bytes(f) for f in codec.encode(protocol.REQUEST, 3, body, tensors, method="m")]
    if sum(t.nbytes for t in tensors if t.dtype != object) <= LIMITS.max_message_bytes:
        msg = check_decode(frames)   # unmutated: decodes exactly
        assert msg is not None and len(msg.tensors) == len(tensors)
        for sent, got in zip(tensors, msg.tensors):
            assert got.shape == sent.shape and got.tolist() == sent.tolist()
    for op in mutations:
        frames = mutate(frames, op)
        check_decode(frames)
