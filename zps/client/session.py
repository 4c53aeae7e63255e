"""Session: runs (parts of) a graph, in this process or on a cluster through a server's master.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     a = tf.placeholder(tf.float32, [None])
...     b = a * 2.0
...     with tf.Session() as sess:
...         out = sess.run({"b": b, "both": [a, b]}, feed_dict={a: [1.0, 2.0]})
>>> out["b"].tolist(), out["both"][0].tolist()
([2.0, 4.0], [1.0, 2.0])
"""

import collections
import threading

import numpy as np

from zps.client.config import ConfigProto
from zps.distributed.session_target import runner_for_target
from zps.framework import default_session, errors
from zps.framework.device import DeviceSpec, visible_gpu_count
from zps.framework.graph import (
    IndexedSlices,
    Operation,
    get_default_graph,
    is_symbolic,
    numpy_value,
)
from zps.runtime.executor import Plan, StepContext
from zps.runtime.plan_cache import PlanCache
from zps.runtime.resources import ResourceManager

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])
DeviceAttributes = collections.namedtuple(
    "DeviceAttributes", ["name", "device_type", "memory_limit_bytes", "incarnation"])

_LOCAL_JOBS = (None, "localhost")

# zps://host:port is a server's target; grpc:// is accepted as the same thing (TF1 programs).
_SERVER_SCHEMES = ("zps", "grpc")


class _LocalRunner:
    """Runs whole plans in this process on a private ResourceManager (TF1's DirectSession)."""

    def __init__(self, graph, config):
        self._graph = graph
        self._config = config
        self.resources = ResourceManager()
        self._running = {}   # context of each step in flight -> its thread; close() cancels
        self._gpu_ids = session_gpu_ids(config)
        self._plans = PlanCache(graph, lambda feeds, fetches, targets: Plan(
            feeds, fetches, targets, placement_check=self._check_placement,
            soft_placement=bool(config.allow_soft_placement), gpu_ids=self._gpu_ids))

    def run(self, feeds, feed_values, fetches, targets, options, run_metadata):
        plan = self._plans.get(feeds, fetches, targets)
        ctx = StepContext(self.resources)
        self._running[ctx] = threading.get_ident()
        try:
            if options is not None and options.trace_level and run_metadata is not None:
                values, records = plan.run_traced(ctx, feed_values)
                run_metadata.step_stats.add_device(
                    "/job:localhost/replica:0/task:0/device:CPU:0", records)
                return values
            return plan.run(ctx, feed_values)
        finally:
            self._running.pop(ctx, None)

    def list_devices(self):
        devices = [DeviceAttributes("/job:localhost/replica:0/task:0/device:CPU:0", "CPU", 0, 0)]
        n = visible_gpu_count()
        if self._gpu_ids is not None:
            n = sum(1 for i in self._gpu_ids if i < n)
        return devices + [DeviceAttributes("/job:localhost/replica:0/task:0/device:GPU:%d" % i,
                                           "GPU", 0, 0) for i in range(n)]

    def _check_placement(self, op):
        if not op.device:
            return
        d = DeviceSpec.from_string(op.device)
        if d.job not in _LOCAL_JOBS or (d.task not in (None, 0)):
            raise errors.InvalidArgumentError(
                op.name, op,
                "Cannot run op '%s': it is placed on %s, but this Session has no cluster (target "
                "''). Open the session on a server of that cluster instead, e.g. "
                "tf.Session(server.target), or remove the job/task from its device."
                % (op.name, op.device))
        # GPU devices are placed by the plan (zps.ops.cupy_kernels.place).

    def cancel_threads(self, threads, error):
        """Cancel the steps that the threads (idents) of ``threads`` are running."""
        for ctx, thread in list(self._running.items()):
            if thread in threads:
                ctx.cancel(error)

    def close(self):
        closed = errors.CancelledError(None, None, "Session closed while the step was running")
        for ctx in list(self._running):
            ctx.cancel(closed)
        self.resources.close()


def session_gpu_ids(config):
    """The GPUs of this process a session's ``/gpu:i`` name, as TF1's ConfigProto selects them:
    ``gpu_options.visible_device_list`` ("1,0": /gpu:0 is GPU 1) and ``device_count['GPU']`` (at
    most that many); None when the config restricts nothing."""
    listed = getattr(getattr(config, "gpu_options", None), "visible_device_list", "") or ""
    ids = None
    if listed.strip():
        try:
            ids = [int(v) for v in listed.split(",")]
        except ValueError:
            ids = []
        if not ids or min(ids) < 0 or len(set(ids)) != len(ids):
            raise errors.InvalidArgumentError(
                None, None, "gpu_options.visible_device_list %r is not a list of distinct GPU "
                "ids, e.g. '0' or '1,0'" % listed)
    limit = (getattr(config, "device_count", None) or {}).get("GPU")
    if limit is not None:
        ids = (list(range(int(limit))) if ids is None else ids)[:max(int(limit), 0)]
    return ids


class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        self._graph = graph if graph is not None else get_default_graph()
        self._target = target.decode() if isinstance(target, bytes) else (target or "")
        self._config = config if config is not None else ConfigProto()
        self._closed = False
        self._default_ctx = None
        scheme = self._target.split("://", 1)[0] if "://" in self._target else None
        if not self._target:
            self._runner = _LocalRunner(self._graph, self._config)
        elif scheme in _SERVER_SCHEMES:
            self._runner = runner_for_target(self._target, self._graph, self._config)
        else:
            raise errors.InvalidArgumentError(
                None, None, "Session target %r is not supported: use '' for an in-process "
                "session or a server target such as 'zps://host:port' (or 'grpc://host:port')."
                % self._target)

    graph = property(lambda self: self._graph)
    sess_str = property(lambda self: self._target)
    target = sess_str

    def list_devices(self):
        return getattr(self._runner, "list_devices", lambda: [])()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Compute ``fetches`` (a nested structure of tensors, ops and names) given ``feed_dict``.

        Returns the same structure with numpy values (numpy scalars for 0-d tensors, None for
        ops). Any tensor can be fed, which skips computing it.
        """
        self._check_open()
        structure = _FetchStructure(self._graph, fetches)
        feeds, feed_values = self._process_feeds(feed_dict)
        return structure.build(self._runner.run(feeds, feed_values, structure.tensors,
                                                structure.targets, options, run_metadata))

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function running ``fetches`` with positional feed values for ``feed_list``.

        The fetches and feeds are resolved once, so each call costs less than ``run``.
        """
        structure = _FetchStructure(self._graph, fetches)
        feeds = []
        for key in feed_list or []:
            if hasattr(key, "_feed_tensors"):  # composite feeds (SparseTensor): the general path
                return self._general_callable(fetches, feed_list, accept_options)
            feeds.append(_expand_feed(self._graph, key, None)[0][0])

        def call(*args, options=None, run_metadata=None):
            self._check_open()
            if len(args) != len(feeds):
                raise TypeError("Callable expected %d feed values, got %d" % (len(feeds), len(args)))
            values = [_feed_value(self._graph, t, v) for t, v in zip(feeds, args)]
            return structure.build(self._runner.run(feeds, values, structure.tensors,
                                                    structure.targets, options, run_metadata))
        return call if accept_options else (lambda *args: call(*args))

    def _general_callable(self, fetches, feed_list, accept_options):
        def call(*args, **kwargs):
            if len(args) != len(feed_list):
                raise TypeError("Callable expected %d feed values, got %d"
                                % (len(feed_list), len(args)))
            return self.run(fetches, dict(zip(feed_list, args)), **kwargs)
        return call if accept_options else (lambda *args: call(*args))

    def _check_open(self):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    def _process_feeds(self, feed_dict):
        if not feed_dict:
            return [], []
        feeds, values = [], []
        for key, value in feed_dict.items():
            for t, v in _expand_feed(self._graph, key, value):
                feeds.append(t)
                values.append(_feed_value(self._graph, t, v))
        return feeds, values

    def close(self):
        if not self._closed:
            self._closed = True
            self._runner.close()

    def _cancel_runs_of(self, threads, error):
        """Cancel the runs in flight of the threads (idents) ``threads``: they raise ``error``
        (a queue runner's threads when its coordinator stops)."""
        self._runner.cancel_threads(threads, error)

    def as_default(self):
        return _DefaultSession(self)

    def __enter__(self):
        self._default_ctx = self.as_default()
        self._default_ctx.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._default_ctx is not None:
            self._default_ctx.__exit__(exc_type, exc, tb)
            self._default_ctx = None
        self.close()
        return False

    def __del__(self):
        try:
            if not self._closed:
                self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


class Session(BaseSession):
    """A session: ``Session(target='', graph=None, config=None)``.

    ``target`` is '' (run in this process) or a server target ``zps://host:port``;
    ``grpc://host:port`` is accepted as the same thing, so TF1 programs run unchanged.
    """


class InteractiveSession(Session):
    """A session that makes itself the default on creation (for shells and notebooks)."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._interactive_ctx = self.as_default()
        self._interactive_ctx.__enter__()

    def close(self):
        ctx, self._interactive_ctx = getattr(self, "_interactive_ctx", None), None
        if ctx is not None:
            ctx.__exit__(None, None, None)
        super().close()


class _DefaultSession:
    def __init__(self, session):
        self._session = session
        self._graph_ctx = None

    def __enter__(self):
        default_session.push(self._session)
        self._graph_ctx = self._session.graph.as_default()
        self._graph_ctx.__enter__()
        return self._session

    def __exit__(self, *exc):
        self._graph_ctx.__exit__(*exc)
        default_session.pop(self._session)
        return False


# -- feeds ---------------------------------------------------------------------------------------
def _expand_feed(graph, key, value):
    feed_fn = getattr(key, "_feed_tensors", None)  # composite feeds, e.g. SparseTensor
    if feed_fn is not None:
        return feed_fn(value)
    try:
        el = graph.as_graph_element(key, allow_operation=False)
    except (KeyError, ValueError, TypeError) as e:
        raise TypeError("Cannot interpret feed_dict key %r as a Tensor: %s" % (key, e)) from None
    return [(el, value)]


def _feed_value(graph, t, value):
    """``value`` as an ndarray of ``t``'s dtype, checked against ``t``'s static shape."""
    if is_symbolic(value):
        raise TypeError("The value of a feed cannot be a zps.Tensor object (feeding %s). Acceptable "
                        "feed values are Python scalars, strings, lists and numpy arrays; fetch the "
                        "tensor's value with sess.run first." % t.name)
    if not graph.is_feedable(t):
        raise ValueError("Tensor %s may not be fed." % t.name)
    np_dtype = t.dtype.as_numpy_dtype
    if value.__class__ is np.ndarray and value.dtype.type is np_dtype and np_dtype is not np.object_:
        arr = value  # the common case: already the right type (strings still become bytes)
    elif t.dtype.is_integer and not isinstance(value, int | np.integer) and \
            (arr := np.asarray(value)).dtype.kind == "f":
        arr = _whole_numbers(t, arr)
    else:
        try:
            arr = numpy_value(value, t.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise FeedError(t.op.name, t.op, "Cannot feed a value of type %s to %s (dtype %s): %s"
                            % (type(value).__name__, t.name, t.dtype.name, e)) from None
    dims = t._shape._dims
    if dims is not None and not (len(dims) == arr.ndim and all(
            d is None or d == n for d, n in zip(dims, arr.shape))):
        raise FeedError(t.op.name, t.op, "Cannot feed value of shape %s for Tensor '%s', which has "
                        "shape %s" % (tuple(arr.shape), t.name, t.get_shape()))
    return arr


class FeedError(errors.InvalidArgumentError, ValueError):
    """A feed value that does not fit its tensor: TF1 raises ValueError (before the step runs),
    zps's errors are InvalidArgumentError; this is both."""


def _whole_numbers(t, value):
    """Floats fed to an integer tensor (labels read from a CSV file: 3.0): converted, as TF1
    converts them, when every value is a whole number the dtype holds; refused otherwise, where
    TF1 would silently truncate 1.7 to 1."""
    info = np.iinfo(t.dtype.as_numpy_dtype)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(value) & (value == np.trunc(value)) & (value >= info.min) & \
            (value <= info.max)
    if not whole.all():
        bad = value[~whole].flat[0]
        raise FeedError(t.op.name, t.op, "Cannot feed float values to %s of dtype %s: %r is not a "
                        "whole number in its range; round or cast them explicitly first (e.g. "
                        "np.rint(x).astype(np.%s))" % (t.name, t.dtype.name, float(bad),
                                                       t.dtype.as_numpy_dtype.__name__))
    return value.astype(t.dtype.as_numpy_dtype)


# -- fetches -------------------------------------------------------------------------------------
class _FetchStructure:
    """Flattens a nested fetch argument into unique tensors and ops, and rebuilds the results."""

    def __init__(self, graph, fetches):
        self._graph = graph
        self.tensors = []
        self.targets = []
        self._index = {}
        self._builder = self._parse(fetches)

    def _add(self, element):
        """The position of a fetched tensor's value in the runner's result list."""
        i = self._index.get(element)
        if i is None:
            if isinstance(element, Operation):
                self.targets.append(element)
                i = self._index[element] = -1
            else:
                i = self._index[element] = len(self.tensors)
                self.tensors.append(element)
        return i

    def _parse(self, f):
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        if isinstance(f, dict):
            builders = {k: self._parse(v) for k, v in f.items()}
            if isinstance(f, collections.defaultdict):
                return lambda vals: _rebuild_dict(f, builders, vals)
            return lambda vals: type(f)((k, b(vals)) for k, b in builders.items())
        if isinstance(f, tuple) and hasattr(f, "_fields"):  # namedtuple
            builders = [self._parse(v) for v in f]
            return lambda vals: type(f)(*[b(vals) for b in builders])
        if isinstance(f, list | tuple):
            builders = [self._parse(v) for v in f]
            return lambda vals: type(f)(b(vals) for b in builders)
        if isinstance(f, IndexedSlices):
            parts = [self._parse(p) for p in (f.values, f.indices, f.dense_shape) if p is not None]
            return lambda vals: IndexedSlicesValue(*[b(vals) for b in parts],
                                                   *([None] if f.dense_shape is None else []))
        composite = getattr(f, "_fetch_components", None)
        if composite is not None:  # e.g. SparseTensor -> SparseTensorValue
            components, make_value = composite()
            builders = [self._parse(c) for c in components]
            return lambda vals: make_value(*[b(vals) for b in builders])
        try:
            el = self._graph.as_graph_element(f)
        except TypeError as e:
            raise TypeError("Fetch argument %r has invalid type %r, must be a string or Tensor. "
                            "(%s)" % (f, type(f), e)) from None
        except (KeyError, ValueError) as e:
            raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)"
                             % (f, e.args[0] if e.args else e)) from None
        if not self._graph.is_fetchable(el):
            raise ValueError("Operation %r has been marked as not fetchable." % el.name)
        i = self._add(el)
        if i < 0:
            return lambda vals: None
        np_dtype = el.dtype.as_numpy_dtype
        return lambda vals: _fetch_result(vals[i], np_dtype)

    def build(self, values):
        return self._builder(values)


def _rebuild_dict(f, builders, vals):
    out = type(f)(f.default_factory)
    for k, b in builders.items():
        out[k] = b(vals)
    return out


def _fetch_result(value, np_dtype):
    # TF1 returns numpy values: numpy scalars (np.float32, bytes) for 0-d tensors.
    if value.__class__ is np.ndarray:
        return value[()] if value.ndim == 0 else value
    if isinstance(value, np.generic | bytes):
        return value
    value = np.asarray(value, dtype=np_dtype)  # a Python value from a kernel
    return value[()] if value.ndim == 0 else value
