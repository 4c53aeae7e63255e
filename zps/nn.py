"""``tf.nn``: neural-network ops (activations, losses, normalization, top_k, convolution, pooling,
embeddings, candidate sampling and the sampled losses)."""

from zps.ops.candidate_sampling_ops import *  # noqa: F403
from zps.ops.conv_ops import *  # noqa: F403
from zps.ops.embedding_ops import *  # noqa: F403
from zps.ops.nn_ops import *  # noqa: F403
