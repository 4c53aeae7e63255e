"""zps.ops.training_ops (being written)."""

__all__ = []
