"""Dataset.window, element_spec, cache(filename), make_csv_dataset, CsvDataset's exclude_cols and
multi-line quoted fields, reduce's empty state.

Expected values were produced by TensorFlow 2.21 (``tensorflow.compat.v1``; CsvDataset's
exclude_cols by TF2's ``tf.data.experimental.CsvDataset``, TF1's has none) running the same
programs.
"""

import collections
import os

import msgpack
import pytest

import zps as tf
from tests.data.test_dataset import _all

D = tf.data.Dataset
E = tf.data.experimental


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


# -- window ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, expected", [
    ((3, 1, 1, True), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]),
    ((3, 1, 1, False), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6], [6]]),
    ((3, 2, 1, False), [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]),
    ((2, 3, 2, False), [[0, 2], [3, 5], [6]]),
    ((3, None, 1, False), [[0, 1, 2], [3, 4, 5], [6]]),
    ((2, 4, 1, False), [[0, 1], [4, 5]]),
    ((3, 1, 2, True), [[0, 2, 4], [1, 3, 5], [2, 4, 6]]),
    ((3, 1, 2, False), [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5], [4, 6], [5], [6]]),
    ((1, 5, 1, False), [[0], [5]]),
])
def test_window_flat_map_batch_matches_tf(args, expected):
    assert _all(D.range(7).window(*args).flat_map(lambda w: w.batch(10))) == expected


def test_window_cardinality_is_tfs():
    r = D.range(7)
    datasets = [r.window(*a) for a in [(3, 1, 1, True), (3, 1, 1, False), (3, 2, 1, False),
                                       (2, 3, 2, False), (2, 4, 1, False), (3, 1, 2, True),
                                       (3, 1, 2, False), (1, 5, 1, False), (8, 1, 1, True)]]
    datasets += [r.repeat().window(2), r.filter(lambda x: True).window(2)]
    counts = tf.Session().run([E.cardinality(d) for d in datasets])
    assert [int(n) for n in counts] == [5, 7, 4, 3, 2, 3, 7, 2, 0, -1, -2]


def test_windows_pass_through_take_skip_repeat_filter_and_map_to_tensors():
    w = D.range(7).window(3, 2)
    ds = w.skip(1).take(2).repeat(2).filter(lambda d: True).flat_map(lambda d: d.batch(5))
    assert _all(ds) == [[2, 3, 4], [4, 5, 6], [2, 3, 4], [4, 5, 6]]
    sums = w.map(lambda d: d.reduce(tf.constant(0, tf.int64), lambda s, x: s + x))
    assert _all(sums) == [3, 9, 15, 6]


@pytest.mark.parametrize("what, make", [
    ("batch", lambda w: w.batch(2)), ("padded_batch", lambda w: w.padded_batch(2)),
    ("unbatch", lambda w: w.unbatch()), ("reduce", lambda w: w.reduce(0, lambda s, x: s)),
    ("zip", lambda w: D.zip((w, w))), ("concatenate", lambda w: w.concatenate(w)),
])
def test_what_zps_cannot_do_with_windows_says_so(what, make):
    with pytest.raises(TypeError, match="%s of a dataset of windows .* is not supported in zps"
                                        % what):
        make(D.range(7).window(3))


def test_window_of_tuples_gives_a_dataset_per_component():
    ds = D.from_tensor_slices((tf.range(5), tf.range(5) * 10)).window(3, shift=1,
                                                                       drop_remainder=True)
    ds = ds.flat_map(lambda a, b: D.zip((a.batch(3), b.batch(3))))
    assert _all(ds) == [([0, 1, 2], [0, 10, 20]), ([1, 2, 3], [10, 20, 30]),
                        ([2, 3, 4], [20, 30, 40])]


def test_window_of_dicts_and_strings_and_interleave():
    ds = D.from_tensor_slices({"x": tf.range(4), "y": tf.range(4) * 2}).window(2)
    ds = ds.flat_map(lambda e: D.zip({"x": e["x"].batch(2), "y": e["y"].batch(2)}))
    assert _all(ds) == [{"x": [0, 1], "y": [0, 2]}, {"x": [2, 3], "y": [4, 6]}]
    ds = D.from_tensor_slices(["a", "b", "c"]).window(2).interleave(lambda w: w, cycle_length=2)
    assert _all(ds) == [b"a", b"c", b"b"]


def test_window_element_spec_is_tfs():
    ds = D.range(7).window(3, 1, 1, True)
    expected = "DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, name=None), TensorShape([]))"
    assert repr(ds.element_spec) == expected
    assert ds.output_types == ds.output_shapes == ds.output_classes == ds.element_spec
    inner = D.from_tensor_slices([[1.0, 2.0]]).window(2).element_spec.element_spec
    assert inner == tf.TensorSpec([2], tf.float32)
    with pytest.raises(TypeError, match="read them with flat_map"):
        ds.make_one_shot_iterator()
    with pytest.raises(TypeError, match="read them with flat_map"):
        ds.make_initializable_iterator()


@pytest.mark.parametrize("args, message", [
    ((0,), "Window size must be greater than zero."),
    ((-1,), "Window size must be greater than zero."),
    ((2, 0), "Window shift must be greater than zero."),
    ((2, 1, 0), "Window stride must be greater than zero."),
])
def test_window_errors_are_tfs(args, message):
    ds = D.range(7).window(*args).flat_map(lambda w: w.batch(2))
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _all(ds)


def test_window_of_ragged_elements_is_a_clear_error():
    ds = D.range(1, 4).map(lambda x: tf.fill([x], x)).window(2).flat_map(lambda w: w)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have one shape"):
        _all(ds)


# -- element_spec --------------------------------------------------------------------------------
def test_element_spec_matches_output_types_and_shapes():
    ds = D.from_tensor_slices({"x": [[1.0, 2.0]], "n": ["a"]}).batch(2)
    assert ds.element_spec == {"n": tf.TensorSpec([None], tf.string),
                               "x": tf.TensorSpec([None, 2], tf.float32)}
    assert repr(ds.element_spec["x"]) == "TensorSpec(shape=(?, 2), dtype=tf.float32, name=None)"
    sparse = D.range(3).map(lambda x: tf.SparseTensor([[0]], [x], [3])).element_spec
    assert repr(sparse) == "SparseTensorSpec(TensorShape([3]), tf.int64)"
    assert isinstance(sparse, tf.SparseTensorSpec)
    spec = tf.TensorSpec([None, 3], tf.float32)
    assert spec.is_compatible_with(tf.zeros([2, 3]))
    assert not spec.is_compatible_with(tf.zeros([2, 4]))


# -- cache(filename) ----------------------------------------------------------------------------
def _counted(n, calls):
    def count(x):
        calls.append(int(x))
        return x
    return D.range(n).map(lambda x: (tf.py_func(count, [x], tf.int64), tf.as_string(x),
                                     tf.fill([2], tf.cast(x, tf.float32))))


def _rows(ds):
    return [tuple(e) for e in _all(ds)]


ROWS = [(0, b"0", [0.0, 0.0]), (1, b"1", [1.0, 1.0]), (2, b"2", [2.0, 2.0])]


def test_file_cache_is_read_by_later_passes_and_iterators(tmp_path):
    calls, path = [], str(tmp_path / "c")
    ds = _counted(3, calls).cache(path)
    assert _rows(ds.repeat(2)) == ROWS * 2 and calls == [0, 1, 2]
    assert os.listdir(tmp_path) == ["c.zpscache"]
    assert _rows(ds) == ROWS and calls == [0, 1, 2]   # a new iterator: read from the file
    with open(path + ".zpscache", "rb") as f:   # the documented format: msgpack, no pickle
        header = next(msgpack.Unpacker(f, raw=False))
    assert header == {"format": "zps-dataset-cache", "version": 1,
                      "types": ["int64", "string", "float32"]}


def test_file_cache_outlives_its_source(tmp_path):
    source = tmp_path / "lines.txt"
    source.write_text("a\nb\n")
    ds = tf.data.TextLineDataset(str(source)).cache(str(tmp_path / "c"))
    assert _all(ds) == [b"a", b"b"]
    source.unlink()
    assert _all(ds) == [b"a", b"b"]


def test_a_partial_pass_leaves_no_cache(tmp_path):
    calls, path = [], str(tmp_path / "c")
    it = _counted(3, calls).cache(path).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer)
        sess.run(x)
        sess.run(x)
        sess.run(it.initializer)   # the partial pass is dropped: its temp file goes
        assert os.listdir(tmp_path) == [] and calls == [0, 1]
        assert [int(sess.run(x)[0]) for _ in range(3)] == [0, 1, 2]
        assert os.listdir(tmp_path) != ["c.zpscache"]   # complete at the end of the input
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(x)
        assert os.listdir(tmp_path) == ["c.zpscache"]
    assert calls == [0, 1, 0, 1, 2]


def test_a_corrupt_cache_is_data_loss(tmp_path):
    path = str(tmp_path / "c")
    assert _all(D.range(3).cache(path)) == [0, 1, 2]
    cache = tmp_path / "c.zpscache"
    cache.write_bytes(cache.read_bytes()[:-3])
    with pytest.raises(tf.errors.DataLossError, match="not a valid cache"):
        _all(D.range(3).cache(path))
    os.remove(path + ".zpscache")
    assert _all(D.range(3).cache(path)) == [0, 1, 2]
    with pytest.raises(tf.errors.DataLossError, match="its elements are"):
        _all(D.range(3).map(lambda x: tf.as_string(x)).cache(path))


def test_cache_filename_may_be_a_placeholder(tmp_path):
    name = tf.placeholder(tf.string, [])
    it = D.range(2).cache(name).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as sess:
        for fed in ("", str(tmp_path / "c")):
            sess.run(it.initializer, {name: fed})
            assert [int(sess.run(x)) for _ in range(2)] == [0, 1]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(x)
    assert os.listdir(tmp_path) == ["c.zpscache"]


def test_missing_cache_directory_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="directory must exist"):
        _all(D.range(2).cache(str(tmp_path / "missing" / "c")))


# -- make_csv_dataset -----------------------------------------------------------------------------
A_CSV = 'id,score,name,big,label\n1,2.5,a,3000000000,0\n2,,b,1,1\n3,4,"c,d",2,0\n4,1e3,,5,1\n5,0.5,e,,0\n'


@pytest.fixture
def csv_dir(tmp_path):
    (tmp_path / "a.csv").write_text(A_CSV)
    (tmp_path / "b.csv").write_text("x,y\n1,2\n3,4\n")
    return tmp_path


def _csv(path, batch_size, **kwargs):
    return E.make_csv_dataset(str(path), batch_size, num_epochs=1, shuffle=False, **kwargs)


def test_make_csv_dataset_infers_names_and_types_as_tf(csv_dir):
    ds = _csv(csv_dir / "a.csv", 2)
    assert isinstance(ds.output_types, collections.OrderedDict)
    assert [(k, t.name, ds.output_shapes[k].as_list()) for k, t in ds.output_types.items()] == [
        ("id", "int32", [None]), ("score", "float32", [None]), ("name", "string", [None]),
        ("big", "int64", [None]), ("label", "int32", [None])]
    assert _all(ds) == [
        {"id": [1, 2], "score": [2.5, 0.0], "name": [b"a", b"b"], "big": [3000000000, 1],
         "label": [0, 1]},
        {"id": [3, 4], "score": [4.0, 1000.0], "name": [b"c,d", b""], "big": [2, 5],
         "label": [0, 1]},
        {"id": [5], "score": [0.5], "name": [b"e"], "big": [0], "label": [0]}]


def test_make_csv_dataset_label_and_select_columns(csv_dir):
    ds = _csv(csv_dir / "a.csv", 3, label_name="label")
    assert _all(ds) == [
        ({"id": [1, 2, 3], "score": [2.5, 0.0, 4.0], "name": [b"a", b"b", b"c,d"],
          "big": [3000000000, 1, 2]}, [0, 1, 0]),
        ({"id": [4, 5], "score": [1000.0, 0.5], "name": [b"", b"e"], "big": [5, 0]}, [1, 0])]
    ds = _csv(csv_dir / "a.csv", 5, select_columns=["name", "id"], label_name="id")
    assert _all(ds) == [({"name": [b"a", b"b", b"c,d", b"", b"e"]}, [1, 2, 3, 4, 5])]
    ds = _csv(csv_dir / "a.csv", 5, select_columns=[0, 2])
    assert _all(ds) == [{"id": [1, 2, 3, 4, 5], "name": [b"a", b"b", b"c,d", b"", b"e"]}]
    ds = _csv(csv_dir / "a.csv", 5, na_value="a")
    assert _all(ds)[0]["name"] == [b"", b"b", b"c,d", b"", b"e"]
    ds = _csv(csv_dir / "b.csv", 5, header=False, column_names=["p", "q"])
    assert _all(ds) == [{"p": [b"x", b"1", b"3"], "q": [b"y", b"2", b"4"]}]


def test_make_csv_dataset_repeats_forever_with_whole_batches(csv_dir):
    ds = E.make_csv_dataset(str(csv_dir / "a.csv"), 2, select_columns=["id"], shuffle=False)
    assert ds.output_shapes["id"].as_list() == [2]
    x = ds.make_one_shot_iterator().get_next()["id"]
    with tf.Session() as sess:
        assert [sess.run(x).tolist() for _ in range(3)] == [[1, 2], [3, 4], [5, 1]]


def test_make_csv_dataset_column_defaults_error_is_tfs(csv_dir):
    ds = _csv(csv_dir / "a.csv", 5, column_defaults=[0, 0.0, "", 0, 0], label_name="label")
    assert ds.output_types[0]["big"] == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Field 3 in record 0 is not a valid int32: 3000000000"):
        _all(ds)


@pytest.mark.parametrize("pattern, kwargs, message", [
    ("a.csv", {"label_name": "nope"}, r"`label_name` provided must be one of the columns: "
                                      r"\['id', 'score', 'name', 'big', 'label'\]. Received: nope."),
    ("a.csv", {"select_columns": ["nope"]}, "Column nope specified in `select_columns` must be "
                                            "of one of the columns"),
    ("b.csv", {"header": False}, "Expected `column_names` or `header` arguments. Neither is "
                                 "provided."),
    ("*.csv", {}, "All input CSV files should have the same column names in the header row. "
                  "File .*b.csv has different column names."),
    ("a.csv", {"column_names": ["a", "b"]}, "Problem inferring types: CSV row 2 has 5 number of "
                                            "fields. Expected: 2."),
    ("nothing*.csv", {}, "No files match `file_pattern`"),
])
def test_make_csv_dataset_errors_are_tfs(csv_dir, pattern, kwargs, message):
    with pytest.raises(ValueError, match=message):
        _csv(csv_dir / pattern, 5, **kwargs)


def test_inferred_types_widen_as_tfs(tmp_path):
    (tmp_path / "t.csv").write_text("a,b,c,d\n1,1,1e39,x\n2.5,1,2,\n")
    ds = _csv(tmp_path / "t.csv", 2)
    assert [t.name for t in ds.output_types.values()] == ["float32", "int32", "float64",
                                                          "string"]
    ds = _csv(tmp_path / "t.csv", 2, num_rows_for_inference=1)
    assert [t.name for t in ds.output_types.values()] == ["int32", "int32", "float64", "string"]


# -- CsvDataset: exclude_cols, quoted fields over lines -------------------------------------------
M_CSV = 'a,b,c,d\n1,"x\ny",2.5,q\n3,"he said ""hi""",4,r\n'


@pytest.fixture
def m_csv(tmp_path):
    (tmp_path / "m.csv").write_text(M_CSV)
    return str(tmp_path / "m.csv")


def test_quoted_fields_may_span_lines(m_csv):
    ds = E.CsvDataset(m_csv, [[0], [""], [0.0], [""]], header=True)
    assert _all(ds) == [(1, b"x\ny", 2.5, b"q"), (3, b'he said "hi"', 4.0, b"r")]
    ds = E.CsvDataset(m_csv, [[""]], header=True, use_quote_delim=False, select_cols=[1])
    assert _all(ds) == [(b'"x',), (b"2.5",), (b'"he said ""hi"""',)]


@pytest.mark.parametrize("defaults, exclude, expected", [
    ([[0], [0.0]], [1, 3], [(1, 2.5), (3, 4.0)]),
    ([[""], [0.0], [""]], [0], [(b"x\ny", 2.5, b"q"), (b'he said "hi"', 4.0, b"r")]),
    ([[0], [""]], [2, 3], [(1, b"x\ny"), (3, b'he said "hi"')]),
    ([[0]], [1, 2, 3], [(1,), (3,)]),
    ([[0], [""], [0.0], [""]], [6], [(1, b"x\ny", 2.5, b"q"), (3, b'he said "hi"', 4.0, b"r")]),
])
def test_exclude_cols_matches_tf2(m_csv, defaults, exclude, expected):
    assert _all(E.CsvDataset(m_csv, defaults, header=True, exclude_cols=exclude)) == expected


@pytest.mark.parametrize("defaults, exclude, message", [
    ([[0], [""], [0.0], [""], [""]], [5], "Expect 5 fields but have 4 in record"),
    ([[0], [""]], [3], "Expect 2 fields but have more in record"),
    ([[0], [""], [0.0]], [1], "Field 2 in record 0 is not a valid float: q"),
])
def test_exclude_cols_record_errors_are_tfs(m_csv, defaults, exclude, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _all(E.CsvDataset(m_csv, defaults, header=True, exclude_cols=exclude))


@pytest.mark.parametrize("kwargs, message", [
    ({"exclude_cols": [1, 3], "select_cols": [0, 2]}, "Either select_cols or exclude_cols should "
                                                      "be empty"),
    ({"exclude_cols": [3, 1]}, "exclude_cols should be strictly increasing indices"),
    ({"exclude_cols": [-1, 1]}, "exclude_cols should be non-negative indices"),
])
def test_exclude_cols_argument_errors_are_tfs(m_csv, kwargs, message):
    with pytest.raises(ValueError, match=message):
        E.CsvDataset(m_csv, [[0], [0.0]], header=True, **kwargs)


# -- reduce ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("state", [(), {}])
def test_reduce_needs_a_state_as_tf(state):
    with pytest.raises(ValueError, match="has no components"):
        D.range(3).reduce(state, lambda s, x: state)
