"""tf.Summary, tf.HistogramProto, tf.SummaryMetadata, tf.Event, tf.SessionLog: the messages and
their bytes. The hex literals are what TensorFlow 2.21's protobufs serialize for the same
messages (checked with tensorflow.compat.v1)."""

import copy

import numpy as np
import pytest

import zps as tf
from zps.framework.protobuf import DecodeError, Field, Message
from zps.ops.summary_proto import TensorProto, TensorShapeProto

# tf.Summary(value=[tf.Summary.Value(tag="val/accuracy", simple_value=0.1)])
ACCURACY_HEX = "0a130a0c76616c2f616363757261637915cdcccc3d"
# tf.HistogramProto(min=0, max=1.5, num=2, sum=1.5, sum_squares=2.25, bucket_limit=[1.0, 2.0],
#                   bucket=[1, 1])
HISTO_HEX = ("11000000000000f83f19000000000000004021000000000000f83f290000000000000240"
             "3210000000000000f03f00000000000000403a10000000000000f03f000000000000f03f")
# tf.Summary.Image(height=1, width=2, colorspace=3,
#                  encoded_image_string=b"\x89PNG\r\n\x1a\n\0\xff\"'\\")
IMAGE_HEX = "080110021803220d89504e470d0a1a0a00ff22275c"
# tf.Event(wall_time=1.5, step=3, summary=...) of the summary built in test_lazy_sub_messages
EVENT_HEX = ("09000000000000f83f10032a1a0a0f0a01712a0a3a0800000000000008400a070a016922020801")
# tf.Event(step=7, session_log=tf.SessionLog(status=CHECKPOINT, checkpoint_path="/m/ckpt-7"))
SESSION_LOG_EVENT_HEX = "10073a0d080312092f6d2f636b70742d37"


def test_manual_summary_idiom_serializes_as_tensorflow():
    summary = tf.Summary(value=[tf.Summary.Value(tag="val/accuracy", simple_value=0.1)])
    assert summary.SerializeToString().hex() == ACCURACY_HEX
    parsed = tf.Summary.FromString(bytes.fromhex(ACCURACY_HEX))
    assert parsed == summary and parsed.value[0].tag == "val/accuracy"
    assert parsed.value[0].simple_value == float(np.float32(0.1))  # float fields hold float32
    other = tf.Summary()
    assert other.ParseFromString(bytes.fromhex(ACCURACY_HEX)) == 21 and other == summary
    # a oneof member is written even when 0, unlike a plain proto3 scalar
    zero = tf.Summary(value=[tf.Summary.Value(tag="z", simple_value=0.0)])
    assert zero.SerializeToString().hex() == "0a080a017a1500000000"
    assert zero.value[0].HasField("simple_value")
    assert zero.value[0].WhichOneof("value") == "simple_value"
    assert tf.Summary().SerializeToString() == b""


def test_histogram_and_image_bytes():
    histo = tf.HistogramProto(min=0, max=1.5, num=2, sum=1.5, sum_squares=2.25,
                              bucket_limit=[1.0, 2.0], bucket=[1, 1])
    assert histo.SerializeToString().hex() == HISTO_HEX
    assert tf.HistogramProto.FromString(bytes.fromhex(HISTO_HEX)) == histo
    image = tf.Summary.Image(height=1, width=2, colorspace=3,
                             encoded_image_string=b"\x89PNG\r\n\x1a\n\0\xff\"'\\")
    assert image.SerializeToString().hex() == IMAGE_HEX
    value = tf.Summary.Value(tag="h", histo=histo)
    assert tf.Summary.Value.FromString(value.SerializeToString()).histo.bucket == [1.0, 1.0]


def test_lazy_sub_messages_repeated_add_and_event_bytes():
    summary = tf.Summary()
    value = summary.value.add(tag="q")
    assert not value.HasField("histo") and value.WhichOneof("value") is None
    value.histo.bucket.append(3)  # modifying a read sub-message sets it, as in protobuf
    assert value.WhichOneof("value") == "histo"
    image = tf.Summary.Image(height=1)
    summary.value.append(tf.Summary.Value(tag="i", image=image))
    image.height = 5  # append and the constructor copy
    assert summary.value[1].image.height == 1
    event = tf.Event(wall_time=1.5, step=3, summary=summary)
    assert event.SerializeToString().hex() == EVENT_HEX
    assert tf.Event.FromString(bytes.fromhex(EVENT_HEX)) == event
    log = tf.Event(step=7, session_log=tf.SessionLog(status=tf.SessionLog.CHECKPOINT,
                                                     checkpoint_path="/m/ckpt-7"))
    assert log.SerializeToString().hex() == SESSION_LOG_EVENT_HEX
    assert tf.SessionLog.START == 1 and log.WhichOneof("what") == "session_log"
    # setting another oneof member clears the first
    value.simple_value = 2.0
    assert not value.HasField("histo") and value.simple_value == 2.0


def test_text_format_repr():
    summary = tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1 / 3),
                                tf.Summary.Value(tag="é\x01", image={"height": 2})])
    assert str(summary) == ('value {\n  tag: "a"\n  simple_value: 0.333333343\n}\n'
                            'value {\n  tag: "é\\001"\n  image {\n    height: 2\n  }\n}\n')
    assert repr(summary) == str(summary) and repr(tf.Summary()) == ""
    histo = tf.HistogramProto(min=-1.7976931348623157e308, max=float("inf"), num=0.1, sum=1e20,
                              sum_squares=float("nan"), bucket_limit=[1e-12, 123456789.0, 1 / 3])
    assert str(histo) == ("min: -1.7976931348623157e+308\nmax: inf\nnum: 0.1\nsum: 1e+20\n"
                          "sum_squares: nan\nbucket_limit: 1e-12\nbucket_limit: 123456789\n"
                          "bucket_limit: 0.33333333333333331\n")
    image = tf.Summary.Image(encoded_image_string=b"\x89PNG\r\n\x1a\n\0\xff\"'\\")
    assert str(image) == 'encoded_image_string: "\\211PNG\\r\\n\\032\\n\\000\\377\\"\\\'\\\\"\n'
    assert str(tf.SessionLog(status=tf.SessionLog.START)) == "status: START\n"


def test_field_errors_match_protobuf():
    with pytest.raises(ValueError, match='Protocol message Value has no "bogus" field'):
        tf.Summary.Value(bogus=1)
    value = tf.Summary.Value()
    with pytest.raises(AttributeError, match='no "bogus" field'):
        value.bogus = 1
    with pytest.raises(AttributeError, match='Assignment not allowed to message field "image"'):
        value.image = tf.Summary.Image()
    with pytest.raises(ValueError, match="tensorflow.Summary.Value.tag does not have presence"):
        value.HasField("tag")
    with pytest.raises(TypeError, match="3 has type int, but expected one of: bytes, str"):
        tf.Summary.Value(tag=3)
    with pytest.raises(TypeError, match="'abc' has type str, but expected bytes"):
        tf.Summary.Image(encoded_image_string="abc")
    with pytest.raises(TypeError):
        tf.Summary.Image(height=1.5)
    with pytest.raises(ValueError, match="Value out of range: 1099511627776"):
        tf.Summary.Image(height=2 ** 40)
    with pytest.raises(TypeError, match="takes Value messages, got Image"):
        tf.Summary().value.append(tf.Summary.Image())
    with pytest.raises(TypeError, match="must be instance of same class"):
        tf.Summary().CopyFrom(tf.Event())


def test_numpy_values_bytes_tags_and_equality():
    value = tf.Summary.Value(tag=b"loss", simple_value=np.float32(2.5))
    assert value.tag == "loss" and value.simple_value == 2.5
    assert tf.HistogramProto(bucket=np.array([1.0, 2.0])).bucket == [1.0, 2.0]
    assert tf.Summary.Image(height=np.int64(3)).height == 3
    assert value == tf.Summary.Value(tag="loss", simple_value=2.5)
    assert value != tf.Summary.Value(tag="loss", simple_value=2.0)
    assert value != tf.Summary.Value(tag="loss") and (value == 1) is False
    clone = copy.deepcopy(value)
    assert clone == value and clone is not value


def test_parse_errors_and_unknown_fields():
    with pytest.raises(DecodeError, match="tensorflow.Summary"):
        tf.Summary.FromString(b"\x0a\x05ab")  # a length running past the end
    # field 1 (value) as a varint: protobuf (TF 2.21) keeps a known number of another wire
    # type as an unknown field, and writes it back
    odd = tf.Summary.FromString(b"\x08\x01")
    assert odd.value == [] and odd.SerializeToString() == b"\x08\x01"
    with pytest.raises(DecodeError, match="not UTF-8"):
        tf.Summary.Value.FromString(b"\x0a\x01\xff")
    # fields this version does not know are kept and written back
    data = bytes.fromhex("0a080a017a1500000000f80101")
    assert tf.Summary.FromString(data).SerializeToString() == data


def test_merge_clear_and_list_fields():
    a = tf.Summary(value=[{"tag": "a", "simple_value": 1.0}])
    b = tf.Summary(value=[{"tag": "b", "simple_value": 2.0}])
    a.MergeFrom(b)
    assert [v.tag for v in a.value] == ["a", "b"]
    merged = tf.Summary()
    merged.MergeFromString(bytes.fromhex(ACCURACY_HEX))
    merged.MergeFromString(bytes.fromhex(ACCURACY_HEX))
    assert len(merged.value) == 2
    assert [name for name, _ in a.value[0].ListFields()] == ["tag", "simple_value"]
    a.ClearField("value")
    assert a == tf.Summary() and a.ByteSize() == 0


def test_tensor_and_metadata_protos():
    proto = TensorProto(dtype=tf.float32.as_datatype_enum,
                        tensor_shape=TensorShapeProto(dim=[{"size": 1}, {"size": 2}]),
                        tensor_content=np.array([1.5, 2.0], "<f4").tobytes())
    # tf.make_tensor_proto(np.array([[1.5, 2]], np.float32))
    assert proto.SerializeToString().hex() == "08011208120208011202080222080000c03f00000040"
    assert "dtype: DT_FLOAT\n" in str(proto)
    metadata = tf.SummaryMetadata(plugin_data=tf.SummaryMetadata.PluginData(plugin_name="text"))
    assert metadata.SerializeToString().hex() == "0a060a0474657874"


def test_message_base_class_example():
    class Pair(Message):
        FULL_NAME = "example.Pair"
        FIELDS = (Field("key", 1, "string"), Field("values", 2, "int64", repeated=True))

    pair = Pair(key="k", values=[1, -1])
    data = pair.SerializeToString()
    # packed varints; -1 as ten bytes of 64-bit two's complement
    assert data.hex() == "0a016b120b01ffffffffffffffffff01"
    assert Pair.FromString(data).values == [1, -1]
    assert Pair.FromString(b"\x10\x05\x10\x06").values == [5, 6]  # unpacked is read too
    assert Pair.__qualname__ == "Pair"
