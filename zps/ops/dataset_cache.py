"""The file format of ``Dataset.cache(filename)``: a dataset's elements on disk, never pickled.

The cache of ``filename`` is one file, ``filename + ".zpscache"``: a stream of msgpack values,

- a header ``{"format": "zps-dataset-cache", "version": 1, "types": ["int64", "string", ...]}``
  (the plain tensors of an element: see zps.data.structure),
- one array per element, one entry per plain tensor: ``[shape, data]``, ``data`` the raw
  little-endian bytes of a number array or a list of bytes for a string array,
- a footer ``{"end": number_of_elements}``.

A writer fills a temp file beside it (``<file>.tmp-*``) and renames it into place only after the
last element of a complete pass (flushed and fsynced): a partial pass never leaves a cache that
reads as complete, and its temp file is removed when its iterator goes. Readers check the
header, each element and the footer, and raise DataLossError on anything else. Unlike TF (whose
lockfile makes a second concurrent writer fail with AlreadyExistsError), concurrent writers are
harmless here: each has its own temp file and the last complete one wins.

>>> import os, tempfile, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "c")
>>> w = Writer(path, ["int64", "string"])
>>> w.write((np.arange(3), np.array(b"x", dtype=object)))
>>> w.commit()
>>> [(a.tolist(), s[()]) for a, s in read(path, ["int64", "string"])]
[([0, 1, 2], b'x')]
"""

import os
import tempfile
import weakref

import msgpack
import numpy as np

from zps.framework import errors

SUFFIX = ".zpscache"
FORMAT, VERSION = "zps-dataset-cache", 1


def cache_path(filename):
    """The file holding the complete cache of ``filename``."""
    return filename + SUFFIX


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


class Writer:
    """Writes one pass of elements to a temp file; ``commit()`` makes it the cache."""

    def __init__(self, filename, types):
        self.path = cache_path(filename)
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, self.tmp = tempfile.mkstemp(dir=directory,
                                            prefix=os.path.basename(self.path) + ".tmp-")
        except OSError as e:
            raise errors.NotFoundError(None, None, "Dataset.cache: cannot create a cache file "
                                       "for %r: %s (the directory must exist and be writable)"
                                       % (filename, e)) from None
        self.file = os.fdopen(fd, "wb")
        self.types, self.count = types, 0
        # An abandoned writer (its iterator dropped mid-pass) leaves nothing behind.
        self._cleanup = weakref.finalize(self, _abandon, self.file, self.tmp)
        self._pack({"format": FORMAT, "version": VERSION, "types": list(types)})

    def _pack(self, value):
        self.file.write(msgpack.packb(value, use_bin_type=True))

    def write(self, element):
        """Append one element (a tuple of ndarrays, one per plain tensor)."""
        self._pack([[list(v.shape), list(v.ravel().tolist()) if t == "string" else
                     np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes()]
                    for v, t in zip(element, self.types)])
        self.count += 1

    def commit(self):
        """End the pass: the footer, then the temp file renamed into place."""
        self._pack({"end": self.count})
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp, self.path)
        self._cleanup.detach()


def _abandon(file, tmp):
    file.close()
    _remove(tmp)


def read(filename, types):
    """The elements of the complete cache of ``filename`` (a generator; DataLossError if the
    file is not a cache of elements of these plain ``types``)."""
    path = cache_path(filename)

    def corrupt(what):
        return errors.DataLossError(None, None, "Dataset.cache: %s is not a valid cache of this "
                                    "dataset (%s); delete it to rebuild the cache" % (path, what))
    with open(path, "rb") as f:
        values = msgpack.Unpacker(f, raw=False, use_list=True, max_buffer_size=2 ** 31 - 1)
        try:
            header = next(values, None)
            if not isinstance(header, dict) or header.get("format") != FORMAT or \
                    header.get("version") != VERSION:
                raise corrupt("no zps-dataset-cache header")
            if header.get("types") != list(types):
                raise corrupt("its elements are %s, the dataset's %s" % (header.get("types"),
                                                                          list(types)))
            count = 0
            for value in values:
                if isinstance(value, dict):
                    if value.get("end") != count or next(values, None) is not None:
                        raise corrupt("a bad footer")
                    return
                yield _element(value, types, corrupt)
                count += 1
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise corrupt(str(e)) from None
    raise corrupt("it ends before its footer")


def _element(value, types, corrupt):
    if not isinstance(value, list) or len(value) != len(types):
        raise corrupt("an element with %s components" % (len(value) if isinstance(value, list)
                                                         else "no"))
    out = []
    for (shape, data), t in zip(value, types):
        if t == "string":
            array = np.empty(len(data), dtype=object)
            array[:] = data
            out.append(array.reshape(shape))
        else:
            out.append(np.frombuffer(data, dtype=np.dtype(t).newbyteorder("<"))
                       .astype(t).reshape(shape))
    return tuple(out)
