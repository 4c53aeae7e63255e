"""Moving averages: ``tf.train.ExponentialMovingAverage`` and ``tf.train.assign_moving_average``.

An ExponentialMovingAverage keeps a shadow copy of each variable it averages, the non-trainable
variable ``<var>/ExponentialMovingAverage``, placed with the variable (on its ps), and ``apply``
returns the op that moves every shadow towards its variable:
``shadow -= (1 - decay) * (shadow - var)``. With ``num_updates`` the decay is
``min(decay, (1 + num_updates) / (10 + num_updates))``, so early averages follow quickly. To
evaluate with the averages, restore them into the variables with
``tf.train.Saver(ema.variables_to_restore())``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable(1.0, name="w")
...     ema = tf.train.ExponentialMovingAverage(decay=0.5)
...     update = ema.apply([w])
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         _ = sess.run(w.assign(3.0))
...         sess.run(update)
...         print(ema.average(w).op.name, float(sess.run(ema.average(w))))
w/ExponentialMovingAverage 2.0
"""

from zps.distribute import distribute_lib
from zps.distribute.reduce_util import ReduceOp
from zps.framework import dtypes as _dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.ops import control_flow_ops, init_ops, math_ops, state_ops, variable_scope, variables
from zps.ops.layers_impl import _assign_moving_average
from zps.train import slot_creator

_FLOATS = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """``variable -= (1 - decay) * (variable - value)``; returns the updated value.

    ``name`` (default ``AssignMovingAvg``, made unique) is the name scope of the update's ops and
    the name of the update itself, as TF1.

    With ``zero_debias`` (for a variable that starts at zero), the average is kept in a biased
    variable ``<variable>/biased`` and ``variable`` is set to it divided by
    ``1 - decay ** steps`` (``<variable>/local_step``), which removes the pull towards zero of
    the first steps (Adam's bias correction).

    >>> import zps as tf
    >>> from zps.train.moving_averages import assign_moving_average
    >>> with tf.Graph().as_default():
    ...     v = tf.Variable(0.0)
    ...     update = assign_moving_average(v, 4.0, decay=0.9)
    ...     sess = tf.Session()
    ...     sess.run(tf.global_variables_initializer())
    ...     print(round(float(sess.run(update)), 4))
    4.0
    """
    graph = get_default_graph()
    with graph.name_scope(name or "AssignMovingAvg") as scope:
        one_minus_decay = convert_to_tensor(1.0 - decay, name="decay")
        if one_minus_decay.dtype != variable.dtype.base_dtype:
            one_minus_decay = math_ops.cast(one_minus_decay, variable.dtype.base_dtype)
        if not distribute_lib.has_strategy():
            if not zero_debias:
                return _assign_moving_average(variable, value, one_minus_decay,
                                              scope).outputs[0]
            biased_var, local_step = _zero_debias_variables(variable)
            return _zero_debias_update(variable, value, biased_var, local_step,
                                       one_minus_decay, scope)
        return _distributed_assign_moving_average(variable, value, one_minus_decay,
                                                  zero_debias)


def _distributed_assign_moving_average(variable, value, one_minus_decay, zero_debias):
    # TF 1.15: in a replica context the replicas' values are averaged (merge_call) and every
    # copy of the average moves towards that mean; in cross-replica context each copy moves
    # towards ``value`` on its device (extended.update).
    # Each copy's update is named as its scope (``.../update_<i>``, unique per copy).
    def update(strategy, v, value):
        if zero_debias:
            biased_var, local_step = _zero_debias_variables(v)
            return strategy.extended.update(
                v, lambda c, value, b, s: _zero_debias_update(c, value, b, s, one_minus_decay,
                                                              _current_scope()),
                args=(value, biased_var, local_step))
        return strategy.extended.update(
            v, lambda c, value: state_ops.assign_sub(c, (c - value) * one_minus_decay,
                                                     name=_current_scope()), args=(value,))

    ctx = distribute_lib.get_replica_context()
    if ctx is not None:
        def merge_fn(strategy, v, value):
            return update(strategy, v, strategy.extended.reduce_to(ReduceOp.MEAN, value, v))
        return ctx.merge_call(merge_fn, args=(variable, value))
    return update(distribute_lib.get_cross_replica_context(), variable, value)


def _current_scope():
    return get_default_graph().get_name_scope() + "/"


def _zero_debias_variables(unbiased_var):
    graph = get_default_graph()
    scope_name = unbiased_var.op.name
    with graph.colocate_with(unbiased_var.op), graph.control_dependencies(None), \
            variable_scope.variable_scope(scope_name):
        biased_var = variable_scope.get_variable(
            _unique_in_scope(scope_name, "biased"), shape=unbiased_var.get_shape(),
            dtype=unbiased_var.dtype.base_dtype, initializer=init_ops.zeros_initializer(),
            trainable=False)
        local_step = variable_scope.get_variable(
            _unique_in_scope(scope_name, "local_step"), shape=[],
            dtype=unbiased_var.dtype.base_dtype, initializer=init_ops.zeros_initializer(),
            trainable=False)
    return biased_var, local_step


def _zero_debias_update(unbiased_var, value, biased_var, local_step, one_minus_decay, name):
    # op names as TF1's update_fn: sub, mul, AssignSub, AssignAdd/value, AssignAdd, ... truediv
    graph = get_default_graph()
    with graph.colocate_with(unbiased_var.op):
        update_biased = state_ops.assign_sub(biased_var, (biased_var - value) * one_minus_decay)
        with graph.name_scope("AssignAdd") as add_scope:
            one = convert_to_tensor(1, dtype=local_step.dtype.base_dtype, name="value")
            update_local_step = state_ops.assign_add(local_step, one, name=add_scope)
        bias_factor = 1 - math_ops.pow(1.0 - one_minus_decay, update_local_step)
        return state_ops.assign(unbiased_var, update_biased / bias_factor, name=name)


def _unique_in_scope(scope_name, name):
    # TF1's _maybe_get_unique: a second debiased average of one variable gets "biased_1" ...
    taken = {v.op.name for v in variables.global_variables()}
    unique, i = name, 0
    while "%s/%s" % (scope_name, unique) in taken:
        i += 1
        unique = "%s_%d" % (name, i)
    return unique


class ExponentialMovingAverage:
    """Shadow variables that track exponential moving averages of variables (see module doc).

    ``zero_debias`` debiases the averages of tensors (not of variables, whose shadows start at
    the variable's initial value), as TF1.
    """

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Create the shadows of ``var_list`` (default: the trainable variables) and return the
        op that updates them all; TypeError for a non-float variable."""
        graph = get_default_graph()
        if var_list is None:
            var_list = variables.trainable_variables()
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError("The variables must be half, float, or double: %s" % var.name)
            if var in self._averages:
                continue
            # the shadows are initialized outside any control dependencies of the caller (as
            # TF1's init_scope): running their initializers must not run anything else
            with graph.control_dependencies(None):
                if isinstance(var, variables.Variable):
                    avg = slot_creator.create_slot(var, var.initialized_value(), self._name)
                    # as TF1: the collection lists the averaged variables, not their shadows
                    graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                else:
                    avg = slot_creator.create_zeros_slot(
                        var, self._name, colocate_with_primary=var.op.type == "VariableV2")
                    if self._zero_debias:
                        zero_debias_true.add(avg)
            self._averages[var] = avg
        with graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=_dtypes.float32, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(self._num_updates, _dtypes.float32,
                                            name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [assign_moving_average(self._averages[var], var, decay,
                                             zero_debias=self._averages[var] in zero_debias_true)
                       for var in var_list]
            return control_flow_ops.group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of ``var``, or None if ``apply`` was not given it."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name of ``var``'s shadow (what it will be named if not created yet)."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(var.op.name + "/" + self._name,
                                               mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None):
        """``{checkpoint name: variable}`` that restores each averaged variable (default: the
        trainable and the MOVING_AVERAGE_VARIABLES ones) from its shadow, and every other global
        variable from itself: pass it to ``tf.train.Saver`` to evaluate with the averages."""
        if moving_avg_variables is None:
            moving_avg_variables = variables.trainable_variables() \
                + variables.moving_average_variables()
        moving_avg_variables = list(dict.fromkeys(moving_avg_variables))   # in order, once
        name_map = {self.average_name(v): v for v in moving_avg_variables}
        averaged = {v.name for v in moving_avg_variables}
        for v in variables.global_variables():
            if v.name not in averaged and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


__all__ = ["ExponentialMovingAverage"]   # assign_moving_average: TF1 has it in this module only
