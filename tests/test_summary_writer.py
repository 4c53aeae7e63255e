"""tf.summary.FileWriter writing TensorBoard event files itself (TF1's EventFileWriter): the file
and its first record, what each add_* writes (read back with summary_iterator and TensorBoard),
the writer thread (max_queue, flush_secs, errors), close / reopen, and training loops that write
summaries without tensorboardX."""

import errno
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import zps as tf
from tests.ops.test_summary_ops import decode_png
from zps import python_io, summary
from zps.framework import errors
from zps.framework.serialization import encode_attr

WAIT_S = 10.0   # upper bound of every wait for the writer thread


def _files(logdir):
    """The event files in ``logdir``, oldest first."""
    return sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")), key=os.path.getmtime)


def _events(path):
    return list(summary.summary_iterator(path))


def _summary_steps(logdir):
    """(step, tag, simple_value) of the summaries written to ``logdir`` so far."""
    return [(e.step, v.tag, v.simple_value) for path in _files(logdir) for e in _events(path)
            for v in e.summary.value]


def _scalar(tag, value):
    return tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=value)])


def _wait_until(predicate, what, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out after %gs waiting for %s" % (timeout, what)
        time.sleep(0.01)


def _accumulator(logdir, **size_guidance):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    acc = event_accumulator.EventAccumulator(logdir, size_guidance=size_guidance)
    acc.Reload()
    return acc


@pytest.fixture
def no_tensorboardx(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)   # `import tensorboardX` fails


# -- the event file ------------------------------------------------------------------------------
def test_file_name_and_first_record_are_tensorflows(tmp_path, no_tensorboardx):
    logdir = str(tmp_path / "new" / "dir")                       # created as TF1 does
    with summary.FileWriter(logdir, filename_suffix=".v1") as writer:
        assert writer.get_logdir() == logdir
    (path,) = _files(logdir)
    name = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.%s\.%d\.\d+\.v1"
                        % (re.escape(socket.gethostname()), os.getpid()), os.path.basename(path))
    assert name, os.path.basename(path)
    (first,) = _events(path)
    assert first.WhichOneof("what") == "file_version" and first.file_version == "brain.Event:2"
    assert first.wall_time == int(name.group(1))                # TF writes whole seconds
    assert first.source_metadata.writer == "zps.summary.FileWriter"


def test_two_writers_in_one_second_write_two_files(tmp_path):
    with summary.FileWriter(str(tmp_path)), summary.FileWriter(str(tmp_path)):
        pass
    assert len(os.listdir(tmp_path)) == 2


# -- what add_* writes ---------------------------------------------------------------------------
def test_scalars_histograms_images_text_round_trip(tmp_path, no_tensorboardx):
    logdir = str(tmp_path)
    values = np.array([0.5, -1.0, 4.0], np.float32)
    pixels = np.arange(12, dtype=np.uint8).reshape(1, 2, 2, 3)
    with tf.Graph().as_default():
        summary.scalar("loss", tf.constant(0.75))
        summary.histogram("w", tf.constant(values))
        summary.image("pic", tf.constant(pixels))
        summary.text("note", tf.constant("**done**"))
        merged = summary.merge_all()
        with tf.Session() as sess, summary.FileWriter(logdir) as writer:
            serialized = sess.run(merged)
            writer.add_summary(serialized, global_step=np.int64(3))
            writer.add_summary(tf.Summary.FromString(serialized), 4)
    (path,) = _files(logdir)
    events = _events(path)
    assert [e.WhichOneof("what") for e in events] == ["file_version", "summary", "summary"]
    assert [e.step for e in events[1:]] == [3, 4]
    assert all(e.wall_time > events[0].wall_time - 1 for e in events[1:])
    assert events[1].summary.SerializeToString() == serialized    # written as the op made it
    loss, w, pic, note = events[2].summary.value
    assert (loss.tag, loss.simple_value) == ("loss", 0.75)
    assert (w.histo.min, w.histo.max, w.histo.num, w.histo.sum, w.histo.sum_squares) == \
        (-1.0, 4.0, 3.0, 3.5, 17.25)
    assert (pic.tag, pic.image.height, pic.image.width, pic.image.colorspace) == \
        ("pic/image/0", 2, 2, 3)
    np.testing.assert_array_equal(decode_png(pic.image.encoded_image_string), pixels[0])
    assert (note.tag, list(note.tensor.string_val)) == ("note", [b"**done**"])

    acc = _accumulator(logdir, scalars=0, histograms=0, images=0, tensors=0)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(3, 0.75), (4, 0.75)]
    histo = acc.Histograms("w")[0].histogram_value
    assert (histo.min, histo.max, histo.num, histo.sum) == (-1.0, 4.0, 3.0, 3.5)
    assert sum(histo.bucket) == 3
    image = acc.Images("pic/image/0")[1]
    assert (image.step, image.height, image.width) == (4, 2, 2)
    np.testing.assert_array_equal(decode_png(image.encoded_image_string), pixels[0])
    assert [t.tensor_proto.string_val for t in acc.Tensors("note")] == [[b"**done**"]] * 2


def test_metadata_is_written_with_the_first_value_of_a_tag_only(tmp_path):
    # TF1's SummaryToEventTransformer drops the metadata of tags it has written before.
    with tf.Graph().as_default():
        note = summary.text("note", tf.constant("x"))
        with tf.Session() as sess:
            fetched = tf.Summary.FromString(sess.run(note))
    with summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(fetched, 1)
        writer.add_summary(fetched, 2)
    assert fetched.value[0].metadata.plugin_data.plugin_name == "text"   # the caller's is kept
    _, first, second = _events(_files(str(tmp_path))[0])
    assert first.summary.value[0].metadata.plugin_data.plugin_name == "text"
    assert not second.summary.value[0].HasField("metadata")
    assert list(second.summary.value[0].tensor.string_val) == [b"x"]


def test_session_logs_events_and_protos_from_tensorboard(tmp_path, no_tensorboardx):
    event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
    summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
    with summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag="tb", simple_value=2.0)]), 1)
        writer.add_session_log("checkpoint", 2)
        writer.add_session_log(tf.SessionLog(status=tf.SessionLog.STOP, msg="bye"), 3)
        writer.add_session_log(event_pb2.SessionLog(status=event_pb2.SessionLog.START), 4)
        writer.add_event(tf.Event(wall_time=12.5, step=9, summary=_scalar("as_is", 1.0)))
        writer.add_event(event_pb2.Event(step=5, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="tb_event", simple_value=3.0)])), step=10)
        with pytest.raises(TypeError, match="add_summary takes a tf.Summary, got tensorboard.Event"):
            writer.add_summary(event_pb2.Event())
    events = _events(_files(str(tmp_path))[0])[1:]
    assert [(e.step, e.summary.value[0].tag) for e in events if e.HasField("summary")] == \
        [(1, "tb"), (9, "as_is"), (10, "tb_event")]
    assert [(e.step, e.session_log.status, e.session_log.msg) for e in events
            if e.HasField("session_log")] == [(2, 3, ""), (3, 2, "bye"), (4, 1, "")]
    assert events[4].wall_time == 12.5 and events[5].wall_time > 12.5   # unset: now


def test_bad_values_give_clear_errors(tmp_path):
    with summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(TypeError, match="takes a tf.Summary or the serialized summary.*float"):
            writer.add_summary(3.0)
        with pytest.raises(ValueError, match="not a serialized tf.Summary"):
            writer.add_summary(b"\xff\xff\xff")
        with pytest.raises(TypeError, match="add_summary takes a tf.Summary, got Event"):
            writer.add_summary(tf.Event(step=1))
        with pytest.raises(TypeError, match="global_step must be a number.*'last'"):
            writer.add_summary(_scalar("x", 1.0), global_step="last")
        with pytest.raises(TypeError, match="expected one of: int, float"):
            tf.Summary.Value(tag="x", simple_value="high")
        with pytest.raises(ValueError, match="'START', 'STOP' or 'CHECKPOINT'; got 'RESTART'"):
            writer.add_session_log("RESTART")
        with pytest.raises(TypeError, match="add_event takes a tf.Event, got Summary"):
            writer.add_event(_scalar("x", 1.0))
    assert [e.WhichOneof("what") for e in _events(_files(str(tmp_path))[0])] == ["file_version"]


# -- the graph and run metadata ------------------------------------------------------------------
def _graph():
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            a = tf.constant([1.0, 2.0], name="a")
        _, idx = tf.unique(tf.constant([3, 1, 3], name="ints"), name="u")
        idx = tf.cast(idx, tf.float32)[:2]
        with tf.control_dependencies([tf.no_op(name="first")]):
            tf.add(a, idx, name="sum")
    return g


def _check_graph_def(graph_def):
    nodes = {n.name: n for n in graph_def.node}
    assert (nodes["a"].op, nodes["a"].device, list(nodes["a"].input)) == \
        ("Const", "/job:ps/task:0", [])
    assert nodes["a"].attr["dtype"].type == 1                               # DT_FLOAT
    assert np.frombuffer(nodes["a"].attr["value"].tensor.tensor_content, "<f4").tolist() == \
        [1.0, 2.0]
    assert list(nodes["u"].input) == ["ints"] and nodes["u"].op == "Unique"
    cast = [n for n in graph_def.node if n.op == "Cast"][0]
    assert list(cast.input) == ["u:1"]
    assert nodes["sum"].op == "Add" and list(nodes["sum"].input)[-1] == "^first"
    return nodes


def test_graph_written_for_tensorboard(tmp_path, no_tensorboardx):
    g = _graph()
    with summary.FileWriter(str(tmp_path), graph=g):
        pass
    graph_events = [e for e in _events(_files(str(tmp_path))[0]) if e.HasField("graph_def")]
    assert len(graph_events) == 1
    nodes = _check_graph_def(_accumulator(str(tmp_path)).Graph())       # TensorBoard loads it
    assert [d.size for d in nodes["a"].attr["_output_shapes"].list.shape[0].dim] == [2]
    assert {n.name for n in nodes.values()} == {op.name for op in g.get_operations()}


def test_graph_def_forms(tmp_path):
    graph_pb2 = pytest.importorskip("tensorboard.compat.proto.graph_pb2")
    g = _graph()
    with summary.FileWriter(str(tmp_path), graph_def=g.as_graph_def()) as writer:   # zps's
        writer.add_graph(graph_pb2.GraphDef(node=[{"name": "tb", "op": "NoOp"}]), global_step=3)
        with pytest.raises(ValueError, match="only graph, or graph_def"):
            writer.add_graph(g, graph_def=g.as_graph_def())
        with pytest.raises(TypeError, match="takes a tf.Graph, or the deprecated graph_def"):
            writer.add_graph(42)
    zps_def, tb_def = [graph_pb2.GraphDef.FromString(e.graph_def)
                       for e in _events(_files(str(tmp_path))[0]) if e.HasField("graph_def")]
    _check_graph_def(zps_def)
    assert [n.name for n in tb_def.node] == ["tb"]


def test_run_metadata_for_tensorboard(tmp_path):
    with tf.Graph().as_default():
        y = tf.add(tf.constant(1.0, name="x"), 2.0, name="y")
        meta = tf.RunMetadata()
        with tf.Session() as sess:
            sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
    with summary.FileWriter(str(tmp_path)) as writer:
        writer.add_run_metadata(meta, "step7", global_step=7)
        with pytest.raises(ValueError, match="tag was already used"):
            writer.add_run_metadata(meta, "step7")
        with pytest.raises(TypeError, match="takes a tf.RunMetadata, got dict"):
            writer.add_run_metadata({}, "other")
    proto = _accumulator(str(tmp_path)).RunMetadata("step7")
    expected = [(d.device, [(s.node_name, s.all_start_micros, s.all_end_rel_micros)
                            for s in d.node_stats]) for d in meta.step_stats.dev_stats]
    assert [(d.device, [(s.node_name, s.all_start_micros, s.all_end_rel_micros)
                        for s in d.node_stats]) for d in proto.step_stats.dev_stats] == expected
    assert "y" in {s.node_name for d in proto.step_stats.dev_stats for s in d.node_stats}


def test_graph_def_run_metadata_and_first_event_bytes_are_tensorflows(tmp_path):
    pb2 = {name: pytest.importorskip("tensorboard.compat.proto.%s_pb2" % name)
           for name in ("config", "event", "graph", "node_def")}
    attrs = {"b": True, "i": -3, "f": 0.5, "s": "text", "type": tf.int32,
             "shape": tf.TensorShape([None, 3]), "rankless": tf.TensorShape(None),
             "ints": [1, 2], "types": [tf.float32, tf.string], "empty": [],
             "value": np.array([1.5, -2.0], np.float32), "skipped": {"a": 1}}
    node = {"name": "n", "op": "Op", "input": ["a", "b:1", "^c"], "device": "/job:ps/task:0",
            "attr": {k: encode_attr(v) for k, v in attrs.items()}}
    meta = tf.RunMetadata()
    meta.step_stats.add_device("/job:worker/task:0", [("n", 1000, 1250, "n = Op(a)", 7)])
    with summary.FileWriter(str(tmp_path)) as writer:
        writer.add_graph(None, graph_def={"node": [node]})
        writer.add_run_metadata(meta, "traced")
    first, graph_event, meta_event = _events(_files(str(tmp_path))[0])

    expected = pb2["node_def"].NodeDef(name="n", op="Op", input=["a", "b:1", "^c"],
                                       device="/job:ps/task:0")
    expected.attr["b"].b, expected.attr["i"].i, expected.attr["f"].f = True, -3, 0.5
    expected.attr["s"].s, expected.attr["type"].type = b"text", 3
    expected.attr["shape"].shape.dim.add(size=-1)
    expected.attr["shape"].shape.dim.add(size=3)
    expected.attr["rankless"].shape.unknown_rank = True
    expected.attr["ints"].list.i.extend([1, 2])
    expected.attr["types"].list.type.extend([1, 7])
    expected.attr["empty"].list.SetInParent()
    tensor = expected.attr["value"].tensor
    tensor.dtype, tensor.tensor_content = 1, np.array([1.5, -2.0], "<f4").tobytes()
    tensor.tensor_shape.dim.add(size=2)
    assert graph_event.graph_def == \
        pb2["graph"].GraphDef(node=[expected]).SerializeToString(deterministic=True)

    run = pb2["config"].RunMetadata()
    stats = run.step_stats.dev_stats.add(device="/job:worker/task:0").node_stats.add(
        node_name="n", all_start_micros=1000, op_end_rel_micros=250, all_end_rel_micros=250,
        timeline_label="n = Op(a)", thread_id=7)
    assert stats.op_start_rel_micros == 0
    assert meta_event.tagged_run_metadata.tag == "traced"
    assert meta_event.tagged_run_metadata.run_metadata == run.SerializeToString()

    assert first.SerializeToString() == pb2["event"].Event(
        wall_time=first.wall_time, file_version="brain.Event:2",
        source_metadata={"writer": "zps.summary.FileWriter"}).SerializeToString()


# -- the writer thread ---------------------------------------------------------------------------
def test_max_queue_blocks_the_caller_until_the_thread_catches_up(tmp_path, monkeypatch):
    writer = summary.FileWriter(str(tmp_path), max_queue=2, flush_secs=600)
    entered, gate = threading.Event(), threading.Event()
    real_write = python_io.TFRecordWriter.write

    def slow_write(self, record):
        entered.set()
        gate.wait(WAIT_S)
        real_write(self, record)

    monkeypatch.setattr(python_io.TFRecordWriter, "write", slow_write)
    writer.add_summary(_scalar("s", 1.0), 1)          # the thread takes it and waits in write
    assert entered.wait(WAIT_S)
    writer.add_summary(_scalar("s", 2.0), 2)          # queued
    writer.add_summary(_scalar("s", 3.0), 3)          # queued: the queue is full
    fourth = threading.Thread(target=writer.add_summary, args=(_scalar("s", 4.0), 4))
    fourth.start()
    fourth.join(0.3)
    assert fourth.is_alive()                          # blocked, as TF1's add_* calls are
    gate.set()
    fourth.join(WAIT_S)
    assert not fourth.is_alive()
    writer.close()
    assert _summary_steps(str(tmp_path)) == [(1, "s", 1.0), (2, "s", 2.0), (3, "s", 3.0),
                                             (4, "s", 4.0)]


def _on_disk(logdir):
    try:
        return _summary_steps(logdir)
    except errors.DataLossError:      # caught mid-write: read again
        return None


def test_events_reach_the_disk_flush_secs_after_they_are_written(tmp_path):
    slow, fast = str(tmp_path / "slow"), str(tmp_path / "fast")
    with summary.FileWriter(slow, flush_secs=600) as writer:
        writer.add_summary(_scalar("s", 1.0), 1)      # the first event is flushed at once
        _wait_until(lambda: _on_disk(slow) == [(1, "s", 1.0)], "the first event")
        writer.add_summary(_scalar("s", 2.0), 2)
        time.sleep(0.3)
        assert _on_disk(slow) == [(1, "s", 1.0)]       # 600 s to go
        writer.flush()                                 # returns once it is on disk
        assert _on_disk(slow) == [(1, "s", 1.0), (2, "s", 2.0)]
    with summary.FileWriter(fast, flush_secs=0.2) as writer:
        writer.add_summary(_scalar("s", 1.0), 1)
        writer.add_summary(_scalar("s", 2.0), 2)
        _wait_until(lambda: _on_disk(fast) == [(1, "s", 1.0), (2, "s", 2.0)],
                    "a flush after flush_secs, without flush()")


def test_close_is_idempotent_and_later_writes_are_dropped_with_tf1s_warning(tmp_path):
    writer = summary.FileWriter(str(tmp_path))
    writer.add_summary(_scalar("s", 1.0), 1)
    writer.close()
    writer.close()                                     # nothing to do, no warning
    with pytest.warns(UserWarning, match="Attempting to use a closed FileWriter"):
        writer.add_summary(_scalar("s", 2.0), 2)
    with pytest.warns(UserWarning, match="explicitly reopened"):
        writer.flush()
    assert _summary_steps(str(tmp_path)) == [(1, "s", 1.0)]


def test_reopen_writes_a_new_file(tmp_path):
    with summary.FileWriter(str(tmp_path)) as writer:
        writer.reopen()                                # open: nothing to do
        writer.add_summary(_scalar("s", 1.0), 1)
        writer.close()
        writer.reopen()
        writer.add_summary(_scalar("s", 2.0), 2)
    first, second = _files(str(tmp_path))
    assert [(e.WhichOneof("what"), e.step) for e in _events(first)] == \
        [("file_version", 0), ("summary", 1)]
    assert [(e.WhichOneof("what"), e.step) for e in _events(second)] == \
        [("file_version", 0), ("summary", 2)]


def test_a_logdir_that_cannot_hold_files_fails_at_once(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(errors.AlreadyExistsError, match="cannot create an event file in logdir .*"
                       "file"):
        summary.FileWriter(str(blocker))
    with pytest.raises(errors.FailedPreconditionError, match="cannot create an event file"):
        summary.FileWriter(str(blocker / "sub"))


def test_a_writer_thread_error_is_logged_once_and_raised_by_the_next_call(tmp_path, monkeypatch,
                                                                          caplog):
    writer = summary.FileWriter(str(tmp_path), flush_secs=600)

    def disk_full(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(python_io.TFRecordWriter, "write", disk_full)
    writer.add_summary(_scalar("s", 1.0), 1)           # the thread fails on it
    deadline = time.monotonic() + WAIT_S
    with pytest.raises(errors.UnknownError, match=r"stopped writing .*events\.out\.tfevents.*"
                       r"No space left on device.*call reopen\(\)"):
        while time.monotonic() < deadline:
            writer.add_summary(_scalar("s", 2.0), 2)
            time.sleep(0.01)
    logged = [r for r in caplog.records if r.name == "zps.summary"]
    assert [r.levelname for r in logged] == ["ERROR"]
    assert "No space left on device" in logged[0].getMessage()
    with pytest.warns(UserWarning, match="closed FileWriter"):   # closed now, as after close()
        writer.add_summary(_scalar("s", 3.0), 3)
    writer.close()
    monkeypatch.undo()
    writer.reopen()
    writer.add_summary(_scalar("s", 4.0), 4)
    writer.close()
    assert _summary_steps(str(tmp_path)) == [(4, "s", 4.0)]


def test_a_removed_logdir_is_reported_by_flush_and_close(tmp_path):
    logdir = str(tmp_path / "logs")
    writer = summary.FileWriter(logdir, flush_secs=600)
    writer.add_summary(_scalar("s", 1.0), 1)
    writer.flush()
    shutil.rmtree(logdir)
    writer.add_summary(_scalar("s", 2.0), 2)
    with pytest.raises(errors.NotFoundError, match="has disappeared .*logdir removed"):
        writer.flush()
    writer.close()                                     # closed by the error: nothing to do
    writer.reopen()                                    # makes the logdir again
    writer.add_summary(_scalar("s", 3.0), 3)
    writer.close()
    assert _summary_steps(logdir) == [(3, "s", 3.0)]

    other = summary.FileWriter(logdir, flush_secs=600)
    other.add_summary(_scalar("s", 1.0), 1)
    other.flush()                                      # nothing left to lose ...
    shutil.rmtree(logdir)
    other.close()                                      # ... so closing is fine (as in TF)
    other = summary.FileWriter(logdir, flush_secs=600)
    other.add_summary(_scalar("s", 1.0), 1)
    other.add_summary(_scalar("s", 2.0), 2)            # waits for flush_secs
    shutil.rmtree(logdir)
    with pytest.raises(errors.NotFoundError, match="has disappeared"):
        other.close()


def test_file_writer_cache_clear_closes_every_writer_then_raises(tmp_path):
    gone, kept = str(tmp_path / "gone"), str(tmp_path / "kept")
    with tf.Graph().as_default():
        for logdir in (gone, kept):
            writer = summary.FileWriterCache.get(logdir)   # writes the graph: flushed at once
            writer.add_summary(_scalar("s", 1.0), 1)       # held for flush_secs (120)
    shutil.rmtree(gone)
    with pytest.raises(errors.NotFoundError, match="gone"):
        summary.FileWriterCache.clear()
    assert _summary_steps(kept) == [(1, "s", 1.0)]


def test_interpreter_exit_writes_what_an_open_writer_holds(tmp_path):
    script = ("import sys, zps as tf\n"
              "w = tf.summary.FileWriter(sys.argv[1], flush_secs=600)\n"
              "for step in (1, 2, 3):\n"
              "    w.add_summary(tf.Summary(value=[{'tag': 's', 'simple_value': step}]), step)\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=120,
                   cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert _summary_steps(str(tmp_path)) == [(1, "s", 1.0), (2, "s", 2.0), (3, "s", 3.0)]


# -- training loops ------------------------------------------------------------------------------
def test_monitored_training_session_writes_summaries_without_tensorboardx(tmp_path,
                                                                         no_tensorboardx):
    logdir = str(tmp_path)
    try:
        with tf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            summary.scalar("c", tf.constant(2.5))
            train_op = tf.assign_add(step, 1)
            with tf.train.MonitoredTrainingSession(checkpoint_dir=logdir,
                                                   save_summaries_steps=2) as sess:
                for _ in range(5):
                    sess.run(train_op)
    finally:
        summary.FileWriterCache.clear()                # closes the cached writer: all written
    assert [(s, tag, v) for s, tag, v in _summary_steps(logdir) if tag == "c"] == \
        [(1, "c", 2.5), (3, "c", 2.5), (5, "c", 2.5)]
    acc = _accumulator(logdir)
    assert [(e.step, e.value) for e in acc.Scalars("c")] == [(1, 2.5), (3, 2.5), (5, 2.5)]
    assert "global_step" in {n.name for n in acc.Graph().node}
    assert tf.train.latest_checkpoint(logdir) is not None
