"""``tf.graph_util``: freeze a graph_def (variables to constants), prune it, write it to a file.

These work on zps's graph_def, the plain-data dict ``Graph.as_graph_def()`` gives (see
zps.framework.serialization), not on TensorFlow's GraphDef protobuf. ``write_graph`` and
``read_graph`` (zps's own, also ``tf.train.write_graph``) store such a graph_def in a file.

>>> import zps as tf
>>> with tf.Graph().as_default() as g:
...     x = tf.placeholder(tf.float32, [None], name="x")
...     w = tf.Variable([2.0, 3.0], name="w")
...     y = tf.multiply(x, w, name="y")
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         frozen = tf.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
>>> [(n.name, n.op) for n in frozen.node]
[('x', 'Placeholder'), ('w', 'Const'), ('w/read', 'Identity'), ('y', 'Mul')]
>>> with tf.Graph().as_default():
...     tf.import_graph_def(frozen, name="")
...     print(tf.Session().run("y:0", {"x:0": [1.0, 1.0]}))
[2. 3.]
"""

import base64 as _base64
import copy as _copy
import json as _json
import os as _os

import msgpack as _msgpack
import numpy as _np

from zps.framework import checkpoint_format as _checkpoint_format
from zps.framework.graph import Graph as _Graph
from zps.framework.serialization import GraphDef as _GraphDef
from zps.framework.serialization import NodeDef as _NodeDef
from zps.framework.serialization import decode_attr as _decode_attr
from zps.framework.serialization import encode_attr as _encode_attr
from zps.framework.serialization import import_graph_def

_VARIABLE_OPS = ("VariableV2",)
_TRAINING_OPS_TO_SPLICE = ("Identity", "StopGradient", "CheckNumerics")


def _check_graph_def(graph_def):
    if not isinstance(graph_def, dict) or not isinstance(graph_def.get("node"), list | tuple):
        raise TypeError("graph_def must be a zps graph_def (the dict Graph.as_graph_def() "
                        "returns), but got type %s." % type(graph_def).__name__)


def _node_name(text):
    """The op name of an input: ``"^op"``, ``"op"`` and ``"op:1"`` all give ``"op"``."""
    return text[1:] if text.startswith("^") else text.split(":")[0]


def _colocated_names(node):
    value = node.get("attr", {}).get("_class")
    if value is None:
        return []
    names = _decode_attr(value)
    return [n[len("loc:@"):] for n in (s.decode() if isinstance(s, bytes) else s for s in names)
            if n.startswith("loc:@")]


def extract_sub_graph(graph_def, dest_nodes):
    """The graph_def of the nodes ``dest_nodes`` (op names) need: their inputs (data, control and
    colocation), transitively; in the original order.

    Raises TypeError for a ``dest_nodes`` string (pass a list) and AssertionError, as TF1, for
    a name not in ``graph_def``.
    """
    _check_graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be an iterable of strings, but got type %s."
                        % type(dest_nodes))
    by_name = {n["name"]: n for n in graph_def["node"]}
    for d in dest_nodes:
        if d not in by_name:
            raise AssertionError("%s is not in graph" % d)
    keep, to_visit = set(), list(dest_nodes)
    while to_visit:
        name = to_visit.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        node = by_name[name]
        to_visit += [_node_name(i) for i in node.get("input", [])] + _colocated_names(node)
    return _GraphDef(versions=dict(graph_def.get("versions") or {}),
                     node=[_copy.deepcopy(n) for n in graph_def["node"] if n["name"] in keep])


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None, variable_names_blacklist=None):
    """Freeze a graph_def: its variables become Const nodes holding their current values in
    ``sess``, and only what ``output_node_names`` (op names) need is kept.

    Only the variables named in ``variable_names_whitelist`` (when given) and not in
    ``variable_names_blacklist`` are converted; the others stay variables. Each Const keeps the
    variable's name, so the reads (``w/read``) and everything after them are unchanged; the
    result imports with ``tf.import_graph_def`` into a graph without variables.
    """
    inference_graph = extract_sub_graph(input_graph_def, output_node_names)
    whitelist = None if variable_names_whitelist is None else set(variable_names_whitelist)
    blacklist = set(variable_names_blacklist or ())
    names = [n["name"] for n in inference_graph["node"]
             if n["op"] in _VARIABLE_OPS and n["name"] not in blacklist
             and (whitelist is None or n["name"] in whitelist)]
    values = dict(zip(names, sess.run([name + ":0" for name in names]))) if names else {}
    nodes = []
    for node in inference_graph["node"]:
        if node["name"] in values:
            dtype = _decode_attr(node["attr"]["dtype"])
            value = _np.asarray(values[node["name"]], dtype=dtype.as_numpy_dtype)
            node = _NodeDef(name=node["name"], op="Const", device="", input=[],
                            attr={"dtype": node["attr"]["dtype"], "value": _encode_attr(value)})
        nodes.append(node)
    return _GraphDef(versions=inference_graph["versions"], node=nodes)


def remove_training_nodes(input_graph, protected_nodes=None):
    """``input_graph`` without the nodes only training needs: Identity, StopGradient and
    CheckNumerics nodes are spliced out (their consumers read their input directly), except the
    ``protected_nodes``, those that are or have control inputs, and colocation targets.

    (TF1 drops a CheckNumerics node's consumers' edge instead of splicing it; zps splices it, so
    the graph keeps computing the same values.)
    """
    _check_graph_def(input_graph)
    protected = set(protected_nodes or ())
    control_related, colocated = set(), set()
    for node in input_graph["node"]:
        for i in node.get("input", []):
            if i.startswith("^"):
                control_related.update((i[1:], node["name"]))
        colocated.update(_colocated_names(node))
    splice = {n["name"]: n["input"][0] for n in input_graph["node"]
              if n["op"] in _TRAINING_OPS_TO_SPLICE and n.get("input")
              and n["name"] not in protected | control_related | colocated}
    nodes = []
    for node in input_graph["node"]:
        if node["name"] in splice:
            continue
        node = _copy.deepcopy(node)
        inputs = []
        for i in node.get("input", []):
            while _node_name(i) in splice:
                i = splice[_node_name(i)]
            inputs.append(i)
        node["input"] = inputs
        nodes.append(node)
    return _GraphDef(versions=dict(input_graph.get("versions") or {}), node=nodes)


def tensor_shape_from_node_def_name(graph, input_name):
    """The static shape of the tensor ``input_name`` ("op" means "op:0") of ``graph``."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()


# -- graph_def files -------------------------------------------------------------------------------
_BYTES_KEY = "$bytes"  # JSON has no bytes: they travel as {"$bytes": "<base64>"}


def _to_json_data(value):
    if isinstance(value, bytes):
        return {_BYTES_KEY: _base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        if set(value) == {_BYTES_KEY}:
            raise ValueError("Cannot write a graph_def holding a dict whose only key is %r as "
                             "text: pass as_text=False" % _BYTES_KEY)
        return {k: _to_json_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_json_data(v) for v in value]
    return value


def _from_json_data(value):
    if isinstance(value, dict):
        if set(value) == {_BYTES_KEY} and isinstance(value[_BYTES_KEY], str):
            return _base64.b64decode(value[_BYTES_KEY], validate=True)
        return {k: _from_json_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json_data(v) for v in value]
    return value


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Write a Graph's graph_def (or a graph_def) to ``logdir/name``; return that path.

    The file holds zps's graph_def format, not TensorFlow's GraphDef protobuf: JSON text when
    ``as_text`` (bytes as ``{"$bytes": "<base64>"}``), msgpack otherwise. TensorFlow tools cannot
    read it; zps reads it back with ``tf.graph_util.read_graph(path)``, whose result
    ``tf.import_graph_def`` imports. ``logdir`` is created when missing.

    >>> import os, tempfile, zps as tf
    >>> with tf.Graph().as_default() as g:
    ...     y = tf.add(tf.constant(1.0), 2.0, name="y")
    >>> path = tf.train.write_graph(g, tempfile.mkdtemp(), "graph.json")
    >>> with tf.Graph().as_default():
    ...     tf.import_graph_def(tf.graph_util.read_graph(path), name="")
    ...     print(tf.Session().run("y:0"))
    3.0
    """
    if isinstance(graph_or_graph_def, _Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    else:
        _check_graph_def(graph_or_graph_def)
        graph_def = graph_or_graph_def
    if as_text:
        data = (_json.dumps(_to_json_data(graph_def), indent=1, sort_keys=True) + "\n").encode()
    else:
        data = _msgpack.packb(graph_def, use_bin_type=True)
    _os.makedirs(logdir, exist_ok=True)
    path = _os.path.join(logdir, name)
    _checkpoint_format.atomic_write(path, lambda f: f.write(data))
    return path


def read_graph(path):
    """The graph_def ``write_graph`` wrote to ``path`` (JSON text or msgpack, told apart by the
    file's first byte), for ``tf.import_graph_def``. Nothing in it is executed.

    Raises OSError when the file is missing and ValueError when it is not such a file (a
    TensorFlow GraphDef, for instance).
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        if data.lstrip()[:1] == b"{":
            graph_def = _from_json_data(_json.loads(data.decode("utf-8")))
        else:
            graph_def = _msgpack.unpackb(data, raw=False, strict_map_key=True)
    except (ValueError, _msgpack.UnpackException) as e:
        raise ValueError("%s is not a zps graph_def file (from tf.train.write_graph): %s"
                         % (path, e)) from None
    if not isinstance(graph_def, dict) or not isinstance(graph_def.get("node"), list) \
            or not all(isinstance(n, dict) for n in graph_def["node"]):
        raise ValueError("%s is not a zps graph_def file (from tf.train.write_graph)" % path)
    return _GraphDef(graph_def, node=[_NodeDef(n) for n in graph_def["node"]])


__all__ = ["convert_variables_to_constants", "extract_sub_graph", "import_graph_def",
           "read_graph", "remove_training_nodes", "tensor_shape_from_node_def_name",
           "write_graph"]
