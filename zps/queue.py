"""``tf.queue``: the queues of zps/ops/data_flow_ops.py under TF 1.13+'s namespace (zps has no
PriorityQueue).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     q = tf.queue.FIFOQueue(2, tf.int32, shapes=[[]])
...     with tf.Session() as sess:
...         sess.run(q.enqueue_many([[4, 5]]))
...         print(sess.run(q.dequeue()), sess.run(q.size()))
4 1
"""

from zps.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue"]
