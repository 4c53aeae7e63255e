"""``tf.keras.activations``: the activation functions Keras layers take by name, and ``get``
(a name, a callable or None -> a callable).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.Session().run(tf.keras.activations.get("relu")(tf.constant([-1.0, 2.0]))))
[0. 2.]
"""

from zps.ops import array_ops, layers_impl, math_ops, nn_ops


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """``max(x, 0)``; below ``threshold`` ``alpha * (x - threshold)``, capped at ``max_value``."""
    if alpha == 0 and max_value is None and threshold == 0:
        return nn_ops.relu(x)
    negative = alpha * (x - threshold) if alpha != 0 else None
    y = x * math_ops.cast(math_ops.greater(x, threshold), x.dtype)
    if max_value is not None:
        y = math_ops.minimum(y, math_ops.cast(max_value, x.dtype))
    return y if negative is None else array_ops.where(math_ops.greater(x, threshold), y,
                                                      negative)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return nn_ops.softmax(x, axis=axis)


def linear(x):
    """``x`` unchanged."""
    return x


def elu(x, alpha=1.0):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    y = nn_ops.elu(x)
    return y if alpha == 1 else array_ops.where(math_ops.greater(x, 0.0), y, alpha * y)


sigmoid, tanh, selu = math_ops.sigmoid, math_ops.tanh, nn_ops.selu
softplus, softsign, exponential = nn_ops.softplus, nn_ops.softsign, math_ops.exp
hard_sigmoid = layers_impl._hard_sigmoid   # clip(0.2 * x + 0.5, 0, 1), as tf.layers takes it

_OWN = {"relu": relu, "softmax": softmax, "linear": linear, "elu": elu}


def get(identifier):
    """The activation function ``identifier`` names (``"relu"``, ``"softmax"``...), or
    ``identifier`` itself when it is a callable; ``linear`` for None."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _OWN:
        return _OWN[identifier]
    return layers_impl._activation_fn(identifier)   # the names tf.layers knows; ValueError else


def serialize(activation):
    """The name of ``activation`` (a function of this module or tf.layers' table)."""
    for name, fn in list(_OWN.items()) + list(layers_impl._ACTIVATIONS.items()):
        if fn is activation:
            return name
    if getattr(activation, "__name__", None) in _OWN or \
            getattr(activation, "__name__", None) in layers_impl._ACTIVATIONS:
        return activation.__name__
    raise ValueError("Unknown activation function %r: serialize knows Keras's named "
                     "activations only" % (activation,))


def deserialize(name):
    """``get(name)``."""
    return get(name)


__all__ = ["deserialize", "elu", "exponential", "get", "hard_sigmoid", "linear", "relu", "selu",
           "serialize", "sigmoid", "softmax", "softplus", "softsign", "tanh"]
