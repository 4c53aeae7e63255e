"""The ops of ``tf.data``: an iterator resource, and the ops that fill it and read from it.

A dataset is plain data, as a graph is: its pipeline (``zps.data.Dataset._plan``) is a list of
nodes, each naming its kind (``"slices"``, ``"map"``, ``"batch"``, ...), the nodes it reads and the
tensors it takes (indices into the op's inputs); a function (``map``'s, ``filter``'s) is a traced
private graph (see ``zps.data.dataset``). ``MakeIterator`` takes the pipeline as an attr and its
tensors as inputs, so placeholders a dataset captured are fed when its initializer runs, and the
op ships to another task like any other (no pickles: a function is a graph, not Python).

Where the iterator lives, each node becomes a Python iterable of elements (``_KINDS``); an element
is a tuple of ndarrays, one per component. ``IteratorGetNext`` pulls the next one; functions run
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

import itertools
import threading

import numpy as np

from zps import python_io
from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops.control_flow_ops import _private_graph

END_OF_SEQUENCE = "End of sequence"
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
        if exactly:
            return [s.as_list() for s in self.output_shapes] == [s.as_list() for s in output_shapes]
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
    values = _inputs(node, env)
    for k, v in enumerate(values):
        if np.ndim(v) == 0:
            raise errors.InvalidArgumentError(
                None, None, "%s: component %d is a scalar; from_tensor_slices needs tensors with "
                "a first dimension to slice" % (node["name"], k))
    sizes = {len(v) for v in values}
    if len(sizes) != 1:
        raise errors.InvalidArgumentError(
            None, None, "%s: all components must have the same size in dimension 0, got sizes %s"
            % (node["name"], [len(v) for v in values]))
    n = sizes.pop()

    def iterate():
        return (tuple(v[i, ...] for v in values) for i in range(n))   # [i, ...]: a 0-d array
    return iterate


@_kind("range")
def _range(node, parents, env):
    start, stop, step = (_scalar(v, w, node) for v, w in zip(_inputs(node, env),
                                                             ("start", "stop", "step")))
    if step == 0:
        raise errors.InvalidArgumentError(None, None, "step of %s must not be 0" % node["name"])
    return lambda: ((np.array(i, np.int64),) for i in range(start, stop, step))


@_kind("zip")
def _zip(node, parents, env):
    return lambda: (sum(parts, ()) for parts in zip(*(p() for p in parents)))


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
        for element in source():
            yield from _instantiate(node["dataset"], fn(element), env.step)()
    return iterate


def _batches(source, size, drop_remainder):
    """Lists of up to ``size`` consecutive elements (exactly ``size`` with drop_remainder)."""
    elements = source()
    while True:
        chunk = list(itertools.islice(elements, size))
        if not chunk or (drop_remainder and len(chunk) < size):
            return
        yield chunk


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

    def stack(chunk):
        out = []
        for k, parts in enumerate(zip(*chunk)):
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
        return tuple(out)
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
        elements = source()
        buffer = list(itertools.islice(elements, size))
        draws = iter(())
        for element in elements:   # TF's algorithm: a random element out, the next one in
            u = next(draws, None)
            if u is None:
                draws = iter(rng.random(_SHUFFLE_DRAWS).tolist())
                u = next(draws)
            k = int(u * len(buffer))
            yield buffer[k]
            buffer[k] = element
        rng.shuffle(buffer)
        yield from buffer
    return iterate


@_kind("repeat")
def _repeat(node, parents, env):
    (source,) = parents
    count = _scalar(_inputs(node, env)[0], "count", node)

    def iterate():
        epoch = 0
        while count < 0 or epoch < count:
            empty = True
            for element in source():
                empty = False
                yield element
            if empty:   # an empty dataset repeated forever is empty, not a busy loop
                return
            epoch += 1
    return iterate


@_kind("take")
def _take(node, parents, env):
    (source,) = parents
    count = _scalar(_inputs(node, env)[0], "count", node)
    return lambda: itertools.islice(source(), None if count < 0 else count)


@_kind("skip")
def _skip(node, parents, env):
    (source,) = parents
    count = _scalar(_inputs(node, env)[0], "count", node)

    def iterate():
        elements = source()
        if count >= 0:
            next(itertools.islice(elements, count, count), None)   # drops ``count`` elements
            yield from elements
        else:
            for _ in elements:
                pass
    return iterate


@_kind("prefetch")
def _prefetch(node, parents, env):
    return parents[0]   # elements are made when pulled: nothing to overlap in one process


@_kind("cache")
def _cache(node, parents, env):
    (source,) = parents
    cached = []

    def iterate():
        if cached:
            return iter(cached[0])
        return record()

    def record():
        elements = []
        for element in source():
            elements.append(element)
            yield element
        if not cached:   # only a complete pass is kept, as TF's in-memory cache
            cached.append(elements)
    return iterate


def _filenames(node, env):
    names = np.asarray(_inputs(node, env)[0])
    if names.ndim > 1:
        raise errors.InvalidArgumentError(None, None, "filenames of %s must be a scalar or a "
                                          "vector, got shape %s" % (node["name"], list(names.shape)))
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names.reshape(-1).tolist()]


@_kind("text_line")
def _text_line(node, parents, env):
    paths, compression = _filenames(node, env), python_io._compression(node["compression_type"])

    def iterate():
        for path in paths:
            stream, raw = python_io._open_read(path, compression)
            try:
                for line in stream:
                    line = line[:-1] if line.endswith(b"\n") else line
                    yield (_string(line[:-1] if line.endswith(b"\r") else line),)
            finally:
                stream.close()
                raw.close()
    return iterate


@_kind("tfrecord")
def _tfrecord(node, parents, env):
    paths = _filenames(node, env)

    def iterate():
        for path in paths:
            for record in python_io.tfrecord_records(path, node["compression_type"]):
                yield (_string(record),)
    return iterate


def _string(data):
    out = np.empty((), dtype=object)
    out[()] = data
    return out
