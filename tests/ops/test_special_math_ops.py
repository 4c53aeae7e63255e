"""Special functions and small math ops (zps/ops/special_math_ops.py) against TF 2.21's numbers
(float64, tf.compat.v1 graph mode), written in below.

Tolerances: zps computes in float64 with numpy only; TF's kernels are Eigen's Cephes ports. The
two agree to 1e-9 relative in float64 everywhere below except erfinv near 0, where TF's float64
polynomial is off by ~1e-7 relative (zps: erfinv(1e-10) = 8.86226925e-11, the true value; TF
8.86226999e-11). In float32 TF's own igammac and betainc kernels lose ~1e-5 and ~2e-4 relative
for large a, b (zps computes them in float64 and rounds once).
"""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def run(fetch):
    with tf.Session() as sess:
        return sess.run(fetch)


# (tf.math function, float64 arguments, TF 2.21's float64 results)
TF_VALUES = [
    ("lgamma", [[0.5, 1.0, 2.0, 3.5, -0.5, -2.5, 0.0, -1.0, 1e-08, 100.0, 100000.0, np.inf,
      -np.inf, np.nan, 1.000001]],
     [0.5723649429247001, 0.0, 0.0, 1.2009736023470743, 1.2655121234846454, -0.05624371649767407,
      np.inf, np.inf, 18.42068073818021, 359.13420536957545, 1051287.7089736569, np.inf, np.inf,
      np.nan, -5.772148423874147e-07]),
    ("digamma", [[0.5, 1.0, 2.0, 3.5, -0.5, -2.5, 0.0, -1.0, 1e-08, 100.0, 100000.0, 7.25, np.inf]],
     [-1.9635100260214227, -0.5772156649015323, 0.42278433509846747, 1.1031566406452433,
      0.03648997397857645, 1.1031566406452433, np.nan, np.nan, -100000000.57721566,
      4.600161852738088, 11.512920464961896, 1.9104535268837362, np.inf]),
    ("polygamma", [[0.0, 1.0, 2.0, 3.0, 1.5, -1.0, 1.0, 4.0], [0.5, 1.0, 2.5, 0.7, 1.0, 1.0, -1.5,
      10.0]],
     [-1.9635100260214227, 1.6449340668482266, -0.23620405164172736, 25.879149678427744, np.nan,
      np.nan, 9.379246644989124, -0.0007299311682352869]),
    ("zeta", [[2.0, 3.0, 1.0, 0.5, 4.5, 2.0, 2.0, 3.0, 20.0], [1.0, 2.0, 1.0, 1.0, 0.3, -1.0, -1.5,
      -2.5, 0.5]],
     [1.6449340668482266, 0.2020569031595943, np.inf, np.nan, 225.73807390399492, np.inf,
      9.379246644989124, 0.0541020258208641, 1048576.0003007397]),
    ("igamma", [[1.0, 0.5, 2.0, 10.0, 100.0, 0.0, -1.0, 3.0, 3.0, 0.001, 50.0], [1.0, 0.2, 5.0,
      3.0, 110.0, 1.0, 1.0, 0.0, np.inf, 0.0001, 30.0]],
     [0.6321205588285578, 0.47291074313446185, 0.9595723180054873, 0.0011024881301154796,
      0.8417213299399123, np.nan, np.nan, 0.0, 1.0, 0.9914031196674437, 0.0005188914625480453]),
    ("igammac", [[1.0, 0.5, 2.0, 10.0, 100.0, 0.0, -1.0, 3.0, 3.0, 0.001, 50.0], [1.0, 0.2, 5.0,
      3.0, 110.0, 1.0, 1.0, 0.0, np.inf, 0.0001, 30.0]],
     [0.36787944117144233, 0.5270892568655381, 0.04042768199451279, 0.9988975118698845,
      0.15827867006008764, np.nan, np.nan, 1.0, 0.0, 0.008596880332556345, 0.999481108537452]),
    ("betainc", [[2.0, 0.5, 5.0, 1.0, 10.0, -1.0, 2.0, 2.0, 300.0], [3.0, 0.5, 1.0, 1.0, 20.0, 1.0,
      3.0, 3.0, 200.0], [0.5, 0.1, 0.9, 0.3, 0.4, 0.5, 0.0, 1.5, 0.6]],
     [0.6875, 0.2048327646991335, 0.5904899999999998, 0.3, 0.7853183897628241, np.nan, 0.0, np.nan,
      0.49757138368010567]),
    ("erfinv", [[0.0, 0.5, -0.5, 0.9, -0.999, 0.9999999, 1e-10, 1.0, -1.0, 1.5, 0.3]],
     [0.0, 0.4769362762044699, -0.4769362762044699, 1.1630871536766738, -2.3267537655135246,
      3.7665625817811264, 8.862269987795027e-11, np.inf, -np.inf, np.nan, 0.27246271472675443]),
    ("ndtri", [[0.5, 0.975, 0.025, 1e-10, 1e-300, 0.0, 1.0, 0.9999, 0.3, 0.75, -0.1]],
     [0.0, 1.959963984540054, -1.9599639845400545, -6.361340902404056, -37.0470962993612, -np.inf,
      np.inf, 3.719016485455709, -0.5244005127080409, 0.6744897501960817, np.nan]),
    ("bessel_i0", [[0.0, 1.0, -2.5, 10.0, 29.0, 31.0, 100.0, -700.0]],
     [1.0, 1.2660658777520082, 3.289839144050123, 2815.7166284662544, 292520631785.6908,
      2089962966491.9038, 1.073751707131074e+42, 1.5295933476718735e+302]),
    ("bessel_i0e", [[0.0, 1.0, -2.5, 10.0, 29.0, 31.0, 100.0, -10000.0, np.inf]],
     [1.0, 0.46575960759364043, 0.27004644161220276, 0.1278333371634286, 0.07440746822222558,
      0.07194649669698383, 0.03994437929909669, 0.0039894726746047314, 0.0]),
    ("bessel_i1", [[0.0, 1.0, -2.5, 10.0, 29.0, 31.0, 100.0, -700.0]],
     [0.0, 0.565159103992485, -2.5167162452886984, 2670.988303701255, 287432108126.2548,
      2055972795294.5647, 1.0683693903381627e+42, -1.5285003902339004e+302]),
    ("bessel_i1e", [[0.0, 1.0, -2.5, 10.0, 29.0, 31.0, 100.0, -10000.0, np.inf]],
     [0.0, 0.20791041534970844, -0.20658464953126654, 0.12126268138445552, 0.07311311793938836,
      0.07077639283438568, 0.039744153025130256, -0.003989273195983662, 0.0]),
    ("xlogy", [[0.0, 2.0, 0.0, 1.0, 0.0, -1.0], [0.0, 3.0, np.nan, 0.0, np.inf, 2.0]],
     [0.0, 2.197224577336219, 0.0, -np.inf, 0.0, -0.6931471805599453]),
    ("xdivy", [[0.0, 2.0, 0.0, 1.0, 0.0], [0.0, 3.0, np.nan, 0.0, np.inf]],
     [0.0, 0.6666666666666666, 0.0, np.inf, 0.0]),
    ("xlog1py", [[0.0, 2.0, 0.0, 1.0, 0.0], [-1.0, 3.0, np.nan, -1.0, 1.0]],
     [0.0, 2.772588722239781, 0.0, -np.inf, 0.0]),
    ("multiply_no_nan", [[np.inf, 2.0, np.nan, 1.0], [0.0, 3.0, 0.0, np.inf]],
     [0.0, 6.0, 0.0, np.inf]),
    ("reciprocal_no_nan", [[2.0, 0.0, -4.0]],
     [0.5, 0.0, -0.25]),
    ("rint", [[0.5, 1.5, 2.5, -1.7, -0.5, 3.3]],
     [0.0, 2.0, 2.0, -2.0, -0.0, 3.0]),
    ("nextafter", [[1.0, 1.0, 0.0], [2.0, 0.0, 1.0]],
     [1.0000000000000002, 0.9999999999999999, 5e-324]),
    ("acosh", [[1.0, 2.0, 10.0, 0.5]],
     [0.0, 1.3169578969248166, 2.993222846126381, np.nan]),
    ("asinh", [[-2.0, 0.0, 0.5, 100.0]],
     [-1.4436354751788103, 0.0, 0.48121182505960347, 5.298342365610589]),
    ("atanh", [[-0.5, 0.0, 0.9, 1.0, 2.0]],
     [-0.5493061443340548, 0.0, 1.4722194895832204, np.inf, np.nan]),
]
LOOSER = {"erfinv": 1e-7, "lgamma": 1e-9, "digamma": 1e-9, "polygamma": 1e-11}


@pytest.mark.parametrize("name, args, expected", TF_VALUES, ids=[c[0] for c in TF_VALUES])
def test_float64_values_match_tensorflow(name, args, expected):
    out = getattr(tf.math, name)(*[tf.constant(np.array(a, np.float64)) for a in args])
    assert out.dtype == tf.float64 and out.get_shape().as_list() == [len(args[0])]
    np.testing.assert_allclose(run(out), expected, rtol=LOOSER.get(name, 1e-12), atol=0)


@pytest.mark.parametrize("name, args, expected", [c for c in TF_VALUES if c[0] != "nextafter"],
                         ids=[c[0] for c in TF_VALUES if c[0] != "nextafter"])
def test_float32_is_the_float64_result_rounded(name, args, expected):
    out = getattr(tf.math, name)(*[tf.constant(np.array(a, np.float32)) for a in args])
    assert out.dtype == tf.float32
    wide = getattr(tf.math, name)(*[tf.constant(np.array(a, np.float32).astype(np.float64))
                                    for a in args])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run(out), run(wide).astype(np.float32))


def test_nextafter_float32():
    out = tf.math.nextafter(tf.constant([1.0, 1.0, 0.0]), tf.constant([2.0, 0.0, 1.0]))
    assert run(out).tolist() == [np.nextafter(np.float32(1), np.float32(2)),
                                 np.nextafter(np.float32(1), np.float32(0)),
                                 np.float32(1.401298464324817e-45)]   # TF 2.21's values


def test_names_and_errors():
    assert tf.lgamma is tf.math.lgamma and tf.rint is tf.math.rint and tf.zeta is tf.math.zeta
    assert tf.floor_div is tf.floordiv
    with pytest.raises(TypeError, match="float16, float32, float64"):
        tf.lgamma(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="parameter 'x' of Xlogy"):
        tf.math.xlogy(tf.constant([1]), tf.constant([1]))
    with pytest.raises(TypeError, match="Input must be either real or complex"):
        tf.math.reduce_variance([1, 2])
    with pytest.raises(ValueError, match="must be list type"):
        tf.math.polyval(tf.constant([1.0]), 2.0)
    with pytest.raises(TypeError, match="Expected x to be numeric"):
        tf.is_non_decreasing(["a", "b"])


def test_lbeta_and_polyval_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.lbeta(x).get_shape().as_list() == [None]
    assert tf.math.polyval([], tf.zeros([2])).get_shape().as_list() == [2]


def _r(seed, *shape, lo=0.5, hi=2.5):
    return np.random.RandomState(seed).uniform(lo, hi, shape)


GRAD_CASES = [
    GradCase("Lgamma", tf.lgamma, [np.array([0.3, 1.7, -0.4, 6.0])]),
    GradCase("Digamma", tf.digamma, [np.array([0.3, 1.7, -0.4, 6.0])]),
    GradCase("Polygamma", lambda x: tf.polygamma(tf.constant([1.0, 2.0, 3.0], tf.float64), x),
             [_r(0, 3)], rtol=1e-3),
    GradCase("Zeta", lambda q: tf.zeta(tf.constant([2.0, 3.5], tf.float64), q), [_r(1, 2)]),
    GradCase("Igamma", tf.igamma, [_r(2, 4), _r(3, 4)], rtol=1e-3),
    GradCase("Igammac", tf.igammac, [_r(4, 4), _r(5, 4, lo=2.0, hi=9.0)], rtol=1e-3),
    GradCase("Betainc", lambda x: tf.betainc(tf.constant(2.5, tf.float64),
                                             tf.constant(1.5, tf.float64), x),
             [_r(6, 3, lo=0.1, hi=0.9)]),
    GradCase("Erfinv", tf.math.erfinv, [np.array([-0.9, -0.2, 0.3, 0.95])]),
    GradCase("Ndtri", tf.math.ndtri, [np.array([0.01, 0.4, 0.6, 0.999])]),
    GradCase("BesselI0", tf.math.bessel_i0, [np.array([-2.0, 0.3, 4.0])]),
    GradCase("BesselI0e", tf.math.bessel_i0e, [np.array([-2.0, 0.3, 40.0])]),
    GradCase("BesselI1", tf.math.bessel_i1, [np.array([-2.0, 0.3, 4.0])]),
    GradCase("BesselI1e", tf.math.bessel_i1e, [np.array([-2.0, 0.3, 40.0])]),
    GradCase("Xlogy", tf.math.xlogy, [np.array([0.7, 1.5, -2.0]), _r(7, 3)]),
    GradCase("Xdivy", tf.math.xdivy, [np.array([0.7, 1.5, -2.0]), _r(8, 3)]),
    GradCase("Xlog1py", tf.math.xlog1py, [np.array([0.7, 1.5, -2.0]), _r(9, 3)]),
    GradCase("MulNoNan", tf.math.multiply_no_nan, [_r(10, 3), np.array([0.0, 1.5, -2.0])]),
    GradCase("Acosh", tf.acosh, [_r(11, 3, lo=1.2, hi=4.0)]),
    GradCase("Asinh", tf.asinh, [_r(12, 3, lo=-3.0, hi=3.0)]),
    GradCase("Atanh", tf.atanh, [_r(13, 3, lo=-0.9, hi=0.9)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradients(case)


def test_igamma_gradient_with_respect_to_a_matches_tensorflow():
    # TF 2.21 (IgammaGradA): d/da igamma(a, x) at a = [0.5, 2, 10], x = [0.2, 5, 3].
    a, x = tf.constant([0.5, 2.0, 10.0], tf.float64), tf.constant([0.2, 5.0, 3.0], tf.float64)
    ga, gx = tf.gradients(tf.reduce_sum(tf.igamma(a, x)), [a, x])
    np.testing.assert_allclose(run(ga), TF_IGAMMA_GRAD_A, rtol=1e-7)
    np.testing.assert_allclose(run(gx), TF_IGAMMA_GRAD_X, rtol=1e-12)


TF_IGAMMA_GRAD_A = [-0.8201614064863386, -0.055859896052536745, -0.0014156364605752093]
TF_IGAMMA_GRAD_X = [1.0328830949345564, 0.03368973499542734, 0.002700503931560474]
