"""`python -m ui`: start the desktop app."""
import multiprocessing
import sys

from ui.app import main

if __name__ == "__main__":
    # the app sums large runs and extracts pages in spawned worker processes; a frozen build
    # (PyInstaller) must let such a child run its task instead of starting a second window
    multiprocessing.freeze_support()
    sys.exit(main())
