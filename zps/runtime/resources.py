"""The resource manager of a task: variables, random generators, queues and accumulators.

Every session on a task shares one ResourceManager (a local ``Session('')`` has its own), so
variables placed on a ps task are shared by all the workers that step against it. Containers
carry a lock: update kernels hold it so concurrent ``assign_add``s are never lost.
"""

import threading

import numpy as np

from zps.framework import errors


class VariableContainer:
    """The storage of one variable: ``value`` is an ndarray, or None until initialized."""

    __slots__ = ("name", "value", "lock")

    def __init__(self, name):
        self.name = name
        self.value = None
        self.lock = threading.Lock()

    def read(self):
        value = self.value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, "Attempting to use uninitialized value %s: run its initializer first "
                "(e.g. sess.run(tf.global_variables_initializer()))." % self.name)
        return value

    @property
    def initialized(self):
        return self.value is not None

    def __repr__(self):
        state = "uninitialized" if self.value is None else "%s%s" % (self.value.dtype, self.value.shape)
        return "<VariableContainer %s %s>" % (self.name, state)


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
