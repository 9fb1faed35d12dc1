#!/usr/bin/env bash
# The quick start behind `make run`: a real OpenID provider (oidc-provider) on 127.0.0.1:8409,
# a second one on 127.0.0.1:8415 as the upstream OAuth server of the upstream_oauth2 route,
# the demo MCP server on 127.0.0.1:8410, the demo MCP client app on 127.0.0.1:8411, the LLM API
# stand-in it hands the user's token to on 127.0.0.1:8413, and the local gateway (filter.wasm in the wazero host + the token service in-process) listening on
# the hosts of examples/gateway.yaml. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-examples/gateway.yaml}
out=build/out
mkdir -p "$out"

bash wasmtest/e2e/node/install.sh >/dev/null
go build -o "$out/" ./wasmtest/cmd/localgateway ./examples/demomcp ./examples/demoapp ./examples/llmapi

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

idp_config='{"port":8409,"clients":[{"client_id":"gateway","client_secret":"demo-idp-secret","redirect_uris":["http://127.0.0.1:8400/oauth2/callback"]}],"users":[{"sub":"alice","email":"alice@example.com","email_verified":true,"name":"Alice Example","groups":["engineering"]},{"sub":"bob","email":"bob@example.com","email_verified":true,"name":"Bob Example","groups":["sales"]}]}'
node wasmtest/e2e/node/idp.mjs "$idp_config" > "$out/idp.log" 2>&1 &
pids+=($!)
# The upstream OAuth server: another account for alice, at another provider.
upstream_config='{"port":8415,"clients":[{"client_id":"gateway-upstream","client_secret":"demo-upstream-secret","token_endpoint_auth_method":"client_secret_basic","redirect_uris":["http://127.0.0.4:8412/.gateway/mcp/oauth2/callback"]}],"users":[{"sub":"alice-upstream","email":"alice@upstream.example","email_verified":true,"name":"Alice at Upstream","groups":[]}]}'
node wasmtest/e2e/node/idp.mjs "$upstream_config" > "$out/upstream-idp.log" 2>&1 &
pids+=($!)
"$out/demomcp" -addr 127.0.0.1:8410 -upstream-userinfo http://127.0.0.1:8415/me > "$out/demomcp.log" 2>&1 &
pids+=($!)
# The LLM API stand-in sends the user's token only to the gateway's MCP route origins (either
# scheme of 127.0.0.2:8401, so that an https route keeps working; it trusts the quick start's
# development CA when there is one).
llm_env=()
[ -f "$out/tls/ca.pem" ] && llm_env=(SSL_CERT_FILE="$out/tls/ca.pem")
env "${llm_env[@]}" "$out/llmapi" -addr 127.0.0.1:8413 -allow-origin http://127.0.0.2:8401 -allow-origin https://127.0.0.2:8401 -allow-origin http://127.0.0.4:8412 > "$out/llmapi.log" 2>&1 &
pids+=($!)
"$out/demoapp" -addr 127.0.0.1:8411 -gateway http://127.0.0.3:8402 -issuer http://127.0.0.1:8400 -llmapi http://127.0.0.1:8413 > "$out/demoapp.log" 2>&1 &
pids+=($!)

for log in idp upstream-idp; do
	for i in $(seq 1 50); do
		grep -q READY "$out/$log.log" 2>/dev/null && break
		sleep 0.2
	done
	grep -q READY "$out/$log.log" || { echo "the OpenID provider did not start; see $out/$log.log" >&2; exit 1; }
done

cat <<MSG
Quick start is up:
  OpenID provider     http://127.0.0.1:8409   (signs in alice@example.com automatically)
  MCP server route    http://127.0.0.2:8401/mcp   (demo MCP server behind the gateway)
  Upstream route      http://127.0.0.4:8412/mcp   (the demo MCP server with the user's upstream account)
  MCP client route    http://127.0.0.3:8402/      (demo app; open it in a browser: Connect, call tools)
  Upstream OAuth      http://127.0.0.1:8415   (second OpenID provider; signs in alice-upstream)
  LLM API stand-in    http://127.0.0.1:8413   (the demo app hands it the user's token)
  Token service       http://127.0.0.1:8400       (authenticate host)
  Filter metrics      http://127.0.0.1:9901/metrics   (Prometheus text; the local gateway's -admin)
Try: npx @modelcontextprotocol/inspector, and connect to http://127.0.0.2:8401/mcp
     curl -i http://127.0.0.2:8401/mcp   (401 with the resource metadata URL)
Logs: $out/*.log; the authorization records print below, one per decision.
Edit '$config' and send localgateway SIGHUP to reload it (docs/operations.md)
MSG
"$out/localgateway" -config "$config" -wasm "$out/filter.wasm" -admin 127.0.0.1:9901
