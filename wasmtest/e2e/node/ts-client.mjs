// ts-client.mjs: the official MCP TypeScript SDK client flow, headless, for end-to-end tests.
//
// It connects to an MCP URL with Client + StreamableHTTPClientTransport and an in-memory
// OAuthClientProvider, so the SDK itself does: 401 -> protected resource metadata ->
// authorization server metadata -> dynamic client registration (unless --client-id) ->
// authorization request with PKCE. The "browser" is a headless one in this file (fetch with
// manual redirects and a cookie jar; it submits a consent form by clicking
// <button name=action value=approve>) that ends at this program's loopback callback, which
// receives the code. Then transport.finishAuth(code), reconnect, tools/list, tools/call, a
// forced refresh through the SDK's auth() with the stored refresh token, and tools/call again.
//
// Usage: node ts-client.mjs --url URL [--tool NAME] [--args JSON] [--scope S]
//          [--client-id ID [--client-secret S | env GATEWAY_E2E_CLIENT_SECRET]] [--client-name N]
//          [--client-metadata-url HTTPS-URL: the client's ID metadata document, used instead of
//           dynamic registration when the authorization server advertises support]
//          [--consent approve|deny] [--no-refresh] [--timeout MS] [--denied-tool NAME]
//          [--sdk sdk|client2] [--pin REVISION]
//          [--pause-before-refresh: print "PAUSE before-refresh" on stderr, wait for a line on stdin]
// Prints one JSON object on stdout (see `result` below) and exits 0 only if every step asked
// for succeeded.
import crypto from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '{}' },
    scope: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'client-name': { type: 'string', default: 'gateway-e2e-ts-client' },
    'client-metadata-url': { type: 'string' },
    consent: { type: 'string', default: 'approve' },
    'no-refresh': { type: 'boolean', default: false },
    'pause-before-refresh': { type: 'boolean', default: false },
    timeout: { type: 'string', default: '60000' },
    // A tool the gateway's policy denies, called after --tool: its answer (or the error the SDK
    // throws) is reported as denied_call (denied_call_error).
    'denied-tool': { type: 'string' },
    // The SDK: "sdk" (@modelcontextprotocol/sdk 1.x, 2025-11-25) or "client2"
    // (@modelcontextprotocol/client 2.x); --pin pins the 2.x client to a revision (2026-07-28).
    sdk: { type: 'string', default: 'sdk' },
    pin: { type: 'string' },
  },
  strict: true,
});

const { Client, StreamableHTTPClientTransport, auth, UnauthorizedError } = opt.sdk === 'client2'
  ? await import('@modelcontextprotocol/client')
  : {
    ...(await import('@modelcontextprotocol/sdk/client/index.js')),
    ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
    ...(await import('@modelcontextprotocol/sdk/client/auth.js')),
  };
// The client secret may also come from the environment, to keep it off the command line.
opt['client-secret'] ??= process.env.GATEWAY_E2E_CLIENT_SECRET || undefined;

const result = {
  ok: false,
  steps: [],
  server_url: opt.url ?? '',
  client_id: '',
  registered: false,
  tools: [],
  call: null,
  refreshed: false,
  access_token_changed: false,
  refresh_token_rotated: false,
  refresh_error: '',
  call_after_refresh: null,
  denied_call: null,
  denied_call_error: '',
  scope: '',
  error: '',
  browser: [],
};

function finish(code) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(code);
}

const timer = setTimeout(() => {
  result.error = `timed out after ${opt.timeout} ms`;
  finish(1);
}, Number(opt.timeout));
timer.unref();

// ---------- headless browser ----------

// CookieJar keeps cookies per host (not per port, like browsers), honouring Path and expiry.
class CookieJar {
  #byHost = new Map();

  store(url, setCookies) {
    const host = url.hostname;
    if (!this.#byHost.has(host)) this.#byHost.set(host, new Map());
    const jar = this.#byHost.get(host);
    for (const sc of setCookies) {
      const [pair, ...attrs] = sc.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let path = '/';
      let expires = Infinity;
      for (const a of attrs) {
        const [k, ...v] = a.trim().split('=');
        const key = k.toLowerCase();
        const val = v.join('=');
        if (key === 'path' && val.startsWith('/')) path = val;
        if (key === 'max-age') expires = Date.now() + Number(val) * 1000;
        if (key === 'expires' && expires === Infinity) {
          const t = Date.parse(val);
          if (!Number.isNaN(t)) expires = t;
        }
      }
      const id = `${name};${path}`;
      if (expires <= Date.now()) jar.delete(id);
      else jar.set(id, { name, value, path, expires });
    }
  }

  header(url) {
    const jar = this.#byHost.get(url.hostname);
    if (!jar) return '';
    const now = Date.now();
    const out = [];
    for (const c of jar.values()) {
      if (c.expires <= now) continue;
      const p = c.path.endsWith('/') ? c.path : `${c.path}/`;
      if (url.pathname === c.path || url.pathname.startsWith(p)) out.push(`${c.name}=${c.value}`);
    }
    return out.join('; ');
  }
}

function decodeEntities(s) {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|#39);/gi, (m, e) => {
    const k = e.toLowerCase();
    if (k.startsWith('#x')) return String.fromCodePoint(parseInt(k.slice(2), 16));
    if (k.startsWith('#')) return String.fromCodePoint(Number(k.slice(1)));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[k] ?? m;
  });
}

function parseAttrs(s) {
  const attrs = {};
  const re = /([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
  let m;
  while ((m = re.exec(s)) !== null) {
    const k = m[1].toLowerCase();
    if (!(k in attrs)) attrs[k] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return attrs;
}

// parseForms finds forms, their fields and submit buttons (a small scanner for consent pages).
function parseForms(html, base) {
  // A browser that runs scripts ignores <noscript> (a form_post page's fallback button).
  const clean = html.replace(/<!--[\s\S]*?-->/g, '').replace(/<(script|style|noscript)\b[\s\S]*?<\/\1\s*>/gi, '');
  const forms = [];
  const formRe = /<form\b([^>]*)>([\s\S]*?)(?:<\/form\s*>|$)/gi;
  let fm;
  while ((fm = formRe.exec(clean)) !== null) {
    const fa = parseAttrs(fm[1]);
    const form = {
      action: new URL(fa.action?.trim() ? fa.action.trim() : base, base),
      method: (fa.method ?? 'get').toUpperCase() === 'POST' ? 'POST' : 'GET',
      fields: [],
      buttons: [],
    };
    const tagRe = /<(input|button)\b([^>]*)>/gi;
    let tm;
    while ((tm = tagRe.exec(fm[2])) !== null) {
      const a = parseAttrs(tm[2]);
      const type = (a.type ?? (tm[1].toLowerCase() === 'button' ? 'submit' : 'text')).toLowerCase();
      if (type === 'submit' || type === 'image') form.buttons.push({ name: a.name ?? '', value: a.value ?? '' });
      else if (type === 'checkbox' || type === 'radio') {
        if ('checked' in a && a.name) form.fields.push([a.name, a.value ?? 'on']);
      } else if (!['button', 'reset', 'file'].includes(type) && a.name) form.fields.push([a.name, a.value ?? '']);
    }
    forms.push(form);
  }
  return forms;
}

class HeadlessBrowser {
  constructor(consentValue) {
    this.jar = new CookieJar();
    this.consent = { name: 'action', value: consentValue };
    this.history = [];
  }

  async #request(method, url, body) {
    const headers = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'user-agent': 'gateway-e2e-ts-browser/1' };
    const cookie = this.jar.header(url);
    if (cookie) headers.cookie = cookie;
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method, headers, body, redirect: 'manual' });
    this.jar.store(url, res.headers.getSetCookie());
    this.history.push(`${method} ${url.origin}${url.pathname} -> ${res.status}`);
    return res;
  }

  // open follows redirects and submits consent forms until a request to callbackPrefix has been
  // made (the callback server has then received the code), returning that URL.
  async open(startUrl, callbackPrefix) {
    let url = new URL(startUrl);
    let method = 'GET';
    let body;
    for (let step = 0; step < 40; step++) {
      const res = await this.#request(method, url, body);
      if (url.href.startsWith(callbackPrefix)) {
        await res.arrayBuffer();
        return url;
      }
      if ([301, 302, 303, 307, 308].includes(res.status)) {
        await res.arrayBuffer();
        const loc = res.headers.get('location');
        if (!loc) throw new Error(`${res.status} without Location at ${url}`);
        const next = new URL(loc, url);
        if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new Error(`redirect to ${next.protocol} URL`);
        if (res.status !== 307 && res.status !== 308) {
          method = 'GET';
          body = undefined;
        }
        url = next;
        continue;
      }
      const text = (await res.text()).slice(0, 1 << 20);
      if (res.status >= 400) throw new Error(`${url.origin}${url.pathname} answered ${res.status}: ${text.slice(0, 300)}`);
      const forms = parseForms(text, url);
      let form = forms.find((f) => f.buttons.some((b) => b.name === this.consent.name && b.value === this.consent.value));
      let button = form ? { ...this.consent } : undefined;
      if (!form && forms.length === 1 && forms[0].buttons.length === 0) form = forms[0]; // form_post
      if (!form) throw new Error(`page ${url.origin}${url.pathname} (${res.status}) has no form to submit: ${text.slice(0, 300)}`);
      const data = new URLSearchParams(form.fields);
      if (button && button.name) data.append(button.name, button.value);
      if (form.method === 'GET') {
        url = new URL(form.action);
        url.search = data.toString();
        method = 'GET';
        body = undefined;
      } else {
        url = form.action;
        method = 'POST';
        body = data.toString();
      }
    }
    throw new Error('too many browser steps');
  }
}

// ---------- loopback callback and OAuth client provider ----------

// startCallbackServer listens on a loopback port; `last` holds the query of the latest request
// to /callback (the browser makes that request before open() returns).
async function startCallbackServer() {
  const cb = { server: null, url: '', last: null };
  cb.server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (u.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    cb.last = Object.fromEntries(u.searchParams);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('Authorization complete; you may close this window.');
  });
  await new Promise((r) => cb.server.listen(0, '127.0.0.1', r));
  cb.url = `http://127.0.0.1:${cb.server.address().port}/callback`;
  return cb;
}

function callbackError(params) {
  return params?.error ? `authorization failed: ${params.error} ${params.error_description ?? ''}`.trim() : '';
}

class MemoryProvider {
  constructor(redirectUrl, browser) {
    this._redirectUrl = redirectUrl;
    this._browser = browser;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._discovery = undefined;
    this.state_ = undefined;
    this.authorizations = 0;
    if (opt['client-id']) {
      this._client = { client_id: opt['client-id'] };
      if (opt['client-secret']) this._client.client_secret = opt['client-secret'];
    }
  }

  get redirectUrl() { return this._redirectUrl; }

  get clientMetadataUrl() { return opt['client-metadata-url']; }

  get clientMetadata() {
    const md = {
      client_name: opt['client-name'],
      redirect_uris: [this._redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: opt['client-secret'] ? 'client_secret_basic' : 'none',
    };
    if (opt.scope) md.scope = opt.scope;
    return md;
  }

  state() {
    this.state_ = crypto.randomBytes(16).toString('base64url');
    return this.state_;
  }

  clientInformation() { return this._client; }

  saveClientInformation(info) {
    if (!opt['client-id'] && info.client_id !== opt['client-metadata-url']) result.registered = true;
    this._client = info;
    result.client_id = info.client_id;
  }

  tokens() { return this._tokens; }

  saveTokens(tokens) {
    this._tokens = tokens;
    if (tokens.scope) result.scope = tokens.scope;
  }

  async redirectToAuthorization(authorizationUrl) {
    this.authorizations += 1;
    result.steps.push('authorization-request');
    const u = new URL(authorizationUrl);
    result.authorization_params = Object.fromEntries([...u.searchParams].filter(([k]) => k !== 'code_challenge' && k !== 'state'));
    await this._browser.open(authorizationUrl.href, this._redirectUrl);
  }

  saveCodeVerifier(v) { this._verifier = v; }

  codeVerifier() {
    if (!this._verifier) throw new Error('no code verifier saved');
    return this._verifier;
  }

  saveDiscoveryState(s) { this._discovery = s; }

  discoveryState() { return this._discovery; }

  invalidateCredentials(scope) {
    result.steps.push(`invalidate-${scope}`);
    if (scope === 'all' || scope === 'client') this._client = opt['client-id'] ? this._client : undefined;
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this._discovery = undefined;
  }
}

// ---------- the flow ----------

function summarize(callResult) {
  if (!callResult) return null;
  return {
    is_error: callResult.isError === true,
    content: (callResult.content ?? []).map((c) => (c.type === 'text' ? { type: 'text', text: c.text } : { type: c.type })),
  };
}

// pause lets the test driving this program act (e.g. disable the account) at a fixed point.
function pause(name) {
  process.stderr.write(`PAUSE ${name}\n`);
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d;
      if (!buf.includes('\n')) return;
      process.stdin.off('data', onData);
      process.stdin.pause();
      resolve();
    };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', onData);
    process.stdin.once('end', () => reject(new Error(`stdin closed while paused at ${name}`)));
  });
}

async function main() {
  if (!opt.url) throw new Error('--url is required');
  const serverUrl = new URL(opt.url);
  let toolArgs;
  try {
    toolArgs = JSON.parse(opt.args);
  } catch (err) {
    throw new Error(`--args is not JSON: ${err.message}`);
  }
  const browser = new HeadlessBrowser(opt.consent);
  const cb = await startCallbackServer();
  const provider = new MemoryProvider(cb.url, browser);
  const clientOptions = opt.pin ? { versionNegotiation: { mode: { pin: opt.pin } } } : undefined;
  const client = new Client({ name: 'gateway-e2e-ts-client', version: '1.0.0' }, clientOptions);
  try {
    let transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
    try {
      await client.connect(transport);
      result.steps.push('connected-without-authorization');
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
      result.steps.push('unauthorized');
      const params = cb.last;
      if (!params) throw new Error('the callback received nothing');
      if (params.error) throw new Error(callbackError(params));
      if (params.state !== provider.state_) throw new Error('callback state does not match');
      if (!params.code) throw new Error('callback has no code');
      result.steps.push('callback');
      await transport.finishAuth(params.code, params.iss);
      result.steps.push('token');
      transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
      await client.connect(transport);
      result.steps.push('connected');
    }
    const tools = await client.listTools();
    result.tools = tools.tools.map((t) => t.name);
    result.steps.push('tools/list');
    if (opt.tool) {
      result.call = summarize(await client.callTool({ name: opt.tool, arguments: toolArgs }));
      result.steps.push('tools/call');
    }
    if (opt['denied-tool']) {
      try {
        result.denied_call = summarize(await client.callTool({ name: opt['denied-tool'], arguments: toolArgs }));
      } catch (e) {
        result.denied_call_error = String(e?.message ?? e);
      }
      result.steps.push('tools/call-denied');
    }
    if (!opt['no-refresh']) {
      if (opt['pause-before-refresh']) await pause('before-refresh');
      const before = provider.tokens();
      if (!before?.refresh_token) throw new Error('no refresh token was issued, cannot refresh');
      const authorizationsBefore = provider.authorizations;
      const stepsBefore = result.steps.length;
      const outcome = await auth(provider, { serverUrl }).catch((err) => {
        result.refresh_error = err?.errorCode ?? err?.name ?? String(err);
        throw err;
      });
      // auth() answers invalid_grant by dropping the tokens and starting a new authorization.
      if (result.steps.slice(stepsBefore).includes('invalidate-tokens')) result.refresh_error = 'invalid_grant';
      const after = provider.tokens();
      if (outcome !== 'AUTHORIZED' || provider.authorizations !== authorizationsBefore) {
        const why = provider.authorizations !== authorizationsBefore ? callbackError(cb.last) : '';
        throw new Error(`refresh did not succeed (auth() returned ${outcome})${why ? `; then ${why}` : ''}`);
      }
      result.refreshed = true;
      result.access_token_changed = after.access_token !== before.access_token;
      result.refresh_token_rotated = Boolean(after.refresh_token) && after.refresh_token !== before.refresh_token;
      result.steps.push('refresh');
      if (!result.access_token_changed) throw new Error('refresh returned the same access token');
      if (opt.tool) {
        result.call_after_refresh = summarize(await client.callTool({ name: opt.tool, arguments: toolArgs }));
        result.steps.push('tools/call-after-refresh');
      } else {
        await client.listTools();
        result.steps.push('tools/list-after-refresh');
      }
    }
    result.ok = true;
  } finally {
    result.browser = browser.history;
    await client.close().catch(() => {});
    cb.server.close();
  }
}

main().then(() => finish(0), (err) => {
  result.error = err?.message ?? String(err);
  finish(1);
});
