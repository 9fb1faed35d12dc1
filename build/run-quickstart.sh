#!/usr/bin/env bash
# The quick start behind `make run`: a real OpenID provider (oidc-provider) on 127.0.0.1:8409,
# the demo MCP server on 127.0.0.1:8410, the demo MCP client app on 127.0.0.1:8411, and the
# local gateway (filter.wasm in the wazero host + the token service in-process) listening on
# the hosts of examples/gateway.yaml. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-examples/gateway.yaml}
out=build/out
mkdir -p "$out"

bash wasmtest/e2e/node/install.sh >/dev/null
go build -o "$out/" ./wasmtest/cmd/localgateway ./examples/demomcp ./examples/demoapp

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

idp_config='{"port":8409,"clients":[{"client_id":"gateway","client_secret":"demo-idp-secret","redirect_uris":["http://127.0.0.1:8400/oauth2/callback"]}],"users":[{"sub":"alice","email":"alice@example.com","email_verified":true,"name":"Alice Example","groups":["engineering"]},{"sub":"bob","email":"bob@example.com","email_verified":true,"name":"Bob Example","groups":["sales"]}]}'
node wasmtest/e2e/node/idp.mjs "$idp_config" > "$out/idp.log" 2>&1 &
pids+=($!)
"$out/demomcp" -addr 127.0.0.1:8410 > "$out/demomcp.log" 2>&1 &
pids+=($!)
"$out/demoapp" -addr 127.0.0.1:8411 -gateway http://127.0.0.3:8402 > "$out/demoapp.log" 2>&1 &
pids+=($!)

for i in $(seq 1 50); do
	grep -q READY "$out/idp.log" 2>/dev/null && break
	sleep 0.2
done
grep -q READY "$out/idp.log" || { echo "the OpenID provider did not start; see $out/idp.log" >&2; exit 1; }

cat <<MSG
Quick start is up:
  OpenID provider     http://127.0.0.1:8409   (signs in alice@example.com automatically)
  MCP server route    http://127.0.0.2:8401/mcp   (demo MCP server behind the gateway)
  MCP client route    http://127.0.0.3:8402/      (demo app; open it in a browser)
  Token service       http://127.0.0.1:8400       (authenticate host)
  Filter metrics      http://127.0.0.1:9901/metrics   (Prometheus text; the local gateway's -admin)
Try: npx @modelcontextprotocol/inspector, and connect to http://127.0.0.2:8401/mcp
     curl -i http://127.0.0.2:8401/mcp   (401 with the resource metadata URL)
Logs: $out/*.log; the authorization records print below, one per decision.
Edit '$config' and send localgateway SIGHUP to reload it (docs/operations.md)
MSG
"$out/localgateway" -config "$config" -wasm "$out/filter.wasm" -admin 127.0.0.1:9901
