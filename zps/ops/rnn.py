"""TF1's recurrent network drivers: ``dynamic_rnn`` (a ``tf.while_loop`` over time, so its
gradient is backpropagation through time), ``static_rnn`` (the cell called once per step of a
Python list), and their bidirectional forms. The cells are in zps/ops/rnn_cell_impl.py.

With ``sequence_length``, each example's outputs past its length are zeros and its state is
carried through unchanged, so the final state is the one after its last step, as TF1's.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 5, 3])          # [batch, time, depth]
...     cell = tf.nn.rnn_cell.GRUCell(4)
...     outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[5, 2], dtype=tf.float32)
...     sess = tf.Session()
...     _ = sess.run(tf.global_variables_initializer())
...     out, st = sess.run([outputs, state], {x: np.ones([2, 5, 3])})
...     print(out.shape, [v.op.name for v in tf.trainable_variables()][:2])
...     print(np.abs(out[1, 2:]).max(), np.allclose(st[1], out[1, 1]))
(2, 5, 4) ['rnn/gru_cell/gates/kernel', 'rnn/gru_cell/gates/bias']
0.0 True
"""

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, control_flow_ops, math_ops, rnn_cell_impl, variable_scope
from zps.ops.control_flow_ops import _flatten


def _transpose_batch_time(x):
    """``[batch, time, ...]`` <-> ``[time, batch, ...]``."""
    ndims = x.get_shape().ndims
    if ndims is not None and ndims < 2:
        raise ValueError("Expected input tensor %s to have rank at least 2, but saw shape: %s"
                         % (x.name, x.get_shape()))
    if ndims is None:
        raise ValueError("The rank of the RNN input %s must be known: give its placeholder a "
                         "shape" % x.name)
    return array_ops.transpose(x, [1, 0] + list(range(2, ndims)))


def _batch_size(flat_time_major):
    """The batch size of time-major inputs: an int when known statically, else a tensor."""
    for x in flat_time_major:
        if x.get_shape()[1].value is not None:
            return x.get_shape()[1].value
    return array_ops.shape(flat_time_major[0])[1]


def _sequence_length(sequence_length, batch):
    if sequence_length is None:
        return None
    lengths = math_ops.cast(convert_to_tensor(sequence_length), dtypes.int32)
    shape = lengths.get_shape()
    if shape.ndims not in (None, 1):
        raise ValueError("sequence_length must be a vector of length batch_size, but saw shape: "
                         "%s" % shape)
    if isinstance(batch, int) and shape.ndims == 1 and shape[0].value not in (None, batch):
        raise ValueError("Expected shape for Tensor sequence_length is [%d] (the batch size) but "
                         "saw shape: %s" % (batch, shape))
    return array_ops.identity(lengths, name="sequence_length")


def _initial_state(cell, initial_state, dtype, batch):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch, dtype)


def _masked(finished, zero_outputs, outputs, old_state, new_state):
    """TF1's _copy_some_through: finished examples (``time >= sequence_length``) output zeros
    and keep their state."""
    return ([array_ops.where(finished, z, o) for z, o in zip(zero_outputs, outputs)],
            [array_ops.where(finished, s, n) for s, n in zip(old_state, new_state)])


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Run ``cell`` over the time steps of ``inputs``: ``(outputs, final_state)``.

    ``inputs`` is ``[batch, time, depth]`` (``[time, batch, depth]`` with ``time_major``) or a
    (nested) tuple of such tensors; ``outputs`` has the same layout, ``[..., cell.output_size]``.
    The state starts at ``initial_state``, else at ``cell.zero_state`` of ``dtype``. The
    variables are under ``scope`` (default ``rnn``): ``rnn/basic_lstm_cell/kernel``...
    ``parallel_iterations`` and ``swap_memory`` are accepted (steps run in order).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicRNNCell(2)
    ...     out, state = tf.nn.dynamic_rnn(cell, tf.ones([3, 4, 5]), dtype=tf.float32)
    ...     print(out.shape, state.shape)
    (3, 4, 2) (3, 2)
    """
    rnn_cell_impl._assert_like_rnncell("cell", cell)
    with variable_scope.variable_scope(scope or "rnn"):
        flat, pack_input = _flatten(inputs)
        flat = [convert_to_tensor(x) for x in flat]
        if not time_major:
            flat = [_transpose_batch_time(x) for x in flat]
        for x in flat:
            if x.get_shape().ndims is None or x.get_shape()[2:].num_elements() is None:
                raise ValueError("Input size (depth of inputs) must be accessible via shape "
                                 "inference, but saw value None (input %s, shape %s)"
                                 % (x.name, x.get_shape()))
        batch = _batch_size(flat)
        lengths = _sequence_length(sequence_length, batch)
        state = _initial_state(cell, initial_state, dtype, batch)
        outputs, final_state = _dynamic_rnn_loop(cell, flat, pack_input, state, lengths, batch,
                                                 parallel_iterations, swap_memory)
        if not time_major:
            flat_out, pack_out = _flatten(outputs)
            outputs = pack_out([_transpose_batch_time(o) for o in flat_out])
        return outputs, final_state


def _dynamic_rnn_loop(cell, flat_input, pack_input, state, lengths, batch, parallel_iterations,
                      swap_memory):
    """Run the cell over time-major ``flat_input`` in a ``tf.while_loop``: (outputs, state)."""
    steps = array_ops.shape(flat_input[0])[0]
    step_shapes = [x.get_shape()[1:] for x in flat_input]
    flat_state, pack_state = _flatten(state)
    flat_state = [convert_to_tensor(s) for s in flat_state]
    n_state = len(flat_state)

    def step(time, old_state):
        inputs = []
        for x, shape in zip(flat_input, step_shapes):
            x_t = array_ops.gather(x, time)
            x_t.set_shape(shape)
            inputs.append(x_t)
        output, new_state = cell(pack_input(inputs), pack_state(old_state))
        outputs, pack_output = _flatten(output)
        outputs = [convert_to_tensor(o) for o in outputs]
        new_state = [convert_to_tensor(s) for s in _flatten(new_state)[0]]
        if len(new_state) != n_state:
            raise ValueError("The cell returned a state of %d tensors for a state of %d"
                             % (len(new_state), n_state))
        if lengths is not None:
            finished = math_ops.greater_equal(time, lengths)
            outputs, new_state = _masked(finished, [array_ops.zeros_like(o) for o in outputs],
                                         outputs, old_state, new_state)
        return outputs, new_state, pack_output

    # A loop body cannot create variables, and a cell creates its variables on its first call
    # (in build(), or with tf.get_variable in call() as old TF1 cells do). So the first call is
    # made here, outside the loop, and only its static shapes are used: nothing reads its ops,
    # so they never run. The loop's calls reuse the variables, as static_rnn's later steps do.
    traced_outputs, traced_state, pack_output = step(0, flat_state)
    variable_scope.get_variable_scope().reuse_variables()
    for o in traced_outputs:
        if not o.get_shape()[1:].is_fully_defined():
            raise ValueError("dynamic_rnn: the cell's output %s has shape %s; its size (all but "
                             "the batch dimension) must be known statically"
                             % (o.name, o.get_shape()))
    # Outputs are accumulated along a time axis by concatenation, one step at a time.
    accumulators = [array_ops.zeros(array_ops.stack([0, batch] + o.get_shape()[1:].as_list()),
                                    o.dtype) for o in traced_outputs]

    def body(time, *loop_vars):
        outputs, new_state, _ = step(time, list(loop_vars[:n_state]))
        return [time + 1] + new_state + [array_ops.concat([a, array_ops.expand_dims(o, 0)], 0)
                                         for a, o in zip(loop_vars[n_state:], outputs)]

    def free(shape):   # the batch dimension may be known only after the first step
        return TensorShape([None] + shape.as_list()[1:]) if shape.ndims else shape
    invariants = ([TensorShape([])] + [free(s.get_shape()) for s in traced_state]
                  + [TensorShape([None, None]).concatenate(o.get_shape()[1:])
                     for o in traced_outputs])
    result = control_flow_ops.while_loop(
        lambda time, *_: time < steps, body, [0] + flat_state + accumulators,
        shape_invariants=invariants, parallel_iterations=parallel_iterations or 32,
        swap_memory=swap_memory, name="while", return_same_structure=True)
    final_state, outputs = result[1:1 + n_state], result[1 + n_state:]
    for s, traced in zip(final_state, traced_state):
        s.set_shape(traced.get_shape())
    steps_static = flat_input[0].get_shape()[0].value
    for o, traced in zip(outputs, traced_outputs):
        o.set_shape(TensorShape([steps_static]).concatenate(traced.get_shape()))
    return pack_output(list(outputs)), pack_state(list(final_state))


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Run ``cell`` over a Python list of ``[batch, depth]`` inputs, one call per step:
    ``(list of outputs, final_state)``. Variables are under ``scope`` (default ``rnn``).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     cell = tf.nn.rnn_cell.BasicLSTMCell(2)
    ...     outs, state = tf.nn.static_rnn(cell, [tf.ones([3, 5])] * 4, dtype=tf.float32)
    ...     print(len(outs), outs[-1].shape, state.c.shape)
    4 (3, 2) (3, 2)
    """
    rnn_cell_impl._assert_like_rnncell("cell", cell)
    if not isinstance(inputs, list | tuple):
        raise TypeError("inputs must be a sequence (a list of [batch, depth] tensors, one per "
                        "step), got %r" % (inputs,))
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope.variable_scope(scope or "rnn"):
        first = [convert_to_tensor(x) for x in _flatten(inputs[0])[0]]
        for x in first:
            if x.get_shape().ndims is not None and x.get_shape().ndims < 1:
                raise ValueError("Expected inputs of rank >= 1, got %s for %s"
                                 % (x.get_shape(), x.name))
        static = next((x.get_shape()[0].value for x in first
                       if x.get_shape().ndims and x.get_shape()[0].value is not None), None)
        batch = static if static is not None else array_ops.shape(first[0])[0]
        lengths = _sequence_length(sequence_length, batch)
        state = _initial_state(cell, initial_state, dtype, batch)
        pack_state = _flatten(state)[1]
        outputs = []
        for time, x in enumerate(inputs):
            if time == 1:   # as TF1: later steps reuse the variables the first one made
                variable_scope.get_variable_scope().reuse_variables()
            output, new_state = cell(x, state)
            if lengths is not None:
                finished = math_ops.greater_equal(time, lengths)
                flat_out, pack_out = _flatten(output)
                flat_out, new_flat = _masked(finished, [array_ops.zeros_like(o) for o in flat_out],
                                             flat_out, _flatten(state)[0], _flatten(new_state)[0])
                output, new_state = pack_out(flat_out), pack_state(new_flat)
            outputs.append(output)
            state = new_state
        return outputs, state


def _reverse_sequence(x, lengths, time_axis):
    """``x`` with its first ``lengths[b]`` steps reversed for each example ``b`` (TF1's
    ``reverse_sequence`` with the batch on the other of axes 0 and 1); all steps without
    ``lengths``."""
    if lengths is None:
        return array_ops.reverse(x, [time_axis])
    shape = array_ops.shape(x)
    steps, batch = shape[time_axis], shape[1 - time_axis]
    t = array_ops.expand_dims(array_ops.range(steps), 1) + array_ops.zeros_like(
        array_ops.expand_dims(lengths, 0))                     # [time, batch]
    n = array_ops.expand_dims(lengths, 0) + array_ops.zeros_like(t)
    b = array_ops.expand_dims(array_ops.range(batch), 0) + array_ops.zeros_like(t)
    source = array_ops.where(math_ops.less(t, n), n - 1 - t, t)
    index = array_ops.stack([source, b] if time_axis == 0 else [b, source], axis=2)
    if time_axis == 1:
        index = array_ops.transpose(index, [1, 0, 2])
    out = array_ops.gather_nd(x, index)
    out.set_shape(x.get_shape())
    return out


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """``dynamic_rnn`` forward with ``cell_fw`` and over the reversed sequences (each reversed
    within its ``sequence_length``) with ``cell_bw``: ``((output_fw, output_bw), (state_fw,
    state_bw))``, ``output_bw`` reversed back to the inputs' order. Variables are under
    ``bidirectional_rnn/fw/`` and ``bidirectional_rnn/bw/``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     fw, bw = tf.nn.rnn_cell.GRUCell(2), tf.nn.rnn_cell.GRUCell(3)
    ...     (o_fw, o_bw), _ = tf.nn.bidirectional_dynamic_rnn(fw, bw, tf.ones([4, 5, 6]),
    ...                                                       dtype=tf.float32)
    ...     print(o_fw.shape, o_bw.shape, fw.variables[0].op.name)
    (4, 5, 2) (4, 5, 3) bidirectional_rnn/fw/gru_cell/gates/kernel
    """
    rnn_cell_impl._assert_like_rnncell("cell_fw", cell_fw)
    rnn_cell_impl._assert_like_rnncell("cell_bw", cell_bw)
    time_axis = 0 if time_major else 1
    with variable_scope.variable_scope(scope or "bidirectional_rnn"):
        with variable_scope.variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length, initial_state=initial_state_fw,
                dtype=dtype, parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        with variable_scope.variable_scope("bw") as bw_scope:
            lengths = None if sequence_length is None else math_ops.cast(
                convert_to_tensor(sequence_length), dtypes.int32)

            def reverse(value):
                flat, pack = _flatten(value)
                return pack([_reverse_sequence(convert_to_tensor(x), lengths, time_axis)
                             for x in flat])
            with get_default_graph().name_scope("ReverseSequence"):
                inputs_reversed = reverse(inputs)
            reversed_out, state_bw = dynamic_rnn(
                cell_bw, inputs_reversed, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
    with get_default_graph().name_scope("ReverseSequence"):
        output_bw = reverse(reversed_out)
    return (output_fw, output_bw), (state_fw, state_bw)


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """``static_rnn`` forward with ``cell_fw`` and backward with ``cell_bw`` (each sequence
    reversed within its length): ``(outputs, state_fw, state_bw)``, each output the forward
    and backward outputs of its step concatenated on the last axis."""
    rnn_cell_impl._assert_like_rnncell("cell_fw", cell_fw)
    rnn_cell_impl._assert_like_rnncell("cell_bw", cell_bw)
    if not isinstance(inputs, list | tuple) or not inputs:
        raise TypeError("inputs must be a non-empty list of [batch, depth] tensors, got %r"
                        % (inputs,))
    with variable_scope.variable_scope(scope or "bidirectional_rnn"):
        with variable_scope.variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with variable_scope.variable_scope("bw") as bw_scope:
            lengths = None if sequence_length is None else math_ops.cast(
                convert_to_tensor(sequence_length), dtypes.int32)
            reversed_in = _reverse_steps(inputs, lengths)
            reversed_out, state_bw = static_rnn(cell_bw, reversed_in, initial_state_bw, dtype,
                                                sequence_length, scope=bw_scope)
    output_bw = _reverse_steps(reversed_out, lengths)
    outputs = []
    for fw, bw in zip(output_fw, output_bw):
        flat_fw, pack = _flatten(fw)
        outputs.append(pack([array_ops.concat([a, b], 1)
                             for a, b in zip(flat_fw, _flatten(bw)[0])]))
    return outputs, state_fw, state_bw


def _reverse_steps(steps, lengths):
    """A list of per-step (structures of) tensors, reversed within each example's length."""
    if lengths is None:
        return list(reversed(steps))
    flats = [_flatten(s) for s in steps]
    pack = flats[0][1]
    columns = []
    for k in range(len(flats[0][0])):
        stacked = array_ops.stack([convert_to_tensor(f[k]) for f, _ in flats])
        columns.append(array_ops.unstack(_reverse_sequence(stacked, lengths, 0)))
    return [pack([c[t] for c in columns]) for t in range(len(steps))]


__all__ = ["dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn"]
