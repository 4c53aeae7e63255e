"""tf.data datasets: values and order, static types and shapes, nested structures.

The expected values of deterministic pipelines were produced by TensorFlow 2.21
(``tensorflow.compat.v1`` with v2 behavior disabled) running the same programs.
"""

import gzip

import numpy as np
import pytest

import zps as tf

D = tf.data.Dataset


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def _all(ds):
    """Every element of ``ds`` (a one-shot iterator read to its end), as Python values."""
    x = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as sess:
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            while True:
                out.append(_py(sess.run(x)))
                assert len(out) < 1000, "the dataset does not end"
    return out


def _py(v):
    if isinstance(v, dict):
        return {k: _py(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return tuple(_py(x) for x in v)
    return np.asarray(v).tolist()


# -- values and order, as TF1 computes them ------------------------------------------------------
@pytest.mark.parametrize("make, expected", [
    (lambda: D.from_tensor_slices([1, 2, 3, 4, 5]).map(lambda x: x * 2).batch(2),
     [[2, 4], [6, 8], [10]]),
    (lambda: D.range(10).filter(lambda x: tf.equal(x % 3, 0)).repeat(2).take(5),
     [0, 3, 6, 9, 0]),
    (lambda: D.zip((D.range(3), D.from_tensor_slices(["a", "b", "c", "d"]))),
     [(0, b"a"), (1, b"b"), (2, b"c")]),
    (lambda: D.range(3).concatenate(D.range(10, 12)).skip(1), [1, 2, 10, 11]),
    (lambda: D.range(1, 5).map(lambda x: tf.fill([x], x)).padded_batch(2, padded_shapes=[None]),
     [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]),
    (lambda: D.range(4).flat_map(lambda x: D.from_tensors(x).repeat(x)), [1, 2, 2, 3, 3, 3]),
    (lambda: D.range(7).batch(3).map(lambda x: tf.reduce_sum(x)), [3, 12, 6]),
    (lambda: D.range(5).cache().repeat(2), [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]),
    (lambda: D.from_tensors(([1, 2], [3.0])).repeat(2), [([1, 2], [3.0]), ([1, 2], [3.0])]),
    (lambda: D.range(10, 0, -3), [10, 7, 4, 1]),
    (lambda: D.range(3).map(lambda x: (x, tf.cast(x, tf.float32) / 2)).batch(2),
     [([0, 1], [0.0, 0.5]), ([2], [1.0])]),
    (lambda: D.range(3).take(-1).skip(0).prefetch(1), [0, 1, 2]),
    (lambda: D.range(3).skip(-1), []),
    (lambda: D.range(0).repeat(), []),
    (lambda: D.range(5).batch(2, drop_remainder=True), [[0, 1], [2, 3]]),
    (lambda: D.range(4).apply(lambda ds: ds.map(lambda x: -x)), [0, -1, -2, -3]),
], ids=["map-batch", "filter-repeat-take", "zip", "concatenate-skip", "padded_batch", "flat_map",
        "batch-map", "cache-repeat", "from_tensors", "range-step", "map-tuple", "take-skip-all",
        "skip-all", "repeat-empty", "drop_remainder", "apply"])
def test_values_and_order_match_tf1(make, expected):
    assert _all(make()) == expected


def test_dict_elements_and_their_static_shapes():
    ds = D.from_tensor_slices({"a": [[1, 2], [3, 4], [5, 6]], "b": [1.0, 2.0, 3.0]})
    assert ds.output_types == {"a": tf.int32, "b": tf.float32}
    assert ds.output_shapes["a"].as_list() == [2] and ds.output_shapes["b"].as_list() == []
    assert ds.output_classes == {"a": tf.Tensor, "b": tf.Tensor}
    batched = ds.batch(2, drop_remainder=True)
    assert batched.output_shapes["a"].as_list() == [2, 2]
    assert _all(batched) == [{"a": [[1, 2], [3, 4]], "b": [1.0, 2.0]}]


def test_static_shapes_of_batches_and_maps():
    ds = D.from_tensor_slices(np.zeros((10, 3), np.float32))
    assert ds.batch(4).output_shapes.as_list() == [None, 3]
    assert ds.batch(4, drop_remainder=True).output_shapes.as_list() == [4, 3]
    mapped = ds.map(lambda x: (tf.reduce_sum(x), tf.cast(x, tf.int64)))
    assert mapped.output_types == (tf.float32, tf.int64)
    assert [s.as_list() for s in mapped.output_shapes] == [[], [3]]
    x, y = mapped.batch(2).make_one_shot_iterator().get_next()
    assert x.get_shape().as_list() == [None] and y.get_shape().as_list() == [None, 3]
    assert D.range(3).padded_batch(2, []).output_shapes.as_list() == [None]


def test_map_returning_a_list_gives_a_tuple_as_in_tf1():
    assert _all(D.range(2).map(lambda x: [x, x + 1])) == [(0, 1), (1, 2)]


def test_namedtuple_and_nested_elements():
    import collections
    Point = collections.namedtuple("Point", ["x", "y"])
    ds = D.from_tensor_slices(Point([1, 2], ([3, 4], {"z": [5.0, 6.0]})))
    ds = ds.map(lambda p: Point(p.x * 10, p.y))   # a namedtuple is one argument, as in TF1
    assert _all(ds) == [Point(10, (3, {"z": 5.0})), Point(20, (4, {"z": 6.0}))]


def test_map_and_filter_capture_outer_tensors_and_use_tf_ops():
    scale = tf.constant(3, tf.int64)
    ds = D.range(6).filter(lambda x: tf.logical_not(tf.equal(x, scale))).map(
        lambda x: tf.maximum(x * scale, 4))
    assert _all(ds) == [4, 4, 6, 12, 15]


def test_strings_map_and_batch():
    ds = D.from_tensor_slices(["a", "bb", "ccc"]).map(lambda s: (s, tf.size(s))).batch(2)
    assert _all(ds) == [([b"a", b"bb"], [1, 1]), ([b"ccc"], [1])]


def test_shuffle_is_a_permutation_reproducible_with_a_seed():
    def order(reshuffle=None, op_seed=7):
        with tf.Graph().as_default():
            tf.set_random_seed(5)
            return _all(D.range(20).shuffle(5, seed=op_seed,
                                            reshuffle_each_iteration=reshuffle).repeat(2))
    first = order()
    assert first == order()
    assert sorted(first[:20]) == list(range(20)) and sorted(first[20:]) == list(range(20))
    assert first[:20] != list(range(20))
    assert first[:20] != first[20:]                   # each epoch is shuffled anew
    fixed = order(reshuffle=False)
    assert fixed[:20] == fixed[20:]
    assert order(op_seed=8) != first


def test_text_line_dataset_reads_files_in_order(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\r\n\nthree")
    with gzip.open(tmp_path / "b.txt.gz", "wb") as f:
        f.write(b"four\n")
    assert _all(tf.data.TextLineDataset(str(tmp_path / "a.txt"))) == [b"one", b"two", b"", b"three"]
    assert _all(tf.data.TextLineDataset([str(tmp_path / "b.txt.gz")], compression_type="GZIP")) \
        == [b"four"]


# Bytes TF's TFRecordWriter wrote for the records b"hello" and b"".
TF_RECORDS = bytes.fromhex("0500000000000000eab2043e68656c6c6fbb1f1c19"
                           "000000000000000029039807d8ea82a2")


def test_tfrecord_dataset_reads_files_tf_wrote(tmp_path):
    (tmp_path / "tf").write_bytes(TF_RECORDS)
    with tf.python_io.TFRecordWriter(str(tmp_path / "more.gz"),
                                     tf.python_io.TFRecordOptions("GZIP")) as w:
        w.write(b"x" * 300)
    assert _all(tf.data.TFRecordDataset([str(tmp_path / "tf")])) == [b"hello", b""]
    assert _all(tf.data.TFRecordDataset(str(tmp_path / "more.gz"), compression_type="GZIP")) \
        == [b"x" * 300]


def test_unknown_compression_type_is_rejected_when_the_dataset_is_built():
    with pytest.raises(ValueError, match="compression_type 'LZ4'"):
        tf.data.TextLineDataset("f", compression_type="LZ4")


def test_corrupted_tfrecord_is_data_loss(tmp_path):
    (tmp_path / "bad").write_bytes(TF_RECORDS[:15] + b"J" + TF_RECORDS[16:])
    x = tf.data.TFRecordDataset(str(tmp_path / "bad")).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.DataLossError, match="checksum"):
        sess.run(x)


def test_missing_file_is_not_found(tmp_path):
    x = tf.data.TextLineDataset(str(tmp_path / "nope.txt")).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match="nope.txt"):
        sess.run(x)


# -- errors at build time and at run time --------------------------------------------------------
def test_map_fn_returning_non_tensors_is_a_clear_error():
    with pytest.raises(TypeError, match="Dataset.map.*returned <object"):
        D.range(3).map(lambda x: object())
    with pytest.raises(ValueError, match="returned None"):
        D.range(3).map(lambda x: None)
    with pytest.raises(TypeError, match="Operation"):
        D.range(3).map(lambda x: tf.no_op())
    with pytest.raises(TypeError, match="must return a Dataset"):
        D.range(3).flat_map(lambda x: x)


def test_filter_predicate_must_be_a_scalar_bool():
    with pytest.raises(ValueError, match="scalar boolean"):
        D.range(3).filter(lambda x: x)


def test_batching_elements_of_different_shapes_fails_naming_them():
    x = D.range(1, 4).map(lambda n: tf.fill([n], n)).batch(3).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="component 0.*shape \\[1\\].*shape \\[2\\]"):
        sess.run(x)


def test_from_tensor_slices_needs_matching_first_dimensions():
    with pytest.raises(ValueError, match="dimension 0"):
        D.from_tensor_slices(([1, 2], [1, 2, 3]))
    with pytest.raises(ValueError, match="scalar"):
        D.from_tensor_slices(3)


def test_concatenate_needs_the_same_types():
    with pytest.raises(TypeError, match="same structure and types"):
        D.range(3).concatenate(D.from_tensor_slices([1.0]))


def test_a_dataset_op_error_in_the_map_fn_reaches_the_caller():
    x = D.from_tensor_slices([[1.0, 2.0]]).map(
        lambda v: tf.reshape(v, tf.size(v, out_type=tf.int32)[None] + 1)).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(x)


# -- map before batch: applied to whole batches where that gives the same values ----------------
def _kinds(ds):
    return [node["kind"] for node in ds._plan()[0]["nodes"]]


def test_an_elementwise_map_runs_once_per_batch_with_the_same_values():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    labels = np.arange(6, dtype=np.int64)
    ds = D.from_tensor_slices((x, labels)).map(lambda f, y: (f * 2.0 + 1.0, y)) \
        .map(lambda f, y: (tf.maximum(f, 5.0), tf.cast(y, tf.float32) / 2)).batch(4)
    assert _kinds(ds) == ["slices", "batch", "map", "map"]
    assert [s.as_list() for s in ds.output_shapes] == [[None, 2], [None]]
    expected = [(np.maximum(x[i:i + 4] * 2 + 1, 5).tolist(), (labels[i:i + 4] / 2).tolist())
                for i in (0, 4)]
    assert _all(ds) == expected


@pytest.mark.parametrize("fn", [
    lambda v: tf.reduce_sum(v),                  # not elementwise
    lambda v: v + tf.constant([1.0, 2.0]),       # broadcasts a vector against the element
    lambda v: v * tf.random_uniform([]),         # draws once per element
    lambda v: tf.exp(v),                         # rounding of vectorized loops may differ
    lambda v: (v, tf.constant(1.0)),             # an output not computed from the element
], ids=["reduce", "broadcast", "random", "exp", "constant-output"])
def test_other_maps_run_per_element(fn):
    ds = D.from_tensor_slices(np.ones((4, 2), np.float32)).map(fn).batch(2)
    assert _kinds(ds) == ["slices", "map", "batch"]
    assert len(_all(ds)) == 2


# -- from_generator ------------------------------------------------------------------------------
def _pairs():
    for i in range(3):
        yield i, [float(i)] * i


def test_from_generator_yields_elements_of_the_given_types_and_shapes():
    ds = D.from_generator(_pairs, (tf.int64, tf.float32), (tf.TensorShape([]), [None]))
    assert ds.output_types == (tf.int64, tf.float32)
    assert [s.as_list() for s in ds.output_shapes] == [[], [None]]
    assert _all(ds) == [(0, []), (1, [1.0]), (2, [2.0, 2.0])]
    unknown = D.from_generator(_pairs, (tf.int64, tf.float32))
    assert [s.ndims for s in unknown.output_shapes] == [None, None]
    assert _all(unknown.map(lambda i, x: tf.size(x))) == [0, 1, 2]


def test_from_generator_dicts_strings_and_args_as_numpy_values():
    seen = []

    def gen(n, name):
        seen.append((type(n), n, name))
        for _ in range(n):
            yield {"name": name, "words": np.array(["a", "bc"]), "n": n}
    ds = D.from_generator(gen, {"name": tf.string, "words": tf.string, "n": tf.int32},
                          {"name": [], "words": [2], "n": []}, args=(2, "ab"))
    assert _all(ds) == [{"name": b"ab", "words": [b"a", b"bc"], "n": 2}] * 2
    assert seen == [(np.int32, 2, b"ab")]   # as TF: a numpy scalar and bytes


def test_from_generator_is_called_again_for_each_epoch_and_initialization():
    calls = []

    def gen(n):
        calls.append(int(n))
        yield from range(n)
    n = tf.placeholder(tf.int64, [])
    it = D.from_generator(gen, tf.int64, [], args=(n,)).repeat(2).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {n: 2})
        assert [sess.run(x) for _ in range(4)] == [0, 1, 0, 1]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(x)
        sess.run(it.initializer, {n: 3})
        assert sess.run(x) == 0
    assert calls == [2, 2, 3]


@pytest.mark.parametrize("values, types, shapes, error, message", [
    ([[1.0, 2.0, 3.0]], tf.float32, [2], tf.errors.InvalidArgumentError,
     r"`generator` yielded an element of shape \(3,\) where an element of shape \(2,\) was "
     r"expected\."),
    ([[1, 2]], (tf.int64, tf.int64), ([], []), tf.errors.InvalidArgumentError,
     r"did not match the expected structure\. The expected structure was \(tf.int64, "
     r"tf.int64\), but the yielded element was \[1, 2\]\."),
    ([{"a": 1, "b": 2}], {"a": tf.int64}, {"a": []}, tf.errors.InvalidArgumentError,
     "did not match the expected structure"),
    (["x"], tf.int64, [], tf.errors.InvalidArgumentError,
     "could not be converted to the expected type. The expected type was int64, but the "
     "yielded element was x."),
    ([1], tf.string, [], tf.errors.InvalidArgumentError, "expected type was string"),
], ids=["shape", "list-for-tuple", "dict-keys", "int64", "string"])
def test_from_generator_checks_what_it_yields_as_tf(values, types, shapes, error, message):
    x = D.from_generator(lambda: iter(values), types, shapes).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(error, match=message):
        sess.run(x)


def test_from_generator_converts_as_numpy_does_as_tf1():
    assert _all(D.from_generator(lambda: iter([1.5, np.int32(2)]), tf.int64, [])) == [1, 2]
    assert _all(D.from_generator(lambda: iter([1, 0]), tf.bool, [])) == [True, False]


def test_errors_raised_by_the_generator_surface_after_its_elements():
    def gen(exc):
        yield 1
        raise exc("boom")
    for exc, error in ((ValueError, tf.errors.InvalidArgumentError),
                       (KeyError, tf.errors.UnknownError)):
        x = D.from_generator(lambda exc=exc: gen(exc), tf.int64).make_one_shot_iterator()
        x = x.get_next()
        with tf.Session() as sess:
            assert sess.run(x) == 1
            with pytest.raises(error, match="`generator` <lambda> raised %s: .*boom"
                               % exc.__name__):
                sess.run(x)
            with pytest.raises(tf.errors.OutOfRangeError):   # a generator ends at its error
                sess.run(x)


def test_from_generator_arguments_are_checked_when_built():
    with pytest.raises(TypeError, match="`generator` must be a Python callable."):
        D.from_generator(3, tf.int64)
    with pytest.raises(TypeError, match="`args` must be a tuple"):
        D.from_generator(_pairs, tf.int64, args=3)
    with pytest.raises(TypeError, match="structure of output_types"):
        D.from_generator(_pairs, (tf.int64, tf.float32), [[]])


# -- interleave ----------------------------------------------------------------------------------
# (sizes of the input elements, cycle_length, block_length) -> TF 2.21's order of the elements of
# Dataset.range(10 * x, 11 * x) interleaved; empty datasets and exhausted slots included.
INTERLEAVED = [
    ([4, 0, 2, 0, 3, 5, 1], 2, 1, [40, 41, 20, 42, 21, 43, 30, 50, 31, 51, 32, 52, 53, 10, 54]),
    ([1, 5, 0, 0, 0, 2, 3, 4], 2, 1,
     [10, 50, 51, 52, 53, 54, 20, 21, 30, 31, 40, 32, 41, 42, 43]),
    ([4, 0, 2, 0, 3, 5, 1], 3, 2, [40, 41, 20, 21, 42, 43, 30, 31, 50, 51, 10, 32, 52, 53, 54]),
    ([1, 5, 0, 0, 0, 2, 3, 4], 3, 2,
     [10, 50, 51, 52, 53, 20, 21, 54, 30, 31, 40, 41, 32, 42, 43]),
    ([0, 0, 3, 1, 0, 2], 2, 3, [30, 31, 32, 10, 20, 21]),
    ([4, 0, 2, 0, 3, 5, 1], 4, 1, [40, 20, 41, 30, 21, 50, 42, 31, 51, 43, 32, 10, 52, 53, 54]),
    ([1, 5, 0, 0, 0, 2, 3, 4], 4, 1,
     [10, 50, 51, 20, 30, 52, 40, 21, 31, 53, 41, 32, 54, 42, 43]),
    ([3, 0, 0, 0, 0, 2], 4, 1, [30, 31, 20, 32, 21]),
]


@pytest.mark.parametrize("sizes, cycle_length, block_length, expected", INTERLEAVED)
def test_interleave_order_matches_tf(sizes, cycle_length, block_length, expected):
    ds = D.from_tensor_slices(np.array(sizes, np.int64)).interleave(
        lambda x: D.range(x * 10, x * 11), cycle_length, block_length)
    assert _all(ds) == expected


def test_interleave_cycle_length_defaults_to_the_cpu_count(monkeypatch):
    import zps.ops.dataset_ops as dataset_ops
    monkeypatch.setattr(dataset_ops, "_cpu_count", lambda: 3)
    ds = D.range(4).interleave(lambda x: D.from_tensors(x).repeat(2))
    assert _all(ds) == [0, 1, 2, 0, 1, 2, 3, 3]
    assert _all(D.range(3).interleave(lambda x: D.from_tensors(x), tf.data.experimental.AUTOTUNE,
                                      num_parallel_calls=2)) == [0, 1, 2]


def test_interleave_of_structures_with_captured_tensors_and_reinitialization():
    n, k = tf.placeholder(tf.int64, []), tf.constant(100, tf.int64)
    ds = D.range(n).interleave(lambda x: D.range(x).map(lambda y: {"x": x, "y": y + k}),
                               cycle_length=2)
    assert ds.output_types == {"x": tf.int64, "y": tf.int64}
    it = ds.make_initializable_iterator()
    e = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {n: 3})
        assert [_py(sess.run(e)) for _ in range(3)] == \
            [{"x": 1, "y": 100}, {"x": 2, "y": 100}, {"x": 2, "y": 101}]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(e)
        sess.run(it.initializer, {n: 2})
        assert _py(sess.run(e)) == {"x": 1, "y": 100}


def test_interleave_rejects_bad_lengths_and_functions():
    with pytest.raises(TypeError, match="must return a Dataset"):
        D.range(3).interleave(lambda x: x, cycle_length=2)
    for kwargs, message in (({"cycle_length": 0}, "cycle_length must be greater than zero"),
                            ({"cycle_length": 2, "block_length": 0},
                             "block_length must be greater than zero")):
        x = D.range(3).interleave(lambda x: D.from_tensors(x), **kwargs)
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(x.make_one_shot_iterator().get_next())


# -- unbatch, enumerate, list_files --------------------------------------------------------------
def test_unbatch_splits_every_component_along_its_first_dimension():
    ds = D.from_tensor_slices(([[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]])).batch(2)
    un = ds.unbatch()
    assert [s.as_list() for s in un.output_shapes] == [[2], [2]]
    assert _all(un) == [([1, 2], [7, 8]), ([3, 4], [9, 10]), ([5, 6], [11, 12])]
    un = D.from_tensor_slices({"a": [[1, 2]], "b": [[3.0, 4.0]]}).unbatch()
    assert _all(un) == [{"a": 1, "b": 3.0}, {"a": 2, "b": 4.0}]
    with pytest.raises(ValueError, match="Cannot unbatch an input with scalar components."):
        D.range(3).unbatch()


def _py_func_ds(*fns):
    return D.range(3).map(lambda x: tuple(tf.py_func(f, [x], tf.int64) for f in fns))


def test_unbatch_of_unknown_rank_elements_is_checked_when_run():
    un = _py_func_ds(lambda v: np.arange(v)).unbatch()
    assert un.output_shapes[0].ndims is None
    assert _all(un) == [(0,), (0,), (1,)]
    for ds, message in (
            (_py_func_ds(lambda v: np.array(v)), "non-scalar value in each component"),
            (_py_func_ds(lambda v: np.arange(v + 1), lambda v: np.arange(2)),
             "same batch size in each component. Component 0 had size 1 but component 1 had "
             "size, 2")):
        x = ds.unbatch().make_one_shot_iterator().get_next()
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(x)


def test_enumerate_counts_from_start():
    ds = D.from_tensor_slices([5, 6]).enumerate(start=3)
    assert ds.output_types == (tf.int64, tf.int32)
    assert _all(ds) == [(3, 5), (4, 6)]


def test_list_files_sorted_or_shuffled_and_an_error_when_nothing_matches(tmp_path):
    for name in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / name).write_bytes(b"")
    path = str(tmp_path)
    ds = D.list_files(path + "/*.txt", shuffle=False)
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert _all(ds) == [(path + "/a.txt").encode(), (path + "/b.txt").encode()]
    # as TF's MatchingFiles: the matches of all patterns, sorted, repeats kept
    assert [f[len(path):] for f in _all(D.list_files([path + "/*", path + "/a*"], False))] == \
        [b"/a.txt", b"/a.txt", b"/b.txt", b"/c.csv"]
    shuffled = _all(D.list_files(path + "/*", seed=3).repeat(4))
    assert all(sorted(shuffled[i:i + 3]) == sorted(shuffled[:3]) for i in (3, 6, 9))
    assert len({tuple(shuffled[i:i + 3]) for i in (0, 3, 6, 9)}) > 1   # reshuffled each epoch
    x = D.list_files(path + "/*.zzz").make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="No files matched pattern: .*zzz"):
        sess.run(x)
