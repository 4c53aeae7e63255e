"""Control ops: ``no_op``, ``group``, ``tuple``, ``with_dependencies``, ``cond``, ``case``,
initialized-value select."""

import builtins
import collections
import threading

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.device import DeviceSpec
from zps.framework.graph import (
    Graph,
    IndexedSlices,
    Operation,
    convert_to_tensor,
    get_default_graph,
)
from zps.framework.registry import register_op
from zps.framework.serialization import import_graph_def, node_to_def
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops
from zps.ops.op_util import make_op

register_op("NoOp", kernel=lambda ctx: None, num_outputs=0, grad=None)


def no_op(name=None):
    """An op that does nothing; useful as a target carrying control dependencies."""
    return make_op("NoOp", [], name=name or "NoOp")


def group(*inputs, **kwargs):
    """An op that runs all ``inputs`` (ops or tensors) and outputs nothing."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("group() got unexpected keyword arguments: %s" % ", ".join(kwargs))
    deps = []
    for i in inputs:
        if isinstance(i, list | builtins.tuple):
            deps.extend(i)
        else:
            deps.append(i)
    graph = get_default_graph()
    with graph.control_dependencies([d for d in deps if d is not None]):
        return no_op(name=name or "group_deps")


def with_dependencies(dependencies, output_tensor, name=None):
    """``output_tensor``'s value, computed only after ``dependencies`` ran."""
    graph = get_default_graph()
    with graph.control_dependencies(dependencies):
        out = convert_to_tensor(output_tensor)
        return array_ops.identity(out, name=name)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF1's public name
    """The same values (Tensors, IndexedSlices, ops), each available only after all are computed.

    Each gated value is an identity colocated with its input, so gating never moves data.
    """
    graph = get_default_graph()
    present = [t for t in tensors if t is not None]
    with graph.name_scope(name or "tuple"):
        gate = group(*[_op_of(t) for t in present], *(control_inputs or []))
        out = []
        for t in tensors:
            if t is None or isinstance(t, Operation):
                out.append(t if t is None else group(gate, t))
            elif isinstance(t, IndexedSlices):
                out.append(IndexedSlices(_gated(graph, t.values, gate), t.indices, t.dense_shape))
            else:
                out.append(_gated(graph, convert_to_tensor(t), gate))
    return out


def _op_of(t):
    if isinstance(t, Operation):
        return t
    return t.values.op if isinstance(t, IndexedSlices) else convert_to_tensor(t).op


def _gated(graph, t, gate):
    with graph.colocate_with(t.op), graph.control_dependencies([gate]):
        return array_ops.identity(t, name="control_dependency")


def _initialized_value_kernel(ctx, ref, initial_value):
    return ref.value if ref.initialized else initial_value


register_op("InitializedValue", shape=lambda op: op.inputs[1].get_shape(),
            dtype=lambda op: op.inputs[1].dtype, kernel=_initialized_value_kernel,
            ref_inputs=(0,), aliases_input=True, grad=None)


def cond_initialized(variable):
    """The variable's value if it is initialized, else its initial value (no side effects)."""
    return make_op("InitializedValue", [variable._ref(), variable.initial_value],
                   name=variable.op.name + "/initialized_value")

# -- tf.cond: a functional If ------------------------------------------------------------------
# A branch is built in the caller's graph, so its ops keep TF1's names (cond/mul) and tf.gradients
# sees them, and is also kept as plain data in the If op's attrs: its ops, the outer tensors it
# reads (inputs of the If) and its outputs. The If's kernel runs only the branch ``pred`` selects,
# as a private graph fed with those inputs (StepContext.run_subgraph), so the other branch's ops
# and their side effects never run, as in TF1. Nothing outside a branch reads its ops, so no plan
# of the outer graph runs them, and they cannot be fetched. The If ships to other tasks like any
# op (its attrs are plain data).
#
# Gradients: the If's gradient is another If on the same predicate whose branches are the
# gradients of the forward branches. Values of a forward branch that its gradient needs are kept
# by the forward If in the step (``ctx.extras``) and fed to the gradient's branch, so nothing of
# the forward branch runs twice (a dropout mask in a branch is the one the forward pass drew).

_STASH = "cond_values"   # ctx.extras key: forward If name -> {tensor name: value}
_PRIVATE = collections.OrderedDict()   # id(branch attr) -> (branch, key, feeds, fetches)
_PRIVATE_LOCK = threading.Lock()
MAX_PRIVATE_GRAPHS = 1024


def _if_kernel(ctx, pred, *inputs, Tout, output_shapes, Tin, then_branch, else_branch,  # noqa: N803
               stash_of, built_as, op_name):
    if getattr(pred, "ndim", 0) != 0:
        raise errors.InvalidArgumentError(
            op_name, None, "The predicate of cond %s must be a scalar bool; got shape %s"
            % (op_name, list(pred.shape)))
    branch = then_branch if bool(pred) else else_branch
    feeds, fetches = _private_graph(branch, Tin)
    values = [inputs[k] for k, _ in branch["inputs"]]
    if branch["restore"]:
        # The forward If's name here: names get a prefix when a graph is imported under one.
        forward = op_name[:len(op_name) - len(built_as)] + stash_of
        kept = ctx.extras.get(_STASH, {}).get(forward)
        if kept is None:
            raise errors.InternalError(
                op_name, None, "The gradient %s of cond %s ran in a step where that cond did not "
                "run on this task: run the gradient with its cond, on the cond's task"
                % (op_name, forward))
        values += [kept[name] for name, _ in branch["restore"]]
    out = ctx.run_subgraph(feeds, fetches, values)
    n = len(branch["outputs"])
    if branch["keep"]:
        ctx.extras.setdefault(_STASH, {})[op_name] = dict(zip(branch["keep"], out[n:]))
    out = out[:n]
    if not out:
        return None
    return out[0] if n == 1 else out


def _private_graph(branch, tin):
    """The branch as a private graph: (placeholders fed in order, tensors fetched), made once per
    branch (and again when a gradient added values for it to keep)."""
    key = (len(branch["keep"]), branch["version"])
    entry = _PRIVATE.get(id(branch))
    if entry is not None and entry[1] == key:
        return entry[2], entry[3]
    graph = Graph()
    with graph.as_default():
        feeds, input_map = [], {}
        for i, (name, dtype) in enumerate(
                [(name, tin[k]) for k, name in branch["inputs"]] + branch["restore"]):
            ph = array_ops.placeholder(dtype, name="_input_%d" % i)
            feeds.append(ph)
            input_map[name] = ph
        import_graph_def(branch["graph"], input_map=input_map, name="")
        fetches = [graph.get_tensor_by_name(n) for n in branch["outputs"] + branch["keep"]]
    with _PRIVATE_LOCK:
        _PRIVATE[id(branch)] = (branch, key, feeds, fetches)   # holds branch: its id stays its
        while len(_PRIVATE) > MAX_PRIVATE_GRAPHS:
            _PRIVATE.popitem(last=False)
    return feeds, fetches


def _if_grad(op, *out_grads):
    fwd = _conds(op.graph).get(op)
    if fwd is None:
        raise LookupError("No gradient for %s: it was not built by tf.cond in this graph" % op.name)
    from zps.ops import gradients_impl
    graph = op.graph
    xs = [t for t in op._inputs[1:] if t.dtype.is_floating]
    pairs = [(y, g) for y, g in zip(op._outputs, out_grads) if g is not None and y.dtype.is_floating]
    if not xs or not pairs:
        return [None] * len(op._inputs)
    index = {y: i for i, y in enumerate(op._outputs)}
    branches = []
    for _, outputs, _ in fwd:
        def grads_of(outputs=outputs):
            ys = [outputs[index[y]] for y, _ in pairs]
            gs = gradients_impl.gradients(ys, xs, grad_ys=[g for _, g in pairs])
            return [array_ops.zeros_like(x) if g is None else array_ops.densify(g)
                    for x, g in zip(xs, gs)]
        branches.append(_build_branch(graph, grads_of, "gradient"))
    grads = _make_if(graph, op._inputs[0], branches, "If", forward=op, forward_ops=fwd)
    it = iter(grads)
    return [None] + [next(it) if t.dtype.is_floating else None for t in op._inputs[1:]]


register_op("If", dtype=lambda op: list(op._attrs["Tout"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_if_kernel,
            stateful=True, needs_op_name=True, light_ok=False, grad=_if_grad)


def _conds(graph):
    """The Ifs of ``graph`` built by cond: If op -> (ops, outputs, forward ops) of each branch
    (forward ops: those of the forward branch, for a gradient's If)."""
    conds = graph.__dict__.get("_zps_conds")
    if conds is None:
        conds = graph.__dict__.setdefault("_zps_conds", {})
    return conds


def _claimed(graph):
    """The ops of ``graph`` that belong to some If's branch."""
    claimed = graph.__dict__.get("_zps_branch_ops")
    if claimed is None:
        claimed = graph.__dict__.setdefault("_zps_branch_ops", set())
    return claimed


def _build_branch(graph, fn, what):
    """Call ``fn`` recording the ops it creates: (ops, flat outputs, pack(values) -> structure)."""
    start = len(graph._ops_list)
    with graph.control_dependencies(None):
        result = fn()
        if result is None:
            raise ValueError("%s must have a return value." % what)
        flat, pack = _flatten(result)
        outputs = []
        for v in flat:
            if isinstance(v, Operation):   # TF1 returns a bool for it (its branch ran)
                with graph.control_dependencies([v]):
                    outputs.append(array_ops.identity(what != "false_fn"))
            else:
                outputs.append(array_ops.identity(array_ops.densify(convert_to_tensor(v))))
    claimed = _claimed(graph)
    ops = [op for op in graph._ops_list[start:] if op not in claimed]
    for op in ops:
        if op.op_def.ref_output:
            raise ValueError("%s created the variable %s: create variables outside tf.cond (a "
                             "branch runs as a private graph where its cond runs)" % (what, op.name))
    return ops, outputs, pack


def _flatten(value):
    """(flat list of leaves, pack(leaves) -> the same structure) for lists, tuples, namedtuples
    and dicts (sorted keys, as TF1's nest)."""
    if isinstance(value, dict):
        keys = sorted(value)
        parts = [_flatten(value[k]) for k in keys]
        sizes = [len(f) for f, _ in parts]

        def pack(leaves):
            out, i = {}, 0
            for k, (_, p), n in zip(keys, parts, sizes):
                out[k] = p(leaves[i:i + n])
                i += n
            return type(value)((k, out[k]) for k in value)   # the caller's key order
        return [x for f, _ in parts for x in f], pack
    if isinstance(value, list | builtins.tuple):
        parts = [_flatten(v) for v in value]
        sizes = [len(f) for f, _ in parts]

        def pack(leaves):
            items, i = [], 0
            for (_, p), n in zip(parts, sizes):
                items.append(p(leaves[i:i + n]))
                i += n
            if hasattr(value, "_fields"):
                return type(value)(*items)
            return type(value)(items)
        return [x for f, _ in parts for x in f], pack
    return [value], lambda leaves: leaves[0]


def _export(ops, outputs, forward_ops=()):
    """The plain-data form of a branch: its ops as a graph_def with what it reads from outside.

    Returns (branch attr without "inputs", outer tensors read by value, outer ops to wait for,
    forward-branch tensors read). An outer variable the branch updates (a reference input) is
    copied into the graph_def (its container is found by name where the If runs); tensors of
    ``forward_ops`` (a gradient's forward branch) are read from what the forward If kept.
    """
    opset = set(ops)
    forward = set(forward_ops)
    variables = [t.op for op in ops for i, t in enumerate(op._inputs)
                 if i in op.op_def.ref_inputs and t.op.op_def.ref_output and t.op not in opset]
    variables = list(dict.fromkeys(variables))
    inside = opset | set(variables)
    reads, restored, waits = [], [], []
    for op in ops:
        for t in op._inputs:
            if t.op in inside:
                continue
            (restored if t.op in forward else reads).append(t)
        waits.extend(c for c in op._control_inputs if c not in inside and c not in forward)
    nodes = []
    for op in variables + ops:
        node = node_to_def(op)
        node["input"] = [] if op in variables else \
            [n for n in node["input"] if not n.startswith("^") or op.graph.get_operation_by_name(
                n[1:]) in inside]
        nodes.append(node)
    from zps.framework.serialization import VERSIONS
    branch = {"graph": {"versions": dict(VERSIONS), "node": nodes},
              "outputs": [t.name for t in outputs], "keep": [], "version": 0,
              "restore": [[t.name, t.dtype.base_dtype] for t in dict.fromkeys(restored)]}
    return branch, list(dict.fromkeys(reads)), list(dict.fromkeys(waits)), variables


def _merged_shape(a, b):
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return unknown_shape()
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _make_if(graph, pred, branches, name, forward=None, forward_ops=None):
    """Create the If op of two built branches; returns its outputs (list)."""
    (t_ops, t_out, _), (f_ops, f_out, _) = branches
    fwd_ops = [f[0] for f in forward_ops] if forward_ops else [(), ()]
    exports = [_export(ops, outs, fo) for (ops, outs, _), fo in zip(branches, fwd_ops)]
    reads = list(dict.fromkeys([pred] + exports[0][1] + exports[1][1]))[1:]
    if pred in exports[0][1] or pred in exports[1][1]:
        reads = [pred] + reads   # the predicate read inside a branch is an input like any other
    position = {t: k for k, t in enumerate(reads)}
    attrs = {"Tout": [t.dtype.base_dtype for t in t_out],
             "output_shapes": [_merged_shape(a.get_shape(), b.get_shape())
                               for a, b in zip(t_out, f_out)],
             "Tin": [t.dtype.base_dtype for t in reads],
             "stash_of": forward.name if forward is not None else ""}
    for key, (branch, branch_reads, _, _) in zip(("then_branch", "else_branch"), exports):
        branch["inputs"] = [[position[t], t.name] for t in branch_reads]
        attrs[key] = branch
    waits = list(dict.fromkeys(exports[0][2] + exports[1][2] + ([forward] if forward else [])))
    with graph.control_dependencies(waits):
        op = graph.create_op("If", [pred] + reads, attrs, name=name, num_outputs=len(t_out))
    op._attrs["built_as"] = op.name
    for variable in exports[0][3] + exports[1][3]:
        _check_colocated(op, variable)
    claimed, owners = _claimed(graph), _owners(graph)
    for index, (ops, _, _) in enumerate(branches):
        claimed.update(ops)
        for o in ops:
            graph.prevent_fetching(o)
            owners[o] = (op, index)
    _conds(graph)[op] = builtins.tuple((ops, outs, fo) for (ops, outs, _), fo in zip(branches, fwd_ops))
    if forward is not None:   # the forward If keeps what its gradient's branches read
        for (fwd_branch, grad_branch) in zip((forward._attrs["then_branch"],
                                              forward._attrs["else_branch"]),
                                             (attrs["then_branch"], attrs["else_branch"])):
            fwd_branch["keep"].extend(name for name, _ in grad_branch["restore"]
                                      if name not in fwd_branch["keep"])
        _export_again_around(graph, forward)
    return list(op._outputs)


def _owners(graph):
    """Branch op -> (its If, 0 for the true branch or 1 for the false one)."""
    owners = graph.__dict__.get("_zps_branch_owners")
    if owners is None:
        owners = graph.__dict__.setdefault("_zps_branch_owners", {})
    return owners


def _export_again_around(graph, op):
    """``op``'s attrs changed: the branches holding it (a copy of it, in their graph_defs), and
    those holding them, are exported again."""
    owner = _owners(graph).get(op)
    while owner is not None:
        if_op, index = owner
        ops, outputs, fwd_ops = _conds(graph)[if_op][index]
        branch = if_op._attrs[("then_branch", "else_branch")[index]]
        branch["graph"] = _export(ops, outputs, fwd_ops)[0]["graph"]
        branch["version"] += 1   # plans made of the old graph_def are not reused
        owner = _owners(graph).get(if_op)


def _check_colocated(op, variable):
    v, c = DeviceSpec.from_string(variable.device), DeviceSpec.from_string(op.device)
    if v.job is not None and (v.job, v.replica or 0, v.task or 0) != (c.job, c.replica or 0,
                                                                       c.task or 0):
        raise ValueError(
            "tf.cond %s updates the variable %s on %s, but the cond runs on %s: a branch runs "
            "where its cond runs. Build the cond under tf.device(%r), or update the variable "
            "outside the cond." % (op.name, variable.name, variable.device, op.device or "the "
                                   "session's task", variable.device))


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """``true_fn()`` if ``pred`` is true, else ``false_fn()``: only the chosen branch runs.

    ``pred`` is a scalar bool tensor (not a Python bool, as in TF1); both functions return the
    same structure of tensors (lists, tuples, dicts; an Operation becomes a bool tensor, True if
    the true branch ran). Tensors a branch uses from outside are computed before the cond runs;
    ops a branch creates run only when that branch is taken, and only if its result depends on
    them. ``strict`` is accepted (single-element lists are returned as lists either way).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [])
    ...     y = tf.cond(x > 0, lambda: x * 2.0, lambda: -x)
    ...     with tf.Session() as sess:
    ...         print(sess.run(y, {x: 3.0}), sess.run(y, {x: -4.0}))
    6.0 4.0
    """
    true_fn = true_fn if fn1 is None else fn1
    false_fn = false_fn if fn2 is None else fn2
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    pred = convert_to_tensor(pred)
    if pred.dtype.base_dtype != _dtypes.bool:
        raise TypeError("pred of tf.cond must be a bool tensor, got %s (%s)"
                        % (pred.dtype.name, pred.name))
    if pred.get_shape().ndims not in (None, 0):
        raise ValueError("pred of tf.cond must be a scalar, got shape %s (%s)"
                         % (pred.get_shape(), pred.name))
    graph = pred.graph
    with graph.name_scope(name or "cond"):
        built = [_build_branch(graph, fn, what)
                 for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn"))]
        (_, t_out, pack), (_, f_out, f_pack) = built
        probe = object()
        if len(t_out) != len(f_out) or _flatten(pack([probe] * len(t_out)))[0] != \
                _flatten(f_pack([probe] * len(f_out)))[0] or \
                _structure(pack([probe] * len(t_out))) != _structure(f_pack([probe] * len(f_out))):
            raise ValueError("true_fn and false_fn must return the same structure: %d vs %d "
                             "tensors (%s, %s)" % (len(t_out), len(f_out),
                                                   _structure(pack([0] * len(t_out))),
                                                   _structure(f_pack([0] * len(f_out)))))
        for a, b in zip(t_out, f_out):
            if a.dtype.base_dtype != b.dtype.base_dtype:
                raise ValueError("Outputs of true_fn and false_fn must have the same type: %s, %s"
                                 % (a.dtype.name, b.dtype.name))
        return pack(_make_if(graph, pred, built, "If"))


def _structure(value):
    if isinstance(value, dict):
        return (type(value).__name__, builtins.tuple((k, _structure(value[k]))
                                                     for k in sorted(value)))
    if isinstance(value, list | builtins.tuple):
        return (type(value).__name__, builtins.tuple(_structure(v) for v in value))
    return "."


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The result of the function of the first true predicate of ``pred_fn_pairs`` (a list of
    (bool tensor, callable), or a dict), else ``default()``; only that function's ops run.

    Without ``default``, the last pair's function is the default and the step fails
    (InvalidArgumentError) when no predicate is true, as in TF1. ``exclusive=True``
    fails the step when more than one predicate is true.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [])
    ...     y = tf.case([(x > 5, lambda: x), (x > 2, lambda: x * 10)], default=lambda: -x)
    ...     with tf.Session() as sess:
    ...         print([float(sess.run(y, {x: v})) for v in (6.0, 3.0, 1.0)])
    [6.0, 30.0, -1.0]
    """
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    pairs = list(pred_fn_pairs)
    if not pairs:
        raise ValueError("tf.case needs at least one (pred, fn) pair")
    for p, f in pairs:
        if not callable(f):
            raise TypeError("fn for pred %s must be callable." % getattr(p, "name", p))
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    graph = get_default_graph()
    with graph.name_scope(name):
        preds = [convert_to_tensor(p) for p, _ in pairs]
        if exclusive or default is None:
            checked = make_op("CaseCheck", [array_ops.stack(preds)], name="check",
                              exclusive=bool(exclusive), need_one=default is None)
            preds = array_ops.unstack(checked)
        if default is None:
            pairs, (_, default) = pairs[:-1], pairs[-1]

        def chain(i):
            if i == len(pairs):
                return default()
            return cond(preds[i], pairs[i][1], lambda: chain(i + 1))
        return chain(0)


def _case_check_kernel(ctx, preds, exclusive, need_one, op_name):
    count = int(preds.sum())
    if exclusive and count > 1:
        raise errors.InvalidArgumentError(
            op_name, None, "tf.case(exclusive=True): %d conditions are true (%s); at most one may "
            "be" % (count, preds.tolist()))
    if need_one and count == 0:
        raise errors.InvalidArgumentError(
            op_name, None, "tf.case without a default: none of the conditions is true; give it a "
            "default")
    return preds


register_op("CaseCheck", shape=lambda op: op.inputs[0].get_shape(),
            dtype=lambda op: op.inputs[0].dtype, kernel=_case_check_kernel, needs_op_name=True,
            grad=None)


__all__ = [
    "cond",
    "case",
    "no_op",
    "group",
    "tuple",
    "with_dependencies",
]
