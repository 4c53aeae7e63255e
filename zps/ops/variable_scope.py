"""Variable scopes and ``get_variable``: named, shareable variables (TF1's variable_scope.py).

Each graph has one variable store (``full name -> Variable``) shared by all threads, and per thread
a current VariableScope carrying defaults (initializer, regularizer, reuse, dtype ...) for the
variables created in it. A variable's name depends only on the variable scopes around it; the ops
built inside a ``variable_scope`` also get a name scope (``scope/``, ``scope_1/`` when re-entered).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     with tf.variable_scope("layer"):
...         w = tf.get_variable("w", [2, 3])
...         y = tf.identity(w)
...     with tf.variable_scope("layer", reuse=True):
...         w2 = tf.get_variable("w", [2, 3])
...         z = tf.identity(w2)
>>> w.name, w2 is w, y.name, z.name
('layer/w:0', True, 'layer/Identity:0', 'layer_1/Identity:0')
"""

import contextlib
import enum
import functools
import inspect
import sys
import threading
import weakref

from zps.framework import dtypes as _dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.tensor_shape import as_shape
from zps.ops import array_ops, init_ops, partitioned_variables
from zps.ops.variables import (
    SaveSliceInfo,
    Variable,
    VariableSynchronization,
    _creator_stack,
)


class _ReuseMode(enum.Enum):
    """Reuse modes beyond True/None: AUTO_REUSE gets a variable if it exists, else creates it."""

    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def add_regularization_loss(variable, regularizer, name):
    """Add ``regularizer(variable)`` (unless None) to REGULARIZATION_LOSSES, built as TF1 builds
    it: colocated with the variable, under ``<name>/Regularizer/``, outside any control
    dependencies."""
    graph = get_default_graph()
    with graph.colocate_with(variable), graph.name_scope(name + "/Regularizer/"), \
            graph.control_dependencies(None):
        loss = regularizer(variable)
    if loss is not None:
        graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def no_regularizer(_):
    """A regularizer that regularizes nothing: use it to opt a variable out of a scope's one."""
    return None


# -- the variable store of a graph ------------------------------------------------------------------
class _VariableStore:
    """The variables of one graph created by ``get_variable``, by full name."""

    def __init__(self):
        self._vars = {}
        self._partitioned_vars = {}
        self._lock = threading.RLock()

    def get_variable(self, name, shape=None, dtype=_dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                     custom_getter=None, constraint=None, synchronization=None, aggregation=None):
        """Get the variable ``name`` or create it, through ``custom_getter`` when one is given."""
        dtype = _dtypes.as_dtype(dtype)
        trainable = _get_trainable_value(synchronization, trainable)

        def true_getter(name, shape=None, dtype=_dtypes.float32, initializer=None, regularizer=None,
                        reuse=None, trainable=None, collections=None, caching_device=None,
                        partitioner=None, validate_shape=True, use_resource=None, constraint=None,
                        synchronization=None, aggregation=None):
            is_scalar = isinstance(shape, list | tuple) and not shape
            if partitioner is not None and not is_scalar:
                return self._get_partitioned_variable(
                    name, partitioner, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, reuse=reuse, trainable=trainable,
                    collections=collections, caching_device=caching_device,
                    validate_shape=validate_shape, use_resource=use_resource,
                    constraint=constraint)
            return self._get_single_variable(
                name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                reuse=reuse, trainable=trainable, collections=collections,
                caching_device=caching_device, validate_shape=validate_shape,
                use_resource=use_resource, constraint=constraint,
                synchronization=synchronization, aggregation=aggregation)

        kwargs = dict(name=name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, reuse=reuse, trainable=trainable,
                      collections=collections, caching_device=caching_device,
                      partitioner=partitioner, validate_shape=validate_shape,
                      use_resource=use_resource, synchronization=synchronization,
                      aggregation=aggregation)
        if custom_getter is None:
            return true_getter(constraint=constraint, **kwargs)
        # As TF1: constraint is passed only to getters that can take it (it came later to the API).
        params = _parameters(custom_getter)
        if "constraint" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            kwargs["constraint"] = constraint
        return custom_getter(getter=true_getter, **kwargs)

    def _get_partitioned_variable(self, name, partitioner, shape=None, dtype=_dtypes.float32,
                                  initializer=None, regularizer=None, reuse=None, trainable=True,
                                  collections=None, caching_device=None, validate_shape=True,
                                  use_resource=None, constraint=None):
        """Get or create the PartitionedVariable ``name`` (shards ``name/part_<i>``), as TF1."""
        initializing_from_value = initializer is not None and not callable(initializer)
        with self._lock:
            if name in self._vars:
                raise ValueError("A partitioner was provided, but an unpartitioned version of the "
                                 "variable was found: %s.  Perhaps a variable of the same name was "
                                 "already created without partitioning?" % name)
            shape = as_shape(shape)
            if initializing_from_value:
                shape = shape.merge_with(convert_to_tensor(initializer, dtype=dtype).get_shape())
            existing = self._partitioned_vars.get(name)
            partitions = None
            # (TF1 also calls the partitioner when reusing; zps lets a reuse omit the shape.)
            if existing is None or shape.is_fully_defined():
                partitions = partitioned_variables.call_partitioner(partitioner, shape, dtype)
            if existing is not None:
                if reuse is False:
                    raise ValueError("Partitioned variable with name %s already exists. Did you "
                                     "mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?"
                                     % name)
                if not shape.is_compatible_with(existing.get_shape()):
                    raise ValueError("Trying to reuse partitioned variable %s, but specified shape "
                                     "%s and found shape %s." % (name, shape, existing.get_shape()))
                if not dtype.is_compatible_with(existing.dtype):
                    raise ValueError("Trying to reuse partitioned variable %s, but specified dtype "
                                     "%s and found dtype %s." % (name, dtype.name,
                                                                 existing.dtype.name))
                if partitions is not None and existing._get_partitions() != partitions:
                    raise ValueError("Trying to reuse partitioned variable %s, but specified "
                                     "partitions %s and found partitions %s."
                                     % (name, partitions, existing._get_partitions()))
                return existing
            if reuse is True:
                raise ValueError("PartitionedVariable %s does not exist, or was not created with "
                                 "tf.get_variable(). Did you mean to set reuse=False or "
                                 "reuse=tf.AUTO_REUSE in VarScope?" % name)
            slice_dim, num_slices = partitioned_variables.slice_dim_and_num_slices(partitions)
            if "%s/part_0" % name in self._vars:
                if "%s/part_%d" % (name, num_slices - 1) not in self._vars:
                    raise ValueError("Partitioner returned a different partitioning than what was "
                                     "already found.  Partitioner returned %d shards, and shard "
                                     "%s/part_0 was found, but %s/part_%d was not."
                                     % (num_slices, name, name, num_slices - 1))
                if "%s/part_%d" % (name, num_slices) in self._vars:
                    raise ValueError("Partitioner returned a different partitioning than what was "
                                     "already found.  Partitioner returned %d shards, and shard "
                                     "%s/part_0 was found, but so was the extra shard %s/part_%d."
                                     % (num_slices, name, name, num_slices))
            graph = get_default_graph()
            full_shape = shape.as_list()
            shards = []
            for i, (offset, var_shape) in enumerate(
                    partitioned_variables.iter_slices(full_shape, num_slices, slice_dim)):
                info = partitioned_variables._PartitionInfo(full_shape=full_shape,
                                                            var_offset=offset)
                shard_name = "%s/part_%d" % (name, i)
                shard_dtype, init, init_shape = dtype, initializer, var_shape
                if initializing_from_value:
                    # A given full value is sliced: each shard gets its own rows.
                    with graph.name_scope(shard_name + "/PartitionedInitializer"), \
                            graph.control_dependencies(None):
                        full = convert_to_tensor(initializer, dtype=dtype)
                        init = array_ops.slice(full, offset, var_shape)
                    shard_dtype, init_shape = init.dtype.base_dtype, None
                with graph.name_scope(None):
                    var = self._get_single_variable(
                        shard_name, shape=init_shape, dtype=shard_dtype, initializer=init,
                        regularizer=regularizer, reuse=reuse, trainable=trainable,
                        collections=collections, caching_device=caching_device,
                        validate_shape=validate_shape, use_resource=use_resource,
                        constraint=constraint, partition_info=info)
                var._set_save_slice_info(SaveSliceInfo(name, full_shape, offset, var_shape))
                shards.append(var)
            result = partitioned_variables.PartitionedVariable(
                name=name, shape=shape, dtype=dtype, variable_list=shards, partitions=partitions)
            self._partitioned_vars[name] = result
            return result

    def _get_single_variable(self, name, shape=None, dtype=_dtypes.float32, initializer=None,
                             regularizer=None, reuse=None, trainable=True, collections=None,
                             caching_device=None, validate_shape=True, use_resource=None,
                             constraint=None, partition_info=None, synchronization=None,
                             aggregation=None):
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape (variable %s)."
                             % name)
        dtype = _dtypes.as_dtype(dtype)
        shape = as_shape(shape)
        with self._lock:
            found = self._vars.get(name)
            if found is not None:
                if reuse is False:
                    raise ValueError("Variable %s already exists, disallowed. Did you mean to set "
                                     "reuse=True or reuse=tf.AUTO_REUSE in VarScope?" % name)
                if not shape.is_compatible_with(found.get_shape()):
                    raise ValueError("Trying to share variable %s, but specified shape %s and found "
                                     "shape %s." % (name, shape, found.get_shape()))
                if not dtype.is_compatible_with(found.dtype):
                    raise ValueError("Trying to share variable %s, but specified dtype %s and found "
                                     "dtype %s." % (name, dtype.name, found.dtype.name))
                return found
            if reuse is True:
                raise ValueError("Variable %s does not exist, or was not created with "
                                 "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                                 "VarScope?" % name)
            init_val, variable_dtype = self._initial_value(name, shape, dtype, initializer,
                                                           initializing_from_value, validate_shape,
                                                           partition_info)
            graph = get_default_graph()
            # As TF1's init_scope: a variable and its initializer never depend on the ops of a
            # surrounding control_dependencies block (the initializer must run before any step).
            with graph.control_dependencies(None):
                v = Variable(initial_value=init_val, name=name, trainable=trainable,
                             collections=collections, caching_device=caching_device,
                             dtype=variable_dtype, validate_shape=validate_shape,
                             constraint=constraint, use_resource=use_resource,
                             synchronization=synchronization, aggregation=aggregation)
            self._vars[name] = v
        if regularizer:
            add_regularization_loss(v, regularizer, name)
        return v

    @staticmethod
    def _initial_value(name, shape, dtype, initializer, initializing_from_value, validate_shape,
                       partition_info=None):
        """The Variable's ``initial_value`` (a value or a zero-argument callable) and its dtype."""
        if initializer is None:
            if dtype.is_floating:
                initializer = init_ops.glorot_uniform_initializer()
            elif dtype.is_integer or dtype.is_bool or dtype is _dtypes.string:
                initializer = init_ops.zeros_initializer()
            else:
                raise ValueError("An initializer for variable %s of %s is required"
                                 % (name, dtype.name))
        if initializing_from_value:
            init_shape = getattr(initializer, "get_shape", None)
            if validate_shape and init_shape is not None and not init_shape().is_fully_defined():
                raise ValueError("Variable %s: the initializer tensor %s has shape %s, which is not "
                                 "fully defined; pass validate_shape=False to allow it"
                                 % (name, initializer.name, init_shape()))
            return initializer, None
        if inspect.isclass(initializer):
            initializer = initializer()
        if shape.is_fully_defined():
            dims = shape.as_list()
            if "partition_info" in _parameters(initializer):
                return (lambda: initializer(dims, dtype=dtype, partition_info=partition_info)), dtype
            return (lambda: initializer(dims, dtype=dtype)), dtype
        if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in _parameters(initializer).values()):
            return initializer, None
        raise ValueError("The initializer passed is not valid. It should be a callable with no "
                         "arguments and the shape should not be provided or an instance of "
                         "`tf.keras.initializers.*' and `shape` should be fully defined "
                         "(variable %s, shape %s)." % (name, shape))


def _parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature: assume nothing
        return {}


# -- VariableScope ---------------------------------------------------------------------------------
class VariableScope:
    """A scope's defaults for ``get_variable``: name prefix, initializer, regularizer, reuse ...

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     with tf.variable_scope("foo") as scope:
    ...         v = tf.get_variable("v", [1])
    ...         scope.reuse_variables()
    ...         v1 = tf.get_variable("v", [1])
    >>> scope.name, scope.original_name_scope, v1 is v
    ('foo', 'foo/', True)
    """

    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope="", dtype=_dtypes.float32,
                 use_resource=None, constraint=None):
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self):
        """Make ``get_variable`` in this scope return existing variables."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_dtype(self, dtype):
        self._dtype = dtype

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def get_collection(self, name):
        """The items of collection ``name`` whose names are under this scope."""
        return get_default_graph().get_collection(name, self._name + "/" if self._name else "")

    def trainable_variables(self):
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self):
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self):
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                     custom_getter=None, constraint=None, synchronization=None, aggregation=None):
        """``var_store.get_variable`` of ``<scope name>/<name>`` with this scope's defaults."""
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if use_resource is None:
            use_resource = self._use_resource
        full_name = self._name + "/" + name if self._name else name
        if dtype is not None and initializer is not None and not callable(initializer):
            init_dtype = (initializer.dtype.base_dtype if is_symbolic(initializer)
                          else _dtypes.dtype_of_value(initializer))
            if init_dtype != _dtypes.as_dtype(dtype):
                raise ValueError("Initializer type '%s' and explicit dtype '%s' don't match "
                                 "(variable %s)." % (init_dtype.name, _dtypes.as_dtype(dtype).name,
                                                     full_name))
        if initializer is None:
            initializer = self._initializer
        if constraint is None:
            constraint = self._constraint
        if dtype is None:
            dtype = self._dtype
        # A variable's name depends only on the variable scope, not on the name scope.
        with get_default_graph().name_scope(None):
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable, collections=collections,
                caching_device=caching_device, partitioner=partitioner,
                validate_shape=validate_shape, use_resource=use_resource,
                custom_getter=custom_getter, constraint=constraint,
                synchronization=synchronization, aggregation=aggregation)

    def __repr__(self):
        return "<zps.VariableScope '%s' reuse=%s>" % (self._name, self._reuse)


class _VariableScopeStore(threading.local):
    """Per graph and per thread: the current variable scope and how often each name was opened."""

    def __init__(self):
        super().__init__()
        self.current_scope = VariableScope(False)
        self.variable_scopes_count = {}

    def open_variable_scope(self, scope_name):
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name):
        for k in self.variable_scopes_count:
            if scope_name is None or k.startswith(scope_name + "/"):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name):
        return self.variable_scopes_count.get(scope_name, 0)


class _GraphVariableState:
    __slots__ = ("store", "scopes", "__weakref__")

    def __init__(self):
        self.store = _VariableStore()
        self.scopes = _VariableScopeStore()


# The variable state of each graph lives as long as the graph (outside it: graphs stay plain data).
_graph_states = weakref.WeakKeyDictionary()
_graph_states_lock = threading.Lock()


def _graph_state(graph=None):
    graph = graph if graph is not None else get_default_graph()
    state = _graph_states.get(graph)
    if state is None:
        with _graph_states_lock:
            state = _graph_states.get(graph)
            if state is None:
                state = _graph_states[graph] = _GraphVariableState()
    return state


def _get_default_variable_store():
    return _graph_state().store


def get_variable_scope():
    """The current VariableScope (of this thread, in the default graph)."""
    return _graph_state().scopes.current_scope


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    """A getter calling ``custom_getter`` with the outer scope's getter in between (TF1 nesting)."""
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)

    return wrapped_custom_getter


def _get_unique_variable_scope(prefix):
    """``prefix``, suffixed with _1, _2 ... when already opened in the current variable scope."""
    scopes = _graph_state().scopes
    current = scopes.current_scope
    name = current.name + "/" + prefix if current.name else prefix
    if scopes.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while scopes.variable_scope_count("%s_%d" % (name, idx)) > 0:
        idx += 1
    return "%s_%d" % (prefix, idx)


class _pure_variable_scope:  # noqa: N801 - TF1's name for the variable-scope-only context
    """Enter a variable scope (no name scope): a new sub-scope by name, or a captured scope."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, old_name_scope=None,
                 dtype=None, use_resource=None, constraint=None):
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._overrides = dict(initializer=initializer, regularizer=regularizer,
                               caching_device=caching_device, partitioner=partitioner,
                               dtype=dtype, use_resource=use_resource)
        self._custom_getter = custom_getter
        self._old_name_scope = old_name_scope
        self._constraint = constraint
        self._scopes = _graph_state().scopes
        self._entered = None

    def _apply_overrides(self, scope, base_getter):
        for attr, value in self._overrides.items():
            if value is not None:
                getattr(scope, "set_" + attr)(value)
        if self._custom_getter is not None:
            scope.set_custom_getter(_maybe_wrap_custom_getter(self._custom_getter, base_getter))

    def __enter__(self):
        old = self._scopes.current_scope
        src = self._name_or_scope
        if isinstance(src, VariableScope):
            # Jumping to a captured scope: a copy of it, with this block's overrides.
            self._new_name = src.name
            scope = VariableScope(self._reuse or src.reuse, name=src.name,
                                  initializer=src.initializer, regularizer=src.regularizer,
                                  caching_device=src.caching_device, partitioner=src.partitioner,
                                  dtype=src.dtype, custom_getter=src.custom_getter,
                                  name_scope=src.original_name_scope, use_resource=src.use_resource,
                                  constraint=self._constraint)
            self._apply_overrides(scope, src.custom_getter)
            self._scopes.open_variable_scope(self._new_name)
            self._old_subscopes = dict(self._scopes.variable_scopes_count)
        else:
            # Prolonging the current scope: defaults and reuse are inherited.
            self._new_name = old.name + "/" + src if old.name else src
            scope = VariableScope(self._reuse or old.reuse, name=self._new_name,
                                  initializer=old.initializer, regularizer=old.regularizer,
                                  caching_device=old.caching_device, partitioner=old.partitioner,
                                  dtype=old.dtype, use_resource=old.use_resource,
                                  custom_getter=old.custom_getter,
                                  name_scope=src if self._old_name_scope is None else self._old_name_scope,
                                  constraint=self._constraint)
            self._apply_overrides(scope, old.custom_getter)
            self._scopes.open_variable_scope(self._new_name)
        self._old = old
        self._scopes.current_scope = self._entered = scope
        return scope

    def __exit__(self, *exc):
        if self._scopes.current_scope is not self._entered:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            self._scopes.variable_scopes_count = self._old_subscopes
        else:
            self._scopes.close_variable_subscopes(self._new_name)
        self._scopes.current_scope = self._old


class variable_scope:  # noqa: N801 - TF1's public name
    """Open a variable scope (and a name scope) in which ``get_variable`` creates or reuses variables.

    ``name_or_scope`` is a name (nested under the current variable scope) or a captured
    VariableScope to re-enter; with None, ``default_name`` is used, made unique. ``reuse=True``
    shares existing variables (an error if one is missing), ``tf.AUTO_REUSE`` creates or shares;
    reuse is inherited by nested scopes. The name scope opened for ops is made unique
    (``foo_1/`` on re-entry) while variables keep the variable scope's name (``foo/``).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     def layer():
    ...         with tf.variable_scope("dense", reuse=tf.AUTO_REUSE):
    ...             return tf.get_variable("b", [3], initializer=tf.zeros_initializer())
    ...     print(layer() is layer(), layer().name)
    True dense/b:0
    """

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                 reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope=True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope, VariableScope | str):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope, got %r"
                            % (name_or_scope,))
        if reuse is False:
            reuse = None  # TF1: False means "inherit", exactly like None
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None (or "
                             "tf.AUTO_REUSE), got %r." % (reuse,))
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, got %r"
                            % (auxiliary_name_scope,))
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = reuse
        self._auxiliary_name_scope = auxiliary_name_scope
        self._scope_args = dict(initializer=initializer, regularizer=regularizer,
                                caching_device=caching_device, partitioner=partitioner,
                                custom_getter=custom_getter, dtype=dtype,
                                use_resource=use_resource, constraint=constraint)
        self._graph = next((v.graph for v in (values or []) if is_symbolic(v)), None)
        self._entered = []  # (graph context, name scope context or None, pure variable scope)

    def __enter__(self):
        graph = self._graph if self._graph is not None else get_default_graph()
        graph_cm = graph.as_default()
        graph_cm.__enter__()
        name_cm = None
        try:
            name_cm, pure = self._name_and_variable_scopes(graph)
            scope = pure.__enter__()
        except BaseException:
            if name_cm is not None:
                name_cm.__exit__(*sys.exc_info())
            graph_cm.__exit__(*sys.exc_info())
            raise
        self._entered.append((graph_cm, name_cm, pure))
        return scope

    def _name_and_variable_scopes(self, graph):
        """Enter the name scope for this block; return it and the (unentered) variable scope."""
        name_cm = None
        if not self._auxiliary_name_scope:
            current = graph.get_name_scope()
            name_cm = graph.name_scope(current + "/" if current else "")
        src = self._name_or_scope
        if src is None:
            if self._reuse:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            name_cm = name_cm or graph.name_scope(self._default_name)
            opened = name_cm.__enter__()
            unique = _get_unique_variable_scope(self._default_name)
            return name_cm, _pure_variable_scope(unique, old_name_scope=opened, **self._scope_args)
        short = src if isinstance(src, str) else src.name.split("/")[-1]
        if not (short or name_cm):  # the root scope: no name scope to open
            return None, _pure_variable_scope(src, reuse=self._reuse, **self._scope_args)
        name_cm = name_cm or graph.name_scope(short)
        opened = name_cm.__enter__()
        old_name_scope = opened if isinstance(src, str) else src.original_name_scope
        return name_cm, _pure_variable_scope(src, reuse=self._reuse, old_name_scope=old_name_scope,
                                             **self._scope_args)

    def __exit__(self, *exc):
        graph_cm, name_cm, pure = self._entered.pop()
        try:
            pure.__exit__(*exc)
        finally:
            try:
                if name_cm is not None:
                    name_cm.__exit__(*exc)
            finally:
                graph_cm.__exit__(*exc)


# -- resource variables by default -------------------------------------------------------------------
_DEFAULT_USE_RESOURCE = False


def enable_resource_variables():
    """Make variables created without ``use_resource`` (and outside a variable scope that sets
    it) resource variables, whose reads are snapshots (TF1's ``tf.enable_resource_variables``)."""
    global _DEFAULT_USE_RESOURCE
    _DEFAULT_USE_RESOURCE = True


def disable_resource_variables():
    """Make variables created without ``use_resource`` ref variables again (the default)."""
    global _DEFAULT_USE_RESOURCE
    _DEFAULT_USE_RESOURCE = False


def resource_variables_enabled():
    """Whether variables are resource variables unless told otherwise.

    >>> import zps as tf
    >>> tf.resource_variables_enabled()
    False
    """
    return _DEFAULT_USE_RESOURCE


def default_use_resource():
    """``use_resource`` for a variable created without one: the current variable scope's, else
    the default (``enable_resource_variables``)."""
    scope = get_variable_scope().use_resource
    return _DEFAULT_USE_RESOURCE if scope is None else bool(scope)


def _get_trainable_value(synchronization, trainable):
    # TF 1.15's get_variable: an ON_READ variable is not trainable (and may not be asked to be).
    if synchronization == VariableSynchronization.ON_READ:
        if trainable:
            raise ValueError("Synchronization value can be set to "
                             "VariableSynchronization.ON_READ only for non-trainable variables. "
                             "You have specified trainable=True and "
                             "synchronization=VariableSynchronization.ON_READ.")
        return False
    return True if trainable is None else trainable


@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Route the ``tf.Variable``/``tf.get_variable`` calls of this thread, in the default graph,
    through ``variable_creator(next_creator, **kwargs)`` (TF 1.13+'s ``variable_creator_scope``).

    The creator gets the constructor's keyword arguments and returns a variable, usually by
    calling ``next_creator(**kwargs)`` (the enclosing scope's creator, or the constructor).

    >>> import zps as tf
    >>> def creator(next_creator, **kwargs):
    ...     kwargs["trainable"] = False
    ...     return next_creator(**kwargs)
    >>> with tf.Graph().as_default():
    ...     with tf.variable_creator_scope(creator):
    ...         v = tf.get_variable("v", [2])
    ...     print(v.trainable, tf.trainable_variables())
    False []
    """
    stack = _creator_stack()
    stack.append(variable_creator)
    try:
        yield
    finally:
        stack.pop()


# -- get_variable ----------------------------------------------------------------------------------
def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True,
                 use_resource=None, custom_getter=None, constraint=None, synchronization=None,
                 aggregation=None):
    """Get the variable ``<current variable scope>/<name>`` or create it.

    New variables are initialized by ``initializer`` (an initializer, a callable, a Tensor or a
    Python/numpy value; then ``shape`` must not be given), else the scope's initializer, else
    glorot_uniform for floats and zeros for ints and bools. ``regularizer(variable)`` results go to
    ``GraphKeys.REGULARIZATION_LOSSES``. Reusing follows the scope's ``reuse``. ``use_resource``
    (else the scope's, else ``resource_variables_enabled()``) makes a ResourceVariable.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.get_variable("v", [2], initializer=tf.constant_initializer(3.0))
    ...     with tf.Session() as sess:
    ...         sess.run(tf.global_variables_initializer())
    ...         print(v.name, sess.run(v))
    v:0 [3. 3.]
    """
    return get_variable_scope().get_variable(
        _get_default_variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, custom_getter=custom_getter, constraint=constraint,
        synchronization=synchronization, aggregation=aggregation)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None, partitioner=None,
                       validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                       synchronization=None, aggregation=None):
    """``get_variable`` for a non-trainable variable in ``GraphKeys.LOCAL_VARIABLES``."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
        trainable=False, collections=collections, caching_device=caching_device,
        partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint, synchronization=synchronization,
        aggregation=aggregation)


__all__ = [
    "AUTO_REUSE",
    "enable_resource_variables",
    "disable_resource_variables",
    "resource_variables_enabled",
    "VariableScope",
    "variable_scope",
    "get_variable_scope",
    "get_variable",
    "get_local_variable",
    "no_regularizer",
    "variable_creator_scope",
]
