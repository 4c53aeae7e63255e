"""Summary ops (``tf.summary.scalar/histogram/image/text/tensor_summary/merge/merge_all``): each
outputs a string scalar holding a serialized ``tf.Summary`` protobuf, byte for byte as TensorFlow
writes it (zps/ops/summary_proto.py), so ``tf.Summary.FromString`` reads it and
``tf.summary.FileWriter`` (zps/summary.py) writes it to TensorBoard event files.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     loss = scalar("loss", tf.constant(0.5))
...     merged = merge_all()
...     with tf.Session() as sess:
...         print(tf.Summary.FromString(sess.run(merged)), end="")
value {
  tag: "loss"
  simple_value: 0.5
}
"""

import re
import struct
import zlib

import numpy as np

from zps.distribute import distribute_lib
from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph
from zps.framework.protobuf import (
    DecodeError,
    Message,
    RepeatedCompositeContainer,
    RepeatedScalarContainer,
)
from zps.framework.registry import register_op
from zps.ops.op_util import make_op, scalar_shape
from zps.ops.summary_proto import HistogramProto, Summary, SummaryMetadata, TensorProto

__all__ = ["scalar", "histogram", "image", "text", "tensor_summary", "merge", "merge_all",
           "decode_summary"]


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


def _string_scalar(summary):
    out = np.empty((), dtype=object)
    out[()] = summary.SerializeToString()
    return out


def _host(ctx, value):
    return value.get() if ctx.backend != "numpy" else value  # cupy arrays are read on the host


def _parse_summary(serialized, what="decode_summary"):
    """The tf.Summary held by a summary op's output (bytes, or a numpy string scalar)."""
    if isinstance(serialized, np.ndarray):
        serialized = serialized.item()
    if not isinstance(serialized, (bytes, bytearray)):
        raise TypeError("%s expects the serialized output of a summary op (bytes), got %s"
                        % (what, type(serialized).__name__))
    try:
        return Summary.FromString(serialized)
    except DecodeError as e:
        raise ValueError("not a serialized tf.Summary (the output of a tf.summary op): %s"
                         % e) from e


def _as_dict(value):
    """A message as a dict of its set fields (recursively); other values as they are."""
    if isinstance(value, (list, RepeatedCompositeContainer, RepeatedScalarContainer)):
        return [_as_dict(v) for v in value]
    if isinstance(value, Message):
        return {name: _as_dict(v) for name, v in value.ListFields()}
    return value


def decode_summary(serialized):
    """The values of a summary op's output (bytes or a numpy string scalar) as dicts of their set
    fields: ``[{"tag": "loss", "simple_value": 0.5}, ...]``. ``tf.Summary.FromString`` gives the
    proto itself."""
    return [_as_dict(value) for value in _parse_summary(serialized).value]


def _clean_tag(name):
    """TF1's clean_tag: characters outside [-/\\w.] become '_', leading slashes are dropped."""
    if name is None:
        return None
    return _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


def skip_summary():
    """Whether summaries are skipped here: in a tf.distribute replica function, every replica
    but the first makes none (TF 1.15's distribute summary_op_util.skip_summary)."""
    ctx = distribute_lib.get_replica_context()
    return ctx is not None and ctx.replica_id_in_sync_group > 0


def _summary_op(op_type, name, tensor, collections, family, **attrs):
    """Build a summary op under a name scope for ``name`` (TF1's summary_scope) whose tag is that
    scope, and add it to ``collections`` (default: GraphKeys.SUMMARIES). In a replica function
    of a tf.distribute strategy, replicas after the first get an empty string constant instead
    (as TF 1.15)."""
    if skip_summary():
        return constant("")
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
    return _string_scalar(Summary(value=[Summary.Value(tag=tag, simple_value=float(value))]))


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
    histo = HistogramProto(**histogram_proto_fields(values))
    return _string_scalar(Summary(value=[Summary.Value(tag=tag, histo=histo)]))


register_op("HistogramSummary", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_histogram_summary_kernel, grad=None)


def histogram(name, values, collections=None, family=None):
    """A histogram summary of the real tensor ``values`` tagged ``name`` (any shape), added to
    ``collections`` (default ``[GraphKeys.SUMMARIES]``); running it fails on NaN or Inf."""
    values = convert_to_tensor(values)
    _check_real("tf.summary.histogram", values)
    return _summary_op("HistogramSummary", name, values, collections, family)


# -- ImageSummary --------------------------------------------------------------------------------
_IMAGE_DTYPES = (_dtypes.uint8, _dtypes.float32, _dtypes.float16, _dtypes.float64)
_PNG_COLOR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type: grayscale, RGB, RGBA


def encode_png(image):
    """The PNG file (bytes) of the uint8 image ``image`` [height, width, channels], channels 1
    (grayscale), 3 (RGB) or 4 (RGBA): unfiltered rows, zlib-compressed at the default level."""
    height, width, channels = image.shape

    def chunk(kind, data):
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = np.zeros((height, 1 + width * channels), np.uint8)  # each row: filter type 0, pixels
    rows[:, 1:] = image.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPES[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes())) + chunk(b"IEND", b""))


def _normalize_float_image(image, bad_color):
    """TF1's ImageSummary normalization of one float image [h, w, c] to uint8 (summary_image_op.cc):
    non-negative images are scaled so their maximum is 255; others so that 0 is 128 and the
    largest magnitude 127 away. Pixels with a non-finite channel become ``bad_color``. The
    arithmetic is TF's: min/max in float32, the affine map in the image's own dtype."""
    kind = image.dtype.type
    finite = np.isfinite(image).all(axis=-1)
    good = image[finite].astype(np.float32)
    image_min = good.min() if good.size else np.float32(np.inf)
    image_max = good.max() if good.size else np.float32(-np.inf)
    if image_min < 0:
        max_val = max(abs(image_min), abs(image_max))
        scale = kind(0.0 if max_val < 1e-6 else np.float32(127.0) / max_val)
        offset = kind(128.0)
    else:
        scale = kind(0.0 if image_max < 1e-6 else np.float32(255.0) / image_max)
        offset = kind(0.0)
    scaled = np.where(finite[..., None], image, kind(0)) * scale + offset
    return np.where(finite[..., None], scaled.astype(np.uint8), bad_color[:image.shape[-1]])


def _image_summary_kernel(ctx, tensor, tag, max_images, bad_color):
    tensor = np.asarray(_host(ctx, tensor))
    if tensor.ndim != 4 or tensor.shape[3] not in _PNG_COLOR_TYPES:
        raise errors.InvalidArgumentError(
            None, None, "tf.summary.image %r: Tensor must be 4-D with last dim 1, 3, or 4, not %s"
            % (tag, list(tensor.shape)))
    batch, height, width, channels = tensor.shape
    if batch and not height * width:
        raise errors.InvalidArgumentError(
            None, None, "tf.summary.image %r: an image of %dx%d pixels cannot be encoded as PNG"
            % (tag, height, width))
    summary = Summary()
    for i in range(min(max_images, batch)):
        image = tensor[i] if tensor.dtype == np.uint8 else \
            _normalize_float_image(tensor[i], np.asarray(bad_color, np.uint8))
        # the tag depends on the number of images asked for, not the number produced
        summary.value.add(tag="%s/image/%d" % (tag, i) if max_images > 1 else tag + "/image",
                          image=Summary.Image(height=height, width=width, colorspace=channels,
                                              encoded_image_string=encode_png(image)))
    return _string_scalar(summary)


register_op("ImageSummary", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_image_summary_kernel, grad=None)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A summary of up to ``max_outputs`` images of the 4-D ``tensor`` [batch, height, width,
    channels] (channels 1, 3 or 4; uint8, or float normalized per image to [0, 255]) as PNGs,
    tagged ``name/image/0``, ``name/image/1`` ... (``name/image`` when ``max_outputs`` is 1)."""
    tensor = convert_to_tensor(tensor)
    dtype = tensor.dtype.base_dtype
    if dtype not in _IMAGE_DTYPES:
        raise TypeError("Value passed to parameter 'tensor' has DataType %s not in list of allowed "
                        "values: uint8, float32, float16, float64" % dtype.name)
    if max_outputs < 1:
        raise ValueError("Attr 'max_images' of 'ImageSummary' Op passed %d less than minimum 1."
                         % max_outputs)
    return _summary_op("ImageSummary", name, tensor, collections, family,
                       max_images=int(max_outputs), bad_color=(255, 0, 0, 255))


# -- TensorSummaryV2 -----------------------------------------------------------------------------
def _tensor_proto(array):
    """A TensorProto of ``array`` as TF's AsProtoTensorContent writes it: numbers as raw
    little-endian ``tensor_content``, strings as ``string_val``."""
    dtype = _dtypes.as_dtype(array.dtype)
    proto = TensorProto(dtype=dtype.as_datatype_enum,
                        tensor_shape={"dim": [{"size": n} for n in array.shape]})
    if dtype is _dtypes.string:
        proto.string_val.extend(v.encode("utf-8") if isinstance(v, str) else v
                                for v in array.ravel())
    else:
        little_endian = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
        proto.tensor_content = np.ascontiguousarray(array, little_endian).tobytes()
    return proto


def _tensor_summary_kernel(ctx, tensor, tag, serialized_summary_metadata):
    value = Summary.Value(tag=tag, tensor=_tensor_proto(np.asarray(_host(ctx, tensor))),
                          metadata=SummaryMetadata.FromString(serialized_summary_metadata))
    return _string_scalar(Summary(value=[value]))


register_op("TensorSummaryV2", dtype=lambda op: _dtypes.string, shape=scalar_shape,
            kernel=_tensor_summary_kernel, grad=None)


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A summary holding the whole ``tensor`` (a TensorProto) with ``summary_metadata`` (a
    tf.SummaryMetadata; ``display_name`` and ``summary_description`` are set on it)."""
    metadata = SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if display_name:
        metadata.display_name = display_name
    if summary_description:
        metadata.summary_description = summary_description
    return _summary_op("TensorSummaryV2", name, tensor, collections, family,
                       serialized_summary_metadata=metadata.SerializeToString())


def text(name, tensor, collections=None):
    """A summary of the string ``tensor`` (any shape) shown by TensorBoard's text plugin
    (Markdown), tagged ``name``."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype.base_dtype is not _dtypes.string:
        raise ValueError("Expected tensor %s to have dtype string, got %s"
                         % (tensor.name, tensor.dtype.name))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, collections=collections, summary_metadata=metadata)


# -- MergeSummary --------------------------------------------------------------------------------
def _merge_summary_kernel(ctx, *inputs):
    merged, seen = Summary(), set()
    for serialized in inputs:
        try:
            summary = _parse_summary(serialized, "tf.summary.merge")
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, "Could not parse one of the summary "
                                              "inputs: %s" % e) from e
        for value in summary.value:
            if value.tag in seen:
                raise errors.InvalidArgumentError(
                    None, None, "Duplicate tag %s found in summary inputs" % value.tag)
            seen.add(value.tag)
        merged.MergeFrom(summary)
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
