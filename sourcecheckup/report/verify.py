"""``verify_report``: recompute a saved JSON report's figures from the database and list the differences."""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

from ..store import Store
from .stream import StreamedReport

def _walk(prefix: str, a: Any, b: Any, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{prefix}.{k}: report {a.get(k, '(missing)')!r}, database {b.get(k, '(missing)')!r}")
            else:
                _walk(f"{prefix}.{k}", a[k], b[k], out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(f"{prefix}[{i}]", x, y, out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9):
            out.append(f"{prefix}: report {a}, database {b}")
    elif a != b:
        out.append(f"{prefix}: report {a!r}, database {b!r}")


def verify_report(report: Mapping[str, Any], store: Store) -> list[str]:
    """Recompute a saved report's figures from the database; the differences ([] when all match)."""
    try:
        run_id = report["run"]["id"]
        saved_metrics = report["metrics"]
    except (KeyError, TypeError):
        raise ValueError("this is not a SourceCheckup JSON report (no run.id / metrics)") from None
    if report.get("metrics_basis", "judges") != "judges":
        raise ValueError("this report was built with custom overrides; it cannot be recomputed from the database")
    # recomputed a page of responses at a time (the same figures as build_report's): flat memory on a large run
    metrics, with_reviews, by_model, references = StreamedReport(store, run_id).figures()
    diffs: list[str] = []
    _walk("metrics", saved_metrics, metrics.as_dict(), diffs)
    if "counts" in report:
        _walk("counts", report["counts"], json.loads(json.dumps(metrics.counts)), diffs)
    if "by_model" in report:
        _walk("by_model", report["by_model"], by_model, diffs)
    if "references" in report:   # the reference-check figures, from the stored checks
        for key in ("counts", "metrics", "by_model"):
            _walk(f"references.{key}", (report["references"] or {}).get(key),
                  json.loads(json.dumps(references[key])), diffs)
    if "metrics_with_reviews" in report:   # the judges-only and with-reviews figures are both recomputed
        _walk("metrics_with_reviews", report["metrics_with_reviews"], with_reviews.as_dict(), diffs)
    if "counts_with_reviews" in report:
        _walk("counts_with_reviews", report["counts_with_reviews"], json.loads(json.dumps(with_reviews.counts)),
              diffs)
    saved_review = report.get("review") or {}
    if "metrics_with_reviews" in saved_review:
        _walk("review.metrics_with_reviews", saved_review["metrics_with_reviews"], with_reviews.as_dict(), diffs)
    return diffs
