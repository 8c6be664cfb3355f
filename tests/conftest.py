"""Shared test set-up: fixture servers on 127.0.0.1 only, no network, no real keyring."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
# subprocess runs of the CLI must never look dead links up on the public web archive
os.environ["SOURCECHECKUP_ARCHIVE"] = "off"
# ...nor ask the public metadata services (Crossref, PubMed, OpenAlex) about cited references
os.environ["SOURCECHECKUP_REFERENCES"] = "off"

pytest_plugins = ["tests.support.site"]
