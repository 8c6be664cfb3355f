"""Two runs side by side: metric differences with bootstrap intervals, changed statements and sources.

Statements are matched by response id and statement text (the same answer audited twice);
sources by cited URL. The difference B - A of each metric gets a percentile interval from
resampling both runs independently (seeded), so "no change" is a claim with a width.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .metrics import BOOTSTRAP_RESAMPLES, ResponseAssessment, assess_run, compute_metrics, percent, wilson_interval
from .references.model import is_reference_key
from .store import RunData, Store

SAME_RUN_WARNING = ("A and B are the same run: there is nothing to compare (every difference would be zero "
                    "by construction). Pick two different runs.")
NO_SHARED_WARNING = ("The runs share no statements (they audited different answers): the differences below compare "
                     "different answers, not a change in the same answers, and say nothing about a judge or a fix.")

METRICS = ("url_validity", "statement_support", "response_support", "unused_sources", "answer_citation_validity")
# the other studies' figures (metrics.studies), compared where either run has their rows
STUDY_METRICS = ("refusal_accuracy", "context_relevance", "adversarial_safety")

# how a matched statement's status moved from A to B: only "support_changed" is a change of support (both runs
# decided it, and differently); the rest are named apart, never counted as one
MOVES = {
    "support_changed": "support changed",
    "source_now_read": "no readable source → judged: a cited source was read in B (still not supported)",
    "source_now_unreadable": "judged → no readable source: no cited source could be read in B",
    "decided": "undecided → decided",
    "undecided": "decided → undecided",
    "status_changed": "status changed",
}


def statement_move(status_a: str, status_b: str, supported_a: bool | None, supported_b: bool | None) -> str:
    """The key in :data:`MOVES` of a statement whose status is ``status_a`` in A and ``status_b`` in B."""
    if supported_a is not None and supported_b is not None and supported_a != supported_b:
        return "support_changed"
    if status_a == "no_readable_source" and supported_b is False:
        return "source_now_read"
    if status_b == "no_readable_source" and supported_a is False:
        return "source_now_unreadable"
    if supported_a is None and supported_b is not None:
        return "decided"
    if supported_a is not None and supported_b is None:
        return "undecided"
    return "status_changed"


def source_change(a: Any, b: Any) -> str | None:
    """What changed about one cited URL between two runs' fetches (``Source`` each), or None: "content
    changed" only when both runs read its text and the bytes differ; a fetch outcome that moved (refused →
    fetched, dead → read) is named as that move, never as changed content."""
    if a.valid and b.valid:
        return "content changed" if a.sha256 != b.sha256 else None
    if a.status is not b.status:
        return f"{a.status.plain} → {b.status.plain}"
    if a.valid != b.valid:
        return f"{a.status.plain}: text read in {'A' if a.valid else 'B'} only"
    return None


@dataclass(frozen=True)
class Difference:
    metric: str
    a: float | None
    b: float | None
    diff: float | None
    ci95: tuple[float | None, float | None]
    n_a: int
    n_b: int

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "a": self.a, "b": self.b, "diff": self.diff, "ci95": list(self.ci95),
                "n_a": self.n_a, "n_b": self.n_b}


def metric_outcomes(data: RunData, assessed: Sequence[ResponseAssessment]) -> dict[str, list[bool]]:
    """The 0/1 outcomes behind each metric, as :func:`metrics.compute_metrics` counts them."""
    out: dict[str, list[bool]] = {m: [] for m in METRICS}
    for r in assessed:
        for url in r.urls:
            src = data.sources.get(url)
            if src is not None and not is_reference_key(url):   # pending, or a written reference: in no URL figure
                out["url_validity"].append(src.source.valid)
        for s in r.statements:
            if s.status.supported is not None:
                out["statement_support"].append(s.status.supported)
        if r.supported is not None:
            out["response_support"].append(r.supported)
        out["unused_sources"].extend([True] * len(r.unused_urls))
        out["unused_sources"].extend([False] * (len(r.valid_urls) - len(r.unused_urls) - len(r.undecided_urls)))
        urls = [u for u in r.urls if not is_reference_key(u)]
        if urls and all(u in data.sources for u in urls):   # Almanac: 1 only when every citation is valid
            out["answer_citation_validity"].append(all(data.sources[u].source.valid for u in urls))
    return out


def difference(a: Sequence[bool], b: Sequence[bool], metric: str = "", *, seed: int = 0,
               resamples: int = BOOTSTRAP_RESAMPLES) -> Difference:
    """B - A with a percentile bootstrap interval (each run resampled on its own)."""
    if not a or not b:
        va = sum(a) / len(a) if a else None
        vb = sum(b) / len(b) if b else None
        return Difference(metric, va, vb, None, (None, None), len(a), len(b))
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    da = xa[rng.integers(0, len(xa), size=(resamples, len(xa)))].mean(axis=1)
    db = xb[rng.integers(0, len(xb), size=(resamples, len(xb)))].mean(axis=1)
    lo, hi = np.percentile(db - da, [2.5, 97.5])
    va, vb = float(xa.mean()), float(xb.mean())
    if hi - lo <= 0:   # every resample alike (all 0 or all 1): Newcombe's score interval instead of a point
        la, ua = wilson_interval(int(xa.sum()), len(xa))
        lb, ub = wilson_interval(int(xb.sum()), len(xb))
        d = vb - va
        lo = d - float(np.sqrt((vb - lb) ** 2 + (ua - va) ** 2))
        hi = d + float(np.sqrt((ub - vb) ** 2 + (va - la) ** 2))
    return Difference(metric, va, vb, vb - va, (round(float(lo), 6), round(float(hi), 6)), len(xa), len(xb))


def _same_database(a: Store, b: Store) -> bool:
    if a is b:
        return True
    try:
        return Path(a.path).resolve() == Path(b.path).resolve() and str(a.path) != ":memory:"
    except OSError:
        return False


def compare_runs(store_a: Store, run_a: str, run_b: str, *, store_b: Store | None = None,
                 seed: int = 0, with_overrides: bool = False) -> dict[str, Any]:
    """Run B against run A. ``with_overrides``: count reviewer overrides (the app's "With reviewer
    overrides" box, `compare --with-reviews`); by default the judges alone, as every headline is.
    ``warnings`` says when the comparison means little: the same run twice, or runs that share no
    statements. Each changed statement carries its ``move`` (:data:`MOVES`); ``support_changed`` counts
    only the statements both runs decided, differently."""
    from .review.labels import overrides as review_overrides

    store_b = store_b or store_a
    data_a, data_b = store_a.load_run(run_a), store_b.load_run(run_b)
    ov_a = review_overrides(store_a, data_a.run.id) if with_overrides else {}
    ov_b = review_overrides(store_b, data_b.run.id) if with_overrides else {}
    as_a, as_b = assess_run(data_a, overrides=ov_a or None), assess_run(data_b, overrides=ov_b or None)
    out_a, out_b = metric_outcomes(data_a, as_a), metric_outcomes(data_b, as_b)
    same_run = data_a.run.id == data_b.run.id and _same_database(store_a, store_b)
    if same_run:
        def rate(outcomes: Sequence[bool]) -> float | None:
            return sum(outcomes) / len(outcomes) if outcomes else None

        diffs = [Difference(m, rate(out_a[m]), rate(out_a[m]), None, (None, None), len(out_a[m]), len(out_b[m]))
                 for m in METRICS]
    else:
        diffs = [difference(out_a[m], out_b[m], m, seed=seed + i) for i, m in enumerate(METRICS)]

    def statuses(assessed: Sequence[ResponseAssessment]) -> dict[tuple[str, str], tuple[str, bool | None]]:
        found: dict[tuple[str, str], tuple[str, bool | None]] = {}
        for r in assessed:
            for s in r.statements:
                found.setdefault((r.rid, s.row.statement.text), (s.status.value, s.status.supported))
        return found

    sa, sb = statuses(as_a), statuses(as_b)
    changed_statements = []
    moves: dict[str, int] = {}
    for key in sorted(set(sa) & set(sb)):
        (status_a, sup_a), (status_b, sup_b) = sa[key], sb[key]
        if status_a != status_b:
            move = statement_move(status_a, status_b, sup_a, sup_b)
            changed_statements.append({"response_id": key[0], "statement": key[1], "status_a": status_a,
                                       "status_b": status_b, "supported_a": sup_a, "supported_b": sup_b,
                                       "move": move})
            moves[move] = moves.get(move, 0) + 1
    changed_sources = []
    for url in sorted(set(data_a.sources) & set(data_b.sources)):
        a, b = data_a.sources[url].source, data_b.sources[url].source
        change = source_change(a, b)
        if change is not None:
            changed_sources.append({"url": url, "sha256_a": a.sha256, "sha256_b": b.sha256, "status_a": a.status.value,
                                    "status_b": b.status.value, "fetched_at_a": a.fetched_at,
                                    "fetched_at_b": b.fetched_at, "content_changed": change == "content changed",
                                    "change": change})
    matched = len(set(sa) & set(sb))
    expert = _expert_differences(store_a, data_a.run.id, store_b, data_b.run.id, same_run, seed)
    studies = _study_differences(store_a, data_a.run.id, store_b, data_b.run.id, same_run, seed)
    warnings = [SAME_RUN_WARNING] if same_run else ([NO_SHARED_WARNING] if not matched else [])
    return {
        "warnings": warnings,
        "same_run": same_run,
        "comparable": not same_run and matched > 0,
        "with_overrides": with_overrides,
        "overrides_a": len(ov_a),
        "overrides_b": len(ov_b),
        "run_a": {"id": data_a.run.id, "created_at": data_a.run.created_at, "judges": data_a.run.judges,
                  "database": str(store_a.path)},
        "run_b": {"id": data_b.run.id, "created_at": data_b.run.created_at, "judges": data_b.run.judges,
                  "database": str(store_b.path)},
        "metrics_a": compute_metrics(data_a, as_a, overrides=ov_a or None).as_dict(),
        "metrics_b": compute_metrics(data_b, as_b, overrides=ov_b or None).as_dict(),
        "differences": [d.as_dict() for d in diffs],
        "statements_matched": len(set(sa) & set(sb)),
        "statements_only_a": len(set(sa) - set(sb)),
        "statements_only_b": len(set(sb) - set(sa)),
        "changed_statements": changed_statements,
        "support_changed": moves.get("support_changed", 0),
        "statement_moves": dict(sorted(moves.items())),
        "sources_matched": len(set(data_a.sources) & set(data_b.sources)),
        "changed_sources": changed_sources,
        **({"expert_differences": expert} if expert else {}),
        **({"study_differences": studies} if studies else {}),
    }


def _study_differences(store_a: Store, run_a: str, store_b: Store, run_b: str, same_run: bool,
                       seed: int) -> list[dict[str, Any]]:
    """B - A for refusal accuracy, context relevance and adversarial safety, each with the interval
    :func:`difference` draws; [] when neither run has their rows."""
    from .metrics.studies import study_outcomes

    out_a, out_b = study_outcomes(store_a, run_a), study_outcomes(store_b, run_b)
    if not (out_a or out_b):
        return []
    diffs = []
    for i, m in enumerate(STUDY_METRICS):
        a, b = out_a.get(m, []), out_b.get(m, [])
        if same_run:
            va = sum(a) / len(a) if a else None
            diffs.append(Difference(m, va, va, None, (None, None), len(a), len(b)).as_dict())
        else:
            diffs.append(difference(a, b, m, seed=seed + 70 + i).as_dict())
    return diffs


def _expert_differences(store_a: Store, run_a: str, store_b: Store, run_b: str, same_run: bool,
                        seed: int) -> list[dict[str, Any]]:
    """B - A for OLAPH's comprehensiveness and hallucination (per expert statement) and EVAL's similarity (per
    answer), each with a percentile bootstrap interval; [] when neither run has expert material."""
    from .expert.metrics import MEASURES, expert_outcomes, expert_section
    from .expert.model import SIMILARITY_METHODS

    sec_a, sec_b = expert_section(store_a, run_a), expert_section(store_b, run_b)
    if not (sec_a["answers_with_expert_material"] or sec_b["answers_with_expert_material"]):
        return []
    out_a, out_b = expert_outcomes(sec_a), expert_outcomes(sec_b)
    diffs = []
    for i, m in enumerate((*MEASURES, *SIMILARITY_METHODS)):
        a, b = out_a[m], out_b[m]
        if same_run or len(set(a) | set(b)) < 2:   # one run twice, or every unit alike: no interval to draw
            va, vb = (sum(a) / len(a) if a else None), (sum(b) / len(b) if b else None)
            d = Difference(m, va, vb, None if va is None or vb is None or same_run else vb - va, (None, None),
                           len(a), len(b))
        else:
            d = difference(a, b, m, seed=seed + 50 + i)   # type: ignore[arg-type]
        diffs.append(d.as_dict())
    return diffs


def statement_moves_text(c: dict[str, Any]) -> str:
    """"support changed for 1; also 2 moved no readable source → judged: a cited source was read in B (still
    not supported)": the support changes, and every other status move by name."""
    moves = c.get("statement_moves") or {"support_changed": len(c["changed_statements"])}
    text = f"support changed for {moves.get('support_changed', 0)}"
    others = [f"{n} {MOVES[k]}" for k, n in moves.items() if k != "support_changed" and n]
    return text + (f"; other status moves: {'; '.join(others)}" if others else "")


def format_comparison(c: dict[str, Any], limit: int = 50) -> str:
    """The comparison as terminal text."""
    names = {"url_validity": "source URL validity", "statement_support": "statement-level support",
             "response_support": "response-level support", "unused_sources": "unused sources",
             "answer_citation_validity": "per-answer citation validity"}

    lines = [f"warning: {w}" for w in c.get("warnings", [])]
    lines.append(f"A = run {c['run_a']['id']} ({c['run_a']['created_at'][:19]}), "
                 f"B = run {c['run_b']['id']} ({c['run_b']['created_at'][:19]})")
    if "with_overrides" in c:
        lines.append("reviewer overrides counted" + f" (A {c['overrides_a']}, B {c['overrides_b']})"
                     if c["with_overrides"] else "judges only (reviewer overrides not counted)")
    lines.append(f"{'metric':<25} {'A':>7} {'B':>7} {'B - A':>8}  95% CI of the difference")
    for d in c["differences"]:
        diff = "n/a" if d["diff"] is None else f"{100 * d['diff']:+.1f}"
        ci = "" if d["ci95"][0] is None else f"{100 * d['ci95'][0]:+.1f} to {100 * d['ci95'][1]:+.1f} points"
        lines.append(f"{names[d['metric']]:<25} {percent(d['a']):>7} {percent(d['b']):>7} {diff:>8}  {ci}")
    lines.append(f"\nstatements matched {c['statements_matched']} (only in A {c['statements_only_a']}, only in B "
                 f"{c['statements_only_b']}); {statement_moves_text(c)}")
    for s in c["changed_statements"][:limit]:
        text = s["statement"] if len(s["statement"]) <= 90 else s["statement"][:87] + "..."
        move = "" if s.get("move", "support_changed") == "support_changed" else f"  [{MOVES[s['move']].split(':')[0]}]"
        lines.append(f"  {s['response_id']}: {s['status_a']} -> {s['status_b']}{move}  {text}")
    if c.get("expert_differences"):
        from .expert.metrics import MEASURE_NAMES

        lines.append("\nagainst the expert material (OLAPH, EVAL)")
        for d in c["expert_differences"]:
            similarity = d["metric"] not in ("comprehensiveness_must_have", "comprehensiveness_all", "hallucination")
            show = (lambda v: "n/a" if v is None else f"{v:.3f}") if similarity else percent
            diff = "n/a" if d["diff"] is None else (f"{d['diff']:+.3f}" if similarity else f"{100 * d['diff']:+.1f}")
            ci = "" if d["ci95"][0] is None else (f"{d['ci95'][0]:+.3f} to {d['ci95'][1]:+.3f}" if similarity else
                                                  f"{100 * d['ci95'][0]:+.1f} to {100 * d['ci95'][1]:+.1f} points")
            lines.append(f"  {MEASURE_NAMES[d['metric']]:<46} {show(d['a']):>7} {show(d['b']):>7} {diff:>8}  {ci}")
    if c.get("study_differences"):
        from .metrics.studies import STUDY_NAMES

        lines.append("\nthe other studies (ASTRID: refusal accuracy, context relevance; Almanac: adversarial safety)")
        for d in c["study_differences"]:
            diff = "n/a" if d["diff"] is None else f"{100 * d['diff']:+.1f}"
            ci = "" if d["ci95"][0] is None else f"{100 * d['ci95'][0]:+.1f} to {100 * d['ci95'][1]:+.1f} points"
            lines.append(f"  {STUDY_NAMES[d['metric']]:<23} {percent(d['a']):>7} {percent(d['b']):>7} {diff:>8}  {ci}"
                         f"  (n {d['n_a']} / {d['n_b']})")
    lines.append(f"sources matched {c['sources_matched']}; changed {len(c['changed_sources'])}")
    for s in c["changed_sources"][:limit]:
        what = s.get("change") or ("content changed" if s["content_changed"] else f"{s['status_a']} -> {s['status_b']}")
        lines.append(f"  {s['url']}  ({what})")
    if len(c["changed_statements"]) > limit or len(c["changed_sources"]) > limit:
        lines.append(f"(first {limit} of each shown; --json prints everything)")
    return "\n".join(lines)
