"""Where ``resources/`` (prompts, templates, patterns, samples, judge parameters) lives."""
from __future__ import annotations

import os
import sys
from pathlib import Path

RESOURCES_ENV = "SOURCECHECKUP_RESOURCES"
# the file every copy of resources/ holds: the built-in judge cannot run without it
_MARKER = Path("judges") / "builtin.json"


def resources_dir() -> Path:
    """$SOURCECHECKUP_RESOURCES, a frozen app's bundle, the package data of an installed wheel
    (``sourcecheckup/_resources``, see setup.py), or the folder beside the package in the source tree."""
    env = os.environ.get(RESOURCES_ENV)
    if env:
        return Path(env)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    here = Path(__file__).resolve().parent
    installed = here / "_resources"
    if (installed / _MARKER).is_file():
        return installed
    return here.parent / "resources"
