#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser the demo app's end-to-end test drives
# (wasmtest/e2e/gatewaytest, through playwright-core from npm with executablePath). Nothing
# happens when /usr/bin/chromium already runs. Run as root (CI does); called by `make e2e-deps`.
# On success the last line on stdout is the browser's path.
set -euo pipefail
bin=/usr/bin/chromium
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing or old on a fresh machine: update them first.
$SUDO apt-get update >&2
$SUDO apt-get install -y --no-install-recommends chromium fonts-liberation >&2
"$bin" --version >&2
echo "$bin"
