"""Graph, Operation and Tensor: naming, scopes, collections, placement, lookup, finalization."""

import threading

import numpy as np
import pytest

import zps as tf
from zps.framework import graph as graph_module


def _c(name=None):
    return tf.constant(1.0, name=name or "Const")


# -- names and name scopes -----------------------------------------------------------------------
def test_unique_names_are_suffixed_case_insensitively():
    with tf.Graph().as_default() as g:
        names = [_c("a").op.name, _c("a").op.name, _c("A").op.name, _c("a_1").op.name]
        assert names == ["a", "a_1", "A_2", "a_1_1"]
        assert g.unique_name("a", mark_as_used=False) == "a_3"
        assert g.unique_name("a", mark_as_used=False) == "a_3"
        assert [_c().op.name for _ in range(3)] == ["Const", "Const_1", "Const_2"]


def test_nested_name_scopes_and_reuse_of_a_scope_name():
    with tf.Graph().as_default() as g:
        with tf.name_scope("outer") as outer:
            assert outer == "outer/"
            with tf.name_scope("inner") as inner:
                assert inner == "outer/inner/" and g.get_name_scope() == "outer/inner"
                assert _c("x").name == "outer/inner/x:0"
            with tf.name_scope("inner") as inner2:
                assert inner2 == "outer/inner_1/"
        with tf.name_scope("outer") as again:
            assert again == "outer_1/"
        # An op named like an existing scope is uniquified against it, and vice versa.
        assert _c("outer").op.name == "outer_2"
        assert g.get_name_scope() == ""


def test_reentering_a_scope_with_trailing_slash_is_absolute():
    with tf.Graph().as_default():
        with tf.name_scope("layer") as scope:
            pass
        with tf.name_scope("somewhere/else"):
            with tf.name_scope(scope) as same:
                assert same == "layer/"
                assert _c("w").op.name == "layer/w"


def test_none_or_empty_scope_resets_to_the_root():
    with tf.Graph().as_default() as g:
        with tf.name_scope("a"), tf.name_scope("b"):
            with g.name_scope(None) as root:
                assert root == "" and _c("top").op.name == "top"
            with g.name_scope("") as root:
                assert root == ""
            assert _c("x").op.name == "a/b/x"


def test_op_named_with_trailing_slash_takes_the_scope_name_exactly():
    with tf.Graph().as_default() as g:
        with tf.name_scope("block") as scope:
            op = g.create_op("NoOp", [], name=scope)
        assert op.name == "block"
        with pytest.raises(ValueError, match="Duplicate node name in graph: 'block'"):
            g.create_op("NoOp", [], name="block/")


@pytest.mark.parametrize("bad", ["a b", "-lead", "_lead", "x:0", "/abs", "é", "^x"])
def test_invalid_root_scope_names_are_rejected(bad):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="not a valid scope name"):
            with tf.name_scope(bad):
                pass


@pytest.mark.parametrize("bad", ["a b", "-lead", "x:0", "/abs", "é", "^x", "tab\t"])
def test_invalid_op_names_are_rejected(bad):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="not a valid node name"):
            _c(bad)


def test_internal_op_names():
    # Machinery (the partitioner) names its ops '_send/^x/...': a leading '_', a '^' inside.
    with tf.Graph().as_default():
        assert _c("_token/a").op.name == "_token/a"
        assert _c("_send/^a/b").op.name == "_send/^a/b"


def test_nested_scopes_may_start_with_underscore_or_dash():
    with tf.Graph().as_default():
        with tf.name_scope("ok"):
            with tf.name_scope("_private") as s1, tf.name_scope("-dash") as s2:
                assert (s1, s2) == ("ok/_private/", "ok/_private/-dash/")


# -- collections ---------------------------------------------------------------------------------
class _Named:
    def __init__(self, name):
        self.name = name


def test_collections_add_get_scope_filter_and_ref():
    with tf.Graph().as_default() as g:
        a, b, c = _Named("layer1/w"), _Named("layer2/w"), _Named("layer10/b")
        tf.add_to_collection("things", a)
        g.add_to_collections(["things", "more"], b)
        g.add_to_collections("things", c)
        g.add_to_collection("things", 42)  # items without a name are skipped by scope filters
        assert g.get_collection("things") == [a, b, c, 42]
        assert g.get_collection("more") == [b]
        assert g.get_collection("things", scope="layer1") == [a, c]  # re.match, as TF1
        assert g.get_collection("things", scope="layer1/") == [a]
        assert g.get_collection("things", scope=r".*/w") == [a, b]
        assert g.get_collection("missing") == []
        copy = g.get_collection("things")
        copy.append("x")
        assert len(g.get_collection("things")) == 4
        ref = g.get_collection_ref("things")
        ref.remove(42)
        assert g.get_collection("things") == [a, b, c]
        assert g.get_collection_ref("new") == [] and "new" not in g.get_all_collection_keys()
        assert sorted(g.get_all_collection_keys()) == ["more", "things"]
        g.clear_collection("more")
        assert g.get_collection("more") == []


def test_variables_collections():
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        w = tf.Variable(2.0, name="w", trainable=False)
        assert g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [v, w]
        assert g.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == [v]


# -- control dependencies ------------------------------------------------------------------------
def test_control_dependencies_nest_and_accumulate():
    with tf.Graph().as_default() as g:
        a, b = _c("a"), _c("b")
        with g.control_dependencies([a]):
            x = _c("x")
            with g.control_dependencies([b.op]):
                y = _c("y")
        z = _c("z")
        assert x.op.control_inputs == [a.op]
        assert y.op.control_inputs == [a.op, b.op]
        assert z.op.control_inputs == []


def test_control_dependencies_none_clears_and_restores():
    with tf.Graph().as_default() as g:
        a = _c("a")
        with g.control_dependencies([a]):
            with g.control_dependencies(None):
                free = _c("free")
                b = _c("b")
                with g.control_dependencies([b]):
                    only_b = _c("only_b")
            after = _c("after")
        assert free.op.control_inputs == []
        assert only_b.op.control_inputs == [b.op]
        assert after.op.control_inputs == [a.op]


def test_control_dependency_not_duplicated_when_already_an_input():
    with tf.Graph().as_default() as g:
        a, b, one = _c("a"), _c("b"), _c("one")
        with g.control_dependencies([a, b]):
            s = tf.add(a, one)  # a is a data input: only b becomes a control input
            # A constant made inside the block waits for a and b; `t` reads it, so it need not.
            t = tf.add(one, 1.0)
        assert s.op.inputs == (a, one)
        assert s.op.control_inputs == [b.op]
        assert t.op.inputs[1].op.control_inputs == [a.op, b.op]
        assert t.op.control_inputs == []


def test_ops_created_in_the_block_do_not_repeat_its_controls():
    with tf.Graph().as_default() as g:
        a, one, two = _c("a"), _c("one"), _c("two")
        x = tf.placeholder(tf.float32, [])
        with g.control_dependencies([a]):
            first = tf.add(x, one)
            second = tf.multiply(first, two)  # waits on `first`, which already waits on a
        assert first.op.control_inputs == [a.op]
        assert second.op.control_inputs == []


def test_control_dependencies_accept_tensors_ops_and_variables():
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        t = _c("t")
        with g.control_dependencies([t, t.op, v]):
            x = _c("x")
        assert x.op.control_inputs == [t.op, v.op]
        with pytest.raises(TypeError, match="Can not convert a int"):
            with g.control_dependencies([3]):
                pass


def test_control_dependencies_are_run():
    with tf.Graph().as_default() as g:
        v = tf.Variable(0.0, name="v")
        inc = tf.assign_add(v, 1.0)
        with g.control_dependencies([inc]):
            out = tf.constant(7.0) + 0.0
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(out) == 7.0
            assert sess.run(out) == 7.0
            assert sess.run(v) == 2.0


# -- colocation ----------------------------------------------------------------------------------
def test_colocate_with_copies_device_and_group_and_ignores_device_scopes():
    with tf.Graph().as_default() as g:
        with g.device("/job:ps/task:1"):
            anchor = _c("anchor")
        with g.device("/job:worker/task:0"):
            with g.colocate_with(anchor):
                near = _c("near")
                with g.device("/gpu:0"):  # the colocation target has a device: it wins
                    still = _c("still")
            far = _c("far")
        assert near.device == still.device == "/job:ps/task:1"
        assert far.device == "/job:worker/task:0"
        assert near.op.colocation_groups() == [b"loc:@anchor"]
        assert anchor.op.colocation_groups() == [b"loc:@anchor"]


def test_colocate_with_undeviced_target_lets_inner_device_scope_apply():
    with tf.Graph().as_default() as g:
        anchor = _c("anchor")
        with g.device("/job:worker"):
            with g.colocate_with(anchor.op):
                outer_ignored = _c("a")
                with g.device("/cpu:0"):
                    inner = _c("b")
        assert outer_ignored.device == ""
        assert inner.device == "/device:CPU:0"


def test_colocation_nests_and_ignore_existing_resets():
    with tf.Graph().as_default() as g:
        a, b = _c("a"), _c("b")
        with g.colocate_with(a):
            with g.colocate_with(b):
                both = _c("both")
            with g.colocate_with(b, ignore_existing=True):
                only_b = _c("only_b")
            with g.colocate_with(None, ignore_existing=True):
                none = _c("none")
        assert both.op.colocation_groups() == [b"loc:@a", b"loc:@b"]
        assert only_b.op.colocation_groups() == [b"loc:@b"]
        assert none.op.colocation_groups() == [b"loc:@none"]
        with pytest.raises(ValueError, match="ignore_existing"):
            with g.colocate_with(None):
                pass


def test_colocation_with_a_variable_follows_its_group():
    with tf.Graph().as_default() as g:
        with g.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with g.colocate_with(v):
            t = _c("t")
        assert t.device == "/job:ps/task:0"
        assert t.op.colocation_groups() == [b"loc:@v"]
        # The initializer is colocated with its variable.
        assert v.initializer.colocation_groups() == [b"loc:@v"]


# -- device scopes -------------------------------------------------------------------------------
def test_device_strings_merge_innermost_first():
    with tf.Graph().as_default() as g:
        with g.device("/job:ps/task:1/cpu:0"):
            a = _c("a")
            with g.device("/gpu:2"):
                b = _c("b")
                with g.device("/job:worker"):
                    c = _c("c")
        assert a.device == "/job:ps/task:1/device:CPU:0"
        assert b.device == "/job:ps/task:1/device:GPU:2"
        assert c.device == "/job:worker/task:1/device:GPU:2"
        assert a.op.device == a.device


def test_device_spec_objects_and_none_reset():
    with tf.Graph().as_default() as g:
        with g.device(tf.DeviceSpec(job="ps", task=3)):
            a = _c("a")
            with g.device(None):
                free = _c("free")
                with g.device("/cpu:0"):
                    cpu_only = _c("cpu")
        assert a.device == "/job:ps/task:3"
        assert free.device == ""
        assert cpu_only.device == "/device:CPU:0"


def test_device_functions_receive_the_op():
    seen = []

    def chooser(op):
        seen.append((op.name, op.type, op.device))
        return "/job:ps/task:0" if op.type == "VariableV2" else "/job:worker/task:0"

    with tf.Graph().as_default() as g:
        with g.device("/cpu:0"):
            with g.device(chooser):
                v = tf.Variable(1.0, name="v")
                x = _c("x")
        assert v.device == "/job:ps/task:0/device:CPU:0"
        assert x.device == "/job:worker/task:0/device:CPU:0"
        assert ("v", "VariableV2", "") in seen


def test_device_function_returning_device_spec_and_invalid_device_string():
    with tf.Graph().as_default() as g:
        with g.device(lambda op: tf.DeviceSpec(job="ps", task=1, device_type="CPU", device_index=0)):
            a = _c("a")
        assert a.device == "/job:ps/task:1/device:CPU:0"
        with pytest.raises(ValueError, match="'foo:1'"):
            with g.device("/job:ps/foo:1"):
                pass


# -- lookup --------------------------------------------------------------------------------------
def test_get_tensor_and_operation_by_name():
    with tf.Graph().as_default() as g:
        with tf.name_scope("s"):
            x = tf.placeholder(tf.float32, name="x")
        assert g.get_tensor_by_name("s/x:0") is x
        assert g.get_operation_by_name("s/x") is x.op
        assert g.as_graph_element("s/x:0") is x and g.as_graph_element("s/x") is x.op
        assert g.as_graph_element(x) is x
        with pytest.raises(KeyError, match="operation, 'nope', does not exist"):
            g.get_tensor_by_name("nope:0")
        with pytest.raises(KeyError, match="exists but only has 1 outputs"):
            g.get_tensor_by_name("s/x:1")
        with pytest.raises(ValueError, match="refers to an Operation, not a Tensor"):
            g.get_tensor_by_name("s/x")
        with pytest.raises(ValueError, match="looks like an \\(invalid\\) Operation name"):
            g.get_tensor_by_name("zzz")
        with pytest.raises(ValueError, match="not a valid one"):
            g.get_tensor_by_name("s/x:a")
        with pytest.raises(KeyError, match="Operation not in the graph"):
            g.get_operation_by_name("s/y")
        with pytest.raises(ValueError, match="appears to refer to a Tensor"):
            g.get_operation_by_name("s/x:0")
        with pytest.raises(TypeError, match="Tensor names are strings"):
            g.get_tensor_by_name(3)
        with pytest.raises(TypeError, match="Can not convert a float into a Tensor or Operation"):
            g.as_graph_element(1.5)
        with pytest.raises(TypeError, match="into a Tensor"):
            g.as_graph_element(x.op, allow_operation=False)


def test_elements_of_another_graph_are_rejected():
    with tf.Graph().as_default():
        other = _c("other")
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match="not an element of this graph"):
            g.as_graph_element(other)
        with pytest.raises(ValueError, match="must be from the same graph"):
            tf.add(other, tf.placeholder(tf.float32))


# -- finalize, default graph ---------------------------------------------------------------------
def test_finalize_names_the_op_and_blocks_collections():
    with tf.Graph().as_default() as g:
        _c("before")
        g.finalize()
        assert g.finalized
        with pytest.raises(RuntimeError, match="finalized.*'late'"):
            _c("late")
        with pytest.raises(RuntimeError, match="finalized.*collection 'c'"):
            g.add_to_collection("c", 1)
        g._unsafe_unfinalize()
        assert _c("late").op.name == "late"


def test_default_graph_stack_is_per_thread():
    g = tf.Graph()
    seen = {}

    def worker():
        seen["thread"] = tf.get_default_graph()

    with g.as_default():
        assert tf.get_default_graph() is g
        t = threading.Thread(target=worker)
        t.start()
        t.join(10)
    assert seen["thread"] is not g
    assert seen["thread"] is tf.get_default_graph()  # the global default, shared by threads


def test_scopes_are_per_thread():
    with tf.Graph().as_default() as g:
        names = {}

        def worker():
            with g.as_default():
                names["thread"] = _c("t").op.name

        with tf.name_scope("main_scope"), g.device("/job:ps"):
            t = threading.Thread(target=worker)
            t.start()
            t.join(10)
        assert names["thread"] == "t"
        assert g.get_operation_by_name("t").device == ""


def test_reset_default_graph():
    before = tf.get_default_graph()
    tf.reset_default_graph()
    after = tf.get_default_graph()
    assert after is not before and after.get_operations() == []
    with tf.Graph().as_default():
        with pytest.raises(AssertionError, match="reset_default_graph"):
            tf.reset_default_graph()


def test_as_default_exits_out_of_order():
    g1, g2 = tf.Graph(), tf.Graph()
    c1, c2 = g1.as_default(), g2.as_default()
    c1.__enter__()
    c2.__enter__()
    c1.__exit__(None, None, None)  # leaves g2 as default, as an InteractiveSession may
    assert tf.get_default_graph() is g2
    c2.__exit__(None, None, None)
    assert graph_module._default_graph_stack() == []


# -- Tensor --------------------------------------------------------------------------------------
def test_tensor_python_protocols_raise_clear_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        with pytest.raises(TypeError, match="as a Python bool"):
            bool(x)
        with pytest.raises(TypeError, match="as a Python bool"):
            if x:
                pass
        with pytest.raises(TypeError, match="not iterable"):
            list(x)
        with pytest.raises(TypeError, match="len is not well defined"):
            len(x)
        with pytest.raises(TypeError, match="Cannot convert symbolic zps.Tensor x:0"):
            np.asarray(x)


def test_numpy_values_defer_to_tensor_operators():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        y = np.float32(2.0) * x
        z = np.ones(3, np.float32) + x
        assert isinstance(y, tf.Tensor) and isinstance(z, tf.Tensor)
        with tf.Session() as sess:
            out = sess.run([y, z], {x: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(out[0], [2.0, 4.0, 6.0])
        np.testing.assert_array_equal(out[1], [2.0, 3.0, 4.0])


def test_set_shape_merges_and_rejects_incompatible_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        assert x.get_shape().ndims is None
        x.set_shape([None, 3])
        x.set_shape([2, None])
        assert x.get_shape().as_list() == [2, 3]
        with pytest.raises(ValueError, match=r"x:0 has shape \(2, 3\).*\(2, 4\)"):
            x.set_shape([2, 4])
        with pytest.raises(ValueError, match="incompatible"):
            x.set_shape([2])


def test_tensor_and_operation_properties():
    with tf.Graph().as_default() as g:
        with g.device("/cpu:0"):
            x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.add(x, x, name="y")
        assert (y.name, y.op.name, y.op.type, y.value_index, y.dtype) == ("y:0", "y", "Add", 0, tf.float32)
        assert y.graph is g and y.op.graph is g
        assert y.op.inputs == (x, x) and y.op.outputs == [y] and y.op.values() == (y,)
        assert x.consumers() == [y.op, y.op]
        assert x.device == "/device:CPU:0"
        assert x.op.get_attr("dtype") is tf.float32
        with pytest.raises(ValueError, match="has no attr 'nope'"):
            x.op.get_attr("nope")
        nd = y.op.node_def
        assert (nd.name, nd.op, nd["input"]) == ("y", "Add", ["x", "x"])
        assert repr(y) == "<zps.Tensor 'y:0' shape=(2,) dtype=float32>"
        assert {y: 1}[y] == 1
