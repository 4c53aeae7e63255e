"""The checkpoint format: safetensors shards plus a JSON index. Nothing in it can execute code.

A checkpoint with prefix ``P`` is:

- shards ``P.data-00000-of-00002-<token>.safetensors`` (one per device of a sharded save), each a
  plain safetensors file: an 8-byte little-endian header length N, N bytes of JSON
  ``{key: {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, "__metadata__": {...}}``
  and the raw little-endian bytes. ``<token>`` is random per write, so saving to a prefix again
  never touches the files the current index points to.
- the index ``P.index``: JSON (the name is TF1's, so scripts testing ``os.path.exists(P + ".index")``
  keep working)::

      {"format": "zps-checkpoint", "version": 1,
       "shards": ["P.data-00000-of-00001-1a2b3c4d.safetensors"],     # basenames, same directory
       "tensors": {"w": {"dtype": "float32", "shape": [2, 3], "shard": 0, "key": "w"}}}

  A partitioned variable is one entry with its full shape and ``"slices"`` instead of
  ``"shard"``/``"key"``::

       "emb": {"dtype": "float32", "shape": [10, 4],
               "slices": [{"start": [0, 0], "shape": [5, 4], "shard": 0,
                           "key": "emb/.slice/10 4 0,5:0,4"}, ...]}

  Each slice is stored in its shard under a key made of the full name, ``/.slice/`` and TF1's
  slice spec (full shape, then ``offset,length`` per axis: ``slice_key``); the index is built
  from those keys, so every writer of a shard stays unaware of partitioning. A reader assembles
  the full tensor (``get_tensor``) or any region of it (``get_slice``), from whatever slicing
  the checkpoint was written with: that is how a model is re-sharded. Tensors are row-major, so
  a region reads only the rows of the leading dimension it spans (``SafetensorsFile.read(key,
  rows)``: one seek, one read of those bytes) and cuts the other dimensions in memory: a part of
  a big embedding, or a block of ``LoadAndRemapMatrix``, never holds the whole tensor.

String tensors have no safetensors dtype: a shard keeps them in its ``__metadata__`` under
``"zps.strings"``, a JSON text ``{key: {"shape": [...], "data": [base64, ...]}}``. Complex
tensors have none either: a complex64 (complex128) tensor of shape ``S`` is stored as its
``(real, imag)`` pairs, an F32 (F64) tensor of shape ``S + [2]`` (the same bytes), and the
shard's ``__metadata__`` marks it under ``"zps.complex"``, a JSON text ``{key: "complex64"}``;
the index records the complex dtype and shape ``S``. Other safetensors readers see the pairs.

Every file is written atomically (temp file in the same directory, flush, fsync, ``os.replace``,
fsync of the directory); the index is written after all the shards it names, so it is the commit
point of a save. Readers validate everything (sizes, offsets, dtypes, shapes against byte counts)
and raise DataLossError on a corrupt file.

>>> import os, tempfile, numpy as np
>>> d = tempfile.mkdtemp()
>>> entries = write_shard(os.path.join(d, "m"), 0, 1, {"w": np.arange(3.0)})
>>> write_index(os.path.join(d, "m"), [entries])
>>> CheckpointReader(os.path.join(d, "m")).get_tensor("w")
array([0., 1., 2.])
"""

import base64
import binascii
import glob
import json
import os
import secrets
import tempfile

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors, tf_bundle

FORMAT = "zps-checkpoint"
VERSION = 1
INDEX_SUFFIX = ".index"
STRINGS_KEY = "zps.strings"
COMPLEX_KEY = "zps.complex"
MAX_HEADER_BYTES = 100 * 1024 * 1024   # safetensors' own limit
MAX_INDEX_BYTES = 256 * 1024 * 1024
MAX_RANK = 32

# safetensors dtype <-> zps dtype (little-endian numpy types); anything else is rejected.
_ST_DTYPES = {"F16": "float16", "F32": "float32", "F64": "float64", "I8": "int8", "I16": "int16",
              "I32": "int32", "I64": "int64", "U8": "uint8", "U16": "uint16", "U32": "uint32",
              "U64": "uint64", "BOOL": "bool"}
_ST_BY_NAME = {v: k for k, v in _ST_DTYPES.items()}
_LE = {"float16": "<f2", "float32": "<f4", "float64": "<f8", "int8": "i1", "int16": "<i2",
       "int32": "<i4", "int64": "<i8", "uint8": "u1", "uint16": "<u2", "uint32": "<u4",
       "uint64": "<u8", "bool": "?", "complex64": "<c8", "complex128": "<c16"}
_COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}   # stored as pairs of these
_INDEX_DTYPES = frozenset(_LE) | {"string"}


# -- atomic files --------------------------------------------------------------------------------
def atomic_write(path, write):
    """Create ``path`` atomically: ``write(f)`` fills a temp file that then replaces ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not supported on this platform / filesystem
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- shards --------------------------------------------------------------------------------------
def shard_filename(prefix, shard, num_shards, token=None):
    """``P.data-0000s-of-0000n-<token>.safetensors`` (a fresh random token by default)."""
    return "%s.data-%05d-of-%05d-%s.safetensors" % (prefix, shard, num_shards,
                                                   token or secrets.token_hex(4))


def write_safetensors(path, tensors, metadata=None):
    """Write ``{key: ndarray}`` (numeric or string) as one safetensors file, atomically."""
    header, buffers, strings, complexes, offset = {}, [], {}, {}, 0
    for key in sorted(tensors):
        arr = np.asarray(tensors[key])
        dtype = _dtypes.as_dtype(arr.dtype)
        if dtype is _dtypes.string:
            strings[key] = {"shape": list(arr.shape),
                            "data": [base64.b64encode(_as_bytes(s)).decode("ascii")
                                     for s in arr.ravel()]}
            continue
        arr = np.asarray(arr, dtype=_LE[dtype.name])
        if not arr.flags.c_contiguous:
            arr = arr.copy()
        st_name, shape = _ST_BY_NAME.get(dtype.name), list(arr.shape)
        if dtype.is_complex:   # its (real, imag) pairs: the same bytes
            complexes[key] = dtype.name
            st_name, shape = _ST_BY_NAME[_COMPLEX_PARTS[dtype.name]], shape + [2]
        header[key] = {"dtype": st_name, "shape": shape,
                       "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        buffers.append(arr)
    meta = dict(metadata or {})
    if strings:
        meta[STRINGS_KEY] = json.dumps(strings, separators=(",", ":"))
    if complexes:
        meta[COMPLEX_KEY] = json.dumps(complexes, separators=(",", ":"))
    if meta:
        header["__metadata__"] = meta
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)  # data starts 8-byte aligned, as safetensors writes it

    def write(f):
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        for arr in buffers:
            if arr.nbytes:
                f.write(memoryview(arr.reshape(-1)).cast("B"))

    atomic_write(path, write)


def _as_bytes(s):
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def write_shard(prefix, shard, num_shards, tensors):
    """Write one shard of checkpoint ``prefix``; returns its index entries (see write_index)."""
    path = shard_filename(prefix, shard, num_shards)
    write_safetensors(path, tensors)
    return {"file": os.path.basename(path),
            "tensors": {name: {"dtype": _dtypes.as_dtype(np.asarray(v).dtype).name,
                               "shape": list(np.shape(v))}
                        for name, v in tensors.items()}}


SLICE_MARK = "/.slice/"


def slice_key(full_name, full_shape, start, shape):
    """The shard key of one slice of ``full_name``: ``<full_name>/.slice/<TF1 slice spec>``."""
    spec = " ".join("%d" % d for d in full_shape) + " " + ":".join(
        "%d,%d" % (o, n) for o, n in zip(start, shape))
    return full_name + SLICE_MARK + spec


def parse_slice_key(key):
    """``(full_name, full_shape, start, shape)`` of a slice key, or None for a plain key."""
    name, mark, spec = key.rpartition(SLICE_MARK)
    if not mark or not name:
        return None
    try:
        *dims, ranges = spec.split(" ")
        full_shape = [int(d) for d in dims]
        pairs = [r.split(",") for r in ranges.split(":")]
        start = [int(o) for o, _ in pairs]
        shape = [int(n) for _, n in pairs]
    except ValueError:
        return None
    if len(full_shape) != len(start) or any(
            o < 0 or n < 0 or o + n > d for o, n, d in zip(start, shape, full_shape)):
        return None
    return name, full_shape, start, shape


def write_index(prefix, shard_entries):
    """Commit checkpoint ``prefix``: write its index naming the shards described by
    ``shard_entries`` (what write_shard returned), then delete stale shards of the prefix.
    Tensors saved under slice keys (``slice_key``) become one entry per full variable."""
    shards, table = [], {}
    for i, entry in enumerate(shard_entries):
        shards.append(entry["file"])
        for name, info in entry["tensors"].items():
            parsed = parse_slice_key(name)
            if parsed is not None:
                _add_slice(prefix, table, parsed, info, i, name)
                continue
            if name in table:
                raise errors.InvalidArgumentError(
                    None, None, "Checkpoint %s: tensor %r is saved by two shards" % (prefix, name))
            table[name] = {"dtype": info["dtype"], "shape": info["shape"], "shard": i, "key": name}
    index = {"format": FORMAT, "version": VERSION, "shards": shards, "tensors": table}
    data = json.dumps(index, indent=1, sort_keys=True).encode("utf-8")
    atomic_write(prefix + INDEX_SUFFIX, lambda f: f.write(data))
    keep = {os.path.join(os.path.dirname(prefix), s) for s in shards}
    for path in glob.glob(glob.escape(prefix) + ".data-*"):
        if path not in keep:  # earlier saves to this prefix, or temp files of crashed ones
            _remove(path)


def _add_slice(prefix, table, parsed, info, shard, key):
    full_name, full_shape, start, shape = parsed
    if list(info["shape"]) != shape:
        raise errors.InvalidArgumentError(
            None, None, "Checkpoint %s: slice %r holds shape %s, not the %s its key says"
            % (prefix, key, info["shape"], shape))
    entry = table.setdefault(full_name, {"dtype": info["dtype"], "shape": full_shape,
                                         "slices": []})
    if "slices" not in entry or entry["shape"] != full_shape or entry["dtype"] != info["dtype"]:
        raise errors.InvalidArgumentError(
            None, None, "Checkpoint %s: slice %r of %s (%s%s) does not match the rest of %s (%s%s)"
            % (prefix, key, full_name, info["dtype"], full_shape, full_name, entry["dtype"],
               entry["shape"]))
    for other in entry["slices"]:
        if _overlap(start, shape, other["start"], other["shape"]) is not None:
            raise errors.InvalidArgumentError(
                None, None, "Checkpoint %s: slices %r and %r of %s overlap"
                % (prefix, key, other["key"], full_name))
    entry["slices"].append({"start": start, "shape": shape, "shard": shard, "key": key})


def _overlap(start_a, shape_a, start_b, shape_b):
    """The intersection ``(start, stop)`` lists of two boxes, or None when they are disjoint."""
    lo = [max(a, b) for a, b in zip(start_a, start_b)]
    hi = [min(a + n, b + m) for a, n, b, m in zip(start_a, shape_a, start_b, shape_b)]
    if any(h <= low for low, h in zip(lo, hi)):
        return None
    return lo, hi


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def checkpoint_files(prefix):
    """Every file that belongs to checkpoint ``prefix`` (index, shards, temp files)."""
    base = glob.escape(prefix)
    return sorted(glob.glob(base + ".data-*") + glob.glob(base + INDEX_SUFFIX + "*"))


# -- reading -------------------------------------------------------------------------------------
def _corrupt(path, what):
    return errors.DataLossError(None, None, "Checkpoint file %s is corrupt or not a zps checkpoint: "
                                "%s" % (path, what))


class SafetensorsFile:
    """A validated safetensors file: ``keys()``, ``dtype(key)``, ``shape(key)``,
    ``read(key, rows=None)``."""

    def __init__(self, path):
        self.path = path
        try:
            self._size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(8)
                if len(head) < 8:
                    raise _corrupt(path, "%d bytes, shorter than the 8-byte header length"
                                   % len(head))
                n = int.from_bytes(head, "little")
                if n > MAX_HEADER_BYTES or 8 + n > self._size:
                    raise _corrupt(path, "header length %d exceeds the file (%d bytes) or the "
                                   "%d-byte limit" % (n, self._size, MAX_HEADER_BYTES))
                raw = f.read(n)
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, "Checkpoint shard %s not found" % path) from None
        self._data_start = 8 + n
        self._entries, self._strings, self.metadata = self._parse(raw)

    def _parse(self, raw):
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise _corrupt(self.path, "header is not JSON (%s)" % e) from None
        if not isinstance(header, dict):
            raise _corrupt(self.path, "header is not a JSON object")
        metadata = header.pop("__metadata__", None) or {}
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise _corrupt(self.path, "__metadata__ must map strings to strings")
        entries, end = {}, 0
        data_len = self._size - self._data_start
        for key, info in sorted(header.items(), key=lambda kv: _begin(kv[1])):
            if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
                raise _corrupt(self.path, "entry %r must have exactly dtype, shape, data_offsets"
                               % key)
            name = _ST_DTYPES.get(info["dtype"]) if isinstance(info["dtype"], str) else None
            if name is None:
                raise _corrupt(self.path, "tensor %r has unsupported dtype %r (supported: %s)"
                               % (key, info["dtype"], ", ".join(sorted(_ST_DTYPES))))
            shape = _check_shape(info["shape"], self.path, key)
            offs = info["data_offsets"]
            if not (isinstance(offs, list) and len(offs) == 2
                    and all(type(o) is int for o in offs)):
                raise _corrupt(self.path, "tensor %r: data_offsets must be two integers" % key)
            begin, stop = offs
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(_LE[name]).itemsize
            if begin != end or stop < begin or stop > data_len:
                raise _corrupt(self.path, "tensor %r: data_offsets %s overlap, leave a gap or lie "
                               "outside the %d data bytes" % (key, offs, data_len))
            if stop - begin != nbytes:
                raise _corrupt(self.path, "tensor %r: %d bytes for shape %s of %s (needs %d)"
                               % (key, stop - begin, shape, name, nbytes))
            entries[key] = (name, shape, begin)
            end = stop
        if end != data_len:
            raise _corrupt(self.path, "%d trailing bytes after the last tensor" % (data_len - end))
        strings = self._parse_strings(metadata.get(STRINGS_KEY), entries)
        self._parse_complex(metadata.get(COMPLEX_KEY), entries)
        return entries, strings, metadata

    def _parse_complex(self, text, entries):
        """Turn the entries marked complex from float pairs [..., 2] into complex tensors."""
        if text is None:
            return
        try:
            table = json.loads(text)
        except ValueError as e:
            raise _corrupt(self.path, "%s is not JSON (%s)" % (COMPLEX_KEY, e)) from None
        if not isinstance(table, dict):
            raise _corrupt(self.path, "%s must be a JSON object" % COMPLEX_KEY)
        for key, dtype in table.items():
            name, shape, begin = entries.get(key, (None, [], 0))
            if _COMPLEX_PARTS.get(dtype) != name or not shape or shape[-1] != 2:
                raise _corrupt(self.path, "complex tensor %r: stored as %s%s, not as %s pairs "
                               "[..., 2]" % (key, name, shape, _COMPLEX_PARTS.get(dtype, dtype)))
            entries[key] = (dtype, shape[:-1], begin)

    def _parse_strings(self, text, entries):
        if text is None:
            return {}
        try:
            table = json.loads(text)
        except ValueError as e:
            raise _corrupt(self.path, "%s is not JSON (%s)" % (STRINGS_KEY, e)) from None
        if not isinstance(table, dict):
            raise _corrupt(self.path, "%s must be a JSON object" % STRINGS_KEY)
        out = {}
        for key, info in table.items():
            if key in entries or not isinstance(info, dict) or set(info) != {"shape", "data"}:
                raise _corrupt(self.path, "string tensor %r: bad or duplicate entry" % key)
            shape = _check_shape(info["shape"], self.path, key)
            data = info["data"]
            if not isinstance(data, list) or len(data) != int(np.prod(shape, dtype=np.int64)):
                raise _corrupt(self.path, "string tensor %r: element count does not match shape %s"
                               % (key, shape))
            out[key] = (shape, data)
        return out

    def keys(self):
        return sorted(list(self._entries) + list(self._strings))

    def dtype(self, key):
        return "string" if key in self._strings else self._entry(key)[0]

    def shape(self, key):
        return list(self._strings[key][0] if key in self._strings else self._entry(key)[1])

    def _entry(self, key):
        try:
            return self._entries[key]
        except KeyError:
            raise errors.NotFoundError(None, None, "Key %s not found in checkpoint shard %s"
                                       % (key, self.path)) from None

    def read(self, key, rows=None):
        """The tensor ``key`` as a fresh native-endian ndarray (strings: an object array of bytes);
        with ``rows=(lo, hi)``, only its rows ``[lo, hi)`` of the leading dimension: just their
        bytes are read (the tensor is row-major, so they are contiguous)."""
        if key in self._strings:
            shape, data = self._strings[key]
            lo, hi, out_shape = _row_range(shape, rows, self.path, key)
            inner = int(np.prod(shape[1:], dtype=np.int64))
            try:
                items = [base64.b64decode(s, validate=True) for s in data[lo * inner:hi * inner]]
            except (binascii.Error, TypeError, ValueError):
                raise _corrupt(self.path, "string tensor %r holds invalid base64" % key) from None
            out = np.empty(len(items), dtype=object)
            out[:] = items
            return out.reshape(out_shape)
        name, shape, begin = self._entry(key)
        lo, hi, out_shape = _row_range(shape, rows, self.path, key)
        arr = np.empty(out_shape, dtype=_LE[name])
        row_bytes = arr.itemsize * int(np.prod(shape[1:], dtype=np.int64))
        with open(self.path, "rb") as f:
            f.seek(self._data_start + begin + lo * row_bytes)
            if arr.nbytes and f.readinto(memoryview(arr.reshape(-1)).cast("B")) != arr.nbytes:
                raise _corrupt(self.path, "tensor %r is truncated" % key)
        if name == "bool" and arr.size and arr.view(np.uint8).max() > 1:
            raise _corrupt(self.path, "bool tensor %r holds bytes other than 0 and 1" % key)
        return arr.astype(_dtypes.as_dtype(name).as_numpy_dtype, copy=False)


def _row_range(shape, rows, path, key):
    """``(lo, hi, shape of the result)`` of reading rows ``[lo, hi)`` (all, if None) of a tensor."""
    if rows is None:
        return 0, (shape[0] if shape else 1), list(shape)
    lo, hi = (int(r) for r in rows)
    if not shape or not 0 <= lo <= hi <= shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "Checkpoint shard %s: rows [%d, %d) are not rows of tensor %r of shape %s "
            "(need 0 <= lo <= hi <= its first dimension)" % (path, lo, hi, key, list(shape)))
    return lo, hi, [hi - lo] + list(shape[1:])


def _begin(info):
    offs = info.get("data_offsets") if isinstance(info, dict) else None
    return offs[0] if isinstance(offs, list) and offs and type(offs[0]) is int else -1


def _check_shape(shape, path, key):
    if not (isinstance(shape, list) and len(shape) <= MAX_RANK
            and all(type(d) is int and 0 <= d < 2 ** 62 for d in shape)):
        raise _corrupt(path, "tensor %r: shape %r is not a list of at most %d non-negative ints"
                       % (key, shape, MAX_RANK))
    return shape


class CheckpointReader:
    """Reads checkpoint ``prefix`` through its index (TF1's ``NewCheckpointReader``): zps's own
    format, or a checkpoint TensorFlow wrote (``tf_bundle``).

    ``get_tensor(name)``, ``get_slice(name, start, shape)``, ``has_tensor(name)``,
    ``get_variable_to_shape_map()``, ``get_variable_to_dtype_map()``, ``debug_string()``.
    """

    def __init__(self, prefix):
        self.prefix = prefix
        path = prefix + INDEX_SUFFIX
        try:
            size = os.path.getsize(path)
            if size > MAX_INDEX_BYTES:
                raise _corrupt(path, "%d bytes, over the %d-byte limit" % (size, MAX_INDEX_BYTES))
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any "
                "matching files for %s (no %s): is the checkpoint path right?" % (prefix, path)) \
                from None
        if tf_bundle.is_bundle_index(raw):   # a checkpoint TensorFlow wrote
            self._shards, self._tensors = tf_bundle.parse_index(raw, prefix)
        else:
            self._shards, self._tensors = _parse_index(raw, path)
        self._open = {}

    def _shard(self, i):
        f = self._open.get(i)
        if f is None:
            shard = self._shards[i]
            if isinstance(shard, tuple):   # a TensorFlow data file and its entries
                f = tf_bundle.BundleShard(os.path.join(os.path.dirname(self.prefix), shard[0]),
                                          shard[1])
            else:
                f = SafetensorsFile(os.path.join(os.path.dirname(self.prefix), shard))
            self._open[i] = f
        return f

    def has_tensor(self, name):
        return name in self._tensors

    def get_variable_to_shape_map(self):
        return {k: list(v["shape"]) for k, v in self._tensors.items()}

    def saved_dtype(self, name):
        """The dtype name ``name`` was saved with (``"tf:complex64"`` & co for TensorFlow dtypes
        zps lacks), or None if the checkpoint does not hold it."""
        info = self._tensors.get(name)
        return None if info is None else info["dtype"]

    def get_variable_to_dtype_map(self):
        unknown = sorted(k for k, v in self._tensors.items() if v["dtype"] not in _INDEX_DTYPES)
        if unknown:   # TensorFlow dtypes zps lacks (complex, bfloat16, ...)
            raise errors.UnimplementedError(None, None, "Checkpoint %s holds tensors of dtypes zps "
                                            "does not have: %s" % (self.prefix, ", ".join(
                                                "%s (%s)" % (k, self._tensors[k]["dtype"]
                                                             .removeprefix("tf:"))
                                                for k in unknown)))
        return {k: _dtypes.as_dtype(v["dtype"]) for k, v in self._tensors.items()}

    def get_tensor(self, name):
        """The saved value of ``name``; NotFoundError naming it if the checkpoint lacks it."""
        info = self._tensors.get(name)
        if info is None:
            raise errors.NotFoundError(
                None, None, "Key %s not found in checkpoint %s (it has: %s)"
                % (name, self.prefix, _preview(sorted(self._tensors))))
        if "slices" in info:
            return self.get_slice(name, [0] * len(info["shape"]), info["shape"])
        return self._read(info["shard"], info["key"], info["dtype"], info["shape"])

    def _read(self, shard_index, key, dtype, shape, rows=None):
        shard = self._shard(shard_index)
        if shard.dtype(key) != dtype or shard.shape(key) != list(shape):
            raise _corrupt(shard.path, "tensor %r is %s%s in the shard but %s%s in the index"
                           % (key, shard.dtype(key), shard.shape(key), dtype, list(shape)))
        return shard.read(key, rows)

    def get_slice(self, name, start, shape):
        """The region ``[start, start + shape)`` of tensor ``name``, read from whichever saved
        slices cover it (or from the whole tensor); NotFoundError if part of it was not saved."""
        info = self._tensors.get(name)
        if info is None:
            return self.get_tensor(name)  # raises NotFoundError naming what the checkpoint has
        full = info["shape"]
        start, shape = [int(s) for s in start], [int(n) for n in shape]
        if len(start) != len(full) or len(shape) != len(full) or any(
                o < 0 or n < 0 or o + n > d for o, n, d in zip(start, shape, full)):
            raise errors.InvalidArgumentError(
                None, None, "Checkpoint %s: the region at %s of shape %s is not inside %s of shape "
                "%s" % (self.prefix, start, shape, name, full))
        if "slices" not in info:   # read only the rows the region spans
            origin = [0] * len(full)
            rows = self._read(info["shard"], info["key"], info["dtype"], full,
                              _rows(start, shape, origin))
            region = rows[_trailing(start, shape, origin)]
            return region if region.flags.c_contiguous else region.copy()
        out = None
        covered = 0
        for sl in info["slices"]:
            box = _overlap(start, shape, sl["start"], sl["shape"])
            if box is None:
                continue
            lo, hi = box
            size = [h - a for a, h in zip(lo, hi)]
            part = self._read(sl["shard"], sl["key"], info["dtype"], sl["shape"],
                              _rows(lo, size, sl["start"]))
            if out is None:
                out = np.empty(shape, dtype=part.dtype)
            dst = tuple(slice(a - b, h - b) for a, h, b in zip(lo, hi, start))
            out[dst] = part[_trailing(lo, size, sl["start"])]
            covered += int(np.prod(size, dtype=np.int64))
        if covered != int(np.prod(shape, dtype=np.int64)):
            raise errors.NotFoundError(
                None, None, "Checkpoint %s holds only part of the region at %s of shape %s of %s "
                "(its saved slices: %s)" % (self.prefix, start, shape, name,
                                           [(s["start"], s["shape"]) for s in info["slices"]]))
        if out is None:  # an empty region
            out = np.empty(shape, dtype=_dtypes.as_dtype(info["dtype"]).as_numpy_dtype)
        return out

    def debug_string(self):
        return "".join("%s (%s) %s\n" % (k, v["dtype"], v["shape"])
                       for k, v in sorted(self._tensors.items())).encode()


def _rows(start, shape, base):
    """The rows of the leading dimension the region ``[start, start + shape)`` spans, relative
    to a saved box at ``base``: all that is read of that box (None for a scalar: read whole)."""
    return (start[0] - base[0], start[0] - base[0] + shape[0]) if base else None


def _trailing(start, shape, base):
    """The index that cuts the region ``[start, start + shape)`` out of the rows read for it
    (from a saved box at ``base``)."""
    if not shape:
        return ()
    return (slice(None),) + tuple(slice(o - b, o - b + n)
                                  for o, n, b in zip(start[1:], shape[1:], base[1:]))


def _preview(names, limit=10):
    text = ", ".join(names[:limit])
    return text + (", ... (%d in all)" % len(names) if len(names) > limit else "")


def _parse_index(raw, path):
    try:
        index = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _corrupt(path, "index is not JSON (%s)" % e) from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise _corrupt(path, "missing the %r format marker" % FORMAT)
    if index.get("version") != VERSION:
        raise errors.UnimplementedError(None, None, "Checkpoint index %s has version %r; this zps "
                                        "reads version %d" % (path, index.get("version"), VERSION))
    shards, tensors = index.get("shards"), index.get("tensors")
    if not isinstance(shards, list) or not all(
            isinstance(s, str) and s and os.path.basename(s) == s and s not in (".", "..")
            for s in shards):
        raise _corrupt(path, "shards must be a list of file names in the checkpoint's directory")
    if not isinstance(tensors, dict):
        raise _corrupt(path, "tensors must be a JSON object")
    for name, info in tensors.items():
        if not isinstance(info, dict) or info.get("dtype") not in _INDEX_DTYPES:
            raise _corrupt(path, "tensor %r: bad entry or dtype" % name)
        _check_shape(info.get("shape"), path, name)
        if "slices" in info:
            _check_slices(info, shards, path, name)
            continue
        shard, key = info.get("shard"), info.get("key")
        if type(shard) is not int or not 0 <= shard < len(shards) or not isinstance(key, str):
            raise _corrupt(path, "tensor %r: shard %r / key %r do not name a listed shard"
                           % (name, shard, key))
    return shards, tensors


def _check_slices(info, shards, path, name):
    slices, full = info["slices"], info["shape"]
    if not isinstance(slices, list) or "shard" in info or "key" in info:
        raise _corrupt(path, "tensor %r: slices must be a list (and replace shard/key)" % name)
    for sl in slices:
        if not isinstance(sl, dict) or set(sl) != {"start", "shape", "shard", "key"}:
            raise _corrupt(path, "tensor %r: a slice must have exactly start, shape, shard, key"
                           % name)
        shape = _check_shape(sl["shape"], path, name)
        start = _check_shape(sl["start"], path, name)
        if len(start) != len(full) or len(shape) != len(full) or any(
                o + n > d for o, n, d in zip(start, shape, full)):
            raise _corrupt(path, "tensor %r: slice at %s of shape %s lies outside shape %s"
                           % (name, start, shape, full))
        if type(sl["shard"]) is not int or not 0 <= sl["shard"] < len(shards) or not isinstance(
                sl["key"], str):
            raise _corrupt(path, "tensor %r: slice shard %r / key %r do not name a listed shard"
                           % (name, sl["shard"], sl["key"]))


__all__ = []
