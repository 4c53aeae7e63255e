"""The executor: pruning, ordering, feeds as leaves, constant folding, errors, async kernels,
isolation of concurrent steps."""

import threading

import numpy as np
import pytest

import zps as tf
from zps.framework import errors, registry
from zps.runtime import executor
from zps.runtime.executor import Plan, StepContext, op_error, prune
from zps.runtime.resources import ResourceManager

# -- test-only ops (registered once; grad=None keeps them out of the gradient coverage rule) -----
RAN = []   # names of the counting ops that ran, in order
EVENTS = {}


def _register_test_ops():
    if "ZpsTestCount" in registry.REGISTRY:
        return

    def count(ctx, *xs, op_name):
        RAN.append(op_name)
        return xs[0] if xs else np.float32(1.0)

    registry.register_op("ZpsTestCount", kernel=count, needs_op_name=True, grad=None,
                         dtype=lambda op: tf.float32, shape=lambda op: tf.TensorShape(None))
    registry.register_op("ZpsTestPair", kernel=lambda ctx, x, n: tuple([x] * n), num_outputs=2,
                         grad=None, shape=lambda op: [op.inputs[0].get_shape()] * 2)

    def wait_async(ctx, done, x, key):
        # Completes from another thread once `key` is set by another op of the same step.
        def finish():
            if EVENTS[key].wait(5):
                done(x + 1.0)
            else:
                done(errors.DeadlineExceededError(None, None, "event %s never set" % key))
        threading.Thread(target=finish, daemon=True).start()

    def set_event(ctx, x, key):
        EVENTS[key].set()
        return x

    def fail_async(ctx, done, x):
        done(errors.AbortedError(None, None, "peer went away"))

    registry.register_op("ZpsTestWait", kernel=wait_async, is_async=True, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestSet", kernel=set_event, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestFailAsync", kernel=fail_async, is_async=True, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())


_register_test_ops()


def counter(*inputs, name):
    return tf.get_default_graph().create_op("ZpsTestCount", list(inputs), name=name).outputs[0]


def run(plan, feeds=()):
    return plan.run(StepContext(ResourceManager()), list(feeds))


@pytest.fixture(autouse=True)
def _clear():
    RAN.clear()
    yield
    RAN.clear()


# -- pruning and order -----------------------------------------------------------------------------
def test_only_needed_ops_run():
    with tf.Graph().as_default():
        a = counter(name="a")
        b = counter(a, name="b")
        counter(a, name="unused")
        c = counter(b, name="c")
        plan = Plan([], [c], [])
        assert [op.name for op in plan.ops] == ["a", "b", "c"]
        run(plan)
        assert RAN == ["a", "b", "c"]
        RAN.clear()
        run(Plan([], [b], []))
        assert RAN == ["a", "b"]


def test_control_inputs_run_first_and_targets_run():
    with tf.Graph().as_default() as g:
        first = counter(name="first")
        with g.control_dependencies([first]):
            second = counter(name="second")
        third = counter(second, name="third")
        side = counter(name="side")
        third.op._add_control_input(side.op)
        run(Plan([], [], [third.op]))
        assert RAN.index("first") < RAN.index("second") < RAN.index("third")
        assert RAN.index("side") < RAN.index("third") and len(RAN) == 4
        assert prune([], [first.op]) == [first.op]


def test_fed_tensors_are_leaves():
    with tf.Graph().as_default():
        a = counter(name="a")
        b = counter(a, name="b")
        c = counter(b, name="c")
        plan = Plan([b], [c], [])
        assert [op.name for op in plan.ops] == ["c"]
        assert run(plan, [np.float32(5.0)]) == [5.0]
        assert RAN == ["c"]
        # A fetched tensor that is fed comes straight back.
        assert run(Plan([b], [b], []), [np.float32(2.0)]) == [2.0]


def test_fed_output_of_a_needed_multi_output_op():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2])
        op = g.create_op("ZpsTestPair", [x], {"n": 2})
        first, second = op.outputs
        plan = Plan([x, second], [first, second], [])
        out = run(plan, [np.array([1.0, 2.0], np.float32), np.array([9.0, 9.0], np.float32)])
        np.testing.assert_array_equal(out[0], [1.0, 2.0])
        np.testing.assert_array_equal(out[1], [9.0, 9.0])


def test_constants_are_folded_into_the_template():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        y = (x + tf.constant([1.0, 2.0])) * 3.0
        plan = Plan([x], [y], [])
        assert sorted(op.type for op in plan.ops) == ["Add", "Const", "Const", "Mul"]  # x is fed
        assert plan.num_kernels == 2  # only Add and Mul run
        np.testing.assert_array_equal(run(plan, [np.zeros(2, np.float32)])[0], [3.0, 6.0])


def test_steps_are_isolated_and_plans_reentrant():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = x * x + 1.0
        plan = Plan([x], [y], [])
        results = {}

        def worker(i):
            results[i] = [float(run(plan, [np.float32(i)])[0]) for _ in range(200)]

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == {i: [i * i + 1.0] * 200 for i in range(4)}


def test_step_context():
    rm = ResourceManager()
    a, b = StepContext(rm), StepContext(rm, step_id=77, extras={"k": 1})
    assert a.xp is np and a.backend == "numpy" and a.resources is rm
    assert b.step_id == 77 and b.extras == {"k": 1} and a.step_id != StepContext(rm).step_id
    with pytest.raises(ValueError, match="Unknown backend"):
        StepContext(rm, backend="tpu")


# -- errors --------------------------------------------------------------------------------------
def test_kernel_errors_name_the_failing_op_in_long_plans():
    # More ops than one generated function holds: the failing op is found in any chunk.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        q = tf.placeholder(tf.float32, [None, None])
        y = x
        for _ in range(executor._CHUNK + 10):
            y = y + 1.0
        bad = tf.matmul(tf.reshape(y, [1, 2]), q, name="bad_matmul")
        z = tf.identity(bad, name="after")
        plan = Plan([x, q], [z], [])
        assert len(plan._chunks) == 2
        with pytest.raises(errors.InvalidArgumentError, match="bad_matmul") as info:
            run(plan, [np.zeros(2, np.float32), np.zeros((1, 2), np.float32)])
        assert info.value.op_name == "bad_matmul"
        ok = run(Plan([x], [y], []), [np.zeros(2, np.float32)])[0]
        np.testing.assert_array_equal(ok, [executor._CHUNK + 10.0] * 2)


def test_wrong_number_of_kernel_outputs_is_an_error_naming_the_op():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        op = g.create_op("ZpsTestPair", [x], {"n": 3}, name="pair")
        with pytest.raises(errors.InvalidArgumentError, match="pair.*too many values"):
            run(Plan([x], [op.outputs[0]], []), [np.float32(1.0)])


def test_op_error_mapping():
    with tf.Graph().as_default():
        op = tf.constant(1.0, name="k").op
    assert type(op_error(MemoryError("big"), op)) is errors.ResourceExhaustedError
    assert type(op_error(NotImplementedError("later"), op)) is errors.UnimplementedError
    e = op_error(ValueError("bad value"), op)
    assert type(e) is errors.InvalidArgumentError and e.op_name == "k" and "bad value" in e.message
    named = errors.NotFoundError("other", None, "x")
    assert op_error(named, op) is named
    renamed = op_error(errors.NotFoundError(None, None, "x"), op)
    assert type(renamed) is errors.NotFoundError and renamed.op_name == "k"


# -- asynchronous kernels --------------------------------------------------------------------------
def test_async_kernels_let_ready_ops_run_while_they_wait():
    EVENTS["go"] = threading.Event()
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        waited = g.create_op("ZpsTestWait", [x], {"key": "go"}, name="wait").outputs[0]
        # Created after `wait` and independent of it: a sequential loop would deadlock here.
        setter = g.create_op("ZpsTestSet", [x * 2.0], {"key": "go"}, name="set").outputs[0]
        total = waited + setter
        plan = Plan([x], [total, waited], [])
        assert plan._execute == plan._run_dataflow
        flushes = []
        ctx = StepContext(ResourceManager(), extras={"flush": lambda: flushes.append(len(RAN))})
        assert plan.run(ctx, [np.float32(1.0)]) == [4.0, 2.0]
        assert flushes  # pending sends are flushed before the loop waits


def test_async_kernel_failure_is_raised_naming_the_op():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        failed = g.create_op("ZpsTestFailAsync", [x], {}, name="recv").outputs[0]
        with pytest.raises(errors.AbortedError, match="peer went away") as info:
            run(Plan([x], [failed + 1.0], []), [np.float32(1.0)])
        assert info.value.op_name == "recv"


def test_async_plans_in_a_local_session():
    EVENTS["local"] = threading.Event()
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        waited = g.create_op("ZpsTestWait", [x], {"key": "local"}).outputs[0]
        setter = g.create_op("ZpsTestSet", [x], {"key": "local"}).outputs[0]
        with tf.Session() as sess:
            assert sess.run([waited, setter], {x: 2.0}) == [3.0, 2.0]


# -- concurrency ---------------------------------------------------------------------------------
def test_concurrent_runs_of_one_session_are_exact():
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="counter")
        inc = tf.assign_add(v, 1.0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            failures = []

            def worker():
                try:
                    for _ in range(500):
                        sess.run(inc)
                except Exception as e:  # noqa: BLE001 - reported by the main thread
                    failures.append(e)

            threads = [threading.Thread(target=worker) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert not failures
            assert sess.run(v) == 2000.0


def test_kernels_follow_ieee_semantics_without_warnings():
    """TF1 never warns on inf/nan; pytest turns warnings into errors, so this would fail if numpy did."""
    import zps as tf
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.log(x) + 1.0 / x
        with tf.Session() as sess:
            out = sess.run(y, {x: [0.0, 1.0, -1.0]})
    assert np.isneginf(out[0]) or np.isnan(out[0])
    assert out[1] == 1.0 and np.isnan(out[2])


def test_constant_inside_control_dependencies_waits_for_them():
    """A constant made in a control_dependencies block carries the control inputs, so an op that
    reads only that constant waits too: here an update behind an empty queue's dequeue must not
    happen (it did when constants were folded into the value table with their controls lost)."""
    import threading
    import time

    import zps as tf
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.float32, shapes=[])
        v = tf.Variable(0.0)
        with tf.control_dependencies([q.dequeue()]):
            inc = tf.assign_add(v, 1.0)
        sess = tf.Session()
        sess.run(v.initializer)
        t = threading.Thread(target=lambda: _run_ignoring_cancel(sess, inc.op), daemon=True)
        t.start()
        time.sleep(0.3)
        assert sess.run(v) == 0.0   # still waiting for the dequeue: no increment yet
        sess.run(q.enqueue(5.0))
        t.join(10)
        assert not t.is_alive() and sess.run(v) == 1.0
        sess.close()


def _run_ignoring_cancel(sess, op):
    import zps as tf
    try:
        sess.run(op)
    except tf.errors.CancelledError:
        pass
