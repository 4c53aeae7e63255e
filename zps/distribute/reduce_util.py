"""``tf.distribute.ReduceOp``: how values of the replicas are combined (TF's reduce_util.py)."""

import enum

from zps.ops.variables import VariableAggregation


class ReduceOp(enum.Enum):
    """How ``Strategy.reduce``/``all_reduce`` combine the replicas' values: SUM or MEAN.

    >>> import zps as tf
    >>> tf.distribute.ReduceOp("SUM") is tf.distribute.ReduceOp.SUM
    True
    """

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        """The ReduceOp of a VariableAggregation (SUM or MEAN; others are TF's ValueError)."""
        mapping = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}
        reduce_op = mapping.get(aggregation)
        if not reduce_op:
            raise ValueError("Could not convert from `tf.VariableAggregation` %s to "
                             "`tf.distribute.ReduceOp` type" % aggregation)
        return reduce_op


def as_reduce_op(reduce_op):
    """A ReduceOp from a ReduceOp or its name in any case ("sum", "MEAN")."""
    if isinstance(reduce_op, str):
        return ReduceOp(reduce_op.upper())
    if not isinstance(reduce_op, ReduceOp):
        raise ValueError("Expected a tf.distribute.ReduceOp (SUM or MEAN) or its name, got %r"
                         % (reduce_op,))
    return reduce_op


__all__ = ["ReduceOp"]
