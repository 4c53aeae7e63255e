"""``tf.data``: input pipelines (TF1's ``tf.compat.v1.data``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     ds = tf.data.Dataset.from_tensor_slices([1.0, 2.0, 3.0]).map(lambda x: x * 2).batch(2)
...     batch = tf.data.make_one_shot_iterator(ds).get_next()
...     with tf.Session() as sess:
...         print(sess.run(batch).tolist(), sess.run(batch).tolist())
[2.0, 4.0] [6.0]
"""

from zps.data import experimental  # noqa: F401 - tf.data.experimental
from zps.data.dataset import Dataset, FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from zps.data.experimental import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from zps.data.iterator import (
    Iterator,
    NumpyIterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from zps.data.options import Options, ThreadingOptions

__all__ = ["AUTOTUNE", "Dataset", "FixedLengthRecordDataset", "INFINITE_CARDINALITY", "Iterator",
           "NumpyIterator", "Options", "TFRecordDataset", "TextLineDataset", "ThreadingOptions",
           "UNKNOWN_CARDINALITY", "get_output_classes", "get_output_shapes", "get_output_types",
           "make_initializable_iterator", "make_one_shot_iterator"]
