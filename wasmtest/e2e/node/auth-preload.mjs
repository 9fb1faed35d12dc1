// auth-preload.mjs: a Node `--import` preload that makes every HTTP request of the process carry
// `Authorization: Bearer $GATEWAY_E2E_TOKEN`.
//
// The MCP conformance suite has no option to send headers, so the end-to-end tests run it with
//   node --import ./auth-preload.mjs .../conformance/dist/index.js server --url <gateway url>
// and the token reaches the gateway this way. It installs an undici global dispatcher (the one
// Node's built-in fetch and the npm undici package both use) with an interceptor that adds the
// header when the request has none.
//
// Environment:
//   GATEWAY_E2E_TOKEN         the bearer token (required; the preload fails loudly without it)
//   GATEWAY_E2E_TOKEN_ORIGIN  if set (e.g. http://127.0.0.1:8080), only requests to this exact
//                             origin get the header, so the token is not sent anywhere else
import http from 'node:http';
import https from 'node:https';
import { Agent, setGlobalDispatcher } from 'undici';

const token = process.env.GATEWAY_E2E_TOKEN ?? '';
if (token === '') {
  process.stderr.write('auth-preload: GATEWAY_E2E_TOKEN is empty; refusing to run without a token\n');
  process.exit(2);
}
if (/[\r\n]/.test(token)) {
  process.stderr.write('auth-preload: GATEWAY_E2E_TOKEN contains a line break\n');
  process.exit(2);
}
const onlyOrigin = process.env.GATEWAY_E2E_TOKEN_ORIGIN ?? '';
const value = `Bearer ${token}`;

function originOf(o) {
  try {
    return new URL(String(o)).origin;
  } catch {
    return '';
  }
}

// withAuth returns headers in the same shape undici accepts (object, flat array or iterable of
// pairs) with an Authorization header added unless one is present.
function withAuth(headers) {
  if (headers == null) {
    return { authorization: value };
  }
  if (Array.isArray(headers)) {
    // Either a flat [k, v, k, v] list or a list of [k, v] pairs.
    if (headers.length > 0 && Array.isArray(headers[0])) {
      if (headers.some(([k]) => String(k).toLowerCase() === 'authorization')) return headers;
      return [...headers, ['authorization', value]];
    }
    for (let i = 0; i < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === 'authorization') return headers;
    }
    return [...headers, 'authorization', value];
  }
  if (typeof headers[Symbol.iterator] === 'function' && typeof headers !== 'string') {
    const pairs = [...headers];
    if (pairs.some(([k]) => String(k).toLowerCase() === 'authorization')) return pairs;
    return [...pairs, ['authorization', value]];
  }
  if (typeof headers === 'object') {
    if (Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) return headers;
    return { ...headers, authorization: value };
  }
  return headers;
}

const dispatcher = new Agent().compose((dispatch) => (opts, handler) => {
  if (onlyOrigin !== '' && originOf(opts.origin) !== originOf(onlyOrigin)) {
    return dispatch(opts, handler);
  }
  return dispatch({ ...opts, headers: withAuth(opts.headers) }, handler);
});
setGlobalDispatcher(dispatcher);

// Suite 0.2.0-alpha.12 sends its header-validation scenarios with node:http, not fetch: its
// requests get the header too (same origin rule), unless they set their own.
function patchNodeRequest(mod, scheme) {
  const original = mod.request;
  mod.request = function request(...args) {
    let [url, options] = args;
    if (typeof url === 'string' || url instanceof URL) {
      options = typeof options === 'function' || options == null ? {} : options;
    } else {
      options = url ?? {};
      url = undefined;
    }
    const origin = url ? originOf(url) : `${options.protocol ?? scheme}//${options.hostname ?? options.host ?? 'localhost'}${options.port ? `:${options.port}` : ''}`;
    if (onlyOrigin === '' || originOf(origin) === originOf(onlyOrigin)) {
      const headers = { ...(options.headers ?? {}) };
      if (!Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) headers.authorization = value;
      options = { ...options, headers };
      if (url) {
        const rest = args.slice(2);
        const cb = typeof args[1] === 'function' ? [args[1]] : rest;
        return original.call(this, url, options, ...cb);
      }
      return original.call(this, options, ...args.slice(1));
    }
    return original.apply(this, args);
  };
}
patchNodeRequest(http, 'http:');
patchNodeRequest(https, 'https:');
