"""``Estimator``: trains, evaluates and predicts with a ``model_fn``, checkpointing in ``model_dir``.

>>> import tempfile, numpy as np, zps as tf
>>> def model_fn(features, labels, mode):
...     w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
...     pred = tf.matmul(features["x"], w)
...     loss = tf.reduce_mean(tf.square(pred - labels)) if labels is not None else None
...     train_op = (tf.train.GradientDescentOptimizer(0.1).minimize(
...         loss, tf.train.get_global_step()) if mode == tf.estimator.ModeKeys.TRAIN else None)
...     return tf.estimator.EstimatorSpec(mode, {"y": pred}, loss, train_op)
>>> def input_fn():
...     x = np.ones([4, 1], np.float32)
...     return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).batch(2).repeat()
>>> est = tf.estimator.Estimator(model_fn, tempfile.mkdtemp())
>>> est = est.train(input_fn, steps=3)
>>> int(est.get_variable_value("global_step"))
3
>>> sorted(est.evaluate(input_fn, steps=2))
['global_step', 'loss']

As TF1's Estimator, each call builds a new graph: ``input_fn`` (a Dataset, or ``(features,
labels)``), then ``model_fn`` (any subset of ``features, labels, mode, params, config``), and runs
it in a MonitoredSession: training restores the latest checkpoint of ``model_dir`` and saves
there; evaluation and prediction restore it. ``export_saved_model`` writes the PREDICT graph
of a ``serving_input_receiver_fn`` with the latest checkpoint as a SavedModel.

With ``RunConfig(train_distribute=strategy)`` training runs as TF 1.15's does under a
``tf.distribute`` strategy: ``input_fn`` (which may take an ``input_context``) must return a
Dataset, read through ``strategy.make_input_fn_iterator`` (so its batches are per replica:
each replica reads its own), ``model_fn`` runs once per replica (``call_for_each_replica``),
the optimizer scales MEAN losses by ``1/num_replicas`` before the gradients are summed, the
reported loss is the replicas' mean (their sum when the loss was not scaled), and the replicas'
train ops, hooks (the first replica's) and scaffolds are combined. ``eval_distribute``
distributes ``evaluate`` likewise (metrics aggregate over the replicas; the loss is the mean of
the replicas' batch losses; a value derived per replica from a metric is the first replica's).
``predict`` and the exports run on one device, as in TF 1.15.
"""

import contextlib
import copy
import logging
import os
import tempfile
import time

import numpy as np

from zps import gfile
from zps.client.session import Session
from zps.data.dataset import Dataset
from zps.data.iterator import make_initializable_iterator
from zps.estimator import model_fn as model_fn_lib
from zps.estimator.export import export as export_lib
from zps.estimator.model_fn import EstimatorSpec, ModeKeys
from zps.estimator.run_config import RunConfig, TaskType
from zps.estimator.util import fn_args
from zps.framework import errors
from zps.framework.dtypes import int64
from zps.framework.graph import Graph, GraphKeys, get_default_graph
from zps.ops import (
    array_ops,
    control_flow_ops,
    metrics_impl,
    random_ops,
    state_ops,
    summary_ops,
    variables,
)
from zps.saved_model import builder as saved_model_builder
from zps.saved_model import tag_constants
from zps.summary import FileWriterCache
from zps.train import basic_session_run_hooks as hooks_lib
from zps.train import checkpoint_management, training_util, warm_starting_util
from zps.train.device_setter import STANDARD_PS_OPS, replica_device_setter
from zps.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
)
from zps.train.saver import Saver
from zps.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["Estimator", "WarmStartSettings"]

_logger = logging.getLogger("zps.estimator")

_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}
_EVAL_STEP_KEY = "eval_step"


class WarmStartSettings:
    """Where ``Estimator(warm_start_from=...)`` takes initial values from: the variables matching
    ``vars_to_warm_start`` (a regex over the trainable variables, or a list of regexes over all
    global variables) start from ``ckpt_to_initialize_from`` (a checkpoint or a directory),
    renamed by ``var_name_to_prev_var_name``, their rows remapped by ``var_name_to_vocab_info``
    (``tf.train.VocabInfo``s)."""

    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*",
                 var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        self.ckpt_to_initialize_from = ckpt_to_initialize_from
        self.vars_to_warm_start = vars_to_warm_start
        self.var_name_to_vocab_info = dict(var_name_to_vocab_info or {})
        self.var_name_to_prev_var_name = dict(var_name_to_prev_var_name or {})

    def warm_start(self, graph):
        """Make the initializers of the selected variables of ``graph`` read the checkpoint
        (``tf.train.warm_start``)."""
        with graph.as_default():
            warm_starting_util.warm_start(
                self.ckpt_to_initialize_from, self.vars_to_warm_start,
                var_name_to_vocab_info=self.var_name_to_vocab_info,
                var_name_to_prev_var_name=self.var_name_to_prev_var_name)


class Estimator:
    """TF1's ``tf.estimator.Estimator``: a model given by ``model_fn``, trained, evaluated and
    served from the checkpoints of ``model_dir`` (a temporary directory when none is given).
    See the module docstring for an example."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        if not callable(model_fn):
            raise TypeError("model_fn must be callable, given: %r" % (model_fn,))
        config = RunConfig() if config is None else config
        if not isinstance(config, RunConfig):
            raise ValueError("config must be an instance of `RunConfig`, but provided %r."
                             % (config,))
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ValueError("`model_dir` are set both in constructor and `RunConfig`, but with "
                             "different values. In constructor: '%s', in `RunConfig`: '%s'."
                             % (model_dir, config.model_dir))
        model_dir = model_dir or config.model_dir
        if not model_dir:
            model_dir = tempfile.mkdtemp()
            _logger.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        self._model_dir = model_dir
        _verify_modelfn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        if isinstance(warm_start_from, str):
            warm_start_from = WarmStartSettings(warm_start_from)
        if warm_start_from is not None and not isinstance(warm_start_from, WarmStartSettings):
            raise ValueError("warm_start_from must be a string or a WarmStartSettings, instead "
                             "got %r" % (warm_start_from,))
        self._warm_start_settings = warm_start_from
        self._device_fn = self._config.device_fn or _replica_device_setter(self._config)
        self._train_distribution = self._config.train_distribute
        self._eval_distribution = self._config.eval_distribute
        if self._config.device_fn is not None and self._train_distribution is not None:
            _logger.warning("RunConfig.device_fn is not used to train with train_distribute: "
                            "the strategy places the ops (as in TF1).")

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: copy.deepcopy(self._config))
    params = property(lambda self: copy.deepcopy(self._params))

    @property
    def model_fn(self):
        """TF1's: the ``model_fn`` as ``fn(features, labels, mode, config)`` returning its
        EstimatorSpec (called with this Estimator's params)."""
        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)
        return public_model_fn

    # -- checkpoints ------------------------------------------------------------------------------
    def latest_checkpoint(self):
        """The path of the latest checkpoint of ``model_dir``, or None."""
        return checkpoint_management.latest_checkpoint(self._model_dir)

    def get_variable_names(self):
        """The names of the variables of the latest checkpoint."""
        self._check_checkpoint_available()
        return [name for name, _ in checkpoint_management.list_variables(self._model_dir)]

    def get_variable_value(self, name):
        """The value (a numpy array) of variable ``name`` in the latest checkpoint."""
        self._check_checkpoint_available()
        return checkpoint_management.load_variable(self._model_dir, name)

    def eval_dir(self, name=None):
        """The directory evaluation summaries are written to."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # -- export -----------------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                           as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Export the serving graph and the latest checkpoint (or ``checkpoint_path``) as a
        SavedModel in a new ``export_dir_base/<timestamp>``; returns that path (bytes, as TF1).

        The graph is ``serving_input_receiver_fn``'s (it returns a
        ``tf.estimator.export.ServingInputReceiver``) under ``model_fn`` in PREDICT mode, tagged
        ``serve``; each entry of the spec's ``export_outputs`` (default: a ``PredictOutput`` of
        the predictions) is a signature, for the receiver tensors and for each alternative
        receiver (``"<alternative>:<key>"``). ``assets_extra`` maps paths under
        ``assets.extra/`` to the files copied there.
        """
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError(
                "zps exports the PREDICT graph only (experimental_mode=%r): export the serving "
                "graph with experimental_mode=tf.estimator.ModeKeys.PREDICT." % (experimental_mode,))
        return self._export_saved_model(export_dir_base, serving_input_receiver_fn, assets_extra,
                                        as_text, checkpoint_path, strip_default_attrs=True)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                          as_text=False, checkpoint_path=None, strip_default_attrs=False):
        """TF1's older name of ``export_saved_model`` (the PREDICT graph)."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return self._export_saved_model(export_dir_base, serving_input_receiver_fn, assets_extra,
                                        as_text, checkpoint_path, strip_default_attrs)

    def _export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra,
                            as_text, checkpoint_path, strip_default_attrs):
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            if not self._warm_start_settings:
                raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
            checkpoint_path = self._warm_start_settings.ckpt_to_initialize_from
            if gfile.IsDirectory(checkpoint_path):
                checkpoint_path = checkpoint_management.latest_checkpoint(checkpoint_path)
        export_dir = export_lib.get_timestamped_export_dir(export_dir_base)
        temp_export_dir = export_lib.get_temp_export_dir(export_dir)
        try:
            builder = saved_model_builder.SavedModelBuilder(os.fsdecode(temp_export_dir))
            self._add_serving_meta_graph(builder, serving_input_receiver_fn, checkpoint_path,
                                         strip_default_attrs)
            builder.save(as_text)
            for dest_relative, source in (assets_extra or {}).items():
                dest = os.path.join(temp_export_dir, b"assets.extra", os.fsencode(dest_relative))
                gfile.MakeDirs(os.path.dirname(dest))
                gfile.Copy(source, dest)
        except BaseException:
            if gfile.Exists(temp_export_dir):     # no half-written export left behind
                gfile.DeleteRecursively(temp_export_dir)
            raise
        gfile.Rename(temp_export_dir, export_dir)
        return export_dir

    def _add_serving_meta_graph(self, builder, serving_input_receiver_fn, checkpoint_path,
                                strip_default_attrs):
        """Build the PREDICT graph from the receiver, restore ``checkpoint_path`` into a session
        and add that graph with its variables and signatures to ``builder``."""
        with Graph().as_default() as g:
            self._new_graph_setup(g)
            receiver = serving_input_receiver_fn()
            if not isinstance(receiver, (export_lib.ServingInputReceiver,
                                         export_lib.TensorServingInputReceiver)):
                raise TypeError("serving_input_receiver_fn must return a "
                                "tf.estimator.export.ServingInputReceiver (or a "
                                "TensorServingInputReceiver), returned %r." % (receiver,))
            spec = self._call_model_fn(receiver.features, None, ModeKeys.PREDICT)
            export_outputs = export_lib.get_export_outputs(spec.export_outputs, spec.predictions)
            signature_def_map = export_lib.build_all_signature_defs(
                receiver.receiver_tensors, export_outputs, receiver.receiver_tensors_alternatives)
            with Session(config=self._config.session_config) as sess:
                local_init_op = spec.scaffold.local_init_op
                if local_init_op is None:
                    local_init_op = Scaffold.default_local_init_op()
                # This saver restores now and is the SavedModel's, so a Scaffold's custom
                # saver serves the export too.
                graph_saver = spec.scaffold.saver or Saver(sharded=True)
                try:
                    graph_saver.restore(sess, checkpoint_path)
                except errors.NotFoundError as e:
                    raise ValueError(
                        "Could not load all requested variables from checkpoint. Please make "
                        "sure your model_fn does not expect variables that were not saved in "
                        f"the checkpoint.\n\nEncountered error with mode `{ModeKeys.PREDICT}` "
                        f"while restoring checkpoint from: `{checkpoint_path}`. Full "
                        f"Traceback:\n\n{e}") from e
                builder.add_meta_graph_and_variables(
                    sess, [tag_constants.SERVING], signature_def_map=signature_def_map,
                    assets_collection=g.get_collection(GraphKeys.ASSET_FILEPATHS),
                    main_op=local_init_op, saver=graph_saver,
                    strip_default_attrs=strip_default_attrs)

    def _check_checkpoint_available(self):
        if not self.latest_checkpoint():
            raise ValueError("Could not find trained model in model_dir: %s." % self._model_dir)

    # -- train ------------------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Train for ``steps`` more steps, or until the global step is ``max_steps``, or until
        ``input_fn``'s data ends; returns self."""
        if self._config.task_type in (TaskType.EVALUATOR, TaskType.PS):
            raise ValueError("Train has been called wrong configuration. Please use "
                             "tf.estimator.train_and_evaluate which calls proper API according "
                             "to given configuration. Current configuration: %r." % self._config)
        hooks = _check_hooks_type(hooks)
        saving_listeners = _check_listeners_type(saving_listeners)
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError("Must specify steps > 0, given: %r" % (steps,))
        if max_steps is not None and max_steps <= 0:
            raise ValueError("Must specify max_steps > 0, given: %r" % (max_steps,))
        if max_steps is not None and max_steps <= self._checkpointed_global_step():
            _logger.info("Skipping training since max_steps has already saved.")
            return self
        if steps is not None or max_steps is not None:
            hooks.append(hooks_lib.StopAtStepHook(num_steps=steps, last_step=max_steps))
        loss = self._train_model(input_fn, hooks, saving_listeners)
        _logger.info("Loss for final step: %s.", loss)
        return self

    def _checkpointed_global_step(self):
        path = self.latest_checkpoint()
        if not path:
            return 0
        try:
            return int(checkpoint_management.load_variable(path, GraphKeys.GLOBAL_STEP))
        except (ValueError, KeyError, OSError):
            return 0

    def _train_model(self, input_fn, hooks, saving_listeners):
        if self._train_distribution is not None:
            return self._train_model_distributed(input_fn, hooks, saving_listeners)
        with Graph().as_default() as g, g.device(self._device_fn):
            self._new_graph_setup(g)
            features, labels, input_hooks = self._input(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
            if self._warm_start_settings:
                self._warm_start_settings.warm_start(g)
            return self._train_with_spec(g, spec, input_hooks + hooks, saving_listeners)

    def _train_model_distributed(self, input_fn, hooks, saving_listeners):
        """TF 1.15's ``_train_model_distributed``: the graph is built in the strategy's scope,
        ``model_fn`` called once per replica, and trained as ``_train_with_spec`` trains."""
        _check_no_coordinator(self._config, "train")
        strategy = self._train_distribution
        strategy.configure(self._config.session_config)
        with Graph().as_default() as g, strategy.scope(), _scale_loss_for_estimator(strategy):
            random_ops.set_random_seed(self._config.tf_random_seed)
            iterator, input_hooks = self._distributed_input(input_fn, ModeKeys.TRAIN, strategy)
            self._create_global_step(g)
            features, labels = _parse_iterator_result(iterator.get_next())
            grouped = self._call_model_fn_per_replica(strategy, features, labels, ModeKeys.TRAIN)
            loss = strategy.reduce(_loss_reduce_op_for_reporting(g), grouped.loss, axis=None)
            spec = EstimatorSpec(
                ModeKeys.TRAIN, loss=loss, train_op=strategy.group(grouped.train_op),
                training_hooks=_first_replica_hooks(strategy, grouped.training_hooks),
                training_chief_hooks=_first_replica_hooks(strategy,
                                                          grouped.training_chief_hooks),
                scaffold=_combine_distributed_scaffold(grouped.scaffold, strategy))
            if self._warm_start_settings:
                self._warm_start_settings.warm_start(g)
            return self._train_with_spec(g, spec, input_hooks + hooks, saving_listeners)

    def _train_with_spec(self, g, spec, worker_hooks, saving_listeners):
        global_step = training_util.get_global_step(g)
        if not any(s.op.name == "loss" for s in g.get_collection(GraphKeys.SUMMARIES)):
            summary_ops.scalar("loss", spec.loss)
        g.add_to_collection(GraphKeys.LOSSES, spec.loss)
        worker_hooks = list(worker_hooks) + [hooks_lib.NanTensorHook(spec.loss)]
        if self._config.log_step_count_steps is not None:
            worker_hooks.append(hooks_lib.LoggingTensorHook(
                {"loss": spec.loss, "step": global_step},
                every_n_iter=self._config.log_step_count_steps))
        worker_hooks.extend(spec.training_hooks)
        if not (spec.scaffold.saver or g.get_collection(GraphKeys.SAVERS)):
            g.add_to_collection(GraphKeys.SAVERS, Saver(
                sharded=True, max_to_keep=self._config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
                defer_build=True, save_relative_paths=True))
        chief_hooks = []
        saver_hooks = [h for h in worker_hooks + list(spec.training_chief_hooks)
                       if isinstance(h, hooks_lib.CheckpointSaverHook)]
        if (self._config.save_checkpoints_secs or self._config.save_checkpoints_steps) \
                and not saver_hooks:
            chief_hooks = [hooks_lib.CheckpointSaverHook(
                self._model_dir, save_secs=self._config.save_checkpoints_secs,
                save_steps=self._config.save_checkpoints_steps, scaffold=spec.scaffold)]
            saver_hooks = chief_hooks
        if saving_listeners:
            if not saver_hooks:
                raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. "
                                 "Please set one of the RunConfig.save_checkpoints_steps or "
                                 "RunConfig.save_checkpoints_secs.")
            saver_hooks[0]._listeners.extend(saving_listeners)
        loss, any_step_done = None, False
        with MonitoredTrainingSession(
                master=self._config.master, is_chief=self._config.is_chief,
                checkpoint_dir=self._model_dir, scaffold=spec.scaffold, hooks=worker_hooks,
                chief_only_hooks=chief_hooks + list(spec.training_chief_hooks),
                save_checkpoint_secs=0, save_summaries_steps=self._config.save_summary_steps,
                config=self._config.session_config,
                max_wait_secs=self._config.session_creation_timeout_secs,
                log_step_count_steps=self._config.log_step_count_steps) as sess:
            while not sess.should_stop():
                _, loss = sess.run([spec.train_op, spec.loss])
                any_step_done = True
        if not any_step_done:
            _logger.warning("Training with estimator made no steps. Perhaps input is empty or "
                            "misspecified.")
        return loss

    # -- evaluate ---------------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Run the ``eval_metric_ops`` over ``input_fn``'s data (until it ends, or ``steps``
        batches) with the latest checkpoint (or ``checkpoint_path``); returns a dict of the
        metrics plus ``loss`` (the mean of the batch losses) and ``global_step``."""
        hooks = _check_hooks_type(hooks)
        hooks.extend(self._convert_eval_steps_to_hooks(steps))
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                _logger.info("Could not find trained model in model_dir: %s, running "
                             "initialization to evaluate.", self._model_dir)
        strategy = self._eval_distribution
        if strategy is not None:
            _check_no_coordinator(self._config, "evaluate")
        with Graph().as_default(), (strategy.scope() if strategy is not None
                                    else contextlib.nullcontext()):
            scaffold, update_op, eval_dict, all_hooks = self._evaluate_build_graph(
                input_fn, hooks, checkpoint_path)
            return self._evaluate_run(checkpoint_path, scaffold, update_op, eval_dict,
                                      all_hooks, self.eval_dir(name))

    @staticmethod
    def _convert_eval_steps_to_hooks(steps):
        if steps is None:
            return []
        if steps <= 0:
            raise ValueError("Must specify steps > 0, given: %r" % (steps,))
        return [_StopAfterNEvalsHook(steps)]

    def _evaluate_build_graph(self, input_fn, hooks, checkpoint_path):
        """The EVAL graph in the default graph: ``(scaffold, update op, {name: final value
        tensor}, all hooks)`` (the update op counts the evaluated batches)."""
        g = get_default_graph()
        self._new_graph_setup(g)
        strategy = self._eval_distribution
        if strategy is None:
            features, labels, input_hooks = self._input(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL)
            evaluation_hooks = list(spec.evaluation_hooks)
        else:
            iterator, input_hooks = self._distributed_input(input_fn, ModeKeys.EVAL, strategy)
            features, labels = _parse_iterator_result(iterator.get_next())
            spec = self._call_model_fn_per_replica(strategy, features, labels, ModeKeys.EVAL)
            evaluation_hooks = _first_replica_hooks(strategy, spec.evaluation_hooks)
        if not checkpoint_path and self._warm_start_settings:
            self._warm_start_settings.warm_start(g)
        if model_fn_lib.LOSS_METRIC_KEY in spec.eval_metric_ops:
            raise ValueError("Metric with name \"%s\" is not allowed, because Estimator "
                             "already defines a default metric with the same name."
                             % model_fn_lib.LOSS_METRIC_KEY)
        metric_ops = dict(spec.eval_metric_ops)
        if strategy is None:
            metric_ops[model_fn_lib.LOSS_METRIC_KEY] = metrics_impl.mean(spec.loss)
        else:
            # Each replica's batch losses, aggregated over the replicas by the metric's
            # ON_READ variables: the mean of all the replicas' batch losses.
            metric_ops[model_fn_lib.LOSS_METRIC_KEY] = strategy.extended.call_for_each_replica(
                metrics_impl.mean, args=(spec.loss,))
        eval_dict = {key: value for key, (value, _) in metric_ops.items()}
        if strategy is not None:
            # A metric's value is computed from its variables' sums across the replicas (in a
            # merge_call); one made from it in replica context (the canned heads'
            # accuracy_baseline = max(mean, 1 - mean)) is the same in every replica: the first
            # replica's is fetched. (TF 1.15 fails to fetch such a PerReplica: tensorflow#37827.)
            eval_dict = {key: strategy.experimental_local_results(value)[0]
                         for key, value in eval_dict.items()}
        eval_dict[GraphKeys.GLOBAL_STEP] = training_util.get_global_step(g)
        eval_step = variables.Variable(0, dtype=int64, trainable=False, name=_EVAL_STEP_KEY,
                                       collections=[GraphKeys.LOCAL_VARIABLES])
        update = control_flow_ops.group(*[
            strategy.group(op) if strategy is not None else op
            for _, (_, op) in sorted(metric_ops.items())])
        with g.control_dependencies([update]):
            increment = state_ops.assign_add(eval_step, 1)
        # Read after the increment: under a strategy eval_step is mirrored and its update an op.
        with g.control_dependencies([increment]):
            evals_completed = eval_step.read_value()
        for hook in hooks:
            if isinstance(hook, _StopAfterNEvalsHook):
                hook.evals_completed = evals_completed
        scaffold = spec.scaffold
        if strategy is not None:
            scaffold = _combine_distributed_scaffold(scaffold, strategy)
        if scaffold.local_init_op is not None:
            # The metrics' and eval_step's local variables need initializing too.
            scaffold = Scaffold(local_init_op=control_flow_ops.group(
                scaffold.local_init_op, Scaffold.default_local_init_op()),
                copy_from_scaffold=scaffold)
        return scaffold, evals_completed, eval_dict, input_hooks + hooks + evaluation_hooks

    def _evaluate_run(self, checkpoint_path, scaffold, update_op, eval_dict, all_hooks,
                      output_dir):
        """Run ``update_op`` until the hooks or the data stop it; write the final values of
        ``eval_dict`` to ``output_dir``'s event file and return them."""
        final_hook = hooks_lib.FinalOpsHook(eval_dict)
        _logger.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
        with self._session(scaffold, checkpoint_path, list(all_hooks) + [final_hook],
                           self._config.evaluation_master) as sess:
            while not sess.should_stop():
                sess.run(update_op)
        results = final_hook.final_ops_values
        _logger.info("Saving dict for global step %s: %s", results[GraphKeys.GLOBAL_STEP],
                     ", ".join("%s = %s" % kv for kv in sorted(results.items())))
        _write_dict_to_summary(output_dir, results, results[GraphKeys.GLOBAL_STEP])
        return results

    # -- predict ----------------------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yield the predictions for ``input_fn``'s features (labels are ignored) with the
        latest checkpoint (or ``checkpoint_path``): one dict (or value) per example, or per
        batch with ``yield_single_examples=False``."""
        hooks = _check_hooks_type(hooks)
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                _logger.info("Could not find trained model in model_dir: %s, running "
                             "initialization to predict.", self._model_dir)
        with Graph().as_default() as g:
            self._new_graph_setup(g)
            features, _, input_hooks = self._input(input_fn, ModeKeys.PREDICT)
            if not input_hooks and not g.get_collection(GraphKeys.QUEUE_RUNNERS):
                _logger.warning("Input graph does not use tf.data.Dataset or contain a "
                                "QueueRunner. That means predict yields forever. This is "
                                "probably a mistake.")
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT)
            if not checkpoint_path and self._warm_start_settings:
                self._warm_start_settings.warm_start(g)
            predictions = _extract_keys(spec.predictions, predict_keys)
            all_hooks = input_hooks + hooks + list(spec.prediction_hooks)
            with self._session(spec.scaffold, checkpoint_path, all_hooks,
                               self._config.master) as sess:
                while not sess.should_stop():
                    values = sess.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}

    # -- shared -----------------------------------------------------------------------------------
    def _new_graph_setup(self, g):
        random_ops.set_random_seed(self._config.tf_random_seed)
        self._create_global_step(g)

    @staticmethod
    def _create_global_step(g):
        step = training_util.create_global_step(g)
        training_util.assert_global_step(step)
        # Made here (in cross-replica context under a strategy), before any replica reads it.
        hooks_lib._get_or_create_global_step_read(g)

    def _session(self, scaffold, checkpoint_path, hooks, master):
        return MonitoredSession(session_creator=ChiefSessionCreator(
            scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
            config=self._config.session_config), hooks=hooks)

    def _call_fn_kwargs(self, fn, mode, config=None):
        args = fn_args(fn)
        kwargs = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config if config is None else config
        return args, kwargs

    def _input(self, input_fn, mode):
        """``(features, labels, hooks)`` from ``input_fn``: a Dataset is read through an
        initializable iterator (initialized by a hook), a tuple is ``(features, labels)``."""
        result = self._call_input_fn(input_fn, mode)
        hooks = []
        if isinstance(result, Dataset):
            iterator = make_initializable_iterator(result)
            hooks.append(_DatasetInitializerHook(iterator))
            result = iterator.get_next()
        if isinstance(result, (list, tuple)):
            if len(result) != 2:
                raise ValueError("input_fn should return (features, labels) as a len 2 tuple, "
                                 "got a sequence of %d elements." % len(result))
            return result[0], result[1], hooks
        return result, None, hooks

    def _call_input_fn(self, input_fn, mode, input_context=None):
        """``input_fn``'s result; it gets ``mode``, ``params``, ``config`` and (under a
        strategy) ``input_context`` when it takes them."""
        if not callable(input_fn):
            raise TypeError("input_fn must be callable, given: %r" % (input_fn,))
        args, kwargs = self._call_fn_kwargs(input_fn, mode)
        if input_context is not None and "input_context" in args:
            kwargs["input_context"] = input_context
        return input_fn(**kwargs)

    def _distributed_input(self, input_fn, mode, strategy):
        """``(iterator, hooks)``: ``strategy.make_input_fn_iterator`` over ``input_fn``'s
        Dataset (initialized by a hook when the session is created)."""
        def dataset_fn(input_context):
            result = self._call_input_fn(input_fn, mode, input_context)
            if not (isinstance(result, Dataset) or callable(result)):
                raise ValueError(
                    "With train_distribute or eval_distribute, input_fn must return a "
                    "tf.data.Dataset (each replica reads its own batches of it), returned %r"
                    % (result,))
            return result
        iterator = strategy.make_input_fn_iterator(dataset_fn)
        return iterator, [_DatasetInitializerHook(iterator)]

    def _call_model_fn_per_replica(self, strategy, features, labels, mode):
        """``model_fn`` called once per replica: an EstimatorSpec of the regrouped fields
        (PerReplica values where the replicas differ)."""
        config = self.config

        def replica_fn(features, labels):
            return tuple(self._call_model_fn(features, labels, mode, config))
        # A plain tuple through call_for_each_replica: EstimatorSpec would validate the
        # per-replica values; _make (as TF's regroup) does not.
        return EstimatorSpec._make(strategy.extended.call_for_each_replica(
            replica_fn, args=(features, labels)))

    def _call_model_fn(self, features, labels, mode, config=None):
        args, kwargs = self._call_fn_kwargs(self._model_fn, mode, config)
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec, returned %r." % (spec,))
        return spec


@contextlib.contextmanager
def _scale_loss_for_estimator(strategy):
    """While training under ``strategy``, optimizers scale MEAN losses by 1/num_replicas
    (TF1's ``_scale_loss_for_estimator_enabled``; tf.distribute.get_loss_reduction)."""
    strategy._scale_loss_for_estimator = True
    try:
        yield
    finally:
        strategy._scale_loss_for_estimator = False


def _loss_reduce_op_for_reporting(graph):
    """How the replicas' losses combine into the reported one (TF1's
    ``_get_loss_reduce_op_for_reporting``): as the optimizer scaled them, else summed."""
    from zps.distribute import ReduceOp, get_loss_reduction
    if getattr(graph, "_is_loss_scaled_by_optimizer", False):
        return get_loss_reduction()
    return ReduceOp.SUM


def _check_no_coordinator(config, method):
    """TF1 trains or evaluates a cluster's task with a strategy only through the distribute
    coordinator of train_and_evaluate (Estimator.train/evaluate need its standalone client)."""
    if config._distribute_coordinator_mode:
        raise ValueError(
            "Only `STANDALONE_CLIENT` mode is supported when you call `Estimator.%s` with a "
            "distribution strategy and a cluster in TF_CONFIG, and zps has no standalone "
            "client: call tf.estimator.train_and_evaluate in every task of the cluster (it "
            "runs this task's part with the strategy), or unset TF_CONFIG's cluster to %s "
            "locally." % (method, method))


def _parse_iterator_result(result):
    """``(features, labels)`` of an input element (TF1's ``parse_iterator_result``)."""
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1]
    return result, None


def _first_replica_hooks(strategy, per_replica_hooks):
    """The hooks of the first replica (TF1 runs those)."""
    return [strategy.experimental_local_results(hook)[0] for hook in per_replica_hooks or ()]


def _combine_distributed_scaffold(grouped_scaffold, strategy):
    """One Scaffold from the replicas' (TF1's ``_combine_distributed_scaffold``): their init,
    local-init and summary ops grouped, their ready ops concatenated, the first replica's saver
    and init_fn, their init feed dicts merged. What no replica sets is left to the Scaffold's
    defaults, built in cross-replica context."""
    scaffolds = strategy.experimental_local_results(grouped_scaffold)

    def given(name):
        unique = {}
        for scaffold in scaffolds:
            value = getattr(scaffold, name)
            if value is not None:
                unique.setdefault(id(value), value)
        return list(unique.values())

    def grouped(name):
        ops = given(name)
        return strategy.group(ops) if ops else None

    def concatenated(name):
        tensors = given(name)
        if not tensors:
            return None
        return tensors[0] if len(tensors) == 1 else array_ops.concat(tensors, 0)

    feed_dicts = given("init_feed_dict")
    init_fns = [s._user_init_fn for s in scaffolds if s._user_init_fn is not None]
    savers = given("saver")
    return Scaffold(
        init_op=grouped("init_op"), ready_op=concatenated("ready_op"),
        ready_for_local_init_op=concatenated("ready_for_local_init_op"),
        local_init_op=grouped("local_init_op"), summary_op=grouped("summary_op"),
        saver=savers[0] if savers else None,
        init_feed_dict={k: v for d in feed_dicts for k, v in d.items()} or None,
        init_fn=init_fns[0] if init_fns else None)


def _verify_modelfn_args(model_fn, params):
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError("model_fn (%s) must include features argument." % (model_fn,))
    if params is not None and "params" not in args:
        raise ValueError("model_fn (%s) does not include params argument, but params (%s) is "
                         "passed to Estimator." % (model_fn, params))
    if params is None and "params" in args:
        _logger.warning("Estimator's model_fn (%s) includes params argument, but params are not "
                        "passed to Estimator.", model_fn)
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError("model_fn (%s) has following not expected args: %s (allowed: features, "
                         "labels, mode, params, config)" % (model_fn, unexpected))


def _replica_device_setter(config):
    """Variables on the ps tasks, the rest on this task (between-graph replication)."""
    if config.num_ps_replicas == 0:
        return None
    worker_device = ("/job:%s/task:%d" % (config.task_type, config.task_id)
                     if config.task_type else "/job:worker")
    return replica_device_setter(ps_tasks=config.num_ps_replicas, worker_device=worker_device,
                                 merge_devices=True, ps_ops=list(STANDARD_PS_OPS),
                                 cluster=config.cluster_spec)


def _check_hooks_type(hooks):
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError("Hooks must be a SessionRunHook, given: %r" % (hook,))
    return hooks


def _check_listeners_type(listeners):
    listeners = list(listeners or [])
    for listener in listeners:
        if not isinstance(listener, hooks_lib.CheckpointSaverListener):
            raise TypeError("saving_listeners must be a list of CheckpointSaverListener, given: %r"
                            % (listener,))
    return listeners


def _extract_keys(predictions, predict_keys):
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    chosen = {k: v for k, v in predictions.items() if k in predict_keys}
    if not chosen:
        raise ValueError("Expected to run at least one output from %s, provided %s."
                         % (sorted(predictions), predict_keys))
    return chosen


def _batch_length(values):
    length = None
    for key, value in values.items():
        length = length or np.shape(value)[0]
        if np.shape(value)[0] != length:
            raise ValueError("Batch length of predictions should be same. %s has different batch "
                             "length than others." % key)
    return length


def _write_dict_to_summary(output_dir, results, global_step):
    """Write the scalar results as a TensorBoard event file."""
    from zps.ops.summary_proto import Summary
    summary = Summary(value=[Summary.Value(tag=key, simple_value=float(np.asarray(value)))
                             for key, value in sorted(results.items())
                             if key != GraphKeys.GLOBAL_STEP and np.size(value) == 1
                             and np.issubdtype(np.asarray(value).dtype, np.number)])
    writer = FileWriterCache.get(output_dir)
    writer.add_summary(summary, int(global_step))
    writer.flush()


class _DatasetInitializerHook(SessionRunHook):
    """Initializes the input iterator (a strategy's too) when a session is created."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        session.run(self._initializer)


class _StopAfterNEvalsHook(SessionRunHook):
    """Stops evaluation after ``num_evals`` batches (``evals_completed`` is set by evaluate)."""

    def __init__(self, num_evals):
        self._num_evals = num_evals
        self.evals_completed = None

    def before_run(self, run_context):
        return SessionRunArgs(self.evals_completed)

    def after_run(self, run_context, run_values):
        if run_values.results >= self._num_evals:
            run_context.request_stop()
