"""``tf.estimator.inputs``: ready-made input functions (zps/estimator/numpy_io.py)."""

from zps.estimator.numpy_io import numpy_input_fn

__all__ = ["numpy_input_fn"]
