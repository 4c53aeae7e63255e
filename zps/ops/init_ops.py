"""zps.ops.init_ops (being written)."""

__all__ = []
