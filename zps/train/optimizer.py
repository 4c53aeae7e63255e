"""Optimizers (being written)."""

__all__ = []
