"""The ResourceManager: variable containers, random generators and shared resources."""

import threading

import numpy as np
import pytest

from zps.framework import errors
from zps.runtime.resources import ResourceManager, VariableContainer


def test_variable_containers_are_created_once_and_start_uninitialized():
    rm = ResourceManager()
    c = rm.variable("layer/w")
    assert rm.variable("layer/w") is c and rm.variables() == {"layer/w": c}
    assert not c.initialized and c.value is None
    assert repr(c) == "<VariableContainer layer/w uninitialized>"
    with pytest.raises(errors.FailedPreconditionError, match="uninitialized value layer/w"):
        c.read()
    c.value = np.zeros((2, 3), np.float32)
    assert c.initialized and c.read() is c.value
    assert repr(c) == "<VariableContainer layer/w float32(2, 3)>"


def test_concurrent_creation_yields_one_container():
    rm = ResourceManager()
    seen = []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait(10)
        seen.append(rm.variable("shared"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(seen) == 8 and all(c is seen[0] for c in seen)


def test_container_lock_serializes_updates():
    c = VariableContainer("v")
    c.value = np.zeros((), np.float64)

    def add():
        for _ in range(1000):
            with c.lock:
                c.value = c.value + 1.0

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert c.value == 4000.0


def test_generators_are_kept_per_key_and_seeded():
    rm = ResourceManager()
    g = rm.generator("op", 1, 2)
    assert rm.generator("op", 1, 2) is g
    first = g.standard_normal(3)
    again = ResourceManager().generator("op", 1, 2).standard_normal(3)
    np.testing.assert_array_equal(first, again)
    other = ResourceManager().generator("op", 1, 3).standard_normal(3)
    assert not np.array_equal(first, other)
    u1 = ResourceManager().generator("u", 0, 0).standard_normal(3)
    u2 = ResourceManager().generator("u", 0, 0).standard_normal(3)
    assert not np.array_equal(u1, u2)  # unseeded: fresh entropy


class _Blocking:
    def __init__(self):
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


def test_lookup_or_create_builds_once_and_close_cancels():
    rm = ResourceManager()
    calls = []

    def factory():
        calls.append(1)
        return _Blocking()

    q = rm.lookup_or_create("queue", "q1", factory)
    assert rm.lookup_or_create("queue", "q1", factory) is q and len(calls) == 1
    acc = rm.lookup_or_create("accumulator", "a", factory)
    plain = rm.lookup_or_create("table", "t", dict)
    assert rm.resources("queue") == {("queue", "q1"): q}
    assert set(rm.resources()) == {("queue", "q1"), ("accumulator", "a"), ("table", "t")}
    rm.close()
    assert q.cancelled and acc.cancelled and plain == {}
