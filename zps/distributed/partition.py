"""Split the pruned graph of one step into per-task partitions joined by ``_Send``/``_Recv``.

Every op is assigned to a task (its device's job and task; the master's task when unplaced; the
task of a variable for ops that update it, as TF's placer does for reference edges). Each edge
between tasks gets one ``_Send`` on the producer's task and one ``_Recv`` on the consumer's,
shared by all consumers on that task; control edges between tasks carry an empty token. Small
edges between two tasks whose values are ready together share one ``_SendN`` / ``_RecvN``
(``_transfer_groups``). Fed tensors become placeholders in every partition that reads them;
constants, and values known when the graph is built (a static shape, a size), become a constant
in every partition that reads them, so they are never sent.
"""

import collections
import itertools

import numpy as np

from zps.distributed import transfer_ops  # noqa: F401 - registers _Send/_Recv
from zps.framework import dtypes, errors
from zps.framework.constant import constant_value
from zps.framework.device import DeviceSpec
from zps.framework.graph import Graph, Operation
from zps.runtime.executor import prune


class Task(collections.namedtuple("Task", ["job", "index"])):
    """A task of the cluster; ``str(task)`` is its device prefix ``/job:ps/replica:0/task:1``."""

    __slots__ = ()

    def __str__(self):
        return "/job:%s/replica:0/task:%d" % (self.job, self.index)


class Partition:
    """The part of one step that runs on one task."""

    def __init__(self, task):
        self.task = task
        self.graph = Graph()
        self.feeds = {}          # placeholder name in this graph -> index into the step's feeds
        self.fetches = []        # (index into the step's fetches, tensor name in this graph)
        self.targets = []        # op names in this graph that must run
        self.mapped = {}         # source Tensor -> Tensor in this graph
        self.mapped_ops = {}     # source Operation -> Operation in this graph

    def add(self, op_type, inputs, attrs, name, control_inputs=(), num_outputs=None):
        g = self.graph
        with g.control_dependencies(list(control_inputs)):
            return g.create_op(op_type, inputs, attrs, name=name, num_outputs=num_outputs)

    def __repr__(self):
        return "<Partition %s: %d ops>" % (self.task, len(self.graph.get_operations()))


def task_of_device(device, default_task):
    d = DeviceSpec.from_string(device or "")
    if d.job is None:
        return default_task
    if d.task is None:
        return Task(d.job, default_task.index if d.job == default_task.job else 0)
    return Task(d.job, d.task)


def assign_tasks(ops, default_task, known_tasks=None):
    """Map each op to its Task, honouring colocation and reference edges."""
    by_name = {op.name: op for op in ops}
    task = {}
    for op in ops:
        target = by_name.get(op._colocation[0]) if op._colocation else None
        device = target.device if target is not None else op.device
        task[op] = task_of_device(device, default_task)
    for op in ops:  # updates of a variable run where the variable lives (topological order)
        for i in op.op_def.ref_inputs:
            if i < len(op._inputs) and op._inputs[i].op in task:
                task[op] = task[op._inputs[i].op]
    # Unplaced constants go where all their consumers are (TF's placer does the same for
    # generator nodes), so `assign_add(ps_var, 1.0)` sends nothing from the worker.
    consumers = {}
    for op in ops:
        for t in op._inputs:
            consumers.setdefault(t.op, set()).add(task[op])
    for op, where in consumers.items():
        if op.type == "Const" and not op.device and not op._colocation and len(where) == 1:
            task[op] = next(iter(where))
    _move_control_only_noops(ops, task)
    if known_tasks is not None:
        for op, t in task.items():
            if t not in known_tasks:
                jobs = sorted({k.job for k in known_tasks})
                raise errors.InvalidArgumentError(
                    op.name, op, "Cannot place op '%s' on %s: the cluster has no such task "
                    "(jobs: %s). Fix the op's device or the cluster spec." % (op.name, t, jobs))
    return task


def _move_control_only_noops(ops, task):
    """A NoOp only orders other ops, so it may run on any task: it runs on the task that needs
    the fewest control messages between tasks (each op it waits for on another task sends it one,
    and it sends one to each other task with ops waiting for it), staying where it was placed on a
    tie. The common case is TF1's optimizer ``update`` NoOp, made under the worker's device scope
    between the ps's apply ops and the global-step increment on ps 0: with variables on two ps
    tasks it moves to ps 0, and the step's last control messages go ps 1 -> ps 0 instead of
    ps 0 + ps 1 -> worker -> ps 0 (one hop less on every training step's critical path)."""
    waiting = {}
    for op in ops:
        for c in op._control_inputs:
            waiting.setdefault(c, []).append(op)
    for op in ops:   # topological order: a NoOp waiting for a moved NoOp sees its new task
        if op.type != "NoOp" or op._colocation or not op._control_inputs:
            continue
        sources = [task[c] for c in op._control_inputs if c in task]
        sinks = {task[w] for w in waiting.get(op, ())}

        def messages(t):
            return sum(1 for s in sources if s != t) + len(sinks - {t})

        best = task[op]
        fewest = messages(best)
        for t in sorted(set(sources) | sinks, key=str):
            n = messages(t)
            if n < fewest:
                best, fewest = t, n
        task[op] = best


def partition(feeds, fetches, targets, default_task, known_tasks=None, soft_placement=False):
    """Partitions of the step computing ``fetches`` and running ``targets`` given ``feeds``.

    Returns ``{Task: Partition}`` for the tasks the step touches (and only those).
    ``soft_placement`` (the session's ``allow_soft_placement``) marks the ops on GPUs with the
    ``_soft_placement`` attr, so the task that runs one puts it on its CPU if it cannot use the GPU.
    """
    fed = {t: i for i, t in enumerate(feeds)}
    ops = prune(fetches, targets, set(fed))
    task = assign_tasks(ops, default_task, known_tasks)
    folded = _folded_ops(ops, targets)
    parts = {}

    def part(t):
        p = parts.get(t)
        if p is None:
            p = parts[t] = Partition(t)
        return p

    transfers = {}  # (source tensor or op, destination task) -> _Recv output there
    grouped, groups = _transfer_groups(ops, task, fed, folded)
    group_recvs = {}   # group -> its _RecvN
    group_values = {}  # group -> [make_value of each transfer]: its _SendN is made last

    def transfer(source, src, dst, label, dtype, shape, make_value):
        """One _Send on ``src`` and one _Recv on ``dst`` for ``source``, shared by all its
        consumers on ``dst``; ``make_value(src_partition)`` builds the value to send. A transfer
        of a group (``_transfer_groups``) is an output of the group's _RecvN instead."""
        recv = transfers.get((source, dst))
        if recv is not None:
            return recv
        if (source, dst) in grouped:
            group, i = grouped[(source, dst)]
            recv_n = group_recvs.get(group)
            if recv_n is None:
                sources = groups[group]
                wire = "%s->%s:%s+%d" % (src, dst, label, len(sources))
                recv_n = group_recvs[group] = part(dst).add(
                    "_RecvN", [], {"key": wire, "src": str(src), "dtypes": [
                        _TOKEN_DTYPE if isinstance(s, Operation) else s.dtype for s in sources],
                        "shapes": [() if isinstance(s, Operation) else _shape_attr(s)
                                   for s in sources]},
                    "_recv/%s_%d/%s" % (_safe(label), len(sources), _safe(str(src))),
                    num_outputs=len(sources))
                group_values[group] = (src, {"key": wire, "dst": str(dst)}, "_send/%s_%d/%s" % (
                    _safe(label), len(sources), _safe(str(dst))), [None] * len(sources))
            group_values[group][3][i] = make_value
            recv = recv_n.outputs[i]
        else:
            wire = "%s->%s:%s" % (src, dst, label)
            sp = part(src)
            send = sp.add("_Send", [make_value(sp)], {"key": wire, "dst": str(dst)},
                          "_send/%s/%s" % (_safe(label), _safe(str(dst))))
            sp.targets.append(send.name)
            recv = part(dst).add("_Recv", [], {"key": wire, "src": str(src), "dtype": dtype,
                                               "shape": shape},
                                 "_recv/%s/%s" % (_safe(label), _safe(str(src)))).outputs[0]
        transfers[(source, dst)] = recv
        return recv

    def place(new, op, p):
        """``new`` (``op`` in partition ``p``) runs on ``p``'s task (an update of a variable
        moves to the variable's task whatever the device scope said), and its device says so."""
        new._device = op.device if task_of_device(op.device, default_task) == p.task \
            else str(p.task)
        new._colocation = list(op._colocation)
        if soft_placement and "GPU" in new._device:
            new._attrs = dict(new._attrs, _soft_placement=True)

    def value_in(p, t):
        if t in fed:
            ph = p.mapped.get(t)
            if ph is None:
                name = "_feed_%d" % fed[t]
                ph = p.add("Placeholder", [], {"dtype": t.dtype, "shape": _shape_attr(t)}, name)
                ph = ph.outputs[0]
                p.feeds[ph.op.name] = fed[t]
                p.mapped[t] = ph
            return ph
        if t.op in folded:
            # A constant (or a value known when the graph is built: a shape, a size) is a copy
            # in each partition that reads it, not a transfer on every step: an optimizer's
            # learning rate read by the apply ops of every ps; the static shape of a ps table,
            # which the gradient of an embedding lookup takes where the table lives and the
            # worker reads (TF1 folds it when the graph is built); `tf.shape(ps_table)` on a
            # worker, which would otherwise pull the whole table.
            copy = p.mapped.get(t)
            if copy is None:
                const = p.add("Const", [], folded[t.op], t.op.name + "/")
                if task[t.op] == p.task:
                    place(const, t.op, p)   # where the op would have run (its GPU, say)
                else:
                    const._device = str(p.task)   # a copy: not colocated with the original's
                copy = p.mapped[t] = const.outputs[0]
            return copy
        src = task[t.op]
        if src == p.task:
            return p.mapped[t]
        return transfer(t, src, p.task, t.name, t.dtype, _shape_attr(t),
                        lambda sp: sp.mapped[t])

    def control_in(p, c):
        src = task[c]
        if src == p.task:
            return p.mapped_ops[c]

        def token(sp):  # an empty value that exists only once c has run
            return sp.add("Const", [], {"value": _TOKEN, "dtype": _TOKEN_DTYPE},
                          "_token/%s/%s" % (_safe(c.name), _safe(str(p.task))),
                          control_inputs=[sp.mapped_ops[c]]).outputs[0]

        return transfer(c, src, p.task, "^" + c.name, _TOKEN_DTYPE, (), token).op

    for op in ops:
        if op in folded:
            continue   # a constant in each partition that reads it (value_in)
        p = part(task[op])
        inputs = [value_in(p, t) for t in op._inputs]
        controls = [control_in(p, c) for c in op._control_inputs]
        new = p.add(op.type, inputs, op._attrs, op.name + "/", control_inputs=controls,
                    num_outputs=len(op._outputs))
        place(new, op, p)
        p.mapped_ops[op] = new
        for src_t, dst_t in zip(op._outputs, new._outputs):
            p.mapped[src_t] = dst_t

    for src, attrs, name, make_values in group_values.values():
        # After every op, when the source partition holds each value of the group.
        sp = part(src)
        send = sp.add("_SendN", [make(sp) for make in make_values], attrs, name)
        sp.targets.append(send.name)

    for i, t in enumerate(fetches):
        if t not in fed:
            # A value known when the graph is built is fetched from the master's own task.
            p = part(default_task if t.op in folded else task[t.op])
            p.fetches.append((i, value_in(p, t).name))
    for op in targets:
        p = parts[task[op]]
        p.targets.append(p.mapped_ops[op].name)
    for t, p in list(parts.items()):
        if not p.targets and not p.fetches:
            del parts[t]   # e.g. only a shape the others took as a constant: nothing to run
        else:
            _mark_streamable(p)
    return parts


# Transfers from one task to another whose values are ready together travel as one group: one
# _SendN, one _RecvN, one rendezvous key and one entry of a message's keys instead of a _Send, a
# _Recv and a key each, which cost ~10 us a transfer of the two sides' Python (a thousand 16 KB
# variables pulled and pushed back by a worker, tools/bench_scaling.py: 42-49 -> 21-26 ms a step).
# Only small transfers are grouped (the larger travel zero-copy, and a large one goes out the
# moment it is ready, so that its receiver works on it while the sender computes on), and a
# group is bounded so that the receiver works on one while the next is made.
GROUP_TENSOR_BYTES = 64 << 10   # a transfer of more bytes than this (or of unknown size) goes alone
GROUP_BYTES = 2 << 20           # a group holds at most this many bytes
GROUP_SIZE = 128                # and at most this many transfers


def _transfer_groups(ops, task, fed, folded):
    """The transfers the partitions will make (as ``partition`` does: an input or control input
    of an op on another task, not fed nor folded) that travel in groups of two or more:
    ``({(source, destination task): (group, index in it)}, {group: [source, ...]})``.

    Two transfers between the same two tasks share a group only if they wait for the same
    things: the ops that may wait (asynchronous ops: a _Recv, a blocking dequeue) on the source
    task that one's value depends on, the other's depends on too, and in turn their transfers
    from other tasks. Both values are then ready in the same wave of the source partition, with
    nothing to wait for between them: sending them together holds neither back until something
    that may need what the other sends (a group cannot deadlock where its transfers alone would
    not), and the grouped recvs arrive together as their sends leave together.
    """
    waits = {}         # op -> frozenset of what its value waits for on its task
    group_of = {}      # (source, destination) -> group
    members = collections.defaultdict(list)
    filling = {}       # (source task, destination task, waits) -> (group being filled, bytes)
    ids = itertools.count()

    def transfer(source, src, dst):
        placed = group_of.get((source, dst))
        if placed is None:
            nbytes = _static_bytes(source)
            if nbytes is None or nbytes > GROUP_TENSOR_BYTES:
                group = next(ids)   # alone
            else:
                slot = (src, dst, waits[source if isinstance(source, Operation) else source.op])
                group, used = filling.get(slot, (None, 0))
                if group is None or used + nbytes > GROUP_BYTES \
                        or len(members[group]) >= GROUP_SIZE:
                    group, used = next(ids), 0
                filling[slot] = (group, used + nbytes)
            placed = group_of[(source, dst)] = (group, len(members[group]))
            members[group].append(source)
        return frozenset(placed[:1])

    for op in ops:
        if op in folded:
            continue
        here = task[op]
        w = _NOTHING
        for t in op._inputs:
            if t not in fed and t.op not in folded:
                src = task[t.op]
                w = _union(w, waits[t.op] if src == here else transfer(t, src, here))
        for c in op._control_inputs:
            src = task[c]
            w = _union(w, waits[c] if src == here else transfer(c, src, here))
        waits[op] = w | {op} if op.op_def.is_async else w
    grouped = {key: placed for key, placed in group_of.items() if len(members[placed[0]]) > 1}
    return grouped, {group: members[group] for group, _ in grouped.values()}


_NOTHING = frozenset()


def _union(a, b):
    if a is b or not b:
        return a
    return b if not a else a | b


def _static_bytes(source):
    """The bytes a transfer of ``source`` (a tensor, or an op for a control token) carries, as
    its static shape says; None where unknown (or of strings)."""
    if isinstance(source, Operation):
        return _TOKEN.nbytes
    shape, size = source.get_shape(), source.dtype.base_dtype.size
    if not size or not shape.is_fully_defined():
        return None
    return shape.num_elements() * size


def _folded_ops(ops, targets):
    """``{op: attrs of the Const that replaces it}`` for the ops of ``ops`` (topological order)
    whose value is known when the graph is built: constants and what ``constant_value`` folds
    (shapes, sizes, ranges of known bounds). Not an op that waits for or orders others (control
    edges), nor a target; nor one whose value derives from the static shape of a variable that an
    op of the graph (in this step or not) assigns with ``validate_shape=False``, since its shape
    may change: a step across tasks then sees the shapes a local run sees."""
    if not ops:
        return {}
    ordering = {c for op in ops for c in op._control_inputs} | set(targets)
    reshaped = {op._inputs[0].op for op in ops[0].graph.get_operations()
                if op.type == "Assign" and op._attrs.get("validate_shape") is False}
    stale, folded = set(), {}
    for op in ops:
        if op in reshaped or any(t.op in stale for t in op._inputs):
            stale.add(op)
        elif len(op._outputs) == 1 and not op._control_inputs and op not in ordering:
            if op.type == "Const":
                folded[op] = op._attrs
            else:
                value = constant_value(op._outputs[0])
                if value is not None:
                    value = np.array(value, dtype=op._outputs[0].dtype.as_numpy_dtype)
                    value.flags.writeable = False
                    folded[op] = {"value": value, "dtype": op._outputs[0].dtype}
    return folded


def streams_into_update(t, fetched=()):
    """Whether tensor ``t``'s only reader applies it in place on the host, element by element
    (its OpDef's ``streams_input``: AssignAdd, AssignSub, ApplyGradientDescent), so that it may
    be handed over while it still streams in (zps.transport.codec.Incoming): a large push is
    applied as it arrives."""
    if t.name in fetched:
        return False
    readers = t.consumers()
    if len(readers) != 1 or "GPU" in readers[0].device:
        return False
    reader = readers[0]
    return [i for i, x in enumerate(reader.inputs) if x is t] == [reader.op_def.streams_input]


def _mark_streamable(p):
    """Mark the _Recvs whose tensor may be taken while it streams in (``stream_ok``)."""
    fetched = {name for _, name in p.fetches}
    for op in p.graph.get_operations():
        if op.type == "_Recv" and streams_into_update(op.outputs[0], fetched):
            op._attrs = dict(op._attrs, stream_ok=True)


def _shape_attr(t):
    s = t.get_shape()
    return None if s.ndims is None else tuple(s.as_list())


def _safe(name):
    return name.replace(":", "_").replace("/", "_").lstrip("_^") or "x"


_TOKEN = np.zeros((), dtype=np.int8)
_TOKEN.flags.writeable = False
_TOKEN_DTYPE = dtypes.int8
