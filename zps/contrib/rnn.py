"""``tf.contrib.rnn``: TF1's contrib aliases of the recurrent cells and drivers of ``tf.nn``.

>>> import zps as tf
>>> tf.contrib.rnn.LSTMCell is tf.nn.rnn_cell.LSTMCell
True
"""

from zps.ops.rnn import static_bidirectional_rnn, static_rnn
from zps.ops.rnn_cell_impl import (
    BasicLSTMCell,
    BasicRNNCell,
    DeviceWrapper,
    DropoutWrapper,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    ResidualWrapper,
    RNNCell,
)

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
           "static_bidirectional_rnn", "static_rnn"]
