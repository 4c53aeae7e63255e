"""``MovingAverageOptimizer``: keep an exponential moving average of the trained variables, and
save the averages in their place (TF1's contrib).

``apply_gradients`` runs the wrapped optimizer's update, then (``sequential_update``) the
``tf.train.ExponentialMovingAverage`` update of each updated variable. ``swapping_saver()``
(after ``minimize``) is a ``tf.train.Saver`` that writes each average under its variable's name
and each variable under its average's name, so that a plain Saver restoring the checkpoint, as
evaluation does, loads the averages into the variables.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.contrib.opt.MovingAverageOptimizer(tf.train.GradientDescentOptimizer(1.0),
...                                                 average_decay=0.5)
...     step = opt.minimize(tf.reduce_sum(w))
...     saver = opt.swapping_saver()
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w), sess.run(opt._ema.average(w)))
[0.] [0.5]
"""

from zps.ops import control_flow_ops
from zps.ops.variables import global_variables
from zps.train.moving_averages import ExponentialMovingAverage
from zps.train.optimizer import Optimizer
from zps.train.saver import Saver


def _op_list_to_dict(var_list):
    """``{checkpoint name: variable}``, the shards of a partitioned variable as one list."""
    names = {}
    for v in var_list:
        for part in (list(v) if isinstance(v, list | tuple) else [v]):
            info = part._get_save_slice_info()
            if info is None:
                names[part.op.name] = part
            else:
                names.setdefault(info.full_name, []).append(part)
    return names


class MovingAverageOptimizer(Optimizer):
    """Wraps ``opt``: its update, then the moving average of the updated variables."""

    def __init__(self, opt, average_decay=0.9999, num_updates=None, sequential_update=True):
        super().__init__(False, "MovingAverageOptimizer")
        self._optimizer = opt
        self._ema = ExponentialMovingAverage(average_decay, num_updates=num_updates)
        self._swapped_variable_name_map = None
        self._sequential_update = sequential_update

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's ``compute_gradients``."""
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's update and the moving averages' (after it, if
        ``sequential_update``)."""
        grads_and_vars = tuple(grads_and_vars)
        train_op = self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                                   name=name)
        var_list = [v for g, v in grads_and_vars if g is not None]
        self._swapped_variable_name_map = {}
        if self._sequential_update:
            with train_op.graph.control_dependencies([train_op]):
                ma_op = self._ema.apply(var_list)
        else:
            ma_op = self._ema.apply(var_list)
        for v in var_list:
            v_avg = self._ema.average(v)
            self._swapped_variable_name_map[v.op.name] = v_avg.op.name
            self._swapped_variable_name_map[v_avg.op.name] = v.op.name
        return control_flow_ops.group(train_op, ma_op, name="train_with_avg")

    def _find_swapped_variable(self, v_name_to_tensor, v_name, tensor):
        swapped_name = self._swapped_variable_name_map.get(v_name)
        if swapped_name is None:
            return tensor
        if swapped_name not in v_name_to_tensor:
            raise ValueError("Variable to swap %s is not part of variables to save. This breaks "
                             "MovingAverageOptimizer." % swapped_name)
        return v_name_to_tensor[swapped_name]

    def swapping_saver(self, var_list=None, name="swapping_saver", **kwargs):
        """A Saver that saves the averages under the variables' names and the variables under
        the averages' (default ``var_list``: all global variables); call it after
        ``minimize``/``apply_gradients``."""
        if self._swapped_variable_name_map is None:
            raise RuntimeError("Must call apply_gradients or minimize before creating the "
                               "swapping_saver")
        if var_list is None:
            var_list = global_variables()
        if not isinstance(var_list, dict):
            var_list = _op_list_to_dict(var_list)
        v_name_to_tensor = {}
        for k, tensor_or_list in var_list.items():
            if isinstance(tensor_or_list, list):
                v_name_to_tensor.update((t.op.name, t) for t in tensor_or_list)
            else:
                v_name_to_tensor[k] = tensor_or_list
        swapped_var_list = {}
        for k, tensor_or_list in var_list.items():
            if isinstance(tensor_or_list, list):
                swapped_var_list[k] = [self._find_swapped_variable(v_name_to_tensor, t.op.name, t)
                                       for t in tensor_or_list]
            else:
                swapped_var_list[k] = self._find_swapped_variable(v_name_to_tensor, k,
                                                                  tensor_or_list)
        return Saver(swapped_var_list, name=name, **kwargs)


__all__ = ["MovingAverageOptimizer"]
