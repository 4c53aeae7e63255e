"""Regression tests from a side-by-side audit of the training side against TensorFlow 2.21's
compat.v1 (graph mode); the expected numbers are TF's."""

import numpy as np
import pytest

import zps as tf


class _ScatterSGD(tf.train.Optimizer):
    """A user's optimizer whose ``_apply_sparse`` assumes unique indices (``scatter_update``)."""

    def __init__(self, learning_rate):
        super().__init__(False, "ScatterSGD")
        self._lr = learning_rate

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "count", self._name)

    def _apply_dense(self, grad, var):
        return tf.assign_sub(var, self._lr * grad).op

    def _apply_sparse(self, grad, var):
        rows = tf.gather(var, grad.indices) - self._lr * grad.values
        count = self.get_slot(var, "count")
        seen = tf.scatter_update(count, grad.indices, tf.gather(count, grad.indices) + 1.0)
        return tf.group(tf.scatter_update(var, grad.indices, rows), seen)


def test_a_user_optimizer_apply_sparse_sees_unique_indices():
    # TF1 sums the rows of repeated indices before _apply_sparse: row 1 (looked up three times,
    # weights 1 + 3 + 4) moves by 0.5 * 8 once, and is counted once.
    with tf.Graph().as_default():
        w = tf.Variable([[1.0, 2.0], [3.0, -4.0], [0.5, -0.5], [-1.5, 2.5]], name="w")
        rows = tf.gather(w, [1, 0, 1, 1])
        loss = tf.reduce_sum(rows * tf.constant([[1.0], [2.0], [3.0], [4.0]]))
        opt = _ScatterSGD(0.5)
        train_op = opt.minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            np.testing.assert_array_equal(
                sess.run(w), [[0.0, 1.0], [-1.0, -8.0], [0.5, -0.5], [-1.5, 2.5]])
            np.testing.assert_array_equal(sess.run(opt.get_slot(w, "count")),
                                          [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])


def test_builtin_sparse_updates_with_repeated_indices_match_tf():
    # Adagrad over gather([0, 2, 0]), three steps (TF's numbers).
    with tf.Graph().as_default():
        w = tf.Variable([[1.0, 2.0], [3.0, -4.0], [0.5, -0.5]], name="w")
        rows = tf.gather(w, [0, 2, 0])
        loss = tf.reduce_sum(rows * rows * tf.constant([[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]]))
        train_op = tf.train.AdagradOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train_op)
            np.testing.assert_allclose(
                sess.run(w), [[0.7812821865081787, 2.0], [3.0, -4.0],
                              [0.29262855648994446, -0.3511068522930145]], rtol=1e-6)


def test_compute_gradients_for_a_tensor_then_apply_refuses():
    # TF1 computes gradients for tensors in var_list; applying them raises NotImplementedError.
    with tf.Graph().as_default():
        x = tf.Variable([1.0, 2.0], name="x")
        t = x * 1.0
        opt = tf.train.GradientDescentOptimizer(0.1)
        grads_and_vars = opt.compute_gradients(tf.reduce_sum(t * t), var_list=[t, x])
        assert [v for _, v in grads_and_vars] == [t, x]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for g, _ in grads_and_vars:
                np.testing.assert_array_equal(sess.run(g), [2.0, 4.0])
        with pytest.raises(NotImplementedError, match="Trying to optimize unsupported type"):
            opt.apply_gradients(grads_and_vars)


def test_global_step_is_created_in_the_current_variable_scope():
    # TF1 creates it with get_variable: the variable scope names it, the name scope does not.
    with tf.Graph().as_default():
        with tf.variable_scope("outer"), tf.name_scope("ns"):
            step = tf.train.get_or_create_global_step()
        assert step.op.name == "outer/global_step"
        assert [v.op.name for v in tf.global_variables()] == ["outer/global_step"]
        assert tf.train.get_global_step() is step
        assert tf.train.get_or_create_global_step() is step
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert tf.train.global_step(sess, step) == 0


class _ResourceSGD(tf.train.Optimizer):
    """A user's optimizer written for resource variables only (``_resource_apply_*``)."""

    def __init__(self, learning_rate):
        super().__init__(False, "ResourceSGD")
        self._lr = learning_rate

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "seen", self._name)

    def _resource_apply_dense(self, grad, handle):
        return handle.assign_sub(self._lr * grad)

    def _resource_apply_sparse(self, grad, handle, indices):
        seen = self.get_slot(handle, "seen")
        rows = tf.gather(handle, indices) - self._lr * grad
        return tf.group(tf.scatter_update(handle, indices, rows),
                        tf.scatter_update(seen, indices, tf.gather(seen, indices) + 1.0))


def test_a_user_optimizer_with_only_resource_apply_updates_resource_variables():
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=tf.constant([[1.0, 2.0], [3.0, -4.0], [0.5, -0.5]]),
                            use_resource=True)
        b = tf.get_variable("b", initializer=tf.constant([1.0, 2.0]), use_resource=True)
        rows = tf.gather(w, [2, 0, 2]) * tf.constant([[1.0], [2.0], [3.0]])
        opt = _ResourceSGD(0.5)
        train_op = opt.minimize(tf.reduce_sum(rows) + tf.reduce_sum(b * b))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            # TF's numbers: row 2 moves by 0.5 * (1 + 3) once, and is seen once.
            np.testing.assert_array_equal(sess.run(w), [[0.0, 1.0], [3.0, -4.0], [-1.5, -2.5]])
            np.testing.assert_array_equal(sess.run(b), [0.0, 0.0])
            np.testing.assert_array_equal(sess.run(opt.get_slot(w, "seen")),
                                          [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])


def test_adam_is_tensorflows_to_the_last_bit():
    # TF's kernel computes var -= (m * alpha) / (sqrt(v) + epsilon); alpha * (m / ...) differs in
    # the last bit for a few percent of the elements. Four steps of AdamOptimizer(0.01): TF
    # 2.21's float32 results, bit for bit.
    rng = np.random.RandomState(7)
    w0 = rng.randn(12).astype(np.float32)
    steps = [rng.randn(12).astype(np.float32) for _ in range(4)]
    with tf.Graph().as_default():
        g = tf.placeholder(tf.float32, [12])
        w = tf.Variable(w0)
        train = tf.train.AdamOptimizer(0.01).apply_gradients([(g, w)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for x in steps:
                sess.run(train, {g: x})
            got = sess.run(w)
    assert [hex(int(b)) for b in got.view(np.uint32)] == [
        "0x3fd72175", "0xbee43247", "0x3d2b6dd6", "0x3ee253c9", "0xbf53ae2d", "0x3ba9604d",
        "0xbbe21672", "0xbfde4dc5", "0x3f824a00", "0x3f165649", "0xbf18cda4", "0xbe4c7a53"]
