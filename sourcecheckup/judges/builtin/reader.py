"""The learned reader: a small cross-encoder that reads (statement, evidence) and gives P(supported).

It is all-MiniLM-L6-v2 fine-tuned here as a cross-encoder (scripts/train_reader.py, on the claim
files of ../shared/data/claims only), exported to ONNX and quantised to int8; it runs on ONNX
Runtime with the ``tokenizers`` library, without torch. The files ship in
``resources/reader/``: ``reader-int8.onnx``, ``tokenizer.json`` and ``card.json`` (what it was
trained on, its threshold and review band, chosen by cross-validation).

What it reads of a source is a few evidence windows (:func:`evidence_windows`): the source sentences
closest to the statement in the page's order up to a word budget, and the closest sentences alone and
with their neighbours; the best of them decides. Training builds its windows with the same functions,
so the reader sees at run time what it learned on. On a whole page the card's page gate reads that best
probability together with the page's completeness features (facts.py) and decides instead
(scripts/train_reader_gate.py).
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...resources import resources_dir
from .features import LogisticModel

# the reader's input: statement + window, at most this many tokens (the window is cut first)
MAX_TOKENS = 256
# words of source text in one window (about 200 tokens after WordPiece)
WINDOW_WORDS = 150
# the longest single sentence kept whole in a window; longer ones are cut to this many words
SENTENCE_WORDS = 80
BATCH = 1
# the page gate's name for the reader's log-odds among the page's completeness features
READER_FEATURE = "reader_logit"


READER_DIR_ENV = "SOURCECHECKUP_READER_DIR"


def reader_dir() -> Path:
    """The shipped reader, or the folder ``$SOURCECHECKUP_READER_DIR`` names (a reader trained with
    scripts/train_reader.py --out FOLDER, measured before it replaces the shipped one)."""
    import os

    named = os.environ.get(READER_DIR_ENV, "").strip()
    return Path(named) if named else resources_dir() / "reader"


def evidence_window(sentences: Sequence[str], scores: Sequence[float], budget: int = WINDOW_WORDS,
                    must: Sequence[int] = ()) -> str:
    """The sentences with the highest scores (those in ``must`` first), up to ``budget`` words, joined
    in the source's order: what the reader reads of a long source."""
    order = list(dict.fromkeys([*must, *sorted(range(len(sentences)), key=lambda i: (-scores[i], i))]))
    chosen: list[int] = []
    used = 0
    for i in order:
        n = len(sentences[i].split())
        if not n:
            continue
        if used and used + min(n, SENTENCE_WORDS) > budget:
            if i in must:
                continue
            break
        chosen.append(i)
        used += min(n, SENTENCE_WORDS)
    parts = []
    for i in sorted(chosen):
        w = sentences[i].split()
        parts.append(" ".join(w[:SENTENCE_WORDS]))
    return " ".join(parts)


def evidence_windows(sentences: Sequence[str], scores: Sequence[float], singles: int = 3) -> list[str]:
    """What the reader reads of a source: the whole window of :func:`evidence_window`, each of the ``singles``
    closest sentences alone, and each of them with the sentences before and after it. The reader learned
    mostly on short evidence, so a sentence that says the statement can be drowned out in a long window;
    and a sentence often leans on its neighbour ("It was founded in 1901"). A statement is read as
    supported by the best of them (WiCE dev, never trained on: AUC 0.758 with the window and the
    sentences alone, 0.795 with the neighbours too; docs/reader.md)."""
    out = [evidence_window(sentences, scores)]
    best = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:singles]
    out += [_clip(sentences[i]) for i in best]
    out += [" ".join(_clip(sentences[k]) for k in range(max(0, i - 1), min(len(sentences), i + 2))) for i in best]
    return [w for w in dict.fromkeys(out) if w]


def _clip(sentence: str) -> str:
    return " ".join(sentence.split()[:SENTENCE_WORDS])


@dataclass(frozen=True)
class ReaderCard:
    """What ``card.json`` says of the shipped model."""

    name: str
    threshold: float
    review_band: float
    data: dict[str, Any]
    # a source that fits one window (a passage, an abstract, a leaflet's paragraph) is read by fewer windows
    # than a page, and the best of fewer windows runs lower: such sources have a threshold of their own
    short_threshold: float | None = None
    # a whole page: a logistic model over the reader's log-odds and the completeness features of the page
    # (facts.py: is each fact of the statement on the page?), trained on WiCE dev with its figure cross-validated
    # by page (scripts/train_reader.py, stage ``gate``); it decides, with its own review band
    page_gate: LogisticModel | None = None
    page_gate_band: float = 0.0
    # above the gate's threshold by less than this, a page on which a fact of the statement is weak (facts.py
    # weak_facts) or a name is found nowhere is left to a person: most false passes of the gate are such pages
    page_gate_weak_band: float = 0.0

    @classmethod
    def load(cls, folder: Path) -> "ReaderCard":
        raw = json.loads((folder / "card.json").read_text(encoding="utf-8"))
        short = raw.get("short_threshold")
        gate = raw.get("page_gate")
        return cls(name=raw["name"], threshold=float(raw["threshold"]), review_band=float(raw["review_band"]),
                   data=raw, short_threshold=None if short is None else float(short),
                   page_gate=LogisticModel.from_json(gate) if gate else None,
                   page_gate_band=float(gate.get("review_band", 0.0)) if gate else 0.0,
                   page_gate_weak_band=float(gate.get("weak_fact_band", 0.0)) if gate else 0.0)

    def gate_probability(self, p: float, page_features: dict[str, float] | None) -> float | None:
        """The page gate's probability that the page supports the whole statement, from the reader's ``p`` and
        the page's completeness features; None without a gate, or for features it does not have (a judge
        without the embedding model)."""
        gate = self.page_gate
        if gate is None or page_features is None:
            return None
        values = {**page_features, READER_FEATURE: _logit(p)}
        if any(name not in values for name in gate.features):
            return None
        return gate.probability(values)

    def threshold_for(self, source_words: int) -> float:
        """The threshold for a source of ``source_words`` words: the page threshold, or the short one for a
        source no longer than one window."""
        if self.short_threshold is not None and source_words <= WINDOW_WORDS:
            return self.short_threshold
        return self.threshold

    def near(self, p: float, threshold: float) -> bool:
        """Whether ``p`` lies in the review band around ``threshold``. The card's band is a width at its page
        threshold; elsewhere the band keeps that width in log-odds, so that it narrows toward 0 and 1 as
        the probabilities crowd there (0.1 at 0.59 is 0.12-0.23 at 0.17)."""
        width = _logit(self.threshold + self.review_band) - _logit(self.threshold)
        return abs(_logit(p) - _logit(threshold)) < width

    def thresholds(self) -> dict[str, Any]:
        """What a run's provenance records of the thresholds."""
        out: dict[str, Any] = {"threshold": self.threshold}
        if self.short_threshold is not None:
            out.update(short_threshold=self.short_threshold, short_source_words=WINDOW_WORDS)
        if self.page_gate is not None:
            out.update(page_gate_threshold=self.page_gate.threshold, page_gate_band=self.page_gate_band,
                       page_gate_weak_band=self.page_gate_weak_band,
                       page_gate_features=list(self.page_gate.features))
        return out


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return float(np.log(p / (1 - p)))


class ReaderUnavailable(RuntimeError):
    """The reader's files or ONNX Runtime are missing."""


class Reader:
    """The int8 cross-encoder on ONNX Runtime; one per process (:func:`shared_reader`)."""

    def __init__(self, folder: Path | None = None, threads: int = 1) -> None:
        folder = folder or reader_dir()
        model = folder / "reader-int8.onnx"
        if not model.is_file():
            raise ReaderUnavailable(f"the reader's model is missing ({model})")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ReaderUnavailable(f"the reader needs onnxruntime and tokenizers: {exc}") from exc
        from ...provenance import file_record

        self.folder = folder
        self.model_file = model
        # hashed once: every verdict's model version names it
        self.sha256 = file_record(model)["sha256"]
        self.card = ReaderCard.load(folder)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="only_second")
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}

    def record(self) -> dict[str, Any]:
        """Name and SHA-256 of the model file (a run's provenance, a verdict's model version)."""
        return {"name": self.card.name, "file": self.model_file.name, "sha256": self.sha256,
                **self.card.thresholds()}

    def encode(self, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        return self.tokenizer.encode_batch([(s, e or ".") for s, e in pairs])

    def best_of(self, items: Sequence[tuple[str, Sequence[str]]], stop: threading.Event | None = None
                ) -> list[tuple[float, str]]:
        """For each (statement, windows): the highest P(supported) over its windows and that window."""
        flat = [(statement, w) for statement, windows in items for w in (windows or [""])]
        probs = self.probabilities(flat, stop)
        out, k = [], 0
        for _, windows in items:
            n = max(1, len(windows))
            j = int(np.argmax(probs[k:k + n]))
            out.append((float(probs[k + j]), flat[k + j][1]))
            k += n
        return out

    @property
    def reads_facts(self) -> bool:
        """Whether the card asks for each fact of a statement to be read on its own (``read_facts``)."""
        return bool(self.card.data.get("read_facts", False))

    def read(self, items: Sequence[tuple[str, Any]], stop: threading.Event | None = None) -> None:
        """Set each analysis's ``reader``, P(supported), and ``weakest`` fact. The statement is read over its
        windows; when the card says ``read_facts``, so is each fact of a statement of several (over the
        windows closest to that fact), and the statement's probability is the lowest of them: a statement is
        supported only when the source holds every fact (WiCE's partly supported sentences)."""
        jobs: list[tuple[str, Sequence[str]]] = []
        for statement, a in items:
            jobs.append((statement, a.windows))
            if self.reads_facts:
                jobs.extend(a.fact_windows)
        best = self.best_of(jobs, stop)
        k = 0
        for _, a in items:
            a.reader = best[k][0]
            k += 1
            if self.reads_facts and a.fact_windows:
                facts = [(text, best[k + j][0]) for j, (text, _) in enumerate(a.fact_windows)]
                k += len(facts)
                weakest = min(facts, key=lambda f: f[1])
                if weakest[1] < a.reader:
                    a.reader, a.weakest = weakest[1], weakest

    def probabilities(self, pairs: Sequence[tuple[str, str]], stop: threading.Event | None = None) -> np.ndarray:
        """P(supported) for each (statement, window) pair; batches of similar length."""
        out = np.zeros(len(pairs), dtype=np.float32)
        if not pairs:
            return out
        encodings = self.encode(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        # one pair a call: dynamic int8 quantisation scales activations over the whole input tensor, so in a
        # batch a pair's probability would depend on the other pairs (0.73 against 0.63 alone, seen here)
        for start in range(0, len(order), BATCH):
            if stop is not None and stop.is_set():
                from ..base import JudgeStopped

                raise JudgeStopped("the run was interrupted")
            chunk = order[start:start + BATCH]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for row, i in enumerate(chunk):
                e = encodings[i]
                n = len(e.ids)
                ids[row, :n], types[row, :n], mask[row, :n] = e.ids, e.type_ids, 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            logits = self.session.run(["logits"], {k: v for k, v in feed.items() if k in self._inputs})[0]
            out[chunk] = 1.0 / (1.0 + np.exp(-logits.reshape(-1)))
        return out


def rationale(supported: bool, p: float, review: bool, *, decisive: Any = None, veto: str = "", passed: str = "",
              unsure: Sequence[Any] = (), flips: Sequence[tuple[str, str]] = (),
              missing_terms: Sequence[str] = (), weakest: tuple[str, float] | None = None,
              page: float | None = None, partial: str = "") -> str:
    """One plain sentence for a ``builtin:reader`` verdict that never contradicts its label.

    A failed exact check decides the label and is the whole rationale ("contradicted: statement 2,400 mg/24 h;
    source 1,200 mg/24 h ..."). Otherwise the reader's probability, the checks that passed and, for an
    unsupported verdict, what the closest text lacks. On a whole page, ``page`` is the page gate's probability
    (the reader's read with the facts found on the page), and it decided; ``partial``: the part of the statement
    the page may not hold (facts.py ``unsure_part``), which leaves a supported verdict to a person.
    """
    from ...models import contradicted_rationale

    if decisive is not None:
        if decisive.status == "contradicted":
            return contradicted_rationale(decisive.message.rstrip(".") + ".")
        return "not supported: " + decisive.message.rstrip(".") + "."
    if veto:
        return f"not supported: {veto} (the reader gave {p:.2f}); review first."
    figures = [o.message.split(":")[0].removeprefix("statement ") for o in unsure if o.kind == "quantity"]
    read = f"support probability {p:.2f}"
    if page is not None:
        read = f"support probability {p:.2f}; {page:.2f} with each of its facts looked for on the page"
    if supported:
        head = f"The reader finds the statement in the source ({read})"
        tail = f"; {passed}" if passed else ""
        if figures:
            # a plain figure (a count, an age, a duration) the source words another way: left to a person
            return head + tail + f"; review first: the source does not repeat {', '.join(figures[:2])} as written."
        if partial:
            return head + tail + f"; review first: the page may not hold all of {partial}."
        if review:
            return head + tail + "; review first: the probability is close to the threshold."
        return head + tail + "; no inconsistency found."
    problems: list[str] = []
    if figures:
        problems.append(f"{', '.join(figures[:2])} {'is' if len(figures) == 1 else 'are'} not in the source as written")
    if flips:
        said, found = flips[0]
        problems.append(f"the statement says '{said}' where the source says '{found}'")
    if missing_terms:
        terms = ", ".join(f"'{t}'" for t in missing_terms[:3])
        problems.append(f"key term{'s' if len(missing_terms) > 1 else ''} {terms} "
                        f"{'are' if len(missing_terms) > 1 else 'is'} missing from its closest text")
    if review:
        problems.append("review first: the probability is close to the threshold")
    head = f"not supported: the reader does not find the whole statement in the source ({read})"
    if weakest is not None:
        head = (f"not supported: the reader does not find this part of the statement in the source: "
                f"'{weakest[0]}' ({read})")
    return head + ("; " + "; ".join(problems[:2]) if problems else "") + "."


_shared: Reader | None = None
_lock = threading.Lock()


def shared_reader() -> Reader:
    """The process's reader, loaded once (raises ReaderUnavailable)."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = Reader()
        return _shared


def available() -> bool:
    return (reader_dir() / "reader-int8.onnx").is_file()
