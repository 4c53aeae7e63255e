"""``tf.gfile``: TF1's file API, for local files.

Failures raise TF1's errors (``tf.errors.NotFoundError``, ``AlreadyExistsError`` ...) with the
path in the message, as TF1's gfile does; ``Exists`` and ``IsDirectory`` answer False instead.
A ``GFile`` opens its file on first use (as TF1's), so a missing file is reported by the first
read, not by the constructor.

>>> import os, tempfile, zps as tf
>>> d = os.path.join(tempfile.mkdtemp(), "a", "b")
>>> tf.gfile.MakeDirs(d)
>>> with tf.gfile.GFile(os.path.join(d, "x.txt"), "w") as f:
...     f.write("hello\\n")
>>> tf.gfile.ListDirectory(d), tf.gfile.GFile(os.path.join(d, "x.txt")).read()
(['x.txt'], 'hello\\n')
"""

import collections
import contextlib
import glob as _glob
import os
import shutil

from zps.framework import errors


@contextlib.contextmanager
def _os_errors(path):
    """OSErrors as TF1's OpErrors: ``"<path>; <reason>"``."""
    try:
        yield
    except OSError as e:
        raise errors.from_os_error(e, path) from e


def _path(p):
    return os.fsdecode(p)


class GFile:
    """A file: ``read``/``write``/``readline``/``seek``/``tell``/``size``, iteration, ``with``.

    Modes are Python's ('r', 'w', 'a', 'rb', 'wb', 'ab', '+' forms): text modes read ``str``,
    binary modes ``bytes``; ``write`` takes either.
    """

    def __init__(self, name, mode="r"):
        if mode.replace("b", "").replace("+", "") not in ("r", "w", "a"):
            raise errors.InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' (with "
                                              "optional 'b' and '+'): %r" % (mode,))
        self._name = _path(name)
        self._mode = mode
        self._binary = "b" in mode
        self._f = None

    name = property(lambda self: self._name)
    mode = property(lambda self: self._mode)

    def _file(self):
        if self._f is None:
            with _os_errors(self._name):
                self._f = open(self._name, self._mode if self._binary else self._mode + "b")
        return self._f

    def _out(self, data):
        return data if self._binary else data.decode("utf-8")

    def size(self):
        """The file's length in bytes."""
        return Stat(self._name).length

    def read(self, n=-1):
        """Up to ``n`` bytes (all that is left when ``n`` is -1)."""
        with _os_errors(self._name):
            return self._out(self._file().read(n))

    def readline(self):
        with _os_errors(self._name):
            return self._out(self._file().readline())

    def readlines(self):
        return list(self)

    def write(self, file_content):
        """Write ``str`` (as UTF-8) or ``bytes``."""
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        with _os_errors(self._name):
            self._file().write(data)

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        with _os_errors(self._name):
            self._file().seek(offset, whence)

    def tell(self):
        return self._file().tell()

    def flush(self):
        if self._f is not None:
            with _os_errors(self._name):
                self._f.flush()

    def close(self):
        if self._f is not None:
            with _os_errors(self._name):
                self._f.close()
            self._f = None

    def __iter__(self):
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # TF1's files close (and flush) when collected: ``GFile(path).read()`` is common.
        if getattr(self, "_f", None) is not None:
            self._f.close()


Open = GFile
FastGFile = GFile    # TF1: a GFile without thread-safety; the same thing here


def Exists(filename):  # noqa: N802 - TF1's names
    """Whether ``filename`` (a file or directory) exists."""
    return os.path.exists(_path(filename))


def IsDirectory(dirname):  # noqa: N802
    """Whether ``dirname`` is a directory (False if it does not exist)."""
    return os.path.isdir(_path(dirname))


def MkDir(dirname):  # noqa: N802
    """Create the directory ``dirname`` (its parent must exist); nothing to do if it exists."""
    path = _path(dirname)
    if not os.path.isdir(path):
        with _os_errors(path):
            os.mkdir(path)


def MakeDirs(dirname):  # noqa: N802
    """Create ``dirname`` and its missing parents; nothing to do if it exists."""
    with _os_errors(_path(dirname)):
        os.makedirs(_path(dirname), exist_ok=True)


def Remove(filename):  # noqa: N802
    """Delete the file ``filename``; NotFoundError if there is none."""
    with _os_errors(_path(filename)):
        os.remove(_path(filename))


def DeleteRecursively(dirname):  # noqa: N802
    """Delete ``dirname`` and everything under it (or a file); NotFoundError if missing."""
    path = _path(dirname)
    if not os.path.lexists(path):
        raise errors.NotFoundError(None, None, "%s not found" % path)
    with _os_errors(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _check_target(path, overwrite):
    if not overwrite and os.path.exists(path):
        raise errors.AlreadyExistsError(None, None, "file already exists: %s (pass overwrite="
                                        "True to replace it)" % path)


def Rename(oldname, newname, overwrite=False):  # noqa: N802
    """Rename ``oldname`` to ``newname``; AlreadyExistsError if it exists and not ``overwrite``."""
    old, new = _path(oldname), _path(newname)
    _check_target(new, overwrite)
    with _os_errors(old):
        os.replace(old, new)


def Copy(oldpath, newpath, overwrite=False):  # noqa: N802
    """Copy the file ``oldpath`` to ``newpath``; AlreadyExistsError if it exists and not
    ``overwrite``."""
    old, new = _path(oldpath), _path(newpath)
    _check_target(new, overwrite)
    with _os_errors(old):
        shutil.copyfile(old, new)


def ListDirectory(dirname):  # noqa: N802
    """The names of the entries of ``dirname`` (without '.' and '..'), sorted."""
    path = _path(dirname)
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, "Could not find directory %s" % path)
    with _os_errors(path):
        return sorted(os.listdir(path))


def Glob(filename):  # noqa: N802
    """The paths matching the pattern ``filename`` (``*``, ``?``, ``[...]``), sorted."""
    return sorted(_glob.glob(_path(filename)))


def Walk(top, in_order=True):  # noqa: N802
    """``(dirname, subdirs, files)`` for ``top`` and each directory under it (top-down when
    ``in_order``); nothing if ``top`` is not a directory."""
    for dirname, subdirs, files in os.walk(_path(top), topdown=in_order):
        yield dirname, sorted(subdirs), sorted(files)


# TF1's FileStatistics (not exported by tf.gfile either)
_FileStatistics = collections.namedtuple("FileStatistics", ["length", "mtime_nsec", "is_directory"])


def Stat(filename):  # noqa: N802
    """``FileStatistics(length, mtime_nsec, is_directory)`` of ``filename``."""
    path = _path(filename)
    with _os_errors(path):
        st = os.stat(path)
    return _FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(path))


__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]
