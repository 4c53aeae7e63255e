"""``tf.contrib``: the TF1 contrib names that zps programs use (aliases of core functions), plus
``tf.contrib.embedding``: growable hash embedding tables, and ``tf.contrib.rnn``: the recurrent
cells of ``tf.nn.rnn_cell``, and ``tf.contrib.layers``: TF1's contrib layers, regularizers and
initializers."""

from zps.contrib import embedding, framework, layers, rnn, training

__all__ = ["embedding", "framework", "layers", "rnn", "training"]
