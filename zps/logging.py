"""``tf.logging``: TF1's logging functions on Python's ``logging``, logger "tensorflow".

As in TF 1.15 the logger writes to stderr (``LEVEL:tensorflow:message``) when the root logger
has no handler, and shows WARN and above until ``set_verbosity`` says otherwise::

    import zps as tf
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("step %d, loss %.3f", 100, 0.25)
    for step in range(1000):
        tf.logging.log_every_n(tf.logging.INFO, "at step %d", 100, step)
"""

import logging as _logging
import sys as _sys
import threading as _threading

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_logger = None
_logger_lock = _threading.Lock()
_log_counter_per_token = {}


def _find_caller(stack_info=False, stacklevel=1):
    """The record's (file, line, function) are those of the code that called tf.logging, as in TF:
    skip the frames of this module and of Python's logging."""
    frame = _sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename in _OWN_FILES:
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, None


_OWN_FILES = {_find_caller.__code__.co_filename, _logging.Logger.log.__code__.co_filename}


def get_logger():
    """The "tensorflow" ``logging.Logger``: ``tf.get_logger().setLevel(tf.logging.ERROR)``."""
    global _logger
    with _logger_lock:
        if _logger is None:
            logger = _logging.getLogger("tensorflow")
            logger.findCaller = _find_caller
            if not _logging.getLogger().handlers:   # a configured root logger already prints
                interactive = hasattr(_sys, "ps1") or _sys.flags.interactive
                if interactive:
                    logger.setLevel(INFO)
                handler = _logging.StreamHandler(_sys.stdout if interactive else _sys.stderr)
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT, None))
                logger.addHandler(handler)
            _logger = logger
        return _logger


def log(level, msg, *args, **kwargs):
    """Log ``msg % args`` at ``level``: ``tf.logging.log(tf.logging.INFO, "x=%d", 3)``."""
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    """Log at DEBUG: ``tf.logging.debug("shape %s", shape)``."""
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    """Log at INFO: ``tf.logging.info("step %d", step)``."""
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    """Log at WARN: ``tf.logging.warning("slow step: %.1f s", dt)``."""
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    """Log at ERROR: ``tf.logging.error("lost task %s", task)``."""
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    """Log at FATAL (the program goes on, as in TF): ``tf.logging.fatal("giving up")``."""
    get_logger().fatal(msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    """Log at ``level`` (TF1's verbose log is a plain log): ``tf.logging.vlog(1, "detail")``."""
    get_logger().log(level, msg, *args, **kwargs)


def TaskLevelStatusMessage(msg):  # noqa: N802 - TF1's name
    """Log a task status message at ERROR, as TF does: ``TaskLevelStatusMessage("ready")``."""
    error(msg)


def flush():
    """Flush the handlers of the "tensorflow" logger: ``tf.logging.flush()``.

    (TF 1.15's raises NotImplementedError.)
    """
    for handler in get_logger().handlers:
        handler.flush()


def log_if(level, msg, condition, *args):
    """Log ``msg % args`` at ``level`` if ``condition``: ``log_if(INFO, "x=%d", x > 3, x)``."""
    if condition:
        vlog(level, msg, *args)


def _count_at_caller():
    """How many times this line of the caller's caller has asked before (0 the first time)."""
    frame = _sys._getframe(2)
    token = (frame.f_code.co_filename, frame.f_lineno)
    count = _log_counter_per_token.get(token, -1) + 1
    _log_counter_per_token[token] = count
    return count


def log_every_n(level, msg, n, *args):
    """Log on the 1st, (n+1)th, (2n+1)th ... call from this line:
    ``log_every_n(INFO, "step %d", 100, step)``."""
    log_if(level, msg, not _count_at_caller() % n, *args)


def log_first_n(level, msg, n, *args):
    """Log on the first ``n`` calls from this line: ``log_first_n(WARN, "odd input", 3)``."""
    log_if(level, msg, _count_at_caller() < n, *args)


def get_verbosity():
    """The effective level of the "tensorflow" logger: ``tf.logging.get_verbosity() == WARN``."""
    return get_logger().getEffectiveLevel()


def set_verbosity(v):
    """Show messages at ``v`` and above: ``tf.logging.set_verbosity(tf.logging.INFO)``."""
    get_logger().setLevel(v)

