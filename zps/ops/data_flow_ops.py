"""Queues and gradient accumulators: stateful resources that steps share and wait on.

A queue (or accumulator) op is a resource op like ``VariableV2``: it outputs a reference to a
resource held by the ResourceManager of the task it is placed on, looked up by its
``shared_name`` (else its op name), so every session stepping against that task shares it. The ops
that use it take the reference as a ref input and are colocated with it, so they run where the
resource lives. Waiting ops (a dequeue on an empty queue, an enqueue on a full one, ``take_grad``
before enough gradients arrived) are asynchronous kernels: they queue an *attempt* and return;
the attempt's ``done`` is called later, by whichever step makes progress possible, by ``close``,
or with ``CancelledError`` when the step is aborted or the resource's owner (session or server)
closes. No thread ever blocks inside a kernel.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     q = tf.FIFOQueue(3, [tf.float32, tf.int32], shapes=[[2], []])
...     enq = q.enqueue_many([[[1.0, 2.0], [3.0, 4.0]], [7, 8]])
...     x, y = q.dequeue()
...     with tf.Session() as sess:
...         sess.run(enq)
...         x1, y1 = sess.run([x, y])
...         n = sess.run(q.size())
>>> x1.tolist(), int(y1), int(n)
([1.0, 2.0], 7, 1)
"""

import collections
import logging
import threading

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import IndexedSlices, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import math_ops
from zps.ops.op_util import make_op
from zps.ops.random_ops import get_seed

_logger = logging.getLogger(__name__)


# -- attempts and cancellation ------------------------------------------------------------------
class _Attempt:
    """One waiting kernel call: ``done`` is called exactly once (under the resource's rules)."""

    __slots__ = ("done", "line", "finished", "what", "n", "taken", "elements", "allow_small",
                 "single", "xp", "unwatch")

    def __init__(self, done, what, xp):
        self.done = done
        self.what = what          # "Enqueue" / "Dequeue" / "TakeGrad": names it in errors
        self.xp = xp
        self.line = None          # the deque of attempts it waits in
        self.finished = False
        self.unwatch = None       # stops watching the step for cancellation


def _watch_step(ctx, cancel):
    """Call ``cancel(error)`` if the step of ``ctx`` is cancelled (step abort, session close,
    server stop) while an attempt waits; returns the function that stops watching."""
    return ctx.on_cancel(cancel)


class _BlockingResource:
    """Shared machinery: a lock, lines of waiting attempts, cancellation."""

    type_name = "Resource"

    def __init__(self, name):
        self.name = name
        self._lock = threading.Lock()
        self._cancelled = False

    def read(self):
        # Fetching the handle itself gives its name, as TF1's string handle.
        return np.array(self.name.encode(), dtype=object)

    def _submit(self, ctx, attempt, line):
        """Queue ``attempt`` in ``line``, make what progress is possible, watch its step."""
        with self._lock:
            if self._cancelled:
                attempt.finished = True
                done = [(attempt.done, self._cancelled_error(attempt.what))]
            else:
                attempt.line = line
                line.append(attempt)
                done = self._flush_locked()
        _deliver(done)
        if not attempt.finished:
            attempt.unwatch = _watch_step(ctx, lambda error: self._abort(attempt, error))
            if attempt.finished and attempt.unwatch is not None:
                attempt.unwatch()   # finished meanwhile (it would ignore the cancellation anyway)

    def _abort(self, attempt, error):
        with self._lock:
            if attempt.finished:
                return
            attempt.finished = True
            attempt.line.remove(attempt)
            self._restore_locked(attempt)
            done = [(attempt.done, errors.CancelledError(
                None, None, "%s operation was cancelled: %s"
                % (attempt.what, getattr(error, "message", error))))]
            done += self._flush_locked()
        _deliver(done)

    def cancel(self):
        """Fail every waiting attempt with CancelledError (the session or server closes)."""
        with self._lock:
            self._cancelled = True
            waiting = [a for line in self._lines() for a in line]
            for line in self._lines():
                line.clear()
            for a in waiting:
                a.finished = True
        _deliver([(a.done, self._cancelled_error(a.what)) for a in waiting])

    def _cancelled_error(self, what):
        return errors.CancelledError(
            None, None, "%s operation was cancelled: the session or server holding %s '%s' was "
            "closed" % (what, self.type_name, self.name))

    @staticmethod
    def _finish(attempt, result, out):
        attempt.finished = True
        out.append((attempt.done, result))
        if attempt.unwatch is not None:
            out.append((lambda _: attempt.unwatch(), None))

    def _lines(self):
        return ()

    def _restore_locked(self, attempt):
        pass

    def _flush_locked(self):
        return []


def _deliver(done):
    for callback, result in done:
        callback(result)


# -- the FIFO queue resource --------------------------------------------------------------------
class _FIFOQueue(_BlockingResource):
    type_name = "FIFOQueue"
    partial_shapes = False    # shapes with unknown dimensions (a padding queue)

    def __init__(self, name, capacity, dtypes, shapes):
        super().__init__(name)
        self.capacity = capacity if capacity >= 0 else float("inf")
        self.dtypes = tuple(dtypes)
        self.shapes = shapes      # tuple of tuples (fully defined but for padding), or None
        self.closed = False
        self._elements = collections.deque()
        self._enqueues = collections.deque()
        self._dequeues = collections.deque()

    def matches(self, capacity, dtypes, shapes):
        cap = capacity if capacity >= 0 else float("inf")
        return cap == self.capacity and tuple(dtypes) == self.dtypes and shapes == self.shapes

    def size(self):
        with self._lock:
            return len(self._elements)

    def _lines(self):
        return (self._enqueues, self._dequeues)

    # Enqueue: ``elements`` is a list of tuples (one per queue element).
    def enqueue(self, ctx, done, elements):
        if not elements:
            done(None)
            return
        attempt = _Attempt(done, "Enqueue", ctx.xp)
        attempt.elements = collections.deque(elements)
        self._submit(ctx, attempt, self._enqueues)

    def dequeue(self, ctx, done, n, single, allow_small):
        attempt = _Attempt(done, "Dequeue", ctx.xp)
        attempt.n, attempt.single, attempt.allow_small = n, single, allow_small
        attempt.taken = []
        self._submit(ctx, attempt, self._dequeues)

    def close(self, cancel_pending_enqueues):
        with self._lock:
            self.closed = True
            done = []
            if cancel_pending_enqueues:
                for a in self._enqueues:
                    self._finish(a, errors.CancelledError(
                        None, None, "Queue '%s' is already closed." % self.name), done)
                self._enqueues.clear()
            done += self._flush_locked()
        _deliver(done)

    def _restore_locked(self, attempt):
        if attempt.what == "Dequeue" and attempt.taken:
            self._elements.extendleft(reversed(attempt.taken))
            attempt.taken = []

    def _flush_locked(self):
        out = []
        progress = True
        while progress:
            progress = self._flush_enqueues(out) | self._flush_dequeues(out)
        return out

    def _flush_enqueues(self, out):
        progress = False
        while self._enqueues:
            a = self._enqueues[0]
            if self.closed:
                self._enqueues.popleft()
                self._finish(a, errors.CancelledError(
                    None, None, "%s '%s' is closed." % (self.type_name, self.name)), out)
                progress = True
                continue
            while a.elements and len(self._elements) < self.capacity:
                self._elements.append(a.elements.popleft())
                progress = True
            if a.elements:
                break
            self._enqueues.popleft()
            self._finish(a, None, out)
        return progress

    def _flush_dequeues(self, out):
        progress = False
        while self._dequeues:
            a = self._dequeues[0]
            if self.closed and len(self._elements) < a.n - len(a.taken):
                self._restore_locked(a)
                if a.allow_small and self._elements:
                    a.n = len(self._elements)
                else:
                    self._dequeues.popleft()
                    self._finish(a, errors.OutOfRangeError(
                        None, None, "%s '%s' is closed and has insufficient elements "
                        "(requested %d, current size %d)"
                        % (self.type_name, self.name, a.n, len(self._elements))), out)
                    progress = True
                    continue
            while len(a.taken) < a.n and self._can_take():
                a.taken.append(self._take())
                progress = True
            if len(a.taken) < a.n:
                break
            self._dequeues.popleft()
            self._finish(a, self._assemble(a), out)
        return progress

    def _can_take(self):
        return bool(self._elements)

    def _take(self):
        return self._elements.popleft()

    @staticmethod
    def _assemble(a):
        if a.single:
            return a.taken[0]
        xp = a.xp
        return tuple(xp.stack([t[i] for t in a.taken]) for i in range(len(a.taken[0])))


class _RandomShuffleQueue(_FIFOQueue):
    """Dequeues a uniformly random element, keeping ``min_after_dequeue`` elements until closed
    (so later elements mix with earlier ones), as TF1's RandomShuffleQueue."""

    type_name = "RandomShuffleQueue"

    def __init__(self, name, capacity, dtypes, shapes, min_after_dequeue, seed, seed2):
        super().__init__(name, capacity, dtypes, shapes)
        self.min_after_dequeue = min_after_dequeue
        self._seeds = (seed, seed2)
        # (0, 0): TF1's "nondeterministic"; otherwise the same order for the same seeds.
        self._rng = np.random.default_rng(None if self._seeds == (0, 0) else self._seeds)

    def matches(self, capacity, dtypes, shapes, min_after_dequeue=None, seed=None, seed2=None):
        return (super().matches(capacity, dtypes, shapes)
                and (min_after_dequeue, seed, seed2) == (self.min_after_dequeue, *self._seeds))

    def _can_take(self):
        return len(self._elements) > (0 if self.closed else self.min_after_dequeue)

    def _take(self):
        # Swap a random element to the end and pop it: O(1) removal, order is irrelevant.
        i = int(self._rng.integers(len(self._elements)))
        self._elements[i], self._elements[-1] = self._elements[-1], self._elements[i]
        return self._elements.pop()


class _PaddingFIFOQueue(_FIFOQueue):
    """A FIFOQueue whose shapes may have unknown dimensions: a dequeue_many pads each component
    to the largest element taken (with 0, or b"" for strings), as TF1's PaddingFIFOQueue."""

    type_name = "PaddingFIFOQueue"
    partial_shapes = True

    def _assemble(self, a):
        if a.single:
            return a.taken[0]
        out = []
        for i in range(len(a.taken[0])):
            parts = [t[i] for t in a.taken]
            dims = tuple(max(p.shape[d] for p in parts) for d in range(parts[0].ndim))
            batch = a.xp.full((len(parts),) + dims, b"" if parts[0].dtype == object else 0,
                              dtype=parts[0].dtype)
            for k, p in enumerate(parts):
                batch[(k,) + tuple(slice(0, n) for n in p.shape)] = p
            out.append(batch)
        return tuple(out)


def _queue_kernel(cls):
    def kernel(ctx, capacity, component_types, shapes, shared_name, op_name, **extra):
        name = shared_name or op_name
        dts = tuple(_dtypes.as_dtype(d).as_numpy_dtype for d in component_types)
        shp = _partial_shapes(shapes) if cls.partial_shapes else _specified_shapes(shapes)
        q = ctx.resources.lookup_or_create(
            "queue", name, lambda: cls(name, capacity, dts, shp, **extra))
        if type(q) is not cls or not q.matches(capacity, dts, shp, **extra):
            raise errors.InvalidArgumentError(
                None, None, "Shared queue '%s' already exists as a %s with different capacity, "
                "types, shapes or options (capacity %s, types %s, shapes %s); a %s was asked for"
                % (name, q.type_name, q.capacity, list(q.dtypes), q.shapes, cls.type_name))
        return q
    return kernel


def _specified_shapes(shapes):
    if not shapes or any(s is None or any(d is None for d in s) for s in shapes):
        return None
    return tuple(tuple(int(d) for d in s) for s in shapes)


def _partial_shapes(shapes):
    return tuple(tuple(None if d is None else int(d) for d in s) for s in shapes)


for _type, _cls in (("FIFOQueue", _FIFOQueue), ("RandomShuffleQueue", _RandomShuffleQueue),
                    ("PaddingFIFOQueue", _PaddingFIFOQueue)):
    register_op(_type, dtype=lambda op: _dtypes.string, shape=lambda op: TensorShape([]),
                kernel=_queue_kernel(_cls), stateful=True, light_ok=True, ref_output=True,
                needs_op_name=True, grad=None)


def _queue_output_shapes(op, leading):
    shapes = op._attrs["shapes"]
    n = len(op._attrs["component_types"])
    if not shapes:
        return [unknown_shape()] * n
    if leading is None:
        return [as_shape(s) for s in shapes]
    return [TensorShape(leading).concatenate(as_shape(s)) for s in shapes]


def _component_dtypes(op):
    return list(op._attrs["component_types"])


def _tuple_of(values, component_types, shapes, queue, many):
    """Validate an enqueued tuple against the queue's types and shapes; returns its arrays."""
    arrays = []
    batch = None
    for i, (v, dt) in enumerate(zip(values, component_types)):
        v = np.asarray(v) if not hasattr(v, "shape") else v
        if v.dtype != _dtypes.as_dtype(dt).as_numpy_dtype:
            v = v.astype(_dtypes.as_dtype(dt).as_numpy_dtype)
        if many:
            if v.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, None, "Enqueue many to queue '%s': component %d is a scalar, but every "
                    "component needs a batch dimension" % (queue.name, i))
            if batch is None:
                batch = v.shape[0]
            elif v.shape[0] != batch:
                raise errors.InvalidArgumentError(
                    None, None, "Enqueue many to queue '%s': all components must have the same "
                    "batch size (first dimension); component 0 has %d, component %d has %d"
                    % (queue.name, batch, i, v.shape[0]))
        if shapes:
            expected = tuple(shapes[i])
            got = v.shape[1:] if many else v.shape
            if len(got) != len(expected) or any(e is not None and e != g
                                                for e, g in zip(expected, got)):
                raise errors.InvalidArgumentError(
                    None, None, "Shape mismatch in tuple component %d. Expected %s, got %s "
                    "(queue '%s'%s)" % (i, list(expected), list(got), queue.name,
                                        ", element shape without the batch dimension"
                                        if many else ""))
        # A copy: a queued value must not change when the array it came from (a variable) does.
        arrays.append(v.copy())
    return arrays


# -- QueueEnqueue / QueueEnqueueMany ------------------------------------------------------------
def _enqueue_kernel(ctx, done, queue, *components, component_types, shapes):
    try:
        arrays = _tuple_of(components, component_types, shapes, queue, many=False)
    except errors.OpError as e:
        done(e)
        return
    queue.enqueue(ctx, done, [tuple(arrays)])


def _enqueue_many_kernel(ctx, done, queue, *components, component_types, shapes):
    try:
        arrays = _tuple_of(components, component_types, shapes, queue, many=True)
    except errors.OpError as e:
        done(e)
        return
    n = arrays[0].shape[0] if arrays else 0
    # a[k, ...]: an array even for a 0-d element (a[k] of a string vector would be bare bytes)
    queue.enqueue(ctx, done, [tuple(a[k, ...] for a in arrays) for k in range(n)])


for _type, _kernel in (("QueueEnqueue", _enqueue_kernel), ("QueueEnqueueMany", _enqueue_many_kernel)):
    register_op(_type, kernel=_kernel, num_outputs=0, stateful=True, light_ok=True,
                ref_inputs=(0,), is_async=True, grad=None)


# -- QueueDequeue / QueueDequeueMany / QueueDequeueUpTo -----------------------------------------
def _single_output(done, n_components):
    if n_components == 1:
        return lambda r: done(r[0] if isinstance(r, tuple) else r)
    return done


def _dequeue_kernel(ctx, done, queue, component_types, shapes):
    queue.dequeue(ctx, _single_output(done, len(component_types)), 1, True, False)


def _dequeue_many_kernel(allow_small):
    def kernel(ctx, done, queue, n, component_types, shapes):
        done = _single_output(done, len(component_types))
        n = int(n)
        what = "DequeueUpTo" if allow_small else "DequeueMany"
        if n < 0:
            done(errors.InvalidArgumentError(None, None, "%s requested %d < 0 elements from "
                                             "queue '%s'" % (what, n, queue.name)))
            return
        if queue.shapes is None:
            done(errors.InvalidArgumentError(
                None, None, "%s's DequeueMany and DequeueUpTo require the components to "
                "have specified shapes (queue '%s' was created without fully defined shapes)."
                % (queue.type_name, queue.name)))
            return
        if n == 0:
            done(tuple(ctx.xp.zeros((0,) + tuple(x or 0 for x in s), dtype=d)
                       for s, d in zip(queue.shapes, queue.dtypes)))
            return
        queue.dequeue(ctx, done, n, False, allow_small)
    return kernel


register_op("QueueDequeue", dtype=_component_dtypes,
            shape=lambda op: _queue_output_shapes(op, None), kernel=_dequeue_kernel,
            stateful=True, light_ok=True, ref_inputs=(0,), is_async=True, grad=None)


def _dequeue_many_shapes(op):
    n = constant_value(op.inputs[1])
    return _queue_output_shapes(op, [None if n is None else int(n)])


register_op("QueueDequeueMany", dtype=_component_dtypes, shape=_dequeue_many_shapes,
            kernel=_dequeue_many_kernel(False), stateful=True, light_ok=True, ref_inputs=(0,), is_async=True,
            grad=None)
register_op("QueueDequeueUpTo", dtype=_component_dtypes,
            shape=lambda op: _queue_output_shapes(op, [None]),
            kernel=_dequeue_many_kernel(True), stateful=True, light_ok=True, ref_inputs=(0,), is_async=True,
            grad=None)


# -- QueueClose / QueueSize / QueueIsClosed -----------------------------------------------------
def _close_kernel(ctx, queue, cancel_pending_enqueues):
    queue.close(cancel_pending_enqueues)


register_op("QueueClose", kernel=_close_kernel, num_outputs=0, stateful=True, light_ok=True, ref_inputs=(0,),
            grad=None)
register_op("QueueSize", dtype=lambda op: _dtypes.int32, shape=lambda op: TensorShape([]),
            kernel=lambda ctx, queue: np.array(queue.size(), dtype=np.int32),
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)
register_op("QueueIsClosed", dtype=lambda op: _dtypes.bool, shape=lambda op: TensorShape([]),
            kernel=lambda ctx, queue: np.array(queue.closed),
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)


# -- the Python queue classes -------------------------------------------------------------------
def _as_type_list(dtypes):
    if isinstance(dtypes, list | tuple):
        return [_dtypes.as_dtype(d) for d in dtypes]
    return [_dtypes.as_dtype(dtypes)]


def _as_shape_list(shapes, dtypes, unknown_dim_allowed=False):
    """TF1's rules: None (unknown), one shape for one component, or one shape per component."""
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, list | tuple):
        raise TypeError("Shapes must be a list or tuple of shapes (one per component), got %r"
                        % (shapes,))
    if all(s is None or isinstance(s, int | np.integer) for s in shapes):
        shapes = [shapes]
    shapes = [as_shape(s) for s in shapes]
    if len(shapes) != len(dtypes):
        raise ValueError("Queue shapes must have the same length as dtypes: %d shapes for %d "
                         "dtypes" % (len(shapes), len(dtypes)))
    if unknown_dim_allowed:
        if any(s.ndims is None for s in shapes):
            raise ValueError("All shapes of a PaddingFIFOQueue must have known ranks: %s" % shapes)
    elif any(not s.is_fully_defined() for s in shapes):
        raise ValueError("All shapes of a FIFOQueue must be fully defined: %s" % shapes)
    return shapes


def _shape_attr(shapes):
    return None if shapes is None else tuple(tuple(s.as_list()) for s in shapes)


def _on_resource(handle, op_type, inputs, name, num_outputs=None, **attrs):
    """Create an op that uses the resource ``handle`` where the resource lives."""
    with handle.graph.colocate_with(handle.op):
        return make_op(op_type, [handle] + list(inputs), name=name, num_outputs=num_outputs,
                       **attrs)


class QueueBase:
    """Base class for queues: enqueue/dequeue tuples of tensors (TF1's ``tf.QueueBase``)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        if shapes is not None:
            if len(shapes) != len(dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [as_shape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in dtypes]
        if names is not None:
            if len(names) != len(dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = list(names)
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._queue_ref.op.name)
    dtypes = property(lambda self: self._dtypes)
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)

    def _attrs(self):
        return {"component_types": tuple(self._dtypes),
                "shapes": self._queue_ref.op._attrs["shapes"]}

    def _check_enqueue_dtypes(self, vals):
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue %s must have names to enqueue a dictionary" % self.name)
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError("Keys in dictionary to enqueue do not match names of Queue. "
                                 "Dictionary: (%s), Queue: (%s)"
                                 % (sorted(vals.keys(), key=str), sorted(self._names, key=str)))
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names (queue %s)"
                                 % self.name)
            if not isinstance(vals, list | tuple):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError("Queue %s has %d components but %d values were enqueued"
                             % (self.name, len(self._dtypes), len(vals)))
        tensors = []
        for i, (val, dtype) in enumerate(zip(vals, self._dtypes)):
            t = convert_to_tensor(val, dtype=dtype, name="component_%d" % i)
            if t.dtype.base_dtype != dtype:
                raise TypeError("Component %d of queue %s has dtype %s, but the value enqueued "
                                "has dtype %s" % (i, self.name, dtype.name, t.dtype.name))
            tensors.append(t)
        return tensors

    def _dequeue_return_value(self, tensors):
        if not isinstance(tensors, list):
            tensors = [tensors]
        if self._names:
            return dict(zip(self._names, tensors))
        return tensors[0] if len(tensors) == 1 else tensors

    def enqueue(self, vals, name=None):
        """Enqueue one element (a tensor, a tuple of tensors, or a dict when the queue has names).

        Blocks (asynchronously) while the queue is full; fails with CancelledError if the queue
        is closed.
        """
        vals = self._check_enqueue_dtypes(vals)
        for i, (val, shape) in enumerate(zip(vals, self._shapes)):
            if not val.get_shape().is_compatible_with(shape):
                raise ValueError("Shape of component %d enqueued into queue %s is %s, which is "
                                 "incompatible with the queue's shape %s"
                                 % (i, self.name, val.get_shape(), shape))
        return _on_resource(self._queue_ref, "QueueEnqueue", vals,
                            name or "%s_enqueue" % self._name, **self._attrs())

    def enqueue_many(self, vals, name=None):
        """Enqueue the slices of each component along its first (batch) dimension."""
        vals = self._check_enqueue_dtypes(vals)
        batch = None
        for i, (val, shape) in enumerate(zip(vals, self._shapes)):
            s = val.get_shape()
            if s.ndims is not None:
                if s.ndims == 0:
                    raise ValueError("enqueue_many to queue %s needs a batch dimension, but "
                                     "component %d is a scalar" % (self.name, i))
                d = s.as_list()[0]
                if d is not None:
                    if batch is not None and batch != d:
                        raise ValueError("enqueue_many to queue %s: components have different "
                                         "batch sizes %d and %d" % (self.name, batch, d))
                    batch = d
                if not TensorShape(s.as_list()[1:]).is_compatible_with(shape):
                    raise ValueError("Shape of component %d enqueued (many) into queue %s is %s: "
                                     "its elements %s are incompatible with the queue's shape %s"
                                     % (i, self.name, s, TensorShape(s.as_list()[1:]), shape))
        return _on_resource(self._queue_ref, "QueueEnqueueMany", vals,
                            name or "%s_EnqueueMany" % self._name, **self._attrs())

    def dequeue(self, name=None):
        """Dequeue one element; waits while the queue is empty.

        On a closed, empty queue it fails with OutOfRangeError.
        """
        out = _on_resource(self._queue_ref, "QueueDequeue", [], name or "%s_Dequeue" % self._name,
                           num_outputs=len(self._dtypes), **self._attrs())
        for t, s in zip(out, self._shapes):
            t.set_shape(s)
        return self._dequeue_return_value(out)

    def dequeue_many(self, n, name=None):
        """Dequeue ``n`` elements, stacked along a new first dimension; waits for all of them."""
        return self._dequeue_n("QueueDequeueMany", n, name or "%s_DequeueMany" % self._name)

    def dequeue_up_to(self, n, name=None):
        """Like dequeue_many, but once the queue is closed returns what is left (at least 1)."""
        return self._dequeue_n("QueueDequeueUpTo", n, name or "%s_DequeueUpTo" % self._name)

    def _dequeue_n(self, op_type, n, name):
        n = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        out = _on_resource(self._queue_ref, op_type, [n], name, num_outputs=len(self._dtypes),
                           **self._attrs())
        batch = constant_value(n) if op_type == "QueueDequeueMany" else None
        for t, s in zip(out, self._shapes):
            t.set_shape(TensorShape([None if batch is None else int(batch)]).concatenate(s))
        return self._dequeue_return_value(out)

    def close(self, cancel_pending_enqueues=False, name=None):
        """Close the queue: later enqueues fail; dequeues drain what is left, then fail."""
        return _on_resource(self._queue_ref, "QueueClose", [], name or "%s_Close" % self._name,
                            cancel_pending_enqueues=bool(cancel_pending_enqueues))

    def is_closed(self, name=None):
        """A scalar bool: whether the queue is closed."""
        return _on_resource(self._queue_ref, "QueueIsClosed", [], name or "%s_IsClosed" % self._name)

    def size(self, name=None):
        """A scalar int32: the number of elements in the queue."""
        return _on_resource(self._queue_ref, "QueueSize", [], name or "%s_Size" % self._name)


class FIFOQueue(QueueBase):
    """A queue that hands out elements first-in first-out.

    ``capacity`` bounds the number of elements (-1: unbounded); ``dtypes`` lists the component
    types; ``shapes`` (fully defined) are needed for ``dequeue_many``; ``names`` make elements
    dicts; ``shared_name`` shares the queue between sessions under that name.
    """

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        ref = make_op("FIFOQueue", [], name=name, capacity=int(capacity),
                      component_types=tuple(dtypes), shapes=_shape_attr(shapes),
                      shared_name=shared_name or "")
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues its elements in a random order.

    Until it is closed, a dequeue leaves at least ``min_after_dequeue`` elements in the queue,
    so each element is drawn from a pool of that many; ``seed`` makes the order reproducible
    (with the graph seed, by TF1's rules).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     q = tf.RandomShuffleQueue(10, 2, tf.int32, shapes=[], seed=1)
    ...     enq = q.enqueue_many([[1, 2, 3, 4]])
    ...     with tf.Session() as sess:
    ...         _ = sess.run([enq, q.close()])
    ...         print(sorted(sess.run(q.dequeue_many(4)).tolist()))
    [1, 2, 3, 4]
    """

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,
                 shared_name=None, name="random_shuffle_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        ref = make_op("RandomShuffleQueue", [], name=name, capacity=int(capacity),
                      min_after_dequeue=int(min_after_dequeue), seed=seed1 or 0, seed2=seed2 or 0,
                      component_types=tuple(dtypes), shapes=_shape_attr(shapes),
                      shared_name=shared_name or "")
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue that batches elements of different shapes by padding them.

    ``shapes`` (required) may have unknown (None) dimensions; ``dequeue_many`` pads each
    component to the largest element of the batch with 0 (b"" for strings).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     q = tf.PaddingFIFOQueue(5, tf.int32, shapes=[[None]])
    ...     with tf.Session() as sess:
    ...         _ = sess.run([q.enqueue([[1, 2, 3]]), q.enqueue([[4]])])
    ...         print(sess.run(q.dequeue_many(2)).tolist())
    [[1, 2, 3], [4, 0, 0]]
    """

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        if shapes is None:
            raise ValueError("PaddingFIFOQueue needs a shape (of known rank) per component")
        shapes = _as_shape_list(shapes, dtypes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        ref = make_op("PaddingFIFOQueue", [], name=name, capacity=int(capacity),
                      component_types=tuple(dtypes),
                      shapes=_shape_attr(shapes), shared_name=shared_name or "")
        super().__init__(dtypes, shapes, names, ref)


def _as_name_list(names, dtypes):
    if names is None:
        return None
    if not isinstance(names, list | tuple):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


# -- ConditionalAccumulator ---------------------------------------------------------------------
class _AccumulatorBase(_BlockingResource):
    """TF1's ConditionalAccumulatorBase: a counter, a global step and waiting take attempts."""

    def __init__(self, name, dtype, shape, reduction_type):
        super().__init__(name)
        self.dtype = dtype
        self.shape = shape            # tuple with None for unknown dims, or None (unknown rank)
        self.reduction_type = reduction_type
        self.counter = 0
        self.global_step = 0
        self._takes = collections.deque()

    def _lines(self):
        return (self._takes,)

    def matches(self, dtype, shape, reduction_type):
        return (dtype, shape, reduction_type) == (self.dtype, self.shape, self.reduction_type)

    def num_accumulated(self):
        with self._lock:
            return self.counter

    def set_global_step(self, step):
        with self._lock:
            if step < self.global_step:
                _logger.warning("Attempt to set current_global_step_ of accumulator '%s' to a "
                                "smaller value: current_global_step_ = %d >= %d = new_global_step.",
                                self.name, self.global_step, step)
            self.global_step = step

    def apply(self, local_step, *grad):
        with self._lock:
            if local_step < self.global_step:
                _logger.debug("Accumulator '%s' dropped a stale gradient of local step %d "
                              "(global step %d)", self.name, local_step, self.global_step)
                return
            self._validate(*grad)
            if self.counter == 0:
                self._assign(*grad)
            else:
                self._add(*grad)
            self.counter += 1
            done = self._flush_locked()
        _deliver(done)

    def take(self, ctx, done, num_required):
        if num_required <= 0:
            done(errors.InvalidArgumentError(
                None, None, "Argument num_required must be positive, but was %d" % num_required))
            return
        attempt = _Attempt(done, "TakeGrad", ctx.xp)
        attempt.n = num_required
        self._submit(ctx, attempt, self._takes)

    def _flush_locked(self):
        out = []
        while self._takes and self.counter >= self._takes[0].n:
            a = self._takes.popleft()
            self.global_step += 1   # TF1: taking the gradient readies the accumulator's next step
            try:
                result = self._output(a.xp)
            except Exception as e:  # noqa: BLE001 - the taker fails, not the applier's thread
                result = errors.InternalError(None, None, "accumulator '%s' could not output its "
                                              "gradient: %s: %s" % (self.name, type(e).__name__, e))
            self.counter = 0
            self._finish(a, result, out)
        return out


def _divide(xp, values, counts):
    if np.issubdtype(values.dtype, np.integer):
        np.floor_divide(values, counts, out=values)
    else:
        xp.divide(values, counts, out=values, casting="unsafe")
    return values


class _DenseAccumulator(_AccumulatorBase):
    type_name = "ConditionalAccumulator"

    def _validate(self, grad):
        if self.shape is not None:
            if grad.ndim != len(self.shape):
                raise errors.InvalidArgumentError(
                    None, None, "Shape mismatch: expected shape rank %d, got %d (accumulator '%s')"
                    % (len(self.shape), grad.ndim, self.name))
            for i, (e, g) in enumerate(zip(self.shape, grad.shape)):
                if e is not None and e != g:
                    raise errors.InvalidArgumentError(
                        None, None, "Shape mismatch: expected shape dim %d to be %d, got %d "
                        "(accumulator '%s')" % (i, e, g, self.name))
        if self.counter > 0 and self._sum.shape != grad.shape:
            raise errors.InvalidArgumentError(
                None, None, "Shape mismatch: expected %s, got %s (accumulator '%s' already holds "
                "gradients of that shape)" % (list(self._sum.shape), list(grad.shape), self.name))

    def _assign(self, grad):
        # A 0-d gradient may arrive as a numpy scalar (numpy's arithmetic on 0-d arrays returns
        # those): it becomes an array, which _add and _output update in place.
        self._sum = np.array(grad, dtype=self.dtype, copy=True) \
            if isinstance(grad, np.ndarray | np.generic) else grad.astype(self.dtype, copy=True)

    def _add(self, grad):
        self._sum += grad

    def _output(self, xp):
        s, self._sum = self._sum, None   # the output takes the buffer over: no copy
        if self.reduction_type == "MEAN":
            _divide(xp, s, self.counter)
        return s


class _SparseAccumulator(_AccumulatorBase):
    type_name = "SparseConditionalAccumulator"

    def _validate(self, indices, values, shape, has_known_shape):
        if indices.ndim != 1:
            raise errors.InvalidArgumentError(
                None, None, "Input indices should be vector but received shape: %s"
                % list(indices.shape))
        if values.ndim == 0:
            raise errors.InvalidArgumentError(None, None, "Values cannot be 0-dimensional.")
        if values.shape[0] != indices.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "Expected %d non-empty input values, got %d"
                % (indices.shape[0], values.shape[0]))
        dims = self.shape or ()
        if has_known_shape:
            if len(dims) > shape.size:
                raise errors.InvalidArgumentError(
                    None, None, "Shape mismatch: expected shape rank at least %d, got %d"
                    % (len(dims), shape.size))
            for i, d in enumerate(dims):
                if d is not None and d != shape[i]:
                    raise errors.InvalidArgumentError(
                        None, None, "Shape mismatch: expected shape dim %d to be %d, got %d"
                        % (i, d, shape[i]))
        if dims and dims[0] is not None and indices.size:
            bad = (indices < 0) | (indices >= dims[0])
            if bad.any():
                i = int(np.argmax(bad))
                raise errors.InvalidArgumentError(
                    None, None, "Shape mismatch: index of slice %d exceeded limits of shape; index "
                    "is %d exceeded %d" % (i, indices[i], dims[0]))
        if self.counter > 0:
            if self._values.ndim != values.ndim:
                raise errors.InvalidArgumentError(
                    None, None, "Shape mismatch: expected values rank %d, got %d"
                    % (self._values.ndim, values.ndim))
            for i in range(1, values.ndim):
                if self._values.shape[i] != values.shape[i]:
                    raise errors.InvalidArgumentError(
                        None, None, "Shape mismatch: expected values dim %d to be %d, got %d"
                        % (i, self._values.shape[i], values.shape[i]))
        else:
            if len(dims) > values.ndim:
                raise errors.InvalidArgumentError(
                    None, None, "Shape mismatch: expected values rank at least %d, got %d"
                    % (len(dims), values.ndim))
            for i in range(1, len(dims)):
                if dims[i] is not None and dims[i] != values.shape[i]:
                    raise errors.InvalidArgumentError(
                        None, None, "Shape mismatch: expected values dim %d to be %d, got %d"
                        % (i, dims[i], values.shape[i]))

    @staticmethod
    def _coalesce(indices, values):
        """Sorted unique indices with the rows of duplicates summed (TF1 assumes sorted input).
        Strictly increasing indices (e.g. another accumulator's output) come back as they are."""
        if indices.size < 2 or bool((indices[1:] > indices[:-1]).all()):
            return indices, values
        uniq, inverse = np.unique(indices, return_inverse=True)
        if len(uniq) == len(indices):
            order = np.argsort(indices, kind="stable")
            return uniq, values[order]
        summed = np.zeros((len(uniq),) + values.shape[1:], dtype=values.dtype)
        np.add.at(summed, inverse, values)
        return uniq, summed

    def _assign(self, indices, values, shape, has_known_shape):
        # astype copies: the accumulator owns (and later divides in place) what it keeps.
        self._indices, self._values = self._coalesce(indices.astype(np.int64),
                                                     values.astype(self.dtype))
        self._counts = np.ones(len(self._indices), dtype=np.int64)

    def _add(self, indices, values, shape, has_known_shape):
        idx, vals = self._coalesce(indices.astype(np.int64, copy=False),
                                   values.astype(self.dtype, copy=False))
        union = np.union1d(self._indices, idx)
        a = np.searchsorted(union, self._indices)
        b = np.searchsorted(union, idx)
        out = np.zeros((len(union),) + self._values.shape[1:], dtype=self.dtype)
        out[a] = self._values
        out[b] += vals
        counts = np.zeros(len(union), dtype=np.int64)
        counts[a] = self._counts
        counts[b] += 1
        self._indices, self._values, self._counts = union, out, counts

    def _output(self, xp):
        values = self._values
        if self.reduction_type == "MEAN":
            _divide(xp, values, self._counts.reshape((-1,) + (1,) * (values.ndim - 1)))
        first = self.shape[0] if self.shape else None
        shape = np.array([-1 if first is None else first] + list(values.shape[1:]), dtype=np.int64)
        out = (self._indices, values, shape)
        self._indices = self._values = self._counts = None
        return out


def _accumulator_kernel(cls):
    def kernel(ctx, dtype, shape, shared_name, reduction_type, op_name):
        name = shared_name or op_name
        np_dtype = _dtypes.as_dtype(dtype).as_numpy_dtype
        acc = ctx.resources.lookup_or_create(
            "accumulator", name, lambda: cls(name, np_dtype, shape, reduction_type))
        if not isinstance(acc, cls) or not acc.matches(np_dtype, shape, reduction_type):
            raise errors.InvalidArgumentError(
                None, None, "Shared accumulator '%s' already exists with a different kind, dtype, "
                "shape or reduction type" % name)
        return acc
    return kernel


register_op("ConditionalAccumulator", dtype=lambda op: _dtypes.string,
            shape=lambda op: TensorShape([]), kernel=_accumulator_kernel(_DenseAccumulator),
            stateful=True, light_ok=True, ref_output=True, needs_op_name=True, grad=None)
register_op("SparseConditionalAccumulator", dtype=lambda op: _dtypes.string,
            shape=lambda op: TensorShape([]), kernel=_accumulator_kernel(_SparseAccumulator),
            stateful=True, light_ok=True, ref_output=True, needs_op_name=True, grad=None)


def _apply_kernel(ctx, acc, local_step, grad, dtype):
    acc.apply(int(local_step), grad)


def _sparse_apply_kernel(ctx, acc, local_step, indices, values, shape, dtype, has_known_shape):
    acc.apply(int(local_step), indices, values, shape, has_known_shape)


register_op("AccumulatorApplyGradient", kernel=_apply_kernel, num_outputs=0, stateful=True, light_ok=True,
            ref_inputs=(0,), grad=None)
register_op("SparseAccumulatorApplyGradient", kernel=_sparse_apply_kernel, num_outputs=0,
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)


def _take_kernel(ctx, done, acc, num_required, dtype):
    acc.take(ctx, done, int(num_required))


register_op("AccumulatorTakeGradient", dtype=lambda op: op._attrs["dtype"],
            shape=lambda op: as_shape(op.inputs[0].op._attrs["shape"]), kernel=_take_kernel,
            stateful=True, light_ok=True, ref_inputs=(0,), is_async=True, grad=None)


def _sparse_take_shapes(op):
    s = as_shape(op.inputs[0].op._attrs["shape"])
    if not s.ndims:   # unknown or () (as SyncReplicasOptimizer passes): the rows are unknown
        return [TensorShape([None]), unknown_shape(), TensorShape([None])]
    return [TensorShape([None]), TensorShape([None] + s.as_list()[1:]), TensorShape([s.ndims])]


register_op("SparseAccumulatorTakeGradient",
            dtype=lambda op: [_dtypes.int64, op._attrs["dtype"], _dtypes.int64],
            shape=_sparse_take_shapes, kernel=_take_kernel, num_outputs=3, stateful=True, light_ok=True,
            ref_inputs=(0,), is_async=True, grad=None)
register_op("AccumulatorNumAccumulated", dtype=lambda op: _dtypes.int32,
            shape=lambda op: TensorShape([]),
            kernel=lambda ctx, acc: np.array(acc.num_accumulated(), dtype=np.int32),
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)
register_op("AccumulatorSetGlobalStep", num_outputs=0,
            kernel=lambda ctx, acc, step: acc.set_global_step(int(step)),
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)


def _int64(value, name):
    return math_ops.cast(convert_to_tensor(value, name=name), _dtypes.int64)


class ConditionalAccumulatorBase:
    """A conditional accumulator for aggregating gradients (TF1's base class).

    Up-to-date gradients (computed at a local step no older than the accumulator's global step)
    are added; stale ones are dropped silently. Taking the aggregate waits until enough
    gradients were accumulated.
    """

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = dtype
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._accumulator_ref.op.name)
    dtype = property(lambda self: self._dtype)

    def num_accumulated(self, name=None):
        """A scalar int32: how many gradients are currently accumulated."""
        return _on_resource(self._accumulator_ref, "AccumulatorNumAccumulated", [],
                            name or "%s_NumAccumulated" % self._name)

    def set_global_step(self, new_global_step, name=None):
        """Set the accumulator's global step (logs a warning if it goes backwards)."""
        step = _int64(new_global_step, "new_global_step")
        return _on_resource(self._accumulator_ref, "AccumulatorSetGlobalStep", [step],
                            name or "AccumulatorSetGlobalStep")


def _accumulator_op(op_type, dtype, shape, shared_name, name, reduction_type):
    if reduction_type not in ("MEAN", "SUM"):
        raise ValueError("reduction_type must be 'MEAN' or 'SUM', got %r" % (reduction_type,))
    s = as_shape(shape) if shape is not None else unknown_shape()
    return make_op(op_type, [], name=name, dtype=dtype,
                   shape=None if s.ndims is None else tuple(s.as_list()),
                   shared_name=shared_name or "", reduction_type=reduction_type)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates dense gradients: ``take_grad(n)`` waits for n of them and returns their mean.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    ...     ops = [acc.apply_grad([1.0, 2.0]), acc.apply_grad([3.0, 6.0])]
    ...     with tf.Session() as sess:
    ...         _ = sess.run(ops)
    ...         print(sess.run(acc.take_grad(2)))
    [2. 4.]
    """

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator",
                 reduction_type="MEAN"):
        dtype = _dtypes.as_dtype(dtype)
        ref = _accumulator_op("ConditionalAccumulator", dtype, shape, shared_name, name,
                              reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name=None):
        """Add ``grad`` unless ``local_step`` is older than the accumulator's global step."""
        grad = convert_to_tensor(grad, dtype=self._dtype, name="grad")
        if not grad.get_shape().is_compatible_with(self._shape):
            raise ValueError("Shape of gradient %s (%s) is incompatible with the shape %s of "
                             "accumulator %s" % (grad.name, grad.get_shape(), self._shape, self.name))
        step = _int64(local_step, "local_step")
        return _on_resource(self._accumulator_ref, "AccumulatorApplyGradient", [step, grad],
                            name or "AccumulatorApplyGradient", dtype=self._dtype)

    def take_grad(self, num_required, name=None):
        """Wait until ``num_required`` gradients were accumulated; return their mean (or sum).

        The accumulator then resets and its global step increases by one.
        """
        n = convert_to_tensor(num_required, dtype=_dtypes.int32, name="num_required")
        out = _on_resource(self._accumulator_ref, "AccumulatorTakeGradient", [n],
                           name or "AccumulatorTakeGradient", dtype=self._dtype)
        out.set_shape(self._shape)
        return out


SparseAccumulatorTakeGradient = collections.namedtuple(
    "SparseAccumulatorTakeGradient", ["indices", "values", "shape"])


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates sparse gradients (IndexedSlices); each row is averaged over the gradients
    that touched it. Duplicate indices within one gradient are summed.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 1])
    ...     a = acc.apply_grad([0, 2], [[1.0], [2.0]])
    ...     b = acc.apply_grad([2], [[4.0]])
    ...     with tf.Session() as sess:
    ...         _ = sess.run([a, b])
    ...         idx, val, shape = sess.run(acc.take_grad(2))
    >>> idx.tolist(), val.ravel().tolist(), shape.tolist()
    ([0, 2], [1.0, 3.0], [3, 1])
    """

    def __init__(self, dtype, shape=None, shared_name=None, name="sparse_conditional_accumulator",
                 reduction_type="MEAN"):
        dtype = _dtypes.as_dtype(dtype)
        ref = _accumulator_op("SparseConditionalAccumulator", dtype, shape, shared_name, name,
                              reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad, local_step=0, name=None):
        """Apply an IndexedSlices gradient."""
        if not isinstance(grad, IndexedSlices):
            raise TypeError("apply_indexed_slices_grad needs an IndexedSlices, got %r" % (grad,))
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0, name=None):
        """Apply a sparse gradient: rows ``grad_values`` at ``grad_indices`` of a dense tensor of
        ``grad_shape``; dropped if ``local_step`` is stale."""
        values = convert_to_tensor(grad_values, dtype=self._dtype, name="grad_values")
        indices = _int64(grad_indices, "grad_indices")
        has_known_shape = grad_shape is not None
        shape = _int64(grad_shape if has_known_shape else np.zeros([0], np.int64), "grad_shape")
        if self._shape.ndims is not None and values.get_shape().ndims is not None:
            rows = TensorShape([None] + self._shape.as_list()[1:]) if self._shape.ndims else None
            if rows is not None and not values.get_shape().is_compatible_with(rows):
                raise ValueError("Shape of gradient values %s (%s) is incompatible with the rows "
                                 "%s of accumulator %s" % (values.name, values.get_shape(), rows,
                                                           self.name))
        step = _int64(local_step, "local_step")
        return _on_resource(self._accumulator_ref, "SparseAccumulatorApplyGradient",
                            [step, indices, values, shape], name or "SparseAccumulatorApplyGradient",
                            dtype=self._dtype, has_known_shape=has_known_shape)

    def take_grad(self, num_required, name=None):
        """Wait for ``num_required`` gradients; returns (indices, values, shape) of their mean."""
        n = convert_to_tensor(num_required, dtype=_dtypes.int32, name="num_required")
        out = _on_resource(self._accumulator_ref, "SparseAccumulatorTakeGradient", [n],
                           name or "SparseAccumulatorTakeGradient", num_outputs=3, dtype=self._dtype)
        return SparseAccumulatorTakeGradient(*out)

    def take_indexed_slices_grad(self, num_required, name=None):
        """``take_grad`` as an IndexedSlices."""
        t = self.take_grad(num_required, name=name)
        return IndexedSlices(indices=t.indices, values=t.values, dense_shape=t.shape)


__all__ = [
    "QueueBase",
    "FIFOQueue",
    "RandomShuffleQueue",
    "PaddingFIFOQueue",
    "ConditionalAccumulatorBase",
    "ConditionalAccumulator",
    "SparseConditionalAccumulator",
]
