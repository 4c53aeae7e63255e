"""TF1's recurrent cells (``tf.nn.rnn_cell``): one step of a recurrent network, run over a
sequence by ``tf.nn.dynamic_rnn`` or ``tf.nn.static_rnn`` (zps/ops/rnn.py).

A cell is a layer, as in TF1: on its first call it opens a variable scope named after it
(``basic_lstm_cell``, ``lstm_cell``, ``gru_cell`` ..., made unique) under the current variable
scope, creates its variables there with ``get_variable`` (``<scope>/kernel``, ``<scope>/bias``
...) and keeps that scope, so later calls share them. The names are TF1's, so checkpoints of
TF1 models restore by name. ``dynamic_rnn`` makes one call outside its ``tf.while_loop`` to
create the variables (a loop body cannot; that call's ops never run), so a cell may create them
in ``build()`` or, as old TF1 cells do, with ``tf.get_variable`` in ``call()``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     cell = tf.nn.rnn_cell.BasicLSTMCell(4)
...     h, state = cell(tf.ones([2, 3]), cell.zero_state(2, tf.float32))
...     print([v.op.name for v in cell.variables], h.shape)
['basic_lstm_cell/kernel', 'basic_lstm_cell/bias'] (2, 4)
"""

import collections
import contextlib
import hashlib
import numbers
import re

from zps.framework import dtypes, graph, tensor_shape
from zps.ops import (
    array_ops,
    clip_ops,
    control_flow_ops,
    init_ops,
    math_ops,
    nn_ops,
    partitioned_variables,
    random_ops,
    variable_scope,
)


def _flatten(value):
    return control_flow_ops._flatten(value)


def _snake_case(name):
    """TF1's layer names from class names: ``BasicLSTMCell`` -> ``basic_lstm_cell``."""
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
    return "private" + name if name.startswith("_") else name


def _depth(inputs_shape, cell):
    """The last dimension of a step's input, which sizes the kernels."""
    shape = tensor_shape.as_shape(inputs_shape)
    depth = shape[-1].value if shape.ndims else None
    if depth is None:
        raise ValueError("%s: expected inputs.shape[-1] to be known, saw shape: %s (give the "
                         "inputs' placeholder a static last dimension)" % (cell, shape))
    return depth


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM cell: ``c`` the memory, ``h`` the output (TF1's tuple)."""

    __slots__ = ()

    @property
    def dtype(self):
        if self.c.dtype != self.h.dtype:
            raise TypeError("Inconsistent internal state: %s vs %s" % (self.c.dtype, self.h.dtype))
        return self.c.dtype


def _assert_like_rnncell(cell_name, cell):
    """Raise TypeError unless ``cell`` has what an RNN cell needs (TF1's duck typing)."""
    missing = [what for what, ok in [
        ("'output_size' property is missing", hasattr(cell, "output_size")),
        ("'state_size' property is missing", hasattr(cell, "state_size")),
        ("either 'zero_state' or 'get_initial_state' method is required",
         hasattr(cell, "zero_state") or hasattr(cell, "get_initial_state")),
        ("is not callable", callable(cell))] if not ok]
    if missing:
        raise TypeError("The argument %r (%s) is not an RNNCell: %s." % (cell_name, cell,
                                                                        ", ".join(missing)))


class RNNCell:
    """Abstract recurrent cell: ``(output, new_state) = cell(inputs, state)``.

    A subclass gives ``state_size`` and ``output_size`` (ints, TensorShapes or tuples of them),
    ``build(inputs_shape)`` creating its variables with ``self.add_variable`` and
    ``call(inputs, state)``; the first ``__call__`` opens the cell's variable scope (``scope``,
    or one named ``name`` or after the class) and builds, later calls reuse it.
    """

    def __init__(self, trainable=True, name=None, dtype=None, _reuse=None, **kwargs):
        if kwargs:
            raise TypeError("%s got unexpected keyword arguments: %s"
                            % (type(self).__name__, ", ".join(sorted(kwargs))))
        self.trainable = trainable
        self._base_name = name or _snake_case(type(self).__name__)
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._reuse = _reuse
        self._scope = None   # the variable scope captured on the first call
        self._variables = []
        self.built = False

    @property
    def name(self):
        return self._scope.name.split("/")[-1] if self._scope is not None else self._base_name

    @property
    def dtype(self):
        return self._dtype

    @property
    def state_size(self):
        raise NotImplementedError("%s must define state_size" % type(self).__name__)

    @property
    def output_size(self):
        raise NotImplementedError("%s must define output_size" % type(self).__name__)

    @property
    def variables(self):
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable] if self.trainable else []

    trainable_weights = trainable_variables

    def build(self, inputs_shape):
        """Create the cell's variables for steps of shape ``inputs_shape`` (none by default)."""
        self.built = True

    def call(self, inputs, state):
        raise NotImplementedError("%s must define call(inputs, state)" % type(self).__name__)

    def add_variable(self, name, shape, dtype=None, initializer=None, partitioner=None):
        """``get_variable(name, ...)`` in the cell's scope."""
        return variable_scope.get_variable(name, shape, dtype=dtype or self._dtype,
                                           initializer=initializer, trainable=self.trainable,
                                           partitioner=partitioner)

    add_weight = add_variable

    def _remember(self, getter, *args, **kwargs):
        """The custom getter of the cell's scope (TF1's _rnn_get_variable): every variable got
        in it, by build(), call() or an inner cell, is one of the cell's variables."""
        v = getter(*args, **kwargs)
        parts = list(v) if isinstance(v, partitioned_variables.PartitionedVariable) else [v]
        self._variables.extend(p for p in parts if all(p is not q for q in self._variables))
        return v

    @contextlib.contextmanager
    def _layer_scope(self, scope=None):
        """The cell's variable scope: captured on first entry (TF1's Layer._set_scope), then
        re-entered, reusing, under a fresh name scope for the ops."""
        if self._scope is None:
            if scope is not None:
                opened = variable_scope.variable_scope(scope, reuse=self._reuse,
                                                       custom_getter=self._remember)
            else:
                opened = variable_scope.variable_scope(
                    self._base_name if self._reuse else None, default_name=self._base_name,
                    reuse=self._reuse, custom_getter=self._remember)
            with opened as captured:
                self._scope = captured
                yield
            return
        with variable_scope.variable_scope(self._scope, reuse=True if self.built else self._reuse,
                                           auxiliary_name_scope=False), \
                graph.get_default_graph().name_scope(self._scope.name.split("/")[-1]):
            yield

    def __call__(self, inputs, state, scope=None):
        flat, pack = _flatten(inputs)
        flat = [graph.convert_to_tensor(x) for x in flat]
        with self._layer_scope(scope):
            if self._dtype is None:
                self._dtype = flat[0].dtype.base_dtype
            if not self.built:
                self.build(pack([x.get_shape() for x in flat]) if len(flat) > 1
                           else flat[0].get_shape())
            result = self.call(pack(flat), state)
        self.built = True   # a cell creating its variables in call() reuses them from now on
        return result

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """The zero state for ``inputs``' batch (or ``batch_size`` and ``dtype``)."""
        if inputs is not None:
            inputs = graph.convert_to_tensor(inputs)
            batch_size = inputs.get_shape()[0].value if inputs.get_shape().ndims else None
            if batch_size is None:
                batch_size = array_ops.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("get_initial_state needs inputs, or batch_size and dtype "
                             "(got batch_size=%r, dtype=%r)" % (batch_size, dtype))
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """Zeros of shape ``[batch_size, size]`` for each part of ``state_size``."""
        with graph.get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return _zeros_for(self.state_size, batch_size, dtype)


def _zeros_for(sizes, batch_size, dtype):
    """Zeros ``[batch_size] + size`` for each size of the structure ``sizes``."""
    flat, pack = _flatten(sizes)
    static = batch_size if isinstance(batch_size, numbers.Integral) else None
    out = []
    for size in flat:
        dims = tensor_shape.as_shape(size).as_list()
        z = array_ops.zeros(array_ops.stack([batch_size] + dims) if static is None
                            else [static] + dims, dtype)
        z.set_shape([static] + dims)
        out.append(z)
    return pack(out)


class BasicRNNCell(RNNCell):
    """The vanilla recurrent cell: ``output = new_state = activation(W [x, state] + b)``."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = _depth(inputs_shape, self.name)
        self._kernel = self.add_variable("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_variable("bias", [self._num_units],
                                       initializer=init_ops.zeros_initializer())

    def call(self, inputs, state):
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._kernel)
        output = self._activation(nn_ops.bias_add(gate_inputs, self._bias))
        return output, output


class GRUCell(RNNCell):
    """Gated recurrent unit (Cho et al., 2014): reset and update gates (variables
    ``gates/kernel``, ``gates/bias``, the bias initialized to 1) and a candidate
    (``candidate/kernel``, ``candidate/bias``)."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = activation or math_ops.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = _depth(inputs_shape, self.name) + self._num_units
        n = self._num_units
        self._gate_kernel = self.add_variable("gates/kernel", [depth, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            "gates/bias", [2 * n], initializer=self._bias_initializer
            or init_ops.constant_initializer(1.0))
        self._candidate_kernel = self.add_variable("candidate/kernel", [depth, n],
                                                   initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(
            "candidate/bias", [n], initializer=self._bias_initializer
            or init_ops.zeros_initializer())

    def call(self, inputs, state):
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._gate_kernel)
        value = math_ops.sigmoid(nn_ops.bias_add(gate_inputs, self._gate_bias))
        r, u = array_ops.split(value, 2, axis=1)
        candidate = math_ops.matmul(array_ops.concat([inputs, r * state], 1),
                                    self._candidate_kernel)
        c = self._activation(nn_ops.bias_add(candidate, self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """The basic LSTM cell (Zaremba et al., 2014): one ``kernel`` for the four gates (input,
    new input, forget, output, in that order) and one ``bias``; ``forget_bias`` is added to
    the forget gate. The state is ``LSTMStateTuple(c, h)`` (or ``[c, h]`` concatenated when
    ``state_is_tuple=False``)."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = _depth(inputs_shape, self.name)
        self._kernel = self.add_variable("kernel", [depth + self._num_units, 4 * self._num_units])
        self._bias = self.add_variable("bias", [4 * self._num_units],
                                       initializer=init_ops.zeros_initializer())

    def call(self, inputs, state):
        c, h = state if self._state_is_tuple else array_ops.split(state, 2, axis=1)
        gate_inputs = nn_ops.bias_add(
            math_ops.matmul(array_ops.concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = array_ops.split(gate_inputs, 4, axis=1)
        forget_bias = graph.convert_to_tensor(self._forget_bias, dtype=f.dtype)
        new_c = math_ops.add(math_ops.multiply(c, math_ops.sigmoid(math_ops.add(f, forget_bias))),
                             math_ops.multiply(math_ops.sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), math_ops.sigmoid(o))
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, array_ops.concat([new_c, new_h], 1)


class LSTMCell(RNNCell):
    """The LSTM cell with optional peepholes (``w_f_diag``, ``w_i_diag``, ``w_o_diag``), cell
    clipping, and a projection of the output to ``num_proj`` units (``projection/kernel``,
    clipped to ``proj_clip``). Gates as BasicLSTMCell; the state is ``LSTMStateTuple(c, m)``.
    ``num_unit_shards``/``num_proj_shards`` partition the kernels (deprecated in TF1)."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        m = self._num_proj or self._num_units
        return (LSTMStateTuple(self._num_units, m) if self._state_is_tuple
                else self._num_units + m)

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def build(self, inputs_shape):
        depth = _depth(inputs_shape, self.name)
        n = self._num_units
        h_depth = self._num_proj or n
        self._kernel = self.add_variable("kernel", [depth + h_depth, 4 * n],
                                         initializer=self._initializer,
                                         partitioner=_shards(self._num_unit_shards))
        self._bias = self.add_variable("bias", [4 * n], initializer=init_ops.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag, self._w_i_diag, self._w_o_diag = [
                self.add_variable(name, [n], initializer=self._initializer)
                for name in ("w_f_diag", "w_i_diag", "w_o_diag")]
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable("projection/kernel", [n, self._num_proj],
                                                  initializer=self._initializer,
                                                  partitioner=_shards(self._num_proj_shards))

    def call(self, inputs, state):
        n = self._num_units
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array_ops.slice(state, [0, 0], [-1, n])
            m_prev = array_ops.slice(state, [0, n], [-1, self._num_proj or n])
        lstm_matrix = nn_ops.bias_add(
            math_ops.matmul(array_ops.concat([inputs, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = array_ops.split(lstm_matrix, 4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        if self._state_is_tuple:
            return m, LSTMStateTuple(c, m)
        return m, array_ops.concat([c, m], 1)


def _shards(num_shards):
    if num_shards is None:
        return None
    return partitioned_variables.fixed_size_partitioner(num_shards)


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input; cell ``i``'s variables are under
    ``multi_rnn_cell/cell_<i>/``. The state is the tuple of the cells' states (concatenated
    when ``state_is_tuple=False``)."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not isinstance(cells, list | tuple):
            raise TypeError("cells must be a list or tuple, but saw: %s." % (cells,))
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        for i, cell in enumerate(cells):
            _assert_like_rnncell("cells[%d]" % i, cell)
        if not state_is_tuple and any(isinstance(c.state_size, tuple) for c in cells):
            raise ValueError("Some cells return tuples of states, but the flag state_is_tuple is "
                             "not set.  State sizes are: %s" % [c.state_size for c in cells])
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        if not self._state_is_tuple:
            return super().zero_state(batch_size, dtype)
        with graph.get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)

    def call(self, inputs, state):
        if self._state_is_tuple and not isinstance(state, tuple | list):
            raise ValueError("Expected state to be a tuple of length %d, but received: %s"
                             % (len(self.state_size), state))
        position, new_states, cur = 0, [], inputs
        for i, cell in enumerate(self._cells):
            with variable_scope.variable_scope("cell_%d" % i):
                if self._state_is_tuple:
                    cur_state = state[i]
                else:
                    cur_state = array_ops.slice(state, [0, position], [-1, cell.state_size])
                    position += cell.state_size
                cur, new_state = cell(cur, cur_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return cur, tuple(new_states)
        return cur, array_ops.concat(new_states, 1)


class _RNNCellWrapper(RNNCell):
    """A cell around ``cell``: no variable scope of its own (the wrapped cell's variables keep
    their names), same state and output sizes."""

    def __init__(self, cell):
        super().__init__()
        _assert_like_rnncell("cell", cell)
        self.cell = cell

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    @property
    def variables(self):
        return list(getattr(self.cell, "variables", []))

    weights = variables

    def zero_state(self, batch_size, dtype):
        with graph.get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self._call_wrapped_cell(inputs, state, self.cell, scope=scope)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        raise NotImplementedError


class DeviceWrapper(_RNNCellWrapper):
    """Runs the wrapped cell's ops on ``device``."""

    def __init__(self, cell, device):
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with graph.get_default_graph().device(self._device):
            return super().zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        with graph.get_default_graph().device(self._device):
            return cell_call_fn(inputs, state, **kwargs)


class ResidualWrapper(_RNNCellWrapper):
    """The wrapped cell's output plus its input (or ``residual_fn(inputs, outputs)``)."""

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        outputs, new_state = cell_call_fn(inputs, state, **kwargs)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state
        flat_in, pack = _flatten(inputs)
        flat_out, _ = _flatten(outputs)
        if len(flat_in) != len(flat_out):
            raise ValueError("ResidualWrapper: the inputs (%d tensors) and outputs (%d) of the "
                             "cell differ in structure" % (len(flat_in), len(flat_out)))
        for x, y in zip(flat_in, flat_out):
            x = graph.convert_to_tensor(x)
            if not x.get_shape().is_compatible_with(y.get_shape()):
                raise ValueError("ResidualWrapper: input shape %s is incompatible with the "
                                 "cell's output shape %s (%s): the cell's output_size must be "
                                 "the input depth" % (x.get_shape(), y.get_shape(), y.name))
        return pack([x + y for x, y in zip(flat_in, flat_out)]), new_state


def _default_dropout_state_filter_visitor(substate):
    """Which parts of a state DropoutWrapper drops: an LSTM's ``h``, not its ``c``."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


class DropoutWrapper(_RNNCellWrapper):
    """Dropout on the wrapped cell's inputs, outputs and new state (by default only the ``h``
    of LSTM states), each kept with its probability (a float or a scalar tensor).

    With ``variational_recurrent=True`` (Gal and Ghahramani, 2016) one mask per part is drawn
    per run, at construction (``[1, size]``: the same for every step and every example of the
    batch); ``dtype`` is then required, and ``input_size`` when inputs are dropped.
    """

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(cell)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._state_filter = dropout_state_filter_visitor or _default_dropout_state_filter_visitor
        g = graph.get_default_graph()
        with g.name_scope("DropoutWrapperInit"):
            probs = [_keep_prob(p, what) for p, what in [(input_keep_prob, "input_keep_prob"),
                                                         (state_keep_prob, "state_keep_prob"),
                                                         (output_keep_prob, "output_keep_prob")]]
        self._input_keep_prob, self._state_keep_prob, self._output_keep_prob = probs
        self._seed = seed
        self._variational_recurrent = variational_recurrent
        self._noise = {"input": None, "state": None, "output": None}
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            if _should_dropout(self._input_keep_prob):
                if input_size is None:
                    raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 "
                                     "or is unknown, input_size must be provided")
                self._noise["input"] = self._batch_noise(input_size, "input", dtype)
            self._noise["state"] = self._batch_noise(cell.state_size, "state", dtype)
            self._noise["output"] = self._batch_noise(cell.output_size, "output", dtype)

    def _gen_seed(self, salt_prefix, index):
        if self._seed is None:
            return None
        salted = (str(self._seed) + "%s_%d" % (salt_prefix, index)).encode("utf-8")
        return int(hashlib.md5(salted).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _batch_noise(self, sizes, salt, dtype):
        flat, _ = _flatten(sizes)
        return [random_ops.random_uniform([1] + tensor_shape.as_shape(s).as_list(), dtype=dtype,
                                          seed=self._gen_seed(salt, i))
                for i, s in enumerate(flat)]

    def _dropout(self, values, salt, keep_prob, selected=None):
        flat, pack = _flatten(values)
        selected = selected or [True] * len(flat)
        noise = self._noise[salt]
        out = []
        for i, (v, do) in enumerate(zip(flat, selected)):
            if not do:
                out.append(v)
            elif noise is None:
                out.append(nn_ops.dropout(v, keep_prob=keep_prob, seed=self._gen_seed(salt, i)))
            else:   # the mask of this run: floor(keep_prob + uniform[0, 1))
                kept = math_ops.divide(v, keep_prob) * math_ops.floor(keep_prob + noise[i])
                kept.set_shape(v.get_shape())
                out.append(kept)
        return pack(out)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        if _should_dropout(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_keep_prob)
        output, new_state = cell_call_fn(inputs, state, **kwargs)
        if _should_dropout(self._state_keep_prob):
            new_state = self._dropout(new_state, "state", self._state_keep_prob,
                                      _selected(self._state_filter, new_state))
        if _should_dropout(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_keep_prob)
        return output, new_state


def _keep_prob(value, what):
    """A keep probability as a float when it is a constant (checked), else a tensor."""
    if graph.is_symbolic(value):
        return value
    if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError("Parameter %s must be between 0 and 1: %r" % (what, value))
    return float(value)


def _should_dropout(keep_prob):
    return not isinstance(keep_prob, float) or keep_prob < 1


def _selected(visitor, state):
    """One bool per leaf of ``state``: whether DropoutWrapper drops it. As TF1's
    get_traverse_shallow_structure: ``visitor`` says False (leave this part), True (drop a
    leaf; look into each part of a structure) or a structure of bools (look into the True
    parts)."""
    verdict = visitor(state)
    is_structure = isinstance(state, list | tuple)
    if isinstance(verdict, bool):
        if not verdict or not is_structure:
            return [verdict] * len(_flatten(state)[0])
        return [b for part in state for b in _selected(visitor, part)]
    if not is_structure or not isinstance(verdict, list | tuple) or len(verdict) != len(state):
        raise TypeError("dropout_state_filter_visitor returned %r for %r: return a bool, or a "
                        "structure of bools shaped like the state" % (verdict, state))
    return [b for part, look in zip(state, verdict)
            for b in (_selected(visitor, part) if look else [False] * len(_flatten(part)[0]))]


__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
           "DropoutWrapper", "ResidualWrapper", "DeviceWrapper", "LSTMStateTuple"]
