"""``gradients(ys, xs)``: symbolic reverse-mode differentiation over the graph.

Gradient rules are graph-building functions registered with each op (see
``zps.framework.registry``), so the gradient is itself a graph and can be differentiated again.
Broadcasting is undone here, once, for every op registered with ``broadcast=True``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant(3.0)
...     y = x * x * x
...     dy, = tf.gradients(y, [x])
...     d2y, = tf.gradients(dy, [x])
...     print([float(v) for v in tf.Session().run([dy, d2y])])
[27.0, 18.0]
"""

import collections
import contextlib

from zps.framework import registry
from zps.framework.graph import (
    IndexedSlices,
    Operation,
    Tensor,
    convert_to_tensor,
    get_default_graph,
)


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None):
    """Symbolic partial derivatives of ``sum(ys)`` with respect to each of ``xs``.

    Returns a list with one entry per x: a Tensor, an IndexedSlices (for gathers), or None when
    x does not influence ys. Raises LookupError naming the op when an op on the path has no
    gradient rule.
    """
    # Same layer; imported lazily to keep module initialization order simple.
    from zps.ops import array_ops, control_flow_ops

    ys = _as_list(ys)
    xs = [_as_ref_tensor(x) for x in _as_list(xs)]
    ys = [convert_to_tensor(y) for y in ys]
    if grad_ys is not None:
        grad_ys = _as_list(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError("grad_ys has %d entries but ys has %d" % (len(grad_ys), len(ys)))
    graph = ys[0].graph if ys else get_default_graph()
    stop_ops = {_as_op(s) for s in _as_list(stop_gradients or [])}

    with graph.name_scope(name):
        between = _ops_between([y.op for y in ys], [x.op for x in xs], stop_ops)
        pending = collections.Counter()
        for op in between:
            for t in op._inputs:
                if t.op in between:
                    pending[t.op] += 1
        grads = collections.defaultdict(list)
        for i, y in enumerate(ys):
            gy = grad_ys[i] if grad_ys is not None and grad_ys[i] is not None else None
            if gy is None:
                if not y.dtype.is_floating:
                    raise TypeError("Gradients of %s are only defined for floating-point ys; it "
                                    "has dtype %s" % (y.name, y.dtype.name))
                if y.get_shape().is_fully_defined():
                    # As TF1 (a fill of the folded static shape): the gradient does not wait
                    # for y, so a step that does not fetch a scalar loss does not compute it.
                    gy = array_ops.ones(y.get_shape().as_list(), dtype=y.dtype,
                                        name="grad_ys_%d" % i)
                else:
                    gy = array_ops.ones_like(y, name="grad_ys_%d" % i)
            else:
                gy = convert_to_tensor(gy, dtype=y.dtype)
            grads[y].append(gy)

        ready = [op for op in _unique([y.op for y in ys]) if pending[op] == 0 and op in between]
        x_ops = {x.op for x in xs}
        x_set = set(xs)
        while ready:
            op = ready.pop()
            out_grads = [_aggregate(grads.get(t), array_ops) for t in op._outputs]
            # An x whose own inputs lead to no other x needs no gradient of its inputs.
            if op not in x_ops or any(t.op in between for t in op._inputs):
                in_grads = _op_input_grads(op, out_grads, stop_ops, colocate_gradients_with_ops,
                                           array_ops)
                # Gradients of inputs that lead to no x are never needed: dropping them here keeps
                # gating (below) from forcing their computation (e.g. d loss / d input batch).
                in_grads = [g if t.op in between or t in x_set else None
                            for t, g in zip(op._inputs, in_grads)]
                if gate_gradients and sum(g is not None for g in in_grads) > 1:
                    # TF1's GATE_OP: an op's input gradients are released together, so an
                    # in-place update of one input cannot race the gradient that still reads it.
                    with graph.device(None), graph.colocate_with(None, ignore_existing=True):
                        in_grads = control_flow_ops.tuple(in_grads)
                for t, g in zip(op._inputs, in_grads):
                    if g is not None and _backpropagatable(t):
                        grads[t].append(g)
            for t in op._inputs:
                if t.op in between:
                    pending[t.op] -= 1
                    if pending[t.op] == 0:
                        ready.append(t.op)
        return [_aggregate(grads.get(x), array_ops) for x in xs]


def _op_input_grads(op, out_grads, stop_ops, colocate, array_ops):
    if op in stop_ops or all(g is None for g in out_grads):
        return [None] * len(op._inputs)
    opdef = op.op_def
    if opdef.grad_fn is None:
        return [None] * len(op._inputs)
    if opdef.grad_fn is registry.MISSING:
        if not any(_backpropagatable(t) for t in op._inputs):
            return [None] * len(op._inputs)
        raise LookupError("No gradient defined for operation '%s' (op type: %s). Register one with "
                          "zps.framework.registry.set_gradient, or wrap its input in "
                          "tf.stop_gradient if no gradient should flow." % (op.name, op.type))
    graph = op.graph
    if not opdef.sparse_grad_ok:
        out_grads = [array_ops.densify(g) if isinstance(g, IndexedSlices) else g for g in out_grads]
    if len(op._outputs) > 1 and any(g is None for g in out_grads):
        out_grads = [array_ops.zeros_like(t) if g is None and t.dtype.is_floating else g
                     for t, g in zip(op._outputs, out_grads)]
    with graph.name_scope(op.name + "_grad"):
        ctx = graph.colocate_with(op) if colocate else contextlib.nullcontext()
        with ctx:
            in_grads = opdef.grad_fn(op, *out_grads)
            in_grads = list(in_grads) if isinstance(in_grads, list | tuple) else [in_grads]
            if len(in_grads) != len(op._inputs):
                raise ValueError("Gradient rule of %s returned %d gradients for %d inputs"
                                 % (op.type, len(in_grads), len(op._inputs)))
            if opdef.broadcast:
                in_grads = [array_ops.sum_to_shape_of(g, x) if isinstance(g, Tensor) else g
                            for g, x in zip(in_grads, op._inputs)]
    return in_grads


def _aggregate(contribs, array_ops):
    if not contribs:
        return None
    if len(contribs) == 1:
        return contribs[0]
    if all(isinstance(c, IndexedSlices) for c in contribs):
        return IndexedSlices(array_ops.concat([c.values for c in contribs], 0),
                             array_ops.concat([c.indices for c in contribs], 0),
                             contribs[0].dense_shape)
    from zps.ops import math_ops
    dense = [array_ops.densify(c) if isinstance(c, IndexedSlices) else c for c in contribs]
    return math_ops.add_n(dense)


def _ops_between(to_ops, from_ops, stop_ops):
    """Ops on some path from an op of ``from_ops`` to an op of ``to_ops``."""
    reached = set()
    stack = list(from_ops)
    while stack:
        op = stack.pop()
        if op in reached:
            continue
        reached.add(op)
        for t in op._outputs:
            stack.extend(t._consumers)
    between = set()
    stack = list(to_ops)
    while stack:
        op = stack.pop()
        if op in between or op not in reached:
            continue
        between.add(op)
        if op in stop_ops:
            continue
        stack.extend(t.op for t in op._inputs)
    return between


def _backpropagatable(t):
    return t.dtype.is_floating


def _as_list(v):
    return list(v) if isinstance(v, list | tuple) else [v]


def _as_ref_tensor(x):
    # A Variable is differentiated at its storage (the ref tensor its reads consume).
    ref = getattr(x, "_ref", None)
    if callable(ref):
        return ref()
    return convert_to_tensor(x)


def _as_op(x):
    if isinstance(x, Operation):
        return x
    return _as_ref_tensor(x).op


def _unique(items):
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out
