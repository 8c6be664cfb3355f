"""Where the tests find the project and their fixtures, wherever in tests/ a test module sits."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]      # the repository
FIXTURES = ROOT / "tests" / "fixtures"
