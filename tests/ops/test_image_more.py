"""More of tf.image: color spaces, quality measures, edges, boxes (NMS, crop_and_resize, drawing,
sampling), area and bicubic resizing, patches; values against TensorFlow's, gradients, shapes,
errors.

tests/fixtures/tf_image_more/expected.npz holds what TensorFlow 2.21's tf.compat.v1.image computed
for ``program()`` of tests/fixtures/tf_image_more/make.py, which these tests run on zps.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tf_image_more"
TF_OUTPUTS = np.load(FIXTURE / "expected.npz")
R = np.random.default_rng(23)


def _make():
    spec = importlib.util.spec_from_file_location("tf_image_more_make", FIXTURE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_image_ops_compute_what_tensorflow_computes():
    with tf.Graph().as_default():
        values = _run(_make().program(tf))
    assert sorted(values) == sorted(TF_OUTPUTS.files)
    for name, expected in TF_OUTPUTS.items():
        got = np.asarray(values[name])
        assert got.dtype == expected.dtype and got.shape == expected.shape, name
        if expected.dtype.kind in "iub":
            np.testing.assert_array_equal(got, expected, err_msg=name)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=name)


def test_a_few_of_tensorflows_numbers_written_out():
    # Spot values of TF 2.21 (also in the fixture), readable here.
    with tf.Graph().as_default():
        got = _run({
            "hsv": tf.image.rgb_to_hsv([[0.2, 0.7, 0.7], [1.0, 0.0, 1.0], [0.5, 0.5, 0.5]]),
            "nms_iou_at_threshold": tf.image.non_max_suppression(
                [[0.0, 0, 1, 1], [0, 0, 1, 2]], [0.9, 0.8], 2, 0.5),
            "gamma": tf.image.adjust_gamma([[[1.0, 2.0, 3.0]]], 0.2),
            "tv": tf.image.total_variation([[[0.0], [1.0]], [[3.0], [2.0]]]),
        })
    np.testing.assert_allclose(got["hsv"], [[0.5, 0.71428573, 0.7], [0.8333333, 1, 1],
                                            [0, 0, 0.5]], rtol=1e-6)
    np.testing.assert_array_equal(got["nms_iou_at_threshold"], [0, 1])   # IoU 0.5 is kept
    np.testing.assert_allclose(got["gamma"], [[[1.0, 1.1486983, 1.2457309]]], rtol=1e-6)
    assert got["tv"] == 6.0   # |3 - 0| + |2 - 1| + |1 - 0| + |2 - 3|


def test_round_trips_between_color_spaces():
    x = R.uniform(0, 1, (3, 4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        got = _run([tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(x)),
                    tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(x)),
                    tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(x)),
                    tf.image.adjust_hue(x, 1.0), tf.image.adjust_saturation(x, 1.0)])
    for value in got:   # TF's YIQ and YUV matrices are inverses to about 1e-4
        np.testing.assert_allclose(value, x, atol=1e-4)


def test_static_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8, 9, 3])
        assert tf.image.rgb_to_hsv(x).get_shape().as_list() == [None, 8, 9, 3]
        assert tf.image.adjust_hue(x, 0.1).get_shape().as_list() == [None, 8, 9, 3]
        assert tf.image.sobel_edges(x).get_shape().as_list() == [None, 8, 9, 3, 2]
        assert tf.image.total_variation(x).get_shape().as_list() == [None]
        assert tf.image.resize_bicubic(x, [4, 5]).get_shape().as_list() == [None, 4, 5, 3]
        assert tf.image.resize_area(x, [4, 5]).get_shape().as_list() == [None, 4, 5, 3]
        patches = tf.image.extract_image_patches(x, [1, 3, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1],
                                                 "VALID")
        assert patches.get_shape().as_list() == [None, 3, 4, 18]
        assert tf.image.resize_image_with_pad(x[0], 5, 12).get_shape().as_list() == [5, 12, 3]
        crops = tf.image.crop_and_resize(x, tf.zeros([7, 4]), tf.zeros([7], tf.int32), [2, 3])
        assert crops.get_shape().as_list() == [7, 2, 3, 3] and crops.dtype == tf.float32
        boxes = tf.placeholder(tf.float32, [None, 4])
        scores = tf.placeholder(tf.float32, [None])
        assert tf.image.non_max_suppression(boxes, scores, 5).get_shape().as_list() == [None]
        keep, valid = tf.image.non_max_suppression_padded(boxes, scores, 5,
                                                          pad_to_max_output_size=True)
        assert keep.get_shape().as_list() == [5] and valid.get_shape().as_list() == []
        nmsed = tf.image.combined_non_max_suppression(tf.zeros([2, 6, 1, 4]), tf.zeros([2, 6, 3]),
                                                      2, 10, pad_per_class=True)
        assert [t.get_shape().as_list() for t in nmsed] == [[2, 6, 4], [2, 6], [2, 6], [2]]
        begin, size, bbox = tf.image.sample_distorted_bounding_box([8, 9, 3], tf.zeros([1, 0, 4]))
        assert [t.get_shape().as_list() for t in (begin, size, bbox)] == [[3], [3], [1, 1, 4]]


@pytest.mark.parametrize("build, error, message", [
    (lambda: tf.image.rgb_to_hsv(tf.zeros([2, 4])), ValueError, "must be 3"),
    (lambda: tf.image.rgb_to_hsv(tf.zeros([2, 3], tf.int32)), TypeError, "convert_image_dtype"),
    (lambda: tf.image.adjust_hue(tf.zeros([2, 3]), [0.1, 0.2]), ValueError, "must be a scalar"),
    (lambda: tf.image.random_hue(tf.zeros([2, 3]), 0.6), ValueError, "max_delta must be <= 0.5"),
    (lambda: tf.image.random_saturation(tf.zeros([2, 3]), 2, 1), ValueError, "upper must be"),
    (lambda: tf.image.adjust_gamma(tf.zeros([2, 3]), -1), ValueError, "non-negative"),
    (lambda: tf.image.total_variation(tf.zeros([2, 3])), ValueError, "3 or 4-dimensional"),
    (lambda: tf.image.psnr(tf.zeros([4, 4, 3]), tf.zeros([4, 5, 3]), 1.0), ValueError,
     "last three dimensions"),
    (lambda: tf.image.ssim(tf.zeros([8, 8, 1]), tf.zeros([8, 8, 1]), 1.0), ValueError,
     "filter_size=11"),
    (lambda: tf.image.image_gradients(tf.zeros([4, 4, 1])), ValueError, "4D tensor"),
    (lambda: tf.image.non_max_suppression(tf.zeros([3, 5]), tf.zeros([3]), 2), ValueError,
     r"boxes must have shape \[\?, 4\]"),
    (lambda: tf.image.non_max_suppression(tf.zeros([3, 4]), tf.zeros([4]), 2), ValueError,
     r"scores must have shape \[3\]"),
    (lambda: tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 4]), [0], [2, 2]),
     ValueError, r"box_ind must have shape \[2\]"),
    (lambda: tf.image.crop_and_resize(tf.zeros([4, 4, 1]), tf.zeros([1, 4]), [0], [2, 2]),
     ValueError, "image must have shape"),
    (lambda: tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), tf.zeros([1, 4]), [0], [2, 2],
                                      method="bicubic"), ValueError, "'bilinear' or 'nearest'"),
    (lambda: tf.image.draw_bounding_boxes(tf.zeros([1, 4, 4, 3]), tf.zeros([1, 2, 3])),
     ValueError, "boxes must have shape"),
    (lambda: tf.image.draw_bounding_boxes(tf.zeros([1, 4, 4, 3], tf.uint8), tf.zeros([1, 2, 4])),
     TypeError, "float32 or float16"),
    (lambda: tf.image.sample_distorted_bounding_box([4, 4, 3], tf.zeros([1, 1, 4]),
                                                    area_range=[0.5, 1.5]), ValueError,
     "area_range"),
    (lambda: tf.image.extract_image_patches(tf.zeros([1, 4, 4, 1]), [2, 2], [1, 1, 1, 1],
                                            [1, 1, 1, 1], "VALID"), ValueError, "ksizes must"),
    (lambda: tf.image.resize_bicubic(tf.zeros([4, 4, 1]), [2, 2]), ValueError, "rank"),
])
def test_mistakes_are_reported_when_the_graph_is_built(build, error, message):
    with tf.Graph().as_default():
        with pytest.raises(error, match=message):
            build()


@pytest.mark.parametrize("build, feed, message", [
    (lambda p: tf.image.non_max_suppression(p, tf.ones([2]), 1, iou_threshold=1.5),
     np.zeros((2, 4), np.float32), r"iou_threshold must be in \[0, 1\]"),
    (lambda p: tf.image.non_max_suppression(p, tf.ones([2]), -1), np.zeros((2, 4), np.float32),
     "max_output_size must be non-negative"),
    (lambda p: tf.image.crop_and_resize(p, tf.zeros([1, 4]), [3], [2, 2]),
     np.zeros((2, 4, 4, 1), np.float32), r"box_index has values outside \[0, batch_size\)"),
    (lambda p: tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), tf.zeros([1, 4]), [0], p),
     np.array([0, 2], np.int32), "crop dimensions must be positive"),
    (lambda p: tf.image.sample_distorted_bounding_box([4, 4, 3], p),
     np.array([[[0.5, 0.1, 0.2, 0.9]]], np.float32), "y_min < y_max"),
    (lambda p: tf.image.sample_distorted_bounding_box([4, 4, 3], p),
     np.array([[[0.1, 0.1, 1.2, 0.9]]], np.float32), r"must be in \[0.0, 1.0\]"),
    (lambda p: tf.image.sample_distorted_bounding_box([4, 4, 3], p),
     np.zeros((1, 0, 4), np.float32), "use_image_if_no_bounding_boxes"),
    (lambda p: tf.image.rgb_to_hsv(p), np.zeros((2, 4), np.float32), "must have 3 channels"),
    (lambda p: tf.image.draw_bounding_boxes(p, tf.zeros([1, 1, 4])),
     np.zeros((1, 3, 3, 5), np.float32), "Channel depth"),
])
def test_bad_values_are_invalid_arguments_when_run(build, feed, message):
    with tf.Graph().as_default():
        p = tf.placeholder(tf.as_dtype(feed.dtype), [None] * feed.ndim)
        y = build(p)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            _run(y, {p: feed})


def test_non_max_suppression_of_placeholders_matches_the_constants():
    d = _make().data()
    with tf.Graph().as_default():
        boxes = tf.placeholder(tf.float32, [None, 4])
        scores = tf.placeholder(tf.float32, [None])
        keep = tf.image.non_max_suppression(boxes, scores, 10, iou_threshold=0.3)
        got = _run(keep, {boxes: d["boxes"], scores: d["scores"]})
    np.testing.assert_array_equal(got, TF_OUTPUTS["nms"])
    np.testing.assert_array_equal(got, [5, 2, 3, 6, 10])


def test_sample_distorted_bounding_box_meets_its_constraints_and_follows_seeds():
    object_box = np.array([[[0.2, 0.3, 0.6, 0.9]]], np.float32)
    height, width = 40, 60
    with tf.Graph().as_default():
        begin, size, bbox = tf.image.sample_distorted_bounding_box(
            [height, width, 3], object_box, seed=7, min_object_covered=0.5,
            aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.8])
        image = tf.zeros([height, width, 3])
        crop = tf.slice(image, begin, size)
        with tf.Session() as sess:
            draws = [sess.run([begin, size, bbox, tf.shape(crop)]) for _ in range(30)]
        with tf.Session() as sess:
            again = [sess.run([begin, size, bbox]) for _ in range(30)]
    for (b, s, box, crop_shape), (b2, s2, box2) in zip(draws, again):
        np.testing.assert_array_equal(b, b2)
        np.testing.assert_array_equal(s, s2)
        np.testing.assert_array_equal(box, box2)
        y, x, _ = b
        h, w, depth = s
        assert depth == -1 and b[2] == 0 and list(crop_shape) == [h, w, 3]
        assert 0 <= y and y + h <= height and 0 <= x and x + w <= width
        assert 0.1 * height * width <= h * w <= 0.8 * height * width
        assert 0.5 - 0.05 <= w / h <= 2.0 + 0.05   # rounding of the sides
        # it covers at least half of the object (in TF's pixel boxes)
        oy0, ox0, oy1, ox1 = 8, 18, 24, 54
        inter = max(min(y + h, oy1) - max(y, oy0), 0) * max(min(x + w, ox1) - max(x, ox0), 0)
        assert inter >= 0.5 * (oy1 - oy0) * (ox1 - ox0)
        np.testing.assert_allclose(box[0, 0], [y / height, x / width, (y + h) / height,
                                               (x + w) / width], rtol=1e-6)
    assert len({tuple(d[0]) for d in draws}) > 1


def test_sample_distorted_bounding_box_falls_back_to_the_whole_image():
    with tf.Graph().as_default():
        begin, size, bbox = tf.image.sample_distorted_bounding_box(
            [10, 10, 1], np.zeros((1, 0, 4), np.float32), seed=1, min_object_covered=1.0,
            area_range=[0.05, 0.1], use_image_if_no_bounding_boxes=True, max_attempts=5)
        b, s, box = _run([begin, size, bbox])
    np.testing.assert_array_equal(b, [0, 0, 0])
    np.testing.assert_array_equal(s, [10, 10, -1])
    np.testing.assert_array_equal(box, [[[0, 0, 1, 1]]])


def test_random_hue_and_saturation_stay_in_their_ranges():
    x = R.uniform(0, 1, (4, 5, 3)).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        hue = tf.image.random_hue(x, 0.2)
        saturation = tf.image.random_saturation(x, 0.5, 1.5)
        hsv = tf.image.rgb_to_hsv(x)
        hue_hsv, sat_hsv = tf.image.rgb_to_hsv(hue), tf.image.rgb_to_hsv(saturation)
        with tf.Session() as sess:
            for _ in range(5):
                base, h, s = sess.run([hsv, hue_hsv, sat_hsv])
                shift = (h[..., 0] - base[..., 0] + 0.5) % 1.0 - 0.5
                assert abs(shift.mean()) <= 0.2 + 1e-4
                np.testing.assert_allclose(shift, shift.mean(), atol=1e-3)
                np.testing.assert_allclose(h[..., 1:], base[..., 1:], atol=1e-5)
                factor = s[..., 1] / base[..., 1]
                unclipped = s[..., 1] < 1 - 1e-6
                assert 0.5 - 1e-4 <= factor[unclipped].mean() <= 1.5 + 1e-4
                np.testing.assert_allclose(s[..., 2], base[..., 2], atol=1e-6)


def test_ops_without_gradients_in_tensorflow_have_none_here():
    x = R.uniform(0, 1, (1, 4, 4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        image = tf.constant(x)
        with pytest.raises(LookupError, match="AdjustHue"):
            tf.gradients(tf.image.adjust_hue(image, 0.1), [image])
        with pytest.raises(LookupError, match="ResizeArea"):
            tf.gradients(tf.image.resize_area(image, [2, 2]), [image])
        assert tf.gradients(tf.image.hsv_to_rgb(image), [image]) == [None]


def _crop(image, boxes, method="bilinear"):
    return tf.image.crop_and_resize(image, boxes, [0, 1, 1], [3, 4], method=method,
                                    extrapolation_value=0.5)


# (no sample lands on a pixel exactly, where the bilinear map has a kink)
_CROP_BOXES = np.array([[0.13, 0.17, 0.77, 0.69], [0.93, 0.62, 0.21, 0.07],
                        [-0.31, 0.23, 0.43, 1.19]])
# CropAndResize and the resize ops compute in float32 (as TF's kernels): their cases run in
# float32 with a large step, exact for these maps that are linear in the image.
_F32 = dict(dtype=np.float32, delta=1e-2, rtol=1e-3, atol=1e-3)
# drawn once: each build of a case (the CPU and the GPU run of tests/ops/test_gpu_ops.py) must
# see the same image
_CROP_IMAGE = np.random.default_rng(5).standard_normal((2, 5, 6, 2))
GRAD_CASES = [
    GradCase("RGBToHSV", tf.image.rgb_to_hsv, [R.uniform(0.1, 1, (2, 3, 3))]),
    GradCase("CropAndResize", lambda x: _crop(x, _CROP_BOXES), [R.standard_normal((2, 5, 6, 2))],
             name="CropAndResize_image", **_F32),
    GradCase("CropAndResize", lambda x: _crop(x, _CROP_BOXES, "nearest"),
             [R.standard_normal((2, 5, 6, 2))], name="CropAndResize_image_nearest", **_F32),
    GradCase("CropAndResize", lambda b: _crop(_CROP_IMAGE, b), [_CROP_BOXES],
             name="CropAndResize_boxes", dtype=np.float32, delta=1e-3, rtol=2e-2, atol=2e-2),
    GradCase("ResizeBicubic", lambda x: tf.image.resize_bicubic(x, [5, 7]),
             [R.standard_normal((2, 3, 4, 2))], name="ResizeBicubic_up", **_F32),
    GradCase("ResizeBicubic", lambda x: tf.image.resize_bicubic(x, [2, 3], align_corners=True),
             [R.standard_normal((1, 5, 4, 2))], name="ResizeBicubic_down_align", **_F32),
    GradCase("ResizeBicubicGrad",
             lambda g, x: tf.gradients(tf.image.resize_bicubic(x, [5, 7]), [x], grad_ys=[g])[0],
             [R.standard_normal((2, 5, 7, 2)), R.standard_normal((2, 3, 4, 2))], wrt=[0], **_F32),
    GradCase("ExtractImagePatches",
             lambda x: tf.image.extract_image_patches(x, [1, 3, 2, 1], [1, 2, 1, 1],
                                                      [1, 1, 2, 1], "SAME"),
             [R.standard_normal((2, 5, 4, 2))]),
    GradCase("ExtractImagePatchesGrad",
             lambda g, x: tf.gradients(tf.image.extract_image_patches(
                 x, [1, 2, 2, 1], [1, 1, 2, 1], [1, 1, 1, 1], "VALID"), [x], grad_ys=[g])[0],
             [R.standard_normal((1, 3, 2, 8)), R.standard_normal((1, 4, 4, 2))], wrt=[0]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_gradients_through_composite_ops():
    x = R.uniform(0.1, 1, (1, 12, 12, 2))
    y = R.uniform(0.1, 1, (1, 12, 12, 2))
    check_gradients(GradCase("DepthwiseConv2dNative",
                             lambda a: tf.image.ssim(a, tf.constant(y), 1.0, filter_size=5),
                             [x], name="ssim", dtype=np.float32, delta=1e-2, rtol=1e-2, atol=1e-3))
    check_gradients(GradCase("DepthwiseConv2dNative", tf.image.sobel_edges,
                             [R.standard_normal((1, 4, 5, 2))], name="sobel_edges"))
    check_gradients(GradCase("Pow", lambda a: tf.image.adjust_gamma(a, 0.7, 1.5),
                             [R.uniform(0.2, 1, (3, 4, 3))], name="adjust_gamma",
                             dtype=np.float32, delta=1e-3, rtol=1e-2, atol=1e-3))


# -- codecs ------------------------------------------------------------------------------------------
def _pil_bytes(array, mode, fmt="PNG", **kwargs):
    import io

    image_module = pytest.importorskip("PIL.Image")
    buffer = io.BytesIO()
    image_module.fromarray(array, mode).save(buffer, format=fmt, **kwargs) if mode else \
        image_module.fromarray(array).save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


@pytest.mark.parametrize("channels, dtype", [(1, np.uint8), (2, np.uint8), (3, np.uint8),
                                             (4, np.uint8)])
def test_png_round_trips(channels, dtype):
    x = R.integers(0, np.iinfo(dtype).max + 1, (5, 7, channels)).astype(dtype)
    with tf.Graph().as_default():
        encoded = tf.image.encode_png(x, compression=9)
        decoded = tf.image.decode_png(encoded, dtype=tf.as_dtype(dtype))
        assert decoded.get_shape().as_list() == [None, None, None]
        got, data = _run([decoded, encoded])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("mode, channels", [("L", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4),
                                            ("P", 3), ("1", 1), ("I;16", 1)])
def test_decode_png_reads_what_pillow_writes(mode, channels):
    image_module = pytest.importorskip("PIL.Image")
    import io

    rgb = R.integers(0, 256, (9, 11, 3)).astype(np.uint8)
    if mode == "I;16":   # from 16-bit values (Pillow 9 cannot convert RGB to I;16)
        pil = image_module.fromarray(rgb[..., 0].astype(np.uint16) * 257 + 3)
        assert pil.mode == "I;16"
    else:
        pil = image_module.fromarray(rgb).convert(mode)
    buffer = io.BytesIO()
    pil.save(buffer, format="PNG", optimize=True)   # optimize: Pillow's adaptive filters
    expected = np.asarray(pil.convert({"P": "RGB", "1": "L"}.get(mode, mode)))
    if mode == "I;16":   # 16-bit gray decoded as uint8 (TF's default dtype): the high bytes
        expected = (expected.astype(np.uint16) >> 8).astype(np.uint8)
    expected = expected.reshape(9, 11, channels)
    with tf.Graph().as_default():
        got, gray, rgba = _run([tf.image.decode_png(buffer.getvalue()),
                                tf.image.decode_image(buffer.getvalue(), channels=1),
                                tf.image.decode_png(buffer.getvalue(), channels=4)])
    np.testing.assert_array_equal(got, expected)
    assert gray.shape == (9, 11, 1) and rgba.shape == (9, 11, 4)
    if channels <= 2:
        np.testing.assert_array_equal(gray, expected[..., :1])


def test_decode_image_dispatches_on_the_first_bytes():
    rgb = R.integers(0, 256, (6, 5, 3)).astype(np.uint8)
    bmp = _pil_bytes(rgb, None, "BMP")
    gif = _pil_bytes(rgb, None, "GIF")
    jpeg = _pil_bytes(rgb, None, "JPEG", quality=95)
    with tf.Graph().as_default():
        got = _run({"bmp": tf.image.decode_image(bmp), "bmp2": tf.image.decode_bmp(bmp),
                    "gif": tf.image.decode_image(gif), "jpeg": tf.image.decode_image(jpeg),
                    "is_jpeg": [tf.image.is_jpeg(jpeg), tf.image.is_jpeg(bmp)],
                    "float": tf.image.decode_image(bmp, dtype=tf.float32),
                    "jpeg_gray": tf.image.decode_jpeg(jpeg, channels=1)})
    np.testing.assert_array_equal(got["bmp"], rgb)
    np.testing.assert_array_equal(got["bmp2"], rgb)
    assert got["gif"].shape == (1, 6, 5, 3)
    import io

    from PIL import Image
    np.testing.assert_array_equal(got["jpeg"], np.asarray(Image.open(io.BytesIO(jpeg))))
    assert got["jpeg_gray"].shape == (6, 5, 1)
    assert got["is_jpeg"] == [True, False]
    np.testing.assert_allclose(got["float"], rgb / 255.0, rtol=1e-6)


def test_bad_image_data_is_an_invalid_argument():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.string, [])
        png, any_image = tf.image.decode_png(p), tf.image.decode_image(p)
        with pytest.raises(tf.errors.InvalidArgumentError, match="PNG signature"):
            _run(png, {p: b"not a png"})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
            _run(any_image, {p: b"not an image"})
        good = _run(tf.image.encode_png(np.zeros((2, 2, 1), np.uint8)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="CRC|truncated"):
            _run(png, {p: good[:-9] + b"x" + good[-8:]})
        with pytest.raises(TypeError, match="must be uint8"):
            tf.image.encode_png(np.zeros((2, 2, 1), np.float32))
