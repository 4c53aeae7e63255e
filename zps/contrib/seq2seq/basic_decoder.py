"""``BasicDecoder``: a cell, a helper and an optional output layer, one step at a time
(TF1's contrib ``seq2seq.basic_decoder``)."""

import collections

from zps import nest
from zps.contrib.seq2seq import decoder as decoder_py
from zps.contrib.seq2seq import helper as helper_py
from zps.framework.graph import get_default_graph
from zps.framework.tensor_shape import TensorShape
from zps.ops import layers_impl, rnn_cell_impl


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput",
                                                ("rnn_output", "sample_id"))):
    """A step's outputs: the cell's (or output layer's) output and the helper's sample ids."""

    __slots__ = ()


def _check_output_layer(output_layer):
    if output_layer is not None and not isinstance(output_layer, layers_impl.Layer):
        raise TypeError("output_layer must be a Layer, received: %s" % type(output_layer))


def _output_size(cell, output_layer):
    """The cell's output size, through ``output_layer`` when there is one."""
    size = cell.output_size
    if output_layer is None:
        return size
    shapes = nest.map_structure(lambda s: TensorShape([None]).concatenate(s), size)
    return nest.map_structure(lambda s: s[1:], output_layer.compute_output_shape(shapes))


class BasicDecoder(decoder_py.Decoder):
    """Each step: ``cell(inputs, state)``, then ``output_layer`` (e.g. ``tf.layers.Dense``
    to the vocabulary), then ``helper.sample`` and ``helper.next_inputs``. Outputs are
    ``BasicDecoderOutput(rnn_output, sample_id)``."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        rnn_cell_impl._assert_like_rnncell("cell", cell)
        if not isinstance(helper, helper_py.Helper):
            raise TypeError("helper must be a Helper, received: %s" % type(helper))
        _check_output_layer(output_layer)
        self._cell = cell
        self._helper = helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self):
        return self._helper.batch_size

    @property
    def output_size(self):
        return BasicDecoderOutput(rnn_output=_output_size(self._cell, self._output_layer),
                                  sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self):
        dtype = nest.flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(
            nest.map_structure(lambda _: dtype, _output_size(self._cell, self._output_layer)),
            self._helper.sample_ids_dtype)

    def initialize(self, name=None):
        return self._helper.initialize() + (self._initial_state,)

    def step(self, time, inputs, state, name=None):
        with get_default_graph().name_scope(name or "BasicDecoderStep"):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids)
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished


__all__ = ["BasicDecoder", "BasicDecoderOutput"]
