// chromium.mjs: drives Debian's headless chromium (build/install-chromium.sh) with playwright-core
// for the end-to-end tests, through a small HTTP control API on loopback, so that a Go test
// steps a real browser through pages and reads what they show.
//
// Usage: node chromium.mjs   (env CHROMIUM_PATH, default /usr/bin/chromium)
// Prints "READY http://127.0.0.1:<port>" once the browser runs. Each POST /cmd takes one JSON
// command and answers {"ok":true,...} or {"ok":false,"error":"..."}:
//   {"op":"goto","url"}                          navigate; answers {url,status}
//   {"op":"click","selector","wait_url"?}        click the first match; with wait_url, wait until
//                                                the page's URL starts with it (redirect chains)
//   {"op":"fill","selector","value"}             set an input or textarea
//   {"op":"select","selector","value"}           pick an <option> by value
//   {"op":"text","selector"}                     innerText of the first match
//   {"op":"texts","selector"}                    innerText of every match
//   {"op":"attr","selector","name"}              an attribute of the first match (null if none)
//   {"op":"count","selector"}                    number of matches
//   {"op":"url"} / {"op":"content"}              the page's URL / HTML
//   {"op":"screenshot","path"}                   a full-page PNG
//   {"op":"navigations"}                         every main-frame response so far: [{url,status}]
// A command fails after 20 s.
import http from 'node:http';
import { chromium } from 'playwright-core';

const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath,
  headless: true,
  // --no-sandbox: tests run as root (CI does), where chromium's sandbox cannot start.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
const context = await browser.newContext();
const page = await context.newPage();
page.setDefaultTimeout(20000);
const navigations = [];
page.on('response', (resp) => {
  const req = resp.request();
  if (req.isNavigationRequest() && req.frame() === page.mainFrame()) {
    navigations.push({ url: resp.url(), status: resp.status() });
  }
});

async function run(cmd) {
  switch (cmd.op) {
    case 'goto': {
      const resp = await page.goto(cmd.url, { waitUntil: 'load' });
      return { url: page.url(), status: resp ? resp.status() : 0 };
    }
    case 'click': {
      await page.locator(cmd.selector).first().click();
      if (cmd.wait_url) {
        await page.waitForURL((u) => u.href.startsWith(cmd.wait_url), { waitUntil: 'load' });
      } else {
        await page.waitForLoadState('load');
      }
      return { url: page.url() };
    }
    case 'fill':
      await page.locator(cmd.selector).first().fill(String(cmd.value ?? ''));
      return {};
    case 'select':
      await page.locator(cmd.selector).first().selectOption(String(cmd.value ?? ''));
      return {};
    case 'text':
      return { text: await page.locator(cmd.selector).first().innerText() };
    case 'texts':
      return { texts: await page.locator(cmd.selector).allInnerTexts() };
    case 'attr':
      return { value: await page.locator(cmd.selector).first().getAttribute(String(cmd.name)) };
    case 'count':
      return { count: await page.locator(cmd.selector).count() };
    case 'url':
      return { url: page.url() };
    case 'content':
      return { content: await page.content() };
    case 'screenshot':
      await page.screenshot({ path: String(cmd.path), fullPage: true });
      return {};
    case 'navigations':
      return { navigations };
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

const server = http.createServer(async (req, res) => {
  const reply = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST' || req.url !== '/cmd') {
    reply(404, { ok: false, error: 'POST /cmd' });
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let cmd;
  try {
    cmd = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    reply(400, { ok: false, error: `bad command: ${err.message}` });
    return;
  }
  try {
    reply(200, { ok: true, ...(await run(cmd)) });
  } catch (err) {
    reply(200, { ok: false, error: String(err.message ?? err), url: page.url() });
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, async () => {
    server.close();
    await browser.close().catch(() => {});
    process.exit(0);
  });
}
process.stdout.write(`READY http://127.0.0.1:${server.address().port}\n`);
