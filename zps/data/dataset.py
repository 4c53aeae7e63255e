"""``tf.data.Dataset``: an input pipeline described in the graph (TF1's ``tf.compat.v1.data``).

A Dataset is a node of a pipeline: its kind, the datasets it reads, the tensors it takes and the
static types and shapes of its elements. Nothing runs until an iterator is initialized
(``zps.data.iterator``); then the pipeline is sent as plain data to where the iterator lives
(see zps.ops.dataset_ops).

Functions (``map``, ``filter``, ``flat_map``) are written with tf ops on the element's tensors, as
in TF1: each is called once, on placeholders standing for the components, and what it built is
kept as a private graph (as ``tf.cond`` keeps a branch) that runs for each element. Tensors it
uses from outside (a placeholder, a constant) are inputs of the initializer, read when it runs.

An element's components are Tensors or SparseTensors (``output_classes``); a SparseTensor travels
through the pipeline as its three dense tensors (zps.data.structure) and is rebuilt for each
function and by ``get_next()``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3, 4], [10, 20, 30, 40]))
...     ds = ds.filter(lambda a, b: tf.equal(a % 2, 0)).map(lambda a, b: a + b).batch(2)
...     print(ds.output_types.name, ds.output_shapes)
...     batch = ds.make_one_shot_iterator().get_next()
...     print(tf.Session().run(batch).tolist())
int32 (?,)
[22, 44]
"""

import numpy as np

from zps.data import structure as nest
from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import Operation, Tensor, convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import array_ops, dataset_ops, random_ops
from zps.ops.control_flow_ops import _build_branch, _claimed, _export, _merged_shape
from zps.ops.op_util import make_op
from zps.ops.sparse_ops import SparseTensor, SparseTensorValue

_SAME = object()   # Dataset._derived's default element: the structure of the dataset it reads


class Dataset:
    """A sequence of elements, each a nested structure (tuples, dicts) of tensors.

    Build one with a static method (``from_tensor_slices``, ``range`` ...) or a reader
    (``TextLineDataset``), transform it (``map``, ``batch``, ``shuffle`` ...) and read it with an
    iterator (``make_one_shot_iterator``, ``make_initializable_iterator``).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.data.Dataset.range(5).repeat(2).batch(4).make_one_shot_iterator().get_next()
    ...     with tf.Session() as sess:
    ...         print([sess.run(x).tolist() for _ in range(3)])
    [[0, 1, 2, 3], [4, 0, 1, 2], [3, 4]]
    """

    def __init__(self, kind, name, parents, tensors, element, types, shapes, classes=None,
                 **attrs):
        self._kind = kind
        self._name = name
        self._parents = list(parents)
        self._tensors = list(tensors)
        self._element = element   # the element's structure (leaves are placeholders for it)
        self._types = [_dtypes.as_dtype(t).base_dtype for t in types]
        self._shapes = [as_shape(s) for s in shapes]
        # Each component's class: Tensor, or SparseTensor (carried as three plain tensors, see
        # zps.data.structure); _types and _shapes describe the components, not the plain tensors.
        self._classes = [Tensor] * len(self._types) if classes is None else list(classes)
        self._attrs = attrs
        self._waits = [w for p in self._parents for w in p._waits]
        self._elementwise = False   # a map that batches commute with (see _elementwise)
        self._options = None        # set by with_options (kept in Python, not in the pipeline)
        # Dataset.window's: each component of an element is a window of the input's component,
        # carried as its stacked values and given to functions as a nested dataset (_trace).
        self._window = False

    def _derived(self, kind, name, tensors=(), element=_SAME, types=None, shapes=None,
                 classes=None, fn=None, **attrs):
        """A dataset reading this one (same element structure, types, shapes and classes unless
        given), with the traced function ``fn`` (a _Traced) if any: the tensors it captures come
        first."""
        if self._window and kind not in _WINDOW_KINDS:
            _not_for_windows(kind)
        if fn is not None:
            tensors, attrs["fn"] = fn.captures + list(tensors), fn.attr
        ds = Dataset(kind, name, [self], tensors, self._element if element is _SAME else element,
                     self._types if types is None else types,
                     self._shapes if shapes is None else shapes,
                     self._classes if classes is None else classes, **attrs)
        if fn is not None:
            ds._waits = list(dict.fromkeys(ds._waits + fn.waits))
        ds._window = self._window and _WINDOW_KINDS[kind]
        return ds

    # -- sources -------------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors):
        """A dataset of one element, ``tensors`` (a nested structure of tensors and
        SparseTensors)."""
        element, leaves = _as_element(tensors, "from_tensors")
        return Dataset("tensors", "TensorDataset", [], nest.plain(leaves), element,
                       *nest.specs(leaves))

    @staticmethod
    def from_tensor_slices(tensors):
        """A dataset of the slices of ``tensors`` along their first dimension (each component
        must have the same size there). A SparseTensor (of rank 2 or more, indices in row-major
        order) is sliced into SparseTensors of one rank less.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.from_tensor_slices({"x": [[1, 2], [3, 4]], "y": [5, 6]})
        ...     print(ds.output_shapes)
        {'x': TensorShape([2]), 'y': TensorShape([])}
        """
        element, leaves = _as_element(tensors, "from_tensor_slices")
        types, shapes, classes = nest.specs(leaves)
        for v, s in zip(leaves, shapes):
            _check_batched(v, s)
        # As TF, only dense components' sizes are compared here (a SparseTensor's at run time).
        sizes = {s.as_list()[0] for s, c in zip(shapes, classes)
                 if s.ndims is not None and c is Tensor} - {None}
        if len(sizes) > 1:
            raise ValueError("from_tensor_slices: dimension 0 of the components must be the "
                             "same, got shapes %s" % [str(s) for s in shapes])
        return Dataset("slices", "TensorSliceDataset", [], nest.plain(leaves), element, types,
                       [_unbatched(s) for s in shapes], classes,
                       sparse=nest.sparse_flags(classes))

    @staticmethod
    def range(*args):
        """The int64 numbers of ``range(*args)``: ``(stop)``, ``(start, stop)`` or
        ``(start, stop, step)``, each a Python int or a scalar tensor."""
        if not 1 <= len(args) <= 3:
            raise ValueError("Dataset.range takes 1 to 3 arguments (start, stop, step), got %d"
                             % len(args))
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
        return Dataset("range", "RangeDataset", [], [_int64(v, "range") for v in (start, stop, step)],
                       None, [_dtypes.int64], [TensorShape([])])

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        """The elements a Python generator yields: ``generator(*args)`` is called anew each time
        the dataset is read from its start (each iterator initialization, each epoch of a
        ``repeat``), in the process that built the dataset.

        ``output_types``: the element's structure (tuples, dicts) of DTypes; ``output_shapes``:
        the same structure of shapes (unknown if None); ``args``: a tuple of tensors, given to
        ``generator`` as numpy values. Each yielded element must have that structure; a
        component is converted to its dtype as ``np.asarray`` does (str to UTF-8 bytes) and must
        fit its shape, else the step fails with InvalidArgumentError. An exception the generator
        raises surfaces as py_func's do (ValueError, TypeError: InvalidArgumentError; others:
        UnknownError).

        >>> import zps as tf
        >>> def gen(n):
        ...     for i in range(n):
        ...         yield i, [1.0] * i
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.float32), ([], [None]),
        ...                                         args=(3,))
        ...     i, x = ds.make_one_shot_iterator().get_next()
        ...     with tf.Session() as sess:
        ...         print(x.get_shape(), [sess.run(x).tolist() for _ in range(3)])
        (?,) [[], [1.0], [1.0, 1.0]]
        """
        from zps.data.iterator import _structure
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_types is None:
            raise TypeError("Dataset.from_generator needs `output_types`: the (nested) structure "
                            "of the DTypes of the elements the generator yields")
        output_types, output_shapes, _ = _structure(output_types, output_shapes)
        if args is None:
            args = ()
        elif not isinstance(args, list | tuple):
            raise TypeError("`args` must be a tuple of tensors (the generator's arguments), got "
                            "%r" % (args,))
        tensors = [convert_to_tensor(a) for a in args]
        types, shapes = nest.flatten(output_types), nest.flatten(output_shapes)
        element = nest.map_structure(lambda _: None, output_types)
        element = element if isinstance(output_types, tuple | dict) else None
        token = dataset_ops.register_generator(generator, element, types, shapes,
                                               get_default_graph())
        return Dataset("generator", "GeneratorDataset", [], tensors, element, types, shapes,
                       token=token)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The names of the files matching ``file_pattern`` (a glob, or a list or 1-D tensor of
        them), as string scalars: sorted, or in a new random order each epoch unless
        ``shuffle=False`` (``seed`` as for ``shuffle``). Matching happens when an iterator is
        initialized; no match is an InvalidArgumentError then.

        >>> import os, tempfile, zps as tf
        >>> d = tempfile.mkdtemp()
        >>> for name in ("b.txt", "a.txt", "c.csv"):
        ...     open(os.path.join(d, name), "w").close()
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.list_files(os.path.join(d, "*.txt"), shuffle=False)
        ...     x = ds.make_one_shot_iterator().get_next()
        ...     with tf.Session() as sess:
        ...         print([os.path.basename(sess.run(x)) for _ in range(2)])
        [b'a.txt', b'b.txt']
        """
        patterns = _filenames(file_pattern, "file_pattern")
        ds = Dataset("list_files", "MatchingFiles", [], [patterns], None, [_dtypes.string],
                     [TensorShape([])])
        if shuffle is None or shuffle:
            # A buffer at least as large as the input shuffles it whole, as TF's (whose buffer
            # is the number of files).
            ds = ds.shuffle(np.iinfo(np.int64).max, seed=seed)
        return ds

    @staticmethod
    def zip(datasets):
        """Elements of several datasets side by side: ``datasets`` is a tuple or dict of them
        (nested), and the elements have that structure. Ends with the shortest."""
        flat = nest.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError("Dataset.zip takes a (nested) tuple or dict of Datasets, got %r"
                                % (d,))
        if any(d._window for d in flat):
            _not_for_windows("zip")
        element = nest.pack(datasets, [d.output_types for d in flat])
        return Dataset("zip", "ZipDataset", flat, [], element,
                       [t for d in flat for t in d._types], [s for d in flat for s in d._shapes],
                       [c for d in flat for c in d._classes])

    # -- transformations -----------------------------------------------------------------------
    def concatenate(self, dataset):
        """This dataset's elements, then ``dataset``'s (same structure, types and classes)."""
        if self._window or dataset._window:
            _not_for_windows("concatenate")
        if not nest.same_structure(self.output_types, dataset.output_types) or \
                self._types != dataset._types:
            raise TypeError("Datasets to concatenate must have the same structure and types: %s "
                            "vs %s" % (self.output_types, dataset.output_types))
        if self._classes != dataset._classes:
            raise TypeError("Datasets to concatenate must have the same component classes: %s vs "
                            "%s" % (self.output_classes, dataset.output_classes))
        shapes = [_merged_shape(a, b) for a, b in zip(self._shapes, dataset._shapes)]
        return Dataset("concatenate", "ConcatenateDataset", [self, dataset], [], self._element,
                       self._types, shapes, self._classes)

    def map(self, map_func, num_parallel_calls=None):
        """Elements ``map_func(element)`` (``map_func(*element)`` when the element is a tuple),
        where ``map_func`` is written with tf ops. It may take and return SparseTensors (a
        returned SparseTensorValue becomes one). ``num_parallel_calls`` is accepted; elements
        are mapped in order.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.range(3).map(lambda x: {"x": x, "sq": x * x})
        ...     element = tf.Session().run(ds.make_one_shot_iterator().get_next())
        ...     print({k: int(v) for k, v in element.items()})
        {'x': 0, 'sq': 0}
        """
        fn, (types, shapes, classes), value = _trace(self, map_func, "map")
        value = tuple(value) if isinstance(value, list) else value   # as TF1 1.15
        ds = self._derived("map", "MapDataset", element=value, types=types, shapes=shapes,
                           classes=classes, fn=fn)
        ds._elementwise = fn.elementwise and not self._window   # (a window is no batch row)
        return ds

    def filter(self, predicate):
        """The elements for which ``predicate`` (tf ops, returning a scalar bool) is true."""
        fn, (types, shapes, classes), _ = _trace(self, predicate, "filter")
        if len(types) != 1 or types[0] != _dtypes.bool or shapes[0].ndims not in (None, 0) or \
                classes[0] is not Tensor:
            raise ValueError("`predicate` return type must be convertible to a scalar boolean "
                             "tensor. Was %s." % [(c.__name__, t.name, str(s)) for t, s, c
                                                  in zip(types, shapes, classes)])
        return self._derived("filter", "FilterDataset", fn=fn)

    def flat_map(self, map_func):
        """The elements of the datasets ``map_func(element)`` returns, one after the other."""
        fn, _, (inner, plan) = _trace(self, map_func, "flat_map", returns_dataset=True)
        return self._derived("flat_map", "FlatMapDataset", element=inner._element,
                             types=inner._types, shapes=inner._shapes, classes=inner._classes,
                             fn=fn, dataset=plan)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None):
        """The elements of the datasets ``map_func(element)`` returns, interleaved: ``cycle_length``
        of them are read at once, ``block_length`` (default 1) consecutive elements from each in
        turn, in TF's order. ``cycle_length`` None or ``tf.data.experimental.AUTOTUNE`` means
        the number of CPUs; ``num_parallel_calls`` and ``deterministic`` are accepted (elements
        are made in order).

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.range(1, 4).interleave(
        ...         lambda x: tf.data.Dataset.from_tensors(x).repeat(x), cycle_length=2)
        ...     x = ds.make_one_shot_iterator().get_next()
        ...     with tf.Session() as sess:
        ...         print([int(sess.run(x)) for _ in range(6)])
        [1, 2, 2, 3, 3, 3]
        """
        fn, _, (inner, plan) = _trace(self, map_func, "interleave", returns_dataset=True)
        cycle = _int64(dataset_ops.AUTOTUNE if cycle_length is None else cycle_length,
                       "cycle_length")
        block = _int64(1 if block_length is None else block_length, "block_length")
        return self._derived("interleave", "InterleaveDataset", [cycle, block],
                             element=inner._element, types=inner._types, shapes=inner._shapes,
                             classes=inner._classes, fn=fn, dataset=plan)

    def unbatch(self):
        """Each element split along its first dimension into that many elements (every
        component must have the same size there; a SparseTensor, of rank 2 or more, is split
        into SparseTensors of one rank less).

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.from_tensors(([1, 2, 3], [[4, 5]] * 3)).unbatch()
        ...     x = ds.make_one_shot_iterator().get_next()
        ...     with tf.Session() as sess:
        ...         print(ds.output_shapes, [v.tolist() for v in sess.run(x)])
        (TensorShape([]), TensorShape([2])) [1, [4, 5]]
        """
        for s, c in zip(self._shapes, self._classes):
            if s.ndims == 0 and c is Tensor:
                raise ValueError("Cannot unbatch an input with scalar components.")
            if s.ndims == 0:
                raise ValueError("Unbatching a sparse tensor is only supported for rank >= 1, "
                                 "got a SparseTensor of shape %s" % s)
        sizes = {s[0].value for s, c in zip(self._shapes, self._classes)
                 if c is Tensor and s.ndims} - {None}
        if len(sizes) > 1:
            raise ValueError("`unbatch()` is only supported for datasets of elements whose "
                             "components have a matching leading dimension. Encountered both %s"
                             % " and ".join(str(n) for n in sorted(sizes)))
        return self._derived("unbatch", "UnbatchDataset",
                             shapes=[_unbatched(s) for s in self._shapes],
                             sparse=nest.sparse_flags(self._classes))

    def enumerate(self, start=0):
        """Elements ``(index, element)``, the int64 index counting from ``start``."""
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self))

    def batch(self, batch_size, drop_remainder=False):
        """Consecutive elements stacked into batches of ``batch_size`` (the last one smaller
        unless ``drop_remainder``); the batch dimension is static only with drop_remainder.

        SparseTensors are batched as TF1 does: the batch's dense shape is the batch size, then
        each dimension's largest over its elements (which must have one rank), and each index
        is prefixed with its element's position.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.from_tensor_slices(["a b", "c"]).map(
        ...         lambda s: tf.string_split([s])).batch(2)
        ...     sp = ds.make_one_shot_iterator().get_next()
        ...     value = tf.Session().run(sp)
        ...     print(ds.output_classes.__name__, sp.get_shape(), value.dense_shape.tolist())
        ...     print(value.indices.tolist(), value.values.tolist())
        SparseTensor (?, ?, ?) [2, 1, 2]
        [[0, 0, 0], [0, 0, 1], [1, 0, 0]] [b'a', b'b', b'c']
        """
        return _batched(self, _int64(batch_size, "batch_size"), bool(drop_remainder))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        """Like ``batch``, each component padded to ``padded_shapes`` (a structure like the
        element's of shapes, lists or 1-D int64 tensors; an unknown dimension, None or -1, pads
        to the longest in the batch; default: the elements' static shapes) with
        ``padding_values`` (scalars; default 0, or b"" for strings).

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill([x], x))
        ...     x = ds.padded_batch(2, [None]).make_one_shot_iterator().get_next()
        ...     with tf.Session() as sess:
        ...         print(sess.run(x).tolist(), sess.run(x).tolist())
        [[1, 0], [2, 2]] [[3, 3, 3]]
        """
        if SparseTensor in self._classes:
            raise TypeError("`padded_batch` is only supported for datasets that produce tensor "
                            "elements, but the elements have SparseTensor components: %s. Use "
                            "`batch` for them (it batches SparseTensors of different shapes)"
                            % (self.output_classes,))
        size = _int64(batch_size, "batch_size")
        if padded_shapes is None:
            if any(s.ndims is None for s in self._shapes):
                raise ValueError("You must provide `padded_shapes` argument because component "
                                 "shapes are not all of known rank: %s" % (self.output_shapes,))
            padded = list(self._shapes)
        else:
            try:
                padded = [_padded_shape(s) for s in nest.flatten(
                    nest.pack(self._element, nest.flatten(padded_shapes)))]
            except ValueError:
                raise ValueError("padded_shapes must have the structure of the elements, %s; "
                                 "got %s" % (nest.describe(self.output_types), padded_shapes)
                                 ) from None
        if padding_values is None:
            pads = [b"" if t == _dtypes.string else 0 for t in self._types]
        else:
            pads = nest.flatten(padding_values)
        pads = [_padding_value(v, t) for v, t in zip(pads, self._types)]
        for s, p in zip(self._shapes, padded):
            if p.ndims is None or (s.ndims is not None and s.ndims != p.ndims) or any(
                    a is not None and b is not None and a > b
                    for a, b in zip(s.as_list() if s.ndims else [], p.as_list())):
                raise ValueError("The padded shape %s is not compatible with the corresponding "
                                 "input component shape %s" % (p, s))
        return self._derived("padded_batch", "PaddedBatchDataset", [size] + pads,
                             shapes=[TensorShape([_static_size(size, drop_remainder)])
                                     .concatenate(p) for p in padded],
                             padded_shapes=[p.as_list() for p in padded],
                             drop_remainder=bool(drop_remainder))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        """The elements in random order, drawn from a buffer of ``buffer_size`` (TF's algorithm).

        ``seed`` with the graph's seed (``tf.set_random_seed``) makes the order reproducible, by
        TF1's rules (``tf.get_seed``); each epoch of a ``repeat`` after it is shuffled anew
        unless ``reshuffle_each_iteration=False``.
        """
        seed, seed2 = random_ops.get_seed(seed)
        return self._derived("shuffle", "ShuffleDataset", [_int64(buffer_size, "buffer_size")],
                             seed=seed or 0, seed2=seed2 or 0,
                             reshuffle_each_iteration=reshuffle_each_iteration is not False)

    def repeat(self, count=None):
        """The elements ``count`` times over (forever when None or -1)."""
        return self._derived("repeat", "RepeatDataset", [_int64(-1 if count is None else count,
                                                                "count")])

    def take(self, count):
        """The first ``count`` elements (all when -1)."""
        return self._derived("take", "TakeDataset", [_int64(count, "count")])

    def skip(self, count):
        """The elements after the first ``count`` (none when -1)."""
        return self._derived("skip", "SkipDataset", [_int64(count, "count")])

    def shard(self, num_shards, index):
        """Every ``num_shards``-th element, from the ``index``-th (0-based): the elements whose
        position ``p`` has ``p % num_shards == index``. Each worker of a cluster reads its own
        part of the data with ``shard(num_workers, task_index)``; both may be tensors.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     x = tf.data.Dataset.range(7).shard(3, 1).make_one_shot_iterator().get_next()
        ...     with tf.Session() as sess:
        ...         print([int(sess.run(x)) for _ in range(2)])
        [1, 4]
        """
        return self._derived("shard", "ShardDataset", [_int64(num_shards, "num_shards"),
                                                        _int64(index, "index")])

    def prefetch(self, buffer_size):
        """The same elements (accepted for TF1 programs: elements are made when pulled)."""
        _int64(buffer_size, "buffer_size")
        return self._derived("prefetch", "PrefetchDataset")

    def cache(self, filename=""):
        """The same elements, kept after the first complete pass: in memory (later epochs of a
        ``repeat`` read them from there), or with ``filename`` (a string or string scalar
        tensor) in a file, ``filename + ".zpscache"``, that every later pass reads instead of
        the input, by any iterator, until the file is deleted. A pass cut short leaves no
        cache (see zps.ops.dataset_cache for the format: msgpack, never pickle).

        >>> import os, tempfile, zps as tf
        >>> path = os.path.join(tempfile.mkdtemp(), "cache")
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.range(3).cache(path)
        ...     print([int(x) for x in ds.as_numpy_iterator()], os.path.exists(path + ".zpscache"))
        [0, 1, 2] True
        """
        filename = _filenames(filename, "filename")
        if filename.get_shape().ndims not in (None, 0):
            raise ValueError("Dataset.cache: filename must be a string scalar, got shape %s"
                             % filename.get_shape())
        return self._derived("cache", "CacheDataset", [filename],
                             plain_types=[t.name for t in self._plain_specs()[0]])

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """A dataset of windows: each element has the input element's structure, each component
        a nested Dataset of ``size`` consecutive components (every ``stride``-th), the windows
        starting ``shift`` (default ``size``) elements apart; the last windows are shorter
        unless ``drop_remainder``. Read them with ``flat_map`` or ``interleave``, whose
        function gets one dataset per component (TF's ``WindowDataset``). A window's elements
        must have one shape (they are carried stacked).

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.range(5).window(3, shift=1, drop_remainder=True)
        ...     ds = ds.flat_map(lambda w: w.batch(3))
        ...     print([b.tolist() for b in ds.as_numpy_iterator()])
        [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
        """
        if self._window:
            raise NotImplementedError("window() of a dataset of windows is not supported: "
                                      "flat_map the windows first")
        if SparseTensor in self._classes:
            raise NotImplementedError("window() of SparseTensor components is not supported, got "
                                      "%s" % (self.output_classes,))
        args = [_int64(v, what) for v, what in ((size, "size"), (size if shift is None else shift,
                                                                  "shift"), (stride, "stride"))]
        ds = self._derived("window", "WindowDataset", args,
                           shapes=[TensorShape([None]).concatenate(s) for s in self._shapes],
                           drop_remainder=bool(drop_remainder))
        ds._window = True
        return ds

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a Dataset."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError("`transformation_func` must return a Dataset, got %r" % (result,))
        return result

    def with_options(self, options):
        """The same elements, with ``options`` (a ``tf.data.Options``) merged over this
        dataset's: see zps.data.options (they are kept, and change nothing in zps)."""
        from zps.data.options import Options
        if not isinstance(options, Options):
            raise TypeError("with_options takes a tf.data.Options, got %r" % (options,))
        ds = self._derived("options", "OptionsDataset")
        ds._options = options
        return ds

    def options(self):
        """The ``tf.data.Options`` of this dataset: those of its inputs, merged, then its own."""
        from zps.data.options import Options
        merged = Options()
        for parent in self._parents:
            merged = merged.merge(parent.options())
        return merged if self._options is None else merged.merge(self._options)

    def as_numpy_iterator(self):
        """A Python iterator of the elements as numpy values (``tf.data.NumpyIterator``), read
        in a session of its own: ``list(ds.as_numpy_iterator())``.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     ds = tf.data.Dataset.from_tensor_slices({"a": [1, 2], "b": [b"x", b"y"]})
        ...     print([(int(e["a"]), e["b"]) for e in ds.as_numpy_iterator()])
        [(1, b'x'), (2, b'y')]
        """
        from zps.data.iterator import NumpyIterator
        return NumpyIterator(self)

    def reduce(self, initial_state, reduce_func):
        """The state after folding every element into ``initial_state``: ``reduce_func(state,
        element)`` (tf ops) returns the new state, of the initial state's structure and dtypes
        (a static shape it changes becomes unknown there, as in TF). The whole dataset is read
        each time the result is evaluated, within that step.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     total, count = tf.data.Dataset.range(5).reduce(
        ...         (tf.constant(0, tf.int64), 0), lambda s, x: (s[0] + x, s[1] + 1))
        ...     print([int(v) for v in tf.Session().run([total, count])])
        [10, 5]
        """
        if initial_state is not None and not nest.flatten(initial_state):
            raise ValueError("Dataset.reduce: initial_state %r has no components; the state "
                             "needs at least one tensor (TF: Attr 'Tstate' of 'ReduceDataset' Op "
                             "passed list of length 0 less than minimum 1.)" % (initial_state,))
        fn, state, (types, shapes, classes), _ = _trace_with_state(
            self, initial_state, reduce_func, "reduce")
        plan, tensors, waits = self._plan()
        plain_types, plain_shapes = nest.plain_specs(types, shapes, classes)
        state_tensors = nest.plain(state[1])
        with get_default_graph().control_dependencies(list(dict.fromkeys(waits + fn.waits))):
            out = make_op("ReduceDataset", fn.captures + state_tensors + tensors,
                          name="ReduceDataset", num_outputs=len(plain_types), dataset=plan,
                          fn=fn.attr, num_captures=len(fn.captures),
                          num_state=len(state_tensors), output_types=tuple(plain_types),
                          output_shapes=tuple(plain_shapes))
        return nest.pack(state[0], nest.components(out, shapes, classes))

    def _scan(self, initial_state, scan_func):
        """The elements ``scan_func(state, element)[1]``, the state carried from one element to
        the next (tf.data.experimental.scan)."""
        fn, state, _, (value, types, shapes, classes) = _trace_with_state(
            self, initial_state, scan_func, "scan")
        state_tensors = nest.plain(state[1])
        return self._derived("scan", "ScanDataset", state_tensors, element=value, types=types,
                             shapes=shapes, classes=classes, fn=fn, num_state=len(state_tensors))

    def _ignore_errors(self, log_warning=False):
        """The elements, skipping those whose making failed (tf.data.experimental.ignore_errors)."""
        return self._derived("ignore_errors", "IgnoreErrorsDataset", log_warning=bool(log_warning))

    # -- the element's static structure (TF1's properties) -------------------------------------
    @property
    def element_spec(self):
        """The element's structure with each component's TypeSpec: ``tf.TensorSpec``,
        ``SparseTensorSpec`` (dense shape, values' dtype), or ``DatasetSpec`` for a window.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     print(tf.data.Dataset.from_tensor_slices({"x": [[1.0, 2.0]]}).element_spec)
        {'x': TensorSpec(shape=(2,), dtype=tf.float32, name=None)}
        """
        if self._window:
            return nest.pack(self._element, [
                nest.DatasetSpec(nest.spec(t, s[1:], c)) for t, s, c
                in zip(self._types, self._shapes, self._classes)])
        return nest.pack(self._element, [nest.spec(*v) for v in zip(self._types, self._shapes,
                                                                    self._classes)])

    @property
    def output_types(self):
        """The element's structure with each component's DType (a window's: its DatasetSpec)."""
        return self.element_spec if self._window else nest.pack(self._element, self._types)

    @property
    def output_shapes(self):
        """The element's structure with each component's static TensorShape (a window's: its
        DatasetSpec)."""
        return self.element_spec if self._window else nest.pack(self._element, self._shapes)

    @property
    def output_classes(self):
        """The element's structure with each component's class (``tf.Tensor`` or
        ``tf.SparseTensor``; a window's: its DatasetSpec)."""
        return self.element_spec if self._window else nest.pack(self._element, self._classes)

    def _check_iterable(self):
        if self._window:
            raise TypeError("A dataset of windows (Dataset.window) has nested datasets as "
                            "elements, which an iterator cannot return: read them with "
                            "flat_map, e.g. ds.window(3).flat_map(lambda w: w.batch(3))")

    # -- iterators -----------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        """An iterator that starts at the first element on first use and needs no initializer."""
        from zps.data.iterator import Iterator
        return Iterator._one_shot(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator with an ``initializer`` op, which (re)starts it at the first element;
        placeholders the dataset uses are fed when running it."""
        from zps.data.iterator import Iterator
        self._check_iterable()
        it = Iterator.from_structure(self.output_types, self.output_shapes, shared_name,
                                     self.output_classes)
        it._initializer = it.make_initializer(self)
        return it

    def _plain_specs(self):
        """(dtypes, static shapes) of the plain tensors carrying an element (zps.data.structure)."""
        return nest.plain_specs(self._types, self._shapes, self._classes)

    def _plan(self):
        """(the pipeline as plain data, the tensors it takes, ops to run first) (dataset_ops)."""
        nodes, built, slots = [], {}, {}

        def visit(ds):
            if id(ds) not in built:
                parents = [visit(p) for p in ds._parents]
                inputs = [slots.setdefault(t, len(slots)) for t in ds._tensors]
                nodes.append(dict(ds._attrs, kind=ds._kind, name=ds._name, parents=parents,
                                  inputs=inputs))
                built[id(ds)] = len(nodes) - 1
            return built[id(ds)]
        visit(self)
        return ({"nodes": nodes, "output": len(nodes) - 1}, sorted(slots, key=slots.get),
                list(dict.fromkeys(self._waits)))

    def __repr__(self):
        return "<%s shapes: %s, types: %s>" % (self._name, self.output_shapes, self.output_types)


def _batched(ds, size, drop_remainder):
    """``ds`` batched. A map of ``ds`` whose function is elementwise (``_elementwise``) on
    components of static shapes is applied to batches of its input instead: the same values,
    with one run of its private graph per batch rather than per element."""
    batch = TensorShape([_static_size(size, drop_remainder)])
    if ds._elementwise and all(s.is_fully_defined() for s in ds._parents[0]._shapes) and \
            SparseTensor not in ds._classes + ds._parents[0]._classes:
        source = _batched(ds._parents[0], size, drop_remainder)
        mapped = Dataset("map", "MapDataset", [source], ds._tensors, ds._element, ds._types,
                         [batch.concatenate(s) for s in ds._shapes], **ds._attrs)
        mapped._waits = ds._waits
        mapped._elementwise = True
        return mapped
    return ds._derived("batch", "BatchDataset", [size],
                       shapes=[batch.concatenate(s) for s in ds._shapes],
                       drop_remainder=drop_remainder, sparse=nest.sparse_flags(ds._classes))


# What a dataset of windows (Dataset.window) may be given to: kind -> whether the result is
# still a dataset of windows (the kinds that pass elements through unchanged).
_WINDOW_KINDS = {"repeat": True, "take": True, "skip": True, "shuffle": True, "shard": True,
                 "prefetch": True, "options": True, "cache": True, "filter": True,
                 "ignore_errors": True, "map": False, "flat_map": False, "interleave": False}


def _not_for_windows(what):
    raise TypeError("%s of a dataset of windows (Dataset.window) is not supported in zps: "
                    "turn the windows into tensors first, e.g. "
                    "ds.window(3).flat_map(lambda w: w.batch(3))" % what)


# Ops whose every output element is computed from the same position of their inputs, exactly
# rounded (IEEE): given a batch, they give each element what they give it alone. (exp, log,
# tanh ... are left out: numpy's vectorized loops may round them differently from scalar ones.)
_ELEMENTWISE = frozenset([
    "Identity", "Cast", "Add", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Maximum",
    "Minimum", "SquaredDifference", "Neg", "Square", "Abs", "Sign", "Sqrt", "Reciprocal", "Floor",
    "Ceil", "Round", "IsFinite", "IsNan", "IsInf", "LogicalNot", "LogicalAnd", "LogicalOr",
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
])


def _elementwise(ops, args, outputs):
    """Whether a traced function maps a batch of elements (components stacked) to the batch of
    its results: each op computed from the element is in _ELEMENTWISE, its element inputs have
    one static shape and its other inputs are scalars; ops not computed from the element are
    stateless (a random op would draw once per batch); each output is computed from the element.
    """
    derived = {a: a.get_shape() for a in args}   # tensors computed from the element: shapes
    for op in ops:
        if op._control_inputs:
            return False
        inputs = [t for t in op.inputs if t in derived]
        if not inputs:
            if op.op_def.stateful:
                return False
            continue
        shapes = {tuple(derived[t].as_list()) if derived[t].is_fully_defined() else None
                  for t in inputs}
        if op.type not in _ELEMENTWISE or len(shapes) != 1 or None in shapes or \
                any(t.get_shape().ndims != 0 for t in op.inputs if t not in derived):
            return False
        for t in op.outputs:
            derived[t] = derived[inputs[0]]
    return all(t in derived for t in outputs)


class _Structure:
    """What a function is traced on besides a dataset's element: ``(state, element)`` for
    reduce and scan (the attributes ``_trace`` reads of a Dataset)."""

    def __init__(self, element, types, shapes, classes):
        self._element = element
        self._types = list(types)
        self._shapes = list(shapes)
        self._classes = list(classes)

    def _plain_specs(self):
        return nest.plain_specs(self._types, self._shapes, self._classes)


def _trace_with_state(dataset, initial_state, func, what):
    """Trace ``func(state, element)`` (reduce's, scan's) until the state's static shapes are a
    fixed point, as TF: a shape the function changes is relaxed to what both have in common.
    Returns (_Traced, (the state's structure, its leaves), the state's (types, shapes,
    classes), and for scan (the output's structure, types, shapes, classes))."""
    if dataset._window:
        _not_for_windows(what)
    structure, leaves = _as_element(initial_state, what)
    types, shapes, classes = nest.specs(leaves)
    label = "`scan_func`" if what == "scan" else "`reduce_func`"
    while True:
        inputs = _Structure((structure, dataset._element), types + dataset._types,
                            shapes + dataset._shapes, classes + dataset._classes)
        fn, (out_types, out_shapes, out_classes), value = _trace(inputs, func, what)
        output = None
        if what == "scan":
            if not isinstance(value, tuple | list) or len(value) != 2:
                raise TypeError("Invalid `scan_func`. `scan_func` should return a pair "
                                "consisting of new state and the output value but its return "
                                "type is %r." % (value,))
            value, output = value
            output = tuple(output) if isinstance(output, list) else output
        new = nest.map_structure(lambda _: None, tuple(value) if isinstance(value, list)
                                 else value)
        n = len(types)
        if not nest.same_structure(new, structure) or len(out_types) < n:
            raise TypeError("Invalid %s. The structure of the new state must match the initial "
                            "state. Expected %s, got %s." % (label, nest.describe(structure),
                                                             nest.describe(new)))
        if out_classes[:n] != classes:
            raise TypeError("Invalid %s. The element classes for the new state must match the "
                            "initial state. Expected %s, got %s." % (
                                label, nest.pack(structure, [c.__name__ for c in classes]),
                                nest.pack(structure, [c.__name__ for c in out_classes[:n]])))
        if out_types[:n] != types:
            raise TypeError("Invalid %s. The element types for the new state must match the "
                            "initial state. Expected %s, got %s." % (
                                label, nest.pack(structure, types),
                                nest.pack(structure, out_types[:n])))
        relaxed = [_merged_shape(a, b) for a, b in zip(shapes, out_shapes)]
        if all(a.ndims is None or (b.ndims is not None and a.as_list() == b.as_list())
               for a, b in zip(shapes, relaxed)):
            rest = (output, out_types[n:], out_shapes[n:], out_classes[n:])
            return fn, (structure, leaves), (types, shapes, classes), rest
        shapes = relaxed


class _Traced:
    """A function traced for a dataset: ``attr`` (plain data for dataset_ops._Function),
    ``captures`` (the outer tensors it reads, inputs of the dataset node) and ``waits`` (outer ops
    it has control dependencies on: the initializer runs after them)."""

    def __init__(self, attr, captures, waits, elementwise):
        self.attr = attr
        self.captures = captures
        self.waits = waits
        self.elementwise = elementwise


def _trace(dataset, func, what, returns_dataset=False):
    """Call ``func`` on placeholders for ``dataset``'s element, keeping what it builds as a private
    graph. Returns (_Traced, (dtypes, shapes, classes) of the components it returns, the
    function's value, or (Dataset, its plan))."""
    if not callable(func):
        raise TypeError("Dataset.%s expects a callable, got %r" % (what, func))
    graph = get_default_graph()
    label = "Dataset.%s()" % what
    with graph.name_scope(what.capitalize().replace("_", "") + "Dataset"):
        with graph.control_dependencies(None):
            args = [array_ops.placeholder(t, s, name="arg%d" % i)
                    for i, (t, s) in enumerate(zip(*dataset._plain_specs()))]
        if getattr(dataset, "_window", False):   # a window's components: nested datasets
            element = nest.pack(dataset._element, [Dataset.from_tensor_slices(a) for a in args])
        else:
            element = nest.pack(dataset._element,
                                nest.components(args, dataset._shapes, dataset._classes))
        result, returned = [], []

        def call():
            value = func(*element) if type(element) is tuple else func(element)
            result.append(value)
            if returns_dataset:
                if not isinstance(value, Dataset):
                    raise TypeError("The function passed to %s must return a Dataset, got %r"
                                    % (label, value))
                plan, tensors, _ = value._plan()
                result[-1] = (value, plan)
                return tensors
            if value is None:
                raise ValueError("The function passed to %s returned None: it must return a "
                                 "tensor or a nested structure (tuple, dict) of tensors" % label)
            returned.extend(_returned(v, label) for v in nest.flatten(
                tuple(value) if isinstance(value, list) else value))
            return nest.plain(returned)
        ops, outputs, _ = _build_branch(graph, call, label)
    branch, reads, waits, variables = _export(ops, outputs)
    if variables:
        raise ValueError("The function passed to %s updates the variable %s: a dataset function "
                         "cannot change variables" % (label, variables[0].name))
    _claimed(graph).update(ops + [a.op for a in args])
    for op in ops + [a.op for a in args]:
        graph.prevent_fetching(op)
    position = {a: i for i, a in enumerate(args)}
    captures = [t for t in reads if t not in position]
    branch["inputs"] = [[k, t.name] for k, t in enumerate(reads)]
    attr = {"branch": branch, "Tin": [t.dtype.base_dtype for t in reads],
            "Tout": [t.dtype.base_dtype for t in outputs],
            "args": [["arg", position[t]] if t in position else ["input", captures.index(t)]
                     for t in reads]}
    traced = _Traced(attr, captures, waits, _elementwise(ops, args, outputs))
    return traced, nest.specs(returned), result[0]


def _returned(value, label):
    """A component a dataset function returned: a Tensor, or a SparseTensor."""
    if isinstance(value, SparseTensor):
        return value
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if isinstance(value, Operation):
        raise TypeError("The function passed to %s returned the Operation %s: return tensors "
                        "(an Operation has no value)" % (label, value.name))
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError("The function passed to %s returned %r, which is not a tensor and cannot "
                        "be converted to one (%s)" % (label, value, e)) from None


def _as_element(tensors, what):
    if tensors is None:
        raise TypeError("Dataset.%s() needs tensors, got None" % what)
    leaves = []
    for v in nest.flatten(tensors):
        if nest.is_sparse(v):
            leaves.append(SparseTensor.from_value(v))
            continue
        try:
            leaves.append(convert_to_tensor(v))
        except (TypeError, ValueError) as e:
            raise TypeError("Dataset.%s(): %r is not a tensor and cannot be converted to one (%s)"
                            % (what, v, e)) from None
    element = nest.map_structure(lambda _: None, tensors)
    return (element if nest.is_nested(tensors) else None), leaves


def _padded_shape(value):
    """A padded shape given as a shape, a list or a 1-D integer tensor of known value (its -1s
    unknown dimensions, as TF's)."""
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is None or np.ndim(known) != 1:
            raise TypeError("padded_shapes: %s must be a 1-D tensor whose value is known when the "
                            "graph is built (a constant), or a shape or list" % value.name)
        value = [None if d < 0 else int(d) for d in np.asarray(known).tolist()]
    return as_shape(value)


def _padding_value(value, dtype):
    """A padding value: a scalar of the component's type (as TF, a tensor of another type is a
    TypeError; Python and numpy numbers are converted)."""
    if isinstance(value, Tensor) and value.dtype.base_dtype != dtype:
        raise TypeError("Invalid `padding_values`. `padding_values` values type %s does not match "
                        "type %s of the corresponding input component." % (value.dtype, dtype))
    value = convert_to_tensor(value, dtype=dtype)
    if value.get_shape().ndims not in (None, 0):
        raise ValueError("Invalid `padding_values`. `padding_values` values should be scalars, "
                         "but got %s." % (value.get_shape(),))
    return value


def _check_batched(value, shape):
    """``value`` (a component) has a first dimension to slice, as from_tensor_slices needs."""
    if shape.ndims != 0:
        return
    if isinstance(value, SparseTensor):
        raise ValueError("Unbatching a sparse tensor is only supported for rank >= 1. Obtained "
                         "input: %s" % (value,))
    raise ValueError("from_tensor_slices: %s is a scalar; every component needs a first "
                     "dimension to slice" % value.name)


def _unbatched(shape):
    """The static shape of an element's slice along its first dimension."""
    return shape[1:] if shape.ndims is not None else unknown_shape()


def _int64(value, what):
    t = convert_to_tensor(value, dtype=_dtypes.int64) if not isinstance(value, Tensor) else value
    if t.dtype.base_dtype not in (_dtypes.int64, _dtypes.int32):
        raise TypeError("%s must be an integer, got a %s tensor" % (what, t.dtype.name))
    if t.get_shape().ndims not in (None, 0):
        raise ValueError("%s must be a scalar, got shape %s" % (what, t.get_shape()))
    return t


def _static_size(size, drop_remainder):
    value = constant_value(size) if drop_remainder else None
    return None if value is None else int(np.asarray(value))


def _compression_type(compression_type):
    if compression_type not in (None, "", "GZIP", "ZLIB"):
        raise ValueError("Unsupported compression_type %r: use None or '' (none), 'GZIP' or 'ZLIB'"
                         % (compression_type,))
    return compression_type or ""


class TextLineDataset(Dataset):
    """The lines of text files (without their line ending), as string scalars.

    ``filenames``: a string or a list (or 1-D string tensor) of paths, read in order;
    ``compression_type``: "", "GZIP" or "ZLIB".
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None):
        super().__init__("text_line", "TextLineDataset", [], [_filenames(filenames)], None,
                         [_dtypes.string], [TensorShape([])],
                         compression_type=_compression_type(compression_type))


class TFRecordDataset(Dataset):
    """The records of TFRecord files, as string scalars (TF's framing, checksums verified).

    ``filenames``: a string or a list (or 1-D string tensor) of paths, read in order;
    ``compression_type``: "", "GZIP" or "ZLIB".
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        super().__init__("tfrecord", "TFRecordDataset", [], [_filenames(filenames)], None,
                         [_dtypes.string], [TensorShape([])],
                         compression_type=_compression_type(compression_type))


class FixedLengthRecordDataset(Dataset):
    """The records of ``record_bytes`` bytes of binary files (CIFAR-10's, for instance), as
    string scalars, after each file's ``header_bytes`` and before its ``footer_bytes``.

    ``filenames``: a string or a list (or 1-D string tensor) of paths, read in order;
    ``compression_type``: "", "GZIP" or "ZLIB" (the sizes count the uncompressed bytes). A
    file whose body is not a whole number of records is an InvalidArgumentError (compressed:
    a DataLossError after its last whole record), as in TF.

    >>> import os, tempfile, zps as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"HDR" + b"aabbcc" + b"F")
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.FixedLengthRecordDataset(path, 2, header_bytes=3, footer_bytes=1)
    ...     print(list(ds.as_numpy_iterator()))
    [b'aa', b'bb', b'cc']
    """

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None, name=None):
        sizes = [_int64(v or 0, what) for v, what in ((record_bytes, "record_bytes"),
                                                      (header_bytes, "header_bytes"),
                                                      (footer_bytes, "footer_bytes"))]
        super().__init__("fixed_length", "FixedLengthRecordDataset", [],
                         [_filenames(filenames)] + sizes, None, [_dtypes.string],
                         [TensorShape([])], compression_type=_compression_type(compression_type))


def _filenames(filenames, what="filenames"):
    t = convert_to_tensor(filenames, dtype=_dtypes.string) if not isinstance(filenames, Tensor) \
        else filenames
    if t.dtype.base_dtype != _dtypes.string or t.get_shape().ndims not in (None, 0, 1):
        raise TypeError("%s must be a string scalar or vector, got %s %s"
                        % (what, t.dtype.name, t.get_shape()))
    return t


__all__ = ["Dataset", "FixedLengthRecordDataset", "TextLineDataset", "TFRecordDataset"]
