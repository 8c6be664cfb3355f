"""What a run's judges cost and where they disagree, from stored rows only.

- :func:`disagreements`: the statement x source pairs on which the run's judges gave different
  decided labels (judge errors aside), so a reviewer looks there first;
- :func:`run_usage`: calls, tokens in/out and an estimated cost per judge (and per cleanup
  writer), priced from ``resources/prices.json`` (editable; unknown models cost ``None``).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..llm.spec import model_name
from ..metrics import Consensus, ResponseAssessment, assess_run
from ..models import Label
from ..store import RunData, Store, load_json


def disagreements(data: RunData, assessed: Sequence[ResponseAssessment] | None = None) -> list[dict[str, Any]]:
    """Every pair with at least two different decided labels, with each judge's label and the consensus."""
    assessed = assess_run(data) if assessed is None else assessed
    out: list[dict[str, Any]] = []
    for r in assessed:
        for s in r.statements:
            if not s.disagreement:
                continue
            by_url: dict[str, dict[str, str]] = {}
            for v in data.verdicts.get(s.row.pk, []):
                by_url.setdefault(v.url, {})[v.verdict.judge_id] = v.verdict.label.value
            for url, labels in by_url.items():
                decided = {lab for lab in labels.values() if lab != Label.JUDGE_ERROR.value}
                if len(decided) < 2:
                    continue
                consensus = s.pair_labels.get(url)
                out.append({"statement": f"{r.rid}/s{s.row.statement.index + 1}", "response": r.rid,
                            "text": s.row.statement.text, "url": url, "labels": labels,
                            "consensus": consensus.value if consensus else None,
                            "rule": data.run.config.get("consensus", Consensus.FIRST.value)})
    return out


def run_usage(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    """``{judge_id: {"calls", "tokens_in", "tokens_out", "cost_usd", "model_versions"}}`` for a run.

    ``calls`` counts judged pairs that reported tokens (per-source batching shares one call's
    tokens among its pairs). Cleanup writers appear as ``"<spec> (cleanup)"``. ``cost_usd`` is
    None when a model is missing from the price table, 0.0 for a judge that used no tokens.
    """
    from ..llm.pricing import estimate_cost

    run = store.get_run(run_id)
    # judge -> model -> [calls, tokens_in, tokens_out]
    acc: dict[str, dict[str, list[int]]] = {j: {} for j in run.judges}
    versions: dict[str, set[str]] = {}   # the model versions the verdicts themselves recorded
    for judge_id, model, calls, tin, tout in store.verdict_usage(run.id):
        if model:
            versions.setdefault(judge_id, set()).add(model)
        slot = acc.setdefault(judge_id, {}).setdefault(model or model_name(judge_id), [0, 0, 0])
        slot[0] += calls
        slot[1] += tin
        slot[2] += tout
    for judge_id, verification in store.suggestion_writers(run.id):
        writer = load_json(verification, {}).get("writer") or {}
        if not writer:
            continue
        slot = acc.setdefault(f"{judge_id} (cleanup)", {}).setdefault(
            writer.get("model") or model_name(judge_id), [0, 0, 0])
        slot[0] += 1
        slot[1] += int(writer.get("tokens_in") or 0)
        slot[2] += int(writer.get("tokens_out") or 0)
    out: dict[str, dict[str, Any]] = {}
    for judge_id, models in acc.items():
        calls = sum(m[0] for m in models.values())
        tokens_in = sum(m[1] for m in models.values())
        tokens_out = sum(m[2] for m in models.values())
        cost: float | None = 0.0
        for model, (_, tin, tout) in models.items():
            if not tin and not tout:
                continue
            part = estimate_cost(model, tin, tout)
            if part is None and judge_id.startswith("openai-compatible:"):
                part = 0.0  # a local server: no price per token
            cost = None if part is None or cost is None else cost + part
        out[judge_id] = {"calls": calls, "tokens_in": tokens_in, "tokens_out": tokens_out,
                         "cost_usd": None if cost is None else round(cost, 6),
                         "model_versions": sorted(versions.get(judge_id, ()))}
    return out
