#!/usr/bin/env bash
# Installs the Debian packages the Python SDK's tests need (PyJWT, cryptography, pytest, and
# Starlette + uvicorn + httpx for the ASGI middleware and the end-to-end server), for
# /usr/bin/python3. Nothing happens when they are already importable. Run as root (CI does).
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}
if "$PY" -c 'import jwt, cryptography, starlette, uvicorn, httpx, pytest' 2>/dev/null; then
	exit 0
fi
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
	python3-jwt python3-cryptography python3-pytest python3-starlette python3-uvicorn python3-httpx
