"""The Answer tab, offscreen: an answer not read yet looks pending in its row, its status and its tab, a
source refused as a private address is said so with the Settings field that allows it, and the legend
never parts a mark from its meaning.
"""
from __future__ import annotations

import pytest

from sourcecheckup.models import FetchStatus, Response, Source, utcnow
from sourcecheckup.store import Store
from tests.support.app import open_and_wait
from tests.support.synth_run import synthesize_run

pytest.importorskip("pytestqt")


def cancelled_batch_with_an_unread_answer(db) -> str:
    """A batch cancelled after its first answer: the second answer was never read nor its source fetched."""
    with Store(db) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=1, status="cancelled")
        st.add_responses(run_id, [Response(id="unread", text="Sodium should be under 1500 mg a day [1].",
                                           citations=("https://example.org/never-fetched",), origin="batch:2")])
    return run_id


def test_an_answer_not_read_yet_looks_pending_in_its_row_status_and_answer_tab(qtbot, window):
    w = window
    run_id = cancelled_batch_with_an_unread_answer(w.db_path)
    open_and_wait(qtbot, w, run_id)
    model = w.results.responses_model
    row = next(i for i, r in enumerate(model.rows) if r.rid == "unread")
    shown = [model.data(model.index(row, c)) for c in range(model.columnCount())]
    assert shown[2] == "…" and shown[4] == "… not read yet" and shown[5] == "… not fetched yet", shown
    assert "no claims" not in " ".join(shown) and "0/1 readable" not in " ".join(shown)
    read = next(i for i, r in enumerate(model.rows) if r.rid == "r1")
    assert model.data(model.index(read, 2)) == "2" and model.data(model.index(read, 5)) == "1/1 readable"
    # the status facet offers it as what it is
    assert "… not read yet" in [w.results.facets.status_box.itemText(i)
                                for i in range(w.results.facets.status_box.count())]
    w.results.show_response(model.rows[row].response_pk)
    notice = w.results.answer_tab.notice
    assert notice.isVisible() and notice.text().startswith("… Not read yet")
    w.results.show_response(model.rows[read].response_pk)
    assert not notice.isVisible()


def test_an_answer_citing_a_refused_private_address_says_so_on_the_answer_tab(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=1, base_url="http://10.1.2.3/x")
        with st.db.conn:   # the cited page was refused before any byte was read, so nothing was judged
            st.db.conn.execute("DELETE FROM verdicts WHERE run_id = ?", [run_id])
        sid = st.add_source(Source(url="http://10.1.2.3/x/0", status=FetchStatus.UNSAFE_URL,
                                   reason="10.1.2.3 is a private address; add --allow-host 10.1.2.3 to fetch it "
                                          "anyway", fetched_at=utcnow()))
        st.link_run_source(run_id, "http://10.1.2.3/x/0", sid)
    open_and_wait(qtbot, w, run_id)
    w.results.show_response(w.results.responses_model.rows[0].response_pk)
    notice = w.results.answer_tab.notice
    assert notice.isVisible()
    text = notice.text()
    assert "Source [1] was refused" in text and "10.1.2.3 is a private address" in text
    assert "Settings → Allowed private hosts" in text and "--allow-host" not in text
    assert "invalid URL in URL validity" in text
    assert "2 claims with no other readable source count as not supported (no readable source)" in text
    # and the figures are what the notice says
    assert "0.0%" in w.results.metrics_bar.labels["url_validity"].text()
    assert "0.0%" in w.results.metrics_bar.labels["statement_support"].text()


def test_the_answer_legend_never_parts_a_mark_from_its_meaning(qtbot, window):
    """at 1024x640 the legend's "⊠" wrapped onto a line of its own, away from its label."""
    from PySide6.QtGui import QTextLayout

    from sourcecheckup.views.references import RETRACTED_MARK
    from ui.theme import STATUS_MARK

    label = window.results.answer_tab.legend
    text = label.text()
    marks = {m for m, _ in STATUS_MARK.values()} | {RETRACTED_MARK}
    for width in range(200, 1000, 7):
        layout = QTextLayout(text, label.font())
        layout.beginLayout()
        lines = []
        while (line := layout.createLine()).isValid():
            line.setLineWidth(width)
            lines.append(text[line.textStart():line.textStart() + line.textLength()])
        layout.endLayout()
        assert len(lines) >= 1
        for shown in lines:
            words = shown.replace("\u00a0", " ").replace("\u2060", " ").split()
            assert words and words[-1] not in marks, (width, lines)
