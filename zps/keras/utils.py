"""``tf.keras.utils``: ``to_categorical``, ``normalize`` and ``Sequence`` (the batches of an
epoch by index, for ``fit_generator``). ``get_file`` (a download) is not in zps.

>>> import zps as tf
>>> tf.keras.utils.to_categorical([0, 2, 1], 3)
array([[1., 0., 0.],
       [0., 0., 1.],
       [0., 1., 0.]], dtype=float32)
"""

import numpy as np


def to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows of the class ids ``y`` (``num_classes`` columns: ``max(y) + 1`` if None); a
    trailing axis of size 1 is dropped first, as Keras does."""
    y = np.array(y, dtype="int")
    input_shape = y.shape
    if input_shape and input_shape[-1] == 1 and len(input_shape) > 1:
        input_shape = tuple(input_shape[:-1])
    y = y.ravel()
    if not num_classes:
        num_classes = np.max(y) + 1
    n = y.shape[0]
    categorical = np.zeros((n, num_classes), dtype=dtype)
    categorical[np.arange(n), y] = 1
    return np.reshape(categorical, input_shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (rows of norm 0 stay 0)."""
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


class Sequence:
    """The batches of a data set by index: subclass with ``__getitem__(index)`` (a batch
    ``(x, y)``) and ``__len__`` (the number of batches); ``on_epoch_end`` is called after each
    epoch of ``fit_generator``. Unlike a generator, its epoch length is known and its batches
    can be taken in any order (``fit_generator(shuffle=True)`` shuffles their order)."""

    def __getitem__(self, index):
        raise NotImplementedError("A tf.keras.utils.Sequence must define __getitem__(index)")

    def __len__(self):
        raise NotImplementedError("A tf.keras.utils.Sequence must define __len__")

    def on_epoch_end(self):
        """Called at the end of every epoch (e.g. to shuffle the examples)."""

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


__all__ = ["Sequence", "normalize", "to_categorical"]
