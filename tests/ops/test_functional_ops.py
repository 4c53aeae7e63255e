"""tf.map_fn, tf.foldl, tf.foldr, tf.scan: values and gradients against numpy."""

import numpy as np
import pytest

import zps as tf

XS = np.arange(12, dtype=np.float64).reshape(4, 3) / 10 + 1


def _run(fetches, feeds):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


def test_map_fn_with_structures_and_dtypes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [4, 3])
        m = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
        pair = tf.map_fn(lambda r: (r * 2, tf.cast(tf.reduce_sum(r), tf.int32)), x,
                         dtype=(tf.float64, tf.int32))
        zipped = tf.map_fn(lambda e: e[0] * e[1], (x, x + 1.0), dtype=tf.float64)
        assert m.get_shape().as_list() == [4] and pair[0].get_shape().as_list() == [4, 3]
        got = _run([m, pair, zipped], {x: XS})
    np.testing.assert_allclose(got[0], (XS * XS).sum(1))
    np.testing.assert_allclose(got[1][0], XS * 2)
    np.testing.assert_array_equal(got[1][1], XS.sum(1).astype(np.int32))
    np.testing.assert_allclose(got[2], XS * (XS + 1))


def test_folds_and_scans_forward_and_reversed():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None, 3])
        f = tf.foldl(lambda a, r: a + r, x)
        fr = tf.foldr(lambda a, r: a * 2 + r, x, initializer=tf.zeros([3], tf.float64))
        s = tf.scan(lambda a, r: a + r, x)
        sr = tf.scan(lambda a, r: a + r, x, reverse=True)
        si = tf.scan(lambda a, r: a * r, x, initializer=tf.ones([3], tf.float64))
        digits = tf.foldl(lambda a, d: a * 10 + d, tf.constant([1, 2, 3]))
        got = _run([f, fr, s, sr, si, digits], {x: XS})
    want_fr = np.zeros(3)
    for r in XS[::-1]:
        want_fr = want_fr * 2 + r
    np.testing.assert_allclose(got[0], XS.sum(0))
    np.testing.assert_allclose(got[1], want_fr)
    np.testing.assert_allclose(got[2], np.cumsum(XS, 0))
    np.testing.assert_allclose(got[3], np.cumsum(XS[::-1], 0)[::-1])
    np.testing.assert_allclose(got[4], np.cumprod(XS, 0))
    assert got[5] == 123


def test_gradients_flow_through_map_and_scan():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [4, 3])
        m = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
        s = tf.scan(lambda a, r: a + r, x)
        si = tf.scan(lambda a, r: a * r, x, initializer=tf.ones([3], tf.float64))
        g = tf.gradients(tf.reduce_sum(m) + tf.reduce_sum(s) + tf.reduce_sum(si), x)[0]
        got = _run(g, {x: XS})
    cp = np.cumprod(XS, 0)
    of_prod = np.array([sum(cp[j] / XS[i] for j in range(i, 4)) for i in range(4)])
    np.testing.assert_allclose(got, 2 * XS + (4 - np.arange(4))[:, None] + of_prod, rtol=1e-12)


def test_clear_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at least one dimension"):
            tf.map_fn(lambda v: v, tf.constant(1.0))
        with pytest.raises(TypeError, match="pass dtype="):
            tf.map_fn(lambda v: tf.cast(v, tf.int32), tf.constant([1.0, 2.0]))
