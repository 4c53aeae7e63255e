"""Image ops (``tf.image``, see zps/image.py): resizing, cropping and padding, flips and
rotations, dtype conversion, brightness and contrast, grayscale, with TF1's semantics.

Images are ``[height, width, channels]`` or batches ``[batch, height, width, channels]``. The
resize ops are kernels of their own (TF1's legacy ones by default: ``align_corners=False`` maps
output pixel ``i`` to input coordinate ``i * in / out``; ``half_pixel_centers=True`` maps its
center, ``(i + 0.5) * in / out``); everything else is built from array and math ops, whose
gradients it inherits.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     image = tf.constant(np.arange(4.0).reshape(2, 2, 1))
...     y = tf.image.resize_images(image, [4, 4])
...     print(tf.Session().run(y)[..., 0][0])
[0.  0.5 1.  1. ]
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import (
    array_ops,
    control_flow_ops,
    image_resize_ops,
    logging_ops,
    math_ops,
    random_ops,
)
from zps.ops.op_util import make_op


# -- resize kernels: ResizeBilinear, ResizeNearestNeighbor and their gradients -------------------
def _scale(in_size, out_size, align_corners):
    """TF1's CalculateResizeScale, in float32 as its kernels compute it."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _source(in_size, out_size, align_corners, half_pixel_centers=False, nearest=False):
    """The input coordinate of each output pixel: TF1's LegacyScaler ``i * scale``, or with
    half-pixel centers ``(i + 0.5) * scale - 0.5`` (``(i + 0.5) * scale`` for nearest)."""
    i = np.arange(out_size, dtype=np.float32)
    scale = _scale(in_size, out_size, align_corners)
    if not half_pixel_centers:
        return i * scale
    src = (i + np.float32(0.5)) * scale
    return src if nearest else src - np.float32(0.5)


def _nearest_index(in_size, out_size, align_corners, half_pixel_centers=False):
    src = _source(in_size, out_size, align_corners, half_pixel_centers, True).astype(np.float64)
    # roundf (half away from zero) for align_corners, else floorf; clamped to the image.
    picked = np.floor(src + 0.5) if align_corners else np.floor(src)
    return np.clip(picked.astype(np.int64), 0, in_size - 1)


def _interpolation_matrix(in_size, out_size, align_corners, nearest, half_pixel_centers=False):
    """``[out_size, in_size]``: row ``i`` holds the weights of the input pixels of output ``i``."""
    weights = np.zeros((out_size, in_size), np.float32)
    rows = np.arange(out_size)
    if nearest:
        weights[rows, _nearest_index(in_size, out_size, align_corners, half_pixel_centers)] = 1.0
        return weights
    src = _source(in_size, out_size, align_corners, half_pixel_centers)
    lower = np.floor(src)
    lerp = src - lower  # a coordinate before the first pixel reads it twice (lower, upper = 0)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    np.add.at(weights, (rows, np.maximum(lower.astype(np.int64), 0)), 1.0 - lerp)
    np.add.at(weights, (rows, upper), lerp)
    return weights


_separable = image_resize_ops.separable
_check_images = image_resize_ops.check_images
_size_pair = image_resize_ops.size_pair


def _matrices(in_hw, out_hw, align_corners, nearest, half_pixel_centers):
    return [_interpolation_matrix(i, o, align_corners, nearest, half_pixel_centers)
            for i, o in zip(in_hw, out_hw)]


def _resized_shape(op):
    """``[batch, size[0], size[1], channels]``, the sizes known when ``size`` is a constant."""
    images = op.inputs[0].get_shape().with_rank(4)
    size = constant_value(op.inputs[1])
    hw = [None, None] if size is None else [int(s) for s in np.asarray(size).reshape(-1)]
    return TensorShape([images[0], hw[0], hw[1], images[3]])


def _image_grad_shape(op):
    """The shape of the image a resize gradient flows back to (its ``size`` or its input 1)."""
    grads = op.inputs[0].get_shape().with_rank(4)
    original = op.inputs[1]
    if original.get_shape().ndims == 4:
        shape = original.get_shape()
        return TensorShape([grads[0], shape[1], shape[2], grads[3]])
    size = constant_value(original)
    hw = [None, None] if size is None else [int(s) for s in np.asarray(size).reshape(-1)]
    return TensorShape([grads[0], hw[0], hw[1], grads[3]])


def _resize_bilinear_kernel(ctx, images, size, align_corners, op_name, half_pixel_centers=False):
    _check_images(images, op_name)
    wy, wx = _matrices(images.shape[1:3], _size_pair(size, op_name), align_corners, False,
                       half_pixel_centers)
    return _separable(ctx.xp, images.astype(np.float32, copy=False), wy, wx)


register_op("ResizeBilinear", dtype=lambda op: _dtypes.float32, shape=_resized_shape,
            kernel=_resize_bilinear_kernel, needs_op_name=True,
            grad=lambda op, g: [make_op("ResizeBilinearGrad", [g, op.inputs[0]],
                                        **_resize_attrs(op)), None])


def _resize_attrs(op):
    # (graphs written before half_pixel_centers existed have no such attr)
    return {k: op._attrs.get(k, False) for k in ("align_corners", "half_pixel_centers")}


def _resize_bilinear_grad_kernel(ctx, grads, original_image, align_corners,
                                 half_pixel_centers=False):
    wy, wx = _matrices(original_image.shape[1:3], grads.shape[1:3], align_corners, False,
                       half_pixel_centers)
    return _separable(ctx.xp, grads, wy.T, wx.T).astype(original_image.dtype, copy=False)


def _resized_back(resize_type):
    """The gradient of a resize gradient with respect to its ``grads``: the resize itself."""
    return lambda op, g: [make_op(resize_type, [g, array_ops.shape(op.inputs[0])[1:3]],
                                  **_resize_attrs(op)), None]


register_op("ResizeBilinearGrad", dtype=lambda op: op.inputs[1].dtype, shape=_image_grad_shape,
            kernel=_resize_bilinear_grad_kernel, grad=_resized_back("ResizeBilinear"))


def _resize_nearest_kernel(ctx, images, size, align_corners, op_name, half_pixel_centers=False):
    _check_images(images, op_name)
    (h, w), (oh, ow) = images.shape[1:3], _size_pair(size, op_name)
    xp = ctx.xp
    rows = xp.asarray(_nearest_index(h, oh, align_corners, half_pixel_centers))
    cols = xp.asarray(_nearest_index(w, ow, align_corners, half_pixel_centers))
    return images[:, rows][:, :, cols]


register_op("ResizeNearestNeighbor", shape=_resized_shape, kernel=_resize_nearest_kernel,
            needs_op_name=True,
            grad=lambda op, g: [make_op("ResizeNearestNeighborGrad",
                                        [g, array_ops.shape(op.inputs[0])[1:3]],
                                        **_resize_attrs(op)), None])


def _resize_nearest_grad_kernel(ctx, grads, size, align_corners, op_name,
                                half_pixel_centers=False):
    wy, wx = _matrices(_size_pair(size, op_name), grads.shape[1:3], align_corners, True,
                       half_pixel_centers)
    return _separable(ctx.xp, grads, wy.T, wx.T)


register_op("ResizeNearestNeighborGrad", shape=_image_grad_shape,
            kernel=_resize_nearest_grad_kernel, needs_op_name=True,
            grad=_resized_back("ResizeNearestNeighbor"))


def _resize_op(op_type, images, size, align_corners, half_pixel_centers, name):
    if align_corners and half_pixel_centers:  # TF1's error, raised when the graph is built
        raise errors.InvalidArgumentError(None, None, "%s: if half_pixel_centers is True, "
                                          "align_corners must be False" % op_type)
    images = convert_to_tensor(images, name="images")
    images.get_shape().with_rank(4)
    size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
    if size.get_shape().ndims is not None and size.get_shape().as_list() != [2]:
        raise ValueError("%s: size must be a 1-D int32 tensor of 2 elements (new_height, "
                         "new_width), got shape %s" % (op_type, size.get_shape()))
    return make_op(op_type, [images, size], name=name, align_corners=bool(align_corners),
                   half_pixel_centers=bool(half_pixel_centers))


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``images`` ([batch, height, width, channels]) resized to ``size`` by bilinear
    interpolation, as float32 (``half_pixel_centers``: pixel centers at ``i + 0.5``, TF 1.14's
    option, as OpenCV and PIL resize)."""
    return _resize_op("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """``images`` ([batch, height, width, channels]) resized to ``size`` by picking the nearest
    pixel; the dtype is kept (``half_pixel_centers`` as for :func:`resize_bilinear`)."""
    return _resize_op("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers,
                      name)


class ResizeMethod:
    """The methods of ``resize_images``."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


# TF 1.15's resize_images also takes TF2's method names.
_METHOD_NAMES = {"bilinear": ResizeMethod.BILINEAR, "nearest": ResizeMethod.NEAREST_NEIGHBOR,
                 "bicubic": ResizeMethod.BICUBIC, "area": ResizeMethod.AREA}


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """``images`` (3-D or 4-D) resized to ``size = [new_height, new_width]``; bilinear results
    are float32. Images already of that (static) size are returned unchanged."""
    resizers = {ResizeMethod.BILINEAR: resize_bilinear,
                ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor,
                ResizeMethod.BICUBIC: image_resize_ops.resize_bicubic,
                ResizeMethod.AREA: image_resize_ops.resize_area}
    method = _METHOD_NAMES.get(method, method)
    if method not in resizers:
        raise ValueError("resize_images: method %r is not a ResizeMethod (BILINEAR, "
                         "NEAREST_NEIGHBOR, BICUBIC or AREA)" % (method,))
    with get_default_graph().name_scope(name or "resize"):
        images, is_batch = _batched(convert_to_tensor(images, name="images"), "resize_images")
        size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
        if size.get_shape().ndims is not None and size.get_shape().as_list() != [2]:
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        if preserve_aspect_ratio:
            size = _aspect_preserving_size(images, size)
        static = constant_value(size)
        if static is not None and images.get_shape()[1:3].as_list() == list(static):
            return images if is_batch else array_ops.squeeze(images, [0])
        images = resizers[method](images, size, align_corners=align_corners)
        return images if is_batch else array_ops.squeeze(images, [0])


def _aspect_preserving_size(images, size):
    """The largest size within ``size`` with the aspect ratio of ``images`` (TF1's float32 math),
    a constant when both are known statically (so is then the resized images' shape)."""
    _, height, width, _ = _dimensions(images)
    static = constant_value(size)
    if static is not None and isinstance(height, int) and isinstance(width, int):
        hw = np.array([height, width], np.float32)
        factor = np.min(np.asarray(static, np.float32) / hw)
        return convert_to_tensor(np.round(factor * hw).astype(np.int32), name="size")
    hw = math_ops.cast(array_ops.stack([height, width]), _dtypes.float32)
    factor = math_ops.reduce_min(math_ops.cast(size, _dtypes.float32) / hw)
    return math_ops.cast(math_ops.round(factor * hw), _dtypes.int32)


# -- shapes of images ------------------------------------------------------------------------------
def _batched(image, what):
    """``(image as [batch, height, width, channels], whether it was a batch)``."""
    ndims = image.get_shape().ndims
    if ndims == 3:
        return array_ops.expand_dims(image, 0), False
    if ndims != 4:
        raise ValueError("%s: 'image' (%s) must have either 3 or 4 dimensions, got shape %s"
                         % (what, image.name, image.get_shape()))
    return image, True


def _dimensions(image):
    """Each dimension of ``image``: an int where known statically, else a scalar tensor."""
    static = image.get_shape().as_list()
    dynamic = None
    dims = []
    for i, d in enumerate(static):
        if d is None:
            dynamic = array_ops.shape(image) if dynamic is None else dynamic
            d = dynamic[i]
        dims.append(d)
    return dims


def _static_or_none(*values):
    return [None if is_symbolic(v) else v for v in values]


def _check(condition, message):
    """Raise ValueError(``message``) when ``condition`` is known false at build time (a tensor
    condition is left to the kernels)."""
    if not is_symbolic(condition) and not condition:
        raise ValueError(message)


def _max(x, y):
    return math_ops.maximum(x, y) if is_symbolic(x) or is_symbolic(y) else max(x, y)


def _min(x, y):
    return math_ops.minimum(x, y) if is_symbolic(x) or is_symbolic(y) else min(x, y)


def _vector(values):
    if any(is_symbolic(v) for v in values):
        return array_ops.stack([convert_to_tensor(v, dtype=_dtypes.int32) for v in values])
    return values


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The ``target_height x target_width`` window of ``image`` whose top-left corner is at
    ``(offset_height, offset_width)``."""
    with get_default_graph().name_scope("crop_to_bounding_box"):
        image, is_batch = _batched(convert_to_tensor(image, name="image"), "crop_to_bounding_box")
        batch, height, width, depth = _dimensions(image)
        _check(offset_width >= 0, "offset_width must be >= 0.")
        _check(offset_height >= 0, "offset_height must be >= 0.")
        _check(target_width > 0, "target_width must be > 0.")
        _check(target_height > 0, "target_height must be > 0.")
        _check(width >= target_width + offset_width, "width must be >= target + offset.")
        _check(height >= target_height + offset_height, "height must be >= target + offset.")
        cropped = array_ops.slice(image, _vector([0, offset_height, offset_width, 0]),
                                  _vector([-1, target_height, target_width, -1]))
        cropped.set_shape(_static_or_none(batch, target_height, target_width, depth))
        return cropped if is_batch else array_ops.squeeze(cropped, [0])


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """``image`` zero-padded to ``target_height x target_width``, its top-left corner at
    ``(offset_height, offset_width)``."""
    with get_default_graph().name_scope("pad_to_bounding_box"):
        image, is_batch = _batched(convert_to_tensor(image, name="image"), "pad_to_bounding_box")
        batch, height, width, depth = _dimensions(image)
        after_width = target_width - offset_width - width
        after_height = target_height - offset_height - height
        _check(offset_height >= 0, "offset_height must be >= 0")
        _check(offset_width >= 0, "offset_width must be >= 0")
        _check(after_width >= 0, "width must be <= target - offset")
        _check(after_height >= 0, "height must be <= target - offset")
        paddings = _vector([0, 0, offset_height, after_height, offset_width, after_width, 0, 0])
        paddings = (array_ops.reshape(paddings, [4, 2]) if is_symbolic(paddings)
                    else np.reshape(paddings, [4, 2]))
        padded = array_ops.pad(image, paddings)
        padded.set_shape(_static_or_none(batch, target_height, target_width, depth))
        return padded if is_batch else array_ops.squeeze(padded, [0])


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """``image`` centrally cropped and/or zero-padded to ``target_height x target_width``."""
    image, is_batch = _batched(convert_to_tensor(image, name="image"),
                               "resize_image_with_crop_or_pad")
    _check(target_width > 0, "target_width must be > 0.")
    _check(target_height > 0, "target_height must be > 0.")
    _, height, width, _ = _dimensions(image)
    width_diff = target_width - width
    height_diff = target_height - height
    cropped = crop_to_bounding_box(image, _max(-height_diff // 2, 0), _max(-width_diff // 2, 0),
                                   _min(target_height, height), _min(target_width, width))
    resized = pad_to_bounding_box(cropped, _max(height_diff // 2, 0), _max(width_diff // 2, 0),
                                  target_height, target_width)
    return resized if is_batch else array_ops.squeeze(resized, [0])


def central_crop(image, central_fraction):
    """The central ``central_fraction`` (in (0, 1]) of ``image`` along height and width."""
    if not 0.0 < central_fraction <= 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    image = convert_to_tensor(image, name="image")
    if central_fraction == 1.0:
        return image
    with get_default_graph().name_scope("central_crop"):
        batched, is_batch = _batched(image, "central_crop")
        _, height, width, _ = _dimensions(batched)

        def start(size):
            if is_symbolic(size):
                size = math_ops.cast(size, _dtypes.float64)
                return math_ops.cast((size - size * central_fraction) / 2, _dtypes.int32)
            return int((size - size * central_fraction) / 2)

        top, left = start(height), start(width)
        return crop_to_bounding_box(image, top, left, height - top * 2, width - left * 2)


# -- flips and rotations ---------------------------------------------------------------------------
def _image_rank(image, what):
    ndims = image.get_shape().ndims
    if ndims not in (3, 4):
        raise ValueError("%s: 'image' (%s) must be 3-D [height, width, channels] or 4-D [batch, "
                         "height, width, channels], got shape %s"
                         % (what, image.name, image.get_shape()))
    return ndims


def _flip(image, axis, what):
    with get_default_graph().name_scope(what):
        image = convert_to_tensor(image, name="image")
        return array_ops.reverse(image, [axis + _image_rank(image, what) - 3])


def flip_left_right(image):
    """``image`` (3-D or 4-D) mirrored horizontally (along the width)."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image):
    """``image`` (3-D or 4-D) mirrored vertically (along the height)."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, axis, seed, what):
    with get_default_graph().name_scope(what):
        image = convert_to_tensor(image, name="image")
        ndims = _image_rank(image, what)
        flipped = array_ops.reverse(image, [axis + ndims - 3])
        if ndims == 3:   # one coin for the image
            mirror = math_ops.less(random_ops.random_uniform([], 0, 1.0, seed=seed), 0.5)
            return control_flow_ops.cond(mirror, lambda: flipped, lambda: image)
        batch = array_ops.shape(image)[0]   # one coin per image of the batch
        flips = math_ops.round(array_ops.reshape(
            random_ops.random_uniform(array_ops.stack([batch]), 0, 1.0, seed=seed),
            array_ops.stack([batch, 1, 1, 1])))
        flips = math_ops.cast(flips, image.dtype)
        return flips * flipped + (1 - flips) * image


def random_flip_left_right(image, seed=None):
    """``image`` mirrored horizontally with probability 1/2 (each image of a batch on its own)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """``image`` mirrored vertically with probability 1/2 (each image of a batch on its own)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def transpose_image(image):
    """``image`` with height and width swapped."""
    with get_default_graph().name_scope("transpose_image"):
        image = convert_to_tensor(image, name="image")
        perm = [1, 0, 2] if _image_rank(image, "transpose_image") == 3 else [0, 2, 1, 3]
        return array_ops.transpose(image, perm)


def rot90(image, k=1, name=None):
    """``image`` rotated counter-clockwise by ``k`` (an int or an int32 scalar tensor) times 90
    degrees."""
    with get_default_graph().name_scope(name or "rot90"):
        image = convert_to_tensor(image, name="image")
        offset = _image_rank(image, "rot90") - 3
        h, w = offset, offset + 1
        perm = list(range(offset)) + [w, h, offset + 2]

        def rotated(times):
            if times == 1:
                return array_ops.transpose(array_ops.reverse(image, [w]), perm)
            if times == 2:
                return array_ops.reverse(image, [h, w])
            if times == 3:
                return array_ops.reverse(array_ops.transpose(image, perm), [w])
            return image

        static = constant_value(k)
        if static is not None:
            return rotated(int(static) % 4)
        k = math_ops.floormod(convert_to_tensor(k, dtype=_dtypes.int32, name="k"), 4)
        return control_flow_ops.case(
            [(math_ops.equal(k, times), lambda times=times: rotated(times)) for times in (1, 2, 3)],
            default=lambda: image, exclusive=True)


# -- pixel values ----------------------------------------------------------------------------------
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """``image`` in ``dtype``, rescaled: floats are in [0, 1), integers in [0, dtype.max].

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.image.convert_image_dtype(tf.constant([0, 255], tf.uint8), tf.float32)
    ...     print(tf.Session().run(y))
    [0. 1.]
    """
    image = convert_to_tensor(image, name="image")
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer, got %s"
                             % dtype.name)
    if dtype == image.dtype:
        return array_ops.identity(image, name=name)
    cast = math_ops.saturate_cast if saturate else math_ops.cast
    with get_default_graph().name_scope(name or "convert_image"):
        source = image.dtype
        if source.is_integer and dtype.is_integer:
            if source.max > dtype.max:   # scale down first, then cast
                return cast(math_ops.floordiv(image, (source.max + 1) // (dtype.max + 1)), dtype)
            return math_ops.multiply(cast(image, dtype), (dtype.max + 1) // (source.max + 1))
        if source.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype)
        if source.is_integer:   # to float: cast, then scale
            return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / source.max)
        # From float: scale (by max + 0.5, against rounding down in the cast), then cast.
        return cast(math_ops.multiply(image, dtype.max + 0.5), dtype)


def _in_float(image, adjust):
    """``adjust(image as float)`` converted back to ``image``'s dtype (saturating), as TF1."""
    image = convert_to_tensor(image, name="image")
    orig = image.dtype
    flt = image if orig in (_dtypes.float16, _dtypes.float32) else \
        convert_image_dtype(image, _dtypes.float32)
    return convert_image_dtype(adjust(flt), orig, saturate=True)


def adjust_brightness(image, delta):
    """``image + delta`` (computed in float; integer images are scaled to [0, 1] first)."""
    with get_default_graph().name_scope("adjust_brightness"):
        return _in_float(image, lambda flt: math_ops.add(flt, math_ops.cast(delta, flt.dtype)))


def adjust_contrast(images, contrast_factor):
    """``(x - mean) * contrast_factor + mean``, the mean of each channel of each image."""
    def adjust(flt):
        mean = math_ops.reduce_mean(flt, axis=[-3, -2], keepdims=True)
        return (flt - mean) * math_ops.cast(contrast_factor, flt.dtype) + mean

    with get_default_graph().name_scope("adjust_contrast"):
        return _in_float(images, adjust)


def random_brightness(image, max_delta, seed=None):
    """``adjust_brightness`` by a delta drawn uniformly from ``[-max_delta, max_delta)``."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """``adjust_contrast`` by a factor drawn uniformly from ``[lower, upper)``."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def per_image_standardization(image):
    """Each image scaled to zero mean and unit variance: ``(x - mean) / max(stddev,
    1 / sqrt(num_pixels))``, in float32."""
    with get_default_graph().name_scope("per_image_standardization"):
        image = convert_to_tensor(image, name="image")
        if image.get_shape().ndims is not None and image.get_shape().ndims < 3:
            raise ValueError("'image' (shape %s) must be at least three-dimensional."
                             % image.get_shape())
        num_pixels = math_ops.reduce_prod(array_ops.shape(image)[-3:])
        image = math_ops.cast(image, _dtypes.float32)
        axes = [-1, -2, -3]
        mean = math_ops.reduce_mean(image, axis=axes, keepdims=True)
        variance = math_ops.reduce_mean(math_ops.square(image), axis=axes, keepdims=True) - \
            math_ops.square(mean)
        stddev = math_ops.sqrt(math_ops.maximum(variance, 0.0))
        min_stddev = math_ops.rsqrt(math_ops.cast(num_pixels, _dtypes.float32))
        return (image - mean) / math_ops.maximum(stddev, min_stddev)


def rgb_to_grayscale(images, name=None):
    """``images`` ``[..., 3]`` as luminance ``[..., 1]`` (weights 0.2989, 0.5870, 0.1140)."""
    with get_default_graph().name_scope(name or "rgb_to_grayscale"):
        images = convert_to_tensor(images, name="images")
        flt = convert_image_dtype(images, _dtypes.float32)
        gray = math_ops.tensordot(flt, np.array([0.2989, 0.5870, 0.1140], np.float32), [-1, -1])
        return convert_image_dtype(array_ops.expand_dims(gray, -1), images.dtype)


def grayscale_to_rgb(images, name=None):
    """``images`` ``[..., 1]`` repeated to three channels ``[..., 3]``."""
    with get_default_graph().name_scope(name or "grayscale_to_rgb"):
        images = convert_to_tensor(images, name="images")
        shape = images.get_shape()
        if shape.ndims is not None and (shape.ndims < 2 or shape[-1].value not in (1, None)):
            raise ValueError("grayscale_to_rgb: the last dimension of %s must be 1 (a grayscale "
                             "image), got shape %s" % (images.name, shape))
        return array_ops.concat([images] * 3, -1)


def random_crop(value, size, seed=None, name=None):
    """A window of shape ``size`` at a random offset of ``value`` (any rank).

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     crop = tf.random_crop(tf.zeros([5, 6, 3]), [2, 2, 3], seed=1)
    ...     print(crop.get_shape().as_list())
    [2, 2, 3]
    """
    with get_default_graph().name_scope(name or "random_crop"):
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
        shape = array_ops.shape(value)
        check = logging_ops.Assert(math_ops.reduce_all(shape >= size),
                                   ["Need value.shape >= size, got ", shape, size])
        shape = control_flow_ops.with_dependencies([check], shape)
        limit = shape - size + 1
        offset = random_ops.random_uniform(array_ops.shape(shape), dtype=_dtypes.int32,
                                           maxval=_dtypes.int32.max, seed=seed) % limit
        return array_ops.slice(value, offset, size)


__all__ = [
    "ResizeMethod", "resize_images", "resize_bilinear", "resize_nearest_neighbor",
    "resize_image_with_crop_or_pad", "central_crop", "crop_to_bounding_box",
    "pad_to_bounding_box", "flip_left_right", "flip_up_down", "random_flip_left_right",
    "random_flip_up_down", "transpose_image", "rot90", "per_image_standardization",
    "convert_image_dtype", "adjust_brightness", "adjust_contrast", "random_brightness",
    "random_contrast", "random_crop", "rgb_to_grayscale", "grayscale_to_rgb",
]
