"""``tf.keras.backend`` as TF1's graph-mode Keras has it: the learning phase (a bool
``placeholder_with_default(False)`` per graph, or a value fixed by ``set_learning_phase``), the
per-graph counters that name layers (``dense``, ``dense_1``...), ``floatx``/``epsilon`` and a
few aliases of tf ops.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.keras.backend.learning_phase().op.name, tf.keras.backend.floatx())
keras_learning_phase float32
"""

import weakref

from zps.framework import default_session
from zps.framework.graph import GraphKeys, get_default_graph, reset_default_graph
from zps.ops import array_ops, math_ops, nn_ops

_FLOATX = ["float32"]
_EPSILON = [1e-7]
_SESSION = [None]    # the session get_session made (TF1 Keras's _SESSION)
_GRAPH_STATE = weakref.WeakKeyDictionary()   # graph -> {"uids": {}, "names": {}, "phase": ...}


def _state():
    return _state_of(get_default_graph())


def _state_of(graph):
    return _GRAPH_STATE.setdefault(graph, {"uids": {}, "names": {}})


def get_uid(prefix=""):
    """1, 2, 3... for each call with ``prefix`` in the default graph."""
    uids = _state()["uids"]
    uids[prefix] = uids.get(prefix, 0) + 1
    return uids[prefix]


def reset_uids():
    """Forget the default graph's name counters."""
    _state()["uids"].clear()
    _state()["names"].clear()


def unique_object_name(name, zero_based=True):
    """``name``, then ``name_1``, ``name_2``... in the default graph (Keras's layer names)."""
    names = _state()["names"]
    count = names.get(name, 0)
    names[name] = count + 1
    if zero_based:
        return name if count == 0 else "%s_%d" % (name, count)
    return "%s_%d" % (name, count + 1)


def learning_phase():
    """The default graph's learning phase: the value ``set_learning_phase`` gave (0 or 1), else
    the bool tensor ``keras_learning_phase`` (False unless fed: inference)."""
    state = _state()
    if "phase" not in state:
        graph = get_default_graph()
        with graph.name_scope(None), graph.control_dependencies(None):
            state["phase"] = array_ops.placeholder_with_default(False, shape=[],
                                                                name="keras_learning_phase")
    return state["phase"]


def set_learning_phase(value):
    """Fix the default graph's learning phase: 0 (inference) or 1 (training)."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1, got %r" % (value,))
    _state()["phase"] = value


def clear_session():
    """Reset the default graph (and with it the layer name counters and the learning phase)
    and close the session ``get_session`` made."""
    if _SESSION[0] is not None:
        _SESSION[0].close()
        _SESSION[0] = None
    reset_default_graph()


def get_session():
    """The session Keras runs in (TF1's): the default session if there is one, else a session
    over the default graph made once (and kept until ``clear_session``); the graph's variables
    not yet initialized are initialized in it first."""
    session = default_session.get()
    if session is None:
        session = _SESSION[0]
        if session is None or session.graph is not get_default_graph() or session._closed:
            from zps.client.session import Session
            session = _SESSION[0] = Session(graph=get_default_graph())
    _initialize_variables(session)
    return session


def _initialize_variables(session):
    # Each variable is checked once (as TF's Keras): those a user initialized are left alone.
    from zps.ops import variables
    graph = session.graph
    checked = session.__dict__.setdefault("_keras_checked", set())
    new = [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES) if v.name not in checked]
    if not new:
        return
    with graph.as_default():
        flags = session.run([variables.is_variable_initialized(v) for v in new])
        missing = [v for v, initialized in zip(new, flags) if not initialized]
        if missing:
            session.run(variables.variables_initializer(missing))
    checked.update(v.name for v in new)


def floatx():
    """The default float type's name: ``"float32"``."""
    return _FLOATX[0]


def set_floatx(value):
    """Set the default float type (``"float16"``, ``"float32"`` or ``"float64"``)."""
    if value not in ("float16", "float32", "float64"):
        raise ValueError("Unknown floatx type: %r (give float16, float32 or float64)" % (value,))
    _FLOATX[0] = value


def epsilon():
    """The fuzz factor of Keras's losses: 1e-7."""
    return _EPSILON[0]


def set_epsilon(value):
    """Set the fuzz factor ``epsilon()`` gives."""
    _EPSILON[0] = value


def image_data_format():
    """``"channels_last"``: the only layout zps's layers take."""
    return "channels_last"


def int_shape(x):
    """The static shape of tensor ``x`` as a tuple of ints and Nones (None for unknown rank)."""
    shape = x.get_shape()
    return None if shape.ndims is None else tuple(shape.as_list())


def ndim(x):
    """The rank of ``x`` (None when unknown)."""
    return x.get_shape().ndims


def _reduction(fn):
    def reduce(x, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims)
    reduce.__doc__ = "``tf.%s(x, axis, keepdims)``." % fn.__name__
    return reduce


mean, sum, max, min = (_reduction(f) for f in (  # noqa: A001 - Keras's names
    math_ops.reduce_mean, math_ops.reduce_sum, math_ops.reduce_max, math_ops.reduce_min))
square, sqrt, exp, log, abs = (math_ops.square, math_ops.sqrt, math_ops.exp,  # noqa: A001
                               math_ops.log, math_ops.abs)
sigmoid, tanh, relu, softmax = math_ops.sigmoid, math_ops.tanh, nn_ops.relu, nn_ops.softmax
cast, reshape, shape, transpose = (math_ops.cast, array_ops.reshape, array_ops.shape,
                                  array_ops.transpose)


def concatenate(tensors, axis=-1):
    """``tf.concat(tensors, axis)``."""
    return array_ops.concat(list(tensors), axis)


__all__ = ["abs", "cast", "clear_session", "concatenate", "epsilon", "exp", "floatx",
           "get_session", "get_uid", "image_data_format", "int_shape", "learning_phase", "log",
           "max", "mean", "min", "ndim", "relu", "reset_uids", "reshape", "set_epsilon",
           "set_floatx", "set_learning_phase", "shape", "sigmoid", "softmax", "sqrt", "square",
           "sum", "tanh", "transpose", "unique_object_name"]
