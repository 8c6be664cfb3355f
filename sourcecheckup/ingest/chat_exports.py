"""Chat histories exported by the products themselves: ChatGPT's and Claude's ``conversations.json``.

Every assistant turn becomes an answer, with the user's message before it as its question, the
conversation's title (and, for ChatGPT, the model) kept. Citations come from the message's own
metadata, put back where the answer cites them, so a statement keeps its sources:

- ChatGPT (``mapping`` tree; the branch shown is found from ``current_node`` up through ``parent``):
  ``metadata.content_references`` (``grouped_webpages`` items at ``matched_text`` such as
  ``\\ue200cite\\ue202turn0search1\\ue201``, ``sources_footnote``) and the older ``metadata.citations``
  (``start_ix``/``end_ix`` over ``【11†source】``); Markdown links in the text stay links.
- Claude (``chat_messages``, ``sender`` human / assistant): text blocks in ``content`` with their
  ``citations`` (a URL each), else the message's ``text``.

Shapes learnt from public code that reads these exports; tests/fixtures/exports/README.md names it.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any, Iterable, Mapping

from ..models import SkippedRecord
from ..urls import normalise_url
from .answer import build_response
from .html import marker_before_stop
from .records import (
    DEPTH_PROBLEM,
    IngestError,
    IngestResult,
    InputText,
    TooDeep,
    array_items,
    kind_of,
    parse_json,
    too_deep,
)

CHATGPT, CLAUDE = "ChatGPT", "Claude"
# ChatGPT's private-use citation markers ("\ue200cite\ue202turn0search1\ue201") and its older "【11†source】"
_PRIVATE_MARKER = re.compile("\ue200[^\ue201]{0,200}\ue201|[\ue202-\ue206]")
_URL_KEYS = ("url", "uri", "href")
_CITED_TYPES = ("grouped_webpages", "webpage", "grouped_webpages_model_predicted_fallback", "webpage_extended")


def export_kind(value: Any) -> str | None:
    """CHATGPT, CLAUDE or None: which product's export a parsed JSON value is."""
    items = value.get("conversations") if isinstance(value, Mapping) else value
    if isinstance(value, Mapping) and items is None:
        items = [value]
    if not isinstance(items, list) or not items:
        return None
    first = next((c for c in items if isinstance(c, Mapping)), None)
    if first is None:
        return None
    if isinstance(first.get("mapping"), Mapping):
        return CHATGPT
    if isinstance(first.get("chat_messages"), list):
        return CLAUDE
    return None


def sniff_export(text: str) -> Any | None:
    """The parsed export when ``text`` is one (cheap test first: a key only exports have), else None."""
    if '"mapping"' not in text and '"chat_messages"' not in text:
        return None
    try:
        value = parse_json(text)
    except json.JSONDecodeError:
        return None
    except IngestError:   # nested past the cap: the conversations that are not are still read
        if not text.lstrip().startswith("["):
            return None   # read as JSON, which names the cap
        try:
            value = [obj for obj, _, _ in array_items(text)]
        except json.JSONDecodeError:
            return None
    return value if export_kind(value) else None


def _conversations(value: Any) -> list[Any]:
    items: Any = value.get("conversations") if isinstance(value, Mapping) else value
    if isinstance(value, Mapping) and items is None:
        items = [value]
    return list(items)


def _when(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            return _dt.datetime.fromtimestamp(value, _dt.timezone.utc).isoformat(timespec="seconds")
        except (OverflowError, OSError, ValueError):
            return None
    return value if isinstance(value, str) and value else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _slug(title: str) -> str:
    words = re.findall(r"[^\W_]+", title.lower())[:5]
    return "-".join(words)[:40]


def load_chat_export(value: Any, src: InputText) -> IngestResult:
    """Every assistant turn of every conversation of an export, or the records that could not be read."""
    kind = export_kind(value)
    result = IngestResult()
    conversations = _conversations(value)
    turns = 0
    for n, conversation in enumerate(conversations, start=1):
        where = f"{src.name} conversation {n}"
        if isinstance(conversation, TooDeep) or too_deep(conversation):
            result.skipped.append(SkippedRecord(where, DEPTH_PROBLEM.replace("this record", "this conversation")))
            continue
        if not isinstance(conversation, Mapping):
            result.skipped.append(SkippedRecord(where, f"a conversation is {kind_of(conversation)}, expected an object"))
            continue
        title = str(conversation.get("title") or conversation.get("name") or "").strip()
        if title:
            where += f" ({title[:60]})"
        try:
            found = list(_chatgpt_turns(conversation) if kind == CHATGPT else _claude_turns(conversation))
        except IngestError as e:
            result.skipped.append(SkippedRecord(where, str(e)))
            continue
        except (TypeError, AttributeError, ValueError, KeyError) as e:   # a shape no export has had yet
            result.skipped.append(SkippedRecord(where, f"this conversation could not be read ({type(e).__name__}: {e})"))
            continue
        if not found:
            result.skipped.append(SkippedRecord(where, "no assistant answer in this conversation"))
            continue
        cited_here: set[str] = set()
        stem = _slug(title) or f"{src.stem}-{n}"
        for k, turn in enumerate(found, start=1):
            origin = f"{where} turn {k}"
            if isinstance(turn, SkippedRecord):
                result.skipped.append(SkippedRecord(origin, turn.problem))
                continue
            text, sources, question, model, created = turn
            extra = {k2: v for k2, v in (("conversation", title), ("conversation_id", conversation.get("id")
                     or conversation.get("uuid") or conversation.get("conversation_id")), ("created", created),
                     ("chat_product", kind)) if isinstance(v, str) and v}
            try:
                response = build_response(text, sources, origin=origin, rid=f"{stem}-{k}",
                                          question=question or src.question, model=model or src.model, extra=extra)
            except IngestError as e:
                result.skipped.append(SkippedRecord(origin, str(e)))
                continue
            result.responses.append(response)
            cited_here.update(response.citations)
            turns += 1
        try:
            left = _left_out(conversation, kind, cited_here)
        except (TypeError, AttributeError, ValueError, KeyError):
            left = ""
        if left:
            result.notes.append(f"{where}: left out {left}")
    result.notes.append(f"{src.name}: read as a {kind} export: {len(conversations)} conversation(s), "
                        f"{turns} answer(s), {len(result.skipped)} skipped")
    return result


def _left_out(conversation: Mapping[str, Any], kind: str | None, cited: set[str]) -> str:
    """What a conversation holds besides its answers, named so nothing goes unmentioned: answers on other
    branches (regenerated or edited), tool calls and reasoning, search results the answers did not cite."""
    other_branch = tool_steps = 0
    results: set[str] = set()
    if kind == CHATGPT:
        shown = {id(m) for m in _chatgpt_path(conversation)}
        for node in _map(conversation.get("mapping")).values():
            message = node.get("message") if isinstance(node, Mapping) else None
            if not isinstance(message, Mapping):
                continue
            role = (message.get("author") or {}).get("role") if isinstance(message.get("author"), Mapping) else None
            if id(message) not in shown:
                other_branch += role == "assistant"
            elif role == "tool" or (role == "assistant" and message.get("recipient", "all") != "all"):
                tool_steps += 1
            metadata = _map(message.get("metadata"))
            for group in _list(metadata.get("search_result_groups")):
                if id(message) in shown and isinstance(group, Mapping):
                    results.update(_urls_of(_list(group.get("entries"))))
    else:
        for message in _list(conversation.get("chat_messages")):
            for block in _list(message.get("content")) if isinstance(message, Mapping) else []:
                if isinstance(block, Mapping) and block.get("type") in ("tool_use", "tool_result", "thinking"):
                    tool_steps += 1
                    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                        results.update(_urls_of(block["content"]))
    uncited = {u for u in (normalise_url(r) for r in results) if u and u not in cited}
    parts = [f"{other_branch} answer(s) on other branches (regenerated or edited)" if other_branch else "",
             f"{tool_steps} tool call(s), tool result(s) or reasoning step(s)" if tool_steps else "",
             f"{len(uncited)} search result(s) the answers did not cite" if uncited else ""]
    return ", ".join(p for p in parts if p)


# ------------------------------------------------------------------------------------------ ChatGPT
Turn = tuple[str, list[str], "str | None", "str | None", "str | None"]   # text, sources, question, model, created


def _chatgpt_path(conversation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The messages of the branch the conversation shows: from current_node up to the root, reversed."""
    mapping = conversation.get("mapping")
    if not isinstance(mapping, Mapping) or not mapping:
        raise IngestError("'mapping' holds no messages")
    node_id = conversation.get("current_node")
    if node_id not in mapping:
        # no current node: follow the last child from the root, the branch written last
        roots = [k for k, v in mapping.items() if isinstance(v, Mapping) and not v.get("parent")]
        node_id = roots[0] if roots else next(iter(mapping))
        below: set[Any] = set()   # a hostile or damaged export's children can loop back: never walk forever
        while isinstance(mapping.get(node_id), Mapping) and isinstance(mapping[node_id].get("children"), list) \
                and mapping[node_id]["children"]:
            if node_id in below:
                raise IngestError(f"the message tree loops: message {str(node_id)[:80]!r} is its own descendant")
            below.add(node_id)
            node_id = mapping[node_id]["children"][-1]
            if not isinstance(node_id, str):
                break
    path: list[Mapping[str, Any]] = []
    seen: set[Any] = set()
    while node_id in mapping:
        if node_id in seen:
            raise IngestError(f"the message tree loops: message {str(node_id)[:80]!r} is its own ancestor")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, Mapping):
            break
        if isinstance(node.get("message"), Mapping):
            path.append(node["message"])
        node_id = node.get("parent")
    return path[::-1]


def _parts_text(content: Mapping[str, Any]) -> str:
    parts = content.get("parts")
    if isinstance(parts, list):
        return "".join(p for p in parts if isinstance(p, str))
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _urls_of(items: Iterable[Any]) -> list[str]:
    urls = []
    for item in items:
        if isinstance(item, Mapping):
            url = next((item[k] for k in _URL_KEYS if isinstance(item.get(k), str) and item[k]), None)
            if url:
                urls.append(url)
    return urls


def _marker(urls: list[str]) -> str:
    return "".join(f" <{u}>" for u in dict.fromkeys(urls))


def _chatgpt_cited_text(message: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The answer text with each citation put back as a marker where it stands, and the listed sources."""
    text = _parts_text(_map(message.get("content")))
    metadata = _map(message.get("metadata"))
    listed: list[str] = []
    edits: list[tuple[int, int, str]] = []
    cursor = 0
    for ref in _list(metadata.get("content_references")):
        if not isinstance(ref, Mapping):
            continue
        matched = ref.get("matched_text")
        kind = ref.get("type")
        if kind == "sources_footnote":
            listed += _urls_of(_list(ref.get("sources")))
            replacement = ""
        elif kind in _CITED_TYPES:
            urls = _urls_of(_list(ref.get("items")))
            for item in _list(ref.get("items")):
                if isinstance(item, Mapping):
                    urls += _urls_of(_list(item.get("supporting_websites")))
            replacement = _marker(urls)
        else:
            replacement = ""      # "hidden", images, products: not a source
        if not isinstance(matched, str) or not matched:
            continue
        start = text.find(matched, cursor)
        if start < 0:
            start = text.find(matched)
        if start < 0:
            continue
        edits.append((start, start + len(matched), replacement))
        cursor = start + len(matched)
    for cite in _list(metadata.get("citations")):   # the older shape: 【11†source】 at start_ix..end_ix
        if not isinstance(cite, Mapping):
            continue
        inner = _map(cite.get("metadata"))
        url = next((inner[k] for k in _URL_KEYS if isinstance(inner.get(k), str)), None)
        start_ix, end_ix = cite.get("start_ix"), cite.get("end_ix")
        if url and isinstance(start_ix, int) and isinstance(end_ix, int) and 0 <= start_ix <= end_ix <= len(text):
            edits.append((start_ix, end_ix, _marker([url])))
    for start, end, replacement in sorted(set(edits), key=lambda e: e[0], reverse=True):
        text = (marker_before_stop(text[:start], replacement) if replacement else text[:start]) + text[end:]
    return _PRIVATE_MARKER.sub("", text), listed


def _visible(message: Mapping[str, Any]) -> bool:
    metadata = _map(message.get("metadata"))
    return not metadata.get("is_visually_hidden_from_conversation")


def _chatgpt_turns(conversation: Mapping[str, Any]) -> Iterable[Turn | SkippedRecord]:
    question: str | None = None
    pending: list[Mapping[str, Any]] = []

    def flush() -> Iterable[Turn | SkippedRecord]:
        if not pending:
            return
        texts, sources, model, created = [], [], None, None
        for m in pending:
            text, listed = _chatgpt_cited_text(m)
            if text.strip():
                texts.append(text.strip())
            sources += listed
            metadata = _map(m.get("metadata"))
            slug = metadata.get("model_slug") or metadata.get("default_model_slug")
            model = model or (slug if isinstance(slug, str) else None)
            created = created or _when(m.get("create_time"))
        kinds = sorted({str(_map(m.get("content")).get("content_type") or "no content") for m in pending})
        pending.clear()
        if not texts:
            yield SkippedRecord("", f"the assistant's turn has no answer text ({', '.join(kinds)})")
            return
        yield "\n\n".join(texts), list(dict.fromkeys(sources)), question, model, created

    for message in _chatgpt_path(conversation):
        role = (message.get("author") or {}).get("role") if isinstance(message.get("author"), Mapping) else None
        content = _map(message.get("content"))
        if role == "user" and _visible(message):
            yield from flush()
            question = _parts_text(content).strip() or question
        elif role == "assistant" and _visible(message) and message.get("recipient", "all") == "all" \
                and content.get("content_type", "text") in ("text", "multimodal_text") \
                and message.get("channel") in (None, "final"):
            pending.append(message)
        # tool calls (recipient "browser"), tool output, reasoning ("thoughts") and system messages are not answers
    yield from flush()


# ------------------------------------------------------------------------------------------ Claude
def _claude_text(message: Mapping[str, Any]) -> str:
    blocks = message.get("content")
    if isinstance(blocks, list) and any(isinstance(b, Mapping) and b.get("type") == "text" for b in blocks):
        out = []
        for block in blocks:
            if not isinstance(block, Mapping) or block.get("type") != "text":
                continue          # thinking, tool_use and tool_result blocks are not the answer
            urls = []
            for cite in _list(block.get("citations")):
                if isinstance(cite, Mapping):
                    found = _urls_of([cite]) or _urls_of([cite.get("details")]) or _urls_of([cite.get("metadata")])
                    urls += found
            out.append(marker_before_stop(str(block.get("text") or ""), _marker(urls)) if urls
                       else str(block.get("text") or ""))
        return "".join(out)
    text = message.get("text")
    return text if isinstance(text, str) else ""


def _claude_turns(conversation: Mapping[str, Any]) -> Iterable[Turn | SkippedRecord]:
    model = conversation.get("model") if isinstance(conversation.get("model"), str) else None
    question: str | None = None
    for message in _list(conversation.get("chat_messages")):
        if not isinstance(message, Mapping):
            yield SkippedRecord("", f"a message is {kind_of(message)}, expected an object")
            continue
        sender = message.get("sender") or message.get("role")
        if sender in ("human", "user"):
            question = _claude_text(message).strip() or question
        elif sender == "assistant":
            text = _claude_text(message)
            if not text.strip():
                yield SkippedRecord("", "the assistant's message has no text")
                continue
            yield text, [], question, model, _when(message.get("created_at"))
