"""``tf.contrib.distribute``: TF 1.15's ``DistributeConfig``, the strategies of
``tf.estimator.RunConfig(experimental_distribute=...)``. The strategies themselves are
``tf.distribute``'s (TF 1.15's contrib variants of them are not in zps).

>>> import zps as tf
>>> s = tf.distribute.OneDeviceStrategy("/cpu:0")
>>> config = tf.estimator.RunConfig(
...     experimental_distribute=tf.contrib.distribute.DistributeConfig(train_distribute=s))
>>> config.train_distribute is s, config.eval_distribute
(True, None)
"""

from zps.estimator.run_config import DistributeConfig

__all__ = ["DistributeConfig"]
