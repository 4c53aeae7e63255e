"""``tf.keras.initializers``: TF1's initializers (zps/ops/init_ops.py) under Keras's names, with
Keras's defaults (``RandomNormal``/``RandomUniform``/``TruncatedNormal`` spread 0.05, as
tf.keras 1.x), and ``get`` for the names layers take (``kernel_initializer="he_normal"``).

>>> import zps as tf
>>> init = tf.keras.initializers.get("glorot_uniform")
>>> type(init).__name__, tf.keras.initializers.RandomNormal().stddev
('GlorotUniform', 0.05)
"""

from zps.framework import dtypes
from zps.ops import init_ops

Initializer = init_ops.Initializer
Zeros, Ones, Constant = init_ops.Zeros, init_ops.Ones, init_ops.Constant
VarianceScaling, Orthogonal, Identity = (init_ops.VarianceScaling, init_ops.Orthogonal,
                                         init_ops.Identity)
GlorotUniform, GlorotNormal = init_ops.GlorotUniform, init_ops.GlorotNormal


class RandomNormal(init_ops.RandomNormal):
    """Normal values, ``N(mean, stddev**2)``, stddev 0.05 by default (Keras's)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(mean, stddev, seed, dtype)


class RandomUniform(init_ops.RandomUniform):
    """Uniform values in ``[minval, maxval)``, ``[-0.05, 0.05)`` by default (Keras's)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(minval, maxval, seed, dtype)


class TruncatedNormal(init_ops.TruncatedNormal):
    """Truncated normal values, stddev 0.05 by default (Keras's)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=dtypes.float32):
        super().__init__(mean, stddev, seed, dtype)


he_normal, he_uniform = init_ops.he_normal, init_ops.he_uniform
lecun_normal, lecun_uniform = init_ops.lecun_normal, init_ops.lecun_uniform
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
orthogonal, identity = Orthogonal, Identity

_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": he_normal, "he_uniform": he_uniform,
    "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform, "orthogonal": Orthogonal,
    "identity": Identity, "random_normal": RandomNormal, "normal": RandomNormal,
    "random_uniform": RandomUniform, "uniform": RandomUniform,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling}
_BY_CLASS = {cls.__name__: cls for cls in (
    Zeros, Ones, Constant, GlorotUniform, GlorotNormal, Orthogonal, Identity, RandomNormal,
    RandomUniform, TruncatedNormal, VarianceScaling)}


def get(identifier):
    """An initializer from a name (``"glorot_uniform"``, ``"he_normal"``, ``"zeros"``...), a
    ``{"class_name", "config"}`` dict, an initializer or a callable (returned as is)."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = _BY_CLASS.get(identifier["class_name"])
        if cls is None:
            raise ValueError("Unknown initializer: %r (known: %s)"
                             % (identifier["class_name"], ", ".join(sorted(_BY_CLASS))))
        return cls(**identifier.get("config", {}))
    if isinstance(identifier, str):
        if identifier not in _BY_NAME and identifier not in _BY_CLASS:
            raise ValueError("Unknown initializer: %r. Give an initializer, a callable or one "
                             "of %s" % (identifier, ", ".join(sorted(_BY_NAME))))
        return _BY_NAME.get(identifier, _BY_CLASS.get(identifier))()
    raise ValueError("Could not interpret initializer identifier: %r" % (identifier,))


def serialize(initializer):
    """``{"class_name", "config"}`` of ``initializer``."""
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config, custom_objects=None):
    """The initializer a ``serialize`` dict (or a name) describes."""
    if custom_objects and isinstance(config, dict) and config.get("class_name") in custom_objects:
        return custom_objects[config["class_name"]](**config.get("config", {}))
    return get(config)


__all__ = ["Constant", "GlorotNormal", "GlorotUniform", "Identity", "Initializer", "Ones",
           "Orthogonal", "RandomNormal", "RandomUniform", "TruncatedNormal", "VarianceScaling",
           "Zeros", "constant", "deserialize", "get", "glorot_normal", "glorot_uniform", "he_normal",
           "he_uniform", "identity", "lecun_normal", "lecun_uniform", "ones", "orthogonal",
           "random_normal", "random_uniform", "serialize", "truncated_normal", "zeros"]
