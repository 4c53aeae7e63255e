"""zps.ops.clip_ops (being written)."""

__all__ = []
