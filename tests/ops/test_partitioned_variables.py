"""Partitioners, get_variable(partitioner=...) and PartitionedVariable (TF1 semantics)."""

import numpy as np
import pytest

import zps as tf
from zps.framework.tensor_shape import TensorShape
from zps.ops import partitioned_variables as pv
from zps.ops.variable_scope import get_variable, variable_scope
from zps.train.device_setter import replica_device_setter


def _shape(*dims):
    return TensorShape(list(dims))


def test_fixed_size_partitioner():
    fn = pv.fixed_size_partitioner(3)
    assert fn(shape=_shape(10, 4), dtype=tf.float32) == [3, 1]
    assert fn(shape=_shape(2, 4), dtype=tf.float32) == [2, 1]  # never more shards than rows
    assert pv.fixed_size_partitioner(2, axis=1)(shape=_shape(10, 4), dtype=tf.float32) == [1, 2]


def test_min_max_variable_partitioner():
    # TF1's docstring example: 1024x1024 float32 = 4 MB, 256 KB slices -> 16 partitions.
    assert pv.min_max_variable_partitioner(32)(_shape(1024, 1024), tf.float32) == [16, 1]
    assert pv.min_max_variable_partitioner(4)(_shape(1024, 1024), tf.float32) == [4, 1]
    assert pv.min_max_variable_partitioner(8, min_slice_size=1 << 20)(
        _shape(1024, 1024), tf.float32) == [4, 1]
    assert pv.min_max_variable_partitioner(100, min_slice_size=1)(_shape(3, 2), tf.float32) == [3, 1]
    assert pv.min_max_variable_partitioner(8)(_shape(10), tf.float32) == [1]
    assert pv.min_max_variable_partitioner(64, min_slice_size=16)(_shape(64), tf.string) == [64]
    with pytest.raises(ValueError, match="Can not partition variable along axis 2"):
        pv.min_max_variable_partitioner(2, axis=2)(_shape(4, 4), tf.float32)


def test_variable_axis_size_partitioner():
    fn = pv.variable_axis_size_partitioner(max_shard_bytes=100)
    # 10 rows of 4 float32 = 16 bytes a row; 6 rows fit in 100 bytes -> 2 shards.
    assert fn(_shape(10, 4), tf.float32) == [2, 1]
    assert pv.variable_axis_size_partitioner(10)(_shape(10, 4), tf.float32) == [10, 1]
    assert pv.variable_axis_size_partitioner(10, max_shards=3)(_shape(10, 4), tf.float32) == [3, 1]
    assert pv.variable_axis_size_partitioner(64, axis=1, bytes_per_string_element=8)(
        _shape(2, 10), tf.string) == [1, 3]
    with pytest.raises(ValueError, match="max_shard_bytes and bytes_per_string_element must be "
                                         "positive"):
        pv.variable_axis_size_partitioner(0)
    with pytest.raises(ValueError, match="max_shards must be positive"):
        pv.variable_axis_size_partitioner(10, max_shards=-1)
    with pytest.raises(ValueError, match="shape is not fully defined"):
        fn(_shape(None, 4), tf.float32)
    with pytest.raises(ValueError, match="shape is not a TensorShape"):
        fn([10, 4], tf.float32)


def test_uneven_split_first_shards_larger_with_slice_info():
    full = np.arange(22, dtype=np.float32).reshape(11, 2)
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=full, partitioner=pv.fixed_size_partitioner(3))
        assert isinstance(v, pv.PartitionedVariable)
        assert v.name == "emb" and v.dtype == tf.float32 and v.get_shape().as_list() == [11, 2]
        assert [s.name for s in v] == ["emb/part_0:0", "emb/part_1:0", "emb/part_2:0"]
        assert [s.get_shape().as_list() for s in v] == [[4, 2], [4, 2], [3, 2]]
        assert len(v) == 3 and v._get_partitions() == [3, 1]
        assert v.get_variable_list() == list(v) == v._get_variable_list()
        infos = [s._save_slice_info for s in v]
        assert [i.var_offset for i in infos] == [[0, 0], [4, 0], [8, 0]]
        assert [i.spec for i in infos] == ["11 2 0,4:0,2", "11 2 4,4:0,2", "11 2 8,3:0,2"]
        assert {i.full_name for i in infos} == {"emb"}
        assert tf.global_variables() == list(v)  # the shards are the variables
        whole = v.as_tensor()
        converted = tf.convert_to_tensor(v)
        assert whole.get_shape().as_list() == [11, 2] and whole.op.name == "emb"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            parts = sess.run(list(v))
            w, c = sess.run([whole, converted])
            sess.run(v.assign(full * 2))
            doubled = sess.run(whole)
    np.testing.assert_array_equal(parts[2], full[8:])
    np.testing.assert_array_equal(w, full)
    np.testing.assert_array_equal(c, full)
    np.testing.assert_array_equal(doubled, full * 2)


def test_initializers_see_their_partition():
    seen = []

    def init(shape, dtype=None, partition_info=None):
        seen.append((list(shape), partition_info.full_shape, partition_info.var_offset,
                     partition_info.single_offset(shape), partition_info.single_slice_dim(shape)))
        return tf.fill(shape, float(partition_info.var_offset[0]))

    with tf.Graph().as_default():
        v = get_variable("v", [5, 3], initializer=init, partitioner=pv.fixed_size_partitioner(2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            value = sess.run(v.as_tensor())
    assert seen == [([3, 3], [5, 3], [0, 0], 0, 0), ([2, 3], [5, 3], [3, 0], 3, 0)]
    np.testing.assert_array_equal(value[:, 0], [0, 0, 0, 3, 3])


def test_scope_partitioner_reuse_and_errors():
    with tf.Graph().as_default():
        with variable_scope("s", partitioner=pv.fixed_size_partitioner(2)):
            v = get_variable("w", [4, 2])
            scalar = get_variable("b", [])  # scalars are never partitioned
        assert isinstance(v, pv.PartitionedVariable) and isinstance(scalar, tf.Variable)
        assert [s.op.name for s in v] == ["s/w/part_0", "s/w/part_1"]
        with variable_scope("s", reuse=True, partitioner=pv.fixed_size_partitioner(2)):
            assert get_variable("w", [4, 2]) is v
        with variable_scope("s", reuse=tf.AUTO_REUSE, partitioner=pv.fixed_size_partitioner(2)):
            assert get_variable("w") is v
        with variable_scope("s", partitioner=pv.fixed_size_partitioner(2)):
            with pytest.raises(ValueError, match="Partitioned variable with name s/w already "
                                                 "exists"):
                get_variable("w", [4, 2])
        with variable_scope("s", reuse=True, partitioner=pv.fixed_size_partitioner(3)):
            with pytest.raises(ValueError, match=r"specified partitions \[3, 1\] and found "
                                                 r"partitions \[2, 1\]"):
                get_variable("w", [4, 2])
            with pytest.raises(ValueError, match="specified shape"):
                get_variable("w", [5, 2])
            with pytest.raises(ValueError, match="PartitionedVariable s/x does not exist"):
                get_variable("x", [4, 2])
        get_variable("plain", [4])
        with pytest.raises(ValueError, match="an unpartitioned version of the variable was found"):
            get_variable("plain", [4], partitioner=pv.fixed_size_partitioner(2))
        with pytest.raises(ValueError, match="must be fully defined"):
            get_variable("u", [None, 2], partitioner=pv.fixed_size_partitioner(2))
        with pytest.raises(ValueError, match="Can only slice a variable along one dimension"):
            get_variable("two", [4, 4], partitioner=lambda shape, dtype: [2, 2])
        with pytest.raises(ValueError, match="does not match the Variable's rank"):
            get_variable("rank", [4, 4], partitioner=lambda shape, dtype: [2])


def test_custom_getter_sees_partitioner():
    calls = []

    def getter(getter, name, *args, **kwargs):
        calls.append((name, kwargs["partitioner"] is not None))
        return getter(name, *args, **kwargs)

    with tf.Graph().as_default():
        with variable_scope("g", custom_getter=getter):
            v = get_variable("t", [6, 2], partitioner=pv.fixed_size_partitioner(3))
    assert calls == [("g/t", True)] and len(v) == 3


def test_shards_round_robin_over_ps_tasks():
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2)):
            v = get_variable("emb", [10, 4], partitioner=pv.fixed_size_partitioner(4))
            w = get_variable("w", [3])
            rows = tf.nn.embedding_lookup(v, [1, 2, 3])
        assert [s.device for s in v] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0",
                                         "/job:ps/task:1"]
        assert w.device == "/job:ps/task:0"
        gathers = [op for op in tf.get_default_graph().get_operations() if op.type == "Gather"
                   and op.inputs[0].op.name.startswith("emb/part_")]
        assert sorted(op.device for op in gathers) == sorted(s.device for s in v)
        assert rows.op.device == "/job:worker"


def test_dense_use_of_a_partitioned_variable_trains_every_shard():
    with tf.Graph().as_default():
        v = get_variable("w", [5, 2], initializer=tf.ones_initializer(),
                         partitioner=pv.fixed_size_partitioner(2))
        x = tf.constant(np.arange(10, dtype=np.float32).reshape(2, 5))
        loss = tf.reduce_sum(tf.matmul(x, v))  # the PartitionedVariable converts to its concat
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, var_list=list(v))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            value = sess.run(v.as_tensor())
    grad = np.arange(10, dtype=np.float32).reshape(2, 5).sum(0)[:, None] * np.ones((1, 2))
    np.testing.assert_allclose(value, 1.0 - 0.5 * grad)


def test_partitioned_variable_constructor_checks():
    with tf.Graph().as_default():
        w = tf.Variable([1.0], name="w")
        with pytest.raises(ValueError, match="variable_list is not a list or tuple, or is empty"):
            pv.PartitionedVariable("p", [1], tf.float32, [], [1])
        with pytest.raises(ValueError, match="must have a save_slice_info"):
            pv.PartitionedVariable("p", [1], tf.float32, [w], [1])
        with pytest.raises(ValueError, match="do not match the 1 variables"):
            pv.PartitionedVariable("p", [1], tf.float32, [w], [2])
