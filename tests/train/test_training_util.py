"""The global step helpers and learning-rate decay."""

import logging

import numpy as np
import pytest

import zps as tf


def test_create_global_step_is_an_int64_scalar_counter():
    with tf.Graph().as_default() as g:
        assert tf.train.get_global_step() is None
        with tf.name_scope("model"):
            step = tf.train.create_global_step()
        assert step.op.name == "global_step" and step.name == "global_step:0"
        assert step.dtype == tf.int64 and step.get_shape().as_list() == []
        assert g.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
        assert step in tf.global_variables() and step not in tf.trainable_variables()
        assert step.initializer.inputs[1].op.name == "global_step/Initializer/zeros"
        assert tf.train.get_global_step() is step
        assert tf.train.get_or_create_global_step() is step
        with pytest.raises(ValueError, match='"global_step" already exists.'):
            tf.train.create_global_step()
        with tf.Session() as sess:
            sess.run(step.initializer)
            value = tf.train.global_step(sess, step)
            assert value == 0 and isinstance(value, int)


def test_global_step_of_another_graph():
    other = tf.Graph()
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step(other)
        assert step.graph is other
        assert tf.train.get_global_step() is None
        assert tf.train.get_global_step(other) is step


def test_get_global_step_falls_back_to_the_tensor_named_global_step():
    with tf.Graph().as_default():
        v = tf.Variable(np.int64(0), name="global_step", trainable=False)
        step = tf.train.get_global_step()
        assert step is not None and step.name == "global_step:0" and step.graph is v.graph


def test_several_global_steps_in_the_collection_give_none(caplog):
    with tf.Graph().as_default() as g:
        for name in ("s1", "s2"):
            g.add_to_collection(tf.GraphKeys.GLOBAL_STEP, tf.Variable(np.int64(0), name=name))
        with caplog.at_level(logging.ERROR):
            assert tf.train.get_global_step() is None
        assert "Multiple tensors in global_step collection" in caplog.text


@pytest.mark.parametrize("value, message", [
    (np.float32(0), 'Existing "global_step" does not have integer type: float32'),
    (np.zeros(2, np.int64), 'Existing "global_step" is not scalar'),
])
def test_assert_global_step_rejects_bad_steps(value, message):
    with tf.Graph().as_default() as g:
        g.add_to_collection(tf.GraphKeys.GLOBAL_STEP, tf.Variable(value, name="global_step"))
        with pytest.raises(TypeError, match=message):
            tf.train.get_global_step()
        with pytest.raises(TypeError, match=message):
            tf.train.get_or_create_global_step()
    with pytest.raises(TypeError, match='Existing "global_step" must be a Variable or Tensor'):
        tf.train.assert_global_step("global_step")


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.1, step, decay_steps=4, decay_rate=0.5,
                                        staircase=staircase)
        assert lr.op.name == "ExponentialDecay" and lr.dtype == tf.float32
        bump = tf.assign_add(step, 3)
        with tf.Session() as sess:
            sess.run(step.initializer)
            for k in range(4):
                p = 3 * k / 4
                expected = 0.1 * 0.5 ** (np.floor(p) if staircase else p)
                assert sess.run(lr) == pytest.approx(expected, rel=1e-6)
                sess.run(bump)
    with pytest.raises(ValueError, match="global_step is required"):
        tf.train.exponential_decay(0.1, None, 10, 0.5)
