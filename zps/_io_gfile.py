"""``tf.io.gfile``: TF 1.15's lower-case names for the file API of ``tf.gfile`` (zps/gfile.py),
with TF's argument names (``path``, ``src``/``dst``, ``pattern``, ``topdown``).

>>> import os, tempfile, zps as tf
>>> d = os.path.join(tempfile.mkdtemp(), "a")
>>> tf.io.gfile.makedirs(d)
>>> tf.io.gfile.exists(d), tf.io.gfile.isdir(d), tf.io.gfile.listdir(d)
(True, True, [])
"""

from zps import gfile as _gfile
from zps.framework import errors as _errors

GFile = _gfile.GFile


def copy(src, dst, overwrite=False):
    """``tf.gfile.Copy``: copy the file ``src`` to ``dst``."""
    return _gfile.Copy(src, dst, overwrite)


def exists(path):
    """``tf.gfile.Exists``: whether ``path`` (a file or directory) exists."""
    return _gfile.Exists(path)


def glob(pattern):
    """``tf.gfile.Glob``: the paths matching ``pattern``, sorted."""
    return _gfile.Glob(pattern)


def isdir(path):
    """``tf.gfile.IsDirectory``: whether ``path`` is a directory."""
    return _gfile.IsDirectory(path)


def listdir(path):
    """``tf.gfile.ListDirectory``: the entry names of the directory ``path``, sorted."""
    return _gfile.ListDirectory(path)


def makedirs(path):
    """``tf.gfile.MakeDirs``: create ``path`` and its missing parents."""
    return _gfile.MakeDirs(path)


def mkdir(path):
    """``tf.gfile.MkDir``: create the directory ``path`` (its parent must exist)."""
    return _gfile.MkDir(path)


def remove(path):
    """``tf.gfile.Remove``: delete the file ``path``."""
    return _gfile.Remove(path)


def rename(src, dst, overwrite=False):
    """``tf.gfile.Rename``: rename ``src`` to ``dst``."""
    return _gfile.Rename(src, dst, overwrite)


def rmtree(path):
    """``tf.gfile.DeleteRecursively``: delete ``path`` and everything under it."""
    return _gfile.DeleteRecursively(path)


def stat(path):
    """``tf.gfile.Stat``: ``FileStatistics(length, mtime_nsec, is_directory)`` of ``path``."""
    return _gfile.Stat(path)


def walk(top, topdown=True, onerror=None):
    """``tf.gfile.Walk``: ``(dirname, subdirs, files)`` for ``top`` and each directory under it.

    A generator, as TF's: if ``top`` is not a directory nothing is yielded, and ``onerror`` (when
    given) is called with a NotFoundError on the first ``next``.
    """
    if onerror is not None and not _gfile.IsDirectory(top):
        onerror(_errors.NotFoundError(None, None, "Could not find directory %s" % (top,)))
    yield from _gfile.Walk(top, in_order=topdown)


__all__ = ["GFile", "copy", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove",
           "rename", "rmtree", "stat", "walk"]
