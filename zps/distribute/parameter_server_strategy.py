"""``tf.distribute.experimental.ParameterServerStrategy`` (TF 1.15's, between-graph).

Each worker builds its own graph: variables go to the ps tasks round robin (as
``replica_device_setter``), compute is replicated on the worker's GPUs (cupy) or runs on its
CPU; ``num_replicas_in_sync`` counts this worker's replicas. Updates are applied to the
variables where they live, asynchronously between workers. The cluster comes from a cluster
resolver (default: TF_CONFIG) or from ``configure(cluster_spec=..., task_type, task_id)``;
without one the strategy is local (variables on the CPU, or on the one GPU). The chief (task
"chief", or worker 0 without one) initializes, checkpoints and writes summaries.

With several replicas per worker, variables are AggregatingVariables (replica-context updates
aggregated first); with one, plain variables.
"""

from zps.distribute import cross_device_ops as cdo
from zps.distribute import distribute_lib, input_lib, mirrored_run, values
from zps.distribute.mirrored_strategy import _update_plain, default_devices
from zps.distributed.cluster_spec import ClusterSpec
from zps.distributed.resolvers import SimpleClusterResolver, TFConfigClusterResolver
from zps.framework.device import canonical_name
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import array_ops

_LOCAL_CPU = "/device:CPU:0"


class ParameterServerStrategy(distribute_lib.Strategy):
    """Between-graph training with variables on parameter servers (see the module docstring).

    ``cluster_resolver``: where the cluster is described (default TFConfigClusterResolver).
    """

    def __init__(self, cluster_resolver=None):
        if cluster_resolver is None:
            cluster_resolver = TFConfigClusterResolver()
        super().__init__(ParameterServerExtended(self, cluster_resolver=cluster_resolver))


class ParameterServerExtended(distribute_lib.StrategyExtended):
    """``ParameterServerStrategy.extended`` (and CentralStorageStrategy's, locally)."""

    def __init__(self, container_strategy, cluster_resolver=None, compute_devices=None,
                 parameter_device=None):
        super().__init__(container_strategy)
        self._num_gpus_per_worker = None
        spec = cluster_resolver.cluster_spec() if cluster_resolver is not None else None
        if spec is not None and ClusterSpec(spec).as_dict():
            self._initialize_multi_worker(cluster_resolver)
        else:
            self._initialize_local(compute_devices, parameter_device)
        self._cross_device_ops = cdo.ReductionToOneDevice(reduce_to_device=_LOCAL_CPU)

    def _allow_variable_partition(self):
        return True       # TF 1.15 (graph mode): the variables live on parameter devices

    def _initialize_local(self, compute_devices, parameter_device):
        self._worker_device = _LOCAL_CPU
        if compute_devices is None:
            compute_devices = default_devices()
            self._num_gpus_per_worker = sum(1 for d in compute_devices if "GPU" in d)
        compute_devices = tuple(canonical_name(d) for d in compute_devices)
        if parameter_device is None:
            parameter_device = compute_devices[0] if len(compute_devices) == 1 else _LOCAL_CPU
        self._variable_device = canonical_name(parameter_device)
        self._compute_devices = compute_devices
        self._parameter_devices = (self._variable_device,)
        self._default_device = None
        self._is_chief = True
        self._cluster_spec = None
        self._task_type = None
        self._task_id = None

    def _initialize_multi_worker(self, cluster_resolver):
        from zps.train.device_setter import replica_device_setter
        cluster_spec = ClusterSpec(cluster_resolver.cluster_spec())
        task_type = cluster_resolver.task_type
        task_id = cluster_resolver.task_id
        if not task_type or task_id is None:
            raise ValueError("When `cluster_spec` is given, you must also specify `task_type` "
                             "and `task_id`")
        num_gpus = cluster_resolver.num_accelerators().get("GPU", 0)
        if self._num_gpus_per_worker is None:
            self._num_gpus_per_worker = num_gpus
        num_gpus = self._num_gpus_per_worker
        worker_device = "/job:%s/task:%d" % (task_type, task_id)
        if num_gpus > 0:
            compute_devices = tuple("%s/device:GPU:%d" % (worker_device, i)
                                    for i in range(num_gpus))
        else:
            compute_devices = (worker_device,)
        self._compute_devices = tuple(canonical_name(d) for d in compute_devices)
        jobs = cluster_spec.as_dict()
        num_ps = len(jobs.get("ps", []))
        if num_ps == 0:
            raise ValueError("The cluster spec needs to have `ps` jobs.")
        self._variable_device = replica_device_setter(
            ps_tasks=num_ps, worker_device=worker_device, merge_devices=True,
            cluster=cluster_spec)
        self._parameter_devices = tuple("/job:ps/task:%d" % i for i in range(num_ps))
        self._default_device = worker_device
        self._worker_device = worker_device
        self._is_chief = _is_chief(jobs, task_type, task_id)
        self._cluster_spec = cluster_spec
        self._task_type = task_type
        self._task_id = task_id

    _num_replicas_in_sync = property(lambda self: len(self._compute_devices))

    # -- variables ------------------------------------------------------------------------------
    def _create_variable(self, next_creator, **kwargs):
        if self._num_replicas_in_sync > 1:
            aggregation = kwargs.pop("aggregation", None) or values.VariableAggregation.NONE
            try:
                aggregation = values.VariableAggregation(aggregation)
            except ValueError:
                raise ValueError("Invalid variable aggregation mode: %s for variable: %s"
                                 % (aggregation, kwargs.get("name"))) from None
            var_creator = _aggregating_creator(self._container_strategy(), next_creator,
                                               aggregation)
        else:
            var_creator = next_creator
        graph = get_default_graph()
        colocate_with = kwargs.pop("colocate_with", None)
        if colocate_with is not None:
            with graph.device(None), graph.colocate_with(colocate_with):
                return var_creator(**kwargs)
        if graph._colocation_stack:
            # Created next to another variable (an optimizer's slots and non-slot variables,
            # as TF's colocate_vars_with): stay there.
            return var_creator(**kwargs)
        with graph.colocate_with(None, ignore_existing=True), graph.device(self._variable_device):
            return var_creator(**kwargs)

    # -- input ------------------------------------------------------------------------------------
    def _iterator_over(self, dataset):
        return input_lib.DistributedIterator(dataset, self, self._compute_devices,
                                             input_device=self._worker_device)

    def _make_dataset_iterator(self, dataset):
        n = self._num_replicas_in_sync
        return self._iterator_over(input_lib.split_dataset_batch(dataset, n) if n > 1
                                   else dataset)

    def _make_input_fn_iterator(self, input_fn, replication_mode):
        if self._cluster_spec is not None:
            jobs = self._cluster_spec.as_dict()
            pipeline_id = _id_in_cluster(jobs, self._task_type, self._task_id)
            num_pipelines = _worker_count(jobs, self._task_type)
        else:
            pipeline_id, num_pipelines = 0, 1
        ctx = distribute_lib.InputContext(num_input_pipelines=num_pipelines,
                                          input_pipeline_id=pipeline_id,
                                          num_replicas_in_sync=self._num_replicas_in_sync)
        return self._iterator_over(input_fn(ctx))

    # -- replicas, reductions, updates ------------------------------------------------------------
    def _call_for_each_replica(self, fn, args, kwargs):
        return mirrored_run.call_for_each_replica(self._container_strategy(), fn, args, kwargs)

    @property
    def worker_devices(self):
        return self._compute_devices

    @property
    def parameter_devices(self):
        return self._parameter_devices

    def _reduce_to(self, reduce_op, value, destinations):
        if not isinstance(value, values.DistributedValues):
            return cdo.reduce_non_distributed_value(reduce_op, value, destinations,
                                                    self._num_replicas_in_sync)
        return self._cross_device_ops.reduce(reduce_op, value, destinations=destinations)

    def _broadcast_to(self, tensor, destinations):
        if isinstance(tensor, float | int):
            return tensor
        return self._cross_device_ops.broadcast(tensor, destinations)

    def _update(self, var, fn, args, kwargs, group):
        if isinstance(var, values.AggregatingVariable):
            var = var.get()
        return _update_plain(self, var, fn, args, kwargs, group)

    def _update_non_slot(self, colocate_with, fn, args, kwargs, group):
        from zps import nest
        graph = get_default_graph()
        with graph.device(colocate_with.device), distribute_lib.UpdateContext(colocate_with):
            result = fn(*args, **kwargs)
        return result if group else nest.map_structure(self._local_results, result)

    def read_var(self, v):
        return array_ops.identity(getattr(v, "get", lambda: v)())

    def non_slot_devices(self, var_list):
        return min(var_list, key=lambda x: x.name)

    # -- cluster ------------------------------------------------------------------------------------
    def _configure(self, session_config=None, cluster_spec=None, task_type=None, task_id=None):
        if cluster_spec:
            self._initialize_multi_worker(SimpleClusterResolver(
                cluster_spec=ClusterSpec(cluster_spec), task_type=task_type, task_id=task_id,
                num_accelerators={"GPU": self._num_gpus_per_worker or 0}))
        if session_config is not None:
            updated = self._update_config_proto(session_config)
            session_config.__dict__.update(updated.__dict__)

    def _update_config_proto(self, config_proto):
        import copy
        updated = copy.deepcopy(config_proto)
        if not self._cluster_spec:
            updated.isolate_session_state = True
            return updated
        updated.isolate_session_state = False
        filters = []
        if self._task_type in ("chief", "worker"):
            filters = ["/job:%s/task:%d" % (self._task_type, self._task_id), "/job:ps"]
        elif self._task_type == "evaluator":
            filters = ["/job:%s/task:%d" % (self._task_type, self._task_id)]
        updated.device_filters = filters
        return updated

    @property
    def experimental_between_graph(self):
        return True

    @property
    def experimental_should_init(self):
        return self._is_chief

    @property
    def should_checkpoint(self):
        return self._is_chief

    @property
    def should_save_summary(self):
        return self._is_chief


def _aggregating_creator(strategy, next_creator, aggregation):
    def var_creator(**kwargs):
        collections = kwargs.pop("collections", None)
        collections = [GraphKeys.GLOBAL_VARIABLES] if collections is None else list(collections)
        kwargs["collections"] = []
        v = next_creator(**kwargs)
        wrapped = values.AggregatingVariable(strategy, v, aggregation)
        graph = get_default_graph()
        trainable = kwargs.get("trainable")
        if trainable is None or trainable:
            trainable = v.trainable
        if trainable:
            if GraphKeys.TRAINABLE_VARIABLES not in collections:
                collections.append(GraphKeys.TRAINABLE_VARIABLES)
            refs = graph.get_collection_ref(GraphKeys.TRAINABLE_VARIABLES)
            if v in refs:
                refs.remove(v)
        graph.add_to_collections(collections, wrapped)
        return wrapped
    return var_creator


def _is_chief(jobs, task_type, task_id):
    if task_type in ("chief", "evaluator"):
        return True
    return "chief" not in jobs and task_type == "worker" and task_id == 0


def _id_in_cluster(jobs, task_type, task_id):
    if task_type == "chief":
        return 0
    if task_type == "worker":
        return task_id + len(jobs.get("chief", []))
    if task_type == "evaluator":
        return task_id
    raise ValueError("There is no id for task_type %r and task_id %r" % (task_type, task_id))


def _worker_count(jobs, task_type):
    if task_type not in ("chief", "worker", "evaluator"):
        raise ValueError("Unexpected `task_type` %r" % task_type)
    if task_type == "evaluator":
        return len(jobs.get("evaluator", []))
    return len(jobs.get("chief", [])) + len(jobs.get("worker", []))


__all__ = ["ParameterServerStrategy"]
