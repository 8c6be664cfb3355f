"""The local-model judge, driven with real transformers models built from a config.

The models are "oracles" (tests/support/tiny_model.py): their supported-label logit is
the classifier bias plus a known strength for each evidence word present in the input,
so every probability below is known in advance.
"""
from __future__ import annotations

import asyncio
import math
import threading
from pathlib import Path

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.base import JudgeSpecError
from sourcecheckup.judges.local import PROMPT_VERSION, LocalJudge, LocalModelError, from_spec, supported_label_index
from sourcecheckup.models import Label
from tests.support.paths import FIXTURES
from tests.support.tiny_model import build_oracle_model

PAGE = (FIXTURES / "local_judge" / "hemochromatosis.txt").read_text()
STATEMENT = "Weekly blood removal is the standard treatment of iron overload."
# phlebotomy: passage 7 only; continues: passage 8 only; ferritin: passage 6 only, which
# BM25 does not rank in the statement's top 4
EVIDENCE = {"phlebotomy": 4.0, "continues": 1.0, "ferritin": 6.0}


def softmax_first(logit: float, others: int) -> float:
    return math.exp(logit) / (math.exp(logit) + others)


@pytest.fixture(scope="module")
def oracle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_oracle_model(tmp_path_factory.mktemp("models") / "oracle-nli", evidence_words=EVIDENCE)


@pytest.fixture(scope="module")
def judge(oracle_dir: Path) -> LocalJudge:
    return from_spec(str(oracle_dir), max_windows=4)


@pytest.fixture
def page() -> SourceText:
    return SourceText.from_text(PAGE, url="https://example.org/hemochromatosis")


def record_scored(monkeypatch: pytest.MonkeyPatch, judge: LocalJudge) -> list[list[str]]:
    """The premises of every scoring call, in order (windows first, then quote sentences)."""
    calls: list[list[str]] = []
    real = LocalJudge._score

    def spy(self, windows, hypotheses, m):
        calls.append([w.text for w in windows])
        return real(self, windows, hypotheses, m)

    monkeypatch.setattr(LocalJudge, "_score", spy)
    return calls


# -- which label means "supported" ---------------------------------------------------------

@pytest.mark.parametrize("labels, expected", [
    ({0: "entailment", 1: "neutral", 2: "contradiction"}, 0),
    ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, 2),
    ({0: "SUPPORTS", 1: "REFUTES", 2: "NOT ENOUGH INFO"}, 0),
    ({0: "unsupported", 1: "supported"}, 1),
    ({0: "LABEL_0", 1: "LABEL_1"}, 1),                    # MiniCheck: 1 = supported
    ({0: "not_entailment", 1: "entailment"}, 1),
])
def test_supported_label_is_read_from_the_config(labels, expected):
    assert supported_label_index(labels) == expected


def test_supported_label_option_overrides_the_rule():
    assert supported_label_index({0: "LABEL_0", 1: "LABEL_1"}, "label_0") == 0
    assert supported_label_index({0: "LABEL_0", 1: "LABEL_1"}, 0) == 0
    assert supported_label_index({0: "yes", 1: "no"}, "1") == 1


def test_unknown_label_names_ask_for_the_supported_label_option():
    with pytest.raises(LocalModelError, match="supported_label") as info:
        supported_label_index({0: "positive", 1: "negative", 2: "mixed"})
    assert "0=positive" in str(info.value)
    with pytest.raises(LocalModelError, match="names no label"):
        supported_label_index({0: "entailment", 1: "neutral"}, "supported")
    with pytest.raises(LocalModelError, match="not an output"):
        supported_label_index({0: "LABEL_0", 1: "LABEL_1"}, 5)


async def test_three_class_model_scores_the_entailment_probability_wherever_it_sits(tmp_path, page):
    folder = build_oracle_model(tmp_path / "nli", labels=("contradiction", "neutral", "entailment"),
                                supported_index=2, bias=(0.0, 0.0, 2.0))
    verdict = await from_spec(str(folder)).verify("Iron overload is common.", page)
    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(softmax_first(2.0, 2), abs=1e-4)
    assert verdict.rationale.startswith(f"Entailment probability {verdict.score:.2f}")

    contradiction = build_oracle_model(tmp_path / "nli-contra", labels=("contradiction", "neutral", "entailment"),
                                       supported_index=2, bias=(2.0, 0.0, 0.0))
    verdict = await from_spec(str(contradiction)).verify("Iron overload is common.", page)
    assert verdict.label is Label.NOT_SUPPORTED
    assert verdict.score == pytest.approx(1 / (math.exp(2.0) + 2), abs=1e-4)
    assert verdict.quote == "" and verdict.quote_found is None


async def test_two_class_minicheck_style_model_uses_label_1_and_the_threshold(tmp_path, page):
    folder = build_oracle_model(tmp_path / "minicheck", labels=("LABEL_0", "LABEL_1"),
                                supported_index=1, bias=(0.0, 1.0))
    expected = softmax_first(1.0, 1)   # 0.73
    supported = await from_spec(str(folder)).verify("Iron overload is common.", page)
    assert supported.label is Label.SUPPORTED and supported.score == pytest.approx(expected, abs=1e-4)

    assert supported.rationale.startswith("Support probability (label 'LABEL_1') 0.73 in the best of")
    strict = await from_spec(str(folder), threshold=0.8).verify("Iron overload is common.", page)
    assert strict.label is Label.NOT_SUPPORTED and strict.score == pytest.approx(expected, abs=1e-4)

    flipped = await from_spec(str(folder), supported_label="LABEL_0").verify("Iron overload is common.", page)
    assert flipped.label is Label.NOT_SUPPORTED and flipped.score == pytest.approx(1 - expected, abs=1e-4)


# -- windows over a long source -------------------------------------------------------------

async def test_best_of_the_top_ranked_windows_wins_and_gives_the_quote(judge, page, monkeypatch):
    calls = record_scored(monkeypatch, judge)
    verdict = await judge.verify(STATEMENT, page)

    assert len(page.passages) == 13
    windows, sentences = calls
    assert len(windows) == 4                           # max_windows of 13 passages, BM25 first
    assert not any("ferritin" in w for w in windows)   # the strongest word sits in an unranked passage
    best_window = next(w for w in windows if "phlebotomy" in w)
    assert sentences == [s for s in sentences if s in best_window] and len(sentences) == 3

    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(softmax_first(4.0, 2), abs=1e-4)
    assert verdict.quote == ("The standard treatment of iron overload is weekly phlebotomy, "
                             "in which about 500 ml of blood is removed.")
    assert verdict.quote in best_window and verdict.quote_found is True
    assert verdict.rationale == ("Entailment probability 0.96 in the best of 4 passages (the most relevant "
                                 "by BM25 of the source's 13 passages); threshold 0.50.")
    assert verdict.judge_id == "local:oracle-nli" and verdict.prompt_version == PROMPT_VERSION == "nli-window-1"
    assert "oracle-nli@config-sha256:" in verdict.model_version


async def test_more_windows_reach_the_passage_bm25_ranked_low(oracle_dir, page, monkeypatch):
    wide = from_spec(str(oracle_dir), max_windows=20)
    calls = record_scored(monkeypatch, wide)
    verdict = await wide.verify(STATEMENT, page)
    assert len(calls[0]) == 13
    assert verdict.score == pytest.approx(softmax_first(6.0, 2), abs=1e-4)
    assert "ferritin" in verdict.quote and verdict.quote_found is True
    assert "best of 13 passages" in verdict.rationale and "BM25" not in verdict.rationale


async def test_a_passage_longer_than_the_model_window_is_cut_so_the_evidence_is_not_truncated(tmp_path, monkeypatch):
    folder = build_oracle_model(tmp_path / "short", evidence_words={"phlebotomy": 4.0}, max_length=32)
    # one run-on "sentence" of 60 words: a single passage, evidence at its very end
    filler = " ".join(["patients with iron overload often report fatigue and joint pain"] * 5)
    text = f"{filler} and the usual treatment is phlebotomy"
    source = SourceText.from_text(text)
    assert len(source.passages) == 1
    judge = from_spec(str(folder))
    calls = record_scored(monkeypatch, judge)
    verdict = await judge.verify("Iron overload is treated.", source)

    tokenizer = judge._loaded.tokenizer
    windows = calls[0]
    assert len(windows) > 1
    for window in windows:
        assert len(tokenizer(window, "Iron overload is treated.")["input_ids"]) <= 32
    assert verdict.label is Label.SUPPORTED
    assert verdict.quote.endswith("phlebotomy") and verdict.quote_found is True


async def test_source_without_text_is_a_judge_error(judge):
    verdict = await judge.verify(STATEMENT, SourceText.from_text("   "))
    assert verdict.label is Label.JUDGE_ERROR and "no text" in verdict.rationale


async def test_possible_injection_flag_is_carried_to_the_verdict(judge):
    source = SourceText.from_text(PAGE)
    source.flags = ("possible_injection",)
    verdict = await judge.verify(STATEMENT, source)
    assert "possible_injection" in verdict.flags


# -- batching ---------------------------------------------------------------------------------

async def test_batched_verdicts_equal_one_by_one_verdicts(oracle_dir, monkeypatch):
    other = SourceText.from_text("Serum ferritin above 1000 predicts cirrhosis. Treatment continues for years. "
                                 "Contact us with questions.")
    dull = SourceText.from_text("This page is reviewed every year. Copyright all rights reserved.")
    pairs = [(STATEMENT, SourceText.from_text(PAGE)), ("Serum iron markers predict liver disease.", other),
             (STATEMENT, dull), ("Iron stores are measured in blood.", SourceText.from_text(PAGE))]
    batched_judge = from_spec(str(oracle_dir), batch_size=5)
    calls = record_scored(monkeypatch, batched_judge)
    batched = await batched_judge.verify_many(pairs)
    assert len(calls) == 2      # every pair's windows in one scoring call, every quote in one more

    single_judge = from_spec(str(oracle_dir), batch_size=1)
    singles = [await single_judge.verify(s, src) for s, src in pairs]
    for b, s in zip(batched, singles):
        assert b.label is s.label and b.quote == s.quote and b.rationale == s.rationale
        assert b.score == pytest.approx(s.score, abs=1e-5)
    assert [v.label for v in batched] == [Label.SUPPORTED, Label.SUPPORTED, Label.NOT_SUPPORTED, Label.SUPPORTED]


async def test_concurrent_single_verifies_are_judged_in_one_batch(oracle_dir, page, monkeypatch):
    judge = from_spec(str(oracle_dir))
    await judge.load()
    calls = record_scored(monkeypatch, judge)
    statements = [STATEMENT, "Iron overload is common.", "Iron stores are measured in blood."]
    gathered = await asyncio.gather(*(judge.verify(s, page) for s in statements))
    assert len(calls) == 2      # windows of all three pairs together, then the quotes
    again = await judge.verify_many([(s, page) for s in statements])
    assert [(v.label, v.score, v.quote) for v in gathered] == [(v.label, v.score, v.quote) for v in again]


# -- loading and failures ---------------------------------------------------------------------

async def test_model_loads_once_lazily_off_the_event_loop(oracle_dir, page, monkeypatch):
    judge = make_judge(f"local:{oracle_dir}")
    assert isinstance(judge, LocalJudge) and not judge.loaded
    threads: list[str] = []
    real = LocalJudge._load_model

    def spy(self):
        threads.append(threading.current_thread().name)
        return real(self)

    monkeypatch.setattr(LocalJudge, "_load_model", spy)
    await judge.verify(STATEMENT, page)
    await judge.verify_many([(STATEMENT, page), (STATEMENT, page)])
    assert len(threads) == 1 and threads[0] != threading.main_thread().name
    await judge.aclose()


@pytest.mark.parametrize("arg", ["./models/no-such-model", "/opt/models/MiniCheck-DeBERTa-L", "example-org/nli-model"])
def test_missing_model_says_to_download_it_and_pass_the_folder(arg):
    with pytest.raises(LocalModelError, match="Download the model on a machine with internet") as info:
        make_judge(f"local:{arg}")
    assert "--judge local:/path/to/" in str(info.value)
    assert isinstance(info.value, JudgeSpecError)


def test_folder_without_a_config_is_refused(tmp_path):
    with pytest.raises(LocalModelError, match="no config.json"):
        from_spec(str(tmp_path))


def test_local_spec_needs_a_model():
    with pytest.raises(JudgeSpecError, match="local:/path/to/model"):
        make_judge("local:")


async def test_out_of_memory_in_the_forward_pass_is_a_judge_error(oracle_dir, page, monkeypatch):
    judge = from_spec(str(oracle_dir))
    await judge.load()

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(judge._loaded.model, "forward", out_of_memory)
    verdicts = await judge.verify_many([(STATEMENT, page), ("Iron overload is common.", page)])
    for verdict in verdicts:
        assert verdict.label is Label.JUDGE_ERROR
        assert "out of memory" in verdict.rationale and "batch_size" in verdict.rationale


async def test_one_failing_pair_does_not_sink_the_batch(oracle_dir, page, monkeypatch):
    judge = from_spec(str(oracle_dir))
    await judge.load()
    model = judge._loaded.model
    poison = judge._loaded.tokenizer.convert_tokens_to_ids("aspirin")
    real = model.forward

    def fragile(*args, **kwargs):
        if (kwargs["input_ids"] == poison).any():
            raise ValueError("tensor shapes do not match")
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "forward", fragile)
    bad = SourceText.from_text("Aspirin can cause bleeding in the stomach.")
    verdicts = await judge.verify_many([(STATEMENT, page), (STATEMENT, bad), (STATEMENT, page)])
    assert [v.label for v in verdicts] == [Label.SUPPORTED, Label.JUDGE_ERROR, Label.SUPPORTED]
    assert "tensor shapes do not match" in verdicts[1].rationale
    assert verdicts[0].quote == verdicts[2].quote != ""


async def test_tokenizer_failure_is_a_judge_error_not_an_unsupported_verdict(judge, page):
    verdict = (await judge.verify_many([(None, page)]))[0]   # type: ignore[list-item]
    assert verdict.label is Label.JUDGE_ERROR


def test_a_model_without_labels_that_mean_supported_is_refused_at_once(tmp_path):
    folder = build_oracle_model(tmp_path / "sentiment", labels=("negative", "positive"))
    with pytest.raises(LocalModelError, match="supported_label"):
        make_judge(f"local:{folder}")
    assert isinstance(make_judge(f"local:{folder}", supported_label="positive"), LocalJudge)


async def test_a_checkpoint_without_a_trained_classifier_head_is_refused(tmp_path, page):
    from transformers import BertConfig, BertModel

    folder = build_oracle_model(tmp_path / "encoder-only")
    config = BertConfig.from_pretrained(folder)
    BertModel(config).save_pretrained(folder)   # overwrite with the bare encoder, no head
    verdict = await from_spec(str(folder)).verify(STATEMENT, page)
    assert verdict.label is Label.JUDGE_ERROR
    assert "no trained classification head" in verdict.rationale and "classifier.weight" in verdict.rationale
