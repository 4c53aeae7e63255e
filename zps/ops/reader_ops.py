"""Readers: resources that turn a queue of filenames into records (TF1's ``tf.TextLineReader``).

A reader is a resource op like a queue: ``ReaderReadV2`` takes the reader and a queue of
filenames, and outputs the next ``(key, value)`` record. When the reader's current file (its
*work unit*) is exhausted it dequeues the next filename, so a dequeue waiting on an empty queue
makes the read wait too (asynchronously: no thread blocks), and a closed, empty filename queue
makes the read fail with OutOfRangeError, which ends an input pipeline. Reads of one reader are
served in order, one at a time.

>>> import os, tempfile, zps as tf
>>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
>>> with open(path, "w") as f:
...     _ = f.write("x,y\\n1,2\\n")
>>> with tf.Graph().as_default():
...     files = tf.FIFOQueue(1, tf.string, shapes=[])
...     key, value = tf.TextLineReader(skip_header_lines=1).read(files)
...     with tf.Session() as sess:
...         _ = sess.run(files.enqueue(path))
...         k, v = sess.run([key, value])
>>> k.decode().endswith("a.txt:2"), v
(True, b'1,2')
"""

import collections
import threading

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops.op_util import make_op, scalar_shape


def _strings(items, shape):
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def _open_error(filename, e):
    return errors.from_os_error(e, filename.decode("utf-8", "replace"))


class _Read:
    """One waiting ReaderRead (``n`` = 1, ``single``: scalars) or ReaderReadUpTo call."""

    __slots__ = ("ctx", "done", "queue", "n", "single")

    def __init__(self, ctx, done, queue, n, single):
        self.ctx, self.done, self.queue, self.n, self.single = ctx, done, queue, n, single


class _ReaderBase:
    """A reader resource: the current work unit (a file) and the reads waiting for records."""

    def __init__(self, name):
        self.name = name
        self.records_produced = 0
        self.work_units_completed = 0
        self._work = None          # the filename (bytes) being read, or None
        self._lock = threading.Lock()
        self._pending = collections.deque()
        self._busy = False         # a thread is serving _pending (or a dequeue is in flight)

    def read(self):
        # Fetching the handle itself gives its name, as TF1's string handle.
        return np.array(self.name.encode(), dtype=object)

    def read_records(self, ctx, done, queue, n=1, single=True):
        """Call ``done`` with the next record, or (``single`` False) with up to ``n`` records of
        the current file; dequeue a filename from ``queue`` when there is no current file."""
        if n <= 0:
            done(errors.InvalidArgumentError(None, None, "num_records must be positive, got %d"
                                             % n))
            return
        with self._lock:
            self._pending.append(_Read(ctx, done, queue, n, single))
            if self._busy:
                return
            self._busy = True
        self._serve()

    def reset(self):
        with self._lock:
            self._close_work()
            self.records_produced = self.work_units_completed = 0

    def cancel(self):
        # The session or server holding the reader closes: release its open file. (Reads
        # waiting for a filename are cancelled by the queue they wait on.)
        with self._lock:
            self._close_work()

    def _serve(self):
        """Answer waiting reads in order until one must wait for a filename (the dequeue's
        callback then resumes serving) or none is left."""
        while True:
            with self._lock:   # also keeps reset/cancel from closing the file mid-read
                if not self._pending:
                    self._busy = False
                    return
                req, work = self._pending[0], self._work
                if work is not None:
                    result = self._read_locked(req)
                    if result is None:
                        continue        # the file had no more records: on to the next file
            if work is None:
                if not self._dequeue_work(req):
                    return
                continue
            self._complete(req, result)

    def _read_locked(self, req):
        """Up to ``req.n`` records of the current file as req's result (an error if reading
        failed); None if the file had none left. A file that ends is closed and counted."""
        records = []
        try:
            while len(records) < req.n:
                record = self._next_record()
                if record is None:
                    self._close_work()
                    self.work_units_completed += 1
                    break
                records.append(record)
        except OSError as e:
            return _open_error(self._work, e)
        if not records:
            return None
        self.records_produced += len(records)
        keys, values = zip(*records)
        shape = () if req.single else (len(records),)
        return _strings(list(keys), shape), _strings(list(values), shape)

    def _complete(self, req, result):
        with self._lock:
            self._pending.popleft()
        req.done(result)

    def _dequeue_work(self, req):
        """Dequeue the next filename; True if it came at once (serving goes on here)."""
        state = {"inline": True, "result": None}

        def arrived(result):
            with self._lock:
                state["result"] = (result,)
                later = not state["inline"]
            if later:
                self._start_work(req, result)
                self._serve()

        req.queue.dequeue(req.ctx, arrived, 1, True, False)
        with self._lock:
            state["inline"] = False
            result = state["result"]
        if result is None:
            return False
        self._start_work(req, result[0])
        return True

    def _start_work(self, req, result):
        if isinstance(result, BaseException):
            self._complete(req, result)     # OutOfRangeError: the filename queue is done
            return
        filename = result[0] if isinstance(result, tuple) else result
        filename = filename.item() if isinstance(filename, np.ndarray) else filename
        with self._lock:
            try:
                self._open_work(filename)
                self._work = filename
                return
            except OSError as e:
                error = _open_error(filename, e)
        self._complete(req, error)

    def _close_work(self):
        self._work = None

    def _open_work(self, filename):
        raise NotImplementedError

    def _next_record(self):
        raise NotImplementedError


class _TextLineReader(_ReaderBase):
    """Records are lines (without their line ending); keys are ``filename:line_number``."""

    def __init__(self, name, skip_header_lines):
        super().__init__(name)
        self.skip_header_lines = skip_header_lines
        self._file = None
        self._line = 0

    def _open_work(self, filename):
        self._file = open(filename, "rb")  # kept open across reads
        self._line = 0
        for _ in range(self.skip_header_lines):
            if not self._file.readline():
                break
            self._line += 1

    def _close_work(self):
        if self._file is not None:
            self._file.close()
            self._file = None
        super()._close_work()

    def _next_record(self):
        line = self._file.readline()
        if not line:
            return None
        self._line += 1
        line = line[:-1] if line.endswith(b"\n") else line
        line = line[:-1] if line.endswith(b"\r") else line
        return b"%s:%d" % (self._work, self._line), line


class _WholeFileReader(_ReaderBase):
    """One record per file: the filename and the file's contents."""

    def __init__(self, name):
        super().__init__(name)
        self._data = None

    def _open_work(self, filename):
        with open(filename, "rb") as f:
            self._data = f.read()

    def _next_record(self):
        if self._data is None:
            return None
        data, self._data = self._data, None
        return self._work, data


def _reader_kernel(cls):
    def kernel(ctx, shared_name, op_name, **options):
        name = shared_name or op_name
        reader = ctx.resources.lookup_or_create("reader", name, lambda: cls(name, **options))
        if type(reader) is not cls:
            raise errors.InvalidArgumentError(
                None, None, "Shared reader '%s' already exists as a different kind of reader"
                % name)
        return reader
    return kernel


for _type, _cls in (("TextLineReaderV2", _TextLineReader), ("WholeFileReaderV2", _WholeFileReader)):
    register_op(_type, dtype=lambda op: _dtypes.string, shape=scalar_shape,
                kernel=_reader_kernel(_cls), stateful=True, ref_output=True, needs_op_name=True,
                grad=None)


register_op("ReaderReadV2", dtype=lambda op: [_dtypes.string, _dtypes.string],
            shape=lambda op: [TensorShape([]), TensorShape([])], num_outputs=2,
            kernel=lambda ctx, done, reader, queue: reader.read_records(ctx, done, queue),
            stateful=True, ref_inputs=(0, 1), is_async=True, grad=None)
register_op("ReaderReadUpToV2", dtype=lambda op: [_dtypes.string, _dtypes.string],
            shape=lambda op: [TensorShape([None]), TensorShape([None])], num_outputs=2,
            kernel=lambda ctx, done, reader, queue, n: reader.read_records(
                ctx, done, queue, int(n), single=False),
            stateful=True, ref_inputs=(0, 1), is_async=True, grad=None)
register_op("ReaderNumRecordsProducedV2", dtype=lambda op: _dtypes.int64, shape=scalar_shape,
            kernel=lambda ctx, reader: np.array(reader.records_produced, dtype=np.int64),
            stateful=True, ref_inputs=(0,), grad=None)
register_op("ReaderNumWorkUnitsCompletedV2", dtype=lambda op: _dtypes.int64, shape=scalar_shape,
            kernel=lambda ctx, reader: np.array(reader.work_units_completed, dtype=np.int64),
            stateful=True, ref_inputs=(0,), grad=None)
register_op("ReaderResetV2", kernel=lambda ctx, reader: reader.reset(), num_outputs=0,
            stateful=True, ref_inputs=(0,), grad=None)


class ReaderBase:
    """Base class of readers: ``read(queue)`` gives the next ``(key, value)`` record of the
    files named by the string ``queue``."""

    def __init__(self, reader_ref):
        self._reader_ref = reader_ref

    reader_ref = property(lambda self: self._reader_ref)

    def _on_reader(self, op_type, inputs, name, **kwargs):
        with self._reader_ref.graph.colocate_with(self._reader_ref.op):
            return make_op(op_type, [self._reader_ref] + inputs, name=name, **kwargs)

    def read(self, queue, name=None):
        """The next record: ``(key, value)`` string scalars. Dequeues a filename from ``queue``
        (a queue or its ``queue_ref``) when the current file is done; OutOfRangeError once the
        queue is closed and empty."""
        queue_ref = getattr(queue, "queue_ref", queue)
        key, value = self._on_reader("ReaderReadV2", [queue_ref], name or "ReaderReadV2",
                                     num_outputs=2)
        return key, value

    def read_up_to(self, queue, num_records, name=None):
        """Up to ``num_records`` records as ``(keys, values)`` string vectors: fewer when the
        current file ends first (never none: an exhausted file is followed by the next one)."""
        queue_ref = getattr(queue, "queue_ref", queue)
        n = convert_to_tensor(num_records, dtype=_dtypes.int64, name="num_records")
        keys, values = self._on_reader("ReaderReadUpToV2", [queue_ref, n],
                                       name or "ReaderReadUpToV2", num_outputs=2)
        return keys, values

    def num_records_produced(self, name=None):
        """A scalar int64: how many records this reader has produced."""
        return self._on_reader("ReaderNumRecordsProducedV2", [],
                               name or "ReaderNumRecordsProducedV2")

    def num_work_units_completed(self, name=None):
        """A scalar int64: how many files this reader has finished."""
        return self._on_reader("ReaderNumWorkUnitsCompletedV2", [],
                               name or "ReaderNumWorkUnitsCompletedV2")

    def reset(self, name=None):
        """Forget the current file and zero the counters."""
        return self._on_reader("ReaderResetV2", [], name or "ReaderResetV2")


class TextLineReader(ReaderBase):
    """A reader whose records are the lines of its files (after ``skip_header_lines``).

    Keys are ``b"filename:line_number"`` (1-based, header lines counted); values are the lines
    without ``\\n`` / ``\\r\\n``.
    """

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(make_op("TextLineReaderV2", [], name=name or "TextLineReaderV2",
                                 skip_header_lines=int(skip_header_lines or 0), shared_name=""))


class WholeFileReader(ReaderBase):
    """A reader whose one record per file is ``(filename, contents)``."""

    def __init__(self, name=None):
        super().__init__(make_op("WholeFileReaderV2", [], name=name or "WholeFileReaderV2",
                                 shared_name=""))


__all__ = ["ReaderBase", "TextLineReader", "WholeFileReader"]
