"""The faster CPU path of the MiniCheck procedure (sourcecheckup/judges/local/fast.py) keeps the
authors' scores and labels: DeBERTa's copy-free attention and Flan-T5's one-step decoder equal the
models' own forward passes on padded batches, batching by length keeps padding small, and the
fastest path offered for each kind (int8 weights: PyTorch's for RoBERTa, ONNX Runtime's for DeBERTa-v3 and
Flan-T5, sourcecheckup/judges/local/onnx_runtime.py) gives every label of the parity set that the plain float32
procedure gives.
"""
from __future__ import annotations

import pytest
import torch

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.local import from_spec
from sourcecheckup.judges.local import kinds as local_kinds
from sourcecheckup.judges.local.fast import length_batches, speed_up_deberta, t5_support_logits
from sourcecheckup.models import Label
from tests.judges.test_judge_local_minicheck import judged, loaded_model, parity_set, reference_minicheck
from tests.support.minicheck_models import KINDS

pytestmark = pytest.mark.usefixtures("own_cache")   # ONNX exports go to a test folder (conftest)


def mixed_texts(kind: str) -> list[str]:
    """Chunk texts of very different lengths, so one batch holds much padding."""
    doc, claims = parity_set()[13]
    tokenizer_eos = "[SEP]" if kind == "deberta" else "</s>"
    chunks = local_kinds.minicheck_chunks(doc, 60, local_kinds.word_count)[:3]
    texts = [c + tokenizer_eos + claims[0] for c in chunks] + ["Iron." + tokenizer_eos + claims[1]]
    return ["predict: " + t for t in texts] if kind == "t5" else texts


def test_length_batches_keep_padding_small_and_every_text_once():
    lengths = [400, 120, 398, 390, 35, 119, 401, 36]
    batches = length_batches(lengths, batch_size=16)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        padded = max(lengths[i] for i in batch) * len(batch)
        assert padded <= 1.10 * sum(lengths[i] for i in batch)
    assert [sorted(lengths[i] for i in b) for b in batches] == [[390, 398, 400, 401], [119, 120], [35, 36]]
    assert all(len(b) <= 2 for b in length_batches(lengths, batch_size=2))


def test_deberta_attention_without_copies_equals_the_models_own_on_a_padded_batch(folders):
    model, tokenizer = loaded_model(folders["deberta"], "deberta")
    enc = tokenizer(mixed_texts("deberta"), padding=True, return_tensors="pt")
    assert int(enc["attention_mask"].sum()) < enc["attention_mask"].numel() * 0.8     # much padding
    with torch.inference_mode():
        plain = model(**enc).logits
        assert speed_up_deberta(model) == 2
        fast = model(**enc).logits
        again = model(**enc).logits                       # the kept position projections are reused
    assert torch.allclose(fast, plain, atol=1e-5) and torch.equal(fast, again)


def test_t5_one_step_equals_the_models_own_decoder_step_on_a_padded_batch(folders):
    model, tokenizer = loaded_model(folders["t5"], "t5")
    enc = tokenizer(mixed_texts("t5"), padding=True, return_tensors="pt")
    answers = [tokenizer("0", add_special_tokens=False)["input_ids"][0], tokenizer("1", add_special_tokens=False)["input_ids"][0]]
    with torch.inference_mode():
        zero = torch.zeros((enc["input_ids"].shape[0], 1), dtype=torch.long)
        plain = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                      decoder_input_ids=zero).logits[:, 0, answers]
        fast = t5_support_logits(model, enc["input_ids"], enc["attention_mask"], answers)
    assert torch.allclose(fast, plain, atol=1e-4, rtol=1e-5)
    assert not torch.allclose(plain[0], plain[-1])          # the texts do score differently


@pytest.mark.parametrize("kind", KINDS)
async def test_the_fastest_path_of_each_kind_keeps_every_label_of_the_plain_procedure(folders, kind):
    docs = parity_set()
    model, tokenizer = loaded_model(folders[kind], kind)
    expected = [reference_minicheck(model, tokenizer, kind, d, c)[0] for d, claims in docs for c in claims]
    verdicts = await judged(from_spec(str(folders[kind]), quantize="int8"), docs)
    assert [v.label for v in verdicts] == [Label.SUPPORTED if s > 0.5 else Label.NOT_SUPPORTED for s in expected]
    assert all("int8 weights" in v.rationale for v in verdicts)                         # the fast path did run
    assert all(("ONNX Runtime" in v.rationale) is (kind != "roberta") for v in verdicts)


async def test_a_source_shared_by_statements_is_scored_in_batches_of_similar_length(folders, monkeypatch):
    calls: list[list[int]] = []
    real = local_kinds.encoded_probabilities

    def spy(m, encoded):
        calls.append(encoded["attention_mask"].sum(dim=1).tolist())
        return real(m, encoded)

    monkeypatch.setattr(local_kinds, "encoded_probabilities", spy)
    doc, claims = parity_set()[13]
    source = SourceText.from_text(doc)
    await from_spec(str(folders["roberta"])).verify_many([(c, source) for c in claims * 3])
    assert sum(len(c) for c in calls) > 6
    for lengths in calls:
        assert max(lengths) * len(lengths) <= 1.10 * sum(lengths)
