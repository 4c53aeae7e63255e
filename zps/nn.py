"""``tf.nn``: neural-network ops (activations, losses, normalization, top_k, convolution, pooling,
embeddings, candidate sampling and the sampled losses, CTC loss and decoders, recurrent networks:
``tf.nn.rnn_cell``'s cells run by ``dynamic_rnn`` and ``static_rnn``)."""

from zps.ops import rnn_cell_impl as rnn_cell  # noqa: F401 - tf.nn.rnn_cell: public names = cells
from zps.ops.array_ops_more import depth_to_space, space_to_batch, space_to_depth  # noqa: F401
from zps.ops.candidate_sampling_ops import *  # noqa: F403
from zps.ops.conv_ops import *  # noqa: F403

# TF 1.15's other names for the same functions (depthwise_..., conv3d_..., silu)
from zps.ops.conv_ops import conv3d_backprop_filter_v2 as conv3d_backprop_filter  # noqa: F401
from zps.ops.conv_ops import (  # noqa: F401
    depthwise_conv2d_native_backprop_filter as depthwise_conv2d_backprop_filter,
)
from zps.ops.conv_ops import (  # noqa: F401
    depthwise_conv2d_native_backprop_input as depthwise_conv2d_backprop_input,
)
from zps.ops.ctc_ops import *  # noqa: F403
from zps.ops.embedding_ops import *  # noqa: F403
from zps.ops.nn_more import *  # noqa: F403
from zps.ops.nn_ops import *  # noqa: F403
from zps.ops.nn_ops import swish as silu  # noqa: F401
from zps.ops.rnn import *  # noqa: F403
