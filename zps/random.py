"""``tf.random``: TF 1.15's random namespace, the same functions as their top-level and ``tf.nn``
names (``tf.random.uniform is tf.random_uniform``, ``tf.random.set_random_seed is
tf.set_random_seed``).

>>> import zps as tf
>>> tf.random.normal is tf.random_normal, tf.random.shuffle is tf.random_shuffle
(True, True)
"""

from zps.ops.candidate_sampling_ops import (
    fixed_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from zps.ops.random_more import categorical, fold_in, split, stateless_categorical, stateless_truncated_normal
from zps.ops.random_more import random_gamma as gamma
from zps.ops.random_more import random_poisson as poisson
from zps.ops.random_more import stateless_random_normal as stateless_normal
from zps.ops.random_more import stateless_random_uniform as stateless_uniform
from zps.ops.random_ops import get_seed, multinomial, set_random_seed, truncated_normal
from zps.ops.random_ops import random_normal as normal
from zps.ops.random_ops import random_shuffle as shuffle
from zps.ops.random_ops import random_uniform as uniform

__all__ = ["categorical", "fixed_unigram_candidate_sampler", "fold_in", "gamma", "get_seed",
           "log_uniform_candidate_sampler", "multinomial", "normal", "poisson", "set_random_seed",
           "shuffle", "split", "stateless_categorical", "stateless_normal",
           "stateless_truncated_normal", "stateless_uniform", "truncated_normal", "uniform",
           "uniform_candidate_sampler"]
