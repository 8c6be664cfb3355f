"""The built-in judge's learned reader: the shipped model, its runtime without torch, its window, its
place in verdicts and provenance, and the training script (on a tiny model, twice: the same result)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.builtin import BuiltinJudge, reader
from sourcecheckup.models import DECIDED_BY, Label, decided_by
from tests.support.paths import ROOT

PARACETAMOL = ("The usual dose of paracetamol for adults is one or two 500mg tablets up to 4 times in 24 hours. "
               "Always leave at least 4 hours between doses. Do not take more than 4 doses in 24 hours. This means "
               "the maximum amount an adult can take is 8 tablets (4g) in 24 hours.")


def test_the_shipped_reader_is_small_and_says_what_it_is() -> None:
    folder = reader.reader_dir()
    model = folder / "reader-int8.onnx"
    assert model.is_file() and model.stat().st_size <= 30 * 1024 * 1024
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert 0.0 < card["threshold"] < 1.0 and 0.0 <= card["review_band"] < 0.5
    # trained only on the claim files' training sets; the health sets it is measured on are never in it
    assert {"check_covid_dev.jsonl", "healthver_dev.jsonl", "wice_dev.jsonl"} <= set(card["never_trained_on"])
    assert not any("healthver" in k or "check_covid_dev" in k or "wice_dev" in k for k in card["stage1_trained_on"])
    assert "stage2_trained_on" not in card   # WiCE dev is where its page threshold is chosen, never trained on
    # a source of one window has its own threshold (chosen on the clinical suite and held-out training pairs)
    assert 0.0 < card["short_threshold"] < card["threshold"]
    short, page = reader.ReaderCard.load(folder), "word " * (reader.WINDOW_WORDS + 1)
    assert short.threshold_for(len("word ".split())) == card["short_threshold"]
    assert short.threshold_for(len(page.split())) == card["threshold"]
    # the review band keeps its width in log-odds: narrower near 0 than at the page threshold
    assert short.near(card["threshold"] + card["review_band"] * 0.9, card["threshold"])
    assert not short.near(card["short_threshold"] + card["review_band"] * 0.9, card["short_threshold"])
    assert short.near(card["short_threshold"] + card["review_band"] * 0.3, card["short_threshold"])
    assert (folder / "tokenizer.json").is_file()


def test_the_reader_runs_on_onnx_runtime_without_torch() -> None:
    code = ("import sys, json; from sourcecheckup.judges.builtin.reader import Reader; r = Reader(); "
            "p = r.probabilities([('The flu vaccine cannot give you flu.', 'The flu vaccine cannot give you flu.'), "
            "('The flu vaccine can give you flu.', 'Most side effects are mild.')]); "
            "print(json.dumps({'p': p.tolist(), 'torch': 'torch' in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["torch"] is False
    same, unrelated = result["p"]
    assert same > 0.5 > unrelated


def test_a_batch_gives_each_pair_the_probability_it_gets_alone() -> None:
    r = reader.shared_reader()
    pairs = [("Adults need 10 micrograms of vitamin D a day.", "Adults need 10 micrograms of vitamin D a day."),
             ("Iron tablets are best taken on an empty stomach.",
              "Take your iron tablets on an empty stomach, about an hour before a meal. " * 6)]
    together = r.probabilities(pairs)
    alone = np.array([r.probabilities([p])[0] for p in pairs])
    assert np.allclose(together, alone, atol=1e-5)


def test_the_window_keeps_the_closest_sentences_in_the_page_order() -> None:
    sentences = ["Opening hours.", "Take two tablets.", "Parking is free.", "Never more than eight a day."]
    window = reader.evidence_window(sentences, [0.1, 0.9, 0.0, 0.8], budget=9)
    assert window == "Take two tablets. Never more than eight a day."
    assert reader.evidence_window(sentences, [0.1, 0.9, 0.0, 0.8], budget=4, must=[2]) == "Parking is free."
    long = ["word " * 200]
    assert len(reader.evidence_window(long, [1.0]).split()) == reader.SENTENCE_WORDS


def test_the_reader_reads_the_closest_sentences_alone_and_with_their_neighbours() -> None:
    sentences = ["Opening hours.", "It was founded in 1901.", "The clinic moved to Leeds.", "Parking is free.",
                 "Staff are friendly."]
    windows = reader.evidence_windows(sentences, [0.0, 0.9, 0.5, 0.1, 0.05], singles=2)
    assert windows[0] == reader.evidence_window(sentences, [0.0, 0.9, 0.5, 0.1, 0.05])
    assert "It was founded in 1901." in windows and "The clinic moved to Leeds." in windows
    assert "Opening hours. It was founded in 1901. The clinic moved to Leeds." in windows
    assert "It was founded in 1901. The clinic moved to Leeds. Parking is free." in windows
    assert len(windows) == len(set(windows))   # a window met twice is read once
    assert reader.evidence_windows(["One sentence only."], [1.0]) == ["One sentence only."]


def test_verdicts_and_provenance_name_the_reader_and_its_digest() -> None:
    judge = BuiltinJudge(use_reader=True)
    record = judge.reader.record()
    v, = judge.score_pairs([("Always leave at least 4 hours between doses of paracetamol.",
                             SourceText.from_text(PARACETAMOL))])
    assert v.prompt_version == "builtin-5"
    assert v.model_version.startswith(f"builtin-5/{record['name']}@{record['sha256'][:12]}/")
    prov = judge.provenance()
    assert prov["reader"]["sha256"] == record["sha256"] and len(record["sha256"]) == 64
    assert prov["threshold"] == judge.threshold and prov["vetoes"] == sorted(judge.vetoes)


def test_review_first_marks_the_reader_probabilities_near_the_threshold() -> None:
    judge = BuiltinJudge(use_reader=True)
    page = SourceText.from_text(PARACETAMOL + " Paracetamol is a common painkiller used to treat aches and pain. "
                                "It can also be used to reduce a high temperature.")
    statements = ["Paracetamol treats aches and pain.", "Paracetamol lowers a high temperature.",
                  "Paracetamol is an antibiotic.", "Paracetamol is stronger than morphine.",
                  "Paracetamol can be taken every 4 hours.", "Paracetamol is sold in 500mg tablets."]
    verdicts = judge.score_pairs([(s, page) for s in statements])
    for v in verdicts:
        if decided_by(v.flags) != "reader":
            continue
        near = judge.reader.card.near(v.score, judge.reader_threshold(page))
        assert v.review_first == near or (v.label is Label.SUPPORTED and "review first" in v.rationale), v


def test_an_exact_check_vetoes_the_reader_on_a_contradicted_dose() -> None:
    page = SourceText.from_text(PARACETAMOL)
    statement = "Adults can safely take up to 8 g of paracetamol in 24 hours."
    vetoed, = BuiltinJudge(use_reader=True).score_pairs([(statement, page)])
    assert vetoed.label is Label.NOT_SUPPORTED and "contradicted" in vetoed.flags
    assert DECIDED_BY + "quantity" in vetoed.flags and "8 g" in vetoed.rationale
    free, = BuiltinJudge(use_reader=True, vetoes=frozenset()).score_pairs([(statement, page)])
    assert decided_by(free.flags) == "reader"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory):
    """The training script end to end on a tiny BERT built from a config and a few claim rows."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.tiny_model import build_random_model

    base = tmp_path_factory.mktemp("tiny_base")
    build_random_model(base, labels=("supported",), hidden_size=32, layers=1, heads=2, intermediate=64,
                       extra_words=("iron", "daily", "take"), dropout=0.1)   # training draws dropout masks
    data = tmp_path_factory.mktemp("claims")
    rows = [{"claim": f"Patients take {n} mg of iron daily.", "evidence": f"Adult patients take {n} mg of iron daily.",
             "binary_label": "supported", "case_id": f"c{n}"} for n in range(1, 13)]
    rows += [{"claim": f"Patients take {n} mg of iron daily.", "evidence": "Children should not take iron.",
              "binary_label": "not_supported", "case_id": f"n{n}"} for n in range(1, 13)]
    (data / "scifact_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pages = [{"claim": f"Patients take {n} mg of iron daily.", "binary_label": "supported" if n % 2 else "not_supported",
              "evidence": f"Opening hours.\nAdult patients take {n if n % 2 else n + 1} mg of iron daily.\nParking."}
             for n in range(1, 11)]
    (data / "wice_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pages), encoding="utf-8")

    def run(work: Path, stages: str, *extra: str, status: int = 0) -> str:
        cmd = [sys.executable, str(ROOT / "scripts" / "train_reader.py"), "--stage", stages, "--data", str(data),
               "--work", str(work), "--base", str(base), "--out", str(work / "out"), "--epochs", "1",
               "--holdout", "0.2", *extra]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert out.returncode == status, out.stderr[-3000:]
        return out.stderr

    first, second = tmp_path_factory.mktemp("run1"), tmp_path_factory.mktemp("run2")
    run(first, "data,train,export,calibrate")
    run(second, "data,train")
    # two passes in one go, and the same two passes stopped twice and taken up again
    whole, pieces = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("pieces")
    run(whole, "data,train", "--epochs", "2")
    run(pieces, "data")
    logs = [run(pieces, "train", "--epochs", "2", "--checkpoint-every", "1", "--stop-after-steps", "1", status=3),
            run(pieces, "train", "--epochs", "2", "--checkpoint-every", "1", "--stop-after-steps", "2", status=3),
            run(pieces, "train", "--epochs", "2", "--checkpoint-every", "1")]
    return first, second, whole, pieces, logs


def test_the_training_script_builds_pairs_trains_and_exports_int8(tiny_run) -> None:
    first, *_ = tiny_run
    examples = [json.loads(line) for line in (first / "train.jsonl").read_text().splitlines()]
    origins = {e["origin"] for e in examples}
    assert "scifact_train.jsonl" in origins and {"gen:number", "gen:joined"} & origins
    assert all(e["label"] in (0, 1) for e in examples)
    out = first / "out"
    assert (out / "reader-int8.onnx").is_file() and (out / "tokenizer.json").is_file()
    r = reader.Reader(out)
    p = r.probabilities([("Patients take 3 mg of iron daily.", "Adult patients take 3 mg of iron daily.")])
    assert 0.0 <= float(p[0]) <= 1.0
    # calibrated without stage 2: on WiCE dev read as the judge reads it, which it never trained on
    card = json.loads((out / "card.json").read_text())
    assert 0.05 <= card["threshold"] <= 0.95 and 0.0 <= card["review_band"] <= 0.3
    assert "wice_dev.jsonl" in card["never_trained_on"] and "stage2_trained_on" not in card
    assert 0.0 <= card["wice_dev_cv_balanced_accuracy"] <= 1.0


def test_full_data_puts_each_generated_negation_on_both_sides_and_quantities_in_other_units(tmp_path) -> None:
    data = tmp_path / "claims"
    data.mkdir()
    rows = [{"claim": f"Patients take {n} mg of iron daily.", "binary_label": "supported", "case_id": f"c{n}",
             "evidence": f"Adult patients take {n} mg of iron daily. They are seen every month."} for n in range(1, 13)]
    (data / "scifact_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_reader.py"), "--stage", "data", "--full",
                          "--data", str(data), "--work", str(tmp_path / "work")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    examples = [json.loads(line) for line in (tmp_path / "work" / "train.jsonl").read_text().splitlines()]
    by = {o: [e for e in examples if e["origin"] == o] for o in ("gen:copied-negated", "gen:negated-both",
                                                                 "gen:source-negated")}
    assert by["gen:negated-both"] and len(by["gen:negated-both"]) == len(by["gen:copied-negated"])
    for negated, both, flipped in zip(*by.values()):
        # the negated sentence: unsupported by the page, supported by the page that says it, and the
        # original sentence unsupported by that page
        assert negated["label"] == 0 and both["label"] == 1 and flipped["label"] == 0
        assert both["claim"] == negated["claim"] and both["claim"] in both["evidence"]
        assert flipped["evidence"] == both["evidence"] and flipped["claim"] not in flipped["evidence"]
    # "n mg" said in micrograms or grams (supported) and ten times more or less (not)
    units = [e for e in examples if e["origin"] == "gen:unit"]
    wrong = [e for e in examples if e["origin"] == "gen:unit-wrong"]
    assert units and len(units) == len(wrong)

    def said(mg: float) -> set[str]:
        return {f" {mg * 1000:g} micrograms ", f" {mg / 1000:g} g "}

    for right, off in zip(units, wrong):
        n = int(re.search(r"take (\d+) mg", right["evidence"]).group(1))
        assert any(q in right["claim"] for q in said(n)) and right["label"] == 1
        assert any(q in off["claim"] for q in said(n * 10) | said(n / 10)) and off["label"] == 0
        assert off["evidence"] == right["evidence"]


def test_training_twice_gives_the_same_model(tiny_run) -> None:
    from safetensors.numpy import load_file

    first, second, *_ = tiny_run
    a = load_file(str(first / "stage1" / "model.safetensors"))
    b = load_file(str(second / "stage1" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a) < 1e-5


def test_a_training_run_stopped_and_taken_up_again_gives_the_same_model(tiny_run) -> None:
    """A long CPU pass spread over sittings: stopped twice (the second time in the second pass), the same
    command again goes on from the saved state and ends with the model of the run never stopped."""
    from safetensors.numpy import load_file

    *_, whole, pieces, logs = tiny_run
    # each pass is two steps here: stopped inside the first pass, then inside the second
    assert "stopped after step 1 of 2" in logs[0]
    assert "resumed at step 1 of 2" in logs[1] and "stopped after step 1 of 2" in logs[1]
    assert "resumed at step 2 of 2" in logs[2] and "resumed at step 1 of 2" in logs[2]
    a = load_file(str(whole / "stage1" / "model.safetensors"))
    b = load_file(str(pieces / "stage1" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a) < 1e-5


def test_reading_facts_takes_the_weakest_fact_and_the_rationale_names_it(monkeypatch):
    """With the card's read_facts, a statement is as supported as its least supported fact."""
    from types import SimpleNamespace

    from sourcecheckup.judges.builtin import reader as rd

    r = rd.shared_reader()
    monkeypatch.setitem(r.card.data, "read_facts", True)
    probs = {"whole": 0.9, "fact one": 0.8, "fact two": 0.1, "alone": 0.7}
    monkeypatch.setattr(r, "best_of", lambda jobs, stop=None: [(probs[w[0]], w[0]) for _, w in jobs])
    two = SimpleNamespace(windows=["whole"], fact_windows=[("A is B", ["fact one"]), ("C is D", ["fact two"])],
                          reader=None, weakest=None)
    one = SimpleNamespace(windows=["alone"], fact_windows=[], reader=None, weakest=None)
    r.read([("A is B, and C is D.", two), ("E is F.", one)])
    assert (two.reader, two.weakest) == (0.1, ("C is D", 0.1))
    assert (one.reader, one.weakest) == (0.7, None)
    text = rd.rationale(False, 0.1, False, weakest=two.weakest)
    assert "'C is D'" in text and text.startswith("not supported")
    monkeypatch.setitem(r.card.data, "read_facts", False)
    two.reader = two.weakest = None
    r.read([("A is B, and C is D.", two)])
    assert (two.reader, two.weakest) == (0.9, None)


def test_a_reader_folder_named_in_the_environment_replaces_the_shipped_one(tmp_path, monkeypatch):
    import json
    import shutil

    from sourcecheckup.judges.builtin import reader as rd

    shipped = rd.reader_dir()
    other = tmp_path / "candidate"
    shutil.copytree(shipped, other)
    card = json.loads((other / "card.json").read_text())
    card.update(name="candidate-reader", threshold=0.42)
    (other / "card.json").write_text(json.dumps(card))
    monkeypatch.setenv(rd.READER_DIR_ENV, str(other))
    assert rd.reader_dir() == other and rd.available()
    r = rd.Reader()
    assert r.record()["name"] == "candidate-reader" and r.card.threshold == 0.42
    monkeypatch.delenv(rd.READER_DIR_ENV)
    assert rd.reader_dir() == shipped
