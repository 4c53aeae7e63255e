"""``tf.contrib.training``: the ps placement strategies for ``tf.train.replica_device_setter``.

>>> import zps as tf
>>> from zps.contrib import training
>>> strategy = training.GreedyLoadBalancingStrategy(2, training.byte_size_load_fn)
>>> with tf.Graph().as_default():
...     with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
...         print(tf.Variable(tf.zeros([2, 2])).device)
/job:ps/task:0
"""

from zps.train.device_setter import GreedyLoadBalancingStrategy, RandomStrategy, byte_size_load_fn

__all__ = ["GreedyLoadBalancingStrategy", "RandomStrategy", "byte_size_load_fn"]
