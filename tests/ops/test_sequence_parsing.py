"""SequenceExample parsing (``tf.parse_single_sequence_example``, ``tf.io.parse_sequence_example``),
``tf.SparseFeature`` and one-Example error messages, against TensorFlow 2.21 (``tf.compat.v1``):
the values, static shapes and messages below were produced there and are written in here."""

import numpy as np
import pytest

import zps as tf

T = tf.train


def run(fetch):
    with tf.Session() as sess:
        return sess.run(fetch)


def run_error(fetch):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(fetch)
    return info.value.message


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def feature(v):
    """bytes -> BytesList, floats -> FloatList, ints (or []) -> Int64List; None: no list set."""
    if v is None:
        return T.Feature()
    if v and isinstance(v[0], bytes):
        return T.Feature(bytes_list=T.BytesList(value=v))
    if v and isinstance(v[0], float):
        return T.Feature(float_list=T.FloatList(value=v))
    return T.Feature(int64_list=T.Int64List(value=v))


def seq(context=None, lists=None):
    s = T.SequenceExample()
    for key, v in (context or {}).items():
        s.context.feature[key].CopyFrom(feature(v))
    for key, rows in (lists or {}).items():
        fl = s.feature_lists.feature_list[key]
        for r in rows:
            fl.feature.add().CopyFrom(feature(r))
    return s.SerializeToString()


def ex(**features):
    return T.Example(features=T.Features(feature={k: feature(v) for k, v in features.items()})
                     ).SerializeToString()


def sparse(value):
    return value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()


def static(t):
    return t.get_shape().as_list() if t.get_shape().ndims is not None else None


S1 = seq({"c": [1, 2], "s": [b"a"]}, {"x": [[1.5], [2.5]], "v": [[1, 2], [], [3]],
                                      "m": [[1, 2], [3, 4]]})
S2 = seq({"c": [3, 4]}, {"x": [[0.5]], "v": [[7]], "m": [[5, 6]]})
CONTEXT = {"c": tf.FixedLenFeature([2], tf.int64), "s": tf.VarLenFeature(tf.string),
           "d": tf.FixedLenFeature([], tf.float32, default_value=9.0)}
SEQUENCE = {"x": tf.FixedLenSequenceFeature([], tf.float32), "v": tf.VarLenFeature(tf.int64),
            "m": tf.FixedLenSequenceFeature([2], tf.int64)}


# -- parse_single_sequence_example -----------------------------------------------------------------
def test_parse_single_sequence_example():
    context, lists = tf.parse_single_sequence_example(S1, CONTEXT, SEQUENCE)
    assert list(context) == ["s", "c", "d"] and list(lists) == ["v", "m", "x"]   # TF's order
    assert static(context["c"]) == [2] and static(context["d"]) == []
    assert static(lists["m"]) == [None, 2] and static(lists["x"]) == [None]
    assert static(context["s"]) == [None] and static(context["s"].indices) == [None, 1]
    assert static(lists["v"]) == [None, None] and static(lists["v"].indices) == [None, 2]
    assert lists["x"].dtype == tf.float32 and lists["v"].dtype == tf.int64
    c, s = run((context, lists))
    assert c["c"].tolist() == [1, 2] and c["c"].dtype == np.int64
    assert c["d"] == np.float32(9.0) and c["d"].dtype == np.float32
    assert sparse(c["s"]) == ([[0]], [b"a"], [1])
    assert s["x"].tolist() == [1.5, 2.5] and s["x"].dtype == np.float32
    assert s["m"].tolist() == [[1, 2], [3, 4]]
    # a VarLenFeature over a feature list: indices [step, i]; an empty step still counts
    assert sparse(s["v"]) == ([[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 2])


def test_only_context_or_only_sequence_and_strings():
    context, lists = tf.parse_single_sequence_example(S1, CONTEXT)
    assert lists == {} and run(context["c"]).tolist() == [1, 2]
    context, lists = tf.parse_single_sequence_example(
        seq(lists={"v": [[b"a"], [b"b", b"c"]]}), sequence_features={
            "v": tf.VarLenFeature(tf.string)})
    assert context == {} and sparse(run(lists["v"])) == ([[0, 0], [1, 0], [1, 1]],
                                                         [b"a", b"b", b"c"], [2, 2])
    # an Example's bytes read as a SequenceExample: its features are the context
    c, _ = tf.parse_single_sequence_example(ex(c=[1, 2]), {"c": CONTEXT["c"]})
    assert run(c["c"]).tolist() == [1, 2]


def test_missing_feature_lists():
    _, lists = tf.parse_single_sequence_example(S1, sequence_features={
        "q": tf.FixedLenSequenceFeature([3], tf.string, allow_missing=True),
        "z": tf.VarLenFeature(tf.float32)})
    out = run(lists)
    assert out["q"].shape == (0, 3) and out["q"].dtype == object
    assert sparse(out["z"]) == ([], [], [0, 0]) and out["z"].indices.shape == (0, 2)
    assert run_error(tf.parse_single_sequence_example(S2, sequence_features={
        "q": tf.FixedLenSequenceFeature([], tf.int64)})[1]["q"]) == (
        "Name: <unknown>, Feature list 'q' is required but could not be found.  Did you mean to "
        "include it in feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?")


def test_single_from_a_placeholder_of_unknown_rank():
    s = tf.placeholder(tf.string)
    context, lists = tf.parse_single_sequence_example(s, CONTEXT, SEQUENCE)
    assert static(context["c"]) == [2] and static(lists["m"]) == [None, 2]
    with tf.Session() as sess:
        assert sess.run(lists["m"], {s: S2}).tolist() == [[5, 6]]


# -- parse_sequence_example ------------------------------------------------------------------------
def test_parse_sequence_example_batch():
    context, lists, lengths = tf.io.parse_sequence_example([S1, S2], CONTEXT, SEQUENCE)
    assert list(lengths) == ["m", "x"]
    assert static(context["c"]) == [2, 2] and static(context["d"]) == [2]
    assert static(lists["m"]) == [2, None, 2] and static(lists["x"]) == [2, None]
    assert static(lengths["m"]) == [2] and lengths["m"].dtype == tf.int64
    assert static(context["s"]) == [None, None] and static(lists["v"]) == [None, None, None]
    assert static(lists["v"].indices) == [None, 3]
    c, s, n = run((context, lists, lengths))
    assert c["c"].tolist() == [[1, 2], [3, 4]] and c["d"].tolist() == [9.0, 9.0]
    assert sparse(c["s"]) == ([[0, 0]], [b"a"], [2, 1])
    # shorter examples padded with 0 to the longest; lengths say how many steps each has
    assert s["m"].tolist() == [[[1, 2], [3, 4]], [[5, 6], [0, 0]]]
    assert s["x"].tolist() == [[1.5, 2.5], [0.5, 0.0]] and s["x"].dtype == np.float32
    assert n["m"].tolist() == [2, 1] and n["x"].tolist() == [2, 1] and n["m"].dtype == np.int64
    assert sparse(s["v"]) == ([[0, 0, 0], [0, 0, 1], [0, 2, 0], [1, 0, 0]], [1, 2, 3, 7],
                              [2, 3, 2])


def test_batch_padding_missing_and_empty_lists():
    _, s, n = run(tf.io.parse_sequence_example(
        [seq(lists={"s": [[b"a"], [b"b"]]}), seq(lists={"s": [[b"c"]]})],
        sequence_features={"s": tf.FixedLenSequenceFeature([], tf.string)}))
    assert s["s"].tolist() == [[b"a", b"b"], [b"c", b""]] and n["s"].tolist() == [2, 1]
    _, s, n = run(tf.io.parse_sequence_example(
        [seq(lists={"m": []}), seq(lists={"m": [[1, 2], [3, 4]]})], sequence_features={
            "m": tf.FixedLenSequenceFeature([2], tf.int64), "v": tf.VarLenFeature(tf.int64)}))
    assert s["m"].tolist() == [[[0, 0], [0, 0]], [[1, 2], [3, 4]]] and n["m"].tolist() == [0, 2]
    assert sparse(s["v"]) == ([], [], [2, 0, 0])
    _, s, _ = run(tf.io.parse_sequence_example(
        [seq(lists={"v": [None, [], [1]]}), seq(lists={"v": [[], []]})],
        sequence_features={"v": tf.VarLenFeature(tf.int64)}))
    assert sparse(s["v"]) == ([[0, 2, 0]], [1], [2, 3, 1])
    _, s, n = run(tf.io.parse_sequence_example([S1, S2], sequence_features={
        "q": tf.FixedLenSequenceFeature([3], tf.int64, allow_missing=True)}))
    assert s["q"].shape == (2, 0, 3) and n["q"].tolist() == [0, 0]


def test_batch_shapes_from_placeholders_and_a_scalar():
    context, lists, lengths = tf.io.parse_sequence_example(
        tf.placeholder(tf.string, [None]), CONTEXT, SEQUENCE)
    assert static(context["c"]) == [None, 2] and static(lists["m"]) == [None, None, 2]
    assert static(lengths["x"]) == [None]
    context, lists, lengths = tf.io.parse_sequence_example(tf.placeholder(tf.string), CONTEXT,
                                                           SEQUENCE)
    assert static(context["c"]) is None and static(lists["v"]) is None
    assert static(lists["v"].indices) == [None, None]
    # a scalar: one SequenceExample, no batch dimension, scalar lengths
    _, lists, lengths = tf.io.parse_sequence_example(S1, sequence_features=SEQUENCE)
    assert static(lengths["m"]) == []
    s, n = run((lists, lengths))
    assert s["m"].tolist() == [[1, 2], [3, 4]] and n["m"] == 2
    assert sparse(s["v"]) == ([[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 2])


RECORD_ERRORS = [
    (lambda: tf.parse_single_sequence_example(S1, {"c": tf.FixedLenFeature([2], tf.float32)}),
     "Name: <unknown>, Context feature: c.  Data types don't match. Expected type: float"),
    (lambda: tf.parse_single_sequence_example(S1, {"c": tf.VarLenFeature(tf.string)},
                                              example_name="nm"),
     "Name: nm, Context feature: c.  Data types don't match. Expected type: string"),
    (lambda: tf.parse_single_sequence_example(S1, sequence_features={
        "v": tf.VarLenFeature(tf.float32)}),
     "Name: <unknown>, Feature list: v, Index: 0.  Data types don't match. Expected type: float"),
    (lambda: tf.io.parse_sequence_example([S2, S1], sequence_features={
        "m": tf.FixedLenSequenceFeature([2], tf.string)}, example_names=["n0", "n1"]),
     "Name: n0, Feature list: m, Index: 0.  Data types don't match. Expected type: string"),
    (lambda: tf.io.parse_sequence_example([S2, S2], sequence_features={
        "q": tf.FixedLenSequenceFeature([], tf.int64)}, example_names=["a", "b"]),
     "Name: a, Feature list 'q' is required but could not be found.  Did you mean to include it "
     "in feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?"),
    # a missing required context feature: TF checks the longest one first
    (lambda: tf.parse_single_sequence_example(S2, {"s2": tf.FixedLenFeature([], tf.string)}),
     "Inconsistent max number of elements for feature s2: expected 1, but found 0"),
    (lambda: tf.io.parse_sequence_example([S1, S2], {"s": tf.FixedLenFeature([1], tf.string)}),
     "Feature: s (data type: string) is required but could not be found."),
    (lambda: tf.parse_single_sequence_example(S1, {"c": tf.FixedLenFeature([3], tf.int64)}),
     "Inconsistent max number of elements for feature c: expected 3, but found 2"),
    (lambda: tf.io.parse_sequence_example([S1, seq({"c": [1]})], {
        "c": tf.FixedLenFeature([2], tf.int64)}, example_names=["n0", "n1"]),
     "Unexpected number of elements in example n1"),
    (lambda: tf.io.parse_sequence_example([S1, seq({"c": [1]})], {
        "c": tf.FixedLenFeature([2], tf.int64, default_value=[0, 0])}),
     "Unexpected number of elements in example <unknown>"),
    # a context Feature with no list set is present (and empty), unlike in parse_example
    (lambda: tf.parse_single_sequence_example(seq({"c": None}), {
        "c": tf.FixedLenFeature([2], tf.int64, default_value=[5, 6])}),
     "Unexpected number of elements in example <unknown>"),
    (lambda: tf.io.parse_sequence_example(tf.constant([], tf.string), {
        "c": tf.FixedLenFeature([2], tf.int64)}),
     "Inconsistent max number of elements for feature c: expected 2, but found 0"),
    (lambda: tf.parse_single_sequence_example(S1, sequence_features={
        "v": tf.FixedLenSequenceFeature([], tf.int64)}),
     "Name: <unknown>, Key: v, Index: 0.  Number of values != expected.  values size: 2 but "
     "output shape: []"),
    (lambda: tf.io.parse_sequence_example([S1, seq(lists={"m": [[1, 2], [3, 4, 5, 6]]})],
                                          sequence_features={"m": SEQUENCE["m"]}),
     "Name: <unknown>, Key: m, Index: 1.  Number of values != expected.  values size: 4 but "
     "output shape: [2]"),
    (lambda: tf.parse_single_sequence_example(seq(lists={"m": [[1, 2], None]}),
                                              sequence_features={"m": SEQUENCE["m"]}),
     "Name: <unknown>, Key: m, Index: 1.  Number of values != expected.  values size: 0 but "
     "output shape: [2]"),
    (lambda: tf.io.parse_sequence_example([seq(lists={"m": [[1, 2, 3]]})],
                                          sequence_features={"m": SEQUENCE["m"]}),
     "Feature list 'm' has an unexpected number of values.  Total values size: 3 is not "
     "consistent with output shape: [?,2]"),
    (lambda: tf.parse_single_sequence_example(b"\xff", {"c": tf.VarLenFeature(tf.int64)}),
     "Invalid protocol message input, example id: <unknown>"),
    (lambda: tf.parse_single_sequence_example(b"\xff", {"c": tf.VarLenFeature(tf.int64)},
                                              example_name="nm"),
     "Invalid protocol message input, example id: nm"),
    (lambda: tf.io.parse_sequence_example([S1, S2], {"c": tf.VarLenFeature(tf.int64)},
                                          example_names=["a"]),
     "example_names must be empty or have the correct number of elements"),
]


@pytest.mark.parametrize("make, message", RECORD_ERRORS)
def test_sequence_errors_at_run_time_are_tfs(make, message):
    parsed = make()
    assert run_error([t for d in parsed for t in d.values()]) == message


def test_sequence_build_errors():
    with pytest.raises(ValueError, match="Both context_features and sequence_features are None"):
        tf.parse_single_sequence_example(S1)
    with pytest.raises(ValueError, match="Both `context_features` and `sequence_features`"):
        tf.io.parse_sequence_example([S1], {}, {})
    with pytest.raises(ValueError, match="Input serialized must be a scalar"):
        tf.parse_single_sequence_example([S1], CONTEXT)
    with pytest.raises(ValueError, match="Shape must be at most rank 1 but is rank 2"):
        tf.io.parse_sequence_example([[S1]], CONTEXT)
    with pytest.raises(ValueError, match=r"feature_list.dense_defaults\[x\] must be None"):
        tf.parse_single_sequence_example(S1, sequence_features={"x": tf.FixedLenSequenceFeature(
            [], tf.float32, allow_missing=True, default_value=1.0)})
    with pytest.raises(ValueError, match="Unsupported FixedLenSequenceFeature .* for key 'c'"):
        tf.parse_single_sequence_example(S1, {"c": tf.FixedLenSequenceFeature([], tf.int64)})
    with pytest.raises(ValueError, match="Unsupported FixedLenFeature .* for key 'm'"):
        tf.parse_single_sequence_example(S1, sequence_features={"m": CONTEXT["c"]})
    with pytest.raises(ValueError, match="Unsupported SparseFeature"):
        tf.parse_single_sequence_example(S1, {"c": tf.SparseFeature("i", "c", tf.int64, 5)})
    with pytest.raises(ValueError, match="First dimension of shape for feature c unknown"):
        tf.parse_single_sequence_example(S1, {"c": tf.FixedLenFeature([None], tf.int64)})
    with pytest.raises(ValueError, match="All dimensions of shape for feature m need to be known"):
        tf.parse_single_sequence_example(S1, sequence_features={
            "m": tf.FixedLenSequenceFeature([None], tf.int64)})
    with pytest.raises(ValueError, match="has 3 elements, but its shape \\[2\\] has 2"):
        tf.parse_single_sequence_example(S1, {"c": tf.FixedLenFeature([2], tf.int64, [1, 2, 3])})
    with pytest.raises(TypeError, match="dtype int32"):
        tf.parse_single_sequence_example(S1, {"c": tf.FixedLenFeature([2], tf.int32)})
    # the same key in the context and the feature lists is two features
    c, s = tf.parse_single_sequence_example(S1, {"c": CONTEXT["c"]}, {"c": SEQUENCE["v"]})
    c, s = run((c, s))
    assert c["c"].tolist() == [1, 2] and sparse(s["c"]) == ([], [], [0, 0])


def test_sequence_examples_through_a_dataset():
    def record(i):
        return seq({"id": [i]}, {"tok": [[j, j + 10] for j in range(i + 1)]})

    records = [record(0), record(1), record(2)]
    ds = tf.data.Dataset.from_tensor_slices(records).map(
        lambda r: tf.parse_single_sequence_example(
            r, {"id": tf.FixedLenFeature([], tf.int64)},
            {"tok": tf.FixedLenSequenceFeature([2], tf.int64), "v": tf.VarLenFeature(tf.int64)}))
    assert ds.output_shapes[1]["tok"].as_list() == [None, 2]
    assert ds.output_classes[1]["v"] is tf.SparseTensor
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = [sess.run(nxt) for _ in range(3)]
    assert [g[0]["id"] for g in got] == [0, 1, 2]
    assert got[2][1]["tok"].tolist() == [[0, 10], [1, 11], [2, 12]]
    assert got[1][1]["v"].dense_shape.tolist() == [0, 0]
    batched = tf.data.Dataset.from_tensor_slices(records).batch(2).map(
        lambda r: tf.io.parse_sequence_example(r, sequence_features={
            "tok": tf.FixedLenSequenceFeature([2], tf.int64)}))
    nxt = batched.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        _, s, n = sess.run(nxt)
    assert s["tok"].tolist() == [[[0, 10], [0, 0]], [[0, 10], [1, 11]]] and n["tok"].tolist() == \
        [1, 2]


# -- SparseFeature ---------------------------------------------------------------------------------
E1 = ex(val=[0.5, -1.0, 2.0], ix0=[3, 1, 3], ix1=[1, 0, 0], ix=[4, 0, 2])
E2 = ex(val=[7.0], ix0=[0], ix1=[2], ix=[1])
E3 = ex(other=[1])
ONE = {"sp": tf.SparseFeature("ix", "val", tf.float32, 5)}
TWO = {"sp": tf.io.SparseFeature(["ix0", "ix1"], "val", tf.float32, [4, 3])}


def test_sparse_feature():
    parsed = tf.parse_example([E1, E2, E3], ONE)
    assert list(parsed) == ["sp"] and static(parsed["sp"]) == [None, 5]   # index/value keys gone
    assert sparse(run(parsed["sp"])) == ([[0, 0], [0, 2], [0, 4], [1, 1]], [-1.0, 2.0, 0.5, 7.0],
                                         [3, 5])
    parsed = tf.parse_example([E1, E2, E3], TWO)
    assert static(parsed["sp"]) == [None, 4, 3] and static(parsed["sp"].indices) == [None, 3]
    assert sparse(run(parsed["sp"])) == ([[0, 1, 0], [0, 3, 0], [0, 3, 1], [1, 0, 2]],
                                         [-1.0, 2.0, 0.5, 7.0], [3, 4, 3])
    # already_sorted: the values stay in the order of the Example
    unsorted = tf.parse_example([E1, E2], {"sp": tf.io.SparseFeature(
        ["ix0", "ix1"], "val", tf.float32, [4, 3], already_sorted=True)})["sp"]
    assert sparse(run(unsorted)) == ([[0, 3, 1], [0, 1, 0], [0, 3, 0], [1, 0, 2]],
                                     [0.5, -1.0, 2.0, 7.0], [2, 4, 3])


def test_sparse_feature_single_example():
    sp = tf.parse_single_example(E1, ONE)["sp"]
    assert static(sp) == [5] and static(sp.indices) == [None, 1]
    assert sparse(run(sp)) == ([[0], [2], [4]], [-1.0, 2.0, 0.5], [5])
    sp = tf.parse_single_example(E1, TWO)["sp"]
    assert static(sp) == [4, 3] and sparse(run(sp)) == ([[1, 0], [3, 0], [3, 1]],
                                                        [-1.0, 2.0, 0.5], [4, 3])
    missing = run(tf.parse_single_example(E3, TWO)["sp"])
    assert sparse(missing) == ([], [], [4, 3]) and missing.indices.shape == (0, 2)
    assert sparse(run(tf.parse_single_example(E1, {"sp": tf.SparseFeature(
        ["ix"], "val", tf.float32, [5])})["sp"])) == ([[0], [2], [4]], [-1.0, 2.0, 0.5], [5])


def test_sparse_feature_sizes_and_other_features():
    sp = tf.parse_example([E1, E2], {"sp": tf.SparseFeature("ix", "val", tf.float32,
                                                            tf.constant(9))})["sp"]
    assert static(sp) == [None, 9] and run(sp).dense_shape.tolist() == [2, 9]
    sp = tf.parse_example(tf.placeholder_with_default([E1, E2], None), ONE)["sp"]
    assert static(sp) is None and run(sp).dense_shape.tolist() == [2, 5]
    both = tf.parse_example([E1, E2], {"sp": ONE["sp"], "val": tf.VarLenFeature(tf.float32)})
    assert list(both) == ["val", "sp"] and static(both["val"]) == [None, None]
    out = run(both)
    assert sparse(out["val"]) == ([[0, 0], [0, 1], [0, 2], [1, 0]], [0.5, -1.0, 2.0, 7.0],
                                  [2, 3])
    ints = run(tf.parse_example([ex(val=[b"a", b"b"], ix=[1, 0])], {
        "sp": tf.SparseFeature("ix", "val", tf.string, 2)})["sp"])
    assert sparse(ints) == ([[0, 0], [0, 1]], [b"b", b"a"], [1, 2])
    # positions are not checked (as TF): out of range, negative and repeated ones pass through
    odd = run(tf.parse_example([ex(val=[1.0, 2.0, 3.0], ix=[7, -1, 7])], ONE)["sp"])
    assert sparse(odd) == ([[0, -1], [0, 7], [0, 7]], [2.0, 1.0, 3.0], [1, 5])


@pytest.mark.parametrize("make, message", [
    (lambda: tf.parse_example([ex(val=[1.0, 2.0], ix=[1])], ONE),
     "Number of elements in indices (1) and values (2) do not match"),
    (lambda: tf.parse_example([ex(val=[1.0], ix=[1, 2])], ONE),
     "Number of elements in indices (2) and values (1) do not match"),
    (lambda: tf.parse_example([ex(val=[1.0], ix0=[1, 2], ix1=[0])], TWO),
     "ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [2,1] vs. shape[2] = [1,1]"),
    (lambda: tf.parse_single_example(ex(val=[1.0], ix0=[1], ix1=[0, 1]), TWO),
     "ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [1,0] vs. shape[2] = [2,1]"),
    (lambda: tf.parse_example([ex(val=[1.0], ix=[1.0])], ONE),
     "Name: <unknown>, Key: ix, Index: 0.  Data types don't match. Expected type: int64, Actual "
     "type: float"),
    (lambda: tf.parse_example([ex(val=[1], ix=[1])], ONE),
     "Name: <unknown>, Key: val, Index: 0.  Data types don't match. Expected type: float, Actual "
     "type: int64"),
])
def test_sparse_feature_errors_at_run_time(make, message):
    assert run_error(make()["sp"]) == message


def test_sparse_feature_build_errors():
    def parse(spec, **more):
        return tf.parse_example([E1], dict(sp=spec, **more))

    with pytest.raises(ValueError, match="Missing index_key for SparseFeature"):
        parse(tf.SparseFeature(None, "val", tf.float32, 5))
    with pytest.raises(ValueError, match="Missing value_key for SparseFeature"):
        parse(tf.SparseFeature("ix", "", tf.float32, 5))
    with pytest.raises(ValueError, match="Missing type for feature sp"):
        parse(tf.SparseFeature("ix", "val", None, 5))
    with pytest.raises(TypeError, match="has to be a list of Tensors or Python ints"):
        parse(tf.SparseFeature(["ix0", "ix1"], "val", tf.float32, 5))
    with pytest.raises(TypeError, match="has to be a Tensor or Python int. Found <class 'list'>"):
        parse(tf.SparseFeature("ix", "val", tf.float32, [5]))
    with pytest.raises(ValueError, match="have to have equal lengths"):
        parse(tf.SparseFeature(["ix0", "ix1"], "val", tf.float32, [5]))
    with pytest.raises(ValueError, match="Conflicting type .* for feature val"):
        parse(ONE["sp"], val=tf.VarLenFeature(tf.string))
    with pytest.raises(ValueError, match="Dense and sparse keys must not intersect"):
        parse(ONE["sp"], ix=tf.FixedLenFeature([3], tf.int64))


def test_sparse_feature_is_tf1s_namedtuple():
    spec = tf.SparseFeature("ix", "val", tf.float32, 5)
    assert spec._fields == ("index_key", "value_key", "dtype", "size", "already_sorted")
    assert repr(spec) == ("SparseFeature(index_key='ix', value_key='val', dtype=tf.float32, "
                          "size=5, already_sorted=False)")
    assert tf.io.SparseFeature is tf.SparseFeature
    assert tf.io.parse_single_sequence_example is tf.parse_single_sequence_example
    assert not hasattr(tf, "parse_sequence_example")      # tf.io only, as in TF1


def test_sparse_features_through_a_dataset():
    ds = tf.data.Dataset.from_tensors(E1).repeat(2).map(
        lambda r: tf.parse_single_example(r, TWO))
    assert ds.output_shapes["sp"].as_list() == [4, 3]
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sparse(sess.run(nxt)["sp"]) == ([[1, 0], [3, 0], [3, 1]], [-1.0, 2.0, 0.5],
                                               [4, 3])


# -- one Example: TF's messages (FastParseSingleExample) -------------------------------------------
@pytest.mark.parametrize("make, message", [
    (lambda: tf.parse_single_example(ex(a=[1, 2, 3]), {
        "a": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True)}),
     "Error while parsing feature with key a: number of elements should be divisible by 2, "
     "found 3 instead"),
    (lambda: tf.parse_example(ex(a=[1, 2, 3]), {
        "a": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True)}),
     "Error while parsing feature with key a: number of elements should be divisible by 2, "
     "found 3 instead"),
    (lambda: tf.parse_single_example(ex(a=[1, 2]), {"a": tf.FixedLenFeature([3], tf.int64)},
                                     example_names="nm"),
     "Key: a.  Can't parse serialized Example: Some int64_list slice was not parsed."),
    (lambda: tf.parse_single_example(ex(a=[1.0, 2.0]), {"a": tf.FixedLenFeature([3], tf.float32)}),
     "Key: a.  Can't parse serialized Example: Some float_list slice was not parsed."),
    (lambda: tf.parse_single_example(ex(a=[b"x"]), {"a": tf.FixedLenFeature([2], tf.string)}),
     "Key: a.  Can't parse serialized Example: Some bytes_list slice was not parsed."),
    (lambda: tf.parse_single_example(ex(a=[1.0]), {
        "a": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}, example_names="nm"),
     "Key: a.  Data types don't match. Data type: float but expected type: int64"),
    (lambda: tf.parse_single_example(ex(a=[1]), {"a": tf.VarLenFeature(tf.float32)},
                                     example_names="nm"),
     "Key: a.  Data types don't match. Expected type: float, Actual type: int64"),
    (lambda: tf.parse_single_example(ex(a=[1]), {"b": tf.FixedLenFeature([], tf.float32)},
                                     example_names="nm"),
     "Feature: b (data type: float) is required but could not be found."),
])
def test_single_example_messages_are_tfs(make, message):
    assert run_error(list(make().values())) == message


def test_single_example_sequence_feature():
    out = run(tf.parse_single_example(ex(a=[1, 2, 3, 4], e=None), {
        "a": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
        "b": tf.FixedLenSequenceFeature([2, 1], tf.string, allow_missing=True),
        "e": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}))
    assert out["a"].tolist() == [[1, 2], [3, 4]]
    assert out["b"].shape == (0, 2, 1) and out["e"].shape == (0, 2)
    assert out["e"].dtype == np.float32
