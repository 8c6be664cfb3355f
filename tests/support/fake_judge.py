"""A deterministic judge for pipeline tests and benchmarks: ``keyword:LATENCY``.

Supported when every content word of the statement occurs in the source text; it sleeps
LATENCY seconds per pair to stand in for an API judge. Registered on import, so the CLI
picks it up through ``SOURCECHECKUP_PLUGINS=tests.support.fake_judge``.
"""
from __future__ import annotations

import asyncio
import os

from sourcecheckup.evidence import SourceText, tokens
from sourcecheckup.judges.base import BaseJudge, register
from sourcecheckup.models import Label, Verdict


class KeywordJudge(BaseJudge):
    prompt_version = "keyword-1"

    def __init__(self, latency_s: float = 0.0, fail_on: str | None = None) -> None:
        self.latency_s = latency_s
        self.fail_on = fail_on
        self.id = f"keyword:{latency_s:g}"
        self.calls = 0

    async def verify(self, statement: str, source: SourceText) -> Verdict:
        self.calls += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self.fail_on and self.fail_on in statement:
            return Verdict.error(self.id, "scripted failure", prompt_version=self.prompt_version)
        haystack = source.cache.get("keyword_tokens")
        if haystack is None:
            haystack = source.cache["keyword_tokens"] = set(tokens(source.text))
        words = tokens(statement)
        hit = sum(1 for w in words if w in haystack)
        score = hit / len(words) if words else 0.0
        supported = score >= 0.999
        quote = ""
        if supported:
            for sent in source.passages:
                if set(words) & set(tokens(sent)):
                    quote = sent
                    break
        return Verdict(label=Label.SUPPORTED if supported else Label.NOT_SUPPORTED, score=score,
                       rationale=f"{hit}/{len(words)} statement words occur in the source",
                       quote=quote, judge_id=self.id, prompt_version=self.prompt_version,
                       model_version="keyword")


def from_spec(arg: str, **options: object) -> KeywordJudge:
    latency = float(arg) if arg else float(os.environ.get("KEYWORD_JUDGE_LATENCY", "0"))
    return KeywordJudge(latency, fail_on=os.environ.get("KEYWORD_JUDGE_FAIL_ON"))


register("keyword", from_spec)
