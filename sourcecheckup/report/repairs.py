"""The repairs in a report: for each repaired statement, its old citation and verdict, the new citation
offered (or "no supporting source found"), its verdict and quote, and how it was found.

Built from the stored rows (``Store.repairs``) in the same order every time, so ``verify-report``
rebuilds and compares the section field by field.
"""
from __future__ import annotations

from html import escape
from typing import Any, Mapping

from ..store import Store

NO_SOURCE = "no supporting source found"   # the words of references.repair, kept here without the import


def repairs_section(store: Store, run_id: str) -> list[dict[str, Any]]:
    old = store.repair_old_verdicts(run_id)
    out = []
    for r in store.repairs(run_id):
        offered = next((c for c in r["candidates"] if c["key"] == r["offered_key"]), None)
        new = None
        if offered is not None:   # offered only with a supported verdict and a quote found in its text
            new = {"citation": offered["url"], "copy": offered.get("copy_url") or "",   # the text judged, when a copy
                   "title": offered["title"], "verdict": offered["label"],
                   "quote": offered["quote"], "found_by": offered["found_by"], "text": offered["text_kind"]}
        out.append({
            "statement": f"{r['rid']}/s{(r['ord'] or 0) + 1}", "statement_pk": r["statement_pk"],
            "text": r["statement"], "kind": r["kind"], "status": r["status"], "decision": r["decision"],
            "old": [{"citation": url, "judge": judge, "verdict": label}
                    for url, judge, label in old.get(r["statement_pk"], [])],
            "new": new, "outcome": "offered" if new else (NO_SOURCE if r["status"] == "none_found"
                                                           else "not finished (a service failed)"),
            "candidates_tried": len(r["candidates"]), "errors": list(r["errors"]),
        })
    return out


def repairs_html(report: Mapping[str, Any]) -> str:
    rows = report.get("repairs") or []
    if not rows:
        return ""
    items = []
    for r in rows:
        old = _cells(r)[3] or "–"
        what = "Open-access copy" if r["kind"] == "open_access" else "Find a source"
        if r["new"]:
            new = (f"<a href=\"{escape(r['new']['citation'])}\">{escape(r['new']['citation'])}</a> "
                   f"{escape(r['new']['title'])} — <b>{escape(r['new']['verdict'])}</b>; quote: "
                   f"“{escape(r['new']['quote'])}”; found by {escape(r['new']['found_by'])}"
                   + (f"; judged against the copy at {escape(r['new']['copy'])}" if r["new"]["copy"] else ""))
        else:
            new = f"{escape(r['outcome'])} ({r['candidates_tried']} candidate(s) tried)"
        items.append(f"<tr><td>{escape(r['statement'])}</td><td>{escape(r['text'])}</td><td>{escape(what)}</td>"
                     f"<td>{escape(old)}</td><td>{new}</td></tr>")
    return ('<section id="repairs"><h2>Repairs</h2><p>For each unsupported statement: a source found in '
            "PubMed, Europe PMC or Crossref (or an open-access copy of the cited paper), judged by the run's "
            "judge; one is offered only with a supported verdict and a quote found in its text.</p>"
            "<table><tr><th>Statement</th><th>Text</th><th>Repair</th><th>Old citation (verdict)</th>"
            f"<th>New citation, verdict, quote</th></tr>{''.join(items)}</table></section>")


SHEET_HEADER = ["statement", "text", "repair", "old citations (verdicts)", "outcome", "new citation", "title",
                "verdict", "quote", "found by", "judged copy", "candidates tried"]


def _cells(r: Mapping[str, Any]) -> list[Any]:
    new = r["new"] or {}
    old = "; ".join(f"{o['citation']} ({o['verdict']})" for o in r["old"])
    what = "open-access copy" if r["kind"] == "open_access" else "find a source"
    return [r["statement"], r["text"], what, old, r["outcome"], new.get("citation", ""), new.get("title", ""),
            new.get("verdict", ""), new.get("quote", ""), new.get("found_by", ""), new.get("copy", ""),
            r["candidates_tried"]]


def repairs_sheet_rows(report: Mapping[str, Any]) -> list[list[Any]]:
    """The XLSX "repairs" sheet: a row per repair, as the HTML section shows it."""
    return [_cells(r) for r in report.get("repairs") or []]


def repairs_csv_rows(report: Mapping[str, Any], run: tuple[str, str], width: int) -> list[list[Any]]:
    """One CSV row per repair after the verdict rows: statement_id ``repairs/<statement>``, category ``repair``,
    the outcome in ``status``, the new citation in ``url`` with its verdict, quote and how it was found."""
    rows = []
    for r in report.get("repairs") or []:
        c = _cells(r)
        row = [r["statement"].split("/")[0], "", "", f"repairs/{r['statement']}", r["text"], "repair",
               f"{c[2]}: {r['outcome']}", c[5], "", "", c[7], "", c[8], "", f"found by {c[9]}" if c[9] else
               f"{r['candidates_tried']} candidate(s) tried; old: {c[3] or '–'}", "", c[10], "", "", "", "", "",
               run[0], run[1], "", ""]
        rows.append((row + [""] * width)[:width])
    return rows
