"""Connectionist temporal classification (Graves et al., 2006): ``tf.nn.ctc_loss`` and its
gradient, ``ctc_greedy_decoder``, ``ctc_beam_search_decoder`` (and ``_v2``), ``ctc_loss_v2`` and
``ctc_unique_labels``, as TF1's CTC ops.

The v1 ops take logits ``[max_time, batch, num_classes]`` and reserve the last class for the
blank. ``CTCLoss`` returns the loss and, in the same pass, its gradient with respect to the
logits (TF's fused op); its gradient rule scales that second output by the loss's gradient. The
kernels compute in float64 with log-space forward (alpha) and backward (beta) recursions over
the label sequence with blanks around each label (``l'``, ``2 * len(labels) + 1`` states),
vectorized over the batch; the outputs have the logits' dtype.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     logits = tf.constant(np.zeros([4, 1, 3], np.float32))       # uniform over {0, 1, blank}
...     labels = tf.SparseTensor([[0, 0], [0, 1]], tf.constant([0, 1], tf.int32), [1, 2])
...     loss = tf.nn.ctc_loss(labels, logits, [4])
...     (decoded,), _ = tf.nn.ctc_greedy_decoder(logits, [4])
...     l, d = tf.Session().run([loss, decoded])
>>> round(float(l[0]), 4), d.values.tolist()      # 15 of the 81 paths collapse to "0 1"
(1.6864, [0])
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, math_ops
from zps.ops.nn_ops import _is_zero
from zps.ops.op_util import make_op
from zps.ops.sparse_ops import SparseTensor

_LOG_ZERO = -np.inf


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


def _joined(values):
    return ",".join(str(int(v)) for v in values)


# -- CTCLoss ---------------------------------------------------------------------------------------
def _label_sequences(indices, values, batch):
    """Each batch entry's labels, in the order of the (validated, row-major sorted) indices."""
    width = int(indices[:, 1].max()) + 1 if len(indices) else 0
    for i, index in enumerate(indices):
        if not (0 <= index[0] < batch and 0 <= index[1] < width):
            raise _invalid("label SparseTensor is not valid: indices[%d] = [%s] is out of bounds: "
                           "need 0 <= index < [%d,%d]" % (i, _joined(index), batch, width))
        if i and tuple(index) <= tuple(indices[i - 1]):
            kind = "repeated" if tuple(index) == tuple(indices[i - 1]) else "out of order"
            raise _invalid("label SparseTensor is not valid: indices[%d] = [%s] is %s. Many sparse "
                           "ops require sorted indices.\n    Use `tf.sparse.reorder` to create a "
                           "correctly ordered copy.\n\n" % (i, _joined(index), kind))
    return [values[indices[:, 0] == b] for b in range(batch)]


def _target(label, b, num_classes, seq_len, collapse, ignore_longer):
    """Batch entry ``b``'s target labels (TF's ``PopulateLPrimes``): repeats merged when
    ``collapse``; a label >= num_classes - 1 (the blank) ends the sequence."""
    if len(label) == 0:
        raise _invalid("Labels length is zero in batch %d" % b)
    target, finished = [], False
    for i, value in enumerate(label):
        if i and collapse and value == label[i - 1]:
            continue
        if value >= num_classes - 1:
            finished = True
        elif finished:
            raise _invalid("Saw a non-null label (index >= num_classes - 1) following a null label, "
                           "batch: %d num_classes: %d labels: %s labels seen so far: %s"
                           % (b, num_classes, _joined(label), _joined(target)))
        else:
            target.append(int(value))
    if any(value < 0 for value in target):
        raise _invalid("All labels must be nonnegative integers, batch: %d labels: %s"
                       % (b, _joined(target)))
    if not ignore_longer and len(label) > seq_len:
        raise _invalid("Not enough time for target transition sequence (required: %d, available: "
                       "%d)%dYou can turn this error into a warning by using the flag "
                       "ignore_longer_outputs_than_inputs" % (len(label), seq_len, b))
    return target


def _log_softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _logaddexp(*terms):
    return np.logaddexp.reduce(np.stack(terms), axis=0)


def _shift(a, k):
    """``a[..., u - k]`` along the last axis, log-zero where ``u < k``."""
    out = np.full_like(a, _LOG_ZERO)
    out[..., k:] = a[..., :a.shape[-1] - k]
    return out


def _unshift(a, k):
    """``a[..., u + k]`` along the last axis, log-zero past the end."""
    out = np.full_like(a, _LOG_ZERO)
    out[..., :a.shape[-1] - k] = a[..., k:]
    return out


def _ctc_alpha_beta(log_y, l_prime, num_states, seq_len, blank, merge_repeated):
    """Log forward and backward variables ``[time, batch, state]`` of the label sequences with
    blanks ``l_prime`` ([batch, states], padded), as TF's ``CalculateForward/BackwardVariables``:
    ``alpha(u, t)`` includes frame t's emission, ``beta(u, t)`` the frames after t only."""
    max_time, batch, _ = log_y.shape
    states = l_prime.shape[1]
    valid = np.arange(states)[None, :] < num_states[:, None]
    is_blank = l_prime == blank
    # Allowed transitions into state u: stay (a blank, or any state when repeats merge), advance
    # one, and skip the blank between two labels (unless equal labels would merge).
    stay = np.where(is_blank | merge_repeated, 0.0, _LOG_ZERO)
    skip_ok = ~is_blank & (np.arange(states) >= 2)
    skip_ok[:, 2:] &= ~(merge_repeated & (l_prime[:, 2:] == l_prime[:, :-2]))
    skip = np.where(skip_ok, 0.0, _LOG_ZERO)
    emit = np.take_along_axis(log_y, np.broadcast_to(l_prime, (max_time, batch, states)), axis=2)
    emit = np.where(valid, emit, _LOG_ZERO)

    alpha = np.full((max_time, batch, states), _LOG_ZERO)
    alpha[0, :, :2] = emit[0, :, :2]
    for t in range(1, max_time):
        prev = alpha[t - 1]
        alpha[t] = emit[t] + _logaddexp(prev + stay, _shift(prev, 1), _shift(prev, 2) + skip)

    # beta starts at each entry's last frame: 0 (log 1) in the final label and final blank.
    beta = np.full((max_time, batch, states), _LOG_ZERO)
    last = np.arange(states)[None, :] >= (num_states - 2)[:, None]
    end = np.where(last & valid, 0.0, _LOG_ZERO)
    for t in range(max_time - 1, -1, -1):
        if t + 1 < max_time:
            nxt = beta[t + 1] + emit[t + 1]
            step = _logaddexp(nxt + stay, _unshift(nxt, 1), _unshift(nxt + skip, 2))
        else:
            step = np.full((batch, states), _LOG_ZERO)
        beta[t] = np.where((t == seq_len - 1)[:, None], end,
                           np.where((t < seq_len - 1)[:, None], step, _LOG_ZERO))
    return alpha, beta


def _ctc_loss_kernel(ctx, inputs, labels_indices, labels_values, sequence_length,
                     preprocess_collapse_repeated, ctc_merge_repeated,
                     ignore_longer_outputs_than_inputs):
    max_time, batch, num_classes = inputs.shape
    if max_time == 0:
        raise _invalid("Max time or first dimension of input cannot be 0.")
    if batch != len(sequence_length):
        raise _invalid("len(sequence_length) != batch_size.  len(sequence_length):  %d batch_size: "
                       "%d" % (len(sequence_length), batch))
    if len(labels_indices) != len(labels_values):
        raise _invalid("labels_indices and labels_values must contain the same number of rows, but "
                       "saw shapes: %s vs. %s" % (list(labels_indices.shape),
                                                  list(labels_values.shape)))
    if batch == 0:
        raise _invalid("batch_size must not be 0")
    labels = _label_sequences(np.asarray(labels_indices), np.asarray(labels_values), batch)
    seq_len = np.asarray(sequence_length, np.int64)
    for b in range(batch):
        if seq_len[b] > max_time:
            raise _invalid("sequence_length(%d) <= %d" % (b, max_time))
    for b in range(batch):
        if seq_len[b] < 0:
            raise _invalid("seq_len(%d) < 0" % b)
    targets = [_target(labels[b], b, num_classes, seq_len[b], preprocess_collapse_repeated,
                       ignore_longer_outputs_than_inputs) for b in range(batch)]
    # An empty input, or a label longer than it when ignored: loss 0, gradient 0 (TF's "continue").
    used = np.array([seq_len[b] > 0 and len(labels[b]) <= seq_len[b] for b in range(batch)])
    return _ctc_loss_and_grad(inputs, targets, seq_len, used, num_classes - 1, ctc_merge_repeated)


def _ctc_loss_and_grad(inputs, targets, seq_len, used, blank, merge_repeated):
    """The loss ``-log p(target | inputs)`` of each entry and its gradient with respect to the
    logits ``inputs`` [max_time, batch, num_classes] (entries not ``used``: 0 and 0)."""
    max_time, batch, num_classes = inputs.shape
    num_states = np.array([2 * len(t) + 1 for t in targets])
    l_prime = np.full((batch, int(num_states.max())), blank, np.int64)
    for b, target in enumerate(targets):
        l_prime[b, 1:2 * len(target):2] = target
    log_y = _log_softmax(inputs.astype(np.float64))
    alpha, beta = _ctc_alpha_beta(log_y, l_prime, num_states, seq_len, blank, merge_repeated)
    log_p = np.logaddexp.reduce(alpha[0] + beta[0], axis=1)

    # d(-log p)/d(logit k at t) = y_k(t) - sum over the states u labelled k of
    # alpha(u, t) beta(u, t) / p; with no valid path (p = 0), TF's gradient is y.
    with np.errstate(invalid="ignore"):
        occupancy = np.exp(alpha + beta - log_p[None, :, None])
    occupancy = np.where(np.isfinite(log_p)[None, :, None], occupancy, 0.0)
    onehot = l_prime[:, :, None] == np.arange(num_classes)
    grad = np.exp(log_y) - np.einsum("tbs,bsc->tbc", occupancy, onehot)
    frames = (np.arange(max_time)[:, None] < seq_len[None, :]) & used[None, :]
    grad = np.where(frames[:, :, None], grad, 0.0)
    loss = np.where(used, -log_p, 0.0)
    return [loss.astype(inputs.dtype), grad.astype(inputs.dtype)]


def _ctc_loss_shape(op):
    inputs = op.inputs[0].get_shape().with_rank(3)
    batch = inputs[1].merge_with(op.inputs[3].get_shape().with_rank(1)[0])
    return [TensorShape([batch]), TensorShape([inputs[0], batch, inputs[2]])]


def _ctc_loss_grad(op, grad_loss, grad_gradient):
    if not _is_zero(grad_gradient):
        raise LookupError("Currently there is no way to take the second  derivative of ctc_loss "
                          "due to the fused implementation's interaction  with tf.gradients()")
    return [array_ops.expand_dims(grad_loss, -1) * op.outputs[1], None, None, None]


register_op("CTCLoss", num_outputs=2, dtype=lambda op: [op.inputs[0].dtype] * 2,
            shape=_ctc_loss_shape, kernels={"numpy": _ctc_loss_kernel}, grad=_ctc_loss_grad)


def _ctc_loss_dense_kernel(ctx, logits, labels, label_length, logit_length, blank_index):
    # ctc_loss_v2's dense labels. A target with no path in its input has loss inf and gradient
    # softmax(logits), as CTCLoss (TF's dense implementation gives a large finite loss there).
    max_time, _, num_classes = logits.shape
    targets = [labels[b, :label_length[b]].tolist() for b in range(len(labels))]
    for b, target in enumerate(targets):
        if any(not 0 <= v < num_classes for v in target):
            raise _invalid("ctc_loss_v2: labels of batch entry %d must be in [0, %d), got %s"
                           % (b, num_classes, _joined(target)))
    seq_len = np.asarray(logit_length, np.int64)
    for b in range(len(seq_len)):
        if not 0 <= seq_len[b] <= max_time:
            raise _invalid("ctc_loss_v2: logit_length(%d) = %d is not in [0, %d] (the number of "
                           "frames of the logits)" % (b, seq_len[b], max_time))
    return _ctc_loss_and_grad(logits, targets, seq_len, seq_len > 0, blank_index, True)


register_op("CTCLossDense", num_outputs=2, dtype=lambda op: [op.inputs[0].dtype] * 2,
            shape=_ctc_loss_shape, kernels={"numpy": _ctc_loss_dense_kernel},
            grad=_ctc_loss_grad)


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
             logits=None):
    """The CTC loss ``-log p(labels | inputs)`` of each batch entry (a ``[batch]`` tensor).

    ``labels``: an int32 SparseTensor (``labels.indices[i] = [b, position]``, values in
    ``[0, num_classes - 1)``); ``inputs`` (or ``logits``): unnormalized logits
    ``[max_time, batch, num_classes]`` (``[batch, max_time, num_classes]`` unless
    ``time_major``), the last class the blank; ``sequence_length``: int32 ``[batch]``.
    ``preprocess_collapse_repeated`` merges repeated labels before the loss;
    ``ctc_merge_repeated=False`` makes each frame of a repeated class a separate label;
    ``ignore_longer_outputs_than_inputs`` gives loss 0 (and gradient 0) to an entry whose labels
    are longer than its input, instead of an InvalidArgumentError.

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     labels = tf.SparseTensor([[0, 0]], tf.constant([0], tf.int32), [1, 1])
    ...     loss = tf.nn.ctc_loss(labels, tf.zeros([2, 1, 2]), [2])    # paths "0 0", "0 -", "- 0"
    ...     print(round(float(tf.Session().run(loss)[0]), 4))     # -log(3/4)
    0.2877
    """
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected argument `labels` to be a SparseTensor. Received labels=%s of "
                        "type: %s" % (labels, type(labels).__name__))
    if logits is not None and inputs is not None:
        raise ValueError("Cannot specify both 'logits' and 'inputs'")
    inputs = convert_to_tensor(logits if logits is not None else inputs, name="logits")
    if not time_major:
        inputs = array_ops.transpose(inputs, [1, 0, 2])
    orig_dtype = inputs.dtype
    if orig_dtype == _dtypes.float16:
        inputs = math_ops.cast(inputs, _dtypes.float32)
    loss, _ = make_op("CTCLoss", [inputs, labels.indices,
                                  math_ops.cast(labels.values, _dtypes.int32),
                                  convert_to_tensor(sequence_length, _dtypes.int32)],
                      name="CTCLoss",
                      preprocess_collapse_repeated=bool(preprocess_collapse_repeated),
                      ctc_merge_repeated=bool(ctc_merge_repeated),
                      ignore_longer_outputs_than_inputs=bool(ignore_longer_outputs_than_inputs))
    if orig_dtype == _dtypes.float16:
        loss = math_ops.cast(loss, orig_dtype)
    return loss


def ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True, unique=None,
                blank_index=None, name=None):
    """The CTC loss of each batch entry, as TF's ``ctc_loss_v2``: ``labels`` dense int
    ``[batch, max_label_length]`` (the first ``label_length[b]`` of row b used; ``blank_index``
    default 0) or an int32 SparseTensor (``blank_index`` required; it goes through
    :func:`ctc_loss`). ``logits``: ``[frames, batch, num_classes]`` (``[batch, frames,
    num_classes]`` unless ``logits_time_major``); ``logit_length``: ``[batch]``. ``unique`` (from
    :func:`ctc_unique_labels`, a TPU speed-up in TF) does not change the loss and is not used.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     loss = tf.nn.ctc_loss_v2([[1]], tf.zeros([2, 1, 2]), [1], [2])   # blank 0
    ...     print(round(float(tf.Session().run(loss)[0]), 4))
    0.2877
    """
    del unique
    logits = convert_to_tensor(logits, name="logits")
    num_classes = logits.get_shape().with_rank(3)[2].value
    if blank_index is not None and blank_index < 0:
        if num_classes is None:
            raise ValueError("ctc_loss_v2: a negative blank_index needs logits with a known number "
                             "of classes (the last dimension), got shape %s" % logits.get_shape())
        blank_index += num_classes
    if isinstance(labels, SparseTensor):
        if blank_index is None:
            raise ValueError("Argument `blank_index` must be provided when labels is a "
                             "SparseTensor.")
        if num_classes is None:
            raise ValueError("ctc_loss_v2 with sparse labels needs logits with a known number of "
                             "classes (the last dimension), got shape %s" % logits.get_shape())
        if blank_index != num_classes - 1:    # the v1 op's blank is the last class
            logits = array_ops.concat([logits[:, :, :blank_index], logits[:, :, blank_index + 1:],
                                       logits[:, :, blank_index:blank_index + 1]], axis=2)
            labels = SparseTensor(labels.indices,
                                  array_ops.where(labels.values < blank_index, labels.values,
                                                  labels.values - 1), labels.dense_shape)
        return ctc_loss(labels=labels, inputs=logits, sequence_length=logit_length,
                        time_major=logits_time_major)
    if label_length is None:
        raise ValueError("ctc_loss_v2: dense labels need label_length (the length of each row)")
    with get_default_graph().name_scope(name or "ctc_loss_dense"):
        if not logits_time_major:
            logits = array_ops.transpose(logits, [1, 0, 2])
        loss, _ = make_op("CTCLossDense", [
            logits, convert_to_tensor(labels, name="labels"),
            convert_to_tensor(label_length, name="label_length"),
            convert_to_tensor(logit_length, name="logit_length")],
            blank_index=0 if blank_index is None else int(blank_index))
        return loss


# -- decoders: shared checks and outputs -----------------------------------------------------------
def _check_decoder_inputs(inputs, sequence_length):
    if inputs.ndim != 3:
        raise _invalid("inputs is not a 3-Tensor")
    if inputs.size == 0:
        raise _invalid("inputs must not be empty")
    max_time, batch, _ = inputs.shape
    if np.ndim(sequence_length) != 1:
        raise _invalid("sequence_length is not a vector")
    if len(sequence_length) != batch:
        raise errors.FailedPreconditionError(
            None, None, "len(sequence_length) != batch_size.  len(sequence_length):  %d "
            "batch_size: %d" % (len(sequence_length), batch))
    for b in range(batch):
        if not sequence_length[b] <= max_time:
            raise errors.FailedPreconditionError(None, None, "sequence_length(%d) <= %d"
                                                 % (b, max_time))


def _sparse_paths(paths, batch):
    """``[indices, values, dense_shape]`` (int64) of one decoded sequence per batch entry."""
    indices = [[b, t] for b, path in enumerate(paths) for t in range(len(path))]
    values = [v for path in paths for v in path]
    return [np.array(indices, np.int64).reshape(-1, 2), np.array(values, np.int64),
            np.array([batch, max([len(p) for p in paths] + [0])], np.int64)]


def _decoded_dtypes(top_paths, value_dtype):
    return [_dtypes.int64] * (3 * top_paths) + [value_dtype]


def _decoded_shapes(op, top_paths):
    batch = op.inputs[0].get_shape().with_rank(3)[1]
    return ([TensorShape([None, 2])] * top_paths + [TensorShape([None])] * top_paths
            + [TensorShape([2])] * top_paths + [TensorShape([batch, top_paths])])


def _decoded(outputs, top_paths):
    """The v1 decoders' ``([SparseTensor per path], log_probability)`` from the op's outputs."""
    return ([SparseTensor(outputs[p], outputs[top_paths + p], outputs[2 * top_paths + p])
             for p in range(top_paths)], outputs[-1])


# -- CTCGreedyDecoder ------------------------------------------------------------------------------
def _greedy_kernel(ctx, inputs, sequence_length, merge_repeated, blank_index):
    _check_decoder_inputs(inputs, sequence_length)
    max_time, batch, num_classes = inputs.shape
    blank = blank_index + num_classes if blank_index < 0 else blank_index
    if not 0 <= blank < num_classes:
        raise _invalid("blank_index expected to be between %d and %d but was %d"
                       % (-num_classes, num_classes - 1, blank_index))
    best = inputs.argmax(axis=2)            # the first maximum, as TF's RowMax
    log_prob = np.zeros((batch, 1), inputs.dtype)
    paths = []
    for b in range(batch):
        frames = best[:max(sequence_length[b], 0), b]
        log_prob[b, 0] = -inputs[np.arange(len(frames)), b, frames].sum()
        keep = frames != blank
        if merge_repeated:
            keep[1:] &= frames[1:] != frames[:-1]
        paths.append(frames[keep].tolist())
    return _sparse_paths(paths, batch) + [log_prob]


register_op("CTCGreedyDecoder", num_outputs=4,
            dtype=lambda op: _decoded_dtypes(1, op.inputs[0].dtype),
            shape=lambda op: _decoded_shapes(op, 1), kernels={"numpy": _greedy_kernel},
            grad=None)


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """Best-path decoding: the most likely class of each frame, runs of a class merged (unless
    not ``merge_repeated``) and blanks removed. Returns ``([decoded], neg_sum_logits)``: one
    int64 SparseTensor ``[batch, max_decoded_length]`` and ``[batch, 1]``, the negative sum of
    the largest logit of each frame. ``blank_index`` defaults to the last class.

    >>> import numpy as np, zps as tf
    >>> logits = np.eye(3, dtype=np.float32)[[0, 0, 2, 0, 1]][:, None, :]   # "0 0 - 0 1"
    >>> with tf.Graph().as_default():
    ...     (decoded,), neg_sum = tf.nn.ctc_greedy_decoder(logits, [5])
    ...     d, s = tf.Session().run([decoded, neg_sum])
    >>> d.values.tolist(), d.dense_shape.tolist(), s.tolist()
    ([0, 0, 1], [1, 3], [[-5.0]])
    """
    inputs = convert_to_tensor(inputs, name="inputs")
    outputs = make_op("CTCGreedyDecoder",
                      [inputs, convert_to_tensor(sequence_length, _dtypes.int32)],
                      name="CTCGreedyDecoder", merge_repeated=bool(merge_repeated),
                      blank_index=-1 if blank_index is None else int(blank_index))
    return _decoded(outputs, 1)


# -- CTCBeamSearchDecoder --------------------------------------------------------------------------
class _Beam:
    """A prefix in the beam search tree: its log probabilities at the previous frame (``old``)
    and this one (``new``), each ``[total, ending in blank, ending in its label]``."""

    __slots__ = ("parent", "label", "children", "old", "new")

    def __init__(self, parent, label):
        self.parent, self.label, self.children = parent, label, {}
        self.old = [_LOG_ZERO] * 3
        self.new = [_LOG_ZERO] * 3

    def active(self):
        return self.new[0] != _LOG_ZERO

    def child(self, label):
        if label not in self.children:
            self.children[label] = _Beam(self, label)
        return self.children[label]

    def labels(self, merge_repeated):
        out, beam, previous = [], self, -1
        while beam.parent is not None:
            if not merge_repeated or beam.label != previous:
                out.append(beam.label)
            previous, beam = beam.label, beam.parent
        return out[::-1]


def _log_sum(a, b):
    return float(np.logaddexp(a, b))


def _beam_step(leaves, logits, beam_width):
    """One frame of TF's ``CTCBeamSearchDecoder::Step`` (default scorer, no label selection):
    extend every leaf by a blank or its own label, then grow new leaves while the beam (kept
    at ``beam_width``, the worst one dropped) has room for them."""
    blank = len(logits) - 1
    top = float(np.logaddexp.reduce(logits))    # the frame's log-softmax offset
    branches = sorted(leaves, key=lambda beam: -beam.new[0])
    for beam in branches:
        beam.old = list(beam.new)
    leaves = []
    for beam in branches:
        total, blank_p, label_p = beam.new
        if beam.parent is not None:
            if beam.parent.active():
                parent = beam.parent.old
                previous = parent[1] if beam.label == beam.parent.label else parent[0]
                label_p = _log_sum(label_p, previous)
            label_p += float(logits[beam.label]) - top
        blank_p = beam.old[0] + float(logits[blank]) - top
        beam.new = [_log_sum(blank_p, label_p), blank_p, label_p]
        leaves.append(beam)

    def bottom():
        return min(leaves, key=lambda beam: beam.new[0])

    def is_candidate(prob):
        return prob[0] > _LOG_ZERO and (len(leaves) < beam_width or prob[0] > bottom().new[0])

    for beam in branches:
        if not is_candidate(beam.old):
            continue
        for label in range(blank):
            child = beam.child(label)
            if child.active():
                continue
            previous = beam.old[1] if label == beam.label else beam.old[0]
            label_p = float(logits[label]) - top + previous
            child.new = [label_p, _LOG_ZERO, label_p]
            if is_candidate(child.new):
                if len(leaves) == beam_width:
                    worst = bottom()
                    worst.new = [_LOG_ZERO] * 3     # dropped from the beam: inactive
                    leaves.remove(worst)
                leaves.append(child)
            else:
                child.old = [_LOG_ZERO] * 3
                child.new = [_LOG_ZERO] * 3
    return leaves


def _beam_search_kernel(ctx, inputs, sequence_length, beam_width, top_paths, merge_repeated):
    _check_decoder_inputs(inputs, sequence_length)
    batch = inputs.shape[1]
    paths = [[] for _ in range(top_paths)]
    log_prob = np.zeros((batch, top_paths), inputs.dtype)
    for b in range(batch):
        root = _Beam(None, -1)
        root.new = [0.0, 0.0, _LOG_ZERO]
        leaves = [root]
        for t in range(sequence_length[b]):
            leaves = _beam_step(leaves, inputs[t, b].astype(np.float64), beam_width)
        if top_paths > beam_width:
            raise _invalid("requested more paths than the beam width.")
        if top_paths > len(leaves):
            raise _invalid("Less leaves in the beam search than requested.")
        best = sorted(leaves, key=lambda beam: -beam.new[0])[:top_paths]
        for p, beam in enumerate(best):
            paths[p].append(beam.labels(merge_repeated))
            log_prob[b, p] = beam.new[0]
    outputs = [_sparse_paths(p, batch) for p in paths]
    return [out[i] for i in range(3) for out in outputs] + [log_prob]


register_op("CTCBeamSearchDecoder", num_outputs=4,
            dtype=lambda op: _decoded_dtypes(op._attrs["top_paths"], op.inputs[0].dtype),
            shape=lambda op: _decoded_shapes(op, op._attrs["top_paths"]),
            kernels={"numpy": _beam_search_kernel}, grad=None)


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
                            merge_repeated=True):
    """Beam search decoding of the logits ``[max_time, batch, num_classes]`` (last class the
    blank), keeping ``beam_width`` prefixes: ``(decoded, log_probabilities)``, ``decoded`` a list
    of ``top_paths`` int64 SparseTensors (the j-th best sequence of each entry) and
    ``log_probabilities`` ``[batch, top_paths]`` (the sequences' log probabilities, as far as
    the beam found their paths). With ``merge_repeated`` equal consecutive labels of a beam are
    emitted once (TF1's default, which can return a sequence twice).

    >>> import numpy as np, zps as tf
    >>> logits = np.log(np.array([[0.6, 0.1, 0.3], [0.4, 0.1, 0.5]], np.float32))[:, None, :]
    >>> with tf.Graph().as_default():     # "0": 0 0, 0 -, - 0 (0.66); "": - - (0.15)
    ...     decoded, log_prob = tf.nn.ctc_beam_search_decoder(logits, [2], beam_width=3,
    ...                                                       top_paths=2)
    ...     d0, d1, p = tf.Session().run([decoded[0], decoded[1], log_prob])
    >>> d0.values.tolist(), d1.values.tolist(), [round(float(v), 4) for v in p[0]]
    ([0], [], [-0.4155, -1.8971])
    """
    if beam_width < 1 or top_paths < 1:
        raise ValueError("ctc_beam_search_decoder: beam_width and top_paths must be >= 1, got %d "
                         "and %d" % (beam_width, top_paths))
    inputs = convert_to_tensor(inputs, name="inputs")
    outputs = make_op("CTCBeamSearchDecoder",
                      [inputs, convert_to_tensor(sequence_length, _dtypes.int32)],
                      name="CTCBeamSearchDecoder", num_outputs=3 * int(top_paths) + 1,
                      beam_width=int(beam_width), top_paths=int(top_paths),
                      merge_repeated=bool(merge_repeated))
    return _decoded(outputs, int(top_paths))


def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """:func:`ctc_beam_search_decoder` without ``merge_repeated`` (TF's v2: labels separated by
    a blank are both emitted, so no sequence is returned twice)."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width=beam_width,
                                   top_paths=top_paths, merge_repeated=False)


# -- CTCUniqueLabels ------------------------------------------------------------------------------
def _unique_labels_kernel(ctx, labels):
    unique = np.zeros(labels.shape, np.int64)
    index = np.zeros(labels.shape, np.int32)
    for b, row in enumerate(labels):
        values, first, inverse = np.unique(row, return_index=True, return_inverse=True)
        order = np.argsort(first)               # in order of first appearance, as tf.unique
        unique[b, :len(values)] = values[order]
        index[b] = np.argsort(order)[inverse]
    return [unique, index]


register_op("CTCUniqueLabels", num_outputs=2, dtype=lambda op: [_dtypes.int64, _dtypes.int32],
            shape=lambda op: [op.inputs[0].get_shape().with_rank(2)] * 2,
            kernels={"numpy": _unique_labels_kernel}, grad=None)


def ctc_unique_labels(labels, name=None):
    """Each row's distinct labels in order of first appearance, zero-padded (int64), and the
    index of each label in them (int32): ``(unique, indices)`` for ``ctc_loss_v2``'s ``unique``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     unique, index = tf.Session().run(tf.nn.ctc_unique_labels([[3, 4, 4, 3]]))
    >>> unique.tolist(), index.tolist()
    ([[3, 4, 0, 0]], [[0, 1, 1, 0]])
    """
    with get_default_graph().name_scope(name or "ctc_unique_labels"):
        unique, index = make_op("CTCUniqueLabels", [convert_to_tensor(labels, name="labels")])
        return unique, index


__all__ = ["ctc_loss", "ctc_loss_v2", "ctc_greedy_decoder", "ctc_beam_search_decoder",
           "ctc_beam_search_decoder_v2", "ctc_unique_labels"]
