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

A gradient rule can be replaced per op: ``Graph.gradient_override_map`` maps op types to a name
registered with ``tf.RegisterGradient`` (zps.framework.registry), and ``tf.custom_gradient``
(zps.ops.custom_gradient) uses it to give a function its own gradient.
"""

import collections
import contextlib
import enum

from zps.framework import registry
from zps.framework.graph import (
    IndexedSlices,
    Operation,
    Tensor,
    convert_to_tensor,
    get_default_graph,
)


class UnconnectedGradients(enum.Enum):
    """What ``gradients`` returns for an x that ys do not depend on: None, or zeros like x."""

    NONE = "none"
    ZERO = "zero"


class AggregationMethod:
    """How gradient contributions to one tensor are combined. zps adds them with one AddN for
    every method (the sum is the same; TF1's experimental methods only order the additions)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_AGGREGATION_METHODS = [AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                        AggregationMethod.EXPERIMENTAL_ACCUMULATE_N]


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE):
    """Symbolic partial derivatives of ``sum(ys)`` with respect to each of ``xs``.

    Returns a list with one entry per x: a Tensor, an IndexedSlices (for gathers), or, when x
    does not influence ys, None (``unconnected_gradients=tf.UnconnectedGradients.ZERO``: zeros
    like x). As TF1, gradients flow through floating-point tensors only: an integer y depending
    on x through a cast has a None gradient. Raises LookupError naming the op when an op on the
    path has no gradient rule.
    """
    # Same layer; imported lazily to keep module initialization order simple.
    from zps.ops import array_ops, control_flow_ops

    try:
        unconnected_gradients = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError("Unknown value for unconnected_gradients: '%s'"
                         % unconnected_gradients) from None
    if aggregation_method is None:
        aggregation_method = AggregationMethod.DEFAULT
    if aggregation_method not in _AGGREGATION_METHODS:
        raise ValueError("Invalid `aggregation_method` specified %s. Accepted values are %s."
                         % (aggregation_method, _AGGREGATION_METHODS))
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
                if not (y.dtype.is_floating or y.dtype.is_complex or y.dtype.is_integer
                        or y.dtype.is_bool):
                    raise TypeError("Tensor %s with type %s must be numeric to obtain a default "
                                    "gradient; pass grad_ys for it" % (y.name, y.dtype.name))
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
        result = [_aggregate(grads.get(x), array_ops) for x in xs]
    if unconnected_gradients is UnconnectedGradients.ZERO:
        # Outside the name scope, as TF1's.
        result = [array_ops.zeros_like(x) if g is None else g for x, g in zip(xs, result)]
    return result


def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False,
             aggregation_method=None):
    """The Hessian of ``sum(ys)`` with respect to each of ``xs`` (a tensor of shape
    ``x.shape + x.shape`` per x; the blocks between two xs are not computed).

    As TF1, a loop differentiates each element of the first derivative again, so the size of x
    may be known only when the graph runs (``name`` is unused, as in TF1). Where ``sum(ys)``
    does not depend on x, or is linear in it, the Hessian is zeros (TF1 raises ValueError).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.constant([1.0, 2.0])
    ...     h, = tf.hessians(tf.reduce_sum(x ** 3), x)
    ...     print(tf.Session().run(h).tolist())
    [[6.0, 0.0], [0.0, 12.0]]
    """
    from zps.ops import array_ops, functional_ops

    xs = _as_list(xs)
    first = gradients(ys, xs, colocate_gradients_with_ops=colocate_gradients_with_ops,
                      gate_gradients=gate_gradients, aggregation_method=aggregation_method,
                      unconnected_gradients=UnconnectedGradients.ZERO)
    out = []
    for g, x in zip(first, xs):
        flat = array_ops.reshape(array_ops.densify(g), [-1])

        def row(j, flat=flat, x=x):
            h, = gradients(flat[j], x, unconnected_gradients=UnconnectedGradients.ZERO)
            return array_ops.densify(h)
        rows = functional_ops.map_fn(row, array_ops.range(array_ops.size(x)),
                                     dtype=x.dtype.base_dtype)
        shape = array_ops.shape(x)
        hessian = array_ops.reshape(rows, array_ops.concat([shape, shape], 0))
        hessian.set_shape(x.get_shape().concatenate(x.get_shape()))
        out.append(hessian)
    return out


def _gradient_rule(op):
    """``(rule, OpDef whose flags apply or None, override name or None)`` for ``op``: the rule
    registered under the name ``gradient_override_map`` gave it, else its type's."""
    override = op._attrs.get("_gradient_op_type")
    if override is not None:
        override = override.decode() if isinstance(override, bytes) else override
    rule, opdef = registry.gradient_rule(override or op.type)
    return rule, opdef, override


def _op_input_grads(op, out_grads, stop_ops, colocate, array_ops):
    if op in stop_ops or all(g is None for g in out_grads):
        return [None] * len(op._inputs)
    # Gradients of non-float outputs (the ones of an integer y) carry nothing back, as TF1's rules
    # (a cast to int returns None): an op without float outputs passes none on; the float outputs
    # of one with some get zeros (below).
    out_grads = [g if g is None or _backpropagatable(g) else None for g in out_grads]
    if not any(_backpropagatable(t) for t in op._outputs):
        return [None] * len(op._inputs)
    grad_fn, opdef, override = _gradient_rule(op)
    if grad_fn is None:
        return [None] * len(op._inputs)
    if grad_fn is registry.MISSING:
        if not any(_backpropagatable(t) for t in op._inputs):
            return [None] * len(op._inputs)
        if override is not None:
            raise LookupError("No gradient defined for operation '%s' (op type: %s): "
                              "gradient_override_map maps it to '%s', and no gradient is "
                              "registered under that name. Register one with "
                              "@tf.RegisterGradient(%r)." % (op.name, op.type, override, override))
        raise LookupError("No gradient defined for operation '%s' (op type: %s). Register one with "
                          "@tf.RegisterGradient(%r), or wrap its input in tf.stop_gradient if no "
                          "gradient should flow." % (op.name, op.type, op.type))
    graph = op.graph
    if opdef is None or not opdef.sparse_grad_ok:
        out_grads = [array_ops.densify(g) if isinstance(g, IndexedSlices) else g for g in out_grads]
    if len(op._outputs) > 1 and any(g is None for g in out_grads):
        out_grads = [array_ops.zeros_like(t) if g is None and _backpropagatable(t) else g
                     for t, g in zip(op._outputs, out_grads)]
    with graph.name_scope(op.name + "_grad"):
        ctx = graph.colocate_with(op) if colocate else contextlib.nullcontext()
        with ctx:
            in_grads = grad_fn(op, *out_grads)
            in_grads = list(in_grads) if isinstance(in_grads, list | tuple) else [in_grads]
            if len(in_grads) != len(op._inputs):
                raise ValueError("Gradient rule of %s returned %d gradients for %d inputs"
                                 % (override or op.type, len(in_grads), len(op._inputs)))
            if opdef is not None and opdef.broadcast:
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
            if _backpropagatable(t):   # as TF1: gradients flow through float tensors only
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
    return t.dtype.is_floating or t.dtype.is_complex   # TF1's trainable types


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
