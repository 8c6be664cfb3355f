"""The audit pipeline: responses in, statements, sources and verdicts out, all into the store.

Data flows one way: ingest -> parse -> fetch -> evidence -> judge -> store. Everything is
asyncio; fetches and judge calls have bounded concurrency, a response's pairs are judged as
soon as each of its sources arrives (so fetching and judging overlap), and verdicts are committed
in short windows (COMMIT_WINDOW_PAIRS verdicts or COMMIT_WINDOW_S seconds, whichever comes first),
so an interrupted run resumes with only the missing pairs.

``audit`` holds the run's lifecycle (``Audit``: create, execute, resume, cancel; ``reaudit``;
``finalise_verdict``, the rules every stored verdict obeys), ``sources`` the run's source cache,
``commits`` the commit window, ``counters`` the progress counts they share.
"""
from __future__ import annotations

from ..config import RunConfig  # defined beside build_run_config; still importable from here
from .audit import Audit, RunCancelled, finalise_verdict, reaudit, run_sync
from .commits import COMMIT_WINDOW_PAIRS, COMMIT_WINDOW_S, CommitWindow
from .counters import Counters
from .sources import FETCH_SETTINGS_META, TRANSIENT, SourceCache, cached_source_reusable

__all__ = ["COMMIT_WINDOW_PAIRS", "COMMIT_WINDOW_S", "FETCH_SETTINGS_META", "TRANSIENT", "Audit", "CommitWindow",
           "Counters", "RunCancelled", "RunConfig", "SourceCache", "cached_source_reusable", "finalise_verdict",
           "reaudit", "run_sync"]
