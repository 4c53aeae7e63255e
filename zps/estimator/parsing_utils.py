"""``tf.estimator.classifier_parse_example_spec`` / ``regressor_parse_example_spec``: the
``tf.parse_example`` spec of feature columns plus the label (and weight) of a canned estimator.

>>> import zps as tf
>>> spec = tf.estimator.classifier_parse_example_spec(
...     [tf.feature_column.numeric_column("x")], label_key="y", weight_column="w")
>>> sorted(spec), spec["y"]
(['w', 'x', 'y'], FixedLenFeature(shape=(1,), dtype=tf.int64, default_value=None))
"""

from zps.framework import dtypes
from zps.ops import feature_column_impl
from zps.ops.parsing_ops import FixedLenFeature

__all__ = ["classifier_parse_example_spec", "regressor_parse_example_spec"]


def classifier_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.int64,
                                  label_default=None, weight_column=None):
    """``make_parse_example_spec(feature_columns)`` plus ``label_key``: a ``[1]`` feature of
    ``label_dtype``, and ``weight_column`` (a key or a ``numeric_column``) when given."""
    return _add_label_and_weight_to_parsing_spec(
        feature_column_impl.make_parse_example_spec(feature_columns), label_key,
        FixedLenFeature((1,), label_dtype, label_default), weight_column)


def regressor_parse_example_spec(feature_columns, label_key, label_dtype=dtypes.float32,
                                 label_default=None, label_dimension=1, weight_column=None):
    """``make_parse_example_spec(feature_columns)`` plus ``label_key``: a
    ``[label_dimension]`` feature of ``label_dtype``, and ``weight_column`` (a key or a
    ``numeric_column``) when given."""
    return _add_label_and_weight_to_parsing_spec(
        feature_column_impl.make_parse_example_spec(feature_columns), label_key,
        FixedLenFeature((label_dimension,), label_dtype, label_default), weight_column)


def _add_label_and_weight_to_parsing_spec(parsing_spec, label_key, label_spec, weight_column):
    if label_key in parsing_spec:
        raise ValueError(f"label should not be used as feature. label_key: {label_key}, "
                         f"features: {parsing_spec.keys()}")
    parsing_spec[label_key] = label_spec
    if weight_column is None:
        return parsing_spec
    if isinstance(weight_column, str):
        weight_column = feature_column_impl.numeric_column(weight_column)
    if not isinstance(weight_column, feature_column_impl._NumericColumn):
        raise ValueError("weight_column should be an instance of "
                         "tf.feature_column.numeric_column. Given type: "
                         f"{type(weight_column)} value: {weight_column}")
    if weight_column.key in parsing_spec:
        raise ValueError("weight_column should not be used as feature. weight_column: "
                         f"{weight_column.key}, features: {parsing_spec.keys()}")
    parsing_spec.update(weight_column._parse_example_spec)
    return parsing_spec
