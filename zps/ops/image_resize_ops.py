"""Area and bicubic resizing, image patches and resize-with-pad (``tf.image``, see
zps/image.py), with TF1's legacy kernels (``half_pixel_centers=False``).

``ResizeBicubic`` is TF1's legacy kernel: Keys' cubic with ``a = -0.75``, its weights looked up in
a table of 1024 steps, edge pixels repeated; ``ResizeArea`` averages the input cells each output
cell covers (with fractional weights at its borders). Both are separable: each is a matrix along
the rows and one along the columns, so their gradients are the transposed matrices. This module
imports nothing from zps/ops/image_ops.py at import time, so that module may use it.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     image = tf.constant(np.arange(4.0).reshape(1, 1, 4, 1))
...     print(tf.Session().run(tf.image.resize_area(image, [1, 2]))[0, 0, :, 0])
[0.5 2.5]
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, math_ops
from zps.ops.op_util import make_op


def _scale(in_size, out_size, align_corners):
    """TF1's CalculateResizeScale, in float32."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


_TABLE_SIZE = 1024


def _cubic_table(a=-0.75):
    """TF's GetCoeffsTable: ``table[i] = (w(x), w(x + 1))`` for ``x = i / 1024``."""
    x = (np.arange(_TABLE_SIZE + 1) / _TABLE_SIZE).astype(np.float32)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + np.float32(1)
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return np.stack([near, far], -1).astype(np.float32)


_CUBIC = _cubic_table()


def _bicubic_matrix(in_size, out_size, align_corners):
    """``[out_size, in_size]`` weights of TF1's legacy bicubic resize along one axis."""
    src = np.arange(out_size, dtype=np.float32) * _scale(in_size, out_size, align_corners)
    start = np.floor(src).astype(np.int64)
    offset = np.rint((src - start) * np.float32(_TABLE_SIZE)).astype(np.int64)
    weights = np.stack([_CUBIC[offset, 1], _CUBIC[offset, 0], _CUBIC[_TABLE_SIZE - offset, 0],
                        _CUBIC[_TABLE_SIZE - offset, 1]], -1)
    index = np.clip(start[:, None] + np.arange(-1, 3), 0, in_size - 1)
    matrix = np.zeros((out_size, in_size), np.float32)
    np.add.at(matrix, (np.arange(out_size)[:, None], index), weights)
    return matrix


def _area_matrix(in_size, out_size, align_corners):
    """``[out_size, in_size]``: output cell ``i`` covers input ``[i * s, (i + 1) * s)``; each
    input cell weighs the part of it covered, over ``s``."""
    scale = _scale(in_size, out_size, align_corners)
    matrix = np.zeros((out_size, in_size), np.float32)
    for i in range(out_size):
        low, high = np.float32(i) * scale, np.float32(i + 1) * scale
        for j in range(int(np.floor(low)), int(np.ceil(high))):
            if j < low:
                part = scale if j + 1 > high else np.float32(j + 1) - low
            else:
                part = high - np.float32(j) if j + 1 > high else np.float32(1)
            matrix[i, min(max(j, 0), in_size - 1)] += part / scale
    return matrix


_MATRICES = {"ResizeBicubic": _bicubic_matrix, "ResizeArea": _area_matrix}


def separable(xp, x, wy, wx):
    """``x`` ([n, h, w, c]) mapped through ``wy`` along the rows and ``wx`` along the columns
    (as tensordots: BLAS products, ~15x faster than einsum on a batch of 224x224 images).
    Shared with zps/ops/image_ops.py's bilinear resizing."""
    y = xp.moveaxis(xp.tensordot(xp.asarray(wy, x.dtype), x, axes=(1, 1)), 0, 1)
    return xp.ascontiguousarray(
        xp.moveaxis(xp.tensordot(xp.asarray(wx, x.dtype), y, axes=(1, 2)), 0, 2))


def check_images(images, op_name):
    """InvalidArgumentError unless ``images`` is 4-D (also zps/ops/image_ops.py's check)."""
    if images.ndim != 4:
        raise errors.InvalidArgumentError(
            None, op_name, "input must be 4-dimensional [batch, height, width, channels], got "
            "shape %s" % (list(images.shape),))


def size_pair(size, op_name):
    """The output ``(height, width)`` of a resize's ``size`` input, checked positive."""
    height, width = (int(s) for s in np.asarray(size).reshape(-1))
    if height <= 0 or width <= 0:
        raise errors.InvalidArgumentError(None, op_name, "output dimensions must be positive, "
                                          "got size [%d, %d]" % (height, width))
    return height, width


def _resize_kernel(op_type):
    def kernel(ctx, images, size, align_corners, op_name):
        check_images(images, op_name)
        out = size_pair(size, op_name)
        wy, wx = (_MATRICES[op_type](i, o, align_corners) for i, o in zip(images.shape[1:3], out))
        return ctx.xp.asarray(separable(np, np.asarray(images, np.float32), wy, wx))
    return kernel


def _resized_shape(op):
    images = op.inputs[0].get_shape().with_rank(4)
    size = constant_value(op.inputs[1])
    hw = [None, None] if size is None else [int(s) for s in np.asarray(size).reshape(-1)]
    return TensorShape([images[0], hw[0], hw[1], images[3]])


def _bicubic_grad_kernel(ctx, grads, original_image, align_corners):
    wy, wx = (_bicubic_matrix(i, o, align_corners)
              for i, o in zip(original_image.shape[1:3], grads.shape[1:3]))
    out = separable(np, np.asarray(grads, np.float32), wy.T, wx.T)
    return ctx.xp.asarray(out.astype(original_image.dtype, copy=False))


register_op("ResizeBicubic", dtype=lambda op: _dtypes.float32, shape=_resized_shape,
            kernel=_resize_kernel("ResizeBicubic"), needs_op_name=True,
            grad=lambda op, g: [make_op("ResizeBicubicGrad", [g, op.inputs[0]],
                                        align_corners=op._attrs["align_corners"]), None])
register_op("ResizeBicubicGrad", dtype=lambda op: op.inputs[1].dtype,
            shape=lambda op: op.inputs[1].get_shape(), kernel=_bicubic_grad_kernel,
            grad=lambda op, g: [make_op("ResizeBicubic",
                                        [g, array_ops.shape(op.inputs[0])[1:3]],
                                        align_corners=op._attrs["align_corners"]), None])
register_op("ResizeArea", dtype=lambda op: _dtypes.float32, shape=_resized_shape,
            kernel=_resize_kernel("ResizeArea"), needs_op_name=True)   # no gradient, as TF


def _resize_op(op_type, images, size, align_corners, name):
    images = convert_to_tensor(images, name="images")
    images.get_shape().with_rank(4)
    if not (images.dtype.is_floating or images.dtype.is_integer):
        raise TypeError("%s: images must be numbers, got %s" % (op_type, images.dtype.name))
    size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
    if size.get_shape().ndims is not None and size.get_shape().as_list() != [2]:
        raise ValueError("%s: size must be a 1-D int32 tensor of 2 elements (new_height, "
                         "new_width), got shape %s" % (op_type, size.get_shape()))
    return make_op(op_type, [images, size], name=name, align_corners=bool(align_corners))


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``images`` ([batch, height, width, channels]) resized to ``size`` by TF1's legacy bicubic
    interpolation, as float32. Differentiable."""
    if half_pixel_centers:
        raise NotImplementedError("resize_bicubic: zps implements TF1's legacy kernel only; "
                                  "leave half_pixel_centers=False")
    return _resize_op("ResizeBicubic", images, size, align_corners, name)


def resize_area(images, size, align_corners=False, name=None):
    """``images`` ([batch, height, width, channels]) resized to ``size`` by area averaging, as
    float32 (best for shrinking). Not differentiable (as TF)."""
    return _resize_op("ResizeArea", images, size, align_corners, name)


# -- ExtractImagePatches ---------------------------------------------------------------------------
def _patch_geometry(in_size, ksize, stride, rate, padding):
    """``(out_size, pad_before)`` along one axis (conv2d's rule for the dilated window)."""
    effective = (ksize - 1) * rate + 1
    if padding == "VALID":
        return max(-(-(in_size - effective + 1) // stride), 0), 0
    out = -(-in_size // stride)
    return out, max((out - 1) * stride + effective - in_size, 0) // 2


def _patch_index(shape, ksizes, strides, rates, padding):
    """``[out_h, out_w, kh * kw]`` flat ``h * w`` indices of each patch's pixels, -1 in padding."""
    _, h, w, _ = shape
    axes = []
    for size, k, s, r in zip((h, w), ksizes[1:3], strides[1:3], rates[1:3]):
        out, before = _patch_geometry(size, k, s, r, padding)
        pos = np.arange(out)[:, None] * s - before + np.arange(k)[None, :] * r
        axes.append(np.where((pos >= 0) & (pos < size), pos, -1))
    rows, cols = axes   # [out_h, kh], [out_w, kw]
    r = rows[:, None, :, None]
    c = cols[None, :, None, :]
    flat = np.where((r >= 0) & (c >= 0), r * w + c, -1)
    return flat.reshape(rows.shape[0], cols.shape[0], -1)


def _extract_patches_kernel(ctx, images, ksizes, strides, rates, padding, op_name):
    if images.ndim != 4:
        raise errors.InvalidArgumentError(None, op_name, "input must be 4-dimensional [batch, "
                                          "rows, cols, depth], got shape %s"
                                          % (list(images.shape),))
    index = _patch_index(images.shape, ksizes, strides, rates, padding)
    b, h, w, d = images.shape
    flat = np.concatenate([np.asarray(images).reshape(b, h * w, d), np.zeros((b, 1, d),
                                                                             images.dtype)], 1)
    patches = flat[:, np.where(index >= 0, index, h * w)]   # [b, oh, ow, k, d]
    return ctx.xp.asarray(patches.reshape(b, index.shape[0], index.shape[1], -1))


def _extract_patches_grad_kernel(ctx, grads, images, ksizes, strides, rates, padding):
    index = _patch_index(images.shape, ksizes, strides, rates, padding)
    b, h, w, d = images.shape
    out = np.zeros((b, h * w + 1, d), np.asarray(grads).dtype)
    g = np.asarray(grads).reshape(b, index.shape[0], index.shape[1], index.shape[2], d)
    target = np.where(index >= 0, index, h * w)
    np.add.at(out, (slice(None), target), g)
    return ctx.xp.asarray(out[:, :h * w].reshape(b, h, w, d).astype(images.dtype))


def _patches_shape(op):
    b, h, w, d = op.inputs[0].get_shape().with_rank(4).as_list()
    attrs = op._attrs
    k = attrs["ksizes"]
    oh = None if h is None else _patch_geometry(h, k[1], attrs["strides"][1], attrs["rates"][1],
                                                attrs["padding"])[0]
    ow = None if w is None else _patch_geometry(w, k[2], attrs["strides"][2], attrs["rates"][2],
                                                attrs["padding"])[0]
    return TensorShape([b, oh, ow, None if d is None else k[1] * k[2] * d])


def _patch_attrs(op):
    return {k: op._attrs[k] for k in ("ksizes", "strides", "rates", "padding")}


register_op("ExtractImagePatches", shape=_patches_shape, kernel=_extract_patches_kernel,
            needs_op_name=True,
            grad=lambda op, g: [make_op("ExtractImagePatchesGrad", [g, op.inputs[0]],
                                        **_patch_attrs(op))])
# The transpose of the patch extraction (a scatter-add); linear, so its gradient is the
# extraction again. (TF builds this from a sparse matmul; the numbers are the same.)
register_op("ExtractImagePatchesGrad", shape=lambda op: op.inputs[1].get_shape(),
            kernel=_extract_patches_grad_kernel,
            grad=lambda op, g: [make_op("ExtractImagePatches", [g], **_patch_attrs(op)), None])


def _four(values, what):
    values = [int(v) for v in values]
    if len(values) != 4 or values[0] != 1 or values[3] != 1 or min(values) < 1:
        raise ValueError("extract_image_patches: %s must be [1, rows, cols, 1] of positive "
                         "ints, got %s" % (what, values))
    return tuple(values)


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name=None, sizes=None):
    """The ``ksizes`` patches of ``images`` ([batch, rows, cols, depth]) at ``strides``, their
    pixels ``rates`` apart, stacked in the depth: ``[batch, out_rows, out_cols, ksize_rows *
    ksize_cols * depth]`` (``padding`` "VALID" or "SAME", zeros, as conv2d).

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.constant(np.arange(16.0).reshape(1, 4, 4, 1))
    ...     p = tf.image.extract_image_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1],
    ...                                        "VALID")
    ...     print(tf.Session().run(p)[0, 0])
    [[0. 1. 4. 5.]
     [2. 3. 6. 7.]]
    """
    ksizes = sizes if ksizes is None else ksizes
    if ksizes is None or strides is None or rates is None or padding is None:
        raise TypeError("extract_image_patches needs ksizes (sizes), strides, rates and padding")
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError("extract_image_patches: padding must be 'VALID' or 'SAME', got %r"
                         % padding)
    images = convert_to_tensor(images, name="images")
    if images.get_shape().ndims not in (None, 4):
        raise ValueError("extract_image_patches: images must be 4-D [batch, rows, cols, depth], "
                         "got shape %s" % images.get_shape())
    return make_op("ExtractImagePatches", [images], name=name or "ExtractImagePatches",
                   ksizes=_four(ksizes, "ksizes"), strides=_four(strides, "strides"),
                   rates=_four(rates, "rates"), padding=padding)


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """TF 1.15's name of ``extract_image_patches`` (``sizes`` for ``ksizes``)."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


# -- resize_image_with_pad -------------------------------------------------------------------------
def _resize_any(images, size, method, align_corners):
    """``resize_images``' methods, area and bicubic included (images are 4-D)."""
    from zps.ops import image_ops  # image_ops may import this module: imported when called

    if method == image_ops.ResizeMethod.BICUBIC:
        return resize_bicubic(images, size, align_corners=align_corners)
    if method == image_ops.ResizeMethod.AREA:
        return resize_area(images, size, align_corners=align_corners)
    return image_ops.resize_images(images, size, method, align_corners=align_corners)


def resize_image_with_pad(image, target_height, target_width, method=0, align_corners=False):
    """``image`` (3-D or 4-D) resized to fit ``target_height x target_width`` keeping its aspect
    ratio, then zero-padded (centered) to exactly that size. ``method`` is a ResizeMethod."""
    from zps.ops import image_ops

    with get_default_graph().name_scope("resize_image_with_pad"):
        image = convert_to_tensor(image, name="image")
        ndims = image.get_shape().ndims
        if ndims not in (3, 4):
            raise ValueError("resize_image_with_pad: 'image' must have either 3 or 4 dimensions, "
                             "got shape %s" % image.get_shape())
        batch = image if ndims == 4 else array_ops.expand_dims(image, 0)
        for value, what in ((target_height, "target_height"), (target_width, "target_width")):
            if isinstance(value, int) and value <= 0:
                raise ValueError("%s must be > 0." % what)
        shape = array_ops.shape(batch)
        f32 = _dtypes.float32
        height, width = math_ops.cast(shape[1], f32), math_ops.cast(shape[2], f32)
        f_target_h = math_ops.cast(target_height, f32)
        f_target_w = math_ops.cast(target_width, f32)
        ratio = math_ops.maximum(width / f_target_w, height / f_target_h)
        resized_h, resized_w = height / ratio, width / ratio
        size = math_ops.cast(math_ops.floor(array_ops.stack([resized_h, resized_w])),
                             _dtypes.int32)
        pad_h = math_ops.maximum(0, math_ops.cast(
            math_ops.floor((f_target_h - resized_h) / 2), _dtypes.int32))
        pad_w = math_ops.maximum(0, math_ops.cast(
            math_ops.floor((f_target_w - resized_w) / 2), _dtypes.int32))
        resized = _resize_any(batch, size, method, align_corners)
        padded = image_ops.pad_to_bounding_box(resized, pad_h, pad_w, target_height,
                                               target_width)
        return padded if ndims == 4 else array_ops.squeeze(padded, [0])


__all__ = ["resize_bicubic", "resize_area", "extract_image_patches", "extract_patches",
           "resize_image_with_pad"]
