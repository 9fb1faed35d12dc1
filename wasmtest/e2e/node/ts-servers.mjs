// ts-servers.mjs: the official MCP TypeScript SDK servers as real upstreams for end-to-end
// tests, on one 127.0.0.1 port:
//
//   /ts            Streamable HTTP in stateful mode (session IDs, an in-memory event store so
//                  that GET with Last-Event-ID replays), in the app createMcpExpressApp builds:
//                  its express.json() (body-parser + iconv-lite) decodes the body in the charset
//                  the Content-Type names (any utf-*: utf-7, utf-16le/be, utf-32…), and the
//                  transport gets the parsed body (transport.handleRequest(req, res, req.body)).
//   /legacy/sse    the deprecated HTTP+SSE transport (SSEServerTransport): GET opens the stream,
//   /legacy/messages?sessionId=…  whose endpoint event names this POST URL. The POST body is
//                  read by the transport itself (raw-body with the declared charset: any
//                  charset iconv-lite knows, latin1 and shift_jis included).
//   /legacy/qs/sse, /legacy/qs/messages?sessionId=…  the same legacy transport in an Express app
//                  whose "query parser" is "extended" (qs: Express 4's default), which reads
//                  sessionId[]=X as ["X"]; the app looks the session up as /legacy does
//                  (String(req.query.sessionId)). Its sessions are logged as transport
//                  "legacy-qs".
//   /_ran          (GET) the log: {"runs": [...], "sessions": [...], "requests": [...]}.
//
// Each MCP session gets its own low-level Server with the tools echo (returns its argument
// "text"), drop_database and whoami. Every tool run is logged with its arguments, the
// transport, the MCP session it ran in and the user of the X-Gateway-Assertion header of the
// request that carried it (payload read, signature not checked: this is a recorder); every
// session with the user that opened it; every request to /ts and /legacy with its method,
// path, session and user, before the SDK sees it.
//
// Usage: node ts-servers.mjs. Prints "READY http://127.0.0.1:PORT" on stdout when it serves.
import crypto from 'node:crypto';
import http from 'node:http';
import express from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const log = { runs: [], sessions: [], requests: [] };

// userOf returns the email (or sub) of the X-Gateway-Assertion in headers, '' without one.
function userOf(headers) {
  let v = headers?.['x-gateway-assertion'];
  if (typeof headers?.get === 'function') v = headers.get('x-gateway-assertion');
  if (typeof v !== 'string') return '';
  try {
    const claims = JSON.parse(Buffer.from(v.split('.')[1] ?? '', 'base64url').toString('utf8'));
    return String(claims.email || claims.sub || '');
  } catch {
    return 'unparsable-assertion';
  }
}

function newServer(transportName) {
  const server = new Server({ name: 'ts-servers', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: 'echo', description: 'Returns its argument text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
      { name: 'drop_database', description: 'Pretends to drop the database.', inputSchema: { type: 'object', properties: {} } },
      { name: 'whoami', description: 'Returns the user of the assertion.', inputSchema: { type: 'object', properties: {} } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { name, arguments: args = {} } = req.params;
    const user = userOf(extra?.requestInfo?.headers);
    log.runs.push({ transport: transportName, session: extra?.sessionId ?? '', tool: name, args, user });
    switch (name) {
      case 'echo':
        return { content: [{ type: 'text', text: typeof args.text === 'string' ? args.text : JSON.stringify(args) }] };
      case 'drop_database':
        return { content: [{ type: 'text', text: 'database dropped' }] };
      case 'whoami':
        return { content: [{ type: 'text', text: user }] };
      default:
        return { isError: true, content: [{ type: 'text', text: `unknown tool ${name}` }] };
    }
  });
  return server;
}

function jsonRPCError(res, status, message) {
  res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

// Streamable HTTP, stateful: one transport (and Server) per session.
const streamable = new Map();
const mcpApp = createMcpExpressApp();
mcpApp.all('/ts', async (req, res) => {
  const sid = req.headers['mcp-session-id'];
  try {
    if (typeof sid === 'string') {
      const transport = streamable.get(sid);
      if (!transport) {
        jsonRPCError(res, 404, 'Session not found');
        return;
      }
      await transport.handleRequest(req, res, req.body);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
      jsonRPCError(res, 400, 'Bad Request: No valid session ID provided');
      return;
    }
    const user = userOf(req.headers);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      eventStore: new InMemoryEventStore(),
      onsessioninitialized: (id) => {
        streamable.set(id, transport);
        log.sessions.push({ transport: 'streamable', id, user });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) streamable.delete(transport.sessionId);
    };
    await newServer('streamable').connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (err) {
    if (!res.headersSent) jsonRPCError(res, 500, String(err));
  }
});

// The legacy HTTP+SSE transport, in a plain Express app (no JSON body parser: the transport
// reads the body with the declared charset itself).
const legacy = new Map();
const legacyApp = express();
legacyApp.get('/legacy/sse', async (req, res) => {
  const transport = new SSEServerTransport('/legacy/messages', res);
  legacy.set(transport.sessionId, transport);
  log.sessions.push({ transport: 'legacy', id: transport.sessionId, user: userOf(req.headers) });
  res.on('close', () => legacy.delete(transport.sessionId));
  await newServer('legacy').connect(transport);
});
legacyApp.post('/legacy/messages', async (req, res) => {
  const transport = legacy.get(String(req.query.sessionId ?? ''));
  if (!transport) {
    res.status(404).send('unknown session');
    return;
  }
  try {
    await transport.handlePostMessage(req, res);
  } catch (err) {
    if (!res.headersSent) res.status(500).send(String(err));
  }
});

// The legacy transport behind qs (Express 4's default query parser).
const legacyQs = new Map();
const legacyQsApp = express();
legacyQsApp.set('query parser', 'extended');
legacyQsApp.get('/legacy/qs/sse', async (req, res) => {
  const transport = new SSEServerTransport('/legacy/qs/messages', res);
  legacyQs.set(transport.sessionId, transport);
  log.sessions.push({ transport: 'legacy-qs', id: transport.sessionId, user: userOf(req.headers) });
  res.on('close', () => legacyQs.delete(transport.sessionId));
  await newServer('legacy-qs').connect(transport);
});
legacyQsApp.post('/legacy/qs/messages', async (req, res) => {
  const transport = legacyQs.get(String(req.query.sessionId ?? ''));
  if (!transport) {
    res.status(404).send('unknown session');
    return;
  }
  try {
    await transport.handlePostMessage(req, res);
  } catch (err) {
    if (!res.headersSent) res.status(500).send(String(err));
  }
});

const httpServer = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/_ran' && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(log));
    return;
  }
  log.requests.push({
    method: req.method,
    path: url.pathname,
    session: req.headers['mcp-session-id'] ?? url.searchParams.get('sessionId') ?? '',
    last_event_id: req.headers['last-event-id'] ?? '',
    content_type: req.headers['content-type'] ?? '',
    user: userOf(req.headers),
  });
  if (url.pathname.startsWith('/legacy/qs/')) legacyQsApp(req, res);
  else if (url.pathname.startsWith('/legacy/')) legacyApp(req, res);
  else mcpApp(req, res);
});
httpServer.listen(0, '127.0.0.1', () => {
  console.log(`READY http://127.0.0.1:${httpServer.address().port}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => process.exit(0));
}
