"""tf.make_template and tf.graph_util (names and behaviour checked against TF 2.21 compat.v1)."""

import json

import msgpack
import numpy as np
import pytest

import zps as tf


def _linear(x, scale=1.0):
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer(scale))
    return tf.multiply(x, w, name="y")


# -- make_template -------------------------------------------------------------------------------
def test_template_shares_variables_and_names_ops_like_tf1():
    with tf.Graph().as_default():
        lin = tf.make_template("lin", _linear, scale=3.0)
        a = lin(tf.constant([1.0, 2.0]))
        b = lin(tf.constant([2.0, 2.0]))
        assert (a.name, b.name) == ("lin/y:0", "lin_1/y:0")
        assert [v.name for v in lin.variables] == ["lin/w:0"]
        assert lin.trainable_variables == lin.global_variables == lin.weights == lin.variables
        assert lin.trainable_weights == lin.variables
        assert lin.local_variables == lin.non_trainable_variables == []
        assert (lin.name, lin.variable_scope.name, lin.variable_scope_name) == ("lin", "lin", "lin/")
        other = tf.make_template("lin", _linear)   # same name: a new, unique scope
        c = other(1.0)
        assert c.name == "lin_2/y:0"
        assert [v.name for v in other.variables] == ["lin_1/w:0"]
        assert other.variable_scope_name == "lin_1/"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run([a, b]), [[3.0, 6.0], [6.0, 6.0]])


def test_template_scope_options():
    with tf.Graph().as_default():
        now = tf.make_template("now", _linear, create_scope_now_=True)
        assert now.variable_scope_name == "now/"
        assert now(1.0).name == "now/y:0"
        named = tf.make_template("ignored", _linear, unique_name_="exact")
        assert named(1.0).name == "exact/y:0"
        assert [v.name for v in named.variables] == ["exact/w:0"]
        with tf.variable_scope("outer"):
            inner = tf.make_template("lin", _linear)
            assert inner(1.0).name == "outer/lin/y:0"
        assert inner(1.0).name == "lin/y:0"   # re-entered from the root: a new name scope
        assert [v.name for v in inner.variables] == ["outer/lin/w:0"]
        lazy = tf.make_template("lazy", _linear)
        assert lazy.variable_scope is None and lazy.variable_scope_name is None
        assert lazy.variables == []


def test_template_custom_getter():
    seen = []

    def getter(getter, name, *args, **kwargs):
        seen.append(name)
        return getter(name, *args, **kwargs)

    with tf.Graph().as_default():
        t = tf.make_template("g", _linear, custom_getter_=getter)
        t(1.0)
        t(1.0)
    assert seen == ["g/w", "g/w"]


def test_template_errors():
    with tf.Graph().as_default():
        bad = tf.make_template("bad", lambda x: x * tf.Variable(1.0))
        bad(1.0)
        with pytest.raises(ValueError, match="Trainable variable created when calling a template "
                                             "after the first time") as info:
            bad(1.0)
        assert "originally defined at:" in str(info.value)

        def more():
            return tf.get_variable("v%d" % len(tf.global_variables()), [1])

        grows = tf.make_template("more", more)
        grows()
        with pytest.raises(ValueError, match=r"Variable more/v3 does not exist"):
            grows()
        with pytest.raises(ValueError, match="name cannot be None"):
            tf.make_template(None, _linear)


def test_template_failed_first_call_is_retried_without_reuse():
    calls = []

    def flaky(x):
        calls.append(1)
        w = tf.get_variable("w", [], initializer=tf.ones_initializer())
        if len(calls) == 1:
            raise RuntimeError("boom")
        return x * w

    with tf.Graph().as_default():
        t = tf.make_template("flaky", flaky)
        with pytest.raises(RuntimeError, match="boom"):
            t(1.0)
        # As TF1: the retry is still a first call (reuse=False), so the variable the failed
        # call made is in the way.
        with pytest.raises(ValueError, match="Variable flaky/w already exists"):
            t(1.0)


# -- graph_util ----------------------------------------------------------------------------------
def _model():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.get_variable("w", [2, 3], initializer=tf.constant_initializer(2.0))
        v = tf.Variable(tf.ones([3]), name="v")
        y = tf.add(tf.matmul(x, w), v, name="y")
        tf.identity(tf.check_numerics(y, "msg", name="cn"), name="z")
        tf.multiply(w, 2.0, name="unused")
    return g, v


def _frozen_sess(fn):
    g, v = _model()
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(v.assign([1.0, 2.0, 3.0]))
        return fn(sess, g.as_graph_def())


def test_convert_variables_to_constants_freezes_and_prunes():
    out = _frozen_sess(lambda s, gd: tf.graph_util.convert_variables_to_constants(s, gd, ["z"]))
    assert [(n.name, n.op, n.input) for n in out.node] == [
        ("x", "Placeholder", []), ("w", "Const", []), ("w/read", "Identity", ["w"]),
        ("v", "Const", []), ("v/read", "Identity", ["v"]), ("MatMul", "MatMul", ["x", "w/read"]),
        ("y", "Add", ["MatMul", "v/read"]), ("cn", "CheckNumerics", ["y"]),
        ("z", "Identity", ["cn"])]
    assert sorted(out.node[1].attr) == ["dtype", "value"]
    blob = msgpack.packb(out, use_bin_type=True)   # still plain data
    with tf.Graph().as_default() as g2:
        z, = tf.import_graph_def(msgpack.unpackb(blob, raw=False), return_elements=["z:0"],
                                 name="")
        assert tf.global_variables() == []
        assert not [op for op in g2.get_operations() if op.type == "VariableV2"]
        np.testing.assert_allclose(tf.Session().run(z, {"x:0": [[1.0, 1.0]]}), [[5.0, 6.0, 7.0]])


def test_convert_variables_to_constants_white_and_blacklist():
    def ops(**kw):
        out = _frozen_sess(
            lambda s, gd: tf.graph_util.convert_variables_to_constants(s, gd, ["y"], **kw))
        return {n.name: n.op for n in out.node if n.name in ("w", "v")}

    assert ops(variable_names_whitelist=["w"]) == {"w": "Const", "v": "VariableV2"}
    assert ops(variable_names_blacklist=["w"]) == {"w": "VariableV2", "v": "Const"}


def test_extract_sub_graph_and_errors():
    g, _ = _model()
    gd = g.as_graph_def()
    sub = tf.graph_util.extract_sub_graph(gd, ["unused"])
    names = [n.name for n in sub.node]
    assert names[-1] == "unused" and "w" in names and "x" not in names and "w/Assign" not in names
    assert sub.versions == gd.versions
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(gd, ["nope"])
    with pytest.raises(TypeError, match="dest_nodes must be an iterable of strings"):
        tf.graph_util.extract_sub_graph(gd, "y")
    with pytest.raises(TypeError, match="graph_def must be a zps graph_def"):
        tf.graph_util.extract_sub_graph(g, ["y"])


def test_remove_training_nodes():
    out = _frozen_sess(lambda s, gd: tf.graph_util.convert_variables_to_constants(s, gd, ["z"]))
    pruned = tf.graph_util.remove_training_nodes(out, protected_nodes=["z"])
    assert [(n.name, n.input) for n in pruned.node] == [
        ("x", []), ("w", []), ("v", []), ("MatMul", ["x", "w"]), ("y", ["MatMul", "v"]),
        ("z", ["y"])]
    assert [n.name for n in tf.graph_util.remove_training_nodes(out).node][-1] == "y"
    with tf.Graph().as_default():
        z, = tf.import_graph_def(pruned, return_elements=["z:0"])
        np.testing.assert_allclose(tf.Session().run(z, {"import/x:0": [[1.0, 0.0]]}),
                                   [[3.0, 4.0, 5.0]])


def test_tensor_shape_from_node_def_name():
    g, _ = _model()
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "y").as_list() == [None, 3]
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "w:0").as_list() == [2, 3]


@pytest.mark.parametrize("as_text", [True, False])
def test_write_graph_round_trip(tmp_path, as_text):
    frozen = _frozen_sess(lambda s, gd: tf.graph_util.convert_variables_to_constants(s, gd, ["z"]))
    path = tf.train.write_graph(frozen, str(tmp_path / "sub"), "frozen.pb", as_text=as_text)
    assert path == str(tmp_path / "sub" / "frozen.pb")
    with open(path, "rb") as f:
        data = f.read()
    if as_text:
        assert json.loads(data)["node"][0]["name"] == "x"
    else:
        assert msgpack.unpackb(data, raw=False)["node"][0]["name"] == "x"
    read = tf.graph_util.read_graph(path)
    assert read == frozen and [n.name for n in read.node] == [n.name for n in frozen.node]
    with tf.Graph().as_default():
        z, = tf.import_graph_def(read, return_elements=["z:0"], name="")
        np.testing.assert_allclose(tf.Session().run(z, {"x:0": [[1.0, 1.0]]}), [[5.0, 6.0, 7.0]])


def test_write_graph_of_a_graph_with_strings(tmp_path):
    with tf.Graph().as_default() as g:
        tf.constant([b"a\xff", b""], name="s")
    path = tf.train.write_graph(g, str(tmp_path), "g.json")
    with tf.Graph().as_default():
        s, = tf.import_graph_def(tf.graph_util.read_graph(path), return_elements=["s:0"])
        assert tf.Session().run(s).tolist() == [b"a\xff", b""]


def test_read_graph_rejects_other_files(tmp_path):
    bad = tmp_path / "tf.pbtxt"
    bad.write_text('node { name: "x" op: "Placeholder" }\n')
    with pytest.raises(ValueError, match="is not a zps graph_def file"):
        tf.graph_util.read_graph(str(bad))
    with pytest.raises(OSError):
        tf.graph_util.read_graph(str(tmp_path / "missing"))
    with pytest.raises(TypeError, match="graph_def must be a zps graph_def"):
        tf.train.write_graph([1, 2], str(tmp_path), "x")
