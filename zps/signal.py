"""``tf.signal``: TF 1.15's signal processing namespace: the FFTs of zps/ops/spectral_ops.py,
framing, windows and short-time Fourier transforms of zps/ops/signal_ops.py.

>>> import zps as tf
>>> tf.signal.fft is tf.fft, tf.signal.rfft is tf.spectral.rfft
(True, True)
"""

from zps.ops.signal_ops import (
    frame,
    hamming_window,
    hann_window,
    inverse_stft,
    inverse_stft_window_fn,
    overlap_and_add,
    stft,
)
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

__all__ = ["fft", "fft2d", "fft3d", "frame", "hamming_window", "hann_window", "ifft", "ifft2d",
           "ifft3d", "inverse_stft", "inverse_stft_window_fn", "irfft", "irfft2d", "irfft3d",
           "overlap_and_add", "rfft", "rfft2d", "rfft3d", "stft"]
