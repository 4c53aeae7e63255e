"""Math ops: elementwise arithmetic, unary functions, comparisons, reductions, matmul, casts.

Each op is one block: registration (shape rule, kernel, gradient rule) next to its wrapper.
Binary elementwise ops are registered with ``broadcast=True``: their gradient rules return
gradients of the broadcast shape and ``gradients()`` sums them back to each input's shape.
The Python operators of Tensor (``+ - * / // % ** @ & | ^ ~ < <= > >=``, unary ``-``, ``abs()``)
are installed at the bottom.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant([[1.0, -4.0], [9.0, 2.0]])
...     y = tf.reduce_max(tf.sqrt(tf.abs(x)), axis=1)
...     print(tf.Session().run(y))
[2. 3.]
"""

import collections
import contextlib
import math
import re
import string

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant, constant_value, register_constant_folder
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops
from zps.ops.op_util import (
    bool_dtype,
    broadcast_shape,
    check_same_dtype,
    const_axis,
    make_op,
    normalize_axis,
    same_shape,
    static_shape_or_none,
    to_tensors,
)

_FLOATS = "float16, float32, float64"
_COMPLEX = "complex64, complex128"


@contextlib.contextmanager
def _operands(scope_name, x, y, names=("x", "y")):
    """Open the op's name scope and yield ``(scope, x, y)`` as tensors (``to_tensors``): a
    Python or numpy operand becomes a constant named after its argument in the scope (``x * 2``
    makes ``mul/y`` and ``mul``; ``2 * x``: ``mul/x``)."""
    with get_default_graph().name_scope(scope_name) as scope:
        yield (scope, *to_tensors(x, y, names=names))


# TF1's kernels of these ops take numbers only: bool (and string) inputs are refused when the op
# is built. Add also concatenates strings; Equal and NotEqual take any type.
_STRING_OK = {"Add", "Equal", "NotEqual"}
_BOOL_OK = {"Equal", "NotEqual"}
# Complex numbers have no order: TF1's kernels of these ops take real types only.
_REAL_ONLY = {"Maximum", "Minimum", "Less", "LessEqual", "Greater", "GreaterEqual", "FloorDiv",
              "FloorMod", "TruncateDiv", "TruncateMod", "Max", "Min", "ArgMax", "ArgMin"}


def _check_real(op_type, t, arg="x"):
    if t.dtype.is_complex and op_type in _REAL_ONLY:
        raise TypeError("Value passed to parameter '%s' of %s has DataType %s not in list of "
                        "allowed values: real numeric types (%s): complex numbers have no order. "
                        "Compare their tf.abs or tf.real instead." % (arg, op_type, t.dtype.name,
                                                                       t.name))


# TF1's kernels of these ops have no unsigned (nor some narrow) integer types: their op defs list
# what they take, and anything else is refused when the op is built.
_SIGNED = "float16, float32, float64, int8, int16, int32, int64"
_ALLOWED_TYPES = {
    "Neg": _SIGNED + ", " + _COMPLEX, "Sign": _SIGNED + ", " + _COMPLEX,
    "Reciprocal": _SIGNED + ", " + _COMPLEX, "Pow": _SIGNED + ", " + _COMPLEX, "Abs": _SIGNED,
    "SquaredDifference": "float16, float32, float64, int32, int64, " + _COMPLEX,
    "TruncateMod": "int32, int64, float16, float32, float64",
}


def _check_numeric(op_type, t, arg="x"):
    dtype = t.dtype.base_dtype
    _check_real(op_type, t, arg)
    allowed = _ALLOWED_TYPES.get(op_type)
    if allowed is not None and dtype.name not in allowed.split(", "):
        raise TypeError("Value passed to parameter '%s' of %s has DataType %s not in list of "
                        "allowed values: %s (%s). Cast it first, e.g. tf.cast(%s, tf.int64)."
                        % (arg, op_type, dtype.name, allowed, t.name, arg))
    if (dtype.is_bool and op_type not in _BOOL_OK) or (
            dtype == _dtypes.string and op_type not in _STRING_OK):
        raise TypeError("Value passed to parameter '%s' of %s has DataType %s not in list of "
                        "allowed values: numeric types%s (%s). Cast it first, e.g. "
                        "tf.cast(%s, tf.int32)." % (arg, op_type, dtype.name,
                                                    ", string" if op_type in _STRING_OK else "",
                                                    t.name, arg))


def _make_binary(op_type, x, y, name):
    check_same_dtype(op_type, x, y)
    _check_numeric(op_type, x)
    return make_op(op_type, [x, y], name=name)


def _binary(op_type, x, y, name, names=("x", "y")):
    if type(x) is Tensor and type(y) is Tensor:   # nothing to name in a scope: the op's name
        return _make_binary(op_type, x, y, name or op_type)
    with _operands(name or op_type, x, y, names) as (scope, x, y):
        return _make_binary(op_type, x, y, scope)


def _unary(op_type, x, name, floats_only=False, complex_ok=False):
    """``floats_only``: the op takes floating types (and complex ones too with ``complex_ok``)."""
    x = convert_to_tensor(x)
    _check_numeric(op_type, x)
    if floats_only and not (x.dtype.is_floating or complex_ok and x.dtype.is_complex):
        raise TypeError("Value passed to parameter 'x' of %s has DataType %s not in list of allowed "
                        "values: %s (%s). Cast it first, e.g. tf.cast(x, tf.float32)."
                        % (op_type, x.dtype.name,
                           _FLOATS + (", " + _COMPLEX if complex_ok else ""), x.name))
    return make_op(op_type, [x], name=name or op_type)


def _check_bool(op_type, *tensors):
    for t in tensors:
        if not t.dtype.is_bool:
            raise TypeError("%s takes bool tensors, but %s has dtype %s. Compare first (e.g. x > 0) "
                            "or tf.cast it to tf.bool." % (op_type, t.name, t.dtype.name))


# -- Cast ----------------------------------------------------------------------------------------
def _cast_kernel(ctx, x, DstT):  # noqa: N803 - TF1's attr name
    if x.dtype.kind == "c" and not (DstT.is_complex or DstT.is_bool):
        x = x.real   # complex to real drops the imaginary part (TF1's; numpy would warn)
    return x.astype(DstT.as_numpy_dtype, copy=False)


def _cast_grad(op, g):
    # TF1: a gradient flows only between floating and complex types (a complex gradient cast
    # to a real source keeps its real part).
    src = op.inputs[0].dtype
    differentiable = (src.is_floating or src.is_complex) and (g.dtype.is_floating
                                                              or g.dtype.is_complex)
    return [cast(g, src) if differentiable else None]


register_op("Cast", dtype=lambda op: op._attrs["DstT"], shape=same_shape, kernel=_cast_kernel,
            grad=_cast_grad)
register_constant_folder("Cast", lambda op: _fold_cast(op))


def _fold_cast(op):
    value = constant_value(op.inputs[0])
    return None if value is None else _cast_kernel(None, np.asarray(value), op._attrs["DstT"])


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (floats to ints truncate toward zero).

    Example: ``tf.cast(tf.constant([1.7, -1.7]), tf.int32)`` evaluates to ``[1, -1]``.
    """
    x = convert_to_tensor(x)
    dtype = _dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return make_op("Cast", [x], name=name or "Cast", DstT=dtype)


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, _dtypes.int64, name=name)


# -- complex numbers -----------------------------------------------------------------------------
# Gradients follow TF1's convention: for a real loss L of z = x + iy, tf.gradients gives
# dL/dx + i dL/dy, and the rules of holomorphic ops multiply by the conjugate of the derivative.
_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}


def _complex_grad(op, g):
    return [real(g), imag(g)]


register_op("Complex", dtype=lambda op: _COMPLEX_OF[op.inputs[0].dtype], shape=broadcast_shape,
            broadcast=True, kernel=lambda ctx, x, y: ctx.xp.asarray(x + 1j * y).astype(
                _COMPLEX_OF[_dtypes.as_dtype(x.dtype)].as_numpy_dtype, copy=False),
            grad=_complex_grad)


def complex(real, imag, name=None):  # noqa: A001 - TF1's public name
    """The complex tensor ``real + i * imag`` (float32 parts give complex64, float64 complex128).

    >>> import zps as tf
    >>> tf.Session().run(tf.complex(tf.constant([1.0]), tf.constant([-2.0])))
    array([1.-2.j], dtype=complex64)
    """
    with _operands(name or "Complex", real, imag, names=("real", "imag")) as (scope, x, y):
        if x.dtype != y.dtype or x.dtype not in _COMPLEX_OF:
            raise TypeError("The `real` and `imag` components have incorrect types: %s %s. They "
                            "must be consistent, and one of [tf.float32, tf.float64]"
                            % (x.dtype.name, y.dtype.name))
        return make_op("Complex", [x, y], name=scope)


def _part_dtype(op):
    return op.inputs[0].dtype.real_dtype


register_op("Real", dtype=_part_dtype, shape=same_shape,
            kernel=lambda ctx, x: x.real.copy(),   # contiguous, keeps rank 0
            grad=lambda op, g: [complex(g, array_ops.zeros_like(g))])
register_op("Imag", dtype=_part_dtype, shape=same_shape,
            kernel=lambda ctx, x: x.imag.copy(),   # contiguous, keeps rank 0
            grad=lambda op, g: [complex(array_ops.zeros_like(g), g)])
register_op("Conj", shape=same_shape, kernel=lambda ctx, x: ctx.xp.conj(x),
            grad=lambda op, g: [conj(g)])


def _angle_grad(op, g):
    x = op.inputs[0]
    return [-complex(g, array_ops.zeros_like(g)) * reciprocal(complex(imag(x), real(x)))]


register_op("Angle", dtype=_part_dtype, shape=same_shape,
            kernel=lambda ctx, x: ctx.xp.angle(x).astype(x.real.dtype, copy=False),
            grad=_angle_grad)


def _complex_abs_grad(op, g):
    z = op.inputs[0]
    return [div_no_nan(complex(g, array_ops.zeros_like(g)) * z,
                       complex(op.outputs[0], array_ops.zeros_like(op.outputs[0])))]


register_op("ComplexAbs", dtype=_part_dtype, shape=same_shape,
            kernel=lambda ctx, x: ctx.xp.abs(x), grad=_complex_abs_grad)


def _complex_part(op_type, x, name, of_real):
    x = convert_to_tensor(x)
    if x.dtype.is_complex:
        return make_op(op_type, [x], name=name or op_type)
    _check_numeric(op_type, x, arg="input")
    return of_real(x)


def real(input, name=None):  # noqa: A002 - TF1's argument name
    """The real part of each element (float32 for complex64); a real tensor is returned as is."""
    return _complex_part("Real", input, name, lambda x: x)


def imag(input, name=None):  # noqa: A002 - TF1's argument name
    """The imaginary part of each element (float32 for complex64); zeros for a real tensor."""
    return _complex_part("Imag", input, name, lambda x: array_ops.zeros_like(x, name=name))


def conj(x, name=None):
    """The complex conjugate of each element; a real tensor is returned as is."""
    return _complex_part("Conj", x, name, lambda x: x)


def angle(input, name=None):  # noqa: A002 - TF1's argument name
    """The argument of each element, in [-pi, pi] (float32 for complex64); for a real tensor pi
    where it is negative, else 0."""
    return _complex_part("Angle", input, name, lambda x: array_ops.where(
        less(x, array_ops.zeros_like(x)), np.pi * array_ops.ones_like(x), array_ops.zeros_like(x),
        name=name))


# -- binary arithmetic ---------------------------------------------------------------------------
register_op("Add", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: x + y, grad=lambda op, g: [g, g])
register_op("Sub", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: x - y, grad=lambda op, g: [g, -g])
register_op("Mul", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: x * y,
            grad=lambda op, g: [g * conj(op.inputs[1]), conj(op.inputs[0]) * g])


def add(x, y, name=None):
    """``x + y`` elementwise, with numpy broadcasting."""
    return _binary("Add", x, y, name)


def subtract(x, y, name=None):
    """``x - y`` elementwise, with numpy broadcasting."""
    return _binary("Sub", x, y, name)


def multiply(x, y, name=None):
    """``x * y`` elementwise, with numpy broadcasting."""
    return _binary("Mul", x, y, name)


sub = subtract
mul = multiply


def _realdiv_grad(op, g):
    x, y = conj(op.inputs[0]), conj(op.inputs[1])
    return [g / y, -g * x / (y * y)]


# For integer inputs (only through tf.realdiv) the quotient truncates toward zero, as TF1's C++.
register_op("RealDiv", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: ctx.xp.true_divide(x, y).astype(x.dtype, copy=False),
            grad=_realdiv_grad)


def realdiv(x, y, name=None):
    """``x / y`` without casting integers (their quotient truncates toward zero)."""
    return _binary("RealDiv", x, y, name)


# TF1's __truediv__: integers are divided in this float type (None: already floating).
_TRUEDIV_TABLE = {
    _dtypes.uint8: _dtypes.float32, _dtypes.int8: _dtypes.float32, _dtypes.int16: _dtypes.float32,
    _dtypes.uint16: _dtypes.float32, _dtypes.int32: _dtypes.float64, _dtypes.int64: _dtypes.float64,
    _dtypes.uint32: _dtypes.float64, _dtypes.uint64: _dtypes.float64,
}


def truediv(x, y, name=None):
    """``x / y`` as floats: (u)int8/(u)int16 are cast to float32, (u)int32/(u)int64 to float64
    (TF1).

    Example: ``tf.truediv(tf.constant(7), tf.constant(2))`` evaluates to ``3.5 (float64)``.
    """
    with _operands(name or "truediv", x, y) as (scope, x, y):
        check_same_dtype("truediv", x, y)
        float_type = _TRUEDIV_TABLE.get(x.dtype)
        if float_type is not None:
            x, y = cast(x, float_type), cast(y, float_type)
        elif not (x.dtype.is_floating or x.dtype.is_complex):
            raise TypeError("Invalid dtype %s in __truediv__ (%s / %s): expected an integer, "
                            "floating or complex type" % (x.dtype.name, x.name, y.name))
        return _make_binary("RealDiv", x, y, scope)


def divide(x, y, name=None):
    """``x / y`` with Python 3 semantics (TF1's ``tf.divide`` is ``x / y``): see ``truediv``."""
    return truediv(x, y, name or "truediv")


def div(x, y, name=None):
    """TF1's ``tf.div`` (Python 2 division): floor division for ints, true division for floats."""
    with _operands(name or "div", x, y) as (scope, x, y):
        return _make_binary("RealDiv" if x.dtype.is_floating or x.dtype.is_complex else "FloorDiv",
                            x, y, scope)


def _check_integer_divisor(y):
    if y.dtype.kind in "iu" and not y.all():
        raise errors.InvalidArgumentError(None, None, "Integer division by zero")


def _floordiv_kernel(ctx, x, y):
    _check_integer_divisor(y)
    return ctx.xp.floor_divide(x, y)


register_op("FloorDiv", shape=broadcast_shape, broadcast=True, kernel=_floordiv_kernel, grad=None)


def floordiv(x, y, name=None):
    """``x // y``: the quotient rounded toward negative infinity (ints and floats)."""
    return _binary("FloorDiv", x, y, name or "floordiv")


def _floormod_kernel(ctx, x, y):
    _check_integer_divisor(y)
    return ctx.xp.mod(x, y)


register_op("FloorMod", shape=broadcast_shape, broadcast=True, kernel=_floormod_kernel,
            grad=lambda op, g: [g, -g * floordiv(op.inputs[0], op.inputs[1])])


def floormod(x, y, name=None):
    """``x % y`` with the sign of ``y`` (Python's rule): ``x == floordiv(x, y) * y + floormod(x, y)``."""
    return _binary("FloorMod", x, y, name)


mod = floormod


def _truncatediv_kernel(ctx, x, y):
    _check_integer_divisor(y)
    xp = ctx.xp
    if x.dtype.kind == "f":
        return xp.trunc(x / y)
    quotient = xp.floor_divide(x, y)
    # C's division rounds toward zero: one more where the floored quotient was rounded down.
    return quotient + ((xp.mod(x, y) != 0) & ((x < 0) != (y < 0))).astype(quotient.dtype)


register_op("TruncateDiv", shape=broadcast_shape, broadcast=True, kernel=_truncatediv_kernel,
            grad=None)


def _truncatemod_kernel(ctx, x, y):
    _check_integer_divisor(y)
    return ctx.xp.fmod(x, y)


# TF registers no gradient for TruncateMod: differentiating through it is an error, as in TF.
register_op("TruncateMod", shape=broadcast_shape, broadcast=True, kernel=_truncatemod_kernel)


def truncatediv(x, y, name=None):
    """``x / y`` rounded toward zero, as C does (``tf.floordiv`` rounds toward -inf).

    Example: ``tf.truncatediv([7, -7], [2, 2])`` evaluates to ``[3, -3]``.
    """
    return _binary("TruncateDiv", x, y, name)


def truncatemod(x, y, name=None):
    """The remainder of ``truncatediv``: the sign of ``x`` (C's ``%``, ``fmod``), where
    ``tf.floormod`` takes the sign of ``y``.

    Example: ``tf.truncatemod([7, -7], [2, 2])`` evaluates to ``[1, -1]``.
    """
    return _binary("TruncateMod", x, y, name)


def _pow_grad(op, g):
    x, y, z = conj(op.inputs[0]), conj(op.inputs[1]), conj(op.outputs[0])
    # d/dy x**y = x**y * log(x), taken as 0 where x <= 0 (x == 0 if complex, as TF1); log never
    # sees those. Gradient rules select with 0/1 masks (x * mask): no NaN can leak from the other
    # branch. A complex x is selected with where: a mask would turn -0j into +0j, and log's
    # branch (+-pi i for a negative real x) with it.
    if x.dtype.is_complex:
        nonzero = not_equal(x, 0.0)
        safe_x = array_ops.where(nonzero, x, array_ops.ones_like(x))
        log_x = array_ops.where(nonzero, log(safe_x), array_ops.zeros_like(x))
    else:
        positive = cast(greater(x, 0.0), x.dtype)
        log_x = log(x * positive + (1.0 - positive))
    return [g * y * pow(x, y - 1.0), g * z * log_x]


register_op("Pow", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: ctx.xp.power(x, y), grad=_pow_grad)


def pow(x, y, name=None):  # noqa: A001 - TF1's public name
    """``x ** y`` elementwise (integers to negative integer powers are an error)."""
    return _binary("Pow", x, y, name)


def _max_min_grad(x_wins):
    # The gradient goes to the selected input; on ties to x (TF1's rule).
    def grad(op, g):
        x, y = op.inputs
        to_x = cast(x_wins(x, y), g.dtype)
        return [g * to_x, g * (1.0 - to_x)]
    return grad


register_op("Maximum", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: ctx.xp.maximum(x, y),
            grad=_max_min_grad(lambda x, y: greater_equal(x, y)))
register_op("Minimum", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: ctx.xp.minimum(x, y),
            grad=_max_min_grad(lambda x, y: less_equal(x, y)))


def maximum(x, y, name=None):
    """The elementwise maximum of ``x`` and ``y`` (broadcasting).

    Example: ``tf.maximum(tf.constant([1.0, 5.0]), 3.0)`` evaluates to ``[3., 5.]``.
    """
    return _binary("Maximum", x, y, name)


def minimum(x, y, name=None):
    """The elementwise minimum of ``x`` and ``y`` (broadcasting)."""
    return _binary("Minimum", x, y, name)


def _squared_difference_kernel(ctx, x, y):
    d = x - y
    if d.dtype.kind == "c":
        return d * d.conj()   # TF1's: |x - y|**2, as a complex number
    d *= d  # in place: x - y is a fresh array (or an immutable scalar, then simply rebound)
    return d


def _squared_difference_grad(op, g):
    # TF's rule: for complex inputs (a real |x - y|**2 as a complex number) it keeps the imaginary
    # part of g, which the conjugate convention would drop; zps gives TF's numbers.
    x, y = op.inputs
    gx = g * 2.0 * (x - y)
    return [gx, -gx]


register_op("SquaredDifference", shape=broadcast_shape, broadcast=True,
            kernel=_squared_difference_kernel, grad=_squared_difference_grad)


def squared_difference(x, y, name=None):
    """``(x - y) ** 2`` elementwise (broadcasting)."""
    return _binary("SquaredDifference", x, y, name)


def scalar_mul(scalar, x, name=None):
    """``scalar * x`` for a scalar (0-d) ``scalar``; raises ValueError for anything else."""
    x = convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=x.dtype)
    if scalar.get_shape().ndims != 0:
        raise ValueError("Only scalar multiply works, got shape %s for %s"
                         % (scalar.get_shape(), scalar.name))
    return multiply(scalar, x, name)


# -- unary functions -----------------------------------------------------------------------------
register_op("Neg", shape=same_shape, kernel=lambda ctx, x: -x, grad=lambda op, g: [-g])


def negative(x, name=None):
    """``-x`` elementwise."""
    return _unary("Neg", x, name)


neg = negative

register_op("Square", shape=same_shape, kernel=lambda ctx, x: x * x,
            grad=lambda op, g: [g * (conj(op.inputs[0]) * 2.0)])


def square(x, name=None):
    """``x * x`` elementwise."""
    return _unary("Square", x, name)


register_op("Abs", shape=same_shape, kernel=lambda ctx, x: ctx.xp.abs(x),
            grad=lambda op, g: [g * sign(op.inputs[0])])


def abs(x, name=None):  # noqa: A001 - TF1's public name
    """``|x|`` elementwise; the modulus of complex numbers, as a real tensor (TF1's ComplexAbs)."""
    x = convert_to_tensor(x)
    if x.dtype.is_complex:
        return make_op("ComplexAbs", [x], name=name or "Abs")
    return _unary("Abs", x, name)


def _sign_kernel(ctx, x):
    xp = ctx.xp
    if x.dtype.kind != "c":
        return xp.sign(x)
    # z / |z| (0 at 0), as TF; numpy before 2.0 gives the sign of the real part instead.
    modulus = xp.abs(x)
    return xp.where(modulus == 0, 0, x / xp.where(modulus == 0, 1, modulus)).astype(x.dtype)


register_op("Sign", shape=same_shape, kernel=_sign_kernel,
            grad=lambda op, g: [array_ops.zeros_like(op.inputs[0])])


def sign(x, name=None):
    """-1, 0 or 1 by the sign of each element, ``z / |z|`` (0 at 0) for complex numbers (its
    gradient is zero, as TF1's)."""
    return _unary("Sign", x, name)


register_op("Sqrt", shape=same_shape, kernel=lambda ctx, x: ctx.xp.sqrt(x),
            grad=lambda op, g: [g * 0.5 / conj(op.outputs[0])])


def sqrt(x, name=None):
    """The square root of each element."""
    return _unary("Sqrt", x, name, floats_only=True, complex_ok=True)


def _rsqrt_kernel(ctx, x):
    # TF's complex rsqrt takes a negative real number with imaginary part -0 as one with +0 (the
    # +i side of sqrt's cut): x + 0 turns -0j into +0j. Real x keep rsqrt(-0.0) = -inf.
    return 1 / ctx.xp.sqrt(x + 0 if x.dtype.kind == "c" else x)


register_op("Rsqrt", shape=same_shape, kernel=_rsqrt_kernel,
            grad=lambda op, g: [g * -0.5 * conj(op.outputs[0] * op.outputs[0] * op.outputs[0])])


def rsqrt(x, name=None):
    """``1 / sqrt(x)`` elementwise."""
    return _unary("Rsqrt", x, name, floats_only=True, complex_ok=True)


register_op("Exp", shape=same_shape, kernel=lambda ctx, x: ctx.xp.exp(x),
            grad=lambda op, g: [g * conj(op.outputs[0])])


def exp(x, name=None):
    """``e ** x`` elementwise."""
    return _unary("Exp", x, name, floats_only=True, complex_ok=True)


register_op("Log", shape=same_shape, kernel=lambda ctx, x: ctx.xp.log(x),
            grad=lambda op, g: [g / conj(op.inputs[0])])


def log(x, name=None):
    """The natural logarithm of each element."""
    return _unary("Log", x, name, floats_only=True, complex_ok=True)


register_op("Log1p", shape=same_shape, kernel=lambda ctx, x: ctx.xp.log1p(x),
            grad=lambda op, g: [g / (conj(op.inputs[0]) + 1.0)])


def log1p(x, name=None):
    """``log(1 + x)`` elementwise, accurate for small ``x``."""
    return _unary("Log1p", x, name, floats_only=True, complex_ok=True)


register_op("Tanh", shape=same_shape, kernel=lambda ctx, x: ctx.xp.tanh(x),
            grad=lambda op, g: [g * conj(1.0 - op.outputs[0] * op.outputs[0])])


def tanh(x, name=None):
    """The hyperbolic tangent of each element."""
    return _unary("Tanh", x, name, floats_only=True, complex_ok=True)


def _sigmoid_kernel(ctx, x):
    xp = ctx.xp
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    # exp of a non-positive number never overflows, and e/(1+e) keeps precision for x << 0.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1, e) / (1 + e)


register_op("Sigmoid", shape=same_shape, kernel=_sigmoid_kernel,
            grad=lambda op, g: [g * conj(op.outputs[0] * (1.0 - op.outputs[0]))])


def sigmoid(x, name=None):
    """``1 / (1 + exp(-x))`` elementwise, computed without overflow."""
    return _unary("Sigmoid", x, name, floats_only=True, complex_ok=True)


def log_sigmoid(x, name=None):
    """``log(1 / (1 + exp(-x)))`` elementwise, as TF1: ``-softplus(-x)``, without overflow.

    Example: ``tf.log_sigmoid(tf.constant([0.0, -1000.0]))`` evaluates to ``[-0.6931472, -1000.]``.
    """
    from zps.ops.nn_ops import softplus  # nn_ops imports this module
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "LogSigmoid") as scope:
        return negative(softplus(-x), name=scope)


register_op("Reciprocal", shape=same_shape, kernel=lambda ctx, x: ctx.xp.reciprocal(x),
            grad=lambda op, g: [-g * conj(op.outputs[0] * op.outputs[0])])


def reciprocal(x, name=None):
    """``1 / x`` elementwise (integers truncate, as TF1's)."""
    return _unary("Reciprocal", x, name)


# Floor, Ceil and Round are piecewise constant: TF1 gives them no gradient.
register_op("Floor", shape=same_shape, kernel=lambda ctx, x: ctx.xp.floor(x), grad=None)
register_op("Ceil", shape=same_shape, kernel=lambda ctx, x: ctx.xp.ceil(x), grad=None)
register_op("Round", shape=same_shape, kernel=lambda ctx, x: ctx.xp.round(x), grad=None)


def floor(x, name=None):
    """The largest integer not greater than each element."""
    return _unary("Floor", x, name, floats_only=True)


def ceil(x, name=None):
    """The smallest integer not less than each element."""
    return _unary("Ceil", x, name, floats_only=True)


def round(x, name=None):  # noqa: A001 - TF1's public name
    """Each element rounded to the nearest integer, halves to even (integers pass through)."""
    x = convert_to_tensor(x)
    return x if x.dtype.is_integer else _unary("Round", x, name)


_erf_ufunc = np.frompyfunc(math.erf, 1, 1)

register_op("Erf", shape=same_shape,
            kernels={"numpy": lambda ctx, x: np.asarray(_erf_ufunc(x), dtype=x.dtype)},
            grad=lambda op, g: [g * (2.0 / math.sqrt(math.pi)) * exp(-square(op.inputs[0]))])


def erf(x, name=None):
    """The Gauss error function of each element."""
    return _unary("Erf", x, name, floats_only=True)


_erfc_ufunc = np.frompyfunc(math.erfc, 1, 1)

register_op("Erfc", shape=same_shape,
            kernels={"numpy": lambda ctx, x: np.asarray(_erfc_ufunc(x), dtype=x.dtype)},
            grad=lambda op, g: [g * (-2.0 / math.sqrt(math.pi)) * exp(-square(op.inputs[0]))])


def erfc(x, name=None):
    """``1 - erf(x)`` elementwise, accurate where erf(x) is close to 1."""
    return _unary("Erfc", x, name, floats_only=True)


register_op("Expm1", shape=same_shape, kernel=lambda ctx, x: ctx.xp.expm1(x),
            grad=lambda op, g: [g * exp(conj(op.inputs[0]))])


def expm1(x, name=None):
    """``exp(x) - 1`` elementwise, accurate for small ``x``."""
    return _unary("Expm1", x, name, floats_only=True, complex_ok=True)


# Trigonometric and hyperbolic functions: numpy's ufuncs, TF1's gradients. Complex inputs take
# numpy's principal branches, which are TF's, also on each side of the cuts (by the zero's sign).
register_op("Sin", shape=same_shape, kernel=lambda ctx, x: ctx.xp.sin(x),
            grad=lambda op, g: [g * cos(conj(op.inputs[0]))])
register_op("Cos", shape=same_shape, kernel=lambda ctx, x: ctx.xp.cos(x),
            grad=lambda op, g: [-g * sin(conj(op.inputs[0]))])
register_op("Tan", shape=same_shape, kernel=lambda ctx, x: ctx.xp.tan(x),
            grad=lambda op, g: [g * square(reciprocal(cos(conj(op.inputs[0]))))])
register_op("Asin", shape=same_shape, kernel=lambda ctx, x: ctx.xp.arcsin(x),
            grad=lambda op, g: [g * reciprocal(sqrt(1.0 - square(conj(op.inputs[0]))))])
register_op("Acos", shape=same_shape, kernel=lambda ctx, x: ctx.xp.arccos(x),
            grad=lambda op, g: [-g * reciprocal(sqrt(1.0 - square(conj(op.inputs[0]))))])
register_op("Atan", shape=same_shape, kernel=lambda ctx, x: ctx.xp.arctan(x),
            grad=lambda op, g: [g * reciprocal(1.0 + square(conj(op.inputs[0])))])
register_op("Sinh", shape=same_shape, kernel=lambda ctx, x: ctx.xp.sinh(x),
            grad=lambda op, g: [g * cosh(conj(op.inputs[0]))])
register_op("Cosh", shape=same_shape, kernel=lambda ctx, x: ctx.xp.cosh(x),
            grad=lambda op, g: [g * sinh(conj(op.inputs[0]))])


def sin(x, name=None):
    """The sine of each element (radians)."""
    return _unary("Sin", x, name, floats_only=True, complex_ok=True)


def cos(x, name=None):
    """The cosine of each element (radians)."""
    return _unary("Cos", x, name, floats_only=True, complex_ok=True)


def tan(x, name=None):
    """The tangent of each element (radians)."""
    return _unary("Tan", x, name, floats_only=True, complex_ok=True)


def asin(x, name=None):
    """The arcsine of each element, in [-pi/2, pi/2] (nan outside [-1, 1] for real ``x``)."""
    return _unary("Asin", x, name, floats_only=True, complex_ok=True)


def acos(x, name=None):
    """The arccosine of each element, in [0, pi] (nan outside [-1, 1] for real ``x``)."""
    return _unary("Acos", x, name, floats_only=True, complex_ok=True)


def atan(x, name=None):
    """The arctangent of each element, in (-pi/2, pi/2)."""
    return _unary("Atan", x, name, floats_only=True, complex_ok=True)


def sinh(x, name=None):
    """The hyperbolic sine of each element."""
    return _unary("Sinh", x, name, floats_only=True, complex_ok=True)


def cosh(x, name=None):
    """The hyperbolic cosine of each element."""
    return _unary("Cosh", x, name, floats_only=True, complex_ok=True)


def _atan2_grad(op, g):
    y, x = op.inputs
    denom = square(x) + square(y)
    return [g * x / denom, -g * y / denom]


register_op("Atan2", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, y, x: ctx.xp.arctan2(y, x), grad=_atan2_grad)


def atan2(y, x, name=None):
    """The angle of the point ``(x, y)``, in [-pi, pi], elementwise (broadcasting); note the
    argument order, ``y`` first (TF1's, numpy's)."""
    with _operands(name or "Atan2", y, x, names=("y", "x")) as (scope, y, x):
        if not y.dtype.is_floating:
            raise TypeError("Value passed to parameter 'y' of Atan2 has DataType %s not in list "
                            "of allowed values: %s (%s). Cast it first, e.g. tf.cast(y, "
                            "tf.float32)." % (y.dtype.name, _FLOATS, y.name))
        return _make_binary("Atan2", y, x, scope)


def div_no_nan(x, y, name=None):
    """``x / y``, and 0 where ``y`` is 0 (TF1's ``div_no_nan``): no inf or nan in the values or
    in their gradients (the division only ever sees a non-zero ``y``)."""
    x, y = to_tensors(x, y)
    nonzero = not_equal(y, 0.0)
    quotient = x / array_ops.where(nonzero, y, array_ops.ones_like(y))
    return array_ops.where(nonzero, quotient, array_ops.zeros_like(quotient), name=name)


register_op("IsFinite", dtype=bool_dtype, shape=same_shape,
            kernel=lambda ctx, x: ctx.xp.isfinite(x), grad=None)
register_op("IsNan", dtype=bool_dtype, shape=same_shape,
            kernel=lambda ctx, x: ctx.xp.isnan(x), grad=None)
register_op("IsInf", dtype=bool_dtype, shape=same_shape,
            kernel=lambda ctx, x: ctx.xp.isinf(x), grad=None)


def is_finite(x, name=None):
    """True where ``x`` is neither infinite nor NaN."""
    return _unary("IsFinite", x, name, floats_only=True)


def is_nan(x, name=None):
    """True where ``x`` is NaN."""
    return _unary("IsNan", x, name, floats_only=True)


def is_inf(x, name=None):
    """True where ``x`` is +inf or -inf."""
    return _unary("IsInf", x, name, floats_only=True)


# -- comparisons and logic (bool outputs, no gradient) -------------------------------------------
def _register_predicate(op_type, kernel):
    register_op(op_type, dtype=bool_dtype, shape=broadcast_shape, kernel=kernel, grad=None)


_register_predicate("Equal", lambda ctx, x, y: ctx.xp.equal(x, y))
_register_predicate("NotEqual", lambda ctx, x, y: ctx.xp.not_equal(x, y))
_register_predicate("Less", lambda ctx, x, y: ctx.xp.less(x, y))
_register_predicate("LessEqual", lambda ctx, x, y: ctx.xp.less_equal(x, y))
_register_predicate("Greater", lambda ctx, x, y: ctx.xp.greater(x, y))
_register_predicate("GreaterEqual", lambda ctx, x, y: ctx.xp.greater_equal(x, y))
_register_predicate("LogicalAnd", lambda ctx, x, y: ctx.xp.logical_and(x, y))
_register_predicate("LogicalOr", lambda ctx, x, y: ctx.xp.logical_or(x, y))
register_op("LogicalNot", shape=same_shape, kernel=lambda ctx, x: ctx.xp.logical_not(x), grad=None)


def equal(x, y, name=None):
    """``x == y`` elementwise (bool, broadcasting)."""
    return _binary("Equal", x, y, name)


def not_equal(x, y, name=None):
    """``x != y`` elementwise (bool, broadcasting)."""
    return _binary("NotEqual", x, y, name)


def less(x, y, name=None):
    """``x < y`` elementwise (bool, broadcasting)."""
    return _binary("Less", x, y, name)


def less_equal(x, y, name=None):
    """``x <= y`` elementwise (bool, broadcasting)."""
    return _binary("LessEqual", x, y, name)


def greater(x, y, name=None):
    """``x > y`` elementwise (bool, broadcasting)."""
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name=None):
    """``x >= y`` elementwise (bool, broadcasting)."""
    return _binary("GreaterEqual", x, y, name)


def logical_and(x, y, name=None):
    """``x AND y`` of bool tensors (broadcasting)."""
    with _operands(name or "LogicalAnd", x, y) as (scope, x, y):
        _check_bool("LogicalAnd", x, y)
        return make_op("LogicalAnd", [x, y], name=scope)


def logical_or(x, y, name=None):
    """``x OR y`` of bool tensors (broadcasting)."""
    with _operands(name or "LogicalOr", x, y) as (scope, x, y):
        _check_bool("LogicalOr", x, y)
        return make_op("LogicalOr", [x, y], name=scope)


def logical_xor(x, y, name="LogicalXor"):
    """``x XOR y`` of bool tensors, as TF1: ``(x | y) & ~(x & y)``."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def logical_not(x, name=None):
    """``NOT x`` of a bool tensor."""
    x = convert_to_tensor(x)
    _check_bool("LogicalNot", x)
    return make_op("LogicalNot", [x], name=name or "LogicalNot")


# -- AddN ----------------------------------------------------------------------------------------
def _add_n_kernel(ctx, *xs):
    for i, x in enumerate(xs[1:], 1):
        if x.shape != xs[0].shape:   # TF1's AddN sums same-shaped tensors only (no broadcast)
            raise errors.InvalidArgumentError(
                None, None, "AddN: inputs must have the same shape: input 0 is %s, input %d is %s"
                % (list(xs[0].shape), i, list(x.shape)))
    out = xs[0] + xs[1]
    for x in xs[2:]:
        out += x
    return out


register_op("AddN", shape=same_shape, kernel=_add_n_kernel,
            grad=lambda op, g: [g] * len(op.inputs))


def add_n(inputs, name=None):
    """The elementwise sum of a list of same-shaped tensors."""
    inputs = to_tensors(*inputs)
    if not inputs:
        raise ValueError("add_n needs at least one input")
    shape = inputs[0].get_shape()
    for t in inputs[1:]:
        check_same_dtype("AddN", inputs[0], t)
        if not shape.is_compatible_with(t.get_shape()):
            raise ValueError("add_n: inputs must have the same shape, got %s and %s (%s, %s)"
                             % (inputs[0].get_shape(), t.get_shape(), inputs[0].name, t.name))
        shape = shape.merge_with(t.get_shape())
    if len(inputs) == 1:
        return array_ops.identity(inputs[0], name=name)
    return make_op("AddN", inputs, name=name or "AddN")


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The elementwise sum of a list of same-shaped, same-dtype tensors (TF1's ``accumulate_n``,
    here ``add_n``: the sum is the same, computed at once); ``shape`` and ``tensor_dtype``, when
    given, must agree with the inputs.

    Example: ``tf.accumulate_n([[1.0, 2.0], [3.0, 4.0]])`` evaluates to ``[4., 6.]``.
    """
    error = "inputs must be a list of at least one Tensor with the same dtype and shape"
    if not inputs or not isinstance(inputs, list | tuple):
        raise ValueError(error)
    inputs = [convert_to_tensor(t) for t in inputs]
    if any(t.dtype != inputs[0].dtype for t in inputs):
        raise ValueError(error)
    merged = TensorShape(shape) if shape is not None else unknown_shape()
    for t in inputs:
        if not merged.is_compatible_with(t.get_shape()):
            raise ValueError("Shapes %s and %s are not compatible" % (merged, t.get_shape()))
        merged = merged.merge_with(t.get_shape())
    if tensor_dtype is not None and _dtypes.as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError("The `tensor_dtype` argument is %s, but `input` is of type %s. These must "
                        "be equal. Try casting the input to the desired type."
                        % (_dtypes.as_dtype(tensor_dtype).name, inputs[0].dtype.name))
    if len(inputs) == 1:
        return inputs[0] if name is None else array_ops.identity(inputs[0], name=name)
    return add_n(inputs, name=name)


# -- MatMul --------------------------------------------------------------------------------------
def _matmul_shape(op):
    a, b = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]
    if a.ndims is not None and a.ndims != 2 or b.ndims is not None and b.ndims != 2:
        raise ValueError("Shape must be rank 2 but is rank %s for MatMul '%s' with input shapes "
                         "%s, %s" % (a.ndims if a.ndims != 2 else b.ndims, op.name, a, b))
    ad = a.as_list() if a.ndims is not None else [None, None]
    bd = b.as_list() if b.ndims is not None else [None, None]
    m, ka = (ad[1], ad[0]) if ta else (ad[0], ad[1])
    kb, n = (bd[1], bd[0]) if tb else (bd[0], bd[1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError("Dimensions must be equal, but are %d and %d for MatMul '%s' with input "
                         "shapes %s, %s" % (ka, kb, op.name, a, b))
    return TensorShape([m, n])


def _matmul_kernel(ctx, a, b, transpose_a, transpose_b):
    return (a.T if transpose_a else a) @ (b.T if transpose_b else b)


def _matmul_grad(op, g):
    a, b = conj(op.inputs[0]), conj(op.inputs[1])
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]
    if not ta and not tb:
        return [matmul(g, b, transpose_b=True), matmul(a, g, transpose_a=True)]
    if not ta and tb:
        return [matmul(g, b), matmul(g, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, g, transpose_b=True), matmul(a, g)]
    return [matmul(b, g, transpose_a=True, transpose_b=True),
            matmul(g, a, transpose_a=True, transpose_b=True)]


register_op("MatMul", shape=_matmul_shape, kernel=_matmul_kernel, grad=_matmul_grad)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """Matrix product of two rank-2 tensors, optionally transposing either; tensors of higher
    (or not yet known) rank are batches of matrices, their leading dimensions broadcast, as TF1
    does with BatchMatMulV2.

    >>> import numpy as np, zps as tf
    >>> tf.Session().run(tf.matmul(np.ones([5, 2, 3]), np.ones([3, 4]))).shape
    (5, 2, 4)
    """
    with _operands(name or "MatMul", a, b, names=("a", "b")) as (scope, a, b):
        if a.get_shape().ndims != 2 or b.get_shape().ndims != 2:
            from zps.ops import linalg_ops  # linalg_ops imports this module
            return linalg_ops.matmul(a, b, transpose_a, transpose_b, adjoint_a, adjoint_b,
                                     name=scope)
        check_same_dtype("MatMul", a, b)
        # MatMul's attrs transpose only: an adjoint of a complex matrix conjugates it first.
        a = conj(a) if adjoint_a else a
        b = conj(b) if adjoint_b else b
        return make_op("MatMul", [a, b], name=scope, transpose_a=bool(transpose_a or adjoint_a),
                       transpose_b=bool(transpose_b or adjoint_b))


# -- reductions ----------------------------------------------------------------------------------
# Every reduction op has attrs ``axis`` (sorted tuple of non-negative ints, or None: all axes) and
# ``keepdims``; gradient rules reshape output-shaped tensors to the keepdims shape so that they
# broadcast against the input.
def _reduce_shape(op):
    s = op.inputs[0].get_shape()
    axes, keep = op._attrs["axis"], op._attrs["keepdims"]
    if s.ndims is None:  # a reduction over every axis is a scalar whatever the rank
        return TensorShape([]) if axes is None and not keep else unknown_shape()
    dims = s.as_list()
    if axes is None:
        return TensorShape([1] * len(dims) if keep else [])
    return TensorShape([1 if i in axes else d for i, d in enumerate(dims)] if keep
                       else [d for i, d in enumerate(dims) if i not in axes])


def _reduce_grad_to_input(op, g):
    """``g`` (shaped as the reduction's output) reshaped to broadcast against its input."""
    x = op.inputs[0]
    if op._attrs["keepdims"] or op._attrs["axis"] is None and not x.get_shape().ndims:
        return g
    return make_op("ReduceGradShape", [g, array_ops.shape(x)], axis=op._attrs["axis"])


def _resolved_axes(axis, rank):
    return None if axis is None else {a % rank for a in axis} if rank else set()


def _reduce_grad_shape_kernel(ctx, g, xshape, axis):
    axes = _resolved_axes(axis, len(xshape))
    keep = [1 if (axes is None or i in axes) else int(d) for i, d in enumerate(xshape)]
    return g.reshape(keep)


def _reduce_grad_shape_shape(op):
    xs = array_ops.shape_from_value(op.inputs[1])
    if xs.ndims is None:
        return unknown_shape()
    axes = _resolved_axes(op._attrs["axis"], xs.ndims)
    return TensorShape([1 if axes is None or i in axes else d for i, d in enumerate(xs.as_list())])


register_op("ReduceGradShape", shape=_reduce_grad_shape_shape, kernel=_reduce_grad_shape_kernel,
            grad=lambda op, g: [reduce_sum(g, axis=op._attrs["axis"])
                                if op._attrs["axis"] is not None else reduce_sum(g), None])


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices=None, keep_dims=None):
    x = convert_to_tensor(input_tensor)
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    if axis is None:
        axis = reduction_indices
    if keep_dims is not None:
        keepdims = keep_dims
    # With an unknown rank, negative axes stay negative: the kernels resolve them at run time.
    _check_real(op_type, x, arg="input")
    if op_type in ("Sum", "Prod", "Mean", "Max", "Min") and x.dtype.base_dtype == _dtypes.bool:
        raise TypeError("Value passed to parameter 'input' of %s has DataType bool not in list of "
                        "allowed values: numeric types (%s). Cast it first, e.g. "
                        "tf.reduce_sum(tf.cast(x, tf.int32))." % (op_type, x.name))
    axis = normalize_axis(const_axis(axis), x.get_shape().ndims, op_type)
    return make_op(op_type, [x], name=name or op_type, axis=axis, keepdims=bool(keepdims))


def _sum_grad(op, g):
    x = op.inputs[0]
    return [array_ops.broadcast_to(_reduce_grad_to_input(op, g), array_ops.shape(x))]


# In the input's dtype, as TF1's (numpy would sum small integers as int64, wrapping none).
register_op("Sum", shape=_reduce_shape,
            kernel=lambda ctx, x, axis, keepdims: ctx.xp.asarray(
                x.sum(axis=axis, keepdims=keepdims, dtype=x.dtype)),
            grad=_sum_grad)


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Sum over ``axis`` (all axes if None).

    Example: ``tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), axis=1)`` evaluates to ``[3, 7]``.
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _mean_kernel(ctx, x, axis, keepdims):
    if x.size == 0 and x.dtype.kind != "f":
        # TF1's integer mean over nothing is 0 (numpy's is nan, cast to the dtype's minimum).
        return ctx.xp.asarray(x.sum(axis=axis, keepdims=keepdims, dtype=x.dtype))
    if x.dtype.kind in "iu":
        # TF's integer mean: a sum in 64 bits (wrapping, as C++), divided toward zero; numpy's
        # float64 mean would round the sums of large int64/uint64 values.
        total = x.sum(axis=axis, keepdims=keepdims, dtype="u8" if x.dtype.kind == "u" else "i8")
        n = total.dtype.type(x.size // total.size)
        quotient = total // n
        if x.dtype.kind == "i":
            quotient += (quotient < 0) & (quotient * n != total)
        return ctx.xp.asarray(quotient, dtype=x.dtype)
    return ctx.xp.asarray(x.mean(axis=axis, keepdims=keepdims), dtype=x.dtype)


def _mean_grad(op, g):
    x = op.inputs[0]
    n = cast(make_op("ReducedSize", [array_ops.shape(x)], axis=op._attrs["axis"]), g.dtype)
    # Divided before it is broadcast (each element is the same g / n): the gradient is a view,
    # not an input-sized array written with one value (0.15 ms for a [4096, 64] mean).
    return [array_ops.broadcast_to(_reduce_grad_to_input(op, g) / n, array_ops.shape(x))]


def _reduced_size_kernel(ctx, xshape, axis):
    axes = _resolved_axes(axis, len(xshape))
    dims = [int(d) for i, d in enumerate(xshape) if axes is None or i in axes]
    return np.array(int(np.prod(dims)) if dims else 1, dtype=np.int32)


register_op("Mean", shape=_reduce_shape, kernel=_mean_kernel, grad=_mean_grad)
register_op("ReducedSize", dtype=lambda op: _dtypes.int32, shape=lambda op: TensorShape([]),
            kernel=_reduced_size_kernel, grad=None)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    """Mean over ``axis`` (all axes if None); integer means truncate, as TF1's."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _max_min_reduce_grad(op, g):
    # As TF1: the gradient is shared equally by all elements equal to the extreme value.
    x = op.inputs[0]
    y = _reduce_grad_to_input(op, op.outputs[0])
    indicators = cast(equal(y, x), g.dtype)
    num_selected = reduce_sum(indicators, axis=op._attrs["axis"], keepdims=True)
    return [indicators / num_selected * _reduce_grad_to_input(op, g)]


def _extreme_kernel(name, lowest):
    def kernel(ctx, x, axis, keepdims):
        if x.size:
            return ctx.xp.asarray(getattr(x, name)(axis=axis, keepdims=keepdims))
        # Over nothing, TF1's identity of the reduction: -inf (the dtype's lowest) for Max, +inf
        # (its highest) for Min, where numpy raises.
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        identity = (-np.inf if lowest else np.inf) if x.dtype.kind == "f" else \
            (info.min if lowest else info.max)
        out = getattr(np, name)(np.zeros(x.shape, x.dtype), axis=axis, keepdims=keepdims,
                                initial=identity)
        return ctx.xp.asarray(out)
    return kernel


register_op("Max", shape=_reduce_shape, grad=_max_min_reduce_grad, kernel=_extreme_kernel("max", True))
register_op("Min", shape=_reduce_shape, grad=_max_min_reduce_grad,
            kernel=_extreme_kernel("min", False))


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Maximum over ``axis`` (all axes if None); ties share the gradient equally."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Minimum over ``axis`` (all axes if None); ties share the gradient equally."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


register_op("Prod", shape=_reduce_shape,
            kernel=lambda ctx, x, axis, keepdims: ctx.xp.asarray(
                x.prod(axis=axis, keepdims=keepdims, dtype=x.dtype)),
            grad=lambda op, g: [_reduce_grad_to_input(op, g) * conj(
                make_op("ProdOfOthers", [op.inputs[0]], axis=op._attrs["axis"]))])


def _prod_of_others_kernel(ctx, x, axis):
    """Each element replaced by the product of the others of its reduction group.

    Built from exclusive cumulative products from both ends, never by dividing, so zeros are fine.
    """
    xp = ctx.xp
    axes = tuple(range(x.ndim)) if axis is None else axis
    front = tuple(range(len(axes)))
    moved = xp.moveaxis(x, axes, front)
    flat = moved.reshape((-1,) + moved.shape[len(axes):])
    out = xp.ones_like(flat)
    if flat.shape[0] > 1:
        out[1:] = xp.cumprod(flat[:-1], axis=0)
        out[:-1] *= xp.cumprod(flat[:0:-1], axis=0)[::-1]
    return xp.moveaxis(out.reshape(moved.shape), front, axes)


def _prod_of_others_grad(op, g):
    # d/dx_j sum_i g_i prod_{k != i} x_k = (sum_i g_i q_i - g_j q_j) / x_j: exact where x_j != 0.
    x = op.inputs[0]
    gq = g * op.outputs[0]
    return [(reduce_sum(gq, axis=op._attrs["axis"], keepdims=True) - gq) / x]


register_op("ProdOfOthers", shape=same_shape, kernel=_prod_of_others_kernel,
            grad=_prod_of_others_grad)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    """Product over ``axis`` (all axes if None); its gradient is exact also with zeros."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


register_op("Any", shape=_reduce_shape, grad=None,
            kernel=lambda ctx, x, axis, keepdims: ctx.xp.asarray(x.any(axis=axis, keepdims=keepdims)))
register_op("All", shape=_reduce_shape, grad=None,
            kernel=lambda ctx, x, axis, keepdims: ctx.xp.asarray(x.all(axis=axis, keepdims=keepdims)))


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical OR over ``axis`` of a bool tensor (all axes if None)."""
    x = convert_to_tensor(input_tensor)
    _check_bool("reduce_any", x)
    return _reduce("Any", x, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Logical AND over ``axis`` of a bool tensor (all axes if None)."""
    x = convert_to_tensor(input_tensor)
    _check_bool("reduce_all", x)
    return _reduce("All", x, axis, keepdims, name, reduction_indices, keep_dims)


def _logsumexp_kernel(ctx, x, axis, keepdims):
    xp = ctx.xp
    # Over nothing the answer is log(0) = -inf, as TF1's (numpy's max has no identity).
    m = x.max(axis=axis, keepdims=True) if x.size else x.sum(axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # an all -inf (or any +inf) group must not give inf - inf
    with np.errstate(divide="ignore"):  # log(0) = -inf is the answer for an all -inf group
        out = xp.log(xp.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axis)


register_op("ReduceLogSumExp", shape=_reduce_shape, kernel=_logsumexp_kernel,
            grad=lambda op, g: [_reduce_grad_to_input(op, g)
                                * exp(op.inputs[0] - _reduce_grad_to_input(op, op.outputs[0]))])


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """``log(sum(exp(x)))`` over ``axis``, computed without overflow (shifted by the maximum)."""
    x = convert_to_tensor(input_tensor)
    if not x.dtype.is_floating:
        raise TypeError("reduce_logsumexp takes a float tensor; %s has dtype %s"
                        % (x.name, x.dtype.name))
    return _reduce("ReduceLogSumExp", x, axis, keepdims, name or "ReduceLogSumExp",
                   reduction_indices, keep_dims)


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=_dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None):
    """The number of non-zero elements over ``axis`` (all axes if None), as ``dtype``."""
    x = convert_to_tensor(input_tensor)
    zero = "" if x.dtype == _dtypes.string else 0
    nonzero = cast(not_equal(x, zero), _dtypes.int64)
    counts = reduce_sum(nonzero, axis=axis, keepdims=keepdims, reduction_indices=reduction_indices,
                        keep_dims=keep_dims)
    return cast(counts, dtype, name=name or "count_nonzero")


# -- ArgMax, ArgMin ------------------------------------------------------------------------------
def _arg_reduce_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims is None:
        return unknown_shape()
    return TensorShape([d for i, d in enumerate(s.as_list()) if i != op._attrs["axis"]])


def _arg_kernel(largest):
    # TF's reducer starts from the lowest (argmin: highest) finite value at index 0 and moves on
    # to each strictly better value: NaN never wins, and neither does -inf or the lowest value
    # itself (argmax([nan, 1]) is 1, argmax([nan, -inf]) is 0). Those become -inf, then numpy's
    # first-best rule agrees.
    def kernel(ctx, x, axis, output_type):
        xp = ctx.xp
        if x.dtype.kind == "f":
            bound = xp.finfo(x.dtype).min if largest else xp.finfo(x.dtype).max
            beats = x > bound if largest else x < bound
            x = xp.where(beats, x, -xp.inf if largest else xp.inf).astype(x.dtype, copy=False)
        best = x.argmax(axis=axis) if largest else x.argmin(axis=axis)
        return xp.asarray(best, dtype=output_type.as_numpy_dtype)
    return kernel


register_op("ArgMax", dtype=lambda op: op._attrs["output_type"], shape=_arg_reduce_shape,
            kernel=_arg_kernel(largest=True), grad=None)
register_op("ArgMin", dtype=lambda op: op._attrs["output_type"], shape=_arg_reduce_shape,
            kernel=_arg_kernel(largest=False), grad=None)


def _arg_reduce(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    if axis is not None and dimension is not None:
        raise ValueError("Cannot specify both 'axis' and 'dimension'")
    axis = const_axis(dimension if axis is None else axis)
    axis = 0 if axis is None else axis
    if not isinstance(axis, int | np.integer):
        raise TypeError("%s takes one axis (an int), got %r" % (op_type, axis))
    axis = int(axis)
    output_type = _dtypes.as_dtype(output_type)
    if output_type not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("%s output_type must be int32 or int64, got %s" % (op_type, output_type.name))
    x = convert_to_tensor(input)
    _check_real(op_type, x, arg="input")
    ndims = x.get_shape().ndims
    if ndims == 0:
        raise ValueError("%s needs a tensor of rank >= 1, but %s is a scalar" % (op_type, x.name))
    if ndims is not None:
        axis = normalize_axis(axis, ndims, op_type)[0]
    return make_op(op_type, [x], name=name or op_type, axis=axis, output_type=output_type)


def argmax(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    """The index of the largest value along ``axis`` (default 0; the first one on ties; NaN is
    never the largest).

    Example: ``tf.argmax(tf.constant([[1, 9], [7, 3]]), axis=1)`` evaluates to ``[1, 0] (int64)``.
    """
    return _arg_reduce("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    """The index of the smallest value along ``axis`` (default 0; the first one on ties; NaN is
    never the smallest)."""
    return _arg_reduce("ArgMin", input, axis, name, dimension, output_type)


# -- Cumsum, Cumprod -----------------------------------------------------------------------------
# As TF1's ScanOp, a bad axis is found when the op runs (InvalidArgumentError), not when it is built.
def _scan_kernel(cumulate, identity):
    def kernel(ctx, x, axis, exclusive, reverse):
        if not isinstance(axis, int):
            raise errors.InvalidArgumentError(
                None, None, "ScanOp: axis must be a scalar, not %s" % list(axis))
        if not -x.ndim <= axis < x.ndim:
            raise errors.InvalidArgumentError(
                None, None, "ScanOp: Expected scan axis in the range [%d, %d), but got %d"
                % (-x.ndim, x.ndim, axis + x.ndim if axis < 0 else axis))
        xp = ctx.xp
        m = xp.moveaxis(x, axis, 0)
        if reverse:
            m = m[::-1]
        if exclusive:   # the identity first, the last element dropped (also for a length-0 axis)
            m = xp.concatenate([xp.full((1,) + m.shape[1:], identity, m.dtype), m])[:-1]
        out = cumulate(m, axis=0, dtype=m.dtype)
        return xp.moveaxis(out[::-1] if reverse else out, 0, axis)
    return kernel


def _cumprod_grad(op, g):
    # TF's _CumprodGrad: exact for non-zero x only (0 where x is 0, by div_no_nan).
    x, attrs = op.inputs[0], op._attrs
    prod = cumprod(x, attrs["axis"], exclusive=attrs["exclusive"], reverse=attrs["reverse"])
    out = cumsum(prod * g, attrs["axis"], exclusive=attrs["exclusive"], reverse=not attrs["reverse"])
    return [div_no_nan(out, x)]


register_op("Cumsum", shape=same_shape, kernel=_scan_kernel(lambda m, **kw: m.cumsum(**kw), 0),
            grad=lambda op, g: [cumsum(g, op._attrs["axis"], exclusive=op._attrs["exclusive"],
                                       reverse=not op._attrs["reverse"])])
register_op("Cumprod", shape=same_shape, kernel=_scan_kernel(lambda m, **kw: m.cumprod(**kw), 1),
            grad=_cumprod_grad)


def _scan(op_type, x, axis, exclusive, reverse, name):
    x = convert_to_tensor(x)
    if not (x.dtype.is_floating or x.dtype.is_integer or x.dtype.is_complex):
        raise TypeError("Value passed to parameter 'x' of %s has DataType %s not in list of allowed "
                        "values: numeric types (%s)" % (op_type, x.dtype.name, x.name))
    axis_type = axis.dtype if isinstance(axis, Tensor) else _dtypes.as_dtype(np.asarray(axis).dtype)
    if axis_type not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("Value passed to parameter 'axis' of %s has DataType %s not in list of "
                        "allowed values: int32, int64" % (op_type, axis_type.name))
    axis = const_axis(axis, "%s's axis" % op_type)
    axis = int(axis) if isinstance(axis, int | np.integer) else tuple(int(a) for a in axis)
    return make_op(op_type, [x], name=name or op_type, axis=axis, exclusive=bool(exclusive),
                   reverse=bool(reverse))


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """The cumulative sum of ``x`` along ``axis``; ``exclusive`` leaves out each element itself,
    ``reverse`` sums from the end.

    Example: ``tf.cumsum([1, 2, 3], exclusive=True, reverse=True)`` evaluates to ``[5, 3, 0]``.
    """
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """The cumulative product of ``x`` along ``axis`` (``exclusive``, ``reverse`` as in cumsum);
    its gradient, as TF's, is exact only where ``x`` is non-zero.

    Example: ``tf.cumprod([2, 3, 4], exclusive=True)`` evaluates to ``[1, 2, 6]``.
    """
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


# -- tensordot (composite), Einsum ---------------------------------------------------------------
def _tensordot_axes(a, b, axes):
    """The contracted axes of ``a`` and of ``b`` as lists of non-negative ints (TF1's rules)."""
    ranks = a.get_shape().ndims, b.get_shape().ndims
    if None in ranks:
        raise ValueError("tensordot needs inputs of known rank, got shapes %s and %s (%s, %s): "
                         "give the placeholders a shape" % (a.get_shape(), b.get_shape(),
                                                            a.name, b.name))
    if isinstance(axes, Tensor):   # TF1 also takes an int32 tensor: it must be a constant here
        value = constant_value(axes)
        if value is None:
            raise TypeError("tensordot's axes must be known when the graph is built (an int, a "
                            "pair of lists or a constant tensor); got the computed tensor %s"
                            % axes.name)
        axes = np.asarray(value).tolist()
    if isinstance(axes, int | np.integer):
        if axes < 0:
            raise ValueError("'axes' must be at least 0, got %d" % axes)
        if axes > ranks[0]:
            raise ValueError("'axes' must not be larger than the number of dimensions of tensor "
                             "%s (%d), got %d" % (a.name, ranks[0], axes))
        a_axes, b_axes = list(range(ranks[0] - axes, ranks[0])), list(range(axes))
    else:
        if len(axes) != 2:
            raise ValueError("'axes' must be an integer or have length 2, got %r" % (axes,))
        a_axes, b_axes = ([v] if isinstance(v, int | np.integer) else list(v) for v in axes)
        if len(a_axes) != len(b_axes):
            raise ValueError("Different number of contraction axes 'a' and 'b', %d != %d"
                             % (len(a_axes), len(b_axes)))
    out = []
    for t, ax, rank in ((a, a_axes, ranks[0]), (b, b_axes, ranks[1])):
        for i in ax:
            if not -rank <= i < rank:
                raise IndexError("tensordot axis %d is out of range for %s of rank %d"
                                 % (i, t.name, rank))
        out.append([int(i) % rank for i in ax])
    return out


def _tensordot_reshape(a, axes, flipped):
    """``a`` transposed and reshaped to a matrix (contracted axes last, or first if ``flipped``),
    and its free dimensions: Python ints if all known, else an int32 tensor; and static dims."""
    dims = a.get_shape().as_list()
    free = [i for i in range(len(dims)) if i not in axes]
    perm = axes + free if flipped else free + axes
    if perm != list(range(len(dims))):
        a = array_ops.transpose(a, perm)
    free_static = [dims[i] for i in free]
    n = len(axes) if flipped else len(free)
    if all(d is not None for d in dims):
        rows, cols = (int(np.prod([dims[i] for i in p], dtype=np.int64))
                      for p in (perm[:n], perm[n:]))
        free_dims = free_static
    else:
        shape = array_ops.shape(a)
        rows, cols = reduce_prod(shape[:n]), reduce_prod(shape[n:])
        free_dims = shape[n:] if flipped else shape[:n]
    new_shape = [rows, cols]
    if a.get_shape().as_list() != new_shape:
        a = array_ops.reshape(a, new_shape if isinstance(rows, int) else array_ops.stack(new_shape))
    return a, free_dims, free_static


def tensordot(a, b, axes, name=None):
    """The contraction of ``a`` and ``b`` over ``axes`` (numpy's tensordot): an int N (the last N
    axes of ``a`` with the first N of ``b``) or a pair of axis lists.

    Example: for ``a`` of shape [3, 4, 5] and ``b`` of shape [4, 3, 2],
    ``tf.tensordot(a, b, axes=[[1, 0], [0, 1]])`` has shape [5, 2].
    """
    a, b = to_tensors(a, b)
    with a.graph.name_scope(name or "Tensordot") as scope:
        a_axes, b_axes = _tensordot_axes(a, b, axes)
        a_mat, a_free, a_static = _tensordot_reshape(a, a_axes, flipped=False)
        b_mat, b_free, b_static = _tensordot_reshape(b, b_axes, flipped=True)
        product = matmul(a_mat, b_mat)
        if isinstance(a_free, list) and isinstance(b_free, list):
            if product.get_shape().as_list() == a_free + b_free:
                return product
            return array_ops.reshape(product, a_free + b_free, name=scope)
        free = [convert_to_tensor(d, dtype=_dtypes.int32) for d in (a_free, b_free)]
        product = array_ops.reshape(product, array_ops.concat(free, 0), name=scope)
        product.set_shape(a_static + b_static)
        return product


# (an input's labels may be empty: a scalar, as the gradient of a full sum 'ij->' has)
_EINSUM_FORMAT = re.compile(r"^([a-zA-Z,.]*)(->[a-zA-Z.]*)?$")


def _parse_einsum(equation, shapes):
    """TF1's parse of an einsum equation: (input labels, output labels), the ellipsis replaced
    by unused letters (so the rank of an input with '...' must be known)."""
    eq = equation.replace(" ", "")
    match = _EINSUM_FORMAT.match(eq)
    if not match:
        raise ValueError("Indices have incorrect format: %r (einsum equations are like "
                         "'ij,jk->ik': letters, ',' between inputs, optional '->' and output)"
                         % equation)
    ins = match.group(1).split(",")
    out = match.group(2)[2:] if match.group(2) else None
    if len(ins) != len(shapes):
        raise ValueError('Got %d arguments for equation "%s", expecting %d'
                         % (len(shapes), equation, len(ins)))
    ellipsis = ""
    if "..." in eq:
        unused = "".join(c for c in string.ascii_letters if c not in "".join(ins))
        for i, labels in enumerate(ins):
            if "..." not in labels:
                continue
            parts = labels.split("...")
            if len(parts) != 2:
                raise ValueError("Unable to resolve ellipsis in %r: more than one '...'" % labels)
            if shapes[i].ndims is None:
                raise ValueError("Unable to statically infer ellipsis axes of einsum input %d "
                                 "(%r): its rank is unknown; give it a shape" % (i, labels))
            n = shapes[i].ndims - len("".join(parts))
            if n < 0:
                raise ValueError("Ellipses lengths do not match: %r for an input of shape %s"
                                 % (labels, shapes[i]))
            ins[i] = labels.replace("...", unused[len(unused) - n:])
            ellipsis = max(ellipsis, unused[len(unused) - n:], key=len)
        if out is not None:
            out = out.replace("...", ellipsis)
    if any("." in s for s in ins + [out or ""]):
        raise ValueError("Period '.' found outside of an ellipsis in %r" % equation)
    if out is None:   # implicit: the ellipsis, then the labels used once, in alphabetical order
        counts = collections.Counter("".join(ins))
        out = ellipsis + "".join(sorted(c for c, k in counts.items()
                                        if k == 1 and c not in ellipsis))
    for c in out:
        if c not in "".join(ins) or out.count(c) > 1:
            raise ValueError("Invalid equation %r: output label %s %s" % (
                equation, c, "is in no input" if out.count(c) == 1 else "appears more than once"))
    return ins, out


def _einsum_dims(ins, shapes, where):
    """``{label: size}`` from the inputs' shapes; raises ValueError where two sizes differ."""
    sizes = {}
    for labels, shape in zip(ins, shapes):
        if shape is None:
            continue
        if len(shape) != len(labels):
            raise ValueError("einsum %s: input with labels %r has rank %d, not %d"
                             % (where, labels, len(shape), len(labels)))
        for c, d in zip(labels, shape):
            if d is not None and sizes.get(c) not in (None, d):
                raise ValueError("einsum %s: dimension mismatch on axis %s: found %d and %d"
                                 % (where, c, sizes[c], d))
            if d is not None:
                sizes[c] = d
    return sizes


def _einsum_shape(op):
    ins, out = op._attrs["equation"].split("->")
    shapes = [static_shape_or_none(t) for t in op.inputs]
    sizes = _einsum_dims(ins.split(","), shapes, "'%s' (%s)" % (op.name, op._attrs["equation"]))
    return TensorShape([sizes.get(c) for c in out])


def _einsum_kernel(ctx, *xs, equation):
    ins = equation.split("->")[0].split(",")
    try:
        _einsum_dims(ins, [x.shape for x in xs], equation)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    return ctx.xp.asarray(ctx.xp.einsum(equation, *xs)).astype(xs[0].dtype, copy=False)


def _distinct_labels(labels, x, used):
    """``labels`` of input ``x`` with each repeat of a label renamed to a letter not in ``used``,
    and for each renaming ``(the two labels, an identity matrix)``: an einsum reading a diagonal
    of ``x`` is the einsum of the renamed ``x`` times these identities."""
    fresh = (c for c in string.ascii_letters if c not in used)
    renamed, identities = "", []
    for axis, c in enumerate(labels):
        if c not in renamed:
            renamed += c
            continue
        d = next(fresh)
        renamed += d
        n = array_ops.range(array_ops.shape(x)[axis])
        identities.append((c + d, cast(equal(array_ops.expand_dims(n, 1), n), x.dtype)))
    return renamed, identities


def _einsum_grad(op, g):
    # The gradient of input i is the einsum of g with the other inputs, into the labels of i
    # (repeats renamed, see _distinct_labels); a label summed in input i alone is broadcast back.
    # The other inputs enter conjugated (TF's convention for complex gradients).
    ins, out = op._attrs["equation"].split("->")
    ins = ins.split(",")
    grads = []
    for i, x in enumerate(op.inputs):
        others = [j for j in range(len(ins)) if j != i]
        labels, identities = _distinct_labels(ins[i], x, set(op._attrs["equation"]))
        factors = [ins[j] for j in others] + [pair for pair, _ in identities]
        seen = set(out).union(*factors)
        kept = "".join(c for c in labels if c in seen)
        grad = einsum(",".join([out] + factors) + "->" + kept, g,
                      *[conj(op.inputs[j]) for j in others], *[eye for _, eye in identities])
        if kept != labels:
            for axis, c in enumerate(labels):
                if c not in seen:
                    grad = array_ops.expand_dims(grad, axis)
            grad = array_ops.broadcast_to(grad, array_ops.shape(x))
        grads.append(grad)
    return grads


register_op("Einsum", shape=_einsum_shape, kernel=_einsum_kernel, grad=_einsum_grad)


def einsum(equation, *inputs, **kwargs):
    """Einstein summation over ``inputs`` (numpy's einsum, TF1's rules): ``'ij,jk->ik'`` is a
    matrix product, ``'ij->j'`` a column sum, ``'...ij,...jk->...ik'`` a batched product, ``'ii'``
    a trace; without '->' the output is the ellipsis, then the labels used once, in alphabetical
    order.

    Example: ``tf.einsum('i,i->', [1.0, 2.0], [3.0, 4.0])`` evaluates to ``11.0``.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Invalid keyword arguments for einsum: %s. Expected: name."
                        % ", ".join(sorted(kwargs)))
    inputs = to_tensors(*inputs)
    for t in inputs[1:]:
        check_same_dtype("Einsum", inputs[0], t)
    ins, out = _parse_einsum(equation, [t.get_shape() for t in inputs])
    return make_op("Einsum", inputs, name=name or "einsum",
                   equation=",".join(ins) + "->" + out)


# -- Bincount, HistogramFixedWidth ---------------------------------------------------------------
def _bincount_kernel(ctx, arr, size, weights):
    size = int(size)
    if size < 0:
        raise errors.InvalidArgumentError(None, None, "size (%d) must be non-negative" % size)
    if weights.size and weights.shape != arr.shape:
        raise errors.InvalidArgumentError(
            None, None, "bincount: arr and weights must have the same shape, got %s and %s"
            % (list(arr.shape), list(weights.shape)))
    arr = arr.reshape(-1)
    if arr.size and arr.min() < 0:
        raise errors.InvalidArgumentError(None, None, "Input arr must be non-negative!")
    keep = arr < size   # values past maxlength are not counted
    counted = weights.reshape(-1)[keep] if weights.size else None
    return np.bincount(arr[keep], counted, minlength=size).astype(weights.dtype)


def _bincount_shape(op):
    size = constant_value(op.inputs[1])
    return TensorShape([None if size is None else int(size)])


# A host op (numpy's bincount): it has no GPU kernel.
register_op("Bincount", dtype=lambda op: op.inputs[2].dtype, shape=_bincount_shape,
            kernels={"numpy": _bincount_kernel}, grad=None)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32):
    """How often each value of the non-negative int32 ``arr`` occurs: a vector of length
    ``max(arr) + 1`` (0 if ``arr`` is empty), at least ``minlength``, at most ``maxlength``
    (larger values are not counted). With ``weights`` (shaped as ``arr``) bin i sums the weights
    of the values i, in the weights' dtype; else the counts are ``dtype``.

    Example: ``tf.bincount([1, 1, 3])`` evaluates to ``[0, 2, 0, 1] (int32)``.
    """
    arr = convert_to_tensor(arr, dtype=_dtypes.int32)
    with arr.graph.name_scope("bincount"):
        # max(arr) + 1, or 0 for an empty arr: -1 joins the values so that max always exists.
        flat = array_ops.concat([array_ops.reshape(arr, [-1]), [-1]], 0)
        size = reduce_max(flat) + 1
        if minlength is not None:
            size = maximum(convert_to_tensor(minlength, dtype=_dtypes.int32), size)
        if maxlength is not None:
            size = minimum(convert_to_tensor(maxlength, dtype=_dtypes.int32), size)
        if weights is None:
            weights = constant([], dtype)
        return make_op("Bincount", [arr, size, convert_to_tensor(weights)], name="Bincount")


def _histogram_kernel(ctx, values, value_range, nbins, dtype):
    nbins = int(nbins)
    if nbins <= 0:
        raise errors.InvalidArgumentError(
            None, None, "nbins should be a positive number, but got '%d'" % nbins)
    xp = ctx.xp
    lo, hi = value_range[0], value_range[1]
    if not bool(lo < hi):
        raise errors.InvalidArgumentError(
            None, None, "value_range should satisfy value_range[0] < value_range[1], but got "
            "'[%s, %s]'" % (lo, hi))
    # TF1's kernel, step for step (the subtractions in the values' type, the rest in doubles):
    # bin = int(min((max(x, lo) - lo) / ((hi - lo) / nbins), nbins - 1)).
    step = float(hi - lo) / nbins
    offsets = (xp.maximum(values.reshape(-1), lo) - lo).astype(np.float64)
    index = xp.minimum(offsets / step, nbins - 1).astype(np.int32)
    return xp.bincount(index, minlength=nbins).astype(dtype.as_numpy_dtype)


def _histogram_shape(op):
    nbins = constant_value(op.inputs[2])
    if nbins is not None and nbins <= 0:
        raise ValueError("Requires nbins > 0: %d for '%s' (HistogramFixedWidth)" % (nbins, op.name))
    return TensorShape([None if nbins is None else int(nbins)])


register_op("HistogramFixedWidth", dtype=lambda op: op._attrs["dtype"], shape=_histogram_shape,
            kernel=_histogram_kernel, grad=None)


def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """Counts of ``values`` in ``nbins`` equal bins spanning ``value_range`` = [lo, hi]; values
    below lo count in the first bin, values at or above hi in the last.

    Example: ``tf.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], [0.0, 5.0], nbins=5)``
    evaluates to ``[2, 1, 1, 0, 2] (int32)``.
    """
    values, value_range = to_tensors(values, value_range)
    if values.dtype not in (_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64):
        raise TypeError("Value passed to parameter 'values' of HistogramFixedWidth has DataType %s "
                        "not in list of allowed values: int32, int64, float32, float64 (%s)"
                        % (values.dtype.name, values.name))
    check_same_dtype("HistogramFixedWidth", values, value_range)
    if not value_range.get_shape().is_compatible_with([2]):
        raise ValueError("value_range must be a vector of 2 elements [lo, hi], got shape %s (%s)"
                         % (value_range.get_shape(), value_range.name))
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("histogram_fixed_width's dtype must be int32 or int64, got %s" % dtype.name)
    nbins = convert_to_tensor(nbins, dtype=_dtypes.int32)
    return make_op("HistogramFixedWidth", [values, value_range, nbins],
                   name=name or "histogram_fixed_width", dtype=dtype)


# -- operators on Tensor -------------------------------------------------------------------------
def _multiply_operator(x, y, name):
    """``x * y``; for bool tensors their AND, as TF's ``*`` computes it (tf.multiply refuses bool):
    an int32 product cast back to bool (``mul/Cast``, ``mul/Cast_1``, ``mul``, ``mul/Cast_2``)."""
    if not any(is_symbolic(v) and convert_to_tensor(v).dtype.is_bool for v in (x, y)):
        return multiply(x, y, name)
    with _operands(name, x, y) as (scope, x, y):
        product = _make_binary("Mul", cast(x, _dtypes.int32), cast(y, _dtypes.int32), scope)
        return cast(product, _dtypes.bool)


def _install_operators():
    # Binary operators name their op as TF1 does ("add", "mul", "truediv", ...), and a Python
    # operand's constant after its argument ("mul/y"; reflected, as in 2 * x: "mul/x").
    table = {
        "add": add, "sub": subtract, "mul": _multiply_operator, "truediv": truediv,
        "floordiv": floordiv,
        "mod": floormod, "pow": pow, "matmul": matmul,
        "and": logical_and, "or": logical_or, "xor": logical_xor,
    }
    for op_name, fn in table.items():
        def forward(self, other, fn=fn, op_name=op_name):
            return fn(self, other, name=op_name)

        def reverse(self, other, fn=fn, op_name=op_name):
            return fn(other, self, name=op_name)

        setattr(Tensor, "__%s__" % op_name, forward)
        setattr(Tensor, "__r%s__" % op_name, reverse)
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)
    Tensor.__invert__ = lambda self: logical_not(self)
    Tensor.__lt__ = lambda self, other: less(self, other)
    Tensor.__le__ = lambda self, other: less_equal(self, other)
    Tensor.__gt__ = lambda self, other: greater(self, other)
    Tensor.__ge__ = lambda self, other: greater_equal(self, other)


_install_operators()


def saturate_cast(value, dtype, name=None):
    """``value`` cast to ``dtype``, first clamped to the range ``dtype`` can hold (a float too
    large for an int32 becomes the largest int32 the float type reaches, as in TF1)."""
    value = convert_to_tensor(value, name="value")
    dtype = _dtypes.as_dtype(dtype)
    src = np.dtype(value.dtype.as_numpy_dtype)
    dst = np.dtype(dtype.as_numpy_dtype)

    def bound(limit, toward):
        # ``limit`` in ``src``, moved toward zero (``toward``: +1 up, -1 down) while the
        # conversion overshoots it (int32's max is 2**31 in float32); compared exactly.
        exact = float if dst.kind == "f" else int
        b = src.type(limit)
        while (exact(b) - limit) * toward < 0:
            b = np.nextafter(b, src.type(toward * np.inf))
        return b
    if src.kind in "biuf" and dst.kind in "biuf" and src != dst:
        info = np.finfo(dst) if dst.kind == "f" else np.iinfo(dst)
        src_info = np.finfo(src) if src.kind == "f" else np.iinfo(src)
        if src_info.min < info.min:
            value = maximum(value, bound(info.min, 1))
        if src_info.max > info.max:
            value = minimum(value, bound(info.max, -1))
    return cast(value, dtype, name=name or "saturate_cast")

__all__ = [
    "saturate_cast",
    "complex",
    "real",
    "imag",
    "conj",
    "angle",
    "div_no_nan",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "expm1",
    "erfc",
    "cast",
    "to_float",
    "to_double",
    "to_int32",
    "to_int64",
    "add",
    "subtract",
    "multiply",
    "sub",
    "mul",
    "realdiv",
    "truediv",
    "divide",
    "div",
    "floordiv",
    "floormod",
    "mod",
    "truncatediv",
    "truncatemod",
    "accumulate_n",
    "pow",
    "maximum",
    "minimum",
    "squared_difference",
    "scalar_mul",
    "negative",
    "neg",
    "square",
    "abs",
    "sign",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "log1p",
    "tanh",
    "sigmoid",
    "reciprocal",
    "floor",
    "ceil",
    "round",
    "erf",
    "is_finite",
    "is_nan",
    "is_inf",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "add_n",
    "matmul",
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_any",
    "reduce_all",
    "reduce_logsumexp",
    "count_nonzero",
    "argmax",
    "argmin",
    "log_sigmoid",
    "cumsum",
    "cumprod",
    "tensordot",
    "einsum",
    "bincount",
    "histogram_fixed_width",
]
