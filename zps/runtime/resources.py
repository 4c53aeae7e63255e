"""The resource manager of a task: variables, random generators, queues and accumulators.

Every session on a task shares one ResourceManager (a local ``Session('')`` has its own), so
variables placed on a ps task are shared by all the workers that step against it. Containers
carry a lock: update kernels hold it so concurrent ``assign_add``s are never lost.

A read of a variable hands out its array itself (no copy). For a ref variable (TF1's default)
later in-place updates show through such a read; a resource variable (``use_resource=True``)
reads snapshots, as TF's: an update finding its array still held by a read -- a step's value or
a view of it, a fetch, a queued element, a zero-copy send in flight -- updates a copy instead
(``VariableContainer.writable``), as TF's kernels copy a buffer whose refcount is not one. A
training step's reads are dead by the time its optimizer applies, so it copies nothing.
"""

import sys
import threading

import numpy as np

from zps.framework import errors


class VariableContainer:
    """The storage of one variable: ``value`` is an ndarray, or None until initialized;
    ``copy_on_write`` marks a resource variable (set by its assigns: see the module doc)."""

    __slots__ = ("name", "value", "lock", "copy_on_write")

    def __init__(self, name):
        self.name = name
        self.value = None
        self.lock = threading.Lock()
        self.copy_on_write = False

    def read(self):
        value = self.value
        if value is None:
            self._uninitialized()
        return value

    def writable(self):
        """The array to update in place: for a resource variable whose array a read still holds,
        a copy of it, which becomes the variable's value (the read keeps the old one)."""
        if self.in_use():
            self.value = self.read().copy()
        return self.read()

    def in_use(self):
        """Whether a read of this resource variable still holds its array (then an update
        that replaces the whole value writes a new array instead)."""
        return self.copy_on_write and self._refs() > _ALONE

    def _refs(self):
        # Views hold their base: a reshape or slice of a read counts as the read.
        value = self.value
        return sys.getrefcount(value)

    def _uninitialized(self):
        raise errors.FailedPreconditionError(
            None, None, "Attempting to use uninitialized value %s: run its initializer first "
            "(e.g. sess.run(tf.global_variables_initializer()))." % self.name)

    @property
    def initialized(self):
        return self.value is not None

    def __repr__(self):
        state = "uninitialized" if self.value is None else "%s%s" % (self.value.dtype, self.value.shape)
        return "<VariableContainer %s %s>" % (self.name, state)


def _refs_alone():
    # What _refs counts for an array held by nothing but its container (3 on CPython 3.11: the
    # container, the local and getrefcount's argument; interpreters may count fewer).
    container = VariableContainer("")
    container.value = np.empty(0)
    return container._refs()


_ALONE = _refs_alone()


class ResourceManager:
    """Named stateful resources of one task, safe to use from concurrent steps."""

    def __init__(self):
        self._lock = threading.Lock()
        self._variables = {}
        self._generators = {}
        self._resources = {}

    def variable(self, name):
        """The container of variable ``name``, created (uninitialized) on first use."""
        c = self._variables.get(name)
        if c is None:
            with self._lock:
                c = self._variables.setdefault(name, VariableContainer(name))
        return c

    def variables(self):
        return dict(self._variables)

    def generator(self, key, seed, seed2):
        """A per-op random generator, kept across steps: a seeded op gives a reproducible sequence."""
        gen = self._generators.get(key)
        if gen is None:
            with self._lock:
                gen = self._generators.get(key)
                if gen is None:
                    entropy = (seed, seed2) if (seed or seed2) else None
                    gen = np.random.Generator(np.random.PCG64(entropy))
                    self._generators[key] = gen
        return gen

    def lookup_or_create(self, kind, name, factory):
        """A shared resource (queue, accumulator ...) of ``kind``/``name``, built once by ``factory``."""
        key = (kind, name)
        r = self._resources.get(key)
        if r is None:
            with self._lock:
                r = self._resources.get(key)
                if r is None:
                    r = self._resources[key] = factory()
        return r

    def resources(self, kind=None):
        return {k: v for k, v in self._resources.items() if kind is None or k[0] == kind}

    def close(self):
        """Cancel blocking resources (queues, accumulators) so waiting steps end."""
        for r in list(self._resources.values()):
            close = getattr(r, "cancel", None)
            if close is not None:
                close()
