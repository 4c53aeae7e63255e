"""``Optimizer``: the base class of TF1's optimizers (``tf.train.Optimizer``).

``minimize(loss)`` is ``compute_gradients`` (symbolic gradients of ``loss`` for the trainable
variables) followed by ``apply_gradients`` (one in-place update op per variable, colocated with
it, then ``global_step += 1``). Subclasses implement ``_create_slots``, ``_prepare``,
``_apply_dense``, ``_apply_sparse`` and optionally ``_finish``, exactly as in TF1; a resource
variable is updated by ``_resource_apply_dense``/``_resource_apply_sparse`` where a subclass has
them (else by ``_apply_*``). A subclass's sparse update gets unique indices, as in TF1.

Under a ``tf.distribute`` strategy (TF 1.15's path): ``apply_gradients`` in a replica function
hands the gradients to ``merge_call(_distributed_apply)``, which sums them across replicas
(``batch_reduce_to``), creates the slots in cross-replica context (distributed like their
variables), updates each copy of each variable (``extended.update``), runs ``_finish`` once per
non-slot device and increments the global step once. In cross-replica context it is TF's
RuntimeError. ``compute_gradients`` scales the loss by 1/replicas when
``tf.distribute.get_loss_reduction()`` is MEAN (only as the Estimator asks).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, -2.0], name="w")
...     loss = tf.reduce_sum(w * w)
...     train_op = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(train_op)
...         print(sess.run(w))
[ 0.5 -1. ]
"""

from zps.distribute import distribute_lib
from zps.distribute.reduce_util import ReduceOp
from zps.framework import dtypes as _dtypes
from zps.framework.graph import (
    GraphKeys,
    IndexedSlices,
    Tensor,
    convert_to_tensor_or_indexed_slices,
    get_default_graph,
)
from zps.ops import array_ops, control_flow_ops, math_ops, partition_ops, state_ops
from zps.ops.gradients_impl import gradients
from zps.ops.variables import ResourceVariable, Variable
from zps.train import slot_creator

_VALID_DTYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def _var_key(var):
    # A copy of a distributed variable (in extended.update) shares its container's slots.
    container = getattr(var, "_distributed_container", None)
    if container is not None:
        var = container()
    var = getattr(var, "_aggregating_container", lambda: var)()
    if distribute_lib.has_strategy() and hasattr(var, "primary"):
        var = var.primary
    return (var.graph, var.op.name)


def _converted_gradient(g):
    """``g`` as a Tensor or IndexedSlices, or TF's TypeError."""
    try:
        g = convert_to_tensor_or_indexed_slices(g)
    except (TypeError, ValueError):
        raise TypeError("Gradient must be convertible to a Tensor or IndexedSlices, or "
                        "None: %s" % (g,)) from None
    if not isinstance(g, Tensor | IndexedSlices):
        raise TypeError("Gradient must be a Tensor, IndexedSlices, or None: %s" % (g,))
    return g


def _in_train_ops(graph, apply_updates):
    """The op of ``apply_updates``, added to the graph's TRAIN_OP collection (once)."""
    if isinstance(apply_updates, Tensor):
        apply_updates = apply_updates.op
    train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
    if apply_updates not in train_ops:
        train_ops.append(apply_updates)
    return apply_updates


def _flatten(values):
    if isinstance(values, list | tuple | set):
        return [v for item in values for v in _flatten(item)]
    shards = getattr(values, "_zps_optimizer_shards", None)  # a table: its shards are updated
    if shards is not None:
        return shards()
    return [values]


# Tables (e.g. zps.contrib.embedding's hash embeddings) that minimize() updates by default.
TRAINABLE_TABLES = "trainable_tables"


def _is_table(v):
    # A table shard applies an optimizer's update itself (the slots live in its resource).
    return hasattr(v, "_zps_apply_gradient")


def _check_variable(v):
    if not isinstance(v, Variable) and not _is_table(v):
        raise NotImplementedError("Trying to optimize unsupported type %r: optimizers update "
                                  "zps.Variable objects" % (v,))


class Optimizer:
    """Base class for optimizers: computes gradients and applies them to variables."""

    # How gradients are gated (see compute_gradients).
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}            # slot name -> {variable key: slot variable}
        self._non_slot_dict = {}    # (name, graph) -> variable (e.g. Adam's beta1_power)

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """Add ops that minimize ``loss`` by updating ``var_list``; returns the train op."""
        self._check_strategy_support()
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError("No gradients provided for any variable, check your graph for ops "
                             "that do not support gradients, between variables %s and loss %s."
                             % ([str(v) for _, v in grads_and_vars], loss))
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """A list of ``(gradient, variable)`` pairs; the gradient is None where loss ignores it.

        ``var_list`` defaults to the graph's trainable variables; it may hold tensors too, whose
        gradients are computed but cannot be applied (as TF1). With GATE_OP or GATE_GRAPH the
        gradients are available only once all of them are computed, so no in-place update can
        change a variable that another gradient still reads.
        """
        if callable(loss):
            loss = loss()
        loss = self._scale_loss(loss)
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                             "Optimizer.GATE_GRAPH.  Not %s" % gate_gradients)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([grad_loss])
        if var_list is None:
            graph = getattr(loss, "graph", None) or get_default_graph()
            var_list = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
            var_list = var_list + _flatten(graph.get_collection(TRAINABLE_TABLES))
        else:
            var_list = _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Tensor):  # TF1 computes gradients for tensors (not applied)
                _check_variable(v)
        grads = gradients(loss, var_list, grad_ys=grad_loss,
                          gate_gradients=(gate_gradients == Optimizer.GATE_OP),
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Apply ``(gradient, variable)`` pairs; returns the op that runs all the updates.

        None gradients are skipped; IndexedSlices gradients update only their rows. With
        ``global_step``, it is incremented by one after all updates, on its own device.
        """
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        if distribute_lib.has_strategy():
            if distribute_lib.in_cross_replica_context():
                raise RuntimeError("Use `_distributed_apply()` instead of `apply_gradients()` in "
                                   "a cross-replica context.")
            filtered = tuple((g, v) for g, v in grads_and_vars if g is not None)
            if not filtered:
                raise ValueError("No gradients provided for any variable: %s."
                                 % ([str(v) for _, v in grads_and_vars],))
            return distribute_lib.get_replica_context().merge_call(
                self._distributed_apply, args=(filtered, global_step, name))
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                g = _converted_gradient(g)
            _check_variable(v)
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError("No gradients provided for any variable: %s."
                             % ([str(v) for _, v in converted],))
        graph = var_list[0].graph
        plain_vars = [v for v in var_list if not _is_table(v)]
        with graph.control_dependencies(None):  # state is created outside any control context
            if plain_vars:
                self._create_slots(plain_vars)
        update_ops = []
        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with graph.name_scope("update_" + var.op.name), graph.colocate_with(var):
                    update_ops.append(self._update_op(grad, var))
            # Only tables: their slots live with their rows, there is no optimizer state to finish.
            finish = self._finish if plain_vars else Optimizer._finish.__get__(self)
            if global_step is None:
                apply_updates = finish(update_ops, scope)
            else:
                with graph.control_dependencies([finish(update_ops, "update")]):
                    with graph.colocate_with(global_step):
                        apply_updates = state_ops.assign_add(global_step, 1, name=scope)
        return _in_train_ops(graph, apply_updates)

    def _distributed_apply(self, distribution, grads_and_vars, global_step=None, name=None):
        """``apply_gradients`` in cross-replica context (TF 1.15's): the replicas' gradients
        summed onto each variable's devices, every copy updated, the global step once."""
        reduced = distribution.extended.batch_reduce_to(ReduceOp.SUM, grads_and_vars)
        var_list = [v for _, v in grads_and_vars]
        for v in var_list:
            _check_variable(v)
        graph = get_default_graph()
        with graph.control_dependencies(None):
            self._create_slots(var_list)

        def update(v, g):
            with graph.name_scope("update_" + v.op.name):
                return self._update_op(_converted_gradient(g), v)

        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            update_ops = [op for grad, var in zip(reduced, var_list)
                          for op in distribution.extended.update(var, update, args=(grad,),
                                                                 group=False)]
            non_slot_devices = distribution.extended.non_slot_devices(var_list)
            finish_updates = distribution.extended.update_non_slot(
                non_slot_devices, lambda ops: self._finish(ops, "update"), args=(update_ops,),
                group=False)
            if global_step is None:
                apply_updates = distribution.group(finish_updates, name=scope)
            else:
                # One update named as the optimizer's scope; copies of a distributed global
                # step get their names in it.
                copies = len(getattr(global_step, "values", (global_step,)))
                with graph.control_dependencies(list(finish_updates)):
                    apply_updates = distribution.extended.update(
                        global_step, state_ops.assign_add, args=(1,),
                        kwargs={"name": scope} if copies == 1 else {})
        return _in_train_ops(graph, apply_updates)

    @staticmethod
    def _scale_loss(loss_value):
        # TF 1.15: a MEAN loss reduction (only when the Estimator asks) is divided among the
        # replicas, whose gradients are then summed; the graph records it (the Estimator then
        # reports the replicas' losses summed).
        graph = get_default_graph()
        graph._is_loss_scaled_by_optimizer = False
        if distribute_lib.get_loss_reduction() == ReduceOp.MEAN:
            num_replicas = distribute_lib.get_strategy().num_replicas_in_sync
            if num_replicas > 1:
                loss_value *= (1. / num_replicas)
                graph._is_loss_scaled_by_optimizer = True
        return loss_value

    def _check_strategy_support(self):
        # An optimizer with its own apply_gradients does not take the distributed path: under
        # a strategy with several replicas its updates would be wrong, so it is refused.
        if type(self).apply_gradients is Optimizer.apply_gradients:
            return
        if distribute_lib.has_strategy() and \
                distribute_lib.get_strategy().num_replicas_in_sync > 1:
            raise NotImplementedError(
                "%s overrides apply_gradients and does not support tf.distribute strategies "
                "with several replicas (here %d): use a tf.train optimizer (GradientDescent, "
                "Momentum, Adam ...) inside strategy.scope(), or build the model without a "
                "strategy" % (type(self).__name__,
                              distribute_lib.get_strategy().num_replicas_in_sync))

    def _update_op(self, grad, var):
        if _is_table(var):
            return var._zps_apply_gradient(self, grad)
        # TF1 updates a resource variable with _resource_apply_*; zps's optimizers (and a user's
        # that has only _apply_*) update every variable with _apply_*.
        resource = isinstance(var, ResourceVariable)
        if isinstance(grad, Tensor):
            if resource and self._overrides("_resource_apply_dense"):
                update_op = self._resource_apply_dense(grad, var)
            else:
                update_op = self._apply_dense(grad, var)
            if var.constraint is None:
                return update_op
            with var.graph.control_dependencies([update_op]):
                return var.assign(var.constraint(var)).op
        if var.constraint is not None:
            raise RuntimeError("Cannot use a constraint function on a sparse variable.")
        if resource and self._overrides("_resource_apply_sparse"):
            return self._resource_apply_sparse_duplicate_indices(grad.values, var, grad.indices)
        return self._apply_sparse_duplicate_indices(grad, var)

    def _overrides(self, method):
        return getattr(type(self), method) is not getattr(Optimizer, method)

    # -- slots and other optimizer state -----------------------------------------------------
    def get_slot(self, var, name):
        """The slot ``name`` (e.g. "momentum", "m") created for ``var``, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self):
        """The sorted names of the slots this optimizer creates."""
        return sorted(self._slots)

    def variables(self):
        """The optimizer's variables in the default graph (slots and others), sorted by name."""
        graph = get_default_graph()
        found = [v for v in self._non_slot_dict.values() if v.graph is graph]
        for named_slots in self._slots.values():
            found.extend(v for v in named_slots.values() if v.graph is graph)
        return sorted(found, key=lambda v: v.name)

    def _slot_dict(self, slot_name):
        return self._slots.setdefault(slot_name, {})

    def _zeros_slot(self, var, slot_name, op_name):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_zeros_slot(var, op_name)
        return named_slots[_var_key(var)]

    def _constant_slot(self, var, value, slot_name, op_name, init_name="Const"):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_constant_slot(
                var, value, op_name, init_name=init_name)
        return named_slots[_var_key(var)]

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot(var, val, op_name)
        return named_slots[_var_key(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name,
                                           op_name):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot_with_initializer(
                var, initializer, shape, dtype, op_name)
        return named_slots[_var_key(var)]

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """A variable of the optimizer itself, created once per graph next to ``colocate_with``."""
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.colocate_with(colocate_with):   # of the kind of that variable (TF1)
                v = Variable(initial_value, name=name, trainable=False,
                             use_resource=isinstance(colocate_with, ResourceVariable))
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name, graph=None):
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    def _non_slot_variables(self):
        return self._non_slot_dict.values()

    # -- the subclass interface ----------------------------------------------------------------
    def _create_slots(self, var_list):
        """Create the slots of the variables that will be updated (default: none)."""

    def _prepare(self):
        """Create the tensors of the hyperparameters (called inside the update name scope)."""

    def _apply_dense(self, grad, var):
        raise NotImplementedError("%s does not implement _apply_dense" % type(self).__name__)

    def _apply_sparse_duplicate_indices(self, grad, var):
        """``_apply_sparse`` of ``grad`` with the rows of repeated indices summed first (TF1's),
        so that an ``_apply_sparse`` may assume unique indices (e.g. with ``scatter_update``)."""
        if type(self)._apply_sparse.__module__.startswith("zps.train."):
            # tf.train's sparse kernels sum the rows of repeated indices themselves.
            return self._apply_sparse(grad, var)
        summed, unique_indices = _deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(summed, unique_indices, grad.dense_shape), var)

    def _apply_sparse(self, grad, var):
        raise NotImplementedError("%s does not implement _apply_sparse" % type(self).__name__)

    def _resource_apply_dense(self, grad, handle):
        """A user optimizer's update of a resource variable (``handle`` is the variable)."""
        raise NotImplementedError("%s does not implement _resource_apply_dense"
                                  % type(self).__name__)

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        """``_resource_apply_sparse`` with the rows of repeated indices summed first (TF1's)."""
        summed, unique_indices = _deduplicate_indexed_slices(grad, indices)
        return self._resource_apply_sparse(summed, handle, unique_indices)

    def _resource_apply_sparse(self, grad, handle, indices):
        raise NotImplementedError("%s does not implement _resource_apply_sparse"
                                  % type(self).__name__)

    def _finish(self, update_ops, name_scope):
        """The op that runs all ``update_ops`` (a subclass may add its own final updates)."""
        return control_flow_ops.group(*update_ops, name=name_scope)

    # -- helpers -----------------------------------------------------------------------------
    def _call_if_callable(self, param):
        return param() if callable(param) else param

    def _assert_valid_dtypes(self, tensors):
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in _VALID_DTYPES:
                raise ValueError("Invalid type %s for %s, expected: %s."
                                 % (dtype.name, t.name, [d.name for d in _VALID_DTYPES]))


def _deduplicate_indexed_slices(values, indices):
    """``(summed_values, unique_indices)``: the rows of each repeated index summed (TF1's)."""
    unique_indices, new_positions = partition_ops.unique(indices)
    summed = array_ops.unsorted_segment_sum(values, new_positions,
                                            array_ops.shape(unique_indices)[0])
    return summed, unique_indices


def cast_to(tensor, var):
    """A hyperparameter tensor in the dtype of ``var`` (no op when it already is)."""
    return math_ops.cast(tensor, var.dtype.base_dtype)


__all__ = ["Optimizer"]
