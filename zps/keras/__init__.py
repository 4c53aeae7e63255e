"""``tf.keras`` as TF 1.13-1.15 graph-mode programs use it (in model functions, estimators and
MonitoredTrainingSession loops): layers (zps/keras/layers.py, on tf.layers'), ``Sequential`` and
functional ``Model`` containers (models.py) with Keras's training loop (``compile``/``fit``/
``evaluate``/``predict`` on numpy arrays or ``tf.data`` datasets, training.py; on the replicas of
a ``tf.distribute`` strategy, training_distributed.py), ``optimizers`` (Keras's update rules),
``activations``, ``initializers``, ``regularizers``, ``losses`` and ``backend``; ``callbacks``
(callbacks.py), whole-model saving (saving.py: ``models.load_model``) and ``utils``.

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

from zps.keras import (  # noqa: F401 - tf.keras's namespaces
    activations,
    backend,
    callbacks,
    initializers,
    layers,
    losses,
    metrics,
    models,
    optimizers,
    regularizers,
    utils,
)
from zps.keras.engine import Input
from zps.keras.models import Model, Sequential

__all__ = ["Input", "Model", "Sequential"]
