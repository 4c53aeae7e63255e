"""Fast Fourier transforms (TF1's ``tf.signal`` / ``tf.spectral`` FFT ops), over the innermost
1, 2 or 3 dimensions of a tensor.

``fft``/``ifft`` (and their 2-D, 3-D forms) map complex tensors to complex tensors of the same
type; ``rfft`` maps float32 (float64) to complex64 (complex128), keeping the ``n // 2 + 1``
non-negative frequencies of the innermost dimension; ``irfft`` goes back. ``fft_length`` crops
or zero-pads each transformed dimension of the input, as TF1's.

Gradients are TF1's: a real loss's gradient w.r.t. a complex tensor is ``dL/dre + i dL/dim``, so
the gradient of ``fft`` is ``n * ifft(grad)``, of ``ifft`` ``fft(grad) / n``; those of ``rfft``
and ``irfft`` are computed by their own kernels (``RFFTGrad``, ``IRFFTGrad``).

>>> import numpy as np, zps as tf
>>> x = tf.constant([1.0, 2.0, 3.0, 4.0])
>>> tf.Session().run(tf.signal.rfft(x))
array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, math_ops
from zps.ops.op_util import make_op

_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}
_OP_NAMES = {1: "", 2: "2D", 3: "3D"}   # FFT, FFT2D, FFT3D


def _axes(rank):
    return tuple(range(-rank, 0))


def _check_rank(x, rank, op_type):
    ndims = x.get_shape().ndims
    if ndims is not None and ndims < rank:
        raise ValueError("Shape must be at least rank %d but is rank %d for '%s' with input shape "
                         "%s" % (rank, ndims, op_type, x.get_shape()))


# -- FFT, IFFT (complex to complex) --------------------------------------------------------------
def _fft_size(g, rank):
    """The number of points each transform of ``g`` has (a scalar tensor of ``g``'s dtype)."""
    return math_ops.cast(math_ops.reduce_prod(array_ops.shape(g)[-rank:]), g.dtype)


def _register_fft(rank):
    def kernel(inverse):
        def run(ctx, x):
            f = ctx.xp.fft.ifftn if inverse else ctx.xp.fft.fftn
            return f(x, axes=_axes(rank)).astype(x.dtype, copy=False)
        return run

    suffix = _OP_NAMES[rank]
    forward, inverse = "FFT" + suffix, "IFFT" + suffix
    register_op(forward, shape=lambda op: op.inputs[0].get_shape(), kernel=kernel(False),
                grad=lambda op, g: [_fft(inverse, rank, g) * _fft_size(g, rank)])
    register_op(inverse, shape=lambda op: op.inputs[0].get_shape(), kernel=kernel(True),
                grad=lambda op, g: [_fft(forward, rank, g) / _fft_size(g, rank)])


for _rank in (1, 2, 3):
    _register_fft(_rank)


def _fft(op_type, rank, input, name=None):  # noqa: A002 - TF1's argument name
    # As TF1's op: a real Python or numpy value ([1.0, 2.0]) becomes complex64.
    real_value = not is_symbolic(input) and np.asarray(input).dtype.kind != "c"
    x = convert_to_tensor(input, dtype=_dtypes.complex64 if real_value else None)
    if not x.dtype.is_complex:
        raise TypeError("Value passed to parameter 'input' has DataType %s not in list of allowed "
                        "values: complex64, complex128 (%s of %s). Make it complex first, e.g. "
                        "tf.cast(x, tf.complex64), or use tf.signal.rfft for real input."
                        % (x.dtype.name, x.name, op_type))
    _check_rank(x, rank, op_type)
    return make_op(op_type, [x], name=name or op_type)


def fft(input, name=None):  # noqa: A002 - TF1's argument name
    """The discrete Fourier transform over the innermost dimension of a complex tensor."""
    return _fft("FFT", 1, input, name)


def ifft(input, name=None):  # noqa: A002
    """The inverse discrete Fourier transform (scaled by 1/n) over the innermost dimension."""
    return _fft("IFFT", 1, input, name)


def fft2d(input, name=None):  # noqa: A002
    """The 2-D discrete Fourier transform over the 2 innermost dimensions."""
    return _fft("FFT2D", 2, input, name)


def ifft2d(input, name=None):  # noqa: A002
    """The inverse 2-D discrete Fourier transform over the 2 innermost dimensions."""
    return _fft("IFFT2D", 2, input, name)


def fft3d(input, name=None):  # noqa: A002
    """The 3-D discrete Fourier transform over the 3 innermost dimensions."""
    return _fft("FFT3D", 3, input, name)


def ifft3d(input, name=None):  # noqa: A002
    """The inverse 3-D discrete Fourier transform over the 3 innermost dimensions."""
    return _fft("IFFT3D", 3, input, name)


# -- RFFT, IRFFT (real to half spectrum and back) ------------------------------------------------
# Attr ``fft_length``: a tuple of ints, or None to take it from the input's shape when the kernel
# runs (TF1's inference: the input's inner dims; for irfft the last one is 2 * (m - 1)).
def _lengths(x_shape, rank, fft_length, inverse):
    if fft_length is not None:
        return tuple(fft_length)
    inner = list(x_shape[len(x_shape) - rank:])
    if inverse:
        inner[-1] = max(0, 2 * (inner[-1] - 1))
    return tuple(inner)


def _fit(xp, a, shape, rank):
    """``a`` cropped or zero-padded on its ``rank`` innermost dimensions to ``shape``'s."""
    a = a[(Ellipsis,) + tuple(slice(0, n) for n in shape[-rank:])]
    pad = [(0, 0)] * (a.ndim - rank) + [(0, n - m) for n, m in zip(shape[-rank:], a.shape[-rank:])]
    return xp.pad(a, pad) if any(p for _, p in pad) else a


def _rfft_kernel(rank):
    def run(ctx, x, fft_length):
        n = _lengths(x.shape, rank, fft_length, False)
        out = ctx.xp.fft.rfftn(x, s=n, axes=_axes(rank))
        return out.astype(_COMPLEX_OF[_dtypes.as_dtype(x.dtype)].as_numpy_dtype, copy=False)
    return run


def _irfft_kernel(rank):
    def run(ctx, x, fft_length):
        n = _lengths(x.shape, rank, fft_length, True)
        if 0 in n or 0 in x.shape:
            return ctx.xp.zeros(x.shape[:-rank] + n, x.real.dtype)
        return ctx.xp.fft.irfftn(x, s=n, axes=_axes(rank)).astype(x.real.dtype, copy=False)
    return run


def _rfft_grad_kernel(ctx, g, x, rank, fft_length):
    # y = rfft(x): dL/dx[k] = re(sum_j g[j] exp(+2 pi i jk / n)) over the kept frequencies j:
    # n * ifft of g zero-filled to the full spectrum (TF1's rule, in closed form).
    xp = ctx.xp
    n = _lengths(x.shape, rank, fft_length, False)
    full = _fit(xp, g, g.shape[:-rank] + n, rank)
    out = (xp.fft.ifftn(full, axes=_axes(rank)).real * float(np.prod(n)))
    return _fit(xp, out, x.shape, rank).astype(x.dtype, copy=False)


def _irfft_grad_kernel(ctx, g, x, rank, fft_length):
    # TF1's rule: rfft(grad) / n, with the frequencies that stand for two (all but 0 and, for
    # an even length, n / 2) counted twice.
    xp = ctx.xp
    n = _lengths(x.shape, rank, fft_length, True)
    spectrum = xp.fft.rfftn(g, s=n, axes=_axes(rank))
    mask = xp.full(spectrum.shape[-1], 2.0)
    mask[0] = 1.0
    if n[-1] % 2 == 0:
        mask[-1] = 1.0
    spectrum = spectrum * (mask / max(int(np.prod(n)), 1))
    return _fit(xp, spectrum, x.shape, rank).astype(x.dtype, copy=False)


def _rfft_shape(rank, inverse):
    def shape(op):
        s = op.inputs[0].get_shape()
        if s.ndims is None:
            return unknown_shape()
        dims = s.as_list()
        n = op._attrs["fft_length"]
        if n is None:
            if any(d is None for d in dims[len(dims) - rank:]):
                return TensorShape(dims[:len(dims) - rank] + [None] * rank)
            n = _lengths(dims, rank, None, inverse)
        n = list(n)
        if not inverse:
            n[-1] = n[-1] // 2 + 1
        return TensorShape(dims[:len(dims) - rank] + n)
    return shape


def _register_rfft(rank):
    suffix = _OP_NAMES[rank]
    forward, inverse = "RFFT" + suffix, "IRFFT" + suffix
    register_op(forward, dtype=lambda op: _COMPLEX_OF[op.inputs[0].dtype],
                shape=_rfft_shape(rank, False), kernel=_rfft_kernel(rank),
                grad=lambda op, g: [make_op("RFFTGrad", [g, op.inputs[0]], rank=rank,
                                            fft_length=op._attrs["fft_length"])])
    register_op(inverse, dtype=lambda op: op.inputs[0].dtype.real_dtype,
                shape=_rfft_shape(rank, True), kernel=_irfft_kernel(rank),
                grad=lambda op, g: [make_op("IRFFTGrad", [g, op.inputs[0]], rank=rank,
                                            fft_length=op._attrs["fft_length"])])


for _rank in (1, 2, 3):
    _register_rfft(_rank)

# The gradient kernels' outputs have the type and shape of the transform's input (input 1).
# Their own gradients are not registered: second derivatives through an rfft are an error.
register_op("RFFTGrad", dtype=lambda op: op.inputs[1].dtype,
            shape=lambda op: op.inputs[1].get_shape(), kernel=_rfft_grad_kernel)
register_op("IRFFTGrad", dtype=lambda op: op.inputs[1].dtype,
            shape=lambda op: op.inputs[1].get_shape(), kernel=_irfft_grad_kernel)


def _fft_length_attr(fft_length, rank, op_type):
    if fft_length is None:
        return None
    value = constant_value(convert_to_tensor(fft_length, dtype=_dtypes.int32))
    if value is None:
        raise TypeError("%s's fft_length must be known when the graph is built (a list of ints "
                        "or a constant tensor); got the computed tensor %s"
                        % (op_type, getattr(fft_length, "name", fft_length)))
    value = np.asarray(value).reshape(-1)
    if value.shape != (rank,) or (value < 0).any():
        raise ValueError("%s's fft_length must be %d non-negative ints, got %s"
                         % (op_type, rank, value.tolist()))
    return tuple(int(v) for v in value)


def _rfft(rank, input_tensor, fft_length, name):
    op_type = "RFFT" + _OP_NAMES[rank]
    with get_default_graph().name_scope(name or op_type.lower()) as scope:
        x = convert_to_tensor(input_tensor, preferred_dtype=_dtypes.float32)
        if x.dtype not in _COMPLEX_OF:
            raise ValueError("RFFT requires tf.float32 or tf.float64 inputs, got: %s" % (x,))
        _check_rank(x, rank, op_type)
        return make_op(op_type, [x], name=scope,
                       fft_length=_fft_length_attr(fft_length, rank, op_type))


def _irfft(rank, input_tensor, fft_length, name):
    op_type = "IRFFT" + _OP_NAMES[rank]
    with get_default_graph().name_scope(name or op_type.lower()) as scope:
        x = convert_to_tensor(input_tensor, preferred_dtype=_dtypes.complex64)
        _check_rank(x, rank, op_type)
        if not x.dtype.is_complex:
            raise ValueError("IRFFT requires tf.complex64 or tf.complex128 inputs, got: %s" % (x,))
        return make_op(op_type, [x], name=scope,
                       fft_length=_fft_length_attr(fft_length, rank, op_type))


def rfft(input_tensor, fft_length=None, name=None):
    """The DFT of a real tensor over its innermost dimension: its ``fft_length // 2 + 1``
    non-negative frequencies (``fft_length``, default the dimension, crops or zero-pads it)."""
    return _rfft(1, input_tensor, fft_length, name)


def irfft(input_tensor, fft_length=None, name=None):
    """The inverse of ``rfft``: a real signal of ``fft_length`` points (default ``2 * (m - 1)``
    for ``m`` frequencies) from its non-negative frequencies."""
    return _irfft(1, input_tensor, fft_length, name)


def rfft2d(input_tensor, fft_length=None, name=None):
    """``rfft`` over the 2 innermost dimensions (``fft_length``: 2 ints)."""
    return _rfft(2, input_tensor, fft_length, name)


def irfft2d(input_tensor, fft_length=None, name=None):
    """``irfft`` over the 2 innermost dimensions (``fft_length``: 2 ints)."""
    return _irfft(2, input_tensor, fft_length, name)


def rfft3d(input_tensor, fft_length=None, name=None):
    """``rfft`` over the 3 innermost dimensions (``fft_length``: 3 ints)."""
    return _rfft(3, input_tensor, fft_length, name)


def irfft3d(input_tensor, fft_length=None, name=None):
    """``irfft`` over the 3 innermost dimensions (``fft_length``: 3 ints)."""
    return _irfft(3, input_tensor, fft_length, name)


__all__ = ["fft", "fft2d", "fft3d", "ifft", "ifft2d", "ifft3d", "irfft", "irfft2d", "irfft3d",
           "rfft", "rfft2d", "rfft3d"]
