"""The executor: compiles a (sub)graph for given feeds and fetches into a plan once, then runs steps.

A plan is the pruned op list in topological order with every input resolved to a slot of a flat
value table; constants are folded into the table's template. A step is a tight loop over kernels.

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

import functools
import itertools

import numpy as np

from zps.framework import errors
from zps.framework.graph import Operation, Tensor

_step_ids = itertools.count(1)


class StepContext:
    """What kernels see of the step: the task's resources, the array module, the step id."""

    __slots__ = ("resources", "xp", "backend", "step_id", "extras")

    def __init__(self, resources, backend="numpy", step_id=None, extras=None):
        self.resources = resources
        self.backend = backend
        self.xp = _array_module(backend)
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.extras = extras if extras is not None else {}


def _array_module(backend):
    if backend == "numpy":
        return np
    if backend == "cupy":
        import cupy  # the optional 'gpu' extra
        return cupy
    raise ValueError("Unknown backend %r" % backend)


_TRASH = 0  # value slot for outputs nobody reads (e.g. a fed output of an op that still runs)


class Plan:
    """A compiled, reusable execution plan for one (feeds, fetches, targets) triple."""

    def __init__(self, feeds, fetches, targets, backend="numpy", placement_check=None):
        self.feeds = list(feeds)
        self.fetches = list(fetches)
        self.targets = list(targets)
        fed = set(self.feeds)
        self.ops = prune(self.fetches, self.targets, fed)
        if placement_check is not None:
            for op in self.ops:
                placement_check(op)
        slots = {}

        def slot(t):
            s = slots.get(t)
            if s is None:
                s = slots[t] = len(slots) + 1
            return s

        for t in self.feeds:
            slot(t)
        template = [None]
        steps, step_ops = [], []
        for op in self.ops:
            if op.type == "Const" and op.outputs[0] not in fed:
                slot(op.outputs[0])
                continue
            opdef = op.op_def
            if opdef.is_async:
                raise errors.UnimplementedError(
                    None, op, "Op %s (%s) blocks on another task and can only run in a "
                    "distributed session." % (op.name, op.type))
            fn = _bind_kernel(op, backend)
            deref = [i for i, t in enumerate(op.inputs)
                     if t.is_ref and i not in opdef.ref_inputs]
            if deref:
                fn = _dereferencing(fn, deref)
            ins = tuple(slot(t) for t in op.inputs)
            outs = [_TRASH if t in fed else slot(t) for t in op.outputs]
            steps.append((fn, ins, outs[0] if len(outs) == 1 else tuple(outs) if outs else _TRASH))
            step_ops.append(op)
        template.extend([None] * len(slots))
        for t, s in slots.items():
            if t.op.type == "Const" and t not in fed:
                template[s] = t.op._attrs["value"]
        self._template = template
        self._steps = steps
        self._step_ops = step_ops
        self._feed_slots = [slots[t] for t in self.feeds]
        self._fetch_slots = [slots[t] for t in self.fetches]
        self._fetch_fix = [_fetch_fixer(t, fed) for t in self.fetches]

    def run(self, ctx, feed_values):
        """Run one step; returns the fetched values (variable storage is copied, never aliased)."""
        vals = self._template.copy()
        for s, v in zip(self._feed_slots, feed_values):
            vals[s] = v
        i = 0
        try:
            for fn, ins, out in self._steps:
                r = fn(ctx, *[vals[j] for j in ins])
                if out.__class__ is int:
                    vals[out] = r
                else:
                    for s, v in zip(out, r):
                        vals[s] = v
                i += 1
        except Exception as e:  # noqa: BLE001 - every kernel failure becomes the right OpError
            raise op_error(e, self._step_ops[i]) from e
        return [fix(vals[s]) for fix, s in zip(self._fetch_fix, self._fetch_slots)]


def op_error(exc, op):
    """``exc`` raised by ``op``'s kernel as an OpError that names the op."""
    if isinstance(exc, errors.OpError):
        if exc.op_name:
            return exc
        return type(exc)(op.name, op, exc.message)
    if isinstance(exc, MemoryError):
        cls = errors.ResourceExhaustedError
    elif isinstance(exc, NotImplementedError):
        cls = errors.UnimplementedError
    else:
        cls = errors.InvalidArgumentError
    return cls(op.name, op, "%s (op %s of type %s): %s: %s"
               % ("Failed to run op", op.name, op.type, type(exc).__name__, exc))


def _bind_kernel(op, backend):
    opdef = op.op_def
    kernel = opdef.kernel_for(backend)
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    if opdef.needs_op_name:
        attrs["op_name"] = op.name
    return functools.partial(kernel, **attrs) if attrs else kernel


def _dereferencing(fn, positions):
    def run(ctx, *args):
        args = list(args)
        for p in positions:
            args[p] = args[p].read()
        return fn(ctx, *args)
    return run


def _aliases_variable(t):
    while True:
        opdef = t.op.op_def
        if opdef.ref_output and t.value_index == 0:
            return True
        if not (opdef.aliases_input and t.value_index == 0 and t.op.inputs):
            return False
        t = t.op.inputs[0]


def _fetch_fixer(t, fed):
    if t in fed:
        return _identity
    if t.is_ref:
        return _read_copy
    if _aliases_variable(t):
        return _copy
    return _copy_views


def _identity(v):
    return v


def _read_copy(container):
    return container.read().copy()


def _copy(v):
    return v.copy() if hasattr(v, "copy") else v


def _copy_views(v):
    # A view may alias a variable's storage (e.g. a reshape of a read): detach it.
    if isinstance(v, np.ndarray) and not v.flags.owndata:
        return v.copy()
    return v


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
    return iter([t.op for t in op._inputs if t not in fed] + op._control_inputs)


def as_fetch_element(graph, fetch):
    """Resolve a fetch (Tensor, Operation, name) to a graph element of ``graph``."""
    el = graph.as_graph_element(fetch)
    if not isinstance(el, Tensor | Operation):
        raise TypeError("Fetch argument %r has invalid type %s" % (fetch, type(fetch).__name__))
    return el
