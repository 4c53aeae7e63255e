"""TFRecord files: zps reads what TensorFlow 2.21 wrote (tests/fixtures/tf_records.tfrecord*,
written by tf.compat.v1.python_io.TFRecordWriter) and writes byte-identical files."""

import gzip
import os

import pytest

import zps as tf
from zps.python_io import _crc32c, _masked_crc32c, tfrecord_records

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
# The records in the fixtures, as written by TF.
RECORDS = [b"", b"a", b"hello tfrecord", bytes(range(256)) * 3]


def test_crc32c_known_values():
    # RFC 3720's check value and TF's crc32c_test.cc vectors.
    assert _crc32c(b"123456789") == 0xE3069283
    assert _crc32c(bytes(32)) == 0x8A9136AA
    assert _crc32c(bytes([0xFF] * 32)) == 0x62A8AB43
    assert _crc32c(b"world", _crc32c(b"hello ")) == _crc32c(b"hello world")
    assert _masked_crc32c(b"") == 0xA282EAD8     # crc 0, rotated, plus TF's mask delta


def test_reads_files_written_by_tf():
    path = os.path.join(FIXTURES, "tf_records.tfrecord")
    assert list(tf.python_io.tf_record_iterator(path)) == RECORDS
    gz = os.path.join(FIXTURES, "tf_records.tfrecord.gz")
    opts = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
    assert list(tf.python_io.tf_record_iterator(gz, opts)) == RECORDS
    assert list(tfrecord_records(gz, "GZIP")) == RECORDS


def test_writes_the_bytes_tf_writes(tmp_path):
    path = str(tmp_path / "out.tfrecord")
    with tf.python_io.TFRecordWriter(path) as w:
        for r in RECORDS:
            w.write(r)
    with open(path, "rb") as mine, open(os.path.join(FIXTURES, "tf_records.tfrecord"), "rb") as tfs:
        assert mine.read() == tfs.read()


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB", None, ""])
def test_round_trip_compressed(tmp_path, compression):
    path = str(tmp_path / "c.tfrecord")
    opts = tf.python_io.TFRecordOptions(compression)
    with tf.python_io.TFRecordWriter(path, opts) as w:
        w.write(b"x")
        w.flush()
        w.write("y" * 1000)
    assert list(tf.python_io.tf_record_iterator(path, opts)) == [b"x", b"y" * 1000]
    if compression == "GZIP":
        with gzip.open(path, "rb") as f:        # a plain gzip stream of the framed records
            assert f.read(8) == (1).to_bytes(8, "little")
    assert tf.python_io.TFRecordOptions.get_compression_type_string(opts) == (compression or "")


def test_corruption_is_data_loss(tmp_path):
    with open(os.path.join(FIXTURES, "tf_records.tfrecord"), "rb") as f:
        data = f.read()
    bad = bytearray(data)
    bad[12 + 0 + 4 + 12 + 2] ^= 1        # a byte of the second record's data
    path = str(tmp_path / "bad.tfrecord")
    with open(path, "wb") as f:
        f.write(bytes(bad))
    records = tf.python_io.tf_record_iterator(path)
    assert next(records) == b""
    with pytest.raises(tf.errors.DataLossError, match="corrupted record at 16"):
        next(records)
    with open(path, "wb") as f:
        f.write(data[:-3])
    with pytest.raises(tf.errors.DataLossError, match="truncated record"):
        list(tf.python_io.tf_record_iterator(path))


def test_errors():
    with pytest.raises(tf.errors.NotFoundError, match="No such file"):
        list(tf.python_io.tf_record_iterator("/nonexistent/x.tfrecord"))
    with pytest.raises(ValueError, match="compression"):
        tf.python_io.TFRecordOptions("LZ4")
    with pytest.raises(tf.errors.NotFoundError):
        tf.python_io.TFRecordWriter("/nonexistent/dir/x.tfrecord")
