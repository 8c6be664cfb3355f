"""Choosing a judge where the choice is made: the three ways (API model, a server on this computer,
a downloaded checker) with what each costs, needs and how accurate its authors found it, and
"Find local servers", which asks 127.0.0.1 off the GUI thread and offers each model as a judge spec.

``JudgeGuidePanel`` sits under the Judges field of Settings; ``FirstLaunchGuide`` shows the same
panel once, at the first launch, while the built-in screening judge is the only one set.
"""
from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.judges import validate_judge_spec
from sourcecheckup.judges.detect import LocalServer, find_local_servers
from sourcecheckup.judges.guide import BUILTIN_NOTE, JUDGE_PATHS
from sourcecheckup.llm.spec import split_spec

from .model_download import ModelDownloadDialog
from .settings import AppSettings
from .widgets import fit_scrolling_dialog, plain_label

SPEC_ROLE = Qt.ItemDataRole.UserRole
GUIDE_MIN_WIDTH = 640


class DetectThread(QThread):
    """Asks 127.0.0.1 for model servers; ``found(list[LocalServer])`` or ``failed(reason)`` once."""

    found = Signal(object)
    failed = Signal(str)

    def __init__(self, ports: Sequence[int] | None = None, timeout_s: float | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.ports = list(ports) if ports else None
        self.timeout_s = timeout_s

    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            servers = (find_local_servers(self.ports, self.timeout_s) if self.timeout_s
                       else find_local_servers(self.ports))
        except Exception as exc:   # a bad port in the environment, say: told, never raised into Qt
            self.failed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.found.emit(servers)


def path_text(index: int) -> str:
    path = JUDGE_PATHS[index]
    return (f"{index + 1}. {path.title} — e.g. {path.example}\n"
            f"Costs: {path.costs}. Needs: {path.needs}.\n"
            f"Accuracy: {path.accuracy} (source: {path.source}).")


def guide_labels(layout: QVBoxLayout) -> list[QLabel]:
    """The built-in judge's note and one framed label a path, added to ``layout``; the path labels."""
    layout.addWidget(plain_label(BUILTIN_NOTE))
    labels = []
    for i in range(len(JUDGE_PATHS)):
        label = plain_label(path_text(i))
        label.setFrameShape(QFrame.Shape.StyledPanel)
        label.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(label)
        labels.append(label)
    return labels


def with_first_judge(current: Sequence[str], spec: str) -> list[str]:
    """The judge list with ``spec`` first (the first judge decides by default); a list of only
    built-in screening judges is replaced, other judges are kept after it."""
    kept = [j for j in current if j.strip() and j.strip() != spec]
    if all(split_spec(j)[0] == "builtin" for j in kept):
        kept = []
    return [spec, *kept]


DETAILS_MIN_WIDTH = 640


class JudgeGuidePanel(QWidget):
    """The three ways to a strong judge, and the models of the servers running on this computer."""

    spec_chosen = Signal(str)
    detection_finished = Signal()

    def __init__(self, parent: QWidget | None = None, *, ports: Sequence[int] | None = None,
                 timeout_s: float | None = None, compact: bool = False) -> None:
        """``compact``: one line a path, the full text (costs, needs, accuracy, sources) behind
        "Which judge?" (Settings, where space is short); else the full text at once."""
        super().__init__(parent)
        self.ports = ports
        self.timeout_s = timeout_s
        self.thread_: DetectThread | None = None
        self.servers: list[LocalServer] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.summary = plain_label("\n".join(f"{i}. {p.summary}" for i, p in enumerate(JUDGE_PATHS, start=1)))
        self.summary.setVisible(compact)
        layout.addWidget(self.summary)
        self.details = QWidget()
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 0, 0, 0)
        self.path_labels = guide_labels(details)
        self.details.setVisible(not compact)
        layout.addWidget(self.details)
        self.details_dialog: QDialog | None = None
        row = QHBoxLayout()
        self.details_button = QPushButton("Which judge?…")
        self.details_button.setToolTip("The three ways to a strong judge: what each costs, needs and how "
                                       "accurate its authors found it")
        self.details_button.setVisible(compact)
        self.details_button.clicked.connect(self.show_details)
        row.addWidget(self.details_button)
        self.find_button = QPushButton("Find local servers")
        self.find_button.setToolTip("Ask this computer (127.0.0.1 only) whether Ollama, LM Studio, a llama.cpp "
                                    "server or vLLM is running, and which models they serve.")
        self.find_button.clicked.connect(self.find_servers)
        self.download_button = QPushButton("Download…")
        self.download_button.setToolTip("Download a recommended fact-checking model (or import one from a folder) "
                                        "to judge on this computer, offline")
        self.download_button.clicked.connect(self.open_downloads)
        self.download_dialog: ModelDownloadDialog | None = None
        self.use_button = QPushButton("Use this model as the judge")
        self.use_button.setEnabled(False)
        self.use_button.clicked.connect(self.use_selected)
        self.status = plain_label(selectable=False)
        row.addWidget(self.find_button)
        row.addWidget(self.download_button)
        row.addWidget(self.use_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.status.setVisible(False)
        layout.addWidget(self.status)
        self.models = QListWidget()
        self.models.setVisible(False)
        self.models.setMaximumHeight(110)
        self.models.currentItemChanged.connect(
            lambda item, _prev: self.use_button.setEnabled(item is not None and item.data(SPEC_ROLE) is not None))
        self.models.itemDoubleClicked.connect(lambda _item: self.use_selected())
        layout.addWidget(self.models)

    def show_details(self) -> QDialog:
        """The full text of the three ways, in a window of its own (a form row has no room for it)."""
        if self.details_dialog is None:
            dialog = QDialog(self)
            dialog.setWindowTitle("Which judge?")
            dialog.setMinimumWidth(DETAILS_MIN_WIDTH)
            layout = QVBoxLayout(dialog)
            # the three ways scroll on a short screen (1024x640) rather than being cut mid-sentence
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            body = QWidget()
            body_layout = QVBoxLayout(body)
            body_layout.setContentsMargins(0, 0, 0, 0)
            guide_labels(body_layout)
            scroll.setWidget(body)
            layout.addWidget(scroll, 1)
            buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
            buttons.rejected.connect(dialog.reject)
            layout.addWidget(buttons)
            dialog.scroll_area = scroll  # type: ignore[attr-defined]
            fit_scrolling_dialog(dialog, scroll, DETAILS_MIN_WIDTH)
            self.details_dialog = dialog
        self.details_dialog.open()
        return self.details_dialog

    def open_downloads(self) -> ModelDownloadDialog:
        """The catalogue of checkers to download; its "Use as judge" fills the Judges field."""
        if self.download_dialog is None:
            self.download_dialog = ModelDownloadDialog(self)
            self.download_dialog.spec_chosen.connect(self.spec_chosen)
        self.download_dialog.refresh()
        self.download_dialog.open()
        return self.download_dialog

    # -- detection, off the GUI thread ----------------------------------------------------------
    def find_servers(self) -> None:
        if self.thread_ is not None and self.thread_.isRunning():
            return
        self.find_button.setEnabled(False)
        self.status.setText("Asking 127.0.0.1…")
        self.status.setVisible(True)
        thread = DetectThread(self.ports, self.timeout_s, self)
        thread.found.connect(self._show_servers)
        thread.failed.connect(self._show_failure)
        thread.finished.connect(self._detection_done)
        self.thread_ = thread
        thread.start()

    def _detection_done(self) -> None:
        self.find_button.setEnabled(True)
        self.detection_finished.emit()

    def _show_failure(self, reason: str) -> None:
        self.servers = []
        self.models.clear()
        self.models.setVisible(False)
        self.status.setText(f"⚠ Could not look for servers: {reason}")

    def _show_servers(self, servers: list[LocalServer]) -> None:
        self.servers = servers
        self.models.clear()
        for server in servers:
            if not server.models:
                item = QListWidgetItem(f"{server.kind} on 127.0.0.1:{server.port}: no models yet "
                                       "(pull or load one, then look again)")
                item.setFlags(Qt.ItemFlag.NoItemFlags)
                self.models.addItem(item)
            for model in server.models:
                item = QListWidgetItem(f"{model} — {server.kind} on 127.0.0.1:{server.port}")
                item.setData(SPEC_ROLE, server.spec(model))
                item.setToolTip(server.spec(model))
                self.models.addItem(item)
        count = sum(len(s.models) for s in servers)
        if not servers:
            self.status.setText("No model server is running on this computer (Ollama: `ollama serve`).")
        else:
            self.status.setText(f"{len(servers)} server{'s' if len(servers) != 1 else ''}, "
                                f"{count} model{'s' if count != 1 else ''}: pick one. No 'allowed host' is needed "
                                "for a judge on this computer.")
        self.models.setVisible(bool(servers))
        first = next((i for i in range(self.models.count()) if self.models.item(i).data(SPEC_ROLE)), None)
        if first is not None:
            self.models.setCurrentRow(first)

    def use_selected(self) -> None:
        item = self.models.currentItem()
        spec = item.data(SPEC_ROLE) if item is not None else None
        if spec:
            self.spec_chosen.emit(str(spec))

    def shutdown(self, wait_ms: int = 5000) -> None:
        """Wait for a detection in flight (it ends within its timeout) before the panel goes."""
        if self.thread_ is not None:
            self.thread_.wait(wait_ms)
        if self.download_dialog is not None:
            self.download_dialog.shutdown(wait_ms)


def should_offer_guide(settings: AppSettings) -> bool:
    """At the first launch, while no judge but the built-in screen is set."""
    only_builtin = all(split_spec(j)[0] == "builtin" for j in settings.judges)
    return only_builtin and not settings.judge_guide_seen


class FirstLaunchGuide(QDialog):
    """Shown once: the three ways to a strong judge, with local servers found on request."""

    def __init__(self, settings: AppSettings, parent: QWidget | None = None, *,
                 ports: Sequence[int] | None = None, timeout_s: float | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("Choose a judge")
        self.setMinimumWidth(GUIDE_MIN_WIDTH)
        outer = QVBoxLayout(self)
        # the guide's text scrolls on a short screen; the dialog is sized to it (fit_scrolling_dialog), so
        # a wrapped paragraph is neither cut nor padded with blank bands
        self.scroll_area = QScrollArea()   # not .scroll: that is QWidget.scroll(dx, dy)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(plain_label("SourceCheckup asks a judge whether each cited source supports each "
                                     "statement. The judge set now is the built-in screen."))
        self.panel = JudgeGuidePanel(self, ports=ports, timeout_s=timeout_s)
        self.panel.spec_chosen.connect(self.use_judge)
        layout.addWidget(self.panel)
        layout.addStretch(1)
        self.scroll_area.setWidget(body)
        outer.addWidget(self.scroll_area, 1)
        layout = outer
        self.problem = plain_label(selectable=False)
        self.problem.setVisible(False)
        layout.addWidget(self.problem)
        buttons = QDialogButtonBox()
        self.settings_button = buttons.addButton("Open Settings…", QDialogButtonBox.ButtonRole.AcceptRole)
        self.keep_button = buttons.addButton("Keep the built-in judge for now", QDialogButtonBox.ButtonRole.RejectRole)
        self.settings_button.clicked.connect(self.open_settings)
        self.keep_button.clicked.connect(self.reject)
        layout.addWidget(buttons)
        self._fitted = False
        # once: whatever the user does next, the guide is not forced on them again
        settings.judge_guide_seen = True
        settings.sync()

    def showEvent(self, event: QShowEvent) -> None:
        if not self._fitted:
            self._fitted = True
            fit_scrolling_dialog(self, self.scroll_area, GUIDE_MIN_WIDTH)
        super().showEvent(event)

    def use_judge(self, spec: str) -> None:
        problem = validate_judge_spec(spec)
        if problem:
            self.problem.setText("⚠ " + problem)
            self.problem.setVisible(True)
            return
        self.settings.judges = with_first_judge(self.settings.judges, spec)
        self.settings.sync()
        self.accept()

    def open_settings(self) -> None:
        parent = self.parent()
        self.accept()
        if parent is not None and hasattr(parent, "open_settings"):
            parent.open_settings()

    def done(self, result: int) -> None:
        self.panel.shutdown()
        super().done(result)


__all__ = ["DetectThread", "FirstLaunchGuide", "JudgeGuidePanel", "path_text", "should_offer_guide",
           "with_first_judge"]
