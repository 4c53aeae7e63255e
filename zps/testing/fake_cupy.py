"""A numpy-backed stand-in for the parts of cupy that zps uses, so GPU code paths run in CI.

It is strict where real cupy is strict, so the tests catch what would break on a GPU:
``ndarray`` is its own type (not a numpy subclass); mixing it with numpy arrays in an operation
raises ``TypeError`` as cupy does; ``numpy.asarray(fake_array)`` refuses the implicit conversion
(use ``.get()`` / ``asnumpy``); an array is tied to the device it was made on and using it under
another current device raises; ``cupy.pad`` refuses a device array as its fill value (it reads it
with ``numpy.array``); ``ElementwiseKernel`` runs bodies written in the common subset of C and
Python (see the class). Like cupy 14 (the default, ``ufunc_at=True``), ``cupy.add.at`` scatters
and ``cupyx.scatter_add`` warns that it is deprecated; like cupy before 13 (``ufunc_at=False``),
ufuncs have no ``.at``. ``numpy.add.at`` on a fake array always fails. Transfers are counted in
:data:`stats` so tests can assert that no extra copies happen.

The fake machine has ``num_gpus`` GPUs; ``CUDA_VISIBLE_DEVICES`` selects and renumbers them as
the CUDA runtime does (read at each query, unlike CUDA which reads it once per process).

>>> import numpy as np
>>> from zps.testing import fake_cupy
>>> with fake_cupy.installed(num_gpus=2) as cp:
...     import cupy
...     x = cupy.asarray(np.arange(3.0))
...     with cupy.cuda.Device(1):
...         y = x.copy() * 2 + 1        # copied to device 1, computed there
...     print(type(x).__name__, cupy.asnumpy(y), y.device.id)
ndarray [1. 3. 5.] 1
"""

import contextlib
import math
import os
import sys
import threading
import types
import warnings

import numpy as _np

__all__ = ["install", "uninstall", "installed", "stats", "reset_stats", "ndarray", "IS_FAKE"]

IS_FAKE = True          # real cupy has no such attribute: tools print that the stand-in ran
_machine = {"num_gpus": 1, "ufunc_at": True}
stats = {"h2d": 0, "d2h": 0, "d2h_pinned": 0, "d2d": 0, "pinned_alloc": 0, "kernels": 0}
_local = threading.local()


def real_gpu():
    """Whether real cupy and a GPU are here (then tests run on them instead of this stand-in)."""
    try:
        import cupy
    except ImportError:
        return False
    from zps.framework.device import visible_gpu_count
    return visible_gpu_count() > 0 and not getattr(cupy, "IS_FAKE", False)


def reset_stats():
    for k in stats:
        stats[k] = 0


# -- devices -----------------------------------------------------------------------------------
def _visible_devices():
    """Physical ids of the visible GPUs, in order (CUDA's parsing of CUDA_VISIBLE_DEVICES)."""
    physical = _machine["num_gpus"]
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return list(range(physical))
    ids = []
    for part in env.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) >= physical or int(part) in ids:
            break   # CUDA stops at the first invalid entry
        ids.append(int(part))
    return ids


class _Runtime(types.SimpleNamespace):
    pass


class CUDARuntimeError(RuntimeError):
    pass


def _get_device_count():
    n = len(_visible_devices())
    if n == 0:
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    return n


def _current():
    stack = getattr(_local, "devices", None)
    return stack[-1] if stack else 0


class Device:
    """``with cupy.cuda.Device(n):`` makes device n current (validated on entry, as CUDA does)."""

    def __init__(self, device=None):
        self.id = _current() if device is None else int(device)

    def _check(self):
        if not 0 <= self.id < len(_visible_devices()):
            raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")

    def __enter__(self):
        self._check()
        stack = getattr(_local, "devices", None)
        if stack is None:
            stack = _local.devices = []
        stack.append(self.id)
        return self

    def __exit__(self, *exc):
        _local.devices.pop()
        return False

    def use(self):
        self._check()
        stack = getattr(_local, "devices", None)
        if stack is None:
            stack = _local.devices = [self.id]
        stack[0:1] = [self.id]

    def synchronize(self):
        pass

    @property
    def compute_capability(self):
        return "80"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return "<CUDA Device %d>" % self.id


class Stream:
    """Streams run nothing asynchronously here; they exist so the code using them runs."""

    null = None

    def __init__(self, null=False, non_blocking=False, ptr=0):
        self.non_blocking = non_blocking

    def synchronize(self):
        pass

    def record(self, event=None):
        return event or Event()

    def wait_event(self, event):
        pass

    def use(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


Stream.null = Stream(null=True)


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    @property
    def done(self):
        return True


class PinnedMemoryPointer(bytearray):
    """Page-locked host memory (here: a bytearray); ``numpy.frombuffer(mem, dtype, n)`` views it."""

    @property
    def size(self):
        return len(self)

    @property
    def ptr(self):
        return id(self)


def _alloc_pinned_memory(nbytes):
    stats["pinned_alloc"] += 1
    return PinnedMemoryPointer(int(nbytes))


def _is_pinned(arr):
    base = arr
    while base is not None:
        if isinstance(base, PinnedMemoryPointer):
            return True
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    return False


class _MemoryPool:
    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self):
        pass

    def n_free_blocks(self):
        return 0


_memory_pool = _MemoryPool()
_pinned_pool = _MemoryPool()


# -- arrays ------------------------------------------------------------------------------------
_METADATA = frozenset(["ndim", "shape", "size", "result_type", "can_cast", "promote_types",
                       "min_scalar_type", "isscalar", "iinfo", "finfo", "dtype", "issubdtype",
                       "broadcast_shapes", "common_type", "get_printoptions"])


def _unwrap(x, dev, shapes_ok=False):
    """numpy storage of ``x`` (recursing into lists/tuples/dicts); a numpy array is refused, as
    cupy refuses it, except (``shapes_ok``: a function argument, not a ufunc operand) integer
    arrays and 0-d arrays, which cupy's functions read as shapes, axes, sizes and scalars."""
    cls = x.__class__
    if cls is ndarray:
        if x._dev != dev:
            raise ValueError("The device where the array resides (%d) is different from the "
                             "current device (%d)." % (x._dev, dev))
        return x._a
    if cls is _np.ndarray:
        if shapes_ok and (x.ndim == 0 or x.dtype.kind in "iu"):
            return x
        raise TypeError("Unsupported type %s (fake cupy: a numpy array reached a cupy "
                        "operation; convert it with cupy.asarray first)" % cls)
    if cls is list or cls is tuple:
        return cls(_unwrap(v, dev, shapes_ok) for v in x)
    if cls is dict:
        return {k: _unwrap(v, dev, shapes_ok) for k, v in x.items()}
    return x


def _wrap(a, dev):
    cls = a.__class__
    if cls is _np.ndarray:
        out = object.__new__(ndarray)
        out._a = a
        out._dev = dev
        return out
    if isinstance(a, _np.generic):
        return _wrap(_np.asarray(a), dev)
    if isinstance(a, tuple | list):
        # numpy.linalg returns named tuples (QRResult ...) where cupy returns plain ones
        return (list if cls is list else tuple)(_wrap(v, dev) for v in a)
    return a


def _call(fn, args, kwargs, wrap=True, shapes_ok=True):
    dev = _current()
    out = fn(*_unwrap(args, dev, shapes_ok), **_unwrap(kwargs, dev, shapes_ok))
    stats["kernels"] += 1
    return _wrap(out, dev) if wrap else out


def _function(name, fn):
    if name in _METADATA:
        def meta(*args, **kwargs):
            return _call(fn, args, kwargs, wrap=False)
        meta.__name__ = name
        return meta

    def f(*args, **kwargs):
        return _call(fn, args, kwargs)
    f.__name__ = name
    return f


class ufunc:  # noqa: N801 - cupy's name
    """A cupy ufunc: call, ``reduce``, ``accumulate``, ``outer``; ``add.at`` as in cupy >= 13
    unless installed with ``ufunc_at=False`` (see module doc)."""

    def __init__(self, np_ufunc):
        self._u = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout = np_ufunc.nin, np_ufunc.nout

    def __call__(self, *args, **kwargs):
        out = kwargs.get("out")
        result = _call(self._u, args, kwargs, shapes_ok=False)
        if out is not None:   # numpy returns the (unwrapped) out array: hand back the wrapper
            return out
        return result

    def reduce(self, *args, **kwargs):
        return _call(self._u.reduce, args, kwargs, shapes_ok=False)

    def accumulate(self, *args, **kwargs):
        return _call(self._u.accumulate, args, kwargs, shapes_ok=False)

    def outer(self, *args, **kwargs):
        return _call(self._u.outer, args, kwargs, shapes_ok=False)

    @property
    def at(self):
        if not _machine["ufunc_at"] or self._u is not _np.add:
            raise AttributeError("fake cupy: %s has no .at%s" % (
                self.__name__, "" if _machine["ufunc_at"] else " (cupy before v13)"))
        return _scatter(_np.add)

    def __repr__(self):
        return "<ufunc '%s'>" % self.__name__


_ufuncs = {}


def _ufunc(name):
    u = _ufuncs.get(name)
    if u is None:
        u = _ufuncs[name] = ufunc(getattr(_np, name))
    return u


def _binary(name, reflected=False, inplace=False):
    np_fn = getattr(_np, name)

    def op(self, other):
        dev = _current()
        a, b = _unwrap(self, dev), _unwrap(other, dev)
        if inplace:
            np_fn(a, b, out=a)
            stats["kernels"] += 1
            return self
        stats["kernels"] += 1
        return _wrap(np_fn(b, a) if reflected else np_fn(a, b), dev)
    return op


def _unary(name):
    np_fn = getattr(_np, name)

    def op(self):
        stats["kernels"] += 1
        return _wrap(np_fn(_unwrap(self, _current())), _current())
    return op


class _Flags:
    def __init__(self, a):
        self.c_contiguous = a.flags.c_contiguous
        self.f_contiguous = a.flags.f_contiguous
        self.owndata = a.flags.owndata

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[key]


class ndarray:  # noqa: N801 - cupy's name
    """A device array: numpy storage, its own type, tied to the device it was made on."""

    __slots__ = ("_a", "_dev")
    __hash__ = None
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._a = _np.empty(shape, dtype, order=order)
        self._dev = _current()

    # metadata
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: _Flags(self._a))
    device = property(lambda self: Device(self._dev))
    base = property(lambda self: None if self._a.base is None else _wrap(self._a.base, self._dev))

    @property
    def T(self):  # noqa: N802 - numpy's name
        return _wrap(self._a.T, self._dev)

    @property
    def real(self):
        return _wrap(self._a.real, self._dev)

    @property
    def imag(self):
        return _wrap(self._a.imag, self._dev)

    # conversions
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` "
                        "to construct a NumPy array explicitly.")

    def get(self, stream=None, order="C", out=None, blocking=True):
        """Copy to the host (into ``out`` when given: a numpy array of the same shape/dtype)."""
        stats["d2h"] += 1
        if out is not None:
            if out.__class__ is not _np.ndarray or out.shape != self.shape or \
                    out.dtype != self.dtype:
                raise ValueError("out must be a numpy array of shape %s and dtype %s"
                                 % (self.shape, self.dtype))
            if _is_pinned(out):
                stats["d2h_pinned"] += 1
            _np.copyto(out, self._a)
            return out
        return _np.array(self._a, order=order)

    def set(self, arr, stream=None):
        stats["h2d"] += 1
        _np.copyto(self._a, arr)

    def copy(self, order="C"):
        """A copy on the *current* device (cupy copies across devices this way)."""
        dev = _current()
        if dev != self._dev:
            stats["d2d"] += 1
        return _wrap(self._a.copy(order=order), dev)

    # Python scalars from a device array: each is a device-to-host copy (and a sync) in cupy
    def __float__(self):
        stats["d2h"] += 1
        return float(self._a)

    def __int__(self):
        stats["d2h"] += 1
        return int(self._a)

    def __complex__(self):
        stats["d2h"] += 1
        return complex(self._a)

    def __index__(self):
        stats["d2h"] += 1
        return self._a.__index__()

    def __bool__(self):
        stats["d2h"] += 1
        return bool(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        for v in self._a:
            yield _wrap(v, self._dev)

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a, spec) if self._a.ndim == 0 else str(self._a)

    # indexing
    def __getitem__(self, key):
        dev = _current()
        return _wrap(self._unwrap_self(dev)[_unwrap_key(key, dev)], self._dev)

    def __setitem__(self, key, value):
        dev = _current()
        if value.__class__ is _np.ndarray:   # cupy copies host values in (an implicit H2D)
            stats["h2d"] += 1
        else:
            value = _unwrap(value, dev)
        self._unwrap_self(dev)[_unwrap_key(key, dev)] = value

    def _unwrap_self(self, dev):
        return _unwrap(self, dev)

    # numpy protocols: numpy functions called on fake arrays run the fake's version (as cupy)
    def __array_ufunc__(self, uf, method, *inputs, **kwargs):
        target = _ufunc(uf.__name__)
        if method == "__call__":
            return target(*inputs, **kwargs)
        if method == "at":
            raise TypeError("fake cupy: ufunc.at is not supported; use cupyx.scatter_add")
        return getattr(target, method)(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        try:
            impl = _module_attr(func.__name__)
        except AttributeError:
            return NotImplemented   # numpy raises TypeError: no implementation for fake arrays
        return impl(*args, **kwargs)

    # methods not defined here come from numpy's ndarray, with arguments and results converted
    def __getattr__(self, name):
        if name.startswith("__") or name in ("_a", "_dev"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            def method(*args, **kwargs):
                dev = _current()
                _unwrap(self, dev)
                return _call(attr, args, kwargs) if name not in ("tolist", "item") else \
                    getattr(self._a, name)(*args, **kwargs)
            return method
        return _wrap(attr, self._dev)


def _unwrap_key(key, dev):
    cls = key.__class__
    if cls is ndarray:
        return _unwrap(key, dev)
    if cls is tuple:
        return tuple(_unwrap_key(k, dev) for k in key)
    if cls is list:
        return [_unwrap_key(k, dev) for k in key]
    return key   # ints, slices, None, Ellipsis and numpy index arrays (cupy accepts those)


for _name, _np_name in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                        ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                        ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
                        ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                        ("lshift", "left_shift"), ("rshift", "right_shift")]:
    setattr(ndarray, "__%s__" % _name, _binary(_np_name))
    setattr(ndarray, "__r%s__" % _name, _binary(_np_name, reflected=True))
    setattr(ndarray, "__i%s__" % _name, _binary(_np_name, inplace=True))
for _name, _np_name in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                        ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")]:
    setattr(ndarray, "__%s__" % _name, _binary(_np_name))
for _name, _np_name in [("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
                        ("invert", "invert")]:
    setattr(ndarray, "__%s__" % _name, _unary(_np_name))


# -- module functions --------------------------------------------------------------------------
def asarray(a, dtype=None, order=None):
    """Host values are copied to the current device; device arrays are returned as they are."""
    dev = _current()
    if a.__class__ is ndarray:
        if a._dev != dev:
            return a   # cupy returns an array of another device unchanged
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    host = _np.asarray(a, dtype=dtype, order=order)
    if host.dtype.kind in "OUS":
        raise ValueError("Unsupported dtype %s" % host.dtype)
    stats["h2d"] += 1
    return _wrap(_np.array(host, copy=True), dev)


def array(obj, dtype=None, copy=True, order="K", ndmin=0):
    if obj.__class__ is ndarray:
        out = obj.copy()
        out._a = _np.array(out._a, dtype=dtype, copy=False, ndmin=ndmin)
        return out
    out = asarray(obj, dtype)
    if ndmin:
        out._a = _np.array(out._a, ndmin=ndmin, copy=False)
    return out


def ascontiguousarray(a, dtype=None):
    return _call(_np.ascontiguousarray, (a,), {"dtype": dtype})


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if a.__class__ is ndarray:
        return a.get(stream=stream, order=order, out=out)
    return _np.asarray(a, order=order)


class ElementwiseKernel:
    """cupy.ElementwiseKernel for bodies in the common subset of C and Python: statements
    separated by ``;`` of assignments (``=``, ``+=`` ...) and arithmetic on the parameters, with
    ``sqrt``. The body runs on whole arrays (numpy semantics, the parameters' dtypes) and the
    output parameters (given as arguments: updated in place) receive their final values; every
    argument must be a device array of the current device (0-d for scalars), as typed ``T``
    parameters of cupy need."""

    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        self.in_params = [p.split()[-1] for p in in_params.split(",")]
        self.out_params = [p.split()[-1] for p in out_params.split(",")]
        self.name = name
        statements = [st.strip() for st in operation.split(";") if st.strip()]
        self._code = compile("\n".join(statements), "<fake cupy kernel %s>" % name, "exec")

    def __call__(self, *args):
        names = self.in_params + self.out_params
        if len(args) != len(names):
            raise TypeError("Wrong number of arguments for %r: %d given, %d expected (outputs "
                            "included)" % (self.name, len(args), len(names)))
        dev = _current()
        if any(a.__class__ is not ndarray for a in args):
            raise TypeError("fake cupy: kernel %r takes device arrays only" % self.name)
        arrays = dict(zip(names, (_unwrap(a, dev) for a in args)))
        scope = dict(arrays)
        exec(self._code, {"__builtins__": {}, "sqrt": _np.sqrt}, scope)
        for name in self.out_params:
            if scope[name] is not arrays[name]:   # rebound (``x = ...``): write it back
                _np.copyto(arrays[name], scope[name], casting="same_kind")
        stats["kernels"] += 1
        return args[len(self.in_params)] if len(self.out_params) == 1 else \
            tuple(args[len(self.in_params):])


def pad(array, pad_width, mode="constant", **kwargs):
    """cupy.pad reads ``constant_values`` with ``numpy.array``: a device array there fails."""
    if any(v.__class__ is ndarray for v in _flat(kwargs.get("constant_values"))):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` "
                        "to construct a NumPy array explicitly. (fake cupy: cupy.pad's "
                        "constant_values must be host values)")
    return _call(_np.pad, (array, pad_width, mode), kwargs)


def _flat(value):
    if value.__class__ in (tuple, list):
        return [x for v in value for x in _flat(v)]
    return [value]


def get_array_module(*args):
    return sys.modules[__name__] if any(a.__class__ is ndarray for a in args) else _np


def is_available():
    return len(_visible_devices()) > 0


def get_default_memory_pool():
    return _memory_pool


def get_default_pinned_memory_pool():
    return _pinned_pool


_OWN = {"asarray": asarray, "array": array, "asnumpy": asnumpy, "ndarray": ndarray,
        "ascontiguousarray": ascontiguousarray, "get_array_module": get_array_module, "pad": pad,
        "is_available": is_available, "get_default_memory_pool": get_default_memory_pool,
        "get_default_pinned_memory_pool": get_default_pinned_memory_pool, "ufunc": ufunc,
        "ElementwiseKernel": ElementwiseKernel,
        "IS_FAKE": True}
_cache = {}


def _module_attr(name):
    v = _cache.get(name)
    if v is not None:
        return v
    if name in _OWN:
        return _OWN[name]
    try:
        attr = getattr(_np, name)
    except AttributeError:
        raise AttributeError("module 'cupy' (fake) has no attribute %r" % name) from None
    if isinstance(attr, _np.ufunc):
        v = _ufunc(name)
    elif isinstance(attr, type) or not callable(attr):
        v = attr   # dtypes (cupy.float32), constants (cupy.pi, cupy.newaxis)
    else:
        v = _function(name, attr)
    _cache[name] = v
    return v


class _Submodule(types.ModuleType):
    def __init__(self, name, np_module):
        super().__init__(name)
        self._np_module = np_module

    def __getattr__(self, name):
        attr = getattr(self._np_module, name)
        return _function(name, attr) if callable(attr) and not isinstance(attr, type) else attr


# -- cupyx -------------------------------------------------------------------------------------
def _scatter(np_ufunc, deprecated=None):
    def scatter(a, slices, value):
        if deprecated and _machine["ufunc_at"]:
            warnings.warn("`ndarray.%s` is deprecated. Please use `cupy.%s.at` instead."
                          % (deprecated, np_ufunc.__name__), DeprecationWarning, stacklevel=2)
        dev = _current()
        np_ufunc.at(_unwrap(a, dev), _unwrap_key(slices, dev), _unwrap(value, dev))
        stats["kernels"] += 1
    return scatter


def _special(fn):
    # cupyx.scipy.special's functions: elementwise, float dtypes kept, ints computed in float64.
    def f(x):
        dev = _current()
        a = _unwrap(x, dev)
        out = _np.frompyfunc(fn, 1, 1)(a).astype(a.dtype if a.dtype.kind == "f" else _np.float64)
        return _wrap(_np.asarray(out), dev)
    return f


_erf = _special(math.erf)
_erfc = _special(math.erfc)


def _build_modules():
    cupy = types.ModuleType("cupy")
    cupy.__doc__ = "zps.testing.fake_cupy: a numpy-backed stand-in for cupy"
    cupy.__getattr__ = _module_attr
    cupy.IS_FAKE = True
    cupy.__version__ = "0.0.0+fake"
    cuda = types.ModuleType("cupy.cuda")
    cuda.Device = Device
    cuda.Stream = Stream
    cuda.Event = Event
    cuda.PinnedMemoryPointer = PinnedMemoryPointer
    cuda.alloc_pinned_memory = _alloc_pinned_memory
    cuda.get_current_stream = lambda device=None: Stream.null
    cuda.is_available = is_available
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.getDeviceCount = _get_device_count
    runtime.CUDARuntimeError = CUDARuntimeError
    runtime.deviceSynchronize = lambda: None
    runtime.getDevice = _current
    cuda.runtime = runtime
    cupy.cuda = cuda
    cupy.linalg = _Submodule("cupy.linalg", _np.linalg)
    cupy.fft = _Submodule("cupy.fft", _np.fft)
    cupy.lib = types.ModuleType("cupy.lib")
    cupy.lib.stride_tricks = _Submodule("cupy.lib.stride_tricks", _np.lib.stride_tricks)
    cupyx = types.ModuleType("cupyx")
    cupyx.IS_FAKE = True
    cupyx.scatter_add = _scatter(_np.add, "scatter_add")
    cupyx.scatter_max = _scatter(_np.maximum, "scatter_max")
    cupyx.scatter_min = _scatter(_np.minimum, "scatter_min")
    scipy = types.ModuleType("cupyx.scipy")
    special = types.ModuleType("cupyx.scipy.special")
    special.erf = _erf
    special.erfc = _erfc
    scipy.special = special
    cupyx.scipy = scipy
    return {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.runtime": runtime, "cupy.linalg":
            cupy.linalg, "cupy.fft": cupy.fft,
            "cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special}


_saved = None


def install(num_gpus=1, ufunc_at=True):
    """Make ``import cupy`` / ``import cupyx`` resolve to the stand-in (a machine with
    ``num_gpus`` GPUs; ``ufunc_at=False``: a cupy before v13, without ``add.at``); returns the
    fake cupy module. Undo with :func:`uninstall`."""
    global _saved
    if _saved is None:
        _saved = {k: sys.modules.get(k) for k in _build_modules()}
    _machine["num_gpus"] = int(num_gpus)
    _machine["ufunc_at"] = bool(ufunc_at)
    modules = _build_modules()
    sys.modules.update(modules)
    reset_stats()
    return modules["cupy"]


def uninstall():
    """Restore whatever ``cupy`` was importable before :func:`install` (usually nothing)."""
    global _saved
    if _saved is None:
        return
    for k, v in _saved.items():
        if v is None:
            sys.modules.pop(k, None)
        else:
            sys.modules[k] = v
    _saved = None


@contextlib.contextmanager
def installed(num_gpus=1, ufunc_at=True):
    """``with installed(num_gpus=2) as cupy:`` — the stand-in, uninstalled on exit."""
    cupy = install(num_gpus, ufunc_at)
    try:
        yield cupy
    finally:
        uninstall()


@contextlib.contextmanager
def hidden():
    """``with hidden():`` — ``import cupy`` fails (ImportError) inside, as on a machine without it."""
    saved = {k: sys.modules.get(k) for k in ("cupy", "cupyx")}
    sys.modules["cupy"] = None    # makes `import cupy` raise ImportError
    sys.modules["cupyx"] = None
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
