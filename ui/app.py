"""Start the desktop app: `sourcecheckup gui`, `python -m ui`, or the packaged executable."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from .settings import APP, ORG


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sourcecheckup gui", description="The SourceCheckup desktop app.",
                                epilog="The standalone app is also the command line: `sourcecheckup-cli --help` "
                                       "beside it (or `SourceCheckup --cli --help`), e.g. `sourcecheckup-cli demo`.")
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
        follow_color_scheme(app)
    return app  # type: ignore[return-value]


def dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor("#1e1f22"), QColor("#2b2d30"), QColor("#e6e6e6")
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled):
        p.setColor(group, QPalette.ColorRole.Window, window)
        p.setColor(group, QPalette.ColorRole.WindowText, text)
        p.setColor(group, QPalette.ColorRole.Base, base)
        p.setColor(group, QPalette.ColorRole.AlternateBase, QColor("#26282b"))
        p.setColor(group, QPalette.ColorRole.Text, text)
        p.setColor(group, QPalette.ColorRole.Button, window)
        p.setColor(group, QPalette.ColorRole.ButtonText, text)
        p.setColor(group, QPalette.ColorRole.ToolTipBase, window)
        p.setColor(group, QPalette.ColorRole.ToolTipText, text)
        p.setColor(group, QPalette.ColorRole.Highlight, QColor("#2f65ca"))
        p.setColor(group, QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
        p.setColor(group, QPalette.ColorRole.PlaceholderText, QColor("#8c8c8c"))
        p.setColor(group, QPalette.ColorRole.Link, QColor("#7fb0ff"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#777777"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#777777"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText, QColor("#777777"))
    return p


def follow_color_scheme(app: QApplication) -> None:
    """Light or dark as the system says. Where the platform gives no dark palette (plain X11, some
    Linux desktops), Fusion gets one of ours; a switch back restores the style's own palette."""
    hints = app.styleHints()

    def apply(*_: object) -> None:
        dark = getattr(hints, "colorScheme", lambda: Qt.ColorScheme.Unknown)() == Qt.ColorScheme.Dark
        is_dark_now = app.palette().color(QPalette.ColorRole.Window).lightness() < 128
        if dark and not is_dark_now:
            app.setPalette(dark_palette())
        elif not dark and is_dark_now and getattr(app, "_sc_dark_applied", False):
            app.setPalette(app.style().standardPalette())
        app._sc_dark_applied = dark  # type: ignore[attr-defined]

    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(apply)
    apply()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    app = application()
    from sourcecheckup.plugins import load_plugins

    from .main_window import MainWindow

    load_plugins()
    window = MainWindow(args.db)
    window.show()
    if args.quit_after is None:
        window.preload_judge_model()   # the built-in judge's model, off the GUI thread, from the start
    else:   # a smoke run of a build audits nothing: no model to load
        from PySide6.QtCore import QTimer

        if sys.stdout is not None:   # a windowed build on Windows has no standard output
            print(f"SourceCheckup window shown ({window.width()}x{window.height()}, database {window.db_path})",
                  flush=True)
        QTimer.singleShot(int(args.quit_after * 1000), window.close)
    if args.run:
        try:
            window.results.open_run(window.store.get_run(args.run).id)
        except Exception as exc:
            window.warn("Cannot open run", str(exc))
    elif (latest := window.store.latest_run_id()) is not None:
        window.results.open_run(latest)
    if args.quit_after is None:   # a smoke run is no first launch
        window.offer_judge_guide()
    return int(app.exec())
