"""Text for the screens: where statements and quotes sit, CSV headers, word diffs, percentages."""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Mapping, Sequence

from ..evidence import normalised_with_map
from ..ingest.table import table_header
from ..metrics import StatementAssessment
from ..models import StatementStatus

# ----------------------------------------------------------------------------- counts


def count_noun(n: int, singular: str, plural: str | None = None) -> str:
    """A count with its noun agreeing: "1 response", "2 responses", "3 references not found"."""
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


# ----------------------------------------------------------------------------- text positions


def statement_spans(text: str, statements: Sequence[StatementAssessment]) -> list[tuple[int, int, StatementAssessment]]:
    """Where each statement sits in the answer text: the stored span, else the first match after the
    previous statement; statements that cannot be placed are left out."""
    spans = []
    pos = 0
    for s in statements:
        st = s.row.statement
        if 0 <= st.start < st.end <= len(text):
            start, end = st.start, st.end
        else:
            found = locate_text(st.text, text, pos)
            if found is None:
                continue
            start, end = found
        spans.append((start, end, s))
        pos = max(pos, end)
    return sorted(spans, key=lambda t: t[0])


def locate_text(needle: str, text: str, start: int = 0) -> tuple[int, int] | None:
    """Character span of ``needle`` in ``text`` at or after ``start`` (else anywhere), ignoring case,
    quote styles and whitespace runs: where a statement sits in its answer."""
    hay, starts, ends = normalised_with_map(text)
    n = normalised_with_map(needle)[0].strip(" \"'.\u2026")
    if not n:
        return None
    from_ = next((k for k, i in enumerate(starts) if i >= start), len(starts))
    found = hay.find(n, from_)
    if found < 0 and from_:
        found = hay.find(n)
    if found < 0:
        return None
    return starts[found], ends[found + len(n) - 1]


# ----------------------------------------------------------------------------- inputs


def table_columns(path: str | Path) -> tuple[list[str], str]:
    """The header row of a CSV/TSV file and its separator, for a column-mapping dialog: the engine's
    own reading (encoding and separator detected as ``load_file`` does), so the dialog offers the
    columns the audit will find. An undecodable file has no columns."""
    p = Path(path)
    try:
        return table_header(p.read_bytes(), p.suffix)
    except (OSError, UnicodeDecodeError):
        return [], "\t" if p.suffix.lower() == ".tsv" else ","


# ----------------------------------------------------------------------------- suggestions


_ALLOW_HOST_HINT = re.compile(r"add --allow-host (\S+) to fetch it anyway")


def reason_for_app(reason: str) -> str:
    """A fetch reason as the desktop app says it: the CLI's ``--allow-host`` advice becomes the Settings
    field that does the same."""
    return _ALLOW_HOST_HINT.sub(r"add \1 to Settings → Allowed private hosts to fetch it anyway", reason or "")


def word_diff(original: str, suggested: str) -> str:
    """A SourceCleanup suggestion as a word diff: [-removed-] {+added+}; an empty rewrite deletes all."""
    if not suggested.strip():
        return f"[-{original}-]"
    a, b = original.split(), suggested.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(" ".join(a[i1:i2]))
        if op in ("delete", "replace"):
            out.append("[-" + " ".join(a[i1:i2]) + "-]")
        if op in ("insert", "replace"):
            out.append("{+" + " ".join(b[j1:j2]) + "+}")
    return " ".join(out)


STATUS_WORDS: Mapping[StatementStatus, str] = {
    StatementStatus.SUPPORTED: "supported",
    StatementStatus.NOT_SUPPORTED: "not supported",
    StatementStatus.NO_READABLE_SOURCE: "no readable source",
    StatementStatus.JUDGE_ERROR: "judge error",
    StatementStatus.JUDGES_DISAGREE: "judges disagree",
    StatementStatus.NOT_A_CLAIM: "not a claim",
    StatementStatus.PENDING: "pending",
}


# ----------------------------------------------------------------------------- shared formatting


def day_of(value: object) -> str:
    """The date part of an ISO timestamp ("2026-01-05T10:00:00" -> "2026-01-05"); other text as is."""
    text = str(value or "")
    return text[:10] if len(text) >= 10 and text[4:5] == "-" else text



def pct_ci(value: float | None, ci95: Sequence[float | None] = (None, None), *, signed: bool = False) -> str:
    """"82.0% (95% CI 70–90)" for a proportion, "+4.0 points (95% CI -2.0 to +9.5)" for a difference."""
    if value is None:
        return "n/a"
    lo, hi = (list(ci95) + [None, None])[:2]
    if signed:
        ci = "" if lo is None or hi is None else f" (95% CI {100 * lo:+.1f} to {100 * hi:+.1f})"
        return f"{100 * value:+.1f} points{ci}"
    ci = "" if lo is None or hi is None else f" (95% CI {100 * lo:.0f}–{100 * hi:.0f})"
    return f"{100 * value:.1f}%{ci}"


def metric_pct(m: object, *, compact: bool = False) -> str:
    """A :class:`~sourcecheckup.metrics.Metric` (or None) as :func:`pct_ci` text with k/n;
    ``compact``: "60.0% (20–100)" for a table whose header says the bracket is the 95% CI."""
    if m is None or getattr(m, "value", None) is None:
        return "n/a"
    if compact:
        lo, hi = m.ci95  # type: ignore[attr-defined]
        ci = "" if lo is None or hi is None else f" ({100 * lo:.0f}–{100 * hi:.0f})"
        return f"{100 * m.value:.1f}%{ci}"  # type: ignore[attr-defined]
    return f"{pct_ci(m.value, m.ci95)} · {m.k}/{m.n}"  # type: ignore[attr-defined]
