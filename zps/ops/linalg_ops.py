"""Linear algebra on the innermost matrices of a tensor: ``tf.matrix_inverse``, ``tf.cholesky`` ...

Every op works on ``[..., M, N]`` tensors, batched over the leading dimensions as in TF1, with
TF1's gradient rules (inverse, determinants, Cholesky, solves, QR, SVD, eigendecomposition,
matrix exponential). They take float and, as TF, complex matrices (complex gradients in TF's
conjugate convention). A singular or non positive definite input fails at run time with TF1's
InvalidArgumentError messages.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     a = tf.constant([[4.0, 2.0], [2.0, 3.0]])
...     x = tf.matrix_solve(a, [[2.0], [1.0]])
...     solved, det = tf.Session().run([x, tf.matrix_determinant(a)])
...     print(solved.tolist(), round(float(det), 4))
[[0.5], [0.0]] 8.0
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, math_ops
from zps.ops.op_util import broadcast_static, check_same_dtype, make_op, to_tensors


def _bad_input(msg):
    return errors.InvalidArgumentError(None, None, msg)


def _float_input(x, op_type, complex_ok=False):
    """``x`` as a tensor, checked to be floating (or complex, with ``complex_ok``: TF's op takes
    complex64/complex128 and zps has its gradient)."""
    x = convert_to_tensor(x)
    if not (x.dtype.is_floating or complex_ok and x.dtype.is_complex):
        raise TypeError("%s needs a floating point input (%s), got %s (%s): tf.cast it first"
                        % (op_type, "float32, float64, complex64 or complex128" if complex_ok
                           else "float32 or float64", x.dtype.name, x.name))
    return x


def _matrices(op, index=0, square=True):
    """The static shape of input ``index`` (rank >= 2; square if asked), as TF's shape fns check."""
    s = op.inputs[index].get_shape()
    if s.ndims is None:
        return s
    if s.ndims < 2:
        raise ValueError("Shape must be at least rank 2 but is rank %d for '%s' (op: '%s') with "
                         "input shapes: %s." % (s.ndims, op.name, op.type, _shapes(op)))
    m, n = s.as_list()[-2:]
    if square and m is not None and n is not None and m != n:
        raise ValueError("Dimensions must be equal, but are %d and %d for '%s' (op: '%s') with "
                         "input shapes: %s." % (m, n, op.name, op.type, _shapes(op)))
    if square:
        d = m if m is not None else n
        return TensorShape(s.as_list()[:-2] + [d, d])
    return s


def _shapes(op):
    return ", ".join(str(t.get_shape()) for t in op.inputs)


def _adjoint(x):
    """``x`` with its two innermost dimensions swapped, and conjugated: the adjoint."""
    return matrix_transpose(x, conjugate=True)


def _swap(xp, x):
    return xp.swapaxes(x, -1, -2)


def _checked(xp, fn, message, *args):
    """``fn(*args)``, failing with ``message`` where LAPACK reports a failure (numpy) or the
    result is not finite for a finite input (cupy reports nothing, it returns NaNs)."""
    try:
        out = fn(*args)
    except np.linalg.LinAlgError:
        raise _bad_input(message) from None
    if xp is not np and bool(xp.isfinite(args[0]).all()) and not bool(xp.isfinite(out).all()):
        raise _bad_input(message)
    return out


# -- BatchMatMulV2 (tf.linalg.matmul; the products of the gradients below) ------------------------
def _batch_matmul_shape(op):
    a, b = _matrices(op, 0, square=False), _matrices(op, 1, square=False)
    if a.ndims is None or b.ndims is None:
        return unknown_shape()
    ad, bd = a.as_list(), b.as_list()
    m, ka = ad[-2:][::-1] if op._attrs["adj_x"] else ad[-2:]
    kb, n = bd[-2:][::-1] if op._attrs["adj_y"] else bd[-2:]
    if ka is not None and kb is not None and ka != kb:
        raise ValueError("Dimensions must be equal, but are %d and %d for '%s' (op: '%s') with "
                         "input shapes: %s." % (ka, kb, op.name, op.type, _shapes(op)))
    batch = broadcast_static(TensorShape(ad[:-2]), TensorShape(bd[:-2]))
    return TensorShape(batch.as_list() + [m, n])


def _adjoint_value(xp, x):
    return _swap(xp, x).conj() if x.dtype.kind == "c" else _swap(xp, x)


def _batch_matmul_kernel(ctx, a, b, adj_x, adj_y):
    xp = ctx.xp
    return xp.matmul(_adjoint_value(xp, a) if adj_x else a, _adjoint_value(xp, b) if adj_y else b)


def _batch_matmul_grad(op, g):
    a, b = op.inputs
    adj_a, adj_b = op._attrs["adj_x"], op._attrs["adj_y"]
    if not adj_a:
        ga = matmul(g, b, adjoint_b=not adj_b)
    else:
        ga = matmul(b, g, adjoint_a=adj_b, adjoint_b=True)
    if not adj_b:
        gb = matmul(a, g, adjoint_a=not adj_a)
    else:
        gb = matmul(g, a, adjoint_a=True, adjoint_b=adj_a)
    return [array_ops.sum_to_shape_of(ga, a), array_ops.sum_to_shape_of(gb, b)]


register_op("BatchMatMulV2", shape=_batch_matmul_shape, kernel=_batch_matmul_kernel,
            grad=_batch_matmul_grad)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """The product of the innermost matrices of ``a`` and ``b`` (rank >= 2), leading dimensions
    broadcast (``tf.linalg.matmul``); ``tf.linalg.matmul(a, b, adjoint_b=True)`` is ``a bᴴ``."""
    a, b = to_tensors(a, b)
    check_same_dtype("BatchMatMulV2", a, b)
    # The op's adj_x/adj_y are adjoints: a complex matrix to transpose only is conjugated first.
    a = math_ops.conj(a) if transpose_a and not adjoint_a else a
    b = math_ops.conj(b) if transpose_b and not adjoint_b else b
    return make_op("BatchMatMulV2", [a, b], name=name or "MatMul",
                   adj_x=bool(transpose_a or adjoint_a), adj_y=bool(transpose_b or adjoint_b))


# -- MatrixInverse -------------------------------------------------------------------------------
def _inverse_kernel(ctx, x, adjoint):
    xp = ctx.xp
    return _checked(xp, xp.linalg.inv, "Input is not invertible.",
                    _adjoint_value(xp, x) if adjoint else x)


def _inverse_grad(op, g):
    # d(A^-1) = -A^-1 dA A^-1: dA = -Yᴴ g Yᴴ for Y = A^-1, and -Y gᴴ Y for Y = A^-H.
    ainv = op.outputs[0]
    if op._attrs["adjoint"]:
        return [-matmul(ainv, matmul(g, ainv, adjoint_a=True))]
    return [-matmul(ainv, matmul(g, ainv, adjoint_b=True), adjoint_a=True)]


register_op("MatrixInverse", shape=_matrices, kernel=_inverse_kernel, grad=_inverse_grad)


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002 - TF1's argument name
    """The inverses of the innermost square matrices of ``input`` (of their adjoints with
    ``adjoint=True``); a singular matrix fails with "Input is not invertible."."""
    x = _float_input(input, "MatrixInverse", complex_ok=True)
    return make_op("MatrixInverse", [x], name=name or "MatrixInverse", adjoint=bool(adjoint))


# -- MatrixDeterminant, LogMatrixDeterminant -----------------------------------------------------
def _batch_shape(op):
    s = _matrices(op)
    return unknown_shape() if s.ndims is None else s[:-2]


def _det_grad(op, g):
    # d det(A) = det(A) tr(A^-1 dA): dA = g det(A) A^-T. TF's rule, also for complex A: the
    # conjugate convention would take conj(det(A)); zps gives TF's numbers.
    scale = array_ops.expand_dims(array_ops.expand_dims(g * op.outputs[0], -1), -1)
    return [scale * matrix_inverse(op.inputs[0], adjoint=True)]


register_op("MatrixDeterminant", shape=_batch_shape,
            kernel=lambda ctx, x: ctx.xp.asarray(ctx.xp.linalg.det(x)), grad=_det_grad)


def matrix_determinant(input, name=None):  # noqa: A002
    """The determinants of the innermost square matrices of ``input`` (shape ``[...]``)."""
    x = _float_input(input, "MatrixDeterminant", complex_ok=True)
    return make_op("MatrixDeterminant", [x], name=name or "MatrixDeterminant")


def _slogdet_kernel(ctx, x):
    sign, logdet = ctx.xp.linalg.slogdet(x)
    return [ctx.xp.asarray(sign, dtype=x.dtype), ctx.xp.asarray(logdet, dtype=x.dtype)]


def _slogdet_grad(op, g_sign, g_logdet):
    # The sign is piecewise constant; d log|det A| = tr(A^-1 dA). As TF, the imaginary part of a
    # complex g_logdet is not dropped (log|det A| is real): TF's numbers.
    scale = array_ops.expand_dims(array_ops.expand_dims(g_logdet, -1), -1)
    return [scale * matrix_inverse(op.inputs[0], adjoint=True)]


register_op("LogMatrixDeterminant", shape=lambda op: [_batch_shape(op)] * 2,
            dtype=lambda op: [op.inputs[0].dtype] * 2, kernel=_slogdet_kernel, grad=_slogdet_grad,
            num_outputs=2)


def log_matrix_determinant(input, name=None):  # noqa: A002
    """``(sign, log_abs_determinant)`` of the innermost square matrices of ``input``: the
    determinant is ``sign * exp(log_abs_determinant)``, without overflow."""
    x = _float_input(input, "LogMatrixDeterminant", complex_ok=True)
    return tuple(make_op("LogMatrixDeterminant", [x], name=name or "LogMatrixDeterminant"))


# -- Cholesky ------------------------------------------------------------------------------------
def _cholesky_kernel(ctx, x):
    xp = ctx.xp
    return _checked(xp, xp.linalg.cholesky, "Cholesky decomposition was not successful. The input "
                    "might not be valid.", x)


def _cholesky_grad(op, g):
    # TF's rule (Murray 2016, "Differentiation of the Cholesky decomposition"): with L = chol(A),
    # Phi(X) the lower triangle of X with its diagonal halved,
    # dA = 1/2 sym(L^-H Phi(L^H g) L^-1).
    chol = op.outputs[0]
    eye_n = eye(array_ops.shape(chol)[-1], dtype=chol.dtype)
    chol_inv = matrix_triangular_solve(chol, array_ops.broadcast_to(eye_n, array_ops.shape(chol)))
    middle = matmul(chol, g, adjoint_a=True)
    middle = array_ops.matrix_band_part(middle, -1, 0) - 0.5 * array_ops.matrix_band_part(middle, 0, 0)
    grad_a = matmul(matmul(chol_inv, middle, adjoint_a=True), chol_inv)
    return [0.5 * (grad_a + _adjoint(grad_a))]


register_op("Cholesky", shape=_matrices, kernel=_cholesky_kernel, grad=_cholesky_grad)


def cholesky(input, name=None):  # noqa: A002
    """The lower triangular ``L`` with ``L Lᴴ = input`` for each innermost symmetric positive
    definite matrix (only its lower triangle is read)."""
    x = _float_input(input, "Cholesky", complex_ok=True)
    return make_op("Cholesky", [x], name=name or "Cholesky")


# -- MatrixExponential (tf.linalg.expm) ----------------------------------------------------------
# Scaling and squaring with the [13/13] Pade approximant (Higham 2005), in float64 / complex128:
# expm(A) = r(A / 2**s) ** (2**s), s chosen so that every ||A / 2**s||_1 <= 5.37 (TF's bound).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_PADE13_MAX_NORM = 5.371920351148152


def _expm_kernel(ctx, x):
    xp = ctx.xp
    a = x.astype(xp.complex128 if x.dtype.kind == "c" else xp.float64)
    if a.size == 0:
        return x
    norm = float(xp.abs(a).sum(axis=-2).max())
    if not np.isfinite(norm):   # TF: all NaN for a batch holding a non-finite entry
        return xp.full(x.shape, np.nan, x.dtype)
    squarings = max(0, int(np.ceil(np.log2(norm / _PADE13_MAX_NORM)))) if norm else 0
    a = a / 2.0 ** squarings
    b, eye = _PADE13, xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for _ in range(squarings):
        r = r @ r
    return r.astype(x.dtype)


def _expm_grad(op, g):
    # The adjoint of the Frechet derivative of expm at A is the derivative at Aᴴ: the upper right
    # block of expm([[Aᴴ, g], [0, Aᴴ]]) (Najfeld and Havel 1995). TF differentiates its Pade
    # composite instead: the same numbers, to rounding.
    a_h = _adjoint(op.inputs[0])
    n = array_ops.shape(a_h)[-1]
    block = array_ops.concat([array_ops.concat([a_h, g], -1),
                              array_ops.concat([array_ops.zeros_like(a_h), a_h], -1)], -2)
    return [matrix_exponential(block)[..., :n, n:]]


register_op("MatrixExponential", shape=_matrices, kernel=_expm_kernel, grad=_expm_grad)


def matrix_exponential(input, name=None):  # noqa: A002 - TF1's argument name
    """``expm`` of each innermost square matrix of ``input``: ``sum_k input**k / k!``
    (``tf.linalg.expm``; float32, float64, complex64, complex128).

    >>> import zps as tf
    >>> tf.Session().run(tf.linalg.expm([[0.0, 1.0], [0.0, 0.0]])).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    x = _float_input(input, "MatrixExponential", complex_ok=True)
    return make_op("MatrixExponential", [x], name=name or "MatrixExponential")


def logdet(matrix, name=None):
    """``log(det(matrix))`` of each innermost Hermitian positive definite matrix, from its
    Cholesky factor (TF's ``tf.linalg.logdet``): ``2 sum(log(real(diag(chol))))``, a real tensor.

    Example: ``tf.linalg.logdet([[4.0, 0.0], [0.0, 9.0]])`` evaluates to ``log(36) = 3.5835``.
    """
    x = convert_to_tensor(matrix)
    with x.graph.name_scope(name or "logdet") as scope:
        chol = cholesky(x)
        diag = math_ops.log(math_ops.real(array_ops.matrix_diag_part(chol)))
        return math_ops.multiply(2.0, math_ops.reduce_sum(diag, axis=-1), name=scope)


# -- MatrixSolve, MatrixTriangularSolve ----------------------------------------------------------
def _solve_shape(op):
    a, b = _matrices(op, 0), _matrices(op, 1, square=False)
    if a.ndims is None or b.ndims is None:
        return unknown_shape()
    if a.ndims != b.ndims:
        raise ValueError("Shapes must be equal rank, but are %d and %d for '%s' (op: '%s') with "
                         "input shapes: %s." % (a.ndims, b.ndims, op.name, op.type, _shapes(op)))
    for i, j in zip(a.as_list()[:-2] + [a[-1].value], b.as_list()[:-1]):
        if i is not None and j is not None and i != j:
            raise ValueError("Dimensions must be equal, but are %d and %d for '%s' (op: '%s') "
                             "with input shapes: %s." % (i, j, op.name, op.type, _shapes(op)))
    return a[:-1].merge_with(b[:-1]).concatenate(b[-1:])


def _solve_kernel(ctx, a, b, adjoint):
    xp = ctx.xp
    _same_batch(a, b)
    return _checked(xp, xp.linalg.solve, "Input matrix is not invertible.",
                    _adjoint_value(xp, a) if adjoint else a, b)


def _same_batch(a, b):
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise _bad_input("Input matrix and right-hand side must have matching shapes, got %s and "
                         "%s" % (list(a.shape), list(b.shape)))


def _solve_grads(op, g, solve):
    """``[d matrix, d rhs]`` of X = A^-1 B (or A^-H B): dB = A^-H g, dA = -dB Xᴴ (-X dBᴴ)."""
    x = op.outputs[0]
    adjoint = op._attrs["adjoint"]
    grad_b = solve(op.inputs[0], g, not adjoint)
    grad_a = -(matmul(x, grad_b, adjoint_b=True) if adjoint else matmul(grad_b, x, adjoint_b=True))
    return [grad_a, grad_b]


register_op("MatrixSolve", shape=_solve_shape, kernel=_solve_kernel,
            grad=lambda op, g: _solve_grads(op, g, lambda a, rhs, adj: matrix_solve(a, rhs, adj)))


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """``X`` with ``matrix @ X = rhs`` (``matrixᴴ @ X = rhs`` with ``adjoint=True``) for each
    innermost square matrix; a singular one fails with "Input matrix is not invertible."."""
    a = _float_input(matrix, "MatrixSolve", complex_ok=True)
    b = convert_to_tensor(rhs, dtype=a.dtype)
    return make_op("MatrixSolve", [a, b], name=name or "MatrixSolve", adjoint=bool(adjoint))


def _triangular_solve_kernel(ctx, a, b, lower, adjoint):
    xp = ctx.xp
    _same_batch(a, b)
    tri = xp.tril(a) if lower else xp.triu(a)
    if not bool((xp.diagonal(a, axis1=-2, axis2=-1) != 0).all()):
        raise _bad_input("Input matrix is not invertible.")
    return xp.linalg.solve(_adjoint_value(xp, tri) if adjoint else tri, b)


def _triangular_solve_grad(op, g):
    lower = op._attrs["lower"]
    grad_a, grad_b = _solve_grads(op, g, lambda a, rhs, adj: matrix_triangular_solve(
        a, rhs, lower=lower, adjoint=adj))
    band = (-1, 0) if lower else (0, -1)
    return [array_ops.matrix_band_part(grad_a, *band), grad_b]


register_op("MatrixTriangularSolve", shape=_solve_shape, kernel=_triangular_solve_kernel,
            grad=_triangular_solve_grad)


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """As ``matrix_solve`` for triangular matrices: only the lower (``lower=True``) or upper
    triangle of ``matrix`` is read."""
    a = _float_input(matrix, "MatrixTriangularSolve", complex_ok=True)
    b = convert_to_tensor(rhs, dtype=a.dtype)
    return make_op("MatrixTriangularSolve", [a, b], name=name or "MatrixTriangularSolve",
                   lower=bool(lower), adjoint=bool(adjoint))


# -- Qr ------------------------------------------------------------------------------------------
def _qr_shape(op):
    s = _matrices(op, square=False)
    if s.ndims is None:
        return [unknown_shape(), unknown_shape()]
    lead, (m, n) = s.as_list()[:-2], s.as_list()[-2:]
    k = m if op._attrs["full_matrices"] else (None if None in (m, n) else min(m, n))
    return [TensorShape(lead + [m, k]), TensorShape(lead + [k, n])]


def _qr_kernel(ctx, x, full_matrices):
    q, r = ctx.xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q, r]


def _qr_grad(op, dq, dr):
    # TF's rule, for the reduced decomposition of a matrix with at least as many rows as columns.
    q, r = op.outputs
    a = op.inputs[0].get_shape()
    if a.ndims is None or None in a.as_list()[-2:] or a[-2].value < a[-1].value or \
            (op._attrs["full_matrices"] and a[-2].value != a[-1].value):
        raise NotImplementedError("QrGrad not implemented when ncols > nrows or full_matrices is "
                                  "true and ncols != nrows (input shape %s, op '%s')" % (a, op.name))
    qdq = matmul(q, dq, adjoint_a=True)
    rdr = matmul(r, dr, adjoint_b=True)
    tril = array_ops.matrix_band_part(qdq - _adjoint(qdq) + rdr - _adjoint(rdr), -1, 0)

    def solve_right(x):   # x r^-H
        return _adjoint(matrix_triangular_solve(r, _adjoint(x), lower=False))
    grad = matmul(q, dr + solve_right(tril)) + solve_right(dq - matmul(q, qdq))
    if q.dtype.is_complex:   # TF's term for the imaginary part of diag(rdr - qdqᴴ)
        diag = math_ops.imag(array_ops.matrix_diag_part(rdr - _adjoint(qdq)))
        correction = array_ops.matrix_diag(math_ops.complex(array_ops.zeros_like(diag), diag))
        grad += solve_right(matmul(q, _adjoint(correction)))
    return [grad]


register_op("Qr", shape=_qr_shape, dtype=lambda op: [op.inputs[0].dtype] * 2, kernel=_qr_kernel,
            grad=_qr_grad, num_outputs=2)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """``(q, r)``: each innermost ``[M, N]`` matrix as an orthonormal ``q`` times an upper
    triangular ``r`` (``q`` is ``[M, min(M, N)]``, or ``[M, M]`` with ``full_matrices``)."""
    x = _float_input(input, "Qr", complex_ok=True)
    return tuple(make_op("Qr", [x], name=name or "Qr", full_matrices=bool(full_matrices)))


# -- Svd -----------------------------------------------------------------------------------------
def _svd_shape(op):
    s = _matrices(op, square=False)
    if s.ndims is None:
        return [unknown_shape()] * 3
    lead, (m, n) = s.as_list()[:-2], s.as_list()[-2:]
    k = None if None in (m, n) else min(m, n)
    if not op._attrs["compute_uv"]:
        return [TensorShape(lead + [k]), TensorShape([0]), TensorShape([0])]
    full = op._attrs["full_matrices"]
    return [TensorShape(lead + [k]), TensorShape(lead + [m, m if full else k]),
            TensorShape(lead + [n, n if full else k])]


def _svd_kernel(ctx, x, compute_uv, full_matrices):
    xp = ctx.xp
    if not compute_uv:
        empty = xp.zeros((0,), dtype=x.dtype)
        return [xp.linalg.svd(x, compute_uv=False).astype(x.dtype), empty, empty]
    u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    # s in the input's dtype (complex for a complex input) as TF's op; svd() takes its real part.
    return [s.astype(x.dtype), u, _adjoint_value(xp, vh).copy()]


def _safe_reciprocal(x, epsilon=1e-20):
    return x * math_ops.reciprocal(x * x + epsilon)   # 1/x, and 0 where x is 0


def _svd_grad(op, grad_s, grad_u, grad_v):
    # TF's rule (Townsend 2016, "Differentiating the Singular Value Decomposition"), computed
    # for A or, when it has more rows than columns, for Aᴴ = V S Uᴴ.
    a = op.inputs[0]
    if not op._attrs["compute_uv"]:
        _, u, v = svd(a, compute_uv=True)
        return [matmul(u, matmul(array_ops.matrix_diag(grad_s), v, adjoint_b=True))]
    shape = a.get_shape()
    if shape.ndims is None or None in shape.as_list()[-2:]:
        raise NotImplementedError("SVD gradient has not been implemented for input with unknown "
                                  "inner matrix shape (op '%s', input shape %s)" % (op.name, shape))
    m, n = shape.as_list()[-2:]
    s, u, v = op.outputs
    transposed = m > n
    if transposed:
        m, n, u, v, grad_u, grad_v = n, m, v, u, grad_v, grad_u
    full = op._attrs["full_matrices"]
    if full and n - m > 1:
        raise NotImplementedError("svd gradient is not implemented for abs(m - n) > 1 when "
                                  "full_matrices is True (op '%s', input shape %s)" % (op.name, shape))
    s_mat = array_ops.matrix_diag(s)
    s2 = s * s
    f = _safe_reciprocal(array_ops.expand_dims(s2, -2) - array_ops.expand_dims(s2, -1))
    v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
    f_u = f * matmul(u, grad_u, adjoint_a=True)
    f_v = f * matmul(v1, grad_v1, adjoint_a=True)
    inner = (array_ops.matrix_diag(grad_s) + matmul(f_u + _adjoint(f_u), s_mat)
             + matmul(s_mat, f_v + _adjoint(f_v)))
    grad_a = matmul(u, matmul(inner, v1, adjoint_b=True))
    if a.dtype.is_complex:   # TF's term for the phases of the singular vectors
        gauge = array_ops.matrix_diag(array_ops.matrix_diag_part(
            matmul(v1, grad_v1, adjoint_a=True)))
        s_inv = array_ops.matrix_diag(_safe_reciprocal(s))
        grad_a += 0.5 * matmul(u, matmul(matmul(s_inv, _adjoint(gauge) - gauge), v1,
                                         adjoint_b=True))
    if m != n:
        gv1t = _adjoint(grad_v1)
        rest = gv1t - matmul(matmul(gv1t, v1), v1, adjoint_b=True)
        if full:
            v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
            rest -= matmul(matmul(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True)
        s_inv = array_ops.matrix_diag(_safe_reciprocal(s))
        grad_a += matmul(matmul(u, s_inv), rest)
    return [_adjoint(grad_a) if transposed else grad_a]


register_op("Svd", shape=_svd_shape, dtype=lambda op: [op.inputs[0].dtype] * 3,
            kernel=_svd_kernel, grad=_svd_grad, num_outputs=3)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """The singular values ``s`` of the innermost matrices of ``tensor`` (descending), and with
    ``compute_uv`` the ``(s, u, v)`` with ``tensor = u diag(s) vᴴ``."""
    x = _float_input(tensor, "Svd", complex_ok=True)
    s, u, v = make_op("Svd", [x], name=name or "Svd", compute_uv=bool(compute_uv),
                      full_matrices=bool(full_matrices))
    s = math_ops.real(s)   # the singular values are real (float32 for complex64), as TF's
    return (s, u, v) if compute_uv else s


# -- SelfAdjointEigV2 ----------------------------------------------------------------------------
def _eig_shape(op):
    s = _matrices(op)
    if s.ndims is None:
        return [unknown_shape(), unknown_shape()]
    return [s[:-1], s if op._attrs["compute_v"] else TensorShape([0])]


def _eig_kernel(ctx, x, compute_v):
    xp = ctx.xp
    if not compute_v:
        return [xp.linalg.eigvalsh(x).astype(x.dtype), xp.zeros((0,), dtype=x.dtype)]
    e, v = xp.linalg.eigh(x)
    return [e.astype(x.dtype), v]   # real eigenvalues, in the input's (complex) dtype as TF


def _eig_grad(op, grad_e, grad_v):
    # TF's rule: with A = V diag(e) Vᴴ and F_ij = 1 / (e_j - e_i) off the diagonal (0 on it),
    # dA = V (diag(grad_e) + F * Vᴴ grad_v) Vᴴ, symmetrized onto the lower triangle (only the
    # lower triangle of A is read).
    e, v = op.outputs
    if not op._attrs["compute_v"]:
        v = self_adjoint_eig(op.inputs[0])[1]
        inner = array_ops.matrix_diag(grad_e)
    else:
        n_eye = eye(array_ops.shape(e)[-1], dtype=e.dtype)
        diff = array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)
        f = math_ops.reciprocal(diff + n_eye) - n_eye
        inner = array_ops.matrix_diag(grad_e) + f * matmul(v, grad_v, adjoint_a=True)
    grad_a = matmul(v, matmul(inner, v, adjoint_b=True))
    grad_a = array_ops.matrix_band_part(grad_a + _adjoint(grad_a), -1, 0)
    return [grad_a - 0.5 * array_ops.matrix_band_part(grad_a, 0, 0)]


register_op("SelfAdjointEigV2", shape=_eig_shape, dtype=lambda op: [op.inputs[0].dtype] * 2,
            kernel=_eig_kernel, grad=_eig_grad, num_outputs=2)


def self_adjoint_eig(tensor, name=None):
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (columns of ``v``) of each
    innermost self-adjoint matrix of ``tensor`` (only its lower triangle is read)."""
    x = _float_input(tensor, "SelfAdjointEigV2", complex_ok=True)
    return tuple(make_op("SelfAdjointEigV2", [x], name=name or "SelfAdjointEigV2",
                         compute_v=True))


def self_adjoint_eigvals(tensor, name=None):
    """The eigenvalues (ascending) of each innermost self-adjoint matrix of ``tensor``."""
    x = _float_input(tensor, "SelfAdjointEigV2", complex_ok=True)
    return make_op("SelfAdjointEigV2", [x], name=name or "SelfAdjointEigV2", compute_v=False)[0]


# -- built from other ops: matrix_transpose, eye, trace, norm ------------------------------------
def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """``a`` with its two innermost dimensions swapped: ``[..., M, N]`` gives ``[..., N, M]``;
    also conjugated with ``conjugate=True`` (the adjoint of a complex matrix)."""
    a = convert_to_tensor(a)
    a = math_ops.conj(a) if conjugate else a
    rank = a.get_shape().ndims
    if rank is not None and rank < 2:
        raise ValueError("Argument 'a' should be a (batch) matrix, with rank >= 2. Found: %s (%s)"
                         % (a.get_shape(), a.name))
    if rank is not None:
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    else:
        r = array_ops.rank(a)
        perm = array_ops.concat([array_ops.range(r - 2), [r - 1, r - 2]], 0)
    return array_ops.transpose(a, perm, name=name)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """Identity matrices ``[*batch_shape, num_rows, num_columns]`` (ones on the main diagonal).

    Example: ``tf.eye(2, 3)`` is ``[[1, 0, 0], [0, 1, 0]]``.
    """
    rows = convert_to_tensor(num_rows, dtype=_dtypes.int32)
    cols = rows if num_columns is None else convert_to_tensor(num_columns, dtype=_dtypes.int32)
    batch = [] if batch_shape is None else batch_shape
    k = math_ops.minimum(rows, cols) if num_columns is not None else rows
    diag = array_ops.ones(array_ops.concat([batch, array_ops.reshape(k, [1])], 0), dtype=dtype)
    out = array_ops.matrix_diag(diag)
    if num_columns is not None:
        lead = array_ops.zeros(array_ops.stack([array_ops.size(batch), 2]), dtype=_dtypes.int32)
        out = array_ops.pad(out, array_ops.concat([lead, [[0, rows - k], [0, cols - k]]], 0))
    out = array_ops.identity(out, name=name or "eye")
    static = [constant_value(t) for t in (rows, cols)]
    batch = [] if batch_shape is None else constant_value(
        convert_to_tensor(batch_shape, dtype=_dtypes.int32))
    out.set_shape(TensorShape(None if batch is None else
                              [int(d) for d in np.asarray(batch).ravel()]
                              + [None if d is None else int(d) for d in static]))
    return out


def trace(x, name=None):
    """The sums of the main diagonals of the innermost matrices of ``x`` (shape ``[...]``)."""
    return math_ops.reduce_sum(array_ops.matrix_diag_part(x), -1, name=name or "Trace")


_VECTOR_ORDS = "'fro', 'euclidean', and p > 0 (1, 2, np.inf ...)"
_MATRIX_ORDS = ["euclidean", "fro", 1, 2, np.inf]


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):  # noqa: A002
    """Vector norms (``axis`` None or an int) or matrix norms (``axis`` a pair) of ``tensor``:
    ``ord`` 'euclidean' / 'fro' (2-norm, Frobenius for matrices), 1, 2, np.inf, or any p > 0 for
    vectors. ``axis=None`` takes the norm of the flattened tensor.

    Example: ``tf.norm([3.0, 4.0])`` is ``5.0``; ``tf.norm(x, ord=1, axis=[-2, -1])`` the largest
    column sum of absolute values.
    """
    keepdims = keepdims if keepdims is not None else bool(keep_dims)
    x = convert_to_tensor(tensor)
    matrix = isinstance(axis, list | tuple) and len(axis) == 2
    if isinstance(axis, list | tuple) and not matrix:
        if len(axis) != 1:
            raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, "
                             "got %s" % (axis,))
        axis = axis[0]
    if matrix:
        if ord not in _MATRIX_ORDS:
            raise ValueError("'ord' must be a supported matrix norm in %s, got %s"
                             % (_MATRIX_ORDS, ord))
        if axis[0] == axis[1]:
            raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers, "
                             "got %s" % (axis,))
    elif not (ord in ("euclidean", "fro") or isinstance(ord, int | float) and ord > 0):
        raise ValueError("'ord' must be a supported vector norm, got %s (supported: %s)"
                         % (ord, _VECTOR_ORDS))
    with x.graph.name_scope(name or "norm"):
        if matrix:
            result = _matrix_norm(x, ord, list(axis), keepdims)
        elif ord in ("euclidean", "fro", 2):
            result = math_ops.sqrt(math_ops.reduce_sum(x * math_ops.conj(x), axis,
                                                       keepdims=keepdims))
        elif ord == np.inf:
            result = math_ops.reduce_max(math_ops.abs(x), axis, keepdims=keepdims)
        elif ord == 1:
            result = math_ops.reduce_sum(math_ops.abs(x), axis, keepdims=keepdims)
        else:
            p = math_ops.cast(ord, x.dtype.real_dtype)   # |x| of a complex x is real
            result = math_ops.pow(math_ops.reduce_sum(math_ops.pow(math_ops.abs(x), p), axis,
                                                      keepdims=keepdims), 1.0 / p)
    return array_ops.identity(result, name="norm")


def _matrix_norm(x, ord, axis, keepdims):  # noqa: A002
    if ord in ("euclidean", "fro"):
        return math_ops.sqrt(math_ops.reduce_sum(x * math_ops.conj(x), axis, keepdims=keepdims))
    if ord == 2:
        rank = x.get_shape().ndims
        if rank is None:
            raise ValueError("The 2-norm of matrices needs a tensor of known rank, got %s (%s)"
                             % (x.get_shape(), x.name))
        rows, cols = (a % rank for a in axis)
        perm = [d for d in range(rank) if d not in (rows, cols)] + [rows, cols]
        result = math_ops.reduce_max(svd(array_ops.transpose(x, perm), compute_uv=False), -1)
        if keepdims:
            for a in sorted((rows, cols)):
                result = array_ops.expand_dims(result, a)
        return result
    # 1: the largest column sum (summed over rows); inf: the largest row sum.
    summed, maxed = (axis[0], axis[1]) if ord == 1 else (axis[1], axis[0])
    sums = math_ops.reduce_sum(math_ops.abs(x), summed, keepdims=True)
    result = math_ops.reduce_max(sums, maxed, keepdims=True)
    return result if keepdims else array_ops.squeeze(result, axis)


__all__ = [
    "matrix_inverse",
    "matrix_determinant",
    "log_matrix_determinant",
    "cholesky",
    "matrix_solve",
    "matrix_triangular_solve",
    "qr",
    "svd",
    "self_adjoint_eig",
    "self_adjoint_eigvals",
    "matrix_transpose",
    "eye",
    "trace",
    "norm",
]
