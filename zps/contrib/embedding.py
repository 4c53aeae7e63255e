"""Growable hash embedding tables: ``get_hash_embedding`` and ``embedding_lookup``.

A ``HashEmbedding`` maps arbitrary int64 ids (no vocabulary, any id in the 64-bit range) to
rows of ``embedding_dim`` floats. Rows are created on first lookup with the table's initializer,
computed from ``(seed, table name, id)`` alone, so every worker sees the same new row, and an
evicted id comes back as it started (``insert_missing=False`` looks up without creating rows:
for evaluation or serving). The table is split into
``num_shards`` shards by a hash of the id; each shard is one resource placed like a variable (with
``tf.train.replica_device_setter`` the shards go round-robin over the ps tasks), and its lookups
and updates run there. A lookup deduplicates the ids on the worker and sends each shard only its
unique ids; only those rows come back, and the gradient rows of repeated ids are summed on the
worker, so one row per unique id goes out.

Optimizers update a table like a variable: ``minimize(loss)`` (the table is in the collection
``TRAINABLE_TABLES``), or ``compute_gradients`` / ``apply_gradients`` with the table in
``var_list``: the gradient of each shard is an ``IndexedSlices`` keyed by id, and the update runs
on the shard's task, with the optimizer's slots kept per row inside the table. Supported:
GradientDescent, Momentum (and Nesterov), Adagrad, Adam, with TF1's sparse semantics (duplicate
ids summed first). Adam is *lazy* on tables: only the rows of a step's ids have their m and v
decayed and updated, and each row's bias correction uses its own update count. TF1's dense-decay
Adam would touch every row of an unbounded table each step (O(table) work and traffic, which is
exactly what a hash table avoids), and a global step count would mis-correct rows created late.

``max_rows_per_shard`` bounds memory: a full shard evicts ``"lru"`` (least recently updated) or
``"lfu"`` (least often updated) rows, rows updated fewer than ``min_frequency`` times first (a
full shard evicts 1/64 of its rows beyond what it needs at once, so the O(rows) choice of victims
is amortized). A shard holds its rows, slots and id index in arrays: about
``(embedding_dim * (1 + slots) * dtype size + 16 + 32..80)`` bytes a row.

A shard starts *uninitialized*, as a TF1 table does: run ``tf.tables_initializer()`` (or
``table.initializer``) in a plain session; ``MonitoredTrainingSession`` does it for you. Each
shard is a shared resource (TF1's ``GraphKeys.RESOURCES``: handle, initializer, is-initialized
op), so the Scaffold's ready ops report an uninitialized shard like an uninitialized variable: a
ps task that restarts comes back with its shards uninitialized, the non-chief workers wait, and
the chief restores them from the checkpoint (or initializes them when there is none), instead of
training on a silently emptied table. A lookup or update of an uninitialized shard fails with
FailedPreconditionError naming it.

The Saver saves and restores tables (keys, rows, slots, update clocks and counts per shard): a
table is in the collection ``"saveable_objects"`` and implements ``_zps_saveable_specs`` /
``_zps_restore``. Create the Saver after the optimizer, as in TF1, so the slots are included.
A checkpoint restores into any number of shards: each shard reads the saved shards on its own
task and keeps the ids that hash to it, with their slots, clocks and counts (re-sharding).

>>> import zps as tf
>>> from zps.contrib import embedding
>>> with tf.Graph().as_default():
...     table = embedding.get_hash_embedding("emb", 2, initializer=tf.zeros_initializer())
...     ids = tf.constant([3, 2**40 + 7, 3], tf.int64)
...     rows = embedding.embedding_lookup(table, ids)
...     loss = tf.reduce_sum(rows * tf.constant([[1.0, 2.0]]))
...     train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
...     with tf.Session() as sess:
...         sess.run(table.initializer)
...         sess.run(train)
...         print(sess.run(rows).tolist())
[[-1.0, -2.0], [-0.5, -1.0], [-1.0, -2.0]]
"""

import zlib

from zps.framework import dtypes as _dtypes
from zps.framework.graph import IndexedSlices, convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import clip_ops, control_flow_ops, init_ops, math_ops, resources
from zps.ops import hash_table_ops as _ops

TRAINABLE_TABLES = "trainable_tables"
SAVEABLE_OBJECTS = "saveable_objects"
HASH_EMBEDDINGS = "hash_embeddings"


# -- placement: a shard goes where a variable created at this point would go ------------------------
class _VariableLike:
    """What the graph's device functions see for a shard: a variable op of its size (so
    ``replica_device_setter`` and its strategies place the shard exactly as a variable)."""

    type = "VariableV2"

    def __init__(self, graph, name, shape, dtype):
        self.graph = graph
        self.name = name
        self.device = ""
        self._shape = TensorShape(shape)
        self._dtype = dtype
        self.outputs = [self]
        self.op = self

    def get_shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    def get_attr(self, name):
        return {"shape": tuple(self._shape.as_list()), "dtype": self._dtype}[name]


def _variable_device(graph, name, shape, dtype):
    from zps.framework.device import DeviceSpec
    proxy = _VariableLike(graph, name, shape, dtype)
    for fn in reversed(graph._device_stack):
        if fn is None:
            break
        dev = fn(proxy)
        proxy.device = dev.to_string() if isinstance(dev, DeviceSpec) else (dev or "")
    return proxy.device


# -- initializers --------------------------------------------------------------------------------
def _initializer_spec(initializer, dim):
    """``(kind, a, b)`` and the seed of a zps initializer (computed per id on the shard)."""
    if initializer is None:  # TF1's embedding_column default
        return ("truncated_normal", 0.0, 1.0 / dim ** 0.5), 0
    if isinstance(initializer, int | float):
        return ("constant", float(initializer), 0.0), 0
    seed = getattr(initializer, "seed", None) or 0
    if isinstance(initializer, init_ops.Zeros):
        return ("zeros",), 0
    if isinstance(initializer, init_ops.Ones):
        return ("constant", 1.0, 0.0), 0
    if isinstance(initializer, init_ops.Constant):
        try:
            return ("constant", float(initializer.value), 0.0), 0
        except TypeError:
            pass
    elif isinstance(initializer, init_ops.TruncatedNormal):
        return ("truncated_normal", float(initializer.mean), float(initializer.stddev)), seed
    elif isinstance(initializer, init_ops.RandomNormal):
        return ("normal", float(initializer.mean), float(initializer.stddev)), seed
    elif isinstance(initializer, init_ops.RandomUniform):
        maxval = 1.0 if initializer.maxval is None else float(initializer.maxval)
        return ("uniform", float(initializer.minval), maxval), seed
    raise TypeError("get_hash_embedding: initializer must be None, a number, or one of "
                    "tf.zeros_initializer, ones_initializer, constant_initializer(scalar), "
                    "random_uniform_initializer, random_normal_initializer, "
                    "truncated_normal_initializer (computed per id on the shard); got %r"
                    % (initializer,))


# -- the table ----------------------------------------------------------------------------------------
class HashEmbeddingShard:
    """One shard of a ``HashEmbedding``: what optimizers see in ``grads_and_vars``."""

    def __init__(self, table, index, ref, initializer, is_initialized):
        self.table = table
        self.index = index
        self._ref_tensor = ref
        self.initializer = initializer          # the op that initializes the shard (empty)
        self._is_initialized = is_initialized   # its bool "is initialized" tensor

    def _ref(self):
        return self._ref_tensor

    def _as_graph_element(self):
        return self._ref_tensor

    op = property(lambda self: self._ref_tensor.op)
    graph = property(lambda self: self._ref_tensor.graph)
    device = property(lambda self: self._ref_tensor.device)
    dtype = property(lambda self: self._ref_tensor.dtype)
    name = property(lambda self: self._ref_tensor.name)
    constraint = None

    def get_shape(self):
        return self._ref_tensor.get_shape()

    def is_initialized(self, name=None):
        """A bool scalar tensor: whether the shard was initialized or restored."""
        if name is None:
            return self._is_initialized
        with self.graph.colocate_with(self.op):
            return _ops.hash_table_is_initialized(self._ref_tensor, name=name)

    def size(self, name=None):
        """The number of rows the shard holds now (an int64 scalar tensor)."""
        with self.graph.colocate_with(self.op):
            return _ops.hash_table_size(self._ref_tensor, name=name)

    def stats(self, name=None):
        """``[rows, capacity, evictions, updates, bytes]`` of the shard (int64 tensor)."""
        with self.graph.colocate_with(self.op):
            return _ops.hash_table_stats(self._ref_tensor, name=name)

    def __repr__(self):
        return "<HashEmbeddingShard '%s' device=%s>" % (self.op.name, self.device)

    # -- the optimizer dispatch (zps.train.Optimizer calls this for table shards) --------------
    def _zps_apply_gradient(self, optimizer, grad):
        from zps.train.adagrad import AdagradOptimizer
        from zps.train.adam import AdamOptimizer
        from zps.train.gradient_descent import GradientDescentOptimizer
        from zps.train.momentum import MomentumOptimizer

        if not isinstance(grad, IndexedSlices):
            raise TypeError("The gradient of hash embedding %s must be an IndexedSlices (rows "
                            "keyed by id), got the dense tensor %s"
                            % (self.table.name, getattr(grad, "name", grad)))
        ref, dt = self._ref_tensor, self.dtype.base_dtype
        values, ids = grad.values, grad.indices
        prefix = optimizer.get_name()

        def cast(t):
            return math_ops.cast(t, dt)

        if isinstance(optimizer, AdamOptimizer):
            for slot, counter in (("m", False), ("v", False), ("t", True)):
                self.table._slot_specs[prefix + "/" + slot] = (0, counter)
            return _ops.hash_table_sparse_apply_adam(
                ref, cast(optimizer._lr_t), cast(optimizer._beta1_t), cast(optimizer._beta2_t),
                cast(optimizer._epsilon_t), values, ids, slot_prefix=prefix)
        if isinstance(optimizer, AdagradOptimizer):
            init = float(optimizer._initial_accumulator_value)
            self.table._slot_specs[prefix + "/accumulator"] = (init, False)
            return _ops.hash_table_sparse_apply_adagrad(
                ref, cast(optimizer._learning_rate_tensor), values, ids,
                slot_name=prefix + "/accumulator", initial_accumulator_value=init)
        if isinstance(optimizer, MomentumOptimizer):
            self.table._slot_specs[prefix + "/momentum"] = (0.0, False)
            return _ops.hash_table_sparse_apply_momentum(
                ref, cast(optimizer._learning_rate_tensor), values, ids,
                cast(optimizer._momentum_tensor), slot_name=prefix + "/momentum",
                use_nesterov=optimizer._use_nesterov)
        if isinstance(optimizer, GradientDescentOptimizer):
            return _ops.hash_table_sparse_apply_gradient_descent(
                ref, cast(optimizer._learning_rate_tensor), values, ids)
        raise NotImplementedError(
            "Hash embedding %s cannot be updated by %s: supported optimizers are "
            "GradientDescentOptimizer, MomentumOptimizer, AdagradOptimizer and AdamOptimizer"
            % (self.table.name, type(optimizer).__name__))


class HashEmbedding:
    """A growable embedding table keyed by int64 ids; build it with ``get_hash_embedding``."""

    def __init__(self, name, embedding_dim, num_shards, dtype, shards, config):
        self.name = name
        self.embedding_dim = embedding_dim
        self.num_shards = num_shards
        self.dtype = dtype
        self.shards = [HashEmbeddingShard(self, i, *parts) for i, parts in enumerate(shards)]
        self.config = config
        self._slot_specs = {}   # slot name -> (initial value, is_counter), as optimizers add them
        with self.graph.name_scope(None):
            self.initializer = control_flow_ops.group(*[s.initializer for s in self.shards],
                                                      name=name + "/init")

    @property
    def graph(self):
        return self.shards[0].graph

    def __iter__(self):
        return iter(self.shards)

    def __len__(self):
        return self.num_shards

    def _zps_optimizer_shards(self):
        return list(self.shards)

    def lookup(self, ids, name=None):
        """``embedding_lookup(self, ids)``."""
        return embedding_lookup(self, ids, name=name)

    def _zps_embedding_lookup(self, ids, max_norm=None, name=None):
        # The hook for tf.nn.embedding_lookup(table, ids) (partition_strategy does not apply:
        # ids are routed to shards by hash).
        return embedding_lookup(self, ids, max_norm=max_norm, name=name)

    def size(self, name=None):
        """The rows held by each shard: a list of int64 scalar tensors (one per shard)."""
        return [s.size() for s in self.shards]

    def stats(self):
        """Per shard ``[rows, capacity, evictions, updates, bytes]`` (a list of int64 tensors)."""
        return [s.stats() for s in self.shards]

    def __repr__(self):
        return "<HashEmbedding '%s' dim=%d shards=%d>" % (self.name, self.embedding_dim,
                                                          self.num_shards)

    # -- the Saver's contract --------------------------------------------------------------
    def _slot_spec_list(self):
        return [(n, init, counter) for n, (init, counter) in sorted(self._slot_specs.items())]

    def _zps_saveable_specs(self):
        """``[(checkpoint key, tensor)]``: keys, rows, clocks, counts and slots of each shard."""
        specs = self._slot_spec_list()
        out = []
        for shard in self.shards:
            prefix = shard.op.name
            with self.graph.colocate_with(shard.op):
                tensors = _ops.hash_table_export(shard._ref(), specs, name="export")
            names = ["keys", "values", "clock", "count"] + ["slot/" + n for n, _, _ in specs]
            out.extend((prefix + "/" + n, t) for n, t in zip(names, tensors))
        return out

    def _zps_restore(self, tensors_by_key, filename=None):
        """The op that loads every shard from the checkpoint.

        With the checkpoint's file name (``filename``, else taken from the Saver's restore op
        that produced ``tensors_by_key``), each shard reads the entries of all the saved shards
        on its own task and keeps the ids that hash to it: a checkpoint written with any number
        of shards restores (re-sharding). Without it, ``{checkpoint key: tensor}`` must hold this
        table's own shards' entries (the same number of shards)."""
        specs = self._slot_spec_list()
        if filename is None:
            filename = _checkpoint_prefix_of(tensors_by_key)
        if filename is not None:
            ops = []
            for shard in self.shards:
                with self.graph.colocate_with(shard.op):
                    ops.append(_ops.hash_table_restore(shard._ref(), filename, self.name, specs,
                                                       name="restore"))
            return control_flow_ops.group(*ops, name=self.name + "_restore")
        ops = []
        for shard in self.shards:
            prefix = shard.op.name + "/"

            def get(n, prefix=prefix):
                try:
                    return tensors_by_key[prefix + n]
                except KeyError:
                    raise ValueError("Restoring hash embedding %s: the checkpoint has no %r"
                                     % (self.name, prefix + n)) from None

            with self.graph.colocate_with(shard.op):
                ops.append(_ops.hash_table_import(
                    shard._ref(), get("keys"), get("values"), get("clock"), get("count"),
                    [get("slot/" + n) for n, _, _ in specs], specs, name="import"))
        return control_flow_ops.group(*ops, name=self.name + "_restore")


def _checkpoint_prefix_of(tensors_by_key):
    """The checkpoint prefix tensor of the Saver's restore op that produced these tensors."""
    for t in tensors_by_key.values():
        op = getattr(t, "op", None)
        if op is not None and op.type == "RestoreShard" and op.inputs:
            return op.inputs[0]
    return None


def get_hash_embedding(name, embedding_dim, initializer=None, num_shards=1,
                       max_rows_per_shard=None, eviction="lru", min_frequency=0,
                       dtype=_dtypes.float32, trainable=True, reuse=False):
    """A growable embedding table of ``embedding_dim``-float rows keyed by int64 ids.

    ``initializer``: None (truncated normal, stddev ``1/sqrt(embedding_dim)``, as TF1's
    embedding columns), a number, or a zeros/ones/constant/random_uniform/random_normal/
    truncated_normal initializer; rows are computed from ``(seed, table name, id)``.
    ``num_shards``: shards, each placed like a variable (round-robin over ps tasks under
    ``replica_device_setter``); id ``i`` lives in shard ``mix64(i) % num_shards``.
    ``max_rows_per_shard``: cap on each shard's rows (None: unbounded); when full, ``eviction``
    ("lru": least recently updated, "lfu": least often updated) picks the rows to drop, those
    updated fewer than ``min_frequency`` times first. ``trainable``: add the table to
    ``TRAINABLE_TABLES`` (what ``optimizer.minimize(loss)`` updates by default). A second call
    with the same name raises ValueError unless ``reuse=True`` (it then returns the table).

    >>> import zps as tf
    >>> from zps.contrib import embedding
    >>> cluster = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]}
    >>> with tf.Graph().as_default():
    ...     with tf.device(tf.train.replica_device_setter(cluster=cluster)):
    ...         table = embedding.get_hash_embedding("emb", 8, num_shards=2)
    ...     print([s.device for s in table.shards])
    ['/job:ps/task:0', '/job:ps/task:1']
    """
    graph = get_default_graph()
    outer = graph._name_stack
    name = "%s/%s" % (outer, name) if outer else name   # the name in the current name scope
    for existing in graph.get_collection(HASH_EMBEDDINGS):
        if existing.name == name:
            if reuse:
                return existing
            raise ValueError("Hash embedding %s already exists in this graph: pass reuse=True to "
                             "get it again, or choose another name" % name)
    dim = int(embedding_dim)
    if dim < 1:
        raise ValueError("get_hash_embedding %s: embedding_dim must be a positive int, got %r"
                         % (name, embedding_dim))
    num_shards = int(num_shards)
    if num_shards < 1:
        raise ValueError("get_hash_embedding %s: num_shards must be >= 1, got %r" % (name, num_shards))
    dtype = _dtypes.as_dtype(dtype)
    spec, seed = _initializer_spec(initializer, dim)
    seed = (int(seed) * 1000003 + zlib.crc32(name.encode("utf-8"))) & 0x7FFFFFFF
    refs = []
    with graph.name_scope(name + "/") as scope:
        for i in range(num_shards):
            op_name = "%spart_%d" % (scope, i)
            rows = int(max_rows_per_shard) if max_rows_per_shard else 1
            device = _variable_device(graph, op_name, [rows, dim], dtype)
            with graph.device(None), graph.device(device):
                ref = _ops.hash_table_shard(
                    dim, dtype=dtype, initializer=spec, seed=seed, max_rows=max_rows_per_shard,
                    eviction=eviction, min_frequency=min_frequency, shard_index=i,
                    num_shards=num_shards, name="part_%d" % i)
                init = _ops.hash_table_init(ref, name="part_%d/init" % i)
                is_init = _ops.hash_table_is_initialized(ref, name="part_%d/is_initialized" % i)
            # A shard is a shared resource (TF1's GraphKeys.RESOURCES): the chief's init_op
            # initializes it, the ready ops report it until it is initialized or restored.
            resources.register_resource(ref, init, is_init)
            graph.add_to_collection(resources.TABLE_INITIALIZERS, init)
            refs.append((ref, init, is_init))
    table = HashEmbedding(name, dim, num_shards, dtype, refs,
                          dict(initializer=spec, seed=seed, max_rows_per_shard=max_rows_per_shard,
                               eviction=eviction, min_frequency=min_frequency))
    graph.add_to_collection(HASH_EMBEDDINGS, table)
    graph.add_to_collection(SAVEABLE_OBJECTS, table)
    if trainable:
        graph.add_to_collection(TRAINABLE_TABLES, table)
    return table


def embedding_lookup(params, ids, max_norm=None, name=None, insert_missing=True):
    """The rows of ``ids`` (any shape, int64 or int32) in the hash table ``params``.

    Returns ``ids.shape + [embedding_dim]``. The ids are deduplicated and routed by shard on the
    device of the call (the worker); each shard finds (or creates) its rows on its own task. With
    ``max_norm``, each embedding with a larger L2 norm is scaled down to it (as TF1). With
    ``insert_missing=False`` ids without a row get their initial row without storing it (for
    evaluation or serving: the table does not grow).
    """
    if not isinstance(params, HashEmbedding):
        raise TypeError("zps.contrib.embedding.embedding_lookup needs a HashEmbedding (from "
                        "get_hash_embedding), got %r; use tf.nn.embedding_lookup for variables"
                        % (params,))
    graph = params.graph
    ids = convert_to_tensor(ids)
    if ids.dtype not in (_dtypes.int64, _dtypes.int32):
        raise TypeError("embedding_lookup(%s): ids must be int64 or int32, got %s (%s)"
                        % (params.name, ids.dtype.name, ids.name))
    with graph.name_scope(name or params.name + "_lookup"):
        shard_ids, positions = _ops.hash_table_route(ids, params.num_shards)
        rows = []
        for shard, sids in zip(params.shards, shard_ids):
            with graph.colocate_with(shard.op):
                rows.append(_ops.hash_table_find(shard._ref(), sids, insert=insert_missing))
        result = _ops.hash_table_stitch(positions, rows)
        if max_norm is not None:
            rank = ids.get_shape().ndims
            if rank is None:
                raise ValueError("embedding_lookup(%s) with max_norm needs ids of known rank"
                                 % params.name)
            result = clip_ops.clip_by_norm(result, max_norm, axes=[rank])
        return result


__all__ = [
    "HashEmbedding",
    "get_hash_embedding",
    "embedding_lookup",
    "TRAINABLE_TABLES",
]
