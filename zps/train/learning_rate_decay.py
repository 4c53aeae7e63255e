"""Learning-rate schedules driven by the global step.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     step = tf.Variable(20, dtype=tf.int64, trainable=False)
...     lr = tf.train.exponential_decay(0.1, step, decay_steps=10, decay_rate=0.5)
...     with tf.Session() as sess:
...         sess.run(step.initializer)
...         print(round(float(sess.run(lr)), 6))
0.025
"""

from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.ops import math_ops


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` (floored if ``staircase``)."""
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    graph = get_default_graph()
    with graph.name_scope(name or "ExponentialDecay") as scope:
        learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = learning_rate.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        decay_rate = math_ops.cast(decay_rate, dtype)
        p = math_ops.cast(global_step, dtype) / decay_steps
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(learning_rate, math_ops.pow(decay_rate, p), name=scope)


__all__ = ["exponential_decay"]
