"""``tf.contrib``: the TF1 contrib names that zps programs use (aliases of core functions)."""

from zps.contrib import framework, training

__all__ = ["framework", "training"]
