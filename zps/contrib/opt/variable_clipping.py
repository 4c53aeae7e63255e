"""``VariableClippingOptimizer``: after another optimizer's update, clip the L2 norm of chosen
variables along chosen dimensions (TF1's contrib; not gradient clipping).

``vars_to_clip_dims`` maps each variable to clip to the dimensions of its norm (as
``tf.clip_by_norm``'s ``axes``): ``{emb: [1]}`` keeps every embedding row within ``max_norm``.
For a sparse gradient only its rows are clipped (unless dimension 0 is clipped over). Slots and
gradients are the wrapped optimizer's.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([[3.0, 4.0], [0.3, 0.4]], name="w")
...     opt = tf.contrib.opt.VariableClippingOptimizer(
...         tf.train.GradientDescentOptimizer(0.0), {w: [1]}, max_norm=1.0)
...     step = opt.minimize(tf.reduce_sum(w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w).round(4))
[[0.6 0.8]
 [0.3 0.4]]
"""

import contextlib

from zps import logging
from zps.framework.graph import IndexedSlices, Tensor, get_default_graph
from zps.ops import array_ops, clip_ops, control_flow_ops, partition_ops
from zps.train.optimizer import Optimizer


class VariableClippingOptimizer(Optimizer):
    """Wraps ``opt``: its update, then each listed variable clipped to ``max_norm``."""

    def __init__(self, opt, vars_to_clip_dims, max_norm, use_locking=False,
                 colocate_clip_ops_with_vars=False, name="VariableClipping"):
        super().__init__(use_locking, name)
        self._opt = opt
        self._vars_to_clip_dims = {var: list(dims) for var, dims in vars_to_clip_dims.items()}
        self._max_norm = max_norm
        self._colocate_clip_ops_with_vars = colocate_clip_ops_with_vars

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's ``compute_gradients``."""
        return self._opt.compute_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        """The wrapped optimizer's slot."""
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        """The wrapped optimizer's slot names."""
        return self._opt.get_slot_names(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's update, then the clipping of the listed variables."""
        grads_and_vars = tuple(grads_and_vars)
        graph = get_default_graph()
        with graph.name_scope(name or self._name) as scope:
            update_op = self._opt.apply_gradients(grads_and_vars, global_step=global_step)
            clip_update_ops = []
            with graph.control_dependencies([update_op]):
                for grad, var in grads_and_vars:
                    if grad is None or var not in self._vars_to_clip_dims:
                        continue
                    with graph.name_scope("clip_" + var.op.name):
                        if isinstance(grad, Tensor):
                            clip_update_ops.append(self._clip_dense(var))
                        else:
                            clip_update_ops.append(self._clip_sparse(grad, var))
            return control_flow_ops.group(update_op, *clip_update_ops, name=scope)

    def _clip_dense(self, var):
        with self._maybe_colocate_with(var):
            updated_var_value = var.read_value()
            normalized_var = clip_ops.clip_by_norm(updated_var_value, self._max_norm,
                                                   self._vars_to_clip_dims[var])
            delta = updated_var_value - normalized_var
        with var.graph.colocate_with(var):
            return var.assign_sub(delta, use_locking=self._use_locking)

    def _clip_sparse(self, grad, var):
        clip_dims = self._vars_to_clip_dims[var]
        if 0 in clip_dims:
            logging.warning("Clipping norm across dims %s for %s is inefficient when including "
                            "sparse dimension 0.", clip_dims, var.op.name)
            return self._clip_dense(var)
        # Each row once: TF1 gathers and subtracts a repeated row's delta once per repeat,
        # clipping it past max_norm.
        indices, _ = partition_ops.unique(grad.indices)
        with var.graph.colocate_with(var):
            var_subset = array_ops.gather(var, indices)
        with self._maybe_colocate_with(var):
            normalized_var_subset = clip_ops.clip_by_norm(var_subset, self._max_norm, clip_dims)
            delta = IndexedSlices(var_subset - normalized_var_subset, indices, grad.dense_shape)
        with var.graph.colocate_with(var):
            return var.scatter_sub(delta, use_locking=self._use_locking)

    def _maybe_colocate_with(self, var):
        if self._colocate_clip_ops_with_vars:
            return var.graph.colocate_with(var)
        return contextlib.nullcontext()


__all__ = ["VariableClippingOptimizer"]
