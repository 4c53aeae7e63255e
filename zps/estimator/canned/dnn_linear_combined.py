"""``DNNLinearCombinedClassifier`` / ``Regressor`` / ``Estimator`` (any head) ("wide & deep"):
the sum of a linear model's and a DNN's logits, each part trained by its own optimizer (FTRL and
Adagrad by default)."""

from zps.estimator.canned import head as head_lib
from zps.estimator.canned.dnn import check_dnn_args, dnn_logits
from zps.estimator.canned.linear import default_partitioner, linear_learning_rate, linear_logits
from zps.estimator.canned.optimizers import get_optimizer_instance
from zps.estimator.estimator import Estimator
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import control_flow_ops, nn_ops, state_ops, variable_scope
from zps.ops.losses_impl import Reduction
from zps.train import training_util

__all__ = ["DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator",
           "DNNLinearCombinedRegressor"]

_DNN_LEARNING_RATE = 0.001


class _CombinedEstimator(Estimator):
    def __init__(self, head, model_dir, linear_feature_columns, linear_optimizer,
                 dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
                 dnn_dropout, input_layer_partitioner, config, warm_start_from, batch_norm,
                 linear_sparse_combiner):
        linear_columns = tuple(linear_feature_columns or ())
        dnn_columns = tuple(dnn_feature_columns or ())
        if not linear_columns and not dnn_columns:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be "
                             "defined.")
        if dnn_columns:
            check_dnn_args(dnn_hidden_units, dnn_columns, batch_norm)

        def model_fn(features, labels, mode, config):
            partitioner = default_partitioner(config)
            parts = []    # (logits, optimizer, scope)
            if dnn_columns:
                with variable_scope.variable_scope("dnn", partitioner=partitioner):
                    logits = dnn_logits(features, mode, dnn_columns, dnn_hidden_units,
                                        head.logits_dimension, dnn_activation_fn, dnn_dropout,
                                        input_layer_partitioner)
                parts.append((logits, get_optimizer_instance(
                    dnn_optimizer, learning_rate=_DNN_LEARNING_RATE), "dnn"))
            if linear_columns:
                with variable_scope.variable_scope("linear", partitioner=partitioner):
                    logits = linear_logits(features, linear_columns, head.logits_dimension,
                                           linear_sparse_combiner)
                parts.append((logits, get_optimizer_instance(
                    linear_optimizer, learning_rate=linear_learning_rate(len(linear_columns))),
                    "linear"))

            def train_op_fn(loss):
                graph = get_default_graph()
                train_op = control_flow_ops.group(*[
                    opt.minimize(loss, var_list=graph.get_collection(
                        GraphKeys.TRAINABLE_VARIABLES, scope + "/"))
                    for _, opt, scope in parts])
                with graph.control_dependencies([train_op]):
                    return state_ops.assign_add(training_util.get_global_step(), 1).op

            total = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]
            return head.create_estimator_spec(features, mode, total, labels, train_op_fn)
        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(_CombinedEstimator):
    """A wide (linear) & deep (DNN) classifier."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=nn_ops.relu, dnn_dropout=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=Reduction.SUM,
                 batch_norm=False, linear_sparse_combiner="sum"):
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
        super().__init__(head, model_dir, linear_feature_columns, linear_optimizer,
                         dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
                         dnn_dropout, input_layer_partitioner, config, warm_start_from,
                         batch_norm, linear_sparse_combiner)


class DNNLinearCombinedEstimator(_CombinedEstimator):
    """A wide (linear) & deep (DNN) model under ``head`` (e.g.
    ``tf.contrib.estimator.binary_classification_head()``)."""

    def __init__(self, head, model_dir=None, linear_feature_columns=None,
                 linear_optimizer="Ftrl", dnn_feature_columns=None, dnn_optimizer="Adagrad",
                 dnn_hidden_units=None, dnn_activation_fn=nn_ops.relu, dnn_dropout=None,
                 input_layer_partitioner=None, config=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        super().__init__(head_lib.check_head(head), model_dir, linear_feature_columns,
                         linear_optimizer, dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                         dnn_activation_fn, dnn_dropout, input_layer_partitioner, config, None,
                         batch_norm, linear_sparse_combiner)


class DNNLinearCombinedRegressor(_CombinedEstimator):
    """A wide (linear) & deep (DNN) regressor."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=nn_ops.relu, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        head = head_lib.regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(head, model_dir, linear_feature_columns, linear_optimizer,
                         dnn_feature_columns, dnn_optimizer, dnn_hidden_units, dnn_activation_fn,
                         dnn_dropout, input_layer_partitioner, config, warm_start_from,
                         batch_norm, linear_sparse_combiner)
