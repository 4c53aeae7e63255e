"""Higher-order functions over the first dimension: ``map_fn``, ``foldl``, ``foldr``, ``scan``.

Each is a ``tf.while_loop`` (zps.ops.control_flow_ops) over the elements ``elems[i]``, so ``fn``
is written with tf ops, runs once per element in order, and gradients flow to ``elems``, the
initializer and the tensors ``fn`` reads from outside. Results are accumulated by concatenation
(TF1 uses TensorArrays), which copies the accumulator once per element: meant for the short
sequences these functions see in TF1 programs (RNN steps, per-example ops), not for 10^5 steps.
"""

from zps.framework import dtypes as _dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, math_ops
from zps.ops.control_flow_ops import _flatten, cond, while_loop


def _elements(elems, what):
    flat, pack = _flatten(elems)
    if not flat:
        raise ValueError("%s: elems must be a tensor or a (nested) list/tuple/dict of tensors"
                         % what)
    flat = [convert_to_tensor(e) for e in flat]
    for e in flat:
        if e.get_shape().ndims == 0:
            raise ValueError("%s: elems must have at least one dimension to iterate over; %s is "
                             "a scalar" % (what, e.name))
    return flat, pack


def _length(flat):
    first = flat[0].get_shape().as_list()[0] if flat[0].get_shape().ndims else None
    return first, array_ops.shape(flat[0])[0]


def _append(acc, value, first):
    """``acc`` with ``value`` appended along a new first dimension (``value`` alone when
    ``first``: the accumulator's initial value only carries the dtype)."""
    row = array_ops.expand_dims(value, 0)
    return cond(first, lambda: row, lambda: array_ops.concat([acc, row], 0))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None):
    """``[fn(elems[i]) for i in range(n)]`` stacked: the results of ``fn`` on each element.

    ``elems`` is a tensor or a (nested) structure of tensors of the same first dimension; ``fn``
    gets one element (that structure) and returns a structure given by ``dtype`` (default: that
    of ``elems``). ``elems`` must not be empty.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0]))))
    [1. 4. 9.]
    """
    flat, pack = _elements(elems, "map_fn")
    if dtype is None:
        out_pack, out_dtypes = pack, [e.dtype.base_dtype for e in flat]
    else:
        out_flat, out_pack = _flatten(dtype)
        out_dtypes = [_dtypes.as_dtype(d) for d in out_flat]
    graph = get_default_graph()
    with graph.name_scope(name or "map"):
        static_n, n = _length(flat)
        shapes = []

        def body(i, *accs):
            results = _flatten(fn(pack([array_ops.gather(e, i) for e in flat])))[0]
            if len(results) != len(out_dtypes):
                raise ValueError("map_fn: fn returned %d tensors, dtype says %d"
                                 % (len(results), len(out_dtypes)))
            results = [convert_to_tensor(r) for r in results]
            for r, dt in zip(results, out_dtypes):
                if r.dtype.base_dtype != dt:
                    raise TypeError("map_fn: fn returned %s where dtype says %s: pass dtype= "
                                    "with fn's output types" % (r.dtype.name, dt.name))
            shapes[:] = [r.get_shape() for r in results]
            first = math_ops.equal(i, 0)
            return [i + 1] + [_append(a, r, first) for a, r in zip(accs, results)]
        init = [array_ops.zeros([0], dt) for dt in out_dtypes]
        outs = while_loop(lambda i, *a: i < n, body, [0] + init,
                          shape_invariants=[TensorShape([])] + [TensorShape(None)] * len(init),
                          parallel_iterations=parallel_iterations, back_prop=back_prop,
                          return_same_structure=True)[1:]
        for o, s in zip(outs, shapes):
            if infer_shape and s.ndims is not None:
                o.set_shape([static_n] + s.as_list())
        return out_pack(list(outs))


def _fold(fn, elems, initializer, reverse, what, name):
    flat, pack = _elements(elems, what)
    graph = get_default_graph()
    with graph.name_scope(name):
        _, n = _length(flat)

        def element(i):
            return pack([array_ops.gather(e, i) for e in flat])
        if initializer is None:   # the first element (the last, reversed) starts the fold
            start = n - 1 if reverse else 0
            acc, acc_pack = _flatten(element(start))
            begin = start - 1 if reverse else 1
        else:
            acc, acc_pack = _flatten(initializer)
            acc = [convert_to_tensor(a) for a in acc]
            begin = n - 1 if reverse else 0

        def body(i, *carry):
            out = _flatten(fn(acc_pack(list(carry)), element(i)))[0]
            return [i - 1 if reverse else i + 1] + [convert_to_tensor(o) for o in out]
        done = (lambda i, *a: i >= 0) if reverse else (lambda i, *a: i < n)
        return acc_pack(list(while_loop(done, body, [begin] + acc,
                                        return_same_structure=True)[1:]))


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """``a = fn(a, elems[i])`` for i = 0 .. n-1, starting from ``initializer`` (default:
    ``elems[0]``, then from i = 1); returns the final ``a``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.foldl(lambda a, x: a * 10 + x, tf.constant([1, 2, 3]))))
    123
    """
    return _fold(fn, elems, initializer, False, "foldl", name or "foldl")


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """``foldl`` from the last element to the first."""
    return _fold(fn, elems, initializer, True, "foldr", name or "foldr")


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """The successive values of ``a = fn(a, elems[i])`` stacked (``foldl`` keeping every step);
    without ``initializer``, ``elems[0]`` is the first value and is part of the result.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3, 4]))))
    [ 1  3  6 10]
    """
    flat, pack = _elements(elems, "scan")
    graph = get_default_graph()
    with graph.name_scope(name or "scan"):
        static_n, n = _length(flat)

        def element(i):
            return pack([array_ops.gather(e, i) for e in flat])
        if initializer is None:
            start = n - 1 if reverse else 0
            acc, acc_pack = _flatten(element(start))
            begin = start - 1 if reverse else 1
            stacked = [array_ops.expand_dims(a, 0) for a in acc]
        else:
            acc, acc_pack = _flatten(initializer)
            acc = [convert_to_tensor(a) for a in acc]
            begin = n - 1 if reverse else 0
            stacked = [array_ops.expand_dims(a, 0)[:0] for a in acc]

        def body(i, *state):
            carry, seen = list(state[:len(acc)]), list(state[len(acc):])
            out = [convert_to_tensor(o) for o in _flatten(fn(acc_pack(carry), element(i)))[0]]
            rows = [array_ops.expand_dims(o, 0) for o in out]
            seen = [array_ops.concat([r, s] if reverse else [s, r], 0)
                    for s, r in zip(seen, rows)]
            return [i - 1 if reverse else i + 1] + out + seen
        done = (lambda i, *a: i >= 0) if reverse else (lambda i, *a: i < n)
        invariants = ([TensorShape([])] + [a.get_shape() for a in acc]
                      + [TensorShape([None] + a.get_shape().as_list())
                         if a.get_shape().ndims is not None else TensorShape(None) for a in acc])
        result = list(while_loop(done, body, [begin] + acc + stacked,
                                 shape_invariants=invariants,
                                 return_same_structure=True)[1 + len(acc):])
        for r, a in zip(result, acc):
            if infer_shape and a.get_shape().ndims is not None:
                r.set_shape([static_n] + a.get_shape().as_list())
        return acc_pack(result)


__all__ = ["map_fn", "foldl", "foldr", "scan"]
