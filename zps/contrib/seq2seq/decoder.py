"""``Decoder`` (the interface ``dynamic_decode`` drives) and ``dynamic_decode``: a
``tf.while_loop`` that calls ``decoder.step`` until every example is finished, writing each
step's outputs to TensorArrays (TF1's contrib ``seq2seq.decoder``).

As ``dynamic_rnn`` does, ``dynamic_decode`` makes one step outside the loop first, whose ops never
run: a loop body cannot create variables, so the cell, the output layer and the attention layers
create theirs there, and the loop's steps reuse them (names as TF1's: ``decoder/...``).
"""

import abc

from zps import nest
from zps.framework import dtypes
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, control_flow_ops, math_ops, variable_scope
from zps.ops.rnn import _transpose_batch_time
from zps.ops.tensor_array_ops import TensorArray


class Decoder(abc.ABC):
    """An RNN decoder: ``initialize()`` gives ``(finished, first_inputs, initial_state)``;
    ``step(time, inputs, state)`` gives ``(outputs, next_state, next_inputs, finished)``;
    ``output_size``/``output_dtype`` describe ``outputs`` (without the batch dimension)."""

    @property
    @abc.abstractmethod
    def batch_size(self):
        """The batch size of the inputs returned by ``initialize``."""

    @property
    @abc.abstractmethod
    def output_size(self):
        """A (structure of) int or TensorShape: the shape of each step's outputs, less batch."""

    @property
    @abc.abstractmethod
    def output_dtype(self):
        """A (structure of) dtype, as ``output_size``."""

    @abc.abstractmethod
    def initialize(self, name=None):
        """``(finished, initial_inputs, initial_state)``."""

    @abc.abstractmethod
    def step(self, time, inputs, state, name=None):
        """``(outputs, next_state, next_inputs, finished)``."""

    def finalize(self, outputs, final_state, sequence_lengths):
        """Post-process the stacked outputs (a decoder without this step raises
        NotImplementedError, and ``dynamic_decode`` keeps the outputs as they are)."""
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        """Whether ``step``'s ``finished`` already includes the earlier finished flags (beam
        search reorders its beams, so ``dynamic_decode`` must not OR them in)."""
        return False


def _as_shape(size):
    return size if isinstance(size, TensorShape) else TensorShape(size)


def _batched(batch_size, size):
    """``[batch_size] + size`` for a TensorArray's element shape (None for a scalar size)."""
    size = _as_shape(size)
    if size.ndims == 0:
        return None
    static = batch_size if isinstance(batch_size, int) else constant_value(batch_size)
    return TensorShape([None if static is None else int(static)]).concatenate(size)


def _zero_outputs(size, dtype, batch_size):
    def zeros(s, d):
        dims = _as_shape(s).as_list()
        return array_ops.zeros(array_ops.stack([batch_size] + dims) if not isinstance(
            batch_size, int) else [batch_size] + dims, d)
    return nest.map_structure(zeros, size, dtype)


def _loosest(a, b):
    """The most specific shape both ``a`` and ``b`` have (a loop variable's shape invariant)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return unknown_shape()
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _invariants(initial, traced):
    def one(x, y):
        if isinstance(x, TensorArray):
            return TensorShape([])
        return _loosest(convert_to_tensor(x).get_shape(), convert_to_tensor(y).get_shape())
    return nest.map_structure(one, initial, traced, check_types=False)


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):
    """Run ``decoder`` until all examples are finished (or for ``maximum_iterations`` steps):
    ``(final_outputs, final_state, final_sequence_lengths)``.

    ``final_outputs`` is ``decoder.finalize``'s, else the step outputs stacked
    ``[batch, time, ...]`` (``[time, batch, ...]`` with ``output_time_major``). An example's
    sequence length is the step at which it finished, plus one. With ``impute_finished``, a
    finished example's outputs are zeros and its state is carried through unchanged. Variables
    are created under ``scope`` (default ``decoder``).

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicRNNCell(3)
    ...     helper = tf.contrib.seq2seq.TrainingHelper(tf.ones([2, 4, 5]), [4, 2])
    ...     decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32))
    ...     outputs, state, lengths = tf.contrib.seq2seq.dynamic_decode(decoder)
    ...     sess = tf.Session()
    ...     _ = sess.run(tf.global_variables_initializer())
    ...     out, n = sess.run([outputs.rnn_output, lengths])
    ...     print(out.shape, n, cell.variables[0].op.name)
    (2, 4, 3) [4 2] decoder/basic_rnn_cell/kernel
    """
    if not isinstance(decoder, Decoder):
        raise TypeError("Expected decoder to be type Decoder, but saw: %s" % type(decoder))
    with variable_scope.variable_scope(scope, "decoder"):
        if maximum_iterations is not None:
            maximum_iterations = convert_to_tensor(maximum_iterations, dtype=dtypes.int32,
                                                   name="maximum_iterations")
            if maximum_iterations.get_shape().ndims != 0:
                raise ValueError("maximum_iterations must be a scalar")
        initial_finished, initial_inputs, initial_state = decoder.initialize()
        zero_outputs = _zero_outputs(decoder.output_size, decoder.output_dtype,
                                     decoder.batch_size)
        if maximum_iterations is not None:
            initial_finished = math_ops.logical_or(initial_finished, 0 >= maximum_iterations)
        initial_sequence_lengths = array_ops.zeros_like(initial_finished, dtype=dtypes.int32)
        initial_time = convert_to_tensor(0, dtype=dtypes.int32)

        def body(time, outputs_ta, state, inputs, finished, sequence_lengths):
            next_outputs, decoder_state, next_inputs, decoder_finished = decoder.step(
                time, inputs, state)
            if decoder.tracks_own_finished:
                next_finished = decoder_finished
            else:
                next_finished = math_ops.logical_or(decoder_finished, finished)
            if maximum_iterations is not None:
                next_finished = math_ops.logical_or(next_finished,
                                                    time + 1 >= maximum_iterations)
            next_sequence_lengths = array_ops.where(
                math_ops.logical_not(finished),
                array_ops.fill(array_ops.shape(sequence_lengths), time + 1), sequence_lengths)
            nest.assert_same_structure(state, decoder_state)
            nest.assert_same_structure(inputs, next_inputs)
            if impute_finished:
                emit = nest.map_structure(lambda out, zero: array_ops.where(finished, zero, out),
                                          next_outputs, zero_outputs)
                next_state = nest.map_structure(
                    lambda new, cur: _copy_state(finished, new, cur), decoder_state, state)
            else:
                emit, next_state = next_outputs, decoder_state
            if outputs_ta is not None:   # None in the step made outside the loop
                nest.assert_same_structure(outputs_ta, next_outputs)
                outputs_ta = nest.map_structure(lambda ta, out: ta.write(time, out),
                                                outputs_ta, emit)
            return (time + 1, outputs_ta, next_state, next_inputs, next_finished,
                    next_sequence_lengths)

        # The step outside the loop that creates the variables (its ops never run); its
        # shapes say which dimensions of the loop variables may change between steps.
        traced = body(initial_time, None, initial_state, initial_inputs, initial_finished,
                      initial_sequence_lengths)
        variable_scope.get_variable_scope().reuse_variables()
        initial_outputs_ta = nest.map_structure(
            lambda s, d: TensorArray(dtype=d, size=0, dynamic_size=True,
                                     element_shape=_batched(decoder.batch_size, s)),
            decoder.output_size, decoder.output_dtype)
        loop_vars = (initial_time, initial_outputs_ta, initial_state, initial_inputs,
                     initial_finished, initial_sequence_lengths)
        traced = (traced[0], initial_outputs_ta) + traced[2:]
        result = control_flow_ops.while_loop(
            lambda time, outputs_ta, state, inputs, finished, lengths: math_ops.logical_not(
                math_ops.reduce_all(finished)),
            body, loop_vars, shape_invariants=_invariants(loop_vars, traced),
            parallel_iterations=parallel_iterations, maximum_iterations=maximum_iterations,
            swap_memory=swap_memory)
        final_outputs = nest.map_structure(lambda ta: ta.stack(), result[1])
        final_state, final_sequence_lengths = result[2], result[5]
        try:
            final_outputs, final_state = decoder.finalize(final_outputs, final_state,
                                                          final_sequence_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = nest.map_structure(_transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_sequence_lengths


def _copy_state(finished, new, cur):
    """``cur`` where finished, else ``new``; TensorArrays and scalars pass through (TF1's)."""
    if isinstance(cur, TensorArray):
        return new
    new.set_shape(cur.get_shape())
    return new if new.get_shape().ndims == 0 else array_ops.where(finished, cur, new)


__all__ = ["Decoder", "dynamic_decode"]
