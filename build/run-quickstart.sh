#!/usr/bin/env bash
# The quick start behind `make run`: a real OpenID provider (oidc-provider) on 127.0.0.1:8409,
# a second one on 127.0.0.1:8415 as the upstream OAuth server of the upstream_oauth2 route,
# the demo MCP server on 127.0.0.1:8410, the demo MCP client app on 127.0.0.1:8411, the LLM API
# stand-in it hands the user's token to on 127.0.0.1:8413, a remote MCP server with its own
# authorization server (upstream-authed-mcp.mjs: MCP on 127.0.0.1:8417, authorization server on
# 127.0.0.1:8416) for the upstream_discovery route, and the local gateway (filter.wasm in the wazero host + the token service in-process) listening on
# the hosts of the configuration (examples/gateway.yaml, or CONFIG=…). Ctrl-C stops everything.
#
# It refuses to start a second time (a lock in build/out) or when an address it needs is
# taken, naming the address; it says it is ready only once every listener of the local gateway
# is bound; each run keeps its logs in build/out/logs/<time>/. https hosts get a certificate
# from a development CA limited to loopback (build/out/tls, docs/clients.md#tls).
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-examples/gateway.yaml}
out=build/out
mkdir -p "$out"
step() { printf '==> %s\n' "$*" >&2; }
die() { printf 'quick start: %s\n' "$*" >&2; exit 1; }

[ -f "$config" ] || die "no configuration file $config"

# One quick start at a time: the second fails at once.
exec 9>"$out/quickstart.lock"
flock -n 9 || die "another quick start is running (lock $out/quickstart.lock held); stop it first"

# Every address the run needs must be free before anything starts.
fixed=(127.0.0.1:8409 127.0.0.1:8410 127.0.0.1:8411 127.0.0.1:8413 127.0.0.1:8415 127.0.0.1:8416 127.0.0.1:8417 127.0.0.1:9901)
taken() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

for a in "${fixed[@]}"; do
	if taken "$a"; then die "address $a is already in use (another quick start, or a process on that port)"; fi
done
step "building the local gateway (the first build takes a few minutes)"
go build -o "$out/" ./wasmtest/cmd/localgateway
# The gateway's own addresses, and the URLs to print, come from the configuration.
urls_text=$("$out/localgateway" -config "$config" -print-urls) || die "the configuration $config does not load"
mapfile -t urls <<<"$urls_text"
addrs=$("$out/localgateway" -config "$config" -print-addresses) || die "the configuration $config does not load"
for a in $addrs; do
	if taken "$a"; then die "address $a is already in use (another gateway, or a process on that port)"; fi
done
logs="$out/logs/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$logs"
ln -sfn "$(basename "$logs")" "$out/logs/latest"
step "installing the Node packages (npm ci on the first run)"
bash wasmtest/e2e/node/install.sh >"$logs/npm.log" 2>&1 || { tail -n 20 "$logs/npm.log" >&2; die "npm install failed; see $logs/npm.log"; }
step "building filter.wasm and the demo servers"
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o "$out/filter.wasm" ./filter
go build -o "$out/" ./examples/demomcp ./examples/demoapp ./examples/llmapi

step "development certificate for the https hosts ($out/tls)"
"$out/localgateway" -dev-ca "$out/tls" -config "$config" 2>"$logs/dev-ca.log" || { cat "$logs/dev-ca.log" >&2; die "the development CA could not be made"; }

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

idp_config='{"port":8409,"clients":[{"client_id":"gateway","client_secret":"demo-idp-secret","redirect_uris":["http://127.0.0.1:8400/oauth2/callback"]}],"users":[{"sub":"alice","email":"alice@example.com","email_verified":true,"name":"Alice Example","groups":["engineering"]},{"sub":"bob","email":"bob@example.com","email_verified":true,"name":"Bob Example","groups":["sales"]}]}'
node wasmtest/e2e/node/idp.mjs "$idp_config" >"$logs/idp.log" 2>&1 &
pids+=($!)
# The upstream OAuth server: another account for alice, at another provider.
upstream_config='{"port":8415,"clients":[{"client_id":"gateway-upstream","client_secret":"demo-upstream-secret","token_endpoint_auth_method":"client_secret_basic","redirect_uris":["http://127.0.0.4:8412/.gateway/mcp/oauth2/callback"]}],"users":[{"sub":"alice-upstream","email":"alice@upstream.example","email_verified":true,"name":"Alice at Upstream","groups":[]}]}'
node wasmtest/e2e/node/idp.mjs "$upstream_config" >"$logs/upstream-idp.log" 2>&1 &
pids+=($!)
# The remote MCP server of the upstream_discovery route, with its own authorization server
# (open dynamic registration): the gateway discovers it and registers itself there.
authed_config='{"mode":"dcr","asPort":8416,"mcpPort":8417,"users":[{"sub":"alice-vendor","email":"alice@vendor.example","name":"Alice at the vendor"}]}'
node wasmtest/e2e/node/upstream-authed-mcp.mjs "$authed_config" >"$logs/authed-mcp.log" 2>&1 &
pids+=($!)
"$out/demomcp" -addr 127.0.0.1:8410 -upstream-userinfo http://127.0.0.1:8415/me >"$logs/demomcp.log" 2>&1 &
pids+=($!)
# The LLM API stand-in sends the user's token only to the gateway's MCP route origins, and
# trusts the quick start's development CA for the https ones.
SSL_CERT_FILE="$out/tls/ca.pem" "$out/llmapi" -addr 127.0.0.1:8413 -allow-origin https://127.0.0.2:8401 -allow-origin http://127.0.0.4:8412 >"$logs/llmapi.log" 2>&1 &
pids+=($!)
"$out/demoapp" -addr 127.0.0.1:8411 -gateway http://127.0.0.3:8402 -issuer http://127.0.0.1:8400 -llmapi http://127.0.0.1:8413 >"$logs/demoapp.log" 2>&1 &
pids+=($!)

step "starting the OpenID providers and the local gateway"
for log in idp upstream-idp authed-mcp; do
	for _ in $(seq 1 100); do
		grep -q READY "$logs/$log.log" 2>/dev/null && break
		sleep 0.2
	done
	grep -q READY "$logs/$log.log" || die "the $log server did not start; see $logs/$log.log"
done

# The records print on the terminal and into the run's log.
# -insecure-loopback-upstream-discovery: the upstream_discovery route's server is on loopback http.
"$out/localgateway" -config "$config" -wasm "$out/filter.wasm" -admin 127.0.0.1:9901 -insecure-loopback-upstream-discovery > >(tee -a "$logs/localgateway.log") 2>&1 &
gw=$!
pids+=("$gw")
for _ in $(seq 1 150); do
	grep -q "local gateway ready" "$logs/localgateway.log" 2>/dev/null && break
	kill -0 "$gw" 2>/dev/null || break
	sleep 0.2
done
grep -q "local gateway ready" "$logs/localgateway.log" || die "the local gateway did not start; see $logs/localgateway.log"

ca="$PWD/$out/tls/ca.pem"
{
	echo "Quick start is ready (configuration $config):"
	for u in "${urls[@]}"; do printf '  %s\n' "$u"; done
	echo "  OpenID provider   http://127.0.0.1:8409   (signs in alice@example.com automatically)"
	echo "  Upstream OAuth    http://127.0.0.1:8415   (second OpenID provider; signs in alice-upstream)"
	echo "  Remote MCP server http://127.0.0.1:8417/mcp   (own authorization server http://127.0.0.1:8416; signs in alice-vendor)"
	echo "  LLM API stand-in  http://127.0.0.1:8413   (the demo app hands it the user's token)"
	echo "  Filter metrics    http://127.0.0.1:9901/metrics"
	echo "Open the demo app (the mcp client route above) in a browser: who you are, Connect, call tools."
	echo "https hosts use a development CA limited to loopback; let clients trust it:"
	echo "  export NODE_EXTRA_CA_CERTS=$ca SSL_CERT_FILE=$ca"
	for u in "${urls[@]}"; do
		case "$u" in *"mcp server"*)
			mcp=${u##* }
			echo "Try: curl --cacert $ca -i $mcp   (401 with the resource metadata URL)"
			echo "     NODE_EXTRA_CA_CERTS=$ca npx @modelcontextprotocol/inspector   and connect to $mcp"
			break # the first MCP server route; the others work the same way
			;;
		esac
	done
	echo "Logs of this run: $logs/ ; the authorization records print below, one per decision."
	echo "Edit '$config' and send SIGHUP to the local gateway (pid $gw) to reload it (docs/operations.md)"
} >&2
wait "$gw"
