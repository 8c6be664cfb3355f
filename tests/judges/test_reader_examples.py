"""The built-in judge on plain health pages, as a clinician would read them (issue 40's six examples and
their opposites), through ``sourcecheckup verify-pairs`` with each page's whole text: the default judge
and ``builtin:reader``."""
from __future__ import annotations

import json

import pytest

from sourcecheckup.cli import main
from sourcecheckup.judges.builtin.explanation import rationale_contradicts_label
from sourcecheckup.models import Label
from tests.support.paths import FIXTURES

PAGES = FIXTURES / "health_pages"
EXAMPLES = [json.loads(line) for line in (PAGES / "examples.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]


@pytest.fixture(scope="module", params=["builtin", "builtin:reader"])
def verdicts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("reader_examples")
    pairs, out = folder / "pairs.jsonl", folder / "verdicts.jsonl"
    with pairs.open("w", encoding="utf-8") as fh:
        for e in EXAMPLES:
            page = (PAGES / e["page"]).read_text(encoding="utf-8")
            fh.write(json.dumps({"id": e["id"], "statement": e["claim"], "source": page}) + "\n")
    assert main(["verify-pairs", str(pairs), "--judge", request.param, "-o", str(out), "-q"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["id"] for e in EXAMPLES])
def test_the_verdict_is_the_one_a_clinician_would_sign(verdicts: dict[str, dict], example: dict) -> None:
    v = verdicts[example["id"]]
    assert v["label"] == example["expected"], v["rationale"]
    assert not rationale_contradicts_label(Label(v["label"]), v["rationale"]), v["rationale"]
    assert v["quote_found"], v["quote"]
    if v["label"] == "supported":
        assert any(f.startswith("decided_by:") for f in v["flags"])
