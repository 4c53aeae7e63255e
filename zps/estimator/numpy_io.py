"""``numpy_input_fn``: an input function over in-memory numpy arrays (``tf.estimator.inputs``).

>>> import numpy as np, zps as tf
>>> input_fn = tf.estimator.inputs.numpy_input_fn(
...     {"x": np.arange(4.0)}, np.arange(4), batch_size=3, shuffle=False)
>>> with tf.Graph().as_default():
...     features, labels = tf.data.make_one_shot_iterator(input_fn()).get_next()
...     with tf.Session() as sess:
...         print(sess.run(labels).tolist(), sess.run(labels).tolist())
[0, 1, 2] [3]
"""

import numpy as np

from zps.data.dataset import Dataset

__all__ = ["numpy_input_fn"]


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An ``input_fn`` giving batches of ``(x, y)`` (``x``: an array or a dict of arrays; ``y``:
    an array, a dict of arrays or None) for ``num_epochs`` epochs (None: forever), shuffled with
    a buffer of ``queue_capacity`` examples when ``shuffle``.

    As in TF1 the input_fn's data end after the last epoch (a smaller last batch included), so
    ``Estimator.train`` and ``evaluate`` stop there. zps reads the arrays through ``tf.data``
    (the input_fn returns a Dataset); ``num_threads`` is accepted and ignored.
    """
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         "recommended to set it as True for training); got %r" % (shuffle,))
    if isinstance(x, dict) and not x:
        raise ValueError("x cannot be an empty dict")
    if isinstance(x, dict) and isinstance(y, dict):
        shared = sorted(set(x) & set(y))
        if shared:
            raise ValueError("%d duplicate keys are found in both x and y: %s"
                             % (len(shared), shared))
    lengths = {len(a) for a in _arrays(x) + _arrays(y)}
    if len(lengths) > 1:
        raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y "
                         "must have the same length.\nShapes in x: %s\nShapes in y: %s\n"
                         % (_shapes(x), _shapes(y)))
    if batch_size <= 0:
        raise ValueError("batch_size must be > 0, given: %r" % (batch_size,))

    def input_fn():
        data = x if y is None else (x, y)
        ds = Dataset.from_tensor_slices(data)
        if shuffle:
            ds = ds.shuffle(queue_capacity)
        return ds.repeat(num_epochs).batch(batch_size)
    return input_fn


def _arrays(value):
    if value is None:
        return []
    values = value.values() if isinstance(value, dict) else [value]
    return [np.asarray(v) for v in values]


def _shapes(value):
    if isinstance(value, dict):
        return {k: np.shape(v) for k, v in value.items()}
    return None if value is None else np.shape(value)
