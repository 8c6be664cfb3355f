"""The study's validation for any audit: draw pairs for human review, export them, import the labels.

A sample is a named, seeded draw of judged statement x source pairs, stratified by the
judge's label (or the model), stored in ``review_samples`` so the same sample can be
exported again and its labels traced. Reviewers label the CSV (supported / not_supported /
unsure) and may grade the whole answer in 'answer_grade' (good / bad, EVAL's expert grade; stored
apart from pair labels, see :mod:`.answer_grades`); ``import_reviews_csv`` stores each row's label as a
review and each answer's grade once, skipping bad rows with a message naming the row.
"""
from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

from ..evidence import SourceText
from ..metrics import assess_run
from ..report.csvsafe import SafeWriter
from ..store import Store
from .answer_grades import AnswerGrade, parse_grade
from .labels import ReviewLabel, add_review

STRATA = ("label", "model", "none")
EXCERPT_CHARS = 1200
CSV_COLUMNS = ["pair_id", "run_id", "sample", "response_id", "statement", "source_url", "source_title",
               "source_excerpt", "judge_label", "label", "reason", "answer", "answer_grade"]
_LABEL_ALIASES = {"supported": "supported", "not_supported": "not_supported", "notsupported": "not_supported",
                  "unsupported": "not_supported", "unsure": "unsure"}


class SampleError(ValueError):
    """A sample that cannot be drawn or found."""


@dataclass(frozen=True)
class SamplePair:
    pair_id: int            # review_samples.pk: what a reviewer's CSV row refers to
    run_id: str
    sample: str
    ord: int
    statement_pk: int
    url: str
    stratum: str
    blind: bool
    response_id: str
    statement: str
    source_title: str
    source_excerpt: str
    judge_label: str | None
    answer: str = ""        # the whole answer, for its Good/Bad grade


@dataclass(frozen=True)
class ImportResult:
    imported: int
    unlabelled: int
    errors: tuple[str, ...] = field(default_factory=tuple)
    samples: tuple[str, ...] = ()
    grades: int = 0          # answer grades stored (one per answer, however many of its rows carry it)


def _allocate(sizes: dict[str, int], n: int, allocation: str) -> dict[str, int]:
    """Pairs to draw per stratum: proportional (largest remainder) or equal, never more than a stratum has."""
    total = sum(sizes.values())
    n = min(n, total)
    if allocation == "equal":
        out = {k: 0 for k in sizes}
        left = n
        open_ = sorted(k for k in sizes if sizes[k] > 0)
        while left > 0 and open_:
            for k in list(open_):
                if left == 0:
                    break
                out[k] += 1
                left -= 1
                if out[k] >= sizes[k]:
                    open_.remove(k)
        return out
    exact = {k: n * v / total for k, v in sizes.items()} if total else {}
    out = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[: n - sum(out.values())]:
        out[k] += 1
    return out


def draw_sample(store: Store, run_id: str, n: int, *, stratify: str = "label", seed: int = 0,
                name: str | None = None, blind: bool = False, allocation: str = "proportional") -> list[SamplePair]:
    """Draw (or, for an existing name with the same pairs, re-read) a review sample of a run's judged pairs."""
    if n <= 0:
        raise SampleError("--n must be at least 1")
    if stratify not in STRATA:
        raise SampleError(f"--stratify {stratify}: choose one of {', '.join(STRATA)}")
    if allocation not in ("proportional", "equal"):
        raise SampleError(f"allocation {allocation}: choose proportional or equal")
    run = store.get_run(run_id)
    name = name or f"{stratify}-n{n}-seed{seed}"
    existing = sample_pairs(store, run.id, name)
    if existing:
        return existing
    data = store.load_run(run.id)
    candidates: list[tuple[int, str, str]] = []     # (statement_pk, url, stratum)
    for r in assess_run(data):
        for s in r.statements:
            for url, label in s.pair_labels.items():
                if label is None:
                    continue                        # not judged yet
                stratum = {"label": label.value, "model": r.model or "(none)", "none": "all"}[stratify]
                candidates.append((s.row.pk, url, stratum))
    if not candidates:
        raise SampleError(f"run {run.id} has no judged pairs to review")
    candidates.sort()
    strata: dict[str, list[tuple[int, str, str]]] = {}
    for c in candidates:
        strata.setdefault(c[2], []).append(c)
    quota = _allocate({k: len(v) for k, v in strata.items()}, n, allocation)
    rng = random.Random(seed)
    chosen: list[tuple[int, str, str]] = []
    for key in sorted(strata):
        chosen.extend(rng.sample(strata[key], quota.get(key, 0)))
    rng.shuffle(chosen)   # reviewers should not see the pairs grouped by the judge's label
    store.add_review_sample(run.id, name, [{"statement_pk": spk, "url": url, "stratum": stratum}
                                           for spk, url, stratum in chosen], blind=blind, seed=seed)
    return sample_pairs(store, run.id, name)


def list_samples(store: Store, run_id: str) -> list[dict[str, Any]]:
    return store.review_samples(run_id)


def sample_pairs(store: Store, run_id: str, name: str) -> list[SamplePair]:
    rows = store.review_sample_rows(run_id, name)
    if not rows:
        return []
    data = store.load_run(run_id)
    labels: dict[tuple[int, str], str] = {}
    for r in assess_run(data):
        for s in r.statements:
            for url, lab in s.pair_labels.items():
                if lab is not None:
                    labels[(s.row.pk, url)] = lab.value
    quotes: dict[tuple[int, str], str] = {}
    for spk, verdicts in data.verdicts.items():
        for v in verdicts:
            if v.verdict.quote and v.verdict.quote_found is not False:
                quotes.setdefault((spk, v.url), v.verdict.quote)
    texts: dict[str, SourceText] = {}
    out = []
    for row in rows:
        src = data.sources.get(row["url"])
        excerpt = quotes.get((row["statement_pk"], row["url"]), "")
        if not excerpt and src is not None and src.source.text:
            st = texts.get(row["url"]) or texts.setdefault(row["url"], SourceText.from_source(src.source))
            from ..evidence import rank_passages

            best = rank_passages(row["statement"], st, k=1)
            excerpt = st.passages[best[0][0]] if best else src.source.text
        out.append(SamplePair(
            pair_id=row["pk"], run_id=row["run_id"], sample=row["sample"], ord=row["ord"],
            statement_pk=row["statement_pk"], url=row["url"], stratum=row["stratum"], blind=bool(row["blind"]),
            response_id=row["response_id"], statement=row["statement"],
            source_title=(src.source.title or "") if src else "", source_excerpt=excerpt[:EXCERPT_CHARS],
            judge_label=labels.get((row["statement_pk"], row["url"])), answer=row["answer"] or ""))
    return out


def write_sample_csv(pairs: Sequence[SamplePair], out: str | Path | TextIO, *, blind: bool | None = None) -> None:
    """The reviewer's sheet: one row per pair, an empty 'label' column to fill (judge label hidden when blind)."""
    def rows(w: Any) -> None:
        w.writerow(CSV_COLUMNS)
        for p in pairs:
            hide = p.blind if blind is None else blind
            w.writerow([p.pair_id, p.run_id, p.sample, p.response_id, p.statement, p.url, p.source_title,
                        p.source_excerpt, "" if hide else (p.judge_label or ""), "", "", p.answer, ""])

    if isinstance(out, (str, Path)):
        with open(out, "w", encoding="utf-8", newline="") as fh:
            rows(SafeWriter(fh))
    else:
        rows(SafeWriter(out))


def _normalise_label(value: str) -> str | None:
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    return _LABEL_ALIASES.get(key) or _LABEL_ALIASES.get(key.replace("_", ""))


def import_reviews_csv(store: Store, source: str | Path | TextIO, reviewer: str) -> ImportResult:
    """Store each labelled row of a review CSV as ``reviewer``'s review; bad rows are skipped and named."""
    reviewer = reviewer.strip()
    if not reviewer:
        raise SampleError("give the reviewer's name (--reviewer NAME)")
    if isinstance(source, (str, Path)):
        text = Path(source).read_text(encoding="utf-8-sig")
        origin = Path(source).name
    else:
        text = source.read()
        origin = "the CSV"
    reader = csv.DictReader(io.StringIO(text))
    fields = {f.strip().lower() for f in (reader.fieldnames or [])}
    missing = [c for c in ("pair_id", "label") if c not in fields]
    if missing:
        raise SampleError(f"{origin} has no {' or '.join(missing)} column; export the sheet with "
                          "`sourcecheckup review-sample RUN -o FILE.csv` and fill in the 'label' column")
    imported = unlabelled = 0
    errors: list[str] = []
    samples: set[str] = set()
    pending: list[tuple[str, int, str, ReviewLabel, str, bool, str]] = []
    # (run_id, response_pk) -> {grade: [where, ...]}, sample: an answer's rows must agree on its grade
    graded: dict[tuple[str, int], dict[AnswerGrade, list[str]]] = {}
    grade_sample: dict[tuple[str, int], str] = {}
    for raw in reader:
        line = reader.line_num
        row = {(k or "").strip().lower(): (v or "") for k, v in raw.items() if k is not None}
        label_text = row.get("label", "").strip()
        grade_text = row.get("answer_grade", "").strip()
        pid_text = row.get("pair_id", "").strip()
        where = f"{origin} row {line}" + (f" (pair {pid_text})" if pid_text else "")
        if not label_text and not grade_text:
            unlabelled += 1
            continue
        if not pid_text.isdigit():
            errors.append(f"{where}: pair_id '{pid_text[:40]}' is not a pair number from a review sample")
            continue
        found = store.review_sample_pair(int(pid_text))
        if found is None:
            errors.append(f"{where}: no pair {pid_text} in {store.path} (was the sheet drawn from another database?)")
            continue
        run_id, sample, spk, url, blind = (found["run_id"], found["sample"], found["statement_pk"], found["url"],
                                           found["blind"])
        if row.get("source_url", "").strip() and row["source_url"].strip() != url:
            errors.append(f"{where}: source_url does not match pair {pid_text}'s source ({url[:80]}); "
                          "the row was edited or comes from another database")
            continue
        if row.get("run_id", "").strip() and row["run_id"].strip() != run_id:
            errors.append(f"{where}: run_id {row['run_id'].strip()[:40]} does not match pair {pid_text}'s run {run_id}")
            continue
        label = _normalise_label(label_text) if label_text else None
        if label_text and label is None:
            errors.append(f"{where}: label '{label_text[:40]}' is not one of supported, not_supported, unsure")
            continue
        grade = parse_grade(grade_text) if grade_text else None
        if grade_text and grade is None:
            errors.append(f"{where}: answer_grade '{grade_text[:40]}' is not good or bad")
            continue
        if label is not None:
            pending.append((run_id, spk, url, ReviewLabel(label), row.get("reason", "").strip(), bool(blind), sample))
        if grade is not None:
            response_pk = store.response_pk_of_statement(spk)
            if response_pk is not None:
                graded.setdefault((run_id, response_pk), {}).setdefault(grade, []).append(where)
                grade_sample[(run_id, response_pk)] = sample
    for run_id, spk, url, label, reason, blind, sample in pending:
        add_review(store, run_id, spk, url, reviewer, label, reason, blind=blind, sample=sample)
        imported += 1
        samples.add(sample)
    stored = 0
    for (run_id, response_pk), by_grade in graded.items():
        if len(by_grade) > 1:
            rows_said = "; ".join(f"{g.value} in {', '.join(w)}" for g, w in by_grade.items())
            errors.append(f"the rows of one answer give it different grades ({rows_said}); none stored for it")
            continue
        (grade,) = by_grade
        store.add_answer_grade(run_id, response_pk, reviewer, grade.value, sample=grade_sample[(run_id, response_pk)])
        samples.add(grade_sample[(run_id, response_pk)])
        stored += 1
    return ImportResult(imported, unlabelled, tuple(errors), tuple(sorted(samples)), grades=stored)


def strata_counts(pairs: Iterable[SamplePair]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in pairs:
        out[p.stratum] = out.get(p.stratum, 0) + 1
    return dict(sorted(out.items()))
