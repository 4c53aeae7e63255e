"""``DNNRegressor``, ``DNNClassifier`` and ``DNNEstimator`` (any head): fully connected layers
over ``tf.feature_column`` inputs, under a head.

>>> import tempfile, numpy as np, zps as tf
>>> x = tf.feature_column.numeric_column("x", shape=[2])
>>> est = tf.estimator.DNNClassifier([4], [x], tempfile.mkdtemp())
>>> data = lambda: tf.data.Dataset.from_tensor_slices(
...     ({"x": np.float32([[0, 1], [1, 0]])}, np.int64([0, 1]))).batch(2)
>>> sorted(next(est.train(data).predict(data)))
['class_ids', 'classes', 'logistic', 'logits', 'probabilities']
"""

from zps.estimator.canned import head as head_lib
from zps.estimator.canned.linear import default_partitioner
from zps.estimator.canned.optimizers import get_optimizer_instance
from zps.estimator.estimator import Estimator
from zps.estimator.model_fn import ModeKeys
from zps.ops import feature_column_impl, init_ops, layers_impl, nn_ops, variable_scope
from zps.ops.losses_impl import Reduction
from zps.train import training_util

__all__ = ["DNNClassifier", "DNNEstimator", "DNNRegressor"]

_LEARNING_RATE = 0.05


def dnn_logits(features, mode, feature_columns, hidden_units, units, activation_fn, dropout,
               input_layer_partitioner):
    """TF1's layer names: input_from_feature_columns, hiddenlayer_<i>, logits."""
    with variable_scope.variable_scope("input_from_feature_columns",
                                       partitioner=input_layer_partitioner):
        net = feature_column_impl.input_layer(features, feature_columns)
    for i, num_units in enumerate(hidden_units):
        net = layers_impl.dense(net, num_units, activation=activation_fn,
                                kernel_initializer=init_ops.glorot_uniform_initializer(),
                                name="hiddenlayer_%d" % i)
        if dropout is not None and mode == ModeKeys.TRAIN:
            net = layers_impl.dropout(net, rate=dropout, training=True)
    return layers_impl.dense(net, units, kernel_initializer=init_ops.glorot_uniform_initializer(),
                             name="logits")


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn, dropout,
                         input_layer_partitioner, batch_norm):
    """``tf.estimator.experimental.dnn_logit_fn_builder``: a ``logit_fn(features, mode)``
    giving ``units`` logits of the canned DNN (``hidden_units`` layers)."""
    check_dnn_args(hidden_units, feature_columns, batch_norm)

    def dnn_logit_fn(features, mode):
        return dnn_logits(features, mode, feature_columns, hidden_units, units, activation_fn,
                          dropout, input_layer_partitioner)
    return dnn_logit_fn


def check_dnn_args(hidden_units, feature_columns, batch_norm):
    if not hidden_units:
        raise ValueError("hidden_units must be a non-empty list of layer sizes, e.g. [64, 32].")
    if not feature_columns:
        raise ValueError("feature_columns must be defined.")
    if batch_norm:
        raise NotImplementedError("batch_norm=True is not supported by zps's canned DNN "
                                  "estimators: write a model_fn with tf.layers.batch_normalization.")


class _DNNEstimator(Estimator):
    def __init__(self, head, hidden_units, feature_columns, model_dir, optimizer, activation_fn,
                 dropout, input_layer_partitioner, config, warm_start_from, batch_norm):
        feature_columns = tuple(feature_columns or ())
        check_dnn_args(hidden_units, feature_columns, batch_norm)

        def model_fn(features, labels, mode, config):
            opt = get_optimizer_instance(optimizer, learning_rate=_LEARNING_RATE)
            with variable_scope.variable_scope("dnn", partitioner=default_partitioner(config)):
                logits = dnn_logits(features, mode, feature_columns, hidden_units,
                                    head.logits_dimension, activation_fn, dropout,
                                    input_layer_partitioner)
            return head.create_estimator_spec(
                features, mode, logits, labels,
                lambda loss: opt.minimize(loss, global_step=training_util.get_global_step()))
        super().__init__(model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNEstimator(_DNNEstimator):
    """A feed-forward network (ReLU layers of ``hidden_units``, Adagrad) under ``head`` (e.g.
    ``tf.contrib.estimator.regression_head()``)."""

    def __init__(self, head, hidden_units, feature_columns, model_dir=None, optimizer="Adagrad",
                 activation_fn=nn_ops.relu, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, batch_norm=False):
        super().__init__(head_lib.check_head(head), hidden_units, feature_columns, model_dir,
                         optimizer, activation_fn, dropout, input_layer_partitioner, config,
                         warm_start_from, batch_norm)


class DNNRegressor(_DNNEstimator):
    """A feed-forward regression network (ReLU layers of ``hidden_units``, Adagrad)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=nn_ops.relu,
                 dropout=None, input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM, batch_norm=False):
        head = head_lib.regression_head(weight_column, label_dimension, loss_reduction)
        super().__init__(head, hidden_units, feature_columns, model_dir, optimizer,
                         activation_fn, dropout, input_layer_partitioner, config,
                         warm_start_from, batch_norm)


class DNNClassifier(_DNNEstimator):
    """A feed-forward classification network (ReLU layers of ``hidden_units``, Adagrad)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=nn_ops.relu, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=Reduction.SUM,
                 batch_norm=False):
        head = head_lib.classification_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
        super().__init__(head, hidden_units, feature_columns, model_dir, optimizer,
                         activation_fn, dropout, input_layer_partitioner, config,
                         warm_start_from, batch_norm)
