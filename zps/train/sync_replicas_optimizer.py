"""``SyncReplicasOptimizer``: synchronous between-graph training with TF1's exact semantics.

Each replica pushes its gradients into one accumulator per variable (on the variable's ps) and
then waits for a token. The chief's queue runner takes the average of ``replicas_to_aggregate``
gradients from every accumulator (stale ones, computed from an older global step, are dropped),
applies them, increments the global step and puts one token per replica into the token queue;
the replicas take a token (the new global step) and start the next step. With
``total_num_replicas > replicas_to_aggregate`` the extra replicas are backups: the slowest ones'
gradients arrive stale and are dropped, so a missing replica does not stop training.

Sparse gradients (``IndexedSlices``: embedding lookups, each shard of a partitioned table, hash
embedding shards) go to a ``SparseConditionalAccumulator`` on their variable's ps, as in TF1: only
the rows a replica touched travel, and the accumulator, the take and the update of a shard all
run where the shard lives. As TF1's accumulator does, each row of the taken gradient is the mean
over the replicas whose gradient carried that row (not over all ``replicas_to_aggregate``).

>>> import zps as tf
>>> opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
...                                      replicas_to_aggregate=2, total_num_replicas=2)
"""

import logging
import threading
import time

import numpy as np

from zps.framework import constant as constant_op
from zps.framework import dtypes
from zps.framework.device import DeviceSpec
from zps.framework.graph import GraphKeys, IndexedSlices, Tensor, get_default_graph
from zps.ops import array_ops, control_flow_ops, data_flow_ops, state_ops, variables
from zps.train import queue_runner, session_run_hook
from zps.train.optimizer import Optimizer

log = logging.getLogger("zps.train")

# While the global step does not advance, the chief's hook logs what it waits for this often.
_WAIT_LOG_SECS = 10.0


class SyncReplicasOptimizer(Optimizer):
    """Aggregate gradients of several replicas and apply them together (TF1 semantics)."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        log.info("SyncReplicas: replicas_to_aggregate=%s; total_num_replicas=%s",
                 replicas_to_aggregate, total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list = []
        self._accumulated_vars = []   # the variable of each accumulator (for the chief's report)

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients (clip them per replica here if needed)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Push gradients to the accumulators; returns the op that waits for the next token."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness: pass "
                             "global_step=tf.train.get_or_create_global_step()")
        self._global_step = global_step
        graph = get_default_graph()
        train_ops, aggregated, var_list = [], [], []

        # The local step lives on this replica's worker (where unplaced ops go).
        local_anchor = control_flow_ops.no_op()
        with graph.colocate_with(local_anchor):
            self._local_step = variables.Variable(
                0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        record_push = self._record_push(graph, local_anchor, global_step)
        self.ready_for_local_init_op = variables.report_uninitialized_variables(
            variables.global_variables())

        with graph.name_scope(self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with graph.device(var.device):
                    if grad is None:
                        aggregated.append(None)
                        continue
                    if isinstance(grad, Tensor):
                        accum = data_flow_ops.ConditionalAccumulator(
                            grad.dtype, shape=var.get_shape(),
                            shared_name=var.name + "/grad_accum")
                        train_ops.append(accum.apply_grad(grad, local_step=self._local_step))
                        aggregated.append(accum.take_grad(self._replicas_to_aggregate))
                    elif isinstance(grad, IndexedSlices):
                        accum = data_flow_ops.SparseConditionalAccumulator(
                            grad.dtype, shape=(), shared_name=var.name + "/grad_accum")
                        train_ops.append(accum.apply_indexed_slices_grad(
                            grad, local_step=self._local_step))
                        aggregated.append(accum.take_indexed_slices_grad(
                            self._replicas_to_aggregate))
                    else:
                        raise ValueError("Unknown gradient type %r for variable %s"
                                         % (type(grad).__name__, var.name))
                    self._accumulator_list.append((accum, var.device))
                    self._accumulated_vars.append(var)
            if record_push is not None:
                # Recorded only once this replica's gradients are in the accumulators: a replica
                # that dies between the two must still be named as missing by the chief.
                with graph.control_dependencies(list(train_ops)):
                    train_ops.append(record_push())

            with graph.device(global_step.device), graph.name_scope(None):
                # The global step is incremented here rather than by the wrapped optimizer: the
                # increment (and the tokens below) must wait for the updates, and the executor
                # folds a Const created inside a control_dependencies block without its control
                # inputs, so an op whose only in-block input is such a Const (the optimizer's
                # assign_add(global_step, 1)) would run at once. Constants are therefore made
                # outside the blocks, and the ops that must wait get the control inputs directly.
                step_dtype = global_step.dtype.base_dtype
                one = constant_op.constant(1, dtype=step_dtype, name="sync_step_increment")
                num_tokens = constant_op.constant([self._tokens_per_step], dtype=dtypes.int32,
                                                  name="sync_tokens_per_step")
                apply_op = self._opt.apply_gradients(list(zip(aggregated, var_list)))
                with graph.control_dependencies([apply_op]), graph.colocate_with(global_step):
                    update_op = state_ops.assign_add(global_step, one, name="sync_global_step_inc")
                self._sync_token_queue = data_flow_ops.FIFOQueue(
                    -1, global_step.dtype.base_dtype, shapes=(), name="sync_token_q",
                    shared_name="sync_token_q")
                # The chief's queue runner needs a queue of its own: closing the token queue on
                # a ps would not be undone when the chief restarts.
                dummy_queue = data_flow_ops.FIFOQueue(1, dtypes.int32, shapes=(),
                                                      name="dummy_queue", shared_name="dummy_queue")
                with graph.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with graph.control_dependencies([update_op]):
                    tokens = array_ops.fill(num_tokens, array_ops.identity(update_op))
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with graph.control_dependencies([sync_op]):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = queue_runner.QueueRunner(dummy_queue, [sync_op])
            for accum, device in self._accumulator_list:
                with graph.device(device):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops)
            self._gradients_applied = True
            return train_op

    def _record_push(self, graph, local_anchor, global_step):
        """The vector recording, by worker task index, the local step each replica pushed for (on
        the global step's ps, shared by every replica's graph), so that the chief can name the
        replicas it waits for; returns the function building this replica's recording op (to be
        called under the pushes' control dependencies), or None for a replica not placed on
        /job:*/task:N (such replicas are not named)."""
        replica = DeviceSpec.from_string(local_anchor.device or "").task
        self._pushed = None
        if replica is None or not 0 <= replica < self._total_num_replicas:
            return None
        with graph.device(global_step.device):
            self._pushed = variables.Variable(
                np.full(self._total_num_replicas, -1, global_step.dtype.as_numpy_dtype),
                trainable=False, name="sync_rep_pushed")
            self._pushed_job = DeviceSpec.from_string(local_anchor.device).job or "worker"
            index = constant_op.constant([replica], name="sync_rep_index")

        def record():
            with graph.device(global_step.device):
                return state_ops.scatter_update(self._pushed, index,
                                                array_ops.reshape(self._local_step, [1])).op
        return record

    def get_chief_queue_runner(self):
        """The QueueRunner the chief runs: aggregate, apply, increment, hand out tokens."""
        self._check_applied("get_chief_queue_runner()")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """The op that puts the first tokens in the queue (run once by the chief)."""
        self._check_applied("get_init_tokens_op()")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError("Too few tokens to finish the first step: %d (given) vs %d (needed)"
                             % (num_tokens, needed))
        graph = get_default_graph()
        if num_tokens <= 0:
            return control_flow_ops.no_op(name="no_init_tokens")
        with graph.device(self._global_step.device), graph.name_scope(None):
            tokens = array_ops.fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,))

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook that initializes local steps and starts the chief's queue runner."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    def _check_applied(self, what):
        if not self._gradients_applied:
            raise ValueError("%s should be called after apply_gradients() (or minimize())" % what)


class _SyncReplicasOptimizerHook(session_run_hook.SessionRunHook):
    """Runs the optimizer's local init ops; on the chief, the init tokens and queue runner."""

    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._opt = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        opt = self._opt
        if not opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients should be called before "
                             "using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
            self._build_watch_ops()
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session, coord):
        not_ready = session.run(self._ready_for_local_init_op)
        if len(not_ready):
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizer local_init "
                "(op %s): variables not initialized: %s"
                % (self._local_init_op.name, ", ".join(v.decode() for v in not_ready)))
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
            if self._watch_fetches is not None:
                watchdog = threading.Thread(target=self._watch, args=(session, coord),
                                            name="SyncReplicasWatchdog", daemon=True)
                coord.register_thread(watchdog)
                watchdog.start()

    # -- the chief's report when a step does not complete ------------------------------------
    @property
    def _watch_fetches(self):
        return getattr(self, "_watch_ops", None)

    def _build_watch_ops(self):
        """Ops reading the global step and how many gradients each accumulator holds."""
        opt = self._opt
        if not opt._accumulator_list:
            self._watch_ops = None
            return
        graph = get_default_graph()
        with graph.name_scope(opt._name + "_watch"):
            self._watch_ops = [opt._global_step] + [accum.num_accumulated()
                                                    for accum, _ in opt._accumulator_list]
            if opt._pushed is not None:
                self._watch_ops.append(opt._pushed.value())

    def _watch(self, session, coord):
        """Log, every ``_WAIT_LOG_SECS`` while the global step does not advance, how many
        gradients each accumulator still waits for: a replica that stopped or lost the ps makes
        a synchronous chief wait forever, and this says so instead of hanging silently."""
        opt = self._opt
        names = [v.name for v in opt._accumulated_vars]
        last_step, since, last_log = None, time.monotonic(), time.monotonic()
        while not coord.wait_for_stop(min(1.0, _WAIT_LOG_SECS / 3.0)):
            try:
                values = session.run(self._watch_ops)
            except Exception as e:  # noqa: BLE001 - the training loop reports real failures
                if coord.should_stop():
                    return
                log.debug("SyncReplicasOptimizer watchdog could not read the accumulators: %s", e)
                continue
            step, now = int(values[0]), time.monotonic()
            if step != last_step:
                last_step, since, last_log = step, now, now
                continue
            if now - last_log < _WAIT_LOG_SECS:
                continue
            last_log = now
            waiting_for = ""
            if opt._pushed is not None:
                pushed, values = values[-1], values[:-1]
                missing = ["/job:%s/task:%d (%s)" % (
                    opt._pushed_job, i, "never pushed" if p < 0 else
                    "last pushed for global step %d" % p) for i, p in enumerate(pushed) if p < step]
                if missing:
                    waiting_for = "; waiting for replicas " + ", ".join(missing)
            by_count = {}
            for name, n in zip(names, values[1:]):
                if int(n) < opt._replicas_to_aggregate:
                    by_count.setdefault(int(n), []).append(name)
            if by_count:
                what = "; ".join(
                    "received %d of %d gradients for %s, waiting for %d more"
                    % (n, opt._replicas_to_aggregate, ", ".join(vs), opt._replicas_to_aggregate - n)
                    for n, vs in sorted(by_count.items()))
            else:
                what = "all gradients received, waiting for the update to be applied"
            log.warning(
                "SyncReplicasOptimizer chief: global step %d has not advanced for %.1f s: %s%s "
                "(replicas_to_aggregate=%d, total_num_replicas=%d). A replica has stopped, is "
                "slow, or cannot reach the ps; training resumes when enough replicas push "
                "gradients (use total_num_replicas > replicas_to_aggregate for backup replicas).",
                step, now - since, what, waiting_for, opt._replicas_to_aggregate,
                opt._total_num_replicas)


__all__ = ["SyncReplicasOptimizer"]
