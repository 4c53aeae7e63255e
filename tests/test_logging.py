"""tf.logging: TF 1.15's functions on the "tensorflow" logger of Python's logging."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zps as tf

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def records(caplog):
    """The records of the "tensorflow" logger, at every level; the verbosity is restored after."""
    before = tf.logging.get_logger().level
    tf.logging.set_verbosity(tf.logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="tensorflow")
    yield lambda: [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    tf.logging.set_verbosity(before)


def test_levels_and_logger():
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR,
            tf.logging.FATAL) == (10, 20, 30, 40, 50)
    assert tf.logging.get_logger() is logging.getLogger("tensorflow") is tf.get_logger()


def test_set_and_get_verbosity():
    before = tf.logging.get_logger().level
    try:
        tf.logging.set_verbosity(tf.logging.ERROR)
        assert tf.logging.get_verbosity() == tf.logging.ERROR
        tf.logging.set_verbosity(tf.logging.INFO)
        assert tf.logging.get_verbosity() == logging.INFO
    finally:
        tf.logging.set_verbosity(before)


def test_each_function_logs_at_its_level(records):
    tf.logging.debug("d %d", 1)
    tf.logging.info("i %s", "x")
    tf.logging.warn("w")
    tf.logging.warning("w2")
    tf.logging.error("e")
    tf.logging.fatal("f")          # logs only: the program goes on, as in TF
    tf.logging.log(tf.logging.INFO, "l %d", 2)
    tf.logging.vlog(tf.logging.WARN, "v")
    tf.logging.log_if(tf.logging.INFO, "yes %d", True, 3)
    tf.logging.log_if(tf.logging.INFO, "no", False)
    tf.logging.TaskLevelStatusMessage("status")
    tf.logging.flush()
    assert records() == [("tensorflow", 10, "d 1"), ("tensorflow", 20, "i x"),
                         ("tensorflow", 30, "w"), ("tensorflow", 30, "w2"),
                         ("tensorflow", 40, "e"), ("tensorflow", 50, "f"),
                         ("tensorflow", 20, "l 2"), ("tensorflow", 30, "v"),
                         ("tensorflow", 20, "yes 3"), ("tensorflow", 40, "status")]


def test_records_name_the_calling_line(caplog):
    caplog.set_level(logging.WARN, logger="tensorflow")
    tf.logging.warn("here")
    tf.logging.log_first_n(tf.logging.WARN, "and here", 1)
    line = sys._getframe().f_lineno
    assert [(r.filename, r.lineno, r.funcName) for r in caplog.records] == [
        ("test_logging.py", line - 2, "test_records_name_the_calling_line"),
        ("test_logging.py", line - 1, "test_records_name_the_calling_line")]


def test_log_every_n_and_first_n_count_per_line(records):
    for i in range(10):
        tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)
        tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    for i in range(2):
        tf.logging.log_first_n(tf.logging.INFO, "other line %d", 1, i)
    assert [m for _, _, m in records()] == [
        "every 0", "first 0", "first 1", "every 3", "every 6", "every 9", "other line 0"]


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_default_handler_writes_warnings_to_stderr():
    proc = _run("import zps as tf\n"
                "tf.logging.info('hidden'); tf.logging.warn('shown %d', 1)\n"
                "tf.logging.set_verbosity(tf.logging.INFO); tf.logging.info('now shown')\n")
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr == "WARNING:tensorflow:shown 1\nINFO:tensorflow:now shown\n"


def test_a_configured_root_logger_gets_no_second_handler():
    proc = _run("import logging, zps as tf\n"
                "logging.basicConfig(format='%(name)s|%(message)s')\n"
                "tf.logging.warn('once')\n")
    assert proc.stderr == "tensorflow|once\n"
