"""``slim.learning``: TF1 slim's training loop, on zps's ``tf.train.Supervisor``.

``create_train_op`` builds the op that computes the gradients of a loss (after the batch-norm
updates of ``tf.GraphKeys.UPDATE_OPS``), optionally scales and clips them, applies them and
returns the loss; ``train`` runs it until ``number_of_steps`` global steps (or until the input
runs out), as the chief (initializing or restoring from ``logdir``, saving checkpoints and
summaries) or as another worker of a between-graph replicated job (``master``), synchronously
with a ``tf.train.SyncReplicasOptimizer`` passed as ``sync_optimizer``. It returns the last loss.

>>> import tempfile, zps as tf
>>> slim = tf.contrib.slim
>>> with tf.Graph().as_default():
...     w = tf.Variable(0.0)
...     loss = tf.square(w - 3.0)
...     train_op = slim.learning.create_train_op(loss, tf.train.GradientDescentOptimizer(0.1))
...     final = slim.learning.train(train_op, tempfile.mkdtemp(), number_of_steps=50,
...                                 log_every_n_steps=0)
>>> print("%.6f" % final)
0.000000
"""

import logging
import os
import sys
import time

from zps.client.config import RunMetadata, RunOptions
from zps.client.timeline import Timeline
from zps.framework import errors
from zps.framework.graph import GraphKeys, IndexedSlices, get_default_graph
from zps.ops import (
    array_ops,
    clip_ops,
    control_flow_ops,
    logging_ops,
    math_ops,
    resources,
    summary_ops,
    variables,
)
from zps.train import saver as saver_
from zps.train import supervisor, sync_replicas_optimizer, training_util
from zps.train.optimizer import Optimizer

__all__ = ["add_gradients_summaries", "clip_gradient_norms", "create_train_op",
           "multiply_gradients", "train", "train_step"]

_logger = logging.getLogger("zps.contrib.slim")
_USE_DEFAULT = 0
_USE_GLOBAL_STEP = 0


def _scaled(grad, fn):
    """``fn`` applied to a gradient's values (an IndexedSlices keeps its indices)."""
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(fn(grad.values), grad.indices, grad.dense_shape)
    return fn(grad)


def clip_gradient_norms(gradients_to_variables, max_norm):
    """Each gradient clipped to the L2 norm ``max_norm`` by itself (not a global norm)."""
    return [(None if g is None else _scaled(g, lambda t: clip_ops.clip_by_norm(t, max_norm)), v)
            for g, v in gradients_to_variables]


def multiply_gradients(grads_and_vars, gradient_multipliers):
    """The gradients of the variables in ``gradient_multipliers`` (a dict keyed by variable or
    by its op name) scaled by their multiplier; the others as they are."""
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    out = []
    for grad, var in grads_and_vars:
        key = var if var in gradient_multipliers else var.op.name
        if grad is not None and key in gradient_multipliers:
            if isinstance(grad, IndexedSlices) and grad.values is None:
                raise ValueError("Requested multiple of `None` gradient.")
            multiplier = gradient_multipliers[key]
            grad = _scaled(grad, lambda t, m=multiplier: t * math_ops.cast(m, t.dtype))
        out.append((grad, var))
    return out


def add_gradients_summaries(grads_and_vars):
    """A histogram of each gradient's values and a scalar of its norm; returns the summaries."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is None:
            _logger.info("Var %s has no gradient", var.op.name)
            continue
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        summaries.append(summary_ops.histogram(var.op.name + "_gradient", values))
        summaries.append(summary_ops.scalar(var.op.name + "_gradient_norm",
                                            clip_ops.global_norm([values])))
    return summaries


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None,
                    variables_to_train=None, clip_gradient_norm=0, summarize_gradients=False,
                    gate_gradients=Optimizer.GATE_OP, aggregation_method=None,
                    colocate_gradients_with_ops=False, gradient_multipliers=None,
                    check_numerics=True):
    """A tensor that, when run, applies one step of ``optimizer`` to ``total_loss`` and returns
    the loss (computed after ``update_ops``, by default the graph's UPDATE_OPS). Gradients are
    scaled by ``gradient_multipliers`` and clipped to ``clip_gradient_norm`` each when given;
    ``global_step`` (the graph's by default; None: none) is incremented."""
    graph = get_default_graph()
    if global_step is _USE_GLOBAL_STEP:
        global_step = training_util.get_or_create_global_step()
    collected = list(graph.get_collection(GraphKeys.UPDATE_OPS))
    update_ops = collected if update_ops is None else list(update_ops)
    if any(op not in update_ops for op in collected):
        _logger.warning("update_ops in create_train_op does not contain all the update_ops in "
                        "GraphKeys.UPDATE_OPS")
    if update_ops:
        with graph.control_dependencies(update_ops):
            barrier = control_flow_ops.no_op(name="update_barrier")
        total_loss = control_flow_ops.with_dependencies([barrier], total_loss)
    if variables_to_train is None:
        variables_to_train = variables.trainable_variables()
    if not variables_to_train:
        raise ValueError("create_train_op: there are no variables to train (the graph has no "
                         "trainable variables, or variables_to_train is empty)")
    grads = optimizer.compute_gradients(
        total_loss, variables_to_train, gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops)
    if gradient_multipliers:
        with graph.name_scope("multiply_grads"):
            grads = multiply_gradients(grads, gradient_multipliers)
    if clip_gradient_norm > 0:
        with graph.name_scope("clip_grads"):
            grads = clip_gradient_norms(grads, clip_gradient_norm)
    if summarize_gradients:
        with graph.name_scope("summarize_grads"):
            add_gradients_summaries(grads)
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with graph.name_scope("train_op"):
        if check_numerics:
            total_loss = logging_ops.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = control_flow_ops.with_dependencies([grad_updates], total_loss)
    train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
    if train_op not in train_ops:
        train_ops.append(train_op)
    return train_op


def train_step(sess, train_op, global_step, train_step_kwargs):
    """Run ``train_op`` once; returns ``(loss, should_stop)``. ``train_step_kwargs`` may hold
    the boolean tensors ``should_stop`` and ``should_log`` (and ``should_trace`` with ``logdir``:
    a Chrome trace of the step is written there)."""
    start = time.time()
    options = run_metadata = None
    if "should_trace" in train_step_kwargs:
        if "logdir" not in train_step_kwargs:
            raise ValueError("logdir must be present in train_step_kwargs when should_trace is "
                             "present")
        if sess.run(train_step_kwargs["should_trace"]):
            options = RunOptions(trace_level=RunOptions.FULL_TRACE)
            run_metadata = RunMetadata()
    total_loss, step = sess.run([train_op, global_step], options=options,
                                run_metadata=run_metadata)
    elapsed = time.time() - start
    if run_metadata is not None:
        path = os.path.join(train_step_kwargs["logdir"], "tf_trace-%d.json" % step)
        _logger.info("Writing trace to %s", path)
        with open(path, "w") as f:
            f.write(Timeline(run_metadata.step_stats).generate_chrome_trace_format())
    if "should_log" in train_step_kwargs and sess.run(train_step_kwargs["should_log"]):
        _logger.info("global step %d: loss = %.4f (%.3f sec/step)", step, total_loss, elapsed)
    should_stop = bool(sess.run(train_step_kwargs["should_stop"])) \
        if "should_stop" in train_step_kwargs else False
    return total_loss, should_stop


def _wait_for_step(sess, global_step, step):
    while training_util.global_step(sess, global_step) < step:
        time.sleep(1.0)


def train(train_op, logdir, train_step_fn=train_step, train_step_kwargs=_USE_DEFAULT,
          log_every_n_steps=1, graph=None, master="", is_chief=True, global_step=None,
          number_of_steps=None, init_op=_USE_DEFAULT, init_feed_dict=None,
          local_init_op=_USE_DEFAULT, init_fn=None, ready_op=_USE_DEFAULT,
          summary_op=_USE_DEFAULT, save_summaries_secs=600, summary_writer=_USE_DEFAULT,
          startup_delay_steps=0, saver=None, save_interval_secs=600, sync_optimizer=None,
          session_config=None, session_wrapper=None, trace_every_n_steps=None,
          ignore_live_threads=False):
    """Run ``train_op`` in a Supervisor's managed session on ``master`` until ``number_of_steps``
    global steps (forever when None), a stop request, or the end of the input
    (OutOfRangeError); returns the last loss. The chief initializes (or restores from
    ``logdir``), writes summaries every ``save_summaries_secs`` and checkpoints every
    ``save_interval_secs`` and at the end; another worker first waits ``startup_delay_steps``
    global steps. A session aborted by a failed peer is started again."""
    if train_op is None:
        raise ValueError("train_op cannot be None.")
    if logdir is None:
        for what, given in (("summary_op", summary_op != _USE_DEFAULT),
                            ("saver", saver is not None),
                            ("trace_every_n_steps", trace_every_n_steps is not None)):
            if given:
                raise ValueError("Cannot provide %s because logdir=None" % what)
    if isinstance(sync_optimizer, sync_replicas_optimizer.SyncReplicasOptimizer):
        sync_optimizer = [sync_optimizer]
    if sync_optimizer is not None and startup_delay_steps > 0:
        raise ValueError("startup_delay_steps must be zero when sync_optimizer is supplied.")
    if number_of_steps is not None and number_of_steps <= 0:
        raise ValueError("`number_of_steps` must be either None or a positive number.")
    graph = graph or get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = training_util.get_or_create_global_step()
        saver = saver or saver_.Saver()
        for opt in sync_optimizer or []:
            if not isinstance(opt, sync_replicas_optimizer.SyncReplicasOptimizer):
                raise ValueError("`sync_optimizer` must be a tf.train.SyncReplicasOptimizer.")
        with graph.name_scope("init_ops"):
            if init_op == _USE_DEFAULT:
                init_op = variables.global_variables_initializer()
            if ready_op == _USE_DEFAULT:
                ready_op = variables.report_uninitialized_variables()
            if local_init_op == _USE_DEFAULT:
                local_init_op = control_flow_ops.group(variables.local_variables_initializer(),
                                                       resources.tables_initializer())
            ready_for_local_init_op = None
            if sync_optimizer:
                with graph.control_dependencies([local_init_op] if local_init_op is not None
                                                else []):
                    local_init_op = control_flow_ops.group(*[
                        opt.chief_init_op if is_chief else opt.local_step_init_op
                        for opt in sync_optimizer])
                ready_for_local_init_op = array_ops.concat(
                    [opt.ready_for_local_init_op for opt in sync_optimizer], axis=0)
        if summary_op == _USE_DEFAULT:
            summary_op = summary_ops.merge_all()
        if summary_writer == _USE_DEFAULT:
            summary_writer = supervisor.Supervisor.USE_DEFAULT
        if is_chief and sync_optimizer:
            init_tokens_op = [opt.get_init_tokens_op() for opt in sync_optimizer]
            chief_queue_runners = [opt.get_chief_queue_runner() for opt in sync_optimizer]
        if train_step_kwargs == _USE_DEFAULT:
            with graph.name_scope("train_step"):
                train_step_kwargs = {
                    "should_stop": math_ops.greater_equal(global_step, number_of_steps)
                    if number_of_steps else array_ops.constant(False)}
                if log_every_n_steps > 0:
                    train_step_kwargs["should_log"] = math_ops.equal(
                        math_ops.mod(global_step, log_every_n_steps), 0)
                if is_chief and trace_every_n_steps is not None:
                    train_step_kwargs["should_trace"] = math_ops.equal(
                        math_ops.mod(global_step, trace_every_n_steps), 0)
                    train_step_kwargs["logdir"] = logdir
    sv = supervisor.Supervisor(
        graph=graph, is_chief=is_chief, logdir=logdir, init_op=init_op,
        init_feed_dict=init_feed_dict, local_init_op=local_init_op,
        ready_for_local_init_op=ready_for_local_init_op, ready_op=ready_op,
        summary_op=summary_op, summary_writer=summary_writer, global_step=global_step,
        saver=saver, save_summaries_secs=save_summaries_secs,
        save_model_secs=save_interval_secs, init_fn=init_fn)
    if summary_writer is not None:
        train_step_kwargs["summary_writer"] = sv.summary_writer
    total_loss = None
    while True:
        try:
            with sv.managed_session(master, start_standard_services=False,
                                    config=session_config) as sess:
                _logger.info("Starting Session.")
                if session_wrapper is not None:
                    sess = session_wrapper(sess)
                if is_chief:
                    if logdir:
                        sv.start_standard_services(sess)
                elif startup_delay_steps > 0:
                    _wait_for_step(sess, global_step,
                                   min(startup_delay_steps, number_of_steps or sys.maxsize))
                threads = sv.start_queue_runners(sess)
                if is_chief and sync_optimizer:
                    sv.start_queue_runners(sess, chief_queue_runners)
                    sess.run(init_tokens_op)
                try:
                    while not sv.should_stop():
                        total_loss, should_stop = train_step_fn(sess, train_op, global_step,
                                                                train_step_kwargs)
                        if should_stop:
                            _logger.info("Stopping Training.")
                            sv.request_stop()
                            break
                except errors.OutOfRangeError as e:
                    _logger.info("Caught OutOfRangeError. Stopping Training. %s", e)
                if logdir and sv.is_chief:
                    _logger.info("Finished training! Saving model to disk.")
                    sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
                    sv.stop(threads, close_summary_writer=True,
                            ignore_live_threads=ignore_live_threads)
            return total_loss
        except errors.AbortedError:
            _logger.info("Retrying training!")
