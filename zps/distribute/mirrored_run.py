"""``call_for_each_replica`` of the multi-replica strategies (TF's mirrored_run.py).

Each replica's function runs in its own thread, one thread at a time, in the replica's device
scope, name scope ``replica_<i>/`` (for i > 0), replica context and the caller's default graph,
name scope, variable scope (reusing for i > 0) and variable creators. When a replica calls
``merge_call`` it pauses and the next one runs; when all have paused, the merge function runs
once in the calling thread, in cross-replica context, with the replicas' arguments regrouped
(in replica 0's name scope and variable scope, under every replica's control dependencies);
then each replica resumes, one at a time, with its part of the result.
"""

import contextlib
import re
import threading

from zps.distribute import distribute_lib, values
from zps.framework.graph import get_default_graph
from zps.ops import variable_scope as vs
from zps.ops.variables import _creator_stack


class _RequestedStop(Exception):  # noqa: N818 - TF's name
    pass


def call_for_each_replica(strategy, fn, args, kwargs):
    """Run ``fn`` once per replica of ``strategy`` (its ``extended.worker_devices``) in
    coordinated threads; returns the replicas' results regrouped."""
    devices = strategy.extended.worker_devices
    shared_store = {}
    threads = [_ReplicaThread(strategy, i, devices, fn, _make_shared_creator(shared_store, i),
                              values.select_replica(i, args), values.select_replica(i, kwargs))
               for i in range(len(devices))]
    for t in threads:
        t.start()
    graph = get_default_graph()
    try:
        while True:
            for t in threads:
                t.should_run.set()
                t.has_paused.wait()
                t.has_paused.clear()
                if t.error is not None:
                    raise t.error
            done = [t.done for t in threads]
            if all(done):
                break
            if any(done):
                raise RuntimeError("Some replicas made a different number of "
                                   "replica_context().merge_call() calls.")
            merge_args = values.regroup(tuple(t.merge_args for t in threads))
            merge_kwargs = values.regroup(tuple(t.merge_kwargs for t in threads))
            deps = []
            for t in threads:
                deps.extend(op for op in t.captured_control_deps if op not in deps)
            with _name_scope_exactly(graph, threads[0].captured_name_scope), \
                    graph.control_dependencies(deps), \
                    vs._pure_variable_scope(threads[0].captured_var_scope):
                merge_result = threads[0].merge_fn(strategy, *merge_args, **merge_kwargs)
            for r, t in enumerate(threads):
                t.merge_result = values.select_replica(r, merge_result)
    finally:
        for t in threads:
            t.stop = True
            t.should_run.set()
        for t in threads:
            t.join()
    return values.regroup(tuple(t.main_result for t in threads))


@contextlib.contextmanager
def _name_scope_exactly(graph, scope):
    old = graph._name_stack
    graph._name_stack = scope
    try:
        yield
    finally:
        graph._name_stack = old


class _ReplicaThread(threading.Thread):
    """One replica's run of the function, paused at each merge_call."""

    def __init__(self, strategy, replica_id, devices, fn, creator, args, kwargs):
        super().__init__(name="zps-replica-%d" % replica_id, daemon=True)
        self.strategy = strategy
        self.replica_id = replica_id
        self.devices = devices
        self.main_fn, self.main_args, self.main_kwargs = fn, args, kwargs
        self.creator = creator
        self.main_result = None
        self.done = False
        self.error = None
        self.stop = False
        self.merge_fn = self.merge_args = self.merge_kwargs = self.merge_result = None
        self.captured_name_scope = None
        self.captured_var_scope = None
        self.captured_control_deps = []
        self.should_run = threading.Event()
        self.has_paused = threading.Event()
        # The caller's graph and scopes, carried into the thread.
        self.graph = get_default_graph()
        self.creator_stack = list(_creator_stack(self.graph))
        self.var_scope = vs.get_variable_scope()
        name_scope = self.graph.get_name_scope()
        self.name_scope = name_scope + "/" if name_scope else ""
        if replica_id > 0:
            self.name_scope += "replica_%d/" % replica_id

    def run(self):
        self.should_run.wait()
        self.should_run.clear()
        try:
            if self.stop:
                return
            graph = self.graph
            with graph.as_default():
                _creator_stack(graph)[:] = self.creator_stack
                with _ReplicaContext(self.strategy, self.replica_id), \
                        graph.device(self.devices[self.replica_id]), \
                        graph.name_scope(self.name_scope), \
                        vs._pure_variable_scope(self.var_scope,
                                                reuse=True if self.replica_id > 0 else None), \
                        vs.variable_creator_scope(self.creator):
                    self.main_result = self.main_fn(*self.main_args, **self.main_kwargs)
                    self.done = True
        except _RequestedStop:
            pass
        except BaseException as e:  # noqa: BLE001 - re-raised by the calling thread
            self.error = e
        finally:
            self.has_paused.set()


class _ReplicaContext(distribute_lib.ReplicaContext):
    """The replica context of a threaded replica: merge_call hands over to the caller."""

    def _merge_call(self, merge_fn, args, kwargs):
        t = threading.current_thread()
        if not isinstance(t, _ReplicaThread):
            raise RuntimeError("merge_call of a replica context must be called from its "
                               "replica function's thread")
        t.merge_fn, t.merge_args, t.merge_kwargs = merge_fn, args, kwargs
        t.captured_name_scope = t.graph._name_stack
        t.captured_var_scope = vs.get_variable_scope()
        t.captured_control_deps = list(t.graph._current_control_inputs())
        t.has_paused.set()
        t.should_run.wait()
        t.should_run.clear()
        if t.stop:
            raise _RequestedStop()
        return t.merge_result


_UNIQUIFYING = re.compile(r"_\d/")
_UNIQUIFYING_AT_END = re.compile(r"_\d$")


def _canonical_variable_name(name):
    if name is None:
        return "Variable"
    return _UNIQUIFYING_AT_END.sub("", _UNIQUIFYING.sub("/", name))


def _make_shared_creator(store, replica_id):
    """TF's shared_variable_creator: replica 0 creates variables; replica i > 0 gets the one
    replica 0 made under the same (de-uniquified) name, in order."""
    if replica_id == 0:
        def create_new_variable(next_creator, **kwargs):
            v = next_creator(**kwargs)
            store.setdefault(_canonical_variable_name(kwargs.get("name")), []).append(v)
            return v
        return create_new_variable
    index = {}

    def reuse_variable(next_creator, **kwargs):
        name = kwargs.get("name")
        key = _canonical_variable_name(name)
        i = index.get(key, 0)
        try:
            v = store[key][i]
        except (KeyError, IndexError):
            raise RuntimeError(f"Tried to create variable {name} with mismatching name on device {replica_id}"
                               ) from None
        index[key] = i + 1
        return v
    return reuse_variable


__all__ = []
