"""``tf.keras`` as TF 1.13-1.15 graph-mode programs use it (in model functions, estimators and
MonitoredTrainingSession loops): layers (zps/keras/layers.py, on tf.layers'), ``Sequential`` and
functional ``Model`` containers (models.py), ``activations``, ``initializers``,
``regularizers``, ``losses`` and ``backend``. Keras's training loop (``compile``/``fit``) and
optimizers are not implemented: train with ``tf.train``'s optimizers.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.keras.Input((2,))
...     y = tf.keras.layers.Dense(1, kernel_initializer="ones")(x)
...     model = tf.keras.Model(x, y)
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         print(sess.run(model(tf.constant([[1.0, 2.0]]))))
[[3.]]
"""

from zps.keras import activations, backend, initializers, layers, losses, models, regularizers  # noqa: F401 - tf.keras's namespaces
from zps.keras.engine import Input
from zps.keras.models import Model, Sequential

__all__ = ["Input", "Model", "Sequential"]
