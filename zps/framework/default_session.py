"""The per-thread default session used by ``Tensor.eval()`` and ``Operation.run()``."""

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


def push(session):
    _stack().append(session)


def pop(session):
    s = _stack()
    if s and s[-1] is session:
        s.pop()
    elif session in s:
        s.remove(session)
