"""Reading checkpoints TensorFlow wrote (``tf.train.Saver``'s V2 format, a "tensor bundle").

A TF1 program moving to zps keeps its trained models: ``Saver.restore``, ``NewCheckpointReader``,
``load_checkpoint`` and ``init_from_checkpoint`` read a checkpoint TensorFlow saved as they read
zps's own (``checkpoint_format.CheckpointReader`` hands the work here when the index is a bundle's).

The format, as TensorFlow's ``tensor_bundle.cc`` writes it:

- ``P.index`` is a LevelDB table (TF's ``table_builder``): data blocks of prefix-compressed
  ``(key, value)`` entries and restart points, each block followed by a 1-byte compression type and
  a 4-byte checksum; an index block of ``(separator, block handle)`` entries; a 48-byte footer
  ending in the table magic. Key ``""`` holds the ``BundleHeaderProto`` (shard count, byte order);
  every other key a tensor's ``BundleEntryProto`` (dtype, shape, shard, offset, size, crc32c, or
  the slices of a partitioned variable).
- ``P.data-SSSSS-of-NNNNN`` hold the tensors' bytes: numbers as raw little-endian values; strings
  as the varint64 lengths of the elements, a 4-byte checksum of those, then their bytes.
- A partitioned variable has a full entry listing its slices (``TensorSliceProto`` extents) and
  one data entry per slice, under ``EncodeTensorNameSlice``'s key (TF's ``OrderedCode``: 0, the
  name, the rank, then start and length of each dimension).

Everything is parsed here without protobuf or TensorFlow and validated (sizes, offsets, shapes
against byte counts, block bounds), and each tensor's bytes against its crc32c checksum, as
TensorFlow's reader does (also when only some rows of a tensor are read: ``BundleShard.read``);
a malformed or corrupted file raises DataLossError. Only what zps's dtypes can hold is read: a
bfloat16 or quantized tensor raises UnimplementedError naming it when read.
"""

import os
import struct

import numpy as np

from zps.framework import crc32c, errors
from zps.framework.protobuf import DecodeError, fields, signed64
from zps.framework.protobuf import decode_varint as _varint  # LevelDB's varints are protobuf's

MAGIC = 0xdb4775248b80fb57
FOOTER_BYTES = 48
BLOCK_TRAILER_BYTES = 5
_STREAM_BYTES = 1 << 20   # the piece size of reading tensor bytes only through their checksum

# TF's DataType enum -> (zps dtype name, little-endian numpy type); strings are handled apart.
_DTYPES = {1: ("float32", "<f4"), 2: ("float64", "<f8"), 3: ("int32", "<i4"), 4: ("uint8", "u1"),
           5: ("int16", "<i2"), 6: ("int8", "i1"), 7: ("string", None), 9: ("int64", "<i8"),
           10: ("bool", "?"), 19: ("float16", "<f2"), 8: ("complex64", "<c8"),
           18: ("complex128", "<c16"), 17: ("uint16", "<u2"), 22: ("uint32", "<u4"),
           23: ("uint64", "<u8")}
_TF_NAMES = {14: "bfloat16", 11: "qint8", 12: "quint8", 13: "qint32", 15: "qint16",
             16: "quint16", 20: "resource", 21: "variant"}


def is_bundle_index(raw):
    """Whether ``raw`` (an index file's bytes) is a LevelDB table: TensorFlow's bundle index."""
    return len(raw) >= FOOTER_BYTES and struct.unpack_from("<Q", raw, len(raw) - 8)[0] == MAGIC


class _CorruptError(Exception):
    pass


# -- the bundle's protos -------------------------------------------------------------------------
def _shape(buf):
    dims = []
    for number, _, value in fields(buf):
        if number == 2:      # TensorShapeProto.dim
            size = next((signed64(v) for n, _, v in fields(value) if n == 1), 0)
            dims.append(size)
        elif number == 3 and value:
            raise _CorruptError("a tensor of unknown rank")
    if any(d < 0 for d in dims):
        raise _CorruptError("negative dimension in shape %s" % dims)
    return dims


def _slice(buf, full):
    """A TensorSliceProto: ``(starts, lengths)``, a length of -1 where the extent is whole."""
    extents = [value for number, _, value in fields(buf) if number == 1]
    if len(extents) != len(full):
        raise _CorruptError("a slice of rank %d of a tensor of rank %d" % (len(extents), len(full)))
    starts, lengths = [], []
    for ext in extents:
        f = {n: signed64(v) for n, _, v in fields(ext)}
        starts.append(f.get(1, 0))
        lengths.append(f.get(2, -1))
    return starts, lengths


def _entry(buf):
    e = {"dtype": 0, "shape": [], "shard": 0, "offset": 0, "size": 0, "crc32c": 0, "slices": []}
    for number, _, value in fields(buf):
        if number == 1:
            e["dtype"] = value
        elif number == 2:
            e["shape"] = _shape(value)
        elif number == 3:
            e["shard"] = value
        elif number == 4:
            e["offset"] = signed64(value)
        elif number == 5:
            e["size"] = signed64(value)
        elif number == 6:
            e["crc32c"] = value   # masked, of the bytes as read back (see BundleShard.read)
        elif number == 7:
            e["slices"].append(value)
    return e


# -- the LevelDB table ---------------------------------------------------------------------------
def _block(raw, handle_bytes):
    offset, pos = _varint(handle_bytes, 0)
    size, _ = _varint(handle_bytes, pos)
    if offset + size + BLOCK_TRAILER_BYTES > len(raw):
        raise _CorruptError("a block at %d of %d bytes runs past the file" % (offset, size))
    if raw[offset + size] != 0:
        raise _CorruptError("block at %d is compressed (type %d): only uncompressed indexes are read"
                       % (offset, raw[offset + size]))
    return memoryview(raw)[offset:offset + size]


def _block_entries(block):
    if len(block) < 4:
        raise _CorruptError("a block shorter than its restart count")
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * restarts
    if end < 0:
        raise _CorruptError("%d restart points do not fit a block of %d bytes" % (restarts, len(block)))
    pos, key = 0, b""
    while pos < end:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        value_len, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + value_len > end:
            raise _CorruptError("an entry runs past its block")
        key = key[:shared] + bytes(block[pos:pos + unshared])
        pos += unshared
        yield key, bytes(block[pos:pos + value_len])
        pos += value_len


def _table(raw):
    """Every ``(key, value)`` of the table, in order."""
    footer = memoryview(raw)[len(raw) - FOOTER_BYTES:]
    _, pos = _varint(footer, 0)       # metaindex offset
    _, pos = _varint(footer, pos)     # metaindex size
    index = _block(raw, footer[pos:])
    for _, handle in _block_entries(index):
        yield from _block_entries(_block(raw, handle))


# -- TF's OrderedCode, for the keys of slices -----------------------------------------------------
def _ordered_num(n):
    b = n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big") if n else b""
    return bytes([len(b)]) + b


def _ordered_string(s):
    return s.replace(b"\xff", b"\xff\x00").replace(b"\x00", b"\x00\xff") + b"\x00\x01"


_HEADER_BITS = [(0, 0), (0x80, 0), (0xc0, 0), (0xe0, 0), (0xf0, 0), (0xf8, 0), (0xfc, 0),
                (0xfe, 0), (0xff, 0), (0xff, 0x80), (0xff, 0xc0)]


def _ordered_signed(v):
    x = ~v if v < 0 else v
    if x < 64:
        return bytes([(0x80 ^ v) & 0xff])
    n = x.bit_length() // 7 + 1
    buf = bytearray((v & ((1 << 64) - 1)).to_bytes(8, "big"))
    buf[0:0] = b"\xff\xff" if v < 0 else b"\0\0"
    out = buf[len(buf) - n:]
    out[0] ^= _HEADER_BITS[n][0]
    out[1] ^= _HEADER_BITS[n][1]
    return bytes(out)


def slice_key(name, starts, lengths):
    """``checkpoint::EncodeTensorNameSlice``: the key of one saved slice of tensor ``name``."""
    key = _ordered_num(0) + _ordered_string(name.encode()) + _ordered_num(len(starts))
    for start, length in zip(starts, lengths):
        key += _ordered_signed(start) + _ordered_signed(length)
    return key


# -- the reader's view ---------------------------------------------------------------------------
def _key(b):
    return b.decode("latin-1")   # slice keys are binary; names are ASCII in practice


def parse_index(raw, prefix):
    """``(shards, tensors)`` of a bundle index, in ``checkpoint_format.CheckpointReader``'s shape:
    ``shards`` the data files' :class:`BundleShard` makers, ``tensors`` name -> ``{"dtype",
    "shape", "shard", "key"}`` or ``{"dtype", "shape", "slices": [...]}``. DataLossError if
    malformed."""
    path = prefix + ".index"
    try:
        header, entries = None, {}
        for key, value in _table(raw):
            if key == b"":
                header = {n: v for n, _, v in fields(value)}
            else:
                entries[key] = _entry(value)
        if header is None:
            raise _CorruptError("no bundle header (the entry of key \"\")")
        num_shards = header.get(1, 0)
        if header.get(2, 0) != 0:
            raise _CorruptError("a big-endian bundle")
        if not 1 <= num_shards <= 1 << 16:
            raise _CorruptError("%d shards" % num_shards)
        data = [{} for _ in range(num_shards)]
        tensors = {}
        for key, e in entries.items():
            if key.startswith(b"\x00"):
                continue   # a slice's data: reached through its tensor's entry
            name = key.decode("utf-8")
            dtype = _dtype_name(e["dtype"])
            info = {"dtype": dtype, "shape": e["shape"]}
            if e["slices"]:
                info["slices"] = [_slice_info(name, s, e, entries, data, num_shards)
                                  for s in e["slices"]]
            else:
                info["shard"], info["key"] = _place(name, key, e, data, num_shards)
            tensors[name] = info
    except (_CorruptError, DecodeError, UnicodeDecodeError, struct.error) as exc:
        raise errors.DataLossError(None, None, "Checkpoint index %s is not a valid TensorFlow "
                                   "checkpoint index: %s" % (path, exc)) from None
    names = ["%s.data-%05d-of-%05d" % (os.path.basename(prefix), i, num_shards)
             for i in range(num_shards)]
    return [(n, d) for n, d in zip(names, data)], tensors


def _dtype_name(code):
    if code in _DTYPES:
        return _DTYPES[code][0]
    return "tf:" + _TF_NAMES.get(code, str(code))


def _place(name, key, e, data, num_shards):
    if not 0 <= e["shard"] < num_shards or e["offset"] < 0 or e["size"] < 0:
        raise _CorruptError("tensor %r: shard %d / offset %d / size %d out of range"
                       % (name, e["shard"], e["offset"], e["size"]))
    data[e["shard"]][_key(key)] = (e["dtype"], e["shape"], e["offset"], e["size"], e["crc32c"])
    return e["shard"], _key(key)


def _slice_info(name, buf, full_entry, entries, data, num_shards):
    full = full_entry["shape"]
    starts, lengths = _slice(buf, full)
    shape = [d if n < 0 else n for n, d in zip(lengths, full)]
    if any(s < 0 or s + n > d for s, n, d in zip(starts, shape, full)):
        raise _CorruptError("tensor %r: slice at %s of shape %s lies outside %s"
                       % (name, starts, shape, full))
    key = slice_key(name, starts, lengths)
    e = entries.get(key)
    if e is None:
        raise _CorruptError("tensor %r: the slice at %s of shape %s has no data entry"
                       % (name, starts, shape))
    if e["dtype"] != full_entry["dtype"] or e["shape"] != shape:
        raise _CorruptError("tensor %r: the slice at %s is %s%s, not %s%s" % (
            name, starts, _dtype_name(e["dtype"]), e["shape"], _dtype_name(full_entry["dtype"]),
            shape))
    shard, k = _place(name, key, e, data, num_shards)
    return {"start": starts, "shape": shape, "shard": shard, "key": k}


class BundleShard:
    """One data file of a bundle, read as ``checkpoint_format.SafetensorsFile`` is:
    ``dtype(key)``, ``shape(key)``, ``read(key)``."""

    def __init__(self, path, entries):
        self.path = path
        self._entries = entries
        self._verified = set()   # keys whose whole bytes matched their crc32c
        try:
            self._size = os.path.getsize(path)
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, "Checkpoint shard %s not found" % path) from None

    def dtype(self, key):
        return _dtype_name(self._entries[key][0])

    def shape(self, key):
        return list(self._entries[key][1])

    def read(self, key, rows=None):
        """The tensor ``key``; with ``rows=(lo, hi)`` (a valid range of its leading dimension,
        as ``CheckpointReader.get_slice`` passes), only those rows.

        A number tensor's rows are contiguous bytes and only they are kept in memory; its crc32c
        covers the whole tensor, so the first read of a tensor streams the other rows through the
        checksum in 1 MiB pieces (a corrupted checkpoint never yields a wrong value, as with TF,
        which always reads saved tensors whole); later reads of it from this shard read just
        their rows. A string tensor is read whole (its elements are variable-length), then cut.
        """
        code, shape, offset, size, stored = self._entries[key]
        if code not in _DTYPES:
            raise errors.UnimplementedError(
                None, None, "Checkpoint %s: tensor %r is a TensorFlow %s, which zps has no dtype "
                "for" % (self.path, key, _dtype_name(code)[3:]))
        if offset + size > self._size:
            raise self._corrupt(key, "its %d bytes at %d run past the file's %d" % (
                size, offset, self._size))
        count = int(np.prod(shape, dtype=np.int64))
        name, le = _DTYPES[code]
        lo, hi = rows if rows is not None else (0, shape[0] if shape else 1)
        with open(self.path, "rb") as f:
            f.seek(offset)
            if name == "string":
                whole = self._strings(key, f.read(size), count, shape, stored)
                return whole if rows is None else whole[lo:hi].copy()
            if size != count * np.dtype(le).itemsize:   # checked before allocating anything
                raise self._corrupt(key, "%d bytes for %s%s" % (size, name, shape))
            arr = np.empty(shape if rows is None else [hi - lo] + shape[1:], le)
            begin = lo * (size // shape[0]) if lo else 0   # where the rows' bytes start
            end = begin + arr.nbytes
            verify = size and key not in self._verified
            if verify:
                crc = self._stream(f, key, begin, 0)   # the rows before: checksummed, not kept
            else:
                f.seek(offset + begin)
            if arr.nbytes and f.readinto(memoryview(arr.reshape(-1)).cast("B")) != arr.nbytes:
                raise self._corrupt(key, "its bytes end early")
            if verify:
                crc = self._stream(f, key, size - end, crc32c.crc32c(arr.reshape(-1), crc))
                self._check_crc(key, crc, stored)
                self._verified.add(key)
        if name == "bool" and arr.size and arr.view(np.uint8).max() > 1:
            raise self._corrupt(key, "a bool tensor holds bytes other than 0 and 1")
        return arr.astype(arr.dtype.newbyteorder("="), copy=False)

    def _stream(self, f, key, n, crc):
        """The crc32c, continued from ``crc``, of the next ``n`` bytes of ``f`` (read, not kept)."""
        while n:
            piece = f.read(min(n, _STREAM_BYTES))
            if not piece:
                raise self._corrupt(key, "its bytes end early")
            crc = crc32c.crc32c(piece, crc)
            n -= len(piece)
            del piece   # before the next read: one piece in memory at a time
        return crc

    def _strings(self, key, raw, count, shape, stored):
        # TF's ReadStringTensor: the checksum runs over each length (as a little-endian uint32,
        # or uint64 past 4 GiB), then the stored (masked) checksum of the lengths, then the bytes.
        try:
            lengths, pos, crc = [], 0, 0
            for _ in range(count):
                n, pos = _varint(raw, pos)
                lengths.append(n)
                crc = crc32c.crc32c(struct.pack("<I" if n <= 0xFFFFFFFF else "<Q", n), crc)
            if pos + 4 + sum(lengths) != len(raw):
                raise _CorruptError("string lengths do not add up to the entry's size")
        except (_CorruptError, DecodeError) as exc:
            raise self._corrupt(key, str(exc)) from None
        if raw:
            if crc32c.unmask(struct.unpack_from("<I", raw, pos)[0]) != crc:
                raise self._corrupt(key, "the checksum of its string lengths does not match")
            crc = crc32c.crc32c(raw[pos:], crc)   # the lengths' checksum, then the bytes
            self._check_crc(key, crc, stored)
        pos += 4
        out = np.empty(count, dtype=object)
        for i, n in enumerate(lengths):
            out[i] = raw[pos:pos + n]
            pos += n
        return out.reshape(shape)

    def _check_crc(self, key, actual, stored):
        if crc32c.unmask(stored) != actual:
            raise self._corrupt(key, "checksum does not match: stored %08x vs. %08x calculated on "
                                "the bytes read" % (crc32c.unmask(stored), actual))

    def _corrupt(self, key, what):
        return errors.DataLossError(None, None, "Checkpoint shard %s is corrupt: tensor %r: %s"
                                    % (self.path, key, what))
