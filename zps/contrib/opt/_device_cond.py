"""Conditional work spread over tasks, for the parameter-server optimizers of ``tf.contrib.opt``.

TF1 builds their periodic or conditional updates as one ``tf.cond`` whose branch updates
variables on the worker and on the ps tasks. A zps ``tf.cond`` runs its branch where its op runs
(see zps.ops.control_flow_ops), so the same work is built here as one cond per task, each on the
task holding the variables it updates, all on the same predicate. What one task's branch
computes for another (a variable's value, a difference) is an output of its cond: the full
tensor when the predicate holds, an empty one otherwise, so nothing of a variable's size
travels on a step that does not communicate.
"""

from zps.framework.device import DeviceSpec
from zps.framework.graph import GraphKeys, Operation, Tensor, get_default_graph
from zps.ops import array_ops, control_flow_ops, state_ops


def task_of(device):
    """``(job, replica, task)`` of a device string: variables there live in one process."""
    spec = DeviceSpec.from_string(device or "")
    return spec.job, spec.replica or 0, spec.task or 0


def by_task(items, device_of):
    """``{task: [items]}`` in first-seen order (``device_of(item)`` is the item's device), and
    ``{task: a device string on that task}``."""
    groups, devices = {}, {}
    for item in items:
        device = device_of(item)
        groups.setdefault(task_of(device), []).append(item)
        devices.setdefault(task_of(device), device)
    return groups, devices


def cond_on(device, pred, fn, name):
    """``fn()`` run on ``device`` only when ``pred`` (a scalar bool) holds, as one ``tf.cond``
    there; ``fn`` returns a list of tensors and ops. Returns the cond's outputs: each tensor's
    value (an empty tensor of its dtype when ``pred`` is false), a bool per op."""
    graph = get_default_graph()
    made = []
    train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
    n_train_ops = len(train_ops)

    def then():
        out = list(fn())
        made.extend(out)
        return [x if isinstance(x, Operation) else array_ops.identity(x) for x in out] or \
            [control_flow_ops.no_op()]

    def otherwise():
        return [control_flow_ops.no_op() if isinstance(x, Operation)
                else array_ops.zeros([0], dtype=x.dtype.base_dtype) for x in made] or \
            [control_flow_ops.no_op()]

    # The device scope of the caller (e.g. replica_device_setter) does not apply: the cond and
    # its branch run on the task of what the branch updates.
    with graph.device(None), graph.device(device):
        outputs = control_flow_ops.cond(pred, then, otherwise, strict=True, name=name)
    # A wrapped optimizer's update built in a branch is no train op of its own.
    del train_ops[n_train_ops:]
    return outputs


def op_of(outputs):
    """The op of a cond's outputs (to wait for it)."""
    first = outputs[0]
    return first.op if isinstance(first, Tensor) else first


def per_task(items, device_of, pred, fn, name, after=()):
    """One ``cond_on`` per task of the items, after the ops ``after``: on each task, ``fn(its
    items)`` returns one tensor or op per item. Returns ``({item: its output}, [the conds'
    ops])``."""
    groups, devices = by_task(items, device_of)
    outputs, ops = {}, []
    with get_default_graph().control_dependencies(list(after)):
        for task, group in groups.items():
            out = cond_on(devices[task], pred, lambda group=group: fn(group), name)
            outputs.update(zip(group, out))
            ops.append(op_of(out))
    return outputs, ops


def apply_when(opt, pred, grads_and_vars, global_step=None, name=None):
    """``opt.apply_gradients(grads_and_vars, global_step)`` done only when ``pred``: one cond
    per task of the variables for their updates, then one for the optimizer's own state (its
    ``_finish``, e.g. Adam's beta powers, where those live) and one incrementing the global
    step. Returns the conds' ops."""
    graph = get_default_graph()
    with_grad = [(g, v) for g, v in grads_and_vars if g is not None]
    if not with_grad:
        raise ValueError("No gradients provided for any variable: %s."
                         % ([str(v) for _, v in grads_and_vars],))
    name = name or opt.get_name()
    with graph.control_dependencies(None):   # slots are variables, made outside any cond
        opt._create_slots([v for _, v in with_grad])

    def update(group):
        opt._prepare()
        out = []
        for g, v in (with_grad[i] for i in group):
            with graph.name_scope("update_" + v.op.name), graph.colocate_with(v):
                out.append(opt._update_op(g, v))
        return out
    _, ops = per_task(range(len(with_grad)), lambda i: with_grad[i][1].device, pred, update,
                      name)
    if opt._overrides("_finish"):
        state = [v for v in opt._non_slot_variables() if v.graph is graph]
        groups, devices = by_task(state or [with_grad[0][1]], lambda v: v.device)
        if len(groups) > 1:
            raise ValueError("%s keeps its state on several tasks (%s): its per-step update "
                             "(_finish) must run on one" % (type(opt).__name__,
                                                            ", ".join(devices.values())))

        def finish():
            opt._prepare()
            return [opt._finish([], name)]
        with graph.control_dependencies(ops):
            ops.append(op_of(cond_on(next(iter(devices.values())), pred, finish,
                                     name + "_finish")))
    if global_step is not None:
        with graph.control_dependencies(ops):
            ops.append(op_of(cond_on(global_step.device, pred,
                                     lambda: [state_ops.assign_add(global_step, 1).op],
                                     name + "_global_step")))
    return ops
