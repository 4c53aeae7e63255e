"""``tf.contrib.layers``: TF1's contrib layers, regularizers, initializers and ``optimize_loss``
(zps/contrib/layers_impl.py)."""

from zps.contrib.layers_impl import *  # noqa: F403
