"""The app's Repairs tab (issue 44): "Find a source" and "Open-access copy" off the GUI thread, with Cancel."""
from __future__ import annotations

from sourcecheckup.store import Store
from tests.references.test_repair import S_ASPREE, S_EMPA, S_NONE, seed
from tests.support.app import WAIT_MS
from tests.support.fake_repair import ASPREE_BLEEDING, EMPA


def _open(qtbot, w, tmp_path, repair_servers):
    run_id = seed(Store(tmp_path / "audits.db"))
    w.settings.contact_email = "librarian@example.org"
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.show_run(run_id)
    tab = w.results.repairs_tab
    w.results.detail_tabs.setCurrentWidget(tab)
    qtbot.waitUntil(lambda: tab.statements.count() == 4, timeout=WAIT_MS)
    tab.endpoints = {"pubmed_endpoint": repair_servers.pubmed, "crossref_endpoint": repair_servers.crossref,
                     "europepmc": repair_servers.europepmc, "unpaywall": repair_servers.unpaywall}
    return run_id, tab


def _pick(tab, text: str) -> None:
    row = next(i for i in range(tab.statements.count()) if text in tab.statements.item(i).text())
    tab.statements.setCurrentRow(row)


def test_find_a_source_and_open_access_copy_in_the_app(qtbot, window, tmp_path, repair_servers):
    run_id, tab = _open(qtbot, window, tmp_path, repair_servers)
    _pick(tab, S_EMPA)
    with qtbot.waitSignal(tab.repair_finished, timeout=WAIT_MS) as done:
        assert tab.start(open_access=False)
        assert not tab.cancel_btn.isHidden() and not tab.find_btn.isEnabled()   # busy, off the GUI thread
    assert done.args == [run_id, "completed"], tab.status_label.text()
    assert f"https://doi.org/{EMPA['doi']}" in tab.detail.toPlainText() and "supported" in tab.detail.toPlainText()
    assert tab.accept_btn.isEnabled()                     # an offered source can be accepted here
    assert tab.accept()
    assert "accepted" in tab.detail.toPlainText() and not tab.accept_btn.isEnabled()
    decisions = {(r["statement_pk"], r["kind"]): r["decision"] for r in Store(tmp_path / "audits.db").repairs(run_id)}
    assert decisions[(tab.current_statement(), "find")] == "accepted"
    _pick(tab, S_NONE)
    with qtbot.waitSignal(tab.repair_finished, timeout=WAIT_MS):
        tab.start(open_access=False)
    assert "no supporting source found" in tab.detail.toPlainText()
    assert not tab.accept_btn.isEnabled()                 # nothing offered: nothing to accept
    _pick(tab, S_ASPREE)
    with qtbot.waitSignal(tab.repair_finished, timeout=WAIT_MS):
        tab.start(open_access=True)
    assert "open-access copy of" in tab.detail.toPlainText() and ASPREE_BLEEDING["doi"] in tab.detail.toPlainText()


def test_cancel_keeps_the_tab_usable(qtbot, window, tmp_path, repair_servers):
    run_id, tab = _open(qtbot, window, tmp_path, repair_servers)
    repair_servers.slow = {"eutils"}   # PubMed answers late: the cancel lands while it is asked
    _pick(tab, S_EMPA)
    with qtbot.waitSignal(tab.repair_finished, timeout=WAIT_MS) as done:
        tab.start(open_access=False)
        qtbot.waitUntil(lambda: bool(repair_servers.requests_to("eutils")), timeout=WAIT_MS)
        tab.cancel()
    assert done.args == [run_id, "cancelled"] and "kept" in tab.status_label.text()
    assert tab.find_btn.isEnabled() and tab.cancel_btn.isHidden()
    assert Store(tmp_path / "audits.db").repairs(run_id) == []   # nothing half-done is reported as finished
