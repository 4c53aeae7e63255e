"""``tf.io``: parsing Examples, raw bytes and files; TFRecord files; CSV; input queues.

TF1's ``tf.io`` names (and ``tf.io.gfile``) for what zps also has at the top level (``tf.parse_example``,
``tf.decode_raw``, ``tf.read_file`` ...), in ``tf.python_io`` and in ``tf.gfile``.

>>> import zps as tf
>>> tf.io.parse_single_example is tf.parse_single_example
True
"""

from zps import _io_gfile as gfile  # noqa: F401 - tf.io.gfile: exists, makedirs, GFile ...
from zps.ops.data_flow_ops import PaddingFIFOQueue, QueueBase, RandomShuffleQueue
from zps.ops.image_codec_ops import (
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    is_jpeg,
)
from zps.ops.parsing_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    SparseFeature,
    VarLenFeature,
    decode_raw,
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
    read_file,
)
from zps.ops.serialization_ops import parse_tensor, serialize_tensor
from zps.ops.string_ops import decode_csv
from zps.python_io import *  # noqa: F403 - TFRecordWriter, TFRecordOptions ...

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "PaddingFIFOQueue", "QueueBase",
           "RandomShuffleQueue", "SparseFeature", "TFRecordCompressionType", "TFRecordOptions",
           "TFRecordWriter", "VarLenFeature", "decode_bmp", "decode_csv", "decode_gif",
           "decode_image", "decode_jpeg", "decode_png", "decode_raw", "encode_jpeg", "encode_png",
           "is_jpeg", "parse_example",
           "parse_sequence_example", "parse_single_example", "parse_single_sequence_example",
           "parse_tensor", "read_file", "serialize_tensor", "tf_record_iterator"]
