"""``tf.signal``: TF 1.15's signal processing namespace: the FFTs of zps/ops/spectral_ops.py,
framing, windows and short-time Fourier transforms of zps/ops/signal_ops.py.

>>> import zps as tf
>>> tf.signal.fft is tf.fft, tf.signal.rfft is tf.spectral.rfft
(True, True)
"""

from zps.ops.signal_ops import *  # noqa: F403
from zps.spectral import *  # noqa: F403  (the FFTs: tf.spectral's names)
