"""Exact checks of a statement against its evidence, without a model (quantities first)."""
