"""Token prices (``resources/prices.json``, editable), cost estimates and a client's usage tally."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..resources import resources_dir


@lru_cache(maxsize=4)
def load_prices(path: Path | None = None) -> dict[str, tuple[float, float]]:
    """model id -> (USD per 1M input tokens, USD per 1M output tokens)."""
    path = path or resources_dir() / "prices.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    per = float(data.get("per_tokens", 1_000_000))
    scale = 1_000_000 / per
    return {model: (float(p["input"]) * scale, float(p["output"]) * scale)
            for model, p in data.get("models", {}).items()}


def estimate_cost(model: str, tokens_in: int, tokens_out: int,
                  prices: Mapping[str, tuple[float, float]] | None = None) -> float | None:
    """USD for the tokens, from the longest price-table entry ``model`` starts with; None if unknown."""
    prices = load_prices() if prices is None else prices
    model = (model or "").lower()
    matches = [m for m in prices if model == m.lower() or model.startswith(m.lower() + "-")
               or model.startswith(m.lower() + ":")]
    if not matches:
        return None
    price_in, price_out = prices[max(matches, key=len)]
    return (tokens_in * price_in + tokens_out * price_out) / 1_000_000


@dataclass(frozen=True)
class UsageReport:
    calls: int            # successful API calls (a repair counts as a call)
    attempts: int         # HTTP attempts, retries included
    retries: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None   # None when a model is missing from the price table
    models: tuple[str, ...]


@dataclass
class Usage:
    """What one client has spent so far; :meth:`report` prices it."""

    calls: int = 0
    attempts: int = 0
    retries: int = 0
    by_model: dict[str, list[int]] = field(default_factory=dict)

    def add(self, model: str, tokens_in: int, tokens_out: int) -> None:
        self.calls += 1
        acc = self.by_model.setdefault(model, [0, 0])
        acc[0] += tokens_in
        acc[1] += tokens_out

    def report(self) -> UsageReport:
        costs = [estimate_cost(m, t[0], t[1]) for m, t in self.by_model.items()]
        total = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        return UsageReport(self.calls, self.attempts, self.retries,
                           sum(t[0] for t in self.by_model.values()),
                           sum(t[1] for t in self.by_model.values()), total, tuple(self.by_model))
