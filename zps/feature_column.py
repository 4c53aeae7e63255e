"""``tf.feature_column``: TF1's feature columns, ``input_layer`` and ``linear_model``
(zps/ops/feature_column_impl.py)."""

from zps.ops.feature_column_impl import *  # noqa: F403
