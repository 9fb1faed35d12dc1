// idp.mjs: a real OpenID provider (oidc-provider) on loopback for the end-to-end tests.
//
// It logs a configured test user in automatically (no login page) and grants consent
// automatically, so a plain HTTP client that follows redirects with a cookie jar completes the
// authorization-code flow. Optionally it shows an HTML consent form instead (consentForm: true)
// so the tests' headless browsers can be checked against a real form.
//
// Usage: node idp.mjs [config.json | JSON]   (or the config in env IDP_CONFIG)
// Config (every field optional):
//   port            TCP port on 127.0.0.1; 0 (default) picks a free one. Issuer is
//                   http://127.0.0.1:<port> (no trailing slash).
//   clients         [{client_id, client_secret?, redirect_uris, token_endpoint_auth_method?,
//                     grant_types?, scope?}]; no secret means a public client (auth method none).
//   users           [{sub, email, email_verified, name, groups}]; default one user "alice"
//                   (alice@example.com, groups ["engineering"]). The first user is the one the
//                   automatic login picks, unless login_hint names another or /test/login-as
//                   changed it.
//   consentForm     false (default): consent is automatic; true: an HTML form with
//                   <button name="action" value="approve|deny">.
//   accessTokenTTL, idTokenTTL, refreshTokenTTL   seconds (defaults 3600, 3600, 86400).
//   registration    true: open dynamic client registration (RFC 7591), for using this provider
//                   as an MCP authorization server in harness self-tests.
//   resources       list of URL prefixes accepted as RFC 8707 resource indicators; a token for
//                   such a resource is a JWT whose aud is the resource (for MCP self-tests).
//   resourceScope   space-separated scopes a resource accepts (default "mcp").
//   adminToken      if set, /test/* requires "Authorization: Bearer <adminToken>".
//   issuerPath      path of the issuer, to play a provider whose issuer has one: okta
//                   "/oauth2/default", azure "/<tenant>/v2.0", cognito "/<pool-id>", onelogin
//                   "/oidc/2", ping "/<env>/as"; "/" gives an issuer ending in a slash (auth0).
//                   The provider's endpoints are served under it.
//   groupsClaim     name of the claim carrying the users' groups (default "groups"; cognito
//                   "cognito:groups").
//   scopeClaims     {scope: [claims]} replacing the default release of claims by scope (openid:
//                   sub; email: email, email_verified; profile: name; groups: groups), e.g.
//                   {"openid": ["sub", "tid", "groups"]} for a provider that puts groups in every
//                   ID token (azure with groupMembershipClaims).
// A user may carry "claims": {name: value} added to (or replacing) its claims (azure's tid,
// apple's email_verified as the string "true").
//   strictClientAuth true: the token, revocation and introspection endpoints accept a client
//                   only with its registered method: a client_secret_basic client sending
//                   its secret in the body, or a client_secret_post client sending HTTP
//                   Basic, gets 401 invalid_client (oidc-provider itself takes either).
//
// Refresh tokens are issued when the client may use the refresh_token grant and offline_access
// was requested; a request asking for offline_access without prompt=consent gets consent added
// (so offline_access is not silently dropped). Refresh tokens rotate on every use.
//
// Test hooks (POST, query parameter sub):
//   /test/disable   the account is disabled and its grants revoked: refresh gives invalid_grant,
//                   logins are refused with access_denied.
//   /test/enable    undoes disable (grants stay revoked).
//   /test/revoke    revokes the account's grants only (refresh gives invalid_grant).
//   /test/login-as  the automatic login picks this user from now on.
//   /test/down, /test/up (no sub)  every other endpoint answers 503 (the provider is down), or
//                   serves again.
// GET /test/state returns the users, who is disabled and who logs in.
//
// Prints "READY http://127.0.0.1:<port>" on stdout once it accepts connections; logs go to stderr.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

function fail(msg) {
  process.stderr.write(`idp: ${msg}\n`);
  process.exit(2);
}

function loadConfig() {
  let raw = process.argv[2] ?? process.env.IDP_CONFIG ?? '{}';
  if (!raw.trimStart().startsWith('{')) {
    try {
      raw = fs.readFileSync(raw, 'utf8');
    } catch (err) {
      fail(`read config file ${raw}: ${err.message}`);
    }
  }
  try {
    return JSON.parse(raw);
  } catch (err) {
    return fail(`parse config: ${err.message}`);
  }
}

const cfg = loadConfig();
const port = Number(cfg.port ?? process.env.IDP_PORT ?? 0);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`bad port ${cfg.port}`);

const users = new Map();
for (const u of cfg.users ?? [{
  sub: 'alice', email: 'alice@example.com', email_verified: true, name: 'Alice Example', groups: ['engineering'],
}]) {
  if (typeof u.sub !== 'string' || u.sub === '') fail('every user needs a sub');
  users.set(u.sub, {
    sub: u.sub,
    email: u.email ?? `${u.sub}@example.com`,
    email_verified: u.email_verified ?? true,
    name: u.name ?? u.sub,
    groups: Array.isArray(u.groups) ? u.groups.map(String) : [],
    claims: u.claims && typeof u.claims === 'object' ? u.claims : {},
  });
}
if (users.size === 0) fail('users must not be empty');
const disabled = new Set();
let providerDown = false;
let loginAs = users.keys().next().value;
const grantsByAccount = new Map(); // accountId -> Set of grant ids
const sessionsByAccount = new Map(); // accountId -> Set of session ids

const clients = (cfg.clients ?? []).map((c) => {
  if (typeof c.client_id !== 'string' || c.client_id === '') fail('every client needs a client_id');
  if (!Array.isArray(c.redirect_uris) || c.redirect_uris.length === 0) fail(`client ${c.client_id}: redirect_uris required`);
  const out = {
    client_id: c.client_id,
    redirect_uris: c.redirect_uris,
    grant_types: c.grant_types ?? ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: c.token_endpoint_auth_method ?? (c.client_secret ? 'client_secret_basic' : 'none'),
  };
  if (c.client_secret) out.client_secret = c.client_secret;
  if (c.scope) out.scope = c.scope;
  if (c.redirect_uris.every((u) => /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(u))) {
    // Loopback http redirect URIs are what native clients (and our tests) use.
    out.application_type = 'native';
  }
  return out;
});

const resourcePrefixes = (cfg.resources ?? []).map(String);
const resourceScope = cfg.resourceScope ?? 'mcp';
const accessTokenTTL = Number(cfg.accessTokenTTL ?? 3600);
const idTokenTTL = Number(cfg.idTokenTTL ?? 3600);
const refreshTokenTTL = Number(cfg.refreshTokenTTL ?? 86400);
const adminToken = cfg.adminToken ?? process.env.IDP_ADMIN_TOKEN ?? '';
const issuerPath = typeof cfg.issuerPath === 'string' ? cfg.issuerPath : '';
if (issuerPath !== '' && !issuerPath.startsWith('/')) fail('issuerPath must start with /');
const mountPath = issuerPath.endsWith('/') ? issuerPath.slice(0, -1) : issuerPath;
const groupsClaim = typeof cfg.groupsClaim === 'string' && cfg.groupsClaim !== '' ? cfg.groupsClaim : 'groups';
const scopeClaims = cfg.scopeClaims ?? {
  openid: ['sub'],
  email: ['email', 'email_verified'],
  profile: ['name'],
  groups: [groupsClaim],
};

function signingKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: crypto.randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

function findAccount(_ctx, id) {
  const u = users.get(id);
  if (!u || disabled.has(id)) return undefined;
  return {
    accountId: id,
    async claims() {
      const { claims: extra, groups, ...rest } = u;
      return { ...rest, [groupsClaim]: [...groups], ...extra };
    },
  };
}

function resourceAllowed(resource) {
  return resourcePrefixes.some((p) => resource === p || resource.startsWith(p.endsWith('/') ? p : `${p}/`));
}

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const origin = `http://127.0.0.1:${server.address().port}`;
const issuer = origin + issuerPath;

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [signingKey()] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  findAccount,
  claims: scopeClaims,
  // Resource scopes are listed too, so that registration requests naming them are accepted.
  scopes: [...new Set(['openid', 'offline_access', 'profile', 'email', 'groups',
    ...(resourcePrefixes.length ? resourceScope.split(' ').filter(Boolean) : [])])],
  conformIdTokenClaims: false,
  pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
  rotateRefreshToken: true,
  ttl: {
    AccessToken: accessTokenTTL,
    AuthorizationCode: 60,
    IdToken: idTokenTTL,
    RefreshToken: refreshTokenTTL,
    Grant: refreshTokenTTL,
    Interaction: 600,
    Session: 86400,
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    revocation: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: cfg.registration === true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => (oneOf ? oneOf[0] : undefined),
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!resourceAllowed(resource)) throw new errors.InvalidTarget(`resource ${resource} is not known`);
        return {
          scope: resourceScope,
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

function track(map, accountId, id) {
  if (!accountId) return;
  if (!map.has(accountId)) map.set(accountId, new Set());
  map.get(accountId).add(id);
}
provider.on('grant.saved', (grant) => track(grantsByAccount, grant.accountId, grant.jti));
provider.on('session.saved', (session) => track(sessionsByAccount, session.accountId, session.jti));
for (const ev of ['server_error', 'grant.error', 'authorization.error']) {
  provider.on(ev, (...args) => {
    const err = args.find((a) => a instanceof Error);
    process.stderr.write(`idp: ${ev}: ${err ? `${err.name}: ${err.message} ${err.error_description ?? ''}` : ''}\n`);
  });
}

async function revokeGrants(sub) {
  const ids = grantsByAccount.get(sub) ?? new Set();
  let n = 0;
  for (const id of ids) {
    const g = await provider.Grant.find(id);
    if (g) {
      await g.destroy();
      n += 1;
    }
  }
  grantsByAccount.delete(sub);
  return n;
}

// endSessions logs the account out everywhere: a session that names a disabled account would
// otherwise skip the login prompt.
async function endSessions(sub) {
  for (const id of sessionsByAccount.get(sub) ?? new Set()) {
    const session = await provider.Session.find(id);
    if (session) await session.destroy();
  }
  sessionsByAccount.delete(sub);
}

function send(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/html; charset=utf-8' : 'application/json',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

async function readForm(req) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > 64 * 1024) throw new Error('form too large');
    chunks.push(c);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

async function finishConsent(req, res, details) {
  const { prompt: { details: missing }, params, session } = details;
  let grant;
  if (details.grantId) {
    grant = await provider.Grant.find(details.grantId);
  }
  if (!grant) {
    grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  }
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  const consent = details.grantId ? {} : { grantId };
  await provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
}

async function handleInteraction(req, res, url) {
  const parts = url.pathname.split('/').filter(Boolean); // ['interaction', uid, ('confirm')]
  const details = await provider.interactionDetails(req, res);
  if (parts[1] !== details.uid) {
    send(res, 400, { error: 'invalid_request', error_description: 'interaction uid mismatch' });
    return;
  }
  const { prompt, params } = details;
  if (prompt.name === 'login') {
    const hinted = typeof params.login_hint === 'string' && users.has(params.login_hint) ? params.login_hint : '';
    const sub = hinted || loginAs;
    if (disabled.has(sub)) {
      await provider.interactionFinished(req, res, {
        error: 'access_denied', error_description: 'the account is disabled',
      }, { mergeWithLastSubmission: false });
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name !== 'consent') {
    send(res, 400, { error: 'invalid_request', error_description: `unsupported prompt ${prompt.name}` });
    return;
  }
  if (!cfg.consentForm) {
    await finishConsent(req, res, details);
    return;
  }
  if (req.method === 'POST' && parts[2] === 'confirm') {
    const form = await readForm(req);
    if (form.get('uid') !== details.uid) {
      send(res, 400, { error: 'invalid_request', error_description: 'form uid mismatch' });
      return;
    }
    if (form.get('action') === 'approve') {
      await finishConsent(req, res, details);
      return;
    }
    await provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'the user denied the request',
    }, { mergeWithLastSubmission: true });
    return;
  }
  const scopes = [...(prompt.details.missingOIDCScope ?? []),
    ...Object.values(prompt.details.missingResourceScopes ?? {}).flat()];
  send(res, 200, `<!doctype html>
<html><head><title>Consent</title></head><body>
<h1>Allow ${escapeHTML(params.client_id)}?</h1>
<p>Scopes: ${escapeHTML(scopes.join(' '))}</p>
<form method="post" action="/interaction/${escapeHTML(details.uid)}/confirm">
<input type="hidden" name="uid" value="${escapeHTML(details.uid)}">
<button type="submit" name="action" value="deny">Deny</button>
<button type="submit" name="action" value="approve">Approve</button>
</form></body></html>`);
}

async function handleTest(req, res, url) {
  if (adminToken !== '') {
    const got = Buffer.from(req.headers.authorization ?? '');
    const want = Buffer.from(`Bearer ${adminToken}`);
    if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) {
      send(res, 401, { error: 'unauthorized' });
      return;
    }
  }
  const op = url.pathname.slice('/test/'.length);
  if (op === 'state' && req.method === 'GET') {
    send(res, 200, { users: [...users.keys()], disabled: [...disabled], login_as: loginAs });
    return;
  }
  if (req.method !== 'POST') {
    send(res, 405, { error: 'method_not_allowed' });
    return;
  }
  if (op === 'down' || op === 'up') {
    providerDown = op === 'down';
    send(res, 200, { down: providerDown });
    return;
  }
  const sub = url.searchParams.get('sub') ?? '';
  if (!users.has(sub)) {
    send(res, 404, { error: 'unknown_user', sub });
    return;
  }
  switch (op) {
    case 'disable': {
      disabled.add(sub);
      const revoked = await revokeGrants(sub);
      await endSessions(sub);
      send(res, 200, { sub, disabled: true, revoked_grants: revoked });
      return;
    }
    case 'enable':
      disabled.delete(sub);
      send(res, 200, { sub, disabled: false });
      return;
    case 'revoke':
      send(res, 200, { sub, revoked_grants: await revokeGrants(sub) });
      return;
    case 'login-as':
      loginAs = sub;
      send(res, 200, { login_as: sub });
      return;
    default:
      send(res, 404, { error: 'unknown_test_hook', op });
  }
}

// addConsentForOfflineAccess makes a GET authorization request that asks for offline_access
// also carry prompt=consent, which oidc-provider requires before it keeps offline_access.
// dropSelectAccount plays a provider that knows prompt=select_account (azure, google): the
// account chooser is the automatic login, so the value is taken out before oidc-provider, which
// does not know it, would refuse the request.
function dropSelectAccount(req, url) {
  if (req.method !== 'GET' || url.pathname !== `${mountPath}/auth`) return;
  const prompt = (url.searchParams.get('prompt') ?? '').split(' ').filter(Boolean);
  if (!prompt.includes('select_account')) return;
  const rest = prompt.filter((p) => p !== 'select_account');
  if (rest.length) url.searchParams.set('prompt', rest.join(' '));
  else url.searchParams.delete('prompt');
  req.url = url.pathname + url.search;
}

function addConsentForOfflineAccess(req, url) {
  if (req.method !== 'GET' || url.pathname !== `${mountPath}/auth`) return;
  const scope = url.searchParams.get('scope') ?? '';
  if (!scope.split(' ').includes('offline_access')) return;
  const prompt = (url.searchParams.get('prompt') ?? '').split(' ').filter(Boolean);
  if (prompt.includes('consent') || prompt.includes('none')) return;
  prompt.push('consent');
  url.searchParams.set('prompt', prompt.join(' '));
  req.url = url.pathname + url.search;
}

// enforceClientAuthMethod reads a token endpoint request's body (handing it on as req.body,
// which oidc-provider then uses) and refuses a client authenticating with a method other than
// its registered one. It answers the request itself and returns false when it refuses.
async function enforceClientAuthMethod(req, res) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > 56 * 1024) {
      send(res, 413, { error: 'invalid_request', error_description: 'request body too large' });
      return false;
    }
    chunks.push(c);
  }
  const raw = Buffer.concat(chunks).toString('utf8');
  req.body = raw;
  const form = new URLSearchParams(raw);
  const authz = req.headers.authorization ?? '';
  const basic = /^basic /i.test(authz);
  let clientId = form.get('client_id') ?? '';
  if (basic) {
    const decoded = Buffer.from(authz.slice(6).trim(), 'base64').toString('utf8');
    clientId = decodeURIComponent(decoded.split(':')[0].replace(/\+/g, ' '));
  }
  const client = clients.find((c) => c.client_id === clientId);
  const method = client?.token_endpoint_auth_method;
  if ((method === 'client_secret_basic' && (!basic || form.has('client_secret')))
    || (method === 'client_secret_post' && basic)) {
    process.stderr.write(`idp: strictClientAuth: refused ${basic ? 'client_secret_basic' : 'client_secret_post'} for a ${method} client\n`);
    send(res, 401, { error: 'invalid_client', error_description: `this client must authenticate with ${method}` });
    return false;
  }
  return true;
}

const callback = provider.callback();
server.on('request', (req, res) => {
  let url;
  try {
    url = new URL(req.url ?? '/', issuer);
  } catch {
    send(res, 400, { error: 'invalid_request' });
    return;
  }
  if (process.env.IDP_DEBUG) process.stderr.write(`idp: ${req.method} ${url.pathname}\n`);
  const guard = (p) => p.catch((err) => {
    process.stderr.write(`idp: ${req.method} ${url.pathname}: ${err.stack ?? err}\n`);
    if (!res.headersSent) {
      send(res, err.statusCode ?? 500, { error: err.error ?? 'server_error', error_description: err.error_description ?? err.message });
    } else {
      res.destroy();
    }
  });
  if (url.pathname.startsWith('/interaction/')) {
    guard(handleInteraction(req, res, url));
    return;
  }
  if (url.pathname.startsWith('/test/')) {
    guard(handleTest(req, res, url));
    return;
  }
  if (providerDown) {
    send(res, 503, { error: 'temporarily_unavailable', error_description: 'the provider is down (test hook)' });
    return;
  }
  dropSelectAccount(req, url);
  addConsentForOfflineAccess(req, url);
  if (mountPath !== '') {
    // The issuer has a path: the provider is mounted there (it derives its URLs from
    // originalUrl minus url).
    if (url.pathname !== mountPath && !url.pathname.startsWith(`${mountPath}/`)) {
      send(res, 404, { error: 'not_found' });
      return;
    }
    req.originalUrl = req.url;
    req.url = req.url.slice(mountPath.length) || '/';
    if (req.url.startsWith('?')) req.url = `/${req.url}`;
  }
  const innerPath = new URL(req.url ?? '/', issuer).pathname;
  if (cfg.strictClientAuth && req.method === 'POST' && ['/token', '/token/revocation', '/token/introspection'].includes(innerPath)) {
    guard(enforceClientAuthMethod(req, res).then((ok) => { if (ok) callback(req, res); }));
    return;
  }
  callback(req, res);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
}
process.stdout.write(`READY ${issuer}\n`);
