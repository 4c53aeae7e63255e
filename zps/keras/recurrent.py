"""``tf.keras``' recurrent layers as TF 1.15 graph-mode programs get them (the v1 layers of
``tensorflow/python/keras/layers/recurrent.py``): the cells ``SimpleRNNCell``, ``LSTMCell``,
``GRUCell`` and ``StackedRNNCells``, the generic ``RNN(cell)`` layer, and ``SimpleRNN``,
``LSTM`` and ``GRU``.

Weights are Keras's, so ``get_weights``/``set_weights`` values move between zps and Keras:
``kernel`` [input_dim, gates * units], ``recurrent_kernel`` [units, gates * units] and ``bias``,
the gates in Keras's order (LSTM: i, f, c, o; GRU: z, r, h), in the cell's scope inside the
layer's (``lstm/lstm_cell/kernel:0``...). TF 1.15's defaults: ``recurrent_activation="hard_sigmoid"``, LSTM's
``unit_forget_bias=True``, GRU's ``reset_after=False``.

The time loop is Keras's ``backend.rnn`` as a ``tf.while_loop``: with a mask (from
``Masking``, ``Embedding(mask_zero=True)`` or ``mask=``), a masked step keeps the state and
repeats the previous output (zeros before the first unmasked step). ``dropout`` and
``recurrent_dropout`` drop the same units at every step, in training only (``training=`` or
the learning phase).

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     x = tf.keras.Input((5, 3))
...     lstm = tf.keras.layers.LSTM(4, return_sequences=True, return_state=True)
...     seq, h, c = lstm(x)
...     print(seq.shape, h.shape, [w.name for w in lstm.weights])
(?, 5, 4) (?, 4) ['lstm/lstm_cell/kernel:0', 'lstm/lstm_cell/recurrent_kernel:0', 'lstm/lstm_cell/bias:0']
"""

import copy
import inspect

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor
from zps.framework.tensor_shape import TensorShape, as_shape
from zps.keras import activations
from zps.keras.engine import Layer, _training, converted
from zps.ops import array_ops, control_flow_ops, layers_impl, math_ops, nn_ops

_CELL_ARGS = ("kernel_initializer", "recurrent_initializer", "bias_initializer",
              "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
              "kernel_constraint", "recurrent_constraint", "bias_constraint")


class _GatedCell(Layer):
    """What the Keras cells share: ``units``, activations, initializers, regularizers,
    constraints and dropout; ``_gates`` blocks of ``units`` columns in each kernel."""

    _gates = 1
    _config_keys = ("units", "activation", "use_bias") + _CELL_ARGS + ("dropout",
                                                                      "recurrent_dropout")

    def __init__(self, units, activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, implementation=1, **kwargs):
        super().__init__(**kwargs)
        if units is None or int(units) <= 0:
            raise ValueError("%s: units must be a positive integer, got %r"
                             % (type(self).__name__, units))
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.implementation = use_bias, implementation
        args = locals()
        for key in _CELL_ARGS:
            setattr(self, key, converted(key, args[key]))
        self.dropout = min(1.0, max(0.0, dropout))
        self.recurrent_dropout = min(1.0, max(0.0, recurrent_dropout))
        self._dropout_masks = None   # set by RNN for a whole sequence: the same units each step

    @property
    def state_size(self):
        """The size of each state tensor (a list for several states)."""
        return self.units

    @property
    def output_size(self):
        """The size of each step's output."""
        return self.units

    def _weight(self, name, shape, kind, initializer=None):
        return self.add_weight(name, shape, initializer=initializer or getattr(
            self, kind + "_initializer"), regularizer=getattr(self, kind + "_regularizer"),
            constraint=getattr(self, kind + "_constraint"))

    def build(self, input_shape):
        width = self._gates * self.units
        self.kernel = self._weight("kernel", [as_shape(input_shape)[-1].value, width], "kernel")
        self.recurrent_kernel = self._weight("recurrent_kernel", [self.units, width],
                                             "recurrent")
        self.bias = self._build_bias() if self.use_bias else None
        self.built = True

    def _build_bias(self):
        return self._weight("bias", [self._gates * self.units], "bias")

    def make_dropout_masks(self, inputs, state, training=None):
        """The dropout masks of one sequence (one per gate, for the inputs and for the
        recurrent state), or None where there is no dropout."""
        training = _training(training)

        def masks(x, rate):
            if not 0 < rate < 1:
                return None
            ones = array_ops.ones_like(x)
            return [layers_impl._dropped(ones, rate, None, None, training)
                    for _ in range(self._gates)]
        return masks(inputs, self.dropout), masks(state, self.recurrent_dropout)

    def _gate_parts(self, inputs, h, training, input_bias):
        """Per gate g: ``(inputs * dropout_g) @ kernel_g + bias_g`` and ``h * rec_dropout_g``."""
        dp, rdp = self._dropout_masks or self.make_dropout_masks(inputs, h, training)
        u = self.units
        xs, hs = [], []
        for g in range(self._gates):
            x = math_ops.matmul(inputs if dp is None else inputs * dp[g],
                                self.kernel[:, g * u:(g + 1) * u])
            if input_bias is not None:
                x = nn_ops.bias_add(x, input_bias[g * u:(g + 1) * u])
            xs.append(x)
            hs.append(h if rdp is None else h * rdp[g])
        return xs, hs

    def _recurrent(self, h, g):
        return math_ops.matmul(h, self.recurrent_kernel[:, g * self.units:(g + 1) * self.units])

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """Zero states [batch, size] for the batch of ``inputs`` (or ``batch_size``)."""
        batch = array_ops.shape(inputs)[0] if inputs is not None else batch_size
        return [array_ops.zeros(array_ops.stack([batch, size]), dtype or self.dtype or "float32")
                for size in _state_sizes(self)]


class SimpleRNNCell(_GatedCell):
    """TF's ``tf.keras.layers.SimpleRNNCell``: ``h = activation(x @ kernel + bias + h_prev @
    recurrent_kernel)``."""

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        if "recurrent_activation" in kwargs:
            raise TypeError("SimpleRNNCell has no recurrent_activation (it has one activation)")
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)

    def call(self, inputs, states, training=None):
        """One step: ``(output, [output])`` for ``inputs`` [batch, features] and ``[h]``."""
        h_prev = states[0] if isinstance(states, list | tuple) else states
        (x,), (h,) = self._gate_parts(inputs, h_prev, training, self.bias)
        output = self.activation(x + self._recurrent(h, 0))
        return output, [output]


class LSTMCell(_GatedCell):
    """TF's ``tf.keras.layers.LSTMCell`` (TF 1.15: ``recurrent_activation="hard_sigmoid"``,
    ``unit_forget_bias=True``): gates i, f, c, o; states ``[h, c]``."""

    _gates = 4
    _config_keys = _GatedCell._config_keys + ("recurrent_activation", "unit_forget_bias",
                                              "implementation")

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias

    @property
    def state_size(self):
        return [self.units, self.units]

    def _build_bias(self):
        if not self.unit_forget_bias:
            return super()._build_bias()
        base, u = self.bias_initializer, self.units

        def forget_ones(shape, dtype=None, partition_info=None):
            return array_ops.concat([base([u], dtype=dtype), array_ops.ones([u], dtype=dtype),
                                     base([2 * u], dtype=dtype)], 0)
        return self._weight("bias", [4 * u], "bias", initializer=forget_ones)

    def call(self, inputs, states, training=None):
        """One step: ``(h, [h, c])`` for ``inputs`` [batch, features] and ``[h, c]``."""
        h_prev, c_prev = states[0], states[1]
        xs, hs = self._gate_parts(inputs, h_prev, training, self.bias)
        ra = self.recurrent_activation
        i = ra(xs[0] + self._recurrent(hs[0], 0))
        f = ra(xs[1] + self._recurrent(hs[1], 1))
        c = f * c_prev + i * self.activation(xs[2] + self._recurrent(hs[2], 2))
        o = ra(xs[3] + self._recurrent(hs[3], 3))
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_GatedCell):
    """TF's ``tf.keras.layers.GRUCell`` (TF 1.15: ``recurrent_activation="hard_sigmoid"``,
    ``reset_after=False``): gates z, r, h; ``h = z * h_prev + (1 - z) * hh``. With
    ``reset_after`` (CuDNN's convention) the reset gate applies after the recurrent product
    and ``bias`` is [2, 3 * units] (input and recurrent biases)."""

    _gates = 3
    _config_keys = _GatedCell._config_keys + ("recurrent_activation", "implementation",
                                              "reset_after")

    def __init__(self, units, reset_after=False, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = reset_after

    def _build_bias(self):
        shape = [2, 3 * self.units] if self.reset_after else [3 * self.units]
        return self._weight("bias", shape, "bias")

    def call(self, inputs, states, training=None):
        """One step: ``(h, [h])`` for ``inputs`` [batch, features] and ``[h]``."""
        h_prev = states[0] if isinstance(states, list | tuple) else states
        input_bias = recurrent_bias = self.bias
        if self.use_bias and self.reset_after:
            input_bias, recurrent_bias = self.bias[0], self.bias[1]
        xs, hs = self._gate_parts(inputs, h_prev, training, input_bias)
        u, ra = self.units, self.recurrent_activation

        def recurrent(h, g):
            out = self._recurrent(h, g)
            if self.use_bias and self.reset_after:
                out = nn_ops.bias_add(out, recurrent_bias[g * u:(g + 1) * u])
            return out
        z = ra(xs[0] + recurrent(hs[0], 0))
        r = ra(xs[1] + recurrent(hs[1], 1))
        if self.reset_after:
            hh = self.activation(xs[2] + r * recurrent(hs[2], 2))
        else:
            hh = self.activation(xs[2] + recurrent(r * hs[2], 2))
        h = z * h_prev + (1 - z) * hh
        return h, [h]


def _state_sizes(cell):
    size = cell.state_size
    return list(size) if isinstance(size, list | tuple) else [size]


class StackedRNNCells(Layer):
    """TF's ``tf.keras.layers.StackedRNNCells``: cells applied one after the other at each step
    (each cell's output the next one's input); the state is all the cells' states in order."""

    def __init__(self, cells, **kwargs):
        for cell in cells:
            _check_cell(cell)
        super().__init__(**kwargs)
        self.cells = list(cells)

    @property
    def state_size(self):
        return [s for cell in self.cells for s in _state_sizes(cell)]

    def get_config(self):
        return dict(super().get_config(), cells=[layer_config(cell) for cell in self.cells])

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls([layer_from_config(c, custom_objects) for c in config.pop("cells")], **config)

    @property
    def output_size(self):
        return self.cells[-1].output_size

    def build(self, input_shape):
        shape = as_shape(input_shape)
        for cell in self.cells:
            _build_cell(cell, shape, self)
            shape = TensorShape([shape[0].value, cell.output_size])
        self.built = True

    def nest(self, flat_states):
        """``flat_states`` grouped by cell (a list for a cell of several states), as the
        ``return_state`` of an RNN of stacked cells gives them."""
        nested, flat_states = [], list(flat_states)
        for cell in self.cells:
            n = len(_state_sizes(cell))
            nested.append(flat_states[:n] if n > 1 else flat_states[0])
            flat_states = flat_states[n:]
        return nested

    def call(self, inputs, states, training=None):
        """One step of each cell in turn: ``(last cell's output, all the new states)``."""
        states, new_states = list(states), []
        for cell in self.cells:
            n = len(_state_sizes(cell))
            inputs, cell_states = cell.call(inputs, states[:n], training=training)
            states = states[n:]
            new_states += list(cell_states) if isinstance(cell_states, list | tuple) \
                else [cell_states]
        return inputs, new_states


def _check_cell(cell):
    if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
        raise ValueError("An RNN cell should have a `call` method and a `state_size` "
                         "attribute, got %r" % (cell,))


def _build_cell(cell, step_shape, owner):
    """Build ``cell`` for steps of ``step_shape`` in a scope of its own inside ``owner``'s (its
    variables are ``lstm/lstm_cell/kernel:0``..., as TF's), and take its weights and losses
    into ``owner``."""
    if not isinstance(cell, layers_impl.Layer):
        return
    if not cell.built:
        if cell._dtype is None:
            cell._dtype = owner.dtype
        cell._set_scope()
        with cell._entered():
            cell.build(step_shape)
        cell.built = True
    adopt(owner, cell)


def adopt(owner, layer):
    """Make ``layer``'s weights and losses ``owner``'s too (a layer built inside another)."""
    for mine, theirs in ((owner._trainable_weights, layer._trainable_weights),
                         (owner._non_trainable_weights, layer._non_trainable_weights),
                         (owner._losses, layer._losses)):
        mine.extend(x for x in theirs if not any(x is y for y in mine))


def layer_config(layer):
    """``{"class_name", "config"}`` of a wrapped layer (or cell), as Keras's configs nest it."""
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def layer_from_config(config, custom_objects=None):
    """The layer ``layer_config`` gave (a layer given as it is passes through)."""
    if not isinstance(config, dict):
        return config
    from zps.keras import layers  # the namespace imports this module
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or getattr(layers, name, None)
    if cls is None:
        raise ValueError("Unknown layer: %s. Pass custom layers in `custom_objects`" % name)
    return cls.from_config(config["config"])


def rnn_loop(step, inputs, states, output_size, mask=None, go_backwards=False,
             zero_output_for_mask=False):
    """Keras's ``backend.rnn`` as a ``tf.while_loop``: ``step(x_t, states) -> (output,
    new_states)`` over the steps of ``inputs`` [batch, time, ...]; ``(last_output, outputs
    [batch, time, output_size], final_states)``. Where ``mask`` [batch, time] is False the
    states are kept and the previous output repeated (zeros with ``zero_output_for_mask``)."""
    x = array_ops.transpose(inputs, [1, 0] + list(range(2, inputs.get_shape().ndims)))
    if mask is not None:
        mask = array_ops.transpose(math_ops.cast(mask, dtypes.bool), [1, 0])
    if go_backwards:
        x = array_ops.reverse(x, [0])
        mask = None if mask is None else array_ops.reverse(mask, [0])
    step_shape = x.get_shape()[1:]
    batch = array_ops.shape(x)[1]
    n = len(states)
    zero_output = array_ops.zeros(array_ops.stack([batch, output_size]), inputs.dtype)
    accumulator = array_ops.zeros(array_ops.stack([0, batch, output_size]), inputs.dtype)

    def body(time, prev_output, *loop_vars):
        x_t = array_ops.gather(x, time)
        x_t.set_shape(step_shape)
        old_states = list(loop_vars[:n])
        output, new_states = step(x_t, old_states)
        new_states = list(new_states) if isinstance(new_states, list | tuple) else [new_states]
        if mask is not None:
            keep = array_ops.gather(mask, time)
            output = array_ops.where(keep, output,
                                     zero_output if zero_output_for_mask else prev_output)
            new_states = [array_ops.where(keep, s, o) for s, o in zip(new_states, old_states)]
        outputs = array_ops.concat([loop_vars[n], array_ops.expand_dims(output, 0)], 0)
        return [time + 1, output] + new_states + [outputs]

    def free(t):   # the batch dimension may be unknown
        return TensorShape([None] + t.get_shape().as_list()[1:])
    invariants = ([TensorShape([]), TensorShape([None, output_size])]
                  + [free(s) for s in states] + [TensorShape([None, None, output_size])])
    steps = array_ops.shape(x)[0]
    result = control_flow_ops.while_loop(
        lambda time, *_: time < steps, body, [0, zero_output] + list(states) + [accumulator],
        shape_invariants=invariants, name="while", return_same_structure=True)
    batch_static = inputs.get_shape()[0].value
    last_output, final_states, outputs = result[1], list(result[2:2 + n]), result[2 + n]
    last_output.set_shape([batch_static, output_size])
    for s, s0 in zip(final_states, states):
        s.set_shape(TensorShape([batch_static]).concatenate(s0.get_shape()[1:]))
    outputs = array_ops.transpose(outputs, [1, 0, 2])
    outputs.set_shape([batch_static, inputs.get_shape()[1].value, output_size])
    return last_output, outputs, final_states


class RNN(Layer):
    """TF's ``tf.keras.layers.RNN``: ``cell`` (a Keras cell, or a list of them, stacked) run
    over the steps of [batch, time, features] inputs; the last output, or all of them with
    ``return_sequences``, followed by the final states with ``return_state``. ``go_backwards``
    reads the steps in reverse (the returned sequence is then reversed too, as Keras's).
    ``call(inputs, mask=None, training=None, initial_state=None)``; ``inputs`` may also be
    ``[inputs, *initial_state]``."""

    _config_keys = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
                    "time_major")

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, zero_output_for_mask=False,
                 **kwargs):
        if isinstance(cell, list | tuple):
            cell = StackedRNNCells(cell)
        _check_cell(cell)
        if stateful:
            raise NotImplementedError("%s(stateful=True) is not supported by zps: carry the "
                                      "state yourself (return_state=True, then initial_state=)"
                                      % type(self).__name__)
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards, self.stateful, self.unroll = go_backwards, stateful, unroll
        self.time_major, self.zero_output_for_mask = time_major, zero_output_for_mask
        self.supports_masking = True
        self.input_spec = layers_impl.InputSpec(min_ndim=3)

    def build(self, input_shape):
        shape = as_shape(input_shape[0] if isinstance(input_shape, list) else input_shape)
        if self.time_major:
            shape = TensorShape([shape[1], shape[0]]).concatenate(shape[2:])
        if shape[2:].num_elements() is None:
            raise ValueError("%s: the features of the inputs must be known, got input shape %s"
                             % (self.name, shape))
        _build_cell(self.cell, TensorShape([shape[0]]).concatenate(shape[2:]), self)
        self.built = True

    def call(self, inputs, mask=None, training=None, initial_state=None):
        """The cell over the steps of ``inputs`` (see the class docstring)."""
        if isinstance(inputs, list | tuple):   # Keras's [inputs, *initial_state]
            inputs, initial_state = inputs[0], list(inputs[1:]) or initial_state
        if self.time_major:
            inputs = array_ops.transpose(inputs, [1, 0, 2])
            mask = None if mask is None else array_ops.transpose(mask, [1, 0])
        if isinstance(mask, list):
            mask = mask[0]
        cell = self.cell
        if initial_state is None:
            states = _initial_state(cell, inputs)
        else:
            states = [convert_to_tensor(s) for s in layers_impl._flat(initial_state)]
            if len(states) != len(_state_sizes(cell)):
                raise ValueError("Layer %s expects %d initial state(s), but it received %d"
                                 % (self.name, len(_state_sizes(cell)), len(states)))
        cells = cell.cells if isinstance(cell, StackedRNNCells) else [cell]
        _set_dropout_masks(cells, inputs[:, 0], states, training)
        try:
            def step(x_t, states):
                if _accepts_training(cell):
                    return cell.call(x_t, states, training=training)
                return cell.call(x_t, states)
            last, outputs, states = rnn_loop(step, inputs, states, _output_size(cell), mask,
                                             self.go_backwards, self.zero_output_for_mask)
        finally:
            for c in cells:
                c._dropout_masks = None
        output = outputs if self.return_sequences else last
        if self.time_major and self.return_sequences:
            output = array_ops.transpose(output, [1, 0, 2])
        if isinstance(cell, StackedRNNCells):
            states = cell.nest(states)
        return [output] + states if self.return_state else output

    def compute_mask(self, inputs, mask=None):
        """The inputs' mask for the sequence returned, None for a last output and states."""
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            states = _state_sizes(self.cell)
            if isinstance(self.cell, StackedRNNCells):
                states = self.cell.nest(states)
            return [output_mask] + [None] * len(states)
        return output_mask

    def compute_output_shape(self, input_shape):
        shape = as_shape(input_shape)
        size = _output_size(self.cell)
        if self.return_sequences:
            out = shape[:2].concatenate([size])
        else:
            out = TensorShape([shape[1 if self.time_major else 0]]).concatenate([size])
        if not self.return_state:
            return out
        batch = shape[1 if self.time_major else 0]
        return [out] + [TensorShape([batch, s]) for s in _state_sizes(self.cell)]

    def clone(self, **changes):
        """A new layer like this one (an unbuilt copy of its cell), with ``changes`` to its
        constructor arguments: how ``Bidirectional`` makes its forward and backward layers."""
        args = dict(self._rnn_args(), name=self.name)
        args.update(changes)
        return type(self)(**args)

    def _rnn_args(self):
        if self.cell.built:
            raise ValueError("Cannot copy the RNN layer %s once built (Bidirectional needs an "
                             "RNN layer that was never called)" % self.name)
        return dict(cell=copy.deepcopy(self.cell), return_sequences=self.return_sequences,
                    return_state=self.return_state, go_backwards=self.go_backwards,
                    time_major=self.time_major)

    def get_config(self):
        config = dict(super().get_config(), cell=layer_config(self.cell))
        if self.zero_output_for_mask:   # in Keras's config only when set
            config["zero_output_for_mask"] = True
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "cell" in config:
            config["cell"] = layer_from_config(config["cell"], custom_objects)
        return cls(**config)


def _set_dropout_masks(cells, first_input, states, training):
    """Give each cell its dropout masks for the whole sequence (Keras draws them once per
    call, not per step)."""
    x, k = first_input, 0
    for cell in cells:
        if hasattr(cell, "make_dropout_masks"):
            cell._dropout_masks = cell.make_dropout_masks(x, states[k], training)
        k += len(_state_sizes(cell))
        x = array_ops.zeros(array_ops.stack([array_ops.shape(first_input)[0],
                                             _output_size(cell)]), first_input.dtype)


def _output_size(cell):
    size = getattr(cell, "output_size", None)
    return size if size is not None else _state_sizes(cell)[0]


def _accepts_training(cell):
    return "training" in inspect.signature(cell.call).parameters


def _initial_state(cell, inputs):
    if hasattr(cell, "get_initial_state"):
        return cell.get_initial_state(inputs=inputs, dtype=inputs.dtype)
    batch = array_ops.shape(inputs)[0]
    return [array_ops.zeros(array_ops.stack([batch, size]), inputs.dtype)
            for size in _state_sizes(cell)]


class _CellLayer(RNN):
    """An RNN layer made from its cell's arguments (SimpleRNN, LSTM, GRU)."""

    _cell_class = None

    def __init__(self, units, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, activity_regularizer=None,
                 **kwargs):
        layer_keys = ("name", "trainable", "dtype", "input_shape", "batch_input_shape",
                      "batch_size", "input_dim", "weights", "zero_output_for_mask")
        layer_args = {k: kwargs.pop(k) for k in layer_keys if k in kwargs}
        self._cell_args = dict(kwargs, units=units)
        cell = self._cell_class(units, dtype=layer_args.get("dtype"),
                                name=layers_impl._snake_case(self._cell_class.__name__),
                                **kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         time_major=time_major,
                         activity_regularizer=converted("_regularizer", activity_regularizer),
                         **layer_args)

    def __getattr__(self, name):   # units, activation, dropout... are the cell's, as Keras's
        cell = self.__dict__.get("cell")
        if cell is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(cell, name)

    def _rnn_args(self):
        args = super()._rnn_args()
        del args["cell"]
        return dict(args, **self._cell_args)

    def get_config(self):
        """Keras's: the RNN's arguments and the cell's (read through the layer), no cell."""
        config = super().get_config()
        del config["cell"]
        return config


def _cell_layer_keys(cell_class):
    return RNN._config_keys + cell_class._config_keys + ("activity_regularizer",)


class SimpleRNN(_CellLayer):
    """TF's ``tf.keras.layers.SimpleRNN``: ``RNN(SimpleRNNCell(units, ...))``."""
    _cell_class = SimpleRNNCell
    _config_keys = _cell_layer_keys(SimpleRNNCell)


class LSTM(_CellLayer):
    """TF 1.15's ``tf.keras.layers.LSTM`` (v1): ``RNN(LSTMCell(units, ...))``,
    ``recurrent_activation="hard_sigmoid"``, ``unit_forget_bias=True``; states ``[h, c]``."""
    _cell_class = LSTMCell
    _config_keys = _cell_layer_keys(LSTMCell)


class GRU(_CellLayer):
    """TF 1.15's ``tf.keras.layers.GRU`` (v1): ``RNN(GRUCell(units, ...))``,
    ``recurrent_activation="hard_sigmoid"``, ``reset_after=False``."""
    _cell_class = GRUCell
    _config_keys = _cell_layer_keys(GRUCell)


__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "SimpleRNN", "SimpleRNNCell",
           "StackedRNNCells"]
