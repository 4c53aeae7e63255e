"""Queues and conditional accumulators: values, blocking, closing, cancellation, sharing."""

import threading
import time

import numpy as np
import pytest

import zps as tf
from zps.framework import errors
from zps.ops.data_flow_ops import (
    ConditionalAccumulator,
    FIFOQueue,
    SparseConditionalAccumulator,
)
from zps.testing.cluster import InProcessCluster

WAIT = 10.0  # every wait in these tests ends after this many seconds at most


def _in_thread(fn):
    """Run ``fn`` in a thread; returns (thread, box) where box gets 'value' or 'error'."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def _wait_until_waiting(resources, n=1):
    """Poll until ``n`` attempts wait in the queues/accumulators of ``resources``."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        waiting = sum(len(line) for r in resources.resources().values() for line in r._lines())
        if waiting >= n:
            return
        time.sleep(0.005)
    raise AssertionError("no step started waiting in time")


def _finish(t, box):
    t.join(WAIT)
    assert not t.is_alive(), "the blocked step did not finish in time"
    return box


# -- FIFOQueue: values and order ------------------------------------------------------------------
def test_fifo_order_multi_component_and_static_shapes():
    with tf.Graph().as_default():
        q = FIFOQueue(10, [tf.float32, tf.int64], shapes=[[2], []])
        x = tf.placeholder(tf.float32, [2])
        y = tf.placeholder(tf.int64, [])
        enq = q.enqueue((x, y))
        a, b = q.dequeue()
        assert a.get_shape().as_list() == [2] and b.get_shape().as_list() == []
        assert a.dtype == tf.float32 and b.dtype == tf.int64
        with tf.Session() as sess:
            for i in range(4):
                sess.run(enq, {x: [i, -i], y: 10 * i})
            assert sess.run(q.size()) == 4
            for i in range(4):
                va, vb = sess.run([a, b])
                np.testing.assert_array_equal(va, np.array([i, -i], np.float32))
                assert va.dtype == np.float32 and vb.dtype == np.int64 and vb == 10 * i
            assert sess.run(q.size()) == 0


def test_single_component_dequeue_is_a_tensor_and_names_give_dicts():
    with tf.Graph().as_default():
        q = FIFOQueue(3, tf.int32, shapes=[])
        assert isinstance(q.dequeue(), tf.Tensor)
        nq = FIFOQueue(3, [tf.int32, tf.float32], shapes=[[], [2]], names=["i", "v"])
        enq = nq.enqueue({"i": 3, "v": [1.0, 2.0]})
        out = nq.dequeue()
        assert sorted(out) == ["i", "v"]
        with tf.Session() as sess:
            sess.run(enq)
            got = sess.run(out)
        assert got["i"] == 3 and got["v"].tolist() == [1.0, 2.0]
        with pytest.raises(ValueError, match="must enqueue a dictionary"):
            nq.enqueue((1, [1.0, 2.0]))
        with pytest.raises(ValueError, match="do not match names"):
            nq.enqueue({"i": 1, "w": [1.0, 2.0]})


def test_enqueue_many_dequeue_many_and_up_to():
    with tf.Graph().as_default():
        q = FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
        enq = q.enqueue_many(([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]], [0, 1, 2, 3, 4]))
        xs, ys = q.dequeue_many(3)
        assert xs.get_shape().as_list() == [3, 2] and ys.get_shape().as_list() == [3]
        up_x, up_y = q.dequeue_up_to(4)
        assert up_x.get_shape().as_list() == [None, 2]
        with tf.Session() as sess:
            sess.run(enq)
            vx, vy = sess.run([xs, ys])
            np.testing.assert_array_equal(vx, [[0, 1], [2, 3], [4, 5]])
            np.testing.assert_array_equal(vy, [0, 1, 2])
            sess.run(q.close())
            vx, vy = sess.run([up_x, up_y])   # closed: returns the 2 left instead of 4
            np.testing.assert_array_equal(vy, [3, 4])
            assert vx.shape == (2, 2)
            z = sess.run(q.dequeue_many(0))
            assert z[0].shape == (0, 2) and z[1].shape == (0,)


def test_dequeue_many_larger_than_capacity_is_filled_as_elements_arrive():
    with tf.Graph().as_default():
        q = FIFOQueue(2, tf.int32, shapes=[])
        x = tf.placeholder(tf.int32, [])
        enq = q.enqueue(x)
        many = q.dequeue_many(5)
        with tf.Session() as sess:
            t, box = _in_thread(lambda: sess.run(many))
            for i in range(5):
                sess.run(enq, {x: i})
            assert _finish(t, box)["value"].tolist() == [0, 1, 2, 3, 4]


def test_enqueued_values_are_copies():
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0])
        q = FIFOQueue(2, tf.float32, shapes=[2])
        enq = q.enqueue(v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(enq)
            sess.run(tf.assign_add(v, [10.0, 10.0]))
            assert sess.run(q.dequeue()).tolist() == [1.0, 2.0]


# -- FIFOQueue: shapes and types ---------------------------------------------------------------------
def test_shape_errors_at_build_and_run_time():
    with tf.Graph().as_default():
        q = FIFOQueue(3, [tf.float32], shapes=[[2]])
        with pytest.raises(ValueError, match=r"component 0.*incompatible"):
            q.enqueue(tf.constant([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="incompatible"):
            q.enqueue_many(tf.constant([[1.0, 2.0, 3.0]]))
        with pytest.raises(ValueError, match="2 components but 1 values|1 components but 2"):
            q.enqueue((1.0, 2.0))
        with pytest.raises((TypeError, ValueError)):
            q.enqueue(tf.constant([1, 2]))  # int32 into a float32 queue
        p = tf.placeholder(tf.float32, None)
        enq = q.enqueue(p)
        enq_many = q.enqueue_many(p)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"Shape mismatch in tuple component 0\. Expected \[2\], got \[3\]"):
                sess.run(enq, {p: [1.0, 2.0, 3.0]})
            with pytest.raises(errors.InvalidArgumentError, match="Shape mismatch"):
                sess.run(enq_many, {p: [[1.0, 2.0, 3.0]]})
            assert sess.run(q.size()) == 0
    with tf.Graph().as_default():
        q = FIFOQueue(3, [tf.float32, tf.float32], shapes=[[], []])
        a = tf.placeholder(tf.float32, [None])
        b = tf.placeholder(tf.float32, [None])
        enq = q.enqueue_many((a, b))
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="same batch size"):
                sess.run(enq, {a: [1.0, 2.0], b: [1.0]})
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="same length"):
            FIFOQueue(3, [tf.float32, tf.int32], shapes=[[2]])


def test_dequeue_many_needs_fully_defined_shapes():
    with tf.Graph().as_default():
        q = FIFOQueue(3, tf.float32)
        enq = q.enqueue(1.0)
        with tf.Session() as sess:
            sess.run(enq)
            with pytest.raises(errors.InvalidArgumentError, match="require the components to "
                               "have specified shapes"):
                sess.run(q.dequeue_many(1))
            assert sess.run(q.dequeue()) == 1.0


# -- FIFOQueue: blocking ---------------------------------------------------------------------------
def test_blocking_dequeue_is_satisfied_by_an_enqueue_from_another_thread():
    with tf.Graph().as_default():
        q = FIFOQueue(3, tf.float32, shapes=[])
        deq = q.dequeue()
        enq = q.enqueue(7.0)
        with tf.Session() as sess:
            t, box = _in_thread(lambda: sess.run(deq))
            time.sleep(0.05)
            assert t.is_alive()  # waiting for an element
            sess.run(enq)
            assert _finish(t, box)["value"] == 7.0


def test_blocking_enqueue_on_a_full_queue_waits_for_a_dequeue():
    with tf.Graph().as_default():
        q = FIFOQueue(1, tf.float32, shapes=[])
        x = tf.placeholder(tf.float32, [])
        enq = q.enqueue(x)
        deq = q.dequeue()
        with tf.Session() as sess:
            sess.run(enq, {x: 1.0})
            t, box = _in_thread(lambda: sess.run(enq, {x: 2.0}))
            time.sleep(0.05)
            assert t.is_alive()
            assert sess.run(q.size()) == 1
            assert sess.run(deq) == 1.0
            _finish(t, box)
            assert "error" not in box
            assert sess.run(deq) == 2.0


def test_dequeue_and_other_ops_in_one_step():
    # The blocking op waits while the rest of the step proceeds, then the step completes.
    with tf.Graph().as_default():
        q = FIFOQueue(3, tf.float32, shapes=[])
        y = q.dequeue() * 2.0 + tf.constant(1.0)
        enq = q.enqueue(5.0)
        with tf.Session() as sess:
            t, box = _in_thread(lambda: sess.run(y))
            time.sleep(0.02)
            sess.run(enq)
            assert _finish(t, box)["value"] == 11.0


# -- FIFOQueue: close ----------------------------------------------------------------------------------
def test_close_semantics():
    with tf.Graph().as_default():
        q = FIFOQueue(5, tf.int32, shapes=[])
        enq = q.enqueue_many([[1, 2, 3]])
        deq = q.dequeue()
        with tf.Session() as sess:
            sess.run(enq)
            assert not sess.run(q.is_closed())
            sess.run(q.close())
            assert sess.run(q.is_closed())
            with pytest.raises(errors.CancelledError, match="is closed"):
                sess.run(q.enqueue(4))
            # dequeue_many with too few elements fails and leaves the elements in the queue
            with pytest.raises(errors.OutOfRangeError, match="requested 5, current size 3"):
                sess.run(q.dequeue_many(5))
            assert [sess.run(deq) for _ in range(3)] == [1, 2, 3]
            with pytest.raises(errors.OutOfRangeError) as info:
                sess.run(deq)
            msg = str(info.value)
            assert "is closed and has insufficient elements (requested 1, current size 0)" in msg
            assert "fifo_queue" in msg


def test_close_wakes_blocked_dequeues_with_out_of_range():
    with tf.Graph().as_default():
        q = FIFOQueue(5, tf.int32, shapes=[])
        deq = q.dequeue()
        with tf.Session() as sess:
            t, box = _in_thread(lambda: sess.run(deq))
            time.sleep(0.05)
            sess.run(q.close())
            assert isinstance(_finish(t, box)["error"], errors.OutOfRangeError)


def test_close_with_cancel_pending_enqueues():
    with tf.Graph().as_default():
        q = FIFOQueue(1, tf.int32, shapes=[])
        x = tf.placeholder(tf.int32, [])
        enq = q.enqueue(x)
        with tf.Session() as sess:
            sess.run(enq, {x: 1})
            t, box = _in_thread(lambda: sess.run(enq, {x: 2}))
            time.sleep(0.05)
            assert t.is_alive()
            sess.run(q.close(cancel_pending_enqueues=True))
            assert isinstance(_finish(t, box)["error"], errors.CancelledError)
            assert sess.run(q.dequeue()) == 1
            with pytest.raises(errors.OutOfRangeError):
                sess.run(q.dequeue())


def test_session_close_cancels_a_blocked_dequeue_promptly():
    with tf.Graph().as_default():
        q = FIFOQueue(1, tf.int32, shapes=[])
        deq = q.dequeue()
        sess = tf.Session()
        t, box = _in_thread(lambda: sess.run(deq))
        _wait_until_waiting(sess._runner.resources)
        start = time.monotonic()
        sess.close()
        err = _finish(t, box)["error"]
        assert time.monotonic() - start < 2.0
        assert isinstance(err, errors.CancelledError)
        assert "Dequeue operation was cancelled" in str(err)


# -- sharing --------------------------------------------------------------------------------------------
def test_shared_name_shares_one_queue_and_mismatch_is_an_error():
    with tf.Graph().as_default():
        q1 = FIFOQueue(3, tf.float32, shapes=[], shared_name="shared_q", name="q1")
        q2 = FIFOQueue(3, tf.float32, shapes=[], shared_name="shared_q", name="q2")
        bad = FIFOQueue(4, tf.float32, shapes=[], shared_name="shared_q", name="q3")
        with tf.Session() as sess:
            sess.run(q1.enqueue(3.0))
            assert sess.run(q2.size()) == 1
            assert sess.run(q2.dequeue()) == 3.0
            with pytest.raises(errors.InvalidArgumentError, match="already exists"):
                sess.run(bad.size())


@pytest.fixture
def cluster():
    with InProcessCluster({"ps": 1, "worker": 1}) as c:
        yield c


def test_queue_on_ps_shared_by_two_worker_sessions(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            q = FIFOQueue(2, [tf.float32, tf.int32], shapes=[[2], []], shared_name="work_q")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [2])
            enq = q.enqueue((x * 2.0, 7))
            a, b = q.dequeue()
            total = a + 1.0   # computed on the worker from the ps's dequeue
        assert enq.device.startswith("/job:ps")   # the queue's ops run where the queue lives
        target = cluster[("worker", 0)].target
        with tf.Session(target) as s1, tf.Session(target) as s2:
            t, box = _in_thread(lambda: s1.run([total, b]))
            time.sleep(0.1)
            assert t.is_alive()
            s2.run(enq, {x: [1.0, 2.0]})
            got = _finish(t, box)
            assert "error" not in got, got.get("error")
            np.testing.assert_allclose(got["value"][0], [3.0, 5.0])
            assert got["value"][1] == 7
            assert s2.run(q.size()) == 0
            assert "work_q" in [k[1] for k in cluster[("ps", 0)].resources.resources("queue")]


def test_server_stop_cancels_a_blocked_dequeue(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            q = FIFOQueue(2, tf.float32, shapes=[])
            deq = q.dequeue()
        sess = tf.Session(cluster[("worker", 0)].target)
        t, box = _in_thread(lambda: sess.run(deq))
        _wait_until_waiting(cluster[("worker", 0)].resources)
        cluster[("worker", 0)].stop()
        assert isinstance(_finish(t, box)["error"], errors.CancelledError)


def test_aborted_step_withdraws_its_dequeue(cluster):
    # A step that fails elsewhere cancels its waiting dequeue, which then takes no element.
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            q = FIFOQueue(2, tf.float32, shapes=[])
        with tf.device("/job:worker/task:0"):
            bad = tf.placeholder(tf.float32, [None])
            y = q.dequeue() + tf.reduce_sum(tf.reshape(bad, [2, 2]))
            enq = q.enqueue(1.0)
        with tf.Session(cluster[("worker", 0)].target) as sess:
            with pytest.raises(errors.InvalidArgumentError):
                sess.run(y, {bad: [1.0, 2.0, 3.0]})
            sess.run(enq)
            assert sess.run(q.size()) == 1
            assert sess.run(q.dequeue()) == 1.0


# -- ConditionalAccumulator -------------------------------------------------------------------------
def test_accumulator_mean_sum_and_reset():
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float32, shape=[2])
        g = tf.placeholder(tf.float32, [2])
        apply = acc.apply_grad(g)
        take = acc.take_grad(3)
        assert take.get_shape().as_list() == [2] and take.dtype == tf.float32
        total = ConditionalAccumulator(tf.float32, shape=[2], reduction_type="SUM")
        apply_sum = total.apply_grad(g)
        with tf.Session() as sess:
            grads = [[1.0, 2.0], [3.0, 4.0], [8.0, 0.0]]
            for v in grads:
                sess.run([apply, apply_sum], {g: v})
            assert sess.run(acc.num_accumulated()) == 3
            np.testing.assert_allclose(sess.run(take), np.mean(grads, axis=0))
            assert sess.run(acc.num_accumulated()) == 0
            np.testing.assert_allclose(sess.run(total.take_grad(3)), np.sum(grads, axis=0))
            # take_grad moved the accumulator to global step 1: local_step 0 is now stale
            sess.run(apply, {g: [100.0, 100.0]})
            assert sess.run(acc.num_accumulated()) == 0
            sess.run(acc.apply_grad([5.0, 5.0], local_step=1))
            np.testing.assert_allclose(sess.run(acc.take_grad(1)), [5.0, 5.0])


def test_accumulator_drops_stale_gradients_and_set_global_step():
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float64, shape=[])
        step = tf.placeholder(tf.int64, [])
        g = tf.placeholder(tf.float64, [])
        apply = acc.apply_grad(g, local_step=step)
        with tf.Session() as sess:
            sess.run(acc.set_global_step(10))
            sess.run(apply, {g: 1.0, step: 9})     # stale: dropped silently
            sess.run(apply, {g: 2.0, step: 10})
            sess.run(apply, {g: 4.0, step: 12})    # newer than the global step: kept
            assert sess.run(acc.num_accumulated()) == 2
            assert sess.run(acc.take_grad(2)) == 3.0


def test_accumulator_of_scalar_gradients_computed_in_the_graph():
    # numpy's arithmetic on 0-d arrays returns numpy scalars: the accumulator must still sum and
    # average them in place (it failed with "return arrays must be of ArrayType").
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float32, shape=[])
        x = tf.placeholder(tf.float32, [])
        apply = acc.apply_grad(2.0 * (x - 3.0))
        with tf.Session() as sess:
            sess.run(apply, {x: 0.0})
            sess.run(apply, {x: 1.0})
            assert sess.run(acc.take_grad(2)) == -5.0


def test_a_take_whose_output_fails_fails_instead_of_waiting_forever(monkeypatch):
    from zps.ops import data_flow_ops

    def broken(self, xp):
        raise TypeError("boom")
    monkeypatch.setattr(data_flow_ops._DenseAccumulator, "_output", broken)
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float32, shape=[2])
        take = acc.take_grad(1)
        with tf.Session() as sess:
            t, box = _in_thread(lambda: sess.run(take))
            time.sleep(0.05)
            sess.run(acc.apply_grad([1.0, 2.0]))
            error = _finish(t, box)["error"]
    assert isinstance(error, errors.InternalError)
    assert "could not output its gradient: TypeError: boom" in str(error)


def test_take_grad_blocks_until_num_required():
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float32, shape=[2])
        g = tf.placeholder(tf.float32, [2])
        apply = acc.apply_grad(g)
        take = acc.take_grad(2)
        with tf.Session() as sess:
            t, box = _in_thread(lambda: sess.run(take))
            sess.run(apply, {g: [1.0, 1.0]})
            time.sleep(0.05)
            assert t.is_alive()   # one of two gradients
            sess.run(apply, {g: [3.0, 5.0]})
            np.testing.assert_allclose(_finish(t, box)["value"], [2.0, 3.0])


def test_accumulator_errors():
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float32, shape=[2])
        with pytest.raises(ValueError, match="incompatible"):
            acc.apply_grad([1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="reduction_type"):
            ConditionalAccumulator(tf.float32, reduction_type="MAX")
        p = tf.placeholder(tf.float32, None)
        apply = acc.apply_grad(p)
        free = ConditionalAccumulator(tf.float32)
        apply_free = free.apply_grad(p)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="expected shape dim 0 to be 2"):
                sess.run(apply, {p: [1.0, 2.0, 3.0]})
            with pytest.raises(errors.InvalidArgumentError, match="must be positive, but was 0"):
                sess.run(acc.take_grad(0))
            sess.run(apply_free, {p: [1.0, 2.0]})
            with pytest.raises(errors.InvalidArgumentError, match=r"expected \[2\], got \[3\]"):
                sess.run(apply_free, {p: [1.0, 2.0, 3.0]})


def test_session_close_cancels_take_grad():
    with tf.Graph().as_default():
        acc = ConditionalAccumulator(tf.float32, shape=[])
        take = acc.take_grad(1)
        sess = tf.Session()
        t, box = _in_thread(lambda: sess.run(take))
        _wait_until_waiting(sess._runner.resources)
        sess.close()
        err = _finish(t, box)["error"]
        assert isinstance(err, errors.CancelledError) and "TakeGrad" in str(err)


def test_accumulator_on_ps_with_two_worker_sessions(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            acc = ConditionalAccumulator(tf.float32, shape=[3], shared_name="w/grad_accum")
        with tf.device("/job:worker/task:0"):
            g = tf.placeholder(tf.float32, [3])
            apply = acc.apply_grad(g * 1.0, local_step=0)
            take = acc.take_grad(2)
        target = cluster[("worker", 0)].target
        with tf.Session(target) as s1, tf.Session(target) as s2:
            t, box = _in_thread(lambda: s1.run(take))
            s1.run(apply, {g: [1.0, 2.0, 3.0]})
            s2.run(apply, {g: [3.0, 2.0, 1.0]})
            np.testing.assert_allclose(_finish(t, box)["value"], [2.0, 2.0, 2.0])


# -- SparseConditionalAccumulator -------------------------------------------------------------------
def test_sparse_accumulator_averages_per_index_and_sums_duplicates():
    with tf.Graph().as_default():
        acc = SparseConditionalAccumulator(tf.float32, shape=[5, 2])
        a = acc.apply_grad([3, 0], [[1.0, 1.0], [2.0, 2.0]])
        b = acc.apply_grad([3, 1, 1], [[3.0, 5.0], [1.0, 0.0], [2.0, 0.0]], grad_shape=[5, 2])
        take = acc.take_grad(2)
        assert take.values.get_shape().as_list() == [None, 2]
        with tf.Session() as sess:
            sess.run([a, b])
            assert sess.run(acc.num_accumulated()) == 2
            idx, val, shape = sess.run(take)
        assert idx.dtype == np.int64 and shape.dtype == np.int64
        assert idx.tolist() == [0, 1, 3]
        # row 0 from one gradient; row 1 = 1+2 from one gradient; row 3 = (1+3, 1+5) / 2
        np.testing.assert_allclose(val, [[2.0, 2.0], [3.0, 0.0], [2.0, 3.0]])
        assert shape.tolist() == [5, 2]


def test_sparse_accumulator_of_sorted_gradients_over_several_rounds():
    # Strictly increasing indices (as one accumulator's output feeds the next) are taken as they
    # are; the accumulator still owns its buffers: the inputs stay intact round after round.
    with tf.Graph().as_default():
        acc = SparseConditionalAccumulator(tf.float32, shape=[6, 1], reduction_type="MEAN")
        a_val = np.array([[2.0], [4.0], [6.0]], np.float32)
        a = acc.apply_grad(tf.constant([1, 2, 5], tf.int64), tf.constant(a_val), local_step=5)
        b = acc.apply_grad([2, 3], [[8.0], [1.0]], local_step=5)
        take = acc.take_grad(2)
        with tf.Session() as sess:
            sess.run(acc.set_global_step(5))
            for _ in range(2):
                sess.run(a)
                sess.run(b)
                idx, val, _ = sess.run(take)
                assert idx.tolist() == [1, 2, 3, 5]
                # Each row averaged over the gradients that carried it (TF1: per-row counts).
                np.testing.assert_allclose(val.ravel(), [2.0, 6.0, 1.0, 6.0])
                sess.run(acc.set_global_step(5))


def test_sparse_accumulator_indexed_slices_sum_and_stale():
    with tf.Graph().as_default():
        acc = SparseConditionalAccumulator(tf.float32, shape=(), reduction_type="SUM")
        slices = tf.IndexedSlices(tf.constant([[1.0], [2.0]]), tf.constant([4, 2]),
                                  tf.constant([10, 1]))
        apply = acc.apply_indexed_slices_grad(slices)
        stale = acc.apply_grad([0], [[50.0]], local_step=0)
        out = acc.take_indexed_slices_grad(2)
        assert isinstance(out, tf.IndexedSlices)
        assert out.values.get_shape().ndims is None and out.dense_shape.get_shape().as_list() == [None]
        with tf.Session() as sess:
            sess.run(apply)
            sess.run(apply)
            idx, val, shape = sess.run([out.indices, out.values, out.dense_shape])
            assert idx.tolist() == [2, 4]
            np.testing.assert_allclose(val, [[4.0], [2.0]])
            assert shape.tolist() == [-1, 1]   # the accumulator's shape gives no first dim
            sess.run(stale)                   # global step is 1 now
            assert sess.run(acc.num_accumulated()) == 0


def test_sparse_accumulator_errors():
    with tf.Graph().as_default():
        acc = SparseConditionalAccumulator(tf.float32, shape=[3, 2])
        i = tf.placeholder(tf.int64, None)
        v = tf.placeholder(tf.float32, None)
        apply = acc.apply_grad(i, v)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="index is 7 exceeded 3"):
                sess.run(apply, {i: [7], v: [[1.0, 1.0]]})
            with pytest.raises(errors.InvalidArgumentError, match="Expected 2 non-empty input "
                               "values, got 1"):
                sess.run(apply, {i: [0, 1], v: [[1.0, 1.0]]})
            with pytest.raises(errors.InvalidArgumentError, match="expected values dim 1 to be 2"):
                sess.run(apply, {i: [0], v: [[1.0, 1.0, 1.0]]})
            assert sess.run(acc.num_accumulated()) == 0


def test_failed_local_step_withdraws_its_dequeue():
    with tf.Graph().as_default():
        q = FIFOQueue(2, tf.float32, shapes=[])
        bad = tf.placeholder(tf.float32, [None])
        y = q.dequeue() + tf.reduce_sum(tf.reshape(bad, [2, 2]))
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError):
                sess.run(y, {bad: [1.0, 2.0, 3.0]})
            sess.run(q.enqueue(1.0))
            assert sess.run(q.size()) == 1   # no orphaned dequeue took the element


def test_concurrent_producers_and_consumers_deliver_each_element_once():
    with tf.Graph().as_default():
        q = FIFOQueue(4, tf.int32, shapes=[])
        x = tf.placeholder(tf.int32, [])
        enq = q.enqueue(x)
        deq = q.dequeue()
        with tf.Session() as sess:
            produce = [_in_thread(lambda k=k: [sess.run(enq, {x: 100 * k + i}) for i in range(40)])
                       for k in range(3)]
            consume = [_in_thread(lambda: [int(sess.run(deq)) for _ in range(30)])
                       for _ in range(4)]
            for t, box in produce:
                assert "error" not in _finish(t, box)
            got = []
            for t, box in consume:
                got += _finish(t, box)["value"]
            assert sorted(got) == sorted(100 * k + i for k in range(3) for i in range(40))
            assert sess.run(q.size()) == 0
