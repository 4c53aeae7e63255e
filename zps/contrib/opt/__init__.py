"""``tf.contrib.opt``: TF1's contributed optimizers — the sparse-aware and decoupled-weight-decay
variants of the core ones, and the distributed ones of the parameter-server model (stale
gradients dropped, elastic averaging, model averaging)."""

from zps.contrib.opt.adamax import AdaMaxOptimizer
from zps.contrib.opt.agn import AGNCustomGetter, AGNOptimizer
from zps.contrib.opt.drop_stale_gradient import DropStaleGradientOptimizer
from zps.contrib.opt.elastic_average import ElasticAverageCustomGetter, ElasticAverageOptimizer
from zps.contrib.opt.lars import LARSOptimizer
from zps.contrib.opt.lazy_adam import LazyAdamOptimizer
from zps.contrib.opt.model_average import ModelAverageCustomGetter, ModelAverageOptimizer
from zps.contrib.opt.moving_average import MovingAverageOptimizer
from zps.contrib.opt.multitask import MultitaskOptimizerWrapper, clip_gradients_by_global_norm
from zps.contrib.opt.nadam import NadamOptimizer
from zps.contrib.opt.reg_adagrad import RegAdagradOptimizer
from zps.contrib.opt.sign_decay import (
    get_cosine_decay_fn,
    get_linear_decay_fn,
    get_restart_decay_fn,
)
from zps.contrib.opt.sign_optimizers import AddSignOptimizer, PowerSignOptimizer
from zps.contrib.opt.variable_clipping import VariableClippingOptimizer
from zps.contrib.opt.weight_decay import (
    AdamWOptimizer,
    DecoupledWeightDecayExtension,
    MomentumWOptimizer,
    extend_with_decoupled_weight_decay,
)

__all__ = [
    # single-process optimizers
    "AdaMaxOptimizer", "AdamWOptimizer", "AddSignOptimizer", "DecoupledWeightDecayExtension",
    "LARSOptimizer", "LazyAdamOptimizer", "MomentumWOptimizer", "MovingAverageOptimizer",
    "MultitaskOptimizerWrapper", "NadamOptimizer", "PowerSignOptimizer", "RegAdagradOptimizer",
    "VariableClippingOptimizer", "clip_gradients_by_global_norm",
    "extend_with_decoupled_weight_decay", "get_cosine_decay_fn", "get_linear_decay_fn",
    "get_restart_decay_fn",
    # parameter-server optimizers
    "AGNCustomGetter", "AGNOptimizer", "DropStaleGradientOptimizer", "ElasticAverageCustomGetter",
    "ElasticAverageOptimizer", "ModelAverageCustomGetter", "ModelAverageOptimizer",
]
