"""``tf.data.experimental``: transformations for ``Dataset.apply`` (TF1's contrib-era tf.data).

Each function returns a transformation: a function from a Dataset to a Dataset, for
``dataset.apply(...)``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     ds = tf.data.Dataset.range(5).apply(tf.data.experimental.map_and_batch(lambda x: x * 2, 2))
...     ds = ds.apply(tf.data.experimental.enumerate_dataset(start=10))
...     x = ds.make_one_shot_iterator().get_next()
...     with tf.Session() as sess:
...         print([(int(i), b.tolist()) for i, b in (sess.run(x) for _ in range(3))])
[(10, [0, 2]), (11, [4, 6]), (12, [8])]
"""

from zps.ops.dataset_ops import AUTOTUNE


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """``dataset.map(map_func).batch(batch_size, drop_remainder)`` (TF's fused form; the
    parallelism arguments are accepted, at most one of them)."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`map_and_batch` allows only one of `num_parallel_batches` and "
                         "`num_parallel_calls` to be set.")
    return lambda dataset: dataset.map(map_func).batch(batch_size, drop_remainder)


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """``dataset.shuffle(buffer_size, seed).repeat(count)``: each epoch reshuffled, epochs kept
    apart (as TF's fused form)."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def unbatch():
    """``dataset.unbatch()``: each element split along its first dimension."""
    return lambda dataset: dataset.unbatch()


def enumerate_dataset(start=0):
    """``dataset.enumerate(start)``: elements ``(int64 index, element)``."""
    return lambda dataset: dataset.enumerate(start)


def ignore_errors(log_warning=False):
    """The elements whose making did not fail: an element whose function (``map`` ...) or
    source raised an error is skipped (and logged, with ``log_warning``).

    An error drops what the transformations between it and ``ignore_errors`` were assembling
    (a ``batch``'s partial batch), as in TF.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     ds = tf.data.Dataset.from_tensor_slices([1.0, 0.0, 2.0])
    ...     ds = ds.map(lambda x: tf.check_numerics(1.0 / x, "inf"))
    ...     x = ds.apply(tf.data.experimental.ignore_errors()).make_one_shot_iterator().get_next()
    ...     with tf.Session() as sess:
    ...         print(sess.run(x), sess.run(x))
    1.0 0.5
    """
    return lambda dataset: dataset._ignore_errors(log_warning)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """``dataset.interleave(map_func, cycle_length, block_length)``: the order with
    ``sloppy=False`` (any order is allowed with True); the buffering arguments are accepted."""
    return lambda dataset: dataset.interleave(map_func, cycle_length, block_length)


__all__ = ["AUTOTUNE", "enumerate_dataset", "ignore_errors", "map_and_batch", "parallel_interleave",
           "shuffle_and_repeat", "unbatch"]
