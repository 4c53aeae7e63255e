"""The op registry: one table ``op type -> OpDef``.

An op family module registers each op in one block: how its outputs' dtypes and shapes follow from
its inputs and attrs, its kernel(s), and its gradient rule::

    register_op("Square",
                shape=same_shape,
                kernel=lambda ctx, x: ctx.xp.square(x),
                grad=lambda op, g: [g * 2.0 * op.inputs[0]])

Kernels are called as ``kernel(ctx, *input_values, **attrs)`` and written against ``ctx.xp`` (the
array module of the backend: numpy or cupy), so one kernel serves every backend; a backend that
needs its own passes ``kernels={"numpy": f, "cupy": g}``. ``grad`` is a function
``grad(op, *output_grads) -> [input grad or None, ...]`` building graph ops; ``grad=None`` marks an
op as not differentiable (no gradient flows through it, silently, as TF1's NotDifferentiable).
Leaving ``grad`` out makes ``gradients()`` raise an error naming the op.

Gradient functions can also be registered by name, as TF1's ``tf.RegisterGradient``: for an op
type that has no rule yet, or under a new name that ``Graph.gradient_override_map`` maps op types
to (the override travels with the op as its ``_gradient_op_type`` attr)::

    @RegisterGradient("StraightThrough")
    def _straight_through(op, grad):
        return [grad]
"""

import sys

MISSING = object()  # "no gradient rule registered" (distinct from None = not differentiable)
GENERIC = "*"       # the kernel key of a kernel written against ctx.xp, valid on every backend


class OpDef:
    __slots__ = ("type", "shape_fn", "dtype_fn", "kernels", "grad_fn", "stateful", "num_outputs",
                 "broadcast", "ref_inputs", "ref_output", "aliases_input", "needs_op_name",
                 "sparse_grad_ok", "is_async", "light_ok", "streams_input", "inline_cost")

    def __init__(self, op_type, *, shape=None, dtype=None, kernel=None, kernels=None, grad=MISSING,
                 stateful=False, num_outputs=1, broadcast=False, ref_inputs=(), ref_output=False,
                 aliases_input=False, needs_op_name=False, sparse_grad_ok=False, is_async=False,
                 light_ok=None, streams_input=None, inline_cost=None):
        self.type = op_type
        self.shape_fn = shape
        self.dtype_fn = dtype
        self.kernels = dict(kernels or {})
        if kernel is not None:
            self.kernels[GENERIC] = kernel
        self.grad_fn = grad
        self.stateful = stateful
        self.num_outputs = num_outputs
        # Output gradients of a broadcasting op are summed back to each input's shape centrally.
        self.broadcast = broadcast
        # Input slots that receive a variable's container (to update it) instead of its value.
        self.ref_inputs = tuple(ref_inputs)
        # Output 0 is a variable reference (as TF1's VariableV2): consumers read or update it.
        self.ref_output = ref_output
        # Output 0 may share memory with input 0 (Identity, assign ops): fetches are copied.
        self.aliases_input = aliases_input
        self.needs_op_name = needs_op_name
        # Gradient function accepts IndexedSlices output gradients without densifying.
        self.sparse_grad_ok = sparse_grad_ok
        # Kernel signature kernel(ctx, done, *inputs, **attrs): calls done(outputs | exception)
        # later instead of returning (Recv, blocking dequeues).
        self.is_async = is_async
        # The kernel never blocks, sleeps, does I/O, calls user Python code or draws random
        # numbers, so a transport's I/O thread may run it when its inputs are small
        # (zps.runtime.executor.light_thread): every stateless op, and the stateful ones that say
        # so (variables, assigns, applies, accumulators, queue ops; not PyFunc, I/O or random).
        self.light_ok = (not stateful) if light_ok is None else bool(light_ok)
        # Index of an input the kernel applies in place element by element (an add into a
        # variable), so it may take that input while it still streams in (codec.Incoming).
        self.streams_input = streams_input
        # ``inline_cost(*inputs)``: the bytes the kernel touches, where its inputs' sizes say
        # little (a gather reads only the rows it is asked for, of a table of any size); else
        # the inputs' bytes are its cost. A light thread runs an op inline only when it is cheap.
        self.inline_cost = inline_cost

    def kernel_for(self, backend):
        fn = self.kernels.get(backend) or self.kernels.get(GENERIC)
        if fn is None:
            raise NotImplementedError("Op %s has no kernel for backend %r (has: %s)"
                                      % (self.type, backend, sorted(self.kernels)))
        return fn

    @property
    def differentiable(self):
        return self.grad_fn is not None


REGISTRY = {}


def register_op(op_type, **kwargs):
    """Register an op; returns its OpDef. Registering a type twice is an error."""
    if op_type in REGISTRY:
        raise KeyError("Op type %r is already registered" % op_type)
    opdef = OpDef(op_type, **kwargs)
    REGISTRY[op_type] = opdef
    return opdef


def get_op_def(op_type):
    try:
        return REGISTRY[op_type]
    except KeyError:
        raise KeyError("Unknown op type %r: no such op is registered in zps" % op_type) from None


def set_gradient(op_type, grad):
    """Attach a gradient rule to an op registered earlier (for rules written in terms of later ops)."""
    get_op_def(op_type).grad_fn = grad


# -- gradients registered by name (TF1's RegisterGradient / NotDifferentiable) -----------------
GRADIENTS = {}   # name -> grad(op, *output_grads), or None (not differentiable)
_WHERE = {}      # name -> where it was registered (for the duplicate-registration error)


class RegisterGradient:
    """Decorator registering a gradient function under a name (an op type, or a name that
    ``Graph.gradient_override_map`` maps op types to); returns the function unchanged.

    >>> @RegisterGradient("DoctestDoubleGrad")
    ... def _double(op, grad):
    ...     return [2.0 * grad]
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f):
        _register_gradient(self._op_type, f)
        return f


def NotDifferentiable(op_type):  # noqa: N802 - TF1's public name
    """Declare ops of ``op_type`` (or ops mapped to that name) not differentiable: no gradient
    flows through them, silently."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _register_gradient(op_type, None)


NoGradient = NotDifferentiable


def _register_gradient(name, fn):
    opdef = REGISTRY.get(name)
    if name in GRADIENTS or (opdef is not None and opdef.grad_fn is not MISSING):
        where = _WHERE.get(name, "the registration of zps's %s op" % name)
        raise KeyError("Registering two gradient with name '%s'! (Previous registration was in "
                       "%s)" % (name, where))
    caller = sys._getframe(2)   # who called RegisterGradient(...)(fn) or NotDifferentiable
    _WHERE[name] = "%s %s:%d" % (caller.f_code.co_name, caller.f_code.co_filename,
                                 caller.f_lineno)
    GRADIENTS[name] = fn


def gradient_rule(name):
    """``(grad function, OpDef whose flags apply or None)`` registered under ``name``: by name
    first, else the op type's own rule. The function is None for a non-differentiable op and
    MISSING where nothing is registered."""
    if name in GRADIENTS:
        return GRADIENTS[name], None
    opdef = REGISTRY.get(name)
    return (MISSING, None) if opdef is None else (opdef.grad_fn, opdef)
