"""``tf.contrib``: the TF1 contrib names that zps programs use (aliases of core functions), plus
``tf.contrib.embedding``: growable hash embedding tables, and ``tf.contrib.rnn``: the recurrent
cells of ``tf.nn.rnn_cell``, ``tf.contrib.layers``: TF1's contrib layers, regularizers and
initializers, ``tf.contrib.framework``: ``arg_scope`` and the variable helpers, and
``tf.contrib.slim``: all of these under slim's names, with ``slim.learning``, and
``tf.contrib.opt``: TF1's contributed optimizers, ``tf.contrib.seq2seq``: decoders,
attention and beam search, ``tf.contrib.estimator``: the heads of the head-taking
estimators and the estimator extras, and ``tf.contrib.distribute``: ``DistributeConfig``."""

from zps.contrib import (
    distribute,
    embedding,
    estimator,
    framework,
    layers,
    opt,
    rnn,
    seq2seq,
    slim,
    training,
)

__all__ = ["distribute", "embedding", "estimator", "framework", "layers", "opt", "rnn", "seq2seq",
           "slim", "training"]
