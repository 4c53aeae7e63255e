"""The executor: pruning, ordering, feeds as leaves, constant folding, errors, async kernels,
isolation of concurrent steps."""

import concurrent.futures
import os
import threading
import weakref

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
THREADS = {}   # ZpsTestWhere op name -> the thread that ran it
HELD = {}      # ZpsTestHold key -> its completion callback
REMEMBERED = {}   # ZpsTestRemember key -> a weak reference to its input value


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

    def where(ctx, x, op_name):
        THREADS[op_name] = threading.current_thread().name
        return x

    def hold_async(ctx, done, x, key):
        # Completes when the test calls HELD[key](value), from whichever thread it likes.
        HELD[key] = done

    registry.register_op("ZpsTestWhere", kernel=where, needs_op_name=True, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestHold", kernel=hold_async, is_async=True, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestWait", kernel=wait_async, is_async=True, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestSet", kernel=set_event, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestFailAsync", kernel=fail_async, is_async=True, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())

    def remember(ctx, x, key):
        REMEMBERED[key] = weakref.ref(x)   # the input's value, without keeping it alive
        return x + 1.0

    def alive(ctx, x, key):
        return np.bool_(REMEMBERED[key]() is not None)

    def spare(ctx, x, key):
        unread = x + 2.0   # an output nobody reads
        REMEMBERED[key] = weakref.ref(unread)
        return x + 1.0, unread

    registry.register_op("ZpsTestRemember", kernel=remember, grad=None,
                         shape=lambda op: op.inputs[0].get_shape())
    registry.register_op("ZpsTestSpare", kernel=spare, grad=None, num_outputs=2,
                         shape=lambda op: [op.inputs[0].get_shape()] * 2)
    registry.register_op("ZpsTestAlive", kernel=alive, grad=None,
                         dtype=lambda op: tf.bool, shape=lambda op: tf.TensorShape([]))


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


# -- memory ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dataflow", [False, True], ids=["compiled", "dataflow"])
def test_intermediate_values_are_dropped_after_their_last_reader(dataflow):
    # As TF1 frees a tensor once its last reader ran (an output nobody reads: once computed), a
    # step's memory peaks at its live values.
    EVENTS["mem"] = threading.Event()
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [4])
        a = x * 2.0                     # an intermediate read only by `remember`
        b = g.create_op("ZpsTestRemember", [a], {"key": "a"}).outputs[0]
        kept = x * 3.0                  # an intermediate that is also fetched
        k = g.create_op("ZpsTestRemember", [kept], {"key": "kept"}).outputs[0]
        if dataflow:   # an async op makes the plan run in the dataflow loop
            b = g.create_op("ZpsTestSet", [b], {"key": "mem"}).outputs[0]
            b = g.create_op("ZpsTestWait", [b], {"key": "mem"}).outputs[0]
        c = b + k
        c = g.create_op("ZpsTestSpare", [c], {"key": "spare"}).outputs[0]
        with g.control_dependencies([c]):
            a_alive = g.create_op("ZpsTestAlive", [c], {"key": "a"}).outputs[0]
            kept_alive = g.create_op("ZpsTestAlive", [c], {"key": "kept"}).outputs[0]
            spare_alive = g.create_op("ZpsTestAlive", [c], {"key": "spare"}).outputs[0]
        plan = Plan([x], [a_alive, kept_alive, spare_alive, kept, c], [])
        assert plan.may_block is dataflow
        got = run(plan, [np.arange(4, dtype=np.float32)])
    assert got[0] == np.False_ and got[1] == np.True_ and got[2] == np.False_
    np.testing.assert_array_equal(got[3], [0, 3, 6, 9])
    np.testing.assert_array_equal(got[4], np.arange(4) * 5 + 3 + (1 if dataflow else 0))


def test_a_plans_first_run_gives_a_one_off_peak_back(monkeypatch):
    from zps.runtime import allocator
    trims = []
    monkeypatch.setattr(allocator, "trim", lambda: trims.append(1))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        plan = Plan([x], [x * 2.0], [])
        for _ in range(3):
            run(plan, [np.float32(1.0)])
    assert trims == [1]   # once, after the first run (it trims only if the heap grew)


def test_trim_gives_pages_back_only_after_the_heap_grew(monkeypatch):
    from zps.runtime import allocator
    heap_end, trims = [1 << 30], []

    def malloc_trim(pad):
        trims.append(pad)
        heap_end[0] -= 10 << 20   # the top of the heap was free
    monkeypatch.setattr(allocator, "_malloc_trim", malloc_trim)
    monkeypatch.setattr(allocator, "_sbrk", lambda incr: heap_end[0])
    monkeypatch.setattr(allocator, "_trimmed_at", heap_end[0])
    heap_end[0] += allocator.TRIM_GROWTH_BYTES   # grown by the limit: not yet
    allocator.trim()
    assert trims == []
    heap_end[0] += 1 << 20
    allocator.trim()
    assert trims == [0] and allocator._trimmed_at == heap_end[0]
    allocator.trim()   # measured from the end after the last trim
    assert trims == [0]


def test_initializing_a_large_variable_leaves_no_peak_resident(tmp_path):
    # A 64 MB variable initialized by RandomUniform -> Mul -> Add -> Assign: four 64 MB values
    # if none were dropped, and kept resident by the tuned allocator. In a fresh interpreter the
    # process's resident memory grows by little more than the variable.
    import subprocess
    import sys
    script = tmp_path / "init.py"
    script.write_text(
        "import numpy as np, zps as tf\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
        "with tf.Graph().as_default():\n"
        "    v = tf.get_variable('v', [1 << 24], initializer=tf.random_uniform_initializer(-1, 1))\n"
        "    s = tf.Session()\n"
        "    before = rss()\n"
        "    s.run(v.initializer)\n"
        "    print((rss() - before) / (1 << 20))\n")
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("resident memory is read from /proc/self/statm (Linux)")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    grown_mb = float(out.stdout.split()[-1])
    assert grown_mb < 64 * 1.6, "resident memory grew by %.0f MB for a 64 MB variable" % grown_mb


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
        assert plan.may_block
        flushes = []
        ctx = StepContext(ResourceManager(), extras={"flush": lambda: flushes.append(len(RAN))})
        assert plan.run(ctx, [np.float32(1.0)]) == [4.0, 2.0]
        assert flushes  # pending sends are flushed before the loop waits


def _followed_plan(g, x, key, fail_at=None):
    """x -> wait(key) -> five cheap ops the completion alone makes runnable (one reads `early`,
    which waits for nothing) -> `late`, which also needs a second wait."""
    early = x * 10.0
    waited = g.create_op("ZpsTestWait", [x], {"key": key}, name="wait").outputs[0]
    a = tf.add(waited, 1.0, name="a")
    b = tf.multiply(a, 2.0, name="b")
    c = tf.add(b, early, name="c")
    d = tf.identity(tf.sqrt(c) if fail_at is None else tf.check_numerics(
        tf.log(c - fail_at), "c went negative", name="check"), name="d")
    e = tf.add(d, a, name="e")
    setter = g.create_op("ZpsTestSet", [x], {"key": key}, name="set").outputs[0]
    second = g.create_op("ZpsTestWait", [setter], {"key": key}, name="wait2").outputs[0]
    late = tf.add(e, second, name="late")
    return Plan([x], [late, e, b], [])


def test_a_completion_runs_the_cheap_ops_it_alone_makes_ready_as_compiled_code():
    EVENTS["f"] = threading.Event()
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = _followed_plan(g, x, "f")
        follow = plan._dataflow_info()[6]
        built = [(plan._steps[k].op.name, [plan._steps[m].op.name for m in fu.steps])
                 for k, fu in enumerate(follow) if fu is not None]
        # `late` needs the second wait too; the chain after `wait` is compiled in graph order
        # (the identity `d` runs no kernel: its readers read its input).
        assert built == [("wait", ["a", "b", "c", "Sqrt", "e"])]
        for _ in range(2):
            late, e, b = run(plan, [np.float32(1.0)])
            a = 2.0 + 1.0
            assert b == 2 * a and e == pytest.approx(np.sqrt(2 * a + 10.0) + a)
            assert late == pytest.approx(e + 2.0)
        # Traced, the same step runs op by op in the loop, each op with its own record.
        values, records = plan.run_traced(StepContext(ResourceManager()), [np.float32(1.0)])
        assert values[0] == pytest.approx(late)
        assert {"a", "b", "c", "e", "late"} <= {r[0] for r in records}


def test_a_kernel_failing_in_a_compiled_follow_up_names_its_op():
    EVENTS["g"] = threading.Event()
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = _followed_plan(g, x, "g", fail_at=1e9)
        assert plan._dataflow_info()[6][[s.op.name for s in plan._steps].index("wait")]
        with pytest.raises(errors.InvalidArgumentError, match="c went negative") as info:
            run(plan, [np.float32(1.0)])
        assert info.value.op.name == "check"


def test_what_a_send_takes_runs_first_and_goes_out_before_the_partition_computes_on():
    """Of the ready ops, those feeding a _Send (directly or through forwarding ops) run first;
    while the partition waits for a tensor (a pending Recv), the sends are flushed before it
    computes on: the ids of an embedding lookup leave before the positions to stitch the rows
    back are computed. Without a pending wait the sends keep batching until the end."""
    import zps.distributed.transfer_ops  # noqa: F401 - registers _Send

    for pending_wait in (True, False):
        RAN.clear()
        events = []
        with tf.Graph().as_default() as g:
            x = tf.placeholder(tf.float32, [])
            later = counter(x, name="later")         # created first: FIFO would run it first
            sent = tf.identity(counter(x, name="sent"))
            send = g.create_op("_Send", [sent], {"key": "k", "dst": "/job:ps/task:0"}, name="send")
            out = later
            if pending_wait:
                out = g.create_op("ZpsTestHold", [x], {"key": "rows"}, name="rows").outputs[0] \
                    + later
            plan = Plan([x], [out], [send])
        extras = {"send": lambda dst, key, value: events.append("send %s" % key),
                  "flush": lambda: events.append("flush " + ",".join(RAN))}
        done = []
        plan.start(StepContext(ResourceManager(), extras=extras), [np.float32(1.0)],
                   lambda values, error: done.append((values, error)), lambda fn: fn())
        if pending_wait:
            HELD.pop("rows")(np.float32(2.0))
        assert done == [([3.0 if pending_wait else 1.0], None)]
        assert RAN == ["sent", "later"]
        # The flush that follows the send comes before "later" runs only when a wait is pending.
        first_flush = "flush sent" if pending_wait else "flush sent,later"
        assert events[:2] == ["send k", first_flush], events


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


# -- who runs what: light threads, Plan.start, join -------------------------------------------------
def _held_plan(g, x, n, inline_bytes=None):
    """x -> hold("k") -> where("cheap") -> where("big" on an n-element array) -> outputs."""
    held = g.create_op("ZpsTestHold", [x], {"key": "k"}, name="hold").outputs[0]
    cheap = g.create_op("ZpsTestWhere", [held * 2.0], name="cheap").outputs[0]
    big = g.create_op("ZpsTestWhere", [tf.fill([n], cheap)], name="big").outputs[0]
    return Plan([x], [cheap, tf.reduce_sum(big)], [], inline_bytes=inline_bytes)


def _from_light_thread(fn):
    out = []

    def body():
        executor.light_thread()
        out.append(fn())

    t = threading.Thread(target=body, name="light")
    t.start()
    t.join(10)
    return out[0] if out else None


def _owner_waiting_on_hold(plan, feed=1.0):
    """A thread named "owner" running ``plan`` (fed ``feed``: a float32 1.0 by default) until its
    hold "k" waits; (thread, results)."""
    result = []
    feed = np.float32(feed) if isinstance(feed, float) else feed
    owner = threading.Thread(target=lambda: result.append(run(plan, [feed])), name="owner")
    owner.start()
    for _ in range(500):
        if "k" in HELD:
            break
        threading.Event().wait(0.01)
    return owner, result


def test_a_light_thread_runs_cheap_ops_and_hands_expensive_ones_back_to_the_owner():
    THREADS.clear()
    n = executor.INLINE_BYTES // 4 + 1   # float32: just over the inline limit
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = _held_plan(g, x, n)
        owner, result = _owner_waiting_on_hold(plan)
        _from_light_thread(lambda: HELD.pop("k")(np.float32(3.0)))
        owner.join(10)
    assert result and result[0] == [6.0, 6.0 * n]
    assert THREADS == {"cheap": "light", "big": "owner"}


@pytest.mark.parametrize("over", [False, True])
def test_a_plan_with_the_shared_cpu_limit_runs_larger_ops_on_the_light_thread(over):
    THREADS.clear()
    limit = executor.SHARED_CPU_INLINE_BYTES
    # Over the default limit (under the plan's), or over the plan's limit too.
    n = (limit if over else executor.INLINE_BYTES) // 4 + 1
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = _held_plan(g, x, n, inline_bytes=limit)
        assert plan.inline_bytes == limit
        owner, result = _owner_waiting_on_hold(plan)
        _from_light_thread(lambda: HELD.pop("k")(np.float32(3.0)))
        owner.join(10)
    assert result and result[0] == [6.0, 6.0 * n]
    assert THREADS == {"cheap": "light", "big": "owner" if over else "light"}


@pytest.mark.parametrize("rows", [8, executor.INLINE_BYTES // 16 + 1])
def test_a_gather_costs_the_rows_it_takes_not_the_table(rows):
    # An embedding lookup on a ps takes a few rows of a large table: cheap enough for the I/O
    # thread that delivered the ids; taking more rows than the limit holds is not.
    THREADS.clear()
    table = np.arange(400_000, dtype=np.float32).reshape(100_000, 4)   # 1.6 MB, over the limit
    ids = np.arange(rows, dtype=np.int64) * 7
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.int64, [None])
        held = g.create_op("ZpsTestHold", [x], {"key": "k"}, name="hold").outputs[0]
        taken = tf.gather(tf.constant(table), held)
        where = g.create_op("ZpsTestWhere", [taken], name="taken").outputs[0]
        plan = Plan([x], [tf.reduce_sum(where)], [])
        owner, result = _owner_waiting_on_hold(plan, ids)
        _from_light_thread(lambda: HELD.pop("k")(ids))
        owner.join(10)
    assert result and result[0] == [table[ids].sum()]
    assert THREADS == {"taken": "light" if rows == 8 else "owner"}


def test_completions_from_other_threads_continue_on_the_owner():
    THREADS.clear()
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = _held_plan(g, x, 4)
        owner, result = _owner_waiting_on_hold(plan)
        t = threading.Thread(target=lambda: HELD.pop("k")(np.float32(1.0)), name="other")
        t.start()
        t.join(10)
        owner.join(10)
    assert result == [[2.0, 8.0]]
    assert THREADS == {"cheap": "owner", "big": "owner"}


def test_start_runs_asynchronously_and_offloads_expensive_ops():
    THREADS.clear()
    n = executor.INLINE_BYTES // 4 + 1
    offloaded, finished = [], []
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pool")
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = _held_plan(g, x, n)
        done = threading.Event()

        def on_done(values, error):
            finished.append((values, error, threading.current_thread().name))
            done.set()

        def offload(fn):
            offloaded.append(fn)
            pool.submit(fn)

        # Started on a light thread: it runs until the hold waits, and returns at once.
        _from_light_thread(lambda: plan.start(StepContext(ResourceManager()), [np.float32(1.0)],
                                              on_done, offload))
        assert not finished and "k" in HELD
        _from_light_thread(lambda: HELD.pop("k")(np.float32(2.0)))
        assert done.wait(10)
    pool.shutdown()
    values, error, thread = finished[0]
    assert error is None and values == [4.0, 4.0 * n] and thread.startswith("pool")
    assert len(offloaded) == 1 and THREADS == {"cheap": "light", "big": thread}


def test_start_reports_kernel_failures_through_done():
    finished = []
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        failed = g.create_op("ZpsTestFailAsync", [x], {}, name="recv").outputs[0]
        Plan([x], [failed + 1.0], []).start(StepContext(ResourceManager()), [np.float32(1.0)],
                                            lambda v, e: finished.append((v, e)), None)
    [(values, error)] = finished
    assert values is None and isinstance(error, errors.AbortedError) and error.op_name == "recv"


def test_run_with_join_waits_for_the_futures_and_fails_early():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        plan = Plan([x], [x * 2.0], [])
        joined = concurrent.futures.Future()
        threading.Timer(0.2, lambda: joined.set_result(1)).start()
        assert run_joined(plan, [joined]) == [2.0] and joined.done()
        held = g.create_op("ZpsTestHold", [x], {"key": "j"}, name="hold").outputs[0]
        plan = Plan([x], [held + 1.0], [])
        joined = concurrent.futures.Future()
        threading.Timer(0.2, lambda: HELD.pop("j")(np.float32(2.0))).start()
        threading.Timer(0.4, lambda: joined.set_result(1)).start()
        assert run_joined(plan, [joined]) == [3.0] and joined.done()
        never = concurrent.futures.Future()   # a failing step does not wait for the others
        threading.Timer(0.2, lambda: HELD.pop("j")(errors.AbortedError(None, None, "gone"))).start()
        with pytest.raises(errors.AbortedError, match="gone"):
            run_joined(plan, [never])


def run_joined(plan, join):
    return plan.run(StepContext(ResourceManager()), [np.float32(1.0)], join=join)


def test_a_completion_delivered_while_a_light_thread_drives_runs_after_it():
    """A _Send to a task of this process completes the peer's Recv inside the sender's kernel:
    the receiving step continues after the sending one returns, not nested inside it."""
    order = []
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        held = g.create_op("ZpsTestHold", [x], {"key": "in"}, name="hold").outputs[0]
        after = g.create_op("ZpsTestWhere", [held], name="after").outputs[0]
        receiver = Plan([x], [after], [])
    inner = []

    def outer():
        HELD.pop("in")(np.float32(5.0))   # delivered while this "kernel" is still running
        order.append("outer done" if not inner else "nested")

    def body():
        receiver.start(StepContext(ResourceManager()), [np.float32(1.0)],
                       lambda v, e: inner.append((v, e)), None)
        assert "in" in HELD
        executor._on_light_thread(outer)

    _from_light_thread(body)
    assert order == ["outer done"] and inner == [([5.0], None)]


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


def test_batched_completions_continue_their_step_once():
    """A message delivering several tensors to one step (executor.batched) runs that step once
    after all of them are in, not once per tensor."""
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [])
        a = g.create_op("ZpsTestHold", [x], {"key": "a"}, name="a").outputs[0]
        b = g.create_op("ZpsTestHold", [x], {"key": "b"}, name="b").outputs[0]
        plan = Plan([x], [a + b], [])
    drives, finished = [], []
    original = executor._Run.drive_light

    def counting(run):
        drives.append(1)
        original(run)

    executor._Run.drive_light = counting
    try:
        def body():
            plan.start(StepContext(ResourceManager()), [np.float32(0.0)],
                       lambda v, e: finished.append((v, e)), None)
            drives.clear()   # the start itself drove once
            executor.batched(lambda: (HELD.pop("a")(np.float32(1.0)),
                                      HELD.pop("b")(np.float32(2.0))))

        _from_light_thread(body)
    finally:
        executor._Run.drive_light = original
    assert finished == [([3.0], None)] and len(drives) == 1


def test_which_stateful_ops_may_run_on_a_light_thread_is_declared_by_each_op():
    """Variables, assigns, applies, accumulators and queue ops say they never block or do I/O;
    random, PyFunc, checkpoint I/O and hash-table ops do not, so they never run on an I/O thread."""
    ops = registry.REGISTRY
    light = {t for t, d in ops.items() if d.stateful and d.light_ok}
    assert {"VariableV2", "AssignAdd", "ScatterAdd", "_Send", "_Recv", "ApplyAdagrad",
            "SparseApplyAdam", "AccumulatorApplyGradient", "QueueEnqueue", "QueueDequeue"} <= light
    assert all(t in light for t in ops if t.startswith(("Apply", "SparseApply")))
    assert not light & {"PyFunc", "RandomUniform", "RandomShuffle", "SaveShard", "RestoreShard",
                        "HashTableFind", "HashTableSparseApplyAdagrad"}
    assert all(d.light_ok for d in ops.values() if not d.stateful)
    assert {t: d.streams_input for t, d in ops.items() if d.streams_input is not None} == {
        "AssignAdd": 1, "AssignSub": 1, "ApplyGradientDescent": 2}


# -- steps that run no kernel ----------------------------------------------------------------------
def test_an_identity_that_only_passes_a_value_on_runs_no_kernel():
    """Its readers read its input; an identity ordered by or ordering control edges, or reading a
    variable, still runs (and waits) as a kernel."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        plain = tf.identity(x * 2.0)
        passed = Plan([x], [plain + 1.0, plain], [])
        assert passed.num_kernels == 2   # Mul and Add: the identity is gone
        assert run(passed, [np.float32(3.0)]) == [7.0, 6.0]
        first = counter(x, name="first")
        with tf.control_dependencies([first]):
            ordered = tf.identity(x)
        last = counter(ordered, name="last")
        RAN.clear()
        plan = Plan([x], [last], [])
        assert plan.num_kernels == 3 and run(plan, [np.float32(1.0)]) == [1.0]
        assert RAN == ["first", "last"]
        orders = tf.identity(x)
        with tf.control_dependencies([orders]):
            after = counter(x, name="after")
        assert Plan([x], [after], []).num_kernels == 2
        v = tf.Variable(1.0, name="v")
        assert Plan([], [tf.identity(v)], []).num_kernels == 1   # the read of v


def test_variable_containers_are_put_in_place_per_resource_manager():
    """A variable op runs no kernel: the plan looks its container up once per resource manager,
    so one plan run against two managers reads each one's variable."""
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        plan = Plan([], [v.value() + 1.0], [])
        assert plan.num_kernels == 2   # the read and the add
        managers = [ResourceManager(), ResourceManager()]
        for value, resources in zip((10.0, 20.0), managers):
            resources.variable("v").value = np.float32(value)
        for _ in range(2):
            got = [plan.run(StepContext(r), []) for r in managers]
            assert got == [[11.0], [21.0]]
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v"):
            plan.run(StepContext(ResourceManager()), [])


def test_a_variable_read_only_sent_is_read_by_its_send():
    """A ps sending a variable: the _Send reads the variable when it runs (no read kernel); a
    read that something else takes too still runs, once, for all its readers."""
    import zps.distributed.transfer_ops  # noqa: F401 - registers _Send

    with tf.Graph().as_default() as g:
        v = tf.Variable(0.0, name="v")
        send = g.create_op("_Send", [v.value()], {"key": "k", "dst": "/job:w/task:0"}, name="s")
        only_sent = Plan([], [], [send])
        read = v.value()
        send2 = g.create_op("_Send", [read], {"key": "k2", "dst": "/job:w/task:0"}, name="s2")
        also_added = Plan([], [read + 1.0], [send2])
    assert only_sent.num_kernels == 1 and also_added.num_kernels == 3
    resources = ResourceManager()
    resources.variable("v").value = np.float32(4.0)
    sent = {}
    ctx = StepContext(resources, extras={"send": lambda dst, key, value: sent.update({key: value}),
                                         "flush": lambda: None})
    only_sent.run(ctx, [])
    assert also_added.run(ctx, []) == [5.0]
    assert sent == {"k": 4.0, "k2": 4.0}
