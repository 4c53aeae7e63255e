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
    is_symbolic,
)
from zps.framework.registry import register_op
from zps.framework.serialization import VERSIONS, import_graph_def, node_to_def
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops
from zps.ops.op_util import make_op
from zps.ops.tensor_array_ops import TensorArray

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

# -- functional control flow: tf.cond's If, tf.while_loop's While ---------------------------------
# A branch (a loop's condition or body) is built in the caller's graph, so its ops keep TF1's
# names (cond/mul) and tf.gradients sees them, and is also kept as plain data in its op's attrs
# (a "function"): its ops as a graph_def, the placeholders it takes as arguments (a loop's
# variables), the outer tensors it reads (inputs of the op) and its outputs. The kernel runs a
# function as a private graph (StepContext.run_subgraph): an If runs only the branch ``pred``
# selects, so the other branch's ops and their side effects never run, as in TF1; a While runs
# its condition and body until the condition is false. Nothing outside a function reads its ops,
# so no plan of the outer graph runs them, and they cannot be fetched. The ops ship to other
# tasks like any op (their attrs are plain data).
#
# Gradients: the If's gradient is another If on the same predicate whose branches are the forward
# branches' gradients; the While's is a WhileGrad running the body's gradient once per iteration,
# last first. Values of a forward function that its gradient needs are kept by the forward op in
# the step (``ctx.extras``, per iteration for a loop) and fed to the gradient's function, so
# nothing runs twice (a dropout mask drawn in a branch is the one its gradient sees).

_STASH = "function_values"   # ctx.extras key: forward op name -> what it kept (see the kernels)
_PRIVATE = collections.OrderedDict()   # id(function attr) -> (function, key, feeds, fetches)
_PRIVATE_LOCK = threading.Lock()
MAX_PRIVATE_GRAPHS = 1024


def _private_graph(fn, tin):
    """A function as a private graph: (placeholders fed in order: arguments, inputs, restored
    values; tensors fetched: outputs, kept values), made once per function attr (and again when
    a gradient added values for it to keep)."""
    key = (len(fn["keep"]), fn["version"])
    entry = _PRIVATE.get(id(fn))
    if entry is not None and entry[1] == key:
        return entry[2], entry[3]
    graph = Graph()
    with graph.as_default():
        feeds, input_map = [], {}
        for i, (name, dtype) in enumerate(
                [(name, tin[k]) for k, name in fn["inputs"]] + fn["restore"]):
            ph = array_ops.placeholder(dtype, name="_input_%d" % i)
            feeds.append(ph)
            input_map[name] = ph
        import_graph_def(fn["graph"], input_map=input_map, name="")
        feeds = [graph.get_tensor_by_name(n) for n in fn["args"]] + feeds
        fetches = [graph.get_tensor_by_name(n) for n in fn["outputs"] + fn["keep"]]
    with _PRIVATE_LOCK:
        _PRIVATE[id(fn)] = (fn, key, feeds, fetches)   # holds fn: its id stays its own
        while len(_PRIVATE) > MAX_PRIVATE_GRAPHS:
            _PRIVATE.popitem(last=False)
    return feeds, fetches


def _call(ctx, fn, tin, args, inputs, restored=None):
    """Run function ``fn`` in the step: (its outputs, {name: value} of what it keeps)."""
    feeds, fetches = _private_graph(fn, tin)
    values = list(args) + [inputs[k] for k, _ in fn["inputs"]]
    if fn["restore"]:
        values += [restored[name] for name, _ in fn["restore"]]
    out = ctx.run_subgraph(feeds, fetches, values)
    n = len(fn["outputs"])
    return out[:n], dict(zip(fn["keep"], out[n:]))


def _kept_by_forward(ctx, op_name, built_as, stash_of):
    # The forward op's name here: names get a prefix when a graph is imported under one.
    forward = op_name[:len(op_name) - len(built_as)] + stash_of
    kept = ctx.extras.get(_STASH, {}).get(forward)
    if kept is None:
        raise errors.InternalError(
            op_name, None, "The gradient %s of %s ran in a step where %s did not run on this "
            "task: run the gradient with its forward op, on that op's task"
            % (op_name, forward, forward))
    return kept


def _single(out):
    if not out:
        return None
    return out[0] if len(out) == 1 else out


def _if_kernel(ctx, pred, *inputs, Tout, output_shapes, Tin, then_branch, else_branch,  # noqa: N803
               stash_of, built_as, op_name):
    if getattr(pred, "ndim", 0) != 0:
        raise errors.InvalidArgumentError(
            op_name, None, "The predicate of cond %s must be a scalar bool; got shape %s"
            % (op_name, list(pred.shape)))
    branch = then_branch if bool(pred) else else_branch
    restored = _kept_by_forward(ctx, op_name, built_as, stash_of) if branch["restore"] else None
    out, kept = _call(ctx, branch, Tin, (), inputs, restored)
    if kept:
        ctx.extras.setdefault(_STASH, {})[op_name] = kept
    return _single(out)


def _if_grad(op, *out_grads):
    fwd = _functions(op.graph).get(op)
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
    for key in _BRANCHES:
        def grads_of(outputs=fwd[key].outputs):
            ys = [outputs[index[y]] for y, _ in pairs]
            # Partial derivatives: each input is held fixed in the others' (a branch reading y and
            # y = f(x) gets dy and dx apart; the outer pass adds dy's share to x once).
            gs = gradients_impl.gradients(ys, xs, grad_ys=[g for _, g in pairs], stop_gradients=xs)
            return [array_ops.zeros_like(x) if g is None else array_ops.densify(g)
                    for x, g in zip(xs, gs)]
        ops, outputs, _ = _build_branch(graph, grads_of, "gradient")
        branches.append(_Function(ops, outputs, forward_ops=fwd[key].all_ops()))
    grads = _make_if(graph, op._inputs[0], branches, "If", forward=op)
    it = iter(grads)
    return [None] + [next(it) if t.dtype.is_floating else None for t in op._inputs[1:]]


register_op("If", dtype=lambda op: list(op._attrs["Tout"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_if_kernel,
            stateful=True, needs_op_name=True, light_ok=False, grad=_if_grad)
_BRANCHES = ("then_branch", "else_branch")


class _Function:
    """A function as built in the caller's graph: its ops, outputs, argument placeholders, and
    (for a gradient) the ops of the forward function whose values it reads."""

    __slots__ = ("ops", "outputs", "args", "forward_ops")

    def __init__(self, ops, outputs, args=(), forward_ops=()):
        self.ops, self.outputs, self.args = ops, outputs, list(args)
        self.forward_ops = list(forward_ops)

    def all_ops(self):
        return self.ops + [a.op for a in self.args]

    def export(self):
        return _export(self.ops, self.outputs, self.forward_ops, self.args)


def _functions(graph):
    """The functional ops of ``graph``: op -> {attr name: _Function}."""
    return graph.__dict__.setdefault("_zps_functions", {})


def _claimed(graph):
    """The ops of ``graph`` that belong to some function (a branch, a loop body)."""
    return graph.__dict__.setdefault("_zps_function_ops", set())


def _owners(graph):
    """Function op -> (the functional op holding it, its attr name)."""
    return graph.__dict__.setdefault("_zps_function_owners", {})


def _record(graph, fn):
    """(ops created by ``fn()`` that no inner function claimed, its result), built without the
    caller's control dependencies (the functional op gets those)."""
    start = len(graph._ops_list)
    with graph.control_dependencies(None):
        result = fn()
    claimed = _claimed(graph)
    return [op for op in graph._ops_list[start:] if op not in claimed], result


def _build_branch(graph, fn, what):
    """Call ``fn`` recording the ops it creates: (ops, flat outputs, pack(values) -> structure).
    Each output is an identity made in the branch; an Operation becomes a bool (True if the true
    branch ran), as TF1 returns for it."""
    def build():
        result = fn()
        if result is None:
            raise ValueError("%s must have a return value." % what)
        flat, pack = _flatten(result)
        outputs = []
        for v in flat:
            if isinstance(v, Operation):
                with get_default_graph().control_dependencies([v]):
                    outputs.append(array_ops.identity(what != "false_fn"))
            else:   # a TensorArray leaves as its flow, and is rebuilt around the output
                outputs.append(array_ops.identity(array_ops.densify(convert_to_tensor(
                    _loop_tensor(v)))))

        def rebuild(leaves):
            return pack([tm._with_flow(x) if _is_tensor_array(tm) and is_symbolic(x) else x
                         for tm, x in zip(flat, leaves)])
        rebuild.tensor_arrays = [_is_tensor_array(v) for v in flat]
        return outputs, rebuild
    ops, (outputs, pack) = _record(graph, build)
    for op in ops:
        if op.op_def.ref_output:
            raise ValueError("%s created the variable %s: create variables outside tf.cond and "
                             "tf.while_loop (a function runs as a private graph where its op "
                             "runs)" % (what, op.name))
    return ops, outputs, pack


def _flatten(value):
    """(flat list of leaves, pack(leaves) -> the same structure) for lists, tuples, namedtuples
    and dicts (leaves in sorted-key order, as TF1's nest; packed in the dict's own order)."""
    if isinstance(value, dict):
        keys = sorted(value)
        parts = [_flatten(value[k]) for k in keys]
        sizes = [len(f) for f, _ in parts]

        def pack(leaves):
            out, i = {}, 0
            for k, (_, p), n in zip(keys, parts, sizes):
                out[k] = p(leaves[i:i + n])
                i += n
            return type(value)((k, out[k]) for k in value)
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


def _structure(value):
    if isinstance(value, dict):
        return (type(value).__name__, builtins.tuple((k, _structure(value[k]))
                                                     for k in sorted(value)))
    if isinstance(value, list | builtins.tuple):
        return (type(value).__name__, builtins.tuple(_structure(v) for v in value))
    return "."


def _export(ops, outputs, forward_ops=(), args=()):
    """The plain-data form of a function: (function attr without "inputs", outer tensors it
    reads by value, outer ops to wait for, outer variables it updates).

    An outer variable the function updates (a reference input) is copied into the graph_def
    (its container is found by name where the op runs); tensors of ``forward_ops`` (a gradient's
    forward function) are read from what the forward op kept; ``args`` are placeholders among
    ``ops``'s inputs, fed first.
    """
    arg_ops = [a.op for a in args]
    opset = set(ops) | set(arg_ops)
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
    for op in variables + arg_ops + ops:
        node = node_to_def(op)
        node["input"] = [] if op in variables else \
            [n for n in node["input"] if not n.startswith("^") or op.graph.get_operation_by_name(
                n[1:]) in inside]
        nodes.append(node)
    fn = {"graph": {"versions": dict(VERSIONS), "node": nodes},
          "args": [a.name for a in args], "outputs": [t.name for t in outputs], "keep": [],
          "version": 0, "graded": False,
          "restore": [[t.name, t.dtype.base_dtype] for t in dict.fromkeys(restored)]}
    return fn, list(dict.fromkeys(reads)), list(dict.fromkeys(waits)), variables


def _make_functional(graph, op_type, first_inputs, functions, attrs, name, forward=None):
    """Create a functional op: ``first_inputs`` + the outer tensors its ``functions`` ({attr
    name: _Function}) read; the attrs get the functions and ``Tin`` (those tensors' dtypes).
    With ``forward``, the op is that op's gradient: the forward op keeps what it reads."""
    exports = {key: f.export() for key, f in functions.items()}
    reads = list(dict.fromkeys(t for e in exports.values() for t in e[1]))
    position = {t: k for k, t in enumerate(reads)}
    attrs = dict(attrs, Tin=[t.dtype.base_dtype for t in reads],
                 stash_of=forward.name if forward is not None else "")
    for key, (fn, fn_reads, _, _) in exports.items():
        fn["inputs"] = [[position[t], t.name] for t in fn_reads]
        attrs[key] = fn
    waits = list(dict.fromkeys([c for e in exports.values() for c in e[2]]
                               + ([forward] if forward is not None else [])))
    n_out = len(attrs["Tout"])
    with graph.control_dependencies(waits):
        op = graph.create_op(op_type, list(first_inputs) + reads, attrs, name=name,
                             num_outputs=n_out)
    op._attrs["built_as"] = op.name
    for e in exports.values():
        for variable in e[3]:
            _check_colocated(op, variable)
    claimed, owners = _claimed(graph), _owners(graph)
    for key, f in functions.items():
        for o in f.all_ops():
            claimed.add(o)
            graph.prevent_fetching(o)
            owners.setdefault(o, (op, key))
    _functions(graph)[op] = functions
    if forward is not None:   # the forward op keeps what its gradient's functions read
        for key in functions:
            fwd_fn = forward._attrs[_FORWARD_OF.get(key, key)]
            fwd_fn["keep"].extend(n for n, _ in attrs[key]["restore"] if n not in fwd_fn["keep"])
            fwd_fn["graded"] = True   # a loop records its iterations for the gradient
        _export_again_around(graph, forward)
    return op


_FORWARD_OF = {"grad_body": "body"}   # a gradient's function -> its forward op's function


def _export_again_around(graph, op):
    """``op``'s attrs changed: the functions holding it (a copy of it, in their graph_defs), and
    those holding them, are exported again."""
    owner = _owners(graph).get(op)
    while owner is not None:
        holder, key = owner
        fn = holder._attrs[key]
        fn["graph"] = _functions(graph)[holder][key].export()[0]["graph"]
        fn["version"] += 1   # plans made of the old graph_def are not reused
        owner = _owners(graph).get(holder)


def _merged_shape(a, b):
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return unknown_shape()
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _make_if(graph, pred, branches, name, forward=None):
    """Create the If op of two built branches (_Functions); returns its outputs (list)."""
    t_out, f_out = branches[0].outputs, branches[1].outputs
    attrs = {"Tout": [t.dtype.base_dtype for t in t_out],
             "output_shapes": [_merged_shape(a.get_shape(), b.get_shape())
                               for a, b in zip(t_out, f_out)]}
    op = _make_functional(graph, "If", [pred], dict(zip(_BRANCHES, branches)), attrs, name,
                          forward)
    return list(op._outputs)


def _check_colocated(op, variable):
    v, c = DeviceSpec.from_string(variable.device), DeviceSpec.from_string(op.device)
    if v.job is not None and (v.job, v.replica or 0, v.task or 0) != (c.job, c.replica or 0,
                                                                       c.task or 0):
        raise ValueError(
            "%s updates the variable %s on %s, but it runs on %s: a function (a cond branch, a "
            "loop body) runs where its op runs. Build it under tf.device(%r), or update the "
            "variable outside." % (op.name, variable.name, variable.device,
                                   op.device or "the session's task", variable.device))


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """``true_fn()`` if ``pred`` is true, else ``false_fn()``: only the chosen branch runs.

    ``pred`` is a scalar bool tensor (not a Python bool, as in TF1); both functions return the
    same structure of tensors (lists, tuples, dicts; an Operation becomes a bool tensor, True if
    the true branch ran). Tensors a branch uses from outside are computed before the cond runs;
    ops a branch creates run only when that branch is taken, and only if its result depends on
    them. Unless ``strict``, a single-element list or tuple comes back as its element, as in
    TF1.

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
        t_shape, f_shape = (_structure(p([0] * len(o))) for p, o in ((pack, t_out), (f_pack, f_out)))
        if t_shape != f_shape:
            raise ValueError("true_fn and false_fn must return the same structure: %d vs %d "
                             "tensors (%s, %s)" % (len(t_out), len(f_out), t_shape, f_shape))
        if pack.tensor_arrays != f_pack.tensor_arrays:
            raise ValueError("true_fn and false_fn must return the same structure: one returns "
                             "a TensorArray where the other does not (TensorArrays at %s and %s "
                             "of the flattened results)" % builtins.tuple(
                                 [i for i, a in enumerate(p.tensor_arrays) if a]
                                 for p in (pack, f_pack)))
        for a, b in zip(t_out, f_out):
            if a.dtype.base_dtype != b.dtype.base_dtype:
                raise ValueError("Outputs of true_fn and false_fn must have the same type: %s, %s"
                                 % (a.dtype.name, b.dtype.name))
        result = pack(_make_if(graph, pred, [_Function(ops, outs) for ops, outs, _ in built],
                               "If"))
        return result if strict else _unpack_if_singleton(result)


def _unpack_if_singleton(result):
    return result[0] if isinstance(result, list | builtins.tuple) and len(result) == 1 else result


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
            return cond(preds[i], pairs[i][1], lambda: chain(i + 1), strict=True)
        result = chain(0)
        return result if strict else _unpack_if_singleton(result)


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


# -- tf.while_loop -------------------------------------------------------------------------------
class _StashScope:
    """Within one loop iteration, ops of the body keep their values in a dict of their own (one
    per iteration), so that a cond or loop inside a body finds its own iteration's when its
    gradient runs."""

    def __init__(self, ctx, scope):
        self._ctx, self._scope = ctx, scope

    def __enter__(self):
        self._outer = self._ctx.extras.get(_STASH)
        self._ctx.extras[_STASH] = self._scope

    def __exit__(self, *exc):
        if self._outer is None:
            self._ctx.extras.pop(_STASH, None)
        else:
            self._ctx.extras[_STASH] = self._outer


def _while_kernel(ctx, *inputs, n_vars, has_max, Tout, output_shapes, Tin, cond, body,  # noqa: N803
                  stash_of, built_as, op_name):
    values = list(inputs[:n_vars])
    limit = int(inputs[n_vars]) if has_max else None
    reads = inputs[n_vars + int(has_max):]
    record = [] if body["graded"] else None   # what each iteration kept, for the gradient
    i = 0
    while limit is None or i < limit:
        if ctx.cancelled is not None:
            raise ctx.cancelled
        (go,), _ = _call(ctx, cond, Tin, values, reads)
        if getattr(go, "ndim", 0) != 0:
            raise errors.InvalidArgumentError(
                op_name, None, "The condition of while loop %s must be a scalar bool; got "
                "shape %s" % (op_name, list(go.shape)))
        if not go:
            break
        scope = {}
        with _StashScope(ctx, scope):
            values, kept = _call(ctx, body, Tin, values, reads)
        if record is not None:
            record.append((kept, scope))
        i += 1
    if record is not None:
        ctx.extras.setdefault(_STASH, {})[op_name] = record
    return _single(values)


def _while_grad_kernel(ctx, *inputs, n_vars, sparse, Tout, output_shapes, Tin,  # noqa: N803
                       grad_body, stash_of, built_as, op_name):
    record = _kept_by_forward(ctx, op_name, built_as, stash_of)
    grads = list(inputs[:n_vars])
    n_caps = len(Tout) - n_vars
    captured = inputs[n_vars:n_vars + n_caps]
    reads = inputs[n_vars + n_caps:]
    totals = [ctx.xp.zeros_like(c) for c in captured]
    for kept, scope in reversed(record):   # the last iteration first
        if ctx.cancelled is not None:
            raise ctx.cancelled
        with _StashScope(ctx, scope):
            out, _ = _call(ctx, grad_body, Tin, grads, reads, kept)
        grads, parts = out[:n_vars], iter(out[n_vars:])
        for total, is_sparse in zip(totals, sparse):
            if is_sparse:   # rows of the tensor (a gather of x[t]): added in place, O(rows)
                values, indices = next(parts), next(parts)
                ctx.xp.add.at(total, indices, values)
            else:
                total += next(parts)
    return _single(grads + totals)


def _while_grad(op, *out_grads):
    fns = _functions(op.graph).get(op)
    if fns is None:
        raise LookupError("No gradient for %s: it was not built by tf.while_loop in this graph"
                          % op.name)
    from zps.ops import gradients_impl
    graph, body = op.graph, fns["body"]
    n = op._attrs["n_vars"]
    varying = [i for i in range(n) if op._outputs[i].dtype.is_floating]
    reads = op._inputs[n + int(op._attrs["has_max"]):]
    captured = list(dict.fromkeys(t for t in reads if t.dtype.is_floating))
    if not varying or all(out_grads[i] is None for i in varying):
        return [None] * len(op._inputs)
    with graph.control_dependencies(None):
        incoming = [array_ops.placeholder(op._outputs[i].dtype, body.args[i].get_shape(),
                                          name="grad_arg") for i in varying]

    sparse = []   # per captured tensor: its gradient comes as rows (IndexedSlices)

    def grads_of():
        xs = [body.args[i] for i in varying] + captured
        gs = gradients_impl.gradients([body.outputs[i] for i in varying], xs, grad_ys=incoming,
                                      stop_gradients=xs)   # partial derivatives (as in If's)
        out = [array_ops.zeros_like(x) if g is None else array_ops.densify(g)
               for x, g in zip(xs[:len(varying)], gs)]
        # An iteration reading x[t] of a captured x has a gradient of a few rows: kept as rows
        # (values, indices) and added in place, or a loop over T steps would cost T^2.
        for x, g in zip(captured, gs[len(varying):]):
            sparse.append(isinstance(g, IndexedSlices))
            if sparse[-1]:
                out += [g.values, g.indices]
            else:
                out.append(array_ops.zeros_like(x) if g is None else g)
        return out
    ops, outputs, _ = _build_branch(graph, grads_of, "gradient")
    first = [array_ops.zeros_like(op._outputs[i]) if out_grads[i] is None else out_grads[i]
             for i in varying] + captured
    attrs = {"n_vars": len(varying), "sparse": sparse,
             "Tout": [t.dtype.base_dtype for t in first],
             "output_shapes": [op._inputs[i].get_shape() for i in varying]
             + [t.get_shape() for t in captured]}
    grad = _make_functional(graph, "WhileGrad", first, {
        "grad_body": _Function(ops, outputs, args=incoming, forward_ops=body.all_ops())},
        attrs, "WhileGrad", forward=op)
    result = [None] * len(op._inputs)
    for j, i in enumerate(varying):
        result[i] = grad._outputs[j]
    of_captured = dict(zip(captured, grad._outputs[len(varying):]))
    for k, t in enumerate(reads):
        if t in of_captured:
            result[n + int(op._attrs["has_max"]) + k] = of_captured.pop(t)
    return result


register_op("While", dtype=lambda op: list(op._attrs["Tout"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_while_kernel,
            stateful=True, needs_op_name=True, light_ok=False, grad=_while_grad)
register_op("WhileGrad", dtype=lambda op: list(op._attrs["Tout"]),
            shape=lambda op: list(op._attrs["output_shapes"]), kernel=_while_grad_kernel,
            stateful=True, needs_op_name=True, light_ok=False, grad=None)


def _top_level_list(value):
    if isinstance(value, list | builtins.tuple) and not hasattr(value, "_fields"):
        return list(value)
    return value


def _at_most(shape, invariant):
    """Whether ``shape`` is as specific as ``invariant`` (equal where the invariant is known)."""
    if invariant.ndims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(b is None or a == b for a, b in zip(shape.as_list(), invariant.as_list()))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` is true.

    ``loop_vars`` is a tensor or a (nested) list, tuple or dict of them; ``body`` returns the same
    structure, dtypes and shapes (``shape_invariants`` lets a shape vary: e.g. ``[None, 3]``).
    ``maximum_iterations`` bounds the iterations. Tensors the functions use from outside are
    computed once, before the loop; gradients flow to the initial loop variables and to those
    tensors. ``parallel_iterations`` and ``swap_memory`` are accepted (iterations run in order).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     i, total = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + i), [0, 0])
    ...     print(tf.Session().run(total))
    10
    """
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    is_sequence = isinstance(loop_vars, list | builtins.tuple | dict)
    flat, pack = _flatten(loop_vars)
    if not flat:
        raise ValueError("No loop variables provided")
    templates = list(flat)   # a TensorArray travels as its flow, and is rebuilt around it
    flat = [convert_to_tensor(_loop_tensor(v)) for v in flat]
    if shape_invariants is None:
        invariants = [t.get_shape() for t in flat]
    else:
        invariants = _flatten(shape_invariants)[0]
        if len(invariants) != len(flat):
            raise ValueError("shape_invariants has %d shapes for %d loop variables"
                             % (len(invariants), len(flat)))
        invariants = [TensorShape([]) if _is_tensor_array(tm) else TensorShape(v)
                      if not isinstance(v, TensorShape) else v
                      for v, tm in zip(invariants, templates)]
        for t, inv in zip(flat, invariants):
            if not _at_most(t.get_shape(), inv):
                raise ValueError("The shape invariant %s is not compatible with the initial "
                                 "shape %s of loop variable %s" % (inv, t.get_shape(), t.name))
    graph = flat[0].graph
    with graph.name_scope(name or "while"):
        with graph.control_dependencies(None):
            args = [array_ops.placeholder(t.dtype.base_dtype, inv, name="Identity")
                    for t, inv in zip(flat, invariants)]
        structured = pack(_loop_values(templates, args))
        call_args = structured if isinstance(loop_vars, list | builtins.tuple) else (structured,)

        def run_cond():
            go = convert_to_tensor(cond(*call_args))
            if go.dtype.base_dtype != _dtypes.bool or go.get_shape().ndims not in (None, 0):
                raise TypeError("cond of tf.while_loop must return a scalar bool tensor, got %s "
                                "of shape %s" % (go.dtype.name, go.get_shape()))
            return go

        def run_body():
            result = body(*call_args)
            if len(flat) == 1 and not isinstance(result, list | builtins.tuple | dict):
                result = [result]
            elif not is_sequence and isinstance(result, list | builtins.tuple) and len(result) == 1:
                result = result[0]
            # As TF1: the top level may be a list for a tuple (and back); nested levels match.
            leaves, repack = _flatten(result)
            got = _structure(_top_level_list(repack([0] * len(leaves))))
            want = _structure(_top_level_list(pack([0] * len(flat)))) if is_sequence else "."
            if len(flat) > 1 and got != want:
                raise ValueError("body of tf.while_loop must return the structure of loop_vars "
                                 "(%s), got %s" % (want, got))
            if len(leaves) == len(templates):
                for tm, v in zip(templates, leaves):
                    if _is_tensor_array(tm) != _is_tensor_array(v):
                        raise TypeError("body of tf.while_loop must return a TensorArray where "
                                        "loop_vars has one (and a tensor where it has a tensor); "
                                        "got %r for %r" % (v, tm))
            return repack([_loop_tensor(v) for v in leaves])
        cond_ops, cond_out, _ = _build_branch(graph, run_cond, "cond")
        body_ops, body_out, _ = _build_branch(graph, run_body, "body")
        if len(body_out) != len(flat):
            raise ValueError("body of tf.while_loop returned %d tensors for %d loop variables"
                             % (len(body_out), len(flat)))
        for t, out, inv in zip(flat, body_out, invariants):
            if out.dtype.base_dtype != t.dtype.base_dtype:
                raise TypeError("Loop variable %s enters the loop as %s but the body returns %s"
                                % (t.name, t.dtype.name, out.dtype.name))
            if not _at_most(out.get_shape(), inv):
                raise ValueError(
                    "Input tensor '%s' enters the loop with shape %s, but has shape %s after one "
                    "iteration. To allow the shape to vary across iterations, use the "
                    "`shape_invariants` argument of tf.while_loop to specify a less-specific "
                    "shape." % (t.name, inv, out.get_shape()))
        first = list(flat)
        if maximum_iterations is not None:
            first.append(_max_iterations(maximum_iterations))
        attrs = {"n_vars": len(flat), "has_max": maximum_iterations is not None,
                 "Tout": [t.dtype.base_dtype for t in flat], "output_shapes": invariants}
        op = _make_functional(graph, "While", first, {
            "cond": _Function(cond_ops, cond_out, args=args),
            "body": _Function(body_ops, body_out, args=args)}, attrs, "While")
    outputs = _loop_values(templates, op._outputs)
    if not return_same_structure and len(outputs) == 1:
        return outputs[0]
    return pack(outputs)


def _is_tensor_array(value):
    return isinstance(value, TensorArray)


def _loop_tensor(value):
    """What a loop variable is in the loop: a TensorArray is its flow (TF1's)."""
    return value.flow if _is_tensor_array(value) else value


def _loop_values(templates, tensors):
    """``tensors`` as loop variables: a TensorArray of ``templates`` around its new flow."""
    return [tm._with_flow(t) if _is_tensor_array(tm) else t for tm, t in zip(templates, tensors)]


def _max_iterations(value):
    from zps.ops import math_ops  # math_ops imports this module
    t = convert_to_tensor(value)
    if not t.dtype.is_integer or t.get_shape().ndims not in (None, 0):
        raise ValueError("maximum_iterations must be a scalar integer, got %s of shape %s"
                         % (t.dtype.name, t.get_shape()))
    return math_ops.cast(t, _dtypes.int64)


__all__ = [
    "cond",
    "case",
    "while_loop",
    "no_op",
    "group",
    "tuple",
    "with_dependencies",
]
