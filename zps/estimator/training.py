"""``train_and_evaluate``: one program for every task of a cluster, as TF1's.

Without a cluster in ``TF_CONFIG`` it trains locally and evaluates after checkpoints (at most
every ``throttle_secs``, and always after the last one). With one, each task does its part:
``ps`` serves variables (``tf.train.Server(...).join()``), ``chief`` and ``worker`` start their
server and train between-graph (variables placed on the ps tasks by ``replica_device_setter``;
the chief initializes, restores and saves checkpoints), and the ``evaluator`` evaluates each
new checkpoint of ``model_dir`` until the training's ``max_steps`` is reached. After each
evaluation (locally, or on the evaluator) the ``EvalSpec``'s exporters export that checkpoint
into ``model_dir/export/<exporter name>``::

    TF_CONFIG='{"cluster": {"chief": ["h0:2222"], "ps": ["h1:2222"], "worker": ["h2:2222"]},
                "task": {"type": "worker", "index": 0}}' python trainer.py

With ``RunConfig(train_distribute=tf.distribute.experimental.ParameterServerStrategy())`` and
a cluster, TF1's distribute coordinator runs the task instead (INDEPENDENT_WORKER mode): the
ps tasks serve; the chief and the workers start their server, configure their own copy of the
strategy for their task (variables on the ps tasks, compute on this task) and train at once
(no staggered start), the chief initializing and checkpointing; the evaluator evaluates with
``eval_distribute``. Only between-graph strategies can run so (TF1's in-graph multi-worker
MirroredStrategy is not in zps).
"""

import copy
import logging
import os
import time

from zps.client.config import ConfigProto
from zps.distributed.cluster_spec import ClusterSpec
from zps.distributed.resolvers import _task_index, _tf_config_task
from zps.distributed.server import Server
from zps.estimator.estimator import Estimator
from zps.estimator.exporter import Exporter
from zps.estimator.model_fn import _validate_hooks
from zps.estimator.run_config import TaskType
from zps.framework.graph import GraphKeys
from zps.train.basic_session_run_hooks import CheckpointSaverListener, SecondOrStepTimer

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]

_logger = logging.getLogger("zps.estimator")

_DELAY_SECS_PER_WORKER = 5     # TF1: worker k waits (k + 1) * 5 s so the chief initializes first
_MAX_DELAY_SECS = 60
_TRAINER_JOBS = (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER)


class TrainSpec:
    """What ``train_and_evaluate`` trains: ``input_fn``, until global step ``max_steps`` (or the
    end of the data), with ``hooks``."""

    def __init__(self, input_fn, max_steps=None, hooks=None):
        if not callable(input_fn):
            raise TypeError("`input_fn` must be callable, given: %r" % (input_fn,))
        if max_steps is not None and max_steps <= 0:
            raise ValueError("Must specify max_steps > 0, given: %r" % (max_steps,))
        self.input_fn, self.max_steps, self.hooks = input_fn, max_steps, _validate_hooks(hooks)


class EvalSpec:
    """What ``train_and_evaluate`` evaluates: ``steps`` batches of ``input_fn`` (None: all), no
    sooner than ``start_delay_secs`` and at most every ``throttle_secs``; after each
    evaluation, ``exporters`` (an ``Exporter`` or several, of distinct names) export the
    evaluated checkpoint."""

    def __init__(self, input_fn, steps=100, name=None, hooks=None, exporters=None,
                 start_delay_secs=120, throttle_secs=600):
        if not callable(input_fn):
            raise TypeError("`input_fn` must be callable, given: %r" % (input_fn,))
        if steps is not None and steps <= 0:
            raise ValueError("Must specify steps > 0, given: %r" % (steps,))
        if name is not None and not isinstance(name, str):
            raise TypeError("`name` must be string, given: %r" % (name,))
        if start_delay_secs < 0:
            raise ValueError("Must specify start_delay_secs >= 0, given: %r" % (start_delay_secs,))
        if throttle_secs < 0:
            raise ValueError("Must specify throttle_secs >= 0, given: %r" % (throttle_secs,))
        self.input_fn, self.steps, self.name = input_fn, steps, name
        self.hooks = _validate_hooks(hooks)
        self.exporters = _validate_exporters(exporters)
        self.start_delay_secs, self.throttle_secs = start_delay_secs, throttle_secs


def _validate_exporters(exporters):
    """``exporters`` (None, an Exporter, or an iterable of them) as a tuple, their names
    checked: strings, not empty, unique."""
    if not exporters:
        return ()
    if isinstance(exporters, Exporter):
        exporters = [exporters]
    try:
        exporters = list(exporters)
    except TypeError:
        exporters = [exporters]
    names = []
    for exporter in exporters:
        if not isinstance(exporter, Exporter):
            raise TypeError("`exporters` must be an Exporter, an iterable of Exporter, or "
                            "`None`, found %s." % (exporters,))
        if not exporter.name:
            raise ValueError("An Exporter cannot have a name that is `None` or empty. All "
                             f"exporter names: {[e.name for e in exporters]}")
        if not isinstance(exporter.name, str):
            raise ValueError(f"An Exporter must have a string name. Given: {type(exporter.name)}")
        if exporter.name in names:
            raise ValueError("`exporters` must have unique names. Such a name cannot be `None`. "
                             f"All exporter names: {[e.name for e in exporters]}")
        names.append(exporter.name)
    return tuple(exporters)


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Train and evaluate ``estimator`` locally, or run this task's part of the cluster in
    ``TF_CONFIG`` (see the module docstring). Locally, returns ``(eval metrics, export
    results)``: the last evaluation's metrics and what each exporter returned after it."""
    if not isinstance(estimator, Estimator):
        raise TypeError("`estimator` must have type `tf.estimator.Estimator`. Got: %r"
                        % (estimator,))
    if not isinstance(train_spec, TrainSpec):
        raise TypeError("`train_spec` must have type `tf.estimator.TrainSpec`. Got: %r"
                        % (train_spec,))
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError("`eval_spec` must have type `tf.estimator.EvalSpec`. Got: %r"
                        % (eval_spec,))
    config = estimator.config
    if config._distribute_coordinator_mode and config.cluster_spec:
        _logger.info("Running `train_and_evaluate` with Distribute Coordinator.")
        _run_distribute_coordinator(estimator, train_spec, eval_spec)
        return None
    if config.task_type == TaskType.EVALUATOR and config.task_id > 0:
        raise ValueError("For distributed training, there can only be one `evaluator` task "
                         "(with task id 0). Given task id %d" % config.task_id)
    executor = _TrainingExecutor(estimator, train_spec, eval_spec)
    if not config.cluster_spec and config.task_type != TaskType.EVALUATOR:
        _logger.info("Running training and evaluation locally (non-distributed).")
        return executor.run_local()
    if not config.task_type:
        raise ValueError("`estimator.config` must have task_type set. This usually means "
                         "TF_CONFIG environment is not set correctly.")
    run = getattr(executor, "run_" + config.task_type, None)
    if run is None or config.task_type == "local":
        raise ValueError("Task type %s is not supported. Supported task types are %s (leave "
                         "TF_CONFIG's cluster and task unset to train and evaluate locally)."
                         % (config.task_type, [*_TRAINER_JOBS, TaskType.PS, TaskType.EVALUATOR]))
    return run()


def _run_distribute_coordinator(estimator, train_spec, eval_spec):
    """This task's part of ``train_and_evaluate`` under TF1's distribute coordinator in
    INDEPENDENT_WORKER mode (``estimator_training.train_and_evaluate``): the task is
    ``TF_CONFIG``'s, the cluster the RunConfig's."""
    config = estimator.config
    task = _tf_config_task()
    task_type, task_id = task.get("type"), _task_index(task.get("index", 0))
    cluster_spec = config.cluster_spec
    if task_type != TaskType.EVALUATOR and task_type not in cluster_spec.jobs:
        raise ValueError("TF_CONFIG's task type %r is not a job of its cluster %s: set "
                         "TF_CONFIG's \"task\" to this process's place in the cluster."
                         % (task_type, cluster_spec.as_dict()))
    strategy = config.train_distribute
    if not strategy.extended.experimental_between_graph:
        raise NotImplementedError(
            "%s cannot train on the cluster of TF_CONFIG in zps (TF1's in-graph multi-worker "
            "replication is not supported): use tf.distribute.experimental."
            "ParameterServerStrategy() as train_distribute for a cluster, or train without a "
            "cluster in TF_CONFIG." % type(strategy).__name__)
    session_config = copy.deepcopy(config.session_config) or ConfigProto(
        allow_soft_placement=True)
    if task_type == TaskType.EVALUATOR:
        eval_strategy = copy.deepcopy(config.eval_distribute)
        if eval_strategy is not None:
            eval_strategy.configure(session_config)
        local = _coordinator_estimator(estimator, task_type, task_id, session_config,
                                       eval_distribute=eval_strategy)
        _TrainingExecutor(local, train_spec, eval_spec).run_evaluator()
        return
    # The training cluster (the evaluator is not part of it), a server for this task.
    training_cluster = ClusterSpec({job: tasks for job, tasks in cluster_spec.as_dict().items()
                                    if job != TaskType.EVALUATOR})
    _logger.info("Start the server of /job:%s/task:%d.", task_type, task_id)
    server = Server(training_cluster, job_name=task_type, task_index=task_id,
                    config=ConfigProto(gpu_options=session_config.gpu_options),
                    protocol=config.protocol)
    if task_type == TaskType.PS:
        server.join()
        return
    if task_type not in (TaskType.CHIEF, TaskType.WORKER):
        raise ValueError("Unexpected task_type: %r (the distribute coordinator runs chief, "
                         "worker, ps and evaluator tasks)" % (task_type,))
    strategy = copy.deepcopy(strategy)
    strategy.configure(session_config, training_cluster, task_type, task_id)
    local = _coordinator_estimator(estimator, task_type, task_id, session_config,
                                   train_distribute=strategy)
    local.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                hooks=list(train_spec.hooks))


def _coordinator_estimator(estimator, task_type, task_id, session_config, **strategies):
    """A copy of ``estimator`` whose config is that task's (and the given strategies)."""
    local = copy.copy(estimator)
    config = estimator.config._for_coordinator_task(task_type, task_id)
    config._session_config = session_config
    for name, strategy in strategies.items():
        setattr(config, "_" + name, strategy)
    local._config = config
    local._train_distribution = config.train_distribute
    local._eval_distribution = config.eval_distribute
    return local


class _TrainingExecutor:
    """Runs one task's part of train_and_evaluate (TF1's _TrainingExecutor)."""

    def __init__(self, estimator, train_spec, eval_spec):
        self._estimator, self._train_spec, self._eval_spec = estimator, train_spec, eval_spec

    # -- local --------------------------------------------------------------------------------
    def run_local(self):
        config = self._estimator.config
        _logger.info("Start train and evaluate loop. The evaluate will happen after every "
                     "checkpoint (at most every %s secs). Checkpoint frequency is determined "
                     "based on RunConfig arguments: save_checkpoints_steps %s or "
                     "save_checkpoints_secs %s.", self._eval_spec.throttle_secs,
                     config.save_checkpoints_steps, config.save_checkpoints_secs)
        listener = _NewCheckpointListenerForEvaluate(self._evaluator(),
                                                     self._eval_spec.throttle_secs)
        self._estimator.train(self._train_spec.input_fn, hooks=list(self._train_spec.hooks),
                              max_steps=self._train_spec.max_steps, saving_listeners=[listener])
        return listener.eval_result, listener.export_results

    # -- cluster ------------------------------------------------------------------------------
    def run_chief(self):
        self._start_distributed_training()

    run_master = run_chief
    run_worker = run_chief

    def run_ps(self):
        server = self._start_std_server(self._estimator.config)
        server.join()

    def run_evaluator(self):
        """Evaluate each new checkpoint until one reaches the training's max_steps."""
        if self._eval_spec.start_delay_secs:
            _logger.info("Waiting %f secs before starting eval.", self._eval_spec.start_delay_secs)
            time.sleep(self._eval_spec.start_delay_secs)
        evaluator = self._evaluator()
        max_steps = self._train_spec.max_steps
        while True:
            start = time.time()
            result, _ = evaluator.evaluate_and_export()
            if result is not None and max_steps and result[GraphKeys.GLOBAL_STEP] >= max_steps:
                _logger.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                             result[GraphKeys.GLOBAL_STEP], max_steps)
                return
            remaining = self._eval_spec.throttle_secs - (time.time() - start)
            if remaining > 0:
                time.sleep(remaining)

    def _evaluator(self):
        return _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)

    def _start_distributed_training(self):
        config = self._estimator.config
        self._start_std_server(config)
        delay = 0
        if config.task_type == TaskType.WORKER:
            max_delay = config.experimental_max_worker_delay_secs
            max_delay = _MAX_DELAY_SECS if max_delay is None else int(max_delay)
            delay = min(max_delay, (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
        if delay > 0:
            _logger.info("Waiting %d secs before starting training.", delay)
            time.sleep(delay)
        self._estimator.train(self._train_spec.input_fn, hooks=list(self._train_spec.hooks),
                              max_steps=self._train_spec.max_steps)

    @staticmethod
    def _start_std_server(config):
        if not config.cluster_spec or not config.task_type or config.task_id is None:
            raise RuntimeError("Could not start server; be sure to specify cluster_spec, "
                               "task_type, and task in RunConfig or set the TF_CONFIG "
                               "environment variable.")
        if not config.master:
            jobs = config.cluster_spec.jobs
            if (len(jobs) == 1 and config.cluster_spec.num_tasks(jobs[0]) == 1
                    and config.task_type in _TRAINER_JOBS):
                _logger.info("Skip starting the server as there is only one node in the cluster.")
                return None
            raise RuntimeError("Could not start server; be sure to specify master in RunConfig "
                               "or set the TF_CONFIG environment variable.")
        _logger.info("Start the server of /job:%s/task:%d.", config.task_type, config.task_id)
        session_config = ConfigProto(
            gpu_options=config.session_config.gpu_options if config.session_config else None)
        return Server(config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
                      config=session_config, protocol=config.protocol)


class _Evaluator:
    """Evaluates the latest checkpoint when it is new, then runs the exporters."""

    def __init__(self, estimator, eval_spec, max_training_steps):
        self._estimator, self._eval_spec = estimator, eval_spec
        self._max_training_steps = max_training_steps
        self._previous_ckpt_path = None

    def evaluate_and_export(self):
        """``(metrics, export results)`` of the latest checkpoint, or ``(None, [])`` when there
        is none or it was done."""
        path = self._estimator.latest_checkpoint()
        if not path:
            _logger.info("Estimator is not trained yet. Will start an evaluation when a "
                         "checkpoint is ready.")
            return None, []
        if path == self._previous_ckpt_path:
            _logger.info("No new checkpoint ready for evaluation. Skip the current evaluation "
                         "pass as evaluation results are expected to be same for the same "
                         "checkpoint.")
            return None, []
        result = self._estimator.evaluate(self._eval_spec.input_fn, steps=self._eval_spec.steps,
                                          hooks=list(self._eval_spec.hooks), checkpoint_path=path,
                                          name=self._eval_spec.name)
        is_the_final_export = bool(self._max_training_steps) and (
            result[GraphKeys.GLOBAL_STEP] >= self._max_training_steps)
        export_results = self._export(result, path, is_the_final_export)
        self._previous_ckpt_path = path
        return result, export_results

    def _export(self, eval_result, checkpoint_path, is_the_final_export):
        export_dir_base = os.path.join(self._estimator.model_dir, "export")
        return [exporter.export(estimator=self._estimator,
                                export_path=os.path.join(export_dir_base, exporter.name),
                                checkpoint_path=checkpoint_path, eval_result=eval_result,
                                is_the_final_export=is_the_final_export)
                for exporter in self._eval_spec.exporters]


class _NewCheckpointListenerForEvaluate(CheckpointSaverListener):
    """Evaluates after a checkpoint is saved (not the one of step 0, at most every
    ``throttle_secs``) and after the last one."""

    def __init__(self, evaluator, throttle_secs):
        self._evaluator, self._throttle_secs = evaluator, throttle_secs
        self.eval_result, self.export_results = None, []

    def begin(self):
        self._timer = SecondOrStepTimer(every_secs=self._throttle_secs)
        self._is_first_run = True

    def after_save(self, session, global_step_value):
        if self._is_first_run:      # the initial checkpoint: nothing is trained yet
            self._is_first_run = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            _logger.info("Skip the current checkpoint eval due to throttle secs (%s secs).",
                         self._throttle_secs)

    def end(self, session, global_step_value):
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value):
        self._timer.update_last_triggered_step(global_step_value)
        self.eval_result, self.export_results = self._evaluator.evaluate_and_export()
        if self.eval_result is None:
            raise RuntimeError("There was no new checkpoint after the training at global step "
                               "%s: the evaluation found nothing new to evaluate." % global_step_value)
