"""SourceCleanup: edit suggestions for unsupported statements, verified again by the run's judges.

For every statement the run found unsupported (``not_supported``: its readable sources were
judged and none supports it) and every valid source of its answer, an LLM proposes the
smallest rewrite that source fully supports, or recommends deleting the statement. Every
rewrite is judged again, against the same source, by the run's own judge(s) under the run's
consensus rule; only then is it ``verified``. Suggestions are stored once per statement x
source; a person accepts or rejects each, and :func:`revised_answer` applies the accepted
ones to the answer text, keeping its citation markers.
"""
from __future__ import annotations

import asyncio
import difflib
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping, Sequence

from .events import EventKind, ProgressEvent
from .evidence import SourceText, quote_in_source
from .judges.api import JudgeSettings, evidence_text, source_block, source_flags
from .judges.base import Judge, open_judges
from .llm import make_client, split_options
from .llm.client import CallOptions
from .llm.replies import ReplyError, Schema, TaskError, ask_json
from .llm.spec import is_model_spec, model_name
from .metrics import Consensus, assess_run, pair_label
from .models import Label, Statement, StatementStatus, Verdict
from .parse.markers import MARKER_RE as _GENERIC_MARKER_RE
from .parse.markup import LINK_RE as _LINK_RE
from .parse.markup import URL_RE as _URL_RE
from .pipeline import finalise_verdict
from .prompts import load_prompt
from .store import StatementRow, Store, load_json

DEFAULT_CLEANUP_PROMPT = "cleanup-v1"
MAX_OUTPUT_TOKENS = 800


class SuggestionKind(str, Enum):
    REWRITE = "rewrite"
    DELETE = "delete"


class SuggestionStatus(str, Enum):
    VERIFIED = "verified"                         # the run's judges find the rewrite supported by the source
    FAILED_VERIFICATION = "failed_verification"   # they find it still not supported
    VERIFICATION_ERROR = "verification_error"     # they could not decide (judge errors): never "verified"
    DELETE = "delete"                             # the writer recommends deleting the statement


class Decision(str, Enum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


@dataclass(frozen=True)
class SuggestionRow:
    """One stored edit suggestion for one statement x source pair."""

    pk: int
    run_id: str
    statement_pk: int
    url: str                       # the source the rewrite is checked against
    kind: SuggestionKind
    original: str                  # the statement as parsed
    suggested: str                 # the rewrite ("" for a deletion)
    quote: str                     # the source's words that back the rewrite
    status: SuggestionStatus
    judge_id: str                  # the LLM that wrote the suggestion
    verification: Mapping[str, Any] = field(default_factory=dict)   # each judge's verdict on the rewrite
    decision: Decision = Decision.PENDING
    decided_by: str | None = None
    decided_at: str | None = None
    created_at: str = ""


class CleanupError(RuntimeError):
    """Cleanup cannot run as asked (no LLM to write rewrites, unknown run or suggestion)."""


@dataclass(frozen=True)
class Rewrite:
    action: SuggestionKind
    statement: str
    quote: str


CLEANUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["rewrite", "delete"]},
        "statement": {"type": "string"},
        "quote": {"type": "string"},
    },
    "required": ["action", "statement", "quote"],
    "additionalProperties": False,
}
CLEANUP = Schema("suggestion", CLEANUP_SCHEMA, "Record the minimal rewrite of the statement, or its deletion.",
                 example='{"action": "rewrite" | "delete", "statement": "...", "quote": "..."}')


def rewrite_from_object(obj: Mapping[str, Any]) -> Rewrite:
    action = str(obj.get("action", "")).strip().lower()
    if action not in ("rewrite", "delete"):
        raise ReplyError(f'"action" must be "rewrite" or "delete", got {obj.get("action")!r}')
    statement, quote = obj.get("statement") or "", obj.get("quote") or ""
    if not isinstance(statement, str) or not isinstance(quote, str):
        raise ReplyError('"statement" and "quote" must be strings')
    if action == "rewrite" and not statement.strip():
        raise ReplyError('a "rewrite" needs the rewritten "statement"')
    if action == "delete":
        return Rewrite(SuggestionKind.DELETE, "", "")
    return Rewrite(SuggestionKind.REWRITE, " ".join(statement.split()), quote.strip())


# --------------------------------------------------------------------------------------------
# Stored suggestions


def _row(r: Mapping[str, Any]) -> SuggestionRow:
    return SuggestionRow(
        pk=r["pk"], run_id=r["run_id"], statement_pk=r["statement_pk"], url=r["url"],
        kind=SuggestionKind(r["kind"]), original=r["original"] or "", suggested=r["suggested"] or "",
        quote=r["quote"] or "", status=SuggestionStatus(r["status"]), judge_id=r["judge_id"] or "",
        verification=load_json(r["verification"], {}),
        decision=Decision(r["decision"] or "pending"), decided_by=r["decided_by"], decided_at=r["decided_at"],
        created_at=r["created_at"] or "")


def suggestions(store: Store, run_id: str, response_pk: int | None = None) -> list[SuggestionRow]:
    """The run's suggestions (of one response when ``response_pk`` is given), in statement order."""
    return [_row(r) for r in store.suggestions_in_order(run_id, response_pk)]


def set_decision(store: Store, suggestion_pk: int, decision: Decision | str, who: str) -> SuggestionRow:
    """Record a person's decision on one suggestion: accepted, rejected or back to pending."""
    try:
        decision = Decision(decision)
    except ValueError:
        raise CleanupError(f"a decision is accepted, rejected or pending, not {decision!r}") from None
    if not who or not who.strip():
        raise CleanupError("say who decided (a reviewer name)")
    pending = decision is Decision.PENDING
    row = None
    if store.set_suggestion_decision(suggestion_pk, decision.value, None if pending else who.strip()):
        row = store.suggestion_row(suggestion_pk)
    if row is None:
        raise CleanupError(f"no suggestion {suggestion_pk}; `sourcecheckup cleanup RUN` lists them")
    return _row(row)


def _store_suggestion(store: Store, run_id: str, statement_pk: int, url: str, kind: SuggestionKind,
                      original: str, suggested: str, quote: str, status: SuggestionStatus, judge_id: str,
                      verification: Mapping[str, Any]) -> None:
    store.add_suggestion(run_id, statement_pk, url, kind=kind.value, original=original, suggested=suggested,
                         quote=quote, status=status.value, judge_id=judge_id, verification=verification)


# --------------------------------------------------------------------------------------------
# Writing and verifying suggestions


def writer_spec(judges: Sequence[str]) -> str | None:
    """The run's first judge that is an LLM (the builtin and local judges cannot write)."""
    return next((spec for spec in judges if is_model_spec(spec)), None)


def _verdict_dict(v: Verdict) -> dict[str, Any]:
    return {"judge": v.judge_id, "label": v.label.value, "quote": v.quote, "quote_found": v.quote_found,
            "rationale": v.rationale, "model_version": v.model_version, "prompt_version": v.prompt_version,
            "tokens_in": v.tokens_in, "tokens_out": v.tokens_out, "flags": list(v.flags)}


async def _verify(judge: Judge, text: str, source: SourceText) -> Verdict:
    try:
        return await judge.verify(text, source)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a judge that raises still gives an honest judge_error
        return Verdict.error(judge.id, f"{type(exc).__name__}: {exc}", prompt_version=judge.prompt_version)


def _targets(store: Store, data: Any) -> list[tuple[Any, Any, str]]:
    """(response, statement, url) for every unsupported statement x valid source not yet handled."""
    done = store.suggested_pairs(data.run.id)
    targets = []
    for r in assess_run(data):
        for s in r.statements:
            if s.status is StatementStatus.NOT_SUPPORTED:
                targets += [(r, s, url) for url in r.valid_urls if (s.row.pk, url) not in done]
    return targets


# a rough size of one call: the prompt and the selected evidence in, a short JSON reply out
EST_TOKENS_IN_PER_CALL = 1400
EST_TOKENS_OUT_PER_CALL = 120


@dataclass(frozen=True)
class CleanupPlan:
    """What a cleanup would do and roughly cost, before it starts (shown to the user first)."""

    run_id: str
    pairs: int                    # unsupported statement x valid source pairs not yet handled
    writer: str | None            # the LLM spec that writes the rewrites; None when there is none
    verifiers: tuple[str, ...]    # the run's judges, which verify every rewrite
    tokens_in: int
    tokens_out: int
    cost_usd: float | None        # None when a model is not in resources/prices.json

    @property
    def cost_text(self) -> str:
        if not self.pairs:
            return "nothing to do"
        if self.cost_usd is None:
            return (f"cost unknown (a model is not in prices.json); about {self.tokens_in:,} tokens in, "
                    f"{self.tokens_out:,} out")
        return f"about ${self.cost_usd:.4f} ({self.tokens_in:,} tokens in, {self.tokens_out:,} out; an estimate)"


def plan_cleanup(store: Store, run_id: str, *, model_spec: str | None = None) -> CleanupPlan:
    """The pairs a cleanup would handle, its writer and verifiers, and an estimated cost: one writing
    call per pair plus, for a rewrite, one verifying call per LLM judge (builtin/local judges are free)."""
    from .llm.pricing import estimate_cost

    data = store.load_run(run_id)
    run = data.run
    pairs = len(_targets(store, data))
    writer = model_spec or writer_spec(run.judges)
    calls: dict[str, int] = {}
    if writer:
        calls[writer] = pairs
    for spec in run.judges:
        if writer_spec([spec]):
            calls[spec] = calls.get(spec, 0) + pairs
    tokens_in = sum(calls.values()) * EST_TOKENS_IN_PER_CALL
    tokens_out = sum(calls.values()) * EST_TOKENS_OUT_PER_CALL
    cost: float | None = 0.0
    for spec, n in calls.items():
        c = estimate_cost(model_name(spec), n * EST_TOKENS_IN_PER_CALL, n * EST_TOKENS_OUT_PER_CALL)
        cost = None if c is None or cost is None else cost + c
    return CleanupPlan(run.id, pairs, writer, tuple(run.judges), tokens_in, tokens_out, cost)


async def run_cleanup(store: Store, run_id: str, *, model_spec: str | None = None,
                      model_options: Mapping[str, Any] | None = None, judges: Sequence[Judge] | None = None,
                      progress: Callable[[ProgressEvent], None] | None = None,
                      concurrency: int = 4) -> list[SuggestionRow]:
    """Write and verify suggestions for every unsupported statement x valid source not yet handled.

    ``model_spec`` names the LLM that writes them (default: the run's first LLM judge);
    ``model_options`` are its settings (base_url, api_key, timeouts); ``judges`` are the verifying
    judges (default: built from the run's config). Returns every suggestion of the run.
    """
    data = store.load_run(run_id)
    run = data.run
    rule = Consensus(run.config.get("consensus", Consensus.FIRST.value))
    targets = _targets(store, data)
    if not targets:
        return suggestions(store, run.id)

    spec = model_spec or writer_spec(run.judges)
    if spec is None:
        raise CleanupError(
            f"cleanup needs an LLM to write rewrites, and the run's judge(s) ({', '.join(run.judges)}) cannot: "
            "give one with --model, e.g. --model openai:gpt-4o or "
            "--model openai-compatible:http://localhost:11434/v1#llama3.1")
    options = {k: v for k, v in dict(run.config.get("judge_options") or {}).items()}
    options.update(model_options or {})
    if not is_model_spec(spec):
        raise CleanupError(f"cleanup needs an LLM to write rewrites; '{spec}' is not one "
                           "(use openai:MODEL, anthropic:MODEL or openai-compatible:URL#MODEL)")
    client_options, judge_options = split_options(options)
    writer = make_client(spec, **client_options)
    shown = JudgeSettings.from_options(writer.settings, judge_options)   # the evidence a judge would show
    call = CallOptions(temperature=0, seed=writer.settings.seed, max_tokens=MAX_OUTPUT_TOKENS)
    try:
        async with open_judges(run.judges, run.config.get("judge_options"), given=judges) as verifiers:
            prompt = load_prompt(None, default=DEFAULT_CLEANUP_PROMPT, required=("statement", "source"))
            texts: dict[str, SourceText] = {}
            sem = asyncio.Semaphore(max(1, concurrency))
            counter = {"done": 0, "stored": 0}

            async def one(resp: Any, sa: Any, url: str) -> None:
                statement: Statement = sa.row.statement
                source = data.sources[url].source
                st = texts.get(url) or texts.setdefault(url, SourceText.from_source(source))
                reasons = [v.verdict.rationale for v in data.verdicts.get(sa.row.pk, [])
                           if v.url == url and v.verdict.label is Label.NOT_SUPPORTED and v.verdict.rationale]
                label = f"{resp.rid}/s{statement.index + 1}"
                async with sem:
                    evidence, evidence_flags = evidence_text([statement.text], st, shown)
                    block, boundary = source_block(evidence, st)
                    system, user = prompt.render(statement=statement.text, source=block, boundary=boundary,
                                                 reason=reasons[0] if reasons else "(no reason given)")
                    try:
                        answer = await ask_json(writer, system, user, CLEANUP, rewrite_from_object, call)
                    except TaskError as exc:
                        store.log(run.id, f"cleanup: no suggestion for {label} against {url}: {exc}", "warning")
                        answer = None
                    verdicts: list[Verdict] = []
                    if answer is not None and answer.value.action is SuggestionKind.REWRITE:
                        verdicts = [finalise_verdict(await _verify(j, answer.value.statement, st), j, source)
                                    for j in verifiers]
                counter["done"] += 1
                if progress is not None:
                    progress(ProgressEvent(EventKind.JUDGED, run.id, pairs_total=len(targets),
                                           pairs_done=counter["done"], message=label))
                if answer is None:
                    return
                rewrite: Rewrite = answer.value
                writer_info = {"model": answer.model, "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out,
                               "prompt_version": prompt.version, "repaired": answer.repaired,
                               "source_flags": sorted(set(source_flags(st)) | set(evidence_flags))}
                if rewrite.action is SuggestionKind.DELETE:
                    _store_suggestion(store, run.id, sa.row.pk, url, SuggestionKind.DELETE, statement.text, "", "",
                                      SuggestionStatus.DELETE, writer.id, {"writer": writer_info, "verdicts": []})
                    counter["stored"] += 1
                    return
                combined = pair_label([v.label for v in verdicts], rule)
                status = {Label.SUPPORTED: SuggestionStatus.VERIFIED,
                          Label.NOT_SUPPORTED: SuggestionStatus.FAILED_VERIFICATION}.get(
                    combined, SuggestionStatus.VERIFICATION_ERROR)  # type: ignore[arg-type]
                quote, found = rewrite.quote, quote_in_source(rewrite.quote, source.text)
                if not found:  # the writer's quote is not in the source: offer a verifier's checked quote instead
                    checked = next((v.quote for v in verdicts if v.label is Label.SUPPORTED and v.quote_found), None)
                    if checked:
                        quote, found = checked, True
                verification = {"rule": rule.value, "label": combined.value if combined else None,
                                "quote_found": found, "verdicts": [_verdict_dict(v) for v in verdicts],
                                "writer": writer_info}
                _store_suggestion(store, run.id, sa.row.pk, url, SuggestionKind.REWRITE, statement.text,
                                  rewrite.statement, quote, status, writer.id, verification)
                counter["stored"] += 1

            await asyncio.gather(*(one(r, s, url) for r, s, url in targets))
    finally:
        await writer.aclose()
    rows = suggestions(store, run.id)
    by_status: dict[str, int] = {}
    for row in rows:
        by_status[row.status.value] = by_status.get(row.status.value, 0) + 1
    store.log(run.id, f"cleanup with {writer.id}: {counter['stored']} new suggestion(s) for {len(targets)} "
                      f"statement x source pair(s); now " + ", ".join(f"{v} {k}" for k, v in sorted(by_status.items())))
    return rows


# --------------------------------------------------------------------------------------------
# The revised answer

_CITATION_RE = re.compile("|".join(f"(?:{p.pattern})" for p in (_LINK_RE, _GENERIC_MARKER_RE, _URL_RE)))
_RANK = {SuggestionStatus.VERIFIED: 0, SuggestionStatus.DELETE: 1, SuggestionStatus.VERIFICATION_ERROR: 2,
         SuggestionStatus.FAILED_VERIFICATION: 3}


@dataclass(frozen=True)
class AppliedSuggestion:
    suggestion_pk: int
    statement_pk: int
    kind: SuggestionKind
    status: SuggestionStatus
    start: int                # span of the original answer text that was replaced
    end: int
    before: str
    after: str


@dataclass(frozen=True)
class RevisedAnswer:
    response_id: str
    original: str
    revised: str
    applied: list[AppliedSuggestion]
    unplaced: list[int] = field(default_factory=list)   # accepted suggestions whose statement has no span

    @property
    def changed(self) -> bool:
        return self.revised != self.original


def _best(candidates: Sequence[SuggestionRow]) -> SuggestionRow:
    def key(s: SuggestionRow) -> tuple[Any, ...]:
        found = bool(s.verification.get("quote_found")) if s.kind is SuggestionKind.REWRITE else True
        closeness = difflib.SequenceMatcher(None, s.original, s.suggested).ratio()
        return (_RANK[s.status], not found, -closeness, s.pk)
    return min(candidates, key=key)


def with_citations(replacement: str, original_span: str) -> str:
    """``replacement`` carrying the citation markers, links and URLs of the text it replaces."""
    # a bare URL's match swallows the sentence's closing punctuation: give it back
    cites = list(dict.fromkeys(c if c.startswith(("[", "【")) else c.rstrip(".,;:!?'\"\u201d\u2019")
                               for c in (m.group(0) for m in _CITATION_RE.finditer(original_span))))
    text = replacement.strip()
    if not cites:
        return text
    joined = ""
    for c in cites:
        bracket = c.startswith(("[", "【")) and not _LINK_RE.fullmatch(c)
        joined += c if (bracket and joined.endswith(("]", "】"))) else ((" " if joined else "") + c)
    first = _CITATION_RE.search(original_span)
    assert first is not None
    space = " " if first.start() > 0 and original_span[first.start() - 1].isspace() else ""
    if not joined.startswith(("[", "【")):
        space = " "
    punct = re.search(r"[.!?]+$", text)
    body, end = (text[:punct.start()], punct.group(0)) if punct else (text, "")
    if re.search(r"[.!?][\"')\]]*\s*$", original_span[:first.start()]):   # "... fact.[1]" style
        return f"{body}{end}{space}{joined}"
    return f"{body}{space}{joined}{end}"


def _remove(text: str, start: int, end: int) -> str:
    """Cut a sentence out, with the space that separated it, and a list line it leaves empty."""
    before, after = text[:start], text[end:]
    if before.endswith((" ", "\t")) and (after.startswith((" ", "\t", "\n")) or not after):
        before = before.rstrip(" \t")
    elif after.startswith((" ", "\t")):
        after = after.lstrip(" \t")
    line_start = before.rfind("\n") + 1
    if re.fullmatch(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])?[ \t]*", before[line_start:]) and (after.startswith("\n") or not after):
        before, after = before[:line_start], after[1:] if line_start else after.lstrip("\n")
    return before + after


def revised_answer(store: Store, run_id: str, response_id: str, *, accept_verified: bool = False) -> RevisedAnswer:
    """The answer with its accepted suggestions applied (``accept_verified``: also every verified
    suggestion still pending, without recording a decision). Citations are kept; a deletion removes
    the sentence; when several are accepted for one statement the best verified one is used."""
    run = store.get_run(run_id)
    rows = store.responses_by_rid(run.id, response_id)
    if not rows:
        raise CleanupError(f"run {run.id} has no response '{response_id}'; `sourcecheckup show {run.id}` lists them")
    row = rows[0]
    text = row.response.text
    statements = store.statements_for(row.pk)
    chosen: dict[int, SuggestionRow] = {}
    pool: dict[int, list[SuggestionRow]] = {}
    for suggestion in suggestions(store, run.id, row.pk):
        take = suggestion.decision is Decision.ACCEPTED or (
            accept_verified and suggestion.decision is Decision.PENDING
            and suggestion.status is SuggestionStatus.VERIFIED)
        if take:
            pool.setdefault(suggestion.statement_pk, []).append(suggestion)
    for pk, candidates in pool.items():
        chosen[pk] = _best(candidates)
    placed = [s for s in statements if 0 <= s.statement.start < s.statement.end <= len(text)]
    unplaced = [chosen[s.pk].pk for s in statements if s.pk in chosen and s not in placed]
    # statements whose spans overlap (an LLM parser splits one sentence in two) are rewritten together
    clusters: list[list[StatementRow]] = []
    for s in sorted(placed, key=lambda s: (s.statement.start, s.statement.index)):
        if clusters and s.statement.start < max(x.statement.end for x in clusters[-1]):
            clusters[-1].append(s)
        else:
            clusters.append([s])
    applied: list[AppliedSuggestion] = []
    revised = text
    for cluster in reversed(clusters):
        if not any(s.pk in chosen for s in cluster):
            continue
        start = min(s.statement.start for s in cluster)
        end = max(s.statement.end for s in cluster)
        parts = []
        for s in sorted(cluster, key=lambda s: s.statement.index):
            sug = chosen.get(s.pk)
            if sug is None:
                parts.append(s.statement.text)
            elif sug.kind is SuggestionKind.REWRITE:
                parts.append(sug.suggested)
        before = revised[start:end]
        if parts:
            after = with_citations(" ".join(parts), before)
            revised = revised[:start] + after + revised[end:]
        else:
            after = ""
            revised = _remove(revised, start, end)
        for s in cluster:
            if s.pk in chosen:
                sug = chosen[s.pk]
                applied.append(AppliedSuggestion(sug.pk, s.pk, sug.kind, sug.status, start, end, before, after))
    applied.sort(key=lambda a: (a.start, a.suggestion_pk))
    return RevisedAnswer(row.response.id, text, revised, applied, unplaced)
