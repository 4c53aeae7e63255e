"""Math ops: elementwise arithmetic, comparisons, reductions, matmul, casts.

Each op is one block: registration (shape rule, kernel, gradient rule) next to its wrapper.
Binary elementwise ops are registered with ``broadcast=True``: their gradient rules return
gradients of the broadcast shape and ``gradients()`` sums them back to each input's shape.
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.graph import Tensor, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops
from zps.ops.op_util import (
    broadcast_shape,
    check_same_dtype,
    const_axis,
    make_op,
    normalize_axis,
    same_shape,
    to_tensors,
)


def _binary(op_type, x, y, name):
    x, y = to_tensors(x, y)
    check_same_dtype(op_type, x, y)
    return make_op(op_type, [x, y], name=name or op_type)


def _unary(op_type, x, name):
    return make_op(op_type, [convert_to_tensor(x)], name=name or op_type)


# -- Cast ----------------------------------------------------------------------------------------
def _cast_kernel(ctx, x, DstT):  # noqa: N803 - TF1's attr name
    return x.astype(DstT.as_numpy_dtype, copy=False)


register_op("Cast", dtype=lambda op: op._attrs["DstT"], shape=same_shape, kernel=_cast_kernel,
            grad=lambda op, g: [cast(g, op.inputs[0].dtype)
                                if op.inputs[0].dtype.is_floating else None])


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (floats to ints truncate toward zero)."""
    x = convert_to_tensor(x)
    dtype = _dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return make_op("Cast", [x], name=name or "Cast", DstT=dtype)


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name=name)


# -- binary arithmetic ---------------------------------------------------------------------------
register_op("Add", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: x + y, grad=lambda op, g: [g, g])
register_op("Sub", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: x - y, grad=lambda op, g: [g, -g])
register_op("Mul", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: x * y,
            grad=lambda op, g: [g * op.inputs[1], g * op.inputs[0]])


def _realdiv_grad(op, g):
    x, y = op.inputs
    return [g / y, -g * x / (y * y)]


register_op("RealDiv", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x, y: ctx.xp.true_divide(x, y).astype(x.dtype, copy=False),
            grad=_realdiv_grad)


def add(x, y, name=None):
    return _binary("Add", x, y, name)


def subtract(x, y, name=None):
    return _binary("Sub", x, y, name)


def multiply(x, y, name=None):
    return _binary("Mul", x, y, name)


def divide(x, y, name=None):
    """``x / y``: true division for floats, floor division for ints (TF1's ``tf.divide``)."""
    x, y = to_tensors(x, y)
    return truediv(x, y, name) if x.dtype.is_floating else floordiv(x, y, name)


def truediv(x, y, name=None):
    x, y = to_tensors(x, y)
    if x.dtype.is_integer:
        x, y = cast(x, _dtypes.float64), cast(y, _dtypes.float64)
    return _binary("RealDiv", x, y, name or "truediv")


def floordiv(x, y, name=None):
    return _binary("FloorDiv", x, y, name)


def div(x, y, name=None):
    """TF1's ``tf.div``: floor division for ints, true division for floats."""
    return divide(x, y, name)


sub = subtract
mul = multiply
realdiv = truediv

register_op("Neg", shape=same_shape, kernel=lambda ctx, x: -x, grad=lambda op, g: [-g])


def negative(x, name=None):
    return _unary("Neg", x, name)


neg = negative

register_op("Square", shape=same_shape, kernel=lambda ctx, x: x * x,
            grad=lambda op, g: [g * (op.inputs[0] * 2.0)])


def square(x, name=None):
    return _unary("Square", x, name)


# -- AddN ----------------------------------------------------------------------------------------
def _add_n_kernel(ctx, *xs):
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
    for t in inputs[1:]:
        check_same_dtype("AddN", inputs[0], t)
    if len(inputs) == 1:
        return array_ops.identity(inputs[0], name=name)
    return make_op("AddN", inputs, name=name or "AddN")


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
    a, b = op.inputs
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
    """Matrix product of two rank-2 tensors, optionally transposing either."""
    a, b = to_tensors(a, b)
    check_same_dtype("MatMul", a, b)
    return make_op("MatMul", [a, b], name=name or "MatMul",
                   transpose_a=bool(transpose_a or adjoint_a),
                   transpose_b=bool(transpose_b or adjoint_b))


# -- reductions ----------------------------------------------------------------------------------
def _reduce_shape(op):
    s = op.inputs[0].get_shape()
    axes, keep = op._attrs["axis"], op._attrs["keepdims"]
    if s.ndims is None:
        return unknown_shape()
    dims = s.as_list()
    if axes is None:
        return TensorShape([1] * len(dims) if keep else [])
    return TensorShape([1 if i in axes else d for i, d in enumerate(dims)] if keep
                       else [d for i, d in enumerate(dims) if i not in axes])


def _reduce_grad_to_input(op, g):
    """``g`` reshaped so that it broadcasts against the reduction's input (keepdims shape)."""
    x = op.inputs[0]
    if op._attrs["keepdims"] or op._attrs["axis"] is None and not x.get_shape().ndims:
        return g
    return make_op("ReduceGradShape", [g, array_ops.shape(x)], axis=op._attrs["axis"])


def _reduce_grad_shape_kernel(ctx, g, xshape, axis):
    keep = [1 if (axis is None or i in axis) else int(d) for i, d in enumerate(xshape)]
    return g.reshape(keep)


register_op("ReduceGradShape", shape=lambda op: unknown_shape(), kernel=_reduce_grad_shape_kernel,
            grad=lambda op, g: [reduce_sum(g, axis=op._attrs["axis"])
                                if op._attrs["axis"] is not None else reduce_sum(g), None])


def _sum_grad(op, g):
    x = op.inputs[0]
    return [array_ops.broadcast_to(_reduce_grad_to_input(op, g), array_ops.shape(x))]


register_op("Sum", shape=_reduce_shape,
            kernel=lambda ctx, x, axis, keepdims: ctx.xp.asarray(x.sum(axis=axis, keepdims=keepdims)),
            grad=_sum_grad)


def _mean_kernel(ctx, x, axis, keepdims):
    return ctx.xp.asarray(x.mean(axis=axis, keepdims=keepdims), dtype=x.dtype)


def _mean_grad(op, g):
    x = op.inputs[0]
    n = cast(make_op("ReducedSize", [array_ops.shape(x)], axis=op._attrs["axis"]), g.dtype)
    return [array_ops.broadcast_to(_reduce_grad_to_input(op, g), array_ops.shape(x)) / n]


def _reduced_size_kernel(ctx, xshape, axis):
    dims = [int(d) for i, d in enumerate(xshape) if axis is None or i in axis]
    return np.array(int(np.prod(dims)) if dims else 1, dtype=np.int32)


register_op("Mean", shape=_reduce_shape, kernel=_mean_kernel, grad=_mean_grad)
register_op("ReducedSize", dtype=lambda op: _dtypes.int32, shape=lambda op: TensorShape([]),
            kernel=_reduced_size_kernel, grad=None)


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices=None, keep_dims=None):
    x = convert_to_tensor(input_tensor)
    if axis is None:
        axis = reduction_indices
    if keep_dims is not None:
        keepdims = keep_dims
    axis = normalize_axis(const_axis(axis), x.get_shape().ndims, op_type)
    if axis is not None and x.get_shape().ndims is None:
        if any(a < 0 for a in axis):
            raise ValueError("Negative reduction axes need a tensor of known rank (%s)" % x.name)
    return make_op(op_type, [x], name=name or op_type, axis=axis, keepdims=bool(keepdims))


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    """Sum over ``axis`` (all axes if None)."""
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                keep_dims=None):
    """Mean over ``axis`` (all axes if None)."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


# -- operators on Tensor -------------------------------------------------------------------------
def _install_operators():
    def binary(fn):
        return (lambda self, other: fn(self, other), lambda self, other: fn(other, self))

    table = {
        "add": add, "sub": subtract, "mul": multiply, "truediv": _operator_truediv,
        "floordiv": lambda x, y: floordiv(x, y), "mod": lambda x, y: mod(x, y),
        "pow": lambda x, y: pow(x, y), "matmul": matmul,
        "and": lambda x, y: logical_and(x, y), "or": lambda x, y: logical_or(x, y),
        "xor": lambda x, y: logical_xor(x, y),
    }
    for name, fn in table.items():
        fwd, rev = binary(fn)
        setattr(Tensor, "__%s__" % name, fwd)
        setattr(Tensor, "__r%s__" % name, rev)
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)
    Tensor.__invert__ = lambda self: logical_not(self)
    Tensor.__lt__ = lambda self, other: less(self, other)
    Tensor.__le__ = lambda self, other: less_equal(self, other)
    Tensor.__gt__ = lambda self, other: greater(self, other)
    Tensor.__ge__ = lambda self, other: greater_equal(self, other)


def _operator_truediv(x, y):
    x, y = to_tensors(x, y)
    return truediv(x, y)


# Ops defined further down by the other math blocks (mod, pow, abs, comparisons, logical ops)
# are looked up at call time by the operator lambdas above.
def mod(x, y, name=None):
    return _binary("FloorMod", x, y, name)


def pow(x, y, name=None):  # noqa: A001 - TF1's public name
    return _binary("Pow", x, y, name)


def abs(x, name=None):  # noqa: A001
    return _unary("Abs", x, name)


def less(x, y, name=None):
    return _binary("Less", x, y, name)


def less_equal(x, y, name=None):
    return _binary("LessEqual", x, y, name)


def greater(x, y, name=None):
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name=None):
    return _binary("GreaterEqual", x, y, name)


def logical_and(x, y, name=None):
    return _binary("LogicalAnd", x, y, name)


def logical_or(x, y, name=None):
    return _binary("LogicalOr", x, y, name)


def logical_xor(x, y, name="LogicalXor"):
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def logical_not(x, name=None):
    return _unary("LogicalNot", x, name)


_install_operators()

__all__ = [
    "cast",
    "to_float",
    "add",
    "subtract",
    "multiply",
    "divide",
    "truediv",
    "floordiv",
    "div",
    "sub",
    "mul",
    "realdiv",
    "negative",
    "neg",
    "square",
    "add_n",
    "matmul",
    "reduce_sum",
    "reduce_mean",
    "mod",
    "pow",
    "abs",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
]
