"""The three kinds of model ``local:`` takes, each end to end through make_judge and the real CLI:
a 3-label NLI model, a 2-label fact-checking classifier with only LABEL_0/LABEL_1 in its config
(MiniCheck-RoBERTa/DeBERTa: 1 = supported), and a seq2seq checker of the MiniCheck-Flan-T5 kind
(read as its authors read it: tests/judges/test_judge_local_minicheck.py holds the parity tests).
The models are tiny and wired by hand (tests/support/tiny_model.py), so every score is known."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sourcecheckup.cli import main
from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.base import JudgeSpecError
from sourcecheckup.judges.local import LocalJudge, LocalModelError
from sourcecheckup.judges.local.kinds import (
    MINICHECK_CHUNK_WORDS,
    minicheck_chunks,
    minicheck_text,
    split_spec_options,
    word_count,
)
from sourcecheckup.models import Label
from tests.support.tiny_model import build_oracle_model, build_seq2seq_checker

STATEMENT = "Weekly blood removal is the standard treatment of iron overload."
FILLER = "Iron overload is a common disease of adults and the liver is often the first organ at risk."
EVIDENCE = "The standard treatment is weekly phlebotomy until ferritin is low."


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def long_page() -> SourceText:
    # about 1,150 words: the one sentence with the evidence word sits in the third 500-word chunk
    sentences = [FILLER] * 60 + [EVIDENCE] + [FILLER] * 3
    return SourceText.from_text(" ".join(sentences), url="https://example.org/iron")


@pytest.fixture(scope="module")
def seq2seq_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_seq2seq_checker(tmp_path_factory.mktemp("kinds") / "minicheck-t5", evidence_words=["phlebotomy"])


def sentence_chunks(text: str, max_words: int = MINICHECK_CHUNK_WORDS) -> list[str]:
    return minicheck_chunks(text, max_words, word_count)


def test_seq2seq_chunks_are_whole_sentences_of_about_500_words():
    text = long_page().text
    chunks = sentence_chunks(text)
    assert len(chunks) == 3
    assert all(len(c.split()) <= 500 for c in chunks)
    assert all(c in text for c in chunks)                               # verbatim
    assert all(c.endswith(".") for c in chunks)                         # no sentence cut in two
    assert " ".join(chunks).split() == text.split()                     # nothing lost
    assert sentence_chunks("One two three four. Five six.", max_words=3) == ["One two three four.", "Five six."]
    assert sentence_chunks("One two.\nThree four.", max_words=10) == ["One two.\nThree four."]   # lines kept


def test_spec_options_after_the_hash():
    assert split_spec_options("/m/dir#label=LABEL_0") == ("/m/dir", {"supported_label": "LABEL_0"})
    assert split_spec_options("dir#label=2,threshold=0.7") == ("dir", {"supported_label": "2", "threshold": "0.7"})
    assert split_spec_options("dir") == ("dir", {})
    with pytest.raises(ValueError, match="local:DIR#label=NAME"):
        split_spec_options("dir#colour=red")


async def test_three_label_nli_model_end_to_end(tmp_path):
    folder = build_oracle_model(tmp_path / "nli", labels=("contradiction", "neutral", "entailment"),
                                supported_index=2, evidence_words={"phlebotomy": 4.0}, bias=(0.0, 0.0, -1.0))
    judge = make_judge(f"local:{folder}")
    page = SourceText.from_text(f"{FILLER} {EVIDENCE}", url="https://example.org/a")
    verdict = await judge.verify(STATEMENT, page)
    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(math.exp(3) / (math.exp(3) + 2), abs=1e-4)
    assert verdict.quote == EVIDENCE and verdict.quote_found
    miss = await judge.verify(STATEMENT, SourceText.from_text(FILLER, url="https://example.org/b"))
    assert miss.label is Label.NOT_SUPPORTED and miss.score == pytest.approx(math.exp(-1) / (math.exp(-1) + 2), abs=1e-4)


async def test_two_label_checker_with_generic_labels_takes_label_1_and_the_spec_can_name_another(tmp_path):
    folder = build_oracle_model(tmp_path / "minicheck-roberta", labels=("LABEL_0", "LABEL_1"),
                                supported_index=1, evidence_words={"phlebotomy": 4.0}, bias=(0.0, -1.0))
    page = SourceText.from_text(f"{FILLER} {EVIDENCE}", url="https://example.org/a")
    verdict = await make_judge(f"local:{folder}").verify(STATEMENT, page)
    assert verdict.label is Label.SUPPORTED and verdict.score == pytest.approx(sigmoid(3.0), abs=1e-4)
    assert "label 'LABEL_1'" in verdict.rationale

    flipped = make_judge(f"local:{folder}#label=LABEL_0")
    assert isinstance(flipped, LocalJudge) and flipped.id == "local:minicheck-roberta"
    verdict = await flipped.verify(STATEMENT, page)
    assert verdict.label is Label.NOT_SUPPORTED and verdict.score == pytest.approx(sigmoid(-3.0), abs=1e-4)


def test_labels_that_cannot_be_mapped_are_refused_with_the_config_and_the_way_to_name_one(tmp_path):
    folder = build_oracle_model(tmp_path / "sentiment", labels=("negative", "positive", "mixed"))
    with pytest.raises(LocalModelError) as info:
        make_judge(f"local:{folder}")
    message = str(info.value)
    assert "0=negative, 1=positive, 2=mixed" in message
    assert f"local:{folder}#label=NAME" in message
    assert isinstance(make_judge(f"local:{folder}#label=positive"), LocalJudge)
    with pytest.raises(LocalModelError, match="names no label"):
        make_judge(f"local:{folder}#label=entailment")
    with pytest.raises(JudgeSpecError, match="not an option"):
        make_judge(f"local:{folder}#lable=positive")


async def test_seq2seq_checker_scores_p_of_1_at_the_first_decoder_step(seq2seq_dir):
    judge = make_judge(f"local:{seq2seq_dir}")
    page = SourceText.from_text(f"{FILLER} {EVIDENCE}", url="https://example.org/a")
    verdict = await judge.verify(STATEMENT, page)
    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(sigmoid(3.0), abs=1e-3)
    assert verdict.quote == EVIDENCE and verdict.quote_found
    assert verdict.rationale.startswith("Support probability ('1' against '0' as the checker's first token) 0.95")
    assert "MiniCheck procedure: 1 chunk of ~500 words" in verdict.rationale
    miss = await judge.verify(STATEMENT, SourceText.from_text(FILLER, url="https://example.org/b"))
    assert miss.label is Label.NOT_SUPPORTED and miss.score == pytest.approx(sigmoid(-2.0), abs=1e-3)
    assert miss.quote == ""


async def test_seq2seq_reads_predict_chunk_eos_claim_and_the_best_chunk_decides(seq2seq_dir, monkeypatch):
    judge = make_judge(f"local:{seq2seq_dir}")
    await judge.load()
    seen: list[str] = []
    tokenizer = judge._loaded.tokenizer
    real_call = type(tokenizer).__call__

    def spy(self, text=None, *args, **kwargs):
        if isinstance(text, list) and text and str(text[0]).startswith("predict: "):
            seen.extend(text)
        return real_call(self, text, *args, **kwargs)

    monkeypatch.setattr(type(tokenizer), "__call__", spy)
    page = long_page()
    verdict = await judge.verify(STATEMENT, page)
    chunks = sentence_chunks(page.text)
    inputs = [f"predict: {c}[SEP]{STATEMENT}" for c in chunks]   # the tokenizer's EOS: none, so SEP
    assert inputs == [minicheck_text(c, STATEMENT, "[SEP]", "predict: ") for c in chunks]
    assert sorted(seen[:3]) == sorted(inputs)          # every 500-word chunk, whole, in the MiniCheck format
    assert verdict.label is Label.SUPPORTED and verdict.score == pytest.approx(sigmoid(3.0), abs=1e-3)
    assert "best of 3 chunks" in verdict.rationale
    assert verdict.quote == EVIDENCE


def test_seq2seq_checker_through_the_cli_verify_pairs(seq2seq_dir, tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(p) for p in [
        {"id": "yes", "statement": STATEMENT, "source": f"{FILLER} {EVIDENCE}"},
        {"id": "no", "statement": STATEMENT, "source": FILLER},
    ]) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["verify-pairs", str(pairs), "--judge", f"local:{seq2seq_dir}", "-o", str(out), "-q"]) == 0
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["yes"]["label"] == "supported" and rows["no"]["label"] == "not_supported"
    assert rows["yes"]["score"] == pytest.approx(sigmoid(3.0), abs=1e-3)


def test_a_seq2seq_model_without_0_and_1_tokens_is_refused(tmp_path):
    from transformers import BertTokenizerFast

    folder = build_seq2seq_checker(tmp_path / "no-digits", evidence_words=["phlebotomy"])
    BertTokenizerFast(vocab={"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "iron": 4}).save_pretrained(folder)
    import asyncio

    verdict = asyncio.run(make_judge(f"local:{folder}").verify(STATEMENT, SourceText.from_text(FILLER, url="https://e.org")))
    assert verdict.label is Label.JUDGE_ERROR
    assert "no token for '1'" in verdict.rationale and "MiniCheck-Flan-T5" in verdict.rationale
