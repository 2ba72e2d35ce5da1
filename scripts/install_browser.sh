#!/usr/bin/env bash
# Install Chromium for the browser tests (tests/test_browser.py), where this machine allows it:
# Debian's chromium package through apt-get, as root or with password-less sudo. Elsewhere it says
# what to install and exits 1; the browser tests then skip with the same advice.
# RLTUTOR_INSTALL_BROWSER=0 skips the install.
set -uo pipefail
for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then
        exit 0
    fi
done
if [ -n "${RLTUTOR_CHROMIUM:-}" ] && [ -x "$RLTUTOR_CHROMIUM" ]; then
    exit 0
fi
advice="install Chromium for the browser tests: sudo apt-get install chromium (Debian/Ubuntu), or set RLTUTOR_CHROMIUM"
if [ "${RLTUTOR_INSTALL_BROWSER:-1}" = 0 ]; then
    echo "RLTUTOR_INSTALL_BROWSER=0: not installing; $advice"
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "no apt-get here; $advice"
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "not root and no password-less sudo; $advice"
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the package lists first (fast where they are recent), then with.
if "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
    || { "${sudo[@]}" apt-get update -q >/dev/null 2>&1 \
        && "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >/dev/null; }; then
    echo "installed $(chromium --version 2>/dev/null || echo chromium)"
    exit 0
fi
echo "apt-get could not install chromium; $advice"
exit 1
