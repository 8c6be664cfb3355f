"""Judge specs are checked before a run starts (engine and CLI), and a resume can take corrected ones."""
from __future__ import annotations

from sourcecheckup.fetching import FetchOptions
from sourcecheckup.judges import validate_judge_spec
from sourcecheckup.models import Response
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.cli.test_cli import SUPPORTED, sc

NO_KEYS = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


def test_validate_judge_spec_names_what_is_wrong(no_keyring, monkeypatch):
    assert validate_judge_spec("builtin") is None
    assert validate_judge_spec("builtin:0.6") is None
    problem = validate_judge_spec("gpt4")
    assert problem and "unknown judge 'gpt4'" in problem and "openai:gpt-4o" in problem
    assert "is not a threshold" in validate_judge_spec("builtin:high")
    assert "names no model" in validate_judge_spec("openai:")
    assert "no API key for openai" in validate_judge_spec("openai:gpt-4o")
    assert "OPENAI_API_KEY" in validate_judge_spec("openai:gpt-4o")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert validate_judge_spec("openai:gpt-4o") is None
    assert "base URL and a model" in validate_judge_spec("openai-compatible:http://localhost:11434/v1")
    assert validate_judge_spec("openai-compatible:http://127.0.0.1:1/v1#m") is None
    assert "model folder" in validate_judge_spec("local:")


def test_cli_audit_refuses_a_bad_judge_before_it_starts(tmp_path):
    answer = tmp_path / "a.txt"
    answer.write_text(f"{SUPPORTED} [1]\n\n[1]: https://example.org/x\n")
    db = tmp_path / "a.db"
    p = sc("audit", str(answer), "--judge", "gpt4", "--db", str(db))
    assert p.returncode == 2 and "openai:gpt-4o" in p.stderr and "--judge" in p.stderr
    p = sc("audit", str(answer), "--judge", "openai:gpt-4o", "--db", str(db), env=NO_KEYS)
    assert p.returncode == 2 and "no API key for openai" in p.stderr
    with Store(db) as st:
        assert st.list_runs() == []     # nothing was started


def test_cli_resume_takes_corrected_judge_settings(tmp_path, site):
    db = tmp_path / "a.db"
    url = f"{site}/article/hypertension"
    with Store(db) as st:
        # a run recorded with a judge that cannot run here (no key): as the app leaves one that failed on it
        config = RunConfig(judges=["openai:gpt-4o"], fetch=FetchOptions(allow_hosts=("127.0.0.1",)))
        audit = Audit(st, config)
        run_id = audit.create([Response(id="r1", text=f"{SUPPORTED} [1]", citations=(url,))])
        st.set_run_status(run_id, "failed", "no API key for openai")

    p = sc("audit", "--resume", run_id, "--db", str(db), env=NO_KEYS)
    assert p.returncode == 2
    assert "no API key for openai" in p.stderr and f"audit --resume {run_id} --judge SPEC" in p.stderr

    p = sc("audit", "--resume", run_id, "--judge", "keyword:0", "--db", str(db), env=NO_KEYS)
    assert p.returncode == 0, p.stderr
    with Store(db) as st:
        run = st.get_run(run_id)
        assert run.status == "completed"
        assert run.judges == ["keyword:0"] and run.config["judges"] == ["keyword:0"]
        data = st.load_run(run_id)
        verdicts = [v for vs in data.verdicts.values() for v in vs]
        assert verdicts and {v.verdict.judge_id for v in verdicts} == {"keyword:0"}


def test_cli_run_whose_every_source_is_refused_ends_with_an_allow_host_hint(tmp_path, site):
    answer = tmp_path / "a.txt"
    answer.write_text(f"{SUPPORTED} [1]\n\n[1]: {site}/article/hypertension\n")
    p = sc("audit", str(answer), "--judge", "keyword:0", "--db", str(tmp_path / "a.db"))
    assert p.returncode == 0, p.stderr
    assert "every cited source was refused as unsafe" in p.stderr and "--allow-host" in p.stderr
    p = sc("audit", str(answer), "--judge", "keyword:0", "--db", str(tmp_path / "b.db"), "--allow-host", "127.0.0.1")
    assert "refused as unsafe" not in p.stderr
