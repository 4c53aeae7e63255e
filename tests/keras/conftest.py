"""Every Keras test builds in a fresh default graph and leaves Keras's backend state (session,
layer-name counters) cleared behind it."""

import pytest

import zps as tf
from zps import keras


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g
    keras.backend.clear_session()
