// openid-client.mjs: a strict OAuth 2.1 client (openid-client 6, npm) signing in to an MCP
// server through the gateway, for end-to-end tests. It sends the MCP URL it was given as the
// RFC 8707 resource, as strict clients do.
//
// Steps: an unauthenticated POST to the MCP URL (401; the challenge's resource_metadata and
// scope) -> the protected resource metadata (its resource must be the MCP URL or a prefix of
// it, on a segment boundary) -> openid-client's discovery of the authorization server with the
// chosen algorithm (oidc: /.well-known/openid-configuration; oauth2:
// /.well-known/oauth-authorization-server) and dynamic client registration -> the
// authorization URL with PKCE, the scope of the challenge (else the metadata's
// scopes_supported) and resource=<MCP URL>, printed on stdout as {"authorize": URL}; the
// caller drives a browser and writes the callback URL it reached as one line on stdin ->
// authorizationCodeGrant (state, iss and PKCE checked by openid-client) with the resource ->
// initialize with the token (and, with --tool, tools/list, tools/call of --tool and of
// --denied-tool) -> refreshTokenGrant with the resource -> initialize again.
//
// Usage: node openid-client.mjs --url MCP_URL --algorithm oidc|oauth2 --redirect-uri URI
//          [--tool NAME [--denied-tool NAME]]
// Prints one JSON object as its last stdout line and exits 0 only if every step succeeded.
import { parseArgs } from 'node:util';
import readline from 'node:readline';
import * as client from 'openid-client';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    algorithm: { type: 'string', default: 'oidc' },
    'redirect-uri': { type: 'string' },
    tool: { type: 'string' },
    'denied-tool': { type: 'string' },
  },
  strict: true,
});

const result = {
  ok: false,
  steps: [],
  algorithm: opt.algorithm,
  challenge: '',
  resource_metadata: '',
  prm_resource: '',
  issuer: '',
  client_id: '',
  scope_requested: '',
  resource_sent: opt.url ?? '',
  token_scope: '',
  refresh_scope: '',
  mcp_status: 0,
  mcp_status_after_refresh: 0,
  tools: [],
  call: null,
  denied: null,
  access_token: '',
  error: '',
};

const initialize = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'openid-client-e2e', version: '1' } },
});

async function mcpInitialize(token) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(opt.url, { method: 'POST', headers, body: initialize });
  await res.arrayBuffer();
  return res;
}

// rpc POSTs one JSON-RPC message in an MCP session and returns the HTTP status and the
// JSON-RPC answer (from a JSON body or the first SSE data event).
async function rpc(token, sessionId, message) {
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25',
  };
  if (sessionId) headers['mcp-session-id'] = sessionId;
  const res = await fetch(opt.url, { method: 'POST', headers, body: JSON.stringify(message) });
  const text = await res.text();
  let answer = null;
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (line.startsWith('data:')) { try { answer = JSON.parse(line.slice(5)); break; } catch { /* next */ } }
    }
  } else if (text) {
    try { answer = JSON.parse(text); } catch { /* not JSON */ }
  }
  return { status: res.status, headers: res.headers, answer };
}

// toolResult summarises a tools/call answer.
function toolResult(r) {
  const out = { status: r.status, is_error: false, text: '', error: '' };
  if (r.answer?.error) out.error = r.answer.error.message ?? String(r.answer.error.code);
  const res = r.answer?.result;
  if (res) {
    out.is_error = Boolean(res.isError);
    out.text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  }
  return out;
}

// session runs initialize, notifications/initialized, tools/list and the tool calls asked for.
async function session(token) {
  const init = await rpc(token, '', JSON.parse(initialize));
  if (init.status !== 200 || !init.answer?.result) throw new Error(`initialize: HTTP ${init.status}`);
  const sid = init.headers.get('mcp-session-id') ?? '';
  await rpc(token, sid, { jsonrpc: '2.0', method: 'notifications/initialized' });
  const list = await rpc(token, sid, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
  if (list.status !== 200 || !list.answer?.result) throw new Error(`tools/list: HTTP ${list.status}`);
  result.tools = (list.answer.result.tools ?? []).map((t) => t.name);
  result.steps.push('tools/list');
  result.call = toolResult(await rpc(token, sid, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: opt.tool, arguments: {} } }));
  if (result.call.status !== 200 || result.call.is_error || result.call.error) throw new Error(`tools/call ${opt.tool}: ${JSON.stringify(result.call)}`);
  result.steps.push('tools/call');
  if (opt['denied-tool']) {
    result.denied = toolResult(await rpc(token, sid, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: opt['denied-tool'], arguments: {} } }));
    result.steps.push('tools/call-denied');
  }
}

// authParam reads one auth-param of a Bearer challenge.
function authParam(challenge, name) {
  const m = new RegExp(`(?:^|[ ,])${name}="([^"]*)"`).exec(challenge);
  return m ? m[1] : '';
}

// covers reports whether the protected resource metadata's resource may stand for url: equal,
// or a prefix of it on a segment boundary (the check the MCP SDKs make).
function covers(resource, url) {
  const r = new URL(resource), u = new URL(url);
  if (r.origin !== u.origin) return false;
  const rp = r.pathname.replace(/\/$/, ''), up = u.pathname.replace(/\/$/, '');
  return rp === '' || up === rp || up.startsWith(rp + '/');
}

function readLine() {
  const rl = readline.createInterface({ input: process.stdin });
  return new Promise((resolve, reject) => {
    rl.once('line', (line) => { resolve(line.trim()); rl.close(); });
    rl.once('close', () => reject(new Error('stdin closed before the callback URL arrived')));
  });
}

async function main() {
  if (!opt.url || !opt['redirect-uri']) throw new Error('--url and --redirect-uri are required');
  if (opt.algorithm !== 'oidc' && opt.algorithm !== 'oauth2') throw new Error('--algorithm must be oidc or oauth2');

  let res = await mcpInitialize('');
  if (res.status !== 401) throw new Error(`unauthenticated request: HTTP ${res.status}, want 401`);
  result.challenge = res.headers.get('www-authenticate') ?? '';
  result.resource_metadata = authParam(result.challenge, 'resource_metadata');
  if (!result.resource_metadata) throw new Error(`no resource_metadata in ${result.challenge}`);
  result.steps.push('unauthorized');

  res = await fetch(result.resource_metadata);
  if (res.status !== 200) throw new Error(`protected resource metadata: HTTP ${res.status}`);
  const prm = await res.json();
  result.prm_resource = prm.resource;
  if (!covers(prm.resource, opt.url)) throw new Error(`protected resource metadata names ${prm.resource}, which does not cover ${opt.url}`);
  result.issuer = prm.authorization_servers?.[0] ?? '';
  result.steps.push('resource-metadata');

  const config = await client.dynamicClientRegistration(
    new URL(result.issuer),
    {
      client_name: 'openid-client e2e',
      redirect_uris: [opt['redirect-uri']],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    client.None(),
    { algorithm: opt.algorithm, execute: [client.allowInsecureRequests] },
  );
  result.client_id = config.clientMetadata().client_id;
  result.steps.push('discovery', 'registration');

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  result.scope_requested = authParam(result.challenge, 'scope') || (prm.scopes_supported ?? []).join(' ');
  const params = {
    redirect_uri: opt['redirect-uri'],
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource: opt.url,
  };
  if (result.scope_requested) params.scope = result.scope_requested;
  const authURL = client.buildAuthorizationUrl(config, params);
  console.log(JSON.stringify({ authorize: authURL.href }));
  const callback = await readLine();
  result.steps.push('callback');

  const tokens = await client.authorizationCodeGrant(
    config, new URL(callback), { pkceCodeVerifier: verifier, expectedState: state }, { resource: opt.url },
  );
  result.token_scope = tokens.scope ?? '';
  result.access_token = tokens.access_token;
  result.steps.push('token');

  res = await mcpInitialize(tokens.access_token);
  result.mcp_status = res.status;
  if (res.status !== 200) throw new Error(`initialize with the token: HTTP ${res.status} ${res.headers.get('www-authenticate') ?? ''}`);
  result.steps.push('initialize');
  if (opt.tool) await session(tokens.access_token);

  if (!tokens.refresh_token) throw new Error('no refresh token');
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, { resource: opt.url });
  result.refresh_scope = refreshed.scope ?? '';
  result.access_token = refreshed.access_token;
  result.steps.push('refresh');
  res = await mcpInitialize(refreshed.access_token);
  result.mcp_status_after_refresh = res.status;
  if (res.status !== 200) throw new Error(`initialize after the refresh: HTTP ${res.status}`);
  result.steps.push('initialize-after-refresh');
  result.ok = true;
}

try {
  await main();
} catch (err) {
  result.error = `${err?.name ?? 'Error'}: ${err?.message ?? err}`;
  if (err?.error) result.error += ` (${err.error}: ${err.error_description ?? ''})`;
  if (err?.cause?.error) result.error += ` (${err.cause.error}: ${err.cause.error_description ?? ''})`;
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
