"""Convolution and pooling ops: ``tf.nn.conv1d/2d/3d``, depthwise and separable convolutions,
their transposes, and ``max_pool`` / ``avg_pool`` in one, two and three dimensions.

Kernels work on channels-last arrays (channels-first ones are transposed in and out), with any
number of spatial dimensions (2-D ops for conv1d and 1-D pooling, as TF1 does them; 3-D ops).
A convolution is one matmul over the im2col matrix of the padded input, read through an
``as_strided`` view of every window (no Python loop over pixels); the depthwise ops, the backward
ops and the pooling ops loop over the kernel offsets, each step a whole-tensor operation.
Padding is TF1's: "SAME" gives ceil(in / stride) outputs and puts the odd padding pixel after
(pad_before = pad_total // 2); the morphological dilation2d pads with -inf.

>>> import numpy as np
>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant(np.ones((1, 4, 4, 1), np.float32))
...     y = tf.nn.conv2d(x, tf.ones([3, 3, 1, 2]), strides=[1, 2, 2, 1], padding="SAME")
...     print(y.get_shape().as_list(), tf.Session().run(y)[0, :, :, 0].tolist())
[1, 2, 2, 2] [[9.0, 6.0], [6.0, 4.0]]
"""

import functools
import itertools

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops
from zps.ops.op_util import make_op, static_shape_or_none, to_tensors

# Data formats by number of spatial dimensions (a conv1d is a conv2d of height 1, as in TF1).
_DATA_FORMATS = {2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}
# Bound on the im2col buffer of one matmul: larger batches are processed in chunks of images.
_IM2COL_CHUNK_BYTES = 32 << 20


# -- window geometry (shared by shape rules and kernels) -----------------------------------------
# Kernels work on channels-last arrays (N, *spatial, C); channels-first ones are transposed in
# and out. "nhwc" below means channels-last, whatever the number of spatial dimensions.
def _channels_last(data_format):
    return data_format[-1] == "C"


def _spatial(values, data_format):
    """The spatial entries of a per-dimension list in ``data_format`` order."""
    return tuple(values[1:-1]) if _channels_last(data_format) else tuple(values[2:])


def _to_nhwc_dims(dims, data_format):
    dims = list(dims)
    return dims if _channels_last(data_format) else [dims[0]] + dims[2:] + [dims[1]]


def _from_nhwc_dims(dims, data_format):
    dims = list(dims)
    return dims if _channels_last(data_format) else [dims[0], dims[-1]] + dims[1:-1]


def _to_nhwc(x, data_format):
    return x if _channels_last(data_format) else x.transpose(0, *range(2, x.ndim), 1)


def _from_nhwc(x, data_format):
    return x if _channels_last(data_format) else x.transpose(0, x.ndim - 1, *range(1, x.ndim - 1))


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
    """A (dilated) window sliding over the spatial axes of channels-last arrays (N, *spatial, C),
    with TF1 padding; every size is a tuple with one entry per spatial dimension."""

    def __init__(self, in_sizes, k, strides, dilations, padding, explicit=None):
        self.in_sizes, self.k = tuple(in_sizes), tuple(k)
        self.stride, self.dilation = tuple(strides), tuple(dilations)
        explicit = explicit or ((0, 0),) * len(self.k)
        dims = [_out_and_pads(*a) for a in zip(in_sizes, k, strides, dilations,
                                                 (padding,) * len(self.k), explicit)]
        self.out = tuple(d[0] for d in dims)
        self.pads = tuple(d[1:] for d in dims)

    def padded(self, xp, x, value=0):
        """``x`` with the padding added (``x`` itself when there is none)."""
        if not any(p for pair in self.pads for p in pair):
            return x
        return xp.pad(x, ((0, 0),) + self.pads + ((0, 0),), constant_values=value)

    def padded_zeros(self, xp, n, c, dtype):
        sizes = tuple(s + b + a for s, (b, a) in zip(self.in_sizes, self.pads))
        return xp.zeros((n,) + sizes + (c,), dtype=dtype)

    def unpadded(self, xp, xpad):
        if xpad.shape[1:-1] == self.in_sizes:
            return xpad
        return xp.ascontiguousarray(xpad[(slice(None),) + tuple(
            slice(b, b + s) for s, (b, _) in zip(self.in_sizes, self.pads))])

    def offsets(self):
        """(offset, index) per kernel offset, in row-major order: the offset in the kernel and
        the index (batch axis included) of the padded input it reads, one element per output."""
        for offset in itertools.product(*(range(k) for k in self.k)):
            yield offset, (slice(None),) + tuple(
                slice(i * d, i * d + s * (o - 1) + 1, s)
                for i, d, s, o in zip(offset, self.dilation, self.stride, self.out))

    def patches(self, xp, xpad):
        """The (N, *out, *k, C) view of every window of the padded input (no copy)."""
        sn, *sp, sc = xpad.strides
        shape = (xpad.shape[0],) + self.out + self.k + (xpad.shape[-1],)
        strides = ((sn,) + tuple(s * st for s, st in zip(sp, self.stride))
                   + tuple(s * d for s, d in zip(sp, self.dilation)) + (sc,))
        return xp.lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)

    def batch_chunks(self, n, row_bytes):
        """Slices of the batch whose im2col rows (``row_bytes`` per output pixel) fit one chunk."""
        per_image = max(1, int(np.prod(self.out)) * row_bytes)
        step = max(1, _IM2COL_CHUNK_BYTES // per_image)
        return [slice(b, min(b + step, n)) for b in range(0, n, step)]

    def col2im(self, dx, b, dcols):
        """Add the (nb, *out, *k, C) columns ``dcols`` of the batch slice ``b`` back into the
        padded ``dx``, each kernel offset's slice in place (the adjoint of ``patches``)."""
        lead = (slice(None),) * (1 + len(self.k))
        for offset, index in self.offsets():
            dx[b][index] += dcols[lead + offset]


def _window_from_attrs(in_sizes, k, attrs):
    df = attrs["data_format"]
    explicit = attrs.get("explicit_paddings") or (0,) * (2 * len(df))
    pairs = [tuple(explicit[2 * i:2 * i + 2]) for i in range(len(df))]
    return _Window(in_sizes, k, _spatial(attrs["strides"], df),
                   _spatial(attrs.get("dilations", (1,) * len(df)), df), attrs["padding"],
                   _spatial(pairs, df))


def _kernel_window(in_sizes, k, attrs):
    try:
        return _window_from_attrs(in_sizes, k, attrs)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, "%s (input spatial size %s, window %s)"
                                          % (e, tuple(in_sizes), tuple(k))) from None


# -- static shape helpers ------------------------------------------------------------------------
def _rank_dims(op, i, what):
    """Input ``i``'s static dims (None each when the rank is unknown); ValueError if its rank is
    not the data format's (4 for NHWC, 5 for NDHWC; filters too; Dilation2D: NHWC only)."""
    rank = len(op._attrs.get("data_format", "NHWC"))
    t = op.inputs[i]
    dims = static_shape_or_none(t)
    if dims is None:
        return [None] * rank
    if len(dims) != rank:
        raise ValueError("Shape must be rank %d but is rank %d for %s '%s': %s %s has shape %s"
                         % (rank, len(dims), op.type, op.name, what, t.name, t.get_shape()))
    return dims


def _sizes_dims(op, i, what):
    """The dims described by the 1-D shape tensor input ``i`` (as partial as is known statically:
    a ``tf.shape(x)`` input gives ``x``'s static shape, unknown batch included)."""
    rank = len(op._attrs["data_format"])
    t = op.inputs[i]
    value = constant_value(t)
    if value is not None:
        dims = [int(d) for d in np.asarray(value).reshape(-1)]
    elif t.op.type == "Shape":
        dims = static_shape_or_none(t.op.inputs[0])
    else:
        dims = array_ops.shape_from_value(t).as_tuple()
    if dims is None:
        return [None] * rank
    if len(dims) != rank:
        raise ValueError("%s '%s': %s must describe a rank-%d shape, got %s"
                         % (op.type, op.name, what, rank, dims))
    return dims


def _static_window(op, in_sizes, k):
    """The op's window over partially known spatial sizes; ValueError naming the op if it does
    not fit."""
    try:
        return _window_from_attrs(in_sizes, k, op._attrs)
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
def _data_format_attr(data_format, op_type, nd=2):
    df = data_format.decode() if isinstance(data_format, bytes) else data_format
    if df not in _DATA_FORMATS[nd]:
        raise ValueError("%s: data_format must be %s, got %r"
                         % (op_type, " or ".join("'%s'" % f for f in _DATA_FORMATS[nd]),
                            data_format))
    return df


def _per_dim_attr(value, what, data_format, op_type):
    """A per-dimension tuple in ``data_format`` order from an int, one int per spatial dimension
    or one per dimension; the batch and channel entries must be 1."""
    rank = len(data_format)
    nd = rank - 2
    if value is None:
        raise ValueError("%s: %s must be given (e.g. %s for %s)"
                         % (op_type, what, _example(data_format, 2), data_format))
    vals = [value] if isinstance(value, int | np.integer) else list(value)
    try:
        vals = [int(v) for v in vals]
    except (TypeError, ValueError):
        raise TypeError("%s: %s must be ints, got %r" % (op_type, what, value)) from None
    if len(vals) in (1, nd):
        spatial = vals * nd if len(vals) == 1 else vals
        vals = [1] + spatial + [1] if _channels_last(data_format) else [1, 1] + spatial
    if len(vals) != rank:
        raise ValueError("%s: %s must be an int or a list of 1, %d or %d ints, got %r"
                         % (op_type, what, nd, rank, value))
    c = rank - 1 if _channels_last(data_format) else 1
    if vals[0] != 1 or vals[c] != 1:
        raise ValueError("%s: %s must be 1 in the batch and channel dimensions (%s for %s), got %s"
                         % (op_type, what, _example(data_format, "s"), data_format, vals))
    if min(vals) < 1:
        raise ValueError("%s: %s must be positive, got %s" % (op_type, what, vals))
    return tuple(vals)


def _example(data_format, s):
    """A per-dimension list for ``data_format``: ``s`` in the spatial dimensions, else 1."""
    spatial = [str(s)] * (len(data_format) - 2)
    return "[%s]" % ", ".join(["1"] + spatial + ["1"] if _channels_last(data_format)
                              else ["1", "1"] + spatial)


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


def _conv_attrs(strides, padding, data_format, dilations, op_type, nd=2):
    df = _data_format_attr(data_format, op_type, nd)
    pad, explicit = _padding_attrs(padding, df, op_type, explicit_ok=nd == 2)
    attrs = {"strides": _per_dim_attr(strides, "strides", df, op_type), "padding": pad,
             "data_format": df,
             "dilations": _per_dim_attr(dilations if dilations is not None else 1, "dilations", df,
                                        op_type)}
    if nd == 2:   # TF1's 3-D convolutions have no explicit padding
        attrs["explicit_paddings"] = explicit
    return attrs


def _pool_attrs(ksize, strides, padding, data_format, op_type, nd=2):
    df = _data_format_attr(data_format, op_type, nd)
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


_WINDOW_ATTRS = ("ksize", "strides", "padding", "explicit_paddings", "data_format", "dilations")


def _attrs_of(op):
    """The window attrs of a convolution or pooling op, for the ops of its gradient."""
    return {k: op._attrs[k] for k in _WINDOW_ATTRS if k in op._attrs}


# -- convolutions: Conv2D, Conv3D, DepthwiseConv2dNative and their backprop ops -----------------
# Each family is (forward, backprop input, backprop filter); the gradient of any one of the three
# is made of the other two, so one set of gradient rules serves every family.
_CONV_FAMILIES = [("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"),
                  ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"),
                  ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                   "DepthwiseConv2dNativeBackpropFilter")]
_FAMILY = {t: family for family in _CONV_FAMILIES for t in family}


def _depthwise(op_type):
    return op_type.startswith("Depthwise")


def _out_depth(op_type, ci, co):
    """The output depth of a convolution whose filter has ``ci`` in and ``co`` out channels (a
    depthwise filter's ``co`` is its channel multiplier)."""
    if not _depthwise(op_type):
        return co
    return ci * co if ci is not None and co is not None else None


def _filter_layout(op):
    nd = len(op._attrs["data_format"]) - 2
    names = ("filter_depth", "filter_height", "filter_width")[-nd:]
    last = "channel_multiplier" if _depthwise(op.type) else "out_channels"
    return "[%s, in_channels, %s]" % (", ".join(names), last)


def _conv_shape(op):
    df = op._attrs["data_format"]
    n, *sp, c = _to_nhwc_dims(_rank_dims(op, 0, "input"), df)
    *k, ci, co = _rank_dims(op, 1, "filter")
    if c is not None and ci is not None and c != ci:
        raise ValueError("Depth of input (%d) must match the filter's in_channels (%d) for %s "
                         "'%s': input shape %s (%s), filter shape %s %s"
                         % (c, ci, op.type, op.name, op.inputs[0].get_shape(), df,
                            op.inputs[1].get_shape(), _filter_layout(op)))
    out = [None] * len(sp) if None in k else list(_static_window(op, sp, k).out)
    return TensorShape(_from_nhwc_dims([n] + out + [_out_depth(op.type, c or ci, co)], df))


def _check_depth(c, ci, x, w):
    if c != ci:
        raise errors.InvalidArgumentError(None, None, "Depth of input (%d) must match the filter's "
                                          "in_channels (%d): input shape %s (channels last), "
                                          "filter shape %s" % (c, ci, x.shape, w.shape))


def _conv_nhwc(xp, x, w, attrs):
    """A convolution of a channels-last ``x``: one matmul per chunk of its im2col rows."""
    n, *sp, c = x.shape
    *k, ci, co = w.shape
    _check_depth(c, ci, x, w)
    win = _kernel_window(sp, k, attrs)
    cols = win.patches(xp, win.padded(xp, x))
    w2 = w.reshape(-1, co)
    out = xp.empty((n,) + win.out + (co,), dtype=x.dtype)
    for b in win.batch_chunks(n, w2.shape[0] * x.itemsize):
        # The reshape of the strided window view is the im2col copy; one matmul per chunk.
        xp.matmul(cols[b].reshape(-1, w2.shape[0]), w2, out=out[b].reshape(-1, co))
    return out


# A depthwise filter has one column per channel: each kernel offset is a (C, M) scaling of the
# input slice it reads, one einsum per offset (an im2col matmul batched over the channels has
# M = multiplier columns, usually 1, and runs ~8x slower).
def _depthwise_nhwc(xp, x, w, attrs):
    """Each input channel convolved with its own ``multiplier`` filters: output channel
    ``c * multiplier + m`` is channel c with filter m."""
    n, h, wd, c = x.shape
    kh, kw, ci, m = w.shape
    _check_depth(c, ci, x, w)
    win = _kernel_window((h, wd), (kh, kw), attrs)
    xpad = win.padded(xp, x)
    out = xp.zeros((n,) + win.out + (c, m), dtype=x.dtype)
    for offset, index in win.offsets():
        out += xp.einsum("nhwc,cm->nhwcm", xpad[index], w[offset])
    return out.reshape((n,) + win.out + (c * m,))


def _forward_kernel(nhwc):
    def kernel(ctx, x, w, **attrs):
        df = attrs["data_format"]
        return _from_nhwc(nhwc(ctx.xp, _to_nhwc(x, df), w, attrs), df)
    return kernel


def _conv_grad(op, g):
    x, w = op.inputs
    _, backprop_input, backprop_filter = _FAMILY[op.type]
    return [make_op(backprop_input, [array_ops.shape(x), w, g], **_attrs_of(op)),
            make_op(backprop_filter, [x, array_ops.shape(w), g], **_attrs_of(op))]


register_op("Conv2D", shape=_conv_shape, kernel=_forward_kernel(_conv_nhwc), grad=_conv_grad)
register_op("Conv3D", shape=_conv_shape, kernel=_forward_kernel(_conv_nhwc), grad=_conv_grad)
register_op("DepthwiseConv2dNative", shape=_conv_shape, kernel=_forward_kernel(_depthwise_nhwc),
            grad=_conv_grad)


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


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    """3-D convolution of ``input`` [batch, d, h, w, in_c] with ``filter`` [kd, kh, kw, in_c,
    out_c]; ``strides`` [1, s_d, s_h, s_w, 1] (or an int / 3 ints), ``padding`` "SAME" or "VALID".

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 8, 8, 8, 1])
    >>> tf.nn.conv3d(x, tf.zeros([3, 3, 3, 1, 4]), [1, 2, 2, 2, 1], "SAME").get_shape().as_list()
    [None, 4, 4, 4, 4]
    """
    filter = _one_of(filter, filters, "filter", "filters", "conv3d")  # noqa: A001
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv3D", nd=3)
    x, w = _same_dtype_tensors("Conv3D", ["input", "filter"], [input, filter])
    return make_op("Conv3D", [x, w], name=name or "Conv3D", **attrs)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    """Depthwise 2-D convolution: ``filter`` [kh, kw, in_c, multiplier] gives each input
    channel ``multiplier`` output channels of its own (in_c * multiplier in all).

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 9, 9, 3])
    >>> y = tf.nn.depthwise_conv2d_native(x, tf.zeros([3, 3, 3, 2]), [1, 1, 1, 1], "VALID")
    >>> y.get_shape().as_list()
    [None, 7, 7, 6]
    """
    attrs = _conv_attrs(strides, padding, data_format, dilations, "DepthwiseConv2dNative")
    x, w = _same_dtype_tensors("DepthwiseConv2dNative", ["input", "filter"], [input, filter])
    return make_op("DepthwiseConv2dNative", [x, w], name=name or "DepthwiseConv2dNative", **attrs)


def _rate_as_dilations(rate, strides, dilations, data_format, fn):
    """TF1's ``rate`` argument (atrous rates per spatial dimension) as conv dilations."""
    if rate is None:
        return dilations
    if dilations is not None:
        raise ValueError("%s: pass rate or dilations, not both" % fn)
    rate = [rate] * 2 if isinstance(rate, int | np.integer) else list(rate)
    if max(rate) > 1 and strides is not None and max(
            _spatial(_per_dim_attr(strides, "strides", data_format, fn), data_format)) > 1:
        raise ValueError("%s: strides > 1 not supported in conjunction with rate > 1 (rate %s, "
                         "strides %s)" % (fn, rate, strides))
    return rate


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Depthwise 2-D convolution (see :func:`depthwise_conv2d_native`), atrous with ``rate``.

    >>> import numpy as np, zps as tf
    >>> y = tf.nn.depthwise_conv2d(tf.ones([1, 3, 3, 2]), tf.ones([2, 2, 2, 1]), [1, 1, 1, 1],
    ...                            "VALID", rate=[2, 2])
    >>> tf.Session().run(y).ravel().tolist()
    [4.0, 4.0]
    """
    data_format = _data_format_attr(data_format or "NHWC", "depthwise_conv2d")
    dilations = _rate_as_dilations(rate, strides, dilations, data_format, "depthwise_conv2d")
    x = convert_to_tensor(input)
    with x.graph.name_scope(name or "depthwise") as scope:
        return depthwise_conv2d_native(x, filter, strides, padding, data_format, dilations,
                                       name=scope)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """A depthwise convolution (``depthwise_filter`` [kh, kw, in_c, multiplier]) followed by a
    1x1 convolution mixing its channels (``pointwise_filter`` [1, 1, in_c * multiplier, out_c]).

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    >>> tf.nn.separable_conv2d(x, tf.zeros([3, 3, 3, 2]), tf.zeros([1, 1, 6, 5]), [1, 1, 1, 1],
    ...                        "SAME").get_shape().as_list()
    [None, 8, 8, 5]
    """
    x = convert_to_tensor(input)
    with x.graph.name_scope(name or "separable_conv2d") as scope:
        pointwise_filter = convert_to_tensor(pointwise_filter)
        dims = pointwise_filter.get_shape().as_list() \
            if pointwise_filter.get_shape().ndims is not None else None
        if dims is not None and (len(dims) != 4 or dims[:2] != [1, 1]):
            raise ValueError("separable_conv2d: pointwise_filter must be [1, 1, in_channels * "
                             "channel_multiplier, out_channels], got shape %s" % dims)
        depthwise = depthwise_conv2d(x, depthwise_filter, strides, padding, rate=rate,
                                     name="depthwise", data_format=data_format,
                                     dilations=dilations)
        return conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], "VALID",
                      data_format=data_format or "NHWC", name=scope)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """2-D convolution with holes: the filter taps ``rate`` pixels apart (conv2d dilations).

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 9, 9, 1])
    >>> tf.nn.atrous_conv2d(x, tf.zeros([3, 3, 1, 1]), 2, "VALID").get_shape().as_list()
    [None, 5, 5, 1]
    """
    if not isinstance(rate, int | np.integer) or rate < 1:
        raise ValueError("atrous_conv2d: rate must be a positive int, got %r" % (rate,))
    return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1],
                  name=name or "atrous_conv2d")


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of ``value`` [batch, width, in_c] ("NWC") with ``filters`` [k, in_c,
    out_c]: TF1's conv2d of height 1.

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 10, 3])
    >>> tf.nn.conv1d(x, tf.zeros([3, 3, 8]), 2, "SAME").get_shape().as_list()
    [None, 5, 8]
    """
    value = _one_of(value, input, "value", "input", "conv1d")
    data_format, axis = _width_format(data_format, "conv1d")
    x = convert_to_tensor(value)
    with x.graph.name_scope(name or "conv1d") as scope:
        y = conv2d(array_ops.expand_dims(x, axis), array_ops.expand_dims(filters, 0),
                   _one_dim_per_dim(stride, "stride", data_format), padding,
                   data_format=data_format,
                   dilations=_one_dim_per_dim(dilations or 1, "dilations", data_format))
        return array_ops.squeeze(y, [axis], name=scope)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """The transpose of conv1d: ``filters`` is [k, out_c, in_c], ``output_shape`` [batch, width,
    out_c] (NWC).

    >>> import zps as tf
    >>> y = tf.nn.conv1d_transpose(tf.zeros([2, 5, 4]), tf.zeros([3, 1, 4]), [2, 10, 1], 2)
    >>> y.get_shape().as_list()
    [2, 10, 1]
    """
    data_format, axis = _width_format(data_format, "conv1d_transpose")
    x = convert_to_tensor(input)
    with x.graph.name_scope(name or "conv1d_transpose") as scope:
        if isinstance(output_shape, Tensor):
            sizes = array_ops.concat([output_shape[:axis], [1], output_shape[axis:]], 0)
        else:
            sizes = list(output_shape)[:axis] + [1] + list(output_shape)[axis:]
        y = conv2d_backprop_input(sizes, array_ops.expand_dims(filters, 0),
                                  array_ops.expand_dims(x, axis),
                                  _one_dim_per_dim(strides, "strides", data_format), padding,
                                  data_format=data_format,
                                  dilations=_one_dim_per_dim(dilations or 1, "dilations",
                                                             data_format))
        return array_ops.squeeze(y, [axis], name=scope)


def _width_format(data_format, fn):
    """(2-D data format, axis of the height added) of a 1-D op's "NWC" or "NCW" (None: NWC)."""
    if data_format in (None, "NWC", "NHWC"):
        return "NHWC", 1
    if data_format in ("NCW", "NCHW"):
        return "NCHW", 2
    raise ValueError('%s: data_format must be "NWC" or "NCW", got %r' % (fn, data_format))


def _one_dim_per_dim(value, what, data_format):
    """A 1-D window's int / [s] / [1, s, 1] as the 2-D [1, 1, s, 1] (NHWC) or [1, 1, 1, s]."""
    vals = [value] if isinstance(value, int | np.integer) else list(value) if value is not None \
        else None
    if vals is None or len(vals) not in (1, 3):
        raise ValueError("%s must be an int or a list of 1 or 3 ints, got %r" % (what, value))
    s = int(vals[0] if len(vals) == 1 else vals[1 if data_format == "NHWC" else 2])
    return [1, 1, s, 1] if data_format == "NHWC" else [1, 1, 1, s]


# -- backprop input (and the transposed convolutions) --------------------------------------------
def _backprop_input_shape(op):
    df = op._attrs["data_format"]
    n, *sp, c = _to_nhwc_dims(_sizes_dims(op, 0, "input_sizes"), df)
    *k, ci, co = _rank_dims(op, 1, "filter")
    dn, *dsp, dc = _to_nhwc_dims(_rank_dims(op, 2, "out_backprop"), df)
    c = _merge(c, ci, "The input depth and the filter's in_channels", op)
    _merge(dc, _out_depth(op.type, c, co), "The out_backprop depth and the filter's output "
           "channels", op)
    n = _merge(n, dn, "The batch sizes of input_sizes and out_backprop", op)
    if None not in k:
        for axis, o, d in zip(("depth", "height", "width")[-len(k):],
                              _static_window(op, sp, k).out, dsp):
            _merge(o, d, "The computed output %s and out_backprop's %s" % (axis, axis), op)
    return TensorShape(_from_nhwc_dims([n] + list(sp) + [c], df))


def _check_out_backprop(dy, win, n, depth):
    expected = (n,) + win.out + (depth,)
    if dy.shape != expected:
        raise errors.InvalidArgumentError(None, None, "out_backprop has shape %s (channels last) "
                                          "but the convolution's output has shape %s"
                                          % (dy.shape, expected))


def _backprop_input_kernel(ctx, input_sizes, w, dy, op_type, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    n, *sp, c = _to_nhwc_dims([int(d) for d in input_sizes], df)
    dy = _to_nhwc(dy, df)
    *k, ci, co = w.shape
    win = _kernel_window(sp, k, attrs)
    _check_out_backprop(dy, win, n, _out_depth(op_type, ci, co))
    if ci != c:
        raise errors.InvalidArgumentError(
            None, None, "input_sizes %s has depth %d but the filter %s has in_channels %d"
            % ([int(d) for d in input_sizes], c, w.shape, ci))
    dx = win.padded_zeros(xp, n, c, dy.dtype)
    if _depthwise(op_type):
        dy = dy.reshape(dy.shape[:-1] + (c, co))
        for offset, index in win.offsets():
            dx[index] += xp.einsum("nhwcm,cm->nhwc", dy, w[offset])
    else:
        w2t = w.reshape(-1, co).T
        for b in win.batch_chunks(n, w2t.shape[1] * dy.itemsize):
            dcols = dy[b].reshape(-1, co) @ w2t
            win.col2im(dx, b, dcols.reshape((-1,) + win.out + tuple(k) + (c,)))
    return _from_nhwc(win.unpadded(xp, dx), df)


def _backprop_input_grad(op, g):
    _, w, dy = op.inputs
    forward, _, backprop_filter = _FAMILY[op.type]
    return [None, make_op(backprop_filter, [g, array_ops.shape(w), dy], **_attrs_of(op)),
            make_op(forward, [g, w], **_attrs_of(op))]


for _t in ("Conv2DBackpropInput", "Conv3DBackpropInputV2", "DepthwiseConv2dNativeBackpropInput"):
    register_op(_t, dtype=lambda op: op.inputs[1].dtype, shape=_backprop_input_shape,
                kernel=functools.partial(_backprop_input_kernel, op_type=_t),
                grad=_backprop_input_grad)


def _backprop_input(op_type, input_sizes, filter, out_backprop, attrs, name):  # noqa: A002
    w, dy = _same_dtype_tensors(op_type, ["filter", "out_backprop"], [filter, out_backprop])
    return make_op(op_type, [_sizes_tensor(input_sizes), w, dy], name=name or op_type, **attrs)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):
    """The gradient of conv2d with respect to its input, of shape ``input_sizes``."""
    filter = _one_of(filter, filters, "filter", "filters", "conv2d_backprop_input")  # noqa: A001
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv2DBackpropInput")
    return _backprop_input("Conv2DBackpropInput", input_sizes, filter, out_backprop, attrs, name)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv2d (a "deconvolution"): ``filter`` is [kh, kw, out_c, in_c]."""
    value = _one_of(value, input, "value", "input", "conv2d_transpose")
    filter = _one_of(filter, filters, "filter", "filters", "conv2d_transpose")  # noqa: A001
    return conv2d_backprop_input(output_shape, filter, value, strides, padding,
                                 data_format=data_format, dilations=dilations,
                                 name=name or "conv2d_transpose")


def conv3d_transpose(value, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NDHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv3d: ``filter`` is [kd, kh, kw, out_c, in_c].

    >>> import zps as tf
    >>> y = tf.nn.conv3d_transpose(tf.zeros([1, 2, 2, 2, 4]), tf.zeros([3, 3, 3, 1, 4]),
    ...                            [1, 4, 4, 4, 1], [1, 2, 2, 2, 1])
    >>> y.get_shape().as_list()
    [1, 4, 4, 4, 1]
    """
    value = _one_of(value, input, "value", "input", "conv3d_transpose")
    filter = _one_of(filter, filters, "filter", "filters", "conv3d_transpose")  # noqa: A001
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv3DBackpropInputV2", nd=3)
    return _backprop_input("Conv3DBackpropInputV2", output_shape, filter, value, attrs,
                           name or "conv3d_transpose")


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                           padding, data_format="NHWC", dilations=(1, 1, 1, 1),
                                           name=None):
    """The gradient of depthwise_conv2d_native with respect to its input."""
    attrs = _conv_attrs(strides, padding, data_format, dilations,
                        "DepthwiseConv2dNativeBackpropInput")
    return _backprop_input("DepthwiseConv2dNativeBackpropInput", input_sizes, filter,
                           out_backprop, attrs, name)


# -- backprop filter -----------------------------------------------------------------------------
def _backprop_filter_shape(op):
    df = op._attrs["data_format"]
    n, *sp, c = _to_nhwc_dims(_rank_dims(op, 0, "input"), df)
    *k, ci, co = _sizes_dims(op, 1, "filter_sizes")
    dn, *dsp, dc = _to_nhwc_dims(_rank_dims(op, 2, "out_backprop"), df)
    ci = _merge(ci, c, "The filter's in_channels and the input depth", op)
    if _depthwise(op.type):
        if co is None and None not in (ci, dc):
            co = dc // ci
        _merge(_out_depth(op.type, ci, co), dc, "The filter's output channels and the "
               "out_backprop depth", op)
    else:
        co = _merge(co, dc, "The filter's out_channels and the out_backprop depth", op)
    _merge(n, dn, "The batch sizes of input and out_backprop", op)
    if None not in k:
        for axis, o, d in zip(("depth", "height", "width")[-len(k):],
                              _static_window(op, sp, k).out, dsp):
            _merge(o, d, "The computed output %s and out_backprop's %s" % (axis, axis), op)
    return TensorShape(list(k) + [ci, co])


def _backprop_filter_kernel(ctx, x, filter_sizes, dy, op_type, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    x, dy = _to_nhwc(x, df), _to_nhwc(dy, df)
    *k, ci, co = (int(d) for d in filter_sizes)
    n, *sp, c = x.shape
    if ci != c:
        raise errors.InvalidArgumentError(
            None, None, "filter_sizes %s has in_channels %d but the input %s (channels last) has "
            "depth %d" % ([int(d) for d in filter_sizes], ci, x.shape, c))
    win = _kernel_window(sp, k, attrs)
    _check_out_backprop(dy, win, n, _out_depth(op_type, ci, co))
    xpad = win.padded(xp, x)
    if _depthwise(op_type):
        dy = dy.reshape(dy.shape[:-1] + (c, co))
        dw = xp.empty(tuple(k) + (c, co), dtype=dy.dtype)
        for offset, index in win.offsets():
            dw[offset] = xp.einsum("nhwc,nhwcm->cm", xpad[index], dy)
        return dw
    cols = win.patches(xp, xpad)
    kk = int(np.prod(k))
    dw = xp.zeros((kk * c, co), dtype=dy.dtype)
    for b in win.batch_chunks(n, kk * c * x.itemsize):
        dw += cols[b].reshape(-1, kk * c).T @ dy[b].reshape(-1, co)
    return dw.reshape(tuple(k) + (c, co))


def _backprop_filter_grad(op, g):
    x, _, dy = op.inputs
    forward, backprop_input, _ = _FAMILY[op.type]
    return [make_op(backprop_input, [array_ops.shape(x), g, dy], **_attrs_of(op)), None,
            make_op(forward, [x, g], **_attrs_of(op))]


for _t in ("Conv2DBackpropFilter", "Conv3DBackpropFilterV2",
           "DepthwiseConv2dNativeBackpropFilter"):
    register_op(_t, shape=_backprop_filter_shape,
                kernel=functools.partial(_backprop_filter_kernel, op_type=_t),
                grad=_backprop_filter_grad)


def _backprop_filter(op_type, input, filter_sizes, out_backprop, attrs, name):  # noqa: A002
    x, dy = _same_dtype_tensors(op_type, ["input", "out_backprop"], [input, out_backprop])
    return make_op(op_type, [x, _sizes_tensor(filter_sizes), dy], name=name or op_type, **attrs)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                           name=None):
    """The gradient of conv2d with respect to its filter, of shape ``filter_sizes``."""
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv2DBackpropFilter")
    return _backprop_filter("Conv2DBackpropFilter", input, filter_sizes, out_backprop, attrs, name)


def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                              data_format="NDHWC", dilations=(1, 1, 1, 1, 1), name=None):
    """The gradient of conv3d with respect to its filter, of shape ``filter_sizes``."""
    attrs = _conv_attrs(strides, padding, data_format, dilations, "Conv3DBackpropFilterV2", nd=3)
    return _backprop_filter("Conv3DBackpropFilterV2", input, filter_sizes, out_backprop, attrs,
                            name)


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                                            padding, data_format="NHWC", dilations=(1, 1, 1, 1),
                                            name=None):
    """The gradient of depthwise_conv2d_native with respect to its filter."""
    attrs = _conv_attrs(strides, padding, data_format, dilations,
                        "DepthwiseConv2dNativeBackpropFilter")
    return _backprop_filter("DepthwiseConv2dNativeBackpropFilter", input, filter_sizes,
                            out_backprop, attrs, name)


# -- pooling: MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool, AvgPoolGrad (and their 3-D ops) -----
_POOL_TYPES = {  # the 2-D op type -> the 3-D one
    "MaxPool": "MaxPool3D", "MaxPoolGrad": "MaxPool3DGrad", "MaxPoolGradGrad": "MaxPool3DGradGrad",
    "AvgPool": "AvgPool3D", "AvgPoolGrad": "AvgPool3DGrad"}


def _pool_op(op_type, op, inputs):
    """A pooling op of the 2-D type ``op_type`` (or its 3-D one) with the window of ``op``."""
    nd = len(op._attrs["data_format"]) - 2
    return make_op(op_type if nd == 2 else _POOL_TYPES[op_type], inputs, **_attrs_of(op))


def _register_pool(op_type, **kwargs):
    for t in (op_type, _POOL_TYPES[op_type]):
        register_op(t, **kwargs)


def _pool_window(in_sizes, attrs):
    return _kernel_window(in_sizes, _spatial(attrs["ksize"], attrs["data_format"]), attrs)


def _pool_shape(op):
    df = op._attrs["data_format"]
    n, *sp, c = _to_nhwc_dims(_rank_dims(op, 0, "input"), df)
    out = _static_window(op, sp, _spatial(op._attrs["ksize"], df)).out
    return TensorShape(_from_nhwc_dims([n, *out, c], df))


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _max_pool_kernel(ctx, x, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    x = _to_nhwc(x, df)
    win = _pool_window(x.shape[1:-1], attrs)
    xpad = win.padded(xp, x, _lowest(x.dtype))
    out = None
    for _, index in win.offsets():
        if out is None:
            out = xpad[index].copy()
        else:
            xp.maximum(out, xpad[index], out=out)
    return _from_nhwc(out, df)


def _first_max_masks(xp, x, y, win):
    """(index, mask) per kernel offset: mask marks the windows whose maximum ``y`` is first
    met at that offset (TF1's tie rule: the earliest in row-major window order). Comparing with
    the forward output is ~4x faster than tracking a running argmax."""
    xpad = win.padded(xp, x, _lowest(x.dtype))
    taken = None
    for _, index in win.offsets():
        hit = xpad[index] == y
        if taken is None:
            taken = hit
        else:
            hit &= ~taken
            taken |= hit
        yield index, hit


_register_pool("MaxPool", shape=_pool_shape, kernel=_max_pool_kernel,
               grad=lambda op, g: _pool_op("MaxPoolGrad", op, [op.inputs[0], op.outputs[0], g]))


def _max_pool_grad_kernel(ctx, x, y, g, **attrs):
    """Routes each output gradient to the input pixel its window's maximum came from."""
    xp, df = ctx.xp, attrs["data_format"]
    x, y, g = _to_nhwc(x, df), _to_nhwc(y, df), _to_nhwc(g, df)
    win = _pool_window(x.shape[1:-1], attrs)
    dx = win.padded_zeros(xp, x.shape[0], x.shape[-1], g.dtype)
    for index, first_max in _first_max_masks(xp, x, y, win):
        dx[index] += g * first_max
    return _from_nhwc(win.unpadded(xp, dx), df)


def _max_pool_grad_grad(op, gg):
    x, y, _ = op.inputs
    return [array_ops.zeros_like(x), array_ops.zeros_like(y),
            _pool_op("MaxPoolGradGrad", op, [x, y, gg])]


_register_pool("MaxPoolGrad", shape=lambda op: op.inputs[0].get_shape(),
               kernel=_max_pool_grad_kernel, grad=_max_pool_grad_grad)


def _max_pool_grad_grad_kernel(ctx, x, y, gg, **attrs):
    """The gradient of MaxPoolGrad with respect to its ``grad``: ``gg`` read at each window's
    first maximum."""
    xp, df = ctx.xp, attrs["data_format"]
    x, y, gg = _to_nhwc(x, df), _to_nhwc(y, df), _to_nhwc(gg, df)
    win = _pool_window(x.shape[1:-1], attrs)
    ggpad = win.padded(xp, gg)
    out = xp.zeros(y.shape, dtype=gg.dtype)
    for index, first_max in _first_max_masks(xp, x, y, win):
        out += ggpad[index] * first_max
    return _from_nhwc(out, df)


_register_pool("MaxPoolGradGrad", shape=lambda op: op.inputs[1].get_shape(),
               kernel=_max_pool_grad_grad_kernel,
               grad=lambda op, g: [array_ops.zeros_like(op.inputs[0]),
                                   array_ops.zeros_like(op.inputs[1]),
                                   _pool_op("MaxPoolGrad", op, list(op.inputs[:2]) + [g])])


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


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """The maximum of each ``ksize`` window of a 5-D ``input`` ([1, kd, kh, kw, 1] in NDHWC).

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 8, 8, 8, 2])
    >>> tf.nn.max_pool3d(x, 2, 2, "VALID").get_shape().as_list()
    [None, 4, 4, 4, 2]
    """
    attrs = _pool_attrs(ksize, strides, padding, data_format, "MaxPool3D", nd=3)
    return make_op("MaxPool3D", to_tensors(input), name=name or "MaxPool3D", **attrs)


def _window_counts(xp, win, dtype):
    """(*out, 1): how many real (not padding) pixels each window covers."""
    counts = np.ones((), np.int64)
    for size, out, k, stride, (before, _) in zip(win.in_sizes, win.out, win.k, win.stride,
                                                 win.pads):
        pos = np.arange(out)[:, None] * stride + np.arange(k)[None, :] - before
        counts = np.multiply.outer(counts, ((pos >= 0) & (pos < size)).sum(axis=1))
    return xp.asarray(counts[..., None], dtype=dtype)


def _float_value(value, op_type):
    """``value`` as a tensor, or TF1's TypeError when it is not float (a mean needs a fraction)."""
    t = convert_to_tensor(value)
    if not t.dtype.is_floating:
        raise TypeError("Value passed to parameter 'value' of %s has DataType %s not in list of "
                        "allowed values: float16, float32, float64 (%s); cast it with tf.cast"
                        % (op_type, t.dtype.name, t.name))
    return t


def _avg_pool_kernel(ctx, x, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    x = _to_nhwc(x, df)
    win = _pool_window(x.shape[1:-1], attrs)
    xpad = win.padded(xp, x)
    out = xp.zeros((x.shape[0],) + win.out + (x.shape[-1],), dtype=x.dtype)
    for _, index in win.offsets():
        out += xpad[index]
    out /= _window_counts(xp, win, x.dtype)
    return _from_nhwc(out, df)


_register_pool("AvgPool", shape=_pool_shape, kernel=_avg_pool_kernel,
               grad=lambda op, g: [_pool_op("AvgPoolGrad", op,
                                            [array_ops.shape(op.inputs[0]), g])])


def _avg_pool_grad_kernel(ctx, input_shape, g, **attrs):
    xp, df = ctx.xp, attrs["data_format"]
    n, *sp, c = _to_nhwc_dims([int(d) for d in input_shape], df)
    g = _to_nhwc(g, df)
    win = _pool_window(sp, attrs)
    share = g / _window_counts(xp, win, g.dtype)
    dx = win.padded_zeros(xp, n, c, g.dtype)
    for _, index in win.offsets():
        dx[index] += share
    return _from_nhwc(win.unpadded(xp, dx), df)


def _avg_pool_grad_shape(op):
    df = op._attrs["data_format"]
    dims = _to_nhwc_dims(_sizes_dims(op, 0, "orig_input_shape"), df)
    c = _merge(dims[-1], _to_nhwc_dims(_rank_dims(op, 1, "grad"), df)[-1],
               "The depth of orig_input_shape and of grad", op)
    return TensorShape(_from_nhwc_dims(dims[:-1] + [c], df))


_register_pool("AvgPoolGrad", dtype=lambda op: op.inputs[1].dtype, shape=_avg_pool_grad_shape,
               kernel=_avg_pool_grad_kernel,
               grad=lambda op, g: [None, _pool_op("AvgPool", op, [g])])


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """The mean of each ``ksize`` window; with "SAME" padding, of its real (unpadded) pixels only.

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [8, 5, 5, 3])
    >>> tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").get_shape().as_list()
    [8, 2, 2, 3]
    """
    value = _one_of(value, input, "value", "input", "avg_pool")
    attrs = _pool_attrs(ksize, strides, padding, data_format, "AvgPool")
    return make_op("AvgPool", [_float_value(value, "AvgPool")], name=name or "AvgPool", **attrs)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """The mean of each ``ksize`` window of a 5-D ``input`` (of its real pixels with "SAME")."""
    attrs = _pool_attrs(ksize, strides, padding, data_format, "AvgPool3D", nd=3)
    return make_op("AvgPool3D", [_float_value(input, "AvgPool3D")], name=name or "AvgPool3D",
                   **attrs)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """TF 1.14+'s name for :func:`max_pool` (ksize and strides may be ints)."""
    return max_pool(input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """TF 1.14+'s name for :func:`avg_pool` (ksize and strides may be ints)."""
    return avg_pool(input, ksize, strides, padding, data_format, name)


def _pool1d(pool, kind, input, ksize, strides, padding, data_format, name):  # noqa: A002
    """A 1-D pooling of [batch, width, c] ("NWC") as the 2-D one of height 1, as TF1 does."""
    df, axis = _width_format(data_format, kind)
    x = convert_to_tensor(input)
    with x.graph.name_scope(name or kind) as scope:
        y = pool(array_ops.expand_dims(x, axis), _one_dim_per_dim(ksize, "ksize", df),
                 _one_dim_per_dim(strides, "strides", df), padding, df)
        return array_ops.squeeze(y, [axis], name=scope)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """The maximum of each ``ksize`` window of a 3-D ``input`` [batch, width, c].

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.max_pool1d([[[1.0], [3.0], [2.0], [0.0]]], 2, 2, "VALID")).ravel()
    array([3., 2.], dtype=float32)
    """
    return _pool1d(max_pool, "MaxPool1d", input, ksize, strides, padding, data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """The mean of each ``ksize`` window of a 3-D ``input`` [batch, width, c]."""
    return _pool1d(avg_pool, "AvgPool1D", input, ksize, strides, padding, data_format, name)


# -- morphological dilation: Dilation2D and its backprop ops -------------------------------------
# out[n, y, x, c] = max over (i, j) of input[n, y * s + i * r, x * s + j * r, c] + filter[i, j, c]
# (padding counts as -inf); the gradients go to the first maximum in row-major window order.
def _dilation_window(in_hw, filter_hw, attrs):
    return _Window(in_hw, filter_hw, attrs["strides"][1:3], attrs["rates"][1:3], attrs["padding"])


def _dilation2d_shape(op):
    n, h, w, c = _rank_dims(op, 0, "input")
    fh, fw, fc = static_shape_or_none(op.inputs[1]) or [None] * 3
    c = _merge(c, fc, "The input depth and the filter's depth", op)
    if None in (fh, fw):
        return TensorShape([n, None, None, c])
    try:
        out = _dilation_window((h, w), (fh, fw), op._attrs).out
    except ValueError as e:
        raise ValueError("%s for Dilation2D '%s' with input shapes %s, %s"
                         % (e, op.name, op.inputs[0].get_shape(), op.inputs[1].get_shape())) from None
    return TensorShape([n, *out, c])


def _dilation_maxima(xp, x, f, attrs):
    """(window, output, [(offset, index, mask)]): mask marks the windows whose maximum is first
    met at that filter offset."""
    if f.ndim != 3 or f.shape[2] != x.shape[3]:
        raise errors.InvalidArgumentError(None, None, "filter must be [filter_height, "
                                          "filter_width, depth] with the input's depth %d, got "
                                          "shape %s" % (x.shape[3], f.shape))
    try:
        win = _dilation_window(x.shape[1:3], f.shape[:2], attrs)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, "%s (input %s, filter %s)"
                                          % (e, x.shape, f.shape)) from None
    xpad = win.padded(xp, x, _lowest(x.dtype))
    y = None
    for offset, index in win.offsets():
        v = xpad[index] + f[offset]
        y = v if y is None else xp.maximum(y, v, out=y)
    masks, taken = [], None
    for offset, index in win.offsets():
        hit = xpad[index] + f[offset] == y
        if taken is None:
            taken = hit.copy()   # the first mask is kept: taken must not alias it
        else:
            hit &= ~taken
            taken |= hit
        masks.append((offset, index, hit))
    return win, y, masks


def _dilation2d_kernel(ctx, x, f, **attrs):
    return _dilation_maxima(ctx.xp, x, f, attrs)[1]


def _dilation2d_backprop_input_kernel(ctx, x, f, g, **attrs):
    win, _, masks = _dilation_maxima(ctx.xp, x, f, attrs)
    dx = win.padded_zeros(ctx.xp, x.shape[0], x.shape[3], g.dtype)
    for _, index, hit in masks:
        dx[index] += g * hit
    return win.unpadded(ctx.xp, dx)


def _dilation2d_backprop_filter_kernel(ctx, x, f, g, **attrs):
    _, _, masks = _dilation_maxima(ctx.xp, x, f, attrs)
    df = ctx.xp.zeros(f.shape, dtype=g.dtype)
    for offset, _, hit in masks:
        df[offset] = (g * hit).sum(axis=(0, 1, 2))
    return df


def _dilation2d_grad(op, g):
    attrs = {k: op._attrs[k] for k in ("strides", "rates", "padding")}
    x, f = op.inputs
    return [make_op("Dilation2DBackpropInput", [x, f, g], **attrs),
            make_op("Dilation2DBackpropFilter", [x, f, g], **attrs)]


register_op("Dilation2D", shape=_dilation2d_shape, kernel=_dilation2d_kernel,
            grad=_dilation2d_grad)
# As in TF1, the backprop ops have no gradients of their own.
register_op("Dilation2DBackpropInput", shape=lambda op: op.inputs[0].get_shape(),
            kernel=_dilation2d_backprop_input_kernel, grad=None)
register_op("Dilation2DBackpropFilter", shape=lambda op: op.inputs[1].get_shape(),
            kernel=_dilation2d_backprop_filter_kernel, grad=None)


def dilation2d(input=None, filter=None, strides=None, rates=None, padding=None,  # noqa: A002
               name=None, filters=None, dilations=None):
    """Grayscale morphological dilation of NHWC ``input`` by ``filter`` [fh, fw, depth]: the
    maximum of ``input + filter`` over each window, taps ``rates`` apart.

    >>> import zps as tf
    >>> y = tf.nn.dilation2d(tf.ones([1, 3, 3, 1]), tf.zeros([2, 2, 1]), [1, 1, 1, 1],
    ...                      [1, 1, 1, 1], "VALID")
    >>> y.get_shape().as_list()
    [1, 2, 2, 1]
    """
    filter = _one_of(filter, filters, "filter", "filters", "dilation2d")  # noqa: A001
    rates = _one_of(rates, dilations, "rates", "dilations", "dilation2d")
    attrs = {"strides": _per_dim_attr(strides, "strides", "NHWC", "Dilation2D"),
             "rates": _per_dim_attr(rates, "rates", "NHWC", "Dilation2D"),
             "padding": _padding_attrs(padding, "NHWC", "Dilation2D", explicit_ok=False)[0]}
    x, f = _same_dtype_tensors("Dilation2D", ["input", "filter"], [input, filter])
    return make_op("Dilation2D", [x, f], name=name or "Dilation2D", **attrs)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None,  # noqa: A002
         name=None, data_format=None, dilations=None):
    """N-D pooling (N = len(window_shape), 1 to 3): ``pooling_type`` "MAX" or "AVG" over
    windows ``strides`` apart (default 1), as max_pool1d/max_pool/max_pool3d (or avg_*) would.

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    >>> tf.nn.pool(x, [2, 2], "MAX", "SAME", strides=[2, 2]).get_shape().as_list()
    [None, 4, 4, 3]
    """
    window_shape = [int(k) for k in window_shape]
    nd = len(window_shape)
    if nd not in (1, 2, 3):
        raise ValueError("pool: window_shape must have 1, 2 or 3 entries, got %s" % window_shape)
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError('pool: pooling_type must be "MAX" or "AVG", got %r' % (pooling_type,))
    rate = dilation_rate if dilation_rate is not None else dilations
    if rate is not None and any(int(r) != 1 for r in rate):
        raise NotImplementedError("pool: zps does not implement dilated pooling (dilation_rate "
                                  "%s); use dilation_rate 1" % list(rate))
    strides = [1] * nd if strides is None else [int(s) for s in strides]
    if len(strides) != nd:
        raise ValueError("pool: strides %s must have as many entries as window_shape %s"
                         % (strides, window_shape))
    if nd == 1:
        fn = max_pool1d if pooling_type == "MAX" else avg_pool1d
        return fn(input, window_shape, strides, padding, data_format or "NWC", name=name)
    fn = {(2, "MAX"): max_pool, (2, "AVG"): avg_pool, (3, "MAX"): max_pool3d,
          (3, "AVG"): avg_pool3d}[nd, pooling_type]
    df = data_format or _DATA_FORMATS[nd][0]
    return fn(input, window_shape, strides, padding, data_format=df, name=name)


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None,  # noqa: A002
                name=None, data_format=None, filters=None, dilations=None):
    """N-D convolution, N = rank(filter) - 2 (1 to 3): conv1d, conv2d or conv3d, with
    ``strides`` and ``dilation_rate`` given per spatial dimension (default 1; TF1 allows no
    stride above 1 together with a rate above 1) and a channels-first ``data_format`` ("NC...").

    >>> import zps as tf
    >>> x = tf.placeholder(tf.float32, [None, 9, 9, 2])
    >>> y = tf.nn.convolution(x, tf.zeros([3, 3, 2, 4]), "VALID", dilation_rate=[2, 2])
    >>> y.get_shape().as_list()
    [None, 5, 5, 4]
    """
    w = convert_to_tensor(_one_of(filter, filters, "filter", "filters", "convolution"))
    x = convert_to_tensor(input)
    rank = w.get_shape().ndims if w.get_shape().ndims is not None else x.get_shape().ndims
    if rank is None or not 3 <= rank <= 5:
        raise ValueError("convolution: the filter must have rank 3 to 5 (1 to 3 spatial "
                         "dimensions, then in and out channels), got shape %s" % w.get_shape())
    nd = rank - 2
    strides = _per_spatial(strides, nd, "strides")
    rate = _per_spatial(dilation_rate if dilation_rate is not None else dilations, nd,
                        "dilation_rate")
    if max(strides) > 1 and max(rate) > 1:
        raise ValueError("convolution: strides > 1 not supported in conjunction with "
                         "dilation_rate > 1 (strides %s, dilation_rate %s)" % (strides, rate))
    first = data_format is not None and data_format.startswith("NC")
    name = name or "convolution"
    if nd == 1:
        return conv1d(x, w, strides[0], padding, data_format="NCW" if first else "NWC",
                      dilations=rate[0], name=name)
    strides, rate = ([1, 1] + v if first else [1] + v + [1] for v in (strides, rate))
    return (conv2d if nd == 2 else conv3d)(x, w, strides, padding, name=name,
                                           data_format=_DATA_FORMATS[nd][int(first)],
                                           dilations=rate)


def _per_spatial(values, nd, what):
    values = [1] * nd if values is None else [int(v) for v in np.asarray(values).reshape(-1)]
    if len(values) != nd:
        raise ValueError("convolution: %s must have %d entries (one per spatial dimension), got "
                         "%s" % (what, nd, values))
    return values


__all__ = [
    "convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv2d_backprop_input",
    "conv2d_backprop_filter",
    "conv1d_transpose",
    "conv2d_transpose",
    "conv3d_transpose",
    "conv3d_backprop_filter_v2",
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_input",
    "depthwise_conv2d_native_backprop_filter",
    "separable_conv2d",
    "atrous_conv2d",
    "dilation2d",
    "max_pool",
    "avg_pool",
    "max_pool1d",
    "avg_pool1d",
    "max_pool2d",
    "avg_pool2d",
    "max_pool3d",
    "avg_pool3d",
    "pool",
]
