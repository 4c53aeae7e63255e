"""``tf.estimator.experimental``: early-stopping hooks (zps/estimator/early_stopping.py),
``InMemoryEvaluatorHook`` (zps/estimator/hooks.py) and the canned models' logit functions."""

from zps.estimator.canned.dnn import dnn_logit_fn_builder
from zps.estimator.canned.linear import linear_logit_fn_builder
from zps.estimator.early_stopping import (
    make_early_stopping_hook,
    stop_if_higher_hook,
    stop_if_lower_hook,
    stop_if_no_decrease_hook,
    stop_if_no_increase_hook,
)
from zps.estimator.hooks import InMemoryEvaluatorHook, make_stop_at_checkpoint_step_hook
from zps.estimator.model_fn import call_logit_fn

__all__ = ["InMemoryEvaluatorHook", "call_logit_fn", "dnn_logit_fn_builder",
           "linear_logit_fn_builder", "make_early_stopping_hook",
           "make_stop_at_checkpoint_step_hook", "stop_if_higher_hook", "stop_if_lower_hook",
           "stop_if_no_decrease_hook", "stop_if_no_increase_hook"]
