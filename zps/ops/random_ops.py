"""zps.ops.random_ops (being written)."""

__all__ = []
