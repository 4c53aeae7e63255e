"""tf.summary ops (scalar, histogram, image, text, tensor_summary, merge, merge_all) and the
FileWriter's event files."""

import glob
import io
import os
import struct
import sys
import zlib

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
    reader (a test extra); where tensorboard is missing, with zps's own summary_iterator."""
    paths = sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")), key=os.path.getmtime)
    assert paths, "no event file in %s: %s" % (logdir, os.listdir(logdir))
    try:
        from tensorboard.backend.event_processing import event_file_loader
    except ImportError:
        return [e for p in paths for e in summary.summary_iterator(p)]
    return [e for p in paths for e in event_file_loader.LegacyEventFileLoader(p).Load()]


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
            (empty,) = tf.Summary.FromString(sess.run(h, {x: np.zeros(0, np.float32)})).value
            assert empty.histo.num == 0 and list(empty.histo.bucket) == [0.0]
            big = np.finfo(np.float64).max
            assert (empty.histo.min, empty.histo.max) == (big, -big)
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


def test_summary_ops_are_host_only():
    from zps.ops import cupy_kernels
    with tf.Graph().as_default():
        x = tf.zeros([1, 2, 2, 1])
        ops = [summary_ops.scalar("s", 1.0), summary_ops.histogram("h", x),
               summary_ops.image("i", x), summary_ops.text("t", tf.constant("a")),
               summary_ops.tensor_summary("ts", x)]
        ops.append(summary_ops.merge(ops))
        assert {t.op.type for t in ops} == {"ScalarSummary", "HistogramSummary", "ImageSummary",
                                            "TensorSummaryV2", "MergeSummary"}
        for t in ops:   # TF1 registers CPU kernels only
            assert cupy_kernels.has_gpu_kernel(t.op) == "op type %s has no GPU kernel" % t.op.type


def test_decode_summary_errors():
    with pytest.raises(ValueError, match="not a serialized tf.Summary"):
        decode_summary(b"\x0a\x05ab")   # a length running past the end
    with pytest.raises(TypeError, match=r"serialized output of a summary op \(bytes\), got int"):
        decode_summary(3)


def test_summary_namespace_exports():
    assert summary.__all__ == ["Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary",
                               "histogram", "image", "merge", "merge_all", "scalar",
                               "tensor_summary", "text"]
    assert summary.scalar is summary_ops.scalar and summary.merge_all is summary_ops.merge_all
    assert summary.Summary is tf.Summary and summary.Event is tf.Event
    assert summary.image is summary_ops.image and summary.text is summary_ops.text


# -- FileWriter ----------------------------------------------------------------------------------
def test_file_writer_writes_readable_event_files(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # not needed: `import` would fail
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
            writer.add_summary(tf.Summary.FromString(serialized), global_step=8)
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
    graph_pb2 = pytest.importorskip("tensorboard.compat.proto.graph_pb2")
    graph_def = graph_pb2.GraphDef.FromString(graph_events[0].graph_def)
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["loss"].op == "ScalarSummary" and list(nodes["loss"].input) == ["Const"]
    assert nodes["Merge/MergeSummary"].op == "MergeSummary"
    assert list(nodes["Merge/MergeSummary"].input) == ["loss", "w"]


def test_tensorboard_event_accumulator_reads_the_files(tmp_path):
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
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        writer = summary.FileWriterCache.get(logdir)
        try:
            assert summary.FileWriterCache.get(logdir) is writer
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.0)]), 1)
            writer.close()
            writer.reopen()
            writer.add_summary(tf.Summary(value=[{"tag": "a", "simple_value": 2.0}]), 2)
            writer.flush()
        finally:
            summary.FileWriterCache.clear()
        assert summary.FileWriterCache.get(logdir) is not writer
        summary.FileWriterCache.clear()
    assert [(s, v) for s, _, v in summary_values(read_events(logdir))] == [(1, 1.0), (2, 2.0)]


def test_file_writer_rejects_session_and_bad_values(tmp_path):
    with pytest.raises(ValueError, match="session=.*not supported"):
        summary.FileWriter(str(tmp_path), session=object())
    with summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(TypeError, match="takes a tf.Summary or the serialized summary.*list"):
            writer.add_summary([{"tag": "x"}])
        with pytest.raises(ValueError, match="not a serialized tf.Summary"):
            writer.add_summary(b"garbage")


# -- bytes identical to TensorFlow's ops ---------------------------------------------------------
# sess.run of TF 2.21's tf.summary.histogram("h", tf.constant([1.0, 2.0, -0.5])), scalar("s", 0.25)
# and merge([s, h]); and histogram("he", tf.zeros([0])).
TF_HISTOGRAM_HEX = (
    "0aa7010a01682aa10109000000000000e0bf110000000000000040190000000000000840210000000000000440"
    "2900000000000015403238b03125ee8091e0bffae55a25d31fdebf08996919155aed3f2b14facdbe24f03fdc94"
    "cd2e8d75ff3fe011f10c744d0140ffffffffffffef7f3a380000000000000000000000000000f03f0000000000"
    "000000000000000000f03f0000000000000000000000000000f03f0000000000000000")
TF_SCALAR_HEX = "0a080a0173150000803e"
TF_EMPTY_HISTOGRAM_HEX = ("0a2c0a0268652a2609ffffffffffffef7f11ffffffffffffefff3208ffffffffffff"
                          "ef7f3a080000000000000000")


def test_scalar_histogram_merge_bytes_match_tensorflow():
    with tf.Graph().as_default():
        h = summary.histogram("h", tf.constant([1.0, 2.0, -0.5]))
        s = summary.scalar("s", tf.constant(0.25))
        m = summary.merge([s, h])
        empty = summary.histogram("he", tf.zeros([0]))
        with tf.Session() as sess:
            got_h, got_s, got_m, got_e = sess.run([h, s, m, empty])
    assert got_h.hex() == TF_HISTOGRAM_HEX and got_s.hex() == TF_SCALAR_HEX
    assert got_m.hex() == TF_SCALAR_HEX + TF_HISTOGRAM_HEX
    assert got_e.hex() == TF_EMPTY_HISTOGRAM_HEX
    parsed = tf.Summary.FromString(got_m)
    assert [v.tag for v in parsed.value] == ["s", "h"] and parsed.value[1].histo.num == 3


# -- image ---------------------------------------------------------------------------------------
def decode_png(data):
    """The uint8 pixels [h, w, c] of a PNG: PIL's reading when installed, checked against a
    decoding of the (unfiltered) rows zps writes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == \
            zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, color_type = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 2: 3, 6: 4}[color_type]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert depth == 8 and (rows[:, 0] == 0).all()
    pixels = rows[:, 1:].reshape(height, width, channels)
    try:
        from PIL import Image
    except ImportError:
        return pixels
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(data))).reshape(pixels.shape),
                                  pixels)
    return pixels


def _image_values(t, feed=None):
    with tf.Session() as sess:
        return tf.Summary.FromString(sess.run(t, feed)).value


def test_image_uint8_tags_sizes_and_pixels():
    rng = np.random.RandomState(1)
    images = rng.randint(0, 256, (4, 5, 3, 3)).astype(np.uint8)
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.uint8, [None, 5, 3, 3])
        s = summary.image("pic", x)
        one = summary.image("one", tf.constant(images[:, :, :, :1]), max_outputs=1)
        assert s.op.type == "ImageSummary" and s.op.name == "pic"
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == [s, one]
        values = _image_values(s, {x: images})
        assert [v.tag for v in values] == ["pic/image/0", "pic/image/1", "pic/image/2"]
        for i, v in enumerate(values):
            assert (v.image.height, v.image.width, v.image.colorspace) == (5, 3, 3)
            np.testing.assert_array_equal(decode_png(v.image.encoded_image_string), images[i])
        assert [v.tag for v in _image_values(s, {x: images[:2]})] == ["pic/image/0", "pic/image/1"]
        assert _image_values(s, {x: images[:0]}) == []
        (v,) = _image_values(one)
        assert v.tag == "one/image" and v.image.colorspace == 1
        np.testing.assert_array_equal(decode_png(v.image.encoded_image_string), images[0, :, :, :1])
        rgba_pixels = rng.randint(0, 256, (1, 2, 2, 4)).astype(np.uint8)
        rgba = summary.image("rgba", tf.constant(rgba_pixels))
        assert _image_values(rgba)[0].image.colorspace == 4


def test_image_tag_follows_scope_and_family():
    with tf.Graph().as_default():
        with tf.name_scope("sc"):
            im = summary.image("im", tf.zeros([1, 1, 1, 1]), family="fam")
        assert im.op.name == "sc/fam/im"  # as TF1
        assert _image_values(im)[0].tag == "fam/sc/fam/im/image/0"


# TF 2.21's ImageSummary of float images (decoded with tf.image.decode_png): all non-negative,
# scaled so the maximum is 255; and one with NaN and Inf pixels, drawn in bad_color (red).
_F32_POS = [[[[0.7015882134437561], [6.436378002166748], [4.999689102172852]],
             [[6.991929054260254], [1.0461381673812866], [6.076882362365723]],
             [[1.1374504566192627], [4.308917045593262], [0.8667398691177368]]]]
_F32_POS_TF = [[[[25], [234], [182]], [[255], [38], [221]], [[41], [157], [31]]]]
_BAD = [[[[0.053427182137966156, np.nan, 0.011427458375692368],
          [0.7705807685852051, 0.14694663882255554, 0.07952208071947098],
          [0.08960303664207458, 0.6720477938652039, 0.24536721408367157]],
         [[0.4205394685268402, 0.557368814945221, 0.8605511784553528],
          [0.7270442843437195, 0.2703278958797455, 0.131482794880867],
          [0.05537432059645653, 0.3015986382961273, 0.2621181607246399]],
         [[0.45614057779312134, 0.6832813620567322, 0.6956254243850708],
          [np.inf, 0.3799269497394562, 0.18115095794200897],
          [0.7885454893112183, 0.05684807524085045, 0.6969972252845764]]]]
_BAD_TF = [[[[255, 0, 0], [228, 43, 23], [26, 199, 72]], [[124, 165, 255], [215, 80, 38],
                                                          [16, 89, 77]],
            [[135, 202, 206], [255, 0, 0], [233, 16, 206]]]]


def _normalized(values, dtype):
    with tf.Graph().as_default():
        t = summary.image("f", tf.constant(np.asarray(values, dtype)), max_outputs=10)
        return np.stack([decode_png(v.image.encoded_image_string) for v in _image_values(t)])


def test_image_float_normalization_matches_tensorflow():
    np.testing.assert_array_equal(_normalized(_F32_POS, np.float32)[..., 0],
                                  np.asarray(_F32_POS_TF, np.uint8)[..., 0])
    np.testing.assert_array_equal(_normalized(_BAD, np.float32), np.asarray(_BAD_TF, np.uint8))
    # with negative values 0 maps to 128 and the largest magnitude to 1 or 255 (TF's rule)
    signed = np.array([[[[-2.0], [0.0]], [[1.0], [2.0]]]])
    np.testing.assert_array_equal(_normalized(signed, np.float64)[0, ..., 0],
                                  [[1, 128], [191, 255]])
    np.testing.assert_array_equal(_normalized(np.zeros((1, 2, 2, 1)), np.float16), 0)
    # each image of the batch is normalized on its own
    batch = np.stack([np.full((1, 1, 1), 2.0), np.full((1, 1, 1), 50.0)]).astype(np.float32)
    np.testing.assert_array_equal(_normalized(batch, np.float32).ravel(), [255, 255])


def test_image_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="DataType int32 not in list of allowed values: uint8"):
            summary.image("x", tf.zeros([1, 2, 3, 1], tf.int32))
        with pytest.raises(ValueError, match="'max_images'.*passed 0 less than minimum 1"):
            summary.image("x", tf.zeros([1, 2, 3, 1]), max_outputs=0)
        x = tf.placeholder(tf.float32)
        s = summary.image("bad", x)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"4-D with last dim 1, 3, or 4, not \[1, 2, 3, 2\]"):
                sess.run(s, {x: np.zeros((1, 2, 3, 2), np.float32)})
            with pytest.raises(errors.InvalidArgumentError, match="0x2 pixels"):
                sess.run(s, {x: np.zeros((1, 0, 2, 1), np.float32)})


# -- text / tensor_summary -----------------------------------------------------------------------
# TF 2.21: text("notes", ["hi", "there"]); tensor_summary("ts", [[1.5, 2.0]],
# summary_description="desc", display_name="dn"); tensor_summary("tb", [True, False])
TF_TEXT_HEX = "0a260a056e6f7465734213080712041202080242026869420574686572654a080a060a0474657874"
TF_TENSOR_HEX = ("0a280a027473421608011208120208011202080222080000c03f000000404a0a1202646e1a04"
                 "64657363")
TF_BOOL_TENSOR_HEX = "0a140a027462420c080a120412020802220201004a00"


def test_text_and_tensor_summary_bytes_match_tensorflow():
    with tf.Graph().as_default() as g:
        t = summary.text("notes", tf.constant(["hi", "there"]))
        ts = summary.tensor_summary("ts", tf.constant([[1.5, 2.0]]), summary_description="desc",
                                    display_name="dn")
        tb = summary.tensor_summary("tb", tf.constant([True, False]))
        with tf.name_scope("sc"):
            scoped = summary.text("n", tf.constant("x"), collections=["c"])
        assert t.op.type == "TensorSummaryV2" and t.op.name == "notes"
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == [t, ts, tb]
        assert g.get_collection("c") == [scoped]
        with tf.Session() as sess:
            got_t, got_ts, got_tb, got_scoped = sess.run([t, ts, tb, scoped])
    assert got_t.hex() == TF_TEXT_HEX
    assert got_ts.hex() == TF_TENSOR_HEX and got_tb.hex() == TF_BOOL_TENSOR_HEX
    (value,) = tf.Summary.FromString(got_scoped).value
    assert value.tag == "sc/n" and list(value.tensor.string_val) == [b"x"]
    assert value.metadata.plugin_data.plugin_name == "text"
    assert len(value.tensor.tensor_shape.dim) == 0 and value.tensor.HasField("tensor_shape")


def test_text_errors():
    with tf.Graph().as_default():
        x = tf.zeros([1], name="zeros")
        with pytest.raises(ValueError, match="Expected tensor zeros:0 to have dtype string, got "
                                             "float32"):
            summary.text("x", x)


def test_merge_all_with_image_and_text():
    with tf.Graph().as_default():
        summary.scalar("loss", tf.constant(1.0))
        summary.image("pic", tf.zeros([2, 1, 1, 3], tf.uint8), max_outputs=2)
        summary.text("note", tf.constant("done"))
        merged = summary.merge_all()
        with tf.Session() as sess:
            values = tf.Summary.FromString(sess.run(merged)).value
    assert [(v.tag, v.WhichOneof("value")) for v in values] == [
        ("loss", "simple_value"), ("pic/image/0", "image"), ("pic/image/1", "image"),
        ("note", "tensor")]


# -- tf.Summary through the FileWriter -----------------------------------------------------------
def test_file_writer_writes_manual_summaries_and_summary_iterator_reads_them(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        summary.image("pic", tf.constant(np.full((1, 2, 2, 1), 7, np.uint8)))
        summary.text("note", tf.constant("**bold**"))
        merged = summary.merge_all()
        with tf.Session() as sess, summary.FileWriter(logdir) as writer:
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="val/accuracy",
                                                                  simple_value=0.75)]), 5)
            writer.add_summary(sess.run(merged), np.int64(6))
            writer.add_session_log(tf.SessionLog(status=tf.SessionLog.STOP), 6)
            writer.add_event(tf.Event(wall_time=12.5, step=9, file_version="brain.Event:2"))
    (path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    events = list(summary.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 0
    values = [(e.step, v) for e in events for v in e.summary.value]
    assert [(s, v.tag) for s, v in values] == [(5, "val/accuracy"), (6, "pic/image/0"),
                                               (6, "note")]
    assert values[0][1].simple_value == 0.75
    np.testing.assert_array_equal(decode_png(values[1][1].image.encoded_image_string),
                                  np.full((2, 2, 1), 7))
    assert list(values[2][1].tensor.string_val) == [b"**bold**"]
    assert any(e.session_log.status == tf.SessionLog.STOP and e.step == 6 for e in events)
    assert (events[-1].wall_time, events[-1].step) == (12.5, 9)
    # TensorBoard's own reader agrees
    assert [(s, tag) for s, tag, _ in summary_values(read_events(logdir))] == \
        [(5, "val/accuracy"), (6, "pic/image/0"), (6, "note")]


def test_tensorboard_reads_images_and_text(tmp_path):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    with tf.Graph().as_default():
        summary.image("pic", tf.zeros([1, 3, 2, 3], tf.uint8), max_outputs=1)
        summary.text("note", tf.constant("hello"))
        merged = summary.merge_all()
        with tf.Session() as sess, summary.FileWriter(str(tmp_path)) as writer:
            writer.add_summary(sess.run(merged), 1)
    acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={"images": 0,
                                                                           "tensors": 0})
    acc.Reload()
    (img,) = acc.Images("pic/image")
    assert (img.step, img.height, img.width) == (1, 3, 2)
    (note,) = acc.Tensors("note")
    assert note.tensor_proto.string_val == [b"hello"]
