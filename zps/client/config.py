"""Session configuration and per-run options, shaped like TF1's protos (plain Python objects).

>>> import zps as tf
>>> cfg = tf.ConfigProto(allow_soft_placement=True, device_filters=["/job:ps"])
>>> cfg.allow_soft_placement, list(cfg.device_filters), cfg.operation_timeout_in_ms
(True, ['/job:ps'], 0)
"""


class _Message:
    """A TF1-proto-like record: known fields with defaults, unknown fields rejected."""

    _FIELDS = {}

    def __init__(self, **kwargs):
        for name, default in self._FIELDS.items():
            value = kwargs.pop(name, None)
            if value is None:
                value = default() if callable(default) else default
            setattr(self, name, value)
        if kwargs:
            raise TypeError("%s got unknown field(s) %s; known fields: %s"
                            % (type(self).__name__, sorted(kwargs), sorted(self._FIELDS)))

    def __repr__(self):
        fields = ", ".join("%s=%r" % (k, getattr(self, k)) for k in self._FIELDS)
        return "%s(%s)" % (type(self).__name__, fields)

    def __eq__(self, other):
        return type(other) is type(self) and all(
            getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    def CopyFrom(self, other):  # noqa: N802 - proto API name
        for k in self._FIELDS:
            setattr(self, k, getattr(other, k))


class GPUOptions(_Message):
    _FIELDS = {"allow_growth": False, "per_process_gpu_memory_fraction": 0.0,
               "visible_device_list": ""}


class GraphOptions(_Message):
    _FIELDS = {"place_pruned_graph": False, "build_cost_model": 0}


class ConfigProto(_Message):
    """Session options. ``operation_timeout_in_ms`` bounds every remote wait (0 = default)."""

    _FIELDS = {
        "device_count": dict,
        "intra_op_parallelism_threads": 0,
        "inter_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "allow_soft_placement": False,
        "log_device_placement": False,
        "device_filters": list,
        "operation_timeout_in_ms": 0,
        "gpu_options": GPUOptions,
        "graph_options": GraphOptions,
        "isolate_session_state": False,
        "placement_period": 0,
        "cluster_def": None,
        "rpc_options": None,
        "experimental": None,
    }


class RunOptions(_Message):
    FULL_TRACE = 3
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    NO_TRACE = 0
    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "output_partition_graphs": False,
               "inter_op_thread_pool": 0, "report_tensor_allocations_upon_oom": False}


class NodeExecStats(_Message):
    """One op's execution in a traced step (TF1's step_stats_pb2.NodeExecStats).

    Times are microseconds: ``all_start_micros`` since the epoch, the ``*_rel_micros`` relative to
    it. ``timeline_label`` reads ``"name = Type(input, ...)"`` (what timelines parse for dataflow).
    """

    _FIELDS = {"node_name": "", "all_start_micros": 0, "op_start_rel_micros": 0,
               "op_end_rel_micros": 0, "all_end_rel_micros": 0, "timeline_label": "",
               "scheduled_micros": 0, "thread_id": 0, "output": list, "memory": list}


class DeviceStepStats(_Message):
    """The ops one device (a task's CPU) ran in a traced step."""

    _FIELDS = {"device": "", "node_stats": list}


class StepStats(list):
    """A traced step's per-device records (TF1's StepStats): ``step_stats.dev_stats`` is the list
    of DeviceStepStats (the object itself, so ``run_metadata.step_stats == []`` when untraced)."""

    @property
    def dev_stats(self):
        return self

    def add_device(self, device, records):
        """Append a DeviceStepStats for ``device`` from executor trace records (see
        ``zps.runtime.executor.Plan.run_traced``); returns it."""
        dev = DeviceStepStats(device=device, node_stats=[NodeExecStats(
            node_name=name, all_start_micros=start, op_start_rel_micros=0,
            op_end_rel_micros=end - start, all_end_rel_micros=end - start, timeline_label=label,
            thread_id=thread) for name, start, end, label, thread in records])
        self.append(dev)
        return dev


class RunMetadata(_Message):
    """Filled by ``Session.run(..., options=RunOptions(trace_level=FULL_TRACE), run_metadata=)``:
    ``step_stats.dev_stats[i].node_stats`` are the per-op records of each device (task)."""

    _FIELDS = {"step_stats": StepStats, "partition_graphs": list, "cost_graph": None}
