"""tf.summary ops (scalar, histogram, merge, merge_all) and the FileWriter's event files."""

import glob
import os
import struct
import sys

import numpy as np
import pytest

import zps as tf
from zps import summary
from zps.framework import errors
from zps.ops import summary_ops
from zps.ops.summary_ops import decode_summary

GRAD_CASES = []  # summary ops have no gradient (grad=None)


def read_events(logdir):
    """Every Event of the event files in ``logdir`` (oldest file first), read with TensorBoard's
    reader when tensorboard is installed, else from the TFRecord framing (CRCs checked) with
    tensorboardX's Event proto. Skips the test when neither is available."""
    paths = sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")), key=os.path.getmtime)
    assert paths, "no event file in %s: %s" % (logdir, os.listdir(logdir))
    try:
        from tensorboard.backend.event_processing import event_file_loader
    except ImportError:
        event_file_loader = None
    if event_file_loader is not None:
        return [e for p in paths for e in event_file_loader.LegacyEventFileLoader(p).Load()]
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
    crc32c = pytest.importorskip("tensorboardX.crc32c").crc32c

    def masked_crc32c(data):  # TFRecord's masked CRC-32C
        crc = crc32c(data)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    events = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos < len(data):
            header = data[pos:pos + 8]
            (length,) = struct.unpack("<Q", header)
            (header_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
            assert header_crc == masked_crc32c(header), "bad length CRC in %s" % path
            record = data[pos + 12:pos + 12 + length]
            (record_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
            assert record_crc == masked_crc32c(record), "bad record CRC in %s" % path
            events.append(event_pb2.Event.FromString(record))
            pos += 16 + length
    return events


def summary_values(events):
    """(step, tag, value) of every summary value of ``events``: a float, or the histo proto."""
    return [(e.step, v.tag, v.histo if v.HasField("histo") else v.simple_value)
            for e in events if e.HasField("summary") for v in e.summary.value]


def _run(t):
    with tf.Session() as sess:
        return decode_summary(sess.run(t))


# -- scalar --------------------------------------------------------------------------------------
def test_scalar_value_tag_and_collection():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        s = summary_ops.scalar("loss", x * 2)
        assert s.dtype == tf.string and s.get_shape().as_list() == []
        assert s.op.type == "ScalarSummary" and s.op.name == "loss"
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == [s]
        with tf.Session() as sess:
            assert decode_summary(sess.run(s, {x: 1.25})) == [{"tag": "loss", "simple_value": 2.5}]


def test_scalar_tag_follows_name_scope_family_and_cleaning():
    with tf.Graph().as_default():
        with tf.name_scope("layer1"):
            a = summary_ops.scalar("loss", tf.constant(1))
            b = summary_ops.scalar("loss", tf.constant(2.0), family="train")
            c = summary_ops.scalar("bad name:1", tf.constant(3.0, tf.float64))
        d = summary_ops.scalar("/root", tf.constant(4.0))
        tags = [_run(t)[0]["tag"] for t in (a, b, c, d)]
        assert tags == ["layer1/loss", "train/layer1/train/loss", "layer1/bad_name_1", "root"]
        assert a.op.name == "layer1/loss"
        assert [_run(t)[0]["simple_value"] for t in (a, b, c, d)] == [1.0, 2.0, 3.0, 4.0]
        # a second summary with the same name gets a unique op name and tag
        e = summary_ops.scalar("root", tf.constant(5.0))
        assert _run(e)[0]["tag"] == "root_1"


def test_scalar_collections_argument():
    with tf.Graph().as_default() as g:
        s = summary_ops.scalar("x", tf.constant(1.0), collections=["mine", "other"])
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == []
        assert g.get_collection("mine") == [s] and g.get_collection("other") == [s]
        t = summary_ops.scalar("y", tf.constant(1.0), collections=[])
        assert t not in g.get_collection(tf.GraphKeys.SUMMARIES)


def test_scalar_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"'v'.*scalar tensor.*shape \(2,\)|scalar tensor"):
            summary_ops.scalar("v", tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="real-valued.*string"):
            summary_ops.scalar("s", tf.constant("text"))
        with pytest.raises(ValueError, match="non-empty name"):
            summary_ops.scalar("", tf.constant(1.0))
        x = tf.placeholder(tf.float32)  # unknown rank: checked when run
        s = summary_ops.scalar("later", x)
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                                 match=r"'later' needs a scalar value.*\[3\]"):
            sess.run(s, {x: np.ones(3, np.float32)})


# -- histogram -----------------------------------------------------------------------------------
def _tf1_buckets(values):
    """TF1's histogram: exponential limits, bucket i counts values in [limit[i-1], limit[i])."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos.append(np.finfo(np.float64).max)
    limits = [-p for p in reversed(pos)] + [0.0] + pos
    counts = {}
    for x in values:
        i = next(i for i, lim in enumerate(limits) if lim > x)
        counts[limits[i]] = counts.get(limits[i], 0) + 1
    return counts


def test_histogram_fields_match_numpy_and_tf1_buckets():
    values = np.array([[0.5, -2.0, 3.0], [0.0, 3.0, 1e-13]], np.float32)
    with tf.Graph().as_default() as g:
        h = summary_ops.histogram("weights", tf.constant(values))
        assert h.op.type == "HistogramSummary" and g.get_collection(tf.GraphKeys.SUMMARIES) == [h]
        (value,) = _run(h)
    assert value["tag"] == "weights"
    histo = value["histo"]
    v64 = values.astype(np.float64).ravel()
    assert histo["min"] == -2.0 and histo["max"] == 3.0 and histo["num"] == 6
    np.testing.assert_allclose(histo["sum"], v64.sum())
    np.testing.assert_allclose(histo["sum_squares"], (v64 ** 2).sum())
    nonempty = {lim: c for lim, c in zip(histo["bucket_limit"], histo["bucket"]) if c}
    assert nonempty == _tf1_buckets(v64)
    assert sum(histo["bucket"]) == 6
    # runs of empty buckets are collapsed: never two empty buckets in a row
    empties = [c == 0 for c in histo["bucket"]]
    assert not any(a and b for a, b in zip(empties, empties[1:]))
    assert histo["bucket_limit"] == sorted(histo["bucket_limit"])
    assert histo["bucket_limit"][-1] == np.finfo(np.float64).max


def test_histogram_of_empty_tensor_and_nan_error():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        h = summary_ops.histogram("h", x)
        with tf.Session() as sess:
            (empty,) = decode_summary(sess.run(h, {x: np.zeros(0, np.float32)}))
            assert empty["histo"]["num"] == 0 and empty["histo"]["bucket"] == [0.0]
            with pytest.raises(errors.InvalidArgumentError, match="Nan in summary histogram for: h"):
                sess.run(h, {x: np.array([1.0, np.nan], np.float32)})
        with pytest.raises(TypeError, match="real-valued.*bool"):
            summary_ops.histogram("b", tf.constant([True]))


# -- merge / merge_all ---------------------------------------------------------------------------
def test_merge_concatenates_in_order():
    with tf.Graph().as_default() as g:
        a = summary_ops.scalar("a", tf.constant(1.0))
        h = summary_ops.histogram("h", tf.constant([1.0, 2.0]))
        m = summary_ops.merge([h, a], collections=["merged"])
        assert m.op.type == "MergeSummary" and g.get_collection("merged") == [m]
        assert m not in g.get_collection(tf.GraphKeys.SUMMARIES)
        values = _run(m)
        assert [v["tag"] for v in values] == ["h", "a"]
        assert values[1]["simple_value"] == 1.0 and values[0]["histo"]["num"] == 2
        # merging merged summaries flattens them
        b = summary_ops.scalar("b", tf.constant(2.0), collections=[])
        assert [v["tag"] for v in _run(summary_ops.merge([m, b]))] == ["h", "a", "b"]


def test_merge_all_collection_and_scope():
    with tf.Graph().as_default():
        assert summary_ops.merge_all() is None
        with tf.name_scope("train"):
            summary_ops.scalar("loss", tf.constant(1.0))
        with tf.name_scope("eval"):
            summary_ops.scalar("loss", tf.constant(2.0))
        summary_ops.scalar("other", tf.constant(3.0), collections=["extra"])
        assert [v["tag"] for v in _run(summary_ops.merge_all())] == ["train/loss", "eval/loss"]
        assert [v["simple_value"] for v in _run(summary_ops.merge_all(scope="eval"))] == [2.0]
        assert [v["tag"] for v in _run(summary_ops.merge_all("extra"))] == ["other"]
        assert summary_ops.merge_all(scope="nothing") is None


def test_merge_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at least one"):
            summary_ops.merge([])
        with pytest.raises(TypeError, match="summary tensors.*float32"):
            summary_ops.merge([tf.constant(1.0)])
        a = summary_ops.scalar("a", tf.constant(1.0))
        with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag a"):
            _run(summary_ops.merge([a, a]))


def test_decode_summary_errors():
    with pytest.raises(ValueError, match="not a serialized zps summary"):
        decode_summary(b"\x08\x01")
    with pytest.raises(TypeError, match="bytes or str"):
        decode_summary(3)


def test_summary_namespace_exports():
    assert set(summary.__all__) == {"scalar", "histogram", "merge", "merge_all", "FileWriter",
                                    "FileWriterCache"}
    assert summary.scalar is summary_ops.scalar and summary.merge_all is summary_ops.merge_all


# -- FileWriter ----------------------------------------------------------------------------------
def test_file_writer_without_tensorboardx_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # makes `import tensorboardX` fail
    with pytest.raises(ImportError, match=r'pip install "zps\[summary\]"'):
        summary.FileWriter(str(tmp_path))
    assert not list(tmp_path.iterdir())


def test_file_writer_writes_readable_event_files(tmp_path):
    pytest.importorskip("tensorboardX")
    logdir = str(tmp_path / "logs")
    values = np.array([0.5, -1.0, 4.0], np.float32)
    with tf.Graph().as_default() as g:
        summary.scalar("loss", tf.constant(0.75))
        summary.histogram("w", tf.constant(values))
        merged = summary.merge_all()
        with tf.Session() as sess:
            serialized = sess.run(merged)
        with summary.FileWriter(logdir, graph=g) as writer:
            assert writer.get_logdir() == logdir
            writer.add_summary(serialized, global_step=np.int64(7))
            writer.add_summary(serialized.decode(), global_step=8)
            writer.add_session_log("START", 7)
    events = read_events(logdir)
    got = summary_values(events)
    assert [(s, tag) for s, tag, _ in got] == [(7, "loss"), (7, "w"), (8, "loss"), (8, "w")]
    assert got[0][2] == 0.75
    histo = got[1][2]
    assert (histo.min, histo.max, histo.num) == (-1.0, 4.0, 3)
    np.testing.assert_allclose(histo.sum_squares, (values.astype(np.float64) ** 2).sum())
    assert sum(histo.bucket) == 3 and len(histo.bucket) == len(histo.bucket_limit)
    assert any(e.HasField("session_log") and e.session_log.status == 1 and e.step == 7
               for e in events)
    graph_events = [e for e in events if e.HasField("graph_def")]
    assert len(graph_events) == 1
    graph_pb2 = pytest.importorskip("tensorboardX.proto.graph_pb2")
    graph_def = graph_pb2.GraphDef.FromString(graph_events[0].graph_def)
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["loss"].op == "ScalarSummary" and list(nodes["loss"].input) == ["Const"]
    assert nodes["Merge/MergeSummary"].op == "MergeSummary"
    assert list(nodes["Merge/MergeSummary"].input) == ["loss", "w"]


def test_tensorboard_event_accumulator_reads_the_files(tmp_path):
    pytest.importorskip("tensorboardX")
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with tf.Graph().as_default() as g:
        summary.scalar("loss", tf.constant(0.5))
        summary.histogram("w", tf.constant([1.0, 2.0, 3.0]))
        merged = summary.merge_all()
        with tf.Session() as sess, summary.FileWriter(str(tmp_path), graph=g) as writer:
            for step in (1, 2):
                writer.add_summary(sess.run(merged), step)
    acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={"histograms": 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(1, 0.5), (2, 0.5)]
    histos = acc.Histograms("w")
    assert [h.step for h in histos] == [1, 2]
    assert (histos[0].histogram_value.min, histos[0].histogram_value.max) == (1.0, 3.0)
    assert histos[0].histogram_value.num == 3
    assert {n.name for n in acc.Graph().node} >= {"loss", "w", "Merge/MergeSummary"}


def test_file_writer_reopen_and_cache(tmp_path):
    pytest.importorskip("tensorboardX")
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        writer = summary.FileWriterCache.get(logdir)
        try:
            assert summary.FileWriterCache.get(logdir) is writer
            writer.add_summary([{"tag": "a", "simple_value": 1.0}], 1)
            writer.close()
            writer.reopen()
            writer.add_summary([{"tag": "a", "simple_value": 2.0}], 2)
            writer.flush()
        finally:
            summary.FileWriterCache.clear()
        assert summary.FileWriterCache.get(logdir) is not writer
        summary.FileWriterCache.clear()
    assert [(s, v) for s, _, v in summary_values(read_events(logdir))] == [(1, 1.0), (2, 2.0)]


def test_file_writer_rejects_session_and_bad_values(tmp_path):
    pytest.importorskip("tensorboardX")
    with pytest.raises(ValueError, match="session=.*not supported"):
        summary.FileWriter(str(tmp_path), session=object())
    with summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(ValueError, match="neither simple_value nor histo"):
            writer.add_summary([{"tag": "x"}])
        with pytest.raises(ValueError, match="not a serialized zps summary"):
            writer.add_summary(b"garbage")
