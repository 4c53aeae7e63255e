"""``tf.keras.optimizers.schedules``: learning rates as functions of the optimizer's step (TF
1.15's ``ExponentialDecay``, ``PiecewiseConstantDecay``, ``PolynomialDecay`` and
``InverseTimeDecay``), given to a Keras optimizer as its ``learning_rate``; the optimizer calls
the schedule with its ``iterations`` before each step.

>>> import zps as tf
>>> schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
>>> with tf.Graph().as_default():
...     print(tf.Session().run(schedule(4)))
0.025
"""

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor as _to_tensor
from zps.ops import array_ops, math_ops


def _pow(x, y):
    # TF's float32 pow rounds correctly; numpy's may not: go by float64 and round once.
    result = math_ops.pow(math_ops.cast(x, dtypes.float64), math_ops.cast(y, dtypes.float64))
    return math_ops.cast(result, x.dtype.base_dtype)


class LearningRateSchedule:
    """The base of learning rate schedules: ``schedule(step)`` -> the learning rate tensor."""

    def __call__(self, step):
        raise NotImplementedError("%s does not define __call__" % type(self).__name__)

    def get_config(self):
        """The arguments that rebuild the schedule."""
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        """The schedule ``get_config`` describes."""
        return cls(**config)


class _RateDecay(LearningRateSchedule):
    """The arguments of ``ExponentialDecay`` and ``InverseTimeDecay``: ``initial_learning_rate``
    decays at ``decay_rate`` by ``step / decay_steps`` (floored when ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        self._config = dict(initial_learning_rate=initial_learning_rate, decay_steps=decay_steps,
                            decay_rate=decay_rate, staircase=staircase, name=name)

    def _rates_and_progress(self, step):
        """``initial_learning_rate``, ``decay_rate`` and ``step / decay_steps`` (floored when
        ``staircase``) as tensors of the initial rate's dtype."""
        c = self._config
        lr = _to_tensor(c["initial_learning_rate"], name="initial_learning_rate")
        p = math_ops.cast(step, lr.dtype) / math_ops.cast(c["decay_steps"], lr.dtype)
        if c["staircase"]:
            p = math_ops.floor(p)
        return lr, math_ops.cast(c["decay_rate"], lr.dtype), p


class ExponentialDecay(_RateDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (the exponent floored when
    ``staircase``)."""

    def __call__(self, step):
        lr, decay_rate, p = self._rates_and_progress(step)
        return math_ops.multiply(lr, _pow(decay_rate, p))


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i - 1] < step <= boundaries[i]``, ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, name=None):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of "
                             "values: got %d boundaries and %d values"
                             % (len(boundaries), len(values)))
        self._config = dict(boundaries=list(boundaries), values=list(values), name=name)

    def __call__(self, step):
        boundaries, values = self._config["boundaries"], self._config["values"]
        values_t = [_to_tensor(v) for v in values]
        x = _to_tensor(step)
        result = values_t[-1]
        for boundary, value in reversed(list(zip(boundaries, values_t))):
            result = array_ops.where(math_ops.less_equal(x, math_ops.cast(boundary, x.dtype)),
                                     value, result)
        return result


class PolynomialDecay(LearningRateSchedule):
    """``(initial - end) * (1 - step / decay_steps) ** power + end``, ``step`` capped at
    ``decay_steps`` (or, with ``cycle``, ``decay_steps`` grown to the next multiple)."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name=None):
        self._config = dict(initial_learning_rate=initial_learning_rate, decay_steps=decay_steps,
                            end_learning_rate=end_learning_rate, power=power, cycle=cycle,
                            name=name)

    def __call__(self, step):
        c = self._config
        lr = _to_tensor(c["initial_learning_rate"], name="initial_learning_rate")
        dtype = lr.dtype
        end = math_ops.cast(c["end_learning_rate"], dtype)
        power = math_ops.cast(c["power"], dtype)
        step = math_ops.cast(step, dtype)
        decay_steps = math_ops.cast(c["decay_steps"], dtype)
        if c["cycle"]:
            multiplier = array_ops.where(math_ops.equal(step, 0), math_ops.cast(1.0, dtype),
                                         math_ops.ceil(step / decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            step = math_ops.minimum(step, decay_steps)
        p = step / decay_steps
        return (lr - end) * _pow(1 - p, power) + end


class InverseTimeDecay(_RateDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the quotient floored
    when ``staircase``)."""

    def __call__(self, step):
        lr, decay_rate, p = self._rates_and_progress(step)
        return lr / (1.0 + decay_rate * p)


_CLASSES = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay,
                                          PolynomialDecay, InverseTimeDecay)}


def serialize(learning_rate_schedule):
    """``{"class_name", "config"}`` of a schedule."""
    return {"class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config()}


def deserialize(config, custom_objects=None):
    """The schedule a ``serialize`` dict describes."""
    classes = dict(_CLASSES, **(custom_objects or {}))
    if config.get("class_name") not in classes:
        raise ValueError("Unknown learning rate schedule: %r (known: %s)"
                         % (config.get("class_name"), ", ".join(sorted(classes))))
    return classes[config["class_name"]].from_config(config.get("config", {}))


__all__ = ["ExponentialDecay", "InverseTimeDecay", "LearningRateSchedule",
           "PiecewiseConstantDecay", "PolynomialDecay", "deserialize", "serialize"]
