"""Structured replies: the schema asked for, JSON taken out of a reply, and the one repair loop.

Also the data block with a random boundary, in which untrusted text (a source, an answer)
is handed to a model as data, never as instructions.
"""
from __future__ import annotations

import json
import logging
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from .client import CallOptions, LLMClient, Reply

log = logging.getLogger("sourcecheckup.llm")


@dataclass(frozen=True)
class Schema:
    name: str
    json_schema: dict[str, Any]
    description: str
    example: str | None = None     # the reply's shape, told to the model when it must repair a reply


class ReplyError(ValueError):
    """A reply that is not the JSON we asked for; ``problem`` is told to the model on repair."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def reply_problem(exc: ReplyError, reply: "Reply") -> str:
    """What was wrong with a reply, in words the repair request and the error row both use."""
    if reply.stop in ("length", "max_tokens"):
        return exc.problem + " (the reply was cut off at the output limit; keep it short)"
    return exc.problem


_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.S)
# reasoning that open models write before answering (Qwen, DeepSeek-R1, QwQ, Magistral...)
_REASONING = re.compile(r"<(think|thinking|reasoning|reflection)>.*?</\1>", re.S | re.I)
_REASONING_OPEN = re.compile(r"<(?:think|thinking|reasoning|reflection)>.*", re.S | re.I)
_REASONING_CLOSE = re.compile(r"^.*</(?:think|thinking|reasoning|reflection)>", re.S | re.I)
_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*<\|message\|>(.*?)(?:<\|(?:end|return)\|>|$)", re.S)


def strip_reasoning(text: str) -> str:
    """The answer part of a reply: reasoning blocks removed, also an unclosed one (the template may
    have opened it, or the reply was cut off inside it), and gpt-oss's final channel taken."""
    final = _HARMONY_FINAL.search(text)
    if final:
        text = final.group(1)
    text = _REASONING.sub(" ", text)
    text = _REASONING_CLOSE.sub(" ", text)    # '...reasoning</think> answer': the template opened it
    return _REASONING_OPEN.sub(" ", text).strip()


def _first_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value or None
    if isinstance(value, list):  # several objects in a row: the first one
        return next((v for v in value if isinstance(v, dict) and v), None)
    return None


def extract_json_object(text: str, mend: bool = False, last: bool = False) -> dict[str, Any]:
    """The first JSON object in ``text``: reasoning blocks, code fences and chatter around it are
    dropped. With ``mend``, single quotes, unquoted keys, trailing commas and a cut-off end are
    mended by ``json_repair`` (right for a one-word decision; a caller whose lists a cut-off end would
    shorten, the parser or an answer, keeps it off). With ``last``, the last well-formed top-level
    object instead: a verdict is the model's final answer, and an object it quoted from the source
    before answering (an injected ``{"label": "supported"}``) must not decide. Raises
    :class:`ReplyError` when there is no object to read."""
    if not text or not text.strip():
        raise ReplyError("the reply was empty")
    answer = strip_reasoning(text)
    if last and (found := _last_object(answer)) is not None:
        return found
    fenced = [m.group(1) for m in _FENCE.finditer(answer) if "{" in m.group(1)]
    candidates = fenced + [answer]
    decoder = json.JSONDecoder()
    empty: dict[str, Any] | None = None
    for candidate in candidates:   # strict JSON first, at every opening brace
        for match in re.finditer(r"\{", candidate):
            try:
                obj, _ = decoder.raw_decode(candidate[match.start():])
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                if obj:
                    return obj
                empty = obj if empty is None else empty
    if empty is not None:
        return empty
    for candidate in candidates if mend else ():
        start = candidate.find("{")
        if start < 0:
            continue
        from json_repair import repair_json

        try:
            obj = _first_object(repair_json(candidate[start:], return_objects=True))
        except Exception:  # the library's own failure: treat as no object
            obj = None
        if obj is not None:
            return obj
    if "{" in answer:
        raise ReplyError("the reply is not valid JSON" + (" and could not be mended" if mend else ""))
    raise ReplyError("the reply contained no JSON object")


def _last_object(text: str) -> dict[str, Any] | None:
    """The last non-empty well-formed JSON object at the top level of ``text`` (objects inside it and
    inside strings are part of it), or None."""
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    pos = 0
    while (start := text.find("{", pos)) >= 0:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        if isinstance(obj, dict) and obj:
            found = obj
        pos = end
    return found


def reply_object(reply: "Reply", mend: bool = False, last: bool = False) -> dict[str, Any]:
    """The reply's JSON object: the structured payload when the API delivered one, else parsed text."""
    return dict(reply.payload) if reply.payload is not None else extract_json_object(reply.text or "", mend, last)


def repair_instruction(problem: str, schema: Schema) -> str:
    shape = schema.example or json.dumps(schema.json_schema)
    return (f"Your reply could not be used: {problem}. Reply again with only a JSON object of "
            f"exactly this form and nothing else: {shape}")


# ---------------------------------------------------------------------------------------------
# Untrusted text as a data block


def new_boundary() -> str:
    return secrets.token_hex(8).upper()


def delimit_source(text: str, boundary: str, title: str | None = None, url: str = "") -> str:
    """The source as a data block between two lines that carry a random boundary."""
    head = []
    if title:
        head.append(f"Title: {title}")
    if url:
        head.append(f"URL: {url}")
    body = "\n".join(head + ([""] if head else []) + [text])
    return f"BEGIN SOURCE {boundary}\n{body}\nEND SOURCE {boundary}"


# ---------------------------------------------------------------------------------------------
# The repair loop


@dataclass(frozen=True)
class JsonAnswer:
    """A structured reply turned into the task's value, with what it cost."""

    value: Any
    model: str
    tokens_in: int
    tokens_out: int
    repaired: bool = False
    stop: str | None = None        # why the last reply ended ("length": cut off at the output limit)


class TaskError(RuntimeError):
    """A task the model could not complete: the call failed, it refused, or the reply stayed unusable.

    The message holds no secret; ``raw`` keeps the model's replies (redacted) for the run log;
    ``refusal`` is the model's refusal when it refused; tokens count every call made.
    """

    def __init__(self, message: str, raw: str | None = None, *, refusal: str | None = None,
                 model: str = "", tokens_in: int = 0, tokens_out: int = 0):
        super().__init__(message)
        self.raw = raw
        self.refusal = refusal
        self.model = model
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out


async def ask_json(client: "LLMClient", system: str, user: str, schema: Schema,
                   parse: Callable[[Mapping[str, Any]], Any], options: "CallOptions",
                   read_text: Callable[[str], Any] | None = None, mend: bool = False,
                   last: bool = False) -> JsonAnswer:
    """One structured request through ``client``: its retries, limits and usage, and one repair.

    ``parse`` turns the reply object into the task's value and raises :class:`ReplyError` when
    the object is not what was asked for; such a reply gets one repair attempt, in the same
    conversation. ``read_text``, when given, reads a reply that holds no JSON object at all (a bare
    label) and raises :class:`ReplyError` when the text carries no answer either; ``mend`` lets
    ``json_repair`` mend broken JSON and ``last`` reads the reply's last object rather than its first
    (see :func:`extract_json_object`). Raises :class:`TaskError`
    when the call fails, the model refuses or the repaired reply is still unusable.
    """
    from .client import LLMCallError

    turns = client.first_turns(user)
    raws: list[str] = []
    tokens_in = tokens_out = 0
    for round_ in range(2):  # the reply, then at most one repair
        try:
            reply = await client.send(system, turns, schema, options)
        except LLMCallError as exc:
            raise TaskError(str(exc), client.redact("\n".join(raws)) or None,
                            tokens_in=tokens_in, tokens_out=tokens_out) from None
        tokens_in += reply.tokens_in
        tokens_out += reply.tokens_out
        if reply.refusal is not None:
            refusal = client.redact(reply.refusal) or ""
            raise TaskError(client.redact(f"the model refused: {reply.refusal}") or "the model refused",
                            client.redact(reply.refusal or reply.text), refusal=refusal, model=reply.model,
                            tokens_in=tokens_in, tokens_out=tokens_out)
        raws.append(reply.text or "")
        try:
            value = _read(reply, parse, read_text, mend, last)
        except ReplyError as exc:
            problem = reply_problem(exc, reply)
            if round_ == 0:
                log.info("%s: unusable reply (%s); asking once for a repair", client.id, problem)
                turns = client.repair_turns(turns, reply, repair_instruction(problem, schema), schema)
                continue
            raise TaskError(client.redact(f"unparsable reply after one repair attempt: {problem}") or "",
                            client.redact("\n--- repair attempt ---\n".join(raws)), model=reply.model,
                            tokens_in=tokens_in, tokens_out=tokens_out) from None
        return JsonAnswer(value, reply.model, tokens_in, tokens_out, repaired=bool(round_), stop=reply.stop)
    raise AssertionError("unreachable")  # pragma: no cover


def _read(reply: "Reply", parse: Callable[[Mapping[str, Any]], Any],
          read_text: Callable[[str], Any] | None, mend: bool, last: bool = False) -> Any:
    """The task's value from one reply: its JSON object, else (when the caller can) its plain text."""
    try:
        obj = reply_object(reply, mend, last)
    except ReplyError:
        if read_text is None or not (reply.text or "").strip():
            raise
        try:
            return read_text(strip_reasoning(reply.text or ""))
        except ReplyError:
            raise ReplyError("the reply contained no JSON object and no answer") from None
    return parse(obj)
