"""tf.nn.rnn_cell, dynamic_rnn, static_rnn and the bidirectional drivers against TensorFlow.

tests/fixtures/tf_rnn/expected.npz holds what TensorFlow 2.21's tf.compat.v1 computed for the
networks of tests/fixtures/tf_rnn/make.py (its maker; ``tf`` there is either module): variable
names in creation order, outputs, final states, gradients w.r.t. the inputs and every variable,
and a small model's variables after three Adam steps.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster
from zps.testing.gradient_checker import GradCase, check_gradients

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tf_rnn"
EXPECTED = np.load(FIXTURE / "expected.npz")
_spec = importlib.util.spec_from_file_location("tf_rnn_make", FIXTURE / "make.py")
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)


class _MatrixCell(tf.nn.rnn_cell.RNNCell):
    """``h = tanh([x, h] @ w)`` with ``w`` a tensor given to it: a cell without variables."""

    state_size = 2
    output_size = 2

    def __init__(self, w):
        super().__init__()
        self._w = w

    def call(self, inputs, state):
        h = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), self._w))
        return h, h


def _dynamic_rnn_of(x, w, h0):
    outputs, state = tf.nn.dynamic_rnn(_MatrixCell(w), x, sequence_length=[3, 1],
                                       initial_state=h0)
    return tf.concat([tf.reshape(outputs, [2, 6]), state], 1)


R = np.random.default_rng(5)
GRAD_CASES = [   # (also run on a GPU by tests/ops/test_gpu_ops.py)
    GradCase("While", _dynamic_rnn_of, [R.standard_normal((2, 3, 2)), R.standard_normal((4, 2)),
                                        R.standard_normal((2, 2))], name="dynamic_rnn"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_gradient(case):
    check_gradients(case)


@pytest.mark.parametrize("case", sorted(make.CASES))
def test_networks_compute_what_tensorflow_computes(case):
    names, results = make.run_case(tf, case)
    assert names == EXPECTED[case + "/names"].tolist()
    expected = [EXPECTED["%s/%d" % (case, i)] for i in range(len(results))]
    assert "%s/%d" % (case, len(results)) not in EXPECTED
    for i, (got, want) in enumerate(zip(results, expected)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg="%s/%d" % (case, i))


def test_training_matches_tensorflow():
    names, trained = make.training(tf)
    assert names == EXPECTED["training/names"].tolist()
    for i, got in enumerate(trained):
        np.testing.assert_allclose(got, EXPECTED["training/%d" % i], rtol=1e-4, atol=1e-5,
                                   err_msg=names[i])


def test_training_with_the_variables_on_a_ps():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 2)).astype(np.float32)
    target = rng.standard_normal((4, 1)).astype(np.float32)
    lengths = np.array([6, 4, 2, 5], np.int32)
    cluster = InProcessCluster({"ps": 1, "worker": 1})
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(
                    ps_tasks=1, worker_device="/job:worker/task:0")):
                _, train_op = make.training_model(tf, x, target, lengths)
            variables = tf.trainable_variables()
            assert {v.device for v in variables} == {"/job:ps/task:0"}
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                for i, v in enumerate(variables):
                    sess.run(tf.assign(v, make.values(i, v.shape.as_list())))
                for _ in range(3):
                    sess.run(train_op)
                trained = sess.run(variables)
    finally:
        cluster.stop()
    for i, got in enumerate(trained):
        np.testing.assert_allclose(got, EXPECTED["training/%d" % i], rtol=1e-4, atol=1e-5)


def test_unknown_batch_and_time_and_a_fed_length():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, make.DEPTH])
        lengths = tf.placeholder(tf.int32, [None])
        cell = tf.nn.rnn_cell.BasicLSTMCell(4, forget_bias=0.5)
        outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
        assert outputs.shape.as_list() == [None, None, 4]
        assert state.c.shape.as_list() == [None, 4]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i, v in enumerate(tf.trainable_variables()):
                sess.run(tf.assign(v, make.values(i, v.shape.as_list())))
            got = sess.run([outputs, state.c, state.h],
                           {x: make.inputs(), lengths: make.LENGTHS})
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, EXPECTED["basic_lstm/%d" % i], rtol=2e-5, atol=2e-6)


def test_a_cell_shares_its_variables_across_calls_and_scopes_name_them():
    # The names (and the quirks of variable scope counting) are TF 2.21's for the same program.
    with tf.Graph().as_default():
        x = tf.ones([2, 4, 3])
        cell = tf.nn.rnn_cell.GRUCell(2)
        tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="again")   # the same variables
        named = tf.nn.rnn_cell.BasicRNNCell(2, name="mine")
        tf.nn.dynamic_rnn(named, x, dtype=tf.float32, scope="other")
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(2), x, dtype=tf.float32)
        assert [v.op.name for v in tf.trainable_variables()] == [
            "rnn/gru_cell/gates/kernel", "rnn/gru_cell/gates/bias",
            "rnn/gru_cell/candidate/kernel", "rnn/gru_cell/candidate/bias",
            "other/mine/kernel", "other/mine/bias",
            "rnn/gru_cell_1/gates/kernel", "rnn/gru_cell_1/gates/bias",
            "rnn/gru_cell_1/candidate/kernel", "rnn/gru_cell_1/candidate/bias"]
        assert cell.trainable_variables == tf.trainable_variables()[:4]
        assert named.name == "mine"
    with tf.Graph().as_default():
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(2), tf.ones([2, 4, 3]), dtype=tf.float32)
        with pytest.raises(ValueError, match="rnn/gru_cell/gates/kernel already exists"):
            tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(2), tf.ones([2, 4, 3]), dtype=tf.float32)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_dropout_wrapper_drops_and_scales():
    with tf.Graph().as_default():
        keep = tf.placeholder(tf.float32, [])
        cell = tf.nn.rnn_cell.DropoutWrapper(_IdentityCell(400), input_keep_prob=keep,
                                             output_keep_prob=0.5, seed=3)
        outputs, _ = tf.nn.dynamic_rnn(cell, tf.ones([2, 3, 400]), dtype=tf.float32)
        everything, halved = _run([outputs, outputs], {keep: 1.0})[0], _run(outputs, {keep: 0.5})
    assert set(np.unique(everything)) == {0.0, 2.0}
    assert 0.4 < (everything > 0).mean() < 0.6
    assert set(np.unique(halved)) == {0.0, 4.0}
    assert 0.2 < (halved > 0).mean() < 0.3
    assert not (everything[:, 0] == everything[:, 1]).all()   # a new mask at every step


def test_variational_dropout_keeps_one_mask_and_the_lstm_memory():
    with tf.Graph().as_default():
        inner = tf.nn.rnn_cell.BasicLSTMCell(200)
        cell = tf.nn.rnn_cell.DropoutWrapper(inner, state_keep_prob=0.5, output_keep_prob=0.5,
                                             variational_recurrent=True, dtype=tf.float32)
        outputs, state = tf.nn.dynamic_rnn(cell, tf.ones([3, 4, 2]), dtype=tf.float32)
        out, c, h = _run([outputs, state.c, state.h])
    dropped = out == 0
    assert 0.3 < dropped.mean() < 0.7
    assert (dropped == dropped[:1, :1]).all()   # the same units in every example and step
    assert (h == 0).any() and not (c == 0).any()


class _IdentityCell(tf.nn.rnn_cell.RNNCell):
    """Outputs its input; no state to speak of."""

    def __init__(self, size):
        super().__init__()
        self._size = size

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return self._size

    def call(self, inputs, state):
        return inputs, state


def test_residual_and_device_wrappers():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.ResidualWrapper(_IdentityCell(3))
        x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        out, _ = cell(x, cell.zero_state(2, tf.float32))
        np.testing.assert_array_equal(_run(out), 2 * _run(x))
        placed = tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.BasicRNNCell(2), "/cpu:0")
        out, _ = placed(x, placed.zero_state(2, tf.float32))
        assert out.op.device.endswith("cpu:0") or out.op.device.endswith("CPU:0")
        with pytest.raises(ValueError, match="incompatible"):
            tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(2))(
                x, tf.zeros([2, 2]))


def test_zero_state_structures_and_a_tensor_batch_size():
    with tf.Graph().as_default():
        batch = tf.placeholder(tf.int32, [])
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.LSTMCell(3, num_proj=2),
                                            tf.nn.rnn_cell.GRUCell(4)])
        state = cell.zero_state(batch, tf.float32)
        assert isinstance(state[0], tf.nn.rnn_cell.LSTMStateTuple)
        assert cell.state_size == (tf.nn.rnn_cell.LSTMStateTuple(3, 2), 4)
        assert [s.shape.as_list() for s in (state[0].c, state[0].h, state[1])] == [
            [None, 3], [None, 2], [None, 4]]
        values = _run([state[0].c, state[1]], {batch: 5})
        assert [v.shape for v in values] == [(5, 3), (5, 4)]
        initial = cell.get_initial_state(inputs=tf.ones([7, 3]))
        assert initial[1].shape.as_list() == [7, 4]


def test_bad_arguments_say_what_is_wrong():
    cells = tf.nn.rnn_cell
    with tf.Graph().as_default():
        x = tf.ones([2, 4, 3])
        with pytest.raises(ValueError, match="must give a dtype"):
            tf.nn.dynamic_rnn(cells.GRUCell(2), x)
        with pytest.raises(ValueError, match="depth of inputs"):
            tf.nn.dynamic_rnn(cells.GRUCell(2), tf.placeholder(tf.float32, [2, 4, None]),
                              dtype=tf.float32)
        with pytest.raises(ValueError, match="sequence_length must be a vector"):
            tf.nn.dynamic_rnn(cells.GRUCell(2), x, sequence_length=[[1]], dtype=tf.float32)
        with pytest.raises(ValueError, match=r"sequence_length is \[2\]"):
            tf.nn.dynamic_rnn(cells.GRUCell(2), x, sequence_length=[1, 2, 3], dtype=tf.float32)
        with pytest.raises(TypeError, match="not an RNNCell"):
            tf.nn.dynamic_rnn(lambda x, s: (x, s), x, dtype=tf.float32)
        with pytest.raises(TypeError, match="inputs must be a sequence"):
            tf.nn.static_rnn(cells.GRUCell(2), x, dtype=tf.float32)
        with pytest.raises(ValueError, match="at least one cell"):
            cells.MultiRNNCell([])
        with pytest.raises(ValueError, match="state_is_tuple"):
            cells.MultiRNNCell([cells.BasicLSTMCell(2)], state_is_tuple=False)
        with pytest.raises(ValueError, match="between 0 and 1"):
            cells.DropoutWrapper(cells.GRUCell(2), output_keep_prob=1.5)
        with pytest.raises(ValueError, match="dtype must be provided"):
            cells.DropoutWrapper(cells.GRUCell(2), output_keep_prob=0.5,
                                 variational_recurrent=True)


def test_contrib_rnn_aliases():
    assert tf.contrib.rnn.LSTMCell is tf.nn.rnn_cell.LSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    assert tf.contrib.rnn.LSTMStateTuple is tf.nn.rnn_cell.LSTMStateTuple


def test_a_tensorflow_checkpoint_restores_by_name():
    with tf.Graph().as_default():
        results = make.checkpointed(tf)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, str(FIXTURE / "checkpoint" / "model.ckpt"))
            got = sess.run(results)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, EXPECTED["checkpointed/%d" % i], rtol=2e-5, atol=2e-6)


class _OldStyleCell(tf.nn.rnn_cell.RNNCell):
    """A TF1 cell of the older kind: its variable made with tf.get_variable in call()."""

    state_size = 2
    output_size = 2

    def call(self, inputs, state):
        w = tf.get_variable("w", [inputs.shape[1].value + 2, 2],
                            initializer=tf.constant_initializer(0.3))
        h = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), w))
        return h, h


def test_a_cell_creating_its_variables_in_call_runs_in_both_drivers():
    with tf.Graph().as_default():
        x = tf.constant(make.inputs())
        cells = [_OldStyleCell(), _OldStyleCell()]
        dynamic, d_state = tf.nn.dynamic_rnn(cells[0], x, sequence_length=make.LENGTHS,
                                             dtype=tf.float32, scope="d")
        static, s_state = tf.nn.static_rnn(cells[1], tf.unstack(x, axis=1),
                                           sequence_length=make.LENGTHS, dtype=tf.float32,
                                           scope="s")
        assert [v.op.name for v in tf.global_variables()] == [
            "d/private__old_style_cell/w", "s/private__old_style_cell/w"]
        assert [v.op.name for v in cells[0].variables] == ["d/private__old_style_cell/w"]
        got = _run([dynamic, d_state, tf.stack(static, axis=1), s_state])
    np.testing.assert_allclose(got[0], got[2], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[3], rtol=1e-6)


class _CallOverridingCell(tf.nn.rnn_cell.RNNCell):
    """The oldest kind of TF1 cell: __call__ itself, opening its own variable scope."""

    state_size = 2
    output_size = 2

    def __call__(self, inputs, state, scope=None):
        with tf.variable_scope(scope or "cell"):
            w = tf.get_variable("w", [inputs.shape[1].value + 2, 2],
                                initializer=tf.constant_initializer(0.3))
            h = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), w))
        return h, h


def test_a_cell_overriding_call_runs_in_both_drivers():
    with tf.Graph().as_default():
        x = tf.constant(make.inputs())
        dynamic, _ = tf.nn.dynamic_rnn(_CallOverridingCell(), x, dtype=tf.float32)
        static, _ = tf.nn.static_rnn(_CallOverridingCell(), tf.unstack(x, axis=1),
                                     dtype=tf.float32, scope="s")
        assert [v.op.name for v in tf.global_variables()] == ["rnn/cell/w", "s/cell/w"]
        got = _run([dynamic, tf.stack(static, axis=1)])
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)


def test_gradients_reach_the_initial_state_as_in_static_rnn():
    with tf.Graph().as_default():
        x = tf.constant(make.inputs())
        c0 = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        h0 = tf.constant(np.linspace(1, -1, 12, dtype=np.float32).reshape(3, 4))
        cell = tf.nn.rnn_cell.BasicLSTMCell(4)
        initial = tf.nn.rnn_cell.LSTMStateTuple(c0, h0)
        dynamic, d_state = tf.nn.dynamic_rnn(cell, x, sequence_length=make.LENGTHS,
                                             initial_state=initial)
        static, s_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1),
                                           sequence_length=make.LENGTHS, initial_state=initial)
        d_loss = tf.reduce_sum(dynamic * dynamic) + tf.reduce_sum(d_state.c)
        s_loss = tf.reduce_sum(tf.stack(static, 1) ** 2) + tf.reduce_sum(s_state.c)
        got = _run(tf.gradients(d_loss, [c0, h0]) + tf.gradients(s_loss, [c0, h0]))
    np.testing.assert_allclose(got[0], got[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], got[3], rtol=1e-5, atol=1e-6)
    assert np.abs(got[0][2]).max() == 1.0   # length 0: the state passes straight through


def test_sharded_lstm_kernels_and_a_state_filter():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.LSTMCell(4, num_unit_shards=2, num_proj=3, num_proj_shards=2)
        wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, state_keep_prob=0.5,
                                                dropout_state_filter_visitor=lambda s: False)
        outputs, state = tf.nn.dynamic_rnn(wrapped, tf.ones([2, 3, 5]), dtype=tf.float32)
        assert [v.op.name for v in cell.variables] == [
            "rnn/lstm_cell/kernel/part_0", "rnn/lstm_cell/kernel/part_1", "rnn/lstm_cell/bias",
            "rnn/lstm_cell/projection/kernel/part_0", "rnn/lstm_cell/projection/kernel/part_1"]
        out, h = _run([outputs, state.h])
    np.testing.assert_array_equal(out[:, -1], h)   # the filter kept the whole state
