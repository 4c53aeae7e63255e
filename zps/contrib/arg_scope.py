"""TF1's ``arg_scope`` (``tf.contrib.framework.arg_scope``, ``slim.arg_scope``): default keyword
arguments for a set of functions while a ``with`` block runs.

A function takes part once decorated with ``add_arg_scope`` (contrib's layers, ``model_variable``
and ``variable`` are). Inside ``arg_scope([f, g], k=v)`` each call of ``f`` or ``g`` gets ``k=v``
unless the call passes ``k`` itself; nested scopes add to (and override) the outer one's values,
and ``arg_scope(scope_dict)`` reopens a scope that an earlier ``with arg_scope(...) as sc``
yielded. As in TF1 the scopes are one stack for the process (not per thread).

>>> import zps as tf
>>> slim = tf.contrib.slim
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 8, 8, 3])
...     with slim.arg_scope([slim.conv2d], padding="VALID", activation_fn=None):
...         y = slim.conv2d(x, 4, [3, 3], scope="conv1")
...         z = slim.conv2d(x, 4, [3, 3], padding="SAME", scope="conv2")
...     print(y.get_shape().as_list(), z.get_shape().as_list(), y.op.type)
[None, 6, 6, 4] [None, 8, 8, 4] BiasAdd
"""

import contextlib
import functools
import inspect

__all__ = ["add_arg_scope", "arg_scope", "arg_scope_func_key", "arg_scoped_arguments",
           "current_arg_scope", "has_arg_scope"]

_STACK = [{}]   # the scopes entered, innermost last: {function key: {argument: value}}
_DECORATED = {}   # function key -> the names of the keyword arguments it takes


def current_arg_scope():
    """The innermost scope: ``{function key: {argument: value}}``."""
    return _STACK[-1]


def arg_scope_func_key(func):
    """The key under which scopes hold ``func``'s arguments (the same for the decorated function
    and the one it wraps)."""
    return getattr(func, "_key_op", str(func))


def _keyword_names(func):
    """The parameters of ``func`` that have a default (TF1's ``arg_scoped_arguments``)."""
    return tuple(name for name, p in inspect.signature(func).parameters.items()
                 if p.default is not inspect.Parameter.empty
                 and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _takes_any_keyword(func):
    return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(func).parameters.values())


def add_arg_scope(func):
    """Decorate ``func`` so that ``arg_scope`` can give it default keyword arguments."""
    key = arg_scope_func_key(func)
    accepted = set(inspect.signature(func).parameters)
    open_ended = _takes_any_keyword(func)

    @functools.wraps(func)
    def func_with_args(*args, **kwargs):
        scoped = current_arg_scope().get(key)
        if scoped:
            if not open_ended:
                unknown = sorted(set(scoped) - accepted - set(kwargs))
                if unknown:
                    raise TypeError(
                        "%s() got the argument(s) %s from an enclosing arg_scope, which it does "
                        "not take: list only functions that take them in arg_scope([...], %s=...)"
                        % (func.__name__, ", ".join(map(repr, unknown)), unknown[0]))
            kwargs = dict(scoped, **kwargs)
        return func(*args, **kwargs)

    _DECORATED[key] = _keyword_names(func)
    func_with_args._key_op = key
    return func_with_args


def has_arg_scope(func):
    """Whether ``func`` was decorated with ``add_arg_scope``."""
    return arg_scope_func_key(func) in _DECORATED


def arg_scoped_arguments(func):
    """The names of the keyword arguments an ``arg_scope`` can give ``func`` (decorated)."""
    if not has_arg_scope(func):
        raise ValueError("%s is not decorated with @add_arg_scope" % _name(func))
    return _DECORATED[arg_scope_func_key(func)]


def _name(func):
    return "%s.%s" % (getattr(func, "__module__", "?"), getattr(func, "__name__", func))


@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """Give the functions of ``list_ops_or_scope`` (a list or tuple of ``add_arg_scope``
    functions) the default keyword arguments ``kwargs`` inside the block; or, given a scope (a
    dict an earlier ``arg_scope`` yielded) and no ``kwargs``, make that scope current again.
    Yields the scope now current."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by suppling a dictionary, kwargs "
                             "must be empty.")
        scope = dict(list_ops_or_scope)
    else:
        if not isinstance(list_ops_or_scope, list | tuple):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope "
                            "(i.e. dict), got %s" % type(list_ops_or_scope).__name__)
        scope = dict(current_arg_scope())
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError("%s is not decorated with @add_arg_scope" % _name(op))
            key = arg_scope_func_key(op)
            scope[key] = dict(scope.get(key, {}), **kwargs)
    _STACK.append(scope)
    try:
        yield scope
    finally:
        _STACK.pop()
