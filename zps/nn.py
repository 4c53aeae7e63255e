"""``tf.nn``: neural-network ops (activations, losses, normalization, top_k, convolution, pooling,
embeddings, candidate sampling and the sampled losses, recurrent networks: ``tf.nn.rnn_cell``'s
cells run by ``dynamic_rnn`` and ``static_rnn``)."""

from zps.ops import rnn_cell_impl as rnn_cell  # noqa: F401 - tf.nn.rnn_cell: public names = cells
from zps.ops.candidate_sampling_ops import *  # noqa: F403
from zps.ops.conv_ops import *  # noqa: F403
from zps.ops.embedding_ops import *  # noqa: F403
from zps.ops.nn_ops import *  # noqa: F403
from zps.ops.rnn import *  # noqa: F403
