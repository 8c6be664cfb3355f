"""`sourcecheckup demo`: the bundled sample, fully offline, ends with a report."""
from __future__ import annotations

import json
import os
import re

import pytest

from tests.cli.test_cli import sc

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")   # the app's Demo action is tested here too


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One run of `sourcecheckup demo` for the whole module: (process, report path)."""
    tmp = tmp_path_factory.mktemp("demo")
    out = tmp / "demo.html"
    p = sc("demo", "--db", str(tmp / "demo.db"), "-o", str(out), timeout=600,
           env={"SOURCECHECKUP_PLUGINS": ""})
    assert p.returncode == 0, p.stderr
    return p, out


def test_demo_audits_the_bundled_sample_offline_and_prints_the_report_path(demo_run):
    p, out = demo_run
    assert f"demo report: {out}" in p.stdout
    assert "screening" in out.read_text()            # the built-in judge says what it is
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["run"]["judges"] == ["builtin"]
    assert len(report["responses"]) == 10 and report["run"]["n_skipped"] == 0
    sources = {s["url"]: s for r in report["responses"] for s in r["sources"]}
    outcomes = {s["status"] for s in sources.values()}
    assert {"ok", "paywalled", "dead"} <= outcomes        # teaser page and soft 404 are told apart
    assert any("possible_injection" in s["flags"] for s in sources.values())
    assert all(s["status"] != "not_fetched" for s in sources.values())
    categories = {st["category"] for r in report["responses"] for st in r["statements"]}
    assert {"informative", "acknowledgement", "disclaimer"} <= categories
    # every verdict's quote was checked against the source text
    assert all(v["quote_found"] in (True, False, None)
               for r in report["responses"] for st in r["statements"] for v in st["verdicts"])
    m = report["metrics"]
    assert m["url_validity"]["n"] == 18 and m["url_validity"]["k"] == 17


# What resources/samples/README.md says the sample plants, statement by statement (a prefix of the
# statement's text is enough to find it). The demo is an outcome to check, never a set to tune on.
PLANTED_TRUE = {
    "Metformin is contraindicated in patients with an eGFR below 30",
    "Starting metformin is not recommended in patients whose eGFR is between 30 and 45",
    "Iron-overload-related disease develops in 28.4% of male and 1.2% of female",
    "For acute otitis media in children, the first-line antibiotic is high-dose amoxicillin at 80 to 90",
    "For adults aged under 55 who are not of Black African",
    "For adults aged 55 or over, and for Black adults",
    "The WHO recommends thiazide or thiazide-like diuretics",
    "In the ASPREE trial of 19,114 healthy older adults, 100 mg of aspirin a day",
}
PLANTED_FALSE = {
    "Adults can safely take up to 8 g of paracetamol",                 # a wrong dose (the page: 4 g)
    "Metformin should be stopped permanently",                         # the page: withheld, then restarted
    "Antibiotic ear drops are just as effective as oral amoxicillin",  # not in the guideline
    "Pregnant people should get the nasal spray flu vaccine rather than a flu shot",  # the page: not for pregnancy
    "Coenzyme Q10 supplements have been proven",                       # a forum thread of anecdotes
    "Topical NSAID gels are completely safe with warfarin",            # the page: can still cause bleeding
    "NICE advises against offering vitamin D solely to prevent or treat COVID-19",  # cites the hypertension guideline
}


FAILED_CHECK = re.compile(
    r"does not appear|do not appear|contradicted|negates|is negated|different unit|where the (passage|source) says"
    r"|the source does not say|is not in the source", re.I)


def test_demo_verdicts_agree_with_what_the_sample_plants(demo_run):
    _, out = demo_run
    _agrees_with_the_plants(json.loads(out.with_suffix(".json").read_text()))


@pytest.fixture(scope="module")
def reader_report(tmp_path_factory):
    """The bundled sample audited offline as the demo does, with the learned reader as judge."""
    from sourcecheckup import demo

    tmp = tmp_path_factory.mktemp("demo_reader")
    p = sc("audit", str(demo.answers_dir()), "--sources", str(demo.sources_dir()), "--judge", "builtin:reader",
           "--db", str(tmp / "reader.db"), "--report", str(tmp / "reader.json"), "--no-archive", "--no-references",
           "--browser", "never", "-q", timeout=600, env={"SOURCECHECKUP_PLUGINS": ""})
    assert p.returncode == 0, p.stderr
    return json.loads((tmp / "reader.json").read_text())


def test_the_learned_reader_gives_the_planted_verdicts_too(reader_report):
    from sourcecheckup.judges.builtin.explanation import rationale_contradicts_label
    from sourcecheckup.models import Label

    _agrees_with_the_plants(reader_report)
    pairs = {(st["text"], v["url"]): v for r in reader_report["responses"] for st in r["statements"]
             for v in st["verdicts"]}
    assert all(not rationale_contradicts_label(Label(v["label"]), v["rationale"]) for v in pairs.values())
    # the cohort study's abstract never mentions menstruation: its page gate must not pass the explanation
    why = next(v for (text, url), v in pairs.items()
               if text.startswith("Symptoms tend to start later") and "18199861" in url)
    assert why["label"] == "not_supported", why["rationale"]


def _agrees_with_the_plants(report: dict) -> None:
    statements = [st for r in report["responses"] for st in r["statements"]]

    def status_of(prefix: str) -> str:
        found = [st for st in statements if st["text"].startswith(prefix)]
        assert len(found) == 1, f"the sample's statement '{prefix}…' is not in the demo run"
        return found[0]["status"]

    wrong = [f"planted true, shown {status_of(t)}: {t}" for t in PLANTED_TRUE if status_of(t) != "supported"]
    wrong += [f"planted false, shown supported: {t}" for t in PLANTED_FALSE if status_of(t) == "supported"]
    assert not wrong, "\n".join(wrong)
    # a label never contradicts its own rationale
    for st in statements:
        for v in st["verdicts"]:
            if v["label"] == "supported":
                assert not FAILED_CHECK.search(v["rationale"]), (st["text"], v["rationale"])


def test_the_demo_measures_its_two_answers_with_expert_material_against_it(demo_run):
    """The sample's metformin and amoxicillin answers carry a reference answer and must-have / nice-to-have
    statements: the report's expert section (the app's Expert tab) has real figures for both, offline."""
    _, out = demo_run
    e = json.loads(out.with_suffix(".json").read_text())["expert"]
    by_id = {a["id"]: a for a in e["responses"]}
    assert set(by_id) == {"metformin-kidney", "amoxicillin-otitis"} and e["judge"] == "builtin"
    for a, must in ((by_id["metformin-kidney"], 3), (by_id["amoxicillin-otitis"], 2)):
        assert a["comprehensiveness_must_have"]["n"] == must and a["judge_errors"] == 0
        assert set(a["similarity"]) == {"late_interaction", "sentence_cosine"}
    # every must-have the two answers state is read as entailed
    assert by_id["metformin-kidney"]["comprehensiveness_must_have"]["k"] == 3
    assert by_id["amoxicillin-otitis"]["comprehensiveness_must_have"]["k"] == 2
    # the metformin answer says "stopped permanently" after contrast: restarting after 48 hours is not entailed
    restart = [s for s in by_id["metformin-kidney"]["statements"] if "restarted 48 hours" in s["statement"]]
    assert restart[0]["verdicts"]["builtin"]["label"] == "not_supported"
    assert e["overall"]["comprehensiveness_must_have"]["value"] == 1.0


def test_no_demo_verdict_has_a_rationale_that_contradicts_its_label(demo_run):
    from sourcecheckup.judges.builtin.explanation import rationale_contradicts_label
    from sourcecheckup.models import Label

    _, out = demo_run
    report = json.loads(out.with_suffix(".json").read_text())
    verdicts = [v for r in report["responses"] for st in r["statements"] for v in st["verdicts"]]
    assert len(verdicts) >= 50
    wrong = [f"{v['label']}: {v['rationale']}" for v in verdicts
             if rationale_contradicts_label(Label(v["label"]), v["rationale"])]
    assert not wrong, "\n".join(wrong)


def test_the_apps_demo_action_gives_the_cli_demos_figures(demo_run, qtbot, tmp_path):
    """Audit → Demo in the app audits the same sample offline as `sourcecheckup demo`, whatever the
    judges and source pack in Settings (the fixture's settings name a test judge), with the same figures."""
    from PySide6.QtCore import QSettings

    from ui.main_window import MainWindow
    from ui.settings import AppSettings

    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    settings.judges = ["keyword:0"]
    w = MainWindow(tmp_path / "app.db", settings)
    qtbot.addWidget(w)
    w.show()
    try:
        with qtbot.waitSignal(w.audit.audit_finished, timeout=600_000) as finished:
            w.demo_action.trigger()
        run_id, status = finished.args
        assert status == "completed", w.audit.progress_label.text()
        # the run as finished, not a view refreshed while it ran
        qtbot.waitUntil(lambda: w.results.view is not None and w.results.view.data.run.id == run_id
                        and w.results.view.data.run.status == "completed", timeout=60_000)
        cli = json.loads(demo_run[1].with_suffix(".json").read_text())
        app = w.results.view
        assert app.data.run.judges == ["builtin"] and w.store.get_run(run_id).name.startswith("Demo")
        for key in ("statement_support", "url_validity", "response_support", "unused_sources"):
            m = getattr(app.metrics, key)
            assert (m.k, m.n) == (cli["metrics"][key]["k"], cli["metrics"][key]["n"]), key
        assert cli["audit_trail"]["judge_versions"] in w.results.metrics_bar.counts.text()
    finally:
        if w.audit.worker is not None:
            w.audit.worker.cancel()
            w.audit.worker.wait(10_000)
        w.db.wait(10_000)
