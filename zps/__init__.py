"""zps: TensorFlow 1.x's parameter-server programming model on numpy and ZeroMQ.

``import zps as tf`` gives the TF1 namespace::

    import zps as tf
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.zeros([2, 1]))
    y = tf.matmul(x, w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y, {x: [[1.0, 2.0]]})
"""

from zps.framework.dtypes import (  # noqa: F401
    DType, as_dtype, bool, double, float16, float32, float64, half, int8, int16, int32, int64,
    string, uint8)
from zps.framework.tensor_shape import Dimension, TensorShape  # noqa: F401
from zps.framework.device import DeviceSpec  # noqa: F401
from zps.framework import errors  # noqa: F401
from zps.framework.graph import (  # noqa: F401
    Graph, GraphKeys, IndexedSlices, Operation, Tensor, convert_to_tensor, get_default_graph,
    reset_default_graph)
from zps.framework.constant import constant  # noqa: F401
from zps.ops.array_ops import (  # noqa: F401
    broadcast_to, concat, fill, gather, identity, ones, ones_like, placeholder,
    placeholder_with_default, reshape, shape, stop_gradient, unsorted_segment_sum, zeros,
    zeros_like)
from zps.ops.math_ops import (  # noqa: F401
    abs, add, add_n, cast, div, divide, floordiv, greater, greater_equal, less, less_equal,
    logical_and, logical_not, logical_or, logical_xor, matmul, mod, multiply, negative, pow,
    reduce_mean, reduce_sum, square, subtract, to_float, truediv)
from zps.ops.state_ops import (  # noqa: F401
    assign, assign_add, assign_sub, is_variable_initialized, scatter_add, scatter_sub,
    scatter_update)
from zps.ops.variables import (  # noqa: F401
    Variable, global_variables, global_variables_initializer, initialize_all_variables,
    local_variables, local_variables_initializer, report_uninitialized_variables,
    trainable_variables, variables_initializer)
from zps.ops.control_flow_ops import group, no_op, tuple, with_dependencies  # noqa: F401
from zps.ops.gradients_impl import gradients  # noqa: F401
from zps.client.config import ConfigProto, GPUOptions, GraphOptions, RunMetadata, RunOptions  # noqa: F401
from zps.client.session import InteractiveSession, Session  # noqa: F401


def device(device_name_or_function):
    """Place the ops created in the block: ``with tf.device("/job:ps/task:0"): ...``."""
    return get_default_graph().device(device_name_or_function)


def name_scope(name, default_name=None, values=None):
    """Open a name scope in the default graph (or the graph of ``values``)."""
    return get_default_graph().name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    """Ops created in the block run after ``control_inputs``."""
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    """Ops created in the block are placed with ``op``."""
    return get_default_graph().colocate_with(op, ignore_existing)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


__version__ = "0.1.0"
