"""The local Session: fetch structures, feeds, errors, placement, aliasing, callables, defaults."""

import collections

import numpy as np
import pytest

import zps as tf
from zps.client.session import IndexedSlicesValue

Pair = collections.namedtuple("Pair", ["first", "second"])


# -- fetches -------------------------------------------------------------------------------------
def test_nested_fetch_structures_are_rebuilt():
    with tf.Graph().as_default():
        a = tf.constant(1.0, name="a")
        b = tf.constant([2, 3], name="b")
        noop = tf.no_op(name="noop")
        with tf.Session() as sess:
            out = sess.run({"a": a, "list": [a, (b, noop)], "pair": Pair(a, [b]),
                            "od": collections.OrderedDict([("z", b), ("y", a)])})
        assert out["a"] == 1.0 and isinstance(out["a"], np.float32)
        assert isinstance(out["list"], list) and isinstance(out["list"][1], tuple)
        assert out["list"][1][1] is None
        np.testing.assert_array_equal(out["list"][1][0], [2, 3])
        assert isinstance(out["pair"], Pair) and out["pair"].first == 1.0
        assert list(out["od"]) == ["z", "y"] and isinstance(out["od"], collections.OrderedDict)


def test_defaultdict_and_empty_structures():
    with tf.Graph().as_default():
        a = tf.constant(5, name="a")
        dd = collections.defaultdict(list, {"a": a})
        with tf.Session() as sess:
            out = sess.run(dd)
            assert isinstance(out, collections.defaultdict) and out["a"] == 5 and out["new"] == []
            assert sess.run([]) == [] and sess.run({}) == {} and sess.run(()) == ()


def test_fetch_by_name_op_and_variable():
    with tf.Graph().as_default():
        with tf.name_scope("s"):
            x = tf.constant([1.0, 2.0], name="x")
        v = tf.Variable([3.0], name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run("s/x:0"), [1.0, 2.0])
            assert sess.run("s/x") is None
            assert sess.run(x.op) is None
            np.testing.assert_array_equal(sess.run(v), [3.0])
            assert sess.run([v, x])[0].tolist() == [3.0]


def test_fetching_the_same_tensor_twice():
    with tf.Graph().as_default():
        a = tf.constant(2.0)
        with tf.Session() as sess:
            assert sess.run([a, a, {"again": a}]) == [2.0, 2.0, {"again": 2.0}]


def test_indexed_slices_fetch_as_value():
    with tf.Graph().as_default():
        params = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        loss = tf.reduce_sum(tf.gather(params, [2, 0]))
        grad, = tf.gradients(loss, [params])
        assert isinstance(grad, tf.IndexedSlices)
        with tf.Session() as sess:
            value = sess.run(grad)
        assert isinstance(value, IndexedSlicesValue)
        np.testing.assert_array_equal(value.indices, [2, 0])
        np.testing.assert_array_equal(value.values, np.ones((2, 2)))
        np.testing.assert_array_equal(value.dense_shape, [3, 2])
        with tf.Session() as sess:
            no_shape = sess.run(tf.IndexedSlices(tf.constant([1.0]), tf.constant([0])))
        assert no_shape.dense_shape is None and no_shape.values.tolist() == [1.0]


def test_bad_fetches():
    with tf.Graph().as_default():
        with tf.Session() as sess:
            with pytest.raises(TypeError, match="Fetch argument None"):
                sess.run(None)
            with pytest.raises(TypeError, match="has invalid type"):
                sess.run(3.5)
            with pytest.raises(ValueError, match="'nope:0' cannot be interpreted"):
                sess.run("nope:0")
            with pytest.raises(ValueError, match="'nope' cannot be interpreted"):
                sess.run(["nope"])
        with tf.Graph().as_default():
            other = tf.constant(1.0)
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="not an element of this graph"):
                sess.run(other)


def test_scalar_and_string_fetches_are_numpy_values():
    with tf.Graph().as_default():
        with tf.Session() as sess:
            assert sess.run(tf.constant("Hello")) == b"Hello"
            f = sess.run(tf.constant(1.5))
            i = sess.run(tf.constant(3))
            b = sess.run(tf.constant(True))
            assert (type(f), type(i), type(b)) == (np.float32, np.int32, np.bool_)
            s = sess.run(tf.reduce_sum(tf.constant([1.0, 2.0], tf.float64)))
            assert type(s) is np.float64 and s == 3.0


# -- feeds ---------------------------------------------------------------------------------------
def test_feed_placeholders_by_tensor_and_by_name():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = x * 2.0
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: [[1.0, 2.0]]}), [[2.0, 4.0]])
            np.testing.assert_array_equal(sess.run(y, {"x:0": np.ones((3, 2))}), 2 * np.ones((3, 2)))
            assert sess.run(y, {x: np.zeros((1, 2), np.float64)}).dtype == np.float32


def test_feeding_an_intermediate_tensor_skips_its_producer():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        hidden = tf.square(x, name="hidden")
        out = hidden + 1.0
        with tf.Session() as sess:
            # x is never fed: its placeholder must not run.
            assert sess.run(out, {hidden: 10.0}) == 11.0
            assert sess.run([hidden, out], {hidden: 3.0}) == [3.0, 4.0]
            with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value for "
                                                                     "placeholder tensor 'x'"):
                sess.run(out)


def test_a_control_dependency_on_a_fed_tensor_is_satisfied_by_the_feed():
    # TF1 (FeedInputs): a fed Placeholder's control edges move to the feed; any other fed op
    # still runs for the ops that wait for it.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        v = tf.Variable(0.0)
        bump = tf.assign_add(v, 1.0)
        with tf.control_dependencies([x]):
            y = tf.constant(1.0) + 1.0
        with tf.control_dependencies([bump]):
            z = tf.identity(tf.constant(5.0))
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(y, {x: 2.0}) == 2.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value"):
                sess.run(y)
            assert sess.run(z, {bump: 7.0}) == 5.0 and sess.run(v) == 1.0   # bump ran


def test_feeding_constants_and_variables():
    with tf.Graph().as_default():
        c = tf.constant(2.0, name="c")
        v = tf.Variable(5.0, name="v")
        with tf.Session() as sess:
            assert sess.run(c * 3.0, {c: 4.0}) == 12.0
            # Readers of a fed variable see the fed value; the variable itself is untouched.
            assert sess.run(v * 2.0, {v: 1.5}) == 3.0
            assert sess.run(v, {v: 7.0}) == 7.0
            sess.run(v.initializer)
            assert sess.run(v + 0.0) == 5.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="fed"):
                sess.run(tf.assign_add(v, 1.0), {v: 1.0})


def test_feed_dtype_and_shape_errors_name_the_tensor_and_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        i = tf.placeholder(tf.int32, [2], name="i")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"shape \(2, 2\) for Tensor 'x:0', which has shape \(\?, 3\)"):
                sess.run(x, {x: np.zeros((2, 2))})
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(3,\) for Tensor 'i:0'"):
                sess.run(i, {i: [1, 2, 3]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="to x:0 \\(dtype float32\\)"):
                sess.run(x, {x: [["a", "b", "c"]]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="to i:0"):
                sess.run(i, {i: [2 ** 40, 1]})
            # Whole-number floats convert, as in TF1 (labels read as floats); others are refused
            # where TF1 would truncate them silently.
            for whole in (np.array([1.0, -2.0]), [1.0, -2.0], np.array([1.0, -2.0], np.float32)):
                got = sess.run(i, {i: whole})
                assert got.dtype == np.int32 and got.tolist() == [1, -2]
            for bad, says in [(np.array([1.0, 1.5]), "1.5 is not a whole number"),
                              ([1.7, 2.0], "1.7 is not"), (np.array([1.0, np.nan]), "nan is not"),
                              (np.array([1.0, 3e10]), "30000000000.0 is not")]:
                with pytest.raises(tf.errors.InvalidArgumentError, match="float values to i:0 of "
                                   "dtype int32: " + says):
                    sess.run(i, {i: bad})
            # TF1 raises ValueError for a feed that does not fit; zps's error is both.
            for bad in ({x: np.zeros((2, 2))}, {x: [["a", "b", "c"]]}, {i: [1.5, 2.0]}):
                with pytest.raises(ValueError, match="Cannot feed"):
                    sess.run(x if x in bad else i, bad)


def test_bad_feed_keys_and_values():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        c = tf.constant(1.0)
        v = tf.Variable(1.0)
        with tf.Session() as sess:
            with pytest.raises(TypeError, match="cannot be a zps.Tensor"):
                sess.run(x, {x: c})
            with pytest.raises(TypeError, match="cannot be a zps.Tensor"):
                sess.run(x, {x: v})
            with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
                sess.run(x, {"x": 1.0})  # an op name, not a tensor name
            with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
                sess.run(x, {"missing:0": 1.0})
            with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
                sess.run(x, {3: 1.0})
            tf.get_default_graph().prevent_feeding(c)
            with pytest.raises(ValueError, match="may not be fed"):
                sess.run(c, {c: 2.0})


def test_string_feeds():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None], name="s")
        with tf.Session() as sess:
            assert sess.run(s, {s: ["a", b"b"]}).tolist() == [b"a", b"b"]
            assert sess.run(s, {s: np.array(["x", "y"], dtype=object)}).tolist() == [b"x", b"y"]


# -- aliasing ------------------------------------------------------------------------------------
def test_fetched_values_never_alias_variable_storage():
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(3, np.float32), name="v")
        inc = tf.assign_add(v, np.ones(3, np.float32))
        fetches = {"var": v, "read": v.value(), "reshaped": tf.reshape(v, [3, 1]),
                   "identity": tf.identity(v), "default": tf.placeholder_with_default(v.value(), [3]),
                   "inc": inc}
        with tf.Session() as sess:
            sess.run(v.initializer)
            got = sess.run(fetches)
            for name in got:
                got[name][...] = 100.0  # mutating a fetched array ...
            np.testing.assert_array_equal(sess.run(v), [1.0, 1.0, 1.0])  # ... leaves v alone
            snapshot = sess.run(v)
            sess.run(inc)  # an update after the fetch does not change the fetched array
            np.testing.assert_array_equal(snapshot, [1.0, 1.0, 1.0])
            np.testing.assert_array_equal(sess.run(v), [2.0, 2.0, 2.0])


def test_fed_arrays_are_not_frozen_or_stored():
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(2, np.float32))
        x = tf.placeholder(tf.float32, [2])
        assign = tf.assign(v, x)
        with tf.Session() as sess:
            value = np.array([1.0, 2.0], np.float32)
            sess.run(assign, {x: value})
            value[0] = 50.0
            np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_reads_ordered_after_an_assign_see_the_new_value():
    # TF1's Assign writes into the variable's storage (as AssignAdd does): a read that runs after
    # it, through its control dependencies, sees the new value, for ref and resource variables.
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        r = tf.get_variable("r", initializer=1.0, use_resource=True)
        w = tf.Variable([1.0, 2.0, 3.0])
        with tf.control_dependencies([tf.assign(v, 5.0)]):
            identity = tf.identity(v)
        with tf.control_dependencies([tf.assign(v, 7.0)]):
            product = v * 2
        with tf.control_dependencies([tf.assign(r, 5.0)]):
            resource = tf.identity(r)
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            added = tf.identity(v)
        with tf.control_dependencies([tf.assign(v, v * 2)]):   # a computed scalar
            doubled = tf.identity(v)
        with tf.control_dependencies([tf.assign(w, tf.reverse(w, [0]))]):   # from a view of itself
            reversed_ = tf.identity(w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(identity) == 5.0
            assert sess.run(product) == 14.0
            assert sess.run(resource) == 5.0
            assert sess.run(added) == 8.0
            assert sess.run(doubled) == 16.0
            np.testing.assert_array_equal(sess.run(reversed_), [3.0, 2.0, 1.0])
            np.testing.assert_array_equal(sess.run(w), [3.0, 2.0, 1.0])


def test_assign_keeps_fetched_values_and_takes_a_new_shape():
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0])
        x = tf.placeholder(tf.float32, None)
        assign = tf.assign(v, x)
        reshape = tf.assign(v, x, validate_shape=False)
        with tf.Session() as sess:
            sess.run(v.initializer)
            before = sess.run(v)
            value = np.array([3.0, 4.0], np.float32)
            assert sess.run(assign, {x: value}) is not value
            value[0] = 50.0   # the fed array is copied, not kept ...
            np.testing.assert_array_equal(before, [1.0, 2.0])   # ... nor is the fetched one written
            np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])
            np.testing.assert_array_equal(sess.run(reshape, {x: np.ones((2, 2), np.float32)}),
                                          np.ones((2, 2)))
            np.testing.assert_array_equal(sess.run(v), np.ones((2, 2)))
            with pytest.raises(tf.errors.InvalidArgumentError, match="Assign"):
                sess.run(assign, {x: np.zeros(3, np.float32)})


# -- plan caching ---------------------------------------------------------------------------------
def test_plans_are_cached_per_feeds_and_fetches():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = x + 1.0
        z = y * 2.0
        with tf.Session() as sess:
            plans = sess._runner._plans
            for i in range(5):
                assert sess.run(y, {x: float(i)}) == i + 1.0
            assert len(plans) == 1
            sess.run(z, {x: 1.0})
            sess.run([y, z], {x: 1.0})
            assert len(plans) == 3
            sess.run(z, {y: 1.0})  # different feeds: another plan
            assert len(plans) == 4
            assert sess.run(z, {x: 2.0}) == 6.0
            tf.constant(0.0)  # new ops do not invalidate plans
            sess.run(z, {x: 2.0})
            assert len(plans) == 4
            z.op._add_control_input(tf.no_op())  # a new control edge does
            sess.run(z, {x: 2.0})
            assert len(plans) == 5


# -- defaults, eval, run --------------------------------------------------------------------------
def test_eval_and_run_with_default_session():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        inc = tf.assign_add(v, 1.0)
        x = tf.placeholder(tf.float32, [])
        with tf.Session() as sess:
            v.initializer.run()
            inc.op.run()
            assert v.eval() == 2.0 and (x * 3.0).eval({x: 2.0}) == 6.0
        with pytest.raises(ValueError, match="no default session"):
            v.eval()
        sess = tf.Session()
        assert (x + 1.0).eval(feed_dict={x: 1.0}, session=sess) == 2.0
        with sess.as_default():
            assert (x + 2.0).eval({x: 1.0}) == 3.0
            assert tf.get_default_graph() is sess.graph
        sess.close()


def test_eval_in_a_session_of_another_graph_is_rejected():
    with tf.Graph().as_default():
        c = tf.constant(1.0)
    with tf.Graph().as_default():
        with tf.Session():
            with pytest.raises(ValueError, match="not the session's graph"):
                c.eval()


def test_interactive_session_is_default_until_closed():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(4.0)
    sess = tf.InteractiveSession(graph=g)
    try:
        assert c.eval() == 4.0
        assert tf.get_default_graph() is g
    finally:
        sess.close()
    with pytest.raises(ValueError, match="no default session"):
        c.eval()
    assert tf.get_default_graph() is not g


def test_closed_session_raises():
    with tf.Graph().as_default():
        c = tf.constant(1.0)
        sess = tf.Session()
        sess.close()
        sess.close()  # idempotent
        with pytest.raises(RuntimeError, match="closed Session"):
            sess.run(c)
        with tf.Session() as s2:
            pass
        with pytest.raises(RuntimeError, match="closed Session"):
            s2.run(c)


def test_session_properties_and_targets():
    g = tf.Graph()
    sess = tf.Session(graph=g)
    assert sess.graph is g and sess.sess_str == "" and sess.target == ""
    assert [d.device_type for d in sess.list_devices()] == ["CPU"]
    sess.close()
    with pytest.raises(tf.errors.InvalidArgumentError, match="not supported"):
        tf.Session("http://nowhere:1")


# -- placement -----------------------------------------------------------------------------------
def test_ops_on_a_cluster_job_need_a_cluster_target():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="'v'.*placed on /job:ps/task:0.*no cluster.*server.target"):
                sess.run(v.initializer)


def test_localhost_devices_run_locally():
    with tf.Graph().as_default():
        with tf.device("/job:localhost/replica:0/task:0/cpu:0"):
            c = tf.constant(2.0) * 3.0
        with tf.device("/cpu:0"):
            d = c + 1.0
        with tf.Session() as sess:
            assert sess.run(d) == 7.0


def test_gpu_placement_needs_soft_placement():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            y = tf.constant([1.0, 2.0]) * 2.0
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="asks for /device:GPU:0.*allow_soft_placement=True"):
                sess.run(y)
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])


# -- errors --------------------------------------------------------------------------------------
def test_uninitialized_variable_is_failed_precondition_naming_it():
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="weights")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="uninitialized value weights") as info:
                sess.run(v * 2.0)
            assert info.value.op_name == "weights/read"
            with pytest.raises(tf.errors.FailedPreconditionError, match="weights") as info:
                sess.run(v)
            assert info.value.op_name == "weights"


def test_kernel_exceptions_become_invalid_argument_naming_the_op():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, None], name="a")
        b = tf.placeholder(tf.float32, [None, None], name="b")
        prod = tf.matmul(a, b, name="product")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="product") as info:
                sess.run(prod, {a: np.ones((2, 3)), b: np.ones((2, 3))})
            assert info.value.op_name == "product" and info.value.op is prod.op


# -- make_callable -------------------------------------------------------------------------------
def test_make_callable():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = x * 2.0
        v = tf.Variable(0.0)
        inc = tf.assign_add(v, 1.0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            double = sess.make_callable(y, [x])
            np.testing.assert_array_equal(double([1.0, 2.0]), [2.0, 4.0])
            both = sess.make_callable({"y": y, "sum": tf.reduce_sum(y)}, feed_list=["x:0"])
            out = both(np.arange(3, dtype=np.float32))
            assert out["sum"] == 6.0
            step = sess.make_callable(inc.op)
            assert step() is None and step() is None
            assert sess.run(v) == 2.0
            with pytest.raises(TypeError, match="expected 1 feed values, got 0"):
                double()
            with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
                double([[1.0]])
            with pytest.raises(TypeError):
                double([1.0], options=tf.RunOptions())
            with_options = sess.make_callable(y, [x], accept_options=True)
            np.testing.assert_array_equal(with_options([1.0], options=tf.RunOptions()), [2.0])
            # initializer, y, {y, sum}, inc, v: callables share the session's plans
            assert len(sess._runner._plans) == 5
        with pytest.raises(RuntimeError, match="closed"):
            double([1.0])


def test_get_default_session():
    assert tf.get_default_session() is None
    with tf.Graph().as_default():
        outer, inner = tf.Session(), tf.Session()
        with outer.as_default():
            assert tf.get_default_session() is outer
            with inner as entered:
                assert tf.get_default_session() is entered is inner
            assert tf.get_default_session() is outer
        assert tf.get_default_session() is None
        outer.close()
