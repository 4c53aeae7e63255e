"""tf.keras.optimizers: Keras's update rules, step by step, equal to TF 2.21's (tf_keras's
graph-mode OptimizerV2 ``get_updates`` on a resource variable, the numbers below)."""

import numpy as np
import pytest

import zps as tf

K = tf.keras

# (class, kwargs, w after each of 4 steps) for w = [1, -2, 0.5] and
# loss = sum(w**2 * [1, 2, 3] + w * [0.5, -1, 2]), from TF 2.21 with TF_USE_LEGACY_KERAS=1.
TF_STEPS = [
    ('SGD', {'learning_rate': 0.1}, [
        [0.75, -1.0999999046325684, 0.0],
        [0.550000011920929, -0.559999942779541, -0.20000000298023224],
        [0.38999998569488525, -0.2359999716281891, -0.2800000011920929],
        [0.2619999647140503, -0.041599974036216736, -0.31200000643730164],
    ]),
    ('SGD', {'learning_rate': 0.1, 'momentum': 0.9}, [
        [0.75, -1.0999999046325684, 0.0],
        [0.32499998807907104, 0.25, -0.6499999761581421],
        [-0.17250001430511475, 1.4649999141693115, -1.0449999570846558],
        [-0.6357500553131104, 2.0724997520446777, -0.9735000133514404],
    ]),
    ('SGD', {'learning_rate': 0.1, 'momentum': 0.9, 'nesterov': True}, [
        [0.5249999761581421, -0.28999996185302734, -0.44999998807907104],
        [0.02799999713897705, 0.8494000434875488, -0.722000002861023],
        [-0.3854399621486664, 1.2249159812927246, -0.5867199897766113],
        [-0.6560287475585938, 1.037728190422058, -0.38598716259002686],
    ]),
    ('Adam', {'learning_rate': 0.1}, [
        [0.9000000953674316, -1.899999976158142, 0.40000006556510925],
        [0.8003042340278625, -1.8001445531845093, 0.3005356192588806],
        [0.7011557221412659, -1.7005387544631958, 0.2020845264196396],
        [0.6028359532356262, -1.6012972593307495, 0.105241559445858],
    ]),
    ('Adam', {'learning_rate': 0.01, 'beta_1': 0.8, 'beta_2': 0.99, 'epsilon': 0.001}, [
        [0.9900398254394531, -1.9900110960006714, 0.49001994729042053],
        [0.9800724983215332, -1.980021357536316, 0.4800407588481903],
        [0.9701073169708252, -1.970034122467041, 0.4700700342655182],
        [0.9601492285728455, -1.9600516557693481, 0.46011316776275635],
    ]),
    ('RMSprop', {'learning_rate': 0.01}, [
        [0.9683772325515747, -1.9683772325515747, 0.4683772325515747],
        [0.945716142654419, -1.9455901384353638, 0.4458606541156769],
        [0.9268838763237, -1.9265878200531006, 0.4272242784500122],
        [0.9102622866630554, -1.90977144241333, 0.4108283221721649],
    ]),
    ('RMSprop', {'learning_rate': 0.01, 'centered': True}, [
        [0.9666666984558105, -1.9666666984558105, 0.46666666865348816],
        [0.941505491733551, -1.9413572549819946, 0.4416758120059967],
        [0.919490396976471, -1.9191237688064575, 0.41991350054740906],
        [0.8990412354469299, -1.8984007835388184, 0.39978376030921936],
    ]),
    ('RMSprop', {'learning_rate': 0.01, 'rho': 0.8, 'momentum': 0.5}, [
        [0.9776393175125122, -1.9776393175125122, 0.4776393175125122],
        [0.9499267935752869, -1.949866533279419, 0.44999557733535767],
        [0.9220178127288818, -1.921809196472168, 0.42225736379623413],
        [0.895410418510437, -1.8949635028839111, 0.395926833152771],
    ]),
    ('RMSprop', {'learning_rate': 0.01, 'momentum': 0.5, 'centered': True}, [
        [0.9666666984558105, -1.9666666984558105, 0.46666666865348816],
        [0.9248387813568115, -1.9246906042099, 0.425009161233902],
        [0.8821114301681519, -1.881577968597412, 0.3827303349971771],
        [0.840710461139679, -1.8395187854766846, 0.3421061933040619],
    ]),
    ('Adagrad', {'learning_rate': 0.1}, [
        [0.9007905125617981, -1.9000617265701294, 0.40019941329956055],
        [0.8333510756492615, -1.8309972286224365, 0.33420082926750183],
        [0.7797530889511108, -1.7754240036010742, 0.2827131450176239],
        [0.7343584895133972, -1.7278484106063843, 0.23979540169239044],
    ]),
    ('Adagrad', {'learning_rate': 0.1, 'initial_accumulator_value': 0.5, 'epsilon': 0.001}, [
        [0.9038119912147522, -1.9003182649612427, 0.4010048508644104],
        [0.8374232649803162, -1.8313438892364502, 0.3352699279785156],
        [0.7843834161758423, -1.7758196592330933, 0.28391557931900024],
        [0.7393400073051453, -1.7282757759094238, 0.24107681214809418],
    ]),
]


def _loss(w):
    return tf.reduce_sum(tf.square(w) * [1.0, 2.0, 3.0] + w * [0.5, -1.0, 2.0])


@pytest.mark.parametrize("cls,kwargs,expected", TF_STEPS,
                         ids=["%s-%d" % (c, i) for i, (c, _, _) in enumerate(TF_STEPS)])
def test_updates_equal_tf_keras(cls, kwargs, expected):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -2.0, 0.5], name="w")
        opt = getattr(K.optimizers, cls)(**kwargs)
        updates = opt.get_updates(_loss(w), [w])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = []
            for _ in range(4):
                sess.run(updates)
                got.append(sess.run(w))
            assert sess.run(opt.iterations) == 4
    np.testing.assert_array_equal(np.array(got), np.array(expected, dtype=np.float32))


def test_minimize_is_get_updates():
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -2.0, 0.5], name="w")
        step = K.optimizers.Adam(0.1).minimize(_loss(w), var_list=[w])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(4):
                sess.run(step)
            np.testing.assert_array_equal(sess.run(w), np.array(TF_STEPS[3][2][-1], np.float32))


def test_sparse_gradients_are_applied_as_dense():
    with tf.Graph().as_default():
        table = tf.Variable([[1.0], [2.0], [3.0]], name="table")
        loss = tf.reduce_sum(tf.gather(table, [0, 2, 2]))
        step = K.optimizers.SGD(0.5).minimize(loss, var_list=[table])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_array_equal(sess.run(table), [[0.5], [2.0], [2.0]])


def test_get_names_and_hyperparameters():
    assert isinstance(K.optimizers.get("adam"), K.optimizers.Adam)
    assert isinstance(K.optimizers.get("SGD"), K.optimizers.SGD)
    assert K.optimizers.get("rmsprop").get_config() == {
        "name": "RMSprop", "learning_rate": 0.001, "rho": 0.9, "momentum": 0.0,
        "epsilon": 1e-7, "centered": False, "decay": 0.0}
    assert K.optimizers.get("adagrad").learning_rate == 0.001
    assert K.optimizers.SGD(lr=0.5).lr == 0.5 and K.optimizers.Adam().epsilon == 1e-7
    plain = tf.train.GradientDescentOptimizer(0.1)
    assert K.optimizers.get(plain) is plain
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        K.optimizers.get("adamw")


def test_refused_options_say_so():
    with pytest.raises(TypeError, match="unexpected keyword argument 'betas'"):
        K.optimizers.Adam(betas=0.9)
    with pytest.raises(ValueError, match="momentum"):
        K.optimizers.SGD(momentum=-1.0)
    with tf.Graph().as_default():
        w, v = tf.Variable([1.0], name="w"), tf.Variable([1.0], name="v")
        with pytest.raises(ValueError, match="v.* has `None` for gradient"):
            K.optimizers.SGD().get_updates(tf.reduce_sum(w), [w, v])
