"""``tf.bitwise``: TF 1.15's bitwise ops on integers.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.Session().run(tf.bitwise.left_shift([1, 3], [4, 1])).tolist())
[16, 6]
"""

from zps.ops.bitwise_ops import *  # noqa: F403
