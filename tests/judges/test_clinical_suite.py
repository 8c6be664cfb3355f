"""The hand-written clinical suite (bench/data/clinical_pairs.jsonl), its held-out twin
(bench/data/clinical_heldout.jsonl) and their report in bench/judge_accuracy.py: yardsticks that
are balanced, labelled in both directions in every category, and kept apart from the demo, the
smoke pairs and (the held-out one) from the clinical suite's medicines and claims."""
from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest

import tests.support.fake_judge  # noqa: F401  registers the deterministic "keyword" judge
from tests.support.paths import ROOT

SUITE = ROOT / "bench" / "data" / "clinical_pairs.jsonl"
HELDOUT = ROOT / "bench" / "data" / "clinical_heldout.jsonl"
# each suite file and the split its rows carry
SUITES = pytest.mark.parametrize("suite, split", [(SUITE, "clinical"), (HELDOUT, "heldout")],
                                 ids=["clinical", "heldout"])
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
# the medicines and conditions of the clinical suite, which the held-out suite must not name
CLINICAL_SUITE_TOPICS = (
    "amlodipine", "doxycycline", "nitrofurantoin", "fluoxetine", "citalopram", "apixaban",
    "rivaroxaban", "allopurinol", "colchicine", "methotrexate", "alendronic", "furosemide",
    "gabapentin", "tramadol", "codeine", "cetirizine", "folic acid", "digoxin", "adrenaline",
    "levonorgestrel", "ulipristal", "mesalazine", "metronidazole", "lithium", "isotretinoin",
    "semaglutide", "clozapine", "varenicline", "zopiclone", "aciclovir", "oseltamivir",
    "flucloxacillin", "tamsulosin", "trimethoprim", "sildenafil", "salbutamol", "ferrous sulfate",
    "loperamide", "naproxen", "chlorphenamine", "bisoprolol", "proton pump", "lyme",
    "urinary tract infection", "atrial fibrillation", "gout", "rheumatoid", "ulcerative colitis",
    "bacterial vaginosis", "hypertension", "hba1c", "kidney disease", "shingles", "cellulitis",
    "measles", "rabies", "norovirus", "cataract", "hrt", "asthma", "heart failure", "anaphylaxis",
    "cardiac arrest", "helicobacter", "osteoarthritis", "sunscreen", "e-cigarette", "insulin")


def _rows(suite: Path = SUITE) -> list[dict]:
    with suite.open(encoding="utf-8") as fh:
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


@SUITES
def test_clinical_suite_parses_with_the_claim_file_fields_and_unique_ids(suite, split):
    rows = _rows(suite)
    assert len(rows) >= (150 if split == "clinical" else 160)
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1]
    prefix = "cq" if split == "clinical" else "ch"
    for r in rows:
        assert {"id", "claim", "evidence", "label", "binary_label", "category", "split"} <= set(r), r["id"]
        assert r["split"] == split and re.fullmatch(prefix + r"\d{3}", r["id"]), r["id"]
        assert r["category"] in CATEGORIES, r["id"]
        assert (r["label"], r["binary_label"]) in {("SUPPORT", "supported"), ("REFUTE", "not_supported")}, r["id"]
        assert r["claim"].strip() and r["evidence"].strip()


@SUITES
def test_clinical_suite_labels_are_balanced_overall_and_in_every_category(suite, split):
    rows = _rows(suite)
    share = sum(r["binary_label"] == "supported" for r in rows) / len(rows)
    assert 0.40 <= share <= 0.60, share
    by_cat = Counter((r["category"], r["binary_label"]) for r in rows)
    for cat in CATEGORIES:
        assert by_cat[(cat, "supported")] > 0 and by_cat[(cat, "not_supported")] > 0, cat
    # roughly even categories: none is under half or over twice the mean size
    sizes = Counter(r["category"] for r in rows)
    mean = len(rows) / len(CATEGORIES)
    assert all(mean / 2 <= n <= 2 * mean for n in sizes.values()), sizes


@SUITES
def test_no_claim_is_its_own_evidence_and_evidence_has_distractor_sentences(suite, split):
    for r in _rows(suite):
        assert _norm(r["claim"]) != _norm(r["evidence"]), r["id"]
        assert _norm(r["claim"]) not in _norm(r["evidence"]) or r["binary_label"] == "supported", r["id"]
        n_sentences = len([s for s in re.split(r"(?<=[.;!?])\s+", r["evidence"]) if s.strip()])
        assert 2 <= n_sentences <= 4, (r["id"], n_sentences)


@SUITES
def test_clinical_suite_repeats_no_demo_claim_and_avoids_the_reserved_medicines(suite, split):
    rows = _rows(suite)
    sample = _sample_answer_sentences()
    assert len(sample) > 20                     # the sample answers were read
    for r in rows:
        claim, evidence = _norm(r["claim"]), _norm(r["evidence"])
        for s in sample:
            assert s != claim and s not in evidence, (r["id"], s)
        text = (r["claim"] + " " + r["evidence"]).lower()
        for medicine in RESERVED_MEDICINES:
            assert medicine not in text, (r["id"], medicine)


@SUITES
def test_clinical_suite_repeats_no_smoke_pair(suite, split):
    smoke_file = next((p for p in SMOKE_CANDIDATES if p.is_file()), None)
    if smoke_file is None:
        pytest.skip("no ../shared/data/smoke next to this checkout")
    smoke = [json.loads(line) for line in smoke_file.read_text().splitlines() if line.strip()]
    assert smoke
    smoke_claims = {_norm(s["claim"]) for s in smoke}
    smoke_evidence = {_norm(s["evidence"]) for s in smoke}
    for r in _rows(suite):
        assert _norm(r["claim"]) not in smoke_claims, r["id"]
        assert _norm(r["evidence"]) not in smoke_evidence, r["id"]


def test_heldout_suite_shares_no_claim_or_passage_with_the_clinical_suite():
    clinical, heldout = _rows(SUITE), _rows(HELDOUT)
    clinical_claims = {_norm(r["claim"]) for r in clinical}
    clinical_evidence = {_norm(r["evidence"]) for r in clinical}
    for r in heldout:
        assert _norm(r["claim"]) not in clinical_claims, r["id"]
        assert _norm(r["evidence"]) not in clinical_evidence, r["id"]


def test_heldout_suite_names_none_of_the_clinical_suites_medicines_or_conditions():
    clinical_text = " ".join(r["claim"] + " " + r["evidence"] for r in _rows(SUITE)).lower()
    for topic in CLINICAL_SUITE_TOPICS:            # the list is the clinical suite's, not invented
        assert re.search(r"\b" + re.escape(topic), clinical_text), topic
    for r in _rows(HELDOUT):
        text = (r["claim"] + " " + r["evidence"]).lower()
        for topic in CLINICAL_SUITE_TOPICS:
            assert not re.search(r"\b" + re.escape(topic), text), (r["id"], topic)


def test_heldout_suite_varies_its_sentence_shapes():
    # not only leaflet sentences: Q&A pages, guideline recommendations and trial abstracts too
    passages = {r["evidence"] for r in _rows(HELDOUT)}
    questions = [e for e in passages if e.split("?")[0].endswith(tuple("abcdefghijklmnopqrstuvwxyz'"))
                 and "?" in e.split(". ")[0]]
    guidelines = [e for e in passages if re.match(r"(Offer|Assess|Treat|Consider)\b|The WHO recommends", e)]
    abstracts = [e for e in passages if re.search(r"\b(trials?|review) of [\d,]+", e)]
    assert len(questions) >= 5 and len(guidelines) >= 3 and len(abstracts) >= 4, (
        len(questions), len(guidelines), len(abstracts))


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

    rc = _judge_accuracy().main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(path),
                                 "--no-heldout"])
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
    rc = ja.main(["--judge", "keyword:0", "--no-clinical", "--no-heldout", "--data", str(tmp_path / "no-claims")])
    captured = capsys.readouterr()
    assert rc == 2 and "clinical" not in captured.out and "no data folder" in captured.err


def _write_suite(path: Path, split: str, rows: list[tuple[str, str, str, str]], evidence: str) -> Path:
    path.write_text("".join(json.dumps({
        "id": i, "claim": c, "evidence": evidence, "label": "SUPPORT" if b == "supported" else "REFUTE",
        "binary_label": b, "category": cat, "split": split}) + "\n" for i, c, b, cat in rows))
    return path


# The keyword judge says supported whenever every statement word is in the source.
HELDOUT_EVIDENCE = "Give 400 micrograms every 2 to 3 minutes. Repeat the treatment after 7 days."
HELDOUT_ROWS = [
    ("ch1", "Give 400 micrograms every 2 to 3 minutes.", "supported", "dose"),
    ("ch2", "Repeat the treatment after 2 to 3 days.", "not_supported", "timing"),   # words all present
    ("ch3", "Give 0.4 mg every 2 minutes.", "supported", "unit_conversion"),          # words missing
    ("ch4", "Never repeat the treatment.", "not_supported", "instruction"),
]
CLINICAL_EVIDENCE = "Take 10 mg twice a day. Do not take more than 20 mg a day."
CLINICAL_ROWS = [
    ("cq1", "Take 10 mg twice a day.", "supported", "dose"),
    ("cq2", "Take 20 mg twice a day.", "not_supported", "max_dose"),                 # words all present
    ("cq3", "Take 5 mg a day.", "not_supported", "dose"),                           # words missing
]


def test_judge_accuracy_reports_the_heldout_suite_under_its_own_label(tmp_path, capsys):
    clinical = _write_suite(tmp_path / "clinical.jsonl", "clinical", CLINICAL_ROWS, CLINICAL_EVIDENCE)
    heldout = _write_suite(tmp_path / "heldout.jsonl", "heldout", HELDOUT_ROWS, HELDOUT_EVIDENCE)
    rc = _judge_accuracy().main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(clinical),
                                 "--heldout", str(heldout)])
    out = capsys.readouterr().out
    assert rc == 0
    lines = out.rstrip().splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith(f"held-out (never tuned on) {heldout}"))
    assert any(line.startswith(f"clinical suite {clinical}") for line in lines[:title])
    heldout_part = "\n".join(lines[title:])
    # supported 1/2 right (ch3 lacks words), not supported 1/2 right (ch2 passes): balanced 0.5
    assert "n 4  balanced accuracy 0.500 (target >= 0.95: misses)  accuracy 0.500" in heldout_part
    assert "timing           0.000 (n=1; supported 0/0, not supported 0/1)" in heldout_part
    assert "instruction      1.000 (n=1; supported 0/0, not supported 1/1)" in heldout_part
    assert "contradicted quantity called supported: 1 (target 0: misses): ch2" in heldout_part
    assert "cq2" not in heldout_part
    assert lines[-2] == "heldout: balanced 0.500; false-supported quantities 1"
    assert lines[-1] == "clinical: balanced 0.750; false-supported quantities 1"
    assert "check_covid" not in out


def test_judge_accuracy_judges_the_heldout_file_by_default_and_skips_it_on_request(tmp_path, capsys):
    ja = _judge_accuracy()
    assert ja.HELDOUT_FILE == HELDOUT
    clinical = _write_suite(tmp_path / "clinical.jsonl", "clinical", CLINICAL_ROWS, CLINICAL_EVIDENCE)
    rc = ja.main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(clinical)])
    out = capsys.readouterr().out
    assert rc == 0 and f"held-out (never tuned on) {HELDOUT}" in out
    n = len(_rows(HELDOUT))
    assert f"  n {n}  balanced accuracy" in out
    assert out.rstrip().splitlines()[-2].startswith("heldout: balanced ")

    rc = ja.main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(clinical), "--no-heldout"])
    out = capsys.readouterr().out
    assert rc == 0 and "held-out" not in out and "heldout:" not in out
    assert out.rstrip().splitlines()[-1] == "clinical: balanced 0.750; false-supported quantities 1"

    heldout = _write_suite(tmp_path / "heldout.jsonl", "heldout", HELDOUT_ROWS, HELDOUT_EVIDENCE)
    rc = ja.main(["--judge", "keyword:0", "--no-clinical", "--heldout", str(heldout),
                  "--data", str(tmp_path / "no-claims")])
    captured = capsys.readouterr()
    assert rc == 2 and "no data folder" in captured.err             # the held-out part still printed
    assert "clinical suite" not in captured.out and "clinical:" not in captured.out
    assert "heldout: balanced 0.500; false-supported quantities 1" in captured.out

    rc = ja.main(["--judge", "keyword:0", "--only-clinical", "--clinical", str(clinical),
                  "--heldout", str(tmp_path / "none.jsonl")])
    captured = capsys.readouterr()
    assert rc == 2 and "no held-out suite" in captured.err and "--no-heldout" in captured.err
