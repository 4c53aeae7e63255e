"""``tf.custom_gradient``: a function that supplies its own gradient, and the ``IdentityN`` op.

As TF1's graph mode does it: ``f(*x) -> (y, grad_fn)`` builds its ops as usual; then ``y``,
``x`` and the variables ``f`` reads pass through one ``IdentityN`` op whose gradient rule is
``grad_fn``, registered under a fresh name and attached with ``Graph.gradient_override_map``.
Gradients of the returned ``y`` go through ``grad_fn`` to ``x`` and the variables, and never into
the ops ``f`` built.

>>> import zps as tf
>>> @tf.custom_gradient
... def log1pexp(x):
...     e = tf.exp(x)
...     return tf.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))
>>> with tf.Graph().as_default():
...     x = tf.constant(100.0)
...     dx, = tf.gradients(log1pexp(x), [x])
...     print(tf.Session().run(dx))
1.0
"""

import functools
import inspect
import itertools

from zps.framework import registry
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.ops import gradients_impl
from zps.ops.control_flow_ops import _flatten
from zps.ops.op_util import make_op

# -- IdentityN: its inputs, unchanged, as one op (one gradient rule for all of them) -------------
register_op("IdentityN", dtype=lambda op: [t.dtype for t in op.inputs],
            shape=lambda op: [t.get_shape() for t in op.inputs],
            kernel=lambda ctx, *xs: xs[0] if len(xs) == 1 else xs,
            grad=lambda op, *grads: list(grads), sparse_grad_ok=True)


def identity_n(input, name=None):  # noqa: A002 - TF1's argument name
    """The tensors of the list ``input``, unchanged, as the outputs of one op."""
    tensors = [convert_to_tensor(t) for t in input]
    if not tensors:
        raise ValueError("identity_n needs at least one tensor")
    return make_op("IdentityN", tensors, name=name or "IdentityN", num_outputs=len(tensors))


_uid = itertools.count(1)


def custom_gradient(f=None):
    """Decorator: ``f(*x)`` returns ``(y, grad_fn)``; the gradient of ``y`` is ``grad_fn``'s.

    ``grad_fn(*dy)`` returns the gradients of the inputs ``x`` (one per tensor of ``x``, None
    allowed). When ``f`` reads variables (other than through ``x``), ``grad_fn`` must take a
    ``variables`` keyword argument: it is called as ``grad_fn(*dy, variables=vs)`` and returns
    ``(gradients of x, [one gradient per variable of vs])``. Arguments are positional only
    (nested lists, tuples and dicts of tensors), as in TF1's graph mode.
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords "
                             "arguments only when eager execution is enabled: pass %s to %s "
                             "positionally." % (", ".join(sorted(kwargs)), _name(f)))
        return _apply(f, args)

    return decorated


def _apply(f, args):
    flat_args, pack_args = _flatten(list(args))
    flat_args = [convert_to_tensor(a) for a in flat_args]
    returned = f(*pack_args(flat_args))
    if not (isinstance(returned, tuple | list) and len(returned) == 2 and callable(returned[1])):
        raise TypeError("A @tf.custom_gradient function must return (result, grad_fn); %s "
                        "returned %r" % (_name(f), returned))
    result, grad_fn = returned
    flat_result, pack_result = _flatten(result)
    flat_result = [convert_to_tensor(r) for r in flat_result]
    graph = flat_result[0].graph if flat_result else get_default_graph()
    variables = _variables_read(graph, flat_args, flat_result)
    spec = inspect.getfullargspec(grad_fn)
    takes_variables = ("variables" in spec.args or "variables" in spec.kwonlyargs
                       or spec.varkw is not None)
    if variables and not takes_variables:
        raise TypeError("@tf.custom_gradient grad_fn must accept keyword argument 'variables', "
                        "since function uses variables: [%s]"
                        % ", ".join(v.name for v in variables))

    n_result = len(flat_result)

    def grad(op, *result_grads):
        result_grads = list(result_grads[:n_result])
        if variables:
            input_grads, variable_grads = grad_fn(*result_grads, variables=variables)
            variable_grads = list(variable_grads)
            if len(variable_grads) != len(variables):
                raise ValueError("Must return gradient for each variable from @custom_gradient "
                                 "grad_fn: %s returned %d for the %d variables [%s]"
                                 % (_name(f), len(variable_grads), len(variables),
                                    ", ".join(v.name for v in variables)))
        else:
            input_grads, variable_grads = grad_fn(*result_grads), []
        input_grads, _ = _flatten(input_grads)
        if len(input_grads) != len(flat_args):
            raise ValueError("@tf.custom_gradient grad_fn of %s returned %d gradients for its %d "
                             "input tensors" % (_name(f), len(input_grads), len(flat_args)))
        return [None] * n_result + input_grads + variable_grads

    name = "CustomGradient-%d" % next(_uid)
    registry.RegisterGradient(name)(grad)
    with graph.gradient_override_map({"IdentityN": name}):
        outputs = identity_n(flat_result + flat_args + [v.value() for v in variables])
    return pack_result(outputs[:n_result])


def _name(f):
    return getattr(f, "__name__", repr(f))


def _variables_read(graph, inputs, results):
    """The trainable global variables whose ops the results depend on through differentiable
    ops, not counting what comes in through ``inputs``; sorted by name (as TF1)."""
    stop = set(inputs)
    stack = [t.op for t in results if t not in stop]
    seen, var_ops = set(), set()
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "VariableV2":
            var_ops.add(op)
        if callable(gradients_impl._gradient_rule(op)[0]):
            stack.extend(t.op for t in op._inputs if t not in stop)
    variables = [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                 if getattr(v, "op", None) in var_ops and getattr(v, "trainable", False)]
    return sorted(variables, key=lambda v: v.name)
