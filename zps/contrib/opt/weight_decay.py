"""Decoupled weight decay (Loshchilov & Hutter, https://arxiv.org/abs/1711.05101), TF1's contrib.

``DecoupledWeightDecayExtension`` makes any optimizer also decay the variables it updates:
``var -= weight_decay * var`` just before the optimizer's own update of that variable (only the
gradient's rows, for a sparse gradient). ``AdamWOptimizer`` and ``MomentumWOptimizer`` are Adam
and Momentum with it; ``extend_with_decoupled_weight_decay(tf.train.SomeOptimizer)`` makes the
class for any other. Their constructors take ``weight_decay`` first (a float, a tensor or a
callable returning one); ``minimize`` and ``apply_gradients`` take ``decay_var_list``, the
variables to decay (default: all that are updated).

The decay comes before the update, with the gradient of the undecayed variable: it suits
optimizers whose update does not read the variable itself.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, 2.0], name="w")
...     opt = tf.contrib.opt.MomentumWOptimizer(0.5, learning_rate=0.1, momentum=0.9)
...     step = opt.minimize(tf.reduce_sum(w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w))
[0.4 0.9]
"""

from zps.framework.graph import IndexedSlices, convert_to_tensor
from zps.ops import array_ops, partition_ops, state_ops
from zps.ops.variables import Variable
from zps.train.adam import AdamOptimizer
from zps.train.momentum import MomentumOptimizer
from zps.train.optimizer import Optimizer, cast_to


class DecoupledWeightDecayExtension:
    """Mixin, first among an optimizer's bases: decay each variable before its update."""

    def __init__(self, weight_decay, *args, **kwargs):
        self._decay_var_list = False      # set by apply_gradients
        self._minimize_decay_var_list = None
        self._weight_decay = weight_decay
        self._weight_decay_tensor = None
        super().__init__(*args, **kwargs)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=Optimizer.GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None, decay_var_list=None):
        """``Optimizer.minimize``, decaying the variables of ``decay_var_list`` (default: all)."""
        self._minimize_decay_var_list = decay_var_list   # for the apply_gradients it calls
        try:
            return super().minimize(
                loss, global_step=global_step, var_list=var_list, gate_gradients=gate_gradients,
                aggregation_method=aggregation_method,
                colocate_gradients_with_ops=colocate_gradients_with_ops, name=name,
                grad_loss=grad_loss)
        finally:
            self._minimize_decay_var_list = None

    def apply_gradients(self, grads_and_vars, global_step=None, name=None, decay_var_list=None):
        """``Optimizer.apply_gradients``, decaying the variables of ``decay_var_list`` (default:
        all that get a gradient)."""
        if decay_var_list is None:
            decay_var_list = self._minimize_decay_var_list
        self._decay_var_list = set(decay_var_list) if decay_var_list else False
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _prepare(self):
        weight_decay = self._weight_decay
        if callable(weight_decay):
            weight_decay = weight_decay()
        self._weight_decay_tensor = convert_to_tensor(weight_decay, name="weight_decay")
        super()._prepare()

    def _update_op(self, grad, var):
        # One place for every kind of update (dense, sparse, resource, a base class's own
        # _resource_apply_*): the decay runs first.
        if not isinstance(var, Variable) or (self._decay_var_list
                                             and var not in self._decay_var_list):
            return super()._update_op(grad, var)
        wd = cast_to(self._weight_decay_tensor, var)
        if isinstance(grad, IndexedSlices):
            # each row once (TF1 decays after summing the rows of repeated indices)
            indices, _ = partition_ops.unique(grad.indices)
            decay = state_ops.scatter_add(var, indices, -wd * array_ops.gather(var, indices),
                                          use_locking=self._use_locking)
        else:
            decay = state_ops.assign_sub(var, wd * var, use_locking=self._use_locking)
        with var.graph.control_dependencies([decay]):
            return super()._update_op(grad, var)


def extend_with_decoupled_weight_decay(base_optimizer):
    """A subclass of the optimizer class ``base_optimizer`` with decoupled weight decay.

    Its constructor takes ``weight_decay`` first, then ``base_optimizer``'s arguments; e.g.
    ``extend_with_decoupled_weight_decay(tf.train.AdamOptimizer)(0.01, learning_rate=0.1)``
    updates as ``tf.contrib.opt.AdamWOptimizer(0.01, learning_rate=0.1)``.
    """
    if not (isinstance(base_optimizer, type) and issubclass(base_optimizer, Optimizer)):
        raise TypeError("extend_with_decoupled_weight_decay needs an optimizer class (a "
                        "subclass of tf.train.Optimizer), got %r" % (base_optimizer,))

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):
        """``base_optimizer`` that also decays the variables it updates (decoupled)."""

        def __init__(self, weight_decay, *args, **kwargs):
            super().__init__(weight_decay, *args, **kwargs)

    return OptimizerWithDecoupledWeightDecay


class MomentumWOptimizer(DecoupledWeightDecayExtension, MomentumOptimizer):
    """SGDW: ``tf.train.MomentumOptimizer`` with decoupled weight decay."""

    def __init__(self, weight_decay, learning_rate, momentum, use_locking=False,
                 name="MomentumW", use_nesterov=False):
        super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum,
                         use_locking=use_locking, name=name, use_nesterov=use_nesterov)


class AdamWOptimizer(DecoupledWeightDecayExtension, AdamOptimizer):
    """AdamW: ``tf.train.AdamOptimizer`` with decoupled weight decay."""

    def __init__(self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="AdamW"):
        super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2,
                         epsilon=epsilon, use_locking=use_locking, name=name)


__all__ = ["AdamWOptimizer", "DecoupledWeightDecayExtension", "MomentumWOptimizer",
           "extend_with_decoupled_weight_decay"]
