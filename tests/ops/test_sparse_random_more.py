"""tf.sparse's and tf.random's later additions: sparse values against TF 2.21's tf.compat.v1
numbers (bincount, expand_dims, eye, reset_shape, cross and cross_hashed bit for bit), random
ops by their shapes, dtypes, determinism and distributions (zps draws from numpy, not TF's
streams).
"""

# ruff: noqa: E501 - the case tables keep one call per line, as run under TF

import numpy as np
import pytest

import zps as tf


def vals():
    return tf.constant([[1, 2, 2, 7], [0, 0, 3, 0]], tf.int32)


def sp():
    return tf.SparseTensor([[0, 1], [0, 3], [2, 0], [2, 2], [2, 3]], tf.constant([3, 1, 3, 3, 0], tf.int64), [4, 5])


def spw():
    return tf.SparseTensor([[0, 1], [0, 3], [2, 0], [2, 2], [2, 3]], [0.5, 1.5, 2., 3., 4.], [4, 5])


def ids_a():
    return tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0]], tf.constant(["a", "b", "c", "d"]), [3, 2])


def ids_b():
    return tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant([7, 11, 12], tf.int64), [3, 2])


def dense_s():
    return tf.constant([["x"], ["y"], ["z"]])


def dense_i():
    return tf.constant([[5, 6], [7, 8], [9, 10]], tf.int32)


# (name, build, TF's flat indices, values, dense_shape, values' dtype)
SPARSE_CASES = [
    ('bc0', lambda: tf.sparse.bincount(vals()),
     [0, 1, 2, 3, 7], [3, 1, 2, 1, 1], [8], 'int32'),
    ('bc1', lambda: tf.sparse.bincount(vals(), axis=-1),
     [0, 1, 0, 2, 0, 7, 1, 0, 1, 3], [1, 2, 1, 3, 1], [2, 8], 'int32'),
    ('bc_min', lambda: tf.sparse.bincount(vals(), axis=-1, minlength=10),
     [0, 1, 0, 2, 0, 7, 1, 0, 1, 3], [1, 2, 1, 3, 1], [2, 10], 'int32'),
    ('bc_max', lambda: tf.sparse.bincount(vals(), axis=-1, maxlength=3),
     [0, 1, 0, 2, 1, 0], [1, 2, 3], [2, 3], 'int32'),
    ('bc_bin', lambda: tf.sparse.bincount(vals(), axis=-1, binary_output=True),
     [0, 1, 0, 2, 0, 7, 1, 0, 1, 3], [1, 1, 1, 1, 1], [2, 8], 'int32'),
    ('bc_w1', lambda: tf.sparse.bincount(vals(), weights=tf.constant([[1., 2, 3, 4], [5, 6, -6, 0]]), axis=-1),
     [0, 1, 0, 2, 0, 7, 1, 0, 1, 3], [1.0, 5.0, 4.0, 11.0, -6.0], [2, 8], 'float32'),
    ('bc_w0', lambda: tf.sparse.bincount(vals(), weights=tf.constant([[1., 2, 3, 4], [5, -5, 6, 0]]), axis=0),
     [0, 1, 2, 3, 7], [0.0, 1.0, 5.0, 6.0, 4.0], [8], 'float32'),
    ('bc_sp0', lambda: tf.sparse.bincount(sp()),
     [0, 1, 3], [1, 1, 3], [4], 'int64'),
    ('bc_sp1', lambda: tf.sparse.bincount(sp(), axis=-1),
     [0, 1, 0, 3, 2, 0, 2, 3], [1, 1, 1, 2], [4, 4], 'int64'),
    ('bc_spw', lambda: tf.sparse.bincount(sp(), axis=-1, weights=spw()),
     [0, 1, 0, 3, 2, 0, 2, 3], [1.5, 0.5, 4.0, 5.0], [4, 4], 'float32'),
    ('bc_sp1d', lambda: tf.sparse.bincount(tf.SparseTensor([[1]], tf.constant([3], tf.int64), [2]), axis=-1),
     [3], [1], [4], 'int64'),
    ('bc_sp3d', lambda: tf.sparse.bincount(tf.SparseTensor([[0, 0, 1]], tf.constant([3], tf.int64), [2, 2, 2]), axis=-1),
     [0, 3], [1], [2, 4], 'int64'),
    ('bc_empty', lambda: tf.sparse.bincount(tf.constant([], tf.int64)),
     [], [], [1], 'int64'),
    ('bc_minmax', lambda: tf.sparse.bincount(tf.constant([1, 4, 2], tf.int64), minlength=2, maxlength=3),
     [1, 2], [1, 1], [3], 'int64'),
    ('bc_max5', lambda: tf.sparse.bincount(tf.constant([1]), maxlength=5),
     [1], [1], [5], 'int32'),
    ('bc_iw', lambda: tf.sparse.bincount(tf.constant([[1, 9], [0, 0]]), axis=-1, weights=tf.constant([[1, 2], [3, 4]], tf.int64)),
     [0, 1, 0, 9, 1, 0], [1, 2, 7], [2, 10], 'int64'),
    ('bc_max0', lambda: tf.sparse.bincount(tf.constant([[1, 4, 2]]), axis=-1, maxlength=0),
     [], [], [1, 0], 'int32'),
    ('bc_scalar', lambda: tf.sparse.bincount(tf.constant(3)),
     [3], [1], [4], 'int32'),
    ('ed_def', lambda: tf.sparse.expand_dims(sp()),
     [0, 1, 0, 0, 3, 0, 2, 0, 0, 2, 2, 0, 2, 3, 0], [3, 1, 3, 3, 0], [4, 5, 1], 'int64'),
    ('ed0', lambda: tf.sparse.expand_dims(sp(), 0),
     [0, 0, 1, 0, 0, 3, 0, 2, 0, 0, 2, 2, 0, 2, 3], [3, 1, 3, 3, 0], [1, 4, 5], 'int64'),
    ('ed1', lambda: tf.sparse.expand_dims(sp(), 1),
     [0, 0, 1, 0, 0, 3, 2, 0, 0, 2, 0, 2, 2, 0, 3], [3, 1, 3, 3, 0], [4, 1, 5], 'int64'),
    ('edm2', lambda: tf.sparse.expand_dims(sp(), -2),
     [0, 0, 1, 0, 0, 3, 2, 0, 0, 2, 0, 2, 2, 0, 3], [3, 1, 3, 3, 0], [4, 1, 5], 'int64'),
    ('edm3', lambda: tf.sparse.expand_dims(sp(), -3),
     [0, 0, 1, 0, 0, 3, 0, 2, 0, 0, 2, 2, 0, 2, 3], [3, 1, 3, 3, 0], [1, 4, 5], 'int64'),
    ('eye3', lambda: tf.sparse.eye(3),
     [0, 0, 1, 1, 2, 2], [1.0, 1.0, 1.0], [3, 3], 'float32'),
    ('eye24', lambda: tf.sparse.eye(2, 4, dtype=tf.int32),
     [0, 0, 1, 1], [1, 1], [2, 4], 'int32'),
    ('eye_t', lambda: tf.sparse.eye(tf.constant(3), tf.constant(2, tf.int64)),
     [0, 0, 1, 1], [1.0, 1.0], [3, 2], 'float32'),
    ('rs_none', lambda: tf.sparse.reset_shape(tf.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], [5, 7])),
     [0, 1, 2, 0], [1.5, 2.5], [3, 2], 'float32'),
    ('rs_new', lambda: tf.sparse.reset_shape(tf.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], [5, 7]), [6, 9]),
     [0, 1, 2, 0], [1.5, 2.5], [6, 9], 'float32'),
    ('rs_empty', lambda: tf.sparse.reset_shape(tf.SparseTensor(tf.zeros([0, 2], tf.int64), tf.zeros([0]), [3, 3])),
     [], [], [0, 0], 'float32'),
    ('rs_dyn_ok', lambda: tf.sparse.reset_shape(tf.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], tf.placeholder_with_default(tf.constant([5, 7], tf.int64), [2])), [5, 9]),
     [0, 1, 2, 0], [1.5, 2.5], [5, 9], 'float32'),
    ('cross_ss', lambda: tf.sparse.cross([ids_a(), ids_b()]),
     [0, 0, 0, 1, 1, 0, 1, 1], ['a_X_7', 'b_X_7', 'c_X_11', 'c_X_12'], [3, 2], 'object'),
    ('cross_sd', lambda: tf.sparse.cross([dense_s(), ids_a(), dense_i()]),
     [0, 0, 0, 1, 0, 2, 0, 3, 1, 0, 1, 1, 2, 0, 2, 1], ['a_X_x_X_5', 'a_X_x_X_6', 'b_X_x_X_5', 'b_X_x_X_6', 'c_X_y_X_7', 'c_X_y_X_8', 'd_X_z_X_9', 'd_X_z_X_10'], [3, 4], 'object'),
    ('cross_sep', lambda: tf.sparse.cross([ids_a(), dense_s()], separator="--"),
     [0, 0, 0, 1, 1, 0, 2, 0], ['a--x', 'b--x', 'c--y', 'd--z'], [3, 2], 'object'),
    ('crossh_ss', lambda: tf.sparse.cross_hashed([ids_a(), ids_b()]),
     [0, 0, 0, 1, 1, 0, 1, 1], [3509787333349122856, 443223928722139976, 840643620864120608, 2850818867669740544], [3, 2], 'int64'),
    ('crossh_sd', lambda: tf.sparse.cross_hashed([dense_s(), ids_a(), dense_i()], num_buckets=1000),
     [0, 0, 0, 1, 0, 2, 0, 3, 1, 0, 1, 1, 2, 0, 2, 1], [230, 193, 641, 220, 959, 841, 435, 146], [3, 4], 'int64'),
    ('crossh_key', lambda: tf.sparse.cross_hashed([ids_a(), dense_s()], num_buckets=100, hash_key=12345),
     [0, 0, 0, 1, 1, 0, 2, 0], [49, 53, 70, 61], [3, 2], 'int64'),
    ('crossh_ints', lambda: tf.sparse.cross_hashed([ids_b(), dense_i()], num_buckets=97),
     [0, 0, 0, 1, 1, 0, 1, 1, 1, 2, 1, 3], [34, 75, 90, 61, 78, 89], [3, 4], 'int64'),
    ('cross_i32', lambda: tf.sparse.cross([dense_i(), ids_b()]),
     [0, 0, 0, 1, 1, 0, 1, 1, 1, 2, 1, 3], ['7_X_5', '7_X_6', '11_X_7', '11_X_8', '12_X_7', '12_X_8'], [3, 4], 'object'),
    ('cross_float', lambda: tf.sparse.cross([tf.constant([[1.0]])]),
     [0, 0], ['1'], [1, 1], 'object'),
]


@pytest.mark.parametrize("case", SPARSE_CASES, ids=lambda c: c[0])
def test_sparse_matches_tf(case):
    _, build, indices, values, shape, dtype = case
    with tf.Graph().as_default():
        out = build()
        v = tf.Session().run(out)
    assert v.indices.dtype == np.int64 and v.dense_shape.dtype == np.int64
    assert v.indices.reshape(-1).tolist() == indices
    got = [x.decode() if isinstance(x, bytes) else x for x in v.values.tolist()]
    assert got == values and str(v.values.dtype) == dtype
    assert v.dense_shape.tolist() == shape


ERROR_CASES = [
    ('bc_neg', lambda: tf.sparse.bincount(tf.constant([1, -1, 2])), tf.errors.InvalidArgumentError, 'Input values must all be non-negative'),
    ('bc_rank3', lambda: tf.sparse.bincount(tf.constant([[[1, 4, 2]]]), axis=-1), tf.errors.InvalidArgumentError, 'Input must be a 1 or 2-dimensional tensor'),
    ('bc_axis1', lambda: tf.sparse.bincount(tf.constant([1, 4, 2]), axis=1), ValueError, 'Unsupported value for argument axis=1'),
    ('bc_float', lambda: tf.sparse.bincount(tf.constant([1.0, 4.0])), TypeError, 'not in list of allowed values'),
    ('bc_binw', lambda: tf.sparse.bincount(tf.constant([1, 4, 2], tf.int64), weights=[1., 2., 3.], binary_output=True), ValueError, 'mutually exclusive'),
    ('bc_spdensew', lambda: tf.sparse.bincount(sp(), axis=-1, weights=[0.5, 1.5, 2., 3., 4.]), ValueError, 'must be a SparseTensor'),
    ('rs_small', lambda: tf.sparse.reset_shape(tf.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], [5, 7]), [4, 9]), ValueError, 'Requested new_shape should have dimension sizes'),
    ('rs_dyn_bad', lambda: tf.sparse.reset_shape(tf.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], tf.placeholder_with_default(tf.constant([5, 7], tf.int64), [2])), [4, 9]), tf.errors.InvalidArgumentError, 'Condition x <= y'),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c[0])
def test_sparse_errors_match_tf(case):
    _, build, error, message = case
    with tf.Graph().as_default():
        with pytest.raises(error, match=message):
            tf.Session().run(build())


def test_static_shapes():
    with tf.Graph().as_default():
        assert tf.sparse.expand_dims(sp(), 1).get_shape().as_list() == [4, 1, 5]
        assert tf.sparse.eye(2, 4).get_shape().as_list() == [2, 4]
        assert tf.sparse.reset_shape(sp(), [6, 9]).get_shape().as_list() == [6, 9]
        assert tf.sparse.bincount(vals(), axis=-1).get_shape().ndims == 2
        with pytest.raises(ValueError, match="out of range"):
            tf.sparse.expand_dims(sp(), 3)


def test_sparse_mask_and_names():
    with tf.Graph().as_default():
        a = tf.IndexedSlices(tf.constant([[1., 2], [3, 4], [5, 6], [7, 8]]),
                             tf.constant([12, 26, 37, 45]), tf.constant([50, 2]))
        m = tf.sparse.mask(a, [12, 45])
        values, indices, shape = tf.Session().run([m.values, m.indices, m.dense_shape])
        assert m.values.name == "sparse_mask:0" and m.indices.dtype == tf.int32
    assert values.tolist() == [[3.0, 4.0], [5.0, 6.0]] and indices.tolist() == [26, 37]
    assert shape.tolist() == [50, 2]
    assert tf.sparse_mask is tf.sparse.mask and tf.sparse_reset_shape is tf.sparse.reset_shape


# -- random ----------------------------------------------------------------------------------------
def _run(x, times=1):
    with tf.Session() as sess:
        return [sess.run(x) for _ in range(times)]


def test_categorical_is_multinomial():
    with tf.Graph().as_default():
        s = tf.random.categorical([[0.0, 1.0, -1e9]], 500, seed=1)
        s32 = tf.random.categorical([[0.0, 1.0]], 3, dtype=tf.int32, seed=1)
        v, v32 = _run([s, s32])[0]
    assert s.get_shape().as_list() == [1, 500] and v.dtype == np.int64 and v32.dtype == np.int32
    assert set(v.ravel().tolist()) == {0, 1}
    assert abs((v == 1).mean() - np.exp(1) / (1 + np.exp(1))) < 0.06


def test_gamma_and_poisson_shapes_and_moments():
    with tf.Graph().as_default():
        g = tf.random.gamma([4000], alpha=[[1.0], [2.0]], beta=[1.0, 2.0, 4.0], dtype=tf.float64, seed=1)
        p = tf.random_poisson([1.0, 20.0], [4000], dtype=tf.int64, seed=2)
        assert g.get_shape().as_list() == [4000, 2, 3] and p.get_shape().as_list() == [4000, 2]
        (gv, pv), (gv2, _) = _run([g, p], times=2)
    assert gv.dtype == np.float64 and pv.dtype == np.int64 and (gv > 0).all()
    np.testing.assert_allclose(gv.mean(0), np.array([[1.0], [2.0]]) / [1.0, 2.0, 4.0], rtol=0.08)
    np.testing.assert_allclose(pv.mean(0), [1.0, 20.0], rtol=0.05)
    assert not (gv == gv2).all()   # a stateful op: each run draws anew
    assert tf.random.gamma is tf.random_gamma and tf.random.poisson is tf.random_poisson
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="floating point"):
            tf.random_gamma([4], alpha=1, dtype=tf.int32)


def test_gamma_gradient_is_the_implicit_reparameterization():
    # d sample / d alpha at a fixed sample: P(alpha, sample) = u held constant, so it is
    # -dP/dalpha / dP/dx; checked against finite differences of the float64 igamma.
    with tf.Graph().as_default():
        alpha = tf.constant([0.7, 2.0, 5.0], tf.float64)
        sample = tf.random.gamma([2], alpha, dtype=tf.float64, seed=3)
        grad = tf.gradients(sample, alpha)[0]
        s, g = tf.Session().run([sample, grad])
    with tf.Graph().as_default():
        a, x = tf.placeholder(tf.float64, [2, 3]), tf.placeholder(tf.float64, [2, 3])
        p = tf.math.igamma(a, x)
        sess = tf.Session()
        a0, h = np.broadcast_to([0.7, 2.0, 5.0], (2, 3)), 1e-6
        dp_da = (sess.run(p, {a: a0 + h, x: s}) - sess.run(p, {a: a0 - h, x: s})) / (2 * h)
        dp_dx = (sess.run(p, {a: a0, x: s + h}) - sess.run(p, {a: a0, x: s - h})) / (2 * h)
    np.testing.assert_allclose(g, (-dp_da / dp_dx).sum(0), rtol=1e-4)


def test_stateless_ops_are_functions_of_the_seed():
    with tf.Graph().as_default():
        seed = tf.placeholder(tf.int32, [2])
        ops = [tf.random.stateless_uniform([2, 3], seed=seed),
               tf.random.stateless_uniform([5], seed=seed, minval=3, maxval=5, dtype=tf.int32),
               tf.random.stateless_uniform([5], seed=seed, minval=None, maxval=None, dtype=tf.int64),
               tf.random.stateless_normal([3], seed=seed, mean=10.0, stddev=0.001),
               tf.random.stateless_truncated_normal([1000], seed=seed, stddev=2.0),
               tf.random.stateless_categorical([[0.0, -1e9, 0.0]], 10, seed=seed)]
        with tf.Session() as s1, tf.Session() as s2:
            a = s1.run(ops, {seed: [1, 2]})
            b = s2.run(ops, {seed: [1, 2]})
            c = s1.run(ops, {seed: [1, 3]})
    for x, y, z in zip(a, b, c):
        assert x.tolist() == y.tolist() and x.tolist() != z.tolist()
    assert [x.dtype.name for x in a] == ["float32", "int32", "int64", "float32", "float32", "int64"]
    assert ((a[0] >= 0) & (a[0] < 1)).all() and set(a[1].tolist()) <= {3, 4}
    assert abs(a[3] - 10).max() < 0.01 and abs(a[4]).max() < 4.0
    assert set(a[5].ravel().tolist()) <= {0, 2}


def test_stateless_seed_errors_and_split():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="shape"):
            tf.random.stateless_normal([3], seed=[4, 5, 6])
        with pytest.raises(TypeError, match="int32 or int64"):
            tf.random.stateless_normal([3], seed=[4.0, 5.0])
        with pytest.raises(ValueError, match="maxval"):
            tf.random.stateless_uniform([5], seed=[1, 2], dtype=tf.int32)
        seeds, folded = tf.random.split([1, 2], 3), tf.random.fold_in([1, 2], 7)
        assert seeds.get_shape().as_list() == [3, 2] and folded.get_shape().as_list() == [2]
        (s, f), (s2, f2) = _run([seeds, folded], times=2)
    assert s.dtype == np.int32 and s.tolist() == s2.tolist() and f.tolist() == f2.tolist()
    assert f[1] == 7
