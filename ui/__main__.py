"""`python -m ui`: start the desktop app; the frozen app's entry point too.

In a frozen build (PyInstaller, build.spec) the same program is also the command line: the
console executable ``sourcecheckup-cli`` runs ``sourcecheckup`` (every subcommand, ``demo``
included), and so does ``SourceCheckup --cli ...`` where the app's executable has a console.
"""
import multiprocessing
import os
import sys

CLI_FLAG = "--cli"
CLI_EXECUTABLE = "sourcecheckup-cli"


def wants_cli(argv: list[str], executable: str) -> bool:
    """Whether this start is the command line: ``--cli`` first, or the console executable's own name."""
    name = os.path.splitext(os.path.basename(executable))[0].lower()
    return argv[:1] == [CLI_FLAG] or (getattr(sys, "frozen", False) and name == CLI_EXECUTABLE)


def main() -> int:
    argv = sys.argv[1:]
    if wants_cli(argv, sys.executable):
        from sourcecheckup.cli import main as cli_main

        return cli_main(argv[1:] if argv[:1] == [CLI_FLAG] else argv)
    from ui.app import main as app_main

    return app_main(argv)


if __name__ == "__main__":
    # the app sums large runs and extracts pages in spawned worker processes; a frozen build
    # (PyInstaller) must let such a child run its task instead of starting a second window
    multiprocessing.freeze_support()
    sys.exit(main())
