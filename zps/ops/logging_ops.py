"""Debugging ops: ``tf.Assert``, ``tf.Print``, ``tf.check_numerics`` and TF1's ``assert_*`` checks.

A check that can be decided while the graph is built is decided then, as TF1 does: a wrong static
rank raises ValueError, a wrong dtype TypeError, and a binary assert on two constants that fails
raises InvalidArgumentError at once. Otherwise the check is an ``Assert`` op, which raises
InvalidArgumentError ``assertion failed: [...] [...]`` when it runs with a false condition. Add
it as a control dependency of what must not run unchecked (an ``Assert`` has no outputs).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32)
...     with tf.control_dependencies([tf.assert_positive(x)]):
...         y = tf.log(x)
...     sess = tf.Session()
...     print(float(sess.run(y, {x: 1.0})))
...     try:
...         sess.run(y, {x: -1.0})
...     except tf.errors.InvalidArgumentError as e:
...         print(e.message)
0.0
assertion failed: [] [Condition x > 0 did not hold element-wise:] [x (Placeholder:0) = ] [-1]
"""

import pprint
import re
import sys

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.ops import array_ops, control_flow_ops, math_ops
from zps.ops.op_util import make_op, same_shape

_NUMERIC = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int8, _dtypes.int16,
            _dtypes.int32, _dtypes.int64, _dtypes.uint8, _dtypes.uint16, _dtypes.uint32,
            _dtypes.uint64, _dtypes.complex64, _dtypes.complex128)
_FLOATS = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


# -- TF's Tensor::SummarizeValue -------------------------------------------------------------------
def _element(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.bool_ | bool):
        return "1" if v else "0"
    if isinstance(v, np.floating):
        # The shortest of TF's two precisions that reads back as the same value.
        short, full = (6, 9) if v.dtype.itemsize <= 4 else (15, 17)
        text = "%.*g" % (short, v)
        return text if type(v)(text) == v else "%.*g" % (full, v)
    return str(v)


def _summarize(value, limit):
    """``value`` as TF prints it in Assert and Print messages: its first ``limit`` elements
    (all when negative), nested in brackets by dimension, ``...`` where some were left out."""
    value = np.asarray(value)
    flat = value.reshape(-1)
    limit = flat.size if limit < 0 else min(limit, flat.size)
    if value.ndim == 0:
        return " ".join(_element(v) for v in flat[:limit])
    parts = []
    index = [0]

    def one_dim(dim):
        if index[0] >= limit:
            return
        if dim == value.ndim - 1:
            for i in range(value.shape[dim]):
                if index[0] >= limit:
                    if dim:
                        parts.append("...")
                    return
                parts.append((" " if i else "") + _element(flat[index[0]]))
                index[0] += 1
            return
        for _ in range(value.shape[dim]):
            opened = index[0] < limit
            if opened:
                parts.append("[")
            one_dim(dim + 1)
            if opened or index[0] < limit:
                parts.append("]")

    one_dim(0)
    return "".join(parts) + ("..." if flat.size > limit else "")


# -- Assert ----------------------------------------------------------------------------------------
def _assert_kernel(ctx, condition, *data, summarize):
    if not bool(np.all(condition)):
        raise errors.InvalidArgumentError(None, None, "assertion failed: " + " ".join(
            "[%s]" % _summarize(d, summarize) for d in data))


register_op("Assert", kernel=_assert_kernel, num_outputs=0, stateful=True, grad=None)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF1's public name
    """An op that raises InvalidArgumentError, printing ``data``, when ``condition`` is false.

    Each tensor of ``data`` shows its first ``summarize`` (default 3) elements.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.constant([1, -2, 3, 4])
    ...     check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive", x])
    ...     try:
    ...         tf.Session().run(check)
    ...     except tf.errors.InvalidArgumentError as e:
    ...         print(e.message)
    assertion failed: [x must be positive] [1 -2 3...]
    """
    with get_default_graph().name_scope(name or "Assert"):
        condition = convert_to_tensor(condition, name="Condition")
        if condition.dtype != _dtypes.bool:
            raise TypeError("Assert: condition must be a bool tensor, got %s (%s)"
                            % (condition.dtype.name, condition.name))
        data = [convert_to_tensor(d) for d in data]
        return make_op("Assert", [condition] + data, name="Assert",
                       summarize=3 if summarize is None else int(summarize))


# -- Print -----------------------------------------------------------------------------------------
class _PrintCount:
    """How many times one Print op has printed (for ``first_n``), per task."""

    def __init__(self):
        self.count = 0


def _print_kernel(ctx, input_, *data, message, first_n, summarize, op_name):
    if first_n >= 0:
        counter = ctx.resources.lookup_or_create("PrintCount", op_name, _PrintCount)
        if counter.count >= first_n:
            return input_
        counter.count += 1
    sys.stderr.write(message + "".join("[%s]" % _summarize(d, summarize) for d in data)
                     + "\n")
    sys.stderr.flush()
    return input_


register_op("Print", shape=same_shape, kernel=_print_kernel, stateful=True, needs_op_name=True,
            aliases_input=True,
            grad=lambda op, grad: [grad] + [None] * (len(op.inputs) - 1))


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """``input_``, unchanged; when it runs, writes ``message`` and ``data`` to stderr.

    ``first_n`` limits the printing to the first n runs; ``summarize`` (default 3) is how many
    elements of each tensor are shown.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.constant([1.0, 2.0])
    ...     y = tf.Print(x, [x], "x: ")   # writes "x: [1 2]" to stderr
    ...     print(tf.Session().run(y).tolist())
    [1.0, 2.0]
    """
    input_ = convert_to_tensor(input_)
    data = [convert_to_tensor(d) for d in data]
    return make_op("Print", [input_] + data, name=name or "Print", message=message or "",
                   first_n=-1 if first_n is None else int(first_n),
                   summarize=3 if summarize is None else int(summarize))


# -- PrintV2 (tf.print) ----------------------------------------------------------------------------
def _element_v2(v):
    return '"%s"' % _element(v) if isinstance(v, bytes) else _element(v)


def _summarize_v2(value, summarize):
    """``value`` as ``tf.print`` shows it: numpy-like nested brackets, each dimension longer
    than ``2 * summarize`` cut to its first and last ``summarize`` entries around ``...``."""
    value = np.asarray(value)
    if value.ndim == 0:
        return _element_v2(value[()])
    ends = value.size if summarize < 0 else summarize

    def spacing(dim):
        return " " if dim == value.ndim - 1 else "\n" * (value.ndim - dim - 1) + " " * (dim + 1)

    def one_dim(dim, sub):
        if dim == value.ndim:   # an element: a numpy scalar, or bytes
            return _element_v2(sub)
        n = sub.shape[0]
        shown = list(range(n)) if n <= 2 * ends else \
            list(range(ends)) + [None] + list(range(n - ends, n))
        return "[" + spacing(dim).join("..." if i is None else one_dim(dim + 1, sub[i])
                                       for i in shown) + "]"
    return one_dim(0, value)


_PLACEHOLDER = re.compile("\x00([0-9]+)\x00")
_STREAMS = {"stderr": lambda: sys.stderr, "stdout": lambda: sys.stdout}


def _print_v2_kernel(ctx, *inputs, template, summarize, output_stream, end):
    text = _PLACEHOLDER.sub(lambda m: _summarize_v2(inputs[int(m.group(1))], summarize),
                            template)
    stream = _STREAMS[output_stream]()
    stream.write(text + end)
    stream.flush()


register_op("PrintV2", kernel=_print_v2_kernel, num_outputs=0, stateful=True, grad=None)


class _TensorSlot:
    # stands for a tensor in a structure given to tf.print; pprint writes its repr
    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return "\x00%d\x00" % self.index


def print_v2(*inputs, output_stream="stderr", summarize=3, sep=" ", end="\n", name=None):
    """An op that prints ``inputs`` (tensors, Python values, or lists, tuples and dicts of them)
    when it runs: TF1's ``tf.print`` (so exported by zps/__init__.py; named print_v2 here so as
    not to hide Python's ``print``). Run it, or make it a control dependency.

    ``output_stream``: ``sys.stderr`` (default) or ``sys.stdout``; ``summarize``: how many
    entries to show at each end of every dimension (-1: all).

    >>> import sys
    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     op = tf.print("x:", tf.constant([1, 2, 3, 4, 5, 6, 7]), output_stream=sys.stdout)
    ...     tf.Session().run(op)
    x: [1 2 3 ... 5 6 7]
    """
    streams = {sys.stderr: "stderr", sys.__stderr__: "stderr", sys.stdout: "stdout",
               sys.__stdout__: "stdout"}
    stream = output_stream if output_stream in _STREAMS else streams.get(output_stream)
    if stream is None:
        raise ValueError("tf.print: output_stream must be sys.stderr or sys.stdout (or "
                         "'stderr' / 'stdout'), got %r" % (output_stream,))
    tensors = []

    def slots(x):
        if isinstance(x, Tensor) or hasattr(x, "_as_graph_element"):
            tensors.append(convert_to_tensor(x))
            return _TensorSlot(len(tensors) - 1)
        if isinstance(x, dict):
            return {k: slots(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return type(x)(slots(v) for v in x)
        return x

    template = sep.join(x if isinstance(x, str) else pprint.pformat(slots(x)) for x in inputs)
    return make_op("PrintV2", tensors, name=name or "PrintV2", template=template,
                   summarize=int(summarize), output_stream=stream, end=end)


# -- CheckNumerics ---------------------------------------------------------------------------------
def _check_numerics_kernel(ctx, tensor, message):
    xp = ctx.xp
    nan, inf = bool(xp.isnan(tensor).any()), bool(xp.isinf(tensor).any())
    if nan or inf:
        what = "Inf and NaN" if nan and inf else "NaN" if nan else "Inf"
        raise errors.InvalidArgumentError(None, None, "%s : Tensor had %s values" % (message, what))
    return tensor


register_op("CheckNumerics", shape=same_shape, kernel=_check_numerics_kernel, aliases_input=True,
            grad=lambda op, grad: [check_numerics(
                grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                + op._attrs["message"])])


def check_numerics(tensor, message, name=None):
    """``tensor``, unchanged, after checking it holds no NaN or Inf (InvalidArgumentError
    ``<message> : Tensor had NaN values`` otherwise).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.check_numerics(tf.constant([1.0, 2.0]), "x")
    ...     print(tf.Session().run(x).tolist())
    [1.0, 2.0]
    """
    tensor = convert_to_tensor(tensor)
    if tensor.dtype.base_dtype not in _FLOATS:
        raise TypeError("check_numerics: tensor must be float16, float32 or float64, got %s (%s)"
                        % (tensor.dtype.name, tensor.name))
    return make_op("CheckNumerics", [tensor], name=name or "CheckNumerics", message=message)


def verify_tensor_all_finite(t, msg, name=None):
    """``t`` behind a check that it holds no NaN or Inf (see check_numerics)."""
    graph = get_default_graph()
    with graph.name_scope(name or "VerifyFinite"):
        t = convert_to_tensor(t, name="t")
        with graph.colocate_with(t.op):
            verify = check_numerics(t, message=msg)
        return control_flow_ops.with_dependencies([verify], t, name="control_dependency")


def add_check_numerics_ops():
    """One op that runs a check_numerics on every float output of every op in the default graph
    (the checks chained one after another, as TF1 does); its message names the tensor."""
    check = []
    for op in get_default_graph().get_operations():
        for i, output in enumerate(op._outputs):
            if output.dtype in _FLOATS and not output.is_ref:
                with get_default_graph().control_dependencies(check):
                    check = [check_numerics(output, message="%s:%d" % (op.name, i))]
    return control_flow_ops.group(*check)


# -- assert_* --------------------------------------------------------------------------------------
def _message_prefix(message):
    return "%s.  " % message if message else ""


def _static_string(item):
    if not isinstance(item, Tensor):
        return str(item)
    value = constant_value(item)
    return str(value) if value is not None else str(item)


def _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message, name):
    with get_default_graph().name_scope(name or opname):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        if data is None:
            data = ["Condition x %s y did not hold element-wise:" % sym,
                    "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
        if message is not None:
            data = [message] + list(data)
        condition = math_ops.reduce_all(op_func(x, y))
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None \
                and not np.all(static_func(x_static, y_static)):
            raise errors.InvalidArgumentError(None, None,
                                              "\n".join(_static_string(d) for d in data))
        return Assert(condition, data, summarize=summarize)


def _binary(sym, opname, op_func, static_func):
    def check(x, y, data=None, summarize=None, message=None, name=None):
        return _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message,
                              name)
    check.__name__ = opname
    check.__doc__ = ("Assert ``x %s y`` element-wise (broadcasting): an Assert op, or "
                     "InvalidArgumentError now when both are constants." % sym)
    return check


assert_equal = _binary("==", "assert_equal", math_ops.equal, np.equal)
assert_none_equal = _binary("!=", "assert_none_equal", math_ops.not_equal, np.not_equal)
assert_less = _binary("<", "assert_less", math_ops.less, np.less)
assert_less_equal = _binary("<=", "assert_less_equal", math_ops.less_equal, np.less_equal)
assert_greater = _binary(">", "assert_greater", math_ops.greater, np.greater)
assert_greater_equal = _binary(">=", "assert_greater_equal", math_ops.greater_equal,
                               np.greater_equal)


def _sign(opname, sym, binary, zero_first):
    def check(x, data=None, summarize=None, message=None, name=None):
        message = _message_prefix(message)
        with get_default_graph().name_scope(name or opname):
            x = convert_to_tensor(x, name="x")
            if data is None:
                data = [message, "Condition x %s 0 did not hold element-wise:" % sym,
                        "x (%s) = " % x.name, x]
            zero = convert_to_tensor(0, dtype=x.dtype)
            a, b = (zero, x) if zero_first else (x, zero)
            return binary(a, b, data=data, summarize=summarize)
    check.__name__ = opname
    check.__doc__ = "Assert ``x %s 0`` element-wise (see assert_less)." % sym
    return check


assert_positive = _sign("assert_positive", ">", assert_less, True)
assert_negative = _sign("assert_negative", "<", assert_less, False)
assert_non_negative = _sign("assert_non_negative", ">=", assert_less_equal, True)
assert_non_positive = _sign("assert_non_positive", "<=", assert_less_equal, False)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """Assert ``x`` has rank ``rank``: ValueError now when x's static rank is known (then a
    no-op is returned), else an Assert op."""
    message = _message_prefix(message)
    with get_default_graph().name_scope(name or "assert_rank"):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        assert_type(rank, _dtypes.int32)
        rank_static = constant_value(rank)
        if rank_static is not None:
            if np.ndim(rank_static) != 0:
                raise ValueError("Rank must be a scalar.")
            ndims = x.get_shape().ndims
            if ndims is not None:
                if ndims != int(rank_static):
                    raise ValueError("%sTensor %s must have rank %d.  Received rank %d, shape %s"
                                     % (message, x.name, rank_static, ndims, x.get_shape()))
                return control_flow_ops.no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [message, "Tensor %s must have rank" % x.name, rank, "Received shape: ",
                    array_ops.shape(x)]
        return Assert(math_ops.equal(array_ops.rank(x), rank), data, summarize=summarize)


def assert_type(tensor, tf_type, message=None, name=None):
    """TypeError unless ``tensor`` has dtype ``tf_type``; a no-op otherwise."""
    tf_type = _dtypes.as_dtype(tf_type)
    with get_default_graph().name_scope(name or "assert_type"):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError("%s%s must be of type %r; got %r"
                            % (_message_prefix(message), tensor.name, tf_type, tensor.dtype))
        return control_flow_ops.no_op("statically_determined_correct_type")


def assert_integer(x, message=None, name=None):
    """TypeError unless ``x`` has an integer dtype; a no-op otherwise."""
    with get_default_graph().name_scope(name or "assert_integer"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError('%sExpected "x" to be integer type.  Found: %s of dtype %s'
                            % (_message_prefix(message), x.name, x.dtype))
        return control_flow_ops.no_op("statically_determined_was_integer")


def is_numeric_tensor(tensor):
    """Whether ``tensor`` is a Tensor of a numeric (integer or float) dtype."""
    return isinstance(tensor, Tensor) and tensor.dtype in _NUMERIC


__all__ = [
    "Assert", "Print", "check_numerics", "verify_tensor_all_finite", "add_check_numerics_ops",
    "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal", "assert_greater",
    "assert_greater_equal", "assert_positive", "assert_negative", "assert_non_negative",
    "assert_non_positive", "assert_rank", "assert_type", "assert_integer", "is_numeric_tensor",
]
