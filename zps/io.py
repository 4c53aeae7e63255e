"""``tf.io``: parsing Examples, raw bytes and files; TFRecord files; CSV; input queues.

TF1's ``tf.io`` names for what zps also has at the top level (``tf.parse_example``,
``tf.decode_raw``, ``tf.read_file`` ...) and in ``tf.python_io``.

>>> import zps as tf
>>> tf.io.parse_single_example is tf.parse_single_example
True
"""

from zps.ops.data_flow_ops import PaddingFIFOQueue, QueueBase, RandomShuffleQueue
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
from zps.ops.string_ops import decode_csv
from zps.python_io import *  # noqa: F403 - TFRecordWriter, TFRecordOptions ...

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "PaddingFIFOQueue", "QueueBase",
           "RandomShuffleQueue", "SparseFeature", "TFRecordCompressionType", "TFRecordOptions",
           "TFRecordWriter", "VarLenFeature", "decode_csv", "decode_raw", "parse_example",
           "parse_sequence_example", "parse_single_example", "parse_single_sequence_example",
           "read_file", "tf_record_iterator"]
