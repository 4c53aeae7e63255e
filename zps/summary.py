"""``tf.summary``: summary ops and a FileWriter that writes TensorBoard event files.

The ops (``scalar``, ``histogram``, ``image``, ``text``, ``tensor_summary``, ``merge``,
``merge_all``) live in zps/ops/summary_ops.py and output serialized ``tf.Summary`` protos
(zps/ops/summary_proto.py); both need nothing beyond numpy. ``FileWriter`` writes real TensorBoard
event files through the optional ``tensorboardX`` package (``pip install "zps[summary]"``),
imported only when a writer is created; ``summary_iterator`` reads them back without it.

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

import itertools
import logging
import os
import threading

import numpy as np

from zps import python_io
from zps.framework.graph import get_default_graph
from zps.framework.protobuf import Message
from zps.ops.summary_ops import (
    _parse_summary,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from zps.ops.summary_proto import Event, SessionLog, Summary

__all__ = ["Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary", "histogram", "image",
           "merge", "merge_all", "scalar", "tensor_summary", "text"]

_logger = logging.getLogger("zps.summary")
_INSTALL_HINT = 'pip install "zps[summary]"'
_writer_ids = itertools.count()  # event file names carry the time in seconds only: make them unique


def _tensorboardx():
    """The tensorboardX package, or an ImportError saying how to install it."""
    try:
        import tensorboardX
        from tensorboardX.proto import event_pb2, graph_pb2, node_def_pb2, summary_pb2
    except ImportError as e:
        raise ImportError("tf.summary.FileWriter writes TensorBoard event files with the optional "
                          "tensorboardX package, which is not installed: run `%s` (or `pip "
                          "install tensorboardX`). (%s)" % (_INSTALL_HINT, e)) from e
    return tensorboardX, event_pb2, graph_pb2, node_def_pb2, summary_pb2


def _step(global_step):
    """A global step (Python or numpy int, or None) as a Python int or None."""
    return None if global_step is None else int(np.asarray(global_step))


def _pb2(pb2_class, message):
    """``message`` as the tensorboardX proto class ``pb2_class``: a zps message (tf.Summary ...)
    goes over as its bytes, which are TensorFlow's; a tensorboardX proto is returned as is."""
    if isinstance(message, Message):
        return pb2_class.FromString(message.SerializeToString())
    return message


def _summary_proto(summary_pb2, summary):
    """A tensorboardX Summary proto from a tf.Summary, a summary op's fetched value (bytes or a
    numpy string scalar), or a tensorboardX Summary proto."""
    if isinstance(summary, (bytes, bytearray, np.ndarray)):
        summary = _parse_summary(summary, "FileWriter.add_summary")  # a clear error for bad bytes
    elif not isinstance(summary, Message) and not hasattr(summary, "SerializeToString"):
        raise TypeError("FileWriter.add_summary takes a tf.Summary or the serialized summary a "
                        "summary op returns (bytes), got %s" % type(summary).__name__)
    return _pb2(summary_pb2.Summary, summary)


def summary_iterator(path):
    """Yield the tf.Event records of the event file ``path`` (TF1's tf.train.summary_iterator);
    ``event.summary.value`` holds tf.Summary.Value protos."""
    for record in python_io.tf_record_iterator(path):
        yield Event.FromString(record)


def _graph_def_proto(graph_pb2, node_def_pb2, graph):
    """A TensorBoard GraphDef of ``graph``'s ops (names, types, inputs, devices)."""
    def input_name(t):
        return t.op.name if t.value_index == 0 else "%s:%d" % (t.op.name, t.value_index)

    nodes = [node_def_pb2.NodeDef(name=op.name, op=op.type, device=op.device or "",
                                  input=[input_name(t) for t in op.inputs]
                                  + ["^" + c.name for c in op.control_inputs])
             for op in graph.get_operations()]
    return graph_pb2.GraphDef(node=nodes)


class FileWriter:
    """Writes summaries (and the graph) to a TensorBoard event file in ``logdir``.

    TF1's signature; ``session`` is not supported (zps has no summary-writer resources).
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        if session is not None:
            raise ValueError("tf.summary.FileWriter(session=...) is not supported by zps: create "
                             "the writer without a session and pass it the fetched summaries")
        self._tbx, self._event_pb2, self._graph_pb2, self._node_def_pb2, self._summary_pb2 = \
            _tensorboardx()
        self._logdir = str(logdir)
        self._options = (max_queue, flush_secs, filename_suffix or "")
        self._open()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self):
        # tensorboardX's own reopen() does not work after close(): each (re)open is a new writer,
        # writing a new event file.
        max_queue, flush_secs, suffix = self._options
        suffix = ".%d.%d%s" % (os.getpid(), next(_writer_ids), suffix)
        self._writer = self._tbx.FileWriter(self._logdir, max_queue=max_queue,
                                            flush_secs=flush_secs, filename_suffix=suffix)
        self._closed = False

    def get_logdir(self):
        return self._logdir

    def add_summary(self, summary, global_step=None):
        """Write ``summary`` (a summary op's fetched value, or a tf.Summary) at ``global_step``."""
        self._writer.add_summary(_summary_proto(self._summary_pb2, summary), _step(global_step))

    def add_session_log(self, session_log, global_step=None):
        """Write a tf.SessionLog (or a status name: "START", "STOP" or "CHECKPOINT")."""
        if isinstance(session_log, str):
            session_log = SessionLog(status=getattr(SessionLog, session_log.upper()))
        session_log = _pb2(self._event_pb2.SessionLog, session_log)
        self.add_event(self._event_pb2.Event(session_log=session_log), _step(global_step))

    def add_event(self, event, step=None):
        """Write a tf.Event as is (its wall time set to now when unset; its step to ``step``
        when given)."""
        event = _pb2(self._event_pb2.Event, event)
        self._writer.add_event(event, step, walltime=event.wall_time or None)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Write ``graph`` (a tf.Graph) for TensorBoard's graph view. A zps graph_def (plain data)
        alone is not written: pass the graph."""
        if graph is None:
            _logger.info("tf.summary.FileWriter: graph_def without a graph is not written to %s; "
                         "pass graph= to see the graph in TensorBoard", self._logdir)
            return
        proto = _graph_def_proto(self._graph_pb2, self._node_def_pb2, graph)
        self.add_event(self._event_pb2.Event(graph_def=proto.SerializeToString()), _step(global_step))

    def flush(self):
        self._writer.flush()

    def close(self):
        """Flush and close the event file; later writes are dropped until ``reopen``."""
        self._writer.close()
        self._closed = True

    def reopen(self):
        """Reopen a closed writer: later writes go to a new event file in the same logdir."""
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
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriter(logdir, graph=get_default_graph())
                FileWriterCache._cache[logdir] = writer
            return writer

    @staticmethod
    def clear():
        """Close and forget every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache.clear()
