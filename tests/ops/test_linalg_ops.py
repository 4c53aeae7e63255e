"""Linear algebra ops (zps.ops.linalg_ops, tf.linalg): values against TF, gradients, shapes, errors.

The expected values were computed with TensorFlow (tf.compat.v1) on the same inputs.
"""

import numpy as np
import pytest

import zps as tf
from zps.ops import linalg_ops
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(11)
A = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]])   # symmetric positive definite
B = np.array([[[2.0, -1.0], [1.0, 3.0]], [[0.0, 1.0], [-2.0, 0.5]]])
RHS = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
L = np.array([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [-1.0, 0.5, 4.0]])


def _spd(n, batch=()):
    x = R.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _sym(x):
    """Gradients of ops that read one triangle are checked on symmetric inputs built from x."""
    return (x + linalg_ops.matrix_transpose(x)) * 0.5


def _sign_free_svd(svd):
    """Functions of an SVD that do not depend on the arbitrary signs of the singular vectors:
    the singular values and u v_1ᴴ (the first min(m, n) columns of v)."""
    s, u, v = svd
    k = s.get_shape()[-1].value
    return tf.concat([tf.reshape(s, [-1]), tf.reshape(
        linalg_ops.matmul(u[..., :, :k], v[..., :, :k], adjoint_b=True), [-1])], 0)


GRAD_CASES = [
    GradCase("BatchMatMulV2", lambda a, b: linalg_ops.matmul(a, b, adjoint_b=True),
             [R.standard_normal((2, 3, 4)), R.standard_normal((5, 4))], name="matmul_broadcast"),
    GradCase("BatchMatMulV2", lambda a, b: linalg_ops.matmul(a, b, adjoint_a=True),
             [R.standard_normal((2, 4, 3)), R.standard_normal((2, 4, 2))], name="matmul_adjoint_a"),
    GradCase("MatrixInverse", lambda x: linalg_ops.matrix_inverse(x), [_spd(3, (2,))]),
    GradCase("MatrixInverse", lambda x: linalg_ops.matrix_inverse(x, adjoint=True),
             [B[0] + 2 * np.eye(2)], name="inverse_adjoint"),
    GradCase("MatrixDeterminant", lambda x: linalg_ops.matrix_determinant(x), [_spd(3, (2,))]),
    GradCase("LogMatrixDeterminant", lambda x: linalg_ops.log_matrix_determinant(x)[1],
             [B + 3 * np.eye(2)]),
    GradCase("Cholesky", lambda x: linalg_ops.cholesky(_sym(x)), [_spd(3, (2,))]),
    GradCase("MatrixSolve", lambda a, b: linalg_ops.matrix_solve(a, b), [_spd(3), RHS]),
    GradCase("MatrixSolve", lambda a, b: linalg_ops.matrix_solve(a, b, adjoint=True),
             [_spd(3, (2,)) + R.standard_normal((2, 3, 3)), R.standard_normal((2, 3, 1))],
             name="solve_adjoint"),
    GradCase("MatrixTriangularSolve", lambda a, b: linalg_ops.matrix_triangular_solve(a, b),
             [L, RHS]),
    GradCase("MatrixTriangularSolve",
             lambda a, b: linalg_ops.matrix_triangular_solve(a, b, lower=False, adjoint=True),
             [np.ascontiguousarray(L.T) + 0.1, RHS], name="triangular_solve_upper_adjoint"),
    GradCase("Qr", lambda x: tf.add_n(list(linalg_ops.qr(x))[1:]) + linalg_ops.qr(x)[0][:, :2, :],
             [R.standard_normal((2, 4, 2))]),
    GradCase("Svd", lambda x: linalg_ops.svd(x, compute_uv=False), [R.standard_normal((2, 3, 4))],
             name="singular_values"),
    GradCase("Svd", lambda x: _sign_free_svd(linalg_ops.svd(x)), [R.standard_normal((2, 4, 3))],
             name="svd_tall"),
    GradCase("Svd", lambda x: _sign_free_svd(linalg_ops.svd(x, full_matrices=True)),
             [R.standard_normal((3, 4))], name="svd_wide_full"),
    GradCase("SelfAdjointEigV2", lambda x: linalg_ops.self_adjoint_eig(_sym(x))[0],
             [_spd(3)], name="eigvals"),
    GradCase("SelfAdjointEigV2",
             lambda x: tf.abs(linalg_ops.self_adjoint_eig(_sym(x))[1]),   # v's sign is arbitrary
             [np.diag([1.0, 2.0, 4.0]) + 0.3 * _spd(3)], name="eigvectors"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _run(*fetches):
    with tf.Session() as sess:
        return sess.run(list(fetches))


def test_values_match_tensorflow():
    with tf.Graph().as_default():
        out = _run(tf.matrix_inverse(A), tf.matrix_inverse(B, adjoint=True),
                   tf.matrix_determinant(B), tf.log_matrix_determinant(B), tf.cholesky(A),
                   tf.matrix_solve(A, RHS), tf.matrix_solve(A, RHS, adjoint=True),
                   tf.matrix_triangular_solve(L, RHS),
                   tf.matrix_triangular_solve(L.T, RHS, lower=False, adjoint=True),
                   tf.self_adjoint_eig(A)[0], tf.svd(RHS, compute_uv=False), tf.trace(B))
    want = [
        [[0.3352272727, -0.0909090909, -0.125], [-0.0909090909, 0.3636363636, 0.0],
         [-0.125, 0.0, 0.25]],
        [[[0.4285714286, -0.1428571429], [0.1428571429, 0.2857142857]], [[0.25, 1.0], [-0.5, 0.0]]],
        [7.0, 2.0],
        ([1.0, 1.0], [1.9459101491, 0.6931471806]),
        [[2.0, 0.0, 0.0], [0.5, 1.6583123952, 0.0], [1.0, 0.0, 2.0]],
        [[-0.5625, -0.4431818182], [1.0, 1.2727272727], [1.125, 1.25]],
        [[-0.5625, -0.4431818182], [1.0, 1.2727272727], [1.125, 1.25]],
        [[0.5, 1.0], [0.8333333333, 1.0], [1.2708333333, 1.625]],
        [[0.5, 1.0], [0.8333333333, 1.0], [1.2708333333, 1.625]],
        [2.0965216173, 3.072223952, 6.8312544307],
        [9.5255180916, 0.5143005807],
        [5.0, 0.5],
    ]
    for got, expected in zip(out, want):
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), expected, atol=1e-9)


def test_decompositions_reconstruct_their_input():
    x = R.standard_normal((2, 4, 3))
    with tf.Graph().as_default():
        (q, r), (qf, rf) = tf.qr(x), tf.qr(x, full_matrices=True)
        s, u, v = tf.svd(x)
        sf, uf, vf = tf.svd(x, full_matrices=True)
        e, w = tf.self_adjoint_eig(_spd(3, (2,)) * 0 + A)
        assert q.get_shape().as_list() == [2, 4, 3] and r.get_shape().as_list() == [2, 3, 3]
        assert qf.get_shape().as_list() == [2, 4, 4] and rf.get_shape().as_list() == [2, 4, 3]
        assert [t.get_shape().as_list() for t in (s, u, v)] == [[2, 3], [2, 4, 3], [2, 3, 3]]
        assert [t.get_shape().as_list() for t in (uf, vf)] == [[2, 4, 4], [2, 3, 3]]
        assert e.get_shape().as_list() == [2, 3] and w.get_shape().as_list() == [2, 3, 3]
        q, r, s, u, v, e, w = _run(q, r, s, u, v, e, w)
    np.testing.assert_allclose(q @ r, x, atol=1e-12)
    np.testing.assert_allclose(np.triu(r), r)
    np.testing.assert_allclose(u @ (s[..., None] * np.swapaxes(v, -1, -2)), x, atol=1e-12)
    np.testing.assert_allclose(w @ (e[..., None] * np.swapaxes(w, -1, -2)), np.stack([A, A]),
                               atol=1e-12)


def test_norm_eye_trace_and_transpose():
    with tf.Graph().as_default():
        out = _run(tf.norm(RHS), tf.norm(RHS, ord=1, axis=[0, 1]),
                   tf.norm(RHS, ord=np.inf, axis=[0, 1]), tf.norm(RHS, ord=2, axis=[0, 1]),
                   tf.norm(RHS, ord=1, axis=1), tf.norm(RHS, ord=3, axis=0),
                   tf.norm(RHS, ord=np.inf), tf.eye(2, 3, batch_shape=[2]),
                   tf.linalg.matmul(B, B, adjoint_a=True))
        kept = tf.norm(tf.zeros([2, 3, 4]), axis=[1, 2], keepdims=True)
        assert kept.get_shape().as_list() == [2, 1, 1]
        assert tf.eye(3).get_shape().as_list() == [3, 3]
        assert tf.eye(2, 3, batch_shape=[4]).get_shape().as_list() == [4, 2, 3]
        assert tf.trace(tf.zeros([2, 3, 4])).get_shape().as_list() == [2]
        assert tf.matrix_transpose(tf.zeros([5, 2, 3])).get_shape().as_list() == [5, 3, 2]
        with pytest.raises(ValueError, match="supported matrix norm"):
            tf.norm(RHS, ord=3, axis=[0, 1])
        with pytest.raises(ValueError, match="supported vector norm"):
            tf.norm(RHS, ord=-1)
        with pytest.raises(ValueError, match="rank >= 2"):
            tf.matrix_transpose([1.0, 2.0])
    want = [9.539392014169456, 12.0, 11.0, 9.525518091565104, [3.0, 7.0, 11.0],
            [5.3484812412, 6.6038544978], 6.0]
    for got, expected in zip(out, want):
        np.testing.assert_allclose(got, expected, rtol=1e-9)
    np.testing.assert_array_equal(out[7], np.broadcast_to(np.eye(2, 3), (2, 2, 3)))
    np.testing.assert_allclose(out[8], np.swapaxes(B, -1, -2) @ B)


def test_static_shapes_and_shape_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None, 3, 3])
        b = tf.placeholder(tf.float64, [None, 3, 2])
        assert tf.matrix_solve(x, b).get_shape().as_list() == [None, 3, 2]
        assert tf.matrix_determinant(x).get_shape().as_list() == [None]
        assert [t.get_shape().as_list() for t in tf.log_matrix_determinant(x)] == [[None]] * 2
        assert tf.linalg.matmul(tf.zeros([7, 1, 2, 3]), tf.zeros([5, 3, 4])).get_shape().as_list() \
            == [7, 5, 2, 4]
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
            tf.matrix_inverse(np.ones((2, 3)))
        with pytest.raises(ValueError, match="at least rank 2 but is rank 1"):
            tf.cholesky(np.ones(3))
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
            tf.matrix_solve(np.ones((2, 2)), np.ones((3, 1)))
        with pytest.raises(TypeError, match="floating point input"):
            tf.matrix_inverse([[1, 2], [3, 4]])


@pytest.mark.parametrize("build, message", [
    (lambda: tf.matrix_inverse([[1.0, 2.0], [2.0, 4.0]]), "Input is not invertible."),
    (lambda: tf.matrix_solve([[1.0, 2.0], [2.0, 4.0]], [[1.0], [1.0]]),
     "Input matrix is not invertible."),
    (lambda: tf.matrix_triangular_solve([[0.0, 0.0], [1.0, 1.0]], [[1.0], [1.0]]),
     "Input matrix is not invertible."),
    (lambda: tf.cholesky([[1.0, 2.0], [2.0, 1.0]]),
     "Cholesky decomposition was not successful. The input might not be valid."),
])
def test_singular_and_indefinite_inputs_fail_as_in_tf1(build, message):
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            _run(build())


def test_linalg_namespace_names():
    assert tf.linalg.inv is tf.matrix_inverse and tf.linalg.det is tf.matrix_determinant
    assert tf.linalg.slogdet is tf.log_matrix_determinant and tf.linalg.eigh is tf.self_adjoint_eig
    assert tf.linalg.band_part is tf.matrix_band_part and tf.linalg.diag is tf.matrix_diag
    assert tf.linalg.triangular_solve is tf.matrix_triangular_solve
