"""Plans of one graph, made once per (feeds, fetches, targets) and reused for every step."""

import threading


class PlanCache:
    """``cache.get(feeds, fetches, targets)`` returns ``make(feeds, fetches, targets)``, made once.

    A plan stays valid until the graph's structure changes (e.g. a control input added to an
    existing op); adding new ops does not invalidate it.
    """

    def __init__(self, graph, make):
        self._graph = graph
        self._make = make
        self._plans = {}
        self._lock = threading.Lock()

    def _key(self, feeds, fetches, targets):
        return (tuple(feeds), tuple(fetches), tuple(targets), self._graph._structure_version)

    def get(self, feeds, fetches, targets):
        key = self._key(feeds, fetches, targets)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._plans[key] = self._make(feeds, fetches, targets)
        return plan

    def discard(self, feeds, fetches, targets):
        self._plans.pop(self._key(feeds, fetches, targets), None)

    def values(self):
        return list(self._plans.values())

    def clear(self):
        self._plans.clear()

    def __len__(self):
        return len(self._plans)
