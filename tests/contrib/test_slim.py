"""tf.contrib.slim / tf.contrib.framework: arg_scope, the variable helpers, the layers slim adds to
contrib's, and slim.learning's train op and training loop (alone, and two synchronous replicas
on an in-process cluster). Names, shapes and variable lists are TF 1.x slim's (tf_slim 1.1 on
TF 2.21, recorded once)."""

import os
import threading

import numpy as np
import pytest

import zps as tf
from zps.contrib import arg_scope as arg_scope_lib
from zps.testing.cluster import InProcessCluster

slim = tf.contrib.slim
pytestmark = pytest.mark.timeout(60)


# -- arg_scope -----------------------------------------------------------------------------------
@arg_scope_lib.add_arg_scope
def _f(a, b=1, c=2, scope=None):
    return (a, b, c, scope)


@arg_scope_lib.add_arg_scope
def _g(a, b=10, **rest):
    return (a, b, rest)


def _plain(a, b=1):
    return (a, b)


def test_arg_scope_defaults_nest_override_and_yield_a_reusable_scope():
    assert _f(0) == (0, 1, 2, None)
    with slim.arg_scope([_f, _g], b=5):
        assert _f(0) == (0, 5, 2, None) and _g(0) == (0, 5, {})
        assert _f(0, b=7) == (0, 7, 2, None)          # the call's own argument wins
        with slim.arg_scope([_f], c=9) as inner:
            assert _f(0) == (0, 5, 9, None)            # the outer scope's values stay
            with slim.arg_scope([_f], b=6):
                assert _f(0) == (0, 6, 9, None)
        assert _f(0) == (0, 5, 2, None)
    assert _f(0) == (0, 1, 2, None)
    with slim.arg_scope(inner):                         # reopened later, as TF1 allows
        assert _f(0) == (0, 5, 9, None)
    assert slim.has_arg_scope(_f) and not slim.has_arg_scope(_plain)
    assert slim.arg_scoped_arguments(_f) == ("b", "c", "scope")
    assert slim.arg_scope_func_key(_f) == slim.arg_scope_func_key(_f.__wrapped__)


def test_arg_scope_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="is not decorated with @add_arg_scope"):
        with slim.arg_scope([_plain], b=1):
            pass
    with pytest.raises(TypeError, match="list_ops_or_scope must either be a list/tuple"):
        with slim.arg_scope(_f, b=1):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with slim.arg_scope({}, b=1):
            pass
    with slim.arg_scope([_f, _g], d=3):
        assert _g(0) == (0, 10, {"d": 3})              # takes any keyword: gets it
        with pytest.raises(TypeError, match=r"_f\(\) got the argument\(s\) 'd' from an "
                                            r"enclosing arg_scope"):
            _f(0)
    with pytest.raises(ValueError, match="is not decorated"):
        slim.arg_scoped_arguments(_plain)


def test_arg_scope_sets_layer_defaults_and_nested_normalizer_arguments():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 3])
        with slim.arg_scope([slim.conv2d], padding="VALID", normalizer_fn=slim.batch_norm):
            with slim.arg_scope([slim.batch_norm], is_training=False, scale=True):
                y = slim.conv2d(x, 4, [3, 3], scope="conv1")
        assert y.get_shape().as_list() == [None, 6, 6, 4]
        names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["conv1/BatchNorm/beta", "conv1/BatchNorm/gamma", "conv1/BatchNorm/moving_mean",
                     "conv1/BatchNorm/moving_variance", "conv1/weights"]


# -- the layers slim adds ------------------------------------------------------------------------
X = np.random.RandomState(0).randn(2, 5, 5, 3).astype(np.float32)


def _init(shape, seed):
    return tf.constant_initializer(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def test_layers_make_tf1_slims_variables_and_shapes():
    with tf.Graph().as_default():
        x = tf.constant(X)
        with slim.arg_scope([slim.conv2d_transpose, slim.separable_conv2d], activation_fn=None):
            a = slim.conv2d_transpose(x, 4, [3, 3], stride=2, scope="ct")
            b = slim.separable_conv2d(x, 4, [3, 3], depth_multiplier=2, scope="sep")
            c = slim.separable_conv2d(x, None, [3, 3], depth_multiplier=2, stride=2, scope="dw")
        d = slim.layer_norm(x, scope="ln")
        e = slim.bias_add(x, activation_fn=tf.nn.relu, scope="ba")
        f = slim.softmax(x)
        g = slim.unit_norm(x, 2)
        shapes = [t.get_shape().as_list() for t in (a, b, c, d, e, f, g)]
        ops = [t.op.name for t in (a, b, c, d, e, f, g)]
        variables = sorted((v.op.name, v.get_shape().as_list()) for v in tf.global_variables())
        model = sorted(v.op.name for v in slim.get_model_variables())
    assert shapes == [[2, 10, 10, 4], [2, 5, 5, 4], [2, 3, 3, 6], [2, 5, 5, 3], [2, 5, 5, 3],
                      [2, 5, 5, 3], [2, 5, 5, 3]]
    assert ops == ["ct/BiasAdd", "sep/BiasAdd", "dw/BiasAdd", "ln/batchnorm/add_1", "ba/Relu",
                   "softmax/Reshape_1", "UnitNorm/div"]
    assert variables == [
        ("ba/biases", [3]), ("ct/biases", [4]), ("ct/weights", [3, 3, 4, 3]),
        ("dw/biases", [6]), ("dw/depthwise_weights", [3, 3, 3, 2]), ("ln/beta", [3]),
        ("ln/gamma", [3]), ("sep/biases", [4]), ("sep/depthwise_weights", [3, 3, 3, 2]),
        ("sep/pointwise_weights", [1, 1, 6, 4])]
    assert model == [name for name, _ in variables]


def test_layer_values_match_their_definitions():
    with tf.Graph().as_default():
        x = tf.constant(X)
        ct = slim.conv2d_transpose(x, 4, [3, 3], stride=2, activation_fn=None,
                                   weights_initializer=_init([3, 3, 4, 3], 1),
                                   biases_initializer=tf.constant_initializer(0.5), scope="ct")
        ct_ref = tf.nn.conv2d_transpose(x, tf.constant(np.random.RandomState(1).randn(
            3, 3, 4, 3).astype(np.float32)), [2, 10, 10, 4], [1, 2, 2, 1], "SAME") + 0.5
        dw = slim.separable_conv2d(x, None, [3, 3], depth_multiplier=2, stride=2,
                                   activation_fn=None, weights_initializer=_init([3, 3, 3, 2], 4),
                                   scope="dw")
        dw_ref = tf.nn.depthwise_conv2d(x, tf.constant(np.random.RandomState(4).randn(
            3, 3, 3, 2).astype(np.float32)), [1, 2, 2, 1], "SAME")
        ln = slim.layer_norm(x * 3.0 + 1.0, begin_norm_axis=1)
        ln_last = slim.layer_norm(x, begin_norm_axis=-1, center=False, scope="ln2")
        ba = slim.bias_add(x, initializer=tf.constant_initializer(0.25), activation_fn=tf.nn.relu)
        sm, un = slim.softmax(x), slim.unit_norm(x, 2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([ct, ct_ref, dw, dw_ref, ln, ln_last, ba, sm, un])
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], got[3], rtol=1e-5, atol=1e-5)
    y = X * 3.0 + 1.0
    mean, var = y.mean(axis=(1, 2, 3), keepdims=True), y.var(axis=(1, 2, 3), keepdims=True)
    np.testing.assert_allclose(got[4], (y - mean) / np.sqrt(var + 1e-12), rtol=1e-4, atol=1e-5)
    mean, var = X.mean(axis=-1, keepdims=True), X.var(axis=-1, keepdims=True)
    np.testing.assert_allclose(got[5], (X - mean) / np.sqrt(var + 1e-12), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[6], np.maximum(X + 0.25, 0), rtol=1e-6)
    e = np.exp(X - X.max(-1, keepdims=True))
    np.testing.assert_allclose(got[7], e / e.sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got[8], X / np.sqrt(1e-7 + (X ** 2).sum(2, keepdims=True)),
                               rtol=1e-5)


def test_layer_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be < rank"):
            slim.layer_norm(tf.zeros([2, 3]), begin_norm_axis=2)
        with pytest.raises(ValueError, match="Data format NCHW only supports 4D Tensor"):
            slim.bias_add(tf.zeros([2, 3]), data_format="NCHW")
        with pytest.raises(ValueError, match="dim must be positive but smaller"):
            slim.unit_norm(tf.zeros([2, 3]), 2)
        with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC"):
            slim.conv2d_transpose(tf.zeros([1, 4, 4, 1]), 2, 3, data_format="NWHC")


# -- variables -----------------------------------------------------------------------------------
def test_variable_helpers_find_create_and_place_variables():
    with tf.Graph().as_default():
        with tf.variable_scope("net"):
            w = slim.model_variable("weights", [2, 3])
            with slim.arg_scope([slim.variable], device="/job:ps/task:1"):
                s = slim.variable("step", [], trainable=False)
            with tf.variable_scope("head"):
                hw = slim.model_variable("weights", [3])
        lv = slim.local_variable(np.zeros(2, np.float32), name="counts")
        assert s.device == "/job:ps/task:1" and not s.trainable
        assert slim.get_model_variables() == [w, hw]
        assert slim.get_variables_by_name("weights") == [w, hw]
        assert slim.get_variables_by_suffix("step") == [s]
        assert slim.get_variables("net/head") == [hw]
        assert slim.get_variables_to_restore(exclude=["net/head"]) == [w, s]
        assert slim.get_variables_to_restore(include=["net/head", "net/step"]) == [hw, s]
        assert slim.get_unique_variable("net/weights") is w
        with pytest.raises(ValueError, match="Couldn't find variable nope"):
            slim.get_unique_variable("nope")
        with pytest.raises(TypeError, match="list or tuple of scopes"):
            slim.get_variables_to_restore(exclude="net/head")
        assert slim.get_local_variables() == [lv]
        assert slim.filter_variables([w, s, hw], include_patterns=["weights"],
                                     exclude_patterns=["head"]) == [w]
        chooser = slim.VariableDeviceChooser(num_tasks=2)
        assert [chooser(None) for _ in range(3)] == [
            "/job:ps/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0",
            "/job:ps/task:0/device:CPU:0"]


def test_assign_from_checkpoint_and_values(tmp_path):
    with tf.Graph().as_default():
        a = tf.get_variable("a", initializer=np.arange(6, dtype=np.float32).reshape(2, 3))
        p = tf.get_variable("p", shape=[4, 2], initializer=tf.ones_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(p._get_variable_list()[1], [[7.0, 8.0], [9.0, 10.0]]))
            path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        a = tf.get_variable("a", shape=[2, 3], initializer=tf.zeros_initializer())
        p = tf.get_variable("p", shape=[4, 2], initializer=tf.zeros_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
        extra = tf.get_variable("extra", shape=[], initializer=tf.zeros_initializer())
        parts = p._get_variable_list()
        op, feed = slim.assign_from_checkpoint(path, [a] + parts)
        with pytest.raises(ValueError, match=r"Checkpoint is missing variable \[extra\]"):
            slim.assign_from_checkpoint(path, [a, extra])
        restore = slim.assign_from_checkpoint_fn(path, [a, extra] + parts,
                                                 ignore_missing_vars=True)
        values_op, values_feed = slim.assign_from_values({"extra": 5.0, "a": np.ones((2, 3))})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(op, feed)
            np.testing.assert_array_equal(sess.run(a), np.arange(6).reshape(2, 3))
            np.testing.assert_array_equal(sess.run(tf.concat(parts, 0)),
                                          [[1, 1], [1, 1], [7, 8], [9, 10]])
            sess.run(values_op, values_feed)
            assert sess.run(extra) == 5.0 and sess.run(a).sum() == 6.0
            restore(sess)
            assert sess.run(extra) == 5.0 and sess.run(a).sum() == 15.0   # extra: left alone


# -- slim.learning -------------------------------------------------------------------------------
def test_create_train_op_runs_updates_then_scales_and_clips_each_gradient():
    with tf.Graph().as_default():
        w = tf.Variable([3.0, 4.0], name="w")        # d(sum w^2)/dw = [6, 8], norm 10
        v = tf.Variable(1.0, name="v")               # d(5 v)/dv = 5
        counter = tf.Variable(0.0, name="counter")
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(counter, 1.0))
        loss = tf.reduce_sum(tf.square(w)) + 5.0 * v
        train_op = slim.learning.create_train_op(
            loss, tf.train.GradientDescentOptimizer(0.1), clip_gradient_norm=2.0,
            gradient_multipliers={"v": 0.5})
        assert train_op in tf.get_collection(tf.GraphKeys.TRAIN_OP)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(train_op) == pytest.approx(30.0)   # the loss before the step
            got_w, got_v, got_c, step = sess.run([w, v, counter, tf.train.get_global_step()])
    np.testing.assert_allclose(got_w, [3.0 - 0.1 * 1.2, 4.0 - 0.1 * 1.6], rtol=1e-6)  # [6,8]*2/10
    assert got_v == pytest.approx(1.0 - 0.1 * 2.0)    # 5 * 0.5 = 2.5, clipped to 2
    assert got_c == 1.0 and step == 1


def test_create_train_op_checks_the_loss_for_nan():
    with tf.Graph().as_default():
        w = tf.Variable(-1.0)
        train_op = slim.learning.create_train_op(tf.sqrt(w) + w,
                                                 tf.train.GradientDescentOptimizer(0.1))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="LossTensor is inf or nan"):
                sess.run(train_op)


def test_train_runs_to_the_step_count_saves_and_resumes(tmp_path):
    logdir = str(tmp_path)

    def run(steps):
        with tf.Graph().as_default():
            w = tf.Variable(0.0, name="w")
            train_op = slim.learning.create_train_op(tf.square(w - 3.0),
                                                     tf.train.GradientDescentOptimizer(0.1))
            loss = slim.learning.train(train_op, logdir, number_of_steps=steps,
                                       log_every_n_steps=0, save_summaries_secs=0)
            return loss, tf.train.load_variable(logdir, "w"), \
                tf.train.load_variable(logdir, "global_step")

    loss, w, step = run(5)
    assert step == 5 and w == pytest.approx(3.0 - 3.0 * 0.8 ** 5, rel=1e-5)
    assert loss == pytest.approx((3.0 * 0.8 ** 4) ** 2, rel=1e-5)   # the 5th step's loss
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-5")
    loss, w, step = run(8)                            # restored at step 5: three more steps
    assert step == 8 and w == pytest.approx(3.0 - 3.0 * 0.8 ** 8, rel=1e-5)
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(logdir))


def test_train_argument_errors():
    with tf.Graph().as_default():
        w = tf.Variable(0.0)
        train_op = slim.learning.create_train_op(tf.square(w), tf.train.GradientDescentOptimizer(0.1))
        with pytest.raises(ValueError, match="Cannot provide saver because logdir=None"):
            slim.learning.train(train_op, None, saver=tf.train.Saver())
        with pytest.raises(ValueError, match="must be either None or a positive number"):
            slim.learning.train(train_op, None, number_of_steps=0)
        with pytest.raises(ValueError, match="startup_delay_steps must be zero"):
            slim.learning.train(train_op, None, startup_delay_steps=2,
                                sync_optimizer=tf.train.SyncReplicasOptimizer(
                                    tf.train.GradientDescentOptimizer(0.1), 2))
        with pytest.raises(ValueError, match="create_train_op: there are no variables to train"):
            slim.learning.create_train_op(tf.constant(1.0), tf.train.GradientDescentOptimizer(0.1),
                                          variables_to_train=[])
    with pytest.raises(AttributeError, match="use tf.losses"):
        slim.losses  # noqa: B018


def test_two_workers_train_synchronously_through_a_ps(tmp_path):
    # Both replicas compute the same gradient of (w - 3)^2, so each synchronous step is one
    # plain gradient step: w_k = 3 - 3 * 0.8^k.
    steps = 6
    results, errors = {}, []

    with InProcessCluster({"ps": 1, "worker": 2}) as cluster:
        def replica(task):
            try:
                with tf.Graph().as_default():
                    with tf.device(tf.train.replica_device_setter(
                            worker_device="/job:worker/task:%d" % task, cluster=cluster.spec)):
                        w = tf.Variable(0.0, name="w")
                        opt = tf.train.SyncReplicasOptimizer(
                            tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2,
                            total_num_replicas=2)
                        train_op = slim.learning.create_train_op(tf.square(w - 3.0), opt)
                    results[task] = slim.learning.train(
                        train_op, str(tmp_path) if task == 0 else None,
                        master=cluster.target("worker", task), is_chief=task == 0,
                        number_of_steps=steps, log_every_n_steps=0, sync_optimizer=opt,
                        save_summaries_secs=0)
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                errors.append(e)

        threads = [threading.Thread(target=replica, args=(t,), daemon=True) for t in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(45)
            assert not t.is_alive(), "a replica is still training after 45 s"
    if errors:
        raise errors[0]
    assert tf.train.load_variable(str(tmp_path), "global_step") >= steps
    w = tf.train.load_variable(str(tmp_path), "w")
    k = tf.train.load_variable(str(tmp_path), "global_step")
    assert w == pytest.approx(3.0 - 3.0 * 0.8 ** k, rel=1e-5)
