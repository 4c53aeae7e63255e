"""ExponentialMovingAverage and assign_moving_average against TensorFlow 2.21's tf.compat.v1:
names, collections, placement, values over updates (num_updates, zero_debias), and evaluation
with the averages restored through a Saver."""

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster
from zps.train.moving_averages import assign_moving_average

# TF 2.21 printed these for _program(): the averages of w, v (decay 0.9, num_updates = step)
# and of the tensor t = 2 * w (decay 0.8, zero_debias) after each of three updates, then two
# runs of assign_moving_average(z=0, 4, 0.7) (debiased) and (y=1, 4, 0.7, zero_debias=False).
TF_AVERAGES = [
    ([1.0, -0.36363637], 2.5454545, [2.0, 0.0]),
    ([1.75, 2.159091], 1.3863636, [3.1111112, 3.3333335]),
    ([2.6153846, 4.818182], 0.4265734, [4.2950816, 6.8852453]),
]
TF_ASSIGN_MOVING_AVERAGE = [(4.0, 1.9000001), (4.0, 2.5300002)]
TF_GLOBAL_VARIABLES = ["step", "t/ema2", "t/ema2/biased", "t/ema2/local_step", "v",
                       "v/ExponentialMovingAverage", "w", "w/ExponentialMovingAverage", "y", "z",
                       "z/biased", "z/local_step"]
TF_TO_RESTORE = [
    ("step", "step"), ("t/ema2", "t/ema2"), ("t/ema2/biased", "t/ema2/biased"),
    ("t/ema2/local_step", "t/ema2/local_step"), ("v/ExponentialMovingAverage", "v"),
    ("w/ExponentialMovingAverage", "w"), ("y/ExponentialMovingAverage", "y"),
    ("z/ExponentialMovingAverage", "z"), ("z/biased", "z/biased"),
    ("z/local_step", "z/local_step")]


def _program():
    w = tf.Variable([1.0, -2.0], name="w")
    v = tf.Variable(5.0, name="v")
    step = tf.Variable(0, name="step", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    t = tf.multiply(w, 2.0, name="t")
    with tf.control_dependencies([tf.assign_add(step, 1)]):
        update = ema.apply([w, v])
    ema2 = tf.train.ExponentialMovingAverage(0.8, zero_debias=True, name="ema2")
    update2 = ema2.apply([t])
    z = tf.Variable(0.0, name="z")
    y = tf.Variable(1.0, name="y")
    assigns = [assign_moving_average(z, 4.0, 0.7),
               assign_moving_average(y, 4.0, 0.7, zero_debias=False)]
    return w, v, t, ema, ema2, [update, update2], assigns


def test_averages_names_and_collections_match_tensorflow():
    with tf.Graph().as_default():
        w, v, t, ema, ema2, updates, assigns = _program()
        assert sorted(x.op.name for x in tf.global_variables()) == TF_GLOBAL_VARIABLES
        assert sorted(x.op.name for x in tf.trainable_variables()) == ["v", "w", "y", "z"]
        assert tf.moving_average_variables() == [w, v]   # the averaged variables, as TF1
        assert ema.average_name(w) == ema.average(w).op.name == "w/ExponentialMovingAverage"
        assert ema2.average(t).op.name == "t/ema2" and ema.average(t) is None
        assert updates[0].name == "ExponentialMovingAverage" and updates[1].name == "ema2"
        assert [a.name for a in assigns] == ["AssignMovingAvg:0", "AssignMovingAvg_1:0"]
        assert sorted((k, x.op.name) for k, x in ema.variables_to_restore().items()) == \
            TF_TO_RESTORE
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            averages = []
            for i in range(3):
                sess.run([tf.assign(w, [1.0 + i, 3.0 * i]), tf.assign(v, 2.0 - i)])
                sess.run(updates)
                averages.append(sess.run([ema.average(w), ema.average(v), ema2.average(t)]))
            assigned = [sess.run(assigns) for _ in range(2)]
    for got, want in zip(averages, TF_AVERAGES):
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    np.testing.assert_allclose(assigned, TF_ASSIGN_MOVING_AVERAGE, rtol=1e-6)


def test_shadows_live_with_their_variables_and_are_not_trainable():
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2.0, name="b")
            ema = tf.train.ExponentialMovingAverage(0.5)
            ema.apply()
        for var in (a, b):
            avg = ema.average(var)
            assert avg.op.colocation_groups() == [("loc:@" + var.op.name).encode()]
            assert avg not in tf.trainable_variables() and avg in tf.global_variables()
        assert {a.device, b.device} == {"/job:ps/task:0", "/job:ps/task:1"}


def test_an_average_in_a_cluster_is_updated_on_its_ps():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster, tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
            w = tf.Variable([0.0, 10.0], name="w")
            ema = tf.train.ExponentialMovingAverage(0.75)
            update = ema.apply([w])
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign([4.0, 2.0]))
            sess.run(update)
            np.testing.assert_allclose(sess.run(ema.average(w)), [1.0, 8.0])


def test_evaluating_with_the_averages_restored_by_a_saver(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0], name="w")
        other = tf.Variable(7.0, name="other", trainable=False)
        ema = tf.train.ExponentialMovingAverage(0.5)
        update = ema.apply([w])
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign([3.0, 6.0]))
            sess.run(update)                      # average: [2, 4]
            sess.run(w.assign([5.0, 0.0]))
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default():
        w = tf.Variable([0.0, 0.0], name="w")
        other = tf.Variable(0.0, name="other", trainable=False)
        ema = tf.train.ExponentialMovingAverage(0.5)
        to_restore = ema.variables_to_restore()
        assert to_restore == {"w/ExponentialMovingAverage": w, "other": other}
        with tf.Session() as sess:
            tf.train.Saver(to_restore).restore(sess, path)
            np.testing.assert_allclose(sess.run(w), [2.0, 4.0])
            assert sess.run(other) == 7.0


def test_only_float_variables_are_averaged():
    with tf.Graph().as_default():
        ema = tf.train.ExponentialMovingAverage(0.9)
        with pytest.raises(TypeError, match="must be half, float, or double: count:0"):
            ema.apply([tf.Variable(0, name="count")])
