"""Small dialogs: CSV column mapping, settings (with API keys in the OS keyring), About."""
from __future__ import annotations

import platform
from pathlib import Path

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup import __version__
from sourcecheckup.fetching.browser import browser_status
from sourcecheckup.ingest import CsvMapping
from sourcecheckup.judges import validate_judge_spec
from sourcecheckup.llm import secrets as keys
from sourcecheckup.views.text import table_columns

from .judge_guide import JudgeGuidePanel, with_first_judge
from .reference_settings import ReferenceSettingsBox
from .settings import BROWSER_MODES, AppSettings
from .widgets import fit_scrolling_dialog, plain_label

NOT_MAPPED = "(none)"


class CsvMappingDialog(QDialog):
    """Which column holds the answer, the citations, the question, the model, the id."""

    FIELDS = (("text_col", "Answer text", True), ("citations_col", "Citations", False),
              ("question_col", "Question", False), ("model_col", "Model", False), ("id_col", "Record id", False))

    def __init__(self, path: str | Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Map the CSV columns")
        # the engine's own header reading: the separator (, ; tab |) it sniffs is the one the audit uses
        self.columns, self.delimiter = table_columns(path)
        layout = QVBoxLayout(self)
        layout.addWidget(plain_label(f"{Path(path).name}: choose which column holds what."))
        form = QFormLayout()
        layout.addLayout(form)
        defaults = CsvMapping()
        self.combos: dict[str, QComboBox] = {}
        for name, title, required in self.FIELDS:
            combo = QComboBox()
            if not required:
                combo.addItem(NOT_MAPPED)
            combo.addItems(self.columns)
            guess = self._guess(getattr(defaults, name), name)
            if guess is not None:
                combo.setCurrentText(guess)
            form.addRow(title, combo)
            self.combos[name] = combo
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _guess(self, default: str, name: str) -> str | None:
        aliases = {"text_col": ("response", "answer", "text", "answer_text", "response_text"),
                   "citations_col": ("citations", "urls", "sources", "links", "references"),
                   "question_col": ("question", "prompt"), "model_col": ("model", "llm"),
                   "id_col": ("id", "answer_id", "record_id")}
        lowered = {c.lower(): c for c in self.columns}
        for a in (default, *aliases.get(name, ())):
            if a.lower() in lowered:
                return lowered[a.lower()]
        return None

    def mapping(self) -> CsvMapping:
        values = {}
        for name, _, _ in self.FIELDS:
            text = self.combos[name].currentText()
            # an unmapped column gets a name no header has, so the engine ignores it
            values[name] = text if text != NOT_MAPPED else f"\0unmapped-{name}"
        return CsvMapping(**values, delimiter=self.delimiter)


class SettingsDialog(QDialog):
    def __init__(self, settings: AppSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("Settings")
        self.setMinimumWidth(640)
        outer = QVBoxLayout(self)
        # the form scrolls when the screen is shorter than it (large fonts, a small laptop screen): its
        # wrapped labels keep the height they need instead of being cut mid-line
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        form = QFormLayout()
        layout.addLayout(form)
        self.judges = QLineEdit(", ".join(settings.judges))
        self.judges.setToolTip("Comma-separated judge specs: builtin, openai:gpt-4o, anthropic:claude-sonnet-4-5, "
                               "openai-compatible:http://localhost:11434/v1#llama3.1, local:/path")
        form.addRow("Judges", self.judges)
        self.judge_problem = plain_label(selectable=False)
        self.judge_problem.setVisible(False)
        form.addRow("", self.judge_problem)
        # the three ways to a strong judge, and "Find local servers", which fills the field above
        self.judge_guide = JudgeGuidePanel(self, compact=True)
        self.judge_guide.spec_chosen.connect(self._use_found_judge)
        form.addRow(self.judge_guide)
        self.consensus = QComboBox()
        self.consensus.addItems(["first", "any", "all", "majority"])
        self.consensus.setCurrentText(settings.consensus)
        form.addRow("Several judges combine by", self.consensus)
        self.parser = QLineEdit(settings.parser)
        form.addRow("Statement parser", self.parser)
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 128)
        self.concurrency.setValue(settings.concurrency)
        form.addRow("Judge calls at once", self.concurrency)
        self.browser = QComboBox()
        self.browser.addItems(list(BROWSER_MODES))
        self.browser.setCurrentText(settings.browser)
        available, sentence = browser_status()
        self.browser_available = available
        self.browser_status = plain_label(("✓ " if available else "⚠ No browser available: ") + sentence + ".")
        self.browser_status.setToolTip("Pages that build their text with JavaScript need the headless browser; "
                                       "without one they are read as plain HTML, which may give little text.")
        # combo and sentence in one field: a wrapped label as a form row of its own gets a too-tall row
        browser_box = QWidget()
        bl = QVBoxLayout(browser_box)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.browser)
        bl.addWidget(self.browser_status)
        form.addRow("Headless browser", browser_box)
        self.archive = QCheckBox("Look dead links up in a web archive")
        self.archive.setChecked(settings.archive_lookup)
        form.addRow("", self.archive)
        self.hosts = QLineEdit(", ".join(settings.allow_hosts))
        self.hosts.setPlaceholderText("e.g. 127.0.0.1, intranet.example.org")
        form.addRow("Allowed private hosts", self.hosts)
        self.sources_dir = QLineEdit(settings.sources_dir)
        self.sources_dir.setPlaceholderText("a folder with sources.json (local copies of cited pages)")
        form.addRow("Local source pack", self.sources_dir)
        db_row = QHBoxLayout()
        self.db = QLineEdit(str(settings.default_db))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse_db)
        db_row.addWidget(self.db)
        db_row.addWidget(browse)
        form.addRow("Default database", db_row)
        self.reviewer = QLineEdit(settings.reviewer)
        form.addRow("Reviewer name", self.reviewer)
        self.reference_box = ReferenceSettingsBox(settings)
        layout.addWidget(self.reference_box)

        layout.addWidget(plain_label("API keys are kept in the operating system's keyring, never in the settings "
                                     "file or the database."))
        keys_form = QFormLayout()
        layout.addLayout(keys_form)
        self.key_edits: dict[str, QLineEdit] = {}
        self.key_status: dict[str, QLabel] = {}
        for provider in keys.ENV_VARS:
            edit = QLineEdit()
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.setPlaceholderText("paste a key to store it")
            status = plain_label(selectable=False)
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            row.addWidget(status)
            keys_form.addRow({"openai": "OpenAI", "anthropic": "Anthropic",
                              "openai-compatible": "Local server"}.get(provider, provider), row)
            self.key_edits[provider] = edit
            self.key_status[provider] = status
        self._refresh_key_status()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        outer.addWidget(buttons)
        # show() caps a dialog at two thirds of the screen: take the width of the form's widest row (its
        # button rows with a large font) and the height the form needs at that width, within the screen;
        # beyond it the form scrolls, never sideways
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area = scroll   # not .scroll: that is QWidget.scroll(dx, dy)
        fit_scrolling_dialog(self, scroll, self.minimumWidth())

    def _refresh_key_status(self) -> None:
        for provider, label in self.key_status.items():
            where = keys.key_source(provider)
            var = keys.ENV_VARS[provider]
            label.setText({"keyring": "stored in the keyring", "environment": f"from ${var}"}.get(
                where or "", f"none (or set ${var})"))

    def _use_found_judge(self, spec: str) -> None:
        current = [j.strip() for j in self.judges.text().split(",") if j.strip()]
        self.judges.setText(", ".join(with_first_judge(current, spec)))

    def done(self, result: int) -> None:
        self.judge_guide.shutdown()
        super().done(result)

    def _browse_db(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Default database", self.db.text(), "SQLite (*.db)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self.db.setText(path)

    def save(self) -> None:
        s = self.settings
        self.store_keys()   # first: a judge that needs a key just pasted here is then valid
        judges = [j.strip() for j in self.judges.text().split(",") if j.strip()] or ["builtin"]
        problems = [p for p in (validate_judge_spec(j) for j in judges) if p]
        if problems:
            self.judge_problem.setText("⚠ " + "\n⚠ ".join(problems) + "\nFix the Judges field (Settings → Judges) "
                                       "before saving.")
            self.judge_problem.setVisible(True)
            self.judges.setFocus()
            return
        self.judge_problem.setVisible(False)
        if self.reference_box.problems():
            return
        s.judges = judges
        s.consensus = self.consensus.currentText()
        s.parser = self.parser.text()
        s.concurrency = self.concurrency.value()
        s.browser = self.browser.currentText()
        s.archive_lookup = self.archive.isChecked()
        s.allow_hosts = self.hosts.text().replace(";", ",").split(",")
        s.sources_dir = self.sources_dir.text().strip()
        s.default_db = self.db.text().strip()
        s.reviewer = self.reviewer.text()
        self.reference_box.save(s)
        s.sync()
        self.accept()

    def store_keys(self) -> None:
        """Keys typed into the dialog go to the keyring (never into the settings file)."""
        problems = []
        for provider, edit in self.key_edits.items():
            key = edit.text().strip()
            if not key:
                continue
            try:
                keys.set_api_key(provider, key)
            except RuntimeError as exc:
                problems.append(str(exc))
            else:
                # a "null" keyring backend accepts a key and keeps nothing: check it is really there
                if keys.key_source(provider) != "keyring":
                    problems.append(f"the keyring did not keep the {provider} key; set "
                                    f"{keys.ENV_VARS[provider]} in the environment instead")
            edit.clear()
        self._refresh_key_status()
        if problems:
            QMessageBox.warning(self, "No keyring", "No keyring is available on this computer, so the keys were "
                                "not stored.\n\n" + "\n".join(problems))


JUDGE_LIMITS = (
    "The built-in judge is a screening judge with a small learned reader: on a whole page a small model trained "
    "here reads the statement against the page's closest sentences; on a short source it checks that a "
    "statement's numbers, units, negations and key terms appear in the best-matching passages and scores the "
    "match with a small trained model. Figures, doses and instructions are checked exactly everywhere. It can "
    "miss paraphrased support and can accept a passage that uses the same words with a different meaning. "
    "Treat its verdicts as a first pass: review unsupported and borderline pairs, "
    "or run an LLM judge (Settings → Judges) for final figures."
)


def about_text() -> str:
    return (f"SourceCheckup {__version__}\n"
            f"Python {platform.python_version()} · PySide6 {PySide6.__version__} · Qt {qVersion()} · "
            f"{platform.system()} {platform.machine()}\n\n"
            "Audits the citations in answers written by large language models: which statements the cited "
            "sources support, with the quote that supports them.\n\n" + JUDGE_LIMITS)


def show_about(parent: QWidget | None) -> None:
    box = QMessageBox(parent)
    box.setWindowTitle("About SourceCheckup")
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(about_text())
    box.setIcon(QMessageBox.Icon.Information)
    box.exec()


__all__ = ["CsvMappingDialog", "SettingsDialog", "about_text", "show_about", "JUDGE_LIMITS"]
