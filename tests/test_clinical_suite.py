"""The hand-written clinical suite (bench/data/clinical_pairs.jsonl) and its report in
bench/judge_accuracy.py: a yardstick that is balanced, labelled in both directions in every
category, and kept apart from the demo and the smoke pairs it must not repeat."""
from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest

import tests.support.fake_judge  # noqa: F401  registers the deterministic "keyword" judge

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "bench" / "data" / "clinical_pairs.jsonl"
SAMPLE_ANSWERS = ROOT / "resources" / "samples" / "answers"
# the smoke pairs live next to the repository (../shared), not in it
SMOKE_CANDIDATES = [ROOT.parent / "shared" / "data" / "smoke" / "quantity_smoke.jsonl",
                    ROOT.parents[1] / "shared" / "data" / "smoke" / "quantity_smoke.jsonl"]
CATEGORIES = {"dose", "max_dose", "frequency", "duration", "timing", "threshold", "rate",
              "unit_conversion", "instruction", "overclaim"}
# the medicines of the demo, the smoke pairs and issue 11's examples: reserved, never in the suite
RESERVED_MEDICINES = ("omeprazole", "lisinopril", "sertraline", "prednisolone", "ibuprofen",
                      "levothyroxine", "metformin", "paracetamol", "warfarin", "aspirin",
                      "statin", "coenzyme q10", "amoxicillin", "vitamin d")


def _rows() -> list[dict]:
    with SUITE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w%/.,]+", " ", text.lower()).split()).strip(" .")


def _sample_answer_sentences() -> list[str]:
    texts = []
    for path in sorted(SAMPLE_ANSWERS.iterdir()):
        if path.suffix == ".jsonl":
            texts += [json.loads(line)["response"] for line in path.read_text().splitlines() if line.strip()]
        elif path.suffix == ".md":
            texts.append("\n".join(line for line in path.read_text().splitlines()
                                    if not line.startswith(("#", "[^", "Sources:", "1. ", "2. "))))
    sentences = []
    for text in texts:
        text = re.sub(r"\[\^?\d+\]|\(\[[^]]*\]\([^)]*\)\)", " ", text)   # citation markers and links
        sentences += [s for s in (_norm(p) for p in re.split(r"(?<=[.!?])\s+", text)) if len(s) > 20]
    return sentences


def test_clinical_suite_parses_with_the_claim_file_fields_and_unique_ids():
    rows = _rows()
    assert len(rows) >= 150
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1]
    for r in rows:
        assert {"id", "claim", "evidence", "label", "binary_label", "category", "split"} <= set(r), r["id"]
        assert r["split"] == "clinical"
        assert r["category"] in CATEGORIES, r["id"]
        assert (r["label"], r["binary_label"]) in {("SUPPORT", "supported"), ("REFUTE", "not_supported")}, r["id"]
        assert r["claim"].strip() and r["evidence"].strip()


def test_clinical_suite_labels_are_balanced_overall_and_in_every_category():
    rows = _rows()
    share = sum(r["binary_label"] == "supported" for r in rows) / len(rows)
    assert 0.40 <= share <= 0.60, share
    by_cat = Counter((r["category"], r["binary_label"]) for r in rows)
    for cat in CATEGORIES:
        assert by_cat[(cat, "supported")] > 0 and by_cat[(cat, "not_supported")] > 0, cat
    # roughly even categories: none is under half or over twice the mean size
    sizes = Counter(r["category"] for r in rows)
    mean = len(rows) / len(CATEGORIES)
    assert all(mean / 2 <= n <= 2 * mean for n in sizes.values()), sizes


def test_no_claim_is_its_own_evidence_and_evidence_has_distractor_sentences():
    for r in _rows():
        assert _norm(r["claim"]) != _norm(r["evidence"]), r["id"]
        assert _norm(r["claim"]) not in _norm(r["evidence"]) or r["binary_label"] == "supported", r["id"]
        n_sentences = len([s for s in re.split(r"(?<=[.;!?])\s+", r["evidence"]) if s.strip()])
        assert 2 <= n_sentences <= 4, (r["id"], n_sentences)


def test_clinical_suite_repeats_no_demo_claim_and_avoids_the_reserved_medicines():
    rows = _rows()
    sample = _sample_answer_sentences()
    assert len(sample) > 20                     # the sample answers were read
    for r in rows:
        claim, evidence = _norm(r["claim"]), _norm(r["evidence"])
        for s in sample:
            assert s != claim and s not in evidence, (r["id"], s)
        text = (r["claim"] + " " + r["evidence"]).lower()
        for medicine in RESERVED_MEDICINES:
            assert medicine not in text, (r["id"], medicine)


def test_clinical_suite_repeats_no_smoke_pair():
    smoke_file = next((p for p in SMOKE_CANDIDATES if p.is_file()), None)
    if smoke_file is None:
        pytest.skip("no ../shared/data/smoke next to this checkout")
    smoke = [json.loads(line) for line in smoke_file.read_text().splitlines() if line.strip()]
    assert smoke
    smoke_claims = {_norm(s["claim"]) for s in smoke}
    smoke_evidence = {_norm(s["evidence"]) for s in smoke}
    for r in _rows():
        assert _norm(r["claim"]) not in smoke_claims, r["id"]
        assert _norm(r["evidence"]) not in smoke_evidence, r["id"]


def _judge_accuracy():
    spec = importlib.util.spec_from_file_location("judge_accuracy", ROOT / "bench" / "judge_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_judge_accuracy_reports_contradicted_quantities_called_supported(tmp_path, capsys):
    # The keyword judge says supported whenever every statement word is in the source, so it
    # passes the near misses below that only drop or reorder words: exactly cq2 and cq3.
    evidence = ("Take 10 mg twice a day, or 20 mg once a day for adults. "
                "It is completely safe for most adults when taken as directed.")
    rows = [
        ("cq1", "Adults take 10 mg twice a day.", "supported", "dose"),
        ("cq2", "Adults take 20 mg twice a day.", "not_supported", "dose"),        # words all present
        ("cq3", "Take 10 mg once a day.", "not_supported", "frequency"),           # words all present
        ("cq4", "It is completely safe for adults.", "not_supported", "overclaim"),  # not a quantity
        ("cq5", "Children take 5 mg a day.", "not_supported", "dose"),             # words missing
        ("cq6", "Adults take 10 mg two times daily.", "supported", "frequency"),   # words missing
    ]
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps({
        "id": i, "claim": c, "evidence": evidence, "label": "SUPPORT" if b == "supported" else "REFUTE",
        "binary_label": b, "category": cat, "split": "clinical"}) + "\n" for i, c, b, cat in rows))

    rc = _judge_accuracy().main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(path)])
    out = capsys.readouterr().out
    assert rc == 0
    # supported 1/2 right, not supported 1/4 right: balanced (0.5 + 0.25) / 2
    assert "n 6  balanced accuracy 0.375 (target >= 0.95: misses)  accuracy 0.333" in out
    assert "dose             0.667 (n=3; supported 1/1, not supported 1/2)" in out
    assert "overclaim        0.000 (n=1; supported 0/0, not supported 0/1)" in out
    assert "contradicted quantity called supported: 2 (target 0: misses): cq2 cq3" in out
    assert out.rstrip().splitlines()[-1] == "clinical: balanced 0.375; false-supported quantities 2"
    assert "check_covid" not in out               # --only-clinical leaves the claim files alone


def test_judge_accuracy_skips_the_suite_on_request_and_says_when_it_is_missing(tmp_path, capsys):
    ja = _judge_accuracy()
    assert ja.CLINICAL_FILE == SUITE
    rc = ja.main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(tmp_path / "none.jsonl")])
    assert rc == 2 and "no clinical suite" in capsys.readouterr().err
    rc = ja.main(["--judge", "keyword:0", "--no-clinical", "--data", str(tmp_path / "no-claims")])
    captured = capsys.readouterr()
    assert rc == 2 and "clinical" not in captured.out and "no data folder" in captured.err
