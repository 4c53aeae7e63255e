"""tf.saved_model (TF1's v1 API): export with simple_save / SavedModelBuilder, load into a fresh
graph and session, and get the numbers computed before the export back exactly."""

import os

import msgpack
import numpy as np
import pytest

import zps as tf
from zps.saved_model import builder as builder_lib
from zps.saved_model import loader, main_op, meta_graph_pb, signature_constants, signature_def_utils, utils

SERVING = tf.saved_model.tag_constants.SERVING
X = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)


def _linear_model(vocab_path):
    """x -> x W + b, a vocabulary table fed by an asset, and a local variable holding the asset
    path the main op was given. Returns the tensors and the main op."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="W")
    b = tf.Variable([0.5], name="b")
    y = tf.add(tf.matmul(x, w), b, name="y")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(tf.square(y - 1.0)))
    asset = tf.constant(vocab_path, name="vocab_path")
    tf.add_to_collection(tf.GraphKeys.ASSET_FILEPATHS, asset)
    table = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        asset, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
        tf.lookup.TextFileIndex.LINE_NUMBER), -1)
    words = tf.placeholder(tf.string, [None], name="words")
    ids = tf.identity(table.lookup(words), name="ids")
    tf.Variable(asset, name="asset_seen", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    init = tf.group(tf.local_variables_initializer(), tf.tables_initializer(), name="main_op")
    return {"x": x, "y": y, "words": words, "ids": ids, "train": train, "init": init}


@pytest.fixture
def vocab(tmp_path):
    path = tmp_path / "src" / "vocab.txt"
    path.parent.mkdir()
    path.write_text("a\nb\nc\n")
    return str(path)


def _train_and_export(export, vocab):
    """Train one step, export with simple_save; returns the outputs computed before export."""
    with tf.Graph().as_default(), tf.Session() as sess:
        m = _linear_model(vocab)
        sess.run([tf.global_variables_initializer(), m["init"]])
        sess.run(m["train"], {m["x"]: [[1.0, 1.0]]})
        want = sess.run(m["y"], {m["x"]: X})
        tf.saved_model.simple_save(sess, export, {"x": m["x"], "words": m["words"]},
                                   {"y": m["y"], "ids": m["ids"]}, legacy_init_op=m["init"])
    return want


def test_simple_save_round_trip_in_a_fresh_graph(tmp_path, vocab):
    export = str(tmp_path / "export")
    want = _train_and_export(export, vocab)
    # one step of SGD on (x W + b - 1)^2 at x = [1, 1]: W = [1, 2] - 0.1 * 5 = [0.5, 1.5], b = 0
    np.testing.assert_array_equal(want, X @ np.array([[0.5], [1.5]], np.float32))
    assert sorted(os.listdir(export)) == ["assets", "saved_model.zps", "variables"]
    assert os.listdir(os.path.join(export, "assets")) == ["vocab.txt"]
    assert tf.saved_model.contains_saved_model(export)
    os.remove(vocab)   # the table must be filled from the export's copy

    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [SERVING], export)
        sig = meta.signature_def[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        assert sig.method_name == "tensorflow/serving/predict"
        assert (sig.inputs["x"].name, sig.inputs["x"].dtype) == ("x:0", 1)
        assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 2]
        assert not sig.inputs["x"].tensor_shape.unknown_rank
        assert (sig.outputs["y"].name, sig.outputs["ids"].dtype) == ("y:0", 9)   # DT_INT64
        assert list(meta.meta_info_def.tags) == [SERVING]
        assert {"saved_model_main_op", "variables", "local_variables"} <= set(meta.collection_def)
        assert [(a.filename, a.tensor_info.name) for a in meta.asset_file_def] == [
            ("vocab.txt", "vocab_path:0")]
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X})
        np.testing.assert_array_equal(got, want)
        ids = utils.get_tensor_from_tensor_info(sig.outputs["ids"])
        words = utils.get_tensor_from_tensor_info(sig.inputs["words"], graph=g)
        assert sess.run(ids, {words: ["c", "a", "zz"]}).tolist() == [2, 0, -1]
        seen = sess.run("asset_seen:0").decode()
        assert seen == os.path.join(export, "assets", "vocab.txt")
        with open(seen) as f:
            assert f.read() == "a\nb\nc\n"


def test_load_with_import_scope_prefixes_names(tmp_path, vocab):
    export = str(tmp_path / "export")
    want = _train_and_export(export, vocab)
    with tf.Graph().as_default() as g, tf.Session() as sess:
        tf.constant(0.0, name="x")   # the graph already has an "x"
        meta = tf.saved_model.load(sess, [SERVING], export, import_scope="served")
        sig = meta.signature_def["serving_default"]
        assert sig.inputs["x"].name == "x:0"   # the MetaGraphDef keeps the saved names
        x = tf.saved_model.get_tensor_from_tensor_info(sig.inputs["x"], import_scope="served")
        y = tf.saved_model.get_tensor_from_tensor_info(sig.outputs["y"], import_scope="served")
        assert (x.name, y.name) == ("served/x:0", "served/y:0")
        np.testing.assert_array_equal(sess.run(y, {x: X}), want)
        assert sess.run("served/asset_seen:0").decode() == os.path.join(export, "assets",
                                                                        "vocab.txt")
        assert {v.op.name for v in g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)} == {
            "served/W", "served/b"}


def test_builder_writes_several_tag_sets_over_one_set_of_variables(tmp_path):
    export = str(tmp_path / "export")
    b = tf.saved_model.Builder(export)
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.5], [-2.0]], name="W")
        y = tf.matmul(x, w, name="y")
        z = tf.reduce_sum(y, name="z")
        sess.run(w.initializer)
        want_y, want_z = sess.run([y, z], {x: X})
        with pytest.raises(AssertionError, match="has not been saved yet"):
            b.add_meta_graph(["serve"])
        b.add_meta_graph_and_variables(sess, ["train", "gpu"], signature_def_map={
            "sum": signature_def_utils.predict_signature_def({"x": x}, {"z": z})})
        with pytest.raises(AssertionError, match="already been saved. Please invoke "
                                                 "`add_meta_graph\\(\\)` instead"):
            b.add_meta_graph_and_variables(sess, ["again"])
        b.add_meta_graph([SERVING], signature_def_map={
            "serving_default": signature_def_utils.predict_signature_def({"x": x}, {"y": y})})
        b.add_meta_graph([SERVING])   # a duplicate tag set: load picks the first, as TF
    path = b.save()
    assert path == os.fsencode(os.path.join(export, "saved_model.zps"))   # bytes, as TF1's
    assert b.save(as_text=True) == path   # no text form: the same binary file, with a warning
    with open(path, "rb") as f:
        saved = msgpack.unpackb(f.read(), raw=False)
    assert (saved["format"], saved["version"]) == ("zps-saved-model", 1)
    assert [m["meta_info_def"]["tags"] for m in saved["meta_graphs"]] == [
        ["train", "gpu"], ["serve"], ["serve"]]

    for tags, key, out, want in ((["gpu", "train"], "sum", "z", want_z),
                                 ([SERVING], "serving_default", "y", want_y)):
        with tf.Graph().as_default(), tf.Session() as sess:
            meta = loader.load(sess, tags, export)
            assert list(meta.signature_def) == [key]
            sig = meta.signature_def[key]
            got = sess.run(sig.outputs[out].name, {sig.inputs["x"].name: X})
            np.testing.assert_array_equal(got, want)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match=r"MetaGraphDef associated with tags 'train' could "
                                               r"not be found in SavedModel, with available tags "
                                               r"'\[\{'(gpu', 'train|train', 'gpu)'\}, "
                                               r"\{'serve'\}, \{'serve'\}\]'"):
            loader.load(sess, ["train"], export)
    with pytest.raises(AssertionError, match="already exists, and isn't empty"):
        tf.saved_model.Builder(export)


def test_partitioned_variable_round_trips(tmp_path):
    export = str(tmp_path / "export")
    with tf.Graph().as_default(), tf.Session() as sess:
        emb = tf.get_variable("emb", [7, 3], partitioner=tf.fixed_size_partitioner(3),
                              initializer=tf.random_normal_initializer(seed=1))
        ids = tf.placeholder(tf.int64, [None], name="ids")
        rows = tf.nn.embedding_lookup(emb, ids, name="rows")
        sess.run(tf.global_variables_initializer())
        want = sess.run(rows, {ids: [6, 0, 3]})
        b = builder_lib.SavedModelBuilder(export)
        b.add_meta_graph_and_variables(sess, [SERVING], signature_def_map={
            "serving_default": tf.saved_model.predict_signature_def({"ids": ids},
                                                                    {"rows": rows})})
        b.save()
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = loader.load(sess, [SERVING], export)
        sig = meta.signature_def["serving_default"]
        got = sess.run(sig.outputs["rows"].name, {sig.inputs["ids"].name: [6, 0, 3]})
        np.testing.assert_array_equal(got, want)
        shards = sorted(v.op.name for v in g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES))
        assert shards == ["emb/part_0", "emb/part_1", "emb/part_2"]


def test_sparse_tensor_info_round_trips(tmp_path):
    export = str(tmp_path / "export")
    with tf.Graph().as_default(), tf.Session() as sess:
        sp = tf.sparse_placeholder(tf.float32, [None, 4], name="sp")
        scale = tf.Variable(3.0, name="scale")
        out = tf.SparseTensor(sp.indices, sp.values * scale, sp.dense_shape)
        info = tf.saved_model.build_tensor_info(out)
        assert info.WhichOneof("encoding") == "coo_sparse" and info.dtype == 1
        assert info.coo_sparse.indices_tensor_name == sp.indices.name
        sess.run(scale.initializer)
        tf.saved_model.simple_save(sess, export, {"sp": sp}, {"out": out})
    value = tf.SparseTensorValue([[0, 1], [2, 3]], np.array([1.0, -2.0], np.float32), [3, 4])
    with tf.Graph().as_default(), tf.Session() as sess:
        sig = loader.load(sess, [SERVING], export).signature_def["serving_default"]
        sp_in = utils.get_tensor_from_tensor_info(sig.inputs["sp"])
        sp_out = utils.get_tensor_from_tensor_info(sig.outputs["out"])
        assert isinstance(sp_out, tf.SparseTensor)
        got = sess.run(sp_out, {sp_in: value})
        assert got.indices.tolist() == [[0, 1], [2, 3]]
        assert got.values.tolist() == [3.0, -6.0] and got.dense_shape.tolist() == [3, 4]


def test_main_op_initializes_variables_and_tables_and_main_op_with_restore_restores(tmp_path):
    with tf.Graph().as_default(), tf.Session() as sess:
        g_var = tf.Variable(1.0, name="g")
        l_var = tf.Variable(2.0, name="l", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(["k"]), tf.constant([5], tf.int64)), -1)
        lookup = table.lookup(tf.constant(["k"]))
        sess.run(main_op.main_op())
        assert sess.run([g_var, l_var, lookup[0]]) == [1.0, 2.0, 5]
        saver = tf.train.Saver([g_var])
        sess.run(g_var.assign(9.0))
        path = saver.save(sess, str(tmp_path / "ckpt"))
        op = tf.saved_model.main_op_with_restore(saver.saver_def["restore_op_name"])
        sess.run(op, {saver.saver_def["filename_tensor_name"]: path})
        assert sess.run(g_var) == 9.0


def test_signature_helpers_match_tf():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        examples = tf.placeholder(tf.string, [None])
        classes = tf.placeholder(tf.string, [None])
        scores = tf.placeholder(tf.float32, [None])
        cls = tf.saved_model.classification_signature_def(examples, classes, scores)
        assert sorted(cls.outputs) == ["classes", "scores"] and tf.saved_model.is_valid_signature(
            cls)
        reg = tf.saved_model.regression_signature_def(examples, scores)
        assert reg.method_name == "tensorflow/serving/regress"
        assert tf.saved_model.is_valid_signature(reg)
        other = tf.saved_model.build_signature_def(
            {"x": tf.saved_model.build_tensor_info(x)}, {"y": tf.saved_model.build_tensor_info(x)},
            "m")
        assert not tf.saved_model.is_valid_signature(other)   # TF: False (unknown method)
        assert not tf.saved_model.is_valid_signature(None)
        with pytest.raises(ValueError, match="Regression output tensors must be of type float. "
                                             "Found tensors with type 7."):
            tf.saved_model.regression_signature_def(examples, classes)
        with pytest.raises(ValueError, match="Prediction `inputs` cannot be None or empty."):
            tf.saved_model.predict_signature_def({}, {"y": x})
        info = tf.saved_model.build_tensor_info(tf.placeholder(tf.int64))
        assert info.tensor_shape.unknown_rank and info.dtype == 9
        assert signature_constants.PREDICT_METHOD_NAME == "tensorflow/serving/predict"


def test_builder_rejects_invalid_signatures_and_main_ops(tmp_path):
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.Variable(1.0, name="v")
        sess.run(tf.global_variables_initializer())
        b = tf.saved_model.Builder(str(tmp_path / "e"))
        with pytest.raises(TypeError, match=r"signature_def_map\['k'\] must be a SignatureDef"):
            b.add_meta_graph_and_variables(sess, [SERVING], signature_def_map={"k": {"x": x}})
        bad = tf.saved_model.build_signature_def({"x": tf.saved_model.build_tensor_info(x)}, {})
        bad.inputs["x"].ClearField("dtype")
        with pytest.raises(AssertionError, match="must have the dtype field set"):
            b.add_meta_graph_and_variables(sess, [SERVING], signature_def_map={"k": bad})
        bad.inputs["x"].ClearField("name")
        bad.inputs["x"].dtype = 1
        with pytest.raises(AssertionError, match="must have one of the 'encoding' fields"):
            b.add_meta_graph_and_variables(sess, [SERVING], signature_def_map={"k": bad})
        ok = tf.saved_model.predict_signature_def({"x": x}, {"x": x})
        with pytest.raises(KeyError, match="reserved for initialization"):
            b.add_meta_graph_and_variables(sess, [SERVING],
                                           signature_def_map={"__saved_model_init_op": ok})
        with pytest.raises(TypeError, match="to be an Operation"):
            b.add_meta_graph_and_variables(sess, [SERVING], main_op=x)
        with pytest.raises(TypeError, match="must be of type constant"):
            b.add_meta_graph_and_variables(sess, [SERVING], assets_collection=[x])
        missing = tf.constant(str(tmp_path / "nowhere.txt"), name="missing_asset")
        with pytest.raises(tf.errors.NotFoundError,
                           match=r"nowhere.txt does not exist \(named by missing_asset:0\)"):
            b.add_meta_graph_and_variables(sess, [SERVING], assets_collection=[missing])
        assert not (tmp_path / "e" / "variables").exists()   # nothing saved before the check


def test_load_errors_name_the_problem_and_run_nothing(tmp_path):
    missing = tmp_path / "none"
    missing.mkdir()
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(OSError, match="SavedModel file does not exist at: .*saved_model.zps$"):
            loader.load(sess, [SERVING], str(missing))
        (missing / "saved_model.pb").write_bytes(b"\x0a\x00")
        assert not tf.saved_model.maybe_saved_model_directory(str(missing))
        with pytest.raises(OSError, match="holds a TensorFlow SavedModel: zps cannot read those"):
            loader.load(sess, [SERVING], str(missing))
        corrupt = tmp_path / "corrupt"
        corrupt.mkdir()
        for content, reason in (
                (b"\xc1\xff garbage", "Cannot parse file"),
                (msgpack.packb({"format": "something else"}), "not a zps SavedModel"),
                (msgpack.packb({"format": "zps-saved-model", "version": 2, "meta_graphs": []}),
                 "format version 2; this zps reads version 1"),
                (msgpack.packb({"format": "zps-saved-model", "version": 1,
                                "meta_graphs": [{"format": "zps-meta-graph"}]}),
                 "Not a zps meta graph"),
                (msgpack.packb({"format": "zps-saved-model", "version": 1, "meta_graphs": [
                    {"format": "zps-meta-graph", "graph_def": {"node": []},
                     "meta_info_def": {"tags": [1]}}]}), "MetaInfoDef"),
                (msgpack.packb({"format": "zps-saved-model", "version": 1, "meta_graphs": [
                    {"format": "zps-meta-graph", "graph_def": {"node": []},
                     "meta_info_def": {}, "signature_def": {"k": {"inputs": 3}}}]}),
                 "SignatureDef"),
                (b"\x80\x04\x95" + b"cos\nsystem\n", "Cannot parse file")):   # a pickle
            (corrupt / "saved_model.zps").write_bytes(content)
            assert tf.saved_model.contains_saved_model(corrupt)
            with pytest.raises(OSError, match=reason):
                loader.load(sess, [SERVING], str(corrupt))
        assert sess.graph.get_operations() == []   # nothing was imported
        with pytest.raises(KeyError, match="nope:0"):
            utils.get_tensor_from_tensor_info(tf.saved_model.build_signature_def(
                {"x": meta_graph_pb.TensorInfo(name="nope:0", dtype=1)}).inputs["x"])
        with pytest.raises(ValueError, match="Invalid TensorInfo.encoding: None"):
            utils.get_tensor_from_tensor_info(meta_graph_pb.TensorInfo(dtype=1))


def test_export_from_a_server_session_loads_locally(tmp_path):
    export = str(tmp_path / "export")
    server = tf.train.Server.create_local_server()
    try:
        with tf.Graph().as_default(), tf.Session(server.target) as sess:
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            w = tf.Variable([[0.25], [4.0]], name="W")
            y = tf.matmul(x, w, name="y")
            sess.run(w.initializer)
            sess.run(w.assign_add([[1.0], [1.0]]))
            want = sess.run(y, {x: X})
            tf.saved_model.simple_save(sess, export, {"x": x}, {"y": y})
    finally:
        server.stop()
    with tf.Graph().as_default(), tf.Session() as sess:
        sig = loader.load(sess, [SERVING], export).signature_def["serving_default"]
        np.testing.assert_array_equal(sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X}),
                                      want)
