"""Checkpoint I/O ops: SaveShard, WriteCheckpointIndex, RestoreShard."""

import json
import os

import numpy as np
import pytest

import zps as tf
from zps.framework.registry import get_op_def
from zps.ops import io_ops


def _save(prefix, values, names):
    with tf.Graph().as_default():
        metas = [io_ops.save_shard(prefix, [tf.constant(v)], [n], shard=i, num_shards=len(names))
                 for i, (v, n) in enumerate(zip(values, names))]
        done = io_ops.write_checkpoint_index(prefix, metas)
        with tf.Session() as sess:
            return sess.run(done)


def test_ops_are_stateful_and_not_differentiable():
    for op_type in ("SaveShard", "WriteCheckpointIndex", "RestoreShard"):
        opdef = get_op_def(op_type)
        assert opdef.stateful and opdef.grad_fn is None


def test_save_two_shards_then_restore(tmp_path):
    prefix = str(tmp_path / "ck")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([b"x", b"yz"], dtype=object)
    out = _save(prefix, [a, b], ["a", "b"])
    assert out == prefix.encode()
    index = json.loads((tmp_path / "ck.index").read_text())
    assert [s.split("-of-")[0] for s in index["shards"]] == ["ck.data-00000", "ck.data-00001"]
    assert index["tensors"]["b"] == {"dtype": "string", "shape": [2], "shard": 1, "key": "b"}
    with tf.Graph().as_default():
        ra, rb = io_ops.restore_shard(prefix, ["a", "b"], [tf.float32, tf.string], [[2, None], None])
        assert ra.get_shape().as_list() == [2, None] and rb.get_shape().ndims is None
        with tf.Session() as sess:
            got_a, got_b = sess.run([ra, rb])
    np.testing.assert_array_equal(got_a, a)
    assert got_b.tolist() == [b"x", b"yz"]


def test_prefix_can_be_fed(tmp_path):
    with tf.Graph().as_default():
        prefix = tf.placeholder(tf.string, [])
        done = io_ops.write_checkpoint_index(
            prefix, [io_ops.save_shard(prefix, [tf.constant([7], tf.int64)], ["n"])])
        (value,) = io_ops.restore_shard(prefix, ["n"], [tf.int64])
        with tf.Session() as sess:
            for name in ("one", "two"):
                sess.run(done, {prefix: str(tmp_path / name)})
            assert sess.run(value, {prefix: str(tmp_path / "two")}).tolist() == [7]
    assert sorted(f for f in os.listdir(str(tmp_path)) if f.endswith(".index")) == [
        "one.index", "two.index"]


def test_restore_errors_name_the_tensor(tmp_path):
    prefix = str(tmp_path / "ck")
    _save(prefix, [np.zeros((2, 3), np.float32)], ["w"])
    cases = [(["nope"], [tf.float32], None, tf.errors.NotFoundError, "Key nope not found"),
             (["w"], [tf.float64], None, tf.errors.InvalidArgumentError,
              "tensor_name = w; expected dtype float64 does not equal original dtype float32"),
             (["w"], [tf.float32], [[3, 2]], tf.errors.InvalidArgumentError,
              r"restoring w .*shape \[3, 2\] but the checkpoint holds shape \[2, 3\]")]
    for names, dtypes, shapes, cls, match in cases:
        with tf.Graph().as_default():
            out = io_ops.restore_shard(prefix, names, dtypes, shapes, name="restore")
            with tf.Session() as sess, pytest.raises(cls, match=match) as info:
                sess.run(out)
            assert info.value.op_name == "restore"
    with tf.Graph().as_default():
        out = io_ops.restore_shard(str(tmp_path / "missing"), ["w"], [tf.float32])
        with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match="missing.index"):
            sess.run(out)


def test_unwritable_directory_is_an_op_error(tmp_path):
    with tf.Graph().as_default():
        meta = io_ops.save_shard(str(tmp_path / "no" / "such" / "dir"), [tf.constant(1.0)], ["x"],
                                 name="save")
        with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match="dir") as info:
            sess.run(meta)
        assert info.value.op_name == "save"


def test_build_time_checks():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with pytest.raises(ValueError, match="one distinct name per tensor"):
            io_ops.save_shard("p", [x, x], ["a", "a"])
        with pytest.raises(ValueError, match="shard 2 is not in"):
            io_ops.save_shard("p", [x], ["a"], shard=2, num_shards=2)
        with pytest.raises(ValueError, match="string scalar"):
            io_ops.save_shard(["p", "q"], [x], ["a"])
        with pytest.raises(ValueError, match="one dtype and shape per name"):
            io_ops.restore_shard("p", ["a", "b"], [tf.float32])
        with pytest.raises(ValueError, match="at least one shard"):
            io_ops.write_checkpoint_index("p", [])
