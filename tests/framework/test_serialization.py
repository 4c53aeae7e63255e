"""Graph serialization: as_graph_def / import_graph_def round trips, attr encoding, rejection."""

import copy

import msgpack
import numpy as np
import pytest

import zps as tf
from zps.framework import serialization
from zps.framework.serialization import decode_attr, encode_attr, import_graph_def

R = np.random.default_rng(7)


def _mlp():
    """An MLP with variables, its loss, gradients, an initializer and a string constant."""
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.float32, [None, 2], name="y")
    with tf.name_scope("layer1"):
        w1 = tf.Variable(R.standard_normal((4, 8)).astype(np.float32), name="w")
        b1 = tf.Variable(np.zeros(8, np.float32), name="b")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.name_scope("layer2"), tf.device("/cpu:0"):
        w2 = tf.Variable(R.standard_normal((8, 2)).astype(np.float32), name="w")
        b2 = tf.Variable(np.zeros(2, np.float32), name="b")
        out = tf.matmul(h, w2) + b2
    loss = tf.reduce_mean(tf.square(out - y), name="loss")
    grads = tf.gradients(loss, [w1, b1, w2, b2])
    tf.constant("Hello", name="greeting")
    tf.global_variables_initializer()
    return loss, grads


FEED = {"x:0": R.standard_normal((5, 4)).astype(np.float32),
        "y:0": R.standard_normal((5, 2)).astype(np.float32)}


def _values(graph, prefix=""):
    with tf.Session(graph=graph) as sess:
        sess.run(prefix + "init")
        names = [prefix + n for n in ("loss:0", "greeting:0")]
        grads = [t for t in graph.get_operations() if t.name.startswith(prefix + "gradients/")]
        feed = {prefix + k: v for k, v in FEED.items()}
        return sess.run(names, feed), len(grads)


def test_mlp_round_trip_through_msgpack_gives_the_same_results():
    with tf.Graph().as_default() as g:
        loss, grads = _mlp()
        gd = g.as_graph_def()
        with tf.Session() as sess:
            sess.run("init")
            expected = sess.run([loss] + grads, FEED)
    blob = msgpack.packb(gd)
    restored = msgpack.unpackb(blob)
    with tf.Graph().as_default() as g2:
        assert import_graph_def(restored, name="") is None
        assert [op.name for op in g2.get_operations()] == [op.name for op in g.get_operations()]
        with tf.Session() as sess:
            sess.run("init")
            got = sess.run(["loss:0"] + [t.name for t in grads], FEED)
            assert sess.run("greeting:0") == b"Hello"
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_ops_keep_names_devices_inputs_control_inputs_and_colocation():
    with tf.Graph().as_default() as g:
        _mlp()
        gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        import_graph_def(gd, name="")
    for op in g.get_operations():
        new = g2.get_operation_by_name(op.name)
        assert new.type == op.type and new.device == op.device
        assert [t.name for t in new.inputs] == [t.name for t in op.inputs]
        assert [c.name for c in new.control_inputs] == [c.name for c in op.control_inputs]
        assert new.colocation_groups() == op.colocation_groups()
        assert [t.dtype for t in new.outputs] == [t.dtype for t in op.outputs]
        assert [t.get_shape() for t in new.outputs] == [t.get_shape() for t in op.outputs]
    assert g2.get_operation_by_name("layer2/w").device == "/device:CPU:0"
    assert g2.get_operation_by_name("layer1/w/Assign").colocation_groups() == [b"loc:@layer1/w"]
    assert g2.get_operation_by_name("init").control_inputs


def test_import_under_a_prefix_twice():
    with tf.Graph().as_default() as g:
        _mlp()
        gd = g.as_graph_def()
        expected, _ = _values(g)
    with tf.Graph().as_default() as g2:
        import_graph_def(gd)
        import_graph_def(gd)
        first, n_grads = _values(g2, "import/")
        second, _ = _values(g2, "import_1/")
        assert n_grads > 10
        assert g2.get_operation_by_name("import/layer1/w/Assign").colocation_groups() == \
            [b"loc:@import/layer1/w"]
    np.testing.assert_allclose(first[0], expected[0], rtol=1e-6)
    np.testing.assert_allclose(second[0], expected[0], rtol=1e-6)


def test_input_map_and_return_elements():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        three = tf.constant(3.0, name="three")
        with g.control_dependencies([tf.no_op(name="ctl")]):
            tf.multiply(x, three, name="y")
        gd = g.as_graph_def()
    with tf.Graph().as_default():
        source = tf.constant([1.0, 2.0], name="source")
        gate = tf.no_op(name="gate")
        y2, y_op = import_graph_def(gd, input_map={"x:0": source, "^ctl": gate},
                                    return_elements=["y:0", "y"], name="net")
        assert y2.op is y_op and y2.name == "net/y:0"
        assert y_op.inputs[0] is source and y_op.control_inputs == [gate]
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y2), [3.0, 6.0])
        # Python values are converted; the unmapped source node is still imported.
        z, = import_graph_def(gd, input_map={"x": [5.0]}, return_elements=["y:0"])
        assert tf.Session().run(z).tolist() == [15.0]
        assert tf.get_default_graph().get_operation_by_name("import/x").type == "Placeholder"


def test_input_map_errors():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.identity(x, name="y")
        gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        with pytest.raises(ValueError, match=r"not found in graph_def: \['nope:0'\]"):
            import_graph_def(gd, input_map={"nope:0": tf.constant(1.0)})
        with pytest.raises(ValueError, match="dtype int32 but the input has dtype float32"):
            import_graph_def(gd, input_map={"x:0": tf.constant([1])})
        with pytest.raises(ValueError, match="not found in graph_def"):
            import_graph_def(gd, return_elements=["zzz"])
        with pytest.raises(ValueError, match="has 1 outputs"):
            import_graph_def(gd, return_elements=["y:3"])
        with tf.Graph().as_default():
            foreign = tf.constant([1.0])
        with pytest.raises(ValueError, match="not an element of the default graph"):
            import_graph_def(gd, input_map={"x:0": foreign})
        assert [op.type for op in g2.get_operations()] == ["Const", "Const"]  # nothing imported


def test_subset_export_needs_its_outside_inputs_mapped():
    with tf.Graph().as_default() as g:
        a = tf.placeholder(tf.float32, [], name="a")
        b = tf.add(a, 1.0, name="b")
        c = tf.multiply(b, 2.0, name="c")
        gd = serialization.graph_to_def(g, ops=[c.op.inputs[1].op, c.op])
        assert [n["name"] for n in gd["node"]] == [c.op.inputs[1].op.name, "c"]
        assert gd["node"][1]["input"][0] == "b"
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Input 'b:0' of node 'c' refers to no node"):
            import_graph_def(gd)
        out, = import_graph_def(gd, input_map={"b:0": tf.constant(4.0)}, return_elements=["c:0"])
        assert tf.Session().run(out) == 8.0


def test_scopes_apply_to_imported_ops():
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="plain")
        with tf.device("/cpu:0"):
            tf.constant(2.0, name="on_cpu")
        gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        gate = tf.no_op(name="gate")
        with tf.device("/job:ps/task:1"), g2.control_dependencies([gate]):
            import_graph_def(gd, name="i")
        assert g2.get_operation_by_name("i/plain").device == "/job:ps/task:1"
        assert g2.get_operation_by_name("i/on_cpu").device == "/job:ps/task:1/device:CPU:0"
        assert g2.get_operation_by_name("i/plain").control_inputs == [gate]


def test_names_are_reserved_and_duplicates_rejected():
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
        gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        import_graph_def(gd, name="")
        assert tf.constant(2.0, name="c").op.name == "c_1"
        with pytest.raises(ValueError, match="Duplicate node name in graph: 'c'"):
            import_graph_def(gd, name="")
        assert len(g2.get_operations()) == 2


def test_output_shapes_and_variadic_outputs():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, name="x")
        x.set_shape([None, 3])
        y = tf.identity(x, name="y")
        y.set_shape([2, 3])
        parts = tf.gradients(tf.reduce_sum(tf.square(tf.concat([x, x], 0))), [x])
        gd = g.as_graph_def(add_shapes=True)
        plain = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        import_graph_def(gd, name="")
        assert g2.get_tensor_by_name("y:0").get_shape().as_list() == [2, 3]
        assert g2.get_tensor_by_name(parts[0].name).dtype is tf.float32
    with tf.Graph().as_default() as g3:
        import_graph_def(plain, name="")
        assert g3.get_tensor_by_name("y:0").get_shape().ndims is None  # set_shape is not kept


def test_node_def_property():
    with tf.Graph().as_default() as g:
        a = tf.placeholder(tf.float32, [2, None], name="a")
        with g.control_dependencies([tf.no_op(name="n")]):
            b = tf.identity(a, name="b")
        nd = b.op.node_def
        assert nd == {"name": "b", "op": "Identity", "device": "", "input": ["a", "^n"], "attr": {}}
        assert nd.op == "Identity" and nd.input == ["a", "^n"]
        assert a.op.node_def.attr == {"dtype": {"dtype": "float32"},
                                      "shape": {"tuple": [2, None]}}
        with pytest.raises(AttributeError):
            _ = nd.nothing


# -- attr encoding -------------------------------------------------------------------------------
ATTR_VALUES = [
    None, True, False, 0, -7, 2 ** 63 - 1, 1.5, float("inf"), "text", b"\x00bytes",
    tf.float32, tf.string, tf.TensorShape([None, 3]), tf.TensorShape(None), tf.TensorShape([]),
    (1, 2), [1, 2], [(1, [2.5, "x"]), None], {"k": (1,), "j": [tf.int64]}, (),
    np.float32(1.25), np.int64(-3), np.bool_(True),
]


@pytest.mark.parametrize("value", ATTR_VALUES, ids=repr)
def test_attr_round_trip_through_msgpack(value):
    encoded = encode_attr(value)
    back = decode_attr(msgpack.unpackb(msgpack.packb(encoded)))
    assert type(back) is type(value)
    assert back == value


@pytest.mark.parametrize("arr", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array(2.5, np.float64),
    np.array([1, -2], np.int8), np.array([300, -1], np.int16), np.array([1 << 40], np.int64),
    np.array([[7]], np.int32), np.array([0, 255], np.uint8), np.array([True, False]),
    np.array([1.5, -0.25], np.float16), np.zeros((0, 3), np.float32),
    np.array([[b"a", b""], [b"\xff", b"long" * 10]], dtype=object), np.array(b"x", dtype=object),
    np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2],  # not contiguous
], ids=lambda a: "%s%s" % (a.dtype, a.shape))
def test_array_attrs_round_trip(arr):
    back = decode_attr(msgpack.unpackb(msgpack.packb(encode_attr(arr))))
    assert back.dtype == arr.dtype and back.shape == arr.shape and not back.flags.writeable
    np.testing.assert_array_equal(back, arr)


@pytest.mark.parametrize("value, message", [
    (lambda: None, "function is not plain data"),
    (object(), "object is not plain data"),
    ({1: 2}, "str keys"),
    (2 ** 70, "64-bit range"),
    (np.array([1], "datetime64[s]"), "numpy dtype datetime64\\[s\\] has no zps equivalent"),
])
def test_non_plain_attrs_cannot_be_encoded(value, message):
    with pytest.raises((TypeError, ValueError), match=message):
        encode_attr(value)


def test_unserializable_op_attr_names_the_op():
    with tf.Graph().as_default() as g:
        c = tf.constant(1.0, name="c")
        c.op._attrs["callback"] = print
        with pytest.raises(ValueError, match="attr 'callback' of op c \\(Const\\)"):
            g.as_graph_def()


# -- hostile and malformed graph_defs ---------------------------------------------------------------
def _const_def():
    with tf.Graph().as_default() as g:
        tf.constant([1.0, 2.0], name="c")
        tf.identity(g.get_tensor_by_name("c:0"), name="i")
        return g.as_graph_def()


def _with(mutate):
    gd = copy.deepcopy(_const_def())
    mutate(gd)
    return gd


def _set_attr(name, value, node=0):
    return lambda gd: gd["node"][node]["attr"].__setitem__(name, value)


def _tensor(**fields):
    body = {"dtype": "float32", "shape": [2], "data": b"\x00" * 8}
    body.update(fields)
    return {"tensor": body}


HOSTILE = [
    (lambda gd: gd["node"][0].__setitem__("op", "os.system"), "op type 'os.system' is not registered"),
    (lambda gd: gd["node"][0].__setitem__("op", None), "op type None is not registered"),
    (_set_attr("value", {"pickle": b"cos\nsystem\n"}), "unknown attr tag 'pickle'"),
    (_set_attr("value", _tensor(data=b"\x00" * 7)), "needs 8 bytes of data"),
    (_set_attr("value", _tensor(shape=[2 ** 40, 2 ** 40])), "needs .* bytes of data"),
    (_set_attr("value", _tensor(shape=[-2])), "invalid dimension -2"),
    (_set_attr("value", _tensor(shape=[1] * 40)), "at most 32 dims"),
    (_set_attr("value", _tensor(dtype="object")), "unknown dtype 'object'"),
    (_set_attr("value", _tensor(dtype="string", data=[b"a", 3])), "must be bytes"),
    (_set_attr("value", _tensor(extra=1)), "a tensor is"),
    (_set_attr("dtype", {"dtype": "float128"}), "unknown dtype 'float128'"),
    (_set_attr("dtype", {"dtype": "float32", "also": 1}), "one-key tag"),
    (_set_attr("dtype", [1, 2]), "one-key tag"),
    (_set_attr("op_name", 1), "invalid attr name 'op_name'"),
    (_set_attr("bad name", 1), "invalid attr name 'bad name'"),
    (_set_attr("value", 2 ** 65), "64-bit range"),
    (_set_attr("_class", {"list": ["nowhere"]}), "loc:@"),
    (_set_attr("_num_outputs", -1), "_num_outputs"),
    (lambda gd: gd["node"][1].__setitem__("input", ["missing:0"]), "refers to no node"),
    (lambda gd: gd["node"][1].__setitem__("input", ["^c", "c"]), "follows a control input"),
    (lambda gd: gd["node"][1].__setitem__("input", ["c:x"]), "invalid tensor name"),
    (lambda gd: gd["node"][1].__setitem__("input", ["^c:0"]), "control input names an op"),
    (lambda gd: gd["node"][1].__setitem__("input", "c"), "list of tensor names"),
    (lambda gd: gd["node"][1].__setitem__("name", "c"), "two nodes named 'c'"),
    (lambda gd: gd["node"][1].__setitem__("name", "bad name"), "not a valid node name"),
    (lambda gd: gd["node"][1].__setitem__("device", "/job:ps/nonsense:3"), "Invalid device part"),
    (lambda gd: gd["node"][0].__setitem__("input", ["i"]), "cycle"),
    (lambda gd: gd["node"].append("not a node"), "is not a dict"),
    (lambda gd: gd["versions"].__setitem__("min_consumer", 99), "newer zps"),
    (lambda gd: gd.__setitem__("node", "nodes"), "'node' list"),
]


@pytest.mark.parametrize("mutate, message", HOSTILE, ids=[m for _, m in HOSTILE])
def test_hostile_graph_defs_are_rejected_and_leave_the_graph_unchanged(mutate, message):
    gd = _with(mutate)
    with tf.Graph().as_default() as g:
        keep = tf.constant(0.0, name="keep")
        with pytest.raises(ValueError, match=message):
            import_graph_def(gd)
        assert g.get_operations() == [keep.op]


def test_deep_nesting_is_rejected():
    value = 1
    for _ in range(100):
        value = {"list": [value]}
    with pytest.raises(ValueError, match="nested deeper"):
        decode_attr(value)
    gd = _with(_set_attr("deep", value))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="malformed attr 'deep'"):
            import_graph_def(gd)


def test_attrs_a_shape_rule_cannot_use_are_rejected_without_partial_import():
    gd = _with(_set_attr("value", {"list": [1, 2]}, node=0))
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match="Cannot import node 'c' \\(op Const\\)"):
            import_graph_def(gd, name="")
        assert g.get_operations() == []
        assert tf.constant(1.0, name="c").op.name == "c"  # the failed import left no op behind


def test_import_into_a_finalized_graph_fails():
    gd = _const_def()
    with tf.Graph().as_default() as g:
        g.finalize()
        with pytest.raises(RuntimeError, match="finalized"):
            import_graph_def(gd)


def test_export_from_the_public_namespace():
    assert "import_graph_def" in serialization.__all__


def test_internal_names_round_trip():
    with tf.Graph().as_default() as g:
        a = tf.constant(1.0, name="_token/^a")
        with g.control_dependencies([a]):
            tf.identity(a, name="_recv/^b")
        gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        import_graph_def(gd, name="")
        b = g2.get_operation_by_name("_recv/^b")
        assert b.inputs[0].name == "_token/^a:0" and b.control_inputs == []


def test_subset_with_a_colocation_target_left_out_keeps_its_device():
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            anchor = tf.constant(1.0, name="anchor")
        with g.colocate_with(anchor):
            near = tf.constant(2.0, name="near")
        gd = g.as_graph_def(ops=[near.op])
    with tf.Graph().as_default() as g2:
        import_graph_def(gd, name="")
        op = g2.get_operation_by_name("near")
        assert op.device == "/job:ps/task:0" and op.colocation_groups() == [b"loc:@anchor"]


def test_large_constants_travel_out_of_band_in_buffers():
    from zps.framework.serialization import OUT_OF_BAND_BYTES
    big = np.arange(OUT_OF_BAND_BYTES, dtype=np.float32)          # 4x the threshold
    with tf.Graph().as_default() as g:
        c = tf.constant(big, name="big")
        small = tf.constant([1.0, 2.0], name="small")
        tf.add(c[:2], small, name="out")
    buffers = []
    graph_def = g.as_graph_def(buffers=buffers)
    assert len(buffers) == 1 and buffers[0] is not big and np.array_equal(buffers[0], big)
    assert len(msgpack.packb(graph_def)) < 4096                      # the header stays small
    with tf.Graph().as_default():
        out, = import_graph_def(graph_def, return_elements=["out:0"], name="",
                                buffers=buffers)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(out), [1.0, 3.0])
            np.testing.assert_array_equal(sess.run("big:0"), big)


@pytest.mark.parametrize("buffers, match", [
    (None, "refers to buffer 0, but 0 buffers"),
    ([], "refers to buffer 0, but 0 buffers"),
    ([np.zeros(3, np.float64)], "buffer 0 is float64"),
    ([np.zeros(5, np.float32)], r"buffer 0 is float32\[5\]"),
])
def test_bad_buffer_references_are_rejected(buffers, match):
    graph_def = {"node": [{"name": "c", "op": "Const", "input": [], "attr": {
        "dtype": {"dtype": "float32"},
        "value": {"tensor": {"dtype": "float32", "shape": [3], "buffer": 0}}}}]}
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match=match):
            import_graph_def(graph_def, buffers=buffers)
        assert g.get_operations() == []


def test_graph_def_fields_are_attributes_as_in_tf1():
    # TF1 programs list a graph's nodes as graph_def.node, each with .name, .op, .input ...
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/cpu:0"):
            y = tf.multiply(x, 2.0, name="y")
        with tf.control_dependencies([y]):
            tf.no_op(name="after")
    graph_def = g.as_graph_def()
    assert [n.name for n in graph_def.node] == [n["name"] for n in graph_def["node"]]
    node = {n.name: n for n in graph_def.node}
    assert (node["y"].op, node["y"].input, node["y"].device) == ("Mul", ["x", "y/y"],
                                                                  "/device:CPU:0")
    assert node["after"].input == ["^y"] and node["x"].attr["dtype"] == {"dtype": "float32"}
    assert graph_def.versions == graph_def["versions"]
    # Still plain data: msgpack carries it, and what comes back imports.
    back = msgpack.unpackb(msgpack.packb(graph_def))
    assert back == graph_def and type(back) is dict
