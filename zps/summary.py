"""``tf.summary``: summary ops and a FileWriter that writes TensorBoard event files.

The ops (``scalar``, ``histogram``, ``image``, ``text``, ``tensor_summary``, ``merge``,
``merge_all``) live in zps/ops/summary_ops.py and output serialized ``tf.Summary`` protos
(zps/ops/summary_proto.py). ``FileWriter`` writes event files itself, as TF1's EventFileWriter
does: ``events.out.tfevents.<seconds>.<host>...`` files of TFRecord-framed ``tf.Event`` protos
(zps/python_io.py) that start with a ``file_version`` record, written and flushed (every
``flush_secs``) by a background thread from a queue of at most ``max_queue`` events.
``summary_iterator`` reads them back; TensorBoard reads them as TensorFlow's. Nothing beyond numpy
is needed.

>>> import os, tempfile, zps as tf
>>> logdir = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     _ = scalar("loss", tf.constant(0.25))
...     merged = merge_all()
...     with tf.Session() as sess, FileWriter(logdir) as writer:
...         writer.add_summary(sess.run(merged), global_step=1)
...         writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.5)]), 1)
>>> [(e.step, v.tag, v.simple_value) for name in os.listdir(logdir)
...  for e in summary_iterator(os.path.join(logdir, name)) for v in e.summary.value]
[(1, 'loss', 0.25), (1, 'acc', 0.5)]
"""

import atexit
import collections
import contextlib
import itertools
import logging
import os
import socket
import threading
import time
import warnings

import numpy as np

from zps import gfile, python_io
from zps.client.config import RunMetadata
from zps.framework import errors
from zps.framework.dtypes import DType
from zps.framework.graph import Graph, get_default_graph
from zps.framework.serialization import decode_attr
from zps.framework.tensor_shape import TensorShape
from zps.ops.summary_ops import (
    _parse_summary,
    _tensor_proto,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from zps.ops.summary_proto import (
    AttrValue,
    Event,
    GraphDefProto,
    NodeDefProto,
    RunMetadataProto,
    SessionLog,
    Summary,
    TaggedRunMetadata,
    TensorShapeProto,
)

__all__ = ["Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary", "histogram", "image",
           "merge", "merge_all", "scalar", "tensor_summary", "text"]

_logger = logging.getLogger("zps.summary")
_FILE_VERSION = "brain.Event:2"        # the first record of every event file (TF's EventsWriter)
_WRITER_NAME = "zps.summary.FileWriter"   # its source_metadata.writer
_CLOSED_WARNING = ("Attempting to use a closed FileWriter. The operation will be a noop unless "
                   "the FileWriter is explicitly reopened.")   # TF1's words
_EXIT_CLOSE_SECS = 10.0   # how long interpreter exit waits for each writer to write what it holds
_writer_ids = itertools.count()  # event file names carry the time in seconds only: make them unique


def summary_iterator(path):
    """Yield the tf.Event records of the event file ``path`` (TF1's tf.train.summary_iterator);
    ``event.summary.value`` holds tf.Summary.Value protos."""
    for record in python_io.tf_record_iterator(path):
        yield Event.FromString(record)


# -- values as the protos an event holds ---------------------------------------------------------
def _step(global_step):
    """A global step (Python or numpy number, or None) as a Python int or None."""
    if global_step is None:
        return None
    try:
        return int(np.asarray(global_step))
    except (TypeError, ValueError):
        raise TypeError("global_step must be a number (the training step), got %r"
                        % (global_step,)) from None


def _as_message(cls, value, what, expected):
    """``value`` as the zps message ``cls``: itself, or a protobuf message of the same type (a
    TensorFlow or tensorboardX proto) parsed from its bytes; TypeError for anything else."""
    if isinstance(value, cls):
        return value
    full_name = getattr(getattr(value, "DESCRIPTOR", None), "full_name", None)
    # TensorBoard's and tensorboardX's copies of TF's protos have their own packages
    if full_name and full_name.partition(".")[2] == cls.FULL_NAME.partition(".")[2] \
            and hasattr(value, "SerializeToString"):
        return cls.FromString(value.SerializeToString())
    raise TypeError("FileWriter.%s takes %s, got %s" % (what, expected,
                                                        full_name or type(value).__name__))


def _summary(summary):
    """A tf.Summary from a summary op's fetched value (bytes or a numpy string scalar), a
    tf.Summary, or a TensorFlow / tensorboardX Summary proto."""
    if isinstance(summary, (bytes, bytearray, np.ndarray)):
        return _parse_summary(summary, "FileWriter.add_summary")   # a clear error for bad bytes
    if not isinstance(summary, Summary) and not hasattr(summary, "SerializeToString"):
        raise TypeError("FileWriter.add_summary takes a tf.Summary or the serialized summary a "
                        "summary op returns (bytes), got %s" % type(summary).__name__)
    return _as_message(Summary, summary, "add_summary", "a tf.Summary")


def _shape_proto(shape):
    if shape.ndims is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[{"size": -1 if d is None else d} for d in shape.as_list()])


def _attr_value(value):
    """An op attr as TensorFlow's AttrValue, or None when it has none (the node goes without it:
    TensorBoard shows attrs, it does not need them)."""
    if isinstance(value, (bool, np.bool_)):
        return AttrValue(b=bool(value))
    if isinstance(value, (int, np.integer)):
        return AttrValue(i=int(value)) if -2 ** 63 <= value < 2 ** 63 else None
    if isinstance(value, (float, np.floating)):
        return AttrValue(f=float(value))
    if isinstance(value, (str, bytes)):
        return AttrValue(s=value.encode("utf-8") if isinstance(value, str) else value)
    if isinstance(value, DType):
        return AttrValue(type=value.as_datatype_enum) if value.as_datatype_enum else None
    if isinstance(value, TensorShape):
        return AttrValue(shape=_shape_proto(value))
    if isinstance(value, np.ndarray):
        try:
            return AttrValue(tensor=_tensor_proto(value))
        except (TypeError, ValueError, AttributeError):
            return None     # an array of Python objects
    if isinstance(value, (list, tuple)):
        items = [_attr_value(v) for v in value]
        kinds = {None if a is None else a.WhichOneof("value") for a in items}
        if None in kinds or "list" in kinds or len(kinds) > 1:
            return None     # a nested or mixed list: no AttrValue holds it
        return AttrValue(list={kinds.pop(): [getattr(a, a.WhichOneof("value")) for a in items]}
                         if items else {})
    return None


def _node_proto(name, op_type, inputs, device, attrs):
    node = NodeDefProto(name=name, op=op_type, input=inputs, device=device or "")
    for key, value in sorted(attrs.items()):
        attr = _attr_value(value)
        if attr is not None:
            node.attr[key].CopyFrom(attr)
    return node


def _graph_node(op):
    """An Operation as a NodeDefProto, with its outputs' static shapes (as TF1 writes them)."""
    def input_name(t):
        return t.op.name if t.value_index == 0 else t.name

    return _node_proto(op.name, op.type, [input_name(t) for t in op.inputs]
                       + ["^" + c.name for c in op.control_inputs], op.device,
                       dict(op.attrs, _output_shapes=[t.get_shape() for t in op.outputs]))


def _graph_def_node(node):
    """A node of a zps graph_def (plain data) as a NodeDefProto."""
    attrs = {}
    for key, value in node.get("attr", {}).items():
        with contextlib.suppress(ValueError):
            attrs[key] = decode_attr(value)
    return _node_proto(node["name"], node["op"], list(node.get("input", ())), node.get("device"),
                       attrs)


def _graph_def_bytes(graph):
    """A tf.Graph, a zps graph_def, or a GraphDef proto as TensorFlow's serialized GraphDef."""
    if isinstance(graph, Graph):
        return GraphDefProto(node=[_graph_node(op) for op in graph.get_operations()]) \
            .SerializeToString()
    if isinstance(graph, dict) and isinstance(graph.get("node"), list):
        return GraphDefProto(node=[_graph_def_node(n) for n in graph["node"]]).SerializeToString()
    return _as_message(GraphDefProto, graph, "add_graph", "a tf.Graph, or the deprecated "
                       "graph_def: a zps graph_def or a GraphDef proto").SerializeToString()


def _run_metadata_bytes(run_metadata):
    """A zps tf.RunMetadata (or a RunMetadata proto) as TensorFlow's serialized RunMetadata."""
    if isinstance(run_metadata, RunMetadata):
        proto = RunMetadataProto(step_stats={"dev_stats": [
            {"device": dev.device, "node_stats": [
                {"node_name": s.node_name, "all_start_micros": s.all_start_micros,
                 "op_start_rel_micros": s.op_start_rel_micros,
                 "op_end_rel_micros": s.op_end_rel_micros,
                 "all_end_rel_micros": s.all_end_rel_micros, "timeline_label": s.timeline_label,
                 "scheduled_micros": s.scheduled_micros, "thread_id": s.thread_id & 0xFFFFFFFF}
                for s in dev.node_stats]}
            for dev in run_metadata.step_stats.dev_stats]})
        for graph in run_metadata.partition_graphs:
            proto.partition_graphs.append(GraphDefProto.FromString(_graph_def_bytes(graph)))
        return proto.SerializeToString()
    return _as_message(RunMetadataProto, run_metadata, "add_run_metadata",
                       "a tf.RunMetadata").SerializeToString()


# -- the event file and its writer thread --------------------------------------------------------
class _Queue:
    """A FIFO of at most ``maxsize`` items (<= 0: unbounded) whose ``put`` blocks while it is
    full; once closed, ``put`` returns False instead of blocking (TF's CloseableQueue)."""

    def __init__(self, maxsize):
        self._maxsize, self._items, self._closed = maxsize, collections.deque(), False
        self._cond = threading.Condition()

    def put(self, item, timeout=None):
        """Append ``item``; False when the queue is (or gets) closed or ``timeout`` passes."""
        with self._cond:
            if not self._cond.wait_for(
                    lambda: self._closed or not 0 < self._maxsize <= len(self._items), timeout) \
                    or self._closed:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def get(self, timeout=None):
        """The next item, or None when ``timeout`` seconds pass first."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._items, timeout):
                return None
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def close(self):
        """Refuse further puts; return the items left."""
        with self._cond:
            self._closed = True
            left, self._items = list(self._items), collections.deque()
            self._cond.notify_all()
            return left


class _Flush:
    """A flush request: ``done`` is set once the events queued before it are on disk."""

    def __init__(self):
        self.done = threading.Event()


_CLOSE = object()   # ends the writer thread, after it has flushed and closed the file


class _EventWriterThread(threading.Thread):
    """Writes queued serialized events to one event file: flushes when asked, ``flush_secs``
    after a write, and at the end. Its first error ends it: logged once, kept in ``error`` for the
    FileWriter to raise in its caller."""

    def __init__(self, file, path, queue, flush_secs):
        super().__init__(name="zps-EventFileWriter", daemon=True)
        self.path, self.queue, self.error = path, queue, None
        self._file, self._flush_secs = file, flush_secs

    def run(self):
        try:
            self._write_until_closed()
            self._file.close()
        except Exception as e:   # noqa: BLE001 - any failure ends the file; the caller gets it
            self.error = e
            _logger.error("tf.summary.FileWriter could not write the event file %s: %s "
                          "(raised by the next call on the writer)", self.path, e)
            with contextlib.suppress(Exception):
                self._file.close()
        finally:
            for item in self.queue.close():    # nobody may wait for a flush that cannot come
                if isinstance(item, _Flush):
                    item.done.set()

    def _write_until_closed(self):
        next_flush, dirty = 0.0, False    # TF flushes the first event at once
        while True:
            item = self.queue.get(max(0.0, next_flush - time.monotonic()) if dirty else None)
            if item is _CLOSE:
                if dirty:
                    self._flush()
                return
            if item is None or isinstance(item, _Flush):   # flush_secs passed, or flush()
                try:
                    if dirty:
                        self._flush()
                        dirty, next_flush = False, time.monotonic() + self._flush_secs
                finally:
                    if item is not None:
                        item.done.set()     # the caller checks ``error`` then
                continue
            self._file.write(item)
            dirty = True
            if time.monotonic() >= next_flush:
                self._flush()
                dirty, next_flush = False, time.monotonic() + self._flush_secs

    def _flush(self):
        self._file.flush()
        if not os.path.exists(self.path):   # an open file survives its removal: TF checks too
            raise errors.NotFoundError(None, None, "the file has disappeared (was its logdir "
                                       "removed?); the events written to it are lost")


def _writer_error(path, error):
    """A writer thread's failure as the TF1 error its caller gets."""
    if isinstance(error, OSError):
        code, reason = errors.from_os_error(error, path).error_code, error.strerror or error
    else:
        code, reason = getattr(error, "error_code", errors.UNKNOWN), error
    return errors.from_code(code, "tf.summary.FileWriter stopped writing %s: %s. The writer is "
                            "closed and the events added after the failure were dropped: fix the "
                            "cause and call reopen() to write a new event file" % (path, reason))


@atexit.register
def _close_writers_at_exit():
    """Write what open writers still hold (their daemon threads die with the interpreter)."""
    for thread in threading.enumerate():
        if isinstance(thread, _EventWriterThread) and thread.queue.put(_CLOSE, _EXIT_CLOSE_SECS):
            thread.join(_EXIT_CLOSE_SECS)


class FileWriter:
    """Writes summaries, session logs, the graph and run metadata to a TensorBoard event file in
    ``logdir`` (TF1's tf.summary.FileWriter).

    A background thread writes the events: an ``add_*`` call blocks only while ``max_queue``
    events wait; they reach the disk ``flush_secs`` after they were written, at ``flush()`` and at
    ``close()``. After ``close()`` writes are dropped with a warning, as in TF1, until
    ``reopen()``, which starts a new event file. An error of the writer thread (a full disk, a
    removed logdir) is raised by the next ``add_*``, ``flush`` or ``close`` call, and closes the
    writer. ``session`` is not supported (zps has no summary-writer resources).
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        if session is not None:
            raise ValueError("tf.summary.FileWriter(session=...) is not supported by zps: create "
                             "the writer without a session and pass it the fetched summaries")
        self._logdir = str(logdir)
        self._max_queue, self._flush_secs = int(max_queue), float(flush_secs)
        self._suffix = filename_suffix or ""
        self._lock = threading.Lock()       # opening and closing
        self._seen_summary_tags = set()     # tags whose metadata was written (TF1 writes it once)
        self._run_metadata_tags = set()
        self._closed = True
        self._open()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self):
        seconds = int(time.time())
        path = os.path.join(self._logdir, "events.out.tfevents.%010d.%s.%d.%d%s" % (
            seconds, socket.gethostname(), os.getpid(), next(_writer_ids), self._suffix))
        try:
            gfile.MakeDirs(self._logdir)
            file = python_io.TFRecordWriter(path)
        except errors.OpError as e:
            raise type(e)(None, None, "tf.summary.FileWriter cannot create an event file in "
                          "logdir %s: %s" % (self._logdir, e.message)) from e
        try:     # the first record names the format, and is on disk at once (as TF's)
            file.write(Event(wall_time=seconds, file_version=_FILE_VERSION,
                             source_metadata={"writer": _WRITER_NAME}).SerializeToString())
            file.flush()
        except OSError as e:
            file.close()
            raise _writer_error(path, e) from e
        self._queue = _Queue(self._max_queue)
        self._worker = _EventWriterThread(file, path, self._queue, self._flush_secs)
        self._worker.start()
        self._closed = False

    def get_logdir(self):
        """The directory the event files are written to."""
        return self._logdir

    # -- writing -----------------------------------------------------------------------------
    def add_summary(self, summary, global_step=None):
        """Write ``summary`` (a summary op's fetched value, or a tf.Summary) at ``global_step``.

        As TF1, a value's ``metadata`` is written with the first value of its tag only."""
        summary, step = _summary(summary), _step(global_step)
        if any(v.HasField("metadata") and v.tag in self._seen_summary_tags for v in summary.value):
            summary = Summary.FromString(summary.SerializeToString())   # the caller's stays
            for v in summary.value:
                if v.tag in self._seen_summary_tags:
                    v.ClearField("metadata")
        self._seen_summary_tags.update(v.tag for v in summary.value if v.HasField("metadata"))
        self._add(Event(summary=summary), step)

    def add_session_log(self, session_log, global_step=None):
        """Write a tf.SessionLog (or a status name: "START", "STOP" or "CHECKPOINT")."""
        if isinstance(session_log, str):
            if session_log.upper() not in ("START", "STOP", "CHECKPOINT"):
                raise ValueError("FileWriter.add_session_log takes a tf.SessionLog or a status "
                                 "name, 'START', 'STOP' or 'CHECKPOINT'; got %r" % session_log)
            session_log = SessionLog(status=getattr(SessionLog, session_log.upper()))
        session_log = _as_message(SessionLog, session_log, "add_session_log", "a tf.SessionLog")
        self._add(Event(session_log=session_log), _step(global_step))

    def add_event(self, event, step=None):
        """Write a tf.Event as is (its wall time set to now when unset; its step to ``step``
        when given)."""
        event = _as_message(Event, event, "add_event", "a tf.Event")
        if not event.wall_time or step is not None:
            event = Event.FromString(event.SerializeToString())   # the caller's stays
            event.wall_time = event.wall_time or time.time()
            if step is not None:
                event.step = _step(step)
        self._put(event.SerializeToString())

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Write ``graph`` (a tf.Graph; or a zps graph_def or GraphDef proto, deprecated in TF1
        as here through ``graph_def``) for TensorBoard's graph view: each op's name, type,
        inputs (``^name`` for control inputs), device, attrs and output shapes."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        self._add(Event(graph_def=_graph_def_bytes(graph if graph is not None else graph_def)),
                  _step(global_step))

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Write the tf.RunMetadata of a traced ``Session.run`` under ``tag`` (once per tag):
        TensorBoard's graph view shows each op's compute time from it."""
        if tag in self._run_metadata_tags:
            raise ValueError("The provided tag was already used for this event type")
        data = _run_metadata_bytes(run_metadata)
        self._run_metadata_tags.add(tag)
        self._add(Event(tagged_run_metadata=TaggedRunMetadata(tag=tag, run_metadata=data)),
                  _step(global_step))

    def _add(self, event, step):
        event.wall_time = time.time()
        if step is not None:
            event.step = step
        self._put(event.SerializeToString())

    def _put(self, item):
        """Queue ``item`` for the writer thread; False when it was dropped (a closed writer)."""
        if self._closed:
            warnings.warn(_CLOSED_WARNING, stacklevel=3)
            return False
        self._raise_failure()
        if self._queue.put(item):
            return True
        self._raise_failure()      # the thread failed while this call waited
        return False

    def _raise_failure(self):
        """Raise the writer thread's error, once: the writer is closed from then on."""
        if self._worker.error is not None:
            with self._lock:
                if not self._closed:
                    self._end()

    def _end(self):
        self._worker.join()
        self._closed = True
        if self._worker.error is not None:
            raise _writer_error(self._worker.path, self._worker.error) from self._worker.error

    # -- flushing and closing ----------------------------------------------------------------
    def flush(self):
        """Write every event added so far to disk (returns once they are)."""
        request = _Flush()
        if self._put(request):
            request.done.wait()
            self._raise_failure()

    def close(self):
        """Flush and close the event file; later writes are dropped until ``reopen``. Closing a
        closed writer does nothing."""
        with self._lock:
            if not self._closed:
                self._queue.put(_CLOSE)     # refused only when the thread has already ended
                self._end()

    def reopen(self):
        """Reopen a closed writer: later writes go to a new event file in the same logdir
        (nothing to do when it is open)."""
        with self._lock:
            if self._closed:
                self._open()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """One shared FileWriter per logdir (for the graph current at its first use)."""

    _cache = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir):
        """The FileWriter of ``logdir``, created (with the default graph) at the first call."""
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriter(logdir, graph=get_default_graph())
                FileWriterCache._cache[logdir] = writer
            return writer

    @staticmethod
    def clear():
        """Close and forget every cached writer (all are closed even when one fails: the first
        error is raised then)."""
        with FileWriterCache._lock:
            writers = list(FileWriterCache._cache.values())
            FileWriterCache._cache.clear()
        failure = None
        for writer in writers:
            try:
                writer.close()
            except errors.OpError as e:
                failure = failure or e
        if failure is not None:
            raise failure
