"""Queue-based input pipelines (TF1's ``tf.train.string_input_producer``, ``tf.train.batch`` ...).

A *producer* fills a FIFOQueue with the elements of a tensor (filenames, indices, slices), in
a random order each epoch when ``shuffle``; with ``num_epochs`` it stops after that many passes
(a local variable ``epochs`` counts them, so run ``tf.local_variables_initializer()``), and its
queue is then closed, so readers of the queue get OutOfRangeError once it is drained. A
*batcher* runs ``num_threads`` threads that enqueue single examples (or batches, with
``enqueue_many``) into a FIFOQueue (RandomShuffleQueue for ``shuffle_batch``) and dequeues
``batch_size`` of them at a time. Every queue comes with a QueueRunner in
``GraphKeys.QUEUE_RUNNERS``: ``tf.train.start_queue_runners`` (or a MonitoredSession) starts it.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.train.limit_epochs(tf.constant([1, 2, 3]), num_epochs=2)
...     batch = tf.train.batch([x], batch_size=4, enqueue_many=True,
...                            allow_smaller_final_batch=True)
...     with tf.Session() as sess:
...         sess.run(tf.local_variables_initializer())
...         coord = tf.train.Coordinator()
...         threads = tf.train.start_queue_runners(sess, coord)
...         print(sess.run(batch).tolist(), sess.run(batch).tolist())
...         coord.request_stop()
...         coord.join(threads, stop_grace_period_secs=5)
[1, 2, 3, 1] [2, 3]
"""

import glob

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import GraphKeys, Tensor, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from zps.ops import array_ops, control_flow_ops, logging_ops, math_ops, random_ops, summary_ops
from zps.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from zps.ops.op_util import make_op
from zps.ops.partition_ops import dynamic_partition
from zps.ops.variables import Variable
from zps.train.queue_runner import QueueRunner, add_queue_runner


def _scope(name, default):
    return get_default_graph().name_scope(name or default)


def _element_shape(batch_shape):
    """The shape of the rows of a tensor of ``batch_shape`` (unknown if its rank is)."""
    rows = batch_shape.with_rank_at_least(1)
    return unknown_shape() if rows.ndims is None else TensorShape(rows.as_list()[1:])


def limit_epochs(tensor, num_epochs=None, name=None):
    """``tensor``, but running it more than ``num_epochs`` times fails with OutOfRangeError.

    The count is kept in a local variable ``epochs`` (int64); None: no limit.
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError("num_epochs must be > 0 not %d." % num_epochs)
    with _scope(name, "limit_epochs"):
        epochs = Variable(convert_to_tensor(0, dtype=_dtypes.int64), name="epochs",
                          trainable=False, collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with get_default_graph().control_dependencies([counter]):
            return array_ops.identity(tensor)


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None, cancel_op=None):
    """A FIFOQueue fed, epoch after epoch, with the rows of ``input_tensor`` (shuffled when
    ``shuffle``) by a QueueRunner; returns the queue."""
    with _scope(name, "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = _element_shape(input_tensor.get_shape()).merge_with(
            unknown_shape() if element_shape is None else as_shape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified (input_producer of %s, element "
                             "shape %s)" % (input_tensor.name, element_shape))
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                      shapes=[element_shape], shared_name=shared_name, name="fifo_queue")
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            summary_ops.scalar(summary_name,
                               math_ops.cast(q.size(), _dtypes.float32) * (1.0 / capacity))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32,
                          shared_name=None, name=None, cancel_op=None):
    """A queue of the strings (filenames) of the 1-D ``string_tensor``, for a reader.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     q = tf.train.string_input_producer(["a.csv", "b.csv"], shuffle=False)
    ...     name = q.dequeue()
    ...     with tf.train.MonitoredSession() as sess:
    ...         print(sess.run(name), sess.run(name))
    b'a.csv' b'b.csv'
    """
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and not len(string_tensor):
        raise ValueError(not_null_err)
    with _scope(name, "input_producer"):
        string_tensor = convert_to_tensor(string_tensor, dtype=_dtypes.string)
        check = logging_ops.Assert(math_ops.greater(array_ops.size(string_tensor), 0),
                                   [not_null_err])
        with get_default_graph().control_dependencies([check]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(string_tensor, element_shape=[], num_epochs=num_epochs,
                              shuffle=shuffle, seed=seed, capacity=capacity,
                              shared_name=shared_name, summary_name="fraction_of_%d_full" % capacity,
                              cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers ``0 .. limit - 1``, epoch after epoch."""
    with _scope(name, "input_producer"):
        return input_producer(array_ops.range(limit), [], num_epochs, shuffle, seed, capacity,
                              shared_name, "fraction_of_%d_full" % capacity)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row at a time of every tensor in ``tensor_list`` (same row of each), epoch after
    epoch; returns the list of row tensors."""
    with _scope(name, "input_producer"):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        queue = range_input_producer(array_ops.shape(tensor_list[0])[0], num_epochs=num_epochs,
                                     shuffle=shuffle, seed=seed, capacity=capacity,
                                     shared_name=shared_name)
        index = queue.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]


# -- MatchingFiles / match_filenames_once -------------------------------------------------------
def _matching_files_kernel(ctx, pattern):
    names = sorted(name for p in np.asarray(pattern).reshape(-1).tolist()
                   for name in glob.glob(p.decode() if isinstance(p, bytes) else str(p)))
    return np.array([name.encode() for name in names], dtype=object).reshape(len(names))


register_op("MatchingFiles", dtype=lambda op: _dtypes.string, shape=lambda op: TensorShape([None]),
            kernel=_matching_files_kernel, stateful=True, light_ok=False, grad=None)


def match_filenames_once(pattern, name=None):
    """A local variable holding the files that match the glob ``pattern`` (or a list of them),
    sorted, as matched when ``tf.local_variables_initializer()`` runs (an empty vector if none
    does): TF1's input for ``string_input_producer``.

    >>> import os, tempfile, zps as tf
    >>> d = tempfile.mkdtemp()
    >>> for n in ("b.csv", "a.csv", "c.txt"):
    ...     open(os.path.join(d, n), "w").close()
    >>> with tf.Graph().as_default():
    ...     files = tf.train.match_filenames_once(os.path.join(d, "*.csv"))
    ...     with tf.Session() as sess:
    ...         sess.run(tf.local_variables_initializer())
    ...         print([os.path.basename(f) for f in sess.run(files)])
    [b'a.csv', b'b.csv']
    """
    with _scope(name, "matching_filenames") as scope:
        pattern = convert_to_tensor(pattern, dtype=_dtypes.string, name="pattern")
        files = make_op("MatchingFiles", [pattern], name="MatchingFiles")
        return Variable(files, name=scope, trainable=False, validate_shape=False,
                        collections=[GraphKeys.LOCAL_VARIABLES])


# -- batching ------------------------------------------------------------------------------------
def _as_tensor_list(tensors):
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors)]
    return list(tensors)


def _as_original_type(original, dequeued):
    if isinstance(original, dict):
        if len(original) == 1:
            dequeued = [dequeued]   # a one-component queue dequeues a tensor, not a list
        return {k: dequeued[i] for i, k in enumerate(sorted(original))}
    return dequeued


def _validate(inputs):
    """The inputs of a batch function (each a list or dict of tensors) as lists of tensors."""
    tensor_list_list = [[convert_to_tensor(t) for t in _as_tensor_list(x)] for x in inputs]
    if not tensor_list_list or not all(tensor_list_list):
        raise ValueError("Expected at least one tensor in each input of a batch function, got %s"
                         % (inputs,))
    return tensor_list_list


def _dtypes_of(tensor_list_list):
    types = [t.dtype.base_dtype for t in tensor_list_list[0]]
    for other in tensor_list_list[1:]:
        other_types = [t.dtype.base_dtype for t in other]
        if other_types != types:
            raise TypeError("Expected types to be consistent: %s vs. %s."
                            % (", ".join(x.name for x in types),
                               ", ".join(x.name for x in other_types)))
    return types


def _shapes_of(tensor_list_list, shapes, enqueue_many, dynamic_pad):
    if shapes is not None:
        return [as_shape(s) for s in shapes]
    out = []
    for i in range(len(tensor_list_list[0])):
        s = unknown_shape()
        for tl in tensor_list_list:
            shape = tl[i].get_shape()
            if shape.ndims is None:
                raise ValueError("Cannot infer Tensor's rank: %s (set its shape, or pass `shapes` "
                                 "to the batch function)" % tl[i].name)
            s = s.merge_with(_element_shape(shape) if enqueue_many else shape)
        if not s.is_fully_defined() and not dynamic_pad:
            raise ValueError("All shapes must be fully defined: %s (pass `shapes` to the batch "
                             "function, set the shapes of its inputs, or use dynamic_pad=True)"
                             % [str(tl[i].get_shape()) for tl in tensor_list_list])
        out.append(s)
    return out


def _validate_keep_input(keep_input, enqueue_many):
    """TF1's rules: a bool scalar, or (with ``enqueue_many``) a bool vector, one per example."""
    keep_input = convert_to_tensor(keep_input, dtype=_dtypes.bool, name="keep_input")
    ndims = keep_input.get_shape().ndims
    if ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _enqueue_kept(enqueue, tensor_list, keep_input):
    """The enqueue op of ``tensor_list``, for the examples ``keep_input`` keeps: a vector picks
    rows (a dynamic_partition); a scalar decides for all (a cond; statically when constant)."""
    if keep_input.get_shape().ndims == 1:
        keep = math_ops.cast(keep_input, _dtypes.int32)
        return enqueue([dynamic_partition(t, keep, num_partitions=2)[1] for t in tensor_list])
    known = constant_value(keep_input)
    if known is not None:
        return enqueue(tensor_list) if bool(known) else control_flow_ops.no_op()
    kept = control_flow_ops.cond(keep_input, lambda: enqueue(tensor_list), control_flow_ops.no_op)
    return kept.op if isinstance(kept, Tensor) else kept


def _batch(inputs, batch_size, capacity, enqueue_many, shapes, allow_smaller_final_batch,
           shared_name, name, default_name, num_threads=None, min_after_dequeue=None, seed=None,
           dynamic_pad=False, keep_input=True):
    """The one implementation behind batch, batch_join, shuffle_batch and shuffle_batch_join:
    batches of the examples of ``inputs`` (lists or dicts of tensors of the same types).

    ``num_threads`` set: one input run by that many threads; None: one thread per input.
    ``min_after_dequeue`` set: a RandomShuffleQueue; ``dynamic_pad``: a PaddingFIFOQueue.
    ``keep_input``: which examples are enqueued (see ``maybe_batch``).
    """
    with _scope(name, default_name):
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        tensor_list_list = _validate(inputs)
        types = _dtypes_of(tensor_list_list)
        shapes = _shapes_of(tensor_list_list, shapes, enqueue_many, dynamic_pad)
        if min_after_dequeue is None:
            queue_class = PaddingFIFOQueue if dynamic_pad else FIFOQueue
            queue = queue_class(capacity=capacity, dtypes=types, shapes=shapes,
                                shared_name=shared_name)
            full = math_ops.cast(queue.size(), _dtypes.float32) * (1.0 / capacity)
            summary_name = "fraction_of_%d_full" % capacity
        else:
            queue = RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue,
                                       seed=seed, dtypes=types, shapes=shapes,
                                       shared_name=shared_name)
            full = math_ops.cast(math_ops.maximum(0, queue.size() - min_after_dequeue),
                                 _dtypes.float32) * (1.0 / (capacity - min_after_dequeue))
            summary_name = "fraction_over_%d_of_%d_full" % (min_after_dequeue,
                                                           capacity - min_after_dequeue)
        enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
        ops = [_enqueue_kept(enqueue, tl, keep_input) for tl in tensor_list_list]
        add_queue_runner(QueueRunner(queue, ops * num_threads if num_threads else ops))
        summary_ops.scalar(summary_name, full)
        if allow_smaller_final_batch:
            dequeued = queue.dequeue_up_to(batch_size)
        else:
            dequeued = queue.dequeue_many(batch_size)
        return _as_original_type(inputs[0], dequeued)


def _check_shuffle(capacity, min_after_dequeue):
    if capacity <= min_after_dequeue:
        raise ValueError("capacity %d must be bigger than min_after_dequeue %d (a shuffle queue "
                         "must have room beyond the elements it keeps)"
                         % (capacity, min_after_dequeue))


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of ``batch_size`` of ``tensors`` (a list or dict), filled by ``num_threads``
    threads; with ``enqueue_many`` each tensor is already a batch (its rows are examples).

    With ``allow_smaller_final_batch`` the last batch may be smaller (its first dimension is
    then unknown); without it, leftover examples are dropped when the input ends. With
    ``dynamic_pad`` the examples' shapes may differ in their unknown dimensions: each batch is
    padded to its largest example (with 0, or b"" for strings).
    """
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "batch", num_threads=num_threads,
                  dynamic_pad=dynamic_pad)


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of examples from several inputs (e.g. one reader each), one thread per input;
    every input must have the same types and shapes (``dynamic_pad``: as in ``batch``)."""
    return _batch(tensors_list, batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "batch_join",
                  dynamic_pad=dynamic_pad)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Batches of examples drawn at random from a pool of at least ``min_after_dequeue``
    (a RandomShuffleQueue of ``capacity``); ``seed`` makes the order reproducible.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.train.limit_epochs(tf.range(6), num_epochs=1)
    ...     b = tf.train.shuffle_batch([x], 3, capacity=6, min_after_dequeue=2,
    ...                                enqueue_many=True, seed=1)
    ...     with tf.train.MonitoredSession() as sess:
    ...         print(sorted(sess.run(b).tolist() + sess.run(b).tolist()))
    [0, 1, 2, 3, 4, 5]
    """
    _check_shuffle(capacity, min_after_dequeue)
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch",
                  num_threads=num_threads, min_after_dequeue=min_after_dequeue, seed=seed)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """shuffle_batch over several inputs, one thread per input."""
    _check_shuffle(capacity, min_after_dequeue)
    return _batch(tensors_list, batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch_join",
                  min_after_dequeue=min_after_dequeue, seed=seed)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    """``batch`` of the examples ``keep_input`` keeps: a bool scalar (keep this example, or
    with ``enqueue_many`` this whole batch) or, with ``enqueue_many``, a bool vector (one per
    row).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.train.limit_epochs(tf.range(6), num_epochs=1)
    ...     b = tf.train.maybe_batch([x], x % 2 > 0, 3, enqueue_many=True)
    ...     with tf.train.MonitoredSession() as sess:
    ...         print(sess.run(b).tolist())
    [1, 3, 5]
    """
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "batch", num_threads=num_threads,
                  dynamic_pad=dynamic_pad, keep_input=keep_input)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """``batch_join`` of the examples ``keep_input`` keeps (as in ``maybe_batch``)."""
    return _batch(tensors_list, batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "batch_join",
                  dynamic_pad=dynamic_pad, keep_input=keep_input)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """``shuffle_batch`` of the examples ``keep_input`` keeps (as in ``maybe_batch``)."""
    _check_shuffle(capacity, min_after_dequeue)
    return _batch([tensors], batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch",
                  num_threads=num_threads, min_after_dequeue=min_after_dequeue, seed=seed,
                  keep_input=keep_input)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                             seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """``shuffle_batch_join`` of the examples ``keep_input`` keeps (as in ``maybe_batch``)."""
    _check_shuffle(capacity, min_after_dequeue)
    return _batch(tensors_list, batch_size, capacity, enqueue_many, shapes,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch_join",
                  min_after_dequeue=min_after_dequeue, seed=seed, keep_input=keep_input)


__all__ = ["batch", "batch_join", "input_producer", "limit_epochs", "match_filenames_once",
           "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch", "maybe_shuffle_batch_join",
           "range_input_producer", "shuffle_batch", "shuffle_batch_join", "slice_input_producer",
           "string_input_producer"]
