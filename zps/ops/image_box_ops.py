"""Bounding boxes (``tf.image``, see zps/image.py): non-max suppression (plain, with scores and
soft-NMS, padded, on overlaps, combined over classes), crop_and_resize with its gradients,
draw_bounding_boxes and sample_distorted_bounding_box, with TF1's kernels' semantics.

Boxes are ``[y1, x1, y2, x2]`` in normalized coordinates (``crop_and_resize``,
``draw_bounding_boxes``, ``sample_distorted_bounding_box``) or any coordinates (the NMS ops,
which accept either diagonal). Ties in score are broken by the lower box index, as TF's kernels.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     boxes = [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]
...     keep = tf.image.non_max_suppression(boxes, [0.9, 0.8, 0.7], 3, iou_threshold=0.5)
...     print(tf.Session().run(keep))
[0 2]
"""

import heapq

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, random_ops
from zps.ops.op_util import make_op


def _fail(op_name, message, *args):
    raise errors.InvalidArgumentError(None, op_name, message % args)


def _check_shape(value, shape, what, op_name):
    """Run-time check that ``value`` has ``shape`` (None: any size)."""
    if value.ndim != len(shape) or any(s is not None and d != s for d, s in zip(value.shape, shape)):
        _fail(op_name, "%s must have shape %s, got %s", what,
              "[%s]" % ", ".join("?" if s is None else str(s) for s in shape), list(value.shape))


def _static_check(tensor, shape, what, op_type):
    """Build-time check of ``tensor``'s rank and known dimensions against ``shape``."""
    static = tensor.get_shape()
    if static.ndims is None:
        return
    if static.ndims != len(shape) or any(
            s is not None and d is not None and d != s for d, s in zip(static.as_list(), shape)):
        raise ValueError("%s: %s must have shape %s, got %s" % (
            op_type, what, "[%s]" % ", ".join("?" if s is None else str(s) for s in shape),
            static))


# -- non-max suppression (TF's DoNonMaxSuppressionOp) ----------------------------------------------
def _iou_matrix(boxes):
    """TF's IOU of every pair of ``boxes`` [n, 4] (either diagonal), in float32; 0 where a box has
    no area."""
    b = np.asarray(boxes, np.float32)
    ymin, ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    xmin, xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)
    inter = (np.maximum(np.minimum(ymax[:, None], ymax) - np.maximum(ymin[:, None], ymin), 0) *
             np.maximum(np.minimum(xmax[:, None], xmax) - np.maximum(xmin[:, None], xmin), 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[:, None] + area - inter)
    return np.where((area[:, None] > 0) & (area > 0), iou, np.float32(0)).astype(np.float32)


def _suppress(similarity, scores, max_output_size, threshold, score_threshold, soft_nms_sigma=0.0):
    """``(selected indices, their scores)``, by TF's greedy loop: the best remaining candidate is
    kept unless a kept box overlaps it by more than ``threshold``; with ``soft_nms_sigma > 0``
    overlaps decay its score by ``exp(-overlap**2 / (2 sigma))`` instead (and it is queued again)."""
    scores = np.asarray(scores, np.float32)
    threshold, score_threshold = np.float32(threshold), np.float32(score_threshold)
    soft = soft_nms_sigma > 0
    scale = np.float32(-0.5 / soft_nms_sigma) if soft else np.float32(0)
    queue = [(-s, i, 0) for i, s in enumerate(scores.tolist()) if s > score_threshold]
    heapq.heapify(queue)   # best score first, then the lower index
    selected, selected_scores = [], []
    while len(selected) < max_output_size and queue:
        neg, index, begin = heapq.heappop(queue)
        original = score = np.float32(-neg)
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = np.float32(similarity[index, selected[j]])
            weight = np.exp(scale * sim * sim, dtype=np.float32)
            score = np.float32(score * (weight if soft or sim <= threshold else np.float32(0)))
            if not soft and sim > threshold:
                hard = True
                break
            if score <= score_threshold:
                break
        if hard:
            continue
        if score == original:
            selected.append(index)
            selected_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-float(score), index, len(selected)))
    return np.asarray(selected, np.int32), np.asarray(selected_scores, np.float32)


def _nms_args(op_name, boxes, scores, max_output_size, iou_threshold):
    _check_shape(boxes, (None, 4), "boxes", op_name)
    _check_shape(scores, (boxes.shape[0],), "scores", op_name)
    if np.ndim(max_output_size) != 0:
        _fail(op_name, "max_output_size must be a scalar, got shape %s",
              list(np.shape(max_output_size)))
    if int(max_output_size) < 0:
        _fail(op_name, "max_output_size must be non-negative, got %d", int(max_output_size))
    if not 0 <= float(iou_threshold) <= 1:
        _fail(op_name, "iou_threshold must be in [0, 1], got %g", float(iou_threshold))
    return int(max_output_size)


def _padded(values, size, pad):
    if not pad:
        return values
    out = np.zeros((size,), values.dtype)
    out[:len(values)] = values
    return out


def _nms_v3_kernel(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold, op_name):
    size = _nms_args(op_name, boxes, scores, max_output_size, iou_threshold)
    keep, _ = _suppress(_iou_matrix(boxes), scores, size, iou_threshold, score_threshold)
    return ctx.xp.asarray(keep)


def _nms_v4_kernel(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold,
                   pad_to_max_output_size, op_name):
    size = _nms_args(op_name, boxes, scores, max_output_size, iou_threshold)
    keep, _ = _suppress(_iou_matrix(boxes), scores, size, iou_threshold, score_threshold)
    return [ctx.xp.asarray(_padded(keep, size, pad_to_max_output_size)),
            ctx.xp.asarray(np.int32(len(keep)))]


def _nms_v5_kernel(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold,
                   soft_nms_sigma, pad_to_max_output_size, op_name):
    size = _nms_args(op_name, boxes, scores, max_output_size, iou_threshold)
    if float(soft_nms_sigma) < 0:
        _fail(op_name, "soft_nms_sigma must be non-negative, got %g", float(soft_nms_sigma))
    keep, kept_scores = _suppress(_iou_matrix(boxes), scores, size, iou_threshold,
                                  score_threshold, float(soft_nms_sigma))
    pad = pad_to_max_output_size
    return [ctx.xp.asarray(_padded(keep, size, pad)),
            ctx.xp.asarray(_padded(kept_scores, size, pad).astype(scores.dtype)),
            ctx.xp.asarray(np.int32(len(keep)))]


def _nms_overlaps_kernel(ctx, overlaps, scores, max_output_size, overlap_threshold,
                         score_threshold, op_name):
    _check_shape(overlaps, (None, None), "overlaps", op_name)
    if overlaps.shape[0] != overlaps.shape[1]:
        _fail(op_name, "overlaps must be square, got shape %s", list(overlaps.shape))
    _check_shape(scores, (overlaps.shape[0],), "scores", op_name)
    if int(max_output_size) < 0:
        _fail(op_name, "max_output_size must be non-negative, got %d", int(max_output_size))
    keep, _ = _suppress(np.asarray(overlaps, np.float32), scores, int(max_output_size),
                        overlap_threshold, score_threshold)
    return ctx.xp.asarray(keep)


def _selected_shape(op, pad=False):
    size = constant_value(op.inputs[2]) if pad else None
    return TensorShape([None if size is None else int(size)])


def _nms_outputs_shape(op):
    pad = op._attrs.get("pad_to_max_output_size", False)
    shapes = [_selected_shape(op, pad)] * (2 if op.type == "NonMaxSuppressionV5" else 1)
    return shapes + [TensorShape([])]


_int32 = lambda op: _dtypes.int32   # noqa: E731
register_op("NonMaxSuppressionV3", dtype=_int32, shape=_selected_shape, kernel=_nms_v3_kernel,
            needs_op_name=True, grad=None)
register_op("NonMaxSuppressionV4", num_outputs=2, dtype=lambda op: [_dtypes.int32] * 2,
            shape=_nms_outputs_shape, kernel=_nms_v4_kernel, needs_op_name=True, grad=None)
register_op("NonMaxSuppressionV5", num_outputs=3,
            dtype=lambda op: [_dtypes.int32, op.inputs[1].dtype, _dtypes.int32],
            shape=_nms_outputs_shape, kernel=_nms_v5_kernel, needs_op_name=True, grad=None)
register_op("NonMaxSuppressionWithOverlaps", dtype=_int32, shape=_selected_shape,
            kernel=_nms_overlaps_kernel, needs_op_name=True, grad=None)


def _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, op_type,
                what="boxes"):
    boxes = convert_to_tensor(boxes, dtype=_dtypes.float32, name=what)
    scores = convert_to_tensor(scores, dtype=_dtypes.float32, name="scores")
    _static_check(boxes, (None, 4) if what == "boxes" else (None, None), what, op_type)
    _static_check(scores, (boxes.get_shape().as_list()[0] if boxes.get_shape().ndims else None,),
                  "scores", op_type)
    max_output_size = convert_to_tensor(max_output_size, dtype=_dtypes.int32,
                                        name="max_output_size")
    _static_check(max_output_size, (), "max_output_size", op_type)
    return [boxes, scores, max_output_size,
            convert_to_tensor(iou_threshold, dtype=_dtypes.float32, name="iou_threshold"),
            convert_to_tensor(score_threshold, dtype=_dtypes.float32, name="score_threshold")]


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """The indices (int32, best score first, at most ``max_output_size``) of the boxes kept by
    greedy non-max suppression: a box is dropped when its IoU with a kept, better-scoring box is
    above ``iou_threshold``; boxes scoring at most ``score_threshold`` are never kept."""
    with get_default_graph().name_scope(name or "non_max_suppression"):
        inputs = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold,
                             "NonMaxSuppressionV3")
        return make_op("NonMaxSuppressionV3", inputs, name="NonMaxSuppressionV3")


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name=None):
    """``(selected_indices, selected_scores)`` of non-max suppression; with ``soft_nms_sigma >
    0``, Soft-NMS (Bodla et al.): overlapping boxes' scores decay by ``exp(-iou**2 / (2 *
    sigma))`` instead of being dropped, and the scores returned are the decayed ones.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     keep, s = tf.image.non_max_suppression_with_scores(
    ...         [[0, 0, 1, 1], [0, 0, 1, 1]], [0.9, 0.8], 2, soft_nms_sigma=0.5)
    ...     print(tf.Session().run(keep), tf.Session().run(s).round(4))   # 0.8 * exp(-1)
    [0 1] [0.9    0.2943]
    """
    with get_default_graph().name_scope(name or "non_max_suppression_with_scores"):
        inputs = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold,
                             "NonMaxSuppressionV5")
        sigma = convert_to_tensor(soft_nms_sigma, dtype=_dtypes.float32, name="soft_nms_sigma")
        keep, kept_scores, _ = make_op("NonMaxSuppressionV5", inputs + [sigma],
                                       name="NonMaxSuppressionV5", pad_to_max_output_size=False)
        return keep, kept_scores


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None):
    """``(selected_indices, valid_outputs)`` of ``non_max_suppression`` on one image's boxes;
    with ``pad_to_max_output_size`` the indices are padded with zeros to ``max_output_size``
    (``valid_outputs`` says how many are real)."""
    with get_default_graph().name_scope(name or "non_max_suppression_padded"):
        inputs = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold,
                             "NonMaxSuppressionV4")
        keep, valid = make_op("NonMaxSuppressionV4", inputs, name="NonMaxSuppressionV4",
                              pad_to_max_output_size=bool(pad_to_max_output_size))
        return keep, valid


def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """Greedy non-max suppression on a given ``[num_boxes, num_boxes]`` matrix of ``overlaps``
    (any similarity): a candidate is dropped when its overlap with a kept box is above
    ``overlap_threshold``."""
    with get_default_graph().name_scope(name or "non_max_suppression_overlaps"):
        inputs = _nms_inputs(overlaps, scores, max_output_size, overlap_threshold,
                             score_threshold, "NonMaxSuppressionWithOverlaps", "overlaps")
        return make_op("NonMaxSuppressionWithOverlaps", inputs,
                       name="NonMaxSuppressionWithOverlaps")


def _combined_nms_kernel(ctx, boxes, scores, max_output_size_per_class, max_total_size,
                         iou_threshold, score_threshold, pad_per_class, clip_boxes, op_name):
    _check_shape(boxes, (None, None, None, 4), "boxes", op_name)
    batch, num_boxes, q, _ = boxes.shape
    _check_shape(scores, (batch, num_boxes, None), "scores", op_name)
    num_classes = scores.shape[2]
    if q not in (1, num_classes):
        _fail(op_name, "third dimension of boxes must be either 1 or num_classes (%d), got %d",
              num_classes, q)
    per_class, total = int(max_output_size_per_class), int(max_total_size)
    if per_class <= 0 or total <= 0:
        _fail(op_name, "max_output_size_per_class and max_total_size must be > 0, got %d and %d",
              per_class, total)
    if not 0 <= float(iou_threshold) <= 1:
        _fail(op_name, "iou_threshold must be in [0, 1], got %g", float(iou_threshold))
    size = min(total, per_class * num_classes) if pad_per_class else total
    out_boxes = np.zeros((batch, size, 4), np.float32)
    out_scores = np.zeros((batch, size), np.float32)
    out_classes = np.zeros((batch, size), np.float32)
    valid = np.zeros((batch,), np.int32)
    for b in range(batch):
        found = []   # (-score, class, index): best first, then the lower class and index
        for c in range(num_classes):
            class_boxes = boxes[b, :, c if q > 1 else 0]
            keep, kept = _suppress(_iou_matrix(class_boxes), scores[b, :, c], per_class,
                                   iou_threshold, score_threshold)
            found += [(-float(s), c, int(i)) for i, s in zip(keep, kept)]
        found = sorted(found)[:size]
        valid[b] = len(found)
        for k, (neg, c, i) in enumerate(found):
            out_boxes[b, k] = boxes[b, i, c if q > 1 else 0]
            out_scores[b, k], out_classes[b, k] = -neg, c
    if clip_boxes:
        out_boxes = np.clip(out_boxes, 0, 1)
    xp = ctx.xp
    return [xp.asarray(out_boxes), xp.asarray(out_scores), xp.asarray(out_classes),
            xp.asarray(valid)]


def _combined_nms_shape(op):
    batch = op.inputs[0].get_shape().with_rank(4)[0].value
    per_class, total = constant_value(op.inputs[2]), constant_value(op.inputs[3])
    classes = op.inputs[1].get_shape().with_rank(3)[2].value
    size = None if total is None else int(total)
    if op._attrs["pad_per_class"]:
        size = None if None in (size, per_class, classes) else min(size, int(per_class) * classes)
    return [TensorShape([batch, size, 4]), TensorShape([batch, size]), TensorShape([batch, size]),
            TensorShape([batch])]


register_op("CombinedNonMaxSuppression", num_outputs=4,
            dtype=lambda op: [_dtypes.float32] * 3 + [_dtypes.int32], shape=_combined_nms_shape,
            kernel=_combined_nms_kernel, needs_op_name=True, grad=None)


def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold=0.5, score_threshold=float("-inf"),
                                 pad_per_class=False, clip_boxes=True, name=None):
    """Non-max suppression per class and per image, then the best ``max_total_size`` of all
    classes: ``(nmsed_boxes [batch, n, 4], nmsed_scores [batch, n], nmsed_classes [batch, n],
    valid_detections [batch])``, zero-padded after each image's valid detections. ``boxes`` is
    ``[batch, num_boxes, q, 4]`` (``q`` 1: shared by all classes, or ``num_classes``), ``scores``
    ``[batch, num_boxes, num_classes]``; ``n`` is ``max_total_size`` (with ``pad_per_class``, at
    most ``max_output_size_per_class * num_classes``); ``clip_boxes`` clips to [0, 1]."""
    with get_default_graph().name_scope(name or "combined_non_max_suppression"):
        boxes = convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")
        scores = convert_to_tensor(scores, dtype=_dtypes.float32, name="scores")
        _static_check(boxes, (None, None, None, 4), "boxes", "CombinedNonMaxSuppression")
        _static_check(scores, (None, None, None), "scores", "CombinedNonMaxSuppression")
        ints = [convert_to_tensor(v, dtype=_dtypes.int32, name=n) for v, n in
                ((max_output_size_per_class, "max_output_size_per_class"),
                 (max_total_size, "max_total_size"))]
        floats = [convert_to_tensor(v, dtype=_dtypes.float32, name=n) for v, n in
                  ((iou_threshold, "iou_threshold"), (score_threshold, "score_threshold"))]
        return tuple(make_op("CombinedNonMaxSuppression", [boxes, scores] + ints + floats,
                             name="CombinedNonMaxSuppression", pad_per_class=bool(pad_per_class),
                             clip_boxes=bool(clip_boxes)))


# -- CropAndResize and its gradients (TF's crop_and_resize_op.cc) ---------------------------------
def _crop_axis(start, end, crop, size):
    """The float32 input coordinate of each output pixel along one axis ``[num_boxes, crop]``
    and where it lies inside the image."""
    start, end = start.astype(np.float32), end.astype(np.float32)
    if crop > 1:
        scale = (end - start) * np.float32(size - 1) / np.float32(crop - 1)
        coords = start[:, None] * np.float32(size - 1) + np.arange(crop, dtype=np.float32) * \
            scale[:, None]
    else:
        coords = (0.5 * (start.astype(np.float64) + end) * (size - 1)).astype(np.float32)[:, None]
    return coords.astype(np.float32), (coords >= 0) & (coords <= size - 1)


def _crop_args(op_name, image, boxes, box_index, crop_size, batch, height, width):
    _check_shape(boxes, (None, 4), "boxes", op_name)
    _check_shape(box_index, (boxes.shape[0],), "box_index", op_name)
    ch, cw = (int(s) for s in np.asarray(crop_size).reshape(-1))
    if ch <= 0 or cw <= 0:
        _fail(op_name, "crop dimensions must be positive, got crop_size [%d, %d]", ch, cw)
    if height <= 0 or width <= 0:
        _fail(op_name, "image dimensions must be positive, got %s", [batch, height, width])
    if np.any((box_index < 0) | (box_index >= batch)):
        _fail(op_name, "box_index has values outside [0, batch_size): %s (batch_size %d)",
              np.asarray(box_index).tolist(), batch)
    ys, y_ok = _crop_axis(boxes[:, 0], boxes[:, 2], ch, height)
    xs, x_ok = _crop_axis(boxes[:, 1], boxes[:, 3], cw, width)
    return ys, xs, y_ok[:, :, None] & x_ok[:, None, :]


def _roundf(coords, size):
    """C's roundf (halves away from zero) as indices clipped into ``[0, size)``."""
    whole = np.trunc(coords)
    rounded = np.where(np.abs(coords - whole) == 0.5, whole + np.sign(coords), np.round(coords))
    return np.clip(rounded, 0, size - 1).astype(np.int64)


def _corners(coords, size):
    low = np.clip(np.floor(coords), 0, size - 1).astype(np.int64)
    high = np.clip(np.ceil(coords), 0, size - 1).astype(np.int64)
    return low, high, (coords - np.floor(coords)).astype(np.float32)


def _crop_and_resize_kernel(ctx, image, boxes, box_index, crop_size, method,
                            extrapolation_value, op_name):
    if image.ndim != 4:
        _fail(op_name, "input image must be 4-D [batch, height, width, depth], got shape %s",
              list(image.shape))
    batch, height, width, _ = image.shape
    ys, xs, inside = _crop_args(op_name, image, boxes, box_index, crop_size, batch, height,
                                width)
    img = np.asarray(image).astype(np.float32, copy=False)
    b = np.asarray(box_index)[:, None, None]
    if method == "nearest":
        rows, cols = _roundf(ys, height), _roundf(xs, width)
        out = img[b, rows[:, :, None], cols[:, None, :]]
    else:
        top, bottom, y_lerp = _corners(ys, height)
        left, right, x_lerp = _corners(xs, width)
        t, bo = top[:, :, None], bottom[:, :, None]
        le, ri = left[:, None, :], right[:, None, :]
        xl = x_lerp[:, None, :, None]
        upper = img[b, t, le] + (img[b, t, ri] - img[b, t, le]) * xl
        lower = img[b, bo, le] + (img[b, bo, ri] - img[b, bo, le]) * xl
        out = upper + (lower - upper) * y_lerp[:, :, None, None]
    out = np.where(inside[..., None], out, np.float32(extrapolation_value)).astype(np.float32)
    return ctx.xp.asarray(out)


def _crop_and_resize_shape(op):
    image = op.inputs[0].get_shape().with_rank(4)
    num_boxes = op.inputs[1].get_shape().with_rank(2)[0]
    size = constant_value(op.inputs[3])
    ch, cw = [None, None] if size is None else [int(s) for s in np.asarray(size).reshape(-1)]
    return TensorShape([num_boxes, ch, cw, image[3]])


def _crop_and_resize_grad_image_kernel(ctx, grads, boxes, box_index, image_size, dtype, method,
                                       op_name):
    batch, height, width, depth = (int(s) for s in np.asarray(image_size).reshape(-1))
    ys, xs, inside = _crop_args(op_name, None, boxes, box_index, grads.shape[1:3], batch, height,
                                width)
    g = np.where(inside[..., None], np.asarray(grads, np.float32), np.float32(0))
    out = np.zeros((batch, height, width, depth), np.float32)
    b = np.broadcast_to(np.asarray(box_index)[:, None, None], inside.shape)
    if method == "nearest":
        r, c = np.broadcast_arrays(_roundf(ys, height)[:, :, None],
                                   _roundf(xs, width)[:, None, :])
        np.add.at(out, (b, r, c), g)
    else:
        top, bottom, y_lerp = _corners(ys, height)
        left, right, x_lerp = _corners(xs, width)
        yl, xl = y_lerp[:, :, None, None], x_lerp[:, None, :, None]
        for rows, wy in ((top, 1 - yl), (bottom, yl)):
            for cols, wx in ((left, 1 - xl), (right, xl)):
                r, c = np.broadcast_arrays(rows[:, :, None], cols[:, None, :])
                np.add.at(out, (b, r, c), g * wy * wx)
    return ctx.xp.asarray(out.astype(dtype.as_numpy_dtype))


def _crop_and_resize_grad_boxes_kernel(ctx, grads, image, boxes, box_index, op_name):
    batch, height, width, _ = image.shape
    ch, cw = grads.shape[1:3]
    ys, xs, inside = _crop_args(op_name, image, boxes, box_index, (ch, cw), batch, height, width)
    img = np.asarray(image, np.float32)
    b = np.asarray(box_index)[:, None, None]
    top, bottom, y_lerp = _corners(ys, height)
    left, right, x_lerp = _corners(xs, width)
    t, bo, le, ri = top[:, :, None], bottom[:, :, None], left[:, None, :], right[:, None, :]
    tl, tr, bl, br = img[b, t, le], img[b, t, ri], img[b, bo, le], img[b, bo, ri]
    yl, xl = y_lerp[:, :, None, None], x_lerp[:, None, :, None]
    g = np.where(inside[..., None], np.asarray(grads, np.float32), np.float32(0))
    grad_y = ((1 - xl) * (bl - tl) + xl * (br - tr)) * g
    grad_x = ((1 - yl) * (tr - tl) + yl * (br - bl)) * g
    out = np.zeros((boxes.shape[0], 4), np.float32)
    for axis, grad, crop, size in ((0, grad_y, ch, height), (1, grad_x, cw, width)):
        other = (2, 3) if axis == 0 else (1, 3)
        along = grad.sum(axis=other)   # [num_boxes, crop]
        if crop > 1:
            ratio = np.float32(size - 1) / np.float32(crop - 1)
            steps = np.arange(crop, dtype=np.float32) * ratio
            out[:, axis] = (along * (np.float32(size - 1) - steps)).sum(1)
            out[:, axis + 2] = (along * steps).sum(1)
        else:
            out[:, axis] = out[:, axis + 2] = along.sum(1) * np.float32(0.5 * (size - 1))
    return ctx.xp.asarray(out)


def _crop_and_resize_grad(op, grad):
    image = op.inputs[0]
    grad_image = None
    if image.dtype.base_dtype in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        grad_image = make_op("CropAndResizeGradImage",
                             [grad, op.inputs[1], op.inputs[2],
                              array_ops.shape(image, out_type=_dtypes.int32)],
                             dtype=image.dtype.base_dtype, method=op._attrs["method"])
    grad_boxes = make_op("CropAndResizeGradBoxes", [grad, image, op.inputs[1], op.inputs[2]],
                         method="bilinear")
    return [grad_image, grad_boxes, None, None]


register_op("CropAndResize", dtype=lambda op: _dtypes.float32, shape=_crop_and_resize_shape,
            kernel=_crop_and_resize_kernel, needs_op_name=True, grad=_crop_and_resize_grad)


def _grad_image_shape(op):
    size = constant_value(op.inputs[3])
    return TensorShape(None if size is None else [int(s) for s in np.asarray(size).reshape(-1)])


register_op("CropAndResizeGradImage", dtype=lambda op: op._attrs["dtype"], shape=_grad_image_shape,
            kernel=_crop_and_resize_grad_image_kernel, needs_op_name=True)
register_op("CropAndResizeGradBoxes", dtype=lambda op: _dtypes.float32,
            shape=lambda op: op.inputs[2].get_shape(),
            kernel=lambda ctx, grads, image, boxes, box_index, method, op_name:
            _crop_and_resize_grad_boxes_kernel(ctx, grads, image, boxes, box_index, op_name),
            needs_op_name=True)


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0, name=None, box_indices=None):
    """Crops of ``image`` ([batch, height, width, depth]) resized to ``crop_size``: one per row of
    ``boxes`` ([num_boxes, 4] normalized ``[y1, x1, y2, x2]``; y1 > y2 flips the crop), taken
    from the image ``box_ind[i]``; ``[num_boxes, crop_height, crop_width, depth]`` float32.
    Samples outside the image are ``extrapolation_value``. ``method`` is "bilinear" or
    "nearest". Differentiable with respect to the image and the boxes.

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     image = tf.constant(np.arange(9.0).reshape(1, 3, 3, 1))
    ...     crop = tf.image.crop_and_resize(image, [[0, 0, 0.5, 0.5]], [0], [2, 2])
    ...     print(tf.Session().run(crop)[0, ..., 0])
    [[0. 1.]
     [3. 4.]]
    """
    if box_ind is not None and box_indices is not None:
        raise ValueError("crop_and_resize: give box_ind or box_indices, not both")
    box_ind = box_indices if box_ind is None else box_ind
    if box_ind is None or crop_size is None:
        raise TypeError("crop_and_resize needs box_ind (box_indices) and crop_size")
    if method not in ("bilinear", "nearest"):
        raise ValueError("crop_and_resize: method must be 'bilinear' or 'nearest', got %r"
                         % (method,))
    with get_default_graph().name_scope(name or "crop_and_resize"):
        image = convert_to_tensor(image, name="image")
        if not (image.dtype.is_floating or image.dtype.is_integer):
            raise TypeError("crop_and_resize: image must be a number tensor, got %s"
                            % image.dtype.name)
        _static_check(image, (None, None, None, None), "image", "CropAndResize")
        boxes = convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")
        _static_check(boxes, (None, 4), "boxes", "CropAndResize")
        box_ind = convert_to_tensor(box_ind, dtype=_dtypes.int32, name="box_ind")
        _static_check(box_ind, (boxes.get_shape()[0].value if boxes.get_shape().ndims else None,),
                      "box_ind", "CropAndResize")
        crop_size = convert_to_tensor(crop_size, dtype=_dtypes.int32, name="crop_size")
        _static_check(crop_size, (2,), "crop_size", "CropAndResize")
        return make_op("CropAndResize", [image, boxes, box_ind, crop_size], name="CropAndResize",
                       method=method, extrapolation_value=float(extrapolation_value))


# -- DrawBoundingBoxes ------------------------------------------------------------------------------
_DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                            [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1],
                            [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


def _draw_kernel(ctx, images, boxes, colors=None, op_name=None):
    if images.ndim != 4:
        _fail(op_name, "The rank of the images should be 4, got shape %s", list(images.shape))
    batch, height, width, depth = images.shape
    if depth not in (1, 2, 3, 4):
        _fail(op_name, "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA), got %d",
              depth)
    _check_shape(boxes, (batch, None, 4), "boxes", op_name)
    table = _DEFAULT_COLORS.copy() if colors is None or colors.size == 0 else \
        np.asarray(colors, np.float32)
    if table.ndim != 2 or table.shape[1] < depth:
        _fail(op_name, "colors must be a 2-D matrix [num_colors, >= depth (%d)], got shape %s",
              depth, list(table.shape))
    if depth == 1:
        table[:, 0] = 1   # grayscale: boxes are white
    canvas = np.array(images)
    for b in range(batch):
        for k, box in enumerate(np.asarray(boxes[b], np.float32)):
            color = table[k % len(table), :depth].astype(canvas.dtype)
            top, left, bottom, right = (int(np.float32(v) * np.float32(s - 1)) for v, s in
                                        zip(box, (height, width, height, width)))
            if top > bottom or left > right or top >= height or bottom < 0 or \
                    left >= width or right < 0:
                continue   # TF logs a warning and skips such a box
            r0, r1 = max(top, 0), min(bottom, height - 1)
            c0, c1 = max(left, 0), min(right, width - 1)
            if top >= 0:
                canvas[b, top, c0:c1 + 1] = color
            if bottom < height:
                canvas[b, bottom, c0:c1 + 1] = color
            if left >= 0:
                canvas[b, r0:r1 + 1, left] = color
            if right < width:
                canvas[b, r0:r1 + 1, right] = color
    return ctx.xp.asarray(canvas)


register_op("DrawBoundingBoxesV2", shape=lambda op: op.inputs[0].get_shape(),
            kernel=_draw_kernel, needs_op_name=True, grad=None)


def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """``images`` ([batch, height, width, depth], float; depth 1, 3 or 4) with the outlines of
    ``boxes`` ([batch, num_boxes, 4], normalized ``[y_min, x_min, y_max, x_max]``) drawn on them,
    one pixel wide, box ``k`` in ``colors[k % len(colors)]`` (RGBA rows; TF's table by default).
    Not differentiable (as TF)."""
    with get_default_graph().name_scope(name or "draw_bounding_boxes"):
        images = convert_to_tensor(images, name="images")
        if images.dtype.base_dtype not in (_dtypes.float16, _dtypes.float32):
            raise TypeError("draw_bounding_boxes: images must be float32 or float16, got %s "
                            "(convert with tf.image.convert_image_dtype)" % images.dtype.name)
        _static_check(images, (None, None, None, None), "images", "DrawBoundingBoxesV2")
        boxes = convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")
        _static_check(boxes, (None, None, 4), "boxes", "DrawBoundingBoxesV2")
        colors = convert_to_tensor(np.zeros((0, 4), np.float32) if colors is None else colors,
                                   dtype=_dtypes.float32, name="colors")
        _static_check(colors, (None, None), "colors", "DrawBoundingBoxesV2")
        return make_op("DrawBoundingBoxesV2", [images, boxes, colors], name="DrawBoundingBoxesV2")


# -- SampleDistortedBoundingBox (TF's sample_distorted_bounding_box_op.cc, numpy's random draws) ---
def _random_crop(gen, width, height, min_area, max_area, aspect_ratio):
    """TF's GenerateRandomCrop: ``(x, y, w, h)`` of a crop of about ``aspect_ratio`` whose area is
    in [min_area, max_area] (pixels), or None when rounding cannot satisfy it."""
    rint = lambda v: int(np.rint(np.float32(v)))   # noqa: E731 - lrintf
    if max_area == 0:
        return None
    h = rint(np.sqrt(min_area / aspect_ratio))
    max_h = rint(np.sqrt(max_area / aspect_ratio))
    if rint(max_h * aspect_ratio) > width:
        max_h = int((width + 0.5 - 1e-7) / aspect_ratio)
        if rint(max_h * aspect_ratio) > width:
            max_h -= 1
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(gen.integers(0, max_h - h + 1))
    w = rint(h * aspect_ratio)
    area = float(w * h)
    if area < min_area:
        h += 1
        w = rint(h * aspect_ratio)
        area = float(w * h)
    if area > max_area:
        h -= 1
        w = rint(h * aspect_ratio)
        area = float(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(gen.integers(0, height - h)) if h < height else 0
    x = int(gen.integers(0, width - w)) if w < width else 0
    return x, y, w, h


def _covers(crop, boxes, min_object_covered):
    """TF's SatisfiesOverlapConstraints: the crop has pixels and covers at least
    ``min_object_covered`` of one box (each ``(x0, y0, x1, y1)`` in pixels)."""
    x, y, w, h = crop
    if w * h < 1:
        return False
    for x0, y0, x1, y1 in boxes:
        area = (x1 - x0) * (y1 - y0)
        if area < 1:
            continue
        inter = max(min(x + w, x1) - max(x, x0), 0) * max(min(y + h, y1) - max(y, y0), 0)
        if inter / area >= min_object_covered:
            return True
    return False


def _sample_box_kernel(ctx, image_size, bounding_boxes, min_object_covered, seed, seed2,
                       aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes, op_name):
    size = np.asarray(image_size).reshape(-1)
    if size.shape != (3,):
        _fail(op_name, "image_size must contain 3 elements [height, width, channels], got %s",
              size.tolist())
    height, width = int(size[0]), int(size[1])
    if height <= 0 or width <= 0:
        _fail(op_name, "image height and width must be positive, got %d and %d", height, width)
    _check_shape(bounding_boxes, (None, None, 4), "bounding_boxes", op_name)
    covered = float(min_object_covered)
    if covered < 0:
        _fail(op_name, "min_object_covered must be non-negative, got %g", covered)
    boxes = []
    for y0, x0, y1, x1 in np.asarray(bounding_boxes, np.float32).reshape(-1, 4):
        if not all(0 <= v <= 1 for v in (y0, x0, y1, x1)):
            _fail(op_name, "All bounding box coordinates must be in [0.0, 1.0]: %s",
                  [float(v) for v in (y0, x0, y1, x1)])
        if y0 >= y1 or x0 >= x1:
            _fail(op_name, "Bounding box must have y_min < y_max and x_min < x_max: %s",
                  [float(v) for v in (y0, x0, y1, x1)])
        boxes.append((int(x0 * width), int(y0 * height), int(x1 * width), int(y1 * height)))
    if not boxes:
        if not use_image_if_no_bounding_boxes:
            _fail(op_name, "No bounding boxes provided as input. One must enable "
                  "use_image_if_no_bounding_boxes if you wish to not provide any bounding boxes.")
        boxes.append((0, 0, width, height))
    gen = random_ops._generator(ctx, op_name, seed, seed2)
    area = float(height * width)
    min_area, max_area = area_range[0] * area, area_range[1] * area
    crop = None
    for _ in range(max_attempts):
        ratio = np.float32(gen.random()) * np.float32(aspect_ratio_range[1] -
                                                      aspect_ratio_range[0]) + \
            np.float32(aspect_ratio_range[0])
        candidate = _random_crop(gen, width, height, min_area, max_area, float(ratio))
        if candidate is not None and _covers(candidate, boxes, covered):
            crop = candidate
            break
    x, y, w, h = crop or (0, 0, width, height)
    dtype = image_size.dtype
    xp = ctx.xp
    bbox = np.array([[[y / height, x / width, (y + h) / height, (x + w) / width]]], np.float32)
    return [xp.asarray(np.array([y, x, 0], dtype)), xp.asarray(np.array([h, w, -1], dtype)),
            xp.asarray(bbox)]


register_op("SampleDistortedBoundingBoxV2", num_outputs=3,
            dtype=lambda op: [op.inputs[0].dtype] * 2 + [_dtypes.float32],
            shape=lambda op: [TensorShape([3]), TensorShape([3]), TensorShape([1, 1, 4])],
            kernel=_sample_box_kernel, stateful=True, needs_op_name=True, grad=None)


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None,
                                  min_object_covered=0.1, aspect_ratio_range=None,
                                  area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """A random crop of an image of ``image_size`` ([height, width, channels]) for data
    augmentation: ``(begin, size, bboxes)``, to pass as ``tf.slice(image, begin, size)``, and the
    crop as a normalized box [1, 1, 4] (for ``draw_bounding_boxes``). The crop's aspect ratio is
    drawn from ``aspect_ratio_range`` (default [0.75, 1.33]), its area from ``area_range``
    (fractions of the image, default [0.05, 1]), and it covers at least ``min_object_covered`` of
    one of ``bounding_boxes`` ([batch, N, 4], normalized); after ``max_attempts`` (100) failures
    it is the whole image. zps draws from numpy's generator: seeded runs repeat, but not TF's
    crops."""
    aspect_ratio_range = [0.75, 1.33] if aspect_ratio_range is None else list(aspect_ratio_range)
    area_range = [0.05, 1.0] if area_range is None else list(area_range)
    if len(aspect_ratio_range) != 2 or not 0 < aspect_ratio_range[0] <= aspect_ratio_range[1]:
        raise ValueError("sample_distorted_bounding_box: aspect_ratio_range must be 2 positive "
                         "floats [min, max], got %s" % (aspect_ratio_range,))
    if len(area_range) != 2 or not 0 < area_range[0] <= area_range[1] <= 1:
        raise ValueError("sample_distorted_bounding_box: area_range must be 2 floats in (0, 1], "
                         "[min, max], got %s" % (area_range,))
    max_attempts = 100 if max_attempts is None else int(max_attempts)
    if max_attempts <= 0:
        raise ValueError("sample_distorted_bounding_box: max_attempts must be positive, got %d"
                         % max_attempts)
    with get_default_graph().name_scope(name or "sample_distorted_bounding_box"):
        image_size = convert_to_tensor(image_size, name="image_size")
        if not image_size.dtype.is_integer:
            raise TypeError("sample_distorted_bounding_box: image_size must be an integer "
                            "tensor, got %s" % image_size.dtype.name)
        _static_check(image_size, (3,), "image_size", "SampleDistortedBoundingBoxV2")
        bounding_boxes = convert_to_tensor(bounding_boxes, dtype=_dtypes.float32,
                                           name="bounding_boxes")
        _static_check(bounding_boxes, (None, None, 4), "bounding_boxes",
                      "SampleDistortedBoundingBoxV2")
        covered = convert_to_tensor(min_object_covered, dtype=_dtypes.float32,
                                    name="min_object_covered")
        if seed2 is not None:   # TF1's explicit pair
            seeds = {"seed": int(seed or 0), "seed2": int(seed2)}
        else:
            seeds = random_ops._seed_attrs(seed)
        return tuple(make_op(
            "SampleDistortedBoundingBoxV2", [image_size, bounding_boxes, covered],
            name="SampleDistortedBoundingBoxV2", aspect_ratio_range=tuple(aspect_ratio_range),
            area_range=tuple(area_range), max_attempts=max_attempts,
            use_image_if_no_bounding_boxes=bool(use_image_if_no_bounding_boxes), **seeds))


__all__ = [
    "non_max_suppression", "non_max_suppression_with_scores", "non_max_suppression_padded",
    "non_max_suppression_overlaps", "combined_non_max_suppression", "crop_and_resize",
    "draw_bounding_boxes", "sample_distorted_bounding_box",
]
