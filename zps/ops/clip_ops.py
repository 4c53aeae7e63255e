"""Clipping: ``clip_by_value``, ``clip_by_norm``, ``global_norm``, ``clip_by_global_norm`` (TF1).

These are compositions of math ops (no ops of their own), so their gradients come from those ops.
IndexedSlices (sparse gradients of gathers) are clipped on their values and keep their indices.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     grads = [tf.constant([3.0, 4.0]), None, tf.constant([12.0])]
...     clipped, norm = tf.clip_by_global_norm(grads, 6.5)
...     a, b, n = tf.Session().run([clipped[0], clipped[2], norm])
>>> a.tolist(), b.tolist(), float(n)
([1.5, 2.0], [6.0], 13.0)
"""

from collections.abc import Sequence

from zps.framework.graph import IndexedSlices, convert_to_tensor
from zps.ops import array_ops, math_ops


def _values(t, name):
    """The dense tensor to clip: ``t`` itself, or the values of an IndexedSlices."""
    return convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t, name=name)


def _like(t, clipped):
    """``clipped`` in the form of ``t``: an IndexedSlices with ``t``'s indices if ``t`` is one."""
    return IndexedSlices(clipped, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) else clipped


def _check_not_broadcast(values, result, what):
    if not values.get_shape().is_compatible_with(result.get_shape()):
        raise ValueError("%s would broadcast %s of shape %s to shape %s; the clip values must "
                         "broadcast to the shape of the tensor being clipped"
                         % (what, values.name, values.get_shape(), result.get_shape()))


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """``t`` with each element limited to ``[clip_value_min, clip_value_max]``.

    The gradient passes through where ``t`` was not clipped (elements equal to a bound included)
    and goes to the bound where it was.

    Example: ``tf.clip_by_value(tf.constant([-2.0, 0.5, 3.0]), 0.0, 1.0)`` evaluates to ``[0., 0.5, 1.]``.
    """
    values = _values(t, "t")
    t_min = math_ops.minimum(values, clip_value_max)
    _check_not_broadcast(values, t_min, "clip_by_value")
    t_max = math_ops.maximum(t_min, clip_value_min, name=name or "clip_by_value")
    _check_not_broadcast(values, t_max, "clip_by_value")
    return _like(t, t_max)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(l2norm(t), clip_norm)``, the L2 norm taken over ``axes`` (default all).

    A zero tensor stays zero and gets a finite gradient.
    """
    values = _values(t, "t")
    l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
    # TF1's "two-tap where" without where: sqrt never sees 0, so its gradient stays finite.
    positive = math_ops.cast(l2sum > 0, l2sum.dtype)
    l2norm = math_ops.sqrt(l2sum + (1.0 - positive)) * positive
    intermediate = values * clip_norm
    _check_not_broadcast(values, intermediate, "clip_by_norm")
    clipped = array_ops.identity(intermediate / math_ops.maximum(l2norm, clip_norm),
                                 name=name or "clip_by_norm")
    return _like(t, clipped)


def _check_sequence(t_list):
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError("t_list should be a sequence (a list or tuple of tensors), got %s"
                        % type(t_list).__name__)
    return list(t_list)


def global_norm(t_list, name=None):
    """``sqrt(sum(l2norm(t) ** 2 for t in t_list))``; None entries are ignored.

    Example: ``tf.global_norm([tf.constant([3.0]), tf.constant([4.0])])`` evaluates to ``5.0``.
    """
    t_list = _check_sequence(t_list)
    half_squared_norms = []
    for i, t in enumerate(t_list):
        if t is None:
            continue
        v = _values(t, "t_%d" % i)
        with v.graph.colocate_with(v.op):
            # TF1 sums l2_loss(v) = sum(v**2) / 2 per tensor and doubles the total.
            half_squared_norms.append(math_ops.reduce_sum(math_ops.square(v)) * 0.5)
    if not half_squared_norms:   # every gradient None (no trainable variable reaches the loss)
        return array_ops.constant(0.0, name=name or "global_norm")
    half_squared_norm = math_ops.add_n(half_squared_norms)
    return math_ops.sqrt(half_squared_norm * 2.0, name=name or "global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scale every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``.

    Returns ``(list_clipped, global_norm)``. None entries stay None and IndexedSlices keep their
    indices. ``use_norm`` replaces the computed global norm; if the norm is inf or NaN every
    clipped value is NaN (as TF1), so a diverging step is visible rather than silently scaled.
    """
    t_list = _check_sequence(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    use_norm = convert_to_tensor(use_norm)
    clip_norm = convert_to_tensor(clip_norm, dtype=use_norm.dtype)
    # TF1's exact formula: clip_norm * min(1 / norm, 1 / clip_norm), made NaN for a non-finite norm.
    scale_for_finite = clip_norm * math_ops.minimum(1.0 / use_norm, 1.0 / clip_norm)
    scale = scale_for_finite + (use_norm - use_norm)
    base = name or "clip_by_global_norm"
    clipped = []
    for i, t in enumerate(t_list):
        if t is None:
            clipped.append(None)
            continue
        v = _values(t, "t_%d" % i)
        with v.graph.colocate_with(v.op):
            c = array_ops.identity(v * math_ops.cast(scale, v.dtype), name="%s_%d" % (base, i))
        clipped.append(_like(t, c))
    return clipped, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """``t`` scaled so that its L2 norm divided by its number of elements is at most
    ``clip_norm`` (TF1's deprecated clip_by_average_norm)."""
    t = convert_to_tensor(t, name="t")
    l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(t * t))
    n_element = math_ops.cast(array_ops.size(t), t.dtype)
    clip_norm = math_ops.cast(clip_norm, t.dtype)
    scale = math_ops.minimum(l2norm_inv * n_element, 1.0 / clip_norm)
    return array_ops.identity(t * clip_norm * scale, name=name or "clip_by_average_norm")


__all__ = [
    "clip_by_average_norm",
    "clip_by_value",
    "clip_by_norm",
    "global_norm",
    "clip_by_global_norm",
]
