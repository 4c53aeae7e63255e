"""``tf.contrib``: the TF1 contrib names that zps programs use (aliases of core functions), plus
``tf.contrib.embedding``: growable hash embedding tables."""

from zps.contrib import embedding, framework, training

__all__ = ["embedding", "framework", "training"]
