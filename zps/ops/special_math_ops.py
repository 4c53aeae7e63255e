"""Special functions and the smaller math ops of TF 1.15's ``tf.math``: gamma and its relatives
(lgamma, digamma, polygamma, zeta, the incomplete gamma and beta functions), erfinv and ndtri,
modified Bessel functions, x*log(y) forms, the inverse hyperbolic functions, the *_no_nan
products, variance, norms, cumulative_logsumexp, polyval and monotonicity checks.

Kernels compute in float64 with numpy only (no scipy) and return the input's dtype. Their
accuracy against TF 2.21 (Eigen's Cephes ports), measured in tests/ops/test_special_math_ops.py:
lgamma, erfinv, ndtri, digamma and the Bessel functions agree to ~1e-13 relative in float64;
zeta/polygamma (Euler-Maclaurin, as Cephes), igamma/igammac (series and continued fraction) and
betainc (continued fraction) to ~1e-10. The gradient of igamma and igammac with respect to ``a``
(TF's IgammaGradA) is a central difference of the float64 kernel (~1e-8 relative).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     y = tf.lgamma(tf.constant([1.0, 5.0], tf.float64))
...     print([round(v, 4) for v in tf.Session().run(y).tolist()])
[0.0, 3.1781]
"""

import math

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.ops import array_ops, math_ops
from zps.ops.math_ops import _binary, _scan, _scan_kernel, _unary
from zps.ops.op_util import (
    broadcast_shape,
    broadcast_static,
    check_same_dtype,
    make_op,
    same_shape,
)

_EPS = np.finfo(np.float64).eps
_lgamma_ufunc = np.frompyfunc(lambda v: math.inf if math.isinf(v) or (v <= 0 and v == round(v))
                              else math.lgamma(v), 1, 1)
_erf_ufunc = np.frompyfunc(math.erf, 1, 1)
_erfc_ufunc = np.frompyfunc(math.erfc, 1, 1)


def _f64(*xs):
    return [np.asarray(x, dtype=np.float64) for x in xs]


def _elementwise(fn):
    """A numpy kernel computing ``fn`` on float64 copies of its inputs, in the first input's dtype."""
    def kernel(ctx, *xs):
        out = fn(*np.broadcast_arrays(*_f64(*xs)))
        with np.errstate(over="ignore"):   # beyond float32's range is inf, as TF's float32
            return np.asarray(out, dtype=xs[0].dtype)
    return {"numpy": kernel}


def _register_unary(op_type, fn, grad):
    register_op(op_type, shape=same_shape, kernels=_elementwise(fn), grad=grad)


def _register_binary(op_type, fn, grad):
    register_op(op_type, shape=broadcast_shape, broadcast=True, kernels=_elementwise(fn), grad=grad)


def _float_binary(op_type, x, y, name, names=("x", "y"), complex_ok=False):
    """``complex_ok``: the op takes complex types too (TF's xlogy, xdivy, xlog1py, mul_no_nan)."""
    x = convert_to_tensor(x) if not isinstance(x, float | int) else x
    if hasattr(x, "dtype") and not (x.dtype.is_floating or complex_ok and x.dtype.is_complex):
        raise TypeError("Value passed to parameter '%s' of %s has DataType %s not in list of "
                        "allowed values: float16, float32, float64%s (%s). Cast it first, e.g. "
                        "tf.cast(%s, tf.float32)." % (names[0], op_type, x.dtype.name,
                                                       ", complex64, complex128" if complex_ok
                                                       else "", x.name, names[0]))
    return _binary(op_type, x, y, name, names)


# -- lgamma, digamma, polygamma, zeta ------------------------------------------------------------
def _lgamma(x):
    """log|Gamma(x)| (math.lgamma, exact to an ulp); +inf at the poles 0, -1, -2, ..."""
    with np.errstate(invalid="ignore"):
        out = np.asarray(_lgamma_ufunc(x), dtype=np.float64)
    return np.where(np.isnan(x), np.nan, out)


def _digamma(x):
    """psi(x): reflection below 0, recurrence up to 6, then the asymptotic series (Cephes)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        negative = x <= 0
        pole = negative & (x == np.floor(x))
        reflect = np.where(negative, np.pi / np.tan(np.pi * x), 0.0)
        z = np.where(negative, 1.0 - x, x)
        shift = np.zeros_like(z)
        for _ in range(6):
            small = z < 6
            shift -= np.where(small, 1.0 / z, 0.0)
            z = np.where(small, z + 1.0, z)
        r = 1.0 / (z * z)
        series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))
        out = np.log(z) - 0.5 / z - series + shift - reflect
    return np.where(pole, np.nan, out)


# Bernoulli-number denominators of the Euler-Maclaurin tail of Hurwitz's zeta (Cephes zeta.c).
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta(x, q):
    """Hurwitz's zeta(x, q) = sum_k (k + q) ** -x (Cephes): nan for x < 1, inf for x == 1 and at
    non-positive integer q, nan for other q <= 0 unless x is an integer."""
    x, q = np.broadcast_arrays(*_f64(x, q))
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        q_pole = (q <= 0) & (q == np.floor(q))
        ok = (x > 1) & ~q_pole & ~((q <= 0) & (x != np.floor(x))) & ~np.isnan(q)
        xs, qs = x[ok], q[ok]
        # Sum the first n terms directly (n >= 9, and q + n > 9), the rest by Euler-Maclaurin.
        n = np.maximum(9, np.ceil(9 - qs)).astype(np.int64) if qs.size else np.zeros(0, np.int64)
        s = qs ** -xs
        for k in range(1, int(n.max(initial=0)) + 1):
            s += np.where(k <= n, (qs + k) ** -xs, 0.0)
        w = qs + n
        b = w ** -xs
        s += b * w / (xs - 1) - 0.5 * b
        a, k, done = np.ones_like(xs), np.zeros_like(xs), np.zeros(xs.shape, bool)
        for coef in _ZETA_A:
            a *= xs + k
            b /= w
            t = a * b / coef
            s += np.where(done, 0.0, t)
            done |= np.abs(t / s) < _EPS
            k += 1
            a *= xs + k
            b /= w
            k += 1
        out[ok] = s
    out[(x == 1) | ((x > 1) & q_pole)] = np.inf
    return out


def _polygamma(n, x):
    """psi^(n)(x) = (-1)**(n+1) n! zeta(n+1, x) for integers n >= 1, digamma for n = 0, nan for
    other n."""
    n, x = np.broadcast_arrays(*_f64(n, x))
    integer = (n >= 0) & (n == np.floor(n))
    with np.errstate(all="ignore"):
        nn = np.where(integer, n, 1.0)
        fact = np.exp(_lgamma(nn + 1.0))
        out = np.where(nn % 2 == 0, -1.0, 1.0) * fact * _zeta(nn + 1.0, x)
    out = np.where(n == 0, _digamma(x), out)
    return np.where(integer, out, np.nan)


_register_unary("Lgamma", _lgamma, lambda op, g: [g * digamma(op.inputs[0])])
_register_unary("Digamma", _digamma, lambda op, g: [g * polygamma(1.0, op.inputs[0])])


def _polygamma_grad(op, g):
    n, x = op.inputs
    return [None, g * polygamma(n + 1.0, x)]


def _zeta_grad(op, g):
    x, q = op.inputs
    return [None, g * -x * zeta(x + 1.0, q)]


_register_binary("Polygamma", _polygamma, _polygamma_grad)
_register_binary("Zeta", _zeta, _zeta_grad)


def lgamma(x, name=None):
    """``log(|Gamma(x)|)`` elementwise (+inf at 0, -1, -2, ...).

    Example: ``tf.lgamma([0.5, 3.0])`` evaluates to ``[0.5723649, 0.6931472]``.
    """
    return _unary("Lgamma", x, name, floats_only=True)


def digamma(x, name=None):
    """``d/dx lgamma(x)`` elementwise (nan at 0, -1, -2, ...).

    Example: ``tf.digamma([1.0])`` evaluates to ``[-0.5772157]`` (minus Euler's constant).
    """
    return _unary("Digamma", x, name, floats_only=True)


def polygamma(a, x, name=None):
    """The ``a``-th derivative of digamma at ``x`` (``a`` a non-negative integer, given as a float
    of the dtype of ``x``; nan otherwise).

    Example: ``tf.polygamma(1.0, [1.0])`` evaluates to ``[1.644934]`` (pi**2 / 6).
    """
    return _float_binary("Polygamma", a, x, name, names=("a", "x"))


def zeta(x, q, name=None):
    """Hurwitz's zeta function ``sum_k (k + q) ** -x`` (nan for ``x < 1``, inf for ``x == 1``).

    Example: ``tf.zeta([2.0], [1.0])`` evaluates to ``[1.644934]``.
    """
    return _float_binary("Zeta", x, q, name, names=("x", "q"))


def lbeta(x, name=None):
    """``log(|Beta(x)|)`` reduced over the last dimension:
    ``sum(lgamma(x), -1) - lgamma(sum(x, -1))``, as TF 2.21's (an empty last dimension: -inf).

    Example: ``tf.lbeta([[1.0, 2.0]])`` evaluates to ``[-0.6931472]`` (log(1/2)).
    """
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "lbeta") as scope:
        log_prod = math_ops.reduce_sum(lgamma(x), axis=-1)
        total = math_ops.reduce_sum(x, axis=-1)
        return math_ops.subtract(log_prod, lgamma(total), name=scope)


# -- igamma, igammac, betainc --------------------------------------------------------------------
_TINY = 1e-300
_MAX_ITER = 2000


def _igamma_pair(a, x):
    """``(P, Q)``, the regularized lower and upper incomplete gamma functions: P by its series
    where ``x < a + 1``, Q by its continued fraction (modified Lentz) elsewhere."""
    a, x = np.broadcast_arrays(*_f64(a, x))
    p = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        ok = (a > 0) & (x >= 0) & ~np.isnan(a) & ~np.isnan(x)
        log_front = a * np.log(x) - x - _lgamma(a)
        series = ok & (x < a + 1) & (x > 0)
        aa, xx = a[series], x[series]
        term = 1.0 / aa
        total = term.copy()
        ap = aa.copy()
        for _ in range(_MAX_ITER):
            ap += 1
            term *= xx / ap
            total += term
            if not (np.abs(term) > np.abs(total) * _EPS).any():
                break
        p[series] = total * np.exp(log_front[series])
        frac = ok & (x >= a + 1) & np.isfinite(x)
        aa, xx = a[frac], x[frac]
        b = xx + 1 - aa
        c = np.full(b.shape, 1 / _TINY)
        d = 1 / b
        h = d.copy()
        for i in range(1, _MAX_ITER):
            an = -i * (i - aa)
            b += 2
            d = an * d + b
            d = np.where(np.abs(d) < _TINY, _TINY, d)
            c = b + an / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            d = 1 / d
            delta = d * c
            h *= delta
            if not (np.abs(delta - 1) > _EPS).any():
                break
        q_frac = np.exp(log_front[frac]) * h
        p[frac] = 1 - q_frac
        q = 1 - p
        q[frac] = q_frac
        p[ok & (x == 0)], q[ok & (x == 0)] = 0.0, 1.0
        p[ok & np.isposinf(x)], q[ok & np.isposinf(x)] = 1.0, 0.0
    q[np.isnan(p)] = np.nan
    return p, q


def _igamma_grad_a_kernel(upper):
    def kernel(ctx, a, x):
        af, xf = _f64(a, x)
        h = 1e-5 * np.maximum(np.abs(af), 1.0)
        h = np.minimum(h, 0.5 * af)     # stay inside a > 0
        up = _igamma_pair(af + h, xf)[upper]
        down = _igamma_pair(af - h, xf)[upper]
        return np.asarray((up - down) / (2 * h), dtype=a.dtype)
    return {"numpy": kernel}


def _igamma_grad(sign, grad_a_op):
    def grad(op, g):
        a, x = op.inputs
        # d/dx P(a, x) = exp(-x) x^(a-1) / Gamma(a), taken in logs; Q's is its negative.
        dx = math_ops.exp(-x + (a - 1.0) * math_ops.log(x) - lgamma(a))
        da = make_op(grad_a_op, [a, x], name=grad_a_op)
        return [g * da, g * sign * dx]
    return grad


register_op("IgammaGradA", shape=broadcast_shape, kernels=_igamma_grad_a_kernel(0), grad=None)
register_op("IgammacGradA", shape=broadcast_shape, kernels=_igamma_grad_a_kernel(1), grad=None)
_register_binary("Igamma", lambda a, x: _igamma_pair(a, x)[0], _igamma_grad(1.0, "IgammaGradA"))
_register_binary("Igammac", lambda a, x: _igamma_pair(a, x)[1], _igamma_grad(-1.0, "IgammacGradA"))


def igamma(a, x, name=None):
    """The regularized lower incomplete gamma function ``P(a, x)`` (nan for ``a <= 0``, ``x < 0``).

    Example: ``tf.igamma([1.0], [1.0])`` evaluates to ``[0.6321206]`` (1 - 1/e).
    """
    return _float_binary("Igamma", a, x, name, names=("a", "x"))


def igammac(a, x, name=None):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``.

    Example: ``tf.igammac([1.0], [1.0])`` evaluates to ``[0.36787945]`` (1/e).
    """
    return _float_binary("Igammac", a, x, name, names=("a", "x"))


def _betacf(a, b, x):
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1, a - 1
    c = np.ones_like(x)
    d = 1 - qab * x / qap
    d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    for m in range(1, _MAX_ITER):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1 + aa / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            delta = d * c
            h *= delta
        if not (np.abs(delta - 1) > _EPS).any():
            break
    return h


def _betainc(a, b, x):
    """I_x(a, b), the regularized incomplete beta function (nan outside a, b > 0, 0 <= x <= 1)."""
    a, b, x = np.broadcast_arrays(*_f64(a, b, x))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        ok = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
        inner = ok & (x > 0) & (x < 1)
        a_, b_, x_ = a[inner], b[inner], x[inner]
        log_front = (_lgamma(a_ + b_) - _lgamma(a_) - _lgamma(b_) + a_ * np.log(x_)
                     + b_ * np.log1p(-x_))
        # The fraction converges fast for x < (a+1)/(a+b+2); elsewhere use I_x(a,b) = 1 - I_{1-x}(b,a).
        direct = x_ < (a_ + 1) / (a_ + b_ + 2)
        res = np.empty(a_.shape)
        res[direct] = (np.exp(log_front[direct]) * _betacf(a_[direct], b_[direct], x_[direct])
                       / a_[direct])
        flip = ~direct
        res[flip] = 1 - (np.exp(log_front[flip]) * _betacf(b_[flip], a_[flip], 1 - x_[flip])
                         / b_[flip])
        out[inner] = res
        out[ok & (x == 0)] = 0.0
        out[ok & (x == 1)] = 1.0
    return out


def _betainc_kernel(ctx, a, b, x):
    return np.asarray(_betainc(a, b, x), dtype=x.dtype)


def _betainc_shape(op):
    a, b, x = (t.get_shape() for t in op.inputs)
    return broadcast_static(broadcast_static(a, b), x)


def _betainc_grad(op, g):
    # TF's rule: the gradient with respect to x only (a and b get None).
    a, b, x = op.inputs
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    dx = math_ops.exp((a - 1.0) * math_ops.log(x) + (b - 1.0) * math_ops.log1p(-x) - log_beta)
    return [None, None, g * dx]


register_op("Betainc", shape=_betainc_shape, broadcast=True, kernels={"numpy": _betainc_kernel},
            grad=_betainc_grad)


def betainc(a, b, x, name=None):
    """The regularized incomplete beta function ``I_x(a, b)`` elementwise (broadcasting).

    Example: ``tf.betainc([2.0], [3.0], [0.5])`` evaluates to ``[0.6875]``.
    """
    x = convert_to_tensor(x)
    a, b = convert_to_tensor(a, dtype=x.dtype), convert_to_tensor(b, dtype=x.dtype)
    for arg, t in (("a", a), ("b", b), ("x", x)):
        if not t.dtype.is_floating or t.dtype == _dtypes.float16:
            raise TypeError("Value passed to parameter '%s' of Betainc has DataType %s not in "
                            "list of allowed values: float32, float64 (%s)"
                            % (arg, t.dtype.name, t.name))
    check_same_dtype("Betainc", x, a)
    check_same_dtype("Betainc", x, b)
    return make_op("Betainc", [a, b, x], name=name or "Betainc")


# -- erfinv, ndtri -------------------------------------------------------------------------------
def _giles_erfinv(y, w):
    """Giles' single-precision erfinv from ``w = -log((1-y)(1+y))``: the start of Newton's steps."""
    small = w < 5
    t = np.where(small, w - 2.5, np.sqrt(w) - 3)
    coefs_small = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
    coefs_large = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                   0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
    ps, pl = np.zeros_like(t), np.zeros_like(t)
    for cs, cl in zip(coefs_small, coefs_large):
        ps, pl = ps * t + cs, pl * t + cl
    return np.where(small, ps, pl) * y


def _erfinv_center(y):
    """erfinv for |y| < 0.5: Newton's steps on erf(x) = y."""
    x = _giles_erfinv(y, -np.log1p(-y * y))
    for _ in range(3):
        err = np.asarray(_erf_ufunc(x), dtype=np.float64) - y
        x = x - err / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    return x


def _erfcinv(z):
    """erfcinv for 0 < z <= 1 (x >= 0): Newton's steps on log(erfc(x)) = log(z), which keep
    their precision in the far tail (z down to the smallest double)."""
    log_z = np.log(z)
    # Giles' start is good down to z ~ 1e-12; below, erfc(x) ~ exp(-x^2) / (x sqrt(pi)) is.
    x = np.sqrt(-log_z)
    for _ in range(3):
        x = np.sqrt(np.maximum(-log_z - np.log(x * math.sqrt(math.pi)), 1.0))
    x = np.where(z > 1e-12, _giles_erfinv(1 - z, -np.log(z * (2 - z))), x)
    for _ in range(5):
        e = np.asarray(_erfc_ufunc(x), dtype=np.float64)
        slope = -2 / math.sqrt(math.pi) * np.exp(-x * x) / e
        x = x - (np.log(e) - log_z) / slope
    return x


def _erfinv(y):
    y = np.asarray(y, dtype=np.float64)
    out = np.full(y.shape, np.nan)
    with np.errstate(all="ignore"):
        center = np.abs(y) < 0.5
        out[center] = _erfinv_center(y[center])
        tail = (np.abs(y) >= 0.5) & (np.abs(y) < 1)
        out[tail] = np.sign(y[tail]) * _erfcinv(1 - np.abs(y[tail]))
    out[y == 1], out[y == -1] = np.inf, -np.inf
    return out


def _ndtri(p):
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    with np.errstate(all="ignore"):
        center = np.abs(p - 0.5) < 0.25     # 2p - 1 is exact here
        out[center] = math.sqrt(2) * _erfinv_center(2 * p[center] - 1)
        low = (p > 0) & (p <= 0.25)
        out[low] = -math.sqrt(2) * _erfcinv(2 * p[low])
        high = (p >= 0.75) & (p < 1)
        out[high] = math.sqrt(2) * _erfcinv(2 * (1 - p[high]))
    out[p == 0], out[p == 1] = -np.inf, np.inf
    return out


_register_unary("Erfinv", _erfinv, lambda op, g: [
    g * (math.sqrt(math.pi) / 2) * math_ops.exp(math_ops.square(op.outputs[0]))])
_register_unary("Ndtri", _ndtri, lambda op, g: [
    g * math.sqrt(2 * math.pi) * math_ops.exp(math_ops.square(op.outputs[0]) / 2.0)])


def erfinv(x, name=None):
    """The inverse of ``erf`` elementwise (±inf at ±1, nan outside [-1, 1]).

    Example: ``tf.math.erfinv([0.5])`` evaluates to ``[0.47693628]``.
    """
    return _unary("Erfinv", x, name, floats_only=True)


def ndtri(x, name=None):
    """The inverse of the standard normal CDF elementwise (the ``x``-quantile of N(0, 1)).

    Example: ``tf.math.ndtri([0.975])`` evaluates to ``[1.959964]``.
    """
    return _unary("Ndtri", x, name, floats_only=True)


# -- modified Bessel functions of the first kind, orders 0 and 1 ---------------------------------
_BESSEL_SWITCH = 30.0   # power series below, asymptotic expansion above


def _bessel_ie(order, x):
    """``exp(-|x|) I_order(x)`` for order 0 or 1: the power series for |x| <= 30 (terms up to
    ~1e12, so ~1e-15 relative), the asymptotic expansion in 1/|x| beyond (its terms fall below
    1e-17 before they grow)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = np.empty(x.shape)
    with np.errstate(all="ignore"):
        near = ax <= _BESSEL_SWITCH
        h = ax[near] / 2
        term = h ** order / math.factorial(order)
        total = term.copy()
        for k in range(1, 120):
            term = term * h * h / (k * (k + order))
            total += term
        out[near] = total * np.exp(-ax[near])
        far = ax[~near]
        mu = 4.0 * order * order
        term = np.ones_like(far)
        total = term.copy()
        for k in range(1, 30):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8 * far)
            total += term
        out[~near] = total / np.sqrt(2 * np.pi * far)
        out[np.isinf(x)] = 0.0
    return out * np.sign(x) if order == 1 else out


def _exp_abs(x):
    with np.errstate(over="ignore"):
        return np.exp(np.abs(x))


_register_unary("BesselI0e", lambda x: _bessel_ie(0, x), lambda op, g: [
    g * (bessel_i1e(op.inputs[0]) - math_ops.sign(op.inputs[0]) * op.outputs[0])])
_register_unary("BesselI1e", lambda x: _bessel_ie(1, x), lambda op, g: [
    g * _bessel_i1e_slope(op.inputs[0], op.outputs[0])])
_register_unary("BesselI0", lambda x: _bessel_ie(0, x) * _exp_abs(x),
                lambda op, g: [g * bessel_i1(op.inputs[0])])
_register_unary("BesselI1", lambda x: np.where(np.isinf(x), x, _bessel_ie(1, x) * _exp_abs(x)),
                lambda op, g: [g * _bessel_i1_slope(op.inputs[0], op.outputs[0])])


def _safe_over_x(y, x):
    """``y / x``, 0.5 where x is 0 (the limit of I1(x)/x and I1e(x)/x)."""
    zero = math_ops.equal(x, 0.0)
    safe = array_ops.where(zero, array_ops.ones_like(x), x)
    return array_ops.where(zero, 0.5 * array_ops.ones_like(x), y / safe)


def _bessel_i1_slope(x, y):
    return bessel_i0(x) - _safe_over_x(y, x)   # I1' = I0 - I1/x (TF's rule)


def _bessel_i1e_slope(x, y):
    return bessel_i0e(x) - y * math_ops.sign(x) - _safe_over_x(y, x)


def bessel_i0(x, name=None):
    """The modified Bessel function of the first kind of order 0, ``I0(x)``, elementwise.

    Example: ``tf.math.bessel_i0([1.0])`` evaluates to ``[1.2660658]``.
    """
    return _unary("BesselI0", x, name, floats_only=True)


def bessel_i0e(x, name=None):
    """``exp(-|x|) * I0(x)`` elementwise (no overflow for large ``|x|``)."""
    return _unary("BesselI0e", x, name, floats_only=True)


def bessel_i1(x, name=None):
    """The modified Bessel function of the first kind of order 1, ``I1(x)``, elementwise."""
    return _unary("BesselI1", x, name, floats_only=True)


def bessel_i1e(x, name=None):
    """``exp(-|x|) * I1(x)`` elementwise (no overflow for large ``|x|``)."""
    return _unary("BesselI1e", x, name, floats_only=True)


# -- xlogy, xdivy, xlog1py, multiply_no_nan, reciprocal_no_nan ------------------------------------
def _float64_binary(fn):
    """A kernel for every backend: ``fn(xp, x, y)`` on float64 (complex128) copies of the
    inputs, in x's dtype (plain arithmetic: cupy runs it on the GPU)."""
    def kernel(ctx, x, y):
        xp = ctx.xp
        wide = xp.complex128 if x.dtype.kind == "c" else xp.float64
        with np.errstate(all="ignore"):   # beyond float32's range is inf, as TF's float32
            return fn(xp, x.astype(wide), y.astype(wide)).astype(x.dtype)
    return kernel


def _register_xp_binary(op_type, fn, grad):
    register_op(op_type, shape=broadcast_shape, broadcast=True, kernel=_float64_binary(fn),
                grad=grad)


def _not_zero(x):
    return math_ops.cast(math_ops.not_equal(x, 0.0), x.dtype)


# 0 where x is 0, whatever y (also nan or inf: TF 2.21's kernels). The gradient rules are TF's,
# which conjugate nothing: for complex inputs they are not the conjugate-convention gradient of
# the other ops (finite differences disagree), but they give TF's numbers.
_register_xp_binary("Xlogy", lambda xp, x, y: xp.where(x == 0, 0.0, x * xp.log(y)), lambda op, g: [
    g * xlogy(_not_zero(op.inputs[0]), op.inputs[1]), g * xdivy(op.inputs[0], op.inputs[1])])
_register_xp_binary("Xdivy", lambda xp, x, y: xp.where(x == 0, 0.0, x / y), lambda op, g: [
    g * xdivy(_not_zero(op.inputs[0]), op.inputs[1]),
    g * xdivy(-op.inputs[0], math_ops.square(op.inputs[1]))])
_register_xp_binary("Xlog1py", lambda xp, x, y: xp.where(x == 0, 0.0, x * xp.log1p(y)),
                    lambda op, g: [g * xlog1py(_not_zero(op.inputs[0]), op.inputs[1]),
                                   g * xdivy(op.inputs[0], op.inputs[1] + 1.0)])
# 0 where y is 0, even if x is inf or nan
_register_xp_binary("MulNoNan", lambda xp, x, y: xp.where(y == 0, 0.0, x * y), lambda op, g: [
    multiply_no_nan(g, op.inputs[1]), multiply_no_nan(op.inputs[0], g)])


def xlogy(x, y, name=None):
    """``x * log(y)``, and 0 where ``x`` is 0 (whatever ``y``).

    Example: ``tf.math.xlogy([0.0, 2.0], [0.0, 3.0])`` evaluates to ``[0., 2.1972246]``.
    """
    return _float_binary("Xlogy", x, y, name, complex_ok=True)


def xdivy(x, y, name=None):
    """``x / y``, and 0 where ``x`` is 0 (whatever ``y``)."""
    return _float_binary("Xdivy", x, y, name, complex_ok=True)


def xlog1py(x, y, name=None):
    """``x * log1p(y)``, and 0 where ``x`` is 0 (whatever ``y``)."""
    return _float_binary("Xlog1py", x, y, name, complex_ok=True)


def multiply_no_nan(x, y, name=None):
    """``x * y``, and 0 where ``y`` is 0 even if ``x`` is inf or nan.

    Example: ``tf.math.multiply_no_nan([np.inf, 2.0], [0.0, 3.0])`` evaluates to ``[0., 6.]``.
    """
    return _float_binary("MulNoNan", x, y, name, complex_ok=True)


def reciprocal_no_nan(x, name=None):
    """``1 / x``, and 0 where ``x`` is 0 (TF's ``div_no_nan(1, x)``).

    Example: ``tf.math.reciprocal_no_nan([2.0, 0.0])`` evaluates to ``[0.5, 0.]``.
    """
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "reciprocal_no_nan") as scope:
        return math_ops.div_no_nan(array_ops.ones_like(x), x, name=scope)


# -- rint, nextafter, acosh, asinh, atanh ---------------------------------------------------------
register_op("Rint", shape=same_shape, kernel=lambda ctx, x: ctx.xp.rint(x), grad=None)
register_op("NextAfter", shape=broadcast_shape, broadcast=True,
            kernel=lambda ctx, x1, x2: ctx.xp.nextafter(x1, x2), grad=None)
register_op("Acosh", shape=same_shape, kernel=lambda ctx, x: ctx.xp.arccosh(x),
            grad=lambda op, g: [g / math_ops.sinh(math_ops.conj(op.outputs[0]))])
register_op("Asinh", shape=same_shape, kernel=lambda ctx, x: ctx.xp.arcsinh(x),
            grad=lambda op, g: [g / math_ops.cosh(math_ops.conj(op.outputs[0]))])
register_op("Atanh", shape=same_shape, kernel=lambda ctx, x: ctx.xp.arctanh(x),
            grad=lambda op, g: [g * math_ops.reciprocal(
                1.0 - math_ops.square(math_ops.conj(op.inputs[0])))])


def rint(x, name=None):
    """Each element rounded to the nearest integer, halves to even (no gradient, as TF's).

    Example: ``tf.rint([0.5, 1.5, -1.7])`` evaluates to ``[0., 2., -2.]``.
    """
    return _unary("Rint", x, name, floats_only=True)


def nextafter(x1, x2, name=None):
    """The next representable value after ``x1`` in the direction of ``x2`` (float32/float64)."""
    return _float_binary("NextAfter", x1, x2, name, names=("x1", "x2"))


def acosh(x, name=None):
    """The inverse hyperbolic cosine of each element (nan below 1)."""
    return _unary("Acosh", x, name, floats_only=True, complex_ok=True)


def asinh(x, name=None):
    """The inverse hyperbolic sine of each element."""
    return _unary("Asinh", x, name, floats_only=True, complex_ok=True)


def atanh(x, name=None):
    """The inverse hyperbolic tangent of each element (±inf at ±1, nan outside)."""
    return _unary("Atanh", x, name, floats_only=True, complex_ok=True)


floor_div = math_ops.floordiv   # TF1's raw FloorDiv op under its generated name


# -- reductions: variance, std, euclidean norm; cumulative_logsumexp -----------------------------
def _check_float_reduce(what, x):
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError("Input must be either real or complex. Received integer type %s (%s); "
                        "tf.math.%s takes floating or complex tensors: tf.cast it first."
                        % (x.dtype.as_numpy_dtype.__name__, x.name, what))


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance of the elements across ``axis`` (all by default): the mean of the squared
    deviations from the mean (floating or complex tensors, as TF); for complex numbers the mean
    of ``|x - mean|**2``, a real tensor (float32 for complex64).

    Example: ``tf.math.reduce_variance([[1.0, 2.0], [3.0, 4.0]])`` evaluates to ``1.25``.
    """
    x = convert_to_tensor(input_tensor)
    _check_float_reduce("reduce_variance", x)
    with x.graph.name_scope(name or "reduce_variance") as scope:
        means = math_ops.reduce_mean(x, axis=axis, keepdims=True)
        deviations = x - means
        squared = (math_ops.real(deviations * math_ops.conj(deviations)) if x.dtype.is_complex
                   else math_ops.square(deviations))
        return math_ops.reduce_mean(squared, axis=axis, keepdims=keepdims, name=scope)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation of the elements across ``axis``: ``sqrt(reduce_variance)``.

    Example: ``tf.math.reduce_std([[1.0, 2.0], [3.0, 4.0]], axis=1)`` evaluates to ``[0.5, 0.5]``.
    """
    x = convert_to_tensor(input_tensor)
    _check_float_reduce("reduce_std", x)
    with x.graph.name_scope(name or "reduce_std") as scope:
        return math_ops.sqrt(reduce_variance(x, axis=axis, keepdims=keepdims), name=scope)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(sum(|x| ** 2))`` across ``axis`` (all by default); integers give the integer part,
    as TF's EuclideanNorm kernel, and complex numbers a complex tensor (as TF).

    Example: ``tf.math.reduce_euclidean_norm([3.0, 4.0])`` evaluates to ``5.0``.
    """
    x = convert_to_tensor(input_tensor)
    with x.graph.name_scope(name or "reduce_euclidean_norm") as scope:
        if x.dtype.is_integer:
            total = math_ops.reduce_sum(math_ops.square(x), axis=axis, keepdims=keepdims)
            root = math_ops.sqrt(math_ops.cast(total, _dtypes.float64))
            return math_ops.cast(root, x.dtype, name=scope)
        squared = x * math_ops.conj(x) if x.dtype.is_complex else math_ops.square(x)   # |x|**2
        return math_ops.sqrt(math_ops.reduce_sum(squared, axis=axis, keepdims=keepdims),
                             name=scope)


def _logaddexp_accumulate(m, axis, dtype):
    with np.errstate(invalid="ignore"):   # -inf + -inf: logaddexp is -inf, as it should be
        return np.logaddexp.accumulate(m, axis=axis, dtype=dtype)


def _cumulative_logsumexp_grad(op, g):
    # TF's rule: the reverse cumulative logsumexp of log|g| - out, for g's positive and negative
    # parts separately (so no exp overflows), times exp(x).
    x, out, attrs = op.inputs[0], op.outputs[0], op._attrs
    neg_inf = array_ops.fill(array_ops.shape(g), np.array(-np.inf, g.dtype.as_numpy_dtype))
    log_pos = array_ops.where(math_ops.greater(g, 0.0), math_ops.log(math_ops.abs(g)), neg_inf)
    log_neg = array_ops.where(math_ops.less(g, 0.0), math_ops.log(math_ops.abs(g)), neg_inf)
    parts = [math_ops.exp(cumulative_logsumexp(lg - out, attrs["axis"], attrs["exclusive"],
                                               not attrs["reverse"]) + x)
             for lg in (log_pos, log_neg)]
    return [parts[0] - parts[1]]


register_op("CumulativeLogsumexp", shape=same_shape,
            kernels={"numpy": _scan_kernel(_logaddexp_accumulate, -np.inf)},
            grad=_cumulative_logsumexp_grad)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow (``exclusive`` and ``reverse``
    as in ``tf.cumsum``; an exclusive first element is -inf).

    Example: ``tf.math.cumulative_logsumexp([0.0, 0.0])`` evaluates to ``[0., 0.6931472]``.
    """
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError("Value passed to parameter 'x' of CumulativeLogsumexp has DataType %s not "
                        "in list of allowed values: float16, float32, float64 (%s)"
                        % (x.dtype.name, x.name))
    return _scan("CumulativeLogsumexp", x, axis, exclusive, reverse, name)


# -- polyval, is_non_decreasing, is_strictly_increasing -------------------------------------------
def polyval(coeffs, x, name=None):
    """``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` by Horner's rule, elementwise in ``x``
    (``coeffs`` a Python list of tensors or numbers; an empty list gives zeros like ``x``).

    Example: ``tf.math.polyval([1.0, 2.0, 3.0], 2.0)`` evaluates to ``11.0`` (x**2 + 2x + 3).
    """
    if not isinstance(coeffs, list | tuple):
        raise ValueError("Argument coeffs must be list type found %s." % type(coeffs))
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "polyval") as scope:
        if not coeffs:
            return array_ops.zeros_like(x, name=scope)
        coeffs = [convert_to_tensor(c, dtype=x.dtype) for c in coeffs]
        p = coeffs[0]
        for c in coeffs[1:]:
            p = c + p * x
        return array_ops.identity(p, name=scope)


def _monotonic(what, x, compare, name):
    x = convert_to_tensor(x)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError("Expected x to be numeric, instead found: %s (%s)" % (x.dtype.name, x.name))
    with x.graph.name_scope(name or what) as scope:
        flat = array_ops.reshape(x, [-1])
        diff = flat[1:] - flat[:-1] if not x.dtype.is_unsigned else None
        if diff is None:   # unsigned differences wrap around: compare the elements instead
            return math_ops.reduce_all(compare(flat[1:], flat[:-1]), name=scope)
        return math_ops.reduce_all(compare(diff, array_ops.zeros_like(diff)), name=scope)


def is_non_decreasing(x, name=None):
    """True when ``x`` flattened is non-decreasing (``x[i] <= x[i+1]``; also for < 2 elements).

    Example: ``tf.is_non_decreasing([1, 1, 2])`` evaluates to ``True``.
    """
    return _monotonic("is_non_decreasing", x, math_ops.greater_equal, name)


def is_strictly_increasing(x, name=None):
    """True when ``x`` flattened is strictly increasing (``x[i] < x[i+1]``; also for < 2 elements).

    Example: ``tf.is_strictly_increasing([1, 1, 2])`` evaluates to ``False``.
    """
    return _monotonic("is_strictly_increasing", x, math_ops.greater, name)


# The top-level TF1 names; tf.math has these and the others (zps/math.py imports them).
__all__ = [
    "acosh", "asinh", "atanh", "betainc", "digamma", "floor_div", "igamma", "igammac",
    "is_non_decreasing", "is_strictly_increasing", "lbeta", "lgamma", "polygamma", "rint", "zeta",
]
