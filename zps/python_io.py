"""``tf.python_io``: TFRecord files, byte-compatible with TensorFlow's.

A TFRecord file is a sequence of records, each framed as (TF's ``core/lib/io/record_writer.cc``)::

    uint64 length (little endian)
    uint32 masked crc32c of the 8 length bytes
    byte   data[length]
    uint32 masked crc32c of data

where ``masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8`` (mod 2**32). The whole file may
be compressed with GZIP or ZLIB. ``tfrecord_records`` reads that framing and is shared by
``tf_record_iterator`` and ``tf.data.TFRecordDataset``.

>>> import os, tempfile, zps as tf
>>> path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
>>> with tf.python_io.TFRecordWriter(path) as w:
...     w.write(b"first")
...     w.write(b"second")
>>> list(tf.python_io.tf_record_iterator(path))
[b'first', b'second']
"""

import gzip
import io
import struct
import zlib

from zps.framework import crc32c, errors
from zps.gfile import _os_errors  # one mapping of OS errors to TF1's, shared with tf.gfile

# -- crc32c (Castagnoli): zps.framework.crc32c ------------------------------------------------------
_crc32c, _masked_crc32c = crc32c.crc32c, crc32c.masked_crc32c


# -- options ---------------------------------------------------------------------------------------
class TFRecordCompressionType:
    """The compression of a TFRecord file."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_COMPRESSION_NAMES = {None: TFRecordCompressionType.NONE, "": TFRecordCompressionType.NONE,
                      "NONE": TFRecordCompressionType.NONE, "ZLIB": TFRecordCompressionType.ZLIB,
                      "GZIP": TFRecordCompressionType.GZIP}


def _compression(options):
    """The TFRecordCompressionType of ``options`` (TFRecordOptions, a name, a type or None)."""
    value = options.compression_type if isinstance(options, TFRecordOptions) else options
    if value in _COMPRESSION_NAMES:
        return _COMPRESSION_NAMES[value]
    if value in (TFRecordCompressionType.NONE, TFRecordCompressionType.ZLIB,
                 TFRecordCompressionType.GZIP):
        return value
    raise ValueError("Unknown TFRecord compression type %r: use None, '', 'ZLIB' or 'GZIP'"
                     % (value,))


class TFRecordOptions:
    """Options of a TFRecord file: ``TFRecordOptions("GZIP")`` or
    ``TFRecordOptions(TFRecordCompressionType.GZIP)``."""

    compression_type_map = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP"}

    def __init__(self, compression_type=None):
        self.compression_type = compression_type
        _compression(self)     # validated now, not at the first write

    @classmethod
    def get_compression_type_string(cls, options):
        """'' / 'ZLIB' / 'GZIP' for ``options`` (None: '')."""
        return cls.compression_type_map[_compression(options)]


# -- framing ---------------------------------------------------------------------------------------
def _frame(data):
    length = struct.pack("<Q", len(data))
    return b"".join([length, struct.pack("<I", _masked_crc32c(length)), data,
                     struct.pack("<I", _masked_crc32c(data))])


def _open_read(path, compression):
    with _os_errors(path):
        raw = open(path, "rb")  # closed by the caller
    if compression == TFRecordCompressionType.GZIP:
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    if compression == TFRecordCompressionType.ZLIB:
        with raw:
            return io.BytesIO(zlib.decompress(raw.read())), raw
    return raw, raw


def _read_exact(stream, n, path, offset):
    try:
        data = stream.read(n)
    except (OSError, EOFError, zlib.error) as e:
        raise errors.DataLossError(None, None, "%s: corrupted compressed data at %d: %s"
                                   % (path, offset, e)) from e
    return data


def tfrecord_records(path, compression_type=None):
    """Yield the records (bytes) of the TFRecord file ``path``, checking each one's CRCs.

    ``compression_type``: None/'' , 'ZLIB', 'GZIP' (or TFRecordOptions / the enum). A bad CRC
    or a truncated record raises DataLossError naming the file and the offset.
    """
    stream, raw = _open_read(str(path), _compression(compression_type))
    offset = 0
    try:
        while True:
            header = _read_exact(stream, 12, path, offset)
            if not header:
                return
            if len(header) < 12:
                raise errors.DataLossError(None, None, "truncated record at %d in %s"
                                           % (offset, path))
            length_bytes, length_crc = header[:8], struct.unpack("<I", header[8:])[0]
            if _masked_crc32c(length_bytes) != length_crc:
                raise errors.DataLossError(None, None, "corrupted record at %d in %s (bad length "
                                           "checksum)" % (offset, path))
            length = struct.unpack("<Q", length_bytes)[0]
            body = _read_exact(stream, length + 4, path, offset)
            if len(body) < length + 4:
                raise errors.DataLossError(None, None, "truncated record at %d in %s"
                                           % (offset, path))
            data = body[:length]
            if _masked_crc32c(data) != struct.unpack("<I", body[length:])[0]:
                raise errors.DataLossError(None, None, "corrupted record at %d in %s (bad data "
                                           "checksum)" % (offset, path))
            offset += 12 + length + 4
            yield data
    finally:
        stream.close()
        raw.close()


def tf_record_iterator(path, options=None):
    """An iterator over the records (bytes) of the TFRecord file ``path``."""
    return tfrecord_records(path, options)


class TFRecordWriter:
    """Writes records to a TFRecord file (compressed as ``options`` say).

    >>> import os, tempfile, zps as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "z.tfrecord.gz")
    >>> with tf.python_io.TFRecordWriter(path, tf.python_io.TFRecordOptions("GZIP")) as w:
    ...     w.write(b"x")
    >>> list(tf.python_io.tf_record_iterator(path, tf.python_io.TFRecordOptions("GZIP")))
    [b'x']
    """

    def __init__(self, path, options=None):
        self._path = str(path)
        self._compression = _compression(options)
        with _os_errors(self._path):
            self._raw = open(self._path, "wb")  # closed by close()
        if self._compression == TFRecordCompressionType.GZIP:
            self._out = gzip.GzipFile(fileobj=self._raw, mode="wb")
        elif self._compression == TFRecordCompressionType.ZLIB:
            self._zlib = zlib.compressobj()
            self._out = None
        else:
            self._out = self._raw

    def write(self, record):
        """Append one record (bytes; a str is written as UTF-8)."""
        if self._raw is None:
            raise errors.FailedPreconditionError(None, None, "TFRecordWriter for %s is closed"
                                                 % self._path)
        data = _frame(record.encode("utf-8") if isinstance(record, str) else bytes(record))
        if self._out is None:
            self._raw.write(self._zlib.compress(data))
        else:
            self._out.write(data)

    def flush(self):
        if self._out is None:
            self._raw.write(self._zlib.flush(zlib.Z_SYNC_FLUSH))
        elif self._out is not self._raw:
            self._out.flush()
        self._raw.flush()

    def close(self):
        """Finish the file (and its compression stream)."""
        if self._raw is None:
            return
        if self._out is None:
            self._raw.write(self._zlib.flush())
        elif self._out is not self._raw:
            self._out.close()
        self._raw.close()
        self._raw = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
