"""The LLM statement parser: ``--parser openai:MODEL``, ``anthropic:MODEL``, ``openai-compatible:URL#MODEL``.

The model splits an answer into atomic, self-contained medical facts (the paper's
decomposition) and classes the other sentences (ASTRID: acknowledgement, question,
disclaimer, refusal). It talks through an LLM client (:mod:`sourcecheckup.llm`), so it has the
same keys, retries, rate limits and one repair attempt as the judges.

Statements keep their intended sources: each one is mapped back, by lexical overlap, to the
sentence(s) of the answer it came from (as the offline parser splits it), which give its
character span and its cited markers. An answer sentence the model left out is kept as the
offline parser reads it, and anything that goes wrong makes the whole answer fall back to
the offline parser; either way the pipeline writes the reason to the run log.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..evidence import tokens
from ..llm import make_client, split_options
from ..llm.client import CallOptions, LLMClient
from ..llm.replies import ReplyError, Schema, TaskError, ask_json, new_boundary
from ..models import Response, Statement, StatementCategory
from ..prompts import load_prompt
from .base import ParserSpecError
from .builtin import BuiltinParser

log = logging.getLogger("sourcecheckup.parse")

DEFAULT_PARSER_PROMPT = "parser-v1"
MAX_OUTPUT_TOKENS = 4096
# a statement must find this share of its words in the answer, else it was invented
MIN_OVERLAP = 0.5
# the model's copy of its source sentence must hold this share of a sentence's words to name it...
NAMED = 0.6
# ...and this share for a second sentence to join the statement's span
JOINED = 0.8
MAX_SENTENCES = 3

PARSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "category": {"type": "string", "enum": [c.value for c in StatementCategory]},
                    "sentence": {"type": "string"},
                },
                "required": ["text", "category", "sentence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["statements"],
    "additionalProperties": False,
}
PARSE = Schema("statements", PARSE_SCHEMA, "Record the answer's statements, in order.",
               example='{"statements": [{"text": "...", "category": "informative" | "acknowledgement" '
                       '| "question" | "disclaimer" | "refusal", "sentence": "..."}, ...]}')

_CATEGORY_ALIASES = {c.value: c for c in StatementCategory} | {
    "info": StatementCategory.INFORMATIVE, "fact": StatementCategory.INFORMATIVE,
    "medical_fact": StatementCategory.INFORMATIVE, "acknowledgment": StatementCategory.ACKNOWLEDGEMENT,
}


@dataclass(frozen=True)
class ParsedStatement:
    """One statement as the model wrote it, before it is placed in the answer."""

    text: str
    category: StatementCategory
    sentence: str = ""        # the answer sentence(s) it comes from, as the model copied them


def statements_from_object(obj: Mapping[str, Any]) -> list[ParsedStatement]:
    """The model's statements from its reply object; :class:`ReplyError` when it is not usable."""
    items = obj.get("statements")
    if not isinstance(items, list):
        raise ReplyError('the reply must have a "statements" list')
    out: list[ParsedStatement] = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise ReplyError(f'entry {n} of "statements" is not an object')
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ReplyError(f'entry {n} of "statements" has no "text"')
        category = _CATEGORY_ALIASES.get(str(item.get("category", "")).strip().lower().replace(" ", "_"))
        if category is None:
            raise ReplyError(f'entry {n} has category {item.get("category")!r}; use one of '
                             + ", ".join(c.value for c in StatementCategory))
        sentence = item.get("sentence")
        out.append(ParsedStatement(" ".join(text.split()), category,
                                   " ".join(sentence.split()) if isinstance(sentence, str) else ""))
    if not out:
        raise ReplyError("the reply lists no statements; return every sentence of the answer with its class")
    return out


# --------------------------------------------------------------------------------------------
# Placing statements in the answer


def _stems(text: str) -> set[str]:
    words = tokens(text)
    if not words:  # "Thanks!" has only stop words: compare those
        words = [w.lower() for w in text.split()]
    return {w if len(w) <= 5 or w[0].isdigit() else w[:5] for w in words}


@dataclass(frozen=True)
class Alignment:
    statements: list[Statement]
    notes: list[str]          # what the run log should say (left-out sentences, invented statements)


def _f1(a: set[str], b: set[str]) -> float:
    shared = len(a & b)
    return 2 * shared / (len(a) + len(b)) if shared else 0.0


def align(parsed: Sequence[ParsedStatement], sentences: Sequence[Statement]) -> Alignment:
    """Give each model statement the span and citations of the answer sentence(s) it came from.

    ``sentences`` are the offline parser's statements of the same answer (one per sentence). The
    model's verbatim copy of the source sentence decides where it can; otherwise the statement's
    own words do (F1 overlap, so a decontextualised subject does not pull it to another sentence).
    """
    notes: list[str] = []
    sentence_words = [_stems(s.text) for s in sentences]
    answer_words = set().union(*sentence_words) if sentence_words else set()
    placed: list[tuple[int, int, Statement]] = []   # (start, order, statement)
    covered: set[int] = set()
    cursor = 0

    def pick(scores: Sequence[float]) -> int:
        # ties go to the first sentence at or after the previous statement's (answers are read in order)
        return max(range(len(sentences)), key=lambda i: (scores[i], i >= cursor, -abs(i - cursor)))

    for order, p in enumerate(parsed):
        words = _stems(p.text)
        if not words or len(words & answer_words) / len(words) < MIN_OVERLAP:
            notes.append(f"dropped a statement the answer does not contain: {p.text[:80]!r}")
            continue
        chosen: list[int] = []
        copy = _stems(p.sentence) if p.sentence else set()
        if copy:
            contained = [len(sw & copy) / len(sw) if sw else 0.0 for sw in sentence_words]
            best = pick([c + _f1(copy, sw) / 10 for c, sw in zip(contained, sentence_words)])
            if contained[best] >= NAMED:
                chosen = [i for i in range(len(sentences)) if i == best or (
                    contained[i] >= JOINED and abs(i - best) <= MAX_SENTENCES - 1)][:MAX_SENTENCES]
        if not chosen:
            scores = [_f1(words, sw) for sw in sentence_words]
            best = pick(scores)
            if scores[best] == 0.0:
                notes.append(f"dropped a statement the answer does not contain: {p.text[:80]!r}")
                continue
            chosen = [best]
        cursor = best
        covered.update(chosen)
        cited = tuple(dict.fromkeys(c for i in chosen for c in sentences[i].cited))
        start = min(sentences[i].start for i in chosen)
        end = max(sentences[i].end for i in chosen)
        placed.append((start, order, Statement(index=0, text=p.text, category=p.category, cited=cited,
                                               start=start, end=end)))
    for i, s in enumerate(sentences):
        if i in covered:
            continue
        if s.informative:
            notes.append(f"the LLM parser left out sentence {i + 1} ({s.text[:80]!r}); "
                         "kept as the offline parser split it")
        placed.append((s.start, len(parsed) + i, s))
    placed.sort(key=lambda t: (t[0], t[1]))
    statements = [Statement(index=k, text=s.text, category=s.category, cited=s.cited, start=s.start, end=s.end)
                  for k, (_, _, s) in enumerate(placed)]
    return Alignment(statements, notes)


# --------------------------------------------------------------------------------------------
# The parser


class LLMParser:
    """A :class:`~sourcecheckup.parse.Parser` that asks an LLM, with the offline parser as fallback."""

    def __init__(self, llm: LLMClient, prompt_path: str | None = None) -> None:
        self.llm = llm
        self.options = CallOptions(temperature=0, seed=llm.settings.seed, max_tokens=MAX_OUTPUT_TOKENS)
        self.prompt = load_prompt(prompt_path, default=DEFAULT_PARSER_PROMPT, required=("answer",))
        self.id = llm.id
        self.version = self.prompt.version
        self.offline = BuiltinParser()
        self._notes: dict[int, tuple[Response, list[str]]] = {}

    def take_warnings(self, response: Response) -> list[str]:
        """What the run log should say about parsing ``response`` (a fallback, left-out sentences)."""
        entry = self._notes.pop(id(response), None)
        return entry[1] if entry is not None and entry[0] is response else []

    def _note(self, response: Response, messages: list[str]) -> None:
        if messages:
            self._notes[id(response)] = (response, messages)
            for m in messages:
                log.info("%s", m)   # the run shows it once, as a warning (take_warnings)

    async def parse(self, response: Response) -> list[Statement]:
        sentences = self.offline.parse_sync(response)
        if not (response.text or "").strip():
            return sentences
        boundary = new_boundary()
        while boundary in response.text:
            boundary = new_boundary()
        block = f"BEGIN ANSWER {boundary}\n{response.text}\nEND ANSWER {boundary}"
        system, user = self.prompt.render(answer=block, boundary=boundary, question=response.question or "")
        try:
            answer = await ask_json(self.llm, system, user, PARSE, statements_from_object, self.options)
            aligned = align(answer.value, sentences)
        except asyncio.CancelledError:
            raise
        except TaskError as exc:
            self._note(response, [f"LLM parser {self.id} failed on {response.id}: {exc}; "
                                  "used the offline parser for this answer"])
            return sentences
        except Exception as exc:  # a parser bug must not lose the answer: the offline parse stands
            self._note(response, [f"LLM parser {self.id} failed on {response.id}: {type(exc).__name__}: "
                                  f"{self.llm.redact(str(exc))}; used the offline parser for this answer"])
            return sentences
        if not any(s.informative for s in aligned.statements) and any(s.informative for s in sentences):
            self._note(response, [f"LLM parser {self.id} found no medical statement in {response.id} where "
                                  "the offline parser found some; used the offline parser for this answer"])
            return sentences
        self._note(response, [f"{response.id}: {n}" for n in aligned.notes])
        return aligned.statements

    async def aclose(self) -> None:
        await self.llm.aclose()


def _make(kind: str, argument: str, options: Mapping[str, Any]) -> LLMParser:
    prompt_path = options.get("parser_prompt_path")
    if not argument:
        raise ParserSpecError(f"the {kind} parser needs a model: --parser {kind}:MODEL")
    client_options, _ = split_options(options)
    return LLMParser(make_client(f"{kind}:{argument}", **client_options), prompt_path)


def from_openai_spec(argument: str, **options: Any) -> LLMParser:
    return _make("openai", argument, options)


def from_anthropic_spec(argument: str, **options: Any) -> LLMParser:
    return _make("anthropic", argument, options)


def from_compatible_spec(argument: str, **options: Any) -> LLMParser:
    return _make("openai-compatible", argument, options)
