"""Summary ops (``tf.summary.scalar/histogram/merge/merge_all``): each outputs a string scalar
holding a serialized summary.

The serialized form is ours and needs no protobuf: UTF-8 JSON of a list of values, each
``{"tag": str, "simple_value": float}`` or ``{"tag": str, "histo": {"min", "max", "num", "sum",
"sum_squares", "bucket_limit", "bucket"}}`` (the fields of TensorBoard's HistogramProto, with
TF1's default exponential buckets). ``decode_summary`` reads it back; ``tf.summary.FileWriter``
(zps/summary.py) turns it into TensorBoard event files.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     loss = scalar("loss", tf.constant(0.5))
...     merged = merge_all()
...     with tf.Session() as sess:
...         print(decode_summary(sess.run(merged)))
[{'tag': 'loss', 'simple_value': 0.5}]
"""

import json
import re

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.ops.op_util import make_op, scalar_shape

__all__ = ["scalar", "histogram", "merge", "merge_all", "decode_summary"]


def _default_bucket_limits():
    """TF1's default histogram buckets (tensorflow/core/lib/histogram/histogram.cc): limits
    growing by 10% from 1e-12 to 1e20, mirrored for negatives, with 0 and +-DBL_MAX."""
    pos = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(np.finfo(np.float64).max)
    return np.array([-p for p in reversed(pos)] + [0.0] + pos)


_BUCKET_LIMITS = _default_bucket_limits()
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _string_scalar(values):
    out = np.empty((), dtype=object)
    out[()] = json.dumps(values).encode("utf-8")
    return out


def _host(ctx, value):
    return value.get() if ctx.backend != "numpy" else value  # cupy arrays are read on the host


def decode_summary(serialized):
    """The list of summary values (dicts) held by a summary op's output (bytes, str or a numpy
    string scalar)."""
    if isinstance(serialized, np.ndarray):
        serialized = serialized.item()
    if isinstance(serialized, bytes):
        serialized = serialized.decode("utf-8")
    if not isinstance(serialized, str):
        raise TypeError("decode_summary expects the serialized output of a summary op (bytes or "
                        "str), got %s" % type(serialized).__name__)
    try:
        values = json.loads(serialized)
    except ValueError as e:
        raise ValueError("not a serialized zps summary (the output of a tf.summary op): %s" % e) from e
    if not isinstance(values, list):
        raise ValueError("not a serialized zps summary (expected a JSON list of values)")
    return values


def _clean_tag(name):
    """TF1's clean_tag: characters outside [-/\\w.] become '_', leading slashes are dropped."""
    if name is None:
        return None
    return _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


def _summary_op(op_type, name, tensor, collections, family, **attrs):
    """Build a summary op under a name scope for ``name`` (TF1's summary_scope) whose tag is that
    scope, and add it to ``collections`` (default: GraphKeys.SUMMARIES)."""
    name, family = _clean_tag(name), _clean_tag(family)
    if not name:
        raise ValueError("%s needs a non-empty name (the summary's tag)" % op_type)
    tensor = convert_to_tensor(tensor)
    graph = tensor.graph
    with graph.as_default(), graph.name_scope(name if family is None else family + "/" + name) as scope:
        tag = scope.rstrip("/") if family is None else family + "/" + scope.rstrip("/")
        out = make_op(op_type, [tensor], name=scope, tag=tag, **attrs)  # the op is named as its scope
    _collect(out, collections, [GraphKeys.SUMMARIES])
    return out


def _collect(value, collections, default_collections):
    graph = value.graph
    for key in default_collections if collections is None else collections:
        graph.add_to_collection(key, value)


def _check_real(op_type, tensor):
    dtype = tensor.dtype.base_dtype
    if dtype is _dtypes.string or dtype is _dtypes.bool:
        raise TypeError("%s needs a real-valued tensor, got %s of dtype %s"
                        % (op_type, tensor.name, dtype.name))


# -- ScalarSummary -------------------------------------------------------------------------------
def _scalar_summary_kernel(ctx, value, tag):
    value = np.asarray(_host(ctx, value))
    if value.ndim != 0:
        raise errors.InvalidArgumentError(
            None, None, "tf.summary.scalar %r needs a scalar value, got shape %s"
            % (tag, list(value.shape)))
    return _string_scalar([{"tag": tag, "simple_value": float(value)}])


def _scalar_summary_shape(op):
    shape = op.inputs[0].get_shape()
    if shape.ndims not in (None, 0):
        raise ValueError("tf.summary.scalar %r needs a scalar tensor, got %s of shape %s"
                         % (op.get_attr("tag"), op.inputs[0].name, shape))
    return scalar_shape(op)


register_op("ScalarSummary", dtype=lambda op: _dtypes.string, shape=_scalar_summary_shape,
            kernel=_scalar_summary_kernel, grad=None)


def scalar(name, tensor, collections=None, family=None):
    """A summary of the real scalar ``tensor`` tagged ``name`` (under the current name scope,
    and ``family``), added to ``collections`` (default ``[GraphKeys.SUMMARIES]``)."""
    tensor = convert_to_tensor(tensor)
    _check_real("tf.summary.scalar", tensor)
    return _summary_op("ScalarSummary", name, tensor, collections, family)


# -- HistogramSummary ----------------------------------------------------------------------------
def histogram_proto_fields(values):
    """The HistogramProto fields of ``values`` with TF1's default buckets, runs of empty buckets
    collapsed into one (TF1's Histogram::EncodeToProto with preserve_zero_buckets=False)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    counts = np.bincount(np.searchsorted(_BUCKET_LIMITS, values, side="right"),
                         minlength=len(_BUCKET_LIMITS))[:len(_BUCKET_LIMITS)]
    limits, buckets = [], []
    i, n = 0, len(counts)
    while i < n:
        end, count = _BUCKET_LIMITS[i], counts[i]
        i += 1
        if count <= 0:
            while i < n and counts[i] <= 0:
                end, count = _BUCKET_LIMITS[i], counts[i]
                i += 1
        limits.append(float(end))
        buckets.append(float(count))
    big = float(np.finfo(np.float64).max)
    return {"min": float(values.min()) if values.size else big,
            "max": float(values.max()) if values.size else -big,
            "num": float(values.size), "sum": float(values.sum()),
            "sum_squares": float(np.dot(values, values)),
            "bucket_limit": limits, "bucket": buckets}


def _histogram_summary_kernel(ctx, values, tag):
    values = np.asarray(_host(ctx, values), dtype=np.float64)
    if not np.isfinite(values).all():
        raise errors.InvalidArgumentError(
            None, None, "Nan in summary histogram for: %s (the histogrammed tensor holds NaN or "
            "Inf values)" % tag)
    return _string_scalar([{"tag": tag, "histo": histogram_proto_fields(values)}])


register_op("HistogramSummary", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_histogram_summary_kernel, grad=None)


def histogram(name, values, collections=None, family=None):
    """A histogram summary of the real tensor ``values`` tagged ``name`` (any shape), added to
    ``collections`` (default ``[GraphKeys.SUMMARIES]``); running it fails on NaN or Inf."""
    values = convert_to_tensor(values)
    _check_real("tf.summary.histogram", values)
    return _summary_op("HistogramSummary", name, values, collections, family)


# -- MergeSummary --------------------------------------------------------------------------------
def _merge_summary_kernel(ctx, *inputs):
    merged, seen = [], set()
    for serialized in inputs:
        for value in decode_summary(serialized):
            if value["tag"] in seen:
                raise errors.InvalidArgumentError(
                    None, None, "Duplicate tag %s found in summary inputs" % value["tag"])
            seen.add(value["tag"])
            merged.append(value)
    return _string_scalar(merged)


register_op("MergeSummary", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_merge_summary_kernel, grad=None)


def merge(inputs, collections=None, name=None):
    """One summary holding the values of all the summaries ``inputs`` (string scalars);
    running it fails on a duplicate tag. Added to ``collections`` (default: none)."""
    inputs = [convert_to_tensor(t) for t in inputs]
    if not inputs:
        raise ValueError("tf.summary.merge needs at least one summary to merge")
    for t in inputs:
        if t.dtype.base_dtype is not _dtypes.string:
            raise TypeError("tf.summary.merge takes summary tensors (string scalars), got %s of "
                            "dtype %s" % (t.name, t.dtype.name))
    out = make_op("MergeSummary", inputs, name=name or "Merge/MergeSummary")
    _collect(out, collections, [])
    return out


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Merge every summary of collection ``key`` (optionally only those whose name matches
    ``scope``) of the default graph; None if there is none."""
    summary_ops = get_default_graph().get_collection(key, scope=scope)
    if not summary_ops:
        return None
    return merge(summary_ops, name=name)
