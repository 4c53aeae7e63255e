"""Attention (TF1's contrib ``seq2seq.attention_wrapper``): ``BahdanauAttention`` (additive,
optionally weight-normalized) and ``LuongAttention`` (multiplicative, optionally scaled) score a
query against a memory; ``AttentionWrapper`` is a cell that runs its cell on the inputs joined
with the last attention, attends with the cell's output and returns the attention.

The memory is masked to zeros past ``memory_sequence_length``, and so are the scores (to
``score_mask_value``, -inf by default) before ``probability_fn`` (softmax by default).

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     memory = tf.ones([2, 5, 4])
...     mechanism = tf.contrib.seq2seq.LuongAttention(4, memory, memory_sequence_length=[5, 2])
...     cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), mechanism,
...                                                attention_layer_size=3)
...     out, state = cell(tf.ones([2, 6]), cell.zero_state(2, tf.float32))
...     sess = tf.Session()
...     _ = sess.run(tf.global_variables_initializer())
...     print(out.shape, np.round(sess.run(state.alignments), 2))
(2, 3) [[0.2 0.2 0.2 0.2 0.2]
 [0.5 0.5 0.  0.  0. ]]
"""

import collections
import functools
import math

import numpy as np

from zps import nest
from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import (
    array_ops,
    clip_ops,
    functional_ops,
    init_ops,
    layers_impl,
    math_ops,
    nn_ops,
    random_ops,
    rnn_cell_impl,
    variable_scope,
)
from zps.ops.tensor_array_ops import TensorArray


def hardmax(logits, name=None):
    """One-hot of the argmax of ``logits`` on the last axis, in ``logits``' dtype."""
    with get_default_graph().name_scope(name or "Hardmax"):
        logits = convert_to_tensor(logits, name="logits")
        depth = logits.get_shape()[-1].value
        if depth is None:
            depth = array_ops.shape(logits)[-1]
        return array_ops.one_hot(math_ops.argmax(logits, -1), depth, dtype=logits.dtype)


def safe_cumprod(x, *args, **kwargs):
    """``tf.cumprod`` computed as the exp of a cumulative sum of logs (``x`` clipped to
    ``[tiny, 1]``), which does not underflow to zero over long products."""
    with get_default_graph().name_scope("SafeCumprod"):
        x = convert_to_tensor(x, name="x")
        tiny = np.finfo(x.dtype.as_numpy_dtype).tiny
        return math_ops.exp(math_ops.cumsum(math_ops.log(clip_ops.clip_by_value(x, tiny, 1)),
                                            *args, **kwargs))


def monotonic_attention(p_choose_i, previous_attention, mode):
    """The expected attention of a monotonic (left-to-right, one-stop) alignment that chooses
    memory entry ``i`` with probability ``p_choose_i`` ``[batch, max_time]``, starting from
    ``previous_attention``. ``mode``: ``"recursive"`` (a ``tf.scan``), ``"parallel"`` (cumprod
    and cumsum; may be inexact when some ``p_choose_i`` are near 1) or ``"hard"`` (0/1
    probabilities and a one-hot ``previous_attention``)."""
    p_choose_i = convert_to_tensor(p_choose_i, name="p_choose_i")
    previous_attention = convert_to_tensor(previous_attention, name="previous_attention")
    if mode == "recursive":
        batch_size = p_choose_i.get_shape()[0].value or array_ops.shape(p_choose_i)[0]
        shifted_1mp = array_ops.concat([array_ops.ones_like(p_choose_i[:, :1]),
                                        1 - p_choose_i[:, :-1]], 1)
        # q[i] = (1 - p_choose_i[i - 1]) * q[i - 1] + previous_attention[i]
        q = functional_ops.scan(
            lambda x, yz: array_ops.reshape(yz[0] * x + yz[1], array_ops.stack([batch_size])),
            [array_ops.transpose(shifted_1mp), array_ops.transpose(previous_attention)],
            array_ops.zeros_like(p_choose_i[:, 0]))
        return p_choose_i * array_ops.transpose(q)
    if mode == "parallel":
        cumprod_1mp = safe_cumprod(1 - p_choose_i, axis=1, exclusive=True)
        return p_choose_i * cumprod_1mp * math_ops.cumsum(
            previous_attention / clip_ops.clip_by_value(cumprod_1mp, 1e-10, 1.0), axis=1)
    if mode == "hard":
        # Drop the entries before the last chosen one, then keep the first chosen one.
        p_choose_i = p_choose_i * math_ops.cumsum(previous_attention, axis=1)
        return p_choose_i * math_ops.cumprod(1 - p_choose_i, axis=1, exclusive=True)
    raise ValueError("mode must be 'recursive', 'parallel', or 'hard'.")


def _monotonic_probability_fn(score, previous_alignments, sigmoid_noise, mode, seed=None):
    if sigmoid_noise > 0:
        score = score + sigmoid_noise * random_ops.random_normal(
            array_ops.shape(score), dtype=score.dtype, seed=seed)
    p_choose_i = (math_ops.cast(score > 0, score.dtype) if mode == "hard"
                  else math_ops.sigmoid(score))
    return monotonic_attention(p_choose_i, previous_alignments, mode)


class AttentionMechanism:
    """The base class ``AttentionWrapper`` accepts."""

    @property
    def alignments_size(self):
        raise NotImplementedError

    @property
    def state_size(self):
        raise NotImplementedError


def _prepare_memory(memory, memory_sequence_length):
    """The memory with the steps past each example's length zeroed."""
    memory = nest.map_structure(lambda m: convert_to_tensor(m, name="memory"), memory)
    if memory_sequence_length is None:
        return memory
    lengths = convert_to_tensor(memory_sequence_length, name="memory_sequence_length")

    def mask(m):
        rank = m.get_shape().ndims
        if rank is None or rank < 2:
            raise ValueError("memory must have a known rank of at least 2 ([batch, time, ...]), "
                             "got shape %s" % m.get_shape())
        keep = array_ops.sequence_mask(lengths, maxlen=array_ops.shape(m)[1], dtype=m.dtype)
        keep = array_ops.reshape(keep, array_ops.concat(
            [array_ops.shape(keep), array_ops.ones([rank - 2], dtypes.int32)], 0))
        return m * keep
    return nest.map_structure(mask, memory)


def _maybe_mask_score(score, memory_sequence_length, score_mask_value):
    if memory_sequence_length is None:
        return score
    keep = array_ops.sequence_mask(memory_sequence_length, maxlen=array_ops.shape(score)[1])
    return array_ops.where(keep, score, score_mask_value * array_ops.ones_like(score))


class _BaseAttentionMechanism(AttentionMechanism):
    """Keys (the memory through ``memory_layer``), values (the masked memory) and the masked
    ``probability_fn(score, state)`` shared by the mechanisms."""

    def __init__(self, query_layer, memory, probability_fn, memory_sequence_length=None,
                 memory_layer=None, score_mask_value=None, name=None):
        for what, layer in (("query_layer", query_layer), ("memory_layer", memory_layer)):
            if layer is not None and not isinstance(layer, layers_impl.Layer):
                raise TypeError("%s is not a Layer: %s" % (what, type(layer).__name__))
        self._query_layer = query_layer
        self._memory_layer = memory_layer
        self.dtype = memory_layer.dtype if memory_layer is not None else None
        if not callable(probability_fn):
            raise TypeError("probability_fn must be callable, saw type: %s"
                            % type(probability_fn).__name__)
        with get_default_graph().name_scope(name or "BaseAttentionMechanismInit"):
            self._values = _prepare_memory(memory, memory_sequence_length)
            if score_mask_value is None:
                score_mask_value = self._values.dtype.as_numpy_dtype(-np.inf)
            lengths = None if memory_sequence_length is None else convert_to_tensor(
                memory_sequence_length)
            self._probability_fn = lambda score, state: probability_fn(
                _maybe_mask_score(score, lengths, score_mask_value), state)
            self._keys = memory_layer(self._values) if memory_layer is not None else self._values
            self._batch_size = (self._keys.get_shape()[0].value
                                or array_ops.shape(self._keys)[0])
            self._alignments_size = (self._keys.get_shape()[1].value
                                     or array_ops.shape(self._keys)[1])
        if self.dtype is None:
            self.dtype = self._values.dtype

    @property
    def memory_layer(self):
        return self._memory_layer

    @property
    def query_layer(self):
        return self._query_layer

    @property
    def values(self):
        return self._values

    @property
    def keys(self):
        return self._keys

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def alignments_size(self):
        return self._alignments_size

    @property
    def state_size(self):
        return self._alignments_size

    def initial_alignments(self, batch_size, dtype):
        """Zeros ``[batch_size, max_time]``."""
        return rnn_cell_impl._zeros_for(self._alignments_size, batch_size, dtype)

    def initial_state(self, batch_size, dtype):
        """The mechanism's first state: ``initial_alignments``."""
        return self.initial_alignments(batch_size, dtype)

    def __call__(self, query, state):
        """``(alignments, next_state)`` for ``query`` (``[batch, num_units]`` for Luong's
        mechanisms): ``probability_fn`` of the masked scores, which are also the next state."""
        with variable_scope.variable_scope(None, self._scope_name, [query]):
            score = self._score(query)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


def _projection(num_units, name, dtype):
    """A bias-free ``Dense``: a mechanism's query or memory layer, a wrapper's attention layer."""
    return layers_impl.Dense(num_units, name=name, use_bias=False, dtype=dtype)


def _luong_score(query, keys, scale):
    depth = query.get_shape()[-1].value
    key_units = keys.get_shape()[-1].value
    if depth != key_units:
        raise ValueError(
            "Incompatible or unknown inner dimensions between query and keys.  Query (%s) has "
            "units: %s.  Keys (%s) have units: %s.  Perhaps you need to set num_units to the "
            "keys' dimension (%s)?" % (query, depth, keys, key_units, key_units))
    score = array_ops.squeeze(math_ops.matmul(array_ops.expand_dims(query, 1), keys,
                                              transpose_b=True), [1])
    if not scale:
        return score
    g = variable_scope.get_variable("attention_g", dtype=query.dtype, shape=(),
                                    initializer=init_ops.ones_initializer())
    return g * score


class LuongAttention(_BaseAttentionMechanism):
    """Multiplicative attention: ``score = g * query . (W memory)`` (``g``, a learned scalar
    ``attention_g``, only with ``scale``). The query must have ``num_units`` units."""

    _scope_name = "luong_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 probability_fn=None, score_mask_value=None, dtype=None, name="LuongAttention"):
        probability_fn = probability_fn or nn_ops.softmax
        super().__init__(
            query_layer=None, memory_layer=_projection(num_units, "memory_layer", dtype),
            memory=memory, probability_fn=lambda score, _: probability_fn(score),
            memory_sequence_length=memory_sequence_length, score_mask_value=score_mask_value,
            name=name)
        self._num_units = num_units
        self._scale = scale
        self._name = name

    def _score(self, query):
        return _luong_score(query, self._keys, self._scale)


def _bahdanau_score(processed_query, keys, normalize):
    dtype = processed_query.dtype
    num_units = keys.get_shape()[2].value or array_ops.shape(keys)[2]
    processed_query = array_ops.expand_dims(processed_query, 1)
    v = variable_scope.get_variable("attention_v", [num_units], dtype=dtype)
    if normalize:
        g = variable_scope.get_variable(
            "attention_g", dtype=dtype, shape=(),
            initializer=init_ops.constant_initializer(math.sqrt(1.0 / num_units)))
        b = variable_scope.get_variable("attention_b", [num_units], dtype=dtype,
                                        initializer=init_ops.zeros_initializer())
        normed_v = g * v * math_ops.rsqrt(math_ops.reduce_sum(math_ops.square(v)))
        return math_ops.reduce_sum(normed_v * math_ops.tanh(keys + processed_query + b), [2])
    return math_ops.reduce_sum(v * math_ops.tanh(keys + processed_query), [2])


class BahdanauAttention(_BaseAttentionMechanism):
    """Additive attention: ``score = v . tanh(W1 memory + W2 query)``; with ``normalize``,
    ``v`` is weight-normalized (``g * v / |v|``) and a bias ``b`` is added inside the tanh."""

    _scope_name = "bahdanau_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 name="BahdanauAttention"):
        probability_fn = probability_fn or nn_ops.softmax
        super().__init__(
            query_layer=_projection(num_units, "query_layer", dtype),
            memory_layer=_projection(num_units, "memory_layer", dtype),
            memory=memory, probability_fn=lambda score, _: probability_fn(score),
            memory_sequence_length=memory_sequence_length, score_mask_value=score_mask_value,
            name=name)
        self._num_units = num_units
        self._normalize = normalize
        self._name = name

    def _score(self, query):
        return _bahdanau_score(self._query_layer(query), self._keys, self._normalize)


class _BaseMonotonicAttentionMechanism(_BaseAttentionMechanism):
    """Monotonic mechanisms: scores plus a learned ``attention_score_bias`` (from
    ``score_bias_init``), turned into alignments by ``monotonic_attention`` (with optional
    pre-sigmoid noise); all attention starts on the first memory entry."""

    def __init__(self, query_layer, memory_layer, memory, memory_sequence_length,
                 score_mask_value, sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode,
                 name):
        super().__init__(
            query_layer=query_layer, memory_layer=memory_layer, memory=memory,
            probability_fn=functools.partial(_monotonic_probability_fn,
                                             sigmoid_noise=sigmoid_noise, mode=mode,
                                             seed=sigmoid_noise_seed),
            memory_sequence_length=memory_sequence_length, score_mask_value=score_mask_value,
            name=name)
        self._score_bias_init = score_bias_init

    def _biased(self, score):
        return score + variable_scope.get_variable(
            "attention_score_bias", dtype=score.dtype,
            initializer=convert_to_tensor(self._score_bias_init, score.dtype))

    def initial_alignments(self, batch_size, dtype):
        return array_ops.one_hot(array_ops.zeros(array_ops.stack([batch_size]), dtypes.int32),
                                 self._alignments_size, dtype=dtype)


class BahdanauMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Bahdanau scores plus a learned ``attention_score_bias``, turned into a monotonic
    alignment by ``monotonic_attention`` (with optional pre-sigmoid noise)."""

    _scope_name = "bahdanau_monotonic_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 score_mask_value=None, sigmoid_noise=0.0, sigmoid_noise_seed=None,
                 score_bias_init=0.0, mode="parallel", dtype=None,
                 name="BahdanauMonotonicAttention"):
        dtype = dtype or dtypes.float32
        super().__init__(_projection(num_units, "query_layer", dtype),
                         _projection(num_units, "memory_layer", dtype), memory,
                         memory_sequence_length, score_mask_value, sigmoid_noise,
                         sigmoid_noise_seed, score_bias_init, mode, name)
        self._num_units = num_units
        self._normalize = normalize

    def _score(self, query):
        return self._biased(_bahdanau_score(self._query_layer(query), self._keys,
                                            self._normalize))


class LuongMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Luong scores plus a learned ``attention_score_bias``, turned into a monotonic
    alignment by ``monotonic_attention`` (with optional pre-sigmoid noise)."""

    _scope_name = "luong_monotonic_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 score_mask_value=None, sigmoid_noise=0.0, sigmoid_noise_seed=None,
                 score_bias_init=0.0, mode="parallel", dtype=None,
                 name="LuongMonotonicAttention"):
        dtype = dtype or dtypes.float32
        super().__init__(None, _projection(num_units, "memory_layer", dtype), memory,
                         memory_sequence_length, score_mask_value, sigmoid_noise,
                         sigmoid_noise_seed, score_bias_init, mode, name)
        self._num_units = num_units
        self._scale = scale

    def _score(self, query):
        return self._biased(_luong_score(query, self._keys, self._scale))


class AttentionWrapperState(collections.namedtuple(
        "AttentionWrapperState", ("cell_state", "attention", "time", "alignments",
                                  "alignment_history", "attention_state"))):
    """The state of an ``AttentionWrapper``: the wrapped cell's state, the last attention
    ``[batch, attention_size]``, the step, the last alignments ``[batch, max_time]``, their
    history (a TensorArray, with ``alignment_history``, else ``()``) and the mechanisms'
    states. Several mechanisms give tuples."""

    __slots__ = ()

    def clone(self, **kwargs):
        """A copy with the given fields replaced, each new tensor given its old one's static
        shape (``state.clone(cell_state=encoder_state)``)."""
        def with_same_shape(old, new):
            if hasattr(old, "get_shape") and hasattr(new, "set_shape"):
                new.set_shape(old.get_shape())
            return new
        return nest.map_structure(with_same_shape, self, self._replace(**kwargs),
                                  check_types=False)


def _compute_attention(attention_mechanism, cell_output, attention_state, attention_layer):
    alignments, next_attention_state = attention_mechanism(cell_output, state=attention_state)
    context = array_ops.squeeze(math_ops.matmul(array_ops.expand_dims(alignments, 1),
                                                attention_mechanism.values), [1])
    attention = (attention_layer(array_ops.concat([cell_output, context], 1))
                 if attention_layer is not None else context)
    return attention, alignments, next_attention_state


class AttentionWrapper(rnn_cell_impl.RNNCell):
    """A cell with attention: at each step the cell reads ``cell_input_fn(inputs, attention)``
    (their concatenation), its output queries each mechanism, and the attention is the context
    (the alignment-weighted memory), or ``attention_layer(concat(output, context))`` with
    ``attention_layer_size``. It outputs the attention (``output_attention``) or the cell's
    output."""

    def __init__(self, cell, attention_mechanism, attention_layer_size=None,
                 alignment_history=False, cell_input_fn=None, output_attention=True,
                 initial_cell_state=None, name=None, attention_layer=None):
        super().__init__(name=name)
        rnn_cell_impl._assert_like_rnncell("cell", cell)
        if isinstance(attention_mechanism, list | tuple):
            self._is_multi = True
            mechanisms = tuple(attention_mechanism)
            for m in mechanisms:
                if not isinstance(m, AttentionMechanism):
                    raise TypeError("attention_mechanism must contain only instances of "
                                    "AttentionMechanism, saw type: %s" % type(m).__name__)
        else:
            self._is_multi = False
            if not isinstance(attention_mechanism, AttentionMechanism):
                raise TypeError("attention_mechanism must be an AttentionMechanism or list of "
                                "multiple AttentionMechanism instances, saw type: %s"
                                % type(attention_mechanism).__name__)
            mechanisms = (attention_mechanism,)
        if cell_input_fn is None:
            cell_input_fn = lambda inputs, attention: array_ops.concat(  # noqa: E731
                [inputs, attention], -1)
        elif not callable(cell_input_fn):
            raise TypeError("cell_input_fn must be callable, saw type: %s"
                            % type(cell_input_fn).__name__)
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be set")
        if attention_layer_size is not None:
            sizes = tuple(attention_layer_size if isinstance(attention_layer_size, list | tuple)
                          else (attention_layer_size,))
            if len(sizes) != len(mechanisms):
                raise ValueError("If provided, attention_layer_size must contain exactly one "
                                 "integer per attention_mechanism, saw: %d vs %d"
                                 % (len(sizes), len(mechanisms)))
            self._attention_layers = tuple(_projection(size, "attention_layer", m.dtype)
                                           for size, m in zip(sizes, mechanisms))
            self._attention_layer_size = sum(sizes)
        elif attention_layer is not None:
            layers = tuple(attention_layer if isinstance(attention_layer, list | tuple)
                           else (attention_layer,))
            if len(layers) != len(mechanisms):
                raise ValueError("If provided, attention_layer must contain exactly one layer "
                                 "per attention_mechanism, saw: %d vs %d"
                                 % (len(layers), len(mechanisms)))
            self._attention_layers = layers
            self._attention_layer_size = sum(
                layer.compute_output_shape(
                    [None, cell.output_size + m.values.get_shape()[-1].value])[-1].value
                for layer, m in zip(layers, mechanisms))
        else:
            self._attention_layers = None
            self._attention_layer_size = sum(m.values.get_shape()[-1].value
                                             for m in mechanisms)
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self._cell_input_fn = cell_input_fn
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = None if initial_cell_state is None else nest.map_structure(
            lambda s: array_ops.identity(s, name="check_initial_cell_state"), initial_cell_state)

    def _check_batch_size(self, batch_size, message):
        """Raise ValueError where a mechanism's memory has another static batch size."""
        batch = batch_size if isinstance(batch_size, int) else None
        for m in self._attention_mechanisms:
            if isinstance(m.batch_size, int) and batch is not None and m.batch_size != batch:
                raise ValueError(
                    "%s The memory has batch size %d, the state %d. Are you using the "
                    "BeamSearchDecoder? If so, make sure your encoder output has been tiled to "
                    "beam_width via tf.contrib.seq2seq.tile_batch, and the batch_size= argument "
                    "passed to zero_state is batch_size * beam_width." % (message, m.batch_size,
                                                                          batch))

    def _item_or_tuple(self, seq):
        t = tuple(seq)
        return t if self._is_multi else t[0]

    @property
    def output_size(self):
        return self._attention_layer_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size, time=TensorShape([]),
            attention=self._attention_layer_size,
            alignments=self._item_or_tuple(m.alignments_size for m in self._attention_mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else ()
                for m in self._attention_mechanisms))

    def zero_state(self, batch_size, dtype):
        """The first state: the cell's zero state (or ``initial_cell_state``), zero attention
        and alignments, time 0, empty alignment histories."""
        self._check_batch_size(batch_size, "When calling zero_state of AttentionWrapper %s: "
                               "Non-matching batch sizes between the memory (encoder output) "
                               "and the requested batch size." % self.name)
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            cell_state = (self._initial_cell_state if self._initial_cell_state is not None
                          else self._cell.zero_state(batch_size, dtype))
            cell_state = nest.map_structure(
                lambda s: array_ops.identity(s, name="checked_cell_state"), cell_state)
            alignments = [m.initial_alignments(batch_size, dtype)
                          for m in self._attention_mechanisms]
            return AttentionWrapperState(
                cell_state=cell_state, time=array_ops.zeros([], dtype=dtypes.int32),
                attention=rnn_cell_impl._zeros_for(self._attention_layer_size, batch_size,
                                                   dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(
                    m.initial_state(batch_size, dtype) for m in self._attention_mechanisms),
                alignment_history=self._item_or_tuple(
                    TensorArray(dtype, size=0, dynamic_size=True,
                                element_shape=a.get_shape()) if self._alignment_history
                    else () for a in alignments))

    def call(self, inputs, state):
        if not isinstance(state, AttentionWrapperState):
            raise TypeError("Expected state to be instance of AttentionWrapperState. Received "
                            "type %s instead." % type(state))
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        if self._is_multi:
            previous_states, previous_histories = state.attention_state, state.alignment_history
        else:
            previous_states, previous_histories = [state.attention_state], [
                state.alignment_history]
        attentions, all_alignments, next_states, histories = [], [], [], []
        for i, mechanism in enumerate(self._attention_mechanisms):
            attention, alignments, next_attention_state = _compute_attention(
                mechanism, cell_output, previous_states[i],
                self._attention_layers[i] if self._attention_layers else None)
            histories.append(previous_histories[i].write(state.time, alignments)
                             if self._alignment_history else ())
            attentions.append(attention)
            all_alignments.append(alignments)
            next_states.append(next_attention_state)
        attention = array_ops.concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1, cell_state=next_cell_state, attention=attention,
            attention_state=self._item_or_tuple(next_states),
            alignments=self._item_or_tuple(all_alignments),
            alignment_history=self._item_or_tuple(histories))
        return (attention if self._output_attention else cell_output), next_state


__all__ = ["AttentionMechanism", "AttentionWrapper", "AttentionWrapperState",
           "BahdanauAttention", "BahdanauMonotonicAttention", "LuongAttention",
           "LuongMonotonicAttention", "hardmax", "monotonic_attention", "safe_cumprod"]
