"""``tf.py_func``: a Python function as a graph op (TF1's script ops).

The function runs in the process that owns the op, on numpy arrays, with TF1's semantics: it
gets one array per input, returns one value per ``Tout`` entry, and each returned value must
have exactly the dtype ``Tout`` names. The op records only a token (plain data); the function
stays in this process's registry, as in TF1.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     x = tf.constant([1.0, 2.0])
...     y = py_func(lambda a: (a * 10).astype(np.float32), [x], tf.float32)
...     print(tf.Session().run(y))
[10. 20.]

Shipping the function to another task (a ``py_func`` placed on a ps, or a session on a remote
master) means pickling it (cloudpickle), and zps never unpickles what comes from the network by
default: a graph carrying a function is sent only from a process whose cluster is
CURVE-authenticated or that set ``ZPS_ALLOW_PICKLE=1``, and a server unpickles it only under the
same condition (see zps.transport.security). Otherwise the step fails with PermissionDeniedError
naming the op and the two ways to allow it. Functions defined in ``__main__`` travel by value;
functions of modules travel by reference (the receiving task must be able to import them).
"""

import itertools
import os
import pickle
import uuid
import weakref

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.serialization import register_callable_codec
from zps.framework.tensor_shape import unknown_shape
from zps.ops.op_util import make_op
from zps.transport import security

__all__ = ["py_func"]

_functions = {}           # token -> the Python callable of the py_func ops using it
_counter = itertools.count()
_TYPES = ("PyFunc", "PyFuncStateless")

ENABLE_HINT = ("enable CURVE authentication for the cluster (zps keygen; %s=<cluster.key_secret> "
               "for every task, or zps-launch --curve), or opt in to pickles on a trusted network "
               "with %s=1 on both this process and the receiving task"
               % (security.SECRET_KEY_ENV, security.ALLOW_PICKLE_ENV))

# TF1's mapping of the function's exceptions to OpErrors (script_ops.cc).
_ERROR_CLASSES = ((ValueError, errors.InvalidArgumentError), (TypeError, errors.InvalidArgumentError),
                  (StopIteration, errors.OutOfRangeError), (MemoryError, errors.ResourceExhaustedError),
                  (NotImplementedError, errors.UnimplementedError))


# -- PyFunc / PyFuncStateless -----------------------------------------------------------------
def _outputs(value, n, token):
    """The function's result as a list of ``n`` values (TF1: a list/tuple, or one value)."""
    if n == 0:
        return []
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise errors.InvalidArgumentError(
                None, None, "%s returns %d values, but expects to see %d values."
                % (token, len(value), n))
        return list(value)
    if n != 1:
        raise errors.InvalidArgumentError(
            None, None, "%s returns 1 value, but expects to see %d values (return a list or tuple)"
            % (token, n))
    return [value]


def _convert(i, value, dtype, token):
    if dtype is _dtypes.string:
        arr = np.asarray(value, dtype=object if not isinstance(value, np.ndarray) else None)
        if arr.dtype.kind in ("S", "U", "O"):
            out = np.empty(arr.shape, dtype=object)
            out.ravel()[:] = [s.encode() if isinstance(s, str) else s for s in arr.ravel().tolist()]
            if all(isinstance(s, bytes) for s in out.ravel()):
                return out
    else:
        arr = np.asarray(value)
        if arr.dtype == np.dtype(dtype.as_numpy_dtype):
            return arr
    got = "object" if arr.dtype == object else _dtypes.as_dtype(arr.dtype).name \
        if arr.dtype.kind in "biufc" else str(arr.dtype)
    raise errors.InvalidArgumentError(
        None, None, "%d-th value returned by %s is %s, but expects %s (convert it, e.g. "
        "np.asarray(value, np.%s))" % (i, token, got, dtype.name,
                                       "object" if dtype is _dtypes.string else dtype.name))


def _py_func_kernel(ctx, *args, token, Tin, Tout):  # noqa: N803 - TF1's attr names
    func = _functions.get(token)
    if func is None:
        raise errors.NotFoundError(
            None, None, "The Python function of this py_func (token %r) is not registered in "
            "process %d: a py_func runs in the process that built it, or on a task it was "
            "shipped to (%s)" % (token, os.getpid(), ENABLE_HINT))
    try:
        result = func(*args)
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - mapped to TF1's OpError classes
        cls = next((c for t, c in _ERROR_CLASSES if isinstance(e, t)), errors.UnknownError)
        raise cls(None, None, "%s: %s raised %s: %s" % (token, getattr(func, "__name__", "func"),
                                                        type(e).__name__, e)) from e
    values = _outputs(result, len(Tout), token)
    out = [_convert(i, v, dt, token) for i, (v, dt) in enumerate(zip(values, Tout))]
    if not out:
        return None
    return out[0] if len(out) == 1 else out


def _out_dtypes(op):
    return list(op._attrs["Tout"])


def _out_shapes(op):
    return [unknown_shape() for _ in op._attrs["Tout"]]


for _type in _TYPES:
    register_op(_type, dtype=_out_dtypes, shape=_out_shapes, kernel=_py_func_kernel,
                stateful=_type == "PyFunc", grad=None)


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TF1's signature
    """Wrap the Python function ``func`` as an op: ``func(*numpy inputs)`` runs when the op runs.

    ``inp``: a list of tensors (or values); ``Tout``: one DType (the op returns one tensor) or a
    list of DTypes (it returns a list; an empty list returns the Operation). ``stateful=False``
    declares that the same inputs always give the same outputs. The outputs' shapes are unknown
    (use ``set_shape``). There is no gradient, as in TF1.

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     a, b = py_func(lambda x: (x, x * 2), [np.int64(3)], [tf.int64, tf.int64])
    ...     print([int(v) for v in tf.Session().run([a, b])])
    [3, 6]
    """
    if not callable(func):
        raise TypeError("py_func expects a callable, got %r" % (func,))
    single = not isinstance(Tout, list | tuple)
    tout = [_dtypes.as_dtype(Tout)] if single else [_dtypes.as_dtype(t) for t in Tout]
    if not isinstance(inp, list | tuple):
        inp = [inp]
    graph = get_default_graph()
    inputs = [convert_to_tensor(x) for x in inp]
    # Unique across processes: a token shipped to a server cannot collide with another client's.
    token = "pyfunc_%d_%s" % (next(_counter), uuid.uuid4().hex[:16])
    _functions[token] = func
    result = make_op("PyFunc" if stateful else "PyFuncStateless", inputs,
                     name=name or "PyFunc", num_outputs=len(tout), token=token,
                     Tin=[t.dtype.base_dtype for t in inputs], Tout=tout)
    # The function lives as long as the graph that uses it (TF1 keeps it per graph too).
    target = inputs[0].graph if inputs else graph
    weakref.finalize(target, _functions.pop, token, None)
    if single:
        return result[0]
    return result


# -- shipping the function with a graph (only where pickles may travel) ------------------------
def _pack(op):
    if not security.pickle_allowed():
        raise errors.PermissionDeniedError(
            op.name, op, "Cannot send py_func op '%s' (device '%s') to another task: its Python "
            "function would travel pickled, and pickles travel only within an authenticated "
            "cluster. To allow it, %s." % (op.name, op.device or "unplaced", ENABLE_HINT))
    token = op._attrs["token"]
    func = _functions.get(token)
    if func is None:
        raise errors.NotFoundError(op.name, op, "The Python function of py_func op '%s' is not "
                                   "registered in this process (token %r)" % (op.name, token))
    import cloudpickle
    try:
        return cloudpickle.dumps(func)
    except Exception as e:  # noqa: BLE001 - any pickling failure names the op
        raise ValueError("Cannot send py_func op '%s' to another task: its function cannot be "
                         "pickled: %s: %s" % (op.name, type(e).__name__, e)) from None


def _unpack(node_name, attrs, blob):
    if not security.pickle_allowed():
        raise errors.PermissionDeniedError(
            node_name, None, "Refusing to unpickle the Python function of py_func op '%s' received "
            "from the network: this task accepts pickled functions only when its cluster is "
            "CURVE-authenticated or it was started with %s=1 (zps-ps --allow_pickle)"
            % (node_name, security.ALLOW_PICKLE_ENV))
    token = attrs.get("token")
    if not isinstance(token, str) or not token.startswith("pyfunc_"):
        raise ValueError("py_func node has no valid token attr: %r" % (token,))
    try:
        func = pickle.loads(blob)   # cloudpickle's output loads with pickle (cloudpickle installed)
    except Exception as e:  # noqa: BLE001 - e.g. a module the sender's function needs is missing
        raise ValueError("cannot unpickle the Python function of py_func op %r: %s: %s"
                         % (node_name, type(e).__name__, e)) from None
    if not callable(func):
        raise ValueError("the pickled function of py_func op %r is a %s, not a callable"
                         % (node_name, type(func).__name__))
    _functions[token] = func


for _type in _TYPES:
    register_callable_codec(_type, _pack, _unpack)
