"""Graphs as plain data: ``Graph.as_graph_def()`` and ``import_graph_def()`` (no pickle, except
a ``py_func``'s function sent to another task where pickles are allowed: see CALLABLE_ATTR).

A graph_def is a dict shaped like TF1's GraphDef, made only of dicts, lists, str, bytes, ints,
floats, bools and None, so msgpack (or JSON, bytes aside) can carry it (``as_graph_def`` gives
dict subclasses whose fields are also attributes, as TF1's: ``[n.name for n in gd.node]``)::

    {"versions": {"producer": 1, "min_consumer": 1},
     "node": [{"name": "layer/w", "op": "VariableV2", "device": "/job:ps/task:0",
               "input": [], "attr": {"dtype": {"dtype": "float32"}, ...}}, ...]}

An input is ``"op"`` (output 0), ``"op:1"`` or ``"^op"`` (a control input). Attr values are
encoded with one-key tags where plain data would be ambiguous: ``{"dtype": "float32"}``,
``{"shape": [None, 3]}`` (a TensorShape), ``{"tuple": [...]}``, ``{"list": [...]}``,
``{"dict": {...}}``, ``{"tensor": {"dtype", "shape", "data"}}`` (an ndarray: raw little-endian
bytes, or a list of bytes for strings) and ``{"scalar": {...}}`` (a numpy scalar). Colocation
travels as the ``_class`` attr (``["loc:@w"]``), as in TF1.

Importing validates the whole graph_def before it creates anything: every op type must be
registered, every attr must decode, every input must resolve. Nothing is executed, and a
graph_def that fails is rejected with a ValueError naming the node, leaving the graph unchanged.

>>> import msgpack, zps as tf
>>> with tf.Graph().as_default() as g:
...     x = tf.placeholder(tf.float32, [None], name="x")
...     y = tf.multiply(x, 2.0, name="y")
>>> blob = msgpack.packb(g.as_graph_def())
>>> with tf.Graph().as_default():
...     y2, = import_graph_def(msgpack.unpackb(blob), return_elements=["y:0"], name="copy")
...     print(y2.name, tf.Session().run(y2, {"copy/x:0": [1.0, 2.0]}))
copy/y:0 [2. 4.]
"""

import re

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import registry
from zps.framework.device import canonical_name
from zps.framework.graph import (
    NodeDef,
    Operation,
    Tensor,
    _checked_op_name,
    convert_to_tensor,
    get_default_graph,
)
from zps.framework.tensor_shape import TensorShape

GRAPH_DEF_VERSION = 1
VERSIONS = {"producer": GRAPH_DEF_VERSION, "min_consumer": GRAPH_DEF_VERSION}

_MAX_DEPTH = 64        # nesting of attr values (lists of lists ...)
_MAX_RANK = 32
_INT_RANGE = (-2 ** 63, 2 ** 64)  # what msgpack can carry
_ATTR_NAME = re.compile(r"^_?[A-Za-z][A-Za-z0-9_]*$")
_RESERVED_ATTRS = ("_class", "_output_shapes", "_num_outputs")
_KERNEL_ARGS = ("ctx", "op_name", "done")  # attrs are keyword arguments of the kernel
_TENSOR_NAME = re.compile(r"^(\^?)([^:^][^:]*)(?::(\d+))?$")  # names never hold ':'



# -- encoding ------------------------------------------------------------------------------------
class GraphDef(dict):
    """A graph_def: the plain-data dict, its fields also attributes as in TF1's GraphDef
    (``graph_def.node``, ``graph_def.versions``; its nodes are ``graph.NodeDef``s)."""

    __slots__ = ()
    node = property(lambda self: self["node"])
    versions = property(lambda self: self["versions"])


def graph_to_def(graph, ops=None, add_shapes=False, buffers=None):
    """``graph`` (or just ``ops`` of it, in the given order) as a plain-data graph_def.

    Inputs from ops left out stay as names: map them with ``import_graph_def(input_map=...)``.
    With ``add_shapes``, each node records its outputs' static shapes (``_output_shapes``).
    With a list ``buffers``, large numeric arrays (constants' values) are appended to it and the
    graph_def refers to them by index (``{"tensor": {"dtype", "shape", "buffer": k}}``), so a
    transport can send them as raw frames instead of inside a header.
    """
    ops = graph.get_operations() if ops is None else list(ops)
    return GraphDef(versions=dict(VERSIONS),
                    node=[node_to_def(op, add_shapes=add_shapes, buffers=buffers) for op in ops])


OUT_OF_BAND_BYTES = 64 << 10   # arrays at least this large go to ``buffers`` when one is given

# A few ops (``tf.py_func``) carry a Python callable, which plain data cannot hold. Their module
# registers ``pack(op) -> bytes`` and ``unpack(node_name, attrs, blob)`` for the op type: a
# graph_def made for the wire (``buffers`` given) carries the packed callable in this attr, and
# importing one calls ``unpack``. Both decide whether pickles may travel (never by default: see
# zps.ops.script_ops and zps.transport.security); an exported graph_def carries no callable.
CALLABLE_ATTR = "_py_callable"
_CALLABLE_CODECS = {}


def register_callable_codec(op_type, pack, unpack):
    """Ship the Python callable of ``op_type`` ops with graphs sent to other tasks."""
    _CALLABLE_CODECS[op_type] = (pack, unpack)


def node_to_def(op, add_shapes=False, buffers=None):
    """One Operation as a plain-data node (see the module docstring)."""
    attr = {}
    for name, value in op._attrs.items():
        if buffers is not None and isinstance(value, np.ndarray) and value.dtype != object \
                and value.nbytes >= OUT_OF_BAND_BYTES:
            attr[name] = {"tensor": {"dtype": _dtypes.as_dtype(value.dtype).name,
                                     "shape": list(value.shape), "buffer": len(buffers)}}
            buffers.append(np.ascontiguousarray(value))
            continue
        try:
            attr[name] = encode_attr(value)
        except (TypeError, ValueError) as e:
            raise ValueError("Cannot serialize attr %r of op %s (%s): %s"
                             % (name, op.name, op.type, e)) from None
    if buffers is not None and op.type in _CALLABLE_CODECS:
        attr[CALLABLE_ATTR] = _CALLABLE_CODECS[op.type][0](op)
    if op._colocation:
        attr["_class"] = {"list": ["loc:@" + n for n in op._colocation]}
    if len(op._outputs) != op.op_def.num_outputs:
        attr["_num_outputs"] = len(op._outputs)
    if add_shapes:
        attr["_output_shapes"] = {"list": [encode_attr(t.get_shape()) for t in op._outputs]}
    return NodeDef(name=op.name, op=op.type, device=op.device,
                   input=[_input_name(t) for t in op._inputs]
                   + ["^" + c.name for c in op._control_inputs], attr=attr)


def _input_name(t):
    return t.op.name if t.value_index == 0 else t.name


def _is_plain_scalar(value, depth):
    """Whether ``value`` travels as itself (None, bool, number, str, bytes); ValueError for a
    value nested too deep or an integer outside 64 bits. Shared by encoding and decoding."""
    if depth > _MAX_DEPTH:
        raise ValueError("attr value nested deeper than %d levels" % _MAX_DEPTH)
    if isinstance(value, int) and not isinstance(value, bool) \
            and not _INT_RANGE[0] <= value < _INT_RANGE[1]:
        raise ValueError("integer %d is out of the 64-bit range" % value)
    return value is None or isinstance(value, bool | int | float | str | bytes)


def encode_attr(value, depth=0):
    """An attr value as tagged plain data; TypeError for values that are not plain data."""
    if _is_plain_scalar(value, depth):
        return value
    if isinstance(value, _dtypes.DType):
        return {"dtype": value.name}
    if isinstance(value, TensorShape):
        return {"shape": None if value.ndims is None else value.as_list()}
    if isinstance(value, np.ndarray):
        return {"tensor": _encode_array(value)}
    if isinstance(value, np.generic):
        return {"scalar": _encode_array(np.asarray(value))}
    if isinstance(value, list | tuple):
        return {"tuple" if isinstance(value, tuple) else "list":
                [encode_attr(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("dict attrs need str keys")
        return {"dict": {k: encode_attr(v, depth + 1) for k, v in value.items()}}
    raise TypeError("%s is not plain data (attrs are numbers, strings, DTypes, shapes, numpy "
                    "arrays and lists/tuples/dicts of them)" % type(value).__name__)


def _encode_array(arr):
    dt = _dtypes.as_dtype(arr.dtype)
    if dt is _dtypes.string:
        data = [s.encode() if isinstance(s, str) else s for s in arr.ravel().tolist()]
        if not all(isinstance(s, bytes) for s in data):
            raise TypeError("string tensors hold bytes")
    else:
        little = np.dtype(dt.as_numpy_dtype).newbyteorder("<")
        data = np.ascontiguousarray(arr, dtype=little).tobytes()
    return {"dtype": dt.name, "shape": list(arr.shape), "data": data}


# -- decoding ------------------------------------------------------------------------------------
def decode_attr(value, depth=0):
    """The inverse of ``encode_attr``; ValueError for anything malformed."""
    if _is_plain_scalar(value, depth):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError("expected plain data or a one-key tag, got %s" % _describe(value))
    (tag, body), = value.items()
    if tag == "dtype":
        return _decode_dtype(body)
    if tag == "shape":
        return TensorShape(None if body is None else _decode_dims(body, allow_unknown=True))
    if tag in ("list", "tuple"):
        if not isinstance(body, list | tuple):
            raise ValueError("%s tag needs a list, got %s" % (tag, _describe(body)))
        items = [decode_attr(v, depth + 1) for v in body]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        if not isinstance(body, dict) or not all(isinstance(k, str) for k in body):
            raise ValueError("dict tag needs a dict with str keys")
        return {k: decode_attr(v, depth + 1) for k, v in body.items()}
    if tag == "tensor":
        return _decode_array(body)
    if tag == "scalar":
        arr = _decode_array(body)
        if arr.ndim != 0:
            raise ValueError("scalar tag holds a tensor of shape %s" % (arr.shape,))
        return arr[()]
    raise ValueError("unknown attr tag %r" % (tag,))


def _decode_dtype(name):
    if not isinstance(name, str):
        raise ValueError("dtype must be a name, got %s" % _describe(name))
    try:
        return _dtypes.as_dtype(name)
    except TypeError:
        raise ValueError("unknown dtype %r" % name) from None


def _decode_dims(dims, allow_unknown=False):
    if not isinstance(dims, list | tuple) or len(dims) > _MAX_RANK:
        raise ValueError("a shape is a list of at most %d dims, got %s" % (_MAX_RANK, _describe(dims)))
    for d in dims:
        ok = (d is None and allow_unknown) or (isinstance(d, int) and not isinstance(d, bool)
                                                and 0 <= d < 2 ** 63)
        if not ok:
            raise ValueError("invalid dimension %r in shape %r" % (d, list(dims)))
    return list(dims)


def _decode_array(body):
    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
        raise ValueError("a tensor is {dtype, shape, data}, got %s" % _describe(body))
    dt = _decode_dtype(body["dtype"])
    shape = _decode_dims(body["shape"])
    size = 1
    for d in shape:
        size *= d
    data = body["data"]
    if dt is _dtypes.string:
        if not isinstance(data, list | tuple) or len(data) != size:
            raise ValueError("a string tensor of shape %s needs a list of %d bytes" % (shape, size))
        items = [s.encode() if isinstance(s, str) else s for s in data]
        if not all(isinstance(s, bytes) for s in items):
            raise ValueError("string tensor elements must be bytes")
        arr = np.empty(size, dtype=object)
        arr[:] = items
        arr = arr.reshape(shape)
    else:
        np_type = np.dtype(dt.as_numpy_dtype)
        if not isinstance(data, bytes) or len(data) != size * np_type.itemsize:
            raise ValueError("a %s tensor of shape %s needs %d bytes of data, got %s"
                             % (dt.name, shape, size * np_type.itemsize, _describe(data)))
        if dt is _dtypes.bool:
            arr = np.frombuffer(data, dtype=np.uint8).astype(bool)  # only 0/1 are valid bools
        else:
            arr = np.frombuffer(data, dtype=np_type.newbyteorder("<")).astype(np_type, copy=False)
        arr = arr.reshape(shape)
    arr.flags.writeable = False
    return arr


def _is_buffer_ref(value):
    return isinstance(value, dict) and isinstance(value.get("tensor"), dict) \
        and "buffer" in value["tensor"]


def _buffer_attr(value, buffers):
    """The array an out-of-band ``{"tensor": {dtype, shape, buffer}}`` attr refers to."""
    body = value["tensor"]
    if len(value) != 1 or set(body) != {"dtype", "shape", "buffer"}:
        raise ValueError("an out-of-band tensor is {dtype, shape, buffer}, got %s" % _describe(body))
    dt = _decode_dtype(body["dtype"])
    shape = tuple(_decode_dims(body["shape"]))
    k = body["buffer"]
    if buffers is None or not isinstance(k, int) or isinstance(k, bool) \
            or not 0 <= k < len(buffers):
        raise ValueError("tensor refers to buffer %r, but %d buffers came with the graph_def"
                         % (k, 0 if buffers is None else len(buffers)))
    arr = np.asarray(buffers[k])
    if dt is _dtypes.string or arr.dtype != np.dtype(dt.as_numpy_dtype) or arr.shape != shape:
        raise ValueError("buffer %d is %s%s but the graph_def declares %s%s"
                         % (k, arr.dtype, list(arr.shape), dt.name, list(shape)))
    arr = arr.view()
    arr.flags.writeable = False
    return arr


def _describe(value):
    text = repr(value)
    return "%s %s" % (type(value).__name__, text if len(text) <= 60 else text[:57] + "...")


# -- importing -----------------------------------------------------------------------------------
class _Node:
    """A validated node of a graph_def, ready to be created."""

    __slots__ = ("name", "op_type", "device", "attrs", "inputs", "controls", "colocation",
                 "num_outputs", "output_shapes")


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None, buffers=None):
    """Add the ops of ``graph_def`` (from ``as_graph_def``) to the default graph.

    Ops are named ``<name>/<original name>`` (``name`` defaults to "import", made unique; ``""``
    keeps the original names). ``input_map`` maps tensor names of graph_def (``"x:0"``, or
    ``"^x"`` for control inputs) to Tensors of this graph that replace them. Returns the
    Operations / Tensors named in ``return_elements`` ("op" or "op:0"), or None.
    Raises ValueError, naming the node, for unknown op types, malformed attrs or inputs; nothing
    is added to the graph then. ``op_dict`` and ``producer_op_list`` (deprecated in TF1) are
    accepted and ignored. ``buffers`` holds the arrays a graph_def refers to by index (see
    ``graph_to_def``); each must match the dtype and shape the graph_def declares.
    """
    graph = get_default_graph()
    nodes = _parse_graph_def(graph_def, buffers)
    by_name = {n.name: n for n in nodes}
    input_map = _normalize_input_map(graph, input_map)
    order = _topological_order(nodes, by_name, input_map)
    if return_elements is not None:
        for r in return_elements:
            _check_return_element(r, by_name)
    with graph._lock:  # all or nothing: a failed import removes its ops and frees their names
        names_in_use = dict(graph._names_in_use)
        created = {}
        try:
            with graph.name_scope("import" if name is None else name) as scope:
                _create_ops(graph, order, input_map, scope, created)
            if return_elements is None:
                return None
            return [_return_element(r, created) for r in return_elements]
        except BaseException:
            graph._discard_ops(list(created.values()))
            graph._names_in_use = names_in_use
            raise


def _parse_graph_def(graph_def, buffers=None):
    if not isinstance(graph_def, dict) or not isinstance(graph_def.get("node", []), list | tuple):
        raise ValueError("graph_def must be a dict with a 'node' list (from Graph.as_graph_def()), "
                         "got %s" % _describe(graph_def))
    versions = graph_def.get("versions") or {}
    if not isinstance(versions, dict) or not isinstance(versions.get("min_consumer", 0), int):
        raise ValueError("graph_def 'versions' is malformed: %s" % _describe(versions))
    if versions.get("min_consumer", 0) > GRAPH_DEF_VERSION:
        raise ValueError("graph_def needs a newer zps (min_consumer %d > %d)"
                         % (versions["min_consumer"], GRAPH_DEF_VERSION))
    nodes, seen = [], set()
    for i, raw in enumerate(graph_def.get("node", [])):
        node = _parse_node(i, raw, buffers)
        if node.name in seen:
            raise ValueError("graph_def has two nodes named %r" % node.name)
        seen.add(node.name)
        nodes.append(node)
    return nodes


def _parse_node(i, raw, buffers=None):
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ValueError("graph_def node %d is not a dict with a 'name': %s" % (i, _describe(raw)))
    node = _Node()
    node.name = raw["name"]
    try:
        _parse_node_fields(node, raw, buffers)
    except ValueError as e:
        raise ValueError("Invalid node %r in graph_def: %s" % (node.name, e)) from None
    return node


def _parse_node_fields(node, raw, buffers=None):
    node.op_type = raw.get("op")
    if not isinstance(node.op_type, str) or node.op_type not in registry.REGISTRY:
        raise ValueError("op type %r is not registered in zps (was the module defining it "
                         "imported?)" % (node.op_type,))
    _checked_op_name(node.name)
    device = raw.get("device", "") or ""
    if not isinstance(device, str):
        raise ValueError("device must be a string, got %s" % _describe(device))
    node.device = canonical_name(device)
    inputs = raw.get("input", [])
    if not isinstance(inputs, list | tuple) or not all(isinstance(s, str) for s in inputs):
        raise ValueError("'input' must be a list of tensor names, got %s" % _describe(inputs))
    node.inputs, node.controls = [], []
    for s in inputs:
        ref = _parse_tensor_name(s)
        if ref[0] == "^":
            node.controls.append(ref[1])
        elif node.controls:
            raise ValueError("data input %r follows a control input" % s)
        else:
            node.inputs.append(ref[1:])
    attr = raw.get("attr", {})
    if not isinstance(attr, dict):
        raise ValueError("'attr' must be a dict, got %s" % _describe(attr))
    node.attrs, node.colocation, node.num_outputs, node.output_shapes = {}, [], None, None
    callable_blob = attr.get(CALLABLE_ATTR)
    for key, value in attr.items():
        if not isinstance(key, str) or not _ATTR_NAME.match(key) or key in _KERNEL_ARGS:
            raise ValueError("invalid attr name %r" % (key,))
        if key == CALLABLE_ATTR:
            continue
        try:
            decoded = _buffer_attr(value, buffers) if _is_buffer_ref(value) else decode_attr(value)
        except (ValueError, TypeError) as e:
            raise ValueError("malformed attr %r: %s" % (key, e)) from None
        if key in _RESERVED_ATTRS:
            _parse_reserved(node, key, decoded)
        else:
            node.attrs[key] = decoded
    if callable_blob is not None:
        codec = _CALLABLE_CODECS.get(node.op_type)
        if codec is None or not isinstance(callable_blob, bytes):
            raise ValueError("attr %s is only valid (as bytes) on ops that carry a Python "
                             "callable, not on %s" % (CALLABLE_ATTR, node.op_type))
        if buffers is None:
            # Only a graph sent by a peer (which comes with its buffers) may carry one: a
            # graph_def read from a file (a meta graph) never executes code when imported.
            raise ValueError("a pickled Python function (attr %s) is only accepted in a graph "
                             "sent by another task, not in a graph_def imported from a file"
                             % CALLABLE_ATTR)
        codec[1](node.name, node.attrs, callable_blob)   # refuses unless pickles are allowed


def _parse_reserved(node, key, value):
    if key == "_class":
        names = [v.decode() if isinstance(v, bytes) else v for v in _as_list(value, key)]
        if not all(isinstance(n, str) and n.startswith("loc:@") for n in names):
            raise ValueError("_class entries look like 'loc:@<op name>', got %r" % (value,))
        node.colocation = [n[len("loc:@"):] for n in names]
    elif key == "_num_outputs":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 1 << 16:
            raise ValueError("_num_outputs must be a small int, got %r" % (value,))
        node.num_outputs = value
    else:
        shapes = _as_list(value, key)
        if not all(isinstance(s, TensorShape) for s in shapes):
            raise ValueError("_output_shapes must be a list of shapes")
        node.output_shapes = shapes


def _as_list(value, key):
    if not isinstance(value, list | tuple):
        raise ValueError("%s must be a list, got %s" % (key, _describe(value)))
    return list(value)


def _parse_tensor_name(text):
    """``"^op"`` -> ('^', 'op', None); ``"op"`` / ``"op:2"`` -> ('', 'op', 0 / 2)."""
    m = _TENSOR_NAME.match(text)
    if m is None:
        raise ValueError("invalid tensor name %r (expected 'op', 'op:1' or '^op')" % text)
    control, op_name, index = m.groups()
    if control and index is not None:
        raise ValueError("a control input names an op, not a tensor: %r" % text)
    return control, op_name, int(index or 0)


def _normalize_input_map(graph, input_map):
    out = {}
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise ValueError("input_map keys are tensor names (strings), got %r" % (key,))
        control, op_name, index = _parse_tensor_name(key)
        if control:
            if isinstance(value, Tensor):
                value = value.op
            if not isinstance(value, Operation):
                raise ValueError("input_map[%r] must be an Operation (or Tensor) for a control "
                                 "input, got %r" % (key, value))
        elif not isinstance(value, Tensor):
            value = convert_to_tensor(value)
        if value.graph is not graph:
            raise ValueError("input_map[%r] = %s is not an element of the default graph"
                             % (key, value.name))
        out[(control, op_name, index)] = value
    return out


def _topological_order(nodes, by_name, input_map):
    deps = {}
    for node in nodes:
        needs = set()
        for op_name, index in node.inputs:
            mapped = ("", op_name, index) in input_map
            if op_name in by_name:
                needs.add(op_name)  # also when mapped: its dtype checks the replacement
            elif not mapped:
                raise ValueError("Input %r of node %r refers to no node of graph_def and has no "
                                 "input_map entry" % (_fmt(op_name, index), node.name))
        for op_name in node.controls:
            if op_name in by_name:
                needs.add(op_name)
            elif ("^", op_name, 0) not in input_map:
                raise ValueError("Control input '^%s' of node %r refers to no node of graph_def "
                                 "and has no input_map entry" % (op_name, node.name))
        deps[node.name] = needs
    order, state = [], {}
    for node in nodes:  # iterative DFS; 1 = on the stack, 2 = done
        if state.get(node.name):
            continue
        stack = [(node.name, iter(sorted(deps[node.name])))]
        state[node.name] = 1
        while stack:
            current, it = stack[-1]
            for d in it:
                if state.get(d) == 1:
                    raise ValueError("graph_def has a cycle through nodes %r and %r" % (current, d))
                if not state.get(d):
                    state[d] = 1
                    stack.append((d, iter(sorted(deps[d]))))
                    break
            else:
                stack.pop()
                state[current] = 2
                order.append(by_name[current])
    return order


def _fmt(op_name, index):
    return "%s:%d" % (op_name, index)


def _create_ops(graph, order, input_map, scope, created):
    used = set()
    for node in order:
        inputs, controls, internal = [], [], False
        for op_name, index in node.inputs:
            source = created.get(op_name)
            mapped = input_map.get(("", op_name, index))
            if source is not None and index >= len(source._outputs):
                raise ValueError("Input %r of node %r: op %r has only %d outputs"
                                 % (_fmt(op_name, index), node.name, op_name, len(source._outputs)))
            if mapped is not None:
                used.add(("", op_name, index))
                if source is not None and mapped.dtype != source._outputs[index].dtype:
                    raise ValueError("input_map[%r] has dtype %s but the input has dtype %s"
                                     % (_fmt(op_name, index), mapped.dtype.name,
                                        source._outputs[index].dtype.name))
                inputs.append(mapped)
            else:
                inputs.append(source._outputs[index])
                internal = True
        for op_name in node.controls:
            mapped = input_map.get(("^", op_name, 0))
            if mapped is not None:
                used.add(("^", op_name, 0))
                controls.append(mapped)
            else:
                controls.append(created[op_name])
                internal = True
        if not internal:  # TF1: the control_dependencies scope applies to the import's roots
            controls += [c for c in graph._current_control_inputs() if c not in controls]
        created[node.name] = _import_one(graph, node, scope + node.name, inputs, controls)
    _apply_colocation(graph, order, created)
    unused = sorted(("^" + n) if c else _fmt(n, i) for (c, n, i) in set(input_map) - used)
    if unused:
        raise ValueError("Attempted to map inputs that were not found in graph_def: %s" % unused)


def _import_one(graph, node, name, inputs, controls):
    try:
        op = graph._import_op(node.op_type, name, inputs, node.attrs, node.num_outputs, controls,
                              node.device)
        if node.output_shapes is not None:
            if len(node.output_shapes) != len(op._outputs):
                raise ValueError("_output_shapes has %d entries for %d outputs"
                                 % (len(node.output_shapes), len(op._outputs)))
            for t, shape in zip(op._outputs, node.output_shapes):
                t.set_shape(shape)
    except RuntimeError:
        raise  # a finalized graph
    except Exception as e:  # noqa: BLE001 - shape rules may fail in any way on hostile attrs
        raise ValueError("Cannot import node %r (op %s): %s: %s"
                         % (node.name, node.op_type, type(e).__name__, e)) from None
    return op


def _apply_colocation(graph, order, created):
    # A colocated op takes the device of the first op of its group that has one (TF1). A group
    # whose ops are in neither graph_def nor the graph (a subset was exported) is kept as a name
    # only, as TF2 does: the op keeps the device it was exported with.
    for node in order:
        if not node.colocation:
            continue
        op = created[node.name]
        targets = [created.get(group) or graph._ops.get(group) for group in node.colocation]
        op._colocation = sorted({t.name if t is not None else group
                                 for t, group in zip(targets, node.colocation)})
        device = next((t.device for t in targets if t is not None and t.device), None)
        if device is not None:
            op._device = device


def _check_return_element(name, by_name):
    if not isinstance(name, str):
        raise ValueError("return_elements are names (strings), got %r" % (name,))
    control, op_name, _ = _parse_tensor_name(name)
    if control or op_name not in by_name:
        raise ValueError("Requested return_element %r not found in graph_def." % name)


def _return_element(name, created):
    _, op_name, index = _parse_tensor_name(name)
    op = created[op_name]
    if ":" not in name:
        return op
    if index >= len(op._outputs):
        raise ValueError("Requested return_element %r not found in graph_def: %s has %d outputs."
                         % (name, op_name, len(op._outputs)))
    return op._outputs[index]


__all__ = ["import_graph_def"]
