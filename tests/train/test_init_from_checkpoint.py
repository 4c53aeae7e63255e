"""tf.train.init_from_checkpoint: warm-starting variables from zps's and TensorFlow's checkpoints."""

import pathlib

import numpy as np
import pytest

import zps as tf

TF_CKPT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tf_checkpoint"
EXPECTED = np.load(TF_CKPT / "expected.npz")


def _run_initialized(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def test_scopes_names_variables_and_parts_load_from_a_tensorflow_checkpoint():
    with tf.Graph().as_default():
        with tf.variable_scope("layer"):
            kernel = tf.get_variable("kernel", [2, 3])
            bias = tf.get_variable("bias", [2], dtype=tf.float64)
        emb = tf.get_variable("my_emb", [10, 4], partitioner=tf.fixed_size_partitioner(4))
        big = tf.get_variable("my_big", [200, 2], partitioner=tf.fixed_size_partitioner(3))
        step = tf.get_variable("step", [], dtype=tf.int64)
        untouched = tf.get_variable("untouched", [3], initializer=tf.ones_initializer())
        tf.train.init_from_checkpoint(str(TF_CKPT), {
            "dense/": "layer/",          # a scope: every variable under it, by name
            "emb": "my_emb",             # a partitioned variable by name (saved in 3 slices)
            "big": list(big),            # its parts (saved in 2 slices)
            "global_step": step,         # a Variable object
        })
        got = _run_initialized({"k": kernel, "b": bias, "emb": tf.concat(list(emb), 0),
                                "big": tf.concat(list(big), 0), "step": step, "u": untouched})
    np.testing.assert_array_equal(got["k"], EXPECTED["dense__kernel"])
    np.testing.assert_array_equal(got["b"], EXPECTED["dense__bias"])
    np.testing.assert_array_equal(got["emb"], EXPECTED["emb"])
    np.testing.assert_array_equal(got["big"], EXPECTED["big"])
    assert got["step"] == 1234
    np.testing.assert_array_equal(got["u"], [1, 1, 1])   # not in the map: its own initializer


def test_the_root_maps_to_a_scope_of_a_zps_checkpoint(tmp_path):
    with tf.Graph().as_default():
        a = tf.Variable([1.0, 2.0], name="a")
        with tf.variable_scope("block"):
            w = tf.get_variable("w", [2, 2], initializer=tf.constant_initializer(3.0))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
    with tf.Graph().as_default():
        with tf.variable_scope("restored"):
            a2 = tf.get_variable("a", [2])
            with tf.variable_scope("block"):
                w2 = tf.get_variable("w", [2, 2])
        tf.train.init_from_checkpoint(str(tmp_path), {"/": "restored/"})
        got_a, got_w = _run_initialized([a2, w2])
    np.testing.assert_array_equal(got_a, [1.0, 2.0])
    np.testing.assert_array_equal(got_w, np.full((2, 2), 3.0))
    del a, w


def test_what_cannot_load_is_refused_when_mapped():
    with tf.Graph().as_default():
        tf.get_variable("wrong_shape", [3, 2])
        with tf.variable_scope("layer"):
            tf.get_variable("kernel", [2, 3])
            tf.get_variable("extra", [1])
        ints = tf.get_variable("ints_as_float", [3])
        with pytest.raises(ValueError, match="Tensor nope is not found"):
            tf.train.init_from_checkpoint(str(TF_CKPT), {"nope": "wrong_shape"})
        with pytest.raises(ValueError, match=r"Shape of variable wrong_shape.*\[3, 2\].*"
                                             r"dense/kernel \(\[2, 3\]\)"):
            tf.train.init_from_checkpoint(str(TF_CKPT), {"dense/kernel": "wrong_shape"})
        with pytest.raises(ValueError, match=r"Tensor dense/extra \(extra in dense/\) is not found"):
            tf.train.init_from_checkpoint(str(TF_CKPT), {"dense/": "layer/"})
        with pytest.raises(ValueError, match="Should be 'scope/': 'other_scope/'"):
            tf.train.init_from_checkpoint(str(TF_CKPT), {"dense/kernel": "no_such_variable"})
        tf.train.init_from_checkpoint(str(TF_CKPT), {"ints": ints})   # int32 saved, float32 here
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="expected dtype float32 does not equal "
                                                       "original dtype int32"):
            sess.run(ints.initializer)


def test_a_ps_variable_reads_the_checkpoint_where_it_lives():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:1"):
            v = tf.get_variable("dense/kernel", [2, 3])
        tf.train.init_from_checkpoint(str(TF_CKPT), {"dense/kernel": v})
        restore = v.initializer.inputs[1].op
        assert restore.type == "RestoreSlice" and restore.device == "/job:ps/task:1"
