"""Color spaces and image quality (``tf.image``, see zps/image.py): HSV, YIQ and YUV conversions,
hue, saturation and gamma adjustments, total variation, PSNR, SSIM (and its multiscale form),
Sobel edges and image gradients, with TF1's semantics.

``RGBToHSV``, ``HSVToRGB``, ``AdjustHue`` and ``AdjustSaturation`` are kernels of their own, as
TF1's (``AdjustHue`` and ``AdjustSaturation`` compute in float32 and, as in TF, have no gradient;
``HSVToRGB`` is not differentiable; ``RGBToHSV``'s gradient is the exact piecewise derivative).
Everything else is built from array, math and convolution ops, whose gradients it inherits.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     hsv = tf.image.rgb_to_hsv(tf.constant([[1.0, 0.5, 0.0]]))
...     print(tf.Session().run(hsv))
[[0.08333334 1.         1.        ]]
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.ops import array_ops, conv_ops, logging_ops, math_ops, nn_ops, random_ops
from zps.ops.control_flow_ops import with_dependencies
from zps.ops.image_ops import convert_image_dtype
from zps.ops.op_util import make_op

_FLOATS = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def _check_rgb(images, op_name, what="input"):
    if images.ndim < 1 or images.shape[-1] != 3:
        raise errors.InvalidArgumentError(
            None, op_name, "%s must have 3 channels (its last dimension), got shape %s"
            % (what, list(images.shape)))


def _three_channels(op):
    """Shape rule of the color kernels: the shape of input 0, whose last dimension must be 3."""
    shape = op.inputs[0].get_shape().with_rank_at_least(1)
    last = shape[-1].value
    if last is not None and last != 3:
        raise ValueError("%s: the last dimension of %s must be 3 (R, G, B or H, S, V), got shape %s"
                         % (op.type, op.inputs[0].name, shape))
    return shape


def _float_images(images, what, types=_FLOATS):
    images = convert_to_tensor(images, name="images")
    if images.dtype.base_dtype not in types:
        raise TypeError("%s: images must be one of %s, got %s (convert integer images with "
                        "tf.image.convert_image_dtype first)"
                        % (what, ", ".join(t.name for t in types), images.dtype.name))
    return images


# -- RGBToHSV, HSVToRGB (TF's colorspace_op.h, computed in the input's dtype) ---------------------
def _hsv(rgb):
    """``(hue, saturation, value, chroma, argmax, argmin)`` of ``rgb`` [..., 3] as TF's kernel:
    the hue is taken from the first channel equal to the maximum (red, then green, then blue)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    value = rgb.max(-1)
    low = rgb.min(-1)
    chroma = value - low
    one = rgb.dtype.type(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        saturation = np.where(value > 0, chroma / value, rgb.dtype.type(0))
        norm = (one / chroma) * (one / rgb.dtype.type(6))
        hue = np.where(r == value, norm * (g - b),
                       np.where(g == value, norm * (b - r) + rgb.dtype.type(2.0 / 6),
                                norm * (r - g) + rgb.dtype.type(4.0 / 6)))
    hue = np.where(chroma > 0, hue, rgb.dtype.type(0))
    hue = np.where(hue < 0, hue + one, hue)
    argmax = np.where(r == value, 0, np.where(g == value, 1, 2))
    return hue, saturation, value, chroma, argmax, rgb.argmin(-1)


def _rgb_to_hsv_kernel(ctx, images, op_name):
    _check_rgb(images, op_name)
    hue, saturation, value = _hsv(np.asarray(images))[:3]
    return ctx.xp.asarray(np.stack([hue, saturation, value], -1).astype(images.dtype, copy=False))


def _rgb_to_hsv_grad_kernel(ctx, grads, images):
    """The exact derivative of each piece: ``v = max``, ``s = (max - min) / max``,
    ``h = num / (6 * (max - min)) + const`` with ``num`` the difference of the two other
    channels (TF's _RGBToHSVGrad computes the same)."""
    rgb = np.asarray(images, np.float64)
    _, _, value, chroma, imax, imin = _hsv(rgb)
    eye = np.eye(3)
    dmax, dmin = eye[imax], eye[imin]
    dchroma = dmax - dmin
    # num's coefficients for each argmax: g - b, b - r, r - g.
    coeffs = np.array([[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]])[imax]
    num = (coeffs * rgb).sum(-1)
    c, v = chroma[..., None], value[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        dhue = np.where(c > 0, (coeffs * c - num[..., None] * dchroma) / (6 * c * c), 0.0)
        dsat = np.where(v > 0, dchroma / v - c * dmax / (v * v), 0.0)
    g = np.asarray(grads, np.float64)
    out = g[..., 0:1] * dhue + g[..., 1:2] * dsat + g[..., 2:3] * dmax
    return ctx.xp.asarray(out.astype(images.dtype))


register_op("RGBToHSV", shape=_three_channels, kernel=_rgb_to_hsv_kernel, needs_op_name=True,
            grad=lambda op, g: [make_op("RGBToHSVGrad", [g, op.inputs[0]])])
# The gradient's own gradient is not implemented (TF's is built of ops with piecewise-zero
# second derivatives); a second-order request raises an error naming RGBToHSVGrad.
register_op("RGBToHSVGrad", shape=lambda op: op.inputs[1].get_shape(),
            kernel=_rgb_to_hsv_grad_kernel)


def _hsv_to_rgb_kernel(ctx, images, op_name):
    _check_rgb(images, op_name)
    x = np.asarray(images)
    t = x.dtype.type
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    dh = h * t(6)
    dr = np.clip(np.abs(dh - t(3)) - t(1), 0, 1)
    dg = np.clip(-np.abs(dh - t(2)) + t(2), 0, 1)
    db = np.clip(-np.abs(dh - t(4)) + t(2), 0, 1)
    one_s = -s + t(1)
    rgb = np.stack([(one_s + s * d) * v for d in (dr, dg, db)], -1)
    return ctx.xp.asarray(rgb.astype(x.dtype, copy=False))


register_op("HSVToRGB", shape=_three_channels, kernel=_hsv_to_rgb_kernel, needs_op_name=True,
            grad=None)   # TF1: NotDifferentiable("HSVToRGB")


def rgb_to_hsv(images, name=None):
    """``images`` ``[..., 3]`` (float, RGB in [0, 1]) as HSV: hue, saturation and value in [0, 1].

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.image.rgb_to_hsv([0.0, 0.0, 1.0])))
    [0.6666667 1.        1.       ]
    """
    return make_op("RGBToHSV", [_float_images(images, "rgb_to_hsv")], name=name or "RGBToHSV")


def hsv_to_rgb(images, name=None):
    """``images`` ``[..., 3]`` (float HSV, each in [0, 1]) as RGB, the inverse of ``rgb_to_hsv``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.image.hsv_to_rgb([2 / 3, 1.0, 1.0])))
    [0. 0. 1.]
    """
    return make_op("HSVToRGB", [_float_images(images, "hsv_to_rgb")], name=name or "HSVToRGB")


# -- AdjustHue, AdjustSaturation (TF's CPU kernels, in float32) -----------------------------------
def _adjust_hue_kernel(ctx, images, delta, op_name):
    """TF's AdjustHue: the hue as a position in [0, 6) between the max, mid and min channels,
    moved by ``6 * delta`` and wrapped; the max and min channels keep their values."""
    _check_rgb(images, op_name, "images")
    x = np.asarray(images, np.float32)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    # TF's six categories; ties may go either way, the result is the same.
    category = np.where(r < g, np.where(b < r, 1, np.where(b > g, 3, 2)),
                        np.where(b < g, 0, np.where(b > r, 4, 5)))
    v_max, v_min = x.max(-1), x.min(-1)
    v_mid = x.sum(-1) - v_max - v_min
    spread = v_max - v_min
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (v_mid - v_min) / spread
    increase = category % 2 == 0
    hue = np.where(spread == 0, np.float32(0),
                   category + np.where(increase, ratio, np.float32(1) - ratio)).astype(np.float32)
    hue = hue + np.float32(delta) * np.float32(6)
    hue = np.where(hue < 0, hue + np.float32(6) * np.ceil(-hue / 6), hue)   # TF's while loops
    hue = np.where(hue >= 6, hue - np.float32(6) * np.floor(hue / 6), hue).astype(np.float32)
    return ctx.xp.asarray(_hue_range_to_rgb(hue, v_min, v_max).astype(images.dtype, copy=False))


def _hue_range_to_rgb(hue, v_min, v_max):
    category = hue.astype(np.int64)
    ratio = hue - category
    ratio = np.where(category % 2 == 0, ratio, np.float32(1) - ratio)
    v_mid = v_min + ratio * (v_max - v_min)
    # (r, g, b) for each category: 0 = max, 1 = mid, 2 = min.
    order = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1], [2, 1, 0], [1, 2, 0], [0, 2, 1]])
    levels = np.stack([v_max, v_mid, v_min], -1)
    return np.take_along_axis(levels, order[np.minimum(category, 5)], -1)


def _adjust_saturation_kernel(ctx, images, scale, op_name):
    """TF's AdjustSaturation: to HSV, saturation times ``scale`` clamped to [0, 1], back."""
    _check_rgb(images, op_name, "images")
    x = np.asarray(images, np.float32)
    hue, saturation, value = _hsv(x)[:3]
    saturation = np.clip(saturation * np.float32(scale), 0, 1)
    c = saturation * value
    m = value - c
    dh = hue * np.float32(6)
    category = dh.astype(np.int64)
    fmodu = np.where(dh <= 0, dh + 2 * np.ceil((-dh + 1e-30) / 2), dh)   # TF's while loops
    fmodu = np.where(fmodu >= 2, fmodu - 2 * np.floor(fmodu / 2), fmodu)
    xx = c * (1 - np.abs(fmodu - 1))
    zero = np.zeros_like(c)
    # (r, g, b) for each category: 0 = c, 1 = x, 2 = 0.
    order = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1], [2, 1, 0], [1, 2, 0], [0, 2, 1]])
    levels = np.stack([c, xx, zero], -1)
    rgb = np.take_along_axis(levels, order[np.clip(category, 0, 5)], -1) + m[..., None]
    rgb = np.where(((category >= 0) & (category <= 5))[..., None], rgb, m[..., None])
    return ctx.xp.asarray(rgb.astype(images.dtype, copy=False))


def _scalar_shape_checked(op):
    factor = op.inputs[1].get_shape()
    if factor.ndims not in (None, 0):
        raise ValueError("%s: the adjustment (%s) must be a scalar, got shape %s"
                         % (op.type, op.inputs[1].name, factor))
    return _three_channels(op)


register_op("AdjustHue", shape=_scalar_shape_checked, kernel=_adjust_hue_kernel,
            needs_op_name=True)   # no gradient, as TF
register_op("AdjustSaturation", shape=_scalar_shape_checked, kernel=_adjust_saturation_kernel,
            needs_op_name=True)   # no gradient, as TF


def _adjust_in_float(op_type, image, factor, name, scope):
    """TF's adjust_hue / adjust_saturation: float16 and float32 images go as they are, others
    through ``convert_image_dtype`` to float32 and back."""
    with get_default_graph().name_scope(name or scope):
        image = convert_to_tensor(image, name="image")
        orig = image.dtype.base_dtype
        flt = image if orig in (_dtypes.float16, _dtypes.float32) else \
            convert_image_dtype(image, _dtypes.float32)
        factor = convert_to_tensor(factor, dtype=_dtypes.float32, name="delta")
        return convert_image_dtype(make_op(op_type, [flt, factor], name=op_type), orig)


def adjust_hue(image, delta, name=None):
    """``image`` (RGB ``[..., 3]``) with its hue rotated by ``delta`` (in [-1, 1], a fraction of
    the color wheel); saturation and value are kept. Not differentiable (as TF).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.image.adjust_hue([1.0, 0.0, 0.0], 1 / 3)))
    [0. 1. 0.]
    """
    return _adjust_in_float("AdjustHue", image, delta, name, "adjust_hue")


def adjust_saturation(image, saturation_factor, name=None):
    """``image`` (RGB ``[..., 3]``) with its HSV saturation multiplied by ``saturation_factor``
    (clamped to [0, 1]). Not differentiable (as TF).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.image.adjust_saturation([1.0, 0.5, 0.0], 0.0)))
    [1. 1. 1.]
    """
    return _adjust_in_float("AdjustSaturation", image, saturation_factor, name,
                            "adjust_saturation")


def random_hue(image, max_delta, seed=None):
    """``adjust_hue`` by a delta drawn uniformly from ``[-max_delta, max_delta)``, ``max_delta``
    in [0, 0.5]."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_hue(image, delta)


def random_saturation(image, lower, upper, seed=None):
    """``adjust_saturation`` by a factor drawn uniformly from ``[lower, upper)``."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_saturation(image, factor)


def adjust_gamma(image, gamma=1, gain=1):
    """``gain * image ** gamma`` (in float; integer images are scaled to [0, 1] first and
    converted back, saturating). ``gamma`` must be non-negative.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.image.adjust_gamma([0.25, 1.0], 0.5)))
    [0.5 1. ]
    """
    with get_default_graph().name_scope("adjust_gamma"):
        image = convert_to_tensor(image, name="image")
        orig = image.dtype.base_dtype
        flt = image if orig in (_dtypes.float16, _dtypes.float32) else \
            convert_image_dtype(image, _dtypes.float32)
        if isinstance(gamma, int | float | np.number):
            if gamma < 0:
                raise ValueError("Gamma should be a non-negative real number.")
        else:
            gamma = convert_to_tensor(gamma, dtype=flt.dtype, name="gamma")
            check = logging_ops.Assert(math_ops.greater_equal(gamma, 0), [
                "Gamma should be a non-negative real number, got", gamma])
            gamma = with_dependencies([check], gamma)
        adjusted = math_ops.cast(gain, flt.dtype) * math_ops.pow(
            flt, math_ops.cast(gamma, flt.dtype))
        return convert_image_dtype(adjusted, orig, saturate=True)


# -- YIQ, YUV: a 3x3 matrix on the channels (TF's constants) --------------------------------------
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _channel_matrix(images, matrix, what):
    images = _float_images(images, what)
    shape = images.get_shape()
    if shape.ndims is not None and (shape.ndims < 1 or shape[-1].value not in (3, None)):
        raise ValueError("%s: the last dimension of %s must be 3, got shape %s"
                         % (what, images.name, shape))
    kernel = convert_to_tensor(np.asarray(matrix, images.dtype.as_numpy_dtype), name="kernel")
    return math_ops.tensordot(images, kernel, [[-1], [0]])


def rgb_to_yiq(images):
    """``images`` ``[..., 3]`` (float RGB) in the YIQ color space (Y in [0, 1], I in [-0.5957,
    0.5957], Q in [-0.5226, 0.5226])."""
    return _channel_matrix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """``images`` ``[..., 3]`` (float YIQ) in RGB, the inverse of ``rgb_to_yiq``."""
    return _channel_matrix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images):
    """``images`` ``[..., 3]`` (float RGB) in the YUV color space (Y in [0, 1], U in [-0.436,
    0.436], V in [-0.615, 0.615])."""
    return _channel_matrix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """``images`` ``[..., 3]`` (float YUV) in RGB, the inverse of ``rgb_to_yuv``."""
    return _channel_matrix(images, _YUV_TO_RGB, "yuv_to_rgb")


# -- image quality ----------------------------------------------------------------------------------
def total_variation(images, name=None):
    """The sum of the absolute differences of neighbouring pixels (vertically and horizontally):
    a scalar for a 3-D image, ``[batch]`` for a 4-D batch.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.image.total_variation([[[0.0], [1.0]], [[3.0], [2.0]]])))
    6.0
    """
    with get_default_graph().name_scope(name or "total_variation"):
        images = convert_to_tensor(images, name="images")
        ndims = images.get_shape().ndims
        if ndims == 3:
            dif1 = images[1:, :, :] - images[:-1, :, :]
            dif2 = images[:, 1:, :] - images[:, :-1, :]
            axis = None
        elif ndims == 4:
            dif1 = images[:, 1:, :, :] - images[:, :-1, :, :]
            dif2 = images[:, :, 1:, :] - images[:, :, :-1, :]
            axis = [1, 2, 3]
        else:
            raise ValueError("total_variation: 'images' must be either 3 or 4-dimensional, got "
                             "shape %s" % images.get_shape())
        return math_ops.reduce_sum(math_ops.abs(dif1), axis=axis) + \
            math_ops.reduce_sum(math_ops.abs(dif2), axis=axis)


def _compatible_images(img1, img2, what):
    """Build-time check that the last three dimensions agree and the batch dimensions broadcast;
    returns run-time assertions of the same (TF's _verify_compatible_image_shapes)."""
    shape1 = img1.get_shape().with_rank_at_least(3)
    shape2 = img2.get_shape().with_rank_at_least(3)
    if not shape1[-3:].is_compatible_with(shape2[-3:]):
        raise ValueError("%s: the images' last three dimensions differ: %s and %s"
                         % (what, shape1, shape2))
    if shape1.ndims is not None and shape2.ndims is not None:
        for d1, d2 in zip(reversed(shape1.dims[:-3]), reversed(shape2.dims[:-3])):
            if not (d1.value == 1 or d2.value == 1 or d1.is_compatible_with(d2)):
                raise ValueError("%s: two images are not compatible: %s and %s"
                                 % (what, shape1, shape2))
    s1, s2 = array_ops.shape_n([img1, img2])
    return [logging_ops.Assert(math_ops.greater_equal(array_ops.size(s1), 3), [s1, s2]),
            logging_ops.Assert(math_ops.reduce_all(math_ops.equal(s1[-3:], s2[-3:])), [s1, s2])]


def _as_float_images(img1, img2, max_val):
    max_val = convert_image_dtype(math_ops.cast(max_val, img1.dtype), _dtypes.float32)
    return (convert_image_dtype(img1, _dtypes.float32), convert_image_dtype(img2, _dtypes.float32),
            max_val)


def psnr(a, b, max_val, name=None):
    """The peak signal-to-noise ratio of ``a`` and ``b`` (``[..., height, width, channels]``):
    ``20 log10(max_val) - 10 log10(mse)`` per image, ``max_val`` the dynamic range (255 for
    uint8 images, 1 for float images in [0, 1]).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(round(float(tf.Session().run(tf.image.psnr(
    ...         tf.zeros([2, 2, 1]), tf.fill([2, 2, 1], 0.1), 1.0))), 4))
    20.0
    """
    with get_default_graph().name_scope(name or "PSNR"):
        a, b = convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b")
        checks = _compatible_images(a, b, "psnr")
        a, b, max_val = _as_float_images(a, b, max_val)
        mse = math_ops.reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
        value = math_ops.subtract(20 * math_ops.log(max_val) / np.log(np.float32(10.0)),
                                  np.float32(10 / np.log(10)) * math_ops.log(mse), name="psnr")
        return with_dependencies(checks, value)


def _gaussian_filter(size, sigma, channels):
    """TF's _fspecial_gauss: a normalized 2-D Gaussian [size, size, channels, 1] (as float32)."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / 2
    g = np.square(coords) * np.float32(-0.5 / np.square(np.float32(sigma)))
    g = (g.reshape(1, -1) + g.reshape(-1, 1)).reshape(-1)
    g = np.exp(g - g.max())
    g = (g / g.sum()).astype(np.float32)
    return np.tile(g.reshape(size, size, 1, 1), [1, 1, channels, 1])


def _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1, k2,
                      return_index_map=False):
    """``(ssim, contrast-structure)`` per channel (TF's _ssim_per_channel, with its VALID
    Gaussian window)."""
    channels = img1.get_shape()[-1].value
    if channels is None:
        raise ValueError("ssim: the number of channels of %s must be known when the graph is "
                         "built, got shape %s" % (img1.name, img1.get_shape()))
    for s in (img1.get_shape(), img2.get_shape()):
        for d in s[-3:-1].as_list():
            if d is not None and d < filter_size:
                raise ValueError("ssim: the images (shape %s) must be at least filter_size=%d "
                                 "pixels high and wide" % (s, filter_size))
    kernel = convert_to_tensor(_gaussian_filter(filter_size, filter_sigma, channels))

    def reducer(x):
        shape = array_ops.shape(x)
        flat = array_ops.reshape(x, array_ops.concat([[-1], shape[-3:]], 0))
        y = conv_ops.depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
        return array_ops.reshape(y, array_ops.concat([shape[:-3], array_ops.shape(y)[1:]], 0))

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean0, mean1 = reducer(img1), reducer(img2)
    num0 = mean0 * mean1 * 2.0
    den0 = math_ops.square(mean0) + math_ops.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(img1 * img2) * 2.0
    den1 = reducer(math_ops.square(img1) + math_ops.square(img2))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    if return_index_map:
        return luminance * cs, cs
    return (math_ops.reduce_mean(luminance * cs, [-3, -2]), math_ops.reduce_mean(cs, [-3, -2]))


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False):
    """The structural similarity of ``img1`` and ``img2`` (``[..., height, width, channels]``,
    at least ``filter_size`` pixels each way): per image, averaged over the channels; with
    ``return_index_map``, the per-pixel map (of the VALID window positions) instead."""
    with get_default_graph().name_scope("SSIM"):
        img1 = convert_to_tensor(img1, name="img1")
        img2 = convert_to_tensor(img2, name="img2")
        img1 = with_dependencies(_compatible_images(img1, img2, "ssim"), img1)
        img1, img2, max_val = _as_float_images(img1, img2, max_val)
        per_channel, _ = _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1,
                                           k2, return_index_map)
        return math_ops.reduce_mean(per_channel, [-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11,
                    filter_sigma=1.5, k1=0.01, k2=0.03):
    """The multiscale structural similarity of ``img1`` and ``img2``: SSIM's contrast-structure
    term at ``len(power_factors)`` scales (each halving the images by 2x2 average pooling, after
    symmetric padding of odd sizes), times the full SSIM at the last, each to its power factor.
    The images must be known statically to have at least ``(filter_size - 1) * 2 **
    (len(power_factors) - 1) + 1`` pixels each way."""
    with get_default_graph().name_scope("MS-SSIM"):
        img1 = convert_to_tensor(img1, name="img1")
        img2 = convert_to_tensor(img2, name="img2")
        img1 = with_dependencies(_compatible_images(img1, img2, "ssim_multiscale"), img1)
        img1, img2, max_val = _as_float_images(img1, img2, max_val)
        imgs = [img1, img2]
        tails = [x.get_shape()[-3:].as_list() for x in imgs]
        if any(d is None for t in tails for d in t):
            raise ValueError("ssim_multiscale: the images' last three dimensions must be known "
                             "when the graph is built, got %s and %s"
                             % (img1.get_shape(), img2.get_shape()))
        heads = [array_ops.shape(x)[:-3] for x in imgs]
        mcs = []
        for k in range(len(power_factors)):
            with get_default_graph().name_scope("Scale%d" % k):
                if k > 0:
                    height, width, depth = tails[0]
                    flat = [array_ops.reshape(x, [-1] + tails[0]) for x in imgs]
                    if height % 2 or width % 2:
                        flat = [array_ops.pad(x, [[0, 0], [0, height % 2], [0, width % 2],
                                                  [0, 0]], mode="SYMMETRIC") for x in flat]
                    down = [conv_ops.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                            for x in flat]
                    tails = [[(height + 1) // 2, (width + 1) // 2, depth]] * 2
                    imgs = [array_ops.reshape(x, array_ops.concat([h, t], 0))
                            for x, h, t in zip(down, heads, tails)]
                    for x, t in zip(imgs, tails):
                        x.set_shape(x.get_shape()[:-3].concatenate(t) if x.get_shape().ndims
                                    else None)
                per_channel, cs = _ssim_per_channel(imgs[0], imgs[1], max_val, filter_size,
                                                    filter_sigma, k1, k2)
                mcs.append(nn_ops.relu(cs))
        mcs.pop()   # the contrast-structure term of the last scale is replaced by its SSIM
        stacked = array_ops.stack(mcs + [nn_ops.relu(per_channel)], axis=-1)
        weights = np.asarray(power_factors, np.float32)
        return math_ops.reduce_mean(math_ops.reduce_prod(math_ops.pow(stacked, weights), [-1]),
                                    [-1])


# -- edges ------------------------------------------------------------------------------------------
def image_gradients(image):
    """``(dy, dx)``: the forward differences of ``image`` ([batch, height, width, depth]) along
    the height and the width, each zero in its last row / column (same shape as ``image``)."""
    image = convert_to_tensor(image, name="image")
    if image.get_shape().ndims != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not %s."
                         % image.get_shape())
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    dy = array_ops.pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]])
    dx = array_ops.pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]])
    return dy, dx


_SOBEL = np.expand_dims(np.transpose(np.asarray(
    [[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]), (1, 2, 0)), -2)


def sobel_edges(image):
    """The Sobel edge maps of ``image`` ([batch, height, width, depth], float), of shape
    ``[batch, height, width, depth, 2]``: ``[..., 0]`` the vertical derivative (dy), ``[..., 1]``
    the horizontal one (dx), computed on the image padded by reflection."""
    image = _float_images(image, "sobel_edges")
    shape = image.get_shape()
    if shape.ndims is not None and shape.ndims != 4:
        raise ValueError("sobel_edges: image must be 4-D [batch, height, width, depth], got "
                         "shape %s" % shape)
    depth = shape[-1].value if shape.ndims is not None else None
    if depth is None:
        raise ValueError("sobel_edges: the depth of %s must be known when the graph is built, "
                         "got shape %s" % (image.name, shape))
    kernels = np.tile(_SOBEL, [1, 1, depth, 1]).astype(image.dtype.as_numpy_dtype)
    padded = array_ops.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = conv_ops.depthwise_conv2d(padded, convert_to_tensor(kernels, name="sobel_filters"),
                                       [1, 1, 1, 1], "VALID")
    output = array_ops.reshape(output, array_ops.concat([array_ops.shape(image), [2]], 0))
    output.set_shape(shape.concatenate([2]))
    return output


__all__ = [
    "rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "adjust_saturation", "random_hue",
    "random_saturation", "adjust_gamma", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb",
    "total_variation", "psnr", "ssim", "ssim_multiscale", "image_gradients", "sobel_edges",
]
