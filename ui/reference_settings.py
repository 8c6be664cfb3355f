"""Settings → Reference checks: on/off, the Crossref / PubMed / OpenAlex endpoints, the contact e-mail, the
lookups' timeout, rate and title-match threshold, and the Retraction Watch file (with its date and rows).
Saved through AppSettings like every other setting."""
from __future__ import annotations

from urllib.parse import urlsplit

from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from sourcecheckup.config import LOOKUP_LIMITS
from sourcecheckup.views.references import retraction_file_summary

from .settings import AppSettings
from .widgets import plain_label


def endpoint_problem(name: str, value: str) -> str:
    """Why an endpoint cannot be used ("" when it can): it is the API's base URL, http(s) with a host."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"the {name} endpoint must be an http(s) base URL, not '{value.strip()}'"
    return ""


class ReferenceSettingsBox(QGroupBox):
    """The reference-check fields of the Settings dialog."""

    ENDPOINTS = (("crossref_endpoint", "Crossref"), ("pubmed_endpoint", "PubMed E-utilities"),
                 ("openalex_endpoint", "OpenAlex"))

    def __init__(self, settings: AppSettings, parent: QWidget | None = None) -> None:
        super().__init__("Check cited DOIs, PMIDs and written references (exist? the paper named? retracted?)",
                         parent)
        # the box's own check is the on/off switch: off, its fields are greyed out
        self.setCheckable(True)
        self.setChecked(settings.references)
        self.enabled = self
        grid = QGridLayout(self)
        self.endpoints: dict[str, QLineEdit] = {}
        for i, (key, title) in enumerate(self.ENDPOINTS):
            edit = QLineEdit(getattr(settings, key))
            edit.setToolTip(f"The {title} API's base URL")
            grid.addWidget(QLabel(title), i // 2, 2 * (i % 2))
            grid.addWidget(edit, i // 2, 2 * (i % 2) + 1)
            self.endpoints[key] = edit
        self.contact_email = QLineEdit(settings.contact_email)
        self.contact_email.setPlaceholderText("you@example.org (for Crossref and NCBI)")
        self.contact_email.setToolTip("Sent to Crossref (mailto) and NCBI (email) as the polite identity")
        grid.addWidget(QLabel("Contact e-mail"), 1, 2)
        grid.addWidget(self.contact_email, 1, 3)
        row = QHBoxLayout()
        self.retraction_data = QLineEdit(settings.retraction_data)
        self.retraction_data.setPlaceholderText("the Retraction Watch CSV (sourcecheckup references update)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.retraction_data, 1)
        row.addWidget(browse)
        grid.addWidget(QLabel("Retraction Watch"), 2, 0)
        grid.addLayout(row, 2, 1, 1, 3)
        self.retraction_status = plain_label(wrap=False, selectable=False)   # one line: rows and date
        grid.addWidget(self.retraction_status, 3, 1, 1, 3)
        self.retraction_data.textChanged.connect(lambda _: self.refresh_retraction_status())
        # how the services are asked: each within the limits the CLI's flags also keep
        limits = QHBoxLayout()
        self.lookup_numbers: dict[str, QDoubleSpinBox] = {}
        for key, title, suffix, step, decimals in (
                ("lookup_timeout_s", "Timeout", " s", 1.0, 0), ("lookup_requests_per_second", "Rate", " a second", 0.5, 1),
                ("match_threshold", "Title match", "", 0.05, 2)):
            low, high, what = LOOKUP_LIMITS[key]
            spin = QDoubleSpinBox()
            spin.setRange(low, high)
            spin.setDecimals(decimals)
            spin.setSingleStep(step)
            spin.setSuffix(suffix)
            spin.setValue(getattr(settings, key))
            spin.setToolTip(what[0].upper() + what[1:] + (" (PubMed is held to 3)" if key.endswith("second") else ""))
            limits.addWidget(QLabel(title))
            limits.addWidget(spin)
            self.lookup_numbers[key] = spin
        limits.addStretch(1)
        grid.addWidget(QLabel("Lookups"), 4, 0)
        grid.addLayout(limits, 4, 1, 1, 3)
        self.problem = plain_label(wrap=False, selectable=False)
        self.problem.setVisible(False)
        grid.addWidget(self.problem, 5, 0, 1, 4)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        self.refresh_retraction_status()

    def refresh_retraction_status(self) -> None:
        """The chosen file's rows and date, or why it cannot be used."""
        self.retraction_status.setText(retraction_file_summary(self.retraction_data.text()).text)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Retraction Watch file", self.retraction_data.text(),
                                              "CSV (*.csv);;All files (*)")
        if path:
            self.retraction_data.setText(path)

    def problems(self) -> list[str]:
        """What stops these values from being saved (shown under the fields)."""
        found = [p for p in (endpoint_problem(title, self.endpoints[key].text()) for key, title in self.ENDPOINTS)
                 if p]
        email = self.contact_email.text().strip()
        if email and ("@" not in email or " " in email):
            found.append(f"the contact e-mail '{email}' is not an e-mail address")
        path = self.retraction_data.text().strip()
        if path:
            summary = retraction_file_summary(path)
            if summary.problem:
                found.append(f"Retraction Watch file: {summary.problem}")
        self.problem.setText("⚠ " + "\n⚠ ".join(found) if found else "")
        self.problem.setVisible(bool(found))
        return found

    def save(self, settings: AppSettings) -> None:
        settings.references = self.isChecked()
        for key, edit in self.endpoints.items():
            setattr(settings, key, edit.text())
        settings.contact_email = self.contact_email.text()
        for key, spin in self.lookup_numbers.items():
            setattr(settings, key, spin.value())
        settings.retraction_data = self.retraction_data.text()
