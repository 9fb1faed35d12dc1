// upstream-authed-mcp.mjs: a remote MCP server that protects itself with MCP authorization, and
// its own authorization server, for the end-to-end tests of upstream discovery (docs: the
// harness's doc.go, StartAuthedUpstream).
//
// Two loopback origins in one process:
//   - the authorization server: oidc-provider, issuer http://127.0.0.1:A (OpenID discovery at
//     /.well-known/openid-configuration only, so clients exercise the RFC 8414 -> OpenID
//     fallback). It signs the configured user in and grants consent without a page (the
//     approach of idp.mjs), issues RS256 JWT access tokens (typ at+jwt) for the MCP resource
//     (RFC 8707 resource indicators; aud = the resource), refresh tokens to every client allowed
//     the refresh_token grant (offline_access is not needed) rotated on every use, and has a
//     revocation endpoint. No static clients:
//       mode "dcr"   open dynamic client registration (RFC 7591), no client ID metadata
//                    documents: only registered clients can sign in.
//       mode "cimd"  oidc-provider's client ID metadata documents (AS metadata
//                    client_id_metadata_document_supported: true): a client_id that is an https
//                    URL is fetched, its client_id must equal the URL, no shared secrets; no
//                    registration endpoint, so a client has to use a document.
//                    With loopbackHttpClientIds, a client_id that is an http URL on 127.0.0.1
//                    is fetched as a document too (oidc-provider takes https only), for a
//                    gateway on plain loopback http: it must be a JSON object whose client_id
//                    is that URL, with token_endpoint_auth_method none and no client_secret.
//     As oidc-provider does, a client registered with a scope (RFC 7591 "scope") may later ask
//     only for scopes within it: a client that registered with "mcp" and steps up to
//     "mcp admin" gets invalid_scope; register with every scope of scopes_supported (or none).
//     Refresh tokens need "refresh_token" in the client's grant_types (registration defaults
//     grant_types to authorization_code only).
//   - the MCP server: the official TypeScript SDK (McpServer, Streamable HTTP, stateless) at
//     http://127.0.0.1:B/mcp behind the SDK's requireBearerAuth, with mcpAuthMetadataRouter
//     serving protected resource metadata (RFC 9728) at
//     /.well-known/oauth-protected-resource/mcp (scopes_supported: scope and extraScope; the
//     router also serves a copy of the authorization server's metadata at this origin's
//     /.well-known/oauth-authorization-server, as SDK-based servers do).
//     Without a valid token: 401 with WWW-Authenticate error="invalid_token", scope="<scope>",
//     resource_metadata="…". Tools:
//       whoami        needs <scope>; returns JSON {sub, scopes, client_id, resource}.
//       whoami_admin  needs <scope> <extraScope>: a tools/call of it with a token lacking
//                     extraScope is answered 403 error="insufficient_scope",
//                     scope="<scope> <extraScope>" by a second requireBearerAuth.
//     Tokens of a revoked grant (revocation endpoint, refresh token reuse, /test/revoke) are
//     refused at once (401 invalid_token): the JWT carries its grant ID as claim gid.
//
// Usage: node upstream-authed-mcp.mjs [JSON]   (or the config in env UPSTREAM_CONFIG)
// Config (every field optional):
//   mode            "dcr" (default) or "cimd".
//   users           [{sub, email, name}]; default one user "alice". The first signs in unless
//                   login_hint names another or /test/login-as changed it.
//   scope           the scope every request needs (default "mcp").
//   extraScope      the scope whoami_admin needs in addition (default "admin").
//   accessTokenTTL, refreshTokenTTL   seconds (defaults 3600, 86400).
//   loopbackHttpClientIds  mode "cimd": also accept http://127.0.0.1:PORT/… document URLs.
//   adminToken      if set, /test/* on the authorization server requires
//                   "Authorization: Bearer <adminToken>".
//   asPort, mcpPort  the 127.0.0.1 ports of the two origins (default 0: free ports; the quick
//                   start, build/run-quickstart.sh, fixes them).
//
// Test hooks on the authorization server (POST, query parameter sub): /test/revoke revokes the
// account's grants (refresh gives invalid_grant, its access tokens get 401); /test/login-as
// makes the automatic sign-in pick sub.
// GET http://127.0.0.1:B/_log returns {"requests": [...]}: every request to /mcp with its HTTP
// method, JSON-RPC method, tool, the answer's status and WWW-Authenticate, and the token's sub,
// scopes and client_id when it was valid.
//
// Prints one line "READY {json}" on stdout once both origins serve, json being
// {"mode", "issuer", "mcp", "resource_metadata"}; logs go to stderr.
import crypto from 'node:crypto';
import http from 'node:http';
import express from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import Provider, { errors } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

function fail(msg) {
  process.stderr.write(`upstream: ${msg}\n`);
  process.exit(2);
}

let cfg;
try {
  cfg = JSON.parse(process.argv[2] ?? process.env.UPSTREAM_CONFIG ?? '{}');
} catch (err) {
  fail(`parse config: ${err.message}`);
}
const mode = cfg.mode ?? 'dcr';
if (mode !== 'dcr' && mode !== 'cimd') fail(`mode: want "dcr" or "cimd", got ${JSON.stringify(mode)}`);
const scope = cfg.scope ?? 'mcp';
const extraScope = cfg.extraScope ?? 'admin';
const accessTokenTTL = Number(cfg.accessTokenTTL ?? 3600);
const refreshTokenTTL = Number(cfg.refreshTokenTTL ?? 86400);
const adminToken = cfg.adminToken ?? '';
const users = new Map((cfg.users ?? [{ sub: 'alice' }]).map((u) => {
  if (typeof u.sub !== 'string' || u.sub === '') fail('every user needs a sub');
  return [u.sub, { sub: u.sub, email: u.email ?? `${u.sub}@example.com`, name: u.name ?? u.sub }];
}));
if (users.size === 0) fail('users must not be empty');
let loginAs = users.keys().next().value;
function port(key) {
  const p = cfg[key] ?? 0;
  if (!Number.isInteger(p) || p < 0 || p > 65535) fail(`${key}: want a port number, got ${JSON.stringify(p)}`);
  return p;
}
const asPort = port('asPort');
const mcpPort = port('mcpPort');

async function listen(server, p) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(p, '127.0.0.1', resolve);
  });
  return `http://127.0.0.1:${server.address().port}`;
}

const asServer = http.createServer();
const mcpServer = http.createServer();
const issuer = await listen(asServer, asPort);
const mcpOrigin = await listen(mcpServer, mcpPort);
const resource = `${mcpOrigin}/mcp`;

// ---------- the authorization server ----------

const grantsByAccount = new Map(); // sub -> Set of grant IDs
const revokedGrants = new Set();

function signingKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

// LoopbackDocuments is oidc-provider's in-memory storage, except that (with
// loopbackHttpClientIds) a Client looked up by an http://127.0.0.1 URL is that URL's client ID
// metadata document.
class LoopbackDocuments extends MemoryAdapter {
  async find(id) {
    if (this.model === 'Client' && cfg.loopbackHttpClientIds && mode === 'cimd' && /^http:\/\/127\.0\.0\.1:\d+\/[^?#]*$/.test(id)) {
      return fetchLoopbackDocument(id);
    }
    return super.find(id);
  }
}

async function fetchLoopbackDocument(id) {
  const refuse = (why) => {
    process.stderr.write(`upstream: client ID metadata document ${id}: ${why}\n`);
    return undefined;
  };
  let res;
  try {
    res = await fetch(id, { redirect: 'manual', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(2500) });
  } catch (err) {
    return refuse(`fetch: ${err.message}`);
  }
  const text = await res.text();
  if (res.status !== 200) return refuse(`status ${res.status}`);
  if (text.length > 5 * 1024) return refuse('larger than 5 KiB');
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    return refuse('not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return refuse('not a JSON object');
  if (doc.client_id !== id) return refuse(`client_id ${JSON.stringify(doc.client_id)} is not the document's URL`);
  if ('client_secret' in doc || (doc.token_endpoint_auth_method ?? 'none') !== 'none') return refuse('not a public client');
  return doc;
}

const provider = new Provider(issuer, {
  adapter: LoopbackDocuments,
  jwks: { keys: [signingKey()] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  findAccount: (_ctx, id) => (users.has(id) ? { accountId: id, claims: async () => ({ ...users.get(id) }) } : undefined),
  claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
  // The resource's scopes are listed so that registration requests naming them are accepted.
  scopes: ['openid', 'offline_access', 'profile', 'email', scope, extraScope],
  rotateRefreshToken: true,
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  expiresWithSession: async () => false,
  extraTokenClaims: async (_ctx, token) => ({ gid: token.grantId }),
  ttl: {
    AccessToken: accessTokenTTL,
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: refreshTokenTTL,
    Grant: refreshTokenTTL,
    Interaction: 600,
    Session: 86400,
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  // Client ID metadata documents live on loopback in the tests; oidc-provider's own fetch
  // refuses special-use addresses (its SSRF guard), so this fixture fetches without it.
  fetch: (url, options) => globalThis.fetch(url, { ...options, dispatcher: undefined }),
  features: {
    devInteractions: { enabled: false },
    revocation: { enabled: true },
    registration: { enabled: mode === 'dcr' },
    clientIdMetadataDocument: { enabled: mode === 'cimd', ack: 'draft-02' },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator.replace(/\/$/, '') !== resource) throw new errors.InvalidTarget(`resource ${indicator} is not known`);
        return {
          scope: `${scope} ${extraScope}`,
          audience: resource,
          accessTokenTTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  renderError: async (ctx, out) => {
    ctx.type = 'json';
    ctx.body = { error: out.error, error_description: out.error_description };
  },
});
provider.proxy = false;
provider.on('grant.saved', (grant) => {
  if (!grantsByAccount.has(grant.accountId)) grantsByAccount.set(grant.accountId, new Set());
  grantsByAccount.get(grant.accountId).add(grant.jti);
});
provider.on('grant.revoked', (_ctx, grantId) => revokedGrants.add(grantId));
for (const ev of ['server_error', 'grant.error', 'authorization.error', 'registration_create.error', 'revocation.error']) {
  provider.on(ev, (_ctx, err) => process.stderr.write(`upstream: ${ev}: ${err?.message ?? ''} ${err?.error_description ?? ''}\n`));
}

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

// interaction signs the user in and grants what the client asked for, with no page.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const sub = users.has(params.login_hint) ? params.login_hint : loginAs;
    await provider.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = (details.grantId && await provider.Grant.find(details.grantId))
    || new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
}

async function testHook(req, res, url) {
  const got = Buffer.from(req.headers.authorization ?? '');
  const want = Buffer.from(`Bearer ${adminToken}`);
  if (adminToken !== '' && (got.length !== want.length || !crypto.timingSafeEqual(got, want))) {
    send(res, 401, { error: 'unauthorized' });
    return;
  }
  const sub = url.searchParams.get('sub') ?? '';
  if (req.method !== 'POST' || !users.has(sub)) {
    send(res, 400, { error: 'want POST with a known sub' });
    return;
  }
  if (url.pathname === '/test/login-as') {
    loginAs = sub;
    send(res, 200, { login_as: sub });
  } else if (url.pathname === '/test/revoke') {
    let n = 0;
    for (const id of grantsByAccount.get(sub) ?? []) {
      revokedGrants.add(id);
      const grant = await provider.Grant.find(id);
      if (grant) {
        await grant.destroy();
        n += 1;
      }
    }
    grantsByAccount.delete(sub);
    send(res, 200, { sub, revoked_grants: n });
  } else {
    send(res, 404, { error: 'unknown test hook' });
  }
}

const providerCallback = provider.callback();
asServer.on('request', (req, res) => {
  const url = new URL(req.url ?? '/', issuer);
  const guard = (p) => p.catch((err) => {
    process.stderr.write(`upstream: ${req.method} ${url.pathname}: ${err.stack ?? err}\n`);
    if (!res.headersSent) send(res, err.statusCode ?? 500, { error: err.error ?? 'server_error', error_description: err.error_description ?? err.message });
    else res.destroy();
  });
  if (url.pathname.startsWith('/interaction/')) guard(interaction(req, res));
  else if (url.pathname.startsWith('/test/')) guard(testHook(req, res, url));
  else providerCallback(req, res);
});

// ---------- the MCP server ----------

const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
const verifier = {
  async verifyAccessToken(token) {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer, audience: resource, typ: 'at+jwt', algorithms: ['RS256'] }));
    } catch (err) {
      throw new InvalidTokenError(`token refused: ${err.code ?? err.message}`);
    }
    if (revokedGrants.has(payload.gid)) throw new InvalidTokenError('token refused: its grant was revoked');
    return {
      token,
      clientId: String(payload.client_id ?? ''),
      scopes: String(payload.scope ?? '').split(' ').filter(Boolean),
      expiresAt: payload.exp,
      resource: new URL(resource),
      extra: { sub: payload.sub },
    };
  },
};
const resourceMetadataUrl = getOAuthProtectedResourceMetadataUrl(new URL(resource));
const needScope = requireBearerAuth({ verifier, requiredScopes: [scope], resourceMetadataUrl, expectedResource: new URL(resource) });
const needExtraScope = requireBearerAuth({ verifier, requiredScopes: [scope, extraScope], resourceMetadataUrl, expectedResource: new URL(resource) });

function caller(authInfo) {
  return { sub: authInfo?.extra?.sub ?? '', scopes: authInfo?.scopes ?? [], client_id: authInfo?.clientId ?? '', resource };
}

function newMcpServer() {
  const server = new McpServer({ name: 'upstream-authed-mcp', version: '1.0.0' });
  // A tool without an input schema gets only the request context.
  const whoami = (needs) => async (extra) => {
    const who = caller(extra.authInfo);
    const missing = needs.filter((s) => !who.scopes.includes(s));
    if (missing.length) return { isError: true, content: [{ type: 'text', text: `missing scope ${missing.join(' ')}` }] };
    return { content: [{ type: 'text', text: JSON.stringify(who) }] };
  };
  server.registerTool('whoami', { description: `Returns the caller's subject, scopes and client (needs ${scope}).` }, whoami([scope]));
  server.registerTool('whoami_admin', { description: `Like whoami; needs ${scope} ${extraScope}.` }, whoami([scope, extraScope]));
  return server;
}

// callsTool tells whether a JSON-RPC body (or batch) calls the tool name.
function callsTool(body, name) {
  return [body].flat().some((m) => m?.method === 'tools/call' && m?.params?.name === name);
}

const requestLog = [];
const app = express();
app.use(mcpAuthMetadataRouter({
  oauthMetadata: await (await fetch(`${issuer}/.well-known/openid-configuration`)).json(),
  resourceServerUrl: new URL(resource),
  scopesSupported: [scope, extraScope],
  resourceName: 'upstream-authed-mcp',
}));
app.get('/_log', (_req, res) => res.json({ requests: requestLog }));
app.use('/mcp', express.json({ limit: '1mb' }), (req, res, next) => {
  const entry = { http_method: req.method, rpc_method: '', tool: '' };
  const first = [req.body].flat()[0];
  if (typeof first?.method === 'string') entry.rpc_method = first.method;
  if (typeof first?.params?.name === 'string' && entry.rpc_method === 'tools/call') entry.tool = first.params.name;
  res.on('finish', () => {
    requestLog.push({ ...entry, status: res.statusCode, www_authenticate: res.get('www-authenticate') ?? '', ...(req.auth ? caller(req.auth) : {}) });
  });
  (callsTool(req.body, 'whoami_admin') ? needExtraScope : needScope)(req, res, next);
});
app.all('/mcp', async (req, res) => {
  const server = newMcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (err) {
    process.stderr.write(`upstream: /mcp: ${err.stack ?? err}\n`);
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null });
  }
});
mcpServer.on('request', app);

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => process.exit(0));
}
process.stdout.write(`READY ${JSON.stringify({ mode, issuer, mcp: resource, resource_metadata: resourceMetadataUrl })}\n`);
