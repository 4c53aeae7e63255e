"""tf.feature_column against TensorFlow.

tests/fixtures/tf_feature_column/expected.npz holds what TensorFlow 2.21's ``tf.compat.v1``
computed for the programs of tests/fixtures/tf_feature_column/make.py (its docstring says how to
make it again); here zps runs the same programs. Hash buckets and crosses are compared exactly,
values to float32 rounding.
"""

import importlib.util
import pathlib

import msgpack
import numpy as np
import pytest

import zps as tf
from zps.ops.feature_column_ops import sparse_cross_hashed
from zps.ops.fingerprint import fingerprint64
from zps.testing import fake_cupy
from zps.testing.cluster import InProcessCluster

FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "tf_feature_column"
fc = tf.feature_column


def _load_make():
    spec = importlib.util.spec_from_file_location("tf_feature_column_make", FIXTURE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make


make = _load_make()
EXPECTED = np.load(FIXTURE / "expected.npz")


def _expected(prefix):
    return {k[len(prefix):]: EXPECTED[k] for k in EXPECTED.files if k.startswith(prefix)}


# -- hashing --------------------------------------------------------------------------------------
def test_fingerprint64_of_the_empty_string_is_farmhash_k2():
    assert fingerprint64(b"") == 0x9ae16a3b2f90404f


def test_hash_buckets_of_strings_of_every_length_and_of_ints_are_tfs():
    expected = _expected("hash:")
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(make.hash_program(tf))
    assert sorted(got) == sorted(expected)
    for key, value in got.items():
        np.testing.assert_array_equal(value, expected[key], err_msg=key)


def test_hashed_crosses_are_tfs():
    expected = _expected("cross:")
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(make.cross_program(tf, sparse_cross_hashed))
    assert sorted(got) == sorted(expected)
    for key, value in got.items():
        np.testing.assert_array_equal(value, expected[key], err_msg=key)


def test_string_to_hash_bucket_fast_rejects_zero_buckets():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="num_buckets must be >= 1"):
        tf.string_to_hash_bucket_fast(["a"], 0)


# -- input_layer and linear_model over every column type ------------------------------------------
@pytest.fixture(scope="module")
def layer_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "colors.txt"
    path.write_bytes(b"\n".join(make.VOCABULARY_FILE_LINES) + b"\n")
    with tf.Graph().as_default():
        return make.layer_program(tf, tf.Session, str(path))


def test_input_layer_and_linear_model_outputs_are_tfs(layer_run):
    result, _ = layer_run
    expected = _expected("layer:")
    for key in ("net", "linear_sum", "linear_mean", "linear_sqrtn"):
        np.testing.assert_allclose(result[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_variable_names_and_shapes_are_tf1s(layer_run):
    result, _ = layer_run
    assert result["var_names"].tolist() == EXPECTED["layer:var_names"].tolist()
    assert result["var_shapes"].tolist() == EXPECTED["layer:var_shapes"].tolist()


def test_gradients_are_tfs_and_sparse_where_tfs_are(layer_run):
    result, grads = layer_run
    for name in EXPECTED["layer:var_names"]:
        np.testing.assert_allclose(result["grad:" + name], EXPECTED["layer:grad:" + name],
                                   rtol=1e-5, atol=1e-5, err_msg=name)
    sparse = [isinstance(g, tf.IndexedSlices) for g in grads]
    assert sparse == EXPECTED["layer:indexed_slices"].tolist()


def test_cols_to_vars_maps_each_column_to_its_variables():
    with tf.Graph().as_default():
        ids = fc.categorical_column_with_identity("i", 4)
        price = fc.numeric_column("p")
        emb = fc.embedding_column(ids, 2)
        found = {}
        fc.input_layer({"i": [[1]], "p": [[2.0]]}, [price, emb], cols_to_vars=found)
        assert [v.op.name for v in found[emb]] == ["input_layer/i_embedding/embedding_weights"]
        assert found[price] == []
        linear = {}
        fc.linear_model({"i": [[1]], "p": [[2.0]]}, [ids, price], cols_to_vars=linear)
        assert [v.op.name for v in linear[ids]] == ["linear_model/i/weights"]
        assert [v.op.name for v in linear["bias"]] == ["linear_model/bias_weights"]
        assert [v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)] == [
            "input_layer/i_embedding/embedding_weights", "linear_model/i/weights",
            "linear_model/p/weights", "linear_model/bias_weights"]


def test_trainable_and_weight_collections():
    with tf.Graph().as_default():
        ids = fc.categorical_column_with_identity("i", 4)
        fc.input_layer({"i": [[1]]}, [fc.embedding_column(ids, 2)], trainable=False,
                       weight_collections=["mine"])
        fc.linear_model({"i": [[1]]}, [ids], weight_collections=["mine"])
        assert [v.op.name for v in tf.trainable_variables()] == [
            "linear_model/i/weights", "linear_model/bias_weights"]
        assert [v.op.name for v in tf.get_collection("mine")] == [
            "input_layer/i_embedding/embedding_weights", "linear_model/i/weights",
            "linear_model/bias_weights"]


def test_dense_missing_values_and_sparse_inputs_give_the_same_ids():
    col = fc.indicator_column(fc.categorical_column_with_vocabulary_list("c", ["a", "b"]))
    with tf.Graph().as_default(), tf.Session() as sess:
        dense = fc.input_layer({"c": [["a", ""], ["", ""]]}, [col])
        sparse = fc.input_layer({"c": tf.SparseTensor([[0, 0]], ["a"], [2, 2])}, [col])
        a, b = sess.run([dense, sparse])
    np.testing.assert_array_equal(a, [[1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(a, b)


def test_vector_features_are_one_value_per_example():
    ids = fc.categorical_column_with_identity("i", 3)
    with tf.Graph().as_default(), tf.Session() as sess:
        rank1 = fc.input_layer({"i": tf.SparseTensor([[0], [2]], np.array([2, 1]), [3]),
                                "p": [1.0, 2.0, 3.0]},
                               [fc.indicator_column(ids), fc.numeric_column("p")])
        np.testing.assert_array_equal(sess.run(rank1), [[0, 0, 1, 1], [0, 0, 0, 2], [0, 1, 0, 3]])


def test_features_from_tf_data():
    data = {"c": np.array([b"a", b"b", b"zz"]), "p": np.array([1.0, 2.0, 3.0], np.float32)}
    columns = [fc.numeric_column("p"),
               fc.indicator_column(fc.categorical_column_with_hash_bucket("c", 4))]
    with tf.Graph().as_default(), tf.Session() as sess:
        batch = tf.data.Dataset.from_tensor_slices(data).batch(2).make_one_shot_iterator()
        net = fc.input_layer(batch.get_next(), columns)
        # TF's buckets of "a", "b", "zz" among 4: 3, 2, 2.
        np.testing.assert_array_equal(sess.run(net), [[0, 0, 0, 1, 1], [0, 0, 1, 0, 2]])
        np.testing.assert_array_equal(sess.run(net), [[0, 0, 1, 0, 3]])


def test_id_making_ops_ship_to_other_tasks_as_plain_data():
    columns = [fc.indicator_column(fc.crossed_column(
                   [fc.bucketized_column(fc.numeric_column("price"), [0.0, 2.0]), "word"], 13)),
               fc.indicator_column(fc.categorical_column_with_vocabulary_list(
                   "word", ["the", "cat"], num_oov_buckets=2)),
               fc.indicator_column(fc.categorical_column_with_vocabulary_list("num", [10, 20])),
               fc.indicator_column(fc.categorical_column_with_hash_bucket("uid", 5, tf.int64))]
    with tf.Graph().as_default() as graph, tf.Session() as sess:
        net = fc.input_layer(make.features(tf), columns)
        want = sess.run(net)
        graph_def = msgpack.unpackb(msgpack.packb(graph.as_graph_def()))
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.import_graph_def(graph_def, name="")
        np.testing.assert_array_equal(sess.run(net.name), want)


def test_building_mistakes_are_explained():
    ids = fc.categorical_column_with_identity("i", 3)
    with pytest.raises(ValueError, match="must be a _DenseColumn"):
        fc.input_layer({"i": [[1]]}, [ids])
    with pytest.raises(ValueError, match="Duplicate feature column name"):
        fc.input_layer({"i": [[1]]}, [fc.indicator_column(ids), fc.indicator_column(ids)])
    with pytest.raises(ValueError, match="boundaries must be a sorted list"):
        fc.bucketized_column(fc.numeric_column("x"), [2.0, 1.0])
    with pytest.raises(ValueError, match="not supported for crossing"):
        fc.crossed_column([fc.categorical_column_with_hash_bucket("a", 3), "b"], 5)
    with pytest.raises(ValueError, match="Duplicate keys in vocabulary_list"):
        fc.categorical_column_with_vocabulary_list("v", ["a", "a"])
    with pytest.raises(ValueError, match="Can't specify both default_value"):
        fc.categorical_column_with_vocabulary_list("v", ["a"], default_value=0, num_oov_buckets=1)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Feature q is not in features"):
        fc.input_layer({"i": [[1]]}, [fc.numeric_column("q")])


# -- training -------------------------------------------------------------------------------------
def _train_ctr(session, partitioner=None, device=None):
    with tf.Graph().as_default():
        with tf.device(device):
            loss, train_op = make.ctr_program(tf, partitioner)
        variables = tf.global_variables()
        with session() as sess:
            sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
            make.assign_fixed(tf, sess)
            losses = [sess.run([loss, train_op])[0] for _ in range(make.STEPS)]
            values = sess.run(variables)
    return np.array(losses), {v.op.name: x for v, x in zip(variables, values)}, variables


def _check_training(tag, losses, values):
    np.testing.assert_allclose(losses, EXPECTED[tag + ":losses"], rtol=1e-5)
    expected = _expected(tag + ":var:")
    assert sorted(values) == sorted(expected)
    for name, value in values.items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_wide_and_deep_ctr_model_trains_as_tf():
    losses, values, _ = _train_ctr(tf.Session)
    _check_training("ctr", losses, values)


def test_the_ctr_model_on_a_gpu_with_soft_placement_trains_as_tf(monkeypatch):
    # Ids are made on the host (strings, hashing, vocabularies); embeddings and math on the GPU.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    soft = tf.ConfigProto(allow_soft_placement=True)
    with fake_cupy.installed(num_gpus=1):
        losses, values, _ = _train_ctr(lambda: tf.Session(config=soft), device="/gpu:0")
    _check_training("ctr", losses, values)


def test_partitioned_embeddings_on_two_ps_tasks_train_from_the_worker_as_tf():
    with InProcessCluster({"ps": 2, "worker": 1}) as cluster:
        setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                cluster=cluster.spec)
        losses, values, variables = _train_ctr(
            lambda: tf.Session(cluster.target("worker", 0)), tf.fixed_size_partitioner(2), setter)
    devices = {v.op.name: v.device for v in variables}
    weights = "deep/input_layer/country_embedding/embedding_weights/part_%d"
    assert {devices[weights % 0], devices[weights % 1]} == {"/job:ps/task:0", "/job:ps/task:1"}
    # Each ps applies row updates (IndexedSlices), never a dense gradient of the whole table.
    updates = [op for op in variables[0].graph.get_operations()
               if "Apply" in op.type and "_embedding/" in op.name]
    assert len(updates) == 6 and {op.type for op in updates} == {"SparseApplyAdagrad"}
    assert {op.device for op in updates} == {"/job:ps/task:0", "/job:ps/task:1"}
    _check_training("ctr2", losses, values)
