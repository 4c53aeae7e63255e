"""Control ops: ``no_op``, ``group``, ``tuple``, ``with_dependencies``, initialized-value select."""

import builtins

from zps.framework.graph import IndexedSlices, Operation, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
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

__all__ = [
    "no_op",
    "group",
    "tuple",
    "with_dependencies",
]
