"""Exact checks of a statement against evidence sentences: pure functions, stdlib only, no model."""
