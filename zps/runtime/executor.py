"""The executor: compiles a (sub)graph for given feeds and fetches into a plan once, then runs steps.

A plan is the pruned op list in topological order with every input resolved to a slot of a flat
value table; constants are folded into the table's template. Some ops run no kernel: an Identity
that only passes a value on (its readers read its input's slot), a variable op (its container is
put in its slot, looked up once per resource manager) and a variable read whose only reader is a
``_Send`` (the send reads the variable). A step copies the template, puts the feeds and variable
containers in their slots and runs the kernels.

The kernels of a plan without asynchronous ops are called by straight-line Python generated once
per plan (one line per op: ``vals[7] = fns[3](ctx, vals[2], vals[5])``): a loop over step records
spends more time unpacking them than a tiny kernel takes to run (~0.8 vs ~0.45 us per op, see
``Plan.run``). When a kernel fails, the line number of the generated frame names the op. Plans with
asynchronous kernels (``_Recv``, blocking dequeues) run as a dataflow loop instead (``_Run``),
which keeps running the ops that are ready while an asynchronous one waits, those a ``_Send``
takes first (``_urgency``); before it waits, it calls the step's ``ctx.extras["flush"]`` (if any)
so that batched sends go out. The cheap ops that the completion of an asynchronous kernel
alone makes runnable (a ps's 125 ``AssignAdd``s of a received group) are compiled once into
straight-line code too and run as one entry of the loop (``_FollowUp``). The loop is not
tied to a thread: a completion delivered on a light thread (the transport's I/O thread) runs the
cheap ops it makes ready right there, and ``Plan.start`` runs a step without any thread waiting
for it (a ps serving a worker's step from its I/O thread).

>>> import zps as tf
>>> from zps.runtime.executor import Plan, StepContext
>>> from zps.runtime.resources import ResourceManager
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [2])
...     y = x * 2.0 + 1.0
...     plan = Plan([x], [y], [])
...     print(plan.run(StepContext(ResourceManager()), [[1.0, 2.0]])[0])
[3. 5.]
"""

import collections
import concurrent.futures
import functools
import heapq
import itertools
import operator
import queue
import threading
import time

import numpy as np

from zps.framework import errors
from zps.framework.graph import Operation, Tensor
from zps.runtime import allocator

_step_ids = itertools.count(1)


class StepContext:
    """What kernels see of the step: the task's resources, the array module, the step id.

    Kernels that wait (dequeue, take_grad) register ``ctx.on_cancel(fn)`` so that aborting the
    step, closing the session or stopping the server ends the wait: ``fn(error)`` is called once.
    """

    __slots__ = ("resources", "xp", "backend", "step_id", "extras", "_lock", "_on_cancel",
                 "cancelled")

    def __init__(self, resources, backend="numpy", step_id=None, extras=None):
        self.resources = resources
        self.backend = backend
        self.xp = _array_module(backend)
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.extras = extras if extras is not None else {}
        self._lock = threading.Lock()
        self._on_cancel = []
        self.cancelled = None   # the error the step was cancelled with, once it is

    def on_cancel(self, callback):
        """Call ``callback(error)`` if the step is cancelled (at once if it already was);
        returns a function that unregisters it (call it when the wait ends normally)."""
        with self._lock:
            error = self.cancelled
            if error is None:
                self._on_cancel.append(callback)
                return lambda: self._forget(callback)
        callback(error)
        return lambda: None

    def _forget(self, callback):
        with self._lock:
            if callback in self._on_cancel:
                self._on_cancel.remove(callback)

    def run_subgraph(self, feeds, fetches, feed_values):
        """Run part of a private graph within this step (a ``tf.cond`` branch, see
        zps.ops.control_flow_ops): same resources, extras and cancellation; its plan is made
        once per (feeds, fetches), which must be lists of that graph's tensors."""
        key = (tuple(feeds), tuple(fetches))
        plan = _SUBPLANS.get(key)
        if plan is None:
            plan = Plan(feeds, fetches, [])
            with _SUBPLANS_LOCK:
                if len(_SUBPLANS) >= MAX_SUBPLANS:
                    _SUBPLANS.pop(next(iter(_SUBPLANS)))   # the oldest
                _SUBPLANS[key] = plan
        return plan.run(self, feed_values)

    def cancel(self, error):
        """Cancel the step: every registered waiter gets ``error`` (once)."""
        with self._lock:
            if self.cancelled is not None:
                return
            self.cancelled = error
            callbacks, self._on_cancel = self._on_cancel, []
        for cb in callbacks:
            cb(error)


# Plans of private graphs (StepContext.run_subgraph), the oldest dropped past MAX_SUBPLANS.
MAX_SUBPLANS = 1024
_SUBPLANS = {}
_SUBPLANS_LOCK = threading.Lock()


def _array_module(backend):
    if backend == "numpy":
        return np
    if backend == "cupy":
        import cupy  # the optional 'gpu' extra
        return cupy
    raise ValueError("Unknown backend %r" % backend)


_TRASH = 0     # value slot for outputs nobody reads (e.g. a fed output of an op that still runs)
_CHUNK = 1000  # ops per generated function: compiling one huge function is superlinear


def _args_getter(ins, deref):
    """A function of the value slots returning a step's input values (the dataflow loop calls it
    once per kernel: a plain tuple getter where no input is a variable container to read)."""
    if deref:
        return lambda vals: [vals[j].read() if i in deref else vals[j] for i, j in enumerate(ins)]
    if not ins:
        return lambda vals: ()
    if len(ins) == 1:
        j = ins[0]
        return lambda vals: (vals[j],)
    return operator.itemgetter(*ins)


class _Step:
    """One kernel call of a plan: which value slots it reads and writes."""

    __slots__ = ("op", "fn", "ins", "deref", "outs", "is_async", "args")

    def __init__(self, op, fn, ins, deref, outs, is_async):
        self.op = op
        self.fn = fn
        self.ins = ins          # value slots of the inputs
        self.deref = deref      # input positions holding a variable container to read
        self.outs = outs        # value slots of the outputs
        self.is_async = is_async
        self.args = _args_getter(ins, deref)   # args(vals): the kernel's input values

    def store(self, vals, result):
        if len(self.outs) == 1:
            vals[self.outs[0]] = result
        elif self.outs:
            result = tuple(result)
            if len(result) != len(self.outs):
                raise ValueError("kernel returned %d outputs, expected %d"
                                 % (len(result), len(self.outs)))
            for s, v in zip(self.outs, result):
                vals[s] = v


class Plan:
    """A compiled, reusable execution plan for one (feeds, fetches, targets) triple.

    Fed tensors are leaves: their producers run only if another of their outputs is needed.
    Plans are immutable once built and may run concurrently from several threads.
    """

    def __init__(self, feeds, fetches, targets, backend="numpy", placement_check=None,
                 soft_placement=False, gpu_ids=None, inline_bytes=None):
        # Ops whose inputs hold at most this many bytes run on a light thread (INLINE_BYTES).
        self.inline_bytes = INLINE_BYTES if inline_bytes is None else int(inline_bytes)
        self.feeds = list(feeds)
        self.fetches = list(fetches)
        self.targets = list(targets)
        fed = set(self.feeds)
        self.ops = prune(self.fetches, self.targets, fed)
        if placement_check is not None:
            for op in self.ops:
                placement_check(op)
        # Ops on GPUs: where each op runs and the copies between host and devices (_GpuPlan).
        # A plan that names no GPU is built and run exactly as before: no per-op cost.
        gpus = _GpuPlan(self.ops, fed, soft_placement, gpu_ids) if _names_gpu(self.ops) else None
        slots = {}

        def slot(t):
            s = slots.get(t)
            if s is None:
                s = slots[t] = len(slots) + 1
            return s

        for t in self.feeds:
            slot(t)
        steps = []
        ordering = {c for op in self.ops for c in op._control_inputs}
        variables = []   # (slot, name) of the variables whose containers _prepare puts in place
        sent_reads = _sent_reads(self.ops, fed, ordering, self.fetches) if gpus is None else {}
        for op in self.ops:
            if _foldable(op, fed):
                slot(op.outputs[0])
                continue
            if _forwards(op, fed, ordering) and (gpus is None or gpus.beside(op, op.inputs[0])):
                slots[op.outputs[0]] = slot(op.inputs[0])   # its readers read its input
                continue
            if _names_container(op, fed, ordering):
                variables.append((slot(op.outputs[0]), op._attrs["shared_name"] or op.name))
                continue
            if op._outputs and op._outputs[0] in sent_reads:
                continue   # its _Send reads the variable itself
            opdef = op.op_def
            deref = frozenset(i for i, t in enumerate(op.inputs)
                              if t.is_ref and i not in opdef.ref_inputs or t in sent_reads)
            ins = tuple(slot(sent_reads.get(t, t)) for t in op.inputs)
            if gpus is None:
                fn = _bind_kernel(op, backend)
            else:
                fn, ins, deref = gpus.bind(op, ins, deref, slot, steps)
            steps.append(_Step(op, fn, ins, deref,
                               tuple(_TRASH if t in fed else slot(t) for t in op.outputs),
                               opdef.is_async))
        template = [None] * (len(slots) + 1)
        for t, s in slots.items():
            if isinstance(t, Tensor) and _foldable(t.op, fed):
                template[s] = t.op._attrs["value"]
        if gpus is not None:
            gpus.fill_template(template)
        self._template = template
        self._variables = variables
        self._containers = (None, ())   # (the ResourceManager, its containers for _variables)
        self._steps = steps
        self._fns = [s.fn for s in steps]
        self._feed_slots = [slots[t] for t in self.feeds]
        self._ref_feeds = [slots[t] for t in self.feeds if t.is_ref]
        self._fetch_slots = [slots[t] for t in self.fetches]
        self._fetch_fix = _fetch_fixers(self.ops, self.fetches, fed, slots)
        if gpus is not None:
            self._fetch_slots, self._fetch_fix = gpus.fetch_fixers(
                self.fetches, self._fetch_slots, self._fetch_fix)
        # Each intermediate value is dropped once its last reader ran, as TF1 frees a tensor, so
        # a step's memory peaks at its live values, not at all it computed.
        ref_slots = {s for t, s in slots.items() if isinstance(t, Tensor) and t.is_ref}
        self._frees, self._uses, self._reads, self._unread = _releases(
            steps, ref_slots | set(self._fetch_slots))
        self._ran = False   # the first run may leave a one-off peak in the heap (allocator.trim)
        # A plan without asynchronous ops never waits on another task or a queue.
        self.may_block = any(s.is_async for s in steps)
        self._gpu = gpus is not None
        # (dependents, pending, inline kinds, timeline labels) for the dataflow loop (_Run)
        self._dataflow = None
        if self.may_block:
            self._dataflow_info()
        else:
            self._chunks = [_compile(steps, base, self._frees)
                            for base in range(0, len(steps), _CHUNK)]
            self._chunk_base = {fn.__code__: base for fn, base in self._chunks}

    @property
    def num_kernels(self):
        """How many kernels one step calls (constants are folded and call none)."""
        return len(self._steps)

    def run(self, ctx, feed_values, join=(), records=None, waiter=None):
        """Run one step; returns the fetched values (variable storage is copied, never aliased).

        ``join``: futures this call also waits for (the other partitions of a distributed step),
        so that the caller wakes once for all of them; it returns early, raising, if the step
        fails. ``records``: None, or a list to extend with one ``(op name, start us, end us,
        timeline label, lane)`` per kernel call (``RunOptions.FULL_TRACE``, see ``run_traced``).
        ``waiter``: what this thread waits on instead of a queue of its own, when some of
        ``join`` complete only while it waits there (zps.transport.caller.Caller: ``put``,
        ``get`` and ``wait(futures)``).
        """
        vals = self._prepare(feed_values, ctx)
        if records is None and not self.may_block:
            # Kernels follow IEEE semantics silently, as TF1's do: log(0) is -inf, 0/0 is nan.
            with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
                self._run_compiled(ctx, vals)
            if join:
                flush = ctx.extras.get("flush")
                if flush is not None:
                    flush()   # the partitions joined may wait for what this one sent
                (concurrent.futures.wait if waiter is None else waiter.wait)(join)
            return self._fetched(vals)
        # The dataflow loop. While it waits, completions that arrive on a light thread (the
        # transport's I/O thread) run the cheap ops they make ready right there; anything else
        # comes back to this thread through ``inbox``.
        inbox = queue.SimpleQueue() if waiter is None else waiter
        outcome = []
        left = [1 + len(join)]   # the run and the futures joined: this thread wakes once for all
        lock = threading.Lock()

        def one_done(error=None):
            with lock:
                left[0] -= 1
                last = left[0] == 0
                if error is not None and not outcome:
                    outcome.append(error)
            if last or error is not None:
                inbox.put(None)

        run = _Run(self, ctx, vals, one_done, inbox.put, records)
        for f in join:
            f.add_done_callback(lambda f: one_done())
        run.drive(True)
        while True:
            item = inbox.get()
            if item is not None:
                item()   # an offloaded part of the run
                continue
            if outcome:
                raise outcome[0]
            with lock:
                if left[0] == 0:
                    return self._fetched(vals)

    def start(self, ctx, feed_values, done, offload, records=None):
        """Run one step asynchronously: ``done(values, error)`` is called once, by whichever
        thread finishes the step. Called on a light thread (see ``light_thread``), the step runs
        its cheap ops there and hands the rest to ``offload(fn)`` (a pool); elsewhere, it runs
        until it waits, and completions continue it (on the pool when they come from a thread
        that is not light)."""
        try:
            vals = self._prepare(feed_values, ctx)
        except Exception as e:  # noqa: BLE001 - reported through done like any failure
            done(None, e)
            return

        def finished(error):
            if error is not None:
                done(None, error)
                return
            try:
                values = self._fetched(vals)
            except Exception as e:  # noqa: BLE001
                done(None, e)
                return
            done(values, None)

        run = _Run(self, ctx, vals, finished, offload, records)
        if _light_state() is not None:
            _on_light_thread(run.drive_light)
        else:
            run.drive(True)

    def run_traced(self, ctx, feed_values):
        """Run one step like ``run`` while timing every kernel (``RunOptions.FULL_TRACE``).

        Returns ``(fetched values, records)``: one ``(op name, start us, end us, timeline label,
        lane)`` per kernel call, times in microseconds since the epoch. An asynchronous kernel
        (``_Recv``, a blocking dequeue) spans from its call to its completion, so its record is
        the wait for its value; ``_FlushSends`` records are the batched sends going out.
        Untraced steps pay nothing for tracing but a test per op of the dataflow loop.
        """
        records = []
        return self.run(ctx, feed_values, records=records), records

    def _prepare(self, feed_values, ctx):
        vals = self._template.copy()
        if self._variables:
            # A task's variable containers are created once and never replaced: looked up once
            # per resource manager (a kernel call per variable and step before).
            resources, containers = self._containers
            if resources is not ctx.resources:
                containers = [(s, ctx.resources.variable(name)) for s, name in self._variables]
                self._containers = (ctx.resources, containers)
            for s, c in containers:
                vals[s] = c
        for s, v in zip(self._feed_slots, feed_values):
            vals[s] = v
        for s in self._ref_feeds:
            vals[s] = _FedRef(vals[s])
        return vals

    def _fetched(self, vals):
        """The fetched values of a step that ran to its end."""
        if not self._ran:
            self._ran = True
            allocator.trim()
        return [fix(vals[s], vals) for fix, s in zip(self._fetch_fix, self._fetch_slots)]

    def _dataflow_info(self):
        if self._dataflow is None:   # built on first use; a benign race between threads
            dependents, pending = _dependencies(self._steps, None)
            inline = [_inline_kind(s, self._gpu, self.inline_bytes) for s in self._steps]
            urgent = _urgency(self._steps, dependents)
            # The steps ready when a run starts: those a _Send takes, then the others.
            first = [k for k, n in enumerate(pending) if n == 0]
            follow = [None] * len(self._steps) if self._gpu else _follow_ups(
                self._steps, dependents, inline, urgent, self._uses, self._reads, self._unread)
            self._dataflow = (dependents, pending, inline,
                              [_timeline_label(step.op) for step in self._steps], urgent,
                              ([k for k in first if urgent[k]], [k for k in first if not urgent[k]]),
                              follow)
        return self._dataflow

    def _run_compiled(self, ctx, vals):
        fns = self._fns
        try:
            for fn, _ in self._chunks:
                fn(ctx, vals, fns)
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes the right OpError
            raise op_error(e, self._failed_op(e.__traceback__)) from e

    def _failed_op(self, tb):
        while tb is not None:
            base = self._chunk_base.get(tb.tb_frame.f_code)
            if base is not None:
                return self._steps[base + tb.tb_lineno - 2].op  # line 1 is the `def`
            tb = tb.tb_next
        return None


# -- the dataflow loop, driven by whichever thread has work for it -------------------------------
# A light thread (the transport's I/O thread, see ``light_thread``) never blocks and never runs
# expensive kernels: a completion it delivers (a tensor received for a Recv) runs the ops it makes
# ready right there when they are cheap (a small gradient applied on a ps, a small tensor sent on),
# which saves two thread hand-offs per message (each ~35 us on a 2-core machine under one GIL);
# an expensive op hands the rest of the step to its owner (the thread in ``Plan.run``, or a pool).
# Which ops may run there at all is the op's ``light_ok`` (zps.framework.registry.OpDef): every
# stateless op, and the stateful ones that never block, do I/O, call user code or draw random
# numbers (variables, assigns, applies, accumulators, queue ops).
INLINE_BYTES = 64 << 10   # an op whose array inputs hold more bytes than this is expensive
# ... unless the task has at most one core's worth of CPU (several tasks sharing a small
# machine): a hand-off to another thread then buys no parallelism, only its cost, so ops up to
# this size run inline (zps.distributed.server picks the limit per host). mlp-async, 4 tasks on
# 2 cores: +1 to +9% in 7 alternating pairs, from the ps applying 1.6 MB gradients inline.
SHARED_CPU_INLINE_BYTES = 2 << 20
_NEVER, _SMALL, _ALWAYS = 0, 1, 2
_light = threading.local()


def _inline_kind(step, gpu, limit):
    op = step.op
    opdef = op.op_def
    if gpu or not opdef.light_ok:
        return _NEVER   # a GPU plan's kernels run on the threads that own its devices
    if opdef.type in ("_Recv", "_RecvN", "NoOp"):
        return _ALWAYS
    if opdef.inline_cost is not None:
        return _SMALL   # its cost is known once its inputs are (_small)
    # Inputs whose static shapes say they are small need no check when the op runs.
    nbytes = 0
    for i, t in enumerate(op.inputs):
        if i in step.deref or i in opdef.ref_inputs:
            continue
        shape = t.get_shape()
        if not shape.is_fully_defined():
            return _SMALL
        nbytes += shape.num_elements() * (t.dtype.base_dtype.size or 8)
    return _ALWAYS if nbytes <= limit else _SMALL


def light_thread():
    """Mark the calling thread light: completions it delivers run cheap ops inline (above)."""
    _light.deferred = collections.deque()
    _light.depth = 0


def batched(fn):
    """Call ``fn()``; on a light thread, the steps it completes continue after it returns, each
    once (a message delivering many tensors to one step runs that step once, not per tensor)."""
    if _light_state() is None:
        fn()
    else:
        _on_light_thread(fn)


def _light_state():
    return getattr(_light, "deferred", None)


def _on_light_thread(fn):
    # A completion delivered while this light thread already drives a step (a _Send to a task in
    # this process completing a Recv) runs after it, not nested inside its kernel.
    if _light.depth:
        _light.deferred.append(fn)
        return
    _light.depth = 1
    try:
        fn()
        while _light.deferred:
            _light.deferred.popleft()()
    finally:
        _light.depth = 0


def _small(step, vals, limit):
    cost = step.op.op_def.inline_cost
    if cost is not None:
        return cost(*step.args(vals)) <= limit
    n = 0
    for i, j in enumerate(step.ins):
        if i not in step.deref:
            n += getattr(vals[j], "nbytes", 0)
    return n <= limit


class _Run:
    """One step of a dataflow plan: its ops run as they become ready, by one thread at a time.

    ``active`` says a thread is driving the run; a completion arriving meanwhile is queued for that
    thread, otherwise the completing thread drives (light thread) or hands the run to
    ``offload(fn)``. ``done(error)`` is called once, when every op ran or one failed.
    """

    __slots__ = ("plan", "ctx", "vals", "done", "offload", "records", "pending", "ready",
                 "later", "sent", "completions", "lock", "active", "finished", "left", "waiting",
                 "started", "lanes", "info", "uses")

    def __init__(self, plan, ctx, vals, done, offload, records):
        self.plan, self.ctx, self.vals = plan, ctx, vals
        self.done, self.offload, self.records = done, offload, records
        self.info = plan._dataflow_info()
        self.pending = self.info[1].copy()
        self.uses = plan._uses.copy()   # readers left per value (Plan._reads)
        # Ready steps: those a _Send takes first (``ready``), the others once none is left
        # (``later``), so that what other tasks wait for is sent before this task computes on.
        ready, later = self.info[5]
        self.ready, self.later = collections.deque(ready), collections.deque(later)
        self.sent = False    # a _Send ran since the sends were last flushed
        self.completions = collections.deque()
        self.lock = threading.Lock()
        self.active = True   # by the thread that creates it, until its first drive returns
        self.finished = False
        self.left, self.waiting = len(plan._steps), 0
        self.started = {}    # traced: async step -> (start us, lane)
        self.lanes = []      # traced: lanes of async kernels waiting (lane 0: synchronous ones)

    def complete(self, k, result=None):
        """The callback of async kernel ``k`` (any thread, once)."""
        with self.lock:
            if self.finished:
                return
            self.completions.append((k, result))
            if self.active:
                return
            self.active = True
        if _light_state() is not None:
            _on_light_thread(self.drive_light)
        else:
            self.offload(self.drive_owner)

    def drive_light(self):
        self.drive(False)

    def drive_owner(self):
        self.drive(True)

    def drive(self, heavy_ok):
        """Run what is ready until the run waits (``active`` cleared), is handed to ``offload``
        (an expensive op on a light thread) or is done."""
        # Kernels follow IEEE semantics silently, as TF1's do: log(0) is -inf, 0/0 is nan.
        if self.finished:
            return
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            try:
                if not self._drive(heavy_ok):
                    return
            except Exception as e:  # noqa: BLE001 - the step's failure
                self._finish(e)
                return
        self._finish(None)

    def _drive(self, heavy_ok):
        steps, vals, ctx, ready, later, records = self.plan._steps, self.vals, self.ctx, \
            self.ready, self.later, self.records
        dependents, _, inline, labels, urgent, _, follow = self.info
        reads, unread, uses = self.plan._reads, self.plan._unread, self.uses
        while True:
            if not ready and later:
                if self.sent and self.waiting:
                    # This partition waits for something that may need what it sent (the rows
                    # for the ids it sends): that goes out before it computes on.
                    self._flush()
                ready.append(later.popleft())
            if ready:
                k = ready[0]
                if k < 0:   # the follow-up of completed step -1 - k, compiled (_FollowUp)
                    ready.popleft()
                    follow[-1 - k].run(self)
                    if not self.left:
                        self._flush()
                        return True
                    continue
                step = steps[k]
                if not heavy_ok and inline[k] != _ALWAYS and (
                        inline[k] == _NEVER or not _small(step, vals, self.plan.inline_bytes)):
                    self.offload(self.drive_owner)   # stays active: completions queue for it
                    return False
                ready.popleft()
                try:
                    if step.is_async:
                        self.waiting += 1
                        if records is not None:
                            lane = next((i for i, busy in enumerate(self.lanes) if not busy),
                                        len(self.lanes))
                            self.lanes[lane:lane + 1] = [True]
                            self.started[k] = (time.time(), lane)
                        step.fn(ctx, functools.partial(self.complete, k), *step.args(vals))
                    elif records is None:
                        step.store(vals, step.fn(ctx, *step.args(vals)))
                    else:
                        t0 = time.time()
                        step.store(vals, step.fn(ctx, *step.args(vals)))
                        records.append((step.op.name, int(t0 * 1e6), int(time.time() * 1e6),
                                        labels[k], 0))
                except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
                    raise op_error(e, step.op) from e
                for s in reads[k]:   # the step has its inputs: drop those it read last
                    n = uses[s] - 1
                    if n:
                        uses[s] = n
                    else:
                        vals[s] = None
                if step.is_async:
                    continue
                for s in unread[k]:
                    vals[s] = None
            else:
                with self.lock:
                    item = self.completions.popleft() if self.completions else None
                if item is None:
                    if not self.waiting:
                        raise errors.InternalError(None, None, "Plan deadlocked: %d ops can never "
                                                   "become ready (cyclic control inputs?)"
                                                   % self.left)
                    self._flush()   # what this wave sent goes out before we wait
                    with self.lock:
                        if not self.completions:
                            self.active = False   # the next completion drives
                            return False
                    continue
                k, result = item
                self.waiting -= 1
                step = steps[k]
                if records is not None:
                    t0, lane = self.started.pop(k)
                    self.lanes[lane] = False
                    records.append((step.op.name, int(t0 * 1e6), int(time.time() * 1e6),
                                    labels[k], lane + 1))
                try:
                    if isinstance(result, BaseException):
                        raise result
                    step.store(vals, result)
                    for s in unread[k]:
                        vals[s] = None
                except Exception as e:  # noqa: BLE001 - every kernel failure becomes an OpError
                    raise op_error(e, step.op) from e
                fu = follow[k]
                if fu is not None and records is None:
                    self.left -= 1
                    pending = self.pending
                    for d in fu.direct:   # dependents[k] but the follow-up's own
                        pending[d] -= 1
                        if pending[d] == 0:
                            (ready if urgent[d] else later).append(d)
                    # Queued as its most urgent step would be (what a _Send takes first).
                    (ready if fu.urgent else later).append(-1 - k)
                    continue
            self.left -= 1
            if not self.left:
                self._flush()   # before done: the caller may wait for what these sends unblock
                return True
            if urgent[k] == _SENDS:
                self.sent = True
            pending = self.pending
            for d in dependents[k]:
                pending[d] -= 1
                if pending[d] == 0:
                    (ready if urgent[d] else later).append(d)

    def _flush(self):
        self.sent = False
        flush = self.ctx.extras.get("flush")
        if flush is None:
            return
        if self.records is None:
            flush()
            return
        t0 = time.time()
        flush()
        self.records.append(("_FlushSends", int(t0 * 1e6), int(time.time() * 1e6),
                             "_FlushSends = _FlushSends()", 0))

    def _finish(self, error):
        with self.lock:
            if self.finished:
                return
            self.finished = True
        self.done(error)


def _timeline_label(op):
    """TF1's timeline label of a node: ``"name = Type(input, ...)"`` (output 0 named by its op)."""
    inputs = ", ".join(t.op.name if t.value_index == 0 else t.name for t in op.inputs)
    return "%s = %s(%s)" % (op.name, op.type, inputs)


def _compile(steps, base, frees):
    """A function running ``steps[base:base + _CHUNK]``, one source line per op (see module doc);
    the values ``frees[k]`` are dropped on step ``k``'s line, after it."""
    return _straight_line(steps, range(base, min(base + _CHUNK, len(steps))), frees,
                          "run_ops_%d" % base), base


def _straight_line(steps, ks, frees, name):
    """A function ``name(ctx, vals, fns)`` running the steps ``ks`` in order, one source line per
    op (line ``i + 2`` runs ``ks[i]``); the values ``frees[k]`` (None: none) are dropped on step
    ``k``'s line, after it."""
    lines = ["def %s(ctx, vals, fns):" % name]
    for k in ks:
        step = steps[k]
        args = "".join(", vals[%d].read()" % j if i in step.deref else ", vals[%d]" % j
                       for i, j in enumerate(step.ins))
        outs = ", ".join("vals[%d]" % s for s in step.outs)
        if len(step.outs) > 1:
            outs += ","
        drop = "".join("vals[%d] = " % s for s in frees[k]) if frees else ""
        lines.append("    %sfns[%d](ctx%s)%s" % (outs + " = " if outs else "", k, args,
                                                  "; %sNone" % drop if drop else ""))
    if len(lines) == 1:
        lines.append("    pass")
    namespace = {}
    exec(compile("\n".join(lines), "<zps plan>", "exec"), namespace)
    return namespace[name]


_FOLLOW_MIN = 4   # steps a follow-up needs to be compiled (fewer run in the loop as they are)


class _FollowUp:
    """The ops the completion of an asynchronous step makes runnable by itself, run as one
    compiled function (the dataflow loop costs ~2.5 us an op, straight-line code ~0.8: a ps
    applying the 125 values of a received group runs 125 ``AssignAdd``s).

    ``steps``: every synchronous, cheap (inline ``_ALWAYS``) step all of whose inputs
    come from that completion, from each other or from steps that wait for no asynchronous step
    (those all ran before the loop takes any completion: it takes one only when nothing else is
    ready), in topological order. ``direct``: the completed step's other dependents; ``ext``:
    ``(step, edges)`` from these steps to the others; ``reads``: ``(slot, readers)`` among these
    steps of the values read elsewhere too, counted down after them as the loop counts each
    reader (the others are dropped in the compiled code after their last reader, and outputs
    nobody reads once made). A traced step (``records``) runs the loop instead."""

    __slots__ = ("steps", "urgent", "sends", "fn", "direct", "ext", "reads")

    def __init__(self, all_steps, k, members, dependents, urgent, uses, reads, unread):
        mine = set(members)
        self.steps = members
        self.urgent = max(urgent[m] for m in members)   # its place in the loop's queues
        self.sends = self.urgent == _SENDS
        self.direct = tuple(d for d in dependents[k] if d not in mine)
        ext = collections.Counter(d for m in members for d in dependents[m] if d not in mine)
        self.ext = tuple(ext.items())
        # A value all of whose readers are here is dropped after the last of them, in the
        # compiled code (as the loop would); one read elsewhere too is counted down after.
        readers = collections.Counter(s for m in members for s in reads[m])
        left = readers.copy()
        frees = {m: list(unread[m]) for m in members}
        for m in members:
            for s in reads[m]:
                left[s] -= 1
                if left[s] == 0 and readers[s] == uses[s]:
                    frees[m].append(s)
        self.reads = tuple((s, n) for s, n in readers.items() if n != uses[s])
        self.fn = _straight_line(all_steps, members, frees, "follow_%d" % k)

    def run(self, run):
        vals = run.vals
        try:
            self.fn(run.ctx, vals, run.plan._fns)
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes the right OpError
            raise op_error(e, self._failed_op(run.plan._steps, e.__traceback__)) from e
        uses = run.uses
        for s, n in self.reads:
            n = uses[s] - n
            if n:
                uses[s] = n
            else:
                vals[s] = None
        run.left -= len(self.steps)
        if self.sends:
            run.sent = True
        pending, urgent = run.pending, run.info[4]
        for d, n in self.ext:
            left = pending[d] - n
            pending[d] = left
            if left == 0:
                (run.ready if urgent[d] else run.later).append(d)

    def _failed_op(self, steps, tb):
        while tb is not None:
            if tb.tb_frame.f_code is self.fn.__code__:
                return steps[self.steps[tb.tb_lineno - 2]].op
            tb = tb.tb_next
        return None


def _follow_ups(steps, dependents, inline, urgent, uses, reads, unread):
    """Per step, its ``_FollowUp`` (asynchronous steps that make at least _FOLLOW_MIN steps
    runnable by themselves), else None."""
    preds = [[] for _ in steps]
    for k, ds in enumerate(dependents):
        for d in ds:
            preds[d].append(k)
    waits = [False] * len(steps)   # the step waits for an asynchronous one (or is one)
    for k, step in enumerate(steps):   # (steps are in topological order)
        waits[k] = step.is_async or any(waits[p] for p in preds[k])
    follow = [None] * len(steps)
    for k, step in enumerate(steps):
        if not step.is_async:
            continue
        members, mine, heap = [], {k}, list(dependents[k])
        heapq.heapify(heap)
        seen = set(heap)
        while heap:   # candidates in topological order: a step's predecessors come first
            d = heapq.heappop(heap)
            if steps[d].is_async or inline[d] != _ALWAYS \
                    or any(waits[p] and p not in mine for p in preds[d]):
                continue
            members.append(d)
            mine.add(d)
            for e in dependents[d]:
                if e not in seen:
                    seen.add(e)
                    heapq.heappush(heap, e)
        if len(members) >= _FOLLOW_MIN:
            follow[k] = _FollowUp(steps, k, members, dependents, urgent, uses, reads, unread)
    return follow


def _releases(steps, kept):
    """When each value a step computes can be dropped (slots in ``kept`` never are: fetches,
    variables). Returns ``(frees, uses, reads, unread)``: ``frees[k]``, the slots to drop after
    step ``k`` when the steps run in order (after their last reader, or their producer when
    nobody reads them); for the dataflow loop, whose order varies, ``uses`` (per slot: how many
    steps read it, None for slots it never drops), ``reads[k]`` (the droppable slots step ``k``
    reads: each reader counts down, the last one drops the value) and ``unread[k]`` (outputs of
    step ``k`` nobody reads: dropped once stored)."""
    last = {}
    for k, step in enumerate(steps):
        for s in step.outs:
            if s != _TRASH and s not in kept:
                last[s] = k
    reads = []
    for k, step in enumerate(steps):
        mine = tuple(sorted({s for s in step.ins if s in last}))
        reads.append(mine)
        for s in mine:
            last[s] = k
    frees = [[] for _ in steps]
    for s, k in last.items():
        frees[k].append(s)
    uses = [None] * (1 + max((s for step in steps for s in step.outs), default=0))
    for mine in reads:
        for s in mine:
            uses[s] = (uses[s] or 0) + 1
    unread = [tuple(s for s in step.outs if s in last and uses[s] is None) for step in steps]
    return [tuple(sorted(f)) for f in frees], uses, reads, unread


def _dependencies(steps, slots):
    """For the dataflow loop: each step's dependent steps, and how many steps each waits for."""
    producer = {}
    by_op = {}
    for k, step in enumerate(steps):
        by_op[step.op] = k
        for s in step.outs:
            if s != _TRASH:
                producer[s] = k
    dependents = [set() for _ in steps]
    pending = [0] * len(steps)
    for k, step in enumerate(steps):
        waits = {producer[s] for s in step.ins if s in producer}
        waits.update(by_op[c] for c in step.op._control_inputs if c in by_op)
        for w in waits:
            dependents[w].add(k)
        pending[k] = len(waits)
    return [sorted(d) for d in dependents], pending


_SENDS = 2   # _urgency of a _Send; 1: a step feeding one; 0: the others
# Ops that only pass a value on (or a control token): a step feeding a _Send through them still
# feeds it directly.
_SEND_TYPES = ("_Send", "_SendN")
_FORWARDING = frozenset(("Identity", "IdentityN", "Reshape", "ExpandDims", "Squeeze",
                         "StopGradient", "NoOp", "Const"))


def _urgency(steps, dependents):
    """Per step: _SENDS for a _Send; 1 for a step whose output a _Send takes (directly or through
    forwarding ops: an optimizer's gradient through its tuple Identity, an update through a
    control token); else 0. The dataflow loop runs these first and, while the partition waits
    for a tensor, flushes the sends before it computes on: the ids of an embedding lookup leave
    before the positions to stitch their rows back are computed (5-10% more rows/s on a 2-ps
    lookup of 4096 ids). Without a wait pending the sends keep batching (flushing there too made
    more, smaller messages: 5% fewer MLP examples/s). Steps are in topological order, so one
    backward pass does it."""
    urgency = [0] * len(steps)
    for k in range(len(steps) - 1, -1, -1):
        op_type = steps[k].op.type
        if op_type in _SEND_TYPES:
            urgency[k] = _SENDS
        elif any(urgency[d] == _SENDS or urgency[d] and steps[d].op.type in _FORWARDING
                 for d in dependents[k]):
            urgency[k] = 1
    return urgency


def op_error(exc, op):
    """``exc`` raised by ``op``'s kernel as an OpError that names the op."""
    if isinstance(exc, errors.OpError):
        if exc.op_name or op is None:
            return exc
        return type(exc)(op.name, op, exc.message)
    if isinstance(exc, MemoryError):
        cls = errors.ResourceExhaustedError
    elif isinstance(exc, NotImplementedError):
        cls = errors.UnimplementedError
    else:
        cls = errors.InvalidArgumentError
    if op is None:
        return errors.InternalError(None, None, "Step failed outside any kernel: %s: %s"
                                    % (type(exc).__name__, exc))
    return cls(op.name, op, "%s (op %s of type %s): %s: %s"
               % ("Failed to run op", op.name, op.type, type(exc).__name__, exc))


def _unordered(op, fed, ordering):
    """Whether ``op`` neither waits for nor orders other ops through control edges and its output
    is not fed: a step that runs no kernel (below) must be one of these."""
    return not op._control_inputs and op not in ordering and op._outputs[0] not in fed


def _forwards(op, fed, ordering):
    """An Identity that only passes a value on: its readers read its input's slot and no kernel
    runs (a kernel call costs ~1 us in the dataflow loop; models are full of identities). Not an
    Identity of a variable (it reads the variable when it runs)."""
    return op.type == "Identity" and not op._inputs[0].is_ref and _unordered(op, fed, ordering)


def _sent_reads(ops, fed, ordering, fetches):
    """``{read output: variable ref}`` for the reads of a variable (an Identity of its ref, as
    ``v/read``) whose only reader is a _Send (a ps sending a variable to a worker): the _Send
    reads the variable itself when it runs, one kernel less per variable and step. Not a read
    with control edges, fetched or fed (it could then be ordered or seen apart from the send)."""
    readers = collections.Counter(t for op in ops for t in op._inputs)
    sends = {t for op in ops if op.type in _SEND_TYPES for t in op._inputs}
    fetched = set(fetches)
    return {op._outputs[0]: op._inputs[0] for op in ops
            if op.type == "Identity" and op._inputs[0].is_ref and _unordered(op, fed, ordering)
            and op._outputs[0] not in fetched and readers[op._outputs[0]] == 1
            and op._outputs[0] in sends}


def _names_container(op, fed, ordering):
    """A variable op, whose output (the variable's container in the step's resource manager)
    ``Plan._prepare`` puts in place instead of a kernel call; not one with control edges."""
    return op.type == "VariableV2" and _unordered(op, fed, ordering)


def _foldable(op, fed):
    """A constant is put in the value table once, unless it must wait for control inputs
    (then it is a step like any other, so ops that read it wait too)."""
    return op.type == "Const" and not op._control_inputs and op._outputs[0] not in fed


def _bind_kernel(op, backend):
    opdef = op.op_def
    kernel = opdef.kernel_for(backend)
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    if opdef.needs_op_name:
        attrs["op_name"] = op.name
    return functools.partial(kernel, **attrs) if attrs else kernel


# -- GPU devices: placement and host<->device copies (zps.ops.cupy_kernels) ---------------------
def _names_gpu(ops):
    return any("GPU" in op.device for op in ops)


class _GpuPlan:
    """Where each op of a plan runs (the host, or a GPU by cupy) and the copies between them.

    A copy is a step of its own, inserted right before the first op that needs it and shared by
    every consumer on the same device: host->device for feeds, host values and constants (these
    once, when the plan is built) read by a GPU op; device->host for GPU values read by a host op
    (into pinned memory when the reader is a ``_Send`` to another task) and for fetches, which
    always come back as numpy; device->device between GPUs. A variable read by an op on another
    device is read when that op runs and copied then. Shape-reading ops and shape/axis inputs
    (``cupy_kernels.METADATA`` / ``HOST_INPUTS``) stay on the host without copies.
    """

    def __init__(self, ops, fed, soft_placement, gpu_ids=None):
        from zps.ops import cupy_kernels
        self._ck = cupy_kernels
        self._fed = fed
        # op -> GPU index (ops not in it run on the host)
        self.device = cupy_kernels.place(ops, soft_placement, gpu_ids)
        self._copies = {}      # (slot, device) -> slot of its copy there
        self._constants = []   # (slot of the device copy, slot of the host constant, device)

    def _where(self, t):
        """The GPU holding the value of ``t`` (None: the host, as feeds and constants are)."""
        return None if (t in self._fed or _foldable(t.op, self._fed)) else self.device.get(t.op)

    def beside(self, op, t):
        """Whether ``op`` runs where the value of ``t`` is (an Identity there passes it on)."""
        return self.device.get(op) == self._where(t)

    def _copy_fn(self, have, want, consumer):
        ck = self._ck
        if have is None:
            return functools.partial(ck.to_device, want)
        if want is None:
            return ck.host_transfer_for(consumer.type)
        return functools.partial(ck.device_copy, want)

    def bind(self, op, ins, deref, slot, steps):
        """``op``'s kernel for its device, and its input slots after the copies it needs
        (appended to ``steps``)."""
        ck = self._ck
        dev = self.device.get(op)
        fn = _bind_kernel(op, "numpy") if dev is None else ck.bind_gpu(_bind_kernel(op, "cupy"), dev)
        if op.type in ck.METADATA:
            return fn, ins, deref
        host_inputs = ck.host_inputs(op.type, len(ins)) if dev is not None else ()
        ins, deref = list(ins), set(deref)
        ref_inputs = op.op_def.ref_inputs
        fed = self._fed
        for i, t in enumerate(op._inputs):
            if i in ref_inputs:
                continue   # a variable's container: the op runs where the variable lives
            want = None if i in host_inputs else dev
            constant = t not in fed and _foldable(t.op, fed)
            have = self._where(t)
            if want == have:
                continue
            if i in deref:   # read the variable when this op runs, then copy the value
                s = slot(("read", op, i))
                steps.append(_Step(op, self._copy_fn(have, want, op), (ins[i],), frozenset([0]),
                                   (s,), False))
                deref.discard(i)
            else:
                key = (ins[i], want)
                s = self._copies.get(key)
                if s is None:
                    s = self._copies[key] = slot(("copy",) + key)
                    if constant:
                        self._constants.append((s, ins[i], want))
                    else:
                        steps.append(_Step(op, self._copy_fn(have, want, op), (ins[i],),
                                           frozenset(), (s,), False))
            ins[i] = s
        return fn, tuple(ins), frozenset(deref)

    def fill_template(self, template):
        for s, host, dev in self._constants:
            template[s] = self._ck.to_device(dev, None, template[host])

    def fetch_fixers(self, fetches, fetch_slots, fixers):
        """Fetches of GPU values are copied to the host (a fresh array: nothing aliases), or
        taken from the host copy the step makes anyway for a host op."""
        slots, out = [], []
        for t, s, fix in zip(fetches, fetch_slots, fixers):
            host_copy = self._copies.get((s, None))
            if t in self._fed or self.device.get(t.op) is None:
                slots.append(s)
                out.append(fix)
            elif t.is_ref:
                slots.append(s)
                out.append(functools.partial(_read_to_host, self._ck.to_host, t.op))
            elif host_copy is not None:
                slots.append(host_copy)
                out.append(_as_is)
            else:
                slots.append(s)
                out.append(functools.partial(_fetch_to_host, self._ck.to_host))
        return slots, out


def _fetch_to_host(to_host, v, vals):
    return to_host(None, v)


def _read_to_host(to_host, op, container, vals):
    try:
        return to_host(None, container.read())
    except errors.OpError as e:
        raise op_error(e, op) from None


class _FedRef:
    """A value fed for a variable's reference: its readers get the value, updates are refused."""

    __slots__ = ("value", "name")
    initialized = True

    def __init__(self, value):
        self.value = value

    def read(self):
        return self.value

    @property
    def lock(self):
        raise errors.InvalidArgumentError(
            None, None, "Cannot update a variable whose value is fed in this step: remove it "
            "from feed_dict to update it.")

    def writable(self):
        return self.lock   # refused, as above


# -- fetches: variable storage is never handed out (TF1 copies every fetched value) ------------
def _fetch_fixers(ops, fetches, fed, slots):
    # Ops downstream of a variable may return its storage unchanged (identity-like kernels):
    # their fetched arrays are checked against the variables' current values.
    reads_variable = set()
    var_slots = []
    for op in ops:
        if any(t not in fed and (t.is_ref or t.op in reads_variable) for t in op._inputs):
            reads_variable.add(op)
        var_slots.extend(slots[t] for t in op._outputs if t.is_ref and t not in fed)
    fixers = []
    for t in fetches:
        if t in fed:
            fixers.append(_unwrap_fed if t.is_ref else _as_is)
        elif t.is_ref:
            fixers.append(functools.partial(_read_copy, t.op))
        elif _aliases_variable(t):
            fixers.append(_copy)
        elif t.op in reads_variable:
            fixers.append(functools.partial(_detach_from_variables, var_slots))
        else:
            fixers.append(_detach)
    return fixers


def _as_is(v, vals):
    return v


def _unwrap_fed(v, vals):
    return v.value


def _read_copy(op, container, vals):
    try:
        return container.read().copy()
    except errors.OpError as e:
        raise op_error(e, op) from None


def _copy(v, vals):
    return v.copy() if hasattr(v, "copy") else v


def _detach(v, vals):
    # A view may alias a variable's storage (a reshape of a read); constants are read-only.
    if v.__class__ is np.ndarray and not (v.flags.owndata and v.flags.writeable):
        return v.copy()
    return v


def _detach_from_variables(var_slots, v, vals):
    if v.__class__ is np.ndarray:
        if not (v.flags.owndata and v.flags.writeable):
            return v.copy()
        for s in var_slots:
            if getattr(vals[s], "value", None) is v:
                return v.copy()
    return v


def _aliases_variable(t):
    while True:
        opdef = t.op.op_def
        if opdef.ref_output and t.value_index == 0:
            return True
        if not (opdef.aliases_input and t.value_index == 0 and t.op.inputs):
            return False
        t = t.op.inputs[0]


def prune(fetches, targets, fed=()):
    """The ops needed to compute ``fetches`` and run ``targets``, in topological order.

    Fed tensors are leaves: their producers run only if some other output of theirs is needed.
    """
    order, seen = [], set()
    for root in [t.op for t in fetches if t not in fed] + list(targets):
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, _deps(root, fed))]
        while stack:
            op, deps = stack[-1]
            for d in deps:
                if d not in seen:
                    seen.add(d)
                    stack.append((d, _deps(d, fed)))
                    break
            else:
                stack.pop()
                order.append(op)
    return order


def _deps(op, fed):
    # A fed placeholder as a control input counts as done (TF1's FeedInputs moves a fed
    # Placeholder's control edges to the feed; any other fed op still runs for its control edges).
    return iter([t.op for t in op._inputs if t not in fed]
                + [c for c in op._control_inputs
                   if not (c.type == "Placeholder" and c._outputs[0] in fed)])


def as_fetch_element(graph, fetch):
    """Resolve a fetch (Tensor, Operation, name) to a graph element of ``graph``."""
    el = graph.as_graph_element(fetch)
    if not isinstance(el, Tensor | Operation):
        raise TypeError("Fetch argument %r has invalid type %s" % (fetch, type(fetch).__name__))
    return el
