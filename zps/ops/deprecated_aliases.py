"""TF1's deprecated names kept so that old programs run: ``tf.arg_max``, ``tf.arg_min``,
``tf.initialize_all_tables``, ``tf.initialize_local_variables``, ``tf.initialize_variables``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.Session().run(tf.arg_max([[1, 9], [7, 3]], 1)).tolist())
[1, 0]
"""

from zps.framework import dtypes as _dtypes
from zps.ops import math_ops, resources, variables


def arg_max(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002
    """TF1's ``arg_max``: ``tf.argmax(input, dimension)``."""
    return math_ops.argmax(input, axis=dimension, name=name, output_type=output_type)


def arg_min(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002
    """TF1's ``arg_min``: ``tf.argmin(input, dimension)``."""
    return math_ops.argmin(input, axis=dimension, name=name, output_type=output_type)


def initialize_all_tables(name="init_all_tables"):
    """TF1's deprecated ``tables_initializer``."""
    return resources.tables_initializer(name=name)


def initialize_local_variables():
    """TF1's deprecated ``local_variables_initializer``."""
    return variables.local_variables_initializer()


def initialize_variables(var_list, name="init"):
    """TF1's deprecated ``variables_initializer``."""
    return variables.variables_initializer(var_list, name=name)


__all__ = ["arg_max", "arg_min", "initialize_all_tables", "initialize_local_variables",
           "initialize_variables"]
