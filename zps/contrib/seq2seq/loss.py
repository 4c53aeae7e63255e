"""``tf.contrib.seq2seq.sequence_loss``: the weighted cross-entropy of a batch of sequences.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     logits = tf.constant(np.zeros([2, 3, 4], np.float32))     # uniform over 4 classes
...     loss = tf.contrib.seq2seq.sequence_loss(logits, tf.zeros([2, 3], tf.int32),
...                                             tf.ones([2, 3]))
...     print(round(float(tf.Session().run(loss)), 4), round(float(np.log(4)), 4))
1.3863 1.3863
"""

from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import array_ops, math_ops, nn_ops


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """Weighted cross-entropy of ``logits`` ``[batch, time, classes]`` against int ``targets``
    ``[batch, time]``, ``weights`` ``[batch, time]`` (TF1's contrib ``sequence_loss``).

    The averages divide the weighted sum by the sum of the weights over the reduced axes; the
    ``sum_over_*`` forms divide it by the number of nonzero weights (TF1's rule). With neither
    on an axis, that axis is kept: the result is a scalar, ``[batch]``, ``[time]`` or
    ``[batch, time]``. ``softmax_loss_function(labels=, logits=)`` replaces the sparse softmax
    cross-entropy.
    """
    logits, targets, weights = (convert_to_tensor(x) for x in (logits, targets, weights))
    for what, t, rank, dims in (("Logits", logits, 3, "[batch_size x sequence_length x logits]"),
                                ("Targets", targets, 2, "[batch_size x sequence_length]"),
                                ("Weights", weights, 2, "[batch_size x sequence_length]")):
        if t.get_shape().ndims != rank:
            raise ValueError("%s must be a %s tensor, got shape %s" % (what, dims, t.get_shape()))
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to True "
                         "at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at same "
                         "time.")
    with get_default_graph().name_scope(name or "sequence_loss"):
        num_classes = array_ops.shape(logits)[2]
        logits_flat = array_ops.reshape(logits, array_ops.stack([-1, num_classes]))
        targets_flat = array_ops.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=targets_flat,
                                                                       logits=logits_flat)
        else:
            crossent = softmax_loss_function(labels=targets_flat, logits=logits_flat)
        crossent = crossent * array_ops.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return math_ops.div_no_nan(math_ops.reduce_sum(crossent), math_ops.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            count = math_ops.cast(math_ops.count_nonzero(weights), crossent.dtype)
            return math_ops.div_no_nan(math_ops.reduce_sum(crossent), count)
        crossent = array_ops.reshape(crossent, array_ops.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return math_ops.div_no_nan(math_ops.reduce_sum(crossent, axis=axis),
                                       math_ops.reduce_sum(weights, axis=axis))
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            count = math_ops.cast(math_ops.count_nonzero(weights, axis=axis), crossent.dtype)
            return math_ops.div_no_nan(math_ops.reduce_sum(crossent, axis=axis), count)
        return crossent


__all__ = ["sequence_loss"]
