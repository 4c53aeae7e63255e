"""``tf.data.Options``: a dataset's options, set with ``Dataset.with_options`` and read with
``Dataset.options()``.

zps keeps every option TF1 programs commonly set (determinism, the static optimizations,
threading, autotuning, auto-sharding) with TF's names, types and merge rules, so pipelines
written for TensorFlow build unchanged; they change nothing in zps, whose pipelines make each
element when it is pulled, in order (deterministically), with no threads of their own.

>>> import zps as tf
>>> options = tf.data.Options()
>>> options.experimental_deterministic = False
>>> options.experimental_optimization.map_parallelization = True
>>> options.threading.private_threadpool_size = 4
>>> with tf.Graph().as_default():
...     ds = tf.data.Dataset.range(3).with_options(options).map(lambda x: x + 1)
...     print(ds.options().deterministic, ds.options().threading.private_threadpool_size)
False 4
"""

import numbers


class _OptionsGroup:
    """Options with a fixed set of names (others are an AttributeError), each of one type (a
    value of another is a TypeError), unset (None) until set; nested groups are attributes too.

    ``_options``: name -> type (None: any value, for TF's enum options); ``_groups``: name ->
    group class; ``_aliases``: TF1's experimental_ names -> the name they stand for.
    """

    _options = {}
    _groups = {}
    _aliases = {}

    def __init__(self):
        object.__setattr__(self, "_values", {})
        for name, cls in self._groups.items():
            self._values[name] = cls()

    def __getattr__(self, name):
        name = type(self)._aliases.get(name, name)
        if name in self._options or name in self._groups:
            return self._values.get(name)
        raise AttributeError("%s has no option %r" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        name = self._aliases.get(name, name)
        if name in self._groups:
            if not isinstance(value, self._groups[name]):
                raise TypeError("Property \"%s\" must be of type %s, got: %r"
                                % (name, self._groups[name].__name__, value))
        elif name in self._options:
            kind = self._options[name]
            if value is not None and kind is not None and (
                    not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
                raise TypeError("Property \"%s\" must be of type %s, got: %r (type: %s)"
                                % (name, kind.__name__, value, type(value).__name__))
        else:
            raise AttributeError("Cannot set the property %s on %s." % (name, type(self).__name__))
        self._values[name] = value

    def __eq__(self, other):
        return type(self) is type(other) and self._values == other._values

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % kv for kv in sorted(self._values.items()) if kv[1] is not None))

    def _merged(self, other):
        """A new group: this one's values, overridden by those ``other`` sets (TF's rule)."""
        out = type(self)()
        for name in self._options:
            value = other._values.get(name)
            out._values[name] = self._values.get(name) if value is None else value
        for name in self._groups:
            out._values[name] = self._values[name]._merged(other._values[name])
        return out


class OptimizationOptions(_OptionsGroup):
    """TF's static tf.data optimizations (``Options.experimental_optimization``): accepted and
    kept; zps's pipelines have no optimization passes."""

    _options = dict.fromkeys(
        ["apply_default_optimizations", "filter_fusion", "filter_parallelization",
         "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
         "map_parallelization", "noop_elimination", "parallel_batch",
         "seq_interleave_prefetch", "shuffle_and_repeat_fusion"], bool)


class ThreadingOptions(_OptionsGroup):
    """``Options.threading``: accepted and kept; zps's pipelines run in the pulling step."""

    _options = {"max_intra_op_parallelism": numbers.Integral,
                "private_threadpool_size": numbers.Integral}


class AutotuneOptions(_OptionsGroup):
    """``Options.autotune``: accepted and kept (AUTOTUNE parallelism is the CPU count)."""

    _options = {"autotune_algorithm": None, "cpu_budget": numbers.Integral, "enabled": bool,
                "initial_parallelism": numbers.Integral, "min_parallelism": numbers.Integral,
                "ram_budget": numbers.Integral}


class DistributeOptions(_OptionsGroup):
    """``Options.experimental_distribute``: accepted and kept; zps does not auto-shard (each
    worker reads what its program gives it, as in TF1's between-graph replication)."""

    _options = {"auto_shard_policy": None, "num_devices": numbers.Integral}


class Options(_OptionsGroup):
    """A dataset's options (TF's ``tf.data.Options``): ``deterministic`` (alias
    ``experimental_deterministic``), ``experimental_optimization``, ``threading`` (alias
    ``experimental_threading``), ``autotune``, ``experimental_distribute`` and a few flags.

    ``merge(options)`` gives new options where each option ``options`` sets wins; a dataset's
    ``options()`` merges those of its inputs, then its own.
    """

    _options = {"deterministic": bool, "experimental_slack": bool,
                "experimental_external_state_policy": None,
                "experimental_symbolic_checkpoint": bool, "experimental_warm_start": bool,
                "dataset_name": str, "framework_type": list}
    _groups = {"autotune": AutotuneOptions, "experimental_distribute": DistributeOptions,
               "experimental_optimization": OptimizationOptions, "threading": ThreadingOptions}
    _aliases = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}

    def merge(self, options):
        """New Options: these, overridden by what ``options`` sets."""
        if not isinstance(options, Options):
            raise TypeError("Options.merge takes a tf.data.Options, got %r" % (options,))
        return self._merged(options)


__all__ = ["AutotuneOptions", "DistributeOptions", "OptimizationOptions", "Options",
           "ThreadingOptions"]
