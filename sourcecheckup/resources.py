"""Where ``resources/`` (prompts, templates, patterns, samples, judge parameters) lives."""
from __future__ import annotations

import os
import sys
from pathlib import Path

RESOURCES_ENV = "SOURCECHECKUP_RESOURCES"


def resources_dir() -> Path:
    """$SOURCECHECKUP_RESOURCES, a frozen app's bundle, or the folder beside the package."""
    env = os.environ.get(RESOURCES_ENV)
    if env:
        return Path(env)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parents[1] / "resources"
