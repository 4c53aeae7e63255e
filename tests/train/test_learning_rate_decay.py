"""Learning-rate schedules: every step of a range against TF1's formulas written in numpy."""

import math

import numpy as np
import pytest

import zps as tf

STEPS = [0, 1, 3, 9, 10, 11, 25, 50, 99, 100, 101, 250, 1000]


def _np_cosine_restarts(step, first, t_mul, m_mul, alpha):
    fraction = step / first
    if t_mul == 1.0:
        i = math.floor(fraction)
        fraction -= i
    else:
        i = math.floor(math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
        done = (1.0 - t_mul ** i) / (1.0 - t_mul)
        fraction = (fraction - done) / t_mul ** i
    return (1 - alpha) * 0.5 * m_mul ** i * (1 + math.cos(math.pi * fraction)) + alpha


def _np_polynomial(step, decay_steps, end, power, cycle, lr=0.1):
    if cycle:
        decay_steps = decay_steps * (1.0 if step == 0 else math.ceil(step / decay_steps))
    else:
        step = min(step, decay_steps)
    return (lr - end) * (1 - step / decay_steps) ** power + end


def _np_linear_cosine(step, decay_steps, periods, alpha, beta):
    step = min(step, decay_steps)
    linear = (decay_steps - step) / decay_steps
    cosine = 0.5 * (1 + math.cos(math.pi * 2 * periods * step / decay_steps))
    return (alpha + linear) * cosine + beta


CASES = [
    ("natural_exp", lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5),
     lambda s: 0.1 * math.exp(-0.5 * s / 10)),
    ("natural_exp_staircase", lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5, True),
     lambda s: 0.1 * math.exp(-0.5 * math.floor(s / 10))),
    ("inverse_time", lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5),
     lambda s: 0.1 / (1 + 0.5 * s / 10)),
    ("inverse_time_staircase", lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5, True),
     lambda s: 0.1 / (1 + 0.5 * math.floor(s / 10))),
    ("polynomial", lambda s: tf.train.polynomial_decay(0.1, s, 100, 0.01, power=2.0),
     lambda s: _np_polynomial(s, 100, 0.01, 2.0, False)),
    ("polynomial_cycle", lambda s: tf.train.polynomial_decay(0.1, s, 100, 0.01, cycle=True),
     lambda s: _np_polynomial(s, 100, 0.01, 1.0, True)),
    ("cosine", lambda s: tf.train.cosine_decay(0.1, s, 100, alpha=0.2),
     lambda s: 0.1 * (0.8 * 0.5 * (1 + math.cos(math.pi * min(s, 100) / 100)) + 0.2)),
    ("cosine_restarts", lambda s: tf.train.cosine_decay_restarts(0.1, s, 10, alpha=0.1,
                                                                 m_mul=0.5),
     lambda s: 0.1 * _np_cosine_restarts(s, 10, 2.0, 0.5, 0.1)),
    ("cosine_restarts_fixed_period", lambda s: tf.train.cosine_decay_restarts(0.1, s, 10,
                                                                              t_mul=1.0),
     lambda s: 0.1 * _np_cosine_restarts(s, 10, 1.0, 1.0, 0.0)),
    ("linear_cosine", lambda s: tf.train.linear_cosine_decay(0.1, s, 100, num_periods=2.0),
     lambda s: 0.1 * _np_linear_cosine(s, 100, 2.0, 0.0, 0.001)),
    ("noisy_linear_cosine_without_noise", lambda s: tf.train.noisy_linear_cosine_decay(
        0.1, s, 100, initial_variance=0.0, num_periods=2.0),
     lambda s: 0.1 * _np_linear_cosine(s, 100, 2.0, 0.0, 0.001)),
    ("piecewise", lambda s: tf.train.piecewise_constant(s, [10, 100], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 10 else (0.5 if s <= 100 else 0.1)),
]


@pytest.mark.parametrize("make,reference", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schedule_follows_tf1s_formula_at_every_step(make, reference):
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        lr = make(step)
        assert lr.dtype in (tf.float32, tf.float64)
        with tf.Session() as sess:
            got = [float(sess.run(lr, {step: s})) for s in STEPS]
    # float32 math, as TF1: a few ulps of 0.1 where 1 + cos(...) cancels
    np.testing.assert_allclose(got, [reference(s) for s in STEPS], rtol=2e-6, atol=5e-8)


def test_a_schedule_drives_training_through_the_global_step():
    with tf.Graph().as_default():
        w = tf.Variable(0.0)
        step = tf.train.get_or_create_global_step()
        lr = tf.train.piecewise_constant(step, [2], [1.0, 0.1])
        train = tf.train.GradientDescentOptimizer(lr).minimize(-w, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(5):
                sess.run(train)
            # steps 0, 1, 2 at 1.0 (step <= 2), then 3 and 4 at 0.1
            np.testing.assert_allclose(sess.run(w), 3.2, rtol=1e-6)


def test_bad_arguments_say_what_is_wrong():
    with tf.Graph().as_default():
        step = tf.constant(3, tf.int64)
        with pytest.raises(ValueError, match="1 less than the length of values"):
            tf.train.piecewise_constant(step, [1, 2], [0.1, 0.2])
        with pytest.raises(ValueError, match="same dtype"):
            tf.train.piecewise_constant(step, [1], [tf.constant(0.1), tf.constant(1, tf.int32)])
        for fn in (tf.train.cosine_decay, tf.train.polynomial_decay):
            with pytest.raises(ValueError, match="global_step is required"):
                fn(0.1, None, 10)


def test_noisy_linear_cosine_decay_draws_noise_of_the_decaying_variance():
    # TF 2.21 with initial_variance=0 gives 0.1001, 0.055672478, 0.0001 at steps 0, 30, 150.
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        quiet = tf.train.noisy_linear_cosine_decay(0.1, step, 100, initial_variance=0.0)
        noisy = tf.train.noisy_linear_cosine_decay(0.1, step, 100)
        assert (quiet.name, noisy.name) == ("NoisyLinearCosineDecay:0",
                                            "NoisyLinearCosineDecay_1:0")
        with tf.Session() as sess:
            np.testing.assert_allclose([sess.run(quiet, {step: s}) for s in (0, 30, 150)],
                                       [0.1001, 0.055672478, 0.0001], rtol=1e-6)
            draws = np.array([sess.run(noisy, {step: 30}) for _ in range(2000)])
    # mean: the noiseless value; std: lr * cosine * sqrt(1 / (1 + 30) ** 0.55)
    cosine = 0.5 * (1 + math.cos(math.pi * 30 / 100))
    assert abs(draws.mean() - 0.055672478) < 0.003
    assert draws.std() == pytest.approx(0.1 * cosine * math.sqrt(31 ** -0.55), rel=0.08)
