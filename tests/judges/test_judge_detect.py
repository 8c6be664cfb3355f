"""Model servers on this computer, found for the user: fake Ollama and vLLM servers on 127.0.0.1; and
`judges guide`, which names the three ways with their sources and the figures the README measures."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sourcecheckup.cli import main
from sourcecheckup.judges.detect import PORTS_ENV, detect_servers, ports_to_ask
from sourcecheckup.store import Store
from tests.support.fake_llm import FakeLLMServer
from tests.support.fake_model_servers import closed_port, ollama, other_web_app, silent, vllm
from tests.support.paths import ROOT


async def test_ollama_and_vllm_models_become_judge_specs_on_127_0_0_1():
    with ollama() as oll, vllm() as vl:
        nothing = closed_port()
        servers = await detect_servers([oll.port, vl.port, nothing], timeout_s=2)
    assert [(s.port, s.kind) for s in servers] == [(oll.port, "Ollama"), (vl.port, "vLLM")]
    assert servers[0].models == ("llama3.1:8b", "bespoke-minicheck:latest")
    assert servers[0].specs == (f"openai-compatible:http://127.0.0.1:{oll.port}/v1#llama3.1:8b",
                                f"checker:http://127.0.0.1:{oll.port}/v1#bespoke-minicheck:latest")
    assert servers[1].specs == (f"checker:http://127.0.0.1:{vl.port}/v1#bespokelabs/Bespoke-MiniCheck-7B",)
    # only the listing calls, only to the loopback address
    assert {path for path, _ in oll.requests} == {"/api/tags", "/v1/models"}
    assert {host for _, host in oll.requests + vl.requests} == {f"127.0.0.1:{oll.port}", f"127.0.0.1:{vl.port}"}


async def test_an_ollama_without_models_is_listed_with_none():
    with ollama(tags={"models": []}) as oll:
        servers = await detect_servers([oll.port], timeout_s=2)
    assert [(s.kind, s.models) for s in servers] == [("Ollama", ())]


async def test_a_web_page_on_a_port_is_not_a_model_server():
    with other_web_app() as web:
        assert await detect_servers([web.port], timeout_s=2) == []
        assert web.requests   # it was asked, and its answer was not taken for a model list


async def test_servers_that_never_answer_are_asked_at_once_and_given_up_on_quickly():
    with silent() as a, silent() as b, silent() as c, vllm() as vl:
        servers = await detect_servers([a.port, b.port, c.port, vl.port], timeout_s=0.4)
    # the silent ones were given up on, the answering one kept (that they are asked at once, not one after
    # another: bench/time_caps.py)
    assert [s.kind for s in servers] == ["vLLM"]


def test_ports_come_from_the_argument_the_environment_or_the_known_list(monkeypatch):
    monkeypatch.delenv(PORTS_ENV, raising=False)
    assert ports_to_ask() == [11434, 1234, 8080, 8000]
    assert ports_to_ask(env={PORTS_ENV: "5000; 5001,5000"}) == [5000, 5001]
    assert ports_to_ask([7000]) == [7000]
    with pytest.raises(ValueError):
        ports_to_ask([70000])


def test_judges_detect_prints_server_kind_models_and_spec(capsys):
    with ollama() as oll, vllm() as vl:
        nothing = closed_port()
        code = main(["judges", "detect", "--port", str(oll.port), "--port", str(vl.port), "--port", str(nothing)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"Ollama on 127.0.0.1:{oll.port} (http://127.0.0.1:{oll.port}/v1)" in out
    assert f"llama3.1:8b               --judge openai-compatible:http://127.0.0.1:{oll.port}/v1#llama3.1:8b" in out
    assert f"vLLM on 127.0.0.1:{vl.port}" in out
    assert f"--judge checker:http://127.0.0.1:{vl.port}/v1#bespokelabs/Bespoke-MiniCheck-7B" in out
    assert f"Nothing answered on 127.0.0.1:{nothing} (port {nothing})." in out
    assert "needs no --allow-host" in out


def test_judges_detect_reads_ports_from_the_environment_and_prints_json(capsys, monkeypatch):
    with ollama() as oll:
        monkeypatch.setenv(PORTS_ENV, str(oll.port))
        assert main(["judges", "detect", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["host"] == "127.0.0.1" and data["ports"] == [oll.port]
    assert [m["spec"] for m in data["servers"][0]["models"]] == [
        f"openai-compatible:http://127.0.0.1:{oll.port}/v1#llama3.1:8b",
        f"checker:http://127.0.0.1:{oll.port}/v1#bespoke-minicheck:latest"]


def test_judges_detect_with_nothing_running_says_how_to_start_one(capsys):
    assert main(["judges", "detect", "--port", str(closed_port()), "--timeout", "0.3"]) == 0
    assert "No model server is running on this computer" in capsys.readouterr().out


def test_judges_detect_rejects_a_port_out_of_range(capsys):
    assert main(["judges", "detect", "--port", "99999"]) == 2
    assert "port 99999 is not a port number" in capsys.readouterr().err


def test_judges_guide_names_the_three_paths_with_their_sources(capsys):
    assert main(["judges", "guide"]) == 0
    out = capsys.readouterr().out
    assert "GPT-4o agreed with the consensus of three physicians on 88.7%" in out and "Nature Communications 2025" in out
    assert "77.4% balanced accuracy on LLM-AggreFact" in out and "EMNLP 2024" in out
    assert "1. An API model" in out and "2. A model server on this computer" in out and "3. A downloaded checker" in out


def test_a_detected_spec_judges_an_audit_with_no_allow_host(tmp_path: Path, capsys):
    """The --allow-host guard is for cited URLs: a judge on 127.0.0.1 works without it."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "page.html").write_text(
        "<html><head><title>Influenza</title></head><body><article><h1>Influenza</h1>"
        "<p>Influenza is a viral infection of the airways. It spreads through droplets when people cough "
        "or sneeze, and most people recover within one to two weeks without treatment.</p>"
        "<p>Annual vaccination is the most effective way to prevent influenza and its complications.</p>"
        "</article></body></html>", encoding="utf-8")
    (pack / "sources.json").write_text(json.dumps({"https://example.org/flu": "page.html"}), encoding="utf-8")
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"response": "Influenza is a viral infection of the airways [1].",
                                  "citations": ["https://example.org/flu"]}), encoding="utf-8")
    db = tmp_path / "audit.db"
    with FakeLLMServer("ollama") as server:
        spec = f"openai-compatible:{server.base_url}#llama3.1:8b"
        assert "127.0.0.1" in spec
        code = main(["audit", str(answer), "--db", str(db), "--judge", spec, "--sources", str(pack),
                     "--no-archive", "-q"])
        assert code == 0, capsys.readouterr().err
        assert server.requests, "the judge on 127.0.0.1 was never asked"
    store = Store(db)
    run = store.load_run(store.latest_run_id())
    verdicts = [row.verdict for rows in run.verdicts.values() for row in rows]
    assert verdicts and {v.judge_id for v in verdicts} == {spec}
    assert {v.label.value for v in verdicts} == {"supported"}


def _readme_row(name: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))


def test_judges_guide_says_the_screen_errs_both_ways_with_the_figures_the_readme_measures(capsys):
    from sourcecheckup.judges.guide import BUILTIN_FIGURES as f

    assert main(["judges", "guide"]) == 0
    out = capsys.readouterr().out
    first = out.split("\n\n")[0]
    assert "screening judge" in first
    assert "call a wrong statement supported" in first and "miss paraphrased support" in first
    for figure in (f"{f.wice:.3f}", f"{f.wice_cross_validated:.3f}", f"{f.passed_unreviewed:.1%}",
                   f"{f.clinical_heldout:.3f}"):
        assert figure in first
    # the figures in code are the README's measured ones (bench/judge_accuracy.py)
    wice = _readme_row("wice_dev")
    assert f"**{f.wice:.3f}**" in wice and f"**{f.wice_cross_validated:.3f}**" in wice
    assert f"**{f.passed_unreviewed:.1%}**" in wice
    assert f"**{f.clinical_heldout:.3f}**" in _readme_row("clinical_heldout")
    way3 = out.split("\n3. ")[1]
    assert "sourcecheckup models pull NAME" in way3 and "`sourcecheckup models pull minicheck-roberta-large`" in way3
