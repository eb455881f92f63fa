#!/usr/bin/env bash
# Installs what `python -m capture` and the browser/desktop tests in
# tests/test_capture.py need: Debian's Chromium, Xvfb, Mousepad, AT-SPI, xdotool, the Python docs,
# fonts, and the pinned Python packages. Safe to run again (installs only what is missing).
#
#   sudo scripts/install_capture_deps.sh            # apt + pip (pip into $PYTHON, default .venv)
#   PYTHON=python3 scripts/install_capture_deps.sh  # another interpreter for the pip part
#   SKIP_APT=1 scripts/install_capture_deps.sh      # pip part only
set -euo pipefail

cd "$(dirname "$0")/.."

APT_PACKAGES=(
  chromium            # browser driven by Playwright (never `playwright install`)
  xvfb xauth          # virtual X server for the desktop capture
  mousepad            # GTK3 editor whose accessibility tree gives the desktop boxes
  at-spi2-core        # at-spi-bus-launcher / registry
  python3-pyatspi     # AT-SPI client; importable only by Debian's /usr/bin/python3
  dbus                # dbus-daemon for a private session bus
  xdotool             # clicks and typing on the virtual display
  python3-doc         # the HTML pages of the web and mobile samples
  fonts-dejavu-core fonts-dejavu-extra fonts-liberation2  # fonts the shipped screenshots were rendered with
)
PIP_PACKAGES=(
  "playwright==1.65.2"
  "miniwob==1.1.0"
)

if [[ "${SKIP_APT:-0}" != "1" ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if (( ${#missing[@]} )); then
    SUDO=""
    [[ "$(id -u)" == "0" ]] || SUDO="sudo"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "apt packages already installed"
  fi
fi

PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
"$PYTHON" -m pip install --quiet "${PIP_PACKAGES[@]}"

# quick self-check: each tool the capture uses answers
/usr/bin/chromium --version 2>/dev/null
/usr/bin/python3 -c "import pyatspi" && echo "pyatspi ok"
"$PYTHON" -c "import playwright, miniwob; from importlib.metadata import version as v; print('playwright', v('playwright'), 'miniwob', v('miniwob'))"
