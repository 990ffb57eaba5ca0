#!/usr/bin/env bash
# Install Debian's `chromium` for the headless-browser check of the built book
# (tests/test_book.py). Run by `make test` before pytest.
#
# Never fails the test run: if the browser cannot be installed it prints a warning, and the
# browser test then skips with the reason (or fails when CI=true, where the browser is required).
set -u

CHROMIUM=/usr/bin/chromium

warn() {
    echo "setup_browser.sh: WARNING: $*; the headless-browser book test will skip (or fail if CI=true)." >&2
    exit 0
}

if [ -x "$CHROMIUM" ]; then
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || warn "apt-get not found (not a Debian-like system), cannot install chromium"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
        SUDO="sudo -n"
    else
        warn "not root and no password-less sudo, cannot apt-get install chromium"
    fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "setup_browser.sh: installing Debian's chromium with apt-get (once; a few minutes)..."
log=$(mktemp)
if $SUDO apt-get update -qq >"$log" 2>&1 \
    && $SUDO apt-get install -y -qq --no-install-recommends chromium >>"$log" 2>&1 \
    && [ -x "$CHROMIUM" ]; then
    echo "setup_browser.sh: $("$CHROMIUM" --version 2>/dev/null || echo chromium) installed"
    rm -f "$log"
    exit 0
fi
tail -n 20 "$log" >&2
rm -f "$log"
warn "apt-get could not install chromium (see the lines above)"
