"""tf.image: values against TensorFlow's, gradients of the resize ops, random ops, shapes, errors.

tests/fixtures/tf_image/expected.npz holds what TensorFlow 2.21's tf.compat.v1.image computed for
``program()`` of tests/fixtures/tf_image/make.py, which these tests run on zps.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tf_image"
TF_OUTPUTS = np.load(FIXTURE / "expected.npz")
R = np.random.default_rng(17)


def _make():
    spec = importlib.util.spec_from_file_location("tf_image_make", FIXTURE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_image_ops_compute_what_tensorflow_computes():
    with tf.Graph().as_default():
        outputs = _make().program(tf)
        values = _run(outputs)
    assert sorted(values) == sorted(TF_OUTPUTS.files)
    for name, expected in TF_OUTPUTS.items():
        got = values[name]
        assert got.dtype == expected.dtype and got.shape == expected.shape, name
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-5, err_msg=name)


def test_static_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 6, 3])
        assert tf.image.resize_bilinear(x, [7, 4]).get_shape().as_list() == [None, 7, 4, 3]
        size = tf.placeholder(tf.int32, [2])
        assert tf.image.resize_nearest_neighbor(x, size).get_shape().as_list() == \
            [None, None, None, 3]
        assert tf.image.resize_images(x[0], [2, 3]).get_shape().as_list() == [2, 3, 3]
        assert tf.image.resize_image_with_crop_or_pad(x, 4, 9).get_shape().as_list() == \
            [None, 4, 9, 3]
        assert tf.image.central_crop(x, 0.5).get_shape().as_list() == [None, 3, 4, 3]
        assert tf.image.rot90(x[0]).get_shape().as_list() == [6, 5, 3]
        assert tf.image.random_crop(x[0], [2, 2, 3]).get_shape().as_list() == [2, 2, 3]


def test_resize_images_of_the_same_size_returns_the_images():
    with tf.Graph().as_default():
        image = tf.constant(np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
        same = tf.image.resize_images(image, [2, 2])
        assert same.dtype == tf.uint8
        np.testing.assert_array_equal(_run(same), _run(image))


def test_resize_with_a_size_known_only_at_run_time():
    x = R.standard_normal((1, 3, 4, 2)).astype(np.float32)
    with tf.Graph().as_default():
        size = tf.placeholder(tf.int32, [2])
        dynamic = tf.image.resize_bilinear(x, size)
        static = tf.image.resize_bilinear(x, [5, 2])
        got, expected = _run([dynamic, static], {size: [5, 2]})
    np.testing.assert_array_equal(got, expected)


def test_crop_or_pad_with_dimensions_known_only_at_run_time():
    x = _make().data()["x"]
    with tf.Graph().as_default():
        image = tf.placeholder(tf.float32, [None, None, None, 3])
        padded = tf.image.resize_image_with_crop_or_pad(image, 3, 8)
        central = tf.image.central_crop(image, 0.5)
        assert padded.get_shape().as_list() == [None, 3, 8, 3]
        got = _run([padded, central], {image: x})
    np.testing.assert_array_equal(got[0], TF_OUTPUTS["crop_or_pad_small"])
    np.testing.assert_array_equal(got[1], TF_OUTPUTS["central_crop"])


def test_random_flips_flip_whole_images_and_follow_seeds():
    x = R.standard_normal((16, 2, 3, 1)).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        lr = tf.image.random_flip_left_right(x)
        ud = tf.image.random_flip_up_down(x[0])
        with tf.Session() as sess:
            first = sess.run([lr, ud])
        with tf.Session() as sess:
            again = sess.run([lr, ud])
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    flipped = [np.array_equal(a, x[i, :, ::-1]) for i, a in enumerate(first[0])]
    kept = [np.array_equal(a, x[i]) for i, a in enumerate(first[0])]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
    assert np.array_equal(first[1], x[0, ::-1]) or np.array_equal(first[1], x[0])


def test_random_crop_takes_a_window_of_the_value():
    value = np.arange(5 * 6 * 2).reshape(5, 6, 2)
    with tf.Graph().as_default():
        crop = tf.random_crop(value, [2, 3, 2], seed=4)
        assert tf.image.random_crop is tf.random_crop
        with tf.Session() as sess:
            crops = [sess.run(crop) for _ in range(20)]
    windows = {(r, c) for r in range(4) for c in range(4)
               if any(np.array_equal(value[r:r + 2, c:c + 3], k) for k in crops)}
    assert len(windows) > 1   # different offsets, each a true window
    assert all(any(np.array_equal(value[r:r + 2, c:c + 3], k) for r, c in windows) for k in crops)


def test_random_crop_larger_than_the_value_fails_when_run():
    with tf.Graph().as_default():
        value = tf.placeholder(tf.float32, [None, 2])
        crop = tf.random_crop(value, [3, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
            _run(crop, {value: np.zeros((2, 2))})


def test_random_brightness_and_contrast_stay_in_their_ranges():
    x = R.uniform(0, 1, (3, 4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        brighter = tf.image.random_brightness(x, 0.2)
        contrast = tf.image.random_contrast(x, 0.5, 1.5)
        with tf.Session() as sess:
            for _ in range(5):
                b, c = sess.run([brighter, contrast])
                delta = b - x
                assert np.allclose(delta, delta.flat[0], atol=1e-6) and abs(delta.flat[0]) <= 0.2
                mean = x.mean(axis=(0, 1))
                factor = (c - mean) / (x - mean)
                assert 0.5 <= factor.mean() <= 1.5
                np.testing.assert_allclose(factor, factor.mean(), rtol=1e-3)


@pytest.mark.parametrize("build, message", [
    (lambda x: tf.image.crop_to_bounding_box(x, 0, 0, 6, 2), "height must be >= target"),
    (lambda x: tf.image.crop_to_bounding_box(x, -1, 0, 2, 2), "offset_height must be >= 0"),
    (lambda x: tf.image.pad_to_bounding_box(x, 0, 1, 6, 6), "width must be <= target"),
    (lambda x: tf.image.resize_image_with_crop_or_pad(x, 0, 2), "target_height must be > 0"),
    (lambda x: tf.image.central_crop(x, 1.5), "central_fraction must be within"),
    (lambda x: tf.image.flip_left_right(x[0, 0]), "must be 3-D"),
    (lambda x: tf.image.resize_images(x, [2, 2, 2]), "1-D Tensor of 2 elements"),
    (lambda x: tf.image.random_contrast(x, 1.0, 0.5), "upper must be > lower"),
    (lambda x: tf.image.grayscale_to_rgb(x), "must be 1"),
])
def test_mistakes_are_reported_when_the_graph_is_built(build, message):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            build(tf.zeros([5, 6, 3]))


def test_unknown_resize_methods_say_so():
    # (BICUBIC, AREA and half_pixel_centers: tests/ops/test_audit_nn_math.py)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="not a ResizeMethod"):
            tf.image.resize_images(tf.zeros([4, 4, 1]), [2, 2], 7)


def test_non_positive_run_time_size_is_an_invalid_argument():
    with tf.Graph().as_default():
        size = tf.placeholder(tf.int32, [2])
        y = tf.image.resize_bilinear(tf.zeros([1, 4, 4, 1]), size)
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive"):
            _run(y, {size: [0, 2]})


def _bilinear_grad(g, x, align_corners=False):
    return tf.gradients(tf.image.resize_bilinear(x, [5, 7], align_corners=align_corners), [x],
                        grad_ys=[g])[0]


def _nearest_grad(g, x):
    return tf.gradients(tf.image.resize_nearest_neighbor(x, [5, 7]), [x], grad_ys=[g])[0]


# ResizeBilinear computes in float32 (as TF1's kernel): its cases run in float32, where the
# finite differences of these linear maps are exact enough with a large step.
_F32 = dict(dtype=np.float32, delta=1e-2, rtol=1e-3, atol=1e-3)
GRAD_CASES = [
    GradCase("ResizeBilinear", lambda x: tf.image.resize_bilinear(x, [5, 7]),
             [R.standard_normal((2, 3, 4, 2))], name="ResizeBilinear_up", **_F32),
    GradCase("ResizeBilinear", lambda x: tf.image.resize_bilinear(x, [2, 3], align_corners=True),
             [R.standard_normal((1, 5, 4, 2))], name="ResizeBilinear_down_align", **_F32),
    GradCase("ResizeBilinearGrad", _bilinear_grad,
             [R.standard_normal((2, 5, 7, 2)), R.standard_normal((2, 3, 4, 2))], wrt=[0],
             **_F32),
    GradCase("ResizeNearestNeighbor", lambda x: tf.image.resize_nearest_neighbor(x, [5, 7]),
             [R.standard_normal((2, 3, 4, 2))], name="ResizeNearestNeighbor_up"),
    GradCase("ResizeNearestNeighbor",
             lambda x: tf.image.resize_nearest_neighbor(x, [2, 3], align_corners=True),
             [R.standard_normal((1, 5, 4, 2))], name="ResizeNearestNeighbor_down_align"),
    GradCase("ResizeNearestNeighborGrad", _nearest_grad,
             [R.standard_normal((2, 5, 7, 2)), R.standard_normal((2, 3, 4, 2))], wrt=[0]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_gradients_through_composite_image_ops():
    x = R.standard_normal((1, 4, 5, 3))
    check_gradients(GradCase(
        "Slice", lambda x: tf.image.flip_left_right(tf.image.transpose_image(
            tf.image.rot90(tf.image.resize_image_with_crop_or_pad(x, 3, 6), 1))), [x],
        name="crop_or_pad_rot90_transpose_flip"))
