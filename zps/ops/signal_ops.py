"""Framing, windows and short-time Fourier transforms (TF1's ``tf.signal`` audio front end):
``frame``, ``overlap_and_add``, ``hann_window``, ``hamming_window``, ``stft``, ``inverse_stft``
and ``inverse_stft_window_fn``, as TF 1.15 computes them.

``Frame`` and ``OverlapAndAdd`` are kernels (their lengths may be known only when the graph
runs), each the other's gradient; the windows and transforms are built from other ops.

>>> import numpy as np, zps as tf
>>> tf.Session().run(tf.signal.frame(np.arange(7), 3, 2))
array([[0, 1, 2],
       [2, 3, 4],
       [4, 5, 6]])
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant, constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, math_ops, spectral_ops
from zps.ops.op_util import make_op


def _static_int(value, what):
    """A frame length or step: a Python int, or a constant scalar tensor."""
    v = constant_value(value) if not isinstance(value, int | np.integer) else value
    if v is None or np.ndim(v) != 0 or not np.issubdtype(np.asarray(v).dtype, np.integer):
        raise ValueError("%s must be an integer scalar known when the graph is built (a Python "
                         "int or a constant), got %r" % (what, getattr(value, "name", value)))
    return int(v)


def _num_frames(length, frame_length, frame_step, pad_end):
    if pad_end:
        return -(-length // frame_step)
    return max(0, 1 + (length - frame_length) // frame_step)


# -- Frame: [..., samples, ...] -> [..., frames, frame_length, ...] along ``axis`` ---------------
def _frame_kernel(ctx, x, frame_length, frame_step, axis, pad_end, pad_value):
    xp = ctx.xp
    x = xp.moveaxis(x, axis, -1)
    n = _num_frames(x.shape[-1], frame_length, frame_step, pad_end)
    need = frame_length + frame_step * (n - 1) if n else 0
    if need > x.shape[-1]:
        pad = [(0, 0)] * (x.ndim - 1) + [(0, need - x.shape[-1])]
        x = xp.pad(x, pad, constant_values=pad_value)
    index = frame_step * np.arange(n)[:, None] + np.arange(frame_length)[None, :]
    frames = x[..., xp.asarray(index.reshape(-1))].reshape(x.shape[:-1] + (n, frame_length))
    return xp.moveaxis(frames, (-2, -1), (axis, axis + 1))


def _overlap_add(xp, frames, frame_step, length):
    """Sum the frames (the two innermost dimensions) into a signal of ``length`` samples."""
    n, frame_length = frames.shape[-2:]
    out = xp.zeros(frames.shape[:-2] + (max(length, frame_length + frame_step * (n - 1)),),
                   frames.dtype)
    for i in range(n):   # frames overlap: one slice add per frame (n is small next to n * length)
        out[..., i * frame_step:i * frame_step + frame_length] += frames[..., i, :]
    return out[..., :length]


def _frame_grad_kernel(ctx, g, x, frame_length, frame_step, axis, pad_end, pad_value):
    xp = ctx.xp
    g = xp.moveaxis(g, (axis, axis + 1), (-2, -1))
    return xp.moveaxis(_overlap_add(xp, g, frame_step, x.shape[axis]), -1, axis)


def _frame_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims is None:
        return unknown_shape()
    a = op._attrs
    dims = s.as_list()
    length = dims[a["axis"]]
    n = None if length is None else _num_frames(length, a["frame_length"], a["frame_step"],
                                                 a["pad_end"])
    return TensorShape(dims[:a["axis"]] + [n, a["frame_length"]] + dims[a["axis"] + 1:])


register_op("Frame", shape=_frame_shape, kernel=_frame_kernel,
            grad=lambda op, g: [make_op("FrameGrad", [g, op.inputs[0]], **op._attrs)])
# Its own gradient is not registered: second derivatives through a frame are an error.
register_op("FrameGrad", dtype=lambda op: op.inputs[1].dtype,
            shape=lambda op: op.inputs[1].get_shape(), kernel=_frame_grad_kernel)


def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """Split ``axis`` of ``signal`` into frames of ``frame_length`` samples, ``frame_step``
    apart: ``[..., samples, ...]`` gives ``[..., frames, frame_length, ...]``. With ``pad_end``
    the end is padded with ``pad_value`` so that every sample is in a frame."""
    with get_default_graph().name_scope(name or "frame") as scope:
        x = convert_to_tensor(signal, name="signal")
        ndims = x.get_shape().ndims
        if ndims is None or ndims < 1:
            raise ValueError("frame needs a signal of known rank >= 1, got %s (%s)"
                             % (x.get_shape(), x.name))
        axis = int(axis)
        if not -ndims <= axis < ndims:
            raise ValueError("axis %d is out of range for a rank-%d signal" % (axis, ndims))
        frame_length = _static_int(frame_length, "frame_length")
        frame_step = _static_int(frame_step, "frame_step")
        if frame_length < 0 or frame_step <= 0:
            raise ValueError("frame_length must be >= 0 and frame_step > 0, got %d and %d"
                             % (frame_length, frame_step))
        return make_op("Frame", [x], name=scope, frame_length=frame_length,
                       frame_step=frame_step, axis=axis % ndims, pad_end=bool(pad_end),
                       pad_value=np.asarray(pad_value).item())


# -- OverlapAndAdd: [..., frames, frame_length] -> [..., samples] --------------------------------
def _overlap_and_add_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims is None:
        return unknown_shape()
    dims = s.as_list()
    n, frame_length = dims[-2:]
    length = None if n is None or frame_length is None else \
        frame_length + op._attrs["frame_step"] * (n - 1) if n else 0
    return TensorShape(dims[:-2] + [length])


def _overlap_and_add_kernel(ctx, frames, frame_step):
    n, frame_length = frames.shape[-2:]
    return _overlap_add(ctx.xp, frames, frame_step, frame_length + frame_step * (n - 1) if n else 0)


def _overlap_and_add_grad(op, g):
    frames = op.inputs[0]   # of known rank and frame length (overlap_and_add checks)
    return [make_op("Frame", [g], frame_length=frames.get_shape().as_list()[-1],
                    frame_step=op._attrs["frame_step"], axis=frames.get_shape().ndims - 2,
                    pad_end=False, pad_value=0)]


register_op("OverlapAndAdd", shape=_overlap_and_add_shape, kernel=_overlap_and_add_kernel,
            grad=_overlap_and_add_grad)


def overlap_and_add(signal, frame_step, name=None):
    """The inverse of ``frame`` along the last axis: frames ``[..., frames, frame_length]``
    summed ``frame_step`` apart into ``[..., (frames - 1) * frame_step + frame_length]``."""
    with get_default_graph().name_scope(name or "overlap_and_add") as scope:
        x = convert_to_tensor(signal, name="signal")
        if x.get_shape().ndims is None or x.get_shape().ndims < 2:
            raise ValueError("overlap_and_add needs a signal of known rank >= 2, got %s (%s)"
                             % (x.get_shape(), x.name))
        if x.get_shape().as_list()[-1] is None:
            raise ValueError("overlap_and_add needs a known frame length (the last dimension "
                             "of %s, %s)" % (x.name, x.get_shape()))
        frame_step = _static_int(frame_step, "frame_step")
        if frame_step <= 0:
            raise ValueError("frame_step must be > 0, got %d" % frame_step)
        return make_op("OverlapAndAdd", [x], name=scope, frame_step=frame_step)


# -- windows -------------------------------------------------------------------------------------
def _raised_cosine(name, a, b, window_length, periodic, dtype):
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError("dtype must be a floating point type. Found %s" % dtype.name)
    n = _static_int(window_length, "window_length")
    if n == 1:
        return array_ops.ones([1], dtype=dtype, name=name)
    # TF1's: the periodic window of an odd length is the symmetric one.
    denominator = n + int(bool(periodic)) * (1 - n % 2) - 1
    count = np.arange(n, dtype=np.float64)
    window = a - b * np.cos(2.0 * np.pi * count / denominator) if n else count
    return constant(window.astype(dtype.as_numpy_dtype), name=name)


def hann_window(window_length, periodic=True, dtype=_dtypes.float32, name=None):
    """The Hann window, ``0.5 - 0.5 cos(2 pi n / N)`` (``periodic``: for spectral analysis)."""
    return _raised_cosine(name or "hann_window", 0.5, 0.5, window_length, periodic, dtype)


def hamming_window(window_length, periodic=True, dtype=_dtypes.float32, name=None):
    """The Hamming window, ``0.54 - 0.46 cos(2 pi n / N)``."""
    return _raised_cosine(name or "hamming_window", 0.54, 0.46, window_length, periodic, dtype)


# -- short-time Fourier transforms ---------------------------------------------------------------
def _enclosing_power_of_two(n):
    return 1 << max(0, int(n) - 1).bit_length()


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False, name=None):
    """The short-time Fourier transform of real ``signals`` ``[..., samples]``: the ``rfft`` of
    each windowed frame, ``[..., frames, fft_length // 2 + 1]`` (``fft_length``: by default the
    smallest power of 2 enclosing ``frame_length``)."""
    with get_default_graph().name_scope(name or "stft"):
        signals = convert_to_tensor(signals, name="signals")
        frame_length = _static_int(frame_length, "frame_length")
        fft_length = _enclosing_power_of_two(frame_length) if fft_length is None else \
            _static_int(fft_length, "fft_length")
        framed = frame(signals, frame_length, frame_step, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(frame_length, dtype=framed.dtype)
        return spectral_ops.rfft(framed, [fft_length])


def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window,
                 name=None):
    """The inverse of ``stft``: the windowed ``irfft`` of each frame, overlapped and added
    (pass ``window_fn=tf.signal.inverse_stft_window_fn(frame_step)`` for a perfect
    reconstruction of a Hann-windowed ``stft``)."""
    with get_default_graph().name_scope(name or "inverse_stft"):
        stfts = convert_to_tensor(stfts, name="stfts")
        frame_length = _static_int(frame_length, "frame_length")
        fft_length = _enclosing_power_of_two(frame_length) if fft_length is None else \
            _static_int(fft_length, "fft_length")
        frames = spectral_ops.irfft(stfts, [fft_length])
        if fft_length > frame_length:
            frames = frames[..., :frame_length]
        elif fft_length < frame_length:
            ndims = frames.get_shape().ndims
            frames = array_ops.pad(frames, [[0, 0]] * (ndims - 1) + [[0, frame_length - fft_length]])
        if window_fn is not None:
            frames = frames * window_fn(frame_length, dtype=stfts.dtype.real_dtype)
        return overlap_and_add(frames, frame_step)


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """A ``window_fn`` for ``inverse_stft`` that undoes ``forward_window_fn``: the forward
    window divided by the sum of its overlapping squares."""
    frame_step = _static_int(frame_step, "frame_step")

    def window_fn(frame_length, dtype):
        with get_default_graph().name_scope(name or "inverse_stft_window_fn"):
            forward = forward_window_fn(frame_length, dtype=dtype)
            frame_length = _static_int(frame_length, "frame_length")
            overlaps = -(-frame_length // frame_step)
            squares = array_ops.pad(math_ops.square(forward),
                                    [[0, overlaps * frame_step - frame_length]])
            denom = math_ops.reduce_sum(array_ops.reshape(squares, [overlaps, frame_step]), 0,
                                        keepdims=True)
            denom = array_ops.reshape(array_ops.tile(denom, [overlaps, 1]), [-1])
            return forward / denom[:frame_length]
    return window_fn


__all__ = ["frame", "hamming_window", "hann_window", "inverse_stft", "inverse_stft_window_fn",
           "overlap_and_add", "stft"]
