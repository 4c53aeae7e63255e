"""``tf.contrib.seq2seq``: TF1's sequence-to-sequence library: ``sequence_loss``, the decoders
(``BasicDecoder`` with its helpers, ``BeamSearchDecoder``) driven by ``dynamic_decode``, and the
attention cell ``AttentionWrapper`` with Bahdanau and Luong attention.

>>> import zps as tf
>>> tf.contrib.seq2seq.dynamic_decode.__module__
'zps.contrib.seq2seq.decoder'
"""

from zps.contrib.seq2seq.attention_wrapper import (
    AttentionMechanism,
    AttentionWrapper,
    AttentionWrapperState,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
    hardmax,
    monotonic_attention,
    safe_cumprod,
)
from zps.contrib.seq2seq.basic_decoder import BasicDecoder, BasicDecoderOutput
from zps.contrib.seq2seq.beam_search_decoder import (
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    tile_batch,
)
from zps.contrib.seq2seq.beam_search_ops import gather_tree
from zps.contrib.seq2seq.decoder import Decoder, dynamic_decode
from zps.contrib.seq2seq.helper import (
    CustomHelper,
    GreedyEmbeddingHelper,
    Helper,
    InferenceHelper,
    SampleEmbeddingHelper,
    ScheduledEmbeddingTrainingHelper,
    ScheduledOutputTrainingHelper,
    TrainingHelper,
)
from zps.contrib.seq2seq.loss import sequence_loss

__all__ = [
    "AttentionMechanism", "AttentionWrapper", "AttentionWrapperState", "BahdanauAttention",
    "BahdanauMonotonicAttention", "BasicDecoder", "BasicDecoderOutput", "BeamSearchDecoder",
    "BeamSearchDecoderOutput", "BeamSearchDecoderState", "CustomHelper", "Decoder",
    "FinalBeamSearchDecoderOutput", "GreedyEmbeddingHelper", "Helper", "InferenceHelper",
    "LuongAttention", "LuongMonotonicAttention", "SampleEmbeddingHelper",
    "ScheduledEmbeddingTrainingHelper", "ScheduledOutputTrainingHelper", "TrainingHelper",
    "dynamic_decode", "gather_tree", "hardmax", "monotonic_attention", "safe_cumprod",
    "sequence_loss", "tile_batch",
]
