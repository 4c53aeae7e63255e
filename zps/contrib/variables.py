"""TF1's contrib variable helpers (``tf.contrib.framework`` / ``slim``): creating model
variables, finding variables by scope, name or suffix, picking what to restore, and assigning
from a checkpoint or from values.

>>> import zps as tf
>>> slim = tf.contrib.slim
>>> with tf.Graph().as_default():
...     with tf.variable_scope("net"):
...         w = slim.model_variable("weights", [2, 3])
...         b = slim.variable("step", [], trainable=False)
...     print([v.op.name for v in slim.get_model_variables()],
...           [v.op.name for v in slim.get_variables_by_name("step")],
...           [v.op.name for v in slim.get_variables_to_restore(exclude=["net/step"])])
['net/weights'] ['net/step'] ['net/weights']
"""

import contextlib
import functools
import logging
import re

import numpy as np

from zps.contrib.arg_scope import add_arg_scope
from zps.framework import dtypes
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import array_ops, control_flow_ops, state_ops, variable_scope, variables
from zps.ops.variables import checkpoint_name as get_variable_full_name
from zps.train import saver as saver_
from zps.train.checkpoint_management import NewCheckpointReader
from zps.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)

__all__ = ["VariableDeviceChooser", "add_model_variable", "assert_global_step",
           "assert_or_get_global_step", "assign_from_checkpoint", "assign_from_checkpoint_fn",
           "assign_from_values", "assign_from_values_fn", "create_global_step", "filter_variables",
           "get_global_step", "get_local_variables", "get_model_variables",
           "get_or_create_global_step", "get_trainable_variables", "get_unique_variable",
           "get_variable_full_name", "get_variables", "get_variables_by_name",
           "get_variables_by_suffix", "get_variables_to_restore", "global_variable",
           "local_variable", "model_variable", "variable", "zero_initializer"]

_logger = logging.getLogger("zps.contrib")


def assert_or_get_global_step(graph=None, global_step_tensor=None):
    """``global_step_tensor`` checked to be a global step, or the graph's global step."""
    if global_step_tensor is None:
        return get_global_step(graph)
    assert_global_step(global_step_tensor)
    return global_step_tensor


def zero_initializer(ref, use_locking=True, name="zero_initializer"):
    """An op setting the variable ``ref`` to zeros of its shape."""
    del use_locking   # assignments of one op are atomic in zps
    return state_ops.assign(ref, array_ops.zeros_like(ref), name=name)


@add_arg_scope
def variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True,
             collections=None, caching_device=None, device=None, partitioner=None,
             custom_getter=None, use_resource=None):
    """``tf.get_variable`` in ``collections`` (global variables by default), placed on
    ``device`` when given; an ``arg_scope`` can set any of these."""
    collections = list(dict.fromkeys(collections or [GraphKeys.GLOBAL_VARIABLES]))
    getter = variable_scope.get_variable
    if custom_getter is not None:
        getter = functools.partial(custom_getter, getter,
                                   reuse=variable_scope.get_variable_scope().reuse)
    with get_default_graph().device(device) if device else contextlib.nullcontext():
        return getter(name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, trainable=trainable, collections=collections,
                      caching_device=caching_device, partitioner=partitioner,
                      use_resource=use_resource)


@add_arg_scope
def model_variable(name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None,
                   trainable=True, collections=None, caching_device=None, device=None,
                   partitioner=None, custom_getter=None, use_resource=None):
    """A ``variable`` that is also a model variable (``tf.GraphKeys.MODEL_VARIABLES``)."""
    collections = list(collections or []) + [GraphKeys.GLOBAL_VARIABLES,
                                             GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, trainable=trainable, collections=collections,
                    caching_device=caching_device, device=device, partitioner=partitioner,
                    custom_getter=custom_getter, use_resource=use_resource)


def add_model_variable(var):
    """Add ``var`` to ``tf.GraphKeys.MODEL_VARIABLES`` (once)."""
    if var not in get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES):
        get_default_graph().add_to_collection(GraphKeys.MODEL_VARIABLES, var)


def local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A non-trainable variable in ``tf.GraphKeys.LOCAL_VARIABLES`` holding ``initial_value``."""
    return variables.Variable(initial_value, trainable=False,
                              collections=[GraphKeys.LOCAL_VARIABLES],
                              validate_shape=validate_shape, name=name, use_resource=use_resource)


def global_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A non-trainable variable in ``tf.GraphKeys.GLOBAL_VARIABLES`` holding ``initial_value``."""
    return variables.Variable(initial_value, trainable=False,
                              collections=[GraphKeys.GLOBAL_VARIABLES],
                              validate_shape=validate_shape, name=name, use_resource=use_resource)


# -- finding variables -----------------------------------------------------------------------------
def get_variables(scope=None, suffix=None, collection=GraphKeys.GLOBAL_VARIABLES):
    """The variables of ``collection`` whose name matches ``scope`` (a regular expression or a
    VariableScope, matched from the start) and ends in ``suffix``."""
    if isinstance(scope, variable_scope.VariableScope):
        scope = scope.name
    if suffix is not None:
        if ":" not in suffix:
            suffix += ":"
        scope = (scope or "") + ".*" + suffix
    return get_default_graph().get_collection(collection, scope)


def get_model_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_local_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_trainable_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def get_variables_by_suffix(suffix, scope=None):
    """The global variables whose name ends in ``suffix``."""
    return get_variables(scope=scope, suffix=suffix)


def get_variables_by_name(given_name, scope=None):
    """The global variables whose last name component is ``given_name``."""
    return get_variables(scope=scope, suffix="/%s:|^%s:" % (given_name, given_name))


def get_unique_variable(var_op_name):
    """The global variable named ``var_op_name`` exactly; ValueError when there is none."""
    candidates = get_variables(scope=var_op_name)
    if not candidates:
        raise ValueError("Couldn't find variable %s" % var_op_name)
    for candidate in candidates:
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError("Variable %s does not uniquely identify a variable" % var_op_name)


def get_variables_to_restore(include=None, exclude=None):
    """The global variables under the scopes ``include`` (all by default) but none under the
    scopes ``exclude``."""
    if include is None:
        chosen = get_variables()
    else:
        if isinstance(include, str):
            raise TypeError("include must be a list or tuple of scopes, got the string %r"
                            % include)
        chosen = [v for scope in include for v in get_variables(scope)]
    if isinstance(exclude, str):
        raise TypeError("exclude must be a list or tuple of scopes, got the string %r" % exclude)
    dropped = {id(v) for scope in exclude or [] for v in get_variables(scope)}
    return [v for v in chosen if id(v) not in dropped]


def filter_variables(var_list, include_patterns=None, exclude_patterns=None, reg_search=True):
    """The variables of ``var_list`` whose name matches one of ``include_patterns`` (all when
    None) and none of ``exclude_patterns``; ``reg_search``: ``re.search``, else ``re.match``."""
    find = re.search if reg_search else re.match

    def matches(v, patterns):
        return any(find(p, v.name) for p in patterns)
    return [v for v in var_list
            if (include_patterns is None or matches(v, include_patterns))
            and not (exclude_patterns and matches(v, exclude_patterns))]


class VariableDeviceChooser:
    """A device function placing variables round-robin on ``num_tasks`` tasks of ``job_name``
    (``/job:ps/task:i/device:CPU:0``); with ``num_tasks=0``, on this process's device."""

    def __init__(self, num_tasks=0, job_name="ps", device_type="CPU", device_index=0,
                 replica=None):
        self._job_name, self._device_type = job_name, device_type
        self._device_index, self._replica = device_index, replica
        self._num_tasks = num_tasks
        self._next_task_id = 0

    def __call__(self, op):
        parts = []
        if self._num_tasks > 0:
            task_id = self._next_task_id
            self._next_task_id = (self._next_task_id + 1) % self._num_tasks
            parts.append("/job:%s" % self._job_name)
            if self._replica is not None:
                parts.append("/replica:%d" % self._replica)
            parts.append("/task:%d" % task_id)
        parts.append("/device:%s:%d" % (self._device_type, self._device_index))
        return "".join(parts)


# -- assigning -------------------------------------------------------------------------------------
def _by_checkpoint_name(var_list):
    """``{checkpoint name: variable or [partitions]}`` of a list or dict of variables."""
    if isinstance(var_list, dict):
        return dict(var_list)
    grouped = {}
    for var in var_list:
        name = get_variable_full_name(var)
        if var._get_save_slice_info() is not None:
            grouped.setdefault(name, []).append(var)
        else:
            grouped[name] = var
    return grouped


def assign_from_values(var_names_to_values):
    """``(assign_op, feed_dict)`` setting each variable named in ``var_names_to_values`` to its
    value when run with the feed."""
    feed_dict, assigns = {}, []
    for name, value in sorted(var_names_to_values.items()):
        var = get_variables(name)
        if not var:
            raise ValueError("Variable %s wasn't found" % name)
        if len(var) > 1:
            var = [v for v in var if v.op.name == name]   # the exact name wins, as in TF1
            if len(var) != 1:
                raise ValueError("Variable %s doesn't uniquely identify a variable" % name)
        var = var[0]
        placeholder = array_ops.placeholder(var.dtype.base_dtype, shape=var.get_shape(),
                                            name="placeholder/" + var.op.name)
        assigns.append(state_ops.assign(var, placeholder))
        feed_dict[placeholder] = np.asarray(value).reshape(var.get_shape().as_list())
    return control_flow_ops.group(*assigns, name="assign_from_values"), feed_dict


def assign_from_values_fn(var_names_to_values):
    """A function ``fn(session)`` running ``assign_from_values``'s op with its feed."""
    assign_op, feed_dict = assign_from_values(var_names_to_values)

    def callback(session):
        return session.run(assign_op, feed_dict)
    return callback


def assign_from_checkpoint(model_path, var_list, ignore_missing_vars=False):
    """``(assign_op, feed_dict)`` setting the variables of ``var_list`` (a list, or a dict by
    checkpoint name) to their values in the checkpoint ``model_path``; partitioned variables
    get their slices. A variable the checkpoint lacks is a ValueError, or skipped with
    ``ignore_missing_vars``."""
    reader = NewCheckpointReader(model_path)
    feed_dict, assigns = {}, []
    for name, var in _by_checkpoint_name(var_list).items():
        if not reader.has_tensor(name):
            if ignore_missing_vars:
                continue
            raise ValueError("Checkpoint is missing variable [%s]" % name)
        value = reader.get_tensor(name)
        for part in var if isinstance(var, list) else [var]:
            info = part._get_save_slice_info()
            piece = value if info is None else value[tuple(
                slice(o, o + n) for o, n in zip(info.var_offset, info.var_shape))]
            placeholder = array_ops.placeholder(part.dtype.base_dtype, shape=piece.shape,
                                                name="placeholder/" + part.op.name)
            assigns.append(state_ops.assign(part, placeholder))
            feed_dict[placeholder] = piece
    return control_flow_ops.group(*assigns, name="assign_from_checkpoint"), feed_dict


def assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False,
                              reshape_variables=False):
    """A function ``fn(session)`` restoring ``var_list`` (a list, or a dict by checkpoint name)
    from the checkpoint ``model_path`` with a Saver; with ``ignore_missing_vars``, variables the
    checkpoint lacks are left alone (a warning names them). None when none is left to restore."""
    if ignore_missing_vars:
        reader = NewCheckpointReader(model_path)
        if isinstance(var_list, dict):
            missing = [n for n in var_list if not reader.has_tensor(n)]
            var_list = {n: v for n, v in var_list.items() if n not in missing}
        else:
            present = [reader.has_tensor(get_variable_full_name(v)) for v in var_list]
            missing = [get_variable_full_name(v) for v, ok in zip(var_list, present) if not ok]
            var_list = [v for v, ok in zip(var_list, present) if ok]
        if missing:
            _logger.warning("Variable(s) %s missing in checkpoint %s", ", ".join(missing),
                            model_path)
    if not var_list:
        _logger.warning("No variables to restore from %s", model_path)
        return None
    saver = saver_.Saver(var_list, reshape=reshape_variables)

    def callback(session):
        saver.restore(session, model_path)
    return callback
