"""Choosing a judge in the app: Settings → Judges explains the three ways and finds local servers
(fake Ollama and vLLM on 127.0.0.1) off the GUI thread; the first launch shows the guide once; the guide
and Settings are sized to their text, with a large font too."""
from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea

import ui.judge_guide as judge_guide
from tests.support.app import WAIT_MS
from tests.support.fake_model_servers import closed_port, ollama, vllm
from ui.dialogs import SettingsDialog
from ui.judge_guide import FirstLaunchGuide


@pytest.fixture
def detect_threads(monkeypatch):
    """Which thread each detection ran on (the real detection, only watched)."""
    seen: list[threading.Thread] = []
    real = judge_guide.find_local_servers

    def watched(*args, **kwargs):
        seen.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(judge_guide, "find_local_servers", watched)
    return seen


def find(qtbot, panel) -> None:
    with qtbot.waitSignal(panel.detection_finished, timeout=WAIT_MS):
        panel.find_button.click()


def test_settings_find_local_servers_lists_models_and_fills_the_judges_field(qtbot, settings, detect_threads):
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.show()
    with ollama() as oll, vllm() as vl:
        dialog.judge_guide.ports = [oll.port, vl.port, closed_port()]
        find(qtbot, dialog.judge_guide)
    assert detect_threads and threading.main_thread() not in detect_threads
    panel = dialog.judge_guide
    rows = [panel.models.item(i).text() for i in range(panel.models.count())]
    assert rows == [f"llama3.1:8b — Ollama on 127.0.0.1:{oll.port}",
                    f"bespoke-minicheck:latest — Ollama on 127.0.0.1:{oll.port}",
                    f"bespokelabs/Bespoke-MiniCheck-7B — vLLM on 127.0.0.1:{vl.port}"]
    assert "2 servers, 3 models" in panel.status.text()
    panel.models.setCurrentRow(1)
    panel.use_button.click()
    spec = f"checker:http://127.0.0.1:{oll.port}/v1#bespoke-minicheck:latest"
    assert dialog.judges.text() == f"{spec}, keyword:0"   # the found model decides first; the others stay
    dialog.save()
    assert settings.judges == [spec, "keyword:0"]   # a judge on 127.0.0.1 is valid with no allowed host


def test_settings_with_no_server_running_says_how_to_start_one(qtbot, settings):
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.judge_guide.ports = [closed_port()]
    dialog.judge_guide.timeout_s = 0.3
    find(qtbot, dialog.judge_guide)
    assert "No model server is running on this computer" in dialog.judge_guide.status.text()
    assert dialog.judge_guide.models.count() == 0 and not dialog.judge_guide.use_button.isEnabled()


def test_settings_judges_explains_the_three_ways_with_costs_needs_and_sourced_accuracy(qtbot, settings):
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.show()
    summary = dialog.judge_guide.summary.text()
    assert dialog.judge_guide.summary.isVisible()
    assert "GPT-4o agreed with physicians on 88.7%" in summary and "Bespoke-MiniCheck-7B 77.4%" in summary
    details = dialog.judge_guide.show_details()
    qtbot.waitUntil(details.isVisible, timeout=WAIT_MS)
    texts = [label.text() for label in dialog.judge_guide.details_dialog.findChildren(judge_guide.QLabel)]
    full = "\n".join(texts)
    for part in ("1. An API model", "2. A model server on this computer", "3. A downloaded checker"):
        assert part in full
    assert full.count("Costs:") == 3 and full.count("Needs:") == 3 and full.count("Accuracy:") == 3
    assert "Nature Communications 2025" in full and "LLM-AggreFact leaderboard" in full and "EMNLP 2024" in full


def test_first_launch_shows_the_guide_once_while_only_the_builtin_judge_is_set(qtbot, window, settings):
    assert window.offer_judge_guide() is None   # a judge of the user's own is set (keyword:0)
    settings.judges = ["builtin"]
    guide = window.offer_judge_guide()
    assert guide is not None
    qtbot.waitUntil(guide.isVisible, timeout=WAIT_MS)
    assert "3. A downloaded checker" in "\n".join(label.text() for label in guide.panel.path_labels)
    assert settings.judge_guide_seen
    guide.keep_button.click()
    assert settings.judges == ["builtin"]
    assert window.offer_judge_guide() is None   # once


def test_first_launch_guide_sets_a_found_model_as_the_judge(qtbot, settings):
    settings.judges = ["builtin"]
    with vllm() as vl:
        guide = FirstLaunchGuide(settings, ports=[vl.port])
        qtbot.addWidget(guide)
        guide.show()
        find(qtbot, guide.panel)
    assert guide.panel.use_button.isEnabled()
    with qtbot.waitSignal(guide.finished, timeout=WAIT_MS):
        guide.panel.use_button.click()
    assert settings.judges == [f"checker:http://127.0.0.1:{vl.port}/v1#bespokelabs/Bespoke-MiniCheck-7B"]


def label_is_whole(label: QLabel) -> bool:
    """A wrapped label is as tall as its text needs at its width: no line cut off."""
    return label.height() >= label.heightForWidth(label.width()) - 1


def test_first_launch_guide_fits_its_text_without_blank_bands(qtbot, settings):
    guide = FirstLaunchGuide(settings)
    qtbot.addWidget(guide)
    guide.show()
    qtbot.waitExposed(guide)
    qtbot.wait(50)
    labels = [lab for lab in guide.findChildren(QLabel) if lab.isVisible() and lab.text()]
    assert len(labels) >= 5
    line = guide.fontMetrics().lineSpacing()
    for label in labels:
        needed = label.heightForWidth(label.width())
        assert label_is_whole(label), label.text()[:40]
        assert label.height() <= needed + line, (label.text()[:40], label.height(), needed)   # no blank band
    assert not any(a.horizontalScrollBar().isVisible() for a in guide.findChildren(QScrollArea))


def test_settings_show_the_whole_compact_guide_with_a_large_font(qtbot, settings):
    from ui.dialogs import SettingsDialog

    app = QApplication.instance()
    font = app.font()
    big = app.font()
    big.setPointSize(max(font.pointSize(), 9) + 4)
    app.setFont(big)
    try:
        dialog = SettingsDialog(settings)
        qtbot.addWidget(dialog)
        dialog.show()
        qtbot.waitExposed(dialog)
        qtbot.wait(50)
        summary = dialog.judge_guide.summary
        assert summary.text().count("\n") == 2   # the three ways
        assert label_is_whole(summary)
        scroll = dialog.findChild(QScrollArea)
        body, viewport = scroll.widget(), scroll.viewport()
        assert body.width() <= viewport.width()    # nothing cut at the right edge
        assert summary.geometry().right() <= viewport.width()
        buttons = (dialog.judge_guide.details_button, dialog.judge_guide.find_button,
                   dialog.judge_guide.download_button, dialog.judge_guide.use_button)
        assert all(b.geometry().right() <= body.width() for b in buttons)
        dialog.reject()
    finally:
        app.setFont(font)
