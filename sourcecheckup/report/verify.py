"""``verify_report``: rebuild a saved JSON report from the database and compare every field.

The report records the options it was built with (``report_options``: with reviews or not, the grouping
columns); the same report is rebuilt from the stored rows, a page of responses at a time, and the two JSON
trees are compared field by field: each difference is named by its path
("responses[3].statements[1].status: report says 'supported', database gives 'not_supported"), and a section
missing from either side fails. Fields that legitimately differ between two builds are listed in
:data:`NOT_COMPARED` with the reason; nothing else is left out, so a section added to the report later is
compared without this module knowing it.

Beyond the rebuild: the stored evidence is checked against the report's evidence digests (naming the first
row that differs), the report against its own digests (naming an edited section), a signature against a
public key, the input files (where they still are) against their recorded hashes; and the headline figures
are recomputed once more by :meth:`StreamedReport.figures` as a second line of defence.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..store import Store
from .integrity import VOLATILE_FIELDS, check_self_digest, check_signature, explain_evidence
from .stream import STREAMED, StreamedReport, _trail_source

# path -> why it is not compared with the rebuilt report
NOT_COMPARED: dict[str, str] = {
    **VOLATILE_FIELDS,
    "integrity.sections": "checked against the report itself (its own digests)",
    "integrity.report_sha256": "checked against the report itself (its own digests)",
    "integrity.content_sha256": "checked against the report itself (its own digests)",
    "integrity.signature": "checked with --key",
    "integrity.evidence": "checked row by row against the stored evidence",
}
WHOIS_PATHS = ("analytics",)   # whois answers come from the network: a whois report's source analytics are not rebuilt
MAX_REPR = 80


@dataclass
class Verification:
    """What ``verify-report`` found: the differences, the fields compared per section, and notes."""

    differences: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def _show(v: Any, at: int = 0) -> str:
    """A value, cut to MAX_REPR characters; ``at``: where in a long string the cut window starts (so two
    long strings are shown where they differ, not both up to the same point before it)."""
    if isinstance(v, str) and at > 0 and len(repr(v)) > MAX_REPR:
        start = max(0, at - 20)
        body = v[start:start + MAX_REPR - 10]
        return repr(("..." if start else "") + body + ("..." if start + len(body) < len(v) else ""))
    text = json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else repr(v)
    return text if len(text) <= MAX_REPR else text[:MAX_REPR - 3] + "..."


def _first_difference(a: Any, b: Any) -> int:
    """Where two strings first differ (0 for anything else)."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return 0
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


class _Comparer:
    def __init__(self, skip: set[str]) -> None:
        self.skip = skip
        self.diffs: list[str] = []
        self.checked: dict[str, int] = {}

    def walk(self, path: str, a: Any, b: Any) -> None:
        """Compare the report's value ``a`` with the database's ``b`` at ``path``."""
        if path in self.skip:
            return
        section = path.split(".")[0].split("[")[0]
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                sub = f"{path}.{k}" if path else str(k)
                if sub in self.skip:
                    continue
                if k not in b:
                    self.diffs.append(f"{sub}: in the report but not in the report rebuilt from the database")
                elif k not in a:
                    self.diffs.append(f"{sub}: missing from the report (the database gives {_show(b[k])})")
                else:
                    self.walk(sub, a[k], b[k])
            return
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                self.diffs.append(f"{path}: report has {len(a)} item(s), database gives {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                self.walk(f"{path}[{i}]", x, y)
            return
        self.checked[section] = self.checked.get(section, 0) + 1
        if _number(a) and _number(b):
            if not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9):
                self.diffs.append(f"{path}: report says {a}, database gives {b}")
        elif a != b or type(a) is not type(b):     # True is not 1, "1" is not 1
            at = _first_difference(a, b)
            self.diffs.append(f"{path}: report says {_show(a, at)}, database gives {_show(b, at)}")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def verify_report(report: Mapping[str, Any], store: Store) -> list[str]:
    """The differences between a saved report and the database ([] when every field matches)."""
    return verify_report_full(report, store).differences


def verify_report_full(report: Mapping[str, Any], store: Store, *, key: str | Path | None = None,
                       check_inputs: bool = True) -> Verification:
    """Rebuild the report from the database with its recorded options and compare every field; check the
    evidence, self and (with ``key``) signature digests and the input files' hashes."""
    if not isinstance(report, Mapping) or not isinstance(report.get("run"), Mapping) or "id" not in report["run"]:
        raise ValueError("this is not a SourceCheckup JSON report (no run.id)")
    if report.get("metrics_basis", "judges") != "judges":
        raise ValueError("this report was built with custom overrides; it cannot be recomputed from the database")
    run_id = report["run"]["id"]
    result = Verification()
    options = report.get("report_options")
    if not isinstance(options, Mapping):
        result.differences.append("report_options: missing from the report (the options it was built with)")
        options = {"with_reviews": bool((report.get("reviewer_overrides") or {}).get("applied")), "group_by": None}
    skip = set(NOT_COMPARED)
    if options.get("whois"):
        skip.update(WHOIS_PATHS)
        result.notes.append("analytics: built with whois lookups (network answers): not rebuilt or compared")
    cmp = _Comparer(skip)
    rebuilt = StreamedReport(store, run_id, with_reviews=bool(options.get("with_reviews")),
                             group_by=options.get("group_by"))
    counts = {key_: 0 for key_ in STREAMED}

    def compare_item(key_: str):
        def on_item(item: dict[str, Any]) -> None:
            i = counts[key_]
            counts[key_] += 1
            saved = report.get(key_)
            if isinstance(saved, list) and i < len(saved):
                cmp.walk(f"{key_}[{i}]", saved[i], json.loads(json.dumps(item)))
        return on_item

    head = rebuilt.run_pass(compare_item("responses"), compare_item("unsupported"), compare_item("disagreements"))
    head = json.loads(json.dumps(head))
    for key_ in STREAMED:   # compared item by item above: here only their presence and length
        saved = report.get(key_)
        if not isinstance(saved, list):
            cmp.diffs.append(f"{key_}: missing from the report (the database gives {counts[key_]} item(s))"
                             if key_ not in report else f"{key_}: not a list in the report")
        elif len(saved) != counts[key_]:
            cmp.diffs.append(f"{key_}: report has {len(saved)} item(s), database gives {counts[key_]}")
    skip.update(STREAMED)
    skip.add("audit_trail.sources")
    cmp.walk("", {k: v for k, v in report.items()}, head)
    skip.discard("audit_trail.sources")   # compared with the store's rows, one at a time
    _compare_trail_sources(report, store, run_id, cmp)
    result.differences.extend(cmp.diffs)
    result.checked.update(cmp.checked)
    _check_evidence(report, store, run_id, head, result)
    own = check_self_digest(report)
    result.differences.extend(own)
    result.checked["integrity (report digest)"] = len((report.get("integrity") or {}).get("sections") or {})
    _check_signature(report, key, result)
    if check_inputs:
        _check_inputs(((store.get_run(run_id).config or {}).get("provenance") or {}).get("inputs") or [], result)
    # the second line of defence: the headline figures once more, by the tallies alone
    for d in _headline_differences(report, store, run_id):
        if d.split(":")[0] not in {x.split(":")[0] for x in result.differences}:
            result.differences.append(d)
    return result


def _compare_trail_sources(report: Mapping[str, Any], store: Store, run_id: str, cmp: _Comparer) -> None:
    saved = (report.get("audit_trail") or {}).get("sources")
    rows = [_trail_source(r) for r in store.iter_run_source_summaries(run_id)]
    if not isinstance(saved, list):
        cmp.diffs.append("audit_trail.sources: missing from the report")
        return
    cmp.walk("audit_trail.sources", saved, json.loads(json.dumps(rows)))


def _check_evidence(report: Mapping[str, Any], store: Store, run_id: str, head: Mapping[str, Any],
                    result: Verification) -> None:
    saved = (report.get("integrity") or {}).get("evidence")
    now = (head.get("integrity") or {}).get("evidence") or {}
    if not isinstance(saved, Mapping):
        result.differences.append("integrity.evidence: missing from the report (the digest of the stored evidence)")
        return
    tables = now.get("tables") or {}
    result.checked["integrity (evidence rows)"] = sum(t["rows"] for t in tables.values())
    if saved.get("sha256") == now.get("sha256") and saved.get("tables") == tables:
        return
    named = explain_evidence(store, run_id, saved)
    result.differences.extend(named)
    if not named:   # the rows match their digests: the report's own evidence digests were edited
        result.differences.append(f"integrity.evidence.sha256: report says {_show(saved.get('sha256'))}, "
                                  f"database gives {_show(now.get('sha256'))}")


def _check_signature(report: Mapping[str, Any], key: str | Path | None, result: Verification) -> None:
    sig = (report.get("integrity") or {}).get("signature")
    if key is not None:
        problems = check_signature(report, key)
        result.differences.extend(problems)
        if not problems:
            assert isinstance(sig, Mapping)   # check_signature verified it
            result.notes.append(f"signature: verified with the key {sig.get('public_key_fingerprint')}")
    elif isinstance(sig, Mapping):
        result.notes.append(f"signature: signed by the key {sig.get('public_key_fingerprint')}; not checked "
                            "(give --key PUBLIC_KEY to check it)")


def _check_inputs(inputs: list[Mapping[str, Any]], result: Verification) -> None:
    """Re-hash each input file the database records that is still where the run read it. The paths come
    from the database, never from the report under test (a tampered report could name /proc/kmsg or
    /etc/shadow), and only a regular file of the recorded size is read."""
    import os
    import stat

    from ..provenance import sha256_file

    missing = 0
    for i, rec in enumerate(inputs):
        path, want = rec.get("path"), rec.get("sha256")
        if not path or not want or path == "-":
            continue
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            missing += 1
            continue
        if not stat.S_ISREG(st.st_mode):
            missing += 1
            continue
        if isinstance(rec.get("bytes"), int) and st.st_size != rec["bytes"]:

            result.differences.append(f"integrity.inputs[{i}].sha256: the run read {path} with SHA-256 {want} "
                                      f"({rec['bytes']} bytes); the file there now has {st.st_size} bytes")
            continue
        got = sha256_file(path)
        result.checked["integrity (input files re-hashed)"] = result.checked.get(
            "integrity (input files re-hashed)", 0) + 1
        if got != want:
            result.differences.append(f"integrity.inputs[{i}].sha256: the run read {path} with SHA-256 {want}; "
                                      f"the file there now gives {got}")
    if missing:
        result.notes.append(f"inputs: {missing} recorded input file(s) are not at their recorded path here: "
                            "their hashes are shown in the report, not re-checked")


def _headline_differences(report: Mapping[str, Any], store: Store, run_id: str) -> list[str]:
    """The headline figures recomputed by the tallies alone (the checks verify-report made before every field
    was compared)."""
    metrics, with_reviews, by_model, references = StreamedReport(store, run_id).figures()
    cmp = _Comparer(set())
    pairs: list[tuple[str, Any, Any]] = [
        ("metrics", report.get("metrics"), metrics.as_dict()),
        ("counts", report.get("counts"), json.loads(json.dumps(metrics.counts))),
        ("by_model", report.get("by_model"), by_model),
        ("metrics_with_reviews", report.get("metrics_with_reviews"), with_reviews.as_dict()),
        ("counts_with_reviews", report.get("counts_with_reviews"), json.loads(json.dumps(with_reviews.counts))),
    ]
    for key in ("counts", "metrics", "by_model"):
        pairs.append((f"references.{key}", (report.get("references") or {}).get(key),
                      json.loads(json.dumps(references[key]))))
    saved_review = report.get("review") or {}
    if "metrics_with_reviews" in saved_review:
        pairs.append(("review.metrics_with_reviews", saved_review["metrics_with_reviews"], with_reviews.as_dict()))
    for path, saved, now in pairs:
        if saved is None:
            cmp.diffs.append(f"{path}: missing from the report")
        else:
            cmp.walk(path, saved, now)
    return cmp.diffs
