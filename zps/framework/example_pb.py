"""``tf.train.Example`` and the protos it is made of, in protobuf's wire format without protobuf.

The messages of TensorFlow's ``example.proto`` and ``feature.proto``, as the Python classes users
touch: keyword construction, attribute access, ``SerializeToString`` / ``FromString`` /
``ParseFromString``, ``CopyFrom`` / ``MergeFrom``, ``HasField`` / ``WhichOneof``, ``==`` and a
text-format ``repr``::

    message BytesList { repeated bytes value = 1; }
    message FloatList { repeated float value = 1 [packed = true]; }
    message Int64List { repeated int64 value = 1 [packed = true]; }
    message Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                                   Int64List int64_list = 3; } }
    message Features { map<string, Feature> feature = 1; }
    message FeatureList { repeated Feature feature = 1; }
    message FeatureLists { map<string, FeatureList> feature_list = 1; }
    message Example { Features features = 1; }
    message SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }

Declared on zps.framework.protobuf's ``Message``, which gives them protobuf's bytes: packed
int64 and float lists, map entries as (key, value) messages, unknown fields kept and written back
after the known ones. Map entries are written in the order of protobuf's deterministic
serialization (its default order is that of its hash table, which changes from one process to
the next), so one Example always gives the same bytes: those of
``SerializeToString(deterministic=True)`` in TensorFlow. Parsing also accepts unpacked lists;
malformed bytes raise ``DecodeError`` (a ValueError).

>>> import zps as tf
>>> ex = tf.train.Example(features=tf.train.Features(feature={
...     "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2]))}))
>>> ex.SerializeToString()
b'\\n\\r\\n\\x0b\\n\\x01x\\x12\\x06\\x1a\\x04\\n\\x02\\x01\\x02'
>>> tf.train.Example.FromString(ex.SerializeToString()).features.feature["x"].int64_list.value
[1, 2]
"""

from zps.framework.protobuf import Field, Message

__all__ = ["BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features",
           "FloatList", "Int64List", "SequenceExample"]


class BytesList(Message):
    """A list of byte strings: ``BytesList(value=[b"a", b"b"])``."""

    FULL_NAME = "tensorflow.BytesList"
    FIELDS = (Field("value", 1, "bytes", repeated=True),)


class FloatList(Message):
    """A list of float32 numbers (values are rounded to float32): ``FloatList(value=[0.5])``."""

    FULL_NAME = "tensorflow.FloatList"
    FIELDS = (Field("value", 1, "float", repeated=True),)


class Int64List(Message):
    """A list of int64 numbers: ``Int64List(value=[1, 2])``."""

    FULL_NAME = "tensorflow.Int64List"
    FIELDS = (Field("value", 1, "int64", repeated=True),)


class Feature(Message):
    """One feature: a ``bytes_list``, a ``float_list`` or an ``int64_list`` (oneof ``kind``).

    >>> f = Feature(float_list=FloatList(value=[0.5]))
    >>> f.WhichOneof("kind"), list(f.float_list.value)
    ('float_list', [0.5])
    """

    FULL_NAME = "tensorflow.Feature"
    FIELDS = (Field("bytes_list", 1, BytesList, oneof="kind"),
              Field("float_list", 2, FloatList, oneof="kind"),
              Field("int64_list", 3, Int64List, oneof="kind"))


class Features(Message):
    """Named features: ``Features(feature={"x": Feature(...)})``; ``feature`` is a map."""

    FULL_NAME = "tensorflow.Features"
    FIELDS = (Field("feature", 1, Feature, map_key="string"),)


class FeatureList(Message):
    """A sequence of features: ``FeatureList(feature=[Feature(...), ...])``."""

    FULL_NAME = "tensorflow.FeatureList"
    FIELDS = (Field("feature", 1, Feature, repeated=True),)


class FeatureLists(Message):
    """Named feature sequences: ``FeatureLists(feature_list={"x": FeatureList(...)})``."""

    FULL_NAME = "tensorflow.FeatureLists"
    FIELDS = (Field("feature_list", 1, FeatureList, map_key="string"),)


class Example(Message):
    """A training example: ``Example(features=Features(feature={...}))``.

    >>> ex = Example()
    >>> ex.features.feature["label"].int64_list.value.append(3)
    >>> Example.FromString(ex.SerializeToString()) == ex
    True
    """

    FULL_NAME = "tensorflow.Example"
    FIELDS = (Field("features", 1, Features),)


class SequenceExample(Message):
    """A sequence example: ``context`` features and named ``feature_lists``."""

    FULL_NAME = "tensorflow.SequenceExample"
    FIELDS = (Field("context", 1, Features), Field("feature_lists", 2, FeatureLists))
