"""The per-thread default session used by ``Tensor.eval()`` and ``Operation.run()``
(``tf.get_default_session()``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     sess = tf.Session()
...     with sess.as_default():
...         print(tf.get_default_session() is sess)
...     print(tf.get_default_session())
True
None
"""

import threading

_local = threading.local()


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def get():
    """The innermost session made default with ``sess.as_default()`` in this thread, or None."""
    s = _stack()
    return s[-1] if s else None


def get_default_session():
    """TF1's ``tf.get_default_session()``: the innermost session made default in this thread
    (``with sess.as_default():`` or ``with tf.Session() as sess:``), or None."""
    return get()


def push(session):
    _stack().append(session)


def pop(session):
    s = _stack()
    if s and s[-1] is session:
        s.pop()
    elif session in s:
        s.remove(session)
