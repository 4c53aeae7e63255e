"""``tf.keras.regularizers``: ``l1``/``l2``/``l1_l2`` (0.01 by default, as Keras's functions),
the ``L1L2`` class and ``get``; a regularizer maps a weight to the scalar loss
``l1 * sum(|w|) + l2 * sum(w**2)`` that goes to the layer's ``losses``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.Session().run(tf.keras.regularizers.l2(0.5)(tf.constant([1.0, 2.0]))))
2.5
"""

import numpy as np

from zps.ops import math_ops


class Regularizer:
    """The base of Keras regularizers: ``regularizer(weight)`` -> a scalar loss."""

    def __call__(self, x):
        return 0.0

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)`` (terms with a factor of 0 left out)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(np.float32(l1)), float(np.float32(l2))   # Keras keeps float32s

    def __call__(self, x):
        loss = None
        if self.l1:
            loss = self.l1 * math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            term = self.l2 * math_ops.reduce_sum(math_ops.square(x))
            loss = term if loss is None else loss + term
        return math_ops.cast(0.0, x.dtype) if loss is None else loss

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


def l1(l=0.01):  # noqa: E741 - Keras's argument name
    """``l * sum(|x|)``."""
    return L1L2(l1=l)


def l2(l=0.01):  # noqa: E741
    """``l * sum(x**2)``."""
    return L1L2(l2=l)


def l1_l2(l1=0.01, l2=0.01):  # noqa: F811 - Keras's argument names
    """``l1 * sum(|x|) + l2 * sum(x**2)``."""
    return L1L2(l1=l1, l2=l2)


def get(identifier):
    """A regularizer from None, a callable, a name (``"l1"``, ``"l2"``, ``"l1_l2"``) or a
    ``{"class_name", "config"}`` dict."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in ("l1", "l2", "l1_l2"):
        return globals()[identifier]()
    if isinstance(identifier, dict) and identifier.get("class_name") == "L1L2":
        return L1L2(**identifier.get("config", {}))
    raise ValueError("Could not interpret regularizer identifier: %r (give a callable, 'l1', "
                     "'l2', 'l1_l2' or tf.keras.regularizers.l2(...))" % (identifier,))


def serialize(regularizer):
    """``{"class_name", "config"}`` of ``regularizer``."""
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


def deserialize(config, custom_objects=None):
    """The regularizer a ``serialize`` dict (or a name) describes."""
    if custom_objects and isinstance(config, dict) and config.get("class_name") in custom_objects:
        return custom_objects[config["class_name"]].from_config(config.get("config", {}))
    return get(config)


__all__ = ["L1L2", "Regularizer", "deserialize", "get", "l1", "l1_l2", "l2", "serialize"]
