"""The reader's page gate: on a whole page the reader's probability is read with the page's completeness
features by a logistic model in the reader's card (scripts/train_reader_gate.py). It decides whole pages
only, never a short source, and not when the spec sets a threshold; its out-of-fold figure is what the
card and the accuracy bench report."""
from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.builtin import BuiltinJudge, from_spec, reader
from sourcecheckup.judges.builtin.explanation import rationale_contradicts_label
from sourcecheckup.judges.builtin.features import LogisticModel
from sourcecheckup.models import Label, decided_by
from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import train_reader_gate  # noqa: E402

# a whole page (at least facts.PAGE_SENTENCES sentences): the gate reads it
PAGE = ("Paracetamol is a common painkiller used to treat aches and pain. It can also be used to reduce a high "
        "temperature. The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours. Always leave "
        "at least 4 hours between doses. Do not take more than 4 doses in 24 hours. It is safe to take paracetamol "
        "in pregnancy and while breastfeeding, at recommended doses. Paracetamol can be taken with food or without. "
        "Side effects are rare. Talk to a pharmacist if you need to take it for more than 3 days. Keep it out of the "
        "sight and reach of children.")
SAID = "Paracetamol is used to treat aches and pain."


def _gate(intercept: float, reader_weight: float = 0.0) -> LogisticModel:
    names = train_reader_gate.FEATURES
    coef = np.array([reader_weight if n == reader.READER_FEATURE else 0.0 for n in names])
    return LogisticModel(names, np.zeros(len(names)), np.ones(len(names)), coef, intercept, 0.5)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch):
    """The shared reader with a page gate of our choosing in its card."""
    r = reader.shared_reader()

    def use(gate: LogisticModel | None, band: float = 0.06) -> None:
        monkeypatch.setattr(r, "card", dataclasses.replace(r.card, page_gate=gate, page_gate_band=band))
    return use


def test_the_gate_decides_a_whole_page_and_its_rationale_agrees(gated) -> None:
    page = SourceText.from_text(PAGE)
    gated(_gate(-10.0))        # a gate that finds nothing on the page
    v, = BuiltinJudge(use_reader=True).score_pairs([(SAID, page)])
    assert decided_by(v.flags) == "reader_page" and v.label is Label.NOT_SUPPORTED and v.score < 0.01
    assert "looked for on the page" in v.rationale and not rationale_contradicts_label(v.label, v.rationale)
    gated(_gate(10.0))         # one that finds everything
    v, = BuiltinJudge(use_reader=True).score_pairs([(SAID, page)])
    assert decided_by(v.flags) == "reader_page" and v.label is Label.SUPPORTED and not v.review_first
    assert not rationale_contradicts_label(v.label, v.rationale)
    gated(_gate(0.0))          # exactly at its threshold: supported, and marked review first (its band)
    v, = BuiltinJudge(use_reader=True).score_pairs([(SAID, page)])
    assert v.label is Label.SUPPORTED and v.review_first and v.score == pytest.approx(0.5)
    gated(_gate(0.0), band=0.0)
    v, = BuiltinJudge(use_reader=True).score_pairs([(SAID, page)])
    assert not v.review_first


def test_the_gate_reads_the_readers_log_odds(gated) -> None:
    page = SourceText.from_text(PAGE)
    gated(_gate(0.0, reader_weight=1.0))   # the gate is then the reader's own probability
    judge = BuiltinJudge(use_reader=True)
    v, = judge.score_pairs([(SAID, page)])
    a, = judge.analyse_pairs([(SAID, page)])
    assert decided_by(v.flags) == "reader_page" and v.score == pytest.approx(a.reader, abs=1e-4)


def test_the_gate_never_decides_a_short_source_a_set_threshold_or_a_vetoed_pair(gated) -> None:
    gated(_gate(-10.0))
    short = SourceText.from_text("Paracetamol is a common painkiller used to treat aches and pain.")
    v, = BuiltinJudge(use_reader=True).score_pairs([(SAID, short)])
    assert decided_by(v.flags) == "reader" and v.label is Label.SUPPORTED
    v, = from_spec("reader:0.5").score_pairs([(SAID, SourceText.from_text(PAGE))])
    assert decided_by(v.flags) == "reader" and v.label is Label.SUPPORTED
    gated(_gate(10.0))
    v, = BuiltinJudge(use_reader=True).score_pairs([("Adults can take 8 g of paracetamol in 24 hours.",
                                                     SourceText.from_text(PAGE))])
    assert v.label is Label.NOT_SUPPORTED and decided_by(v.flags) == "quantity"


def test_without_the_embedding_model_the_gate_steps_aside(gated) -> None:
    gated(_gate(-10.0))
    v, = BuiltinJudge(use_reader=True, use_embeddings=False).score_pairs([(SAID, SourceText.from_text(PAGE))])
    assert decided_by(v.flags) == "reader"     # the gate reads the embedding features it then lacks


def test_the_shipped_card_has_a_gate_measured_out_of_fold() -> None:
    card = json.loads((reader.reader_dir() / "card.json").read_text(encoding="utf-8"))
    gate = card["page_gate"]
    assert tuple(gate["features"]) == train_reader_gate.FEATURES and gate["trained_on"] == {"wice_dev.jsonl": 343}
    assert 0.5 < gate["cv_balanced_accuracy"] < 1.0 and gate["cv_review_first"] <= 0.25
    assert all(c <= 0.0 for n, c in zip(gate["features"], gate["coef"]) if n in train_reader_gate.ABSENCE)
    assert "wice_dev.jsonl" in card["never_trained_on"]     # the reader's weights; the gate's are in trained_on
    loaded = reader.ReaderCard.load(reader.reader_dir())
    assert loaded.page_gate is not None and loaded.page_gate_band == gate["review_band"]
    assert loaded.thresholds()["page_gate_threshold"] == gate["threshold"]


def test_fitting_chooses_the_band_out_of_fold_and_needs_pages_of_both_labels(tmp_path, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    n = 120
    truth = rng.random(n) < 0.4
    rows = [{"claim": f"c{i}", "evidence": f"page {i}", "binary_label": "supported" if t else "not_supported"}
            for i, t in enumerate(truth)]
    (tmp_path / "wice_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    x = rng.normal(size=(n, len(train_reader_gate.FEATURES)))
    x[:, -1] += 1.5 * truth                      # the reader's log-odds carries the signal
    vetoed = rng.random(n) < 0.05
    monkeypatch.setattr(train_reader_gate, "page_rows", lambda model, rs: (list(range(n)), x, vetoed))
    gate = train_reader_gate.fit_page_gate(tmp_path, model=None)
    assert gate is not None and gate["trained_on"] == {"wice_dev.jsonl": n}
    assert 0.6 < gate["cv_balanced_accuracy"] <= 1.0
    assert gate["cv_not_supported_called_supported_unflagged"] <= train_reader_gate.MAX_UNFLAGGED \
        or gate["cv_review_first"] > train_reader_gate.MAX_REVIEW - 0.05
    assert gate == train_reader_gate.fit_page_gate(tmp_path, model=None)      # deterministic
    model = LogisticModel.from_json(gate)
    p = model.probability(dict(zip(train_reader_gate.FEATURES, x[0])))
    assert 0.0 < p < 1.0
    # a feature that counts what the page lacks never counts for support, whatever the data say
    lacking = train_reader_gate.FEATURES.index("off_subject")
    x[:, lacking] = truth + rng.normal(scale=0.3, size=n)
    signed = train_reader_gate.fit_page_gate(tmp_path, model=None)
    assert signed is not None and signed["coef"][lacking] <= 0.0
    assert all(signed["coef"][train_reader_gate.FEATURES.index(f)] <= 0.0 for f in train_reader_gate.ABSENCE)
    monkeypatch.setattr(train_reader_gate, "page_rows", lambda model, rs: (list(range(8)), x[:8], vetoed[:8]))
    assert train_reader_gate.fit_page_gate(tmp_path, model=None) is None
