"""A verifier's reply read as models actually write it: the verdict object and its label spellings,
a batch of verdicts, and a bare label written without JSON.

Every reply that carries a decision is read; a reply with none raises
:class:`~sourcecheckup.llm.replies.ReplyError` (the judge asks once for a repair, then records
``judge_error``), never a guess at "not supported". "Partially supported" is not supported (the
study's rule).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..llm.replies import ReplyError, extract_json_object
from ..models import Label


@dataclass(frozen=True)
class ParsedVerdict:
    label: Label
    quote: str
    rationale: str
    contradicted: bool = False     # the source says something different (label is not_supported)


# label spellings after normalising: lower case, '_' and '-' as spaces, markdown and punctuation dropped
_SUPPORTED = frozenset({"supported", "fully supported", "support", "supports", "yes", "true", "entailed",
                        "entailment", "entails"})
_NOT_SUPPORTED = frozenset({"not supported", "unsupported", "not support", "partially supported",
                            "partly supported", "partial support", "partial", "partially", "no", "false",
                            "not enough info", "not enough information", "insufficient evidence",
                            "insufficient information", "neutral", "not entailed", "no support",
                            "does not support", "doesn t support", "do not support", "don t support",
                            "not fully supported"})
_CONTRADICTING = frozenset({"contradicted", "contradicts", "contradiction", "refuted", "refutes"})
_LABEL_KEYS = ("label", "verdict", "decision", "judgment", "judgement", "classification", "result",
               "answer", "support", "status")


def normalise_label(label: str) -> str:
    text = re.sub(r"[_\-]+", " ", label.strip().lower())
    text = re.sub(r"[^a-z ]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def label_of(spelling: str) -> tuple[Label, bool] | None:
    """(label, contradicted) for a label as a model spelled it, or None when it names no decision."""
    key = normalise_label(spelling)
    if re.fullmatch(r"supports (?:the|this) (?:statement|claim)", key):
        key = "supports"
    if key in _SUPPORTED:
        return Label.SUPPORTED, False
    if key in _CONTRADICTING:
        return Label.NOT_SUPPORTED, True
    if key in _NOT_SUPPORTED:
        return Label.NOT_SUPPORTED, False
    return None


def _field(obj: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` in ``obj``, keys compared without case."""
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(v.strip() for v in value if v.strip())   # several quoted sentences
    if not isinstance(value, str):
        raise ReplyError(f'"{what}" must be a string')
    return value.strip()


def _flag(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise ReplyError(f'"contradicted" must be true or false, got {value!r}')


def verdict_from_object(obj: Mapping[str, Any]) -> ParsedVerdict:
    """A verdict from a reply object; raises :class:`ReplyError` when it holds no decision."""
    raw = _field(obj, *_LABEL_KEYS)
    if isinstance(raw, bool):          # {"supported": true} and the like
        raw = "supported" if raw else "not supported"
    if raw is None and isinstance(_field(obj, "supported", "is_supported"), bool):
        raw = "supported" if _field(obj, "supported", "is_supported") else "not supported"
    found = label_of(raw) if isinstance(raw, str) else None
    if found is None:
        raise ReplyError(f'"label" must be "supported" or "not_supported", got {raw!r}')
    label, contradicted = found
    quote = _text(_field(obj, "quote", "evidence", "quotes", "supporting_quote"), "quote")
    rationale = _text(_field(obj, "rationale", "reason", "reasoning", "explanation", "justification"),
                      "rationale")
    contradicted = contradicted or _flag(_field(obj, "contradicted"))
    if contradicted and label is Label.SUPPORTED:
        raise ReplyError('"contradicted": true goes with "label": "not_supported", not "supported"')
    return ParsedVerdict(label, quote, rationale, contradicted)


# a label written as prose: "Verdict: **Not supported**", "The statement is supported."
_MARKED = re.compile(r"\b(?:label|verdict|decision|judge?ment|conclusion|classification|answer)\b\W{0,6}"
                     r"((?:not|un|partially|partly|fully)?[\s_-]*supported|contradicted|refuted)\b", re.I)
_PHRASE = re.compile(r"\b((?:not|un|partially|partly|fully)?[\s_-]*supported|contradicted|refuted|"
                     r"(?:does not|doesn't|do not|don't)\s+support|supports\s+(?:the|this)\s+(?:statement|claim))\b",
                     re.I)
_NEGATED = re.compile(r"\b(?:not|never|isn't|is ?n't|cannot be|can't be|no longer|neither|nor)\s+"
                      r"(?:\w+\s+){0,2}$", re.I)
_QUESTION = re.compile(r"[^.!?\n]*\?")


def _phrase_label(match: re.Match[str], text: str) -> tuple[Label, bool]:
    found = label_of(match.group(1))
    assert found is not None
    if found[0] is Label.SUPPORTED and _NEGATED.search(text[max(0, match.start() - 40):match.start()]):
        return Label.NOT_SUPPORTED, False     # "is not fully supported", "isn't really supported"
    return found


def read_bare_verdict(text: str) -> ParsedVerdict:
    """A verdict written without JSON; raises :class:`ReplyError` when the text decides nothing or
    names both labels (questions like "Is it supported?" do not count)."""
    marked = list(_MARKED.finditer(text))
    if marked:
        readings = {_phrase_label(m, text) for m in marked}
    else:
        asked = _QUESTION.sub(" ", text)
        readings = {_phrase_label(m, asked) for m in _PHRASE.finditer(asked)}
    labels = {label for label, _ in readings}
    if len(labels) != 1:
        raise ReplyError("the reply names no label" if not labels else "the reply names both labels")
    label = labels.pop()
    contradicted = label is Label.NOT_SUPPORTED and any(c for _, c in readings)
    return ParsedVerdict(label, "", " ".join(text.split())[:500], contradicted)


def parse_verdict(text: str | None, payload: Mapping[str, Any] | None = None) -> ParsedVerdict:
    """A verdict from a reply: a structured payload (tool input), JSON text, or a bare label."""
    if payload is not None:
        return verdict_from_object(payload)
    try:
        obj = extract_json_object(text or "", mend=True, last=True)
    except ReplyError:
        from ..llm.replies import strip_reasoning

        if not (text or "").strip():
            raise
        return read_bare_verdict(strip_reasoning(text or ""))
    return verdict_from_object(obj)


def parse_batch(text: str | None, count: int, payload: Mapping[str, Any] | None = None) -> list[ParsedVerdict]:
    obj = payload if payload is not None else extract_json_object(text or "", mend=True, last=True)
    items = _field(obj, "verdicts", "results")
    if not isinstance(items, list):
        raise ReplyError('the reply must have a "verdicts" list')
    by_index: dict[int, ParsedVerdict] = {}
    for position, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise ReplyError("every entry of \"verdicts\" must be an object")
        index = item.get("index", position)
        if isinstance(index, str) and index.strip().isdigit():
            index = int(index.strip())
        if not isinstance(index, int) or not 1 <= index <= count:
            raise ReplyError(f'"index" must be a number from 1 to {count}, got {index!r}')
        by_index[index] = verdict_from_object(item)
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise ReplyError(f"verdicts are missing for statement(s) {', '.join(map(str, missing))}; "
                         f"give exactly {count}")
    return [by_index[i] for i in range(1, count + 1)]
