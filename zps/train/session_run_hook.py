"""SessionRunHook: code that runs around every ``MonitoredSession.run`` call (TF1's interface).

A hook's methods are called in this order::

    begin()                                 # once; the graph may still be changed
    after_create_session(session, coord)    # each time a session is (re)created
    before_run(run_context) -> SessionRunArgs or None
    after_run(run_context, run_values)      # around every run call
    end(session)                            # once, when the monitored session closes cleanly

>>> import zps as tf
>>> class CountRuns(tf.train.SessionRunHook):
...     def begin(self):
...         self.runs = 0
...     def after_run(self, run_context, run_values):
...         self.runs += 1
...         if self.runs == 3:
...             run_context.request_stop()
>>> with tf.Graph().as_default():
...     x = tf.constant(1.0)
...     hook = CountRuns()
...     with tf.train.MonitoredSession(hooks=[hook]) as sess:
...         while not sess.should_stop():
...             _ = sess.run(x)
>>> hook.runs
3
"""

import collections


class SessionRunHook:
    """Base class for hooks; every method is an optional no-op."""

    def begin(self):
        """Called once before the session is used; the graph can still be extended here."""

    def after_create_session(self, session, coord):
        """Called when a new session has been created and initialized (also after recovery)."""

    def before_run(self, run_context):
        """Called before each run; may return a ``SessionRunArgs`` to fetch or feed more."""
        return None

    def after_run(self, run_context, run_values):
        """Called after each run with the values of what ``before_run`` asked for."""

    def end(self, session):
        """Called once at the end of a session that was not closed by an exception."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run call: ``fetches`` (any fetch structure), ``feed_dict``, ``options``."""

    __slots__ = ()

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run call a hook is called around: its arguments, its session, and a stop request."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        """The ``SessionRunArgs`` of the caller's run call (without the hooks' additions)."""
        return self._original_args

    @property
    def session(self):
        """The raw session: runs made with it do not call the hooks."""
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        """Ask the monitored session to stop: ``should_stop()`` becomes True after this run."""
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """What a hook receives after a run: ``results`` has the structure of its fetches."""

    __slots__ = ()


__all__ = [
    "SessionRunHook",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunValues",
]
