"""The global step: the graph's step counter (an int64 scalar variable named "global_step").

>>> import zps as tf
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         print(step.op.name, tf.train.global_step(sess, step))
global_step 0
"""

import logging

from zps.framework import dtypes as _dtypes
from zps.framework.graph import GraphKeys, Tensor, get_default_graph
from zps.ops import array_ops, variable_scope
from zps.ops.variables import Variable, VariableAggregation

_logger = logging.getLogger(__name__)


def global_step(sess, global_step_tensor):
    """The current value of the global step as a Python int."""
    return int(sess.run(global_step_tensor))


def get_global_step(graph=None):
    """The global step of ``graph`` (default graph): the one variable of the GLOBAL_STEP
    collection, else the tensor named "global_step:0"; None if there is none."""
    graph = graph or get_default_graph()
    tensors = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(tensors) == 1:
        step = tensors[0]
    elif not tensors:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        _logger.error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(step)
    return step


def _zeros(shape, dtype, partition_info=None):
    return array_ops.zeros(shape, dtype=dtype)   # op "zeros", as TF1's zeros_initializer names it


def create_global_step(graph=None):
    """Create the global step of ``graph``: int64, 0, not trainable, named "global_step" in the
    current variable scope. Errors if it exists."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    # TF1's get_variable: inside variable_scope("outer") the step is "outer/global_step".
    with graph.as_default(), graph.name_scope(None):
        return variable_scope.get_variable(
            GraphKeys.GLOBAL_STEP, shape=[], dtype=_dtypes.int64,
            initializer=_zeros, trainable=False,
            # as TF 1.15: under a tf.distribute strategy, gs.assign_add(1) in a replica
            # function takes the first replica's increment (once per step, not per replica)
            aggregation=VariableAggregation.ONLY_FIRST_REPLICA,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step of ``graph``, created first if there is none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        step = create_global_step(graph)
    return step


def assert_global_step(global_step_tensor):
    """Raise TypeError unless ``global_step_tensor`` is an integer scalar Variable or Tensor."""
    if not isinstance(global_step_tensor, Variable | Tensor):
        raise TypeError('Existing "global_step" must be a Variable or Tensor: %s.'
                        % (global_step_tensor,))
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError('Existing "global_step" does not have integer type: %s'
                        % global_step_tensor.dtype.name)
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError('Existing "global_step" is not scalar: %s' % shape)


__all__ = [
    "global_step",
    "get_global_step",
    "create_global_step",
    "get_or_create_global_step",
    "assert_global_step",
]
