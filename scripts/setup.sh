#!/usr/bin/env bash
# Installs everything Castellan Referee needs on a fresh Debian machine into ./.venv:
#   scripts/setup.sh            the core (score photos and castles, serve the web app)
#   scripts/setup.sh test       the core plus what the test suite needs (renderer, browser, PDF tools)
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-core}"

apt_packages=()
if [ "$mode" = "test" ]; then
  # chromium: browser tests (Playwright drives Debian's build); poppler-utils: pdftoppm for the mat PDF;
  # libllvm19: Mitsuba's fast llvm_ad_rgb variant (the renderer falls back to scalar_rgb without it);
  # postgresql: the web app's PostgreSQL storage is tested against a real server.
  apt_packages+=(chromium poppler-utils libllvm19 postgresql)
fi
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
if [ "$mode" = "test" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
else
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
fi
# Compile the photo reader's numba kernels now (about ten seconds on a fresh install, a few to find them
# cached on a later run), so that the first photo a user reads does not wait for them. A failure here only
# leaves that wait to the first photo.
.venv/bin/python -m vision.warm_up || echo "setup: the photo reader's kernels were not compiled ahead; the first photo will compile them"
