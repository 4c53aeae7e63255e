"""``tf.spectral``: TF 1.x's older name for the FFTs of ``tf.signal`` (the same functions).

>>> import zps as tf
>>> tf.spectral.irfft2d is tf.signal.irfft2d
True
"""

from zps.ops.spectral_ops import *  # noqa: F403
