"""zps.ops.embedding_ops (being written)."""

__all__ = []
