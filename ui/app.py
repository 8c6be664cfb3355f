"""Start the desktop app: `sourcecheckup gui`, `python -m ui`, or the packaged executable."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from .settings import APP, ORG


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sourcecheckup gui", description="The SourceCheckup desktop app.")
    p.add_argument("--db", metavar="PATH", help="SQLite database (default: the one chosen in Settings)")
    p.add_argument("--run", metavar="ID", help="open this run")
    p.add_argument("--quit-after", type=float, metavar="SECONDS", help=argparse.SUPPRESS)  # smoke tests of builds
    return p.parse_args(list(argv) if argv is not None else None)


def application() -> QApplication:
    """The QApplication, created once, with the Fusion style (it follows the system's light/dark scheme)."""
    QCoreApplication.setOrganizationName(ORG)
    QCoreApplication.setApplicationName(APP)
    # the engine thread is busy Python; hand the GIL back to the GUI thread sooner than the 5 ms default
    sys.setswitchinterval(0.001)
    app = QApplication.instance()
    if app is None:
        app = QApplication([sys.argv[0] if sys.argv else "sourcecheckup"])
        app.setStyle("Fusion")
    return app  # type: ignore[return-value]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    app = application()
    from sourcecheckup.pipeline import load_plugins

    from .main_window import MainWindow

    load_plugins()
    window = MainWindow(args.db)
    window.show()
    if args.quit_after is not None:
        from PySide6.QtCore import QTimer

        print(f"SourceCheckup window shown ({window.width()}x{window.height()}, database {window.db_path})",
              flush=True)
        QTimer.singleShot(int(args.quit_after * 1000), window.close)
    if args.run:
        try:
            window.open_run(window.store.get_run(args.run).id)
        except Exception as exc:
            window._warn("Cannot open run", str(exc))
    elif (latest := window.store.latest_run_id()) is not None:
        window.open_run(latest)
    return int(app.exec())
