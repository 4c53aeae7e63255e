"""``tf.keras``' layer wrappers as in TF 1.15: ``TimeDistributed(layer)`` (the layer applied to
every step of [batch, time, ...] inputs) and ``Bidirectional(rnn_layer)`` (a forward and a
backward copy of a recurrent layer, their outputs merged). The wrapped layers' weights are
the wrapper's (``get_weights`` gives the forward layer's, then the backward one's).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.keras.Input((5, 3))
...     bi = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(4, return_sequences=True))
...     y = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2))(bi(x))
...     print(bi(x).shape, y.shape, bi.weights[0].name)
(?, 5, 8) (?, 5, 2) bidirectional/forward_lstm/lstm_cell/kernel:0
"""

from zps.framework.tensor_shape import TensorShape, as_shape
from zps.keras.engine import Layer, call_accepts
from zps.keras.recurrent import RNN, adopt, layer_config, layer_from_config
from zps.ops import array_ops, math_ops

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Wrapper(Layer):
    """TF's ``tf.keras.layers.Wrapper``: a layer that wraps ``layer``."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `%s` layer with a `Layer` instance. You passed: "
                             "%r" % (type(self).__name__, layer))
        super().__init__(**kwargs)
        self.layer = layer

    def get_config(self):
        return dict(super().get_config(), layer=layer_config(self.layer))

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls(layer_from_config(config.pop("layer"), custom_objects), **config)


class TimeDistributed(Wrapper):
    """TF's ``tf.keras.layers.TimeDistributed``: ``layer`` applied to each step of inputs
    [batch, time, ...] (the steps folded into the batch); the layer's variables are the
    wrapper's (``time_distributed/kernel:0``...), and the inputs' mask passes through."""

    supports_masking = True

    def build(self, input_shape):
        shape = as_shape(input_shape)
        if shape.ndims is None or shape.ndims < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape` with "
                             "at least 3 dimensions, received: %s" % (shape,))
        if not self.layer.built:   # built here, its variables under the wrapper's scope
            if self.layer._scope is None:
                self.layer._scope = self._scope
            if self.layer._dtype is None:
                self.layer._dtype = self.dtype
            self.layer.build(TensorShape([None]).concatenate(shape[2:]))
            self.layer.built = True
        adopt(self, self.layer)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        static = inputs.get_shape().as_list()
        shape = array_ops.shape(inputs)
        folded = array_ops.reshape(inputs, array_ops.concat([[-1], shape[2:]], 0))
        folded.set_shape([None] + static[2:])
        kwargs = {}
        if training is not None and call_accepts(self.layer, "training"):
            kwargs["training"] = training
        if mask is not None and call_accepts(self.layer, "mask"):
            kwargs["mask"] = array_ops.reshape(mask, [-1])
        y = self.layer(folded, **kwargs)
        out = array_ops.reshape(y, array_ops.concat([shape[:2], array_ops.shape(y)[1:]], 0))
        out.set_shape(static[:2] + y.get_shape().as_list()[1:])
        adopt(self, self.layer)
        return out

    def compute_output_shape(self, input_shape):
        shape = as_shape(input_shape)
        inner = as_shape(self.layer.compute_output_shape(
            TensorShape([shape[0]]).concatenate(shape[2:])))
        return shape[:2].concatenate(inner[1:])


class Bidirectional(Wrapper):
    """TF's ``tf.keras.layers.Bidirectional``: the recurrent ``layer`` run forward
    (``forward_<name>``) and backward (``backward_<name>``, or ``backward_layer``), the
    backward sequence reversed back to the inputs' order; ``merge_mode`` "concat" (default),
    "sum", "mul", "ave", or None for the list of both outputs. With ``return_state`` the
    forward states then the backward ones follow the output."""

    supports_masking = True

    def __init__(self, layer, merge_mode="concat", backward_layer=None, **kwargs):
        if merge_mode not in _MERGE_MODES:
            raise ValueError('Invalid merge mode. Merge mode should be one of {"sum", "mul", '
                             '"ave", "concat", None}, got %r' % (merge_mode,))
        if not isinstance(layer, RNN):
            raise ValueError("Bidirectional wraps a recurrent layer (tf.keras.layers.RNN, LSTM, "
                             "GRU, SimpleRNN), got %r" % (layer,))
        super().__init__(layer, **kwargs)
        self.forward_layer = layer.clone(name="forward_" + layer.name)
        given_backward = None if backward_layer is None else layer_config(backward_layer)
        if backward_layer is None:
            backward_layer = layer.clone(name="backward_" + layer.name,
                                         go_backwards=not layer.go_backwards)
        elif (backward_layer.return_sequences != layer.return_sequences
              or backward_layer.return_state != layer.return_state):
            raise ValueError("Forward layer and backward layer should have the same "
                             "return_sequences and return_state")
        self.backward_layer = backward_layer
        self._backward_config = given_backward   # Keras's config has it only when given
        for sub in (self.forward_layer, self.backward_layer):   # TF's: masked steps output 0
            sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences, self.return_state = layer.return_sequences, layer.return_state

    def get_config(self):
        config = dict(super().get_config(), merge_mode=self.merge_mode)
        if self._backward_config is not None:
            config["backward_layer"] = self._backward_config
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "backward_layer" in config:
            config["backward_layer"] = layer_from_config(config["backward_layer"],
                                                         custom_objects)
        return super().from_config(config, custom_objects)

    def call(self, inputs, training=None, mask=None, initial_state=None):
        forward, backward = {}, {}
        for kwargs in (forward, backward):
            if training is not None:
                kwargs["training"] = training
            if mask is not None:
                kwargs["mask"] = mask
        if initial_state is not None:
            states = list(initial_state)
            half = len(states) // 2
            forward["initial_state"], backward["initial_state"] = states[:half], states[half:]
        y = self.forward_layer(inputs, **forward)
        y_rev = self.backward_layer(inputs, **backward)
        adopt(self, self.forward_layer)
        adopt(self, self.backward_layer)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = array_ops.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            output = array_ops.concat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            output = math_ops.multiply(y, y_rev)
        else:
            output = [y, y_rev]
        output = output if isinstance(output, list) else [output]
        return output + states if self.return_state or len(output) > 1 else output[0]

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        masks = [output_mask, output_mask] if self.merge_mode is None else [output_mask]
        if self.return_state:
            masks += [None] * (2 * len(_flat_states(self.forward_layer)))
        return masks if len(masks) > 1 else masks[0]

    def compute_output_shape(self, input_shape):
        shape = self.forward_layer.compute_output_shape(input_shape)
        shapes = shape if isinstance(shape, list) else [shape]
        out, states = as_shape(shapes[0]), shapes[1:]
        if self.merge_mode == "concat":
            out = out[:-1].concatenate([out[-1].value * 2 if out[-1].value else None])
        outs = [out, out] if self.merge_mode is None else [out]
        result = outs + (states + states if self.return_state else [])
        return result if len(result) > 1 else result[0]


def _flat_states(layer):
    size = layer.cell.state_size
    return list(size) if isinstance(size, list | tuple) else [size]


__all__ = ["Bidirectional", "TimeDistributed", "Wrapper"]
