"""The built-in offline judge: a screen of exact checks and a trained score, and a learned reader.

By default (``builtin``) the learned reader (``reader``) decides on a whole page of 8 sentences or more, with
its page gate and the exact checks as vetoes; the screen below decides on short sources, where the reader
does not yet measure above it (docs/reader.md). ``builtin:screen`` is the screen alone.

For each statement x source pair it finds the best passages (BM25 and sentence-embedding
similarity with all-MiniLM-L6-v2), then runs the checks a screen can do exactly
(``sourcecheckup.checks``): every quantity of the statement (dose, frequency, duration,
threshold, rate) is compared with what the source states for the same thing, after unit
conversion; an instruction ("avoid", "do not", "take in the morning") is compared as polarity;
an absolute claim ("completely safe", "proven") needs a source that says it as firmly. A failed
check decides the label ("contradicted: statement 2,400 mg/24 h; source 1,200 mg/24 h ...").
What the checks cannot decide is scored by a logistic regression over wording features,
trained on labelled health claims (scripts/train_builtin.py); scores near its threshold are
flagged "review_first". On a whole page (``facts``) every fact of the statement must be found: the
statement is split into the facts it asserts, each is looked for on the page, and a small model trained
on WiCE's real citations (scripts/train_facts.py) decides whether the page holds all of them; a page
that backs only part of a statement does not support it, and the rationale names the missing part.
Without the embedding model it still works on the lexical features
alone and says so in ``model_version`` ("builtin-4.1/lexical").

The package by concept: ``features`` (words, stems, wording features, the trained logistic model
and its parameters), ``facts`` (the statement's facts looked for on a page, the completeness features),
``screen`` (the exact checks that decide before the score: CheckOutcome,
Checks, run_checks), ``judge`` (analyse_pair, BuiltinJudge, from_spec), ``explanation`` (the rationale
of a scored verdict, and the test that it never contradicts its label), ``reader`` (the
learned cross-encoder of ``builtin:reader``, run on ONNX Runtime; scripts/train_reader.py trains it).
"""
from __future__ import annotations

from .explanation import rationale, rationale_contradicts_label
from .features import (
    EMBEDDING_FEATURES,
    LEXICAL_FEATURES,
    BuiltinParams,
    LogisticModel,
    Quantity,
    _Idf,  # noqa: F401  (scripts/train_builtin.py builds provisional params with it)
    content_stems,
    contrast_flips,
    load_params,
    number_check,
    params_path,
    quantities,
    stem,
    words,
)
from .judge import (
    BATCH_PAIRS,
    BM25_CANDIDATES,
    CHECK_PASSAGES,
    CHECK_SENTENCES,
    CORROBORATED_SIMILARITY,
    HYBRID_VERSION,
    JUDGE_ID,
    MAX_EMBEDDED_SENTENCES,
    MAX_QUOTE_CHARS,
    MODEL_FULL,
    MODEL_LEXICAL,
    NEGATION_VETO_COVERAGE,
    PROMPT_VERSION,
    READER_VERSION,
    REVIEW_BAND,
    VETOES,
    BuiltinJudge,
    PairAnalysis,
    analyse_pair,
    from_spec,
)
from .screen import STRICT_UNITS, CheckOutcome, Checks, check_sentences, run_checks

__all__ = [
    "BATCH_PAIRS", "BM25_CANDIDATES", "CHECK_PASSAGES", "CHECK_SENTENCES", "CORROBORATED_SIMILARITY",
    "EMBEDDING_FEATURES", "HYBRID_VERSION", "JUDGE_ID", "LEXICAL_FEATURES", "MAX_EMBEDDED_SENTENCES", "MAX_QUOTE_CHARS",
    "MODEL_FULL", "MODEL_LEXICAL", "NEGATION_VETO_COVERAGE", "PROMPT_VERSION", "READER_VERSION", "REVIEW_BAND",
    "STRICT_UNITS", "VETOES",
    "BuiltinJudge", "BuiltinParams", "CheckOutcome", "Checks", "LogisticModel", "PairAnalysis", "Quantity",
    "analyse_pair", "check_sentences", "content_stems", "contrast_flips", "from_spec", "load_params",
    "number_check", "params_path", "quantities", "rationale", "rationale_contradicts_label", "run_checks", "stem",
    "words",
]
