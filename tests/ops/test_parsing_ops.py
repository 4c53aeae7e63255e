"""tf.train.Example protos and the parsing ops against TensorFlow 2.21 (``tf.compat.v1``): the
serialized bytes (as hex), values, shapes and error messages were produced there and are written
in here (neither TF nor protobuf is needed to run these tests)."""

import copy
import os
import pickle

import numpy as np
import pytest

import zps as tf
from zps.framework.protobuf import DecodeError

T = tf.train


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


def run_error(fetch, feed_dict=None):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(fetch, feed_dict)
    return info.value.message


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def example(**features):
    """An Example from lists: bytes -> BytesList, floats -> FloatList, ints -> Int64List; None:
    a Feature with no list set."""
    out = {}
    for key, v in features.items():
        if v is None:
            out[key] = T.Feature()
        elif isinstance(v[0], bytes):
            out[key] = T.Feature(bytes_list=T.BytesList(value=v))
        elif isinstance(v[0], float):
            out[key] = T.Feature(float_list=T.FloatList(value=v))
        else:
            out[key] = T.Feature(int64_list=T.Int64List(value=v))
    return T.Example(features=T.Features(feature=out))


def serialized(**features):
    return example(**features).SerializeToString()


# -- the protos: bytes ---------------------------------------------------------------------------
# TF's SerializeToString(deterministic=True) of the same messages.
PINNED = [
    (lambda: example(x=[1, 2, -1], b=[b"ab", b"", "é".encode()], a=[0.1, 1.5], e=None),
     "0a440a110a0161120c120a0a08cdcccc3d0000c03f0a110a0162120c0a0a0a0261620a000a02c3a90a050a01"
     "6512000a150a017812101a0e0a0c0102ffffffffffffffffff01"),
    (lambda: T.Int64List(value=[2 ** 63 - 1, -2 ** 63]),
     "0a13ffffffffffffffff7f80808080808080808001"),
    (lambda: T.Features(feature={"": T.Feature()}), "0a040a001200"),
    (lambda: T.SequenceExample(
        context=T.Features(feature={"c": T.Feature(int64_list=T.Int64List(value=[1]))}),
        feature_lists=T.FeatureLists(feature_list={"s": T.FeatureList(feature=[
            T.Feature(float_list=T.FloatList(value=[1.5])), T.Feature()])})),
     "0a0c0a0a0a016312051a030a010112130a110a0173120c0a0812060a040000c03f0a00"),
    (lambda: T.Example(), ""),
    (lambda: T.Example(features=T.Features()), "0a00"),
    (lambda: T.Feature(int64_list=T.Int64List()), "1a00"),
]


@pytest.mark.parametrize("make, hex_bytes", PINNED)
def test_serialized_bytes_are_tensorflows(make, hex_bytes):
    message = make()
    assert message.SerializeToString().hex() == hex_bytes
    assert message.SerializeToString(deterministic=True).hex() == hex_bytes
    assert message.ByteSize() == len(hex_bytes) // 2
    again = type(message).FromString(bytes.fromhex(hex_bytes))
    assert again == message and again.SerializeToString().hex() == hex_bytes


def test_map_entries_are_written_in_protobufs_deterministic_order():
    keys = ["a", "ab", "", "b", "abc", "\xff", "B"]
    raw = T.Features(feature={k: T.Feature() for k in keys}).SerializeToString()
    order, pos = [], 0
    while pos < len(raw):
        entry = raw[pos + 2:pos + 2 + raw[pos + 1]]
        order.append(entry[2:2 + entry[1]].decode("utf-8"))
        pos += 2 + raw[pos + 1]
    assert order == ["B", "abc", "ab", "a", "b", "\xff", ""]   # TF's order


def test_building_by_mutation_gives_the_same_bytes():
    ex = T.Example()
    ex.features.feature["x"].int64_list.value.append(1)
    assert ex.SerializeToString().hex() == "0a0c0a0a0a017812051a030a0101"
    assert ex == example(x=[1])


def test_parsing_accepts_unpacked_and_repeated_fields():
    # two unpacked varints, then a packed run: protobuf concatenates them
    assert T.Int64List.FromString(bytes.fromhex("080108020a020304")).value == [1, 2, 3, 4]
    assert T.FloatList.FromString(bytes.fromhex("0d0000803f0a0400000040")).value == [1.0, 2.0]
    # a oneof set twice: the last member wins; a map key set twice: the last entry wins
    f = T.Feature.FromString(bytes.fromhex("1a02080112050d0000803f"))
    assert f.WhichOneof("kind") == "float_list" and f.float_list.value == [1.0]
    m = T.Features.FromString(bytes.fromhex("0a070a016112021a000a090a0161120412020a00"))
    assert list(m.feature) == ["a"] and m.feature["a"].WhichOneof("kind") == "float_list"
    # a group and an overlong-but-valid varint in unknown fields are skipped and kept
    for hex_bytes in ["0b08010c", "2b0801330834342c", "08ffffffffffffffffff01"]:
        assert T.Feature.FromString(bytes.fromhex(hex_bytes)).SerializeToString().hex() == \
            hex_bytes


def test_unknown_fields_are_kept_and_written_after_the_known_ones():
    raw = bytes.fromhex("2801" + "0a070a050a01611200" + "3a0178")
    ex = T.Example.FromString(raw)
    assert ex.SerializeToString().hex() == "0a070a050a0161120028013a0178"   # TF's
    assert ex != T.Example.FromString(bytes.fromhex("0a070a050a01611200"))
    assert str(ex) == 'features {\n  feature {\n    key: "a"\n    value {\n    }\n  }\n}\n'


@pytest.mark.parametrize("hex_bytes", [
    "0a050a01",                  # truncated length-delimited field
    "ff",                        # truncated varint
    "0a020a03",                  # a submessage's field runs past the submessage
    "0c",                        # end-group tag without its group
    "0f",                        # wire type 7
    "00",                        # field number 0
    "08ffffffffffffffffffff01",  # an 11-byte varint
    "0a050a01ff1200",            # a map key that is not UTF-8
    "0a03080102",                # a map entry whose value is cut
])
def test_malformed_bytes_raise_decode_error(hex_bytes):
    with pytest.raises(DecodeError, match="Error parsing message with type 'Features'"):
        T.Features.FromString(bytes.fromhex(hex_bytes))
    assert issubclass(DecodeError, ValueError)


def test_packed_floats_must_be_whole():
    with pytest.raises(DecodeError, match="not a multiple of 4"):
        T.FloatList.FromString(bytes.fromhex("0a03000000"))


# -- the protos: Python API ----------------------------------------------------------------------
def test_reading_a_submessage_does_not_set_it_and_changing_it_does():
    ex = T.Example()
    assert ex.features.feature.get("k") is None and not ex.HasField("features")
    assert ex.SerializeToString() == b""
    ex.features.feature["k"]          # a map read adds the entry, as protobuf's maps do
    assert ex.HasField("features") and ex.SerializeToString() == b"\n\x07\n\x05\n\x01k\x12\x00"
    f = ex.features.feature["k"]
    _ = f.int64_list, f.int64_list.value
    assert f.WhichOneof("kind") is None and not f.HasField("kind")
    f.int64_list.value.extend([])     # any change sets it, even an empty one (upb's rule)
    assert f.WhichOneof("kind") == "int64_list"
    old = f.int64_list
    f.float_list.value.append(2)
    assert f.WhichOneof("kind") == "float_list" and not f.HasField("int64_list")
    old.value.append(5)               # detached: no longer changes f
    assert f.WhichOneof("kind") == "float_list" and list(old.value) == [5]
    for change in (lambda m: m.Clear(), lambda m: m.SetInParent(),
                   lambda m: m.CopyFrom(T.Int64List()), lambda m: m.ParseFromString(b"")):
        g = T.Feature()
        change(g.int64_list)
        assert g.WhichOneof("kind") == "int64_list"


def test_oneof_in_the_constructor_keeps_the_last():
    assert T.Feature(int64_list=T.Int64List(), float_list=T.FloatList()).WhichOneof("kind") == \
        "float_list"
    assert T.Feature(float_list=T.FloatList(), int64_list=T.Int64List()).WhichOneof("kind") == \
        "int64_list"
    assert not T.Example(features=None).HasField("features")


def test_value_types_are_checked():
    with pytest.raises(TypeError, match="integers"):
        T.Int64List(value=[1.5])
    with pytest.raises(TypeError, match="integers"):
        T.Int64List(value=["a"])
    with pytest.raises(TypeError, match="boolean"):
        T.Int64List(value=[True])
    with pytest.raises(ValueError, match="Value out of range: 9223372036854775808"):
        T.Int64List(value=[2 ** 63])
    with pytest.raises(ValueError, match="out of range"):
        T.Int64List(value=[np.uint64(2 ** 64 - 1)])
    with pytest.raises(TypeError, match="encode text first"):
        T.BytesList(value=["abc"])
    with pytest.raises(TypeError, match="holds bytes"):
        T.BytesList(value=[True])
    with pytest.raises(TypeError, match="real numbers"):
        T.FloatList(value=["1.5"])
    with pytest.raises(TypeError, match="iterable"):
        T.Int64List(value=1)
    with pytest.raises(TypeError, match="iterable"):
        T.Int64List().value.extend(3)
    with pytest.raises(TypeError, match="must be dict or instance of same class"):
        T.Feature(int64_list=[1])
    with pytest.raises(ValueError, match='Protocol message Example has no "foo" field.'):
        T.Example(foo=1)
    with pytest.raises(TypeError, match="map keys are strings"):
        T.Features(feature={1: T.Feature()})
    # numpy values and arrays, bytes iterated as ints (as protobuf does), bytes map keys
    assert T.Int64List(value=np.array([1, 2])).value == [1, 2]
    assert T.Int64List(value=[np.int32(3), np.uint8(4)]).value == [3, 4]
    assert T.Int64List(value=b"ab").value == [97, 98]
    assert T.FloatList(value=[True, np.int64(3)]).value == [1.0, 3.0]
    assert list(T.Features(feature={b"k": T.Feature()}).feature) == ["k"]


def test_floats_are_rounded_to_float32():
    f = T.FloatList(value=[0.1, 1e40, -1e40])
    assert f.value == [0.10000000149011612, float("inf"), float("-inf")]
    assert T.FloatList(value=np.array([0.1], np.float64)).value[0] == 0.10000000149011612
    f.value[0] = 0.2
    assert f.value[0] == float(np.float32(0.2))


def test_fields_cannot_be_assigned():
    ex, lst = T.Example(), T.Int64List()
    with pytest.raises(AttributeError, match='Assignment not allowed to message field "features"'):
        ex.features = T.Features()
    with pytest.raises(AttributeError, match='repeated field "value"'):
        lst.value = [1]
    with pytest.raises(ValueError, match="Message objects may not be assigned"):
        ex.features.feature["z"] = T.Feature()
    with pytest.raises(TypeError, match="unhashable"):
        hash(ex)


def test_repeated_scalar_container():
    v = T.Int64List(value=[1, 2, 3]).value
    assert v[1:] == [2, 3] and len(v) == 3 and v == [1, 2, 3] and v != (1, 2, 3)
    assert repr(v) == "[1, 2, 3]" and type(v[0]) is int
    v.insert(0, 0)
    v += [4]
    del v[1]
    v[0] = 9
    v.sort()
    assert list(v) == [2, 3, 4, 9] and v.pop() == 9
    with pytest.raises(TypeError):
        v.insert(0, 1.5)


def test_map_and_repeated_message_containers():
    m = T.Features()
    assert m.feature.get("x") is None and "x" not in m.feature and len(m.feature) == 0
    m.feature.get_or_create("y").int64_list.value.append(1)
    assert list(m.feature) == ["y"] and dict(m.feature) == {"y": m.feature["y"]}
    assert m.feature == {"y": T.Feature(int64_list=T.Int64List(value=[1]))}
    with pytest.raises(KeyError):
        del m.feature["zz"]
    del m.feature["y"]
    assert len(m.feature) == 0
    fl = T.FeatureList()
    added = fl.feature.add(int64_list=T.Int64List(value=[4]))
    fl.feature.append(T.Feature())
    fl.feature.extend([{"float_list": {"value": [0.5]}}])
    assert len(fl.feature) == 3 and fl.feature[0] is added
    assert [f.WhichOneof("kind") for f in fl.feature] == ["int64_list", None, "float_list"]
    with pytest.raises(TypeError):
        fl.feature[0] = T.Feature()
    del fl.feature[1]
    assert [f.WhichOneof("kind") for f in fl.feature] == ["int64_list", "float_list"]


def test_dicts_initialize_message_fields():
    ex = T.Example(features={"feature": {"a": {"int64_list": {"value": [1]}}}})
    assert ex == example(a=[1])


def test_merge_copy_and_parse():
    a = T.Features(feature={"a": T.Feature(int64_list=T.Int64List(value=[1]))})
    a.MergeFrom(T.Features(feature={"a": T.Feature(float_list=T.FloatList(value=[2])),
                                    "b": T.Feature()}))
    assert a.feature["a"] == T.Feature(float_list=T.FloatList(value=[2.0]))   # replaced
    lst = T.Int64List(value=[1])
    lst.MergeFrom(T.Int64List(value=[2]))
    assert lst.value == [1, 2]
    c = T.Int64List()
    c.CopyFrom(lst)
    assert c == lst and c is not lst
    assert c.ParseFromString(b"\n\x01\x07") == 3 and c.value == [7]
    assert c.MergeFromString(b"\n\x01\x08") == 3 and c.value == [7, 8]
    c.ClearField("value")
    assert c.value == []
    with pytest.raises(TypeError, match="must be instance of same class"):
        c.MergeFrom(T.FloatList())
    with pytest.raises(ValueError, match="does not have presence"):
        c.HasField("value")
    with pytest.raises(ValueError, match='no oneof "x"'):
        T.Feature().WhichOneof("x")


def test_equality_copy_and_pickle():
    ex = example(x=[1, 2], y=[0.5], z=[b"a"])
    assert ex == example(z=[b"a"], y=[0.5], x=[1, 2]) and ex != example(x=[1, 2])
    assert T.Example() != T.Example(features=T.Features())
    assert T.Int64List(value=[1]) != T.FloatList(value=[1]) and T.Int64List() != 1
    assert copy.deepcopy(ex) == ex and copy.copy(ex) == ex
    assert pickle.loads(pickle.dumps(ex)) == ex


def test_text_format_is_tensorflows():
    assert str(T.Feature(float_list=T.FloatList(value=[
        0.1, 1 / 3, 1e20, float("inf"), float("nan"), -0.0, 3.0, 1e-8, 123456789.0]))) == (
        "float_list {\n  value: 0.1\n  value: 0.333333343\n  value: 1e+20\n  value: inf\n"
        "  value: nan\n  value: -0\n  value: 3\n  value: 1e-08\n  value: 123456792\n}\n")
    assert repr(T.BytesList(value=[b"\x00\xff\n\"'\\ab\x7f", b"a\tb\rc\x01", "é".encode()])) == (
        'value: "\\000\\377\\n\\"\\\'\\\\ab\\177"\nvalue: "a\\tb\\rc\\001"\n'
        'value: "\\303\\251"\n')
    assert str(T.Features(feature={"é\n": T.Feature()})) == \
        'feature {\n  key: "é\\n"\n  value {\n  }\n}\n'
    assert str(example(x=[1, -2])) == (
        'features {\n  feature {\n    key: "x"\n    value {\n      int64_list {\n'
        '        value: 1\n        value: -2\n      }\n    }\n  }\n}\n')
    assert str(T.Example()) == ""


# -- parse_example / parse_single_example ----------------------------------------------------------
RECORDS = [serialized(a=[1, 2], b=[1.5], c=[b"x", b"yz"]), serialized(a=[3, 4], c=[b"w"])]
SPEC = {"a": tf.FixedLenFeature([2], tf.int64),
        "b": tf.FixedLenFeature([], tf.float32, default_value=-1.0),
        "c": tf.VarLenFeature(tf.string)}


def test_parse_example():
    parsed = tf.parse_example(RECORDS, SPEC)
    assert list(parsed) == ["c", "a", "b"]     # TF's order: sparse keys, then dense keys
    assert parsed["a"].get_shape().as_list() == [2, 2] and parsed["a"].dtype == tf.int64
    assert parsed["b"].get_shape().as_list() == [2] and parsed["b"].dtype == tf.float32
    assert isinstance(parsed["c"], tf.SparseTensor)
    assert parsed["c"].indices.get_shape().as_list() == [None, 2]
    assert parsed["c"].dense_shape.get_shape().as_list() == [2]
    out = run(parsed)
    np.testing.assert_array_equal(out["a"], [[1, 2], [3, 4]])
    assert out["a"].dtype == np.int64
    np.testing.assert_array_equal(out["b"], np.array([1.5, -1.0], np.float32))
    assert out["b"].dtype == np.float32
    assert out["c"].indices.tolist() == [[0, 0], [0, 1], [1, 0]]
    assert out["c"].values.tolist() == [b"x", b"yz", b"w"]
    assert out["c"].dense_shape.tolist() == [2, 2]


def test_parse_single_example():
    parsed = tf.parse_single_example(RECORDS[0], SPEC)
    assert parsed["a"].get_shape().as_list() == [2] and parsed["b"].get_shape().as_list() == []
    assert parsed["c"].indices.get_shape().as_list() == [None, 1]
    out = run(parsed)
    assert out["a"].tolist() == [1, 2] and out["b"] == np.float32(1.5)
    assert out["c"].indices.tolist() == [[0], [1]] and out["c"].dense_shape.tolist() == [2]
    out = run(tf.parse_single_example(b"", {"a": tf.VarLenFeature(tf.float32),
                                            "b": tf.FixedLenFeature([], tf.string, "q")}))
    assert out["a"].indices.shape == (0, 1) and out["a"].values.dtype == np.float32
    assert out["a"].dense_shape.tolist() == [0] and out["b"] == b"q"


def test_parse_from_placeholders_and_static_shapes():
    s = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(s, SPEC)
    assert parsed["a"].get_shape().as_list() == [None, 2]
    assert parsed["c"].get_shape().as_list() == [None, None]
    assert parsed["a"].name.startswith("ParseExample") and parsed["a"].op.type == "ParseExampleV2"
    assert run(parsed["a"], {s: RECORDS[1:]}).tolist() == [[3, 4]]
    one = tf.placeholder(tf.string)                 # unknown rank: must be a scalar
    single = tf.parse_single_example(one, SPEC)
    assert single["a"].get_shape().as_list() == [2]
    assert run(single["b"], {one: RECORDS[1]}) == np.float32(-1.0)
    # a scalar for parse_example: no batch dimension (TF 2.21's compat.v1 too)
    assert run(tf.parse_example(RECORDS[0], {"a": SPEC["a"]})["a"]).tolist() == [1, 2]
    empty = run(tf.parse_example(tf.constant([], tf.string), SPEC))
    assert empty["a"].shape == (0, 2) and empty["c"].dense_shape.tolist() == [0, 0]


def test_fixed_len_shapes_and_defaults():
    out = run(tf.parse_example(RECORDS, {
        "a": tf.FixedLenFeature([2, 1], tf.int64),
        "d": tf.FixedLenFeature([2], tf.int64, default_value=[5, 6]),
        "s": tf.FixedLenFeature((), tf.string, default_value="zz"),
        "n": tf.FixedLenFeature(2, tf.float32, default_value=np.array([1.0, 2.0]))}))
    assert out["a"].tolist() == [[[1], [2]], [[3], [4]]]
    assert out["d"].tolist() == [[5, 6], [5, 6]]
    assert out["s"].tolist() == [b"zz", b"zz"]
    assert out["n"].tolist() == [[1.0, 2.0], [1.0, 2.0]] and out["n"].dtype == np.float32


def test_fixed_len_sequence_feature():
    spec = {"a": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
            "b": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True, default_value=9.),
            "c": tf.FixedLenSequenceFeature([], tf.string, allow_missing=True)}
    parsed = tf.parse_example(RECORDS, spec)
    assert parsed["a"].get_shape().as_list() == [2, None]
    out = run(parsed)
    assert out["a"].tolist() == [[1, 2], [3, 4]]
    assert out["b"].tolist() == [[1.5], [9.0]] and out["b"].dtype == np.float32
    assert out["c"].tolist() == [[b"x", b"yz"], [b"w", b""]]
    rows = run(tf.parse_example(
        [serialized(a=[1, 2]), serialized(a=[1, 2, 3, 4]), serialized(b=[1.0])],
        {"a": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True, default_value=7)}))
    assert rows["a"].tolist() == [[[1, 2], [7, 7]], [[1, 2], [3, 4]], [[7, 7], [7, 7]]]
    single = tf.parse_single_example(RECORDS[0], {"a": spec["a"]})["a"]
    assert single.get_shape().as_list() == [None] and run(single).tolist() == [1, 2]
    nothing = run(tf.parse_example([serialized(e=None)], {
        "e": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}))["e"]
    assert nothing.shape == (1, 0, 2) and nothing.dtype == np.float32


def test_a_feature_with_no_list_counts_as_missing():
    record = [serialized(e=None)]
    assert run(tf.parse_example(record, {"e": tf.FixedLenFeature([], tf.int64, 5)})["e"]) == [5]
    sparse = run(tf.parse_example(record, {"e": tf.VarLenFeature(tf.int64)})["e"])
    assert sparse.indices.shape == (0, 2) and sparse.dense_shape.tolist() == [1, 0]
    assert run_error(tf.parse_example(record, {"e": tf.FixedLenFeature([], tf.int64)})["e"]) == \
        "Name: <unknown>, Feature: e (data type: int64) is required but could not be found."


@pytest.mark.parametrize("make, message", [
    (lambda: tf.parse_example(RECORDS, {"b": tf.FixedLenFeature([], tf.float32)}),
     "Name: <unknown>, Feature: b (data type: float) is required but could not be found."),
    (lambda: tf.parse_example(RECORDS, {"b": tf.FixedLenFeature([], tf.float32)},
                              example_names=["e0", "e1"]),
     "Name: e1, Feature: b (data type: float) is required but could not be found."),
    (lambda: tf.parse_single_example(RECORDS[1], {"b": tf.FixedLenFeature([], tf.float32)}),
     "Feature: b (data type: float) is required but could not be found."),
    (lambda: tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([3], tf.int64)}),
     "Name: <unknown>, Key: a, Index: 0.  Number of int64 values != expected.  Values size: 2 "
     "but output shape: [3]"),
    (lambda: tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([2], tf.float32)}),
     "Name: <unknown>, Key: a, Index: 0.  Data types don't match. Data type: int64 but expected "
     "type: float"),
    (lambda: tf.parse_example(RECORDS, {"a": tf.VarLenFeature(tf.float32)}),
     "Name: <unknown>, Key: a, Index: 0.  Data types don't match. Expected type: float, Actual "
     "type: int64"),
    (lambda: tf.parse_single_example(RECORDS[0], {"a": tf.FixedLenFeature([2], tf.float32)}),
     "Key: a.  Data types don't match. Data type: int64 but expected type: float"),
    (lambda: tf.parse_single_example(RECORDS[0], {"a": tf.VarLenFeature(tf.float32)}),
     "Key: a.  Data types don't match. Expected type: float, Actual type: int64"),
    (lambda: tf.parse_example(RECORDS, {"a": tf.FixedLenSequenceFeature(
        [3], tf.int64, allow_missing=True)}),
     "Name: <unknown>, Key: a, Index: 0.  Number of int64 values is not a multiple of stride "
     "length. Saw 2 values but output shape is: [?,3]"),
])
def test_parse_errors_at_run_time_are_tfs(make, message):
    assert run_error(make()) == message


def test_bytes_that_are_not_an_example():
    message = run_error(tf.parse_example([RECORDS[0], b"\xff"], {"a": tf.VarLenFeature(tf.int64)}))
    assert message.startswith("Name: <unknown>, Could not parse example input, value: b'\\xff'")
    message = run_error(tf.parse_single_example(b"\n", {"a": tf.VarLenFeature(tf.int64)}))
    assert message.startswith("Could not parse example input, value: b'\\n'")


def test_parse_build_errors():
    with pytest.raises(ValueError, match="Argument `features` cannot be None or falsy"):
        tf.parse_example(RECORDS, {})
    with pytest.raises(TypeError, match="dtype int32.*int64 \\(Int64List\\)"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([2], tf.int32)})
    with pytest.raises(TypeError, match="dtype float64"):
        tf.parse_example(RECORDS, {"a": tf.VarLenFeature(tf.float64)})
    with pytest.raises(ValueError, match="Missing shape for feature a"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature(None, tf.int64)})
    with pytest.raises(ValueError, match="First dimension of shape for feature a unknown. "
                                         "Consider using FixedLenSequenceFeature"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([None], tf.int64)})
    with pytest.raises(ValueError, match="All dimensions of shape for feature a need to be known"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([2, None], tf.int64)})
    with pytest.raises(ValueError, match="has 3 elements, but its shape \\[2\\] has 2"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([2], tf.int64, [1, 2, 3])})
    with pytest.raises(TypeError, match="Expected int64"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([2], tf.int64, [1.5, 2])})
    with pytest.raises(TypeError, match="Expected string, but got 3 of type 'int'"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenFeature([], tf.string, 3)})
    with pytest.raises(ValueError, match="Unsupported: FixedLenSequenceFeature requires "
                                         "allow_missing to be True."):
        tf.parse_example(RECORDS, {"a": tf.FixedLenSequenceFeature([], tf.int64)})
    with pytest.raises(ValueError, match="padding value"):
        tf.parse_example(RECORDS, {"a": tf.FixedLenSequenceFeature(
            [2], tf.int64, allow_missing=True, default_value=[7, 8])})
    with pytest.raises(ValueError, match="Unsupported int 1 for key 'a'"):
        tf.parse_example(RECORDS, {"a": 1})
    with pytest.raises(TypeError, match="Feature keys must be strings"):
        tf.parse_example(RECORDS, {1: tf.VarLenFeature(tf.int64)})
    with pytest.raises(ValueError, match="Input serialized must be a scalar"):
        tf.parse_single_example(RECORDS, SPEC)
    with pytest.raises(ValueError, match="string vector"):
        tf.parse_example([RECORDS], SPEC)
    with pytest.raises(TypeError, match="serialized must be strings"):
        tf.parse_example([1.5], SPEC)


def test_feature_specs_are_tf1s_namedtuples():
    spec = tf.FixedLenFeature([2], tf.int64)
    assert spec == tf.FixedLenFeature(shape=[2], dtype=tf.int64, default_value=None)
    assert spec._fields == ("shape", "dtype", "default_value")
    assert repr(spec) == "FixedLenFeature(shape=[2], dtype=tf.int64, default_value=None)"
    assert repr(tf.VarLenFeature(tf.string)) == "VarLenFeature(dtype=tf.string)"
    assert repr(tf.FixedLenSequenceFeature([], tf.int64)) == (
        "FixedLenSequenceFeature(shape=[], dtype=tf.int64, allow_missing=False, "
        "default_value=None)")


# -- decode_raw / read_file ------------------------------------------------------------------------
def test_decode_raw():
    assert run(tf.decode_raw([b"\x01\x00\x00\x00\x02\x00\x00\x00"], tf.int32)).tolist() == [[1, 2]]
    big = run(tf.decode_raw(b"\x01\x00\x00\x00\x02\x00\x00\x00", tf.int32, little_endian=False))
    assert big.tolist() == [16777216, 33554432] and big.dtype == np.int32
    assert run(tf.decode_raw([[b"ab"], [b"cd"]], tf.uint8)).tolist() == [[[97, 98]], [[99, 100]]]
    assert run(tf.decode_raw(b"\x00\x00\x80\x3f", tf.float32)).tolist() == [1.0]
    assert run(tf.decode_raw(b"\x00\x3c", tf.float16)).tolist() == [1.0]
    assert run(tf.decode_raw(b"\x01\x00", tf.bool)).tolist() == [True, False]
    assert run(tf.decode_raw(bytes=b"ab", out_type=tf.uint8)).tolist() == [97, 98]
    empty = run(tf.decode_raw([b"", b""], tf.float32))
    assert empty.shape == (2, 0) and empty.dtype == np.float32
    assert tf.decode_raw(tf.placeholder(tf.string, [None, 3]), tf.int32).get_shape().as_list() \
        == [None, 3, None]
    assert run_error(tf.decode_raw([b"\x01\x00", b"\x01\x00\x00\x00"], tf.int16)).startswith(
        "DecodeRaw requires input strings to all be the same size, but element 1 has size 4 != 2")
    assert run_error(tf.decode_raw([b"\x01\x00\x00"], tf.int16)) == \
        "Input to DecodeRaw has length 3 that is not a multiple of 2, the size of int16"
    with pytest.raises(TypeError, match="out_type string is not supported"):
        tf.decode_raw(b"ab", tf.string)
    with pytest.raises(TypeError, match="must be strings"):
        tf.decode_raw([1], tf.int32)
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.decode_raw(b"a", tf.uint8, bytes=b"a")


def test_read_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"hello\x00")
    contents = tf.read_file(str(path))
    assert contents.get_shape().as_list() == [] and contents.dtype == tf.string
    assert run(contents) == b"hello\x00"
    path.write_bytes(b"again")          # read when it runs, never cached
    assert run(contents) == b"again"
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        run(tf.read_file(str(tmp_path / "missing")))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        run(tf.read_file(str(tmp_path)))
    with pytest.raises(ValueError, match="string scalar"):
        tf.read_file([str(path)])


def test_ops_are_not_differentiable():
    from zps.framework.registry import REGISTRY
    for op_type in ("ParseExampleV2", "DecodeRaw", "ReadFile"):
        assert REGISTRY[op_type].grad_fn is None
    assert REGISTRY["ReadFile"].stateful and not REGISTRY["ParseExampleV2"].stateful


def test_ops_are_host_only():
    from zps.ops import cupy_kernels
    s = tf.placeholder(tf.string, [None])
    for op in (tf.parse_example(s, SPEC)["a"].op, tf.decode_raw(s, tf.int32).op,
               tf.read_file("f").op):
        assert op.type in cupy_kernels.CPU_ONLY    # TF1 registers CPU kernels only
        assert cupy_kernels.has_gpu_kernel(op) == "op type %s has no GPU kernel" % op.type


def test_tf_io_names():
    for name in ("parse_example", "parse_single_example", "FixedLenFeature", "VarLenFeature",
                 "FixedLenSequenceFeature", "decode_raw", "read_file", "decode_csv"):
        assert getattr(tf.io, name) is getattr(tf, name)
    assert tf.io.TFRecordWriter is tf.python_io.TFRecordWriter
    assert tf.io.tf_record_iterator is tf.python_io.tf_record_iterator


# -- end to end: TFRecord files of Examples through tf.data ----------------------------------------
def _write_examples(path, n, options=None):
    with tf.io.TFRecordWriter(path, options) as writer:
        for i in range(n):
            writer.write(T.Example(features=T.Features(feature={
                "x": T.Feature(float_list=T.FloatList(value=[i, i + 0.5])),
                "label": T.Feature(int64_list=T.Int64List(value=[i % 2])),
                "name": T.Feature(bytes_list=T.BytesList(value=[b"ex%d" % i]))})
            ).SerializeToString())


FEATURES = {"x": tf.FixedLenFeature([2], tf.float32), "label": tf.FixedLenFeature([], tf.int64),
            "name": tf.FixedLenFeature([], tf.string),
            "weight": tf.FixedLenFeature([], tf.float32, default_value=1.0)}


def test_tfrecord_examples_through_a_dataset_pipeline(tmp_path):
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord.gz")]
    _write_examples(paths[0], 3)
    _write_examples(paths[1], 2, tf.io.TFRecordOptions("GZIP"))
    ds = tf.data.TFRecordDataset(paths[:1]).concatenate(
        tf.data.TFRecordDataset(paths[1:], compression_type="GZIP"))
    ds = ds.map(lambda r: tf.parse_single_example(r, FEATURES)).batch(2)
    assert ds.output_shapes["x"].as_list() == [None, 2]
    assert ds.output_types == {"x": tf.float32, "label": tf.int64, "name": tf.string,
                               "weight": tf.float32}
    batch = ds.make_one_shot_iterator().get_next()
    got = []
    with tf.Session() as sess:
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                got.append(sess.run(batch))
    assert [b["x"].tolist() for b in got] == [[[0.0, 0.5], [1.0, 1.5]], [[2.0, 2.5], [0.0, 0.5]],
                                              [[1.0, 1.5]]]
    assert [b["label"].tolist() for b in got] == [[0, 1], [0, 0], [1]]
    assert [b["name"].tolist() for b in got] == [[b"ex0", b"ex1"], [b"ex2", b"ex0"], [b"ex1"]]
    assert all(b["weight"].dtype == np.float32 and set(b["weight"]) == {1.0} for b in got)


def test_batched_records_through_parse_example(tmp_path):
    path = str(tmp_path / "c.tfrecord")
    _write_examples(path, 5)
    ds = tf.data.TFRecordDataset(path).batch(4).map(lambda r: tf.parse_example(r, FEATURES))
    batch = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        first = sess.run(batch)
        assert first["label"].tolist() == [0, 1, 0, 1]
        assert sess.run(batch)["x"].tolist() == [[4.0, 4.5]]
    assert os.path.getsize(path) > 0
