"""Complex numbers in the math and linear algebra ops TF takes them in, and the gradients of real
losses through them in TF's convention (``dL/dre + i dL/dim``: the rules of holomorphic ops
multiply by the conjugate of the derivative).

tests/fixtures/tf_complex_grads/expected.npz holds what TensorFlow 2.21 computed for the programs
of tests/fixtures/tf_complex_grads/make.py; the same programs run here on zps.
"""

import numpy as np
import pytest

import zps as tf
from tests import tf_fixtures
from zps.testing.gradient_checker import GradCase, check_gradients

TF_PROGRAMS, TF_VALUES = tf_fixtures.load("tf_complex_grads")
with tf.Graph().as_default():
    _VALUE_NAMES = sorted(TF_PROGRAMS.value_programs(tf))
_GRAD_NAMES = sorted(TF_PROGRAMS.grad_programs(tf))


def _assert_matches_tf(got, expected, what):
    tol = None
    if "expm" in str(what):
        # zps's expm is one [13/13] Pade approximant in float64 for every dtype: scipy's values
        # to 2e-14 where TF's own are 4e-8 off for a large norm (and float32's Pade 7 is 3e-6).
        tol = 1e-7 if expected.dtype in (np.float64, np.complex128) else 1e-5
    tf_fixtures.assert_matches(got, expected, what, 2e-6, tol)


@pytest.fixture(scope="module")
def zps_values():
    with tf.Graph().as_default():
        programs = TF_PROGRAMS.value_programs(tf)
        with tf.Session() as sess:
            return sess.run(programs)


@pytest.mark.parametrize("name", _VALUE_NAMES)
def test_values_and_dtypes_match_tensorflow(zps_values, name):
    _assert_matches_tf(zps_values[name], TF_VALUES[name], name)


@pytest.mark.parametrize("name", _GRAD_NAMES)
def test_gradients_match_tensorflow_conjugate_convention(name):
    build, values = TF_PROGRAMS.grad_programs(tf)[name]
    for i, g in enumerate(TF_PROGRAMS.gradients(tf, build, values)):
        _assert_matches_tf(g, TF_VALUES[name if i == 0 else "%s__%d" % (name, i)], (name, i))


def test_reduce_prod_gradient_is_the_conjugate_of_the_others_product():
    # The brief's example: d real(y0 y1) / dy = [conj(y1), conj(y0)] in TF's convention.
    with tf.Graph().as_default():
        y = tf.constant([1 + 1j, 2 - 1j])
        grad, = tf.gradients(tf.real(tf.reduce_prod(y)), y)
        np.testing.assert_array_equal(tf.Session().run(grad), [2 + 1j, 1 - 1j])


def test_determinant_gradient_is_tfs_rule():
    # TF's _MatrixDeterminantGrad is g det(A) A^-H, not g conj(det(A)) A^-H: for a complex det
    # it is not the conjugate-convention gradient (that would be [[2+1j, 0], [0, 1-1j]] here, as
    # for reduce_prod), but zps gives TF's numbers: (1+1j)(2-1j) (1+1j)/2 = 1+2j, ...
    with tf.Graph().as_default():
        a = tf.constant([[1 + 1j, 0], [0, 2 - 1j]])
        grad, = tf.gradients(tf.real(tf.matrix_determinant(a)), a)
        np.testing.assert_allclose(tf.Session().run(grad), [[1 + 2j, 0], [0, 1.4 - 0.2j]],
                                   atol=1e-15)


def test_sign_of_complex_is_z_over_abs_z_with_tf1s_zero_gradient():
    with tf.Graph().as_default():
        z = tf.constant([3 + 4j, 0j, -2j])
        s = tf.sign(z)
        grad, = tf.gradients(tf.real(s), z)
        value, grad = tf.Session().run([s, grad])
    np.testing.assert_allclose(value, [0.6 + 0.8j, 0, -1j], atol=1e-7)
    np.testing.assert_array_equal(grad, [0, 0, 0])


def test_real_and_imag_of_a_scalar_are_scalars():
    with tf.Graph().as_default():
        z = tf.constant(2 - 3j)
        parts = tf.Session().run([tf.real(z), tf.imag(z), tf.shape(tf.real(z))])
    assert parts[0] == 2.0 and parts[1] == -3.0 and parts[2].tolist() == []


@pytest.mark.parametrize("fn", ["matrix_inverse", "matrix_determinant", "cholesky"])
def test_linear_algebra_still_refuses_integers(fn):
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match=r"complex64 or complex128\), got int32"):
            getattr(tf, fn)(tf.constant([[1, 0], [0, 1]]))


def test_xlogy_refuses_integers_naming_the_complex_types():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="float64, complex64, complex128"):
            tf.math.xlogy(tf.constant([1]), tf.constant([2]))


# -- finite-difference gradient cases for the ops newly open to complex numbers ------------------
def _c(x, y):
    return tf.complex(x, y)


def _mix(z):
    return tf.real(z) * 0.7 - tf.imag(z) * 1.3


_R = np.random.default_rng(5)
_A, _B = _R.uniform(-0.8, 0.8, (2, 3)), _R.uniform(-0.8, 0.8, (2, 3))
_M, _N = np.eye(3) * 2 + _R.uniform(-0.3, 0.3, (3, 3)), _R.uniform(-0.3, 0.3, (3, 3))

GRAD_CASES = [
    GradCase("Tan", lambda x, y: _mix(tf.tan(_c(x, y))), [_A, _B], name="Tan complex"),
    GradCase("Asin", lambda x, y: _mix(tf.asin(_c(x, y))), [_A, _B], name="Asin complex"),
    GradCase("Acos", lambda x, y: _mix(tf.acos(_c(x, y))), [_A, _B], name="Acos complex"),
    GradCase("Atan", lambda x, y: _mix(tf.atan(_c(x, y))), [_A, _B], name="Atan complex"),
    GradCase("Asinh", lambda x, y: _mix(tf.asinh(_c(x, y))), [_A, _B], name="Asinh complex"),
    GradCase("Acosh", lambda x, y: _mix(tf.acosh(_c(x + 2.0, y))), [_A, _B],
             name="Acosh complex"),
    GradCase("Atanh", lambda x, y: _mix(tf.atanh(_c(x, y))), [_A, _B], name="Atanh complex"),
    GradCase("Prod", lambda x, y: _mix(tf.reduce_prod(_c(x, y), axis=1)), [_A, _B],
             name="Prod complex"),
    GradCase("Einsum", lambda x, y: _mix(tf.einsum("ij,kj->ik", _c(x, y), _c(y, x))), [_A, _B],
             name="Einsum complex"),
    GradCase("MatrixInverse", lambda x, y: _mix(tf.matrix_inverse(_c(x, y))), [_M, _N],
             name="MatrixInverse complex"),
    # TF's rule is exact only where det(A) is real (see test_determinant_gradient_is_tfs_rule).
    GradCase("MatrixDeterminant", lambda x, y: _mix(tf.matrix_determinant(_c(x, y))),
             [_M, np.zeros_like(_N)], name="MatrixDeterminant complex, real point"),
    GradCase("MatrixSolve", lambda x, y: _mix(tf.matrix_solve(_c(x, y), _c(y, x), adjoint=True)),
             [_M, _N], name="MatrixSolve complex adjoint"),
    GradCase("MatrixExponential", lambda x: tf.linalg.expm(x * 3.0), [_M - np.eye(3) * 2],
             name="MatrixExponential real, squared"),
    GradCase("MatrixExponential", lambda x, y: _mix(tf.linalg.expm(_c(x, y)[None])), [_M, _N],
             name="MatrixExponential complex batch"),
    GradCase("Qr", lambda x, y: (lambda q, r: _mix(q) + _mix(r))(*tf.qr(_c(x, y))), [_M, _N],
             name="Qr complex"),
    GradCase("Svd", lambda x, y: (lambda s, u, v: s + _mix(tf.matmul(u, v, adjoint_b=True))
                                  + tf.abs(u))(*tf.svd(_c(x, y))), [_M, _N], name="Svd complex"),
    GradCase("SelfAdjointEigV2", lambda x, y: (lambda e, v: _mix(e)[:, None] + tf.abs(v))(
        *tf.self_adjoint_eig(tf.matmul(_c(x, y), _c(x, y), adjoint_b=True))), [_M, _N],
        name="SelfAdjointEigV2 complex"),
    GradCase("Cholesky", lambda x, y: _mix(tf.cholesky(tf.matmul(_c(x, y), _c(x, y),
                                                                 adjoint_b=True))),
             [_M, _N], name="Cholesky complex"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient_matches_finite_differences(case):
    check_gradients(case)
