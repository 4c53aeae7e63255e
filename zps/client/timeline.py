"""Chrome traces of traced steps: TF1's ``tensorflow.python.client.timeline`` API.

Run a step with ``RunOptions(trace_level=RunOptions.FULL_TRACE)`` and a ``RunMetadata``; the
metadata's ``step_stats`` hold one record per op of every task the step ran on (a ``_Recv``'s
record is its wait for the tensor, ``_FlushSends`` the batched sends going out, and the master's
``RunGraph/<job>/<task>`` records span each remote partition's request). ``Timeline`` turns them
into the Chrome trace format (open it at chrome://tracing or https://ui.perfetto.dev):

>>> import json
>>> import zps as tf
>>> from zps.client import timeline
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [2], name="x")
...     y = tf.add(x * 2.0, 1.0, name="y")
...     with tf.Session() as sess:
...         meta = tf.RunMetadata()
...         _ = sess.run(y, {x: [1.0, 2.0]}, run_metadata=meta,
...                      options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
>>> trace = json.loads(timeline.Timeline(meta.step_stats).generate_chrome_trace_format())
>>> sorted(e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "X")
['mul', 'y']
"""

import collections
import json
import re

__all__ = ["Timeline", "StepStatsAnalysis", "AllocationMaximum", "step_breakdown"]

AllocationMaximum = collections.namedtuple("AllocationMaximum", ("timestamp", "num_bytes", "tensors"))
StepStatsAnalysis = collections.namedtuple("StepStatsAnalysis", ("chrome_trace", "allocator_maximums"))

_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")


class _ChromeTraceFormatter:
    """Collects Chrome trace events (see the catapult project's trace-event format)."""

    def __init__(self):
        self._events = []
        self._metadata = []

    @staticmethod
    def _event(ph, category, name, pid, tid, timestamp):
        return {"ph": ph, "cat": category, "name": name, "pid": pid, "tid": tid, "ts": timestamp}

    def emit_pid(self, name, pid):
        self._metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})

    def emit_tid(self, name, pid, tid):
        self._metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": name}})

    def emit_region(self, timestamp, duration, pid, tid, category, name, args):
        event = self._event("X", category, name, pid, tid, timestamp)
        event["dur"] = duration
        event["args"] = args
        self._events.append(event)

    def emit_flow_start(self, name, timestamp, pid, tid, flow_id):
        event = self._event("s", "DataFlow", name, pid, tid, timestamp)
        event["id"] = flow_id
        self._events.append(event)

    def emit_flow_end(self, name, timestamp, pid, tid, flow_id):
        event = self._event("t", "DataFlow", name, pid, tid, timestamp)
        event["id"] = flow_id
        self._events.append(event)

    def format_to_string(self, pretty=False):
        trace = {"traceEvents": self._metadata + self._events}
        if pretty:
            return json.dumps(trace, indent=4, separators=(",", ": "))
        return json.dumps(trace, separators=(",", ":"))


class Timeline:
    """Visualizes the step stats of one traced step (TF1's ``timeline.Timeline``).

    Each device becomes a Chrome-trace process ("<device> Compute"), each op a region on a lane
    where it does not overlap another; with ``show_dataflow`` an arrow joins a tensor's producer
    to each consumer on another lane or device (partition boundaries are followed through the
    ``_Send``/``_Recv`` pair, whose names end in the edge's producer).
    """

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph

    def _dev_stats(self):
        return list(getattr(self._step_stats, "dev_stats", self._step_stats) or ())

    def analyze_step_stats(self, show_dataflow=True, show_memory=True, op_time="schedule"):
        """The Chrome trace (a formatter) and per-allocator maximums (none: zps does not trace
        allocations, so ``show_memory`` adds nothing)."""
        if op_time not in ("schedule", "gpu", "all"):
            raise ValueError("op_time must be 'schedule', 'gpu' or 'all', got %r" % (op_time,))
        trace = _ChromeTraceFormatter()
        trace.emit_pid("Allocators", 0)
        pids = {}
        ops = []   # (device pid, lane, node stats)
        for dev in self._dev_stats():
            pid = pids[dev.device] = 2 * len(pids) + 1
            trace.emit_pid(dev.device + " Compute", pid)
            trace.emit_pid(dev.device + " Tensors", pid + 1)
            lanes = []
            for ns in sorted(dev.node_stats, key=lambda ns: ns.all_start_micros):
                end = ns.all_start_micros + ns.all_end_rel_micros
                lane = next((i for i, busy_until in enumerate(lanes)
                             if ns.all_start_micros >= busy_until), len(lanes))
                lanes[lane:lane + 1] = [end]
                ops.append((pid, lane, ns))
        produced = {}   # tensor name -> (end time, pid, lane) of its producer
        for pid, lane, ns in ops:
            produced[ns.node_name] = (ns.all_start_micros + ns.all_end_rel_micros, pid, lane)
        flow_id = 0
        for pid, lane, ns in ops:
            _, op_type, inputs = _parse_op_label(ns.timeline_label)
            args = {"name": ns.node_name, "op": op_type}
            for i, name in enumerate(inputs):
                args["input%d" % i] = name
            trace.emit_region(ns.all_start_micros, ns.all_end_rel_micros, pid, lane, "Op", op_type,
                              args)
            if not show_dataflow:
                continue
            for name in inputs:
                source = produced.get(name.split(":")[0] if name.endswith(":0") else name)
                if source is None or (source[1] == pid and source[2] == lane):
                    continue   # an input of another step (fed, folded) or on the same lane
                trace.emit_flow_start(name, source[0], source[1], source[2], flow_id)
                trace.emit_flow_end(name, ns.all_start_micros, pid, lane, flow_id)
                flow_id += 1
        return StepStatsAnalysis(chrome_trace=trace, allocator_maximums={})

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False, op_time="schedule"):
        """The step as a Chrome trace (a JSON string)."""
        analysis = self.analyze_step_stats(show_dataflow=show_dataflow, show_memory=show_memory,
                                           op_time=op_time)
        return analysis.chrome_trace.format_to_string(pretty=True)


_APPLY_PREFIXES = ("Apply", "SparseApply", "ResourceApply", "ResourceSparseApply", "Assign",
                   "ScatterAdd", "ScatterSub", "ScatterUpdate", "AccumulatorApply")


def step_breakdown(step_stats):
    """Where a traced step's time went, per device: milliseconds of ``compute`` (kernels),
    ``apply`` (optimizer updates and assignments), ``network_wait`` (``_Recv`` waiting for a
    tensor), ``send`` (``_Send`` handing tensors over plus ``_FlushSends``: serialization and
    hand-off to the I/O thread), ``rpc`` (the master's spans of remote partitions) and ``span``
    (first start to last end on that device). Waits overlap each other and the kernels, so the
    categories do not add up to the span.

    >>> import zps as tf
    >>> meta = tf.RunMetadata()
    >>> _ = meta.step_stats.add_device("/job:ps/replica:0/task:0/device:CPU:0", [
    ...     ("r", 0, 4000, "r = _Recv()", 1), ("a", 4000, 5000, "a = ApplyAdagrad(v, r)", 0)])
    >>> step_breakdown(meta.step_stats)["/job:ps/replica:0/task:0/device:CPU:0"]["apply"]
    1.0
    """
    out = {}
    for dev in getattr(step_stats, "dev_stats", step_stats) or ():
        cats = dict.fromkeys(("compute", "apply", "network_wait", "send", "rpc"), 0.0)
        start = end = None
        for ns in dev.node_stats:
            _, op_type, _ = _parse_op_label(ns.timeline_label)
            if op_type in ("_Recv", "_RecvN"):
                cat = "network_wait"
            elif op_type in ("_Send", "_SendN", "_FlushSends"):
                cat = "send"
            elif op_type == "_RunGraph":
                cat = "rpc"
            elif op_type.startswith(_APPLY_PREFIXES):
                cat = "apply"
            else:
                cat = "compute"
            cats[cat] += ns.all_end_rel_micros / 1e3
            t1 = ns.all_start_micros + ns.all_end_rel_micros
            start = ns.all_start_micros if start is None else min(start, ns.all_start_micros)
            end = t1 if end is None else max(end, t1)
        cats["span"] = 0.0 if start is None else (end - start) / 1e3
        out[dev.device] = cats
    return out


def _parse_op_label(label):
    """``"name = Type(a, b)"`` -> ("name", "Type", ["a", "b"]); anything else is unknown."""
    match = _LABEL.match(label or "")
    if match is None:
        return "unknown", "unknown", []
    name, op_type, inputs = match.groups()
    return name, op_type, inputs.split(", ") if inputs else []
