"""tf.TensorArray: values, TF1's errors, while_loop loop variables, gradients (BPTT).

Expected values and error messages are TF1's, checked against TensorFlow 2.21's
tf.compat.v1 (graph mode, TensorArrayV3 kernels).
"""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(11)


def _written(x):
    return tf.TensorArray(x.dtype, 2).write(0, x * 2.0).write(1, tf.sin(x))


def _bptt(x, w):
    """h_t = tanh(x_t + h_{t-1} w): inputs unstacked before the loop, outputs written in it."""
    inputs = tf.TensorArray(x.dtype, 3).unstack(x)

    def body(t, h, outputs):
        h = tf.tanh(inputs.read(t) + tf.matmul(h[None], w)[0])
        return t + 1, h, outputs.write(t, h)
    _, _, outputs = tf.while_loop(lambda t, *_: t < 3, body,
                                  [0, tf.zeros([2], x.dtype), tf.TensorArray(x.dtype, 3)])
    return outputs.stack()


GRAD_CASES = [
    GradCase("TensorArrayWriteV3", lambda x: _written(x).stack(), [R.standard_normal(3)]),
    GradCase("TensorArrayReadV3",
             lambda x: _written(x).read(1) * tf.TensorArray(x.dtype, 1).write(0, x).read(0),
             [R.standard_normal(3)]),
    GradCase("TensorArrayGatherV3",
             lambda x: tf.TensorArray(x.dtype, 4).unstack(x).gather([3, 1]) ** 2,
             [R.standard_normal((4, 2))]),
    GradCase("TensorArrayScatterV3",
             lambda x: tf.TensorArray(x.dtype, 5).scatter([4, 0, 2], x * x).stack(),
             [R.standard_normal((3, 2))]),
    GradCase("TensorArrayConcatV3",
             lambda x: tf.TensorArray(x.dtype, 2, infer_shape=False)
             .write(0, x[:1] * 3.0).write(1, tf.exp(x)).concat(), [R.standard_normal((2, 3))]),
    GradCase("TensorArraySplitV3",
             lambda x: tf.TensorArray(x.dtype, 3, infer_shape=False).split(x, [1, 3, 2])
             .read(1) ** 2, [R.standard_normal(6)]),
    GradCase("While", _bptt, [R.standard_normal((3, 2)), R.standard_normal((2, 2)) * 0.5],
             name="While_TensorArray_bptt"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_gradient(case):
    check_gradients(case)


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


def _fails(fetch, error, message, feeds=None):
    with pytest.raises(error) as info:
        _run(fetch, feeds)
    assert message in info.value.message
    return info.value


# -- values ------------------------------------------------------------------------------------
def test_write_read_stack_and_static_shapes():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 3)
        assert (ta.dtype, ta.dynamic_size, ta.element_shape.ndims) == (tf.float32, False, None)
        assert (ta.handle.name, ta.flow.name) == ("TensorArray:0", "TensorArray:1")
        assert ta.flow.dtype == tf.float32 and ta.flow.get_shape().as_list() == []
        written = ta.write(0, [1.0, 2.0])
        assert written.flow.name == "TensorArrayWrite/TensorArrayWriteV3:0"
        assert written.handle is ta.handle
        assert ta.element_shape.as_list() == [2]   # shared by every TensorArray of the array
        written = written.write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
        stacked, row = written.stack(), written.read(1)
        assert stacked.name == "TensorArrayStack/TensorArrayGatherV3:0"
        assert stacked.get_shape().as_list() == [3, 2] and row.get_shape().as_list() == [2]
        (s, n), r = _run([stacked, written.size()]), _run(row)   # a read clears: two steps
        np.testing.assert_array_equal(s, [[1, 2], [3, 4], [5, 6]])
        np.testing.assert_array_equal(r, [3, 4])
        assert s.dtype == np.float32 and n == 3
        assert _run(written.flow) == 0.0   # a flow's value is 0.0, as TF's


def test_python_ints_are_written_as_the_array_dtype_and_unwritten_indices_read_as_zeros():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 3).write(1, 7)
        np.testing.assert_array_equal(_run(ta.stack()), [0.0, 7.0, 0.0])
    with tf.Graph().as_default():
        assert _run(tf.TensorArray(tf.float32, 3).write(0, 1.0).read(2)) == 0.0


def test_unstack_scatter_gather_and_dynamic_size():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0]).unstack(x)
        assert ta.element_shape.as_list() == [2]
        stacked = ta.stack()
        assert stacked.get_shape().as_list() == [None, 2]
        value = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
        np.testing.assert_array_equal(_run(stacked, {x: value}), value)
        g = tf.TensorArray(tf.float32, 4).scatter([3, 1], [[1.0, 2.0], [3.0, 4.0]]).gather([1, 3])
        assert g.get_shape().as_list() == [None, 2]
        np.testing.assert_array_equal(_run(g), [[3, 4], [1, 2]])
        grown = tf.TensorArray(tf.int32, 1, dynamic_size=True).write(3, 5)
        assert grown.size().op.type == "TensorArraySizeV3"
        s, n = _run([grown.stack(), grown.size()])
        np.testing.assert_array_equal(s, [0, 0, 0, 5])
        assert n == 4


def test_concat_and_split():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 2, infer_shape=False).write(0, [1.0, 2.0]).write(1, [3.0])
        np.testing.assert_array_equal(_run(ta.concat()), [1, 2, 3])
        pieces = tf.TensorArray(tf.float32, 3, infer_shape=False).split(
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 2, 3])
        assert pieces.element_shape.ndims is None
        got = _run([pieces.read(0), pieces.read(1), pieces.read(2)])
        assert [g.tolist() for g in got] == [[1.0], [2.0, 3.0], [4.0, 5.0, 6.0]]
        even = tf.TensorArray(tf.float32, 3).split(tf.reshape(tf.range(12.0), [6, 2]), [2, 2, 2])
        assert even.element_shape.as_list() == [2, 2]
        assert even.concat().get_shape().as_list() == [6, 2]
        assert even.stack().get_shape().as_list() == [3, 2, 2]
        np.testing.assert_array_equal(_run(even.concat()), np.arange(12.0).reshape(6, 2))
        c = tf.TensorArray(tf.float32, 2, infer_shape=False).write(0, [1.0]).write(1, [2.0, 3.0])
        _, lengths = c.concat().op.outputs
        assert lengths.dtype == tf.int64
        np.testing.assert_array_equal(_run(lengths), [1, 2])


def test_zero_size_stack_needs_a_full_element_shape():
    with tf.Graph().as_default():
        empty = tf.TensorArray(tf.float32, 0, element_shape=[2]).stack()
        assert empty.get_shape().as_list() == [0, 2]
        assert _run(empty).shape == (0, 2)
        _fails(tf.TensorArray(tf.float32, 0).stack(), tf.errors.UnimplementedError,
               "TensorArray has size zero, but element shape <unknown> is not fully defined. "
               "Currently only static shapes are supported when packing zero-size TensorArrays.")
        _fails(tf.TensorArray(tf.float32, 0).concat(), tf.errors.UnimplementedError,
               "TensorArray has size zero, but element_shape_except0 <unknown> is not fully "
               "defined.")


def test_clear_after_read_false_reads_many_times_and_identity_and_name():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 1, clear_after_read=False).write(0, 2.0)
        a = ta.read(0)
        with tf.control_dependencies([a]):
            b = ta.identity().read(0)
        assert _run([a, b]) == [2.0, 2.0]
        named = tf.TensorArray(tf.float32, 1, tensor_array_name="foo").write(0, 1.0).write(0, 2.0)
        _fails(named.flow, tf.errors.InvalidArgumentError,
               "TensorArray foo_")   # the array's name is tensor_array_name_<n>, as TF's


def test_string_arrays_and_a_graph_def_round_trip():
    with tf.Graph().as_default():
        words = tf.TensorArray(tf.string, 2).write(0, "a").write(1, tf.constant("bc"))
        assert _run(words.stack()).tolist() == [b"a", b"bc"]
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        n = tf.shape(x)[0]
        _, ta = tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i] * 2.0)),
                              [0, tf.TensorArray(tf.float32, n)])
        tf.identity(ta.stack(), name="y")
        graph_def = graph.as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        np.testing.assert_array_equal(_run("y:0", {"x:0": [[1.0, 2.0], [3.0, 4.0]]}),
                                      [[2.0, 4.0], [6.0, 8.0]])


# -- errors ------------------------------------------------------------------------------------
def test_runtime_errors_are_tf1s():
    with tf.Graph().as_default():
        e = _fails(tf.TensorArray(tf.float32, 3).write(0, 1.0).write(0, 2.0).flow,
                   tf.errors.InvalidArgumentError,
                   "Could not write to TensorArray index 0 because it has already been written "
                   "to.")
        assert e.message.startswith("TensorArray TensorArray_")
        assert e.op_name == "TensorArrayWrite_1/TensorArrayWriteV3"
        _fails(tf.TensorArray(tf.float32, 3).write(3, 1.0).flow, tf.errors.InvalidArgumentError,
               "Tried to write to index 3 but array is not resizeable and size is: 3")
        _fails(tf.TensorArray(tf.float32, 3).write(0, 1.0).read(5),
               tf.errors.InvalidArgumentError, "Tried to read from index 5 but array size is: 3")
        _fails(tf.TensorArray(tf.float32, 3).read(0), tf.errors.InvalidArgumentError,
               "Could not read from TensorArray index 0.  Furthermore, the element shape is not "
               "fully defined: <unknown>.")
        _fails(tf.TensorArray(tf.float32, 3).write(0, tf.constant(1)).flow,
               tf.errors.InvalidArgumentError,
               "TensorArray dtype is float but Op is trying to write dtype int32.")
        _fails(tf.TensorArray(tf.float32, -1).flow, tf.errors.InvalidArgumentError,
               "Size should be >= 0.")


def test_reading_twice_and_writing_after_a_read_fail_with_clear_after_read():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 3).write(0, 1.0)
        a = ta.read(0)
        with tf.control_dependencies([a]):
            b = ta.read(0)
            w = ta.write(0, 2.0).flow
        _fails([a, b], tf.errors.InvalidArgumentError,
               "Could not read index 0 twice because it was cleared after a previous read "
               "(perhaps try setting clear_after_read = false?).")
        _fails([a, w], tf.errors.InvalidArgumentError,
               "Could not write to TensorArray index 0 because it has already been read.")


def test_shape_mismatches():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected "
                                             r"\(2,\)"):
            tf.TensorArray(tf.float32, 3).write(0, [1.0, 2.0]).write(1, [1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="Inconsistent shapes"):
            tf.TensorArray(tf.float32, 3, element_shape=[2]).write(0, [1.0, 2.0, 3.0])
        p = tf.placeholder(tf.float32, [None])
        flow = tf.TensorArray(tf.float32, 3).write(0, [1.0, 2.0]).write(1, p).flow
        _fails(flow, tf.errors.InvalidArgumentError,
               "Could not write to TensorArray index 1 because the value shape is [3] which is "
               "incompatible with the TensorArray's inferred element shape: [2] (consider "
               "setting infer_shape=False).", {p: [1.0, 2.0, 3.0]})
        free = tf.TensorArray(tf.float32, 3, infer_shape=False).write(0, [1.0, 2.0]).write(1, p)
        assert _run(free.flow, {p: [1.0, 2.0, 3.0]}) == 0.0
        _fails(tf.TensorArray(tf.float32, 2, infer_shape=False).write(0, [1.0, 2.0])
               .write(1, [3.0]).stack(), tf.errors.InvalidArgumentError,
               "TensorArray has inconsistent shapes.  Index 0 has shape: [2] but index 1 has "
               "shape: [1]")
        with pytest.raises(ValueError, match="rank at least 1"):
            tf.TensorArray(tf.float32, 3).unstack(1.0)


def test_scatter_split_and_concat_errors():
    with tf.Graph().as_default():
        _fails(tf.TensorArray(tf.float32, 2).scatter([0, 2], [1.0, 2.0]).flow,
               tf.errors.InvalidArgumentError, "Max scatter index must be < array size (2 vs. 2)")
        _fails(tf.TensorArray(tf.float32, 2).scatter([0, 0], [1.0, 2.0]).flow,
               tf.errors.InvalidArgumentError,
               "Could not write to TensorArray index 0 because it has already been written to.")
        _fails(tf.TensorArray(tf.float32, 2).split([1.0, 2.0, 3.0], [1, 1]).flow,
               tf.errors.InvalidArgumentError,
               "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is 2 "
               "and value's shape is: [3]")
        _fails(tf.TensorArray(tf.float32, 2).split([1.0, 2.0, 3.0], [1, 1, 1]).flow,
               tf.errors.InvalidArgumentError,
               "TensorArray's size is not equal to the size of lengths (2 vs. 3), and the "
               "TensorArray is not marked as dynamically resizeable")
        _fails(tf.TensorArray(tf.float32, 3, infer_shape=False).write(0, [1.0]).write(1, 2.0)
               .write(2, [3.0]).concat(), tf.errors.InvalidArgumentError,
               "Concat saw a scalar shape at index 1 but requires at least vectors.")
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
            tf.TensorArray(tf.float32, 3).scatter([0, 1], [1.0, 2.0, 3.0])


def test_close():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 2, dynamic_size=True).write(0, 1.0)
        closed = ta.close()
        assert closed.type == "TensorArrayCloseV3"
        with tf.control_dependencies([closed]):
            again, read = ta.close(), ta.read(0)
        assert _run([closed, again]) == [None, None]   # closing twice is fine
        _fails(read, tf.errors.InvalidArgumentError, "has already been closed.")


def test_constructor_errors():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, 2)
        with pytest.raises(ValueError, match="Argument `size` must be provided"):
            tf.TensorArray(tf.float32)
        with pytest.raises(ValueError, match="Cannot provide both `handle` and `size`"):
            tf.TensorArray(tf.float32, 2, handle=ta.handle, flow=ta.flow)
        with pytest.raises(ValueError, match="Cannot provide both `handle` and "
                                             "`tensor_array_name`"):
            tf.TensorArray(tf.float32, handle=ta.handle, flow=ta.flow, tensor_array_name="a")
        with pytest.raises(ValueError, match="flow must not be None"):
            tf.TensorArray(tf.float32, handle=ta.handle)
        with pytest.raises(TypeError, match="Expected `handle` to be a Tensor"):
            tf.TensorArray(tf.float32, handle="h", flow=ta.flow)
        rebuilt = tf.TensorArray(tf.float32, handle=ta.handle, flow=ta.write(0, 3.0).flow)
        assert _run(rebuilt.read(0)) == 3.0


# -- while_loop --------------------------------------------------------------------------------
def test_a_tensor_array_is_a_while_loop_variable():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(8.0).reshape(4, 2), tf.float32)
        inputs = tf.TensorArray(tf.float32, 4).unstack(x)
        start = tf.TensorArray(tf.float32, 4)

        def body(i, h, ta):
            h = tf.tanh(inputs.read(i) + h)
            return i + 1, h, ta.write(i, h * 2.0)
        _, _, ta = tf.while_loop(lambda i, *_: i < 4, body, [0, tf.zeros([2]), start])
        assert isinstance(ta, tf.TensorArray) and ta.handle is start.handle
        assert ta.flow.op.type == "While" and ta.element_shape.as_list() == [2]
        stacked = ta.stack()
        assert stacked.get_shape().as_list() == [4, 2]
        # TF 2.21 compat.v1's values
        np.testing.assert_allclose(_run(stacked), [[0.0, 1.5231884], [1.9280552, 1.9978396],
                                                   [1.999805, 1.9999752], [1.9999967, 2.0]],
                                   rtol=1e-6)


def test_dynamic_size_loop_and_a_single_tensor_array_loop_var():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        _, ta = tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, i * i)),
                              [0, tf.TensorArray(tf.int32, 0, dynamic_size=True)])
        stacked = ta.stack()
        assert stacked.get_shape().as_list() == [None]
        s, size = _run([stacked, ta.size()], {n: 5})
        np.testing.assert_array_equal(s, [0, 1, 4, 9, 16])
        assert size == 5
        only = tf.while_loop(lambda ta: ta.size() < 3, lambda ta: ta.write(ta.size(), 1.5),
                             [tf.TensorArray(tf.float32, 0, dynamic_size=True)])
        assert isinstance(only, tf.TensorArray)
        np.testing.assert_array_equal(_run(only.stack()), [1.5, 1.5, 1.5])


def test_the_body_must_return_a_tensor_array_for_a_tensor_array():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="must return a TensorArray where loop_vars has one"):
            tf.while_loop(lambda i, ta: i < 2, lambda i, ta: (i + 1, ta.flow),
                          [0, tf.TensorArray(tf.float32, 2)])


def test_nested_loops_write_one_array_and_two_gradient_calls_keep_their_own_arrays():
    with tf.Graph().as_default():
        x = tf.constant([[0.5, -1.0], [2.0, 0.25]], tf.float64)

        def outer(i, ta):
            def inner(j, ta):
                return j + 1, ta.write(i * 3 + j, tf.sin(x[i] * tf.cast(j + 1, tf.float64)))
            return i + 1, tf.while_loop(lambda j, ta: j < 3, inner, [0, ta])[1]
        _, ta = tf.while_loop(lambda i, ta: i < 2, outer, [0, tf.TensorArray(tf.float64, 6)])
        y = ta.stack()
        g1 = tf.gradients(tf.reduce_sum(y * np.arange(12.0).reshape(6, 2)), x)[0]
        g2 = tf.gradients(tf.reduce_sum(y * y), x)[0]
        _, d1, d2 = _run([y, g1, g2])   # one step: each tf.gradients has its gradient array
        np.testing.assert_allclose(d1, [[3.010056, -16.806466], [15.84993, 46.724606]],
                                   atol=1e-6)
        np.testing.assert_allclose(d2, [[3.083426, 1.442554], [-0.387805, 5.154852]], atol=1e-6)


def test_bptt_values_and_gradients_match_tf1():
    x_value = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])
    with tf.Graph().as_default():
        x = tf.constant(x_value)
        w = tf.constant([[0.5, -0.25], [0.75, 1.0]], tf.float64)
        h0 = tf.constant([0.1, -0.2], tf.float64)
        inputs = tf.TensorArray(tf.float64, 3).unstack(x)

        def body(t, h, outputs):
            h = tf.tanh(inputs.read(t) + tf.matmul(h[None], w)[0])
            return t + 1, h, outputs.write(t, h)
        _, h, outputs = tf.while_loop(lambda t, *_: t < 3, body,
                                      [0, h0, tf.TensorArray(tf.float64, 3)])
        y = outputs.stack()
        weights = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], tf.float64)
        loss = tf.reduce_sum(y * weights) + tf.reduce_sum(h)
        got = _run([y] + tf.gradients(loss, [x, w, h0]))
    want = [  # TF 2.21 compat.v1
        [[0.37994896, -0.84112290], [0.78533154, -0.59547727], [-0.66623490, 0.83613568]],
        [[0.34624231, 2.55850876], [1.58738527, 5.55613278], [3.33678631, 2.10613990]],
        [[3.25823314, 4.02091585], [-3.39141499, -6.43925073]],
        [-0.46650603, 2.81819049]]
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, atol=1e-7)


def test_split_concat_and_repeated_reads_gradients_match_tf1():
    with tf.Graph().as_default():
        x = tf.constant([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], tf.float64)
        pieces = tf.TensorArray(tf.float64, 3, infer_shape=False).split(tf.reshape(x, [-1]),
                                                                        [1, 2, 3])
        out = tf.TensorArray(tf.float64, 3, infer_shape=False)
        out = out.write(0, pieces.read(2) * 2.0).write(1, pieces.read(0))
        out = out.write(2, tf.sin(pieces.read(1)))
        y = out.concat()
        dx, = tf.gradients(tf.reduce_sum(y * tf.range(1.0, 7.0, dtype=tf.float64)), x)
        # clear_after_read=False: the gradients of two reads of one index add up
        many = tf.TensorArray(tf.float64, 2, clear_after_read=False).write(0, x[0]).write(1, x[2])
        z = many.read(0) * 2.0 + many.read(0) * many.read(1)
        dz, = tf.gradients(tf.reduce_sum(z), x)
        got_y, got_dx, got_dz = _run([y, dx, dz])
    np.testing.assert_allclose(got_y, [0.5, -1.5, 4.0, 0.5, -0.84147098, 0.99749499], atol=1e-8)
    np.testing.assert_allclose(got_dx, [[4.0, 2.70151153], [0.42442321, 2.0], [4.0, 6.0]],
                               atol=1e-8)
    np.testing.assert_allclose(got_dz, [[1.25, 4.0], [0.0, 0.0], [0.5, -1.0]])


def test_gradient_needs_a_gradients_name_scope():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        y = tf.reduce_sum(tf.TensorArray(tf.float32, 1).write(0, x * 3.0).stack())
        with pytest.raises(ValueError, match="Expected op/tensor name to start with gradients"):
            tf.gradients(y, x, name="foo")
        dx, = tf.gradients(y, x, name="gradients_custom")
        np.testing.assert_array_equal(_run(dx), [3.0, 3.0])


def test_map_fn_and_scan_still_work_with_tensor_arrays_around():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0])
        squares = tf.map_fn(lambda v: v * v, x)
        sums = tf.scan(lambda a, v: a + v, x)
        ta = tf.TensorArray(tf.float32, 3).unstack(squares + sums)
        np.testing.assert_array_equal(_run(ta.stack()), [2.0, 7.0, 15.0])


def test_a_cond_returns_tensor_arrays_with_gradients_as_tf1():
    # TensorFlow 2.21's tf.compat.v1 gave these values for the same program.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        empty = tf.TensorArray(tf.float32, size=2)
        whole = tf.cond(x > 0, lambda: empty.write(0, x * 2).write(1, x),
                        lambda: empty.write(0, -x).write(1, x * x))
        first = tf.TensorArray(tf.float32, size=2).write(0, x)
        rest = tf.cond(x > 0, lambda: first.write(1, x * 2), lambda: first.write(1, -x))
        assert isinstance(whole, tf.TensorArray) and isinstance(rest, tf.TensorArray)
        fetches = []
        for ta in (whole, rest):
            stacked = ta.stack()
            fetches += [stacked, tf.gradients(tf.reduce_sum(stacked * [1.0, 3.0]), x)[0]]
        with tf.Session() as sess:
            got = [np.asarray(v).tolist() for v in sess.run(fetches, {x: 3.0})]
            assert got == [[6.0, 3.0], 5.0, [3.0, 6.0], 7.0]
            got = [np.asarray(v).tolist() for v in sess.run(fetches, {x: -2.0})]
            assert got == [[2.0, 4.0], -13.0, [-2.0, 2.0], -2.0]
        with pytest.raises(ValueError, match=r"one returns a TensorArray where the other does "
                           r"not \(TensorArrays at \[0\] and \[\]"):
            tf.cond(x > 0, lambda: first.write(1, x), lambda: x)
