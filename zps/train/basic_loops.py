"""``tf.train.basic_train_loop``: TF1's simplest training loop around a Supervisor.

>>> import tempfile, zps as tf
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     inc = tf.assign_add(step, 1)
...     sv = tf.train.Supervisor(logdir=tempfile.mkdtemp(), save_model_secs=0,
...                              save_summaries_secs=0)
...     seen = []
...     def train_step(sess, limit):
...         seen.append(int(sess.run(inc)))
...         if seen[-1] >= limit:
...             sv.request_stop()
...     tf.train.basic_train_loop(sv, train_step, args=(3,))
>>> seen
[1, 2, 3]
"""

import logging

from zps.framework import errors

_logger = logging.getLogger(__name__)


def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Run ``train_step_fn(sess, *args, **kwargs)`` in ``supervisor.managed_session(master)``
    until the supervisor should stop. An AbortedError (a ps task restarted, so the session's
    state is gone) opens a new managed session and goes on, as TF1's loop does; other errors
    end the loop and are raised."""
    args = list(args or [])
    kwargs = dict(kwargs or {})
    should_retry = True
    while should_retry:
        should_retry = False
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
        except errors.AbortedError as e:
            _logger.warning("basic_train_loop: a session was aborted (%s); starting a new one", e)
            should_retry = True


__all__ = ["basic_train_loop"]
