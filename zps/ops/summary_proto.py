"""TensorFlow's summary and event protos (``tf.Summary``, ``tf.HistogramProto``,
``tf.SummaryMetadata``, ``tf.Event``, ``tf.SessionLog``), serialized byte for byte as TensorFlow
does (tensorflow/core/framework/summary.proto, tensor.proto, tensor_shape.proto,
core/util/event.proto, tsl histogram.proto; all proto3); and the parts of TensorFlow's GraphDef
(graph.proto, node_def.proto, attr_value.proto) and RunMetadata (config.proto, step_stats.proto)
that ``tf.summary.FileWriter`` writes for TensorBoard's graph view. zps's own graph_def is plain
data (zps/framework/serialization.py); these protos are only what event files hold.

>>> import zps as tf
>>> summary = tf.Summary(value=[tf.Summary.Value(tag="val/accuracy", simple_value=0.5)])
>>> summary.SerializeToString().hex()
'0a130a0c76616c2f6163637572616379150000003f'
>>> tf.Summary.FromString(summary.SerializeToString()).value[0].simple_value
0.5
"""

from zps.framework.protobuf import Field, Message

__all__ = ["AttrValue", "Event", "GraphDefProto", "HistogramProto", "NodeDefProto",
           "RunMetadataProto", "SessionLog", "SourceMetadata", "Summary", "SummaryMetadata",
           "TensorProto", "TensorShapeProto"]

# TF's DataType enum, for text format (zps's dtypes carry the numbers: DType.as_datatype_enum).
_DATA_TYPES = {0: "DT_INVALID", 1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8",
               5: "DT_INT16", 6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64",
               10: "DT_BOOL", 14: "DT_BFLOAT16", 17: "DT_UINT16", 18: "DT_COMPLEX128",
               19: "DT_HALF", 22: "DT_UINT32", 23: "DT_UINT64"}


class HistogramProto(Message):
    """A histogram: TF1's default exponential buckets hold counts ``bucket[i]`` of the values in
    ``[bucket_limit[i-1], bucket_limit[i])``."""

    FULL_NAME = "tensorflow.HistogramProto"
    FIELDS = (Field("min", 1, "double"), Field("max", 2, "double"), Field("num", 3, "double"),
              Field("sum", 4, "double"), Field("sum_squares", 5, "double"),
              Field("bucket_limit", 6, "double", repeated=True),
              Field("bucket", 7, "double", repeated=True))


class TensorShapeProto(Message):
    """A tensor's shape: ``dim`` sizes (-1 unknown), or ``unknown_rank``."""

    class Dim(Message):
        FULL_NAME = "tensorflow.TensorShapeProto.Dim"
        FIELDS = (Field("size", 1, "int64"), Field("name", 2, "string"))

    FULL_NAME = "tensorflow.TensorShapeProto"
    FIELDS = (Field("dim", 2, Dim, repeated=True), Field("unknown_rank", 3, "bool"))


class TensorProto(Message):
    """A tensor's value: ``dtype`` (DataType enum), shape, and its elements in ``tensor_content``
    (raw little-endian bytes) or in the ``*_val`` field of its type (strings: ``string_val``)."""

    FULL_NAME = "tensorflow.TensorProto"
    FIELDS = (Field("dtype", 1, "enum", enum=_DATA_TYPES),
              Field("tensor_shape", 2, TensorShapeProto), Field("version_number", 3, "int32"),
              Field("tensor_content", 4, "bytes"),
              Field("half_val", 13, "int32", repeated=True),
              Field("float_val", 5, "float", repeated=True),
              Field("double_val", 6, "double", repeated=True),
              Field("int_val", 7, "int32", repeated=True),
              Field("string_val", 8, "bytes", repeated=True),
              Field("scomplex_val", 9, "float", repeated=True),
              Field("int64_val", 10, "int64", repeated=True),
              Field("bool_val", 11, "bool", repeated=True),
              Field("dcomplex_val", 12, "double", repeated=True),
              Field("uint32_val", 16, "uint32", repeated=True),
              Field("uint64_val", 17, "uint64", repeated=True))


class SummaryMetadata(Message):
    """What a summary value is: chiefly the TensorBoard plugin that shows it."""

    class PluginData(Message):
        FULL_NAME = "tensorflow.SummaryMetadata.PluginData"
        FIELDS = (Field("plugin_name", 1, "string"), Field("content", 2, "bytes"))

    FULL_NAME = "tensorflow.SummaryMetadata"
    FIELDS = (Field("plugin_data", 1, PluginData), Field("display_name", 2, "string"),
              Field("summary_description", 3, "string"),
              Field("data_class", 4, "enum", enum={0: "DATA_CLASS_UNKNOWN", 1: "DATA_CLASS_SCALAR",
                                                   2: "DATA_CLASS_TENSOR",
                                                   3: "DATA_CLASS_BLOB_SEQUENCE"}))


class _Image(Message):
    """An encoded (PNG) image; ``colorspace`` 1 grayscale, 3 RGB, 4 RGBA."""

    FULL_NAME = "tensorflow.Summary.Image"
    FIELDS = (Field("height", 1, "int32"), Field("width", 2, "int32"),
              Field("colorspace", 3, "int32"), Field("encoded_image_string", 4, "bytes"))


class _Audio(Message):
    """An encoded audio clip."""

    FULL_NAME = "tensorflow.Summary.Audio"
    FIELDS = (Field("sample_rate", 1, "float"), Field("num_channels", 2, "int64"),
              Field("length_frames", 3, "int64"), Field("encoded_audio_string", 4, "bytes"),
              Field("content_type", 5, "string"))


class _Value(Message):
    """One tagged value; at most one of the ``value`` oneof's fields is set."""

    FULL_NAME = "tensorflow.Summary.Value"
    FIELDS = (Field("node_name", 7, "string"), Field("tag", 1, "string"),
              Field("metadata", 9, SummaryMetadata),
              Field("simple_value", 2, "float", oneof="value"),
              Field("obsolete_old_style_histogram", 3, "bytes", oneof="value"),
              Field("image", 4, _Image, oneof="value"),
              Field("histo", 5, HistogramProto, oneof="value"),
              Field("audio", 6, _Audio, oneof="value"),
              Field("tensor", 8, TensorProto, oneof="value"))


class Summary(Message):
    """A list of tagged values (scalars, images, histograms, audio, tensors) for TensorBoard:
    what summary ops output and ``FileWriter.add_summary`` writes."""

    Image, Audio, Value = _Image, _Audio, _Value
    FULL_NAME = "tensorflow.Summary"
    FIELDS = (Field("value", 1, _Value, repeated=True),)


class SessionLog(Message):
    """A session's START, STOP or CHECKPOINT, written to an event file."""

    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    FULL_NAME = "tensorflow.SessionLog"
    FIELDS = (Field("status", 1, "enum", enum={0: "STATUS_UNSPECIFIED", 1: "START", 2: "STOP",
                                               3: "CHECKPOINT"}),
              Field("checkpoint_path", 2, "string"), Field("msg", 3, "string"))


class TaggedRunMetadata(Message):
    """A session.run's serialized RunMetadata under a tag (``FileWriter.add_run_metadata``)."""

    FULL_NAME = "tensorflow.TaggedRunMetadata"
    FIELDS = (Field("tag", 1, "string"), Field("run_metadata", 2, "bytes"))


class SourceMetadata(Message):
    """Which program wrote an event file (set on its first event)."""

    FULL_NAME = "tensorflow.SourceMetadata"
    FIELDS = (Field("writer", 1, "string"),)


class Event(Message):
    """One record of an event file: a summary, a graph, a session log ... at a step and time."""

    FULL_NAME = "tensorflow.Event"
    FIELDS = (Field("wall_time", 1, "double"), Field("step", 2, "int64"),
              Field("file_version", 3, "string", oneof="what"),
              Field("graph_def", 4, "bytes", oneof="what"),
              Field("summary", 5, Summary, oneof="what"),
              Field("session_log", 7, SessionLog, oneof="what"),
              Field("tagged_run_metadata", 8, TaggedRunMetadata, oneof="what"),
              Field("meta_graph_def", 9, "bytes", oneof="what"),
              Field("source_metadata", 10, SourceMetadata))


# -- the graph and run metadata TensorBoard's graph view shows ------------------------------------
class _ListValue(Message):
    FULL_NAME = "tensorflow.AttrValue.ListValue"
    FIELDS = (Field("s", 2, "bytes", repeated=True), Field("i", 3, "int64", repeated=True),
              Field("f", 4, "float", repeated=True), Field("b", 5, "bool", repeated=True),
              Field("type", 6, "enum", repeated=True, enum=_DATA_TYPES),
              Field("shape", 7, TensorShapeProto, repeated=True),
              Field("tensor", 8, TensorProto, repeated=True))


class AttrValue(Message):
    """One attr of a NodeDef: a string, int, float, bool, dtype, shape, tensor or a list of one
    of those."""

    ListValue = _ListValue
    FULL_NAME = "tensorflow.AttrValue"
    FIELDS = (Field("list", 1, _ListValue, oneof="value"), Field("s", 2, "bytes", oneof="value"),
              Field("i", 3, "int64", oneof="value"), Field("f", 4, "float", oneof="value"),
              Field("b", 5, "bool", oneof="value"),
              Field("type", 6, "enum", oneof="value", enum=_DATA_TYPES),
              Field("shape", 7, TensorShapeProto, oneof="value"),
              Field("tensor", 8, TensorProto, oneof="value"))


class NodeDefProto(Message):
    """An op of a GraphDef (TensorFlow's NodeDef proto; zps's NodeDef is its plain-data form)."""

    FULL_NAME = "tensorflow.NodeDef"
    FIELDS = (Field("name", 1, "string"), Field("op", 2, "string"),
              Field("input", 3, "string", repeated=True), Field("device", 4, "string"),
              Field("attr", 5, AttrValue, map_key="string"))


class GraphDefProto(Message):
    """A graph as TensorFlow's GraphDef proto (its nodes only), for TensorBoard."""

    FULL_NAME = "tensorflow.GraphDef"
    FIELDS = (Field("node", 1, NodeDefProto, repeated=True),)


class _NodeExecStats(Message):
    FULL_NAME = "tensorflow.NodeExecStats"
    FIELDS = (Field("node_name", 1, "string"), Field("all_start_micros", 2, "int64"),
              Field("op_start_rel_micros", 3, "int64"), Field("op_end_rel_micros", 4, "int64"),
              Field("all_end_rel_micros", 5, "int64"), Field("timeline_label", 8, "string"),
              Field("scheduled_micros", 9, "int64"), Field("thread_id", 10, "uint32"))


class _DeviceStepStats(Message):
    FULL_NAME = "tensorflow.DeviceStepStats"
    FIELDS = (Field("device", 1, "string"),
              Field("node_stats", 2, _NodeExecStats, repeated=True))


class _StepStats(Message):
    FULL_NAME = "tensorflow.StepStats"
    FIELDS = (Field("dev_stats", 1, _DeviceStepStats, repeated=True),)


class RunMetadataProto(Message):
    """A traced session.run as TensorFlow's RunMetadata proto (per-op times of each device, and
    the partition graphs); zps's ``tf.RunMetadata`` is its plain-Python form."""

    StepStats, DeviceStepStats, NodeExecStats = _StepStats, _DeviceStepStats, _NodeExecStats
    FULL_NAME = "tensorflow.RunMetadata"
    FIELDS = (Field("step_stats", 1, _StepStats),
              Field("partition_graphs", 3, GraphDefProto, repeated=True))
