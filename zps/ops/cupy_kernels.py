"""The cupy backend: which ops run on a GPU, their GPU kernels, and host<->device transfers.

Most kernels are written against ``ctx.xp`` and serve numpy and cupy alike (the op test suite
runs them on cupy, or on ``zps.testing.fake_cupy`` without a GPU). This module holds what is
different on a GPU, in the manner of TF1's kernel registrations:

- ``CPU_ONLY``: ops with no GPU kernel (queues, accumulators, summaries, checkpoint I/O, strings,
  transfers between tasks). Placing one on a GPU is an error unless the session allows soft
  placement, as in TF1.
- ``METADATA``: ops that read only the shape of their input (Shape, Size, Rank ...). On a GPU
  device they run on the host and their input is *not* copied off the device (TF1's GPU kernels
  for them keep their output in host memory).
- ``HOST_INPUTS``: inputs that are small shape/axis/size tensors (TF1's ``HostMemory``
  arguments): they stay on (or are copied to) the host, so a kernel turns them into Python ints
  without a device sync per element and constants are never copied to the device for them.
  ``PadV2``'s scalar fill value is one too (``cupy.pad`` reads it on the host), and the labels of
  ``SparseSoftmaxCrossEntropyWithLogits`` (checked against the class count on the host, where a
  check costs no device sync, then copied to the device by the kernel).
- GPU kernels for ops whose generic kernel uses numpy-only APIs: ``ctx.xp.add.at`` in generic
  kernels is cupy's own ``add.at`` (cupy >= 13) or, on older cupy, ``cupyx.scatter_add`` (see
  ``_ArrayModule``).
- ``ON_HOST``: ops whose kernels are numpy code (random draws, special functions, image ops,
  sparse ops ...). On a GPU their host kernel runs on host copies of the inputs and the outputs
  are copied to the device; random ops draw from the op's generator, the same sequence as on the
  CPU.

Copies between the host and GPUs are steps the executor inserts at backend boundaries only
(``zps.runtime.executor._GpuPlan``); a plan that names no GPU never imports this module.

Transfers: :func:`to_device`, :func:`to_host`, and :func:`to_host_pinned` (device-to-host into
page-locked memory from cupy's pinned pool, used for values about to be sent to another task).
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.device import gpu_index, gpu_unavailable_reason
from zps.framework.registry import GENERIC, REGISTRY

__all__ = []

CPU_ONLY = frozenset([
    "_Send", "_Recv", "_SendN", "_RecvN",
    "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue",
    "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue", "QueueDequeueMany", "QueueDequeueUpTo",
    "QueueClose", "QueueSize", "QueueIsClosed",
    "ConditionalAccumulator", "SparseConditionalAccumulator", "AccumulatorApplyGradient",
    "SparseAccumulatorApplyGradient", "AccumulatorTakeGradient", "SparseAccumulatorTakeGradient",
    "AccumulatorNumAccumulated", "AccumulatorSetGlobalStep",
    "ScalarSummary", "HistogramSummary", "MergeSummary", "ImageSummary", "TensorSummaryV2",
    "SaveShard", "RestoreShard", "RestoreSlice",
    "WriteCheckpointIndex", "ReportUninitialized", "PyFunc", "Print", "PrintV2", "Assert",
    # candidate sampling: host kernels in TF1 too
    "LogUniformCandidateSampler", "UniformCandidateSampler", "FixedUnigramCandidateSampler",
    "ComputeAccidentalHits",
    "StringSplit", "StringToNumber", "AsString", "Substr", "ReduceJoin", "StringJoin", "DecodeCSV",
    "StringToHashBucketFast", "StringToHashBucketStrong", "VocabularyLookup", "SparseCross",
    # parsing_ops: host kernels in TF1 too
    "ParseExampleV2", "ParseSequenceExampleV2", "DecodeRaw", "ReadFile", "SerializeTensor",
    "ParseTensor",
    "TextLineReaderV2", "WholeFileReaderV2", "ReaderReadV2", "ReaderReadUpToV2",
    "ReaderNumRecordsProducedV2",
    "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2",
    "Iterator", "OneShotIterator", "MakeIterator", "IteratorGetNext", "IteratorToStringHandle",
    "IteratorFromStringHandle",
])

METADATA = frozenset(["Shape", "Size", "Rank", "IsVariableInitialized"])

# Shape arithmetic: runs on the host even inside a GPU device scope (TF1 keeps these in host
# memory), its inputs copied to the host if they were on a device.
HOST_OPS = frozenset(["ReducedSize", "ShapeSuffix",
                      # tf.cond, tf.while_loop: the If picks a branch (the While iterates)
                      # on the host; a branch's (body's) ops run on their own devices (a
                      # private plan, with its own copies)
                      "If", "CaseCheck", "While", "WhileGrad",
                      # tf.TensorArray: its state is the step's, on the host (elements written
                      # from a GPU are copied there; a read is copied to a GPU reader)
                      "TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3",
                      "TensorArrayGatherV3", "TensorArrayScatterV3", "TensorArrayConcatV3",
                      "TensorArraySplitV3", "TensorArraySizeV3", "TensorArrayCloseV3",
                      "TensorArrayGradV3"])
CPU_ONLY_PREFIXES = ("HashTable",)   # host resources (zps.ops.hash_table_ops)

HOST_INPUTS = {
    "Reshape": (1,), "Fill": (0,), "Tile": (1,), "TileGrad": (1,), "Slice": (1, 2),
    "StridedSlice": (1, 2, 3), "StridedSliceGrad": (0, 1, 2, 3),
    "Transpose": (1,), "ExpandDims": (1,), "Sum": (1,), "Mean": (1,), "Max": (1,), "Min": (1,),
    "Prod": (1,), "All": (1,), "Any": (1,), "ReduceLogSumExp": (1,), "ArgMax": (1,),
    "ArgMin": (1,), "SplitV": (1, 2), "SplitBySizes": (1, "rest"), "PadV2": (1, 2),
    "MirrorPad": (1,), "MirrorPadGrad": (1,), "ReverseV2": (1,), "BroadcastTo": (1,),
    "SumToShape": (1,), "UnsortedSegmentSum": (2,), "OneHot": (1,), "Range": (0, 1, 2),
    "UnsortedSegmentMax": (2,), "UnsortedSegmentMin": (2,), "ScatterNd": (2,),
    "MatrixBandPart": (1, 2), "LinSpace": (0, 1, 2),
    "RandomStandardNormal": (0,), "RandomUniform": (0,), "RandomUniformInt": (0, 1, 2),
    "TruncatedNormal": (0,), "Multinomial": (1,), "ReduceGradShape": (1,),
    "Conv2DBackpropInput": (0,), "Conv2DBackpropFilter": (1,),
    "Conv3DBackpropInputV2": (0,), "Conv3DBackpropFilterV2": (1,),
    "DepthwiseConv2dNativeBackpropInput": (0,), "DepthwiseConv2dNativeBackpropFilter": (1,),
    "ApplyAdagradDA": (7,), "SparseApplyAdagradDA": (8,),   # the global step
    "SparseSoftmaxCrossEntropyWithLogits": (1,), "HistogramFixedWidth": (2,),
    "TopKV2": (1,), "InTopKV2": (2,),
    "ResizeBilinear": (1,), "ResizeNearestNeighbor": (1,), "ResizeNearestNeighborGrad": (1,),
    "Roll": (1, 2), "SpaceToBatchND": (1, 2), "BatchToSpaceND": (1, 2),
    # of ops run on the host (_on_host): their shape inputs need no trip to the device and back
    "ResizeBicubic": (1,), "ResizeArea": (1,), "CropAndResize": (3,),
    "CropAndResizeGradImage": (3,), "RandomGamma": (0,), "RandomPoissonV2": (0,),
    "StatelessRandomUniform": (0, 1), "StatelessRandomNormal": (0, 1),
    "StatelessTruncatedNormal": (0, 1), "StatelessRandomUniformInt": (0, 1, 2, 3),
    "StatelessRandomUniformFullInt": (0, 1), "StatelessMultinomial": (1, 2),
}

_STRINGS = (_dtypes.string,)


def host_inputs(op_type, num_inputs):
    """The input indices of an op on a GPU that are read on the host (``HOST_INPUTS``)."""
    spec = HOST_INPUTS.get(op_type)
    if not spec:
        return ()
    out = {i for i in spec if isinstance(i, int) and i < num_inputs}
    if "rest" in spec:
        out.update(range(max(i for i in spec if isinstance(i, int)) + 1, num_inputs))
    return out


# -- placement ---------------------------------------------------------------------------------
def has_gpu_kernel(op):
    """Whether ``op`` can run on a GPU (None) or why not (a sentence)."""
    if op.type in CPU_ONLY or op.type.startswith(CPU_ONLY_PREFIXES):
        return "op type %s has no GPU kernel" % op.type
    kernels = op.op_def.kernels
    if "cupy" not in kernels and GENERIC not in kernels:
        return "op type %s has no GPU kernel (its kernels: %s)" % (op.type, sorted(kernels))
    if any(t.dtype in _STRINGS for t in list(op._outputs) + list(op._inputs)):
        return "strings cannot live on a GPU"
    return None


def place(ops, soft_placement=False, gpu_ids=None):
    """``{op: gpu index}`` for the ops of a plan that run on a GPU (the others run on the host).

    An op runs where its device says, unless it is colocated with another op (then there), or it
    updates a variable (then where the variable lives, as TF's placer does for reference edges).
    A GPU that cannot be used — no cupy, no GPU visible, an index past the visible ones, an op
    without a GPU kernel — raises InvalidArgumentError naming the op, the device and the remedy,
    or, with ``soft_placement`` (or the op's ``_soft_placement`` attr, set by the partitioner for
    a session that allows soft placement), puts the op on the host.

    ``gpu_ids`` (a session's ``gpu_options.visible_device_list`` / ``device_count['GPU']``) maps
    the graph's ``/gpu:i`` to this process's GPU ``gpu_ids[i]``; None: ``/gpu:i`` is GPU i.
    """
    by_name = {op.name: op for op in ops}
    placed = {}
    decided = {}   # every op seen so far -> its /gpu:index or None (host)
    reasons = {}   # gpu index -> why it cannot be used (None: usable)
    for op in ops:
        target = by_name.get(op._colocation[0]) if op._colocation else None
        device = (target if target is not None else op).device
        index = decided[target] if target in decided else gpu_index(device)
        for i in op.op_def.ref_inputs:  # updates run where the variable lives
            if i < len(op._inputs) and op._inputs[i].is_ref:
                index = decided.get(op._inputs[i].op)
        decided[op] = None
        if index is None or op.type in METADATA or op.type in HOST_OPS or _folded(op):
            continue
        if index not in reasons:
            reasons[index] = _unusable(index, gpu_ids)
        why = reasons[index] or has_gpu_kernel(op)
        if why is not None:
            if soft_placement or op._attrs.get("_soft_placement"):
                continue
            raise errors.InvalidArgumentError(
                op.name, op, "Cannot assign a device for operation '%s' (%s): it asks for %s but %s. "
                "%s Or set ConfigProto(allow_soft_placement=True) to run it on the CPU instead."
                % (op.name, op.type, device, why, _remedy(why)))
        decided[op] = index   # the graph's /gpu:index; placed: the process's GPU
        placed[op] = index if gpu_ids is None else gpu_ids[index]
    return placed


def _unusable(index, gpu_ids):
    if gpu_ids is not None and index >= len(gpu_ids):
        return "the session's ConfigProto lets it use only %d GPU(s) (gpu_options." \
            "visible_device_list / device_count['GPU'])" % len(gpu_ids)
    return gpu_unavailable_reason(index if gpu_ids is None else gpu_ids[index])


def _folded(op):
    # A constant is a value in the plan's table (on the host), not a kernel: each GPU reading it
    # gets a copy once per plan (the executor's rule for folding: no control inputs).
    return op.type == "Const" and not op._control_inputs


def _remedy(why):
    if "cupy" in why:
        return "Install cupy for your CUDA version (pip install cupy-cuda12x, or zps[gpu])."
    if "no GPU kernel" in why or "strings" in why:
        return "Place it on the CPU (with tf.device('/cpu:0'))."
    return "Use a GPU this process can see (check CUDA_VISIBLE_DEVICES and zps-launch " \
        "--gpus-per-worker)."


# -- device context of a kernel ---------------------------------------------------------------
class GpuContext:
    """What a kernel placed on GPU ``device`` sees: the step's context with ``xp`` = cupy."""

    __slots__ = ("resources", "xp", "backend", "step_id", "extras", "device", "_step")

    def __init__(self, step, xp, device):
        self._step = step
        self.resources = step.resources
        self.step_id = step.step_id
        self.extras = step.extras
        self.xp = xp
        self.backend = "cupy"
        self.device = device

    def on_cancel(self, callback):
        return self._step.on_cancel(callback)

    def cancel(self, error):
        self._step.cancel(error)

    @property
    def cancelled(self):
        return self._step.cancelled

    def __getattr__(self, name):   # anything else a later StepContext carries
        return getattr(self._step, name)


def _cupy():
    import cupy
    return cupy


class _ScatterUfunc:
    """``cupy.add`` with ``.at`` (numpy's unbuffered in-place scatter) done by
    ``cupyx.scatter_add``, for cupy before v13, which has no ``ufunc.at`` (v14 deprecates
    ``scatter_add`` in favour of ``add.at``)."""

    __slots__ = ("_ufunc", "at")

    def __init__(self, ufunc, at):
        self._ufunc = ufunc
        self.at = at

    def __call__(self, *args, **kwargs):
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ufunc, name)


class _ArrayModule:
    """cupy as kernels see it (``ctx.xp``): cupy itself, with ``add.at`` on every cupy version."""

    def __init__(self, cupy):
        self._cupy = cupy
        if hasattr(cupy.add, "at"):
            self.add = cupy.add
        else:
            import cupyx
            self.add = _ScatterUfunc(cupy.add, cupyx.scatter_add)

    def __getattr__(self, name):
        return getattr(self._cupy, name)


_array_modules = {}


def array_module():
    """The ``ctx.xp`` of GPU kernels (see _ArrayModule); one per cupy module."""
    cupy = _cupy()
    xp = _array_modules.get(id(cupy))
    if xp is None or xp._cupy is not cupy:
        xp = _array_modules[id(cupy)] = _ArrayModule(cupy)
    return xp


def bind_gpu(kernel, device):
    """``kernel`` run on GPU ``device``: under ``cupy.cuda.Device(device)``, ``ctx.xp`` = cupy."""
    xp = array_module()
    make_device = xp.cuda.Device

    def run_on_gpu(ctx, *args):
        with make_device(device):
            return kernel(GpuContext(ctx, xp, device), *args)
    return run_on_gpu


def gpu_kernel(op):
    """The kernel ``op`` runs on a GPU: its cupy kernel, or its generic one."""
    opdef = op.op_def
    return opdef.kernels.get("cupy") or opdef.kernels[GENERIC]


# -- transfers ---------------------------------------------------------------------------------
def to_device(device, ctx, x):
    """Copy a host value to GPU ``device`` (one host-to-device copy)."""
    cupy = _cupy()
    with cupy.cuda.Device(device):
        if isinstance(x, np.ndarray) and x.dtype.kind in "OSU":
            raise errors.InvalidArgumentError(None, None, "Cannot copy a %s tensor to GPU:%d: "
                                              "strings cannot live on a GPU" % (x.dtype, device))
        return cupy.asarray(x)


def device_copy(device, ctx, x):
    """Copy a value of one GPU to GPU ``device`` (peer copy)."""
    cupy = _cupy()
    with cupy.cuda.Device(device):
        return x.copy() if isinstance(x, cupy.ndarray) else cupy.asarray(x)


def to_host(ctx, x):
    """A GPU value as a new numpy array (one device-to-host copy); host values pass through."""
    get = getattr(x, "get", None)
    if get is not None and not isinstance(x, np.ndarray | np.generic):
        return get()
    return x


def to_host_pinned(ctx, x):
    """Device-to-host into page-locked memory from cupy's pinned pool, for a value about to be
    sent to another task: the copy runs at full bus speed and the buffer returns to the pool
    when the sent message lets go of it."""
    get = getattr(x, "get", None)
    if get is None or isinstance(x, np.ndarray | np.generic):
        return x
    if x.size == 0:
        return get()
    cupy = _cupy()
    mem = cupy.cuda.alloc_pinned_memory(x.nbytes)
    out = np.frombuffer(mem, x.dtype, x.size).reshape(x.shape)
    return get(out=out)


def host_transfer_for(consumer_type):
    return to_host_pinned if consumer_type in ("_Send", "_SendN") else to_host


# -- GPU kernels for ops whose generic kernel uses numpy-only APIs ------------------------------
def _register(op_type, kernel):
    opdef = REGISTRY.get(op_type)
    if opdef is not None and "cupy" not in opdef.kernels:
        opdef.kernels["cupy"] = kernel


def _on_host(op_type):
    """The op's host kernel run on host copies of the inputs, its outputs copied to the device
    (random ops: the draws come from the op's host generator, the same sequence as on the CPU)."""
    opdef = REGISTRY.get(op_type)
    if opdef is None:
        return
    host_kernel = opdef.kernels.get("numpy") or opdef.kernels[GENERIC]

    def kernel(ctx, *args, **attrs):
        out = host_kernel(_HostView(ctx), *[to_host(ctx, a) for a in args], **attrs)
        xp = ctx.xp
        if isinstance(out, tuple | list):
            return type(out)(xp.asarray(o) for o in out)
        return xp.asarray(out)
    _register(op_type, kernel)


class _HostView:
    __slots__ = ("_ctx",)
    xp = np
    backend = "numpy"

    def __init__(self, ctx):
        self._ctx = ctx

    def __getattr__(self, name):
        return getattr(self._ctx, name)


# Ops whose kernels are numpy code: on a GPU they run on the host (``_on_host``), as TF places
# an op without a GPU kernel on the CPU; TF1 has GPU kernels for many of them, zps not yet.
# (Names only: an op not registered when this module is imported is skipped; see
# tests/ops/test_gpu_ops.py, which checks that every name here is registered.)
ON_HOST = (
    # random draws: from the op's host generator, the same sequence as on the CPU
    "RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal",
    "Multinomial", "RandomShuffle", "RandomGamma", "RandomPoissonV2",
    "StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
    "StatelessRandomUniformInt", "StatelessRandomUniformFullInt", "StatelessMultinomial",
    # special functions (zps.ops.special_math_ops): float64 series and continued fractions
    # (cupyx.scipy.special has most of them, but the stand-in cupy only erf and erfc, so cupy
    # kernels for them could not be checked in CI)
    "Lgamma", "Digamma", "Polygamma", "Zeta", "Igamma", "Igammac", "IgammaGradA",
    "IgammacGradA", "Betainc", "Erfinv", "Ndtri", "BesselI0", "BesselI0e", "BesselI1",
    "BesselI1e",
    # ufuncs cupy lacks: logaddexp.accumulate, multiply.at, maximum.at, minimum.at
    "CumulativeLogsumexp", "SegmentProd", "UnsortedSegmentProd", "TensorScatterMax",
    "TensorScatterMin",
    # indices, searches and bit views (zps.ops.array_ops_more, nn_more)
    "RepeatIndices", "CheckSortedSparseIndices", "LowerBound", "UpperBound", "UnravelIndex",
    "BroadcastArgs", "HistogramFixedWidthBins", "Bitcast", "CollapseRepeated",
    "MaxPoolWithArgmax", "MaxPoolGradWithArgmax",
    # CTC (zps.ops.ctc_ops): label-sequence recursions and beam search, host kernels in TF1 too
    "CTCLoss", "CTCLossDense", "CTCGreedyDecoder", "CTCBeamSearchDecoder", "CTCUniqueLabels",
    # image ops (zps.ops.image_color_ops, image_resize_ops, image_box_ops)
    "RGBToHSV", "RGBToHSVGrad", "HSVToRGB", "AdjustHue", "AdjustSaturation",
    "ResizeBicubic", "ResizeBicubicGrad", "ResizeArea", "ExtractImagePatches",
    "ExtractImagePatchesGrad", "CropAndResize", "CropAndResizeGradImage",
    "CropAndResizeGradBoxes", "NonMaxSuppressionV3", "NonMaxSuppressionV4",
    "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps", "CombinedNonMaxSuppression",
    "DrawBoundingBoxesV2", "SampleDistortedBoundingBoxV2",
    # sparse segment reductions (zps.ops.sparse_ops) use ufunc.at: host until they get
    # scatter-add kernels of their own
    "SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN",
    "SparseSegmentSumWithNumSegments", "SparseSegmentMeanWithNumSegments",
    "SparseSegmentSqrtNWithNumSegments", "SparseToDense",
    # the other sparse ops sort, match and offset indices into outputs of data-dependent
    # sizes: host kernels, as most of TF1's are
    "SparseTensorDenseMatMul", "SparseReduceSum", "SparseReduceMax",
    "SparseReduceSumSparse", "SparseReduceMaxSparse", "SparseAdd", "SparseAddGrad",
    "SparseTensorDenseAdd", "SparseSparseMaximum", "SparseSparseMinimum", "SparseConcat",
    "SparseReshape", "SparseReorder", "SparseFillEmptyRows", "SparseSlice", "SparseSliceGrad",
    "SparseSplit", "SparseSoftmax",
)
for _t in ON_HOST:
    _on_host(_t)


def _erf(ctx, x):
    from cupyx.scipy import special
    return special.erf(x).astype(x.dtype, copy=False)


def _erfc(ctx, x):
    from cupyx.scipy import special
    return special.erfc(x).astype(x.dtype, copy=False)


_register("Erf", _erf)
_register("Erfc", _erfc)


def _const(ctx, value, dtype):
    return ctx.xp.asarray(value)


_register("Const", _const)


def _scatter_add(cur, idx, upd):
    array_module().add.at(cur, idx, upd)


def _scatter_sub(cur, idx, upd):
    array_module().add.at(cur, idx, -upd)


# -- fused optimizer updates ---------------------------------------------------------------------
# Each dense update of zps.ops.training_ops as one elementwise kernel (instead of one launch per
# arithmetic operation: 12 for Adam), in the same order of operations as the generic update so
# the GPU matches the CPU to rounding. Compiled by cupy on first use (cupy.ElementwiseKernel); the
# stand-in cupy runs the same bodies as numpy, so CI checks them against the generic updates.
FUSED_UPDATES = True   # False: every update runs the generic way (a switch for measurements)

_FUSED_SOURCES = {
    # name: (inputs, outputs, body, the training_ops update it replaces, its flag parameter)
    "gd": ("T g, T alpha", "T w", "w -= g * alpha;", "_gd_update", None),
    "momentum": ("T g, T lr, T momentum", "T w, T accum",
                 "accum = accum * momentum + g; w -= accum * lr;", "_momentum_update", False),
    "momentum_nesterov": ("T g, T lr, T momentum", "T w, T accum",
                          "accum = accum * momentum + g; w -= g * lr + accum * momentum * lr;",
                          "_momentum_update", True),
    "adagrad": ("T g, T lr", "T w, T accum", "accum += g * g; w -= g / sqrt(accum) * lr;",
                "_adagrad_update", True),
    "adagrad_frozen": ("T g, T lr", "T w, T accum", "w -= g / sqrt(accum) * lr;",
                       "_adagrad_update", False),
    "adam": ("T g, T alpha, T beta1, T beta2, T epsilon", "T w, T m, T v",
             "m += (g - m) * (1 - beta1); v += (g * g - v) * (1 - beta2);"
             " w -= m * alpha / (sqrt(v) + epsilon);", "_adam_update", False),
    "adam_nesterov": ("T g, T alpha, T beta1, T beta2, T epsilon", "T w, T m, T v",
                      "m += (g - m) * (1 - beta1); v += (g * g - v) * (1 - beta2);"
                      " w -= (m * beta1 + g * (1 - beta1)) * alpha / (sqrt(v) + epsilon);",
                      "_adam_update", True),
}
_fused_kernels = {}   # (id of the cupy module, name) -> compiled kernel


def _fused_kernel(cupy, name):
    key = (id(cupy), name)
    kernel = _fused_kernels.get(key)
    if kernel is None:
        ins, outs, body = _FUSED_SOURCES[name][:3]
        kernel = _fused_kernels[key] = cupy.ElementwiseKernel(ins, outs, body, "zps_" + name)
    return kernel


def _fused_update(names):
    """``fused(arrays, params)`` for ``_blocked``: ``arrays`` = var, its slots, grad; ``params``
    the update's scalars (0-d arrays) and last its flag, if it has one (``names`` by flag)."""
    def fused(arrays, params):
        cupy = _cupy()
        if not FUSED_UPDATES or not hasattr(cupy, "ElementwiseKernel") or \
                arrays[0].dtype not in (np.float32, np.float64) or \
                any(a.dtype != arrays[0].dtype or not isinstance(a, cupy.ndarray)
                    for a in list(arrays) + [p for p in params if hasattr(p, "ndim")]):
            return False
        if None in names:   # an update without a flag (gradient descent)
            flag, scalars = None, params
        else:
            flag, scalars = params[-1], params[:-1]
        *state, grad = arrays
        _fused_kernel(cupy, names[flag])(grad, *scalars, *state)
        return True
    return fused


def _register_fused_updates():
    from zps.ops import training_ops
    by_update = {}
    for name, (_, _, _, update, flag) in _FUSED_SOURCES.items():
        by_update.setdefault(update, {})[flag] = name
    for update, names in by_update.items():
        training_ops.GPU_UPDATES[getattr(training_ops, update)] = _fused_update(names)


_register_fused_updates()


def _register_scatter():
    from zps.ops.state_ops import _scatter_kernel  # the validation is the generic kernel's
    _register("ScatterAdd", _scatter_kernel(_scatter_add))
    _register("ScatterSub", _scatter_kernel(_scatter_sub))


_register_scatter()
