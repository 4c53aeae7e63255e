"""``tf.linalg``: TF 1.15's linear algebra namespace (the ops of zps.ops.linalg_ops under their
tf.linalg names, and the matrix helpers of zps.ops.array_ops / math_ops)."""

from zps.ops.array_ops import diag as tensor_diag
from zps.ops.array_ops import matrix_band_part as band_part
from zps.ops.array_ops import matrix_diag as diag
from zps.ops.array_ops import matrix_diag_part as diag_part
from zps.ops.clip_ops import global_norm
from zps.ops.linalg_ops import cholesky, eye, logdet, matrix_transpose, norm, qr, svd, trace
from zps.ops.linalg_ops import log_matrix_determinant as slogdet
from zps.ops.linalg_ops import matrix_determinant as det
from zps.ops.linalg_ops import matrix_exponential as expm
from zps.ops.linalg_ops import matrix_inverse as inv
from zps.ops.linalg_ops import matrix_solve as solve
from zps.ops.linalg_ops import matrix_triangular_solve as triangular_solve
from zps.ops.linalg_ops import self_adjoint_eig as eigh
from zps.ops.linalg_ops import self_adjoint_eigvals as eigvalsh
from zps.ops.math_ops import einsum, matmul, tensordot  # tf.linalg.matmul is tf.matmul (TF1)
from zps.ops.nn_ops import l2_normalize

transpose = matrix_transpose


def adjoint(matrix, name=None):
    """The conjugate transpose of the innermost matrices of ``matrix`` (the transpose if real)."""
    return matrix_transpose(matrix, name=name or "adjoint", conjugate=True)

__all__ = ["adjoint", "band_part", "cholesky", "det", "diag", "diag_part", "eigh", "eigvalsh",
           "einsum", "expm", "eye", "global_norm", "inv", "l2_normalize", "logdet", "matmul",
           "matrix_transpose",
           "norm", "qr", "slogdet", "solve", "svd", "tensor_diag", "tensordot", "trace",
           "transpose", "triangular_solve"]
