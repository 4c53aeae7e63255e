"""``tf.contrib.training``: the ps placement strategies for ``tf.train.replica_device_setter``,
and the evaluator's wait for new checkpoints (``checkpoints_iterator``, ``wait_for_new_checkpoint``).

>>> import zps as tf
>>> from zps.contrib import training
>>> strategy = training.GreedyLoadBalancingStrategy(2, training.byte_size_load_fn)
>>> with tf.Graph().as_default():
...     with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
...         print(tf.Variable(tf.zeros([2, 2])).device)
/job:ps/task:0
"""

from zps.train.checkpoint_management import checkpoints_iterator, wait_for_new_checkpoint
from zps.train.device_setter import GreedyLoadBalancingStrategy, RandomStrategy, byte_size_load_fn

__all__ = ["GreedyLoadBalancingStrategy", "RandomStrategy", "byte_size_load_fn",
           "checkpoints_iterator", "wait_for_new_checkpoint"]
