"""Set-up the command line's tests share: a database with one audited run, as a user's first audit leaves it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."


@pytest.fixture(scope="module")
def audited(tmp_path_factory, site) -> Path:
    """A database with one run: two answers cite the same dead page, one line of the input is broken."""
    tmp = tmp_path_factory.mktemp("audited")
    lines = [json.dumps({"id": f"a{i}", "question": "What counts as high blood pressure?", "model": "model-x",
                         "response": f"{SUPPORTED} [1] Salt {i} matters [2].",
                         "citations": [f"{site}/article/hypertension", f"{site}/status/404"]}) for i in range(2)]
    lines.insert(1, "{not json")
    answers = tmp / "answers.jsonl"
    answers.write_text("\n".join(lines) + "\n")
    db = tmp / "a.db"
    p = cli.sc("audit", str(answers), "--judge", "keyword:0", "--db", str(db), "--allow-host", "127.0.0.1", "-q",
               env={"SOURCECHECKUP_ARCHIVE": "off", "SOURCECHECKUP_BROWSER": "never"}, in_process=True)
    assert p.returncode == 0, p.stderr
    # -q hides progress, never a warning about a skipped record
    assert "warning: answers.jsonl:2" in p.stderr and "responses 2/2" not in p.stderr
    return db
