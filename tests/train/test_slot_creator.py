"""slot_creator: slot names, placement, and the slice info of slots of partitioned variables
(TF1's ``_create_slot_var``: a shard's slot is the same slice of ``<full name>/<slot name>``)."""

import numpy as np

import zps as tf
from zps.framework import checkpoint_format
from zps.ops.partitioned_variables import fixed_size_partitioner
from zps.ops.variable_scope import get_variable
from zps.train import saver as saver_module
from zps.train import slot_creator


def _info(v):
    info = v._get_save_slice_info()
    return None if info is None else (info.full_name, info.full_shape, info.var_offset,
                                      info.var_shape)


def test_slots_of_shards_carry_the_shards_slice_info():
    with tf.Graph().as_default():
        emb = get_variable("emb", [11, 3], partitioner=fixed_size_partitioner(3))
        shards = list(emb)
        slots = [slot_creator.create_zeros_slot(s, "Momentum") for s in shards]
        assert [s.op.name for s in slots] == ["emb/part_%d/Momentum" % i for i in range(3)]
        assert [_info(s) for s in slots] == [
            ("emb/Momentum", [11, 3], [0, 0], [4, 3]),
            ("emb/Momentum", [11, 3], [4, 0], [4, 3]),
            ("emb/Momentum", [11, 3], [8, 0], [3, 3])]
        # Every kind of slot: from a value, and a uniquified second slot of the same name.
        by_value = slot_creator.create_slot(shards[1], tf.ones([4, 3]), "Adam")
        again = slot_creator.create_zeros_slot(shards[1], "Momentum")
        assert again.op.name == "emb/part_1/Momentum_1"
        assert _info(by_value) == ("emb/Adam", [11, 3], [4, 0], [4, 3])
        assert _info(again) == ("emb/Momentum_1", [11, 3], [4, 0], [4, 3])
        # Slots live with their shard.
        assert slots[2].op.colocation_groups() == [b"loc:@emb/part_2"]


def test_lower_rank_slots_take_the_leading_dims_and_scalars_are_not_sliced():
    with tf.Graph().as_default():
        shard = list(get_variable("emb", [11, 3], partitioner=fixed_size_partitioner(2)))[1]
        rows = slot_creator.create_slot_with_initializer(
            shard, tf.zeros_initializer(), tf.TensorShape([5]), tf.float32, "rows")
        scalar = slot_creator.create_slot(shard, tf.constant(1.0), "count")
        assert _info(rows) == ("emb/rows", [11], [6], [5])
        assert _info(scalar) is None


def test_slots_of_plain_variables_have_no_slice_info():
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((2, 2), np.float32), name="w")
        assert _info(slot_creator.create_zeros_slot(w, "Momentum")) is None


def test_slot_slice_info_agrees_with_what_the_saver_infers():
    with tf.Graph().as_default():
        emb = get_variable("emb", [11, 3], partitioner=fixed_size_partitioner(2))
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, [1, 4]))
        opt = tf.train.AdamOptimizer(0.1)
        opt.minimize(loss)
        slots = [opt.get_slot(s, n) for s in emb for n in ("m", "v")]
        assert sorted(_info(s)[0] for s in slots) == ["emb/Adam", "emb/Adam", "emb/Adam_1",
                                                      "emb/Adam_1"]
        keys = {it.key for it in saver_module._saveable_items(slots)}
        # Without the slot's own info, the Saver infers the same slices from names and shapes.
        for s in slots:
            s._set_save_slice_info(None)
        assert {it.key for it in saver_module._saveable_items(slots)} == keys
        assert len(keys) == 4 and all(k.startswith(("emb/Adam", "emb/Adam_1")) for k in keys)


def test_slots_saved_by_name_reshard_into_more_partitions(tmp_path):
    ids = np.array([0, 5, 10, 5])
    full = np.arange(33, dtype=np.float32).reshape(11, 3)

    def build(parts):
        v = get_variable("emb", initializer=full, partitioner=fixed_size_partitioner(parts))
        loss = tf.reduce_sum(tf.nn.embedding_lookup(v, ids, partition_strategy="div"))
        opt = tf.train.MomentumOptimizer(0.5, 0.9)
        return v, opt, opt.minimize(loss)

    with tf.Graph().as_default():
        v, opt, train = build(2)
        # The slot variables alone, keyed by the names their own slice info gives.
        saver = tf.train.Saver(opt.variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            prefix = saver.save(sess, str(tmp_path / "slots"))
    momentum = checkpoint_format.CheckpointReader(prefix).get_tensor("emb/Momentum")
    expected = np.zeros_like(full)
    expected[[0, 10]] = 1.0
    expected[5] = 2.0
    np.testing.assert_array_equal(momentum, expected)
    with tf.Graph().as_default():
        v, opt, train = build(3)
        slots = opt.variables()
        with tf.Session() as sess:
            tf.train.Saver(slots).restore(sess, prefix)
            got = np.concatenate(sess.run([opt.get_slot(s, "momentum") for s in v]))
    np.testing.assert_array_equal(got, expected)
