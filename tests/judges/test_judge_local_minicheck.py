"""`local:` runs MiniCheck models as their authors run them (Liyan06/MiniCheck, minicheck/inference.py
and minicheck/minicheck.py), checked against a second implementation of that procedure written
here from its description:

- the document is cut per line into sentences, then into chunks of whole sentences of about 400
  tokens of the model's tokenizer (RoBERTa, DeBERTa) or 500 words (Flan-T5); chunks joined by
  spaces, " \\n " back to a newline, stripped, empty ones dropped;
- each chunk and the claim are ONE text: chunk + the tokenizer's EOS token + claim ("predict: "
  first for Flan-T5), truncated at 512 tokens (RoBERTa) or 2,048 (DeBERTa, Flan-T5), batches of 16;
- classifier: softmax over the two logits, index 1; Flan-T5: one decoder step from [[0]],
  softmax over the logits of the first token of "0" and of "1";
- the score is the highest chunk probability; supported when above 0.5.

The sentence splitter is the one piece shared with the code under test (SourceCheckup's own splitter
stands in for NLTK punkt, which cannot be installed with its data here). Models are tiny random ones
of each architecture (tests/support/minicheck_models.py): their scores move with every input.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from sourcecheckup.evidence import SourceText, source_sentences
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.base import JudgeSpecError
from sourcecheckup.judges.local import LocalJudge, from_spec
from sourcecheckup.models import Label
from tests.support.minicheck_models import KINDS
from tests.support.paths import FIXTURES
from tests.support.tiny_model import BASE_WORDS

pytestmark = pytest.mark.usefixtures("own_cache")   # ONNX exports go to a test folder (conftest)

PAGE = (FIXTURES / "local_judge" / "hemochromatosis.txt").read_text()
MAX_LENGTH = {"roberta": 512, "deberta": 2048, "t5": 2048}
CHUNK = {"roberta": 400, "deberta": 400, "t5": 500}


# -- the authors' procedure, written again from its description -----------------------------

def reference_minicheck(model, tokenizer, kind: str, document: str, claim: str) -> tuple[float, int]:
    """(max P(supported) over chunks, number of chunks)."""
    max_len, size = MAX_LENGTH[kind], CHUNK[kind]
    pieces: list[str] = []
    for line in document.split("\n"):
        pieces += source_sentences(line)
        pieces.append("\n")
    pieces = pieces[:-1] or [""]

    def length(piece: str) -> int:
        if kind == "t5":
            return len(piece.split())
        return len(tokenizer(piece, add_special_tokens=False, truncation=True, max_length=max_len)["input_ids"])

    groups, group, total = [], [], 0
    for piece in pieces:
        n = length(piece)
        if total + n > size:
            groups.append(group)
            group, total = [piece], n
        else:
            group.append(piece)
            total += n
    if group:
        groups.append(group)
    chunks = [c for c in (" ".join(g).replace(" \n ", "\n").strip() for g in groups) if c]

    probabilities: list[float] = []
    with torch.no_grad():
        for i in range(0, len(chunks), 16):
            texts = [c + tokenizer.eos_token + claim for c in chunks[i:i + 16]]
            if kind == "t5":
                texts = ["predict: " + t for t in texts]
            enc = tokenizer(texts, max_length=max_len, truncation=True, padding=True, return_tensors="pt")
            if kind == "t5":
                zero = torch.zeros((enc["input_ids"].shape[0], 1), dtype=torch.long)
                logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                               decoder_input_ids=zero).logits[:, 0, :]
                no = tokenizer("0", add_special_tokens=False)["input_ids"][0]
                yes = tokenizer("1", add_special_tokens=False)["input_ids"][0]
                probs = torch.softmax(logits[:, [no, yes]], dim=1)[:, 1]
            else:
                probs = torch.softmax(model(**enc).logits, dim=1)[:, 1]
            probabilities += probs.tolist()
    return max(probabilities), len(chunks)


# -- the parity set -------------------------------------------------------------------------

def parity_set(seed: int = 3) -> list[tuple[str, list[str]]]:
    """(document, claims): 12 short documents (one chunk) and 4 long ones (several chunks), 2 claims each.

    Documents mix sentences of the test page and word salad, in lines and paragraphs; one long
    document holds a 700-word run-on "sentence" (a chunk of its own, truncated by the model)."""
    rng = random.Random(seed)
    real = [s for s in source_sentences(PAGE.replace("\n", " ")) if len(s.split()) > 3]

    def sentence() -> str:
        if rng.random() < 0.4:
            return rng.choice(real)
        return " ".join(rng.choices(BASE_WORDS, k=rng.randint(6, 22))).capitalize() + "."

    def paragraph(n: int) -> str:
        return " ".join(sentence() for _ in range(n))

    def claim() -> str:
        return rng.choice(real) if rng.random() < 0.5 else " ".join(rng.choices(BASE_WORDS, k=12)).capitalize() + "."

    docs = [("\n".join(paragraph(rng.randint(1, 4)) for _ in range(rng.randint(1, 3)))) for _ in range(12)]
    docs += ["\n\n".join(paragraph(rng.randint(3, 6)) for _ in range(rng.randint(18, 26))) for _ in range(3)]
    docs.append(paragraph(8) + "\n" + " ".join(rng.choices(BASE_WORDS, k=700)) + "\n" + paragraph(30))
    return [(d, [claim(), claim()]) for d in docs]


def loaded_model(folder: Path, kind: str):
    from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

    cls = AutoModelForSeq2SeqLM if kind == "t5" else AutoModelForSequenceClassification
    return cls.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


async def judged(judge: LocalJudge, docs: list[tuple[str, list[str]]]) -> list:
    """Verdicts the way an audit asks: all statements of a source in one call."""
    out = []
    for n, (doc, claims) in enumerate(docs):
        source = SourceText.from_text(doc, url=f"https://example.org/{n}")
        out += await judge.verify_many([(c, source) for c in claims])
    return out


@pytest.mark.parametrize("kind", KINDS)
async def test_local_scores_equal_the_authors_procedure_on_short_and_long_documents(folders, kind):
    docs = parity_set()
    model, tokenizer = loaded_model(folders[kind], kind)
    expected = [reference_minicheck(model, tokenizer, kind, d, c) for d, claims in docs for c in claims]
    assert sum(n == 1 for _, n in expected) >= 20 and sum(n >= 3 for _, n in expected) >= 6   # short and long

    judge = make_judge(f"local:{folders[kind]}")
    verdicts = await judged(judge, docs)
    assert judge.prompt_version == "minicheck-1"
    for verdict, (score, chunks) in zip(verdicts, expected):
        assert verdict.score == pytest.approx(score, abs=1e-4)
        assert verdict.label is (Label.SUPPORTED if score > 0.5 else Label.NOT_SUPPORTED)
        assert f"in the best of {chunks} chunk" in verdict.rationale
    scores = [s for s, _ in expected]
    assert max(scores) - min(scores) > 0.05     # the random model does respond to its input
    unit = "words" if kind == "t5" else "tokens"
    assert f"MiniCheck procedure: {expected[-1][1]} chunks of ~{CHUNK[kind]} {unit}" in verdicts[-1].rationale
    assert f"truncated at {MAX_LENGTH[kind]} tokens" in verdicts[-1].rationale


@pytest.mark.parametrize("kind", ["roberta", "deberta"])
async def test_int8_weights_keep_every_label_of_the_parity_set(folders, kind):
    docs = parity_set()
    plain = await judged(make_judge(f"local:{folders[kind]}"), docs)
    judge = from_spec(str(folders[kind]), quantize="int8")
    fast = await judged(judge, docs)
    assert [v.label for v in fast] == [v.label for v in plain]
    assert all("int8 weights" in v.rationale for v in fast)
    assert [a.score for a in fast] != [b.score for b in plain]     # the int8 model did run
    assert 0 < judge.rechecked < sum(len(d[1]) * 2 for d in docs)   # only texts near 0.5 were scored again


async def test_int8_is_refused_for_the_seq2seq_kind_on_pytorch_whose_labels_it_changed(folders):
    # PyTorch's per-tensor int8 flipped 5 of 32 labels of the tiny T5 parity set, some from 0.0 to 1.0;
    # ONNX Runtime's int8 of the encoder's feed-forward keeps them (tests/judges/test_judge_local_onnx.py)
    verdict = await from_spec(str(folders["t5"]), quantize="int8", runtime="torch").verify(
        "Iron overload is common.", SourceText.from_text(PAGE))
    assert verdict.label is Label.JUDGE_ERROR and "needs ONNX Runtime" in verdict.rationale


async def test_a_supported_verdict_quotes_a_sentence_of_its_best_chunk(folders):
    judge = from_spec(str(folders["roberta"]), threshold=0.01)
    verdict = (await judged(judge, parity_set()[12:13]))[0]
    assert verdict.label is Label.SUPPORTED and verdict.quote and verdict.quote_found


async def test_a_minicheck_classifier_is_told_by_the_repository_it_was_pulled_from(folders, tmp_path):
    import shutil

    folder = tmp_path / "checker"
    shutil.copytree(folders["roberta"], folder)
    assert make_judge(f"local:{folder}").prompt_version == "nli-window-1"    # nothing says MiniCheck
    (folder / "sourcecheckup-model.json").write_text(json.dumps({"repo": "lytang/MiniCheck-RoBERTa-Large"}))
    assert make_judge(f"local:{folder}").prompt_version == "minicheck-1"
    assert make_judge(f"local:{folder}#procedure=nli").prompt_version == "nli-window-1"
    assert make_judge(f"local:{folders['deberta']}#procedure=minicheck").prompt_version == "minicheck-1"
    with pytest.raises(JudgeSpecError, match="only by the MiniCheck procedure"):
        make_judge(f"local:{folders['t5']}#procedure=nli")
    with pytest.raises(JudgeSpecError, match="MiniCheck checkers only"):
        make_judge(f"local:{folder}#procedure=nli,quantize=int8")


async def test_a_source_without_text_is_a_judge_error_not_a_verdict(folders):
    verdict = await make_judge(f"local:{folders['t5']}").verify("Iron overload is common.",
                                                               SourceText.from_text(" \n ", url="https://e.org"))
    assert verdict.label is Label.JUDGE_ERROR and "no text" in verdict.rationale


async def test_a_cancelled_judgement_stops_its_thread_before_the_next_batch(folders, monkeypatch):
    # Ctrl-C or the app's Cancel cancels the task awaiting the judge; asyncio then waits for the worker thread
    # before the process can end, so the thread must stop at its next batch, not run the rest of them
    import asyncio
    import threading
    import time

    from sourcecheckup.judges.local import kinds as local_kinds

    judge = from_spec(str(folders["roberta"]), batch_size=1)
    await judge.load()
    calls: list[float] = []
    started = threading.Event()
    original = local_kinds.encoded_probabilities

    def slow(m, encoded):
        calls.append(time.monotonic())
        started.set()
        time.sleep(0.3)
        return original(m, encoded)

    monkeypatch.setattr(local_kinds, "encoded_probabilities", slow)
    pairs = [(f"Iron overload is common ({i}).", SourceText.from_text(PAGE)) for i in range(8)]
    task = asyncio.create_task(judge.verify_many(pairs))
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(1.0)              # the batch in progress ends; no further one starts
    assert 1 <= len(calls) <= 2 < len(pairs)
    # the next judgement is not stopped by the last one's request
    monkeypatch.setattr(local_kinds, "encoded_probabilities", original)
    verdicts = await judge.verify_many(pairs[:1])
    assert verdicts[0].label in (Label.SUPPORTED, Label.NOT_SUPPORTED)
