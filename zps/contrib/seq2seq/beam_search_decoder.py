"""``BeamSearchDecoder`` (TF1's contrib ``seq2seq.beam_search_decoder``): keeps the
``beam_width`` best hypotheses of each example, scored by their summed log-probabilities
(divided by the length penalty ``((5 + length) / 6) ** length_penalty_weight``, plus the
coverage penalty of attentional cells), and at the end follows each beam back through its
parents (``gather_tree``).

The cell runs on ``batch * beam_width`` rows: its initial state must be tiled so
(``tile_batch``), as must an attention mechanism's memory. At the first step only beam 0 is
alive (the others start at -inf), so the beams do not repeat one another.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     cell = tf.nn.rnn_cell.GRUCell(4)
...     decoder = tf.contrib.seq2seq.BeamSearchDecoder(
...         cell, np.eye(5, dtype=np.float32), start_tokens=[0, 0], end_token=4,
...         initial_state=cell.zero_state(2 * 3, tf.float32), beam_width=3,
...         output_layer=tf.layers.Dense(5))
...     outputs, state, _ = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=6)
...     sess = tf.Session()
...     _ = sess.run(tf.global_variables_initializer())
...     print(sess.run(outputs.predicted_ids).shape[::2])
(2, 3)
"""

import collections

import numpy as np

from zps import nest
from zps.contrib.seq2seq import attention_wrapper, beam_search_ops, decoder
from zps.contrib.seq2seq.basic_decoder import _check_output_layer
from zps.contrib.seq2seq.helper import _embedding_fn
from zps.framework import dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, control_flow_ops, math_ops, nn_ops, rnn_cell_impl
from zps.ops.tensor_array_ops import TensorArray


class BeamSearchDecoderState(collections.namedtuple(
        "BeamSearchDecoderState", ("cell_state", "log_probs", "finished", "lengths",
                                   "accumulated_attention_probs"))):
    """The cell's state ``[batch, beam, ...]``, each beam's log-probability, finished flag and
    length, and (with a coverage penalty) its summed attention. After ``dynamic_decode`` the
    TensorArrays of the cell state (alignment histories) are stacked tensors
    ``[time, batch * beam, ...]`` in the final beams' order (``reorder_tensor_arrays``)."""

    __slots__ = ()


class BeamSearchDecoderOutput(collections.namedtuple(
        "BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))):
    """One step: each beam's score, its new id and the beam it continues."""

    __slots__ = ()


class FinalBeamSearchDecoderOutput(collections.namedtuple(
        "FinalBeamDecoderOutput", ["predicted_ids", "beam_search_decoder_output"])):
    """The whole beams ``[batch, time, beam]`` (``gather_tree``'s), and the steps' outputs."""

    __slots__ = ()


def _tile_batch(t, multiplier):
    t = convert_to_tensor(t, name="t")
    if t.get_shape().ndims is None or t.get_shape().ndims < 1:
        raise ValueError("t must have statically known rank")
    shape_t = array_ops.shape(t)
    tiling = [1] * (t.get_shape().ndims + 1)
    tiling[1] = multiplier
    tiled = array_ops.tile(array_ops.expand_dims(t, 1), tiling)
    tiled = array_ops.reshape(tiled, array_ops.concat([shape_t[:1] * multiplier, shape_t[1:]], 0))
    batch = t.get_shape()[0].value
    tiled.set_shape(TensorShape([None if batch is None else batch * multiplier])
                    .concatenate(t.get_shape()[1:]))
    return tiled


def tile_batch(t, multiplier, name=None):
    """Each example of (each tensor of the structure) ``t`` repeated ``multiplier`` times
    along the batch: ``[batch * multiplier, ...]`` as ``t[0], t[0], ..., t[1], ...``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.contrib.seq2seq.tile_batch(tf.constant([1, 2]), 2)))
    [1 1 2 2]
    """
    with get_default_graph().name_scope(name or "tile_batch"):
        return nest.map_structure(lambda t_: _tile_batch(t_, multiplier), t)


def _check_maybe(t):
    if t.get_shape().ndims is None:
        raise ValueError("Expected tensor (%s) to have known rank, but ndims == None." % t)


def _static(value):
    """A Python int for an int or a constant tensor, else None."""
    if isinstance(value, int):
        return value
    v = constant_value(value)
    return None if v is None else int(v)


def _gather(indices, source, batch_size, range_size, gather_shape):
    """``source``'s rows chosen by ``indices`` ``[batch, beam]``, each an index within its
    example's ``range_size`` rows (TF1's _tensor_gather_helper)."""
    offsets = array_ops.expand_dims(array_ops.range(batch_size) * range_size, 1)
    flat = array_ops.reshape(indices + offsets, [-1])
    out = array_ops.gather(array_ops.reshape(source, gather_shape), flat)
    out = array_ops.reshape(out, array_ops.shape(source)[:1 + len(gather_shape)])
    out.set_shape(TensorShape([_static(batch_size)]).concatenate(
        source.get_shape()[1:1 + len(gather_shape)]))
    return out


def _maybe_gather(indices, source, batch_size, range_size, gather_shape):
    if isinstance(source, TensorArray):
        return source
    _check_maybe(source)
    if source.get_shape().ndims >= len(gather_shape):
        return _gather(indices, source, batch_size, range_size, gather_shape)
    return source


def _mask_probs(probs, eos_token, finished):
    """Finished beams put all their probability on ``eos_token`` (log 0; the dtype's minimum
    elsewhere); the others are unchanged."""
    vocab_size = array_ops.shape(probs)[2]
    finished_row = array_ops.one_hot(eos_token, vocab_size, dtype=probs.dtype,
                                     on_value=convert_to_tensor(0.0, dtype=probs.dtype),
                                     off_value=probs.dtype.min)
    finished_probs = array_ops.tile(array_ops.reshape(finished_row, [1, 1, -1]),
                                    array_ops.concat([array_ops.shape(finished), [1]], 0))
    finished_mask = array_ops.tile(array_ops.expand_dims(finished, 2),
                                   array_ops.stack([1, 1, vocab_size]))
    return array_ops.where(finished_mask, finished_probs, probs)


def _length_penalty(sequence_lengths, penalty_factor):
    """``((5 + length) / 6) ** penalty_factor`` (https://arxiv.org/abs/1609.08144); 1.0 when
    the factor is a constant 0."""
    penalty_factor = convert_to_tensor(penalty_factor, name="penalty_factor")
    static = constant_value(penalty_factor)
    if static is not None and float(static) == 0:
        return 1.0
    return math_ops.div((5.0 + math_ops.cast(sequence_lengths, dtypes.float32))
                        ** penalty_factor, (5.0 + 1.0) ** penalty_factor)


def _get_scores(log_probs, sequence_lengths, length_penalty_weight, coverage_penalty_weight,
                finished, accumulated_attention_probs):
    penalty = _length_penalty(sequence_lengths, length_penalty_weight)
    if not isinstance(penalty, float):
        penalty = math_ops.cast(penalty, log_probs.dtype)
    scores = log_probs / penalty
    weight = convert_to_tensor(coverage_penalty_weight, name="coverage_penalty_weight")
    if weight.get_shape().ndims != 0:
        raise ValueError("coverage_penalty_weight should be a scalar, but saw shape: %s"
                         % weight.get_shape())
    if constant_value(weight) == 0.0:
        return scores
    if accumulated_attention_probs is None:
        raise ValueError("accumulated_attention_probs can be None only if coverage penalty is "
                         "disabled.")
    probs = array_ops.where(math_ops.equal(accumulated_attention_probs, 0.0),
                            array_ops.ones_like(accumulated_attention_probs),
                            accumulated_attention_probs)
    coverage = math_ops.reduce_sum(math_ops.log(math_ops.minimum(probs, 1.0)), 2)
    coverage = coverage * math_ops.cast(finished, coverage.dtype) * math_ops.cast(
        weight, coverage.dtype)
    return scores + array_ops.expand_dims(coverage, 2)


def _attention_probs_of(state):
    probs = state.alignments
    if isinstance(probs, tuple):
        probs = math_ops.reduce_mean(array_ops.stack(list(probs), -1), -1)
    return probs


def get_attention_probs(next_cell_state, coverage_penalty_weight):
    """The alignments ``[batch, beam, max_time]`` of the attentional cell states in
    ``next_cell_state`` (averaged over several), or None without a coverage penalty."""
    if coverage_penalty_weight == 0.0:
        return None
    if isinstance(next_cell_state, attention_wrapper.AttentionWrapperState):
        per_layer = [_attention_probs_of(next_cell_state)]
    elif isinstance(next_cell_state, tuple):
        per_layer = [_attention_probs_of(s) for s in next_cell_state
                     if isinstance(s, attention_wrapper.AttentionWrapperState)]
    else:
        per_layer = []
    if not per_layer:
        raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
    if len(per_layer) == 1:
        return per_layer[0]
    return math_ops.reduce_mean(array_ops.stack(per_layer, -1), -1)


def _beam_search_step(time, logits, next_cell_state, beam_state, batch_size, beam_width,
                      end_token, length_penalty_weight, coverage_penalty_weight=0.0):
    """One step of beam search over ``logits`` ``[batch, beam, vocab]``:
    ``(BeamSearchDecoderOutput, BeamSearchDecoderState)``."""
    static_batch = _static(batch_size)
    prediction_lengths = beam_state.lengths
    previously_finished = beam_state.finished
    step_log_probs = _mask_probs(nn_ops.log_softmax(logits), end_token, previously_finished)
    total_probs = array_ops.expand_dims(beam_state.log_probs, 2) + step_log_probs

    vocab_size = logits.get_shape()[-1].value or array_ops.shape(logits)[-1]
    lengths_to_add = array_ops.one_hot(
        array_ops.fill(array_ops.stack([batch_size, beam_width]), end_token), depth=vocab_size,
        on_value=np.int64(0), off_value=np.int64(1), dtype=dtypes.int64)
    add_mask = math_ops.cast(math_ops.logical_not(previously_finished), dtypes.int64)
    new_prediction_lengths = (lengths_to_add * array_ops.expand_dims(add_mask, 2)
                              + array_ops.expand_dims(prediction_lengths, 2))

    accumulated_attention_probs = None
    attention_probs = get_attention_probs(next_cell_state, coverage_penalty_weight)
    if attention_probs is not None:
        attention_probs = attention_probs * array_ops.expand_dims(
            math_ops.cast(add_mask, attention_probs.dtype), 2)
        accumulated_attention_probs = beam_state.accumulated_attention_probs + attention_probs

    scores = _get_scores(total_probs, new_prediction_lengths, length_penalty_weight,
                         coverage_penalty_weight, previously_finished,
                         accumulated_attention_probs)
    scores_flat = array_ops.reshape(scores, array_ops.stack([batch_size, -1]))
    next_beam_scores, word_indices = nn_ops.top_k(scores_flat, k=beam_width)
    next_beam_scores.set_shape([static_batch, beam_width])
    word_indices.set_shape([static_batch, beam_width])

    next_beam_probs = _gather(word_indices, total_probs, batch_size, beam_width * vocab_size,
                              [-1])
    next_word_ids = math_ops.cast(math_ops.floormod(word_indices, vocab_size), dtypes.int32)
    next_beam_ids = math_ops.cast(math_ops.floordiv(word_indices, vocab_size), dtypes.int32)

    previously_finished = _gather(next_beam_ids, previously_finished, batch_size, beam_width,
                                  [-1])
    next_finished = math_ops.logical_or(previously_finished,
                                        math_ops.equal(next_word_ids, end_token))
    next_prediction_len = _gather(next_beam_ids, beam_state.lengths, batch_size, beam_width,
                                  [-1])
    next_prediction_len = next_prediction_len + math_ops.cast(
        math_ops.logical_not(previously_finished), next_prediction_len.dtype)
    next_accumulated = ()
    if accumulated_attention_probs is not None:
        next_accumulated = _gather(next_beam_ids, accumulated_attention_probs, batch_size,
                                   beam_width, [batch_size * beam_width, -1])
    next_cell_state = nest.map_structure(
        lambda source: _maybe_gather(next_beam_ids, source, batch_size, beam_width,
                                     [batch_size * beam_width, -1]), next_cell_state)
    next_state = BeamSearchDecoderState(
        cell_state=next_cell_state, log_probs=next_beam_probs, lengths=next_prediction_len,
        finished=next_finished, accumulated_attention_probs=next_accumulated)
    output = BeamSearchDecoderOutput(scores=next_beam_scores, predicted_ids=next_word_ids,
                                     parent_ids=next_beam_ids)
    return output, next_state


def gather_tree_from_array(t, parent_ids, sequence_length):
    """``t`` ``[max_time, batch * beam, ...]`` (a stacked TensorArray of the cell state, written
    in each step's beam order) reordered so that beam ``b`` follows its final beam back through
    ``parent_ids`` ``[max_time, batch, beam]``; steps past ``sequence_length`` keep their beam
    (TF1's)."""
    shape = array_ops.shape(parent_ids)
    max_time, batch_size, beam_width = shape[0], shape[1], shape[2]
    beam_ids = array_ops.tile(array_ops.reshape(array_ops.range(beam_width), [1, 1, -1]),
                              array_ops.stack([max_time, batch_size, 1]))
    max_lengths = math_ops.cast(math_ops.reduce_max(sequence_length, axis=1), dtypes.int32)
    sorted_ids = beam_search_ops.gather_tree(beam_ids, parent_ids, max_lengths,
                                             end_token=beam_width + 1)
    in_bound = array_ops.transpose(array_ops.sequence_mask(sequence_length, maxlen=max_time),
                                   [2, 0, 1])
    sorted_ids = array_ops.where(in_bound, sorted_ids, beam_ids)
    time_ind = array_ops.tile(array_ops.reshape(array_ops.range(max_time), [-1, 1, 1]),
                              array_ops.stack([1, batch_size, beam_width]))
    batch_ind = array_ops.tile(array_ops.reshape(array_ops.range(batch_size), [1, -1, 1]),
                               array_ops.stack([max_time, 1, beam_width]))
    indices = array_ops.stack([time_ind, batch_ind, sorted_ids], -1)
    grouped = array_ops.reshape(t, array_ops.stack([max_time, batch_size, beam_width, -1]))
    ordered = array_ops.reshape(array_ops.gather_nd(grouped, indices), array_ops.shape(t))
    ordered.set_shape(t.get_shape())
    return ordered


class BeamSearchDecoder(decoder.Decoder):
    """Beam search over ``cell`` (whose state is for ``batch * beam_width`` rows): each step
    feeds the embeddings of the beams' last ids, scores every continuation and keeps the
    ``beam_width`` best of each example. ``dynamic_decode`` returns a
    ``FinalBeamSearchDecoderOutput`` whose ``predicted_ids`` ``[batch, time, beam]`` hold the
    beams best first, and a ``BeamSearchDecoderState``."""

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width,
                 output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
                 reorder_tensor_arrays=True):
        rnn_cell_impl._assert_like_rnncell("cell", cell)
        _check_output_layer(output_layer)
        self._cell = cell
        self._output_layer = output_layer
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32,
                                               name="start_tokens")
        if self._start_tokens.get_shape().ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if self._end_token.get_shape().ndims != 0:
            raise ValueError("end_token must be a scalar")
        static_batch = self._start_tokens.get_shape()[0].value
        self._batch_size = (static_batch if static_batch is not None
                            else array_ops.size(self._start_tokens))
        self._beam_width = beam_width
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._initial_cell_state = nest.map_structure(self._maybe_split_batch_beams,
                                                      initial_state, self._cell.state_size,
                                                      check_types=False)
        self._start_tokens = array_ops.tile(array_ops.expand_dims(self._start_tokens, 1),
                                            [1, beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = array_ops.one_hot(
            array_ops.zeros(array_ops.stack([self._batch_size]), dtypes.int32),
            depth=beam_width, on_value=False, off_value=True, dtype=dtypes.bool)

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def tracks_own_finished(self):
        return True

    @property
    def output_size(self):
        shape = TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=shape, predicted_ids=shape, parent_ids=shape)

    @property
    def output_dtype(self):
        dtype = nest.flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(scores=dtype, predicted_ids=dtypes.int32,
                                       parent_ids=dtypes.int32)

    def _split_batch_beams(self, t, s):
        s = s if isinstance(s, TensorShape) else TensorShape(s)
        reshaped = array_ops.reshape(t, array_ops.concat(
            [array_ops.stack([self._batch_size, self._beam_width]), array_ops.shape(t)[1:]], 0))
        expected = TensorShape([_static(self._batch_size), self._beam_width]).concatenate(s)
        if not reshaped.get_shape().is_compatible_with(expected):
            raise ValueError(
                "Unexpected behavior when reshaping between beam width and batch size.  The "
                "reshaped tensor has shape: %s.  We expected it to have shape (batch_size, "
                "beam_width, depth) == %s.  Perhaps you forgot to create a zero_state with "
                "batch_size=encoder_batch_size * beam_width?" % (reshaped.get_shape(), expected))
        reshaped.set_shape(expected)
        return reshaped

    def _merge_batch_beams(self, t, s):
        s = s if isinstance(s, TensorShape) else TensorShape(s)
        static = _static(self._batch_size)
        merged = array_ops.reshape(t, array_ops.concat(
            [array_ops.reshape(self._batch_size * self._beam_width, [1]),
             array_ops.shape(t)[2:]], 0))
        merged.set_shape(TensorShape([None if static is None else static * self._beam_width])
                         .concatenate(s))
        return merged

    def _maybe_split_batch_beams(self, t, s):
        if isinstance(t, TensorArray):
            return t
        t = convert_to_tensor(t)
        _check_maybe(t)
        return self._split_batch_beams(t, s) if t.get_shape().ndims >= 1 else t

    def _maybe_merge_batch_beams(self, t, s):
        if isinstance(t, TensorArray):
            return t
        _check_maybe(t)
        return self._merge_batch_beams(t, s) if t.get_shape().ndims >= 2 else t

    def initialize(self, name=None):
        """``(finished, start_inputs, initial_state)``: only beam 0 alive (log-prob 0)."""
        dtype = nest.flatten(self._initial_cell_state)[0].dtype
        log_probs = array_ops.one_hot(
            array_ops.zeros(array_ops.stack([self._batch_size]), dtypes.int32),
            depth=self._beam_width, on_value=convert_to_tensor(0.0, dtype=dtype),
            off_value=convert_to_tensor(-np.inf, dtype=dtype), dtype=dtype)
        attention_probs = get_attention_probs(self._initial_cell_state,
                                              self._coverage_penalty_weight)
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state, log_probs=log_probs, finished=self._finished,
            lengths=array_ops.zeros(array_ops.stack([self._batch_size, self._beam_width]),
                                    dtypes.int64),
            accumulated_attention_probs=() if attention_probs is None else attention_probs)
        return self._finished, self._start_inputs, state

    def step(self, time, inputs, state, name=None):
        """One beam-search step: ``(outputs, next_state, next_inputs, finished)``."""
        with get_default_graph().name_scope(name or "BeamSearchDecoderStep"):
            inputs = nest.map_structure(
                lambda x: self._merge_batch_beams(x, x.get_shape()[2:]), inputs)
            cell_state = nest.map_structure(self._maybe_merge_batch_beams, state.cell_state,
                                            self._cell.state_size, check_types=False)
            cell_outputs, next_cell_state = self._cell(inputs, cell_state)
            cell_outputs = nest.map_structure(
                lambda out: self._split_batch_beams(out, out.get_shape()[1:]), cell_outputs)
            next_cell_state = nest.map_structure(self._maybe_split_batch_beams, next_cell_state,
                                                 self._cell.state_size, check_types=False)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            output, beam_state = _beam_search_step(
                time, cell_outputs, next_cell_state, state, self._batch_size, self._beam_width,
                self._end_token, self._length_penalty_weight, self._coverage_penalty_weight)
            finished = beam_state.finished
            sample_ids = output.predicted_ids
            next_inputs = control_flow_ops.cond(math_ops.reduce_all(finished),
                                                lambda: self._start_inputs,
                                                lambda: self._embedding_fn(sample_ids))
        return output, beam_state, next_inputs, finished

    def finalize(self, outputs, final_state, sequence_lengths):
        """The beams followed back from their last step (``gather_tree``), as
        ``FinalBeamSearchDecoderOutput``."""
        max_lengths = math_ops.cast(math_ops.reduce_max(final_state.lengths, axis=1),
                                    dtypes.int32)
        predicted_ids = beam_search_ops.gather_tree(outputs.predicted_ids, outputs.parent_ids,
                                                    max_sequence_lengths=max_lengths,
                                                    end_token=self._end_token)
        if self._reorder_tensor_arrays:
            final_state = final_state._replace(cell_state=nest.map_structure(
                lambda t: self._maybe_sort_array_beams(t, outputs.parent_ids,
                                                       final_state.lengths),
                final_state.cell_state))
        return FinalBeamSearchDecoderOutput(beam_search_decoder_output=outputs,
                                            predicted_ids=predicted_ids), final_state

    def _maybe_sort_array_beams(self, t, parent_ids, sequence_length):
        """A TensorArray of the cell state (as an attention wrapper's alignment history),
        stacked and put in the final beams' order; other values, and arrays whose elements are
        not ``[batch * beam, ...]``, unchanged (TF1's)."""
        if not isinstance(t, TensorArray):
            return t
        shape = t.element_shape
        static = _static(self._batch_size)
        if shape.ndims is None or shape.ndims < 1 or (
                static is not None and shape[0].value not in (None, static * self._beam_width)):
            return t
        return gather_tree_from_array(t.stack(), parent_ids, sequence_length)


__all__ = ["BeamSearchDecoder", "BeamSearchDecoderOutput", "BeamSearchDecoderState",
           "FinalBeamSearchDecoderOutput", "tile_batch"]
