"""Large pushes applied while they stream in (zps.transport.codec.Incoming): an in-place update
reading a tensor still arriving applies it range by range, undoes what it applied if the stream
stops, and gives exactly what the whole tensor would have given."""

import threading
import time

import numpy as np
import pytest

from zps.distributed.rendezvous import Rendezvous
from zps.framework import errors
from zps.framework.registry import get_op_def
from zps.runtime.executor import StepContext
from zps.runtime.resources import ResourceManager
from zps.transport.codec import Incoming

pytestmark = pytest.mark.timeout(60)
N = 1 << 16


class _Ref:
    """A variable's container as update kernels see it."""

    def __init__(self, value):
        self.value = value
        self.name = "v"
        self.lock = threading.Lock()
        self.initialized = True

    def read(self):
        return self.value

    def writable(self):
        return self.value


def _arriving(data):
    return Incoming(np.empty_like(data))


def _deliver(incoming, data, upto, parts=4):
    """Hand ``data`` over as the assembler would, in ``parts`` pieces, up to element ``upto``."""
    step = len(data) // parts
    raw, dst = memoryview(data.view(np.uint8)), memoryview(incoming.array.view(np.uint8))
    start = incoming._received // data.itemsize
    for stop in range(start + step, upto + 1, step):
        incoming._take(start * data.itemsize,
                       [raw[start * data.itemsize:stop * data.itemsize]], dst)
        start = stop
        time.sleep(0.01)


def _kernel(op_type):
    return get_op_def(op_type).kernel_for("numpy")


def _run_in_thread(fn):
    out = []

    def body():
        try:
            out.append(fn())
        except Exception as e:  # noqa: BLE001 - checked by the test
            out.append(e)

    t = threading.Thread(target=body)
    t.start()
    return t, out


@pytest.mark.parametrize("op_type, expected", [
    ("AssignAdd", lambda v, d: v + d), ("AssignSub", lambda v, d: v - d)])
def test_assign_add_applies_a_tensor_while_it_arrives(op_type, expected):
    rng = np.random.default_rng(0)
    start = rng.standard_normal(N).astype(np.float32)
    data = rng.standard_normal(N).astype(np.float32)
    ref, incoming = _Ref(start.copy()), _arriving(data)
    t, out = _run_in_thread(lambda: _kernel(op_type)(StepContext(ResourceManager()), ref,
                                                     incoming, False))
    _deliver(incoming, data, N // 2)
    deadline = time.monotonic() + 10
    while ref.value[N // 4 - 1] == start[N // 4 - 1] and time.monotonic() < deadline:
        time.sleep(0.005)
    assert ref.value[0] == expected(start, data)[0]   # applied before the rest arrived
    assert ref.value[-1] == start[-1]
    _deliver(incoming, data, N)
    t.join(10)
    np.testing.assert_array_equal(out[0], expected(start, data))
    np.testing.assert_array_equal(ref.value, expected(start, data))


def test_apply_gradient_descent_streamed_equals_the_whole_update():
    rng = np.random.default_rng(1)
    start = rng.standard_normal(N).astype(np.float32)
    grad = rng.standard_normal(N).astype(np.float32)
    whole = _Ref(start.copy())
    _kernel("ApplyGradientDescent")(StepContext(ResourceManager()), whole, np.float32(0.25),
                                    grad, False)
    ref, incoming = _Ref(start.copy()), _arriving(grad)
    t, out = _run_in_thread(lambda: _kernel("ApplyGradientDescent")(
        StepContext(ResourceManager()), ref, np.float32(0.25), incoming, True))
    _deliver(incoming, grad, N)
    t.join(10)
    np.testing.assert_array_equal(ref.value, whole.value)   # bit for bit


@pytest.mark.parametrize("how", ["stream stops", "step cancelled"])
def test_a_push_that_stops_arriving_is_undone(how):
    start = np.arange(N, dtype=np.float32)
    data = np.full(N, 3.0, np.float32)
    ref, incoming = _Ref(start.copy()), _arriving(data)
    ctx = StepContext(ResourceManager())
    t, out = _run_in_thread(lambda: _kernel("AssignAdd")(ctx, ref, incoming, False))
    _deliver(incoming, data, N // 2)
    deadline = time.monotonic() + 10
    while ref.value[N // 2 - 1] == start[N // 2 - 1] and time.monotonic() < deadline:
        time.sleep(0.005)
    assert ref.value[N // 2 - 1] == start[N // 2 - 1] + 3.0   # half was applied...
    if how == "stream stops":
        incoming.fail(ConnectionError("sender went away"))
    else:
        ctx.cancel(errors.CancelledError(None, None, "step cancelled"))
    t.join(10)
    np.testing.assert_array_equal(ref.value, start)               # ...and undone
    if how == "stream stops":
        assert isinstance(out[0], errors.AbortedError)
        assert "stopped after %d of %d elements" % (N // 2, N) in str(out[0])
        assert "sender went away" in str(out[0])
    else:
        assert isinstance(out[0], errors.CancelledError)


def test_a_streamed_value_of_the_wrong_shape_is_refused_before_anything_is_applied():
    ref = _Ref(np.zeros(N, np.float32))
    incoming = _arriving(np.zeros(N + 1, np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="shapes of both tensors to match"):
        _kernel("AssignAdd")(StepContext(ResourceManager()), ref, incoming, False)


def test_rendezvous_hands_a_streaming_tensor_only_to_receivers_that_take_it():
    data = np.arange(N, dtype=np.float32)
    r = Rendezvous()
    early, whole, failed = [], [], []
    streaming, waited, broken = _arriving(data), _arriving(data), _arriving(data)
    r.recv(1, "a", early.append, stream_ok=True)
    r.put(1, "a", streaming)
    r.put(1, "b", waited)                       # sent before its receiver asks
    r.recv(1, "b", whole.append)
    r.recv(1, "c", failed.append)
    r.put(1, "c", broken)
    assert early == [streaming] and whole == [] and failed == []
    _deliver(waited, data, N)
    assert len(whole) == 1 and whole[0] is waited.array
    broken.fail(ConnectionError("gone"))
    assert isinstance(failed[0], errors.AbortedError) and "gone" in str(failed[0])


def test_a_gradient_that_stops_arriving_is_undone():
    start = np.arange(N, dtype=np.float32)
    grad = np.full(N, 2.0, np.float32)
    ref, incoming = _Ref(start.copy()), _arriving(grad)
    ctx = StepContext(ResourceManager())
    t, out = _run_in_thread(lambda: _kernel("ApplyGradientDescent")(
        ctx, ref, np.float32(0.25), incoming, True))
    _deliver(incoming, grad, N // 2)
    deadline = time.monotonic() + 10
    while ref.value[0] == start[0] and time.monotonic() < deadline:
        time.sleep(0.005)
    assert ref.value[0] == start[0] - 0.5                         # applied while arriving...
    incoming.fail(ConnectionError("sender went away"))
    t.join(10)
    np.testing.assert_array_equal(ref.value, start)               # ...and undone
    assert isinstance(out[0], errors.AbortedError)
