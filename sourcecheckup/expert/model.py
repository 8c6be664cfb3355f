"""The records of the expert measures: one judge's verdict on one expert statement against one answer."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..models import Verdict


class ExpertKind(str, Enum):
    """OLAPH's two kinds of expert statement (MedLFQA)."""

    MUST_HAVE = "must_have"
    NICE_TO_HAVE = "nice_to_have"


@dataclass(frozen=True)
class ExpertVerdict:
    """A judge's verdict on one expert statement (the claim) against an answer's text (the source)."""

    response_pk: int
    kind: ExpertKind
    ord: int                 # the statement's position in its list
    statement: str
    verdict: Verdict

    @property
    def key(self) -> tuple[int, str, int, str]:
        return self.response_pk, self.kind.value, self.ord, self.verdict.judge_id


# similarity methods (expert_similarity.method)
LATE_INTERACTION = "late_interaction"     # ColBERT MaxSim over token embeddings (EVAL)
SENTENCE_COSINE = "sentence_cosine"       # cosine of the two texts' sentence embeddings
SIMILARITY_METHODS = (LATE_INTERACTION, SENTENCE_COSINE)
