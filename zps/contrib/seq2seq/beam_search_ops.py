"""``gather_tree``: the op that turns beam search's per-step ids and parents into full beams.

>>> import numpy as np, zps as tf
>>> step_ids = np.array([[[1, 2, 3]], [[4, 5, 6]], [[7, 8, 9]]], np.int32)   # [time, batch, beam]
>>> parent_ids = np.array([[[0, 0, 0]], [[0, 1, 1]], [[2, 1, 2]]], np.int32)
>>> with tf.Graph().as_default():
...     beams = tf.contrib.seq2seq.gather_tree(step_ids, parent_ids, [3], end_token=10)
...     print(tf.Session().run(beams)[:, 0].T)
[[2 6 7]
 [2 5 8]
 [2 6 9]]
"""

import numpy as np

from zps.framework import dtypes, errors
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.ops.op_util import make_op


def _gather_tree_kernel(ctx, step_ids, parent_ids, max_sequence_lengths, end_token):
    if step_ids.ndim != 3:
        raise errors.InvalidArgumentError(None, None, "step_ids must be a 3-tensor, saw shape: %s"
                                          % (step_ids.shape,))
    if step_ids.shape != parent_ids.shape:
        raise errors.InvalidArgumentError(
            None, None, "step_ids.shape must match parent_ids.shape.  but shapes are: %s and %s"
            % (step_ids.shape, parent_ids.shape))
    max_time, batch_size, beam_width = step_ids.shape
    if max_sequence_lengths.shape != (batch_size,):
        raise errors.InvalidArgumentError(
            None, None, "batch size dimensions step_ids.shape[1] and max_sequence_lengths.shape[0]"
            " must match.  but shapes are: %s and %s" % (step_ids.shape,
                                                        max_sequence_lengths.shape))
    step_ids, parent_ids = np.asarray(step_ids), np.asarray(parent_ids)
    end = np.asarray(end_token).item()
    beams = np.full(step_ids.shape, end, step_ids.dtype)
    for batch in range(batch_size):
        length = min(max_time, int(max_sequence_lengths[batch]))
        for beam in range(beam_width):
            if length <= 0:
                continue
            beams[length - 1, batch, beam] = step_ids[length - 1, batch, beam]
            parent = parent_ids[length - 1, batch, beam]
            for level in range(length - 2, -1, -1):
                if parent < 0 or parent > beam_width:
                    raise errors.InvalidArgumentError(
                        None, None, "Saw invalid parent id %d at (batch, time, beam) == "
                        "(%d, %d, %d)" % (parent, batch, level, beam))
                beams[level, batch, beam] = step_ids[level, batch, parent]
                parent = parent_ids[level, batch, parent]
            # A beam ends at its first end token (a hand-fed trajectory may go on after it).
            ended = np.cumsum(beams[:length, batch, beam] == end) > 0
            ended[1:], ended[0] = ended[:-1].copy(), False
            beams[:length, batch, beam][ended] = end
    return beams


register_op("GatherTree", shape=lambda op: op.inputs[0].get_shape(),
            dtype=lambda op: op.inputs[0].dtype, kernels={"numpy": _gather_tree_kernel},
            grad=None)


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """The full beams ``[max_time, batch, beam_width]`` from each step's ids and parent beams:
    beam ``b`` is followed back from step ``max_sequence_lengths[batch] - 1`` through its
    parents; steps past the length, and those after the beam's first ``end_token``, are
    ``end_token`` (TF1's ``GatherTree``)."""
    step_ids = convert_to_tensor(step_ids, dtype=dtypes.int32, name="step_ids")
    parent_ids = convert_to_tensor(parent_ids, dtype=dtypes.int32, name="parent_ids")
    lengths = convert_to_tensor(max_sequence_lengths, dtype=dtypes.int32,
                                name="max_sequence_lengths")
    end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
    for what, t, rank in (("step_ids", step_ids, 3), ("parent_ids", parent_ids, 3),
                          ("max_sequence_lengths", lengths, 1), ("end_token", end_token, 0)):
        if t.get_shape().ndims not in (None, rank):
            raise ValueError("gather_tree: %s must have rank %d, got shape %s"
                             % (what, rank, t.get_shape()))
    return make_op("GatherTree", [step_ids, parent_ids, lengths, end_token],
                   name=name or "GatherTree")


__all__ = ["gather_tree"]
