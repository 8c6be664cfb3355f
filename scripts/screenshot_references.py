"""A screenshot of reference checks in the app: one answer citing a real, a mismatched, a fabricated and a
retracted reference, audited against the local Crossref / PubMed / OpenAlex servers the tests use
(tests/support/fake_scholarly.py) and the fixture site as DOI resolver; nothing leaves this machine.

    xvfb-run -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb .venv/bin/python scripts/screenshot_references.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")

from PySide6.QtCore import QSettings  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from screenshots import save, settle, wait_for  # noqa: E402
from tests.support.fake_scholarly import FOUR_REFERENCES_ANSWER as ANSWER  # noqa: E402
from tests.support.fake_scholarly import RETRACTION_CSV, start_scholarly  # noqa: E402
from tests.support.site import start_site  # noqa: E402
from ui.app import application  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.settings import AppSettings  # noqa: E402


def main() -> int:
    out = ROOT / "docs" / "screenshots"
    tmp = Path(tempfile.mkdtemp(prefix="sc-refs-"))
    fake, stop = start_scholarly()
    site, stop_site = start_site()
    try:
        (tmp / "answer.md").write_text(ANSWER)
        env = {**os.environ, "SOURCECHECKUP_REFERENCES": "on", "SOURCECHECKUP_ARCHIVE": "off", "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", str(tmp / "answer.md"), "--db", str(tmp / "refs.db"),
                        "--doi-resolver", f"{site}/doi/", "--allow-host", "127.0.0.1", "--browser", "never",
                        "--no-archive", "-q", "--crossref-endpoint", fake.crossref, "--pubmed-endpoint", fake.pubmed,
                        "--openalex-endpoint", fake.openalex, "--retraction-data", str(RETRACTION_CSV)],
                       env=env, check=False, cwd=ROOT)
    finally:
        stop()
        stop_site()
    application()
    w = MainWindow(tmp / "refs.db", AppSettings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)))
    w.resize(1280, 800)
    w.show()
    from sourcecheckup.store import Store
    run_id = Store(tmp / "refs.db").latest_run_id()
    w.results.open_run(run_id)
    wait_for(w.results.run_shown)
    view = w.results.view
    w.results.select_response(view.assessed[0].response_pk)
    w.results.detail_tabs.setCurrentIndex(1)
    tab = w.results.sources_tab
    tab.sources_table.selectRow(1)          # the mismatch: cited and found side by side
    tab.show_reference(1)
    settle(500)
    save(w, out, "13-references-sources")
    w.results.detail_tabs.setCurrentIndex(2)
    settle(500)
    save(w, out, "14-references-matrix")
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
