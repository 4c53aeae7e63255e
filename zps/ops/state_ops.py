"""Stateful variable ops: the variable itself, assignment and scatter updates.

A variable op (``VariableV2``) outputs a *reference* to its storage in the task's ResourceManager;
ops that update it receive the container (``ref_inputs``), every other consumer gets its value.
Updates hold the container's lock, so concurrent ``assign_add``s from many sessions are exact.

A resource variable (``use_resource=True``, TF1's ResourceVariable) is the same op with the attr
``use_resource``; its reads are ``ReadVariableOp``s and its assigns carry the attr too, marking
its container copy-on-write: an update never changes an array a read still holds (see
zps.runtime.resources). Ref variables keep TF1's ref semantics: reads share the storage.
"""

import contextlib

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import IndexedSlices, convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape
from zps.ops.op_util import make_op, same_shape


def _ref_tensor(ref):
    r = getattr(ref, "_ref", None)
    t = r() if callable(r) else ref
    if not getattr(t, "is_ref", False):
        raise TypeError("%s needs a Variable (or its reference tensor) to update, got %r"
                        % ("This op", ref))
    return t


def _distributed(ref):
    # A tf.distribute variable (zps.distribute.values: Mirrored, SyncOnRead, Aggregating). As TF
    # does for resource variables, tf.assign & co. call its own methods, which update every copy
    # (in a replica context: aggregated across replicas, or refused without an aggregation).
    return getattr(ref, "_distribute_strategy", None) is not None


def is_resource(ref_tensor):
    """Whether ``ref_tensor`` is a resource variable's (``use_resource=True``)."""
    return bool(ref_tensor.op._attrs.get("use_resource"))


# -- VariableV2 ----------------------------------------------------------------------------------
def _variable_kernel(ctx, dtype, shape, shared_name, op_name, use_resource=False):
    container = ctx.resources.variable(shared_name or op_name)
    if use_resource:
        container.copy_on_write = True
    return container


register_op("VariableV2", dtype=lambda op: op._attrs["dtype"],
            shape=lambda op: as_shape(op._attrs["shape"]), kernel=_variable_kernel,
            stateful=True, light_ok=True, ref_output=True, needs_op_name=True, grad=None)


def variable_op_v2(shape, dtype, name="Variable", shared_name="", use_resource=False):
    """The raw variable op; use ``zps.Variable`` or ``zps.get_variable`` instead."""
    s = as_shape(shape)
    attrs = {"use_resource": True} if use_resource else {}
    return make_op("VariableV2", [], name=name, dtype=_dtypes.as_dtype(dtype),
                   shape=None if s.ndims is None else tuple(s.as_list()), shared_name=shared_name,
                   **attrs)


# -- ReadVariableOp ------------------------------------------------------------------------------
# A resource variable's read: the variable's array when the read runs, which later updates leave
# as it is (they update a copy while a read holds it). Its gradient goes to the variable.
register_op("ReadVariableOp", shape=same_shape, kernel=lambda ctx, value: value,
            grad=lambda op, g: [g], aliases_input=True, sparse_grad_ok=True, stateful=True,
            light_ok=True)


def read_variable_op(ref, name=None):
    """A read of the variable ``ref`` (a snapshot for a resource variable); where it runs is
    the caller's to choose (Variable reads are colocated with the variable)."""
    return make_op("ReadVariableOp", [_ref_tensor(ref)], name=name or "ReadVariableOp")


# -- Assign --------------------------------------------------------------------------------------
def _check_update_shape(ref, value, what):
    if ref.value is not None and ref.value.shape != value.shape:
        raise errors.InvalidArgumentError(
            None, None, "%s requires shapes of both tensors to match. lhs shape= %s rhs shape= %s "
            "(variable %s)" % (what, list(ref.value.shape), list(value.shape), ref.name))


def _assign_kernel(ctx, ref, value, validate_shape, use_locking, use_resource=False):
    with ref.lock:
        if use_resource:
            ref.copy_on_write = True
        if validate_shape:
            _check_update_shape(ref, value, "Assign")
        current = None if ref.in_use() else ref.value   # a read holds it: a fresh array
        if current is not None and (type(current) is type(value) or type(current) is np.ndarray
                and isinstance(value, np.generic)) and current.shape == value.shape \
                and current.dtype == value.dtype:
            # Into the variable's own storage, as TF1's Assign does: reads of the variable that
            # run after it (a read made under its control dependencies, an identity of the
            # variable's snapshot) see the new value, as after AssignAdd.
            # (numpy copies through a buffer where ``value`` overlaps the variable, a view of it)
            ctx.xp.copyto(current, value if ctx.xp is np or getattr(value, "base", None) is None
                          else value.copy())
        else:   # its first value, or a new shape (validate_shape=False): a fresh array, never
            # the caller's buffer (a fed or fetched array cannot alias the variable)
            ref.value = ctx.xp.array(value, copy=True)
        return ref.value


register_op("Assign", shape=lambda op: op.inputs[1].get_shape(), kernel=_assign_kernel,
            stateful=True, light_ok=True, ref_inputs=(0,), aliases_input=True, grad=None)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """Store ``value`` in the variable ``ref``; returns the new value (a tf.distribute
    variable: its ``assign``, as TF)."""
    if _distributed(ref):
        return ref.assign(value, name=name)
    r = _ref_tensor(ref)
    v = convert_to_tensor(value, dtype=r.dtype)
    validate = True if validate_shape is None else bool(validate_shape)
    if validate and not r.get_shape().is_compatible_with(v.get_shape()):
        raise ValueError("Shapes %s and %s are incompatible: cannot assign a value of shape %s to "
                         "variable %s" % (r.get_shape(), v.get_shape(), v.get_shape(), r.op.name))
    # A resource variable's assigns (its initializer, a restore) mark its container.
    attrs = {"use_resource": True} if is_resource(r) else {}
    return make_op("Assign", [r, v], name=name or "Assign", validate_shape=validate,
                   use_locking=bool(use_locking), **attrs)


def _update_kernel(what, fn, undo):
    def kernel(ctx, ref, value, use_locking):
        if getattr(value, "zps_streamed", False):   # a large push still arriving
            return apply_streamed(ctx, ref, value, ref.lock, fn, undo, what)
        with ref.lock:
            current = ref.writable()
            if current.shape != value.shape and value.size != 1:
                _check_update_shape(ref, value, what)
            fn(current, value)
            return current
    return kernel


def _add(cur, v):
    np.add(cur, v, out=cur)


def _subtract(cur, v):
    np.subtract(cur, v, out=cur)


register_op("AssignAdd", shape=same_shape, kernel=_update_kernel("AssignAdd", _add, _subtract),
            stateful=True, light_ok=True, streams_input=1, ref_inputs=(0,), aliases_input=True, grad=None)
register_op("AssignSub", shape=same_shape, kernel=_update_kernel("AssignSub", _subtract, _add),
            stateful=True, light_ok=True, streams_input=1, ref_inputs=(0,), aliases_input=True, grad=None)


def apply_streamed(ctx, ref, incoming, lock, apply, undo, what):
    """Apply a value streaming in (a ``zps.transport.codec.Incoming``) to variable ``ref`` range
    by range as it arrives, so that a large push is applied while it travels instead of after.

    ``apply(var_part, value_part)`` updates flat slices in place, under ``lock`` (None: unlocked,
    as TF1's updates without ``use_locking``), taken per range so that concurrent updates
    interleave without losing any. If the stream stops before its end (the sender died, the step
    was cancelled), ``undo`` reverts the ranges applied -- the step leaves the variable as it found
    it, up to float rounding -- and the step fails with AbortedError (retryable). Returns the
    variable's value.
    """
    guard = lock if lock is not None else contextlib.nullcontext()
    with guard:
        current = ref.read()
        if current.shape != incoming.shape:
            _check_update_shape(ref, incoming, what)
        contiguous = current.flags.c_contiguous
    current = None   # held here, it would count as a read (a resource variable's copy-on-write)
    if not contiguous:   # no flat view to update in place: take it whole
        incoming.wait()
        with guard:
            current = ref.writable()
            apply(current, incoming.array)
            return current
    incoming.claim()   # the chunks are added straight from the received frames: no copy
    applied = []       # (start, stop, values) applied so far, to undo if the rest never comes
    forget = ctx.on_cancel(incoming.fail)
    try:
        for start, stop, values in incoming.ranges():
            with guard:   # (a read taken between two ranges keeps what it saw)
                apply(ref.writable().reshape(-1)[start:stop], values)
            applied.append((start, stop, values))
    except BaseException as e:
        with guard:
            flat = ref.writable().reshape(-1)
            for start, stop, values in applied:
                undo(flat[start:stop], values)
        if isinstance(e, errors.OpError):
            raise
        raise errors.AbortedError(
            None, None, "%s of variable %s: the value streaming in from another task stopped "
            "after %d of %d elements (%s); the part applied was undone; retry the step"
            % (what, ref.name, applied[-1][1] if applied else 0, incoming.size, e)) from e
    finally:
        forget()
    return ref.read()


def assign_add(ref, value, use_locking=None, name=None):
    """``ref += value`` in place; returns the new value (a tf.distribute variable: its
    ``assign_add``, as TF)."""
    if _distributed(ref):
        return ref.assign_add(value)
    r = _ref_tensor(ref)
    return make_op("AssignAdd", [r, convert_to_tensor(value, dtype=r.dtype)],
                   name=name or "AssignAdd", use_locking=bool(use_locking))


def assign_sub(ref, value, use_locking=None, name=None):
    """``ref -= value`` in place; returns the new value (a tf.distribute variable: its
    ``assign_sub``, as TF)."""
    if _distributed(ref):
        return ref.assign_sub(value)
    r = _ref_tensor(ref)
    return make_op("AssignSub", [r, convert_to_tensor(value, dtype=r.dtype)],
                   name=name or "AssignSub", use_locking=bool(use_locking))


# -- scatter updates -----------------------------------------------------------------------------
def _scatter_kernel(fn):
    def kernel(ctx, ref, indices, updates, use_locking):
        with ref.lock:
            current = ref.writable()
            n = current.shape[0]
            if indices.size and (indices.min() < 0 or indices.max() >= n):
                raise errors.InvalidArgumentError(
                    None, None, "indices[%s] is out of range [0, %d) for variable %s"
                    % (indices.ravel()[(indices.ravel() < 0) | (indices.ravel() >= n)][0], n,
                       ref.name))
            expected = indices.shape + current.shape[1:]
            if updates.shape != expected:
                updates = np.broadcast_to(updates, expected) if updates.size == 1 else updates
                if updates.shape != expected:
                    raise errors.InvalidArgumentError(
                        None, None, "updates has shape %s but indices %s and variable %s need "
                        "shape %s" % (list(updates.shape), list(indices.shape), ref.name,
                                      list(expected)))
            fn(current, indices, updates)
            return current
    return kernel


def _scatter_update(cur, idx, upd):
    cur[idx] = upd


for _type, _fn in (("ScatterUpdate", _scatter_update),
                   ("ScatterAdd", lambda cur, idx, upd: np.add.at(cur, idx, upd)),
                   ("ScatterSub", lambda cur, idx, upd: np.subtract.at(cur, idx, upd))):
    register_op(_type, shape=same_shape, kernel=_scatter_kernel(_fn), stateful=True,
                light_ok=True, ref_inputs=(0,), aliases_input=True, grad=None)


def _scatter(op_type, ref, indices, updates, use_locking, name):
    # A tf.distribute variable's copy is its handle's, as TF: the replica's own copy in a replica
    # function, none in cross-replica context (an error) but in extended.update.
    r = _ref_tensor(getattr(ref, "handle", ref) if _distributed(ref) else ref)
    i = convert_to_tensor(indices)
    if not i.dtype.is_integer:
        raise TypeError("%s indices must be integers, got %s" % (op_type, i.dtype.name))
    return make_op(op_type, [r, i, convert_to_tensor(updates, dtype=r.dtype)],
                   name=name or op_type, use_locking=bool(use_locking))


def scatter_update(ref, indices, updates, use_locking=True, name=None):
    """``ref[indices] = updates`` (rows); returns the new value."""
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] += updates`` with duplicate indices summed; returns the new value."""
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] -= updates`` with duplicate indices summed; returns the new value."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


# -- CountUpTo -----------------------------------------------------------------------------------
def _count_up_to_kernel(ctx, ref, limit):
    with ref.lock:
        current = ref.writable()
        before = current.copy()
        if int(before) >= limit:
            raise errors.OutOfRangeError(None, None, "Reached limit of %d" % limit)
        current += 1
        return before


register_op("CountUpTo", shape=lambda op: TensorShape([]), kernel=_count_up_to_kernel,
            stateful=True, light_ok=True, ref_inputs=(0,), grad=None)


def count_up_to(ref, limit, name=None):
    """Increment the int variable ``ref`` until it reaches ``limit``; outputs the value before
    the increment, and fails with OutOfRangeError once ``limit`` is reached (input epochs)."""
    r = _ref_tensor(ref)
    if r.dtype.base_dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("count_up_to needs an int32 or int64 variable, got %s (%s)"
                        % (r.dtype.name, r.name))
    return make_op("CountUpTo", [r], name=name or "CountUpTo", limit=int(limit))


# -- IsVariableInitialized -----------------------------------------------------------------------
register_op("IsVariableInitialized", dtype=lambda op: _dtypes.bool,
            shape=lambda op: TensorShape([]),
            kernel=lambda ctx, ref, dtype: np.array(ref.initialized),
            ref_inputs=(0,), grad=None)


def is_variable_initialized(ref, name=None):
    """A scalar bool: whether the variable has been initialized."""
    r = _ref_tensor(ref)
    return make_op("IsVariableInitialized", [r], name=name or "IsVariableInitialized", dtype=r.dtype)


def indexed_slices_update(op_type, ref, slices, use_locking, name):
    """Scatter an IndexedSlices into a variable (``Variable.scatter_*``)."""
    if not isinstance(slices, IndexedSlices):
        raise TypeError("sparse_delta must be an IndexedSlices, got %r" % (slices,))
    return _scatter(op_type, ref, slices.indices, slices.values, use_locking, name)

__all__ = [
    "assign",
    "assign_add",
    "assign_sub",
    "scatter_update",
    "scatter_add",
    "scatter_sub",
    "is_variable_initialized",
    "count_up_to",
]
