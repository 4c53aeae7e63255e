"""QueueRunner and start_queue_runners: filling a queue from threads, stopping promptly."""

import time

import numpy as np
import pytest

import zps as tf
from zps.framework import errors
from zps.framework.graph import GraphKeys
from zps.ops.data_flow_ops import FIFOQueue
from zps.train.coordinator import Coordinator
from zps.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners

WAIT = 10.0


def test_queue_runner_fills_a_queue_then_stops_with_the_coordinator():
    with tf.Graph().as_default():
        counter = tf.Variable(0.0)
        q = FIFOQueue(3, tf.float32, shapes=[])
        qr = QueueRunner(q, [q.enqueue(tf.assign_add(counter, 1.0))])
        batch = q.dequeue_many(5)
        with tf.Session() as sess:
            sess.run(counter.initializer)
            coord = Coordinator()
            threads = qr.create_threads(sess, coord=coord, start=True)
            assert len(threads) == 2   # the enqueue thread and the closer
            assert qr.create_threads(sess, coord=coord) == []   # already running
            np.testing.assert_array_equal(sess.run(batch), [1, 2, 3, 4, 5])
            deadline = time.monotonic() + WAIT
            while sess.run(q.size()) < 3 and time.monotonic() < deadline:
                time.sleep(0.005)
            assert sess.run(q.size()) == 3   # kept full, the enqueue thread waits
            start = time.monotonic()
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=WAIT)
            assert time.monotonic() - start < 2.0
            assert all(not t.is_alive() for t in threads)
            assert sess.run(q.is_closed())   # the closer cancelled the pending enqueue


def test_a_run_blocked_elsewhere_is_cancelled_when_the_coordinator_stops():
    # The enqueue waits on another queue that never fills (as a SyncReplicasOptimizer chief's
    # runner waits for gradients once the workers have stopped): closing its own queue does
    # not end that wait, so the stop cancels the run itself; TF1 waits out the grace period.
    with tf.Graph().as_default():
        never_fed = FIFOQueue(1, tf.float32, shapes=[])
        q = FIFOQueue(1, tf.float32, shapes=[])
        qr = QueueRunner(q, [q.enqueue(never_fed.dequeue())])
        with tf.Session() as sess:
            coord = Coordinator()
            threads = qr.create_threads(sess, coord=coord, start=True)
            time.sleep(0.1)   # its run now waits on never_fed
            start = time.monotonic()
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=WAIT)   # RuntimeError if one still runs
            assert time.monotonic() - start < 2.0
            assert all(not t.is_alive() for t in threads)
            assert sess.run(q.size()) == 0 and sess.run(never_fed.size()) == 0


def test_input_exhausted_closes_the_queue_and_readers_drain_it():
    with tf.Graph().as_default():
        source = FIFOQueue(10, tf.int32, shapes=[])
        fill = source.enqueue_many([[1, 2, 3, 4]])
        close_source = source.close()
        q = FIFOQueue(10, tf.int32, shapes=[])
        # two enqueue threads read from the source; OutOfRange ends them cleanly
        qr = QueueRunner(q, [q.enqueue(source.dequeue() * 10)] * 2)
        with tf.Session() as sess:
            sess.run([fill])
            sess.run(close_source)
            coord = Coordinator()
            threads = qr.create_threads(sess, coord=coord, daemon=True, start=True)
            deq = q.dequeue()
            got = []
            with pytest.raises(errors.OutOfRangeError):
                for _ in range(10):
                    got.append(int(sess.run(deq)))
            assert sorted(got) == [10, 20, 30, 40]
            assert not coord.should_stop()   # a clean end, not an error
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=WAIT)
            assert qr.exceptions_raised == []


def test_enqueue_error_is_reported_to_the_coordinator():
    with tf.Graph().as_default():
        q = FIFOQueue(3, tf.float32, shapes=[])
        v = tf.Variable(1.0)   # never initialized: the enqueue fails
        qr = QueueRunner(q, [q.enqueue(v.value())])
        with tf.Session() as sess:
            coord = Coordinator()
            threads = qr.create_threads(sess, coord=coord, start=True)
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
                coord.join(threads, stop_grace_period_secs=WAIT)


def test_without_coordinator_errors_are_kept_in_exceptions_raised():
    with tf.Graph().as_default():
        q = FIFOQueue(3, tf.float32, shapes=[])
        v = tf.Variable(1.0)
        qr = QueueRunner(q, [q.enqueue(v.value())])
        with tf.Session() as sess:
            threads = qr.create_threads(sess)
            assert len(threads) == 1
            # run the thread's body here: it re-raises, as TF1's thread would
            with pytest.raises(errors.FailedPreconditionError):
                threads[0].run()
            assert len(qr.exceptions_raised) == 1


def test_start_queue_runners_uses_the_collection_and_default_session():
    with tf.Graph().as_default() as g:
        q = FIFOQueue(2, tf.float32, shapes=[])
        qr = QueueRunner(q, [q.enqueue(1.0), q.enqueue(2.0)])
        add_queue_runner(qr)
        assert g.get_collection(GraphKeys.QUEUE_RUNNERS) == [qr]
        assert qr.name == q.name and qr.queue is q and len(qr.enqueue_ops) == 2
        with pytest.raises(ValueError, match="No default session"):
            start_queue_runners()
        with tf.Session() as sess:
            coord = Coordinator()
            threads = start_queue_runners(coord=coord)
            assert len(threads) == 3 and all(t.daemon for t in threads)
            values = {float(sess.run(q.dequeue())) for _ in range(6)}
            assert values <= {1.0, 2.0}
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=WAIT)


def test_bad_arguments():
    with tf.Graph().as_default():
        q = FIFOQueue(2, tf.float32, shapes=[])
        with pytest.raises(ValueError, match="queue and enqueue_ops"):
            QueueRunner(q, [])
        with pytest.raises(TypeError, match="queue_closed_exception_types"):
            QueueRunner(q, [q.enqueue(1.0)], queue_closed_exception_types=(ValueError,))
        qr = QueueRunner(q, [q.enqueue(1.0)],
                         queue_closed_exception_types=(errors.OutOfRangeError,
                                                       errors.CancelledError))
        assert qr.queue_closed_exception_types == (errors.OutOfRangeError, errors.CancelledError)
