"""``tf.spectral``: TF 1.x's older name for the FFTs of ``tf.signal`` (the same functions).

>>> import zps as tf
>>> tf.spectral.irfft2d is tf.signal.irfft2d
True
"""

from zps.ops.spectral_ops import (
    fft,
    fft2d,
    fft3d,
    ifft,
    ifft2d,
    ifft3d,
    irfft,
    irfft2d,
    irfft3d,
    rfft,
    rfft2d,
    rfft3d,
)

__all__ = ["fft", "fft2d", "fft3d", "ifft", "ifft2d", "ifft3d", "irfft", "irfft2d", "irfft3d",
           "rfft", "rfft2d", "rfft3d"]
