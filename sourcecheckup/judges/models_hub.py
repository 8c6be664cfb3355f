"""Downloaded checkers: the catalogue of recommended models, pull / import / remove, and where they live.

``sourcecheckup models list | pull NAME | remove NAME | import DIR --name NAME`` call these functions.
A pulled model is a folder under :func:`models_dir` (``$SOURCECHECKUP_MODELS`` or the user data folder)
holding the files of the model's repository and ``sourcecheckup-model.json`` (where it came from, the
commit, the licence, every file's size and hash); ``local:NAME`` then judges with it, offline.

Downloads go through huggingface_hub (``HfApi.model_info`` for the file list with sizes and hashes,
``file_download.http_get`` for the bytes), from ``$HF_ENDPOINT`` when set (a mirror). A pull:

- checks the free disk space before it starts;
- reports progress in bytes (``progress`` callback) and stops when ``cancel`` is set;
- keeps what it has under ``.partial/NAME`` and resumes there (HTTP Range) when run again;
- refuses a file whose size or hash differs from the repository's (LFS sha256, else the git blob id).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..provenance import sha256_file
from ..resources import resources_dir

MODELS_ENV = "SOURCECHECKUP_MODELS"
MANIFEST = "sourcecheckup-model.json"
DISK_MARGIN = 50 * 1024 * 1024          # keep this much free beyond the download
# files a judge needs; weights in one format (safetensors preferred)
_WANTED_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin", ".tiktoken")
_WEIGHT_SUFFIXES = (".safetensors", ".bin")


class ModelHubError(RuntimeError):
    """A pull, import or remove that cannot be done, said in a sentence that says what to do."""


class HubUnreachable(ModelHubError):
    """The hub (or the mirror in HF_ENDPOINT) could not be reached: no internet, a name that does not
    resolve, a refused connection. ``hub``: the address tried; ``cause``: the network error, short;
    ``partial``: some bytes were downloaded (the next pull resumes)."""

    def __init__(self, message: str, hub: str = "", cause: str = "", partial: bool = False) -> None:
        super().__init__(message)
        self.hub, self.cause, self.partial = hub, cause, partial


class PullCancelled(ModelHubError):
    """The user cancelled the pull; what was downloaded is kept for the next pull to resume."""


@dataclass(frozen=True)
class CatalogueEntry:
    name: str
    repo: str
    kind: str                 # classifier | seq2seq | checker (served by a local server)
    via: str                  # huggingface | ollama
    parameters: str
    size: str
    licence: str
    commercial_use: bool | None   # None: the licence does not say
    hardware: str
    accuracy: str
    citation: str
    judge: str
    ollama_model: str = ""

    @property
    def licence_warning(self) -> str | None:
        """The sentence shown before a download whose licence forbids commercial use, else None."""
        if self.commercial_use:
            return None
        if self.commercial_use is None:
            return (f"{self.name}: licence {self.licence}; ask its authors before any commercial use.")
        return (f"{self.name} is licensed {self.licence}: it may not be used commercially "
                "(research and personal use only).")


@dataclass(frozen=True)
class InstalledModel:
    name: str
    path: Path
    repo: str
    source: str               # "hub" (pulled) or "folder" (imported)
    commit: str
    licence: str
    size_bytes: int

    @property
    def judge_spec(self) -> str:
        return f"local:{self.name}"


@dataclass
class PullProgress:
    """Where a pull stands: the file now downloading and the bytes of the whole pull."""

    file: str
    done_bytes: int
    total_bytes: int
    files_done: int
    files_total: int


@dataclass
class _RemoteFile:
    path: str
    size: int
    sha256: str = ""          # LFS files
    blob_id: str = ""         # git blob sha1 (every file)
    extra: dict[str, Any] = field(default_factory=dict)


def catalogue(path: Path | None = None) -> list[CatalogueEntry]:
    """The recommended checkers of ``resources/judges/catalogue.json``."""
    data = json.loads((path or resources_dir() / "judges" / "catalogue.json").read_text(encoding="utf-8"))
    fields = set(CatalogueEntry.__dataclass_fields__)
    return [CatalogueEntry(**{k: v for k, v in item.items() if k in fields}) for item in data["models"]]


def catalogue_entry(name: str) -> CatalogueEntry | None:
    wanted = name.strip().lower()
    return next((e for e in catalogue() if wanted in (e.name.lower(), e.repo.lower())), None)


def models_dir() -> Path:
    env = os.environ.get(MODELS_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("sourcecheckup", appauthor=False)) / "models"


def _safe_name(name: str) -> str:
    name = name.strip()
    if not name or name.startswith(".") or any(c in name for c in "/\\:#") or name != Path(name).name:
        raise ModelHubError(f"'{name}' cannot name a model: use letters, digits, '-', '_' or '.'")
    return name


def installed(root: Path | None = None) -> list[InstalledModel]:
    """The models pulled or imported so far (a folder without a manifest is an unfinished one: not listed)."""
    root = root or models_dir()
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        manifest = folder / MANIFEST
        if folder.name.startswith(".") or not manifest.is_file():
            continue
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except ValueError:
            continue
        found.append(InstalledModel(
            name=folder.name, path=folder, repo=data.get("repo", ""), source=data.get("source", ""),
            commit=data.get("commit", ""), licence=data.get("licence", ""),
            size_bytes=sum(int(f.get("size", 0)) for f in data.get("files", ()))))
    return found


def installed_path(name: str) -> Path | None:
    """The folder of the pulled or imported model ``name``, or None (then ``local:`` tries a path or hub id)."""
    try:
        folder = models_dir() / _safe_name(name)
    except ModelHubError:
        return None
    return folder if (folder / MANIFEST).is_file() else None


def remove(name: str) -> Path:
    """Delete a pulled or imported model (and any unfinished pull of that name); returns the folder."""
    name = _safe_name(name)
    root = models_dir()
    folder, partial = root / name, root / ".partial" / name
    if not folder.is_dir() and not partial.is_dir():
        known = ", ".join(m.name for m in installed(root)) or "none"
        raise ModelHubError(f"no model named '{name}' is installed (installed: {known})")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(partial, ignore_errors=True)
    return folder


def import_folder(source: Path, name: str) -> InstalledModel:
    """Copy a model folder (``save_pretrained`` or a download made elsewhere) in as ``name``, for
    machines without internet. The folder must hold a config.json and weights."""
    name = _safe_name(name)
    source = Path(source).expanduser()
    if not (source / "config.json").is_file():
        raise ModelHubError(f"'{source}' is not a model folder: it has no config.json")
    if not any(p.suffix in _WEIGHT_SUFFIXES for p in source.iterdir()):
        raise ModelHubError(f"'{source}' holds no weights (*.safetensors or *.bin)")
    root = models_dir()
    target = root / name
    if target.exists():
        raise ModelHubError(f"a model named '{name}' is already installed; remove it first")
    _check_disk(root, sum(p.stat().st_size for p in source.rglob("*") if p.is_file()))
    staging = root / ".partial" / f"{name}.import"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns(".cache", MANIFEST))
    files = [{"path": str(p.relative_to(staging)), "size": p.stat().st_size, "sha256": sha256_file(p)}
             for p in sorted(staging.rglob("*")) if p.is_file()]
    entry = catalogue_entry(name)
    _write_manifest(staging, {"name": name, "source": "folder", "imported_from": str(source.resolve()),
                              "repo": entry.repo if entry else "", "commit": "",
                              "licence": entry.licence if entry else "", "files": files})
    staging.rename(target)
    return next(m for m in installed(root) if m.name == name)


def endpoint() -> str:
    """The hub to download from: ``$HF_ENDPOINT`` (a mirror) or huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def pull(name: str, *, progress: Callable[[PullProgress], None] | None = None,
         cancel: threading.Event | None = None, token: str | None = None,
         revision: str | None = None) -> InstalledModel:
    """Download a catalogue model (by name) or any hub repository (``org/name``) into :func:`models_dir`.

    Raises :class:`PullCancelled` when ``cancel`` is set (the bytes so far are kept and the next pull
    resumes), :class:`ModelHubError` for everything else (no such model, no disk space, a corrupt file).
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    entry = catalogue_entry(name)
    if entry is not None and entry.via == "ollama":
        raise ModelHubError(f"{entry.name} is served by Ollama, not downloaded here: run "
                            f"`ollama pull {entry.ollama_model}` and choose it among the local server's models")
    repo = entry.repo if entry else name.strip()
    if entry is None and repo.count("/") != 1:
        names = ", ".join(e.name for e in catalogue())
        raise ModelHubError(f"'{name}' is neither a catalogue model ({names}) nor a hub repository (org/name)")
    target_name = _safe_name(entry.name if entry else repo.split("/")[1].lower())
    root = models_dir()
    if (root / target_name / MANIFEST).is_file():
        return next(m for m in installed(root) if m.name == target_name)
    hub = endpoint()
    try:
        info = HfApi(endpoint=hub, token=token).model_info(repo, revision=revision or "main",
                                                           files_metadata=True)
    except HfHubHTTPError as exc:
        raise ModelHubError(f"could not read {repo} on {hub}: {_short(exc)}") from exc
    except Exception as exc:
        if not _unreachable(exc):
            raise
        raise HubUnreachable(_offline_message(hub, exc), hub, _short(exc)) from exc
    commit = info.sha or revision or "main"
    files = _files_to_fetch(info)
    if not any(f.path == "config.json" for f in files):
        raise ModelHubError(f"{repo} has no config.json: it is not a transformers model")
    partial = root / ".partial" / target_name
    partial.mkdir(parents=True, exist_ok=True)
    total = sum(f.size for f in files)
    have = sum(_have(partial, f) for f in files)
    _check_disk(root, total - have)
    done = have
    for n, remote in enumerate(files):
        final = partial / remote.path
        if final.is_file() and final.stat().st_size == remote.size:
            continue    # verified when it was finished
        try:
            done = _fetch_one(hub, repo, commit, remote, partial, token, done, total, n, len(files),
                              progress, cancel)
        except Exception as exc:
            if not _unreachable(exc):
                raise
            raise HubUnreachable(_offline_message(hub, exc) + "; the bytes so far are kept and the next pull resumes",
                                 hub, _short(exc), partial=True) from exc
    licence = entry.licence if entry else _card_licence(info)
    _write_manifest(partial, {
        "name": target_name, "source": "hub", "repo": repo, "endpoint": hub, "commit": commit,
        "licence": licence, "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": [{"path": f.path, "size": f.size, "sha256": f.sha256, "blob_id": f.blob_id} for f in files]})
    shutil.rmtree(root / target_name, ignore_errors=True)
    partial.rename(root / target_name)
    return next(m for m in installed(root) if m.name == target_name)


def _unreachable(exc: BaseException) -> bool:
    """A network failure (no route, no name, refused, timed out) from the OS or the hub's HTTP client
    (httpx and its forks raise their own ConnectError/TimeoutException, not OSError)."""
    if isinstance(exc, OSError):
        return True
    return any(k.__module__.split(".")[0].startswith(("httpx", "httpcore"))
               and k.__name__ in ("TransportError", "ConnectError", "TimeoutException", "NetworkError")
               for k in type(exc).__mro__)


def _offline_message(hub: str, exc: BaseException) -> str:
    return (f"could not reach {hub} ({_short(exc)}). Without internet: download the model on another "
            "computer and run `sourcecheckup models import DIR --name NAME`; behind a mirror, set HF_ENDPOINT")


# -- the pull's parts ------------------------------------------------------------------------

class _Meter:
    """The progress object huggingface_hub's ``http_get`` updates per chunk: forwards the bytes and
    raises :class:`PullCancelled` before a chunk is written once ``cancel`` is set."""

    def __init__(self, on_bytes: Callable[[int], None], cancel: threading.Event | None) -> None:
        self._on_bytes, self._cancel = on_bytes, cancel

    def __call__(self, **_: Any) -> "_Meter":
        return self

    def __enter__(self) -> "_Meter":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise PullCancelled("the download was cancelled; pull again to resume where it stopped")
        self._on_bytes(n)

    def close(self) -> None:
        return None


def _fetch_one(hub: str, repo: str, commit: str, remote: _RemoteFile, partial: Path, token: str | None,
               done: int, total: int, n: int, count: int,
               progress: Callable[[PullProgress], None] | None, cancel: threading.Event | None) -> int:
    from huggingface_hub import hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers

    if cancel is not None and cancel.is_set():
        raise PullCancelled("the download was cancelled; pull again to resume where it stopped")
    final = partial / remote.path
    part = final.with_name(final.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    resume = part.stat().st_size if part.is_file() else 0
    if resume > remote.size:
        part.unlink()
        resume = 0
    state = {"done": done}   # ``done`` already counts the bytes of this file kept from before

    def on_bytes(k: int) -> None:
        state["done"] += k
        if progress is not None:
            progress(PullProgress(remote.path, state["done"], total, n, count))

    if progress is not None:
        progress(PullProgress(remote.path, state["done"], total, n, count))
    url = hf_hub_url(repo, remote.path, revision=commit, endpoint=hub)
    meter = _Meter(on_bytes, cancel)
    try:
        with part.open("ab") as out:
            http_get(url, out, resume_size=resume, headers=build_hf_headers(token=token),
                     expected_size=remote.size, displayed_filename=remote.path, tqdm_class=meter)  # type: ignore[arg-type]
    except PullCancelled:
        raise
    except HfHubHTTPError as exc:
        raise ModelHubError(f"could not download {remote.path} of {repo}: {_short(exc)}") from exc
    except OSError as exc:   # huggingface_hub's size check, a dropped connection after its retries
        if part.is_file() and part.stat().st_size > remote.size:
            part.unlink()
        raise ModelHubError(f"the download of {remote.path} stopped ({_short(exc)}); pull again to resume") from exc
    problem = _verify(part, remote)
    if problem:
        part.unlink()
        raise ModelHubError(f"{remote.path} of {repo} is corrupt ({problem}); it was deleted: pull again")
    part.rename(final)
    return state["done"]


def _files_to_fetch(info: Any) -> list[_RemoteFile]:
    files = []
    for sibling in info.siblings or ():
        path = sibling.rfilename
        if "/" in path or path.startswith(".") or not path.endswith(_WANTED_SUFFIXES):
            continue    # other formats (onnx/, openvino/...) and the repo's own dot files
        lfs = sibling.lfs
        files.append(_RemoteFile(path=path, size=int(sibling.size or (lfs.size if lfs else 0) or 0),
                                 sha256=(lfs.sha256 if lfs else "") or "", blob_id=sibling.blob_id or ""))
    if any(f.path.endswith(".safetensors") for f in files):   # one copy of the weights
        files = [f for f in files if not f.path.endswith(".bin")]
    return files


def _have(partial: Path, remote: _RemoteFile) -> int:
    final = partial / remote.path
    if final.is_file():
        return final.stat().st_size
    part = final.with_name(final.name + ".part")
    return min(part.stat().st_size, remote.size) if part.is_file() else 0


def _verify(path: Path, remote: _RemoteFile) -> str:
    """What is wrong with a downloaded file, or "" when its size and hash match the repository's."""
    size = path.stat().st_size
    if size != remote.size:
        return f"{size} bytes, expected {remote.size}"
    if remote.sha256:
        got = sha256_file(path)
        if got != remote.sha256:
            return f"sha256 {got[:12]}…, expected {remote.sha256[:12]}…"
    elif remote.blob_id:
        digest = hashlib.sha1(f"blob {size}\0".encode())
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != remote.blob_id:
            return f"git blob id {digest.hexdigest()[:12]}…, expected {remote.blob_id[:12]}…"
    return ""


def _check_disk(root: Path, needed: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(root).free
    if needed + DISK_MARGIN > free:
        raise ModelHubError(f"not enough disk space in {root}: the download needs {_mb(needed)} "
                            f"(plus {_mb(DISK_MARGIN)} to spare) and {_mb(free)} is free")


def _write_manifest(folder: Path, data: dict[str, Any]) -> None:
    (folder / MANIFEST).write_text(json.dumps(data, indent=2), encoding="utf-8")


def _card_licence(info: Any) -> str:
    card = getattr(info, "card_data", None)
    licence = getattr(card, "license", None) if card is not None else None
    if licence:
        return str(licence)
    tags = [t for t in (getattr(info, "tags", None) or ()) if str(t).startswith("license:")]
    return tags[0].split(":", 1)[1] if tags else ""


def _mb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def _short(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
