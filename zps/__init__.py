"""zps: TensorFlow 1.x's parameter-server programming model on numpy and ZeroMQ.

``import zps as tf`` gives the TF1 namespace::

    import zps as tf
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.zeros([2, 1]))
    y = tf.matmul(x, w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(y, {x: [[1.0, 2.0]]})

The exported names are each module's ``__all__``; tests/test_public_api.py pins them.
"""

from zps.framework.dtypes import *  # noqa: F403
from zps.framework.tensor_shape import Dimension, TensorShape
from zps.framework.device import DeviceSpec
from zps.framework import errors
from zps.framework.graph import (
    Graph, GraphKeys, IndexedSlices, Operation, Tensor, convert_to_tensor, get_default_graph,
    reset_default_graph)
from zps.ops.array_ops import *  # noqa: F403
from zps.ops.math_ops import *  # noqa: F403
from zps.ops.clip_ops import *  # noqa: F403
from zps.ops.state_ops import *  # noqa: F403
from zps.ops.variables import *  # noqa: F403
from zps.ops.variable_scope import *  # noqa: F403
from zps.ops.random_ops import *  # noqa: F403
from zps.ops.init_ops import *  # noqa: F403
from zps.ops.control_flow_ops import *  # noqa: F403
from zps.ops.functional_ops import *  # noqa: F403
from zps.ops.tensor_array_ops import TensorArray
from zps.ops.data_flow_ops import *  # noqa: F403
from zps.ops.partitioned_variables import *  # noqa: F403
from zps.ops.partition_ops import *  # noqa: F403
from zps.ops.sparse_ops import *  # noqa: F403
from zps.ops.linalg_ops import *  # noqa: F403
from zps.ops.string_ops import *  # noqa: F403
from zps.ops.sort_ops import *  # noqa: F403
from zps.ops.special_math_ops import *  # noqa: F403
from zps.ops.array_ops_more import *  # noqa: F403
from zps.ops.check_ops import *  # noqa: F403
from zps.ops.base64_ops import *  # noqa: F403
from zps.ops.deprecated_aliases import *  # noqa: F403
from zps.compat import dimension_at_index, dimension_value
from zps.ops.parsing_ops import *  # noqa: F403
from zps.ops.reader_ops import *  # noqa: F403
from zps.ops.serialization_ops import *  # noqa: F403
from zps.ops.script_ops import *  # noqa: F403
from zps.ops.logging_ops import *  # noqa: F403
from zps.ops.logging_ops import print_v2 as print  # tf.print
from zps.ops.resources import *  # noqa: F403
from zps.ops.gradients_impl import (AggregationMethod, UnconnectedGradients, gradients,
                                   hessians)
from zps.ops.custom_gradient import custom_gradient
from zps.ops.template import make_template
from zps.framework.registry import NoGradient, NotDifferentiable, RegisterGradient
from zps.ops.confusion_matrix import confusion_matrix
from zps.framework.default_session import get_default_session
from zps.ops.summary_proto import Event, HistogramProto, SessionLog, Summary, SummaryMetadata
from zps.framework.serialization import *  # noqa: F403
from zps.client.config import ConfigProto, GPUOptions, GraphOptions, RunMetadata, RunOptions
from zps.client.session import InteractiveSession, Session
from zps.data.structure import SparseTensorSpec, TensorSpec
from zps import (app, bitwise, compat, contrib, data, debugging, distribute, dtypes, estimator,
                 feature_column, flags, gfile, graph_util, image, io, layers, linalg, logging,
                 lookup, queue, saved_model,
                 losses, math, metrics, nest, nn, python_io, random, sparse, strings, summary, test,
                 train)
from zps import signal, spectral
from zps.ops.spectral_ops import fft, fft2d, fft3d, ifft, ifft2d, ifft3d  # TF1's top-level names
from zps.framework.v2_compat import *  # noqa: F403
from zps import keras
initializers.tables_initializer = tables_initializer  # noqa: F405 - TF1's alias there
from zps.logging import get_logger
from zps.ops.image_ops import random_crop
from zps.ops.image_resize_ops import extract_image_patches
from zps.ops.random_more import random_gamma, random_poisson
from zps.ops.sparse_more import reset_shape as sparse_reset_shape
from zps.ops.sparse_more import sparse_mask
from zps.runtime import allocator as _allocator
import platform as _platform


def device(device_name_or_function):
    """Place the ops created in the block: ``with tf.device("/job:ps/task:0"): ...``."""
    return get_default_graph().device(device_name_or_function)


def name_scope(name, default_name=None, values=None):
    """Open a name scope in the default graph."""
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
# TF1 programs gate features on tf.VERSION ("1.15.0" >= "1.4"): it names the TF API that zps
# implements, with zps's own version as a PEP 440 local part (LooseVersion and
# packaging.version both parse it). GIT_VERSION and COMPILER_VERSION describe zps itself.
VERSION = "1.15.0+zps." + __version__
GIT_VERSION = "zps-v" + __version__
COMPILER_VERSION = "Python " + _platform.python_version()

_allocator_tuned = _allocator.tune()
