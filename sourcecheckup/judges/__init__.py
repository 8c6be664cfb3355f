"""Judges decide whether a source supports a statement. One module per backend.

A judge is chosen by a spec string: ``builtin``, ``openai:gpt-4o``,
``anthropic:claude-sonnet-4-5``, ``openai-compatible:http://localhost:11434/v1#llama3.1``,
``local:/path/or/model-id``. Backends register themselves with :func:`register`.
"""
from __future__ import annotations

from .base import Judge, JudgeSpecError, make_judge, register, registered_kinds, validate_judge_spec

__all__ = ["Judge", "JudgeSpecError", "make_judge", "register", "registered_kinds", "validate_judge_spec"]
