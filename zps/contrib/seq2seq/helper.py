"""The helpers of ``BasicDecoder`` (TF1's contrib ``seq2seq.helper``): how a step's outputs
become sample ids, and what the next step reads. ``TrainingHelper`` feeds the ground truth
(teacher forcing); ``GreedyEmbeddingHelper`` feeds back the embedding of the argmax;
``SampleEmbeddingHelper`` of a sample; ``ScheduledEmbeddingTrainingHelper`` and
``ScheduledOutputTrainingHelper`` mix ground truth and samples (scheduled sampling);
``InferenceHelper`` and ``CustomHelper`` take functions."""

import abc

from zps import nest
from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, control_flow_ops, embedding_ops, math_ops, random_more, random_ops
from zps.ops.rnn import _transpose_batch_time


class Helper(abc.ABC):
    """The interface: ``initialize() -> (finished, first_inputs)``, ``sample(time, outputs,
    state) -> sample_ids``, ``next_inputs(time, outputs, state, sample_ids) -> (finished,
    next_inputs, next_state)``."""

    @property
    @abc.abstractmethod
    def batch_size(self):
        """The batch size (an int or a scalar tensor)."""

    @property
    @abc.abstractmethod
    def sample_ids_shape(self):
        """The shape of one example's sample ids (a TensorShape)."""

    @property
    @abc.abstractmethod
    def sample_ids_dtype(self):
        """The dtype of the sample ids."""

    @abc.abstractmethod
    def initialize(self, name=None):
        """``(initial_finished, initial_inputs)``."""

    @abc.abstractmethod
    def sample(self, time, outputs, state, name=None):
        """The sample ids of a step's outputs."""

    @abc.abstractmethod
    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        """``(finished, next_inputs, next_state)``."""


def _static_size(vector):
    """The length of a vector: an int when its shape says it, else a scalar tensor."""
    n = vector.get_shape()[0].value if vector.get_shape().ndims == 1 else None
    return n if n is not None else array_ops.size(vector)


def _argmax_ids(outputs):
    """The int32 argmax of ``outputs`` on the last axis: a greedy step's sample ids."""
    return math_ops.cast(math_ops.argmax(outputs, axis=-1), dtypes.int32)


class _ScalarIdsHelper(Helper):
    """A helper whose sample id is one int32 per example; the batch size is ``_batch_size``."""

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def sample_ids_shape(self):
        return TensorShape([])

    @property
    def sample_ids_dtype(self):
        return dtypes.int32


def _embedding_fn(embedding):
    if callable(embedding):
        return embedding
    params = convert_to_tensor(embedding, name="embedding")
    return lambda ids: embedding_ops.embedding_lookup(params, ids)


class CustomHelper(Helper):
    """A helper from three functions: ``initialize_fn() -> (finished, next_inputs)``,
    ``sample_fn(time, outputs, state) -> sample_ids`` and ``next_inputs_fn(time, outputs,
    state, sample_ids) -> (finished, next_inputs, next_state)``."""

    def __init__(self, initialize_fn, sample_fn, next_inputs_fn, sample_ids_shape=None,
                 sample_ids_dtype=None):
        self._initialize_fn = initialize_fn
        self._sample_fn = sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = None
        self._sample_ids_shape = TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or dtypes.int32

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    @property
    def sample_ids_shape(self):
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self):
        return self._sample_ids_dtype

    def initialize(self, name=None):
        finished, next_inputs = self._initialize_fn()
        if self._batch_size is None:
            self._batch_size = _static_size(convert_to_tensor(finished))
        return finished, next_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        return self._next_inputs_fn(time=time, outputs=outputs, state=state,
                                    sample_ids=sample_ids)


class TrainingHelper(_ScalarIdsHelper):
    """Teacher forcing: step ``t`` reads ``inputs[:, t]`` (``[batch, time, ...]``, or
    ``[time, batch, ...]`` with ``time_major``); an example is finished after
    ``sequence_length`` steps. Sample ids are the argmax of the outputs."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        with get_default_graph().name_scope(name or "TrainingHelper"):
            inputs = nest.map_structure(lambda x: convert_to_tensor(x, name="inputs"), inputs)
            self._inputs = inputs
            if not time_major:
                inputs = nest.map_structure(_transpose_batch_time, inputs)
            self._time_major_inputs = inputs
            self._sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
            if self._sequence_length.get_shape().ndims != 1:
                raise ValueError("Expected sequence_length to be a vector, but received shape: "
                                 "%s" % self._sequence_length.get_shape())
            self._zero_inputs = nest.map_structure(lambda x: array_ops.zeros_like(x[0]), inputs)
            self._batch_size = _static_size(self._sequence_length)

    @property
    def inputs(self):
        return self._inputs

    @property
    def sequence_length(self):
        return self._sequence_length

    def _read(self, time, finished):
        """The inputs of step ``time``; zeros once every example is finished (TF1's, which
        also keeps the read inside the inputs' time range)."""
        def read(x):
            x_t = array_ops.gather(x, time)
            x_t.set_shape(x.get_shape()[1:])
            return x_t
        return control_flow_ops.cond(
            math_ops.reduce_all(finished), lambda: self._zero_inputs,
            lambda: nest.map_structure(read, self._time_major_inputs))

    def initialize(self, name=None):
        with get_default_graph().name_scope(name or "TrainingHelperInitialize"):
            finished = math_ops.equal(0, self._sequence_length)
            return finished, self._read(0, finished)

    def sample(self, time, outputs, name=None, **unused_kwargs):
        with get_default_graph().name_scope(name or "TrainingHelperSample"):
            return _argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, name=None, **unused_kwargs):
        with get_default_graph().name_scope(name or "TrainingHelperNextInputs"):
            next_time = time + 1
            finished = next_time >= self._sequence_length
            return finished, self._read(next_time, finished), state


def _sampling_probability(value):
    p = convert_to_tensor(value, name="sampling_probability")
    if p.get_shape().ndims not in (0, 1):
        raise ValueError("sampling_probability must be either a scalar or a vector. saw shape: "
                         "%s" % p.get_shape())
    return p


def _coin(batch_size, probability, seed):
    """True with ``probability`` for each of ``batch_size`` examples."""
    shape = array_ops.stack([batch_size]) if not isinstance(batch_size, int) else [batch_size]
    return math_ops.less(random_ops.random_uniform(shape, seed=seed), probability)


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """Scheduled sampling: each example's next input is, with probability
    ``sampling_probability``, the embedding of an id sampled from the outputs' logits instead
    of the ground truth. Sample ids are -1 where the ground truth is read."""

    def __init__(self, inputs, sequence_length, embedding, sampling_probability,
                 time_major=False, seed=None, scheduling_seed=None, name=None):
        self._embedding_fn = _embedding_fn(embedding)
        self._sampling_probability = _sampling_probability(sampling_probability)
        self._seed = seed
        self._scheduling_seed = scheduling_seed
        super().__init__(inputs, sequence_length, time_major=time_major,
                         name=name or "ScheduledEmbeddingSamplingWrapper")

    def sample(self, time, outputs, state, name=None):
        with get_default_graph().name_scope(name or "ScheduledEmbeddingTrainingHelperSample"):
            select = _coin(self.batch_size, self._sampling_probability, self._scheduling_seed)
            sampled = math_ops.cast(array_ops.squeeze(random_more.categorical(
                outputs, 1, seed=self._seed), [1]), dtypes.int32)
            return array_ops.where(select, sampled, -array_ops.ones_like(sampled))

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with get_default_graph().name_scope(name or "ScheduledEmbeddingTrainingHelperNext"):
            finished, base_next_inputs, state = super().next_inputs(time, outputs, state)
            next_inputs = control_flow_ops.cond(
                math_ops.reduce_all(finished), lambda: base_next_inputs,
                lambda: array_ops.where(math_ops.greater(sample_ids, -1),
                                        self._embedding_fn(math_ops.maximum(sample_ids, 0)),
                                        base_next_inputs))
            return finished, next_inputs, state


class ScheduledOutputTrainingHelper(TrainingHelper):
    """Scheduled sampling on outputs: each example's next input is, with probability
    ``sampling_probability``, its output (through ``next_inputs_fn``, joined with the
    ``auxiliary_inputs`` of the next step) instead of the ground truth. Sample ids are 1 where
    the output is fed back, else 0. ``next_inputs_fn`` is applied to the whole batch's outputs
    and its rows selected (TF1 gathers the rows first: the same for row-wise functions)."""

    def __init__(self, inputs, sequence_length, sampling_probability, time_major=False,
                 seed=None, next_inputs_fn=None, auxiliary_inputs=None, name=None):
        self._sampling_probability = _sampling_probability(sampling_probability)
        self._seed = seed
        self._next_inputs_fn = next_inputs_fn
        self._auxiliary = None
        if auxiliary_inputs is not None:
            inputs = convert_to_tensor(inputs, name="inputs")
            auxiliary_inputs = convert_to_tensor(auxiliary_inputs, name="auxiliary_inputs")
            self._auxiliary = (auxiliary_inputs if time_major
                               else _transpose_batch_time(auxiliary_inputs))
            inputs = array_ops.concat([inputs, auxiliary_inputs], -1)
        super().__init__(inputs, sequence_length, time_major=time_major,
                         name=name or "ScheduledOutputTrainingHelper")

    def sample(self, time, outputs, state, name=None):
        with get_default_graph().name_scope(name or "ScheduledOutputTrainingHelperSample"):
            return math_ops.cast(_coin(self.batch_size, self._sampling_probability, self._seed),
                                 dtypes.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with get_default_graph().name_scope(name or "ScheduledOutputTrainingHelperNext"):
            finished, base_next_inputs, state = super().next_inputs(time, outputs, state)
            chosen = math_ops.cast(sample_ids, dtypes.bool)

            def maybe_sample():
                fed = outputs if self._next_inputs_fn is None else self._next_inputs_fn(outputs)
                if self._auxiliary is not None:
                    fed = array_ops.concat([fed, array_ops.gather(self._auxiliary, time + 1)], -1)
                return array_ops.where(chosen, fed, base_next_inputs)
            skip = math_ops.logical_or(math_ops.reduce_all(finished),
                                       math_ops.logical_not(math_ops.reduce_any(chosen)))
            next_inputs = control_flow_ops.cond(skip, lambda: base_next_inputs, maybe_sample)
            return finished, next_inputs, state


class InferenceHelper(Helper):
    """Inference without embeddings: ``sample_fn(outputs)`` gives the sample ids,
    ``end_fn(sample_ids)`` the finished flags, and the next inputs are the sample ids (or
    ``next_inputs_fn(sample_ids)``); decoding starts from ``start_inputs``."""

    def __init__(self, sample_fn, sample_shape, sample_dtype, start_inputs, end_fn,
                 next_inputs_fn=None):
        self._sample_fn = sample_fn
        self._end_fn = end_fn
        self._sample_shape = TensorShape(sample_shape)
        self._sample_dtype = sample_dtype
        self._next_inputs_fn = next_inputs_fn
        self._start_inputs = convert_to_tensor(start_inputs, name="start_inputs")
        static = self._start_inputs.get_shape()[0].value
        self._batch_size = static if static is not None else array_ops.shape(
            self._start_inputs)[0]

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def sample_ids_shape(self):
        return self._sample_shape

    @property
    def sample_ids_dtype(self):
        return self._sample_dtype

    def initialize(self, name=None):
        shape = [self._batch_size] if isinstance(self._batch_size, int) else array_ops.stack(
            [self._batch_size])
        return array_ops.zeros(shape, dtypes.bool), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        next_inputs = (sample_ids if self._next_inputs_fn is None
                       else self._next_inputs_fn(sample_ids))
        return self._end_fn(sample_ids), next_inputs, state


class GreedyEmbeddingHelper(_ScalarIdsHelper):
    """Inference: the next input is the embedding of the argmax of the outputs; an example is
    finished when it emits ``end_token``. ``embedding`` is the embedding matrix or a function
    of the ids."""

    def __init__(self, embedding, start_tokens, end_token):
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32,
                                               name="start_tokens")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if self._start_tokens.get_shape().ndims != 1:
            raise ValueError("start_tokens must be a vector")
        if self._end_token.get_shape().ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = _static_size(self._start_tokens)
        self._start_inputs = self._embedding_fn(self._start_tokens)

    def initialize(self, name=None):
        finished = array_ops.zeros_like(self._start_tokens, dtype=dtypes.bool)
        return finished, self._start_inputs

    def sample(self, time, outputs, state, name=None):
        if isinstance(outputs, list | tuple):
            raise TypeError("Expected outputs to be a single Tensor, got: %s" % type(outputs))
        return _argmax_ids(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = math_ops.equal(sample_ids, self._end_token)
        next_inputs = control_flow_ops.cond(math_ops.reduce_all(finished),
                                            lambda: self._start_inputs,
                                            lambda: self._embedding_fn(sample_ids))
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As ``GreedyEmbeddingHelper``, but the ids are sampled from the softmax of the outputs
    (divided by ``softmax_temperature``)."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None, seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time, outputs, state, name=None):
        if isinstance(outputs, list | tuple):
            raise TypeError("Expected outputs to be a single Tensor, got: %s" % type(outputs))
        logits = outputs if self._softmax_temperature is None else (
            outputs / self._softmax_temperature)
        ids = random_more.categorical(logits, 1, seed=self._seed)
        return math_ops.cast(array_ops.squeeze(ids, [1]), dtypes.int32)


__all__ = ["CustomHelper", "GreedyEmbeddingHelper", "Helper", "InferenceHelper",
           "SampleEmbeddingHelper", "ScheduledEmbeddingTrainingHelper",
           "ScheduledOutputTrainingHelper", "TrainingHelper"]
