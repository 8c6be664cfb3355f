"""The run's progress counts, shared by the audit, its source cache and its commit window; every
progress event carries them."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Counters:
    responses_total: int = 0
    responses_done: int = 0
    sources_total: int = 0
    sources_done: int = 0
    pairs_total: int = 0           # statement x source pairs (one pair is judged by every judge)
    pairs_done: int = 0            # pairs every judge has judged
    verdicts_total: int = 0        # one per pair and judge
    verdicts_done: int = 0
    fetch_failures: int = 0
    judge_errors: int = 0
