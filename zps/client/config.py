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


class RunMetadata(_Message):
    """Filled by ``Session.run(..., run_metadata=)``: ``step_stats`` is a list of per-op records."""

    _FIELDS = {"step_stats": list, "partition_graphs": list, "cost_graph": None}
