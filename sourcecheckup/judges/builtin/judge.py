"""The built-in judge itself: one pair analysed, a verdict with its rationale, the backend.

``analyse_pair`` chooses the best passage and quote, runs the exact checks (``screen``) and
computes the wording features (``features``); ``BuiltinJudge`` turns that into a Verdict, worded by
``explanation.rationale``; ``from_spec`` builds it from ``builtin`` (the learned reader on whole pages, the
screen elsewhere), ``builtin:screen``, ``builtin:reader`` or ``builtin:0.6``.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ... import embeddings
from ...evidence import SourceText, quote_in_source, rank_passages
from ...models import CONTRADICTED, DECIDED_BY, REVIEW_FIRST, Label, Verdict
from ..base import BaseJudge, JudgeSpecError, JudgeStopped, in_stoppable_thread
from . import reader
from .explanation import passed_checks, rationale
from .facts import PAGE_SENTENCES, FactsFinding, check_facts, split_facts
from .features import (
    _ABSOLUTES,
    _HEDGES,
    _NEGATIONS,
    BuiltinParams,
    LogisticModel,
    _coverage,
    _has_any,
    _Idf,
    _stem_set,
    _stem_to_word,
    content_stems,
    contrast_flips,
    has_negation,
    load_params,
    number_check,
    params_path,
    quantities,
    stem,
    words,
)
from .screen import Checks, _prepare_source, check_sentences, run_checks
from .support_gates import (
    OFF_SUBJECT,
    SALAD_MIN_SENTENCES,
    corroborating,
    negated,
    negated_phrase,
    negation_sides,
    page_units,
    stated_outright,
    unfit_to_support,
    word_salad,
)

JUDGE_ID = "builtin"
# 2: a missing dose ("8 g") rules out support; 3: exact checks of quantities, instructions and absolute
# claims decide the label, the trained score only ranks what they cannot decide; 4: on a whole page every
# fact of the statement must be found (facts.py); 4.1: the exact checks of the clinician examples in
# tests/fixtures/health_pages ("stop" read only as an instruction's verb, the clause with the statement's own
# verb first, a need is no contradiction of a maximum, a negation before the statement's own words vetoes; and
# ../shared/data/smoke's: "always" names no subject, a clause about another thing does not outvote a "not")
PROMPT_VERSION = "builtin-4.1"
MODEL_FULL = f"{PROMPT_VERSION}/{embeddings.MODEL_NAME}"
MODEL_LEXICAL = f"{PROMPT_VERSION}/lexical"
# ``builtin:reader``: the learned reader decides (on a whole page with its page gate), the exact checks veto
READER_VERSION = "builtin-5"
# ``builtin``: the reader on whole pages (where it measures above the screen), the screen on short sources
HYBRID_VERSION = "builtin-6"
# the exact checks and gates that rule support out whatever the reader says (docs/reader.md: each one's
# effect on the suites)
VETOES = frozenset({"quantity", "instruction", "overclaim", "attribution", "negation", "closest_text", "figure"})

# sources longer than this many sentences are embedded only around their BM25 best passages
MAX_EMBEDDED_SENTENCES = 400
BM25_CANDIDATES = 20
MAX_QUOTE_CHARS = 600
# pairs handed to one worker-thread call; smaller batches let cancellation land sooner
BATCH_PAIRS = 64
# Rules a screen applies on top of the trained score (measured on the train files: they cost
# nothing there and catch the errors a reader would call unforgivable):
# a precise figure (a decimal or a percentage) of the statement missing from the evidence, and
# a negation flip against a closest sentence that otherwise covers the statement's key terms.
NEGATION_VETO_COVERAGE = 0.5
_NEGATION_VETOES = ("it says the same thing without the statement's negation",
                    "its closest sentence negates what the statement says")
# how negated_phrase's findings begin ("its closest sentence says 'not well controlled' where ...")
_NEGATED_PHRASE = ("its closest sentence says '", "the statement says '")


def _is_negation(veto: str) -> bool:
    return veto in _NEGATION_VETOES or veto.startswith(_NEGATED_PHRASE)



def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise JudgeStopped("the run was interrupted")


def _subject_missing(statement: str, missing_terms: list[str]) -> bool:
    """The statement opens with a key term the source never uses ("Metformin halves the risk ..." against
    an empagliflozin trial): its subject is not the source's."""
    opening = set(words(statement)[:3])
    return any(t in opening for t in missing_terms)

REVIEW_BAND = 0.07   # "review first" this close to the threshold: docs/reader.md, the screen's review band
# how close the statement's best sentence must be for matched figures to count as corroboration
CORROBORATED_SIMILARITY = 0.6
# sentences of the best passages that the exact checks read (besides every sentence with one of the
# statement's figures)
CHECK_PASSAGES = 3
CHECK_SENTENCES = 6
# completeness probabilities this close to the gate's threshold are marked "review first"
FACTS_REVIEW_BAND = 0.1


@dataclass
class PairAnalysis:
    """Everything the judge found for one pair: features plus what the rationale cites."""

    features: dict[str, float]
    passage: str
    quote: str
    coverage: float
    missing_numbers: list[str]
    wrong_units: list[str]
    negation_mismatch: str          # "" or which side is negated, in words for the rationale
    flips: list[tuple[str, str]]
    missing_terms: list[str]
    similarity: float | None
    veto: str = ""                  # why support is ruled out whatever the score, or ""
    checks: Checks | None = None    # the exact checks of quantities, instructions and absolute claims
    facts: FactsFinding | None = None  # whether every fact is on the page (whole pages only)
    outright: bool = False          # the closest sentence says the statement, every key term, same negation
    windows: list[str] = field(default_factory=list)   # what the reader reads (reader mode only)
    reader: float | None = None     # the reader's P(supported) for the window (reader mode only)
    # reader mode, a statement of several facts: each fact and the windows read for it, and the weakest one
    fact_windows: list[tuple[str, list[str]]] = field(default_factory=list)
    weakest: tuple[str, float] | None = None


def analyse_pair(statement: str, source: SourceText, idf: _Idf,
                 statement_vector: np.ndarray | None = None,
                 sentence_vectors: dict[int, np.ndarray] | None = None,
                 fact_vectors: dict[str, np.ndarray] | None = None, read: bool = False,
                 read_facts: bool = False) -> PairAnalysis:
    """Features for one pair. With vectors, embedding similarity helps choose the passage. ``read``: also the
    reader's window (the sentences closest to the statement, in the page's order, as it was trained);
    ``read_facts``: and each fact's, for a statement of several."""
    prep = _prepare_source(source)
    ranked = rank_passages(statement, source, k=len(source.passages))
    bm25 = {i: s for i, s in ranked}
    top_bm25 = max(bm25.values(), default=0.0)
    bm25_norm = {i: (s / top_bm25 if top_bm25 > 0 else 0.0) for i, s in bm25.items()}
    st_stems = content_stems(statement)

    use_vectors = statement_vector is not None and sentence_vectors is not None and bool(sentence_vectors)
    by_sentence = sentence_vectors or {}   # sentence index -> vector, read only with use_vectors
    sent_cos: dict[int, float] = {}
    pass_cos: dict[int, float] = {}
    if use_vectors:
        ids = sorted(by_sentence)
        matrix = np.stack([by_sentence[i] for i in ids])
        sims = matrix @ statement_vector
        sent_cos = {i: float(c) for i, c in zip(ids, sims)}
        for p, members in enumerate(prep.passage_sentences):
            if members and all(m in by_sentence for m in members):
                v = np.sum([by_sentence[m] for m in members], axis=0)
                pass_cos[p] = float(v @ statement_vector / (np.linalg.norm(v) or 1.0))

    # choose the best passage: embedding similarity, nudged by BM25 (and BM25 alone without vectors)
    def passage_score(p: int) -> float:
        if use_vectors:
            return pass_cos.get(p, -1.0) + 0.15 * bm25_norm.get(p, 0.0)
        s_cov = _coverage(st_stems, _stem_set(source.passages[p]), idf)[1]
        return bm25_norm.get(p, 0.0) + s_cov
    candidates = range(len(source.passages)) if use_vectors else [i for i, _ in ranked[:BM25_CANDIDATES]]
    best_p = max(candidates, key=lambda p: (passage_score(p), -p))
    passage = source.passages[best_p]

    # the quote: the best sentence overall by similarity, else the best sentence in the passage
    members = prep.passage_sentences[best_p]
    if use_vectors:
        best_s = max(sent_cos, key=lambda i: (sent_cos[i], -i))
        cos_sentence = sent_cos[best_s]
    else:
        pool = members or list(range(len(prep.sentences)))
        best_s = max(pool, key=lambda i: (_coverage(st_stems, _stem_set(prep.sentences[i]), idf)[1], -i)) \
            if pool else -1
    quote = prep.sentences[best_s] if best_s >= 0 else passage
    evidence = passage if (best_s < 0 or best_s in members) else f"{passage} {prep.sentences[best_s]}"
    if use_vectors:
        near = sorted(sent_cos, key=lambda i: (-sent_cos[i], i))[:CHECK_SENTENCES]
    else:
        near = [best_s] if best_s >= 0 else []
    top_passages = [best_p] + [i for i, _ in ranked[:CHECK_PASSAGES] if i != best_p]
    checks = run_checks(statement, check_sentences(statement, prep, top_passages, near), source)

    ev_word_list = words(evidence)
    ev_words = set(ev_word_list)
    ev_stems = {stem(w) for w in ev_words}
    cov, cov_idf = _coverage(st_stems, ev_stems, idf)
    cov_sentence_idf = _coverage(st_stems, _stem_set(quote), idf)[1]
    missing_key = _stem_to_word(statement, [s for s in st_stems if s not in ev_stems and idf(s) >= idf.key])
    max_missing = max((idf(s) for s in st_stems if s not in ev_stems), default=0.0)

    wanted_numbers = [q for q in quantities(statement) if q.value != 1.0]
    missing_numbers, wrong_units = number_check(statement, evidence)
    st_words = words(statement)
    neg_s = _has_any(st_words, _NEGATIONS)
    neg_e = _has_any(list(ev_words), _NEGATIONS)   # as the score was trained
    flips = contrast_flips(set(st_words), ev_words)
    hedge_e_only = _has_any(list(ev_words), _HEDGES) and not _has_any(st_words, _HEDGES)

    f: dict[str, float] = {
        "coverage": cov,
        "coverage_idf": cov_idf,
        "coverage_sentence_idf": cov_sentence_idf,
        "missing_key_terms": float(min(len(missing_key), 5)),
        "max_missing_idf": max_missing,
        "numbers_in_statement": float(bool(wanted_numbers)),
        "numbers_missing": float(min(len(missing_numbers), 3)),
        "numbers_all_present": float(bool(wanted_numbers) and not missing_numbers),
        "unit_mismatch": float(bool(wrong_units)),
        "negation_statement": float(neg_s),
        "negation_evidence": float(neg_e),
        "negation_mismatch": float(neg_s != neg_e),
        "contrast_flips": float(min(len(flips), 3)),
        "hedge_evidence_only": float(hedge_e_only),
        "absolute_statement": float(_has_any(st_words, _ABSOLUTES)),
        "statement_length": math.log1p(len(st_stems)),
    }
    similarity = None
    if use_vectors:
        similarity = cos_sentence
        f.update({
            "cos_sentence": cos_sentence,
            "cos_passage": pass_cos.get(best_p, cos_sentence),
            "cos_x_coverage": cos_sentence * cov_idf,
        })
    negation = ""
    if neg_s != neg_e:
        negation = "statement" if neg_s else "passage"
    veto = ""
    # a negation flip only rules support out when the whole evidence, not just its closest sentence,
    # flips, no exact check found the same instruction or figures, and the statement is no "avoid X" ("do not X")
    passed = {o.kind for o in checks.passed}
    # the veto reads words in order: "with or without" offers a choice and negates nothing
    if (cov_idf >= NEGATION_VETO_COVERAGE and has_negation(ev_word_list) != neg_s
            and has_negation(words(quote)) != neg_s
            and not passed & {"instruction", "quantity", "overclaim"} and (neg_s or not negated(statement))):
        veto = _NEGATION_VETOES[0] if neg_s else _NEGATION_VETOES[1]
    # (issue 23) what the closest text is: furniture or another subject never supports; the statement
    # said outright does, whatever a negation elsewhere in the passage did to the score
    negation = negation_sides(statement, quote, source.title) if negation else ""
    if not veto:
        veto = unfit_to_support(statement, quote, source.title, similarity, cov_idf, idf,
                                corroborating([o.kind for o in checks.passed]), page_units(prep.sentences))
    if not veto:
        # the statement's own words with a negation before them on one side only ("not well controlled")
        veto = negated_phrase(statement, quote)
    def closeness_to(text: str, vector: np.ndarray | None) -> list[float]:
        if vector is not None and use_vectors:
            return [float(by_sentence[i] @ vector) if i in by_sentence else -1.0
                    for i in range(len(prep.sentences))]
        stems = content_stems(text)
        return [_coverage(stems, _stem_set(t), idf)[1] for t in prep.sentences]
    # the statement's closeness to each sentence (its similarities above), only where something reads it
    closeness = (([sent_cos.get(i, -1.0) for i in range(len(prep.sentences))] if use_vectors
                  else closeness_to(statement, None))
                 if read or len(prep.sentences) >= SALAD_MIN_SENTENCES else [])
    veto = word_salad(prep.sentences, closeness) or veto
    outright = not flips and not veto and stated_outright(statement, quote, source.title, similarity, idf)
    facts = None
    if len(prep.sentences) >= PAGE_SENTENCES:
        vectors = [fact_vectors[t] for t in split_facts(statement)] if use_vectors and fact_vectors else None
        facts = check_facts(statement, prep.sentences, source.cache, idf, 0.0, vectors,
                            sentence_vectors if vectors else None)
        # on a whole page the closest sentence being about something else is one thing the completeness
        # model weighs (the facts may sit in several sentences), not a veto
        facts.features["off_subject"] = float(veto == OFF_SUBJECT)
        if veto == OFF_SUBJECT:
            veto = ""
    windows: list[str] = []
    fact_windows: list[tuple[str, list[str]]] = []
    if read:
        windows = reader.evidence_windows(prep.sentences, closeness) or [passage]
        parts = split_facts(statement) if read_facts else []
        fact_windows = [(t, reader.evidence_windows(prep.sentences, closeness_to(t, (fact_vectors or {}).get(t)))
                         or [passage]) for t in (parts if len(parts) > 1 else [])]
    return PairAnalysis(f, passage, quote, cov, missing_numbers, wrong_units, negation, flips, missing_key,
                        similarity, veto, checks, facts=facts, outright=outright, windows=windows,
                        fact_windows=fact_windows)


# ---------------------------------------------------------------------------------------
# The judge
# ---------------------------------------------------------------------------------------

def _quote_text(sentence: str) -> str:
    sentence = sentence.strip()
    if len(sentence) <= MAX_QUOTE_CHARS:
        return sentence
    cut = sentence[:MAX_QUOTE_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def _decider(a: PairAnalysis, page_gate: bool, score_supports: bool) -> str:
    """Which step decides when no exact check failed (recorded in the verdict's flags, shown beside it):
    the negation check or the closest-text gate (a veto), the statement said outright where the score alone
    would not support, the completeness gate on a whole page, else the trained score."""
    if a.veto:
        return "negation" if _is_negation(a.veto) else "closest_text"
    if a.outright and not score_supports:
        return "outright"
    return "completeness" if page_gate else "score"


class BuiltinJudge(BaseJudge):
    """Offline screening judge; see the module docstring for the method."""

    id = JUDGE_ID
    prompt_version = PROMPT_VERSION
    concurrency = 2
    per_source_batching = True   # the pipeline hands over all statements of a source at once: one embedding call
    # source sentences' vectors kept in the database (store.vectors.VectorCache; the pipeline attaches its
    # store's); None: embedded in this process only
    vector_cache: Any = None

    def __init__(self, threshold: float | None = None, use_embeddings: bool | None = None,
                 params: BuiltinParams | None = None, use_reader: bool = False,
                 vetoes: frozenset[str] | None = None, pages_only: bool = False) -> None:
        self.params = params or load_params()
        if use_embeddings is None:
            use_embeddings = embeddings.available()
        self.use_embeddings = use_embeddings
        self._threshold = threshold
        self.use_reader = use_reader
        # the reader decides on whole pages only (with its page gate), the screen on short sources
        self.pages_only = pages_only
        self.vetoes = VETOES if vetoes is None else frozenset(vetoes)
        self._reader: reader.Reader | None = None
        if use_reader:
            self.prompt_version = HYBRID_VERSION if pages_only else READER_VERSION

    @property
    def reader(self) -> reader.Reader:
        if self._reader is None:
            self._reader = reader.shared_reader()
        return self._reader

    @property
    def _reads_facts(self) -> bool:
        return self.use_reader and self.reader.reads_facts

    @property
    def _reads_all(self) -> bool:
        return self.use_reader and not self.pages_only

    def reads(self, source: SourceText) -> bool:
        """Whether the reader decides on ``source`` (else the screen does)."""
        return self._reads_all or (self.use_reader and len(_prepare_source(source).sentences) >= PAGE_SENTENCES)

    @property
    def review_band(self) -> float:
        return self.reader.card.review_band if self._reads_all else REVIEW_BAND

    def provenance(self) -> dict[str, Any]:
        """The trained parameters' and (when used) the embedding model's SHA-256, stored with a run."""
        from ...provenance import file_record

        rec: dict[str, Any] = {"kind": "builtin", "threshold": self.threshold, "model_version": self.model_version,
                               "parameters": file_record(params_path()), "embedding_model": None}
        if self.use_embeddings:
            rec["embedding_model"] = embeddings.model_record()
        if self.use_reader:
            rec.update(reader=self.reader.record(), review_band=self.reader.card.review_band,
                       vetoes=sorted(self.vetoes), reader_decides="whole pages" if self.pages_only else "every source")
            if self.pages_only:
                rec["screen_model_version"] = self._screen_version
        return rec

    @property
    def model(self) -> LogisticModel:
        return self.params.full if self.use_embeddings else self.params.lexical

    @property
    def threshold(self) -> float:
        if self._threshold is not None:
            return self._threshold
        return self.reader.card.threshold if self._reads_all else self.model.threshold

    def reader_threshold(self, source: SourceText) -> float:
        """The reader's threshold for ``source``: the one the spec sets, else the card's for its length."""
        if self._threshold is not None:
            return self._threshold
        return self.reader.card.threshold_for(len(source.text.split()))

    @property
    def facts_model(self) -> LogisticModel | None:
        return self.params.facts if self.use_embeddings else self.params.facts_lexical

    @property
    def model_version(self) -> str:
        if self.use_reader:
            rec = self.reader.record()
            window = embeddings.model_id() if self.use_embeddings else "lexical"
            return f"{READER_VERSION}/{rec['name']}@{rec.get('served') or rec['sha256'][:12]}/{window}"
        return self._screen_version

    @property
    def _screen_version(self) -> str:
        return f"{PROMPT_VERSION}/{embeddings.model_id()}" if self.use_embeddings else MODEL_LEXICAL

    # -- the synchronous core ------------------------------------------------------------
    def analyse_pairs(self, pairs: Sequence[tuple[str, SourceText]], stop: threading.Event | None = None
                      ) -> list[PairAnalysis | str]:
        """A PairAnalysis per pair, or the reason it cannot be judged. Embeds in few calls. ``stop``: looked
        at between pairs (and by the embedding model between batches); set, it raises JudgeStopped."""
        results: list[PairAnalysis | str] = []
        todo: list[int] = []
        for k, (statement, source) in enumerate(pairs):
            if not (source.text or "").strip() or not source.passages:
                results.append("no text to judge")
            elif not (statement or "").strip():
                results.append("empty statement")
            else:
                results.append("")
                todo.append(k)
        statement_vecs: dict[str, np.ndarray] = {}
        sentence_vecs: dict[int, dict[int, np.ndarray]] = {}
        if self.use_embeddings and todo:
            statement_vecs, sentence_vecs = self._embed([pairs[k] for k in todo], stop)
        for k in todo:
            _check(stop)
            statement, source = pairs[k]
            read = self.reads(source)
            results[k] = analyse_pair(statement, source, self.params.idf, statement_vecs.get(statement),
                                      sentence_vecs.get(id(source)), statement_vecs, read=read,
                                      read_facts=read and self._reads_facts)
        if self.use_reader:
            self.reader.read([(pairs[k][0], a) for k, a in enumerate(results)
                              if isinstance(a, PairAnalysis) and a.windows], stop)
        return results

    def _embed(self, pairs: Sequence[tuple[str, SourceText]], stop: threading.Event | None = None
               ) -> tuple[dict[str, np.ndarray], dict[int, dict[int, np.ndarray]]]:
        """One model call for all statements and one for all source sentences not cached yet."""
        wanted: dict[int, tuple[SourceText, set[int]]] = {}
        for statement, source in pairs:
            prep = _prepare_source(source)
            entry = wanted.setdefault(id(source), (source, set()))
            if len(prep.sentences) <= MAX_EMBEDDED_SENTENCES:
                entry[1].update(range(len(prep.sentences)))
            else:
                for p, _ in rank_passages(statement, source, k=BM25_CANDIDATES):
                    entry[1].update(prep.passage_sentences[p])
        texts: list[str] = []
        slots: list[tuple[SourceText, int]] = []
        for source, ids in wanted.values():
            cached: dict[int, np.ndarray] = source.cache.setdefault("builtin_vectors", {})
            prep = _prepare_source(source)
            for i in sorted(ids - cached.keys()):
                texts.append(prep.sentences[i])
                slots.append((source, i))
        # each statement, then the facts of a statement judged against a whole page (the completeness check)
        facts = (f for s, source in pairs if self._reads_facts or len(_prepare_source(source).sentences) >= PAGE_SENTENCES
                 for f in split_facts(s))
        statements = list(dict.fromkeys([*(s for s, _ in pairs), *facts]))
        statement_vecs = dict(zip(statements, embeddings.embed(statements, stop=stop)))
        for (source, i), v in zip(slots, self._sentence_vectors(texts, stop)):
            source.cache["builtin_vectors"][i] = v
        sentence_vecs = {key: {i: source.cache["builtin_vectors"][i] for i in ids}
                         for key, (source, ids) in wanted.items()}
        return statement_vecs, sentence_vecs

    def _sentence_vectors(self, texts: list[str], stop: threading.Event | None = None) -> list[np.ndarray]:
        """Source sentences' vectors: from the database when it has them, else embedded (and stored)."""
        cache = self.vector_cache
        stored = cache.get(embeddings.model_id(), embeddings.DIMENSIONS, texts) if cache is not None and texts else {}
        fresh = list(dict.fromkeys(t for t in texts if t not in stored))
        made = dict(zip(fresh, embeddings.embed(fresh, stop=stop)))
        if cache is not None and made:
            cache.put(embeddings.model_id(), made.items())
        return [stored[t] if t in stored else made[t] for t in texts]

    def verdict(self, statement: str, source: SourceText, analysis: PairAnalysis | str) -> Verdict:
        if isinstance(analysis, str):
            return Verdict.error(self.id, analysis, prompt_version=self.prompt_version,
                                 model_version=self.model_version)
        if self.use_reader and (self._reads_all or analysis.windows):
            return self._reader_verdict(statement, source, analysis)
        a = analysis
        score = self.model.probability(a.features)
        decisive = a.checks.decisive if a.checks else None
        flags: list[str] = []
        quote = a.quote
        if decisive is not None:
            # an exact check decides: the trained score never overrides a contradicted or missing figure
            decider = decisive.kind
            supported = False
            score = min(score, self._screen_threshold) * 0.5
            quote = decisive.sentence or a.quote
            if decisive.status == "contradicted":
                flags.append(CONTRADICTED)
        else:
            if a.checks is not None and a.checks.corroborate and not a.flips \
                    and (a.similarity is None or a.similarity >= CORROBORATED_SIMILARITY):
                # two or more exact checks passed (figures found as stated, the same instruction, the
                # credited body): strong evidence the wording features cannot see; still "review first"
                # when it is all there is
                score = max(score, (score + 1.0) / 2.0)
            # on a whole page the completeness model, which reads the score with the facts found, decides
            threshold, band = self._screen_threshold, REVIEW_BAND
            complete = self._facts_gate(a, score)
            if complete is not None:
                score, threshold, band = complete, self.page_threshold, FACTS_REVIEW_BAND
            uncertain = abs(score - threshold) < band and not a.outright
            decider = _decider(a, complete is not None, score >= threshold)
            if a.veto:
                score = min(score, threshold) * 0.5
            elif a.outright:
                score = max(score, threshold)
            supported = score >= threshold and not a.veto
            if a.facts is not None and complete is not None:
                a.facts.incomplete, a.facts.unsure = score < threshold, uncertain
            if supported and a.checks is not None and a.checks.unsure and _subject_missing(statement, a.missing_terms):
                # a figure the source does not repeat, about a subject the source never names: nothing to review
                supported = False
                score = min(score, threshold) * 0.5
                decider = "subject"
            if uncertain or a.veto or (supported and a.checks is not None and a.checks.unsure):
                flags.append(REVIEW_FIRST)
        return self._finish(a, source, supported, score, quote, flags, decider, rationale(a, supported), read=False)

    def _finish(self, a: PairAnalysis, source: SourceText, supported: bool, score: float, quote: str,
                flags: list[str], decider: str, text: str, read: bool = True) -> Verdict:
        """The Verdict of either procedure: a supported verdict quotes the sentence where its figures or
        instruction were found, else the closest sentence."""
        matched = [o.sentence for o in a.checks.passed if o.sentence] if a.checks else []
        if supported and matched:
            quote = matched[0]
        quote = _quote_text(quote)
        return Verdict(
            label=Label.SUPPORTED if supported else Label.NOT_SUPPORTED,
            score=round(score, 4),
            rationale=text,
            quote=quote,
            quote_found=quote_in_source(quote, source.text),
            judge_id=self.id,
            prompt_version=self.prompt_version,
            # the procedure that gave it: the default judge reads whole pages and screens the rest
            model_version=self.model_version if read else self._screen_version,
            flags=(*flags, DECIDED_BY + decider),
        )

    def _reader_verdict(self, statement: str, source: SourceText, a: PairAnalysis) -> Verdict:
        """The reader decides; a failed exact check (or a gate in ``vetoes``) rules support out."""
        p, threshold = float(a.reader if a.reader is not None else 0.0), self.reader_threshold(source)
        decisive = a.checks.decisive if a.checks else None
        if decisive is not None and decisive.kind not in self.vetoes:
            decisive = None
        veto = a.veto if a.veto and self._gate_of(a.veto) in self.vetoes else ""
        flags: list[str] = []
        quote, partial = a.quote, ""
        if decisive is not None:
            # an exact check decides: the reader never overrides a contradicted or missing figure
            decider, supported, score = decisive.kind, False, min(p, threshold) * 0.5
            quote = decisive.sentence or a.quote
            if decisive.status == "contradicted":
                flags.append(CONTRADICTED)
        elif veto:
            decider, supported = self._gate_of(veto), False
            score = min(p, threshold) * 0.5
            flags.append(REVIEW_FIRST)
        else:
            card = self.reader.card
            page = self._page_gate(a, p)
            if page is not None and card.page_gate is not None:
                # a whole page: the reader's probability read with the facts found on the page decides
                decider, score, threshold = "reader_page", page, card.page_gate.threshold
                supported = page >= threshold
                near, weak = abs(page - threshold) < card.page_gate_band, page < threshold + card.page_gate_weak_band
            else:
                decider, score, supported = "reader", p, p >= threshold
                near, weak = card.near(p, threshold), False
            absent = a.facts.absent_figures(statement) if supported and a.facts and "figure" in self.vetoes else []
            if absent:
                # a year or count the page never gives ("1987" where it says 1989): the reader does not compare them
                veto, decider, supported, score = (f"the page never gives {' or '.join(absent[:2])}", "figure", False,
                                                   min(score, threshold) * 0.5)
            # a weak fact, or a name the page never gives, not far above the threshold: the page may hold only part
            weak = weak and bool(a.facts and (a.facts.features.get("weak_facts") or a.facts.missing_names))
            partial = a.facts.unsure_part() if supported and a.facts and weak else ""
            if near or absent or partial or (supported and a.checks is not None and a.checks.unsure):
                flags.append(REVIEW_FIRST)
        text = reader.rationale(supported, p, REVIEW_FIRST in flags, decisive=decisive, veto=veto,
                                passed=passed_checks(a), unsure=a.checks.unsure if a.checks else (),
                                flips=a.flips, missing_terms=a.missing_terms, weakest=a.weakest,
                                page=score if decider == "reader_page" else None, partial=partial)
        return self._finish(a, source, supported, score, quote, flags, decider, text)

    def _page_gate(self, a: PairAnalysis, p: float) -> float | None:
        """The reader's page gate on a whole page (None: not a page, no gate in the card, or a threshold the
        spec sets, which then applies to the reader's probability alone)."""
        if self._threshold is not None or a.facts is None:
            return None
        return self.reader.card.gate_probability(p, a.facts.features)

    @staticmethod
    def _gate_of(veto: str) -> str:
        return "negation" if _is_negation(veto) else "closest_text"

    def _facts_gate(self, a: PairAnalysis, score: float) -> float | None:
        """The probability that the page holds every fact of the statement (None: no page, or no model)."""
        if a.facts is None:
            return None
        a.facts.features["base"] = score
        model = self.facts_model
        return None if model is None else model.probability(a.facts.features)

    @property
    def page_threshold(self) -> float:
        """The decision threshold on a whole page: the completeness model's, or the one the spec sets."""
        model = self.facts_model
        if self._threshold is not None or model is None:
            return self._screen_threshold
        return model.threshold

    @property
    def _screen_threshold(self) -> float:
        return self.model.threshold if self._threshold is None else self._threshold

    def score_pairs(self, pairs: Sequence[tuple[str, SourceText]], stop: threading.Event | None = None
                    ) -> list[Verdict]:
        """Judge many pairs at once; the embedding work is batched into few model calls. ``stop`` (set when
        the run no longer waits for these verdicts) raises JudgeStopped at the next pair or embedding batch."""
        try:
            analyses = self.analyse_pairs(pairs, stop)
        except embeddings.EmbeddingStopped as exc:
            raise JudgeStopped(str(exc)) from exc
        out: list[Verdict] = []
        for (statement, source), a in zip(pairs, analyses):
            _check(stop)
            try:
                out.append(self.verdict(statement, source, a))
            except Exception as exc:  # one odd pair must not sink the batch
                out.append(Verdict.error(self.id, f"{type(exc).__name__}: {exc}",
                                         prompt_version=self.prompt_version,
                                         model_version=self.model_version))
        return out

    # -- the async interface -------------------------------------------------------------
    async def verify(self, statement: str, source: SourceText) -> Verdict:
        return (await in_stoppable_thread(self.score_pairs, [(statement, source)]))[0]

    async def verify_many(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]:
        out: list[Verdict] = []
        for start in range(0, len(pairs), BATCH_PAIRS):
            out.extend(await in_stoppable_thread(self.score_pairs, list(pairs[start:start + BATCH_PAIRS])))
        return out


def from_spec(arg: str, **options: Any) -> BuiltinJudge:
    """``builtin``: the learned reader decides on whole pages (with its page gate), the screen on short sources;
    the screen everywhere when the reader, its page gate or the embedding model is missing. ``builtin:screen``
    or ``builtin:0.6`` (a decision threshold on the screen's support probability): the screen everywhere.
    ``builtin:reader`` or ``builtin:reader:0.5``: the learned reader decides on every source (see reader.py).

    Options: ``threshold`` (float), ``use_embeddings`` (bool; default: when the model is installed),
    ``vetoes`` (reader mode: the exact checks that may rule support out; default ``VETOES``).
    """
    threshold = options.pop("threshold", None)
    use_embeddings = options.pop("use_embeddings", None)
    vetoes = options.pop("vetoes", None)
    arg = (arg or "").strip()
    use_reader = arg == "reader" or arg.startswith("reader:")
    pages_only = not arg
    if use_reader:
        arg = arg[len("reader"):].lstrip(":").strip()
    elif arg == "screen":
        arg = ""
    if arg:
        try:
            threshold = float(arg)
        except ValueError:
            raise JudgeSpecError(
                f"builtin judge: '{arg}' is not a threshold; use e.g. 'builtin' or 'builtin:0.6'") from None
    if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
        raise JudgeSpecError(f"builtin judge: threshold {threshold} must lie between 0 and 1")
    if use_reader and not reader.available():
        raise JudgeSpecError("builtin judge: the reader's model is not installed (resources/reader)")
    if pages_only and threshold is None and (embeddings.available() if use_embeddings is None else use_embeddings):
        use_reader = reader.available() and reader.ReaderCard.load(reader.reader_dir()).page_gate is not None
    return BuiltinJudge(threshold=None if threshold is None else float(threshold), use_embeddings=use_embeddings,
                        use_reader=use_reader, vetoes=vetoes, pages_only=pages_only and use_reader)
