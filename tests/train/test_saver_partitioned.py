"""Saver with partitioned variables (slice info, re-sharding) and the custom-saveable hook."""

import json

import numpy as np
import pytest

import zps as tf
from zps.framework import checkpoint_format
from zps.ops import state_ops
from zps.ops.partitioned_variables import fixed_size_partitioner
from zps.ops.variable_scope import get_variable
from zps.train.saver import Saver

FULL = np.arange(11 * 3, dtype=np.float32).reshape(11, 3)


def _emb(parts, initializer=None):
    initializer = initializer if initializer is not None else tf.zeros_initializer()
    if parts == 1:
        return get_variable("emb", [11, 3], initializer=initializer)
    return get_variable("emb", [11, 3], initializer=initializer,
                        partitioner=fixed_size_partitioner(parts))


def _value(v):
    return tf.convert_to_tensor(v)


def _save(tmp_path, parts, **saver_kwargs):
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=FULL, partitioner=fixed_size_partitioner(parts)) \
            if parts > 1 else get_variable("emb", initializer=FULL)
        bias = tf.Variable([1.0, 2.0], name="bias")
        saver = Saver(**saver_kwargs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return saver.save(sess, str(tmp_path / "model.ckpt"), global_step=3), v, bias


def test_index_records_full_shape_and_each_slice(tmp_path):
    prefix, _, _ = _save(tmp_path, 3)
    with open(prefix + ".index") as f:
        index = json.load(f)
    entry = index["tensors"]["emb"]
    assert entry["dtype"] == "float32" and entry["shape"] == [11, 3]
    assert sorted((s["start"], s["shape"]) for s in entry["slices"]) == [
        ([0, 0], [4, 3]), ([4, 0], [4, 3]), ([8, 0], [3, 3])]
    assert {s["key"] for s in entry["slices"]} == {
        "emb/.slice/11 3 0,4:0,3", "emb/.slice/11 3 4,4:0,3", "emb/.slice/11 3 8,3:0,3"}
    assert index["tensors"]["bias"]["key"] == "bias"
    reader = checkpoint_format.CheckpointReader(prefix)
    np.testing.assert_array_equal(reader.get_tensor("emb"), FULL)
    np.testing.assert_array_equal(reader.get_slice("emb", [3, 1], [6, 2]), FULL[3:9, 1:3])
    assert reader.get_variable_to_shape_map()["emb"] == [11, 3]


@pytest.mark.parametrize("saved_parts,restored_parts", [(2, 2), (2, 3), (3, 2), (2, 1), (1, 4)])
def test_restore_into_a_different_number_of_partitions(tmp_path, saved_parts, restored_parts):
    prefix, _, _ = _save(tmp_path, saved_parts, sharded=True)
    with tf.Graph().as_default():
        v = _emb(restored_parts)
        bias = tf.Variable([0.0, 0.0], name="bias")
        saver = Saver()
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            got, b = sess.run([_value(v), bias])
            if restored_parts > 1:
                shards = sess.run(list(v))
    np.testing.assert_array_equal(got, FULL)
    np.testing.assert_array_equal(b, [1.0, 2.0])
    if restored_parts > 1:
        sizes = [len(s) for s in shards]
        assert sizes == [11 // restored_parts + (i < 11 % restored_parts)
                         for i in range(restored_parts)]


def test_var_list_forms_and_renaming(tmp_path):
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=FULL, partitioner=fixed_size_partitioner(2))
        by_list = Saver([v])
        by_dict = Saver({"table": v})
        by_shards = Saver({"table2": list(v)})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p1 = by_list.save(sess, str(tmp_path / "a"))
            p2 = by_dict.save(sess, str(tmp_path / "b"))
            p3 = by_shards.save(sess, str(tmp_path / "c"))
            sess.run(v.assign(np.zeros_like(FULL)))
            by_dict.restore(sess, p2)
            restored = sess.run(_value(v))
    np.testing.assert_array_equal(restored, FULL)
    for prefix, name in ((p1, "emb"), (p2, "table"), (p3, "table2")):
        reader = checkpoint_format.CheckpointReader(prefix)
        assert reader.has_tensor(name)
        np.testing.assert_array_equal(reader.get_tensor(name), FULL)


def test_missing_region_and_bad_slices_are_reported(tmp_path):
    with tf.Graph().as_default():
        v = get_variable("emb", initializer=FULL, partitioner=fixed_size_partitioner(2))
        first_only = Saver([list(v)[0]])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = first_only.save(sess, str(tmp_path / "part"))
    with tf.Graph().as_default():
        _emb(3)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match="holds only part of the region"):
                Saver().restore(sess, prefix)
    with pytest.raises(tf.errors.NotFoundError, match="holds only part"):
        checkpoint_format.CheckpointReader(prefix).get_tensor("emb")
    key_a = checkpoint_format.slice_key("w", [4], [0], [3])
    key_b = checkpoint_format.slice_key("w", [4], [2], [2])
    bad = str(tmp_path / "bad")
    entries = checkpoint_format.write_shard(bad, 0, 1, {key_a: np.zeros(3), key_b: np.ones(2)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="overlap"):
        checkpoint_format.write_index(bad, [entries])
    assert checkpoint_format.parse_slice_key("plain/name") is None
    assert checkpoint_format.parse_slice_key("x/.slice/garbage") is None
    assert checkpoint_format.parse_slice_key(key_b) == ("w", [4], [2], [2])


def test_restore_dtype_mismatch_names_the_tensor(tmp_path):
    prefix, _, _ = _save(tmp_path, 2)
    with tf.Graph().as_default():
        get_variable("emb", [11, 3], dtype=tf.float64, partitioner=fixed_size_partitioner(2))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="emb.*float64.*float32"):
                Saver().restore(sess, prefix)


def test_meta_graph_keeps_slice_info(tmp_path):
    prefix, _, _ = _save(tmp_path, 2)
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(prefix + ".meta")
        shards = [v for v in tf.global_variables() if v.op.name.startswith("emb/")]
        assert [v._save_slice_info.spec for v in shards] == ["11 3 0,6:0,3", "11 3 6,5:0,3"]
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            np.testing.assert_array_equal(np.concatenate(sess.run(shards)), FULL)


class _FakeTable:
    """A tiny custom saveable: keys and values of dynamic length, kept in two variables."""

    def __init__(self, name):
        self.keys = tf.Variable(np.array([3, 7], np.int64), name=name + "_keys",
                                validate_shape=False, collections=[])
        self.values = tf.Variable(np.array([[0.5], [1.5]], np.float32), name=name + "_values",
                                  validate_shape=False, collections=[])
        self.name = name

    def _zps_saveable_specs(self):
        return [(self.name + "-keys", self.keys.value()),
                (self.name + "-values", self.values.value())]

    def _zps_restore(self, tensors_by_key):
        assert set(tensors_by_key) == {self.name + "-keys", self.name + "-values"}
        return tf.group(
            state_ops.assign(self.keys._ref(), tensors_by_key[self.name + "-keys"],
                             validate_shape=False),
            state_ops.assign(self.values._ref(), tensors_by_key[self.name + "-values"],
                             validate_shape=False))


@pytest.mark.parametrize("via", ["collection", "var_list"])
def test_custom_saveable_hook(tmp_path, via):
    with tf.Graph().as_default():
        table = _FakeTable("table")
        w = tf.Variable([1.0], name="w")
        if via == "collection":
            tf.get_default_graph().add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS
                                                     if hasattr(tf.GraphKeys, "SAVEABLE_OBJECTS")
                                                     else "saveable_objects", table)
            saver = Saver()
        else:
            saver = Saver([table, w])
        with tf.Session() as sess:
            sess.run([table.keys.initializer, table.values.initializer, w.initializer])
            # grow the table: the saved tensors' shapes are only known at run time
            sess.run([state_ops.assign(table.keys._ref(), np.array([1, 2, 3], np.int64),
                                       validate_shape=False),
                      state_ops.assign(table.values._ref(), np.array([[1.0], [2.0], [3.0]],
                                                                     np.float32),
                                       validate_shape=False)])
            prefix = saver.save(sess, str(tmp_path / "t"))
            sess.run([table.keys.initializer, table.values.initializer])
            saver.restore(sess, prefix)
            keys, values = sess.run([table.keys.value(), table.values.value()])
    np.testing.assert_array_equal(keys, [1, 2, 3])
    np.testing.assert_array_equal(values, [[1.0], [2.0], [3.0]])
    reader = checkpoint_format.CheckpointReader(prefix)
    assert sorted(reader.get_variable_to_shape_map()) == ["table-keys", "table-values", "w"]


def test_saveable_errors():
    with tf.Graph().as_default():
        v = get_variable("emb", [4, 2], partitioner=fixed_size_partitioner(2))
        with pytest.raises(TypeError, match="PartitionedVariables and objects with "
                                            "_zps_saveable_specs"):
            Saver([object()])
        with pytest.raises(ValueError, match="has no slice information"):
            Saver({"x": [tf.Variable([1.0], name="plain")]})
        with pytest.raises(ValueError, match="At least two variables have the same name: "
                                             "emb/.slice/4 2 0,2:0,2"):
            Saver([v, list(v)[0]])
        with pytest.raises(ValueError, match="The same variable emb/part_0 is saved under two "
                                             "names"):
            Saver({"emb": v, "other": list(v)})


def test_sharded_save_on_ps_tasks_restores_into_more_shards(tmp_path):
    from zps.testing.cluster import InProcessCluster
    from zps.train.device_setter import replica_device_setter

    with InProcessCluster({"ps": 2, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device(replica_device_setter(ps_tasks=2)):
                v = get_variable("emb", initializer=FULL, partitioner=fixed_size_partitioner(2))
            assert [s.device for s in v] == ["/job:ps/task:0", "/job:ps/task:1"]
            saver = Saver(sharded=True)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                prefix = saver.save(sess, str(tmp_path / "model"))
        with open(prefix + ".index") as f:
            index = json.load(f)
        assert len(index["shards"]) == 2  # one file per ps task, each with its own slice
        assert sorted(s["shard"] for s in index["tensors"]["emb"]["slices"]) == [0, 1]
        with tf.Graph().as_default():
            # (the ps tasks still hold emb/part_*: variables live on a task across graphs)
            with tf.device(replica_device_setter(ps_tasks=2)):
                v = get_variable("emb5", [11, 3], partitioner=fixed_size_partitioner(5))
            saver = Saver({"emb": v}, sharded=True)
            with tf.Session(cluster.target("worker", 0)) as sess:
                saver.restore(sess, prefix)
                got = sess.run(_value(v))
    np.testing.assert_array_equal(got, FULL)


def test_optimizer_slots_reshard_with_their_variable(tmp_path):
    ids = np.array([0, 5, 10, 5])

    def build(parts, name="emb"):
        v = get_variable(name, initializer=FULL, partitioner=fixed_size_partitioner(parts))
        loss = tf.reduce_sum(tf.nn.embedding_lookup(v, ids, partition_strategy="div"))
        return v, tf.train.AdagradOptimizer(0.5).minimize(loss)

    with tf.Graph().as_default():
        v, train = build(2)
        saver = Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            prefix = saver.save(sess, str(tmp_path / "opt"))
            sess.run(train)
            want = sess.run(_value(v))
    reader = checkpoint_format.CheckpointReader(prefix)
    accum = reader.get_tensor("emb/Adagrad")  # the slots of the shards, saved as one sliced slot
    expected = np.full_like(FULL, 0.1)
    expected[[0, 10]] += 1.0
    expected[5] += 4.0
    np.testing.assert_allclose(accum, expected)
    with tf.Graph().as_default():
        v, train = build(3)
        with tf.Session() as sess:
            Saver().restore(sess, prefix)
            sess.run(train)  # the second step continues from the restored accumulators
            np.testing.assert_allclose(sess.run(_value(v)), want, rtol=1e-6)
