"""``tf.keras.layers``: the layer classes and functions only (TF 1.15's names). The layers
live in core_layers.py (dense, convolutions, pooling, embedding, masking, merging,
reshaping...), recurrent.py (RNN cells and layers) and wrappers.py (TimeDistributed,
Bidirectional), on engine.py's ``Layer``.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     layer = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
...     pool = tf.keras.layers.MaxPooling2D()
...     y = pool(layer(tf.zeros([1, 6, 6, 2])))
...     print(y.get_shape().as_list(), layer.name, pool.name, layer.count_params())
[1, 3, 3, 4] conv2d max_pooling2d 76
>>> "np" in dir(tf.keras.layers), "LSTM" in dir(tf.keras.layers)
(False, True)
"""

from zps.keras.core_layers import (
    Activation,
    Add,
    Average,
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    BatchNormalization,
    Concatenate,
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Convolution1D,
    Convolution2D,
    Convolution3D,
    Cropping2D,
    Dense,
    DepthwiseConv2D,
    Dropout,
    Embedding,
    Flatten,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    Lambda,
    LayerNormalization,
    LeakyReLU,
    Masking,
    Maximum,
    MaxPool1D,
    MaxPool2D,
    MaxPool3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
    Minimum,
    Multiply,
    Permute,
    ReLU,
    RepeatVector,
    Reshape,
    SeparableConv1D,
    SeparableConv2D,
    Softmax,
    Subtract,
    UpSampling2D,
    ZeroPadding2D,
    add,
    average,
    concatenate,
    maximum,
    minimum,
    multiply,
    subtract,
)
from zps.keras.engine import Input, InputLayer, Layer
from zps.keras.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell, StackedRNNCells
from zps.keras.wrappers import Bidirectional, TimeDistributed, Wrapper
from zps.ops.layers_impl import InputSpec

__all__ = ["Activation", "Add", "Average", "AveragePooling1D", "AveragePooling2D",
           "AveragePooling3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "BatchNormalization",
           "Bidirectional", "Concatenate", "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D",
           "Conv3DTranspose", "Convolution1D", "Convolution2D", "Convolution3D", "Cropping2D",
           "Dense", "DepthwiseConv2D", "Dropout", "Embedding", "Flatten", "GRU", "GRUCell",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "Input", "InputLayer", "InputSpec", "LSTM", "LSTMCell", "Lambda",
           "Layer", "LayerNormalization", "LeakyReLU", "Masking", "MaxPool1D", "MaxPool2D",
           "MaxPool3D", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "Maximum", "Minimum",
           "Multiply", "Permute", "RNN", "ReLU", "RepeatVector", "Reshape", "SeparableConv1D",
           "SeparableConv2D", "SimpleRNN", "SimpleRNNCell", "Softmax", "StackedRNNCells",
           "Subtract", "TimeDistributed", "UpSampling2D", "Wrapper", "ZeroPadding2D", "add",
           "average", "concatenate", "maximum", "minimum", "multiply", "subtract"]
