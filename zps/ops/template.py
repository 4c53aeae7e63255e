"""``tf.make_template``: wrap a function so that all its calls share the variables of the first.

The first call opens a variable scope named after the template (made unique: ``lin``, ``lin_1``
...) and creates the variables the function asks ``get_variable`` for; later calls re-enter that
scope with ``reuse=True``. Each call's ops get a name scope of their own (``lin/``, ``lin_1/``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     def linear(x, scale):
...         w = tf.get_variable("w", [2], initializer=tf.constant_initializer(scale))
...         return tf.multiply(x, w, name="y")
...     lin = tf.make_template("lin", linear, scale=3.0)
...     a, b = lin(tf.constant([1.0, 2.0])), lin(tf.constant([2.0, 2.0]))
...     print(a.name, b.name, [v.name for v in lin.variables])
lin/y:0 lin_1/y:0 ['lin/w:0']
"""

import functools
import traceback

from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import variable_scope as vs


def make_template(name_, func_, create_scope_now_=False, unique_name_=None, custom_getter_=None,
                  **kwargs):
    """A Template calling ``func_(*args, **kwargs, **call_kwargs)`` with shared variables.

    ``func_`` must create its variables with ``tf.get_variable``: the first call creates them
    under the variable scope ``name_`` (made unique), later calls reuse them, and a later call
    that creates a trainable variable raises ValueError. ``create_scope_now_`` captures the
    variable scope now rather than at the first call; ``unique_name_`` names the scope exactly
    (not made unique); ``custom_getter_`` is passed to that scope; ``kwargs`` are bound to
    ``func_``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     scale = tf.make_template("scale", lambda x: x * tf.get_variable("s", []))
    ...     _, _ = scale(1.0), scale(2.0)
    ...     print([v.name for v in scale.trainable_variables], scale.variable_scope_name)
    ['scale/s:0'] scale/
    """
    if kwargs:
        func_ = functools.update_wrapper(functools.partial(func_, **kwargs), func_)
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)


def _skip_common_stack_elements(stacktrace, base_case):
    """The frames of ``stacktrace`` after those it shares with ``base_case``."""
    for i, (trace, base) in enumerate(zip(stacktrace, base_case)):
        if trace != base:
            return stacktrace[i:]
    return stacktrace[-1:]


class Template:
    """A function whose calls share the variables its first call created (see make_template)."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None, custom_getter=None):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func = func
        self._stacktrace = traceback.format_stack()[:-2]
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope = None
        if create_scope_now:
            scope_name = unique_name or vs._get_unique_variable_scope(name)
            with vs._pure_variable_scope(scope_name, custom_getter=custom_getter) as scope:
                self._variable_scope = scope
        self._variables_created = False
        self._first_call = True

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            with vs.variable_scope(self._variable_scope, reuse=not self._first_call):
                return self._call_func(args, kwargs)
        with vs.variable_scope(self._unique_name, self._name,
                               custom_getter=self._custom_getter) as scope:
            self._variable_scope = scope
            return self._call_func(args, kwargs)

    def _call_func(self, args, kwargs):
        try:
            if self._variables_created:
                return self._call_again(args, kwargs)
            if self._first_call:
                self._first_call = False
                try:
                    result = self._func(*args, **kwargs)
                except BaseException:
                    self._first_call = True
                    raise
                self._variables_created = True
                return result
            return self._func(*args, **kwargs)  # a first call still running in another thread
        except Exception as exc:
            # As TF1: the error also says where the template was made.
            trace = "".join(_skip_common_stack_elements(self._stacktrace,
                                                        traceback.format_stack()))
            arg0 = exc.args[0] if exc.args else ""
            exc.args = ("%s\n\noriginally defined at:\n%s" % (arg0, trace),) + exc.args[1:]
            raise

    def _call_again(self, args, kwargs):
        graph = get_default_graph()
        trainable_at_start = len(graph.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        trainable = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        if len(trainable) != trainable_at_start:
            raise ValueError("Trainable variable created when calling a template after the first "
                             "time, perhaps you used tf.Variable when you meant tf.get_variable: "
                             "%s" % (trainable[trainable_at_start:],))
        return result

    name = property(lambda self: self._name, doc="The name given to this Template.")
    func = property(lambda self: self._func, doc="The function given to this Template.")
    variable_scope = property(lambda self: self._variable_scope,
                              doc="The VariableScope of this Template (None before it has one).")

    @property
    def variable_scope_name(self):
        """The name of this Template's variable scope, ending in "/" (None before it has one)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _scope_collection(self, key):
        if not self._variables_created:
            return []
        return get_default_graph().get_collection(key, self.variable_scope_name)

    @property
    def global_variables(self):
        """The global variables created by this Template."""
        return self._scope_collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self):
        """The local variables created by this Template."""
        return self._scope_collection(GraphKeys.LOCAL_VARIABLES)

    @property
    def trainable_variables(self):
        """The trainable variables created by this Template."""
        return self._scope_collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self):
        """The global variables of this Template that are not trainable."""
        trainable = set(self.trainable_variables)
        return [v for v in self.global_variables if v not in trainable]

    @property
    def variables(self):
        """The global and local variables created by this Template."""
        return self.global_variables + self.local_variables

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables


__all__ = ["make_template"]
