"""The ops of ``tf.data``: an iterator resource, and the ops that fill it and read from it.

A dataset is plain data, as a graph is: its pipeline (``zps.data.Dataset._plan``) is a list of
nodes, each naming its kind (``"slices"``, ``"map"``, ``"batch"``, ...), the nodes it reads and the
tensors it takes (indices into the op's inputs); a function (``map``'s, ``filter``'s) is a traced
private graph (see ``zps.data.dataset``). ``MakeIterator`` takes the pipeline as an attr and its
tensors as inputs, so placeholders a dataset captured are fed when its initializer runs, and the
op ships to another task like any other (no pickles: a function is a graph, not Python).

Where the iterator lives, each node becomes a Python iterable of elements (``_KINDS``); an element
is a tuple of ndarrays, one per plain tensor: a SparseTensor component is three of them
(indices, values, dense_shape; see ``zps.data.structure``), and the nodes that look into
components (``slices``, ``batch``, ``unbatch``) have a ``sparse`` attr saying which components
are sparse. ``IteratorGetNext`` pulls the next one; functions run
as private plans within the step that pulls (``StepContext.run_subgraph``), so they see the task's
resources and the step's cancellation. The end of the data is ``OutOfRangeError("End of
sequence")``, which ``MonitoredSession`` and ``Coordinator`` treat as a clean stop.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     it = tf.data.Dataset.range(3).map(lambda x: x * 10).make_one_shot_iterator()
...     x = it.get_next()
...     with tf.Session() as sess:
...         print([int(sess.run(x)) for _ in range(3)])
[0, 10, 20]
"""

import glob
import itertools
import logging
import os
import threading
import uuid
import weakref

import numpy as np

from zps import python_io
from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import dataset_cache
from zps.ops.control_flow_ops import _private_graph
from zps.ops.script_ops import _ERROR_CLASSES
from zps.ops.sparse_ops import SparseTensorValue
from zps.ops.string_ops import _csv_fields, _decode_csv_kernel

log = logging.getLogger("zps.data")

END_OF_SEQUENCE = "End of sequence"
AUTOTUNE = -1   # tf.data.experimental.AUTOTUNE: interleave's cycle_length becomes the CPU count
_SHUFFLE_DRAWS = 1024   # uniform numbers a shuffle draws at a time (one call per element is slow)


# -- the iterator resource -----------------------------------------------------------------------
class _Iterator:
    """The state of one iterator of a task: the elements left of the dataset it was made from."""

    def __init__(self, name, output_types, output_shapes):
        self.name = name
        self.output_types = tuple(output_types)
        self.output_shapes = tuple(output_shapes)
        self.lock = threading.Lock()
        self._elements = None   # a Python iterator of element tuples, once initialized
        self._step = [None]     # the StepContext pulling now (functions run within it)

    def make(self, plan, inputs, once=False):
        """(Re)start from the first element of the dataset ``plan`` with tensor values ``inputs``
        (``once``: unless it was made already)."""
        with self.lock:
            if once and self._elements is not None:
                return
            self._step = [None]
            self._elements = iter(_instantiate(plan, inputs, self._step)())

    def get_next(self, ctx):
        with self.lock:
            if self._elements is None:
                raise errors.FailedPreconditionError(
                    None, None, "GetNext() failed because the iterator %s has not been "
                    "initialized. Ensure that you have run the initializer operation for this "
                    "iterator before getting the next element." % self.name)
            self._step[0] = ctx
            try:
                return next(self._elements)
            except StopIteration:
                raise errors.OutOfRangeError(None, None, END_OF_SEQUENCE) from None
            finally:
                self._step[0] = None

    def matches(self, output_types, output_shapes, exactly=True):
        """Whether its elements have these types and shapes (``exactly``, else compatible)."""
        if self.output_types != tuple(output_types):
            return False
        if exactly:   # as_tuple: None for an unknown rank (py_func's outputs, from_structure)
            return [s.as_tuple() for s in self.output_shapes] == \
                [s.as_tuple() for s in output_shapes]
        return all(a.is_compatible_with(b) for a, b in zip(self.output_shapes, output_shapes))


def _iterator(ctx, shared_name, output_types, output_shapes, op_name):
    name = shared_name or op_name
    it = ctx.resources.lookup_or_create(
        "iterator", name, lambda: _Iterator(name, output_types, output_shapes))
    if not it.matches(output_types, output_shapes):
        raise errors.InvalidArgumentError(
            None, None, "Shared iterator '%s' already exists with output types %s and shapes %s, "
            "not %s and %s: give it another shared_name" % (
                name, [t.name for t in it.output_types], list(it.output_shapes),
                [t.name for t in output_types], list(output_shapes)))
    return it


def _handle_dtype(op):
    return _dtypes.string


def _handle_shape(op):
    return TensorShape([])


register_op("Iterator", dtype=_handle_dtype, shape=_handle_shape, kernel=_iterator,
            stateful=True, ref_output=True, needs_op_name=True, grad=None)


def _make_iterator(ctx, iterator, *inputs, dataset):
    iterator.make(dataset, inputs)


register_op("MakeIterator", kernel=_make_iterator, num_outputs=0, stateful=True, ref_inputs=(0,),
            grad=None)


def _one_shot_iterator(ctx, *inputs, dataset, output_types, output_shapes, op_name):
    it = _iterator(ctx, "", output_types, output_shapes, op_name)
    it.make(dataset, inputs, once=True)   # later steps read on; at the end, it stays there (TF1)
    return it


register_op("OneShotIterator", dtype=_handle_dtype, shape=_handle_shape,
            kernel=_one_shot_iterator, stateful=True, ref_output=True, needs_op_name=True,
            grad=None)


def _to_string_handle(ctx, iterator):
    return _string(iterator.name.encode())


register_op("IteratorToStringHandle", dtype=_handle_dtype, shape=_handle_shape,
            kernel=_to_string_handle, stateful=True, ref_inputs=(0,), grad=None)


def _from_string_handle(ctx, handle, output_types, output_shapes):
    name = handle.item().decode() if isinstance(handle.item(), bytes) else str(handle.item())
    it = ctx.resources.resources("iterator").get(("iterator", name))
    if it is None:
        raise errors.NotFoundError(
            None, None, "No iterator %r on this task: a string handle names an iterator of the "
            "task (local session) that ran its string_handle(); place the iterator made from it "
            "on that task" % name)
    if not it.matches(output_types, output_shapes, exactly=False):
        raise errors.InvalidArgumentError(
            None, None, "The iterator %s has output types %s and shapes %s, which do not match "
            "the types %s and shapes %s given to from_string_handle" % (
                name, [t.name for t in it.output_types], list(it.output_shapes),
                [t.name for t in output_types], list(output_shapes)))
    return it


register_op("IteratorFromStringHandle", dtype=_handle_dtype, shape=_handle_shape,
            kernel=_from_string_handle, stateful=True, ref_output=True, grad=None)


def _get_next(ctx, iterator, output_types, output_shapes):
    element = iterator.get_next(ctx)
    return element[0] if len(element) == 1 else list(element)


register_op("IteratorGetNext", dtype=lambda op: list(op._attrs["output_types"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_get_next, stateful=True,
            ref_inputs=(0,), grad=None)


# -- ops that read a whole dataset within one step -----------------------------------------------
def _elements(ctx, plan, inputs):
    """A fresh Python iterator of the elements of the dataset ``plan``, pulled within this step."""
    return iter(_instantiate(plan, inputs, [ctx])())


def _outputs(element):
    return element[0] if len(element) == 1 else list(element)


def _reduce_dataset(ctx, *inputs, dataset, fn, num_captures, num_state, output_types,
                    output_shapes):
    """TF's ReduceDataset: the state after ``fn(state + element)`` for each element in turn (the
    op's inputs: ``fn``'s captured tensors, the initial state, the pipeline's tensors)."""
    state_end = num_captures + num_state
    fold = _Function(fn, {"inputs": list(range(num_captures))}, _Env(inputs[:num_captures], [ctx]))
    state = tuple(_array(v, t) for v, t in zip(inputs[num_captures:state_end], output_types))
    for element in _elements(ctx, dataset, inputs[state_end:]):
        state = fold(state + element)
    return _outputs(state)


register_op("ReduceDataset", dtype=lambda op: list(op._attrs["output_types"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_reduce_dataset,
            stateful=True, grad=None)


def _to_single_element(ctx, *inputs, dataset, output_types, output_shapes):
    """TF's DatasetToSingleElement: the dataset's one element (read anew at each run)."""
    elements = _elements(ctx, dataset, inputs)
    element = next(elements, None)
    if element is None:
        raise errors.InvalidArgumentError(None, None, "Dataset was empty.")
    if next(elements, None) is not None:
        raise errors.InvalidArgumentError(None, None, "Dataset had more than one element.")
    return _outputs(element)


register_op("DatasetToSingleElement", dtype=lambda op: list(op._attrs["output_types"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_to_single_element,
            stateful=True, grad=None)


# -- the pipeline where the iterator lives -------------------------------------------------------
# A node's builder gets the node, the iterables of the nodes it reads and the op's input values
# (``env``); it returns the node's iterable: a function returning a fresh Python iterator of
# elements (``repeat`` and ``shuffle`` start their input again for each epoch).
_KINDS = {}


class _Env:
    __slots__ = ("inputs", "step")

    def __init__(self, inputs, step):
        self.inputs = inputs
        self.step = step   # [the StepContext pulling now]


def _kind(name):
    def register(builder):
        _KINDS[name] = builder
        return builder
    return register


_END = object()   # never returned by a step: the sentinel of ``_resumable``


def _resumable(step):
    """An iterator whose next element is ``step()`` (``StopIteration`` ends it). Unlike a
    generator, it lives on after an error from its input (its state is in ``step``'s closure),
    as TF's iterators do: the next pull reads on, so ``ignore_errors`` can skip a failed element.
    Python's two-argument ``iter`` (written in C: no Python call of its own per element)."""
    return iter(step, _END)


def _instantiate(plan, inputs, step):
    """The iterable of the dataset ``plan`` (see the module doc) with tensor values ``inputs``."""
    env = _Env(inputs, step)
    built = []
    for node in plan["nodes"]:
        built.append(_KINDS[node["kind"]](node, [built[k] for k in node["parents"]], env))
    return built[plan["output"]]


def _inputs(node, env):
    return [env.inputs[k] for k in node["inputs"]]


def _scalar(value, what, node):
    value = np.asarray(value)
    if value.ndim != 0:
        raise errors.InvalidArgumentError(None, None, "%s of %s must be a scalar, got shape %s"
                                          % (what, node["name"], list(value.shape)))
    return int(value)


def _array(value, dtype):
    """``value`` (a kernel's result: an ndarray or a numpy scalar) as an ndarray of ``dtype``."""
    if type(value) is np.ndarray:
        return value
    if dtype is _dtypes.string:
        return _string(value)
    return np.asarray(value, dtype=dtype.as_numpy_dtype)


@_kind("tensors")
def _from_tensors(node, parents, env):
    element = tuple(_inputs(node, env))
    return lambda: iter((element,))


@_kind("slices")
def _from_slices(node, parents, env):
    values = _grouped(_inputs(node, env), node["sparse"])
    for k, v in enumerate(values):
        if not isinstance(v, tuple) and np.ndim(v) == 0:
            raise errors.InvalidArgumentError(
                None, None, "%s: component %d is a scalar; from_tensor_slices needs tensors with "
                "a first dimension to slice" % (node["name"], k))
    rows = [_sparse_rows(v, node) if isinstance(v, tuple) else v for v in values]
    sizes = [len(v) for v in rows]
    if len(set(sizes)) != 1:
        raise errors.InvalidArgumentError(
            None, None, "%s: all components must have the same size in dimension 0, got sizes %s"
            % (node["name"], sizes))

    row = _row(rows)
    return lambda: map(row, range(sizes[0]))


@_kind("range")
def _range(node, parents, env):
    start, stop, step = (_scalar(v, w, node) for v, w in zip(_inputs(node, env),
                                                             ("start", "stop", "step")))
    if step == 0:
        raise errors.InvalidArgumentError(None, None, "step of %s must not be 0" % node["name"])
    return lambda: ((np.array(i, np.int64),) for i in range(start, stop, step))


@_kind("zip")
def _zip(node, parents, env):
    def iterate():
        inputs = [p() for p in parents]

        def step():
            # Every input is pulled even after one failed, keeping them in step (as TF's zip).
            parts, error = [], None
            for elements in inputs:
                try:
                    parts.append(next(elements))
                except errors.OpError as e:
                    error = error or e
            if error is not None:
                raise error
            return sum(parts, ())
        return _resumable(step)
    return iterate


@_kind("concatenate")
def _concatenate(node, parents, env):
    first, second = parents
    return lambda: itertools.chain(first(), second())


class _Function:
    """A traced function of a node: called with an element, runs its private graph in the step
    that pulls the element and returns its outputs as ndarrays."""

    def __init__(self, fn, node, env):
        self.feeds, self.fetches = _private_graph(fn["branch"], fn["Tin"])
        self.args = [(src == "arg", k if src == "arg" else env.inputs[node["inputs"][k]])
                     for src, k in fn["args"]]
        self.types = fn["Tout"]
        self.step = env.step

    def __call__(self, element):
        values = [element[k] if is_arg else k for is_arg, k in self.args]
        out = self.step[0].run_subgraph(self.feeds, self.fetches, values)
        return tuple(_array(v, t) for v, t in zip(out, self.types))


@_kind("map")
def _map(node, parents, env):
    (source,), fn = parents, _Function(node["fn"], node, env)
    return lambda: map(fn, source())


@_kind("scan")
def _scan(node, parents, env):
    """TF's ScanDataset: ``fn(state + element)`` gives the new state, then the element out; each
    pass over the input starts again from the initial state (the node's last inputs)."""
    (source,), fn, n = parents, _Function(node["fn"], node, env), node["num_state"]
    initial = tuple(_inputs(node, env)[len(node["inputs"]) - n:])

    def iterate():
        elements, state = source(), [initial]

        def step():
            out = fn(state[0] + next(elements))
            state[0] = out[:n]
            return out[n:]
        return _resumable(step)
    return iterate


@_kind("filter")
def _filter(node, parents, env):
    (source,), fn = parents, _Function(node["fn"], node, env)

    def keep(element):
        (pred,) = fn(element)
        if pred.shape != ():
            raise errors.InvalidArgumentError(
                None, None, "The predicate of %s must return a scalar bool, got shape %s"
                % (node["name"], list(pred.shape)))
        return bool(pred)
    return lambda: filter(keep, source())


@_kind("flat_map")
def _flat_map(node, parents, env):
    (source,), fn = parents, _Function(node["fn"], node, env)

    def iterate():
        elements, inner = source(), None

        def step():
            nonlocal inner
            while True:
                if inner is None:
                    inner = _inner(node, fn, next(elements), env)
                element = next(inner, None)
                if element is not None:
                    return element
                inner = None
        return _resumable(step)
    return iterate


def _inner(node, fn, element, env):
    """The iterator of the dataset a flat_map's (interleave's) function returns for ``element``."""
    return iter(_instantiate(node["dataset"], fn(element), env.step)())


@_kind("interleave")
def _interleave(node, parents, env):
    """TF's InterleaveDataset: ``cycle_length`` input elements' datasets open at once, read
    ``block_length`` elements at a time in turn; an exhausted one takes the cycle's turn and its
    slot is filled from the next input element when the turn comes back."""
    (source,), fn = parents, _Function(node["fn"], node, env)
    cycle, block = (_scalar(v, w, node) for v, w in zip(_inputs(node, env)[-2:],
                                                         ("cycle_length", "block_length")))
    cycle = _cpu_count() if cycle == AUTOTUNE else cycle
    for value, what in ((cycle, "cycle_length"), (block, "block_length")):
        if value <= 0:
            raise errors.InvalidArgumentError(None, None, "%s must be greater than zero (%s, got "
                                              "%d)" % (what, node["name"], value))

    def iterate():
        elements, slots = source(), [None] * cycle
        index = in_block = is_open = 0
        end_of_input = False

        def advance():
            nonlocal index, in_block
            index, in_block = (index + 1) % cycle, 0

        def step():
            nonlocal in_block, is_open, end_of_input
            while not end_of_input or is_open:
                if slots[index] is not None:
                    element = next(slots[index], None)
                    if element is not None:
                        in_block += 1
                        if in_block == block:
                            advance()
                        return element
                    slots[index] = None
                    is_open -= 1
                    advance()
                elif not end_of_input:
                    args = next(elements, None)
                    if args is None:
                        end_of_input = True
                    else:
                        slots[index] = _inner(node, fn, args, env)
                        is_open += 1
                else:
                    advance()
            raise StopIteration
        return _resumable(step)
    return iterate


def _cpu_count():
    """The CPUs this process may run on (TF's port::MaxParallelism)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


# -- SparseTensor components ---------------------------------------------------------------------
def _grouped(element, sparse):
    """An element's components (``sparse``: the node's flags, one per component): ndarrays, and
    (indices, values, dense_shape) tuples for the sparse ones."""
    plain = iter(element)
    return [(next(plain), next(plain), next(plain)) if s else next(plain) for s in sparse]


def _ungrouped(components):
    """The element (a tuple of ndarrays) of these components."""
    return tuple(x for c in components for x in (c if isinstance(c, tuple) else (c,)))


def _row(parts):
    """``f(i)``: the element made of row ``i`` of ``parts`` (ndarrays, and lists of a sparse
    component's rows); without sparse components, no regrouping per element. ``v[i, ...]``: a
    0-d array for a vector."""
    if not any(isinstance(v, list) for v in parts):
        return lambda i: tuple(v[i, ...] for v in parts)
    return lambda i: _ungrouped([v[i] if isinstance(v, list) else v[i, ...] for v in parts])


def _sparse_rows(sparse, node):
    """The slices of a SparseTensor ``(indices, values, dense_shape)`` along its first dimension,
    as TF's SerializeManySparse makes them: its rank must be 2 or more, its indices in bounds and
    in row-major order."""
    indices, values, dense_shape = sparse
    rank = len(dense_shape)
    if rank < 2:
        raise errors.InvalidArgumentError(None, None, "Rank of input SparseTensor should be > 1, "
                                          "but saw rank: %d (%s)" % (rank, node["name"]))
    if indices.ndim != 2 or indices.shape[1] != rank or len(values) != len(indices):
        raise errors.InvalidArgumentError(
            None, None, "%s: a SparseTensor of dense_shape %s has indices of shape %s and values "
            "of shape %s" % (node["name"], dense_shape.tolist(), list(indices.shape),
                             list(values.shape)))
    _check_sparse_indices(indices, dense_shape)
    bounds = np.searchsorted(indices[:, 0], np.arange(dense_shape[0] + 1))
    rest = dense_shape[1:]
    return [(indices[a:b, 1:], values[a:b], rest) for a, b in zip(bounds[:-1], bounds[1:])]


def _check_sparse_indices(indices, dense_shape):
    """TF's SparseTensor::IndicesValid: each index in bounds, each after the one before it in
    row-major order (InvalidArgumentError naming the first that is not)."""
    out = (indices < 0) | (indices >= dense_shape)
    later = np.zeros(len(indices), bool)   # whether each index comes after the one before
    later[0:1] = True
    if len(indices) > 1:
        diff = indices[1:] - indices[:-1]
        first = np.argmax(diff != 0, axis=1)   # each row's first differing dimension
        later[1:] = diff[np.arange(len(diff)), first] > 0
    bad = np.flatnonzero(out.any(axis=1) | ~later)
    if not bad.size:
        return
    n = int(bad[0])
    index = "indices[%d] = [%s]" % (n, ",".join(str(i) for i in indices[n].tolist()))
    if out[n].any():
        problem = "is out of bounds: need 0 <= index < [%s]" % ",".join(
            str(d) for d in dense_shape.tolist())
    elif (indices[n] == indices[n - 1]).all():
        problem = "is repeated"
    else:
        problem = ("is out of order. Many sparse ops require sorted indices.\n    Use "
                   "`tf.sparse.reorder` to create a correctly ordered copy.\n\n")
    raise errors.InvalidArgumentError(None, None, "%s %s" % (index, problem))


def _batched_sparse(parts, k, node):
    """SparseTensors ``(indices, values, dense_shape)`` as one of a rank more, as TF1 batches
    them: the dense shape is the batch size, then each dimension's largest; each index is
    prefixed with its element's position."""
    ranks = [len(d) for _, _, d in parts]
    for i, rank in enumerate(ranks):
        if rank != ranks[0]:
            raise errors.InvalidArgumentError(
                None, None, "Inconsistent shape across SparseTensors: rank prior to "
                "SparseTensor[%d] was: %d but rank of SparseTensor[%d] is: %d (component %d of %s)"
                % (i, ranks[0], i, rank, k, node["name"]))
    counts = [len(ix) for ix, _, _ in parts]
    position = np.repeat(np.arange(len(parts), dtype=np.int64), counts)[:, None]
    indices = np.concatenate([position, np.concatenate([ix for ix, _, _ in parts])], axis=1)
    dense_shape = np.concatenate([[len(parts)], np.max([d for _, _, d in parts], axis=0)])
    return (indices, np.concatenate([v for _, v, _ in parts]), dense_shape.astype(np.int64))


def _batches(source, size, drop_remainder):
    """Lists of up to ``size`` consecutive elements (exactly ``size`` with drop_remainder). An
    error from the input drops the batch it was filling, as TF's."""
    elements = source()

    def step():
        chunk = list(itertools.islice(elements, size))
        if not chunk or (drop_remainder and len(chunk) < size):
            raise StopIteration
        return chunk
    return _resumable(step)


def _batch_size(node, env):
    size = _scalar(_inputs(node, env)[0], "batch_size", node)
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, "batch_size of %s must be greater than "
                                          "zero, got %d" % (node["name"], size))
    return size


def _stack(parts):
    """np.stack of equally shaped arrays; np.array is ~10x faster for numbers (but would nest
    0-d object arrays instead of stacking them)."""
    if parts[0].dtype == object:
        return np.stack(parts)
    return np.array(parts, dtype=parts[0].dtype)


@_kind("batch")
def _batch(node, parents, env):
    (source,), size = parents, _batch_size(node, env)

    sparse = node["sparse"]
    regroup = any(sparse)   # else the components are the element's tensors as they are

    def stack(chunk):
        out = []
        columns = zip(*(_grouped(e, sparse) for e in chunk)) if regroup else zip(*chunk)
        for k, parts in enumerate(columns):
            if regroup and sparse[k]:
                out.append(_batched_sparse(parts, k, node))
                continue
            try:
                out.append(_stack(parts))
            except ValueError:
                first = parts[0].shape
                i = next(i for i, p in enumerate(parts) if p.shape != first)
                raise errors.InvalidArgumentError(
                    None, None, "Cannot batch tensors with different shapes in component %d. "
                    "First element had shape %s and element %d had shape %s (%s; use "
                    "padded_batch for elements of different shapes)"
                    % (k, list(first), i, list(parts[i].shape), node["name"])) from None
        return _ungrouped(out) if regroup else tuple(out)
    return lambda: map(stack, _batches(source, size, node["drop_remainder"]))


@_kind("padded_batch")
def _padded_batch(node, parents, env):
    (source,), size = parents, _batch_size(node, env)
    pads = _inputs(node, env)[1:]

    def pad(chunk):
        out = []
        for k, (parts, padded, value) in enumerate(zip(zip(*chunk), node["padded_shapes"], pads)):
            longest = np.max([p.shape for p in parts], axis=0) if parts[0].ndim else ()
            shape = [int(m) if d is None else d for d, m in zip(padded, longest)]
            batch = np.full([len(parts)] + shape, value, dtype=parts[0].dtype)
            for i, p in enumerate(parts):
                if any(a > b for a, b in zip(p.shape, shape)):
                    raise errors.InvalidArgumentError(
                        None, None, "Attempted to pad to a smaller size than the input element: "
                        "component %d of %s has shape %s, padded shape is %s"
                        % (k, node["name"], list(p.shape), shape))
                batch[(i,) + tuple(slice(0, d) for d in p.shape)] = p
            out.append(batch)
        return tuple(out)
    return lambda: map(pad, _batches(source, size, node["drop_remainder"]))


@_kind("unbatch")
def _unbatch(node, parents, env):
    (source,) = parents

    def rows(element):
        components = _grouped(element, node["sparse"])
        if any(not isinstance(v, tuple) and v.ndim == 0 for v in components):
            raise errors.InvalidArgumentError(
                None, None, "Input element must have a non-scalar value in each component (%s)."
                % node["name"])
        components = [_sparse_rows(v, node) if isinstance(v, tuple) else v for v in components]
        sizes = [len(v) for v in components]
        if any(n != sizes[0] for n in sizes):
            k = next(k for k, n in enumerate(sizes) if n != sizes[0])
            raise errors.InvalidArgumentError(
                None, None, "Input element must have the same batch size in each component. "
                "Component 0 had size %d but component %d had size, %d (%s)."
                % (sizes[0], k, sizes[k], node["name"]))
        return map(_row(components), range(sizes[0]))

    def iterate():
        elements, batch = source(), iter(())

        def step():
            nonlocal batch
            while True:
                element = next(batch, None)
                if element is not None:
                    return element
                batch = rows(next(elements))
        return _resumable(step)
    return iterate


@_kind("window")
def _window(node, parents, env):
    """TF's WindowDataset: windows of ``size`` elements (every ``stride``-th) starting ``shift``
    apart, each component's values stacked (zps.data.Dataset.window gives them to functions as
    nested datasets); the shorter last windows dropped with ``drop_remainder``."""
    (source,) = parents
    size, shift, stride = (_scalar(v, what, node) for v, what in
                           zip(_inputs(node, env), ("size", "shift", "stride")))
    for value, what in ((size, "size"), (shift, "shift"), (stride, "stride")):
        if value <= 0:
            raise errors.InvalidArgumentError(None, None, "Window %s must be greater than zero."
                                              % what)
    span = (size - 1) * stride + 1   # the input elements one window covers

    def stacked(window):
        parts = list(zip(*window))
        shapes = [{v.shape for v in part} for part in parts]
        if any(len(s) > 1 for s in shapes):
            raise errors.InvalidArgumentError(
                None, None, "%s: the elements of a window must have one shape (zps carries a "
                "window stacked), got shapes %s" % (node["name"], [sorted(s) for s in shapes]))
        return tuple(_stack(part) for part in parts)

    def iterate():
        elements, buffer, ended = source(), [], False

        def step():
            nonlocal buffer, ended
            while not ended and len(buffer) < span:
                element = next(elements, None)
                if element is None:
                    ended = True
                else:
                    buffer.append(element)
            window = buffer[::stride][:size]
            if not window or (node["drop_remainder"] and len(window) < size):
                raise StopIteration
            skip, buffer = shift - len(buffer), buffer[shift:]
            for _ in range(skip if not ended else 0):
                if next(elements, None) is None:
                    ended = True
                    break
            return stacked(window)
        return _resumable(step)
    return iterate


@_kind("ignore_errors")
def _ignore_errors(node, parents, env):
    """The input's elements, skipping those that raise an error (a cancelled step still stops)."""
    (source,) = parents

    def iterate():
        elements = source()

        def step():
            while True:
                try:
                    return next(elements)
                except errors.CancelledError:
                    raise
                except errors.OpError as e:
                    if node["log_warning"]:
                        log.warning("%s: ignoring error: %s", node["name"], e.message)
        return _resumable(step)
    return iterate


@_kind("shuffle")
def _shuffle(node, parents, env):
    (source,) = parents
    size = _scalar(_inputs(node, env)[0], "buffer_size", node)
    if size <= 0:
        raise errors.InvalidArgumentError(None, None, "buffer_size of %s must be greater than "
                                          "zero, got %d" % (node["name"], size))
    seed, seed2 = node["seed"], node["seed2"]
    seeds = np.random.Generator(np.random.PCG64([seed, seed2] if seed or seed2 else None))
    fixed = int(seeds.integers(2 ** 63))

    def iterate():
        # Each epoch its own order (from the dataset's seeds), unless reshuffling is off.
        rng = np.random.Generator(np.random.PCG64(
            int(seeds.integers(2 ** 63)) if node["reshuffle_each_iteration"] else fixed))
        elements, buffer, draws = source(), [], iter(())
        filled = ended = False

        def end():
            nonlocal ended
            ended = True
            rng.shuffle(buffer)
            buffer.reverse()   # popped from the end: the shuffled order

        def step():
            nonlocal draws, filled
            while not filled:
                element = next(elements, None)
                if element is None:
                    filled = True
                    end()
                    break
                buffer.append(element)
                filled = len(buffer) == size
            if not ended:
                element = next(elements, None)
                if element is not None:   # TF's algorithm: a random element out, the next in
                    u = next(draws, None)
                    if u is None:
                        draws = iter(rng.random(_SHUFFLE_DRAWS).tolist())
                        u = next(draws)
                    k = int(u * len(buffer))
                    out, buffer[k] = buffer[k], element
                    return out
                end()
            if not buffer:
                raise StopIteration
            return buffer.pop()
        return _resumable(step)
    return iterate


@_kind("repeat")
def _repeat(node, parents, env):
    (source,) = parents
    count = _scalar(_inputs(node, env)[0], "count", node)

    def iterate():
        epoch, elements, empty = 0, None, True

        def step():
            nonlocal epoch, elements, empty
            while count < 0 or epoch < count:
                if elements is None:
                    elements, empty = source(), True
                element = next(elements, None)
                if element is not None:
                    empty = False
                    return element
                if empty:   # an empty dataset repeated forever is empty, not a busy loop
                    break
                elements, epoch = None, epoch + 1
            raise StopIteration
        return _resumable(step)
    return iterate


@_kind("take")
def _take(node, parents, env):
    (source,) = parents
    count = _scalar(_inputs(node, env)[0], "count", node)

    def iterate():   # not itertools.islice: it drops its input at an error
        elements, taken = source(), 0

        def step():
            nonlocal taken
            if 0 <= count <= taken:
                raise StopIteration
            element = next(elements)
            taken += 1
            return element
        return _resumable(step)
    return iterate


@_kind("skip")
def _skip(node, parents, env):
    (source,) = parents
    count = _scalar(_inputs(node, env)[0], "count", node)

    def iterate():
        elements, left = source(), count

        def step():
            nonlocal left
            if count < 0:
                for _ in elements:
                    pass
            while left > 0:   # an element that fails is not counted, as in TF
                next(elements)
                left -= 1
            return next(elements)
        return _resumable(step)
    return iterate


@_kind("shard")
def _shard(node, parents, env):
    """Every ``num_shards``-th element, from the ``index``-th: TF's ShardDataset."""
    (source,) = parents
    num_shards, index = (_scalar(v, what, node) for v, what in
                         zip(_inputs(node, env), ("num_shards", "index")))
    if num_shards <= 0:
        raise errors.InvalidArgumentError(
            None, None, "Number of shards must be greater than zero (got %d) in %s"
            % (num_shards, node["name"]))
    if not 0 <= index < num_shards:
        raise errors.InvalidArgumentError(
            None, None, "Index must be between 0 and %d (currently index = %d) in %s"
            % (num_shards - 1, index, node["name"]))

    def iterate():   # not itertools.islice: it drops its input at an error (see _take)
        elements, position = source(), [0]

        def step():
            while True:
                element = next(elements)
                position[0] += 1
                if (position[0] - 1) % num_shards == index:
                    return element
        return _resumable(step)
    return iterate


@_kind("prefetch")
def _prefetch(node, parents, env):
    return parents[0]   # elements are made when pulled: nothing to overlap in one process


@_kind("options")
def _options(node, parents, env):
    return parents[0]   # tf.data.Options are kept by the Dataset in Python and change nothing here


@_kind("cache")
def _cache(node, parents, env):
    """TF's CacheDataset: the input's elements, kept after the first complete pass (a partial
    pass keeps nothing) in memory, or with a filename in a file (zps.ops.dataset_cache) that
    every later pass reads, by any iterator, in any process, until it is deleted."""
    (source,) = parents
    filename = np.asarray(_inputs(node, env)[0]).reshape(-1)
    filename = filename[0].decode() if filename.size else ""
    cached = []

    def iterate():
        if not filename and cached:
            return iter(cached[0])
        if filename and os.path.exists(dataset_cache.cache_path(filename)):
            return dataset_cache.read(filename, node["plain_types"])
        elements, kept = source(), []

        def step():
            if filename and not kept:   # the temp file is made at the first pull
                kept.append(dataset_cache.Writer(filename, node["plain_types"]))
            element = next(elements, None)
            if element is None:
                if filename:
                    kept[0].commit()
                elif not cached:
                    cached.append(kept)
                raise StopIteration
            (kept[0].write if filename else kept.append)(element)
            return element
        return _resumable(step)
    return iterate


@_kind("list_files")
def _list_files(node, parents, env):
    """The files matching the patterns, sorted (as TF's MatchingFiles); none is an error."""
    patterns = _filenames(node, env)
    names = sorted(name for p in patterns for name in glob.glob(p))
    if not names:
        raise errors.InvalidArgumentError(None, None, "No files matched pattern: %s"
                                          % ", ".join(patterns))
    return lambda: ((_string(os.fsencode(n)),) for n in names)


def _filenames(node, env):
    names = np.asarray(_inputs(node, env)[0])
    if names.ndim > 1:
        raise errors.InvalidArgumentError(None, None, "filenames of %s must be a scalar or a "
                                          "vector, got shape %s" % (node["name"], list(names.shape)))
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names.reshape(-1).tolist()]


def _lines(path, compression):
    """The lines of a text file, without their line ending (``\\n`` or ``\\r\\n``)."""
    stream, raw = python_io._open_read(path, compression)
    try:
        for line in stream:
            line = line[:-1] if line.endswith(b"\n") else line
            yield line[:-1] if line.endswith(b"\r") else line
    finally:
        stream.close()
        raw.close()


@_kind("text_line")
def _text_line(node, parents, env):
    paths, compression = _filenames(node, env), python_io._compression(node["compression_type"])
    return lambda: ((_string(line),) for path in paths for line in _lines(path, compression))


@_kind("csv")
def _csv(node, parents, env):
    """TF's CsvDataset: each line (after the header) parsed by DecodeCSV's kernel; an error
    names the file and line."""
    paths, compression = _filenames(node, env), python_io._compression(node["compression_type"])
    defaults = _inputs(node, env)[1:]
    options = {k: node[k] for k in ("field_delim", "use_quote_delim", "na_value", "select_cols")}
    exclude = node.get("exclude_cols")

    def iterate():   # resumable: ignore_errors skips a bad record and reads on
        records = ((path, number, record) for path in paths
                   for number, record in _csv_records(path, compression, node)
                   if number > 1 or not node["header"])

        def step():
            path, number, record = next(records)
            try:
                if exclude:
                    options["select_cols"] = _kept_columns(record, exclude, len(defaults), node)
                out = _decode_csv_kernel(None, _string(record), *defaults, **options)
            except errors.InvalidArgumentError as e:
                raise errors.InvalidArgumentError(None, None, "%s (%s, line %d: %r)" % (
                    e.message, path, number, record)) from None
            return out if isinstance(out, tuple) else (out,)
        return _resumable(step)
    return iterate


def _csv_records(path, compression, node):
    """(line number, record) of a CSV file: with quotes on, a record whose quotes are not
    closed at the end of its line (an odd count) goes on over the next line (RFC 4180)."""
    pending, start = None, 0
    for number, line in enumerate(_lines(path, compression), 1):
        if pending is not None:
            line, number = pending + b"\n" + line, start
        if node["use_quote_delim"] and line.count(b'"') % 2:
            pending, start = line, number
            continue
        pending = None
        yield number, line
    if pending is not None:
        yield start, pending   # its open quote: DecodeCSV's error, naming the line


def _kept_columns(record, exclude, count, node):
    """The columns of ``record`` not in ``exclude`` (TF2's CsvDataset exclude_cols), which must
    be as many as the defaults."""
    fields = _csv_fields(record, node["field_delim"].encode(), node["use_quote_delim"], 0)
    excluded = set(exclude)
    kept = [c for c in range(len(fields)) if c not in excluded]
    if len(kept) != count:
        raise errors.InvalidArgumentError(None, None, "Expect %d fields but have %s in record"
                                          % (count, len(kept) if len(kept) < count else "more"))
    return tuple(kept)


@_kind("tfrecord")
def _tfrecord(node, parents, env):
    paths = _filenames(node, env)

    def iterate():
        for path in paths:
            for record in python_io.tfrecord_records(path, node["compression_type"]):
                yield (_string(record),)
    return iterate


@_kind("fixed_length")
def _fixed_length(node, parents, env):
    """The records of ``record_bytes`` between each file's header and footer (TF's
    FixedLengthRecordDataset): a body that is not a whole number of records fails before the
    first record of an uncompressed file, and at its end for a compressed one (as in TF)."""
    paths, compression = _filenames(node, env), python_io._compression(node["compression_type"])
    record, header, footer = (_scalar(v, what, node) for v, what in zip(
        _inputs(node, env)[1:], ("record_bytes", "header_bytes", "footer_bytes")))
    if record <= 0 or header < 0 or footer < 0:
        raise errors.InvalidArgumentError(
            None, None, "%s: record_bytes must be positive and header_bytes, footer_bytes not "
            "negative, got %d, %d, %d" % (node["name"], record, header, footer))

    def body_error(path, body, cls=errors.InvalidArgumentError):
        return cls(None, None, "Excluding the header (%d bytes) and footer (%d bytes), input file "
                   "\"%s\" has body length %d bytes, which is not an exact multiple of the record "
                   "length (%d bytes)." % (header, footer, path, body, record))

    def records(path):
        stream, raw = python_io._open_read(path, compression)
        try:
            if compression == python_io.TFRecordCompressionType.NONE:
                body = os.fstat(raw.fileno()).st_size - header - footer
                if body < 0 or body % record:
                    raise body_error(path, body)
            if len(stream.read(header)) < header:
                raise errors.DataLossError(None, None, "input file \"%s\" is shorter than its "
                                           "header (%d bytes)" % (path, header))
            buf, body, want = b"", 0, record + footer
            while True:
                while len(buf) < want:
                    chunk = stream.read(max(want - len(buf), 1 << 16))
                    if not chunk:
                        break
                    buf += chunk
                if len(buf) < want:
                    break
                n = (len(buf) - footer) // record * record
                for i in range(0, n, record):
                    yield (_string(buf[i:i + record]),)
                buf, body = buf[n:], body + n
            if len(buf) != footer:
                raise body_error(path, body + len(buf) - footer, errors.DataLossError)
        finally:
            stream.close()
            raw.close()
    return lambda: (element for path in paths for element in records(path))


def _string(data):
    out = np.empty((), dtype=object)
    out[()] = data
    return out


# -- Dataset.from_generator: a Python generator, run where the iterator lives ---------------------
# As a py_func's function, the generator stays in the process that built the dataset (in a
# registry, for as long as its graph lives): the pipeline names it by a token.
_generators = {}   # token -> _Generator


class _Generator:
    """A ``from_generator`` callable with its element's structure, dtypes and static shapes."""

    def __init__(self, generator, structure, types, shapes):
        self.generator = generator
        self.structure = structure
        self.types = types
        self.shapes = shapes
        self.name = getattr(generator, "__name__", type(generator).__name__)

    def call(self, fn, *args):
        """``fn(*args)``, the generator's exceptions as TF1's OpErrors (as py_func maps them)."""
        try:
            return fn(*args)
        except (errors.OpError, StopIteration):
            raise
        except Exception as e:  # noqa: BLE001 - mapped to TF1's OpError classes
            cls = next((c for t, c in _ERROR_CLASSES if isinstance(e, t)), errors.UnknownError)
            raise cls(None, None, "from_generator: `generator` %s raised %s: %s"
                      % (self.name, type(e).__name__, e)) from e

    def element(self, value):
        """A yielded ``value`` as the element's tuple of arrays, checked as TF's from_generator."""
        flat = _flatten_up_to(self.structure, value)
        if flat is None:
            raise errors.InvalidArgumentError(
                None, None, "`generator` yielded an element that did not match the expected "
                "structure. The expected structure was %s, but the yielded element was %s."
                % (_describe(self.structure, self.types), value))
        out = []
        for v, dtype, shape in zip(flat, self.types, self.shapes):
            array = _generated_array(v, dtype)
            if array is None:
                raise errors.InvalidArgumentError(
                    None, None, "`generator` yielded an element that could not be converted to "
                    "the expected type. The expected type was %s, but the yielded element was %s."
                    % (dtype.name, v))
            if not shape.is_compatible_with(TensorShape(array.shape)):
                raise errors.InvalidArgumentError(
                    None, None, "`generator` yielded an element of shape %s where an element of "
                    "shape %s was expected." % (array.shape, shape))
            out.append(array)
        return tuple(out)


def register_generator(generator, structure, types, shapes, graph):
    """Keep ``generator`` for the datasets of ``graph``; returns the token naming it."""
    token = "generator_%s" % uuid.uuid4().hex
    _generators[token] = _Generator(generator, structure, types, shapes)
    weakref.finalize(graph, _generators.pop, token, None)
    return token


def _flatten_up_to(structure, value):
    """The leaves of ``value`` down to ``structure``'s (None unless it nests the same tuples
    and dicts, as TF's nest.flatten_up_to: a list is no tuple; a SparseTensorValue is no
    tensor, as from_generator's components are dense)."""
    if isinstance(value, SparseTensorValue):
        return None
    if isinstance(structure, dict):
        if not isinstance(value, dict) or sorted(value) != sorted(structure):
            return None
        parts = [_flatten_up_to(structure[k], value[k]) for k in sorted(structure)]
    elif isinstance(structure, tuple):
        if not isinstance(value, tuple) or len(value) != len(structure):
            return None
        parts = [_flatten_up_to(s, v) for s, v in zip(structure, value)]
    else:
        return [value]
    return None if any(p is None for p in parts) else [x for p in parts for x in p]


def _describe(structure, types):
    """The expected structure with its dtypes, as TF's message shows it."""
    it = iter(types)

    def fill(s):
        if isinstance(s, dict):
            return {k: fill(s[k]) for k in sorted(s)}
        if isinstance(s, tuple):
            return tuple(fill(v) for v in s)
        return next(it)
    return fill(structure)


def _generated_array(value, dtype):
    """``value`` as an ndarray of ``dtype`` (TF1's conversion: numpy's, str encoded as UTF-8),
    or None if it does not convert."""
    if dtype is _dtypes.string:
        array = np.asarray(value, dtype=object)
        items = [v.encode() if isinstance(v, str) else v for v in array.ravel().tolist()]
        if not all(isinstance(v, bytes) for v in items):
            return None
        out = np.empty(array.shape, dtype=object)
        out.ravel()[:] = items
        return out
    try:
        return np.asarray(value, dtype=dtype.as_numpy_dtype)
    except (TypeError, ValueError):
        return None


def _generator_arg(value):
    """An input value as the generator gets it: a numpy scalar, bytes, or an ndarray."""
    return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value


@_kind("generator")
def _generator(node, parents, env):
    entry = _generators.get(node["token"])
    if entry is None:
        raise errors.NotFoundError(
            None, None, "The Python generator of %s is not in process %d: a dataset from "
            "Dataset.from_generator runs in the process that built it; place its iterator "
            "there" % (node["name"], os.getpid()))
    args = [_generator_arg(v) for v in _inputs(node, env)]

    def iterate():
        values = None

        def step():   # the generator is called at the first pull, as TF's
            nonlocal values
            if values is None:
                values = entry.call(lambda: iter(entry.generator(*args)))
            return entry.element(entry.call(next, values))
        return _resumable(step)
    return iterate
