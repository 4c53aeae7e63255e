"""get_variable and variable_scope: naming, reuse, defaults, regularizers, custom getters, errors."""

import math
import threading

import numpy as np
import pytest

import zps as tf


def _init_and_run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.local_variables_initializer())
        return sess.run(fetches)


# -- get_variable --------------------------------------------------------------------------------
def test_get_variable_defaults():
    with tf.Graph().as_default():
        w = tf.get_variable("w", [30, 20])
        i = tf.get_variable("i", [3], dtype=tf.int32)
        b = tf.get_variable("b", [2], dtype=tf.bool)
        assert (w.name, w.dtype, w.get_shape().as_list()) == ("w:0", tf.float32, [30, 20])
        assert tf.trainable_variables() == [w, i, b] and tf.global_variables() == [w, i, b]
        wv, iv, bv = _init_and_run([w, i, b])
    limit = math.sqrt(6.0 / 50)  # glorot_uniform
    assert np.abs(wv).max() <= limit and np.abs(wv).max() > 0.9 * limit
    assert iv.dtype == np.int32 and not iv.any()
    assert bv.dtype == np.bool_ and not bv.any()


def test_get_variable_trainable_collections_and_local():
    with tf.Graph().as_default():
        a = tf.get_variable("a", [1], trainable=False)
        c = tf.get_variable("c", [1], collections=["mine", tf.GraphKeys.GLOBAL_VARIABLES])
        loc = tf.get_local_variable("loc", [2], initializer=tf.ones_initializer())
        assert tf.trainable_variables() == [c]
        assert tf.global_variables() == [a, c]
        assert tf.get_collection("mine") == [c]
        assert tf.local_variables() == [loc] and not loc.trainable
        assert _init_and_run(loc).tolist() == [1.0, 1.0]


def test_initializer_forms():
    with tf.Graph().as_default():
        from_list = tf.get_variable("l", initializer=[1.0, 2.0])
        from_array = tf.get_variable("n", initializer=np.arange(4).reshape(2, 2))
        from_tensor = tf.get_variable("t", initializer=tf.constant([[3]], dtype=tf.int64))
        from_class = tf.get_variable("k", [2], initializer=tf.zeros_initializer)
        from_init = tf.get_variable("c", [2, 2], dtype=tf.float64,
                                    initializer=tf.constant_initializer(7))
        from_fn = tf.get_variable("f", [3], initializer=lambda shape, dtype, partition_info:
                                  tf.fill(shape, tf.constant(2.0, dtype=dtype)))
        from_thunk = tf.get_variable("z", initializer=lambda: tf.constant([5, 6]))
        assert from_list.dtype == tf.float32 and from_array.dtype == tf.int64
        assert from_tensor.get_shape().as_list() == [1, 1] and from_init.dtype == tf.float64
        values = _init_and_run([from_list, from_array, from_tensor, from_class, from_init, from_fn,
                                from_thunk])
    assert values[0].tolist() == [1.0, 2.0]
    assert values[1].tolist() == [[0, 1], [2, 3]]
    assert values[2].tolist() == [[3]]
    assert values[3].tolist() == [0.0, 0.0]
    assert values[4].tolist() == [[7.0, 7.0], [7.0, 7.0]] and values[4].dtype == np.float64
    assert values[5].tolist() == [2.0, 2.0, 2.0]
    assert values[6].tolist() == [5, 6]


def test_initializer_is_colocated_with_its_variable():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:1"):
            v = tf.get_variable("v", [2, 2])
        assert v.device == "/job:ps/task:1"
        init_ops = [op for op in v.graph.get_operations() if op.name.startswith("v/Initializer/")]
        assert init_ops and all(op.device == v.device for op in init_ops)


def test_get_variable_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape"):
            tf.get_variable("a", [2], initializer=[1.0, 2.0])
        with pytest.raises(ValueError, match="Initializer type 'float32' and explicit dtype "
                                             "'float64' don't match"):
            tf.get_variable("b", initializer=[1.0], dtype=tf.float64)
        with pytest.raises(ValueError, match="The initializer passed is not valid.*variable c"):
            tf.get_variable("c")
        with pytest.raises(ValueError, match="not fully defined"):
            tf.get_variable("d", initializer=tf.placeholder(tf.float32, [None]))
        assert tf.global_variables() == []


# -- reuse ---------------------------------------------------------------------------------------
def test_reuse_errors_name_the_variable():
    with tf.Graph().as_default():
        with tf.variable_scope("foo"):
            w = tf.get_variable("w", [2, 3])
            with pytest.raises(ValueError, match="Variable foo/w already exists, disallowed. Did you "
                                                 r"mean to set reuse=True or reuse=tf.AUTO_REUSE"):
                tf.get_variable("w", [2, 3])
        with tf.variable_scope("foo", reuse=True):
            assert tf.get_variable("w", [2, 3]) is w
            assert tf.get_variable("w") is w
            with pytest.raises(ValueError, match=r"Variable foo/x does not exist, or was not "
                                                 r"created with tf.get_variable\(\)"):
                tf.get_variable("x", [1])
            with pytest.raises(ValueError, match=r"Trying to share variable foo/w, but specified "
                                                 r"shape \(3, 3\) and found shape \(2, 3\)"):
                tf.get_variable("w", [3, 3])
            with pytest.raises(ValueError, match="specified dtype int32 and found dtype float32"):
                tf.get_variable("w", [2, 3], dtype=tf.int32)


def test_auto_reuse():
    with tf.Graph().as_default():
        def layer():
            with tf.variable_scope("dense", reuse=tf.AUTO_REUSE):
                return tf.get_variable("k", [2])
        assert layer() is layer()
        assert len(tf.global_variables()) == 1


def test_reuse_is_inherited_and_reuse_variables():
    with tf.Graph().as_default():
        with tf.variable_scope("a"):
            with tf.variable_scope("b"):
                v = tf.get_variable("v", [1])
        with tf.variable_scope("a", reuse=True):
            with tf.variable_scope("b", reuse=False):  # False means "inherit" (TF1)
                assert tf.get_variable_scope().reuse is True
                assert tf.get_variable("v", [1]) is v
        with tf.variable_scope("c") as scope:
            u = tf.get_variable("u", [1])
            scope.reuse_variables()
            assert tf.get_variable("u", [1]) is u
        assert tf.get_variable_scope().name == "" and tf.get_variable_scope().reuse is False


def test_reentering_a_captured_scope():
    with tf.Graph().as_default():
        with tf.variable_scope("foo") as vs:
            w = tf.get_variable("w", [1])
            op1 = tf.identity(w)
        with tf.variable_scope("other"):
            with tf.variable_scope(vs, reuse=True) as vs2:
                assert tf.get_variable("w", [1]) is w
                op2 = tf.identity(w)
                assert vs2.name == "foo" and vs2.original_name_scope == "foo/"
        with tf.variable_scope(vs, auxiliary_name_scope=False) as vs3:
            with tf.name_scope(vs3.original_name_scope):
                c = tf.constant(1, name="c")
        assert vs.reuse is False  # entering with reuse=True did not change the captured scope
    assert (op1.name, op2.name, c.name) == ("foo/Identity:0", "other/foo/Identity:0", "foo/c:0")


# -- naming --------------------------------------------------------------------------------------
def test_name_scopes_opened_by_variable_scopes():
    with tf.Graph().as_default():
        with tf.variable_scope("scope"):
            v = tf.get_variable("v", [1])
            x = tf.add(v, 1.0)
        with tf.variable_scope("scope", reuse=True):
            v2 = tf.get_variable("v", [1])
            y = tf.add(v2, 1.0)
        with tf.name_scope("ns"):
            with tf.variable_scope("vs"):
                u = tf.get_variable("u", [1])
                z = tf.add(u, 1.0)
        with tf.variable_scope("outer"):
            with tf.variable_scope("inner", auxiliary_name_scope=False):
                k = tf.get_variable("k", [1])
                q = tf.add(k, 1.0)
    assert (v.name, x.name) == ("scope/v:0", "scope/Add:0")
    assert (v2.name, y.name) == ("scope/v:0", "scope_1/Add:0")
    assert (u.name, z.name) == ("vs/u:0", "ns/vs/Add:0")
    assert (k.name, q.name) == ("outer/inner/k:0", "outer/Add:0")


def test_default_names_are_made_unique_per_parent():
    with tf.Graph().as_default():
        with tf.variable_scope("foo") as vs:
            with tf.variable_scope(None, default_name="bar"):
                a = tf.get_variable("a", [1])
            with tf.variable_scope(None, default_name="bar") as bar1:
                b = tf.get_variable("b", [1])
        with tf.variable_scope(vs):
            with tf.variable_scope(None, default_name="bar"):
                c = tf.get_variable("c", [1])
    assert (a.name, b.name, c.name) == ("foo/bar/a:0", "foo/bar_1/b:0", "foo/bar/c:0")
    assert bar1.name == "foo/bar_1" and bar1.original_name_scope == "foo/bar_1/"


def test_variable_scope_argument_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="If default_name is None then name_or_scope is required"):
            tf.variable_scope(None)
        with pytest.raises(TypeError, match="name_or_scope must be a string or VariableScope"):
            tf.variable_scope(3)
        with pytest.raises(ValueError, match="The reuse parameter must be True or False or None"):
            tf.variable_scope("a", reuse="yes")
        with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
            with tf.variable_scope(None, default_name="d", reuse=True):
                pass
        with pytest.raises(TypeError, match="auxiliary_name_scope must be `True` or `False`"):
            tf.variable_scope("a", auxiliary_name_scope=1)
        # A failed entry leaves no scope behind.
        assert tf.get_variable_scope().name == "" and tf.get_default_graph().get_name_scope() == ""


# -- scope defaults ------------------------------------------------------------------------------
def test_scope_initializer_dtype_and_overrides():
    with tf.Graph().as_default():
        with tf.variable_scope("s", initializer=tf.constant_initializer(3.0), dtype=tf.float64):
            a = tf.get_variable("a", [2])
            with tf.variable_scope("inner", initializer=tf.ones_initializer()):
                b = tf.get_variable("b", [2])
                c = tf.get_variable("c", [2], initializer=tf.zeros_initializer())
        assert a.dtype == tf.float64 and b.dtype == tf.float64
        assert [x.tolist() for x in _init_and_run([a, b, c])] == [[3, 3], [1, 1], [0, 0]]


def test_regularizers_feed_regularization_losses():
    def l2(v):
        return tf.reduce_sum(v * v)

    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=[1.0, 2.0], regularizer=l2)
        with tf.variable_scope("s", regularizer=lambda v: 2.0 * tf.reduce_sum(v)):
            u = tf.get_variable("u", initializer=[3.0])
            tf.get_variable("x", [1], regularizer=tf.no_regularizer)
        losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        assert len(losses) == 2
        assert losses[0].name.startswith("w/Regularizer/") and losses[1].name.startswith("s/u/Regularizer/")
        assert all(loss.op._colocation for loss in losses)  # colocated with their variables
        assert (w.name, u.name) == ("w:0", "s/u:0")
        assert _init_and_run(losses) == [5.0, 6.0]


def test_custom_getters_compose():
    calls = []

    def outer(getter, name, *args, **kwargs):
        calls.append(("outer", name))
        return getter(name, *args, **kwargs)

    def inner(getter, name, *args, **kwargs):
        calls.append(("inner", name))
        kwargs["trainable"] = False
        return getter(name + "_x", *args, **kwargs)

    with tf.Graph().as_default():
        with tf.variable_scope("a", custom_getter=outer):
            with tf.variable_scope("b", custom_getter=inner):
                v = tf.get_variable("v", [1])
        assert v.name == "a/b/v_x:0" and not v.trainable
    assert calls == [("inner", "a/b/v"), ("outer", "a/b/v_x")]


def test_custom_getter_without_constraint_argument():
    def getter(getter, name, shape=None, dtype=None, initializer=None, regularizer=None, reuse=None,
               trainable=None, collections=None, caching_device=None, partitioner=None,
               validate_shape=True, use_resource=None, synchronization=None, aggregation=None):
        return getter(name, shape, dtype, initializer, regularizer, reuse, trainable, collections,
                      caching_device, partitioner, validate_shape, use_resource)

    with tf.Graph().as_default():
        assert tf.get_variable("v", [2], custom_getter=getter).name == "v:0"


def test_caching_device_places_the_read():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"), tf.variable_scope("s", caching_device="/job:worker/task:0"):
            v = tf.get_variable("v", [1])
        assert v.device == "/job:ps/task:0"
        assert v.value().device == "/job:worker/task:0"


def test_scope_collections():
    with tf.Graph().as_default():
        with tf.variable_scope("net") as scope:
            a = tf.get_variable("a", [1])
            tf.get_local_variable("loc", [1])
        tf.get_variable("other", [1])
        assert scope.trainable_variables() == [a] and scope.global_variables() == [a]
        assert [v.name for v in scope.local_variables()] == ["net/loc:0"]


# -- per-graph store, per-thread scopes -----------------------------------------------------------
def test_each_graph_has_its_own_store():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        v1 = tf.get_variable("v", [1])
    with g2.as_default():
        v2 = tf.get_variable("v", [1])
        with tf.variable_scope("x", values=[v1]):  # values pick the graph of the block
            assert tf.get_default_graph() is g1
            w = tf.get_variable("w", [1])
    assert v1.graph is g1 and v2.graph is g2 and w.graph is g1 and w.name == "x/w:0"


def test_variable_scopes_are_thread_local_and_the_store_is_shared():
    seen = {}
    with tf.Graph().as_default() as g:
        with tf.variable_scope("main"):
            v = tf.get_variable("v", [1])

            def worker():
                with g.as_default():
                    seen["scope"] = tf.get_variable_scope().name
                    with tf.variable_scope("main", reuse=True):
                        seen["v"] = tf.get_variable("v", [1])

            t = threading.Thread(target=worker)
            t.start()
            t.join(10)
    assert seen == {"scope": "", "v": v}


def test_variables_ignore_surrounding_control_dependencies():
    with tf.Graph().as_default() as g:
        step = tf.no_op(name="step")
        with tf.control_dependencies([step]):
            v = tf.get_variable("v", [2], regularizer=tf.reduce_sum)
            after = tf.identity(v)
        assert after.op.control_inputs == [step]
        created = [op for op in g.get_operations() if op.name.startswith("v/")]
        assert created and all(step not in op.control_inputs for op in created)


def test_multi_tower_pattern_shares_variables():
    with tf.Graph().as_default():
        outputs = []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(2):
                with tf.name_scope("tower_%d" % i):
                    w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
                    outputs.append(tf.identity(w * float(i + 1)))
                    tf.get_variable_scope().reuse_variables()
        assert [v.name for v in tf.global_variables()] == ["w:0"]
        assert [o.name for o in outputs] == ["tower_0/Identity:0", "tower_1/Identity:0"]
        assert tf.get_variable_scope().reuse is False
        assert [x.tolist() for x in _init_and_run(outputs)] == [[1.0], [2.0]]
