"""Coordinator and LooperThread: stopping threads together and reporting their errors."""

import sys
import threading
import time

import pytest

from zps.framework import errors
from zps.train.coordinator import Coordinator, LooperThread

WAIT = 10.0


def _loop_until_stop(coord, counter):
    while not coord.should_stop():
        counter.append(1)
        time.sleep(0.001)


def test_request_stop_stops_threads_and_join_returns():
    coord = Coordinator()
    counts = [[], []]
    threads = [threading.Thread(target=_loop_until_stop, args=(coord, c)) for c in counts]
    for t in threads:
        t.start()
    assert not coord.should_stop()
    assert not coord.wait_for_stop(0.01)
    coord.request_stop()
    assert coord.should_stop() and coord.wait_for_stop(0)
    coord.join(threads, stop_grace_period_secs=WAIT)
    assert coord.joined
    assert all(not t.is_alive() for t in threads)


def test_join_returns_when_all_threads_end_without_a_stop():
    coord = Coordinator()
    t = threading.Thread(target=lambda: None)
    t.start()
    start = time.monotonic()
    coord.join([t], stop_grace_period_secs=WAIT)
    assert time.monotonic() - start < 2.0
    assert not coord.should_stop()


def test_join_reraises_the_first_exception_with_its_traceback():
    coord = Coordinator()

    def fail(msg):
        with coord.stop_on_exception():
            raise ValueError(msg)

    t = threading.Thread(target=fail, args=("first",))
    coord.register_thread(t)
    t.start()
    t.join(WAIT)
    coord.request_stop(RuntimeError("second"))   # ignored: a stop was already requested
    with pytest.raises(ValueError, match="first") as info:
        coord.join(stop_grace_period_secs=WAIT)
    assert any(f.name == "fail" for f in info.traceback)


def test_clean_stop_exceptions_are_not_reported():
    coord = Coordinator()
    coord.request_stop(errors.OutOfRangeError(None, None, "input exhausted"))
    assert coord.should_stop()
    coord.join([], stop_grace_period_secs=WAIT)
    custom = Coordinator(clean_stop_exception_types=(KeyError,))
    custom.request_stop(KeyError("k"))
    custom.join([], stop_grace_period_secs=WAIT)
    reported = Coordinator(clean_stop_exception_types=(KeyError,))
    reported.request_stop(errors.OutOfRangeError(None, None, "now an error"))
    with pytest.raises(errors.OutOfRangeError):
        reported.join([])


def test_exception_instance_outside_except_block_and_exc_info_tuple():
    coord = Coordinator()
    coord.request_stop(ValueError("plain instance"))
    with pytest.raises(ValueError, match="plain instance"):
        coord.raise_requested_exception()
    coord2 = Coordinator()
    try:
        raise KeyError("from exc_info")
    except KeyError:
        coord2.request_stop(sys.exc_info())
    with pytest.raises(KeyError, match="from exc_info"):
        coord2.join([])


def test_clear_stop_resets():
    coord = Coordinator()
    coord.request_stop(ValueError("x"))
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.raise_requested_exception()   # nothing to raise
    coord.request_stop()
    coord.join([])


def test_join_names_threads_that_do_not_stop():
    coord = Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(WAIT,), name="stubborn")
    t.start()
    try:
        coord.request_stop()
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="threads still running: stubborn"):
            coord.join([t], stop_grace_period_secs=0.05)
        assert time.monotonic() - start < 2.0
        coord.clear_stop()
        coord.request_stop()
        coord.join([t], stop_grace_period_secs=0.01, ignore_live_threads=True)
    finally:
        release.set()
        t.join(WAIT)


def test_request_stop_after_join_raises_directly():
    coord = Coordinator()
    coord.request_stop()
    coord.join([])
    with pytest.raises(ValueError, match="late"):
        coord.request_stop(ValueError("late"))
    coord.request_stop()   # no exception: nothing to raise


def test_looper_thread_timer_and_target():
    coord = Coordinator()
    calls = []
    looper = LooperThread.loop(coord, 0.01, target=calls.append, args=(1,))
    deadline = time.monotonic() + WAIT
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    coord.request_stop()
    coord.join([looper], stop_grace_period_secs=WAIT)
    assert len(calls) >= 3 and not looper.is_alive()


def test_looper_thread_reports_errors():
    coord = Coordinator()

    def boom():
        raise ValueError("looper failed")

    LooperThread.loop(coord, None, target=boom)
    with pytest.raises(ValueError, match="looper failed"):
        coord.join(stop_grace_period_secs=WAIT)
    with pytest.raises(ValueError, match="require that you also pass"):
        LooperThread(Coordinator(), None, args=(1,))
    with pytest.raises(ValueError, match="Coordinator"):
        LooperThread(object(), None)
