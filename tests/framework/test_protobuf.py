"""zps.framework.protobuf: the wire format and the Message base (the messages zps declares on it
have their own tests: tests/ops/test_summary_proto.py, tests/ops/test_parsing_ops.py). Hex
literals marked TF are what TensorFlow 2.21's protobuf serializes for the same message."""

import copy
import gc
import pickle

import numpy as np
import pytest

from zps.framework.example_pb import Example
from zps.framework.protobuf import (
    DecodeError,
    Field,
    Message,
    RepeatedScalarContainer,
    decode_varint,
    encode_varint,
    fields,
    signed64,
    skip_field,
)
from zps.ops.summary_proto import TensorProto


class Point(Message):
    FULL_NAME = "test.Point"
    FIELDS = (Field("x", 1, "int32"), Field("y", 2, "int32"))


class Kinds(Message):
    """One field of each kind, and a map and a oneof."""

    FULL_NAME = "test.Kinds"
    FIELDS = (Field("i32", 1, "int32"), Field("i64", 2, "int64"), Field("u32", 3, "uint32"),
              Field("u64", 4, "uint64"), Field("b", 5, "bool"), Field("e", 6, "enum",
                                                                     enum={1: "ONE"}),
              Field("f", 7, "float"), Field("d", 8, "double"), Field("s", 9, "string"),
              Field("raw", 10, "bytes"), Field("point", 11, Point),
              Field("i32s", 12, "int32", repeated=True), Field("fs", 13, "float", repeated=True),
              Field("ds", 14, "double", repeated=True), Field("bs", 15, "bool", repeated=True),
              Field("points", 16, Point, repeated=True),
              Field("named", 17, Point, map_key="string"),
              Field("n", 18, "int64", oneof="choice"), Field("p", 19, Point, oneof="choice"))


# -- wire format -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value, hex_bytes", [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (2 ** 32 - 1, "ffffffff0f"),
    (2 ** 63 - 1, "ffffffffffffffff7f"), (2 ** 64 - 1, "ffffffffffffffffff01"),
    (-1, "ffffffffffffffffff01"), (-2 ** 63, "80808080808080808001"),
    (-2 ** 31, "80808080f8ffffffff01"),
])
def test_varints_up_to_64_bits_and_negatives_as_ten_bytes(value, hex_bytes):
    assert encode_varint(value).hex() == hex_bytes
    raw = bytes.fromhex(hex_bytes)
    assert decode_varint(raw) == (value & (2 ** 64 - 1), len(raw))
    assert signed64(decode_varint(raw)[0]) == (value if value < 2 ** 63 else value - 2 ** 64)


def test_varint_reading_bounds_and_errors():
    raw = bytes.fromhex("ac02" + "05")
    assert decode_varint(raw, 2) == (5, 3) and decode_varint(memoryview(raw), 0) == (300, 2)
    with pytest.raises(DecodeError, match="truncated varint at byte 1"):
        decode_varint(raw, 0, 1)                     # cut by ``end``
    with pytest.raises(DecodeError, match="truncated varint"):
        decode_varint(b"\x80\x80")
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        decode_varint(bytes.fromhex("ffffffffffffffffffff01"))
    # a 10th byte's bits past the 64th are dropped, as protobuf does
    assert decode_varint(bytes.fromhex("ffffffffffffffffff7f")) == (2 ** 64 - 1, 10)


def test_skip_field_and_fields_cover_every_wire_type():
    raw = bytes.fromhex("0896 01" "11 0100000000000000" "1a03616263" "23 0801 2b08012c 24"
                        "2d 02000000".replace(" ", ""))
    assert fields(raw) == [(1, 0, 150), (2, 1, 1), (3, 2, b"abc"),
                           (4, 3, bytes.fromhex("08012b08012c")), (5, 5, 2)]
    assert skip_field(raw, 1, len(raw), 1, 0) == 3
    assert skip_field(raw, 4, len(raw), 2, 1) == 12
    for bad, match in [("09 0100", "truncated fixed64 field 1"), ("0d 01", "truncated fixed32"),
                       ("0a 05 61", "runs past its message"), ("0b 08", "truncated varint"),
                       ("0b 14", "group 1 ended by the end-group tag of field 2"),
                       ("0c", "end-group tag of field 1 without its group"),
                       ("0e", "invalid wire type 6"), ("0f", "invalid wire type 7"),
                       ("00", "field number 0")]:
        with pytest.raises(DecodeError, match=match):
            fields(bytes.fromhex(bad.replace(" ", "")))
    with pytest.raises(DecodeError, match="nested more than 100 deep"):
        fields(b"\x0b" * 101)


# -- messages: bytes -------------------------------------------------------------------------------
def test_every_scalar_kind_serializes_as_tensorflow():
    # TF: the same TensorProto built with tensorflow's tensor_pb2
    proto = TensorProto(dtype=9, version_number=-1, int_val=[-1, 0, 2 ** 31 - 1, -2 ** 31],
                        int64_val=[-2 ** 63, 2 ** 63 - 1], uint32_val=[2 ** 32 - 1],
                        uint64_val=[2 ** 64 - 1], bool_val=[True, False], float_val=[0.1, -0.0],
                        double_val=[1.5], half_val=[300], string_val=[b"\x00\xff"])
    tf_hex = ("080918ffffffffffffffffff012a08cdcccc3d000000803208000000000000f83f3a1affffffffff"
              "ffffffff0100ffffffff0780808080f8ffffffff01420200ff5213808080808080808080"
              "01ffffffffffffffff7f5a0201006a02ac02820105ffffffff0f8a010affffffffffffffffff01")
    assert proto.SerializeToString().hex() == tf_hex
    assert TensorProto.FromString(bytes.fromhex(tf_hex)) == proto
    assert TensorProto(dtype=-3).SerializeToString().hex() == "08fdffffffffffffffff01"   # TF
    # an int32 read from a varint wider than 32 bits keeps its low 32 bits (TF: 0)
    assert TensorProto.FromString(bytes.fromhex("18808080808020")).version_number == 0


def test_singular_scalars_defaults_negative_zero_and_float32():
    k = Kinds(i32=-2, i64=0, u32=7, b=True, e=1, f=0.1, d=-0.0, s="é", raw=b"\x00")
    assert k.SerializeToString().hex() == (
        "08feffffffffffffffff01" "1807" "2801" "3001" "3dcdcccc3d" "410000000000000080"
        "4a02c3a9" "520100")
    assert k.f == float(np.float32(0.1)) and k.i64 == 0 and k.u64 == 0 and k.s == "é"
    assert Kinds.FromString(k.SerializeToString()) == k
    assert Kinds(f=1e40).f == float("inf") and Kinds(f=-1e40).f == float("-inf")
    assert Kinds(f=float("nan")).SerializeToString().hex() == "3d0000c07f"
    # explicit zeros on the wire are read and not written back (proto3)
    assert Kinds.FromString(bytes.fromhex("08001000")).SerializeToString() == b""
    assert Kinds(b=1).b is True and Kinds(e=-5).e == -5


def test_packed_and_unpacked_repeated_numbers():
    k = Kinds(i32s=[1, -1], fs=[0.5, 1e40], ds=[0.25], bs=[True, False])
    assert k.SerializeToString().hex() == (
        "620b01ffffffffffffffffff01" "6a080000003f0000807f" "7208000000000000d03f" "7a020100")
    assert Kinds.FromString(k.SerializeToString()) == k
    # each unpacked, then packed: all are read, in order
    unpacked = bytes.fromhex("6001" "60ffffffffffffffffff01" "6d0000003f" "71000000000000d03f"
                             "7801" "620102")
    got = Kinds.FromString(unpacked)
    assert got.i32s == [1, -1, 2] and got.fs == [0.5] and got.ds == [0.25] and got.bs == [True]
    assert Kinds.FromString(got.SerializeToString()) == got
    with pytest.raises(DecodeError, match="not a multiple of 8"):
        Kinds.FromString(bytes.fromhex("720400000000"))
    with pytest.raises(DecodeError, match="truncated varint"):
        Kinds.FromString(bytes.fromhex("62018001"))    # a packed varint cut by its length


def test_unknown_fields_of_every_wire_type_are_kept_in_order():
    unknown = "a80601" "b1060100000000000000" "ba060161" "c3060801c406" "cd0602000000"
    raw = bytes.fromhex("0801" + unknown[:6] + "1002" + unknown[6:])
    k = Kinds.FromString(raw)
    assert k.i32 == 1 and k.i64 == 2
    assert k.SerializeToString().hex() == "08011002" + unknown   # known first, as protobuf
    assert k != Kinds(i32=1, i64=2) and str(k) == "i32: 1\ni64: 2\n"
    # a known number with another wire type is an unknown field too (TF's protobuf)
    odd = bytes.fromhex("0d01000000" "5801")
    assert Kinds.FromString(odd).SerializeToString() == odd and Kinds.FromString(odd).i32 == 0
    merged = Kinds()
    merged.MergeFrom(k)
    assert merged.SerializeToString() == k.SerializeToString()
    assert Kinds.FromString(raw + raw).SerializeToString().hex() == "08011002" + unknown * 2


@pytest.mark.parametrize("hex_bytes", [
    "08", "0880", "3d0000", "41000000", "4a05616263", "5a", "5a0508", "8a010a0a0161",
])
def test_truncated_input_raises_decode_error(hex_bytes):
    with pytest.raises(DecodeError, match=r"Error parsing message with type 'Kinds' "
                                          r"\(test\.Kinds\): "):
        Kinds.FromString(bytes.fromhex(hex_bytes))
    assert issubclass(DecodeError, ValueError)


def test_invalid_utf8_and_bad_argument_types():
    with pytest.raises(DecodeError, match="field test.Kinds.s is not UTF-8"):
        Kinds.FromString(bytes.fromhex("4a01ff"))
    with pytest.raises(TypeError, match="MergeFromString takes bytes, got str"):
        Kinds.FromString("0801")
    assert Kinds.FromString(bytearray(b"\x08\x05")).i32 == 5
    assert Kinds.FromString(memoryview(b"\x08\x05")).i32 == 5


# -- messages: Python API --------------------------------------------------------------------------
def test_map_field_order_text_and_copies():
    k = Kinds(named={"b": Point(x=1), "a": {"y": 2}})
    # entries in protobuf's deterministic order (here: by key)
    assert k.SerializeToString().hex() == "8a01070a016112021002" "8a01070a016212020801"
    assert str(k) == ('named {\n  key: "a"\n  value {\n    y: 2\n  }\n}\n'
                      'named {\n  key: "b"\n  value {\n    x: 1\n  }\n}\n')
    p = Point(x=5)
    k2 = Kinds(named={"c": p})
    p.x = 6                                            # the map holds a copy
    assert k2.named["c"].x == 5 and k2.named.get("zz") is None and "zz" not in k2.named
    k2.named["d"].y = 3                                # reading a key adds its entry
    assert sorted(k2.named) == ["c", "d"] and k2.named["d"] == Point(y=3)
    assert Kinds.FromString(k.SerializeToString()) == k


def test_oneof_of_a_scalar_and_a_message():
    k = Kinds(n=0)
    assert k.WhichOneof("choice") == "n" and k.HasField("n") and k.HasField("choice")
    assert k.SerializeToString().hex() == "9001" "00"   # a set oneof member is written even if 0
    k.p.x = 1
    assert k.WhichOneof("choice") == "p" and not k.HasField("n") and k.n == 0
    k.n = 4
    assert k.WhichOneof("choice") == "n" and not k.HasField("p")
    k.ClearField("choice")
    assert k.WhichOneof("choice") is None and k.SerializeToString() == b""


def test_sub_messages_join_their_parent_when_changed():
    k = Kinds()
    point = k.point
    assert not k.HasField("point") and k.point is point and k.SerializeToString() == b""
    point.y = 0                                        # a change, even to a default, sets it
    assert k.HasField("point") and k.SerializeToString().hex() == "5a00"
    k.ClearField("point")
    point.x = 9                                        # detached: no longer changes k
    assert not k.HasField("point") and k.point.x == 0
    k.points.add(x=1)
    k.points.append({"y": 2})
    assert [p.x for p in k.points] == [1, 0] and k.points[1].y == 2
    with pytest.raises(TypeError, match="takes Point messages, got Kinds"):
        k.points.append(Kinds())


def test_scalar_checks_and_errors():
    with pytest.raises(TypeError, match="Field test.Kinds.i32: Expected an int, got a boolean"):
        Kinds(i32=True)
    with pytest.raises(ValueError, match="Value out of range: 4294967296"):
        Kinds(u32=2 ** 32)
    with pytest.raises(ValueError, match="Value out of range: -1"):
        Kinds(u64=-1)
    with pytest.raises(ValueError, match="Value out of range"):
        Kinds(i32s=np.array([2 ** 31], np.int64))
    with pytest.raises(TypeError, match="has type str, but expected one of: int, float"):
        Kinds(d="1")
    with pytest.raises(TypeError, match="expected one of: int, float"):
        Kinds(d=np.array([1.0]))
    with pytest.raises(ValueError, match="is not valid UTF-8"):
        Kinds(s=b"\xff")
    with pytest.raises(AttributeError, match='Protocol message Kinds has no "nope" field'):
        Kinds().nope = 1
    with pytest.raises(AttributeError, match='Protocol message Kinds has no "nope" field'):
        _ = Kinds().nope
    with pytest.raises(AttributeError, match='Assignment not allowed to map, or repeated field '
                                             '"named"'):
        Kinds().named = {}
    with pytest.raises(TypeError, match="Field test.Kinds.named is a map"):
        Kinds(named=[1])
    with pytest.raises(ValueError, match="Field test.Kinds.i32 does not have presence"):
        Kinds().HasField("i32")
    with pytest.raises(ValueError, match='Protocol message Kinds has no "zz" field'):
        Kinds().ClearField("zz")


def test_field_declaration_errors():
    with pytest.raises(TypeError, match="kind 'sint32' is neither a Message class"):
        Field("a", 1, "sint32")
    with pytest.raises(TypeError, match="only maps of strings to messages"):
        Field("a", 1, "int32", map_key="string")
    with pytest.raises(TypeError, match="only maps of strings to messages"):
        Field("a", 1, Point, map_key="int64")
    with pytest.raises(TypeError, match="field names and numbers must be unique"):
        type("Bad", (Message,), {"FULL_NAME": "t.Bad",
                                 "FIELDS": (Field("a", 1, "int32"), Field("b", 1, "int32"))})
    with pytest.raises(TypeError, match="field name 'Clear' is a Message method"):
        type("Bad", (Message,), {"FULL_NAME": "t.Bad", "FIELDS": (Field("Clear", 1, "int32"),)})


def test_containers_list_fields_merge_and_copies():
    k = Kinds(i32s=[3], points=[{"x": 1}], named={"a": {}}, s="q")
    assert isinstance(k.i32s, RepeatedScalarContainer)
    assert [name for name, _ in k.ListFields()] == ["s", "i32s", "points", "named"]
    k.MergeFrom(Kinds(i32s=[4], s="r", named={"a": {"x": 2}}, points=[{}]))
    assert k.i32s == [3, 4] and k.s == "r" and len(k.points) == 2 and k.named["a"].x == 2
    for clone in (copy.deepcopy(k), copy.copy(k), pickle.loads(pickle.dumps(k))):
        assert clone == k and clone is not k
    k.Clear()
    assert k == Kinds() and k.ByteSize() == 0
    with pytest.raises(TypeError, match=r"Parameter to CopyFrom\(\) must be instance of same "
                                        r"class: expected Kinds got Point"):
        k.CopyFrom(Point())


def test_text_format_of_scalars():
    k = Kinds(i32=-1, u64=2 ** 64 - 1, b=True, e=1, f=1 / 3, d=0.1, s='a"\n', raw=b"\x7f\x80",
              bs=[False], n=3)
    assert str(k) == ('i32: -1\nu64: 18446744073709551615\nb: true\ne: ONE\nf: 0.333333343\n'
                      'd: 0.1\ns: "a\\"\\n"\nraw: "\\177\\200"\nbs: false\nn: 3\n')
    assert str(Kinds(e=7)) == "e: 7\n"                 # a number the enum does not name


def test_messages_make_no_reference_cycles():
    """Parsed and built messages are freed by reference counting (parse_example makes many)."""
    raw = Kinds(points=[{"x": 1}], named={"a": {"y": 2}}, i32s=[1], p={"x": 3}).SerializeToString()
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            assert Kinds.FromString(raw).named["a"].y == 2
            ex = Example()      # sub-messages with containers, set through their containers
            ex.features.feature["x"].int64_list.value.append(1)
            k = Kinds()
            k.point.x = 1
            k.named["b"].y = 2
            k.points.add().x = 3
            k.i32s.append(4)
            Kinds(point={"x": 1}, named={"c": Point(x=5)}, points=[Point()], p=Point())
        assert gc.collect() == 0
    finally:
        gc.enable()
