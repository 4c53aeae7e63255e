"""Ops outside the gradient cases that run on a GPU by host kernels (``cupy_kernels.ON_HOST``) or
by kernels written against ``ctx.xp``: placed on ``/gpu:0`` they give the CPU's outputs, dtypes
and, for the random ops, the CPU's draws.

Without a GPU they run on ``zps.testing.fake_cupy`` (see tests/ops/test_gpu_ops.py), which fails
on any numpy-only call reaching a device array.
"""

import numpy as np
import pytest

import zps as tf
from zps.testing import fake_cupy

REAL = fake_cupy.real_gpu()
RTOL, ATOL = (1e-5, 1e-6) if REAL else (0, 0)


@pytest.fixture(autouse=True)
def gpu_backend(monkeypatch):
    if REAL:
        yield None
        return
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=1) as cupy:
        yield cupy


_BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                   [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)
_IMAGES = np.random.default_rng(3).uniform(0, 1, (2, 4, 5, 3)).astype(np.float32)


def _cases():
    boxes, scores = tf.constant(_BOXES), tf.constant(_SCORES)
    images = tf.constant(_IMAGES)
    return {
        "image_color": lambda: [tf.image.hsv_to_rgb(images), tf.image.adjust_hue(images, 0.3),
                                tf.image.adjust_saturation(images, 1.7)],
        "resize_area": lambda: [tf.image.resize_area(images, [3, 7])],
        "nms": lambda: [tf.image.non_max_suppression(boxes, scores, 3, 0.5),
                        *tf.image.non_max_suppression_padded(boxes, scores, 5, 0.5,
                                                             pad_to_max_output_size=True),
                        *tf.image.non_max_suppression_with_scores(boxes, scores, 4, 0.5,
                                                                  soft_nms_sigma=0.5)],
        "combined_nms": lambda: list(tf.image.combined_non_max_suppression(
            tf.reshape(boxes, [1, 6, 1, 4]), tf.reshape(scores, [1, 6, 1]), 3, 4)),
        "draw_boxes": lambda: [tf.image.draw_bounding_boxes(
            images, tf.constant([[[0.1, 0.2, 0.8, 0.9]], [[0.0, 0.0, 0.5, 0.5]]], tf.float32))],
        "search_index": lambda: [
            tf.searchsorted(tf.constant([[1.0, 3.0, 5.0]]), tf.constant([[0.0, 3.0, 6.0]])),
            tf.searchsorted(tf.constant([[1, 3, 5]]), tf.constant([[3, 4]]), side="right"),
            tf.unravel_index(tf.constant([1, 5, 7]), tf.constant([2, 4])),
            tf.broadcast_dynamic_shape(tf.constant([2, 1]), tf.constant([3])),
            tf.bitcast(tf.constant([1.0, -2.0]), tf.int32),
            tf.histogram_fixed_width_bins(tf.constant([-1.0, 0.2, 0.5, 3.0]), [0.0, 1.0], 4),
            *tf.nn.collapse_repeated(tf.constant([[1, 1, 2, 2, 3], [4, 4, 4, 5, 5]]),
                                     tf.constant([5, 3])),
            tf.repeat(tf.constant([[1, 2], [3, 4]]), [2, 1], axis=0),
            tf.sparse_to_dense(tf.constant([[0, 1], [2, 0]]), [3, 2], tf.constant([7, 9])),
        ],
        "int_scatter_segments": lambda: [
            tf.tensor_scatter_nd_update(tf.zeros([4], tf.int32), [[1], [3]], [5, 6]),
            tf.tensor_scatter_nd_add(tf.ones([4], tf.int64), [[1], [1]], tf.constant([5, 6],
                                                                                  tf.int64)),
            tf.tensor_scatter_nd_sub(tf.ones([2, 2]), [[0]], [[2.0, 3.0]]),
            tf.tensor_scatter_nd_max(tf.zeros([3]), [[0], [2], [0]], [2.0, -1.0, 5.0]),
            tf.tensor_scatter_nd_min(tf.zeros([3], tf.int32), [[1], [1]], [-3, -7]),
            tf.math.segment_prod(tf.constant([2, 3, 4]), tf.constant([0, 0, 1])),
            tf.math.unsorted_segment_prod(tf.constant([2.0, 3.0, 4.0]), [1, 0, 1], 3),
            tf.space_to_batch_nd(tf.reshape(tf.range(16), [1, 4, 4, 1]), [2, 2], [[0, 0], [0, 0]]),
            tf.roll(tf.reshape(tf.range(6), [2, 3]), [1, -1], [0, 1]),
            *tf.nn.max_pool_with_argmax(images, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
        ],
        "special": lambda: [
            tf.math.xlogy(tf.constant([0.0, 2.0, 0.0]), tf.constant([0.0, 3.0, np.nan])),
            tf.math.multiply_no_nan(tf.constant([np.inf, 2.0]), tf.constant([0.0, 3.0])),
            tf.math.cumulative_logsumexp(tf.constant([[0.0, -np.inf, 1.0]], tf.float64), axis=1,
                                         exclusive=True),
            tf.math.igamma(tf.constant([0.5, 2.0]), tf.constant([1.0, 3.0])),
            tf.math.lgamma(tf.constant([0.5, -1.5, 10.0])),
        ],
    }


_CASES = ["image_color", "resize_area", "nms", "combined_nms", "draw_boxes", "search_index",
          "int_scatter_segments", "special"]


def _run(name, device):
    with tf.Graph().as_default():
        with tf.device(device):
            out = _cases()[name]()
        with tf.Session() as sess:
            return sess.run(out)


@pytest.mark.parametrize("name", _CASES)
def test_host_kernel_ops_on_gpu_match_the_cpu(name, gpu_backend):
    expected = _run(name, "/cpu:0")
    if gpu_backend is not None:
        fake_cupy.reset_stats()
    got = _run(name, "/gpu:0")
    if gpu_backend is not None:
        # the outputs were on the device: the fetches copy them back
        assert fake_cupy.stats["d2h"] > 0, "nothing ran on the (fake) GPU"
    for k, (e, g) in enumerate(zip(expected, got)):
        assert type(g) is type(e) and np.asarray(g).dtype == np.asarray(e).dtype, (name, k)
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL, err_msg="%s output %d" % (name, k))


def test_host_random_ops_on_gpu_match_the_cpu_draws():
    def draw(device):
        with tf.Graph().as_default():
            tf.set_random_seed(5)
            with tf.device(device):
                out = [tf.random_gamma([3], [1.0, 4.0]), tf.random_poisson([2.0, 9.0], [3]),
                       tf.random.stateless_uniform([4], seed=[1, 2]),
                       tf.random.stateless_normal([2, 2], seed=[3, 4]),
                       tf.random.stateless_truncated_normal([3], seed=[5, 6]),
                       tf.random.stateless_uniform([4], seed=[1, 2], minval=0, maxval=9,
                                                   dtype=tf.int32),
                       tf.random.stateless_categorical(tf.log([[0.2, 0.8]]), 5, seed=[7, 8]),
                       *tf.image.sample_distorted_bounding_box(
                           [8, 8, 3], tf.constant([[[0.1, 0.1, 0.9, 0.9]]]),
                           min_object_covered=0.3)]
            with tf.Session() as sess:
                return sess.run(out)

    for k, (g, c) in enumerate(zip(draw("/gpu:0"), draw("/cpu:0"))):
        assert type(g) is np.ndarray and g.dtype == c.dtype, k
        np.testing.assert_array_equal(g, c, err_msg="output %d" % k)
