"""Check symbolic gradients against central finite differences (the one gradient oracle).

A :class:`GradCase` names the op type it exercises, a function building the op from its inputs,
and input values. :func:`check_gradients` builds the graph in float64, projects the output on a
fixed random direction, and compares ``tf.gradients`` with numerical differentiation.

>>> import numpy as np
>>> import zps as tf
>>> case = GradCase("Square", lambda x: tf.square(x), [np.array([1.0, -2.0])])
>>> check_gradients(case)  # raises AssertionError on a mismatch
"""

import numpy as np


class GradCase:
    """One gradient check: ``build(*input_tensors) -> output tensor`` must create an ``op_type`` op.

    ``wrt`` lists the indices of the inputs to differentiate (default: every float input); the
    others are fed as constants (e.g. integer indices). ``dtype`` is the float type the float inputs
    are fed as (float64 keeps finite differences accurate).
    """

    def __init__(self, op_type, build, inputs, wrt=None, delta=1e-6, rtol=1e-4, atol=1e-6,
                 dtype=np.float64, name=None):
        self.op_type = op_type
        self.build = build
        self.inputs = [np.asarray(v) for v in inputs]
        self.wrt = wrt
        self.delta = delta
        self.rtol = rtol
        self.atol = atol
        self.dtype = dtype
        self.name = name or op_type

    def __repr__(self):
        return "GradCase(%s)" % self.name


def case_inputs(case):
    """``(values, wrt, placeholders)`` of a GradCase in the default graph: its inputs in the
    case's dtype, the indices to differentiate with respect to, one placeholder per input."""
    import zps as tf

    values = [v.astype(case.dtype) if v.dtype.kind == "f" else v for v in case.inputs]
    wrt = case.wrt if case.wrt is not None else [i for i, v in enumerate(values)
                                                 if v.dtype.kind == "f"]
    phs = [tf.placeholder(tf.as_dtype(v.dtype), v.shape, name="input_%d" % i)
           for i, v in enumerate(values)]
    return values, wrt, phs


def check_gradients(case):
    """Assert the symbolic gradient of ``case`` matches finite differences."""
    import zps as tf

    graph = tf.Graph()
    with graph.as_default():
        values, wrt, phs = case_inputs(case)
        y = case.build(*phs)
        types = {op.type for op in graph.get_operations()}
        if case.op_type not in types:
            raise AssertionError("GradCase %s built no %s op (built: %s)"
                                 % (case.name, case.op_type, sorted(types)))
        y = tf.convert_to_tensor(y)
        rng = np.random.default_rng(0)
        feed = dict(zip(phs, values))
        with tf.Session(graph=graph) as sess:
            y_val = np.asarray(sess.run(y, feed))
            direction = rng.standard_normal(y_val.shape).astype(y_val.dtype)
            proj = tf.reduce_sum(y * tf.constant(direction))
            grads = tf.gradients(proj, [phs[i] for i in wrt])
            for i, g in zip(wrt, grads):
                if g is None:
                    raise AssertionError("%s: gradient with respect to input %d is None"
                                         % (case.name, i))
            symbolic = sess.run([tf.convert_to_tensor(g) for g in grads], feed)
            for i, sym in zip(wrt, symbolic):
                numeric = _numeric_gradient(sess, proj, phs, values, i, case.delta)
                np.testing.assert_allclose(
                    np.asarray(sym, dtype=np.float64), numeric, rtol=case.rtol, atol=case.atol,
                    err_msg="%s: gradient of input %d disagrees with finite differences"
                    % (case.name, i))


def _numeric_gradient(sess, proj, phs, values, i, delta):
    x = np.array(values[i], dtype=np.float64, order="C")   # flat below must be a view of x
    grad = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        out = []
        for sign in (1.0, -1.0):
            flat[k] = orig + sign * delta
            feed = dict(zip(phs, values))
            feed[phs[i]] = x.astype(values[i].dtype)
            out.append(float(sess.run(proj, feed)))
        flat[k] = orig
        gflat[k] = (out[0] - out[1]) / (2 * delta)
    return grad


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, extra_feed_dict=None):
    """TF1's ``tf.test.compute_gradient``: (theoretical, numerical) Jacobians of y w.r.t. x.

    Both are arrays of shape ``[x_size, y_size]``; uses the default session.
    """
    import zps as tf
    from zps.framework import default_session

    sess = default_session.get()
    if sess is None:
        raise ValueError("compute_gradient needs a default session (with sess.as_default())")
    x_size = int(np.prod(x_shape))
    y_size = int(np.prod(y_shape))
    x0 = (np.asarray(x_init_value, dtype=x.dtype.as_numpy_dtype) if x_init_value is not None
          else np.random.default_rng(1).random(x_shape).astype(x.dtype.as_numpy_dtype))
    feed = dict(extra_feed_dict or {})
    theoretical = np.zeros((x_size, y_size))
    dy = tf.placeholder(y.dtype, y_shape)
    g, = tf.gradients(y, [x], grad_ys=[dy])
    for j in range(y_size):
        e = np.zeros(y_size, dtype=y.dtype.as_numpy_dtype)
        e[j] = 1
        feed.update({x: x0, dy: e.reshape(y_shape)})
        theoretical[:, j] = np.asarray(sess.run(tf.convert_to_tensor(g), feed)).reshape(-1)
    numerical = np.zeros((x_size, y_size))
    flat = x0.reshape(-1)
    for i in range(x_size):
        orig = flat[i]
        flat[i] = orig + delta
        feed[x] = x0
        plus = np.asarray(sess.run(y, feed)).reshape(-1)
        flat[i] = orig - delta
        minus = np.asarray(sess.run(y, feed)).reshape(-1)
        flat[i] = orig
        numerical[i] = (plus - minus) / (2 * delta)
    return theoretical, numerical


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                           extra_feed_dict=None):
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    t, n = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, extra_feed_dict)
    return float(np.max(np.abs(t - n))) if t.size else 0.0
