"""Dataset.reduce, tf.data.experimental.get_single_element, scan and CsvDataset.

Expected values and messages were produced by TensorFlow 2.21 (``tensorflow.compat.v1``, graph
mode) running the same programs.
"""

import numpy as np
import pytest

import zps as tf

D = tf.data.Dataset
E = tf.data.experimental

# The CSV file TF read: a header, a quoted field with a delimiter and escaped quotes, an empty
# field, a CRLF line ending, an empty line (an error) and a last line without a newline.
CSV = b'a,b,c\n1,2.5,x\n,3.5,"q,""r"""\n4,,z\r\n\n7,8,w'


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture
def sess():
    with tf.Session() as s:
        yield s


def _read(ds, sess, n):
    x = ds.make_one_shot_iterator().get_next()
    return [sess.run(x) for _ in range(n)]


# -- Dataset.reduce ------------------------------------------------------------------------------
def test_reduce_folds_every_element(sess):
    total = D.range(5).reduce(np.int64(0), lambda s, x: s + x)
    assert total.dtype == tf.int64 and total.get_shape().as_list() == []
    assert sess.run(total) == 10
    assert sess.run(total) == 10   # read anew at each run, not used up


def test_reduce_nested_state_and_elements(sess):
    pair = D.range(5).reduce((np.int64(0), np.int64(1)),
                             lambda s, x: (s[0] + x, s[1] * (x + 1)))
    assert [int(v) for v in sess.run(pair)] == [10, 120]
    ds = D.from_tensor_slices(([1, 2, 3], [10.0, 20.0, 30.0]))
    out = sess.run(ds.reduce({"a": 0, "b": 0.0},
                             lambda s, e: {"a": s["a"] + e[0], "b": s["b"] + e[1]}))
    assert out["a"] == 6 and out["a"].dtype == np.int32
    assert out["b"] == 60.0 and out["b"].dtype == np.float32


def test_reduce_of_an_empty_dataset_is_the_initial_state(sess):
    assert sess.run(D.range(0).reduce(np.int64(7), lambda s, x: s + x)) == 7


def test_reduce_relaxes_a_state_shape_the_function_changes(sess):
    grown = D.range(4).reduce(tf.constant([], tf.int64), lambda s, x: tf.concat([s, [x]], 0))
    assert grown.get_shape().as_list() == [None]
    assert sess.run(grown).tolist() == [0, 1, 2, 3]


def test_reduce_reads_a_fed_placeholder_and_runs_the_pipeline_functions(sess):
    n = tf.placeholder(tf.int64, [])
    scale = tf.placeholder(tf.int64, [])
    total = D.range(n).map(lambda x: x * 2).reduce(np.int64(0), lambda s, x: s + x * scale)
    assert sess.run(total, {n: 4, scale: 10}) == 120


def test_reduce_new_state_must_keep_dtypes_and_structure():
    with pytest.raises(TypeError, match="The element types for the new state must match the "
                                        "initial state"):
        D.range(3).reduce(np.int64(0), lambda s, x: tf.cast(s, tf.int32))
    with pytest.raises(TypeError, match="structure of the new state must match"):
        D.range(3).reduce(np.int64(0), lambda s, x: (s, x))


# -- get_single_element --------------------------------------------------------------------------
def test_get_single_element(sess):
    a, b = E.get_single_element(D.from_tensors(({"a": [1, 2]}, "x")))
    value = sess.run((a, b))
    assert value[0]["a"].tolist() == [1, 2] and value[1] == b"x"
    x = E.get_single_element(D.range(10).filter(lambda x: tf.equal(x, 7)))
    assert sess.run(x) == 7 and sess.run(x) == 7   # not used up


@pytest.mark.parametrize("n, message", [(0, "Dataset was empty."),
                                        (2, "Dataset had more than one element.")])
def test_get_single_element_needs_exactly_one(sess, n, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        sess.run(E.get_single_element(D.range(n)))


def test_get_single_element_needs_a_dataset():
    with pytest.raises(TypeError, match="Expected a `tf.data.Dataset`"):
        E.get_single_element([1])


# -- scan ----------------------------------------------------------------------------------------
def test_scan(sess):
    ds = D.range(5).apply(E.scan(np.int64(0), lambda s, x: (s + x, s * 10)))
    assert sess.run(ds.batch(5).make_one_shot_iterator().get_next()).tolist() == [0, 0, 10, 30, 60]
    ds = D.range(5).apply(E.scan(np.int64(0), lambda s, x: (s + x, (x, tf.cast(s, tf.float32)))))
    assert ds.output_types == (tf.int64, tf.float32)
    i, f = sess.run(ds.batch(5).make_one_shot_iterator().get_next())
    assert i.tolist() == [0, 1, 2, 3, 4] and f.tolist() == [0.0, 0.0, 1.0, 3.0, 6.0]


def test_scan_restarts_from_the_initial_state_each_pass(sess):
    ds = D.range(3).apply(E.scan(np.int64(0), lambda s, x: (s + x, s + x))).repeat(2)
    assert [int(v) for v in _read(ds, sess, 6)] == [0, 1, 3, 0, 1, 3]
    assert sess.run(E.cardinality(ds)) == 6


def test_scan_function_must_return_a_state_and_an_element():
    with pytest.raises(TypeError, match="`scan_func` should return a pair consisting of new "
                                        "state and the output value"):
        D.range(5).apply(E.scan(np.int64(0), lambda s, x: s + x))
    with pytest.raises(TypeError, match=r"Invalid `scan_func`. The element types for the new "
                                        r"state must match the initial state"):
        D.range(3).apply(E.scan(np.int64(0), lambda s, x: (tf.cast(s, tf.int32), x)))


# -- CsvDataset ----------------------------------------------------------------------------------
@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(CSV)
    return str(path)


def test_csv_dataset(sess, csv):
    ds = E.CsvDataset(csv, [[-1], [0.0], tf.string], header=True)
    assert ds.output_types == (tf.int32, tf.float32, tf.string)
    assert [s.as_list() for s in ds.output_shapes] == [[], [], []]
    x = ds.make_one_shot_iterator().get_next()
    rows = [sess.run(x) for _ in range(3)]
    assert [(int(a), float(b), c) for a, b, c in rows] == [
        (1, 2.5, b"x"), (-1, 3.5, b'q,"r"'), (4, 0.0, b"z")]
    assert rows[0][0].dtype == np.int32 and rows[0][1].dtype == np.float32
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 3 fields but have"):
        sess.run(x)   # the empty line, as in TF (whose message counts 1 field, zps 0)


def test_csv_dataset_select_cols_and_required_columns(sess, csv):
    ds = E.CsvDataset(csv, [[-1], tf.string], header=True, select_cols=[0, 2])
    assert [(int(a), c) for a, c in _read(ds, sess, 3)] == [(1, b"x"), (-1, b'q,"r"'), (4, b"z")]
    x = E.CsvDataset(csv, [tf.int32, [0.0], [""]], header=True).make_one_shot_iterator()
    x = x.get_next()
    assert [int(v) for v in sess.run(x)[:1]] == [1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Field 0 is required but missing"):
        sess.run(x)


def test_csv_dataset_errors_name_the_file_and_line(sess, csv):
    x = E.CsvDataset(csv, [[-1], [0.0], [""]]).make_one_shot_iterator().get_next()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Field 0 in record \d* ?is not a valid int32: a .*t\.csv, line 1"):
        sess.run(x)


def test_csv_dataset_ignore_errors_reads_on(sess, csv):
    ds = E.CsvDataset(csv, [[-1], [0.0], [""]], header=True).apply(E.ignore_errors())
    assert [int(r[0]) for r in ds.as_numpy_iterator()] == [1, -1, 4, 7]
