"""Growable hash embedding tables: int64 id -> row, rows created on first lookup, sparse updates.

One shard of a table is a resource of its task (a ps task, typically), reached through the
``HashTableShard`` op, whose output is a reference to it (as ``VariableV2``'s output is to a
variable): the find/apply/export ops take it as a ref input and run where the shard lives. A
shard stores its rows compactly in growable arrays (capacity doubles up to ``max_rows``) with
a vectorized hash index ``id -> row`` (``IdIndex``); optimizer slots (momentum, accumulators,
Adam's m/v and per-row step counts) are arrays of the same rows, so a row and its slots live and
die together.

* Rows are created by ``HashTableFind`` with the table's initializer, computed from the id alone
  (a counter-based generator keyed by ``(seed, id)``), so a row is the same whichever worker
  creates it, in whatever order, and after eviction it comes back as it started.
* ``HashTableRoute`` (on the worker) deduplicates a batch of ids and splits the unique ids by
  shard (a 64-bit mix of the id, modulo the number of shards); only those cross the wire.
  ``HashTableStitch`` puts the shards' rows back in id order; its gradient
  (``HashTableStitchGrad``) sums the rows of repeated ids, one gradient row per unique id.
* The gradient of ``HashTableFind`` with respect to the table is ``IndexedSlices(grad, ids)``;
  the ``HashTableSparseApply*`` ops sum duplicate ids, then update the rows and their slots in
  place, holding the shard's lock.
* A shard starts uninitialized (``HashTableIsInitialized`` is false, every other use fails with
  FailedPreconditionError) until ``HashTableInit`` (a no-op on an initialized shard) or a restore
  (``HashTableImport``, ``HashTableRestore``) runs: a ps task that restarted holds its shards
  uninitialized, so the ready ops report them and the chief restores them.
* ``HashTableRestore`` reads a checkpoint written with any number of shards: each shard keeps the
  saved ids that hash to it.
* With ``max_rows``, a shard that is full evicts rows to make room: ``"lru"`` the least recently
  updated, ``"lfu"`` the least often updated (ties: least recently); rows updated fewer than
  ``min_frequency`` times go first. Rows of the batch being looked up are never evicted.

>>> import zps as tf
>>> from zps.ops import hash_table_ops as h
>>> with tf.Graph().as_default():
...     table = h.hash_table_shard(2, initializer=("constant", 0.5, 0.0), name="t")
...     rows = h.hash_table_find(table, tf.constant([7, 2**40], tf.int64))
...     with tf.Session() as sess:
...         sess.run(h.hash_table_init(table))
...         print(sess.run(rows).tolist(), sess.run(h.hash_table_size(table)))
[[0.5, 0.5], [0.5, 0.5]] 2
"""

import threading

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import IndexedSlices, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops.op_util import make_op

RESOURCE_KIND = "hash_embedding"
INITIALIZER_KINDS = ("zeros", "constant", "uniform", "normal", "truncated_normal")
EVICTION_POLICIES = ("lru", "lfu")
_INITIAL_CAPACITY = 1024


# -- ids: hashing and the per-id initializer --------------------------------------------------------
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(z):
    """splitmix64's finalizer: a bijective, well-mixed uint64 -> uint64 (arrays; wraps silently)."""
    z = z ^ (z >> np.uint64(30))
    z = z * _M1
    z = z ^ (z >> np.uint64(27))
    z = z * _M2
    return z ^ (z >> np.uint64(31))


def shard_of(ids, num_shards):
    """The shard of each int64 id: ``mix64(id) % num_shards`` (numpy; the same on every task)."""
    z = _mix64(np.asarray(ids, dtype=np.int64).view(np.uint64))
    return (z % np.uint64(num_shards)).astype(np.int64)


def _uniform(ids, seed, dim, stream):
    """Uniform (0, 1) float64 [len(ids), dim]: a function of (seed, id, column, stream) only."""
    base = _mix64(np.asarray(ids, np.int64).view(np.uint64)
                  ^ _mix64(np.array([seed * 4 + stream + 1], np.uint64)))
    cols = (np.arange(1, dim + 1, dtype=np.uint64) * _GOLDEN)[None, :]
    z = _mix64(base[:, None] + cols)
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))


def _normal(ids, seed, dim, stream):
    u1, u2 = _uniform(ids, seed, dim, stream), _uniform(ids, seed, dim, stream + 1)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def initial_rows(ids, dim, dtype, initializer, seed):
    """The initial rows of ``ids`` for an initializer spec ``(kind, a, b)``.

    kinds: ``("zeros",)``, ``("constant", value)``, ``("uniform", minval, maxval)``,
    ``("normal", mean, stddev)``, ``("truncated_normal", mean, stddev)`` (values beyond two
    standard deviations drawn again, as TF1's truncated_normal).
    """
    kind = initializer[0]
    n = len(ids)
    if kind == "zeros" or n == 0:
        return np.zeros((n, dim), dtype)
    a, b = float(initializer[1]), float(initializer[2]) if len(initializer) > 2 else 0.0
    if kind == "constant":
        return np.full((n, dim), a, dtype)
    if kind == "uniform":
        return (a + (b - a) * _uniform(ids, seed, dim, 0)).astype(dtype)
    if kind == "normal":
        return (a + b * _normal(ids, seed, dim, 0)).astype(dtype)
    if kind == "truncated_normal":
        z = _normal(ids, seed, dim, 0)
        bad = np.abs(z) > 2.0
        stream = 2
        while bad.any() and stream < 64:
            z = np.where(bad, _normal(ids, seed, dim, stream), z)
            bad = np.abs(z) > 2.0
            stream += 2
        return (a + b * np.clip(z, -2.0, 2.0)).astype(dtype)
    raise errors.InvalidArgumentError(None, None, "unknown hash table initializer %r (one of %s)"
                                      % (kind, INITIALIZER_KINDS))


# -- the id -> row index ---------------------------------------------------------------------------------
_EMPTY, _DELETED = -1, -2


class IdIndex:
    """A vectorized open-addressing hash map int64 id -> row (linear probing, load <= 1/2).

    Every operation takes a whole batch of ids and probes with numpy, one step of every pending
    chain at a time (chains are short at this load). Slots hold ``(key, row)``: row -1 is empty, -2
    a deleted key (skipped by lookups, reused by inserts; the table is rebuilt when they pile up).
    16 bytes a slot: 32-80 bytes an id, against ~100 for a Python dict of ints.
    """

    def __init__(self, capacity=1024):
        self._alloc(capacity)

    def _alloc(self, capacity):
        capacity = 1 << max(4, int(capacity - 1).bit_length())
        self._keys = np.zeros(capacity, np.int64)
        self._rows = np.full(capacity, _EMPTY, np.int64)
        self._mask = capacity - 1
        self._live = 0
        self._deleted = 0

    def __len__(self):
        return self._live

    @property
    def nbytes(self):
        return self._keys.nbytes + self._rows.nbytes

    def _home(self, ids):
        return (_mix64(np.ascontiguousarray(ids).view(np.uint64)) & np.uint64(self._mask)).astype(np.int64)

    def _find(self, ids):
        """The slot of each id, -1 where it is absent."""
        slots = np.full(len(ids), -1, np.int64)
        pending = np.arange(len(ids))
        pos = self._home(ids)
        while len(pending):
            rows = self._rows[pos]
            hit = (rows >= 0) & (self._keys[pos] == ids[pending])
            slots[pending[hit]] = pos[hit]
            more = ~hit & (rows != _EMPTY)
            pending, pos = pending[more], (pos[more] + 1) & self._mask
        return slots

    def get(self, ids):
        """The row of each id, -1 where it is absent."""
        ids = np.asarray(ids, np.int64)
        slots = self._find(ids)
        return np.where(slots >= 0, self._rows[np.maximum(slots, 0)], -1)

    def insert(self, ids, rows):
        """Add ``ids`` (unique, all absent) with their ``rows``."""
        ids = np.asarray(ids, np.int64)
        rows = np.asarray(rows, np.int64)
        if (self._live + self._deleted + len(ids)) * 2 > len(self._keys):
            self._rebuild(self._live + len(ids))
        pending = np.arange(len(ids))
        pos = self._home(ids)
        while len(pending):
            free = self._rows[pos] < 0
            # Of the ids probing the same free slot, the first takes it; the others move on.
            taken, first = np.unique(pos[free], return_index=True)
            winners = pending[free][first]
            self._deleted -= int(np.count_nonzero(self._rows[taken] == _DELETED))
            self._keys[taken] = ids[winners]
            self._rows[taken] = rows[winners]
            placed = np.zeros(len(pending), bool)
            placed[np.flatnonzero(free)[first]] = True
            pending, pos = pending[~placed], (pos[~placed] + 1) & self._mask
        self._live += len(ids)

    def remove(self, ids):
        """Delete ``ids`` (all present)."""
        slots = self._find(np.asarray(ids, np.int64))
        slots = slots[slots >= 0]
        self._rows[slots] = _DELETED
        self._live -= len(slots)
        self._deleted += len(slots)

    def set_rows(self, ids, rows):
        """Change the rows of ``ids`` (all present)."""
        self._rows[self._find(np.asarray(ids, np.int64))] = rows

    def _rebuild(self, live):
        keep = self._rows >= 0
        keys, rows = self._keys[keep], self._rows[keep]
        self._alloc(max(int(2.5 * live), 1024))  # load 0.2-0.4 after, rebuilt again at 0.5
        self.insert(keys, rows)


# -- the shard resource --------------------------------------------------------------------------------
class HashTableResource:
    """The rows of one shard: ``values[:size]`` with keys, update clock/count and optimizer slots.

    Every method is called with ``lock`` held by the kernel.
    """

    def __init__(self, name, dim, dtype, initializer, seed, max_rows, eviction, min_frequency,
                 shard_index, num_shards):
        self.name = name
        self.dim = int(dim)
        self.dtype = np.dtype(dtype)
        self.initializer = tuple(initializer)
        self.seed = int(seed)
        self.max_rows = None if not max_rows else int(max_rows)
        self.eviction = eviction
        self.min_frequency = int(min_frequency or 0)
        self.shard_index = int(shard_index)
        self.num_shards = int(num_shards)
        self.lock = threading.RLock()
        self.index = IdIndex()    # id -> row
        self.size = 0
        self.tick = 0             # the shard's update clock: +1 per apply
        self.evictions = 0
        cap = _INITIAL_CAPACITY if self.max_rows is None else min(_INITIAL_CAPACITY, self.max_rows)
        self.keys = np.zeros(cap, np.int64)
        self.values = np.zeros((cap, self.dim), self.dtype)
        self.clock = np.zeros(cap, np.int64)
        self.count = np.zeros(cap, np.int64)
        self.slots = {}           # name -> array [cap, dim] (or [cap] for step counters)
        self.slot_init = {}
        # A shard starts uninitialized: its initializer (HashTableInit) or a restore
        # (HashTableImport / HashTableRestore) makes it usable. So a ps task that restarted holds
        # its shards uninitialized, the ready op reports them, and the chief restores them from
        # the checkpoint instead of training on silently emptied tables.
        self.initialized = False

    def read(self):
        raise errors.InvalidArgumentError(
            None, None, "%s is a hash embedding table shard: it has no dense value. Look rows up "
            "with zps.contrib.embedding.embedding_lookup(table, ids)." % self.name)

    @property
    def capacity(self):
        return self.keys.shape[0]

    def nbytes(self):
        return (self.keys.nbytes + self.values.nbytes + self.clock.nbytes + self.count.nbytes
                + sum(a.nbytes for a in self.slots.values()) + self.index.nbytes)

    # -- rows ---------------------------------------------------------------------------------
    def slot(self, name, init, counter=False):
        """The slot array ``name`` (created for every row, filled with ``init``, on first use)."""
        arr = self.slots.get(name)
        if arr is None:
            shape = (self.capacity,) if counter else (self.capacity, self.dim)
            arr = self.slots[name] = np.full(shape, init, np.int64 if counter else self.dtype)
            self.slot_init[name] = init
        return arr

    def _grow(self, needed):
        cap = self.capacity
        if needed <= cap:
            return
        new = max(needed, cap * 2)
        if self.max_rows is not None:
            new = min(new, self.max_rows)

        def grown(a, fill):
            out = np.full((new,) + a.shape[1:], fill, a.dtype)
            out[:self.size] = a[:self.size]
            return out

        self.keys = grown(self.keys, 0)
        self.values = grown(self.values, 0)
        self.clock = grown(self.clock, 0)
        self.count = grown(self.count, 0)
        for name, a in list(self.slots.items()):
            self.slots[name] = grown(a, self.slot_init[name])

    def _victims(self, n, protected):
        """``n`` occupied rows to evict (never one of ``protected``), by the eviction policy."""
        size = self.size
        clock, count = self.clock[:size], self.count[:size]
        if self.eviction == "lfu":
            key = (np.minimum(count, (1 << 20) - 1) << 40) | clock
        else:
            key = clock.copy()
        if self.min_frequency:
            key |= (count >= self.min_frequency).astype(np.int64) << 61
        key[protected] = np.iinfo(np.int64).max
        if size - len(protected) < n:
            raise errors.ResourceExhaustedError(
                None, None, "hash table %s: one step uses %d distinct ids of this shard but it "
                "holds at most %d rows (max_rows_per_shard); raise max_rows_per_shard or look up "
                "fewer distinct ids per step" % (self.name, n + len(protected), self.max_rows))
        victims = np.argpartition(key, n - 1)[:n] if n < size else np.arange(size)
        return victims

    def rows_of(self, ids, create=True):
        """The row of each (unique) id, creating missing ones (-1 for missing if not ``create``)."""
        rows = self.index.get(ids)
        if not create:
            return rows
        missing = rows < 0
        n_new = int(np.count_nonzero(missing))
        if n_new:
            new_ids, inverse = np.unique(ids[missing], return_inverse=True)
            new_rows = self._allocate(new_ids, rows[~missing])
            if new_rows is None:  # rows were compacted: find the batch's rows again
                return self.index.get(ids)
            rows[missing] = new_rows[inverse]
        return rows

    def _allocate(self, new_ids, protected):
        """Rows for the ``new_ids``, evicting when the shard is full; None if rows moved."""
        n = len(new_ids)
        limit = self.max_rows
        free = n if limit is None else max(0, min(n, limit - self.size))
        rows = np.empty(n, np.int64)
        if free:
            self._grow(self.size + free)
            rows[:free] = np.arange(self.size, self.size + free)
            self.size += free
        dropped = None
        if free < n:
            # A full shard evicts what it needs plus 1/64 of its rows at once: choosing victims
            # scans every row, so this keeps eviction O(1) per inserted row, amortized.
            need = n - free
            protected = np.concatenate([protected, rows[:free]])
            extra = min(limit // 64, max(0, self.size - len(protected) - need))
            victims = self._victims(need + extra, protected)
            self.index.remove(self.keys[victims])
            self.evictions += len(victims)
            rows[free:] = victims[:need]
            dropped = victims[need:]
        self.keys[rows] = new_ids
        self.index.insert(new_ids, rows)
        self.values[rows] = initial_rows(new_ids, self.dim, self.dtype, self.initializer, self.seed)
        self.clock[rows] = self.tick
        self.count[rows] = 0
        for name, a in self.slots.items():
            a[rows] = self.slot_init[name]
        if dropped is not None and len(dropped):
            self._compact(dropped)
            return None
        return rows

    def _compact(self, dropped):
        """Remove the (already unindexed) rows ``dropped``: the last rows move into the holes."""
        new_size = self.size - len(dropped)
        is_dropped = np.zeros(self.size, bool)
        is_dropped[dropped] = True
        holes = dropped[dropped < new_size]
        movers = np.flatnonzero(~is_dropped[new_size:]) + new_size
        for a in (self.keys, self.values, self.clock, self.count, *self.slots.values()):
            a[holes] = a[movers]
        self.index.set_rows(self.keys[holes], holes)
        self.size = new_size

    def touch(self, rows):
        """Mark ``rows`` as updated now (the eviction clock and frequency)."""
        self.clock[rows] = self.tick
        self.count[rows] += 1
        self.tick += 1

    # -- checkpoints --------------------------------------------------------------------------
    def export(self, slot_specs):
        n = self.size
        out = [self.keys[:n].copy(), self.values[:n].copy(), self.clock[:n].copy(),
               self.count[:n].copy()]
        for name, init, counter in slot_specs:
            a = self.slots.get(name)
            if a is None:
                shape = (n,) if counter else (n, self.dim)
                out.append(np.full(shape, init, np.int64 if counter else self.dtype))
            else:
                out.append(a[:n].copy())
        return out

    def load(self, keys, values, clock, count, slot_values, slot_specs):
        """Replace the contents with saved rows (those of ids that belong to this shard)."""
        keys = np.asarray(keys, np.int64).ravel()
        n = len(keys)
        if values.shape != (n, self.dim):
            raise errors.InvalidArgumentError(
                None, None, "hash table %s: restoring %d keys needs values of shape [%d, %d], got "
                "%s" % (self.name, n, n, self.dim, list(values.shape)))
        mine = np.flatnonzero(shard_of(keys, self.num_shards) == self.shard_index)
        if self.max_rows is not None and len(mine) > self.max_rows:
            order = np.argsort(clock[mine], kind="stable")  # keep the most recently updated
            mine = np.sort(mine[order[len(mine) - self.max_rows:]])
        m = len(mine)
        self.size = 0
        self._grow(m)
        self.keys[:m] = keys[mine]
        self.values[:m] = values[mine]
        self.clock[:m] = clock[mine]
        self.count[:m] = count[mine]
        restored = set()
        for (name, init, counter), v in zip(slot_specs, slot_values):
            self.slot(name, init, counter)[:m] = v[mine]
            restored.add(name)
        for name, a in self.slots.items():  # slots the checkpoint does not have start afresh
            if name not in restored:
                a[:m] = self.slot_init[name]
        self.size = m
        self.index = IdIndex(4 * m)
        self.index.insert(self.keys[:m], np.arange(m))
        self.tick = int(self.clock[:m].max()) + 1 if m else 0
        self.initialized = True


def _table(ctx, ref, check_initialized=True):
    if not isinstance(ref, HashTableResource):
        raise errors.InvalidArgumentError(None, None, "expected a hash table shard, got %r"
                                          % (ref,))
    if check_initialized and not ref.initialized:
        raise errors.FailedPreconditionError(
            None, None, "Attempting to use uninitialized hash table shard %s: run its initializer "
            "(tf.tables_initializer(); MonitoredTrainingSession runs it) or restore it from a "
            "checkpoint (a ps task that restarted holds its shards uninitialized until the chief "
            "restores them)." % ref.name)
    return ref


# -- HashTableShard --------------------------------------------------------------------------------
def _shard_kernel(ctx, dtype, dim, initializer, seed, max_rows, eviction, min_frequency,
                  shard_index, num_shards, shared_name, op_name):
    name = shared_name or op_name
    return ctx.resources.lookup_or_create(
        RESOURCE_KIND, name,
        lambda: HashTableResource(name, dim, dtype.as_numpy_dtype, initializer, seed, max_rows,
                                  eviction, min_frequency, shard_index, num_shards))


register_op("HashTableShard", dtype=lambda op: op._attrs["dtype"],
            shape=lambda op: TensorShape([None, op._attrs["dim"]]), kernel=_shard_kernel,
            stateful=True, ref_output=True, needs_op_name=True, grad=None)


def hash_table_shard(dim, dtype=_dtypes.float32, initializer=("zeros",), seed=0, max_rows=None,
                     eviction="lru", min_frequency=0, shard_index=0, num_shards=1, name=None,
                     shared_name=""):
    """One shard of a hash table: a reference to its rows (use ``zps.contrib.embedding``).

    ``initializer`` is a spec ``(kind, a, b)`` (see ``initial_rows``).
    """
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("hash table %s: dtype must be a float type, got %s" % (name, dtype.name))
    if int(dim) < 1:
        raise ValueError("hash table %s: embedding_dim must be a positive int, got %r" % (name, dim))
    if initializer[0] not in INITIALIZER_KINDS:
        raise ValueError("hash table %s: initializer kind %r is not one of %s"
                         % (name, initializer[0], INITIALIZER_KINDS))
    if eviction not in EVICTION_POLICIES:
        raise ValueError("hash table %s: eviction must be one of %s, got %r"
                         % (name, EVICTION_POLICIES, eviction))
    if max_rows is not None and int(max_rows) < 1:
        raise ValueError("hash table %s: max_rows_per_shard must be positive or None, got %r"
                         % (name, max_rows))
    return make_op("HashTableShard", [], name=name or "HashTableShard", dtype=dtype, dim=int(dim),
                   initializer=tuple(float(v) if i else v for i, v in enumerate(initializer)),
                   seed=int(seed), max_rows=None if max_rows is None else int(max_rows),
                   eviction=eviction, min_frequency=int(min_frequency), shard_index=int(shard_index),
                   num_shards=int(num_shards), shared_name=shared_name)


# -- HashTableInit / HashTableIsInitialized --------------------------------------------------------
def _init_kernel(ctx, table):
    t = _table(ctx, table, check_initialized=False)
    with t.lock:
        t.initialized = True


register_op("HashTableInit", kernel=_init_kernel, num_outputs=0, ref_inputs=(0,), stateful=True,
            grad=None)


def hash_table_init(table, name=None):
    """Mark the shard initialized (empty, its rows created on lookup). A no-op on a shard that is
    initialized already (so it never drops rows, however often it runs)."""
    _check_table_ref(table, "hash_table_init")
    return make_op("HashTableInit", [table], name=name or "HashTableInit")


def _is_initialized_kernel(ctx, table):
    return np.array(_table(ctx, table, check_initialized=False).initialized)


register_op("HashTableIsInitialized", dtype=lambda op: _dtypes.bool, shape=lambda op: TensorShape([]),
            kernel=_is_initialized_kernel, ref_inputs=(0,), stateful=True, grad=None)


def hash_table_is_initialized(table, name=None):
    """A bool scalar: whether the shard was initialized or restored."""
    _check_table_ref(table, "hash_table_is_initialized")
    return make_op("HashTableIsInitialized", [table], name=name or "HashTableIsInitialized")


def _check_table_ref(table, what):
    if not (getattr(table, "is_ref", False) and table.op.type == "HashTableShard"):
        raise TypeError("%s needs a hash table shard (the output of HashTableShard), got %r"
                        % (what, table))
    return table


def _as_ids(ids, what):
    ids = convert_to_tensor(ids)
    if ids.dtype not in (_dtypes.int64, _dtypes.int32):
        raise TypeError("%s: ids must be int64 or int32, got %s (%s)" % (what, ids.dtype.name, ids.name))
    return ids


def _ids64(ids):
    return ids.astype(np.int64, copy=False).ravel()


# -- HashTableRoute ---------------------------------------------------------------------------------
def _route_kernel(ctx, ids, num_shards):
    flat = _ids64(ids)
    uids, inverse = np.unique(flat, return_inverse=True)
    if num_shards == 1:
        return [uids, inverse.reshape(ids.shape).astype(np.int64)]
    shard = shard_of(uids, num_shards)
    order = np.argsort(shard, kind="stable")
    bounds = np.searchsorted(shard[order], np.arange(num_shards + 1))
    position = np.empty(len(uids), np.int64)
    position[order] = np.arange(len(uids))
    grouped = uids[order]
    parts = [grouped[bounds[p]:bounds[p + 1]] for p in range(num_shards)]
    return parts + [position[inverse].reshape(ids.shape)]


def _route_shapes(op):
    n = op._attrs["num_shards"]
    return [TensorShape([None])] * n + [op.inputs[0].get_shape()]


register_op("HashTableRoute", dtype=lambda op: [_dtypes.int64] * (op._attrs["num_shards"] + 1),
            shape=_route_shapes, kernel=_route_kernel, grad=None)


def hash_table_route(ids, num_shards, name=None):
    """Deduplicate ``ids`` and split them by shard.

    Returns ``(shard_ids, positions)``: ``shard_ids[p]`` the sorted unique ids of shard ``p``;
    ``positions`` (the shape of ``ids``) the position of each id in the concatenation of
    ``shard_ids`` (so ``gather(concat(rows), positions)`` puts the rows back in id order).
    """
    ids = _as_ids(ids, "hash_table_route")
    out = make_op("HashTableRoute", [ids], name=name or "HashTableRoute",
                  num_outputs=int(num_shards) + 1, num_shards=int(num_shards))
    return out[:-1], out[-1]


# -- HashTableFind ---------------------------------------------------------------------------------
def _find_kernel(ctx, table, ids, insert=True):
    t = _table(ctx, table)
    ids = _ids64(ids)
    with t.lock:
        rows = t.rows_of(ids, create=insert)
        if insert:
            return t.values.take(rows, axis=0)
        missing = rows < 0
        out = t.values.take(np.where(missing, 0, rows), axis=0)
    if missing.any():  # not stored: the rows these ids would start with
        out[missing] = initial_rows(ids[missing], t.dim, t.dtype, t.initializer, t.seed)
    return out


def _find_grad(op, grad):
    # d(rows)/d(table): the gradient rows go to the looked-up ids (IndexedSlices keyed by id).
    return [IndexedSlices(grad, op.inputs[1]), None]


def _find_shape(op):
    ids = op.inputs[1].get_shape()
    n = ids.as_list()[0] if ids.ndims == 1 else None
    return TensorShape([n, op.inputs[0].get_shape().as_list()[1]])


register_op("HashTableFind", dtype=lambda op: op.inputs[0].dtype.base_dtype, shape=_find_shape,
            kernel=_find_kernel, ref_inputs=(0,), stateful=True, grad=_find_grad)


def hash_table_find(table, ids, insert=True, name=None):
    """The rows of the unique int64 ``ids`` (a vector), created with the initializer if missing
    (with ``insert=False``, missing rows are computed but not stored: e.g. for evaluation).

    Its gradient with respect to ``table`` is ``IndexedSlices(grad, ids)``.
    """
    _check_table_ref(table, "hash_table_find")
    ids = _as_ids(ids, "hash_table_find")
    if ids.get_shape().ndims not in (None, 1):
        raise ValueError("hash_table_find: ids must be a vector of unique ids, got shape %s (%s); "
                         "use zps.contrib.embedding.embedding_lookup for any shape"
                         % (ids.get_shape(), ids.name))
    return make_op("HashTableFind", [table, ids], name=name or "HashTableFind", insert=bool(insert))


# -- HashTableStitch / HashTableStitchGrad -----------------------------------------------------------
def _stitch_kernel(ctx, positions, *rows):
    unique_rows = rows[0] if len(rows) == 1 else ctx.xp.concatenate(rows, axis=0)
    return unique_rows.take(positions, axis=0)


def _stitch_shape(op):
    ids = op.inputs[0].get_shape()
    dim = op.inputs[1].get_shape().as_list()[1] if op.inputs[1].get_shape().ndims else None
    return TensorShape(None) if ids.ndims is None else TensorShape(ids.as_list() + [dim])


def _stitch_grad(op, grad):
    return [None] + hash_table_stitch_grad(grad, op.inputs[0], op.inputs[1:])


register_op("HashTableStitch", dtype=lambda op: op.inputs[1].dtype.base_dtype, shape=_stitch_shape,
            kernel=_stitch_kernel, grad=_stitch_grad)


def hash_table_stitch(positions, rows, name=None):
    """``concat(rows)[positions]``: the rows of each shard's unique ids put back in id order.

    Its gradient sums the rows of repeated ids (sort + reduceat, no scatter-add) and splits them by
    shard: each shard receives one row per unique id.
    """
    return make_op("HashTableStitch", [convert_to_tensor(positions)] + list(rows),
                   name=name or "HashTableStitch")


def _segment_rows(grad, positions, num_rows):
    """``out[k] = sum of grad rows whose position is k`` ([num_rows, dim])."""
    dim = grad.shape[-1]
    flat = grad.reshape(-1, dim)
    pos = positions.reshape(-1)
    if not len(pos):
        return np.zeros((num_rows, dim), grad.dtype)
    order = np.argsort(pos, kind="stable")
    sorted_pos = pos[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_pos[1:] != sorted_pos[:-1]]))
    summed = np.add.reduceat(flat[order], starts, axis=0)
    if len(starts) == num_rows:   # every unique id occurs in the batch (the lookup's case)
        return summed
    out = np.zeros((num_rows, dim), grad.dtype)
    out[sorted_pos[starts]] = summed
    return out


def _stitch_grad_kernel(ctx, grad, positions, *rows):
    sizes = [r.shape[0] for r in rows]
    summed = _segment_rows(grad, positions, sum(sizes))
    if len(rows) == 1:
        return summed
    return list(np.split(summed, np.cumsum(sizes)[:-1], axis=0))


def _stitch_grad_grad(op, *grads):
    from zps.ops import array_ops  # same layer; array_ops imports much of the op library

    grads = [array_ops.zeros_like(r) if g is None else g for g, r in zip(grads, op.inputs[2:])]
    return [hash_table_stitch(op.inputs[1], grads), None] + [None] * (len(op.inputs) - 2)


register_op("HashTableStitchGrad", dtype=lambda op: [op.inputs[0].dtype.base_dtype] * (len(op.inputs) - 2),
            shape=lambda op: [t.get_shape() for t in op.inputs[2:]],
            kernel=_stitch_grad_kernel, grad=_stitch_grad_grad)


def hash_table_stitch_grad(grad, positions, rows, name=None):
    """The gradient of ``hash_table_stitch`` for each of ``rows`` (repeated ids summed)."""
    rows = list(rows)
    out = make_op("HashTableStitchGrad", [convert_to_tensor(grad), positions] + rows,
                  name=name or "HashTableStitchGrad", num_outputs=len(rows))
    return out if isinstance(out, list) else [out]


# -- HashTableSize ---------------------------------------------------------------------------------
def _size_kernel(ctx, table):
    t = _table(ctx, table)
    return np.array(t.size, np.int64)


register_op("HashTableSize", dtype=lambda op: _dtypes.int64, shape=lambda op: TensorShape([]),
            kernel=_size_kernel, ref_inputs=(0,), stateful=True, grad=None)


def hash_table_size(table, name=None):
    """The number of rows the shard holds (an int64 scalar)."""
    _check_table_ref(table, "hash_table_size")
    return make_op("HashTableSize", [table], name=name or "HashTableSize")


def _stats_kernel(ctx, table):
    t = _table(ctx, table)
    with t.lock:
        return np.array([t.size, t.capacity, t.evictions, t.tick, t.nbytes()], np.int64)


register_op("HashTableStats", dtype=lambda op: _dtypes.int64, shape=lambda op: TensorShape([5]),
            kernel=_stats_kernel, ref_inputs=(0,), stateful=True, grad=None)


def hash_table_stats(table, name=None):
    """``[rows, capacity, evictions, updates, bytes]`` of the shard (int64)."""
    _check_table_ref(table, "hash_table_stats")
    return make_op("HashTableStats", [table], name=name or "HashTableStats")


# -- sparse updates -----------------------------------------------------------------------------------
def _dedup(ids, grad, table):
    """Unique ids and the sums of their gradient rows (TF1's _deduplicate_indexed_slices)."""
    ids = _ids64(ids)
    grad = np.asarray(grad)
    if grad.shape != (len(ids), table.dim):
        raise errors.InvalidArgumentError(
            None, None, "hash table %s: the gradient has shape %s but %d ids of dim %d need [%d, %d]"
            % (table.name, list(grad.shape), len(ids), table.dim, len(ids), table.dim))
    uids, inverse = np.unique(ids, return_inverse=True)
    if len(uids) == len(ids):
        return ids, grad
    summed = np.zeros((len(uids), table.dim), grad.dtype)
    np.add.at(summed, inverse, grad)
    return uids, summed


def _scalar(x):
    return x.item() if hasattr(x, "item") else float(x)


def _apply(update):
    def kernel(ctx, table, *args, **attrs):
        t = _table(ctx, table)
        *hyper, grad, ids = args
        with t.lock:
            ids, grad = _dedup(ids, grad, t)
            rows = t.rows_of(ids, create=True)
            update(t, rows, grad.astype(t.dtype, copy=False), *[_scalar(h) for h in hyper],
                   **attrs)
            t.touch(rows)
    return kernel


# The updates gather the touched rows (``take``), compute in place in those small copies, and
# write them back: one pass over each touched row of the table and of each slot.
def _sub_rows(t, rows, delta):
    v = t.values.take(rows, axis=0)
    v -= delta
    t.values[rows] = v


def _sgd(t, rows, g, lr):
    _sub_rows(t, rows, g * lr)


def _momentum(t, rows, g, lr, momentum, slot_name, use_nesterov):
    accum = t.slot(slot_name, 0.0)
    a = accum.take(rows, axis=0)
    a *= momentum
    a += g
    accum[rows] = a
    if use_nesterov:
        _sub_rows(t, rows, g * lr + a * (lr * momentum))
    else:
        a *= lr
        _sub_rows(t, rows, a)


def _adagrad(t, rows, g, lr, slot_name, initial_accumulator_value):
    accum = t.slot(slot_name, initial_accumulator_value)
    a = accum.take(rows, axis=0)
    tmp = np.multiply(g, g)
    a += tmp
    accum[rows] = a
    np.sqrt(a, out=tmp)
    np.divide(g, tmp, out=tmp)
    tmp *= lr
    _sub_rows(t, rows, tmp)


def _adam(t, rows, g, lr, beta1, beta2, epsilon, slot_prefix):
    m_slot = t.slot(slot_prefix + "/m", 0.0)
    v_slot = t.slot(slot_prefix + "/v", 0.0)
    steps = t.slot(slot_prefix + "/t", 0, counter=True)
    step = steps.take(rows) + 1
    steps[rows] = step
    m = m_slot.take(rows, axis=0)
    m *= beta1
    m += (1.0 - beta1) * g
    m_slot[rows] = m
    v = v_slot.take(rows, axis=0)
    v *= beta2
    tmp = np.multiply(g, g)
    tmp *= 1.0 - beta2
    v += tmp
    v_slot[rows] = v
    # Per-row bias correction: each row's update is Adam over that row's own gradients.
    lr_t = (lr * np.sqrt(1.0 - beta2 ** step) / (1.0 - beta1 ** step)).astype(t.dtype)
    np.sqrt(v, out=tmp)
    tmp += epsilon
    np.divide(m, tmp, out=tmp)
    tmp *= lr_t[:, None]
    _sub_rows(t, rows, tmp)


_APPLY_OPS = {
    "HashTableSparseApplyGradientDescent": _sgd,
    "HashTableSparseApplyMomentum": _momentum,
    "HashTableSparseApplyAdagrad": _adagrad,
    "HashTableSparseApplyAdam": _adam,
}
for _type, _fn in _APPLY_OPS.items():
    register_op(_type, kernel=_apply(_fn), num_outputs=0, ref_inputs=(0,), stateful=True, grad=None)


def _apply_op(op_type, table, hyper, grad, ids, name, **attrs):
    _check_table_ref(table, op_type)
    ids = _as_ids(ids, op_type)
    grad = convert_to_tensor(grad, dtype=table.dtype.base_dtype)
    hyper = [convert_to_tensor(h, dtype=table.dtype.base_dtype) for h in hyper]
    for h in hyper:
        if h.get_shape().ndims not in (None, 0):
            raise ValueError("%s: hyperparameters must be scalars, got %s of shape %s"
                             % (op_type, h.name, h.get_shape()))
    return make_op(op_type, [table] + hyper + [grad, ids], name=name or op_type, **attrs)


def hash_table_sparse_apply_gradient_descent(table, lr, grad, ids, name=None):
    """``row(id) -= lr * sum of grad rows of id`` for each id (rows created if missing)."""
    return _apply_op("HashTableSparseApplyGradientDescent", table, [lr], grad, ids, name)


def hash_table_sparse_apply_momentum(table, lr, grad, ids, momentum, slot_name="momentum",
                                     use_nesterov=False, name=None):
    """TF1's sparse momentum on the rows of ``ids``: ``a = momentum * a + g; row -= lr * a``."""
    return _apply_op("HashTableSparseApplyMomentum", table, [lr, momentum], grad, ids, name,
                     slot_name=slot_name, use_nesterov=bool(use_nesterov))


def hash_table_sparse_apply_adagrad(table, lr, grad, ids, slot_name="accumulator",
                                    initial_accumulator_value=0.1, name=None):
    """TF1's sparse Adagrad on the rows of ``ids``: ``a += g^2; row -= lr * g / sqrt(a)``."""
    return _apply_op("HashTableSparseApplyAdagrad", table, [lr], grad, ids, name,
                     slot_name=slot_name,
                     initial_accumulator_value=float(initial_accumulator_value))


def hash_table_sparse_apply_adam(table, lr, beta1, beta2, epsilon, grad, ids, slot_prefix="Adam",
                                 name=None):
    """Lazy Adam on the rows of ``ids``, bias-corrected with each row's own step count."""
    return _apply_op("HashTableSparseApplyAdam", table, [lr, beta1, beta2, epsilon], grad, ids,
                     name, slot_prefix=slot_prefix)


# -- export / import (checkpoints) --------------------------------------------------------------------
def slot_specs_of(slot_specs):
    return tuple((str(n), float(i) if not c else int(i), bool(c)) for n, i, c in slot_specs)


def _export_kernel(ctx, table, slot_specs):
    t = _table(ctx, table)
    with t.lock:
        return t.export(slot_specs)


def _export_dtypes(op):
    dt = op.inputs[0].dtype.base_dtype
    return [_dtypes.int64, dt, _dtypes.int64, _dtypes.int64] + [
        _dtypes.int64 if c else dt for _, _, c in op._attrs["slot_specs"]]


def _export_shapes(op):
    dim = op.inputs[0].get_shape()[1]
    return [TensorShape([None]), TensorShape([None, dim]), TensorShape([None]), TensorShape([None])] + [
        TensorShape([None]) if c else TensorShape([None, dim]) for _, _, c in op._attrs["slot_specs"]]


register_op("HashTableExport", dtype=_export_dtypes, shape=_export_shapes, kernel=_export_kernel,
            ref_inputs=(0,), stateful=True, grad=None)


def hash_table_export(table, slot_specs=(), name=None):
    """``[keys, values, clock, count, *slots]`` of the shard's rows (slots as ``slot_specs``:
    ``(name, initial value, is_counter)``; a slot not created yet exports its initial value)."""
    _check_table_ref(table, "hash_table_export")
    specs = slot_specs_of(slot_specs)
    return make_op("HashTableExport", [table], name=name or "HashTableExport",
                   num_outputs=4 + len(specs), slot_specs=specs)


def _import_kernel(ctx, table, keys, values, clock, count, *slot_values, slot_specs):
    t = _table(ctx, table, check_initialized=False)
    if len(slot_values) != len(slot_specs):
        raise errors.InvalidArgumentError(None, None, "hash table %s: %d slot values for %d slots"
                                          % (t.name, len(slot_values), len(slot_specs)))
    with t.lock:
        t.load(keys, values, np.asarray(clock, np.int64), np.asarray(count, np.int64),
               slot_values, slot_specs)


register_op("HashTableImport", kernel=_import_kernel, num_outputs=0, ref_inputs=(0,),
            stateful=True, grad=None)


def hash_table_import(table, keys, values, clock, count, slots=(), slot_specs=(), name=None):
    """Replace the shard's rows with exported ones; ids of other shards are skipped (so the
    export of a table with another number of shards can be imported into every shard)."""
    _check_table_ref(table, "hash_table_import")
    specs = slot_specs_of(slot_specs)
    inputs = [table, convert_to_tensor(keys, dtype=_dtypes.int64),
              convert_to_tensor(values, dtype=table.dtype.base_dtype),
              convert_to_tensor(clock, dtype=_dtypes.int64),
              convert_to_tensor(count, dtype=_dtypes.int64)]
    inputs += [convert_to_tensor(v) for v in slots]
    return make_op("HashTableImport", inputs, name=name or "HashTableImport", slot_specs=specs)


def _saved_parts(reader, table_name):
    """The shard indices ``0..n-1`` the checkpoint holds for table ``table_name``."""
    import re

    pattern = re.compile(re.escape(table_name) + r"/part_(\d+)/keys$")
    parts = sorted(int(m.group(1)) for m in map(pattern.match, reader.get_variable_to_shape_map())
                   if m)
    if not parts:
        raise errors.NotFoundError(
            None, None, "Key %s/part_0/keys not found in checkpoint %s: it holds no hash table %s"
            % (table_name, reader.prefix, table_name))
    if parts != list(range(len(parts))):
        raise errors.NotFoundError(None, None, "Checkpoint %s holds shards %s of hash table %s: "
                                   "some are missing" % (reader.prefix, parts, table_name))
    return len(parts)


def _restore_kernel(ctx, table, prefix, table_name, slot_specs):
    from zps.framework import checkpoint_format  # framework: below ops, read at run time only

    t = _table(ctx, table, check_initialized=False)
    path = prefix.item() if hasattr(prefix, "item") else prefix
    path = path.decode("utf-8") if isinstance(path, bytes) else str(path)
    reader = checkpoint_format.CheckpointReader(path)
    saved = _saved_parts(reader, table_name)
    # Ids are placed by mix64(id) % num_shards: with the same number of shards, saved part i is
    # exactly this table's shard i; with another, every saved part may hold some of this shard's
    # ids, and each keeps those that hash here (rows, clocks, counts and slots alike).
    parts = [t.shard_index] if saved == t.num_shards else range(saved)
    fields = ["values", "clock", "count"] + ["slot/" + n for n, _, _ in slot_specs]
    columns = [[] for _ in range(1 + len(fields))]
    for p in parts:
        base = "%s/part_%d/" % (table_name, p)
        keys = np.asarray(reader.get_tensor(base + "keys"), np.int64)
        mine = None if saved == t.num_shards else np.flatnonzero(
            shard_of(keys, t.num_shards) == t.shard_index)
        columns[0].append(keys if mine is None else keys[mine])
        for col, f in zip(columns[1:], fields):
            v = reader.get_tensor(base + f)
            if len(v) != len(keys):
                raise errors.InvalidArgumentError(
                    None, None, "Checkpoint %s: %s has %d rows but %skeys has %d"
                    % (path, base + f, len(v), base, len(keys)))
            col.append(v if mine is None else v[mine])
    keys, values, clock, count, *slot_values = [np.concatenate(c) for c in columns]
    if values.ndim != 2 or values.shape[1] != t.dim:
        raise errors.InvalidArgumentError(
            None, None, "Checkpoint %s: hash table %s has rows of shape %s, this table's rows "
            "have dim %d" % (path, table_name, list(values.shape[1:]), t.dim))
    with t.lock:
        t.load(keys, values.astype(t.dtype, copy=False), clock.astype(np.int64, copy=False),
               count.astype(np.int64, copy=False), slot_values, slot_specs)


register_op("HashTableRestore", kernel=_restore_kernel, num_outputs=0, ref_inputs=(0,),
            stateful=True, grad=None)


def hash_table_restore(table, prefix, table_name, slot_specs=(), name=None):
    """Load the shard from checkpoint ``prefix`` (a string tensor), from the entries
    ``<table_name>/part_<i>/{keys,values,clock,count,slot/<name>}`` of all saved shards: the
    checkpoint may have been written with any number of shards (the ids are re-hashed to
    this table's shards, their slots and counters with them)."""
    _check_table_ref(table, "hash_table_restore")
    prefix = convert_to_tensor(prefix, dtype=_dtypes.string)
    return make_op("HashTableRestore", [table, prefix], name=name or "HashTableRestore",
                   table_name=str(table_name), slot_specs=slot_specs_of(slot_specs))


__all__ = []  # the public API is zps.contrib.embedding; these ops are its building blocks
