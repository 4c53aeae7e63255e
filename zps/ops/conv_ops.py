"""Convolution and pooling ops: ``tf.nn.conv2d``, ``tf.nn.max_pool``, ``tf.nn.avg_pool``.

Kernels work on NHWC arrays (NCHW ones are transposed in and out). A convolution is one matmul
over the im2col matrix of the padded input, read through an ``as_strided`` view of every window
(no Python loop over pixels); the backward ops and the pooling ops loop over the kh*kw kernel
offsets, each step a whole-tensor operation. Padding is TF1's: "SAME" gives ceil(in / stride)
outputs and puts the odd padding pixel after (pad_before = pad_total // 2).

>>> import numpy as np
>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant(np.ones((1, 4, 4, 1), np.float32))
...     y = tf.nn.conv2d(x, tf.ones([3, 3, 1, 2]), strides=[1, 2, 2, 1], padding="SAME")
...     print(y.get_shape().as_list(), tf.Session().run(y)[0, :, :, 0].tolist())
[1, 2, 2, 2] [[9.0, 6.0], [6.0, 4.0]]
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops
from zps.ops.op_util import make_op, static_shape_or_none, to_tensors

_DATA_FORMATS = ("NHWC", "NCHW")
# Bound on the im2col buffer of one matmul: larger batches are processed in chunks of images.
_IM2COL_CHUNK_BYTES = 32 << 20


# -- window geometry (shared by shape rules and kernels) -----------------------------------------
def _hw(values, data_format):
    """The (H, W) entries of a 4-element per-dimension list in ``data_format`` order."""
    return (values[1], values[2]) if data_format == "NHWC" else (values[2], values[3])


def _to_nhwc_dims(dims, data_format):
    return list(dims) if data_format == "NHWC" else [dims[0], dims[2], dims[3], dims[1]]


def _from_nhwc_dims(dims, data_format):
    return list(dims) if data_format == "NHWC" else [dims[0], dims[3], dims[1], dims[2]]


def _to_nhwc(x, data_format):
    return x if data_format == "NHWC" else x.transpose(0, 2, 3, 1)


def _from_nhwc(x, data_format):
    return x if data_format == "NHWC" else x.transpose(0, 3, 1, 2)


def _out_and_pads(size, k, stride, dilation, padding, explicit):
    """(output size, pad before, pad after) along one spatial dimension; size None -> unknown."""
    eff = (k - 1) * dilation + 1
    if padding == "EXPLICIT":
        before, after = explicit
    elif padding == "VALID":
        before = after = 0
    elif size is None:
        return None, None, None
    else:  # SAME: ceil(size / stride) outputs, the odd padding pixel goes after
        out = -(-size // stride)
        total = max((out - 1) * stride + eff - size, 0)
        return out, total // 2, total - total // 2
    if size is None:
        return None, before, after
    if size + before + after < eff:
        raise ValueError("Negative dimension size caused by subtracting %d from %d: the %s window "
                         "does not fit in the padded input" % (eff, size + before + after, padding))
    return (size + before + after - eff) // stride + 1, before, after


class _Window:
    """A (dilated) kh x kw window sliding over the H, W axes of NHWC arrays, with TF1 padding."""

    def __init__(self, in_hw, k_hw, strides_hw, dilations_hw, padding, explicit_hw=((0, 0), (0, 0))):
        self.in_hw, self.k, self.stride, self.dilation = in_hw, k_hw, strides_hw, dilations_hw
        dims = [_out_and_pads(*a) for a in zip(in_hw, k_hw, strides_hw, dilations_hw,
                                                 (padding, padding), explicit_hw)]
        self.out = (dims[0][0], dims[1][0])
        self.pads = (dims[0][1:], dims[1][1:])

    def padded(self, xp, x, value=0):
        """``x`` with the padding added (``x`` itself when there is none)."""
        if not any(self.pads[0] + self.pads[1]):
            return x
        return xp.pad(x, ((0, 0), self.pads[0], self.pads[1], (0, 0)), constant_values=value)

    def padded_zeros(self, xp, n, c, dtype):
        (t, b), (left, r) = self.pads
        return xp.zeros((n, self.in_hw[0] + t + b, self.in_hw[1] + left + r, c), dtype=dtype)

    def unpadded(self, xp, xpad):
        (t, _), (left, _) = self.pads
        if xpad.shape[1:3] == tuple(self.in_hw):
            return xpad
        h, w = self.in_hw
        return xp.ascontiguousarray(xpad[:, t:t + h, left:left + w])

    def offsets(self):
        """(i, j, rows, cols) per kernel offset: the slices of the padded input it reads, one row
        and column per output pixel."""
        (oh, ow), (sh, sw), (dh, dw) = self.out, self.stride, self.dilation
        for i in range(self.k[0]):
            for j in range(self.k[1]):
                yield (i, j, slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                       slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))

    def patches(self, xp, xpad):
        """The (N, OH, OW, KH, KW, C) view of every window of the padded input (no copy)."""
        sn, sh, sw, sc = xpad.strides
        shape = (xpad.shape[0],) + self.out + self.k + (xpad.shape[3],)
        strides = (sn, sh * self.stride[0], sw * self.stride[1],
                   sh * self.dilation[0], sw * self.dilation[1], sc)
        return xp.lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)

    def batch_chunks(self, n, row_bytes):
        """Slices of the batch whose im2col rows (``row_bytes`` per output pixel) fit one chunk."""
        per_image = max(1, self.out[0] * self.out[1] * row_bytes)
        step = max(1, _IM2COL_CHUNK_BYTES // per_image)
        return [slice(b, min(b + step, n)) for b in range(0, n, step)]


def _window_from_attrs(in_hw, k_hw, attrs):
    df = attrs["data_format"]
    explicit = attrs.get("explicit_paddings") or (0,) * 8
    pairs = [tuple(explicit[2 * i:2 * i + 2]) for i in range(4)]
    return _Window(in_hw, k_hw, _hw(attrs["strides"], df), _hw(attrs.get("dilations", (1,) * 4), df),
                   attrs["padding"], _hw(pairs, df))


def _kernel_window(in_hw, k_hw, attrs):
    try:
        return _window_from_attrs(in_hw, k_hw, attrs)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, "%s (input spatial size %s, window %s)"
                                          % (e, tuple(in_hw), tuple(k_hw))) from None


# -- static shape helpers ------------------------------------------------------------------------
def _rank4_dims(op, i, what):
    """Input ``i``'s static dims (None each when the rank is unknown); ValueError if not rank 4."""
    t = op.inputs[i]
    dims = static_shape_or_none(t)
    if dims is None:
        return [None] * 4
    if len(dims) != 4:
        raise ValueError("Shape must be rank 4 but is rank %d for %s '%s': %s %s has shape %s"
                         % (len(dims), op.type, op.name, what, t.name, t.get_shape()))
    return dims


def _sizes_dims(op, i, what):
    """The dims described by the 1-D shape tensor input ``i`` (as partial as is known statically:
    a ``tf.shape(x)`` input gives ``x``'s static shape, unknown batch included)."""
    t = op.inputs[i]
    value = constant_value(t)
    if value is not None:
        dims = [int(d) for d in np.asarray(value).reshape(-1)]
    elif t.op.type == "Shape":
        dims = static_shape_or_none(t.op.inputs[0])
    else:
        dims = array_ops.shape_from_value(t).as_tuple()
    if dims is None:
        return [None] * 4
    if len(dims) != 4:
        raise ValueError("%s '%s': %s must describe a rank-4 shape, got %s"
                         % (op.type, op.name, what, dims))
    return dims


def _static_window(op, in_hw, k_hw):
    """The op's window over partially known spatial sizes; ValueError naming the op if it does
    not fit."""
    try:
        return _window_from_attrs(in_hw, k_hw, op._attrs)
    except ValueError as e:
        shapes = ", ".join(str(t.get_shape()) for t in op.inputs)
        raise ValueError("%s for %s '%s' with input shapes %s (strides %s, padding %s)"
                         % (e, op.type, op.name, shapes, list(op._attrs["strides"]),
                            op._attrs["padding"])) from None


def _merge(a, b, what, op):
    if a is not None and b is not None and a != b:
        raise ValueError("%s must match for %s '%s', but are %d and %d; input shapes: %s"
                         % (what, op.type, op.name, a, b,
                            ", ".join(str(t.get_shape()) for t in op.inputs)))
    return a if a is not None else b


# -- argument normalization (wrappers) -----------------------------------------------------------
def _data_format_attr(data_format, op_type):
    df = data_format.decode() if isinstance(data_format, bytes) else data_format
    if df not in _DATA_FORMATS:
        raise ValueError("%s: data_format must be 'NHWC' or 'NCHW', got %r" % (op_type, data_format))
    return df


def _per_dim_attr(value, what, data_format, op_type):
    """A 4-tuple in ``data_format`` order from an int or 1, 2 or 4 ints; batch/channel entries 1."""
    if value is None:
        raise ValueError("%s: %s must be given (e.g. [1, 2, 2, 1] for NHWC)" % (op_type, what))
    vals = [value] if isinstance(value, int | np.integer) else list(value)
    try:
        vals = [int(v) for v in vals]
    except (TypeError, ValueError):
        raise TypeError("%s: %s must be ints, got %r" % (op_type, what, value)) from None
    if len(vals) in (1, 2):
        h, w = vals * (3 - len(vals)) if len(vals) == 1 else vals
        vals = [1, h, w, 1] if data_format == "NHWC" else [1, 1, h, w]
    if len(vals) != 4:
        raise ValueError("%s: %s must be an int or a list of 1, 2 or 4 ints, got %r"
                         % (op_type, what, value))
    c = 3 if data_format == "NHWC" else 1
    if vals[0] != 1 or vals[c] != 1:
        raise ValueError("%s: %s must be 1 in the batch and channel dimensions (%s for %s), got %s"
                         % (op_type, what, "[1, s, s, 1]" if c == 3 else "[1, 1, s, s]",
                            data_format, vals))
    if min(vals) < 1:
        raise ValueError("%s: %s must be positive, got %s" % (op_type, what, vals))
    return tuple(vals)


def _padding_attrs(padding, data_format, op_type, explicit_ok):
    """(padding string, explicit_paddings) from "SAME"/"VALID" or a list of 4 [before, after]."""
    if isinstance(padding, bytes):
        padding = padding.decode()
    if isinstance(padding, str):
        if padding.upper() in ("SAME", "VALID"):
            return padding.upper(), ()
    elif explicit_ok and isinstance(padding, list | tuple):
        pairs = [tuple(int(v) for v in p) for p in padding]
        c = 3 if data_format == "NHWC" else 1
        if len(pairs) != 4 or any(len(p) != 2 for p in pairs) or min(min(pairs)) < 0:
            raise ValueError("%s: explicit padding must be 4 [before, after] pairs of non-negative "
                             "ints, got %r" % (op_type, padding))
        if pairs[0] != (0, 0) or pairs[c] != (0, 0):
            raise ValueError("%s: explicit padding must be [0, 0] in the batch and channel "
                             "dimensions, got %r" % (op_type, padding))
        return "EXPLICIT", tuple(v for p in pairs for v in p)
    raise ValueError("%s: padding must be 'SAME' or 'VALID'%s, got %r"
                     % (op_type, " or a list of 4 [before, after] pairs" if explicit_ok else "",
                        padding))


def _conv_attrs(strides, padding, data_format, dilations, op_type):
    df = _data_format_attr(data_format, op_type)
    pad, explicit = _padding_attrs(padding, df, op_type, explicit_ok=True)
    return {"strides": _per_dim_attr(strides, "strides", df, op_type), "padding": pad,
            "explicit_paddings": explicit, "data_format": df,
            "dilations": _per_dim_attr(dilations if dilations is not None else 1, "dilations", df,
                                       op_type)}


def _pool_attrs(ksize, strides, padding, data_format, op_type):
    df = _data_format_attr(data_format, op_type)
    return {"ksize": _per_dim_attr(ksize, "ksize", df, op_type),
            "strides": _per_dim_attr(strides, "strides", df, op_type),
            "padding": _padding_attrs(padding, df, op_type, explicit_ok=False)[0],
            "data_format": df}


def _same_dtype_tensors(op_type, names, values):
    """Tensors of ``values``: Python/numpy values take the first tensor's dtype; tensors must agree."""
    is_tensor = [isinstance(v, Tensor) or hasattr(v, "_as_graph_element") for v in values]
    dtype = next((convert_to_tensor(v).dtype.base_dtype for v, t in zip(values, is_tensor) if t), None)
    tensors = [convert_to_tensor(v) if t else to_tensors(v, dtype=dtype)[0]
               for v, t in zip(values, is_tensor)]
    for n, t in zip(names[1:], tensors[1:]):
        if t.dtype.base_dtype != tensors[0].dtype.base_dtype:
            raise TypeError("Input '%s' of '%s' Op has type %s that does not match type %s of "
                            "argument '%s' (%s vs %s); cast one of them with tf.cast"
                            % (n, op_type, t.dtype.name, tensors[0].dtype.name, names[0], t.name,
                               tensors[0].name))
    return tensors


def _sizes_tensor(sizes):
    return sizes if isinstance(sizes, Tensor) else convert_to_tensor(sizes, dtype=_dtypes.int32)


def _one_of(a, b, name_a, name_b, fn):
    if (a is None) == (b is None):
        raise ValueError("%s: pass exactly one of %s and %s" % (fn, name_a, name_b))
    return a if a is not None else b


def _attrs_of(op, names):
    return {k: op._attrs[k] for k in names}


_CONV_ATTRS = ("strides", "padding", "explicit_paddings", "data_format", "dilations")
_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")


# -- Conv2D --------------------------------------------------------------------------------------
def _conv2d_shape(op):
    df = op._attrs["data_format"]
    n, h, w, c = _to_nhwc_dims(_rank4_dims(op, 0, "input"), df)
    kh, kw, ci, co = _rank4_dims(op, 1, "filter")
    if c is not None and ci is not None and c != ci:
        raise ValueError("Depth of input (%d) must match the filter's in_channels (%d) for Conv2D "
                         "'%s': input shape %s (%s), filter shape %s [filter_height, filter_width, "
                         "in_channels, out_channels]" % (c, ci, op.name, op.inputs[0].get_shape(), df,
                                                         op.inputs[1].get_shape()))
    if kh is None or kw is None:
        return TensorShape(_from_nhwc_dims([n, None, None, co], df))
    oh, ow = _static_window(op, (h, w), (kh, kw)).out
    return TensorShape(_from_nhwc_dims([n, oh, ow, co], df))


def _conv2d_nhwc(xp, x, w, attrs):
    n, h, wd, c = x.shape
    kh, kw, ci, co = w.shape
    if c != ci:
        raise errors.InvalidArgumentError(None, None, "Depth of input (%d) must match the filter's "
                                          "in_channels (%d): input shape %s (NHWC), filter shape %s"
                                          % (c, ci, x.shape, w.shape))
    win = _kernel_window((h, wd), (kh, kw), attrs)
    cols = win.patches(xp, win.padded(xp, x))
    w2 = w.reshape(kh * kw * ci, co)
    out = xp.empty((n,) + win.out + (co,), dtype=x.dtype)
    for b in win.batch_chunks(n, w2.shape[0] * x.itemsize):
        # The reshape of the strided window view is the im2col copy; one matmul per chunk.
        xp.matmul(cols[b].reshape(-1, w2.shape[0]), w2, out=out[b].reshape(-1, co))
    return out


def _conv2d_kernel(ctx, x, w, **attrs):
    df = attrs["data_format"]
    return _from_nhwc(_conv2d_nhwc(ctx.xp, _to_nhwc(x, df), w, attrs), df)


def _conv2d_grad(op, g):
    x, w = op.inputs
    attrs = _attrs_of(op, _CONV_ATTRS)
    return [make_op("Conv2DBackpropInput", [array_ops.shape(x), w, g], **attrs),
            make_op("Conv2DBackpropFilter", [x, array_ops.shape(w), g], **attrs)]


register_op("Conv2D", shape=_conv2d_shape, kernel=_conv2d_kernel, grad=_conv2d_grad)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """2-D convolution of ``input`` [batch, h, w, in_c] with ``filter`` [kh, kw, in_c, out_c].

    ``strides`` and ``dilations`` are [1, s_h, s_w, 1] (or an int / 2 ints); ``padding`` is "SAME",
    "VALID" or explicit [[0, 0], [top, bottom], [left, right], [0, 0]].

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    >>> tf.nn.conv2d(x, tf.zeros([5, 5, 1, 32]), [1, 2, 2, 1], "VALID").get_shape().as_list()
    [None, 12, 12, 32]
    """
    filter = _one_of(filter, filters, "filter", "filters", "conv2d")  # noqa: A001
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv2D")
    x, w = _same_dtype_tensors("Conv2D", ["input", "filter"], [input, filter])
    return make_op("Conv2D", [x, w], name=name or "Conv2D", **attrs)


# -- Conv2DBackpropInput -------------------------------------------------------------------------
def _conv2d_backprop_input_shape(op):
    df = op._attrs["data_format"]
    n, h, w, c = _to_nhwc_dims(_sizes_dims(op, 0, "input_sizes"), df)
    kh, kw, ci, co = _rank4_dims(op, 1, "filter")
    dn, dh, dw, dc = _to_nhwc_dims(_rank4_dims(op, 2, "out_backprop"), df)
    c = _merge(c, ci, "The input depth and the filter's in_channels", op)
    _merge(dc, co, "The out_backprop depth and the filter's out_channels", op)
    n = _merge(n, dn, "The batch sizes of input_sizes and out_backprop", op)
    if None not in (kh, kw):
        oh, ow = _static_window(op, (h, w), (kh, kw)).out
        _merge(oh, dh, "The computed output height and out_backprop's height", op)
        _merge(ow, dw, "The computed output width and out_backprop's width", op)
    return TensorShape(_from_nhwc_dims([n, h, w, c], df))


def _check_out_backprop(dy, win, n, co):
    expected = (n,) + win.out + (co,)
    if dy.shape != expected:
        raise errors.InvalidArgumentError(None, None, "out_backprop has shape %s (NHWC) but the "
                                          "convolution's output has shape %s" % (dy.shape, expected))


def _conv2d_backprop_input_kernel(ctx, input_sizes, w, dy, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    n, h, wd, c = _to_nhwc_dims([int(d) for d in input_sizes], df)
    dy = _to_nhwc(dy, df)
    kh, kw, ci, co = w.shape
    win = _kernel_window((h, wd), (kh, kw), attrs)
    _check_out_backprop(dy, win, n, co)
    if ci != c:
        raise errors.InvalidArgumentError(
            None, None, "input_sizes %s has depth %d but the filter %s has in_channels %d"
            % ([int(d) for d in input_sizes], c, w.shape, ci))
    w2t = w.reshape(kh * kw * ci, co).T
    dx = win.padded_zeros(xp, n, c, dy.dtype)
    for b in win.batch_chunks(n, w2t.shape[1] * dy.itemsize):
        dcols = (dy[b].reshape(-1, co) @ w2t).reshape((-1,) + win.out + (kh, kw, c))
        for i, j, rows, cols in win.offsets():  # col2im: add each offset's slice back in place
            dx[b, rows, cols] += dcols[:, :, :, i, j]
    return _from_nhwc(win.unpadded(xp, dx), df)


def _conv2d_backprop_input_grad(op, g):
    _, w, dy = op.inputs
    attrs = _attrs_of(op, _CONV_ATTRS)
    return [None, make_op("Conv2DBackpropFilter", [g, array_ops.shape(w), dy], **attrs),
            make_op("Conv2D", [g, w], **attrs)]


register_op("Conv2DBackpropInput", dtype=lambda op: op.inputs[1].dtype,
            shape=_conv2d_backprop_input_shape, kernel=_conv2d_backprop_input_kernel,
            grad=_conv2d_backprop_input_grad)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):
    """The gradient of conv2d with respect to its input, of shape ``input_sizes``."""
    filter = _one_of(filter, filters, "filter", "filters", "conv2d_backprop_input")  # noqa: A001
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv2DBackpropInput")
    w, dy = _same_dtype_tensors("Conv2DBackpropInput", ["filter", "out_backprop"], [filter, out_backprop])
    sizes = _sizes_tensor(input_sizes)
    return make_op("Conv2DBackpropInput", [sizes, w, dy], name=name or "Conv2DBackpropInput", **attrs)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv2d (a "deconvolution"): ``filter`` is [kh, kw, out_c, in_c]."""
    value = _one_of(value, input, "value", "input", "conv2d_transpose")
    filter = _one_of(filter, filters, "filter", "filters", "conv2d_transpose")  # noqa: A001
    return conv2d_backprop_input(output_shape, filter, value, strides, padding,
                                 data_format=data_format, dilations=dilations,
                                 name=name or "conv2d_transpose")


# -- Conv2DBackpropFilter ------------------------------------------------------------------------
def _conv2d_backprop_filter_shape(op):
    df = op._attrs["data_format"]
    n, h, w, c = _to_nhwc_dims(_rank4_dims(op, 0, "input"), df)
    kh, kw, ci, co = _sizes_dims(op, 1, "filter_sizes")
    dn, dh, dw, dc = _to_nhwc_dims(_rank4_dims(op, 2, "out_backprop"), df)
    ci = _merge(ci, c, "The filter's in_channels and the input depth", op)
    co = _merge(co, dc, "The filter's out_channels and the out_backprop depth", op)
    _merge(n, dn, "The batch sizes of input and out_backprop", op)
    if None not in (kh, kw):
        oh, ow = _static_window(op, (h, w), (kh, kw)).out
        _merge(oh, dh, "The computed output height and out_backprop's height", op)
        _merge(ow, dw, "The computed output width and out_backprop's width", op)
    return TensorShape([kh, kw, ci, co])


def _conv2d_backprop_filter_kernel(ctx, x, filter_sizes, dy, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    x, dy = _to_nhwc(x, df), _to_nhwc(dy, df)
    kh, kw, ci, co = (int(d) for d in filter_sizes)
    n, h, w, c = x.shape
    if ci != c:
        raise errors.InvalidArgumentError(
            None, None, "filter_sizes %s has in_channels %d but the input %s (NHWC) has depth %d"
            % ([int(d) for d in filter_sizes], ci, x.shape, c))
    win = _kernel_window((h, w), (kh, kw), attrs)
    _check_out_backprop(dy, win, n, co)
    cols = win.patches(xp, win.padded(xp, x))
    dw = xp.zeros((kh * kw * c, co), dtype=dy.dtype)
    for b in win.batch_chunks(n, kh * kw * c * x.itemsize):
        dw += cols[b].reshape(-1, kh * kw * c).T @ dy[b].reshape(-1, co)
    return dw.reshape(kh, kw, c, co)


def _conv2d_backprop_filter_grad(op, g):
    x, _, dy = op.inputs
    attrs = _attrs_of(op, _CONV_ATTRS)
    return [make_op("Conv2DBackpropInput", [array_ops.shape(x), g, dy], **attrs), None,
            make_op("Conv2D", [x, g], **attrs)]


register_op("Conv2DBackpropFilter", shape=_conv2d_backprop_filter_shape,
            kernel=_conv2d_backprop_filter_kernel, grad=_conv2d_backprop_filter_grad)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                           name=None):
    """The gradient of conv2d with respect to its filter, of shape ``filter_sizes``."""
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv2DBackpropFilter")
    x, dy = _same_dtype_tensors("Conv2DBackpropFilter", ["input", "out_backprop"], [input, out_backprop])
    sizes = _sizes_tensor(filter_sizes)
    return make_op("Conv2DBackpropFilter", [x, sizes, dy], name=name or "Conv2DBackpropFilter",
                   **attrs)


# -- pooling: MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad -----------------------
def _pool_window(in_hw, attrs):
    df = attrs["data_format"]
    return _kernel_window(in_hw, _hw(attrs["ksize"], df), attrs)


def _pool_shape(op):
    df = op._attrs["data_format"]
    n, h, w, c = _to_nhwc_dims(_rank4_dims(op, 0, "input"), df)
    oh, ow = _static_window(op, (h, w), _hw(op._attrs["ksize"], df)).out
    return TensorShape(_from_nhwc_dims([n, oh, ow, c], df))


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _max_pool_kernel(ctx, x, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    x = _to_nhwc(x, df)
    win = _pool_window(x.shape[1:3], attrs)
    xpad = win.padded(xp, x, _lowest(x.dtype))
    out = None
    for _, _, rows, cols in win.offsets():
        if out is None:
            out = xpad[:, rows, cols].copy()
        else:
            xp.maximum(out, xpad[:, rows, cols], out=out)
    return _from_nhwc(out, df)


def _first_max_masks(xp, x, y, win):
    """(rows, cols, mask) per kernel offset: mask marks the windows whose maximum ``y`` is first
    met at that offset (TF1's tie rule: the earliest in row-major window order). Comparing with
    the forward output is ~4x faster than tracking a running argmax."""
    xpad = win.padded(xp, x, _lowest(x.dtype))
    taken = None
    for _, _, rows, cols in win.offsets():
        hit = xpad[:, rows, cols] == y
        if taken is None:
            taken = hit
        else:
            hit &= ~taken
            taken |= hit
        yield rows, cols, hit


def _max_pool_grad(op, g):
    return make_op("MaxPoolGrad", [op.inputs[0], op.outputs[0], g],
                   **_attrs_of(op, _POOL_ATTRS))


register_op("MaxPool", shape=_pool_shape, kernel=_max_pool_kernel, grad=_max_pool_grad)


def _max_pool_grad_kernel(ctx, x, y, g, **attrs):
    """Routes each output gradient to the input pixel its window's maximum came from."""
    xp, df = ctx.xp, attrs["data_format"]
    x, y, g = _to_nhwc(x, df), _to_nhwc(y, df), _to_nhwc(g, df)
    win = _pool_window(x.shape[1:3], attrs)
    dx = win.padded_zeros(xp, x.shape[0], x.shape[3], g.dtype)
    for rows, cols, first_max in _first_max_masks(xp, x, y, win):
        dx[:, rows, cols] += g * first_max
    return _from_nhwc(win.unpadded(xp, dx), df)


def _max_pool_grad_grad(op, gg):
    x, y, _ = op.inputs
    return [array_ops.zeros_like(x), array_ops.zeros_like(y),
            make_op("MaxPoolGradGrad", [x, y, gg], **_attrs_of(op, _POOL_ATTRS))]


register_op("MaxPoolGrad", shape=lambda op: op.inputs[0].get_shape(), kernel=_max_pool_grad_kernel,
            grad=_max_pool_grad_grad)


def _max_pool_grad_grad_kernel(ctx, x, y, gg, **attrs):
    """The gradient of MaxPoolGrad with respect to its ``grad``: ``gg`` read at each window's
    first maximum."""
    xp, df = ctx.xp, attrs["data_format"]
    x, y, gg = _to_nhwc(x, df), _to_nhwc(y, df), _to_nhwc(gg, df)
    win = _pool_window(x.shape[1:3], attrs)
    ggpad = win.padded(xp, gg)
    out = xp.zeros(y.shape, dtype=gg.dtype)
    for rows, cols, first_max in _first_max_masks(xp, x, y, win):
        out += ggpad[:, rows, cols] * first_max
    return _from_nhwc(out, df)


register_op("MaxPoolGradGrad", shape=lambda op: op.inputs[1].get_shape(),
            kernel=_max_pool_grad_grad_kernel,
            grad=lambda op, g: [array_ops.zeros_like(op.inputs[0]), array_ops.zeros_like(op.inputs[1]),
                                make_op("MaxPoolGrad", list(op.inputs[:2]) + [g],
                                        **_attrs_of(op, _POOL_ATTRS))])


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """The maximum of each ``ksize`` window, windows ``strides`` apart ([1, k, k, 1] in NHWC).

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 28, 28, 32])
    >>> tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").get_shape().as_list()
    [None, 14, 14, 32]
    """
    value = _one_of(value, input, "value", "input", "max_pool")
    attrs = _pool_attrs(ksize, strides, padding, data_format, "MaxPool")
    return make_op("MaxPool", to_tensors(value), name=name or "MaxPool", **attrs)


def _window_counts(xp, win, dtype):
    """(OH, OW, 1): how many real (not padding) pixels each window covers."""
    counts = []
    for size, out, k, stride, (before, _) in zip(win.in_hw, win.out, win.k, win.stride, win.pads):
        pos = np.arange(out)[:, None] * stride + np.arange(k)[None, :] - before
        counts.append(((pos >= 0) & (pos < size)).sum(axis=1))
    return xp.asarray(np.outer(counts[0], counts[1])[:, :, None], dtype=dtype)


def _avg_pool_kernel(ctx, x, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    x = _to_nhwc(x, df)
    win = _pool_window(x.shape[1:3], attrs)
    xpad = win.padded(xp, x)
    out = xp.zeros((x.shape[0],) + win.out + (x.shape[3],), dtype=x.dtype)
    for _, _, rows, cols in win.offsets():
        out += xpad[:, rows, cols]
    out /= _window_counts(xp, win, x.dtype)
    return _from_nhwc(out, df)


def _avg_pool_grad(op, g):
    return [make_op("AvgPoolGrad", [array_ops.shape(op.inputs[0]), g], **_attrs_of(op, _POOL_ATTRS))]


register_op("AvgPool", shape=_pool_shape, kernel=_avg_pool_kernel, grad=_avg_pool_grad)


def _avg_pool_grad_kernel(ctx, input_shape, g, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    n, h, w, c = _to_nhwc_dims([int(d) for d in input_shape], df)
    g = _to_nhwc(g, df)
    win = _pool_window((h, w), attrs)
    share = g / _window_counts(xp, win, g.dtype)
    dx = win.padded_zeros(xp, n, c, g.dtype)
    for _, _, rows, cols in win.offsets():
        dx[:, rows, cols] += share
    return _from_nhwc(win.unpadded(xp, dx), df)


def _avg_pool_grad_shape(op):
    df = op._attrs["data_format"]
    dims = _sizes_dims(op, 0, "orig_input_shape")
    c = _merge(_to_nhwc_dims(dims, df)[3], _to_nhwc_dims(_rank4_dims(op, 1, "grad"), df)[3],
               "The depth of orig_input_shape and of grad", op)
    n, h, w, _ = _to_nhwc_dims(dims, df)
    return TensorShape(_from_nhwc_dims([n, h, w, c], df))


register_op("AvgPoolGrad", dtype=lambda op: op.inputs[1].dtype, shape=_avg_pool_grad_shape,
            kernel=_avg_pool_grad_kernel,
            grad=lambda op, g: [None, make_op("AvgPool", [g], **_attrs_of(op, _POOL_ATTRS))])


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """The mean of each ``ksize`` window; with "SAME" padding, of its real (unpadded) pixels only.

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [8, 5, 5, 3])
    >>> tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").get_shape().as_list()
    [8, 2, 2, 3]
    """
    value = _one_of(value, input, "value", "input", "avg_pool")
    attrs = _pool_attrs(ksize, strides, padding, data_format, "AvgPool")
    return make_op("AvgPool", to_tensors(value), name=name or "AvgPool", **attrs)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """TF 1.14+'s name for :func:`max_pool` (ksize and strides may be ints)."""
    return max_pool(input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """TF 1.14+'s name for :func:`avg_pool` (ksize and strides may be ints)."""
    return avg_pool(input, ksize, strides, padding, data_format, name)


__all__ = [
    "conv2d",
    "conv2d_backprop_input",
    "conv2d_backprop_filter",
    "conv2d_transpose",
    "max_pool",
    "avg_pool",
    "max_pool2d",
    "avg_pool2d",
]
