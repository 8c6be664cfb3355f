"""Set-up the local judges' tests share: a tiny MiniCheck model of each kind, and an ONNX cache of the tests'
own (a module asks for it with ``pytestmark = pytest.mark.usefixtures("own_cache")``)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny MiniCheck model of each kind (roberta, deberta, t5), built once for a module."""
    from tests.support.minicheck_models import KINDS, build_minicheck_model

    root = tmp_path_factory.mktemp("minicheck")
    return {kind: build_minicheck_model(root / f"minicheck-{kind}-tiny", kind) for kind in KINDS}


@pytest.fixture
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """ONNX exports (local_onnx: Flan-T5 runs there by default) go to a test folder, not the user's cache."""
    monkeypatch.setenv("SOURCECHECKUP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "onnx-cache"))
