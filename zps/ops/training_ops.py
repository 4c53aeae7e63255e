"""Training ops: in-place optimizer updates of a variable and its slots (TF1's training_ops).

Each op takes the variable and its slots as references (``ref_inputs``), updates them in place,
and outputs the variable's new value (in place of a copy, for a resource variable whose array a
read still holds: zps.runtime.resources). ``use_locking=True`` holds the containers' locks for the
whole update; otherwise concurrent steps update without locks (Hogwild, as in TF1).

Dense updates walk the arrays in cache-sized blocks with ``out=`` ufuncs and one small per-thread
scratch buffer: a naive ``w -= lr * g`` allocates a full-size temporary and runs at ~0.4x memcpy
speed, the blocked loop at ~0.8-0.9x. Sparse updates (IndexedSlices gradients) first sum the rows
of duplicate indices, as TF1's optimizers do (``_deduplicate_indexed_slices``), then update only
the touched rows. Hyperparameters (lr, momentum, ...) are scalar tensors of the variable's dtype.

>>> import numpy as np, zps as tf
>>> from zps.ops import training_ops
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, 2.0])
...     step = training_ops.apply_gradient_descent(w, 0.5, tf.constant([2.0, 2.0]))
...     with tf.Session() as sess:
...         sess.run(w.initializer)
...         print(sess.run(step))
[0. 1.]
"""

import contextlib
import threading

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops.op_util import make_op
from zps.ops.state_ops import _ref_tensor, apply_streamed

# Elements per block of a dense update, per backend: 64K float32 (256 KB per operand) keeps the
# variable, its slots, the gradient and the scratch block in L2. Backends not listed (GPUs)
# update whole arrays at once, where blocking would only add kernel launches.
_BLOCK_SIZE = {"numpy": 1 << 16}
_scratch_local = threading.local()


# -- shared kernel machinery ---------------------------------------------------------------------
@contextlib.contextmanager
def _locked(use_locking, refs):
    """Hold the locks of ``refs`` (each once, in a fixed order so two updates never deadlock)."""
    if not use_locking:
        yield
        return
    locks = sorted({id(r.lock): r.lock for r in refs}.items())
    with contextlib.ExitStack() as stack:
        for _, lock in locks:
            stack.enter_context(lock)
        yield


def _read_refs(refs):
    """The arrays of ``refs`` (var first) to update in place, checked to have the variable's
    shape (a resource variable's array that a read still holds is copied first)."""
    arrays = [r.writable() for r in refs]
    var = arrays[0]
    for ref, a in zip(refs[1:], arrays[1:]):
        if a.shape != var.shape:
            raise errors.InvalidArgumentError(
                None, None, "var and %s do not have the same shape: %s vs %s (variables %s, %s)"
                % (ref.name, list(var.shape), list(a.shape), refs[0].name, ref.name))
    return arrays


def _check_scalars(**scalars):
    for name, s in scalars.items():
        if s.ndim != 0:
            raise errors.InvalidArgumentError(None, None, "%s is not a scalar: shape %s"
                                              % (name, list(s.shape)))


def _check_dense_grad(var_ref, var, grad):
    if grad.shape != var.shape:
        raise errors.InvalidArgumentError(
            None, None, "var and grad do not have the same shape: %s vs %s (variable %s)"
            % (list(var.shape), list(grad.shape), var_ref.name))


def _scratch(ctx, dtype, n):
    """A per-thread scratch vector of ``n`` elements, reused across steps (no page faults)."""
    bufs = getattr(_scratch_local, "bufs", None)
    if bufs is None:
        bufs = _scratch_local.bufs = {}
    key = (ctx.backend, np.dtype(dtype).str)
    buf = bufs.get(key)
    if buf is None or buf.size < n:
        buf = bufs[key] = ctx.xp.empty(n, dtype=dtype)
    return buf[:n]


def _contiguous(xp, grad):
    return grad if grad.flags.c_contiguous else xp.ascontiguousarray(grad)


def _sparse_rows(ctx, var_ref, var, grad, indices):
    """Validated ``(unique_indices, summed_rows)`` of a sparse gradient; rows of duplicates summed."""
    xp = ctx.xp
    if indices.ndim != 1:
        raise errors.InvalidArgumentError(None, None, "indices must be one-dimensional, got shape %s"
                                          % list(indices.shape))
    if var.ndim < 1:
        raise errors.InvalidArgumentError(None, None, "var must be at least 1 dimensional for a "
                                          "sparse update (variable %s is a scalar)" % var_ref.name)
    expected = indices.shape + var.shape[1:]
    if grad.shape != expected:
        raise errors.InvalidArgumentError(
            None, None, "grad has shape %s but indices %s and var %s need shape %s (variable %s)"
            % (list(grad.shape), list(indices.shape), list(var.shape), list(expected), var_ref.name))
    n = var.shape[0]
    # Strictly increasing ids (a SparseConditionalAccumulator's output, a caller's sorted unique
    # ids) are unique: an O(k) check instead of np.unique's sort, which cost ~8% of a 4096-row
    # sparse Adagrad step on a 1M x 64 table (77 -> 5 us per call); and the ends bound them.
    increasing = indices.size >= 2 and bool((indices[1:] > indices[:-1]).all())
    if indices.size and (not increasing or indices[0] < 0 or indices[-1] >= n):
        bad = (indices < 0) | (indices >= n)
        if bad.any():
            offset = int(xp.argmax(bad))
            raise errors.InvalidArgumentError(
                None, None, "Index %d at offset %d in indices is out of range [0, %d) for variable %s"
                % (int(indices[offset]), offset, n, var_ref.name))
    if increasing or indices.size < 2:
        return indices, grad
    ordered = xp.sort(indices)
    if bool((ordered[1:] != ordered[:-1]).all()):   # distinct (a sort costs 1/4 of np.unique)
        return indices, grad
    unique, inverse = xp.unique(indices, return_inverse=True)
    summed = xp.zeros((unique.size,) + grad.shape[1:], dtype=grad.dtype)
    xp.add.at(summed, inverse.reshape(-1), grad)
    return unique, summed


def _apply_dense(ctx, refs, grad, use_locking, update, *params):
    """Update ``refs`` (var, then slots) in place from a dense gradient; returns the var's value."""
    with _locked(use_locking, refs):
        arrays = _read_refs(refs)
        _check_dense_grad(refs[0], arrays[0], grad)
        _blocked(ctx, update, arrays + [_contiguous(ctx.xp, grad)], *params)
        return arrays[0]


def _apply_sparse(ctx, refs, grad, indices, use_locking, update, *params):
    """The same update on the rows ``indices`` only (duplicates summed first)."""
    xp = ctx.xp
    with _locked(use_locking, refs):
        arrays = _read_refs(refs)
        idx, g = _sparse_rows(ctx, refs[0], arrays[0], grad, indices)
        block = _BLOCK_SIZE.get(ctx.backend, 0) // 2
        if block and idx.size and all(a.flags.c_contiguous and a.dtype == g.dtype for a in arrays):
            _blocked_rows(ctx, update, arrays, idx, _contiguous(xp, g), block, *params)
            return arrays[0]
        rows = [a[idx] for a in arrays]
        update(xp, xp.empty_like(g), xp.empty_like(g), *rows, g, *params)
        for a, r in zip(arrays, rows):
            a[idx] = r
        return arrays[0]


def _blocked_rows(ctx, update, arrays, idx, g, block, *params):
    """``update`` on the rows ``idx`` (valid, distinct) of ``arrays``, a block of rows at a time:
    each block's rows are gathered into a per-thread scratch buffer, updated there in cache and
    scattered back. For 2048 rows of 64 of a 500K-row table's var and Adagrad slot: 0.37 ms (0.68
    ms gathering all rows into new arrays, which page-fault on every step)."""
    row = arrays[0][0].size
    per_block = max(1, block // max(row, 1))
    n = min(per_block, idx.size) * row
    scratch = _scratch(ctx, arrays[0].dtype, (len(arrays) + 2) * n)
    bufs = [scratch[i * n:(i + 1) * n] for i in range(len(arrays) + 2)]
    shape = arrays[0].shape[1:]
    for start in range(0, idx.size, per_block):
        rows_idx = idx[start:start + per_block]
        k = rows_idx.size
        tmp, tmp2, *rows = [b[:k * row].reshape((k,) + shape) for b in bufs]
        for a, r in zip(arrays, rows):
            np.take(a, rows_idx, axis=0, out=r, mode="clip")   # idx was checked in range
        update(ctx.xp, tmp, tmp2, *rows, g[start:start + k], *params)
        for a, r in zip(arrays, rows):
            a[rows_idx] = r


_ONE_PIECE = 4096   # elements: arrays this small are updated without blocks or scratch


# update function -> its fused GPU kernel ``fused(arrays, params)``, which returns False where it
# does not apply (cupy_kernels fills this where cupy can compile kernels).
GPU_UPDATES = {}


def _blocked(ctx, update, arrays, *params):
    """Run ``update(xp, tmp, tmp2, *array_blocks, *params)`` over aligned blocks of ``arrays``.

    The arrays (same shape; var, slots, grad) are updated in place through the block views;
    ``tmp``/``tmp2`` are scratch blocks of the same size. Arrays that are not C-contiguous (rare:
    variables are stored contiguously) are updated in one piece with full-size scratch arrays.
    On a GPU the update is one fused kernel where ``GPU_UPDATES`` has one (a launch per
    arithmetic operation otherwise).
    """
    xp = ctx.xp
    if ctx.backend == "cupy":
        fused = GPU_UPDATES.get(update)
        if fused is not None and fused(arrays, params):
            return
    if arrays[0].size <= _ONE_PIECE or not all(a.flags.c_contiguous for a in arrays):
        # Small (a scalar's update costs more in block bookkeeping than in arithmetic), or not
        # C-contiguous (rare: variables are stored contiguously): updated in one piece.
        update(xp, xp.empty_like(arrays[0]), xp.empty_like(arrays[0]), *arrays, *params)
        return
    flat = [a.reshape(-1) for a in arrays]
    n = flat[0].size
    block = min(n, _BLOCK_SIZE.get(ctx.backend, n))
    if block == 0:
        return
    scratch = _scratch(ctx, flat[0].dtype, 2 * block)
    tmp, tmp2 = scratch[:block], scratch[block:]
    for start in range(0, n, block):
        stop = min(n, start + block)
        size = stop - start
        update(xp, tmp[:size], tmp2[:size], *[a[start:stop] for a in flat], *params)


def _build(op_type, args, name, **attrs):
    """Create an update op from ``args``: ``(arg name, kind, value)`` in TF1's input order.

    Kinds: "ref" (the variable, then its slots), "scalar" (hyperparameters), "grad", "indices",
    "step" (an int64 scalar: the global step). Python values become constants of the variable's
    dtype (int64 for "step"); mismatches raise at build time.
    """
    var = _ref_tensor(args[0][2])
    dtype, shape = var.dtype.base_dtype, var.get_shape()
    sparse = any(kind == "indices" for _, kind, _ in args)
    inputs = []
    for arg, kind, value in args:
        if kind == "ref":
            t = _ref_tensor(value)
            if not shape.is_compatible_with(t.get_shape()):
                raise ValueError("%s: var %s and %s %s must have the same shape, got %s and %s"
                                 % (op_type, var.op.name, arg, t.op.name, shape, t.get_shape()))
        elif kind == "step":
            t = convert_to_tensor(value) if is_symbolic(value) else convert_to_tensor(
                value, dtype=_dtypes.int64)
            if t.dtype.base_dtype != _dtypes.int64 or t.get_shape().ndims not in (None, 0):
                raise TypeError("%s: %s must be an int64 scalar, got %s of shape %s"
                                % (op_type, arg, t.dtype.name, t.get_shape()))
        elif kind == "indices":
            t = convert_to_tensor(value)
            if not t.dtype.is_integer:
                raise TypeError("%s: indices must be int32 or int64, got %s" % (op_type, t.dtype.name))
            if t.get_shape().ndims not in (None, 1):
                raise ValueError("%s: indices must be one-dimensional, got shape %s"
                                 % (op_type, t.get_shape()))
        else:
            t = convert_to_tensor(value) if is_symbolic(value) else convert_to_tensor(value, dtype=dtype)
            if kind == "scalar" and t.get_shape().ndims not in (None, 0):
                raise ValueError("%s: %s must be a scalar, got shape %s" % (op_type, arg, t.get_shape()))
            if kind == "grad":
                _check_grad_shape(op_type, var, t, sparse)
        if kind not in ("indices", "step") and t.dtype.base_dtype != dtype:
            raise TypeError("%s: %s has dtype %s but the variable %s has dtype %s (cast it with "
                            "tf.cast)" % (op_type, arg, t.dtype.name, var.op.name, dtype.name))
        inputs.append(t)
    return make_op(op_type, inputs, name=name or op_type, **attrs)


def _check_grad_shape(op_type, var, grad, sparse):
    shape, g = var.get_shape(), grad.get_shape()
    if sparse:
        if shape.ndims is None or g.ndims is None:
            return
        expected = TensorShape([None] + shape.as_list()[1:])
    else:
        expected = shape
    if not expected.is_compatible_with(g):
        raise ValueError("%s: grad of shape %s does not fit variable %s of shape %s"
                         % (op_type, g, var.op.name, shape))


def _register(op_type, kernel, num_refs, streams_input=None):
    register_op(op_type, shape=lambda op: op.inputs[0].get_shape(), kernel=kernel, stateful=True,
                light_ok=True, ref_inputs=tuple(range(num_refs)), aliases_input=True, grad=None,
                streams_input=streams_input)


# -- GradientDescent: var -= alpha * delta -------------------------------------------------------
def _gd_update(xp, tmp, tmp2, w, g, alpha):
    xp.multiply(g, alpha, out=tmp)
    w -= tmp


def _apply_gradient_descent_kernel(ctx, var, alpha, delta, use_locking):
    _check_scalars(alpha=alpha)
    if getattr(delta, "zps_streamed", False):   # a large gradient still arriving
        return apply_streamed(ctx, var, delta, var.lock if use_locking else None,
                              lambda w, g: _gd_update(ctx.xp, ctx.xp.empty_like(g), None, w, g,
                                                      alpha),
                              lambda w, g: ctx.xp.add(w, g * alpha, out=w), "ApplyGradientDescent")
    return _apply_dense(ctx, (var,), delta, use_locking, _gd_update, alpha)


def _sparse_apply_gradient_descent_kernel(ctx, var, alpha, grad, indices, use_locking):
    _check_scalars(alpha=alpha)
    return _apply_sparse(ctx, (var,), grad, indices, use_locking, _gd_update, alpha)


_register("ApplyGradientDescent", _apply_gradient_descent_kernel, 1, streams_input=2)
# TF1 applies sparse GD as scatter_sub(var, indices, lr * values); this is that op, fused.
_register("SparseApplyGradientDescent", _sparse_apply_gradient_descent_kernel, 1)


def apply_gradient_descent(var, alpha, delta, use_locking=False, name=None):
    """``var -= alpha * delta`` in place; returns the variable's new value."""
    return _build("ApplyGradientDescent", [("var", "ref", var), ("alpha", "scalar", alpha),
                                           ("delta", "grad", delta)],
                  name, use_locking=bool(use_locking))


def sparse_apply_gradient_descent(var, alpha, grad, indices, use_locking=False, name=None):
    """``var[indices] -= alpha * grad`` (rows of duplicate indices summed); returns the new value."""
    return _build("SparseApplyGradientDescent",
                  [("var", "ref", var), ("alpha", "scalar", alpha), ("grad", "grad", grad),
                   ("indices", "indices", indices)], name, use_locking=bool(use_locking))


# -- Momentum: accum = accum * momentum + grad; var -= lr * accum (Nesterov: lr * (grad + m*accum))
def _momentum_update(xp, tmp, tmp2, w, accum, g, lr, momentum, use_nesterov):
    accum *= momentum
    accum += g
    if use_nesterov:
        xp.multiply(g, lr, out=tmp)
        xp.multiply(accum, momentum, out=tmp2)
        tmp2 *= lr
        tmp += tmp2
    else:
        xp.multiply(accum, lr, out=tmp)
    w -= tmp


def _apply_momentum_kernel(ctx, var, accum, lr, grad, momentum, use_locking, use_nesterov):
    _check_scalars(lr=lr, momentum=momentum)
    return _apply_dense(ctx, (var, accum), grad, use_locking, _momentum_update, lr, momentum,
                        use_nesterov)


def _sparse_apply_momentum_kernel(ctx, var, accum, lr, grad, indices, momentum, use_locking,
                                  use_nesterov):
    _check_scalars(lr=lr, momentum=momentum)
    return _apply_sparse(ctx, (var, accum), grad, indices, use_locking, _momentum_update, lr,
                         momentum, use_nesterov)


_register("ApplyMomentum", _apply_momentum_kernel, 2)
_register("SparseApplyMomentum", _sparse_apply_momentum_kernel, 2)


def apply_momentum(var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False, name=None):
    """Momentum update of ``var`` and its ``accum`` slot in place; returns the new value."""
    return _build("ApplyMomentum", [("var", "ref", var), ("accum", "ref", accum),
                                    ("lr", "scalar", lr), ("grad", "grad", grad),
                                    ("momentum", "scalar", momentum)],
                  name, use_locking=bool(use_locking), use_nesterov=bool(use_nesterov))


def sparse_apply_momentum(var, accum, lr, grad, indices, momentum, use_locking=False,
                          use_nesterov=False, name=None):
    """Momentum update of the rows ``indices`` of ``var`` and ``accum``; returns the new value."""
    return _build("SparseApplyMomentum",
                  [("var", "ref", var), ("accum", "ref", accum), ("lr", "scalar", lr),
                   ("grad", "grad", grad), ("indices", "indices", indices),
                   ("momentum", "scalar", momentum)],
                  name, use_locking=bool(use_locking), use_nesterov=bool(use_nesterov))


# -- Adagrad: accum += grad^2; var -= lr * grad / sqrt(accum) ------------------------------------
def _adagrad_update(xp, tmp, tmp2, w, accum, g, lr, update_slots):
    if update_slots:
        xp.multiply(g, g, out=tmp)
        accum += tmp
    xp.sqrt(accum, out=tmp)
    xp.divide(g, tmp, out=tmp)
    tmp *= lr
    w -= tmp


def _apply_adagrad_kernel(ctx, var, accum, lr, grad, use_locking, update_slots):
    _check_scalars(lr=lr)
    return _apply_dense(ctx, (var, accum), grad, use_locking, _adagrad_update, lr, update_slots)


def _sparse_apply_adagrad_kernel(ctx, var, accum, lr, grad, indices, use_locking, update_slots):
    _check_scalars(lr=lr)
    return _apply_sparse(ctx, (var, accum), grad, indices, use_locking, _adagrad_update, lr,
                         update_slots)


_register("ApplyAdagrad", _apply_adagrad_kernel, 2)
_register("SparseApplyAdagrad", _sparse_apply_adagrad_kernel, 2)


def apply_adagrad(var, accum, lr, grad, use_locking=False, update_slots=True, name=None):
    """Adagrad update of ``var`` and its ``accum`` slot in place; returns the new value."""
    return _build("ApplyAdagrad", [("var", "ref", var), ("accum", "ref", accum),
                                   ("lr", "scalar", lr), ("grad", "grad", grad)],
                  name, use_locking=bool(use_locking), update_slots=bool(update_slots))


def sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking=False, update_slots=True,
                         name=None):
    """Adagrad update of the rows ``indices`` of ``var`` and ``accum``; returns the new value."""
    return _build("SparseApplyAdagrad",
                  [("var", "ref", var), ("accum", "ref", accum), ("lr", "scalar", lr),
                   ("grad", "grad", grad), ("indices", "indices", indices)],
                  name, use_locking=bool(use_locking), update_slots=bool(update_slots))


# -- FTRL-Proximal (McMahan et al. 2013; TF1's ApplyFtrl / ApplyFtrlV2) --------------------------
# accum_new = accum + g^2; linear += g + 2 * l2_shrinkage * var
#                                     - (accum_new^-p - accum^-p) / lr * var;
# var = (clip(linear, -l1, l1) - linear) / (accum_new^-p / lr + 2 * l2): 0 where |linear| <= l1.
def _ftrl_update(xp, tmp, tmp2, w, accum, linear, g, lr, l1, l2, l2_shrinkage, lr_power):
    def root(a, out):   # accum^-lr_power
        return xp.sqrt(a, out=out) if lr_power == -0.5 else xp.power(a, -lr_power, out=out)
    root(accum, tmp)
    xp.multiply(g, g, out=tmp2)
    accum += tmp2
    root(accum, tmp2)
    xp.subtract(tmp2, tmp, out=tmp)
    tmp /= lr
    tmp *= w
    linear += g
    linear -= tmp
    if l2_shrinkage:
        xp.multiply(w, 2 * l2_shrinkage, out=tmp)
        linear += tmp
    tmp2 /= lr
    tmp2 += 2 * l2
    xp.clip(linear, -l1, l1, out=tmp)
    tmp -= linear
    xp.divide(tmp, tmp2, out=w)


def _ftrl_params(lr, l1, l2, l2_shrinkage, lr_power):
    _check_scalars(lr=lr, l1=l1, l2=l2, l2_shrinkage=l2_shrinkage, lr_power=lr_power)
    for name, value, ok, rule in (("lr", lr, lr > 0, "positive"),
                                  ("l1", l1, l1 >= 0, "non-negative"),
                                  ("l2", l2, l2 >= 0, "non-negative"),
                                  ("l2_shrinkage", l2_shrinkage, l2_shrinkage >= 0, "non-negative"),
                                  ("lr_power", lr_power, lr_power <= 0, "non-positive")):
        if not ok:
            raise errors.InvalidArgumentError(None, None, "%s must be %s, got %s"
                                              % (name, rule, value))
    return lr, l1, l2, l2_shrinkage, float(lr_power)


def _apply_ftrl_kernel(ctx, var, accum, linear, grad, lr, l1, l2, lr_power, use_locking):
    return _apply_ftrl_v2_kernel(ctx, var, accum, linear, grad, lr, l1, l2, l2.dtype.type(0),
                                 lr_power, use_locking)


def _apply_ftrl_v2_kernel(ctx, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power,
                          use_locking):
    return _apply_dense(ctx, (var, accum, linear), grad, use_locking, _ftrl_update,
                        *_ftrl_params(lr, l1, l2, l2_shrinkage, lr_power))


def _sparse_apply_ftrl_kernel(ctx, var, accum, linear, grad, indices, lr, l1, l2, lr_power,
                              use_locking):
    return _sparse_apply_ftrl_v2_kernel(ctx, var, accum, linear, grad, indices, lr, l1, l2,
                                        l2.dtype.type(0), lr_power, use_locking)


def _sparse_apply_ftrl_v2_kernel(ctx, var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage,
                                 lr_power, use_locking):
    return _apply_sparse(ctx, (var, accum, linear), grad, indices, use_locking, _ftrl_update,
                         *_ftrl_params(lr, l1, l2, l2_shrinkage, lr_power))


_register("ApplyFtrl", _apply_ftrl_kernel, 3)
_register("ApplyFtrlV2", _apply_ftrl_v2_kernel, 3)
_register("SparseApplyFtrl", _sparse_apply_ftrl_kernel, 3)
_register("SparseApplyFtrlV2", _sparse_apply_ftrl_v2_kernel, 3)


def _ftrl_args(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power):
    args = [("var", "ref", var), ("accum", "ref", accum), ("linear", "ref", linear),
            ("grad", "grad", grad)]
    if indices is not None:
        args.append(("indices", "indices", indices))
    args += [("lr", "scalar", lr), ("l1", "scalar", l1), ("l2", "scalar", l2)]
    if l2_shrinkage is not None:
        args.append(("l2_shrinkage", "scalar", l2_shrinkage))
    return args + [("lr_power", "scalar", lr_power)]


def apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False,
               l2_shrinkage=None, name=None):
    """FTRL-Proximal update of ``var`` and its ``accum`` and ``linear`` slots in place (TF1's
    ApplyFtrl, or ApplyFtrlV2 with ``l2_shrinkage``); returns the new value."""
    return _build("ApplyFtrl" if l2_shrinkage is None else "ApplyFtrlV2",
                  _ftrl_args(var, accum, linear, grad, None, lr, l1, l2, l2_shrinkage, lr_power),
                  name, use_locking=bool(use_locking))


def sparse_apply_ftrl(var, accum, linear, grad, indices, lr, l1, l2, lr_power, use_locking=False,
                      l2_shrinkage=None, name=None):
    """The FTRL-Proximal update of the rows ``indices`` only (duplicates summed first)."""
    return _build("SparseApplyFtrl" if l2_shrinkage is None else "SparseApplyFtrlV2",
                  _ftrl_args(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage,
                             lr_power), name, use_locking=bool(use_locking))


# -- Adam ----------------------------------------------------------------------------------------
# alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m) * (1 - beta1);
# v += (g^2 - v) * (1 - beta2); var -= m * alpha / (sqrt(v) + epsilon)
# (Nesterov: (m * beta1 + (1 - beta1) * g) * alpha / (sqrt(v) + epsilon)), in TF's order of
# operations, so that float32 results are TF's to the last bit.
def _adam_alpha(xp, lr, beta1_power, beta2_power):
    # A one of lr's dtype: numpy 1 computes 1 - a float32 0-d array in float64.
    one = lr.dtype.type(1)
    return lr * xp.sqrt(one - beta2_power) / (one - beta1_power)


def _adam_var_update(xp, tmp, tmp2, w, m, v, alpha, epsilon):
    xp.sqrt(v, out=tmp)
    tmp += epsilon
    xp.multiply(m, alpha, out=tmp2)
    tmp2 /= tmp
    w -= tmp2


def _adam_update(xp, tmp, tmp2, w, m, v, g, alpha, beta1, beta2, epsilon, use_nesterov):
    xp.subtract(g, m, out=tmp)
    tmp *= 1 - beta1
    m += tmp
    xp.multiply(g, g, out=tmp)
    tmp -= v
    tmp *= 1 - beta2
    v += tmp
    if not use_nesterov:
        _adam_var_update(xp, tmp, tmp2, w, m, v, alpha, epsilon)
        return
    xp.multiply(m, beta1, out=tmp)
    xp.multiply(g, 1 - beta1, out=tmp2)
    tmp += tmp2
    tmp *= alpha
    xp.sqrt(v, out=tmp2)
    tmp2 += epsilon
    tmp /= tmp2
    w -= tmp


def _apply_adam_kernel(ctx, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                       use_locking, use_nesterov):
    _check_scalars(beta1_power=beta1_power, beta2_power=beta2_power, lr=lr, beta1=beta1,
                   beta2=beta2, epsilon=epsilon)
    alpha = _adam_alpha(ctx.xp, lr, beta1_power, beta2_power)
    return _apply_dense(ctx, (var, m, v), grad, use_locking, _adam_update, alpha, beta1, beta2,
                        epsilon, use_nesterov)


def _sparse_apply_adam_kernel(ctx, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
                              grad, indices, use_locking):
    # TF1's AdamOptimizer._apply_sparse is not lazy: m and v decay on every row, the gradient
    # rows are scatter-added, and every row of var moves.
    _check_scalars(beta1_power=beta1_power, beta2_power=beta2_power, lr=lr, beta1=beta1,
                   beta2=beta2, epsilon=epsilon)
    xp = ctx.xp
    refs = (var, m, v)
    with _locked(use_locking, refs):
        w, m_, v_ = _read_refs(refs)
        idx, g = _sparse_rows(ctx, var, w, grad, indices)
        m_ *= beta1
        m_[idx] += g * (1 - beta1)
        v_ *= beta2
        v_[idx] += (g * g) * (1 - beta2)
        _blocked(ctx, _adam_var_update, [w, m_, v_], _adam_alpha(xp, lr, beta1_power, beta2_power),
                 epsilon)
        return w


_register("ApplyAdam", _apply_adam_kernel, 3)
_register("SparseApplyAdam", _sparse_apply_adam_kernel, 3)


def apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
               use_locking=False, use_nesterov=False, name=None):
    """Adam update of ``var`` and its ``m``, ``v`` slots in place; returns the new value."""
    return _build("ApplyAdam", [("var", "ref", var), ("m", "ref", m), ("v", "ref", v),
                                ("beta1_power", "scalar", beta1_power),
                                ("beta2_power", "scalar", beta2_power), ("lr", "scalar", lr),
                                ("beta1", "scalar", beta1), ("beta2", "scalar", beta2),
                                ("epsilon", "scalar", epsilon), ("grad", "grad", grad)],
                  name, use_locking=bool(use_locking), use_nesterov=bool(use_nesterov))


def sparse_apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices,
                      use_locking=False, name=None):
    """TF1's sparse Adam step (moments decay everywhere, gradient rows added); returns var."""
    return _build("SparseApplyAdam", [("var", "ref", var), ("m", "ref", m), ("v", "ref", v),
                                      ("beta1_power", "scalar", beta1_power),
                                      ("beta2_power", "scalar", beta2_power),
                                      ("lr", "scalar", lr), ("beta1", "scalar", beta1),
                                      ("beta2", "scalar", beta2), ("epsilon", "scalar", epsilon),
                                      ("grad", "grad", grad), ("indices", "indices", indices)],
                  name, use_locking=bool(use_locking))


# -- RMSProp: ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + lr * g / sqrt(ms + epsilon);
#    var -= mom. Centered: mg += (g - mg) * (1 - rho) and the root is sqrt(ms - mg^2 + epsilon).
def _rms_prop_step(xp, tmp, tmp2, w, mom, g, lr, momentum):
    # tmp holds the denominator on entry.
    xp.multiply(g, lr, out=tmp2)
    xp.divide(tmp2, tmp, out=tmp)
    mom *= momentum
    mom += tmp
    w -= mom


def _rms_prop_update(xp, tmp, tmp2, w, ms, mom, g, lr, rho, momentum, epsilon):
    xp.multiply(g, g, out=tmp)
    tmp -= ms
    tmp *= 1 - rho
    ms += tmp
    xp.add(ms, epsilon, out=tmp)
    xp.sqrt(tmp, out=tmp)
    _rms_prop_step(xp, tmp, tmp2, w, mom, g, lr, momentum)


def _centered_rms_prop_update(xp, tmp, tmp2, w, mg, ms, mom, g, lr, rho, momentum, epsilon):
    xp.multiply(g, g, out=tmp)
    tmp -= ms
    tmp *= 1 - rho
    ms += tmp
    xp.subtract(g, mg, out=tmp)
    tmp *= 1 - rho
    mg += tmp
    xp.multiply(mg, mg, out=tmp)
    xp.subtract(ms, tmp, out=tmp)
    tmp += epsilon
    xp.sqrt(tmp, out=tmp)
    _rms_prop_step(xp, tmp, tmp2, w, mom, g, lr, momentum)


def _apply_rms_prop_kernel(ctx, var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking):
    _check_scalars(lr=lr, rho=rho, momentum=momentum, epsilon=epsilon)
    return _apply_dense(ctx, (var, ms, mom), grad, use_locking, _rms_prop_update, lr, rho, momentum,
                        epsilon)


def _sparse_apply_rms_prop_kernel(ctx, var, ms, mom, lr, rho, momentum, epsilon, grad, indices,
                                  use_locking):
    _check_scalars(lr=lr, rho=rho, momentum=momentum, epsilon=epsilon)
    return _apply_sparse(ctx, (var, ms, mom), grad, indices, use_locking, _rms_prop_update, lr, rho,
                         momentum, epsilon)


def _apply_centered_rms_prop_kernel(ctx, var, mg, ms, mom, lr, rho, momentum, epsilon, grad,
                                    use_locking):
    _check_scalars(lr=lr, rho=rho, momentum=momentum, epsilon=epsilon)
    return _apply_dense(ctx, (var, mg, ms, mom), grad, use_locking, _centered_rms_prop_update, lr,
                        rho, momentum, epsilon)


def _sparse_apply_centered_rms_prop_kernel(ctx, var, mg, ms, mom, lr, rho, momentum, epsilon, grad,
                                           indices, use_locking):
    _check_scalars(lr=lr, rho=rho, momentum=momentum, epsilon=epsilon)
    return _apply_sparse(ctx, (var, mg, ms, mom), grad, indices, use_locking,
                         _centered_rms_prop_update, lr, rho, momentum, epsilon)


_register("ApplyRMSProp", _apply_rms_prop_kernel, 3)
_register("SparseApplyRMSProp", _sparse_apply_rms_prop_kernel, 3)
_register("ApplyCenteredRMSProp", _apply_centered_rms_prop_kernel, 4)
_register("SparseApplyCenteredRMSProp", _sparse_apply_centered_rms_prop_kernel, 4)


def _rms_prop_args(refs, lr, rho, momentum, epsilon, grad, indices=None):
    args = list(refs) + [("lr", "scalar", lr), ("rho", "scalar", rho),
                         ("momentum", "scalar", momentum), ("epsilon", "scalar", epsilon),
                         ("grad", "grad", grad)]
    return args + ([("indices", "indices", indices)] if indices is not None else [])


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None):
    """RMSProp update of ``var`` and its ``ms``, ``mom`` slots in place; returns the new value."""
    refs = [("var", "ref", var), ("ms", "ref", ms), ("mom", "ref", mom)]
    return _build("ApplyRMSProp", _rms_prop_args(refs, lr, rho, momentum, epsilon, grad), name,
                  use_locking=bool(use_locking))


def sparse_apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, indices, use_locking=False,
                          name=None):
    """RMSProp update of the rows ``indices`` of ``var``, ``ms`` and ``mom``."""
    refs = [("var", "ref", var), ("ms", "ref", ms), ("mom", "ref", mom)]
    return _build("SparseApplyRMSProp", _rms_prop_args(refs, lr, rho, momentum, epsilon, grad,
                                                       indices), name, use_locking=bool(use_locking))


def apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False,
                            name=None):
    """Centered RMSProp update of ``var`` and its ``mg``, ``ms``, ``mom`` slots in place."""
    refs = [("var", "ref", var), ("mg", "ref", mg), ("ms", "ref", ms), ("mom", "ref", mom)]
    return _build("ApplyCenteredRMSProp", _rms_prop_args(refs, lr, rho, momentum, epsilon, grad),
                  name, use_locking=bool(use_locking))


def sparse_apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices,
                                   use_locking=False, name=None):
    """Centered RMSProp update of the rows ``indices`` of ``var`` and its slots."""
    refs = [("var", "ref", var), ("mg", "ref", mg), ("ms", "ref", ms), ("mom", "ref", mom)]
    return _build("SparseApplyCenteredRMSProp",
                  _rms_prop_args(refs, lr, rho, momentum, epsilon, grad, indices), name,
                  use_locking=bool(use_locking))


# -- Adadelta (Zeiler 2012; TF1's ApplyAdadelta) ---------------------------------------------
# accum = accum * rho + g^2 * (1 - rho); update = sqrt(accum_update + eps) / sqrt(accum + eps) * g;
# var -= update * lr; accum_update = accum_update * rho + update^2 * (1 - rho).
def _adadelta_update(xp, tmp, tmp2, w, accum, accum_update, g, lr, rho, epsilon):
    one = rho.dtype.type(1)
    xp.multiply(g, g, out=tmp)
    tmp *= one - rho
    accum *= rho
    accum += tmp
    xp.add(accum_update, epsilon, out=tmp)
    xp.sqrt(tmp, out=tmp)
    xp.add(accum, epsilon, out=tmp2)
    xp.sqrt(tmp2, out=tmp2)
    tmp /= tmp2
    tmp *= g                          # tmp: the update
    xp.multiply(tmp, lr, out=tmp2)
    w -= tmp2
    tmp *= tmp
    tmp *= one - rho
    accum_update *= rho
    accum_update += tmp


def _apply_adadelta_kernel(ctx, var, accum, accum_update, lr, rho, epsilon, grad, use_locking):
    _check_scalars(lr=lr, rho=rho, epsilon=epsilon)
    return _apply_dense(ctx, (var, accum, accum_update), grad, use_locking, _adadelta_update, lr,
                        rho, epsilon)


def _sparse_apply_adadelta_kernel(ctx, var, accum, accum_update, lr, rho, epsilon, grad, indices,
                                  use_locking):
    _check_scalars(lr=lr, rho=rho, epsilon=epsilon)
    return _apply_sparse(ctx, (var, accum, accum_update), grad, indices, use_locking,
                         _adadelta_update, lr, rho, epsilon)


_register("ApplyAdadelta", _apply_adadelta_kernel, 3)
_register("SparseApplyAdadelta", _sparse_apply_adadelta_kernel, 3)


def _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad, indices=None):
    args = [("var", "ref", var), ("accum", "ref", accum), ("accum_update", "ref", accum_update),
            ("lr", "scalar", lr), ("rho", "scalar", rho), ("epsilon", "scalar", epsilon),
            ("grad", "grad", grad)]
    return args + ([("indices", "indices", indices)] if indices is not None else [])


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False, name=None):
    """Adadelta update of ``var`` and its ``accum``, ``accum_update`` slots in place."""
    return _build("ApplyAdadelta", _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad),
                  name, use_locking=bool(use_locking))


def sparse_apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, indices,
                          use_locking=False, name=None):
    """Adadelta update of the rows ``indices`` of ``var`` and its slots."""
    return _build("SparseApplyAdadelta",
                  _adadelta_args(var, accum, accum_update, lr, rho, epsilon, grad, indices), name,
                  use_locking=bool(use_locking))


# -- proximal updates (TF1's ApplyProximalGradientDescent, ApplyProximalAdagrad; FOBOS) ---------
# prox_v = var - step * g; var = sign(prox_v) * max(|prox_v| - step * l1, 0) / (1 + step * l2),
# step = alpha (gradient descent) or lr / sqrt(accum) with accum += g^2 first (Adagrad). With
# l1 = 0 this equals TF1's other branch, prox_v / (1 + step * l2), to the bit (sign(p) * |p| = p),
# so the kernels never branch on a hyperparameter (which may live on a GPU).
def _shrink(xp, tmp, w, step_l1):
    """``w`` (holding prox_v) becomes ``sign(w) * max(|w| - step_l1, 0)``."""
    xp.abs(w, out=tmp)
    tmp -= step_l1
    xp.maximum(tmp, 0, out=tmp)
    xp.sign(w, out=w)
    w *= tmp


def _proximal_gd_update(xp, tmp, tmp2, w, g, alpha, l1, l2):
    xp.multiply(g, alpha, out=tmp)
    w -= tmp
    _shrink(xp, tmp, w, alpha * l1)
    w /= alpha * l2 + alpha.dtype.type(1)


def _adagrad_rate(xp, out, accum, lr):
    """``lr * rsqrt(accum)`` into ``out`` (TF1's per-coordinate Adagrad learning rate)."""
    xp.sqrt(accum, out=out)
    xp.reciprocal(out, out=out)
    out *= lr


def _proximal_adagrad_update(xp, tmp, tmp2, w, accum, g, lr, l1, l2):
    xp.multiply(g, g, out=tmp)
    accum += tmp
    _adagrad_rate(xp, tmp, accum, lr)
    xp.multiply(g, tmp, out=tmp2)
    w -= tmp2
    tmp *= l1
    _shrink(xp, tmp2, w, tmp)
    _adagrad_rate(xp, tmp, accum, lr)   # recomputed: two scratch blocks are all there is
    tmp *= l2
    tmp += lr.dtype.type(1)
    w /= tmp


def _proximal_params(**scalars):
    _check_scalars(**scalars)
    return tuple(scalars.values())


def _apply_proximal_gradient_descent_kernel(ctx, var, alpha, l1, l2, delta, use_locking):
    return _apply_dense(ctx, (var,), delta, use_locking, _proximal_gd_update,
                        *_proximal_params(alpha=alpha, l1=l1, l2=l2))


def _sparse_apply_proximal_gradient_descent_kernel(ctx, var, alpha, l1, l2, grad, indices,
                                                   use_locking):
    return _apply_sparse(ctx, (var,), grad, indices, use_locking, _proximal_gd_update,
                         *_proximal_params(alpha=alpha, l1=l1, l2=l2))


def _apply_proximal_adagrad_kernel(ctx, var, accum, lr, l1, l2, grad, use_locking):
    return _apply_dense(ctx, (var, accum), grad, use_locking, _proximal_adagrad_update,
                        *_proximal_params(lr=lr, l1=l1, l2=l2))


def _sparse_apply_proximal_adagrad_kernel(ctx, var, accum, lr, l1, l2, grad, indices, use_locking):
    return _apply_sparse(ctx, (var, accum), grad, indices, use_locking, _proximal_adagrad_update,
                         *_proximal_params(lr=lr, l1=l1, l2=l2))


_register("ApplyProximalGradientDescent", _apply_proximal_gradient_descent_kernel, 1)
_register("SparseApplyProximalGradientDescent", _sparse_apply_proximal_gradient_descent_kernel, 1)
_register("ApplyProximalAdagrad", _apply_proximal_adagrad_kernel, 2)
_register("SparseApplyProximalAdagrad", _sparse_apply_proximal_adagrad_kernel, 2)


def _proximal_args(refs, rate, l1, l2, grad, indices):
    args = list(refs) + [rate, ("l1", "scalar", l1), ("l2", "scalar", l2), ("grad", "grad", grad)]
    return args + ([("indices", "indices", indices)] if indices is not None else [])


def apply_proximal_gradient_descent(var, alpha, l1, l2, delta, use_locking=False, name=None):
    """``var`` moved by ``-alpha * delta`` then shrunk by L1 ``l1`` and L2 ``l2`` (FOBOS)."""
    return _build("ApplyProximalGradientDescent",
                  _proximal_args([("var", "ref", var)], ("alpha", "scalar", alpha), l1, l2, delta,
                                 None), name, use_locking=bool(use_locking))


def sparse_apply_proximal_gradient_descent(var, alpha, l1, l2, grad, indices, use_locking=False,
                                           name=None):
    """The proximal gradient descent update of the rows ``indices`` only."""
    return _build("SparseApplyProximalGradientDescent",
                  _proximal_args([("var", "ref", var)], ("alpha", "scalar", alpha), l1, l2, grad,
                                 indices), name, use_locking=bool(use_locking))


def apply_proximal_adagrad(var, accum, lr, l1, l2, grad, use_locking=False, name=None):
    """Proximal Adagrad (FOBOS with Adagrad's rates) of ``var`` and its ``accum`` slot in place."""
    return _build("ApplyProximalAdagrad",
                  _proximal_args([("var", "ref", var), ("accum", "ref", accum)],
                                 ("lr", "scalar", lr), l1, l2, grad, None),
                  name, use_locking=bool(use_locking))


def sparse_apply_proximal_adagrad(var, accum, lr, l1, l2, grad, indices, use_locking=False,
                                  name=None):
    """The proximal Adagrad update of the rows ``indices`` of ``var`` and ``accum``."""
    return _build("SparseApplyProximalAdagrad",
                  _proximal_args([("var", "ref", var), ("accum", "ref", accum)],
                                 ("lr", "scalar", lr), l1, l2, grad, indices),
                  name, use_locking=bool(use_locking))


# -- AdagradDA (Adagrad dual averaging, Duchi et al. 2011; TF1's ApplyAdagradDA) --------------
# g_acc += g; gg_acc += g^2; with T the global step:
# var = -lr * sign(g_acc) * max(|g_acc| - T * l1, 0) / (l2 * (T * lr) + sqrt(gg_acc))
# (l1 = 0: -lr * g_acc / (...), the same to the bit, as for the proximal updates above).
def _adagrad_da_update(xp, tmp, tmp2, w, g_acc, gg_acc, g, lr, l1, l2, step):
    g_acc += g
    xp.multiply(g, g, out=tmp)
    gg_acc += tmp
    xp.sqrt(gg_acc, out=tmp2)
    tmp2 += l2 * (step * lr)
    xp.copyto(w, g_acc)
    _shrink(xp, tmp, w, step * l1)
    w *= -lr
    w /= tmp2


def _adagrad_da_params(lr, l1, l2, global_step):
    _check_scalars(lr=lr, l1=l1, l2=l2, global_step=global_step)
    # The step is a host value (HOST_INPUTS on a GPU): one Python float, of the var's dtype.
    return lr, l1, l2, lr.dtype.type(int(global_step))


def _apply_adagrad_da_kernel(ctx, var, g_acc, gg_acc, grad, lr, l1, l2, global_step, use_locking):
    return _apply_dense(ctx, (var, g_acc, gg_acc), grad, use_locking, _adagrad_da_update,
                        *_adagrad_da_params(lr, l1, l2, global_step))


def _sparse_apply_adagrad_da_kernel(ctx, var, g_acc, gg_acc, grad, indices, lr, l1, l2,
                                    global_step, use_locking):
    return _apply_sparse(ctx, (var, g_acc, gg_acc), grad, indices, use_locking,
                         _adagrad_da_update, *_adagrad_da_params(lr, l1, l2, global_step))


_register("ApplyAdagradDA", _apply_adagrad_da_kernel, 3)
_register("SparseApplyAdagradDA", _sparse_apply_adagrad_da_kernel, 3)


def _adagrad_da_args(var, g_acc, gg_acc, grad, indices, lr, l1, l2, global_step):
    args = [("var", "ref", var), ("gradient_accumulator", "ref", g_acc),
            ("gradient_squared_accumulator", "ref", gg_acc), ("grad", "grad", grad)]
    if indices is not None:
        args.append(("indices", "indices", indices))
    return args + [("lr", "scalar", lr), ("l1", "scalar", l1), ("l2", "scalar", l2),
                   ("global_step", "step", global_step)]


def apply_adagrad_da(var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2,
                     global_step, use_locking=False, name=None):
    """Adagrad dual-averaging update of ``var`` from its accumulators at step ``global_step``."""
    return _build("ApplyAdagradDA",
                  _adagrad_da_args(var, gradient_accumulator, gradient_squared_accumulator, grad,
                                   None, lr, l1, l2, global_step),
                  name, use_locking=bool(use_locking))


def sparse_apply_adagrad_da(var, gradient_accumulator, gradient_squared_accumulator, grad, indices,
                            lr, l1, l2, global_step, use_locking=False, name=None):
    """The Adagrad dual-averaging update of the rows ``indices`` only."""
    return _build("SparseApplyAdagradDA",
                  _adagrad_da_args(var, gradient_accumulator, gradient_squared_accumulator, grad,
                                   indices, lr, l1, l2, global_step),
                  name, use_locking=bool(use_locking))


# The raw update ops are not part of TF1's public namespace (optimizers use them); import them
# from zps.ops.training_ops.
__all__ = []
